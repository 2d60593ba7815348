"""The configs: one source of defaults and docs (the dataclasses), every field documented,
the values the experiments run with, and validation when they are unpacked
(experiments.build)."""

import dataclasses
import json
import os
import re
import uuid

import pytest

import envs
from configs import (base, choices, dr_grpo, grpo, pass_at_k, poly_epo, poly_epo_official,
                     poly_epo_windowed, poly_ppo, ppo, reward_shaping)
from configs import pretrain as pretrain_config
from experiments import build
from experiments.analysis import algorithms as analysis_algorithms
from polyepo.policy import model
from polyepo.pretraining import pretrain
from polyepo.rl import algorithms, parts, plan, train
import repo

ROOT = repo.ROOT
ALGORITHMS = {"grpo": grpo, "reward_shaping": reward_shaping, "poly_epo": poly_epo,
              "pass_at_k": pass_at_k, "ppo": ppo, "poly_ppo": poly_ppo,
              "poly_epo_windowed": poly_epo_windowed, "poly_epo_official": poly_epo_official,
              "dr_grpo": dr_grpo}
# Hand-written: what each config file sets of its algorithm, besides the factory's
# defaults (config.algorithm is `algorithms.spec(name, **these)` at size=default).
SETS = {
    "grpo": ("grpo", {}),
    "reward_shaping": ("reward_shaping", dict(lam=0.3)),
    "poly_epo": ("set_rl", dict(objective="polychromic")),
    "pass_at_k": ("set_rl", dict(objective="pass_at_n")),
    "ppo": ("ppo", dict(critic={"model": "surprise"})),
    "poly_ppo": ("poly_ppo", dict(objective="polychromic", critic={"model": "surprise"})),
    "poly_epo_windowed": ("set_rl_windowed", dict(
        first={"name": "set_rl", "objective": "polychromic", "normalize": True},
        rest={"name": "grpo", "normalize": True})),
    "poly_epo_official": ("set_rl", dict(objective="polychromic", normalize=False)),
    "dr_grpo": ("grpo", dict(normalize=False)),
}
# Hand-written: what a config file sets of config.train at size=default (the
# Poly-EPO release's recipe, configs/poly_epo_official.py, and Dr. GRPO's beside it).
RELEASE = dict(samples_per_prompt=8, aggregation="sequence_sum", eps_low=0.2, eps_high=0.28,
               grad_clip=0.3, kl_coef=0.0)
TRAIN_SETS = {"poly_epo_official": RELEASE, "dr_grpo": RELEASE}
# Hand-written: what a size preset sets of an algorithm, wherever the algorithm (or
# a nested one: windowed's first and rest) has the field.
SIZE_SETS = {"smoke": dict(set_size=2), "default": {}, "paper": dict(set_size=8)}
VINE_SETS = {"smoke": dict(num_states=1, samples=3), "default": {}, "paper": dict(samples=16)}


def _names(cls):
  return {f.name for f in dataclasses.fields(cls)}


def _defaults(cls):
  return {f.name: f.default for f in dataclasses.fields(cls)
          if f.default is not dataclasses.MISSING}


@pytest.mark.parametrize("size", choices.SIZES)
@pytest.mark.parametrize("name", ALGORITHMS)
def test_config_fields_are_exactly_the_dataclass_fields(name, size):
  config = ALGORITHMS[name].get_config(f"size={size}")
  assert set(config.train) == _names(train.TrainConfig)
  assert set(config.algorithm) == set(algorithms.spec(SETS[name][0]))
  assert set(config.run) == _names(plan.RunSettings)
  assert set(config.base.pretrain) == _names(pretrain.PretrainConfig)
  assert set(config.base.model) == set(pretrain_config.MODEL_FIELDS) <= _names(
      model.TransformerConfig)


