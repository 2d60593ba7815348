"""An independent check of the splits: every problem of both domains enumerated,
its class computed here from first principles (not by `canonical_form`), and
each split's classes compared through the public API (`splits.in_split`).

Classes: multiplication by the product; polynomial roots by the root multiset
with a cubic's zero root removed, p(-x) with p, every leading coefficient.
"""

import itertools

import jax.numpy as jnp
import numpy as np
import pytest

import envs
from envs.multiplication import problems as mult_problems
from envs.polynomial_roots import problems as roots_problems
from polyepo.evaluation import splits

MIN_EXERCISES = 300  # per eval split and domain


def _multiplication():
  """(problems, classes, region) over all 2 x 2 pairs: region "default" or "ood"."""
  a, b = (x.ravel() for x in np.meshgrid(np.arange(10, 100), np.arange(10, 100), indexing="ij"))
  problems = mult_problems.MultiplicationProblems(a=jnp.asarray(a, jnp.int32),
                                                  b=jnp.asarray(b, jnp.int32))
  large_a, large_b = a >= 50, b >= 50
  region = np.where(large_a & large_b, "ood", "default")
  return problems, [(int(n),) for n in a * b], region


def _root_class(degree, roots):
  roots = sorted(roots[:degree])
  if degree == 3 and 0 in roots:  # x * q(x): the class of q
    roots.remove(0)
  return min(tuple(roots), tuple(sorted(-r for r in roots)))


def _polynomial_roots(env):
  """(problems, classes, region) over every root multiset up to env.max_root at
  every training leading coefficient: region "default" if every root is within
  the training range, "ood" for the cubics beyond it."""
  rows, leads = [], range(1, roots_problems.TRAIN_MAX_LEAD + 1)
  for degree in (2, 3):
    for r in itertools.combinations_with_replacement(range(-env.max_root, env.max_root + 1),
                                                     degree):
      rows += [(degree, r + (0,) * (3 - degree), lead) for lead in leads]
  degree = np.array([d for d, _, _ in rows])
  roots = np.array([r for _, r, _ in rows])
  lead = np.array([a for _, _, a in rows])
  problems = roots_problems.PolynomialProblems(
      degree=jnp.asarray(degree, jnp.int32),
      coeffs=roots_problems.coeffs_from_roots(jnp.asarray(degree, jnp.int32),
                                              jnp.asarray(roots, jnp.int32),
                                              jnp.asarray(lead, jnp.int32)),
      roots=jnp.asarray(roots, jnp.int32))
  beyond = np.abs(roots).max(1) > roots_problems.TRAIN_MAX_ROOT
  region = np.where(beyond, np.where(degree == 3, "ood", "none"), "default")
  return problems, [_root_class(d, list(r)) for d, r in zip(degree, roots)], region


@pytest.fixture(scope="module", params=envs.NAMES)
def domain(request):
  env, _ = envs.make(request.param)
  problems, classes, region = (_multiplication() if request.param == "multiplication"
                               else _polynomial_roots(env))
  member = {s: np.asarray(splits.in_split(env, problems, s)) for s in splits.SPLITS}
  return request.param, classes, region, member


def _classes(classes, mask):
  return {c for c, m in zip(classes, mask) if m}


def test_every_problem_is_in_one_split(domain):
  _, _, _, member = domain
  assert (np.sum(list(member.values()), axis=0) == 1).all()


def test_no_held_out_class_is_a_training_class(domain):
  _, classes, region, member = domain
  train = _classes(classes, member["train"])
  for split in splits.EVAL_SPLITS:
    held = _classes(classes, member[split])
    assert not held & train, f"{split}: {sorted(held & train)[:3]} are training classes"
  assert not _classes(classes, member["ood"]) & _classes(classes, member["test"])
  assert not _classes(classes, member["validation"]) & _classes(classes, member["test"])


def test_each_eval_split_holds_enough_exercises_where_it_is_drawn(domain):
  name, classes, region, member = domain
  for split in splits.EVAL_SPLITS:
    drawn = region == ("ood" if split == "ood" else "default")
    count = len(_classes(classes, member[split] & drawn))
    assert count >= MIN_EXERCISES, f"{name} {split}: {count} exercises"


def test_training_keeps_most_of_the_training_region(domain):
  _, classes, region, member = domain
  inside = _classes(classes, region == "default")
  train = _classes(classes, member["train"] & (region == "default"))
  assert 0.4 < len(train) / len(inside) < 0.6  # 4 of the 8 buckets


@pytest.mark.parametrize("name", envs.NAMES)
def test_the_eval_splits_are_distinct_exercises_of_their_split(name):
  from envs import datasets  # pylint: disable=import-outside-toplevel
  env, _ = envs.make(name)
  for split in splits.EVAL_SPLITS:
    problems = datasets.sample_split(name, split, size=datasets.SPLIT_SIZE)
    if name == "multiplication":
      classes = [(int(a) * int(b),) for a, b in zip(problems.a, problems.b)]
    else:
      classes = [_root_class(int(d), list(r)) for d, r in zip(problems.degree, problems.roots)]
    assert len(set(classes)) == datasets.SPLIT_SIZE, split
    assert np.asarray(splits.in_split(env, problems, split)).all(), split
