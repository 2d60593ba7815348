"""Tests for polyepo.theory on tabular policies: the propositions and examples of Ibn Hamid
et al., *Set Reinforcement Learning: Principles and Approaches* (the set RL note), by their
numbers there."""

import itertools
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import brute
from polyepo.core import objectives, theory
from polyepo.core import advantages as adv


def _policy(seed, num_responses):
  return jnp.asarray(np.random.default_rng(seed).normal(size=num_responses), jnp.float32)


@pytest.mark.parametrize("N,n", [(4, 2), (5, 3), (4, 4), (3, 1)])
def test_prop_2_6_all_subsets_estimator_is_M_times_gradient(N, n):
  """E[sum_i ∇log π(y_i) A_marg(y_i)] = (C(N,n) - C(N-1,n-1)) ∇J, exactly: the
  expectation is taken by enumerating all Y^N draws of the N generations."""
  logits = _policy(N * 7 + n, 3)
  rewards = jnp.array([1.0, 0.0, 1.0])
  labels = jnp.array([0, 1, 2], jnp.int32)
  probs = jax.nn.softmax(logits)
  draws = theory.all_tuples(3, N)                                  # [Y^N, N]
  weights = jnp.prod(probs[draws], -1)
  a = jax.vmap(lambda d: adv.polychromic_advantage(rewards[d], labels[d], n, "sum"))(draws)
  score = jax.nn.one_hot(draws, 3) - probs                         # ∇_θ log π(y_i)
  estimator = jnp.einsum("d,di,diy->y", weights, a, score)
  m = math.comb(N, n) - math.comb(N - 1, n - 1)
  grad = theory.objective_gradient(logits, rewards, labels, "polychromic", n)
  np.testing.assert_allclose(estimator, m * grad, atol=1e-5)
  assert np.linalg.norm(grad) > 1e-3


def test_prop_2_6_sampled_subsets_scaling():
  """Sampling K of the C(N,n) subsets uniformly: the estimator's expectation (over the
  draws and the subsets, both enumerated) is M_K ∇J with the set RL note's M_K."""
  N, n, K = 4, 2, 3
  logits = jnp.array([0.3, -0.2])
  rewards, labels = [1.0, 0.0], [0, 1]
  probs = np.asarray(jax.nn.softmax(logits))
  rows = list(itertools.combinations(range(N), n))
  total = len(rows)
  collections = list(itertools.combinations(rows, K))
  estimator = np.zeros(2)
  for draw in itertools.product(range(2), repeat=N):
    weight = np.prod(probs[list(draw)])
    r = [rewards[y] for y in draw]
    l = [labels[y] for y in draw]
    a = np.mean([brute.marginal_advantage(brute.polychromic, r, l, n, "sum", list(c))
                 for c in collections], axis=0)
    score = np.eye(2)[list(draw)] - probs
    estimator += weight * a @ score
  m_all = math.comb(N, n) - math.comb(N - 1, n - 1)
  m_k = (total / K) * math.comb(total - 2, K - 2) / math.comb(total, K) * m_all
  grad = theory.objective_gradient(logits, jnp.asarray(rewards), jnp.asarray(labels, jnp.int32),
                                   "polychromic", n)
  np.testing.assert_allclose(estimator, m_k * np.asarray(grad), atol=1e-6)


@pytest.mark.parametrize("n", [1, 2, 3, 4])
def test_example_3_4_pass_at_n_incorrect_advantage(n):
  """A(y_incorrect) = (1-p)^n - (1-p)^(n-1) <= 0 under f = max r."""
  logits = _policy(n, 5)
  rewards = jnp.array([1.0, 0.0, 0.0, 1.0, 0.0])
  labels = jnp.arange(5, dtype=jnp.int32)
  a = theory.marginal_advantage(logits, rewards, labels, "pass_at_n", n)
  p = float(jnp.sum(jax.nn.softmax(logits) * rewards))
  for y in (1, 2, 4):
    assert np.isclose(a[y], (1 - p) ** n - (1 - p) ** (n - 1), atol=1e-6)
    assert a[y] <= 1e-7


def test_lemma_3_3_gradient_is_probability_times_marginal_advantage():
  """∂J/∂z_y = n π(y) A(y): the logit shift of eq. 13 (n from the n members)."""
  logits = _policy(3, 4)
  rewards = jnp.array([1.0, 0.0, 1.0, 0.5])
  labels = jnp.array([0, 1, 1, -1], jnp.int32)
  for name in ("polychromic", "pass_at_n", "srl"):
    n = 3
    grad = theory.objective_gradient(logits, rewards, labels, name, n)
    a = theory.marginal_advantage(logits, rewards, labels, name, n)
    np.testing.assert_allclose(grad, n * jax.nn.softmax(logits) * a, atol=1e-6, err_msg=name)


