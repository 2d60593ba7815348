"""The bootstrap, the claim rule, the families' corrections and the frontier
statistic (experiments.analysis.stats) on hand-worked cases."""

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
  # stats.judge reads the interval at 95% by order statistics: j = 49 replicates of
  # 2000 in each tail (2 (j + 1) / 2001 <= 0.05), the same [0, 3/4].
  zeros = np.zeros((2, 4))
  assert stats.judge(x, zeros, ">").difference == (0.25, 0.0, 0.75)
  assert stats.judge(x, zeros, ">", delta=0.1).verdict == stats.UNDECIDED  # 0 > 0 no; 0.75 < 0.1 no
  assert stats.judge(x, zeros, ">", -0.01, 0.1).verdict == stats.HOLDS
  assert stats.judge(x, zeros, ">", 0.0, 0.8).verdict == stats.REFUTED    # 0.75 < 0 + 0.8
  assert stats.judge(x, zeros, "<", 0.8, 0.1).verdict == stats.HOLDS      # 0.75 < 0.8
  assert stats.judge(x, zeros, "<", 0.75, 0.7).verdict == stats.UNDECIDED  # 0 > 0.05 no
  assert stats.judge(x, zeros, "<", 0.75, 0.8).verdict == stats.REFUTED   # 0 > -0.05
  assert stats.judge(x, zeros, "within", 0.75).verdict == stats.HOLDS
  assert stats.judge(x, zeros, "within", 0.7).verdict == stats.UNDECIDED
  assert stats.judge(zeros, x, "<", 0.0, 0.1).verdict == stats.UNDECIDED  # b - a: [-3/4, 0]
  assert stats.judge(zeros, x, "<", 0.01, 0.1).verdict == stats.HOLDS
  assert stats.judge(x, zeros, ">=").verdict == stats.HOLDS               # 0 >= 0 - 0
  assert stats.judge(x, zeros, ">=", 0.01).verdict == stats.UNDECIDED
  assert stats.judge(x, zeros, ">=", 0.8).verdict == stats.REFUTED        # 0.75 < 0.8
  assert stats.judge(x, zeros, ">=", 0.8, 0.1).verdict == stats.UNDECIDED  # 0.75 < 0.7 no
  # At 99.9% the upper percentile is 99.95: P(<= 3/4) = 0.996 is below it, so the
  # interval reaches 4/4 (with enough replicates that 1/256 of them land there).
  wide = stats.difference_interval(x, zeros, level=99.9, replicates=20_000)
  assert wide == (0.25, 0.0, 1.0)
  narrow = stats.judge(x, zeros, "<", 0.8, 0.1, alpha=0.001, replicates=20_000)
  assert narrow.difference == (0.25, 0.0, 1.0) and narrow.verdict == stats.UNDECIDED


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
      judged = stats.judge(a, b, relation, margin, 0.5)
      assert judged.verdict == stats.UNJUDGED and judged[2:] == (1.0, 1.0)
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


# -- the three verdicts ------------------------------------------------------------

def _at(low, high):
  return stats.Interval(0.5 * (low + high), low, high)


