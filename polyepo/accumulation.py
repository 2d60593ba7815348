"""Gradient accumulation over micro-batches, for RL and pretraining alike.

A minibatch's update runs in micro-batches of whole groups (RL: a prompt and its
responses; pretraining: one row), each loss divided by the whole minibatch's
totals (`polyepo.losses.Totals`), so the summed losses and gradients are the
minibatch's to float rounding. `microbatch_groups` picks the size, `accumulate`
runs them.
"""

from typing import Callable

import jax
import jax.numpy as jnp

# Responses per micro-batch of the RL update on a CPU when none is asked for
# (microbatch_rows=0).
CPU_MICROBATCH_ROWS = 16

# Micro-batches per iteration of `accumulate`'s loop. Two independent ones let
# XLA:CPU run the operations of one beside those of the other on two cores,
# with the same numbers; more per iteration find no more cores to run on, only
# more activations live at once.
ACCUMULATE_UNROLL = 2


def default_microbatch_rows(minibatch_rows: int, cpu_rows: int = CPU_MICROBATCH_ROWS) -> int:
  """Rows (responses) per micro-batch when none is asked for (microbatch_rows=0).

  `cpu_rows` on a CPU: past the caches, the update's element-wise passes over
  memory cost more than its matmuls at these widths, and small micro-batches
  keep a micro-batch's activations in cache while ACCUMULATE_UNROLL of them run
  side by side on two cores. The whole `minibatch_rows` on an accelerator,
  whose many cores a micro-batch leaves idle and which pays a fixed cost per
  operation, so that splitting a batch only adds operations (timings:
  docs/performance.md).
  """
  return cpu_rows if jax.default_backend() == "cpu" else minibatch_rows


def microbatch_groups(microbatch_rows: int, groups: int, rows_per_group: int,
                      cpu_rows: int = CPU_MICROBATCH_ROWS) -> int:
  """Groups per micro-batch: the largest divisor of `groups` whose rows fit in
  `microbatch_rows` (at least 1); microbatch_rows 0 is `default_microbatch_rows`
  (`cpu_rows` on a CPU)."""
  rows = microbatch_rows or default_microbatch_rows(groups * rows_per_group, cpu_rows)
  most = max(1, rows // rows_per_group)
  return max(d for d in range(1, groups + 1) if groups % d == 0 and d <= most)


def accumulate(fn: Callable, params, batch, num_micro: int):
  """The sum of `fn(params, micro)` over `num_micro` micro-batches of `batch`.

  Micro-batch c holds rows c, c + C, c + 2C, ... of every leaf's leading axis
  (strided: on an axis sharded in blocks over devices, a micro-batch is spread
  over several of them instead of sitting on one); they run in a `lax.scan`,
  ACCUMULATE_UNROLL per iteration, so the activations of that many
  micro-batches are live at a time. With fn = jax.value_and_grad(loss) and
  each micro-batch's loss divided by the whole batch's totals
  (`polyepo.losses.Totals`), this is the batch's loss and gradient.
  num_micro = 1 calls fn on the whole batch.

  Args:
    fn: (params, batch) -> pytree of arrays.
    params: passed to every call.
    batch: pytree of arrays whose leading axis (size G) num_micro divides.
    num_micro: C, number of micro-batches (static).
  """
  if num_micro == 1:
    return fn(params, batch)
  micro = jax.tree.map(
      lambda x: jnp.swapaxes(x.reshape((-1, num_micro) + x.shape[1:]), 0, 1), batch)

  def add(total, one):
    return jax.tree.map(jnp.add, total, fn(params, one)), None

  zeros = jax.tree.map(lambda x: jnp.zeros(x.shape, x.dtype),
                       jax.eval_shape(fn, params, jax.tree.map(lambda x: x[0], micro)))
  return jax.lax.scan(add, zeros, micro, unroll=ACCUMULATE_UNROLL)[0]
