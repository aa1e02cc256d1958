"""SFT optimiser steps on CPU: two rows per forward (padded) against one row per forward.

Usage: python bench/sft_batch_bench.py [--steps 3] [--out bench/results/sft_batch_bench.json]

The workload is the cpu SFT stage's: the cpu recipe's LoRA model (the cpu profile's embedded Gemma-3-270M, LoRA on the
top 10 of its 18 layers, TRL's fused LM head), optimiser steps of two training rows of the teacher stage (`results/cpu/teacher/
sft_train.jsonl`, the rows the cpu profile's selection picks), loss on the completion only. The baseline feeds both
rows in one right-padded forward (`per_device_batch = 2`, what the cpu recipe used before); the other condition
feeds them one at a time and adds the gradients (`per_device_batch = 1`, accumulation 2): no padding, so the
attention needs no explicit mask and PyTorch takes its causal kernel. (A third condition, the frozen layers run once
over the prompt start all rows share, was removed with `dagger.sft.share_frozen_prefix`: it worked only for Llama-type
models, never for the Gemma-3 the profiles train.) Conditions alternate (baseline first) after a warm-up step each; the median wall time
per step is reported with the ratios to the baseline, and how far each condition's gradients are from the baseline's.
"""
from __future__ import annotations
import argparse, json, os, platform, statistics, sys, time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
import dagger.llm  # noqa: F401  (before torch: sets OMP_WAIT_POLICY=PASSIVE unless set)


from student_sft_bench import encode, batch as _pad   # one encoder and padder for both SFT benchmarks


def batch(tok, rows):
    "input ids, attention mask and completion-only labels of `rows`, right-padded."
    return _pad(tok, [encode(tok, r) for r in rows])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--steps', type=int, default=3)
    ap.add_argument('--out', default=str(ROOT/'bench'/'results'/'sft_batch_bench.json'))
    a = ap.parse_args()
    import torch
    from peft import get_peft_model
    from trl.trainer.utils import add_fused_lm_head
    from dagger.config import load_profile
    from dagger.files import read_jsonl
    from dagger.sft import get_sft_recipe, load_for_training, fit_rows
    cfg = load_profile('cpu')
    recipe = get_sft_recipe(cfg.sft.recipe)
    def lora_model():
        lm, tok, peft_config, _ = load_for_training(cfg.model, recipe)
        add_fused_lm_head(lm)
        torch.manual_seed(0)                                       # the same LoRA initialisation in both copies
        return lm, tok, get_peft_model(lm, peft_config)
    _, tok, model = lora_model()
    rows, _ = fit_rows(read_jsonl(cfg.results/"teacher"/"sft_train.jsonl"), tok, recipe.max_length, 2 * (a.steps + 1), order=cfg.sft.select)
    pairs = [rows[2 * i:2 * i + 2] for i in range(a.steps + 1)]

    def step(pair, per_forward, model=model):
        model.zero_grad()
        n = sum(int((batch(tok, [r])[2] != -100).sum()) for r in pair)
        t = time.perf_counter()
        for k in range(0, 2, per_forward):
            ids, am, lab = batch(tok, pair[k:k + per_forward])
            out = model(input_ids=ids, attention_mask=am, labels=lab, fused_lm_head=True)
            (-out.log_probs.sum() / n).backward()
        dt = time.perf_counter() - t
        return dt, {k: p.grad.clone() for k, p in model.named_parameters() if p.grad is not None}

    step(pairs[0], 2); step(pairs[0], 1)                            # warm-up
    times, diffs, load0 = {'padded_2': [], 'single_1x2': []}, {'single_1x2': []}, os.getloadavg()[0]
    rel = lambda g, h: max(float((g[k] - h[k]).abs().max() / (g[k].abs().max() + 1e-12)) for k in g)
    for pair in pairs[1:]:
        t2, g2 = step(pair, 2); t1, g1 = step(pair, 1)
        times['padded_2'].append(t2); times['single_1x2'].append(t1)
        diffs['single_1x2'].append(rel(g2, g1))
    med = {k: round(statistics.median(v), 2) for k, v in times.items()}
    lengths = [[int(batch(tok, [r])[1].sum()) for r in pair] for pair in pairs[1:]]
    out = dict(workload=dict(model=cfg.model, recipe=cfg.sft.recipe, lora_layers=recipe.lora_layers, steps=a.steps, row_tokens=lengths),
               seconds_per_step=med, rounds={k: [round(x, 2) for x in v] for k, v in times.items()},
               ratio_to_padded={k: round(med[k] / med['padded_2'], 3) for k in med},
               max_relative_grad_difference_to_padded={k: max(v) for k, v in diffs.items()},
               machine=dict(platform=platform.platform(), cpus=os.cpu_count(), torch=torch.__version__),
               loadavg_before=round(load0, 2), loadavg_after=round(os.getloadavg()[0], 2), date=time.strftime('%Y-%m-%d %H:%M:%S'))
    print(json.dumps(out, indent=1))
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    Path(a.out).write_text(json.dumps(out, indent=1) + '\n')


if __name__ == '__main__':
    main()
