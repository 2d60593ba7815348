"""Forced-strategy accuracy: how well the policy carries out a strategy it is made to start.

A base model may know a strategy and still rarely choose it. To measure the
knowing apart from the choosing, each strategy's demonstration of a problem is
teacher-forced up to its *opening*, the shortest prefix that no other
applicable strategy's demonstration of that problem shares, and the policy
completes the response:

  forced accuracy of s = P(the response is correct and labelled s | the opening of s)

over problems where s applies. A correct response that drifts into another
strategy does not count for s. The opening is defined by the demonstrations
alone, so it is the same for every env: the prefix at which the strategies'
traces part ways (`openings`).

  accuracy = forced_accuracy(params, model_config, env, problems, key)
  # {"long_by_b": 0.81, ..., "karatsuba": 0.34}; None where s never applies
"""

import dataclasses
import functools
from typing import Dict, NamedTuple, Optional

import jax
import jax.numpy as jnp
import numpy as np

from polyepo.policy import sampling


class Openings(NamedTuple):
  """Every strategy's slip-free demonstration of B problems and its opening.

  Attributes:
    demos: i32[B, S, T], the demonstrations (PAD where s does not apply).
    length: i32[B, S], the opening's length in tokens.
    usable: bool[B, S], s applies and its opening is shorter than its whole
      demonstration (two strategies with identical traces have no opening).
  """
  demos: jax.Array
  length: jax.Array
  usable: jax.Array


def openings(env, problems) -> Openings:
  """The opening of every strategy on every problem (see the module docstring).

  The opening of s is one token longer than the longest common prefix of its
  demonstration with any other applicable strategy's (the first token that
  tells s apart). Jittable.
  """
  num_problems = jax.tree.leaves(problems)[0].shape[0]
  num_strategies = len(env.strategy_names)
  repeated = jax.tree.map(lambda x: jnp.repeat(x, num_strategies, axis=0), problems)
  ids = jnp.tile(jnp.arange(num_strategies, dtype=jnp.int32), num_problems)
  demos, ok = env.demonstrate(jax.random.key(0), repeated, ids, slip_rate=0.0)
  demos = demos.reshape(num_problems, num_strategies, -1)
  ok = ok.reshape(num_problems, num_strategies)
  real = demos != env.pad_id
  agree = (demos[:, :, None, :] == demos[:, None, :, :]) & real[:, :, None, :]  # [B, S, S, T]
  common = jnp.sum(jnp.cumprod(agree, axis=-1), axis=-1)                         # [B, S, S]
  others = ok[:, None, :] & ~jnp.eye(num_strategies, dtype=bool)[None]
  length = jnp.max(jnp.where(others, common, 0), axis=-1) + 1
  usable = ok & (length < jnp.sum(real, axis=-1))
  return Openings(demos, length.astype(jnp.int32), usable)


def forced_prompts(prompts: jax.Array, opening: jax.Array, length: jax.Array,
                   pad_id: int) -> jax.Array:
  """The prompt followed by the opening's first `length` tokens, left-padded.

  Args:
    prompts: i32[B, P], left-padded; opening: i32[B, T]; length: i32[B].

  Returns:
    i32[B, P + T]: pads first, then the prompt's and the opening's real tokens.
  """
  tokens = jnp.concatenate([prompts, jnp.where(
      jnp.arange(opening.shape[1]) < length[:, None], opening, pad_id)], axis=1)
  order = jnp.argsort(tokens != pad_id, axis=1, stable=True)
  return jnp.take_along_axis(tokens, order, axis=1)


def complete(opening: jax.Array, length: jax.Array, continuation: jax.Array) -> jax.Array:
  """i32[B, T]: the opening's first `length` tokens, then the continuation,
  cut to T tokens (the response budget)."""
  t = jnp.arange(opening.shape[1])
  shifted = jnp.take_along_axis(continuation, jnp.maximum(t - length[:, None], 0), axis=1)
  return jnp.where(t < length[:, None], opening, shifted)


@functools.partial(jax.jit, static_argnums=(1, 2, 5, 8))
def _forced_chunk(params, model_config, env, problems, strategy_ids, num_samples, key,
                  temperature, width):
  """Correct-and-followed indicator of `num_samples` forced completions: f32[B, K].

  `width` (static) bounds the openings' lengths; the completions are sampled
  for the full budget T and cut to T - length tokens, so the cache holds
  P + width + T positions (beyond the model's max_len P + T only in tokens that
  are cut away).
  """
  found = openings(env, problems)
  rows = jnp.arange(strategy_ids.shape[0])
  opening = found.demos[rows, strategy_ids]
  length = found.length[rows, strategy_ids]
  prompts = forced_prompts(env.prompt_tokens(problems), opening[:, :width], length, env.pad_id)
  model_config = dataclasses.replace(model_config,
                                     max_len=prompts.shape[1] + env.max_response_len)
  rollout = sampling.sample(params, model_config, key, prompts,
                            max_new_tokens=env.max_response_len, temperature=temperature,
                            samples_per_prompt=num_samples)
  repeat = lambda x: jnp.repeat(x, num_samples, axis=0)
  responses = complete(repeat(opening), repeat(length), rollout.tokens)
  reward, label = env.score(jax.tree.map(repeat, problems), responses)
  hit = (reward > 0) & (label == repeat(strategy_ids))
  return hit.reshape(-1, num_samples).astype(jnp.float32)


def forced_accuracy(params, model_config, env, problems, key, *, num_problems: int = 16,
                    num_samples: int = 8, temperature: float = 1.0,
                    ) -> Dict[str, Optional[float]]:
  """Each strategy's forced accuracy on (up to) `num_problems` problems where it applies.

  For each strategy, the first `num_problems` problems of `problems` whose
  opening of it is usable are forced, `num_samples` completions each; all
  strategies run in one compiled call.

  Args:
    params, model_config: the policy.
    env: a `polyepo.env_api.Env`.
    problems: a pytree with leading axis P (e.g. an eval split), host arrays.
    key: PRNG key.
    num_problems: problems per strategy.
    num_samples: completions per (problem, strategy).
    temperature: sampling temperature of the completions.

  Returns:
    {strategy name: mean correct-and-followed rate, None if it applies to no
    problem}.
  """
  found = jax.jit(lambda p: openings(env, p)[1:])(problems)
  length, usable = np.asarray(found[0]), np.asarray(found[1])  # [P, S]
  rows, ids = [], []
  for s in range(usable.shape[1]):
    chosen = np.flatnonzero(usable[:, s])[:num_problems]
    rows.extend(chosen.tolist())
    ids.extend([s] * len(chosen))
  names = env.strategy_names
  if not rows:
    return {name: None for name in names}
  # Pad to a fixed shape (S * num_problems rows) so every call compiles once.
  total = usable.shape[1] * num_problems
  valid = np.arange(total) < len(rows)
  rows = np.asarray(rows + [rows[-1]] * (total - len(rows)))
  ids = np.asarray(ids + [ids[-1]] * (total - len(ids)), np.int32)
  chosen = jax.tree.map(lambda x: np.asarray(x)[rows], problems)
  width = int(-(-length[rows, ids].max() // 8) * 8)  # few distinct shapes to compile
  hit = np.asarray(_forced_chunk(params, model_config, env, chosen, jnp.asarray(ids),
                                 num_samples, key, temperature, width))
  out = {}
  for s, name in enumerate(names):
    mine = valid & (ids == s)
    out[name] = float(hit[mine].mean()) if mine.any() else None
  return out
