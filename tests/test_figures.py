"Figures and tables (dagger.figures): sidecars and hashes, one palette across sources, linear fits, skipping missing inputs."
from pathlib import Path
import hashlib, json, math
import numpy as np
import pandas as pd
import pytest
import matplotlib
matplotlib.use('Agg')
from matplotlib.colors import to_hex
from dagger.config import load_profile
from dagger.provenance import git_commit
from dagger.files import write_jsonl, write_json
from dagger import figures as F


def _cfg(tmp_path, **kw):
    return load_profile('cpu', results_dir=str(tmp_path/'results'), figures_dir=str(tmp_path/'fig'), data_dir=str(tmp_path/'data'), generated_dir=str(tmp_path/'generated'), **kw)


def _paper_table2():
    "A Table 2 shaped like data/paper/table2.csv (numbers invented for the test, not the paper's)."
    rows = []
    for system, family, pb, method, phase, acc, tok in [('Qwen3-8B', 'reasoning', 8, 'reasoning', '', 80, 3000),
                                                       ('Gemma-3-12B', 'cot', 12, 'cot', '', 70, 600),
                                                       ('Gemma-3-12B', 'dagger', 12, 'dagger', 'grpo', 72, 350),
                                                       ('Gemma-3-4B', 'dagger', 4, 'dagger', 'sft', 55, 360)]:
        for split, drop in [('mgsm_bn', 0), ('msvamp_bn', 0), ('mgsm_bn_distract', 12), ('msvamp_bn_distract', 10)]:
            rows.append(dict(system=system, family=family, params_b=pb, method=method, phase=phase, split=split, accuracy=acc - drop, tokens=tok + drop))
    return pd.DataFrame(rows)


def _records(phase, methods=('cot', 'dagger')):
    rows = []
    for m in methods:
        for split in ['mgsm_bn', 'mgsm_bn_distract', 'msvamp_bn', 'msvamp_bn_distract']:
            for i in range(6):
                aug = split.endswith('_distract')
                rows.append(dict(id=f'{split}-{i}', split=split, method=m, model='toy-1b', base_model='toy-1b', phase=phase, split_size=100, calls=1,
                                 correct=i < 3, tokens=50 + 10 * i, aug_type=F.TYPES[i % 3] if aug else None,
                                 distractor_values=[7.0] if aug else None, flagged=[7.0] if m == 'dagger' and aug else None,
                                 executed=True if m == 'dagger' else None, n_ops=2 if m == 'dagger' else None,
                                 n_nodes=5 if m == 'dagger' else None, repairs=[] if m == 'dagger' else None))
    return rows


def _write_run(cfg, name, phase, methods=('cot', 'dagger')):
    d = cfg.results/'eval'/name
    write_jsonl(d/'records.jsonl', _records(phase, methods))
    write_json(d/'run.json', dict(model='toy-1b', phase=phase))
    return d


# --- sidecars -------------------------------------------------------------------------------------------
def test_sidecar_lists_inputs_with_hashes(tmp_path):
    cfg = _cfg(tmp_path)
    a, b = tmp_path/'a.csv', tmp_path/'b.jsonl'
    a.write_text('x,y\n1,2\n'); b.write_text('{"k": 1}\n')
    paths = F.save_table(pd.DataFrame({'x': [1.0, float('nan')]}), 't_ours-cpu', cfg, [a, b], 'our run: toy', 'Toy table')
    side = json.loads(paths[-1].read_text())                      # valid JSON (no NaN)
    assert {i['sha256'] for i in side['inputs']} == {hashlib.sha256(a.read_bytes()).hexdigest(), hashlib.sha256(b.read_bytes()).hexdigest()}
    assert side['source'] == 'our run: toy' and side['profile'] == 'cpu' and side['commit'] == git_commit()
    assert side['run_info']['profile']['name'] == 'cpu'
    assert [p.rsplit('/', 1)[-1] for p in side['outputs']] == ['t_ours-cpu.csv', 't_ours-cpu.md']
    assert (cfg.figures/'tables'/'t_ours-cpu.md').read_text().startswith('**Toy table (our run: toy)**')
    a.write_text('x,y\n1,3\n')                                     # a changed input changes its hash
    side2 = json.loads(F.save_table(pd.DataFrame({'x': [1]}), 't_ours-cpu', cfg, [a], 'our run: toy', 'Toy')[-1].read_text())
    assert side2['inputs'][0]['sha256'] not in {i['sha256'] for i in side['inputs']}


