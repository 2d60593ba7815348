"""The price of diversity as a prediction: report.md's section and summary.json's entry.

  lines = optimum.section(rows, "Multiplication")   # markdown, [] without a row to predict
  entry = optimum.summary(rows)                      # {algorithm key: {...}}

`rows` is one domain's `records.select_rows`. A row is predicted when its run
trains with a set objective (`polyepo.rl.algorithms.Algorithm.maximises`:
Poly-EPO, its correct-only ablation, its windowed form, Poly-PPO; objective
`algorithm.objective`, n = `algorithm.set_size`) or is standard RL (GRPO, Dr.
GRPO, PPO: the mean reward, whose optimum does not depend on n, written n = 1).
For each, `polyepo.mixtures.predict` picks on every applicability pattern of the
`test` problems the strategy mixture that maximises the objective when each
strategy is carried out with its forced accuracy, once with the base model's forced accuracies (the Base row's) and once
with the run's own, and predicts pass@1, the distinct correct strategies among the
evaluation's samples and the strategy shares; beside them the run's measured
values.

The applicability is that of the problems the evaluation read: the first
`num_problems` of the TFDS `test` split, which `envs.datasets.load_split` builds
from `sample_split(domain, "test", 256, seed=0)`; it is computed once per domain.
"""

import functools
import json
from typing import Any, Dict, List, Optional, Tuple

import numpy as np

from experiments.analysis import algorithms
from experiments.analysis.records import per_problem
from experiments.analysis.tables import rounded

SPLIT = "test"
LARGEST = 3                     # strategies shown per share cell ...
SMALLEST = 0.005                # ... of at least this share
DATASET_SIZE, DATASET_SEED = 256, 0   # envs.datasets.load_split's defaults

NOTE = (
    "If each strategy were carried out exactly as well as when it is imposed (its "
    "forced accuracy a_s) and training chose only where the samples go, which strategy "
    "mixture would each row's objective pick? Per applicability pattern of the `test` "
    "problems (the strategies that apply to a problem), the mixture w maximising the "
    "expected objective of n i.i.d. samples, each following s with probability w_s and "
    "then correct with probability a_s (`polyepo.mixtures`); its pass@1 is Σ w_s a_s, "
    "its distinct correct strategies among the evaluation's samples Σ_s [1 − (1 − w_s "
    "a_s)^samples], averaged over the problems. *Base* is a prediction: it reads only "
    "the base model's forced accuracies, known before any training; *run* is a fit, "
    "not a prediction: it reads the trained run's own, after its execution changed; "
    "*measured*: the run's final evaluation. The price of diversity is a row's pass@1 "
    "less GRPO's, each way (below the table). GRPO and "
    "PPO maximise the mean reward, whose optimum (all samples on the most accurate "
    "applicable strategy) does not depend on n (written 1). A strategy without a "
    "forced accuracy is never chosen; DEGENERATE samples are not modelled. The model "
    "gives a strategy one accuracy on every problem, so where it is right on some "
    "problems and never on others the predicted distinct correct is too high. Shares "
    "under 0.005 are left out; – where no forced accuracy was recorded or n or the "
    "strategies exceed 8, the exact sum's limit.")


def objective_of(spec: Dict[str, Any]) -> Optional[Tuple[str, int]]:
  """(objective, n) a run's config.algorithm maximises (`Algorithm.maximises`): its
  set objective, ("mean_reward", 1) for standard RL; None for neither, or for an
  algorithm defined in a module that does not import here."""
  from polyepo.rl import algorithms  # pylint: disable=g-import-not-at-top
  try:
    return algorithms.resolve(spec).maximises
  except ValueError:
    return None


@functools.lru_cache(maxsize=None)
def applicability(domain: str, env_json: str, num_problems: int):
  """(bool[P, S], strategy names): which strategies apply to each of the first
  `num_problems` `test` problems, for the env built with `env_json`'s arguments."""
  import jax  # pylint: disable=g-import-not-at-top
  import envs  # pylint: disable=g-import-not-at-top
  from envs import datasets  # pylint: disable=g-import-not-at-top
  env, _ = envs.make(domain, **json.loads(env_json))
  problems = datasets.sample_split(domain, SPLIT, DATASET_SIZE, seed=DATASET_SEED)
  problems = jax.tree.map(lambda x: x[:num_problems], problems)
  return np.asarray(env.applicable(problems), bool), tuple(env.strategy_names)


def _accuracy(record: Dict[str, Any], names) -> Optional[np.ndarray]:
  """f64[S]: a record's `test` forced accuracy in `names` order (NaN: not recorded)."""
  forced = record[SPLIT]["mean"].get("forced_accuracy") if SPLIT in record else None
  if forced is None:
    return None
  return np.array([np.nan if forced.get(n) is None else forced[n] for n in names], float)


def _predicted(objective, n, accuracy, applicable, names, samples) -> Optional[Dict[str, Any]]:
  """`mixtures.predict`'s numbers; None without forced accuracies or beyond what the
  exact sum supports (MAX_SET_SIZE, MAX_STRATEGIES, objectives needing answers)."""
  from polyepo.core import mixtures, objectives  # pylint: disable=g-import-not-at-top
  if (accuracy is None or n > mixtures.MAX_SET_SIZE or len(names) > mixtures.MAX_STRATEGIES
      or objective in objectives.NEEDS_ANSWERS):
    return None
  p = mixtures.predict(objective, accuracy, applicable, n, samples=samples)
  return {"pass@1": p.pass_at_1, "distinct_correct": p.distinct_correct,
          "strategy_share": dict(zip(names, p.shares.tolist()))}


