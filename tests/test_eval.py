"Answer extraction, prompts, scoring, metrics and the GoT control flow of dagger.eval (fast; no model)."
import json, math
import numpy as np
import pandas as pd
import pytest
from dagger import prompts as P
from dagger import graph as G
from dagger.data import Problem
from dagger.llm import Completion, Sampling, Backend
from dagger import answers as A, eval as E, metrics as M


# --- answer extraction --------------------------------------------------------------------------------
@pytest.mark.parametrize('text,lang,value', [
    ('5 + 6 = 11। উত্তর হল 11।', 'bn', 11),
    ('উত্তর হল ১১।', 'bn', 11),
    ('উত্তর হলো ১,২৫০ টাকা।', 'bn', 1250),
    ('মোট ২.৫ কেজি। উত্তর হল ২.৫।', 'bn', 2.5),
    ('তাপমাত্রা কমেছে। উত্তর হল -৩।', 'bn', -3),
    ('উত্তর হল 3/4।', 'bn', 0.75),
    ('প্রথমে 10টি, পরে 3টি, মোট 13টি।', 'bn', 13),            # no phrase: last number
    ('উত্তর হল 7। পরের প্রশ্ন: 99', 'bn', 7),                    # the first phrase wins over a later number
    ('The answer is 18.', 'bn', 18),                               # English phrase in a Bangla run
    ('The answer is $1,234.50.', 'en', 1234.5),
    ('The answer is **42**.', 'en', 42),
    ('The answer is -7.', 'en', -7),
    ('So 10 - 3 = 7.', 'en', 7),                                   # subtraction, not a negative number
    ('Die Antwort ist 5.', 'de', 5),
    ('答案是 12。', 'zh', 12),
    ('Ответ — 8.', 'ru', 8),
    ('nothing numeric', 'en', None),
])
def test_extract_answer(text, lang, value):
    assert A.extract_answer(text, lang) == value


@pytest.mark.parametrize('text,value', [
    (r'\boxed{42}', 42), (r'a \boxed{1} b \boxed{2}', 2), (r'\boxed{\frac{1}{4}}', 0.25),
    (r'\boxed{-\dfrac{3}{2}}', -1.5), (r'\boxed{১২০০}', 1200), (r'\boxed{1{,}500}', 1500),
    (r'\boxed{\$18}', 18), (r'\boxed{45^\circ}', 45), (r'\boxed{12 \text{ apples}}', 12),
    (r'\boxed{x}', None), ('no box, answer is 5', None), (r'\boxed{7', 7),
])
def test_extract_boxed(text, value):
    assert A.extract_boxed(text) == value


