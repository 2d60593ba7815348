"""Held-out problems: no exercise of `validation`, `test` or `ood` is ever trained on.

An *exercise* is a class of problems a model could answer from one another: the
env's `canonical_form`, closed under every symmetry a strategy can exploit
(multiplication: the product, so a * b shares its class with b * a, with
(a/2) * (2b) and with every other pair of the same product; polynomial roots:
the root multiset with a cubic's zero root removed and the mirror p(-x) folded
in, whatever the leading coefficient). Every problem falls in one of
`NUM_BUCKETS` buckets by a hash of its exercise; `BUCKETS` names the buckets of
`validation` and `test`.

`ood` is other exercises than `test`, in a shift each domain names: an env
that defines `beyond_training(problems)` (multiplication: products no pair
inside the training region has; polynomial roots: a root beyond the training
range) owns its `ood` exercises, which are then out of every other split; for
any other env `ood` is its own bucket (`OOD_BUCKET`), drawn from `ood_params`.
`train` is everything else: pretraining and RL draw from it only.

  problems = splits.sample(env, key, env.default_params(), 256)           # train
  problems = splits.distinct(env, key, env.default_params(), 256, "test")  # 256 exercises

An env whose problem space is too small to split (`env.hold_out` False, e.g. a
four-problem test env) trains and evaluates on all of it.
"""

import jax
import jax.numpy as jnp
import numpy as np

NUM_BUCKETS = 8
BUCKETS = {"validation": (0, 1), "test": (2, 3)}
OOD_BUCKET = 4
"""`ood`'s bucket, for an env that does not own its `ood` exercises (`owns_ood`)."""
SPLITS = ("train", "validation", "test", "ood")
EVAL_SPLITS = SPLITS[1:]  # evaluated, each a TFDS split of fixed exercises (envs.datasets)
MAX_ROUNDS = 256
"""Rejection rounds of `sample`: a draw (acceptance at least about 1/4 for these
splits) is still outside its split after them with probability (3/4)^256 ~ 1e-32."""
SCHEME = "class"
"""How problems fall into splits (by a hash of `Env.canonical_form`, `ood` apart),
recorded in every run's and base model's config: a run or a cached base model
made under another scheme, which trained on other problems, is never resumed or
reused."""

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


def owns_ood(env) -> bool:
  """Whether `env` names its `ood` exercises itself (`env.beyond_training`)."""
  return callable(getattr(env, "beyond_training", None))


def _held_buckets(env):
  """The buckets training never draws from."""
  held = BUCKETS["validation"] + BUCKETS["test"]
  return held if owns_ood(env) else held + (OOD_BUCKET,)


def in_split(env, problems, split: str) -> jax.Array:
  """bool[B]: which problems' exercises belong to `split`.

  Every exercise is in exactly one split (whether a problem is drawn from the
  ood shift is the params', not the split's, to say): `ood`, for an env that
  owns it, is `env.beyond_training`, and those exercises are in no other split;
  otherwise `OOD_BUCKET`. jit- and vmap-able.
  """
  check_split(split)
  owns = owns_ood(env)
  if split == "ood":
    return env.beyond_training(problems) if owns else bucket(env, problems) == OOD_BUCKET
  b = bucket(env, problems)
  inside = ~env.beyond_training(problems) if owns else jnp.ones(b.shape, bool)
  if split == "train":
    return inside & ~jnp.isin(b, jnp.asarray(_held_buckets(env)))
  return inside & jnp.isin(b, jnp.asarray(BUCKETS[split]))


def check_split(split: str) -> None:
  if split not in SPLITS:
    raise ValueError(f"Unknown split {split!r}; valid choices: {', '.join(SPLITS)}.")


def sample(env, key: jax.Array, params, batch_size: int, split: str = "train"):
  """`batch_size` problems of `split`, drawn from `params`' distribution.

  Rejection sampling in a `lax.while_loop`: rows outside the split are redrawn
  until none is left (at most `MAX_ROUNDS` rounds), so the result is the
  distribution of `params` conditioned on the split's exercises; draws are
  independent, so an exercise may repeat (`distinct` draws without
  replacement). jit- and vmap-able. Envs with `hold_out` False are drawn as is.

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


def form_rows(env, problems) -> np.ndarray:
  """i64[B, W]: each problem's exercise (`env.canonical_form`), every leaf's
  numbers side by side: equal rows, one exercise."""
  forms = jax.tree.leaves(env.canonical_form(problems))
  return np.concatenate([np.asarray(x).reshape(np.shape(x)[0], -1) for x in forms],
                        axis=1).astype(np.int64)


def distinct(env, key: jax.Array, params, size: int, split: str, max_rounds: int = 64):
  """`size` problems of `split`, one per exercise: drawn without replacement.

  Batches of `sample(env, ., params, size, split)` are drawn until `size`
  exercises have appeared; each exercise keeps the problem it first appeared
  with, in order of first appearance (so an exercise with more problems under
  `params` is more likely to be among them, and every one is drawn at most
  once). Runs on the host (numpy), once per eval split. Envs with `hold_out`
  False are drawn as `sample` draws them.

  Returns:
    A numpy problems pytree with leading axis `size`.

  Raises:
    RuntimeError: if fewer than `size` exercises of `split` appeared in
      `max_rounds` batches, naming how many did (the split is too small).
  """
  check_split(split)
  if not env.hold_out:
    return jax.tree.map(np.asarray, sample(env, key, params, size, split))
  draw = jax.jit(lambda k: sample(env, k, params, size, split))
  batches, seen = [], set()
  for r in range(max_rounds):
    batch = jax.tree.map(np.asarray, draw(jax.random.fold_in(key, r)))
    batches.append(batch)
    seen.update(map(tuple, form_rows(env, batch).tolist()))
    if len(seen) >= size:
      break
  else:
    raise RuntimeError(
        f"Only {len(seen)} distinct exercises of split {split!r} in {max_rounds} batches of "
        f"{size} draws from {type(env).__name__}; {size} asked for: the split is too small "
        "(widen the problem space, or name the ood exercises with env.beyond_training).")
  problems = jax.tree.map(lambda *xs: np.concatenate(xs), *batches)
  _, first = np.unique(form_rows(env, problems), axis=0, return_index=True)
  return jax.tree.map(lambda x: x[np.sort(first)[:size]], problems)
