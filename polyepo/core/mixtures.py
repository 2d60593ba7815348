"""The strategy mixture that maximises a set objective, and what it predicts.

The price of diversity as a prediction: if a policy could choose only *which*
strategy each response follows, each strategy carried out as well as it is now,
which mixture would a set objective choose, and what pass@1, distinct correct
strategies and strategy shares would follow?

Model. On one problem the policy is a mixture w over the S strategies (w on the
simplex of those that apply). Each of the n members of a set independently picks
strategy s with probability w_s and is then correct (reward 1) with probability
a_s, else wrong (reward 0); its label is s either way. For a set objective f,

  E_w[f] = Σ_{c ∈ ℕ^S, |c| = n} multinomial(n; c) Π_s w_s^{c_s} · g(c),
  g(c)   = E[f | the members' label counts are c]
         = Σ_{r ∈ {0,1}^n} Π_i a_{l_i}^{r_i} (1 − a_{l_i})^{1 − r_i} f(r, l),

where l is the sorted label sequence with counts c (`expected_objective`). One l
stands for every ordering of it because f is permutation-invariant, which every
objective of `polyepo.objectives` is; f itself is the registered objective, scored
once per (objective, n, S) for all count vectors and reward patterns in one
vmapped call. The policy reads the problem, so it may pick a different mixture for
each *applicability pattern* P (the set of strategies that apply to a problem), and
over a split the best it can do is

  Σ_P freq(P) · max_{w ∈ Δ(P)} E_w[f],

one optimisation per pattern (`optimal_mix`, `predict`).

What is not modelled:
* Execution does not change: a_s is fixed (a forced accuracy, say), and the only
  choice is where the samples go.
* a_s is one number per strategy: its variation over problems (and any dependence
  on w) is averaged in.
* Strategy choice depends on the problem only through its pattern.
* No response is DEGENERATE (follows no strategy), and objectives that need
  answers (majority_vote) are not supported.

  accuracy = np.array([0.73, 0.58, 0.36, 0.51])
  mixtures.optimal_mix("polychromic", accuracy, n=4)     # Mix(weights, value, kkt_gap)
  mixtures.predict("polychromic", accuracy, applicable, n=4, samples=64)
"""

import functools
import itertools
import math
from typing import NamedTuple, Tuple

import jax
import jax.numpy as jnp
import numpy as np

from polyepo import checks
from polyepo.core import objectives as objectives_lib

MAX_SET_SIZE = 8      # the sum has C(n + S − 1, S − 1) count vectors × 2^n reward patterns
MAX_STRATEGIES = 8
NUM_RANDOM_STARTS = 8
MAX_ASCENT_STEPS = 3000
TOLERANCE = 1e-10     # a start stops at this KKT gap, or when its step falls below
MIN_STEP = 1e-10      # MIN_STEP (no step raises E_w[f] in float64: a gap of ~1e-9 is
                      # as close as comparing values gets)


class Mix(NamedTuple):
  """A mixture over S strategies and what it scores.

  Attributes:
    weights: f64[S], w on the simplex of the available strategies (0 elsewhere).
    value: E_w[f].
    kkt_gap: max over the available s of A(s) = E_w[f | one member follows s] −
      E_w[f], the marginal advantage of strategy s (Def. 3.2 of Ibn Hamid et al., *Set
      Reinforcement Learning: Principles and Approaches*). As ∂E/∂w_s = n (A(s)
      + E_w[f]) (E is homogeneous of degree n, so Σ_s w_s ∂E/∂w_s = n E), it is the
      Frank–Wolfe gap max_s ∂E/∂w_s − Σ_s w_s ∂E/∂w_s divided by n: always >= 0, and
      0 iff w is a KKT point of max E_w[f] on the simplex (every s of the support
      has the same partial derivative λ and no other s a larger one). Moving a
      share δ of the samples to the best s raises E_w[f] by n δ kkt_gap + O(δ²).
  """
  weights: np.ndarray
  value: float
  kkt_gap: float