def test_sidecar_names_the_final_outputs_under_staging(tmp_path, monkeypatch):
    cfg = _cfg(tmp_path)
    monkeypatch.setenv('DAGGER_STAGING', str(tmp_path/'staging'))   # as the pipeline runs the figures stage
    (tmp_path/'a.csv').write_text('x\n1\n')
    paths = F.save_table(pd.DataFrame({'x': [1]}), 't_ours-cpu', cfg, [tmp_path/'a.csv'], 'our run: toy', 'Toy')
    assert paths[0].is_relative_to(tmp_path/'staging')
    side = json.loads(paths[-1].read_text())
    assert side['outputs'] == [F._rel(cfg.figures/'tables'/f't_ours-cpu.{x}') for x in ('csv', 'md')]


def test_sidecar_refuses_missing_inputs(tmp_path):
    with pytest.raises(FileNotFoundError):
        F.sidecar(tmp_path/'x.json', [tmp_path/'nope.csv'], _cfg(tmp_path), 'paper-reported', 't')


def test_figure_writes_png_pdf_and_sidecar(tmp_path):
    cfg = _cfg(tmp_path)
    tidy = F.paper_tidy(_paper_table2())
    (tmp_path/'t2.csv').write_text(_paper_table2().to_csv(index=False))
    paths = F.save_figure(F.fig2(tidy, 'bn', 'Figure 2, paper-reported'), 'fig2_paper-reported', cfg, [tmp_path/'t2.csv'], 'paper-reported')
    assert [p.suffix for p in paths] == ['.png', '.pdf', '.json'] and all(p.stat().st_size > 0 for p in paths)
    assert json.loads(paths[-1].read_text())['title'] == 'Figure 2, paper-reported'


# --- palette ----------------------------------------------------------------------------------------------
def _face_hex(fig):
    return {to_hex(c.get_facecolor()[0]) for ax in fig.axes for c in ax.collections if len(c.get_facecolor())}


def test_same_family_same_colour_in_both_sources(tmp_path):
    paper = F.paper_tidy(_paper_table2())
    cfg = _cfg(tmp_path)
    _write_run(cfg, 'toy_grpo', 'grpo', ('dagger',)); _write_run(cfg, 'toy', 'untrained', ('cot', 'dagger'))
    recs, _ = F.load_runs(cfg)
    ours = F.our_tidy(recs)
    assert set(paper['family']) == {'reasoning', 'cot', 'dagger_grpo', 'dagger_sft'}
    assert set(ours['family']) == {'cot', 'dagger_untrained', 'dagger_grpo'}
    fp, fo = F.fig2(paper, 'bn', 'paper'), F.fig2(ours, 'bn', 'ours')
    filled_p, filled_o = _face_hex(fp) - {'#ffffff'}, _face_hex(fo) - {'#ffffff'}
    assert filled_p == {F.PALETTE[k].lower() for k in set(paper['family'])}
    assert filled_o == {F.PALETTE[k].lower() for k in set(ours['family'])}
    assert F.PALETTE['cot'].lower() in filled_p & filled_o and F.PALETTE['dagger_grpo'].lower() in filled_p & filled_o
    bars = F.fig3(F.type_table(recs, 'bn'), 'ours')
    assert {to_hex(p.get_facecolor()) for p in bars.axes[0].patches} == {F.PALETTE[k].lower() for k in set(ours['family'])}


def test_family_keys_agree_between_paper_and_records():
    assert F.family_key('dagger', 'sft') == F.family_key('DAGGER', 'sft') == 'dagger_sft'
    assert F.family_key('dagger', '') == F.family_key('dagger', None) == 'dagger_untrained'
    assert set(F.PALETTE) == set(F.FAMILY_LABELS)
    with pytest.raises(F.FigureError): F.family_key('dagger', 'rlhf')


