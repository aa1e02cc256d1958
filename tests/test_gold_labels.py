"""Gold graphs in the paper's form (issue 48): every constant's label is a piece of its own problem's text, and
training and held-out MSVAMP problems are split by problem across languages."""
import re
from pathlib import Path

import pytest

from dagger import data as D
from dagger.config import load_profile, profile_names
from dagger.gold import LABEL_WORDS, label_text
from dagger.teacher import norm_question, training_problems

ROOT = Path(__file__).resolve().parents[1]
CPU = load_profile('cpu')
BUILT = [s for s in D.DISTRACT_SPLITS + D.DOSE_SPLITS
         if (ROOT/'generated'/'distractmath'/(f"dose_{s[:-5]}.jsonl" if s.endswith('_dose') else f"{s[:-9]}.jsonl")).exists()]


def _label_faults(p) -> list[str]:
    "What is wrong with the labels, ids and values of `p`'s gold graph in the paper's form (empty when nothing is)."
    words, text, out = LABEL_WORDS[p.lang], label_text(p.question), []
    for n in p.gold_graph['nodes']:
        if not re.fullmatch(r'[a-z][a-z0-9_]*', n['id']): out.append(f"id {n['id']!r} is not a short ASCII name")
        if n['op'] == 'const':
            if not n.get('label') or label_text(n['label']) not in text: out.append(f"{n['id']}: {n.get('label')!r} not in the problem")
            if isinstance(n['val'], float) and n['val'].is_integer(): out.append(f"{n['id']}: whole number written {n['val']!r}")
        elif n['id'] == 'final_result':
            if n['label'] != words['final']: out.append(f"final_result labelled {n['label']!r}")
        elif n['label'] != words[n['op']]: out.append(f"{n['id']}: {n['op']} labelled {n['label']!r}")
    return out


@pytest.mark.parametrize('name', D.BASE_SPLITS + tuple(BUILT))
def test_every_constant_label_is_in_its_own_problem(name):
    "For every gold graph of the split, each constant's label is a substring of its own problem's text (whitespace collapsed)."
    recs = [p for p in D.load_split(name, cfg=CPU) if p.gold_graph]
    assert recs, f'{name}: no gold graphs'
    faults = {p.id: f for p in recs if (f := _label_faults(p))}
    assert not faults, f'{name}: {len(faults)} graphs, e.g. {list(faults.items())[:3]}'


def test_spans_keeps_the_old_graphs():
    "sft.gold_format = spans gives the graphs as they were: English spans, ids n0/op1, whole numbers as floats."
    spans = load_profile('cpu').replace(sft__gold_format='spans')
    g = D.load_split('msvamp_bn', cfg=spans)[10].gold_graph
    assert [n['id'] for n in g['nodes']] == ['n0', 'n1', 'n2', 'op1', 'final_result']
    assert g['nodes'][0]['val'] == 9.0 and g['nodes'][0]['label'] == '9 kids on monday'
    new = D.load_split('msvamp_bn', cfg=CPU)[10].gold_graph
    assert [(n['op'], n.get('val'), n.get('args') and len(n['args'])) for n in new['nodes']] == \
           [(n['op'], n.get('val'), n.get('args') and len(n['args'])) for n in g['nodes']]


# ---------- training and held-out: split by problem, across languages ----------

def test_msvamp_rows_are_the_same_problem_in_every_language():
    "Row i of each MSVAMP file translates the same English question, so the half a row falls in is its problem's half."
    en = D.load_split('msvamp_en', gold=False)
    for lang in D.MSVAMP_FILES:
        recs = D.load_split(f'msvamp_{lang}', gold=False)
        assert len(recs) == len(en)
        assert all(norm_question(p.meta['query_en']) == norm_question(e.question) for p, e in zip(recs, en)), lang


def _heldout_index() -> dict:
    "{normalised text: 'msvamp_<lang>-NNNN'} over every language's version (and English query) of each held-out problem."
    index = {}
    for lang in D.MSVAMP_FILES:
        for p in D.load_split(f'msvamp_{lang}', gold=False):
            if D.msvamp_half(p) == 'heldout':
                for t in (p.question, p.meta['query_en']): index[norm_question(t)] = p.id
    return index


