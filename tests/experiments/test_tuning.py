"""Choosing each algorithm's setting on `validation` (experiments.analysis.records, experiments.tuning)
and the sweeps that tune and then train the choice (configs/sweeps/tuning.py, final.py),
on constructed run records, with reward shaping across λ (the λ claim, experiments.analysis.claims);
and the committed tuning regenerated from its archived sweeps."""

import importlib
import json
import os

import numpy as np
import pytest

from configs import choices
from configs.sweeps import final as final_sweep
from configs.sweeps import tuning as tuning_sweep
from envs import datasets
from experiments import report, sweep, tuning
from experiments.analysis import algorithms, claims, records
from polyepo.rl import algorithms as algorithms_lib
from sweep_dirs import ROOT, committed

P, SAMPLES = 8, 32


def _split(correct_per_problem, seeds=2, distinct_correct=1):
  """An eval split whose every seed has `correct_per_problem` correct samples of SAMPLES
  and `distinct_correct` distinct correct strategies on every problem."""
  seed = {"num_samples": SAMPLES,
          "per_problem": {"num_correct": list(correct_per_problem),
                          "distinct_correct": [distinct_correct] * P}}
  return {"mean": {"num_samples": SAMPLES, "num_problems": P}, "seeds": [seed] * seeds}


def _run(name, config_name, algorithm, lr, correct, lam=0.3, set_size=4, normalize=True,
         objective="polychromic", splits=("validation",), domain="multiplication"):
  """A complete 100-step run whose final evaluation has `correct` correct samples per
  problem; its config.algorithm holds the fields of `algorithm` (normalize_over
  left out: the records predate it)."""
  spec = {"name": algorithm, "normalize": normalize}
  if algorithm == "reward_shaping":
    spec["lam"] = lam
  if algorithm == "set_rl":
    spec.update(set_size=set_size, objective=objective, num_subsets=0)
  config = {"name": config_name, "domain": domain, "algorithm": spec,
            "train": {"learning_rate": lr, "num_steps": 100}}
  evals = [{"step": s, **{split: _split([16] * P) for split in splits}} for s in (0,)]
  evals.append({"step": 100, **{split: _split(correct) for split in splits}})
  return records.RunRecord(name, domain, algorithms.label_of(spec),
                           lam if algorithm == "reward_shaping" else None, config, evals, [])


def test_labels_of_every_algorithm():
  def label(name, objective="polychromic", normalize=True):
    return algorithms.label_of({"name": name, "objective": objective, "normalize": normalize})
  assert label("grpo") == "GRPO" and label("grpo", normalize=False) == "Dr. GRPO"
  assert label("set_rl") == "Poly-EPO"
  assert label("set_rl", "polychromic_correct_only") == "Poly-EPO (correct-only diversity)"
  assert label("set_rl", "pass_at_n") == "Set RL pass@n"
  assert label("ppo") == "PPO" and label("poly_ppo") == "Poly-PPO"
  assert label("poly_ppo", "mean_reward") == "Poly-PPO (Set RL mean reward)"
  assert label("poly_ppo", "pass_at_n") == "Poly-PPO (Set RL pass@n)"
  assert label("set_rl", "srl") == "Set RL f_srl"
  assert algorithms.label_of({"name": "reward_shaping", "lam": 0.3}) == "Reward shaping"
  # Windowed set RL is told apart by its first part's objective.
  windowed = {"name": "set_rl_windowed", "rest": {"name": "grpo", "normalize": True}}
  assert algorithms.label_of(dict(windowed, first={"name": "set_rl",
                                                   "objective": "polychromic"})) == \
      "Poly-EPO (windowed)"
  assert algorithms.label_of(dict(windowed, first={"name": "set_rl",
                                                   "objective": "pass_at_n"})) == \
      "set_rl_windowed"
  # An algorithm outside the table is labelled by its name.
  assert algorithms.label_of({"name": "rloo_algorithm:rloo", "leave_out": True}) == \
      "rloo_algorithm:rloo"
  # Poly-EPO as released is unstandardised set RL with Dr. GRPO's loss aggregation;
  # unstandardised Poly-EPO with its own loss (a setting of Poly-EPO's grid) is Poly-EPO.
  released = {"name": "set_rl", "objective": "polychromic", "normalize": False}
  assert algorithms.label_of(released, {"aggregation": "sequence_sum"}) == \
      "Poly-EPO (as released)"
  assert algorithms.label_of(released, {"aggregation": "token_mean"}) == "Poly-EPO"
  assert algorithms.label_of(released) == "Poly-EPO"   # no config.train to tell them apart
  assert algorithms.label_of(dict(released, normalize=True),
                             {"aggregation": "sequence_sum"}) == "Poly-EPO"
  assert algorithms.label_of(dict(released, objective="pass_at_n"),
                             {"aggregation": "sequence_sum"}) == "Set RL pass@n"
  assert algorithms.label_of({"name": "grpo", "normalize": False},
                             {"aggregation": "sequence_sum"}) == "Dr. GRPO"
  # Every config file's algorithm gets its row's label.
  for row in algorithms.ALGORITHMS[1:]:
    module = importlib.import_module(os.path.splitext(row.config)[0].replace("/", "."))
    config = module.get_config()
    spec = algorithms.flat(config.algorithm.to_dict())
    spec.update(row.algorithm)
    assert algorithms.label_of(_nested(spec), dict(config.train.to_dict(), **row.train)) == \
        row.label, row.label
    # A config file as it is runs its first row (the correct-only ablation is
    # configs/poly_epo.py with another objective; the others have files of their own).
    first = next(r for r in algorithms.ALGORITHMS[1:] if r.config == row.config)
    assert algorithms.label_of(config.algorithm.to_dict(), config.train.to_dict()) == \
        first.label, row.label
  assert [r.label for r in algorithms.ALGORITHMS[1:]
          if r.config == "configs/poly_epo.py"] == ["Poly-EPO",
                                                    "Poly-EPO (correct-only diversity)"]


