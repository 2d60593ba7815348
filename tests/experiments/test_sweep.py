"""experiments.sweep: the runs of a sweep file, and running them (resumed, extended,
refused, interrupted) on a tiny sweep (`tiny_sweep`, tests/helpers/sweep_dirs.py)."""

import gzip
import json
import os
import shutil
import signal
import subprocess
import sys
import threading

import pytest

from experiments import sweep
from experiments.analysis import records
from polyepo.io import writers
from sweep_dirs import ROOT, TINY_SWEEP, env, run_sweep


def _records(path):
  """A JSONL file's records without their wall-clock timings."""
  return [writers.without_timings(r) for r in writers.read_jsonl(str(path))]


def test_run_names_show_what_varies():
  runs = sweep.load_sweep("configs/sweeps/shaping_lambda.py:domains=multiplication,chosen=")
  assert [r.name for r in runs] == [f"reward_shaping-multiplication-default-lam={l}"
                                    for l in (0.1, 0.3, 1.0, 3.0)]
  assert "--config.algorithm.lam=0.1" in runs[0].flags()
  headline = sweep.load_sweep("configs/sweeps/headline.py")
  assert len(headline) == 8 and len({r.name for r in headline}) == 8
  assert {r.overrides["run.num_seeds"] for r in headline} == {3}
  one = sweep.load_sweep("configs/sweeps/headline.py:domains=multiplication")
  assert [r.name for r in one] == [r.name for r in headline if "multiplication" in r.name]
  longer = sweep.load_sweep("configs/sweeps/longer.py:domains=polynomial_roots,steps=300")
  assert [r.name for r in longer] == ["grpo-polynomial_roots-default",
                                      "poly_epo-polynomial_roots-default"]
  assert longer[0].overrides["train.num_steps"] == 300


def test_only_selects_runs_by_name_pattern():
  runs = [sweep.RunSpec(name, "configs/grpo.py", "", {})
          for name in ("grpo-a", "poly_epo-a", "poly_epo-b")]
  assert [r.name for r in sweep.select_runs(runs, None)] == ["grpo-a", "poly_epo-a", "poly_epo-b"]
  assert [r.name for r in sweep.select_runs(runs, ["poly_epo-*"])] == ["poly_epo-a", "poly_epo-b"]
  assert [r.name for r in sweep.select_runs(runs, ["*-b", "grpo-a"])] == ["grpo-a", "poly_epo-b"]
  with pytest.raises(ValueError, match=r"'ppo-\*' matches no run of this sweep; its runs: "
                                       r"grpo-a, poly_epo-a, poly_epo-b\."):
    sweep.select_runs(runs, ["grpo-*", "ppo-*"])


@pytest.mark.parametrize("entry, message", [
    ('("configs/nope.py", "", {})', "does not exist"),
    ('("configs/grpo.py", "domain=chess", {})', "chess"),
    ('("configs/grpo.py", "", {"train.lr": 1.0})', "'train.lr'"),
    ('("configs/poly_epo.py", "", {"algorithm.set_size": 16})', "set_size must satisfy"),
    ('("configs/poly_epo.py", "", {"train.set_size": 4})', "'train.set_size'"),
    ('("configs/grpo.py", "", {"algorithm.lam": 0.3})', "'algorithm.lam'"),
    ('("configs/grpo.py", "")', "expected (config file"),
])
def test_bad_sweep_entries_fail_naming_the_problem(entry, message, tmp_path):
  path = tmp_path / "bad.py"
  path.write_text(f"def get_sweep(arg=None):\n  return [{entry}]\n")
  with pytest.raises((ValueError, FileNotFoundError), match=None) as err:
    sweep.load_sweep(str(path))
  assert message in str(err.value)


