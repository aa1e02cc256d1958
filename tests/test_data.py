"Loaders, sampling and the fail-fast hub fallback of dagger.data, and the gold-graph converters of dagger.gold."
import json, logging, socket, time
from pathlib import Path

import pytest

from dagger import data as D
from dagger.config import load_profile
from dagger.files import write_jsonl
from dagger import gold as G
from dagger.data import (DataError, DistractMathNotBuilt, HubUnavailable, Problem, gold_coverage, load_distractmath, load_hub,
                         load_split, load_training, sample, to_frame)
from dagger.gold import GoldGraphError, gsm8k_graph, msvamp_graph, solution_steps, verify_graph
from dagger.graph import execute, from_obj, op_count, declared_distractors

ROOT = Path(__file__).resolve().parents[1]


# ---------- loaders ----------

@pytest.mark.parametrize('name,size', [('mgsm_bn', 250), ('mgsm_en', 250), ('mgsm_th', 250), ('msvamp_bn', 1000),
                                       ('msvamp_en', 1000), ('gsm8k_test', 1319), ('gsm8k_train', 7473)])
def test_split_sizes_and_schema(name, size):
    recs = load_split(name, gold=False)
    assert len(recs) == size
    assert len({r.id for r in recs}) == size
    r = recs[0]
    assert isinstance(r, Problem) and isinstance(r.answer, float) and r.split == name
    assert r.origin.startswith('vendored:data/') and r.aug_type is None and r.added_sentences == []


def test_all_mgsm_languages_load():
    for lang in D.MGSM_LANGS:
        assert len(load_split(f'mgsm_{lang}', gold=False)) == 250


def test_mgsm_bn_first_problem():
    p = load_split('mgsm_bn', gold=False)[0]
    assert p.answer == 18.0 and p.lang == 'bn' and 'জেনেটের' in p.question
    assert p.origin == 'vendored:data/mgsm/mgsm_bn.tsv#0'


def test_msvamp_bn_keeps_english_query_and_equation():
    p = load_split('msvamp_bn', gold=False)[0]
    assert p.meta['query_en'].startswith('julia played tag with 18 kids')
    assert p.meta['equation'] == '- number0 number1' and p.answer == 8.0


def test_unknown_split_is_a_typed_error():
    with pytest.raises(DataError, match='unknown split'): load_split('mgsm_xx')
    with pytest.raises(DataError): load_split('mgsm_bn', n=-1)


def test_sampling_is_deterministic_and_ordered():
    a = [p.id for p in load_split('msvamp_bn', n=16, seed=3)]
    assert a == [p.id for p in load_split('msvamp_bn', n=16, seed=3)]
    assert a == sorted(a) and len(set(a)) == 16
    assert a != [p.id for p in load_split('msvamp_bn', n=16, seed=4)]
    assert len(sample(list(range(5)), 0)) == 5 and len(sample(list(range(5)), 50)) == 5


def test_records_are_fresh_copies():
    a = load_split('msvamp_bn', n=2)
    a[0].meta['scribble'] = 1
    a[0].gold_graph['nodes'].clear()
    b = load_split('msvamp_bn', n=2)
    assert 'scribble' not in b[0].meta and b[0].gold_graph['nodes']


def test_problem_round_trip_and_validation():
    p = load_split('mgsm_bn', n=1)[0]
    q = Problem.from_dict(json.loads(json.dumps(p.to_dict(), ensure_ascii=False)))
    assert q == p
    with pytest.raises(DataError): Problem('x', 'q', float('inf'), 'bn', 's', 's')
    with pytest.raises(DataError): Problem('x', 'q', 1.0, 'bn', 's', 's', aug_type='FOO')
    with pytest.raises(DataError, match='lacks'): Problem.from_dict({'id': 'x'})


