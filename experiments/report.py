r"""Tables, claims, summary.json and plots from sweep directories.

  python -m experiments.report runs/sweeps/headline
  python -m experiments.report runs/sweeps/headline runs/sweeps/shaping_lambda --out=results

Reads every run under SWEEP_DIR/runs/ (config.json, eval.jsonl, train.jsonl) and
writes to --out (default SWEEP_DIR/report):

  report.md             one table per domain and split (`validation`, `test`,
                        `ood`, those evaluated): Base, GRPO, reward shaping (the
                        λ chosen on validation), Poly-EPO and any other algorithm,
                        final evaluation,
                        each metric's mean [95% interval]; a per-strategy table
                        (family, share, accuracy, forced accuracy); the step at
                        which each strategy is first discovered; the papers'
                        claims checked (and the same claims for Poly-PPO
                        against PPO, with Poly-PPO against Poly-EPO, when those
                        runs are given); reward shaping at every λ swept against
                        Poly-EPO, with the claim that no λ matches it on both
                        pass@1 and distinct correct (`lambda_table`); each
                        row's pass@1 difference to GRPO split into strategy choice and execution
                        (`stats.shift_share`, from the per-problem correct
                        counts per strategy, when recorded); the sweep's
                        command, commit, machine and wall time (from its
                        sweep.jsonl).
  summary.json          {domain: {algorithm: {split: {metric: {"mean", "ci_low",
                        "ci_high", "seeds"}}, "strategy_share": {...}},
                        "claims": [{"statement", "verdict", ...}]}}, with the
                        base model's "forced_accuracy"; every claim of report.md
                        with its verdict and the paired interval it rests on;
                        rounded to 4 decimals, keys sorted, so that it is
                        byte-stable.
  pass_at_k.png         pass@k against k, per domain and split.
  training.png          test pass@1, test pass@32 and ood pass@32 along training.
  distinct_correct.png  distinct correct strategies per prompt along training.
  strategy_shares.png   rollout strategy shares along training, per algorithm.
  rare_strategies.png   along training, the share of each strategy that had
                        under 1% of the base model's test samples.
  discovery.png         strategies discovered so far along training (a strategy
                        is discovered at the first step where >= 1% of the
                        rollouts are correct and follow it).
  forced_accuracy.png   each strategy's forced accuracy at each evaluation (when
                        recorded).
  exploration.png       decoy mass and distinct correct families along training
                        (those recorded).
  advantages.png        along training, the share of correct responses with a
                        negative advantage, of incorrect ones with a positive
                        advantage, and the advantage scale of all-correct
                        groups (when recorded; 0 for GRPO).
  shaping_lambda.png    reward shaping's final test pass@1 and distinct correct
                        against λ, Poly-EPO as a band (when λ was swept).
                        (The plots are drawn by `experiments.plots`; the
                        records are read by `experiments.records`.)
  <sweep name>/         with --archive: the run records (no checkpoints), itself a
                        sweep directory: `python -m experiments.report OUT/<sweep name>`
                        regenerates the same report.md and summary.json, byte for byte.

The Base row is the step-0 evaluation (the base model, before any update). An
algorithm's row comes from the first SWEEP_DIR that has it, and among several
settings there the one with the best final `validation` pass@1
(`records.select_rows`); a later SWEEP_DIR's runs of it (the λ sweep) only add
points to the plots. The outputs depend only on the run records, so rerunning the
report reproduces them.

Statistics (`experiments.stats`): a metric's value for a run is its mean over
seeds and problems of the per-problem values in the eval records (`per_problem`;
pass@k per problem from the number of correct samples). Its 95% interval is a
bootstrap over problems and seeds (B = 2000 replicates, fixed generator seed),
and a difference between two rows of a domain is bootstrapped *paired*: the same
problem draws on both sides, seeds drawn independently. One rule judges every
claim: "A > B + m" holds iff the interval of A - B lies entirely above m, "A <
B + m" iff entirely below m, "within m" iff inside [-m, m]; a claim with fewer
than 2 seeds on either side is not judged. A rate (pass@k, majority vote) whose
mean is >= 0.98 or <= 0.02 is marked saturated (†). Records written before the
per-problem values existed are refused with a message naming the missing key.
Such a mistake (and a missing sweep directory) is one line, `error: ...`, exit
status 2, with nothing written; --verbose adds the traceback (experiments.cli).
"""

import datetime
import functools
import json
import os
import shutil
from typing import Any, Dict, List, NamedTuple, Optional, Sequence, Tuple

from absl import app, flags
import numpy as np

from experiments import cli, stats
# The records API, re-exported: notebooks and tests read runs through `report`.
from experiments.records import (  # pylint: disable=unused-import
    COLORS, DISCOVERY_SHARE, DOMAIN_TITLES, ORDER, RARE_SHARE, SPLITS, RunRecord,
    algorithm_label, discovery_steps, is_complete, load_runs, num_seeds, per_problem,
    rare_strategies, require_per_problem, select_rows, shaping_by_lambda, strategy_families,
    value)
