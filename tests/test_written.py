"Tests for dagger.written: the frames, the committed written problems, their gold graphs, their distance from the evaluation splits."
import json, random

import pytest

from dagger import graph as G
from dagger import written as W
from dagger.config import read_jsonl
from dagger.gold import label_text, LABEL_WORDS
from dagger.lexicon import templates
from dagger.numbers import to_bangla_digits
from dagger.teacher import norm_question


@pytest.fixture(scope='module')
def ws():
    return W.load_written()


def test_rebuild_is_byte_identical():
    path = W.written_path()
    rebuilt = ''.join(json.dumps(p.to_dict(), ensure_ascii=False) + '\n' for p in W.make_problems(W.N_WRITTEN, W.SEED))
    assert rebuilt.encode('utf-8') == path.read_bytes()


def test_every_graph_executes_to_the_answer(ws):
    assert len(ws) == W.N_WRITTEN
    for p in ws:
        g = G.parse(W.written_graph(p), strict=True)
        assert G.is_correct(G.execute(g), p.answer), p.id
        assert p.answer >= 0 and p.answer == int(p.answer), p.id
        assert G.parse(W.written_graph(p, label_first=True), strict=True).to_obj() == g.to_obj()


def test_graphs_are_in_the_paper_form(ws):
    ops = {v for k, v in LABEL_WORDS['bn'].items() if k != 'final'}
    for p in ws:
        nodes = p.gold_graph['nodes']
        assert nodes[-1] == dict(id='final_result', op='identity', args=nodes[-1]['args'], distractor=False, label='চূড়ান্ত উত্তর')
        for n in nodes[:-1]:
            if n['op'] == 'const':
                assert list(n) == ['id', 'op', 'val', 'distractor', 'label'] and isinstance(n['val'], int)
            else:
                assert list(n) == ['id', 'op', 'args', 'distractor', 'label'] and n['label'] in ops
        assert len({n['id'] for n in nodes}) == len(nodes)


def test_constant_labels_are_the_problems_words(ws):
    for p in ws:
        q = label_text(p.question)
        for n in p.gold_graph['nodes']:
            if n['op'] == 'const':
                assert n['label'] in q, (p.id, n['label'])
                assert to_bangla_digits(str(n['val'])) in n['label'] or 'দ্বিগুণ' in n['label'], (p.id, n['label'])


def test_distractors_are_flagged_and_unused(ws):
    for p in ws:
        nodes = p.gold_graph['nodes']
        used = {a for n in nodes for a in n.get('args', [])}
        flagged = [n for n in nodes if n['distractor']]
        assert sorted(n['val'] for n in flagged) == sorted(p.meta['distractor_values']), p.id
        assert not any(n['id'] in used for n in flagged), p.id
        assert len(p.added_sentences) == len(p.meta['distractor_frames'])
        assert all(s in p.question and not s.endswith('?') for s in p.added_sentences)
        assert p.meta['steps'] == len(p.meta['ops']) == sum(n['op'] in W.OPS for n in nodes)


def test_counts(ws):
    s = W.summary(ws)
    assert 0.3 <= s['distractor_share'] <= 0.4
    assert set(s['ops']) == set(W.OPS) and set(s['steps']) == {1, 2}
    assert set(s['frames']) == {f.id for f in W.frames('problem')}
    assert set(s['distractor_frames']) == {f.id for f in W.frames('distractor')}


def test_frames_are_not_the_evaluation_templates():
    bn = [t for t in templates() if t.lang == 'bn']
    mine = {W.bare(s) for f in W.frames() for s in f.text.split('|')}
    assert not mine & {W.bare(t.text) for t in bn}
    assert not {f.text for f in W.frames()} & {t.text for t in bn}
    top = W.template_similarity()[0]
    print('closest template:', top)
    assert top[0] < W.NEAR


def test_near_copy_of_a_template_would_be_caught():
    t = next(t for t in templates() if t.id == 'RED-bn-01')
    assert W.bare(t.text.replace('{count}', '{n}').replace('{name_gen}', '{name2_gen}')) == W.bare(t.text)


def test_distractor_sentences_are_not_in_the_plus_d_files(ws):
    plusd = W.plusd_sentences()
    assert len(plusd) > 100
    mine = {norm_question(s) for p in ws for s in p.added_sentences}
    assert mine and not mine & plusd


def test_no_written_problem_copies_an_evaluation_problem(ws):
    ov = W.eval_overlap(ws)
    print('overlap with the evaluation splits:', ov)
    assert ov['eval_questions'] > 1500 and ov['exact'] == 0 and ov['max_overlap'] < W.MAX_OVERLAP


def test_overlap_would_catch_a_copy(ws):
    from dagger.data import load_split
    q = load_split('msvamp_bn', gold=False)[0]
    ov = W.eval_overlap([q])
    assert ov['exact'] == 1 and ov['max_overlap'] == 1.0


def test_review_sample_is_seeded_by_the_file(ws):
    sample = read_jsonl(W.written_path().parent/'review'/'sample_bn.jsonl')
    pick = sorted(random.Random(W.review_seed()).sample(range(len(ws)), 60))
    assert [r['id'] for r in sample] == [ws[i].id for i in pick]
    for r in sample:
        assert r['question'] == ' '.join(s['text'] for s in r['sentences']) and r['gloss']
        assert sum(s['distractor'] for s in r['sentences']) == len(r['distractor_frames'])


def test_errors_name_the_file_and_field(tmp_path):
    row = dict(id='X', kind='problem', classes='food', needs='', topic='count', values='a=count@nowhere', make='',
               graph='add(a,a)', ids='a=x', text='{a}', gloss='{a}')
    with pytest.raises(W.WrittenError, match='written_frames.tsv:9: values'):
        W._frame(row, 'written_frames.tsv:9')
    with pytest.raises(W.WrittenError, match='graph'):
        W._frame(row | dict(values='a=count@item', graph='add(a,b)'), 'f:1')
    with pytest.raises(W.WrittenError, match='no written problems'):
        W.load_written(tmp_path/'none.jsonl')
    (tmp_path/'bad.jsonl').write_text('{"id": "x", "question": "q"}\n', encoding='utf-8')
    with pytest.raises(W.WrittenError, match='bad.jsonl:1'):
        W.load_written(tmp_path/'bad.jsonl')
