"""The preregistered claims (configs/claims.py), judged on the final evaluations.

  judged = claims.judge_all(runs, rows_by_domain)   # {domain: Judgement}
  claims.bullets(judged["multiplication"].claims)   # report.md's markdown bullets
  [c.to_json() for c in judged["multiplication"].claims]   # summary.json's "claims"
  claims.judge(runs, rows, domain)                  # one domain alone

`rows_by_domain` is {domain: `records.select_rows`}, each {row label: {"record",
"run", "note"}}. A claim compares two rows on a split and metric through the
per-problem values of their final evaluations (`records.per_problem`: pass@k
per problem from its number of correct samples). Every interval a verdict rests
on is a paired bootstrap (`experiments.analysis.stats`: the same problem draws on
every side, seeds drawn independently, a fixed generator seed), read by one rule
(`stats.verdict`: holds, refuted or undecided) at the claim's level 1 − α_i:

- the *primary* claims of every domain judged together form one family, whose
  α_i come from Holm's step-down over each claim's two nulls (`stats.holm_pairs`,
  on `stats.p_values`); M counts every primary claim of every domain, those
  whose rows did not run too (p-values 1);
- the *secondary* claims of a domain form its own family: T intervals, each at
  1 − α/T (Bonferroni; `configs.claims.RULE`).

So the primary family needs every domain's claims at once: `judge_all`. A claim
whose rows did not run says "not evaluated"; one resting on fewer than
`min_seeds` seeds, or on a row trained for other steps than the registered ones,
is "not judged". When both sides of a rate are saturated (`tables.saturated`)
the bullet says the difference is uninformative. A claim changed after a result
judged it is marked with the commit of that result.
"""

from typing import Any, Callable, Dict, List, NamedTuple, Optional, Sequence, Tuple, Union

import numpy as np

from configs import claims as registry
from experiments.analysis import stats
from experiments.analysis.records import RunRecord, per_problem, rare_strategies, shaping_by_lambda, value
from experiments.analysis.tables import cell, rounded, saturated, signed

NOT_EVALUATED = "not evaluated"
VERDICTS = (stats.HOLDS, stats.REFUTED, stats.UNDECIDED, stats.UNJUDGED, NOT_EVALUATED)
FRONTIER_AXES = (("pass@1", "test pass@1"), ("distinct_correct", "distinct correct"))
"""The λ curve's axes (x, then y), on `test`; a frontier claim's metric is its y."""


