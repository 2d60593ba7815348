r"""Paired bootstrap over problems and seeds, the rule that judges a claim, and
the correction that makes a family of verdicts sure together.

A run's value of a metric is the mean over its S seeds and P problems of a
per-problem value x[s, p] (the eval records' `per_problem`; pass@k per problem
from its number of correct samples, `pass_at_k`). One bootstrap replicate draws
P problem indices and S seed indices with replacement and takes the mean of x
over the drawn seeds and problems; the 95% interval is the 2.5th and 97.5th
percentile of `NUM_REPLICATES` replicates (the percentile interval, Efron &
Tibshirani 1993, §13.3). Drawing both axes counts both sources of noise: which
problems the evaluation happened to hold, and which seeds were trained. Each eval
split holds distinct exercises, one problem each (`polyepo.splits.distinct`), so
resampling problems resamples exercises.

A difference between two runs evaluated on the same problems is *paired*: each
replicate draws one set of problem indices for both runs (every run of a domain
evaluates the same problems in the same order), so how hard the drawn problems
are, which moves both runs together, cancels out of a - b. Seeds are drawn
independently per run: seed s of one algorithm shares nothing with seed s of
another. A statistic of several runs (`joint_replicate_means`, the λ curve's
`frontier_gap`) draws the problems once for all of them and the seeds per run.

**Three verdicts** (`verdict`). A claim "a relation b (margin m)" with a smallest
effect of interest δ is judged on the interval [low, high] of d = a - b at level
1 - α_i (the claim's share of its family's error, below): it *holds* if the
interval shows the claim, is *refuted* if it shows that any effect there is
smaller than δ, and is *undecided* otherwise; holding is checked first.

  relation   holds iff             refuted iff
  ">"  m     low > m               high < m + δ
  "<"  m     high < m              low > m - δ
  ">=" m     low >= m - δ          high < m - δ     (non-inferiority: a loss under δ keeps)
  "within" m -m <= low, high <= m  low > m or high < -m   (δ unused, 0)

Each verdict is the rejection of one null hypothesis: holding's (d <= m for ">")
or refutation's (d >= m + δ); with δ > 0 (">", "<") the two exclude each other,
and for ">=" and "within" they are complements, so at most one is true. The
interval is the two-sided percentile interval read at order statistics
(`bounds`: [d_(j+1), d_(R-j)] of R sorted replicates), and each null's p-value
(`p_values`) is 2 (c + 1) / (R + 1) for c replicates on its side (for "within",
the larger of its two sides for holding, the smaller for refutation), j the
largest c with p <= α_i: a null is rejected at α_i exactly when the interval
excludes it. If the interval covers d, no verdict is wrong, so each is wrong
with probability at most α_i; a one-sided claim spends α_i / 2 on each side, the
price of reading every verdict off one interval. Fewer than `MIN_SEEDS` seeds on
either side is not judged (UNJUDGED).

**Families.** A family's verdicts are wrong together with probability at most α
when α_i comes from Holm's step-down (Holm 1979, "A simple sequentially
rejective multiple test procedure") over the family's null hypotheses, two per
claim. Plain Holm over one p-value per claim (the smaller of the two) does not
control that error: a claim refuted early leaves its holding null possibly
true, yet would drop out of the count. `holm_pairs` is the closed test of
Bonferroni tests (Marcus, Peritz & Gabriel 1976) under the constraint that a
claim's two nulls exclude each other (Shaffer 1986, "Modified sequentially
rejective multiple test procedures"): the other claims count by the larger of
their two p-values, so the divisor falls only for claims whose both nulls are
rejected. Without the constraint it is `holm`. Bonferroni (α_i = α / T for T
intervals) needs no such care: all T intervals cover together with probability
at least 1 - α, so any verdict built from several of them is as sure.

Every call draws from a generator seeded with the constant `SEED`, so equal
inputs give equal intervals, byte for byte, and every interval of P problems
uses the same problem draws.

  stats.interval(x)                 # x: f[S, P] -> Interval(mean, low, high)
  stats.difference_interval(a, b)   # paired over problems, 95%
  stats.judge(a, b, ">", margin=0.0, delta=0.25, alpha=0.05).verdict
  point, replicates = stats.difference_replicates(a, b, replicates=20_000)
  stats.p_values(replicates, ">", 0.0, 0.25)      # (p_holds, p_refuted)
  stats.holm_pairs([[p_holds, p_refuted], ...])   # adjusted, one family
  stats.bounds(point, replicates, alpha_i)        # the interval a verdict reads
  stats.paired_intervals(a, b, statistic)  # any statistic of two runs' means
  stats.frontier_gap(x, y, curve_x, curve_y)      # a point against a curve
  stats.shift_share(share_a, correct_a, share_b, correct_b)  # accuracy gap = choice + execution
"""