# Outputs the embedded model (SmolLM2-135M-Instruct, greedy) wrote for our prompts, recorded verbatim.
# Bangla CoT: it never reaches 'উত্তর হল' within the CPU budget and writes number words (চারটি) but no digits: no answer.
# English CoT: the first 'The answer is N' wins, even when repeated or followed by more numbers.
# DAGGER: prose with no graph (no_graph) and the example graph copied until the budget cuts the JSON (invalid_json).
# PoT: a function that is never called and no `ans` (no_answer); prose instead of a program (syntax).
REAL_OUTPUTS = [
    {"src": "mgsm_bn-010 cot 192 tokens", "method": "cot", "lang": "bn", "output": "একটি নতুন প্রোগ্রাম প্রথম মাসে ডাউনলোড করা হয়েছিল। দ্বিতীয় মাসে তার প্রোগ্রামটিকে মোট কতবার ডাউনলোড করা ", "expected": None},
    {"src": "mgsm_bn-066 cot 192 tokens", "method": "cot", "lang": "bn", "output": "একটি বাস্কেটবল টুর্নামেন্টে চারটি বিদ্যালয় একটি বিদ্যালয় একটি প্রতিটি দলে পাঠিয়েছে। সমস্ত বিদ্যালয় প্র�", "expected": None},
    {"src": "mgsm_bn-077 cot 192 tokens", "method": "cot", "lang": "bn", "output": "একরের সারার তুলনায় অর্থার সারার তুলনায় অর্থার সারার তুলনায় অর্থার সারার তুলনায় অর্থার সারার তুলনায় অর্থ�", "expected": None},
    {"src": "mgsm_bn-122 cot 192 tokens", "method": "cot", "lang": "bn", "output": "একরের স্যাডি সারা সপ্তাহে দুইদিনের প্রত্যেকদিনে, তিনি দুইদিনের তুলনায় বাকি সপ্তাহে দুইদিনের তুলনায় বাকি", "expected": None},
    {'src': 'mgsm_en-010 cot 128 tokens', 'method': 'cot', 'lang': 'en', 'output': 'The answer is 10.\n\nThe program had 60 downloads in the first month, which is 10% of 60, so it had 60 * 10 / 100 = 6 downloads. The program had 60 + 30 = 90 downloads in the second month, which is 90% of 60, so it had 6 * 90 / 100 = 6 downloads. The program had 6 + 3 = 9 downloads in the third month, which is 90% of 6', 'expected': 10.0},
    {'src': 'mgsm_en-066 cot 128 tokens', 'method': 'cot', 'lang': 'en', 'output': 'There are 4 schools and each school has sent 5 people each. Each school has also sent 5 + 1 = 6 people. The answer is 6.', 'expected': 6.0},
    {'src': 'mgsm_en-077 cot 128 tokens', 'method': 'cot', 'lang': 'en', 'output': 'The answer is 400.\n\nThe answer is 400.\n\nThe answer is 400.\n\nThe answer is 400.\n\nThe answer is 400.\n\nThe answer is 400.\n\nThe answer is 400.\n\nThe answer is 400.\n\nThe answer is 400.\n\nThe answer is 400.\n\nThe answer is 400.\n\nThe answer is 400.\n\nThe answer is 400.', 'expected': 400.0},
    {'src': 'mgsm_en-010 dagger 128 tokens', 'method': 'dagger', 'lang': 'en', 'output': '1\n\nExplanation:\n1. The program had 60 downloads in the first month.\n2. The number of downloads in the second month was three times as many as the downloads in the first month.\n3. The program had 60 downloads in the third month.\n\nThe answer is 60.', 'expected': 'parse:no_graph'},
    {'src': 'mgsm_en-077 dagger 128 tokens', 'method': 'dagger', 'lang': 'en', 'output': '```json\n{\n  "nodes": [\n    {\n      "id": "n1",\n      "op": "const",\n      "val": 122195,\n      "distractor": false,\n      "label": "Mina\'s pens"\n    },\n    {\n      "id": "n2",\n      "op": "const",\n      "val": 25084,\n      "distractor": true,\n      "label": "Raju\'s pens"\n    },\n    {\n      "id": "n3",\n      "op": "const",\n      "val":', 'expected': 'parse:invalid_json'},
    {'src': 'mgsm_en-010 pot 128 tokens', 'method': 'pot', 'lang': 'en', 'output': '```python\ndef calculate_total_drops():\n    total_drops = 60\n    for month in range(1, 6):\n        if month == 1:\n            total_drops += 30\n        elif month == 2:\n            total_drops += 30\n        else:\n            total_drops += 30\n    return total_drops\n\ndef calculate_total_drops():\n    total_drops = 60\n    for month in range(1, 6):\n        if month == 1:\n            total_drops += 30\n       ', 'expected': 'no_answer'},
    {'src': 'mgsm_en-077 pot 128 tokens', 'method': 'pot', 'lang': 'en', 'output': 'The answer is 180.\n\nThe answer is 180.\n\nThe answer is 180.\n\nThe answer is 180.\n\nThe answer is 180.\n\nThe answer is 180.\n\nThe answer is 180.\n\nThe answer is 180.\n\nThe answer is 180.\n\nThe answer is 180.\n\nThe answer is 180.\n\nThe answer is 180.\n\nThe answer is 180.', 'expected': 'syntax'},
]


