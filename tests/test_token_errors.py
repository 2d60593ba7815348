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
