r"""Seconds per RL step of real configs: the main job's and the headline sweep's.

  python -m bench.rl_steps [--sweep configs/sweeps/headline.py] [--chunks 2]
  python -m bench.rl_steps --config configs/poly_epo.py:domain=multiplication

For each run, its train step (all its seeds in one program, as the run does)
starts from the cached base model of its domain (pretrained on first use, like
the main job) and runs `--chunks` compiled chunks of `train.steps_per_chunk`
steps after one warm-up chunk; prints the median seconds per step. Evaluation,
logging and checkpoints are left out: this is the time the RL steps take.
Without --config or --sweep it times the main job and every run of the
headline sweep.
"""

import argparse
import ast
import statistics
import time

import jax
import jax.numpy as jnp

from experiments import build, sweep
from polyepo.rl import train

MAIN_JOB = sweep.RunSpec("main job", "configs/poly_epo.py", "domain=multiplication", {})


def seconds_per_step(config, chunks: int) -> float:
  """Median seconds per step of `chunks` compiled chunks (after a warm-up chunk)."""
  settings = build.rl_settings(config)
  train_config, run_settings = settings.train, settings.run
  env, base_model_config, params, _ = build.base_model(build.base_config(config), progress=False)
  model_config = build.policy_model_config(config, base_model_config)
  init, run_chunk = train.make_train(train_config, settings.algorithm, model_config, env,
                                     env.default_params(), num_seeds=run_settings.num_seeds,
                                     seed_batch_size=run_settings.seed_batch_size)
  keys = jnp.arange(2 * run_settings.num_seeds, dtype=jnp.uint32).reshape(-1, 2)
  state, _ = run_chunk(init(params, keys), params)
  jax.block_until_ready(state)
  times = []
  for _ in range(chunks):
    tic = time.perf_counter()
    state, _ = run_chunk(state, params)
    jax.block_until_ready(state)
    times.append((time.perf_counter() - tic) / train_config.steps_per_chunk)
  return statistics.median(times)


def _override(item: str):
  """"run.num_seeds=3" -> ("run.num_seeds", 3); a value that is no Python literal stays a string."""
  key, _, value = item.partition("=")
  try:
    return key, ast.literal_eval(value)
  except (ValueError, SyntaxError):
    return key, value


def main():
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--config", help="one config, file.py[:config string]")
  parser.add_argument("--sweep", help="a sweep file[:config string] (default: main job and "
                                      "configs/sweeps/headline.py)")
  parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                      help="with --config, a config override, e.g. run.num_seeds=3")
  parser.add_argument("--chunks", type=int, default=2)
  args = parser.parse_args()
  if args.config:
    file, _, string = args.config.partition(":")
    overrides = dict(map(_override, args.set))
    runs = [sweep.RunSpec(" ".join([args.config] + args.set), file, string, overrides)]
  else:
    runs = [] if args.sweep else [MAIN_JOB]
    runs += sweep.load_sweep(args.sweep or "configs/sweeps/headline.py")
  for run in runs:
    config = sweep.build_config(run)
    seconds = seconds_per_step(config, args.chunks)
    print(f"{run.name:<52} {config.run.num_seeds} seed(s)  {seconds:.3f} s/step", flush=True)


if __name__ == "__main__":
  main()
