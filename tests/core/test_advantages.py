"""Tests for polyepo.advantages: closed forms vs brute-force enumeration, theory, baselines."""

import itertools
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import brute
from polyepo.core import objectives, sets
from polyepo.core import advantages as adv

CLOSED = [("polychromic", brute.polychromic, adv.polychromic_advantage),
          ("pass_at_n", brute.pass_at_n, adv.pass_at_n_advantage),
          ("mean_reward", brute.mean_reward, adv.mean_reward_advantage)]


def _patterns(N, rng):
  """Reward/label patterns that stress the closed forms."""
  binary = rng.integers(0, 2, N).astype(float)
  real = rng.random(N)
  mixed = rng.integers(-1, 3, N)
  yield real, mixed
  yield binary, mixed
  yield binary, np.full(N, -1)                    # all degenerate
  yield real, np.full(N, 7)                       # all one strategy
  yield np.ones(N), np.arange(N)                  # all correct, all distinct
  yield np.zeros(N), rng.integers(-1, 2, N)       # all wrong
  yield real, np.where(rng.random(N) < 0.5, -1, rng.integers(0, N, N))


@pytest.mark.parametrize("N", range(1, 11))
def test_closed_forms_equal_enumeration_every_n(N):
  rng = np.random.default_rng(N)
  for n in range(1, N + 1):
    for rewards, labels in _patterns(N, rng):
      r = jnp.asarray(rewards, jnp.float32)
      l = jnp.asarray(labels, jnp.int32)
      for name, f, closed in CLOSED:
        for reduction in ("mean", "sum"):
          want = brute.marginal_advantage(f, list(rewards), list(labels), n, reduction)
          got = closed(r, l, n, reduction)
          scale = max(1.0, math.comb(N - 1, n - 1)) if reduction == "sum" else 1.0
          np.testing.assert_allclose(got, want, rtol=1e-5, atol=2e-6 * scale,
                                     err_msg=f"{name} N={N} n={n} {reduction}")


@pytest.mark.slow
@settings(max_examples=25)
@given(st.data())
def test_generic_estimator_equals_enumeration(data):
  N = data.draw(st.sampled_from([1, 4, 7]))  # few shapes: each new one compiles
  n = data.draw(st.integers(1, N))
  rewards = data.draw(st.lists(st.sampled_from([0.0, 0.5, 1.0]), min_size=N, max_size=N))
  labels = data.draw(st.lists(st.integers(-1, 2), min_size=N, max_size=N))
  r, l = jnp.asarray(rewards, jnp.float32), jnp.asarray(labels, jnp.int32)
  subsets = sets.all_subsets(N, n)
  for name, f in [("polychromic", brute.polychromic), ("srl", brute.srl),
                  ("pass_at_n", brute.pass_at_n)]:
    for reduction in ("mean", "sum"):
      got = adv.marginal_set_advantage(name, r, l, subsets, reduction)
      want = brute.marginal_advantage(f, rewards, labels, n, reduction)
      np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5, err_msg=name)


