"""Set objectives f(G): a score for one set of n generations.

Sections, equations and examples are those of Ibn Hamid et al., *Set Reinforcement
Learning: Principles and Approaches* (the set RL note), §2.2, §4, §5; the polychromic
objective is Poly-EPO's (Hasan Orney et al., *Poly-EPO: Training Exploratory Reasoning
Models*, arXiv:2604.17654).

Every objective takes the members' `rewards: f32[n]` and strategy `labels: i32[n]`
positionally, and accepts an optional keyword `answers: i32[n]` (an id per
distinct final answer, -1 for no answer), and returns a scalar f32[]. Objectives
are written for ONE set; callers vmap them over sets and prompts.

Labels: `DEGENERATE` (-1) marks a generation that follows no strategy. It counts
for reward but adds no diversity; equal non-degenerate labels are one strategy.
"""

from typing import Callable, Dict, Optional

import jax
import jax.numpy as jnp

from polyepo import checks
from polyepo.env_api import DEGENERATE

Objective = Callable[..., jax.Array]


def _check(rewards, labels, answers=None):
  checks.per_generation(rewards, labels, answers)


def _first_occurrence(values: jax.Array) -> jax.Array:
  """bool[n]: values[k] differs from every values[j], j < k."""
  n = values.shape[0]
  equal = values[:, None] == values[None, :]
  earlier = jnp.tril(jnp.ones((n, n), bool), k=-1)
  return ~jnp.any(equal & earlier, axis=-1)


def num_distinct_strategies(labels: jax.Array) -> jax.Array:
  """Number of distinct non-degenerate labels. labels: i32[n] -> i32[]."""
  checks.rank("labels", labels, 1)
  checks.integer("labels", labels)
  return jnp.sum(_first_occurrence(labels) & (labels != DEGENERATE)).astype(jnp.int32)


def polychromic(rewards: jax.Array, labels: jax.Array, answers=None) -> jax.Array:
  """Poly-EPO's polychromic objective (the set RL note, eq. 14 with the §6.2 diversity).

    f(G) = (1/n) sum_{j in G} r_j  *  |{C(y_j) : j in G, C(y_j) != DEGENERATE}| / n

  Args:
    rewards: f32[n], rewards of the set's members (in [0, 1] for f in [0, 1]).
    labels: i32[n], strategy labels; DEGENERATE adds no diversity.
    answers: unused; accepted so all objectives share one signature.

  Returns:
    f32[] set score.
  """
  del answers
  _check(rewards, labels)
  n = rewards.shape[0]
  mean_reward = jnp.mean(rewards.astype(jnp.float32))
  return mean_reward * num_distinct_strategies(labels).astype(jnp.float32) / n


def polychromic_correct_only(rewards, labels, answers=None) -> jax.Array:
  """The polychromic objective with diversity counted over correct members only.

  A member with reward <= 0 is treated as DEGENERATE for diversity. This is the
  "correct-only diversity" ablation (`experiments.analysis.algorithms`, claim
  `incorrect_samples_explore` in `configs/claims.py`): does counting incorrect members
  keep more strategies?
  """
  del answers
  _check(rewards, labels)
  return polychromic(rewards, jnp.where(rewards > 0, labels, DEGENERATE))


def pass_at_n(rewards: jax.Array, labels: jax.Array, answers=None) -> jax.Array:
  """f(G) = max_{j in G} r_j: pass@n for binary rewards (the set RL note's Example 2.3)."""
  del labels, answers
  checks.rank("rewards", rewards, 1)
  return jnp.max(rewards.astype(jnp.float32))


def mean_reward(rewards: jax.Array, labels: jax.Array, answers=None) -> jax.Array:
  """f(G) = mean_{j in G} r_j. Set RL with this f is standard RL (a sanity check)."""
  del labels, answers
  checks.rank("rewards", rewards, 1)
  return jnp.mean(rewards.astype(jnp.float32))


def majority_vote_reward(rewards: jax.Array, answers: jax.Array) -> jax.Array:
  """Reward of the majority answer, r(maj(G)) (the set RL note's Example 3.5).

  Members with answer -1 (no answer) do not vote. Ties between top answers are
  broken uniformly at random in expectation: the result is the mean reward of the
  tied answers. With no votes at all the result is 0.

  Args:
    rewards: f32[n]; members with the same answer are assumed to share a reward.
    answers: i32[n] answer ids, -1 for no answer.

  Returns:
    f32[].
  """
  votes = answers >= 0
  counts = jnp.sum((answers[:, None] == answers[None, :]) & votes[None, :], axis=-1)
  counts = jnp.where(votes, counts, 0)
  winners = votes & (counts == jnp.max(counts))
  num_winners = jnp.sum(winners)
  total = jnp.sum(jnp.where(winners, rewards.astype(jnp.float32), 0.0))
  return jnp.where(num_winners > 0, total / jnp.maximum(num_winners, 1), 0.0)


def majority_vote(rewards: jax.Array, labels: jax.Array, answers=None) -> jax.Array:
  """f(G) = r(maj(G)), the reward of the majority answer. Needs `answers=`."""
  del labels
  if answers is None:
    raise ValueError("The majority_vote objective needs answers= (i32[n] answer ids).")
  checks.rank("rewards", rewards, 1)
  checks.integer("answers", answers)
  checks.same_shape("rewards", rewards, "answers", answers)
  return majority_vote_reward(rewards, answers)


def srl(rewards: jax.Array, labels: jax.Array, answers=None) -> jax.Array:
  """The set RL note's f_srl (§5): max_j r_j / N(y_j | G).

  N(y_j | G) counts the members of G that are "the same generation" as y_j; here
  two generations are the same when they share a strategy label, and all
  DEGENERATE generations form one group (as the judge's degenerate cluster).
  """
  del answers
  _check(rewards, labels)
  multiplicity = jnp.sum(labels[:, None] == labels[None, :], axis=-1)
  return jnp.max(rewards.astype(jnp.float32) / multiplicity)


OBJECTIVES: Dict[str, Objective] = {
    "polychromic": polychromic,
    "polychromic_correct_only": polychromic_correct_only,
    "pass_at_n": pass_at_n,
    "mean_reward": mean_reward,
    "majority_vote": majority_vote,
    "srl": srl,
}

NEEDS_ANSWERS = frozenset({"majority_vote"})


def get(name: str) -> Objective:
  """The objective registered under `name`; ValueError listing the valid names."""
  if name not in OBJECTIVES:
    raise ValueError(
        f"Unknown set objective {name!r}; valid choices: {', '.join(OBJECTIVES)}.")
  return OBJECTIVES[name]


def score_sets(objective: Objective, rewards: jax.Array, labels: jax.Array,
               subsets: jax.Array, answers: Optional[jax.Array] = None) -> jax.Array:
  """Scores each subset of one group: f(G_k) for k = 1..K.

  Args:
    objective: a set objective.
    rewards: f32[N]; labels: i32[N]; answers: optional i32[N].
    subsets: i32[K, n] indices into the group.

  Returns:
    f32[K].
  """
  if answers is None:
    return jax.vmap(objective)(rewards[subsets], labels[subsets])
  return jax.vmap(lambda r, l, a: objective(r, l, answers=a))(
      rewards[subsets], labels[subsets], answers[subsets])
