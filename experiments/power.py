r"""How many seeds and exercises the preregistered claims need: variance components and power.

  python -m experiments.power results/final/final-* results/final/shaping_lambda-*
  python -m experiments.power SWEEP_DIR ... --claims=all --exercises=128,256,512 \
      --seeds=5,10,30 --max_seeds=30 --max_exercises=512 --out=DIR [--archive]

Reads the sweep directories as `experiments.report` does (`records.load_runs`,
`records.select_rows`: the same rows) and, per domain, splits the variance of each
claim's difference a − b (configs/claims.py, kind "compare", rows that ran) into
its components; then sizes each primary claim (`Claim.primary`; --claims=all sizes
every comparison as one): the chance of a decision, holds or refuted, at S seeds
per row and E exercises, the smallest S at each E of --exercises and the smallest
E at each S of --seeds. The last line printed is

  power: K of M primary claims decidable within S seeds x E exercises

with S = --max_seeds, E = --max_exercises and K the primary claims (over all
domains) whose chance of a decision there is at least POWER. --out=DIR writes
every number to DIR/power.json and the printed text to DIR/power.txt; --archive
copies the records beside them (DIR/<sweep name>/), so that DIR alone regenerates
both (results/pilot is the pilot's).

**The model.** A row's per-problem values x[s, p] (`records.per_problem`: S seeds x
P problems, the same problems in every row of a domain) follow the two-way
random-effects model

  x[s, p] = μ + e_p + u_s + ε[s, p],   Var e = σ²_e,  Var u = σ²_u,  Var ε = σ²_ε:

problem effects e, seed effects u, and a residual ε holding the seed x problem
interaction and the evaluation's sampling noise (one value per cell: the two
cannot be told apart). The estimates are the method of moments of balanced
two-way ANOVA without replication (Searle, Casella & McCulloch, *Variance
Components*, 1992, ch. 4), from the row, column and grand means x̄_s·, x̄_·p, x̄:

  MS_u = P Σ_s (x̄_s· − x̄)² / (S − 1),               E MS_u = σ²_ε + P σ²_u
  MS_e = S Σ_p (x̄_·p − x̄)² / (P − 1),               E MS_e = σ²_ε + S σ²_e
  MS_ε = Σ (x − x̄_s· − x̄_·p + x̄)² / ((S − 1)(P − 1)),  E MS_ε = σ²_ε
  σ̂²_ε = MS_ε,  σ̂²_u = (MS_u − MS_ε) / P,  σ̂²_e = (MS_e − MS_ε) / S.

For two rows a, b on the same problems, D_p = x̄^a_·p − x̄^b_·p loses the seed
effects in D_p − D̄ (a seed's effect is the same on every problem; seeds of a and
b share nothing), so with s²_D the sample variance of D over problems

  E s²_D = σ²_e,diff + σ²_ε,a / S_a + σ²_ε,b / S_b,   σ²_e,diff = Var(e^a_p − e^b_p),
  σ̂²_e,diff = s²_D − σ̂²_ε,a / S_a − σ̂²_ε,b / S_b,

the problem component of the difference, covariance of e^a and e^b included. The
difference of means d̂ = x̄^a − x̄^b then has

  Var d̂ = σ²_e,diff / P + σ²_u,a / S_a + σ²_u,b / S_b + σ²_ε,a / (S_a P) + σ²_ε,b / (S_b P),

the two sources the paired bootstrap resamples (`experiments.analysis.stats`);
each term's share is printed. A negative estimate (σ̂²_u, σ̂²_e,diff) is set to 0
and marked `*`; power.json keeps it as it was. A row with 1 seed has no degrees
of freedom for MS_u and MS_ε: its seed and residual components are not
estimable, its residual stays inside σ̂²_e,diff (an overestimate), and its
claims are not sized.

**The power.** At S seeds per row and E exercises,

  SE² = σ²_e,diff / E + (σ²_u,a + σ²_u,b) / S + (σ²_ε,a + σ²_ε,b) / (S E),

and with d̂ ~ N(d, SE²) the interval at level 1 − α' is d̂ ± z SE, z = Φ⁻¹(1 − α'/2)
(the rule's interval is the two-sided percentile interval at that level). The
true effect d is the observed d̂ (a plug-in, as noisy as d̂). With margin m and
smallest effect of interest δ (`Claim.delta`, 0 before it existed), the chance of
a decision P is

  ">" m:   holds iff low > m, refuted iff high < m + δ:
           P = Φ((d − m)/SE − z) + Φ((m + δ − d)/SE − z)
  "<" m:   holds iff high < m, refuted iff low > m − δ:
           P = Φ((m − d)/SE − z) + Φ((d − m + δ)/SE − z)
  ">=" m:  holds iff low ≥ m − δ, refuted iff high < m − δ:
           P = Φ((d − m + δ)/SE − z) + Φ((m − δ − d)/SE − z)
  "within" m: holds iff inside [−m, m], refuted iff entirely outside:
           P = max(0, Φ((m − d)/SE − z) − Φ((−m − d)/SE + z))
               + Φ((d − m)/SE − z) + Φ((−m − d)/SE − z),

capped at 1. The cap is exact, not a bound: where the interval (2 z SE wide) is
narrower than δ both verdicts of ">" or "<" can come at once, the sum counts that
twice, and no d̂ leaves neither, so the chance of a decision is 1.

**The bootstrap's width** (--width=bootstrap). The rule reads the percentile
interval of the paired bootstrap, whose replicates do not have the model's
variance: given the data, with a[s, p] = ā + α_s + β_p + γ_sp (the ANOVA
decomposition), a replicate's mean has variance Σα²/S² + Σβ²/P² + Σγ²/(SP)²
exactly (the cross terms vanish as every row and column of γ sums to 0), and for
a − b the β's of a and b are drawn together. In expectation, at S seeds per row
and E exercises,

  W² = Σ_{a,b} [(S − 1)/S² (σ²_u + σ²_ε/E) + (E − 1)/E² σ²_ε/S + (S − 1)(E − 1)/(S E)² σ²_ε]
       + (E − 1)/E² σ²_e,diff,

against SE²'s σ²_u/S + σ²_ε/(S E) + σ²_e,diff/E: the residual counted about three
times, the seeds' variance (S − 1)/S times (the two-way bootstrap's known bias;
Owen 2007, "The pigeonhole bootstrap"). The plan then reads the interval as
d̂ ± z W while d̂ varies by SE: every z above becomes z W / SE. With the unclamped
estimates at the records' own S and P, W² is the replicates' variance given the
data, exactly.

**The level.** Primary claims are corrected at family-wise α (`RULE["alpha"]`)
over M = primary claims x domains (the registered domains,
`records.DOMAIN_TITLES`, or more where the records hold more), missing rows
included. The plan uses α' = α / M, Bonferroni's level, for every claim: the
primary family's correction (`stats.holm_pairs`, Holm's closed test over each
claim's two nulls) tests every claim at α / M unless another both holds and is
refuted, so the plan is what the judging will do.

**Exercises.** The records do not say which exercise a problem is: each of a
row's P problems is counted as one exercise, as the bootstrap counts it. Splits
drawn i.i.d. from a small held-out bucket repeat problems and exercises (those of
the splits scheme "exercise", `results/final`'s: 107 distinct exercises among
multiplication's 128 `test` problems, 35 among polynomial roots'; this code's,
"class", are distinct exercises, `polyepo.evaluation.splits.distinct`); with
--count_exercises (the default; it draws each split's problems again,
`envs.datasets.sample_split`) the distinct problems and exercises
(`env.canonical_form`) among each split's first P problems are printed, for
records of this code's splits scheme (`polyepo.evaluation.splits.SCHEME`; other
records' problems cannot be drawn again here). Where exercises repeat, the
model describes E problems drawn as these were, repeats included: σ²_e / E is
right for such draws, but a seed's interaction with an exercise drawn twice
counts as two independent residuals, so where a split holds few distinct
exercises the SE at large E is optimistic.

**Not sized.** Kind "amplified" (a rare strategy's share under a against m x
Base's, and under b) prints the components of both differences a strategy's
verdict rests on; kinds "lambda" and "frontier" (a against reward shaping's λ
curve) print those of a − reward shaping at each λ run, on `test` pass@1 and
distinct correct, the points their statistic is made of. None is sized: an
amplified verdict joins two intervals per rare strategy, a λ verdict an either-or
at every λ, and the frontier's F is a maximum along a curve of several runs, none
of which one normal interval of a difference of two rows describes.

A mistake (a missing sweep directory, a bad list) is one line, `error: ...`, exit
status 2, with nothing written (experiments.cli).
"""

