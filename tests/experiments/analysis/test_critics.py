"""The report's critic table (experiments/analysis/critics.py)."""

import pytest

from experiments.analysis import critics, records
from sweep_dirs import ROOT


def _record(counts_per_seed, num_samples):
  return {"test": {"seeds": [{"num_samples": num_samples, "per_problem": {"num_correct": c}}
                             for c in counts_per_seed]}}


def test_prompt_bound_by_hand():
  # Problems always / never solved: the prompt decides everything.
  assert critics.prompt_bound(_record([[4, 0, 4, 0]], 4)) == pytest.approx(1.0)
  # Two problems at 2 of 4: p̄ = 1/2, total 1/4; within (1/4)·4/3 = 1/3 -> 1 − 4/3.
  assert critics.prompt_bound(_record([[2, 2]], 4)) == pytest.approx(1 - (1 / 3) / (1 / 4))
  # Problems at 3/4 and 1/4: within (3/16)·4/3 = 1/4, total 1/4 -> 0; seeds are averaged.
  assert critics.prompt_bound(_record([[3, 1], [4, 0]], 4)) == pytest.approx(0.5)
  assert critics.prompt_bound(_record([[1, 0]], 1)) is None            # one sample
  assert critics.prompt_bound({"validation": {}}) is None               # no such split


def test_last_steps_mean_reads_the_last_steps_that_logged_the_metric():
  train = [{"step": s, "explained_variance": float(s)} for s in range(1, 101)]
  train.append({"step": 101})
  assert critics.last_steps_mean(train, "explained_variance", last=50) == pytest.approx(75.5)
  assert critics.last_steps_mean(train, "value_loss") is None


def test_critic_table_lists_the_rows_with_a_critic_only():
  directory = f"{ROOT}/results/final/final-multiplication"
  rows = records.select_rows(records.load_runs([directory]), "multiplication")
  lines = critics.critic_table(rows).splitlines()
  assert [line.split(" | ")[0] for line in lines[2:]] == ["| PPO", "| Poly-PPO"]
  ppo, poly_ppo = (line.split(" | ") for line in lines[2:])
  # PPO's critic is read at the prompt, but PPO has no vine states and samples no
  # sets of roots and vines: "–" there. Poly-PPO has all of them.
  assert ppo[2] != "–" and ppo[3] == "–" and ppo[4] == "–"
  assert "–" not in poly_ppo
  assert ppo[-1] == f"{critics.prompt_bound(rows['PPO']['record']):.2f} |"
  assert critics.critic_table({k: v for k, v in rows.items() if k == "GRPO"}) == ""


def test_critic_summary_keys_rows_by_algorithm():
  directory = f"{ROOT}/results/final/final-multiplication"
  rows = records.select_rows(records.load_runs([directory]), "multiplication")
  summary = critics.summary(rows)
  assert sorted(summary) == ["poly_ppo", "ppo"]
  assert summary["ppo"]["explained_variance_root"] is not None
  assert summary["ppo"]["explained_variance_states"] is None    # PPO has no vine states
  assert summary["ppo"]["prompt_bound_test"] == pytest.approx(
      critics.prompt_bound(rows["PPO"]["record"]), abs=1e-4)
  assert critics.section({"GRPO": rows["GRPO"]}, "Multiplication") == []
