"""Per-generation advantages: the marginal set advantage, GRPO and reward shaping.

Everything here is written for ONE prompt's group of N generations; vmap over
prompts. For the set objectives with a closed form (polychromic, pass@n / max,
mean reward) the exact all-subsets advantage costs O(N^2) (or O(N log N)) and
never enumerates the C(N, n) subsets.

Marginal set advantage (Ibn Hamid et al., *Set Reinforcement Learning: Principles and
Approaches*, the set RL note, §2.3 eq. 8-9; Hasan Orney et al., *Poly-EPO: Training
Exploratory Reasoning Models*, arXiv:2604.17654, the "mean" form):

  A(y_i) = mean_{G in S, G ∋ i} f(G) - mean_{G in S} f(G)            (reduction="mean")
  A(y_i) = sum_{G in S, G ∋ i} (f(G) - mean_{G' in S} f(G'))         (reduction="sum", eq. 9)

where S is the collection of scored sets. With S = all C(N, n) sets the two
differ by the constant factor C(N-1, n-1).
"""

import math
from typing import Optional

import jax
import jax.numpy as jnp

from polyepo import checks
from polyepo.core import objectives as objectives_lib
from polyepo.core import sets as sets_lib
from polyepo.env_api import DEGENERATE

REDUCTIONS = ("mean", "sum")


def _group_checks(rewards, labels, set_size, reduction, answers=None):
  checks.per_generation(rewards, labels, answers)
  checks.set_size(rewards.shape[0], set_size, name="set_size")
  checks.one_of("reduction", reduction, REDUCTIONS)


def _scale(centered_mean: jax.Array, num_samples: int, set_size: int,
           reduction: str) -> jax.Array:
  """Turns an all-subsets "mean" advantage into the requested reduction."""
  if reduction == "sum":
    return centered_mean * math.comb(num_samples - 1, set_size - 1)
  return centered_mean


# ---------------------------------------------------------------------------
# Generic estimator: any objective, any collection of subsets.
# ---------------------------------------------------------------------------


def marginal_set_advantage(objective, rewards: jax.Array, labels: jax.Array,
                           subsets: jax.Array, reduction: str = "mean",
                           answers: Optional[jax.Array] = None) -> jax.Array:
  """Marginal set advantage of each generation over the given subsets (Algorithm 1).

  Args:
    objective: a set objective `f(rewards f32[n], labels i32[n], answers=None)`,
      or the name of a registered one.
    rewards: f32[N] rewards of the group's generations.
    labels: i32[N] strategy labels (DEGENERATE = -1).
    subsets: i32[K, n] distinct subsets (rows of indices into the group), e.g.
      `sets.all_subsets(N, n)` or `sets.sample_subsets(key, N, n, K)`.
    reduction: "mean" (average over the subsets containing i; a generation in no
      subset gets 0) or "sum" (the set RL note's eq. 9).
    answers: optional i32[N] answer ids, passed through to the objective.

  Returns:
    f32[N].

  With `sample_subsets` and reduction="sum" this is, in expectation over the
  draw of the K subsets, exactly (K - 1) / (C(N, n) - 1) times the all-subsets
  value (Prop. 2.6's ratio of scaling factors M).
  """
  if isinstance(objective, str):
    objective = objectives_lib.get(objective)
  checks.per_generation(rewards, labels, answers)
  checks.rank("subsets", subsets, 2)
  checks.integer("subsets", subsets)
  checks.one_of("reduction", reduction, REDUCTIONS)
  num_samples = rewards.shape[0]
  k, n = subsets.shape
  checks.set_size(num_samples, n, name="subsets.shape[1]")
  checks.num_subsets(num_samples, n, k)

  scores = objectives_lib.score_sets(objective, rewards, labels, subsets, answers)
  centered = scores - jnp.mean(scores)
  # One scatter for sums and membership counts (a scatter of constants alone
  # would be constant-folded at compile time, slowly, for large K).
  updates = jnp.stack([centered, jnp.ones_like(centered)], -1)          # [K, 2]
  totals = jnp.zeros((num_samples, 2), jnp.float32).at[subsets].add(
      jnp.broadcast_to(updates[:, None, :], (k, n, 2)))
  if reduction == "sum":
    return totals[:, 0]
  return totals[:, 0] / jnp.maximum(totals[:, 1], 1.0)


