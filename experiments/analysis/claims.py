"""The preregistered claims (configs/claims.py), judged on one domain's final evaluations.

  judged = claims.judge(runs, rows, domain)   # Judgement of the domain's family
  claims.bullets(judged.claims)               # report.md's markdown bullets
  [c.to_json() for c in judged.claims]        # summary.json's "claims"

`rows` is one domain's `records.select_rows`: {row label: {"record", "run",
"note"}}. A claim compares two rows on a split and metric through the
per-problem values of their final evaluations (`records.per_problem`: pass@k
per problem from its number of correct samples). Every interval a domain's
verdicts rest on is the paired bootstrap of a − b (`experiments.analysis.stats`: the same
problem draws on both sides, seeds drawn independently, a fixed generator seed)
at the simultaneous level of the domain's family: with T intervals, each at
1 − α/T (Bonferroni; `configs.claims.RULE`). One rule (`stats.judge`) gives each
verdict. A claim whose rows did not run says "not evaluated"; one resting on
fewer than `min_seeds` seeds, or on a row trained for other steps than the
registered ones, is "not judged". When both sides of a rate are saturated
(`tables.saturated`) the bullet says the difference is uninformative. A claim
changed after a result judged it is marked with the commit of that result.
"""

from typing import Any, Dict, List, NamedTuple, Optional, Sequence, Tuple

from configs import claims as registry
from experiments.analysis import stats
from experiments.analysis.records import RunRecord, per_problem, rare_strategies, shaping_by_lambda, value
from experiments.analysis.tables import cell, rounded, saturated, signed

NOT_EVALUATED = "not evaluated"
LAMBDA_METRICS = (("pass@1", "test pass@1"), ("distinct_correct", "distinct correct"))


class Judged(NamedTuple):
  """A claim judged on one domain: its markdown bullet in report.md and its
  entry in summary.json.

  claim: the registered claim (`configs.claims.Claim`).
  statement: as printed (an amplified claim's names its strategy).
  verdict: stats.HOLDS, stats.FAILS, stats.UNJUDGED or NOT_EVALUATED.
  lines: its markdown bullet (and the marks of its changes).
  details: what it was judged on, JSON-ready (the intervals it rests on).
  """
  claim: registry.Claim
  statement: str
  verdict: str
  lines: Tuple[str, ...]
  details: Dict[str, Any]

  def to_json(self) -> Dict[str, Any]:
    """{"id", "statement", "source", "definition", "verdict", **details, "changes"}."""
    out = {"id": self.claim.id, "statement": self.statement, "source": self.claim.source,
           "definition": self.claim.definition(), "verdict": self.verdict, **self.details}
    if self.claim.changes:
      out["changes"] = [{"seen_at": c.seen_at, "previous": c.previous, "why": c.why}
                        for c in self.claim.changes]
    return out


class Judgement(NamedTuple):
  """A domain's family of claims.

  claims: every registered claim in order, an amplified claim once per rare strategy.
  num_intervals: T, the intervals of the family (Bonferroni's divisor).
  level: each interval's coverage in percent, 100 (1 − α/T).
  lambda_lines: the λ table's markdown lines ([] without a λ sweep).
  """
  claims: List[Judged]
  num_intervals: int
  level: float
  lambda_lines: List[str]


def bullets(judged: Sequence[Judged]) -> List[str]:
  """The markdown bullets of judged claims."""
  return [line for claim in judged for line in claim.lines]


def num_intervals(claim: registry.Claim, num_rare: int, rule=None) -> int:
  """The intervals `claim` rests on in a domain with `num_rare` rare strategies:
  1 for a comparison, 2 per rare strategy (a's growth, b's lack of it), 2 per λ
  tried (pass@1 and distinct correct)."""
  rule = registry.RULE if rule is None else rule
  if claim.kind == "amplified":
    return 2 * num_rare
  if claim.kind == "lambda":
    return 2 * len(rule["lambdas"])
  return 1


def _interval_json(interval: stats.Interval) -> Dict[str, Optional[float]]:
  return {"mean": rounded(interval.mean), "ci_low": rounded(interval.low),
          "ci_high": rounded(interval.high)}


def _verdict(verdict: str) -> str:
  if verdict == NOT_EVALUATED:
    return verdict
  return f"**{verdict}**"