@pytest.mark.parametrize("relation, margin, delta, low, high, expected", [
    # ">" 0.25, δ 0.5: holds iff low > 0.25, refuted iff high < 0.75 (binary
    # fractions, so that m + δ is exact).
    (">", 0.25, 0.5, 0.26, 1.0, "holds"),
    (">", 0.25, 0.5, 0.25, 1.0, "undecided"),      # low = m does not clear it
    (">", 0.25, 0.5, -1.0, 0.74, "refuted"),
    (">", 0.25, 0.5, -1.0, 0.75, "undecided"),     # high = m + δ: an effect of δ is possible
    (">", 0.25, 0.5, 0.3, 0.7, "holds"),           # both: holding is checked first
    # "<" 0, δ 0.25: holds iff high < 0, refuted iff low > -0.25.
    ("<", 0.0, 0.25, -2.0, -0.01, "holds"),
    ("<", 0.0, 0.25, -2.0, 0.0, "undecided"),
    ("<", 0.0, 0.25, -0.24, 1.0, "refuted"),
    ("<", 0.0, 0.25, -0.25, 1.0, "undecided"),
    # ">=" 0, δ 0.25 (non-inferiority): holds iff low >= -0.25, refuted iff high < -0.25.
    (">=", 0.0, 0.25, -0.25, 0.1, "holds"),        # a loss of exactly δ still keeps
    (">=", 0.0, 0.25, -0.26, 0.1, "undecided"),
    (">=", 0.0, 0.25, -1.0, -0.26, "refuted"),
    (">=", 0.0, 0.25, -1.0, -0.25, "undecided"),
    # "within" 0.03: holds iff inside [-0.03, 0.03], refuted iff wholly outside it.
    ("within", 0.03, 0.0, -0.03, 0.03, "holds"),
    ("within", 0.03, 0.0, -0.031, 0.0, "undecided"),
    ("within", 0.03, 0.0, -0.2, -0.031, "refuted"),
    ("within", 0.03, 0.0, 0.031, 0.2, "refuted"),
    ("within", 0.03, 0.0, -0.2, -0.03, "undecided"),   # touches -m
    ("within", 0.03, 0.0, -0.2, 0.2, "undecided"),
])
def test_three_verdicts_at_hand_picked_intervals(relation, margin, delta, low, high, expected):
  assert stats.verdict(_at(low, high), relation, margin, delta) == expected


def test_p_values_and_the_interval_agree_hand_worked():
  """R = 20 replicates 0, 1, ..., 19. At alpha 0.4 each tail may hold j = 3 of them
  (2 (j + 1) / 21 = 0.381 <= 0.4; j = 4 gives 0.476), so the interval is [d_4, d_17]
  = [3, 16] (1-indexed)."""
  d = np.arange(20.0)
  assert stats.bounds(9.5, d, 0.4) == (9.5, 3.0, 16.0)
  # ">" 2.5, δ 10: 3 replicates <= 2.5 (p 8/21), 7 >= 12.5 (p 16/21): holds.
  assert stats.p_values(d, ">", 2.5, 10.0) == pytest.approx((8 / 21, 16 / 21))
  assert stats.verdict(stats.bounds(9.5, d, 0.4), ">", 2.5, 10.0) == "holds"
  # ">" 3, δ 10: 4 replicates <= 3 (p 10/21 > 0.4), and low 3 is not > 3.
  assert stats.p_values(d, ">", 3.0, 10.0)[0] == pytest.approx(10 / 21)
  assert stats.verdict(stats.bounds(9.5, d, 0.4), ">", 3.0, 10.0) == "undecided"
  # "<" 17, δ 14.5: 3 replicates >= 17 (p 8/21), and 3 <= 2.5 (refutation's, 8/21
  # too): an interval inside (2.5, 17), so it both holds and is refuted; holds.
  assert stats.p_values(d, "<", 17.0, 14.5) == pytest.approx((8 / 21, 8 / 21))
  assert stats.verdict(stats.bounds(9.5, d, 0.4), "<", 17.0, 14.5) == "holds"
  # ">=" 5, δ 2: 3 replicates < 3 (p 8/21): holds; its refutation counts the other 17.
  assert stats.p_values(d, ">=", 5.0, 2.0) == pytest.approx((8 / 21, 1.0))
  # "within" 16: holding counts the larger side (3 > 16), refutation the smaller.
  assert stats.p_values(d, "within", 16.0) == pytest.approx((8 / 21, 1.0))
  assert stats.p_values(d - 30, "within", 10.0) == pytest.approx((1.0, 2 / 21))
  with pytest.raises(ValueError, match="20 replicates cannot give a level of 1 - 0.05"):
    stats.bounds(0.0, d, 0.05)


def test_p_values_and_the_interval_agree_on_random_replicates():
  rng = np.random.default_rng(5)
  for _ in range(200):
    d = np.round(rng.normal(rng.normal(), 0.5, size=300), 1)   # ties on purpose
    relation = rng.choice(stats.RELATIONS)
    margin = abs(round(rng.normal(), 1)) if relation == "within" else round(rng.normal(), 1)
    delta = 0.0 if relation == "within" else round(rng.uniform(0.1, 0.5), 1)
    alpha = rng.choice([0.05, 0.1, 0.3])
    p_holds, p_refuted = stats.p_values(d, relation, margin, delta)
    by_p = "holds" if p_holds <= alpha else "refuted" if p_refuted <= alpha else "undecided"
    assert stats.verdict(stats.bounds(0.0, d, alpha), relation, margin, delta) == by_p