@pytest.mark.parametrize('row', REAL_OUTPUTS, ids=[r['src'] for r in REAL_OUTPUTS])
def test_real_model_outputs(row):
    if row['method'] == 'cot': got = A.extract_answer(row['output'], row['lang'])
    else: got = A.score_text(row['method'], row['output'], row.get('gold', 0.0), row['lang'])['error']
    assert got == row['expected']


# --- prompts --------------------------------------------------------------------------------------------
def test_cot_prompt_uses_five_native_exemplars():
    for lang, phrase in [('bn', 'উত্তর হল'), ('en', 'The answer is'), ('es', 'La respuesta es')]:
        c = P.cot_messages('Q?', lang)[0]['content']
        assert c.count(phrase) == 5 and c.startswith(P.exemplars(lang)[0].question)
        assert P.exemplars(lang)[5].question not in c
        assert c.endswith(P.labels(lang)[1]) and f'{P.labels(lang)[0]} Q?' in c


def test_dagger_prompt_lists_exactly_the_executor_ops():
    import re
    c = P.dagger_prompt('প্রশ্ন?', 'bn')[0]['content']
    listed = re.findall(r'^- ([a-z]+): ', c, re.M)
    assert set(listed) == set(G.OPS) and len(listed) == len(G.OPS)
    assert 'মিনার কাছে ১২২১৯৫' in c and 'Mina has' not in c
    assert 'Mina has 122195 pens' in P.dagger_prompt('Q?', 'en')[0]['content']
    assert 'Mina has 122195 pens' in P.dagger_prompt('Q?', 'te')[0]['content']


def test_pen_example_is_a_correct_graph_with_distractors():
    for lang in ('bn', 'en'):
        g = G.from_obj(P.pen_graph(lang))
        assert G.is_correct(G.execute(g), 122195 * 45.6) and len(G.declared_distractors(g)) == 3
        assert sorted(G.unreachable(g)) == sorted(G.declared_distractors(g))


def test_reasoning_and_pot_prompts():
    assert '\\boxed{}' in P.reasoning_messages('Q?', 'bn')[0]['content']
    assert 'Bangla' in P.reasoning_messages('Q?', 'bn')[0]['content']
    assert '`ans`' in P.pot_messages('Q?', 'en')[0]['content']


# --- scoring --------------------------------------------------------------------------------------------
def test_score_dagger_repairs_and_failures():
    obj = P.pen_graph('en')
    text = '```json\n' + json.dumps(obj)[:-2] + ',]}\n```'             # trailing comma: lenient parse repairs it
    s = A.score_text('dagger', text, 122195 * 45.6)
    assert s['correct'] and s['executed'] and s['repairs'] and s['n_ops'] == 1
    bad = {'nodes': [dict(id='a', op='const', val=1), dict(id='b', op='const', val=0),
                     dict(id='q', op='div', args=['a', 'b']), dict(id='final_result', op='identity', args=['q'])]}
    s = A.score_text('dagger', '```json\n' + json.dumps(bad) + '\n```', 1.0)
    assert s['executed'] is False and s['error'] == 'exec:division_by_zero' and not s['correct']


def test_score_pot_and_cot():
    assert A.score_text('pot', '```python\nans = 3 * 4\n```', 12.0)['correct']
    s = A.score_text('pot', '```python\nimport os\nos.system("true")\nans = 1\n```', 1.0)
    assert s['error'] == 'forbidden' and s['executed'] is False and not s['correct']
    s = A.score_text('cot', 'কোনো সংখ্যা নেই', 3.0)
    assert s['error'] == 'no_answer' and s['executed'] is None
    with pytest.raises(ValueError): A.score_text('magic', 'x', 1.0)


def test_known_distractors_from_added_sentences():
    p = Problem('x', 'q', 5.0, 'bn', 's', 'mgsm_bn_distract', aug_type='RED', added_sentences=['রাজুর ৭টি কলম আছে।', 'দাম ২.৫ টাকা।'])
    assert E.known_distractors(p) == [7.0, 2.5]
    assert E.known_distractors(Problem('y', 'q', 5.0, 'bn', 's', 'mgsm_bn')) is None