def _change_lines(claim: registry.Claim) -> Tuple[str, ...]:
  return tuple(
      f"  - *changed after its first result* (seen at commit `{c.seen_at}`): {c.why}; "
      f"it was {c.previous}" for c in claim.changes)


class _Context(NamedTuple):
  rows: Dict[str, Dict[str, Any]]
  level: float
  rule: Dict[str, Any]


def _unjudged_row(context: _Context, labels: Sequence[str]) -> Optional[str]:
  """Why rows `labels` cannot be judged (another length than registered), or None."""
  for label in labels:
    step = context.rows[label]["record"].get("step", 0)
    if label != "Base" and step != context.rule["steps"]:
      return (f"not judged ({label} trained {step} steps; the claims are registered at "
              f"{context.rule['steps']})")
  return None


def _seeds_note(context: _Context, values: Dict[str, Any]) -> str:
  """" (3 seeds for GRPO; registered 5)" where a side has fewer than registered."""
  few = [f"{int(v.shape[0])} for {label}" for label, v in values.items()
         if label != "Base" and v.shape[0] < context.rule["seeds"]]
  return f" (seeds: {', '.join(few)}; registered {context.rule['seeds']})" if few else ""


def _judge(context: _Context, a, b, relation, margin=0.0) -> stats.Judgement:
  judgement = stats.judge(a, b, relation, margin, level=context.level,
                          replicates=context.rule["replicates"])
  if min(a.shape[0], b.shape[0]) < context.rule["min_seeds"]:
    return stats.Judgement(stats.UNJUDGED, judgement.difference)
  return judgement


def _missing(context: _Context, claim: registry.Claim, labels: Sequence[str],
             statement: str) -> Optional[Judged]:
  absent = [label for label in labels if label not in context.rows]
  why = (f"no {', '.join(absent)} row" if absent else _unjudged_row(context, labels))
  if why is None:
    return None
  verdict = NOT_EVALUATED if absent else stats.UNJUDGED
  return Judged(claim, statement, verdict, (f"- {statement}: {why}",) + _change_lines(claim),
                {})


def _compare(context: _Context, claim: registry.Claim) -> Judged:
  missing = _missing(context, claim, (claim.a, claim.b), claim.statement)
  if missing:
    return missing
  values_a = per_problem(context.rows[claim.a]["record"], claim.split, claim.metric)
  values_b = per_problem(context.rows[claim.b]["record"], claim.split, claim.metric)
  if values_a is None or values_b is None:
    why = NOT_EVALUATED
    if claim.metric.startswith("pass@"):
      why += f" (fewer than {claim.metric[len('pass@'):]} samples per problem)"
    return Judged(claim, claim.statement, NOT_EVALUATED,
                  (f"- {claim.statement}: {why}",) + _change_lines(claim), {})
  judgement = _judge(context, values_a, values_b, claim.relation, claim.margin)
  verdict = judgement.verdict
  text = (f"- {claim.statement}: {claim.a} {cell(stats.interval(values_a), claim.metric)} vs "
          f"{claim.b} {cell(stats.interval(values_b), claim.metric)}; difference "
          f"{signed(judgement.difference)} → {_verdict(verdict)}")
  if verdict == stats.UNJUDGED:
    text += f" (fewer than {context.rule['min_seeds']} seeds)"
  text += _seeds_note(context, {claim.a: values_a, claim.b: values_b})
  details = {"difference": _interval_json(judgement.difference)}
  if saturated(claim.metric, values_a.mean()) and saturated(claim.metric, values_b.mean()):
    text += " (both saturated: near the ceiling, the difference is uninformative)"
    details["saturated"] = True
  return Judged(claim, claim.statement, verdict, (text,) + _change_lines(claim), details)


def _percent(interval: stats.Interval) -> str:
  return f"{100 * interval.mean:.2f}% [{100 * interval.low:.2f}, {100 * interval.high:.2f}]"


def _points(interval: stats.Interval) -> str:
  return (f"{100 * interval.mean:+.2f} [{100 * interval.low:+.2f}, "
          f"{100 * interval.high:+.2f}] points")