def _nested(flat):
  """A config.algorithm dict from its dotted keys ("first.objective")."""
  out = {}
  for key, value in flat.items():
    *path, leaf = key.split(".")
    node = out
    for part in path:
      node = node.setdefault(part, {})
    node[leaf] = value
  return out


def test_a_chosen_setting_of_an_older_tuning_reads_in_today_s_keys():
  """chosen.json named an algorithm's knobs train.<field> before they moved to
  config.algorithm (hand-written old keys and new ones)."""
  assert algorithms.upgrade_overrides("poly_epo_windowed", {
      "train.learning_rate": 3e-5, "train.set_size": 4, "train.normalize": True,
      "train.objective": "polychromic"}) == {
          "train.learning_rate": 3e-5, "algorithm.first.set_size": 4,
          "algorithm.first.normalize": True, "algorithm.first.objective": "polychromic"}
  assert algorithms.upgrade_overrides("reward_shaping", {
      "train.learning_rate": 1e-4, "train.lam": 0.3}) == {
          "train.learning_rate": 1e-4, "algorithm.lam": 0.3}
  assert algorithms.upgrade_overrides("poly_epo", {
      "train.set_size": 8, "train.normalize_over": "batch", "train.objective": "polychromic"}) \
      == {"algorithm.set_size": 8, "algorithm.normalize_over": "batch",
          "algorithm.objective": "polychromic"}
  assert algorithms.upgrade_overrides("poly_ppo", {"train.set_size": 4}) == {
      "algorithm.set_size": 4}
  # Shared fields, today's keys and an algorithm without knobs are left as they are.
  today = {"train.learning_rate": 3e-5, "algorithm.first.set_size": 4}
  assert algorithms.upgrade_overrides("poly_epo_windowed", today) == today
  assert algorithms.upgrade_overrides("grpo", {"train.learning_rate": 3e-5}) == {
      "train.learning_rate": 3e-5}
  assert algorithms.upgrade_overrides("ppo", {"train.learning_rate": 3e-5,
                                              "train.num_steps": 300}) == {
      "train.learning_rate": 3e-5, "train.num_steps": 300}


def test_choose_takes_the_best_validation_pass_at_1():
  # pass@1 = correct / 32 on every problem: 4/32, 12/32, 8/32.
  runs = [_run("a", "grpo", "grpo", 1e-5, [4] * P), _run("b", "grpo", "grpo", 3e-5, [12] * P),
          _run("c", "grpo", "grpo", 1e-4, [8] * P)]
  assert records.choose(runs).name == "b"
  assert records.criterion(runs[1]) == pytest.approx(12 / 32)
  # Ties go to the smaller learning rate, whatever the order given.
  tied = [_run("fast", "grpo", "grpo", 1e-4, [8] * P), _run("slow", "grpo", "grpo", 1e-5, [8] * P)]
  assert records.choose(tied).name == records.choose(tied[::-1]).name == "slow"


def test_choose_never_reads_test_or_ood():
  # On test the other run would win; only validation counts.
  a = _run("a", "grpo", "grpo", 1e-5, [10] * P, splits=("validation", "test"))
  b = _run("b", "grpo", "grpo", 3e-5, [6] * P, splits=("validation", "test"))
  b.evals[-1]["test"] = _split([30] * P)
  assert records.choose([a, b]).name == "a"
  only_test = _run("t", "grpo", "grpo", 1e-5, [10] * P, splits=("test", "ood"))
  with pytest.raises(ValueError, match=r"\['t'\] have no final 'validation' evaluation"):
    records.choose([a, only_test])


def test_report_rows_use_the_choice():
  runs = [_run("rs-0.1", "reward_shaping", "reward_shaping", 3e-5, [5] * P, lam=0.1,
               splits=("validation", "test")),
          _run("rs-1", "reward_shaping", "reward_shaping", 3e-5, [7] * P, lam=1.0,
               splits=("validation", "test"))]
  rows = records.select_rows(runs, "multiplication")
  assert rows["Reward shaping"]["run"].name == "rs-1"
  assert rows["Reward shaping"]["note"] == ("lr=3e-05, λ=1: best validation pass@1 of 2 "
                                            "settings")


def test_a_later_sweep_adds_points_without_choosing_the_row_again():
  # The final sweep trains the tuned λ = 0.3; the λ sweep (second directory) trains
  # λ = 1 with a better validation pass@1, which must not take the row.
  tuned = _run("rs-0.3", "reward_shaping", "reward_shaping", 3e-5, [5] * P, lam=0.3)
  swept = _run("rs-1", "reward_shaping", "reward_shaping", 3e-5, [9] * P, lam=1.0)._replace(
      sweep=1)
  rows = records.select_rows([swept, tuned], "multiplication")
  assert rows["Reward shaping"]["run"].name == "rs-0.3"
  assert rows["Reward shaping"]["note"] == "λ=0.3"
  # In one sweep directory the two settings form a grid, and validation chooses.
  rows = records.select_rows([swept._replace(sweep=0), tuned], "multiplication")
  assert rows["Reward shaping"]["run"].name == "rs-1"


