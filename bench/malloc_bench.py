"""Student SFT on the CPU under glibc's default malloc settings against the ones `dagger-reproduce` gives its kernels.

Usage: python bench/malloc_bench.py [--rows 16] [--rounds 2] [--profile cpu-study] [--out bench/results/malloc_bench.json]

glibc serves every allocation above its mmap threshold (128 KiB at first, raised on the fly up to 32 MiB) with a fresh
mmap and returns it to the kernel when it is freed, so a training step that allocates and frees the same activation and
gradient buffers again and again page-faults through zeroed pages each time. `dagger.pipeline.KERNEL_ENV` sets
`GLIBC_TUNABLES` for the stage kernels: a fixed 32 MiB mmap threshold, a 4 GiB trim threshold and a 256 MiB top pad (freed
memory stays in the process and is reused) and transparent huge pages for the heap.

Each condition is the SFT stage's own command (`python -m dagger.sft --profile <profile> sft.n_train=<rows>`) in a child
process with its own results folder holding a copy of the profile's teacher files (run stages 2 and 3 first); conditions
alternate, `--rounds` times. Reported per run: the training's wall time (`wall_s` of the run's run.json, model loading
and merging excluded), the child's user and system CPU seconds and minor page faults (the whole process), the final
validation loss (identical in every condition when only the allocator changes), and the load average.
"""
from __future__ import annotations
import argparse, json, os, platform, resource, shutil, statistics, subprocess, sys, tempfile, time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def run(profile: str, rows: int, env: dict, teacher: Path) -> dict:
    "One SFT run of `rows` teacher rows in a child process with `env` added; its training time, CPU time and faults."
    with tempfile.TemporaryDirectory(prefix='malloc-bench-') as d:
        shutil.copytree(teacher, Path(d)/'teacher')
        cmd = [sys.executable, '-m', 'dagger.sft', '--profile', profile, f'sft.n_train={rows}', f'results_dir={d}']
        clean = {k: v for k, v in os.environ.items() if k != 'GLIBC_TUNABLES'}
        load0, t0 = os.getloadavg()[0], time.perf_counter()
        with open(Path(d)/'stderr.log', 'w') as log:
            p = subprocess.Popen(cmd, cwd=ROOT, env=clean | env, stdout=subprocess.DEVNULL, stderr=log)
            _, status, ru = os.wait4(p.pid, 0)
        if os.waitstatus_to_exitcode(status): raise SystemExit(f'{cmd} failed:\n{(Path(d)/"stderr.log").read_text()[-3000:]}')
        facts = json.loads((Path(d)/'sft'/'run.json').read_text())
    return dict(train_s=facts['wall_s'], steps=facts['steps'], process_s=round(time.perf_counter() - t0, 1),
                user_s=round(ru.ru_utime, 1), sys_s=round(ru.ru_stime, 1), minor_faults=ru.ru_minflt,
                max_rss_gib=round(ru.ru_maxrss / 2**20, 2), best_eval_loss=facts['best_eval_loss'],
                loadavg=[round(load0, 2), round(os.getloadavg()[0], 2)])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--profile', default='cpu-study')
    ap.add_argument('--rows', type=int, default=16)
    ap.add_argument('--rounds', type=int, default=2)
    ap.add_argument('--out', default=str(ROOT/'bench/results/malloc_bench.json'))
    a = ap.parse_args()
    from dagger.config import load_profile
    from dagger.pipeline import KERNEL_ENV
    teacher = load_profile(a.profile).results/'teacher'
    if not (teacher/'sft_train.jsonl').exists(): raise SystemExit(f'no {teacher}/sft_train.jsonl: run stages 2 and 3 of {a.profile} first')
    conditions = {'glibc defaults': {}, 'KERNEL_ENV': dict(KERNEL_ENV)}
    runs = {k: [] for k in conditions}
    for r in range(a.rounds):
        for name, env in conditions.items():
            runs[name].append(run(a.profile, a.rows, env, teacher))
            print(f'round {r + 1} {name}: {runs[name][-1]}', flush=True)
    med = {k: {f: statistics.median(x[f] for x in v) for f in ('train_s', 'process_s', 'sys_s', 'minor_faults')} for k, v in runs.items()}
    base = med['glibc defaults']
    summary = {k: m | dict(train_ratio=round(m['train_s'] / base['train_s'], 3), process_ratio=round(m['process_s'] / base['process_s'], 3))
               for k, m in med.items()}
    out = dict(when=time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime()), profile=a.profile, rows=a.rows, rounds=a.rounds,
               conditions=conditions, summary=summary, runs=runs,
               machine=dict(nproc=os.cpu_count(), platform=platform.platform(), libc=platform.libc_ver()))
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    Path(a.out).write_text(json.dumps(out, indent=1))
    for k, m in summary.items(): print(k, m)
    print('wrote', a.out)


if __name__ == '__main__':
    main()