from experiments.records import _read_jsonl

_OUT = flags.DEFINE_string("out", None, "Output directory (default: <first SWEEP_DIR>/report).")
_ARCHIVE = flags.DEFINE_bool("archive", False, "Also copy the run records (config.json, "
                             "train.jsonl, eval.jsonl, sweep.jsonl) to OUT/<sweep name>/, so "
                             "that OUT alone regenerates the report.")

CLAIM_SPLITS = ("test", "ood")
AMPLIFICATION = 5.0    # the rare-strategy claim: final share >= this × the base model's
PASS_KS = (1, 8, 32, 64)
COLUMNS = ([(f"pass@{k}", f"pass@{k}") for k in PASS_KS]
           + [("distinct correct", "distinct_correct"),
              ("distinct correct families", "distinct_correct_families"),
              ("distinct", "distinct"),
              ("branch point", "branch_point"),
              ("majority vote", "majority_vote")])
SUMMARY_METRICS = tuple(f"pass@{k}" for k in PASS_KS) + (
    "distinct_correct", "distinct", "distinct_correct_families", "majority_vote")
SATURATION = 0.02      # a rate within this of 0 or 1 is saturated
SATURATED_NOTE = "† saturated: near the ceiling (or floor), differences uninformative."
# Row label -> its key in summary.json; a new algorithm is added here (rows with
# no key are left out of summary.json).
ALGORITHM_KEYS = {"Base": "base", "GRPO": "grpo", "Dr. GRPO": "dr_grpo",
                  "Reward shaping": "reward_shaping", "Poly-EPO": "poly_epo",
                  "Poly-EPO (correct-only diversity)": "poly_epo_correct_only",
                  "PPO": "ppo", "Poly-PPO": "poly_ppo"}
DECIMALS = 4           # of the numbers in summary.json


# -- tables --------------------------------------------------------------------


def saturated(name: str, mean: float) -> bool:
  """Whether a rate (pass@k, majority vote) is within SATURATION of 0 or 1."""
  is_rate = name.startswith("pass@") or name == "majority_vote"
  return is_rate and (mean >= 1 - SATURATION or mean <= SATURATION)




def cell(interval: Optional[stats.Interval], name: str) -> str:
  if interval is None:
    return "–"
  mark = "†" if saturated(name, interval.mean) else ""
  return f"{interval.mean:.3f} [{interval.low:.3f}, {interval.high:.3f}]{mark}"


def _with_note(table: str) -> str:
  return table + ("\n\n" + SATURATED_NOTE if "†" in table else "")


def domain_table(rows: Dict[str, Dict[str, Any]], split: str) -> str:
  """A markdown table of one domain and split: mean [95% interval] per metric."""
  header = ["", "seeds", "steps"] + [c for c, _ in COLUMNS]
  lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
  for label, row in rows.items():
    record = row["record"]
    if split not in record:
      continue
    name = f"{label} ({row['note']})" if row["note"] else label
    cells = [name, str(num_seeds(record, split)), str(record["step"])]
    cells += [cell(value(record, split, key), key) for _, key in COLUMNS]
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


def _signed(interval: stats.Interval) -> str:
  return f"{interval.mean:+.3f} [{interval.low:+.3f}, {interval.high:+.3f}]"


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
    lines.append(f"| {label} | {_signed(intervals[0])} | {_signed(intervals[1])} | "
                 f"{_signed(intervals[2])} | "
                 + ", ".join(f"{kind} `{name}` {x:+.3f}" for kind, name, x in terms) + " |")
  return "\n".join(lines) if len(lines) > 2 else None


# -- claims --------------------------------------------------------------------

NOT_EVALUATED = "not evaluated"


class Claim(NamedTuple):
  """A claim judged on one domain's final evaluations: its markdown bullet in
  report.md and its entry in summary.json.

  verdict: stats.HOLDS, stats.FAILS, stats.UNJUDGED or NOT_EVALUATED.
  lines: its markdown bullet (the bullets of its parts follow it, `bullets`).
  details: what it was judged on, JSON-ready: for two rows a and b, the split,
    metric, relation and margin, and the paired interval of a − b.
  parts: a composite claim's own claims (the rare-strategy claim: one per
    strategy; it holds if one of them does).
  """
  statement: str
  verdict: str
  lines: Tuple[str, ...]
  details: Dict[str, Any]
  parts: Tuple["Claim", ...] = ()

  def to_json(self) -> Dict[str, Any]:
    """{"statement", "verdict", **details, "parts": [...] (when composite)}."""
    out = {"statement": self.statement, "verdict": self.verdict, **self.details}
    if self.parts:
      out["parts"] = [part.to_json() for part in self.parts]
    return out


