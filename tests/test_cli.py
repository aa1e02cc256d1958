"""Every bad argument of the console scripts, tried as a new user would: one line that names the argument, exit status 2,
and nothing written (no output folder, no run folder that then demands --resume)."""
import subprocess, sys
from pathlib import Path
import pytest
from dagger.config import project_root

BIN = Path(sys.executable).parent


def run(script: str, args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([str(BIN/script), *args], cwd=cwd, capture_output=True, text=True, timeout=300)


def check(r: subprocess.CompletedProcess, script: str, arg: str):
    lines = r.stderr.strip().splitlines()
    assert r.returncode == 2, (r.returncode, r.stderr[-2000:])
    assert len(lines) == 1 and lines[0].startswith(f'{script}: error: '), r.stderr[-2000:]
    assert arg in lines[0], (arg, lines[0])


EVAL_CASES = {
    'missing model folder': (['--model', 'hf:/nonexistent/model', '--n', '1'], '--model'),
    'folder without a model': (['--model', 'hf:{tmp}', '--n', '1'], '--model'),
    'not a hub id': (['--model', 'vllm:not a model', '--n', '1'], '--model'),
    'unknown embedded model': (['--model', 'embedded:gpt-5', '--n', '1'], '--model'),
    'no model': (['--n', '1'], '--model'),
    'negative count': (['--model', 'embedded:gemma3-270m', '--n', '-3'], '--n'),
    'count not a number': (['--model', 'embedded:gemma3-270m', '--n', 'abc'], '--n'),
    'negative token cap': (['--model', 'embedded:gemma3-270m', '--n', '1', '--max-new-tokens', '-5'], '--max-new-tokens'),
    'unknown method': (['--model', 'embedded:gemma3-270m', '--n', '1', '--methods', 'cot,magic'], '--methods'),
    'unknown split': (['--model', 'embedded:gemma3-270m', '--n', '1', '--splits', 'mgsm_xx'], '--splits'),
    'unknown profile': (['--model', 'embedded:gemma3-270m', '--n', '1', '--profile', 'nope'], '--profile'),
    'output is a file': (['--model', 'embedded:gemma3-270m', '--n', '1', '--out', '{tmp}/a-file'], '--out'),
    'unknown option': (['--model', 'embedded:gemma3-270m', '--bogus'], '--bogus'),
}


@pytest.mark.parametrize('case', sorted(EVAL_CASES))
def test_dagger_eval_bad_input_is_one_line(case, tmp_path):
    args, arg = EVAL_CASES[case]
    (tmp_path/'a-file').write_text('')
    r = run('dagger-eval', [a.format(tmp=tmp_path) for a in args], tmp_path)
    check(r, 'dagger-eval', arg)
    assert sorted(p.name for p in tmp_path.iterdir()) == ['a-file'], 'dagger-eval left files behind'


REPRODUCE_CASES = {
    'unknown profile': (['--profile', 'nope'], '--profile'),
    'unknown setting': (['--set', 'nosuch=1'], '--set'),
    'negative count': (['--set', 'eval.sample_n=-3'], '--set'),
    'zero batch': (['--set', 'batch_size=0'], '--set'),
    'unknown method': (['--set', 'eval.methods=magic'], '--set'),
    'not key=value': (['--set', 'eval.sample_n'], '--set'),
    'unknown stage': (['--only', 'nosuchstage'], '--only'),
    'output is a file': (['--out', '{tmp}/a-file', '--only', 'dataset'], '--out'),
    'unknown gpu': (['--profile', 'paper', '--plan', '--gpu', 'nope'], '--gpu'),
    'unknown option': (['--bogus'], '--bogus'),
}


@pytest.mark.parametrize('case', sorted(REPRODUCE_CASES))
def test_dagger_reproduce_bad_input_is_one_line(case, tmp_path):
    args, arg = REPRODUCE_CASES[case]
    (tmp_path/'a-file').write_text('')
    runs = project_root()/'runs'
    before = sorted(runs.iterdir())
    out = [] if '--out' in args or '--plan' in args else ['--out', str(tmp_path/'out')]
    r = run('dagger-reproduce', [a.format(tmp=tmp_path) for a in args] + out, tmp_path)
    check(r, 'dagger-reproduce', arg)
    assert sorted(p.name for p in tmp_path.iterdir()) == ['a-file'] and sorted(runs.iterdir()) == before
