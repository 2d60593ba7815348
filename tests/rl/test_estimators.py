"""polyepo.estimators: windowed Poly-EPO's token advantages on hand-worked groups,
against brute-force set advantages (tests/helpers/brute.py); the registry itself is tested with
training in tests/rl/test_train.py."""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import brute
from polyepo.rl import estimators, train

CONFIG = train.TrainConfig(estimator="set_rl_windowed", samples_per_prompt=4, set_size=3,
                           prompts_per_step=2, num_minibatches=1)


def _standardise(x):
  x = np.asarray(x, np.float64)
  return (x - x.mean()) / (x.std() + 1e-6)


def test_a_wrong_response_with_a_new_strategy_is_credited_for_its_choice_not_its_slips():
  """Three correct responses of strategy 0 and a wrong one of strategy 1, T = 6 tokens,
  each with a step boundary at position 2 (the wrong one's also at 4) but the
  third, which ends at 4 and has none; sets of n = 3. The wrong response alone
  adds diversity to its sets (each scores 2/3 · 2/3 against 1/3 without it): its
  first step (tokens 0-1) gets the positive set advantage, its remaining tokens
  the negative reward advantage; a response with no boundary is all first step;
  padding gets 0."""
  rewards = jnp.array([1., 1., 1., 0.])
  labels = jnp.array([0, 0, 0, 1])
  boundaries = np.zeros((4, 6), bool)
  boundaries[[0, 1, 3], 2] = True
  boundaries[3, 4] = True
  mask = np.ones((4, 6), bool)
  mask[2, 4:] = False
  advantages, window = estimators.windowed_advantages(
      CONFIG, rewards, labels, jnp.asarray(boundaries), jnp.asarray(mask), jax.random.key(0))
  set_adv = _standardise(brute.marginal_advantage(brute.polychromic, [1, 1, 1, 0],
                                                  [0, 0, 0, 1], 3))
  reward_adv = _standardise([1, 1, 1, 0])
  assert set_adv[3] > 0 > reward_adv[3]
  expected_window = np.zeros((4, 6), bool)
  expected_window[[0, 1, 3], :2] = True
  expected_window[2, :4] = True
  np.testing.assert_array_equal(window, expected_window)
  expected = np.where(expected_window, set_adv[:, None], reward_adv[:, None]) * mask
  np.testing.assert_allclose(advantages, expected, rtol=1e-5, atol=1e-6)


def test_without_normalize_both_advantages_are_raw():
  """normalize=False: the raw marginal set advantage on the first step, r - mean r after."""
  config = dataclasses.replace(CONFIG, normalize=False, set_size=2)
  rewards, labels = jnp.array([1., 0., 1., 0.]), jnp.array([0, 1, 2, 2])
  boundaries = jnp.zeros((4, 3), bool).at[:, 1].set(True)
  advantages, _ = estimators.windowed_advantages(config, rewards, labels, boundaries,
                                                 jnp.ones((4, 3), bool), jax.random.key(0))
  set_adv = brute.marginal_advantage(brute.polychromic, [1, 0, 1, 0], [0, 1, 2, 2], 2)
  np.testing.assert_allclose(advantages[:, 0], set_adv, rtol=1e-5, atol=1e-6)
  np.testing.assert_allclose(advantages[:, 1:], np.full((4, 2), [[.5], [-.5], [.5], [-.5]]),
                             rtol=1e-6)


@pytest.mark.parametrize("change,match", [
    (dict(normalize_over="batch"), "normalize_over='batch' is not available to "
     "estimator='set_rl_windowed'"),
    (dict(set_size=4), "set_size must satisfy 1 <= set_size < samples_per_prompt=4"),
    (dict(objective="majority_vote"), "needs answer ids"),
])
def test_windowed_configs_that_cannot_work_are_refused(change, match):
  with pytest.raises(ValueError, match=match):
    dataclasses.replace(CONFIG, **change)


def test_an_env_without_step_boundaries_is_refused():
  import types  # pylint: disable=g-import-not-at-top
  with pytest.raises(ValueError, match="estimator='set_rl_windowed' needs an env with step"):
    train.validate_env(CONFIG, types.SimpleNamespace(has_step_boundaries=False))
