"""`dagger-eval` (dagger.any_model) from the command line: one-line errors for what a user gets wrong, resume without
asking again, a real local server; and the lm-evaluation-harness task scoring the harness's own outputs as dagger does."""
import glob, json, os, subprocess, sys, threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
import pytest

ROOT = Path(__file__).resolve().parents[1]
EXE = Path(sys.executable).parent


def dagger_eval(*args, env=None):
    return subprocess.run([str(EXE/'dagger-eval'), *args], capture_output=True, text=True, cwd=ROOT, timeout=900,
                          env={**os.environ, **(env or {})})


class Fake:
    "An OpenAI-compatible server on 127.0.0.1 that answers every chat request with `reply` (HTTP `status` on /models)."
    def __init__(self, reply='উত্তর হল ৫।', status=200):
        self.reply, self.status, self.chats = reply, status, 0
        fake = self

        class H(BaseHTTPRequestHandler):
            def log_message(self, *a): pass
            def _send(self, code, body):
                data = json.dumps(body).encode()
                self.send_response(code); self.send_header('Content-Type', 'application/json')
                self.send_header('Content-Length', str(len(data))); self.end_headers(); self.wfile.write(data)
            def do_GET(self):
                self._send(fake.status, {'data': [{'id': 'fake'}]} if fake.status == 200 else {'error': {'message': 'bad key'}})
            def do_POST(self):
                self.rfile.read(int(self.headers['Content-Length']))
                fake.chats += 1
                self._send(200, {'id': 'x', 'object': 'chat.completion', 'created': 0, 'model': 'fake',
                                 'choices': [{'index': 0, 'finish_reason': 'stop', 'message': {'role': 'assistant', 'content': fake.reply}}],
                                 'usage': {'prompt_tokens': 10, 'completion_tokens': 3, 'total_tokens': 13}})
        self.server = ThreadingHTTPServer(('127.0.0.1', 0), H)
        self.url = f'http://127.0.0.1:{self.server.server_address[1]}/v1'
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


@pytest.fixture
def fake():
    f = Fake(); yield f; f.server.shutdown()


def test_what_the_user_gets_wrong_is_one_line(tmp_path):
    bad = dagger_eval('--model', 'gemma-3', '--out', str(tmp_path/'a'))
    assert bad.returncode == 2 and bad.stderr.strip().count('\n') == 0 and 'expected embedded:NAME' in bad.stderr
    nosplit = dagger_eval('--model', 'embedded:gemma3-270m', '--splits', 'mgsm_xx', '--out', str(tmp_path/'b'))
    assert nosplit.returncode == 2 and "unknown split 'mgsm_xx'" in nosplit.stderr
    down = dagger_eval('--model', 'openai:m', '--base-url', 'http://127.0.0.1:9/v1', '--out', str(tmp_path/'c'), env={'OPENAI_API_KEY': 'x'})
    assert down.returncode == 2 and 'cannot reach http://127.0.0.1:9/v1' in down.stderr and 'Traceback' not in down.stderr


def test_a_refused_key_and_empty_replies(tmp_path):
    refused = Fake(status=401)
    r = dagger_eval('--model', 'openai:fake', '--base-url', refused.url, '--api-key-env', 'MY_KEY', '--n', '1', '--out', str(tmp_path/'a'),
                    env={'MY_KEY': 'wrong'})
    assert r.returncode == 2 and 'refused the key in $MY_KEY' in r.stderr
    empty = Fake(reply='')
    r = dagger_eval('--model', 'openai:fake', '--base-url', empty.url, '--n', '1', '--methods', 'cot',
                    '--splits', 'mgsm_bn,msvamp_bn', '--out', str(tmp_path/'b'))
    assert r.returncode == 2 and 'every cot reply was empty' in r.stderr and empty.chats == 2
    assert (tmp_path/'b'/'completions.sqlite').exists()            # what was asked is kept
    refused.server.shutdown(); empty.server.shutdown()


def test_report_samples_and_resume(fake, tmp_path):
    out = tmp_path/'run'
    args = ('--model', 'openai:fake', '--base-url', fake.url, '--n', '2', '--methods', 'cot', '--out', str(out))
    r = dagger_eval(*args)
    assert r.returncode == 0, r.stderr[-2000:]
    rows = [json.loads(l) for l in open(out/'samples.jsonl')]
    assert len(rows) == outputs_at(2) >= 5 and all(r['prediction'] == 5.0 and r['output'] == 'উত্তর হল ৫।' for r in rows)
    assert {r['correct'] for r in rows} == {r['answer'] == 5.0 for r in rows}
    rep = json.loads((out/'report.json').read_text())
    assert {'mgsm_bn', 'msvamp_bn'} <= {s['split'] for s in rep['splits']} <= {'mgsm_bn', 'msvamp_bn', 'mgsm_bn_distract', 'msvamp_bn_distract'}
    assert all(s['acc_lo'] <= s['accuracy'] <= s['acc_hi'] and s['smoke'] for s in rep['splits'])
    assert {d['type'] for d in rep['deltas']} >= {'all'} and (out/'robustness.png').stat().st_size > 1000
    assert dagger_eval(*args).returncode == 2                       # an earlier run is never overwritten
    asked = fake.chats
    again = dagger_eval(*args, '--resume')
    assert again.returncode == 0 and fake.chats == asked             # every completion came from the cache
    assert (out/'report.md').read_text().startswith('# DistractMath-BN: openai:fake')