import functools
import json
import math
import os
from typing import Any, Callable, Dict, List, NamedTuple, Optional, Sequence, Tuple

import numpy as np
from absl import app, flags

from configs import claims as registry
from experiments import cli
from experiments.analysis import records, stats
from experiments.analysis.archive import archive_sweeps, cost_lines, sweep_info
from polyepo.evaluation import splits

POWER = 0.8                 # a claim is decidable when P(holds or refuted) >= POWER
MIN_SEEDS = registry.RULE["min_seeds"]   # fewer seeds per row are not judged
SEARCH_SEEDS = 1000         # the smallest S is looked for in [MIN_SEEDS, SEARCH_SEEDS]
MIN_EXERCISES = 2           # fewer say nothing of the problems' variance
SEARCH_EXERCISES = 10_000   # the smallest E in [MIN_EXERCISES, SEARCH_EXERCISES]
WIDTHS = ("model", "bootstrap")   # the interval's half-width: z SE or z W
LARGE = 1e12                # seeds or exercises "without limit": the floor of SE and W
TERMS = ("problem", "seed_a", "seed_b", "residual_a", "residual_b")   # of Var d̂
TERM_NAMES = ("e", "u_a", "u_b", "ε_a", "ε_b")

# experiments.report and experiments.tuning define --out too; allow_override lets one
# process (the tests) import all three. A FlagHolder reads its flag by name.
_OUT = flags.DEFINE_string("out", None, "Output directory: writes OUT/power.json (every "
                           "number printed, and more) and OUT/power.txt (what is printed). "
                           "Nothing written without it.", allow_override=True)
_ARCHIVE = flags.DEFINE_bool("archive", False, "Also copy the run records (config.json, "
                             "train.jsonl and eval.jsonl gzipped, sweep.jsonl) to "
                             "OUT/<sweep name>/, so that OUT alone regenerates power.json.",
                             allow_override=True)
_EXERCISES = flags.DEFINE_list("exercises", ["128", "256", "512"],
                               "Exercises E at which the smallest seeds per row are found "
                               "(each at most --max_exercises).")
_SEEDS = flags.DEFINE_list("seeds", ["5", "10", "30"],
                           "Seeds per row S at which the smallest exercises are found.")
_MAX_SEEDS = flags.DEFINE_integer("max_seeds", 30, "S of the last line's budget.")
_MAX_EXERCISES = flags.DEFINE_integer("max_exercises", 512, "E of the last line's budget.")
_CLAIMS = flags.DEFINE_enum("claims", "primary", ["primary", "all"],
                            "Which claims to size: the primary ones (Claim.primary), or "
                            "every claim of kind 'compare', each as if primary.")
_WIDTH = flags.DEFINE_enum("width", "model", list(WIDTHS),
                           "The interval's half-width in the plan: z SE, the model's SD "
                           "of d̂ ('model'), or z W, the paired bootstrap's expected SD "
                           "('bootstrap'; module doc).")
_COUNT_EXERCISES = flags.DEFINE_bool("count_exercises", True,
                                     "Count each split's distinct problems and exercises "
                                     "(draws the problems again; imports JAX).")


# -- variance components ----------------------------------------------------------


class RowComponents(NamedTuple):
  """One row's ANOVA estimates: variances, clamped at 0; None where not estimable.

  seeds, problems: S and P.
  problem: σ²_e (None with 1 seed: it holds σ²_ε too).
  seed: σ²_u (None with 1 seed).
  residual: σ²_ε (None with 1 seed).
  raw: the same before clamping, and the mean squares "ms_seed", "ms_problem",
    "ms_residual".
  """
  seeds: int
  problems: int
  problem: Optional[float]
  seed: Optional[float]
  residual: Optional[float]
  raw: Dict[str, Optional[float]]