@pytest.mark.slow
def test_sweep_runs_every_entry_and_logs(tiny_sweep):
  _, sweep_dir, _ = tiny_sweep
  names = sorted(os.listdir(sweep_dir / "runs"))
  assert names == ["grpo-smoke", "reward_shaping-smoke-lam=0.1", "reward_shaping-smoke-lam=1.0"]
  for name in names:
    assert sweep.is_finished(str(sweep_dir / "runs" / name))
    assert (sweep_dir / "logs" / f"{name}.log").exists()
  events = [json.loads(l) for l in open(sweep_dir / "sweep.jsonl")]
  assert [e["event"] for e in events][0] == "start" and events[-1]["event"] == "end"
  assert sorted(e["name"] for e in events if e["event"] == "run") == names


@pytest.mark.slow
def test_sweep_resumes_and_skips_finished_runs(tiny_sweep, tmp_path):
  path, shared, cache = tiny_sweep
  sweep_dir = tmp_path / "out"
  shutil.copytree(shared, sweep_dir)
  # Make one run look interrupted after its step-2 checkpoint.
  work = sweep_dir / "runs" / "grpo-smoke"
  finished = {name: _records(work / f"{name}.jsonl") for name in ("train", "eval")}
  shutil.rmtree(work / "checkpoints" / "4")
  for name in ("train", "eval"):
    lines = [l for l in open(work / f"{name}.jsonl") if json.loads(l)["step"] <= 2]
    (work / f"{name}.jsonl").write_text("".join(lines))
  untouched = (sweep_dir / "runs" / "reward_shaping-smoke-lam=0.1" / "train.jsonl").read_text()
  result = run_sweep([f"--sweep={path}", f"--sweep_dir={sweep_dir}"], cache)
  assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
  assert result.stdout.count("skip ") == 2
  assert [json.loads(l)["step"] for l in open(work / "train.jsonl")] == [1, 2, 3, 4]
  # The resumed steps reproduce the uninterrupted run's values, not just its steps.
  for name in ("train", "eval"):
    assert _records(work / f"{name}.jsonl") == finished[name], name
  assert sweep.is_finished(str(work))
  assert (sweep_dir / "runs" / "reward_shaping-smoke-lam=0.1" / "train.jsonl").read_text() == untouched


@pytest.mark.slow
def test_a_sweep_with_more_steps_extends_its_finished_runs(tiny_sweep, tmp_path):
  """The tiny sweep (4 steps a run) rerun with 6 steps in its directory, `--only`
  its GRPO run, extends that run from its step-4 checkpoint: its first 4 steps'
  records are kept, it ends at step 6, and it equals that run started with 6
  steps; the other runs are left as they were. The same sweep with fewer steps is
  refused, naming the field."""
  path, shared, cache = tiny_sweep
  sweep_dir = tmp_path / "out"
  shutil.copytree(shared, sweep_dir)
  work = sweep_dir / "runs" / "grpo-smoke"
  before = _records(work / "train.jsonl")
  other = sweep_dir / "runs" / "reward_shaping-smoke-lam=0.1" / "train.jsonl"
  untouched = other.read_text()
  longer = tmp_path / "longer.py"
  longer.write_text(TINY_SWEEP.replace('"run.eval_num_samples": 8',
                                       '"run.eval_num_samples": 8, "train.num_steps": 6'))
  result = run_sweep([f"--sweep={longer}", f"--sweep_dir={sweep_dir}", "--only=grpo-*"], cache)
  assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
  assert "1 of 3 runs" in result.stdout and "skip " not in result.stdout
  assert other.read_text() == untouched
  extended = _records(work / "train.jsonl")
  assert [r["step"] for r in extended] == [1, 2, 3, 4, 5, 6] and extended[:4] == before
  assert [r["step"] for r in _records(work / "eval.jsonl")][-2:] == [4, 6]
  assert sweep.is_finished(str(work)) and not sweep.is_finished(str(work), 8)
  fresh = tmp_path / "fresh"
  run = [r for r in sweep.load_sweep(str(longer)) if r.name == "grpo-smoke"][0]
  done = subprocess.run([sys.executable, "-m", "experiments.synthetic", *run.flags(),
                         f"--workdir={fresh}"], cwd=ROOT, env=env(cache), capture_output=True,
                        text=True, timeout=1800)
  assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
  assert _records(fresh / "train.jsonl") == extended
  assert _records(fresh / "eval.jsonl")[-1] == _records(work / "eval.jsonl")[-1]
  shorter = run_sweep([f"--sweep={path}", f"--sweep_dir={sweep_dir}"], cache)
  assert shorter.returncode != 0
  assert "train.num_steps 6 -> 4" in shorter.stderr and "may only grow" in shorter.stderr