def predictions(rows: Dict[str, Dict[str, Any]]) -> Dict[str, Dict[str, Any]]:
  """{row label: {"objective", "set_size", "from_base", "from_run", "measured"}}: each
  predicted row (module docstring) with a `test` evaluation; "from_base" and
  "from_run" are {"pass@1", "distinct_correct", "strategy_share"} (None without
  forced accuracies), "measured" the same from the run's final evaluation."""
  base = rows["Base"]["record"]
  out = {}
  for label, row in rows.items():
    record, run = row["record"], row["run"]
    target = objective_of(run.config["algorithm"])
    if label == "Base" or target is None or SPLIT not in record:
      continue
    head = record[SPLIT]["mean"]
    applicable, names = applicability(run.domain, json.dumps(run.config.get("env", {}),
                                                             sort_keys=True),
                                      int(head["num_problems"]))
    samples = int(head["num_samples"])
    out[label] = {
        "objective": target[0], "set_size": target[1],
        "from_base": _predicted(*target, _accuracy(base, names), applicable, names, samples),
        "from_run": _predicted(*target, _accuracy(record, names), applicable, names, samples),
        "measured": {"pass@1": float(per_problem(record, SPLIT, "pass@1").mean()),
                     "distinct_correct": float(per_problem(record, SPLIT,
                                                           "distinct_correct").mean()),
                     "strategy_share": dict(head["strategy_share"])}}
  return out


def _number(part: Optional[Dict[str, Any]], name: str) -> str:
  return "–" if part is None else f"{part[name]:.3f}"


def _largest(part: Optional[Dict[str, Any]]) -> str:
  if part is None:
    return "–"
  shares = sorted(part["strategy_share"].items(), key=lambda kv: -kv[1])[:LARGEST]
  return ", ".join(f"`{name}` {share:.2f}" for name, share in shares
                   if share >= SMALLEST) or "–"


def section(rows: Dict[str, Dict[str, Any]], title: str) -> List[str]:
  """report.md's lines: the heading, NOTE and one table; [] without a predicted row."""
  predicted = predictions(rows)
  if not predicted:
    return []
  header = ["", "objective (n)", "pass@1: Base / run / measured",
            "distinct correct: Base / run / measured", "largest shares, Base",
            "largest shares, run", "largest shares, measured"]
  lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
  for label, p in predicted.items():
    parts = (p["from_base"], p["from_run"], p["measured"])
    cells = [label, f"{p['objective']} ({p['set_size']})",
             " / ".join(_number(part, "pass@1") for part in parts),
             " / ".join(_number(part, "distinct_correct") for part in parts)]
    cells += [_largest(part) for part in parts]
    lines.append("| " + " | ".join(cells) + " |")
  return [f"### {title} — the price of diversity, predicted (`{SPLIT}`)", "", NOTE, "",
          *lines, "", *price_lines(predicted)]


def prices(predicted: Dict[str, Dict[str, Any]], reference: str = "GRPO"
           ) -> Dict[str, Dict[str, Optional[float]]]:
  """{row label: {"predicted", "fitted", "measured"}}: each row's pass@1 less
  `reference`'s, from the base model's forced accuracies, from the runs' own, and
  as evaluated (None where a side has no forced accuracies); {} without `reference`."""
  if reference not in predicted:
    return {}
  ref = predicted[reference]
  out = {}
  for label, p in predicted.items():
    if label == reference:
      continue
    out[label] = {name: (None if p[part] is None or ref[part] is None
                         else p[part]["pass@1"] - ref[part]["pass@1"])
                  for name, part in (("predicted", "from_base"), ("fitted", "from_run"),
                                     ("measured", "measured"))}
  return out


def price_lines(predicted: Dict[str, Dict[str, Any]]) -> List[str]:
  """A bullet per row: its price of diversity in pass@1 against GRPO, predicted, fitted
  and measured; [] without GRPO."""
  number = lambda x: "–" if x is None else f"{x:+.3f}"
  lines = [f"- {label}: pass@1 − GRPO's predicted from the base model {number(p['predicted'])}, "
           f"fitted to the runs {number(p['fitted'])}, measured {number(p['measured'])}."
           for label, p in prices(predicted).items()]
  return lines + [""] if lines else []


def _rounded(part: Optional[Dict[str, Any]]) -> Optional[Dict[str, Any]]:
  if part is None:
    return None
  return {"pass@1": rounded(part["pass@1"]),
          "distinct_correct": rounded(part["distinct_correct"]),
          "strategy_share": {n: rounded(s) for n, s in part["strategy_share"].items()}}


def summary(rows: Dict[str, Dict[str, Any]]) -> Dict[str, Any]:
  """summary.json's "predicted_optimum": {algorithm key: {"objective", "set_size",
  "from_base", "from_run", "measured", and beside GRPO "pass@1_minus_grpo" (`prices`)}},
  rows with a key in `experiments.analysis.algorithms`, numbers rounded (`tables.rounded`)."""
  predicted = predictions(rows)
  price = prices(predicted)
  out = {}
  for label, p in predicted.items():
    if label not in algorithms.BY_LABEL:
      continue
    entry = {"objective": p["objective"], "set_size": p["set_size"],
             **{part: _rounded(p[part]) for part in ("from_base", "from_run", "measured")}}
    if label in price:
      entry["pass@1_minus_grpo"] = {k: rounded(v) for k, v in price[label].items()}
    out[algorithms.BY_LABEL[label].key] = entry
  return out
