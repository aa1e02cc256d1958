"SFT recipes (the paper's equals Table 9, checked in TRL 1.16 / PEFT terms), helpers, and a tiny real SFT run (dagger.sft)."
import dataclasses, math
from pathlib import Path
import pytest
from dagger import sft as S
from dagger.graph import format_graph, reward


def _fields(cls):
    return {f.name for f in dataclasses.fields(cls)}


def test_paper_recipe_is_table9(tmp_path):
    "Table 9 and §A.6.1: rsLoRA 64/128 on all attention and MLP projections, batch 256, 4 epochs, AdamW 1e-5 → 1e-6 cosine, ..."
    from trl import SFTConfig
    from peft import LoraConfig
    r = S.SFT_RECIPES['paper']
    for world in (1, 4, 8):
        a = S.sft_config(r, tmp_path, device='cpu', world_size=world)
        assert isinstance(a, SFTConfig)
        assert a.per_device_train_batch_size * a.gradient_accumulation_steps * world == 256
    a = S.sft_config(r, tmp_path, device='cpu')        # (device='cuda' differs only in use_cpu; bf16 cannot be validated without a GPU)
    assert a.max_length == 4096 and a.num_train_epochs == 4
    assert a.optim.value == 'adamw_torch' and a.learning_rate == 1e-5
    assert a.lr_scheduler_type.value == 'cosine_with_min_lr' and a.lr_scheduler_kwargs == {'min_lr': 1e-6}
    assert a.weight_decay == 0.001 and a.bf16 is True and a.fp16 is False and a.max_grad_norm == 1.0
    assert a.gradient_checkpointing is True and a.packing is True
    assert a.completion_only_loss is True                                    # loss on the assistant turn (prompt–completion data)
    assert a.load_best_model_at_end and a.metric_for_best_model == 'eval_loss' and a.greater_is_better is False
    assert a.eval_strategy.value == a.save_strategy.value == 'epoch'          # best checkpoint by validation loss, per epoch
    lc = S.lora_config(r)
    assert isinstance(lc, LoraConfig)
    assert (lc.r, lc.lora_alpha, lc.lora_dropout, lc.use_rslora) == (64, 128, 0.0, True)
    assert set(lc.target_modules) == {'q_proj', 'k_proj', 'v_proj', 'o_proj', 'gate_proj', 'up_proj', 'down_proj'}
    assert lc.layers_to_transform is None and r.merge_dtype == 'bfloat16' and r.unsloth


def test_config_argument_names_exist_in_trl_and_peft(tmp_path, monkeypatch):
    "Every argument sft_config/lora_config pass is a field of the installed SFTConfig/LoraConfig (no silent typo)."
    import trl, peft
    seen = {}
    class Spy:
        def __init__(self, **kw): seen['sft'] = kw
    class SpyL:
        def __init__(self, **kw): seen['lora'] = kw
    monkeypatch.setattr(trl, 'SFTConfig', Spy); monkeypatch.setattr(peft, 'LoraConfig', SpyL)
    S.sft_config(S.SFT_RECIPES['paper'], tmp_path); S.lora_config(S.SFT_RECIPES['cpu'], 30)
    monkeypatch.undo()
    assert set(seen['sft']) <= _fields(trl.SFTConfig), set(seen['sft']) - _fields(trl.SFTConfig)
    assert set(seen['lora']) <= _fields(peft.LoraConfig), set(seen['lora']) - _fields(peft.LoraConfig)


def test_cpu_recipe(tmp_path):
    r = S.SFT_RECIPES['cpu']
    a = S.sft_config(r, tmp_path, device='cpu')
    assert a.bf16 is False and a.fp16 is False and a.use_cpu is True and a.packing is False
    assert a.eval_strategy.value == 'steps' and a.eval_steps == r.eval_steps == a.save_steps
    assert S.lora_config(r, 30).layers_to_transform == list(range(20, 30))
    assert a.per_device_train_batch_size == 1 and a.gradient_accumulation_steps == 2    # one row per forward: no padding
    with pytest.raises(S.RecipeError):
        S.lora_config(r)


def test_batch_arithmetic():
    assert [S.accumulation(S.SFT_RECIPES['paper'], w) for w in (1, 2, 8)] == [32, 16, 4]
    with pytest.raises(S.RecipeError):
        S.accumulation(S.SFT_RECIPES['paper'], 3)
    with pytest.raises(S.RecipeError):
        S.get_sft_recipe('huge')
    assert S.get_sft_recipe('cpu', lora_r=4).lora_r == 4


def test_loss_history():
    facts = dict(eval_loss_before=2.0, history=[dict(loss=1.5, learning_rate=1e-3, step=1), dict(eval_loss=1.2, step=2),
                                                dict(loss=1.1, learning_rate=5e-4, step=2), dict(train_runtime=3.0, step=2)])
    h = S.loss_history(facts)
    assert list(h['step']) == [0, 1, 2] and h.loc[2, 'eval_loss'] == 1.2 and h.loc[2, 'loss'] == 1.1 and h.loc[0, 'eval_loss'] == 2.0


