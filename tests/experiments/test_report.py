"""experiments.report end to end: report.md, summary.json and the plots of a tiny
sweep (`tiny_sweep`, tests/helpers/sweep_dirs.py), and each committed report regenerated."""

import json
import os

import numpy as np
import pytest

from experiments import report
from experiments.analysis import algorithms, archive, records, stats
from polyepo.evaluation import splits
from sweep_dirs import ROOT, committed


def _final(sweep_dir, run):
  return [json.loads(l) for l in open(sweep_dir / "runs" / run / "eval.jsonl")][-1]


def _pass_at_1_by_hand(record, split):
  """f[S, P]: each problem's correct samples over the samples drawn, per seed."""
  return np.array([np.array(s["per_problem"]["num_correct"]) / s["num_samples"]
                   for s in record[split]["seeds"]])


@pytest.mark.slow
def test_report_tables_follow_the_run_directories(tiny_sweep, tmp_path):
  _, sweep_dir, _ = tiny_sweep
  written = report.write_report([str(sweep_dir)], str(tmp_path / "a"))
  names = {os.path.basename(p) for p in written}
  assert {"report.md", "summary.json", "pass_at_k.png", "training.png", "distinct_correct.png",
          "strategy_shares.png", "rare_strategies.png", "shaping_lambda.png"} <= names
  # The optional plots are drawn exactly when the records hold what they show.
  train = [json.loads(l) for l in open(sweep_dir / "runs" / "grpo-smoke" / "train.jsonl")]
  final = _final(sweep_dir, "grpo-smoke")
  assert ("discovery.png" in names) == ("correct_strategy_share" in train[-1])
  assert ("forced_accuracy.png" in names) == ("forced_accuracy" in final["test"]["mean"])
  assert ("exploration.png" in names) == ("decoy_mass" in train[-1])
  assert ("advantages.png" in names) == ("correct_pushed_down" in train[-1])
  text = (tmp_path / "a" / "report.md").read_text()
  # Determinism: regenerating gives the same tables byte for byte.
  report.write_report([str(sweep_dir)], str(tmp_path / "b"), plots=False)
  assert (tmp_path / "b" / "report.md").read_text() == text
  # The reward-shaping row is the λ with the higher final validation pass@1 (ties:
  # the first in grid order); test never chooses.
  finals = {lam: _final(sweep_dir, f"reward_shaping-smoke-lam={lam}") for lam in ("0.1", "1.0")}
  scores = {lam: np.mean([s["pass_at_k"]["1"] for s in f["validation"]["seeds"]])
            for lam, f in finals.items()}
  best = "1" if scores["1.0"] > scores["0.1"] else "0.1"
  assert f"Reward shaping (lr=3e-05, λ={best}: best validation pass@1 of 2 settings)" in text
  # Each table cell is the mean over seeds and problems of the run's final
  # evaluation, with its bootstrap interval over problems and seeds.
  by_hand = _pass_at_1_by_hand(final, "test")
  assert by_hand.shape == (2, final["test"]["mean"]["num_problems"])
  assert by_hand.mean() == pytest.approx(np.mean([s["pass_at_k"]["1"]
                                                  for s in final["test"]["seeds"]]))
  test_table = text.split("— `test` (")[1]
  row = next(l for l in test_table.splitlines() if l.startswith("| GRPO |")).split(" | ")
  interval = stats.interval(by_hand)
  assert row[3].rstrip("†") == f"{by_hand.mean():.3f} [{interval.low:.3f}, {interval.high:.3f}]"
  # Branch point (column 10), which varies from problem to problem even in a smoke run.
  branch = np.array([s["per_problem"]["branch_point"] for s in final["test"]["seeds"]])
  assert branch.mean() == pytest.approx(np.mean([s["branch_point"]
                                                 for s in final["test"]["seeds"]]))
  interval = stats.interval(branch)
  assert row[10] == f"{branch.mean():.3f} [{interval.low:.3f}, {interval.high:.3f}]"
  assert interval.low < branch.mean() < interval.high
  base = [json.loads(l) for l in open(sweep_dir / "runs" / "grpo-smoke" / "eval.jsonl")][0]
  assert base["step"] == 0
  assert "| Base (step 0) | 2 | 0 |" in text
  assert "the preregistered claims" in text and ": no Poly-EPO row" in text
  # The smoke runs' few steps are not the registered 300: GRPO's claim is not judged.
  assert "not judged (GRPO trained " in text
  assert "— discovery" in text and "| strategy | family |" in text
  assert "— the price of diversity, predicted (`test`)" in text   # GRPO's row
  assert "## Sweeps" in text


