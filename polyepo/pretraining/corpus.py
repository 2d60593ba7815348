"""The pretraining corpus, and the cuts that read only its trained tokens.

Demonstrations are generated on the fly inside the jitted step (`corpus_batch`):
training problems from the environment (`polyepo.splits`: never an eval
problem), a strategy per problem from the stage's mixture restricted to the
strategies that apply, and the environment's demonstration of it; `part` picks
the tokens of each response that a stage of `polyepo.pretrain` trains on.

A step reads each micro-batch's responses only as far as its last trained token
(`part_value_and_grad`, cut to a multiple of LENGTH_STEP), with rows of similar
length grouped into the same micro-batch (`length_order`, `num_microbatches`).
"""

import math
from typing import Sequence, Tuple

import jax
import jax.numpy as jnp

from polyepo import accumulation
from polyepo.evaluation import forced, splits
from polyepo.policy import model as model_lib


def response_mask(tokens: jax.Array, eos_id: int) -> jax.Array:
  """bool[B, T]: tokens up to and including the first EOS (all, if none)."""
  is_eos = tokens == eos_id
  return (jnp.cumsum(is_eos, axis=1) - is_eos) == 0


PARTS = ("all", "opening", "continuation")


def corpus_batch(env, env_params, key: jax.Array, batch_size: int,
                 mixture: Sequence[float], slip_rate: float, part: str = "all"):
  """A batch of demonstrations of training problems.

  A problem none of whose applicable strategies has weight gets no demonstration
  (its mask row is all False), so it adds nothing to the loss.

  Args:
    env, env_params: the environment and the params of its training problems.
    key: PRNG key.
    batch_size: B.
    mixture: unnormalised weight per strategy.
    slip_rate: probability of a slip per demonstration.
    part: which tokens of each response the mask keeps: "all" (up to EOS),
      "opening" (`forced.openings`; a strategy without a usable opening on
      that problem gets no loss) or "continuation" (after the opening; all of
      the response where there is no usable opening).

  Returns:
    (prompts i32[B, P], responses i32[B, T], mask bool[B, T], strategies i32[B]).
  """
  problem_key, strategy_key, demo_key = jax.random.split(key, 3)
  problems = splits.sample(env, problem_key, env_params, batch_size)  # train split
  applicable = env.applicable(problems)
  weights = jnp.asarray(mixture, jnp.float32)
  allowed = applicable & (weights[None, :] > 0)
  logits = jnp.where(allowed, jnp.log(jnp.maximum(weights, 1e-30))[None, :], -jnp.inf)
  strategies = jax.random.categorical(strategy_key, logits, axis=-1).astype(jnp.int32)
  responses, ok = env.demonstrate(demo_key, problems, strategies, slip_rate=slip_rate)
  mask = response_mask(responses, env.eos_id) & (ok & jnp.any(allowed, axis=-1))[:, None]
  if part not in PARTS:
    raise ValueError(f"part={part!r}; valid choices: {', '.join(PARTS)}.")
  if part != "all":
    found = forced.openings(env, problems)
    rows = jnp.arange(batch_size)
    length = jnp.where(found.usable[rows, strategies], found.length[rows, strategies], 0)
    in_opening = jnp.arange(responses.shape[1]) < length[:, None]
    mask &= in_opening if part == "opening" else ~in_opening
  return env.prompt_tokens(problems), responses, mask, strategies


# A micro-batch's responses are cut after the first multiple of LENGTH_STEP
# tokens that holds every token it trains on (`part_value_and_grad`).
LENGTH_STEP = 8


def trained_ends(mask: jax.Array) -> jax.Array:
  """i32[B]: one past each row's last trained token (0 for none); mask bool[B, T]."""
  return jnp.max(jnp.where(mask, jnp.arange(1, mask.shape[1] + 1), 0), axis=1)


def cut_lengths(num_tokens: int) -> Tuple[int, ...]:
  """The lengths a response of T = num_tokens tokens may be cut to: the
  multiples of LENGTH_STEP below T, then T."""
  return tuple(range(LENGTH_STEP, num_tokens, LENGTH_STEP)) + (num_tokens,)


