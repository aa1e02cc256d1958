"""Generation throughput of dagger.llm's transformers backend with the embedded model (SmolLM2-135M-Instruct, CPU).

Usage: python bench/llm_bench.py [--new-tokens 64] [--prompts 16] [--compare-policy] [--out bench/results/llm_bench.json]

Greedy decoding of `--new-tokens` new tokens for `--prompts` prompts of mixed length, alternating a short English
question (~40 prompt tokens with the chat template) and a long Bangla word problem with distractor sentences
(300-520 prompt tokens: Bangla costs ~7 tokens a word), with no completion cache. Tokens/s = generated tokens
(our output-token definition: generated ids without end-of-sequence) / wall time of the `generate` call, after a
warm-up call. Conditions:
  batch 8 with prompts sorted by length (the default) | batch 8 in the given order (no bucketing) | batch 1,
and batch 8 on short English prompts only (decode-bound, comparable with docs/cpu-notes.md), each in this process (OMP_WAIT_POLICY=PASSIVE, which dagger.llm sets). With --compare-policy, batch 8 also runs in
two child processes, OMP_WAIT_POLICY=PASSIVE and ACTIVE (OpenMP's spinning default), to record what the policy is
worth on shared CPUs (a child that does not finish within --policy-timeout seconds is recorded as timed out).
The machine's CPUs are shared with other jobs: the load average before and after each condition is stored with it,
and so are the process's CPU seconds and its share of the time its torch threads could have run (cpu_share): a
share well below 1 means other jobs had the cores, and the wall-clock rate understates the code.
"""
from __future__ import annotations
import argparse, json, os, subprocess, sys, time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from dagger.llm import Sampling, TransformersBackend   # before torch: sets OMP_WAIT_POLICY=PASSIVE unless set

SHORT = ['What is {a} + {b}?', 'A box holds {a} pens. How many pens are in {b} boxes?',
         'Rina had {a} apples and ate {b}. How many are left?', 'What is {a} times {b}?']
LONG = ['রিনার কাছে {a}টি কলম আছে।', 'তার ভাই রাজুর কাছে {b}টি পেন্সিল আছে, যা এই প্রশ্নের জন্য দরকার নেই।',
        'রিনা বাজার থেকে আরও {b}টি কলম কিনল।', 'প্রতিটি কলমের দাম {a} টাকা, আর দোকানটি সকাল নয়টায় খোলে।',
        'গত বছর রিনা {a}টি খাতা কিনেছিল।', 'সে তার বন্ধুকে {b}টি কলম উপহার দিল।',
        'তাদের স্কুলে মোট {a} জন ছাত্রছাত্রী পড়ে।', 'এখন রিনার কাছে কয়টি কলম আছে?']


