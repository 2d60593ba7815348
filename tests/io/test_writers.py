"""Tests for polyepo.writers: records survive a write torn by a crash, and the
gzipped records archived under results/ read like plain ones."""

import gzip
import json
import os
import warnings

import pytest

from polyepo.io import writers


def _jsonl(path, records, tail=""):
  """Writes the records, one a line, then `tail`; gzipped when the path ends in .gz."""
  with (gzip.open(path, "wt") if path.endswith(".gz") else open(path, "w")) as f:
    f.write("".join(json.dumps(r) + "\n" for r in records) + tail)


RECORDS = [{"step": 1, "reward": 0.5, "shares": {"long": 0.25}}, {"step": 2, "reward": 0.75}]


@pytest.mark.parametrize("cut", [1, 7, len(json.dumps({"step": 3, "reward": 0.125})) - 1])
def test_a_torn_last_line_is_dropped_with_a_warning_naming_the_file(tmp_path, cut):
  path = str(tmp_path / "train.jsonl")
  _jsonl(path, RECORDS, json.dumps({"step": 3, "reward": 0.125})[:cut])
  with pytest.warns(writers.RecoveryWarning, match=r"train\.jsonl: its last line is incomplete"):
    assert writers.read_jsonl(path) == RECORDS


def test_a_whole_last_line_without_its_newline_is_kept(tmp_path):
  path = str(tmp_path / "eval.jsonl")
  _jsonl(path, RECORDS[:1], json.dumps(RECORDS[1]))
  assert writers.read_jsonl(path) == RECORDS


def test_a_damaged_line_before_the_last_names_the_file_and_line(tmp_path):
  path = str(tmp_path / "eval.jsonl")
  with open(path, "w") as f:
    f.write(json.dumps(RECORDS[0]) + "\n" + '{"step": 2, "rew\n' + json.dumps(RECORDS[1]) + "\n")
  with pytest.raises(ValueError, match=r"eval\.jsonl, line 2, is not a JSON record"):
    writers.read_jsonl(path)


def test_truncating_drops_later_steps_and_the_torn_line(tmp_path):
  path = str(tmp_path / "train.jsonl")
  _jsonl(path, RECORDS + [{"step": 3}], '{"step": 4, "re')
  with pytest.warns(writers.RecoveryWarning):
    writers.truncate_jsonl(path, 2)
  assert writers.read_jsonl(path) == RECORDS
  with open(path) as f:
    assert f.read().endswith("}\n")


def test_json_is_written_whole_or_not_at_all(tmp_path, monkeypatch):
  path = str(tmp_path / "config.json")
  writers.write_json_atomically(path, {"a": 1})

  def crash(*args, **kwargs):
    raise KeyboardInterrupt
  monkeypatch.setattr(json, "dump", crash)
  with pytest.raises(KeyboardInterrupt):
    writers.write_json_atomically(path, {"a": 2})
  monkeypatch.undo()
  with open(path) as f:
    assert json.load(f) == {"a": 1}
  assert sorted(os.listdir(tmp_path)) == ["config.json", "config.json.tmp"]


def test_truncating_without_a_step_drops_only_the_torn_line(tmp_path):
  path = str(tmp_path / "train.jsonl")
  _jsonl(path, RECORDS, '{"step": 3, "re')
  with pytest.warns(writers.RecoveryWarning):
    assert writers.truncate_jsonl(path) == RECORDS
  with warnings.catch_warnings():
    warnings.simplefilter("error")  # the file is whole again: no warning
    assert writers.read_jsonl(path) == RECORDS
  assert writers.truncate_jsonl(str(tmp_path / "missing.jsonl")) == []
  assert not os.path.exists(tmp_path / "missing.jsonl")


def test_a_gzipped_file_reads_as_the_plain_one(tmp_path):
  plain, packed = str(tmp_path / "eval.jsonl"), str(tmp_path / "packed" / "eval.jsonl.gz")
  os.makedirs(os.path.dirname(packed))
  _jsonl(plain, RECORDS)
  _jsonl(packed, RECORDS)
  with warnings.catch_warnings():
    warnings.simplefilter("error")
    assert writers.read_jsonl(packed) == writers.read_jsonl(plain) == RECORDS


def test_a_torn_last_line_in_a_gzipped_file_is_dropped_with_a_warning(tmp_path):
  path = str(tmp_path / "train.jsonl.gz")
  _jsonl(path, RECORDS, '{"step": 3, "re')
  with gzip.open(path, "rt") as f:
    assert f.read().endswith('"re')   # the decompressed text ends mid-line
  with pytest.warns(writers.RecoveryWarning,
                    match=r"train\.jsonl\.gz: its last line is incomplete"):
    assert writers.read_jsonl(path) == RECORDS
  damaged = str(tmp_path / "eval.jsonl.gz")
  _jsonl(damaged, RECORDS[:1], '{"step": 2, "rew\n' + json.dumps(RECORDS[1]) + "\n")
  with pytest.raises(ValueError, match=r"eval\.jsonl\.gz, line 2, is not a JSON record"):
    writers.read_jsonl(damaged)


def test_the_records_path_is_the_plain_file_or_else_its_gzipped_archive(tmp_path):
  workdir = str(tmp_path)
  plain, packed = os.path.join(workdir, "eval.jsonl"), os.path.join(workdir, "eval.jsonl.gz")
  assert writers.jsonl_path(workdir, "eval.jsonl") == plain   # neither: the plain path
  _jsonl(packed, RECORDS)
  assert writers.jsonl_path(workdir, "eval.jsonl") == packed
  _jsonl(plain, RECORDS[:1])   # a run writing again: its plain file is the newer
  assert writers.jsonl_path(workdir, "eval.jsonl") == plain
  assert writers.jsonl_path(workdir, "train.jsonl") == os.path.join(workdir, "train.jsonl")
