"""polyepo: set reinforcement learning and Poly-EPO in JAX.

Importing the package is cheap: submodules load on first attribute access, so
`envs/` can use `polyepo.DEGENERATE` without pulling in training code.

  >>> import polyepo
  >>> polyepo.advantages.polychromic_advantage(rewards, labels, set_size=4)
"""

import importlib

from polyepo.env_api import DEGENERATE, Env

__version__ = "0.1.0"

_SUBMODULES = (
    "accumulation",
    "advantages",
    "attention",
    "bf16",
    "checkpoint",
    "corpus",
    "critic",
    "estimators",
    "evaluate",
    "gae",
    "loop",
    "losses",
    "metrics",
    "mixtures",
    "model",
    "objectives",
    "parallel",
    "poly_ppo",
    "pretrain",
    "rollouts",
    "sampling",
    "sets",
    "theory",
    "train",
    "value_head",
    "vines",
    "writers",
)


def __getattr__(name):
  if name in _SUBMODULES:
    return importlib.import_module(f"polyepo.{name}")
  raise AttributeError(f"module 'polyepo' has no attribute {name!r}")


def __dir__():
  return sorted(list(globals()) + list(_SUBMODULES))


__all__ = ["DEGENERATE", "Env", *_SUBMODULES]
