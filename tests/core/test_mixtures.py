"""Tests for polyepo.mixtures: E_w[f] against enumeration of every label sequence and
reward pattern in plain Python (brute.py), hand-worked values and optima, the
optimum against a grid over the simplex, and `predict` against hand-worked mixtures."""

import itertools
import math

import numpy as np
import pytest

import brute
from polyepo.core import mixtures

R = math.sqrt(2 / 3)   # polychromic, n = 3, a = (1, 0): w* = (R, 1 − R), E* = 4R/9 (below)


def _correct_only(rewards, labels):
  return brute.polychromic(rewards, [l if r > 0 else brute.DEGENERATE
                                     for r, l in zip(rewards, labels)])


BRUTE = {"polychromic": brute.polychromic, "polychromic_correct_only": _correct_only,
         "mean_reward": brute.mean_reward, "pass_at_n": brute.pass_at_n, "srl": brute.srl}


def _brute_conditional(name, accuracy, n):
  """(sequences i[S^n, n], g f[S^n]): every ordered label sequence and E[f | labels]
  over its 2^n reward patterns, in plain Python."""
  sequences = list(itertools.product(range(len(accuracy)), repeat=n))
  g = []
  for labels in sequences:
    total = 0.0
    for rewards in itertools.product((0, 1), repeat=n):
      p = math.prod(accuracy[l] if r else 1 - accuracy[l] for r, l in zip(rewards, labels))
      total += p * BRUTE[name](list(rewards), list(labels))
    g.append(total)
  return np.array(sequences), np.array(g)


def _brute_value(name, weights, accuracy, n):
  """f[G]: E_w[f] at each row of weights f[G, S], by enumeration."""
  sequences, g = _brute_conditional(name, accuracy, n)
  return np.prod(np.asarray(weights)[:, sequences], axis=-1) @ g


@pytest.mark.parametrize("name", sorted(BRUTE))
@pytest.mark.parametrize("n", [3, 4])
def test_expected_objective_equals_enumeration(name, n):
  weights = np.array([0.5, 0.3, 0.2])
  accuracy = np.array([0.9, 0.4, 0.25])
  expected = _brute_value(name, weights[None], accuracy, n)[0]
  assert mixtures.expected_objective(name, weights, accuracy, n) == pytest.approx(expected,
                                                                                 abs=1e-6)


def test_expected_objective_hand_worked():
  w, a = np.array([0.2, 0.3, 0.5]), np.array([0.1, 0.5, 0.9])
  # The mean reward is Σ w_s a_s whatever n.
  assert mixtures.expected_objective("mean_reward", w, a, 3) == pytest.approx(0.62, abs=1e-6)
  # One strategy: D = 1, so E[f] = E[mean reward] / n = a / n.
  assert mixtures.expected_objective("polychromic", [1.0], [0.7], 3) == pytest.approx(
      0.7 / 3, abs=1e-6)
  # Two always-correct strategies, n = 2, half each: f = 1 · E[D] / 2, E[D] = 1/2·2 + 1/2·1.
  assert mixtures.expected_objective("polychromic", [0.5, 0.5], [1, 1], 2) == pytest.approx(
      0.75, abs=1e-6)
  # a = (1, 0), n = 2, half each: both s0 (1/4) f = 1·1/2; mixed (1/2) f = 1/2·2/2
  # (correct-only: 1/2·1/2); both s1 (1/4) f = 0.
  assert mixtures.expected_objective("polychromic", [0.5, 0.5], [1, 0], 2) == pytest.approx(
      0.375, abs=1e-6)
  assert mixtures.expected_objective("polychromic_correct_only", [0.5, 0.5], [1, 0],
                                     2) == pytest.approx(0.25, abs=1e-6)
  # pass@n: 1 − (Σ w_s (1 − a_s))^n = 1 − 0.38^3.
  assert mixtures.expected_objective("pass_at_n", w, a, 3) == pytest.approx(1 - 0.38 ** 3,
                                                                           abs=1e-6)
  # A strategy with no weight may have no accuracy.
  assert mixtures.expected_objective("mean_reward", [0.0, 1.0], [np.nan, 0.4],
                                     2) == pytest.approx(0.4, abs=1e-6)


