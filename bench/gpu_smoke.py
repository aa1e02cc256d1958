"""GPU smoke check: SFT → generation engine → GRPO on a stand-in Gemma-3, with a memory hand-off between phases.

Usage:
  python bench/gpu_smoke.py                    # on a GPU machine (under 8 minutes, no internet, no hub)
  python bench/gpu_smoke.py --device cpu       # the same sequence on the CPU (CI runs this, with --out <dir>)
  python bench/gpu_smoke.py --install-missing  # first pip-install trl/peft if missing (offline: only reports them)

The model is `dagger.standins.build_standin('gemma3')`: a random-weight `Gemma3ForConditionalGeneration` with its
vision tower, tokenizer and processor, written as a hub folder. The sequence: SFT steps on the PEFT path
(`dagger.sft.train_sft`, 'dry' recipe) and its merge; hand-off; greedy generation for 2 prompts on the merged model
(dagger's vLLM engine on a GPU with vLLM, else the transformers backend); hand-off; GRPO steps
(`dagger.grpo.train_grpo`, 'dry' recipe); final hand-off. Every `dagger.llm.hand_off` record (the trainers' own and
this script's) is kept, with the memory while the engine runs. Model folders live in a temporary folder, removed at
the end; nothing is read from the hub (HF_HUB_OFFLINE=1).

Checks: every hand-off record exists and the sequence completes. On cuda also: after each hand-off torch's allocated
memory is at most 10% of the stand-in's bf16 weights + 0.1 GB (the hand-off freed the previous phase), and the engine's
memory while it runs is within the plan's arithmetic (`dagger.grpo.colocate_memory`: vLLM's share of the GPU + 1 GB
for its CUDA context; for the transformers backend weights + KV cache of 2 × max_len tokens + 0.5 GB), and the GPU's free
memory after the engine's hand-off is back within 0.5 GB of before it (vLLM's engine runs in its own process).
Writes <out>/gpu_smoke.json (records, checks, versions, device, seconds per phase) and <out>/gpu_smoke.md (the table);
exits 1 when a check fails, 2 when trl/peft are missing. Default --out: bench/results/gpu_smoke-<device>.
"""
from __future__ import annotations
import argparse, importlib.metadata, importlib.util, json, os, platform, subprocess, sys, tempfile, time, traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault('HF_HUB_OFFLINE', '1')   # everything is local: the stand-in folder and what training writes
import dagger.llm as L  # noqa: E402  (before torch: its thread settings)

MAX_LEN = 1024                      # engine context = GRPO prompt + completion; the stand-in allows 4096
HAND_OFFS_EXPECTED = ('SFT training', 'after SFT', 'engine', 'GRPO', 'GRPO training', 'GRPO checkpoint selection', 'final')
PACKAGES = ('torch', 'transformers', 'trl', 'peft', 'vllm')
PROMPTS = [[dict(role='user', content='Tom has 3 apples and buys 4 more. How many apples?')],
           [dict(role='user', content='Graph: 6 pens at 8 taka each?')]]


def versions() -> dict:
    def v(name):
        try: return importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError: return None
    return {p: v(p) for p in PACKAGES}


def install_missing(device: str) -> list[str]:
    "Missing small pure-Python deps (trl, peft); pip-installs them on a GPU machine; returns what is still missing."
    missing = [p for p in ('trl', 'peft') if importlib.util.find_spec(p) is None]
    if missing and device.startswith('cuda'):
        r = subprocess.run([sys.executable, '-m', 'pip', 'install', '--retries', '0', '--timeout', '10', *missing],
                           capture_output=True, text=True)
        if r.returncode: print(f'pip could not install {missing} (offline?):\n{r.stderr[-500:]}')
        importlib.invalidate_caches()
        missing = [p for p in missing if importlib.util.find_spec(p) is None]
    return missing


def rows() -> list[dict]:
    "Prompt–completion rows with gold graphs (as tests/test_sft.py builds them), with their answer for GRPO."
    from dagger.graph import format_graph
    out = []
    for i, (a, b) in enumerate([(3, 5), (7, 2), (4, 9)]):
        g = format_graph({'nodes': [dict(id='n1', op='const', val=a, distractor=False), dict(id='n2', op='const', val=b, distractor=False),
                                    dict(id='m', op='mul', args=['n1', 'n2'], distractor=False),
                                    dict(id='final_result', op='identity', args=['m'], distractor=False)]})
        out.append(dict(id=f't{i}', prompt=[dict(role='user', content=f'Graph: {a} pens at {b} taka each?')],
                        completion=[dict(role='assistant', content=g)], answer=float(a * b)))
    return out


def vllm_engine(device: str) -> bool:
    return device.startswith('cuda') and importlib.util.find_spec('vllm') is not None


def recipes(device: str):
    from dagger.recipes import get_sft_recipe, get_grpo_recipe
    gpu = device.startswith('cuda')
    sft = get_sft_recipe('dry', bf16=gpu, unsloth=False, max_length=MAX_LEN)
    grpo = get_grpo_recipe('dry', bf16=gpu, unsloth=False, use_vllm=vllm_engine(device), max_steps=1, save_steps=1,
                           max_prompt_length=MAX_LEN - 16, max_completion_length=16)
    return sft, grpo