def _amplified(context: _Context, claim: registry.Claim, rare: Sequence[str]) -> List[Judged]:
  """One claim per rare strategy: its share under a reaches `amplification` x the
  base model's and under b does not. "a >= m·Base" is judged as "a − m·Base > 0"
  on the paired per-problem shares, "not under b" as "b − m·Base < 0"; the
  strategy's claim holds only if both do (each interval is one of the family's,
  so no further correction)."""
  m = claim.amplification
  if not rare:
    statement = claim.statement
    return [Judged(claim, statement, NOT_EVALUATED,
                   (f"- {statement}: no strategy is under {context.rule['rare_share']:.0%} "
                    "of the base model's test samples",) + _change_lines(claim), {})]
  out = []
  for name in rare:
    statement = (f"`{name}` (rare) reaches ≥ {m:g}× its base share under {claim.a} and not "
                 f"under {claim.b}")
    missing = _missing(context, claim, ("Base", claim.a, claim.b), statement)
    if missing:
      out.append(missing._replace(details={"strategy": name}))
      continue
    shares = {label: per_problem(context.rows[label]["record"], claim.split, f"share:{name}")
              for label in ("Base", claim.a, claim.b)}
    if any(v is None for v in shares.values()):
      out.append(Judged(claim, statement, NOT_EVALUATED, (
          f"- {statement}: not evaluated (the records hold no per-problem strategy counts)",)
          + _change_lines(claim), {"strategy": name}))
      continue
    scaled_base = m * shares["Base"]
    up = _judge(context, shares[claim.a], scaled_base, ">")
    flat = _judge(context, shares[claim.b], scaled_base, "<")
    found = [up.verdict, flat.verdict]
    verdict = (stats.UNJUDGED if stats.UNJUDGED in found else
               stats.HOLDS if found == [stats.HOLDS, stats.HOLDS] else stats.FAILS)
    base = shares["Base"].mean()

    def times(label):
      ratio = shares[label].mean() / base if base > 0 else float("inf")
      return f"{ratio:.1f}×"

    text = (f"- {statement}: Base {_percent(stats.interval(shares['Base']))}; {claim.a} "
            f"{_percent(stats.interval(shares[claim.a]))} ({times(claim.a)}; {claim.a} − "
            f"{m:g}·Base {_points(up.difference)}); {claim.b} "
            f"{_percent(stats.interval(shares[claim.b]))} ({times(claim.b)}; {claim.b} − "
            f"{m:g}·Base {_points(flat.difference)}) → {_verdict(verdict)}")
    out.append(Judged(claim, statement, verdict, (text,) + _change_lines(claim), {
        "strategy": name,
        "share": {label: _interval_json(stats.interval(shares[label]))
                  for label in ("Base", claim.a, claim.b)},
        "a_minus_scaled_base": dict(_interval_json(up.difference), verdict=up.verdict),
        "b_minus_scaled_base": dict(_interval_json(flat.difference), verdict=flat.verdict)}))
  return out


