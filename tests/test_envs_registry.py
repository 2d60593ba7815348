"""Tests for the envs registry and the env API shared by all domains."""

import importlib
import importlib.util

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import envs
from polyepo import env_api

AVAILABLE = [n for n in envs.NAMES
             if importlib.util.find_spec(envs._REGISTRY[n].split(":")[0])]  # pylint: disable=protected-access


def test_unknown_name_lists_valid_choices():
  with pytest.raises(ValueError) as err:
    envs.make("addition")
  assert "'addition'" in str(err.value)
  for name in envs.NAMES:
    assert name in str(err.value)


def test_names():
  assert envs.NAMES == ("multiplication", "polynomial_roots")
  assert "multiplication" in AVAILABLE


def test_importing_envs_is_cheap():
  import subprocess, sys  # pylint: disable=g-import-not-at-top,multiple-imports
  code = ("import sys, envs; import envs.common; "
          "assert 'tensorflow_datasets' not in sys.modules; "
          "assert 'polyepo.train' not in sys.modules")
  subprocess.run([sys.executable, "-c", code], check=True)


@pytest.mark.parametrize("name", AVAILABLE)
def test_env_api(name):
  env, params = envs.make(name)
  members = set(env_api.Env.__annotations__) | {
      n for n in vars(env_api.Env) if not n.startswith("_")}
  assert {"strategy_names", "score", "demonstrate", "parse_problems"} <= members
  for member in members | {"default_params", "ood_params"}:
    assert hasattr(env, member), member
  assert len(env.strategy_names) >= 6
  assert env.pad_id != env.eos_id
  assert 0 <= env.pad_id < env.vocab_size and 0 <= env.eos_id < env.vocab_size
  key_p, key_s = jax.random.split(jax.random.PRNGKey(0))
  b = 16
  problems = env.sample_problems(key_p, params, b)
  assert all(leaf.shape[0] == b for leaf in jax.tree.leaves(problems))
  prompts = env.prompt_tokens(problems)
  assert prompts.ndim == 2 and prompts.shape[0] == b and prompts.dtype == jnp.int32
  applicable = np.asarray(env.applicable(problems))
  assert applicable.shape == (b, len(env.strategy_names)) and applicable.any(1).all()
  # Params are a pytree that vmaps: one problem per params setting.
  both = jax.tree.map(lambda x, y: jnp.stack([x, y]), env.default_params(), env.ood_params())
  sampled = jax.vmap(lambda k, p: env.sample_problems(k, p, 4))(jax.random.split(key_s), both)
  assert all(leaf.shape[:2] == (2, 4) for leaf in jax.tree.leaves(sampled))
  with pytest.raises(ValueError):
    env.parse_problems(["this is not a problem"])


@pytest.mark.slow  # compiles demonstrate and score (~30 s per env on 2 cores)
@pytest.mark.parametrize("name", AVAILABLE)
def test_demonstrations_score_and_render(name):
  env, params = envs.make(name)
  key_p, key_d = jax.random.split(jax.random.PRNGKey(1))
  b = 16
  problems = env.sample_problems(key_p, params, b)
  strategies = jnp.argmax(env.applicable(problems), axis=1)  # the first applicable one
  responses, ok = env.demonstrate(key_d, problems, strategies)
  assert responses.shape == (b, env.max_response_len) and np.asarray(ok).all()
  reward, label = env.score(problems, responses)
  assert reward.dtype == jnp.float32 and label.dtype == jnp.int32
  np.testing.assert_array_equal(np.asarray(reward), 1.0)
  np.testing.assert_array_equal(np.asarray(label), np.asarray(strategies))
  texts = env.render(problems, responses)
  assert len(texts) == b and all(isinstance(t, str) for t in texts)


def _answer_string(tokens, marker, eos):
  """Brute force: the tokens after the last marker before the first EOS, or None."""
  tokens = list(tokens)
  if eos not in tokens:
    return None
  tokens = tokens[:tokens.index(eos)]
  if marker not in tokens:
    return None
  return tuple(tokens[len(tokens) - tokens[::-1].index(marker):])


@pytest.mark.parametrize("name", AVAILABLE)
def test_answer_ids_agree_with_answer_strings(name):
  env, params = envs.make(name)
  module = importlib.import_module(envs._REGISTRY[name].split(":")[0])  # pylint: disable=protected-access
  marker = module.STOI["#"]
  problems = env.sample_problems(jax.random.key(0), params, 16)
  num_strategies = len(env.strategy_names)
  rep = jax.tree.map(lambda x: jnp.repeat(x, num_strategies, 0), problems)
  strategies = jnp.tile(jnp.arange(num_strategies), 16)
  tokens, _ = env.demonstrate(jax.random.key(1), rep, strategies, slip_rate=0.5)
  tokens = np.array(tokens)
  # Cut some responses short (no EOS) and drop the marker from others.
  rng = np.random.default_rng(0)
  cut = rng.random(len(tokens)) < 0.1
  tokens[cut] = np.where(tokens[cut] == env.eos_id, env.pad_id, tokens[cut])
  unmarked = rng.random(len(tokens)) < 0.1
  tokens[unmarked] = np.where(tokens[unmarked] == marker, 0, tokens[unmarked])
  ids = np.asarray(env.answers(rep, jnp.asarray(tokens)))
  strings = [_answer_string(t, marker, env.eos_id) for t in tokens]
  assert ids.shape == (len(tokens),) and ids.dtype == np.int32
  for i, s in enumerate(strings):
    assert (ids[i] == -1) == (s is None)
  for i, s in enumerate(strings):
    for j, u in enumerate(strings):
      if s is not None and u is not None:
        assert (ids[i] == ids[j]) == (s == u), (s, u)
  # Correct responses to one problem share their answer.
  reward, _ = env.score(rep, jnp.asarray(tokens))
  reward = np.asarray(reward).reshape(16, num_strategies)
  by_problem = ids.reshape(16, num_strategies)
  for p in range(16):
    assert len(set(by_problem[p][reward[p] > 0].tolist())) <= 1