@pytest.mark.parametrize("domain", choices.DOMAINS)
@pytest.mark.parametrize("name", ALGORITHMS)
def test_default_size_takes_the_dataclass_defaults(name, domain):
  """size=default takes TrainConfig's and RunSettings' defaults, and the algorithm's
  factory's but for what its config file sets (SETS); it changes nothing but the
  per-domain pretraining values (mixture, slip_rate, num_steps: no dataclass default; the
  preference stage's mixture and steps: by default no preference stage; the
  weight decay)."""
  config = ALGORITHMS[name].get_config(f"domain={domain}")
  assert config.train.to_dict() == dict(dataclasses.asdict(train.TrainConfig()),
                                        **TRAIN_SETS.get(name, {}))
  algorithm, sets = SETS[name]
  assert config.algorithm.to_dict() == algorithms.spec(algorithm, **sets)
  assert config.run.to_dict() == dataclasses.asdict(plan.RunSettings())
  pretrain_defaults = _defaults(pretrain.PretrainConfig)
  assert set(pretrain_defaults) == _names(pretrain.PretrainConfig) - {
      "mixture", "slip_rate", "num_steps"}
  per_domain = {"preference_mixture", "preference_steps", "weight_decay"}
  assert {k: config.base.pretrain[k] for k in pretrain_defaults if k not in per_domain} == {
      k: v for k, v in pretrain_defaults.items() if k not in per_domain}
  model_defaults = model.TransformerConfig()
  assert {k: getattr(model_defaults, k) for k in config.base.model} == config.base.model.to_dict()


def _with_size(spec, size):
  """`spec` (an `algorithms.spec` dict) with SIZE_SETS[size] set wherever it or a
  nested algorithm has the field, and VINE_SETS[size] in its vines."""
  out = {k: _with_size(v, size) if isinstance(v, dict) and "name" in v else v
         for k, v in spec.items()}
  out.update({k: v for k, v in SIZE_SETS[size].items() if k in out})
  if "vines" in out:
    out["vines"] = dict(out["vines"], **VINE_SETS[size])
  return out


@pytest.mark.parametrize("size", choices.SIZES)
@pytest.mark.parametrize("name", ALGORITHMS)
def test_a_size_sets_the_set_size_and_vines_wherever_the_algorithm_has_them(name, size):
  """The size presets' set size and vines reach every algorithm that has them (windowed
  Poly-EPO's `first`) and no other; every config is valid at every size."""
  config = ALGORITHMS[name].get_config(f"size={size}")
  algorithm, sets = SETS[name]
  # The release's recipe keeps its N = 8 and n = 4 at size=paper; smoke shrinks it.
  recipe = name in TRAIN_SETS
  preset = "default" if recipe and size == "paper" else size
  assert config.algorithm.to_dict() == _with_size(algorithms.spec(algorithm, **sets), preset)
  samples = {"smoke": 4, "default": 8 if recipe else 16, "paper": 8 if recipe else 32}
  assert config.train.samples_per_prompt == samples[size]
  build.check_config(config)


def test_the_size_presets_by_hand():
  """Hand-written: smoke and paper's set sizes where an algorithm has one, windowed
  Poly-EPO's in `first` only, GRPO's algorithm the same at every size."""
  assert poly_epo.get_config("size=smoke").algorithm.set_size == 2
  assert poly_epo.get_config("size=paper").algorithm.set_size == 8
  windowed = poly_epo_windowed.get_config("size=smoke").algorithm
  assert windowed.first.to_dict() == dict(name="set_rl", objective="polychromic", set_size=2,
                                          num_subsets=0, normalize=True, normalize_over="prompt")
  assert windowed.rest.to_dict() == dict(name="grpo", normalize=True, normalize_over="prompt")
  assert "set_size" not in windowed
  assert poly_epo_windowed.get_config("size=paper").algorithm.first.set_size == 8
  assert all(grpo.get_config(f"size={size}").algorithm.to_dict() ==
             dict(name="grpo", normalize=True, normalize_over="prompt")
             for size in choices.SIZES)
  assert reward_shaping.get_config("size=smoke").algorithm.to_dict() == dict(
      name="reward_shaping", lam=0.3, normalize=True, normalize_over="prompt")
  assert ppo.get_config("size=smoke").algorithm.to_dict() == dict(
      name="ppo", critic=dict(model="surprise", learning_rate=1e-3, clip=0.2),
      gae=dict(gamma=1.0, lam=0.95), normalize=True)


