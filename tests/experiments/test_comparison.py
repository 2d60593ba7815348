"""experiments.comparison: a domain's sweeps in order, the tuning extended while a
choice sits at its grid's edge, kept sweeps not started again, and stopping."""

import json
import os
import shutil
import subprocess
import sys
import threading
import time

import pytest

from experiments import comparison, sweep
from configs.sweeps import tuning
from sweep_dirs import ROOT, env

DOMAIN = "polynomial_roots"


def _chooser(tmp_path, edges_by_round, calls):
  """A `choose` that writes a chosen.json whose choices sit at an edge as
  `edges_by_round[K]` says ({key: side}), and records the sweeps it was given."""
  def choose(names, round_):
    calls.append(list(names))
    edges = edges_by_round[round_] if round_ < len(edges_by_round) else {}
    entries = {key: {"config_file": f"configs/{key}.py", "overrides": {}}
                    for key in ("grpo", "poly_epo")}
    for key, side in edges.items():
      entries[key][tuning.AT_EDGE] = side
    path = tmp_path / f"round-{round_}" / "chosen.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({DOMAIN: entries}))
    return str(path)
  return choose


def test_a_domain_extends_its_tuning_while_a_choice_is_at_an_edge_then_trains_the_choices(
    tmp_path):
  ran, calls = [], []
  choose = _chooser(tmp_path, [{"grpo": "lowest", "poly_epo": "highest"}, {"grpo": "lowest"}],
                    calls)
  done = comparison.run_domain(DOMAIN, "default", ran.append, choose, max_extend=3)
  assert done == ran
  assert [s.name for s in ran] == [
      f"tuning-{DOMAIN}", f"tuning-{DOMAIN}-extend1", f"tuning-{DOMAIN}-extend2",
      f"final-{DOMAIN}", f"shaping_lambda-{DOMAIN}", f"recipe-{DOMAIN}"]
  # Each round chooses from every tuning sweep so far; each extension starts
  # from the round before it, and the later sweeps train the last round's choices.
  assert calls == [[s.name for s in ran[:k]] for k in (1, 2, 3)]
  rounds = [str(tmp_path / f"round-{k}" / "chosen.json") for k in range(3)]
  assert ran[0].spec == f"configs/sweeps/tuning.py:domains={DOMAIN}"
  assert ran[1].spec == f"configs/sweeps/tuning.py:domains={DOMAIN},extend={rounds[0]}"
  assert ran[2].spec == f"configs/sweeps/tuning.py:domains={DOMAIN},extend={rounds[1]}"
  assert [s.spec for s in ran[3:]] == [f"configs/sweeps/{name}.py:domains={DOMAIN},"
                                       f"chosen={rounds[2]}" for name in comparison.LATER]


def test_choices_still_at_an_edge_after_the_last_round_stop_the_domain_naming_them(tmp_path):
  ran = []
  choose = _chooser(tmp_path, [{"poly_epo": "highest"}] * 5, [])
  with pytest.raises(RuntimeError, match=r"after 1 extension round\(s\) the choices of "
                     r"poly_epo \(highest\) still sit.*--max_extend"):
    comparison.run_domain(DOMAIN, "default", ran.append, choose, max_extend=1)
  assert [s.name for s in ran] == [f"tuning-{DOMAIN}", f"tuning-{DOMAIN}-extend1"]


def test_a_smoke_comparison_trains_its_choices_as_they_stand(tmp_path):
  """At size=smoke (the flow, on noise) an edge choice is not extended; the later
  sweeps take the choices as they stand, the final one a run per row."""
  ran, calls = [], []
  choose = _chooser(tmp_path, [{"grpo": "lowest"}], calls)
  comparison.run_domain(DOMAIN, "smoke", ran.append, choose, max_extend=3)
  chosen = tmp_path / "round-0" / "chosen.json"
  assert calls == [[f"tuning-{DOMAIN}"]]
  assert [s.spec for s in ran] == [
      f"configs/sweeps/tuning.py:domains={DOMAIN},size=smoke",
      f"configs/sweeps/final.py:domains={DOMAIN},chosen={chosen},provisional=true,block=0,"
      "size=smoke",
      f"configs/sweeps/shaping_lambda.py:domains={DOMAIN},chosen={chosen},provisional=true,"
      "size=smoke",
      f"configs/sweeps/recipe.py:domains={DOMAIN},chosen={chosen},provisional=true,size=smoke"]


