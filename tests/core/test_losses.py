"""Tests for polyepo.losses against hand-worked values."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from polyepo.core import losses


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


# Every branch of the clipped objective, eps_low = 0.2 and eps_high = 0.28:
# (ratio, advantage) -> (per-token loss, d loss / d log π, clipped?). On a branch
# where the clipped term is the min the loss is -clip(ρ) A and carries no
# gradient; elsewhere it is -ρ A with gradient d(-ρ A)/d log π = -ρ A.
BRANCHES = [
    # name,                                ratio, A,    loss,  grad,  clipped
    ("above 1 + eps_high, A > 0: clipped",  1.5,  1.0, -1.28,  0.0,   True),
    ("above 1 + eps_high, A < 0: unclipped", 1.5, -1.0,  1.5,   1.5,   False),
    ("below 1 - eps_low, A > 0: unclipped",  0.5,  1.0, -0.5,  -0.5,   False),
    ("below 1 - eps_low, A < 0: clipped",    0.5, -1.0,  0.8,   0.0,   True),
    ("inside, A > 0",                        1.1,  2.0, -2.2,  -2.2,   False),
    ("inside, A < 0",                        0.9, -2.0,  1.8,   1.8,   False),
    # Asymmetric bounds: 1.25 is inside [0.8, 1.28] but above 1 + eps_low ...
    ("between 1 + eps_low and 1 + eps_high, A > 0", 1.25, 1.0, -1.25, -1.25, False),
    # ... and 0.75 is below 1 - eps_low but above 1 - eps_high.
    ("between 1 - eps_high and 1 - eps_low, A < 0", 0.75, -1.0, 0.8, 0.0, True),
]


@pytest.mark.parametrize("name,ratio,adv,loss,grad,clipped", BRANCHES,
                         ids=[b[0] for b in BRANCHES])
def test_every_branch_of_the_clipped_objective(name, ratio, adv, loss, grad, clipped):
  cfg = losses.PGLossConfig(eps_low=0.2, eps_high=0.28)
  old = jnp.zeros((1, 1))
  new = jnp.log(jnp.full((1, 1), ratio))
  mask = jnp.ones((1, 1), bool)
  fn = lambda lp: losses.clipped_pg_loss(lp, old, jnp.array([adv]), mask, cfg)
  (value, metrics), g = jax.value_and_grad(fn, has_aux=True)(new)
  assert float(value) == pytest.approx(loss, abs=1e-6), name
  assert float(g[0, 0]) == pytest.approx(grad, abs=1e-6), name
  assert float(metrics["clip_fraction"]) == float(clipped), name
  assert float(metrics["ratio_mean"]) == pytest.approx(ratio, rel=1e-6)


def test_aggregation_modes_with_padding():
  """On-policy (ratio 1) the per-token surrogate is A_b; padding adds nothing,
  even where its log-probs are far from the old ones."""
  adv = jnp.array([2.0, -3.0])
  mask = jnp.array([[True, True, True], [True, False, False]])
  old = jnp.log(jnp.array([[0.5, 0.25, 0.5], [0.1, 0.5, 0.5]]))
  new = jnp.where(mask, old, old + 3.0)  # padded tokens: ratio e^3
  expected = {
      "token_mean": -(3 * 2.0 + 1 * -3.0) / 4,
      "sequence_mean": -(2.0 + -3.0) / 2,
      "sequence_sum": -(3 * 2.0 / 3 + 1 * -3.0 / 3) / 2,   # / T = 3, then mean
  }
  # d loss / d log π at ratio 1 is -A_b times each token's weight in the mean.
  weights = {
      "token_mean": [[1 / 4] * 3, [1 / 4, 0, 0]],
      "sequence_mean": [[1 / 6] * 3, [1 / 2, 0, 0]],
      "sequence_sum": [[1 / 6] * 3, [1 / 6, 0, 0]],
  }
  for aggregation, value in expected.items():
    cfg = losses.PGLossConfig(aggregation=aggregation)
    fn = lambda lp: losses.clipped_pg_loss(lp, old, adv, mask, cfg)[0]
    loss, grad = jax.value_and_grad(fn)(new)
    assert float(loss) == pytest.approx(value, abs=1e-6), aggregation
    np.testing.assert_allclose(grad, -np.asarray(adv)[:, None] * np.array(weights[aggregation]),
                               atol=1e-6, err_msg=aggregation)


@pytest.mark.parametrize("aggregation", losses.AGGREGATIONS)
def test_kl_term_against_direct_computation(aggregation):
  """β · k3 in the loss equals a numpy k3 = r - log r - 1 with r = π_ref / π,
  aggregated by hand over the real tokens; its gradient is β (1 - r) per token."""
  logp = np.log(np.array([[0.2, 0.6, 0.9], [0.5, 0.05, 0.3]]))
  ref = np.log(np.array([[0.4, 0.3, 0.9], [0.1, 0.5, 0.7]]))
  mask = np.array([[True, True, False], [True, True, True]])
  r = np.exp(ref - logp)
  k3 = r - np.log(r) - 1
  per_row = [k3[b][mask[b]] for b in range(2)]
  expected = {"token_mean": np.concatenate(per_row).mean(),
              "sequence_mean": np.mean([x.mean() for x in per_row]),
              "sequence_sum": np.mean([x.sum() / 3 for x in per_row])}[aggregation]
  beta = 0.3
  cfg = losses.PGLossConfig(kl_coef=beta, aggregation=aggregation)
  fn = lambda lp: losses.clipped_pg_loss(lp, jnp.asarray(logp), jnp.zeros(2), jnp.asarray(mask),
                                         cfg, ref_logprobs=jnp.asarray(ref))
  (loss, metrics), grad = jax.value_and_grad(fn, has_aux=True)(jnp.asarray(logp))
  assert float(metrics["kl"]) == pytest.approx(expected, rel=1e-5)
  assert float(loss) == pytest.approx(beta * expected, rel=1e-5)
  # Gradient: β (1 - r) times each real token's weight in the aggregation.
  weight = {"token_mean": mask / mask.sum(),
            "sequence_mean": mask / mask.sum(1, keepdims=True) / 2,
            "sequence_sum": mask / 3 / 2}[aggregation]
  np.testing.assert_allclose(grad, beta * (1 - r) * weight, atol=1e-6)


@pytest.mark.parametrize("aggregation", losses.AGGREGATIONS)
def test_micro_batches_with_the_batch_totals_sum_to_the_batch(aggregation):
  """Split into slices of rows, each aggregated with the whole batch's totals,
  the losses, metrics and gradients add up to the batch's (gradient accumulation)."""
  k = iter(jax.random.split(jax.random.key(0), 5))
  logp = jax.random.uniform(next(k), (6, 5), minval=-3.0, maxval=-0.1)
  old = logp + 0.4 * jax.random.normal(next(k), (6, 5))   # off-policy: some tokens clip
  ref = logp + 0.3 * jax.random.normal(next(k), (6, 5))
  adv = jax.random.normal(next(k), (6,))
  mask = jnp.arange(5)[None] < jnp.array([5, 3, 1, 4, 5, 2])[:, None]
  cfg = losses.PGLossConfig(eps_low=0.2, eps_high=0.28, aggregation=aggregation, kl_coef=0.3)
  totals = losses.batch_totals(mask)
  assert (float(totals.tokens), float(totals.sequences)) == (20.0, 6.0)

  def loss(lp, rows, totals=None):
    return losses.clipped_pg_loss(lp, old[rows], adv[rows], mask[rows], cfg, ref[rows], totals)

  (whole, whole_m), whole_g = jax.value_and_grad(loss, has_aux=True)(logp, slice(None))
  parts = [jax.value_and_grad(loss, has_aux=True)(logp[rows], rows, totals)
           for rows in (slice(0, 2), slice(2, 3), slice(3, 6))]
  assert float(whole_m["clip_fraction"]) > 0
  assert float(sum(p[0][0] for p in parts)) == pytest.approx(float(whole), abs=1e-6)
  for name, value in whole_m.items():
    assert float(sum(p[0][1][name] for p in parts)) == pytest.approx(float(value), abs=1e-6)
  np.testing.assert_allclose(jnp.concatenate([p[1] for p in parts]), whole_g, atol=1e-7)
  # Without the batch's totals a slice is aggregated as a batch of its own.
  alone = loss(logp[:2], slice(0, 2))[0]
  assert float(alone) != pytest.approx(float(parts[0][0][0]))