def test_to_frame():
    df = to_frame(load_split('msvamp_bn', n=5))
    assert len(df) == 5 and {'id', 'question', 'answer', 'gold_ops', 'gold_distractors', 'origin'} <= set(df.columns)
    assert (df.gold_ops >= 1).all()


# ---------- converters ----------

def test_gsm8k_janet_graph():
    p = load_split('gsm8k_test', gold=False)[0]
    g = gsm8k_graph(p.question, p.meta['solution'])
    assert [n['val'] for n in g['nodes'] if n['op'] == 'const'] == [16, 3, 4, 2]
    assert op_count(from_obj(g, strict=True)) == 3 and execute(from_obj(g, strict=True)) == 18
    assert g['nodes'][-1]['id'] == 'final_result' and g['nodes'][-1]['op'] == 'identity'
    assert all(n['label'] for n in g['nodes'])


def test_gsm8k_steps_chain_and_plain_equations():
    sol = 'The heels cost 33 * 2 = $<<33*2=66>>66.\nTogether 66 + 33 = $<<66+33=99>>99.\nThe boots cost 99 + 5 = $104.\n#### 104'
    g = gsm8k_graph('Heels cost $33, a second pair twice that; boots cost $5 more than both.', sol)
    ops = [n for n in g['nodes'] if n['op'] not in ('const', 'identity')]
    assert [o['op'] for o in ops] == ['mul', 'add', 'add']
    assert ops[1]['args'][0] == ops[0]['id'] and ops[2]['args'][0] == ops[1]['id']   # steps chain by value
    assert verify_graph(g, 104) == 104
    assert [s['annotated'] for s in solution_steps(sol)] == [True, True, False]


def test_gsm8k_distractor_constants():
    q = 'Ted starts with $200. He buys 3 books for 16 dollars each and 3 pencils for 6 dollars each. How much did he spend?'
    sol = 'Books: 3*16 = <<3*16=48>>48.\nPencils: 3*6 = <<3*6=18>>18.\nTotal 48+18 = <<48+18=66>>66.\n#### 66'
    g = from_obj(gsm8k_graph(q, sol), strict=True)
    dis = [g.node(i) for i in declared_distractors(g)]
    assert [(n['val'], n['label']) for n in dis] == [(200.0, 'Ted starts with $200')]
    assert execute(g) == 66


@pytest.mark.parametrize('sol,reason', [
    ('No arithmetic.\n#### 5', 'no_annotations'),
    ('a <<2+2=4>>4\n#### 5', 'answer_not_computed'),
    ('a <<2**3=8>>8\n#### 8', 'unsupported_expression'),
    ('a <<2+)=4>>4\n#### 4', 'unparseable_annotation'),
])
def test_gsm8k_failures_have_reasons(sol, reason):
    with pytest.raises(GoldGraphError) as e: gsm8k_graph('q', sol)
    assert e.value.reason == reason


def test_msvamp_graph_with_distractor():
    q = 'tom has 3 red marbles and 5 blue marbles . he also has 9 books . how many marbles does he have ?'
    g = from_obj(msvamp_graph(q, '+ number0 number1', 8), strict=True)
    assert execute(g) == 8 and declared_distractors(g) == ['n2']
    assert g.node('n2')['label'] == 'he also has 9 books'           # too few words after it: the words before
    assert g.node('op1')['label'] == 'how many marbles does he have ?'
    with pytest.raises(GoldGraphError, match='missing_number'): msvamp_graph('5 apples', '+ number0 number1')
    with pytest.raises(GoldGraphError, match='bad_equation'): msvamp_graph('5 and 3', '+ number0')


def test_verify_graph_rejects_wrong_answers():
    g = msvamp_graph('a 5 b 3', '- number0 number1', 2)
    assert verify_graph(g, 2) == 2
    with pytest.raises(GoldGraphError, match='wrong_answer'): verify_graph(g, 3)
    g['nodes'][-1]['args'] = ['nowhere']
    with pytest.raises(GoldGraphError, match='execution_failed'): verify_graph(g, 2)


