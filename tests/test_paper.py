"The paper's reported numbers (data/paper/): schema, Table 2 recomputed within rounding, typos caught, plausible ranges."
import shutil

import pandas as pd
import pytest

from dagger.data import PAPER_SPLIT_SIZES
from dagger.paper import (KNOWN_DISCREPANCIES, PAPER_N, REQUIRED, TABLES, PaperDataError,
                          check_table2, derive_table2, feasible_counts, load_table, paper_dir, table2_wide)

SPLITS = set(PAPER_SPLIT_SIZES)


@pytest.fixture(scope='module')
def t2():
    return load_table('table2')


@pytest.fixture(scope='module')
def rep():
    return load_table('table2_reported')


@pytest.mark.parametrize('name', sorted(TABLES))
def test_tables_load_with_documented_columns(name):
    df = load_table(name)
    assert tuple(df.columns) == TABLES[name]
    assert len(df) > 0
    assert not df[list(REQUIRED[name])].isna().any().any()
    assert not (df[list(REQUIRED[name])].astype(str) == '').any().any()
    assert f'`{name}.csv`' in (paper_dir() / 'README.md').read_text(encoding='utf-8')


def test_no_stray_files():
    assert {p.stem for p in paper_dir().glob('*.csv')} == set(TABLES)


def test_unknown_and_missing_tables(tmp_path):
    with pytest.raises(KeyError, match='table9'):
        load_table('table9')
    with pytest.raises(FileNotFoundError):
        load_table('table2', folder=tmp_path)


def test_malformed_table_is_rejected(tmp_path):
    text = (paper_dir() / 'table5.csv').read_text(encoding='utf-8')
    (tmp_path / 'table5.csv').write_text(text.replace('accuracy', 'acc', 1), encoding='utf-8')
    with pytest.raises(PaperDataError, match='columns'):
        load_table('table5', folder=tmp_path)
    lines = text.splitlines()
    lines[1] = lines[1].rsplit(',', 1)[0] + ','  # empty accuracy
    (tmp_path / 'table5.csv').write_text('\n'.join(lines) + '\n', encoding='utf-8')
    with pytest.raises(PaperDataError, match='empty'):
        load_table('table5', folder=tmp_path)


def test_table2_shape_and_vocabulary(t2, rep):
    assert len(t2) == 13 * 4 and t2.system.nunique() == 13
    assert t2.groupby('system').split.apply(set).eq(SPLITS).all()
    assert set(t2.family) == {'cot', 'reasoning', 'dagger'}
    assert t2.groupby('family').system.nunique().to_dict() == {'cot': 5, 'reasoning': 2, 'dagger': 6}
    assert set(t2.phase[t2.family == 'dagger']) == {'untrained', 'sft', 'grpo'}
    assert set(t2.phase[t2.family != 'dagger']) == {''}
    assert set(t2.params_b) == {3, 4, 7, 8, 12}
    assert t2.accuracy.between(0, 100).all() and (t2.tokens > 0).all()
    assert list(rep.system) == list(dict.fromkeys(t2.system))
    assert rep.weighted_accuracy.between(0, 100).all()


def test_weights():
    assert PAPER_N == 4935 and PAPER_SPLIT_SIZES['msvamp_bn_distract'] == 2947


def test_feasible_counts():
    assert list(feasible_counts(26.4, 250)) == [66]
    assert list(feasible_counts(26.5, 250)) == []          # MGSM moves in steps of 0.4
    assert list(feasible_counts(13.7, 738)) == [101]       # 13.69%
    assert 0 not in feasible_counts(0.1, 1000)


def test_derived_values_match_within_rounding(t2, rep):
    "Δ exact to 0.1; weighted accuracy within 0.1 (≤0.087 from rounding); weighted tokens within 1 (2 × ±0.5)."
    d = derive_table2(t2).merge(rep.set_index('system'), left_index=True, right_index=True, suffixes=('', '_paper'))
    ok = d.drop(index=[s for s, _ in KNOWN_DISCREPANCIES])
    assert (ok.mgsm_delta - ok.mgsm_delta_paper).abs().max() < 1e-9
    assert (ok.msvamp_delta - ok.msvamp_delta_paper).abs().max() < 1e-9
    assert (d.weighted_accuracy - d.weighted_accuracy_paper).abs().max() <= 0.087
    assert (d.weighted_tokens - d.weighted_tokens_paper).abs().max() <= 1.0


