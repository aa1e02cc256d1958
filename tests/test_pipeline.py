"Integration tests of the papermill runner on a throwaway project (real papermill, real kernel)."
import json, os, subprocess, sys
from pathlib import Path
import nbformat, pytest
from nbformat.v4 import new_notebook, new_code_cell, new_markdown_cell
from dagger import pipeline
from dagger.config import ConfigError, load_profile

ROOT = Path(__file__).resolve().parents[1]

def _nb(path, cells):
    nb = new_notebook(cells=cells)
    nb.metadata = {"kernelspec": {"display_name": "python3", "language": "python", "name": "python3"}}
    nbformat.write(nb, str(path))

def _params():
    return new_code_cell("profile = 'cpu'\noverrides = {}", metadata={"tags": ["parameters"]})

@pytest.fixture
def project(tmp_path, monkeypatch):
    (tmp_path/'nbs').mkdir()
    (tmp_path/'pyproject.toml').write_text('[project]\nname = "x"\n')
    (tmp_path/'settings.ini').write_text((ROOT/'settings.ini').read_text())
    writer = ("from dagger.config import load_profile, write_json\n"
              "cfg = load_profile(profile, **overrides)\n"
              "write_json(cfg.results/'out.json', dict(n_eval=cfg.eval.sample_n, cwd=__import__('os').getcwd()))")
    _nb(tmp_path/'nbs'/'00_write.ipynb', [new_markdown_cell('# Write'), _params(), new_code_cell(writer)])
    _nb(tmp_path/'nbs'/'01_fail.ipynb', [_params(), new_code_cell('x = 1'), new_code_cell("raise ValueError('boom')")])
    _nb(tmp_path/'nbs'/'02_after.ipynb', [_params(), new_code_cell('#| demo\nraise ValueError("demo ran")'), new_code_cell('pass')])
    _nb(tmp_path/'nbs'/'03_library.ipynb', [new_code_cell('pass')])   # no parameters cell: not a stage
    _nb(tmp_path/'nbs'/'helpers.ipynb', [_params()])                 # not numbered: not a stage
    monkeypatch.setenv('DAGGER_ROOT', str(tmp_path))
    return tmp_path

def test_stages_are_numbered_notebooks_with_parameters(project):
    assert [p.name for p in pipeline.stages()] == ['00_write.ipynb', '01_fail.ipynb', '02_after.ipynb']

def test_reproduce_passes_profile_and_overrides_and_reports_files(project):
    table = pipeline.reproduce('cpu', only=['00'], overrides={'n_eval': 3})
    assert table.attrs['error'] is None
    row = table.iloc[0]
    assert (row.notebook, row.status) == ('00_write.ipynb', 'ok')
    assert row.files == ['results/cpu/out.json']
    out = json.loads((project/'results'/'cpu'/'out.json').read_text())
    assert out['n_eval'] == 3 and Path(out['cwd']) == project/'nbs'
    executed = nbformat.read(str(project/'runs'/'cpu'/'00_write.ipynb'), as_version=4)
    assert any('injected-parameters' in c.metadata.get('tags', []) for c in executed.cells)
    # the source notebook is never rewritten
    src = nbformat.read(str(project/'nbs'/'00_write.ipynb'), as_version=4)
    assert not any(c.get('outputs') for c in src.cells if c.cell_type == 'code')

def test_reproduce_stops_at_first_failure_with_cell_and_error(project):
    table = pipeline.reproduce('cpu')
    err = table.attrs['error']
    assert isinstance(err, pipeline.StageError) and err.notebook == '01_fail.ipynb'
    assert 'ValueError: boom' in err.error and err.cell == 3
    assert list(table.status) == ['ok', 'FAILED (cell 3)', 'not run']

def test_demo_cells_are_skipped_unless_asked(project):
    table = pipeline.reproduce('cpu', only=['02'])
    assert table.attrs['error'] is None and list(table.demos_skipped) == [1]
    executed = nbformat.read(str(project/'runs'/'cpu'/'02_after.ipynb'), as_version=4)
    assert pipeline.SKIPPED_DEMO in [c.source for c in executed.cells]
    assert not list((project/'runs'/'cpu').glob('.*.ipynb'))                  # the edited copy is removed
    src = nbformat.read(str(project/'nbs'/'02_after.ipynb'), as_version=4)
    assert pipeline.SKIPPED_DEMO not in [c.source for c in src.cells]         # the source notebook is never rewritten
    table = pipeline.reproduce('cpu', only=['02'], demos=True)
    err = table.attrs['error']
    assert isinstance(err, pipeline.StageError) and 'demo ran' in err.error and err.cell == 2

def test_cli_exit_codes(project, capsys):
    assert pipeline.main(['--list']) == 0
    assert '01_fail.ipynb' in capsys.readouterr().out
    assert pipeline.main(['--only', '00', '--set', 'n_eval=2']) == 0
    assert pipeline.main(['--only', '01']) == 1
    assert 'boom' in capsys.readouterr().err
    assert pipeline.main(['--only', '42']) == 2
    assert pipeline.main(['--profile', 'nope']) == 2

def test_unknown_override_is_an_error():
    with pytest.raises(ConfigError, match='unknown setting'): load_profile('cpu', n_evl=1)