def prompts(n: int, short_only: bool = False) -> list[str]:
    "n prompts alternating short English questions and long Bangla problems with distractors (deterministic)."
    out = []
    for i in range(n):
        a, b = 3 + 7*i % 50, 2 + 3*i % 20
        if short_only: out.append(SHORT[i % len(SHORT)].format(a=a, b=b))
        elif i % 2 == 0: out.append(SHORT[i//2 % len(SHORT)].format(a=a, b=b))
        else: out.append(' '.join(s.format(a=a, b=b) for s in LONG[:i//2 % 4 + 3]) + ' ' + LONG[-1])
    return out


def measure(batch: int, sort: bool, qs: list[str], new_tokens: int, workload: str = 'mixed') -> dict:
    "Tokens/s of one greedy generate call over `qs`, with the CPU time it got (cpu_share 1.0 = all its threads busy)."
    import torch
    be = TransformersBackend(device='cpu', batch_size=batch, sort_by_length=sort)
    be.generate(qs[:2], Sampling(max_new_tokens=4))                      # warm-up
    load0 = os.getloadavg()[0]
    t, cpu = time.perf_counter(), time.process_time()
    out = be.generate(qs, Sampling(max_new_tokens=new_tokens))
    dt, cpu = time.perf_counter() - t, time.process_time() - cpu
    toks = sum(c.tokens for [c] in out)
    return dict(workload=workload, batch=batch, sorted=sort, omp_wait_policy=os.environ.get('OMP_WAIT_POLICY'), prompts=len(qs),
                prompt_tokens=[len(be.encode([{'role': 'user', 'content': q}])) for q in qs],
                generated_tokens=toks, seconds=round(dt, 2), tokens_per_s=round(toks/dt, 1),
                cpu_seconds=round(cpu, 2), cpu_share=round(cpu/(dt*torch.get_num_threads()), 2),
                finished_by_eos=sum(c.finish_reason == 'stop' for [c] in out),
                loadavg_before=round(load0, 2), loadavg_after=round(os.getloadavg()[0], 2))


def child_policy(policy: str, n: int, new_tokens: int, timeout: int) -> dict:
    "Batch 8, sorted, in a child process with OMP_WAIT_POLICY=policy (None if it does not finish within `timeout` s)."
    cmd = [sys.executable, __file__, '--child', '--new-tokens', str(new_tokens), '--prompts', str(n)]
    try: p = subprocess.run(cmd, env=os.environ | {'OMP_WAIT_POLICY': policy}, capture_output=True, text=True, timeout=timeout, check=True)
    except subprocess.TimeoutExpired: return dict(batch=8, sorted=True, omp_wait_policy=policy, prompts=n, timed_out_after_s=timeout)
    return json.loads(p.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--new-tokens', type=int, default=64)
    ap.add_argument('--prompts', type=int, default=16)
    ap.add_argument('--compare-policy', action='store_true',
                    help='also run batch 8 on --policy-prompts prompts in two child processes, OMP_WAIT_POLICY PASSIVE vs ACTIVE')
    ap.add_argument('--policy-prompts', type=int, default=8)
    ap.add_argument('--policy-timeout', type=int, default=300)
    ap.add_argument('--child', action='store_true', help=argparse.SUPPRESS)
    ap.add_argument('--out', default=str(ROOT/'bench/results/llm_bench.json'))
    args = ap.parse_args()
    if args.child:
        print(json.dumps(measure(8, True, prompts(args.prompts), args.new_tokens))); return
    import torch
    from dagger.provenance import run_info
    from dagger.files import write_json
    qs, runs = prompts(args.prompts), []
    for batch, sort in [(8, True), (8, False), (1, True)]:
        runs.append(measure(batch, sort, qs, args.new_tokens)); print(json.dumps(runs[-1]), flush=True)
    runs.append(measure(8, True, prompts(args.prompts, short_only=True), args.new_tokens, 'short'))
    print(json.dumps(runs[-1]), flush=True)
    b8, b8u, b1, short = runs
    per_cpu_s = lambda r: round(r['generated_tokens']/r['cpu_seconds'], 1)
    summary = dict(tokens_per_s_batch8=b8['tokens_per_s'], tokens_per_s_batch1=b1['tokens_per_s'],
                   tokens_per_s_batch8_short_prompts=short['tokens_per_s'],
                   batch8_over_batch1=round(b8['tokens_per_s']/b1['tokens_per_s'], 2),
                   bucketing_gain=round(b8['tokens_per_s']/b8u['tokens_per_s'], 2),
                   tokens_per_cpu_s={'batch8': per_cpu_s(b8), 'batch8_unsorted': per_cpu_s(b8u), 'batch1': per_cpu_s(b1),
                                     'batch8_short_prompts': per_cpu_s(short)},
                   cpu_share=[r['cpu_share'] for r in runs],
                   target_50_tokens_per_s_at_batch8=b8['tokens_per_s'] >= 50,
                   loadavg_during=[b8['loadavg_before'], max(r['loadavg_after'] for r in runs)])
    policy = []
    if args.compare_policy:
        for pol in ['PASSIVE', 'ACTIVE']:
            policy.append(child_policy(pol, args.policy_prompts, args.new_tokens, args.policy_timeout)); print(json.dumps(policy[-1]), flush=True)
    print(json.dumps(summary))
    write_json(args.out, run_info(None, bench='llm', model='embedded:smollm2-135m', new_tokens=args.new_tokens,
                                  torch_threads=torch.get_num_threads(), cpus=os.cpu_count(), summary=summary, runs=runs,
                                  wait_policy_runs=policy))


if __name__ == '__main__':
    main()
