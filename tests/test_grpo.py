"GRPO (dagger.grpo): the reward functions in TRL's signature (property tests), the Table 10 recipe in TRL 1.16 terms, and a tiny real run."
import dataclasses, inspect, json, math
import pytest
from hypothesis import given, settings, strategies as st, HealthCheck
from dagger import grpo as R
from dagger import graph as G
from dagger.config import ConfigError, load_profile
from dagger.arms import stage_arm

TOTALS = {0.0, 0.5, 1.0, 2.0}
TRL_KW = dict(prompts=None, completion_ids=None, trainer_state=None, log_extra=lambda *a, **k: None, id=None)


def _all_parts(completions, solution):
    n = len(completions)
    kw = TRL_KW | dict(prompts=[[dict(role='user', content='q')]] * n, completion_ids=[[0]] * n, id=[str(i) for i in range(n)])
    return {f.__name__: f(completions=completions, solution=solution, **kw) for f in R.REWARD_FUNCS}


def _check(completions, solution):
    parts = _all_parts(completions, solution)
    for name, vals in parts.items():
        assert isinstance(vals, list) and len(vals) == len(completions), name
        assert all(type(v) is float for v in vals), name
    for f, e, a in zip(parts['format_reward'], parts['execution_reward'], parts['accuracy_reward']):
        assert f in (0.0, 0.5) and e in (0.0, 0.5) and a in (0.0, 1.0)
        assert (e == 0 or f == 0.5) and (a == 0 or e == 0.5)          # nested: execution after format, accuracy after execution
        assert f + e + a in TOTALS
    return parts


def _fenced(nodes) -> str:
    return '```json\n' + json.dumps({'nodes': nodes}) + '\n```'


def _mul(a, b):
    return [dict(id='n1', op='const', val=a, distractor=False), dict(id='n2', op='const', val=b, distractor=False),
            dict(id='m', op='mul', args=['n1', 'n2'], distractor=False), dict(id='final_result', op='identity', args=['m'], distractor=False)]


# ---------------------------------------------------------------- reward functions

@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(st.text(), st.none(), st.integers(), st.binary(max_size=20)), max_size=6),
       st.one_of(st.floats(allow_nan=True), st.integers(), st.text(max_size=10), st.none()))
def test_random_completions_never_raise(texts, gold):
    plain = _check(texts, [gold] * len(texts))
    conv = _check([[dict(role='assistant', content=t)] for t in texts], [gold] * len(texts))
    assert plain == conv


NODE = st.fixed_dictionaries({
    'id': st.sampled_from(['n1', 'n2', 'n3', 'n4', 'final_result', 'x']),
    'op': st.sampled_from(sorted(G.OPS) + ['ratio_split', 'exp', '']),
    'args': st.lists(st.sampled_from(['n1', 'n2', 'n3', 'n4', 'final_result', 'zz']), max_size=4),
    'val': st.one_of(st.none(), st.integers(-10**30, 10**30), st.floats(allow_nan=False, allow_infinity=False),
                     st.sampled_from([1e308, -1e308, 0, 0.5, 1024, 10**6]), st.text(max_size=8)),
    'distractor': st.one_of(st.booleans(), st.none(), st.text(max_size=3)),
})


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(NODE, max_size=8), st.one_of(st.integers(-1000, 1000), st.floats(-1e6, 1e6)))
def test_random_graphs_score_in_the_allowed_set(nodes, gold):
    _check([_fenced(nodes), [dict(role='assistant', content=_fenced(nodes))]], [gold, gold])


@settings(max_examples=100, deadline=None)
@given(st.integers(-10**6, 10**6), st.integers(-10**6, 10**6), st.sampled_from(['plain', 'conversational']))
def test_a_correct_fenced_graph_scores_2(a, b, shape):
    text = G.format_graph({'nodes': _mul(a, b)})
    c = text if shape == 'plain' else [dict(role='assistant', content=text)]
    parts = _check([c], [float(a * b)])
    assert [parts['format_reward'][0], parts['execution_reward'][0], parts['accuracy_reward'][0]] == [0.5, 0.5, 1.0]
    wrong = _check([c], [float(a * b) + 1 + abs(a * b) / 100])            # outside the 1e-6 relative tolerance
    assert sum(v[0] for v in wrong.values()) == 1.0