# the paper's form has no graph for a problem whose computation needs a number no word of the problem names
# (reason unstated_constant): about a fifth of GSM8K and MGSM, 3% of MSVAMP-bn (numbers its translation dropped)
@pytest.mark.parametrize('name,form,floor', [('mgsm_bn', 'spans', 0.95), ('msvamp_bn', 'spans', 0.99),
                                             ('gsm8k_train', 'spans', 0.95), ('mgsm_bn', 'paper', 0.75),
                                             ('msvamp_bn', 'paper', 0.96), ('gsm8k_train', 'paper', 0.75)])
def test_gold_coverage(name, form, floor):
    cfg = load_profile('cpu').replace(sft__gold_format=form)
    c = gold_coverage(name, cfg)
    assert c['coverage'] >= floor and c['kept'] + len(c['failures']) == c['total']
    assert all(f['reason'] and f['id'] for f in c['failures'])
    kept = [p for p in load_split(name, cfg=cfg) if p.gold_graph]
    assert len(kept) == c['kept'] and all(p.meta['gold_format'] == form for p in kept)
    for p in kept[:200]:                                            # every kept graph reproduces its answer
        assert abs(execute(from_obj(p.gold_graph, strict=True)) - p.answer) <= 1e-6 * max(1, abs(p.answer))
    failed = [p for p in load_split(name, cfg=cfg) if not p.gold_graph]
    assert all(p.meta['gold_failure'] for p in failed)


def test_gsm8k_train_converts_in_seconds():
    D._with_gold.cache_clear()
    t0 = time.time(); gold_coverage('gsm8k_train')
    assert time.time() - t0 < 30                                    # ≈4 s on the 2-core CPU machine


def test_mgsm_aligns_with_gsm8k_test():
    assert list(D.mgsm_alignment(D.data_root())) == list(range(250))


# ---------- hub: fail fast, then fall back ----------

def test_hub_offline_is_not_tried(monkeypatch):
    def no_network(*a, **k): raise AssertionError('offline: the hub must not be tried')
    monkeypatch.setattr(socket, 'create_connection', no_network)
    monkeypatch.setattr(socket.socket, 'connect', no_network)
    with pytest.raises(HubUnavailable, match='not tried'): load_hub(D.DISTRACT_REPO, 'mgsm', offline=True)


def test_hub_probe_does_not_hang(monkeypatch):
    def hang(*a, **k): time.sleep(30); raise OSError('gave up')     # the probe's thread outlives the test: end it quietly
    monkeypatch.setattr(socket, 'create_connection', hang)
    t0 = time.time()
    with pytest.raises(HubUnavailable) as e: load_hub(D.DISTRACT_REPO, 'mgsm', offline=False, timeout=1)
    assert time.time() - t0 < 10
    msg = str(e.value)
    assert '\n' not in msg and 'dipta007/DistractMath-Bn' in msg and 'huggingface.co' in msg


def test_hub_unresolvable_host(monkeypatch):
    monkeypatch.setattr(D, 'HUB_HOST', 'hub.invalid')
    t0 = time.time()
    with pytest.raises(HubUnavailable, match='unreachable'): load_hub(D.TRAIN_REPO, 'sft', offline=False, timeout=2)
    assert time.time() - t0 < 10


def test_distractmath_not_built_is_typed_and_fast(tmp_path, monkeypatch):
    monkeypatch.setattr(D, 'HUB_HOST', 'hub.invalid')
    cfg = load_profile('cpu', data_dir=str(tmp_path), generated_dir=str(tmp_path))
    t0 = time.time()
    with pytest.raises(DistractMathNotBuilt, match='distractmath') as e:
        load_distractmath('mgsm', cfg=cfg, source='auto', gold=False)
    assert time.time() - t0 < 10
    assert isinstance(e.value, FileNotFoundError) and isinstance(e.value, DataError)
    with pytest.raises(DistractMathNotBuilt): load_split('msvamp_bn_distract', cfg=cfg, gold=False)