def test_check_table2_finds_only_the_known_discrepancy():
    mm = check_table2()
    assert set(zip(mm.system, mm.column)) == set(KNOWN_DISCREPANCIES)
    assert mm.known.all()
    row = mm.iloc[0]
    assert (row.reported, row.derived) == (22.7, 22.6)
    assert row.allowed_hi < 22.65                          # 22.7 is out of reach of any count


def test_known_discrepancy_is_in_the_paper_not_the_transcription(t2):
    acc = t2.set_index(['system', 'split']).accuracy
    t3 = load_table('table3').set_index(['system', 'distractor_annotations', 'split']).accuracy
    s = 'DAGGER-Gemma3-4B-SFT'
    assert acc[(s, 'msvamp_bn')] == t3[(s, True, 'msvamp_bn')] == 65.0
    assert acc[(s, 'msvamp_bn_distract')] == t3[(s, True, 'msvamp_bn_distract')] == 42.4
    assert round(acc[(s, 'msvamp_bn_distract')] - t3[(s, False, 'msvamp_bn_distract')], 1) == 2.9  # text: "+2.9 for 4B"


def test_column_order_conflict_between_table2_header_and_text(t2, rep):
    "Header order gives column 2 = Qwen2.5-7B; §6.1 attributes its 26.4 / Δ 3.2 to LLaMA 3 8B (README, inconsistency 2)."
    acc = t2.set_index(['system', 'split']).accuracy
    r = rep.set_index('system')
    assert list(dict.fromkeys(t2.system))[:3] == ['Qwen2.5-3B', 'Qwen2.5-7B', 'LLaMA3-8B']
    assert (acc[('Qwen2.5-7B', 'mgsm_bn')], r.mgsm_delta['Qwen2.5-7B']) == (26.4, 3.2)   # what the text calls LLaMA 3 8B
    assert acc[('LLaMA3-8B', 'mgsm_bn')] == 49.2
    assert 'LLaMA 3 8B shows a notably small drop of 3.2' in (paper_dir() / 'README.md').read_text(encoding='utf-8')


def _corrupt_copy(tmp_path, system, split, column, delta):
    for p in paper_dir().glob('*.csv'):
        shutil.copy(p, tmp_path / p.name)
    df = pd.read_csv(tmp_path / 'table2.csv', keep_default_na=False)
    hit = (df.system == system) & (df.split == split)
    assert hit.sum() == 1
    df.loc[hit, column] = df.loc[hit, column].astype(float) + delta
    df.to_csv(tmp_path / 'table2.csv', index=False)
    return load_table('table2', folder=tmp_path), load_table('table2_reported', folder=tmp_path)


def test_corrupted_copy_is_caught(tmp_path):
    table, reported = _corrupt_copy(tmp_path, 'Gemma3-12B', 'msvamp_bn_distract', 'accuracy', 5)
    assert table.accuracy.sum() == pytest.approx(load_table('table2').accuracy.sum() + 5)
    mm = check_table2(table=table, reported=reported)
    new = mm[~mm.known]
    assert set(new.system) == {'Gemma3-12B'}
    assert set(new.column) == {'msvamp_delta', 'weighted_accuracy'}


@pytest.mark.parametrize('split', sorted(SPLITS))
@pytest.mark.parametrize('delta', [5, -5])
def test_every_five_point_typo_is_caught(t2, split, delta):
    for system in t2.system.unique():
        bad = t2.copy()
        bad.loc[(bad.system == system) & (bad.split == split), 'accuracy'] += delta
        mm = check_table2(table=bad)
        assert (~mm.known & (mm.system == system)).any(), (system, split, delta)


def test_token_typo_is_caught(tmp_path):
    table, reported = _corrupt_copy(tmp_path, 'DAGGER-Gemma3-12B-GRPO', 'mgsm_bn', 'tokens', 50)
    mm = check_table2(table=table, reported=reported)
    assert set(zip(mm[~mm.known].system, mm[~mm.known].column)) == {('DAGGER-Gemma3-12B-GRPO', 'weighted_tokens')}