class DifferenceComponents(NamedTuple):
  """The components of a − b on shared problems (`difference_components`).

  difference: d̂ = mean a − mean b.
  problem: σ²_e,diff = Var(e^a_p − e^b_p), clamped at 0 (with a 1-seed row's
    residual inside it).
  raw_problem: the same before clamping.
  a, b: each row's RowComponents.
  """
  difference: float
  problem: float
  raw_problem: float
  a: RowComponents
  b: RowComponents

  @property
  def estimable(self) -> bool:
    """Whether every component is: both rows have at least 2 seeds."""
    return self.a.seed is not None and self.b.seed is not None

  @property
  def clamped(self) -> Tuple[str, ...]:
    """The TERMS whose estimate was negative and is 0."""
    out = ["problem"] if self.raw_problem < 0 else []
    for side, row in (("a", self.a), ("b", self.b)):
      out += [f"seed_{side}"] if (row.raw["seed"] or 0.0) < 0 else []
    return tuple(out)


def _check_values(name: str, values) -> np.ndarray:
  values = np.asarray(values, float)
  if values.ndim != 2 or values.shape[0] < 1 or values.shape[1] < 2:
    raise ValueError(f"{name} must be f[seeds, problems] with at least 1 seed and 2 "
                     f"problems, got shape {values.shape}.")
  return values


def row_components(values) -> RowComponents:
  """σ²_e, σ²_u, σ²_ε of one row by two-way ANOVA (module doc), negatives clamped at 0.

  Args:
    values: f[S, P], S >= 1 seeds x P >= 2 problems.
  """
  x = _check_values("values", values)
  num_seeds, num_problems = x.shape
  grand, seed_means, problem_means = x.mean(), x.mean(axis=1), x.mean(axis=0)
  ms_problem = num_seeds * np.sum((problem_means - grand) ** 2) / (num_problems - 1)
  if num_seeds < 2:   # no degrees of freedom left for seeds or residual
    raw = {"problem": None, "seed": None, "residual": None, "ms_problem": float(ms_problem),
           "ms_seed": None, "ms_residual": None}
    return RowComponents(num_seeds, num_problems, None, None, None, raw)
  residuals = x - seed_means[:, None] - problem_means[None, :] + grand
  ms_residual = np.sum(residuals ** 2) / ((num_seeds - 1) * (num_problems - 1))
  ms_seed = num_problems * np.sum((seed_means - grand) ** 2) / (num_seeds - 1)
  raw = {"problem": float((ms_problem - ms_residual) / num_seeds),
         "seed": float((ms_seed - ms_residual) / num_problems),
         "residual": float(ms_residual), "ms_problem": float(ms_problem),
         "ms_seed": float(ms_seed), "ms_residual": float(ms_residual)}
  return RowComponents(num_seeds, num_problems, max(raw["problem"], 0.0),
                       max(raw["seed"], 0.0), raw["residual"], raw)


def difference_components(a, b) -> DifferenceComponents:
  """The components of the paired difference a − b (module doc).

  Args:
    a: f[Sa, P]; b: f[Sb, P], the same P problems in the same order.
  """
  a, b = _check_values("a", a), _check_values("b", b)
  if a.shape[1] != b.shape[1]:
    raise ValueError(f"a paired difference needs the same problems on both sides: a has "
                     f"{a.shape[1]} problems, b has {b.shape[1]}.")
  row_a, row_b = row_components(a), row_components(b)
  spread = np.var(a.mean(axis=0) - b.mean(axis=0), ddof=1)   # s²_D
  raw = float(spread - sum(row.residual / row.seeds for row in (row_a, row_b)
                           if row.residual is not None))
  return DifferenceComponents(float(a.mean() - b.mean()), max(raw, 0.0), raw, row_a, row_b)


def variance_terms(components: DifferenceComponents, seeds_a, seeds_b,
                   exercises) -> Dict[str, np.ndarray]:
  """{term: its part of Var d̂} at seeds_a, seeds_b seeds and `exercises` exercises.

  The TERMS σ²_e,diff/E, σ²_u,a/S_a, σ²_u,b/S_b, σ²_ε,a/(S_a E), σ²_ε,b/(S_b E); the
  counts may be arrays (broadcast). Raises ValueError for a row with 1 seed.
  """
  if not components.estimable:
    raise ValueError("a row with 1 seed has no seed or residual component: not sized.")
  seeds_a, seeds_b, exercises = (np.asarray(n, float) for n in (seeds_a, seeds_b, exercises))
  return {"problem": components.problem / exercises,
          "seed_a": components.a.seed / seeds_a, "seed_b": components.b.seed / seeds_b,
          "residual_a": components.a.residual / (seeds_a * exercises),
          "residual_b": components.b.residual / (seeds_b * exercises)}


def standard_error(components: DifferenceComponents, seeds, exercises) -> np.ndarray:
  """SE of d̂ with `seeds` seeds per row and `exercises` exercises (arrays broadcast)."""
  return np.sqrt(sum(variance_terms(components, seeds, seeds, exercises).values()))


def bootstrap_sd(components: DifferenceComponents, seeds_a, seeds_b, exercises) -> np.ndarray:
  """W: the expected SD of the paired bootstrap's replicates of d̂ (module doc) with
  seeds_a, seeds_b seeds and `exercises` exercises (arrays broadcast).

  With the unclamped estimates at the records' own S_a, S_b and P, W² is the
  replicates' variance given the data, exactly.
  """
  if not components.estimable:
    raise ValueError("a row with 1 seed has no seed or residual component: not sized.")
  e = np.asarray(exercises, float)
  out = (e - 1) / e ** 2 * components.problem
  for row, seeds in ((components.a, seeds_a), (components.b, seeds_b)):
    s = np.asarray(seeds, float)
    out = out + ((s - 1) / s ** 2 * (row.seed + row.residual / e)
                 + (e - 1) / e ** 2 * row.residual / s
                 + (s - 1) * (e - 1) / (s * e) ** 2 * row.residual)
  return np.sqrt(out)