def plan(config, grpo, device: str) -> dict:
    "The plan's numbers for the stand-in: parameters, weight GB (bf16 on a GPU, fp32 on the CPU), KV cache, vLLM's share."
    from dagger.grpo import param_count, kv_bytes_per_token, colocate_memory
    dtype, nbytes = ('bfloat16', 2) if device.startswith('cuda') else ('float32', 4)
    n, n_vision = param_count(config), param_count(config, vision=True)
    p = dict(dtype=dtype, params=n, params_with_vision=n_vision, weights_gb=n * nbytes / 1e9, weights_with_vision_gb=n_vision * nbytes / 1e9,
             kv_bytes_per_token=kv_bytes_per_token(config, dtype), max_len=MAX_LEN)
    p['kv_gb'] = 2 * MAX_LEN * p['kv_bytes_per_token'] / 1e9
    p['allocated_bound_gb'] = 0.1 * p['weights_with_vision_gb'] + 0.1
    if device.startswith('cuda'):
        total = L.memory()['total_gb']
        p['colocate'] = colocate_memory(config, grpo, total, dtype)
        p['engine_bound_gb'] = (p['colocate']['fraction'] * total + 1.0 if vllm_engine(device)
                                else p['weights_with_vision_gb'] + p['kv_gb'] + 0.5)
    return p


def engine(merged: str, device: str, p: dict):
    "Greedy outputs for 2 prompts and the memory while the engine is up (then the engine is dropped)."
    if vllm_engine(device):
        be = L.VLLMBackend(merged, cache=None, gpu_memory_utilization=p['colocate']['fraction'], max_model_len=MAX_LEN,
                           enforce_eager=True)
    else: be = L.TransformersBackend(merged, cache=None, device=device)
    outs = be.generate(PROMPTS, L.Sampling(max_new_tokens=16))
    running = dict(to='engine (running)', kind=be.kind, time=round(time.time(), 1), **L.memory())
    del be
    return [dict(text=c.text, tokens=c.tokens, finish_reason=c.finish_reason) for (c,) in outs], running


def sequence(work: Path, device: str, timings: dict, facts: dict):
    from transformers import AutoConfig
    from dagger.standins import build_standin
    from dagger.sft import train_sft
    from dagger.grpo import train_grpo
    t = time.time()
    model = str(build_standin('gemma3', work/'standin'))
    sft, grpo = recipes(device)
    facts['plan'] = plan(AutoConfig.from_pretrained(model), grpo, device)
    timings['build'] = time.time() - t; t = time.time()
    data = rows()
    f = train_sft(model, data[:2], data[2:], sft, work/'sft', device=device, seed=0)
    facts['sft'] = {k: f.get(k) for k in ('path', 'precision', 'steps', 'train_loss', 'best_eval_loss', 'merged')}
    timings['sft'] = time.time() - t; t = time.time()
    L.hand_off('engine')
    facts['outputs'], facts['engine_running'] = engine(f['merged'], device, facts['plan'])
    timings['engine'] = time.time() - t; t = time.time()
    L.hand_off('GRPO')
    g = train_grpo(f['merged'], data[:2], data[2:], grpo, work/'grpo', device=device, seed=0)
    facts['grpo'] = {k: g.get(k) for k in ('path', 'precision', 'steps', 'train_loss', 'use_vllm', 'merged')}
    timings['grpo'] = time.time() - t; t = time.time()
    L.hand_off('final')
    timings['final'] = time.time() - t


def checks(device: str, facts: dict, error: str | None) -> list[dict]:
    got = [r['to'] for r in L.HAND_OFFS]
    out = [dict(check='sequence completes', ok=error is None, detail=error.strip().splitlines()[-1] if error else ''),
           dict(check='every hand-off record exists', ok=all(t in got for t in HAND_OFFS_EXPECTED),
                detail=', '.join(f'missing {t!r}' for t in HAND_OFFS_EXPECTED if t not in got))]
    p = facts.get('plan', {})
    if not device.startswith('cuda') or not p: return out
    for r in L.HAND_OFFS:
        out.append(dict(check=f'allocated after hand-off to {r["to"]}', ok=r['allocated_gb'] <= p['allocated_bound_gb'],
                        detail=f'{r["allocated_gb"]} GB <= {p["allocated_bound_gb"]:.3f} GB'))
    at = {r['to']: r for r in L.HAND_OFFS}
    run, before, after = facts.get('engine_running'), at.get('engine'), at.get('GRPO')
    if run and before:
        used = before['free_gb'] - run['free_gb'] if run['kind'] == 'vllm' else run['reserved_gb']
        out.append(dict(check='engine memory within the plan', ok=used <= p['engine_bound_gb'],
                        detail=f'{used:.3f} GB <= {p["engine_bound_gb"]:.3f} GB ({run["kind"]})'))
    if before and after:   # vLLM's engine lives in its own process: its memory shows only in the GPU's free memory
        out.append(dict(check='engine released (free memory back)', ok=after['free_gb'] >= before['free_gb'] - 0.5,
                        detail=f'{after["free_gb"]} GB free after it, {before["free_gb"]} GB before'))
    return out


