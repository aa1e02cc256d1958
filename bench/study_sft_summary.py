"""The CPU study's SFT stage, summarised from its per-problem records: the student against the untrained model's 5-shot
CoT and DAGGER on the held-out MSVAMP-bn sample, and the learning curve point by point, each comparison paired on the
same problems.

Usage: .venv/bin/python bench/study_sft_summary.py [--results results/cpu-study/sft] [--out runs/cpu-study-sft]

Reads the SFT stage's `records.jsonl` (the untrained CoT and DAGGER arms and the student, on `sft.eval_sample_n`
held-out MSVAMP-bn problems) and `curve_records.jsonl` (the student after each of `sft.curve_examples`, on
`sft.curve_sample_n` problems of each curve split) from `--results`, or their gzip copies from `--out` when
`--results` lacks them. Writes into `--out`: the gzip copies (`records.jsonl.gz`, `curve_records.jsonl.gz`) and
`summary.json`: per arm and per curve point, accuracy with its Wilson 95% interval, execution rate and mean output
tokens; per comparison, McNemar's exact test and a paired bootstrap interval of the difference in points."""
from __future__ import annotations
import argparse, gzip, json, sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def load(results: Path, out: Path, name: str) -> list[dict]:
    "The records file `name` from the stage's results folder, else its committed gzip copy."
    from dagger.files import read_jsonl
    for f in (results/name, out/f'{name}.gz'):
        if f.exists(): return read_jsonl(f)
    raise SystemExit(f'neither {results/name} nor {out}/{name}.gz exists: run the SFT stage of cpu-study first')


def cell(rs: list[dict]) -> dict:
    from dagger.stats import wilson
    k, n = sum(bool(r['correct']) for r in rs), len(rs)
    lo, hi = wilson(k, n)
    return dict(n=n, correct=k, accuracy=round(100 * k / n, 1), ci95=[round(100 * lo, 1), round(100 * hi, 1)],
                executed=round(100 * sum(bool(r.get('executed')) for r in rs) / n, 1),
                mean_tokens=round(sum(r['tokens'] for r in rs) / n, 1), smoke=n < 30)


def paired(a: dict, b: dict) -> dict:
    "First minus second, on the problems both answered: McNemar and a paired bootstrap, in accuracy points."
    from dagger.stats import mcnemar, paired_bootstrap_diff
    ids = sorted(set(a) & set(b))
    x, y = [bool(a[i]['correct']) for i in ids], [bool(b[i]['correct']) for i in ids]
    m, d = mcnemar(x, y), paired_bootstrap_diff(x, y)
    return dict(n=len(ids), only_first=m.b, only_second=m.c, mcnemar_p=round(m.p, 4),
                diff=round(100 * d['diff'], 1), ci95=[round(100 * d['lo'], 1), round(100 * d['hi'], 1)])


def arm_name(r: dict) -> str:
    return f"{r['method']} ({r.get('phase') or 'untrained'})"


def summarise(recs: list[dict], curve: list[dict]) -> dict:
    arms = {}
    for r in recs: arms.setdefault(arm_name(r), {})[r['id']] = r
    student = 'dagger (sft)'
    out = dict(arms={a: cell(list(rs.values())) for a, rs in sorted(arms.items())},
               paired={f'{student} - {a}': paired(arms[student], rs) for a, rs in sorted(arms.items()) if a != student},
               curve={}, curve_paired={})
    points = {}
    for r in curve: points.setdefault(r['split'], {}).setdefault(int(r['examples']), {})[r['id']] = r
    for split, by_n in sorted(points.items()):
        ns = sorted(by_n)
        out['curve'][split] = {str(n): cell(list(by_n[n].values())) for n in ns}
        pairs = list(zip(ns[1:], ns[:-1])) + ([(ns[-1], ns[0])] if len(ns) > 2 else [])
        out['curve_paired'][split] = {f'{hi} - {lo}': paired(by_n[hi], by_n[lo]) for hi, lo in pairs}
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--results', default=str(ROOT/'results/cpu-study/sft'))
    ap.add_argument('--out', default=str(ROOT/'runs/cpu-study-sft'))
    a = ap.parse_args()
    results, out = Path(a.results), Path(a.out)
    recs, curve = load(results, out, 'records.jsonl'), load(results, out, 'curve_records.jsonl')
    out.mkdir(parents=True, exist_ok=True)
    for name, rs in (('records.jsonl', recs), ('curve_records.jsonl', curve)):
        (out/f'{name}.gz').write_bytes(gzip.compress(''.join(json.dumps(r, ensure_ascii=False) + '\n' for r in rs).encode(),
                                                     mtime=0))
    summary = summarise(recs, curve)
    run = results/'run.json'
    if run.exists():
        facts = json.loads(run.read_text())
        summary['training'] = {k: facts.get(k) for k in ('train_rows', 'steps', 'wall_s', 'steps_per_s', 'output_vocab',
                                                         'eval_loss_before', 'best_eval_loss', 'best_checkpoint')}
    (out/'summary.json').write_text(json.dumps(summary, indent=1, ensure_ascii=False) + '\n')
    print(json.dumps(summary, indent=1, ensure_ascii=False))


if __name__ == '__main__':
    main()
