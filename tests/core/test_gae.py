"""Tests for polyepo.gae: a hand-worked example, a plain-Python reference, the critic's loss."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from polyepo.core import gae as gae_lib


def _reference(rewards, values, mask, gamma, lam):
  """GAE by the definition: Â_t = Σ_l (γλ)^l δ_{t+l} over the episode's tokens."""
  T = len(rewards)
  idx = [t for t in range(T) if mask[t]]
  v = lambda t: values[t] if t < T and mask[t] else 0.0
  delta = {t: rewards[t] + gamma * v(t + 1) - values[t] for t in idx}
  adv = np.zeros(T)
  for t in idx:
    adv[t] = sum((gamma * lam) ** (u - t) * delta[u] for u in idx if u >= t)
  ret = np.where(mask, adv + np.asarray(values) * np.asarray(mask), 0.0)
  return adv, ret


def test_hand_worked_example():
  """T = 4, three real tokens, reward 1 on the last, γ = 0.9, λ = 0.5, V = (0.5, 0.6, 0.8, 9):
  δ = (0.9·0.6 - 0.5, 0.9·0.8 - 0.6, 1 - 0.8) = (0.04, 0.12, 0.2);
  Â_2 = 0.2, Â_1 = 0.12 + 0.45·0.2 = 0.21, Â_0 = 0.04 + 0.45·0.21 = 0.1345;
  R = Â + V = (0.6345, 0.81, 1.0); the padding token gets 0 (its value 9 is never read)."""
  mask = jnp.array([True, True, True, False])
  rewards = gae_lib.terminal_rewards(jnp.float32(1.0), mask)
  np.testing.assert_array_equal(rewards, [0, 0, 1, 0])
  adv, ret = gae_lib.gae(rewards, jnp.array([0.5, 0.6, 0.8, 9.0]), mask, 0.9, 0.5)
  np.testing.assert_allclose(adv, [0.1345, 0.21, 0.2, 0.0], atol=1e-6)
  np.testing.assert_allclose(ret, [0.6345, 0.81, 1.0, 0.0], atol=1e-6)


@pytest.mark.parametrize("gamma,lam", [(1.0, 1.0), (0.9, 0.95), (1.0, 0.0), (0.5, 0.7)])
def test_equals_plain_python_reference(gamma, lam):
  rng = np.random.default_rng(int(gamma * 10 + lam * 100))
  for _ in range(5):
    T = 7
    start, end = sorted(rng.integers(0, T + 1, 2))
    mask = (np.arange(T) >= start) & (np.arange(T) < max(end, start + 1))
    values = rng.normal(size=T)
    reward = float(rng.integers(0, 2))
    rewards = np.asarray(gae_lib.terminal_rewards(jnp.float32(reward), jnp.asarray(mask)))
    assert rewards.sum() == reward and (reward == 0 or rewards[mask][-1] == reward)
    want_adv, want_ret = _reference(rewards, values, mask, gamma, lam)
    adv, ret = jax.jit(gae_lib.gae, static_argnums=(3, 4))(
        jnp.asarray(rewards), jnp.asarray(values, jnp.float32), jnp.asarray(mask), gamma, lam)
    np.testing.assert_allclose(adv, want_adv, atol=1e-5)
    np.testing.assert_allclose(ret, want_ret, atol=1e-5)


def test_gamma_lambda_one_gives_return_minus_value():
  """γ = λ = 1: Â_t = G - V_t on every episode token (a vine's tokens start mid-row)."""
  values = jnp.array([[0.3, -0.2, 0.7, 0.1, 0.4], [5.0, 5.0, 0.25, 0.5, 0.0]])
  mask = jnp.array([[True, True, True, True, False], [False, False, True, True, True]])
  reward = jnp.array([1.0, 0.0])
  rewards = jax.vmap(gae_lib.terminal_rewards)(reward, mask)
  adv, ret = jax.vmap(lambda r, v, m: gae_lib.gae(r, v, m, 1.0, 1.0))(rewards, values, mask)
  want = np.where(mask, reward[:, None] - values, 0.0)
  np.testing.assert_allclose(adv, want, atol=1e-6)
  np.testing.assert_allclose(ret, np.where(mask, reward[:, None], 0.0), atol=1e-6)