def bullets(judged: Sequence[Claim]) -> List[str]:
  """The markdown bullets of claims, each followed by those of its parts."""
  return [line for claim in judged for line in claim.lines + tuple(bullets(claim.parts))]


def _interval_json(interval: stats.Interval) -> Dict[str, Optional[float]]:
  return {"mean": _round(interval.mean), "ci_low": _round(interval.low),
          "ci_high": _round(interval.high)}


def _verdict(verdict: str) -> str:
  if verdict == stats.UNJUDGED:
    return "**not judged** (fewer than 2 seeds)"
  if verdict == NOT_EVALUATED:
    return verdict
  return f"**{verdict}**"


def _not_evaluated(statement: str, why: str = "not evaluated") -> Claim:
  return Claim(statement, NOT_EVALUATED, (f"- {statement}: {why}",), {})


def _claim(rows, statement, a, b, split, name, relation, margin=0.0) -> Claim:
  """One claim about rows a and b of a domain, judged by `stats.judge` on the
  paired bootstrap interval of a − b."""
  values_a = per_problem(rows[a]["record"], split, name)
  values_b = per_problem(rows[b]["record"], split, name)
  if values_a is None or values_b is None:
    return _not_evaluated(statement)
  judgement = stats.judge(values_a, values_b, relation, margin)
  mean_a, mean_b = values_a.mean(), values_b.mean()
  text = (f"- {statement}: {a} {cell(stats.interval(values_a), name)} vs {b} "
          f"{cell(stats.interval(values_b), name)}; difference "
          f"{_signed(judgement.difference)} → {_verdict(judgement.verdict)}")
  details = {"a": a, "b": b, "split": split, "metric": name, "relation": relation,
             "margin": margin, "difference": _interval_json(judgement.difference)}
  if saturated(name, mean_a) and saturated(name, mean_b):
    text += " (both saturated: near the ceiling, the difference is uninformative)"
    details["saturated"] = True
  return Claim(statement, judgement.verdict, (text,), details)


def claims(rows: Dict[str, Dict[str, Any]]) -> List[Claim]:
  """The papers' claims, checked on one domain's final evaluations.

  Each is judged by `stats.judge` on the paired bootstrap interval of the
  difference: it holds only when that whole interval clears the margin.
  """
  if not {"Base", "GRPO", "Poly-EPO"} <= set(rows):
    return [Claim("the papers' claims", NOT_EVALUATED,
                  ("- (needs Base, GRPO and Poly-EPO runs)",), {})]
  claim = functools.partial(_claim, rows)
  dc = "distinct_correct"
  out = [claim("GRPO's distinct correct strategies fall below the base model's",
               "GRPO", "Base", "test", dc, "<"),
         claim("Poly-EPO keeps them (at most 0.5 below the base model's)",
               "Poly-EPO", "Base", "test", dc, ">", -0.5),
         claim("Poly-EPO exceeds GRPO by more than 2 distinct correct strategies",
               "Poly-EPO", "GRPO", "test", dc, ">", 2.0)]
  for split in CLAIM_SPLITS:
    statement = f"Poly-EPO's {split} pass@32 beats GRPO's"
    if per_problem(rows["GRPO"]["record"], split, "pass@32") is None:
      out.append(_not_evaluated(statement, "not evaluated (fewer than 32 samples per "
                                           "problem)"))
      continue
    out.append(claim(statement, "Poly-EPO", "GRPO", split, "pass@32", ">"))
  if per_problem(rows["GRPO"]["record"], "ood", "pass@64") is not None:
    out.append(claim("Poly-EPO's ood pass@64 beats GRPO's",
                     "Poly-EPO", "GRPO", "ood", "pass@64", ">"))
  out.append(claim("Poly-EPO's test pass@1 is within 3 points of GRPO's",
                   "Poly-EPO", "GRPO", "test", "pass@1", "within", 0.03))
  return out + amplification_claims(rows)


def critic_claims(rows: Dict[str, Dict[str, Any]]) -> List[Claim]:
  """The same claims for the critic-based pair (Set RL note §6.1): Poly-PPO
  against PPO as Poly-EPO against GRPO, by the same rule and margins; then
  what Poly-PPO's vines add over Poly-EPO (the note expects nothing for
  language models: "this inductive bias is not required"). [] without PPO and
  Poly-PPO rows.
  """
  if not {"Base", "PPO", "Poly-PPO"} <= set(rows):
    return []
  claim = functools.partial(_claim, rows)
  dc = "distinct_correct"
  out = [claim("PPO's distinct correct strategies fall below the base model's",
               "PPO", "Base", "test", dc, "<"),
         claim("Poly-PPO exceeds PPO by more than 2 distinct correct strategies",
               "Poly-PPO", "PPO", "test", dc, ">", 2.0)]
  if per_problem(rows["PPO"]["record"], "ood", "pass@64") is not None:
    out.append(claim("Poly-PPO's ood pass@64 beats PPO's",
                     "Poly-PPO", "PPO", "ood", "pass@64", ">"))
  out.append(claim("Poly-PPO's test pass@1 is within 3 points of PPO's",
                   "Poly-PPO", "PPO", "test", "pass@1", "within", 0.03))
  out += amplification_claims(rows, amplifier="Poly-PPO", baseline="PPO")
  if "Poly-EPO" in rows:
    out += [claim("Poly-PPO's distinct correct strategies exceed Poly-EPO's",
                  "Poly-PPO", "Poly-EPO", "test", dc, ">"),
            claim("Poly-PPO's test pass@1 beats Poly-EPO's",
                  "Poly-PPO", "Poly-EPO", "test", "pass@1", ">")]
  return out


