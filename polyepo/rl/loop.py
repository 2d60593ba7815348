"""The host loop of an RL run: compiled chunks, evaluation, checkpoints.

  run = plan.make(config, settings, env, env_params, workdir, load_base=..., load_problems=...)
  summary = train_and_evaluate(run)

`polyepo.rl.plan` checks a run before any work and returns its frozen
`RunPlan`; `train_and_evaluate` trusts it. The host only logs,
evaluates and checkpoints between compiled chunks of `steps_per_chunk` steps;
all seeds train in one program (vmap). The run directory holds config.json,
train.jsonl and eval.jsonl (the source of truth), TensorBoard event files under
tb/, and orbax checkpoints under checkpoints/. An existing run directory is
never overwritten silently: pass resume=True to continue from its last
checkpoint or overwrite=True to start afresh. Resumed with a larger
`num_steps`, a finished run is extended: it continues from its last checkpoint
exactly as a run started with that length would have.
"""

import os
import time
import warnings
from typing import Any, Dict

import jax
import jax.numpy as jnp
import numpy as np
import orbax.checkpoint as ocp

from polyepo import parallel
from polyepo.evaluation import evaluate, forced
from polyepo.io import writers
from polyepo.rl import plan, train


def _seed_params(params, seed: int):
  return jax.tree.map(lambda x: x[seed], params)