def test_inconsistent_files_are_rejected(t2, rep):
    with pytest.raises(PaperDataError):
        check_table2(table=t2[t2.system != 'Qwen3-4B'], reported=rep)
    with pytest.raises(PaperDataError):
        derive_table2(t2[~((t2.system == 'Qwen3-4B') & (t2.split == 'mgsm_bn'))])
    with pytest.raises(PaperDataError):
        derive_table2(pd.concat([t2, t2.head(1)]))


def test_text_claims(t2, rep):
    "Numbers the paper's prose repeats from Table 2."
    r = rep.set_index('system')
    acc = t2.set_index(['system', 'split']).accuracy
    assert r.weighted_accuracy['DAGGER-Gemma3-12B-GRPO'] == 69.4 and r.weighted_tokens['DAGGER-Gemma3-12B-GRPO'] == 359
    assert r.weighted_accuracy['Qwen3-8B'] == 71.4 and r.weighted_tokens['Qwen3-8B'] == 3128
    assert (acc[('Qwen2.5-3B', 'msvamp_bn')], acc[('Qwen2.5-3B', 'msvamp_bn_distract')]) == (53.7, 13.0)
    cot = r.loc[t2.system[t2.family == 'cot'].unique()]
    assert max(cot.mgsm_delta.max(), cot.msvamp_delta.max()) == 40.7                  # "drops up to 40.7"
    assert r.loc['DAGGER-Gemma3-12B-GRPO', ['mgsm_delta', 'msvamp_delta']].tolist() == [14.4, 12.0]
    q = r.loc[['Qwen3-4B', 'Qwen3-8B'], ['mgsm_delta', 'msvamp_delta']].values
    assert (q.min(), q.max()) == (14.2, 19.9)                                        # "degrade 14.2-19.9 points"
    assert round(r.weighted_accuracy['DAGGER-Gemma3-12B-GRPO'] - r.weighted_accuracy['DAGGER-Gemma3-12B-SFT'], 1) == 2.7
    assert round(r.weighted_accuracy['DAGGER-Gemma3-4B-GRPO'] - r.weighted_accuracy['DAGGER-Gemma3-4B-SFT'], 1) == 3.0
    assert (r.weighted_accuracy['DAGGER-Gemma3-4B-untrained'], r.weighted_accuracy['DAGGER-Gemma3-12B-untrained']) == (33.3, 61.7)


def test_table2_wide_layout(t2):
    w = table2_wide()
    assert w.shape == (7, 26)
    assert w.columns.get_level_values('system').unique().tolist() == list(dict.fromkeys(t2.system))
    assert w.loc['Accuracy (+Distractor)', ('Qwen2.5-3B', 'MS')] == 13.0
    assert w.loc['Weighted Avg. Acc.', ('Qwen3-8B', 'MG')] == 71.4
    assert pd.isna(w.loc['Weighted Avg. Acc.', ('Qwen3-8B', 'MS')])


def test_table3_and_table6_repeat_table2(t2):
    acc = t2.set_index(['system', 'split']).accuracy
    t3 = load_table('table3')
    assert set(t3.split) == {'msvamp_bn', 'msvamp_bn_distract'} and len(t3) == 8
    w = t3[t3.distractor_annotations].set_index(['system', 'split']).accuracy
    assert (w == acc.loc[w.index]).all()
    t6 = load_table('table6')
    assert set(t6.init) == {'base', 'sft'} and len(t6) == 16
    s = t6[t6.init == 'sft'].set_index(['system', 'split']).accuracy
    assert (s == acc.loc[s.index]).all()
    b = t6[t6.init == 'base'].set_index(['params_b', 'split']).accuracy
    assert round(acc[('DAGGER-Gemma3-12B-GRPO', 'mgsm_bn_distract')] - b[(12, 'mgsm_bn_distract')], 1) == 15.6  # text
    assert round(acc[('DAGGER-Gemma3-12B-GRPO', 'msvamp_bn_distract')] - b[(12, 'msvamp_bn_distract')], 1) == 7.2