def _tested(run, correct, distinct_correct, seeds=2):
  """`run` with a final `test` evaluation: per problem `correct` of SAMPLES right and
  `distinct_correct` distinct correct strategies, on every seed."""
  run.evals[-1]["test"] = _split([correct] * P, seeds, distinct_correct)
  return run


def _lambda_claim(runs, rows, lambdas):
  """The registered frontier claim judged alone, under the rule with these runs'
  100 steps and the λ values `lambdas`: (table lines, judged claim)."""
  [claim] = [c for c in claims.registry.CLAIMS if c.kind == "frontier"]
  rule = dict(claims.registry.RULE, steps=100, seeds=2, lambdas=lambdas, replicates=2000)
  judged = claims.judge(runs, rows, "multiplication", claims=[claim], rule=rule)
  return judged.lambda_lines, judged.claims[0]


def test_the_lambda_claim_judges_every_lambda_against_poly_epo():
  poly = _tested(_run("p", "poly_epo", "set_rl", 1e-4, [8] * P), 10, 3)
  # λ = 0.1 is the comparison's row (first sweep); the λ sweep adds 0.3 and 1.
  trade_off = _tested(_run("rs-0.1", "reward_shaping", "reward_shaping", 1e-4, [9] * P,
                           lam=0.1), 16, 1)     # pass@1 0.5 > 10/32, fewer strategies
  fewer = _tested(_run("rs-0.3", "reward_shaping", "reward_shaping", 1e-4, [9] * P,
                       lam=0.3)._replace(sweep=1), 10, 2)
  other_lr = _tested(_run("rs-3", "reward_shaping", "reward_shaping", 3e-5, [9] * P,
                          lam=3.0)._replace(sweep=1), 10, 3)   # another budget: left out
  runs = [poly, trade_off, fewer, other_lr]
  rows = records.select_rows(runs, "multiplication")
  lines, claim = _lambda_claim(runs, rows, (0.1, 0.3))
  assert [l.split(" | ")[0] for l in lines[2:]] == ["| 0.1 (the comparison's row)", "| 0.3"]
  assert lines[2].endswith("| -0.188 [-0.188, -0.188]: Poly-EPO behind | "
                           "+2.000 [+2.000, +2.000]: Poly-EPO ahead |")
  assert lines[3].endswith("| +0.000 [+0.000, +0.000]: no clear difference | "
                           "+1.000 [+1.000, +1.000]: Poly-EPO ahead |")
  # The curve (0.5, 1) - (0.3125, 2) reaches Poly-EPO's pass@1 10/32 with at most
  # 2 strategies: F = 3 - 2 = 1 on every replicate, above 0.
  assert claim.verdict == "holds" and claim.lines[0].endswith("→ **holds**")
  assert "F = Poly-EPO − curve +1.000 [+1.000, +1.000]" in claim.lines[0]
  assert "(λ = 0.1, 0.3)" in claim.statement   # stated over the λ values tried
  # summary.json's entry: each λ's two differences, as in the table.
  entry = claim.to_json()
  assert entry["id"] == "no_lambda" and entry["definition"]["kind"] == "frontier"
  assert [e["lam"] for e in entry["per_lambda"]] == [0.1, 0.3]
  assert entry["per_lambda"][0]["comparison_row"] and not entry["per_lambda"][1]["comparison_row"]
  assert entry["per_lambda"][0]["pass@1"] == {
      "difference": {"mean": -0.1875, "ci_low": -0.1875, "ci_high": -0.1875},
      "side": "Poly-EPO behind"}
  assert entry["per_lambda"][1]["distinct_correct"]["side"] == "Poly-EPO ahead"
  assert entry["difference"] == {"mean": 1.0, "ci_low": 1.0, "ci_high": 1.0}
  # A registered λ that matches Poly-EPO on both: F = 3 - 3 = 0 < 0 + 0.25, refuted.
  level = _tested(_run("rs-1", "reward_shaping", "reward_shaping", 1e-4, [9] * P,
                       lam=1.0)._replace(sweep=1), 10, 3)
  _, claim = _lambda_claim(runs + [level], rows, (0.1, 0.3, 1.0))
  assert claim.verdict == "refuted" and claim.details["curve_height"] == 3.0
  assert claim.lines[0].endswith("→ **refuted**")
  # A registered λ that did not run leaves the claim not evaluated: "beyond the
  # curve" is stated over the λ values tried, all of them.
  lines, claim = _lambda_claim(runs, rows, (0.1, 0.3, 1.0))
  assert claim.verdict == "not evaluated" and "λ = 1 did not run" in claim.lines[0]
  # One seed is not judged; no Poly-EPO row is not evaluated.
  one_seed = _tested(_run("rs-1", "reward_shaping", "reward_shaping", 1e-4, [9] * P,
                          lam=1.0)._replace(sweep=1), 10, 3, seeds=1)
  single = [_tested(_run("p1", "poly_epo", "set_rl", 1e-4, [8] * P), 10, 3, seeds=1),
            _tested(_run("r1", "reward_shaping", "reward_shaping", 1e-4, [9] * P,
                         lam=0.1), 16, 1, seeds=1), one_seed]
  _, claim = _lambda_claim(single, records.select_rows(single, "multiplication"), (0.1, 1.0))
  assert claim.verdict == "not judged" and "not judged" in claim.lines[0]
  lines, claim = _lambda_claim(runs[1:], records.select_rows(runs[1:], "multiplication"),
                               (0.1, 0.3))
  assert lines == [] and claim.verdict == "not evaluated" and "no Poly-EPO row" in claim.lines[0]


