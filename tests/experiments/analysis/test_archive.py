"""A sweep's own records (experiments.archive): its archive, and the "Sweeps" lines
read from its sweep.jsonl, on constructed directories and logs."""

import json
import os
import shutil

from experiments.analysis import archive
from polyepo.io import writers


def test_archiving_again_replaces_the_earlier_archive(tmp_path):
  """A sweep archived over an earlier archive of itself: its runs replace the old
  ones, and a run it no longer has is gone (the report would read it otherwise)."""
  sweep = tmp_path / "sweep"
  for run in ("old", "kept"):
    (sweep / "runs" / run).mkdir(parents=True)
    (sweep / "runs" / run / "config.json").write_text(f'{{"name": "{run}"}}')
    (sweep / "runs" / run / "checkpoints").mkdir()
  (sweep / "sweep.json").write_text("{}")
  archive.archive_records(str(sweep), str(tmp_path / "archive"))
  assert sorted(os.listdir(tmp_path / "archive" / "runs")) == ["kept", "old"]
  shutil.rmtree(sweep / "runs" / "old")
  (sweep / "runs" / "kept" / "config.json").write_text('{"name": "kept", "steps": 600}')
  archive.archive_records(str(sweep), str(tmp_path / "archive"))
  assert os.listdir(tmp_path / "archive" / "runs") == ["kept"]
  assert os.listdir(tmp_path / "archive" / "runs" / "kept") == ["config.json"]
  assert json.loads((tmp_path / "archive" / "runs" / "kept" / "config.json").read_text()) == {
      "name": "kept", "steps": 600}


def test_an_archive_gzips_the_records_and_archiving_it_again_gives_the_same_bytes(tmp_path):
  """train.jsonl and eval.jsonl are archived gzipped (read back as the same records, by
  any reader through writers.jsonl_path); an archive of the archive is byte for byte
  the same, and so is a second archive of the sweep (no name or time in the header)."""
  run = tmp_path / "sweep" / "runs" / "a"
  run.mkdir(parents=True)
  (run / "config.json").write_text('{"name": "a"}')
  records = {"train.jsonl": [{"step": 2, "reward": 0.5}], "eval.jsonl": [{"step": 0}, {"step": 2}]}
  for name, lines in records.items():
    (run / name).write_text("".join(json.dumps(r) + "\n" for r in lines))
  first, second = tmp_path / "first", tmp_path / "second"
  archive.archive_records(str(tmp_path / "sweep"), str(first))
  assert sorted(os.listdir(first / "runs" / "a")) == sorted(archive.RECORDS)
  for name, lines in records.items():
    path = writers.jsonl_path(str(first / "runs" / "a"), name)
    assert path.endswith(".gz") and writers.read_jsonl(path) == lines
  archive.archive_records(str(first), str(second))
  archive.archive_records(str(tmp_path / "sweep"), str(tmp_path / "third"))
  for name in archive.RECORDS:
    data = (first / "runs" / "a" / name).read_bytes()
    assert (second / "runs" / "a" / name).read_bytes() == data
    assert (tmp_path / "third" / "runs" / "a" / name).read_bytes() == data


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
  lines = archive.sweep_info([str(tmp_path)])
  assert lines[0].endswith("at commit `abc` (resumed 1×)")
  assert lines[1] == "  - machines (invocations differ): EPYC; Xeon"
  assert lines[2] == ("  - wall time 40.0 min over 2 invocation(s) (1 interrupted, each counted"
                      " up to its last record; the time of a run killed with its sweep is not"
                      " recorded); 2 runs took a 30.0, b 10.0 min")
  # Without the second invocation: one machine, one interrupted invocation.
  _write_events(tmp_path, events[:2])
  assert archive.sweep_info([str(tmp_path)])[1] == "  - machine: EPYC"


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
  lines = archive.sweep_info([str(tmp_path)])
  assert lines[0].endswith("at commit `abc` (resumed 1×) (then 1 invocation(s) found every run "
                           "finished)")
  assert lines[2] == ("  - wall time 45.0 min over 3 invocation(s) (1 interrupted, each counted"
                      " up to its last record); 2 runs took a 30.0, b 10.0 (+ 5.0 before an"
                      " interruption) min")
  events += [dict(start, time="2026-01-04T09:00:00"),
             {"time": "2026-01-04T09:01:00", "event": "run", "name": "c", "returncode": -15,
              "seconds": 60.0, "interrupted": True}]
  _write_events(tmp_path, events)
  lines = archive.sweep_info([str(tmp_path)])
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
  lines = archive.sweep_info([str(tmp_path)])
  assert lines[0].endswith("at commit `abc` (resumed 1×); then "
                           "`python -m experiments.sweep x:steps=600`")
  assert lines[2] == ("  - wall time 55.0 min over 2 invocation(s); 1 runs took a 55.0 "
                      "(30.0 + 25.0: extended) min")


