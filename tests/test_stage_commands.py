"""`python -m dagger.sft` and `python -m dagger.grpo` write every file the stage notebooks write.

The notebooks' run cells call one exported function per stage (`sft_stage`, `grpo_stage`) and write nothing
themselves; the command lines call the same functions. Run on a stand-in model (dagger.standins: a tiny random
Gemma-3 in the hub's layout) with the gold teacher and the dry recipes, both commands leave the stage's full set of
files."""
import json, subprocess, sys
from pathlib import Path
import pytest
from dagger.config import load_profile
from dagger.files import write_jsonl
from dagger.data import evaluable, load_split
from dagger import layout

ROOT = Path(__file__).resolve().parents[1]
SFT_FILES = {'adapter', 'merged', 'history.csv', 'run.json', 'records.jsonl', 'metrics.csv', 'curve', 'curve.csv',
             'curve_records.jsonl'}
GRPO_FILES = {'merged', 'history.csv', 'run.json', 'records.jsonl', 'metrics.csv', 'nodes.csv'}
WRITES = ('write_jsonl(', 'write_json(', 'atomic_write_text(', '.to_csv(')


def cells(stage: str) -> list[str]:
    return [''.join(c['source']) for c in json.loads((ROOT/'nbs'/f'{stage}.ipynb').read_text())['cells'] if c['cell_type'] == 'code']


@pytest.mark.parametrize('stage, fn', [('stage_4_sft', 'sft_stage'), ('stage_5_grpo', 'grpo_stage')])
def test_the_notebook_and_the_command_call_one_function(stage, fn):
    run = [c for c in cells(stage) if c.startswith('#| slow')]
    assert sum(f'{fn}(cfg)' in c for c in run) == 1, f'{stage}: the run cells should call {fn}(cfg) once'
    assert not [c for c in run if any(w in c for w in WRITES)], f'{stage}: a run cell writes a file itself'
    [main] = [c for c in cells(stage) if c.startswith('#| export') and 'def main(' in c]
    assert f'{fn}(cfg)' in main


@pytest.fixture(scope='module')
def standin_profile(tmp_path_factory):
    "Overrides of the cpu profile for a stand-in Gemma-3, its teacher sets and a prepared evaluation split."
    from dagger.standins import build_standin
    from dagger.teacher import run_teacher
    tmp = tmp_path_factory.mktemp('stage-commands')
    model = build_standin('gemma3', tmp/'gemma3')
    over = {'model': str(model), 'results_dir': str(tmp/'results'), 'sft.recipe': 'dry', 'grpo.recipe': 'dry',
            'teacher.n_sft': 4, 'teacher.n_val': 2, 'teacher.n_grpo': 2, 'teacher.msvamp_split': '', 'sft.n_train': 2,
            'sft.eval_sample_n': 2, 'sft.eval_max_new_tokens': 8, 'device': 'cpu', 'batch_size': 2,
            'sft.curve_examples': '1, 2', 'sft.curve_splits': 'msvamp_bn', 'sft.curve_sample_n': 2}
    cfg = load_profile('cpu', **over)
    run_teacher(cfg, progress=False)
    write_jsonl(layout.output(cfg, 'dataset')/f'{cfg.sft.eval_split}.jsonl',
                [p.to_dict() for p in evaluable(load_split(cfg.sft.eval_split, seed=0, cfg=cfg), cfg)[:2]])
    return cfg, [f'{k}={v}' for k, v in over.items()]


def command(module: str, args: list[str]) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, '-m', module, '--profile', 'cpu', *args], capture_output=True, text=True,
                          timeout=900, cwd=ROOT)


def test_the_sft_and_grpo_commands_write_the_stage_files(standin_profile):
    cfg, args = standin_profile
    r = command('dagger.sft', args)
    assert r.returncode == 0, r.stderr[-3000:]
    out = layout.path(cfg, 'sft')
    assert {p.name for p in out.iterdir()} >= SFT_FILES
    run = json.loads((out/'run.json').read_text())
    assert {'before_after', 'targets', 'eval'} <= set(run) and run['eval']['n'] == 2
    import pandas as pd                                   # the learning curve: both kept adapters, evaluated
    curve = pd.read_csv(out/'curve.csv')
    assert curve['examples'].tolist() == [1, 2] and (curve['n'] == 2).all() and [p['step'] for p in run['curve']] == [1, 2]
    assert not list((out/'curve').glob('merged-*'))       # the merged copies are removed once evaluated
    r = command('dagger.grpo', args)
    assert r.returncode == 0, r.stderr[-3000:]
    out = layout.path(cfg, 'grpo')
    assert {p.name for p in out.iterdir()} >= GRPO_FILES
    assert {'eval', 'nodes'} <= set(json.loads((out/'run.json').read_text()))
