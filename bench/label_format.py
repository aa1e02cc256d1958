"""The label-format ablation: the same student, budget and seed trained on gold graphs in the paper's form against
the spans form (issue 48, item 1), compared on the same held-out problems with a paired test.

Usage: .venv-vllm/bin/python bench/label_format.py [--n-train 448] [--forms paper,spans] [--out bench/results/label_format]

Each form is one run of the pipeline's dataset, teacher and SFT stages of the cpu-study profile
(`dagger-reproduce --profile cpu-study --only dataset teacher sft`) with `sft.gold_format` set, `sft.n_train` examples
no learning curve and no untrained baselines (`sft.baselines` empty: the two students are the comparison), into
results/label-<form> (executed notebooks in runs/label-<form>). The SFT stage evaluates its
student on the evaluation's seeded sample of held-out MSVAMP-bn problems (`sft.eval_sample_n`, 250) at the
evaluation's budget. This script then pairs the two students' DAGGER records by problem and writes, into `--out`:
`summary.json` (accuracy with Wilson intervals, execution rate, mean output tokens per form; McNemar's exact test and a
paired bootstrap interval of the accuracy difference) and `records_<form>.jsonl.gz` (the per-problem records).

An arm is a form plus settings: `--arm bn-en:paper:teacher.more_msvamp_splits=msvamp_en` defines arm `bn-en`, the paper
form trained on a pool without the Spanish and Thai versions, to name in `--forms`. The first arm is paired with each
of the others. `--reuse` takes an arm's records from an earlier run of this script when its results folder has them;
`--reuse-from bench/results/label_format` takes them from that committed output instead (`records_<arm>.jsonl.gz` and
its `summary.json`), so a fresh clone can pair a new arm with one measured before."""
from __future__ import annotations
import argparse, gzip, json, subprocess, sys, time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


ARMS = {'paper': ('paper', ()), 'spans': ('spans', ())}   # name: (sft.gold_format, more settings)


def parse_arm(spec: str) -> tuple[str, tuple[str, tuple[str, ...]]]:
    "`name:form:key=value,key=value` as (name, (form, settings))."
    name, form, *rest = spec.split(':', 2)
    if form not in ('paper', 'spans'): raise SystemExit(f'--arm {spec}: the form must be paper or spans')
    return name, (form, tuple(x for x in (rest[0].split(',') if rest else []) if x))


def run_form(form: str, n_train: int) -> float:
    "Run the dataset, teacher and SFT stages for one arm; return the seconds it took."
    t0 = time.time()
    gold, more = ARMS[form]
    cmd = [str(Path(sys.executable).parent/'dagger-reproduce'), '--profile', 'cpu-study', '--only', 'dataset', 'teacher', 'sft',
           '--out', f'runs/label-{form}', '--set', f'results_dir=results/label-{form}', f'sft.gold_format={gold}',
           f'sft.n_train={n_train}', 'sft.curve_examples=', 'sft.baselines=', *more]
    subprocess.run(cmd, cwd=ROOT, check=True)
    return time.time() - t0


def student_records(form: str) -> list[dict]:
    "The SFT student's DAGGER records of one form's run."
    recs = [json.loads(l) for l in (ROOT/f'results/label-{form}/sft/records.jsonl').read_text().splitlines() if l.strip()]
    return [r for r in recs if r.get('phase') == 'sft' and r.get('method') == 'dagger']


def committed_records(folder: Path, arm: str) -> tuple[list[dict], dict]:
    "An arm's records and its summary entry from a committed output folder of this script."
    f = folder/f'records_{arm}.jsonl.gz'
    if not f.exists(): raise SystemExit(f'--reuse-from: {f} does not exist')
    from dagger.files import read_jsonl
    return read_jsonl(f), json.loads((folder/'summary.json').read_text())['forms'][arm]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--n-train', type=int, default=448)
    ap.add_argument('--forms', default='paper,spans')
    ap.add_argument('--skip-training', action='store_true', help='pair the records of runs made earlier')
    ap.add_argument('--arm', action='append', default=[], help='name:form:key=value,... (an arm to name in --forms)')
    ap.add_argument('--reuse', action='store_true', help="take an arm's records from an earlier run when they are there")
    ap.add_argument('--reuse-from', help='a committed output folder to take the arms it holds from')
    ap.add_argument('--out', default=str(ROOT/'bench/results/label_format'))
    a = ap.parse_args()
    from dagger.stats import mcnemar, paired_bootstrap_diff, wilson
    ARMS.update(parse_arm(x) for x in a.arm)
    forms = a.forms.split(',')
    if unknown := [f for f in forms if f not in ARMS]: raise SystemExit(f'--forms: unknown arm(s) {unknown}; define them with --arm')
    kept = {f: committed_records(Path(a.reuse_from), f) for f in forms
            if a.reuse_from and (Path(a.reuse_from)/f'records_{f}.jsonl.gz').exists()}
    done = lambda f: (ROOT/f'results/label-{f}/sft/records.jsonl').exists()
    seconds = {f: None if a.skip_training or f in kept or (a.reuse and done(f)) else round(run_form(f, a.n_train), 1)
               for f in forms}
    recs = {f: {r['id']: r for r in (kept[f][0] if f in kept else student_records(f))} for f in forms}
    ids = sorted(set.intersection(*(set(r) for r in recs.values())))
    out, summary = Path(a.out), dict(date=time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime()), n_train=a.n_train,
                                     profile='cpu-study', split='msvamp_bn (held-out half, seeded sample)', n=len(ids),
                                     stage_seconds=seconds, arms={f: dict(gold_format=ARMS[f][0], settings=list(ARMS[f][1]))
                                                                  for f in forms}, forms={})
    out.mkdir(parents=True, exist_ok=True)
    for f in forms:
        rs = [recs[f][i] for i in ids]
        k = sum(bool(r['correct']) for r in rs)
        lo, hi = wilson(k, len(rs))
        summary['forms'][f] = dict(correct=k, accuracy=round(100 * k / len(rs), 1), ci95=[round(100 * lo, 1), round(100 * hi, 1)],
                                   executed=round(100 * sum(bool(r.get('executed')) for r in rs) / len(rs), 1),
                                   mean_tokens=round(sum(r['tokens'] for r in rs) / len(rs), 1),
                                   train=kept[f][1].get('train') if f in kept else
                                   json.loads((ROOT/f'results/label-{f}/sft/run.json').read_text()).get('train_rows'),
                                   **({'from': str(a.reuse_from)} if f in kept else {}))
        (out/f'records_{f}.jsonl.gz').write_bytes(gzip.compress(''.join(json.dumps(r, ensure_ascii=False) + '\n' for r in rs).encode(), mtime=0))
    summary['paired'] = {}
    for other in forms[1:]:
        x, y = ([bool(recs[f][i]['correct']) for i in ids] for f in (forms[0], other))
        m, d = mcnemar(x, y), paired_bootstrap_diff(x, y)
        summary['paired'][f'{forms[0]} - {other}'] = dict(
            unit='accuracy points', mcnemar=dict(only_first=m.b, only_second=m.c, p=round(m.p, 4)),
            bootstrap={k: round(100 * v, 1) if k in ('mean_a', 'mean_b', 'diff', 'lo', 'hi') else
                       (round(v, 4) if isinstance(v, float) else v) for k, v in d.items()})
    (out/'summary.json').write_text(json.dumps(summary, indent=1, ensure_ascii=False) + '\n')
    print(json.dumps(summary, indent=1, ensure_ascii=False))


if __name__ == '__main__':
    main()