GRAPHS = [(3, 5), (7, 2), (4, 9), (6, 8)]


def _rows():
    rows = []
    for i, (a, b) in enumerate(GRAPHS):
        g = format_graph({'nodes': [dict(id='n1', op='const', val=a, distractor=False), dict(id='n2', op='const', val=b, distractor=False),
                                    dict(id='m', op='mul', args=['n1', 'n2'], distractor=False),
                                    dict(id='final_result', op='identity', args=['m'], distractor=False)]})
        assert reward(g, a * b) == 2.0
        rows.append(dict(id=f't{i}', prompt=[dict(role='user', content=f'Graph: {a} pens at {b} taka each?')],
                         completion=[dict(role='assistant', content=g)]))
    return rows


@pytest.fixture(scope='module')
def tokenizer():
    from transformers import AutoTokenizer
    from dagger.llm import resolve_model
    return AutoTokenizer.from_pretrained(resolve_model('embedded:smollm2-135m'))


def test_fit_rows_never_cuts_a_graph(tokenizer):
    rows = _rows()
    long = dict(rows[0], id='long', prompt=[dict(role='user', content='pens ' * 400)])
    n = S.conversation_length(rows[0], tokenizer)
    kept, rep = S.fit_rows([long] + rows, tokenizer, max_length=n + 5, n=3)
    assert [r['id'] for r in kept] == ['t0', 't1', 't2'] and rep['fit'] == 4 and rep['used'] == 3 and rep['longest_row'] > 400


def _op_row(i, op, words):
    g = format_graph({'nodes': [dict(id='a', op='const', val=6, distractor=False), dict(id='b', op='const', val=3, distractor=False),
                                dict(id='x', op=op, args=['a', 'b'], distractor=False),
                                dict(id='final_result', op='identity', args=['x'], distractor=False)]})
    return dict(id=f'{op}{i}', prompt=[dict(role='user', content='question ' * words)], completion=[dict(role='assistant', content=g)])


def test_fit_rows_orders(tokenizer):
    "'first' keeps the teacher's order, 'shortest' sorts by length, 'balanced' takes the shortest of each answer operation in turn."
    rows = [_op_row(0, 'mul', 30), _op_row(1, 'mul', 5), _op_row(2, 'mul', 10), _op_row(0, 'sub', 40), _op_row(1, 'sub', 20),
            _op_row(0, 'add', 50), _op_row(9, 'mul', 900)]
    assert [S.final_op(r) for r in rows[:6:2]] == ['mul', 'mul', 'sub']
    first, rep = S.fit_rows(rows, tokenizer, max_length=300, n=3)
    assert [r['id'] for r in first] == ['mul0', 'mul1', 'mul2'] and rep['order'] == 'first' and rep['fit'] == 6
    short, _ = S.fit_rows(rows, tokenizer, max_length=300, n=3, order='shortest')
    assert [r['id'] for r in short] == ['mul1', 'mul2', 'sub1']
    bal, rep = S.fit_rows(rows, tokenizer, max_length=300, n=5, order='balanced')
    assert [r['id'] for r in bal] == ['mul1', 'sub1', 'add0', 'mul2', 'sub0'] and rep['groups'] == dict(mul=2, sub=2, add=1)
    assert [r['id'] for r in S.fit_rows(rows, tokenizer, max_length=300, order='balanced')[0]][-1] == 'mul0'   # n=0: every row that fits
    with pytest.raises(S.RecipeError):
        S.fit_rows(rows, tokenizer, max_length=300, order='longest')


def test_fit_rows_shuffled_takes_every_fitting_row_in_a_seeded_order(tokenizer):
    "'shuffled' (the CPU study's choice): a seeded random order of every row that fits, so the first n are a random sample, not the shortest."
    rows = [_op_row(i, op, 5 + 7 * i) for i in range(6) for op in ('add', 'sub')] + [_op_row(9, 'mul', 900)]
    a, rep = S.fit_rows(rows, tokenizer, max_length=300, order='shuffled', seed=3)
    assert sorted(r['id'] for r in a) == sorted(r['id'] for r in rows[:-1]) and rep['used'] == 12 and rep['order'] == 'shuffled'
    assert [r['id'] for r in a] == [r['id'] for r in S.fit_rows(rows, tokenizer, max_length=300, order='shuffled', seed=3)[0]]
    b = S.fit_rows(rows, tokenizer, max_length=300, order='shuffled', seed=4)[0]
    assert [r['id'] for r in a] != [r['id'] for r in b]
    short = S.fit_rows(rows, tokenizer, max_length=300, n=4, order='shortest')[0]
    assert [r['id'] for r in S.fit_rows(rows, tokenizer, max_length=300, n=4, order='shuffled', seed=3)[0]] != [r['id'] for r in short]