# --- metrics --------------------------------------------------------------------------------------------
def R(method, split, correct, tokens, **kw):
    base = dict(method=method, model='m', base_model='m', phase='untrained', split=split, id=f'{split}-{kw.pop("i", 0)}', correct=correct, tokens=tokens,
                calls=kw.pop('calls', 1), executed=None, n_ops=None, repairs=None, flagged=None, distractor_values=None,
                aug_type=None, split_size=kw.pop('split_size', 100))
    return base | kw


@pytest.fixture
def records():
    return pd.DataFrame([
        R('cot', 'mgsm_bn', True, 10, i=0), R('cot', 'mgsm_bn', False, 30, i=1),
        R('cot', 'msvamp_bn', True, 20, i=0), R('cot', 'msvamp_bn', True, 20, i=1),
        R('cot', 'mgsm_bn_distract', False, 40, aug_type='RED', i=0), R('cot', 'mgsm_bn_distract', False, 40, aug_type='OAD', i=1),
        R('cot', 'msvamp_bn_distract', True, 50, aug_type='NEED', i=0), R('cot', 'msvamp_bn_distract', False, 50, aug_type='RED', i=1),
        R('dagger', 'mgsm_bn_distract', True, 100, executed=True, n_ops=2, repairs=[], flagged=[3.0, 4.0],
          distractor_values=[3.0, 4.0], aug_type='RED', i=0),
        R('dagger', 'mgsm_bn_distract', False, 100, executed=True, n_ops=4, repairs=['x'], flagged=[8.0],
          distractor_values=[3.0, 4.0], aug_type='OAD', i=1),
        R('dagger', 'mgsm_bn_distract', False, 200, executed=False, n_ops=None, repairs=None, flagged=None,
          distractor_values=[5.0], aug_type='NEED', i=2),
        R('got', 'mgsm_bn', True, 600, calls=6),
    ])


def test_summary(records):
    s = M.summarize(records).set_index(['method', 'split'])
    assert s.loc[('cot', 'mgsm_bn'), 'accuracy'] == 50 and s.loc[('cot', 'mgsm_bn'), 'mean_tokens'] == 20
    d = s.loc[('dagger', 'mgsm_bn_distract')]
    assert d['n'] == 3 and math.isclose(d['accuracy'], 100 / 3) and math.isclose(d['exec_rate'], 200 / 3)
    assert d['mean_ops'] == 3 and d['repairs_per_problem'] == 0.5 and d['repaired_pct'] == 50
    # flags over parsed graphs: {3,4} vs {3,4}: tp 2; {8} vs {3,4}: fp 1, fn 2 -> P 2/3, R 2/4, F1 4/7
    assert math.isclose(d['flag_precision'], 200 / 3) and math.isclose(d['flag_recall'], 50)
    assert math.isclose(d['flag_f1'], 400 / 7) and d['flag_n'] == 2
    assert s.loc[('got', 'mgsm_bn'), 'calls_per_problem'] == 6
    assert math.isnan(s.loc[('cot', 'mgsm_bn'), 'exec_rate']) and math.isnan(s.loc[('cot', 'mgsm_bn'), 'flag_precision'])


def test_summary_intervals_and_smoke(records):
    s = M.summarize(records).set_index(['method', 'split'])
    r = s.loc[('cot', 'mgsm_bn')]                                             # 1 of 2 right, tokens 10 and 30
    assert math.isclose(r['acc_lo'], 9.45, abs_tol=0.01) and math.isclose(r['acc_hi'], 90.55, abs_tol=0.01)
    assert 10 <= r['tokens_lo'] <= r['mean_tokens'] <= r['tokens_hi'] <= 30 and r['smoke']
    assert s.loc[('cot', 'msvamp_bn'), 'acc_hi'] == 100 and s.loc[('cot', 'msvamp_bn'), 'tokens_lo'] == 20   # all right, equal tokens
    big = pd.DataFrame([R('cot', 'mgsm_bn', i % 2 == 0, 10 + i, i=i) for i in range(40)])
    b = M.summarize(big).iloc[0]
    assert not b['smoke'] and b['acc_lo'] < 50 < b['acc_hi'] and b['n'] == 40


