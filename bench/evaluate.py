"""A final-comparison run's evaluation, shaped several ways, timed side by side.

  python -m bench.evaluate [--domain multiplication] [--problems 128] [--seeds 5]
      [--splits validation,test,ood] [--shapes before,auto,1x1,5x1,1x16,5x16] [--repeats 1]

Times `polyepo.loop.evaluate_seeds` as a run of configs/sweeps/final.py calls it
at its end (64 samples per problem, each strategy's forced accuracy on 16
problems × 8 completions) on the domain's shipped base model, copied to every
seed (each seed draws its own samples), in turn in this process:

  before     seeds one after another, each `evaluate.evaluate` with its default
             chunk (how evaluate_seeds sampled before it had
             `run.eval_seed_batch_size` and `run.eval_problems_per_chunk`)
  auto       the run's defaults (both 0: by platform)
  SxP        S seeds in one vmapped call, P problems per call

and prints each one's seconds and its ratio to `before`. Every shape draws the
same samples (to float tolerance, tests/rl/test_train.py), so only the speed
differs. Each shape is compiled and warmed up on the first problems first.
"""

import argparse
import time

import jax
import jax.numpy as jnp
import numpy as np

from configs import pretrain as pretrain_config
from experiments import build, machine
from polyepo.evaluation import evaluate, forced, splits
from polyepo.rl import loop, plan


def _before(params, model_config, env, problems, settings, step):
  """evaluate_seeds as it was: one seed at a time, evaluate.evaluate's chunks."""
  out = {}
  for i, (split, split_problems) in enumerate(sorted(problems.items())):
    per_seed = []
    for s in range(settings.num_seeds):
      key = jax.random.fold_in(jax.random.PRNGKey(settings.seed + 7919 * (i + 1)), s)
      seed_params = jax.tree.map(lambda x, s=s: x[s], params)
      summary = evaluate.evaluate(seed_params, model_config, env, split_problems,
                                  jax.random.fold_in(key, step),
                                  num_samples=settings.eval_num_samples)
      summary["forced_accuracy"] = forced.forced_accuracy(
          seed_params, model_config, env, split_problems,
          jax.random.fold_in(jax.random.fold_in(key, step), 1),
          num_problems=settings.eval_forced_problems,
          num_samples=settings.eval_forced_samples)
      per_seed.append(summary)
    out[split] = per_seed
  return out


def main():
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--domain", default="multiplication")
  parser.add_argument("--problems", type=int, default=128, help="problems per split")
  parser.add_argument("--seeds", type=int, default=5)
  parser.add_argument("--splits", default=",".join(splits.EVAL_SPLITS))
  parser.add_argument("--shapes", default="before,auto,1x1,SEEDSx1,1x16,SEEDSx16",
                      help="shapes timed (SEEDS: --seeds)")
  parser.add_argument("--repeats", type=int, default=1)
  args = parser.parse_args()
  config = pretrain_config.get_config(f"domain={args.domain}")
  env, model_config, base, _ = build.base_model(config, progress=False)
  params = jax.tree.map(lambda x: jnp.stack([x] * args.seeds), base)
  problems = build.eval_problems(args.domain, tuple(args.splits.split(",")), args.problems)
  settings = dict(num_seeds=args.seeds, eval_num_problems=args.problems, eval_num_samples=64,
                  eval_forced_problems=16, eval_forced_samples=8)
  named = {"before": None, "auto": (0, 0)}
  shapes = {"before": None}  # the ratios' reference
  for name in args.shapes.replace("SEEDS", str(args.seeds)).split(","):
    shapes[name] = named[name] if name in named else tuple(int(x) for x in name.split("x"))

  def run(shape, num_problems, split_names=tuple(problems)):
    sized = dict(settings, eval_num_problems=num_problems)
    subset = {name: jax.tree.map(lambda x: x[:num_problems], problems[name])
              for name in split_names}
    if shape is None:
      return _before(params, model_config, env, subset, plan.RunSettings(**sized), step=300)
    return loop.evaluate_seeds(params, model_config, env, subset, plan.RunSettings(
        **sized, eval_seed_batch_size=shape[0], eval_problems_per_chunk=shape[1]), step=300)

  print(f"{args.domain}: evaluation of a {args.seeds}-seed run, {len(problems)} split(s) × "
        f"{args.problems} problems × 64 samples + forced accuracy; {machine.describe()}")
  seconds = {name: [] for name in shapes}
  for name, shape in shapes.items():  # compile and warm up on one split (16: forced's problems)
    run(shape, min(args.problems, 16 if shape is None else max(16, shape[1])),
        split_names=tuple(problems)[:1])
  for _ in range(args.repeats):
    for name, shape in shapes.items():  # in turn, so drift spreads over all of them
      tic = time.perf_counter()
      run(shape, args.problems)
      seconds[name].append(time.perf_counter() - tic)
  before = float(np.median(seconds["before"]))
  print(f"{'seeds × problems per call':<28}{'seconds':>10}{'vs before':>11}")
  for name, times in seconds.items():
    median = float(np.median(times))
    print(f"{name:<28}{median:>10.1f}{before / median:>10.2f}×")


if __name__ == "__main__":
  main()
