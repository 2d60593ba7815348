"""The README's Results tables say what results/final/summary.json says: every number
within the rounding of its printed digits, every verdict, every count of a group's
verdicts, and which claims are primary. A table edited by hand after a rerun, or a
rerun without its README, fails here."""

import fnmatch
import json
import os
import re

import pytest

from experiments.analysis import algorithms, records
from sweep_dirs import ROOT

NUMBER = re.compile(r"[−+-]?\d+\.\d+")
DOMAIN_OF_TITLE = {title: domain for domain, title in records.DOMAIN_TITLES.items()}


def _results_tables():
  """The README's Results section as tables: a list of (header cells, rows of cells)."""
  with open(os.path.join(ROOT, "README.md")) as f:
    text = f.read()
  section = text.split("\n## Results\n", 1)[1].split("\n## ", 1)[0]
  tables, rows = [], []
  for line in section.splitlines() + [""]:
    if line.startswith("|"):
      rows.append([cell.strip() for cell in line.strip().strip("|").split("|")])
    elif rows:
      tables.append((rows[0], rows[2:]))
      rows = []
  return tables


def _summary():
  path = os.path.join(ROOT, "results", "final", "summary.json")
  if not os.path.isfile(path):
    pytest.skip("no committed final comparison")
  with open(path) as f:
    return json.load(f)


def _numbers(cell):
  """The numbers printed in `cell`, each with its half unit in the last printed digit."""
  found = []
  for token in NUMBER.findall(cell):
    decimals = len(token.split(".")[1])
    found.append((float(token.replace("−", "-")), 0.5 * 10 ** -decimals))
  return found


def _assert_close(cell, values, what):
  printed = _numbers(cell)
  assert len(printed) == len(values), (what, cell)
  for (number, half_unit), value in zip(printed, values):
    # summary.json rounds to 4 decimals: allow that too.
    assert abs(number - value) <= half_unit + 1e-4, (what, cell, values)


def _domains(header):
  domains = [DOMAIN_OF_TITLE.get(title) for title in header[1:]]
  assert None not in domains, f"a column is not a domain title: {header}"
  return domains


def test_readme_rows_match_the_summary():
  summary = _summary()
  tables = [t for t in _results_tables() if t[1] and t[1][0][0] in algorithms.BY_LABEL]
  assert len(tables) == 1, "the README's Results have one table of rows"
  header, rows = tables[0]
  domains = _domains(header)
  for row in rows:
    key = algorithms.BY_LABEL[row[0]].key
    for domain, cell in zip(domains, row[1:]):
      test = summary[domain][key]["test"]
      _assert_close(cell, [test["pass@1"]["mean"], test["distinct_correct"]["mean"]],
                    (row[0], domain))
  assert {row[0] for row in rows} == {
      a.label for a in algorithms.ALGORITHMS if all(a.key in summary[d] for d in domains)}


# How the README writes each verdict (bold where the claim is decided).
VERDICT_CELLS = {"holds": "**holds**", "refuted": "**refuted**", "undecided": "undecided",
                 "not judged": "not judged", "not evaluated": "not evaluated"}


def _expand(pattern):
  """`a_{x,y}_b` -> [`a_x_b`, `a_y_b`]: a row's id pattern, braces as alternatives."""
  found = re.search(r"\{([^{}]*)\}", pattern)
  if not found:
    return [pattern]
  return [expanded for option in found.group(1).split(",")
          for expanded in _expand(pattern[:found.start()] + option + pattern[found.end():])]


def _group_cell(verdicts):
  """"1 hold, 0 refuted, 3 undecided" (and any not judged or not evaluated)."""
  counts = [f"{verdicts.count('holds')} hold", f"{verdicts.count('refuted')} refuted",
            f"{verdicts.count('undecided')} undecided"]
  counts += [f"{verdicts.count(v)} {v}" for v in ("not judged", "not evaluated")
             if verdicts.count(v)]
  return ", ".join(counts)


def test_readme_claims_match_the_summary():
  summary = _summary()
  tables = {t[0][0]: t for t in _results_tables() if t[0][0] in ("primary claim",
                                                                  "secondary claim")}
  assert sorted(tables) == ["primary claim", "secondary claim"], \
      "the README's Results have one table of primary claims and one of secondary ones"
  listed = set()
  for kind, (header, rows) in tables.items():
    domains = _domains(header)
    for row in rows:
      pattern = re.findall(r"\(`([^`]+)`\)$", row[0])
      assert pattern, f"a claim's row ends with its id in backticks: {row[0]}"
      patterns = _expand(pattern[0])
      for domain, cell in zip(domains, row[1:]):
        claims = [c for c in summary[domain]["claims"]
                  if any(fnmatch.fnmatchcase(c["id"], p) for p in patterns)]
        assert claims, (pattern[0], domain)
        assert all(c["definition"]["primary"] == (kind == "primary claim") for c in claims), \
            (kind, pattern[0])
        listed.update((domain, c["id"]) for c in claims)
        verdicts = [c["verdict"] for c in claims]
        if len(claims) > 1:
          assert cell == _group_cell(verdicts), (pattern[0], domain, cell)
          continue
        verdict = VERDICT_CELLS[verdicts[0]]
        assert cell.endswith(verdict), (pattern[0], domain, cell, verdicts[0])
        difference = claims[0].get("difference")
        if difference is None:
          assert cell == verdict, (pattern[0], domain, cell)
        else:
          _assert_close(cell, [difference["mean"], difference["ci_low"], difference["ci_high"]],
                        (pattern[0], domain))
  every = {(d, c["id"]) for d in summary for c in summary[d]["claims"]}
  assert listed == every, f"claims missing from the README: {sorted(every - listed)}"


def test_the_group_cells_and_patterns_by_hand():
  assert _expand("a_{test,ood}_pass@{8,16}") == ["a_test_pass@8", "a_test_pass@16",
                                                  "a_ood_pass@8", "a_ood_pass@16"]
  assert _expand("grpo_collapses") == ["grpo_collapses"]
  assert _group_cell(["holds", "undecided", "undecided", "not evaluated"]) == \
      "1 hold, 0 refuted, 2 undecided, 1 not evaluated"
