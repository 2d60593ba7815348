"""Token-level clipped policy-gradient loss, KL to a reference policy, entropy.

Pure functions of per-token log-probabilities; the policy is whatever produced
them. Batch layout: B responses of T tokens, `mask` marks real response tokens.
"""

from typing import Dict, NamedTuple, Optional, Tuple

import jax
import jax.numpy as jnp

from polyepo import checks

AGGREGATIONS = ("token_mean", "sequence_mean", "sequence_sum")


class PGLossConfig(NamedTuple):
  """Knobs of the clipped policy-gradient loss.

  Attributes:
    eps_low: lower clip, the ratio is kept >= 1 - eps_low for negative advantages.
    eps_high: upper clip, the ratio is kept <= 1 + eps_high for positive ones
      (DAPO's "clip-higher" when eps_high > eps_low).
    aggregation: "token_mean" (mean over all response tokens in the batch; DAPO),
      "sequence_mean" (mean over each response's tokens, then over responses;
      GRPO) or "sequence_sum" (sum over each response's tokens divided by T, then
      mean over responses; Dr. GRPO's length-unbiased form).
    kl_coef: β, weight of the k3 KL estimate to the reference policy.
  """
  eps_low: float = 0.2
  eps_high: float = 0.2
  aggregation: str = "token_mean"
  kl_coef: float = 0.0


class Totals(NamedTuple):
  """What `aggregate` divides by: a batch's real tokens and its responses.

  Passing the totals of a whole batch when aggregating a slice of it makes the
  slices' aggregates (and their gradients) sum to the batch's: gradient
  accumulation over micro-batches computes the batch's loss exactly.

  Attributes:
    tokens: f32[], real tokens (mask.sum()).
    sequences: f32[], responses (mask.shape[0]).
  """
  tokens: jax.Array
  sequences: jax.Array


def batch_totals(mask: jax.Array) -> Totals:
  """The Totals of a batch whose real tokens are mask bool[B, T]."""
  return Totals(jnp.sum(mask, dtype=jnp.float32), jnp.asarray(mask.shape[0], jnp.float32))


def aggregate(values: jax.Array, mask: jax.Array, aggregation: str,
              totals: Optional[Totals] = None) -> jax.Array:
  """Reduces per-token values f32[B, T] under mask bool[B, T] to a scalar.

  totals: the batch's (`batch_totals`) when values and mask are a slice of it;
  default: those of mask itself.
  """
  checks.one_of("aggregation", aggregation, AGGREGATIONS)
  if totals is None:
    totals = batch_totals(mask)
  mask = mask.astype(jnp.float32)
  masked = values * mask
  if aggregation == "token_mean":
    return jnp.sum(masked) / jnp.maximum(totals.tokens, 1.0)
  if aggregation == "sequence_mean":
    per_sequence = jnp.sum(masked, -1) / jnp.maximum(jnp.sum(mask, -1), 1.0)
    return jnp.sum(per_sequence) / totals.sequences
  return jnp.sum(jnp.sum(masked, -1) / values.shape[-1]) / totals.sequences


def kl_k3(logprobs: jax.Array, ref_logprobs: jax.Array) -> jax.Array:
  """Per-token k3 estimate of KL(π || π_ref) from samples of π (Schulman, 2020).

    k3 = exp(log π_ref - log π) - (log π_ref - log π) - 1  >= 0

  Args:
    logprobs, ref_logprobs: f32[...] log-probs of the sampled tokens.

  Returns:
    f32[...], unbiased for the KL, never negative.
  """
  log_ratio = ref_logprobs - logprobs
  return jnp.exp(log_ratio) - log_ratio - 1.0


def entropy_from_logits(logits: jax.Array) -> jax.Array:
  """Per-position entropy of softmax(logits). logits: f32[..., V] -> f32[...]."""
  logp = jax.nn.log_softmax(logits, axis=-1)
  return -jnp.sum(jnp.exp(logp) * logp, axis=-1)


