"The roster and its costed plan: every system of the paper's tables, priced offline in seconds."
import json, time
import pytest
from dagger.config import load_profile, ConfigError
from dagger.roster import RosterError, parse_system, selected
from dagger.paper import load_table
from dagger.plan import build_plan, plan_totals, plan_tables, arch, inference_memory, training_memory, lora_params, GB
from dagger.pipeline import main

TABLE2 = {'Qwen2.5-3B', 'Qwen2.5-7B', 'LLaMA3-8B', 'Gemma3-4B', 'Gemma3-12B', 'Qwen3-4B', 'Qwen3-8B',
          'DAGGER-Gemma3-4B-untrained', 'DAGGER-Gemma3-12B-untrained', 'DAGGER-Gemma3-4B-SFT', 'DAGGER-Gemma3-12B-SFT',
          'DAGGER-Gemma3-4B-GRPO', 'DAGGER-Gemma3-12B-GRPO'}

def _b(s, m):
    b = s.budget(m); return b.context, b.new_tokens, b.thinking

@pytest.fixture(scope='module')
def plan():
    t0 = time.time()
    p = build_plan(load_profile('paper'))
    assert time.time() - t0 < 10
    return p

def test_roster_has_the_13_systems_of_table2():
    systems = selected(load_profile('paper'), 'table2')
    assert {s.name for s in systems} == TABLE2 == set(load_table('table2')['system'])
    by = {s.name: s for s in systems}
    assert _b(by['Qwen3-8B'], 'reasoning') == (8192, 7168, True)
    assert _b(by['LLaMA3-8B'], 'cot') == (4096, 2048, False) and by['LLaMA3-8B'].model == 'meta-llama/Meta-Llama-3-8B-Instruct'
    assert by['DAGGER-Gemma3-4B-untrained'].budget('dagger').new_tokens == 1024
    assert by['DAGGER-Gemma3-12B-GRPO'].budget('dagger').new_tokens == 2048

def test_plan_names_every_table2_system_with_costs(plan):
    t2 = plan[(plan['kind'] == 'eval') & plan['tables'].str.contains('table2')]
    assert set(t2['name']) == TABLE2 and len(t2) == 13 * 4
    assert (t2['output_tokens'] > 0).all() and (t2['gpu_hours'] > 0).all() and (t2['peak_gb'] > 0).all()
    assert (t2['tokens_source'] == 'paper Table 2').all()
    q = t2[(t2['name'] == 'Qwen3-8B') & (t2['split'] == 'mgsm_bn')].iloc[0]
    assert q['output_tokens'] == 2074 * 250 and q['thinking'] and q['context'] == 8192

def test_plan_has_gpt41_rows_of_tables_4_5_7_with_dollars(plan):
    g = plan[plan['system'] == 'gpt-4.1']
    for t, n in [('table4', 8), ('table5', 8), ('table7', 4)]:
        rows = g[g['tables'].str.contains(t)]
        assert len(rows) == n and (rows['usd'] > 0).all() and (rows['prompt_tokens'] > 0).all() and (rows['gpu_hours'] == 0).all()
    assert set(g[g['tables'] == 'table4']['method']) == {'cot', 'pot', 'got', 'dagger'}
    assert (g[g['method'] == 'got']['calls_per_problem'] == 6).all()

def test_plan_trains_and_evaluates_both_gemma_sizes_for_tables_3_and_6(plan):
    for size in ('4b', '12b'):
        model = f'google/gemma-3-{size}-it'
        train = plan[(plan['kind'] == 'train') & (plan['model'] == model)]
        assert sorted(train['method']) == ['grpo', 'grpo_base', 'sft', 'sft_noannot'] and (train['gpu_hours'] > 0).all() and (train['peak_gb'] > 0).all()
        ev = plan[(plan['kind'] == 'eval') & (plan['model'] == model)]
        assert len(ev[ev['tables'].str.contains('table3')]) == 4 and len(ev[ev['tables'].str.contains('table6')]) == 8

def test_memory_by_hand():
    t = plan_tables(); A = t['assumptions']
    a = arch(t, 'Qwen/Qwen3-8B')
    m = inference_memory(a, 8192, 64, A)
    assert m['kv'] == pytest.approx(2 * 36 * 8 * 128 * 8192 * 64 * 2 / 1e9)     # 77.31 GB
    assert m['weights'] == pytest.approx(16.38) and m['logits'] == pytest.approx(64 * 151936 * 4 / 1e9)
    g = arch(t, 'google/gemma-3-12b-it')
    # LoRA r=64 on q,k,v,o,gate,up,down of 48 layers: 64 * 48 * ((3840+4096) + 2*(3840+2048) + (4096+3840) + 2*(3840+15360) + (15360+3840))
    assert lora_params(g) == 64 * 48 * 85248
    s = training_memory(g, 8 * 4096, A)
    assert s['logits'] == pytest.approx(8 * 4096 * 262208 * 4 / 1e9) and s['weights'] == pytest.approx((12.19 - 0.42) * 2)   # the vision tower is not loaded

def test_totals_and_cli(tmp_path, capsys, plan):
    tot = plan_totals(plan)
    assert tot['gpu_hours'] > 0 and tot['api_usd'] > 0 and tot['peak_gb'] > 0
    assert main(['--profile', 'paper', '--plan', '--gpu', 'h200-141gb', '--set', f'results_dir={tmp_path}']) == 0
    out = capsys.readouterr().out
    assert 'GPU-hours' in out and 'API:' in out and (tmp_path/'plan.csv').exists()
    assert json.loads((tmp_path/'plan.json').read_text())['gpu'] == 'h200-141gb'
    assert main(['--profile', 'paper', '--plan', '--gpu', 'tpu-v9']) == 2

def test_one_system_and_bad_lines():
    cfg = load_profile('paper', **{'roster.only': 'qwen3-8b'})
    assert [s.id for s in selected(cfg)] == ['qwen3-8b']
    p = build_plan(cfg)
    assert set(p['name']) == {'Qwen3-8B'} and len(p) == 4
    with pytest.raises(ConfigError, match='roster.x: family'):
        load_profile('paper', **{'roster.x': 'model=m; family=chat; tables=table2'})
    with pytest.raises(RosterError, match='unknown key'):
        parse_system('x', 'model=m; family=cot; tables=table2; temperature=0')