@pytest.mark.slow
def test_summary_json_holds_the_final_evaluations(tiny_sweep, tmp_path):
  _, sweep_dir, _ = tiny_sweep
  report.write_report([str(sweep_dir)], str(tmp_path), plots=False)
  summary = json.loads((tmp_path / "summary.json").read_text())
  final = _final(sweep_dir, "grpo-smoke")
  domain = json.load(open(sweep_dir / "runs" / "grpo-smoke" / "config.json"))["domain"]
  assert list(summary) == [domain]
  assert set(summary[domain]) == {"base", "grpo", "reward_shaping", "claims",
                                  "claims_family", "predicted_optimum"}
  assert list(summary[domain]["predicted_optimum"]) == ["grpo"]   # tests/experiments/analysis/test_optimum.py
  # Every registered claim is listed, as in report.md: without a Poly-EPO run not
  # evaluated, GRPO's not judged (the smoke runs are not the registered 300 steps).
  verdicts = {c["id"]: c["verdict"] for c in summary[domain]["claims"]}
  assert verdicts["poly_epo_keeps"] == "not evaluated"
  assert verdicts["grpo_collapses"] == "not judged"
  family = summary[domain]["claims_family"]
  # One domain: the primary family is its 8 primary claims; the secondary family
  # counts every secondary interval (30 with no rare strategy, 2 more per one).
  assert (family["primary"]["correction"], family["primary"]["claims"]) == ("holm", 8)
  assert family["primary"]["domains"] == [domain]
  secondary = family["secondary"]
  assert secondary["correction"] == "bonferroni" and secondary["intervals"] >= 30
  assert secondary["intervals"] % 2 == 0
  assert secondary["level"] == pytest.approx(100 * (1 - 0.05 / secondary["intervals"]))
  grpo = summary[domain]["grpo"]
  splits = [s for s in ("validation", "test", "ood") if s in final]
  assert set(grpo) == set(splits) | {"strategy_share"}
  # 8 samples per problem: pass@32 and pass@64 are not evaluated.
  assert set(grpo["test"]) == {"pass@1", "pass@8", "distinct_correct", "distinct",
                               "distinct_correct_families", "majority_vote"}
  cell = grpo["test"]["pass@1"]
  assert cell["seeds"] == 2
  assert cell["mean"] == round(_pass_at_1_by_hand(final, "test").mean(), 4)
  assert cell["ci_low"] <= cell["mean"] <= cell["ci_high"]
  distinct = np.mean([s["per_problem"]["distinct_correct_families"]
                      for s in final["test"]["seeds"]])
  assert grpo["test"]["distinct_correct_families"]["mean"] == round(distinct, 4)
  assert grpo["strategy_share"] == {n: round(v, 4) for n, v in
                                    final["test"]["mean"]["strategy_share"].items()}
  step0 = [json.loads(l) for l in open(sweep_dir / "runs" / "grpo-smoke" / "eval.jsonl")][0]
  forced = step0["test"]["mean"].get("forced_accuracy")
  if forced is None:
    assert "forced_accuracy" not in summary[domain]["base"]
  else:
    assert summary[domain]["base"]["forced_accuracy"] == {
        n: None if a is None else round(a, 4) for n, a in forced.items()}
  assert "forced_accuracy" not in grpo
  assert (tmp_path / "summary.json").read_text().endswith("}\n")


@pytest.mark.slow
def test_archived_records_regenerate_the_report_byte_for_byte(tiny_sweep, tmp_path):
  """The archive holds everything the report reads: report.md and summary.json
  regenerated from it are the same bytes. This shows determinism and a complete
  archive, not correctness: the tests above and test_tables.py, test_claims.py and test_stats.py
  check the values and verdicts themselves."""
  _, sweep_dir, _ = tiny_sweep
  out = tmp_path / "results"
  report.write_report([str(sweep_dir)], str(out), plots=False, archive=True)
  archived = out / os.path.basename(sweep_dir)
  assert sorted(os.listdir(archived / "runs" / "grpo-smoke")) == sorted(archive.RECORDS)
  again = tmp_path / "again"
  report.write_report([str(archived)], str(again), plots=False)
  for name in ("report.md", "summary.json"):
    assert (again / name).read_bytes() == (out / name).read_bytes(), name


