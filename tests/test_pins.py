"""The keywords dagger's GPU path passes to TRL, PEFT, unsloth and vLLM, checked against the versions pinned in
pyproject.toml's `gpu` extra (not the CPU versions installed here). The pinned signatures come from
tests/pins/gpu_signatures.json, which tests/pins/regenerate.py writes from the pinned wheels' source; this test
only reads that file. The keywords come from two places: the builder functions run for the `paper` profile and
recipes with stand-ins for the four packages (so no GPU and none of them is imported), and an `ast` scan of the
literal keywords at every call site in dagger/*.py."""
import ast, functools, importlib.util, inspect, json, sys, types
from dataclasses import replace
from pathlib import Path
import pytest

ROOT = Path(__file__).resolve().parents[1]
PINS = ROOT/'tests'/'pins'
SNAP = json.loads((PINS/'gpu_signatures.json').read_text())
SIGS = SNAP['signatures']
RERUN = '.venv/bin/python tests/pins/regenerate.py'
# a signature taking **kwargs whose extra keywords go on, by name, to another one (read in the pinned source)
FORWARDS = {'vllm.LLM': 'vllm.EngineArgs',                                                      # LLM(**kwargs) -> EngineArgs(**kwargs)
            'unsloth.FastLanguageModel.get_peft_model': 'unsloth.FastLlamaModel.get_peft_model',  # functools.wraps + call
            'unsloth.FastModel.get_peft_model': 'unsloth.FastBaseModel.get_peft_model',
            'peft.AutoPeftModelForCausalLM.from_pretrained': 'transformers.PreTrainedModel.from_pretrained'}  # the base model's load
# call-site names in dagger/*.py -> the pinned signature they call
CALLEES = {'SFTConfig': 'trl.SFTConfig', 'GRPOConfig': 'trl.GRPOConfig', 'SFTTrainer': 'trl.SFTTrainer',
           'GRPOTrainer': 'trl.GRPOTrainer', 'LoraConfig': 'peft.LoraConfig', 'PeftModel.from_pretrained': 'peft.PeftModel.from_pretrained',
           'AutoPeftModelForCausalLM.from_pretrained': 'peft.AutoPeftModelForCausalLM.from_pretrained',
           'FastLanguageModel.from_pretrained': 'unsloth.FastLanguageModel.from_pretrained',
           'FastLanguageModel.get_peft_model': 'unsloth.FastLanguageModel.get_peft_model',
           'FastModel.from_pretrained': 'unsloth.FastModel.from_pretrained', 'FastModel.get_peft_model': 'unsloth.FastModel.get_peft_model',
           'LLM': 'vllm.LLM', 'SamplingParams': 'vllm.SamplingParams', 'llm.chat': 'vllm.LLM.chat',
           'cleanup_dist_env_and_memory': 'vllm.distributed.parallel_state.cleanup_dist_env_and_memory'}


def rejected(target: str, keywords) -> list:
    "The `keywords` the pinned `target` does not accept: not a parameter, not read from its **kwargs, not forwarded to one that does."
    sig = SIGS[target]
    bad = sorted(k for k in set(keywords) if k not in sig['params'] and k not in sig.get('kwargs_read', ()))
    return rejected(FORWARDS[target], bad) if bad and sig['var_kwargs'] and target in FORWARDS else bad


def _regenerate():
    spec = importlib.util.spec_from_file_location('pins_regenerate', PINS/'regenerate.py')
    mod = importlib.util.module_from_spec(spec); spec.loader.exec_module(mod)
    return mod


def test_snapshot_matches_the_gpu_pins():
    pins = _regenerate().gpu_pins()
    assert SNAP['pins'] == pins, f'pyproject.toml gpu pins moved: {pins} != snapshot {SNAP["pins"]}; rerun `{RERUN}`'


def test_every_target_is_in_the_snapshot():
    targets = set(_regenerate().TARGETS)
    assert set(SIGS) == targets, f'snapshot out of date with regenerate.TARGETS; rerun `{RERUN}`'
    assert set(CALLEES.values()) | set(FORWARDS) | set(FORWARDS.values()) <= targets


def test_the_checker_catches_a_misspelt_keyword():
    assert rejected('trl.SFTConfig', {'per_device_train_batch_size': 1}) == []
    assert rejected('trl.SFTConfig', {'per_device_train_batch_sizes': 1}) == ['per_device_train_batch_sizes']
    assert rejected('vllm.LLM', ['max_model_len']) == []          # not LLM's own: accepted through EngineArgs
    assert rejected('vllm.LLM', ['max_model_lens']) == ['max_model_lens']
    assert rejected('peft.LoraConfig', ['r', 'lora_rank']) == ['lora_rank']