def _pow_bomb():
    return _fenced([dict(id='a', op='const', val=10), dict(id='b', op='const', val=10**9), dict(id='p', op='pow', args=['a', 'b']),
                    dict(id='q', op='pow', args=['p', 'p']), dict(id='final_result', op='identity', args=['q'])])


def _neg_frac_pow():
    return _fenced([dict(id='a', op='const', val=-8), dict(id='b', op='const', val=0.5), dict(id='p', op='pow', args=['a', 'b']),
                    dict(id='final_result', op='identity', args=['p'])])


HOSTILE = [
    None, 42, 3.5, b'bytes', [], [None], [{}], [dict(role='assistant')], [dict(role='assistant', content=None)],
    [dict(role='assistant', content=123)], [dict(role='assistant', content=['a', None, {'text': 5}])],
    [dict(role='assistant', content=dict(nodes=[]))], dict(role='assistant', content='hi'), object(),
    '```json\n' + '[' * 100000 + ']' * 100000 + '\n```',                        # deeply nested JSON
    '```json\n{"nodes": ' + '{"a": ' * 5000 + '1' + '}' * 5000 + '}\n```',
    '{' * 200000, '```json' * 10000,
    _fenced([dict(id='a', op='const', val=1e308), dict(id='b', op='const', val=1e308), dict(id='m', op='mul', args=['a', 'b']),
             dict(id='final_result', op='identity', args=['m'])]),                 # overflow to inf
    '```json\n{"nodes": [{"id": "a", "op": "const", "val": 1e999}, {"id": "b", "op": "const", "val": 2}, '
    '{"id": "final_result", "op": "add", "args": ["a", "b"]}]}\n```',                 # a JSON number beyond float
    '```json\n{"nodes": [{"id": "a", "op": "const", "val": ' + '9' * 5000 + '}, {"id": "b", "op": "const", "val": 2}, '
    '{"id": "final_result", "op": "add", "args": ["a", "b"]}]}\n```',                 # a 5000-digit integer
    _pow_bomb(), _neg_frac_pow(),
    _fenced([dict(id=f'n{i}', op='add', args=[f'n{i + 1}', f'n{i + 1}']) for i in range(3000)] + [dict(id='n3000', op='const', val=1),
             dict(id='final_result', op='identity', args=['n0'])]),                    # 3000-deep chain: 2**3000
    _fenced([dict(id='a', op='add', args=['b', 'b']), dict(id='b', op='add', args=['a', 'a']), dict(id='final_result', op='identity', args=['a'])]),
    _fenced([dict(id='a', op='const', val=1), dict(id='final_result', op='identity', args=['a']), dict(id='final_result', op='identity', args=['a'])]),
    '```json\n{"nodes": [{"id": "a", "op": "const", "val": NaN}, {"id": "b", "op": "const", "val": Infinity}, '
    '{"id": "final_result", "op": "add", "args": ["a", "b"]}]}\n```',
    '\x00\ud800```json\n{}\n```', 'nodes' * 100000,
]


@pytest.mark.parametrize('i', range(len(HOSTILE)))
def test_hostile_completions_never_raise(i):
    c = HOSTILE[i]
    parts = _check([c], [8.0])
    assert sum(v[0] for v in parts.values()) in TOTALS
    assert R.completion_text(c) == R.completion_text(c)                           # a str, never an error