# ---------------------------------------------------------------------------
# Exact closed forms over all C(N, n) subsets.
# ---------------------------------------------------------------------------


def _binomial_ratio(top: jax.Array, bottom: int, k: int) -> jax.Array:
  """C(top, k) / C(bottom, k) for integer arrays `top` <= bottom, k <= bottom, as f32.

  Computed as prod_{t<k} (top - t) / (bottom - t) with each factor clipped at 0
  (C(m, k) = 0 for m < k); exact to float rounding and free of overflow. The
  product runs over a fixed length (bottom + 1) so that shapes depend on N only.
  """
  t = jnp.arange(max(bottom, 0) + 1, dtype=jnp.float32)
  factors = jnp.maximum(top.astype(jnp.float32)[..., None] - t, 0.0) / jnp.maximum(bottom - t, 1.0)
  return jnp.prod(jnp.where(t < k, factors, 1.0), axis=-1)


def polychromic_advantage(rewards: jax.Array, labels: jax.Array, set_size: int,
                          reduction: str = "mean") -> jax.Array:
  """Exact all-subsets marginal advantage under the polychromic objective, O(N^2).

  f(G) = (1/n^2) sum_{j in G} r_j * sum_c 1[G hits strategy c]. For G uniform among
  the n-subsets containing i, with m_c the size of strategy c, a = (n-1)/(N-1),
  q1(m) = C(N-1-m, n-1)/C(N-1, n-1) (G misses m given generations other than i) and
  q2(m) = C(N-2-m, n-2)/C(N-1, n-1) (G also holds j != i and misses them):

    P(j in G, G hits c | i in G) = [j == i or a] - 1[i, j not in c] q_{1 if j == i else 2}(m_c).

  Summing over labels c and members j gives E[f(G) | i in G] in O(N) per i after
  per-label counts; the overall mean is mean_i E[f(G) | i in G].

  Args:
    rewards: f32[N]; labels: i32[N] (DEGENERATE adds no diversity).
    set_size: n (static), 1 <= n <= N.
    reduction: "mean" or "sum" (see module docstring).

  Returns:
    f32[N], equal to `marginal_set_advantage(polychromic, ..., all_subsets(N, n))`.
  """
  _group_checks(rewards, labels, set_size, reduction)
  num_samples, n = rewards.shape[0], set_size
  r = rewards.astype(jnp.float32)
  strategic = labels != DEGENERATE
  same = (labels[:, None] == labels[None, :]) & strategic[:, None] & strategic[None, :]
  size = jnp.sum(same, axis=-1)  # m_{c(i)}; 0 for degenerate i.
  inv_size = jnp.where(strategic, 1.0 / jnp.maximum(size, 1), 0.0)

  # q1, q2 of each generation's own label (used only where i is strategic).
  q1 = _binomial_ratio(num_samples - 1 - size, num_samples - 1, n - 1)
  if num_samples >= 2 and n >= 2:
    a = (n - 1) / (num_samples - 1)
    q2 = a * _binomial_ratio(num_samples - 2 - size, num_samples - 2, n - 2)
  else:
    a = 0.0
    q2 = jnp.zeros_like(q1)
  q1 = jnp.where(strategic, q1, 0.0)
  q2 = jnp.where(strategic, q2, 0.0)

  num_labels = jnp.sum(inv_size)                      # L
  sum_q1 = jnp.sum(inv_size * q1)                     # sum_c q1(m_c)
  sum_q2 = jnp.sum(inv_size * q2)                     # sum_c q2(m_c)
  total_reward = jnp.sum(r)
  label_reward = same.astype(jnp.float32) @ r         # R_{c(i)}; 0 if degenerate
  weighted_q2 = jnp.sum(r * q2)                       # sum_j r_j q2(m_{c(j)})
  others = total_reward - r

  own = r * (num_labels - sum_q1 + q1)
  rest = (others * (a * num_labels - sum_q2) + q2 * others
          + (weighted_q2 - r * q2) - q2 * (label_reward - r))
  given_i = (own + rest) / n**2                       # E[f(G) | i in G]
  return _scale(given_i - jnp.mean(given_i), num_samples, n, reduction)