def _pr(method, phase, split, i, correct, tokens=100):
    aug = split.endswith('_distract')
    return dict(method=method, model='m' if phase == 'untrained' else f'm ({phase.upper()})', base_model='m', phase=phase, split=split, id=f'{split}-{i}',
                correct=correct, tokens=tokens, original_id=f'msvamp_bn-{i}' if aug else None)


def test_paired_comparisons():
    recs = []
    for i in range(40):
        recs += [_pr('dagger', 'untrained', 'msvamp_bn', i, i < 10), _pr('dagger', 'sft', 'msvamp_bn', i, i < 30, 80),
                 _pr('dagger', 'grpo', 'msvamp_bn', i, i < 30, 70), _pr('cot', 'untrained', 'msvamp_bn', i, i < 20, 200),
                 _pr('dagger', 'sft', 'msvamp_bn_distract', i, i < 28), _pr('cot', 'untrained', 'msvamp_bn_distract', i, i < 5)]
    pc = M.paired_comparisons(recs).set_index(['comparison', 'metric', 'split'])
    s = pc.loc[('SFT vs untrained', 'accuracy', 'msvamp_bn')]
    assert (s['n'], s['diff'], s['discordant_b'], s['discordant_c'], s['smoke']) == (40, 50.0, 20, 0, False)
    assert math.isclose(s['p'], 2 * 0.5 ** 20) and s['ci_lo'] > 0 and s['test'].startswith('McNemar')
    g = pc.loc[('GRPO vs SFT', 'accuracy', 'msvamp_bn')]
    assert g['diff'] == 0 and g['p'] == 1 and (g['discordant_b'], g['discordant_c']) == (0, 0)      # no discordant pairs
    assert pc.loc[('GRPO vs SFT', 'tokens', 'msvamp_bn'), 'diff'] == -10
    d = pc.loc[('Δ DAGGER (sft) vs CoT', 'Δ accuracy', 'msvamp_bn → msvamp_bn_distract')]
    assert np.allclose([d['value_a'], d['value_b'], d['diff']], [5.0, 37.5, -32.5]) and d['ci_hi'] < 0 and d['p'] < 0.01
    assert ('SFT vs untrained', 'accuracy', 'msvamp_bn_distract') not in pc.index                  # untrained DAGGER has no +D records
    assert M.paired_comparisons(recs[:6 * 5])['smoke'].all() and len(M.paired_comparisons([])) == 0


def test_records_carry_the_original_id():
    p = Problem('msvamp_bn_distract-0001', 'q', 3.0, 'bn', 'distractmath-msvamp', 'msvamp_bn_distract', aug_type='RED',
                meta=dict(original_id='msvamp_bn-0004'))
    assert E._problem_fields(p)['original_id'] == 'msvamp_bn-0004'


def test_deltas(records):
    d = M.deltas(M.summarize(records)).set_index(['method', 'augmented'])
    assert d.loc[('cot', 'mgsm_bn_distract'), 'delta'] == 50 and d.loc[('cot', 'msvamp_bn_distract'), 'delta'] == 50
    assert ('dagger', 'mgsm_bn_distract') not in d.index          # no original split for dagger
    assert M.original_split('msvamp_bn_distract') == 'msvamp_bn' and M.original_split('mgsm_bn') is None


def test_weighted_average(records):
    s = M.summarize(records)
    w = M.weighted(s).set_index('method')
    assert w.loc['cot', 'complete'] and w.loc['cot', 'accuracy'] == (50 + 100 + 0 + 50) / 4   # sampled: equal counts
    assert not w.loc['dagger', 'complete']
    full = s.assign(split_size=s['n'])                                                       # full splits: paper weights
    wf = M.weighted(full).set_index('method')
    assert math.isclose(wf.loc['cot', 'accuracy'], (50 * 250 + 100 * 1000 + 0 * 738 + 50 * 2947) / 4935)
    assert math.isclose(wf.loc['cot', 'mean_tokens'], (20 * 250 + 20 * 1000 + 40 * 738 + 50 * 2947) / 4935)


