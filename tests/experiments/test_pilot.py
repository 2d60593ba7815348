"""The pilot sweep (configs/sweeps/pilot.py): the rows it trains, on seeds no other
sweep uses, evaluated on every exercise of each split."""

import json
import os
import subprocess
import sys

import pytest

from configs.sweeps import final, pilot
from envs import datasets
from experiments import sweep
import repo

CHOSEN = f"{repo.ROOT}/results/tuning/chosen.json"


def test_the_pilot_trains_grpo_and_poly_epo_at_their_choices_on_every_exercise():
  runs = sweep.load_sweep(f"configs/sweeps/pilot.py:chosen={CHOSEN}")   # checks every config
  chosen = json.load(open(CHOSEN))
  assert [(r.config_file, r.config_string.split(",")[0]) for r in runs] == [
      ("configs/grpo.py", "domain=multiplication"), ("configs/poly_epo.py", "domain=multiplication"),
      ("configs/grpo.py", "domain=polynomial_roots"),
      ("configs/poly_epo.py", "domain=polynomial_roots")]
  for run, key in zip(runs, pilot.KEYS * 2):
    domain = run.config_string.split(",")[0].split("=")[1]
    assert all(run.overrides[k] == v for k, v in chosen[domain][key]["overrides"].items())
    assert run.overrides["run.num_seeds"] == 5 and run.overrides["train.num_steps"] == 300
    assert run.overrides["run.eval_num_problems"] == datasets.SPLIT_SIZE
    assert run.overrides["run.eval_at_start"] == (key == "grpo")   # the base model, once
  # The pilot's seeds are none of tuning's (0..2) nor of a comparison of up to 100 seeds.
  assert pilot.FIRST_SEED >= final.FIRST_SEED + 100
  assert {r.overrides["run.seed"] for r in runs} == {pilot.FIRST_SEED}


def test_the_pilot_runs_at_smoke_size():
  runs = sweep.load_sweep(f"configs/sweeps/pilot.py:domains=polynomial_roots,size=smoke,"
                          f"chosen={CHOSEN},seeds=2")
  assert len(runs) == 2 and all(r.overrides["run.num_seeds"] == 2 for r in runs)


def test_the_committed_pilot_regenerates_from_its_records(tmp_path):
  """results/pilot's power.json and power.txt, byte for byte, from its archived
  sweeps, with the plan its power.json records."""
  pilot_dir = os.path.join(repo.ROOT, "results", "pilot")
  if not os.path.exists(os.path.join(pilot_dir, "power.json")):
    pytest.skip("no committed pilot")
  with open(os.path.join(pilot_dir, "power.json")) as f:
    plan = json.load(f)
  sweeps = sorted(os.path.join(pilot_dir, d) for d in os.listdir(pilot_dir)
                  if os.path.isfile(os.path.join(pilot_dir, d, "sweep.json")))
  assert [os.path.basename(s) for s in sweeps] == ["pilot-v2-multiplication",
                                                   "pilot-v2-polynomial_roots"]
  result = subprocess.run(
      [sys.executable, "-m", "experiments.power", *sweeps, f"--claims={plan['mode']}",
       f"--width={plan['width']}", "--exercises=" + ",".join(map(str, plan["exercises"])),
       "--seeds=" + ",".join(map(str, plan["seeds"])), f"--max_seeds={plan['max_seeds']}",
       f"--max_exercises={plan['max_exercises']}",
       "--count_exercises" if plan["counted"] else "--nocount_exercises", f"--out={tmp_path}"],
      cwd=repo.ROOT, capture_output=True, text=True, timeout=1200,
      env=dict(os.environ, JAX_PLATFORMS="cpu"))
  assert result.returncode == 0, result.stderr[-3000:]
  for name in ("power.json", "power.txt"):
    assert (tmp_path / name).read_text() == open(os.path.join(pilot_dir, name)).read(), name
