"""The preregistered claims (configs/claims.py) judged on constructed records (experiments.claims).

The bootstrap and the rule themselves are checked in test_stats.py; here, that the
claims feed them the right per-problem values at the family's simultaneous level,
print what they say, and that no claim changes after its result without a mark.
"""

import dataclasses
import json
import os

import numpy as np
import pytest

from configs import claims as registry
from experiments.analysis import algorithms, claims, stats
from experiments.analysis.records import RARE_SHARE
from polyepo.evaluation import splits
from sweep_dirs import ROOT

P = 16
EVEN = np.arange(P) % 2 == 0
RULE = dict(registry.RULE, replicates=2000)   # the tests' intervals: faster, same rule
BY_ID = {claim.id: claim for claim in registry.CLAIMS}


def _seed(num_correct, distinct_correct, num_samples=32):
  return {"num_samples": num_samples,
          "per_problem": {"num_correct": list(num_correct),
                          "distinct_correct": list(distinct_correct)}}


def _rows(per_label, seeds=5, num_samples=32, steps=300):
  """Rows of one domain; per_label: {label: (num_correct[P], distinct_correct[P])},
  the same values on every seed and on both claim splits."""
  def record(label, num_correct, distinct_correct):
    split = {"seeds": [_seed(num_correct, distinct_correct, num_samples)
                       for _ in range(seeds)]}
    return {"step": 0 if label == "Base" else steps, "test": split, "ood": split}
  return {label: {"record": record(label, *values), "note": ""}
          for label, values in per_label.items()}


def _judge(rows, ids, rule=RULE):
  return claims.judge([], rows, "multiplication", claims=[BY_ID[i] for i in ids], rule=rule)


# Base: 5 / 4 distinct correct on even / odd problems; GRPO 2 / 1; Poly-EPO as Base.
# Correct samples of 32: Poly-EPO 1 on every problem, GRPO 2 on even and 0 on odd
# ones. So both have pass@1 1/32 (per problem they differ by 1/32 either way), and
# pass@32 is 1 for Poly-EPO, 1 / 0 on even / odd problems for GRPO.
BASE = (np.full(P, 20), np.where(EVEN, 5, 4))
GRPO = (np.where(EVEN, 2, 0), np.where(EVEN, 2, 1))
POLY = (np.full(P, 1), np.where(EVEN, 5, 4))
IDS = ("grpo_collapses", "poly_epo_keeps", "poly_epo_more_than_grpo",
       "poly_epo_beats_grpo_test_pass@32", "poly_epo_pass@1")


def test_claims_from_constructed_records():
  judged = _judge(_rows({"Base": BASE, "GRPO": GRPO, "Poly-EPO": POLY}), IDS)
  assert judged.num_intervals == 5 and judged.level == pytest.approx(99.0)
  lines = claims.bullets(judged.claims)
  assert len(lines) == 5 and all(l.endswith("**holds**") for l in lines), lines
  # Poly-EPO - GRPO = 3 distinct correct strategies on every problem: [3, 3] > 0.
  assert "difference +3.000 [+3.000, +3.000]" in lines[2]
  # Poly-EPO - Base = 0 on every problem: "at least" holds at [0, 0].
  assert "difference +0.000 [+0.000, +0.000] → **holds**" in lines[1]
  # The same values from one seed each: nothing is judged.
  one = claims.bullets(_judge(_rows({"Base": BASE, "GRPO": GRPO, "Poly-EPO": POLY}, seeds=1),
                              IDS).claims)
  assert all("**not judged** (fewer than 2 seeds)" in l for l in one), one
  # Three seeds, not the registered five: judged, and said so.
  three = claims.bullets(_judge(_rows({"Base": BASE, "GRPO": GRPO, "Poly-EPO": POLY},
                                      seeds=3), IDS).claims)
  assert "**holds** (seeds: 3 for Poly-EPO, 3 for GRPO; registered 5)" in three[2], three[2]


def test_a_row_trained_for_other_steps_is_not_judged():
  """The claims are registered at 300 steps: a 600-step row never meets a 300-step one."""
  rows = _rows({"Base": BASE, "GRPO": GRPO, "Poly-EPO": POLY})
  rows["Poly-EPO"]["record"]["step"] = 600
  judged = _judge(rows, IDS).claims
  assert judged[0].verdict == "holds"        # GRPO against Base: both as registered
  assert [c.verdict for c in judged[1:]] == ["not judged"] * 4
  assert judged[1].lines[0].endswith("not judged (Poly-EPO trained 600 steps; the claims are "
                                     "registered at 300)")


