"""Sweep directories for the tests: a tiny sweep run once per test session
(the `tiny_sweep` fixture, tests/conftest.py), and the sweeps archived under
results/ beside each committed report.md or tuning.md."""

import fcntl
import os
import shutil
import subprocess
import sys
import repo

ROOT = repo.ROOT

TINY_SWEEP = '''
def get_sweep(arg=None):
  shared = {"run.num_seeds": 2, "run.eval_num_samples": 8}
  return [("configs/grpo.py", "size=smoke", dict(shared)),
          ("configs/reward_shaping.py", "size=smoke", dict(shared, **{"algorithm.lam": 0.1})),
          ("configs/reward_shaping.py", "size=smoke", dict(shared, **{"algorithm.lam": 1.0}))]
'''


def env(cache):
  """The environment of a subprocess whose models and datasets go under `cache`."""
  return dict(os.environ, POLYEPO_CACHE=os.path.join(cache, "models"),
              POLYEPO_DATA_DIR=os.path.join(cache, "tfds"), JAX_PLATFORMS="cpu")


def run_sweep(args, cache, timeout=1800):
  """`python -m experiments.sweep ARGS` from the repository root, output captured."""
  return subprocess.run([sys.executable, "-m", "experiments.sweep", *args], cwd=ROOT,
                        env=env(cache), capture_output=True, text=True, timeout=timeout)


def build_tiny_sweep(basetemp, worker_id):
  """(sweep file, sweep directory, cache directory) of TINY_SWEEP, run once.

  Under xdist every worker asks for it; they share one sweep through the workers'
  common temporary root, and the first to take the lock builds it.
  """
  root = basetemp if worker_id == "master" else basetemp.parent
  tmp = root / "tiny_sweep"
  path, sweep_dir = tmp / "tiny.py", tmp / "out"
  with open(root / "tiny_sweep.lock", "w") as lock:
    fcntl.flock(lock, fcntl.LOCK_EX)
    if not (tmp / "built").exists():
      shutil.rmtree(tmp, ignore_errors=True)
      tmp.mkdir()
      path.write_text(TINY_SWEEP)
      result = run_sweep([f"--sweep={path}", f"--sweep_dir={sweep_dir}", "--parallel=2"],
                         str(tmp))
      assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
      (tmp / "built").write_text("")
  return path, sweep_dir, str(tmp)


def committed(name):
  """The directories under results/ holding a committed `name` and its archived sweeps."""
  results = os.path.join(ROOT, "results")
  found = []
  for directory, _, files in sorted(os.walk(results)):
    sweeps = sorted(os.path.join(directory, d) for d in os.listdir(directory)
                    if os.path.isfile(os.path.join(directory, d, "sweep.json")))
    if name in files and sweeps:
      found.append((os.path.relpath(directory, ROOT), sweeps))
  return found
