"""Tests for polyepo.forced: openings, forced prompts and completions, forced accuracy."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import envs
from polyepo.evaluation import forced, splits
from polyepo.policy import model
from polyepo.pretraining import pretrain
import toy_env


def _brute_openings(env, problems):
  """(length i32[B, S], usable bool[B, S]) by plain Python over the demonstrations."""
  num_problems = jax.tree.leaves(problems)[0].shape[0]
  num_strategies = len(env.strategy_names)
  applicable = np.asarray(env.applicable(problems))
  length = np.zeros((num_problems, num_strategies), int)
  usable = np.zeros((num_problems, num_strategies), bool)
  for b in range(num_problems):
    one = jax.tree.map(lambda x: x[b:b + 1], problems)
    demos = {s: [t for t in np.asarray(env.demonstrate(jax.random.key(0), one,
                                                       jnp.array([s]))[0][0]).tolist()
                 if t != env.pad_id] for s in np.flatnonzero(applicable[b])}
    for s, own in demos.items():
      shared = 0
      for other_s, other in demos.items():
        if other_s != s:
          n = 0
          while n < min(len(own), len(other)) and own[n] == other[n]:
            n += 1
          shared = max(shared, n)
      length[b, s] = shared + 1
      usable[b, s] = shared + 1 < len(own)
  return length, usable


@pytest.mark.slow
@pytest.mark.parametrize("domain", envs.NAMES)
def test_openings_match_brute_force(domain):
  env, params = envs.make(domain)
  problems = splits.sample(env, jax.random.key(1), params, 24)
  found = forced.openings(env, problems)
  length, usable = _brute_openings(env, problems)
  np.testing.assert_array_equal(np.asarray(found.usable), usable)
  np.testing.assert_array_equal(np.where(usable, np.asarray(found.length), 0),
                                np.where(usable, length, 0))


def test_opening_of_a_hand_worked_problem():
  """55 * 80: long_by_b `55*0=0;...` shares `5` with place_value `50*80=...` and
  karatsuba `5*8=...`, so its opening is `55`; long_by_a `80*5=...` shares
  nothing with any other applicable strategy (halve_double starts `40*110`)."""
  env, _ = envs.make("multiplication")
  problems = envs.multiplication.MultiplicationProblems(jnp.array([55]), jnp.array([80]))
  found = forced.openings(env, problems)
  names = env.strategy_names
  assert int(found.length[0, names.index("long_by_b")]) == 2
  assert int(found.length[0, names.index("long_by_a")]) == 1
  assert not bool(found.usable[0, names.index("round_adjust")])  # does not apply


def test_forced_prompts_and_complete_hand_values():
  pad = 0
  prompts = jnp.array([[0, 7, 8], [6, 7, 8]])
  opening = jnp.array([[1, 2, 3, 4], [5, 6, 9, 9]])
  length = jnp.array([2, 1])
  np.testing.assert_array_equal(forced.forced_prompts(prompts, opening, length, pad),
                                [[0, 0, 0, 7, 8, 1, 2], [0, 0, 0, 6, 7, 8, 5]])
  continuation = jnp.array([[11, 12, 13, 14], [21, 22, 23, 24]])
  np.testing.assert_array_equal(forced.complete(opening, length, continuation),
                                [[1, 2, 11, 12], [5, 21, 22, 23]])


def test_forced_accuracy_counts_only_correct_responses_that_follow_the_strategy():
  """In the choice env the opening is the strategy token itself, so any policy
  follows it: a strategy's forced accuracy is exactly its solve rate over the
  problems used (here every problem, since all strategies apply)."""
  env = toy_env.ChoiceEnv()
  mc = model.TransformerConfig(vocab_size=env.vocab_size, pad_id=env.pad_id,
                               eos_id=env.eos_id, max_len=3, width=16, num_layers=1,
                               num_heads=2)
  params = model.init_params(jax.random.key(0), mc)
  problems = toy_env.Problems(jnp.arange(toy_env.NUM_PROBLEMS))
  accuracy = forced.forced_accuracy(params, mc, env, problems, jax.random.key(1),
                                    num_problems=4, num_samples=3)
  expected = toy_env.SOLVES.mean(0)
  assert accuracy == pytest.approx(dict(zip(env.strategy_names, expected.tolist())))


@pytest.mark.slow
def test_forced_accuracy_of_an_untrained_model_is_zero_and_of_none_is_none():
  env, params = envs.make("polynomial_roots")
  mc = pretrain.model_config_for(env, width=16, num_layers=1, num_heads=2)
  weights = model.init_params(jax.random.key(0), mc)
  problems = splits.sample(env, jax.random.key(2), params, 8, "test")
  quadratics = jax.tree.map(lambda x: x[np.asarray(problems.degree) == 2], problems)
  accuracy = forced.forced_accuracy(weights, mc, env, quadratics, jax.random.key(1),
                                    num_problems=2, num_samples=2)
  assert accuracy["grouping"] is None and accuracy["depressed_cubic"] is None  # cubics only
  assert accuracy["factor"] == 0.0