def test_the_lambda_plot_draws_only_the_domains_where_lambda_was_swept(tmp_path):
  from experiments.analysis import plots
  import matplotlib.image
  poly = _tested(_run("p", "poly_epo", "set_rl", 1e-4, [8] * P), 10, 3)
  shaping = [_tested(_run(f"rs-{lam}", "reward_shaping", "reward_shaping", 1e-4, [9] * P,
                          lam=lam)._replace(sweep=i), 16 - 4 * i, 1 + i) for i, lam in
             enumerate((0.1, 1.0))]
  other = _tested(_run("g", "grpo", "grpo", 1e-5, [8] * P, domain="polynomial_roots"), 12, 1)
  both = str(tmp_path / "both.png")
  assert plots.plot_shaping_lambda([poly, *shaping, other], ["multiplication",
                                                            "polynomial_roots"], both)
  one = str(tmp_path / "one.png")
  assert plots.plot_shaping_lambda([poly, *shaping], ["multiplication"], one)
  # One row of panels either way: the domain without a λ sweep draws none.
  assert matplotlib.image.imread(both).shape == matplotlib.image.imread(one).shape
  assert not plots.plot_shaping_lambda([poly, shaping[0], other],
                                       ["multiplication", "polynomial_roots"], both)


def test_load_runs_numbers_the_sweep_directories(tmp_path):
  for sweep_dir, name in (("final", "rs-0.3"), ("lambda", "rs-1")):
    workdir = tmp_path / sweep_dir / "runs" / name
    workdir.mkdir(parents=True)
    run = _run(name, "reward_shaping", "reward_shaping", 3e-5, [5] * P)
    (workdir / "config.json").write_text(json.dumps(run.config))
    (workdir / "eval.jsonl").write_text("".join(json.dumps(e) + "\n" for e in run.evals))
  runs = records.load_runs([str(tmp_path / "final"), str(tmp_path / "lambda")])
  assert [(r.name, r.sweep) for r in runs] == [("rs-0.3", 0), ("rs-1", 1)]


def test_the_base_row_comes_from_a_run_that_evaluated_step_0():
  grpo = _run("g", "grpo", "grpo", 3e-5, [4] * P, splits=("validation", "test"))
  poly = _run("p", "poly_epo", "set_rl", 3e-5, [5] * P, splits=("validation", "test"))
  grpo.evals.pop(0)   # run.eval_at_start=False: no step-0 evaluation
  rows = records.select_rows([grpo, poly], "multiplication")
  assert rows["Base"]["run"].name == "p" and rows["Base"]["record"]["step"] == 0
  poly.evals.pop(0)
  assert "Base" not in records.select_rows([grpo, poly], "multiplication")
  with pytest.raises(ValueError, match="No complete multiplication run evaluated the base "
                                       r"model at step 0 \(run.eval_at_start\)"):
    report.markdown([grpo, poly], [])


def _grid():
  return [_run("g1", "grpo", "grpo", 1e-5, [4] * P), _run("g2", "grpo", "grpo", 3e-5, [6] * P),
          _run("rs1", "reward_shaping", "reward_shaping", 1e-4, [9] * P, lam=1.0),
          _run("rs2", "reward_shaping", "reward_shaping", 1e-4, [3] * P, lam=0.1),
          _run("pe1", "poly_epo", "set_rl", 3e-5, [5] * P, set_size=8, normalize=False),
          _run("pe2", "poly_epo", "set_rl", 3e-5, [2] * P),
          _run("co", "poly_epo", "set_rl", 1e-5, [1] * P, objective="polychromic_correct_only")]


def _inside_grid():
  """_grid() with runs on either side of each choice's learning rate, doing worse."""
  return _grid() + [
      _run("g3", "grpo", "grpo", 1e-4, [5] * P),
      _run("rs0", "reward_shaping", "reward_shaping", 3e-5, [2] * P, lam=1.0),
      _run("rs3", "reward_shaping", "reward_shaping", 3e-4, [2] * P, lam=1.0),
      _run("pe0", "poly_epo", "set_rl", 1e-5, [1] * P, set_size=8, normalize=False),
      _run("pe3", "poly_epo", "set_rl", 1e-4, [1] * P, set_size=8, normalize=False),
      _run("co0", "poly_epo", "set_rl", 3e-6, [0] * P, objective="polychromic_correct_only"),
      _run("co3", "poly_epo", "set_rl", 3e-5, [0] * P, objective="polychromic_correct_only")]


def test_chosen_settings_reproduce_the_runs():
  chosen = tuning.chosen(_inside_grid())["multiplication"]
  assert chosen["grpo"] == {"config_file": "configs/grpo.py", "run": "g2", "criterion": 0.1875,
                            "overrides": {"train.learning_rate": 3e-5}}
  assert chosen["reward_shaping"]["overrides"] == {"train.learning_rate": 1e-4,
                                                   "algorithm.lam": 1.0}
  # normalize_over is missing from these records (written before it existed): the
  # value they trained with, the default, fills in.
  assert chosen["poly_epo"]["overrides"] == {
      "train.learning_rate": 3e-5, "algorithm.set_size": 8, "algorithm.normalize": False,
      "algorithm.normalize_over": "prompt", "algorithm.objective": "polychromic"}
  assert chosen["poly_epo_correct_only"]["overrides"]["algorithm.objective"] == \
      "polychromic_correct_only"
  assert chosen["poly_epo_correct_only"]["config_file"] == "configs/poly_epo.py"