# -- the chance of a decision -------------------------------------------------------


class Rule(NamedTuple):
  """What decides a claim: "a − b relation margin", smallest effect of interest delta."""
  relation: str
  margin: float
  delta: float = 0.0


def rule_of(claim: registry.Claim) -> Rule:
  """A claim's Rule; `delta` is 0 for a claim registered without one."""
  return Rule(claim.relation, claim.margin, float(getattr(claim, "delta", 0.0)))


def z_value(level: float) -> float:
  """z = Φ⁻¹(1 − α'/2) of the two-sided interval at level 1 − α' (level = α')."""
  from statistics import NormalDist  # pylint: disable=g-import-not-at-top
  return NormalDist().inv_cdf(1.0 - level / 2.0)


_ERF = np.vectorize(math.erf, otypes=[float])


def _phi(x) -> np.ndarray:
  return 0.5 * (1.0 + _ERF(np.asarray(x, float) / math.sqrt(2.0)))


def _ratio(x, se: np.ndarray) -> np.ndarray:
  """x / se, and its limit where se = 0 (±inf, or 0 for x = 0)."""
  x, se = np.broadcast_arrays(np.asarray(x, float), se)
  with np.errstate(divide="ignore", invalid="ignore"):
    out = x / se
  return np.where(se > 0, out, np.where(x == 0, 0.0, np.copysign(np.inf, x)))


def decision_probability(d: float, rule: Rule, se, z: float, width=None) -> np.ndarray:
  """P(holds or refuted) of a claim whose difference is d̂ ~ N(d, se²) (module doc).

  Args:
    d: the true difference a − b.
    rule: the claim's relation, margin m and delta δ.
    se: f[...] standard errors of d̂ (0 allowed: then d̂ = d).
    z: the interval's half-width in SDs, `z_value(α')`.
    width: f[...] the SD the interval's half-width is z times: se (the
      default, the module doc's formulas) or the bootstrap's W (`bootstrap_sd`).

  Returns:
    f64[...] with se's shape, in [0, 1]: the module doc's P with z · width / se in
    place of z (z where se = width = 0, the limit), capped at 1.
  """
  if rule.relation not in stats.RELATIONS:
    raise ValueError(f"relation must be one of {', '.join(map(repr, stats.RELATIONS))}; "
                     f"got {rule.relation!r}.")
  se = np.asarray(se, float)
  # The interval's half-width in SEs: z, or z W / SE (0/0 only where every component
  # is 0, the limit z).
  if width is None:
    k = z
  else:
    with np.errstate(divide="ignore", invalid="ignore"):
      k = z * np.where(se > 0, np.asarray(width, float) / se, 1.0)
  m, delta = rule.margin, rule.delta
  # P(the interval's edge clears a bound `gap` short of d): Φ(gap/se − k).
  clears = lambda gap: _phi(_ratio(gap, se) - k)
  if rule.relation == ">":
    p = clears(d - m) + clears(m + delta - d)           # low > m; high < m + δ
  elif rule.relation == "<":
    p = clears(m - d) + clears(d - m + delta)           # high < m; low > m − δ
  elif rule.relation == ">=":
    p = clears(d - m + delta) + clears(m - delta - d)   # low ≥ m − δ; high < m − δ
  else:   # inside [−m, m]; low > m or high < −m
    inside = _phi(_ratio(m - d, se) - k) - _phi(_ratio(-m - d, se) + k)
    p = np.maximum(inside, 0.0) + clears(d - m) + clears(-m - d)
  return np.minimum(p, 1.0)


def _first(candidates: np.ndarray, probability: Callable[[np.ndarray], np.ndarray],
           target: float, chunk: int = 512) -> Optional[int]:
  """The first of `candidates` whose probability(...) >= target, scanning in chunks
  (most claims stop in the first); None if none."""
  for start in range(0, len(candidates), chunk):
    part = candidates[start:start + chunk]
    hits = np.flatnonzero(probability(part) >= target)
    if hits.size:
      return int(part[hits[0]])
  return None


def chance(components: DifferenceComponents, rule: Rule, z: float, seeds_a, seeds_b,
           exercises, width: str = "model") -> np.ndarray:
  """P(holds or refuted) at seeds_a, seeds_b seeds and `exercises` exercises (arrays
  broadcast), the observed d̂ as the true difference; the interval is d̂ ± z SE
  (width "model") or d̂ ± z W, the bootstrap's (width "bootstrap")."""
  if width not in WIDTHS:
    raise ValueError(f"width must be one of {WIDTHS}, got {width!r}.")
  se = np.sqrt(sum(variance_terms(components, seeds_a, seeds_b, exercises).values()))
  w = bootstrap_sd(components, seeds_a, seeds_b, exercises) if width == "bootstrap" else None
  return decision_probability(components.difference, rule, se, z, w)


def smallest_seeds(components: DifferenceComponents, rule: Rule, exercises: int, z: float,
                   width: str = "model", target: float = POWER,
                   limit: int = SEARCH_SEEDS) -> Optional[int]:
  """The smallest S in [MIN_SEEDS, limit] seeds per row with P >= target at E exercises
  (every S tried in order: no monotonicity assumed); None if none."""
  return _first(np.arange(MIN_SEEDS, limit + 1), lambda seeds: chance(
      components, rule, z, seeds, seeds, exercises, width), target)


def smallest_exercises(components: DifferenceComponents, rule: Rule, seeds: int, z: float,
                       width: str = "model", target: float = POWER,
                       limit: int = SEARCH_EXERCISES) -> Optional[int]:
  """The smallest E in [MIN_EXERCISES, limit] exercises with P >= target at S seeds per
  row; None if none."""
  return _first(np.arange(MIN_EXERCISES, limit + 1), lambda exercises: chance(
      components, rule, z, seeds, seeds, exercises, width), target)


