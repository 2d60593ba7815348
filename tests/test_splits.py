"""Tests for polyepo.splits: evaluation problems held out of training by hash."""

import collections

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import envs
from polyepo import splits
from tests import toy_env


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
  """Every 2 x 2 multiplication problem: each bucket holds about 1/8 of them."""
  a, b = np.meshgrid(np.arange(10, 100), np.arange(10, 100), indexing="ij")
  problems = envs.multiplication.MultiplicationProblems(
      jnp.asarray(a.ravel(), jnp.int32), jnp.asarray(b.ravel(), jnp.int32))
  counts = np.bincount(np.asarray(splits.bucket(problems)), minlength=splits.NUM_BUCKETS)
  expected = a.size / splits.NUM_BUCKETS
  assert np.all(np.abs(counts - expected) < 4 * np.sqrt(expected)), counts


@pytest.mark.parametrize("split", ["train", "validation", "test"])
def test_sample_draws_only_the_split(split):
  env, params = envs.make("multiplication")
  problems = jax.jit(lambda k: splits.sample(env, k, params, 512, split))(jax.random.key(1))
  assert np.asarray(splits.in_split(problems, split)).all()
  # By hand: validation is bucket 0, test bucket 1, train the other six.
  buckets = set(np.asarray(splits.bucket(problems)).tolist())
  assert buckets <= {"validation": {0}, "test": {1}, "train": set(range(2, 8))}[split]
  # Conditioning on the split keeps the distribution's support: every leading
  # digit still occurs.
  lead = np.asarray(problems.a) // 10
  assert set(lead.tolist()) == set(range(1, 10))


@pytest.mark.slow
def test_sample_vmaps_over_keys_and_is_deterministic():
  env, params = envs.make("polynomial_roots")
  keys = jax.random.split(jax.random.key(2), 3)
  batched = jax.vmap(lambda k: splits.sample(env, k, params, 64))(keys)
  one = splits.sample(env, keys[1], params, 64)
  for x, y in zip(jax.tree.leaves(batched), jax.tree.leaves(one)):
    np.testing.assert_array_equal(np.asarray(x)[1], np.asarray(y))
  flat = jax.tree.map(lambda x: x.reshape((-1,) + x.shape[2:]), batched)
  assert np.asarray(splits.in_split(flat, "train")).all()


def test_envs_without_hold_out_draw_everything():
  env = toy_env.ChoiceEnv()
  problems = splits.sample(env, jax.random.key(0), env.default_params(), 256, "test")
  assert set(np.asarray(problems.problem).tolist()) == set(range(toy_env.NUM_PROBLEMS))


def test_unknown_split():
  env, params = envs.make("multiplication")
  with pytest.raises(ValueError, match="valid choices: train, validation, test, ood"):
    splits.sample(env, jax.random.key(0), params, 4, "dev")
