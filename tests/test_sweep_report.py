"""experiments.sweep and experiments.report end to end on a tiny sweep."""

import fcntl
import json
import os
import shutil
import signal
import subprocess
import sys
import threading

import numpy as np
import pytest

from experiments import report, stats, sweep, tuning
from polyepo import writers

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

TINY_SWEEP = '''
def get_sweep(arg=None):
  shared = {"run.num_seeds": 2, "run.eval_num_samples": 8}
  return [("configs/grpo.py", "size=smoke", dict(shared)),
          ("configs/reward_shaping.py", "size=smoke", dict(shared, **{"train.lam": 0.1})),
          ("configs/reward_shaping.py", "size=smoke", dict(shared, **{"train.lam": 1.0}))]
'''


def _env(cache):
  return dict(os.environ, POLYEPO_CACHE=os.path.join(cache, "models"),
              POLYEPO_DATA_DIR=os.path.join(cache, "tfds"), JAX_PLATFORMS="cpu")


def _records(path):
  """A JSONL file's records without their wall-clock timings."""
  return [{k: v for k, v in r.items() if k != "seconds_per_step"}
          for r in writers.read_jsonl(str(path))]


def _sweep(args, cache, timeout=1800):
  return subprocess.run([sys.executable, "-m", "experiments.sweep", *args], cwd=ROOT,
                        env=_env(cache), capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="session")
def tiny_sweep(tmp_path_factory, worker_id):
  """(sweep file, sweep directory, cache directory), built once per test session.

  Under xdist every worker has this session fixture; they share one sweep through
  the workers' common temporary root, and the first to take the lock builds it.
  Tests must not change it: the resume test works on its own copy.
  """
  root = tmp_path_factory.getbasetemp()
  root = root if worker_id == "master" else root.parent
  tmp = root / "tiny_sweep"
  path, sweep_dir = tmp / "tiny.py", tmp / "out"
  with open(root / "tiny_sweep.lock", "w") as lock:
    fcntl.flock(lock, fcntl.LOCK_EX)
    if not (tmp / "built").exists():
      shutil.rmtree(tmp, ignore_errors=True)
      tmp.mkdir()
      path.write_text(TINY_SWEEP)
      result = _sweep([f"--sweep={path}", f"--sweep_dir={sweep_dir}", "--parallel=2"], str(tmp))
      assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
      (tmp / "built").write_text("")
  return path, sweep_dir, str(tmp)


def test_run_names_show_what_varies():
  runs = sweep.load_sweep("configs/sweeps/shaping_lambda.py:domains=multiplication,chosen=")
  assert [r.name for r in runs] == [f"reward_shaping-multiplication-default-lam={l}"
                                    for l in (0.1, 0.3, 1.0, 3.0)]
  assert "--config.train.lam=0.1" in runs[0].flags()
  headline = sweep.load_sweep("configs/sweeps/headline.py")
  assert len(headline) == 8 and len({r.name for r in headline}) == 8
  assert {r.overrides["run.num_seeds"] for r in headline} == {3}
  one = sweep.load_sweep("configs/sweeps/headline.py:domains=multiplication")
  assert [r.name for r in one] == [r.name for r in headline if "multiplication" in r.name]
  longer = sweep.load_sweep("configs/sweeps/longer.py:domains=polynomial_roots,steps=300")
  assert [r.name for r in longer] == ["grpo-polynomial_roots-default",
                                      "poly_epo-polynomial_roots-default"]
  assert longer[0].overrides["train.num_steps"] == 300


def test_only_selects_runs_by_name_pattern():
  runs = [sweep.RunSpec(name, "configs/grpo.py", "", {})
          for name in ("grpo-a", "poly_epo-a", "poly_epo-b")]
  assert [r.name for r in sweep.select_runs(runs, None)] == ["grpo-a", "poly_epo-a", "poly_epo-b"]
  assert [r.name for r in sweep.select_runs(runs, ["poly_epo-*"])] == ["poly_epo-a", "poly_epo-b"]
  assert [r.name for r in sweep.select_runs(runs, ["*-b", "grpo-a"])] == ["grpo-a", "poly_epo-b"]
  with pytest.raises(ValueError, match=r"'ppo-\*' matches no run of this sweep; its runs: "
                                       r"grpo-a, poly_epo-a, poly_epo-b\."):
    sweep.select_runs(runs, ["grpo-*", "ppo-*"])


