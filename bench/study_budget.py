"""The CPU study's new-token budget: the study caps every output at 320 new tokens (`eval.max_new_tokens`), and
students writing graphs for +D problems often reach it. This re-asks the SFT and SFT→GRPO students of a finished
`cpu-study` run the same +D problems (greedy, same prompts, same engine) with a larger cap and compares, problem by
problem, with the study's own records: how many outputs were cut, execution rate and accuracy under each cap.

    .venv-vllm/bin/python bench/study_budget.py [--cap 640]     # after `make reproduce PROFILE=cpu-study`

Writes bench/results/study_budget.json."""
import argparse, json, time
from pathlib import Path

import pandas as pd

from dagger.config import load_profile
from dagger.files import read_jsonl
from dagger import layout
from dagger.eval import run_eval, run_name
from dagger.stats import mcnemar, paired_bootstrap_diff, wilson

ROOT = Path(__file__).resolve().parents[1]


def summary(df: pd.DataFrame) -> dict:
    n, k, ran = len(df), int(df['correct'].sum()), int(df['executed'].fillna(False).astype(bool).sum())
    return dict(n=n, accuracy=100 * k / n, accuracy_ci=[100 * x for x in wilson(k, n)], exec_rate=100 * ran / n,
                exec_ci=[100 * x for x in wilson(ran, n)], cut=int((df['finish_reason'] == 'length').sum()),
                mean_tokens=float(df['tokens'].mean()))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--cap', type=int, default=640)
    ap.add_argument('--split', default='msvamp_bn_distract', help='a +D split of the study (the committed result: msvamp_en_distract of the English SmolLM2 study)')
    a = ap.parse_args()
    base = load_profile('cpu-study')
    cfg = base.replace(**{'eval.max_new_tokens': a.cap})
    out = dict(split=a.split, caps=[base.eval.max_new_tokens, a.cap], phases={})
    for phase in ('sft', 'grpo'):
        t0 = time.time()
        study = pd.DataFrame(read_jsonl(layout.path(base, 'eval')/f'{run_name(base.model)}-{phase}'/'records.jsonl'))
        study = study[(study['split'] == a.split) & (study['method'] == 'dagger')]
        more = run_eval(cfg, methods=['dagger'], splits=[a.split], phase=phase, write=False)['records']
        pair = study[['id', 'correct', 'executed']].merge(more[['id', 'correct', 'executed']], on='id', suffixes=('_study', '_more'))
        ex = lambda s: s.fillna(False).astype(bool).astype(float)
        out['phases'][phase] = dict(
            study=summary(study), larger_cap=summary(more), paired_n=len(pair), seconds=round(time.time() - t0, 1),
            accuracy_diff=paired_bootstrap_diff(pair['correct_more'].astype(float), pair['correct_study'].astype(float)),
            accuracy_mcnemar=mcnemar(pair['correct_more'].astype(bool), pair['correct_study'].astype(bool))._asdict(),
            exec_diff=paired_bootstrap_diff(ex(pair['executed_more']), ex(pair['executed_study'])))
    dest = ROOT/'bench'/'results'/'study_budget.json'
    dest.write_text(json.dumps(out, indent=1, default=float))
    print(json.dumps(out, indent=1, default=float))


if __name__ == '__main__':
    main()
