"""Executor benchmark: graphs/second for dagger.graph's parse+execute against bare json.loads on the same corpus.

Usage: python bench/graph_bench.py [--n 10000] [--seed 0] [--repeats 5] [--mix 85,10,5] [--out bench/results/graph_bench.json]

The corpus is generated (seeded) to look like model outputs: a short preamble, a ```json fence holding 5-40 nodes
(Bangla or English labels, distractors, one node per line or indented), a closing line. It mixes valid graphs,
repairable ones (trailing commas, single quotes, op aliases, values with units or Bangla digits, numeric args,
a missing final_result) and broken ones (truncated, missing nodes, cycles, unknown ops, division by zero, no JSON),
by default 85% / 10% / 5% (`--mix`), the typical share of model-written graphs the issue asked to measure on.
The floor is json.loads on each output's JSON payload (the text between the fences, extracted beforehand, so the
floor pays for JSON decoding only); parse+execute starts from the raw text, fence search included.
"""
from __future__ import annotations
import argparse, gc, json, os, platform, random, statistics, sys, time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
import orjson
from dagger.graph import GraphError, parse, execute, reward, format_graph, from_obj, _fast_graph, _decode_doc
from dagger.repair import find_payload, loads

BN = ['মিনার কলম', 'রাজুর কলম', 'প্রতিটির দাম', 'মোট টাকা', 'বাকি আপেল', 'দিনের সংখ্যা', 'ঘণ্টা', 'মোট দূরত্ব']
EN = ['pens', 'price per pen', 'apples left', 'days', 'hours', 'total distance', 'boxes', 'eggs per day']
OPS2 = ['add', 'sub', 'mul', 'div', 'sum', 'mean', 'max', 'min']
ALIAS = {'mul': 'multiply', 'sub': 'subtract', 'div': 'divide', 'add': 'plus', 'mean': 'average', 'sum': 'SUM'}


