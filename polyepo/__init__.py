"""polyepo: set reinforcement learning and Poly-EPO in JAX.

The package is laid out in rooms, each importing only the rooms above it:

  env_api, checks, parallel, accumulation   the env contract and shared helpers
  core/         the pure set-RL math on arrays: sets, objectives, advantages,
                metrics, losses, gae, theory, mixtures (no model, env or I/O)
  policy/       the transformer policy: model, attention, bf16, sampling,
                value_head (the critic)
  rl/           RL post-training: algorithms (GRPO, set RL, PPO, ... as
                values, and their registry), parts (critic, GAE, vines),
                train (`make_train`), plan (one run, checked before any work),
                loop (the host loop), estimators and ppo_batch (the batches
                algorithms build), estimator_inputs, poly_ppo, vines
  pretraining/  the base model: pretrain, corpus
  evaluation/   evaluate, forced (forced-strategy accuracy), splits (held-out
                problems)
  io/           checkpoint, writers, rundir

Importing the package is cheap: modules load on first attribute access, so
`envs/` can use `polyepo.DEGENERATE` without pulling in training code. Every
module is also reachable under its short name (`polyepo.advantages` is
`polyepo.core.advantages`):

  >>> import polyepo
  >>> polyepo.advantages.polychromic_advantage(rewards, labels, set_size=4)
"""

import importlib

from polyepo.env_api import DEGENERATE
from polyepo.env_api import Env

__version__ = "0.1.0"

ROOMS = ("core", "policy", "rl", "pretraining", "evaluation", "io")

# Short name -> module. `critic` and `rollouts` are the earlier names of
# rl.ppo_batch and rl.estimator_inputs.
MODULES = {
    "accumulation": "polyepo.accumulation",
    "checks": "polyepo.checks",
    "parallel": "polyepo.parallel",
    **{name: f"polyepo.core.{name}" for name in (
        "advantages", "gae", "losses", "metrics", "mixtures", "objectives", "sets", "theory")},
    **{name: f"polyepo.policy.{name}" for name in (
        "attention", "bf16", "model", "sampling", "value_head")},
    **{name: f"polyepo.rl.{name}" for name in (
        "algorithms", "estimator_inputs", "estimators", "loop", "parts", "plan", "poly_ppo",
        "ppo_batch", "train", "vines")},
    "critic": "polyepo.rl.ppo_batch",
    "rollouts": "polyepo.rl.estimator_inputs",
    **{name: f"polyepo.pretraining.{name}" for name in ("corpus", "pretrain")},
    **{name: f"polyepo.evaluation.{name}" for name in ("evaluate", "forced", "splits")},
    **{name: f"polyepo.io.{name}" for name in ("checkpoint", "rundir", "writers")},
}


def __getattr__(name):
  if name in MODULES:
    return importlib.import_module(MODULES[name])
  if name in ROOMS:
    return importlib.import_module(f"polyepo.{name}")
  raise AttributeError(f"module 'polyepo' has no attribute {name!r}")


def __dir__():
  return sorted(list(globals()) + list(MODULES) + list(ROOMS))


__all__ = ["DEGENERATE", "Env", *ROOMS, *MODULES]
