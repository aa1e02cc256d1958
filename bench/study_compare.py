"""Two runs of the CPU study compared arm by arm on the same problems: each arm's accuracy in run B minus run A,
paired by problem (McNemar's exact test, a paired bootstrap interval), and its output tokens likewise.

Usage: .venv/bin/python bench/study_compare.py --a REV:runs/cpu-study --b runs/cpu-study [--out FILE]

A run is a folder of committed records (`records/eval__*.jsonl.gz`, written by `dagger-reproduce`), either on disk or
as `REV:path`, read from git revision REV, so an earlier run's records need no checkout. Prints a Markdown table and
writes it as JSON to `--out` when given. Records are matched by arm (method, phase, init), split and problem id; a
split or arm only one run has is left out."""
from __future__ import annotations
import argparse, gzip, io, json, subprocess, sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def _git(*args) -> bytes:
    return subprocess.run(['git', *args], cwd=ROOT, capture_output=True, check=True).stdout


def run_records(spec: str) -> list[dict]:
    "The evaluation records of run `spec`: a folder, or `REV:folder` in git revision REV."
    from dagger.files import read_jsonl
    if ':' in spec and not Path(spec).exists():
        rev, folder = spec.split(':', 1)
        names = [n for n in _git('ls-tree', '--name-only', f'{rev}:{folder}/records').decode().split()
                 if n.startswith('eval__') and n.endswith('.jsonl.gz')]
        out = []
        for n in names:
            with gzip.open(io.BytesIO(_git('show', f'{rev}:{folder}/records/{n}')), 'rt', encoding='utf-8') as f:
                out += [json.loads(line) for line in f if line.strip()]
        return out
    return [r for f in sorted((Path(spec)/'records').glob('eval__*.jsonl.gz')) for r in read_jsonl(f)]


def arm_name(r: dict) -> str:
    phase = r.get('phase') or 'untrained'
    return f"{r['method']} {phase}" + (f" from {r['init']}" if r.get('init') and phase == 'grpo' and r['init'] != 'sft' else '')


def compare(a: list[dict], b: list[dict], seed: int = 0) -> list[dict]:
    "One row per arm and split both runs have: accuracy and tokens, B − A, paired by problem."
    import pandas as pd
    from dagger.metrics import paired_accuracy
    from dagger.stats import paired_bootstrap_diff
    da, db = (pd.DataFrame(x).assign(arm=lambda d: d.apply(arm_name, axis=1)) for x in (a, b))
    rows = []
    for (arm, split), gb in db.groupby(['arm', 'split'], sort=True):
        ga = da[(da['arm'] == arm) & (da['split'] == split)]
        if ga.empty: continue
        acc = paired_accuracy(gb, ga, seed=seed)
        both = gb.merge(ga, on='id', suffixes=('_b', '_a'))
        tok = paired_bootstrap_diff(both['tokens_b'].astype(float), both['tokens_a'].astype(float), seed=seed)
        same = int((both['output_b'] == both['output_a']).sum())
        rows.append(dict(arm=arm, split=split, n=acc['n'], acc_a=round(acc['value_b'], 1), acc_b=round(acc['value_a'], 1),
                         diff=round(acc['diff'], 1), ci=[round(acc['ci_lo'], 1), round(acc['ci_hi'], 1)],
                         p=round(acc['p'], 4), tokens_diff=round(tok['diff'], 1), tokens_ci=[round(tok['lo'], 1), round(tok['hi'], 1)],
                         same_output=same, smoke=acc['n'] < 30))
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--a', required=True)
    ap.add_argument('--b', required=True)
    ap.add_argument('--out', default='')
    x = ap.parse_args(argv)
    rows = compare(run_records(x.a), run_records(x.b))
    print(f'B = {x.b}, A = {x.a}\n')
    print('| arm | split | n | A | B | B − A (95% CI) | p | tokens B − A (95% CI) | same output |')
    print('|---|---|---|---|---|---|---|---|---|')
    for r in rows:
        print(f"| {r['arm']} | {r['split']} | {r['n']} | {r['acc_a']} | {r['acc_b']} | {r['diff']:+} ({r['ci'][0]} to {r['ci'][1]}) "
              f"| {r['p']} | {r['tokens_diff']:+} ({r['tokens_ci'][0]} to {r['tokens_ci'][1]}) | {r['same_output']} |")
    if x.out:
        from dagger.files import write_json
        write_json(x.out, dict(a=x.a, b=x.b, rows=rows))


if __name__ == '__main__':
    main()