import math
from typing import Callable, List, NamedTuple, Sequence, Tuple

import numpy as np

NUM_REPLICATES = 2000
SEED = 0
LEVEL = 95.0  # percent

ALPHA = 0.05

RELATIONS = (">", ">=", "<", "within")
HOLDS, REFUTED, UNDECIDED, UNJUDGED = "holds", "refuted", "undecided", "not judged"
MIN_SEEDS = 2


class Interval(NamedTuple):
  """A point estimate and its bootstrap interval (95% unless said)."""
  mean: float
  low: float
  high: float


class Judgement(NamedTuple):
  """The verdict on a claim, the interval of a - b it rests on and the p-values
  of its two nulls (holding's and refutation's; 1 where not judged)."""
  verdict: str          # HOLDS, REFUTED, UNDECIDED or UNJUDGED
  difference: Interval
  p_holds: float
  p_refuted: float


def pass_at_k(num_samples: int, num_correct, k: int) -> np.ndarray:
  """Unbiased pass@k per problem, 1 - C(n - c, k) / C(n, k) (Chen et al., 2021).

  Args:
    num_samples: n, samples per problem.
    num_correct: i[...] correct samples c of each problem, 0 <= c <= n.
    k: 1 <= k <= n.

  Returns:
    f64[...] with the shape of num_correct (exact binomials, then one division).
  """
  if not 1 <= k <= num_samples:
    raise ValueError(f"k must be in [1, num_samples={num_samples}], got {k}.")
  table = np.array([1.0 - math.comb(num_samples - c, k) / math.comb(num_samples, k)
                    for c in range(num_samples + 1)])
  return table[np.asarray(num_correct, int)]


def _check_values(name: str, values) -> np.ndarray:
  values = np.asarray(values, float)
  if values.ndim != 2 or min(values.shape) < 1:
    raise ValueError(f"{name} must be f[seeds, problems] with at least one of each, "
                     f"got shape {values.shape}.")
  return values


def _draws(rng: np.random.Generator, n: int, replicates: int = NUM_REPLICATES) -> np.ndarray:
  """i[replicates, n]: n indices in [0, n) drawn with replacement, per replicate."""
  return rng.integers(0, n, size=(replicates, n))


def _replicate_means(values: np.ndarray, seeds: np.ndarray, problems: np.ndarray) -> np.ndarray:
  """f64[B]: mean of values [S, P] over each replicate's drawn seeds [B, S] and problems [B, P]."""
  return values[seeds[:, :, None], problems[:, None, :]].mean(axis=(1, 2))


def _interval(point: float, replicates: np.ndarray, level: float = LEVEL) -> Interval:
  low, high = np.percentile(replicates, [(100 - level) / 2, (100 + level) / 2])
  return Interval(float(point), float(low), float(high))


def interval(values) -> Interval:
  """Mean of values f[S, P] (seeds x problems) and its 95% bootstrap interval.

  Each replicate resamples the P problems and the S seeds with replacement.
  """
  values = _check_values("values", values)
  rng = np.random.default_rng(SEED)
  problems = _draws(rng, values.shape[1])
  seeds = _draws(rng, values.shape[0])
  return _interval(values.mean(), _replicate_means(values, seeds, problems))