@pytest.mark.parametrize("entry, message", [
    ('("configs/nope.py", "", {})', "does not exist"),
    ('("configs/grpo.py", "domain=chess", {})', "chess"),
    ('("configs/grpo.py", "", {"train.lr": 1.0})', "'train.lr'"),
    ('("configs/poly_epo.py", "", {"train.set_size": 16})', "set_size"),
    ('("configs/grpo.py", "")', "expected (config file"),
])
def test_bad_sweep_entries_fail_naming_the_problem(entry, message, tmp_path):
  path = tmp_path / "bad.py"
  path.write_text(f"def get_sweep(arg=None):\n  return [{entry}]\n")
  with pytest.raises((ValueError, FileNotFoundError), match=None) as err:
    sweep.load_sweep(str(path))
  assert message in str(err.value)


@pytest.mark.slow
def test_sweep_runs_every_entry_and_logs(tiny_sweep):
  _, sweep_dir, _ = tiny_sweep
  names = sorted(os.listdir(sweep_dir / "runs"))
  assert names == ["grpo-smoke", "reward_shaping-smoke-lam=0.1", "reward_shaping-smoke-lam=1.0"]
  for name in names:
    assert sweep.is_finished(str(sweep_dir / "runs" / name))
    assert (sweep_dir / "logs" / f"{name}.log").exists()
  events = [json.loads(l) for l in open(sweep_dir / "sweep.jsonl")]
  assert [e["event"] for e in events][0] == "start" and events[-1]["event"] == "end"
  assert sorted(e["name"] for e in events if e["event"] == "run") == names


@pytest.mark.slow
def test_sweep_resumes_and_skips_finished_runs(tiny_sweep, tmp_path):
  path, shared, cache = tiny_sweep
  sweep_dir = tmp_path / "out"
  shutil.copytree(shared, sweep_dir)
  # Make one run look interrupted after its step-2 checkpoint.
  work = sweep_dir / "runs" / "grpo-smoke"
  finished = {name: _records(work / f"{name}.jsonl") for name in ("train", "eval")}
  shutil.rmtree(work / "checkpoints" / "4")
  for name in ("train", "eval"):
    lines = [l for l in open(work / f"{name}.jsonl") if json.loads(l)["step"] <= 2]
    (work / f"{name}.jsonl").write_text("".join(lines))
  untouched = (sweep_dir / "runs" / "reward_shaping-smoke-lam=0.1" / "train.jsonl").read_text()
  result = _sweep([f"--sweep={path}", f"--sweep_dir={sweep_dir}"], cache)
  assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
  assert result.stdout.count("skip ") == 2
  assert [json.loads(l)["step"] for l in open(work / "train.jsonl")] == [1, 2, 3, 4]
  # The resumed steps reproduce the uninterrupted run's values, not just its steps.
  for name in ("train", "eval"):
    assert _records(work / f"{name}.jsonl") == finished[name], name
  assert sweep.is_finished(str(work))
  assert (sweep_dir / "runs" / "reward_shaping-smoke-lam=0.1" / "train.jsonl").read_text() == untouched


@pytest.mark.slow
def test_a_sweep_with_more_steps_extends_its_finished_runs(tiny_sweep, tmp_path):
  """The tiny sweep (4 steps a run) rerun with 6 steps in its directory, `--only`
  its GRPO run, extends that run from its step-4 checkpoint: its first 4 steps'
  records are kept, it ends at step 6, and it equals that run started with 6
  steps; the other runs are left as they were. The same sweep with fewer steps is
  refused, naming the field."""
  path, shared, cache = tiny_sweep
  sweep_dir = tmp_path / "out"
  shutil.copytree(shared, sweep_dir)
  work = sweep_dir / "runs" / "grpo-smoke"
  before = _records(work / "train.jsonl")
  other = sweep_dir / "runs" / "reward_shaping-smoke-lam=0.1" / "train.jsonl"
  untouched = other.read_text()
  longer = tmp_path / "longer.py"
  longer.write_text(TINY_SWEEP.replace('"run.eval_num_samples": 8',
                                       '"run.eval_num_samples": 8, "train.num_steps": 6'))
  result = _sweep([f"--sweep={longer}", f"--sweep_dir={sweep_dir}", "--only=grpo-*"], cache)
  assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
  assert "1 of 3 runs" in result.stdout and "skip " not in result.stdout
  assert other.read_text() == untouched
  extended = _records(work / "train.jsonl")
  assert [r["step"] for r in extended] == [1, 2, 3, 4, 5, 6] and extended[:4] == before
  assert [r["step"] for r in _records(work / "eval.jsonl")][-2:] == [4, 6]
  assert sweep.is_finished(str(work)) and not sweep.is_finished(str(work), 8)
  fresh = tmp_path / "fresh"
  run = [r for r in sweep.load_sweep(str(longer)) if r.name == "grpo-smoke"][0]
  done = subprocess.run([sys.executable, "-m", "experiments.synthetic", *run.flags(),
                         f"--workdir={fresh}"], cwd=ROOT, env=_env(cache), capture_output=True,
                        text=True, timeout=1800)
  assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
  assert _records(fresh / "train.jsonl") == extended
  assert _records(fresh / "eval.jsonl")[-1] == _records(work / "eval.jsonl")[-1]
  shorter = _sweep([f"--sweep={path}", f"--sweep_dir={sweep_dir}"], cache)
  assert shorter.returncode != 0
  assert "train.num_steps 6 -> 4" in shorter.stderr and "may only grow" in shorter.stderr