def clipped_pg_loss(
    logprobs: jax.Array,
    old_logprobs: jax.Array,
    advantages: jax.Array,
    mask: jax.Array,
    config: PGLossConfig = PGLossConfig(),
    ref_logprobs: Optional[jax.Array] = None,
    totals: Optional[Totals] = None,
) -> Tuple[jax.Array, Dict[str, jax.Array]]:
  """PPO/GRPO clipped surrogate loss at the token level, plus optional KL.

    ρ_t = exp(log π(a_t) - log π_old(a_t))
    ℓ_t = -min(ρ_t A, clip(ρ_t, 1 - eps_low, 1 + eps_high) A) + β k3_t

  Args:
    logprobs: f32[B, T] log-probs of the response tokens under the current policy
      (differentiate through these).
    old_logprobs: f32[B, T] log-probs under the policy that sampled them.
    advantages: f32[B] one advantage per response (or f32[B, T] per token).
    mask: bool[B, T] real response tokens.
    config: clipping, aggregation and KL weight.
    ref_logprobs: f32[B, T] log-probs under the reference policy; required when
      config.kl_coef > 0.
    totals: when the B responses are a micro-batch of a larger batch, that
      batch's `batch_totals`: the micro-batches' losses and metrics then sum to
      the batch's. Default: the totals of `mask`.

  Returns:
    (loss f32[], metrics) with metrics "pg_loss", "kl", "clip_fraction" (share
    of real tokens whose gradient the clip removes), "ratio_mean" and
    "approx_kl_old" (k3 estimate of KL(π_old || π)), all scalars.
  """
  checks.rank("logprobs", logprobs, 2)
  checks.same_shape("logprobs", logprobs, "old_logprobs", old_logprobs)
  checks.same_shape("logprobs", logprobs, "mask", mask)
  checks.one_of("config.aggregation", config.aggregation, AGGREGATIONS)
  if advantages.ndim == 1:
    if advantages.shape[0] != logprobs.shape[0]:
      raise ValueError(
          f"advantages must have shape (B,) or (B, T) with B={logprobs.shape[0]}, "
          f"got {advantages.shape}.")
    advantages = advantages[:, None]
  elif advantages.shape != logprobs.shape:
    raise ValueError(
        f"advantages must have shape (B,) or {logprobs.shape}, got {advantages.shape}.")
  if config.kl_coef and ref_logprobs is None:
    raise ValueError("ref_logprobs is required when config.kl_coef > 0.")

  old_logprobs = jax.lax.stop_gradient(old_logprobs)
  advantages = jax.lax.stop_gradient(advantages)
  log_ratio = logprobs - old_logprobs
  ratio = jnp.exp(log_ratio)
  clipped = jnp.clip(ratio, 1.0 - config.eps_low, 1.0 + config.eps_high)
  surrogate = jnp.minimum(ratio * advantages, clipped * advantages)
  pg_loss = aggregate(-surrogate, mask, config.aggregation, totals)

  if ref_logprobs is not None:
    kl = aggregate(kl_k3(logprobs, jax.lax.stop_gradient(ref_logprobs)), mask,
                   config.aggregation, totals)
  else:
    kl = jnp.zeros((), jnp.float32)
  loss = pg_loss + config.kl_coef * kl

  # A token is clipped where the clipped term is the strictly smaller one: min()
  # takes it and the token carries no gradient. A ratio outside the trust region
  # on the other side (ρ > 1 + eps_high with A < 0, ρ < 1 - eps_low with A > 0)
  # is not clipped: its gradient flows.
  is_clipped = clipped * advantages < ratio * advantages
  metrics = {
      "pg_loss": pg_loss,
      "kl": kl,
      "clip_fraction": aggregate(is_clipped.astype(jnp.float32), mask, "token_mean", totals),
      "ratio_mean": aggregate(jax.lax.stop_gradient(ratio), mask, "token_mean", totals),
      "approx_kl_old": aggregate(
          jax.lax.stop_gradient(kl_k3(old_logprobs, logprobs)), mask, "token_mean", totals),
  }
  return loss, metrics
