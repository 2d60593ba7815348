"""docs/adding-an-algorithm.md's worked example end to end: RLOO, one factory in a
module of its own (tests/helpers/rloo_algorithm.py) with a knob of its own
(`leave_out`, set on each run's command line as --config.algorithm.leave_out=...) and
one config (tests/helpers/rloo.py), runs through `experiments.sweep` (hence
`experiments.synthetic`) and `experiments.report` with no edit to the repository."""

import json
import os
import subprocess
import sys

import pytest

import envs
import sweep_dirs


@pytest.mark.slow  # two size=smoke runs on the shipped base model, then the report
def test_a_new_algorithm_with_its_own_knob_runs_through_a_sweep_and_the_report(tmp_path):
  env = sweep_dirs.env(str(tmp_path / "cache"))
  env["PYTHONPATH"] = os.pathsep.join(filter(None, [os.path.join(sweep_dirs.ROOT, "tests", "helpers"),
                                                    env.get("PYTHONPATH")]))
  run = lambda *args: subprocess.run([sys.executable, "-m", *args], cwd=sweep_dirs.ROOT,
                                     env=env, capture_output=True, text=True, timeout=1200)
  sweep_dir = tmp_path / "rloo"
  done = run("experiments.sweep", "--sweep=tests/helpers/rloo_sweep.py", f"--sweep_dir={sweep_dir}",
             "--parallel=2")
  assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
  runs = sorted(os.listdir(sweep_dir / "runs"))
  assert len(runs) == 2 and all(r.startswith("rloo-multiplication") for r in runs), runs
  leave_out = {}
  for name in runs:
    config = json.load(open(sweep_dir / "runs" / name / "config.json"))
    assert config["algorithm"]["name"] == "rloo_algorithm:rloo"
    leave_out[name] = config["algorithm"]["leave_out"]
    assert config["label"] == "rloo_algorithm:rloo"   # the label of an unlisted algorithm
    assert list(config["strategy_families"]) == list(envs.make("multiplication")[0].strategy_names)
    evals = [json.loads(line) for line in open(sweep_dir / "runs" / name / "eval.jsonl")]
    assert evals[-1]["step"] == config["train"]["num_steps"]
  assert leave_out == {"rloo-multiplication-smoke-leave_out=False": False,
                       "rloo-multiplication-smoke-leave_out=True": True}
  report = run("experiments.report", str(sweep_dir), f"--out={tmp_path / 'report'}")
  assert report.returncode == 0, report.stdout[-3000:] + report.stderr[-3000:]
  text = open(tmp_path / "report" / "report.md").read()
  assert "rloo" in text.lower(), text[:3000]
