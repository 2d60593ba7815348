"""The report's cells and tables on constructed records (experiments.tables).

The bootstrap itself is checked in test_stats.py; here, that the tables feed it
the right per-problem values and print what it says.
"""

from experiments.analysis import stats, tables

P = 16


def _sources_rows(counts_by_label, seeds=3, samples=10):
  """Rows whose test records hold per-problem strategy and correct counts of two
  strategies "u" and "v"; counts_by_label: {label: (u samples, u correct, v
  correct)} per problem (the other samples follow "v")."""
  def record(u, u_correct, v_correct):
    seed = {"num_samples": samples, "per_problem": {
        "num_correct": [u_correct + v_correct] * P, "distinct_correct": [1] * P,
        "strategy_counts": {"u": [u] * P, "v": [samples - u] * P, "DEGENERATE": [0] * P},
        "correct_counts": {"u": [u_correct] * P, "v": [v_correct] * P,
                           "DEGENERATE": [0] * P}}}
    mean = {"strategy_share": {"u": u / samples, "v": 1 - u / samples, "DEGENERATE": 0.0}}
    return {"step": 300, "test": {"mean": mean, "seeds": [seed] * seeds}}
  return {label: {"record": record(*c), "note": ""} for label, c in counts_by_label.items()}


def test_saturated_rates_are_marked():
  assert tables.saturated("pass@32", 0.98) and tables.saturated("pass@1", 0.02)
  assert tables.saturated("majority_vote", 0.995)
  assert not tables.saturated("pass@32", 0.979) and not tables.saturated("pass@1", 0.5)
  assert not tables.saturated("distinct_correct", 1.0)   # a count, not a rate
  assert tables.cell(stats.Interval(0.99, 0.98, 1.0), "pass@64") == \
      "0.990 [0.980, 1.000]†"
  assert tables.cell(stats.Interval(0.5, 0.4, 0.6), "pass@1") == "0.500 [0.400, 0.600]"
  assert tables.cell(None, "pass@1") == "–"


def test_pass_at_1_sources_split_choice_from_execution():
  # GRPO: all 10 samples follow u, 8 right (pass@1 0.8). Poly-EPO: 5 follow u, 3
  # right (accuracy 0.6), 5 follow v, 1 right (0.2): pass@1 0.4, difference -0.4.
  # By hand (a = Poly-EPO, b = GRPO; v's accuracy under GRPO taken from Poly-EPO):
  #   choice:    u (0.5 - 1.0)(0.6 + 0.8)/2 = -0.35;  v (0.5 - 0)(0.2 + 0.2)/2 = +0.10
  #   execution: u (0.6 - 0.8)(0.5 + 1.0)/2 = -0.15;  v 0
  # Every problem and seed is alike, so every interval has zero width.
  table = tables.pass_at_1_sources(_sources_rows({"GRPO": (10, 8, 0), "Poly-EPO": (5, 3, 1)}))
  lines = table.splitlines()
  assert len(lines) == 3
  assert lines[2] == ("| Poly-EPO | -0.400 [-0.400, -0.400] | -0.250 [-0.250, -0.250] | "
                      "-0.150 [-0.150, -0.150] | choice `u` -0.350, execution `u` -0.150, "
                      "choice `v` +0.100 |")
  # No correct counts (older records): no table.
  rows = _sources_rows({"GRPO": (10, 8, 0), "Poly-EPO": (5, 3, 1)})
  for seed in rows["Poly-EPO"]["record"]["test"]["seeds"]:
    seed["per_problem"] = {k: v for k, v in seed["per_problem"].items() if k != "correct_counts"}
  assert tables.pass_at_1_sources(rows) is None
  assert tables.pass_at_1_sources(_sources_rows({"Poly-EPO": (5, 3, 1)})) is None  # no GRPO