def test_tiny_sft_run(tmp_path):
    "Two real optimiser steps on the embedded model: validation loss falls, best adapter saved, merged model generates."
    rows = _rows()
    recipe = S.get_sft_recipe('cpu', max_length=256, eval_steps=1, val_examples=2, epochs=1.0)
    f = S.train_sft('embedded:smollm2-135m', rows, rows[:2], recipe, tmp_path, device='cpu', seed=0)
    assert f['steps'] == 2 and f['path'] == 'peft' and math.isfinite(f['train_loss'])
    from dagger.llm import holding, HAND_OFFS
    assert holding() == [] and f['hand_off']['to'] == 'after SFT' and f['hand_off'] in HAND_OFFS   # trainer and model are gone
    assert f['best_eval_loss'] < f['eval_loss_before']
    assert f['best_checkpoint'] in ('checkpoint-1', 'checkpoint-2') and not (tmp_path/'checkpoints').exists()
    assert (tmp_path/'adapter'/'adapter_config.json').exists()
    import json
    assert json.loads((tmp_path/'merged'/'config.json').read_text())['dtype'] == 'bfloat16'
    assert (tmp_path/'merged').stat().st_mode & 0o777 == 0o755
    from dagger.backend import read_vocab            # the cpu recipe's loss is over the rows' tokens: the student keeps to them
    from dagger.vocab import rows_vocab
    assert f['output_vocab'] == len(read_vocab(tmp_path/'merged')) and set(rows_vocab(S._tokenizer('embedded:smollm2-135m'), rows)) <= set(read_vocab(tmp_path/'merged'))
    from dagger.llm import get_backend, Sampling
    be = get_backend('transformers', str(tmp_path/'merged'), cache=None, device='cpu', batch_size=2)
    [[c]] = be.generate([rows[2]['prompt']], Sampling(max_new_tokens=8))
    assert c.tokens > 0 and c.finish_reason in ('stop', 'length')


def test_validation_rows_cut_and_empty_sets():
    assert S.validation_rows([1], [1, 2, 3], 2) == [1, 2] and S.validation_rows([1], [1, 2, 3]) == [1, 2, 3]
    for train, val in (([], [1]), ([1], [])):
        with pytest.raises(S.RecipeError, match='need training and validation rows'):
            S.validation_rows(train, val)


def _gpu_pins():
    import re, tomllib
    root = Path(__file__).resolve().parents[1]
    extra = tomllib.loads((root/'pyproject.toml').read_text())['project']['optional-dependencies']['gpu']
    return dict(re.fullmatch(r'([A-Za-z0-9_.-]+)==([0-9][^,;]*)', r).groups() for r in extra)


def test_gpu_extra_is_pinned_and_stated():
    "Every package of the gpu extra is pinned exactly, the core ones are there, and the SFT notebook states each version."
    import nbformat
    pins = _gpu_pins()
    assert {'vllm', 'unsloth', 'torch', 'transformers', 'trl', 'peft', 'datasets'} <= set(pins)
    nb = nbformat.read(str(Path(__file__).resolve().parents[1]/'nbs'/'stage_4_sft.ipynb'), as_version=4)
    [stack] = [c.source for c in nb.cells if c.cell_type == 'markdown' and c.source.startswith('### The GPU stack')]
    for name, version in pins.items():
        assert version in stack and name.split('_')[0] in stack, (name, version)


def test_checkpointing_names_follow_the_installed_trl():
    from trl import SFTConfig
    class Old:
        def __init__(self, gradient_checkpointing=False, gradient_checkpointing_kwargs=None): ...
    assert S.checkpointing_kwargs(Old, True) == dict(gradient_checkpointing=True, gradient_checkpointing_kwargs=dict(use_reentrant=False))
    assert 'activation_checkpointing' in S.checkpointing_kwargs(SFTConfig, True)      # TRL 1.16 / transformers 5.24 have the new names


def test_precision_follows_the_gpu(monkeypatch):
    "A GPU without bf16 (a Colab T4) trains in fp16; a recipe without bf16 in fp32."
    import torch
    monkeypatch.setattr(torch.cuda, 'is_bf16_supported', lambda *a, **k: False)
    assert S.precision(True, 'cuda') == 'fp16' and S.precision_kwargs(S.SFT_RECIPES['paper'], 'cuda') == dict(bf16=False, fp16=True)
    monkeypatch.setattr(torch.cuda, 'is_bf16_supported', lambda *a, **k: True)
    assert S.precision(True, 'cuda:0') == 'bf16' and S.precision(False, 'cuda') == 'fp32' and S.precision(True, 'cpu') == 'bf16'


def test_logits_batch_bounds_the_micro_batch():
    "8 rows × 4096 tokens × Gemma-3's 262,208 vocabulary in float32 is 34 GB; one row fits 8 GB."
    assert S.logits_batch(8, 4096, 262208) == 1
    assert S.logits_batch(8, 2048, 262208) == 2 and S.logits_batch(8, 1024, 262208) == 4
    assert S.logits_batch(8, 512, 49152) == 8


def test_the_command_line_model_is_the_profile_model():
    from dagger.sft import cli_profile
    cfg = cli_profile('paper', 'google/gemma-3-4b-it', [])
    assert cfg.model == 'google/gemma-3-4b-it' and cfg.results.parts[-2:] == ('paper', 'gemma-3-4b-it')
    assert cli_profile('paper', None, []).results.parts[-2:] == ('paper', 'gemma-3-12b-it')
