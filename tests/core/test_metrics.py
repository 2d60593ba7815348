"""Tests for polyepo.metrics against brute force and hand-worked values."""

import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import brute
from polyepo import DEGENERATE
from polyepo.core import metrics
from polyepo.core import advantages as adv


@pytest.mark.parametrize("N", [1, 5, 16, 64])
def test_pass_at_k_matches_exact_fraction(N):
  cs = np.arange(N + 1)
  for k in sorted({k for k in (1, 2, N // 2, N) if 1 <= k <= N}):
    got = np.asarray(metrics.pass_at_k(N, jnp.asarray(cs), k))
    want = np.array([float(brute.pass_at_k(N, int(c), k)) for c in cs])
    np.testing.assert_allclose(got, want, atol=2e-6)


def test_pass_at_k_is_probability_over_subsets():
  """pass@k = share of k-subsets of the N samples with at least one correct one."""
  correct = [1, 0, 0, 1, 0, 0, 0]
  for k in range(1, 8):
    subsets = list(itertools.combinations(range(7), k))
    share = np.mean([any(correct[i] for i in s) for s in subsets])
    assert np.isclose(metrics.pass_at_k(7, sum(correct), k), share, atol=1e-6)


def test_pass_at_k_curve_and_batch():
  curve = metrics.pass_at_k_curve(4, jnp.array([0, 1, 4]), [1, 2, 4])
  np.testing.assert_allclose(curve, [[0, 0, 0], [0.25, 0.5, 1.0], [1, 1, 1]], atol=1e-6)
  with pytest.raises(ValueError, match="k must satisfy"):
    metrics.pass_at_k(4, 1, 5)


def test_strategy_counts_and_distinct():
  labels = jnp.array([0, 0, 2, -1, 2, 1], jnp.int32)
  rewards = jnp.array([1.0, 0, 0, 1, 1, 0])
  np.testing.assert_array_equal(metrics.strategy_counts(labels, 3), [2, 1, 2, 1])
  assert metrics.distinct_strategies(labels) == 3
  assert metrics.distinct_correct_strategies(rewards, labels) == 2  # 0 and 2; -1 excluded
  p = np.array([2, 1, 2, 1]) / 6
  assert np.isclose(metrics.strategy_entropy(labels, 3), -np.sum(p * np.log(p)), atol=1e-6)
  assert metrics.strategy_entropy(jnp.zeros(5, jnp.int32), 3) == 0.0


def test_branch_point_hand_values():
  tokens = jnp.array([[1, 2, 3, 4], [1, 2, 5, 4], [1, 9, 3, 4], [1, 2, 3, 4]])
  mask = jnp.array([[1, 1, 1, 1], [1, 1, 1, 1], [1, 1, 1, 1], [1, 1, 1, 0]], bool)
  # Pairs: (0,1)=2 (0,2)=1 (0,3)=3 (1,2)=1 (1,3)=2 (2,3)=1 -> mean 10/6
  assert np.isclose(metrics.branch_point(tokens, mask), 10 / 6)
  assert metrics.branch_point(tokens[:1], mask[:1]) == 0.0


def test_branch_point_brute_force():
  rng = np.random.default_rng(0)
  tokens = rng.integers(0, 2, (6, 7))
  lengths = rng.integers(0, 8, 6)
  mask = np.arange(7)[None] < lengths[:, None]
  pairs = []
  for i, j in itertools.combinations(range(6), 2):
    t = 0
    while t < min(lengths[i], lengths[j]) and tokens[i, t] == tokens[j, t]:
      t += 1
    pairs.append(t)
  assert np.isclose(metrics.branch_point(jnp.asarray(tokens), jnp.asarray(mask)), np.mean(pairs))


def test_majority_vote_accuracy_and_top_answer_share():
  rewards, answers = jnp.array([1.0, 1, 0, 0, 0]), jnp.array([3, 3, 5, 5, 5])
  assert metrics.majority_vote_accuracy(rewards, answers) == 0.0
  assert np.isclose(metrics.top_answer_share(answers), 3 / 5)
  rewards, answers = jnp.array([1.0, 1, 0, 0]), jnp.array([3, 3, -1, -1])  # abstentions
  assert metrics.majority_vote_accuracy(rewards, answers) == 1.0
  assert np.isclose(metrics.top_answer_share(answers), 0.5)
  rewards, answers = jnp.array([1.0, 0, 0, 0]), jnp.array([3, 4, -1, -1])  # a tie
  assert metrics.majority_vote_accuracy(rewards, answers) == 0.5
  assert np.isclose(metrics.top_answer_share(answers), 0.25)
  answers = jnp.full(4, -1)  # no votes at all
  assert metrics.majority_vote_accuracy(rewards, answers) == 0.0
  assert metrics.top_answer_share(answers) == 0.0


def test_metrics_jit_and_vmap():
  key = jax.random.key(0)
  labels = jax.random.randint(key, (4, 8), -1, 3)
  rewards = jax.random.bernoulli(key, 0.5, (4, 8)).astype(jnp.float32)
  tokens = jax.random.randint(key, (4, 8, 6), 0, 2)
  mask = jnp.ones((4, 8, 6), bool)
  fns = [lambda r, l, t, m: metrics.distinct_correct_strategies(r, l),
         lambda r, l, t, m: metrics.strategy_entropy(l, 3),
         lambda r, l, t, m: metrics.branch_point(t, m),
         lambda r, l, t, m: metrics.majority_vote_accuracy(r, l),
         lambda r, l, t, m: metrics.top_answer_share(l),
         lambda r, l, t, m: metrics.pass_at_k(8, jnp.sum(r > 0), 4)]
  for fn in fns:
    batched = jax.jit(jax.vmap(fn))(rewards, labels, tokens, mask)
    rows = [fn(rewards[i], labels[i], tokens[i], mask[i]) for i in range(4)]
    np.testing.assert_allclose(batched, rows, atol=1e-6)


def test_decoy_mass_hand_values():
  # strategies: 0 solved once (its wrong sample is no decoy), 1 never solved
  # (both its samples are decoys), 2 solved; DEGENERATE never counts.
  rewards = jnp.array([1., 0., 0., 0., 1., 0.])
  labels = jnp.array([0, 0, 1, 1, 2, -1])
  assert float(metrics.decoy_mass(rewards, labels)) == pytest.approx(2 / 6)
  assert float(metrics.decoy_mass(jnp.zeros(3), jnp.array([-1, -1, -1]))) == 0.0


def test_family_labels_hand_values():
  labels = np.array([[0, 1, 2, -1]], np.int32)
  # families sorted: long -> 0, split -> 1; DEGENERATE stays -1.
  np.testing.assert_array_equal(metrics.family_labels(labels, ("split", "long", "split")),
                                [[1, 0, 1, -1]])


def test_advantage_alignment_by_hand():
  """Correct responses: (0, 0), (0, 1) and all four of group 1; of these (0, 1), (1, 1)
  and (1, 3) have negative advantages: 3 / 6. Incorrect: (0, 2) positive, (0, 3)
  negative: 1 / 2. Group 1 is all correct: mean |A| = (.1 + .1 + .2 + .2) / 4."""
  rewards = jnp.array([[1., 1., 0., 0.], [1., 1., 1., 1.]])
  advantages = jnp.array([[.5, -.2, .3, -1.], [.1, -.1, .2, -.2]])
  out = metrics.advantage_alignment(rewards, advantages)
  np.testing.assert_allclose(out["correct_pushed_down"], 0.5)
  np.testing.assert_allclose(out["incorrect_pushed_up"], 0.5)
  np.testing.assert_allclose(out["all_correct_advantage"], 0.15, rtol=1e-6)
  # GRPO's advantages (r - mean) / std never push against correctness.
  grpo = jax.vmap(adv.grpo_advantage)(rewards)
  assert {k: float(v) for k, v in metrics.advantage_alignment(rewards, grpo).items()} == {
      "correct_pushed_down": 0.0, "incorrect_pushed_up": 0.0, "all_correct_advantage": 0.0}
  with pytest.raises(ValueError, match="rewards and advantages must have the same shape"):
    metrics.advantage_alignment(rewards, advantages[:, :3])


def test_rollout_metrics_by_hand():
  """Two prompts of three responses, two strategies in one family plus another:
  every logged mean and share worked out by hand."""
  D = DEGENERATE
  rewards = jnp.array([[1.0, 0.0, 1.0], [0.0, 0.0, 0.0]])
  labels = jnp.array([[0, 1, 0], [2, D, 2]])
  logprobs = jnp.array([[-1.0, -1.0, 0.0], [-2.0, 0.0, 0.0], [-0.5, -0.5, -1.0],
                        [-1.0, 0.0, 0.0], [-3.0, 0.0, 0.0], [-1.0, -1.0, 0.0]])
  mask = logprobs != 0.0
  m = metrics.rollout_metrics(rewards, labels, logprobs, mask, ("long", "long", "other"))
  assert float(m["reward"]) == pytest.approx(2 / 6)
  assert float(m["pass_at_1"]) == pytest.approx(2 / 6)
  assert float(m["pass_at_n"]) == pytest.approx(1 / 2)            # the second prompt: none
  assert float(m["distinct_strategies"]) == pytest.approx((2 + 1) / 2)
  assert float(m["distinct_correct_strategies"]) == pytest.approx((1 + 0) / 2)
  assert float(m["distinct_correct_families"]) == pytest.approx((1 + 0) / 2)
  np.testing.assert_allclose(m["strategy_share"], [2 / 6, 1 / 6, 2 / 6, 1 / 6])
  np.testing.assert_allclose(m["correct_strategy_share"], [2 / 6, 0, 0])
  # decoys: strategy 1 in the first group (no correct response), both 2s in the second
  assert float(m["decoy_mass"]) == pytest.approx((1 / 3 + 2 / 3) / 2)
  assert float(m["entropy"]) == pytest.approx(12.0 / 10)         # -sum / 10 tokens
  assert float(m["response_length"]) == pytest.approx(10 / 6)
