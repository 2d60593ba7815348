"""What the entry points build from a ConfigDict: one validated run plan.

  run = build.rl_plan(config, workdir, resume=False, overwrite=False)
  loop.train_and_evaluate(run)

`rl_plan` unpacks a config into its frozen dataclasses (TrainConfig and
RunSettings check themselves at construction) and its algorithm
(`polyepo.rl.algorithms.resolve`, whose factory checks its hyperparameters),
checks what only the config can
say (the matmul dtype, the base model's pretraining config, an explicit base
checkpoint, a resumed run's config) and hands the rest to `plan.make`, which
checks the run before loading anything: every check runs once, before any
file is written, each a ValueError naming the bad field. The domain is named
once, `config.domain` with `config.env`: the base model (`base_config`), the
eval splits and the run record derive from it. The rules for resuming a run
under a changed config (`check_resumable`) live here too, beside the
ConfigDict layout they name.
"""

import dataclasses
import glob
import json
import os
from typing import Any, Dict, NamedTuple, Optional, Tuple

from flax import traverse_util
import jax
import ml_collections

import envs
from configs import pretrain as pretrain_configs
from envs import datasets
from experiments.analysis import algorithms
from polyepo import checks, parallel
from polyepo.evaluation import evaluate, forced, splits
from polyepo.io import checkpoint
from polyepo.policy import model
from polyepo.pretraining import pretrain
from polyepo.rl import algorithms as algorithms_lib
from polyepo.rl import plan, train


def default_workdir(config) -> str:
  """runs/<name>-<domain>-<size>, the run directory when none is given."""
  return os.path.join("runs", f"{config.name}-{envs.slug(config.domain)}-{config.size}")


def base_config(config) -> ml_collections.ConfigDict:
  """The pretraining config (configs/pretrain.py's layout) of an RL config's base
  model: `config.base` with the RL config's `domain` and `env`."""
  return ml_collections.ConfigDict(dict(
      config.base.to_dict(), **{name: config[name] for name in pretrain_configs.DOMAIN_FIELDS}))


class Settings(NamedTuple):
  """An RL config unpacked: its dataclasses, its algorithm and its env."""
  train: train.TrainConfig
  algorithm: algorithms_lib.Algorithm
  run: plan.RunSettings
  env: Any
  env_params: Any


def rl_settings(config) -> Settings:
  """Unpacks an RL ConfigDict into its Settings, checking what only the config can say.

  TrainConfig and RunSettings check their own fields at construction, the
  algorithm's factory its hyperparameters (errors start with "algorithm"), and
  `envs.make` the env's kwargs; this checks the matmul dtype, the resources a
  sweep asks of Ray, the base model's pretraining config (`base_config`, whose
  errors start with "base: ") and an explicit base checkpoint's config.json
  against `config.base.model` (`pretrain.check_checkpoint`). How they fit each
  other is `plan.validate`'s.
  """
  train_config = train.TrainConfig(**config.train.to_dict())
  algorithm = algorithms_lib.resolve(config.algorithm)
  run_settings = plan.RunSettings(**config.run.to_dict())
  checks.at_most("run.eval_num_problems", run_settings.eval_num_problems, datasets.SPLIT_SIZE,
                 " (the exercises of each eval split)")
  checks.one_of("matmul_dtype", config.matmul_dtype, model.MATMUL_DTYPES)
  ray_resources(config)
  env, env_params = envs.make(config.domain, **config.env)
  try:
    pretrain_config(base_config(config), env.strategy_names)
  except ValueError as err:
    raise ValueError(f"base: {err}") from err
  if config.base.checkpoint:
    pretrain.check_checkpoint(config.base.checkpoint,
                              pretrain.model_config_for(env, **config.base.model))
  return Settings(train_config, algorithm, run_settings, env, env_params)


def check_config(config) -> None:
  """Every check of `rl_plan` that needs nothing but the config (a sweep checks
  each of its runs this way before it starts any)."""
  settings = rl_settings(config)
  plan.validate(settings.run, settings.train, settings.algorithm, settings.env)