def never(components: DifferenceComponents, rule: Rule, z: float, exercises=None,
          seeds=None, width: str = "model", target: float = POWER) -> bool:
  """Whether P stays under target even with seeds (at `exercises`) or exercises (at
  `seeds`) without limit: the floor of the SE is too wide."""
  seeds = LARGE if seeds is None else seeds
  exercises = LARGE if exercises is None else exercises
  return bool(chance(components, rule, z, seeds, seeds, exercises, width) < target)


def needs(a, b, claim: registry.Claim, level: float, width: str = "bootstrap") -> Dict[str, Any]:
  """What a claim judged on rows a, b (f64[S, P] each, `records.per_problem`) would
  need to be decided with chance POWER, at its interval's level 1 − `level`:
  {"difference" (d̂), "seeds" and "exercises" (now: S per row, the fewer of the two,
  and E), "p_now", "seeds_needed" (the smallest S per row at E; None: none up to
  SEARCH_SEEDS), "never_seeds" (no number of seeds does it at E),
  "exercises_needed" (the smallest E at S; None: none up to SEARCH_EXERCISES)};
  {"not_sized": why} where a row has 1 seed. The plug-in of the module docstring:
  the true difference is taken to be d̂."""
  c = difference_components(a, b)
  if not c.estimable:
    return {"not_sized": "a row has 1 seed: its seed component is not estimable"}
  rule, z = rule_of(claim), z_value(level)
  seeds, exercises = min(c.a.seeds, c.b.seeds), c.a.problems
  needed = smallest_seeds(c, rule, exercises, z, width)
  return {"difference": c.difference, "seeds": seeds, "exercises": exercises,
          "p_now": float(chance(c, rule, z, c.a.seeds, c.b.seeds, exercises, width)),
          "seeds_needed": needed,
          "never_seeds": needed is None and never(c, rule, z, exercises=exercises,
                                                  width=width),
          "exercises_needed": smallest_exercises(c, rule, seeds, z, width)}


def undecided_needs(judgement, rows: Dict[str, Dict[str, Any]]) -> Dict[str, Dict[str, Any]]:
  """{claim id: `needs`} of every undecided claim of kind "compare" in a domain's
  `claims.Judgement`, on its `rows` (`records.select_rows`), at the least level
  its family gives a claim: α/M for a primary one (Holm's first step), α/T for a
  secondary one (Bonferroni); a claim of another kind is not sized."""
  out = {}
  for judged in judgement.claims:
    claim = judged.claim
    if judged.verdict != stats.UNDECIDED or claim.kind != "compare":
      continue
    family = judgement.primary if claim.primary else judgement.secondary
    a, b = (records.per_problem(rows[label]["record"], claim.split, claim.metric)
            for label in (claim.a, claim.b))
    out[claim.id] = needs(a, b, claim, family.alpha / max(family.size, 1))
  return out


# -- the records ----------------------------------------------------------------------


@functools.lru_cache(maxsize=None)
def exercise_counts(domain: str, env_json: str, split: str,
                    num_problems: int) -> Optional[Tuple[int, int]]:
  """(distinct problems, distinct exercises) among the first `num_problems` problems
  of `split`, drawn as the evaluation drew them (`experiments.analysis.optimum`'s
  dataset); None for more problems than the dataset holds."""
  import jax  # pylint: disable=g-import-not-at-top
  import envs  # pylint: disable=g-import-not-at-top
  from envs import datasets  # pylint: disable=g-import-not-at-top
  from experiments.analysis import optimum  # pylint: disable=g-import-not-at-top
  if num_problems > optimum.DATASET_SIZE:
    return None
  env, _ = envs.make(domain, **json.loads(env_json))
  problems = datasets.sample_split(domain, split, optimum.DATASET_SIZE,
                                   seed=optimum.DATASET_SEED)
  problems = jax.tree.map(lambda x: np.asarray(x)[:num_problems], problems)

  def distinct(tree) -> int:
    rows = np.concatenate([np.asarray(leaf).reshape(num_problems, -1).astype(float)
                           for leaf in jax.tree.leaves(tree)], axis=1)
    return len(np.unique(rows, axis=0))

  return distinct(problems), distinct(env.canonical_form(problems))


def _components_json(c: DifferenceComponents) -> Dict[str, Any]:
  return {"difference": c.difference, "problem": c.problem, "raw_problem": c.raw_problem,
          "clamped": list(c.clamped),
          "a": {"seeds": c.a.seeds, "problems": c.a.problems, "problem": c.a.problem,
                "seed": c.a.seed, "residual": c.a.residual, "raw": c.a.raw},
          "b": {"seeds": c.b.seeds, "problems": c.b.problems, "problem": c.b.problem,
                "seed": c.b.seed, "residual": c.b.residual, "raw": c.b.raw}}


def _now(c: DifferenceComponents) -> Dict[str, Any]:
  """Var d̂ and each term's share at the records' own seeds and problems."""
  if not c.estimable:
    one = [side for side, row in (("a", c.a), ("b", c.b)) if row.seed is None]
    return {"not_estimable": f"1 seed on side {', '.join(one)}: no seed or residual "
                             "component"}
  terms = {k: float(v) for k, v in variance_terms(c, c.a.seeds, c.b.seeds, c.a.problems).items()}
  total = sum(terms.values())
  return {"terms": terms, "variance": total, "se": math.sqrt(total),
          "bootstrap_sd": float(bootstrap_sd(c, c.a.seeds, c.b.seeds, c.a.problems)),
          "shares": {k: (v / total if total > 0 else None) for k, v in terms.items()}}


def _difference_entry(values_a, values_b) -> Dict[str, Any]:
  c = difference_components(values_a, values_b)
  return {"components": _components_json(c), "now": _now(c), "_c": c}


