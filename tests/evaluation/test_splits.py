"""Tests for polyepo.splits: evaluation exercises held out of training by hash.

The leak-rate tests enumerate each domain's training distribution and build
every surface form of an exercise by hand (b * a for a * b; the same roots
under every leading coefficient), independently of `Env.canonical_form`, and
count the held-out problems whose exercise is trained on in another form.
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
  """Every 2 x 2 multiplication exercise (unordered pair): each bucket holds
  about 1/8 of them."""
  a, b = np.triu_indices(100)
  keep = a >= 10
  problems = envs.multiplication.MultiplicationProblems(
      jnp.asarray(a[keep], jnp.int32), jnp.asarray(b[keep], jnp.int32))
  env, _ = envs.make("multiplication")
  counts = np.bincount(np.asarray(splits.bucket(env, problems)), minlength=splits.NUM_BUCKETS)
  expected = keep.sum() / splits.NUM_BUCKETS
  assert np.all(np.abs(counts - expected) < 4 * np.sqrt(expected)), counts


def _multiplication_training_space():
  """Every 2 x 2 problem of the training distribution: a, b in 10..99, not both
  50 or more (by hand, from MultiplicationParams' docstring)."""
  a, b = (x.ravel() for x in np.meshgrid(np.arange(10, 100), np.arange(10, 100)))
  keep = ~((a >= 50) & (b >= 50))
  return multiplication_problems.MultiplicationProblems(
      jnp.asarray(a[keep], jnp.int32), jnp.asarray(b[keep], jnp.int32))


def _swapped(problems):
  """b * a for each a * b: the other surface form of its exercise."""
  return problems.replace(a=problems.b, b=problems.a)


def _roots_problem(degree, roots, lead):
  """(coeffs i32[4] ascending, roots i32[3]) of lead * prod (x - r), by numpy."""
  coeffs = np.zeros(4, np.int64)
  coeffs[:degree + 1] = np.round(lead * np.poly(roots))[::-1]
  return coeffs, np.pad(sorted(roots), (0, 3 - degree))


def _roots_training_space():
  """{root multiset: [problem per lead 1..3]}: every problem of the training
  distribution (roots in [-6, 6], leading coefficient 1..3, quadratics and cubics)."""
  space = {}
  for degree in (2, 3):
    for roots in itertools.combinations_with_replacement(range(-6, 7), degree):
      space[(degree, roots)] = [_roots_problem(degree, roots, lead) for lead in (1, 2, 3)]
  return space


def _roots_batch(rows):
  """PolynomialProblems from [(degree, (coeffs, roots))]."""
  return roots_problems.PolynomialProblems(
      degree=jnp.asarray([d for d, _ in rows], jnp.int32),
      coeffs=jnp.asarray(np.stack([c for _, (c, _) in rows]), jnp.int32),
      roots=jnp.asarray(np.stack([r for _, (_, r) in rows]), jnp.int32))


def _surface_in_split(problems, split):
  """bool[B]: the split of each problem under a hash of its own numbers (its
  surface form), which held out problems, not exercises."""
  b = np.asarray(splits.problem_hash(problems) % splits.NUM_BUCKETS)
  return b > max(splits.BUCKETS.values()) if split == "train" else b == splits.BUCKETS[split]


@pytest.mark.parametrize("split", ["validation", "test"])
def test_no_held_out_multiplication_problem_is_trained_on_as_its_twin(split):
  env, _ = envs.make("multiplication")
  space = _multiplication_training_space()
  held = np.asarray(splits.in_split(env, space, split))
  twin = _swapped(space)
  twin_trained = np.asarray(splits.in_split(env, twin, "train"))
  assert held.sum() > 500  # about 1/8 of the 5,600
  leak_rate = np.mean(twin_trained[held])
  assert leak_rate == 0.0
  # Hashing the surface form leaks: 539 of the 695 test problems (77.6%) had
  # their twin in training.
  surface_held = _surface_in_split(space, split)
  surface_leak = np.mean(_surface_in_split(twin, "train")[surface_held])
  assert surface_leak > 0.7, surface_leak


@pytest.mark.parametrize("split", ["validation", "test"])
def test_no_held_out_roots_problem_is_trained_on_under_another_lead(split):
  env, _ = envs.make("polynomial_roots")
  space = _roots_training_space()
  rows = [(d, problem) for (d, _), problems in space.items() for problem in problems]
  batch = _roots_batch(rows)
  held = np.asarray(splits.in_split(env, batch, split)).reshape(-1, 3)    # [exercise, lead]
  trained = np.asarray(splits.in_split(env, batch, "train")).reshape(-1, 3)
  assert held.sum() > 150  # about 1/8 of the 1,638
  # A held-out problem leaks if a problem with its roots, under any lead, is trained on.
  leak_rate = np.mean(np.repeat(trained.any(1, keepdims=True), 3, 1)[held])
  assert leak_rate == 0.0
  surface_held = _surface_in_split(batch, split).reshape(-1, 3)
  surface_trained = _surface_in_split(batch, "train").reshape(-1, 3)
  surface_leak = np.mean(np.repeat(surface_trained.any(1, keepdims=True), 3, 1)[surface_held])
  assert surface_leak > 0.9, surface_leak


@pytest.mark.parametrize("domain", envs.NAMES)
def test_drawn_eval_problems_have_no_surface_form_in_training(domain):
  """The eval splits' problems as drawn (`splits.sample`, as envs.datasets draws
  them): no surface form of their exercise is a training problem."""
  env, params = envs.make(domain)
  key = jax.random.key(5)
  for split in ("validation", "test", "ood"):
    draw_params = env.ood_params() if split == "ood" else params
    held = jax.device_get(splits.sample(env, key, draw_params, 128, split))
    if domain == "multiplication":
      forms = _swapped(held)
      in_training = ~((np.asarray(forms.a) >= 50) & (np.asarray(forms.b) >= 50))
    else:
      rows = [(int(d), _roots_problem(int(d), tuple(r[:d]), lead))
              for d, r in zip(held.degree, held.roots) for lead in (1, 2, 3)]
      forms = _roots_batch(rows)
      in_training = np.ones(len(rows), bool)  # leads 1..3, roots in [-6, 6]
    trained = np.asarray(splits.in_split(env, forms, "train")) & in_training
    assert not trained.any(), f"{split}: {trained.sum()} exercises trained on"


@pytest.mark.parametrize("split", ["train", "validation", "test"])
def test_sample_draws_only_the_split(split):
  env, params = envs.make("multiplication")
  problems = jax.jit(lambda k: splits.sample(env, k, params, 512, split))(jax.random.key(1))
  assert np.asarray(splits.in_split(env, problems, split)).all()
  # By hand: validation is bucket 0, test bucket 1, train the other six.
  buckets = set(np.asarray(splits.bucket(env, problems)).tolist())
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
  assert np.asarray(splits.in_split(env, flat, "train")).all()


def test_envs_without_hold_out_draw_everything():
  env = toy_env.ChoiceEnv()
  problems = splits.sample(env, jax.random.key(0), env.default_params(), 256, "test")
  assert set(np.asarray(problems.problem).tolist()) == set(range(toy_env.NUM_PROBLEMS))


def test_unknown_split():
  env, params = envs.make("multiplication")
  with pytest.raises(ValueError, match="valid choices: train, validation, test, ood"):
    splits.sample(env, jax.random.key(0), params, 4, "dev")
