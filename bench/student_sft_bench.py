"""Student SFT throughput on CPU: the one-shot student prompt (~950 tokens) against the instructions alone, and length-grouped padded batches.

Usage: python bench/student_sft_bench.py [--steps 3] [--rows results/cpu/teacher/sft_train.jsonl]
                                          [--out bench/results/student_sft_bench.json]

The workload is the cpu SFT stage's (the cpu profile's embedded Gemma-3-270M, the cpu recipe's LoRA: r 16 on the top 10
of its 18 layers, TRL's fused LM head, loss on the completion only), on teacher rows that the cpu profile's selection
(`sft.select`) picks. An optimiser step is the cpu recipe's global batch of 2 rows. The same rows and completions in
every condition; only the prompt and the batching change:

  oneshot_1x2          the current recipe: the one-shot student prompt (`student_prompt(shots=1)`, the evaluation's
                       DAGGER prompt), one row per forward, gradients accumulated over 2;
  zeroshot_1x2         the same with the instructions alone (`student_prompt(shots=0)`, `sft.student_shots = 0`);
  zeroshot_padded_2    two rows in one right-padded forward, rows paired in the given (random) order;
  zeroshot_grouped_2   the same, rows paired after sorting by length (what `group_by_length=True` does: the
                       Trainer's LengthGroupedSampler groups rows of similar length into a batch).

Conditions alternate (one step each per round) after a warm-up step each. Reported: median seconds per step, tokens
per second (all non-padding tokens of the rows) and trained tokens per second (completion tokens, the same in every
condition, so their ratio is the ratio of step times), padding share for the padded conditions, and the load average.
"""
from __future__ import annotations
import argparse, json, os, platform, random, statistics, sys, time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
import dagger.llm  # noqa: F401  (before torch: sets OMP_WAIT_POLICY=PASSIVE unless set)


def encode(tok, row):
    "(all ids, prompt length) of a prompt/completion row with the chat template."
    p = tok.apply_chat_template(row['prompt'], tokenize=False, add_generation_prompt=True)
    full = tok.apply_chat_template(list(row['prompt']) + list(row['completion']), tokenize=False)
    return tok(full, add_special_tokens=False).input_ids, len(tok(p, add_special_tokens=False).input_ids)


