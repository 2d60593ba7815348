"""Tests for polyepo.rl.loop: evaluation over seeds, records, resume, extension.

The policy trains in the tiny setting (tests/helpers/tiny_rl.py) for a few steps
through its plan (`polyepo.rl.plan.make`); a run stopped, torn or resumed anywhere
must end exactly as the uninterrupted run does.
"""

import dataclasses
import json
import os

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import tiny_rl
from polyepo.evaluation import evaluate
from polyepo.io import writers
from polyepo.policy import value_head
from polyepo.rl import algorithms, loop, plan, train

TINY, SET_RL = tiny_rl.TINY, tiny_rl.SET_RL


setup = pytest.fixture(scope="module")(tiny_rl.setup)  # (env, env_params, model_config, base)


class _Interrupted(Exception):
  pass


def test_seed_mean_keeps_shared_counts_whole():
  summaries = [{"num_samples": 32, "strategies_used": 3, "pass_at_k": {1: 0.25}, "mv": None},
               {"num_samples": 32, "strategies_used": 4, "pass_at_k": {1: 0.5}, "mv": None}]
  mean = evaluate.mean_over_seeds(summaries)
  assert mean == {"num_samples": 32, "strategies_used": 3.5, "pass_at_k": {1: 0.375}, "mv": None}
  assert isinstance(mean["num_samples"], int)
  # Per-problem values stay with their seed: the mean leaves them out.
  per_problem = [dict(s, per_problem={"num_correct": [i, 2]}) for i, s in enumerate(summaries)]
  assert evaluate.mean_over_seeds(per_problem) == mean


def test_evaluation_shaped_for_an_accelerator_gives_the_cpus_numbers(setup, capsys):
  """Three seeds evaluated two at a time (vmapped) with 2 problems per call, as an
  accelerator's defaults batch them, give every seed's summary, forced accuracy
  and KL to the base model of one seed and one problem per call (a CPU's); its
  progress bar counts 2 sampling calls and 3 seeds' forced accuracy."""
  env, params, mc, base = setup
  policy = jax.tree.map(
      lambda x: jnp.stack([x, x + 0.05 * jnp.sin(x * 7.0), x - 0.05 * jnp.cos(x * 3.0)]), base)
  problems = {"test": jax.tree.map(np.asarray, env.sample_problems(jax.random.key(9), params, 5))}
  evaluate_with = lambda progress=False, **shape: loop.evaluate_seeds(
      policy, mc, env, problems, plan.RunSettings(
          num_seeds=3, eval_num_problems=5, eval_num_samples=4, eval_forced_problems=1,
          eval_forced_samples=2, **shape), step=2, base_params=base, progress=progress)
  one_at_a_time = evaluate_with(eval_seed_batch_size=1, eval_problems_per_chunk=1)
  assert "evaluate" not in capsys.readouterr().err
  batched = evaluate_with(True, eval_seed_batch_size=2, eval_problems_per_chunk=2)
  bar = capsys.readouterr().err
  assert "evaluate step 2" in bar and "5/5" in bar and "split=test" in bar, bar
  def flat(tree, path=""):
    """{path: leaf}, through dicts and lists of dicts (the per-seed summaries)."""
    if isinstance(tree, dict):
      items = tree.items()
    elif isinstance(tree, list) and tree and isinstance(tree[0], dict):
      items = enumerate(tree)
    else:
      return {path: tree}
    return {k: v for key, sub in items for k, v in flat(sub, f"{path}/{key}").items()}
  assert set(one_at_a_time["test"]["seconds"]) == {"sampling", "forced"}
  expected, got = (flat(writers.without_timings(r)) for r in (one_at_a_time, batched))
  assert expected.keys() == got.keys()
  for name, value in expected.items():
    close = isinstance(value, (float, list))
    assert got[name] == (pytest.approx(value, rel=1e-4, abs=1e-6) if close else value), name
  seeds = one_at_a_time["test"]["seeds"]
  assert seeds[0]["per_problem"] != seeds[1]["per_problem"]  # the seeds differ


RESUME = dataclasses.replace(TINY, num_steps=6, steps_per_chunk=1)


SETTINGS = plan.RunSettings(num_seeds=2, eval_every=2, checkpoint_every=2,
                            eval_num_problems=3, eval_num_samples=4)


def _train_and_evaluate(config, model_config, env, env_params, base, problems, workdir,
                        settings, *, algorithm=SET_RL, resume=False, overwrite=False,
                        config_record=None):
  """One run of `algorithm` through its plan (`plan.make`), as the entry point makes it."""
  run = plan.make(config, algorithm, settings, env, env_params, str(workdir),
                  load_base=lambda: (model_config, base), load_problems=lambda: problems,
                  resume=resume, overwrite=overwrite, record=config_record)
  return loop.train_and_evaluate(run, progress=False)


