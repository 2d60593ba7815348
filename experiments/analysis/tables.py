"""report.md's tables, and how the report writes a number.

  tables.domain_table(rows, "test")      # one domain and split: mean [95% interval] per metric
  tables.cell(records.value(record, "test", "pass@1"), "pass@1")   # "0.412 [0.390, 0.433]"

`rows` is one domain's `records.select_rows`: {row label: {"record", "run",
"note"}}. A cell is a metric's mean over seeds and problems with its bootstrap
interval (`experiments.analysis.stats`), marked † when the metric is a rate within
SATURATION of 0 or 1; `signed` writes a difference, `rounded` a number of
summary.json (DECIMALS). `pass_at_1_sources` splits each row's pass@1
difference to GRPO into strategy choice and execution (`stats.shift_share`).
"""

from typing import Any, Dict, Optional

import numpy as np

from experiments.analysis import stats
from experiments.analysis.records import DOMAIN_TITLES, discovery_steps, num_seeds, per_problem, value

PASS_KS = (1, 8, 32, 64)
DOMAIN_COLUMNS = ([(f"pass@{k}", f"pass@{k}") for k in PASS_KS]
                  + [("distinct correct", "distinct_correct"),
                     ("distinct correct families", "distinct_correct_families"),
                     ("distinct", "distinct"),
                     ("branch point", "branch_point"),
                     ("majority vote", "majority_vote")])
SATURATION = 0.02      # a rate within this of 0 or 1 is saturated
SATURATED_NOTE = "† saturated: near the ceiling (or floor), differences uninformative."
DECIMALS = 4           # of the numbers in summary.json


def saturated(name: str, mean: float) -> bool:
  """Whether a rate (pass@k, majority vote) is within SATURATION of 0 or 1."""
  is_rate = name.startswith("pass@") or name == "majority_vote"
  return is_rate and (mean >= 1 - SATURATION or mean <= SATURATION)


def cell(interval: Optional[stats.Interval], name: str) -> str:
  """"mean [low, high]" to 3 decimals, † when saturated; "–" for no value."""
  if interval is None:
    return "–"
  mark = "†" if saturated(name, interval.mean) else ""
  return f"{interval.mean:.3f} [{interval.low:.3f}, {interval.high:.3f}]{mark}"


def signed(interval: stats.Interval) -> str:
  """A difference and its interval, each with its sign: "+0.012 [-0.004, +0.031]"."""
  return f"{interval.mean:+.3f} [{interval.low:+.3f}, {interval.high:+.3f}]"


def rounded(x: Optional[float]) -> Optional[float]:
  """A number as summary.json holds it: DECIMALS decimals (None stays None)."""
  return None if x is None else round(float(x), DECIMALS)


def _with_note(table: str) -> str:
  return table + ("\n\n" + SATURATED_NOTE if "†" in table else "")


def domain_table(rows: Dict[str, Dict[str, Any]], split: str) -> str:
  """A markdown table of one domain and split: mean [95% interval] per metric."""
  header = ["", "seeds", "steps"] + [c for c, _ in DOMAIN_COLUMNS]
  lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
  for label, row in rows.items():
    record = row["record"]
    if split not in record:
      continue
    name = f"{label} ({row['note']})" if row["note"] else label
    cells = [name, str(num_seeds(record, split)), str(record["step"])]
    cells += [cell(value(record, split, key), key) for _, key in DOMAIN_COLUMNS]
    lines.append("| " + " | ".join(cells) + " |")
  return _with_note("\n".join(lines))


SUMMARY_COLUMNS = (("test pass@1", "test", "pass@1"), ("test pass@32", "test", "pass@32"),
                   ("ood pass@1", "ood", "pass@1"), ("ood pass@32", "ood", "pass@32"),
                   ("ood pass@64", "ood", "pass@64"),
                   ("distinct correct (test)", "test", "distinct_correct"),
                   ("distinct correct families (test)", "test", "distinct_correct_families"),
                   ("distinct (test)", "test", "distinct"))


def summary_table(rows_by_domain: Dict[str, Dict[str, Dict[str, Any]]]) -> str:
  """One markdown table of the headline numbers, every domain and row."""
  header = ["domain", ""] + [c for c, _, _ in SUMMARY_COLUMNS]
  lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
  for domain, rows in rows_by_domain.items():
    for label, row in rows.items():
      cells = [DOMAIN_TITLES.get(domain, domain), label]
      cells += [cell(value(row["record"], split, key), key) for _, split, key in SUMMARY_COLUMNS]
      lines.append("| " + " | ".join(cells) + " |")
  return _with_note("\n".join(lines))


