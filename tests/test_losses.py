"""Tests for polyepo.losses against hand-worked values."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from polyepo import losses


def test_aggregations_hand_values():
  values = jnp.array([[1.0, 2.0, 3.0], [4.0, 0.0, 0.0]])
  mask = jnp.array([[True, True, True], [True, False, False]])
  assert np.isclose(losses.aggregate(values, mask, "token_mean"), (1 + 2 + 3 + 4) / 4)
  assert np.isclose(losses.aggregate(values, mask, "sequence_mean"), (2.0 + 4.0) / 2)
  assert np.isclose(losses.aggregate(values, mask, "sequence_sum"), (6 / 3 + 4 / 3) / 2)
  with pytest.raises(ValueError, match="aggregation must be one of"):
    losses.aggregate(values, mask, "mean")


def test_on_policy_gradient_is_advantage_weighted_score():
  """At ratio 1 the loss gradient w.r.t. log-probs is -A_i / (#tokens) per token."""
  logp = jnp.log(jnp.array([[0.5, 0.25], [0.1, 0.9]]))
  adv = jnp.array([2.0, -1.0])
  mask = jnp.array([[True, True], [True, False]])
  grad = jax.grad(lambda lp: losses.clipped_pg_loss(lp, logp, adv, mask)[0])(logp)
  np.testing.assert_allclose(grad, [[-2 / 3, -2 / 3], [1 / 3, 0.0]], atol=1e-6)


def test_clipping_hand_values():
  """ratio 1.5 with A > 0 is clipped at 1 + eps_high; ratio 0.5 with A < 0 at 1 - eps_low."""
  old = jnp.zeros((2, 1))
  new = jnp.log(jnp.array([[1.5], [0.5]]))
  adv = jnp.array([1.0, -1.0])
  mask = jnp.ones((2, 1), bool)
  cfg = losses.PGLossConfig(eps_low=0.2, eps_high=0.28, aggregation="token_mean")
  loss, metrics = losses.clipped_pg_loss(new, old, adv, mask, cfg)
  # -(min(1.5, 1.28) * 1) and -(min(-0.5, -0.8)) = 0.8 -> mean (-1.28 + 0.8) / 2
  assert np.isclose(loss, (-1.28 + 0.8) / 2, atol=1e-6)
  assert np.isclose(metrics["clip_fraction"], 1.0)
  # Clipped tokens carry no gradient.
  grad = jax.grad(lambda lp: losses.clipped_pg_loss(lp, old, adv, mask, cfg)[0])(new)
  np.testing.assert_allclose(grad, 0.0)
  # Inside the trust region the gradient flows: ratio 1.1, A > 0.
  inside = jnp.log(jnp.array([[1.1], [1.1]]))
  grad = jax.grad(lambda lp: losses.clipped_pg_loss(lp, old, adv, mask, cfg)[0])(inside)
  np.testing.assert_allclose(grad[0], [-1.1 / 2], rtol=1e-5)
  # ratio 1.1 with A < 0: the unclipped term is the min, gradient flows.
  np.testing.assert_allclose(grad[1], [1.1 / 2], rtol=1e-5)


def test_kl_k3():
  # Same policies: 0. Known value: log r = log(ref/p) = log 2 -> 2 - log 2 - 1.
  assert losses.kl_k3(jnp.array(-1.0), jnp.array(-1.0)) == 0.0
  assert np.isclose(losses.kl_k3(jnp.log(0.25), jnp.log(0.5)), 1 - np.log(2), atol=1e-6)
  # Unbiased: E_{a~p}[k3] = KL(p || q) for categorical p, q.
  p = np.array([0.7, 0.2, 0.1]); q = np.array([0.2, 0.5, 0.3])
  expected = np.sum(p * np.asarray(losses.kl_k3(jnp.log(p), jnp.log(q))))
  assert np.isclose(expected, np.sum(p * np.log(p / q)), atol=1e-6)


def test_kl_term_in_loss_and_required_reference():
  logp = jnp.log(jnp.array([[0.25, 0.5]]))
  ref = jnp.log(jnp.array([[0.5, 0.5]]))
  mask = jnp.ones((1, 2), bool)
  cfg = losses.PGLossConfig(kl_coef=0.1)
  loss, metrics = losses.clipped_pg_loss(logp, logp, jnp.zeros(1), mask, cfg, ref_logprobs=ref)
  assert np.isclose(metrics["kl"], (1 - np.log(2)) / 2, atol=1e-6)
  assert np.isclose(loss, 0.1 * metrics["kl"], atol=1e-7)
  with pytest.raises(ValueError, match="ref_logprobs is required"):
    losses.clipped_pg_loss(logp, logp, jnp.zeros(1), mask, cfg)


def test_entropy_from_logits():
  assert np.isclose(losses.entropy_from_logits(jnp.zeros(4)), np.log(4), atol=1e-6)
  assert losses.entropy_from_logits(jnp.array([0.0, -1e9])) < 1e-6


def test_shape_errors():
  with pytest.raises(ValueError, match="advantages must have shape"):
    losses.clipped_pg_loss(jnp.zeros((2, 3)), jnp.zeros((2, 3)), jnp.zeros(3), jnp.ones((2, 3), bool))
  with pytest.raises(ValueError, match="same shape"):
    losses.clipped_pg_loss(jnp.zeros((2, 3)), jnp.zeros((2, 4)), jnp.zeros(2), jnp.ones((2, 3), bool))


def test_jit_vmap_and_per_token_advantages():
  key = jax.random.key(0)
  logp = -jax.random.uniform(key, (3, 4, 5))
  old = logp + 0.1
  adv = jax.random.normal(key, (3, 4))
  mask = jnp.ones((3, 4, 5), bool)
  fn = lambda lp, o, a, m: losses.clipped_pg_loss(lp, o, a, m)[0]
  batched = jax.jit(jax.vmap(fn))(logp, old, adv, mask)
  np.testing.assert_allclose(batched, [fn(logp[i], old[i], adv[i], mask[i]) for i in range(3)],
                             rtol=1e-6)
  per_token = jnp.broadcast_to(adv[0][:, None], (4, 5))
  np.testing.assert_allclose(fn(logp[0], old[0], per_token, mask[0]), batched[0], rtol=1e-6)
