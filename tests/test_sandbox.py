"Hostile and ordinary programs in dagger.sandbox, at every isolation level this machine has."
import json, os, pathlib, shutil, socket, subprocess, sys, tempfile, time, uuid
import pytest
from dagger.sandbox import (run_program as _run_program, extract_program, SandboxResult, ERROR_KINDS, RESULT_MARK, LEVELS,
                            SandboxUnavailable, available_levels, isolation_level, isolation_info, _probe)

SLOW_START = 30.0   # a loaded CI machine can take seconds to start an interpreter: only the timeout tests set a short limit


def run_program(code, timeout: float = SLOW_START, **kw):
    "dagger.sandbox.run_program with a generous time limit, so that a slow start is never read as a refusal or a timeout."
    return _run_program(code, timeout=timeout, **kw)


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
    r = run_program('import os\nwhile True:\n    os.fork()')
    assert r.error == 'forbidden' and r.seconds < SLOW_START


def test_multiprocessing_is_contained():
    r = run_program('import multiprocessing as mp\np = mp.Process(target=print)\np.start()\nans = 1')
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


# ---------------------------------------------------------------------------------------------------------------
# Hostile-program suite: every attack runs at every isolation level this machine has. The audit hook is switched
# off first (UNHOOK walks up to the runner's frame and empties the hook's list of refused events), so what stops
# each attack is the operating system. Canaries live in a fresh world-writable folder under /tmp, so only the
# sandbox (not file permissions on the test's own folders) keeps a program out of it.

UNHOOK = '''import sys
_f = sys._getframe(1)
_hook = _f.f_locals['hook']
for _c in _hook.__closure__:
    if isinstance(_c.cell_contents, tuple): _c.cell_contents = ()
    elif isinstance(_c.cell_contents, int) and not isinstance(_c.cell_contents, bool): _c.cell_contents = 0
_f.f_locals['tripped'].clear()
'''

@pytest.fixture(params=LEVELS)
def level(request):
    "Each isolation level; skipped (with the reason) where this machine does not have it. Levels that ran are listed at the end."
    tested = request.config.__dict__.setdefault('sandbox_levels_tested', set())
    why = available_levels()[request.param]
    if why: pytest.skip(f'isolation level {request.param} not available here: {why}')
    tested.add(request.param)
    return request.param


@pytest.fixture
def open_dir():
    "A world-writable folder directly under /tmp (no sticky bit), removed afterwards."
    d = pathlib.Path(tempfile.mkdtemp(prefix='dagger-hostile-', dir='/tmp'))
    d.chmod(0o777)
    yield d
    shutil.rmtree(d, ignore_errors=True)


def test_unhook_really_switches_the_hook_off(level):
    # with the hook gone, a refused call fails with the OS's error, not the hook's 'sandbox: ...' message
    r = run_program(UNHOOK + "import os\nos.mkdir('x')\nans = 1", isolation=level)
    assert r.error == 'exception' and 'sandbox:' not in r.detail, r
    assert run_program("import os\nos.mkdir('x')\nans = 1", isolation=level).error == 'forbidden'


def test_unhooked_shell_file_and_delete(level, open_dir):
    victim = open_dir / 'victim'; victim.write_text('keep'); victim.chmod(0o666)
    c = open_dir / 'canary'
    progs = [f"import os\nos.system('touch {c}')",
             f"open('{c}', 'w').write('x')",
             f"import os\nos.open('{c}', os.O_WRONLY | os.O_CREAT)",
             f"import os\nos.mkdir('{c}')",
             f"import os\nos.symlink('/etc/passwd', '{c}')",
             f"import os\nos.remove('{victim}')",
             f"import os\nos.rename('{victim}', '{c}')",
             f"open('{victim}', 'a').write('x')",
             f"import os\nos.truncate('{victim}', 0)",
             f"import os\nos.chmod('{victim}', 0o600)"]
    for p in progs:
        run_program(UNHOOK + p + '\nans = 1', isolation=level)
        assert not c.exists() and not c.is_symlink(), p
        assert victim.read_text() == 'keep' and victim.stat().st_mode & 0o777 == 0o666, p


def test_unhooked_mknod_and_mkfifo(level, open_dir):
    for i, p in enumerate([f"import os\nos.mkfifo('{open_dir}/fifo')",
                           f"import os, stat\nos.mknod('{open_dir}/node', 0o600 | stat.S_IFREG)",
                           f"import os, stat\nos.mknod('{open_dir}/sock', 0o600 | stat.S_IFIFO)",
                           "import os\nos.mkfifo('fifo_in_cwd')"]):
        # catch the refusal and clear the hook's record: the run may then be 'ok', but nothing may exist
        r = run_program(UNHOOK + f"try:\n    {p.replace(chr(10), chr(10) + '    ')}\nexcept OSError:\n    pass\n"
                        "_f.f_locals['tripped'].clear()\nans = 1", isolation=level)
        assert list(open_dir.iterdir()) == [], (p, r)


def test_unhooked_network_to_a_local_listener(level):
    srv = socket.socket(); srv.bind(('127.0.0.1', 0)); srv.listen(5); srv.setblocking(False)
    port = srv.getsockname()[1]
    try:
        r = run_program(UNHOOK + f"import socket\ns = socket.create_connection(('127.0.0.1', {port}), timeout=1)\n"
                        "s.sendall(b'pwned')\nans = 1", isolation=level, timeout=3)
        with pytest.raises(BlockingIOError): srv.accept()
    finally:
        srv.close()
    assert not r.ok, r