LAMBDA_METRICS = (("pass@1", "test pass@1"), ("distinct_correct", "distinct correct"))


def lambda_table(runs: Sequence[RunRecord], rows: Dict[str, Dict[str, Any]],
                 domain: str, amplifier: str = "Poly-EPO"
                 ) -> Optional[Tuple[List[str], Claim]]:
  """Reward shaping at each λ against `amplifier` (no λ) on `test`: the markdown
  table's lines and the claim.

  One table row per λ trained on the reward-shaping row's budget
  (`records.shaping_by_lambda`; the comparison's row is marked): reward shaping's
  test pass@1 and distinct correct strategies, and `amplifier` − reward shaping
  for each, paired over problems × seeds. Then the claim "no λ gives reward
  shaping both `amplifier`'s pass@1 and its distinct correct strategies": it
  holds iff at every λ at least one of the two differences lies entirely above
  0 (`stats.judge`, the one rule); a λ where neither does is named. None when
  fewer than two λs ran or `amplifier` did not.
  """
  shaping = shaping_by_lambda(runs, domain)
  if len(shaping) < 2 or amplifier not in rows:
    return None
  chosen = rows["Reward shaping"]["run"]
  header = ["λ"] + [name for _, name in LAMBDA_METRICS] + [
      f"{name}: {amplifier} − reward shaping" for _, name in LAMBDA_METRICS]
  lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
  matched, unjudged, per_lambda = [], False, []
  poly = rows[amplifier]["record"]
  for lam, run in shaping.items():
    record = run.evals[-1]
    cells, ahead, entry = [], [], {"lam": lam, "comparison_row": run is chosen}
    for name, _ in LAMBDA_METRICS:
      a, b = per_problem(poly, "test", name), per_problem(record, "test", name)
      judgement = stats.judge(a, b, ">")
      if judgement.verdict == stats.UNJUDGED:
        unjudged, side = True, "not judged"
      elif judgement.verdict == stats.HOLDS:
        side = f"{amplifier} ahead"
      elif stats.judge(a, b, "<").verdict == stats.HOLDS:
        side = f"{amplifier} behind"
      else:
        side = "no clear difference"
      cells.append(f"{_signed(judgement.difference)}: {side}")
      ahead.append(judgement.verdict == stats.HOLDS)
      entry[name] = {"difference": _interval_json(judgement.difference), "verdict": side}
    if not any(ahead):
      matched.append(f"{lam:g}")
    per_lambda.append(entry)
    mark = " (the comparison's row)" if run is chosen else ""
    lines.append(f"| {lam:g}{mark} | "
                 + " | ".join(cell(value(record, "test", name), name)
                              for name, _ in LAMBDA_METRICS)
                 + " | " + " | ".join(cells) + " |")
  statement = (f"No λ gives reward shaping both {amplifier}'s test pass@1 and its distinct "
               f"correct strategies ({amplifier} ahead on at least one, at every λ)")
  if unjudged:
    verdict = stats.UNJUDGED
  else:
    verdict = stats.FAILS if matched else stats.HOLDS
  text = f"- {statement} → {_verdict(verdict)}"
  if matched and not unjudged:
    text += f" (not ahead on either at λ = {', '.join(matched)})"
  details = {"a": amplifier, "b": "Reward shaping", "split": "test",
             "differences": f"{amplifier} − reward shaping at each λ", "per_lambda": per_lambda}
  return lines, Claim(statement, verdict, (text,), details)


def _percent(interval: stats.Interval) -> str:
  return f"{100 * interval.mean:.2f}% [{100 * interval.low:.2f}, {100 * interval.high:.2f}]"