def test_an_old_config_train_splits_into_train_config_and_the_moved_fields():
  """Every field config.train held before the algorithms were values (written out by
  hand) is either TrainConfig's or one `algorithms.upgrade` moves, never both."""
  old = {"estimator", "normalize", "normalize_over", "lam", "objective", "set_size",
         "num_subsets", "prompts_per_step", "samples_per_prompt", "temperature", "num_epochs",
         "num_minibatches", "microbatch_rows", "learning_rate", "warmup_steps",
         "weight_decay", "grad_clip", "eps_low", "eps_high", "aggregation", "kl_coef",
         "num_steps", "steps_per_chunk", "gamma", "gae_lambda", "value_learning_rate",
         "value_clip", "value_model", "num_vine_states", "vine_samples", "vine_window",
         "vine_selection"}
  shared = {f.name for f in dataclasses.fields(train.TrainConfig)}
  assert not shared & analysis_algorithms.MOVED_FROM_TRAIN
  assert shared | analysis_algorithms.MOVED_FROM_TRAIN == old


def test_the_main_job_runs_with_the_values_it_always_had():
  """Hand-written: the values of the main job (3e-5, 100 steps, ...; the base
  model's two stages as in results/base/)."""
  config = poly_epo.get_config("domain=multiplication")
  assert config.algorithm.to_dict() == dict(
      name="set_rl", objective="polychromic", set_size=4, num_subsets=0, normalize=True,
      normalize_over="prompt")
  assert config.train.to_dict() == dict(
      prompts_per_step=16, samples_per_prompt=16, temperature=1.0,
      num_epochs=1, num_minibatches=2, microbatch_rows=0, learning_rate=3e-5, warmup_steps=5,
      weight_decay=0.0,
      grad_clip=1.0, eps_low=0.2, eps_high=0.28, aggregation="token_mean", kl_coef=0.0,
      num_steps=100, steps_per_chunk=10)
  assert config.run.to_dict() == dict(
      num_seeds=1, seed_batch_size=0, seed=0, eval_every=50, checkpoint_every=50,
      eval_at_start=True, eval_splits=("validation", "test", "ood"),
      eval_num_problems=64, eval_num_samples=32, eval_temperature=1.0,
      eval_forced_problems=16, eval_forced_samples=8, eval_problems_per_chunk=0,
      eval_seed_batch_size=0, num_devices=0, max_checkpoints=2)
  assert config.resources.to_dict() == dict(num_cpus=1.0, num_gpus=1.0)
  assert config.base.model.to_dict() == dict(width=128, num_layers=3, num_heads=4,
                                             num_kv_heads=1, mlp_ratio=4, activation="relu")
  assert config.base.pretrain.to_dict() == dict(
      mixture=(1.0, 1.0, 1.5, 2.0, 1.5, 3.0, 3.0, 2.0), slip_rate=0.05, num_steps=2700,
      preference_mixture=(50.0, 20.0, 12.0, 8.0, 5.0, 1.0, 1.0, 0.01), preference_steps=1200,
      preference_learning_rate=3e-4, batch_size=256, learning_rate=3e-3, warmup_steps=50,
      end_lr_ratio=0.05, weight_decay=1.0, grad_clip=1.0, steps_per_chunk=50,
      microbatch_rows=0)
  roots = pretrain_config.get_config("domain=polynomial_roots").pretrain
  assert (roots.slip_rate, roots.num_steps, roots.preference_steps,
          roots.weight_decay) == (0.02, 12000, 600, 1.0)
  assert reward_shaping.get_config().algorithm.lam == 0.3
  assert grpo.get_config().algorithm.name == "grpo"
  assert (pass_at_k.get_config().algorithm.name,
          pass_at_k.get_config().algorithm.objective) == ("set_rl", "pass_at_n")
  smoke = grpo.get_config("size=smoke")
  assert (smoke.train.num_steps, smoke.train.num_minibatches, smoke.run.eval_every) == (4, 1, 0)
  paper = poly_epo.get_config("size=paper")
  assert (paper.train.samples_per_prompt, paper.train.num_steps,
          paper.run.num_seeds) == (32, 300, 3)