def test_the_intervals_are_simultaneous_over_the_family():
  """Each interval is at 1 - 0.05/T, T the family's intervals: a difference that
  clears 0 at 95% alone does not at T = 52."""
  rng = np.random.default_rng(0)
  a = rng.integers(0, 9, size=P)
  b = np.clip(a - rng.integers(-1, 3, size=P), 0, 8)   # a little more, noisily
  rows = _rows({"Base": (np.full(P, 20), b), "GRPO": (np.full(P, 20), b),
                "Poly-EPO": (np.full(P, 20), a)})
  seeds = np.stack([a] * 5).astype(float), np.stack([b] * 5).astype(float)
  alone = stats.difference_interval(*seeds, level=95.0, replicates=2000)
  assert alone.low > 0, alone
  single = _judge(rows, ["poly_epo_more_than_grpo"], dict(RULE, alpha=0.05))
  assert single.claims[0].verdict == "holds" and single.level == pytest.approx(95.0)
  family = claims.judge([], rows, "multiplication", rule=RULE)
  # Every registered interval counts, the rows that did not run too. The seeds'
  # claims: 3 on distinct correct, 8 + 8 on pass@k, 1 on pass@1, none for rare
  # strategies (no shares recorded), 2 per λ, 1 for the ablation; the windowed
  # claims 2; the critic's 2 on distinct correct, 8 on pass@k, 1 on pass@1, 2 on vines.
  assert family.num_intervals == (3 + 16 + 1 + 2 * 4 + 1) + 2 + (2 + 8 + 1 + 2)
  assert family.level == pytest.approx(100 * (1 - 0.05 / family.num_intervals))
  [more] = [c for c in family.claims if c.claim.id == "poly_epo_more_than_grpo"]
  wide = stats.difference_interval(*seeds, level=family.level, replicates=2000)
  assert more.details["difference"] == {"mean": round(wide.mean, 4),
                                        "ci_low": round(wide.low, 4),
                                        "ci_high": round(wide.high, 4)}
  assert wide.low <= 0 and more.verdict == "does not hold"


def test_each_claim_carries_its_definition_and_interval_for_summary_json():
  judged = _judge(_rows({"Base": BASE, "GRPO": GRPO, "Poly-EPO": POLY}), IDS).claims
  more = judged[2].to_json()
  assert more == {
      "id": "poly_epo_more_than_grpo",
      "statement": "Poly-EPO has more distinct correct strategies than GRPO",
      "source": BY_ID["poly_epo_more_than_grpo"].source, "verdict": "holds",
      "definition": {"kind": "compare", "a": "Poly-EPO", "b": "GRPO", "split": "test",
                     "metric": "distinct_correct", "relation": ">", "margin": 0.0,
                     "amplification": None},
      "difference": {"mean": 3.0, "ci_low": 3.0, "ci_high": 3.0}}
  # pass@1 differs by +1/32 on odd and -1/32 on even problems: mean 0, within 3 points.
  within = judged[4].to_json()
  assert (within["definition"]["relation"], within["definition"]["margin"],
          within["difference"]["mean"]) == ("within", 0.03, 0.0)
  # Identical rows: pass@32 is 1 on both sides, marked saturated.
  same = _judge(_rows({"Base": POLY, "GRPO": POLY, "Poly-EPO": POLY}), IDS).claims
  assert same[3].to_json()["saturated"] and "saturated" not in same[2].to_json()
  assert same[3].lines[0].endswith("**does not hold** (both saturated: near the ceiling, "
                                   "the difference is uninformative)")
  # A row that did not run, and a k above the samples, are not evaluated.
  missing = _judge(_rows({"Base": BASE, "GRPO": GRPO}), IDS).claims
  assert missing[0].verdict == "holds" and missing[1].verdict == "not evaluated"
  assert missing[1].lines[0].endswith(": no Poly-EPO row")
  few = _judge(_rows({"Base": BASE, "GRPO": GRPO, "Poly-EPO": POLY}, num_samples=24), IDS)
  assert few.claims[3].lines[0] == ("- Poly-EPO's test pass@32 beats GRPO's: not evaluated "
                                    "(fewer than 32 samples per problem)")


