"""Tests for polyepo.objectives, against the plain-Python references in brute.py."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, strategies as st

import brute
from polyepo.core import objectives

labels_st = st.lists(st.integers(-1, 3), min_size=1, max_size=8)


def _group(draw_rewards, labels):
  return jnp.asarray(draw_rewards, jnp.float32), jnp.asarray(labels, jnp.int32)


@given(st.data())
def test_objectives_match_reference(data):
  labels = data.draw(labels_st)
  rewards = data.draw(st.lists(st.sampled_from([0.0, 0.25, 1.0]),
                               min_size=len(labels), max_size=len(labels)))
  r, l = _group(rewards, labels)
  for name, ref in [("polychromic", brute.polychromic), ("pass_at_n", brute.pass_at_n),
                    ("mean_reward", brute.mean_reward), ("srl", brute.srl)]:
    np.testing.assert_allclose(objectives.get(name)(r, l), ref(rewards, labels),
                               rtol=1e-6, atol=1e-7, err_msg=name)
  correct_only = [lab if rew > 0 else -1 for rew, lab in zip(rewards, labels)]
  np.testing.assert_allclose(objectives.polychromic_correct_only(r, l),
                             brute.polychromic(rewards, correct_only), rtol=1e-6, atol=1e-7)


@given(st.lists(st.integers(-1, 3), min_size=1, max_size=8), st.data())
def test_majority_vote_matches_reference(answers, data):
  # One reward per answer id, shared by the generations that give it.
  reward_of = {a: data.draw(st.sampled_from([0.0, 1.0])) for a in set(answers)}
  rewards = [reward_of[a] for a in answers]
  got = objectives.majority_vote(jnp.asarray(rewards), jnp.zeros(len(answers), jnp.int32),
                                 answers=jnp.asarray(answers, jnp.int32))
  np.testing.assert_allclose(got, brute.majority_vote(rewards, answers), atol=1e-7)


def test_polychromic_hand_values():
  # By hand: 8 correct in one strategy -> 1 * 1/8; 4 of 8 correct in 4 strategies -> 0.5 * 0.5.
  f = objectives.polychromic
  assert np.isclose(f(jnp.ones(8), jnp.zeros(8, jnp.int32)), 0.125)
  assert np.isclose(f(jnp.array([1., 1, 1, 1, 0, 0, 0, 0]),
                      jnp.array([0, 1, 2, 3, 0, 1, 2, 3])), 0.25)
  # All degenerate -> 0 whatever the rewards.
  assert f(jnp.ones(4), jnp.full(4, -1, jnp.int32)) == 0.0
  # Degenerate members count for reward, not for diversity.
  assert np.isclose(f(jnp.array([1., 1]), jnp.array([-1, 5])), 1.0 * 1 / 2)


def test_srl_hand_values():
  # Two correct copies of one strategy and an incorrect other: max(1/2, 1/2, 0) = 0.5.
  assert np.isclose(objectives.srl(jnp.array([1., 1, 0]), jnp.array([0, 0, 1])), 0.5)
  assert np.isclose(objectives.srl(jnp.array([1., 0, 0]), jnp.array([0, 1, 1])), 1.0)


def test_majority_vote_ties_and_abstentions():
  mv = lambda r, a: objectives.majority_vote(jnp.asarray(r, jnp.float32), jnp.zeros(len(a), jnp.int32),
                                             answers=jnp.asarray(a, jnp.int32))
  assert mv([1, 0, 0], [7, 3, 3]) == 0.0
  assert mv([1, 1, 0], [7, 7, 3]) == 1.0
  assert np.isclose(mv([1, 0], [7, 3]), 0.5)  # a tie: expected reward of a fair coin
  assert mv([0, 0, 1], [-1, -1, 4]) == 1.0    # no-answer generations do not vote
  assert mv([0, 0], [-1, -1]) == 0.0


def test_registry_and_errors():
  assert set(objectives.OBJECTIVES) >= {"polychromic", "pass_at_n", "mean_reward",
                                        "majority_vote", "srl"}
  with pytest.raises(ValueError, match="valid choices: polychromic"):
    objectives.get("polychromatic")
  with pytest.raises(ValueError, match="needs answers"):
    objectives.majority_vote(jnp.ones(3), jnp.zeros(3, jnp.int32))
  with pytest.raises(ValueError, match="labels must have an integer dtype"):
    objectives.polychromic(jnp.ones(3), jnp.zeros(3))
  with pytest.raises(ValueError, match="same shape"):
    objectives.polychromic(jnp.ones(3), jnp.zeros(4, jnp.int32))


@pytest.mark.parametrize("name", sorted(objectives.OBJECTIVES))
def test_objectives_jit_and_vmap(name):
  f = objectives.get(name)
  r = jnp.array([[1., 0, 1], [0, 0, 0]])
  l = jnp.array([[0, 1, -1], [2, 2, 2]], jnp.int32)
  a = jnp.array([[5, 6, 5], [1, 1, 2]], jnp.int32)
  batched = jax.jit(jax.vmap(lambda r, l, a: f(r, l, answers=a)))(r, l, a)
  one_by_one = [f(r[i], l[i], answers=a[i]) for i in range(2)]
  np.testing.assert_allclose(batched, one_by_one)
  assert batched.shape == (2,) and np.all(np.isfinite(batched))
