r"""Runs a sweep of RL runs: one after another, or several processes at once.

  python -m experiments.sweep --sweep=configs/sweeps/headline.py
  python -m experiments.sweep --sweep=configs/sweeps/shaping_lambda.py:domain=multiplication
  python -m experiments.sweep --sweep=configs/sweeps/headline.py:size=smoke --parallel=2
  python -m experiments.sweep --sweep=configs/sweeps/headline.py --launcher=ray \
      [--ray_address=auto --sweep_dir=/shared/sweeps/headline]

A sweep file defines `get_sweep(arg)` returning its runs as
`(config file, config string, overrides)` entries, e.g.
`("configs/grpo.py", "domain=multiplication", {"run.num_seeds": 3})`. Each run is
`python -m experiments.synthetic` in its own process (seeds are vmapped inside
it), writing `SWEEP_DIR/runs/<name>/`; its output goes to `SWEEP_DIR/logs/<name>.log`.
`--launcher=ray` makes each run a Ray task instead, on a local Ray instance or
a cluster (`--ray_address`), asking for the resources its config declares
(`config.resources`), with the same names, records, skips, resumes and events
(each run's node added); see experiments/ray_sweep.py and docs/ray.md.
A run's name is its config file's stem, its config-string values and the
overrides that differ between entries (`reward_shaping-multiplication-lam=0.1`).

Every entry is checked (config file, keys, values) before anything compiles, and
the base models and eval datasets are built once, before the runs start. Running the
same command again resumes the sweep: finished runs are skipped, interrupted ones
continue from their last checkpoint; with more steps (`train.num_steps`, e.g. a
sweep file's `steps=600`) it extends the finished runs from their last checkpoint.
`--only='grpo-*,poly_epo-*'` runs (or resumes, or extends) only the runs whose
names match, leaving the others as they are. Ctrl-C or `kill PID` stops the sweep and its
runs, logging the time each had run. `--keep_dir=DIR` keeps each run's records in DIR
as it finishes (a disk that outlives the machine: a Colab session's Drive, a
repository), and the same sweep started on a fresh machine with the same
--keep_dir restores them and trains only the rest. A sweep directory made by a different sweep
is refused unless --overwrite. `SWEEP_DIR/sweep.jsonl` records the command, the
commit, the machine and each run's wall time; `python -m experiments.report
SWEEP_DIR` turns the directory into tables and plots.
"""

import datetime
import fnmatch
import importlib.util
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from typing import Any, Dict, List, NamedTuple, Optional, Sequence

from absl import app, flags, logging

from experiments import build, cli, machine, ray_sweep
from polyepo.io import rundir, writers

_SWEEP = flags.DEFINE_string("sweep", None, "Sweep file, optionally with a config string: "
                             "configs/sweeps/headline.py:size=smoke.")
_SWEEP_DIR = flags.DEFINE_string("sweep_dir", None,
                                 "Sweep directory (default: runs/sweeps/<sweep name>).")
_PARALLEL = flags.DEFINE_integer("parallel", 1, "Runs executed at once (processes; the local "
                                 "launcher).")
LAUNCHERS = ("local", "ray")
_LAUNCHER = flags.DEFINE_enum("launcher", "local", LAUNCHERS,
                              "local: processes on this machine (--parallel at once); ray: one "
                              "Ray task per run (pip install -e '.[ray]').")
_RAY_ADDRESS = flags.DEFINE_string("ray_address", None,
                                   "Ray cluster to join under --launcher=ray (auto, "
                                   "ray://host:10001); default: a local Ray instance.")
_MAX_RETRIES = flags.DEFINE_integer("max_retries", 3, "Retries of a Ray task whose worker or "
                                    "node died (--launcher=ray); the run resumes from its last "
                                    "checkpoint.")
_OVERWRITE = flags.DEFINE_bool("overwrite", False, "Remove what a sweep wrote in an existing "
                                "sweep directory first (a directory holding anything else is "
                                "refused).")
_ONLY = flags.DEFINE_list("only", None, "Run only the runs whose names match one of these "
                          "shell patterns (e.g. 'grpo-*,poly_epo-*'); the others are left as "
                          "they are.")
