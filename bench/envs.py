"""Traces scored per second, jitted, batch 4096, per domain.

  python -m bench.envs [--batch 4096] [--repeats 7] [--slip_rate 0.3]

For each domain named (default: the shipped ones; a registered name or a
`package.module:Class`) whose module exists, draws `batch` problems, one
demonstration per problem from a uniformly chosen applicable strategy (with
slips), compiles `env.score` once, warms it up, then times `repeats` calls
(each ending in `block_until_ready`) and prints the median and the spread.
"""

import argparse
import importlib.util
import time

import jax
import jax.numpy as jnp
import numpy as np

import envs


def _inputs(env, params, batch, slip_rate, key):
  """Problems and one (possibly slipped) demonstration of each."""
  key_problems, key_strategy, key_demo = jax.random.split(key, 3)
  problems = env.sample_problems(key_problems, params, batch)
  applicable = env.applicable(problems)
  logits = jnp.where(applicable, 0.0, -jnp.inf)
  strategies = jax.random.categorical(key_strategy, logits)
  responses, _ = env.demonstrate(key_demo, problems, strategies, slip_rate)
  return problems, responses


def bench_env(name, batch, repeats, slip_rate, key):
  """Median seconds per `score` call and traces per second, for env `name`."""
  env, params = envs.make(name)
  problems, responses = _inputs(env, params, batch, slip_rate, key)
  score = jax.jit(env.score)
  t0 = time.perf_counter()
  jax.block_until_ready(score(problems, responses))
  compile_s = time.perf_counter() - t0
  for _ in range(2):  # warm-up
    jax.block_until_ready(score(problems, responses))
  times = []
  for _ in range(repeats):
    t0 = time.perf_counter()
    jax.block_until_ready(score(problems, responses))
    times.append(time.perf_counter() - t0)
  times = np.asarray(times)
  reward, label = score(problems, responses)
  return dict(
      name=name, compile_s=compile_s, median_s=float(np.median(times)),
      min_s=float(times.min()), max_s=float(times.max()),
      per_s=batch / float(np.median(times)), mean_reward=float(jnp.mean(reward)),
      degenerate=float(jnp.mean(label < 0)), length=responses.shape[1])


def _available(name):
  module = envs.target(name).split(":")[0]
  return importlib.util.find_spec(module) is not None


def main(argv=None):
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--batch", type=int, default=4096)
  parser.add_argument("--repeats", type=int, default=7)
  parser.add_argument("--slip_rate", type=float, default=0.3)
  parser.add_argument("--envs", default=",".join(envs.NAMES))
  args = parser.parse_args(argv)
  print(f"jax {jax.__version__} on {jax.devices()[0].platform}, batch {args.batch}, "
        f"median of {args.repeats} after warm-up")
  key = jax.random.PRNGKey(0)
  for i, name in enumerate(args.envs.split(",")):
    if not _available(name):
      print(f"{name:>18}: skipped (module not found)")
      continue
    r = bench_env(name, args.batch, args.repeats, args.slip_rate, jax.random.fold_in(key, i))
    print(f"{name:>18}: {r['per_s']:>10,.0f} traces/s  (median {1e3 * r['median_s']:.1f} ms, "
          f"min {1e3 * r['min_s']:.1f}, max {1e3 * r['max_s']:.1f}; compile "
          f"{r['compile_s']:.1f} s; T={r['length']}, reward {r['mean_reward']:.2f}, "
          f"degenerate {r['degenerate']:.2f})")


if __name__ == "__main__":
  main()
