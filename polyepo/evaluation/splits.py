"""Held-out problems: no exercise of `validation`, `test` or `ood` is ever trained on.

Every problem falls in one of `NUM_BUCKETS` buckets by a hash of its exercise,
the env's `canonical_form` (multiplication: the unordered pair, so a * b and
b * a share a bucket; polynomial roots: the root multiset, whatever the leading
coefficient); bucket 0 is `validation`, bucket 1 is `test`, the rest is `train`.
Pretraining and RL draw their problems from `train` only, the eval splits from
their own bucket, so no problem of an evaluated exercise is ever seen in
training, in any surface form, whatever the size of the problem space. `ood`
problems come from the env's `ood_params`, a shift each domain names and
`envs.testing.check_env` checks, restricted to the `test` exercises: never
trained on, never used to choose a setting.

  problems = splits.sample(env, key, env.default_params(), 256)          # train
  problems = splits.sample(env, key, env.default_params(), 128, "test")  # held out

An env whose problem space is too small to split (`env.hold_out` False, e.g. a
four-problem test env) trains and evaluates on all of it.
"""

import jax
import jax.numpy as jnp

NUM_BUCKETS = 8
BUCKETS = {"validation": 0, "test": 1, "ood": 1}  # ood: the test exercises, shifted
SPLITS = ("train", "validation", "test", "ood")
EVAL_SPLITS = SPLITS[1:]  # evaluated, each a TFDS split of fixed problems (envs.datasets)
MAX_ROUNDS = 256
"""Rejection rounds: a train draw (acceptance 3/4) is still held out after them
with probability 4^-256, an eval-split draw (1/8) with (7/8)^256 ~ 1e-15."""
SCHEME = "exercise"
"""How problems fall into splits (by a hash of `Env.canonical_form`), recorded
in every run's and base model's config: a run or a cached base model made under
another scheme, which trained on other problems, is never resumed or reused."""

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


def problem_hash(tree) -> jax.Array:
  """u32[B]: a hash of each row's numbers (every leaf of a pytree with leading axis B).

  Equal rows hash equally in any batch, on any machine; the hash depends on
  the values only (not on the batch, the key or the order of rows).
  """
  leaves = jax.tree.leaves(tree)
  batch_size = leaves[0].shape[0]
  words = jnp.concatenate([_words(leaf, batch_size) for leaf in leaves], axis=1)
  h = jnp.full((batch_size,), _SALT, jnp.uint32)
  for i in range(words.shape[1]):
    h = _fmix32(h ^ words[:, i]) * jnp.uint32(0x01000193)
  return _fmix32(h)


def bucket(env, problems) -> jax.Array:
  """i32[B]: each problem's bucket in [0, NUM_BUCKETS), a hash of its exercise
  (`env.canonical_form`): every problem of an exercise has the same bucket."""
  return (problem_hash(env.canonical_form(problems)) % NUM_BUCKETS).astype(jnp.int32)


def in_split(env, problems, split: str) -> jax.Array:
  """bool[B]: which problems' exercises belong to `split`.

  "train" is every bucket but validation's and test's; "ood" is test's bucket
  (whether a problem is drawn from the ood shift is the params', not the
  bucket's, to say).
  """
  check_split(split)
  b = bucket(env, problems)
  if split == "train":
    return b > max(BUCKETS.values())
  return b == BUCKETS[split]


def check_split(split: str) -> None:
  if split not in SPLITS:
    raise ValueError(f"Unknown split {split!r}; valid choices: {', '.join(SPLITS)}.")


def sample(env, key: jax.Array, params, batch_size: int, split: str = "train"):
  """`batch_size` problems of `split`, drawn from `params`' distribution.

  Rejection sampling in a `lax.while_loop`: rows outside the split are redrawn
  until none is left (at most `MAX_ROUNDS` rounds), so the result is the
  distribution of `params` conditioned on the split's exercises. jit- and
  vmap-able. Envs with `hold_out` False are drawn as is.

  Args:
    env: a `polyepo.env_api.Env`.
    key: PRNG key.
    params: the env's params (default_params for train/validation/test,
      ood_params for ood).
    batch_size: B.
    split: "train", "validation", "test" or "ood".

  Returns:
    A problems pytree with leading axis B.
  """
  check_split(split)
  first = env.sample_problems(jax.random.fold_in(key, 0), params, batch_size)
  if not env.hold_out:
    return first

  def redraw(carry):
    i, problems = carry
    fresh = env.sample_problems(jax.random.fold_in(key, i), params, batch_size)
    keep = in_split(env, problems, split)
    return i + 1, jax.tree.map(
        lambda old, new: jnp.where(keep.reshape((-1,) + (1,) * (old.ndim - 1)), old, new),
        problems, fresh)

  def pending(carry):
    i, problems = carry
    return (i <= MAX_ROUNDS) & ~jnp.all(in_split(env, problems, split))

  _, problems = jax.lax.while_loop(pending, redraw, (jnp.int32(1), first))
  return problems