def test_hostile_gold_and_shapes():
    good = G.format_graph({'nodes': _mul(3, 5)})
    for gold in (None, 'abc', float('nan'), float('inf'), [], {}):                # a gold that is no number is a data error
        with pytest.raises(ValueError, match='gold'): _check([good], [gold])
    assert _check(['no graph'], [None])['accuracy_reward'] == [0.0]              # ...that only an executed graph reaches
    assert _check([good], ['১৫'])['accuracy_reward'] == [1.0]                      # Bangla digits in the gold answer
    with pytest.raises(ValueError, match='2 completions but 1 gold'): _check([good, good], [15.0])
    assert _check([good], 15.0)['accuracy_reward'] == [1.0]                        # one gold for all
    assert R.format_reward(None) == [] and R.accuracy_reward('not a list') == []


def test_nodes_are_logged_for_parsed_graphs():
    seen = []
    R.format_reward([G.format_graph({'nodes': _mul(3, 5)}), 'prose', None], [15.0] * 3, log_metric=lambda k, v: seen.append((k, v)))
    assert seen == [('graph/nodes', 4.0), ('graph/ops', 1.0)]
    R.format_reward(['x'], [1.0], log_metric='not callable')                      # ignored, no error
    def boom(k, v): raise RuntimeError('logger down')
    with pytest.raises(RuntimeError, match='logger down'):                         # a broken logger is not hidden
        R.format_reward([G.format_graph({'nodes': _mul(3, 5)})], [15.0], log_metric=boom)


# ---------------------------------------------------------------- recipes and TRL arguments

def _fields(cls):
    return {f.name for f in dataclasses.fields(cls)}


def test_paper_recipe_is_table10(tmp_path):
    "Table 10: LoRA 64/128, prompt/completion 2048/2048, batch 32, 8 generations, 4 epochs, 1e-5 → 1e-6 cosine, 20 warm-up, BNPO, ..."
    from trl import GRPOConfig
    r = R.GRPO_RECIPES['paper']
    for world in (1, 2, 4):
        a = R.grpo_config(r, tmp_path, device='cpu', world_size=world, use_vllm=True)
        assert isinstance(a, GRPOConfig) and a.per_device_train_batch_size * a.gradient_accumulation_steps * world == 32
    a = R.grpo_config(r, tmp_path, device='cpu', use_vllm=True)
    assert a.num_generations == 8 and a.generation_batch_size == 32 and a.max_completion_length == 2048 and r.max_prompt_length == 2048
    assert a.num_train_epochs == 4 and a.max_steps == -1
    assert a.learning_rate == 1e-5 and a.lr_scheduler_type.value == 'cosine_with_min_lr' and a.lr_scheduler_kwargs == {'min_lr': 1e-6}
    assert a.warmup_steps == 20
    assert a.loss_type == 'bnpo' and a.beta == 0.0 and a.epsilon == 0.2 and a.epsilon_high == 0.28
    assert a.temperature == 1.0 and a.top_p == 0.95 and a.top_k == 64
    assert a.mask_truncated_completions is True
    assert a.use_vllm is True and a.vllm_mode == 'colocate'
    assert a.bf16 is True and a.fp16 is False and a.max_grad_norm == 1.0 and a.gradient_checkpointing is True
    assert a.save_strategy.value == 'epoch' and a.save_only_model
    lc = R.lora_config(r)
    assert (lc.r, lc.lora_alpha, lc.lora_dropout, lc.use_rslora) == (64, 128, 0.0, False)
    assert set(lc.target_modules) == {'q_proj', 'k_proj', 'v_proj', 'o_proj', 'gate_proj', 'up_proj', 'down_proj'}
    assert r.unsloth and r.use_vllm and r.merge_dtype == 'bfloat16'
    assert R.vllm_ok(r) is False                                                   # no vLLM/GPU here: the machine decides
    assert R.grpo_config(r, tmp_path, device='cpu').use_vllm is False