def test_polychromic_puts_weight_on_a_never_correct_strategy():
  """a = (1, 0), n = 3, w = (1 − p, p): with k members on s1, f = (3 − k)/3 · D/3, so
  E = (1−p)³/3 + 3p(1−p)²·4/9 + 3p²(1−p)·2/9 = (1 − p)(1 + 2p − p²)/3, whose maximum
  on [0, 1] is at 1 − 6p + 3p² = 0: p* = 1 − √(2/3), E* = 4√(2/3)/9. An always-wrong
  sample still adds a label. Counting correct members only, s1 only lowers f."""
  mix = mixtures.optimal_mix("polychromic", np.array([1.0, 0.0]), 3)
  np.testing.assert_allclose(mix.weights, [R, 1 - R], atol=1e-5)
  assert mix.value == pytest.approx(4 * R / 9, abs=1e-6)
  assert 0 <= mix.kkt_gap < 1e-7
  mix = mixtures.optimal_mix("polychromic_correct_only", np.array([1.0, 0.0]), 3)
  np.testing.assert_array_equal(mix.weights, [1.0, 0.0])
  assert mix.value == pytest.approx(1 / 3, abs=1e-6)
  # n = 2: E = (1 − p²)/2, maximal at p = 0.
  np.testing.assert_allclose(mixtures.optimal_mix("polychromic", [1.0, 0.0], 2).weights,
                             [1.0, 0.0], atol=1e-9)


def _grid(num_strategies, steps):
  """f[G, S]: every point of the simplex with coordinates in multiples of 1/steps."""
  points = [c for c in itertools.product(range(steps + 1), repeat=num_strategies - 1)
            if sum(c) <= steps]
  return np.array([list(c) + [steps - sum(c)] for c in points], float) / steps


@pytest.mark.parametrize("name, accuracy, n, steps", [
    ("polychromic", (0.9, 0.5, 0.2), 4, 50),
    ("polychromic", (0.3, 0.3, 0.05), 4, 50),
    ("polychromic_correct_only", (0.9, 0.5, 0.2), 4, 50),
    ("polychromic_correct_only", (0.95, 0.9, 0.05), 3, 50),
    ("srl", (0.8, 0.6, 0.5), 3, 50),
    ("polychromic", (0.8, 0.6, 0.3, 0.0), 3, 20),
    ("polychromic_correct_only", (0.8, 0.6, 0.3, 0.1), 3, 20),
])
def test_optimal_mix_beats_a_grid_over_the_simplex(name, accuracy, n, steps):
  """Never below the grid's best; above it by at most the grid's resolution: the
  optimum w* has a grid point g with |w* − g|_1 <= S/steps, and |E_w − E_v| <=
  TV(w^n, v^n) <= n |w − v|_1 / 2 for f in [0, 1]."""
  accuracy = np.array(accuracy)
  grid = _grid(len(accuracy), steps)
  values = _brute_value(name, grid, accuracy, n)
  mix = mixtures.optimal_mix(name, accuracy, n)
  assert mix.value >= values.max() - 1e-9
  assert mix.value - values.max() <= n * len(accuracy) / steps / 2
  # A finer grid around the coarse grid's best point does not beat it either.
  best = grid[np.argmax(values)]
  fine = _grid(len(accuracy), 10 * steps)
  fine = fine[np.abs(fine - best).max(-1) <= 1 / steps]
  assert mix.value >= _brute_value(name, fine, accuracy, n).max() - 1e-9
  assert np.all(mix.weights >= 0) and mix.weights.sum() == pytest.approx(1, abs=1e-12)
  assert mix.value == pytest.approx(_brute_value(name, mix.weights[None], accuracy, n)[0],
                                    abs=1e-6)
  assert 0 <= mix.kkt_gap < 1e-7


