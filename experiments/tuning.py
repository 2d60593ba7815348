r"""Each algorithm's setting, chosen from its tuning runs on `validation` only.

  python -m experiments.tuning runs/sweeps/tuning-multiplication --out=results/tuning
  python -m experiments.tuning runs/sweeps/tuning-multiplication \
      runs/sweeps/tuning-multiplication-extend1 --out=results/tuning --archive

Reads every run under the sweep directories (configs/sweeps/tuning.py makes
them), groups them by domain and algorithm, and picks each group's setting by the
registered criterion (`experiments.analysis.records.CRITERION`, from configs/claims.TUNING:
the final evaluation's `validation` pass@1, mean over seeds and problems; ties:
the smaller learning rate). Tuning runs evaluate `validation` only
(`run.eval_splits`), so `test` and `ood` cannot choose anything. Writes to --out:

  tuning.md     per domain, each algorithm's number of settings, learning rates
                tried and choice, and whether the choice is inside its grid; then
                per algorithm every setting with its validation pass@1 and
                distinct correct strategies [95% bootstrap interval], the choice
                marked; the sweeps' commands, commits and times.
  chosen.json   {domain: {algorithm key: {"config_file", "overrides", "run",
                "criterion"}}}: what configs/sweeps/final.py trains (keys
                sorted, byte-stable). While a domain's planned runs have not
                all finished, its entries also list them under
                "unfinished_tuning_runs"; a choice at its grid's lowest or
                highest learning rate has "at_edge" (configs/sweeps/tuning.py
                extends it). The sweeps that train the choices refuse either
                unless given provisional=true.

A mistake (a missing sweep directory, records it cannot choose from) is one line,
`error: ...`, exit status 2, with nothing written; --verbose adds the traceback
(experiments.cli).
"""

import json
import os
from typing import Any, Dict, List, Optional, Sequence

from absl import app, flags

from configs.sweeps import tuning as tuning_sweep
from experiments import cli
from experiments.analysis import algorithms, records, tables
from experiments.analysis.archive import archive_sweeps, sweep_info, unfinished

# experiments.report defines --out and --archive too; allow_override lets one
# process (the tests) import both modules. A FlagHolder reads its flag by name, so
# each module sees the value parsed.
_OUT = flags.DEFINE_string("out", None, "Output directory (default: <first SWEEP_DIR>/tuning).",
                           allow_override=True)
_ARCHIVE = flags.DEFINE_bool("archive", False, "Also copy the run records (config.json, "
                             "train.jsonl and eval.jsonl gzipped, sweep.jsonl) to "
                             "OUT/<sweep name>/, so that OUT alone "
                             "regenerates tuning.md and chosen.json.",
                             allow_override=True)

COLUMNS = (("validation pass@1", "pass@1"), ("validation distinct correct", "distinct_correct"))


def groups(runs: Sequence[records.RunRecord]) -> Dict[str, Dict[str, List[records.RunRecord]]]:
  """{domain: {algorithm label: [complete runs]}}, labels in algorithms.ORDER."""
  out: Dict[str, Dict[str, List[records.RunRecord]]] = {}
  for run in runs:
    if records.is_complete(run):
      out.setdefault(run.domain, {}).setdefault(run.algorithm, []).append(run)
  order = {label: i for i, label in enumerate(algorithms.ORDER)}
  return {d: dict(sorted(g.items(), key=lambda kv: (order.get(kv[0], len(order)), kv[0])))
          for d, g in sorted(out.items())}


def chosen(runs: Sequence[records.RunRecord], pending: Sequence[Dict[str, Any]] = ()
           ) -> Dict[str, Dict[str, Dict[str, Any]]]:
  """{domain: {algorithm key: {"config_file", "overrides", "run", "criterion"}}}.

  `pending`: the planned runs (sweep.json entries, archive.unfinished) that have not
  finished; each entry of a domain they belong to lists their names under
  tuning_sweep.UNFINISHED (a run whose domain is unknown belongs to every domain).
  Raises ValueError for an algorithm not in `algorithms.ALGORITHMS`, and
  (records.choose) for a run without a `validation` evaluation.
  """
  out = {}
  for domain, by_label in groups(runs).items():
    waiting = [run["name"] for run in pending if planned_domain(run) in (domain, None)]
    out[domain] = {}
    for label, group in by_label.items():
      if label not in algorithms.BY_LABEL:
        raise ValueError(f"algorithm {label!r} is not in experiments.analysis.algorithms.ALGORITHMS "
                         f"({', '.join(algorithms.ORDER)}).")
      best = records.choose(group)
      entry = {"config_file": algorithms.BY_LABEL[label].config,
               "overrides": records.setting(best), "run": best.name,
               "criterion": round(records.criterion(best), tables.DECIMALS)}
      edge = choice_edge(group)
      if edge:
        entry[tuning_sweep.AT_EDGE] = edge
      if waiting:
        entry[tuning_sweep.UNFINISHED] = waiting
      out[domain][algorithms.BY_LABEL[label].key] = entry
  return out