# Hand-written: configs/pretrain.py's per-domain values before they moved beside
# the env classes (its MIXTURES, PREFERENCES, PRETRAIN_STEPS, PREFERENCE_STEPS,
# SLIP_RATES and WEIGHT_DECAYS); the other fields are PretrainConfig's defaults.
# Multiplication's weight decay (0.01 -> 1.0) and halve_double's preference weight
# (2.0 -> 1.0) and polynomial roots' competence steps (1,000 -> 3,000) changed
# with the exercise splits, multiplication's competence steps (1,350 -> 2,700) and
# polynomial roots' (3,000 -> 6,000) with the class splits, then multiplication's
# preference steps (900 -> 1,200) and polynomial roots' competence steps (6,000 ->
# 12,000), preference steps (150 -> 600) and slip rate (0.1 -> 0.02), to meet the
# targets on them (docs/base-models.md).
OTHER_PRETRAIN_FIELDS = dict(preference_learning_rate=3e-4, batch_size=256, learning_rate=3e-3,
                             warmup_steps=50, end_lr_ratio=0.05, grad_clip=1.0,
                             steps_per_chunk=50, microbatch_rows=0)
PRETRAIN_THEN = {
    "multiplication": dict(
        mixture=(1.0, 1.0, 1.5, 2.0, 1.5, 3.0, 3.0, 2.0), slip_rate=0.05, num_steps=2700,
        preference_mixture=(50.0, 20.0, 12.0, 8.0, 5.0, 1.0, 1.0, 0.01), preference_steps=1200,
        weight_decay=1.0, **OTHER_PRETRAIN_FIELDS),
    "polynomial_roots": dict(
        mixture=(1.0,) * 8, slip_rate=0.02, num_steps=12000,
        preference_mixture=(45.0, 20.0, 4.0, 6.0, 8.0, 15.0, 3.0, 1.0), preference_steps=600,
        weight_decay=1.0, **OTHER_PRETRAIN_FIELDS),
}


@pytest.mark.parametrize("domain", sorted(PRETRAIN_THEN))
def test_the_domains_pretrain_with_the_values_they_always_had(domain):
  assert pretrain_config.get_config(f"domain={domain}").pretrain.to_dict() == PRETRAIN_THEN[domain]
  smoke = pretrain_config.get_config(f"domain={domain},size=smoke").pretrain
  assert (smoke.num_steps, smoke.preference_steps, smoke.batch_size) == (20, 10, 32)


@pytest.mark.parametrize("domain", sorted(PRETRAIN_THEN))
def test_the_base_models_cache_key_is_unchanged(domain):
  """The main job's base model is still found: its cache key fields equal the
  config.json saved beside the committed base model."""
  config = build.base_config(poly_epo.get_config(f"domain={domain}"))
  _, _, model_config, settings = build.pretrain_settings(config)
  fields = pretrain.cache_key_fields({"name": config.domain, **config.env.to_dict()},
                                     model_config, settings, config.seed)
  with open(os.path.join(ROOT, "results", "base", domain, "model", "config.json")) as f:
    saved = json.load(f)
  assert json.loads(json.dumps(fields, default=str)) == saved


def test_a_domain_that_declares_nothing_gets_the_fallbacks():
  """toy_env.ChoiceEnv (4 strategies) declares no pretrain_defaults."""
  config = pretrain_config.get_config("domain=toy_env:ChoiceEnv")
  assert config.domain == "toy_env:ChoiceEnv"
  assert config.pretrain.to_dict() == dict(
      mixture=(1.0, 1.0, 1.0, 1.0), slip_rate=0.05, num_steps=1000, preference_mixture=(),
      preference_steps=0, weight_decay=0.01, **OTHER_PRETRAIN_FIELDS)
  smoke = pretrain_config.get_config("domain=toy_env:ChoiceEnv,size=smoke")
  assert smoke.pretrain.preference_steps == 0  # no preference stage to shorten
  build.pretrain_settings(smoke)  # valid


def test_a_domain_outside_envs_declares_its_own_defaults():
  """tests/helpers/addition_env.py declares a preference stage; the rest falls back."""
  config = grpo.get_config("domain=addition_env:Addition,size=smoke")
  assert config.domain == build.base_config(config).domain == "addition_env:Addition"
  assert "domain" not in config.base and "env" not in config.base  # named once
  pre = config.base.pretrain
  assert (pre.mixture, pre.preference_mixture, pre.preference_steps, pre.slip_rate) == (
      (1.0, 1.0, 1.0), (10.0, 30.0, 1.0), 10, 0.05)
  assert pretrain_config.get_config("domain=addition_env:Addition").pretrain.num_steps == 1000
  build.rl_settings(config)  # valid