_KEEP_DIR = flags.DEFINE_string(
    "keep_dir", None, "A directory that keeps each finished run's records (config.json, "
    "train.jsonl.gz, eval.jsonl.gz; no checkpoints) and the sweep's sweep.json and "
    "sweep.jsonl, on storage that outlives this machine: the same sweep on a fresh machine, "
    "given the same --keep_dir, restores them and skips those runs. experiments.report "
    "reads it as a sweep directory.")

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class RunSpec(NamedTuple):
  """One planned run of a sweep: its name and how to configure it."""
  name: str
  config_file: str
  config_string: str
  overrides: Dict[str, Any]

  def flags(self) -> List[str]:
    """The experiments.synthetic flags of this run (workdir excluded)."""
    spec = f"{self.config_file}:{self.config_string}" if self.config_string else self.config_file
    return [f"--config={spec}"] + [f"--config.{k}={v}" for k, v in self.overrides.items()]


def _load_module(path: str, what: str):
  if not os.path.isfile(path):
    raise FileNotFoundError(f"{what} {path!r} does not exist.")
  spec = importlib.util.spec_from_file_location(
      os.path.splitext(os.path.basename(path))[0], path)
  module = importlib.util.module_from_spec(spec)
  spec.loader.exec_module(module)
  return module


def _run_name(config_file: str, config_string: str, overrides: Dict[str, Any],
              varying: Sequence[str]) -> str:
  parts = [os.path.splitext(os.path.basename(config_file))[0]]
  parts += [item.partition("=")[2] for item in filter(None, config_string.split(","))]
  parts += [f"{k.rsplit('.', 1)[-1]}={overrides[k]}" for k in varying if k in overrides]
  return "-".join(parts)


def load_sweep(spec: str) -> List[RunSpec]:
  """The runs of a sweep file (`path[:config string]`), named and checked.

  Raises:
    ValueError naming the entry and field for a malformed entry, an unknown
    config key, an invalid value, or two entries with the same name.
  """
  path, _, arg = spec.partition(":")
  module = _load_module(path, "Sweep file")
  if not hasattr(module, "get_sweep"):
    raise ValueError(f"Sweep file {path!r} defines no get_sweep(arg).")
  entries = list(module.get_sweep(arg or None))
  if not entries:
    raise ValueError(f"Sweep {spec!r} has no runs.")
  for i, entry in enumerate(entries):
    if (not isinstance(entry, (tuple, list)) or len(entry) != 3
        or not isinstance(entry[2], dict)):
      raise ValueError(f"Sweep entry {i} is {entry!r}; expected (config file, config string, "
                       f"{{override key: value}}).")
  keys = sorted({k for _, _, o in entries for k in o})
  varying = [k for k in keys
             if len({json.dumps(o.get(k), default=str) for _, _, o in entries}) > 1]
  runs = [RunSpec(_run_name(f, s, o, varying), f, s, dict(o)) for f, s, o in entries]
  names = [r.name for r in runs]
  duplicates = sorted({n for n in names if names.count(n) > 1})
  if duplicates:
    raise ValueError(f"Sweep entries share the run names {duplicates}; make them differ.")
  for run in runs:
    check_run(run)
  return runs


def build_config(run: RunSpec):
  """The run's ConfigDict: the config file's get_config(string) plus the overrides."""
  module = _load_module(os.path.join(ROOT, run.config_file)
                        if not os.path.isabs(run.config_file) else run.config_file,
                        f"Config file of run {run.name!r}")
  chosen = sorted(set(run.overrides) & set(cli.STRING_FIELDS))
  if chosen:  # get_config builds the rest of the config for them
    raise ValueError(f"Run {run.name!r}: {', '.join(chosen)} is chosen in the config string "
                     f"({run.config_file}:...,{chosen[0]}=...), not by an override.")
  try:
    config = module.get_config(run.config_string or None)
  except ValueError as err:
    raise ValueError(f"Run {run.name!r}: {err}") from err
  for key, value in run.overrides.items():
    *path, leaf = key.split(".")
    parent = config
    for depth, part in enumerate(path + [leaf]):
      if not hasattr(parent, "keys") or part not in parent:
        valid = ", ".join(sorted(parent.keys())) if hasattr(parent, "keys") else "none"
        raise ValueError(f"Run {run.name!r}: unknown config key {key!r} (valid at "
                         f"{part!r}'s level: {valid}).")
      if depth < len(path):
        parent = parent[part]
    try:
      parent[leaf] = value
    except TypeError as err:
      raise ValueError(f"Run {run.name!r}: bad value {value!r} for {key!r}: {err}") from err
  return config


