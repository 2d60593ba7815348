"""summary.json: the report's numbers and verdicts as byte-stable JSON.

  text = summary.summary_json(records.load_runs(sweep_dirs))

{domain: {algorithm key: {split: {metric: {"mean", "ci_low", "ci_high",
"seeds"}}, "strategy_share": {...}}, "claims": [...], "predicted_optimum": {...},
"critic": {...}}}: every row of report.md with a key in `experiments.analysis.algorithms`, the
base model's "forced_accuracy", every preregistered claim of report.md with its
definition, verdict, the paired interval it rests on, its level and p-values
(`experiments.analysis.claims`; an undecided one also what `experiments.power` says
it would need, "needs"), and "claims_family", how the primary family (across
the domains) and the domain's secondary family are corrected, the optimal strategy mixtures'
predicted pass@1, distinct correct and shares beside the measured ones
(`experiments.analysis.optimum`), and the critics' explained variance beside its bound
(`experiments.analysis.critics`), and Poly-EPO's recipe one release setting at a
time ("recipe", `experiments.analysis.recipe`); numbers rounded to `tables.DECIMALS`, keys sorted.
"""

import json
from typing import Any, Dict, List

from experiments import power
from experiments.analysis import algorithms, critics, optimum, recipe
from experiments.analysis import claims as claims_lib
from experiments.analysis.records import RunRecord, num_seeds, select_rows, value
from experiments.analysis.tables import PASS_KS, rounded
from polyepo.evaluation import splits

SUMMARY_METRICS = tuple(f"pass@{k}" for k in PASS_KS) + (
    "distinct_correct", "distinct", "distinct_correct_families", "majority_vote")


def summary(runs: List[RunRecord]) -> Dict[str, Any]:
  """{domain: {algorithm key: {split: {metric: {"mean", "ci_low", "ci_high", "seeds"}},
  "strategy_share": {strategy: final test share}}, "claims": [...]}}; the base
  model also has "forced_accuracy" (test) when recorded. Rows without an
  entry in `algorithms.ALGORITHMS` are left out; so are metrics not evaluated (pass@k for k
  above the samples). "claims" holds report.md's claims in its order
  (`Judged.to_json`: id, statement, source, definition, verdict, the paired
  intervals it rests on, their level and p-values), "claims_family" the two
  families' corrections (primary: Holm across the domains, its M; secondary:
  Bonferroni within the domain, its T and level);
  "predicted_optimum" holds `optimum.summary` (absent without a row to predict), "critic"
  `critics.summary` (absent without a row with a critic), "recipe" `recipe.summary`
  (absent without its runs)."""
  out = {}
  rows_by_domain = {d: select_rows(runs, d) for d in sorted({r.domain for r in runs})}
  rows_by_domain = {d: rows for d, rows in rows_by_domain.items() if rows}
  judged_all = claims_lib.judge_all(runs, rows_by_domain)
  for domain, rows in rows_by_domain.items():
    out[domain] = {}
    for label, row in rows.items():
      if label not in algorithms.BY_LABEL:
        continue
      record = row["record"]
      entry = {}
      for split in splits.EVAL_SPLITS:
        if split not in record:
          continue
        entry[split] = {}
        for name in SUMMARY_METRICS:
          interval = value(record, split, name)
          if interval is not None:
            entry[split][name] = {"mean": rounded(interval.mean), "ci_low": rounded(interval.low),
                                  "ci_high": rounded(interval.high),
                                  "seeds": num_seeds(record, split)}
      if "test" in record:
        test = record["test"]["mean"]
        entry["strategy_share"] = {n: rounded(s) for n, s in test["strategy_share"].items()}
        if label == "Base" and test.get("forced_accuracy") is not None:
          entry["forced_accuracy"] = {n: rounded(a) for n, a in test["forced_accuracy"].items()}
      out[domain][algorithms.BY_LABEL[label].key] = entry
    judged = judged_all[domain]
    needs = power.undecided_needs(judged, rows)
    out[domain]["claims"] = [dict(claim.to_json(), **(
        {"needs": _rounded_tree(needs[claim.claim.id])} if claim.claim.id in needs else {}))
                             for claim in judged.claims]
    out[domain]["claims_family"] = {
        "primary": judged.primary.to_json(), "secondary": judged.secondary.to_json(),
        "registered": claims_lib.registry.RULE["registered"],
        "replicates": claims_lib.registry.RULE["replicates"]}
    predicted = optimum.summary(rows)
    if predicted:
      out[domain]["predicted_optimum"] = predicted
    critic = critics.summary(rows)
    if critic:
      out[domain]["critic"] = critic
    steps = recipe.summary(runs, rows)
    if steps:
      out[domain]["recipe"] = steps
  return out


def _rounded_tree(entry: Dict[str, Any]) -> Dict[str, Any]:
  return {k: rounded(v) if isinstance(v, float) else v for k, v in entry.items()}


def summary_json(runs: List[RunRecord]) -> str:
  """`summary` as byte-stable JSON text (sorted keys, 2-space indent, final newline)."""
  return json.dumps(summary(runs), indent=2, sort_keys=True, ensure_ascii=False) + "\n"