def test_tuning_table_marks_the_choice():
  text = tuning.markdown(_grid(), [])
  section = text.split("## Multiplication — Reward shaping")[1].split("##")[0]
  rows = [l for l in section.splitlines() if l.startswith("| lr=")]
  assert len(rows) == 2
  assert rows[0].startswith("| lr=0.0001, λ=0.1 | 2 | 100 | 0.094") and rows[0].endswith("|  |")
  assert rows[1].startswith("| lr=0.0001, λ=1 | 2 | 100 | 0.281") and rows[1].endswith("| ✓ |")


def _write(run, sweep_dir):
  workdir = os.path.join(sweep_dir, "runs", run.name)
  os.makedirs(workdir)
  with open(os.path.join(workdir, "config.json"), "w") as f:
    json.dump(run.config, f)
  with open(os.path.join(workdir, "eval.jsonl"), "w") as f:
    f.writelines(json.dumps(r) + "\n" for r in run.evals)


def test_tuning_files_feed_the_final_and_lambda_sweeps(tmp_path):
  sweep_dir = str(tmp_path / "tuning")
  for run in _inside_grid():
    _write(run, sweep_dir)
  written = tuning.write_tuning([sweep_dir], str(tmp_path / "out"))
  chosen_path = str(tmp_path / "out" / "chosen.json")
  assert chosen_path in written
  again = tuning.write_tuning([sweep_dir], str(tmp_path / "again"))
  assert open(again[1]).read() == open(chosen_path).read()   # byte-stable
  assert "Partial" not in open(written[0]).read()
  # A sweep whose manifest plans a run that has not finished says so.
  with open(os.path.join(sweep_dir, "sweep.json"), "w") as f:
    json.dump({"runs": [{"name": r.name} for r in _inside_grid()] + [{"name": "g4"}]}, f)
  partial = tuning.write_tuning([sweep_dir], str(tmp_path / "partial"))
  assert "**Partial: 1 planned run(s) have not finished**, so a choice below may still " \
         "change (chosen.json marks it provisional): g4." in open(partial[0]).read()
  # ... and its chosen.json is provisional: the final and λ sweeps refuse it unless told.
  assert all(entry["unfinished_tuning_runs"] == ["g4"]
             for entry in json.load(open(partial[1]))["multiplication"].values())
  for sweep_file in ("final.py", "shaping_lambda.py"):
    with pytest.raises(ValueError, match=r"provisional for 'multiplication': 1 tuning run\(s\) "
                                         r"had not finished \(g4\)"):
      sweep.load_sweep(f"configs/sweeps/{sweep_file}:domains=multiplication,chosen={partial[1]}")
    assert sweep.load_sweep(f"configs/sweeps/{sweep_file}:domains=multiplication,"
                            f"chosen={partial[1]},provisional=true")
  with pytest.raises(ValueError, match="provisional"):
    sweep.load_sweep(f"configs/sweeps/tuning.py:domains=multiplication,extend={partial[1]}")
  # Every choice is inside its grid: nothing to extend.
  with pytest.raises(ValueError, match="every choice of multiplication is inside its grid"):
    sweep.load_sweep(f"configs/sweeps/tuning.py:domains=multiplication,extend={chosen_path}")
  # The final sweep trains exactly the chosen settings, with fresh seeds, each row in
  # runs of 5 seeds (seed blocks) that together hold the registered number.
  final = sweep.load_sweep(f"configs/sweeps/final.py:domains=multiplication,chosen={chosen_path}")
  chosen = json.load(open(chosen_path))["multiplication"]
  rule = claims.registry.RULE
  rows = {}
  for run in final:
    key = next(k for k, e in chosen.items() if e["config_file"] == run.config_file
               and all(run.overrides.get(k) == v for k, v in e["overrides"].items()))
    rows.setdefault(key, []).append(run)
    assert run.overrides["run.num_seeds"] == rule["seeds"] == 5
    assert run.overrides["train.num_steps"] == rule["steps"] == 300
    assert run.overrides["run.eval_num_problems"] == rule["eval_problems"] == datasets.SPLIT_SIZE
    assert run.overrides["run.eval_at_start"] == (run.config_file == "configs/grpo.py")
  assert sorted(rows) == sorted(chosen) and len(chosen) == 4
  for key, runs in rows.items():
    # The registered size: a row a primary claim compares (GRPO, Poly-EPO) gets the
    # primary rows' seeds, reward shaping and the ablation the others'.
    primary = key in ("grpo", "poly_epo")
    seeds = [s for r in runs for s in range(r.overrides["run.seed"],
                                             r.overrides["run.seed"] + 5)]
    assert seeds == list(range(final_sweep.FIRST_SEED, final_sweep.FIRST_SEED + len(seeds)))
    assert len(seeds) == (rule["seeds_primary"] if primary else rule["seeds"])
    assert {json.dumps({k: v for k, v in r.overrides.items() if k != "run.seed"},
                       sort_keys=True) for r in runs} == {json.dumps(
                           {k: v for k, v in runs[0].overrides.items() if k != "run.seed"},
                           sort_keys=True)}   # the blocks differ in their seeds alone
  assert rule["seeds_primary"] >= 15 and rule["seeds"] >= 5
  assert final_sweep.FIRST_SEED >= claims.registry.TUNING["seeds"]   # fresh seeds
  # Every row's first block, then every second block, ...: a sweep stopped early
  # leaves each row with as many seeds as it can.
  first_seeds = [r.overrides["run.seed"] for r in final]
  assert first_seeds == sorted(first_seeds)
  assert len(final) == 2 + 2 * rule["seeds_primary"] // 5 and first_seeds[:4] == [100] * 4
  # block=0 trains each row as one run of all its seeds.
  whole = sweep.load_sweep(f"configs/sweeps/final.py:domains=multiplication,"
                           f"chosen={chosen_path},block=0")
  assert sorted(r.overrides["run.num_seeds"] for r in whole) == sorted(
      [rule["seeds"]] * 2 + [rule["seeds_primary"]] * 2)
  with pytest.raises(ValueError, match="has no domain 'polynomial_roots'"):
    sweep.load_sweep(f"configs/sweeps/final.py:domains=polynomial_roots,chosen={chosen_path}")
  # At size=smoke (4 samples per prompt) every chosen set size still fits: the runs
  # keep n and sample 2n responses.
  for sweep_arg in (f"final.py:domains=multiplication,chosen={chosen_path},size=smoke",
                    "set_size.py:domains=multiplication,size=smoke"):
    smoke = sweep.load_sweep(f"configs/sweeps/{sweep_arg}")   # checks every run's config
    sizes = [(r.overrides["algorithm.set_size"], r.overrides["train.samples_per_prompt"])
             for r in smoke if "algorithm.set_size" in r.overrides]
    assert sizes and all(N == max(4, 2 * n) for n, N in sizes), sweep_arg
    assert 8 in {n for n, _ in sizes}, sweep_arg   # the smoke preset's N = 4 could not hold it
  # ... and a primary row trains as few seeds as the others: the flow in minutes.
  smoke_final = sweep.load_sweep(f"configs/sweeps/final.py:domains=multiplication,"
                                 f"chosen={chosen_path},size=smoke,block=0")
  assert [r.overrides["run.num_seeds"] for r in smoke_final] == [rule["seeds"]] * len(chosen)
  assert sorted(r.overrides["run.num_seeds"] for r in sweep.load_sweep(
      f"configs/sweeps/final.py:domains=multiplication,chosen={chosen_path},size=smoke,"
      "block=0,seeds_primary=7")) == [rule["seeds"], rule["seeds"], 7, 7]
  # The λ sweep runs the registered λs but the chosen one, as the final comparison
  # runs reward shaping.
  lam_runs = sweep.load_sweep("configs/sweeps/shaping_lambda.py:domains=multiplication,"
                              f"chosen={chosen_path}")
  rs_final = next(r for r in final if r.config_file == "configs/reward_shaping.py")
  assert [r.overrides["algorithm.lam"] for r in lam_runs] == [0.1, 0.3, 3.0]   # 1.0 was chosen
  assert claims.registry.RULE["lambdas"] == (0.1, 0.3, 1.0, 3.0)
  for run in lam_runs:
    assert {k: v for k, v in run.overrides.items() if k != "algorithm.lam"} == \
        {k: v for k, v in rs_final.overrides.items() if k != "algorithm.lam"}
    assert not run.overrides["run.eval_at_start"]
  # The recipe sweep runs Poly-EPO's final setting with one release setting each, but
  # the one it has (no standardisation) and N = 8, which cannot hold its set size n = 8.
  poly_epo = rows["poly_epo"][0].overrides
  assert poly_epo["algorithm.set_size"] == 8 and not poly_epo["algorithm.normalize"]
  with pytest.warns(UserWarning, match="set size n = 8 does not fit the release's N = 8"):
    recipe_runs = sweep.load_sweep(f"configs/sweeps/recipe.py:domains=multiplication,"
                                   f"chosen={chosen_path}")
  changes = [{k: v for k, v in run.overrides.items() if poly_epo.get(k) != v}
             for run in recipe_runs]
  assert changes == [{"train.aggregation": "sequence_sum"}, {"train.grad_clip": 0.3}]


