"""One owner of the accelerator at a time (dagger.llm.hand_off): no vLLM engine starts while a trainer or training
model is alive, engines for multimodal checkpoints are language-only, and on the GPU path unsloth is imported before
trl, transformers and peft (checked in the exported modules and the stage notebooks)."""
import ast, dataclasses, json, subprocess, sys, textwrap, types
from pathlib import Path
import pytest
import dagger.llm as L

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def fake_vllm(monkeypatch):
    "A stand-in `vllm` package whose LLM records, at construction, its arguments and what was still holding the accelerator."
    built = []

    @dataclasses.dataclass
    class EngineArgs:
        model: str = ''
        language_model_only: bool = False
        limit_mm_per_prompt: dict | None = None

    class LLM:
        def __init__(self, **kw): built.append(dict(kw, alive=list(L._HELD.values())))

    def install():
        vllm = types.ModuleType('vllm'); vllm.LLM = LLM
        eng = types.ModuleType('vllm.engine'); args = types.ModuleType('vllm.engine.arg_utils'); args.EngineArgs = EngineArgs
        for name, mod in {'vllm': vllm, 'vllm.engine': eng, 'vllm.engine.arg_utils': args}.items(): monkeypatch.setitem(sys.modules, name, mod)
        monkeypatch.setattr(L, '_cuda', lambda: False)
    yield built, EngineArgs, install
    L._ENGINE.clear()


def test_no_engine_while_a_trainer_lives(fake_vllm, tmp_path):
    import torch
    built, _, install = fake_vllm
    install()
    trainer = L.hold(torch.nn.Linear(2, 2), 'the GRPO trainer')
    with pytest.raises(L.HandOffError, match='still alive: the GRPO trainer'): L.VLLMBackend(str(tmp_path), cache=None).llm
    with pytest.raises(L.HandOffError, match='still alive: the GRPO trainer'): L.hand_off('an engine')
    assert built == []
    del trainer
    rec = L.hand_off('an engine')
    L.VLLMBackend(str(tmp_path), cache=None).llm
    assert len(built) == 1 and built[0]['alive'] == [] and rec in L.HAND_OFFS and rec['free_gb'] > 0


def test_the_tiny_sft_run_hands_off_before_an_engine(fake_vllm, tmp_path):
    "The real order on a CPU: train_sft with its trainer and model, then an engine on the merged model; the engine sees nothing alive."
    import dagger.sft as S
    from test_sft import _rows
    built, _, install = fake_vllm
    rows = _rows()
    recipe = S.get_sft_recipe('cpu', max_length=256, eval_steps=1, val_examples=2, epochs=1.0, lora_layers=2, global_batch=1)
    S.train_sft('embedded:smollm2-135m', rows[:1], rows[:1], recipe, tmp_path, device='cpu', seed=0)
    install()                                                   # vLLM is there for the engine, as on a GPU machine after training
    L.VLLMBackend(str(tmp_path/'merged'), cache=None).llm
    assert built[-1]['alive'] == [] and [h['to'] for h in L.HAND_OFFS[-2:]] == ['SFT training', 'after SFT']


def test_multimodal_engines_are_language_only(fake_vllm, tmp_path):
    from dagger.standins import build_standin
    _, EngineArgs, install = fake_vllm
    install()
    gemma = build_standin('gemma3', tmp_path/'gemma3')
    assert L.text_only_engine(str(gemma)) == {'language_model_only': True}
    assert L.text_only_engine(str(L.embedded_model_path('embedded:smollm2-135m'))) == {}
    del EngineArgs.__dataclass_fields__['language_model_only']     # an older vLLM: no images per prompt instead
    assert L.text_only_engine(str(gemma)) == {'limit_mm_per_prompt': {'image': 0}}