@pytest.mark.parametrize("name", ["polychromic", "pass_at_n", "srl", "mean_reward"])
def test_observation_homogeneous_scaffold(name):
  """Λ(y^{⊕n}) = π(y) A(y) (the set RL note's Observation after Def. 3.2)."""
  logits = _policy(11, 4)
  rewards = jnp.array([1.0, 0.0, 1.0, 0.0])
  labels = jnp.array([0, 1, 2, 2], jnp.int32)
  n = 3
  a = theory.marginal_advantage(logits, rewards, labels, name, n)
  probs = jax.nn.softmax(logits)
  for y in range(4):
    lam = theory.scaffold_value(logits, rewards, labels, name, jnp.full(n, y, jnp.int32))
    assert np.isclose(lam, probs[y] * a[y], atol=1e-6)


def _any_pair_differs(rewards, labels, answers=None):
  return (objectives.num_distinct_strategies(labels) > 1).astype(jnp.float32)


@pytest.mark.parametrize("n", [2, 3])
def test_example_3_6_and_section_5_pairwise_objective(n):
  """f = 1{∃ y_i != y_j}: zero homogeneous scaffold under a uniform policy, and
  p (Σ_y π(y)^n - p^(n-1)) in general (§5)."""
  labels = jnp.arange(4, dtype=jnp.int32)
  rewards = jnp.zeros(4)
  for y in range(4):
    lam = theory.scaffold_value(jnp.zeros(4), rewards, labels, _any_pair_differs,
                                jnp.full(n, y, jnp.int32))
    assert abs(lam) < 1e-7
  logits = _policy(5, 4)
  probs = np.asarray(jax.nn.softmax(logits))
  for y in range(4):
    lam = theory.scaffold_value(logits, rewards, labels, _any_pair_differs,
                                jnp.full(n, y, jnp.int32))
    p = probs[y]
    assert np.isclose(lam, p * (np.sum(probs ** n) - p ** (n - 1)), atol=1e-6)


@pytest.mark.parametrize("n", [2, 3, 4])
@pytest.mark.parametrize("p", [0.1, 0.5, 0.8])
def test_section_5_srl_marginal_advantages(n, p):
  """One correct response with probability p, two incorrect ones: the set RL note's sums."""
  logits = jnp.log(jnp.array([p, (1 - p) / 2, (1 - p) / 2]))
  rewards = jnp.array([1.0, 0.0, 0.0])
  labels = jnp.arange(3, dtype=jnp.int32)
  a = theory.marginal_advantage(logits, rewards, labels, "srl", n)
  b = lambda m, k: math.comb(m, k) * p ** k * (1 - p) ** (m - k)
  base = sum(b(n, k) / k for k in range(1, n + 1))
  correct = sum(b(n - 1, k) / (k + 1) for k in range(n)) - base
  incorrect = sum(b(n - 1, k) / k for k in range(1, n)) - base
  assert np.isclose(a[0], correct, atol=1e-6)
  assert np.isclose(a[1], incorrect, atol=1e-6) and np.isclose(a[2], incorrect, atol=1e-6)


@pytest.mark.parametrize("n", [2, 3, 4])
def test_prop_4_2_homogeneous_correct_sets(n):
  """Λ_poly(y^{⊕n}) <= sqrt(p(1-p)/n), and < 0 once π(y) is large enough."""
  rewards = jnp.array([1.0, 1.0, 0.0, 1.0])
  labels = jnp.arange(4, dtype=jnp.int32)
  members = jnp.zeros(n, jnp.int32)
  for seed in range(6):
    logits = _policy(seed, 4)
    p = float(jax.nn.softmax(logits)[0])
    lam = theory.scaffold_value(logits, rewards, labels, "polychromic", members)
    assert lam <= np.sqrt(p * (1 - p) / n) + 1e-7
  dominant = jnp.array([6.0, 0.0, 0.0, 0.0])  # π(y) ≈ 0.993
  assert theory.scaffold_value(dominant, rewards, labels, "polychromic", members) < 0


@pytest.mark.parametrize("n,q", [(2, 1), (2, 2), (3, 1), (3, 2)])
def test_prop_4_3_heterogeneous_sets(n, q):
  """Each member unique with probability p < 1/n, q of them correct, all other
  responses incorrect: Λ_poly(y_1..n) > q p^n (1-p) / n."""
  p = 0.9 / n / 1.5
  others = 2
  rest = (1 - n * p) / others
  logits = jnp.log(jnp.array([p] * n + [rest] * others))
  rewards = jnp.array([1.0] * q + [0.0] * (n - q) + [0.0] * others)
  labels = jnp.arange(n + others, dtype=jnp.int32)
  lam = theory.scaffold_value(logits, rewards, labels, "polychromic", jnp.arange(n, dtype=jnp.int32))
  assert lam > q * p ** n * (1 - p) / n


def test_theory_is_jittable_and_vmappable():
  rewards = jnp.array([1.0, 0.0, 1.0])
  labels = jnp.array([0, 1, 1], jnp.int32)
  logits = jax.random.normal(jax.random.key(0), (5, 3))
  fn = lambda z: theory.marginal_advantage(z, rewards, labels, "polychromic", 2)
  np.testing.assert_allclose(jax.jit(jax.vmap(fn))(logits),
                             np.stack([fn(z) for z in logits]), atol=1e-6)
  with pytest.raises(ValueError, match="exceeds"):
    theory.all_tuples(100, 4)
