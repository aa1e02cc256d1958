"Teacher verification, the training-set shapes, the overlap check and the stage's files (dagger.teacher; no model)."
import json
import pytest

from dagger import data as D
from dagger import graph as G
from dagger import teacher as T
from dagger.config import ConfigError, Profile, TeacherSettings, load_profile
from dagger.files import read_jsonl
from dagger.data import Problem, load_split
from dagger.prompts import dagger_prompt, pen_graph
from dagger.llm import Backend, Completion

PEN = G.format_graph(pen_graph('en'))
PEN_ANSWER = 122195 * 45.6


def test_verify_statuses():
    v = T.verify_output(PEN, PEN_ANSWER)
    assert (v.status, v.n_nodes, v.n_ops, v.error) == ('kept', 7, 1, None)
    assert G.reward(v.text, PEN_ANSWER) == 2.0 and G.parse(v.text, strict=True).to_obj() == G.from_obj(pen_graph('en')).to_obj()
    w = T.verify_output(PEN, 7)
    assert (w.status, w.error) == ('wrong', 'wrong_answer') and w.value == pytest.approx(PEN_ANSWER) and w.text is None
    assert T.verify_output('no graph at all', 5).status == 'unparseable'
    two = '```json\n{"nodes": [{"id": "a", "op": "const", "val": 5}, {"id": "final_result", "op": "identity", "args": ["a"]}]}\n```'
    assert (T.verify_output(two, 5).status, T.verify_output(two, 5).error) == ('unparseable', 'fewer_than_3_nodes')
    broken = PEN.replace('"args": ["n1", "n5"]', '"args": ["n1", "zz"]')
    assert (T.verify_output(broken, PEN_ANSWER).status, T.verify_output(broken, PEN_ANSWER).error) == ('failed_execution', 'missing_node')
    div0 = PEN.replace('"val": 45.6', '"val": 0').replace('"op": "mul"', '"op": "div"')
    assert T.verify_output(div0, PEN_ANSWER).error == 'division_by_zero'
    assert (T.verify_output('', 5).status, T.verify_output(None, 5, 'Timeout').error) == ('no_output', 'Timeout')


def test_kept_text_is_canonical_after_repairs():
    messy = PEN.replace('false', 'False').replace(']}\n```', '],}\n```')
    v = T.verify_output(messy, PEN_ANSWER)
    assert v.status == 'kept' and v.repairs and v.text == T.verify_output(PEN, PEN_ANSWER).text


def test_distill_counts_and_examples():
    probs = [Problem(f'p{i}', f'q{i}', PEN_ANSWER, 'en', 'demo', 'demo') for i in range(5)]
    outs = [(PEN, None), (PEN, None), ('nothing', None), ('', 'APIError'), (PEN.replace('"n5"]', '"n9"]'), None)]
    rows, rep = T.distill(probs, outs, k=1)
    assert rep['counts'] == dict(kept=2, wrong=0, unparseable=1, failed_execution=1, no_output=1)
    assert rep['total'] == 5 and rep['kept_rate'] == 0.4
    assert [e['id'] for e in rep['examples']['kept']] == ['p0'] and rep['examples']['no_output'][0]['error'] == 'APIError'
    with pytest.raises(ValueError):
        T.distill(probs, outs[:2])


def test_gold_teacher_on_real_problems():
    ps = load_split('msvamp_en', n=8, seed=3)
    rows, rep = T.distill(ps, T.gold_teacher(ps))
    assert rep['counts']['kept'] == sum(p.gold_graph is not None for p in ps) > 0
    missing = Problem('x', 'q', 1.0, 'en', 'demo', 'demo', meta={'gold_failure': 'no_annotations'})
    assert T.gold_teacher([missing]) == [('', 'no_gold_graph:no_annotations')]


class Fixed(Backend):
    "A backend whose completions are given texts (None = a failed request)."
    kind = 'fixed'
    def __init__(self, texts):
        super().__init__('fixed'); self.texts, self.seen = texts, []
    def _run(self, jobs, sampling):
        for j in jobs:
            self.seen.append((j.messages, sampling.max_new_tokens)); t = self.texts[j.index]
            yield j, Completion('', 0, 'error', error='APIConnectionError') if t is None else Completion(t, 9, 'stop')


