"""Exact set-RL quantities for a tabular softmax policy over a finite response set.

A "tabular policy" is π = softmax(logits) over Y responses, each with a reward,
a strategy label and optionally an answer id. Expectations over sets of n i.i.d.
responses are computed exactly by enumerating all Y^n ordered n-tuples, so these
functions are for small Y and n (Y^n up to a few hundred thousand). Equations and
definitions are numbered as in Ibn Hamid et al., *Set Reinforcement Learning: Principles
and Approaches* (the set RL note).

  J(θ)      = E_{y_1..n ~ π}[f(y_1..n)]                       (eq. 5)
  A(y)      = E_{y_2..n}[f(y, y_2..n)] - J(θ)                 (Def. 3.2, eq. 12)
  Λ(y_1..n) = Cov_{y'_1..n}(f(y'), (1/I) Σ_ij 1{y'_i = y_j})  (Def. 3.1, eq. 11)
"""

import itertools
from typing import Optional

import jax
import jax.numpy as jnp
import numpy as np

from polyepo import checks
from polyepo.core import objectives as objectives_lib

MAX_TUPLES = 1 << 20


def all_tuples(num_responses: int, n: int) -> jax.Array:
  """Every ordered n-tuple of responses: i32[Y^n, n]."""
  if num_responses ** n > MAX_TUPLES:
    raise ValueError(
        f"Enumerating Y^n = {num_responses}^{n} tuples exceeds {MAX_TUPLES}; "
        f"use fewer responses or a smaller set size.")
  rows = np.array(list(itertools.product(range(num_responses), repeat=n)),
                  dtype=np.int32).reshape(-1, n)
  return jnp.asarray(rows)


def _tuple_scores(objective, rewards, labels, answers, tuples):
  return objectives_lib.score_sets(objective, rewards, labels, tuples, answers)


def _resolve(objective):
  return objectives_lib.get(objective) if isinstance(objective, str) else objective


def _check(logits, rewards, labels, answers, n):
  checks.rank("logits", logits, 1)
  checks.per_generation(rewards, labels, answers)
  checks.same_shape("logits", logits, "rewards", rewards)
  if not isinstance(n, int) or n < 1:
    raise ValueError(f"n must be a Python int >= 1, got {n!r}.")


def expected_objective(logits: jax.Array, rewards: jax.Array, labels: jax.Array,
                       objective, n: int,
                       answers: Optional[jax.Array] = None) -> jax.Array:
  """J(θ) = E_{y_1..n ~ softmax(logits)}[f(y_1..n)], exactly.

  Args:
    logits: f32[Y] policy logits θ.
    rewards: f32[Y]; labels: i32[Y]; answers: optional i32[Y].
    objective: a set objective or its registered name.
    n: set size (static).

  Returns:
    f32[]; differentiable in logits (jax.grad gives the exact ∇J).
  """
  _check(logits, rewards, labels, answers, n)
  tuples = all_tuples(logits.shape[0], n)
  probs = jax.nn.softmax(logits)
  weights = jnp.prod(probs[tuples], axis=-1)
  return jnp.sum(weights * _tuple_scores(_resolve(objective), rewards, labels, answers, tuples))


def objective_gradient(logits, rewards, labels, objective, n: int, answers=None) -> jax.Array:
  """∇_θ J(θ): f32[Y], the exact set-RL policy gradient."""
  return jax.grad(expected_objective)(logits, rewards, labels, objective, n, answers)


def marginal_advantage(logits: jax.Array, rewards: jax.Array, labels: jax.Array,
                       objective, n: int,
                       answers: Optional[jax.Array] = None) -> jax.Array:
  """A(y) = E_{y_2..n ~ π}[f(y, y_2..n)] - E_{y_1..n ~ π}[f(y_1..n)] (Def. 3.2).

  Returns:
    f32[Y], the marginal set advantage of every response.
  """
  _check(logits, rewards, labels, answers, n)
  objective = _resolve(objective)
  num_responses = logits.shape[0]
  probs = jax.nn.softmax(logits)
  rest = all_tuples(num_responses, n - 1) if n > 1 else jnp.zeros((1, 0), jnp.int32)
  rest_weights = jnp.prod(probs[rest], axis=-1)

  def given(y):
    tuples = jnp.concatenate([jnp.full((rest.shape[0], 1), y, jnp.int32), rest], 1)
    return jnp.sum(rest_weights * _tuple_scores(objective, rewards, labels, answers, tuples))

  conditional = jax.vmap(given)(jnp.arange(num_responses))
  return conditional - jnp.sum(probs * conditional)


def scaffold_value(logits: jax.Array, rewards: jax.Array, labels: jax.Array,
                   objective, members: jax.Array,
                   answers: Optional[jax.Array] = None) -> jax.Array:
  """Scaffold value Λ_f(y_1..n; π) of the set `members` (Def. 3.1, eq. 11).

    Λ = Cov_{y' ~ π^n}(f(y'), (1/I) Σ_{i,j} 1{y'_i = y_j}),

  with I = max_{y'} Σ_{i,j} 1{y'_i = y_j} = n · (largest multiplicity in y_1..n).
  For a homogeneous set y^{⊕n} it equals π(y) A(y) (the set RL note's Observation after
  Def. 3.2).

  Args:
    logits: f32[Y]; rewards: f32[Y]; labels: i32[Y]; answers: optional i32[Y].
    objective: a set objective or its registered name.
    members: i32[n] response ids of the set.

  Returns:
    f32[].
  """
  checks.rank("members", members, 1)
  checks.integer("members", members)
  n = members.shape[0]
  _check(logits, rewards, labels, answers, n)
  tuples = all_tuples(logits.shape[0], n)
  probs = jax.nn.softmax(logits)
  weights = jnp.prod(probs[tuples], axis=-1)
  scores = _tuple_scores(_resolve(objective), rewards, labels, answers, tuples)
  overlap = jnp.sum(tuples[:, :, None] == members[None, None, :], axis=(1, 2))
  largest = jnp.max(jnp.sum(members[:, None] == members[None, :], axis=-1))
  overlap = overlap.astype(jnp.float32) / (n * largest)
  mean_f = jnp.sum(weights * scores)
  mean_overlap = jnp.sum(weights * overlap)
  return jnp.sum(weights * (scores - mean_f) * (overlap - mean_overlap))