def test_type_errors(records):
    t = M.type_errors(records).set_index(['method', 'aug_type'])
    assert t.loc[('cot', 'RED'), 'n'] == 2 and t.loc[('cot', 'RED'), 'error_rate'] == 100
    assert t.loc[('cot', 'NEED'), 'error_rate'] == 0 and t.loc[('dagger', 'RED'), 'accuracy'] == 100


def test_write_results_merges_and_concatenates(tmp_path, records):
    recs = records.to_dict('records')
    out = tmp_path/'eval'/'model_a'
    E.write_results([r for r in recs if r['method'] == 'cot'], out, dict(time='t0', model='m'))
    E.write_results([r for r in recs if r['method'] != 'cot'], out, dict(time='t1', model='m'))
    t = E.write_results([r | dict(correct=False) for r in recs if r['method'] == 'got'], out, dict(time='t2', model='m'))
    lines = (out/'records.jsonl').read_text().splitlines()
    assert len(lines) == len(recs)                                                # got replaced, not duplicated
    s = pd.read_csv(out/'summary.csv').set_index(['method', 'split'])
    assert s.loc[('got', 'mgsm_bn'), 'accuracy'] == 0
    assert {'summary.csv', 'deltas.csv', 'weighted.csv', 'types.csv', 'run.json', 'records.jsonl'} <= {p.name for p in out.iterdir()}
    assert len(json.loads((out/'run.json').read_text())['history']) == 3
    E.write_results(recs[:1], tmp_path/'eval'/'model_b', dict(time='t'))
    top = pd.read_csv(tmp_path/'eval'/'summary.csv')
    assert set(top['run']) == {'model_a', 'model_b'}
    assert E.run_name('google/gemma-3-12b-it') == 'google_gemma-3-12b-it' and E.run_name('embedded:smollm2-135m') == 'embedded_smollm2-135m'


# --- graph of thoughts control flow, with a scripted backend (a test double: no model) ----------------
class Scripted(Backend):
    "Answers by prompt kind: candidates say 'answer is 5' or '6', scores 9 for 5 and 2 for 6, aggregate/refine keep 5."
    kind = 'scripted'
    def __init__(self): super().__init__('scripted', cache=None); self.calls = []
    def _run(self, jobs, sampling):
        for j in jobs:
            t = j.messages[-1]['content']
            self.calls.append((t[:20], sampling.n))
            if 'Proposed solution' in t: out = 'Score: 9' if 'answer is 5' in t else 'Score: 2'
            elif 'Combine' in t: out = 'merged: 2 + 3 = 5. The answer is 5.'
            elif 'Check each step' in t: out = 'checked. The answer is 5.'
            else: out = f'The answer is {5 + j.sample}.'
            yield j, Completion(out, 10 + j.sample, 'stop')


def test_got_control_flow():
    ps = [Problem(f'p{i}', 'Two plus three?', 5.0, 'en', 's', 'mgsm_en') for i in range(3)]
    b = Scripted()
    recs = E.run_got(ps, b, k=2, max_new_tokens=16, progress=False)
    assert [r['calls'] for r in recs] == [6, 6, 6] and all(r['correct'] for r in recs)
    assert recs[0]['got_scores'] == [9.0, 2.0]
    assert recs[0]['tokens'] == 10 + 11 + 10 + 10 + 10 + 10
    assert recs[0]['output'] == 'checked. The answer is 5.'
    s = M.summarize(pd.DataFrame([r | dict(model='scripted', split_size=3) for r in recs]))
    assert s['calls_per_problem'].iloc[0] == 6


def test_run_method_rejects_unknown():
    with pytest.raises(ValueError): E.run_method('magic', [], Scripted())


def test_budgets():
    assert E.budget('reasoning') == 7168 and E.budget('dagger') == 1024 and E.budget('cot') == 2048
    assert E.budget('reasoning', 192) == 192


