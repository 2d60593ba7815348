"""What a train step hands an algorithm's batch builder, and the pieces they share.

`Setup` is fixed for a run, `Rollouts` is a step's sampled responses with their
rewards and strategy labels; `polyepo.rl.estimators` (the critic-free batches)
and `polyepo.rl.ppo_batch` (PPO's and Poly-PPO's) build on them.
"""

import math
from typing import Any, NamedTuple, Optional

import jax
import jax.numpy as jnp

from polyepo import checks
from polyepo.core import objectives
from polyepo.core import advantages as adv_lib
from polyepo.policy import sampling
from polyepo.policy import model as model_lib


class Setup(NamedTuple):
  """What is fixed for a run: the settings, the policy's shape, the env, the mesh."""
  config: Any                  # polyepo.rl.train.TrainConfig (the shared settings)
  model_config: model_lib.TransformerConfig
  env: Any
  mesh: Optional[jax.sharding.Mesh]


class Rollouts(NamedTuple):
  """A step's rollouts: B prompts, N responses each."""
  params: Any                  # the policy that sampled them (value head included)
  problems: Any                # the env's problems, leaves [B, ...]
  prompts: jax.Array           # i32[B, P]
  rollout: sampling.Rollout    # [B * N, T], prompt-major
  reward: jax.Array            # f32[B, N]
  label: jax.Array             # i32[B, N]


def rollout_logprobs(setup: Setup, params, prompts, tokens, mask, sampled, count: int):
  """The rollout policy's log-probs of its responses, f32[G * count, T]: at
  temperature 1 the sampler's own (`sampled`), else one forward pass."""
  if setup.config.temperature == 1.0:
    return sampled
  return model_lib.sequence_logprobs(params, setup.model_config, prompts, tokens, mask,
                                     samples_per_prompt=count)


def masked_std(x: jax.Array, mask: jax.Array) -> jax.Array:
  """Standard deviation of x over the True entries of mask (0 when there are none)."""
  m = mask.astype(jnp.float32)
  count = jnp.maximum(jnp.sum(m), 1.0)
  mean = jnp.sum(x * m) / count
  return jnp.sqrt(jnp.sum(jnp.square(x - mean) * m) / count)


def check_objective(objective: str, set_size: int, num_subsets: int) -> None:
  """The objective exists and needs no answers, n >= 1 and num_subsets >= 0 (what a set
  algorithm can check before it knows the samples per prompt)."""
  checks.one_of("objective", objective, tuple(objectives.OBJECTIVES))
  if objective in objectives.NEEDS_ANSWERS:
    raise ValueError(f"objective={objective!r} needs answer ids, which training "
                     f"does not collect; choose another objective.")
  checks.at_least("set_size", set_size, 1)
  checks.at_least("num_subsets", num_subsets, 0)


def check_sets_fit(objective: str, set_size: int, num_subsets: int, samples_per_prompt: int,
                   num_samples: int) -> None:
  """n < samples_per_prompt, and num_subsets fits C(num_samples, n) (an exact advantage,
  num_subsets = 0, must be affordable)."""
  if not 1 <= set_size < samples_per_prompt:
    raise ValueError(f"set_size must satisfy 1 <= set_size < samples_per_prompt="
                     f"{samples_per_prompt}, got set_size={set_size}.")
  total = math.comb(num_samples, set_size)
  if num_subsets < 0 or num_subsets > total:
    raise ValueError(f"num_subsets must be 0 (all subsets) or 1..C(N, n) = {total}, "
                     f"got {num_subsets}.")
  if num_subsets == 0 and objective not in adv_lib.CLOSED_FORMS and total > 1 << 16:
    raise ValueError(f"objective={objective!r} has no closed form and C(N, n) = "
                     f"{total} subsets are too many to enumerate; set num_subsets.")
