"""Generalized advantage estimation and the critic's loss, per token of one response.

A response is an episode whose actions are its tokens: state s_t is the prompt
plus the response's first t tokens, action a_t is token t, and the only reward is
the environment's, paid on the last real token (EOS, or the last token of a
response cut off at the budget). With V_t = V(s_t) from the critic:

  δ_t = r_t + γ V_{t+1} m_{t+1} - V_t
  Â_t = Σ_{l >= 0} (γλ)^l δ_{t+l} m_{t+1} ... m_{t+l}     (Schulman et al., 2016, eq. 16)
  R_t = Â_t + V_t                                            (the critic's target)

where m marks the real tokens: the value after the last one is 0 (the episode
is over). With γ = λ = 1, Â_t = G - V_t, the return minus the value.
Everything here is written for ONE response of T tokens; vmap over responses.
"""

from typing import Optional, Tuple

import jax
import jax.numpy as jnp

from polyepo import checks


def terminal_rewards(reward: jax.Array, mask: jax.Array) -> jax.Array:
  """The response's reward on its last real token, 0 elsewhere.

  Args:
    reward: f32[], the environment's reward of the whole response.
    mask: bool[T], the tokens the episode is made of (contiguous).

  Returns:
    f32[T].
  """
  checks.rank("reward", reward, 0)
  checks.rank("mask", mask, 1)
  t = jnp.arange(mask.shape[0])
  last = jnp.max(jnp.where(mask, t, -1))
  return jnp.where(t == last, reward, 0.0).astype(jnp.float32)


def gae(rewards: jax.Array, values: jax.Array, mask: jax.Array, gamma: float,
        lam: float) -> Tuple[jax.Array, jax.Array]:
  """GAE(γ, λ) advantages and value targets of one response.

  Args:
    rewards: f32[T] per-token rewards (e.g. `terminal_rewards`).
    values: f32[T], V(s_t), the critic's value before token t.
    mask: bool[T], the episode's tokens; the value past its last one is 0.
    gamma: discount γ in [0, 1].
    lam: λ in [0, 1].

  Returns:
    (advantages f32[T], returns f32[T]), both 0 where mask is False.
  """
  checks.rank("rewards", rewards, 1)
  checks.same_shape("rewards", rewards, "values", values)
  checks.same_shape("rewards", rewards, "mask", mask)
  m = mask.astype(jnp.float32)
  values = values.astype(jnp.float32) * m
  next_values = jnp.concatenate([values[1:], jnp.zeros((1,), jnp.float32)])
  next_mask = jnp.concatenate([m[1:], jnp.zeros((1,), jnp.float32)])
  deltas = (rewards.astype(jnp.float32) + gamma * next_values * next_mask - values) * m

  def backward(carry, x):
    delta, keep = x
    advantage = delta + gamma * lam * carry * keep
    return advantage, advantage

  _, advantages = jax.lax.scan(backward, jnp.zeros((), jnp.float32), (deltas, next_mask),
                               reverse=True)
  advantages = advantages * m
  return advantages, (advantages + values) * m


def value_loss(values: jax.Array, old_values: jax.Array, returns: jax.Array,
               mask: jax.Array, clip: float = 0.0,
               num_tokens: Optional[jax.Array] = None) -> jax.Array:
  """PPO's (clipped) squared-error value loss, mean over the masked tokens.

    ℓ_t = ½ max((V_t - R_t)², (V_old,t + clip(V_t - V_old,t, -ε, ε) - R_t)²)

  (Schulman et al., 2017, the openai/baselines PPO2 form); clip = 0 gives the
  plain ½ (V_t - R_t)².

  Args:
    values: f32[..., T] current values (differentiate through these).
    old_values: f32[..., T] values when the rollouts were scored.
    returns: f32[..., T] targets R_t.
    mask: bool[..., T] tokens that count.
    clip: ε >= 0 (static).
    num_tokens: the denominator of the mean, default mask.sum(); a micro-batch
      passes its whole batch's, so that the micro-batches' losses sum to the
      batch's (`polyepo.losses.Totals`).

  Returns:
    f32[].
  """
  checks.same_shape("values", values, "returns", returns)
  checks.same_shape("values", values, "mask", mask)
  returns = jax.lax.stop_gradient(returns)
  loss = jnp.square(values - returns)
  if clip:
    old_values = jax.lax.stop_gradient(old_values)
    clipped = old_values + jnp.clip(values - old_values, -clip, clip)
    loss = jnp.maximum(loss, jnp.square(clipped - returns))
  m = mask.astype(jnp.float32)
  if num_tokens is None:
    num_tokens = jnp.sum(m)
  return 0.5 * jnp.sum(loss * m) / jnp.maximum(num_tokens, 1.0)