class Prediction(NamedTuple):
  """What the optimal mixtures predict for a split (`predict`).

  Attributes:
    value: Σ_P freq(P) max_w E_w[f], the objective at the optimum.
    pass_at_1: Σ_P freq(P) Σ_s w_P(s) a_s.
    shares: f64[S], Σ_P freq(P) w_P: the share of samples on each strategy.
    distinct_correct: Σ_P freq(P) Σ_s [1 − (1 − w_P(s) a_s)^samples], the expected
      distinct correct strategies among `samples` samples of a problem.
    patterns: bool[Q, S], the distinct rows of `applicable`.
    frequencies: f64[Q], each pattern's share of the problems.
    mixes: the optimal Mix of each pattern (weights 0 where no strategy of the
      pattern has a known accuracy).
  """
  value: float
  pass_at_1: float
  shares: np.ndarray
  distinct_correct: float
  patterns: np.ndarray
  frequencies: np.ndarray
  mixes: Tuple[Mix, ...]


def _resolve(objective):
  if isinstance(objective, str):
    if objective in objectives_lib.NEEDS_ANSWERS:
      raise ValueError(f"Objective {objective!r} needs answers, which the mixture model "
                       "does not have.")
    return objectives_lib.get(objective)
  return objective


def _check_sizes(n, num_strategies: int) -> None:
  if not isinstance(n, int) or isinstance(n, bool) or not 1 <= n <= MAX_SET_SIZE:
    raise ValueError(f"n must be a Python int in [1, {MAX_SET_SIZE}] (the exact sum "
                     f"enumerates 2^n reward patterns), got n={n!r}.")
  if not 1 <= num_strategies <= MAX_STRATEGIES:
    raise ValueError(f"At most {MAX_STRATEGIES} strategies (and at least 1) are supported "
                     f"(the exact sum enumerates C(n + S − 1, S − 1) count vectors), "
                     f"got S={num_strategies}.")


def _check_accuracy(accuracy: np.ndarray, used: np.ndarray) -> None:
  values = accuracy[used]
  if not np.all(np.isfinite(values)) or np.any((values < 0) | (values > 1)):
    raise ValueError(f"accuracy must lie in [0, 1] for every strategy used, got {accuracy}.")


def _count_vectors(n: int, num_strategies: int):
  """(counts i64[K, S], sequences i32[K, n]): every count vector with |c| = n and its
  sorted label sequence."""
  combinations = list(itertools.combinations_with_replacement(range(num_strategies), n))
  sequences = np.array(combinations, np.int32).reshape(len(combinations), n)
  return np.sum(sequences[:, :, None] == np.arange(num_strategies), axis=1), sequences


def _multinomial(counts: np.ndarray) -> np.ndarray:
  """f64[K]: multinomial(|c|; c) of each row of counts i64[K, S]."""
  sizes = counts.sum(-1)
  factorials = np.array([math.factorial(k) for k in range(sizes.max(initial=0) + 1)], float)
  return factorials[sizes] / np.prod(factorials[counts], axis=-1)


@functools.lru_cache(maxsize=None)
def _table(objective, n: int, num_strategies: int):
  """f of every count vector's label sequence under every reward pattern.

  Returns:
    sequences: i32[K, n], the sorted label sequence of each count vector |c| = n;
    patterns: bool[R, n] (R = 2^n); scores: f64[K, R], f(pattern, sequence);
    lower: i64[K', S], the count vectors with |c'| = n − 1; up: i64[K', S], the
    index (into sequences) of c' + e_s.
  """
  counts, sequences = _count_vectors(n, num_strategies)
  patterns = np.array(list(itertools.product((False, True), repeat=n)), bool)  # [R, n]
  shape = (sequences.shape[0], patterns.shape[0], n)
  rewards = np.broadcast_to(patterns[None], shape).reshape(-1, n).astype(np.float32)
  labels = np.broadcast_to(sequences[:, None], shape).reshape(-1, n)
  scores = jax.jit(jax.vmap(objective))(jnp.asarray(rewards), jnp.asarray(labels))
  lower, _ = _count_vectors(n - 1, num_strategies)
  index = {tuple(c): k for k, c in enumerate(counts.tolist())}
  eye = np.eye(num_strategies, dtype=counts.dtype)
  up = np.array([[index[tuple(c + e)] for e in eye] for c in lower]).reshape(-1, num_strategies)
  return sequences, patterns, np.asarray(scores, np.float64).reshape(shape[:2]), lower, up


