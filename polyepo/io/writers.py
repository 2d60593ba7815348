"""Metric writers: JSONL (the source of truth) and TensorBoard event files.

TensorBoard files are written with tensorboardX, which needs no TensorFlow.
Runs append to plain `<name>.jsonl`; the records archived under results/ are
gzipped (`<name>.jsonl.gz`), which `read_jsonl` and `jsonl_path` read alike.
"""

import gzip
import json
import os
import warnings
from typing import Any, Dict, List, Mapping, Optional

import numpy as np


def _plain(value):
  if isinstance(value, Mapping):
    return {str(k): _plain(v) for k, v in value.items()}
  if isinstance(value, (list, tuple)):
    return [_plain(v) for v in value]
  if isinstance(value, np.ndarray) or hasattr(value, "tolist"):
    return np.asarray(value).tolist()
  return value


def _scalars(prefix: str, value, out: Dict[str, float]):
  if isinstance(value, Mapping):
    for k, v in value.items():
      _scalars(f"{prefix}/{k}" if prefix else str(k), v, out)
  elif isinstance(value, (list, tuple)):
    for i, v in enumerate(value):
      _scalars(f"{prefix}/{i}", v, out)
  elif isinstance(value, (int, float, np.number)) and value is not None:
    out[prefix] = float(value)


class MetricWriter:
  """Appends records to `<workdir>/<name>.jsonl` and scalars to TensorBoard."""

  def __init__(self, workdir: str, tensorboard: bool = True):
    self.workdir = workdir
    os.makedirs(workdir, exist_ok=True)
    self._tb = None
    if tensorboard:
      from tensorboardX import SummaryWriter  # pylint: disable=g-import-not-at-top
      self._tb = SummaryWriter(os.path.join(workdir, "tb"))

  def write(self, name: str, step: int, record: Dict[str, Any]) -> None:
    record = {"step": int(step), **_plain(record)}
    with open(os.path.join(self.workdir, f"{name}.jsonl"), "a") as f:
      f.write(json.dumps(record) + "\n")
    if self._tb is not None:
      scalars: Dict[str, float] = {}
      _scalars(name, {k: v for k, v in record.items() if k != "step"}, scalars)
      for tag, value in scalars.items():
        self._tb.add_scalar(tag, value, step)

  def close(self) -> None:
    if self._tb is not None:
      self._tb.close()


TIMINGS = ("seconds_per_step", "seconds")
"""Wall-clock fields of the records: train.jsonl's seconds_per_step (per step,
from its chunk) and each eval.jsonl split's seconds (sampling, forced accuracy)."""


def without_timings(record: Dict[str, Any]) -> Dict[str, Any]:
  """A train.jsonl or eval.jsonl record without its `TIMINGS`: what two runs of
  one config on one machine record alike."""
  return {k: without_timings(v) if isinstance(v, Mapping) else v
          for k, v in record.items() if k not in TIMINGS}


def write_json_atomically(path: str, value: Any, sort_keys: bool = False) -> None:
  """Writes `value` as JSON to `path` through a temporary file and a rename, so
  that a crash leaves either the old file or the new one, never a torn one."""
  temporary = f"{path}.tmp"
  with open(temporary, "w") as f:
    json.dump(value, f, indent=2, sort_keys=sort_keys, default=str)
  os.replace(temporary, path)


class RecoveryWarning(UserWarning):
  """A run's files were damaged (a torn write) and the run recovered from it."""


def jsonl_path(workdir: str, name: str) -> str:
  """The path of record file `name` (e.g. "eval.jsonl") in `workdir`: the plain
  file, or its gzipped archive `name.gz` when only that exists; the plain path
  when neither does."""
  path = os.path.join(workdir, name)
  if not os.path.exists(path) and os.path.exists(path + ".gz"):
    return path + ".gz"
  return path


def read_jsonl(path: str):
  """The records of a JSONL file, in order; a path ending in `.gz` is read
  through gzip.

  A last line that does not parse was torn by a crash mid-write: it is dropped
  with a RecoveryWarning naming the file (a resumed run rewrites the file
  without it, `truncate_jsonl`). A damaged line before the last raises
  ValueError naming the file and line.
  """
  with (gzip.open(path, "rt") if path.endswith(".gz") else open(path)) as f:
    lines = [(i, line) for i, line in enumerate(f, 1) if line.strip()]
  records = []
  for i, line in lines:
    try:
      records.append(json.loads(line))
    except json.JSONDecodeError as err:
      if i != lines[-1][0]:
        raise ValueError(f"{path}, line {i}, is not a JSON record ({err}); only the last "
                         f"line of a run's record can be torn by a crash.") from err
      warnings.warn(f"{path}: its last line is incomplete (a write cut off by a crash, "
                    f"{len(line)} characters); it is left out.", RecoveryWarning,
                    stacklevel=2)
  return records


def truncate_jsonl(path: str, max_step: Optional[int] = None) -> List[Dict[str, Any]]:
  """Drops a torn last line and the records with step > max_step (None: none
  of them), which a resumed run rewrites; returns the records kept ([] for a
  missing file, which stays missing)."""
  if not os.path.exists(path):
    return []
  kept = [r for r in read_jsonl(path) if max_step is None or r["step"] <= max_step]
  with open(path, "w") as f:
    for r in kept:
      f.write(json.dumps(r) + "\n")
  return kept