@pytest.mark.slow
@settings(max_examples=25)
@given(st.data())
def test_generic_estimator_on_a_sample_of_subsets(data):
  N = data.draw(st.sampled_from([3, 6]))
  n = data.draw(st.integers(1, N - 1))
  total = math.comb(N, n)
  chosen = data.draw(st.lists(st.integers(0, total - 1), min_size=1, max_size=total, unique=True))
  all_rows = list(itertools.combinations(range(N), n))
  subsets = [all_rows[i] for i in chosen]
  rewards = data.draw(st.lists(st.sampled_from([0.0, 1.0]), min_size=N, max_size=N))
  labels = data.draw(st.lists(st.integers(-1, 2), min_size=N, max_size=N))
  for reduction in ("mean", "sum"):
    got = adv.marginal_set_advantage(
        objectives.polychromic, jnp.asarray(rewards), jnp.asarray(labels, jnp.int32),
        jnp.asarray(subsets, jnp.int32), reduction)
    want = brute.marginal_advantage(brute.polychromic, rewards, labels, n, reduction, subsets)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_majority_vote_objective_passes_answers_through():
  rewards = [1.0, 0.0, 0.0, 1.0, 0.0]
  answers = [4, 2, 2, 4, -1]
  got = adv.marginal_set_advantage(
      "majority_vote", jnp.asarray(rewards), jnp.zeros(5, jnp.int32),
      sets.all_subsets(5, 3), "mean", answers=jnp.asarray(answers, jnp.int32))
  want = brute.marginal_advantage(lambda r, a: brute.majority_vote(r, a), rewards, answers, 3)
  np.testing.assert_allclose(got, want, atol=1e-6)
  # Example 3.5 of Ibn Hamid et al., *Set Reinforcement Learning: Principles and Approaches*
  # (the set RL note): an incorrect generation never gets a positive advantage.
  assert np.all(np.asarray(got)[[1, 2, 4]] <= 1e-6)


@settings(max_examples=25)
@given(st.sampled_from([2, 5, 9]).flatmap(
    lambda N: st.lists(st.booleans(), min_size=N, max_size=N)), st.data())
def test_mean_reward_identity(correct, data):
  """f = mean reward: all-subsets advantage = (N-n)/(n(N-1)) (r_i - mean r), the closed
  form of docs/method.md, "Exactness beats enumeration"."""
  N = len(correct)
  n = data.draw(st.integers(1, N))
  r = jnp.asarray(correct, jnp.float32)
  got = adv.marginal_set_advantage(objectives.mean_reward, r, jnp.zeros(N, jnp.int32),
                                   sets.all_subsets(N, n))
  want = (N - n) / (n * (N - 1)) * (np.asarray(r) - np.mean(np.asarray(r)))
  np.testing.assert_allclose(got, want, atol=1e-6)


@settings(max_examples=30)
@given(st.sampled_from([1, 2, 5, 11, 24]).flatmap(
    lambda N: st.lists(st.booleans(), min_size=N, max_size=N)), st.data())
def test_pass_at_n_is_pass_at_k_training_advantage(correct, data):
  """f = max with binary rewards: correct -> 1 - baseline; incorrect ->
  1 - C(N-1-c, n-1)/C(N-1, n-1) - baseline, with baseline = 1 - C(N-c, n)/C(N, n).
  Never positive for an incorrect generation (the set RL note's Example 3.4)."""
  N, c = len(correct), sum(correct)
  n = data.draw(st.integers(1, N))
  baseline = 1 - math.comb(N - c, n) / math.comb(N, n)
  incorrect = 1 - math.comb(N - 1 - c, n - 1) / math.comb(N - 1, n - 1) if c < N else None
  want = [1 - baseline if x else incorrect - baseline for x in correct]
  got = np.asarray(adv.max_reward_advantage(jnp.asarray(correct, jnp.float32), n))
  np.testing.assert_allclose(got, want, atol=1e-6)
  assert np.all(got[~np.asarray(correct)] <= 1e-6)


def test_explainer_worked_example():
  """N=4, sets S1={y1,y3}, S2={y2,y4}, S3={y1,y2}, n=2: y1, y2, y4 correct in
  clusters A, B, A; y3 incorrect in cluster C. Worked by hand: baseline 0.833 and
  marginal advantages -0.166, +0.334, -0.333, +0.167 (the set RL note's eq. 9, sums)."""
  r = jnp.array([1.0, 1.0, 0.0, 1.0])
  l = jnp.array([0, 1, 2, 0], jnp.int32)
  subsets = jnp.array([[0, 2], [1, 3], [0, 1]], jnp.int32)
  got = adv.marginal_set_advantage("polychromic", r, l, subsets, "sum")
  np.testing.assert_allclose(got, [-1 / 6, 1 / 3, -1 / 3, 1 / 6], atol=1e-6)
  np.testing.assert_allclose(adv.grpo_advantage(r)[2], -np.sqrt(3), atol=1e-4)