def _coefficients(objective, accuracy: np.ndarray, n: int):
  """(lower i64[K', S], coef f64[K', S]) with E_w[f | a member follows s] =
  Σ_k coef_ks Π_t w_t^{lower_kt}: a polynomial of degree n − 1 in w."""
  sequences, patterns, scores, lower, up = _table(objective, n, accuracy.shape[0])
  member = accuracy[sequences]                                   # [K, n]
  probability = np.ones(scores.shape)
  for i in range(n):
    probability *= np.where(patterns[None, :, i], member[:, i:i + 1], 1 - member[:, i:i + 1])
  given = np.sum(probability * scores, axis=1)                   # g(c): f64[K]
  return lower, _multinomial(lower)[:, None] * given[up]


def _advantages(lower: np.ndarray, coef: np.ndarray, weights: np.ndarray):
  """(E_w[f]: f64[B], A: f64[B, S]) at weights f64[B, S], where A(s) = E_w[f | a
  member follows s] − E_w[f] (and E_w[f] = Σ_s w_s E_w[f | a member follows s])."""
  degree = lower.max(initial=0)
  power = weights[:, :, None] ** np.arange(degree + 1)          # [B, S, degree + 1]
  monomials = np.prod(power[:, np.arange(lower.shape[1]), lower], axis=-1)  # [B, K']
  conditional = monomials @ coef                                 # [B, S]
  value = np.sum(weights * conditional, axis=-1)
  return value, conditional - value[:, None]


def _project(x: np.ndarray) -> np.ndarray:
  """Euclidean projection of each row of x: f64[B, S] onto the simplex."""
  u = -np.sort(-x, axis=-1)
  excess = np.cumsum(u, axis=-1) - 1
  k = np.arange(1, x.shape[-1] + 1)
  last = x.shape[-1] - 1 - np.argmax((u - excess / k > 0)[:, ::-1], axis=-1)
  tau = excess[np.arange(x.shape[0]), last] / (last + 1)
  return np.maximum(x - tau[:, None], 0)


@functools.lru_cache(maxsize=None)
def _exponentials() -> np.ndarray:
  """f64[NUM_RANDOM_STARTS, MAX_STRATEGIES] Exp(1) draws from a fixed key."""
  return np.asarray(jax.random.exponential(jax.random.key(0),
                                           (NUM_RANDOM_STARTS, MAX_STRATEGIES)), np.float64)


def _starts(num_strategies: int) -> np.ndarray:
  """f64[B, S]: uniform, every vertex, every pair's midpoint, and NUM_RANDOM_STARTS
  Dirichlet(1) draws (S exponentials normalised)."""
  eye = np.eye(num_strategies)
  pairs = [(eye[i] + eye[j]) / 2 for i, j in itertools.combinations(range(num_strategies), 2)]
  draws = _exponentials()[:, :num_strategies]
  return np.concatenate([np.full((1, num_strategies), 1 / num_strategies), eye,
                         np.reshape(pairs, (-1, num_strategies)),
                         draws / draws.sum(-1, keepdims=True)])


@functools.lru_cache(maxsize=None)
def _optimum(objective, accuracy: Tuple[float, ...], n: int):
  """(weights f64[S], value, kkt_gap) of max E_w[f] over the whole simplex.

  Projected gradient ascent from every start of `_starts` at once, each with its
  own step, doubled after a step that raises E_w[f] and halved (the step
  undone) after one that does not, until each start reaches TOLERANCE or MIN_STEP;
  the best end point wins.
  """
  lower, coef = _coefficients(objective, np.asarray(accuracy), n)
  weights = _starts(len(accuracy))
  value, advantage = _advantages(lower, coef, weights)
  step = np.ones(weights.shape[0])
  for _ in range(MAX_ASCENT_STEPS):
    if not np.any((advantage.max(-1) > TOLERANCE) & (step > MIN_STEP)):
      break
    moved = _project(weights + step[:, None] * advantage)
    new_value, new_advantage = _advantages(lower, coef, moved)
    up = new_value > value
    weights = np.where(up[:, None], moved, weights)
    value = np.where(up, new_value, value)
    advantage = np.where(up[:, None], new_advantage, advantage)
    step = np.minimum(np.where(up, 2 * step, step / 2), 1e6)
  best = int(np.argmax(value))
  return weights[best], float(value[best]), float(max(advantage[best].max(), 0.0))


