"Integration tests of the papermill runner on a throwaway project (real papermill, real kernel)."
import json, os, signal, subprocess, sys, time
from pathlib import Path
import nbformat, psutil, pytest
from nbformat.v4 import new_notebook, new_code_cell, new_markdown_cell
from dagger import pages, pipeline
from dagger.config import ConfigError, load_profile

ROOT = Path(__file__).resolve().parents[1]

def _nb(path, cells):
    nb = new_notebook(cells=cells)
    nb.metadata = {"kernelspec": {"display_name": "python3", "language": "python", "name": "python3"}}
    nbformat.write(nb, str(path))

def _params():
    return new_code_cell("profile = 'cpu'\noverrides = {}", metadata={"tags": ["parameters"]})

WRITER = """from dagger.config import load_profile
from dagger.files import write_json
from dagger import layout
cfg = load_profile(profile, **overrides)
write_json(layout.output(cfg, 'eval')/'out.json', dict(n_eval=cfg.eval.sample_n, cwd=__import__('os').getcwd(),
                                                       tunables=__import__('os').environ.get('GLIBC_TUNABLES')))
(layout.figures_output(cfg)/'fig_cpu.txt').write_text(f'n_eval={cfg.eval.sample_n}')
import tempfile   # an example drawn into a folder of its own: written there, never staged or promoted
(layout.figures_output(load_profile(profile, figures_dir=tempfile.mkdtemp()))/'demo_cpu.txt').write_text('demo')
assert cfg.eval.sample_n != 99, 'n_eval 99 fails after writing'"""
TWICE = "n += 1\nassert n < 2, 'boom'"      # the same source twice: only the second one fails
SLOW = """import os, time
from dagger.config import load_profile
from dagger import layout
(layout.output(load_profile(profile), 'eval')/'part.txt').write_text(str(os.getpid()))
time.sleep(120)"""
CACHED = """from dagger.llm import CompletionCache, Completion
import os
c = CompletionCache(os.environ['DAGGER_CACHE'] + '/c.sqlite')
c.get_many(['a', 'b'], 'echo:m')
c.put('a', Completion('x', 1, 'stop'))"""

@pytest.fixture
def project(tmp_path, monkeypatch):
    (tmp_path/'nbs').mkdir()
    (tmp_path/'pyproject.toml').write_text('[project]\nname = "x"\n')
    (tmp_path/'settings.ini').write_text((ROOT/'settings.ini').read_text())
    nbs = tmp_path/'nbs'
    _nb(nbs/'stage_0_write.ipynb', [new_markdown_cell('# Write'), _params(), new_code_cell(WRITER)])
    _nb(nbs/'stage_1_fail.ipynb', [_params(), new_code_cell('n = 0'), new_code_cell(TWICE), new_code_cell('#| demo\nx = 1'),
                                   new_code_cell('#| demo\ny = 2'), new_code_cell(TWICE)])
    _nb(nbs/'stage_2_after.ipynb', [_params(), new_code_cell('#| demo\nraise ValueError("demo ran")'), new_code_cell('pass')])
    _nb(nbs/'stage_10_cached.ipynb', [_params(), new_code_cell(CACHED)])
    _nb(nbs/'stage_11_slow.ipynb', [_params(), new_code_cell(SLOW)])
    _nb(nbs/'lib_03_library.ipynb', [new_code_cell('#| default_exp library'), new_markdown_cell('# Library'),
                                     new_markdown_cell('> A library | notebook.\n\nMore text.')])
    _nb(nbs/'stage_4_library.ipynb', [new_code_cell('pass')])   # no parameters cell: not a stage
    _nb(nbs/'helpers.ipynb', [_params()])                      # not stage_N_name: not a stage
    monkeypatch.setenv('DAGGER_ROOT', str(tmp_path))
    monkeypatch.setenv('DAGGER_CACHE', str(tmp_path/'cache'))
    return tmp_path

def _no_leftovers(project):
    staging = project/'results'/'cpu'/'.staging'
    assert not (staging.exists() and list(staging.iterdir())), list(staging.iterdir())
    assert not list((project/'runs'/'cpu').glob('.*.ipynb'))

def test_stages_are_numbered_notebooks_with_parameters(project):
    assert [p.name for p in pipeline.stages()] == ['stage_0_write.ipynb', 'stage_1_fail.ipynb', 'stage_2_after.ipynb',
                                                   'stage_10_cached.ipynb', 'stage_11_slow.ipynb']
    all_ = pipeline.stages()
    assert pipeline.select(all_, ['1']) == pipeline.select(all_, ['fail']) == pipeline.select(all_, ['stage_1_fail']) == [all_[1]]
    with pytest.raises(ConfigError, match='no stage'): pipeline.select(all_, ['library'])