def check_run(run: RunSpec) -> None:
  """Fails (ValueError naming the run) if the run's config is invalid."""
  from experiments import build  # pylint: disable=g-import-not-at-top
  config = build_config(run)
  try:
    build.check_config(config)
  except ValueError as err:
    raise ValueError(f"Run {run.name!r}: {err}") from err


def is_finished(workdir: str, num_steps: Optional[int] = None) -> bool:
  """Whether a run directory holds the final evaluation of a completed run: at
  step `num_steps`, or by default at the length it was started with."""
  try:
    if num_steps is None:
      with open(os.path.join(workdir, "config.json")) as f:
        num_steps = json.load(f)["train"]["num_steps"]
    steps = [r["step"] for r in writers.read_jsonl(writers.jsonl_path(workdir, "eval.jsonl"))]
  except (OSError, ValueError, KeyError):
    return False
  return bool(steps) and steps[-1] == num_steps


def run_command(run: RunSpec, sweep_dir: str, python: str = sys.executable) -> List[str]:
  """The command that runs (or resumes, or extends) a run in its sweep directory."""
  return [python, "-m", "experiments.synthetic", *run.flags(),
          f"--workdir={os.path.join(sweep_dir, 'runs', run.name)}", "--resume"]


def _commit() -> str:
  try:
    rev = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                         check=True).stdout.strip()
    dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT,
                           capture_output=True, text=True, check=True).stdout.strip()
    return rev + ("-dirty" if dirty else "")
  except (OSError, subprocess.CalledProcessError):
    return "unknown"


def _log(sweep_dir: str, record: Dict[str, Any]) -> None:
  record = {"time": datetime.datetime.now().isoformat(timespec="seconds"), **record}
  with open(os.path.join(sweep_dir, "sweep.jsonl"), "a") as f:
    f.write(json.dumps(record) + "\n")


def _without_extendable(manifest: Dict[str, Any]) -> str:
  """A manifest as JSON, without the overrides a run may raise when resumed."""
  runs = [dict(r, overrides={k: v for k, v in r["overrides"].items()
                             if k not in build.EXTENDABLE}) for r in manifest["runs"]]
  return json.dumps({**manifest, "runs": runs}, sort_keys=True, default=str)


def prepare_sweep_dir(sweep_dir: str, runs: List[RunSpec], overwrite: bool) -> None:
  """Creates the sweep directory; refuses one made by a different sweep.

  With overwrite, first removes what a sweep wrote there, and nothing else
  (`rundir.clear`: a directory holding anything else is refused).

  The same sweep with more steps (`train.num_steps`) is not a different sweep:
  its finished runs are extended (`build.check_resumable` refuses fewer steps).
  """
  manifest = {"runs": [r._asdict() for r in runs]}
  path = os.path.join(sweep_dir, "sweep.json")
  if overwrite:
    rundir.clear(sweep_dir, rundir.SWEEP_LAYOUT, "sweep directory")
  if os.path.exists(path):
    with open(path) as f:
      existing = json.load(f)
    if _without_extendable(existing) != _without_extendable(manifest):
      raise FileExistsError(
          f"Sweep directory {sweep_dir!r} holds a different sweep. Pass --overwrite to delete "
          f"it, or --sweep_dir to choose another directory.")
  os.makedirs(os.path.join(sweep_dir, "runs"), exist_ok=True)
  os.makedirs(os.path.join(sweep_dir, "logs"), exist_ok=True)
  writers.write_json_atomically(path, manifest, sort_keys=True)


