"""The CPU study's targets (issue 48), met or not, from its committed per-problem records: each accuracy with its
Wilson 95% interval, each comparison paired on the same problems (McNemar's exact test, a paired bootstrap interval).

Usage: .venv/bin/python bench/study_targets.py [--runs runs/cpu-study] [--minutes M]

Reads `--runs`/records/eval__*.jsonl.gz (written by `dagger-reproduce`), and the run's wall time from
`--runs`/reproduce.log (the `real` line of bash's `time`, or GNU time's "Elapsed (wall clock) time") unless
`--minutes` gives it. Writes
`--runs`/targets.json and prints the same as a Markdown table. The targets:

- SFT→GRPO at least 30% on MSVAMP-bn and 10% on MGSM-bn;
- DAGGER-SFT above 5-shot CoT of the same model on all four splits, the paired interval above 0;
- SFT→GRPO above SFT, paired, on each split;
- DAGGER-SFT's output tokens below CoT's on the original splits, paired;
- the student's |V_op| within ±25% of the gold graphs' and its graphs executing on at least 90% of problems;
- the whole study at most 120 minutes."""
from __future__ import annotations
import argparse, json, re, sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

SPLITS = ('mgsm_bn', 'mgsm_bn_distract', 'msvamp_bn', 'msvamp_bn_distract')
ORIGINAL = ('mgsm_bn', 'msvamp_bn')


def arms(folder: Path) -> dict:
    "{(method, phase, init): {split: {id: record}}} from the run's evaluation records."
    from dagger.files import read_jsonl
    out = {}
    for f in sorted(folder.glob('eval__*.jsonl.gz')):
        for r in read_jsonl(f):
            key = (r['method'], r.get('phase') or 'untrained', r.get('init') or ('base' if r.get('phase') == 'grpo_base' else 'sft'))
            out.setdefault(key, {}).setdefault(r['split'], {})[r['id']] = r
    return out


def accuracy(rs: dict) -> dict:
    from dagger.stats import wilson
    k, n = sum(bool(r['correct']) for r in rs.values()), len(rs)
    lo, hi = wilson(k, n)
    return dict(n=n, value=round(100 * k / n, 1), ci95=[round(100 * lo, 1), round(100 * hi, 1)], smoke=n < 30)


def paired(a: dict, b: dict, field: str = 'correct') -> dict:
    "a minus b on the problems both answered: accuracy points (McNemar, paired bootstrap) or mean tokens (bootstrap)."
    from dagger.stats import mcnemar, paired_bootstrap_diff
    ids = sorted(set(a) & set(b))
    if field == 'correct':
        x, y = [bool(a[i]['correct']) for i in ids], [bool(b[i]['correct']) for i in ids]
        m, d = mcnemar(x, y), paired_bootstrap_diff(x, y)
        return dict(n=len(ids), diff=round(100 * d['diff'], 1), ci95=[round(100 * d['lo'], 1), round(100 * d['hi'], 1)],
                    p=round(m.p, 4), only_a=m.b, only_b=m.c, smoke=len(ids) < 30)
    x, y = [float(a[i][field]) for i in ids], [float(b[i][field]) for i in ids]
    d = paired_bootstrap_diff(x, y)
    return dict(n=len(ids), diff=round(d['diff'], 1), ci95=[round(d['lo'], 1), round(d['hi'], 1)], p=round(d['p'], 4),
                smoke=len(ids) < 30)


def shape(rs: dict) -> dict:
    "Execution rate and mean operations per graph against the gold graphs' (|V_op|)."
    n, ran = len(rs), [r for r in rs.values() if r.get('executed')]
    ops = sum(r.get('n_ops') or 0 for r in ran) / max(len(ran), 1)          # over the graphs that ran, as Table 8
    known = [r['gold_ops'] for r in rs.values() if r.get('gold_ops') is not None]   # problems with a gold graph
    gold = sum(known) / max(len(known), 1)
    return dict(n=n, executed=round(100 * sum(bool(r.get('executed')) for r in rs.values()) / n, 1),
                vop=round(ops, 2), gold_vop=round(gold, 2), vop_ratio=round(ops / gold, 2) if gold else None)


def minutes(log: Path) -> float | None:
    "The run's wall time in minutes from GNU time's line in `log`, if it has one."
    if not log.exists(): return None
    text = log.read_text(errors='replace')
    if m := re.search(r'^real\s+(\d+)m([\d.]+)s$', text, flags=re.M):          # bash's `time`
        return round(int(m.group(1)) + float(m.group(2)) / 60, 1)
    m = re.search(r'Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): ([\d:.]+)', text)   # GNU time -v
    if not m: return None
    parts = [float(x) for x in m.group(1).split(':')]
    return round(sum(v * 60 ** (len(parts) - 1 - i) for i, v in enumerate(parts)) / 60, 1)


