"""Shared-prefix KV cache of the transformers backend: one batch of evaluation prompts with and without it.

Usage: python bench/prefix_bench.py [--n 8] [--new-tokens 64] [--out bench/results/prefix_bench.json]

The workload is the evaluation stage's: the `dagger` and the `cot` prompt for the first `--n` problems of the cpu
profile's MSVAMP-en+D sample, one batch each, greedy, at most `--new-tokens` new tokens, the cpu
profile's embedded model (Gemma-3-270M) on CPU, no completion cache. `TransformersBackend(share_prefix=False)` is the baseline (every
row prefilled in full, left-padded); the default computes the prompts' common prefix (instructions and worked
examples) once. Conditions alternate (baseline first) over `--repeats` rounds after a warm-up call; the median wall
time is reported with the ratio, and whether the two gave identical completions.
"""
from __future__ import annotations
import argparse, json, os, platform, statistics, sys, time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from dagger.llm import Sampling, TransformersBackend, shared_prefix   # before torch: sets OMP_WAIT_POLICY=PASSIVE unless set


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--n', type=int, default=8); ap.add_argument('--new-tokens', type=int, default=64)
    ap.add_argument('--repeats', type=int, default=2)
    ap.add_argument('--out', default=str(ROOT/'bench'/'results'/'prefix_bench.json'))
    a = ap.parse_args()
    from dagger.config import load_profile
    from dagger.eval import PROMPTS, load_splits
    cfg = load_profile('cpu')
    split = 'msvamp_en_distract'
    ps = load_splits([split], cfg.eval.sample_n, cfg.seed, cfg, n=a.n, verbose=False)[split][0]
    shared = TransformersBackend(cfg.model, device='cpu', batch_size=a.n)
    plain = TransformersBackend(cfg.model, device='cpu', batch_size=a.n, share_prefix=False)
    s = Sampling(max_new_tokens=a.new_tokens)
    plain.generate(['Hello'], Sampling(max_new_tokens=4))           # warm-up
    res, load0 = {}, os.getloadavg()[0]
    for method in ('dagger', 'cot'):
        prompts = [PROMPTS[method](p.question, p.lang) for p in ps]
        ids = [shared.encode(m) for m in prompts]
        times, outs = {'plain': [], 'shared': []}, {}
        for _ in range(a.repeats):
            for name, be in (('plain', plain), ('shared', shared)):
                t = time.perf_counter(); outs[name] = be.generate(prompts, s); times[name].append(time.perf_counter() - t)
        med = {k: round(statistics.median(v), 2) for k, v in times.items()}
        same = [[c.text for c in x] == [c.text for c in y] for x, y in zip(outs['plain'], outs['shared'])]
        res[method] = dict(prompt_tokens=[len(r) for r in ids], shared_prefix=shared_prefix(ids), seconds=med,
                           rounds={k: [round(x, 2) for x in v] for k, v in times.items()},
                           ratio_shared_over_plain=round(med['shared'] / med['plain'], 3), identical_rows=f'{sum(same)}/{len(same)}')
        print(method, json.dumps({k: v for k, v in res[method].items() if k != 'prompt_tokens'}), flush=True)
    out = dict(workload=dict(split=split, problems=len(ps), new_tokens=a.new_tokens, model=cfg.model, batch=a.n, repeats=a.repeats),
               results=res, machine=dict(platform=platform.platform(), cpus=os.cpu_count()),
               loadavg_before=round(load0, 2), loadavg_after=round(os.getloadavg()[0], 2), date=time.strftime('%Y-%m-%d %H:%M:%S'))
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    Path(a.out).write_text(json.dumps(out, indent=1) + '\n')


if __name__ == '__main__':
    main()