def check_keep_dir(keep_dir: str, runs: List[RunSpec]) -> None:
  """Raises FileExistsError if `keep_dir` keeps a different sweep's runs."""
  path = os.path.join(keep_dir, "sweep.json")
  if os.path.exists(path):
    with open(path) as f:
      kept = json.load(f)
    if _without_extendable(kept) != _without_extendable({"runs": [r._asdict() for r in runs]}):
      raise FileExistsError(f"--keep_dir={keep_dir!r} keeps a different sweep's runs; give "
                            f"this sweep a directory of its own.")


def restore_kept(keep_dir: str, sweep_dir: str, runs: List[RunSpec]) -> List[str]:
  """Copies into `sweep_dir` each run of `runs` that `keep_dir` holds finished and
  `sweep_dir` does not hold at all, and the sweep's log (sweep.jsonl) when
  `sweep_dir` has none, so that its wall time adds up across machines; returns
  the names restored. `check_keep_dir` first."""
  os.makedirs(os.path.join(sweep_dir, "runs"), exist_ok=True)
  log = os.path.join(keep_dir, "sweep.jsonl")
  if os.path.exists(log) and not os.path.exists(os.path.join(sweep_dir, "sweep.jsonl")):
    shutil.copyfile(log, os.path.join(sweep_dir, "sweep.jsonl"))
  restored = []
  for run in runs:
    kept, workdir = (os.path.join(d, "runs", run.name) for d in (keep_dir, sweep_dir))
    if (is_finished(kept, build_config(run).train.num_steps)
        and not os.path.exists(workdir)):
      shutil.copytree(kept, workdir)
      restored.append(run.name)
  return restored


def keep(sweep_dir: str, keep_dir: str, names: Sequence[str] = ()) -> None:
  """Copies the records of runs `names` (finished) and the sweep's sweep.json and
  sweep.jsonl from `sweep_dir` to `keep_dir`."""
  from experiments.analysis import archive  # pylint: disable=g-import-not-at-top
  os.makedirs(os.path.join(keep_dir, "runs"), exist_ok=True)
  for name in names:
    archive.archive_run(os.path.join(sweep_dir, "runs", name),
                        os.path.join(keep_dir, "runs", name))
  for name in ("sweep.json", "sweep.jsonl"):
    source = os.path.join(sweep_dir, name)
    if os.path.exists(source):
      shutil.copyfile(source, os.path.join(keep_dir, name + ".partial"))
      os.replace(os.path.join(keep_dir, name + ".partial"), os.path.join(keep_dir, name))


def prepare_shared(runs: List[RunSpec]) -> None:
  """Builds what runs share, once, before they start (parallel runs would race).

  Pretrains (or loads) each distinct base model and builds each domain's TFDS
  eval splits.
  """
  from experiments import build  # pylint: disable=g-import-not-at-top
  seen = set()
  for run in runs:
    config = build_config(run)
    base = build.base_config(config)
    key = json.dumps(base.to_dict(), sort_keys=True, default=str)
    if key not in seen:
      seen.add(key)
      _, _, _, directory = build.base_model(base)
      print(f"base model ready: {directory}", flush=True)
    if config.domain not in seen:
      seen.add(config.domain)
      build.eval_problems(config.domain)


def select_runs(runs: List[RunSpec], patterns: Optional[Sequence[str]]) -> List[RunSpec]:
  """The runs whose names match one of the shell patterns (all runs for None).

  Raises:
    ValueError naming a pattern that matches no run, and the runs' names.
  """
  if patterns is None:
    return runs
  for pattern in patterns:
    if not any(fnmatch.fnmatchcase(run.name, pattern) for run in runs):
      raise ValueError(f"--only pattern {pattern!r} matches no run of this sweep; its runs: "
                       + ", ".join(run.name for run in runs) + ".")
  return [run for run in runs if any(fnmatch.fnmatchcase(run.name, p) for p in patterns)]


