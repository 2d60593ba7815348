"""Held-out problems: the `validation` and `test` problems are never trained on.

Every problem falls in one of `NUM_BUCKETS` buckets by a hash of its numbers;
bucket 0 is `validation`, bucket 1 is `test`, the rest is `train`. Pretraining
and RL draw their problems from `train` only, the eval splits from their own
bucket, so no evaluation problem is ever seen in training, whatever the size of
the problem space. `ood` problems come from the env's `ood_params`, whose
support is disjoint from the training distribution's by construction (a shift
each domain names and `envs.testing.check_env` checks); they are not bucketed.

  problems = splits.sample(env, key, env.default_params(), 256)          # train
  problems = splits.sample(env, key, env.default_params(), 128, "test")  # held out

An env whose problem space is too small to split (`env.hold_out` False, e.g. a
four-problem test env) trains and evaluates on all of it.
"""

import jax
import jax.numpy as jnp

NUM_BUCKETS = 8
BUCKETS = {"validation": 0, "test": 1}
SPLITS = ("train", "validation", "test", "ood")
EVAL_SPLITS = SPLITS[1:]  # evaluated, each a TFDS split of fixed problems (envs.datasets)
MAX_ROUNDS = 256
"""Rejection rounds: a train draw (acceptance 3/4) is still held out after them
with probability 4^-256, an eval-split draw (1/8) with (7/8)^256 ~ 1e-15."""

_SALT = 0x9E3779B9


def _words(leaf, batch_size: int) -> jax.Array:
  """u32[B, W]: one leaf's numbers per problem, as 32-bit words."""
  leaf = jnp.asarray(leaf)
  leaf = leaf.astype(jnp.float32 if jnp.issubdtype(leaf.dtype, jnp.floating) else jnp.int32)
  return jax.lax.bitcast_convert_type(leaf, jnp.uint32).reshape(batch_size, -1)


def _fmix32(h: jax.Array) -> jax.Array:
  """MurmurHash3's 32-bit finaliser (full avalanche)."""
  h = h ^ (h >> 16)
  h = h * jnp.uint32(0x85EBCA6B)
  h = h ^ (h >> 13)
  h = h * jnp.uint32(0xC2B2AE35)
  return h ^ (h >> 16)


def problem_hash(problems) -> jax.Array:
  """u32[B]: a hash of each problem's numbers (every leaf of the pytree).

  Equal problems hash equally in any batch, on any machine; the hash depends on
  the values only (not on the batch, the key or the order of problems).
  """
  leaves = jax.tree.leaves(problems)
  batch_size = leaves[0].shape[0]
  words = jnp.concatenate([_words(leaf, batch_size) for leaf in leaves], axis=1)
  h = jnp.full((batch_size,), _SALT, jnp.uint32)
  for i in range(words.shape[1]):
    h = _fmix32(h ^ words[:, i]) * jnp.uint32(0x01000193)
  return _fmix32(h)


def bucket(problems) -> jax.Array:
  """i32[B]: each problem's bucket in [0, NUM_BUCKETS)."""
  return (problem_hash(problems) % NUM_BUCKETS).astype(jnp.int32)


def in_split(problems, split: str) -> jax.Array:
  """bool[B]: which problems belong to `split` ("train", "validation" or "test")."""
  b = bucket(problems)
  if split == "train":
    return b >= len(BUCKETS)
  return b == BUCKETS[split]


def check_split(split: str) -> None:
  if split not in SPLITS:
    raise ValueError(f"Unknown split {split!r}; valid choices: {', '.join(SPLITS)}.")


def sample(env, key: jax.Array, params, batch_size: int, split: str = "train"):
  """`batch_size` problems of `split`, drawn from `params`' distribution.

  Rejection sampling in a `lax.while_loop`: rows outside the split are redrawn
  until none is left (at most `MAX_ROUNDS` rounds), so the result is the
  distribution of `params` conditioned on the split. jit- and vmap-able. "ood"
  and envs with `hold_out` False are drawn as is.

  Args:
    env: a `polyepo.env_api.Env`.
    key: PRNG key.
    params: the env's params (default_params for train/validation/test).
    batch_size: B.
    split: "train", "validation", "test" or "ood".

  Returns:
    A problems pytree with leading axis B.
  """
  check_split(split)
  first = env.sample_problems(jax.random.fold_in(key, 0), params, batch_size)
  if split == "ood" or not env.hold_out:
    return first

  def redraw(carry):
    i, problems = carry
    fresh = env.sample_problems(jax.random.fold_in(key, i), params, batch_size)
    keep = in_split(problems, split)
    return i + 1, jax.tree.map(
        lambda old, new: jnp.where(keep.reshape((-1,) + (1,) * (old.ndim - 1)), old, new),
        problems, fresh)

  def pending(carry):
    i, problems = carry
    return (i <= MAX_ROUNDS) & ~jnp.all(in_split(problems, split))

  _, problems = jax.lax.while_loop(pending, redraw, (jnp.int32(1), first))
  return problems
