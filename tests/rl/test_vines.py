"""Tests for polyepo.vines: windows, the choice of rollout states, and vines drawn from
the policy's continuation distribution of their prefix."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats

from polyepo.policy import model
from polyepo.rl import vines

PAD, EOS = 0, 1


# -- windows ---------------------------------------------------------------------


@pytest.mark.parametrize("start,window,want", [
    # boundaries at 3 and 6, real tokens 0..8 (EOS at 8), T = 10
    (0, 1, "1110000000"),     # the first step: up to the first boundary
    (0, 2, "1111110000"),
    (0, 3, "1111111110"),     # past the last boundary: cut at the response's end
    (0, 9, "1111111110"),
    (3, 1, "0001110000"),     # a state at a boundary: that boundary starts its step
    (3, 2, "0001111110"),
    (6, 1, "0000001110"),
    (6, 5, "0000001110"),
])
def test_window_mask_is_exact_at_steps_and_ends(start, window, want):
  boundaries = jnp.asarray([t in (3, 6) for t in range(10)])
  mask = jnp.arange(10) < 9
  got = vines.window_mask(boundaries, jnp.int32(start), window, mask)
  assert "".join(str(int(x)) for x in np.asarray(got)) == want


def test_window_mask_of_a_vine_skips_its_prefix():
  """A vine's trained tokens start at its state: the prefix (context) is never in the
  window, and a window longer than the vine ends with the vine."""
  boundaries = jnp.asarray([t in (2, 5) for t in range(8)])
  loss_mask = (jnp.arange(8) >= 2) & (jnp.arange(8) < 7)
  got = vines.window_mask(boundaries, jnp.int32(2), 4, loss_mask)
  np.testing.assert_array_equal(got, loss_mask)
  with pytest.raises(ValueError, match="window must be >= 1, got 0"):
    vines.window_mask(boundaries, jnp.int32(2), 0, loss_mask)


# -- choosing rollout states -----------------------------------------------------


def test_choose_states_draws_distinct_boundaries_and_pads_the_rest():
  boundaries = np.zeros((3, 8), bool)
  boundaries[0, [2, 5]] = boundaries[2, 4] = True
  for seed in range(20):
    states = vines.choose_states(jax.random.key(seed), jnp.asarray(boundaries), 4)
    valid = np.asarray(states.valid)
    np.testing.assert_array_equal(valid, [True, True, True, False])
    picked = set(zip(np.asarray(states.root)[valid].tolist(),
                     np.asarray(states.position)[valid].tolist()))
    assert picked == {(0, 2), (0, 5), (2, 4)}
    assert int(states.root[3]) == int(states.position[3]) == 0
  empty = vines.choose_states(jax.random.key(0), jnp.zeros((3, 8), bool), 2)
  assert not np.asarray(empty.valid).any()


@pytest.mark.parametrize("selection", vines.SELECTIONS)
def test_choose_states_follows_its_weights(selection):
  """One state per draw, 4000 draws: uniform over the 5 boundaries, or 2^-(k-1) for
  a response's k-th boundary (chi-square)."""
  boundaries = np.zeros((2, 8), bool)
  boundaries[0, [1, 3, 6]] = boundaries[1, [2, 5]] = True
  keys = jax.random.split(jax.random.key(1), 4000)
  states = jax.jit(jax.vmap(lambda k: vines.choose_states(k, jnp.asarray(boundaries), 1,
                                                          selection)))(keys)
  cells = [(0, 1), (0, 3), (0, 6), (1, 2), (1, 5)]
  drawn = list(zip(np.asarray(states.root)[:, 0].tolist(),
                   np.asarray(states.position)[:, 0].tolist()))
  counts = np.array([drawn.count(c) for c in cells])
  weights = np.ones(5) if selection == "uniform" else np.array([1, 0.5, 0.25, 1, 0.5])
  expected = len(keys) * weights / weights.sum()
  assert counts.sum() == len(keys)
  assert stats.chisquare(counts, expected).pvalue > 1e-3, (counts, expected)


def test_prefix_prompts_right_align_prompt_and_prefix():
  prompt = jnp.array([PAD, 7, 8])
  # The third state's root sampled the pad token: inside a prefix it is real.
  roots = jnp.array([[2, 3, 4, EOS, PAD], [5, 6, EOS, PAD, PAD], [PAD, 4, 5, 6, EOS]])
  states = vines.RolloutStates(jnp.array([0, 1, 0, 2]), jnp.array([2, 1, 0, 3]),
                               jnp.array([True, True, True, True]))
  tokens, mask = vines.prefix_prompts(prompt, roots, states, PAD)
  np.testing.assert_array_equal(tokens, [
      [PAD, PAD, PAD, PAD, 7, 8, 2, 3],
      [PAD, PAD, PAD, PAD, PAD, 7, 8, 5],
      [PAD, PAD, PAD, PAD, PAD, PAD, 7, 8],
      [PAD, PAD, PAD, 7, 8, PAD, 4, 5]])
  np.testing.assert_array_equal(mask, [
      [0, 0, 0, 0, 1, 1, 1, 1],
      [0, 0, 0, 0, 0, 1, 1, 1],
      [0, 0, 0, 0, 0, 0, 1, 1],
      [0, 0, 0, 1, 1, 1, 1, 1]])


# -- vines are the policy's continuations of their prefix ------------------------

CONFIG = model.TransformerConfig(vocab_size=8, width=16, num_layers=1, num_heads=2,
                                 max_len=9, pad_id=PAD, eos_id=EOS)


@pytest.fixture(scope="module")
def policy():
  params = model.init_params(jax.random.key(3), CONFIG)
  return dict(params, head={"kernel": 4.0 * params["head"]["kernel"]})  # a peaked policy