def test_reproduce_passes_profile_and_overrides_and_reports_files(project, monkeypatch):
    monkeypatch.delenv('GLIBC_TUNABLES', raising=False)
    table = pipeline.reproduce('cpu', only=['0'], overrides={'eval.sample_n': 3})
    assert table.attrs['error'] is None
    row = table.iloc[0]
    assert (row.notebook, row.status) == ('stage_0_write.ipynb', 'ok')
    assert row.files == ['figures/fig_cpu.txt', 'results/cpu/eval/out.json']   # not the example's demo_cpu.txt
    out = json.loads((project/'results'/'cpu'/'eval'/'out.json').read_text())
    assert out['n_eval'] == 3 and Path(out['cwd']) == project/'nbs'
    assert out['tunables'] == pipeline.KERNEL_ENV['GLIBC_TUNABLES'] and 'GLIBC_TUNABLES' not in os.environ   # the kernel's only
    executed = nbformat.read(str(project/'runs'/'cpu'/'stage_0_write.ipynb'), as_version=4)
    assert any('injected-parameters' in c.metadata.get('tags', []) for c in executed.cells)
    src = nbformat.read(str(project/'nbs'/'stage_0_write.ipynb'), as_version=4)   # the source notebook is never rewritten
    assert not any(c.get('outputs') for c in src.cells if c.cell_type == 'code')
    _no_leftovers(project)

def test_failure_is_reported_at_the_source_cell(project):
    table = pipeline.reproduce('cpu', only=['0', '1', '2'])
    err = table.attrs['error']
    assert isinstance(err, pipeline.StageError) and err.notebook == 'stage_1_fail.ipynb'
    assert 'AssertionError: boom' in err.error and err.cell == 6      # after two demo cells; not cell 3, whose source is the same
    src = nbformat.read(str(project/'nbs'/'stage_1_fail.ipynb'), as_version=4)
    assert err.cell_id == src.cells[5].id and f'cell 6 (id {err.cell_id})' in str(err)
    assert list(table.status) == ['ok', 'FAILED (cell 6)', 'not run']
    assert (project/'runs'/'cpu'/'stage_1_fail.failed.ipynb').exists() and not (project/'runs'/'cpu'/'stage_1_fail.ipynb').exists()
    _no_leftovers(project)

def test_a_failing_stage_leaves_previous_outputs_untouched(project):
    assert pipeline.reproduce('cpu', only=['write'], overrides={'eval.sample_n': 3}).attrs['error'] is None
    results, figure = project/'results'/'cpu'/'eval'/'out.json', project/'figures'/'fig_cpu.txt'
    good_nb = (project/'runs'/'cpu'/'stage_0_write.ipynb').read_text()
    before = (results.read_text(), figure.read_text())
    table = pipeline.reproduce('cpu', only=['write'], overrides={'eval.sample_n': 99})     # writes new outputs, then fails
    assert 'n_eval 99 fails' in table.attrs['error'].error and table.attrs['error'].cell == 3
    assert (results.read_text(), figure.read_text()) == before and json.loads(before[0])['n_eval'] == 3
    assert (project/'runs'/'cpu'/'stage_0_write.ipynb').read_text() == good_nb            # the last good notebook stays
    assert 'n_eval 99 fails' in (project/'runs'/'cpu'/'stage_0_write.failed.ipynb').read_text()
    _no_leftovers(project)
    assert pipeline.reproduce('cpu', only=['write']).attrs['error'] is None               # success clears the failed copy
    assert not (project/'runs'/'cpu'/'stage_0_write.failed.ipynb').exists()

def test_demo_cells_are_skipped_unless_asked(project):
    table = pipeline.reproduce('cpu', only=['2'])
    assert table.attrs['error'] is None and list(table.demos_skipped) == [1]
    executed = nbformat.read(str(project/'runs'/'cpu'/'stage_2_after.ipynb'), as_version=4)
    assert pipeline.SKIPPED_DEMO in [c.source for c in executed.cells]
    _no_leftovers(project)
    src = nbformat.read(str(project/'nbs'/'stage_2_after.ipynb'), as_version=4)
    assert pipeline.SKIPPED_DEMO not in [c.source for c in src.cells]         # the source notebook is never rewritten
    table = pipeline.reproduce('cpu', only=['2'], demos=True)
    err = table.attrs['error']
    assert isinstance(err, pipeline.StageError) and 'demo ran' in err.error and err.cell == 2

def test_cache_reuse_is_reported_per_stage(project):
    assert list(pipeline.reproduce('cpu', only=['cached']).cache) == ['echo:m 0/2']
    assert list(pipeline.reproduce('cpu', only=['cached']).cache) == ['echo:m 1/2']

