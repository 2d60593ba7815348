"""Exact closed-form polychromic advantage vs enumerating all C(N, n) subsets.

  python -m bench.advantages [--prompts 64] [--repeats 20]

Both paths are jitted and vmapped over a batch of prompts and timed side by side
in this process (median of repeats after a warm-up call). On a busy machine the
ratios stay meaningful; the absolute times do not.
"""

import argparse
import math

import jax
import jax.numpy as jnp

from bench.timing import median_seconds
from polyepo.core import advantages, objectives, sets

COMPARED = ((8, 4), (16, 8), (20, 8))
CLOSED_ONLY = ((32, 8), (64, 8), (64, 16))


def _batch(key, prompts, num_samples):
  reward_key, label_key = jax.random.split(key)
  rewards = jax.random.bernoulli(reward_key, 0.4, (prompts, num_samples)).astype(jnp.float32)
  labels = jax.random.randint(label_key, (prompts, num_samples), -1, 8)
  return rewards, labels


def _closed(n):
  return jax.jit(jax.vmap(lambda r, l: advantages.polychromic_advantage(r, l, n)))


def _enumerated(num_samples, n):
  subsets = sets.all_subsets(num_samples, n)
  return jax.jit(jax.vmap(lambda r, l: advantages.marginal_set_advantage(
      objectives.polychromic, r, l, subsets)))


def main():
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--prompts", type=int, default=64)
  parser.add_argument("--repeats", type=int, default=20)
  args = parser.parse_args()
  key = jax.random.key(0)
  print(f"polychromic marginal advantage, {args.prompts} prompts, jitted + vmapped, "
        f"{jax.devices()[0].platform}, median of {args.repeats} (enumeration: of 3)")
  print(f"{'N':>3} {'n':>3} {'C(N,n)':>11} {'closed form':>13} {'enumeration':>13} "
        f"{'speed-up':>10} {'max |diff|':>11}")
  for num_samples, n in COMPARED + CLOSED_ONLY:
    rewards, labels = _batch(jax.random.fold_in(key, num_samples * 100 + n), args.prompts,
                             num_samples)
    closed = _closed(n)
    t_closed = median_seconds(lambda: closed(rewards, labels), args.repeats)
    row = (f"{num_samples:>3} {n:>3} {math.comb(num_samples, n):>11,} "
           f"{t_closed * 1e3:>10.3f} ms")
    if (num_samples, n) in COMPARED:
      enumerated = _enumerated(num_samples, n)
      t_enum = median_seconds(lambda: enumerated(rewards, labels), 3)
      diff = float(jnp.max(jnp.abs(closed(rewards, labels) - enumerated(rewards, labels))))
      row += f" {t_enum * 1e3:>10.1f} ms {t_enum / t_closed:>9.0f}x {diff:>11.1e}"
    print(row, flush=True)


if __name__ == "__main__":
  main()
