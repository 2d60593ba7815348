"""A sweep directory's own records: what ran, what is missing, and a copy of them.

  archive.sweep_info(sweep_dirs)       # report.md's "Sweeps" lines, from each sweep.jsonl
  archive.cost_lines(runs)             # each run's training and evaluation time, a seed's
  archive.unfinished(runs, sweep_dirs)  # the planned runs without a complete record
  archive.archive_sweeps(sweep_dirs, "results")   # results/<sweep name>/: the run records

An archive holds each run's RECORDS (its JSONL records gzipped) and the sweep's
sweep.json and sweep.jsonl,
no checkpoint or log: it is itself a sweep directory, from which the report
regenerates the same report.md and summary.json, byte for byte.
"""

import datetime
import gzip
import json
import os
import shutil
from typing import Any, Dict, List, Sequence

from experiments.analysis.records import RunRecord, is_complete, num_seeds, read_jsonl_or_empty
from polyepo.io import writers

RECORDS = ("config.json", "train.jsonl.gz", "eval.jsonl.gz")  # of each run in an archive


def _invocations(events) -> List[Dict[str, Any]]:
  """A sweep.jsonl's events split into invocations, each from its "start" event
  up to the next one: {"seconds", "killed", "runs", "unrecorded"}. An invocation
  without an "end" event was killed; its time is counted up to its last recorded
  event, and "unrecorded" says whether the run it was in may be missing (a sweep
  stopped by Ctrl-C or SIGTERM logs its runs as interrupted; a SIGKILL does not)."""
  out, current = [], None

  def close():
    if current is not None:
      last = current.pop("last")
      out.append(dict(current, seconds=_seconds_between(current["start"], last["time"]),
                      killed=True, unrecorded=not last.get("interrupted", False)))
  for event in events:
    if event["event"] == "start":
      close()
      current = {"start": event["time"], "last": event, "runs": 0}
    elif current is None:
      continue
    elif event["event"] == "end":
      out.append({"start": current["start"], "seconds": event["seconds"], "killed": False,
                  "runs": current["runs"], "unrecorded": False})
      current = None
    else:
      current["last"] = event
      current["runs"] += event["event"] == "run"
  close()
  return out


def _seconds_between(a: str, b: str) -> float:
  return (datetime.datetime.fromisoformat(b) - datetime.datetime.fromisoformat(a)).total_seconds()


def _run_times(events) -> str:
  """Each run's minutes: finished runs as "name 30.0", with "(+ 12.0 before an
  interruption)" where earlier invocations were stopped inside it and "(20.0 +
  25.0: extended)" where a finished run was extended by a later invocation; runs
  not finished yet as "name 12.0 so far"."""
  finished, interrupted = {}, {}
  for e in events:
    if e["event"] != "run":
      continue
    if e.get("interrupted"):
      interrupted[e["name"]] = interrupted.get(e["name"], 0.0) + e["seconds"]
    elif e["returncode"] == 0:
      finished.setdefault(e["name"], []).append(e["seconds"])
  parts = [f"{name} {sum(seconds) / 60:.1f}"
           + (" (" + " + ".join(f"{s / 60:.1f}" for s in seconds) + ": extended)"
              if len(seconds) > 1 else "")
           + (f" (+ {interrupted[name] / 60:.1f} before an interruption)"
              if name in interrupted else "")
           for name, seconds in finished.items()]
  parts += [f"{name} {seconds / 60:.1f} so far" for name, seconds in interrupted.items()
            if name not in finished]
  return (f"{len(finished)} runs took " + ", ".join(parts) + " min") if parts else "no run finished"


def sweep_info(sweep_dirs: Sequence[str]) -> List[str]:
  """Markdown lines: each sweep's command, commit, machine and wall time (all from
  its sweep.jsonl, so an archived copy gives the same lines)."""
  lines = []
  for sweep_dir in sweep_dirs:
    events = read_jsonl_or_empty(os.path.join(sweep_dir, "sweep.jsonl"))
    starts = [e for e in events if e["event"] == "start"]
    name = os.path.basename(os.path.normpath(sweep_dir))
    if not starts:
      lines.append(f"- `{name}`: no sweep.jsonl")
      continue
    invocations = _invocations(events)
    wall = sum(i["seconds"] for i in invocations)
    killed = sum(i["killed"] for i in invocations)
    idle = sum(not i["runs"] and not i["killed"] for i in invocations[1:])
    resumed = len(invocations) - 1 - idle
    commands = list(dict.fromkeys(start["command"] for start in starts))
    lines.append(f"- `{name}`: `{starts[0]['command']}` at commit `{starts[0]['commit']}`"
                 + (f" (resumed {resumed}×)" if resumed else "")
                 + (f" (then {idle} invocation(s) found every run finished)" if idle else "")
                 + "".join(f"; then `{c}`" for c in commands[1:]))
    machines = list(dict.fromkeys(start["machine"] for start in starts))
    lines.append(f"  - machine: {machines[0]}" if len(machines) == 1 else
                 "  - machines (invocations differ): " + "; ".join(machines))
    lines.append(f"  - wall time {wall / 60:.1f} min over {len(invocations)} invocation(s)"
                 + (f" ({killed} interrupted, each counted up to its last record"
                    + ("; the time of a run killed with its sweep is not recorded"
                       if any(i["unrecorded"] for i in invocations) else "") + ")"
                    if killed else "")
                 + "; " + _run_times(events))
  return lines


