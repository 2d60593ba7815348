"""Timing helper shared by the benchmarks."""

import statistics
import time

import jax


def median_seconds(fn, repeats: int) -> float:
  """Median wall time of `fn()` over `repeats` calls, after one warm-up call."""
  jax.block_until_ready(fn())  # compile + warm up
  times = []
  for _ in range(repeats):
    start = time.perf_counter()
    jax.block_until_ready(fn())
    times.append(time.perf_counter() - start)
  return statistics.median(times)
