"""The algorithms compared, each defined once: its row label, summary key, colour,
config file, the config.train values that identify its runs, and the knobs that
tell its settings apart.

Tables, claims, summary.json, tuning and plots all read ALGORITHMS (in its order);
a run's config.json stores its algorithm's label (`label_of`, written by
experiments.synthetic), so that the report reads it instead of inferring it.
An algorithm not listed here still runs and is reported, under a label made
from its estimator (`label_of`), with no summary key or colour of its own.
"""

from typing import Any, Dict, NamedTuple, Optional, Tuple


class Algorithm(NamedTuple):
  label: str                 # row label in tables and plots
  key: str                   # its key in summary.json and tuning's chosen.json
  color: Optional[str]       # matplotlib colour of its lines and points
  config: Optional[str]      # the config file that runs it
  train: Dict[str, Any]      # config.train values that identify its runs
  knobs: Tuple[str, ...] = ()  # config.train fields that, with the learning rate,
                               # make a setting: what chosen.json records of a choice


_SET_RL_KNOBS = ("set_size", "normalize", "normalize_over", "objective")
ALGORITHMS = (
    Algorithm("Base", "base", "0.45", None, {}),
    Algorithm("GRPO", "grpo", "tab:red", "configs/grpo.py",
              {"estimator": "grpo", "normalize": True}),
    Algorithm("Dr. GRPO", "dr_grpo", "tab:pink", "configs/grpo.py",
              {"estimator": "grpo", "normalize": False}),
    Algorithm("Reward shaping", "reward_shaping", "tab:orange", "configs/reward_shaping.py",
              {"estimator": "reward_shaping"}, ("lam",)),
    Algorithm("Poly-EPO", "poly_epo", "tab:blue", "configs/poly_epo.py",
              {"estimator": "set_rl", "objective": "polychromic"}, _SET_RL_KNOBS),
    Algorithm("Poly-EPO (correct-only diversity)", "poly_epo_correct_only", "tab:purple",
              "configs/poly_epo.py",
              {"estimator": "set_rl", "objective": "polychromic_correct_only"}, _SET_RL_KNOBS),
    Algorithm("Poly-EPO (windowed)", "poly_epo_windowed", "tab:green",
              "configs/poly_epo_windowed.py",
              {"estimator": "set_rl_windowed", "objective": "polychromic"},
              ("set_size", "normalize", "objective")),
    Algorithm("PPO", "ppo", "tab:brown", "configs/ppo.py", {"estimator": "ppo"}),
    Algorithm("Poly-PPO", "poly_ppo", "tab:cyan", "configs/poly_ppo.py",
              {"estimator": "poly_ppo", "objective": "polychromic"}, ("set_size", "objective")),
    Algorithm("Set RL pass@n", "pass_at_k", "tab:olive", "configs/pass_at_k.py",
              {"estimator": "set_rl", "objective": "pass_at_n"}, _SET_RL_KNOBS),
)
BY_LABEL = {a.label: a for a in ALGORITHMS}
ORDER = tuple(BY_LABEL)
# Knobs newer than some archived runs, with the value those runs trained with
# (polyepo.train.TrainConfig's default; tests/experiments/test_tuning.py checks they agree).
KNOB_DEFAULTS = {"normalize_over": "prompt"}
# Names of the set objectives no set-RL row of ALGORITHMS names.
_OBJECTIVE_NAMES = {"mean_reward": "Set RL mean reward", "srl": "Set RL f_srl"}


def _objective_name(objective: str) -> str:
  """The label of set RL with `objective`: its ALGORITHMS row's, else a made-up one."""
  for algorithm in ALGORITHMS:
    if algorithm.train == {"estimator": "set_rl", "objective": objective}:
      return algorithm.label
  return _OBJECTIVE_NAMES.get(objective, f"Set RL {objective}")


def label_of(train: Dict[str, Any]) -> str:
  """The label of a run from its config.train: the first ALGORITHMS entry whose
  identifying values it has, else one made from its estimator (and objective)."""
  for algorithm in ALGORITHMS[1:]:
    if all(train.get(k) == v for k, v in algorithm.train.items()):
      return algorithm.label
  objective = _objective_name(train.get("objective"))
  if train["estimator"] == "set_rl":
    return objective
  if train["estimator"] == "poly_ppo":
    return f"Poly-PPO ({objective})"
  return train["estimator"]


def knobs(label: str) -> Tuple[str, ...]:
  """The knobs of the algorithm labelled `label` (none if it is not listed)."""
  return BY_LABEL[label].knobs if label in BY_LABEL else ()


def color(label: str) -> Optional[str]:
  return BY_LABEL[label].color if label in BY_LABEL else None
