"""The per-problem values a report reads from the eval records (experiments.records),
on constructed records."""

import numpy as np
import pytest

from experiments import records


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