def table(facts: dict):
    "Memory at each hand-off (and while the engine runs), with the plan's expected GB and the bound checked on cuda."
    import pandas as pd
    recs = list(L.HAND_OFFS)
    if facts.get('engine_running'):   # the engine's own measurement, after the hand-off that started it
        i = next((i + 1 for i, r in enumerate(recs) if r['to'] == 'engine'), len(recs))
        recs.insert(i, facts['engine_running'])
    cols = ['reserved_gb', 'allocated_gb', 'free_gb', 'total_gb']
    df = pd.DataFrame(recs, columns=['to', *cols]).rename(columns={'to': 'phase'})
    df[cols] = df[cols].astype(float)
    p, run = facts.get('plan', {}), df['phase'] == 'engine (running)'
    engine_kind = (facts.get('engine_running') or {}).get('kind')
    expected = p.get('colocate', {}).get('total_gb') if engine_kind == 'vllm' else p.get('weights_with_vision_gb', 0) + p.get('kv_gb', 0)
    df['expected_gb'] = [expected if r else None for r in run]
    df['bound_gb'] = [p.get('engine_bound_gb') if r else p.get('allocated_bound_gb') for r in run] if 'engine_bound_gb' in p else None
    return df.astype({'expected_gb': float, 'bound_gb': float}).round(4)


def line(c: dict) -> str:
    return f"{'PASS' if c['ok'] else 'FAIL'}: {c['check']}" + (f" ({c['detail']})" if c['detail'] else '')


def markdown(df, p: dict, cks: list) -> str:
    fmt = lambda v: '' if v is None or v != v else str(v)
    lines = ['| ' + ' | '.join(df.columns) + ' |', '|' + '---|' * len(df.columns)]
    lines += ['| ' + ' | '.join(fmt(v) for v in row) + ' |' for row in df.itertuples(index=False)]
    head = (f"Stand-in Gemma-3: {p.get('params')} language parameters ({p.get('params_with_vision')} with the vision tower), "
            f"{p.get('dtype')} weights {p.get('weights_with_vision_gb', 0):.6f} GB, KV cache {p.get('kv_bytes_per_token')} B/token. "
            'expected_gb: the plan\'s GB for the engine while it runs; bound_gb: the bound checked on cuda '
            '(allocated after a hand-off; the engine\'s memory while it runs).')
    return '\n'.join([head, ''] + lines + ['', *('- ' + line(c) for c in cks)]) + '\n'


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--device', choices=('cuda', 'cpu'), default=None, help="default: cuda if a GPU is visible")
    ap.add_argument('--out', default=None, help='default: bench/results/gpu_smoke-<device>')
    ap.add_argument('--install-missing', action='store_true', help='pip-install missing trl/peft on a GPU machine (offline: report)')
    a = ap.parse_args(argv)
    import torch
    device = a.device or ('cuda' if torch.cuda.is_available() else None)
    if device is None: ap.error('no GPU visible: pass --device cpu to run the sequence on the CPU')
    if device == 'cuda' and not torch.cuda.is_available(): ap.error('--device cuda but no GPU is visible')
    missing = install_missing(device) if a.install_missing else [p for p in ('trl', 'peft') if importlib.util.find_spec(p) is None]
    if missing:
        print(f'missing packages: {missing} (pip install {" ".join(missing)})'); return 2
    out = Path(a.out or ROOT/'bench'/'results'/f'gpu_smoke-{device}'); out.mkdir(parents=True, exist_ok=True)
    timings, facts, error, t0 = {}, {}, None, time.time()
    with tempfile.TemporaryDirectory(prefix='gpu_smoke-') as work:
        try: sequence(Path(work), device, timings, facts)
        except Exception: error = traceback.format_exc(); print(error, file=sys.stderr)
    cks, df = checks(device, facts, error), table(facts)
    name = torch.cuda.get_device_name(0) if device == 'cuda' else f'cpu: {platform.processor() or platform.machine()}'
    report = dict(device=device, device_name=name, versions=versions(), passed=all(c['ok'] for c in cks), checks=cks,
                  hand_offs=L.HAND_OFFS, wall_s={k: round(v, 1) for k, v in timings.items()} | dict(total=round(time.time() - t0, 1)),
                  error=error, **facts)
    (out/'gpu_smoke.json').write_text(json.dumps(report, indent=1, default=str))
    (out/'gpu_smoke.md').write_text(markdown(df, facts.get('plan', {}), cks))
    print(df.to_string(index=False))
    print(*map(line, cks), sep='\n')
    print(f"{'passed' if report['passed'] else 'FAILED'} in {report['wall_s']['total']} s; wrote {out}/gpu_smoke.json and gpu_smoke.md")
    return 0 if report['passed'] else 1


if __name__ == '__main__': sys.exit(main())
