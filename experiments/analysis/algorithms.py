"""The algorithms compared, each defined once: its row label, summary key, colour,
config file, the config.algorithm (and config.train) values that identify its
runs, and the knobs that tell its settings apart.

Tables, claims, summary.json, tuning and plots all read ALGORITHMS (in its order);
a run's config.json stores its algorithm's label (`label_of`, written by
experiments.synthetic as "label"), so that the report reads it instead of
inferring it. An algorithm not listed here still runs and is reported, under a
label made from its name (`label_of`), with no summary key or colour of its own.
Records written before an algorithm's own fields moved from config.train to
config.algorithm read through `upgrade`.
"""

from typing import Any, Dict, Mapping, NamedTuple, Optional, Tuple


class Algorithm(NamedTuple):
  label: str                 # row label in tables and plots
  key: str                   # its key in summary.json and tuning's chosen.json
  color: Optional[str]       # matplotlib colour of its lines and points
  config: Optional[str]      # the config file that runs it
  algorithm: Dict[str, Any]  # config.algorithm values that identify its runs (a
                             # nested field as "first.objective")
  knobs: Tuple[str, ...] = ()  # config.algorithm fields that, with the learning
                               # rate, make a setting: what chosen.json records of a choice
  train: Dict[str, Any] = {}   # config.train values that identify its runs too: a
                               # recipe whose shared settings are its own (the loss
                               # of Poly-EPO as released tells its runs from a
                               # Poly-EPO setting without standardisation)


_SET_RL_KNOBS = ("set_size", "normalize", "normalize_over", "objective")
ALGORITHMS = (
    Algorithm("Base", "base", "0.45", None, {}),
    Algorithm("GRPO", "grpo", "tab:red", "configs/grpo.py",
              {"name": "grpo", "normalize": True}),
    Algorithm("Dr. GRPO", "dr_grpo", "tab:pink", "configs/dr_grpo.py",
              {"name": "grpo", "normalize": False}),
    Algorithm("Reward shaping", "reward_shaping", "tab:orange", "configs/reward_shaping.py",
              {"name": "reward_shaping"}, ("lam",)),
    Algorithm("Poly-EPO", "poly_epo", "tab:blue", "configs/poly_epo.py",
              {"name": "set_rl", "objective": "polychromic"}, _SET_RL_KNOBS),
    Algorithm("Poly-EPO (as released)", "poly_epo_official", "navy",
              "configs/poly_epo_official.py",
              {"name": "set_rl", "objective": "polychromic", "normalize": False},
              train={"aggregation": "sequence_sum"}),
    Algorithm("Poly-EPO (correct-only diversity)", "poly_epo_correct_only", "tab:purple",
              "configs/poly_epo.py",
              {"name": "set_rl", "objective": "polychromic_correct_only"}, _SET_RL_KNOBS),
    Algorithm("Poly-EPO (windowed)", "poly_epo_windowed", "tab:green",
              "configs/poly_epo_windowed.py",
              {"name": "set_rl_windowed", "first.objective": "polychromic"},
              ("first.set_size", "first.normalize", "first.objective")),
    Algorithm("PPO", "ppo", "tab:brown", "configs/ppo.py", {"name": "ppo"}),
    Algorithm("Poly-PPO", "poly_ppo", "tab:cyan", "configs/poly_ppo.py",
              {"name": "poly_ppo", "objective": "polychromic"}, ("set_size", "objective")),
    Algorithm("Set RL pass@n", "pass_at_k", "tab:olive", "configs/pass_at_k.py",
              {"name": "set_rl", "objective": "pass_at_n"}, _SET_RL_KNOBS),
)
BY_LABEL = {a.label: a for a in ALGORITHMS}
ORDER = tuple(BY_LABEL)
# Knobs newer than some archived runs, with the value those runs trained with
# (their factory's default; tests/experiments/test_tuning.py checks they agree).
KNOB_DEFAULTS = {"normalize_over": "prompt"}
# Names of the set objectives no set-RL row of ALGORITHMS names.
_OBJECTIVE_NAMES = {"mean_reward": "Set RL mean reward", "srl": "Set RL f_srl"}


def _objective_name(objective: str) -> str:
  """The label of set RL with `objective`: its ALGORITHMS row's, else a made-up one."""
  for algorithm in ALGORITHMS:
    if algorithm.algorithm == {"name": "set_rl", "objective": objective}:
      return algorithm.label
  return _OBJECTIVE_NAMES.get(objective, f"Set RL {objective}")


def flat(spec: Mapping[str, Any], prefix: str = "") -> Dict[str, Any]:
  """A config.algorithm dict with nested fields as dotted keys ("first.objective")."""
  out = {}
  for key, value in spec.items():
    if isinstance(value, Mapping):
      out.update(flat(value, f"{prefix}{key}."))
    else:
      out[prefix + key] = value
  return out


