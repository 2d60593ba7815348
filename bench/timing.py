"""Timing helpers shared by the benchmarks."""

import statistics
import time

import jax


def median_seconds(fn, repeats: int) -> float:
  """Median wall time of `fn()` over `repeats` calls, after one warm-up call."""
  return interleaved_median_seconds({"fn": fn}, repeats)["fn"]


def interleaved_median_seconds(fns, repeats: int):
  """Median wall times of several `{name: fn}` timed in turn, round after round.

  Interleaving spreads any drift in the machine's speed (other processes, clock
  changes) over all of them, so their ratios are fairer than timing each in a block.
  """
  for fn in fns.values():
    jax.block_until_ready(fn())  # compile + warm up
  times = {name: [] for name in fns}
  for _ in range(repeats):
    for name, fn in fns.items():
      start = time.perf_counter()
      jax.block_until_ready(fn())
      times[name].append(time.perf_counter() - start)
  return {name: statistics.median(t) for name, t in times.items()}