# ---- the keywords dagger passes -------------------------------------------------------------------------------------

@functools.cache
def call_sites() -> tuple:
    "(file:line, enclosing function, target, literal keywords, passes **) of every call in dagger/*.py named in CALLEES."
    out = []
    def visit(node, fn, f):
        for n in ast.iter_child_nodes(node):
            if isinstance(n, ast.Call) and (t := CALLEES.get(ast.unparse(n.func))):
                out.append((f'dagger/{f}:{n.lineno}', fn, t, tuple(k.arg for k in n.keywords if k.arg), any(k.arg is None for k in n.keywords)))
            visit(n, n.name if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) else fn, f)
    for f in sorted((ROOT/'dagger').glob('*.py')): visit(ast.parse(f.read_text(), str(f)), '<module>', f.name)
    return tuple(out)


class Recorder:
    "Stand-ins for trl, peft, unsloth and vllm that record the keywords each call gets, and where it was made."
    def __init__(self): self.calls = []

    def add(self, target: str, kw: dict, frame):
        site = f'{Path(frame.f_code.co_filename).resolve().relative_to(ROOT)}:{frame.f_lineno} (in {frame.f_code.co_name})'
        self.calls.append((target, kw, site))

    def cls(self, target: str):
        "A class standing in for a pinned config class: the pinned signature (for `inspect`), its keywords as attributes."
        rec = self
        class Stub(types.SimpleNamespace):
            __signature__ = inspect.Signature([inspect.Parameter(p, inspect.Parameter.KEYWORD_ONLY, default=None)
                                               for p in SIGS[target]['params']])
            def __init__(self, *args, **kw): rec.add(target, kw, sys._getframe(1)); super().__init__(**kw)
        Stub.__name__ = target.split('.')[-1]
        return Stub

    def fn(self, target: str, result):
        def call(*args, **kw):
            self.add(target, kw, sys._getframe(1))
            return result(*args) if callable(result) else result
        return call

    def keywords(self) -> dict:
        "{target: {keyword: [the call sites that passed it]}}"
        out = {}
        for t, kw, site in self.calls:
            for k in kw: out.setdefault(t, {}).setdefault(k, set()).add(site)
        return {t: {k: sorted(v) for k, v in ks.items()} for t, ks in out.items()}


def _lm(layers: int, vision: bool):
    config = types.SimpleNamespace(get_text_config=lambda: types.SimpleNamespace(num_hidden_layers=layers, vocab_size=262208),
                                   vision_config=object() if vision else None)
    return types.SimpleNamespace(config=config)


@pytest.fixture(scope='module')
def captured():
    "Run the builders of the GPU path for the `paper` profile and recipes; the keywords each pinned target got."
    from dagger import config, eval as ev, grpo, llm, sft
    from dagger.recipes import get_grpo_recipe, get_sft_recipe
    rec, mp = Recorder(), pytest.MonkeyPatch()
    gemma12b, tok = _lm(48, vision=True), object()
    mods = dict(trl=dict(SFTConfig=rec.cls('trl.SFTConfig'), GRPOConfig=rec.cls('trl.GRPOConfig')),
                peft=dict(LoraConfig=rec.cls('peft.LoraConfig')),
                vllm=dict(LLM=rec.cls('vllm.LLM'), SamplingParams=rec.cls('vllm.SamplingParams')),
                unsloth={c: types.SimpleNamespace(from_pretrained=rec.fn(f'unsloth.{c}.from_pretrained', (gemma12b, tok)),
                                                  get_peft_model=rec.fn(f'unsloth.{c}.get_peft_model', lambda lm: lm))
                         for c in ('FastLanguageModel', 'FastModel')})
    try:
        for name, attrs in mods.items():
            mod = types.ModuleType(name); mod.__dict__.update(attrs); mp.setitem(sys.modules, name, mod)
        mp.setattr(llm, '_cuda', lambda: True); mp.setattr(llm, '_ENGINE', {})          # a GPU machine, a fresh engine slot
        mp.setattr(sft, 'unsloth_ok', lambda r: True)
        mp.setattr(grpo, 'unsloth_ok', lambda r: True); mp.setattr(grpo, 'vllm_ok', lambda r: True)
        mp.setattr(grpo, 'vllm_share', lambda model, recipe: 0.4)
        cfg = config.load_profile('paper')
        sr, gr = get_sft_recipe(cfg.sft.recipe), get_grpo_recipe(cfg.grpo.recipe)
        sft.sft_config(sr, '/nonexistent/sft', device='cuda')                          # as train_sft calls it
        grpo.grpo_config(gr, '/nonexistent/grpo', device='cuda', vllm_gpu_memory_utilization=0.4)   # as train_grpo does
        sft.load_for_training(cfg.model, sr)                                            # unsloth load + FastModel LoRA
        grpo.load_policy(cfg.model, gr)                                                 # unsloth load with vLLM
        sft.unsloth_lora(_lm(26, vision=False), sr)                                     # a text-only model: FastLanguageModel
        sft.model_lora_config(sr, gemma12b); sft.model_lora_config(replace(sr, lora_layers=8), _lm(26, False))   # the peft path
        for c in (cfg, cfg.replace(vllm_enforce_eager=True)):                           # every key vllm_settings() can give
            be = llm.backend_from_profile(c, cache=None); be.llm
        for s in cfg.roster:                                                            # the evaluation's engines
            for m in s.methods if s.backend == 'vllm' else ():
                ev.system_backend(cfg, s, m, model=s.model, cache=None).llm
        for smp in (llm.Sampling(), llm.Sampling(temperature=1.0, top_p=0.9, top_k=20, stop=('```',), max_new_tokens=8)):
            be.params(llm.Job(0, [], 0, 7, 'k'), smp)
    finally:
        mp.undo()
    return rec.keywords()


