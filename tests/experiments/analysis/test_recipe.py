"""Poly-EPO's recipe one release setting at a time (experiments.analysis.recipe,
configs/sweeps/recipe.py), on constructed records."""

import pytest

from configs.sweeps import recipe as recipe_sweep
from experiments.analysis import recipe, records


def _run(name, correct, distinct, *, algorithm=None, train=None, sweep=0, label="Poly-EPO",
         steps=300):
  """A complete run whose `test` evaluation has, per seed, `correct[s][p]` of 4
  samples right and `distinct[s][p]` distinct correct strategies on problem p."""
  algorithm = {"name": "set_rl", "objective": "polychromic", "set_size": 4,
               "normalize": True, **(algorithm or {})}
  train = {"num_steps": steps, "learning_rate": 3e-5, "samples_per_prompt": 16,
           "aggregation": "token_mean", "grad_clip": 1.0, **(train or {})}
  config = {"domain": "multiplication", "algorithm": algorithm, "train": train,
            "run": {"eval_num_problems": 3, "eval_num_samples": 4, "eval_splits": ["test"]}}
  seeds = [{"num_samples": 4, "per_problem": {"num_correct": c, "distinct_correct": d}}
           for c, d in zip(correct, distinct)]
  record = {"step": steps, "test": {"mean": {}, "seeds": seeds}}
  return records.RunRecord(name, "multiplication", label, None, config, [record], [], sweep)


def test_each_single_setting_change_is_set_beside_poly_epo_with_its_difference():
  row = _run("row", [[0, 2, 4], [4, 4, 0]], [[0, 1, 2], [1, 1, 0]])
  n8 = _run("n8", [[4, 4, 4]], [[2, 2, 2]], train={"samples_per_prompt": 8}, sweep=2)
  unnormalised = _run("raw", [[0, 0, 0]], [[0, 0, 0]], algorithm={"normalize": False}, sweep=2)
  two = _run("two", [[0, 0, 0]], [[0, 0, 0]], algorithm={"normalize": False},
             train={"grad_clip": 0.3}, sweep=2)                       # two changes: left out
  shorter = _run("short", [[0, 0, 0]], [[0, 0, 0]], train={"grad_clip": 0.3}, steps=100,
                 sweep=2)                                             # another budget: left out
  released = _run("rel", [[2, 2, 2]], [[1, 1, 1]], label="Poly-EPO (as released)",
                  algorithm={"normalize": False},
                  train={"samples_per_prompt": 8, "aggregation": "sequence_sum"})
  runs = [row, n8, unnormalised, two, shorter, released]
  rows = {"Poly-EPO": {"record": row.evals[-1], "run": row},
          "Poly-EPO (as released)": {"record": released.evals[-1], "run": released}}
  assert [(f, v, r.name) for f, v, r in recipe.steps(runs, rows, "multiplication")] == [
      ("algorithm.normalize", False, "raw"), ("train.samples_per_prompt", 8, "n8")]
  lines = recipe.section(runs, rows, "Multiplication")
  table = [l for l in lines if l.startswith("| ")]
  assert [l.split(" | ")[0] for l in table[1:]] == [
      "| Poly-EPO", "| `algorithm.normalize` = False", "| `train.samples_per_prompt` = 8",
      "| Poly-EPO (as released)"]
  # Poly-EPO's pass@1 is 14/24 and its distinct correct 5/6 (means over seeds and problems).
  entry = recipe.summary(runs, rows)
  assert sorted(entry) == ["algorithm.normalize=False", "poly_epo_official",
                           "train.samples_per_prompt=8"]
  n8_entry = entry["train.samples_per_prompt=8"]
  assert n8_entry["seeds"] == 1
  assert n8_entry["pass@1"]["mean"] == 1.0
  assert n8_entry["pass@1"]["minus_poly_epo"]["mean"] == pytest.approx(1 - 14 / 24, abs=1e-3)
  assert n8_entry["distinct_correct"]["minus_poly_epo"]["mean"] == pytest.approx(2 - 5 / 6,
                                                                                  abs=1e-3)
  assert entry["poly_epo_official"]["pass@1"]["minus_poly_epo"]["mean"] == pytest.approx(
      0.5 - 14 / 24, abs=1e-3)
  # Without a step or the release there is nothing to set beside Poly-EPO.
  alone = {"Poly-EPO": rows["Poly-EPO"]}
  assert recipe.section([row], alone, "Multiplication") == [] == list(recipe.summary([row], alone))


def test_the_recipe_sweep_changes_one_release_setting_per_run():
  """The release differs from Poly-EPO in N, standardisation, aggregation and clip
  (configs/poly_epo_official.py); each run changes one of them."""
  assert recipe_sweep.differences("domain=multiplication,size=default") == {
      "algorithm.normalize": False, "train.aggregation": "sequence_sum",
      "train.grad_clip": 0.3, "train.samples_per_prompt": 8}