def learning_rates(group: Sequence[records.RunRecord]) -> List[float]:
  """The learning rates one algorithm's runs tried, ascending."""
  return sorted({run.config["train"]["learning_rate"] for run in group})


def choice_edge(group: Sequence[records.RunRecord]) -> Optional[str]:
  """The edge of its learning rates (`tuning_sweep.at_edge`) one algorithm's choice
  sits on, or None: inside its grid."""
  return tuning_sweep.at_edge(records.choose(group).config["train"]["learning_rate"],
                              learning_rates(group))


def overview(by_label: Dict[str, List[records.RunRecord]]) -> str:
  """Markdown: per algorithm, its number of settings, the learning rates tried and
  its choice, and whether the choice is inside its grid."""
  header = ["algorithm", "settings", "learning rates", "chosen", "inside the grid"]
  lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
  for label, group in by_label.items():
    best, edge = records.choose(group), choice_edge(group)
    cells = [label, str(len(group)), ", ".join(f"{lr:g}" for lr in learning_rates(group)),
             records.describe(records.setting(best)),
             f"no, at the {edge} learning rate: extend" if edge else "yes"]
    lines.append("| " + " | ".join(cells) + " |")
  return "\n".join(lines)


def chosen_json(runs: Sequence[records.RunRecord], pending: Sequence[Dict[str, Any]] = ()) -> str:
  return json.dumps(chosen(runs, pending), indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def table(group: Sequence[records.RunRecord]) -> str:
  """Markdown: one row per setting of one algorithm, the chosen one marked ✓."""
  best = records.choose(group)
  header = ["setting", "seeds", "steps"] + [c for c, _ in COLUMNS] + ["chosen"]
  lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
  for run in records.in_grid_order(group):
    record = run.evals[-1]
    cells = [records.describe(records.setting(run)), str(records.num_seeds(record, "validation")),
             str(record["step"])]
    cells += [tables.cell(records.value(record, "validation", key), key)
              for _, key in COLUMNS]
    cells.append("✓" if run is best else "")
    lines.append("| " + " | ".join(cells) + " |")
  return "\n".join(lines)


def planned_domain(run: Dict[str, Any]) -> Optional[str]:
  """The domain a sweep.json entry trains on (its config string's domain=), or None."""
  for item in run.get("config_string", "").split(","):
    key, _, value = item.partition("=")
    if key == "domain":
      return value
  return None


def markdown(runs: Sequence[records.RunRecord], sweep_dirs: Sequence[str]) -> str:
  """The whole tuning.md."""
  split, metric = records.CRITERION
  lines = ["# Tuning", "",
           f"Each algorithm's setting is the one with the highest final `{split}` {metric} "
           "(mean over seeds and problems; ties: the smaller learning rate), a criterion "
           "declared before the runs. Tuning runs evaluate `validation` only, so `test` and "
           "`ood` choose nothing. A choice at its grid's lowest or highest learning rate is "
           "not final: the grid is extended on that side (configs/sweeps/tuning.py:extend=), "
           "and chosen.json marks it `at_edge`. Cells: mean [95% bootstrap interval over "
           "problems and seeds].", ""]
  missing = [run["name"] for run in unfinished(runs, sweep_dirs)]
  if missing:
    lines += [f"**Partial: {len(missing)} planned run(s) have not finished**, so a choice "
              "below may still change (chosen.json marks it provisional): "
              + ", ".join(missing) + ".", ""]
  for domain, by_label in groups(runs).items():
    title = records.DOMAIN_TITLES.get(domain, domain)
    lines += [f"## {title}", "", overview(by_label), ""]
    for label, group in by_label.items():
      lines += [f"## {title} — {label}", "", table(group), ""]
  lines += ["## Sweeps", ""] + sweep_info(sweep_dirs) + [""]
  return "\n".join(lines)


def write_tuning(sweep_dirs: Sequence[str], out: str, archive: bool = False) -> List[str]:
  """Writes tuning.md and chosen.json into `out`; returns the files written."""
  runs = records.load_runs(sweep_dirs)
  records.require_per_problem(runs)
  text = markdown(runs, sweep_dirs)  # fail before writing
  choice = chosen_json(runs, unfinished(runs, sweep_dirs))
  os.makedirs(out, exist_ok=True)
  if archive:
    archive_sweeps(sweep_dirs, out)
  written = [os.path.join(out, "tuning.md"), os.path.join(out, "chosen.json")]
  for path, content in zip(written, (text, choice)):
    with open(path, "w") as f:
      f.write(content)
  return written


def main(argv):
  sweep_dirs = argv[1:]
  if not sweep_dirs:
    raise app.UsageError("Usage: python -m experiments.tuning SWEEP_DIR [SWEEP_DIR ...] "
                         "[--out=DIR] [--archive]")
  out = _OUT.value or os.path.join(sweep_dirs[0], "tuning")
  for path in write_tuning(sweep_dirs, out, archive=_ARCHIVE.value):
    print(path)


if __name__ == "__main__":
  cli.run(main)