def _number(x) -> str:
  return "–" if x is None else f"{x:.3f}"


def strategy_table(rows: Dict[str, Dict[str, Any]], split: str,
                   families: Dict[str, str]) -> str:
  """Per strategy (with its family): each row's share, accuracy and forced accuracy.

  Share and accuracy are the seed means of the final evaluation of `split`
  (accuracy on the problems the strategy applies to); forced accuracy is shown
  where the records hold it ("forced_accuracy"), else "–".
  """
  rows = {label: row for label, row in rows.items() if split in row["record"]}
  first = next(iter(rows.values()))["record"][split]["mean"]["strategy_share"]
  header = ["strategy", "family"] + [f"{label}: share / accuracy / forced" for label in rows]
  lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
  for name in first:
    cells = [name, families.get(name, "–")]
    for row in rows.values():
      summary = row["record"][split]["mean"]
      forced = (summary.get("forced_accuracy") or {}).get(name)
      cells.append(f"{_number(summary['strategy_share'].get(name))} / "
                   f"{_number(summary['strategy_accuracy'].get(name))} / {_number(forced)}")
    lines.append("| " + " | ".join(cells) + " |")
  return "\n".join(lines)


def discovery_table(rows: Dict[str, Dict[str, Any]], families: Dict[str, str]) -> str:
  """Markdown: per strategy, the step it is discovered at by each trained row."""
  names = [n for n in rows["Base"]["record"]["test"]["mean"]["strategy_share"]
           if n != "DEGENERATE"]
  trained = {label: row for label, row in rows.items() if label != "Base"}
  steps = {label: discovery_steps(row["run"], names) for label, row in trained.items()}
  header = ["strategy", "family"] + list(trained)
  lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
  for name in names:
    cells = [name, families.get(name, "–")]
    for label in trained:
      found = steps[label]
      cells.append("not recorded" if found is None else
                   "never" if found[name] is None else str(found[name]))
    lines.append("| " + " | ".join(cells) + " |")
  return "\n".join(lines)



def pass_at_1_sources(rows: Dict[str, Dict[str, Any]], split: str = "test",
                      reference: str = "GRPO", largest: int = 3) -> Optional[str]:
  """Markdown: each row's pass@1 difference to `reference`, split into strategy
  choice and execution (`stats.shift_share`), with paired bootstrap intervals,
  and the `largest` per-strategy terms. None when the records hold no
  per-problem correct counts per strategy (older records) or lack `reference`.
  """
  if reference not in rows or split not in rows[reference]["record"]:
    return None
  labels = list(rows[reference]["record"][split]["mean"]["strategy_share"])
  names = [f"share:{n}" for n in labels] + [f"correct:{n}" for n in labels]

  def values(label):
    per = [per_problem(rows[label]["record"], split, name) for name in names]
    return None if any(v is None for v in per) else np.stack(per)   # [2K, S, P]

  def statistic(mean_a, mean_b):                                   # [2K, R] each
    k = len(labels)
    choice, execution = stats.shift_share(mean_a[:k].T, mean_a[k:].T, mean_b[:k].T,
                                          mean_b[k:].T)            # [R, K] each
    totals = [choice.sum(-1) + execution.sum(-1), choice.sum(-1), execution.sum(-1)]
    return np.concatenate([np.stack(totals), choice.T, execution.T])

  b = values(reference)
  if b is None:
    return None
  header = ["", f"pass@1 − {reference}", "strategy choice", "execution",
            "largest terms (choice / execution of one strategy)"]
  lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
  for label, row in rows.items():
    a = values(label) if label != reference and split in row["record"] else None
    if a is None:
      continue
    intervals = stats.paired_intervals(a, b, statistic)
    terms = [(kind, name, x.mean) for kind, part in (("choice", intervals[3:3 + len(labels)]),
                                                      ("execution", intervals[3 + len(labels):]))
             for name, x in zip(labels, part)]
    terms = sorted(terms, key=lambda t: -abs(t[2]))[:largest]
    lines.append(f"| {label} | {signed(intervals[0])} | {signed(intervals[1])} | "
                 f"{signed(intervals[2])} | "
                 + ", ".join(f"{kind} `{name}` {x:+.3f}" for kind, name, x in terms) + " |")
  return "\n".join(lines) if len(lines) > 2 else None