def run_sweep(runs: List[RunSpec], sweep_dir: str, parallel: int = 1,
              progress: bool = True, launcher: str = "local", ray_address: Optional[str] = None,
              max_retries: int = 3, keep_dir: Optional[str] = None) -> bool:
  """Runs every unfinished run; returns whether all of them succeeded.

  Args:
    runs: the runs (`load_sweep`, `select_runs`).
    sweep_dir: the sweep directory (`prepare_sweep_dir`).
    parallel: runs at once under the local launcher.
    progress: show a progress bar.
    launcher: "local" (processes here) or "ray" (`experiments.ray_sweep`).
    ray_address: the Ray cluster to join (None: a local instance).
    max_retries: Ray's retries of a run whose worker died.
    keep_dir: where each finished run's records are kept (`keep`), those finished
      before the sweep started included; None: nowhere.
  """
  from tqdm.auto import tqdm  # pylint: disable=g-import-not-at-top
  for run in runs:  # a run started under another config is neither skipped nor resumed
    try:
      build.check_resumable(os.path.join(sweep_dir, "runs", run.name),
                           build_config(run).to_dict())
    except ValueError as err:
      raise ValueError(f"Run {run.name!r}: {err}") from err
  pending, unkept = [], []
  for run in runs:
    steps = build_config(run).train.num_steps
    if is_finished(os.path.join(sweep_dir, "runs", run.name), steps):
      print(f"skip {run.name}: finished", flush=True)
      if keep_dir and not is_finished(os.path.join(keep_dir, "runs", run.name), steps):
        unkept.append(run.name)
    else:
      pending.append(run)
  if keep_dir:
    keep(sweep_dir, keep_dir, unkept)
  bar = tqdm(total=len(runs), initial=len(runs) - len(pending), desc="sweep", unit="run",
             disable=not progress)
  failed = []

  def on_done(name, returncode, seconds, node=None, interrupted=False):
    record = {"event": "run", "name": name, "returncode": returncode,
              "seconds": round(seconds, 1)}
    if node is not None:
      record["node"] = node
    if interrupted:
      record["interrupted"] = True
      _log(sweep_dir, record)
      if keep_dir:
        keep(sweep_dir, keep_dir)
      print(f"interrupted {name} after {seconds / 60:.1f} min; the same command resumes it",
            flush=True)
      return
    _log(sweep_dir, record)
    if keep_dir:
      keep(sweep_dir, keep_dir, [] if returncode else [name])
    status = "done" if returncode == 0 else f"FAILED (exit {returncode})"
    tqdm.write(f"{status} {name} in {seconds / 60:.1f} min" + (f" on {node}" if node else ""))
    if returncode:
      failed.append(name)
    bar.update(1)

  if launcher == "ray":
    jobs = []
    absolute = os.path.abspath(sweep_dir)  # tasks run in ROOT, perhaps on other nodes
    for run in pending:
      num_cpus, num_gpus = build.ray_resources(build_config(run))
      jobs.append(ray_sweep.Job(run.name, run_command(run, absolute, python="{python}"),
                                os.path.join(absolute, "logs", f"{run.name}.log"),
                                num_cpus, num_gpus))
    if jobs:  # a finished sweep starts no Ray instance
      tqdm.write(f"submitting {len(jobs)} run(s) to Ray")
      ray_sweep.run(jobs, ROOT, sweep_dir, on_done, address=ray_address,
                    max_retries=max_retries)
  else:
    _run_local(pending, sweep_dir, parallel, on_done)
  bar.close()
  if failed:
    print(f"{len(failed)} run(s) failed: {', '.join(failed)}; see {sweep_dir}/logs/. "
          "Run the same command again to retry them.", flush=True)
  return not failed


def _run_local(pending: List[RunSpec], sweep_dir: str, parallel: int, on_done) -> None:
  """Runs the runs as processes on this machine, `parallel` at once."""
  from tqdm.auto import tqdm  # pylint: disable=g-import-not-at-top
  pending = list(pending)
  active = {}  # name -> (process, start time, log file)
  try:
    while pending or active:
      while pending and len(active) < parallel:
        run = pending.pop(0)
        log = open(os.path.join(sweep_dir, "logs", f"{run.name}.log"), "a")
        command = run_command(run, sweep_dir)
        log.write(f"$ {' '.join(command)}\n")
        log.flush()
        process = subprocess.Popen(command, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT)
        active[run.name] = (process, time.time(), log)
        tqdm.write(f"start {run.name} (log: {log.name})")
      time.sleep(0.5)
      for name, (process, start, log) in list(active.items()):
        if process.poll() is None:
          continue
        log.close()
        del active[name]
        on_done(name, process.returncode, time.time() - start)
  except (KeyboardInterrupt, SystemExit):
    _stop_active(active, on_done)
    raise