def amplification_claims(rows: Dict[str, Dict[str, Any]], amplifier: str = "Poly-EPO",
                         baseline: str = "GRPO") -> List[Claim]:
  """The rare-strategy claim, with one part per strategy under RARE_SHARE of the
  base model's `test` samples: its final test share reaches AMPLIFICATION times
  the base model's under `amplifier` and not under `baseline` (row labels).

  "a >= m·b" is judged as the claim "a - m·b > 0" on the paired bootstrap of the
  per-problem shares (and "not under the baseline" as "baseline - m·b < 0"); the
  strategy's claim holds only if both do. The headline claim, "a rare strategy
  is amplified by Poly-EPO and not by GRPO", holds if it holds for at least one
  of them. [] when the records hold no strategy shares.
  """
  if "strategy_share" not in rows["Base"]["record"].get("test", {}).get("mean", {}):
    return []
  rare = rare_strategies(rows)
  statement = (f"A strategy under {RARE_SHARE:.0%} of the base model's test samples reaches "
               f"≥ {AMPLIFICATION:g}× its base share under {amplifier} and not under {baseline}")
  # Each part judges a − AMPLIFICATION·Base > 0 and b − AMPLIFICATION·Base < 0.
  details = {"a": amplifier, "b": baseline, "split": "test", "metric": "strategy share",
             "amplification": AMPLIFICATION, "rare_share": RARE_SHARE}
  if not rare:
    return [Claim(statement, NOT_EVALUATED,
                  (f"- {statement}: no strategy is that rare in the base model",), details)]
  parts = []
  for name in rare:
    part = f"`{name}` reaches ≥ {AMPLIFICATION:g}× its base share under {amplifier} and not " \
           f"under {baseline}"
    shares = {label: per_problem(rows[label]["record"], "test", f"share:{name}")
              for label in ("Base", baseline, amplifier)}
    if any(v is None for v in shares.values()):
      parts.append(Claim(part, NOT_EVALUATED,
                         (f"  - `{name}`: not evaluated (the records hold no per-problem "
                          f"strategy counts: rerun with this version)",), {"strategy": name}))
      continue
    scaled_base = AMPLIFICATION * shares["Base"]
    up = stats.judge(shares[amplifier], scaled_base, ">")
    flat = stats.judge(shares[baseline], scaled_base, "<")
    found = [up.verdict, flat.verdict]
    verdict = (stats.UNJUDGED if stats.UNJUDGED in found else
               stats.HOLDS if found == [stats.HOLDS, stats.HOLDS] else stats.FAILS)
    base = shares["Base"].mean()

    def times(label):
      ratio = shares[label].mean() / base if base > 0 else float("inf")
      return f"{ratio:.1f}×"

    text = (
        f"  - `{name}`: Base {_percent(stats.interval(shares['Base']))}; {amplifier} "
        f"{_percent(stats.interval(shares[amplifier]))} ({times(amplifier)}; {amplifier} − "
        f"{AMPLIFICATION:g}·Base {100 * up.difference.mean:+.2f} [{100 * up.difference.low:+.2f}, "
        f"{100 * up.difference.high:+.2f}] points); {baseline} "
        f"{_percent(stats.interval(shares[baseline]))} ({times(baseline)}; {baseline} − "
        f"{AMPLIFICATION:g}·Base {100 * flat.difference.mean:+.2f} "
        f"[{100 * flat.difference.low:+.2f}, {100 * flat.difference.high:+.2f}] points) → "
        f"{_verdict(verdict)}")
    parts.append(Claim(part, verdict, (text,), {
        "strategy": name,
        "share": {label: _interval_json(stats.interval(shares[label]))
                  for label in ("Base", amplifier, baseline)},
        "a_minus_scaled_base": dict(_interval_json(up.difference), verdict=up.verdict),
        "b_minus_scaled_base": dict(_interval_json(flat.difference), verdict=flat.verdict)}))
  verdicts = [p.verdict for p in parts if p.verdict != NOT_EVALUATED]
  if not verdicts:
    overall = NOT_EVALUATED
  elif stats.HOLDS in verdicts:
    overall = stats.HOLDS
  elif stats.UNJUDGED in verdicts:
    overall = stats.UNJUDGED
  else:
    overall = stats.FAILS
  return [Claim(statement, overall, (f"- {statement} → {_verdict(overall)}",), details,
                tuple(parts))]


# -- summary.json ----------------------------------------------------------------


def _round(x):
  return None if x is None else round(float(x), DECIMALS)


def summary(runs: List[RunRecord]) -> Dict[str, Any]:
  """{domain: {algorithm key: {split: {metric: {"mean", "ci_low", "ci_high", "seeds"}},
  "strategy_share": {strategy: final test share}}, "claims": [...]}}; the base
  model also has "forced_accuracy" (test) when recorded. Rows without an
  ALGORITHM_KEYS entry are left out; so are metrics not evaluated (pass@k for k
  above the samples). "claims" holds report.md's claims in its order
  (`Claim.to_json`: statement, verdict and the paired interval it rests on)."""
  out = {}
  for domain in sorted({r.domain for r in runs}):
    rows = select_rows(runs, domain)
    if not rows:
      continue
    out[domain] = {}
    for label, row in rows.items():
      if label not in ALGORITHM_KEYS:
        continue
      record = row["record"]
      entry = {}
      for split in SPLITS:
        if split not in record:
          continue
        entry[split] = {}
        for name in SUMMARY_METRICS:
          interval = value(record, split, name)
          if interval is not None:
            entry[split][name] = {"mean": _round(interval.mean), "ci_low": _round(interval.low),
                                  "ci_high": _round(interval.high),
                                  "seeds": num_seeds(record, split)}
      if "test" in record:
        test = record["test"]["mean"]
        entry["strategy_share"] = {n: _round(s) for n, s in test["strategy_share"].items()}
        if label == "Base" and test.get("forced_accuracy") is not None:
          entry["forced_accuracy"] = {n: _round(a) for n, a in test["forced_accuracy"].items()}
      out[domain][ALGORITHM_KEYS[label]] = entry
    judged = claims(rows) + critic_claims(rows)
    shaping = lambda_table(runs, rows, domain)
    if shaping:
      judged.append(shaping[1])
    out[domain]["claims"] = [claim.to_json() for claim in judged]
  return out