def _checkable_profiles() -> list:
    out = []
    for name in profile_names():
        cfg = load_profile(name)
        if cfg.data_source == 'local' and cfg.msvamp_holdout: out.append(name)
    return out


@pytest.mark.parametrize('name', _checkable_profiles())
def test_no_language_of_a_heldout_problem_is_trained_on(name):
    ("No training set a profile builds (SFT train and validation, GRPO) holds any language's version of a held-out "
     "MSVAMP problem, by problem number or by text, in either gold-graph form; the profile evaluates only held-out ones.")
    index = _heldout_index()
    for form in ('paper', 'spans'):
        cfg = load_profile(name).replace(sft__gold_format=form)
        sets = training_problems(cfg)
        assert sum(map(len, sets.values())) > 0
        for set_name, probs in sets.items():
            numbers = [D.msvamp_number(p) for p in probs if D.msvamp_number(p) is not None]
            assert all(i % 2 == 1 for i in numbers), f'{name}/{set_name}: held-out MSVAMP numbers {[i for i in numbers if i % 2 == 0][:5]}'
            leaked = [(p.id, index[norm_question(t)]) for p in probs for t in (p.question, p.meta.get('query_en'))
                      if t and norm_question(t) in index]
            assert not leaked, f'{name}/{set_name}: {leaked[:5]}'
    for split in cfg.eval.splits:
        try: recs = D.evaluable(D.load_split(split, cfg=cfg, gold=False), cfg)
        except D.DistractMathNotBuilt: continue
        assert all(D.msvamp_half(p) in (None, 'heldout') for p in recs), split


def test_the_study_trains_on_the_training_half():
    "cpu-study's SFT set does draw on MSVAMP's training half, so the test above checks a real overlap risk."
    sets = training_problems(load_profile('cpu-study'))
    assert sum(D.msvamp_half(p) == 'train' for p in sets['sft_train']) >= 100


def test_grpo_problems_are_not_trained_on_in_any_language_and_written_ones_copy_none():
    ("cpu-study's SFT set holds the other languages' versions of its Bangla MSVAMP draw only: no language's version of a "
     "GRPO problem is trained on; written problems, when drawn, copy no held-out question.")
    sets = training_problems(load_profile('cpu-study', teacher__n_written=200))
    sft = {D.msvamp_number(p) for p in sets['sft_train'] if D.msvamp_number(p) is not None}
    grpo = {D.msvamp_number(p) for p in sets['grpo_train']}
    assert grpo and not sft & grpo
    assert {p.split for p in sets['sft_train']} >= {'msvamp_bn', 'msvamp_en', 'msvamp_es', 'msvamp_th', 'written_bn'}
    index = _heldout_index()
    assert not [p.id for p in sets['sft_train'] if p.split == 'written_bn' and norm_question(p.question) in index]


def test_written_grpo_prompts_are_not_sft_problems_and_copy_no_heldout_one():
    "cpu-study's GRPO prompts hold written problems (teacher.grpo_written), none drawn for SFT or copying a held-out one."
    cfg = load_profile('cpu-study')
    sets = training_problems(cfg)
    written = [p for p in sets['grpo_train'] if p.split == 'written_bn']
    assert len(written) == cfg.teacher.grpo_written > 0
    sft = {p.id for p in sets['sft_train']} | {norm_question(p.question) for p in sets['sft_train']}
    assert not [p.id for p in written if p.id in sft or norm_question(p.question) in sft]
    index = _heldout_index()
    assert not [p.id for p in written if norm_question(p.question) in index]


def test_training_targets_in_the_paper_form_and_label_first(tmp_path):
    "The teacher stage writes the paper's graphs as SFT targets; sft.label_first puts each label before its value."
    from dagger import graph as G, teacher as T
    from dagger.files import read_jsonl
    from dagger.prompts import student_prompt
    cfg = load_profile('cpu', teacher__n_sft=2, teacher__n_val=1, teacher__n_grpo=1, msvamp_holdout=True,
                       teacher__msvamp_split='msvamp_bn', teacher__n_msvamp=4, sft__label_first=True)
    T.run_teacher(cfg, out=tmp_path, progress=False)
    rows = read_jsonl(tmp_path/'sft_train.jsonl')
    bn = [r for r in rows if r['lang'] == 'bn']
    assert len(bn) == 4 and all(T.writes_label_first(r['completion'][0]['content']) for r in rows)
    assert all(G.reward(r['completion'], r['answer']) == 2.0 for r in rows)
    assert all(G.parse(r['completion'][0]['content']).to_obj()['nodes'][-1]['label'] == 'চূড়ান্ত উত্তর' for r in bn)
    bare = T.without_annotations(bn[0], student_prompt(shots=0, annotations=False))
    assert T.writes_label_first(bare['completion'][0]['content']) and 'distractor' not in bare['completion'][0]['content']