def test_table4_plausible():
    t4 = load_table('table4').set_index(['split', 'method'])
    assert t4.accuracy.between(0, 100).all()
    assert t4.execution_rate.dropna().between(90, 100).all()
    assert t4.execution_rate.isna().groupby(level='method').all().to_dict() == {'cot': True, 'dagger': False, 'got': True, 'pot': False}
    for split in ['mgsm_bn_distract', 'msvamp_bn_distract']:
        assert t4.loc[split].accuracy.idxmax() == 'dagger'
    gap = (t4.loc[('mgsm_bn_distract', 'dagger')].accuracy - t4.loc[('mgsm_bn_distract', 'got')].accuracy,
           t4.loc[('msvamp_bn_distract', 'dagger')].accuracy - t4.loc[('msvamp_bn_distract', 'got')].accuracy)
    assert tuple(round(g, 1) for g in gap) == (2.4, 6.6)


def test_table5_plausible():
    t5 = load_table('table5')
    assert set(t5.lang) == {'en', 'es', 'te', 'th'} and len(t5) == 8
    assert (t5.split == 'mgsm_' + t5.lang).all()
    assert t5.accuracy.between(50, 100).all()
    # MGSM has 250 problems: every accuracy is a multiple of 0.4
    assert all(len(feasible_counts(a, 250)) == 1 for a in t5.accuracy)
    p = t5.pivot(index='lang', columns='method', values='accuracy')
    gain = (p.dagger - p.cot).round(1)
    assert (gain > 0).all() and (gain.min(), gain.max()) == (4.4, 10.8)          # "+4.4 on Telugu to +10.8 on English"
    assert (gain.idxmin(), gain.idxmax()) == ('te', 'en')
    assert t5.set_index('method').shots.to_dict() == {'cot': 5, 'dagger': 3}


def test_table7_plausible():
    t7 = load_table('table7')
    assert len(t7) == 4 and set(t7.split) == {'mgsm_en'}
    assert t7.accuracy.between(50, 100).all() and t7.accuracy.is_monotonic_increasing
    assert all(len(feasible_counts(a, 250)) == 1 for a in t7.accuracy)
    assert (t7.accuracy.min(), t7.accuracy.iloc[1:].min(), t7.accuracy.max()) == (78.4, 80.0, 89.6)  # "80.0–89.6"
    assert t7.config.is_unique and (t7.shots[t7.icl_set == 'none'] == 0).all()


def test_table8_plausible():
    t8 = load_table('table8')
    assert t8.phase.tolist() == ['untrained', 'sft', 'grpo']
    assert t8.avg_nodes.between(3, 20).all()            # the format reward needs at least 3 nodes
    assert t8.avg_nodes.is_monotonic_increasing          # "GRPO does not reduce graph complexity"


def test_table11_and_figure4():
    t11 = load_table('table11').set_index('dataset')
    assert ((t11.min_distractors <= t11.avg_distractors) & (t11.avg_distractors <= t11.max_distractors)).all()
    aug = t11.loc[['mgsm_bn_distract', 'msvamp_bn_distract']]
    avg = (aug.avg_distractors * [738, 2947]).sum() / 3685
    assert round(avg, 1) == 2.7                           # text: "2.7 distractors on average"
    assert (aug.min_distractors >= 1).all()
    f4 = load_table('figure4_r2').set_index(['split', 'family']).r2
    assert f4.between(0, 1).all()
    assert f4.to_dict() == {('msvamp_bn', 'dagger'): 0.600, ('msvamp_bn', 'reasoning'): 0.015,
                            ('msvamp_bn_distract', 'dagger'): 0.430, ('msvamp_bn_distract', 'reasoning'): 0.005}


@pytest.mark.parametrize('name', ['table2', 'table3', 'table4', 'table5', 'table6', 'table7'])
def test_every_accuracy_is_a_possible_count(name):
    "An accuracy on n problems is 100·k/n: MGSM (250) moves in steps of 0.4, so e.g. 38.5 would be a typo."
    sizes = dict(PAPER_SPLIT_SIZES, mgsm_en=250, mgsm_es=250, mgsm_te=250, mgsm_th=250)
    df = load_table(name)
    bad = [(s, a) for s, a in zip(df.split, df.accuracy) if not len(feasible_counts(a, sizes[s]))]
    assert not bad
