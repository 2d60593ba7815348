"""Tests for polyepo.poly_ppo: Algorithm 2's advantages against exact enumeration.

Algorithm 2, §6.1 and Def. 3.2 are those of Ibn Hamid et al., *Set Reinforcement
Learning: Principles and Approaches* (the set RL note).

The decision tree: a response is `a1 ; a2 $` (4 tokens, one step boundary, at
position 2). Step 1 picks a1 in {0, 1} with probabilities P1; step 2 picks a2 in
{0, 1, 2} with probabilities Q[a1]; LABEL and REWARD of the response depend on
both. The rollout state of the vines is s = "x a1=0 ;", whose continuation
distribution is Q[0]. Expectations over the other members of a set are taken by
enumerating every draw (`polyepo.theory` style), never by sampling.
"""

import functools
import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from polyepo.core import theory
from polyepo.env_api import DEGENERATE
from polyepo.rl import poly_ppo
from polyepo.rl import ppo_batch as critic

P1 = np.array([0.6, 0.4])
Q = np.array([[0.5, 0.3, 0.2], [0.1, 0.6, 0.3]])
LABEL = np.array([[0, 1, -1], [2, 2, 3]])
REWARD = np.array([[1.0, 0.0, 1.0], [0.0, 1.0, 1.0]])
T = 4
BOUNDARY = np.array([False, False, True, False])   # a step starts after `;`
ROOT_MASK = np.ones(T, bool)
VINE_MASK = np.array([False, False, True, True])   # a vine samples a2 and EOS


def _group(roots, vines, objective="polychromic", window=1, normalize=False, values=None,
           gamma=1.0, lam=1.0, set_size=2):
  """Token advantages of one group: roots [(a1, a2)], vines [a2] continuing a1 = 0."""
  rewards = [REWARD[a] for a in roots] + [REWARD[0, c] for c in vines]
  labels = [LABEL[a] for a in roots] + [LABEL[0, c] for c in vines]
  M = len(rewards)
  mask = np.stack([ROOT_MASK] * len(roots) + [VINE_MASK] * len(vines))
  start = np.array([0] * len(roots) + [2] * len(vines))
  if values is None:
    values = np.random.default_rng(0).normal(size=(M, T))
  groups = _jitted_group_advantages(
      jnp.asarray(rewards, jnp.float32), jnp.asarray(labels, jnp.int32),
      jnp.asarray(values, jnp.float32), jnp.asarray(mask), jnp.asarray(np.stack([BOUNDARY] * M)),
      jnp.asarray(start, jnp.int32), jax.random.key(0), num_roots=len(roots),
      vine_samples=max(len(vines), 1), objective=objective, set_size=set_size,
      num_subsets=None, window=window, gamma=gamma, lam=lam, normalize=normalize)
  batched = jax.tree.map(lambda x: x[None], groups)
  return np.asarray(poly_ppo.token_advantages(batched, jnp.asarray(mask)[None], normalize)[0]), groups


_jitted_group_advantages = jax.jit(poly_ppo.group_advantages, static_argnames=(
    "num_roots", "vine_samples", "objective", "set_size", "num_subsets", "window", "gamma",
    "lam", "normalize"))
ROOTS = [(0, 0), (1, 1), (0, 2)]
TRAJECTORIES = [(a1, a2) for a1 in range(2) for a2 in range(3)]


@pytest.mark.parametrize("objective", ["polychromic", "pass_at_n", "mean_reward"])
def test_expected_vine_advantage_is_the_exact_marginal_set_advantage(objective):
  """E[Â(s, y_0) | y_0 = y] over the other two vines = (N_v - n)/N_v · A_marg(s, y) of
  Def. 3.2 for the continuation distribution Q[0], on every token of y_0's window;
  the roots do not enter."""
  n, num_vines = 2, 3
  expected = np.zeros(3)
  for draw in itertools.product(range(3), repeat=num_vines):
    prob = np.prod(Q[0][list(draw)])
    adv, _ = _group(ROOTS, list(draw), objective=objective, set_size=n)
    row = adv[len(ROOTS)]
    assert row[2] == row[3] and row[0] == row[1] == 0.0   # window: a2 and EOS; no prefix
    expected[draw[0]] += prob * row[2] / Q[0][draw[0]]
  exact = theory.marginal_advantage(jnp.log(jnp.asarray(Q[0])), jnp.asarray(REWARD[0]),
                                    jnp.asarray(LABEL[0], jnp.int32), objective, n)
  np.testing.assert_allclose(expected, (num_vines - n) / num_vines * np.asarray(exact),
                             atol=1e-6)
  assert np.abs(exact).max() > 0.01


def test_expected_root_advantage_is_the_exact_marginal_set_advantage():
  """At the prompt (case 1 of §6.1) the N roots form the sets: E[Â(x, y_0) | y_0] over
  the other roots = (N - n)/N · A_marg(x, y_0) for the trajectory distribution, on
  the tokens of y_0's first step (window W = 1); its second step gets GAE."""
  n, N = 2, 3
  probs = np.array([P1[a1] * Q[a1, a2] for a1, a2 in TRAJECTORIES])
  expected = np.zeros(len(TRAJECTORIES))
  values = np.zeros((N, T))
  for draw in itertools.product(range(len(TRAJECTORIES)), repeat=N):
    adv, _ = _group([TRAJECTORIES[d] for d in draw], [], values=values, set_size=n)
    assert adv[0, 0] == adv[0, 1]                               # a1 and `;`: the window
    np.testing.assert_allclose(adv[0, 2:], REWARD[TRAJECTORIES[draw[0]]])   # G - V, V = 0
    expected[draw[0]] += np.prod(probs[list(draw)]) * adv[0, 0] / probs[draw[0]]
  rewards = jnp.asarray([REWARD[t] for t in TRAJECTORIES])
  labels = jnp.asarray([LABEL[t] for t in TRAJECTORIES], jnp.int32)
  exact = theory.marginal_advantage(jnp.log(jnp.asarray(probs)), rewards, labels,
                                    "polychromic", n)
  np.testing.assert_allclose(expected, (N - n) / N * np.asarray(exact), atol=1e-6)