@pytest.mark.parametrize('name', ['msvamp_en', 'msvamp_es', 'mgsm_en', 'gsm8k_test'])
def test_labels_rarely_start_or_end_on_a_word_that_names_nothing(name):
    "English and Spanish labels are trimmed of edge words (an, of, for, y, que); only labels kept apart keep them (was 35-38%)."
    from dagger.gold import _EDGE
    ps = [p for p in D.load_split(name, cfg=CPU) if p.gold_graph]
    labels = [n['label'] for p in ps for n in p.gold_graph['nodes'] if n['op'] == 'const']
    edge = _EDGE[ps[0].lang]
    bad = [l for l in labels if l.split() and {l.split()[0].lower(), l.split()[-1].lower()} & edge]
    assert len(bad) < 0.1 * len(labels), (len(bad), len(labels), bad[:10])


def test_a_value_stated_twice_and_used_twice_is_two_constants():
    "MGSM-bn #3 (3 sprints, 3 times a week, 60 metres): two constants of 3, each labelled where the problem states it, ids not crossed."
    p = next(p for p in D.load_split('mgsm_bn', cfg=CPU) if p.id == 'mgsm_bn-003')
    threes = [n for n in p.gold_graph['nodes'] if n['op'] == 'const' and n['val'] == 3]
    assert len(threes) == 2 and threes[0]['label'] != threes[1]['label'], threes
    by_id = {t['id']: t['label'] for t in threes}     # Bangla states "3 বার 3টি স্প্রিন্টে", English "3 sprints 3 times"
    assert by_id['times_week'] == 'সপ্তাহে 3 বার' and 'স্প্রিন্ট' in next(l for i, l in by_id.items() if i != 'times_week')
    product = next(n for n in p.gold_graph['nodes'] if n['op'] == 'mul' and {a for a in n['args']} == {t['id'] for t in threes})
    assert product['args'][0] != product['args'][1]


def test_an_id_names_its_own_quantity_not_the_next_clauses():
    "MSVAMP #42 (Allan brought 6 balloons and Jake brought 3): Allan's 6 is `balloons`, never `balloons_jake`."
    p = next(p for p in D.load_split('msvamp_bn', cfg=CPU) if p.id == 'msvamp_bn-0042')
    six = next(n for n in p.gold_graph['nodes'] if n['op'] == 'const' and n['val'] == 6)
    assert six['id'] == 'balloons', six
    ids = [n['id'] for p in D.load_split('msvamp_en', cfg=CPU) if p.gold_graph for n in p.gold_graph['nodes']]
    assert not [i for i in ids if re.search(r'_(?:jake|while)(?:_|$)', i)], 'ids that run into the next clause'


def test_a_number_followed_by_another_counts_what_that_one_names():
    "MSVAMP #456 (356টি 10 কার্ড, 356 cards of the 10 series) and MGSM-bn #154 (দুটি 2-ঘণ্টার ক্লাস, two 2-hour classes)."
    labels = lambda pid, split: {n['val']: n['label'] for p in D.load_split(split, cfg=CPU) if p.id == pid
                                 for n in p.gold_graph['nodes'] if n['op'] == 'const'}
    cards = labels('msvamp_bn-0456', 'msvamp_bn')
    assert (cards[356], cards[149]) == ('356টি 10 কার্ড', '149টি 10 কার্ড'), cards
    classes = [n['label'] for p in D.load_split('mgsm_bn', cfg=CPU) if p.id == 'mgsm_bn-154'
               for n in p.gold_graph['nodes'] if n['op'] == 'const']
    assert classes[:4] == ['তিনটি 1-ঘণ্টার', '1-ঘণ্টার', 'দুটি 2-ঘণ্টার', '2-ঘণ্টার'], classes
