r"""Paired bootstrap over problems and seeds, and the one rule that judges a claim.

A run's value of a metric is the mean over its S seeds and P problems of a
per-problem value x[s, p] (the eval records' `per_problem`; pass@k per problem
from its number of correct samples, `pass_at_k`). One bootstrap replicate draws
P problem indices and S seed indices with replacement and takes the mean of x
over the drawn seeds and problems; the 95% interval is the 2.5th and 97.5th
percentile of `NUM_REPLICATES` replicates (the percentile interval, Efron &
Tibshirani 1993, §13.3). Drawing both axes counts both sources of noise: which
problems the evaluation happened to hold, and which seeds were trained.

A difference between two runs evaluated on the same problems is *paired*: each
replicate draws one set of problem indices for both runs (every run of a domain
evaluates the same problems in the same order), so how hard the drawn problems
are, which moves both runs together, cancels out of a - b. Seeds are drawn
independently per run: seed s of one algorithm shares nothing with seed s of
another.

The rule (`judge`), the only one any claim is judged by:
  "a > b + m" holds iff the whole interval of a - b lies above m;
  "a >= b + m" holds iff it lies at or above m;
  "a < b + m" holds iff it lies below m;
  "a within m of b" holds iff it lies inside [-m, m];
and a claim with fewer than 2 seeds on either side is not judged. The interval
is at 95% unless the caller asks for a higher level: the preregistered claims
(configs/claims.py) make a domain's intervals simultaneous, each at 1 - 0.05/T.

Every call draws from a generator seeded with the constant `SEED`, so equal
inputs give equal intervals, byte for byte, and every interval of P problems
uses the same problem draws.

  stats.interval(x)                 # x: f[S, P] -> Interval(mean, low, high)
  stats.difference_interval(a, b)   # paired over problems
  stats.judge(a, b, ">", margin=0.0).verdict
  stats.judge(a, b, ">", level=99.9, replicates=20_000)   # one of T = 50 simultaneous
  stats.paired_intervals(a, b, statistic)  # any statistic of two runs' means
  stats.shift_share(share_a, correct_a, share_b, correct_b)  # accuracy gap = choice + execution
"""

import math
from typing import Callable, List, NamedTuple, Tuple

import numpy as np

NUM_REPLICATES = 2000
SEED = 0
LEVEL = 95.0  # percent

RELATIONS = (">", ">=", "<", "within")
HOLDS, FAILS, UNJUDGED = "holds", "does not hold", "not judged"
MIN_SEEDS = 2


class Interval(NamedTuple):
  """A point estimate and its 95% bootstrap interval."""
  mean: float
  low: float
  high: float


class Judgement(NamedTuple):
  """The verdict on a claim and the interval of a - b it rests on."""
  verdict: str          # HOLDS, FAILS or UNJUDGED
  difference: Interval


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


def difference_interval(a, b, paired: bool = True, level: float = LEVEL,
                        replicates: int = NUM_REPLICATES) -> Interval:
  """Mean of a - b and its bootstrap interval; a: f[Sa, P], b: f[Sb, P].

  paired: each replicate draws one set of problem indices for both (problem p
  of a and of b is the same problem); seeds are drawn independently per side.
  paired=False draws problems independently too (for comparison only: it
  ignores that both were evaluated on the same problems). level: the interval's
  coverage in percent; replicates: how many bootstrap replicates (a level near
  100 needs more, so that its tails hold more than a few).
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
  return _interval(a.mean() - b.mean(), differences, level)


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


def verdict(difference: Interval, relation: str, margin: float = 0.0) -> str:
  """HOLDS or FAILS for "a relation b (margin)" from the interval of a - b.

  ">": low > margin;  ">=": low >= margin;  "<": high < margin;
  "within": -margin <= low and high <= margin.
  """
  if relation not in RELATIONS:
    raise ValueError(f"relation must be one of {', '.join(map(repr, RELATIONS))}; "
                     f"got {relation!r}.")
  if relation == ">":
    ok = difference.low > margin
  elif relation == ">=":
    ok = difference.low >= margin
  elif relation == "<":
    ok = difference.high < margin
  else:
    ok = -margin <= difference.low and difference.high <= margin
  return HOLDS if ok else FAILS


def judge(a, b, relation: str, margin: float = 0.0, level: float = LEVEL,
          replicates: int = NUM_REPLICATES) -> Judgement:
  """The claim "a relation b (margin)" judged on per-problem values a: f[Sa, P], b: f[Sb, P].

  UNJUDGED when either side has fewer than `MIN_SEEDS` seeds (one seed
  says nothing about seed-to-seed variation); otherwise `verdict` of the paired
  `difference_interval` at `level` percent, from `replicates` replicates.
  """
  difference = difference_interval(a, b, level=level, replicates=replicates)
  if relation not in RELATIONS:
    verdict(difference, relation)  # raises, naming the valid relations
  if min(np.shape(a)[0], np.shape(b)[0]) < MIN_SEEDS:
    return Judgement(UNJUDGED, difference)
  return Judgement(verdict(difference, relation, margin), difference)