def test_mean_reward_reduces_to_vineppo_monte_carlo_value_difference():
  """f = mean reward: the rollout-state advantage is c·(G_i - V̂_MC(s)), with V̂_MC(s)
  the mean return of the state's vines (VinePPO's Monte Carlo value estimate) and
  c = (N_v - n)/(n (N_v - 1)), whatever the critic says; PPO with γ = λ = 1 gives
  G_i - V(s_t) with the critic's V in its place."""
  vines = [0, 1, 2, 0, 1]
  n, num_vines = 2, len(vines)
  values = np.random.default_rng(3).normal(size=(len(ROOTS) + num_vines, T))
  adv, _ = _group(ROOTS, vines, objective="mean_reward", window=5, set_size=n, values=values)
  returns = REWARD[0, vines]
  v_mc = returns.mean()
  c = (num_vines - n) / (n * (num_vines - 1))
  vine_adv = adv[len(ROOTS):]
  np.testing.assert_allclose(vine_adv[:, 2], c * (returns - v_mc), atol=1e-6)
  np.testing.assert_allclose(vine_adv[:, 3], c * (returns - v_mc), atol=1e-6)
  ppo, _ = _group(ROOTS, vines, objective=None, values=values)
  np.testing.assert_allclose(ppo[len(ROOTS):, 2:], returns[:, None] - values[len(ROOTS):, 2:],
                             atol=1e-6)


def test_windows_and_gae_combine_token_by_token():
  """Window W = 1: a root's first step holds its root-set advantage, its second step
  GAE; every vine token lies in its own state's window. W = 2 covers the roots
  whole, including the tokens after the vines' state (no token gets two values).
  Normalised: each set's advantages are standardised, and the GAE tokens over the
  batch."""
  vines = [0, 1, 2]
  values = np.random.default_rng(1).normal(size=(len(ROOTS) + len(vines), T))
  _, groups = _group(ROOTS, vines, values=values)
  window = np.asarray(groups.window)
  np.testing.assert_array_equal(window[:3], [[True, True, False, False]] * 3)
  np.testing.assert_array_equal(window[3:], [[False, False, True, True]] * 3)
  adv, groups = _group(ROOTS, vines, values=values, normalize=True)
  sets = np.asarray(groups.set_advantage)
  for part in (sets[:3], sets[3:]):
    assert abs(part.mean()) < 1e-6 and abs(part.std() - 1) < 1e-3
  np.testing.assert_allclose(adv[:3, :2], np.repeat(sets[:3, None], 2, 1), atol=1e-6)
  gae_tokens = adv[:3, 2:]
  assert abs(gae_tokens.mean()) < 1e-5 and abs(gae_tokens.std() - 1) < 1e-3
  wide, groups = _group(ROOTS, vines, values=values, window=2)
  assert np.asarray(groups.window)[:3].all()
  np.testing.assert_allclose(wide[:3], np.repeat(np.asarray(groups.set_advantage)[:3, None], T, 1))


def test_ppo_has_no_windows_and_the_group_is_vmappable():
  vines = [2, 2, 1]
  _, groups = _group(ROOTS, vines, objective=None)
  assert not np.asarray(groups.window).any()
  np.testing.assert_array_equal(groups.set_advantage, 0.0)
  # Vmapped and jitted over a batch of groups: the same numbers as one at a time.
  M = len(ROOTS) + len(vines)
  rng = np.random.default_rng(2)
  batch = dict(rewards=rng.integers(0, 2, (3, M)).astype(np.float32),
               labels=rng.integers(-1, 3, (3, M)).astype(np.int32),
               values=rng.normal(size=(3, M, T)).astype(np.float32))
  mask = np.stack([np.stack([ROOT_MASK] * 3 + [VINE_MASK] * 3)] * 3)
  bounds = np.broadcast_to(BOUNDARY, (3, M, T))
  start = np.tile([0, 0, 0, 2, 2, 2], (3, 1)).astype(np.int32)
  fn = functools.partial(poly_ppo.group_advantages, num_roots=3, vine_samples=3,
                         objective="polychromic", set_size=2, num_subsets=None, window=1,
                         gamma=0.9, lam=0.8, normalize=True)
  keys = jax.random.split(jax.random.key(0), 3)
  got = jax.jit(jax.vmap(fn))(batch["rewards"], batch["labels"], batch["values"], mask, bounds,
                              start, keys)
  for b in range(3):
    one = fn(batch["rewards"][b], batch["labels"][b], batch["values"][b], mask[b], bounds[b],
             start[b], keys[b])
    jax.tree.map(lambda x, y: np.testing.assert_allclose(x[b], y, atol=1e-5), got, one)


def test_distinct_strategies_per_state_count_valid_labelled_responses_only():
  labels = jnp.array([[0, 0, 1, DEGENERATE], [2, 2, 2, 2], [3, 1, 0, 2]])
  valid = jnp.array([[True, True, True, True], [True, True, False, False],
                     [False, False, False, False]])
  # 2 strategies (DEGENERATE adds none), then 1; the third state has no valid vine.
  assert float(critic.mean_strategies(labels, valid)) == pytest.approx(1.5)