def evaluate_seeds(params, model_config, env, eval_problems, settings: plan.RunSettings,
                   step: int, base_params=None, progress: bool = False) -> Dict[str, Any]:
  """{split: {"mean": summary averaged over seeds, "seeds": [summary per seed],
  "seconds": {"sampling": ..., "forced": ...}}}: the wall-clock time of each part.
  With `progress`, a tqdm bar counts the sampling calls and each seed's forced
  accuracy of every split (a final evaluation takes minutes on a CPU).

  Seeds are sampled settings.eval_seed_batch_size at a time (by platform for
  0), problems settings.eval_problems_per_chunk per call: the same samples
  either way, to float tolerance. With base_params, each summary holds the KL
  to the base model (`kl_to_base`);
  with settings.eval_forced_problems > 0, each strategy's forced accuracy
  (`forced_accuracy`, `polyepo.forced`).
  """
  from tqdm.auto import tqdm  # pylint: disable=g-import-not-at-top

  out = {}
  num_seeds = settings.num_seeds
  seeds_per_call = (settings.eval_seed_batch_size
                    or parallel.default_seed_batch_size(num_seeds))
  options = dict(num_samples=settings.eval_num_samples, temperature=settings.eval_temperature,
                 problems_per_chunk=settings.eval_problems_per_chunk, base_params=base_params)
  parts = -(-num_seeds // seeds_per_call) + (num_seeds if settings.eval_forced_problems else 0)
  bar = tqdm(total=parts * len(eval_problems), desc=f"evaluate step {step}", unit="part",
             disable=not progress)
  for i, (split, problems) in enumerate(sorted(eval_problems.items())):
    bar.set_postfix(split=split)
    problems = jax.tree.map(lambda x: x[:settings.eval_num_problems], problems)
    seed_keys = [jax.random.fold_in(jax.random.PRNGKey(settings.seed + 7919 * (i + 1)), s)
                 for s in range(num_seeds)]
    step_keys = [jax.random.fold_in(key, step) for key in seed_keys]
    samples, tic = [], time.perf_counter()
    for first in range(0, num_seeds, seeds_per_call):
      stop = min(first + seeds_per_call, num_seeds)
      if stop - first == 1:  # unbatched: a vmapped decode loop selects its state every step
        samples.append(evaluate.sample_responses(_seed_params(params, first), model_config,
                                                 env, problems, step_keys[first], **options))
      else:
        samples += evaluate.sample_seeds(
            jax.tree.map(lambda x, a=first, b=stop: x[a:b], params), model_config, env,
            problems, jnp.stack(step_keys[first:stop]), **options)
      bar.update(1)
    per_seed = [evaluate.summarize(samples[s], env.strategy_names, env.strategy_families)
                for s in range(num_seeds)]   # on the host: the sampling has finished
    seconds = {"sampling": time.perf_counter() - tic}
    tic = time.perf_counter()
    if settings.eval_forced_problems:
      for s, (summary, key) in enumerate(zip(per_seed, seed_keys)):
        summary["forced_accuracy"] = forced.forced_accuracy(
            _seed_params(params, s), model_config, env, problems,
            jax.random.fold_in(jax.random.fold_in(key, step), 1),
            num_problems=settings.eval_forced_problems,
            num_samples=settings.eval_forced_samples, temperature=settings.eval_temperature)
        bar.update(1)
    seconds["forced"] = time.perf_counter() - tic
    out[split] = {"mean": evaluate.mean_over_seeds(per_seed), "seeds": per_seed,
                  "seconds": {k: round(v, 3) for k, v in seconds.items()}}
  bar.close()
  return out


def _step_records(chunk_metrics, first_step: int):
  """Per-step records: each metric as its seed mean and its per-seed values."""
  host = jax.tree.map(np.asarray, chunk_metrics)   # [S, steps, ...]
  steps = next(iter(host.values())).shape[1]
  for t in range(steps):
    record = {}
    for name, value in host.items():
      per_seed = value[:, t]
      record[name] = per_seed.mean(0).tolist()
      record[f"{name}/seeds"] = per_seed.tolist()
    yield first_step + t + 1, record


def _last_step(path: str) -> int:
  """The step of a JSONL file's last whole record (-1: none), after dropping a
  torn last line (`writers.truncate_jsonl`, which warns once)."""
  records = writers.truncate_jsonl(path)
  return records[-1]["step"] if records else -1


def _last_eval_due(step: int, config: train.TrainConfig, settings: plan.RunSettings) -> int:
  """The last step at or before `step` whose evaluation the run has recorded
  (-1: none): the start, every eval_every steps and the end."""
  due = [0] if settings.eval_at_start else [-1]
  if settings.eval_every and step >= settings.eval_every:
    due.append(step - step % settings.eval_every)
  if step == config.num_steps:
    due.append(step)
  return max(due)


def _restore(manager, state, workdir: str, config: train.TrainConfig, settings: plan.RunSettings):
  """(step, state) to resume from: the latest checkpoint that restores and that
  the run's records reach, or (0, state) with nothing to resume.

  A crash can tear what it was writing: orbax itself never lists a checkpoint
  whose save did not finish (it writes into a temporary folder and renames
  it), but a finished one can still be damaged, and a JSONL file loses its
  tail. A checkpoint that fails to restore is reported by name and an earlier
  one is tried; one beyond the last whole record of train.jsonl or eval.jsonl
  is passed over, so the resumed run rewrites those records exactly as an
  uninterrupted run wrote them. The checkpoints after the step resumed from
  are removed (the run saves them again). If every checkpoint fails to
  restore, nothing is removed and ValueError names them.
  """
  steps = sorted(manager.all_steps(), reverse=True)
  if not steps:
    warnings.warn(f"--resume: {workdir!r} has no checkpoint to resume from; the run "
                  f"starts afresh.", writers.RecoveryWarning, stacklevel=3)
    return 0, state
  last_train = _last_step(os.path.join(workdir, "train.jsonl"))
  last_eval = _last_step(os.path.join(workdir, "eval.jsonl"))
  abstract = jax.tree.map(ocp.utils.to_shape_dtype_struct, state)
  failed, restored = [], None
  for step in steps:
    if step > last_train or _last_eval_due(step, config, settings) > last_eval:
      warnings.warn(f"{workdir}: the records end before checkpoint {step} (train.jsonl at "
                    f"step {last_train}, eval.jsonl at {last_eval}); resuming from an "
                    f"earlier one.", writers.RecoveryWarning, stacklevel=3)
      continue
    try:
      restored = step, train.TrainState(*manager.restore(
          step, args=ocp.args.StandardRestore(abstract)))
      break
    except Exception as err:  # pylint: disable=broad-except
      failed.append(step)     # orbax and tensorstore raise many types for a damaged file
      warnings.warn(f"checkpoint {os.path.join(manager.directory, str(step))} does not "
                    f"restore ({type(err).__name__}: {str(err).splitlines()[0][:200]}); "
                    f"trying an earlier one.", writers.RecoveryWarning, stacklevel=3)
  if len(failed) == len(steps):
    raise ValueError(f"No checkpoint of {workdir!r} restores (steps "
                     f"{', '.join(map(str, failed))}); pass --overwrite to start afresh.")
  start, state = restored or (0, state)
  for step in steps:
    if step > start:
      manager.delete(step)
  if restored is None:
    warnings.warn(f"{workdir}: no checkpoint is reached by the run's records; the run "
                  f"starts afresh.", writers.RecoveryWarning, stacklevel=3)
  return start, state


def train_and_evaluate(run: plan.RunPlan, progress: bool = True) -> Dict[str, Any]:
  """Runs (or resumes) the RL run of a plan (`plan.make`); returns the final evaluation.

  Args:
    run: the run's plan, checked when it was made.
    progress: show tqdm progress bars (training, and each evaluation).

  Returns:
    The last evaluation ({split: {"mean": ..., "seeds": [...]}}).
  """
  from tqdm.auto import tqdm  # pylint: disable=g-import-not-at-top

  config, settings, workdir = run.config, run.settings, run.workdir
  model_config, env, base_params, eval_problems = (run.model_config, run.env, run.base_params,
                                                   run.eval_problems)
  plan.prepare_workdir(workdir, run.overwrite)
  trained = _last_step(os.path.join(workdir, "train.jsonl")) if run.resume else -1
  if trained > config.num_steps:  # checked before config.json is rewritten
    raise ValueError(f"Run directory {workdir!r} has trained {trained} steps, more than "
                     f"num_steps={config.num_steps}: num_steps may only grow (the run is "
                     f"extended); resume it with num_steps >= {trained}.")
  if run.record is not None:
    writers.write_json_atomically(os.path.join(workdir, "config.json"), run.record)

  init, run_chunk = train.make_train(config, run.algorithm, model_config, env, run.env_params,
                                     num_seeds=settings.num_seeds,
                                     seed_batch_size=settings.seed_batch_size, mesh=run.mesh)
  keys = jax.vmap(lambda s: jax.random.fold_in(jax.random.PRNGKey(settings.seed), s))(
      jnp.arange(settings.num_seeds))
  state = init(base_params, keys)

  options = ocp.CheckpointManagerOptions(max_to_keep=settings.max_checkpoints, create=True)
  writer = writers.MetricWriter(workdir)
  with ocp.CheckpointManager(os.path.join(os.path.abspath(workdir), "checkpoints"),
                             options=options) as manager:
    start = 0
    if run.resume:
      start, state = _restore(manager, state, workdir, config, settings)
      for name in ("train", "eval"):
        writers.truncate_jsonl(os.path.join(workdir, f"{name}.jsonl"), start)
    last_eval = None
    if start == 0:  # a fresh run, or one stopped before its first checkpoint
      for name in ("train", "eval"):
        writers.truncate_jsonl(os.path.join(workdir, f"{name}.jsonl"), -1)
      if settings.eval_at_start:
        last_eval = evaluate_seeds(state.params, model_config, env, eval_problems, settings, 0,
                                   base_params, progress)
        writer.write("eval", 0, last_eval)
    chunk = config.steps_per_chunk
    bar = tqdm(total=config.num_steps, initial=start, desc=f"train {run.algorithm.name}",
               unit="step", disable=not progress)
    step = start
    while step < config.num_steps:
      tic = time.perf_counter()
      state, chunk_metrics = run_chunk(state, base_params)
      jax.block_until_ready(state)
      seconds = time.perf_counter() - tic
      for s, record in _step_records(chunk_metrics, step):
        writer.write("train", s, dict(record, seconds_per_step=seconds / chunk))
      step += chunk
      bar.update(chunk)
      bar.set_postfix(reward=f"{record['reward']:.3f}", pass1=f"{record['pass_at_1']:.3f}",
                      strategies=f"{record['distinct_strategies']:.2f}")
      final = step == config.num_steps
      if final or (settings.eval_every and step % settings.eval_every == 0):
        last_eval = evaluate_seeds(state.params, model_config, env, eval_problems, settings,
                                   step, base_params, progress)
        writer.write("eval", step, last_eval)
      if final or (settings.checkpoint_every and step % settings.checkpoint_every == 0):
        manager.save(step, args=ocp.args.StandardSave(state))
    bar.close()
    manager.wait_until_finished()
  writer.close()
  if last_eval is None:  # resumed at the end: report the last recorded evaluation
    last_eval = writers.read_jsonl(os.path.join(workdir, "eval.jsonl"))[-1]
    last_eval.pop("step")
  return last_eval