def test_config_argument_names_exist_in_trl(tmp_path, monkeypatch):
    "Every argument grpo_config passes is a parameter of the installed GRPOConfig (inspect.signature), none silently ignored."
    import trl
    seen = {}
    class Spy:
        def __init__(self, **kw): seen.update(kw)
    monkeypatch.setattr(trl, 'GRPOConfig', Spy)
    R.grpo_config(R.GRPO_RECIPES['paper'], tmp_path, use_vllm=True)
    monkeypatch.undo()
    params = set(inspect.signature(trl.GRPOConfig).parameters)
    assert set(seen) <= params, set(seen) - params
    assert {'loss_type', 'epsilon_high', 'top_k', 'mask_truncated_completions', 'use_vllm', 'vllm_mode', 'num_generations',
            'max_completion_length', 'beta', 'epsilon', 'lr_scheduler_kwargs'} <= set(seen)
    assert 'max_prompt_length' not in params                                       # TRL 1.16: we filter prompts ourselves


def test_cpu_recipe(tmp_path):
    r = R.GRPO_RECIPES['cpu']
    a = R.grpo_config(r, tmp_path, device='cpu')
    assert a.bf16 is False and a.fp16 is False and a.use_cpu is True and a.use_vllm is False and a.gradient_checkpointing is False
    assert a.num_generations == 2 and a.max_completion_length == 256 and a.max_steps == 2 and a.learning_rate == 3e-4
    assert a.save_strategy.value == 'steps' and a.save_steps == 2 == a.max_steps and r.score_init is False   # one checkpoint: nothing to score
    assert a.loss_type == 'bnpo' and a.beta == 0.0 and a.mask_truncated_completions is True
    assert R.lora_config(r, 30).layers_to_transform == list(range(20, 30))


def test_batch_arithmetic():
    assert [R.grpo_accumulation(R.GRPO_RECIPES['paper'], w) for w in (1, 2, 4)] == [4, 2, 1]
    with pytest.raises(R.RecipeError):
        R.grpo_accumulation(R.GRPO_RECIPES['paper'], 3)
    with pytest.raises(R.RecipeError, match='whole groups'):
        R.grpo_accumulation(R.get_grpo_recipe('paper', num_generations=6))
    with pytest.raises(R.RecipeError):
        R.get_grpo_recipe('tiny')
    assert R.get_grpo_recipe('cpu', max_steps=6).max_steps == 6


def test_profiles_and_arms():
    for name, recipe in (('cpu', 'cpu'), ('paper', 'paper')):
        c = load_profile(name)
        assert c.grpo.recipe == recipe and c.grpo.init == 'sft' and R.grpo_dir(c) == c.results/'grpo'
    b = load_profile('cpu', grpo__init='base')
    assert R.grpo_dir(b) == b.results/'grpo_base' and R.init_model(b) == b.model and stage_arm(b, 'grpo').label == 'Base→GRPO'
    with pytest.raises(ConfigError, match="grpo.init = 'scratch'"):
        load_profile('cpu', grpo__init='scratch')
    # only the ablations' Base->GRPO stops when its first steps earn nothing; every other profile trains each step
    assert load_profile('cpu-ablations').grpo.stop_without_signal == 6
    assert {load_profile(p).grpo.stop_without_signal for p in ('cpu', 'cpu-study', 'paper')} == {0}


def test_reward_history():
    facts = dict(history=[dict(loss=0.0, grad_norm=0.1, learning_rate=2e-5, reward=1.0, reward_std=0.5, step=1,
                               **{'rewards/format_reward/mean': 0.5, 'rewards/execution_reward/mean': 0.25,
                                  'rewards/accuracy_reward/mean': 0.25, 'completions/mean_length': 120.0, 'graph/nodes': 6.0}),
                          dict(train_runtime=3.0, step=1)])
    h = R.reward_history(facts)
    assert list(h['step']) == [1] and h.loc[0, 'format'] == 0.5 and h.loc[0, 'completion_length'] == 120 and h.loc[0, 'nodes'] == 6
    assert math.isnan(h.loc[0, 'ops']) and list(h.columns[:4]) == ['step', 'reward', 'reward_std', 'format']


