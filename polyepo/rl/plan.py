"""One RL run's plan: its host-side settings, and every check before any work.

  run = plan.make(config, algorithm, settings, env, env_params, workdir,
                  load_base=..., load_problems=...)
  loop.train_and_evaluate(run)

`make` checks everything a run needs before any work and before any file is
written (the settings against the TrainConfig, the algorithm against the
shared settings and the env, the run directory), then loads the base model and the eval problems and
returns a frozen `RunPlan`, which `polyepo.rl.loop` trusts.
"""

import dataclasses
import os
from typing import Any, Callable, Dict, Optional, Tuple

from polyepo import checks, parallel
from polyepo.evaluation import evaluate, splits
from polyepo.io import rundir
from polyepo.rl import algorithms, train


@dataclasses.dataclass(frozen=True)
class RunSettings:
  """Host-side settings of a run (checked at construction, `check_settings`).

  The defaults are the RL configs' (configs/base.py builds `config.run` from
  them and overrides only the size presets).

  Attributes:
    num_seeds: S seeds trained together in one program.
    seed_batch_size: seeds computed at once (0 = by platform: all S on an
      accelerator, one at a time on a CPU; see `parallel.over_seeds`).
    seed: base seed; seed s uses fold_in(PRNGKey(seed), s).
    eval_every: evaluate every this many steps (a multiple of steps_per_chunk;
      0 = only at the start and the end).
    checkpoint_every: checkpoint every this many steps (a multiple of
      steps_per_chunk; the last step is always checkpointed).
    eval_at_start: evaluate the starting (base) model at step 0; runs that
      share a base model and eval settings would all record the same step-0
      evaluation, so a sweep may keep it in one of them.
    eval_splits: the eval splits evaluated (names among `polyepo.splits.EVAL_SPLITS`; a tuning
      run evaluates `validation` only, so that `test` and `ood` cannot pick
      anything).
    eval_num_problems: problems per eval split.
    eval_num_samples: samples per problem (pass@k for k up to this).
    eval_temperature: sampling temperature at evaluation (0: greedy).
    eval_forced_problems: problems per strategy for its forced accuracy at each
      evaluation (`polyepo.forced`; 0: not measured).
    eval_forced_samples: completions per (problem, strategy).
    eval_problems_per_chunk: problems per compiled sampling call at evaluation
      (0 = by platform, `evaluate.default_problems_per_chunk`: as many as make
      32 responses on a CPU, 8,192 on an accelerator). Changes only the speed.
    eval_seed_batch_size: seeds sampled in one compiled call at evaluation
      (vmapped, `evaluate.sample_seeds`; 0 = by platform, as seed_batch_size:
      all S on an accelerator, one at a time on a CPU). Changes only the speed.
    num_devices: devices of the `data` mesh axis that the entry point builds
      (`parallel.make_mesh`; 0 = all that divide the prompt batch).
    max_checkpoints: checkpoints kept.
  """
  num_seeds: int = 1
  seed_batch_size: int = 0
  seed: int = 0
  eval_every: int = 50
  checkpoint_every: int = 50
  eval_at_start: bool = True
  eval_splits: Tuple[str, ...] = splits.EVAL_SPLITS
  eval_num_problems: int = 64
  eval_num_samples: int = 32
  eval_temperature: float = 1.0
  eval_forced_problems: int = 16
  eval_forced_samples: int = 8
  eval_problems_per_chunk: int = 0
  eval_seed_batch_size: int = 0
  num_devices: int = 0
  max_checkpoints: int = 2

  def __post_init__(self):
    check_settings(self)


def check_settings(settings: RunSettings) -> None:
  """Raises ValueError naming the field and its valid range (at construction)."""
  checks.at_least("num_seeds", settings.num_seeds, 1)
  parallel.check_seed_batch_size(settings.seed_batch_size, settings.num_seeds)
  for name in ("eval_every", "checkpoint_every"):
    checks.at_least(name, getattr(settings, name), 0)
  names = tuple(settings.eval_splits)
  if not names or len(set(names)) < len(names) or set(names) - set(splits.EVAL_SPLITS):
    raise ValueError(f"eval_splits={names!r} must name each split at most once, at least "
                     f"one, among: {', '.join(splits.EVAL_SPLITS)}.")
  evaluate.validate(num_problems=settings.eval_num_problems,
                    num_samples=settings.eval_num_samples,
                    temperature=settings.eval_temperature,
                    problems_per_chunk=settings.eval_problems_per_chunk, prefix="eval_")
  parallel.check_seed_batch_size(settings.eval_seed_batch_size, settings.num_seeds,
                                 name="eval_seed_batch_size")
  checks.at_least("eval_forced_problems", settings.eval_forced_problems, 0)
  checks.at_least("eval_forced_samples", settings.eval_forced_samples, 1)
  checks.at_least("num_devices", settings.num_devices, 0)
  checks.at_least("max_checkpoints", settings.max_checkpoints, 1)


