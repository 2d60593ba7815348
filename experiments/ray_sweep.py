"""The Ray launcher of `experiments.sweep` (`--launcher=ray`): each run one Ray task.

  pip install -e '.[ray]'
  python -m experiments.sweep --sweep=configs/sweeps/final.py --launcher=ray
  python -m experiments.sweep --sweep=... --launcher=ray --ray_address=auto \\
      --sweep_dir=/shared/sweeps/final

A task runs the same command as the local launcher (`python -m
experiments.synthetic ... --workdir=RUN --resume`) in the repository root, with
the Python of the node it lands on, asking Ray for the resources its config
declares (`config.resources`: CPU cores, and GPUs where the cluster has any),
so a multi-GPU machine runs one run per GPU (Ray sets each task's
CUDA_VISIBLE_DEVICES). Without an address a local Ray instance is started on
this machine; with one (`auto`, `ray://...`) the sweep joins that cluster. On a
cluster of several nodes the repository, the sweep directory and the model and
dataset caches (POLYEPO_CACHE, POLYEPO_DATA_DIR) must lie on storage every node
sees, at the same paths (docs/ray.md).

A task whose worker or node dies is retried by Ray (`max_retries`) and the run
resumes from its last checkpoint, as an interrupted local run does; the run's
process dies with its worker (Linux: PR_SET_PDEATHSIG), so a retry never shares
a run directory with an orphan. A run that fails on its own (a nonzero exit) is
reported, not retried, as under the local launcher. Ctrl-C cancels every task:
a running one stops its run, which the next invocation resumes.
"""

import ctypes
import os
import re
import signal
import socket
import subprocess
import sys
import time
import warnings
from typing import Any, Callable, Dict, List, NamedTuple, Optional

# Environment variables a run reads that the driver's value should reach on
# every node: where models and datasets are cached, and the JAX platform.
FORWARDED_ENV = ("POLYEPO_CACHE", "POLYEPO_DATA_DIR", "JAX_PLATFORMS", "XLA_FLAGS")
_HEADER = re.compile(r"^# ray attempt: node (\S+), worker pid (\d+), started at ([0-9.]+)$")


class Job(NamedTuple):
  """One run of a sweep as a Ray task.

  Attributes:
    name: the run's name.
    command: its argv, run in `root` (a launcher-independent run command).
    log_path: where its output is appended.
    num_cpus: CPU cores it asks for.
    num_gpus: GPUs it asks for where the cluster has any.
  """
  name: str
  command: List[str]
  log_path: str
  num_cpus: float
  num_gpus: float


def _die_with_parent() -> Optional[Callable[[], None]]:
  """What a run's process calls between fork and exec to be killed when the Ray
  worker dies (Linux's PR_SET_PDEATHSIG; None elsewhere). libc is loaded here,
  before the fork: the child of a threaded worker must not take the loader's lock."""
  try:
    prctl = ctypes.CDLL("libc.so.6", use_errno=True).prctl
  except (OSError, AttributeError):
    return None
  return lambda: prctl(1, signal.SIGKILL)  # 1: PR_SET_PDEATHSIG


def stop(process: subprocess.Popen, timeout: float = 60) -> None:
  """Stops a run's process: SIGTERM, then SIGKILL if it has not exited in `timeout` s."""
  process.terminate()
  try:
    process.wait(timeout=timeout)
  except subprocess.TimeoutExpired:
    process.kill()
    process.wait()


def run_job(command: List[str], root: str, log_path: str) -> Dict[str, Any]:
  """Runs one job's command to its end on this node (the body of the Ray task).

  Returns:
    {"returncode", "node", "seconds"}.

  Raises:
    FileNotFoundError naming the node when the repository or the log's directory
    is not visible here (not on shared storage).
  """
  node = socket.gethostname()
  for path in (root, os.path.dirname(log_path)):
    if not os.path.isdir(path):
      raise FileNotFoundError(
          f"{path!r} does not exist on node {node}: under --launcher=ray on several nodes the "
          "repository and the sweep directory must lie on storage every node sees, at the same "
          "path (docs/ray.md).")
  start = time.time()
  command = [sys.executable if c == "{python}" else c for c in command]
  with open(log_path, "a") as log:
    log.write(f"# ray attempt: node {node}, worker pid {os.getpid()}, started at {start:.3f}\n"
              f"$ {' '.join(command)}\n")
    log.flush()
    process = subprocess.Popen(command, cwd=root, stdout=log, stderr=subprocess.STDOUT,
                               preexec_fn=_die_with_parent())
    try:
      # Polled, not waited on: ray.cancel's KeyboardInterrupt arrives between
      # bytecodes, which a blocking wait would not reach until the run ended.
      while (returncode := process.poll()) is None:
        time.sleep(0.5)
    except KeyboardInterrupt:  # ray.cancel: stop the run, as Ctrl-C does locally
      stop(process)
      raise
  return {"returncode": returncode, "node": node, "seconds": round(time.time() - start, 1)}