def difference_replicates(a, b, paired: bool = True, replicates: int = NUM_REPLICATES
                          ) -> Tuple[float, np.ndarray]:
  """The mean of a - b and its bootstrap replicates; a: f[Sa, P], b: f[Sb, P].

  paired: each replicate draws one set of problem indices for both (problem p
  of a and of b is the same problem); seeds are drawn independently per side.
  paired=False draws problems independently too (for comparison only: it
  ignores that both were evaluated on the same problems). replicates: how many
  (a level near 100% needs many, so that its tails hold more than a few).

  Returns:
    (point, f64[replicates]): a.mean() - b.mean() and each replicate's difference.
  """
  a, b = _check_values("a", a), _check_values("b", b)
  if paired and a.shape[1] != b.shape[1]:
    raise ValueError(f"a paired difference needs the same problems on both sides: a has "
                     f"{a.shape[1]} problems, b has {b.shape[1]}.")
  rng = np.random.default_rng(SEED)
  problems_a = _draws(rng, a.shape[1], replicates)
  seeds_a, seeds_b = _draws(rng, a.shape[0], replicates), _draws(rng, b.shape[0], replicates)
  problems_b = problems_a if paired else _draws(rng, b.shape[1], replicates)
  differences = (_replicate_means(a, seeds_a, problems_a)
                 - _replicate_means(b, seeds_b, problems_b))
  return float(a.mean() - b.mean()), differences


def difference_interval(a, b, paired: bool = True, level: float = LEVEL,
                        replicates: int = NUM_REPLICATES) -> Interval:
  """Mean of a - b and its percentile interval at `level` percent (95% unless
  asked), from `difference_replicates(a, b, paired, replicates)`."""
  point, differences = difference_replicates(a, b, paired, replicates)
  return _interval(point, differences, level)


def paired_intervals(a, b, statistic: Callable[[np.ndarray, np.ndarray], np.ndarray]
                     ) -> List[Interval]:
  """Statistics of two runs' means, each with its paired bootstrap interval.

  Args:
    a: f[K, Sa, P], K per-problem values of run a (seeds x problems).
    b: f[K, Sb, P], the same K values of run b, on the same P problems.
    statistic: (mean_a f[K, R], mean_b f[K, R]) -> f[M, R], M statistics of R
      pairs of mean vectors (each value's mean over seeds and problems).

  Returns:
    M Intervals: the statistic of the full means and the 95% percentile
    interval of its replicates. The replicates draw problems (shared by a and b)
    and seeds exactly as `difference_interval` does, so a statistic that is a
    difference of means gets `difference_interval`'s interval.
  """
  a, b = np.asarray(a, float), np.asarray(b, float)
  if a.ndim != 3 or b.ndim != 3 or a.shape[0] != b.shape[0] or a.shape[2] != b.shape[2]:
    raise ValueError(f"a and b must be f[K, seeds, problems] with the same K values and "
                     f"problems, got shapes {a.shape} and {b.shape}.")
  rng = np.random.default_rng(SEED)
  problems = _draws(rng, a.shape[2])
  seeds_a, seeds_b = _draws(rng, a.shape[1]), _draws(rng, b.shape[1])
  replicates_a = np.stack([_replicate_means(x, seeds_a, problems) for x in a])  # [K, R]
  replicates_b = np.stack([_replicate_means(x, seeds_b, problems) for x in b])
  points = np.asarray(statistic(a.mean(axis=(1, 2))[:, None], b.mean(axis=(1, 2))[:, None]))
  replicates = np.asarray(statistic(replicates_a, replicates_b))
  return [_interval(p[0], r) for p, r in zip(points, replicates)]


def shift_share(share_a, correct_a, share_b, correct_b) -> Tuple[np.ndarray, np.ndarray]:
  """Splits a difference in accuracy into strategy choice and execution, per label.

  A run's accuracy (pass@1) is sum_k share_k * accuracy_k over the K labels
  (strategies and DEGENERATE): share_k is the fraction of its samples that
  follow label k, correct_k the fraction that are correct and follow k, and
  accuracy_k = correct_k / share_k. The difference of two runs splits exactly
  (the midpoint, or Shapley, decomposition of a product):

    sum_k correct_a - correct_b = sum_k (share_a - share_b) (accuracy_a + accuracy_b) / 2
                                + sum_k (accuracy_a - accuracy_b) (share_a + share_b) / 2,

  choice (where the samples go) plus execution (how often they are right
  there). A label that one run never produces takes the other run's accuracy
  (its whole difference is choice); a label neither produces adds nothing.

  Args:
    share_a, correct_a, share_b, correct_b: f[..., K], 0 <= correct <= share.

  Returns:
    (choice, execution), each f[..., K]; choice + execution = correct_a - correct_b.
  """
  share_a, correct_a, share_b, correct_b = (np.asarray(x, float) for x in
                                            (share_a, correct_a, share_b, correct_b))
  accuracy_a = np.divide(correct_a, share_a, out=np.zeros_like(share_a), where=share_a > 0)
  accuracy_b = np.divide(correct_b, share_b, out=np.zeros_like(share_b), where=share_b > 0)
  accuracy_a, accuracy_b = (np.where(share_a > 0, accuracy_a, accuracy_b),
                            np.where(share_b > 0, accuracy_b, accuracy_a))
  choice = (share_a - share_b) * (accuracy_a + accuracy_b) / 2
  execution = (accuracy_a - accuracy_b) * (share_a + share_b) / 2
  return choice, execution


