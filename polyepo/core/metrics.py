"""Evaluation metrics for one prompt's group of N generations (vmap over prompts).

pass@k (unbiased), strategy counts and entropy, decoy mass, branch point,
majority-vote accuracy and the top answer's vote share.
"""

import jax
import jax.numpy as jnp

from polyepo import checks
from polyepo.core import objectives
from polyepo.env_api import DEGENERATE


def pass_at_k(num_samples: int, num_correct, k: int) -> jax.Array:
  """Unbiased pass@k from N samples of which c are correct (Chen et al., 2021).

    pass@k = 1 - C(N - c, k) / C(N, k) = 1 - prod_{j < c} (1 - k / (N - j))

  Args:
    num_samples: N (static Python int).
    num_correct: i32[...] number of correct samples c, 0 <= c <= N.
    k: 1 <= k <= N (static Python int).

  Returns:
    f32[...] with the shape of num_correct.
  """
  checks.set_size(num_samples, k, name="k")
  c = jnp.asarray(num_correct)
  j = jnp.arange(num_samples, dtype=jnp.float32)
  factors = jnp.maximum(1.0 - k / (num_samples - j), 0.0)
  factors = jnp.where(j < c[..., None], factors, 1.0)
  return 1.0 - jnp.prod(factors, axis=-1)


def pass_at_k_curve(num_samples: int, num_correct, ks) -> jax.Array:
  """pass@k for several k: f32[..., len(ks)]."""
  return jnp.stack([pass_at_k(num_samples, num_correct, int(k)) for k in ks], -1)


def distinct_strategies(labels: jax.Array) -> jax.Array:
  """Number of distinct non-degenerate strategies. labels: i32[N] -> i32[]."""
  return objectives.num_distinct_strategies(labels)


def correct_labels(rewards: jax.Array, labels: jax.Array) -> jax.Array:
  """Each label where its generation has reward > 0, DEGENERATE elsewhere (any shape)."""
  return jnp.where(rewards > 0, labels, DEGENERATE)


def distinct_correct_strategies(rewards: jax.Array, labels: jax.Array) -> jax.Array:
  """Distinct non-degenerate strategies among generations with reward > 0."""
  checks.per_generation(rewards, labels)
  return objectives.num_distinct_strategies(correct_labels(rewards, labels))


def decoy_mass(rewards: jax.Array, labels: jax.Array) -> jax.Array:
  """Share of the N generations whose (non-degenerate) strategy has no correct
  generation in the group: f32[]. rewards: f32[N]; labels: i32[N]."""
  checks.per_generation(rewards, labels)
  same = labels[:, None] == labels[None, :]
  strategy_solved = jnp.any(same & (rewards[None, :] > 0), axis=1)
  return jnp.mean((labels != DEGENERATE) & ~strategy_solved)


def advantage_alignment(rewards: jax.Array, advantages: jax.Array) -> dict:
  """How a step's response advantages line up with correctness (batch-level).

  GRPO gives every correct response a positive advantage and every incorrect
  one a negative one; a set objective trades some of that for diversity. The
  shares below measure the trade (0 for GRPO):

    correct_pushed_down    share of correct responses with advantage < 0
    incorrect_pushed_up    share of incorrect responses with advantage > 0
    all_correct_advantage  mean |advantage| in groups whose N responses are all
                           correct (0 when there are none): the diversity-only
                           signal GRPO leaves at zero

  Args:
    rewards: f32[B, N]; a response is correct when its reward is > 0.
    advantages: f32[B, N], one per response.

  Returns:
    {name: f32[]} with the three entries above.
  """
  checks.same_shape("rewards", rewards, "advantages", advantages)
  correct = rewards > 0

  def share(condition, among):
    return jnp.sum(condition & among) / jnp.maximum(jnp.sum(among), 1)

  all_correct = jnp.broadcast_to(jnp.all(correct, axis=1, keepdims=True), correct.shape)
  return dict(
      correct_pushed_down=share(advantages < 0, correct),
      incorrect_pushed_up=share(advantages > 0, ~correct),
      all_correct_advantage=jnp.sum(jnp.abs(advantages) * all_correct)
      / jnp.maximum(jnp.sum(all_correct), 1))


def strategy_counts(labels: jax.Array, num_strategies: int) -> jax.Array:
  """Histogram of labels: i32[S + 1], the last entry counting DEGENERATE.

  Labels outside [0, S) other than DEGENERATE are an error in the caller and
  are counted nowhere.
  """
  checks.integer("labels", labels)
  bins = jnp.where(labels == DEGENERATE, num_strategies, labels)
  one_hot = bins[..., None] == jnp.arange(num_strategies + 1)
  return jnp.sum(one_hot.reshape(-1, num_strategies + 1), axis=0).astype(jnp.int32)


def strategy_entropy(labels: jax.Array, num_strategies: int) -> jax.Array:
  """Entropy (nats) of the empirical strategy distribution, DEGENERATE as one category."""
  counts = strategy_counts(labels, num_strategies).astype(jnp.float32)
  p = counts / jnp.maximum(jnp.sum(counts), 1.0)
  return -jnp.sum(jnp.where(p > 0, p * jnp.log(jnp.where(p > 0, p, 1.0)), 0.0))


