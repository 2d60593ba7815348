"""The base-model report's targets (experiments.pretrain.targets) scale with the
domain's strategies and families: hand-worked summaries of a small domain and
of an 8-strategy one."""

import pytest

import envs
from experiments import pretrain as pretrain_entry

ROOTS_FAMILIES = ("factoring", "formula", "shift", "vieta", "root_search", "root_search",
                  "factoring", "shift")  # polynomial_roots' eight, five families
ROOTS = ("factor", "quadratic_formula", "complete_square", "vieta_pairs", "rational_root",
         "integer_scan", "grouping", "depressed_cubic")
ADDITION_FAMILIES = ("place_value", "counting", "counting")  # tests/helpers/addition_env.py
ADDITION = ("split", "jump", "round")


def _summary(names, shares, forced, pass1):
  return {"strategy_share": {**dict(zip(names, shares)), "DEGENERATE": 0.0},
          "forced_accuracy": dict(zip(names, forced)), "pass_at_k": {1: pass1}}


def _met(rows):
  return [ok for _, _, ok in rows]


@pytest.mark.parametrize("domain", envs.NAMES)
def test_the_shipped_domains_keep_their_targets(domain):
  """Both shipped domains have 8 strategies in 5 or more families: 5 competent
  strategies from 3 families, 2 rare, 1 very rare, as before the targets scaled."""
  families = envs.make(domain)[0].strategy_families
  assert len(families) == 8 and len(set(families)) >= 5
  rows = pretrain_entry.targets(_summary(range(8), [1 / 8] * 8, [0.0] * 8, 0.3), families)
  assert [target for target, _, _ in rows] == [
      "competent: >= 5 strategies, >= 3 families with forced accuracy >= 0.3",
      "skewed: top share >= 40%",
      "skewed: >= 2 strategies used but under 1%",
      "skewed: >= 1 strategy used but under 0.2%",
      "pass@1 in [0.15, 0.6]"]


def test_eight_strategies():
  # Competent (>= 0.3): factor, quadratic_formula, complete_square, rational_root,
  # integer_scan: 5 strategies from factoring, formula, shift, root_search (4).
  forced = [0.9, 0.5, 0.3, 0.29, 0.31, 0.4, None, 0.1]
  # Top 50%; used under 1%: rational_root, integer_scan, grouping (3); under
  # 0.2%: grouping; depressed_cubic never sampled counts as neither.
  shares = [0.5, 0.3, 0.15, 0.035, 0.009, 0.005, 0.001, 0.0]
  rows = pretrain_entry.targets(_summary(ROOTS, shares, forced, 0.3), ROOTS_FAMILIES)
  assert _met(rows) == [True] * 5
  assert rows[0][1] == "5 strategies, 4 families"
  assert rows[2][1] == "rational_root, integer_scan, grouping" and rows[3][1] == "grouping"
  # complete_square at 0.29: 4 competent strategies, one short.
  forced[2] = 0.29
  # grouping at 0.002 is no longer under 0.2%; pass@1 0.61 is above the range.
  shares[6] = 0.002
  rows = pretrain_entry.targets(_summary(ROOTS, shares, forced, 0.61), ROOTS_FAMILIES)
  assert _met(rows) == [False, True, True, False, False]
  assert rows[0][1] == "4 strategies, 3 families" and rows[3][1] == "none"


def test_three_strategies_can_meet_them():
  """S = 3, F = 2: 2 competent strategies from 1 family, 1 strategy used under
  1%, 1 under 0.2%: all met by a model that knows jump and round, prefers jump
  and rarely rounds (the unscaled targets could never be: 5 strategies)."""
  rows = pretrain_entry.targets(
      _summary(ADDITION, [0.0985, 0.9, 0.0015], [0.2, 0.6, 0.35], 0.5), ADDITION_FAMILIES)
  assert [target for target, _, _ in rows][0] == (
      "competent: >= 2 strategies, >= 1 families with forced accuracy >= 0.3")
  assert rows[2][0] == "skewed: >= 1 strategies used but under 1%"
  assert _met(rows) == [True] * 5
  assert (rows[0][1], rows[2][1], rows[3][1]) == ("2 strategies, 1 families", "round", "round")
  # Only jump competent; round at 1.5%: neither rare nor very rare.
  rows = pretrain_entry.targets(
      _summary(ADDITION, [0.085, 0.9, 0.015], [0.2, 0.6, 0.25], 0.5), ADDITION_FAMILIES)
  assert _met(rows) == [False, True, False, False, True]


def test_four_strategies_in_four_families():
  """S = 4, F = 4: ceil(20/8) = 3 strategies from min(3, 2) = 2 families, 2 rare,
  1 very rare."""
  names, families = ("a", "b", "c", "d"), ("A", "B", "C", "D")
  rows = pretrain_entry.targets(
      _summary(names, [0.6, 0.39, 0.009, 0.001], [0.3, 0.3, 0.3, 0.0], 0.2), families)
  assert rows[0][0].startswith("competent: >= 3 strategies, >= 2 families")
  assert _met(rows) == [True] * 5
  rows = pretrain_entry.targets(
      _summary(names, [0.6, 0.38, 0.019, 0.001], [0.3, 0.3, 0.0, 0.0], 0.2), families)
  assert _met(rows) == [False, True, False, True, True]


def test_two_strategies_ask_for_no_tail():
  rows = pretrain_entry.targets(_summary(("a", "b"), [0.7, 0.3], [0.5, 0.5], 0.2), ("A", "B"))
  assert rows[2][0] == "skewed: >= 0 strategies used but under 1%"
  assert _met(rows) == [True] * 5