class Judged(NamedTuple):
  """A claim judged on one domain: its markdown bullet in report.md and its
  entry in summary.json.

  claim: the registered claim (`configs.claims.Claim`).
  statement: as printed (an amplified claim's names its strategy).
  verdict: one of VERDICTS.
  lines: its markdown bullet (and the marks of its changes).
  details: what it was judged on, JSON-ready (the intervals it rests on, their
    level, the p-values).
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


class Family(NamedTuple):
  """How a family of claims is corrected (summary.json's "claims_family" entries).

  correction: "holm" (primary) or "bonferroni" (secondary).
  alpha: its family-wise error.
  size: M, the claims of a Holm family; T, the intervals of a Bonferroni one.
  domains: the domains it spans.
  """
  correction: str
  alpha: float
  size: int
  domains: Tuple[str, ...]

  @property
  def level(self) -> float:
    """Every interval's level in percent under Bonferroni, 100 (1 − α/T); under
    Holm the least a claim's can be, 100 (1 − α/M)."""
    return 100.0 * (1.0 - self.alpha / max(self.size, 1))

  def describe(self) -> str:
    if self.correction == "holm":
      return (f"Holm's step-down across {', '.join(self.domains)} together: M = {self.size} "
              f"claims, two nulls each (holding's and refutation's, at most one true; "
              f"experiments.analysis.stats.holm_pairs), family-wise error {self.alpha:g}; "
              "each claim's interval at 1 − α_i, α_i >= α/M")
    return (f"Bonferroni within {', '.join(self.domains)}: T = {self.size} intervals, each at "
            f"1 − α/T, family-wise error {self.alpha:g}")

  def to_json(self) -> Dict[str, Any]:
    out = {"correction": self.correction, "alpha": self.alpha, "domains": list(self.domains),
           "description": self.describe()}
    if self.correction == "holm":
      out.update(claims=self.size, min_level=round(self.level, 6))
    else:
      out.update(intervals=self.size, level=round(self.level, 6))
    return out


class Judgement(NamedTuple):
  """A domain's claims.

  claims: every registered claim in order (the primary ones first), an amplified
    claim once per rare strategy.
  primary: the primary family (spanning every domain judged together).
  secondary: the domain's secondary family.
  lambda_lines: the λ table's markdown lines ([] without a λ sweep).
  """
  claims: List[Judged]
  primary: Family
  secondary: Family
  lambda_lines: List[str]


def bullets(judged: Sequence[Judged]) -> List[str]:
  """The markdown bullets of judged claims."""
  return [line for claim in judged for line in claim.lines]


def num_intervals(claim: registry.Claim, num_rare: int) -> int:
  """The intervals `claim` rests on in a domain with `num_rare` rare strategies:
  2 per rare strategy (a's growth, b's lack of it) for an amplified claim, else 1."""
  return 2 * num_rare if claim.kind == "amplified" else 1


# -- what a verdict rests on, before its level is known ----------------------------


class _Test(NamedTuple):
  """One interval of a claim: the statistic's point, its bootstrap replicates f[R],
  and the relation, margin and δ it is read with."""
  point: float
  replicates: np.ndarray
  relation: str
  margin: float
  delta: float

  def p_values(self) -> Tuple[float, float]:
    return stats.p_values(self.replicates, self.relation, self.margin, self.delta)

  def read(self, alpha: float) -> Tuple[stats.Interval, str]:
    interval = stats.bounds(self.point, self.replicates, alpha)
    return interval, stats.verdict(interval, self.relation, self.margin, self.delta)


class _Pending(NamedTuple):
  """A claim whose tests are drawn; `render(alpha_i, p_info)` judges it at level
  1 − alpha_i and writes it (p_info: its p-values, JSON-ready)."""
  claim: registry.Claim
  tests: Tuple[_Test, ...]
  render: Callable[[float, Dict[str, float]], Judged]


_Item = Union[Judged, _Pending]


def _interval_json(interval: stats.Interval) -> Dict[str, Optional[float]]:
  return {"mean": rounded(interval.mean), "ci_low": rounded(interval.low),
          "ci_high": rounded(interval.high)}


def _verdict(verdict: str) -> str:
  if verdict == NOT_EVALUATED:
    return verdict
  return f"**{verdict}**"


def _combined(verdicts: Sequence[str]) -> str:
  """A claim resting on several intervals: holds iff each does, refuted iff one is."""
  if all(v == stats.HOLDS for v in verdicts):
    return stats.HOLDS
  return stats.REFUTED if stats.REFUTED in verdicts else stats.UNDECIDED


def _change_lines(claim: registry.Claim) -> Tuple[str, ...]:
  return tuple(
      f"  - *changed after its first result* (seen at commit `{c.seen_at}`): {c.why}; "
      f"it was {c.previous}" for c in claim.changes)


def _level_text(alpha: float, p_info: Dict[str, float]) -> str:
  """" (99.69%; adjusted p: holds 0.0016, refuted 1.0000)" for a primary claim,
  " (99.88%)" for a secondary one (its p-values are not adjusted)."""
  text = f"{100 * (1 - alpha):.2f}%"
  if "p_holds_adjusted" in p_info:
    text += (f"; adjusted p: holds {p_info['p_holds_adjusted']:.4f}, refuted "
             f"{p_info['p_refuted_adjusted']:.4f}")
  return f" ({text})"


class _Context(NamedTuple):
  rows: Dict[str, Dict[str, Any]]
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
  """" (seeds: 3 for GRPO; registered 5)" where a side has fewer than registered."""
  few = [f"{int(v.shape[0])} for {label}" for label, v in values.items()
         if label != "Base" and v.shape[0] < context.rule["seeds"]]
  return f" (seeds: {', '.join(few)}; registered {context.rule['seeds']})" if few else ""


def _few_seeds(context: _Context, *values) -> bool:
  return min(v.shape[0] for v in values) < max(context.rule["min_seeds"], stats.MIN_SEEDS)


def _difference(context: _Context, a, b, relation, margin, delta) -> _Test:
  point, replicates = stats.difference_replicates(a, b, replicates=context.rule["replicates"])
  return _Test(point, replicates, relation, margin, delta)


def _missing(context: _Context, claim: registry.Claim, labels: Sequence[str],
             statement: str) -> Optional[Judged]:
  absent = [label for label in labels if label not in context.rows]
  why = (f"no {', '.join(absent)} row" if absent else _unjudged_row(context, labels))
  if why is None:
    return None
  verdict = NOT_EVALUATED if absent else stats.UNJUDGED
  return Judged(claim, statement, verdict, (f"- {statement}: {why}",) + _change_lines(claim),
                {})


def _few_seeds_judged(context: _Context, claim: registry.Claim, statement: str,
                      text: str) -> Judged:
  return Judged(claim, statement, stats.UNJUDGED,
                (f"{text} → {_verdict(stats.UNJUDGED)} (fewer than "
                 f"{context.rule['min_seeds']} seeds)",) + _change_lines(claim), {})


def _compare(context: _Context, claim: registry.Claim) -> _Item:
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
  head = (f"- {claim.statement}: {claim.a} {cell(stats.interval(values_a), claim.metric)} vs "
          f"{claim.b} {cell(stats.interval(values_b), claim.metric)}")
  if _few_seeds(context, values_a, values_b):
    return _few_seeds_judged(context, claim, claim.statement, head)
  test = _difference(context, values_a, values_b, claim.relation, claim.margin, claim.delta)
  both_saturated = (saturated(claim.metric, values_a.mean())
                    and saturated(claim.metric, values_b.mean()))

  def render(alpha, p_info):
    difference, verdict = test.read(alpha)
    text = (f"{head}; difference {signed(difference)}{_level_text(alpha, p_info)} → "
            f"{_verdict(verdict)}")
    text += _seeds_note(context, {claim.a: values_a, claim.b: values_b})
    details = {"difference": _interval_json(difference), "level": round(100 * (1 - alpha), 6),
               **p_info}
    if both_saturated:
      text += " (both saturated: near the ceiling, the difference is uninformative)"
      details["saturated"] = True
    return Judged(claim, claim.statement, verdict, (text,) + _change_lines(claim), details)

  return _Pending(claim, (test,), render)


def _percent(interval: stats.Interval) -> str:
  return f"{100 * interval.mean:.2f}% [{100 * interval.low:.2f}, {100 * interval.high:.2f}]"


def _points(interval: stats.Interval) -> str:
  return (f"{100 * interval.mean:+.2f} [{100 * interval.low:+.2f}, "
          f"{100 * interval.high:+.2f}] points")


def _amplified(context: _Context, claim: registry.Claim, rare: Sequence[str]) -> List[_Item]:
  """One claim per rare strategy: its share under a reaches `amplification` x the
  base model's and under b does not. "a >= m·Base" is judged as "a − m·Base > 0"
  on the paired per-problem shares, "not under b" as "b − m·Base < 0", each with
  the claim's δ; the strategy's claim holds iff both hold and is refuted iff
  either is (each interval is one of the family's, so no further correction)."""
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
    base = shares["Base"].mean()

    def times(label, shares=shares, base=base):
      ratio = shares[label].mean() / base if base > 0 else float("inf")
      return f"{ratio:.1f}×"

    if _few_seeds(context, *shares.values()):
      out.append(_few_seeds_judged(context, claim, statement, f"- {statement}")._replace(
          details={"strategy": name}))
      continue
    scaled_base = m * shares["Base"]
    tests = (_difference(context, shares[claim.a], scaled_base, ">", 0.0, claim.delta),
             _difference(context, shares[claim.b], scaled_base, "<", 0.0, claim.delta))

    def render(alpha, p_info, name=name, statement=statement, shares=shares, tests=tests,
               times=times):
      (up, up_verdict), (flat, flat_verdict) = (t.read(alpha) for t in tests)
      verdict = _combined([up_verdict, flat_verdict])
      text = (f"- {statement}: Base {_percent(stats.interval(shares['Base']))}; {claim.a} "
              f"{_percent(stats.interval(shares[claim.a]))} ({times(claim.a)}; {claim.a} − "
              f"{m:g}·Base {_points(up)}: {up_verdict}); {claim.b} "
              f"{_percent(stats.interval(shares[claim.b]))} ({times(claim.b)}; {claim.b} − "
              f"{m:g}·Base {_points(flat)}: {flat_verdict}) → {_verdict(verdict)}")
      return Judged(claim, statement, verdict, (text,) + _change_lines(claim), {
          "strategy": name, "level": round(100 * (1 - alpha), 6),
          "share": {label: _interval_json(stats.interval(shares[label]))
                    for label in ("Base", claim.a, claim.b)},
          "a_minus_scaled_base": dict(_interval_json(up), verdict=up_verdict),
          "b_minus_scaled_base": dict(_interval_json(flat), verdict=flat_verdict)})

    out.append(_Pending(claim, tests, render))
  return out


def _lambda_table(context: _Context, claim: registry.Claim,
                  shaping: Dict[float, RunRecord]) -> Tuple[List[str], List[Dict[str, Any]]]:
  """Reward shaping at each λ run against `claim.a` on `test`: the table's markdown
  lines and summary.json's per-λ entries.

  One row per λ trained on the reward-shaping row's budget (the comparison's row
  is marked): reward shaping's test pass@1 and distinct correct, and a − reward
  shaping for each with its paired 95% interval, ahead (behind) where it lies
  above (below) 0. A description: the claim is the frontier statistic's.
  """
  chosen = context.rows[claim.b]["run"]
  header = ["λ"] + [name for _, name in FRONTIER_AXES] + [
      f"{name}: {claim.a} − reward shaping" for _, name in FRONTIER_AXES]
  lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
  amplifier = context.rows[claim.a]["record"]
  per_lambda = []
  for lam, run in shaping.items():
    record = run.evals[-1]
    cells, entry = [], {"lam": lam, "comparison_row": run is chosen}
    for name, _ in FRONTIER_AXES:
      a, b = per_problem(amplifier, "test", name), per_problem(record, "test", name)
      difference = stats.difference_interval(a, b)
      side = (f"{claim.a} ahead" if difference.low > 0 else
              f"{claim.a} behind" if difference.high < 0 else "no clear difference")
      cells.append(f"{signed(difference)}: {side}")
      entry[name] = {"difference": _interval_json(difference), "side": side}
    per_lambda.append(entry)
    mark = " (the comparison's row)" if run is chosen else ""
    lines.append(f"| {lam:g}{mark} | "
                 + " | ".join(cell(value(record, "test", name), name)
                              for name, _ in FRONTIER_AXES)
                 + " | " + " | ".join(cells) + " |")
  return lines, per_lambda


def _frontier(context: _Context, claim: registry.Claim, runs: Sequence[RunRecord],
              domain: str) -> Tuple[List[str], _Item]:
  """`claim.a`'s point (test pass@1, test distinct correct) against reward
  shaping's λ curve at the registered λ: the λ table's lines and the claim.

  F = a's distinct correct − the most distinct correct the curve reaches at a
  pass@1 at least a's (`stats.frontier_gap`; the curve in λ order, extended flat
  beyond its highest pass@1), bootstrapped jointly (`stats.joint_replicate_means`:
  one problem draw for every run, seeds per run) and judged as "F > 0" with the
  claim's δ. A registered λ that did not run leaves it not evaluated.
  """
  lambdas = context.rule["lambdas"]
  statement = f"{claim.statement} (λ = {', '.join(f'{lam:g}' for lam in lambdas)})"
  missing = _missing(context, claim, (claim.a, claim.b), statement)
  if missing:
    return [], missing
  shaping = shaping_by_lambda(runs, domain)
  lines, per_lambda = _lambda_table(context, claim, shaping) if shaping else ([], [])
  details = {"lambdas": list(lambdas), "per_lambda": per_lambda}
  absent = [f"{lam:g}" for lam in lambdas if lam not in shaping]
  if absent:
    return lines, Judged(claim, statement, NOT_EVALUATED, (
        f"- {statement}: not evaluated (λ = {', '.join(absent)} did not run)",)
        + _change_lines(claim), details)
  records = [context.rows[claim.a]["record"]] + [shaping[lam].evals[-1] for lam in lambdas]
  values = [[per_problem(r, "test", name) for name, _ in FRONTIER_AXES] for r in records]
  if any(v is None for per_run in values for v in per_run):
    return lines, Judged(claim, statement, NOT_EVALUATED, (
        f"- {statement}: not evaluated (a run has no test pass@1 or distinct correct)",)
        + _change_lines(claim), details)
  values = [np.stack(per_run) for per_run in values]              # each [2, S, P]
  if _few_seeds(context, *(v[0] for v in values)):
    return lines, _few_seeds_judged(context, claim, statement, f"- {statement}")._replace(
        details=details)
  points, draws = stats.joint_replicate_means(values, context.rule["replicates"])

  def gap(means):                                                 # [N, 2, ...] -> [...]
    return stats.frontier_gap(means[0, 0], means[0, 1], means[1:, 0], means[1:, 1])

  test = _Test(float(gap(points)), gap(draws), ">", claim.margin, claim.delta)
  height = float(stats.frontier_height(points[0, 0], points[1:, 0], points[1:, 1]))

  def render(alpha, p_info):
    difference, verdict = test.read(alpha)
    text = (f"- {statement}: {claim.a} test pass@1 {points[0, 0]:.3f}, distinct correct "
            f"{points[0, 1]:.3f}; the most distinct correct the curve reaches at pass@1 ≥ "
            f"{points[0, 0]:.3f}: {height:.3f}; F = {claim.a} − curve {signed(difference)}"
            f"{_level_text(alpha, p_info)} → {_verdict(verdict)}")
    return Judged(claim, statement, verdict, (text,) + _change_lines(claim), dict(
        details, difference=_interval_json(difference), level=round(100 * (1 - alpha), 6),
        curve_height=rounded(height), **p_info))

  return lines, _Pending(claim, (test,), render)


# -- the two families ----------------------------------------------------------


def _gather(runs: Sequence[RunRecord], rows: Dict[str, Dict[str, Any]], domain: str,
            claims: Sequence[registry.Claim], rule: Dict[str, Any]
            ) -> Tuple[List[_Item], int, List[str]]:
  """A domain's claims drawn, not yet judged: (items, T of its secondary family,
  λ table lines). T counts every interval the secondary claims define here (rare
  strategies from the base model's test shares), judged or not."""
  shares = rows.get("Base", {}).get("record", {}).get("test", {}).get("mean", {})
  rare = rare_strategies(rows) if "strategy_share" in shares else []
  context = _Context(rows, rule)
  items, lambda_lines = [], []
  for claim in claims:
    if claim.kind == "amplified":
      items += _amplified(context, claim, rare)
    elif claim.kind == "frontier":
      lambda_lines, item = _frontier(context, claim, runs, domain)
      items.append(item)
    else:
      items.append(_compare(context, claim))
  total = sum(num_intervals(claim, len(rare)) for claim in claims if not claim.primary)
  return items, total, lambda_lines


def judge_all(runs: Sequence[RunRecord], rows_by_domain: Dict[str, Dict[str, Dict[str, Any]]],
              claims: Sequence[registry.Claim] = registry.CLAIMS,
              rule: Optional[Dict[str, Any]] = None) -> Dict[str, Judgement]:
  """Every registered claim on every domain: the primary claims as one family
  across the domains, the secondary ones as one family per domain.

  Args:
    runs: every run (the frontier claim reads reward shaping's runs at each λ).
    rows_by_domain: {domain: its `records.select_rows`}.
    claims: the registered claims (configs/claims.py's, by default).
    rule: the registered rule (`configs.claims.RULE` by default).

  Returns:
    {domain: Judgement}, in rows_by_domain's order. A primary claim that could not
    be judged (rows missing, too few seeds) enters Holm's step-down with p-values
    1, so that it eases no other claim.
  """
  rule = registry.RULE if rule is None else rule
  alpha, domains = rule["alpha"], tuple(rows_by_domain)
  gathered = {domain: _gather(runs, rows, domain, claims, rule)
              for domain, rows in rows_by_domain.items()}
  primary = [(domain, i) for domain, (items, _, _) in gathered.items()
             for i, item in enumerate(items) if item.claim.primary]
  pairs = np.array([[1.0, 1.0] if isinstance(item, Judged) else item.tests[0].p_values()
                    for item in (gathered[d][0][i] for d, i in primary)]).reshape(-1, 2)
  adjusted, alphas = stats.holm_pairs(pairs), stats.holm_pairs_alpha(pairs, alpha)
  decided = {key: (alphas[n], {"p_holds": rounded(pairs[n, 0]), "p_refuted": rounded(pairs[n, 1]),
                               "p_holds_adjusted": rounded(adjusted[n, 0]),
                               "p_refuted_adjusted": rounded(adjusted[n, 1])})
             for n, key in enumerate(primary)}
  primary_family = Family("holm", alpha, len(primary), domains)
  out = {}
  for domain, (items, total, lambda_lines) in gathered.items():
    secondary = Family("bonferroni", alpha, total, (domain,))
    judged = []
    for i, item in enumerate(items):
      if isinstance(item, Judged):
        judged.append(item)
      elif item.claim.primary:
        judged.append(item.render(*decided[(domain, i)]))
      else:
        share = alpha / max(total, 1)
        judged.append(item.render(share, {} if len(item.tests) > 1 else dict(zip(
            ("p_holds", "p_refuted"), map(rounded, item.tests[0].p_values())))))
    out[domain] = Judgement(judged, primary_family, secondary, lambda_lines)
  return out


def judge(runs: Sequence[RunRecord], rows: Dict[str, Dict[str, Any]], domain: str,
          claims: Sequence[registry.Claim] = registry.CLAIMS,
          rule: Optional[Dict[str, Any]] = None) -> Judgement:
  """Every registered claim on one domain alone: `judge_all` with that domain only
  (its primary family then holds this domain's primary claims; a report of
  several domains judges them together, `judge_all`)."""
  return judge_all(runs, {domain: rows}, claims, rule)[domain]


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