def _sizing(c: DifferenceComponents, rule: Rule, z: float, plan: Dict[str, Any]) -> Dict[str, Any]:
  if not c.estimable:
    return {"not_sized": "a row has 1 seed: its seed component is not estimable"}
  width = plan["width"]
  at = lambda seeds_a, seeds_b, exercises: float(chance(c, rule, z, seeds_a, seeds_b,
                                                        exercises, width))
  seeds = {str(e): smallest_seeds(c, rule, e, z, width) for e in plan["exercises"]}
  exercises = {str(s): smallest_exercises(c, rule, s, z, width) for s in plan["seeds"]}
  at_max = at(plan["max_seeds"], plan["max_seeds"], plan["max_exercises"])
  return {"p_now": at(c.a.seeds, c.b.seeds, c.a.problems),
          "bootstrap_sd_now": float(bootstrap_sd(c, c.a.seeds, c.b.seeds, c.a.problems)),
          "smallest_seeds": seeds,
          "never_seeds": {e: never(c, rule, z, exercises=int(e), width=width)
                          for e, s in seeds.items() if s is None},
          "smallest_exercises": exercises,
          "never_exercises": {s: never(c, rule, z, seeds=int(s), width=width)
                              for s, e in exercises.items() if e is None},
          "se_at_max": float(standard_error(c, plan["max_seeds"], plan["max_exercises"])),
          "bootstrap_sd_at_max": float(bootstrap_sd(c, plan["max_seeds"], plan["max_seeds"],
                                                    plan["max_exercises"])),
          "p_at_max": at_max, "decidable": at_max >= POWER}


def analyse(runs: Sequence[records.RunRecord], claims: Sequence[registry.Claim] = registry.CLAIMS,
            mode: str = "primary", exercises: Sequence[int] = (128, 256, 512),
            seeds: Sequence[int] = (5, 10, 30), max_seeds: int = 30, max_exercises: int = 512,
            width: str = "model",
            counts: Optional[Callable[..., Optional[Tuple[int, int]]]] = exercise_counts
            ) -> Dict[str, Any]:
  """Every number printed, JSON-ready but for each difference's "_c"
  (DifferenceComponents), which `to_json` drops.

  Args:
    runs: `records.load_runs`' runs.
    claims: the registered claims.
    mode: "primary" sizes the claims with `primary` set; "all" sizes every
      claim of kind "compare" as if primary.
    exercises: E at which the smallest S is found (each capped at max_exercises).
    seeds: S at which the smallest E is found.
    max_seeds, max_exercises: the budget of the last line.
    width: the interval's half-width, z SE ("model") or z W ("bootstrap").
    counts: (domain, env json, split, P) -> (distinct problems, distinct
      exercises) or None; None counts nothing.
  """
  if mode not in ("primary", "all"):
    raise ValueError(f"mode must be 'primary' or 'all', got {mode!r}.")
  if width not in WIDTHS:
    raise ValueError(f"width must be one of {WIDTHS}, got {width!r}.")
  if min([max_seeds, *seeds]) < MIN_SEEDS or min([max_exercises, *exercises]) < MIN_EXERCISES:
    raise ValueError(f"seeds must be at least {MIN_SEEDS} and exercises at least "
                     f"{MIN_EXERCISES}, got "
                     f"seeds {list(seeds)} (max {max_seeds}), exercises {list(exercises)} "
                     f"(max {max_exercises}).")
  if mode == "all":
    primary = [c for c in claims if c.kind == "compare"]
  else:
    primary = [c for c in claims if getattr(c, "primary", False)]
  primary_ids = {c.id for c in primary}
  domains = sorted({r.domain for r in runs})
  num_domains = max(len(records.DOMAIN_TITLES), len(domains))
  num_primary = len(primary) * num_domains
  alpha = registry.RULE["alpha"]
  level = alpha / num_primary if num_primary else None
  plan = {"exercises": sorted({min(int(e), max_exercises) for e in exercises}),
          "seeds": sorted({int(s) for s in seeds}), "max_seeds": max_seeds,
          "max_exercises": max_exercises, "width": width}
  out = {"mode": mode, "alpha": alpha, "num_domains": num_domains,
         "num_primary": num_primary, "level": level,
         "z": z_value(level) if level else None, "power": POWER, **plan,
         "counted": counts is not None, "domains": {}}
  decidable = 0
  for domain in domains:
    rows = records.select_rows(list(runs), domain)
    if not rows:
      continue
    entry = {"rows": {}, "splits": {}, "compare": [], "amplified": [], "lambda": []}
    used = sorted({c.split for c in claims if c.kind == "compare"} | {"test"})
    for label, row in rows.items():
      entry["rows"][label] = {split: list(np.shape(records.per_problem(row["record"], split,
                                                                       "pass@1")))
                              for split in used if split in row["record"]}
    source = next(iter(rows.values()))["run"]
    scheme = source.config.get("splits")
    for split in used:
      sizes = {tuple(v[split]) for v in entry["rows"].values() if split in v}
      if not sizes:
        continue
      num_problems = max(p for _, p in sizes)
      found, why = None, "not asked for"
      if counts and scheme != splits.SCHEME:   # this code would draw other problems
        why = (f"the records' splits scheme is {scheme!r}, this code's {splits.SCHEME!r}: "
               "their problems cannot be drawn again here")
      elif counts:
        found = counts(domain, json.dumps(source.config.get("env", {}), sort_keys=True),
                       split, num_problems)
        why = None if found else "more problems than the dataset holds"
      entry["splits"][split] = {"problems": num_problems, "scheme": scheme,
                                "distinct_problems": found[0] if found else None,
                                "distinct_exercises": found[1] if found else None,
                                "not_counted": why}
    for claim in claims:
      if claim.kind == "compare":
        item = _compare(rows, claim, claim.id in primary_ids, out["z"], plan)
        decidable += int(item.get("sizing", {}).get("decidable", False))
        entry["compare"].append(item)
      elif claim.kind == "amplified":
        entry["amplified"] += _amplified(rows, claim)
      elif claim.kind in ("lambda", "frontier"):
        entry["lambda"] += _lambda(runs, rows, claim, domain)
      if claim.id in primary_ids and claim.kind != "compare":
        entry["compare"].append({"id": claim.id, "primary": True, "kind": claim.kind,
                                 "skipped": f"kind {claim.kind!r} is not sized"})
    out["domains"][domain] = entry
  out["decidable"] = decidable
  return out


def _missing(rows, labels) -> Optional[str]:
  absent = [label for label in labels if label not in rows]
  return f"no {', '.join(absent)} row" if absent else None


