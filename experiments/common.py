"""Wiring shared by the entry points: ConfigDict -> env, model config, base model."""

import dataclasses

import jax

import envs
from envs import datasets
from polyepo import _checks, evaluate, loop, model, pretrain, train


def rl_settings(config):
  """Unpacks the ConfigDict into (TrainConfig, RunSettings); validates both."""
  train_config = train.TrainConfig(**config.train.to_dict())
  run = config.run.to_dict()
  num_devices = run.pop("num_devices")
  run_settings = loop.RunSettings(**run)
  train.validate(train_config)
  loop.validate_settings(run_settings, train_config)
  _checks.one_of("matmul_dtype", config.matmul_dtype, model.MATMUL_DTYPES)
  return train_config, run_settings, num_devices


def policy_model_config(config, base_model_config):
  """The base model's TransformerConfig with the RL config's matmul_dtype."""
  return dataclasses.replace(base_model_config, matmul_dtype=config.matmul_dtype)


def pretrain_settings(config):
  """Unpacks a pretraining ConfigDict into (env, env_params, model_config, PretrainConfig)."""
  env, env_params = envs.make(config.domain, **config.env)
  model_config = pretrain.model_config_for(env, **config.model)
  pretrain_config = pretrain.PretrainConfig(
      **{**config.pretrain.to_dict(), "mixture": tuple(config.pretrain.mixture)})
  # Fail on a bad mixture before anything compiles.
  pretrain.make_pretrain(pretrain_config, model_config, env, env_params)
  return env, env_params, model_config, pretrain_config


def base_model(config, progress=True):
  """(env, model_config, params, directory) for a pretraining ConfigDict."""
  env, env_params, model_config, pretrain_config = pretrain_settings(config)
  params, directory, _ = pretrain.base_model(
      env, env_params, description={"name": config.domain, **config.env.to_dict()},
      model_config=model_config, config=pretrain_config, seed=config.seed,
      checkpoint_dir=config.checkpoint, cache_dir=config.cache_dir, progress=progress)
  return env, model_config, params, directory


def eval_problems(domain, splits=("test", "ood"), num_problems=None):
  """{split: problems} from the TFDS eval splits (built on first use)."""
  out = {}
  for split in splits:
    problems = datasets.load_split(domain, split)
    if num_problems is not None:
      problems = jax.tree.map(lambda x: x[:num_problems], problems)
    out[split] = problems
  return out


def base_report(config, env, model_config, params):
  """{split: summary} of the base model on the eval splits."""
  problems = eval_problems(config.domain, config.report.splits, config.report.num_problems)
  return {split: evaluate.evaluate(params, model_config, env, p, jax.random.key(1000 + i),
                                   num_samples=config.report.num_samples,
                                   temperature=config.report.temperature)
          for i, (split, p) in enumerate(problems.items())}
