"""The report's critic table: how much of the outcome PPO's and Poly-PPO's value heads
explain, beside the most any critic could explain.

  lines = critics.section(rows, "Multiplication")   # report.md's lines; [] without a critic

A critic predicts the return G of a response from a state s. With binary rewards
the outcome from s is a coin flip of bias V*(s), so even V = V* leaves Var(G | s)
unexplained: explained variance is at most 1 − E_s[Var(G | s)] / Var(G)
(`polyepo.gae.state_explained_variance`). The table shows, per row with a critic,
averaged over seeds and the last `LAST_STEPS` training steps (train.jsonl):

* all tokens: the critic's explained variance of its GAE targets (every token);
* at the prompt: the critic's explained variance of the roots' rewards and the
  bound estimated from the roots themselves (N per prompt);
* at rollout states (Poly-PPO): the same at the vine states, from their vines,
  and the distinct strategies per vine set beside those per root set;
* the prompt's bound once more from the final evaluation (`test`, 64 samples per
  problem, per seed): available for every record, including those written
  before the training-time metrics existed.
"""

from typing import Any, Dict, List, Optional

import numpy as np

from experiments.analysis import algorithms
from experiments.analysis.tables import rounded

LAST_STEPS = 50
COLUMNS = (("all tokens", "explained_variance", None),
           ("at the prompt: critic / bound", "explained_variance_root",
            "explained_variance_root_bound"),
           ("at rollout states: critic / bound", "explained_variance_states",
            "explained_variance_states_bound"),
           ("strategies per set: roots / vines", "root_strategies", "vine_strategies"))


def last_steps_mean(train: List[Dict[str, Any]], name: str,
                    last: int = LAST_STEPS) -> Optional[float]:
  """Mean of train.jsonl's `name` (a seed mean per step) over the last `last` steps
  that logged it; None when none did."""
  values = [r[name] for r in train if name in r]
  return float(np.mean(values[-last:])) if values else None


def prompt_bound(record: Dict[str, Any], split: str = "test") -> Optional[float]:
  """The largest explained variance of a sample's reward any function of the prompt
  reaches, estimated from an eval record's per-problem correct counts.

  Per seed, with c_p of m samples correct on problem p and p̂ = c_p / m:
  1 − mean_p[p̂(1 − p̂)·m/(m − 1)] / (p̄(1 − p̄)), p̄ the mean of p̂ (the unbiased
  within-problem variance over the total); averaged over seeds. None without
  per-problem counts or with fewer than 2 samples per problem.
  """
  if split not in record:
    return None
  bounds = []
  for seed in record[split]["seeds"]:
    m = int(seed["num_samples"])
    counts = seed.get("per_problem", {}).get("num_correct")
    if counts is None or m < 2:
      return None
    p = np.asarray(counts, float) / m
    total = p.mean() * (1 - p.mean())
    if total <= 0:
      continue
    bounds.append(1.0 - np.mean(p * (1 - p) * m / (m - 1)) / total)
  return float(np.mean(bounds)) if bounds else None


def _pair(a: Optional[float], b: Optional[float]) -> str:
  if a is None:
    return "–"
  return f"{a:.2f}" if b is None else f"{a:.2f} / {b:.2f}"


def critic_table(rows: Dict[str, Dict[str, Any]], split: str = "test") -> str:
  """One line per row whose run logged a critic's explained variance; "" if none."""
  lines = []
  for label, row in rows.items():
    train = row["run"].train
    if last_steps_mean(train, "explained_variance") is None:
      continue
    cells = [_pair(last_steps_mean(train, a), b and last_steps_mean(train, b))
             for _, a, b in COLUMNS]
    bound = prompt_bound(row["record"], split)
    lines.append(f"| {label} | " + " | ".join(cells)
                 + f" | {'–' if bound is None else f'{bound:.2f}'} |")
  if not lines:
    return ""
  header = (["", *(name for name, _, _ in COLUMNS), f"prompt bound from the final `{split}` "
             "evaluation"])
  return "\n".join(["| " + " | ".join(header) + " |", "|" + "---|" * len(header)] + lines)


NOTE = (
    f"Explained variance of the critic (mean of the last {LAST_STEPS} training steps and the "
    "seeds) beside the most any critic can explain at the same states, 1 − E[Var(G | s)] / "
    "Var(G), estimated from the responses sampled there (`polyepo.gae."
    "state_explained_variance`); – where the run did not log it. The last column estimates "
    "the prompt's bound from the final evaluation's 64 samples per problem.")


def section(rows: Dict[str, Dict[str, Any]], title: str) -> List[str]:
  """report.md's lines: the heading, NOTE and the table; [] without a row with a critic."""
  table = critic_table(rows)
  return [f"### {title} — the critic", "", NOTE, "", table, ""] if table else []


def summary(rows: Dict[str, Dict[str, Any]]) -> Dict[str, Dict[str, Optional[float]]]:
  """summary.json's "critic": {algorithm key: {metric: mean of the last steps (None where
  not logged), "prompt_bound_test"}} for the rows with a critic and an algorithm key,
  numbers rounded (`tables.rounded`)."""
  out = {}
  names = [name for _, a, b in COLUMNS for name in (a, b) if name]
  for label, row in rows.items():
    train = row["run"].train
    if label not in algorithms.BY_LABEL or last_steps_mean(train, "explained_variance") is None:
      continue
    entry = {name: rounded(last_steps_mean(train, name)) for name in names}
    entry["prompt_bound_test"] = rounded(prompt_bound(row["record"], "test"))
    out[algorithms.BY_LABEL[label].key] = entry
  return out
