"""Tests for polyepo.sets."""

import itertools
import math
from collections import Counter

import jax
import numpy as np
import pytest
from scipy import stats

from polyepo.core import sets


@pytest.mark.parametrize("N,n", [(1, 1), (4, 2), (6, 6), (8, 3), (10, 5), (12, 1)])
def test_all_subsets_matches_itertools(N, n):
  got = np.asarray(sets.all_subsets(N, n))
  want = np.array(list(itertools.combinations(range(N), n)))
  assert got.dtype == np.int32
  np.testing.assert_array_equal(got, want)


def test_num_subsets():
  assert sets.num_subsets(16, 8) == 12870
  assert sets.num_subsets(32, 8) == 10518300


@pytest.mark.parametrize("N,n,K", [(8, 4, 20), (8, 4, 70), (16, 8, 512), (64, 8, 512),
                                   (40, 20, 64), (5, 1, 5)])
def test_sample_subsets_valid_and_distinct(N, n, K):
  got = np.asarray(sets.sample_subsets(jax.random.key(0), N, n, K))
  assert got.shape == (K, n) and got.dtype == np.int32
  assert np.all(np.diff(got, axis=1) > 0), "rows sorted, members distinct"
  assert got.min() >= 0 and got.max() < N
  assert len({tuple(r) for r in got}) == K


def test_sample_subsets_astronomical_space_is_jittable_and_cheap():
  # C(64, 8) = 4.4e9 subsets: must not be materialised.
  fn = jax.jit(sets.sample_subsets, static_argnums=(1, 2, 3))
  a = fn(jax.random.key(1), 64, 8, 512)
  b = fn(jax.random.key(1), 64, 8, 512)
  c = fn(jax.random.key(2), 64, 8, 512)
  np.testing.assert_array_equal(a, b)
  assert not np.array_equal(a, c)


def test_rejection_path_resolves_forced_collisions():
  # K close to C(N, n)/2 on the rejection path (C(20,10)=184756 > 2**16):
  # many initial repeats must all be redrawn.
  got = np.asarray(sets.sample_subsets(jax.random.key(3), 20, 10, 5000))
  assert len({tuple(r) for r in got}) == 5000


@pytest.mark.parametrize("N,n,K", [(5, 2, 3), (20, 10, 2)])
def test_sample_subsets_uniform_marginals(N, n, K):
  """Every subset is equally likely to be picked (chi-square), on both code paths."""
  total = math.comb(N, n)
  draws = 4000
  keys = jax.random.split(jax.random.key(4), draws)
  out = np.asarray(jax.vmap(lambda k: sets.sample_subsets(k, N, n, K))(keys))
  if total <= 100:
    counts = Counter(tuple(r) for batch in out for r in batch)
    observed = np.array([counts[s] for s in itertools.combinations(range(N), n)])
    expected = draws * K / total
  else:
    # Too many subsets for a full histogram: each element's inclusion count.
    observed = np.bincount(out.reshape(-1), minlength=N)
    expected = draws * K * n / N
  _, p = stats.chisquare(observed, np.full(observed.shape, expected))
  assert p > 1e-3, p


def test_sample_subsets_pairs_are_uniform():
  """K = 2 of C(4, 2) = 6: all 15 unordered pairs of subsets equally likely."""
  keys = jax.random.split(jax.random.key(5), 6000)
  out = np.asarray(jax.vmap(lambda k: sets.sample_subsets(k, 4, 2, 2))(keys))
  counts = Counter(frozenset(map(tuple, batch)) for batch in out)
  assert len(counts) == 15
  _, p = stats.chisquare(list(counts.values()))
  assert p > 1e-3, p


@pytest.mark.parametrize("args,match", [
    ((4, 5), "n must satisfy"),
    ((4, 0), "n must satisfy"),
    ((0, 0), "N must be"),
    ((4.0, 2), "N must be a Python int"),
])
def test_all_subsets_bad_input(args, match):
  with pytest.raises(ValueError, match=match):
    sets.all_subsets(*args)


def test_all_subsets_too_many():
  with pytest.raises(ValueError, match="sample_subsets"):
    sets.all_subsets(64, 16)


@pytest.mark.parametrize("N,n,K,match", [
    (4, 2, 7, "K must satisfy"), (4, 2, 0, "K must satisfy"), (4, 5, 1, "n must satisfy")])
def test_sample_subsets_bad_input(N, n, K, match):
  with pytest.raises(ValueError, match=match):
    sets.sample_subsets(jax.random.key(0), N, n, K)


def test_sample_subsets_vmapped_over_prompts():
  keys = jax.random.split(jax.random.key(6), 8)
  out = jax.jit(jax.vmap(lambda k: sets.sample_subsets(k, 32, 4, 64)))(keys)
  assert out.shape == (8, 64, 4)
  assert not np.array_equal(out[0], out[1])