def test_the_builders_reached_every_stand_in(captured):
    assert set(captured) == {'trl.SFTConfig', 'trl.GRPOConfig', 'peft.LoraConfig', 'vllm.LLM', 'vllm.SamplingParams',
                             'unsloth.FastLanguageModel.from_pretrained', 'unsloth.FastLanguageModel.get_peft_model',
                             'unsloth.FastModel.get_peft_model'}
    assert {'per_device_train_batch_size', 'gradient_checkpointing'} <= captured['trl.SFTConfig'].keys()   # the pinned name, not activation_*
    assert {'max_model_len', 'enforce_eager'} <= captured['vllm.LLM'].keys()


def test_dynamic_call_sites_are_captured(captured):
    "A call passing **kwargs is only checked through the builders above: every such site must be one they run."
    covered = {('sft_config', 'trl.SFTConfig'), ('grpo_config', 'trl.GRPOConfig'), ('_load_vllm', 'vllm.LLM'),
               ('load_policy', 'unsloth.FastLanguageModel.from_pretrained'), ('unsloth_lora', 'unsloth.FastModel.get_peft_model'),
               ('unsloth_lora', 'unsloth.FastLanguageModel.get_peft_model')}
    dynamic = {(fn, t): site for site, fn, t, _, d in call_sites() if d}
    assert not set(dynamic) - covered, f'calls with **kwargs not run by the `captured` fixture: {[dynamic[k] for k in set(dynamic) - covered]}'


def _cases():
    sites = call_sites()
    return [pytest.param(t, sorted({k for _, _, u, ks, _ in sites if u == t for k in ks}), id=t) for t in sorted(set(CALLEES.values()))]

@pytest.mark.parametrize('target,literal', _cases())
def test_keywords_are_accepted_by_the_pinned_version(target, literal, captured):
    built = captured.get(target, {})
    where = {k: [s for s, _, u, ks, _ in call_sites() if u == target and k in ks] or built[k] for k in set(literal) | built.keys()}
    bad = rejected(target, where)
    found = {k: where[k] for k in bad}
    assert not bad, f'{target} at {SNAP["pins"][target.split(".")[0]]} does not accept: {found}'


def test_trl_keys_are_grpo_config_fields():
    "train_grpo reads grpo.TRL_KEYS from the GRPOConfig it trained with: a key the pin lacks drops out of run.json."
    from dagger.grpo import TRL_KEYS
    assert rejected('trl.GRPOConfig', TRL_KEYS) == []


# ---- the pinned packages with each other ----------------------------------------------------------------------------

def test_trl_colocated_vllm_keywords_are_accepted_by_pinned_vllm():
    "TRL's colocate mode (GRPO without unsloth) builds vllm.LLM itself: its keywords against the pinned vLLM."
    for name, call in SNAP['upstream_calls'].items():
        assert call['calls'] and rejected(call['target'], call['keywords']) == [], (name, call['source'])


def _version(v: str) -> tuple: return tuple(int(x) for x in v.split('.')[:3])

@pytest.mark.xfail(strict=True, reason='trl 1.15.0 (trl/import_utils.py is_vllm_available) declares vLLM 0.21.0-0.31.0 '
                                       'supported and only warns outside it; the gpu extra pins vllm 0.33.0')
def test_pinned_trl_declares_support_for_pinned_vllm():
    lo, hi = SNAP['trl_supported_vllm']
    assert _version(lo) <= _version(SNAP['pins']['vllm']) <= _version(hi)
