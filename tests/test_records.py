"""The committed per-problem records of the CPU study reproduce its committed tables, byte for byte.

`make reproduce PROFILE=cpu-study` publishes every evaluation run's records under runs/cpu-study/records
(dagger.layout.publish_records), and `make reproduce PROFILE=cpu-ablations` its own (Base->GRPO, Table 3) under
runs/cpu-ablations/records; the figures stage made figures/tables/*_ours-<profile>.csv from the same records in
results/. Recomputing the tables from the published copies must give the same CSV text."""
import pytest

from dagger import ablations, layout
from dagger.config import load_profile, project_root
from dagger.files import read_jsonl
from dagger.figures import ablation_table, load_runs, our_tidy, pick_lang, table2_layout

STUDY = load_profile('cpu-study')
ABLATIONS = load_profile('cpu-ablations')
TABLES = project_root()/'figures'/'tables'


def committed_csv(name: str, cfg=STUDY) -> str:
    return (TABLES/f'{name}_ours-{cfg.name}.csv').read_text(encoding='utf-8')


def test_the_study_publishes_its_records():
    runs = {run for run, _ in layout.record_files(STUDY, 'eval', committed=True)}
    assert len(runs) >= 3, f'expected the untrained, SFT and SFT→GRPO runs under {layout.records_dir(STUDY)}, found {sorted(runs)}'
    assert 'ablations' not in STUDY.stages and 'ablations' in ABLATIONS.stages   # the ablation arms are cpu-ablations'
    published = {run for run, _ in layout.record_files(ABLATIONS, 'ablations', committed=True)}
    assert set(ABLATIONS.ablation.tables) <= published, f'ablations without published records: {set(ABLATIONS.ablation.tables) - published}'
    runs = {run for run, _ in layout.record_files(ABLATIONS, 'eval', committed=True)}
    assert any(r.endswith('grpo_base') for r in runs), f'no Base→GRPO records under {layout.records_dir(ABLATIONS)}: {sorted(runs)}'


@pytest.mark.parametrize('cfg', [STUDY, ABLATIONS], ids=lambda c: c.name)
def test_table2_is_recomputed_from_the_committed_records(cfg):
    recs, files = load_runs(cfg, verbose=False, committed=True)
    assert files and len(recs)
    sizes = recs.groupby(['run', 'method', 'split']).size().groupby('split').agg(['min', 'max'])
    assert (sizes['min'] == sizes['max']).all()              # every system on the same problems of a split
    assert sizes['min'].drop('mgsm_bn_distract', errors='ignore').min() >= cfg.eval.sample_n   # the full sample, where
    # the split has it (the rebuilt MGSM-bn+D serves 74 problems: generated/distractmath/README.md)
    lang = pick_lang(recs['split'].unique())
    ours = table2_layout(our_tidy(recs[recs['lang'] == lang]), lang)
    assert ours.to_csv(index=False) == committed_csv('table2', cfg)


def _ablation_records(name: str):
    "The committed records of the study's ablation `name` (cpu-ablations runs them)."
    found = [f for r, f in layout.record_files(ABLATIONS, 'ablations', committed=True) if r == name]
    assert found, f'no committed {name} records under {layout.records_dir(ABLATIONS)}'
    return found[0]


@pytest.mark.parametrize('name', sorted(set(ABLATIONS.ablation.tables) & {'table3'}))
def test_ablation_table_is_recomputed_from_the_committed_records(name):
    f = _ablation_records(name)
    t = ablation_table(name, getattr(ablations, name)(read_jsonl(f)), ABLATIONS.model)
    assert t.to_csv(index=False) == committed_csv(name, ABLATIONS)