def explained_variance(values: jax.Array, returns: jax.Array, mask: jax.Array) -> jax.Array:
  """1 - Var(R - V) / Var(R) over the masked tokens: 1 is a perfect critic, 0 one
  no better than a constant, negative one worse. 0 when the returns are constant.

  Args:
    values, returns: f32[...]; mask: bool[...] of the same shape.

  Returns:
    f32[].
  """
  checks.same_shape("values", values, "returns", returns)
  checks.same_shape("values", values, "mask", mask)
  m = mask.astype(jnp.float32)
  count = jnp.maximum(jnp.sum(m), 1.0)

  def variance(x):
    mean = jnp.sum(x * m) / count
    return jnp.sum(jnp.square(x - mean) * m) / count

  var_returns = variance(returns)
  return jnp.where(var_returns > 0, 1.0 - variance(returns - values) / jnp.maximum(var_returns, 1e-12),
                   0.0)


def state_explained_variance(values: jax.Array, returns: jax.Array,
                             valid: jax.Array) -> Tuple[jax.Array, jax.Array]:
  """The critic's explained variance at sampled states, and the most any critic can reach.

  Each row is one state s with R responses sampled from it (a prompt's roots, or
  a rollout state's vines); every response's return is a draw of G ~ π(·|s). The
  best critic predicts V*(s) = E[G | s] and still misses Var(G | s), so no critic
  explains more than

    bound = 1 - E_s[Var(G | s)] / Var(G),

  estimated with each state's unbiased within-state variance (states with at
  least two valid responses, weighted by their responses). A bound far below 1
  says the outcome is not yet decided at those states: a weak critic there is
  the domain's noise, not the critic's fault.

  Args:
    values: f32[S, R], the critic's V(s) as read by each response (equal along a
      row for a perfect cache; each response's own reading is used).
    returns: f32[S, R], each response's return from s.
    valid: bool[S, R], the responses that exist.

  Returns:
    (explained variance f32[], bound f32[]); both 0 when the returns are constant.
  """
  checks.rank("values", values, 2)
  checks.same_shape("values", values, "returns", returns)
  checks.same_shape("values", values, "valid", valid)
  explained = explained_variance(values, returns, valid)
  m = valid.astype(jnp.float32)
  count = jnp.sum(m)
  mean = jnp.sum(returns * m) / jnp.maximum(count, 1.0)
  total = jnp.sum(jnp.square(returns - mean) * m) / jnp.maximum(count, 1.0)
  per_state = jnp.sum(m, axis=1)
  state_mean = jnp.sum(returns * m, axis=1) / jnp.maximum(per_state, 1.0)
  within = jnp.sum(jnp.square(returns - state_mean[:, None]) * m, axis=1) / jnp.maximum(
      per_state - 1.0, 1.0)
  weight = jnp.where(per_state >= 2, per_state, 0.0)
  expected_within = jnp.sum(within * weight) / jnp.maximum(jnp.sum(weight), 1.0)
  bound = jnp.where(total > 0, 1.0 - expected_within / jnp.maximum(total, 1e-12), 0.0)
  return explained, bound
