"""What a train step hands an estimator, and the pieces estimators share.

`Setup` is fixed for a run, `Rollouts` is a step's sampled responses with their
rewards and strategy labels; `polyepo.estimators` (the registry) and
`polyepo.critic` (PPO's and Poly-PPO's batches) build on them.
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
  config: Any                  # polyepo.train.TrainConfig
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


def check_set_objective(config, num_samples: int) -> None:
  """The objective exists and needs no answers, 1 <= n < num_samples, and
  num_subsets fits C(num_samples, n) (an exact advantage must be affordable)."""
  checks.one_of("objective", config.objective, tuple(objectives.OBJECTIVES))
  if config.objective in objectives.NEEDS_ANSWERS:
    raise ValueError(f"objective={config.objective!r} needs answer ids, which training "
                     f"does not collect; choose another objective.")
  if not 1 <= config.set_size < config.samples_per_prompt:
    raise ValueError(f"set_size must satisfy 1 <= set_size < samples_per_prompt="
                     f"{config.samples_per_prompt}, got set_size={config.set_size}.")
  check_subsets(config, num_samples)


def check_subsets(config, num_samples: int) -> None:
  """num_subsets fits C(num_samples, n), and an exact advantage is affordable."""
  total = math.comb(num_samples, config.set_size)
  if config.num_subsets < 0 or config.num_subsets > total:
    raise ValueError(f"num_subsets must be 0 (all subsets) or 1..C(N, n) = {total}, "
                     f"got {config.num_subsets}.")
  if config.num_subsets == 0 and config.objective not in adv_lib.CLOSED_FORMS and total > 1 << 16:
    raise ValueError(f"objective={config.objective!r} has no closed form and C(N, n) = "
                     f"{total} subsets are too many to enumerate; set num_subsets.")