def test_nodes_table():
    recs = [dict(method='dagger', model='a label', phase='untrained', init=None, n_nodes=None, n_ops=None, executed=False),
            dict(method='dagger', model='another label', phase='sft', init=None, n_nodes=6, n_ops=2, executed=True),
            dict(method='dagger', model='another label', phase='sft', init=None, n_nodes=8, n_ops=4, executed=False),
            dict(method='cot', model='m', phase='sft', init=None, n_nodes=None, n_ops=None, executed=None)]
    t = R.nodes_table(recs, 'x.jsonl')                      # phases come from the records' fields, never from labels
    assert list(t['phase']) == ['untrained', 'sft'] and list(t['phase_label']) == ['untrained', 'SFT'] and list(t['graphs']) == [0, 2] and list(t['outputs']) == [1, 2]
    assert t.loc[1, 'mean_nodes'] == 7.0 and t.loc[1, 'mean_ops'] == 3.0 and t.loc[1, 'executed'] == 1 and math.isnan(t.loc[0, 'mean_nodes'])


def test_fit_prompts_never_cuts_a_prompt():
    from transformers import AutoTokenizer
    from dagger.llm import resolve_model
    tok = AutoTokenizer.from_pretrained(resolve_model('embedded:smollm2-135m'))
    rows = [dict(id=str(i), prompt=[dict(role='user', content='pens ' * k)], solution=1.0) for i, k in enumerate((5, 400, 6, 7))]
    n = R.prompt_length(rows[3], tok)
    kept, rep = R.fit_prompts(rows, tok, n, n=2)
    assert [r['id'] for r in kept] == ['0', '2'] and rep['fit'] == 3 and rep['used'] == 2 and rep['longest_row'] > 400


# ---------------------------------------------------------------- a tiny real run

def test_tiny_grpo_run(tmp_path):
    "Two real GRPO steps on the embedded model: rewards logged per part, both checkpoints scored on validation, one merged."
    copy = lambda a, b: ('Copy this exactly:\n' + _fenced([dict(id='a', op='const', val=a), dict(id='b', op='const', val=b),
                                                            dict(id='final_result', op='add', args=['a', 'b'])]))
    rows = [dict(id=f't{i}', prompt=[dict(role='user', content=copy(a, b))], solution=float(a + b))
            for i, (a, b) in enumerate([(3, 5), (7, 2), (4, 9), (6, 8)])]
    recipe = R.get_grpo_recipe('cpu', max_completion_length=64, num_generations=2, global_batch=2, per_device_batch=2, max_steps=2,
                          save_steps=1, val_problems=2, val_max_new_tokens=64, score_init=True)
    f = R.train_grpo('embedded:smollm2-135m', rows, rows[2:], recipe, tmp_path, device='cpu', seed=0,
                     backend_kw=dict(device='cpu', batch_size=2), init_cache=None)
    assert f['steps'] == 2 and f['path'] == 'peft' and f['use_vllm'] is False and math.isfinite(f['train_loss'])
    from dagger.llm import holding
    assert holding() == [] and f['hand_off']['to'] == 'GRPO checkpoint selection'   # policy and trainer gone before scoring
    assert f['trl_args']['loss_type'] == 'bnpo' and f['trl_args']['num_generations'] == 2 and f['trl_args']['max_steps'] == 2
    h = R.reward_history(f)
    assert list(h['step']) == [1, 2]
    for _, row in h.iterrows():
        assert 0 <= row['reward'] <= 2 and math.isclose(row['reward'], row['format'] + row['execution'] + row['accuracy'], abs_tol=1e-6)
        assert 0 < row['completion_length'] <= 64
    sel = f['selection']
    assert set(sel['scores']) == {'init', 'checkpoint-1', 'checkpoint-2'} and sel['chosen'] in ('checkpoint-1', 'checkpoint-2')
    best = max(sel['scores'][k]['reward'] for k in ('checkpoint-1', 'checkpoint-2'))
    assert sel['scores'][sel['chosen']]['reward'] == best and sel['val_problems'] == 2
    assert not (tmp_path/'checkpoints').exists() and not (tmp_path/'candidates').exists()
    cfg_json = json.loads((tmp_path/'merged'/'config.json').read_text())
    assert cfg_json['dtype'] == 'bfloat16'
    from dagger.llm import get_backend, Sampling, unload_models
    be = get_backend('transformers', str(tmp_path/'merged'), cache=None, device='cpu', batch_size=2)
    [[c]] = be.generate([rows[0]['prompt']], Sampling(max_new_tokens=8))
    assert c.tokens > 0
    unload_models()