def test_seed_blocks_split_a_row_s_seeds_without_a_gap_or_an_overlap():
  row = {"run.seed": 100, "run.num_seeds": 12, "train.learning_rate": 3e-5}
  blocks = final_sweep.seed_blocks(row, 5)
  assert [(b["run.seed"], b["run.num_seeds"]) for b in blocks] == [(100, 5), (105, 5), (110, 2)]
  assert all(b["train.learning_rate"] == 3e-5 for b in blocks)
  assert final_sweep.seed_blocks(row, 0) == final_sweep.seed_blocks(row, 12) == [row]
  with pytest.raises(ValueError, match="block=-1: the seeds per run must be >= 1"):
    final_sweep.seed_blocks(row, -1)


def test_an_older_chosen_json_feeds_the_final_sweep_in_today_s_keys(tmp_path):
  """A chosen.json written before the algorithms' knobs moved (train.set_size,
  train.lam, ...) trains the same final runs as today's."""
  sweep_dir = str(tmp_path / "tuning")
  for run in _inside_grid():
    _write(run, sweep_dir)
  _, chosen_path = tuning.write_tuning([sweep_dir], str(tmp_path / "out"))
  chosen = json.load(open(chosen_path))
  old = {domain: {key: dict(entry, overrides={
      k.replace("algorithm.", "train."): v for k, v in entry["overrides"].items()})
                  for key, entry in entries.items()} for domain, entries in chosen.items()}
  assert old["multiplication"]["reward_shaping"]["overrides"] == {
      "train.learning_rate": 1e-4, "train.lam": 1.0}
  old_path = tmp_path / "old.json"
  old_path.write_text(json.dumps(old))
  assert tuning_sweep.read_chosen(str(old_path), "multiplication") == \
      chosen["multiplication"]
  for sweep_file in ("final.py", "shaping_lambda.py"):
    runs = [sweep.load_sweep(f"configs/sweeps/{sweep_file}:domains=multiplication,chosen={path}")
            for path in (chosen_path, old_path)]
    assert runs[0] == runs[1], sweep_file
  assert {"train.set_size", "train.lam"}.isdisjoint(
      k for r in runs[1] for k in r.overrides)