def summary_json(runs: List[RunRecord]) -> str:
  """`summary` as byte-stable JSON text (sorted keys, 2-space indent, final newline)."""
  return json.dumps(summary(runs), indent=2, sort_keys=True, ensure_ascii=False) + "\n"


# -- report.md -------------------------------------------------------------------


def _invocations(events) -> List[Dict[str, Any]]:
  """A sweep.jsonl's events split into invocations, each from its "start" event
  up to the next one: {"seconds", "killed", "runs", "unrecorded"}. An invocation
  without an "end" event was killed; its time is counted up to its last recorded
  event, and "unrecorded" says whether the run it was in may be missing (a sweep
  stopped by Ctrl-C or SIGTERM logs its runs as interrupted; a SIGKILL does not)."""
  out, current = [], None

  def close():
    if current is not None:
      last = current.pop("last")
      out.append(dict(current, seconds=_seconds_between(current["start"], last["time"]),
                      killed=True, unrecorded=not last.get("interrupted", False)))
  for event in events:
    if event["event"] == "start":
      close()
      current = {"start": event["time"], "last": event, "runs": 0}
    elif current is None:
      continue
    elif event["event"] == "end":
      out.append({"start": current["start"], "seconds": event["seconds"], "killed": False,
                  "runs": current["runs"], "unrecorded": False})
      current = None
    else:
      current["last"] = event
      current["runs"] += event["event"] == "run"
  close()
  return out


def _seconds_between(a: str, b: str) -> float:
  return (datetime.datetime.fromisoformat(b) - datetime.datetime.fromisoformat(a)).total_seconds()


def _run_times(events) -> str:
  """Each run's minutes: finished runs as "name 30.0", with "(+ 12.0 before an
  interruption)" where earlier invocations were stopped inside it and "(20.0 +
  25.0: extended)" where a finished run was extended by a later invocation; runs
  not finished yet as "name 12.0 so far"."""
  finished, interrupted = {}, {}
  for e in events:
    if e["event"] != "run":
      continue
    if e.get("interrupted"):
      interrupted[e["name"]] = interrupted.get(e["name"], 0.0) + e["seconds"]
    elif e["returncode"] == 0:
      finished.setdefault(e["name"], []).append(e["seconds"])
  parts = [f"{name} {sum(seconds) / 60:.1f}"
           + (" (" + " + ".join(f"{s / 60:.1f}" for s in seconds) + ": extended)"
              if len(seconds) > 1 else "")
           + (f" (+ {interrupted[name] / 60:.1f} before an interruption)"
              if name in interrupted else "")
           for name, seconds in finished.items()]
  parts += [f"{name} {seconds / 60:.1f} so far" for name, seconds in interrupted.items()
            if name not in finished]
  return (f"{len(finished)} runs took " + ", ".join(parts) + " min") if parts else "no run finished"


def sweep_info(sweep_dirs: Sequence[str]) -> List[str]:
  """Markdown lines: each sweep's command, commit, machine and wall time (all from
  its sweep.jsonl, so an archived copy gives the same lines)."""
  lines = []
  for sweep_dir in sweep_dirs:
    events = _read_jsonl(os.path.join(sweep_dir, "sweep.jsonl"))
    starts = [e for e in events if e["event"] == "start"]
    name = os.path.basename(os.path.normpath(sweep_dir))
    if not starts:
      lines.append(f"- `{name}`: no sweep.jsonl")
      continue
    invocations = _invocations(events)
    wall = sum(i["seconds"] for i in invocations)
    killed = sum(i["killed"] for i in invocations)
    idle = sum(not i["runs"] and not i["killed"] for i in invocations[1:])
    resumed = len(invocations) - 1 - idle
    commands = list(dict.fromkeys(start["command"] for start in starts))
    lines.append(f"- `{name}`: `{starts[0]['command']}` at commit `{starts[0]['commit']}`"
                 + (f" (resumed {resumed}×)" if resumed else "")
                 + (f" (then {idle} invocation(s) found every run finished)" if idle else "")
                 + "".join(f"; then `{c}`" for c in commands[1:]))
    machines = list(dict.fromkeys(start["machine"] for start in starts))
    lines.append(f"  - machine: {machines[0]}" if len(machines) == 1 else
                 "  - machines (invocations differ): " + "; ".join(machines))
    lines.append(f"  - wall time {wall / 60:.1f} min over {len(invocations)} invocation(s)"
                 + (f" ({killed} interrupted, each counted up to its last record"
                    + ("; the time of a run killed with its sweep is not recorded"
                       if any(i["unrecorded"] for i in invocations) else "") + ")"
                    if killed else "")
                 + "; " + _run_times(events))
  return lines