def test_the_pool_curve_is_recomputed_from_the_committed_records():
    import sys
    sys.path.insert(0, str(project_root()/'bench'))
    from study_pool_curve import RECORDS, curve
    files = sorted(RECORDS.glob('sft_n*.jsonl.gz'))
    if not files: pytest.skip('this study has no pool curve (its learning curve is in the SFT stage: curve.csv)')
    assert len(files) >= 2, f'expected SFT records at two pool sizes or more under {RECORDS}'
    assert curve(files).to_csv(index=False) == committed_csv('pool_curve')


def test_the_ablation_table_needs_only_its_records(tmp_path):
    "The figures stage draws an ablation table from its records alone (no table.csv or run.json beside them)."
    import gzip
    from dagger.figures import FigureRun, ablation_out
    f = _ablation_records('table3')
    cfg = load_profile('cpu-ablations', results_dir=str(tmp_path/'results'), figures_dir=str(tmp_path/'figures'))
    folder = layout.path(cfg, 'ablations')/'table3'
    folder.mkdir(parents=True)
    (folder/'records.jsonl').write_bytes(gzip.decompress(f.read_bytes()))
    st = FigureRun(cfg, verbose=False)
    assert ablation_out(st, 'table3')
    assert st.tables[f'table3_ours-{ABLATIONS.name}'].to_csv(index=False) == committed_csv('table3', ABLATIONS)


def test_the_sft_stage_summary_is_recomputed_from_its_records():
    "runs/cpu-study-sft: the SFT stage run alone; its summary.json follows from its committed records."
    import json, sys
    sys.path.insert(0, str(project_root()/'bench'))
    from study_sft_summary import load, summarise
    out = project_root()/'runs'/'cpu-study-sft'
    recs, curve = (load(out/'no-results-here', out, n) for n in ('records.jsonl', 'curve_records.jsonl'))
    committed, again = json.loads((out/'summary.json').read_text()), summarise(recs, curve)
    keys = ('arms', 'paired', 'curve', 'curve_paired')
    assert json.loads(json.dumps({k: again[k] for k in keys})) == {k: committed[k] for k in keys}
    assert committed['arms']['dagger (sft)']['n'] == STUDY.sft.eval_sample_n
    assert sorted(map(int, committed['curve']['msvamp_bn'])) == [int(x) for x in STUDY.sft.curve_examples]


def test_study_targets_recompute_from_the_committed_records():
    "runs/cpu-study/targets.json is what bench/study_targets.py computes from the committed records and log."
    import json, sys
    sys.path.insert(0, str(project_root()/'bench'))
    from study_targets import compute
    out = project_root()/'runs'/'cpu-study'
    if not (out/'targets.json').exists(): pytest.skip('the CPU study has not committed its targets yet')
    committed = json.loads((out/'targets.json').read_text())
    assert json.loads(json.dumps(compute(out))) == committed
    assert {t['target'] for t in committed['targets']} >= {'DAGGER-SFT > 5-shot CoT (paired CI above 0)',
                                                           'cpu-study ≤ 120 minutes, install included'}


def test_study_compare_pairs_two_runs_by_problem():
    "bench/study_compare.py: B − A per arm and split on the problems both runs answered; one flipped answer moves it by 1/n."
    import copy, importlib.util
    spec = importlib.util.spec_from_file_location('study_compare', project_root()/'bench'/'study_compare.py')
    sc = importlib.util.module_from_spec(spec); spec.loader.exec_module(sc)
    a = [dict(id=f'p{i}', split='msvamp_bn', method='dagger', phase='sft', init=None, correct=i < 5, tokens=100,
              output=f'o{i}') for i in range(20)]
    b = copy.deepcopy(a) + [dict(a[0], id='extra')]               # a problem only B answered is left out
    b[7] |= dict(correct=True, tokens=120, output='changed')
    row, = sc.compare(a, b)
    assert (row['arm'], row['n'], row['acc_a'], row['acc_b'], row['diff'], row['same_output']) == \
           ('dagger sft', 20, 25.0, 30.0, 5.0, 19)
    assert row['tokens_diff'] == 1.0