def batch(tok, encs):
    "input ids, attention mask and completion-only labels, right-padded."
    import torch
    L, B = max(len(f) for f, _ in encs), len(encs)
    ids = torch.full((B, L), tok.pad_token_id); am = torch.zeros(B, L, dtype=torch.long); lab = torch.full((B, L), -100)
    for i, (f, n) in enumerate(encs):
        ids[i, :len(f)] = torch.tensor(f); am[i, :len(f)] = 1; lab[i, n:len(f)] = torch.tensor(f[n:])
    return ids, am, lab


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--steps', type=int, default=3)
    ap.add_argument('--rows', default=str(ROOT/'results/cpu/teacher/sft_train.jsonl'))
    ap.add_argument('--out', default=str(ROOT/'bench/results/student_sft_bench.json'))
    a = ap.parse_args()
    import torch, transformers, trl, peft
    from peft import get_peft_model
    from trl.trainer.utils import add_fused_lm_head
    from dagger.config import load_profile
    from dagger.files import read_jsonl
    from dagger.prompts import student_prompt
    from dagger.recipes import get_sft_recipe as get_recipe
    from dagger.sft import load_for_training, fit_rows
    cfg = load_profile('cpu')
    recipe = get_recipe(cfg.sft.recipe)

    def lora_model():
        lm, tok, peft_config, _ = load_for_training(cfg.model, recipe)
        add_fused_lm_head(lm)
        torch.manual_seed(0)
        return lm, tok, get_peft_model(lm, peft_config)

    _, tok, _ = lora_model()
    n = 2 * (a.steps + 1)
    one, _ = fit_rows(read_jsonl(a.rows), tok, recipe.max_length, n, order=cfg.sft.select)
    zero_p = student_prompt(cfg, shots=0)
    zero = [r | dict(prompt=zero_p(r['question'], r['lang'])) for r in one]
    assert one[0]['prompt'] == student_prompt(cfg, shots=1)(one[0]['question'], one[0]['lang']), 'rows are not in the one-shot student prompt'
    enc1, enc0 = [encode(tok, r) for r in one], [encode(tok, r) for r in zero]
    _, _, m1 = lora_model()
    _, _, m0 = lora_model()
    _, _, mp = lora_model()
    rng = random.Random(0)
    order = list(range(2, n)); rng.shuffle(order)
    by_len = sorted(range(2, n), key=lambda i: len(enc0[i][0]))
    pairs = dict(oneshot_1x2=[(enc1[i], enc1[i + 1]) for i in range(0, n, 2)],
                 zeroshot_1x2=[(enc0[i], enc0[i + 1]) for i in range(0, n, 2)],
                 zeroshot_padded_2=[(enc0[0], enc0[1])] + [(enc0[order[i]], enc0[order[i + 1]]) for i in range(0, n - 2, 2)],
                 zeroshot_grouped_2=[(enc0[0], enc0[1])] + [(enc0[by_len[i]], enc0[by_len[i + 1]]) for i in range(0, n - 2, 2)])
    how = dict(oneshot_1x2=(m1, 1), zeroshot_1x2=(m0, 1), zeroshot_padded_2=(mp, 2), zeroshot_grouped_2=(mp, 2))

    def step(pair, model, per_forward):
        model.zero_grad()
        ntrain = sum(len(f) - p for f, p in pair)
        t = time.perf_counter()
        for k in range(0, 2, per_forward):
            ids, am, lab = batch(tok, list(pair[k:k + per_forward]))
            out = model(input_ids=ids, attention_mask=am, labels=lab, fused_lm_head=True)
            (-out.log_probs.sum() / ntrain).backward()
        return time.perf_counter() - t

    for c, (model, pf) in how.items(): step(pairs[c][0], model, pf)          # warm-up
    times = {c: [] for c in how}
    load0 = os.getloadavg()
    for s in range(1, a.steps + 1):
        for c, (model, pf) in how.items(): times[c].append(step(pairs[c][s], model, pf))
    load1 = os.getloadavg()
    res = {}
    for c in how:
        ps = pairs[c][1:]
        toks = sum(len(f) for pr in ps for f, _ in pr); train = sum(len(f) - p for pr in ps for f, p in pr)
        padded = sum(max(len(f) for f, _ in pr) * 2 for pr in ps) if how[c][1] == 2 else toks
        tot = sum(times[c])
        res[c] = dict(seconds_per_step=round(statistics.median(times[c]), 2), rounds=[round(x, 2) for x in times[c]],
                      tokens_per_s=round(toks / tot, 1), trained_tokens_per_s=round(train / tot, 1),
                      mean_row_tokens=round(toks / (2 * len(ps)), 1), mean_prompt_tokens=round(sum(p for pr in ps for _, p in pr) / (2 * len(ps)), 1),
                      padding_share=round(1 - toks / padded, 3))
    base = res['oneshot_1x2']['seconds_per_step']
    for c in res: res[c]['step_time_ratio_to_oneshot'] = round(res[c]['seconds_per_step'] / base, 3)
    out = dict(date=time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime()), steps=a.steps, rows=a.rows, select=cfg.sft.select,
               recipe=dict(name=cfg.sft.recipe, lora_r=recipe.lora_r, lora_layers=recipe.lora_layers, global_batch=recipe.global_batch,
                           per_device_batch=recipe.per_device_batch),
               conditions=res,
               machine=dict(nproc=os.cpu_count(), platform=platform.platform(), torch=torch.__version__, transformers=transformers.__version__,
                            trl=trl.__version__, peft=peft.__version__, threads=torch.get_num_threads()),
               loadavg_before=[round(x, 2) for x in load0], loadavg_after=[round(x, 2) for x in load1])
    print(json.dumps(out, indent=1))
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    Path(a.out).write_text(json.dumps(out, indent=1) + '\n')


if __name__ == '__main__':
    main()