def joint_replicate_means(values: Sequence, replicates: int = NUM_REPLICATES
                          ) -> Tuple[np.ndarray, np.ndarray]:
  """The means of several runs' values and their joint bootstrap replicates.

  Args:
    values: N runs, run n f[K, S_n, P]: K per-problem values (seeds x problems),
      every run on the same P problems.
    replicates: R.

  Returns:
    (points f64[N, K], replicates f64[N, K, R]): each value's mean over seeds and
    problems, and per replicate the same mean over one draw of P problem indices
    shared by every run and S_n seed indices drawn for run n alone (as
    `paired_intervals` draws them for two runs).
  """
  values = [np.asarray(v, float) for v in values]
  if (not values or any(v.ndim != 3 for v in values)
      or len({(v.shape[0], v.shape[2]) for v in values}) != 1):
    raise ValueError(f"values must be f[K, seeds, problems] with the same K values and "
                     f"problems, got shapes {[v.shape for v in values]}.")
  rng = np.random.default_rng(SEED)
  problems = _draws(rng, values[0].shape[2], replicates)
  seeds = [_draws(rng, v.shape[1], replicates) for v in values]
  points = np.stack([v.mean(axis=(1, 2)) for v in values])
  draws = np.stack([np.stack([_replicate_means(x, s, problems) for x in v])
                    for v, s in zip(values, seeds)])
  return points, draws


def frontier_height(x, curve_x, curve_y) -> np.ndarray:
  """The most y a curve reaches at x' >= x: g(x) = max {y : (x', y) on it, x' >= x}.

  The curve is the polyline through L points in their order (reward shaping's,
  by λ), linear between neighbours, and extended flat beyond its largest x (the
  most generous reading for the curve where no point of it reaches x). The max
  is over the points with x' >= x and the crossings of x by the segments, whose
  y is interpolated; the extension adds the y of the point of largest x.

  Args:
    x: f[...], the abscissa asked about (one per replicate).
    curve_x, curve_y: f[L, ...], the points' coordinates, L >= 1.

  Returns:
    f64[...]: g(x), non-increasing in x.
  """
  x, cx, cy = (np.asarray(v, float) for v in (x, curve_x, curve_y))
  if cx.shape != cy.shape or cx.ndim < 1 or cx.shape[0] < 1 or cx.shape[1:] != x.shape:
    raise ValueError(f"curve_x and curve_y must be f[L, ...] with L >= 1 and x's trailing "
                     f"shape, got {cx.shape}, {cy.shape} and x {x.shape}.")
  best = np.where(cx >= x, cy, -np.inf).max(axis=0)
  x0, x1, y0, y1 = cx[:-1], cx[1:], cy[:-1], cy[1:]
  across = (x0 - x) * (x1 - x) < 0                    # x strictly between neighbours
  t = np.divide(x - x0, x1 - x0, out=np.zeros_like(x0), where=across)
  if cx.shape[0] > 1:
    best = np.maximum(best, np.where(across, y0 + t * (y1 - y0), -np.inf).max(axis=0))
  extension = np.where(cx == cx.max(axis=0), cy, -np.inf).max(axis=0)
  return np.maximum(best, extension)


def frontier_gap(x, y, curve_x, curve_y) -> np.ndarray:
  """y - g(x): how far the point (x, y) lies beyond the curve (`frontier_height`).

  Positive: every point of the curve with at least the point's x has less y
  (no λ reaches both); zero or negative: one has at least as much. x, y: f[...];
  curve_x, curve_y: f[L, ...]. Returns f64[...].
  """
  return np.asarray(y, float) - frontier_height(x, curve_x, curve_y)


def _check_relation(relation: str) -> None:
  if relation not in RELATIONS:
    raise ValueError(f"relation must be one of {', '.join(map(repr, RELATIONS))}; "
                     f"got {relation!r}.")