@pytest.mark.slow  # builds the tiny sweep (archive.unfinished has its own test in test_archive)
def test_a_report_of_unfinished_sweeps_says_it_is_partial(tiny_sweep, tmp_path):
  _, sweep_dir, _ = tiny_sweep
  report.write_report([str(sweep_dir)], str(tmp_path / "full"), plots=False, archive=True)
  archived = tmp_path / "full" / os.path.basename(sweep_dir)
  assert "Partial" not in (tmp_path / "full" / "report.md").read_text()
  manifest = json.loads((archived / "sweep.json").read_text())
  manifest["runs"].append({"name": "late", "config_string": "domain=multiplication"})
  (archived / "sweep.json").write_text(json.dumps(manifest))
  report.write_report([str(archived)], str(tmp_path / "partial"), plots=False)
  text = (tmp_path / "partial" / "report.md").read_text()
  assert "**Partial: 1 run(s) have not finished** and are left out of everything below: " \
         "late." in text


@pytest.mark.parametrize("directory, sweeps", committed("report.md"))
def test_committed_reports_regenerate_determinism_check(directory, sweeps, tmp_path):
  """Each committed report is what today's code makes of the run records archived beside it
  (a determinism check: a changed table or verdict rule must be regenerated). Records
  made under an earlier split scheme are skipped: the report reads today's eval
  problems (the optimum's applicability) and judges today's preregistered claims."""
  runs = records.load_runs(sweeps)
  try:
    records.require_per_problem(runs)
  except ValueError as err:
    pytest.skip(f"{directory}'s records predate per-problem eval values ({err})")
  if any(run.config.get("splits") != splits.SCHEME for run in runs):
    pytest.skip(f"{directory}'s runs were made before the split scheme {splits.SCHEME!r}")
  report.write_report(sweeps, str(tmp_path), plots=False)
  for name in ("report.md", "summary.json"):
    assert (tmp_path / name).read_text() == open(os.path.join(ROOT, directory, name)).read(), name


def test_every_final_run_trains_the_committed_choice():
  """Each domain's final sweep in results/final trains exactly results/tuning/chosen.json:
  one row per algorithm (its runs, seed blocks of one setting, differ only in their
  seeds), with its config file and every override of its choice, and each archived
  run's config.json holds those values. Overrides and records written before
  an algorithm's knobs moved to config.algorithm are read in today's keys
  (`algorithms.upgrade_overrides`, `algorithms.upgrade`). A comparison made on an
  earlier split scheme was tuned by an earlier chosen.json (in git history)."""
  found = dict(committed("summary.json"))
  if "results/final" not in found:
    pytest.skip("no committed final comparison")
  with open(os.path.join(ROOT, "results", "tuning", "chosen.json")) as f:
    chosen = json.load(f)
  for domain, entries in chosen.items():
    sweep_dir = os.path.join(ROOT, "results", "final", f"final-{domain}")
    with open(os.path.join(sweep_dir, "sweep.json")) as f:
      planned = json.load(f)["runs"]
    configs = {}
    for run in planned:
      with open(os.path.join(sweep_dir, "runs", run["name"], "config.json")) as f:
        configs[run["name"]] = algorithms.upgrade(json.load(f))
    if any(config.get("splits") != splits.SCHEME for config in configs.values()):
      pytest.skip(f"results/final was made on an earlier split scheme than {splits.SCHEME!r}")
    seeds = ("run.seed", "run.num_seeds")
    rows = {json.dumps([run["config_file"], {k: v for k, v in run["overrides"].items()
                                             if k not in seeds}], sort_keys=True)
            for run in planned}
    assert len(rows) == len(entries), domain
    for key, entry in entries.items():
      overrides = algorithms.upgrade_overrides(key, entry["overrides"])
      matches = [run for run in planned if run["config_file"] == entry["config_file"]
                 and all(algorithms.upgrade_overrides(key, run["overrides"]).get(k) == v
                         for k, v in overrides.items())]
      assert matches, (domain, key)
      assert len({json.dumps({k: v for k, v in run["overrides"].items() if k not in seeds},
                             sort_keys=True) for run in matches}) == 1, (domain, key)
      for run in matches:
        config = configs[run["name"]]
        for field, value in overrides.items():
          section, name = field.split(".", 1)
          assert algorithms.flat(config[section])[name] == value, (domain, key, field)