@pytest.mark.slow
def test_sweep_refuses_a_run_started_under_another_config(tiny_sweep, tmp_path):
  """A finished run whose config.json differs from what the sweep would run (here:
  another learning rate) is neither skipped nor resumed: the sweep stops first,
  naming the run and the field."""
  path, shared, cache = tiny_sweep
  sweep_dir = tmp_path / "out"
  shutil.copytree(shared, sweep_dir)
  record = sweep_dir / "runs" / "grpo-smoke" / "config.json"
  config = json.loads(record.read_text())
  started = config["train"]["learning_rate"]
  config["train"]["learning_rate"] = started * 10
  record.write_text(json.dumps(config))
  result = run_sweep([f"--sweep={path}", f"--sweep_dir={sweep_dir}"], cache)
  assert result.returncode != 0 and "skip " not in result.stdout
  assert (f"Run 'grpo-smoke': Run directory '{sweep_dir / 'runs' / 'grpo-smoke'}' was started "
          f"with another config: train.learning_rate {started * 10!r} -> {started!r}"
          in result.stderr), result.stderr[-3000:]


@pytest.mark.slow
def test_sweep_refuses_a_different_sweep_in_the_same_directory(tiny_sweep, tmp_path):
  _, sweep_dir, cache = tiny_sweep
  other = tmp_path / "other.py"
  other.write_text('def get_sweep(arg=None):\n  return [("configs/grpo.py", "size=smoke", {})]\n')
  result = run_sweep([f"--sweep={other}", f"--sweep_dir={sweep_dir}"], cache)
  assert result.returncode != 0 and "--overwrite" in result.stderr


@pytest.mark.slow
def test_a_sweep_keeps_its_finished_runs_and_a_fresh_machine_restores_them(tiny_sweep,
                                                                           tmp_path):
  """--keep_dir keeps each run's records as it finishes (and those finished before);
  the same sweep on a fresh machine (no sweep directory) restores them, trains
  nothing, and its log continues the kept one."""
  path, shared, cache = tiny_sweep
  sweep_dir, keep_dir = tmp_path / "out", tmp_path / "keep"
  shutil.copytree(shared, sweep_dir)
  work = sweep_dir / "runs" / "grpo-smoke"   # interrupted after its step-2 checkpoint
  shutil.rmtree(work / "checkpoints" / "4")
  for name in ("train", "eval"):
    lines = [l for l in open(work / f"{name}.jsonl") if json.loads(l)["step"] <= 2]
    (work / f"{name}.jsonl").write_text("".join(lines))
  result = run_sweep([f"--sweep={path}", f"--sweep_dir={sweep_dir}", f"--keep_dir={keep_dir}"],
                     cache)
  assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
  names = sorted(os.listdir(sweep_dir / "runs"))
  assert sorted(os.listdir(keep_dir / "runs")) == names and len(names) == 3
  for name in names:   # records only, the same as the sweep's
    assert sorted(os.listdir(keep_dir / "runs" / name)) == [
        "config.json", "eval.jsonl.gz", "train.jsonl.gz"]
    for kind in ("train", "eval"):
      assert _records(keep_dir / "runs" / name / f"{kind}.jsonl.gz") == _records(
          sweep_dir / "runs" / name / f"{kind}.jsonl"), (name, kind)
  kept_log = writers.read_jsonl(str(keep_dir / "sweep.jsonl"))
  assert kept_log == writers.read_jsonl(str(sweep_dir / "sweep.jsonl"))
  fresh = tmp_path / "fresh"
  result = run_sweep([f"--sweep={path}", f"--sweep_dir={fresh}", f"--keep_dir={keep_dir}"],
                     cache)
  assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
  assert "restored 3 finished run(s)" in result.stdout and result.stdout.count("skip ") == 3
  assert not (fresh / "runs" / "grpo-smoke" / "checkpoints").exists()   # nothing trained
  log = writers.read_jsonl(str(fresh / "sweep.jsonl"))
  assert log[:len(kept_log)] == kept_log and log[len(kept_log)]["event"] == "start"
  assert writers.read_jsonl(str(keep_dir / "sweep.jsonl")) == log
  runs = records.load_runs([str(keep_dir)])   # a report reads the kept runs
  assert len(runs) == 3 and all(records.is_complete(r) for r in runs)
  # Another sweep's keep directory is refused.
  other = tmp_path / "other.py"
  other.write_text(path.read_text().replace('"run.num_seeds": 2', '"run.num_seeds": 3'))
  result = run_sweep([f"--sweep={other}", f"--sweep_dir={tmp_path / 'o'}",
                      f"--keep_dir={keep_dir}"], cache)
  assert result.returncode != 0 and "keeps a different sweep's runs" in result.stderr
  assert not (tmp_path / "o").exists()   # refused before anything was written


