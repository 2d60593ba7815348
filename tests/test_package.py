"""The package itself: cheap, lazy import (envs may import polyepo.env_api)."""

import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_package_import_is_cheap_and_lazy():
  code = ("import sys, polyepo, envs; assert 'jax' not in sys.modules, 'jax imported'; "
          "assert polyepo.DEGENERATE == -1; polyepo.advantages; assert 'jax' in sys.modules")
  subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)  # envs: from the root


def test_install_adds_only_the_library(tmp_path):
  """`pip install -e .` puts `polyepo` in site-packages and nothing with a generic
  name (envs, configs, experiments run from the repository root). Checked from
  outside the repository, so that only the installed distribution is seen."""
  script = ("import importlib.metadata as m, importlib.util as u\n"
            "print(sorted(m.distribution('polyepo').read_text('top_level.txt').split()))\n"
            "print([n for n in ('polyepo', 'envs', 'configs', 'experiments') if u.find_spec(n)])\n")
  env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
  result = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=120)
  assert result.returncode == 0, result.stderr
  assert result.stdout.split("\n")[:2] == ["['polyepo']", "['polyepo']"], result.stdout
