"""The report's statistics and verdicts on constructed values (experiments.report)."""

import numpy as np
import pytest
import scipy.stats

from experiments import report


def test_mean_ci_matches_student_t():
  values = [0.2, 0.5, 0.4]
  mean, half = report.mean_ci(values)
  lo, hi = scipy.stats.t.interval(0.95, df=2, loc=np.mean(values), scale=scipy.stats.sem(values))
  assert mean == pytest.approx(np.mean(values))
  assert half == pytest.approx((hi - lo) / 2, rel=1e-4)
  for n in range(2, 32):
    x = np.arange(n, dtype=float) ** 1.5
    lo, hi = scipy.stats.t.interval(0.95, df=n - 1, loc=x.mean(), scale=scipy.stats.sem(x))
    assert report.mean_ci(x)[1] == pytest.approx((hi - lo) / 2, rel=1e-3)
  assert np.isnan(report.mean_ci([0.3])[1])


# Values [m - d, m, m + d] have mean m and a 95% half-width of t(2) d / sqrt(3)
# = 4.303 d / 1.732 = 2.484 d.
HALF = 4.303 / np.sqrt(3)


def _three(mean, spread):
  return [mean - spread, mean, mean + spread]


def test_interval_hand_values():
  lo, hi = report.interval(_three(1.0, 0.1))
  assert lo == pytest.approx(1 - 0.1 * HALF, rel=1e-3) and hi == pytest.approx(1 + 0.1 * HALF, rel=1e-3)
  assert report.interval([0.4]) is None and report.interval([]) is None


@pytest.mark.parametrize("relation,margin", [(">", 0.0), ("<", 0.0), ("within", 0.5),
                                             (">", -10.0), ("<", 10.0)])
def test_one_seed_is_never_judged(relation, margin):
  """A single seed has no interval: never "holds", whatever the gap or margin."""
  for a, b in (([0.9], [0.1]), ([0.1], [0.9]), ([0.5], [0.5]), ([0.9], _three(0.1, 0.01)),
               (_three(0.9, 0.01), [0.1])):
    assert report.judge(a, b, relation, margin) == report.UNJUDGED


def test_overlapping_intervals_never_hold_a_difference():
  a, b = _three(0.60, 0.05), _three(0.50, 0.05)   # intervals ±0.124 overlap
  assert report.judge(a, b, ">") == report.FAILS
  assert report.judge(b, a, "<") == report.FAILS
  a = _three(0.90, 0.01)                            # 0.875..0.925 vs 0.376..0.624
  assert report.judge(a, b, ">") == report.HOLDS and report.judge(b, a, "<") == report.HOLDS
  assert report.judge(a, b, "<") == report.FAILS


def test_margins_apply_to_the_whole_intervals():
  a, b = _three(5.0, 0.1), _three(2.5, 0.1)         # a - b ranges over 2.5 ± 0.497
  assert report.judge(a, b, ">", 2.0) == report.HOLDS   # 2.003 > 2
  assert report.judge(a, b, ">", 2.1) == report.FAILS
  assert report.judge(b, a, ">", -3.0) == report.HOLDS  # b - a >= -2.997
  assert report.judge(a, b, "within", 3.0) == report.HOLDS
  assert report.judge(a, b, "within", 2.9) == report.FAILS  # 2.997 > 2.9
  # Equal means, wide intervals: "within" a small margin fails.
  assert report.judge(_three(0.5, 0.05), _three(0.5, 0.05), "within", 0.03) == report.FAILS
  assert report.judge(_three(0.5, 0.001), _three(0.5, 0.001), "within", 0.03) == report.HOLDS
  with pytest.raises(ValueError, match="relation must be one of"):
    report.judge(a, b, ">=")


def _rows(seeds):
  """Rows Base / GRPO / Poly-EPO of one domain from per-seed (dc, pass@1, pass@32) lists."""
  def record(dc, p1, p32):
    per_seed = [{"distinct_correct_strategies": d, "pass_at_k": {"1": x, "32": y}}
                for d, x, y in zip(dc, p1, p32)]
    return {"step": 100, "test": {"seeds": per_seed}, "ood": {"seeds": per_seed}}
  return {label: {"record": record(*values), "note": ""} for label, values in seeds.items()}


def test_claims_from_constructed_records():
  strong = _rows({"Base": (_three(4.8, 0.01), _three(0.60, 0.001), _three(0.90, 0.001)),
                  "GRPO": (_three(1.5, 0.01), _three(0.70, 0.001), _three(0.80, 0.001)),
                  "Poly-EPO": (_three(4.9, 0.01), _three(0.69, 0.001), _three(0.95, 0.001))})
  lines = report.claims(strong)
  assert len(lines) == 6 and all(l.endswith("**holds**") for l in lines), lines
  # The same means from one seed each: nothing is judged.
  one = _rows({label: tuple([v[1]] for v in values) for label, values in
               {"Base": ((4.8,) * 3, (0.6,) * 3, (0.9,) * 3),
                "GRPO": ((1.5,) * 3, (0.7,) * 3, (0.8,) * 3),
                "Poly-EPO": ((4.9,) * 3, (0.69,) * 3, (0.95,) * 3)}.items()})
  lines = report.claims(one)
  assert len(lines) == 6 and all("**not judged**" in l for l in lines), lines
  # Wide intervals: the same means, overlapping intervals, nothing holds.
  wide = _rows({"Base": (_three(4.8, 2.0), _three(0.60, 0.2), _three(0.90, 0.2)),
                "GRPO": (_three(1.5, 2.0), _three(0.70, 0.2), _three(0.80, 0.2)),
                "Poly-EPO": (_three(4.9, 2.0), _three(0.69, 0.2), _three(0.95, 0.2))})
  assert all(l.endswith("**does not hold**") for l in report.claims(wide))