def test_optimal_mix_mean_reward_and_zero_accuracy():
  accuracy = np.array([0.4, 0.7, 0.9, 0.0])
  mix = mixtures.optimal_mix("mean_reward", accuracy, 4)
  np.testing.assert_array_equal(mix.weights, [0, 0, 1, 0])
  assert mix.value == pytest.approx(0.9, abs=1e-6)
  # Only the available strategies: the most accurate of those (NaN elsewhere is fine).
  mix = mixtures.optimal_mix("mean_reward", [0.4, 0.7, np.nan, 0.0], 4,
                             available=[True, True, False, True])
  np.testing.assert_array_equal(mix.weights, [0, 1, 0, 0])
  # A never-correct strategy adds nothing when only correct members count.
  mix = mixtures.optimal_mix("polychromic_correct_only", accuracy, 4)
  assert mix.weights[3] == 0
  assert mix.weights[:3].min() > 0


def test_predict_combines_the_patterns_optima():
  """S = 3, a = (1, 0, unknown). Patterns: {0, 1} (2 problems) and {0, 1, 2} (1: the
  unknown strategy is never used) have the optimum (R, 1 − R) worked out above, {0} (1)
  puts everything on s0 (E = 1/3), {2} (1) has no known strategy and adds 0."""
  applicable = np.array([[1, 1, 0], [1, 1, 1], [1, 1, 0], [1, 0, 0], [0, 0, 1]], bool)
  accuracy = np.array([1.0, 0.0, np.nan])
  p = mixtures.predict("polychromic", accuracy, applicable, 3, samples=5)
  assert p.value == pytest.approx(3 / 5 * 4 * R / 9 + 1 / 5 * 1 / 3, abs=1e-6)
  assert p.pass_at_1 == pytest.approx(3 / 5 * R + 1 / 5, abs=1e-5)
  np.testing.assert_allclose(p.shares, [3 / 5 * R + 1 / 5, 3 / 5 * (1 - R), 0], atol=1e-5)
  assert p.distinct_correct == pytest.approx(3 / 5 * (1 - (1 - R) ** 5) + 1 / 5, abs=1e-5)
  assert len(p.mixes) == len(p.patterns) == 4
  np.testing.assert_allclose(p.frequencies.sum(), 1)
  # Any objective: the frequency-weighted combination of each pattern's optimum.
  accuracy = np.array([0.6, 0.3, 0.8])
  p = mixtures.predict("polychromic_correct_only", accuracy, applicable, 3, samples=7)
  optima = {(1, 1, 0): 2, (1, 1, 1): 1, (1, 0, 0): 1, (0, 0, 1): 1}
  mixes = {k: mixtures.optimal_mix("polychromic_correct_only", accuracy, 3, np.array(k, bool))
           for k in optima}
  assert p.value == pytest.approx(sum(c * mixes[k].value for k, c in optima.items()) / 5)
  np.testing.assert_allclose(p.shares, sum(c * mixes[k].weights for k, c in optima.items()) / 5)
  # The mean reward: each problem's most accurate strategy.
  p = mixtures.predict("mean_reward", accuracy, applicable, 1, samples=7)
  best = np.array([0.6, 0.8, 0.6, 0.6, 0.8])
  assert p.pass_at_1 == pytest.approx(best.mean(), abs=1e-6)
  assert p.distinct_correct == pytest.approx(np.mean(1 - (1 - best) ** 7), abs=1e-6)


def test_refuses_what_it_cannot_compute():
  with pytest.raises(ValueError, match="n must be a Python int in \\[1, 8\\]"):
    mixtures.expected_objective("polychromic", [1.0], [0.5], 9)
  with pytest.raises(ValueError, match="At most 8 strategies"):
    mixtures.optimal_mix("polychromic", np.full(9, 0.5), 2)
  with pytest.raises(ValueError, match="needs answers"):
    mixtures.optimal_mix("majority_vote", [0.5, 0.5], 2)
  with pytest.raises(ValueError, match="simplex"):
    mixtures.expected_objective("polychromic", [0.5, 0.6], [0.5, 0.5], 2)
  with pytest.raises(ValueError, match="accuracy"):
    mixtures.optimal_mix("polychromic", [0.5, np.nan], 2)
  with pytest.raises(ValueError, match="applicable"):
    mixtures.predict("polychromic", [0.5, 0.5], np.ones((3, 4), bool), 2)