def expected_objective(objective, weights, accuracy, n: int) -> float:
  """E_w[f] under the mixture model (module docstring), exactly.

  Args:
    objective: a permutation-invariant set objective or its registered name.
    weights: f64[S], w on the simplex.
    accuracy: f64[S], a_s in [0, 1] (NaN allowed where w_s = 0).
    n: set size, 1 <= n <= MAX_SET_SIZE.

  Returns:
    float.
  """
  weights, accuracy = np.asarray(weights, np.float64), np.asarray(accuracy, np.float64)
  checks.rank("weights", weights, 1)
  checks.same_shape("weights", weights, "accuracy", accuracy)
  _check_sizes(n, weights.shape[0])
  if np.any(weights < 0) or abs(weights.sum() - 1) > 1e-9:
    raise ValueError(f"weights must lie on the simplex, got {weights}.")
  used = weights > 0
  _check_accuracy(accuracy, used)
  lower, coef = _coefficients(_resolve(objective), accuracy[used], n)
  return float(_advantages(lower, coef, weights[None, used])[0][0])


def optimal_mix(objective, accuracy, n: int, available=None) -> Mix:
  """max_{w ∈ Δ(available)} E_w[f]: the best mixture of the available strategies.

  E_w[f] is a polynomial of degree n in w. Projected gradient ascent with its
  analytic gradient, from the uniform mixture, every vertex, every pair's midpoint
  and NUM_RANDOM_STARTS Dirichlet(1) draws (fixed key), returns the best end point.
  Its `kkt_gap` certifies a KKT point (first-order optimality); that it is the
  global maximum rests on the many starts, which the tests check against a grid
  over the simplex.

  Args:
    objective: a permutation-invariant set objective or its registered name.
    accuracy: f64[S], a_s in [0, 1] (NaN allowed where not available).
    n: set size, 1 <= n <= MAX_SET_SIZE.
    available: optional bool[S], the strategies w may use (default: all); at least one.

  Returns:
    Mix, weights 0 outside `available`.
  """
  accuracy = np.asarray(accuracy, np.float64)
  checks.rank("accuracy", accuracy, 1)
  available = (np.ones(accuracy.shape, bool) if available is None
               else np.asarray(available, bool))
  checks.same_shape("accuracy", accuracy, "available", available)
  if not available.any():
    raise ValueError("optimal_mix needs at least one available strategy.")
  _check_sizes(n, accuracy.shape[0])
  _check_accuracy(accuracy, available)
  sub, value, gap = _optimum(_resolve(objective), tuple(accuracy[available].tolist()), n)
  weights = np.zeros(accuracy.shape)
  weights[available] = sub
  return Mix(weights, value, gap)


def predict(objective, accuracy, applicable, n: int, samples: int = 64) -> Prediction:
  """The optimal mixtures of a split's problems and what they predict.

  Each distinct row of `applicable` (an applicability pattern) is optimised once,
  over its strategies of known accuracy; a problem none of whose strategies has a
  known accuracy contributes 0 (to the value, pass@1, shares and distinct correct).

  Args:
    objective: a permutation-invariant set objective or its registered name.
    accuracy: f64[S], a_s in [0, 1]; NaN where unknown (that strategy is never used).
    applicable: bool[P, S], which strategies apply to each problem of the split.
    n: set size, 1 <= n <= MAX_SET_SIZE.
    samples: samples per problem that `distinct_correct` counts among.

  Returns:
    Prediction.
  """
  accuracy = np.asarray(accuracy, np.float64)
  applicable = np.asarray(applicable, bool)
  checks.rank("accuracy", accuracy, 1)
  checks.rank("applicable", applicable, 2)
  checks.axis_size("applicable", applicable, 1, accuracy.shape[0], "strategies")
  checks.at_least("samples", samples, 1)
  if applicable.shape[0] < 1:
    raise ValueError("applicable must hold at least one problem.")
  known = np.isfinite(accuracy)
  patterns, counts = np.unique(applicable, axis=0, return_counts=True)
  frequencies = counts / applicable.shape[0]
  mixes = []
  for pattern in patterns:
    usable = pattern & known
    mixes.append(optimal_mix(objective, accuracy, n, usable) if usable.any()
                 else Mix(np.zeros(accuracy.shape), 0.0, 0.0))
  weights = np.stack([m.weights for m in mixes])                     # [Q, S]
  correct = weights * np.where(known, accuracy, 0.0)                 # [Q, S]
  return Prediction(
      value=float(frequencies @ np.array([m.value for m in mixes])),
      pass_at_1=float(frequencies @ correct.sum(-1)),
      shares=frequencies @ weights,
      distinct_correct=float(frequencies @ np.sum(1 - (1 - correct) ** samples, -1)),
      patterns=patterns, frequencies=frequencies, mixes=tuple(mixes))
