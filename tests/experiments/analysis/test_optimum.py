"""experiments.optimum: the predicted optimum's section of report.md and its entry in
summary.json, on a copy of the tiny sweep (tests/helpers/sweep_dirs.py) whose forced
accuracies are set by hand and whose λ = 1 reward-shaping run is relabelled Poly-EPO,
checked against the applicability of the TFDS `test` problems the evaluation read."""

import json
import os
import shutil

import jax
import numpy as np
import pytest

import envs
from envs import datasets
from experiments.analysis import optimum, records, summary

BASE = {"long_by_b": 0.5, "long_by_a": 0.6, "place_value": 0.3, "round_adjust": 0.9,
        "difference_of_squares": 1.0, "halve_double": 0.7, "factor_out": None,
        "karatsuba": 0.2}
RUN = {"long_by_b": 0.4, "long_by_a": None, "place_value": 0.35, "round_adjust": 0.1,
       "difference_of_squares": 0.8, "halve_double": 0.6, "factor_out": 0.75,
       "karatsuba": 0.05}


def _rewrite(path, edit):
  lines = [edit(json.loads(l)) for l in open(path)]
  with open(path, "w") as f:
    f.writelines(json.dumps(l) + "\n" for l in lines)


def _set_forced(record):
  record["test"]["mean"]["forced_accuracy"] = BASE if record["step"] == 0 else RUN
  return record


@pytest.fixture(scope="module")
def sweep(tiny_sweep, tmp_path_factory):
  """(records.select_rows of the edited copy, its domain, the TFDS data directory)."""
  _, sweep_dir, cache = tiny_sweep
  copy = tmp_path_factory.mktemp("optimum") / "sweep"
  shutil.copytree(sweep_dir, copy)
  _rewrite(copy / "runs" / "grpo-smoke" / "eval.jsonl", _set_forced)
  config_path = copy / "runs" / "reward_shaping-smoke-lam=1.0" / "config.json"
  config = json.loads(config_path.read_text())
  config["algorithm"] = {"name": "set_rl", "objective": "polychromic", "set_size": 2,
                         "num_subsets": 0, "normalize": True, "normalize_over": "prompt"}
  config["label"] = "Poly-EPO"
  config_path.write_text(json.dumps(config))
  runs = records.load_runs([str(copy)])
  return runs, config["domain"], os.path.join(cache, "tfds")


def _applicable(domain, data_dir, num_problems):
  """bool[P, S] of the problems the evaluation read (the built TFDS split)."""
  env, _ = envs.make(domain)
  problems = datasets.load_split(domain, "test", data_dir=data_dir)
  problems = jax.tree.map(lambda x: x[:num_problems], problems)
  return np.asarray(env.applicable(problems)), env.strategy_names


@pytest.mark.slow
def test_mean_reward_row_predicts_each_problems_best_strategy(sweep):
  runs, domain, data_dir = sweep
  rows = records.select_rows(runs, domain)
  record = rows["GRPO"]["record"]["test"]
  num_problems, samples = record["mean"]["num_problems"], record["mean"]["num_samples"]
  applicable, names = _applicable(domain, data_dir, num_problems)
  expected = {}
  for part, forced in (("from_base", BASE), ("from_run", RUN)):
    known = np.array([forced[n] if forced[n] is not None else -1.0 for n in names])
    best = np.max(np.where(applicable, known, 0.0), axis=-1)        # no ties among them
    expected[part] = (best.mean(), np.mean(1 - (1 - best) ** samples))
  measured = np.mean([np.array(s["per_problem"]["num_correct"]) / s["num_samples"]
                      for s in record["seeds"]])
  predicted = optimum.predictions(rows)
  # Which rows: GRPO (standard RL) and the set-RL row, not reward shaping or Base.
  assert list(predicted) == ["GRPO", "Poly-EPO"]
  grpo = predicted["GRPO"]
  assert (grpo["objective"], grpo["set_size"]) == ("mean_reward", 1)
  assert (predicted["Poly-EPO"]["objective"], predicted["Poly-EPO"]["set_size"]) == (
      "polychromic", 2)
  for part, (pass_at_1, distinct) in expected.items():
    assert grpo[part]["pass@1"] == pytest.approx(pass_at_1, abs=1e-6), part
    assert grpo[part]["distinct_correct"] == pytest.approx(distinct, abs=1e-6), part
  # The mean reward's optimum has the highest pass@1 any mixture can have.
  assert predicted["Poly-EPO"]["from_base"]["pass@1"] <= expected["from_base"][0] + 1e-9
  # The report's table and summary.json say the same.
  lines = optimum.section(rows, "Multiplication")
  assert lines[0] == "### Multiplication — the price of diversity, predicted (`test`)"
  row = next(l for l in lines if l.startswith("| GRPO |")).split(" | ")
  assert row[1:3] == ["mean_reward (1)", f"{expected['from_base'][0]:.3f} / "
                      f"{expected['from_run'][0]:.3f} / {measured:.3f}"]
  assert any(l.startswith("| Poly-EPO | polychromic (2) |") for l in lines)
  assert not any(l.startswith("| Reward shaping") for l in lines)
  entry = summary.summary(runs)[domain]["predicted_optimum"]
  assert sorted(entry) == ["grpo", "poly_epo"]
  assert entry["grpo"]["from_base"]["pass@1"] == round(expected["from_base"][0], 4)
  assert entry["grpo"]["measured"]["pass@1"] == round(measured, 4)
  assert entry["grpo"]["measured"]["strategy_share"] == {
      n: round(s, 4) for n, s in record["mean"]["strategy_share"].items()}
  assert entry["poly_epo"]["from_base"]["strategy_share"]["factor_out"] == 0.0  # unknown
  # The price of diversity: Poly-EPO's pass@1 less GRPO's, predicted from the base
  # model (before training), fitted to the runs' forced accuracies, and measured.
  poly = predicted["Poly-EPO"]
  price = {"predicted": poly["from_base"]["pass@1"] - expected["from_base"][0],
           "fitted": poly["from_run"]["pass@1"] - expected["from_run"][0],
           "measured": poly["measured"]["pass@1"] - measured}
  assert optimum.prices(predicted)["Poly-EPO"] == pytest.approx(price, abs=1e-6)
  assert (f"- Poly-EPO: pass@1 − GRPO's predicted from the base model "
          f"{price['predicted']:+.3f}, fitted to the runs {price['fitted']:+.3f}, measured "
          f"{price['measured']:+.3f}.") in lines
  assert entry["poly_epo"]["pass@1_minus_grpo"] == {k: round(v, 4) for k, v in price.items()}
  assert "pass@1_minus_grpo" not in entry["grpo"]


@pytest.mark.slow
def test_no_section_without_a_row_to_predict(sweep):
  runs, domain, _ = sweep
  rows = records.select_rows(runs, domain)
  rows = {k: v for k, v in rows.items() if k in ("Base", "Reward shaping")}
  assert optimum.section(rows, "Multiplication") == []
  assert optimum.summary(rows) == {}