def rl_plan(config, workdir: Optional[str] = None, *, resume: bool = False,
            overwrite: bool = False, progress: bool = True) -> plan.RunPlan:
  """The validated plan of one RL run (`plan.make`), from its ConfigDict.

  Checks, in order and each once: the config (`rl_settings`), the mesh,
  resuming, the config the run started with (`check_resumable`), and the
  settings and env against the TrainConfig and the run directory
  (`plan.make`); then restores (or pretrains) the base model and loads
  the eval splits. Nothing is written to the run directory here.

  Args:
    config: an RL ConfigDict (configs/base.py's layout).
    workdir: the run directory (default: `default_workdir`).
    resume, overwrite: what to do with an existing run directory.
    progress: show the base model's pretraining progress, if it pretrains.
  """
  settings = rl_settings(config)
  mesh = parallel.make_mesh(settings.run.num_devices, settings.train.prompts_per_step)
  workdir = workdir or default_workdir(config)
  record = run_record(config, settings.env)
  if resume:
    check_resumable(workdir, record)

  def load_base():
    _, model_config, params, directory = base_model(base_config(config), progress=progress)
    print(f"base model: {describe_base_model(directory)}")
    return policy_model_config(config, model_config), params

  return plan.make(settings.train, settings.algorithm, settings.run, settings.env,
                   settings.env_params, workdir, load_base=load_base,
                   load_problems=lambda: eval_problems(config.domain, settings.run.eval_splits),
                   resume=resume, overwrite=overwrite, record=record, mesh=mesh)


def ray_resources(config) -> Tuple[float, float]:
  """(CPU cores, GPUs) a run asks of Ray under `experiments.sweep --launcher=ray`
  (`config.resources`; (1, 1) for a config without it). Raises ValueError
  naming the field for a negative value."""
  resources = config.get("resources") or {}
  num_cpus, num_gpus = resources.get("num_cpus", 1.0), resources.get("num_gpus", 1.0)
  checks.at_least("resources.num_cpus", num_cpus, 0)
  checks.at_least("resources.num_gpus", num_gpus, 0)
  return float(num_cpus), float(num_gpus)


def policy_model_config(config, base_model_config):
  """The base model's TransformerConfig with the RL config's matmul_dtype."""
  return dataclasses.replace(base_model_config, matmul_dtype=config.matmul_dtype)


def pretrain_config(config, strategy_names):
  """The validated PretrainConfig of a pretraining ConfigDict (its report settings too)."""
  result = pretrain.PretrainConfig(
      **{**config.pretrain.to_dict(), "mixture": tuple(config.pretrain.mixture),
         "preference_mixture": tuple(config.pretrain.preference_mixture)})
  pretrain.validate(result, strategy_names)
  evaluate.validate(num_problems=config.report.num_problems,
                    num_samples=config.report.num_samples,
                    temperature=config.report.temperature, prefix="report.")
  checks.at_most("report.num_problems", config.report.num_problems, datasets.SPLIT_SIZE,
                 " (the exercises of each eval split)")
  return result


def pretrain_settings(config):
  """Unpacks a pretraining ConfigDict into (env, env_params, model_config, PretrainConfig)."""
  env, env_params = envs.make(config.domain, **config.env)
  model_config = pretrain.model_config_for(env, **config.model)
  return env, env_params, model_config, pretrain_config(config, env.strategy_names)


# The base models shipped with the code, one folder each
# (results/base/<name>/model): params/ and the config.json of the cache key
# they were trained under (`pretrain.cache_key_fields`).
SHIPPED_BASE_MODELS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                   "results", "base")


def shipped_base_model(key_fields) -> Optional[str]:
  """The shipped base model trained under exactly `key_fields`, or None.

  Pretraining is not bitwise the same across CPUs, so the shipped model, not a
  retrain, is the one the documented results come from.
  """
  key_fields = json.loads(json.dumps(key_fields, default=str))
  for path in sorted(glob.glob(os.path.join(SHIPPED_BASE_MODELS, "*", "model", "config.json"))):
    directory = os.path.dirname(path)
    with open(path) as f:
      if json.load(f) == key_fields and checkpoint.has_params(directory):
        return directory
  return None


