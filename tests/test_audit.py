"""The benchmark audit (dagger.audit): the known broken problems are flagged and a sound one is not, the committed
flags file and data card are what `python -m dagger.audit` writes, clean loading drops exactly the flagged problems,
and the clean-subset accuracy is computed right on hand-made records and on the CPU study's committed records."""
import subprocess, sys

import pandas as pd
import pytest

from dagger import audit as A
from dagger.config import load_profile, project_root
from dagger.data import DataRowError, benchmark_flags, distract_path, load_split
from dagger.metrics import clean_accuracy, mark_clean, summarize
from dagger.stats import wilson
from dagger.tables import CLEAN, clean_table, load_runs, our_tidy

AUDIT = project_root()/'data'/'audit'


@pytest.fixture(scope='module')
def flags():
    return benchmark_flags()


def test_the_known_broken_problems_are_flagged(flags):
    for i in ('msvamp_bn-0131', 'msvamp_bn-0247'):                 # the question asks for a stated quantity
        assert 'question_mismatch' in flags[i], (i, flags.get(i))
        assert 'question_mismatch' in flags[i.replace('_bn', '_en')]
    assert 'truncated' in flags['msvamp_bn-0011']                  # '…বুধবারের সঙ্গে তুলনা', no verb, no '?'
    assert 'truncated' in flags['msvamp_bn-0365']                  # ভেসে repeated to the length limit
    assert 'numbers_differ' in flags['msvamp_bn-0365']


def test_a_sound_problem_is_not_flagged(flags):
    for i in ('msvamp_bn-0000', 'msvamp_en-0000', 'mgsm_bn-000', 'mgsm_en-000',
              'msvamp_bn-0089', 'msvamp_bn-0409'):                 # these two end with '।' but ask: not cut off
        assert i not in flags, (i, flags[i])


def test_the_detectors_on_tiny_inputs():
    assert A.truncation('মিনার ৫টি কলম আছে। তার কতটি কলম আছে?') is None
    assert A.truncation('ভেসে ভেসে ভেসে ভেসে ভে') == 'repeated_word'
    assert A.truncation('তিনি মোট কত টাকা আয় করেছে শ') == 'unfinished_question'
    assert A.number_diff('জ্যাকি একাদশ আপেল রাখে।', 'jackie has 10 apples .') == ([10.0], [])
    assert A.number_diff('দেবি তিনশত একটি বোতল কিনেছিলেন।', 'debby bought 301 bottles .') == ([], [])
    text = 'a book has 2 chapters across 23 pages . the first chapter is 10 pages long . how many pages are in the first chapter ?'
    assert A.expected(text)[0] == 10.0
    assert A.expected('julia played with 5 kids on monday . how many kids did she play with in all ?') is None


def test_the_committed_files_are_what_the_command_writes(tmp_path):
    r = subprocess.run([sys.executable, '-m', 'dagger.audit', '--out', str(tmp_path)], cwd=project_root(),
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    for name in ('flags.csv', 'README.md'):
        assert (tmp_path/name).read_bytes() == (AUDIT/name).read_bytes(), f'data/audit/{name}: run python -m dagger.audit'


def test_the_data_card_counts_the_flags_file(flags):
    card = (AUDIT/'README.md').read_text(encoding='utf-8')
    bn = {i for i in flags if i.startswith('msvamp_bn-')}
    assert f'| msvamp_bn | 1000 | ' in card and f'| {len(bn)} | {1000 - len(bn)} |' in card


def test_a_malformed_flags_row_names_file_and_line(tmp_path):
    (tmp_path/'audit').mkdir()
    (tmp_path/'audit'/'flags.csv').write_text('id,split,row,flag,detail\nmsvamp_bn-0001,msvamp_bn,1,truncated,x\n'
                                              'msvamp_bn-0002,msvamp_bn\n', encoding='utf-8')
    with pytest.raises(DataRowError, match=r'flags\.csv, line 3'):
        benchmark_flags(load_profile('cpu', data_dir=str(tmp_path)))


@pytest.mark.parametrize('split', A.AUDIT_SPLITS)
def test_clean_loading_drops_exactly_the_flagged_problems(split, flags):
    every = {p.id for p in load_split(split, gold=False)}
    clean = {p.id for p in load_split(split, gold=False, clean=True)}
    assert clean == every - set(flags)
    assert len(load_split(split, n=50, seed=1, gold=False, clean=True)) == min(50, len(clean))


def test_clean_distractmath_drops_the_records_of_flagged_originals(flags):
    cfg = load_profile('cpu')
    if not distract_path('msvamp', 'bn', cfg).exists(): pytest.skip('no local msvamp_bn DistractMath split')
    every = load_split('msvamp_bn_distract', gold=False, cfg=cfg, source='local')
    clean = load_split('msvamp_bn_distract', gold=False, cfg=cfg, source='local', clean=True)
    assert {p.id for p in clean} == {p.id for p in every if p.meta.get('original_id') not in flags}
    assert len(clean) < len(every)


def test_the_clean_columns_on_hand_made_records():
    rows = [('msvamp_bn-0131', None, True), ('msvamp_bn-0000', None, True), ('msvamp_bn-0002', None, False),
            ('msvamp_bn_distract-0001', 'msvamp_bn-0131', False), ('msvamp_bn_distract-0002', 'msvamp_bn-0000', True)]
    recs = pd.DataFrame([dict(id=i, original_id=o, correct=c, tokens=10, calls=1, method='cot', model='m', distractor_values=None, flagged=None,
                              split='msvamp_bn_distract' if o else 'msvamp_bn') for i, o, c in rows])
    marked = mark_clean(recs, {'msvamp_bn-0131': ('question_mismatch',)})
    assert marked['clean'].tolist() == [False, True, True, False, True]
    s = summarize(marked).set_index('split')
    assert s.loc['msvamp_bn', ['n', 'n_clean']].tolist() == [3, 2]
    assert s.loc['msvamp_bn', 'accuracy'] == pytest.approx(200 / 3) and s.loc['msvamp_bn', 'acc_clean'] == 50.0
    assert s.loc['msvamp_bn', 'clean_lo'] == pytest.approx(100 * wilson(1, 2)[0])
    assert s.loc['msvamp_bn_distract', ['n_clean', 'acc_clean']].tolist() == [1, 100.0]
    assert clean_accuracy(recs) == {}                                # unmarked records: no clean columns


def test_the_study_records_give_a_clean_table(flags):
    "The CPU study's committed records, read with the flags: a clean column beside every cell's accuracy."
    study = load_profile('cpu-study')
    recs, files = load_runs(study, verbose=False, committed=True)
    assert files and 'clean' in recs
    t = clean_table(our_tidy(recs[recs['lang'] == 'bn']))
    assert set(CLEAN) <= set(t.columns) and (t['n_clean'] <= t['n']).all()
    by = t.groupby('split')['n_clean'].agg(['min', 'max'])
    assert by.loc['mgsm_bn', 'min'] == 250                           # MGSM-bn: nothing flagged
    ms = recs[recs['split'] == 'msvamp_bn'].drop_duplicates('id')
    assert by.loc['msvamp_bn', 'max'] == (~ms['id'].isin(flags)).sum() < 250
