"""Metric writers: JSONL (the source of truth) and TensorBoard event files.

TensorBoard files are written with tensorboardX, which needs no TensorFlow.
"""

import json
import os
from typing import Any, Dict, Mapping

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


def read_jsonl(path: str):
  """The records of a JSONL file, in order."""
  with open(path) as f:
    return [json.loads(line) for line in f if line.strip()]


def truncate_jsonl(path: str, max_step: int) -> None:
  """Drops records with step > max_step (a resumed run rewrites them)."""
  if not os.path.exists(path):
    return
  kept = [r for r in read_jsonl(path) if r["step"] <= max_step]
  with open(path, "w") as f:
    for r in kept:
      f.write(json.dumps(r) + "\n")