def test_a_lone_checkpoint_is_merged_unscored(tmp_path):
    import torch
    from peft import get_peft_model
    from transformers import AutoModelForCausalLM
    from dagger.llm import resolve_model
    recipe = R.GRPO_RECIPES['cpu']                                    # save_steps == max_steps: one checkpoint
    lm = AutoModelForCausalLM.from_pretrained(resolve_model('embedded:smollm2-135m'), dtype=torch.float32)
    get_peft_model(lm, R.lora_config(recipe, lm.config.num_hidden_layers)).save_pretrained(tmp_path/'ck'/'checkpoint-2')
    sel = R.select_checkpoint('embedded:smollm2-135m', tmp_path/'ck', [], recipe, tmp_path/'merged')
    assert sel['chosen'] == 'checkpoint-2' and sel['step'] == 2 and sel['scores'] == {} and sel['val_problems'] == 0
    assert (tmp_path/'merged'/'config.json').exists() and not (tmp_path/'candidates').exists()
    with pytest.raises(R.RecipeError, match='no checkpoints'):
        R.select_checkpoint('embedded:smollm2-135m', tmp_path/'empty', [], recipe, tmp_path/'m2')


def _gemma3(size):
    from transformers import Gemma3Config
    text = {'4b': dict(hidden_size=2560, intermediate_size=10240, num_hidden_layers=34, num_attention_heads=8, num_key_value_heads=4),
            '12b': dict(hidden_size=3840, intermediate_size=15360, num_hidden_layers=48, num_attention_heads=16, num_key_value_heads=8)}[size]
    vision = dict(hidden_size=1152, intermediate_size=4304, num_hidden_layers=27, num_attention_heads=16, image_size=896, patch_size=14)
    return Gemma3Config(text_config=dict(vocab_size=262208, head_dim=256, **text), vision_config=vision)


def test_colocated_vllm_share_from_the_model_size():
    """Gemma-3 4B/12B: ~3.9B/11.8B language-model parameters (4.3B/12.2B with the vision tower a text-only engine leaves out);
    weights + KV of one group at 4096 tokens + 2 GB, as a share of 80 GB."""
    assert abs(R.param_count(_gemma3('4b')) / 3.88e9 - 1) < 0.03 and abs(R.param_count(_gemma3('12b')) / 11.77e9 - 1) < 0.03
    assert abs(R.param_count(_gemma3('4b'), vision=True) / 4.3e9 - 1) < 0.03 and abs(R.param_count(_gemma3('12b'), vision=True) / 12.2e9 - 1) < 0.03
    m4, m12 = (R.colocate_memory(_gemma3(s), R.GRPO_RECIPES['paper'], 80) for s in ('4b', '12b'))
    assert (m4['fraction'], m12['fraction']) == (0.18, 0.49) and m12['max_model_len'] == 4096
    assert m12['total_gb'] > 0.3 * 80                         # a fixed 0.3 share cannot hold the 12B weights and one group's KV
    with pytest.raises(R.RecipeError):
        R.colocate_memory(_gemma3('12b'), R.GRPO_RECIPES['paper'], 40)
    a = R.grpo_config(R.GRPO_RECIPES['paper'], '/tmp/x', device='cpu', use_vllm=True, vllm_gpu_memory_utilization=m12['fraction'])
    assert a.vllm_gpu_memory_utilization == 0.49 and a.vllm_max_model_length == 4096


