"""What machine a run or a benchmark ran on, in one line (timings depend on it)."""

import os
import platform


def cpu_name() -> str:
  """The CPU's model name, its core count and whether it has AMX (bfloat16 tiles)."""
  try:
    with open("/proc/cpuinfo") as f:
      info = f.read()
  except OSError:
    return f"{platform.processor() or 'unknown CPU'}, {os.cpu_count()} cores"
  name = next((line.split(":", 1)[1].strip() for line in info.splitlines()
               if line.startswith("model name")), "unknown CPU")
  return f"{name}, {os.cpu_count()} cores, {'with' if 'amx_bf16' in info else 'no'} AMX"


def describe() -> str:
  """OS, CPU, JAX backend and version."""
  import jax  # pylint: disable=g-import-not-at-top
  return (f"{platform.platform()}, {cpu_name()}, {jax.devices()[0].platform} backend, "
          f"jax {jax.__version__}")