def random_graph(rng: random.Random) -> dict:
    "A valid graph object with 5-40 nodes: constants (some distractors), operations, final_result."
    n = rng.randint(5, 40)
    labels = BN if rng.random() < 0.6 else EN
    n_const = max(2, rng.randint(n // 4, n // 2))
    nodes, live = [], []
    for i in range(n_const):
        dis = rng.random() < 0.25 and i > 1
        val = rng.choice([rng.randint(1, 500), rng.randint(1000, 200000), round(rng.uniform(0.5, 99.9), 1)])
        nodes.append({'id': f'n{i + 1}', 'op': 'const', 'val': val, 'distractor': dis, 'label': rng.choice(labels)})
        if not dis: live.append(f'n{i + 1}')
    for i in range(n_const, n - 1):
        op = rng.choice(OPS2)
        k = 2 if op in ('sub', 'div') else rng.randint(2, 3)
        args = rng.sample(live, min(k, len(live))) if len(live) >= 2 else live * 2
        if op in ('sub', 'div'): args = args[:2]
        nodes.append({'id': f'step_{i}', 'op': op, 'args': args, 'distractor': False, 'label': rng.choice(labels)})
        live.append(f'step_{i}')
    nodes.append({'id': 'final_result', 'op': 'identity', 'args': [live[-1]], 'distractor': False, 'label': 'চূড়ান্ত উত্তর'})
    return {'nodes': nodes}


def render(obj: dict, rng: random.Random) -> str:
    "The object as a model might write it: preamble, fenced JSON (compact lines or indented), a closing remark."
    body = (format_graph(obj) if rng.random() < 0.5 else
            '```json\n' + json.dumps(obj, ensure_ascii=False, indent=2) + '\n```')
    pre = rng.choice(['', 'গ্রাফটি নিচে দেওয়া হলো:\n', "Here is the computational graph:\n\n"])
    post = rng.choice(['', '\n', '\nউত্তর গ্রাফ থেকে পাওয়া যাবে।'])
    return pre + body + post


def repairable(obj: dict, rng: random.Random) -> str:
    "A graph with one or two things lenient parsing repairs."
    obj = json.loads(json.dumps(obj))
    nodes = obj['nodes']
    for kind in rng.sample(['alias', 'units', 'bangla', 'no_final', 'numeric_arg', 'trailing', 'quotes'], rng.randint(1, 2)):
        if kind == 'alias':
            for n in nodes:
                if n['op'] in ALIAS: n['op'] = ALIAS[n['op']]
        elif kind == 'units':
            for n in nodes:
                if n['op'] == 'const': n['val'] = f"{n['val']} টাকা"
        elif kind == 'bangla':
            for n in nodes:
                if n['op'] == 'const': n['val'] = str(n['val']).translate(str.maketrans('0123456789', '০১২৩৪৫৬৭৮৯'))
        elif kind == 'no_final' and len(nodes) > 3:
            last = nodes.pop()
            for n in nodes:
                if n['id'] == last['args'][0]: n['distractor'] = False
        elif kind == 'numeric_arg':
            for n in nodes:
                if n['op'] in ('add', 'mul'): n['args'].append(2); break
    text = render(obj, rng)
    if 'trailing' in kind: text = text.replace('}\n]', '},\n]', 1).replace('}\n  ]', '},\n  ]', 1)
    if kind == 'quotes': text = text.replace('"id"', "'id'").replace('"op"', "'op'")
    return text


def broken(obj: dict, rng: random.Random) -> str:
    "A graph that cannot be parsed or executed."
    obj = json.loads(json.dumps(obj))
    nodes = obj['nodes']
    kind = rng.choice(['truncated', 'missing', 'cycle', 'unknown', 'divzero', 'prose', 'duplicate'])
    if kind == 'truncated': return render(obj, rng)[: rng.randint(20, 300)]
    if kind == 'prose': return 'আমি ধাপে ধাপে সমাধান করি। প্রথমে ১২২১৯৫ × ৪৫.৬ = ৫৫৭২০৯২। উত্তর হল ৫৫৭২০৯২।'
    if kind == 'missing': nodes[-1]['args'] = ['does_not_exist']
    if kind == 'cycle':
        ops = [n for n in nodes if n['op'] not in ('const', 'identity')]
        if ops: ops[0]['args'][0] = 'final_result'
        nodes[-1]['args'] = [ops[-1]['id']] if ops else nodes[-1]['args']
    if kind == 'unknown': nodes[-1]['op'] = 'ratio_split'
    if kind == 'divzero':
        nodes.insert(0, {'id': 'zero', 'op': 'const', 'val': 0})
        nodes.insert(-1, {'id': 'boom', 'op': 'div', 'args': [nodes[-2]['id'], 'zero']})
        nodes[-1]['args'] = ['boom']
    if kind == 'duplicate': nodes[1]['id'] = nodes[0]['id']
    return render(obj, rng)


MIX = (0.85, 0.10, 0.05)

def corpus(n: int, seed: int, mix: tuple = MIX) -> list[str]:
    "n model-like outputs: shares `mix` valid, repairable and broken."
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        obj, r = random_graph(rng), rng.random()
        out.append(render(obj, rng) if r < mix[0] else repairable(obj, rng) if r < mix[0] + mix[1] else broken(obj, rng))
    return out


def payload(text: str) -> str:
    "The text between the ```json fence and the next ``` (the whole text when there is none)."
    i = text.find('```json')
    if i < 0: return text
    j = text.find('```', i + 7)
    return text[i + 7:] if j < 0 else text[i + 7:j]


def one_pass(fn, items) -> float:
    "CPU seconds of this process for one pass of fn over items (robust to other jobs on a shared machine)."
    gc.collect()
    t = time.process_time(); fn(items)
    return time.process_time() - t


def run_json(payloads):
    for p in payloads:
        try: json.loads(p)
        except ValueError: pass

def run_orjson_fresh(texts):
    "Fence search plus orjson on a fresh slice (what parse's fast path pays before any Python-level work)."
    for t in texts:
        try: orjson.loads(t[t.find('```json') + 7:t.rfind('```')])
        except ValueError: pass

def run_typed_decode(payloads):
    "The fast path's first step alone: msgspec decoding straight into typed records (C, no Python per node)."
    for p in payloads: _decode_doc(p)

def run_parse(texts):
    for t in texts:
        try: parse(t)
        except GraphError: pass

def run_execute(graphs):
    for g in graphs:
        try: execute(g)
        except GraphError: pass

def run_parse_execute(texts):
    for t in texts:
        try: execute(parse(t))
        except GraphError: pass

def full_parse(text):
    "parse without its fast path (what every text paid before the fast path existed)."
    repairs = []
    return from_obj(loads(find_payload(text, repairs), repairs), repairs=repairs)

def run_full_execute(texts):
    for t in texts:
        try: execute(full_parse(t))
        except GraphError: pass

def run_reward(texts):
    for t in texts: reward(t, 42)


def fast_path(text: str) -> bool:
    "Does the fast path take the text (a graph, or the full path's error found from the typed records)?"
    try: return _fast_graph(text) is not None
    except GraphError: return True


def outcome(text: str) -> str:
    try: g = parse(text)
    except GraphError: return 'parse_error'
    try: execute(g)
    except GraphError: return 'execution_error'
    return 'repaired' if g.repairs else 'ok'


def machine() -> dict:
    cpu = platform.processor()
    try: cpu = next(l.split(':', 1)[1].strip() for l in open('/proc/cpuinfo') if l.startswith('model name'))
    except (OSError, StopIteration): pass
    return {'cpu': cpu, 'cores': os.cpu_count(), 'python': platform.python_version(), 'implementation': platform.python_implementation(),
            'platform': platform.platform(), 'orjson': orjson.__version__}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--n', type=int, default=10_000)
    ap.add_argument('--seed', type=int, default=0)
    ap.add_argument('--repeats', type=int, default=5)
    ap.add_argument('--mix', default='85,10,5', help='percent valid, repairable, broken')
    ap.add_argument('--out', default=str(ROOT / 'bench' / 'results' / 'graph_bench.json'))
    a = ap.parse_args(argv)
    mix = tuple(float(x) / 100 for x in a.mix.split(','))
    texts = corpus(a.n, a.seed, mix)
    payloads = [payload(t) for t in texts]
    outcomes = {}
    for t in texts: k = outcome(t); outcomes[k] = outcomes.get(k, 0) + 1
    sizes = [len(t) for t in texts]
    graphs = []
    for t in texts:
        try: graphs.append(parse(t))
        except GraphError: pass
    fast = [fast_path(t) for t in texts]
    split = {k: ([t for t, f in zip(texts, fast) if f == want], [p for p, f in zip(payloads, fast) if f == want])
             for k, want in (('fast-path texts', True), ('other texts', False))}
    cases = [('json.loads (floor)', run_json, payloads), ('fence + orjson.loads', run_orjson_fresh, texts),
             ('parse (lenient)', run_parse, texts), ('execute (parsed graphs)', run_execute, graphs),
             ('parse+execute', run_parse_execute, texts), ('parse+execute, full path only', run_full_execute, texts),
             ('reward (strict parse+execute+check)', run_reward, texts)]
    for k, (ts, ps) in split.items():   # where the time goes: each share of the corpus against json.loads on its own payloads
        cases += [(f'json.loads, {k}', run_json, ps), (f'parse+execute, {k}', run_parse_execute, ts)]
    cases.append(('typed decode, fast-path texts', run_typed_decode, split['fast-path texts'][1]))
    times = {name: [] for name, _, _ in cases}
    for _ in range(a.repeats):  # interleaved rounds: a shared, busy machine slows all cases alike
        for name, fn, items in cases: times[name].append(one_pass(fn, items))
    rows = {}
    for name, _, items in cases:
        sec = statistics.median(times[name])
        rows[name] = {'seconds': sec, 'graphs_per_s': len(items) / sec, 'us_per_graph': 1e6 * sec / len(items)}
    floor, ours = rows['json.loads (floor)']['graphs_per_s'], rows['parse+execute']['graphs_per_s']
    ratios = [j / p for j, p in zip(times['json.loads (floor)'], times['parse+execute'])]
    result = {'corpus': {'n': len(texts), 'seed': a.seed, 'outcomes': outcomes, 'mean_chars': sum(sizes) / len(sizes),
                         'nodes': '5-40', 'mix': f'{a.mix} percent valid, repairable, broken (by generation)',
                         'fast_path': sum(fast)},
              'repeats': a.repeats, 'statistic': 'median CPU seconds (time.process_time) per pass over interleaved rounds',
              'graphs_per_s': {'parse_execute': ours, 'json_loads': floor}, 'ratio': ours / floor,
              'fast_path_speedup': ours / rows['parse+execute, full path only']['graphs_per_s'],
              'ratio_per_round': ratios, 'load_average': os.getloadavg(),
              'by_share': {k: {'texts': len(ts), 'ratio': rows[f'json.loads, {k}']['seconds'] / rows[f'parse+execute, {k}']['seconds'],
                               'share_of_parse_execute_time': rows[f'parse+execute, {k}']['seconds'] / rows['parse+execute']['seconds']}
                           for k, (ts, _) in split.items()},
              'breakdown': rows, 'machine': machine(),
              'time': time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())}
    print(f"corpus: {len(texts)} outputs (seed {a.seed}), mean {result['corpus']['mean_chars']:.0f} chars; outcomes {outcomes}")
    print(f"{'':38s} {'graphs/s':>10s} {'us/graph':>9s}")
    for name, r in rows.items(): print(f"{name:38s} {r['graphs_per_s']:10.0f} {r['us_per_graph']:9.1f}")
    print(f"ratio parse+execute / json.loads = {result['ratio']:.2f}  (target >= 0.6; per round {min(ratios):.2f}-{max(ratios):.2f};"
          f" load average {os.getloadavg()[0]:.1f})")
    print(f"the fast path: {result['corpus']['fast_path']} of {len(texts)} texts; parse+execute {result['fast_path_speedup']:.2f}x the full path alone")
    for k, b in result['by_share'].items():
        print(f"{k}: {b['texts']} texts, ratio to json.loads on the same payloads {b['ratio']:.2f}, {100 * b['share_of_parse_execute_time']:.0f}% of the time")
    out = Path(a.out); out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + '\n', encoding='utf-8')
    print(f'wrote {out}')
    return result


if __name__ == '__main__':
    main()