INTRO = (
    "Final evaluation of each run: mean over seeds and problems [95% interval]. The "
    f"interval is a bootstrap over problems and seeds ({stats.NUM_REPLICATES} replicates, "
    "each resampling the problems and the seeds with replacement; percentiles 2.5 and "
    "97.5). A claim compares two rows of a domain by the paired bootstrap of their "
    "difference (the same problems drawn for both, seeds drawn independently) and holds "
    "only if that whole interval clears the claim's margin; with fewer than 2 seeds on "
    "either side it is not judged. *distinct (correct)*: distinct (correct) strategies "
    "among a problem's samples, averaged over problems; *families*: the same count over "
    "strategy families; *branch point*: mean shared-prefix length of two samples; "
    "*majority vote*: accuracy of the most common answer among all samples. "
    + SATURATED_NOTE)


SOURCES_NOTE = (
    "pass@1 is the sum over strategies of share × accuracy (accuracy here over all "
    "problems). The difference to GRPO splits exactly into *strategy choice* (Σ Δshare × "
    "mean accuracy: where the samples go) and *execution* (Σ Δaccuracy × mean share: how "
    "often they are right there), each with its paired bootstrap interval; the largest "
    "single-strategy terms are point estimates.")


LAMBDA_NOTE = (
    "Every λ trained on the same budget as the comparison's reward-shaping row (its "
    "learning rate, seeds, steps and evaluation); each difference is Poly-EPO minus "
    "reward shaping at that λ with its paired interval: ahead (behind) when the whole "
    "interval lies above (below) 0. The plot: `shaping_lambda.png`.")


def unfinished(runs: Sequence[RunRecord], sweep_dirs: Sequence[str]) -> List[Dict[str, Any]]:
  """The runs that have not finished: each planned one (its sweep.json entry) without a
  complete record, and each incomplete record no sweep.json plans."""
  done = {r.name for r in runs if is_complete(r)}
  planned = []
  for sweep_dir in sweep_dirs:
    path = os.path.join(sweep_dir, "sweep.json")
    if os.path.exists(path):
      with open(path) as f:
        planned += json.load(f)["runs"]
  names = {run["name"] for run in planned}
  return ([run for run in planned if run["name"] not in done]
          + [{"name": r.name, "config_string": f"domain={r.domain}"} for r in runs
             if r.name not in done and r.name not in names])


def markdown(runs: List[RunRecord], sweep_dirs: Sequence[str]) -> str:
  """The whole report.md."""
  require_per_problem(runs)
  lines = ["# Results", "", INTRO, ""]
  missing = [run["name"] for run in unfinished(runs, sweep_dirs)]
  if missing:
    lines += [f"**Partial: {len(missing)} run(s) have not finished** and are left out of "
              "everything below: " + ", ".join(missing) + ".", ""]
  rows_by_domain = {d: select_rows(runs, d) for d in sorted({r.domain for r in runs})}
  rows_by_domain = {d: rows for d, rows in rows_by_domain.items() if rows}
  for domain, rows in rows_by_domain.items():
    if "Base" not in rows:
      raise ValueError(f"No complete {domain} run evaluated the base model at step 0 "
                       f"(run.eval_at_start): the report needs one for its Base row.")
  lines += ["## Summary", "", summary_table(rows_by_domain), ""]
  for domain, rows in rows_by_domain.items():
    title = DOMAIN_TITLES.get(domain, domain)
    families = strategy_families(rows["Base"]["run"])
    for split in SPLITS:
      record = rows["Base"]["record"]
      if split not in record:
        continue
      head = record[split]["mean"]
      lines += [f"## {title} — `{split}` ({int(head['num_problems'])} problems × "
                f"{int(head['num_samples'])} samples)", "", domain_table(rows, split), ""]
    lines += [f"### {title} — strategies (`test`, final evaluation)", "",
              "Share of the samples; accuracy on the problems the strategy applies to; "
              "forced accuracy (the strategy imposed on the model) where recorded.", "",
              strategy_table(rows, "test", families), ""]
    rare = rare_strategies(rows)
    lines += [f"### {title} — discovery", "",
              f"Rare strategies (under {RARE_SHARE:.0%} of the base model's `test` samples): "
              + (", ".join(f"`{n}`" for n in rare) or "none") + ". "
              f"First training step at which at least {DISCOVERY_SHARE:.0%} of the rollouts "
              "are correct and follow the strategy (seed mean):", "",
              discovery_table(rows, families), ""]
    lines += [f"### {title} — the papers' claims", ""] + bullets(claims(rows)) + [""]
    critic = critic_claims(rows)
    if critic:
      lines += ([f"### {title} — the same claims for PPO and Poly-PPO", ""] + bullets(critic)
                + [""])
    shaping = lambda_table(runs, rows, domain)
    if shaping:
      table, claim = shaping
      lines += [f"### {title} — reward shaping across λ against Poly-EPO (`test`)", "",
                LAMBDA_NOTE, ""] + table + ["", *claim.lines, ""]
    sources = pass_at_1_sources(rows)
    if sources:
      lines += [f"### {title} — where each pass@1 difference to GRPO comes from (`test`)", "",
                SOURCES_NOTE, "", sources, ""]
  lines += ["## Sweeps", ""] + sweep_info(sweep_dirs) + [""]
  return "\n".join(lines)