# --- fits -------------------------------------------------------------------------------------------------
def test_r2_of_known_linear_fits():
    x = np.arange(1, 11, dtype=float)
    f = F.linear_fit(x, 3 * x + 2)
    assert math.isclose(f['slope'], 3) and math.isclose(f['intercept'], 2) and math.isclose(f['r2'], 1) and f['n'] == 10
    y = 3 * x + 2 + np.array([1, -1] * 5)
    assert math.isclose(F.linear_fit(x, y)['r2'], np.corrcoef(x, y)[0, 1] ** 2)       # simple regression: R² = r²
    assert math.isclose(F.linear_fit([0, 1, 2, 3], [0, 2, 1, 3])['r2'], 0.64)
    assert math.isnan(F.linear_fit([2, 2, 2], [1, 2, 3])['r2']) and math.isnan(F.linear_fit([1], [1])['r2'])


def test_table2_weighted_matches_paper_formula():
    w = F.table2_layout(F.paper_tidy(_paper_table2()), 'bn').set_index(['system', 'method'])
    r = w.loc[('Gemma-3-12B', 'cot')]
    assert r['Δ MGSM'] == 12 and r['Δ MSVAMP'] == 10
    assert math.isclose(r['weighted acc'], (70 * 250 + 70 * 1000 + 58 * 738 + 60 * 2947) / 4935)


# --- skipping -----------------------------------------------------------------------------------------------
def test_missing_inputs_skip_cleanly(tmp_path, capsys):
    cfg = _cfg(tmp_path)
    m = F.draw_all(cfg)
    assert {Path(p).name.split('.')[0] for p in m['written']} == {'graph_example_ours-cpu'} and len(m['skipped']) >= 10   # the pen graph needs no results
    assert 'skip table2 (paper)' in capsys.readouterr().out
    assert json.loads((cfg.figures/'manifest_cpu.json').read_text())['skipped'] == m['skipped']