@pytest.fixture(scope='module')
def served():
    from dagger.llm import embedded_model_path
    from dagger.pipeline import serve
    folder = str(embedded_model_path())
    with serve(folder) as url: yield url, folder


def outputs_at(n: int, methods: int = 1) -> int:
    "How many outputs dagger-eval writes at --n n: a +D split holds the +D versions of its original split's sample only."
    from dagger.any_model import load_benchmark, SPLITS
    from dagger.config import load_profile
    return methods * sum(len(ps) for ps, _ in load_benchmark(SPLITS, n, load_profile('cpu')).values())


def test_a_real_local_server(served, tmp_path):
    url, folder = served
    r = dagger_eval('--model', f'openai:{folder}', '--base-url', url, '--n', '1', '--methods', 'cot', '--max-new-tokens', '12',
                    '--out', str(tmp_path/'real'), env={'OPENAI_API_KEY': 'none'})
    assert r.returncode == 0, r.stderr[-2000:]
    rows = [json.loads(l) for l in open(tmp_path/'real'/'samples.jsonl')]
    assert len(rows) == outputs_at(1) and all(0 < r['tokens'] <= 12 for r in rows)


def test_lm_eval_scores_the_same_outputs_as_dagger(served, tmp_path):
    "The harness itself, against the real server: its per-problem score equals dagger's scoring of the same logged outputs."
    from dagger.answers import score_text
    url, folder = served
    tasks = dagger_eval('--tasks-path').stdout.strip()
    r = subprocess.run([str(EXE/'lm_eval'), '--model', 'local-completions', '--model_args',
                        f'base_url={url}/completions,model={folder},tokenized_requests=False,num_concurrent=1,max_retries=1',
                        '--include_path', tasks, '--tasks', 'distractmath_bn', '--metadata', '{"n": 2}',
                        '--gen_kwargs', 'max_gen_toks=24', '--log_samples', '--output_path', str(tmp_path/'lm')],
                       capture_output=True, text=True, timeout=1200, env={**os.environ, 'HF_DATASETS_OFFLINE': '1', 'OPENAI_API_KEY': 'none'})
    assert r.returncode == 0, (r.stdout[-3000:], r.stderr[-3000:])
    files = glob.glob(str(tmp_path/'lm'/'**'/'samples_distractmath_bn_*.jsonl'), recursive=True)
    samples = [json.loads(l) for f in files for l in open(f)]
    assert len(files) == 4 and len(samples) == 8
    for s in samples:
        ours = score_text('cot', s['resps'][0][0], s['doc']['answer'], 'bn')['correct']
        assert float(ours) == s['acc'], (s['resps'][0][0][:200], s['doc']['answer'], s['acc'])
    [res] = glob.glob(str(tmp_path/'lm'/'**'/'results_*.json'), recursive=True)
    group = json.loads(Path(res).read_text())['results']['distractmath_bn']
    assert abs(group['acc,dagger'] - sum(s['acc'] for s in samples) / 8) < 1e-9


def test_the_harness_filter_reads_what_dagger_reads():
    "The task's filter and scoring on replies of every kind agree with dagger.answers.score_text, right and wrong alike."
    import importlib.util
    from dagger.any_model import tasks_path
    from dagger.answers import score_text
    spec = importlib.util.spec_from_file_location('dm_utils', tasks_path()/'distractmath_bn'/'utils.py')
    u = importlib.util.module_from_spec(spec); spec.loader.exec_module(u)
    replies = ['ধাপে ধাপে: ১২ + ৬ = ১৮। উত্তর হল ১৮।', 'The answer is 18.', 'উত্তর হল ১৭', '১,২০০ টাকা। উত্তর হল ১,২০০', 'no number', '', '18.0000001']
    doc = dict(lang='bn', answer=18.0)
    got = [u.process_results(doc, f)['acc'] for f in u.extract([[r] for r in replies], [doc] * len(replies))]
    assert got == [float(score_text('cot', r, 18.0, 'bn')['correct']) for r in replies]
    assert got[:3] == [1.0, 1.0, 0.0] and got[4:6] == [0.0, 0.0]
