"""The mutation check's list stays applicable (tests/mutants.py; run it with
`python -m tests.mutants`)."""

import os

import pytest

import mutants


def test_every_mutant_applies_to_the_current_sources():
  assert len({m.name for m in mutants.MUTANTS}) == len(mutants.MUTANTS)
  for m in mutants.MUTANTS:
    with open(os.path.join(mutants.ROOT, m.path)) as f:
      assert f.read().count(m.old) == 1, m.name
    assert m.old != m.new and m.tests and all(
        os.path.exists(os.path.join(mutants.ROOT, t.split("::")[0]))
        for t in m.tests if t.startswith("tests/"))


def test_a_stale_mutant_fails_loudly(tmp_path):
  (tmp_path / "polyepo" / "core").mkdir(parents=True)
  (tmp_path / "polyepo" / "core" / "losses.py").write_text("nothing to see\n")
  with pytest.raises(ValueError, match="pg_min: the snippet occurs 0 times"):
    mutants.apply(mutants.MUTANTS[0], str(tmp_path))