def _identifies(algorithm: Algorithm, spec: Mapping[str, Any],
               train: Optional[Mapping[str, Any]] = None) -> bool:
  """Whether a run's config.algorithm `spec` and config.train `train` have all of
  `algorithm`'s identifying values (with no `train`, an entry that needs one has not)."""
  values, train = flat(spec), train or {}
  return (all(values.get(k) == v for k, v in algorithm.algorithm.items())
          and all(train.get(k) == v for k, v in algorithm.train.items()))


def label_of(spec: Mapping[str, Any], train: Optional[Mapping[str, Any]] = None) -> str:
  """The label of a run from its config.algorithm `spec` and config.train `train`:
  the ALGORITHMS entry whose identifying values it has, the one with the most of
  them where several have (Poly-EPO as released has all of Poly-EPO's and more;
  of equally many, the first), else one made from its name (and objective)."""
  values = flat(spec)
  matches = [a for a in ALGORITHMS[1:] if _identifies(a, spec, train)]
  if matches:
    return max(matches, key=lambda a: len(a.algorithm) + len(a.train)).label
  objective = _objective_name(values.get("objective"))
  if spec["name"] == "set_rl":
    return objective
  if spec["name"] == "poly_ppo":
    return f"Poly-PPO ({objective})"
  return spec["name"]


def knobs(label: str) -> Tuple[str, ...]:
  """The knobs of the algorithm labelled `label` (none if it is not listed)."""
  return BY_LABEL[label].knobs if label in BY_LABEL else ()


def color(label: str) -> Optional[str]:
  return BY_LABEL[label].color if label in BY_LABEL else None


# -- records of older runs ------------------------------------------------------------

# What an older config.json held in config.train, by its `train.estimator`: the
# algorithm's fields ({old train field: new config.algorithm field}). Fields not
# listed (another algorithm's knobs, which config.train then held for every
# algorithm) are dropped.
_GROUP = {"normalize": "normalize", "normalize_over": "normalize_over"}
_SETS = {"objective": "objective", "set_size": "set_size", "num_subsets": "num_subsets"}
_CRITIC = {"value_model": "critic.model", "value_learning_rate": "critic.learning_rate",
           "value_clip": "critic.clip", "gamma": "gae.gamma", "gae_lambda": "gae.lam",
           "normalize": "normalize"}
MOVED_FIELDS = {
    "grpo": _GROUP,
    "reward_shaping": dict(_GROUP, lam="lam"),
    "set_rl": dict(_GROUP, **_SETS),
    "set_rl_windowed": {"objective": "first.objective", "set_size": "first.set_size",
                        "num_subsets": "first.num_subsets", "normalize": "first.normalize"},
    "ppo": _CRITIC,
    "poly_ppo": dict(_CRITIC, **_SETS, num_vine_states="vines.num_states",
                     vine_samples="vines.samples", vine_window="vines.window",
                     vine_selection="vines.selection"),
}
# The nested algorithms an older record's estimator stands for.
_NESTED = {"set_rl_windowed": {"first": {"name": "set_rl"}, "rest": {"name": "grpo"}}}


def upgrade(config: Dict[str, Any]) -> Dict[str, Any]:
  """A config.json dict in today's layout: an older one (config.train holds
  "estimator") has its algorithm's fields moved to config.algorithm
  (MOVED_FIELDS; windowed set RL's normalize standardised both its advantages,
  so it is rest.normalize too) and its label moved from "algorithm" to "label".
  Today's is returned as it is."""
  train = config.get("train", {})
  if "estimator" not in train:
    return config
  name = train["estimator"]
  moved = MOVED_FIELDS.get(name, _GROUP)    # an estimator outside the package: its normalize
  algorithm = {"name": name, **{k: dict(v) for k, v in _NESTED.get(name, {}).items()}}
  for old, new in moved.items():
    if old in train:
      *path, leaf = new.split(".")
      node = algorithm
      for part in path:
        node = node.setdefault(part, {})
      node[leaf] = train[old]
  if name == "set_rl_windowed" and "normalize" in train:
    algorithm["rest"]["normalize"] = train["normalize"]
  out = {k: v for k, v in config.items() if k != "algorithm"}
  out["train"] = {k: v for k, v in train.items() if k not in MOVED_FROM_TRAIN}
  out["algorithm"] = algorithm
  if isinstance(config.get("algorithm"), str):
    out["label"] = config["algorithm"]
  return out


# Every field an older config.train held that is an algorithm's today.
MOVED_FROM_TRAIN = frozenset({"estimator"}.union(*MOVED_FIELDS.values()))


def upgrade_overrides(key: str, overrides: Dict[str, Any]) -> Dict[str, Any]:
  """A chosen.json entry's overrides in today's keys: an older one named an
  algorithm's knob "train.<field>" (the ALGORITHMS entry `key`'s knob that
  ends in <field> is its key today)."""
  knobs = next((a.knobs for a in ALGORITHMS if a.key == key), ())
  renamed = {f"train.{k.rsplit('.', 1)[-1]}": f"algorithm.{k}" for k in knobs}
  return {renamed.get(k, k): v for k, v in overrides.items()}