def test_an_edge_choice_is_marked_refused_and_extended(tmp_path):
  # _grid(): GRPO tried 1e-5 and 3e-5 and chose 3e-5, its highest; the others tried
  # one learning rate each.
  sweep_dir = str(tmp_path / "tuning")
  for run in _grid():
    _write(run, sweep_dir)
  _, chosen_path = tuning.write_tuning([sweep_dir], str(tmp_path / "out"))
  chosen = json.load(open(chosen_path))["multiplication"]
  assert {key: entry.get("at_edge") for key, entry in chosen.items()} == {
      "grpo": "highest", "reward_shaping": "only", "poly_epo": "only",
      "poly_epo_correct_only": "only"}
  text = open(tmp_path / "out" / "tuning.md").read()
  assert "| GRPO | 2 | 1e-05, 3e-05 | lr=3e-05 | no, at the highest learning rate: extend |" \
      in text
  # Neither the final nor the λ sweep trains a choice at an edge.
  for sweep_file in ("final.py", "shaping_lambda.py"):
    with pytest.raises(ValueError, match=r"the choices of grpo \(highest\), poly_epo \(only\), "
                                         r"poly_epo_correct_only \(only\), reward_shaping "
                                         r"\(only\) sit at their grid's edge"):
      sweep.load_sweep(f"configs/sweeps/{sweep_file}:domains=multiplication,chosen={chosen_path}")
  # The extension: one step (x or / 3, 2 significant digits) beyond each edge, the
  # rest of the chosen setting kept, the registered seeds and steps.
  runs = sweep.load_sweep(f"configs/sweeps/tuning.py:domains=multiplication,extend={chosen_path}")
  got = sorted((r.config_file, r.overrides.get("algorithm.objective", ""),
                r.overrides["train.learning_rate"]) for r in runs)
  assert got == sorted([("configs/grpo.py", "", 9e-5),
                        ("configs/reward_shaping.py", "", 3.3e-5),
                        ("configs/reward_shaping.py", "", 3e-4),
                        ("configs/poly_epo.py", "polychromic", 1e-5),
                        ("configs/poly_epo.py", "polychromic", 9e-5),
                        ("configs/poly_epo.py", "polychromic_correct_only", 3.3e-6),
                        ("configs/poly_epo.py", "polychromic_correct_only", 3e-5)])
  for run in runs:
    assert run.overrides["run.num_seeds"] == claims.registry.TUNING["seeds"] == 3
    assert run.overrides["train.num_steps"] == claims.registry.TUNING["steps"] == 300
    assert run.overrides["run.eval_splits"] == ("validation",)
  assert {r.overrides["algorithm.lam"] for r in runs if "algorithm.lam" in r.overrides} == {1.0}
  # Once the extension's runs are in, GRPO's choice is inside its grid.
  extended = _grid() + [_run("g3", "grpo", "grpo", 9e-5, [5] * P)]
  assert "at_edge" not in tuning.chosen(extended)["multiplication"]["grpo"]


def test_an_edge_in_words():
  assert tuning_sweep.at_edge(3e-5, [1e-5, 3e-5, 1e-4]) is None
  assert tuning_sweep.at_edge(1e-5, [1e-5, 3e-5]) == "lowest"
  assert tuning_sweep.at_edge(1e-4, [1e-5, 1e-4]) == "highest"
  assert tuning_sweep.at_edge(1e-4, [1e-4]) == "only"
  assert tuning_sweep.beyond(1e-5, "lowest") == (3.3e-6,)
  assert tuning_sweep.beyond(3e-4, "highest") == (9e-4,)
  assert tuning_sweep.beyond(9e-4, "highest") == (2.7e-3,)
  assert tuning_sweep.beyond(1e-4, "only") == (3.3e-5, 3e-4)


def test_unfinished_runs_make_only_their_own_domain_provisional():
  runs = _grid() + [_run("p", "grpo", "grpo", 1e-5, [4] * P, domain="polynomial_roots")]
  pending = [{"name": "late", "config_string": "domain=polynomial_roots,size=default"}]
  choice = tuning.chosen(runs, pending)
  assert all("unfinished_tuning_runs" not in e for e in choice["multiplication"].values())
  assert choice["polynomial_roots"]["grpo"]["unfinished_tuning_runs"] == ["late"]
  # A planned run that names no domain could be any domain's.
  choice = tuning.chosen(runs, [{"name": "anywhere"}])
  assert {tuple(e["unfinished_tuning_runs"]) for d in choice.values() for e in d.values()} == \
      {("anywhere",)}


@pytest.mark.parametrize("value, expected", [("true", True), ("False", False)])
def test_a_boolean_in_a_config_string(value, expected):
  assert choices.parse_arg(f"provisional={value}", provisional=not expected).provisional is expected
  with pytest.raises(ValueError, match="provisional is true or false"):
    choices.parse_arg("provisional=1", provisional=False)