def _roots():
  prompts = jnp.array([[PAD, 6, 7], [5, 4, 3]])
  roots = jnp.array([[[2, 3, 4, 5, 6, EOS], [3, 3, EOS, PAD, PAD, PAD]],
                     [[7, 6, 5, 4, EOS, PAD], [2, PAD, 2, 2, 2, 2]]])  # a sampled pad
  states = vines.RolloutStates(jnp.array([[0, 1], [1, 0]]), jnp.array([[3, 1], [4, 2]]),
                               jnp.array([[True, True], [True, False]]))
  return prompts, roots, states


@pytest.mark.slow
def test_vine_logprobs_are_the_policy_continuation_logprobs(policy):
  """Exact: each continuation token's sampling log-prob equals the teacher-forced
  log-prob of the full vine (prompt, prefix, continuation) under the policy; the
  prefix is the root's; the trained tokens are the continuation of valid states."""
  prompts, roots, states = _roots()
  out = jax.jit(lambda k: vines.sample_vines(policy, CONFIG, k, prompts, roots, states,
                                             samples=5, return_features=True))(jax.random.key(0))
  assert out.tokens.shape == (2, 2, 5, 6) and out.start.shape == (2, 2, 5)
  assert out.features.shape == (2, 2, 5, 6, CONFIG.width)
  for b in range(2):
    for k in range(2):
      t, r = int(states.position[b, k]), int(states.root[b, k])
      np.testing.assert_array_equal(out.tokens[b, k, :, :t], np.broadcast_to(roots[b, r, :t],
                                                                              (5, t)))
      np.testing.assert_array_equal(out.start[b, k], t)
      assert not np.asarray(out.loss_mask[b, k, :, :t]).any()
      assert np.asarray(out.mask[b, k, :, :t]).all()
      if not states.valid[b, k]:
        assert not np.asarray(out.loss_mask[b, k]).any()
  teacher, features = model.sequence_logprobs_and_features(
      policy, CONFIG, prompts, out.tokens.reshape(-1, 6), out.mask.reshape(-1, 6),
      samples_per_prompt=10)
  continuation = (np.arange(6) >= np.asarray(out.start).reshape(-1, 1)) & np.asarray(
      out.mask).reshape(-1, 6)
  np.testing.assert_allclose(np.where(continuation, teacher, 0.0),
                             np.where(continuation, out.logprobs.reshape(-1, 6), 0.0),
                             atol=1e-5)
  assert continuation.sum() > 20
  # The features each continuation token was drawn from (the critic's input).
  got = np.asarray(out.features).reshape(-1, 6, CONFIG.width)
  np.testing.assert_allclose(got[continuation], np.asarray(features)[continuation], atol=1e-4)
  np.testing.assert_array_equal(got[np.arange(6) < np.asarray(out.start).reshape(-1, 1)], 0.0)


@pytest.mark.slow
def test_context_logprobs_are_the_whole_vines_teacher_forced_logprobs(policy):
  """Each vine's log-probs with the root's prefix in front equal the teacher-forced
  log-probs of the whole vine (what the surprise critic reads), on its real tokens."""
  prompts, roots, states = _roots()
  out = jax.jit(lambda k: vines.sample_vines(policy, CONFIG, k, prompts, roots, states,
                                             samples=3))(jax.random.key(1))
  # A root's real tokens run to its EOS (a sampled pad before it is real, as the
  # sampler read it).
  eos = roots == EOS
  root_mask = (jnp.cumsum(eos, axis=-1) - eos) == 0
  root_logp = model.sequence_logprobs(policy, CONFIG, prompts, roots.reshape(-1, 6),
                                      root_mask.reshape(-1, 6), samples_per_prompt=2)
  got = vines.context_logprobs(root_logp.reshape(2, 2, 6), states, out)
  teacher = model.sequence_logprobs(policy, CONFIG, prompts, out.tokens.reshape(-1, 6),
                                    out.mask.reshape(-1, 6), samples_per_prompt=6)
  real = np.asarray(out.mask).reshape(-1, 6)
  np.testing.assert_allclose(np.asarray(got).reshape(-1, 6)[real], np.asarray(teacher)[real],
                             atol=1e-5)
  assert real.sum() > 20


@pytest.mark.slow
def test_vines_are_distributed_as_the_policy_continuation(policy):
  """4000 vines of one state: their first token's frequencies match the policy's
  next-token distribution after prompt + prefix (chi-square), not after the prompt."""
  prompts, roots, _ = _roots()
  states = vines.RolloutStates(jnp.array([[0], [0]]), jnp.array([[3], [1]]),
                               jnp.array([[True], [True]]))
  out = vines.sample_vines(policy, CONFIG, jax.random.key(7), prompts[:1], roots[:1],
                           jax.tree.map(lambda x: x[:1], states), samples=4000)
  first = np.asarray(out.tokens[0, 0, :, 3])
  context = jnp.array([[6, 7, 2, 3, 4]])
  probs = np.asarray(jax.nn.softmax(model.forward(policy, CONFIG, context)[0, -1]), np.float64)
  counts = np.bincount(first, minlength=8)
  support = probs > 1e-3
  assert counts[~support].sum() <= 2
  assert stats.chisquare(counts[support], probs[support] / probs[support].sum()
                         * counts[support].sum()).pvalue > 1e-3
  prompt_only = np.asarray(jax.nn.softmax(model.forward(policy, CONFIG, context[:, :2])[0, -1]))
  assert np.abs(prompt_only - probs).max() > 0.05   # the prefix matters: the test can fail
