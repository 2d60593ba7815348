"""PPO's and Poly-PPO's batch: values from the sampler's features, vines from rollout
states, GAE and (with a set objective) set advantages (`polyepo.rl.poly_ppo`).

`polyepo.rl.algorithms.ppo` and `poly_ppo` bind a `Settings` to `batch`.
"""

import functools
from typing import NamedTuple, Optional

import jax
import jax.numpy as jnp

from polyepo.core import objectives
from polyepo.core import gae as gae_lib
from polyepo.env_api import DEGENERATE
from polyepo.parallel import shard_prompts
from polyepo.policy import value_head as value_head_lib
from polyepo.rl import parts
from polyepo.rl import poly_ppo
from polyepo.rl import estimator_inputs as rollouts_lib
from polyepo.rl import vines as vines_lib


class Settings(NamedTuple):
  """An algorithm's settings that its critic batch reads (`polyepo.rl.algorithms`)."""
  critic: parts.Critic
  gae: parts.GAE
  normalize: bool                      # standardise each set's and the step's GAE advantages
  objective: Optional[str] = None      # the set objective; None: PPO (no sets, no vines)
  set_size: int = 1
  num_subsets: int = 0
  vines: Optional[parts.Vines] = None  # None: set advantages at the prompt only


def batch(settings: Settings, setup: rollouts_lib.Setup, rollouts: rollouts_lib.Rollouts,
          key, axis_name):
  """Vines, values, GAE and (with a set objective) set advantages of the step's groups.

  A head's values V(s_t) come from the features the sampler drew each token from
  (`sampling.Rollout.features`), so no forward pass is run for them (a critic
  with a trunk of its own runs it on the step's responses); a head that reads
  the policy's surprise (`value_head.surprise`) gets it from the sampling
  log-probs, a vine's prefix's from its root, and the batch carries it to the
  update as "surprise" [B, M, T, k]; at
  temperature 1 the sampling log-probs are the policy's own and serve as the
  old log-probs too.
  """
  config, env, mesh = setup.config, setup.env, setup.mesh
  critic, set_objective = settings.critic, settings.objective is not None
  vines_settings = settings.vines if set_objective else None
  params, prompts, rollout = rollouts.params, rollouts.prompts, rollouts.rollout
  reward, label = rollouts.reward, rollouts.label
  B, N, T = config.prompts_per_step, config.samples_per_prompt, env.max_response_len
  K = vines_settings.num_states if vines_settings else 0
  N_v = vines_settings.samples if vines_settings else 0
  M = N + K * N_v
  choose_key, vine_key, subset_key = jax.random.split(jax.random.fold_in(key, 1), 3)
  per_group = lambda x: x.reshape((B, -1) + x.shape[1:])
  tokens, mask = per_group(rollout.tokens), per_group(rollout.mask)       # [B, N, T]
  old_logp = root_logp = per_group(rollout.logprobs)
  trunk = not critic.reads_features         # else a head on the sampler's features
  surprise = critic.reads_surprise
  surprise_inputs = value_head_lib.surprise(root_logp, mask) if surprise else None
  old_values = None if trunk else critic.read(
      params, per_group(rollout.features), surprise_inputs)
  start = jnp.zeros((B, N), jnp.int32)
  if set_objective:
    boundaries = per_group(env.step_boundaries(rollout.tokens))
  else:
    boundaries = jnp.zeros_like(mask)
  loss_mask, states_valid = mask, jnp.ones((B, 1), bool)
  if K:
    states = jax.vmap(lambda k, b: vines_lib.choose_states(
        k, b, K, vines_settings.selection))(jax.random.split(choose_key, B), boundaries)
    vines = vines_lib.sample_vines(params, setup.model_config, vine_key, prompts, tokens,
                                   states, samples=N_v, temperature=config.temperature,
                                   axis_name=axis_name, return_features=not trunk)
    flat = lambda x: x.reshape((B, K * N_v) + x.shape[3:])                # [B, K*N_v, ...]
    vine_tokens = flat(vines.tokens).reshape(B * K * N_v, T)
    repeated = jax.tree.map(lambda x: jnp.repeat(x, K * N_v, axis=0), rollouts.problems)
    vine_reward, vine_label = env.score(repeated, vine_tokens)
    vine_boundaries = env.step_boundaries(vine_tokens)
    cat = lambda a, b: jnp.concatenate([a, b], axis=1)
    tokens, mask = cat(tokens, flat(vines.tokens)), cat(mask, flat(vines.mask))
    loss_mask = cat(loss_mask, flat(vines.loss_mask))
    old_logp = cat(old_logp, flat(vines.logprobs))
    vine_surprise = None
    if surprise:
      vine_surprise = value_head_lib.surprise(
          flat(vines_lib.context_logprobs(root_logp, states, vines)), flat(vines.mask))
      surprise_inputs = cat(surprise_inputs, vine_surprise)
    if not trunk:
      old_values = cat(old_values, critic.read(params, flat(vines.features),
                                                       vine_surprise))
    start = cat(start, flat(vines.start))
    boundaries = cat(boundaries, per_group(vine_boundaries))
    reward, label = cat(reward, per_group(vine_reward)), cat(label, per_group(vine_label))
    states_valid = cat(states_valid, states.valid)
  tokens, mask, loss_mask = (shard_prompts(x, mesh) for x in (tokens, mask, loss_mask))
  old_logp = per_group(rollouts_lib.rollout_logprobs(
      setup, params, prompts, tokens.reshape(B * M, T), mask.reshape(B * M, T),
      old_logp.reshape(B * M, T), M))
  if trunk:
    old_values = per_group(critic.values(
        params, setup.model_config, prompts, tokens.reshape(B * M, T),
        mask.reshape(B * M, T), M))
  old_logp = jnp.where(loss_mask, old_logp, 0.0)
  old_values = jnp.where(loss_mask, old_values, 0.0)
  groups = jax.vmap(functools.partial(
      poly_ppo.group_advantages, num_roots=N, vine_samples=N_v,
      objective=settings.objective, set_size=settings.set_size,
      num_subsets=settings.num_subsets or None,
      window=vines_settings.window if vines_settings else 1, gamma=settings.gae.gamma,
      lam=settings.gae.lam, normalize=settings.normalize))(
          reward, label, old_values, loss_mask, boundaries, start,
          jax.random.split(subset_key, B))
  advantages = poly_ppo.token_advantages(groups, loss_mask, settings.normalize)
  batch = dict(tokens=tokens, mask=mask, loss_mask=loss_mask, old_logp=old_logp,
               advantages=advantages, old_values=old_values, returns=groups.returns)
  if surprise:
    batch["surprise"] = surprise_inputs   # what the head reads besides the features
  root_explained, root_bound = gae_lib.state_explained_variance(
      old_values[:, :N, 0], reward[:, :N].astype(jnp.float32), jnp.ones((B, N), bool))
  step_metrics = dict(
      explained_variance=gae_lib.explained_variance(old_values, groups.returns, loss_mask),
      explained_variance_root=root_explained, explained_variance_root_bound=root_bound,
      advantage_std=rollouts_lib.masked_std(advantages, loss_mask))
  if set_objective:
    in_window, other = loss_mask & groups.window, loss_mask & ~groups.window
    vine_mask = loss_mask[:, N:]
    vine_valid = jnp.any(vine_mask, axis=-1)
    by_state = lambda x: x.reshape((B * K, N_v) + x.shape[2:])            # [B*K, N_v, ...]
    state_values = jnp.take_along_axis(by_state(old_values[:, N:]),
                                       by_state(start[:, N:])[:, :, None], axis=-1)[..., 0]
    state_explained, state_bound = gae_lib.state_explained_variance(
        state_values, by_state(reward[:, N:]).astype(jnp.float32), by_state(vine_valid))
    step_metrics.update(
        explained_variance_states=state_explained, explained_variance_states_bound=state_bound,
        root_strategies=mean_strategies(label[:, :N], jnp.ones((B, N), bool)),
        vine_strategies=mean_strategies(by_state(label[:, N:]), by_state(vine_valid)),
        rollout_states=jnp.mean(jnp.sum(states_valid, axis=1)),   # the prompt included
        vine_tokens=jnp.sum(vine_mask),
        vine_reward=jnp.sum(reward[:, N:] * vine_valid) / jnp.maximum(jnp.sum(vine_valid), 1),
        advantage_std_rollout=rollouts_lib.masked_std(advantages, in_window),
        advantage_std_other=rollouts_lib.masked_std(advantages, other),
        rollout_token_share=jnp.sum(in_window) / jnp.maximum(jnp.sum(loss_mask), 1))
  return batch, step_metrics


def mean_strategies(labels: jax.Array, valid: jax.Array) -> jax.Array:
  """Distinct strategies among each state's valid responses, averaged over the states
  with any. labels: i32[S, R]; valid: bool[S, R] -> f32[]."""
  distinct = jax.vmap(objectives.num_distinct_strategies)(jnp.where(valid, labels, DEGENERATE))
  has_any = jnp.any(valid, axis=1)
  return jnp.sum(jnp.where(has_any, distinct, 0)) / jnp.maximum(jnp.sum(has_any), 1)
