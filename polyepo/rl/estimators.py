"""How a step's rollouts become the batch the loss trains on, for the critic-free algorithms.

  group_batch(advantage, ...)     each response's advantage, from its prompt's
                                  group of rewards and strategy labels (GRPO,
                                  reward shaping, set RL = Poly-EPO), on all
                                  its tokens
  windowed_batch(first, rest)     `first`'s advantage on each response's first
                                  reasoning step (its strategy choice), `rest`'s
                                  on the tokens after it

`polyepo.rl.algorithms` builds its algorithms from these (and PPO's and
Poly-PPO's from `polyepo.rl.ppo_batch`); each builder's hyperparameters are
bound by the algorithm that uses it, the step's shared settings are the
`Setup`'s.
"""

import functools
from typing import Callable, Dict, Tuple

import jax
import jax.numpy as jnp

from polyepo.core import metrics
from polyepo.core import advantages as adv_lib
from polyepo.parallel import shard_prompts
from polyepo.rl import vines as vines_lib
from polyepo.rl.estimator_inputs import Rollouts, Setup, masked_std, rollout_logprobs

Batch = Dict[str, jax.Array]   # name -> [B, M, ...]: tokens, mask, loss_mask, old_logp, advantages
# (rewards f32[N], labels i32[N], key) -> f32[N]: one prompt's group's advantages.
GroupAdvantage = Callable[[jax.Array, jax.Array, jax.Array], jax.Array]


def batch_advantages(advantage: GroupAdvantage, standardise_batch: bool, rewards: jax.Array,
                     labels: jax.Array, keys: jax.Array) -> jax.Array:
  """Advantages of a step's groups. rewards: f32[B, N], labels: i32[B, N], keys: [B] -> f32[B, N].

  With `standardise_batch` (normalize_over="batch"), the groups' advantages are
  standardised together: (A - mean A) / (std A + 1e-6) over all B * N.
  """
  advantages = jax.vmap(advantage)(rewards, labels, keys)
  if standardise_batch:
    advantages = adv_lib.normalize_advantage(advantages.reshape(-1)).reshape(advantages.shape)
  return advantages


def _responses(setup: Setup, rollouts: Rollouts):
  """The rollouts' tokens and mask, [B * N, T] (sharded), and their old log-probs."""
  tokens = shard_prompts(rollouts.rollout.tokens, setup.mesh)
  mask = shard_prompts(rollouts.rollout.mask, setup.mesh)
  old_logp = rollout_logprobs(setup, rollouts.params, rollouts.prompts, tokens, mask,
                              rollouts.rollout.logprobs, setup.config.samples_per_prompt)
  return tokens, mask, old_logp


def group_batch(advantage: GroupAdvantage, standardise_batch: bool, setup: Setup,
                rollouts: Rollouts, key, axis_name) -> Tuple[Batch, Dict[str, jax.Array]]:
  """Each response's advantage on all its tokens; the old log-probs at the rollouts'."""
  del axis_name
  B = setup.config.prompts_per_step
  per_group = lambda x: x.reshape((B, -1) + x.shape[1:])
  advantages = batch_advantages(advantage, standardise_batch, rollouts.reward, rollouts.label,
                                jax.random.split(key, B))
  tokens, mask, old_logp = _responses(setup, rollouts)
  batch = dict(tokens=per_group(tokens), mask=per_group(mask), loss_mask=per_group(mask),
               old_logp=per_group(old_logp), advantages=advantages)
  return batch, dict(advantage_std=jnp.std(advantages),
                     **metrics.advantage_alignment(rollouts.reward, advantages))


def windowed_advantages(first: GroupAdvantage, rest: GroupAdvantage, rewards: jax.Array,
                        labels: jax.Array, boundaries: jax.Array, mask: jax.Array,
                        key: jax.Array) -> Tuple[jax.Array, jax.Array]:
  """Token advantages of one prompt's group, and where `first`'s applies.

  A response's first reasoning step (its tokens before its first step boundary,
  `vines.window_mask` with a window of one step from the prompt; a response with
  no boundary is all first step) chooses its strategy: those tokens get
  `first`'s advantage (for windowed Poly-EPO the set advantage). The tokens
  after it carry out the strategy: they get `rest`'s (GRPO's reward advantage),
  so a wrong response that adds a new strategy to its sets is credited for
  choosing it and not for its slips. Both see the same key.

  Args:
    first, rest: group advantages, (rewards, labels, key) -> f32[N].
    rewards: f32[N]; labels: i32[N].
    boundaries: bool[N, T], the responses' step boundaries; mask: bool[N, T].
    key: for sampled subsets.

  Returns:
    (advantages f32[N, T], 0 outside mask; window bool[N, T]).
  """
  set_advantage = first(rewards, labels, key)
  reward_advantage = rest(rewards, labels, key)
  window = jax.vmap(lambda b, m: vines_lib.window_mask(b, jnp.int32(0), 1, m))(boundaries, mask)
  advantages = jnp.where(window, set_advantage[:, None], reward_advantage[:, None])
  return jnp.where(mask, advantages, 0.0), window


def windowed_batch(first: GroupAdvantage, rest: GroupAdvantage, setup: Setup,
                   rollouts: Rollouts, key, axis_name) -> Tuple[Batch, Dict[str, jax.Array]]:
  """`windowed_advantages` of each group; the old log-probs at the rollouts'."""
  del axis_name
  B = setup.config.prompts_per_step
  per_group = lambda x: x.reshape((B, -1) + x.shape[1:])
  tokens, mask, old_logp = _responses(setup, rollouts)
  boundaries = per_group(setup.env.step_boundaries(rollouts.rollout.tokens))
  advantages, window = jax.vmap(functools.partial(windowed_advantages, first, rest))(
      rollouts.reward, rollouts.label, boundaries, per_group(mask), jax.random.split(key, B))
  loss_mask = per_group(mask)
  batch = dict(tokens=per_group(tokens), mask=loss_mask, loss_mask=loss_mask,
               old_logp=per_group(old_logp), advantages=advantages)
  in_window, other = loss_mask & window, loss_mask & ~window
  return batch, dict(advantage_std=masked_std(advantages, loss_mask),
                     advantage_std_window=masked_std(advantages, in_window),
                     advantage_std_other=masked_std(advantages, other),
                     window_token_share=jnp.sum(in_window) / jnp.maximum(jnp.sum(loss_mask), 1))