def run_cost(run: RunRecord) -> Dict[str, Any]:
  """What a run's records say it cost, in seconds of wall time: {"seeds", "steps",
  "training" (the sum of train.jsonl's seconds_per_step), "evaluations": [{"step",
  "sampling", "forced"}] (each eval.jsonl record's splits summed; absent from
  records written before evaluations were timed)}."""
  evaluations = []
  for record in run.evals:
    timed = [record[split]["seconds"] for split in record
             if isinstance(record[split], dict) and "seconds" in record[split]]
    if timed:
      evaluations.append({"step": record["step"],
                          **{part: sum(t[part] for t in timed) for part in ("sampling", "forced")}})
  last = run.evals[-1]
  seeds = next(num_seeds(last, split) for split in last if isinstance(last[split], dict))
  return {"seeds": seeds, "steps": len(run.train),
          "training": sum(r.get("seconds_per_step", 0.0) for r in run.train),
          "evaluations": evaluations}


def cost_lines(runs: Sequence[RunRecord]) -> List[str]:
  """Markdown lines: each run's cost (`run_cost`) in minutes, and per seed: the
  cost of one seed-run (training; each evaluation's sampling and forced accuracy)."""
  lines = []
  for run in runs:
    cost = run_cost(run)
    seeds = cost["seeds"]
    parts = [f"training {cost['training'] / 60:.1f} min ({cost['steps']} steps, "
             f"{cost['training'] / 60 / seeds:.2f} a seed)"]
    parts += [f"evaluation at step {e['step']}: sampling {e['sampling'] / 60:.1f} min, forced "
              f"accuracy {e['forced'] / 60:.1f} min "
              f"({(e['sampling'] + e['forced']) / 60 / seeds:.2f} a seed)"
              for e in cost["evaluations"]]
    if not cost["evaluations"]:
      parts.append("its evaluations are not timed in its records")
    blocks = f" in {len(run.blocks)} runs" if run.blocks else ""
    lines.append(f"- `{run.name}` ({seeds} seeds{blocks}): " + "; ".join(parts))
  return lines


def unfinished(runs: Sequence[RunRecord], sweep_dirs: Sequence[str]) -> List[Dict[str, Any]]:
  """The runs that have not finished: each planned one (its sweep.json entry) without a
  complete record, and each incomplete record no sweep.json plans."""
  done = {name for r in runs if is_complete(r) for name in r.blocks or (r.name,)}
  planned = []
  for sweep_dir in sweep_dirs:
    path = os.path.join(sweep_dir, "sweep.json")
    if os.path.exists(path):
      with open(path) as f:
        planned += json.load(f)["runs"]
  names = {run["name"] for run in planned}
  return ([run for run in planned if run["name"] not in done]
          + [{"name": r.name, "config_string": f"domain={r.domain}"} for r in runs
             if r.name not in done and r.name not in names])


def archive_records(sweep_dir: str, destination: str) -> None:
  """Copies a sweep's records (not its checkpoints or logs) to `destination`,
  replacing the runs of an earlier archive there: a run the sweep no longer
  has is not left behind to be read with the new ones."""
  if os.path.abspath(sweep_dir) == os.path.abspath(destination):
    return
  if os.path.isdir(os.path.join(destination, "runs")):
    shutil.rmtree(os.path.join(destination, "runs"))
  for name in ("sweep.json", "sweep.jsonl"):
    if os.path.exists(os.path.join(sweep_dir, name)):
      os.makedirs(destination, exist_ok=True)
      shutil.copyfile(os.path.join(sweep_dir, name), os.path.join(destination, name))
  for run in sorted(os.listdir(os.path.join(sweep_dir, "runs"))):
    archive_run(os.path.join(sweep_dir, "runs", run), os.path.join(destination, "runs", run))


def archive_run(workdir: str, target: str) -> None:
  """Copies a run directory's records to `target`: config.json, and train.jsonl and
  eval.jsonl gzipped (`compress`); not its checkpoints or event files."""
  os.makedirs(target, exist_ok=True)
  config = os.path.join(workdir, "config.json")
  if os.path.exists(config):
    shutil.copyfile(config, os.path.join(target, "config.json"))
  for name in ("train.jsonl", "eval.jsonl"):
    source = writers.jsonl_path(workdir, name)
    if os.path.exists(source):
      compress(source, os.path.join(target, name + ".gz"))


def compress(source: str, destination: str) -> None:
  """Copies `source` gzipped (if it is not already) to `destination`, with no
  name or time in the header, so that the same records give the same bytes."""
  partial = destination + ".partial"   # renamed when whole: a copy cut short is never read
  if source.endswith(".gz"):
    shutil.copyfile(source, partial)
  else:
    with open(source, "rb") as f, open(partial, "wb") as raw:
      with gzip.GzipFile(filename="", mode="wb", compresslevel=9, fileobj=raw, mtime=0) as out:
        shutil.copyfileobj(f, out)
  os.replace(partial, destination)


def archive_sweeps(sweep_dirs: Sequence[str], out: str) -> None:
  """`archive_records` of each sweep into `out/<sweep name>/`."""
  for sweep_dir in sweep_dirs:
    archive_records(sweep_dir, os.path.join(out, os.path.basename(os.path.normpath(sweep_dir))))