def test_model_teacher_uses_the_evaluation_prompt():
    probs = [Problem('a', 'Mina has 3 pens.', 3.0, 'bn', 'demo', 'demo'), Problem('b', 'Two?', 2.0, 'en', 'demo', 'demo')]
    be = Fixed([PEN, None])
    outs = T.model_teacher(probs, be, progress=False)
    assert outs == [(PEN, None), ('', 'APIConnectionError')]
    assert [m for m, _ in be.seen] == [dagger_prompt('Mina has 3 pens.', 'bn'), dagger_prompt('Two?', 'en')]
    assert {n for _, n in be.seen} == {2048}


def test_published_rows_supply_their_graph():
    p = Problem('h', 'q', PEN_ANSWER, 'bn', 'dagger-sft', 'dagger_sft_train',
                meta={'hub_row': {'messages': [{'role': 'user', 'content': 'q'}, {'role': 'assistant', 'content': PEN}]}})
    assert T.hub_graph_text(p) == PEN
    assert T.hub_graph_text(Problem('h2', 'q', 1.0, 'bn', 's', 's', meta={'hub_row': {'question': 'q'}})) is None
    cfg = load_profile('cpu', teacher__backend='openai', teacher__model='none')
    assert T.teacher_outputs(cfg, [p], backend=Fixed(['unused'])) == [(PEN, None)]


def test_the_report_says_what_was_published_and_what_was_requested(tmp_path):
    cfg = load_profile('cpu', teacher__backend='openai', teacher__model='none', teacher__n_sft=3, teacher__n_val=1, teacher__n_grpo=1,
                       teacher__msvamp_split='')
    be = Fixed([PEN] * 4)
    rep = T.run_teacher(cfg, backend=be, out=tmp_path/'req', progress=False)   # GSM8K questions carry converted gold graphs: still asked
    assert len(be.seen) == 4 and rep['origins'] == {'requested': dict(outputs=4, kept=0)}
    hub = D.write_hub_fixture(tmp_path/'hub')
    pub = load_profile('paper', hub_dir=str(hub), teacher__n_sft=3, teacher__n_val=1, teacher__n_grpo=1, data_dir='data')
    rep = T.run_teacher(pub.replace(teacher__backend='openai'), backend=Fixed([]), out=tmp_path/'pub', progress=False)
    assert rep['origins'] == {'published': dict(outputs=4, kept=4)}


def test_rows_have_trl_shapes():
    p = Problem('a', 'Mina has 122195 pens.', PEN_ANSWER, 'en', 'demo', 'demo')
    v = T.verify_output(PEN, p.answer)
    r, g = T.sft_row(p, v.text, v), T.grpo_row(p)
    assert r['prompt'] == dagger_prompt(p.question, 'en') and r['completion'] == [dict(role='assistant', content=v.text)]
    assert [m['role'] for m in T.messages(r)] == ['user', 'assistant'] and r['n_ops'] == 1
    assert g['prompt'] == r['prompt'] and g['solution'] == PEN_ANSWER and 'completion' not in g
    json.dumps(r); json.dumps(g)


def test_norm_question():
    assert T.norm_question('Janet’s  ducks lay ১৬ eggs!') == T.norm_question("JANET’S ducks lay 16 eggs")
    assert T.norm_question('মিনার কাছে ১২টি কলম।') == T.norm_question('মিনার কাছে 12টি কলম')   # vowel signs survive
    assert T.norm_question('a 12 b') != T.norm_question('a 13 b')


@pytest.fixture(scope='module')
def index():
    return T.eval_index()