def test_a_change_after_the_result_is_marked_with_its_commit():
  claim = BY_ID["poly_epo_more_than_grpo"]
  changed = dataclasses.replace(claim, margin=2.0, changes=(registry.Change(
      "abc1234", claim.definition(), "the margin of the earlier headline"),))
  rows = _rows({"Base": BASE, "GRPO": GRPO, "Poly-EPO": POLY})
  [judged] = claims.judge([], rows, "multiplication", claims=[changed], rule=RULE).claims
  assert judged.verdict == "holds" and len(judged.lines) == 2
  assert judged.lines[1].startswith("  - *changed after its first result* (seen at commit "
                                    "`abc1234`): the margin of the earlier headline; it was ")
  assert judged.to_json()["changes"][0]["previous"]["margin"] == 0.0


def _shares_rows(counts_by_label, seeds=3, samples=64):
  """Rows whose test records hold per-problem counts of strategies "r" (rare) and
  "m" (the rest); counts_by_label: {label: i[P] counts of "r" of `samples`}."""
  def record(label, r_counts):
    r_counts = np.asarray(r_counts)
    seed = {"num_samples": samples, "per_problem": {
        "num_correct": [samples // 2] * P, "distinct_correct": [1] * P,
        "strategy_counts": {"r": r_counts.tolist(), "m": (samples - r_counts).tolist()}}}
    share = r_counts.sum() / (samples * P)
    test = {"mean": {"strategy_share": {"r": share, "m": 1 - share, "DEGENERATE": 0.0}},
            "seeds": [seed] * seeds}
    return {"step": 0 if label == "Base" else 300, "test": test}
  return {label: {"record": record(label, c), "note": ""} for label, c in counts_by_label.items()}


# "r" is rare in the base model: 1 sample of 64 on half the problems, 0.78% overall.
RARE_BASE = np.where(EVEN, 1, 0)


def _amplified(rows, claim_id="rare_amplified", seeds_rule=RULE):
  return claims.judge([], rows, "multiplication", claims=[BY_ID[claim_id]], rule=seeds_rule)


def test_a_rare_strategy_amplified_by_poly_epo_and_not_grpo():
  # Poly-EPO: 6 of 64 on every problem (12x the base share); GRPO: never.
  judged = _amplified(_shares_rows(
      {"Base": RARE_BASE, "GRPO": np.zeros(P, int), "Poly-EPO": np.full(P, 6)}))
  assert RARE_SHARE == 0.01 and judged.num_intervals == 2   # one rare strategy, two intervals
  [line] = claims.bullets(judged.claims)
  assert line.startswith("- `r` (rare) reaches ≥ 5× its base share under Poly-EPO and not "
                         "under GRPO: ")
  # Shares by hand: Base 1/128 = 0.78%, Poly-EPO 6/64 = 9.38% (12.0x), GRPO 0.
  assert "Base 0.78% [" in line and "Poly-EPO 9.38% [" in line
  assert "(12.0×; Poly-EPO − 5·Base +5.47 [" in line   # 9.375 - 5 * 0.78125
  assert "GRPO 0.00% [0.00, 0.00] (0.0×" in line and line.endswith("**holds**")
  entry = judged.claims[0].to_json()
  assert entry["strategy"] == "r" and entry["verdict"] == "holds"
  assert entry["share"]["Poly-EPO"] == {"mean": 0.0938, "ci_low": 0.0938, "ci_high": 0.0938}
  assert entry["a_minus_scaled_base"]["mean"] == round(6 / 64 - 5 / 128, 4)
  assert entry["b_minus_scaled_base"]["verdict"] == "holds"


def test_amplification_fails_when_grpo_amplifies_too_or_poly_epo_falls_short():
  both = _amplified(_shares_rows(
      {"Base": RARE_BASE, "GRPO": np.full(P, 6), "Poly-EPO": np.full(P, 6)}))
  assert both.claims[0].verdict == "does not hold"
  # 3x the base share is not 5x.
  short = _amplified(_shares_rows(
      {"Base": RARE_BASE, "GRPO": np.zeros(P, int), "Poly-EPO": np.where(EVEN, 3, 0)}))
  assert short.claims[0].verdict == "does not hold"
  one_seed = _amplified(_shares_rows(
      {"Base": RARE_BASE, "GRPO": np.zeros(P, int), "Poly-EPO": np.full(P, 6)}, seeds=1))
  assert one_seed.claims[0].verdict == "not judged"


def test_each_rare_strategy_is_its_own_claim():
  """Two rare strategies: one verdict each, never "holds if any one does"."""
  rows = _shares_rows({"Base": RARE_BASE, "GRPO": np.zeros(P, int), "Poly-EPO": np.full(P, 6)})
  for row in rows.values():
    record = row["record"]["test"]
    record["mean"]["strategy_share"]["q"] = record["mean"]["strategy_share"]["r"]
    for seed in record["seeds"]:
      seed["per_problem"]["strategy_counts"]["q"] = list(RARE_BASE)   # never amplified
  judged = _amplified(rows)
  assert judged.num_intervals == 4
  assert [(c.details["strategy"], c.verdict) for c in judged.claims] == [
      ("r", "holds"), ("q", "does not hold")]


def test_amplification_of_poly_ppo_is_judged_against_ppo():
  rows = _shares_rows({"Base": RARE_BASE, "PPO": np.full(P, 6), "Poly-PPO": np.full(P, 6),
                       "GRPO": np.zeros(P, int), "Poly-EPO": np.full(P, 6)})
  judged = _amplified(rows, "rare_amplified_by_poly_ppo").claims[0]
  assert judged.lines[0].startswith("- `r` (rare) reaches ≥ 5× its base share under Poly-PPO "
                                    "and not under PPO")
  assert judged.verdict == "does not hold"
  assert _amplified(rows).claims[0].verdict == "holds"


def test_amplification_without_strategy_counts_says_so():
  rows = _shares_rows({"Base": RARE_BASE, "GRPO": np.zeros(P, int), "Poly-EPO": np.full(P, 6)})
  for row in rows.values():
    for seed in row["record"]["test"]["seeds"]:
      seed["per_problem"] = {k: v for k, v in seed["per_problem"].items()
                             if k != "strategy_counts"}
  [judged] = _amplified(rows).claims
  assert judged.verdict == "not evaluated" and "no per-problem strategy counts" in judged.lines[0]


# -- the registry itself ------------------------------------------------------------

def test_the_registry_is_well_formed():
  ids = [claim.id for claim in registry.CLAIMS]
  assert len(set(ids)) == len(ids)
  labels = {a.label for a in algorithms.ALGORITHMS}
  for claim in registry.CLAIMS:
    assert claim.kind in ("compare", "amplified", "lambda"), claim.id
    assert {claim.a, claim.b} <= labels, claim.id
    assert claim.split in splits.EVAL_SPLITS and claim.source, claim.id
    if claim.kind == "compare":
      assert claim.relation in stats.RELATIONS, claim.id
    if claim.kind == "compare" and claim.metric.startswith("pass@"):
      assert int(claim.metric[len("pass@"):]) <= registry.RULE["eval_samples"], claim.id
  # The seeds' claims come first, and pass@k is claimed at every k from 8 to 64,
  # on test and ood, against GRPO and (for Poly-PPO) against PPO.
  assert registry.CLAIMS[:len(registry.SEEDS_CLAIMS)] == registry.SEEDS_CLAIMS
  assert registry.PASS_KS == (8, 16, 32, 64)
  for prefix in ("poly_epo_beats_grpo", "grpo_below_base", "poly_ppo_beats_ppo"):
    assert {f"{prefix}_{s}_pass@{k}" for s in ("test", "ood") for k in registry.PASS_KS} <= set(ids)
  # Every algorithm of the comparison is a row of some claim.
  rows = {label for claim in registry.CLAIMS for label in (claim.a, claim.b)}
  assert rows >= {"Base", "GRPO", "Reward shaping", "Poly-EPO",
                  "Poly-EPO (correct-only diversity)", "Poly-EPO (windowed)", "PPO", "Poly-PPO"}


def test_a_change_after_a_result_must_be_marked():
  """unmarked_changes on constructed summaries: a changed definition without a
  Change, and a claim no longer registered, are named; a marked change is not."""
  claim = BY_ID["poly_epo_more_than_grpo"]
  judged = {"multiplication": {"claims": [
      {"id": claim.id, "definition": claim.definition()},
      {"statement": "an entry from before the registry"}]}}
  assert claims.unmarked_changes(judged) == []
  changed = dataclasses.replace(claim, margin=2.0)
  [line] = claims.unmarked_changes(judged, [changed])
  assert line.startswith("multiplication: 'poly_epo_more_than_grpo' changed after its result "
                         "without a Change")
  marked = dataclasses.replace(changed, changes=(registry.Change(
      "abc1234", claim.definition(), "a reason"),))
  assert claims.unmarked_changes(judged, [marked]) == []
  assert claims.unmarked_changes(judged, []) == [
      "multiplication: 'poly_epo_more_than_grpo' was judged and is no longer registered"]


def test_no_claim_changed_after_its_result_without_being_marked():
  """Each claim recorded in results/final/summary.json is registered as it was judged,
  or its change is marked."""
  with open(os.path.join(ROOT, "results", "final", "summary.json")) as f:
    assert claims.unmarked_changes(json.load(f)) == []