def test_seven_correct_one_unique():
  """A worked example: 7 correct in strategy A, 1 incorrect in unique B (N=8, n=4).

  Hand-worked: sets without y8 score 1 * 1/4; sets with y8 score 0.75 * 2/4.
  Half the 70 sets contain y8, so the baseline is 0.3125 and y8's advantage is
  0.375 - 0.3125 = +0.0625. GRPO gives y8 a negative advantage, and so does reward
  shaping unless λ exceeds 7/6 (y8: λ·1 vs others 1 + λ/7).
  """
  r = jnp.array([1.0] * 7 + [0.0])
  l = jnp.array([0] * 7 + [1], jnp.int32)
  poly = adv.polychromic_advantage(r, l, 4)
  np.testing.assert_allclose(poly[7], 0.0625, atol=1e-6)
  # A correct y_i is in C(7,3) = 35 sets: 15 also hold y8 (0.375), 20 do not (0.25).
  np.testing.assert_allclose(poly[:7], (20 * 0.25 + 15 * 0.375) / 35 - 0.3125, atol=1e-6)
  assert adv.grpo_advantage(r)[7] < 0
  assert adv.grpo_advantage(r, normalize=False)[7] < 0
  for lam in (0.1, 0.5, 1.0, 1.1):
    assert adv.reward_shaping_advantage(r, l, lam)[7] < 0, lam
  assert adv.reward_shaping_advantage(r, l, 1.3)[7] > 0


def _expected_sampled_sum(rewards, labels, N, n, K):
  """Exact expectation of the sampled-K "sum" estimator over all K-sets of subsets."""
  rows = list(itertools.combinations(range(N), n))
  values = [brute.marginal_advantage(brute.polychromic, rewards, labels, n, "sum", list(c))
            for c in itertools.combinations(rows, K)]
  return np.mean(values, axis=0)


@pytest.mark.parametrize("N,n,K", [(4, 2, 3), (5, 2, 4), (5, 3, 2)])
def test_sampled_estimator_is_unbiased(N, n, K):
  """The set RL note's Prop. 2.6: E[sampled-K estimator] = (K-1)/(C(N,n)-1) x
  all-subsets estimator (the ratio of the two scaling constants M), checked by exact
  enumeration of every K-subset of subsets."""
  rng = np.random.default_rng(N * 10 + n)
  rewards = list(rng.integers(0, 2, N).astype(float))
  labels = list(rng.integers(-1, 3, N))
  total = math.comb(N, n)
  m_all = total - math.comb(N - 1, n - 1)
  m_k = (total / K) * math.comb(total - 2, K - 2) / math.comb(total, K) * m_all
  exact = brute.marginal_advantage(brute.polychromic, rewards, labels, n, "sum")
  np.testing.assert_allclose(_expected_sampled_sum(rewards, labels, N, n, K),
                             np.asarray(exact) * m_k / m_all, atol=1e-9)


def test_sample_subsets_estimator_monte_carlo():
  """sample_subsets + marginal_set_advantage: Monte Carlo mean within 5 standard
  errors of (K-1)/(C-1) times the exact closed form."""
  N, n, K, draws = 8, 3, 10, 4000
  r = jnp.array([1, 0, 1, 1, 0, 0, 1, 0], jnp.float32)
  l = jnp.array([0, 1, 0, 2, -1, 3, 3, 1], jnp.int32)
  keys = jax.random.split(jax.random.key(0), draws)
  estimate = jax.jit(jax.vmap(lambda k: adv.set_rl_advantage(
      "polychromic", r, l, set_size=n, num_subsets=K, key=k, reduction="sum")))(keys)
  total = math.comb(N, n)
  want = np.asarray(adv.polychromic_advantage(r, l, n, "sum")) * (K - 1) / (total - 1)
  mean = np.mean(np.asarray(estimate), 0)
  stderr = np.std(np.asarray(estimate), 0) / np.sqrt(draws)
  assert np.all(np.abs(mean - want) < 5 * stderr + 1e-6), (mean, want, stderr)


