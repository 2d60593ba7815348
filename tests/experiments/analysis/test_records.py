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


def _block(root, name, seed, num_correct, *, lr=3e-5, steps=2, done=True, seconds=60.0):
  """A run directory of a 2-step GRPO run with run.seed `seed` and one seed per
  row of `num_correct` (its test per-problem correct counts of 4 samples)."""
  import json  # pylint: disable=g-import-not-at-top
  workdir = root / "runs" / name
  workdir.mkdir(parents=True)
  config = {"domain": "multiplication", "algorithm": {"name": "grpo"}, "label": "GRPO",
            "train": {"learning_rate": lr, "num_steps": steps},
            "run": {"seed": seed, "num_seeds": len(num_correct), "eval_at_start": True}}
  (workdir / "config.json").write_text(json.dumps(config))
  seeds = [{"num_samples": 4, "pass_at_k": {"1": sum(c) / (4 * len(c))},
            "per_problem": {"num_correct": list(c)}} for c in num_correct]
  test = {"mean": {"num_samples": 4}, "seeds": seeds,
          "seconds": {"sampling": seconds, "forced": 1.0}}
  evals = [{"step": 0, "test": test}] + ([{"step": steps, "test": test}] if done else [])
  (workdir / "eval.jsonl").write_text("".join(json.dumps(e) + "\n" for e in evals))
  train = [{"step": t + 1, "reward": 0.0, "reward/seeds": [0.1 * seed + t] * len(num_correct),
            "seconds_per_step": seconds} for t in range(steps if done else 1)]
  (workdir / "train.jsonl").write_text("".join(json.dumps(r) + "\n" for r in train))


def test_the_finished_seed_blocks_of_a_setting_join_into_one_run(tmp_path):
  """Runs of one setting that differ only in their seeds are one row: every seed's
  values in seed order, the means over all of them, the times summed; an
  unfinished block and another setting stay runs of their own."""
  from experiments.analysis import archive  # pylint: disable=g-import-not-at-top
  _block(tmp_path, "b-seed=102", 102, [[4, 4]], seconds=30.0)
  _block(tmp_path, "a-seed=100", 100, [[0, 1], [2, 3]])
  _block(tmp_path, "c-seed=103", 103, [[1, 1]], done=False)
  _block(tmp_path, "d-lr", 100, [[0, 0]], lr=1e-4)
  joined, unfinished, other = records.load_runs([str(tmp_path)])
  assert joined.name == "a-seed=100" and joined.blocks == ("a-seed=100", "b-seed=102")
  assert (unfinished.name, unfinished.blocks, records.is_complete(unfinished)) == (
      "c-seed=103", (), False)
  assert (other.name, other.blocks) == ("d-lr", ())
  assert joined.config["run"]["num_seeds"] == 3
  assert joined.config["run"]["seed_blocks"] == [[100, 2], [102, 1]]
  for record in joined.evals:
    np.testing.assert_allclose(records.per_problem(record, "test", "pass@1"),
                               [[0, 0.25], [0.5, 0.75], [1, 1]])
    # pass@1 per seed 1/8, 5/8, 1: the mean over three seeds, not over two blocks.
    assert record["test"]["mean"]["pass_at_k"]["1"] == pytest.approx((1 / 8 + 5 / 8 + 1) / 3)
    assert record["test"]["mean"]["num_samples"] == 4
    assert record["test"]["seconds"] == {"sampling": 60.0 + 30.0, "forced": 2.0}
  assert [r["step"] for r in joined.train] == [1, 2]
  assert joined.train[1]["reward/seeds"] == pytest.approx([11.0, 11.0, 11.2])
  assert joined.train[1]["reward"] == pytest.approx((11.0 + 11.0 + 11.2) / 3)
  assert joined.train[1]["seconds_per_step"] == 60.0 + 30.0
  # A report counts the joined blocks as done and the unfinished one as not.
  assert [r["name"] for r in archive.unfinished([joined, unfinished, other], [])] == [
      "c-seed=103"]


def test_seed_blocks_with_a_seed_in_common_are_refused(tmp_path):
  _block(tmp_path, "a", 100, [[0, 1], [2, 3]])
  _block(tmp_path, "b", 101, [[4, 4]])
  with pytest.raises(ValueError, match="'a' and 'b' are one setting with overlapping seeds "
                                       r"\(100..101 and 101..101\)"):
    records.load_runs([str(tmp_path)])
