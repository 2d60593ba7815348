"""Saving and restoring parameter pytrees with orbax, and config-keyed caches."""

import hashlib
import json
import os
from typing import Any

import jax
import orbax.checkpoint as ocp


def cache_root(cache_dir: str = "") -> str:
  """The polyepo cache: `cache_dir`, else $POLYEPO_CACHE, else ~/.cache/polyepo."""
  return os.path.abspath(os.path.expanduser(
      cache_dir or os.environ.get("POLYEPO_CACHE", "~/.cache/polyepo")))


def config_hash(obj: Any) -> str:
  """A short stable hash of a JSON-serialisable description of a config."""
  text = json.dumps(obj, sort_keys=True, default=str)
  return hashlib.sha256(text.encode()).hexdigest()[:12]


def save_params(directory: str, params) -> None:
  """Writes `params` to `directory`/params (the directory is created)."""
  os.makedirs(directory, exist_ok=True)
  with ocp.StandardCheckpointer() as checkpointer:
    checkpointer.save(os.path.join(os.path.abspath(directory), "params"), params)


def load_params(directory: str, abstract_params) -> Any:
  """Restores params saved by `save_params`, shaped like `abstract_params`.

  Leaves of `abstract_params` without a sharding are restored onto this
  process's first device, not the device they were saved from: params saved on
  a CPU load on a GPU, and the reverse.

  Args:
    directory: what was given to save_params.
    abstract_params: a pytree of jax.ShapeDtypeStruct, e.g. from jax.eval_shape.

  Raises:
    FileNotFoundError: nothing was saved under `directory`.
    ValueError: naming `directory`, when the saved params do not restore into
      `abstract_params` (another tree or other shapes: a model of another size).
  """
  path = os.path.join(os.path.abspath(directory), "params")
  if not os.path.isdir(path):
    raise FileNotFoundError(f"No parameters saved under {directory!r} (expected {path}).")
  here = jax.sharding.SingleDeviceSharding(jax.local_devices()[0])
  abstract_params = jax.tree.map(
      lambda x: x if getattr(x, "sharding", None) is not None
      else jax.ShapeDtypeStruct(x.shape, x.dtype, sharding=here), abstract_params)
  try:
    with ocp.StandardCheckpointer() as checkpointer:
      return checkpointer.restore(path, abstract_params)
  except ValueError as err:  # orbax: tree structures or shapes do not match
    detail = (str(err).strip().splitlines() or [""])[0].split(". ")[0].rstrip(":.")
    raise ValueError(f"The parameters saved under {directory!r} do not fit this model "
                     f"({detail}): were they saved for a model of another size?") from err


def has_params(directory: str) -> bool:
  return os.path.isdir(os.path.join(os.path.abspath(directory), "params"))