RECORDS = ("config.json", "train.jsonl", "eval.jsonl")


def archive_records(sweep_dir: str, destination: str) -> None:
  """Copies a sweep's records (not its checkpoints or logs) to `destination`,
  replacing the runs of an earlier archive there: a run the sweep no longer
  has is not left behind to be read with the new ones."""
  if os.path.abspath(sweep_dir) == os.path.abspath(destination):
    return
  if os.path.isdir(os.path.join(destination, "runs")):
    shutil.rmtree(os.path.join(destination, "runs"))
  for name in ("sweep.json", "sweep.jsonl"):
    if os.path.exists(os.path.join(sweep_dir, name)):
      os.makedirs(destination, exist_ok=True)
      shutil.copyfile(os.path.join(sweep_dir, name), os.path.join(destination, name))
  for run in sorted(os.listdir(os.path.join(sweep_dir, "runs"))):
    target = os.path.join(destination, "runs", run)
    os.makedirs(target, exist_ok=True)
    for name in RECORDS:
      source = os.path.join(sweep_dir, "runs", run, name)
      if os.path.exists(source):
        shutil.copyfile(source, os.path.join(target, name))


def archive_sweeps(sweep_dirs: Sequence[str], out: str) -> None:
  """`archive_records` of each sweep into `out/<sweep name>/`."""
  for sweep_dir in sweep_dirs:
    archive_records(sweep_dir, os.path.join(out, os.path.basename(os.path.normpath(sweep_dir))))


def write_report(sweep_dirs: Sequence[str], out: str, plots: bool = True,
                 archive: bool = False) -> List[str]:
  """Writes report.md, summary.json (and the plots) into `out`; returns the files written.

  Raises ValueError, before writing anything, for records without per-problem values.
  """
  runs = load_runs(sweep_dirs)
  require_per_problem(runs)
  texts = (markdown(runs, sweep_dirs), summary_json(runs))  # fail before writing
  os.makedirs(out, exist_ok=True)
  if archive:
    archive_sweeps(sweep_dirs, out)
  written = [os.path.join(out, "report.md"), os.path.join(out, "summary.json")]
  for path, text in zip(written, texts):
    with open(path, "w") as f:
      f.write(text)
  if plots:
    import matplotlib  # pylint: disable=g-import-not-at-top
    matplotlib.use("Agg")
    from experiments import plots as plots_lib  # pylint: disable=g-import-not-at-top
    domains = sorted({r.domain for r in runs if is_complete(r)})
    for name, plot in (("pass_at_k.png", plots_lib.plot_pass_at_k),
                       ("training.png", plots_lib.plot_training),
                       ("distinct_correct.png", plots_lib.plot_distinct_correct),
                       ("strategy_shares.png", plots_lib.plot_strategy_shares),
                       ("rare_strategies.png", plots_lib.plot_rare_strategies)):
      plot(runs, domains, os.path.join(out, name))
      written.append(os.path.join(out, name))
    for name, plot in (("discovery.png", plots_lib.plot_discovery),
                       ("forced_accuracy.png", plots_lib.plot_forced_accuracy),
                       ("exploration.png", plots_lib.plot_exploration),
                       ("advantages.png", plots_lib.plot_advantage_alignment),
                       ("shaping_lambda.png", plots_lib.plot_shaping_lambda)):
      if plot(runs, domains, os.path.join(out, name)):
        written.append(os.path.join(out, name))
  return written


def main(argv):
  sweep_dirs = argv[1:]
  if not sweep_dirs:
    raise app.UsageError("Usage: python -m experiments.report SWEEP_DIR [SWEEP_DIR ...] "
                         "[--out=DIR] [--archive]")
  out = _OUT.value or os.path.join(sweep_dirs[0], "report")
  for path in write_report(sweep_dirs, out, archive=_ARCHIVE.value):
    print(path)


if __name__ == "__main__":
  cli.run(main)
