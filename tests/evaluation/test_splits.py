"""Tests for polyepo.splits: evaluation exercises held out of training by class.

The leak tests enumerate each domain's training distribution and build every
related form of an exercise by hand (every pair of one product; the same roots
under every leading coefficient, mirrored, with or without a zero root),
independently of `Env.canonical_form`, and count the held-out problems whose
class is trained on in another form (none), beside the previous schemes' leaks.
"""

import collections
import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import envs
from envs.multiplication import problems as multiplication_problems
from envs.polynomial_roots import problems as roots_problems
from polyepo.evaluation import splits
import addition_env
import toy_env


def _pairs(p):
  return list(zip(np.asarray(p.a).tolist(), np.asarray(p.b).tolist()))


def test_hash_depends_on_the_problem_only():
  env, params = envs.make("multiplication")
  problems = env.sample_problems(jax.random.key(0), params, 64)
  h = np.asarray(splits.problem_hash(problems))
  perm = np.random.default_rng(0).permutation(64)
  shuffled = jax.tree.map(lambda x: x[perm], problems)
  np.testing.assert_array_equal(np.asarray(splits.problem_hash(shuffled)), h[perm])
  np.testing.assert_array_equal(np.asarray(jax.jit(splits.problem_hash)(problems)), h)
  # Equal problems hash equally, different ones (almost always) differently.
  by_pair = collections.defaultdict(set)
  for pair, value in zip(_pairs(problems), h.tolist()):
    by_pair[pair].add(value)
  assert all(len(v) == 1 for v in by_pair.values())
  assert len(set(h.tolist())) == len(by_pair)


def test_negative_and_float_leaves_hash():
  """Signed numbers (polynomial coefficients) and floats are hashed bit for bit."""
  a = {"x": jnp.array([-1, 1, 0], jnp.int32), "y": jnp.array([0.5, 0.5, -0.0], jnp.float32)}
  h = np.asarray(splits.problem_hash(a))
  assert len(set(h.tolist())) == 3


def test_buckets_are_balanced_over_a_whole_problem_space():
  """Every 2 x 2 multiplication exercise (a product): each bucket holds about
  1/8 of them."""
  a, b = np.triu_indices(100)
  keep = a >= 10
  problems = envs.multiplication.MultiplicationProblems(
      jnp.asarray(a[keep], jnp.int32), jnp.asarray(b[keep], jnp.int32))
  env, _ = envs.make("multiplication")
  products, first = np.unique(a[keep] * b[keep], return_index=True)
  one_each = jax.tree.map(lambda x: x[first], problems)
  counts = np.bincount(np.asarray(splits.bucket(env, one_each)), minlength=splits.NUM_BUCKETS)
  expected = len(products) / splits.NUM_BUCKETS
  assert np.all(np.abs(counts - expected) < 4 * np.sqrt(expected)), counts


def _multiplication_training_space():
  """Every 2 x 2 problem of the training distribution: a, b in 10..99, not both
  50 or more (by hand, from MultiplicationParams' docstring)."""
  a, b = (x.ravel() for x in np.meshgrid(np.arange(10, 100), np.arange(10, 100)))
  keep = ~((a >= 50) & (b >= 50))
  return multiplication_problems.MultiplicationProblems(
      jnp.asarray(a[keep], jnp.int32), jnp.asarray(b[keep], jnp.int32))


def _roots_problem(degree, roots, lead):
  """(coeffs i32[4] ascending, roots i32[3]) of lead * prod (x - r), by numpy."""
  coeffs = np.zeros(4, np.int64)
  coeffs[:degree + 1] = np.round(lead * np.poly(roots))[::-1]
  return coeffs, np.pad(sorted(roots), (0, 3 - degree))


def _roots_related(degree, roots):
  """Every (degree, roots) a model could answer (degree, roots) from, by hand:
  the mirror p(-x), a cubic's zero root removed (x * q(x) is solved by q), and
  the cubic x * q(x) of a quadratic q."""
  roots = tuple(sorted(roots))
  forms = {(degree, roots), (degree, tuple(sorted(-r for r in roots)))}
  if degree == 3 and 0 in roots:
    rest = list(roots)
    rest.remove(0)
    forms |= {(2, tuple(rest)), (2, tuple(sorted(-r for r in rest)))}
  if degree == 2:
    forms |= {(3, tuple(sorted(roots + (0,)))), (3, tuple(sorted(-r for r in roots + (0,))))}
  return forms


