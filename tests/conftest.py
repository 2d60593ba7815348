"""Shared pytest configuration."""

import getpass
import os
import tempfile

# The tests compile far more than they compute (tiny models, hundreds of programs,
# most compiled once), so LLVM's optimisation costs them more than it saves
# (docs/testing.md#how-long-ci-takes). Set before JAX starts its backend; the
# subprocesses the tests start inherit it.
if "--xla_backend_optimization_level" not in os.environ.get("XLA_FLAGS", ""):
  os.environ["XLA_FLAGS"] = " ".join(
      [os.environ.get("XLA_FLAGS", ""), "--xla_backend_optimization_level=0"]).strip()

import jax  # pylint: disable=g-import-not-at-top,wrong-import-position
import pytest
from hypothesis import HealthCheck, settings

import sweep_dirs

settings.register_profile(
    "default", deadline=None, max_examples=60,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
settings.register_profile("ci", parent=settings.get_profile("default"), derandomize=True)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))

# One persistent XLA compilation cache for the tests, their xdist workers and the
# subprocesses they start (which inherit the environment): a computation compiled
# once is loaded, not recompiled, by every later test or run that builds the same
# program. The key is the compiled program itself, so changed code recompiles.
os.environ.setdefault("JAX_COMPILATION_CACHE_DIR", os.path.join(
    tempfile.gettempdir(), f"polyepo-tests-jax-cache-{getpass.getuser()}"))
os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", "0.2")
jax.config.update("jax_compilation_cache_dir", os.environ["JAX_COMPILATION_CACHE_DIR"])
jax.config.update("jax_persistent_cache_min_compile_time_secs",
                  float(os.environ["JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS"]))


@pytest.fixture(scope="session")
def tiny_sweep(tmp_path_factory, worker_id):
  """(sweep file, sweep directory, cache directory) of the tiny sweep
  (`sweep_dirs.TINY_SWEEP`), built once per test session for test_sweep.py and
  test_report.py. Tests must not change it: one that resumes or extends a run
  works on its own copy."""
  return sweep_dirs.build_tiny_sweep(tmp_path_factory.getbasetemp(), worker_id)