def verdict(difference: Interval, relation: str, margin: float = 0.0,
            delta: float = 0.0) -> str:
  """HOLDS, REFUTED or UNDECIDED for "a relation b (margin m)" from the interval
  of a - b, with smallest effect of interest δ = delta (the module's table):

  ">": holds iff low > m, refuted iff high < m + δ;
  "<": holds iff high < m, refuted iff low > m - δ;
  ">=": holds iff low >= m - δ, refuted iff high < m - δ;
  "within": holds iff -m <= low and high <= m, refuted iff low > m or high < -m.
  Holding is checked first.
  """
  _check_relation(relation)
  low, high, m = difference.low, difference.high, margin
  if relation == ">":
    holds, refuted = low > m, high < m + delta
  elif relation == "<":
    holds, refuted = high < m, low > m - delta
  elif relation == ">=":
    holds, refuted = low >= m - delta, high < m - delta
  else:
    holds, refuted = -m <= low and high <= m, low > m or high < -m
  return HOLDS if holds else REFUTED if refuted else UNDECIDED


def p_values(replicates, relation: str, margin: float = 0.0,
             delta: float = 0.0) -> Tuple[float, float]:
  """(p_holds, p_refuted): bootstrap p-values of a claim's two nulls.

  Each is 2 (c + 1) / (R + 1), at most 1, for c of the R replicates d_r on the
  null's side: ">" d <= m and d >= m + δ; "<" d >= m and d <= m - δ; ">=" d < m - δ and
  d >= m - δ; "within" |d| > m (the larger of its two sides) and |d| <= m (the
  smaller of d <= m and d >= -m, Bonferroni over the two ways out). A null is
  rejected at α exactly when `bounds(..., α)` excludes it, so that `verdict`
  holds (refutes) exactly when p_holds (p_refuted) <= α.

  Args:
    replicates: f[R], the replicates of d = a - b.
  """
  _check_relation(relation)
  d, m = np.asarray(replicates, float), margin

  def count(side):
    return int(np.count_nonzero(side))

  if relation == ">":
    holds, refuted = count(d <= m), count(d >= m + delta)
  elif relation == "<":
    holds, refuted = count(d >= m), count(d <= m - delta)
  elif relation == ">=":
    holds, refuted = count(d < m - delta), count(d >= m - delta)
  else:
    holds = max(count(d < -m), count(d > m))
    refuted = min(count(d <= m), count(d >= -m))
  return _p(holds, d.size), _p(refuted, d.size)


def _p(count: int, replicates: int) -> float:
  """2 (c + 1) / (R + 1), at most 1: twice a one-sided bootstrap p-value of c
  replicates of R on the null's side, counting the observed data as one more
  (Davison & Hinkley 1997, §4.2.1), so never 0."""
  return min(1.0, 2.0 * (count + 1) / (replicates + 1))


def _tail(alpha: float, replicates: int) -> int:
  """j = max {c >= 0 : `_p`(c, R) <= alpha}: the replicates each tail may hold
  (-1 where even c = 0 is too many)."""
  j = int(math.floor(alpha * (replicates + 1) / 2)) - 1
  while _p(j + 1, replicates) <= alpha:
    j += 1
  while j >= 0 and _p(j, replicates) > alpha:
    j -= 1
  return j