def _problems(env, params, n=3):
  return {"test": jax.tree.map(np.asarray, env.sample_problems(jax.random.key(9), params, n))}


def _final_params(workdir, setup, config, algorithm=SET_RL):
  import orbax.checkpoint as ocp  # pylint: disable=g-import-not-at-top
  env, params, mc, base = setup
  init, _ = train.make_train(config, algorithm, mc, env, params, num_seeds=2)
  # Shardings given, as the loop gives them: orbax then need not read the saved ones.
  abstract = jax.tree.map(ocp.utils.to_shape_dtype_struct,
                          init(base, jnp.zeros((2, 2), jnp.uint32)))
  with ocp.CheckpointManager(os.path.join(os.path.abspath(workdir), "checkpoints")) as m:
    return train.TrainState(*m.restore(m.latest_step(), args=ocp.args.StandardRestore(abstract)))


def _records(path):
  """The JSONL records without their wall-clock timings."""
  return [writers.without_timings(r) for r in writers.read_jsonl(str(path))]


@pytest.mark.slow
def test_an_extended_run_matches_a_run_started_longer(setup, tmp_path):
  """A finished 4-step run resumed with num_steps=6 continues from its step-4
  checkpoint: every record and parameter equals a 6-step run's (its step-4
  evaluation is one of that run's, eval_every=2)."""
  env, params, mc, base = setup
  run = lambda config, wd, **kw: _train_and_evaluate(
      config, mc, env, params, base, _problems(env, params), str(wd), SETTINGS,
      config_record={"train": dataclasses.asdict(config), "algorithm": tiny_rl.SET_RL_SPEC},
      **kw)
  run(RESUME, tmp_path / "full")
  short = dataclasses.replace(RESUME, num_steps=4)
  run(short, tmp_path / "extended")
  assert [r["step"] for r in _records(tmp_path / "extended" / "eval.jsonl")] == [0, 2, 4]
  with pytest.raises(ValueError, match="may only grow"):
    run(dataclasses.replace(RESUME, num_steps=2), tmp_path / "extended", resume=True)
  assert json.load(open(tmp_path / "extended" / "config.json"))["train"]["num_steps"] == 4
  run(RESUME, tmp_path / "extended", resume=True)
  full = _final_params(tmp_path / "full", setup, RESUME)
  extended = _final_params(tmp_path / "extended", setup, RESUME)
  assert int(extended.step[0]) == 6
  jax.tree.map(np.testing.assert_array_equal, (full.params, full.opt_state),
               (extended.params, extended.opt_state))
  for name in ("train.jsonl", "eval.jsonl"):
    assert _records(tmp_path / "extended" / name) == _records(tmp_path / "full" / name), name
  assert json.load(open(tmp_path / "extended" / "config.json"))["train"]["num_steps"] == 6


def test_a_run_without_the_start_evaluation(setup, tmp_path):
  """eval_at_start=False skips only the step-0 evaluation; training is unchanged."""
  env, params, mc, base = setup
  settings = dataclasses.replace(SETTINGS, eval_at_start=False, eval_every=0)
  _train_and_evaluate(RESUME, mc, env, params, base, _problems(env, params),
                      str(tmp_path / "run"), settings)
  assert [r["step"] for r in _records(tmp_path / "run" / "eval.jsonl")] == [6]
  assert [r["step"] for r in _records(tmp_path / "run" / "train.jsonl")] == [1, 2, 3, 4, 5, 6]


@pytest.mark.slow
@pytest.mark.parametrize("algorithm_name", ["set_rl", "poly_ppo"])
def test_resume_between_checkpoints_matches_uninterrupted_run(setup, tmp_path, monkeypatch,
                                                              algorithm_name):
  """A run killed after logging step 5 (last checkpoint: step 4) resumes from step 4:
  its logs lose step 5 and are rewritten, and every record and parameter then
  equals an uninterrupted run's (Poly-PPO: the value head and its optimiser too)."""
  env, params, mc, base = setup
  config, algorithm = RESUME, algorithms.resolve(dict(name=algorithm_name, set_size=2))
  run = lambda wd, **kw: _train_and_evaluate(
      config, mc, env, params, base, _problems(env, params), str(wd), SETTINGS,
      algorithm=algorithm, **kw)
  run(tmp_path / "full")

  write = writers.MetricWriter.write

  def write_then_die(self, name, step, record):
    write(self, name, step, record)
    if name == "train" and step == 5:
      raise _Interrupted

  monkeypatch.setattr(writers.MetricWriter, "write", write_then_die)
  with pytest.raises(_Interrupted):
    run(tmp_path / "cut")
  monkeypatch.undo()
  cut = tmp_path / "cut"
  assert [r["step"] for r in _records(cut / "train.jsonl")] == [1, 2, 3, 4, 5]
  assert sorted(os.listdir(cut / "checkpoints")) == ["2", "4"]

  run(cut, resume=True)
  full = _final_params(tmp_path / "full", setup, config, algorithm)
  resumed = _final_params(cut, setup, config, algorithm)
  assert int(full.step[0]) == int(resumed.step[0]) == 6
  jax.tree.map(np.testing.assert_array_equal, (full.params, full.opt_state),
               (resumed.params, resumed.opt_state))
  assert not np.array_equal(full.params["head"]["kernel"][0], base["head"]["kernel"])
  if algorithm_name == "poly_ppo":
    assert np.abs(full.params[value_head.KEY]["out"]["kernel"]).max() > 0
  for name in ("train.jsonl", "eval.jsonl"):
    assert _records(cut / name) == _records(tmp_path / "full" / name), name
  assert [r["step"] for r in _records(cut / "eval.jsonl")] == [0, 2, 4, 6]
  assert (tmp_path / "full" / "tb").is_dir()


