"""The CPU study's pool-size curve: does the Gemma-3-270M student get better with more SFT examples?

The study's SFT stage trains on `sft.n_train` verified gold graphs drawn in a seeded order from the pool (so a smaller
pool is a prefix of a larger one) and checks the student on the same `sft.eval_sample_n` MSVAMP-bn held-out problems.
This script gathers those checks from SFT stages run at several pool sizes, publishes their per-problem records, and
tabulates accuracy and execution against the pool size, each with its Wilson 95% interval, and each pool against the
smallest on the same problems (paired bootstrap interval, McNemar's exact p).

    # one SFT stage per pool size, each in its own results folder holding a copy of the study's stages 1-3:
    .venv-vllm/bin/dagger-reproduce --profile cpu-study --only 4 --out runs/cpu-study-pool/n56 \\
        --set results_dir=results/cpu-study-pool56 sft.n_train=56
    .venv/bin/python bench/study_pool_curve.py --runs results/cpu-study-pool56 results/cpu-study-pool112 results/cpu-study
    cp runs/cpu-study-pool/n56/stage_4_sft.ipynb runs/cpu-study/pool/n56/     # keep the executed notebook with its records

    .venv/bin/python bench/study_pool_curve.py          # recompute from the committed records only

Writes runs/cpu-study/pool/sft_n<N>.jsonl.gz (with --runs; the executed SFT notebooks of the pool runs are kept beside them,
runs/cpu-study/pool/n<N>/), figures/tables/pool_curve_ours-cpu-study.*
and figures/pool_curve_ours-cpu-study.* (with sidecars), and prints the table."""
from __future__ import annotations
import argparse, gzip, json, sys
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from dagger.files import atomic_write_bytes, read_jsonl
from dagger.config import load_profile
from dagger.stats import mcnemar, paired_bootstrap_diff, wilson  # noqa: E402

RECORDS = ROOT/'runs'/'cpu-study'/'pool'
NAME = 'pool_curve_ours-cpu-study'
RUN_FACTS = ('train_rows', 'steps', 'wall_s', 'train_loss', 'best_eval_loss')


class PoolCurveError(ValueError):
    "The pool runs cannot be compared (missing files, different problems)."


def publish(run_dir: Path, dest: Path = RECORDS) -> Path:
    "Copy one SFT stage's student records (the trained student only) and its run facts into `dest`; return the file."
    run, recs = run_dir/'sft'/'run.json', run_dir/'sft'/'records.jsonl'
    for p in (run, recs):
        if not p.is_file(): raise PoolCurveError(f'{p}: no such file (run the SFT stage into {run_dir} first)')
    facts = {k: json.loads(run.read_text())[k] for k in RUN_FACTS}
    rows = [r | {'pool': facts} for r in read_jsonl(recs) if r['model'].endswith('(SFT)')]
    if not rows: raise PoolCurveError(f'{recs}: no records of the trained student')
    out = dest/f"sft_n{facts['train_rows']}.jsonl.gz"
    text = ''.join(json.dumps(r, ensure_ascii=False) + '\n' for r in rows)
    return atomic_write_bytes(out, gzip.compress(text.encode(), mtime=0))


def curve(files: list[Path]) -> pd.DataFrame:
    "One row per pool size: accuracy and execution with Wilson intervals, and the paired difference to the smallest pool."
    runs = sorted(((pd.DataFrame(read_jsonl(f)), f) for f in files), key=lambda t: t[0]['pool'].iloc[0]['train_rows'])
    if len(runs) < 2: raise PoolCurveError(f'{len(runs)} pool run(s); the curve needs at least two')
    base = runs[0][0].sort_values('id')
    rows = []
    for df, f in runs:
        df = df.sort_values('id')
        if list(df['id']) != list(base['id']): raise PoolCurveError(f'{f.name}: not the same problems as {runs[0][1].name}')
        facts, n, k, ran = df['pool'].iloc[0], len(df), int(df['correct'].sum()), int(df['executed'].fillna(False).astype(bool).sum())
        lo, hi = wilson(k, n)
        elo, ehi = wilson(ran, n)
        d = paired_bootstrap_diff(df['correct'].to_numpy(float), base['correct'].to_numpy(float))
        rows.append({'SFT examples': facts['train_rows'], 'steps': facts['steps'], 'train s': round(facts['wall_s']),
                     'train loss': facts['train_loss'], 'best val loss': facts['best_eval_loss'], 'n': n,
                     'accuracy %': 100 * k / n, 'acc lo': 100 * lo, 'acc hi': 100 * hi,
                     'executed %': 100 * ran / n, 'exec lo': 100 * elo, 'exec hi': 100 * ehi,
                     'mean |V_op|': float(df['n_ops'].mean()),
                     'Δ acc vs smallest (points)': 100 * d['diff'], 'Δ lo': 100 * d['lo'], 'Δ hi': 100 * d['hi'],
                     'McNemar p': mcnemar(df['correct'], base['correct']).p, 'split': df['split'].iloc[0]})
    return pd.DataFrame(rows)


def plot(table: pd.DataFrame):
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt
    from dagger.figures import STYLE
    with plt.rc_context(STYLE):
        fig, ax = plt.subplots(figsize=(4.2, 2.8))
        x = table['SFT examples']
        for col, lo, hi, name in (('accuracy %', 'acc lo', 'acc hi', 'accuracy'), ('executed %', 'exec lo', 'exec hi', 'graphs executed')):
            ax.errorbar(x, table[col], yerr=[table[col] - table[lo], table[hi] - table[col]], marker='o', capsize=3, label=name)
        ax.set_xscale('log', base=2); ax.set_xticks(list(x)); ax.set_xticklabels([str(v) for v in x])
        ax.set_xlabel('SFT examples (verified gold graphs)'); ax.set_ylabel('% of problems'); ax.set_ylim(0, 100)
        ax.legend(loc='center right')
        n = int(table['n'].iloc[0])
        ax.set_title(f'Gemma-3-270M SFT student (profile cpu-study) by pool size:\nMSVAMP-bn held-out, the same n={n} problems each; 95% Wilson whiskers', loc='left')
    return fig


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--runs', nargs='*', default=[], help='results folders of SFT stages run at different pool sizes')
    a = ap.parse_args(argv)
    for r in a.runs: print('published', publish(ROOT/r).relative_to(ROOT))
    files = sorted(RECORDS.glob('sft_n*.jsonl.gz'))
    table = curve(files)
    from dagger.figures import save_figure, save_table
    cfg = load_profile('cpu-study')
    source = f"our run: gemma3-270m SFT at {len(table)} pool sizes, profile cpu-study, {table['split'].iloc[0]} n={table['n'].iloc[0]}"
    out = save_table(table, NAME, cfg, files, source, 'SFT accuracy against the number of SFT examples')
    out += save_figure(plot(table), NAME, cfg, files, source)
    for p in out: print('wrote', Path(p).relative_to(ROOT))
    print(table.round(2).to_string(index=False))
    return table


if __name__ == '__main__':
    main()
