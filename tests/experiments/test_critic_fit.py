"""experiments.critic_fit: the scores read V at the right positions."""

import jax
import numpy as np

from experiments import critic_fit

N, K, N_v, T = critic_fit.ROOTS, critic_fit.STATES, critic_fit.VINES, 6


def _data(key):
  """Two prompts' roots and vines with binary rewards; vines start at position 2 or 3."""
  B, M = 2, N + K * N_v
  reward = jax.random.bernoulli(key, 0.5, (B, M)).astype(np.float32)
  reward = np.array(reward)
  reward[:, 0], reward[:, 1] = 0.0, 1.0          # the returns vary at the prompt
  start = np.zeros((B, M), np.int32)
  start[:, N:] = np.repeat(np.array([2, 3]), N_v)[None]
  loss_mask = np.arange(T)[None, None] >= start[..., None]
  return dict(reward=reward, start=start, loss_mask=loss_mask)


def test_a_critic_exact_at_the_states_explains_all_there_and_garbage_elsewhere_is_ignored():
  """V = the response's own return at its state (t = 0 for roots, t = start for
  vines) and noise elsewhere: explained variance 1 at the prompt and at the vine
  states, below 1 over all tokens."""
  data = _data(jax.random.key(0))
  values = np.array(jax.random.normal(jax.random.key(1), data["loss_mask"].shape))
  rows, responses = np.indices(data["start"].shape)
  values[rows, responses, data["start"]] = data["reward"]
  s = critic_fit.scores(values, data)
  np.testing.assert_allclose([s["prompt"], s["states"]], 1.0, atol=1e-6)
  assert s["all_tokens"] < 0.5


def test_a_constant_critic_explains_nothing():
  data = _data(jax.random.key(2))
  s = critic_fit.scores(np.full(data["loss_mask"].shape, 0.3, np.float32), data)
  np.testing.assert_allclose([s["all_tokens"], s["prompt"], s["states"]], 0.0, atol=1e-3)