def test_a_run_archived_with_gzipped_records_counts_as_finished(tmp_path):
  """Runs archived under results/ hold eval.jsonl.gz (`writers.jsonl_path`): copied
  into runs/sweeps/, the sweep skips them as finished."""
  work = tmp_path / "runs" / "grpo"
  work.mkdir(parents=True)
  (work / "config.json").write_text(json.dumps({"train": {"num_steps": 4}}))
  assert not sweep.is_finished(str(work))
  with gzip.open(work / "eval.jsonl.gz", "wt") as f:
    f.write('{"step": 0}\n{"step": 4}\n')
  assert sweep.is_finished(str(work)) and not sweep.is_finished(str(work), 8)


def test_an_interrupted_sweep_stops_its_runs_and_logs_their_time(tmp_path, monkeypatch):
  """SIGTERM to the sweep (as `kill PID` sends) stops the run it started and logs
  it as interrupted, instead of leaving it running without its sweep."""
  (tmp_path / "logs").mkdir()
  started = []
  real_popen = subprocess.Popen

  def popen(command, **kwargs):  # a run that would outlive the test by far
    del command
    started.append(real_popen([sys.executable, "-c", "import time; time.sleep(120)"], **kwargs))
    return started[-1]
  monkeypatch.setattr(subprocess, "Popen", popen)
  previous = signal.getsignal(signal.SIGTERM)
  sweep._interrupt_on_sigterm()  # pylint: disable=protected-access
  timer = threading.Timer(2.0, os.kill, (os.getpid(), signal.SIGTERM))
  timer.start()
  try:
    with pytest.raises(KeyboardInterrupt):
      sweep.run_sweep([sweep.RunSpec("a", "configs/grpo.py", "size=smoke", {}),
                       sweep.RunSpec("b", "configs/grpo.py", "size=smoke", {})],
                      str(tmp_path), progress=False)
  finally:
    timer.cancel()
    signal.signal(signal.SIGTERM, previous)
  assert len(started) == 1 and started[0].poll() is not None  # b never started; a stopped
  events = [json.loads(l) for l in open(tmp_path / "sweep.jsonl")]
  assert [(e["event"], e["name"], e["interrupted"]) for e in events] == [("run", "a", True)]
  assert 1.5 <= events[0]["seconds"] <= 30
  assert not sweep.is_finished(str(tmp_path / "runs" / "a"))