def _local_build(tmp_path):
    (tmp_path / 'mgsm').mkdir()
    (tmp_path / 'mgsm' / 'mgsm_bn.tsv').write_text((ROOT / 'data/mgsm/mgsm_bn.tsv').read_text(encoding='utf-8'), encoding='utf-8')
    (tmp_path / 'mgsm' / 'mgsm_en.tsv').write_text((ROOT / 'data/mgsm/mgsm_en.tsv').read_text(encoding='utf-8'), encoding='utf-8')
    (tmp_path / 'gsm8k').mkdir()
    (tmp_path / 'gsm8k' / 'test.jsonl').write_text((ROOT / 'data/gsm8k/test.jsonl').read_text(encoding='utf-8'), encoding='utf-8')
    orig = load_split('mgsm_bn', gold=False)[0].question
    added = 'তার প্রতিবেশীর হাঁসগুলি প্রতিদিন 12টি ডিম পাড়ে।'
    row = dict(row_index=0, original_question=orig, modified_question=orig.replace('ডিম পাড়ে।', 'ডিম পাড়ে। ' + added, 1),
               ground_truth='18', augmentation_type='RED', added_sentences=[added], justification='another person', answers_match=True)
    write_jsonl(tmp_path / 'distractmath' / 'mgsm_bn.jsonl', [row])
    return row


def test_distractmath_falls_back_to_local_build(tmp_path, monkeypatch, caplog):
    row = _local_build(tmp_path)
    monkeypatch.setattr(D, 'HUB_HOST', 'hub.invalid')
    cfg = load_profile('cpu', data_dir=str(tmp_path), generated_dir=str(tmp_path), offline=False)
    t0 = time.time()
    with caplog.at_level(logging.WARNING, logger='dagger.data'):
        recs = load_distractmath('mgsm', cfg=cfg, source='auto')
    assert time.time() - t0 < 10
    assert any('falling back' in r.message and 'hub.invalid' in r.message for r in caplog.records)
    p = recs[0]
    assert p.origin.startswith('local:') and p.origin.endswith('distractmath/mgsm_bn.jsonl#0')
    assert (p.aug_type, p.answer, p.added_sentences, p.original_question) == ('RED', 18.0, row['added_sentences'], row['original_question'])
    g = from_obj(p.gold_graph, strict=True)                          # the original's graph + the added number
    assert execute(g) == 18 and 12.0 in [g.node(i)['val'] for i in declared_distractors(g)]
    assert p.meta['original_id'] == 'mgsm_bn-000'


def test_local_build_with_problem_dicts(tmp_path):
    p = Problem('mgsm_bn_distract-0000', 'প্রশ্ন', 3.0, 'bn', 'distractmath-mgsm', 'mgsm_bn_distract', aug_type='NEED',
                original_question='মূল', added_sentences=['বাক্য'])
    write_jsonl(tmp_path / 'distractmath' / 'mgsm_bn.jsonl', [p.to_dict()])
    cfg = load_profile('cpu', data_dir=str(tmp_path), generated_dir=str(tmp_path))
    got = load_split('mgsm_bn_distract', cfg=cfg, gold=False)
    assert got[0].question == 'প্রশ্ন' and got[0].aug_type == 'NEED' and got[0].origin.startswith('local:')


def test_training_sets_fall_back_to_gsm8k_gold(monkeypatch):
    monkeypatch.setattr(D, 'HUB_HOST', 'hub.invalid')
    cfg = load_profile('cpu')
    tr, val = load_training('sft', cfg=cfg), load_training('sft', 'val', cfg=cfg)
    assert len(val) == 481 and not {p.id for p in tr} & {p.id for p in val}
    assert all(p.gold_graph for p in tr) and tr[0].origin.startswith('vendored:data/gsm8k/train.jsonl')
    assert len(load_training('grpo', cfg=cfg)) + 481 == 7473
    with pytest.raises(HubUnavailable): load_training('sft', cfg=cfg, source='hub')
    with pytest.raises(DataError): load_training('dpo', cfg=cfg)