def test_partial_inputs_make_what_they_can(tmp_path):
    cfg = _cfg(tmp_path)
    (cfg.data/'paper').mkdir(parents=True)
    (cfg.data/'paper'/'table2.csv').write_text(_paper_table2().to_csv(index=False))
    _write_run(cfg, 'toy', 'untrained'); _write_run(cfg, 'toy_sft', 'sft', ('dagger',)); _write_run(cfg, 'toy_grpo', 'grpo', ('dagger',))
    (cfg.results/'grpo').mkdir(parents=True)
    (cfg.results/'grpo'/'history.csv').write_text('step,reward,format,execution,accuracy,completion_length\n1,0.5,1,0,0,200\n2,1.0,1,1,0,180\n')
    (cfg.results/'sft').mkdir(parents=True)
    (cfg.results/'sft'/'curve.csv').write_text('examples,split,n,correct,accuracy,acc_lo,acc_hi,exec_rate,mean_tokens,smoke\n'
                                               '8,msvamp_bn,40,2,5.0,1.4,16.5,90.0,150,False\n16,msvamp_bn,40,6,15.0,7.1,29.1,95.0,150,False\n')
    (cfg.results/'grpo'/'nodes.csv').write_text('phase,init,phase_label,model,outputs,graphs,mean_nodes,mean_ops\nsft,,SFT,m (SFT),4,4,6.5,2\ngrpo,sft,SFT→GRPO,m (SFT→GRPO),4,4,7.0,2.5\n')
    (cfg.data/'paper'/'table8.csv').write_text('system,params_b,phase,split,avg_nodes\nX-untrained,12,untrained,msvamp_bn,7.33\n'
                                               'X-SFT,12,sft,msvamp_bn,7.74\nX-GRPO,12,grpo,msvamp_bn,7.84\n')
    m = F.draw_all(cfg, verbose=False)
    written = {p.rsplit('/', 1)[-1] for p in m['written']}
    assert {'grpo_ours-cpu.png', 'sft_curve_ours-cpu.png', 'fig2_paper-reported.png', 'fig2_ours-cpu.png', 'fig3_ours-cpu.pdf', 'table2_paper-reported.csv', 'table2_ours-cpu.md', 'table2_compare-cpu.csv',
            'table6_ours-cpu.csv', 'table8_ours-cpu.csv', 'flags_ours-cpu.png', 'dose_ours-cpu.json'} <= written
    skipped = {s['part'] for s in m['skipped']}
    assert {'table3 (paper)', 'Figure 4 (ours)', 'Table 11 (ours)', 'table3 (ours)'} <= skipped
    t8 = pd.read_csv(cfg.figures/'tables'/'table8_compare-cpu.csv').set_index('phase')
    ours8 = pd.read_csv(cfg.figures/'tables'/'table8_ours-cpu.csv').set_index('phase')   # from the evaluation runs' graphs, not nodes.csv
    assert t8.loc['grpo', 'avg_nodes (paper)'] == 7.84 and t8.loc['grpo', 'avg_nodes (ours)'] == ours8.loc['grpo', 'avg_nodes'] != 7.0
    assert {'gold_ops', 'ops_lo', 'ops_hi', 'exec_lo', 'exec_hi'} <= set(ours8.columns)
    cmp = pd.read_csv(cfg.figures/'tables'/'table2_compare-cpu.csv')
    assert set(cmp['source']) == {'paper-reported', 'ours †'} and cmp.loc[cmp['source'] == 'ours †', 'smoke'].all()   # 6 problems per split
    assert '† smoke' in (cfg.figures/'tables'/'table2_compare-cpu.md').read_text().splitlines()[0]
    t2 = pd.read_csv(cfg.figures/'tables'/'table2_ours-cpu.csv')
    assert {'MGSM lo', 'MGSM hi', 'MSVAMP+D lo', 'smoke'} <= set(t2.columns) and t2['smoke'].all()
    assert math.isclose(t2['MGSM lo'].iloc[0], 100 * 0.1876, abs_tol=0.01)                          # Wilson for 3/6: [18.76%, 81.24%]
    pc = pd.read_csv(cfg.figures/'tables'/'comparisons_ours-cpu.csv')
    assert pc['smoke'].all()
    assert {'DAGGER (untrained) vs CoT', 'Δ DAGGER (untrained) vs CoT'} <= set(pc['comparison']) and pc['p'].between(0, 1).all()
    assert 'smoke (n<30)' in json.loads((cfg.figures/'fig2_ours-cpu.json').read_text())['title']
    side = json.loads((cfg.figures/'tables'/'table2_compare-cpu.json').read_text())
    assert any(i['path'].endswith('table2.csv') for i in side['inputs']) and any(i['path'].endswith('records.jsonl') for i in side['inputs'])


def test_malformed_paper_table_is_reported_not_fatal(tmp_path):
    cfg = _cfg(tmp_path)
    (cfg.data/'paper').mkdir(parents=True)
    (cfg.data/'paper'/'table8.csv').write_text('phase,nodes\nsft,7.7\n')          # not the documented columns
    m = F.draw_all(cfg, verbose=False)
    reason = next(s['reason'] for s in m['skipped'] if s['part'] == 'table8 (paper)')
    assert 'expected' in reason and all('graph_example' in p for p in m['written'])


def test_systems_come_from_record_fields_not_labels(tmp_path):
    cfg = _cfg(tmp_path)
    d = cfg.results/'eval'/'sft'
    write_jsonl(d/'records.jsonl', [r | dict(model='results/cpu/sft/merged (a label)', base_model='embedded:smollm2-135m') for r in _records('sft', ('dagger',))])
    write_json(d/'run.json', dict(phase='sft'))
    recs, files = F.load_runs(cfg)
    assert set(recs['system']) == {'smollm2-135m SFT'} and set(recs['family']) == {'dagger_sft'} and set(recs['params_b']) == {0.135}
    assert {f.name for f in files} == {'records.jsonl', 'run.json'}
    write_jsonl(d/'records.jsonl', [dict(r, phase='') for r in _records('sft', ('dagger',))])   # no phase: named, never guessed
    with pytest.raises(F.FigureError, match=r"records.jsonl, line 1: record without \['phase'\]"): F.load_runs(cfg)