def _lambda(context: _Context, claim: registry.Claim, runs: Sequence[RunRecord],
            domain: str) -> Tuple[List[str], Judged]:
  """Reward shaping at each registered λ against `claim.a` on `test`: the table's
  markdown lines and the claim.

  One table row per λ trained on the reward-shaping row's budget
  (`records.shaping_by_lambda`; the comparison's row is marked): reward shaping's
  test pass@1 and distinct correct strategies, and a − reward shaping for each,
  paired over problems × seeds. The claim holds iff at every registered λ at
  least one of the two differences lies entirely above 0; a λ where neither does
  is named. A registered λ that did not run leaves it not evaluated.
  """
  statement = (f"{claim.statement} (λ = "
               f"{', '.join(f'{lam:g}' for lam in context.rule['lambdas'])})")
  missing = _missing(context, claim, (claim.a, claim.b), statement)
  if missing:
    return [], missing
  shaping = shaping_by_lambda(runs, domain)
  chosen = context.rows[claim.b]["run"]
  header = ["λ"] + [name for _, name in LAMBDA_METRICS] + [
      f"{name}: {claim.a} − reward shaping" for _, name in LAMBDA_METRICS]
  lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
  matched, unjudged, per_lambda = [], False, []
  amplifier = context.rows[claim.a]["record"]
  for lam, run in shaping.items():
    record = run.evals[-1]
    cells, ahead, entry = [], [], {"lam": lam, "comparison_row": run is chosen}
    for name, _ in LAMBDA_METRICS:
      a, b = per_problem(amplifier, "test", name), per_problem(record, "test", name)
      judgement = _judge(context, a, b, ">")
      if judgement.verdict == stats.UNJUDGED:
        unjudged, side = True, "not judged"
      elif judgement.verdict == stats.HOLDS:
        side = f"{claim.a} ahead"
      elif _judge(context, a, b, "<").verdict == stats.HOLDS:
        side = f"{claim.a} behind"
      else:
        side = "no clear difference"
      cells.append(f"{signed(judgement.difference)}: {side}")
      ahead.append(judgement.verdict == stats.HOLDS)
      entry[name] = {"difference": _interval_json(judgement.difference), "verdict": side}
    if lam in context.rule["lambdas"] and not any(ahead):
      matched.append(f"{lam:g}")
    per_lambda.append(entry)
    mark = " (the comparison's row)" if run is chosen else ""
    lines.append(f"| {lam:g}{mark} | "
                 + " | ".join(cell(value(record, "test", name), name)
                              for name, _ in LAMBDA_METRICS)
                 + " | " + " | ".join(cells) + " |")
  absent = [f"{lam:g}" for lam in context.rule["lambdas"] if lam not in shaping]
  if absent:
    verdict = NOT_EVALUATED
    text = f"- {statement}: not evaluated (λ = {', '.join(absent)} did not run)"
  else:
    verdict = stats.UNJUDGED if unjudged else stats.FAILS if matched else stats.HOLDS
    text = f"- {statement} → {_verdict(verdict)}"
    if matched and not unjudged:
      text += f" (not ahead on either at λ = {', '.join(matched)})"
  details = {"differences": f"{claim.a} − reward shaping at each λ", "per_lambda": per_lambda}
  return (lines if shaping else []), Judged(claim, statement, verdict,
                                            (text,) + _change_lines(claim), details)


def judge(runs: Sequence[RunRecord], rows: Dict[str, Dict[str, Any]], domain: str,
          claims: Sequence[registry.Claim] = registry.CLAIMS,
          rule: Optional[Dict[str, Any]] = None) -> Judgement:
  """Every registered claim on one domain, with simultaneous intervals.

  Args:
    runs: every run (the λ claim reads reward shaping's runs at each λ).
    rows: the domain's `records.select_rows`.
    domain: its name.
    claims: the registered claims (configs/claims.py's, by default).
    rule: the registered rule (`configs.claims.RULE` by default).

  Returns:
    A Judgement: T counts every interval the claims define for this domain
    (rare strategies from the base model's test shares), judged or not.
  """
  rule = registry.RULE if rule is None else rule
  shares = rows.get("Base", {}).get("record", {}).get("test", {}).get("mean", {})
  rare = rare_strategies(rows) if "strategy_share" in shares else []
  total = sum(num_intervals(claim, len(rare), rule) for claim in claims)
  level = 100.0 * (1.0 - rule["alpha"] / max(total, 1))
  context = _Context(rows, level, rule)
  out, lambda_lines = [], []
  for claim in claims:
    if claim.kind == "amplified":
      out += _amplified(context, claim, rare)
    elif claim.kind == "lambda":
      lambda_lines, judged = _lambda(context, claim, runs, domain)
      out.append(judged)
    else:
      out.append(_compare(context, claim))
  return Judgement(out, total, level, lambda_lines)


def unmarked_changes(summary: Dict[str, Any],
                     claims: Sequence[registry.Claim] = registry.CLAIMS) -> List[str]:
  """The claims a summary.json judged whose definition differs now without a Change.

  Each claim entry with an id (entries judged before the registry have none) was
  judged under the definition it records: it must be the registered claim's now,
  or the claim must carry a Change whose `previous` is that definition. Returns
  one line per claim that fails this (an id no longer registered included).
  """
  by_id = {claim.id: claim for claim in claims}
  out = []
  for domain, entries in summary.items():
    for entry in entries.get("claims", []):
      if "id" not in entry:
        continue
      claim = by_id.get(entry["id"])
      if claim is None:
        out.append(f"{domain}: {entry['id']!r} was judged and is no longer registered")
      elif claim.definition() != entry["definition"] and not any(
          change.previous == entry["definition"] for change in claim.changes):
        out.append(f"{domain}: {entry['id']!r} changed after its result without a Change: "
                   f"was {entry['definition']}, is {claim.definition()}")
  return out