def test_grpo():
  r = jnp.array([1.0, 0.0, 0.0, 1.0])
  np.testing.assert_allclose(adv.grpo_advantage(r), [1, -1, -1, 1], atol=1e-5)
  np.testing.assert_allclose(adv.grpo_advantage(r, normalize=False), [.5, -.5, -.5, .5])
  np.testing.assert_array_equal(adv.grpo_advantage(jnp.ones(5)), np.zeros(5))


def test_diversity_bonus_hand_values():
  l = jnp.array([0, 0, 1, -1], jnp.int32)
  # y0: 2 of 3 others differ; y2: all 3 differ; degenerate y3 gets 0.
  np.testing.assert_allclose(adv.diversity_bonus(l), [2 / 3, 2 / 3, 1.0, 0.0])
  np.testing.assert_array_equal(adv.diversity_bonus(jnp.array([3], jnp.int32)), [0.0])
  shaped = np.array([1, 0, 1, 1]) + 0.3 * np.array([2 / 3, 2 / 3, 1, 0])
  np.testing.assert_allclose(
      adv.reward_shaping_advantage(jnp.array([1., 0, 1, 1]), l, 0.3),
      (shaped - shaped.mean()) / (shaped.std() + 1e-6), rtol=1e-5)


def test_set_rl_advantage_dispatch():
  r = jnp.array([1, 0, 1, 1, 0, 1], jnp.float32)
  l = jnp.array([0, 1, 0, 2, -1, 3], jnp.int32)
  for name in ("polychromic", "pass_at_n", "mean_reward", "srl", "polychromic_correct_only"):
    exact = adv.set_rl_advantage(name, r, l, set_size=3)
    enumerated = adv.marginal_set_advantage(name, r, l, sets.all_subsets(6, 3))
    np.testing.assert_allclose(exact, enumerated, atol=1e-6, err_msg=name)
  sampled = adv.set_rl_advantage("polychromic", r, l, set_size=3, num_subsets=7,
                                 key=jax.random.key(0))
  assert sampled.shape == (6,)
  with pytest.raises(ValueError, match="key is required"):
    adv.set_rl_advantage("polychromic", r, l, set_size=3, num_subsets=7)
  with pytest.raises(ValueError, match="needs answers"):
    adv.set_rl_advantage("majority_vote", r, l, set_size=3)
  with pytest.raises(ValueError, match="valid choices"):
    adv.set_rl_advantage("poly", r, l, set_size=3)


@pytest.mark.parametrize("rewards,labels", [
    (np.ones(8), np.zeros(8)),            # equal rewards
    (np.zeros(8), np.zeros(8)),
    (np.ones(8), np.full(8, -1)),         # all degenerate
    (np.array([1., 0, 1, 0, 1, 0, 1, 0]), np.arange(8)),
])
def test_no_nan_or_inf(rewards, labels):
  r, l = jnp.asarray(rewards, jnp.float32), jnp.asarray(labels, jnp.int32)
  outs = [adv.grpo_advantage(r), adv.grpo_advantage(r, normalize=False),
          adv.reward_shaping_advantage(r, l, 1.0), adv.normalize_advantage(r)]
  for n in (1, 4, 8):  # n = N included
    for closed in (adv.polychromic_advantage, adv.pass_at_n_advantage,
                   adv.mean_reward_advantage):
      outs += [closed(r, l, n), closed(r, l, n, "sum")]
  for out in outs:
    assert np.all(np.isfinite(out))
  if rewards.std() == 0:
    for out in outs:
      np.testing.assert_allclose(out, 0.0, atol=1e-5)  # "sum" outputs are x C(N-1, n-1)


def test_single_generation():
  r, l = jnp.array([1.0]), jnp.array([0], jnp.int32)
  for closed in (adv.polychromic_advantage, adv.pass_at_n_advantage, adv.mean_reward_advantage):
    np.testing.assert_array_equal(closed(r, l, 1), [0.0])