def base_model(config, progress=True):
  """(env, model_config, params, directory) for a pretraining ConfigDict.

  The base model is `config.checkpoint` if set; else, with `config.shipped`,
  the shipped one trained under this config (`shipped_base_model`); else the
  cached one, pretrained first if there is none.
  """
  env, env_params, model_config, settings = pretrain_settings(config)
  description = {"name": envs.slug(config.domain), **config.env.to_dict()}
  directory = config.checkpoint
  if not directory and config.shipped:
    directory = shipped_base_model(pretrain.cache_key_fields(
        description, model_config, settings, config.seed)) or ""
  params, directory, _ = pretrain.base_model(
      env, env_params, description=description, model_config=model_config, config=settings,
      seed=config.seed, checkpoint_dir=directory, cache_dir=config.cache_dir,
      progress=progress)
  return env, model_config, params, directory


def describe_base_model(directory: str) -> str:
  """The base model's directory, and whether it is the shipped one."""
  if is_shipped(directory):
    return (f"{os.path.relpath(directory)} (shipped with the code for this config; "
            f"--config.base.shipped=false pretrains one instead)")
  return directory


def is_shipped(directory: str) -> bool:
  """Whether `directory` is one of the shipped base models (read-only: a
  report about it is written elsewhere)."""
  return os.path.dirname(os.path.dirname(os.path.abspath(directory))) == SHIPPED_BASE_MODELS


def eval_problems(domain, names=splits.EVAL_SPLITS, num_problems=None):
  """{split: problems} of the TFDS eval splits `names` (built on first use)."""
  out = {}
  for split in names:
    problems = datasets.load_split(domain, split)
    if num_problems is not None:
      problems = jax.tree.map(lambda x: x[:num_problems], problems)
    out[split] = problems
  return out


def base_report(config, env, model_config, params):
  """{split: summary} of the base model on the eval splits, with each strategy's
  forced accuracy (`forced_accuracy`, on up to report.forced_problems problems).

  Also "train": {"forced_accuracy": ...} on problems drawn like the pretraining
  corpus's (the training split of the pretraining env params). Well above the
  test split's forced accuracy, it says the model memorised its training
  problems rather than learned the strategy.
  """
  problems = eval_problems(config.domain, config.report.splits, config.report.num_problems)
  out = {}
  for i, (split, p) in enumerate(problems.items()):
    out[split] = evaluate.evaluate(params, model_config, env, p, jax.random.key(1000 + i),
                                   num_samples=config.report.num_samples,
                                   temperature=config.report.temperature)
    out[split]["forced_accuracy"] = forced.forced_accuracy(
        params, model_config, env, p, jax.random.key(2000 + i),
        num_problems=config.report.forced_problems, num_samples=config.report.forced_samples,
        temperature=config.report.temperature)
  _, env_params = envs.make(config.domain, **config.env)
  train_problems = jax.device_get(splits.sample(
      env, jax.random.key(3000), env_params, config.report.num_problems, "train"))
  out["train"] = {"forced_accuracy": forced.forced_accuracy(
      params, model_config, env, train_problems, jax.random.key(3001),
      num_problems=config.report.forced_problems, num_samples=config.report.forced_samples,
      temperature=config.report.temperature)}
  return out


def run_record(config, env) -> Dict[str, Any]:
  """What a run's config.json holds: its config, its algorithm's row label
  (`algorithms.label_of`), the domain's {strategy: family}, so that the report
  reads them instead of rebuilding either, and the split scheme
  (`splits.SCHEME`), which decides the problems it trains and is evaluated on."""
  label = algorithms.label_of(config.algorithm.to_dict(), config.train.to_dict())
  return dict(config.to_dict(), label=label,
              strategy_families=dict(zip(env.strategy_names, env.strategy_families)),
              splits=splits.SCHEME)


# Config fields that change how a run is computed, or where its base model is
# found or cached, but not what it computes (to float rounding): a run may
# resume with them changed. A field matches itself and every field under it.
RESUMABLE_CHANGES = ("run.seed_batch_size", "run.num_devices", "train.microbatch_rows",
                     "run.eval_problems_per_chunk", "run.eval_seed_batch_size", "resources",
                     "base.cache_dir", "base.shipped", "base.report",
                     # derived from the config (`run_record`); older records lack them
                     "label", "strategy_families") + tuple(
                         f"base.pretrain.{name}" for name in pretrain.COMPUTE_FIELDS)