# -- Holm ----------------------------------------------------------------------------

def test_holm_by_hand():
  """p = 0.01, 0.02, 0.04 at α 0.05, M = 3: 0.01 <= 0.05/3, 0.02 <= 0.05/2,
  0.04 <= 0.05/1, so the step-down rejects all three (adjusted 3·0.01, 2·0.02,
  max(0.04, 1·0.04)); Bonferroni would reject only the first (3·0.02 = 0.06)."""
  np.testing.assert_allclose(stats.holm([0.01, 0.02, 0.04]), [0.03, 0.04, 0.04])
  np.testing.assert_allclose(stats.holm([0.04, 0.01, 0.02]), [0.04, 0.03, 0.04])  # any order
  # 0.03 > 0.05/2 stops it after the first: the rest stay above 0.05.
  np.testing.assert_allclose(stats.holm([0.01, 0.03, 0.04]), [0.03, 0.06, 0.06])
  np.testing.assert_allclose(stats.holm([0.5, 0.9]), [1.0, 1.0])


def test_holm_pairs_by_hand():
  # Three claims, each with one small p-value. Holm over the smaller ones would
  # reject all three (above); but each claim's other null could be true, so each
  # other claim keeps its place: 3 p, Bonferroni. Only the first clears 0.05.
  pairs = [[0.01, 0.9], [0.02, 0.95], [0.04, 0.99]]
  np.testing.assert_allclose(stats.holm_pairs(pairs), [[0.03, 1.0], [0.06, 1.0], [0.12, 1.0]])
  np.testing.assert_allclose(stats.holm_pairs_alpha(pairs), [0.05 / 3] * 3)
  # A refuted claim (0.9, 0.001) leaves its holding null possibly true: plain Holm
  # would then test the other at 0.05 (adjusted 0.04); the pairs at 0.05 / 2.
  np.testing.assert_allclose(stats.holm([0.001, 0.04]), [0.002, 0.04])
  np.testing.assert_allclose(stats.holm_pairs([[0.9, 0.001], [0.04, 0.96]]),
                             [[1.0, 0.002], [0.08, 1.0]])
  # A claim whose both nulls are rejected (an effect in (m, m + δ), shown) has no
  # true null left: the other claim's step is then α / 1.
  both = [[0.01, 0.9], [0.001, 0.002]]
  # claim 0: max(1 · p, 2 · min(p, 0.002)), 0.01 and 0.9; claim 1: 2 · its p-values.
  np.testing.assert_allclose(stats.holm_pairs(both), [[0.01, 0.9], [0.002, 0.004]])
  np.testing.assert_allclose(stats.holm_pairs_alpha(both), [0.05, 0.025])


def test_holm_pairs_is_the_closed_test():
  """By brute force: a null is rejected iff every set of nulls that can be true
  together (at most one per claim) and holds it has a p-value <= 0.05 / its size."""
  import itertools  # pylint: disable=g-import-not-at-top
  rng = np.random.default_rng(6)
  for _ in range(300):
    m = int(rng.integers(1, 5))
    pairs = np.minimum(1.0, np.round(rng.uniform(0, 0.1, (m, 2)) * rng.choice([1, 10], (m, 2)),
                                     3))
    rejected = np.ones((m, 2), bool)
    for choice in itertools.product((None, 0, 1), repeat=m):
      members = [(i, c) for i, c in enumerate(choice) if c is not None]
      if members and min(pairs[i, c] for i, c in members) > 0.05 / len(members):
        for i, c in members:
          rejected[i, c] = False
    np.testing.assert_array_equal(stats.holm_pairs(pairs) <= 0.05, rejected)
    np.testing.assert_array_equal(pairs <= stats.holm_pairs_alpha(pairs)[:, None], rejected)