def test_value_loss_plain_and_clipped():
  """Token 0: V moves 0 -> 1 towards R = 2, clipped at 0.5: max(1², 1.5²)/2;
  token 1: V = R: 0; token 2 is masked. Unclipped: (1² + 0) / 2 / 2."""
  values, old = jnp.array([1.0, 3.0, 7.0]), jnp.array([0.0, 3.0, 0.0])
  returns, mask = jnp.array([2.0, 3.0, 0.0]), jnp.array([True, True, False])
  assert float(gae_lib.value_loss(values, old, returns, mask)) == pytest.approx(0.25)
  assert float(gae_lib.value_loss(values, old, returns, mask, clip=0.5)) == pytest.approx(
      0.5 * 1.5**2 / 2)
  grad = jax.grad(lambda v: gae_lib.value_loss(v, old, returns, mask))(values)
  np.testing.assert_allclose(grad, [-0.5, 0.0, 0.0])


def test_value_loss_of_a_slice_with_the_batch_token_count():
  """The token count of the whole batch as denominator: the two slices' losses
  (token 0 alone: 1² / 2 / 2; tokens 1-2: 0) add up to the batch's 0.25."""
  values, old = jnp.array([1.0, 3.0, 7.0]), jnp.array([0.0, 3.0, 0.0])
  returns, mask = jnp.array([2.0, 3.0, 0.0]), jnp.array([True, True, False])
  first = gae_lib.value_loss(values[:1], old[:1], returns[:1], mask[:1], num_tokens=2.0)
  rest = gae_lib.value_loss(values[1:], old[1:], returns[1:], mask[1:], num_tokens=2.0)
  assert (float(first), float(rest)) == (0.25, 0.0)
  assert float(gae_lib.value_loss(values[:1], old[:1], returns[:1], mask[:1])) == 0.5


def test_explained_variance():
  returns = jnp.array([0.0, 1.0, 1.0, 0.0, 5.0])
  mask = jnp.array([True, True, True, True, False])
  assert float(gae_lib.explained_variance(returns, returns, mask)) == pytest.approx(1.0)
  assert float(gae_lib.explained_variance(jnp.full(5, 0.5), returns, mask)) == pytest.approx(0.0)
  # V = 0: Var(R - V) = Var(R) -> 0; V = 1 - R: Var(2R - 1) = 4 Var(R) -> -3.
  assert float(gae_lib.explained_variance(1.0 - returns, returns, mask)) == pytest.approx(-3.0)
  assert float(gae_lib.explained_variance(returns, jnp.ones(5), mask)) == 0.0


def test_state_explained_variance_and_its_bound_by_hand():
  valid = jnp.ones((2, 4), bool)
  # Outcomes decided by the state: the bound is 1, and the state means reach it.
  decided = jnp.array([[1.0, 1.0, 1.0, 1.0], [0.0, 0.0, 0.0, 0.0]])
  explained, bound = gae_lib.state_explained_variance(decided, decided, valid)
  assert (float(explained), float(bound)) == pytest.approx((1.0, 1.0))
  # Each state 3:1 / 1:3. Var(G) = 1/4; each state's unbiased variance is
  # (3·(1/4)² + (3/4)²)/3 = 1/4, so the bound is 1 − (1/4)/(1/4) = 0; the in-sample
  # means V = 3/4, 1/4 leave Var(G − V) = 3/16: explained 1 − (3/16)/(1/4) = 1/4.
  mixed = jnp.array([[1.0, 1.0, 1.0, 0.0], [0.0, 0.0, 0.0, 1.0]])
  means = jnp.array([[0.75] * 4, [0.25] * 4])
  explained, bound = gae_lib.state_explained_variance(means, mixed, valid)
  assert (float(explained), float(bound)) == pytest.approx((0.25, 0.0))
  # A state with one valid response adds to Var(G) but not to the within-state term:
  # rows [1, 0] (unbiased variance 1/2) and [1, –]: Var(G) over {1, 0, 1} = 2/9,
  # bound = 1 − (1/2)/(2/9) = −5/4 (an estimate, unclipped).
  rows = jnp.array([[1.0, 0.0], [1.0, 0.0]])
  some = jnp.array([[True, True], [True, False]])
  _, bound = gae_lib.state_explained_variance(jnp.zeros((2, 2)), rows, some)
  assert float(bound) == pytest.approx(1.0 - 0.5 / (2.0 / 9.0))
  _, flat = gae_lib.state_explained_variance(jnp.zeros((2, 2)), jnp.ones((2, 2)), valid[:, :2])
  assert float(flat) == 0.0