@pytest.mark.skipif(not (ROOT / 'generated/distractmath/mgsm_bn.jsonl').exists(), reason='DistractMath splits not built yet')
@pytest.mark.parametrize('name', ['mgsm_bn_distract', 'msvamp_bn_distract'])
def test_built_distractmath_splits_carry_verified_graphs(name):
    recs = load_split(name, cfg=load_profile('cpu'))
    assert recs and all(r.origin.startswith('local:generated/distractmath/') for r in recs)
    assert {r.aug_type for r in recs} <= {'RED', 'OAD', 'NEED'}
    with_graph = [r for r in recs if r.gold_graph]
    assert len(with_graph) >= 0.75 * len(recs)                      # the paper's form covers about 80% of MGSM
    for r in with_graph[::25]:
        g = from_obj(r.gold_graph, strict=True)
        assert abs(execute(g) - r.answer) < 1e-6 * max(1, abs(r.answer))
        added = [g.node(i) for i in declared_distractors(g) if i.startswith('added_')]
        assert len(added) == len(r.meta.get('distractor_values', added))


def test_hub_row_variants():
    from dagger.data import distract_record
    row = dict(row_index=0, original_question='q', modified_question=' q plus ', ground_truth='১,২০০',
               augmentation_type='need', added_sentences='["সে 5টি কিনতে চেয়েছিল কিন্তু কেনেনি।"]')
    p = distract_record(row, 7, 'mgsm', 'bn', 'hub:dipta007/DistractMath-Bn/mgsm')
    assert (p.answer, p.aug_type, p.question, p.origin) == (1200.0, 'NEED', 'q plus', 'hub:dipta007/DistractMath-Bn/mgsm#7')
    assert p.added_sentences == ['সে 5টি কিনতে চেয়েছিল কিন্তু কেনেনি।'] and p.gold_graph is None
    with pytest.raises(DataError, match='ground_truth'): distract_record(dict(row, ground_truth='many'), 0, 'mgsm', 'bn', 'x')
    with pytest.raises(DataError, match='aug_type'): distract_record(dict(row, augmentation_type='SWAP'), 0, 'mgsm', 'bn', 'x')


def test_msvamp_halves_follow_the_problem_number():
    halved, full = load_profile('cpu', msvamp_holdout=True), load_profile('cpu', msvamp_holdout=False, teacher__msvamp_split='')
    en, bn = load_split('msvamp_en'), load_split('msvamp_bn')
    assert [D.msvamp_half(p) for p in en[:4]] == ['heldout', 'train', 'heldout', 'train']
    assert [p.id.split('-')[1] for p in D.evaluable(en, halved)] == [p.id.split('-')[1] for p in D.evaluable(bn, halved)]
    assert len(D.evaluable(en, halved)) == 500 and len(D.evaluable(en, full)) == 1000
    gsm = load_split('gsm8k_test', n=20)
    assert D.evaluable(gsm, halved) == gsm and D.msvamp_half(gsm[0]) is None
    moved = Problem(id='msvamp_en_distract-0003', split='msvamp_en_distract', source='msvamp', lang='en', question='q', answer=1.0,
                    meta=dict(original_id='msvamp_en-0007'))
    assert D.msvamp_number(moved) == 7 and D.evaluable([moved], halved) == []


def test_gold_graphs_do_not_state_the_answer():
    for name in ('msvamp_en', 'gsm8k_train'):
        for p in load_split(name, n=30):
            if p.gold_graph: assert p.gold_graph['nodes'][-1] == dict(p.gold_graph['nodes'][-1], id='final_result', label=G.FINAL_LABEL)