def _compare(rows, claim, primary, z, plan) -> Dict[str, Any]:
  rule = rule_of(claim)
  item = {"id": claim.id, "a": claim.a, "b": claim.b, "split": claim.split,
          "metric": claim.metric, "relation": rule.relation, "margin": rule.margin,
          "delta": rule.delta, "primary": primary}
  why = _missing(rows, (claim.a, claim.b))
  if why is None:
    a = records.per_problem(rows[claim.a]["record"], claim.split, claim.metric)
    b = records.per_problem(rows[claim.b]["record"], claim.split, claim.metric)
    if a is None or b is None:
      why = f"{claim.split} {claim.metric} not evaluated"
    elif a.shape[1] != b.shape[1] or a.shape[1] < 2:
      why = f"problems: {a.shape[1]} for {claim.a}, {b.shape[1]} for {claim.b}"
  if why:
    return dict(item, skipped=why)
  item.update(_difference_entry(a, b))
  if primary:
    item["sizing"] = _sizing(item["_c"], rule, z, plan)
  return item


def _amplified(rows, claim) -> List[Dict[str, Any]]:
  """Each rare strategy's two differences a − m·Base and b − m·Base on its share."""
  if _missing(rows, ("Base", claim.a, claim.b)):
    return []
  shares = rows["Base"]["record"].get("test", {}).get("mean", {})
  out = []
  for name in records.rare_strategies(rows) if "strategy_share" in shares else []:
    values = {label: records.per_problem(rows[label]["record"], claim.split, f"share:{name}")
              for label in ("Base", claim.a, claim.b)}
    if any(v is None for v in values.values()):
      continue
    for label in (claim.a, claim.b):
      out.append({"id": claim.id, "strategy": name,
                  "difference": f"{label} − {claim.amplification:g}·Base",
                  **_difference_entry(values[label], claim.amplification * values["Base"])})
  return out


def _lambda(runs, rows, claim, domain) -> List[Dict[str, Any]]:
  """a − reward shaping at each λ run on the row's budget, on pass@1 and distinct correct."""
  if _missing(rows, (claim.a,)):
    return []
  out = []
  for lam, run in records.shaping_by_lambda(runs, domain).items():
    for metric in ("pass@1", "distinct_correct"):
      a = records.per_problem(rows[claim.a]["record"], "test", metric)
      b = records.per_problem(run.evals[-1], "test", metric)
      if a is None or b is None or a.shape[1] != b.shape[1]:
        continue
      out.append({"id": claim.id, "lam": lam, "metric": metric,
                  "difference": f"{claim.a} − reward shaping (λ={lam:g})",
                  **_difference_entry(a, b)})
  return out


def to_json(result: Dict[str, Any]) -> str:
  """power.json: `analyse`'s result without the DifferenceComponents objects."""
  def clean(node):
    if isinstance(node, dict):
      return {str(k): clean(v) for k, v in node.items() if k != "_c"}
    if isinstance(node, (list, tuple)):
      return [clean(v) for v in node]
    if isinstance(node, (np.floating, np.integer, np.bool_)):
      return node.item()
    return node
  return json.dumps(clean(result), indent=2, sort_keys=True, ensure_ascii=False,
                    allow_nan=False) + "\n"


# -- the printout -----------------------------------------------------------------------


def _num(x: Optional[float], clamped: bool = False) -> str:
  return "–" if x is None else f"{x:.3g}" + ("*" if clamped else "")


def _table(header: Sequence[str], body: Sequence[Sequence[str]]) -> List[str]:
  """Aligned columns; a short row (a claim not sized says why) runs on in its last cell,
  which the widths do not count."""
  full = [header] + [r for r in body if len(r) == len(header)]
  widths = [max(len(str(r[i])) for r in full) for i in range(len(header))]
  line = lambda r: "  ".join(str(c).ljust(w) for c, w in zip(r, widths)).rstrip()
  return [line(header), line(["-" * w for w in widths])] + [line(r) for r in body]


def _component_cells(item) -> List[str]:
  c, now = item["_c"], item["now"]
  shares = now.get("shares")
  share = ("/".join("–" if shares[t] is None else f"{100 * shares[t]:.0f}" for t in TERMS)
           if shares else "not estimable (1 seed)")
  return [_num(c.difference), _num(c.problem, "problem" in c.clamped),
          _num(c.a.seed, "seed_a" in c.clamped), _num(c.b.seed, "seed_b" in c.clamped),
          _num(c.a.residual), _num(c.b.residual), _num(now.get("se")),
          _num(now.get("bootstrap_sd")), share]


COMPONENT_HEADER = ["d̂", "σ²_e,diff", "σ²_u,a", "σ²_u,b", "σ²_ε,a", "σ²_ε,b", "SE now",
                    "W now", "% of Var d̂: " + "/".join(TERM_NAMES)]


def _sizing_cells(sizing, plan) -> List[str]:
  def count(found, never_flag, limit):
    if found is not None:
      return str(found)
    return "never" if never_flag else f">{limit}"
  return ([f"{sizing['p_now']:.2f}"]
          + [count(sizing["smallest_seeds"][str(e)], sizing["never_seeds"].get(str(e)),
                   SEARCH_SEEDS) for e in plan["exercises"]]
          + [count(sizing["smallest_exercises"][str(s)],
                   sizing["never_exercises"].get(str(s)), SEARCH_EXERCISES)
             for s in plan["seeds"]]
          + [f"{sizing['p_at_max']:.2f}"])