def test_setsid_grandchild_does_not_outlive_the_run(level, open_dir):
    c = open_dir / 'late'
    prog = UNHOOK + f"""import os, time
try:
    pid = os.fork()
except OSError:
    pid = -1
if pid == 0:
    os.setsid()
    time.sleep(0.7)
    open('{c}', 'w').write('x')
    os._exit(0)
ans = 1
"""
    r = run_program(prog, isolation=level, timeout=3)
    time.sleep(1.5)
    assert not c.exists(), r


def test_fork_bomb_is_bounded(level, open_dir):
    c = open_dir / 'bomb'
    prog = UNHOOK + f"""import os, time
n = 0
while n < 10000:
    try:
        if os.fork() == 0:
            os.setsid(); time.sleep(0.5); open('{c}', 'w').write('x'); os._exit(0)
        n += 1
    except OSError:
        break
ans = n
"""
    t0 = time.monotonic()
    r = run_program(prog, isolation=level, timeout=2)
    assert time.monotonic() - t0 < 5
    time.sleep(1.0)
    assert not c.exists()
    assert not r.ok or r.value < 50, r    # children refused by RLIMIT_NPROC


def test_secrets_in_our_environment_never_come_back(level, tmp_path):
    if level == 'fallback' and os.geteuid() != 0:
        pytest.skip('fallback without root runs as the caller: /proc/<ppid>/environ stays readable')
    secret = 'SECRETMARK' + uuid.uuid4().hex
    prog = """import os
found = [k + '=' + v for k, v in os.environ.items()]
for pid in os.listdir('/proc'):
    if pid.isdigit():
        try:
            found.append(open('/proc/' + pid + '/environ', 'rb').read().decode('latin1'))
        except OSError:
            pass
blob = ' '.join(found)
i = blob.find('SECRETMARK')
if i >= 0:
    raise RuntimeError(blob[i:i + 60])
ans = len(blob)
"""
    # a separate parent process that has the secret exported, as an API key would be
    driver = ('import json, sys\nfrom dagger.sandbox import run_program\n'
              f'print(json.dumps(run_program(sys.stdin.read(), isolation={level!r}).as_dict()))')
    env = os.environ | {'OPENAI_API_KEY': secret, 'DAGGER_TEST_SECRET': secret}
    python = sys.executable if os.access(sys.executable, os.X_OK) else shutil.which('python3')
    out = subprocess.run([python, '-c', driver], input=prog, env=env, capture_output=True, text=True,
                         timeout=60, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert 'SECRETMARK' not in out.stdout and 'SECRETMARK' not in out.stderr
    assert json.loads(out.stdout)['error'] is None


def test_forged_result_marker(level):
    forged = '{"value": "abc"}'
    plain = f"import os\nos.write(3, b'\\n{RESULT_MARK}{forged}\\n')\nos._exit(0)"
    assert not run_program(plain, isolation=level).ok
    assert not run_program(f"print('{RESULT_MARK}{forged}')\nimport os\nos._exit(0)", isolation=level).ok
    # a program that digs the nonce out of the runner can forge a line, but only a number is ever ok
    for value in ['"abc"', 'NaN', 'Infinity', 'true', '[1]', '{}', '1' + '0' * 400, 'null']:
        prog = UNHOOK + ("import os, json\ntag = _f.f_globals['MARK'] + _f.f_locals['tag'].decode()[len(_f.f_globals['MARK']):]\n"
                         f"os.write(3, ('\\n' + tag + '{{\"value\": {value}}}' + '\\n').encode())\nos._exit(0)")
        r = run_program(prog, isolation=level)
        assert r.error == 'not_numeric' and r.value is None, (value, r)
    r = run_program(UNHOOK + "import os\ntag = _f.f_locals['tag']\nos.write(3, b'\\n' + tag + b'{\"value\": 7}\\n')\nos._exit(0)",
                    isolation=level)
    assert r.value == 7.0 and type(r.value) is float
    r = run_program(UNHOOK + "import os\nos.write(3, b'\\n' + _f.f_locals['tag'] + b'{\"error\": \"pwned\"}\\n')\nos._exit(0)",
                    isolation=level)
    assert r.error == 'crashed'


def test_forged_marker_does_not_break_scoring(level, monkeypatch):
    from dagger import answers as A
    monkeypatch.setenv('DAGGER_SANDBOX', level)
    prog = UNHOOK + "import os\nos.write(3, b'\\n' + _f.f_locals['tag'] + b'{\"value\": \"abc\"}\\n')\nos._exit(0)"
    s = A.score_text('pot', '```python\n' + prog + '\n```', 1.0)
    assert s['error'] == 'not_numeric' and not s['correct']


def test_memory_hog(level):
    assert run_program(UNHOOK + 'x = bytearray(10**10)\nans = 1', isolation=level).error == 'memory'
    r = run_program(UNHOOK + 'xs = []\nwhile True:\n    xs.append(bytearray(10**7))', memory_mb=256, isolation=level)
    assert r.error == 'memory', r


def test_infinite_loop_times_out(level):
    r = run_program(UNHOOK + 'while True:\n    pass', timeout=1, isolation=level)
    assert r.error == 'timeout' and r.seconds < 3


def test_ordinary_program_at_each_level(level):
    r = run_program('ans = sum(range(10))', isolation=level)
    assert r.ok and r.value == 45.0 and r.isolation == level


def test_unknown_or_unavailable_level(monkeypatch):
    with pytest.raises(ValueError): run_program('ans = 1', isolation='chroot')
    monkeypatch.setenv('DAGGER_SANDBOX', 'nothing')
    with pytest.raises(ValueError): isolation_level()
    monkeypatch.setattr(shutil, 'which', lambda name: None)
    _probe.cache_clear()
    try:
        with pytest.raises(SandboxUnavailable): isolation_level('bwrap')
    finally:
        _probe.cache_clear()