# ---------- the published schema, on local copies laid out like the hub ----------

@pytest.fixture(scope='module')
def hub_copy(tmp_path_factory):
    return D.write_hub_fixture(tmp_path_factory.mktemp('hub'))


def test_training_sets_read_the_published_splits_and_columns(hub_copy):
    cfg = load_profile('paper', hub_dir=str(hub_copy))
    tr, val, grpo = load_training('sft', cfg=cfg), load_training('sft', 'val', cfg=cfg), load_training('grpo', cfg=cfg)
    assert (len(tr), len(val), len(grpo)) == (4, 2, 4)                    # split `val`, not `validation`
    row = tr[0].meta['hub_row']
    assert sorted(row) == ['conversations', 'english_answer', 'response']
    assert tr[0].question and tr[0].question in row['conversations'][0]['content'] and 'Question:' not in tr[0].question
    assert tr[0].answer == row['english_answer'] and val[0].origin == 'hub:dipta007/dagger/sft/val#0'
    assert sorted(grpo[0].meta['hub_row']) == ['prompt', 'question', 'solution'] and grpo[0].answer == grpo[0].meta['hub_row']['solution']
    with pytest.raises(DataError, match='no val split'): load_training('grpo', 'val', cfg=cfg)


def test_distractmath_reads_the_published_columns(hub_copy):
    recs = load_distractmath('mgsm', cfg=load_profile('paper', hub_dir=str(hub_copy)))
    assert len(recs) == 4 and recs[0].origin == 'hub:dipta007/DistractMath-Bn/mgsm#0' and recs[0].gold_graph
    assert recs[0].added_sentences and recs[0].added_sentences[0] in recs[0].question


def test_a_renamed_column_is_a_data_error(tmp_path, monkeypatch):
    real = D._training_fixture
    def renamed(problems):
        sft, grpo = real(problems)
        return sft, [dict(prompt=r['prompt'], question=r['question'], answer=r['solution']) for r in grpo]   # `solution` renamed
    monkeypatch.setattr(D, '_training_fixture', renamed)
    hub = D.write_hub_fixture(tmp_path / 'hub')
    with pytest.raises(DataError, match="no column.*solution"): load_training('grpo', cfg=load_profile('paper', hub_dir=str(hub)))


def test_hub_source_allows_no_fallback_and_auto_does(tmp_path, caplog):
    row = _local_build(tmp_path)
    strict = load_profile('paper', offline=True, data_dir=str(tmp_path), generated_dir=str(tmp_path))
    with pytest.raises(HubUnavailable, match='no fallback'): load_distractmath('mgsm', cfg=strict)
    with pytest.raises(HubUnavailable, match='no fallback'): load_training('sft', cfg=strict)
    with pytest.raises(HubUnavailable): D.prepare_splits(strict.replace(results_dir=str(tmp_path / 'r')), ['mgsm_bn_distract'])
    loose = strict.replace(data_source='auto')
    with caplog.at_level(logging.WARNING, logger='dagger.data'):
        recs = load_distractmath('mgsm', cfg=loose)
    assert recs[0].origin.startswith('local:') and recs[0].original_question == row['original_question']
    assert any('falling back' in r.message for r in caplog.records)


def test_distract_records_know_their_original_without_gold():
    "Loaded without gold graphs (as the overlap check loads them), +D records still name their original, so MSVAMP's training half stays out."
    from dagger.data import load_split, evaluable, msvamp_half
    from dagger.config import load_profile
    cfg = load_profile('cpu')
    for gold in (False, True):
        recs = load_split('msvamp_bn_distract', cfg=cfg, gold=gold)
        assert all(r.meta.get('original_id', '').startswith('msvamp_bn-') for r in recs)
        kept = evaluable(recs, cfg)
        assert 0 < len(kept) < len(recs) and {msvamp_half(r) for r in kept} == {'heldout'}