@pytest.mark.slow
def test_sweep_refuses_a_run_started_under_another_config(tiny_sweep, tmp_path):
  """A finished run whose config.json differs from what the sweep would run (here:
  another learning rate) is neither skipped nor resumed: the sweep stops first,
  naming the run and the field."""
  path, shared, cache = tiny_sweep
  sweep_dir = tmp_path / "out"
  shutil.copytree(shared, sweep_dir)
  record = sweep_dir / "runs" / "grpo-smoke" / "config.json"
  config = json.loads(record.read_text())
  started = config["train"]["learning_rate"]
  config["train"]["learning_rate"] = started * 10
  record.write_text(json.dumps(config))
  result = _sweep([f"--sweep={path}", f"--sweep_dir={sweep_dir}"], cache)
  assert result.returncode != 0 and "skip " not in result.stdout
  assert (f"Run 'grpo-smoke': Run directory '{sweep_dir / 'runs' / 'grpo-smoke'}' was started "
          f"with another config: train.learning_rate {started * 10!r} -> {started!r}"
          in result.stderr), result.stderr[-3000:]


@pytest.mark.slow
def test_sweep_refuses_a_different_sweep_in_the_same_directory(tiny_sweep, tmp_path):
  _, sweep_dir, cache = tiny_sweep
  other = tmp_path / "other.py"
  other.write_text('def get_sweep(arg=None):\n  return [("configs/grpo.py", "size=smoke", {})]\n')
  result = _sweep([f"--sweep={other}", f"--sweep_dir={sweep_dir}"], cache)
  assert result.returncode != 0 and "--overwrite" in result.stderr


def _final(sweep_dir, run):
  return [json.loads(l) for l in open(sweep_dir / "runs" / run / "eval.jsonl")][-1]


def _pass_at_1_by_hand(record, split):
  """f[S, P]: each problem's correct samples over the samples drawn, per seed."""
  return np.array([np.array(s["per_problem"]["num_correct"]) / s["num_samples"]
                   for s in record[split]["seeds"]])