def test_unsloth_text_only_and_the_plan_counts_what_is_loaded():
    "unsloth loads the policy text-only, and the plan's weights are the language model's (the vision tower stays on disk)."
    from dagger.plan import plan_tables, inference_memory, training_memory, GB
    for src in ('dagger/sft.py', 'dagger/grpo.py'):
        calls = [n for n in ast.walk(ast.parse((ROOT/src).read_text())) if isinstance(n, ast.Call)
                 and ast.unparse(n.func) == 'FastLanguageModel.from_pretrained']
        assert calls and all(any(k.arg == 'text_only' and ast.unparse(k.value) == 'True' for k in c.keywords) for c in calls), src
    t = plan_tables()
    a = t['models'].set_index('model').loc['google/gemma-3-12b-it'].to_dict()
    A = t['assumptions']
    for mem in (inference_memory(a, 4096, 8, A), training_memory(a, 4096, A)):
        assert abs(mem['weights'] - (a['params_b'] - a['vision_params_b']) * 2e9 / GB) < 1e-9


def test_exported_modules_import_no_training_library_at_import_time(tmp_path):
    "A fake unsloth records what was imported before it: importing every dagger module and calling unsloth_first leaves trl, transformers and peft out."
    (tmp_path/'unsloth.py').write_text(textwrap.dedent('''
        import json, os, sys
        json.dump([m for m in ('trl', 'transformers', 'peft') if m in sys.modules], open(os.environ['SEEN'], 'w'))'''))
    mods = sorted(p.stem for p in (ROOT/'dagger').glob('*.py') if not p.stem.startswith('_'))
    code = ';'.join(f'import dagger.{m}' for m in mods) + "; from dagger.llm import unsloth_first; print(unsloth_first('cuda'))"
    r = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True, cwd=tmp_path,
                       env={**__import__('os').environ, 'PYTHONPATH': str(tmp_path), 'SEEN': str(tmp_path/'seen.json')})
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.strip().endswith('True') and json.loads((tmp_path/'seen.json').read_text()) == []


@pytest.mark.parametrize('nb', ['stage_4_sft', 'stage_5_grpo'])
def test_stage_kernels_import_unsloth_first(nb):
    "In the training stages' kernels, unsloth_first runs before any cell imports trl, transformers or peft at the top level."
    cells = [''.join(c['source']) for c in json.loads((ROOT/'nbs'/f'{nb}.ipynb').read_text())['cells'] if c['cell_type'] == 'code']
    first = next(i for i, s in enumerate(cells) if 'unsloth_first(cfg.device)' in s)
    for s in cells[:first]:
        tree = ast.parse('\n'.join(l for l in s.split('\n') if not l.lstrip().startswith(('#', '!', '%'))))
        names = [a.name for n in tree.body if isinstance(n, ast.Import) for a in n.names] + \
                [n.module for n in tree.body if isinstance(n, ast.ImportFrom) and n.module]
        assert not [m for m in names if m.split('.')[0] in ('trl', 'transformers', 'peft')], (nb, s[:200])
    for fn in ('run_sft', 'run_grpo'):
        src = (ROOT/'dagger'/('sft.py' if fn == 'run_sft' else 'grpo.py')).read_text()
        node = next((n for n in ast.parse(src).body if isinstance(n, ast.FunctionDef) and n.name == fn), None)
        if node is not None:
            body = [ast.unparse(b) for b in node.body[1:]]
            assert body[0].startswith('unsloth_first('), (fn, body[0])


def test_release_stops_the_engine_a_stray_reference_still_holds(fake_vllm, tmp_path, monkeypatch):
    "The engine's process is shut down by release_vllm, even while a caller still holds the LLM object."
    built, _, install = fake_vllm
    install()
    stopped = []
    core = types.SimpleNamespace(shutdown=lambda: stopped.append(True))
    be = L.VLLMBackend(str(tmp_path), cache=None)
    stray = be.llm                                        # as a suspended generator would hold it
    stray.llm_engine = types.SimpleNamespace(engine_core=core)
    L.release_vllm()
    assert stopped == [True] and 'llm' not in L._ENGINE
    L.release_vllm()                                      # nothing left to stop
    assert stopped == [True]