def render(result: Dict[str, Any]) -> List[str]:
  """The printout of `analyse`'s result; its last line is the budget's count."""
  plan = result   # the plan's fields are the result's top level
  lines = ["Variance components of the preregistered claims' differences a − b "
           "(x = μ + e_p + u_s + ε, two-way ANOVA; * a negative estimate set to 0; "
           "each problem counted as an exercise)."]
  if result["num_primary"]:
    sized = ("every claim of kind 'compare', each as if primary (--claims=all)"
             if result["mode"] == "all" else "the primary claims")
    lines += [f"Sizing {sized}: M = {result['num_primary']} over {result['num_domains']} "
              f"domains, planned at α' = {result['alpha']:g}/{result['num_primary']} = "
              f"{result['level']:.3g} (Bonferroni's, the level the primary family's "
              f"correction tests at), two-sided z = {result['z']:.3f}, the interval d̂ ± z "
              + ("W (the bootstrap's SD)" if result["width"] == "bootstrap" else "SE")
              + f"; decidable: P(holds or refuted) ≥ {POWER:g}, with the observed d̂ as "
              "the true difference."]
  else:
    lines += ["No primary claims (Claim.primary): nothing sized (--claims=all sizes every "
              "comparison)."]
  if result.get("sweeps"):
    lines += ["", "The records (each sweep's command, machine and wall time):", "",
              *result["sweeps"], "", "What each run cost (wall-clock minutes, from its records):",
              "", *result["costs"]]
  for domain, entry in result["domains"].items():
    title = records.DOMAIN_TITLES.get(domain, domain)
    shapes = {label: ", ".join(f"{split} {s}x{p}" for split, (s, p) in v.items())
              for label, v in entry["rows"].items()}
    if len(set(shapes.values())) == 1:   # the usual case: one line says it
      described = f"every row ({', '.join(shapes)}): {next(iter(shapes.values()))}"
    else:
      described = "; ".join(f"{label} {shape}" for label, shape in shapes.items())
    lines += ["", f"## {title}", "", f"Seeds x problems: {described}."]
    one_seed = [label for label, v in entry["rows"].items() if any(s < 2 for s, _ in v.values())]
    if one_seed:
      lines.append(f"1 seed: {', '.join(one_seed)} (seed component not estimable; its claims "
                   "not sized).")
    for split, n in entry["splits"].items():
      if n["distinct_exercises"] is None:
        lines.append(f"{split}: {n['problems']} problems; distinct exercises not counted "
                     f"({n['not_counted']}).")
        continue
      repeats = (" — repeated exercises: each problem is counted as an exercise"
                 if n["distinct_exercises"] < n["problems"] else "")
      lines.append(f"{split}: {n['problems']} problems, {n['distinct_problems']} distinct, "
                   f"{n['distinct_exercises']} distinct exercises{repeats}.")
    done = [i for i in entry["compare"] if "_c" in i]
    lines += ["", "Comparisons (shares of Var d̂ at the records' own seeds and problems):", ""]
    lines += _table(["claim", "split metric"] + COMPONENT_HEADER,
                    [[i["id"], f"{i['split']} {i['metric']}"] + _component_cells(i)
                     for i in done])
    skipped = [i for i in entry["compare"] if "skipped" in i]
    if skipped:
      lines += ["", "Skipped: " + "; ".join(f"{i['id']} ({i['skipped']})" for i in skipped)
                + "."]
    others = entry["amplified"] + entry["lambda"]
    if others:
      lines += ["", "Not sized (verdicts joining several intervals): the differences they "
                "rest on:", ""]
      lines += _table(["claim", "difference", "metric"] + COMPONENT_HEADER,
                      [[i["id"], i["difference"],
                        f"share:{i['strategy']}" if "strategy" in i else i["metric"]]
                       + _component_cells(i) for i in others])
    sized = [i for i in done if "sizing" in i]
    if sized:
      lines += ["", f"Sizing (P: chance of a decision; smallest S seeds per row at E "
                f"exercises, smallest E at S; > the search's limit, never: not with any "
                f"number):", ""]
      header = (["claim", "rule", "d̂", f"P now"]
                + [f"S@E={e}" for e in plan["exercises"]]
                + [f"E@S={s}" for s in plan["seeds"]]
                + [f"P({plan['max_seeds']},{plan['max_exercises']})"])
      body = []
      for i in sized:
        rule = f"{i['relation']} {i['margin']:g}, δ {i['delta']:g}"
        if "not_sized" in i["sizing"]:
          body.append([i["id"], rule, _num(i["_c"].difference), i["sizing"]["not_sized"]])
        else:
          body.append([i["id"], rule, _num(i["_c"].difference)]
                      + _sizing_cells(i["sizing"], plan))
      lines += _table(header, body)
  lines += ["", f"power: {result['decidable']} of {result['num_primary']} primary claims "
            f"decidable within {result['max_seeds']} seeds x {result['max_exercises']} "
            "exercises"]
  return lines


def _integers(name: str, values: Sequence[str]) -> List[int]:
  try:
    return [int(v) for v in values]
  except ValueError as err:
    raise ValueError(f"--{name} must be a comma-separated list of integers, got "
                     f"{','.join(values)!r}.") from err


def main(argv):
  sweep_dirs = argv[1:]
  if not sweep_dirs:
    raise app.UsageError("Usage: python -m experiments.power SWEEP_DIR [SWEEP_DIR ...] "
                         "[--claims=all] [--exercises=128,256,512] [--seeds=5,10,30] "
                         "[--max_seeds=30] [--max_exercises=512] [--out=DIR [--archive]]")
  if _ARCHIVE.value and not _OUT.value:
    raise app.UsageError("--archive copies the records into --out; give --out=DIR.")
  runs = records.load_runs(sweep_dirs)
  records.require_per_problem(runs)
  result = analyse(runs, mode=_CLAIMS.value,
                   exercises=_integers("exercises", _EXERCISES.value),
                   seeds=_integers("seeds", _SEEDS.value), max_seeds=_MAX_SEEDS.value,
                   max_exercises=_MAX_EXERCISES.value, width=_WIDTH.value,
                   counts=exercise_counts if _COUNT_EXERCISES.value else None)
  result["sweeps"], result["costs"] = sweep_info(sweep_dirs), cost_lines(runs)
  text = to_json(result)   # fails before anything is written
  printed = "\n".join(render(result))
  if _OUT.value:
    os.makedirs(_OUT.value, exist_ok=True)
    for name, content in (("power.json", text), ("power.txt", printed + "\n")):
      with open(os.path.join(_OUT.value, name), "w") as f:
        f.write(content)
    if _ARCHIVE.value:
      archive_sweeps(sweep_dirs, _OUT.value)
  print(printed)


if __name__ == "__main__":
  cli.run(main)