class _MisspeltDefaults:
  strategy_names = ("a", "b")
  pretrain_defaults = dict(num_steps=10, mixtures=(1.0, 2.0))


def test_a_declared_field_that_does_not_exist_is_named():
  name = f"misspelt_{uuid.uuid4().hex[:8]}"
  envs.register(name, _MisspeltDefaults)
  with pytest.raises(ValueError, match=r"_MisspeltDefaults.pretrain_defaults: unknown fields "
                     r"\['mixtures'\]; valid fields: mixture, slip_rate, num_steps"):
    pretrain_config.get_config(f"domain={name}")


@pytest.mark.parametrize("size,states,vines,n", [
    ("smoke", 1, 3, 2), ("default", 2, 8, 4), ("paper", 2, 16, 8)])
def test_poly_ppo_and_ppo_configs(size, states, vines, n):
  """Hand-written: Poly-PPO's vines per size (n < N_v at every size, so each state's
  sets of n are proper subsets of its vines), PPO the same machinery without sets."""
  config = poly_ppo.get_config(f"domain=polynomial_roots,size={size}")
  a = config.algorithm
  assert (a.name, a.objective, a.num_subsets, a.normalize) == ("poly_ppo", "polychromic", 0,
                                                               True)
  assert (a.vines.num_states, a.vines.samples, a.set_size, a.vines.window) == (states, vines, n,
                                                                               2)
  assert (a.gae.gamma, a.gae.lam, a.critic.clip, a.vines.selection) == (1.0, 0.95, 0.2,
                                                                        "uniform")
  assert (a.critic.model, a.critic.learning_rate) == ("surprise", 1e-3)
  settings = build.rl_settings(config)
  train.check(settings.train, settings.algorithm, settings.env)
  assert settings.algorithm.critic == parts.Critic(model="surprise")
  assert settings.algorithm.extra_responses == states * vines
  assert settings.algorithm.responses_per_group(settings.train) == (
      settings.train.samples_per_prompt + states * vines)
  other = ppo.get_config(f"size={size}").algorithm
  assert (other.name, other.critic.model, "vines" in other) == ("ppo", "surprise", False)


def _documented(cls):
  """The names an Attributes section documents: `name:` or `a, b, c:` at its indent."""
  doc = cls.__doc__.split("Attributes:")[1]
  names = set()
  for match in re.finditer(r"^    ([\w, ]+):", doc, re.MULTILINE):
    names |= {n.strip() for n in match.group(1).split(",")}
  return names


@pytest.mark.parametrize("cls", [train.TrainConfig, plan.RunSettings, pretrain.PretrainConfig,
                                 model.TransformerConfig, parts.Critic, parts.Vines])
def test_every_field_is_documented_once_in_its_dataclass(cls):
  missing = sorted(_names(cls) - _documented(cls))
  assert not missing, f"{cls.__name__}'s docstring does not document {missing}"
  for path in ("configs/base.py", "configs/pretrain.py"):
    with open(os.path.join(ROOT, path)) as f:
      commented = re.findall(r"^#   (\w+) +\S", f.read(), re.MULTILINE)
    assert not set(commented) & _names(cls), f"{path} documents {cls.__name__} fields again"


def test_an_algorithm_cannot_set_an_unknown_field():
  with pytest.raises(ValueError, match=r"algorithm 'grpo' has no field 'lamb'; its fields: "
                                       r"normalize, normalize_over\."):
    base.get_config(None, name="x", algorithm="grpo", lamb=1.0)
  # A shared setting is config.train's, not the algorithm's.
  with pytest.raises(ValueError, match="algorithm 'set_rl' has no field 'learning_rate'"):
    base.get_config(None, name="x", algorithm="set_rl", learning_rate=1.0)
  with pytest.raises(ValueError, match="algorithm.name must be one of 'grpo', "):
    base.get_config(None, name="x", algorithm="a2c")