# -- the frontier ----------------------------------------------------------------------

# Reward shaping's points by λ: (pass@1, distinct correct) = (0.7, 1), (0.6, 2),
# (0.5, 3), (0.3, 3.5): more λ, more strategies, less pass@1.
CURVE_X, CURVE_Y = np.array([0.7, 0.6, 0.5, 0.3]), np.array([1.0, 2.0, 3.0, 3.5])


@pytest.mark.parametrize("x, y, height", [
    (0.55, 3.2, 2.5),   # between λ 2 and 3: the segment (0.6, 2)-(0.5, 3) at 0.55 is 2.5
    (0.55, 2.0, 2.5),   # below the curve
    (0.6, 2.5, 2.0),    # on a point: it and the points right of it, 2
    (0.2, 4.0, 3.5),    # left of every point: the most of them, 3.5
    (0.8, 1.5, 1.0),    # right of every point: the flat extension of (0.7, 1)
    (0.8, 0.5, 1.0),
])
def test_frontier_on_a_hand_made_curve(x, y, height):
  assert stats.frontier_height(x, CURVE_X, CURVE_Y) == pytest.approx(height)
  assert stats.frontier_gap(x, y, CURVE_X, CURVE_Y) == pytest.approx(y - height)


def test_frontier_of_a_curve_that_turns_back_and_of_one_point():
  # λ order (0.5, 3), (0.6, 4), (0.55, 2), (0.7, 1): at 0.58 the point (0.6, 4)
  # counts; at 0.62 only (0.7, 1) and the segment (0.55, 2)-(0.7, 1), which is
  # 2 - 0.07 / 0.15 = 1.533 there.
  x, y = np.array([0.5, 0.6, 0.55, 0.7]), np.array([3.0, 4.0, 2.0, 1.0])
  assert stats.frontier_height(0.58, x, y) == pytest.approx(4.0)
  assert stats.frontier_height(0.62, x, y) == pytest.approx(2 - 0.07 / 0.15)
  assert stats.frontier_height(0.9, [0.4], [2.0]) == stats.frontier_height(0.1, [0.4], [2.0]) == 2.0


def test_frontier_is_vectorised_over_replicates():
  xs = np.array([0.55, 0.2, 0.8])
  curve_x = np.repeat(CURVE_X[:, None], 3, axis=1)
  curve_y = np.repeat(CURVE_Y[:, None], 3, axis=1)
  np.testing.assert_allclose(stats.frontier_gap(xs, [3.2, 4.0, 1.5], curve_x, curve_y),
                             [0.7, 0.5, 0.5])
  with pytest.raises(ValueError, match="curve_x and curve_y must be f\\[L, ...\\]"):
    stats.frontier_height(xs, CURVE_X, CURVE_Y)


def test_joint_replicates_draw_problems_once_and_seeds_per_run():
  """For two runs they are `paired_intervals`' replicates: a difference of their
  means has the same interval; the problem draw is shared, so identical runs
  differ by exactly 0 in every replicate."""
  rng = np.random.default_rng(7)
  a, b = rng.random((2, 3, 12)), rng.random((2, 4, 12))
  points, draws = stats.joint_replicate_means([a, b])
  assert points.shape == (2, 2) and draws.shape == (2, 2, stats.NUM_REPLICATES)
  np.testing.assert_allclose(points, [a.mean(axis=(1, 2)), b.mean(axis=(1, 2))])
  [want] = stats.paired_intervals(a, b, lambda ma, mb: (ma - mb)[1:2])
  got = stats._interval(points[0, 1] - points[1, 1], draws[0, 1] - draws[1, 1])  # pylint: disable=protected-access
  assert got == pytest.approx(want)
  same = np.repeat(a[:, :1], 3, axis=1)   # seeds that agree
  _, draws = stats.joint_replicate_means([same, same[:, :2], same])
  np.testing.assert_allclose(draws[0], draws[1], rtol=1e-12)
  np.testing.assert_allclose(draws[1], draws[2], rtol=1e-12)
  with pytest.raises(ValueError, match="same K values and problems"):
    stats.joint_replicate_means([a, b[:, :, :5]])
