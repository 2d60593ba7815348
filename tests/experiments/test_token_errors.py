"""experiments.token_errors: each token's role, and the shares per strategy and role."""

import numpy as np

from experiments import token_errors


def test_roles_of_a_worked_trace():
  # vieta_pairs on x^2 - 5x + 6: S=5,P=6;1+6=7;2+3=5#2,3$
  text = list("S=5,P=6;1+6=7;2+3=5#2,3$")
  roles = token_errors.token_roles(text)
  got = {(i, t): r for i, (t, r) in enumerate(zip(text, roles)) if r != "structure"}
  assert got == {(2, "5"): "result", (6, "6"): "result", (8, "1"): "operand",
                 (10, "6"): "operand", (12, "7"): "result", (14, "2"): "operand",
                 (16, "3"): "operand", (18, "5"): "result", (20, "2"): "answer",
                 (22, "3"): "answer"}
  # A signed number keeps its role through the sign; a comma after `#` ends nothing.
  text = ["f", "1", "=", "-", "1", "2", ";", "#", "-", "2", ",", "3", "$"]
  assert token_errors.token_roles(text) == [
      "structure", "operand", "structure", "result", "result", "result", "structure",
      "structure", "answer", "answer", "structure", "answer", "structure"]


def test_unsure_shares_count_tokens_under_one_half_per_strategy_and_role():
  operand, result, answer = (token_errors.ROLES.index(r) for r in ("operand", "result", "answer"))
  probs = np.array([[0.9, 0.4, 0.2, 0.0], [0.6, 0.3, 0.8, 0.0], [0.1, 0.9, 0.9, 0.9]])
  roles = np.array([[operand, result, result, -1], [operand, result, answer, -1],
                    [operand, operand, answer, answer]])
  strategy = np.array([0, 0, 1])
  shares = token_errors.unsure_shares(probs, roles, strategy, num_strategies=3)
  # Strategy 0: operands 0.9, 0.6 -> 0; results 0.4, 0.2, 0.3 -> 1; answer 0.8 -> 0.
  np.testing.assert_array_equal(shares[0, :3], [0.0, 1.0, 0.0])
  # Strategy 1: operands 0.1, 0.9 -> 1/2; no result; answers 0.9, 0.9 -> 0.
  np.testing.assert_array_equal(shares[1, [operand, answer]], [0.5, 0.0])
  assert np.isnan(shares[1, result]) and np.isnan(shares[2]).all()


def test_result_steps_of_a_worked_trace():
  # vieta_pairs on x^2 - 5x + 6: each result with the text of its step.
  text = list("S=5,P=6;1+6=7;2+3=5#2,3$")
  steps = token_errors.result_steps(text, token_errors.token_roles(text))
  assert [(step, list(at)) for step, at in steps] == [
      ("S=5", [2]), ("P=6", [6]), ("1+6=7", [12]), ("2+3=5", [18])]
  # Multi-token numbers, a step after `#` (none: answers are not results).
  text = ["f", "1", "=", "-", "1", "2", ";", "f", "2", "=", "0", "#", "2", "$"]
  steps = token_errors.result_steps(text, token_errors.token_roles(text))
  assert [(step, list(at)) for step, at in steps] == [("f1=-12", [3, 4, 5]), ("f2=0", [10])]


def test_step_shares_split_results_by_seen_steps():
  # Two demonstrations of strategy 0 and one of strategy 1; strategy 0 has seen `1+6=7`.
  probs = np.array([[0.9, 0.4, 0.3], [0.2, 0.8, 0.6], [0.1, 0.1, 0.9]])
  steps = [[("1+6=7", range(0, 1)), ("2+3=5", range(1, 3))],   # seen 0.9; novel 0.4, 0.3
           [("1+6=7", range(0, 1)), ("4+4=8", range(2, 3))],   # seen 0.2; novel 0.6
           [("1+6=7", range(0, 2))]]                           # strategy 1: novel 0.1, 0.1
  scored = token_errors.Scored(probs, np.zeros((3, 3), np.int32), np.array([0, 0, 1]), steps)
  shares, counts = token_errors.step_shares(scored, [{"1+6=7"}, set(), set()])
  np.testing.assert_array_equal(counts, [[2, 2], [0, 1], [0, 0]])
  np.testing.assert_allclose(shares[0], [1 / 2, 2 / 3])
  assert np.isnan(shares[1, 0]) and shares[1, 1] == 1.0 and np.isnan(shares[2]).all()