def max_reward_advantage(rewards: jax.Array, set_size: int,
                         reduction: str = "mean") -> jax.Array:
  """Exact all-subsets marginal advantage under f(G) = max_{j in G} r_j, O(N log N).

  For binary rewards this is the pass@n advantage. Rank the rewards in
  descending order (ties broken by index), rank ρ_j. Given i in G, member j is the
  (tie-broken) maximum of G iff j in G and no better-ranked member is:
  P = C(N-1-ρ_i, n-1)/C(N-1, n-1) for j = i, C(N-2-ρ_j, n-2)/C(N-1, n-1) for
  ρ_j < ρ_i, and 0 for ρ_j > ρ_i. A cumulative sum gives every E[max G | i in G].

  Args:
    rewards: f32[N], any real values.
    set_size: n (static).
    reduction: "mean" or "sum".

  Returns:
    f32[N], equal to `marginal_set_advantage(pass_at_n, ..., all_subsets(N, n))`.
  """
  checks.rank("rewards", rewards, 1)
  checks.floating_or_integer("rewards", rewards)
  num_samples, n = rewards.shape[0], set_size
  checks.set_size(num_samples, n, name="set_size")
  checks.one_of("reduction", reduction, REDUCTIONS)
  r = rewards.astype(jnp.float32)
  order = jnp.argsort(-r, stable=True)
  sorted_r = r[order]
  ranks = jnp.arange(num_samples)
  self_weight = _binomial_ratio(num_samples - 1 - ranks, num_samples - 1, n - 1)
  if num_samples >= 2 and n >= 2:
    a = (n - 1) / (num_samples - 1)
    other_weight = a * _binomial_ratio(num_samples - 2 - ranks, num_samples - 2, n - 2)
  else:
    other_weight = jnp.zeros_like(self_weight)
  # Sum over strictly better-ranked members: exclusive cumulative sum.
  better = jnp.cumsum(sorted_r * other_weight) - sorted_r * other_weight
  given_sorted = sorted_r * self_weight + better
  given_i = jnp.zeros_like(r).at[order].set(given_sorted)
  return _scale(given_i - jnp.mean(given_i), num_samples, n, reduction)


def pass_at_n_advantage(rewards: jax.Array, labels: jax.Array, set_size: int,
                        reduction: str = "mean") -> jax.Array:
  """Exact all-subsets advantage for the `pass_at_n` objective (labels unused)."""
  checks.per_generation(rewards, labels)
  return max_reward_advantage(rewards, set_size, reduction)


def mean_reward_advantage(rewards: jax.Array, labels: jax.Array, set_size: int,
                          reduction: str = "mean") -> jax.Array:
  """Exact all-subsets advantage for `mean_reward`: (N-n)/(n(N-1)) (r_i - mean r).

  Set RL with the mean reward is standard RL with a rescaled advantage. For N = 1
  the advantage is 0.
  """
  _group_checks(rewards, labels, set_size, reduction)
  num_samples, n = rewards.shape[0], set_size
  r = rewards.astype(jnp.float32)
  scale = (num_samples - n) / (n * (num_samples - 1)) if num_samples > 1 else 0.0
  return _scale(scale * (r - jnp.mean(r)), num_samples, n, reduction)


def polychromic_correct_only_advantage(rewards, labels, set_size: int,
                                       reduction: str = "mean") -> jax.Array:
  """Exact advantage for `polychromic_correct_only` (incorrect members add no diversity)."""
  _group_checks(rewards, labels, set_size, reduction)
  return polychromic_advantage(
      rewards, jnp.where(rewards > 0, labels, DEGENERATE), set_size, reduction)


CLOSED_FORMS = {
    "polychromic": polychromic_advantage,
    "polychromic_correct_only": polychromic_correct_only_advantage,
    "pass_at_n": pass_at_n_advantage,
    "mean_reward": mean_reward_advantage,
}


