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
  code = ("import sys, envs; import envs.kit.grammar, envs.kit.symbols; "
          "assert 'tensorflow_datasets' not in sys.modules; "
          "assert 'polyepo.train' not in sys.modules")
  subprocess.run([sys.executable, "-c", code], check=True)


PROTOCOL = set(env_api.Env.__annotations__) | {
    n for n in vars(env_api.Env) if not n.startswith("_")}


def _toy_env():
  import toy_env  # pylint: disable=g-import-not-at-top
  return toy_env.ChoiceEnv()


@pytest.mark.parametrize("name", AVAILABLE + ["toy"])
def test_every_env_has_the_whole_protocol(name):
  env = _toy_env() if name == "toy" else envs.make(name)[0]
  assert {"strategy_names", "strategy_families", "default_params", "ood_params", "answers",
          "score", "demonstrate", "parse_problems", "response_text"} <= PROTOCOL
  missing = [m for m in PROTOCOL if not hasattr(env, m)]
  assert not missing, missing


def test_the_library_does_not_probe_envs():
  import pathlib  # pylint: disable=g-import-not-at-top
  root = pathlib.Path(__file__).parent.parent
  for path in list((root / "polyepo").glob("*.py")) + list((root / "experiments").glob("*.py")):
    assert "hasattr(env" not in path.read_text(), path


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
