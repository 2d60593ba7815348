"""The package itself: cheap, lazy import (envs may import polyepo.env_api)."""

import ast
import os
import subprocess
import sys
import repo

ROOT = repo.ROOT


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


# Each room imports only the rooms before it (and itself): the set-RL math
# never reaches a model, the policy never reaches training, nothing reaches rl.
ROOM_ORDER = ("io", "core", "policy", "evaluation", "pretraining", "rl")
TOP_MODULES = ("env_api", "checks", "parallel", "accumulation")


def _imported_rooms(path):
  """The rooms (or top modules) one module of the package imports."""
  tree = ast.parse(open(path).read())
  for node in ast.walk(tree):
    if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("polyepo"):
      parts = node.module.split(".")
      if len(parts) > 1:
        yield parts[1]
      else:
        yield from (alias.name for alias in node.names)
    elif isinstance(node, ast.Import):
      yield from (a.name.split(".")[1] for a in node.names
                  if a.name.startswith("polyepo.") and "." in a.name)


def test_rooms_import_only_the_rooms_before_them():
  package = os.path.join(ROOT, "polyepo")
  found = set(n for n in os.listdir(package) if os.path.isdir(os.path.join(package, n))
              and not n.startswith("__"))
  assert found == set(ROOM_ORDER)
  wrong = []
  for room in ROOM_ORDER:
    allowed = set(ROOM_ORDER[:ROOM_ORDER.index(room) + 1]) | set(TOP_MODULES)
    for name in sorted(os.listdir(os.path.join(package, room))):
      if name.endswith(".py"):
        wrong += [f"polyepo/{room}/{name} imports polyepo.{r}"
                  for r in _imported_rooms(os.path.join(package, room, name))
                  if r not in allowed]
  for name in TOP_MODULES:   # the top imports only the top
    wrong += [f"polyepo/{name}.py imports polyepo.{r}"
              for r in _imported_rooms(os.path.join(package, f"{name}.py"))
              if r not in TOP_MODULES]
  assert not wrong, wrong


def test_every_module_keeps_its_short_name():
  """`polyepo.advantages` and the other short names users import still resolve,
  to the module in its room."""
  code = ("import importlib, polyepo\n"
          "for short, full in polyepo.MODULES.items():\n"
          "  assert getattr(polyepo, short) is importlib.import_module(full), short\n"
          "from polyepo import advantages, train\n"
          "assert advantages.__name__ == 'polyepo.core.advantages'\n"
          "assert train.__name__ == 'polyepo.rl.train'\n")
  subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)