@pytest.mark.slow
def test_report_tables_follow_the_run_directories(tiny_sweep, tmp_path):
  _, sweep_dir, _ = tiny_sweep
  written = report.write_report([str(sweep_dir)], str(tmp_path / "a"))
  names = {os.path.basename(p) for p in written}
  assert {"report.md", "summary.json", "pass_at_k.png", "training.png", "distinct_correct.png",
          "strategy_shares.png", "rare_strategies.png", "shaping_lambda.png"} <= names
  # The optional plots are drawn exactly when the records hold what they show.
  train = [json.loads(l) for l in open(sweep_dir / "runs" / "grpo-smoke" / "train.jsonl")]
  final = _final(sweep_dir, "grpo-smoke")
  assert ("discovery.png" in names) == ("correct_strategy_share" in train[-1])
  assert ("forced_accuracy.png" in names) == ("forced_accuracy" in final["test"]["mean"])
  assert ("exploration.png" in names) == ("decoy_mass" in train[-1])
  assert ("advantages.png" in names) == ("correct_pushed_down" in train[-1])
  text = (tmp_path / "a" / "report.md").read_text()
  # Determinism: regenerating gives the same tables byte for byte.
  report.write_report([str(sweep_dir)], str(tmp_path / "b"), plots=False)
  assert (tmp_path / "b" / "report.md").read_text() == text
  # The reward-shaping row is the λ with the higher final validation pass@1 (ties:
  # the first in grid order); test never chooses.
  finals = {lam: _final(sweep_dir, f"reward_shaping-smoke-lam={lam}") for lam in ("0.1", "1.0")}
  scores = {lam: np.mean([s["pass_at_k"]["1"] for s in f["validation"]["seeds"]])
            for lam, f in finals.items()}
  best = "1" if scores["1.0"] > scores["0.1"] else "0.1"
  assert f"Reward shaping (lr=3e-05, λ={best}: best validation pass@1 of 2 settings)" in text
  # Each table cell is the mean over seeds and problems of the run's final
  # evaluation, with its bootstrap interval over problems and seeds.
  by_hand = _pass_at_1_by_hand(final, "test")
  assert by_hand.shape == (2, final["test"]["mean"]["num_problems"])
  assert by_hand.mean() == pytest.approx(np.mean([s["pass_at_k"]["1"]
                                                  for s in final["test"]["seeds"]]))
  test_table = text.split("— `test` (")[1]
  row = next(l for l in test_table.splitlines() if l.startswith("| GRPO |")).split(" | ")
  interval = stats.interval(by_hand)
  assert row[3].rstrip("†") == f"{by_hand.mean():.3f} [{interval.low:.3f}, {interval.high:.3f}]"
  # Branch point (column 10), which varies from problem to problem even in a smoke run.
  branch = np.array([s["per_problem"]["branch_point"] for s in final["test"]["seeds"]])
  assert branch.mean() == pytest.approx(np.mean([s["branch_point"]
                                                 for s in final["test"]["seeds"]]))
  interval = stats.interval(branch)
  assert row[10] == f"{branch.mean():.3f} [{interval.low:.3f}, {interval.high:.3f}]"
  assert interval.low < branch.mean() < interval.high
  base = [json.loads(l) for l in open(sweep_dir / "runs" / "grpo-smoke" / "eval.jsonl")][0]
  assert base["step"] == 0
  assert "| Base (step 0) | 2 | 0 |" in text
  assert "the papers' claims" in text and "needs Base, GRPO and Poly-EPO" in text
  assert "— discovery" in text and "| strategy | family |" in text
  assert "## Sweeps" in text


@pytest.mark.slow
def test_summary_json_holds_the_final_evaluations(tiny_sweep, tmp_path):
  _, sweep_dir, _ = tiny_sweep
  report.write_report([str(sweep_dir)], str(tmp_path), plots=False)
  summary = json.loads((tmp_path / "summary.json").read_text())
  final = _final(sweep_dir, "grpo-smoke")
  domain = json.load(open(sweep_dir / "runs" / "grpo-smoke" / "config.json"))["domain"]
  assert list(summary) == [domain]
  assert set(summary[domain]) == {"base", "grpo", "reward_shaping", "claims"}
  # No Poly-EPO run: the claims are listed as not evaluated, as in report.md.
  assert summary[domain]["claims"] == [{"statement": "the papers' claims",
                                        "verdict": "not evaluated"}]
  grpo = summary[domain]["grpo"]
  splits = [s for s in ("validation", "test", "ood") if s in final]
  assert set(grpo) == set(splits) | {"strategy_share"}
  # 8 samples per problem: pass@32 and pass@64 are not evaluated.
  assert set(grpo["test"]) == {"pass@1", "pass@8", "distinct_correct", "distinct",
                               "distinct_correct_families", "majority_vote"}
  cell = grpo["test"]["pass@1"]
  assert cell["seeds"] == 2
  assert cell["mean"] == round(_pass_at_1_by_hand(final, "test").mean(), 4)
  assert cell["ci_low"] <= cell["mean"] <= cell["ci_high"]
  distinct = np.mean([s["per_problem"]["distinct_correct_families"]
                      for s in final["test"]["seeds"]])
  assert grpo["test"]["distinct_correct_families"]["mean"] == round(distinct, 4)
  assert grpo["strategy_share"] == {n: round(v, 4) for n, v in
                                    final["test"]["mean"]["strategy_share"].items()}
  step0 = [json.loads(l) for l in open(sweep_dir / "runs" / "grpo-smoke" / "eval.jsonl")][0]
  forced = step0["test"]["mean"].get("forced_accuracy")
  if forced is None:
    assert "forced_accuracy" not in summary[domain]["base"]
  else:
    assert summary[domain]["base"]["forced_accuracy"] == {
        n: None if a is None else round(a, 4) for n, a in forced.items()}
  assert "forced_accuracy" not in grpo
  assert (tmp_path / "summary.json").read_text().endswith("}\n")


