"""Tests for polyepo.rundir and the run directory's guards: --overwrite removes
only what the project wrote, --resume only resumes a run directory."""

import os

import pytest

from polyepo.io import rundir
from polyepo.rl import plan
import repo


def _write(path, text="x"):
  os.makedirs(os.path.dirname(path), exist_ok=True)
  with open(path, "w") as f:
    f.write(text)


def _run_dir(path):
  """A run directory as a run leaves it."""
  for name in ("config.json", "train.jsonl", "eval.jsonl", "tb/events.out.1",
               "checkpoints/2/default/_METADATA", "checkpoints/4/_CHECKPOINT_METADATA"):
    _write(os.path.join(path, name))
  return path


def _tree(path):
  return sorted(os.path.relpath(os.path.join(d, f), path)
                for d, _, files in os.walk(path) for f in files)


def test_overwrite_empties_a_run_directory(tmp_path):
  workdir = _run_dir(str(tmp_path / "run"))
  plan.prepare_workdir(workdir, overwrite=True)
  assert os.path.isdir(workdir) and os.listdir(workdir) == []


def test_overwrite_refuses_a_directory_with_foreign_files_and_keeps_everything(tmp_path):
  workdir = _run_dir(str(tmp_path / "run"))
  _write(os.path.join(workdir, "notes.txt"))
  _write(os.path.join(workdir, "sub", "data.csv"))
  before = _tree(workdir)
  with pytest.raises(FileExistsError, match=r"not a run directory.*notes\.txt.*sub"):
    plan.prepare_workdir(workdir, overwrite=True)
  assert _tree(workdir) == before


def test_overwrite_refuses_the_checkout_root():
  root = repo.ROOT
  with pytest.raises(FileExistsError, match=r"not a run directory.*\.git"):
    plan.check_workdir(root, resume=False, overwrite=True)
  with pytest.raises(FileExistsError, match="not a run directory"):
    plan.check_workdir(root, resume=True, overwrite=False)
  assert os.path.isfile(os.path.join(root, "README.md"))


def test_overwrite_never_follows_a_symbolic_link(tmp_path):
  target = _run_dir(str(tmp_path / "elsewhere"))
  before = _tree(target)
  # The run directory itself a link: refused, the target kept.
  os.symlink(target, tmp_path / "link")
  with pytest.raises(FileExistsError, match="symbolic link"):
    plan.prepare_workdir(str(tmp_path / "link"), overwrite=True)
  # A link inside a run directory, where a folder of the run would be: refused.
  workdir = _run_dir(str(tmp_path / "run"))
  os.rename(os.path.join(workdir, "checkpoints"), tmp_path / "moved")
  os.symlink(target, os.path.join(workdir, "checkpoints"))
  with pytest.raises(FileExistsError, match="checkpoints"):
    plan.prepare_workdir(workdir, overwrite=True)
  assert _tree(target) == before
  assert os.path.islink(os.path.join(workdir, "checkpoints"))
  assert os.path.isfile(os.path.join(workdir, "config.json"))


def test_a_sweep_directory_is_cleared_only_when_every_run_in_it_is_a_run(tmp_path):
  sweep = str(tmp_path / "sweep")
  _write(os.path.join(sweep, "sweep.json"))
  _write(os.path.join(sweep, "sweep.jsonl"))
  _write(os.path.join(sweep, "logs", "grpo.log"))
  _run_dir(os.path.join(sweep, "runs", "grpo"))
  _run_dir(os.path.join(sweep, "runs", "poly_epo"))
  _write(os.path.join(sweep, "runs", "poly_epo", "analysis.ipynb"))
  before = _tree(sweep)
  with pytest.raises(FileExistsError, match=r"not a sweep directory.*runs/poly_epo/analysis"):
    rundir.clear(sweep, rundir.SWEEP_LAYOUT, "sweep directory")
  assert _tree(sweep) == before
  os.unlink(os.path.join(sweep, "runs", "poly_epo", "analysis.ipynb"))
  rundir.clear(sweep, rundir.SWEEP_LAYOUT, "sweep directory")
  assert os.listdir(sweep) == []


def test_resume_refuses_a_directory_that_is_not_a_run(tmp_path):
  _write(str(tmp_path / "mine" / "notes.txt"))
  with pytest.raises(FileExistsError, match="not a run directory"):
    plan.check_workdir(str(tmp_path / "mine"), resume=True, overwrite=False)
  plan.check_workdir(str(tmp_path / "missing"), resume=True, overwrite=False)
  plan.check_workdir(_run_dir(str(tmp_path / "run")), resume=True, overwrite=False)


def test_checking_the_workdir_touches_nothing(tmp_path):
  workdir = _run_dir(str(tmp_path / "run"))
  before = _tree(workdir)
  plan.check_workdir(workdir, resume=False, overwrite=True)
  assert _tree(workdir) == before
  plan.check_workdir(str(tmp_path / "new"), resume=False, overwrite=False)
  assert not os.path.exists(tmp_path / "new")


def test_a_sweep_holding_runs_copied_from_results_is_cleared(tmp_path):
  """Runs archived under results/ keep their records gzipped (`cp -r results/final/final-*
  runs/sweeps/` to skip them); --overwrite still clears such a sweep."""
  sweep = str(tmp_path / "sweep")
  _write(os.path.join(sweep, "sweep.json"))
  for name in ("config.json", "train.jsonl.gz", "eval.jsonl.gz"):
    _write(os.path.join(sweep, "runs", "grpo", name))
  rundir.clear(sweep, rundir.SWEEP_LAYOUT, "sweep directory")
  assert os.listdir(sweep) == []