def test_overlap_check_catches_disguised_eval_questions(index):
    idx, skipped = index
    assert len(idx) > 2000
    first = load_split('gsm8k_test', gold=False)[0]
    bn = load_split('mgsm_bn', n=1, seed=1, gold=False)[0]
    sv = load_split('msvamp_bn', n=1, seed=2, gold=False)[0]
    for leak in [first.question.upper(), bn.question.replace('১', '1'), sv.meta['query_en'] + ' ']:
        with pytest.raises(T.OverlapError):
            T.check_overlap(dict(sft_train=[dict(id='x', question=leak)]), idx)
    ok = load_split('gsm8k_train', n=5, seed=0, gold=False)
    assert T.check_overlap(dict(s=[dict(id=p.id, question=p.question) for p in ok]), idx) == dict(s=dict(rows=5, overlap=0))


def test_run_teacher_writes_sets_and_refuses_overlap(tmp_path, monkeypatch):
    cfg = load_profile('cpu', teacher__n_sft=12, teacher__n_val=4, teacher__n_grpo=6, teacher__msvamp_split='')
    rep = T.run_teacher(cfg, out=tmp_path/'ok', progress=False)
    sets = {n: read_jsonl(tmp_path/'ok'/f'{n}.jsonl') for n in ('sft_train', 'sft_val', 'grpo_train')}
    assert {k: len(v) for k, v in sets.items()} == rep['sizes'] == dict(sft_train=12, sft_val=4, grpo_train=6)
    assert rep['counts']['kept'] == 16 and json.loads((tmp_path/'ok'/'report.json').read_text())['run_info']['profile']['name'] == 'cpu'
    ids = {k: {r['id'] for r in v} for k, v in sets.items()}
    assert not (ids['sft_train'] & ids['sft_val']) and not (ids['grpo_train'] & (ids['sft_train'] | ids['sft_val']))
    assert all(G.reward(r['completion'], r['answer']) == 2.0 for r in sets['sft_train'])
    leaked = T.norm_question(sets['sft_val'][0]['question'])
    monkeypatch.setattr(T, 'eval_index', lambda cfg: ({leaked: 'mgsm_bn:fake'}, {}))
    with pytest.raises(T.OverlapError, match='sft_val: 1'):
        T.run_teacher(cfg, out=tmp_path/'leak', progress=False)
    assert not (tmp_path/'leak').exists()


def test_msvamp_training_half_is_never_evaluated(tmp_path):
    cfg = load_profile('cpu', teacher__n_sft=6, teacher__n_val=2, teacher__n_grpo=2, msvamp_holdout=True,
                       teacher__msvamp_split='msvamp_en', teacher__n_msvamp=10)
    rep = T.run_teacher(cfg, out=tmp_path, progress=False)
    rows = read_jsonl(tmp_path/'sft_train.jsonl')
    ms = [r for r in rows if r['source'] == 'msvamp']
    assert rep['sizes']['sft_train'] == 16 and len(ms) == 10 and rep['overlap']['sft_train'] == dict(rows=16, overlap=0)
    assert all(int(r['id'].rsplit('-', 1)[1]) % 2 == 1 for r in ms)
    assert all(G.parse(r['completion'][0]['content']).to_obj()['nodes'][-1]['label'] == 'final answer' for r in rows)
    index, _ = T.eval_index(cfg)                     # the held-out half, in every language, is still caught
    held = [p for p in load_split('msvamp_bn', gold=False) if int(p.id.rsplit('-', 1)[1]) % 2 == 0][:5]
    with pytest.raises(T.OverlapError, match='msvamp'):
        T.check_overlap(dict(sft_train=[dict(id=p.id, question=p.meta['query_en']) for p in held]), index)
    with pytest.raises(ConfigError, match='msvamp_holdout'):                       # refused when the profile loads
        load_profile('cpu', msvamp_holdout=False, teacher__msvamp_split='msvamp_en')
    unchecked = Profile(name='cpu', msvamp_holdout=False, teacher=TeacherSettings(msvamp_split='msvamp_en'))
    with pytest.raises(T.OverlapError, match='msvamp_holdout'):                    # and by the stage itself
        T.run_teacher(unchecked, out=tmp_path/'no', progress=False)
    assert not (tmp_path/'no').exists()