@pytest.mark.parametrize("call,match", [
    (lambda: adv.polychromic_advantage(jnp.ones(4), jnp.zeros(4, jnp.int32), 5), "set_size must"),
    (lambda: adv.polychromic_advantage(jnp.ones(4), jnp.zeros(4, jnp.int32), 0), "set_size must"),
    (lambda: adv.polychromic_advantage(jnp.ones(4), jnp.zeros(3, jnp.int32), 2), "same shape"),
    (lambda: adv.polychromic_advantage(jnp.ones(4), jnp.zeros(4), 2), "labels must have an integer"),
    (lambda: adv.polychromic_advantage(jnp.ones((2, 4)), jnp.zeros((2, 4), jnp.int32), 2), "rank 1"),
    (lambda: adv.polychromic_advantage(jnp.ones(4), jnp.zeros(4, jnp.int32), 2, "max"), "reduction"),
    (lambda: adv.marginal_set_advantage("polychromic", jnp.ones(4), jnp.zeros(4, jnp.int32),
                                        jnp.zeros((7, 2), jnp.int32)), "K must satisfy"),
    (lambda: adv.marginal_set_advantage("polychromic", jnp.ones(4), jnp.zeros(4, jnp.int32),
                                        jnp.zeros((2, 5), jnp.int32)), "subsets.shape"),
    (lambda: adv.marginal_set_advantage("polychromic", jnp.ones(4), jnp.zeros(4, jnp.int32),
                                        jnp.zeros((2, 2))), "subsets must have an integer"),
    (lambda: adv.reward_shaping_advantage(jnp.ones(4), jnp.zeros(4, jnp.int32), -0.5), "lam"),
])
def test_bad_input_raises_value_error_at_trace_time(call, match):
  with pytest.raises(ValueError, match=match):
    call()


def test_errors_raised_under_jit():
  f = jax.jit(lambda r, l: adv.polychromic_advantage(r, l, 5))
  with pytest.raises(ValueError, match="set_size"):
    f(jnp.ones(4), jnp.zeros(4, jnp.int32))


@pytest.mark.slow
def test_jit_and_vmap_over_prompts():
  key = jax.random.key(0)
  B, N, n = 5, 8, 3
  r = jax.random.bernoulli(key, 0.5, (B, N)).astype(jnp.float32)
  l = jax.random.randint(jax.random.fold_in(key, 1), (B, N), -1, 4)
  subsets = sets.all_subsets(N, n)
  fns = {
      "polychromic": lambda r, l: adv.polychromic_advantage(r, l, n),
      "pass_at_n": lambda r, l: adv.pass_at_n_advantage(r, l, n),
      "mean_reward": lambda r, l: adv.mean_reward_advantage(r, l, n),
      "generic": lambda r, l: adv.marginal_set_advantage(objectives.polychromic, r, l, subsets),
      "grpo": lambda r, l: adv.grpo_advantage(r),
      "shaping": lambda r, l: adv.reward_shaping_advantage(r, l, 0.5),
  }
  for name, fn in fns.items():
    batched = jax.jit(jax.vmap(fn))(r, l)
    one = jax.jit(fn)
    rows = np.stack([one(r[b], l[b]) for b in range(B)])
    np.testing.assert_allclose(batched, rows, atol=1e-6, err_msg=name)
  # Closed form and enumeration agree batched, too.
  np.testing.assert_allclose(jax.vmap(fns["polychromic"])(r, l),
                             jax.vmap(fns["generic"])(r, l), atol=1e-6)
  # λ can be swept under vmap.
  lams = jnp.array([0.0, 0.5, 2.0])
  swept = jax.vmap(lambda lam: adv.reward_shaping_advantage(r[0], l[0], lam))(lams)
  np.testing.assert_allclose(swept[1], fns["shaping"](r[0], l[0]), atol=1e-6)