def test_trl_colocate_engine_is_built_language_only(monkeypatch):
    "TRL's colocate engine is constructed through the module name `LLM`; while the trainer is built it gets text_only_engine's arguments."
    import inspect
    import trl.generation.vllm_generation as vg
    from dagger import grpo
    assert 'LLM(' in inspect.getsource(vg.VLLMGeneration._init_vllm), 'TRL no longer builds its engine through vllm_generation.LLM'
    seen = []
    monkeypatch.setattr(vg, 'LLM', lambda *a, **kw: seen.append(kw) or 'engine', raising=False)
    monkeypatch.setattr(grpo, 'text_only_engine', lambda path: {'language_model_only': True} if 'gemma-3-4b' in path else {})
    with grpo.language_only_trl_vllm() as on:
        assert on
        assert vg.LLM(model='google/gemma-3-4b-it', gpu_memory_utilization=0.2) == 'engine'
        vg.LLM(model='HuggingFaceTB/SmolLM2-135M')
        vg.LLM(model='google/gemma-3-4b-it', language_model_only=False)      # an explicit argument wins
    assert seen == [dict(language_model_only=True, model='google/gemma-3-4b-it', gpu_memory_utilization=0.2),
                    dict(model='HuggingFaceTB/SmolLM2-135M'), dict(language_model_only=False, model='google/gemma-3-4b-it')]
    assert vg.LLM(model='x') == 'engine' and 'language_model_only' not in seen[-1]   # restored after the block


def test_grpo_trains_on_spread_prompts_and_chooses_on_held_out_ones(tmp_path, monkeypatch):
    "`grpo.prompts = spread` trains only on prompts whose sampled group is mixed; `grpo.val_from = grpo_train` holds out validation prompts from the same pool."
    from dagger import layout
    from dagger.backend import Completion
    from dagger.files import write_jsonl
    cfg = load_profile('cpu', results_dir=str(tmp_path/'results'), grpo__init='base', grpo__recipe='cpu-study',
                       grpo__prompts='spread', grpo__val_from='grpo_train')
    good = ('```json\n{"nodes": [{"id": "a", "op": "const", "val": 2, "distractor": false, "label": "a"}, '
            '{"id": "b", "op": "const", "val": 3, "distractor": false, "label": "b"}, '
            '{"id": "final_result", "op": "add", "args": ["a", "b"], "distractor": false, "label": "f"}]}\n```')
    assert G.reward_parts(good, 5.0)['accuracy'] == 1
    rows = [dict(id=f'q{i}', prompt=[dict(role='user', content=f'question {i}')], solution=5.0) for i in range(40)]
    d = layout.path(cfg, 'teacher')
    write_jsonl(d/'grpo_train.jsonl', rows)
    write_jsonl(d/'sft_val.jsonl', [dict(id='v', prompt=rows[0]['prompt'], answer=1.0)])

    class Groups:          # a prompt of an even question gets a mixed group, an odd one all wrong
        def generate(self, prompts, sampling):
            even = lambda p: int(p[0]['content'].split()[-1]) % 2 == 0
            return [[Completion(good if even(p) and i == 0 else 'no graph', 5, 'stop') for i in range(sampling.n)]
                    for p in prompts]
    seen = {}
    monkeypatch.setattr(R, 'get_backend', lambda *a, **k: Groups())
    monkeypatch.setattr(R, 'train_grpo', lambda model, train, val, *a, **k: seen.update(train=train, val=val) or
                        dict(history=[], model=model))
    facts = R.run_grpo(cfg)
    recipe = R.get_grpo_recipe('cpu-study')
    val_ids, train_ids = {r['id'] for r in seen['val']}, [r['id'] for r in seen['train']]
    assert len(val_ids) == recipe.val_problems and not val_ids & set(train_ids)
    assert train_ids and all(int(i[1:]) % 2 == 0 for i in train_ids)           # only the mixed groups
    assert facts['spread']['kept'] == len(train_ids) and facts['fit_val'] == dict(source='grpo_train', held_out=recipe.val_problems)