def part_value_and_grad(params, model_config: model_lib.TransformerConfig, prompts: jax.Array,
                        responses: jax.Array, mask: jax.Array, count: jax.Array, eos_id: int):
  """One part's loss, its token probability and the loss's gradient, reading
  only the tokens the trained ones depend on.

    loss = -sum(logp[mask]) / count,   token_prob = sum(exp(logp[mask])) / count

  where logp[b, t] = log pi(responses[b, t] | prompt b, responses[b, :t]) and the
  model reads each response up to its EOS. A token's log-probability depends
  only on the tokens before it (causal attention; positions count the real
  tokens before), so the responses are cut after the part's last trained token,
  rounded up to a multiple of LENGTH_STEP: one compiled forward and backward per
  length, picked at run time by `lax.switch` (outside the differentiation, so a
  branch keeps only its own activations). The same numbers as reading all T
  tokens, to float rounding, for the work of the cut.

  Args:
    params: model parameters.
    model_config: the model's TransformerConfig.
    prompts: i32[B, P], left-padded.
    responses: i32[B, T].
    mask: bool[B, T], the tokens trained on.
    count: the divisor (the whole batch's trained tokens of this part, when the
      part is a micro-batch).
    eos_id: the end-of-sequence token.

  Returns:
    ((loss, token_prob), grads), as `jax.value_and_grad(..., has_aux=True)`.
  """
  lengths = cut_lengths(responses.shape[1])
  real = response_mask(responses, eos_id)

  def cut(length):
    def loss_fn(params):
      kept = mask[:, :length]
      logp = jnp.where(kept, model_lib.sequence_logprobs(
          params, model_config, prompts, responses[:, :length], real[:, :length]), 0.0)
      return -jnp.sum(logp) / count, jnp.sum(jnp.where(kept, jnp.exp(logp), 0.0)) / count
    return jax.value_and_grad(loss_fn, has_aux=True)

  branch = jnp.searchsorted(jnp.asarray(lengths), jnp.max(trained_ends(mask)))
  return jax.lax.switch(branch, [cut(length) for length in lengths], params)


def length_order(mask: jax.Array, num_micro: int) -> jax.Array:
  """i32[B]: the row order that groups rows of similar trained length.

  Rows are ranked by the end of their trained tokens (last True of `mask`), and
  micro-batch c of `polyepo.accumulation.accumulate` (rows c, c + C, ... of the
  reordered batch) gets ranks c * B / C .. (c + 1) * B / C - 1, so that each
  micro-batch's cut (`part_value_and_grad`) is as short as its own rows allow.

  Args:
    mask: bool[B, T], the tokens trained on; C = num_micro divides B.
  """
  ranks = jnp.argsort(trained_ends(mask), stable=True)
  return ranks.reshape(num_micro, -1).T.reshape(-1)


# Demonstrations per micro-batch on a CPU when none is asked for
# (microbatch_rows=0): 32, where the RL update takes 16. A pretraining step
# cuts each micro-batch's responses after its last trained token, so its
# micro-batches are shorter (the preference stage's openings most of all) and
# 32 rows still fit the caches, in half as many loop iterations (timings:
# docs/performance.md).
CPU_MICROBATCH_ROWS = 32


def num_microbatches(part_rows: Sequence[int], microbatch_rows: int) -> int:
  """The fewest micro-batches C that divide every part's rows and hold at most
  `microbatch_rows` rows in all (the most that divide them all, if none is
  that small); microbatch_rows 0 is `polyepo.accumulation.default_microbatch_rows`
  with CPU_MICROBATCH_ROWS on a CPU. A micro-batch takes 1 / C of each part.

  The parts' rows are gcd(part_rows) groups of sum / gcd rows each (a group
  takes the same share of every part), split as the RL update splits its
  groups (`polyepo.accumulation.microbatch_groups`).
  """
  groups = math.gcd(*part_rows)
  per_micro = accumulation.microbatch_groups(microbatch_rows, groups, sum(part_rows) // groups,
                                          CPU_MICROBATCH_ROWS)
  return groups // per_micro
