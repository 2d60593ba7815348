"""The bootstrap and the claim rule (experiments.stats) on hand-worked cases."""

import numpy as np
import pytest

from experiments.analysis import stats


def test_pass_at_k_hand_values():
  # n = 4, k = 2: 1 - C(4 - c, 2) / C(4, 2) = 1 - {6, 3, 1, 0, 0} / 6.
  np.testing.assert_allclose(stats.pass_at_k(4, [0, 1, 2, 3, 4], 2),
                             [0.0, 0.5, 5 / 6, 1.0, 1.0])
  np.testing.assert_allclose(stats.pass_at_k(8, [[0, 3]], 1), [[0.0, 3 / 8]])
  assert stats.pass_at_k(64, [1], 64)[0] == 1.0
  with pytest.raises(ValueError, match=r"k must be in \[1, num_samples=4\], got 5"):
    stats.pass_at_k(4, [1], 5)


def test_constant_values_have_a_zero_width_interval():
  assert stats.interval(np.full((3, 5), 0.25)) == (0.25, 0.25, 0.25)


def test_one_problem_different_hand_worked():
  """x = [1, 0, 0, 0] (the same on both seeds): a replicate's mean is (number of
  draws of problem 0) / 4, a Binomial(4, 1/4) / 4 with P(<= 0) = 0.316,
  P(<= 2) = 0.949, P(<= 3) = 0.996, so the 2.5th and 97.5th percentiles are 0
  and 3/4."""
  x = np.array([[1.0, 0, 0, 0], [1.0, 0, 0, 0]])
  assert stats.interval(x) == (0.25, 0.0, 0.75)
  # Against a run of zeros on the same problems: the same interval for a - b.
  d = stats.difference_interval(x, np.zeros((2, 4)))
  assert d == (0.25, 0.0, 0.75)
  zeros = np.zeros((2, 4))
  assert stats.judge(x, zeros, ">").verdict == stats.FAILS          # low 0 is not > 0
  assert stats.judge(x, zeros, ">", -0.01).verdict == stats.HOLDS
  assert stats.judge(x, zeros, "<", 0.8).verdict == stats.HOLDS     # high 0.75 < 0.8
  assert stats.judge(x, zeros, "<", 0.75).verdict == stats.FAILS
  assert stats.judge(x, zeros, "within", 0.75).verdict == stats.HOLDS
  assert stats.judge(x, zeros, "within", 0.7).verdict == stats.FAILS
  assert stats.judge(zeros, x, "<").verdict == stats.FAILS          # high of b - a is 0
  assert stats.judge(zeros, x, "<", 0.01).verdict == stats.HOLDS
  assert stats.judge(x, zeros, ">=").verdict == stats.HOLDS         # low 0 >= 0
  assert stats.judge(x, zeros, ">=", 0.01).verdict == stats.FAILS
  # At 99.9% the upper percentile is 99.95: P(<= 3/4) = 0.996 is below it, so the
  # interval reaches 4/4 (with enough replicates that 1/256 of them land there).
  wide = stats.difference_interval(x, zeros, level=99.9, replicates=20_000)
  assert wide == (0.25, 0.0, 1.0)
  assert stats.judge(x, zeros, "<", 0.8, level=99.9, replicates=20_000).verdict == stats.FAILS


def test_seeds_are_resampled_hand_worked():
  """Seed 0 scores 0 and seed 1 scores 1 on every problem: a replicate's mean is
  (draws of seed 1) / 2 in {0, 1/2, 1} with probabilities 1/4, 1/2, 1/4."""
  x = np.array([[0.0] * 6, [1.0] * 6])
  assert stats.interval(x) == (0.5, 0.0, 1.0)


def test_identical_runs_differ_by_exactly_zero_only_when_paired():
  x = np.array([[0.0, 1.0, 0.5, 0.25, 1.0, 0.0, 0.75, 0.5]])
  assert stats.difference_interval(x, x) == (0.0, 0.0, 0.0)
  two = np.repeat(x, 2, axis=0)   # seeds that agree: resampling them changes nothing
  assert stats.difference_interval(two, two) == (0.0, 0.0, 0.0)
  unpaired = stats.difference_interval(x, x, paired=False)
  assert unpaired.mean == 0.0 and unpaired.low < -0.1 and unpaired.high > 0.1