def _record(name, steps_done, steps=4, domain="multiplication"):
  from experiments.analysis import records  # pylint: disable=g-import-not-at-top
  return records.RunRecord(name, domain, "GRPO", None, {"train": {"num_steps": steps}},
                           [{"step": s} for s in range(0, steps_done + 1, 2)], [])


def test_unfinished_runs_are_the_planned_ones_without_a_complete_record(tmp_path):
  """Hand-made: a, b planned and c unplanned; a complete, b and c stopped at step 2."""
  (tmp_path / "sweep.json").write_text(json.dumps({"runs": [
      {"name": "a", "config_string": "domain=multiplication"},
      {"name": "b", "config_string": "domain=multiplication"},
      {"name": "late", "config_string": "domain=polynomial_roots"}]}))
  runs = [_record("a", 4), _record("b", 2), _record("c", 2, domain="polynomial_roots")]
  assert archive.unfinished(runs, [str(tmp_path)]) == [
      {"name": "b", "config_string": "domain=multiplication"},
      {"name": "late", "config_string": "domain=polynomial_roots"},
      {"name": "c", "config_string": "domain=polynomial_roots"}]
  assert archive.unfinished(runs[:1], [str(tmp_path / "no sweep")]) == []


def test_a_run_s_cost_is_read_from_its_records():
  """Hand-made: 4 steps of 1.5 s (train.jsonl) and two evaluations of two splits
  each (eval.jsonl): the minutes, and a seed's share of each."""
  run = archive.RunRecord(
      "r", "multiplication", "GRPO", None, {},
      evals=[{"step": 0, "test": {"seeds": [{}, {}], "seconds": {"sampling": 30.0, "forced": 6.0}},
              "ood": {"seeds": [{}, {}], "seconds": {"sampling": 30.0, "forced": 6.0}}},
             {"step": 4, "test": {"seeds": [{}, {}], "seconds": {"sampling": 12.0, "forced": 0.0}},
              "ood": {"seeds": [{}, {}], "seconds": {"sampling": 12.0, "forced": 0.0}}}],
      train=[{"step": s, "seconds_per_step": 1.5} for s in range(1, 5)])
  assert archive.run_cost(run) == {
      "seeds": 2, "steps": 4, "training": 6.0,
      "evaluations": [{"step": 0, "sampling": 60.0, "forced": 12.0},
                      {"step": 4, "sampling": 24.0, "forced": 0.0}]}
  assert archive.cost_lines([run]) == [
      "- `r` (2 seeds): training 0.1 min (4 steps, 0.05 a seed); evaluation at step 0: "
      "sampling 1.0 min, forced accuracy 0.2 min (0.60 a seed); evaluation at step 4: sampling "
      "0.4 min, forced accuracy 0.0 min (0.20 a seed)"]
  untimed = run._replace(evals=[{"step": 4, "test": {"mean": {}, "seeds": [{}, {}]}}])
  assert archive.cost_lines([untimed])[0].endswith("its evaluations are not timed in its records")