def _roots_training_space(max_root=roots_problems.TRAIN_MAX_ROOT):
  """{(degree, roots): [problem per lead 1..3]}: every problem of the training
  distribution (roots in [-12, 12], leading coefficient 1..3)."""
  space = {}
  for degree in (2, 3):
    for roots in itertools.combinations_with_replacement(range(-max_root, max_root + 1), degree):
      space[(degree, roots)] = [_roots_problem(degree, roots, lead) for lead in (1, 2, 3)]
  return space


def _roots_batch(rows):
  """PolynomialProblems from [(degree, (coeffs, roots))]."""
  return roots_problems.PolynomialProblems(
      degree=jnp.asarray([d for d, _ in rows], jnp.int32),
      coeffs=jnp.asarray(np.stack([c for _, (c, _) in rows]), jnp.int32),
      roots=jnp.asarray(np.stack([r for _, (_, r) in rows]), jnp.int32))


def _in_buckets(hashes, split):
  b = np.asarray(hashes % splits.NUM_BUCKETS)
  held = splits.BUCKETS["validation"] + splits.BUCKETS["test"]
  return ~np.isin(b, held) if split == "train" else np.isin(b, splits.BUCKETS[split])


@pytest.mark.parametrize("split", ["validation", "test"])
def test_no_held_out_multiplication_product_is_a_training_product(split):
  env, _ = envs.make("multiplication")
  space = _multiplication_training_space()
  a, b = np.asarray(space.a), np.asarray(space.b)
  held = np.asarray(splits.in_split(env, space, split))
  trained = np.asarray(splits.in_split(env, space, "train"))
  assert held.sum() > 1000  # about 1/4 of the 5,600
  assert not set((a * b)[held]) & set((a * b)[trained])
  # Hashing the unordered pair (the previous scheme) leaks: 40.7% of held-out
  # problems' products are training products (by halve-and-double, or any
  # other pair of one product).
  pair = np.stack([np.minimum(a, b), np.maximum(a, b)], axis=1)
  pair_hash = splits.problem_hash(jnp.asarray(pair, jnp.int32))
  pair_held, pair_trained = _in_buckets(pair_hash, split), _in_buckets(pair_hash, "train")
  leak = np.isin((a * b)[pair_held], (a * b)[pair_trained]).mean()
  assert 0.3 < leak < 0.5, leak


@pytest.mark.parametrize("split", ["validation", "test"])
def test_no_held_out_roots_problem_is_trained_on_in_a_related_form(split):
  env, _ = envs.make("polynomial_roots")
  space = _roots_training_space()
  rows = [(d, problem) for (d, _), problems in space.items() for problem in problems]
  batch = _roots_batch(rows)
  keys = list(space)
  held = np.asarray(splits.in_split(env, batch, split)).reshape(-1, 3)     # [exercise, lead]
  trained = np.asarray(splits.in_split(env, batch, "train")).reshape(-1, 3)
  assert held.sum() > 1500  # about 1/4 of the 7,254
  trained_forms = {keys[i] for i in np.flatnonzero(trained.any(1))}
  leaked = [keys[i] for i in np.flatnonzero(held.any(1))
            if _roots_related(*keys[i]) & trained_forms]
  assert not leaked, leaked[:3]
  # Hashing the root multiset alone (the previous scheme) leaks: most held-out
  # exercises have their mirror or their zero-root twin in training.
  multiset = splits.problem_hash(jnp.asarray([(d,) + r + (0,) * (3 - d) for d, r in keys],
                                             jnp.int32))
  old_held = dict(zip(keys, _in_buckets(multiset, split)))
  old_trained = {k for k, t in zip(keys, _in_buckets(multiset, "train")) if t}
  leak = np.mean([bool(_roots_related(*k) & old_trained) for k, h in old_held.items() if h])
  assert leak > 0.5, leak


