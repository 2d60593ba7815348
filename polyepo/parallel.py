"""Where a train step runs: the device mesh over prompts, and batches of seeds.

Prompts (and their rollouts) are sharded over a 1-D `data` mesh; seeds run
vmapped in batches of `seed_batch_size` (`over_seeds`), all at once on an
accelerator, one at a time on a CPU.
"""

from typing import Callable, Optional

import jax
import jax.numpy as jnp
from jax.sharding import NamedSharding, PartitionSpec


def make_mesh(num_devices: int, prompts_per_step: int) -> Optional[jax.sharding.Mesh]:
  """A 1-D `data` mesh over the first num_devices devices, or None for one device.

  num_devices = 0 takes the most devices that divide the prompt batch B; an
  explicit count must divide B and be available (ValueError otherwise).
  Explicit axis types are the default of jax.make_mesh in this JAX; we pass
  Auto so that the sharding constraints inside the train step guide XLA's
  propagation instead of making every op's sharding part of its type.
  """
  devices = jax.devices()
  if num_devices > 0 and prompts_per_step % num_devices:
    raise ValueError(f"num_devices={num_devices} must divide prompts_per_step="
                     f"{prompts_per_step}: prompts are sharded evenly over the devices.")
  if not 0 <= num_devices <= len(devices):
    raise ValueError(f"num_devices={num_devices} must be 0 (all devices that divide the "
                     f"prompt batch) or 1..{len(devices)}, the devices available.")
  count = num_devices or len(devices)
  while prompts_per_step % count:
    count -= 1
  if count == 1:
    return None
  return jax.make_mesh((count,), ("data",), axis_types=(jax.sharding.AxisType.Auto,),
                       devices=devices[:count])


def shard_prompts(x: jax.Array, mesh: Optional[jax.sharding.Mesh]) -> jax.Array:
  """x with its leading (prompt) axis sharded over the mesh's `data` axis (x without a mesh)."""
  if mesh is None:
    return x
  spec = PartitionSpec("data", *([None] * (x.ndim - 1)))
  return jax.lax.with_sharding_constraint(x, NamedSharding(mesh, spec))


def check_seed_batch_size(seed_batch_size: int, num_seeds: int,
                          name: str = "seed_batch_size") -> None:
  """Raises ValueError naming the field (`name`) unless 0 <= seed_batch_size <= num_seeds."""
  if not 0 <= seed_batch_size <= num_seeds:
    raise ValueError(f"{name}={seed_batch_size} must be 0 (by platform: all seeds "
                     f"at once on an accelerator, one at a time on a CPU) or "
                     f"1..num_seeds={num_seeds}.")


def default_seed_batch_size(num_seeds: int) -> int:
  """Seeds computed at once when none is asked for (seed_batch_size=0).

  All of them on an accelerator, which runs many vmapped seeds for little more
  than one, since one seed leaves most of its cores idle; one at a time on a
  CPU, whose cores one seed already keeps busy, so vmapping buys no
  parallelism, and vmapped seeds decode until the longest response of any of
  them ends (they stop together; timings: docs/performance.md).
  """
  return num_seeds if jax.default_backend() != "cpu" else 1


def over_seeds(run_chunk: Callable, num_seeds: int, seed_batch_size: int = 0) -> Callable:
  """`run_chunk(state, base_params, axis_name=None)` over S seeds: states [S, ...].

  k = seed_batch_size seeds are computed at once (0: `default_seed_batch_size`):
  k = S vmaps all S; 0 < k < S runs batches of k one after another (`lax.map`),
  then the remainder; one program either way, the same results to float
  tolerance. A batch of one seed runs unbatched: a vmapped decode loop
  evaluates its exit test per seed and selects every loop variable, the KV
  cache included, at every step. More are vmapped under the axis name "seeds",
  so that their rollouts stop together (see `polyepo.sampling.sample`).
  """
  check_seed_batch_size(seed_batch_size, num_seeds)
  k = seed_batch_size or default_seed_batch_size(num_seeds)
  full = num_seeds - num_seeds % k

  def seed_batch(states, base_params):
    if jax.tree.leaves(states)[0].shape[0] == 1:
      out = run_chunk(jax.tree.map(lambda x: x[0], states), base_params)
      return jax.tree.map(lambda x: x[None], out)
    return jax.vmap(lambda s: run_chunk(s, base_params, "seeds"), axis_name="seeds")(states)

  def run_seeds(states, base_params):
    if k == num_seeds:
      return seed_batch(states, base_params)
    split = lambda x: x[:full].reshape((full // k, k) + x.shape[1:])
    out = jax.lax.map(lambda s: seed_batch(s, base_params), jax.tree.map(split, states))
    out = jax.tree.map(lambda x: x.reshape((full,) + x.shape[2:]), out)
    if full < num_seeds:
      rest = seed_batch(jax.tree.map(lambda x: x[full:], states), base_params)
      out = jax.tree.map(lambda a, b: jnp.concatenate([a, b]), out, rest)
    return out

  return run_seeds