def _tear(path, offset):
  with open(path, "r+b") as f:
    f.truncate(offset)


@pytest.mark.slow
def test_a_run_torn_anywhere_resumes_to_the_uninterrupted_run(setup, tmp_path):
  """A crash can cut off any file the run was writing. Each of the run's files
  (its records and every file of its latest checkpoint) cut at a random byte
  offset: the resumed run falls back to the last checkpoint that restores and
  that its records reach, and ends with every record and parameter equal to
  the uninterrupted run's."""
  import shutil  # pylint: disable=g-import-not-at-top
  env, params, mc, base = setup
  run = lambda wd, **kw: _train_and_evaluate(
      RESUME, mc, env, params, base, _problems(env, params), str(wd), SETTINGS,
      config_record={"train": dataclasses.asdict(RESUME), "algorithm": tiny_rl.SET_RL_SPEC},
      **kw)
  full = tmp_path / "full"
  run(full)
  latest = full / "checkpoints" / "6"
  files = ["train.jsonl", "eval.jsonl"] + sorted(
      os.path.relpath(os.path.join(d, f), full) for d, _, fs in os.walk(latest) for f in fs)
  assert len(files) > 6, files
  expected = _final_params(full, setup, RESUME)
  rng = np.random.default_rng(0)
  failed_restores = 0
  for i, name in enumerate(files):
    torn = tmp_path / f"torn{i}"
    shutil.copytree(full, torn)
    size = os.path.getsize(torn / name)
    _tear(torn / name, int(rng.integers(0, size)) if size else 0)
    import warnings  # pylint: disable=g-import-not-at-top
    with warnings.catch_warnings(record=True) as caught:
      warnings.simplefilter("always")
      run(torn, resume=True)
    failed_restores += any("does not restore" in str(w.message) for w in caught)
    resumed = _final_params(torn, setup, RESUME)
    jax.tree.map(np.testing.assert_array_equal, (expected.params, expected.opt_state),
                 (resumed.params, resumed.opt_state))
    for records in ("train.jsonl", "eval.jsonl"):
      assert _records(torn / records) == _records(full / records), (name, records)
    shutil.rmtree(torn)
  assert failed_restores > 0  # some tears do break the checkpoint: the fallback ran


@pytest.mark.slow
def test_resume_without_a_checkpoint_says_so_and_starts_afresh(setup, tmp_path):
  env, params, mc, base = setup
  config = dataclasses.replace(RESUME, num_steps=2)
  run = lambda wd, **kw: _train_and_evaluate(
      config, mc, env, params, base, _problems(env, params), str(wd), SETTINGS, **kw)
  with pytest.warns(writers.RecoveryWarning, match="no checkpoint to resume from"):
    run(tmp_path / "new", resume=True)
  run(tmp_path / "full")
  for name in ("train.jsonl", "eval.jsonl"):
    assert _records(tmp_path / "new" / name) == _records(tmp_path / "full" / name)


@pytest.mark.slow
def test_a_run_whose_every_checkpoint_is_damaged_is_refused_and_kept(setup, tmp_path):
  env, params, mc, base = setup
  run = lambda wd, **kw: _train_and_evaluate(
      RESUME, mc, env, params, base, _problems(env, params), str(wd), SETTINGS, **kw)
  run(tmp_path / "run")
  for step in ("4", "6"):
    for d, _, fs in os.walk(tmp_path / "run" / "checkpoints" / step):
      for f in fs:
        _tear(os.path.join(d, f), 0)
  with pytest.raises(ValueError, match=r"No checkpoint of .* restores \(steps 6, 4\)"):
    with pytest.warns(writers.RecoveryWarning):
      run(tmp_path / "run", resume=True)
  assert sorted(os.listdir(tmp_path / "run" / "checkpoints")) == ["4", "6"]