@pytest.mark.slow
def test_archived_records_regenerate_the_report_byte_for_byte(tiny_sweep, tmp_path):
  """The archive holds everything the report reads: report.md and summary.json
  regenerated from it are the same bytes. This shows determinism and a complete
  archive, not correctness: the tests above and test_verdicts.py / test_stats.py
  check the values and verdicts themselves."""
  _, sweep_dir, _ = tiny_sweep
  out = tmp_path / "results"
  report.write_report([str(sweep_dir)], str(out), plots=False, archive=True)
  archived = out / os.path.basename(sweep_dir)
  assert sorted(os.listdir(archived / "runs" / "grpo-smoke")) == sorted(report.RECORDS)
  again = tmp_path / "again"
  report.write_report([str(archived)], str(again), plots=False)
  for name in ("report.md", "summary.json"):
    assert (again / name).read_bytes() == (out / name).read_bytes(), name


def test_archiving_again_replaces_the_earlier_archive(tmp_path):
  """A sweep archived over an earlier archive of itself: its runs replace the old
  ones, and a run it no longer has is gone (the report would read it otherwise)."""
  sweep = tmp_path / "sweep"
  for run in ("old", "kept"):
    (sweep / "runs" / run).mkdir(parents=True)
    (sweep / "runs" / run / "config.json").write_text(f'{{"name": "{run}"}}')
    (sweep / "runs" / run / "checkpoints").mkdir()
  (sweep / "sweep.json").write_text("{}")
  report.archive_records(str(sweep), str(tmp_path / "archive"))
  assert sorted(os.listdir(tmp_path / "archive" / "runs")) == ["kept", "old"]
  shutil.rmtree(sweep / "runs" / "old")
  (sweep / "runs" / "kept" / "config.json").write_text('{"name": "kept", "steps": 600}')
  report.archive_records(str(sweep), str(tmp_path / "archive"))
  assert os.listdir(tmp_path / "archive" / "runs") == ["kept"]
  assert os.listdir(tmp_path / "archive" / "runs" / "kept") == ["config.json"]
  assert json.loads((tmp_path / "archive" / "runs" / "kept" / "config.json").read_text()) == {
      "name": "kept", "steps": 600}


def test_a_report_of_unfinished_sweeps_says_it_is_partial(tiny_sweep, tmp_path):
  _, sweep_dir, _ = tiny_sweep
  report.write_report([str(sweep_dir)], str(tmp_path / "full"), plots=False, archive=True)
  archived = tmp_path / "full" / os.path.basename(sweep_dir)
  assert "Partial" not in (tmp_path / "full" / "report.md").read_text()
  manifest = json.loads((archived / "sweep.json").read_text())
  manifest["runs"].append({"name": "late", "config_string": "domain=multiplication"})
  (archived / "sweep.json").write_text(json.dumps(manifest))
  report.write_report([str(archived)], str(tmp_path / "partial"), plots=False)
  text = (tmp_path / "partial" / "report.md").read_text()
  assert "**Partial: 1 run(s) have not finished** and are left out of everything below: " \
         "late." in text


def _committed(name):
  """The directories under results/ holding a committed `name` and its archived sweeps."""
  results = os.path.join(ROOT, "results")
  found = []
  for directory, _, files in sorted(os.walk(results)):
    sweeps = sorted(os.path.join(directory, d) for d in os.listdir(directory)
                    if os.path.isfile(os.path.join(directory, d, "sweep.json")))
    if name in files and sweeps:
      found.append((os.path.relpath(directory, ROOT), sweeps))
  return found


@pytest.mark.parametrize("directory, sweeps", _committed("report.md"))
def test_committed_reports_regenerate_determinism_check(directory, sweeps, tmp_path):
  """Each committed report is what today's code makes of the run records archived beside it
  (a determinism check: a changed table or verdict rule must be regenerated)."""
  runs = report.load_runs(sweeps)
  try:
    report.require_per_problem(runs)
  except ValueError as err:
    pytest.skip(f"{directory}'s records predate per-problem eval values ({err})")
  report.write_report(sweeps, str(tmp_path), plots=False)
  for name in ("report.md", "summary.json"):
    assert (tmp_path / name).read_text() == open(os.path.join(ROOT, directory, name)).read(), name