def test_each_sweep_spec_is_a_sweep_of_its_size():
  """The specs load as the sweeps they name, at the size given (the committed
  choices stand in for a tuning's)."""
  chosen = os.path.join(ROOT, "results", "tuning", "chosen.json")
  tuned = sweep.load_sweep(comparison.tuning(DOMAIN, "smoke").spec)
  assert len(tuned) == len(tuning.ALGORITHMS) * len(tuning.TUNING["learning_rates"])
  assert all(run.config_string == f"domain={DOMAIN},size=smoke" for run in tuned)
  smoke = [sweep.load_sweep(s.spec) for s in comparison.later(DOMAIN, "smoke", chosen)]
  assert all(runs and {run.config_string for run in runs} == {f"domain={DOMAIN},size=smoke"}
             for runs in smoke)
  assert len(smoke[0]) == len(json.load(open(chosen))[DOMAIN])   # the final: a run per row
  final = sweep.load_sweep(comparison.later(DOMAIN, "default", chosen)[0].spec)
  assert {run.overrides["train.num_steps"] for run in final} == {300}


def test_a_sweep_whose_runs_are_kept_is_restored_and_not_started_again(tiny_sweep, tmp_path,
                                                                        monkeypatch):
  path, sweep_dir, _ = tiny_sweep
  keep = tmp_path / "keep"
  shutil.copytree(sweep_dir, keep / "tiny")
  runner = comparison.Runner(str(tmp_path / "root"), str(keep), to_files=False)
  monkeypatch.setattr(comparison.subprocess, "Popen", lambda *a, **k: pytest.fail("started"))
  runner(comparison.Sweep("tiny", str(path)))
  names = [run.name for run in sweep.load_sweep(str(path))]
  assert sorted(os.listdir(tmp_path / "root" / "tiny" / "runs")) == sorted(names)
  # A run missing from KEEP is not finished: that sweep would start.
  shutil.rmtree(keep / "tiny" / "runs" / names[0])
  assert not comparison.Runner(str(tmp_path / "fresh"), str(keep), to_files=False).finished(
      comparison.Sweep("tiny", str(path)))


def test_stop_ends_the_sweep_under_way_and_starts_no_other(tmp_path, monkeypatch):
  runner = comparison.Runner(str(tmp_path), None, to_files=True)
  monkeypatch.setattr(runner, "finished", lambda s: False)
  monkeypatch.setattr(runner, "command", lambda s: [
      sys.executable, "-c", "import signal, sys, time\n"
      "signal.signal(signal.SIGTERM, lambda *_: (print('stopped', flush=True), sys.exit(1)))\n"
      "print('started', flush=True); time.sleep(60)"])
  raised = []

  def call():
    try:
      runner(comparison.Sweep("slow", "unused"))
    except KeyboardInterrupt:
      raised.append("interrupted")
  thread = threading.Thread(target=call)
  thread.start()
  log = tmp_path / "slow.log"
  deadline = time.time() + 30
  while not (log.exists() and "started" in log.read_text()) and time.time() < deadline:
    time.sleep(0.1)
  runner.stop()
  thread.join(timeout=30)
  assert raised == ["interrupted"]
  assert log.read_text() == "started\nstopped\n"   # it was asked to stop, once
  with pytest.raises(KeyboardInterrupt):
    runner(comparison.Sweep("next", "unused"))


@pytest.mark.parametrize("args, message", [
    (["--domains=bogus"], "--domains='bogus' is not one of: all, multiplication, "
                          "polynomial_roots."),
    (["--keep_dir=x"], "--keep_dir is experiments.sweep's flag, not this command's: use "
                       "--keep"),
])
def test_a_wrong_flag_is_one_line_and_writes_nothing(args, message, tmp_path):
  result = subprocess.run([sys.executable, "-m", "experiments.comparison",
                           f"--root={tmp_path / 'root'}", *args], cwd=ROOT,
                          env=env(str(tmp_path)), capture_output=True, text=True, timeout=120)
  assert result.returncode == 2
  assert result.stderr.startswith(f"error: {message}"), result.stderr
  assert not (tmp_path / "root").exists()
