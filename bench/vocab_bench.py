"""Cheaper training tokens for the CPU study's student: today's SFT step against the output vocabulary of the rows.

Usage: python bench/vocab_bench.py [--rows 8] [--steps 3] [--wall 0] [--heldout 64] [--out bench/results/vocab_bench.json]

The workload is the cpu-study SFT stage's: the embedded Gemma-3-270M in its turn format, the brief student prompt,
paper-form gold graphs of MSVAMP-bn's training half as completions, loss on the completion only. Conditions, one
optimiser step of `--rows` rows each (the same rows in every condition), alternating one step each per round after a
warm-up step, so a change in the machine's load falls on all of them:

  study            the study's setting before this change: LoRA r 16 on the top 10 layers, one row per forward,
                   TRL's fused LM head over all 262,144 tokens (what `SFTTrainer` computes): the baseline
  rows_1           the same, with the loss's softmax over the tokens the rows use (`dagger.vocab.SubsetHead`)
  rows_grouped_4   four length-sorted rows per right-padded forward
  rows_4_all_r32   LoRA r 32 on all 18 layers, four rows per forward, the rows' vocabulary
  cpu_study        the cpu-study recipe: LoRA r 32 on the top 10 layers, four rows per forward, the rows' vocabulary

With `--wall S`, the baseline and the `--against` condition (default cpu_study) then each train for S seconds of their own step time
(alternating steps, from fresh adapters, constant learning rate 1e-3, batches of 8 in one seeded order), and both
students answer the same `--heldout` held-out MSVAMP-bn problems greedily (the rows-vocabulary student under its
restriction); accuracy and execution are reported with Wilson intervals and a McNemar test on the paired answers."""
from __future__ import annotations
import argparse, dataclasses, json, os, platform, random, statistics, sys, tempfile, time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
import dagger.llm  # noqa: F401,E402  (before torch: sets OMP_WAIT_POLICY=PASSIVE unless set)
from student_sft_bench import batch, encode  # noqa: E402  (the same row encoding and padded batches)


class Arm:
    "One training condition: its LoRA model, rows per forward and loss."
    def __init__(self, cfg, recipe, per, vocab):
        import torch
        from peft import get_peft_model
        from trl.trainer.utils import add_fused_lm_head
        from dagger.sft import load_for_training
        from dagger.vocab import SubsetHead
        lm, self.tok, pc, _ = load_for_training(cfg.model, recipe)
        if not vocab: add_fused_lm_head(lm)
        torch.manual_seed(0)
        self.model, self.per, self.vocab, self.recipe = get_peft_model(lm, pc), per, vocab, recipe
        self.head = SubsetHead(self.model, vocab) if vocab else None
        self.opt = torch.optim.AdamW([p for p in self.model.parameters() if p.requires_grad], lr=1e-3, weight_decay=0.0)
        self.train_s = 0.0

    def step(self, encs, update=False):
        "One optimiser step over `encs`; returns its seconds."
        self.model.zero_grad()
        n = sum(len(f) - k for f, k in encs)
        order = sorted(encs, key=lambda e: len(e[0])) if self.per > 1 else encs
        t = time.perf_counter()
        for g in range(0, len(order), self.per):
            ids, am, lab = batch(self.tok, order[g:g + self.per])
            inputs = dict(input_ids=ids, attention_mask=am, labels=lab)
            if self.head: loss = self.head.loss(inputs, n)
            else: loss = -self.model(**inputs, fused_lm_head=True).log_probs.sum() / n
            loss.backward()
        if update: self.opt.step()
        dt = time.perf_counter() - t
        self.train_s += dt
        return dt


def throughput(arms, encs, rows, steps):
    "Median step seconds and trained tokens per second of each arm on the same steps."
    chunks = [encs[s * rows:(s + 1) * rows] for s in range(steps + 1)]
    for a in arms.values(): a.step(chunks[0])
    times = {c: [] for c in arms}
    load0 = os.getloadavg()
    for ch in chunks[1:]:
        for c, a in arms.items(): times[c].append(a.step(ch))
    trained = sum(len(f) - k for ch in chunks[1:] for f, k in ch)
    res = {c: dict(seconds_per_step=round(statistics.median(t), 2), rounds=[round(x, 2) for x in t],
                   trained_tokens_per_s=round(trained / sum(t), 1)) for c, t in times.items()}
    for c in res: res[c]['speedup'] = round(res[c]['trained_tokens_per_s'] / res['study']['trained_tokens_per_s'], 2)
    return res, [round(x, 2) for x in load0], [round(x, 2) for x in os.getloadavg()]