def test_load_splits_draws_only_evaluable_problems():
    from dagger.config import load_profile
    halved = load_profile('cpu', msvamp_holdout=True)
    got = E.load_splits(['msvamp_en', 'mgsm_en'], sample_n=12, seed=0, cfg=halved, n=8, verbose=False)
    (ms, ms_size), (mg, mg_size) = got['msvamp_en'], got['mgsm_en']
    assert (len(ms), ms_size, len(mg), mg_size) == (8, 500, 8, 250)
    assert all(int(p.id.rsplit('-', 1)[1]) % 2 == 0 for p in ms)
    assert E.load_splits(['msvamp_en'], sample_n=12, seed=0, cfg=load_profile('cpu', msvamp_holdout=False, teacher__msvamp_split=''), verbose=False)['msvamp_en'][1] == 1000


# --- the smoke check: its own folder, its own sample, the same backend ------------------------------
class Constant(Backend):
    "Answers every prompt with the same text (a test double: no model); counts its prompts."
    kind = 'constant'
    def __init__(self): super().__init__('constant', cache=None); self.prompts = 0
    def _run(self, jobs, sampling):
        for j in jobs:
            self.prompts += 1
            yield j, Completion('The answer is 5.', 6, 'stop')


def test_smoke_check_runs_apart_from_the_evaluation(tmp_path, monkeypatch):
    from dagger.config import load_profile
    from dagger.data import prepare_splits, needed_splits
    cfg = load_profile('cpu', results_dir=str(tmp_path), eval__splits='msvamp_en', eval__sample_n=4, eval__n=3, eval__phases='untrained',
                       eval__smoke_splits='msvamp_bn', eval__smoke_n=5)
    assert needed_splits(cfg)[:2] == ['msvamp_en', 'msvamp_bn']
    prepare_splits(cfg, ['msvamp_en', 'msvamp_bn'])
    backends = []
    monkeypatch.setattr(E, 'phase_backend', lambda cfg, phase: backends.append(Constant()) or backends[-1])
    runs = E.evaluate_profile(cfg, progress=False)
    assert list(runs) == ['untrained'] and len(backends) == 1          # one backend for the phase and its smoke check
    main, smoke = runs['untrained'], runs['untrained']['smoke_check']
    assert main['out'].parent == tmp_path/'eval' and smoke['out'].parent == tmp_path/'eval_smoke'
    assert set(main['records']['split']) == {'msvamp_en'} and set(smoke['records']['split']) == {'msvamp_bn'}
    assert main['records'].groupby('method').size().tolist() == [3, 3] and smoke['records'].groupby('method').size().tolist() == [5, 5]
    assert smoke['info']['smoke_check'] is True and main['info']['smoke_check'] is False
    assert backends[0].prompts == 2 * 3 + 2 * 5
    assert (smoke['out']/'records.jsonl').is_file() and not (tmp_path/'eval'/'msvamp_bn.jsonl').exists()
    # without smoke splits there is no smoke run
    assert 'smoke_check' not in E.evaluate_profile(cfg.replace(eval__smoke_splits=()), progress=False)['untrained']


def test_untrained_methods_choose_the_baselines(tmp_path, monkeypatch):
    "eval.untrained_methods limits the untrained model to its baselines; () keeps every method."
    from dagger.config import load_profile
    from dagger.data import prepare_splits
    cfg = load_profile('cpu', results_dir=str(tmp_path), eval__splits='msvamp_en', eval__sample_n=4, eval__n=3,
                       eval__phases='untrained', eval__untrained_methods='cot')
    prepare_splits(cfg, ['msvamp_en'])
    monkeypatch.setattr(E, 'phase_backend', lambda cfg, phase: Constant())
    assert set(E.evaluate_profile(cfg, progress=False)['untrained']['records']['method']) == {'cot'}
    both = E.evaluate_profile(cfg.replace(eval__untrained_methods=()), progress=False)['untrained']['records']
    assert set(both['method']) == {'cot', 'dagger'}