def test_leftovers_of_a_killed_run_are_removed(project, capsys):
    stage = project/'results'/'cpu'/'.staging'/'stage_0_write'
    (stage/'results'/'eval').mkdir(parents=True); (stage/'results'/'eval'/'out.json').write_text('half')
    (project/'runs'/'cpu').mkdir(parents=True); (project/'runs'/'cpu'/'.stage_0_write.tmp.ipynb').write_text('{}')
    assert pipeline.reproduce('cpu', only=['2']).attrs['error'] is None
    assert 'removed what an interrupted run left' in capsys.readouterr().err
    assert not stage.exists() and not (project/'results'/'cpu'/'eval').exists()
    _no_leftovers(project)

def test_sigterm_mid_stage_leaves_nothing_half_written(project):
    code = 'import sys; from dagger.pipeline import main; sys.exit(main(sys.argv[1:]))'
    env = os.environ | {'PYTHONPATH': str(ROOT)}
    p = subprocess.Popen([sys.executable, '-c', code, '--only', 'slow'], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    part = project/'results'/'cpu'/'.staging'/'stage_11_slow'/'results'/'eval'/'part.txt'
    deadline = time.time() + 90
    while time.time() < deadline and not (part.exists() and part.read_text()): time.sleep(0.1)
    assert part.exists(), p.communicate(timeout=30)
    kernel = int(part.read_text())
    p.send_signal(signal.SIGTERM)
    out, err = p.communicate(timeout=60)
    assert p.returncode == 128 + signal.SIGTERM, err
    assert 'interrupted by SIGTERM: stage_11_slow.ipynb stopped' in err and 'without encryption' not in err
    assert not psutil.pid_exists(kernel) or psutil.Process(kernel).status() == psutil.STATUS_ZOMBIE
    assert not (project/'results'/'cpu'/'eval').exists() and not list((project/'runs'/'cpu').glob('*.ipynb'))
    _no_leftovers(project)

def test_cli_exit_codes_and_list(project, capfd):
    assert pipeline.main(['--list']) == 0
    listed = capfd.readouterr().out.splitlines()
    assert listed[1].split() == ['1', 'fail', 'stage_1_fail.ipynb'] and len(listed) == 5
    assert pipeline.main(['--only', '0', '--set', 'eval.sample_n=2']) == 0
    assert 'without encryption' not in capfd.readouterr().err         # the kernel talks over IPC
    assert pipeline.main(['--only', '1']) == 1
    assert 'boom' in capfd.readouterr().err
    assert pipeline.main(['--only', '42']) == 2
    assert pipeline.main(['--profile', 'nope']) == 2

def test_notebook_table(project):
    table = pages.notebook_table().splitlines()
    assert table[:2] == ['| kind | # | notebook | module | summary |', '|---|---|---|---|---|']
    assert table[-1] == r'| library | 3 | `lib_03_library.ipynb` | `dagger.library` | A library \| notebook. |'
    assert table[2].startswith('| stage | 0 | `stage_0_write.ipynb` |  |') and len(table) == 2 + 6      # five stages, one library notebook

def test_write_readme(tmp_path):
    nb = tmp_path/'index.ipynb'
    _nb(nb, [new_markdown_cell('# dagger'), new_code_cell('#| hide\nx = 1'), new_code_cell('print(1)')])
    text = pages.write_readme(nb, tmp_path).read_text()
    assert '# dagger' in text and '```python\nprint(1)\n```' in text and 'x = 1' not in text

def test_index_pages_split_at_their_markers(tmp_path):
    nb = tmp_path/'index.ipynb'
    _nb(nb, [new_markdown_cell('# dagger\n\nfront'), new_markdown_cell('<!-- page: figures/README.md -->\n# Results\n\ntables'),
             new_markdown_cell('more tables'), new_markdown_cell('<!-- page: docs/guide.md -->\n# Guide')])
    readme = pages.write_readme(nb, tmp_path)
    assert readme == tmp_path/'README.md' and readme.read_text() == pages.README_HEAD + '# dagger\n\nfront\n'
    assert (tmp_path/'figures'/'README.md').read_text() == pages.README_HEAD + '# Results\n\ntables\n\nmore tables\n'
    assert (tmp_path/'docs'/'guide.md').read_text() == pages.README_HEAD + '# Guide\n'

def test_unknown_override_is_an_error():
    with pytest.raises(ConfigError, match='unknown setting'): load_profile('cpu', n_evl=1)


# ---------- the dry run of the paper profile ----------

def test_dry_run_substitutes_from_one_table(tmp_path, monkeypatch):
    from dagger import pipeline as P
    cfg = P.load_profile('paper-dry')
    built = []
    monkeypatch.setattr(P, 'build_standin', lambda kind, out: built.append(kind) or out)
    o = P.dry_run_overrides(cfg, 'http://127.0.0.1:1/v1', '/served', tmp_path)
    assert o['model'] == str(tmp_path/'standins'/'gemma3') and built[0] == 'gemma3' and o['backend'] == 'transformers'
    assert o['teacher.model'] == o['distractors.model'] == '/served' and o['teacher.backend'] == 'openai'
    assert P.stand_in('an/unknown-model', tmp_path) == P.DRY_RUN_FALLBACK                # no stand-in for it: the embedded model
    roster = {k: v for k, v in o.items() if k.startswith('roster.')}
    assert len(roster) == len(cfg.roster) and all('backend=' in v and 'model=' in v for v in roster.values())
    assert 'backend=openai' in roster['roster.gpt-4.1'] and 'model=/served' in roster['roster.gpt-4.1']
    dry = P.load_profile('paper-dry', **o)
    assert dry.dry_run and dry.results.parts[-2:] == ('paper-dry', 'gemma3') and dry.hub_dir and dry.data_source == 'hub'
    assert P.load_profile('paper').results.parts[-2] == 'paper'                        # never the paper's own folder


def test_the_dry_run_api_server_is_real(tmp_path):
    from dagger import pipeline as P
    from dagger.llm import OpenAIBackend, Sampling, embedded_model_path
    folder = str(embedded_model_path())
    with P.serve(folder, log=tmp_path/'server.log') as url:
        [[c]] = OpenAIBackend(folder, base_url=url, api_key_env='DAGGER_NO_KEY').generate(['Say hi'], Sampling(max_new_tokens=4))
    assert c.finish_reason in ('stop', 'length') and c.text and 0 < c.tokens <= 4


def test_training_passes_cover_every_trained_roster_system(tmp_path):
    from dagger import pipeline as P
    assert P.training_passes(load_profile('cpu')) == []                          # no roster: the profile's own pass only
    paper = load_profile('paper')
    passes = {label: (names, o) for label, names, o in P.training_passes(paper)}
    assert passes['gemma-3-4b-it'] == (['dataset', 'teacher', 'sft', 'grpo'], {'model': 'google/gemma-3-4b-it'})
    assert passes['gemma-3-4b-it-sft_noannot'][1] == {'model': 'google/gemma-3-4b-it', 'sft.annotations': False}
    assert passes['gemma-3-12b-it-sft_noannot'][1] == {'model': 'google/gemma-3-12b-it', 'sft.annotations': False}
    assert {o['model'] for label, (_, o) in passes.items() if label.endswith('-grpo_base')} == {'google/gemma-3-4b-it', 'google/gemma-3-12b-it'}
    jobs = P._jobs('paper', P.stages(), {}, tmp_path, True)
    order = [(P.stage_name(nb), f.name) for nb, _, f in jobs]
    assert order.index(('grpo', tmp_path.name)) < order.index(('sft', 'gemma-3-4b-it')) < order.index(('evaluation', tmp_path.name))
    assert len(P._jobs('paper', P.stages(), {}, tmp_path, False)) == len(P.stages())   # --only: no passes


def test_resume_skips_the_stages_that_finished_with_the_same_settings(project, monkeypatch, capsys):
    "--resume: a killed or failed run continues at the first stage that did not finish; a rerun stage makes every later one rerun."
    ran, fail = [], []
    def fake(nb, cfg, ov, folder, kernel, demos):
        ran.append(nb.name.split('_')[1])
        if nb.name in fail: raise pipeline.StageError(nb.name, 2, 'boom')
        (folder/nb.name).write_text('{}')
        return dict(notebook=nb.name, status='ok', seconds=0.0, demos_skipped=0, cache='', files=[])
    monkeypatch.setattr(pipeline, 'run_stage', fake)
    four = ['0', '1', '2', '10']
    def go(**kw):
        ran.clear()
        return pipeline.reproduce('cpu', only=kw.pop('only', four), **kw)
    fail[:] = ['stage_2_after.ipynb']
    assert list(go().status) == ['ok', 'ok', 'FAILED (cell 2)', 'not run'] and ran == ['0', '1', '2']
    fail.clear()
    assert list(go(resume=True).status) == ['finished earlier', 'finished earlier', 'ok', 'ok'] and ran == ['2', '10']
    assert list(go(resume=True).status) == ['finished earlier'] * 4 and ran == []
    go(resume=True, overrides={'eval.sample_n': 5}); assert ran == ['0', '1', '2', '10']          # other settings: nothing is trusted
    go(overrides={'eval.sample_n': 5}, only=['1']); assert ran == ['1']                            # 1 reran: 2 and 10 are stale
    go(resume=True, overrides={'eval.sample_n': 5}); assert ran == ['2', '10']
    go(); assert ran == ['0', '1', '2', '10']                                                      # without --resume every stage runs
    (project/'runs'/'cpu'/pipeline.LEDGER).write_text('{not json')
    go(resume=True); assert ran == ['0', '1', '2', '10'] and 'damaged' in capsys.readouterr().err