def answer(arm, problems, prompt, out):
    "Greedy graphs of `arm`'s student for `problems`: (correct, executed) per problem."
    from dagger import graph as G
    from dagger.backend import Sampling
    from dagger.llm import TransformersBackend, unload_models
    from dagger.sft import merge_adapter
    folder = merge_adapter(arm.model, arm.tok, Path(out), 'float32', vocab=arm.vocab)
    be = TransformersBackend(str(folder), cache=None, device='cpu', batch_size=16)
    outs = be.generate([prompt(p.question, p.lang) for p in problems], Sampling(max_new_tokens=320), progress=True)
    res = []
    for p, [c] in zip(problems, outs):
        try: v = G.execute(G.parse(c.text)); res.append((G.is_correct(v, p.answer), True))
        except (G.GraphError, ValueError): res.append((False, False))
    unload_models()
    return res


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--rows', type=int, default=8)
    ap.add_argument('--steps', type=int, default=3)
    ap.add_argument('--wall', type=float, default=0, help='seconds of training per arm for the held-out comparison')
    ap.add_argument('--heldout', type=int, default=64)
    ap.add_argument('--against', default='cpu_study', choices=('rows_1', 'rows_grouped_4', 'rows_4_all_r32', 'cpu_study'))
    ap.add_argument('--out', default=str(ROOT/'bench/results/vocab_bench.json'))
    a = ap.parse_args()
    import torch, transformers, trl, peft
    from dagger.config import load_profile
    from dagger.data import load_split, msvamp_half, sample
    from dagger.prompts import student_prompt
    from dagger.recipes import get_sft_recipe
    from dagger.stats import mcnemar, wilson
    from dagger.teacher import gold_teacher, msvamp_train_questions, sft_row
    from dagger.vocab import rows_vocab
    cfg = load_profile('cpu-study')
    prompt = student_prompt(cfg)
    probs = msvamp_train_questions(cfg)
    rows = [sft_row(p, t, prompt=prompt) for p, (t, _) in zip(probs, gold_teacher(probs)) if t]
    random.Random(0).shuffle(rows)
    old = get_sft_recipe('cpu', output_vocab='full')
    new = get_sft_recipe('cpu-study')
    probe = Arm(cfg, old, 1, None)
    vocab = rows_vocab(probe.tok, rows)
    encs = [encode(probe.tok, r) for r in rows]
    arms = dict(study=probe, rows_1=Arm(cfg, dataclasses.replace(old, output_vocab='rows'), 1, vocab),
                rows_grouped_4=Arm(cfg, dataclasses.replace(old, output_vocab='rows'), 4, vocab),
                rows_4_all_r32=Arm(cfg, dataclasses.replace(new, lora_layers=0), 4, vocab), cpu_study=Arm(cfg, new, 4, vocab))
    res, load0, load1 = throughput(arms, encs, a.rows, a.steps)
    used = encs[:a.rows * (a.steps + 1)]
    out = dict(date=time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime()), model=cfg.model, rows_per_step=a.rows,
               steps=a.steps, training_rows=len(rows), output_vocab=len(vocab),
               full_vocab=probe.model.get_base_model().config.get_text_config().vocab_size,
               mean_row_tokens=round(statistics.mean(len(f) for f, _ in used), 1),
               mean_completion_tokens=round(statistics.mean(len(f) - k for f, k in used), 1),
               conditions=res, loadavg_before=load0, loadavg_after=load1,
               machine=dict(nproc=os.cpu_count(), platform=platform.platform(), torch=torch.__version__,
                            transformers=transformers.__version__, trl=trl.__version__, peft=peft.__version__,
                            threads=torch.get_num_threads()))
    print(json.dumps(out, indent=1), flush=True)
    if a.wall:
        held = sample([p for p in load_split('msvamp_bn', cfg=cfg) if msvamp_half(p) == 'heldout'], a.heldout, cfg.seed)
        again = dict(rows_1=(dataclasses.replace(old, output_vocab='rows'), 1),
                     rows_grouped_4=(dataclasses.replace(old, output_vocab='rows'), 4),
                     rows_4_all_r32=(dataclasses.replace(new, lora_layers=0), 4), cpu_study=(new, 4))[a.against]
        pair = {'study': Arm(cfg, old, 1, None), a.against: Arm(cfg, *again, vocab)}
        seen = {c: 0 for c in pair}
        k = 0
        while any(arm.train_s < a.wall for arm in pair.values()):
            chunk = encs[(k * a.rows) % len(encs):][:a.rows]
            k += 1
            for c, arm in pair.items():
                if arm.train_s < a.wall: arm.step(chunk, update=True); seen[c] += len(chunk)
        tmp = Path(tempfile.mkdtemp())
        got = {c: answer(arm, held, prompt, tmp/c) for c, arm in pair.items()}
        same = {}
        for c, r in got.items():
            right, ran = sum(x for x, _ in r), sum(y for _, y in r)
            same[c] = dict(examples_seen=seen[c], train_s=round(pair[c].train_s, 1), correct=right, executed=ran,
                           n=len(r), accuracy=round(100 * right / len(r), 1),
                           accuracy_ci95=[round(100 * x, 1) for x in wilson(right, len(r))],
                           execution=round(100 * ran / len(r), 1))
        m = mcnemar([x for x, _ in got['study']], [x for x, _ in got[a.against]])
        same['mcnemar'] = dict(study_only=m.b, against_only=m.c, p=round(m.p, 4))
        out['same_wall'] = dict(seconds=a.wall, against=a.against, heldout=[p.id for p in held], arms=same)
        print(json.dumps(out['same_wall'], indent=1))
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    Path(a.out).write_text(json.dumps(out, indent=1) + '\n')


if __name__ == '__main__':
    main()