@pytest.mark.parametrize("arg,match", [
    ("domain=chess", "domain='chess' is not one of: multiplication, polynomial_roots"),
    ("domain=a:b:c", "domain='a:b:c' is not one of: multiplication, polynomial_roots"),
    ("domain=no_such_module_x:Env", "Domain 'no_such_module_x:Env': cannot import module"),
    ("domain=toy_env:NoSuchEnv", "Domain 'toy_env:NoSuchEnv': module 'toy_env' has no"),
    ("size=huge", "size='huge' is not one of: smoke, default, paper"),
    ("sizes=smoke", "Unknown config string key 'sizes'"),
    ("smoke", "is not of the form key=value"),
])
def test_bad_config_strings(arg, match):
  with pytest.raises(ValueError, match=match):
    poly_epo.get_config(arg)


# -- experiments.build: every config is validated when it is unpacked ------------


def test_rl_settings_unpacks_the_dataclasses():
  train_config, algorithm, settings, _, _ = build.rl_settings(poly_epo.get_config("size=smoke"))
  assert train_config == train.TrainConfig(
      **poly_epo.get_config("size=smoke").train.to_dict())
  assert isinstance(algorithm, algorithms.Algorithm)
  assert (algorithm.name, algorithm.maximises, algorithm.critic) == ("set_rl",
                                                                     ("polychromic", 2), None)
  assert settings.num_devices == 0 and settings.eval_num_samples == 4
  windowed = build.rl_settings(poly_epo_windowed.get_config("size=smoke")).algorithm
  assert (windowed.name, windowed.step_boundaries, windowed.maximises) == (
      "set_rl_windowed", True, ("polychromic", 2))


@pytest.mark.parametrize("field,value,match", [
    ("train.learning_rate", -1.0, "learning_rate must be >= 0, got -1.0"),
    ("run.eval_num_samples", 0, "eval_num_samples must be >= 1, got 0"),
    ("run.eval_temperature", -1.0, "eval_temperature must be >= 0, got -1.0"),
    ("run.max_checkpoints", 0, "max_checkpoints must be >= 1, got 0"),
    ("base.pretrain.num_steps", 0, "base: num_steps must be >= 1, got 0"),
    ("base.pretrain.batch_size", 0, "base: batch_size must be >= 1, got 0"),
    ("base.pretrain.learning_rate", 0.0, "base: learning_rate must be > 0, got 0.0"),
    ("base.pretrain.slip_rate", 1.0, r"base: slip_rate must be in \[0, 1\), got 1.0"),
    ("base.pretrain.mixture", (1.0, 2.0), "base: mixture has 2 weights but the env has 8"),
    ("base.pretrain.mixture", (0.0,) * 8, "base: mixture weights must be >= 0 with a positive"),
    ("base.pretrain.mixture", (-1.0,) + (1.0,) * 7, "base: mixture weights must be >= 0"),
    ("base.report.num_samples", 0, "base: report.num_samples must be >= 1, got 0"),
    ("base.report.temperature", -0.1, "base: report.temperature must be >= 0, got -0.1"),
    ("algorithm.name", "a2c", "algorithm.name must be one of 'grpo', 'reward_shaping', "
     "'set_rl', 'set_rl_windowed', 'ppo', 'poly_ppo'"),
    ("algorithm.objective", "polychromatic", "algorithm.objective must be one of 'polychromic'"),
    ("algorithm.set_size", 4, "set_size must satisfy 1 <= set_size < samples_per_prompt=4, "
     "got set_size=4"),
    ("algorithm.num_subsets", 7, r"num_subsets must be 0 \(all subsets\) or 1..C\(N, n\) = 6, "
     "got 7"),
    ("algorithm.normalize_over", "group", "algorithm.normalize_over must be one of 'prompt', "
     "'batch'"),
    # A name changed alone keeps the other algorithm's fields (the first in a
    # ConfigDict's sorted order is named).
    ("algorithm.name", "grpo", r"algorithm: grpo has no field 'num_subsets'; its fields: "
     r"normalize, normalize_over\."),
])
def test_a_bad_field_fails_when_unpacked_naming_it(field, value, match):
  config = poly_epo.get_config("size=smoke")
  config.update_from_flattened_dict({field: value})
  with pytest.raises(ValueError, match=match):
    build.check_config(config)


def test_pretrain_settings_validate_the_pretraining_config():
  config = pretrain_config.get_config("size=smoke")
  config.pretrain.warmup_steps = -1
  with pytest.raises(ValueError, match="warmup_steps must be >= 0, got -1"):
    build.pretrain_settings(config)