# Fields a resumed run may raise: a run resumed with more steps continues from
# its last checkpoint, and its steps are those of a run started with the longer
# length (the learning-rate schedule, `polyepo.train.make_optimizer`, does not
# depend on it), so a finished run can be extended.
EXTENDABLE = ("train.num_steps",)


# Fields a run's config.json held elsewhere before (old prefix -> new): the
# base model's domain and env were its own fields before the RL config named
# the domain once. A moved field that equals its new home is read as that one.
# (An algorithm's own fields moved from config.train to config.algorithm:
# `algorithms.upgrade` reads those.)
MOVED = {"base.domain": "domain", "base.env": "env"}


def upgrade_record(flat: Dict[str, Any]) -> Dict[str, Any]:
  """A flattened config.json (read through `algorithms.upgrade` first) with every
  MOVED field that equals its new home dropped; one that differs is kept, so that
  a resume names it as changed."""
  def home(key):
    for old, new in MOVED.items():
      if key == old or key.startswith(old + "."):
        return new + key[len(old):]
    return None
  return {k: v for k, v in flat.items() if home(k) is None or flat.get(home(k)) != v}


def added_defaults(algorithm: Optional[str] = None) -> Dict[str, Any]:
  """{"train.<field>": default, "run.<field>": default} for every TrainConfig and
  RunSettings field, and {"algorithm.<field>": default} for every field of the
  algorithm named `algorithm` (`algorithms_lib.spec`): a field a run's
  config.json lacks (it was added since the run started) at its default leaves
  what the run computes unchanged, so the run may resume."""
  out = {f"{prefix}.{name}": value
         for prefix, defaults in (("train", train.TrainConfig()), ("run", plan.RunSettings()))
         for name, value in dataclasses.asdict(defaults).items()}
  if algorithm is not None:
    out.update(traverse_util.flatten_dict({"algorithm": algorithms_lib.spec(algorithm)},
                                          sep="."))
  return out


def check_resumable(workdir: str, config_record: Dict[str, Any]) -> None:
  """Refuses to resume a run under another config than the one it started with.

  Compares config_record with the run's config.json, field by field, apart
  from RESUMABLE_CHANGES, a MOVED field (`upgrade_record`), a raised
  EXTENDABLE field and a TrainConfig or
  RunSettings field added since the run started, at its default
  (`added_defaults`); any other field that only one of them has counts as
  changed. The split scheme is always today's (`splits.SCHEME`): a run started
  under another trained and was evaluated on other problems. Raises ValueError
  naming each changed field with both values.
  """
  path = os.path.join(workdir, "config.json")
  if not os.path.exists(path):
    return
  with open(path) as f:
    started = upgrade_record(traverse_util.flatten_dict(algorithms.upgrade(json.load(f)),
                                                        sep="."))
  now = traverse_util.flatten_dict(json.loads(json.dumps(
      dict(config_record, splits=splits.SCHEME), default=str)), sep=".")
  unset = object()
  defaults = json.loads(json.dumps(added_defaults(now.get("algorithm.name")), default=str))
  added = lambda k: k not in started and k in defaults and now.get(k, unset) == defaults[k]
  extended = lambda k: (k in EXTENDABLE and k in started and k in now
                        and now[k] >= started[k])
  changed = [k for k in sorted(started.keys() | now.keys())
             if not any(k == f or k.startswith(f + ".") for f in RESUMABLE_CHANGES)
             and started.get(k, unset) != now.get(k, unset) and not extended(k)
             and not added(k)]
  if changed:
    show = lambda v: "unset" if v is unset else repr(v)
    raise ValueError(
        f"Run directory {workdir!r} was started with another config: "
        + "; ".join(f"{k} {show(started.get(k, unset))} -> {show(now.get(k, unset))}"
                    for k in changed)
        + ". Resume it with the config it started with (" + ", ".join(EXTENDABLE)
        + " may only grow: the run is extended), or pass --overwrite to start afresh.")