def _superseded(sweeps):
  """Each archived sweep, or its newer copy in results/partial (a stage being redone)."""
  partial = os.path.join(ROOT, "results", "partial")
  newer = lambda s: os.path.join(partial, os.path.basename(s))
  return [newer(s) if os.path.isfile(os.path.join(newer(s), "sweep.json")) else s
          for s in sweeps]


def test_committed_tuning_regenerates_determinism_check(tmp_path):
  """results/tuning's tuning.md and chosen.json (both stages), from its archived sweeps;
  results/tuning/lr's from the learning-rate sweeps, where one being redone is taken
  from its newer copy in results/partial (the knob stage runs from that choice)."""
  found = dict(_committed("tuning.md"))
  if "results/tuning" not in found:
    pytest.skip("no committed tuning")
  lr_sweeps = [s for s in found["results/tuning"] if os.path.basename(s).startswith("tuning-lr")]
  knob_sweeps = [s for s in found["results/tuning"] if s not in lr_sweeps]
  # In the README's order: stage lr's sweeps, then stage knobs'.
  for directory, sweeps in (("results/tuning", lr_sweeps + knob_sweeps),
                            ("results/tuning/lr", _superseded(lr_sweeps))):
    out = tmp_path / os.path.basename(directory)
    tuning.write_tuning(sweeps, str(out))
    for name in ("tuning.md", "chosen.json"):
      assert (out / name).read_text() == open(os.path.join(ROOT, directory, name)).read(), \
          (directory, name)