def bounds(point: float, replicates, alpha: float) -> Interval:
  """The two-sided percentile interval at level 1 - alpha, by order statistics.

  [d_(j+1), d_(R-j)] of the R sorted replicates, j = max {c : 2 (c+1)/(R+1) <= alpha}:
  the bound excludes a value exactly when at most j replicates lie beyond it, so
  `verdict` on it agrees with `p_values` at alpha. (`difference_interval`
  interpolates between order statistics instead; it gives the report's 95%
  intervals.)
  """
  d = np.sort(np.asarray(replicates, float))
  if d.ndim != 1 or d.size < 1 or not 0 < alpha <= 1:
    raise ValueError(f"bounds needs f[R] replicates and 0 < alpha <= 1, got shape "
                     f"{d.shape} and alpha {alpha}.")
  j = _tail(alpha, d.size)
  if j < 0:
    raise ValueError(f"{d.size} replicates cannot give a level of 1 - {alpha:g}: its "
                     f"tails need at least {math.ceil(2 / alpha) - 1} replicates.")
  j = min(j, (d.size - 1) // 2)
  return Interval(float(point), float(d[j]), float(d[d.size - 1 - j]))


def holm(p) -> np.ndarray:
  """Holm's adjusted p-values: hypothesis k is rejected at family-wise α iff
  its adjusted p-value is at most α.

  Sorted p_(1) <= ... <= p_(M), p~_(i) = max_{j <= i} min(1, (M - j + 1) p_(j)):
  the step-down rejects H_(1), ..., H_(i) while p_(j) <= α / (M - j + 1).

  Args:
    p: f[M], one p-value per hypothesis.

  Returns:
    f64[M], in p's order.
  """
  p = np.asarray(p, float)
  order = np.argsort(p, kind="stable")
  steps = (p.size - np.arange(p.size)) * p[order]
  out = np.empty_like(p)
  out[order] = np.minimum(1.0, np.maximum.accumulate(steps)) if p.size else steps
  return out


def _caps(pairs: np.ndarray, i: int) -> np.ndarray:
  """f[M]: q_{s-1} for s = 1..M, the others' larger p-values in decreasing order
  after an infinite q_0 (what the closed test of claim i's nulls meets at size s)."""
  others = np.delete(pairs.max(axis=1), i)
  return np.concatenate([[np.inf], np.sort(others)[::-1]])


def holm_pairs(pairs) -> np.ndarray:
  """Adjusted p-values of M claims, each with two nulls that exclude each other.

  The closed test of Bonferroni tests over the 2M nulls, of which at most one per
  claim is true: a null k of claim i is rejected at family-wise α iff every set of
  nulls that could all be true together and holds k has a p-value <= α / its
  size. The hardest such set of size s holds k and, of s - 1 other claims, the
  null with the larger p-value: with q_1 >= q_2 >= ... those larger p-values of
  the other claims, p~_k = max_s min(1, s min(p_k, q_{s-1})), s = 1..M, q_0 = inf.
  Where no other claim has both its p-values small this is M p_k (Bonferroni);
  without the constraint it would be `holm` over all 2M.

  Args:
    pairs: f[M, 2], each claim's (p_holds, p_refuted).

  Returns:
    f64[M, 2], the adjusted (p_holds, p_refuted).
  """
  pairs = np.asarray(pairs, float).reshape(-1, 2)
  sizes = np.arange(1, len(pairs) + 1)
  out = np.empty_like(pairs)
  for i, pair in enumerate(pairs):
    caps = _caps(pairs, i)
    out[i] = np.minimum(1.0, (sizes[:, None] * np.minimum(pair[None, :], caps[:, None])).max(0))
  return out


def holm_pairs_alpha(pairs, alpha: float = ALPHA) -> np.ndarray:
  """f64[M]: each claim's threshold α_i = α / s_i under `holm_pairs`, s_i the
  largest s with q_{s-1} > α / s: its nulls are rejected iff p <= α_i, which is
  where its interval (`bounds` at α_i) is read. pairs: f[M, 2]."""
  pairs = np.asarray(pairs, float).reshape(-1, 2)
  sizes = np.arange(1, len(pairs) + 1)
  return np.array([alpha / sizes[_caps(pairs, i) > alpha / sizes].max()
                   for i in range(len(pairs))])


def judge(a, b, relation: str, margin: float = 0.0, delta: float = 0.0,
          alpha: float = ALPHA, replicates: int = NUM_REPLICATES) -> Judgement:
  """The claim "a relation b (margin)" judged alone on per-problem values a: f[Sa, P],
  b: f[Sb, P], with smallest effect of interest `delta`, at level 1 - alpha.

  UNJUDGED when either side has fewer than `MIN_SEEDS` seeds (one seed
  says nothing about seed-to-seed variation); otherwise `verdict` of the paired
  difference's `bounds` at alpha, from `replicates` replicates, with its
  `p_values`.
  """
  _check_relation(relation)
  point, differences = difference_replicates(a, b, replicates=replicates)
  difference = bounds(point, differences, alpha)
  if min(np.shape(a)[0], np.shape(b)[0]) < MIN_SEEDS:
    return Judgement(UNJUDGED, difference, 1.0, 1.0)
  return Judgement(verdict(difference, relation, margin, delta), difference,
                   *p_values(differences, relation, margin, delta))