def set_rl_advantage(objective: str, rewards: jax.Array, labels: jax.Array, *,
                     set_size: int, num_subsets: Optional[int] = None,
                     key: Optional[jax.Array] = None, reduction: str = "mean",
                     answers: Optional[jax.Array] = None) -> jax.Array:
  """The marginal set advantage, exact or sampled, as chosen by configuration.

  Args:
    objective: name of a registered set objective.
    rewards: f32[N]; labels: i32[N]; answers: optional i32[N].
    set_size: n.
    num_subsets: None for the exact all-subsets value (closed form where one
      exists, enumeration otherwise); K to score K subsets drawn uniformly
      without replacement.
    key: PRNG key, required when num_subsets is given.
    reduction: "mean" or "sum".

  Returns:
    f32[N].
  """
  objective_fn = objectives_lib.get(objective)
  if objective in objectives_lib.NEEDS_ANSWERS and answers is None:
    raise ValueError(f"The {objective!r} objective needs answers= (i32[N] answer ids).")
  num_samples = rewards.shape[0]
  if num_subsets is None:
    if objective in CLOSED_FORMS:
      return CLOSED_FORMS[objective](rewards, labels, set_size, reduction)
    subsets = sets_lib.all_subsets(num_samples, set_size)
  else:
    if key is None:
      raise ValueError("key is required when num_subsets is given.")
    subsets = sets_lib.sample_subsets(key, num_samples, set_size, num_subsets)
  return marginal_set_advantage(objective_fn, rewards, labels, subsets, reduction,
                                answers=answers)


# ---------------------------------------------------------------------------
# Baselines.
# ---------------------------------------------------------------------------


def grpo_advantage(rewards: jax.Array, normalize: bool = True,
                   eps: float = 1e-6) -> jax.Array:
  """GRPO's group-relative advantage (Shao et al., 2024).

    A_i = (r_i - mean r) / (std r + eps)   if normalize (std with ddof = 0)
    A_i =  r_i - mean r                    otherwise (Dr. GRPO, Liu et al., 2025)

  Args:
    rewards: f32[N].

  Returns:
    f32[N]; all zeros when every reward is equal.
  """
  checks.rank("rewards", rewards, 1)
  checks.floating_or_integer("rewards", rewards)
  r = rewards.astype(jnp.float32)
  centered = r - jnp.mean(r)
  if normalize:
    return centered / (jnp.std(r) + eps)
  return centered


def diversity_bonus(labels: jax.Array) -> jax.Array:
  """d_i: share of the other N-1 generations whose label differs from i's.

  A degenerate generation gets d_i = 0; for N = 1, d = 0.

  Args:
    labels: i32[N].

  Returns:
    f32[N] in [0, 1].
  """
  checks.rank("labels", labels, 1)
  checks.integer("labels", labels)
  num_samples = labels.shape[0]
  differ = jnp.sum(labels[:, None] != labels[None, :], axis=-1)
  d = differ.astype(jnp.float32) / max(num_samples - 1, 1)
  return jnp.where(labels == DEGENERATE, 0.0, d)


def reward_shaping_advantage(rewards: jax.Array, labels: jax.Array, lam: float,
                             normalize: bool = True, eps: float = 1e-6) -> jax.Array:
  """GRPO on the shaped reward r_i + lam * d_i (the reward-shaping baseline).

  Args:
    rewards: f32[N]; labels: i32[N].
    lam: diversity weight λ >= 0 (may be traced, for sweeps under vmap).
    normalize: std-normalise as GRPO (True) or only centre (Dr. GRPO).

  Returns:
    f32[N].
  """
  checks.per_generation(rewards, labels)
  if isinstance(lam, (int, float)) and lam < 0:
    raise ValueError(f"lam must be >= 0, got lam={lam}.")
  shaped = rewards.astype(jnp.float32) + lam * diversity_bonus(labels)
  return grpo_advantage(shaped, normalize=normalize, eps=eps)


def normalize_advantage(advantages: jax.Array, eps: float = 1e-6) -> jax.Array:
  """Per-group standardisation (A - mean A) / (std A + eps). advantages: f32[N]."""
  checks.rank("advantages", advantages, 1)
  centered = advantages - jnp.mean(advantages)
  return centered / (jnp.std(advantages) + eps)