def test_english_only_originals_make_what_they_can(tmp_path):
    cfg = _cfg(tmp_path)
    rows = [dict(id=f'{s}-{i}', split=s, method='cot', model='toy-1b', base_model='toy-1b', phase='untrained', correct=i % 2 == 0, tokens=100 + i)
            for s in ('mgsm_en', 'msvamp_en') for i in range(4)]                       # minimal records: no aug_type, no split_size
    write_jsonl(cfg.results/'eval'/'toy'/'records.jsonl', rows)
    st = F.FigureRun(cfg, verbose=False)
    assert st.lang == 'en'
    m = F.draw_all(cfg, verbose=False)
    written = {p.rsplit('/', 1)[-1] for p in m['written']}
    assert {'fig2_ours-cpu.png', 'table2_ours-cpu.csv', 'table4_ours-cpu.csv'} <= written
    assert 'English' in json.loads((cfg.figures/'fig2_ours-cpu.json').read_text())['title']
    assert {'Figure 3 (ours)', 'dose curve (ours)'} <= {s['part'] for s in m['skipped']}


# --- intervals and smoke in the figures ---------------------------------------------------------------------
def test_figures_draw_intervals_and_mark_smoke(tmp_path):
    cfg = _cfg(tmp_path)
    _write_run(cfg, 'toy', 'untrained', ('cot', 'dagger'))
    recs, _ = F.load_runs(cfg)
    fig = F.fig2(F.our_tidy(recs), 'bn', 'ours')
    ax = fig.axes[0]
    assert sum(type(c).__name__ == 'LineCollection' for c in ax.collections) >= 8          # x and y whiskers of 4 points
    assert 'smoke (n<30)' in [t.get_text() for t in fig.legends[0].get_texts()]
    paper = F.fig2(F.paper_tidy(_paper_table2()), 'bn', 'paper')                               # paper: n = split sizes, no whiskers
    assert not any(type(c).__name__ == 'LineCollection' for c in paper.axes[0].collections)
    assert 'smoke (n<30)' not in [t.get_text() for t in paper.legends[0].get_texts()]
    t3 = F.type_table(recs, 'bn')
    assert t3['smoke'].all() and (t3['ci_low'] <= t3['error_rate']).all()
    assert all(p.get_hatch() == '////' for p in F.fig3(t3, 'ours').axes[0].patches)
    big = recs.loc[recs.index.repeat(10)].assign(id=lambda d: d['id'] + '-' + d.groupby(level=0).cumcount().astype(str)).reset_index(drop=True)
    tb = F.type_table(big, 'bn')
    assert not tb['smoke'].any() and not any(p.get_hatch() for p in F.fig3(tb, 'ours').axes[0].patches)
    dt = F.dose_table(recs, 'bn')
    assert dt['smoke'].all() and 'hollow: smoke (n<30)' in [t.get_text() for t in F.fig_dose(dt, 'ours').axes[0].get_legend().get_texts()]
    t4 = F.table4_ours(recs, 'bn')
    assert {'acc_lo', 'acc_hi', 'tokens_lo', 'tokens_hi', 'smoke'} <= set(t4.columns) and (t4['acc_lo'] <= t4['accuracy']).all()


def test_side_by_side_marks_smoke_rows():
    paper = pd.DataFrame({'config': ['a', 'b'], 'accuracy': [70.0, 60.0]})
    ours = F.smoke_column(pd.DataFrame({'config': ['a', 'b'], 'accuracy': [50.0, 40.0], 'n': [8, 250]}))
    t, note = F.mark_smoke(F.paper_beside_ours(paper, ours, ['config']))
    assert t.set_index('config')['smoke'].to_dict() == {'a': True, 'b': False} and '† smoke' in note
    t, note = F.mark_smoke(F.paper_beside_ours(paper, ours))
    assert t['source'].tolist() == ['paper-reported', 'paper-reported', 'ours †', 'ours']
    assert F.mark_smoke(F.paper_beside_ours(paper, F.smoke_column(ours.assign(n=100).drop(columns='smoke'))))[1] == ''