def test_tuning_sweep_follows_the_registered_rule():
  registered = claims.registry.TUNING
  runs = sweep.load_sweep("configs/sweeps/tuning.py:domains=multiplication")
  for run in runs:
    assert run.overrides["run.eval_splits"] == ("validation",)
    assert run.overrides["run.eval_forced_problems"] == 0
    assert run.overrides["train.num_steps"] == registered["steps"] == 300
    assert run.overrides["run.num_seeds"] == registered["seeds"] == 3
  # Every algorithm the claims compare and the two beside them, with the same grid;
  # nothing else varies.
  by_algorithm = {}
  for run in runs:
    config = sweep.build_config(run)
    label = algorithms.label_of(config.algorithm.to_dict(), config.train.to_dict())
    by_algorithm.setdefault(label, []).append(run.overrides["train.learning_rate"])
    assert set(run.overrides) - set(runs[0].overrides) <= {"algorithm.objective"}, run.name
  assert list(by_algorithm) == ["GRPO", "Dr. GRPO", "Reward shaping", "Poly-EPO",
                                "Poly-EPO (as released)", "Poly-EPO (correct-only diversity)",
                                "Poly-EPO (windowed)", "PPO", "Poly-PPO"]
  assert set(by_algorithm) == (set(claims.registry.rows()) - {"Base"}) | {
      "Dr. GRPO", "Poly-EPO (as released)"}
  assert all(lrs == [1e-5, 3e-5, 1e-4] == list(registered["learning_rates"])
             for lrs in by_algorithm.values())
  assert len(runs) == 9 * 3
  # only= tunes the rows named by key alone, with the same grid and run settings.
  added = sweep.load_sweep("configs/sweeps/tuning.py:domains=multiplication,"
                           "only=poly_epo_official+dr_grpo")
  assert [(r.config_file, r.overrides["train.learning_rate"]) for r in added] == [
      (f"configs/{name}.py", lr) for name in ("dr_grpo", "poly_epo_official")
      for lr in registered["learning_rates"]]
  assert added == [r for r in runs if r.config_file in ("configs/dr_grpo.py",
                                                        "configs/poly_epo_official.py")]
  with pytest.raises(ValueError, match=r"only='grpo\+ppx': 'ppx' not among the tuned"):
    sweep.load_sweep("configs/sweeps/tuning.py:only=grpo+ppx")
  with pytest.raises(ValueError, match="only= and extend= cannot be combined"):
    sweep.load_sweep("configs/sweeps/tuning.py:only=grpo,extend=chosen.json")
  with pytest.raises(ValueError, match="Unknown config string key 'stage'"):
    sweep.load_sweep("configs/sweeps/tuning.py:stage=knobs")
  with pytest.raises(ValueError, match="chosen=PATH is empty"):
    tuning_sweep.read_chosen("", "multiplication")


def test_knob_defaults_are_the_factories_defaults():
  """A run recorded before a knob existed trained with its factory's default, in
  every algorithm that has the knob."""
  for knob, value in algorithms.KNOB_DEFAULTS.items():
    having = [a for a in algorithms.ALGORITHMS if knob in a.knobs]
    assert having, knob
    for a in having:
      assert algorithms.flat(algorithms_lib.spec(a.algorithm["name"]))[knob] == value, a.label


def test_a_setting_in_words():
  assert records.describe({"train.learning_rate": 3e-5, "algorithm.lam": 0.3}) == \
      "lr=3e-05, λ=0.3"
  poly = {"train.learning_rate": 1e-4, "algorithm.set_size": 8, "algorithm.normalize": True,
          "algorithm.normalize_over": "batch", "algorithm.objective": "polychromic"}
  assert records.describe(poly) == "lr=0.0001, n=8, normalize=batch"
  assert records.describe(dict(poly, **{"algorithm.normalize": False})) == \
      "lr=0.0001, n=8, normalize=none"
  assert records.describe({"train.learning_rate": 1e-5, "algorithm.normalize": True}) == \
      "lr=1e-05, normalize=prompt"   # a record from before normalize_over
  windowed = {"train.learning_rate": 3e-5, "algorithm.first.set_size": 4,
              "algorithm.first.normalize": True, "algorithm.first.objective": "polychromic"}
  assert records.describe(windowed) == "lr=3e-05, n=4, normalize=prompt"


def test_committed_tuning_regenerates_determinism_check(tmp_path):
  """results/tuning's tuning.md and chosen.json, byte for byte from its archived sweeps
  (each domain's grid and the rounds that extended it)."""
  found = dict(committed("tuning.md"))
  if "results/tuning" not in found:
    pytest.skip("no committed tuning")
  tuning.write_tuning(found["results/tuning"], str(tmp_path))
  for name in ("tuning.md", "chosen.json"):
    assert (tmp_path / name).read_text() == \
        open(os.path.join(ROOT, "results", "tuning", name)).read(), name


def test_committed_choices_are_inside_their_grids():
  """The registered rule's end state, recomputed from the archived runs: each
  algorithm's choice in each domain is its best final validation pass@1 among the
  learning rates it tried, and some rate it tried lies below it and some above."""
  found = dict(committed("tuning.md"))
  if "results/tuning" not in found:
    pytest.skip("no committed tuning")
  with open(os.path.join(ROOT, "results", "tuning", "chosen.json")) as f:
    chosen = json.load(f)
  runs = records.load_runs(found["results/tuning"])
  labels = {a.key: a.label for a in tuning_sweep.ALGORITHMS}
  # Rows added after the committed tuning: in its chosen.json once `only=` has tuned them.
  added = {"dr_grpo", "poly_epo_official"}
  assert sorted(chosen) == ["multiplication", "polynomial_roots"]
  for domain, entries in chosen.items():
    assert set(labels) - added <= set(entries) <= set(labels), domain   # every one tuned
    for key, entry in entries.items():
      mine = [r for r in runs if r.domain == domain and r.algorithm == labels[key]]
      scores = {r.config["train"]["learning_rate"]:
                float(np.mean([s["pass_at_k"]["1"] for s in r.evals[-1]["validation"]["seeds"]]))
                for r in mine}
      lr = entry["overrides"]["train.learning_rate"]
      assert min(scores) < lr < max(scores), (domain, key, sorted(scores))
      assert scores[lr] == max(scores.values()), (domain, key, scores)