def shared_prefix_lengths(tokens: jax.Array, mask: jax.Array) -> jax.Array:
  """Length of the common prefix of every pair of responses.

  Args:
    tokens: i32[N, T]; mask: bool[N, T] real tokens (a prefix of each row).

  Returns:
    i32[N, N]; position t counts if both responses have a real, equal token
    at every position up to and including t.
  """
  checks.rank("tokens", tokens, 2)
  checks.same_shape("tokens", tokens, "mask", mask)
  agree = (tokens[:, None, :] == tokens[None, :, :]) & mask[:, None, :] & mask[None, :, :]
  return jnp.sum(jnp.cumprod(agree.astype(jnp.int32), axis=-1), axis=-1)


def branch_point(tokens: jax.Array, mask: jax.Array) -> jax.Array:
  """Mean shared-prefix length over the N(N-1)/2 pairs of responses: f32[].

  Early branching (a small value) means generations part ways near the start;
  for N = 1 the result is 0.
  """
  num_samples = tokens.shape[0]
  lengths = shared_prefix_lengths(tokens, mask).astype(jnp.float32)
  pairs = jnp.triu(jnp.ones((num_samples, num_samples), bool), k=1)
  return jnp.sum(jnp.where(pairs, lengths, 0.0)) / max(num_samples * (num_samples - 1) // 2, 1)


def majority_vote_accuracy(rewards: jax.Array, answers: jax.Array) -> jax.Array:
  """Majority-vote accuracy of one group: the reward of its most common answer.

  Args:
    rewards: f32[N]; answers: i32[N] answer ids, -1 for no answer (no vote).

  Returns:
    f32[]: the reward of the majority answer, ties averaged, 0 without votes
    (`objectives.majority_vote_reward`).
  """
  checks.rank("rewards", rewards, 1)
  checks.integer("answers", answers)
  checks.same_shape("rewards", rewards, "answers", answers)
  return objectives.majority_vote_reward(rewards, answers)


def top_answer_share(answers: jax.Array) -> jax.Array:
  """Share of the N generations that voted for the most common answer: f32[].

  Args:
    answers: i32[N] answer ids, -1 for no answer (no vote; counts in N).
  """
  checks.rank("answers", answers, 1)
  checks.integer("answers", answers)
  votes = answers >= 0
  counts = jnp.sum((answers[:, None] == answers[None, :]) & votes[None, :], -1)
  top = jnp.max(jnp.where(votes, counts, 0))
  return top.astype(jnp.float32) / answers.shape[0]


def family_labels(labels, strategy_families) -> jnp.ndarray:
  """i32[...]: each strategy label replaced by its family's index (DEGENERATE kept).

  Families are numbered in sorted order of their names. labels: i32[...];
  strategy_families: the family of each strategy (K strings, static under jit).
  """
  names = sorted(set(strategy_families))
  family_of = jnp.asarray([names.index(f) for f in strategy_families], jnp.int32)
  labels = jnp.asarray(labels)
  return jnp.where(labels == DEGENERATE, DEGENERATE, family_of[jnp.maximum(labels, 0)])


def rollout_metrics(rewards: jax.Array, labels: jax.Array, logprobs: jax.Array,
                    mask: jax.Array, strategy_families) -> dict:
  """What a train step logs of its rollouts: B prompts' groups of N.

  Args:
    rewards: f32[B, N]; labels: i32[B, N] (DEGENERATE for none).
    logprobs: f32[B * N, T], the sampled tokens' log-probs; mask: bool[B * N, T].
    strategy_families: the family of each of the K strategies (static).

  Returns:
    {name: f32[]} means over the step (reward, pass_at_1, pass_at_n,
    distinct_strategies, distinct_correct_strategies, distinct_correct_families,
    decoy_mass, entropy, response_length) and the shares strategy_share
    f32[K + 1] (the last entry: DEGENERATE) and correct_strategy_share f32[K].
  """
  B, N = rewards.shape
  num_strategies = len(strategy_families)
  counts = jax.vmap(lambda l: strategy_counts(l, num_strategies))(labels)
  correct_counts = jax.vmap(lambda l: strategy_counts(l, num_strategies))(
      correct_labels(rewards, labels))
  family = family_labels(labels, strategy_families)
  return dict(
      reward=jnp.mean(rewards),
      pass_at_1=jnp.mean(rewards > 0),
      pass_at_n=jnp.mean(jnp.any(rewards > 0, axis=1)),
      distinct_strategies=jnp.mean(jax.vmap(distinct_strategies)(labels)),
      distinct_correct_strategies=jnp.mean(
          jax.vmap(distinct_correct_strategies)(rewards, labels)),
      distinct_correct_families=jnp.mean(
          jax.vmap(distinct_correct_strategies)(rewards, family)),
      strategy_share=jnp.sum(counts, 0) / (B * N),
      # Share of rollouts that are correct and follow each strategy (the last
      # entry, correct DEGENERATE responses, is left out: it is no strategy).
      correct_strategy_share=jnp.sum(correct_counts, 0)[:num_strategies] / (B * N),
      decoy_mass=jnp.mean(jax.vmap(decoy_mass)(rewards, labels)),
      # Mean -log p of the sampled tokens: an unbiased estimate of the per-token
      # entropy of the sampling distribution.
      entropy=-jnp.sum(logprobs) / jnp.maximum(jnp.sum(mask), 1),
      response_length=jnp.mean(jnp.sum(mask, -1)),
  )
