"Hostile and ordinary programs in dagger.sandbox (fast: about 10 s)."
import os, pathlib, uuid
import pytest
from dagger.sandbox import run_program, extract_program, SandboxResult, ERROR_KINDS


def canary():
    return pathlib.Path('/tmp') / f'dagger_sandbox_canary_{uuid.uuid4().hex}'


@pytest.mark.parametrize('code,value', [
    ('ans = 2 + 3', 5.0),
    ('ans = 7 / 2', 3.5),
    ('ans = -12', -12.0),
    ('from decimal import Decimal\nans = Decimal("1.25")', 1.25),
    ('import math\nans = math.sqrt(16)', 4.0),
    ('ans = complex(3, 0)', 3.0),
    ('def solution():\n    return 40 + 2', 42.0),
    ('x = "বাংলা"  # non-ASCII source\nans = len(x)', 5.0),
    ('print("x" * 10**7)\nans = 1', 1.0),          # large printed output goes to /dev/null
    ('import sys\nans = 9\nsys.exit(3)', 9.0),     # sys.exit after ans keeps the answer
])
def test_ordinary(code, value):
    r = run_program(code)
    assert r.ok and r.value == value, r


@pytest.mark.parametrize('code,kind', [
    ('ans = (', 'syntax'),
    ('ans = undefined_name', 'exception'),
    ('x = 5', 'no_answer'),
    ('import sys\nsys.exit(0)', 'no_answer'),
    ('import os\nos._exit(0)', 'no_answer'),
    ('ans = [1, 2]', 'not_numeric'),
    ('ans = True', 'not_numeric'),
    ('ans = float("inf")', 'not_numeric'),
    ('ans = 10 ** 400', 'not_numeric'),
    ('ans = complex(1, 2)', 'not_numeric'),
])
def test_failures_are_typed(code, kind):
    assert run_program(code).error == kind


def test_shell_is_forbidden():
    c = canary()
    r = run_program(f"import os\nos.system('touch {c}')\nans = 1")
    assert r.error == 'forbidden' and not c.exists()


def test_subprocess_is_forbidden():
    c = canary()
    r = run_program(f"import subprocess\nsubprocess.run(['touch', '{c}'])\nans = 1")
    assert r.error == 'forbidden' and not c.exists()


def test_caught_violation_still_counts():
    c = canary()
    r = run_program(f"import os\ntry:\n    os.system('touch {c}')\nexcept Exception:\n    pass\nans = 1")
    assert r.error == 'forbidden' and not c.exists()


@pytest.mark.parametrize('how', ["open('{c}', 'w').write('x')", "open('{c}', 'a')",
                                 "import os\nos.open('{c}', os.O_WRONLY | os.O_CREAT)",
                                 "import pathlib\npathlib.Path('{c}').write_text('x')"])
def test_file_writes_are_forbidden(how):
    c = canary()
    r = run_program(how.format(c=c) + '\nans = 1')
    assert r.error == 'forbidden' and not c.exists()


def test_relative_write_in_cwd_is_forbidden():
    assert run_program("open('out.txt', 'w').write('x')\nans = 1").error == 'forbidden'


def test_deleting_files_is_forbidden(tmp_path):
    victim = tmp_path / 'keep.txt'; victim.write_text('keep')
    for how in [f"import os\nos.remove('{victim}')", f"import shutil\nshutil.rmtree('{tmp_path}')",
                f"import os\nos.rename('{victim}', '{victim}.bak')", f"open('{victim}', 'w')"]:
        assert run_program(how + '\nans = 1').error == 'forbidden'
    assert victim.read_text() == 'keep'


def test_reading_is_allowed_but_only_a_number_returns():
    r = run_program("ans = len(open('/etc/hostname').read()) if __import__('os').path.exists('/etc/hostname') else 0")
    assert r.ok and isinstance(r.value, float)


def test_network_is_forbidden():
    r = run_program("import socket\ns = socket.create_connection(('127.0.0.1', 9), timeout=1)\nans = 1")
    assert r.error == 'forbidden'


def test_infinite_loop_times_out():
    r = run_program('while True:\n    pass', timeout=1)
    assert r.error == 'timeout' and r.seconds < 3


def test_sleep_hits_the_wall_clock():
    r = run_program('import time\ntime.sleep(60)\nans = 1', timeout=1)
    assert r.error == 'timeout' and r.seconds < 3


def test_fork_bomb_is_contained():
    r = run_program('import os\nwhile True:\n    os.fork()', timeout=2)
    assert r.error == 'forbidden' and r.seconds < 2


def test_multiprocessing_is_contained():
    r = run_program('import multiprocessing as mp\np = mp.Process(target=print)\np.start()\nans = 1', timeout=2)
    assert r.error == 'forbidden'


def test_memory_bomb_is_contained():
    r = run_program('x = bytearray(10**10)\nans = 1')
    assert r.error == 'memory'
    r = run_program('xs = []\nwhile True:\n    xs.append(bytearray(10**7))', memory_mb=256)
    assert r.error == 'memory'


def test_huge_output_to_a_raw_fd_is_capped():
    r = run_program("import os\nwhile True:\n    os.write(3, b'y' * 65536)", timeout=1, max_output=4096)
    assert r.error == 'timeout'


def test_flood_then_answer_still_parses():
    r = run_program("import os\nfor _ in range(200):\n    os.write(3, b'z' * 65536)\nans = 6", max_output=4096)
    assert r.value == 6.0, r


def test_limits_cannot_be_raised():
    r = run_program('import resource\nresource.setrlimit(resource.RLIMIT_AS, (-1, -1))\nans = 1')
    assert r.error == 'forbidden'


def test_raw_ctypes_calls_are_forbidden():
    c = canary()
    r = run_program(f"import ctypes\nctypes.CDLL(None).system(b'touch {c}')\nans = 1")
    assert r.error == 'forbidden' and not c.exists()


def test_environment_is_minimal():
    os.environ['DAGGER_TEST_SECRET'] = 'x'
    try:
        r = run_program("import os\nans = len([k for k in os.environ if 'PROXY' in k.upper() or k == 'DAGGER_TEST_SECRET'])")
    finally:
        del os.environ['DAGGER_TEST_SECRET']
    assert r.value == 0.0


def test_bad_input_is_a_type_error():
    with pytest.raises(TypeError): run_program(b'ans = 1')


def test_result_kinds():
    assert set(ERROR_KINDS) >= {'timeout', 'memory', 'forbidden', 'exception', 'no_answer', 'not_numeric'}
    assert SandboxResult(value=1.0).ok and not SandboxResult(error='timeout').ok


def test_extract_program():
    assert extract_program("text\n```python\nans = 1\n```\nmore\n```py\nans = 2\n```") == 'ans = 2'
    assert extract_program("```\nans = 3\n```") == 'ans = 3'
    assert extract_program("ans = 4") == 'ans = 4'
    assert extract_program("") == ''
