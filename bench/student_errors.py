"""What the CPU study's students get wrong, from the committed per-problem records: each DAGGER answer set against
its problem's gold graph.

Usage: .venv/bin/python bench/student_errors.py [--runs runs/cpu-study] [--out bench/results/student_errors]

Every DAGGER record of the run's trained students (`--runs`/records/eval__*-sft.jsonl.gz, *-grpo.jsonl.gz) gets one
class, the first that fits:

- `correct`;
- `no_graph`: the output did not parse or execute;
- `invented`: the graph computes with a number that is nowhere in the problem (nor one of its gold constants);
- `distractor`: it computes with a number the gold graph marks as a distractor;
- `missing`: it leaves out a number the gold graph computes with (and uses no foreign one);
- `wrong_ops`: it computes with exactly the gold graph's numbers, and gets the operations or their order wrong;
- `other`: anything else (extra copies of a number, a number counted twice).

Numbers are compared as multisets of the constants the answer depends on (reachable from `final_result`). A problem
without a gold graph is counted apart (`no_gold`). Writes `classes.csv` (per arm and split: count, share and its Wilson
95% interval for each class), `ops.csv` (the student's operations against gold's, per arm and split) and prints both.
"""
from __future__ import annotations
import argparse, sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

CLASSES = ('correct', 'no_graph', 'invented', 'distractor', 'missing', 'wrong_ops', 'other')


def used(nodes: list[dict]) -> list[dict]:
    "The constants `final_result` depends on (each node once)."
    by, seen, todo, out = {n['id']: n for n in nodes}, set(), ['final_result'], []
    while todo:
        i = todo.pop()
        if i in seen or i not in by: continue
        seen.add(i)
        n = by[i]
        if n['op'] == 'const': out.append(n)
        todo.extend(n.get('args') or [])
    return out


def _key(v) -> float: return round(float(v), 6)


def classify(record: dict, gold: dict, question: str) -> str:
    "The class of one DAGGER record (see the module's docstring) against `gold`, its problem's gold graph."
    from dagger import graph as G
    from dagger.numbers import extract_numbers
    if str(record.get('correct')) == 'True': return 'correct'
    try: nodes = G.parse(record['output']).nodes
    except G.GraphError: return 'no_graph'
    if str(record.get('executed')) != 'True' or not any(n['id'] == 'final_result' for n in nodes): return 'no_graph'
    mine = Counter(_key(n['val']) for n in used(nodes) if n.get('val') is not None)
    need = Counter(_key(n['val']) for n in used(gold['nodes']))
    distract = {_key(n['val']) for n in gold['nodes'] if n['op'] == 'const' and n.get('distractor')} - set(need)
    stated = {_key(x.value) for x in extract_numbers(question)} | {_key(n['val']) for n in gold['nodes'] if n['op'] == 'const'}
    if any(v not in stated for v in mine): return 'invented'
    if any(v in distract for v in mine): return 'distractor'
    if mine == need: return 'wrong_ops'
    if set(mine) < set(need) or (set(mine) == set(need) and sum(mine.values()) < sum(need.values())): return 'missing'
    return 'other'


def gold_index(splits) -> dict:
    "{split: {id: Problem}} with verified gold graphs."
    from dagger.config import load_profile
    from dagger.data import load_split
    cfg = load_profile('cpu-study')
    return {s: {p.id: p for p in load_split(s, cfg=cfg)} for s in splits}


def tables(runs: Path):
    import pandas as pd
    from dagger.files import read_jsonl
    from dagger.stats import wilson
    recs = [r for f in sorted((runs/'records').glob('eval__*-*.jsonl.gz')) for r in read_jsonl(f) if r['method'] == 'dagger']
    gold = gold_index(sorted({r['split'] for r in recs}))
    rows, ops = [], []
    for r in recs:
        p = gold[r['split']].get(r['id'])
        arm = r.get('phase') or 'untrained'
        if p is None or p.gold_graph is None: rows.append(dict(arm=arm, split=r['split'], cls='no_gold')); continue
        rows.append(dict(arm=arm, split=r['split'], cls=classify(r, p.gold_graph, p.question)))
        if str(r.get('executed')) == 'True':
            ops.append(dict(arm=arm, split=r['split'], ops=float(r['n_ops']), gold_ops=float(r['gold_ops'])))
    df = pd.DataFrame(rows)
    out = []
    for (arm, split), g in df.groupby(['arm', 'split'], sort=False):
        n = int((g['cls'] != 'no_gold').sum())
        for c in CLASSES:
            k = int((g['cls'] == c).sum())
            lo, hi = wilson(k, n)
            out.append(dict(arm=arm, split=split, cls=c, k=k, n=n, share=round(100 * k / max(n, 1), 1),
                            lo=round(100 * lo, 1), hi=round(100 * hi, 1), no_gold=int((g['cls'] == 'no_gold').sum()),
                            smoke=n < 30))
    o = pd.DataFrame(ops)
    o['fewer'], o['same'], o['more'] = o['ops'] < o['gold_ops'], o['ops'] == o['gold_ops'], o['ops'] > o['gold_ops']
    op_table = o.groupby(['arm', 'split'], sort=False).agg(n=('ops', 'size'), mean_ops=('ops', 'mean'),
                                                           mean_gold_ops=('gold_ops', 'mean'), fewer=('fewer', 'mean'),
                                                           same=('same', 'mean'), more=('more', 'mean')).reset_index()
    for c in ('fewer', 'same', 'more'): op_table[c] = (100 * op_table[c]).round(1)
    return pd.DataFrame(out), op_table.round(2)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--runs', default='runs/cpu-study')
    ap.add_argument('--out', default='bench/results/student_errors')
    a = ap.parse_args(argv)
    classes, op_table = tables(ROOT/a.runs)
    out = ROOT/a.out
    out.mkdir(parents=True, exist_ok=True)
    classes.to_csv(out/'classes.csv', index=False)
    op_table.to_csv(out/'ops.csv', index=False)
    wide = classes.assign(cell=classes.apply(lambda r: f"{r['share']} ({r['lo']}–{r['hi']})", axis=1)) \
                  .pivot(index=['arm', 'split', 'n'], columns='cls', values='cell')[list(CLASSES)]
    print(wide.to_markdown())
    print()
    print(op_table.to_markdown(index=False))


if __name__ == '__main__':
    main()