@pytest.mark.parametrize("domain", envs.NAMES)
def test_ood_is_beyond_training_and_apart_from_test(domain):
  """`ood` draws (multiplication: both factors 50 or more; polynomial roots: a
  root beyond 12) are exercises training never has, by hand."""
  env, _ = envs.make(domain)
  ood = jax.device_get(splits.sample(env, jax.random.key(5), env.ood_params(), 128, "ood"))
  if domain == "multiplication":
    space = _multiplication_training_space()
    training_products = set((np.asarray(space.a) * np.asarray(space.b)).tolist())
    assert not set((np.asarray(ood.a) * np.asarray(ood.b)).tolist()) & training_products
    assert ((np.asarray(ood.a) >= 50) & (np.asarray(ood.b) >= 50)).all()
  else:
    assert (np.abs(np.asarray(ood.roots)).max(1) > roots_problems.TRAIN_MAX_ROOT).all()
    assert (np.asarray(ood.degree) == 3).all()
  assert not np.asarray(splits.in_split(env, ood, "test")).any()
  assert not np.asarray(splits.in_split(env, ood, "train")).any()


@pytest.mark.parametrize("split", ["train", "validation", "test"])
def test_sample_draws_only_the_split(split):
  env, params = envs.make("multiplication")
  problems = jax.jit(lambda k: splits.sample(env, k, params, 512, split))(jax.random.key(1))
  assert np.asarray(splits.in_split(env, problems, split)).all()
  # By hand: validation is buckets 0 and 1, test 2 and 3, train 4 to 7.
  buckets = set(np.asarray(splits.bucket(env, problems)).tolist())
  assert buckets <= {"validation": {0, 1}, "test": {2, 3}, "train": set(range(4, 8))}[split]
  # Conditioning on the split keeps the distribution's support: every leading
  # digit still occurs.
  lead = np.asarray(problems.a) // 10
  assert set(lead.tolist()) == set(range(1, 10))


class _NoOodOfItsOwn(addition_env.Addition):
  beyond_training = None


def test_an_env_without_beyond_training_has_an_ood_bucket():
  env = _NoOodOfItsOwn()
  problems = splits.sample(env, jax.random.key(0), env.ood_params(), 256, "ood")
  assert set(np.asarray(splits.bucket(env, problems)).tolist()) == {splits.OOD_BUCKET}
  train = splits.sample(env, jax.random.key(1), env.default_params(), 256, "train")
  assert set(np.asarray(splits.bucket(env, train)).tolist()) == {5, 6, 7}


def test_distinct_draws_each_exercise_once_and_deterministically():
  env, params = envs.make("multiplication")
  problems = splits.distinct(env, jax.random.key(3), params, 300, "validation")
  products = np.asarray(problems.a) * np.asarray(problems.b)
  assert len(set(products.tolist())) == 300
  assert np.asarray(splits.in_split(env, problems, "validation")).all()
  again = splits.distinct(env, jax.random.key(3), params, 300, "validation")
  np.testing.assert_array_equal(np.asarray(again.a), np.asarray(problems.a))


def test_distinct_names_how_many_a_small_split_holds():
  env = _NoOodOfItsOwn()  # 70..99 + 70..99: 465 exercises, ~1/8 in ood's bucket
  with pytest.raises(RuntimeError, match=r"Only \d+ distinct exercises of split 'ood'"):
    splits.distinct(env, jax.random.key(0), env.ood_params(), 2000, "ood", max_rounds=4)


@pytest.mark.slow
def test_sample_vmaps_over_keys_and_is_deterministic():
  env, params = envs.make("polynomial_roots")
  keys = jax.random.split(jax.random.key(2), 3)
  batched = jax.vmap(lambda k: splits.sample(env, k, params, 64))(keys)
  one = splits.sample(env, keys[1], params, 64)
  for x, y in zip(jax.tree.leaves(batched), jax.tree.leaves(one)):
    np.testing.assert_array_equal(np.asarray(x)[1], np.asarray(y))
  flat = jax.tree.map(lambda x: x.reshape((-1,) + x.shape[2:]), batched)
  assert np.asarray(splits.in_split(env, flat, "train")).all()


def test_envs_without_hold_out_draw_everything():
  env = toy_env.ChoiceEnv()
  problems = splits.sample(env, jax.random.key(0), env.default_params(), 256, "test")
  assert set(np.asarray(problems.problem).tolist()) == set(range(toy_env.NUM_PROBLEMS))


def test_unknown_split():
  env, params = envs.make("multiplication")
  with pytest.raises(ValueError, match="valid choices: train, validation, test, ood"):
    splits.sample(env, jax.random.key(0), params, 4, "dev")