def _write_events(sweep_dir, events):
  """Writes a sweep's log, sweep.jsonl, one event per line as experiments.sweep does."""
  (sweep_dir / "sweep.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events))


def test_sweep_info_counts_interrupted_invocations_up_to_their_last_run(tmp_path):
  """Wall time by hand: a killed invocation (no "end") counts from its start to
  its last finished run, 10:00:00 to 10:30:00; the resumed one its own 600 s."""
  events = [
      {"time": "2026-01-01T10:00:00", "event": "start", "command": "python -m experiments.sweep x",
       "commit": "abc", "machine": "EPYC"},
      {"time": "2026-01-01T10:30:00", "event": "run", "name": "a", "returncode": 0,
       "seconds": 1800.0},
      {"time": "2026-01-02T09:00:00", "event": "start", "command": "python -m experiments.sweep x",
       "commit": "abc", "machine": "Xeon"},
      {"time": "2026-01-02T09:10:00", "event": "run", "name": "b", "returncode": 0,
       "seconds": 600.0},
      {"time": "2026-01-02T09:10:00", "event": "end", "seconds": 600.0, "ok": True}]
  _write_events(tmp_path, events)
  lines = report.sweep_info([str(tmp_path)])
  assert lines[0].endswith("at commit `abc` (resumed 1×)")
  assert lines[1] == "  - machines (invocations differ): EPYC; Xeon"
  assert lines[2] == ("  - wall time 40.0 min over 2 invocation(s) (1 interrupted, each counted"
                      " up to its last record; the time of a run killed with its sweep is not"
                      " recorded); 2 runs took a 30.0, b 10.0 min")
  # Without the second invocation: one machine, one interrupted invocation.
  _write_events(tmp_path, events[:2])
  assert report.sweep_info([str(tmp_path)])[1] == "  - machine: EPYC"


def test_sweep_info_counts_logged_interruptions_and_not_idle_invocations(tmp_path):
  """By hand: run b was interrupted after 300 s (logged by the sweep), resumed
  and finished in 600 s; a third invocation found everything finished (2 s); a
  fourth was stopped inside run c after 60 s."""
  start = {"event": "start", "command": "python -m experiments.sweep x", "commit": "abc",
           "machine": "EPYC"}
  events = [
      dict(start, time="2026-01-01T10:00:00"),
      {"time": "2026-01-01T10:30:00", "event": "run", "name": "a", "returncode": 0,
       "seconds": 1800.0},
      {"time": "2026-01-01T10:35:00", "event": "run", "name": "b", "returncode": -15,
       "seconds": 300.0, "interrupted": True},
      dict(start, time="2026-01-02T09:00:00"),
      {"time": "2026-01-02T09:10:00", "event": "run", "name": "b", "returncode": 0,
       "seconds": 600.0},
      {"time": "2026-01-02T09:10:00", "event": "end", "seconds": 600.0, "ok": True},
      dict(start, time="2026-01-03T09:00:00"),
      {"time": "2026-01-03T09:00:02", "event": "end", "seconds": 2.0, "ok": True}]
  _write_events(tmp_path, events)
  lines = report.sweep_info([str(tmp_path)])
  assert lines[0].endswith("at commit `abc` (resumed 1×) (then 1 invocation(s) found every run "
                           "finished)")
  assert lines[2] == ("  - wall time 45.0 min over 3 invocation(s) (1 interrupted, each counted"
                      " up to its last record); 2 runs took a 30.0, b 10.0 (+ 5.0 before an"
                      " interruption) min")
  events += [dict(start, time="2026-01-04T09:00:00"),
             {"time": "2026-01-04T09:01:00", "event": "run", "name": "c", "returncode": -15,
              "seconds": 60.0, "interrupted": True}]
  _write_events(tmp_path, events)
  lines = report.sweep_info([str(tmp_path)])
  assert "(resumed 2×)" in lines[0]
  assert lines[2].startswith("  - wall time 46.0 min over 4 invocation(s) (2 interrupted, ")
  assert lines[2].endswith("b 10.0 (+ 5.0 before an interruption), c 1.0 so far min")


def test_sweep_info_sums_an_extended_run_and_shows_the_extending_command(tmp_path):
  """By hand: run a finished in 1800 s; the sweep rerun with steps=600 extended
  it in 1500 s: 55.0 min in all, both commands named."""
  start = {"event": "start", "commit": "abc", "machine": "EPYC"}
  events = [
      dict(start, time="2026-01-01T10:00:00", command="python -m experiments.sweep x"),
      {"time": "2026-01-01T10:30:00", "event": "run", "name": "a", "returncode": 0,
       "seconds": 1800.0},
      {"time": "2026-01-01T10:30:00", "event": "end", "seconds": 1800.0, "ok": True},
      dict(start, time="2026-01-02T09:00:00", command="python -m experiments.sweep x:steps=600"),
      {"time": "2026-01-02T09:25:00", "event": "run", "name": "a", "returncode": 0,
       "seconds": 1500.0},
      {"time": "2026-01-02T09:25:00", "event": "end", "seconds": 1500.0, "ok": True}]
  _write_events(tmp_path, events)
  lines = report.sweep_info([str(tmp_path)])
  assert lines[0].endswith("at commit `abc` (resumed 1×); then "
                           "`python -m experiments.sweep x:steps=600`")
  assert lines[2] == ("  - wall time 55.0 min over 2 invocation(s); 1 runs took a 55.0 "
                      "(30.0 + 25.0: extended) min")


def test_an_interrupted_sweep_stops_its_runs_and_logs_their_time(tmp_path, monkeypatch):
  """SIGTERM to the sweep (as `kill PID` sends) stops the run it started and logs
  it as interrupted, instead of leaving it running without its sweep."""
  (tmp_path / "logs").mkdir()
  started = []
  real_popen = subprocess.Popen

  def popen(command, **kwargs):  # a run that would outlive the test by far
    del command
    started.append(real_popen([sys.executable, "-c", "import time; time.sleep(120)"], **kwargs))
    return started[-1]
  monkeypatch.setattr(subprocess, "Popen", popen)
  previous = signal.getsignal(signal.SIGTERM)
  sweep._interrupt_on_sigterm()  # pylint: disable=protected-access
  timer = threading.Timer(2.0, os.kill, (os.getpid(), signal.SIGTERM))
  timer.start()
  try:
    with pytest.raises(KeyboardInterrupt):
      sweep.run_sweep([sweep.RunSpec("a", "configs/grpo.py", "size=smoke", {}),
                       sweep.RunSpec("b", "configs/grpo.py", "size=smoke", {})],
                      str(tmp_path), progress=False)
  finally:
    timer.cancel()
    signal.signal(signal.SIGTERM, previous)
  assert len(started) == 1 and started[0].poll() is not None  # b never started; a stopped
  events = [json.loads(l) for l in open(tmp_path / "sweep.jsonl")]
  assert [(e["event"], e["name"], e["interrupted"]) for e in events] == [("run", "a", True)]
  assert 1.5 <= events[0]["seconds"] <= 30
  assert not sweep.is_finished(str(tmp_path / "runs" / "a"))
