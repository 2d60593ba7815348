"""Tests for the envs registry and the env API shared by all domains."""

import importlib
import importlib.util
import json
import os
import subprocess
import sys
import uuid

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import addition_env
import envs
import toy_env
from polyepo import env_api
import repo

AVAILABLE = [n for n in envs.NAMES if importlib.util.find_spec(envs.target(n).split(":")[0])]


def _fresh_name():
  return f"toy_{uuid.uuid4().hex[:8]}"


def test_a_registered_class_is_made_by_its_name():
  name = _fresh_name()
  assert name not in envs.names()
  envs.register(name, toy_env.ChoiceEnv)
  assert envs.names()[-1] == name and name not in envs.NAMES
  env, params = envs.make(name)
  assert isinstance(env, toy_env.ChoiceEnv) and params == {}
  assert envs.get_class(name) is toy_env.ChoiceEnv
  assert envs.target(name) == "toy_env:ChoiceEnv" and envs.slug(name) == name


def test_a_registered_module_class_string_is_imported_on_first_use():
  name = _fresh_name()
  envs.register(name, "addition_env:Addition")
  assert envs.get_class(name) is addition_env.Addition
  assert isinstance(envs.make(name)[0], addition_env.Addition)


def test_registering_a_name_again():
  name = _fresh_name()
  envs.register(name, "toy_env:ChoiceEnv")
  envs.register(name, toy_env.ChoiceEnv)  # the same target: nothing changes
  envs.register(name, "toy_env:ChoiceEnv")
  assert envs.names().count(name) == 1
  with pytest.raises(ValueError, match=rf"'{name}' is already registered as toy_env:ChoiceEnv; "
                     "cannot register it again as addition_env:Addition"):
    envs.register(name, addition_env.Addition)
  with pytest.raises(ValueError, match="already registered as envs.multiplication:Multiplication"):
    envs.register(envs.NAMES[0], "addition_env:Addition")
  assert envs.get_class(name) is toy_env.ChoiceEnv


@pytest.mark.parametrize("name,target,match", [
    ("my-domain", "toy_env:ChoiceEnv", "'my-domain' must be letters, digits and _"),
    ("addition_env:Addition", "toy_env:ChoiceEnv", "needs no registration"),
    ("ok_name", "toy_env.ChoiceEnv", "target 'toy_env.ChoiceEnv' is not 'package.module:Class'"),
    ("ok_name", 3, "neither a class nor"),
])
def test_register_refuses_bad_names_and_targets(name, target, match):
  with pytest.raises(ValueError, match=match):
    envs.register(name, target)


def test_a_module_class_domain_needs_no_registration():
  assert envs.get_class("addition_env:Addition") is addition_env.Addition
  env, _ = envs.make("toy_env:ChoiceEnv", solves=np.eye(4))
  np.testing.assert_array_equal(env.solves, np.eye(4))
  assert "addition_env:Addition" not in envs.names()
  assert envs.target("addition_env:Addition") == "addition_env:Addition"
  assert envs.slug("addition_env:Addition") == "addition_env-Addition"
  assert envs.slug("a.b:C") == "a.b-C"  # a registered name never has '-' or '.'


@pytest.mark.parametrize("domain,match", [
    ("no_such_module_x:Env", "Domain 'no_such_module_x:Env': cannot import module "
     "'no_such_module_x' \\(ModuleNotFoundError"),
    ("addition_env:Subtraction", "Domain 'addition_env:Subtraction': module 'addition_env' "
     "has no 'Subtraction'"),
    ("addition_env:VOCAB", "addition_env:VOCAB is a Vocab, not a class"),
])
def test_a_module_class_that_is_not_there_is_one_line_naming_it(domain, match):
  with pytest.raises(ValueError, match=match) as err:
    envs.make(domain)
  assert "\n" not in str(err.value)


def test_unknown_name_lists_the_registered_ones():
  name = _fresh_name()
  envs.register(name, "toy_env:ChoiceEnv")
  for call in (envs.make, envs.get_class, envs.target, envs.slug):
    with pytest.raises(ValueError) as err:
      call("no_such_domain")
    assert "'no_such_domain'" in str(err.value) and "package.module:Class" in str(err.value)
    for registered in envs.names():
      assert registered in str(err.value)
  assert name in envs.names()


def test_importing_envs_is_cheap():
  code = ("import sys, envs; import envs.kit.grammar, envs.kit.symbols; "
          "assert 'tensorflow_datasets' not in sys.modules; "
          "assert 'polyepo.train' not in sys.modules")
  subprocess.run([sys.executable, "-c", code], check=True)


PROTOCOL = set(env_api.Env.__annotations__) | {
    n for n in vars(env_api.Env) if not n.startswith("_")}


@pytest.mark.parametrize("name", AVAILABLE + ["toy_env:ChoiceEnv", "addition_env:Addition"])
def test_every_env_has_the_whole_protocol(name):
  env = envs.make(name)[0]
  assert {"strategy_names", "strategy_families", "default_params", "ood_params", "answers",
          "score", "demonstrate", "parse_problems", "response_text"} <= PROTOCOL
  missing = [m for m in PROTOCOL if not hasattr(env, m)]
  assert not missing, missing


def test_the_library_does_not_probe_envs():
  import pathlib  # pylint: disable=g-import-not-at-top
  root = pathlib.Path(repo.ROOT)
  for path in list((root / "polyepo").glob("*.py")) + list((root / "experiments").glob("*.py")):
    text = path.read_text()
    assert "hasattr(env" not in text and "getattr(env" not in text, path


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
  module = importlib.import_module(envs.target(name).split(":")[0])
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


@pytest.mark.slow  # ~3 minutes on 2 cores: pretraining, eval splits, 4 RL steps
def test_a_domain_outside_envs_trains_with_no_edit_to_the_repository(tmp_path):
  """docs/adding-a-domain.md's worked example, tests/helpers/addition_env.py, named by
  `package.module:Class` with its directory on PYTHONPATH."""
  root = repo.ROOT
  path = os.pathsep.join(filter(None, [os.path.join(root, "tests", "helpers"),
                                       os.environ.get("PYTHONPATH")]))
  env = dict(os.environ, PYTHONPATH=path, POLYEPO_CACHE=str(tmp_path / "models"),
             POLYEPO_DATA_DIR=str(tmp_path / "tfds"), JAX_PLATFORMS="cpu")
  workdir = tmp_path / "run"
  result = subprocess.run(
      [sys.executable, "-m", "experiments.synthetic",
       "--config=configs/grpo.py:domain=addition_env:Addition,size=smoke",
       f"--workdir={workdir}"], cwd=root, env=env, capture_output=True, text=True, timeout=900)
  assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-4000:]
  evals = [json.loads(line) for line in open(workdir / "eval.jsonl")]
  assert [e["step"] for e in evals] == [0, 4]
  assert set(evals[-1]) >= {"validation", "test", "ood"}
  assert list(evals[-1]["test"]["mean"]["strategy_share"]) == ["split", "jump", "round",
                                                               "DEGENERATE"]
  assert "== grpo / addition_env:Addition / test" in result.stdout
  assert (tmp_path / "tfds" / "synthetic_problems" / "addition_env-Addition-256-seed0").is_dir()
