"""The package itself: cheap, lazy import (envs may import polyepo.env_api)."""

import subprocess
import sys


def test_package_import_is_cheap_and_lazy():
  code = ("import sys, polyepo, envs; assert 'jax' not in sys.modules, 'jax imported'; "
          "assert polyepo.DEGENERATE == -1; polyepo.advantages; assert 'jax' in sys.modules")
  subprocess.run([sys.executable, "-c", code], check=True)
