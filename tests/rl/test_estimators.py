"""polyepo.rl.estimators: windowed Poly-EPO's token advantages on hand-worked groups,
against brute-force set advantages (tests/helpers/brute.py), and the windowed
algorithm (`algorithms.windowed`) that builds its batch from them; the registry and
the other algorithms are tested with training in tests/rl/test_train.py."""

import types

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import brute
from polyepo.policy import sampling
from polyepo.rl import algorithms, estimator_inputs, estimators, train

CONFIG = train.TrainConfig(samples_per_prompt=4, prompts_per_step=2, num_minibatches=1)
WINDOWED = dict(name="set_rl_windowed", first=dict(name="set_rl", set_size=3))


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
      algorithms.set_rl(set_size=3).group_advantage, algorithms.grpo().group_advantage,
      rewards, labels, jnp.asarray(boundaries), jnp.asarray(mask), jax.random.key(0))
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
  rewards, labels = jnp.array([1., 0., 1., 0.]), jnp.array([0, 1, 2, 2])
  boundaries = jnp.zeros((4, 3), bool).at[:, 1].set(True)
  advantages, _ = estimators.windowed_advantages(
      algorithms.set_rl(set_size=2, normalize=False).group_advantage,
      algorithms.grpo(normalize=False).group_advantage, rewards, labels, boundaries,
      jnp.ones((4, 3), bool), jax.random.key(0))
  set_adv = brute.marginal_advantage(brute.polychromic, [1, 0, 1, 0], [0, 1, 2, 2], 2)
  np.testing.assert_allclose(advantages[:, 0], set_adv, rtol=1e-5, atol=1e-6)
  np.testing.assert_allclose(advantages[:, 1:], np.full((4, 2), [[.5], [-.5], [.5], [-.5]]),
                             rtol=1e-6)


class _BoundaryAtOne:
  """An env whose every response has one step boundary, at token 1 (all the windowed
  batch reads of an env)."""
  has_step_boundaries = True

  def step_boundaries(self, responses):
    return jnp.zeros(responses.shape, bool).at[:, 1].set(True)


def test_a_windowed_spec_with_first_and_rest_specs_builds_their_batch():
  """A spec naming `first` and `rest` by specs of their own, each with its fields: its
  batch of two groups, each rewards [1, 0, 1, 0] with strategies [0, 1, 2, 2] and a
  step boundary at token 1 of 3, holds first's raw set advantage (n = 2) on token 0
  and rest's reward-shaping advantage after it. By hand, unnormalised with λ = 3:
  the bonus (share of the others with another strategy) is [1, 1, 2/3, 2/3], the
  shaped rewards r + λ · bonus [4, 3, 3, 2], centred [1, 0, 0, -1]."""
  algorithm = algorithms.resolve(dict(
      name="set_rl_windowed", first=dict(name="set_rl", set_size=2, normalize=False),
      rest=dict(name="reward_shaping", lam=3.0, normalize=False)))
  B, N, T = CONFIG.prompts_per_step, CONFIG.samples_per_prompt, 3
  rewards = jnp.tile(jnp.array([1., 0., 1., 0.]), (B, 1))
  labels = jnp.tile(jnp.array([0, 1, 2, 2]), (B, 1))
  rollout = sampling.Rollout(tokens=jnp.full((B * N, T), 3), logprobs=jnp.zeros((B * N, T)),
                             mask=jnp.ones((B * N, T), bool))
  setup = estimator_inputs.Setup(CONFIG, None, _BoundaryAtOne(), None)
  rollouts = estimator_inputs.Rollouts(None, None, None, rollout, rewards, labels)
  batch, metrics = algorithm.build_batch(setup, rollouts, jax.random.key(0), None)
  assert batch["advantages"].shape == (B, N, T)
  set_adv = brute.marginal_advantage(brute.polychromic, [1, 0, 1, 0], [0, 1, 2, 2], 2)
  for b in range(B):
    np.testing.assert_allclose(batch["advantages"][b, :, 0], set_adv, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(batch["advantages"][b, :, 1:],
                               np.full((4, 2), [[1.], [0.], [0.], [-1.]]), atol=1e-6)
  assert float(metrics["window_token_share"]) == pytest.approx(1 / 3)


@pytest.mark.parametrize("spec,match", [
    (dict(WINDOWED, first=dict(name="set_rl", set_size=3, normalize_over="batch")),
     "^algorithm.first.normalize_over='batch' is not available inside windowed"),
    (dict(WINDOWED, rest=dict(name="grpo", normalize_over="batch")),
     "^algorithm.rest.normalize_over='batch' is not available inside windowed"),
    (dict(WINDOWED, first=dict(name="set_rl", objective="majority_vote")),
     "^algorithm.first.objective='majority_vote' needs answer ids"),
    (dict(WINDOWED, rest=dict(name="poly_ppo")),
     "^algorithm.rest must be a group algorithm .* got 'poly_ppo'"),
    (dict(WINDOWED, normalize=False),
     "^algorithm: set_rl_windowed has no field 'normalize'; its fields: first, rest."),
])
def test_windowed_specs_that_cannot_work_are_refused(spec, match):
  with pytest.raises(ValueError, match=match):
    algorithms.resolve(spec)


def test_a_windowed_first_step_that_does_not_fit_the_samples_is_refused():
  algorithm = algorithms.resolve(dict(WINDOWED, first=dict(name="set_rl", set_size=4)))
  with pytest.raises(ValueError, match="set_size must satisfy 1 <= set_size < "
                                       "samples_per_prompt=4, got set_size=4"):
    train.check(CONFIG, algorithm, types.SimpleNamespace(has_step_boundaries=True))
  train.check(CONFIG, algorithms.resolve(WINDOWED),
              types.SimpleNamespace(has_step_boundaries=True))


def test_an_env_without_step_boundaries_is_refused():
  with pytest.raises(ValueError, match="algorithm 'set_rl_windowed' needs an env with step"):
    train.check(CONFIG, algorithms.resolve(WINDOWED),
                types.SimpleNamespace(has_step_boundaries=False))
