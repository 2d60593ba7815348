"""The per-problem values a report reads from the eval records (experiments.records),
on constructed records."""

import numpy as np
import pytest

from experiments.analysis import records


def _seed(num_correct, distinct_correct, num_samples=32):
  return {"num_samples": num_samples,
          "per_problem": {"num_correct": list(num_correct),
                          "distinct_correct": list(distinct_correct)}}


def test_per_problem_values_from_a_record():
  record = {"test": {"seeds": [_seed([0, 8, 32], [0, 1, 3]), _seed([4, 4, 4], [1, 1, 1])]}}
  np.testing.assert_allclose(records.per_problem(record, "test", "pass@1"),
                             [[0, 0.25, 1], [0.125, 0.125, 0.125]])
  # pass@32 from 32 samples: 1 iff any sample is correct.
  np.testing.assert_allclose(records.per_problem(record, "test", "pass@32"), [[0, 1, 1], [1, 1, 1]])
  np.testing.assert_allclose(records.per_problem(record, "test", "distinct_correct"),
                             [[0, 1, 3], [1, 1, 1]])
  assert records.per_problem(record, "test", "pass@64") is None        # only 32 samples
  assert records.per_problem(record, "test", "majority_vote") is None  # no answers
  assert records.per_problem(record, "ood", "pass@1") is None          # split absent
  assert records.value(record, "test", "distinct_correct").mean == pytest.approx(7 / 6)


def test_old_records_are_refused_naming_the_key():
  old = records.RunRecord("grpo-x", "multiplication", "GRPO", None, {},
                         [{"step": 0, "test": {"seeds": [{"pass_at_k": {"1": 0.5}}]}}], [])
  with pytest.raises(ValueError, match="'grpo-x'.*step 0.*'test'.*'per_problem'.*rerun with "
                                       "this version"):
    records.require_per_problem([old])


def _run_dir(root, name, config):
  import json  # pylint: disable=g-import-not-at-top
  workdir = root / "runs" / name
  workdir.mkdir(parents=True)
  (workdir / "config.json").write_text(json.dumps(config))
  (workdir / "eval.jsonl").write_text('{"step": 0}\n')


def test_a_run_is_read_under_the_algorithm_and_families_its_config_records(tmp_path):
  """The label and the strategy families come from config.json when it records them
  (the domain here does not exist, so building its env would fail); a run recorded
  before they existed gets them from the algorithm table and from its env. A record
  from before an algorithm's fields moved to config.algorithm (config.train's
  estimator, the label as "algorithm") reads as today's."""
  algorithm = {"name": "set_rl", "objective": "polychromic", "set_size": 4, "normalize": True}
  families = {"a": "x", "b": "x"}
  _run_dir(tmp_path, "new", {"domain": "no_such_domain", "train": {"learning_rate": 3e-5},
                             "algorithm": algorithm, "label": "Mine",
                             "strategy_families": families})
  _run_dir(tmp_path, "unlabelled", {"domain": "multiplication",
                                    "train": {"learning_rate": 3e-5}, "algorithm": algorithm})
  old_train = {"estimator": "set_rl", "objective": "polychromic", "lam": 0.0, "set_size": 4,
               "normalize": True, "learning_rate": 3e-5}
  _run_dir(tmp_path, "old", {"domain": "no_such_domain", "train": old_train,
                             "algorithm": "Mine", "strategy_families": families})
  _run_dir(tmp_path, "older", {"domain": "multiplication", "train": old_train})
  shaping = dict(old_train, estimator="reward_shaping", lam=0.3, set_size=8)
  _run_dir(tmp_path, "shaping", {"domain": "multiplication", "train": shaping})
  new, old, older, shaping, unlabelled = records.load_runs([str(tmp_path)])
  assert (new.algorithm, records.strategy_families(new)) == ("Mine", families)
  assert (old.algorithm, records.strategy_families(old)) == ("Mine", families)
  assert old.config["algorithm"] == algorithm and old.config["train"] == {"learning_rate": 3e-5}
  assert unlabelled.algorithm == older.algorithm == "Poly-EPO"
  assert records.strategy_families(older)["long_by_a"] == "long"
  # The knobs that make a setting, in today's keys, from either layout.
  poly_epo = {"train.learning_rate": 3e-5, "algorithm.set_size": 4, "algorithm.normalize": True,
              "algorithm.normalize_over": "prompt", "algorithm.objective": "polychromic"}
  assert records.setting(unlabelled) == records.setting(older) == poly_epo
  assert (shaping.algorithm, shaping.lam, shaping.config["algorithm"]) == (
      "Reward shaping", 0.3, {"name": "reward_shaping", "lam": 0.3, "normalize": True})
  assert records.setting(shaping) == {"train.learning_rate": 3e-5, "algorithm.lam": 0.3}
