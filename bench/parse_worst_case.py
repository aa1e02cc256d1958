"""Worst-case timing and fuzzing of dagger.graph.parse / execute / reward.

Usage: nice -n 19 python bench/parse_worst_case.py [--fuzz 1000000] [--seed 0] [--out bench/results/parse_worst_case.json]

Part 1: for every class of hostile input (each built at several sizes up to 1 MB), the slowest of
parse (lenient and strict), execute on what parsed, and reward, in ms per call (best of 3 repeats, wall time).
Part 2: a fuzzer: small random texts mutated from real graph outputs; counts exceptions that are not GraphError.
"""
from __future__ import annotations
import argparse, json, platform, random, sys, time, traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from dagger.graph import GraphError, MAX_CHARS, execute, format_graph, parse, reward
from bench.graph_bench import random_graph, render

SIZES = [1_000, 10_000, 100_000, 1_000_000]


def classes(rng):
    "name -> function of a size giving a text of about that size."
    real = render(random_graph(rng), rng)
    def fill(unit, n, head='', tail=''): return head + unit * max(1, (n - len(head) - len(tail)) // len(unit)) + tail
    return {
        'fence_spaces': lambda n: fill(' ', n, '```', 'x'),
        'fence_space_tab': lambda n: fill(' \t', n, '```', 'x'),
        'braces_then_key': lambda n: fill('x', n, '{' * 64 + '"nodes": ['),
        'unclosed_single_quote': lambda n: fill('x', n, "```json\n{'nodes': [{'id': 'a', 'label': '"),
        'surrogates': lambda n: fill('\udcff', n, "{'nodes': ['", "']}"),
        'deep_nesting': lambda n: '```json\n{"nodes": [], "x": ' + '[' * (n // 2 - 20) + ']' * (n // 2 - 20) + '}\n```',
        'escaped_quotes': lambda n: fill('\\"', n, '{"nodes": "'),
        'many_fences': lambda n: fill('```', n),
        'many_fences_brace': lambda n: fill('``` \n', n, '', '{'),
        'whitespace_commas': lambda n: fill(', ', n, '```json\n{"nodes": [', '\n```'),
        'single_quoted_strings': lambda n: fill("'a', ", n, "```json\n{'nodes': [", ']}\n```'),
        'unquoted_keys': lambda n: fill('k: 1, ', n, '```json\n{', '}\n```'),
        'numbers_with_units': lambda n: fill('"v": ১,২৩৪ টাকা, ', n, '```json\n{', '"nodes": []}\n```'),
        'braces_pairs_then_key': lambda n: fill('{}', n, '', '{"nodes": [1]}'),
        'huge_number': lambda n: fill('9', n, '```json\n{"nodes": [{"id": "final_result", "op": "const", "val": ', '}]}\n```'),
        'repeated_real_output': lambda n: (real * (n // len(real) + 1))[:n],
        'big_valid_graph': lambda n: big_graph(n),
    }


def big_graph(n):
    "A valid graph of about n characters (a long chain)."
    k = max(2, n // 60)
    nodes = [{'id': 'one', 'op': 'const', 'val': 1}, {'id': 'n0', 'op': 'const', 'val': 0}]
    nodes += [{'id': f'n{i}', 'op': 'add', 'args': [f'n{i - 1}', 'one']} for i in range(1, k)]
    nodes.append({'id': 'final_result', 'op': 'identity', 'args': [f'n{k - 1}']})
    return format_graph({'nodes': nodes})


def one_call(text):
    "Run everything a caller may run on the text; return a non-GraphError exception if one escapes."
    for strict in (False, True):
        try: execute(parse(text, strict=strict))
        except GraphError: pass
    reward(text, 1)


def slowest(text, repeats=3):
    best = float('inf')
    for _ in range(repeats):
        t = time.perf_counter(); one_call(text); best = min(best, time.perf_counter() - t)
    return best * 1000


PIECES = ['```', '```json\n', "'", '"', '\\', '{', '}', '[', ']', ',', ':', ' ', '\t', '\n', 'True', 'None', '"nodes":',
          "'nodes':", '\udcff', '٣', '４', '০', '½', '%', '1/0', '1e999', '1e-400', '9' * 40, '-', '.', 'e', 'NaN', 'x', '০১', ' টাকা']


def mutate(rng, base):
    s = base
    for _ in range(rng.randint(1, 4)):
        i, r = rng.randrange(len(s) + 1), rng.random()
        if r < 0.3 and s: j = min(len(s), i + rng.randint(1, 8)); s = s[:i] + s[j:]
        elif r < 0.85: s = s[:i] + rng.choice(PIECES) * rng.choice((1, 1, 1, 2, 5, 30)) + s[i:]
        else: s = s[:i]
    return s


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--fuzz', type=int, default=1_000_000)
    ap.add_argument('--seed', type=int, default=0)
    ap.add_argument('--out', default=str(ROOT / 'bench/results/parse_worst_case.json'))
    a = ap.parse_args()
    rng = random.Random(a.seed)
    worst = {}
    for name, make in classes(rng).items():
        per = {n: slowest(make(n)) for n in SIZES}
        worst[name] = {'ms_per_call_by_size': {str(n): round(v, 3) for n, v in per.items()},
                       'slowest_ms': round(max(per.values()), 3)}
        print(f'{name:24s}', '  '.join(f'{n:>9,}: {v:8.3f} ms' for n, v in per.items()), flush=True)
    top = max(worst, key=lambda k: worst[k]['slowest_ms'])
    bases = [render(random_graph(rng), rng) for _ in range(200)]
    bases = [b[:rng.randint(200, 1200)] if rng.random() < 0.5 else b for b in bases]
    bad, examples, t0 = 0, [], time.perf_counter()
    for i in range(a.fuzz):
        text = mutate(rng, rng.choice(bases))
        try: one_call(text)
        except Exception:
            bad += 1
            if len(examples) < 5: examples.append({'text': text[:500], 'error': traceback.format_exc(limit=2)[-500:]})
    fuzz_s = time.perf_counter() - t0
    out = {'max_chars': MAX_CHARS, 'sizes': SIZES,
           'what': 'per class: slowest of lenient+strict parse, execute, reward on one input, best of 3, ms',
           'classes': worst, 'slowest_class': top, 'worst_ms_per_call': worst[top]['slowest_ms'], 'target_ms': 50,
           'fuzz': {'inputs': a.fuzz, 'non_graph_errors': bad, 'examples': examples, 'seconds': round(fuzz_s, 1), 'seed': a.seed},
           'machine': {'python': platform.python_version(), 'platform': platform.platform()}}
    Path(a.out).write_text(json.dumps(out, indent=2, ensure_ascii=True) + '\n')
    print(f'slowest class {top}: {worst[top]["slowest_ms"]:.2f} ms; fuzz {a.fuzz:,} inputs, {bad} non-GraphError exceptions, {fuzz_s:.0f} s')


if __name__ == '__main__':
    main()
