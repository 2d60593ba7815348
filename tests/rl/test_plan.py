"""The run plan (`polyepo.rl.plan`): every check before any work and before any file."""

import dataclasses
import os

import pytest

import toy_env
from polyepo.rl import algorithms, plan, train

TINY = train.TrainConfig(prompts_per_step=2, samples_per_prompt=4, num_steps=4,
                         steps_per_chunk=2, num_minibatches=1)
SET_RL = algorithms.resolve(dict(name="set_rl", set_size=2))


class _NoStepBoundaries(toy_env.ChoiceEnv):
  has_step_boundaries = False


def _plan(workdir, config=TINY, settings=plan.RunSettings(eval_every=2, checkpoint_every=2),
          env=None, algorithm=SET_RL, **kwargs):
  """plan.make with loaders that record whether they ran."""
  loaded = []
  env = env or toy_env.ChoiceEnv()
  run = plan.make(config, algorithm, settings, env, env.default_params(), str(workdir),
                  load_base=lambda: loaded.append("base") or ("model config", "params"),
                  load_problems=lambda: loaded.append("problems") or {"test": "problems"},
                  **kwargs)
  return run, loaded


def _files(path):
  return sorted(os.path.relpath(os.path.join(d, f), path)
                for d, _, names in os.walk(path) for f in names) if os.path.exists(path) else None


def _existing_run(tmp_path):
  workdir = tmp_path / "run"
  workdir.mkdir()
  (workdir / "train.jsonl").write_text('{"step": 1}\n')
  return workdir


@pytest.mark.parametrize("case,match", [
    ("eval_every", "eval_every=3 must be a non-negative multiple of steps_per_chunk=2"),
    ("checkpoint_every", "checkpoint_every=1 must be a non-negative multiple"),
    ("env", "algorithm 'set_rl_windowed' needs an env with step_boundaries"),
    ("algorithm", "set_size must satisfy 1 <= set_size < samples_per_prompt=4, got set_size=4"),
    ("exists", "already exists. Pass --resume"),
    ("resume_and_overwrite", "Pass at most one of --resume and --overwrite."),
    ("resume_what_is_not_a_run", "is not a run directory"),
])
def test_each_check_raises_before_anything_is_loaded_or_written(case, match, tmp_path):
  workdir, kwargs = tmp_path / "run", {}
  if case == "eval_every":
    kwargs["settings"] = plan.RunSettings(eval_every=3, checkpoint_every=2)
  elif case == "checkpoint_every":
    kwargs["settings"] = plan.RunSettings(eval_every=2, checkpoint_every=1)
  elif case == "env":
    kwargs.update(algorithm=algorithms.resolve(dict(
        name="set_rl_windowed", first=dict(name="set_rl", set_size=2))), env=_NoStepBoundaries())
  elif case == "algorithm":   # n = 4 of N = 4 (the factory cannot know N)
    kwargs["algorithm"] = algorithms.resolve(dict(name="set_rl", set_size=4))
  elif case == "exists":
    workdir = _existing_run(tmp_path)
  elif case == "resume_and_overwrite":
    workdir = _existing_run(tmp_path)
    kwargs.update(resume=True, overwrite=True)
  else:
    workdir.mkdir()
    (workdir / "notes.txt").write_text("mine")
    kwargs["resume"] = True
  before = _files(workdir)
  loaded = []
  with pytest.raises((ValueError, FileExistsError), match=match):
    _, loaded = _plan(workdir, **kwargs)
  assert loaded == []
  assert _files(workdir) == before   # None: the directory was never created


def test_a_plan_is_frozen_and_loads_after_its_checks(tmp_path):
  run, loaded = _plan(tmp_path / "run", record={"name": "x"})
  assert loaded == ["base", "problems"]
  assert (run.model_config, run.base_params, run.eval_problems) == (
      "model config", "params", {"test": "problems"})
  assert run.record == {"name": "x"} and not run.resume and not run.overwrite
  assert run.algorithm is SET_RL and run.config is TINY
  with pytest.raises(dataclasses.FrozenInstanceError):
    run.workdir = "elsewhere"
  assert not (tmp_path / "run").exists()   # the loop creates it, not the plan


def test_an_existing_run_may_be_resumed_or_overwritten(tmp_path):
  workdir = _existing_run(tmp_path)
  for flag in ("resume", "overwrite"):
    run, _ = _plan(workdir, **{flag: True})
    assert getattr(run, flag)
  assert _files(workdir) == ["train.jsonl"]


@pytest.mark.parametrize("settings,config,match", [
    (dict(eval_every=3), {}, "eval_every=3 must be a non-negative multiple of steps_per_chunk=2"),
    (dict(checkpoint_every=3), {}, "checkpoint_every=3 must be a non-negative multiple"),
    (dict(checkpoint_every=-2), {}, "checkpoint_every must be >= 0, got -2"),
    ({}, dict(num_steps=5), "num_steps=5 must be a multiple of steps_per_chunk=2"),
    (dict(num_seeds=0), {}, "num_seeds must be >= 1, got 0"),
    (dict(num_seeds=2, seed_batch_size=3), {}, r"seed_batch_size=3 must be 0 .* or 1..num_seeds=2"),
    (dict(num_seeds=2, seed_batch_size=-1), {}, r"seed_batch_size=-1 must be 0"),
    (dict(eval_num_problems=0), {}, "eval_num_problems must be >= 1, got 0"),
    (dict(eval_num_samples=0), {}, "eval_num_samples must be >= 1, got 0"),
    (dict(eval_temperature=-1.0), {}, "eval_temperature must be >= 0, got -1.0"),
    (dict(eval_problems_per_chunk=-1), {}, "eval_problems_per_chunk must be >= 0, got -1"),
    (dict(num_seeds=2, eval_seed_batch_size=3), {},
     r"eval_seed_batch_size=3 must be 0 .* or 1..num_seeds=2"),
    (dict(num_devices=-1), {}, "num_devices must be >= 0, got -1"),
    (dict(max_checkpoints=0), {}, "max_checkpoints must be >= 1, got 0"),
])
def test_run_settings_validation(settings, config, match):
  with pytest.raises(ValueError, match=match):
    plan.validate(plan.RunSettings(**settings), dataclasses.replace(TINY, **config), SET_RL,
                  toy_env.ChoiceEnv())


def test_the_default_run_settings_are_valid():
  """The defaults fit together: TrainConfig's N = 16 and every algorithm's defaults."""
  for name in algorithms.REGISTRY:
    plan.validate(plan.RunSettings(), train.TrainConfig(), algorithms.resolve(name),
                  toy_env.ChoiceEnv())
  train.validate(train.TrainConfig())


def test_resume_and_overwrite_together_are_refused(tmp_path):
  with pytest.raises(ValueError, match="at most one of --resume and --overwrite"):
    plan.check_workdir(str(tmp_path / "run"), resume=True, overwrite=True)


def test_existing_workdir_is_refused(tmp_path):
  workdir = tmp_path / "run"
  workdir.mkdir()
  (workdir / "train.jsonl").write_text("{}\n")
  with pytest.raises(FileExistsError, match="--resume .* --overwrite"):
    plan.check_workdir(str(workdir), resume=False, overwrite=False)
  plan.check_workdir(str(workdir), resume=False, overwrite=True)
  plan.prepare_workdir(str(workdir), overwrite=True)
  assert not (workdir / "train.jsonl").exists()
