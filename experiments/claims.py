"""The papers' claims, judged on one domain's final evaluations.

  judged = claims.claims(rows) + claims.critic_claims(rows)   # [Claim]
  claims.bullets(judged)          # report.md's markdown bullets
  [c.to_json() for c in judged]   # summary.json's "claims"

`rows` is one domain's `records.select_rows`: {row label: {"record", "run",
"note"}}. A claim compares two rows on a split and metric through the
per-problem values of their final evaluations (`records.per_problem`: pass@k
per problem from its number of correct samples). The paired bootstrap of the
difference (`experiments.stats`: 2000 replicates, a fixed generator seed; the
same problem draws on both sides, seeds drawn independently) gives its 95%
interval, and one rule (`stats.judge`) judges every claim: "a > b + m" holds iff
that interval lies entirely above m, "a < b + m" iff entirely below m, "within
m" iff inside [-m, m]; a claim with fewer than 2 seeds on either side is not
judged, and one whose metric was not evaluated says so. When both sides of a
rate are saturated (`tables.saturated`) the bullet says the difference is
uninformative.
"""

import functools
from typing import Any, Dict, List, NamedTuple, Optional, Sequence, Tuple

from experiments import stats
from experiments.records import (RARE_SHARE, RunRecord, per_problem, rare_strategies,
                                 shaping_by_lambda, value)
from experiments.tables import cell, rounded, saturated, signed

CLAIM_SPLITS = ("test", "ood")
AMPLIFICATION = 5.0    # the rare-strategy claim: final share >= this × the base model's
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
  return {"mean": rounded(interval.mean), "ci_low": rounded(interval.low),
          "ci_high": rounded(interval.high)}


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
          f"{signed(judgement.difference)} → {_verdict(judgement.verdict)}")
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
      cells.append(f"{signed(judgement.difference)}: {side}")
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
