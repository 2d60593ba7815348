"""experiments.sweep --launcher=ray (experiments/ray_sweep.py) on a real local Ray
instance: the same records as the local launcher, a run whose worker dies retried
and resumed, Ctrl-C stopping every task, and the checks before anything starts."""

import json
import os
import signal
import subprocess
import sys
import threading
import time
import warnings

import ml_collections
import pytest

from experiments import build, ray_sweep, sweep
from polyepo.io import writers
from sweep_dirs import ROOT, env, run_sweep

ray = pytest.importorskip("ray")

RUN_FILES = ("train.jsonl", "eval.jsonl")


def _records(path):
  """A JSONL file's records without their wall-clock timings."""
  with open(path) as f:
    return [writers.without_timings(json.loads(l)) for l in f]


def _attempts(log_path):
  """The output of each Ray attempt logged in a run's log."""
  text = open(log_path).read()
  return text.split("# ray attempt: ")[1:]


@pytest.mark.slow
def test_a_ray_sweep_records_what_the_local_launcher_records_through_a_dead_worker(
    tiny_sweep, tmp_path):
  """The tiny sweep through --launcher=ray, with SIGKILL sent to the Ray worker of
  one running run after its step-2 checkpoint: that run's process dies with it,
  Ray retries the task and the retry resumes from the checkpoint. Every run's
  records equal the local launcher's (tiny_sweep ran it with --parallel=2),
  sweep.jsonl names each run's node, and the same command again skips all three
  runs without starting Ray."""
  path, local_dir, cache = tiny_sweep
  sweep_dir = tmp_path / "ray"
  killed = "grpo-smoke"
  process = subprocess.Popen(
      [sys.executable, "-m", "experiments.sweep", f"--sweep={path}", f"--sweep_dir={sweep_dir}",
       "--launcher=ray"], cwd=ROOT, env=env(cache), stdout=subprocess.PIPE,
      stderr=subprocess.STDOUT, text=True)
  try:
    checkpoint = sweep_dir / "runs" / killed / "checkpoints" / "2"
    deadline = time.time() + 1200
    while not checkpoint.exists():
      assert process.poll() is None and time.time() < deadline, process.stdout.read()[-3000:]
      time.sleep(0.1)
    header = _attempts(sweep_dir / "logs" / f"{killed}.log")[0].splitlines()[0]
    worker = int(header.split("worker pid ")[1].split(",")[0])
    os.kill(worker, signal.SIGKILL)
    output, _ = process.communicate(timeout=1200)
  finally:
    if process.poll() is None:
      process.kill()
  assert process.returncode == 0, output[-3000:]
  names = sorted(os.listdir(local_dir / "runs"))
  assert sorted(os.listdir(sweep_dir / "runs")) == names
  for name in names:
    for record in RUN_FILES:
      assert (_records(sweep_dir / "runs" / name / record)
              == _records(local_dir / "runs" / name / record)), (name, record)
    attempts = _attempts(sweep_dir / "logs" / f"{name}.log")
    assert len(attempts) == (2 if name == killed else 1), (name, output[-3000:])
    if name == killed:
      assert "no checkpoint to resume from" not in attempts[1]
    assert sweep.is_finished(str(sweep_dir / "runs" / name))
  events = [json.loads(l) for l in open(sweep_dir / "sweep.jsonl")]
  runs = [e for e in events if e["event"] == "run"]
  assert sorted(e["name"] for e in runs) == names
  assert all(e["returncode"] == 0 and e["node"] for e in runs)
  again = run_sweep([f"--sweep={path}", f"--sweep_dir={sweep_dir}", "--launcher=ray"], cache)
  assert again.returncode == 0, again.stdout[-3000:] + again.stderr[-3000:]
  assert again.stdout.count("skip ") == 3 and "submitting" not in again.stdout


@pytest.fixture
def local_ray():
  with warnings.catch_warnings():  # Ray's processes exec at once after their fork
    warnings.filterwarnings("ignore", message="os.fork", category=RuntimeWarning)
    ray.init(num_cpus=2, include_dashboard=False, logging_level="WARNING", log_to_driver=False)
  yield
  ray.shutdown()


