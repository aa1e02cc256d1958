"""Student SFT throughput of Gemma-3-270M on two CPU cores: the training levers of the Bangla CPU study, one at a time.

Usage: python bench/gemma_sft_bench.py [--rows 8] [--steps 2] [--out bench/results/gemma_sft_bench.json]

The workload is the cpu-study SFT stage's: the embedded Gemma-3-270M in its turn format, the brief student prompt,
verified gold graphs of MSVAMP-bn's training half as completions, loss on the completion only, LoRA r 16 (the cpu
recipe). An optimiser step is `--rows` rows (the same rows, in the same order, in every condition); conditions
alternate one step each per round after a warm-up step each. The conditions:

  full_logits_1        one row per forward, the model's own loss over the full (seq × 262,144) logits: the baseline
  fused_1              one row per forward, TRL's fused LM head (log-probabilities only where the loss reads)
  fused_grouped_4      four length-sorted rows per right-padded forward, fused head
  fused_grouped_8      eight rows per forward
  fused_1_all_layers   one row per forward, fused head, LoRA on all 18 layers instead of the top 10

Reported per condition: median seconds per step, trained (completion) tokens per second, all tokens per second,
padding share, the ratio of step times to the baseline, and the load average before and after."""
from __future__ import annotations
import argparse, dataclasses, json, os, platform, statistics, sys, time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
import dagger.llm  # noqa: F401,E402  (before torch: sets OMP_WAIT_POLICY=PASSIVE unless set)
from student_sft_bench import batch, encode  # noqa: E402  (the same row encoding and padded batches)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--rows', type=int, default=8)
    ap.add_argument('--steps', type=int, default=2)
    ap.add_argument('--out', default=str(ROOT/'bench/results/gemma_sft_bench.json'))
    a = ap.parse_args()
    import torch, transformers, trl, peft
    from peft import get_peft_model
    from trl.trainer.utils import add_fused_lm_head
    from dagger.config import load_profile
    from dagger.prompts import student_prompt
    from dagger.recipes import get_sft_recipe as get_recipe
    from dagger.sft import load_for_training
    from dagger.teacher import gold_teacher, msvamp_train_questions, sft_row
    cfg = load_profile('cpu-study')
    recipe = get_recipe(cfg.sft.recipe)
    probs = msvamp_train_questions(cfg)[:a.rows * (a.steps + 1)]
    prompt = student_prompt(cfg)
    rows = [sft_row(p, t, prompt=prompt) for p, (t, _) in zip(probs, gold_teacher(probs))]

    def lora_model(fused=True, layers=recipe.lora_layers):
        r = dataclasses.replace(recipe, lora_layers=layers)
        lm, tok, peft_config, _ = load_for_training(cfg.model, r)
        if fused: add_fused_lm_head(lm)
        torch.manual_seed(0)
        return tok, get_peft_model(lm, peft_config)

    tok, _ = lora_model()
    encs = [encode(tok, r) for r in rows]
    steps = [list(range(s * a.rows, (s + 1) * a.rows)) for s in range(a.steps + 1)]
    conds = dict(full_logits_1=(lora_model(fused=False)[1], 1, False), fused_1=(lora_model()[1], 1, True),
                 fused_grouped_4=(lora_model()[1], 4, True), fused_grouped_8=(lora_model()[1], 8, True),
                 fused_1_all_layers=(lora_model(layers=0)[1], 1, True))

    def groups(idx, per):
        idx = sorted(idx, key=lambda i: len(encs[i][0])) if per > 1 else idx
        return [[encs[i] for i in idx[k:k + per]] for k in range(0, len(idx), per)]

    def step(idx, model, per, fused):
        model.zero_grad()
        ntrain = sum(len(encs[i][0]) - encs[i][1] for i in idx)
        t = time.perf_counter()
        for g in groups(idx, per):
            ids, am, lab = batch(tok, g)
            if fused:
                out = model(input_ids=ids, attention_mask=am, labels=lab, fused_lm_head=True)
                (-out.log_probs.sum() / ntrain).backward()
            else:
                logits = model(input_ids=ids, attention_mask=am).logits[:, :-1].float()
                loss = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), lab[:, 1:].reshape(-1),
                                                         ignore_index=-100, reduction='sum')
                (loss / ntrain).backward()
        return time.perf_counter() - t

    for c, (m, per, fused) in conds.items(): step(steps[0], m, per, fused)        # warm-up
    times = {c: [] for c in conds}
    load0 = os.getloadavg()
    for s in steps[1:]:
        for c, (m, per, fused) in conds.items(): times[c].append(step(s, m, per, fused))
    load1 = os.getloadavg()
    res = {}
    for c, (_, per, _) in conds.items():
        idx = [i for s in steps[1:] for i in s]
        toks = sum(len(encs[i][0]) for i in idx); train = sum(len(encs[i][0]) - encs[i][1] for i in idx)
        padded = sum(max(len(f) for f, _ in g) * len(g) for s in steps[1:] for g in groups(s, per))
        tot = sum(times[c])
        res[c] = dict(per_forward=per, seconds_per_step=round(statistics.median(times[c]), 2), rounds=[round(x, 2) for x in times[c]],
                      trained_tokens_per_s=round(train / tot, 1), tokens_per_s=round(toks / tot, 1),
                      padding_share=round(1 - toks / padded, 3))
    base = res['full_logits_1']['seconds_per_step']
    for c in res: res[c]['step_time_ratio_to_baseline'] = round(res[c]['seconds_per_step'] / base, 3)
    idx = [i for s in steps[1:] for i in s]
    out = dict(date=time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime()), model=cfg.model, rows_per_step=a.rows, steps=a.steps,
               mean_row_tokens=round(statistics.mean(len(encs[i][0]) for i in idx), 1),
               mean_completion_tokens=round(statistics.mean(len(encs[i][0]) - encs[i][1] for i in idx), 1),
               recipe=dict(name=cfg.sft.recipe, lora_r=recipe.lora_r, lora_layers=recipe.lora_layers), conditions=res,
               machine=dict(nproc=os.cpu_count(), platform=platform.platform(), torch=torch.__version__,
                            transformers=transformers.__version__, trl=trl.__version__, peft=peft.__version__,
                            threads=torch.get_num_threads()),
               loadavg_before=[round(x, 2) for x in load0], loadavg_after=[round(x, 2) for x in load1])
    print(json.dumps(out, indent=1))
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    Path(a.out).write_text(json.dumps(out, indent=1) + '\n')


if __name__ == '__main__':
    main()