def validate(settings: RunSettings, config: train.TrainConfig,
             algorithm: algorithms.Algorithm, env) -> None:
  """Raises ValueError unless the run's settings, algorithm and env fit its
  TrainConfig: eval_every and checkpoint_every must be multiples of its
  steps_per_chunk, and the algorithm must run with the shared settings on the
  env (`train.check`). Each config and algorithm checks its own fields when
  built."""
  for name in ("eval_every", "checkpoint_every"):
    value = getattr(settings, name)
    if value % config.steps_per_chunk:
      raise ValueError(f"{name}={value} must be a non-negative multiple of "
                       f"steps_per_chunk={config.steps_per_chunk}.")
  train.check(config, algorithm, env)


def check_workdir(workdir: str, resume: bool, overwrite: bool) -> None:
  """Refuses, without touching a file, an existing run directory without resume
  or overwrite, and a directory that is not a run directory
  (`rundir.RUN_LAYOUT`) to resume or overwrite. Raises ValueError or
  FileExistsError naming the directory."""
  if resume and overwrite:
    raise ValueError("Pass at most one of --resume and --overwrite.")
  if not os.path.lexists(workdir) or (os.path.isdir(workdir) and not os.listdir(workdir)):
    return
  if overwrite:
    rundir.check(workdir, rundir.RUN_LAYOUT)
  elif not resume:
    raise FileExistsError(
        f"Run directory {workdir!r} already exists. Pass --resume to continue it from "
        f"its last checkpoint or --overwrite to delete it and start again.")
  elif not rundir.is_of(workdir, rundir.RUN_LAYOUT):
    raise FileExistsError(f"{workdir!r} is not a run directory (it holds no config, records "
                          f"or checkpoints of a run): there is nothing to resume there.")


@dataclasses.dataclass(frozen=True)
class RunPlan:
  """Everything one RL run needs, checked once (`make`).

  Attributes:
    config: the shared RL settings of the compiled step.
    algorithm: the algorithm (`polyepo.rl.algorithms`).
    settings: the host-side settings.
    model_config: the policy's TransformerConfig.
    env, env_params: the environment.
    base_params: the base model (the start of every seed, and the KL reference).
    eval_problems: {split name: problems pytree}, e.g. the TFDS validation/test/ood
      splits.
    workdir: the run directory.
    resume, overwrite: what to do with an existing workdir (at most one).
    record: the JSON-able config written to workdir/config.json (None: none).
    mesh: optional mesh with a `data` axis (see train.make_train).
  """
  config: train.TrainConfig
  algorithm: algorithms.Algorithm
  settings: RunSettings
  model_config: Any
  env: Any
  env_params: Any
  base_params: Any
  eval_problems: Dict[str, Any]
  workdir: str
  resume: bool = False
  overwrite: bool = False
  record: Optional[Dict[str, Any]] = None
  mesh: Any = None


def make(config: train.TrainConfig, algorithm: algorithms.Algorithm, settings: RunSettings,
         env, env_params, workdir: str, *,
         load_base: Callable[[], Tuple[Any, Any]],
         load_problems: Callable[[], Dict[str, Any]], resume: bool = False,
         overwrite: bool = False, record: Optional[Dict[str, Any]] = None,
         mesh=None) -> RunPlan:
  """Checks a run, then loads what it trains from; returns its RunPlan.

  Every check runs here once, before any work and before any file is written:
  the settings, algorithm and env against the TrainConfig (`validate`) and the run
  directory (`check_workdir`). Only then are the base model
  (`load_base() -> (model_config, params)`) and the eval problems
  (`load_problems() -> {split: problems}`) loaded, which may pretrain or build
  TFDS splits into their caches.
  """
  validate(settings, config, algorithm, env)
  check_workdir(workdir, resume, overwrite)
  model_config, base_params = load_base()
  return RunPlan(config=config, algorithm=algorithm, settings=settings,
                 model_config=model_config, env=env, env_params=env_params,
                 base_params=base_params,
                 eval_problems=load_problems(), workdir=workdir, resume=resume,
                 overwrite=overwrite, record=record, mesh=mesh)


def prepare_workdir(workdir: str, overwrite: bool) -> None:
  """Creates the run directory `check_workdir` accepted; with overwrite, first
  removes what a run wrote there (`rundir.clear`), and nothing else."""
  if overwrite:
    rundir.clear(workdir, rundir.RUN_LAYOUT)
  os.makedirs(workdir, exist_ok=True)