def test_ctrl_c_stops_every_ray_task_and_logs_their_time(local_ray, tmp_path):
  """SIGTERM to the sweep (as Ctrl-C or `kill PID`) cancels both running tasks:
  each stops its run's process and is reported interrupted with its time."""
  marker = f"polyepo_ray_test_{os.getpid()}"  # names the runs' processes for pgrep
  jobs = [ray_sweep.Job(name, ["{python}", "-c", f"import time; {marker} = 1; time.sleep(300)"],
                        str(tmp_path / f"{name}.log"), 1.0, 0.0) for name in ("a", "b")]
  done = []
  previous = signal.getsignal(signal.SIGTERM)
  sweep._interrupt_on_sigterm()  # pylint: disable=protected-access

  def interrupt_once_both_run():
    while not all(ray_sweep.attempt_start(job.log_path, 0) for job in jobs):
      time.sleep(0.2)
    time.sleep(2.0)
    os.kill(os.getpid(), signal.SIGTERM)
  threading.Thread(target=interrupt_once_both_run, daemon=True).start()
  try:
    with pytest.raises(KeyboardInterrupt):
      ray_sweep.run(jobs, ROOT, str(tmp_path),
                    lambda *args, **kwargs: done.append((args, kwargs)))
  finally:
    signal.signal(signal.SIGTERM, previous)
  assert sorted(args[0] for args, _ in done) == ["a", "b"]
  assert all(kwargs == {"interrupted": True} and 2.0 <= args[2] <= 120 for args, kwargs in done)
  time.sleep(1.0)
  left = subprocess.run(["pgrep", "-f", marker], capture_output=True, text=True).stdout
  assert not left, f"runs left running: {left}"


def test_a_task_that_fails_for_good_is_logged_with_its_time(local_ray, tmp_path):
  """A run whose worker dies on its last retry reports exit -1 and the time its
  last attempt ran, not 0 s."""
  kill_worker = "import os, signal, time; time.sleep(2.0); os.kill(os.getppid(), signal.SIGKILL)"
  job = ray_sweep.Job("dies", ["{python}", "-c", kill_worker], str(tmp_path / "dies.log"),
                      1.0, 0.0)
  done = []
  ray_sweep.run([job], ROOT, str(tmp_path), lambda *args, **kwargs: done.append(args),
                max_retries=0)
  [(name, returncode, seconds, node)] = done
  assert (name, returncode, node) == ("dies", -1, None)
  assert 2.0 <= seconds <= 120, seconds


def test_a_relative_sweep_dir_is_refused_on_several_nodes():
  ray_sweep.check_sweep_dir("runs/sweeps/x", num_nodes=1)
  ray_sweep.check_sweep_dir("/shared/sweeps/x", num_nodes=3)
  with pytest.raises(ValueError, match="relative, and this Ray cluster has 3 nodes"):
    ray_sweep.check_sweep_dir("runs/sweeps/x", num_nodes=3)


def test_a_task_on_a_node_without_the_sweep_dir_says_so(tmp_path):
  with pytest.raises(FileNotFoundError, match="storage every node sees"):
    ray_sweep.run_job(["true"], ROOT, str(tmp_path / "missing" / "a.log"))


def test_the_last_attempt_counts_only_since_the_sweep_started(tmp_path):
  log = tmp_path / "a.log"
  log.write_text("# ray attempt: node n1, worker pid 7, started at 100.000\n$ x\n"
                 "# ray attempt: node n2, worker pid 8, started at 250.500\n$ x\n")
  assert ray_sweep.attempt_start(str(log), since=200) == 250.5
  assert ray_sweep.attempt_start(str(log), since=300) is None
  assert ray_sweep.attempt_start(str(tmp_path / "none.log"), since=0) is None


def test_a_runs_resources_come_from_its_config_and_are_checked():
  config = ml_collections.ConfigDict({"resources": {"num_cpus": 2.0, "num_gpus": 0.5}})
  assert build.ray_resources(config) == (2.0, 0.5)
  assert build.ray_resources(ml_collections.ConfigDict()) == (1.0, 1.0)
  config.resources.num_gpus = -1.0
  with pytest.raises(ValueError, match="resources.num_gpus must be >= 0, got -1.0"):
    build.ray_resources(config)


def test_ray_address_without_the_ray_launcher_is_refused(tmp_path):
  result = subprocess.run(
      [sys.executable, "-m", "experiments.sweep", "--sweep=configs/sweeps/headline.py:size=smoke",
       f"--sweep_dir={tmp_path / 'out'}", "--ray_address=auto"], cwd=ROOT,
      capture_output=True, text=True, timeout=300)
  assert result.returncode != 0 and "--ray_address needs --launcher=ray" in result.stderr
  assert not (tmp_path / "out").exists()