def targets(a: dict, wall: float | None, ablations_wall: float | None = None) -> list[dict]:
    cot, sft, grpo = (a.get(k, {}) for k in (('cot', 'untrained', 'sft'), ('dagger', 'sft', 'sft'), ('dagger', 'grpo', 'sft')))
    rows = []
    for split, goal in (('msvamp_bn', 30.0), ('mgsm_bn', 10.0)):
        if split in grpo:
            c = accuracy(grpo[split])
            rows.append(dict(target=f'SFT→GRPO ≥ {goal:g}% on {split}', split=split, measured=c, met=c['value'] >= goal))
    for split in SPLITS:
        if split in sft and split in cot:
            c = paired(sft[split], cot[split])
            rows.append(dict(target='DAGGER-SFT > 5-shot CoT (paired CI above 0)', split=split, measured=c, met=c['ci95'][0] > 0))
    for split in SPLITS:
        if split in grpo and split in sft:
            c = paired(grpo[split], sft[split])
            rows.append(dict(target='SFT→GRPO > SFT (paired CI above 0)', split=split, measured=c, met=c['ci95'][0] > 0))
    for split in ORIGINAL:
        if split in sft and split in cot:
            c = paired(sft[split], cot[split], 'tokens')
            rows.append(dict(target='DAGGER-SFT tokens < CoT (paired CI below 0)', split=split, measured=c, met=c['ci95'][1] < 0))
    for name, arm in (('DAGGER-SFT', sft), ('SFT→GRPO', grpo)):
        for split in SPLITS:
            if split in arm:
                s = shape(arm[split])
                ok = s['executed'] >= 90 and s['vop_ratio'] is not None and abs(s['vop_ratio'] - 1) <= 0.25
                rows.append(dict(target=f'{name}: |V_op| within ±25% of gold, execution ≥ 90%', split=split, measured=s, met=ok))
    rows.append(dict(target='cpu-study ≤ 120 minutes, install included', split='', measured=dict(minutes=wall),
                     met=None if wall is None else wall <= 120))
    rows.append(dict(target='cpu-ablations ≤ 120 minutes, after cpu-study in its clone', split='',
                     measured=dict(minutes=ablations_wall), met=None if ablations_wall is None else ablations_wall <= 120))
    return rows


def cells(a: dict) -> list[dict]:
    "Accuracy, execution and tokens of every arm on every split."
    out = []
    for (method, phase, init), by in sorted(a.items()):
        for split in SPLITS:
            if split in by:
                rs = by[split]
                out.append(dict(method=method, phase=phase, init=init, split=split, **accuracy(rs),
                                executed=shape(rs)['executed'] if method == 'dagger' else None,
                                mean_tokens=round(sum(r['tokens'] for r in rs.values()) / len(rs), 1)))
    return out


def compute(runs: Path, wall: float | None = None) -> dict:
    ("The targets and every cell of the run in folder `runs` (its wall time from its log unless `wall` is given; "
     "cpu-ablations' from its log beside it).")
    a = arms(runs/'records')
    if not a: raise SystemExit(f'no evaluation records in {runs}/records: run make reproduce PROFILE=cpu-study first')
    return dict(targets=targets(a, minutes(runs/'reproduce.log') if wall is None else wall,
                                minutes(runs.parent/'cpu-ablations'/'reproduce.log')), cells=cells(a))


def show(v: dict) -> str:
    if 'minutes' in v: return f"{v['minutes']} min"
    if 'executed' in v and 'vop' in v: return f"executed {v['executed']}%, |V_op| {v['vop']} vs gold {v['gold_vop']} (×{v['vop_ratio']})"
    if 'diff' in v:
        p = '< 0.001' if v['p'] < 0.001 else f"= {v['p']}"
        return f"{v['diff']:+} ({v['ci95'][0]} to {v['ci95'][1]}), p {p}, n = {v['n']}"
    return f"{v['value']}% ({v['ci95'][0]}–{v['ci95'][1]}), n = {v['n']}"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--runs', default='runs/cpu-study')
    ap.add_argument('--minutes', type=float, default=None)
    args = ap.parse_args(argv)
    runs = Path(args.runs)
    out = compute(runs, args.minutes)
    (runs/'targets.json').write_text(json.dumps(out, indent=1, ensure_ascii=False) + '\n')
    print('| target | split | measured | met |\n|---|---|---|---|')
    for t in out['targets']:
        print(f"| {t['target']} | {t['split']} | {show(t['measured'])} | {'n/a' if t['met'] is None else 'yes' if t['met'] else 'no'} |")
    return out


if __name__ == '__main__':
    main()