def _stop_active(active, on_done) -> None:
  """Stops the runs still going when the sweep is interrupted and logs each one's
  time as an interrupted run, so the sweep's wall time counts it (the next
  invocation resumes it from its last checkpoint)."""
  for name, (process, start, log) in active.items():
    ray_sweep.stop(process)
    log.close()
    on_done(name, process.returncode, time.time() - start, interrupted=True)


def _interrupt_on_sigterm() -> None:
  """Makes SIGTERM (`kill PID`) stop the sweep as Ctrl-C does: its runs are
  stopped and their time logged, not left running without it."""
  signal.signal(signal.SIGTERM, signal.default_int_handler)


def main(argv):
  logging.set_verbosity(logging.WARNING)
  if len(argv) > 1:
    raise app.UsageError(f"Unexpected arguments: {argv[1:]}")
  if _PARALLEL.value < 1:
    raise app.UsageError(f"--parallel must be >= 1, got {_PARALLEL.value}.")
  if _MAX_RETRIES.value < 0:
    raise app.UsageError(f"--max_retries must be >= 0, got {_MAX_RETRIES.value}.")
  if _LAUNCHER.value != "ray" and _RAY_ADDRESS.value:
    raise app.UsageError("--ray_address needs --launcher=ray.")
  if _OVERWRITE.value and _KEEP_DIR.value:
    raise app.UsageError("--overwrite starts the sweep afresh, but --keep_dir would restore "
                         "the runs it keeps: drop one, or empty the keep directory first.")
  runs = load_sweep(_SWEEP.value)  # every entry checked before anything compiles
  selected = select_runs(runs, _ONLY.value)
  sweep_name = os.path.splitext(os.path.basename(_SWEEP.value.partition(":")[0]))[0]
  sweep_dir = _SWEEP_DIR.value or os.path.join("runs", "sweeps", sweep_name)
  if _KEEP_DIR.value:
    check_keep_dir(_KEEP_DIR.value, runs)   # before anything is written
  prepare_sweep_dir(sweep_dir, runs, _OVERWRITE.value)
  if _KEEP_DIR.value:
    restored = restore_kept(_KEEP_DIR.value, sweep_dir, runs)
    if restored:
      print(f"restored {len(restored)} finished run(s) from {_KEEP_DIR.value}", flush=True)
  print(f"sweep {_SWEEP.value}: {len(selected)} of {len(runs)} runs into {sweep_dir}"
        if _ONLY.value else f"sweep {_SWEEP.value}: {len(runs)} runs into {sweep_dir}",
        flush=True)
  tic = time.time()
  _log(sweep_dir, {"event": "start", "command": " ".join(["python -m experiments.sweep"]
                                                         + sys.argv[1:]),
                   "commit": _commit(), "machine": machine.describe()})
  prepare_shared(selected)
  _interrupt_on_sigterm()
  ok = run_sweep(selected, sweep_dir, _PARALLEL.value, launcher=_LAUNCHER.value,
                 ray_address=_RAY_ADDRESS.value, max_retries=_MAX_RETRIES.value,
                 keep_dir=_KEEP_DIR.value)
  _log(sweep_dir, {"event": "end", "seconds": round(time.time() - tic, 1), "ok": ok})
  if _KEEP_DIR.value:
    keep(sweep_dir, _KEEP_DIR.value)
  print(f"sweep finished in {(time.time() - tic) / 60:.1f} min; "
        f"report: python -m experiments.report {sweep_dir}", flush=True)
  if not ok:
    sys.exit(1)


if __name__ == "__main__":
  flags.mark_flags_as_required(["sweep"])  # here: experiments.comparison imports the module
  cli.run(main)