def test_paired_interval_is_narrower_on_correlated_runs():
  """Both runs see the same 50 problems whose difficulty varies a lot; a is b +
  0.05 plus a little noise. Pairing cancels the difficulty: its interval is
  narrow and excludes 0; the unpaired one is several times wider and does not."""
  rng = np.random.default_rng(1)
  difficulty = rng.uniform(0, 1, size=50)
  a = difficulty + 0.05 + 0.02 * rng.standard_normal((3, 50))
  b = difficulty + 0.02 * rng.standard_normal((3, 50))
  paired = stats.difference_interval(a, b)
  unpaired = stats.difference_interval(a, b, paired=False)
  assert paired.high - paired.low < 0.25 * (unpaired.high - unpaired.low)
  assert paired.low > 0 > unpaired.low
  assert stats.judge(a, b, ">").verdict == stats.HOLDS


def test_one_seed_is_never_judged():
  one, three = np.ones((1, 4)), np.zeros((3, 4))
  for a, b in ((one, np.zeros((1, 4))), (one, three), (np.ones((3, 4)), three[:1])):
    for relation, margin in ((">", 0.0), ("<", 2.0), ("within", 5.0), (">", -10.0)):
      assert stats.judge(a, b, relation, margin).verdict == stats.UNJUDGED
  # Two seeds a side are judged.
  assert stats.judge(np.ones((2, 4)), np.zeros((2, 4)), ">").verdict == stats.HOLDS


def test_bad_inputs_name_the_problem():
  with pytest.raises(ValueError, match="the same problems on both sides: a has 4 problems, "
                                       "b has 5"):
    stats.difference_interval(np.zeros((2, 4)), np.zeros((2, 5)))
  with pytest.raises(ValueError, match=r"values must be f\[seeds, problems\]"):
    stats.interval(np.zeros(4))
  with pytest.raises(ValueError, match="relation must be one of '>', '>=', '<', 'within'"):
    stats.judge(np.zeros((2, 4)), np.zeros((2, 4)), "≥")


def test_intervals_are_deterministic():
  x = np.random.default_rng(3).uniform(size=(3, 40))
  assert stats.interval(x) == stats.interval(x.copy())
  assert stats.difference_interval(x, x[::-1]) == stats.difference_interval(x, x[::-1])


def test_shift_share_by_hand():
  # a: half the samples on k0 (accuracy 0.8), half on k1 (0.2); b: all on k0 (0.6).
  choice, execution = stats.shift_share([0.5, 0.5, 0.0], [0.4, 0.1, 0.0],
                                        [1.0, 0.0, 0.0], [0.6, 0.0, 0.0])
  # k0: (0.5 - 1)(0.8 + 0.6)/2 and (0.8 - 0.6)(0.5 + 1)/2; k1, never produced by b,
  # takes a's accuracy: (0.5 - 0)(0.2 + 0.2)/2 and 0; k2, produced by neither: 0.
  np.testing.assert_allclose(choice, [-0.35, 0.1, 0.0])
  np.testing.assert_allclose(execution, [0.15, 0.0, 0.0])


def test_shift_share_sums_to_the_accuracy_difference():
  rng = np.random.default_rng(3)
  share_a, share_b = rng.dirichlet(np.ones(5), 20), rng.dirichlet(np.ones(5), 20)
  share_a[:, 4] = 0.0   # a label one side never uses
  correct_a, correct_b = share_a * rng.random((20, 5)), share_b * rng.random((20, 5))
  choice, execution = stats.shift_share(share_a, correct_a, share_b, correct_b)
  np.testing.assert_allclose((choice + execution).sum(-1),
                             correct_a.sum(-1) - correct_b.sum(-1), atol=1e-12)
  # Equal accuracies: all choice; equal shares: all execution.
  same = stats.shift_share(share_a, share_a * 0.3, share_b, share_b * 0.3)
  np.testing.assert_allclose(same[1], 0.0, atol=1e-12)
  np.testing.assert_allclose(stats.shift_share(share_a, correct_a, share_a, correct_b)[0], 0.0,
                             atol=1e-12)


def test_paired_intervals_of_a_difference_is_the_difference_interval():
  rng = np.random.default_rng(4)
  a, b = rng.random((3, 4, 12)), rng.random((3, 2, 12))
  got = stats.paired_intervals(a, b, lambda ma, mb: (ma - mb)[1:2] * 1.0)
  want = stats.difference_interval(a[1], b[1])
  assert got[0].mean == pytest.approx(want.mean)
  assert got[0].low == pytest.approx(want.low) and got[0].high == pytest.approx(want.high)
  with pytest.raises(ValueError, match="same K values and problems"):
    stats.paired_intervals(a, b[:, :, :5], lambda ma, mb: ma - mb)