def attempt_start(log_path: str, since: float) -> Optional[float]:
  """When the last attempt logged in a job's log started, if at or after `since`
  (the log also holds earlier invocations' attempts; None: none since)."""
  try:
    with open(log_path) as f:
      starts = [float(m.group(3)) for m in map(_HEADER.match, f.read().splitlines()) if m]
  except OSError:
    return None
  return starts[-1] if starts and starts[-1] >= since else None


def check_sweep_dir(sweep_dir: str, num_nodes: int) -> None:
  """Refuses a relative sweep directory on a cluster of several nodes."""
  if num_nodes > 1 and not os.path.isabs(sweep_dir):
    raise ValueError(
        f"--sweep_dir={sweep_dir!r} is relative, and this Ray cluster has {num_nodes} nodes: "
        "give an absolute path on storage every node sees (docs/ray.md).")


def run(jobs: List[Job], root: str, sweep_dir: str, on_done: Callable[..., None], *,
        address: Optional[str] = None, max_retries: int = 3) -> None:
  """Runs the jobs as Ray tasks, calling on_done(name, returncode, seconds, node)
  as each ends (in the order they end).

  Args:
    jobs: the runs to run.
    root: the repository root (the same path on every node).
    sweep_dir: the sweep directory (refused if relative on several nodes).
    on_done: called with each job's name, exit code, wall seconds and node;
      with interrupted=True for a job stopped by Ctrl-C.
    address: a Ray cluster's address (`auto`, `ray://host:10001`); None starts
      a local Ray instance on this machine (or uses one already initialised).
    max_retries: retries of a task whose worker or node died.

  Raises:
    ImportError with the install command when Ray is not installed.
  """
  try:
    import ray  # pylint: disable=g-import-not-at-top
  except ImportError as err:
    raise ImportError("--launcher=ray needs Ray: pip install -e '.[ray]'") from err
  submitted = time.time()
  started_here = not ray.is_initialized()
  if started_here:
    with warnings.catch_warnings():  # Ray's processes exec at once after their fork
      warnings.filterwarnings("ignore", message="os.fork", category=RuntimeWarning)
      ray.init(address=address, logging_level="WARNING", log_to_driver=False)
  try:
    check_sweep_dir(sweep_dir, len([n for n in ray.nodes() if n["Alive"]]))
    has_gpus = ray.cluster_resources().get("GPU", 0) > 0
    env_vars = {k: os.environ[k] for k in FORWARDED_ENV if k in os.environ}
    # By value: a worker need not import this module (its node's sys.path may
    # not hold the repository), only the standard library that run_job uses.
    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])
    task = ray.remote(run_job)
    refs = {}
    for job in jobs:
      ref = task.options(
          name=job.name, num_cpus=job.num_cpus, num_gpus=job.num_gpus if has_gpus else 0,
          max_retries=max_retries, retry_exceptions=False,
          runtime_env={"env_vars": env_vars} if env_vars else None,
      ).remote(job.command, root, job.log_path)
      refs[ref] = job
    try:
      while refs:
        ready, _ = ray.wait(list(refs), num_returns=1, timeout=1.0)
        for ref in ready:
          job = refs.pop(ref)
          try:
            result = ray.get(ref)
          except ray.exceptions.RayError as err:  # out of retries, or a task error
            print(f"{job.name}: {err}", file=sys.stderr, flush=True)
            start = attempt_start(job.log_path, submitted)   # its last attempt's time
            on_done(job.name, -1, 0.0 if start is None else time.time() - start, None)
          else:
            on_done(job.name, result["returncode"], result["seconds"], result["node"])
    except (KeyboardInterrupt, SystemExit):
      _cancel(ray, refs, on_done, submitted)
      raise
  finally:
    if started_here:
      ray.shutdown()


def _cancel(ray, refs, on_done, submitted: float) -> None:
  """Cancels the unfinished tasks; reports the ones that had started as interrupted."""
  for ref in refs:
    ray.cancel(ref)
  deadline = time.time() + 90
  for ref, job in refs.items():
    try:
      ray.get(ref, timeout=max(1.0, deadline - time.time()))
    except ray.exceptions.TaskCancelledError:
      pass
    except ray.exceptions.GetTimeoutError:
      ray.cancel(ref, force=True)
    except ray.exceptions.RayError:
      pass
    start = attempt_start(job.log_path, submitted)
    if start is not None:
      on_done(job.name, None, time.time() - start, None, interrupted=True)
