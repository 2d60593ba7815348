"""Poly-EPO's recipe against its authors' release, one setting at a time.

  lines = recipe.section(runs, rows, "Multiplication")   # report.md's lines ([]: no runs)
  entry = recipe.summary(runs, rows)                     # summary.json's "recipe"

configs/poly_epo.py and configs/poly_epo_official.py (the release's recipe) differ
in a few settings: N, the advantage's standardisation, the loss's aggregation and
the gradient clip. The recipe sweep (configs/sweeps/recipe.py) trains the
comparison's Poly-EPO row with one of them at the release's value. A run joins
as a *step* when it is a Poly-EPO run whose config.algorithm and config.train
differ from the Poly-EPO row's in exactly one field, on the row's steps and
evaluation (`steps`); each step's difference to the row, on `test` pass@1 and
distinct correct strategies, is the paired bootstrap interval of the report's
tables (95%), beside Poly-EPO as released, the whole recipe. A description: no
claim is judged on it, and the steps, at Poly-EPO's learning rate, choose nothing.
"""

from typing import Any, Dict, List, Sequence, Tuple

from experiments.analysis import algorithms, stats
from experiments.analysis.records import RunRecord, is_complete, num_seeds, per_problem, value
from experiments.analysis.tables import rounded, signed

METRICS = (("pass@1", "test pass@1"), ("distinct_correct", "test distinct correct"))
ROW, RELEASE = "Poly-EPO", "Poly-EPO (as released)"
NOTE = (
    "Poly-EPO here and as its authors released it (`configs/poly_epo_official.py`) "
    "differ in N, the advantage's standardisation, the loss's aggregation and the "
    "gradient clip. Each row between them is Poly-EPO's row with one of those settings "
    "at the release's value (`configs/sweeps/recipe.py`: Poly-EPO's learning rate, "
    "steps and evaluation; fewer seeds); the release row has all of them and its own "
    "tuned learning rate. Each difference is to Poly-EPO, with its paired 95% interval "
    "(problems drawn together, seeds independently). A description: no claim is "
    "judged on it.")


def _settings(run: RunRecord) -> Dict[str, Any]:
  return {**{f"algorithm.{k}": v for k, v in algorithms.flat(run.config["algorithm"]).items()},
          **{f"train.{k}": v for k, v in run.config["train"].items()}}


def _evaluation(run: RunRecord) -> Tuple[Any, ...]:
  """What two runs must share to be set side by side: steps and evaluation."""
  settings = run.config.get("run", {})
  return (run.config["train"]["num_steps"], settings.get("eval_num_problems"),
          settings.get("eval_num_samples"), tuple(settings.get("eval_splits", ())))


def steps(runs: Sequence[RunRecord], rows: Dict[str, Dict[str, Any]],
          domain: str) -> List[Tuple[str, Any, RunRecord]]:
  """[(field, value, run)]: the complete Poly-EPO runs of `domain` that differ from
  the Poly-EPO row's run in one field of config.algorithm or config.train alone,
  with its steps and evaluation, by field; of several runs of one change, the
  first sweep's. [] without a Poly-EPO row."""
  if ROW not in rows:
    return []
  row = rows[ROW]["run"]
  base = _settings(row)
  found: Dict[Tuple[str, str], Tuple[str, Any, RunRecord]] = {}
  for run in sorted((r for r in runs if r.domain == domain and r.algorithm == ROW
                     and is_complete(r) and r is not row
                     and _evaluation(r) == _evaluation(row)), key=lambda r: r.sweep):
    settings = _settings(run)
    changed = [k for k in sorted(set(base) | set(settings)) if base.get(k) != settings.get(k)]
    if len(changed) == 1:
      field = changed[0]
      found.setdefault((field, repr(settings.get(field))), (field, settings.get(field), run))
  return [found[k] for k in sorted(found)]


def _lines(runs, rows, domain):
  """(label, record, [(metric, interval, difference or None)]) of every row of the table."""
  reference = rows[ROW]["record"]
  entries = [(ROW, reference)]
  entries += [(f"`{field}` = {value!r}", run.evals[-1]) for field, value, run in
              steps(runs, rows, domain)]
  if RELEASE in rows:
    entries.append((RELEASE, rows[RELEASE]["record"]))
  out = []
  for label, record in entries:
    cells = []
    for metric, _ in METRICS:
      mean = value(record, "test", metric)
      difference = None
      if record is not reference and mean is not None:
        difference = stats.difference_interval(per_problem(record, "test", metric),
                                               per_problem(reference, "test", metric))
      cells.append((metric, mean, difference))
    out.append((label, record, cells))
  return out


def section(runs: Sequence[RunRecord], rows: Dict[str, Dict[str, Any]], title: str) -> List[str]:
  """report.md's lines: heading, NOTE and the table; [] without a step or a release row
  to set beside Poly-EPO."""
  if ROW not in rows:
    return []
  entries = _lines(runs, rows, rows[ROW]["run"].domain)
  if len(entries) == 1:   # Poly-EPO alone
    return []
  header = ["", "seeds"] + [h for _, name in METRICS for h in (name, "− Poly-EPO")]
  table = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
  for label, record, cells in entries:
    parts = [label, str(num_seeds(record, "test"))]
    for _, mean, difference in cells:
      parts += ["—" if mean is None else f"{mean.mean:.3f} [{mean.low:.3f}, {mean.high:.3f}]",
                "" if difference is None else signed(difference)]
    table.append("| " + " | ".join(parts) + " |")
  return [f"### {title} — Poly-EPO's recipe against the release, one setting at a time "
          "(`test`)", "", NOTE, "", *table, ""]


def summary(runs: Sequence[RunRecord], rows: Dict[str, Dict[str, Any]]) -> Dict[str, Any]:
  """summary.json's "recipe": {row: {"seeds", metric: {"mean", "ci_low", "ci_high",
  "minus_poly_epo": {"mean", "ci_low", "ci_high"}}}}, a step's row named
  "field=value", the release's by its key; {} where `section` has no table."""
  if ROW not in rows:
    return {}
  out = {}
  for label, record, cells in _lines(runs, rows, rows[ROW]["run"].domain)[1:]:
    name = (algorithms.BY_LABEL[label].key if label == RELEASE
            else label.replace("`", "").replace(" = ", "="))
    entry: Dict[str, Any] = {"seeds": num_seeds(record, "test")}
    for metric, mean, difference in cells:
      if mean is None:
        continue
      entry[metric] = {"mean": rounded(mean.mean), "ci_low": rounded(mean.low),
                       "ci_high": rounded(mean.high)}
      if difference is not None:
        entry[metric]["minus_poly_epo"] = {"mean": rounded(difference.mean),
                                           "ci_low": rounded(difference.low),
                                           "ci_high": rounded(difference.high)}
    out[name] = entry
  return out
