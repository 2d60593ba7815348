"""The preregistered claims (configs/claims.py) judged on constructed records
(experiments.analysis.claims).

The bootstrap, the rule and the corrections themselves are checked in
test_stats.py; here, that the claims feed them the right per-problem values at
their family's levels (the primary family across the domains, the secondary one
within each), print what they say, and that no claim changes after its result
without a mark.
"""

import dataclasses
import json
import os

import numpy as np
import pytest

from configs import claims as registry
from experiments.analysis import algorithms, claims, records, stats
from experiments.analysis.records import RARE_SHARE
from polyepo.evaluation import splits
from sweep_dirs import ROOT

P = 16
EVEN = np.arange(P) % 2 == 0
RULE = dict(registry.RULE, replicates=2000)   # the tests' intervals: faster, same rule
BY_ID = {claim.id: claim for claim in registry.CLAIMS}
PRIMARY = [claim for claim in registry.CLAIMS if claim.primary]


def _seed(num_correct, distinct_correct, num_samples=32):
  return {"num_samples": num_samples,
          "per_problem": {"num_correct": list(num_correct),
                          "distinct_correct": list(distinct_correct)}}


def _rows(per_label, seeds=5, num_samples=32, steps=300):
  """Rows of one domain; per_label: {label: (num_correct[P], distinct_correct[P])},
  the same values on every seed and on both claim splits (or, for a value of
  shape [seeds, P], per seed)."""
  def record(label, num_correct, distinct_correct):
    num_correct, distinct_correct = (np.broadcast_to(v, (seeds, P)) for v in
                                     (num_correct, distinct_correct))
    split = {"seeds": [_seed(c, d, num_samples) for c, d in zip(num_correct, distinct_correct)]}
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
  # Five primary claims on one domain: one family, M = 5, none decided both ways,
  # so each at 1 - 0.05/5.
  assert judged.primary == claims.Family("holm", 0.05, 5, ("multiplication",))
  assert [c.details["level"] for c in judged.claims] == [99.0] * 5
  lines = claims.bullets(judged.claims)
  assert len(lines) == 5 and all(l.endswith("**holds**") for l in lines), lines
  # Poly-EPO - GRPO = 3 distinct correct strategies on every problem: [3, 3] > 0; no
  # replicate on holding's null, p = 2 (0 + 1) / 2001, adjusted 5 p = 0.0050.
  assert ("difference +3.000 [+3.000, +3.000] (99.00%; adjusted p: holds 0.0050, refuted "
          "1.0000) → **holds**") in lines[2]
  # Poly-EPO - Base = 0 on every problem: "at least, less 0.25" holds at [0, 0].
  assert "difference +0.000 [+0.000, +0.000] (99.00%" in lines[1]
  # The same values from one seed each: nothing is judged.
  one = claims.bullets(_judge(_rows({"Base": BASE, "GRPO": GRPO, "Poly-EPO": POLY}, seeds=1),
                              IDS).claims)
  assert all(l.endswith("→ **not judged** (fewer than 2 seeds)") for l in one), one
  # Three seeds, not the registered five: judged, and said so.
  three = claims.bullets(_judge(_rows({"Base": BASE, "GRPO": GRPO, "Poly-EPO": POLY},
                                      seeds=3), IDS).claims)
  assert three[2].endswith("**holds** (seeds: 3 for Poly-EPO, 3 for GRPO; registered 5)"), three[2]


def test_claims_refuted_and_undecided_from_constructed_records():
  """GRPO two strategies above the base model: its collapse is refuted (low 2 >
  0 - 0.25); Poly-EPO 1 or 3 below GRPO by seed: "more than GRPO" is refuted (high
  -1 < 0 + 0.25); Poly-EPO one above or below the base model by seed: "keeps" is
  undecided (the interval reaches -1 and +1); pass@1 4 points above GRPO's on every
  problem: "within 3 points" is refuted."""
  by_seed = np.where(np.arange(5) % 2 == 0, 5, 3)[:, None] * np.ones(P)   # seeds 5, 3, 5, 3, 5
  rows = _rows({"Base": (np.full(P, 20), np.full(P, 4)),
                "GRPO": (np.full(P, 2), np.full(P, 6)),
                "Poly-EPO": (np.full(P, 4), by_seed)}, num_samples=50)
  judged = _judge(rows, ("grpo_collapses", "poly_epo_keeps", "poly_epo_more_than_grpo",
                         "poly_epo_pass@1"))
  assert [c.verdict for c in judged.claims] == ["refuted", "undecided", "refuted", "refuted"]
  keeps = judged.claims[1].details
  assert keeps["difference"]["ci_low"] == -1.0 and keeps["difference"]["ci_high"] == 1.0
  assert judged.claims[3].details["difference"] == {"mean": 0.04, "ci_low": 0.04, "ci_high": 0.04}
  assert judged.claims[0].lines[0].endswith("adjusted p: holds 1.0000, refuted 0.0040) → "
                                            "**refuted**")   # 4 · 2 / 2001


def test_a_row_trained_for_other_steps_is_not_judged():
  """The claims are registered at 300 steps: a 600-step row never meets a 300-step one."""
  rows = _rows({"Base": BASE, "GRPO": GRPO, "Poly-EPO": POLY})
  rows["Poly-EPO"]["record"]["step"] = 600
  judged = _judge(rows, IDS).claims
  assert judged[0].verdict == "holds"        # GRPO against Base: both as registered
  assert [c.verdict for c in judged[1:]] == ["not judged"] * 4
  assert judged[1].lines[0].endswith("not judged (Poly-EPO trained 600 steps; the claims are "
                                     "registered at 300)")


def test_the_primary_family_spans_both_domains():
  """One Holm family of 8 primary claims per domain: judged together, M = 16 and
  each claim is read at 1 - 0.05/16 (no claim here is decided both ways); alone, a
  domain's M is 8. The claims whose rows did not run (reward shaping's frontier,
  the release against Dr. GRPO) count in M all the same."""
  rows = _rows({"Base": BASE, "GRPO": GRPO, "Poly-EPO": POLY})
  both = claims.judge_all([], {"multiplication": rows, "polynomial_roots": rows},
                          claims=PRIMARY, rule=RULE)
  alone = claims.judge([], rows, "multiplication", claims=PRIMARY, rule=RULE)
  assert len(PRIMARY) == 8 and both["multiplication"].primary == both["polynomial_roots"].primary
  assert both["multiplication"].primary.size == 16 and alone.primary.size == 8
  for judged, m in ((both["multiplication"], 16), (both["polynomial_roots"], 16), (alone, 8)):
    verdicts = {c.claim.id: c.verdict for c in judged.claims}
    assert verdicts["no_lambda"] == verdicts["released_more_than_dr_grpo"] == "not evaluated"
    levels = {c.details["level"] for c in judged.claims if "level" in c.details}
    assert levels == {round(100 * (1 - 0.05 / m), 6)}
    # test pass@32 (0 or 1 by problem): the interval of difference_replicates at 0.05/M.
    [pass_at_32] = [c for c in judged.claims if c.claim.id == "poly_epo_beats_grpo_test_pass@32"]
    a, b = (records.per_problem(rows[label]["record"], "test", "pass@32")
            for label in ("Poly-EPO", "GRPO"))
    point, replicates = stats.difference_replicates(a, b, replicates=2000)
    interval = stats.bounds(point, replicates, 0.05 / m)
    assert pass_at_32.details["difference"] == {
        "mean": round(interval.mean, 4), "ci_low": round(interval.low, 4),
        "ci_high": round(interval.high, 4)}
    assert pass_at_32.verdict == stats.verdict(interval, ">", 0.0, registry.DELTA_PASS)
  # The family is printed into summary.json.
  family = both["multiplication"].primary.to_json()
  assert (family["correction"], family["claims"], family["domains"]) == (
      "holm", 16, ["multiplication", "polynomial_roots"])


def test_a_claim_decided_both_ways_eases_the_others():
  """Poly-EPO 0.125 strategies above GRPO on every problem: "more than GRPO" holds
  (0.125 > 0) and is refuted (0.125 < 0.25) at once, so no null of it can be true;
  the other two claims are then read at 0.05/2 (97.5%), itself at 0.05/3."""
  rows = _rows({"Base": (np.full(P, 20), np.full(P, 3)), "GRPO": (np.full(P, 2), np.full(P, 2)),
                "Poly-EPO": (np.full(P, 2), np.full(P, 2.125))})
  judged = _judge(rows, ("grpo_collapses", "poly_epo_more_than_grpo", "poly_epo_keeps")).claims
  assert [c.verdict for c in judged] == ["holds", "holds", "refuted"]
  assert [c.details["level"] for c in judged] == [97.5, round(100 * (1 - 0.05 / 3), 6), 97.5]
  assert (judged[1].details["p_holds_adjusted"], judged[1].details["p_refuted_adjusted"]) == (
      round(3 * 2 / 2001, 4), round(3 * 2 / 2001, 4))


def test_the_secondary_family_is_bonferroni_within_a_domain():
  """Each interval at 1 - 0.05/T, T the domain's secondary intervals: a
  difference that clears 0 at 95% alone does not at T = 30."""
  rng = np.random.default_rng(0)
  a = rng.integers(0, 9, size=P)
  b = np.clip(a - rng.integers(-1, 3, size=P), 0, 8)   # a little more, noisily
  ablation = "Poly-EPO (correct-only diversity)"
  rows = _rows({"Base": (np.full(P, 20), b), "GRPO": (np.full(P, 20), b),
                "Poly-EPO": (np.full(P, 20), a), ablation: (np.full(P, 20), b)})
  seeds = np.stack([a] * 5).astype(float), np.stack([b] * 5).astype(float)
  point, replicates = stats.difference_replicates(*seeds, replicates=2000)
  single = _judge(rows, ["incorrect_samples_explore"])
  assert single.secondary == claims.Family("bonferroni", 0.05, 1, ("multiplication",))
  assert single.claims[0].verdict == "holds"
  assert stats.bounds(point, replicates, 0.05).low > 0
  family = claims.judge([], rows, "multiplication", rule=RULE)
  # Every registered secondary interval counts, the rows that did not run too: the
  # papers' 6 pass@k (k = 8, 16, 64) and 8 pass@k below the base model, none for
  # rare strategies (no shares recorded), 1 for the ablation; the windowed claims
  # 2; the critic's 2 on distinct correct, 8 on pass@k, 1 on pass@1, 2 on vines.
  assert family.secondary.size == (6 + 8 + 1) + 2 + (2 + 8 + 1 + 2) == 30
  assert family.secondary.level == pytest.approx(100 * (1 - 0.05 / 30))
  [more] = [c for c in family.claims if c.claim.id == "incorrect_samples_explore"]
  wide = stats.bounds(point, replicates, 0.05 / 30)
  assert more.details["difference"] == {"mean": round(wide.mean, 4),
                                        "ci_low": round(wide.low, 4),
                                        "ci_high": round(wide.high, 4)}
  assert more.details["level"] == round(100 * (1 - 0.05 / 30), 6)
  assert wide.low <= 0 and more.verdict == "undecided"
  assert "adjusted" not in more.lines[0] and "p_holds_adjusted" not in more.details


def test_each_claim_carries_its_definition_and_interval_for_summary_json():
  judged = _judge(_rows({"Base": BASE, "GRPO": GRPO, "Poly-EPO": POLY}), IDS).claims
  more = judged[2].to_json()
  p = round(2 / 2001, 4)
  assert more == {
      "id": "poly_epo_more_than_grpo",
      "statement": "Poly-EPO has more distinct correct strategies than GRPO",
      "source": BY_ID["poly_epo_more_than_grpo"].source, "verdict": "holds",
      "definition": {"kind": "compare", "a": "Poly-EPO", "b": "GRPO", "split": "test",
                     "metric": "distinct_correct", "relation": ">", "margin": 0.0,
                     "delta": 0.25, "primary": True, "amplification": None},
      "difference": {"mean": 3.0, "ci_low": 3.0, "ci_high": 3.0}, "level": 99.0,
      "p_holds": p, "p_refuted": 1.0, "p_holds_adjusted": round(5 * 2 / 2001, 4),
      "p_refuted_adjusted": 1.0}
  # pass@1 differs by +1/32 on odd and -1/32 on even problems: mean 0, within 3 points.
  within = judged[4].to_json()
  assert (within["definition"]["relation"], within["definition"]["margin"],
          within["definition"]["delta"], within["difference"]["mean"]) == ("within", 0.03, 0.0,
                                                                           0.0)
  # Identical rows: pass@32 is 1 on both sides, marked saturated; refuted, as every
  # replicate is 0 < 0 + 0.02.
  same = _judge(_rows({"Base": POLY, "GRPO": POLY, "Poly-EPO": POLY}), IDS).claims
  assert same[3].to_json()["saturated"] and "saturated" not in same[2].to_json()
  assert same[3].lines[0].endswith("**refuted** (both saturated: near the ceiling, "
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


# -- the frontier claim --------------------------------------------------------------

def _run(name, spec, per_seed, lam=None, sweep=0):
  """A complete 300-step multiplication run whose final `test` evaluation has, per
  seed, (num_correct[P] of 32, distinct_correct[P]) from `per_seed`."""
  config = {"name": name, "domain": "multiplication", "algorithm": spec,
            "train": {"learning_rate": 3e-5, "num_steps": 300}}
  test = {"seeds": [_seed(c, d) for c, d in per_seed]}
  return records.RunRecord(name, "multiplication", algorithms.label_of(spec), lam, config,
                           [{"step": 300, "test": test}], [], sweep)


def _shaping(lam, correct, distinct, sweep=1):
  return _run(f"rs-{lam}", {"name": "reward_shaping", "lam": lam},
              [(np.full(P, correct), np.full(P, distinct))] * 5, lam, sweep)


def _frontier(runs):
  rows = records.select_rows(runs, "multiplication")
  judged = claims.judge(runs, rows, "multiplication", claims=[BY_ID["no_lambda"]], rule=RULE)
  return judged.lambda_lines, judged.claims[0]


def test_the_frontier_claim_bootstraps_every_run_on_the_same_problems():
  """Poly-EPO and reward shaping at the four λ, each with seed-to-seed noise: F's
  interval is `stats.frontier_gap` of `stats.joint_replicate_means` over the runs
  in λ order, read at 0.05 (one primary claim)."""
  rng = np.random.default_rng(1)

  def noisy(correct, distinct):
    return [(np.clip(correct + rng.integers(-2, 3, P), 0, 32),
             np.clip(distinct + rng.integers(-1, 2, P), 0, 8)) for _ in range(5)]

  poly = _run("p", {"name": "set_rl", "objective": "polychromic"}, noisy(18, 4))
  shaping = [_run(f"rs-{lam}", {"name": "reward_shaping", "lam": lam}, noisy(c, d), lam,
                  sweep=0 if lam == 0.3 else 1)
             for lam, c, d in ((0.1, 22, 2), (0.3, 20, 3), (1.0, 17, 3), (3.0, 12, 4))]
  lines, judged = _frontier([poly] + shaping)
  assert [l.split(" | ")[0] for l in lines[2:]] == ["| 0.1", "| 0.3 (the comparison's row)",
                                                    "| 1", "| 3"]
  values = [np.stack([records.per_problem(run.evals[-1], "test", name)
                      for name in ("pass@1", "distinct_correct")]) for run in [poly] + shaping]
  points, draws = stats.joint_replicate_means(values, 2000)
  gap = lambda m: stats.frontier_gap(m[0, 0], m[0, 1], m[1:, 0], m[1:, 1])   # pylint: disable=unnecessary-lambda-assignment
  interval = stats.bounds(float(gap(points)), gap(draws), 0.05)
  assert judged.details["difference"] == {"mean": round(interval.mean, 4),
                                          "ci_low": round(interval.low, 4),
                                          "ci_high": round(interval.high, 4)}
  assert judged.verdict == stats.verdict(interval, ">", 0.0, 0.25)
  assert judged.to_json()["definition"]["kind"] == "frontier"
  assert judged.details["level"] == 95.0 and judged.details["lambdas"] == [0.1, 0.3, 1.0, 3.0]


def test_the_frontier_claim_past_the_curve_s_pass_at_1():
  """Constant values. Poly-EPO: pass@1 20/32, 3 strategies. Reward shaping (λ 0.1
  to 3): pass@1 16, 14, 12, 8 of 32 with 1, 2, 3, 4 strategies: no λ reaches
  Poly-EPO's pass@1, so the curve is extended flat from its highest (16/32, 1):
  F = 3 - 1 = 2, holds. With 0.75 strategies it would be 0.75 - 1 < 0.25: refuted."""
  def poly(distinct):
    return _run("p", {"name": "set_rl", "objective": "polychromic"},
                [(np.full(P, 20), np.full(P, distinct))] * 5)
  shaping = [_shaping(lam, c, d, sweep=0 if lam == 0.3 else 1)
             for lam, c, d in ((0.1, 16, 1), (0.3, 14, 2), (1.0, 12, 3), (3.0, 8, 4))]
  _, judged = _frontier([poly(3)] + shaping)
  assert judged.verdict == "holds" and judged.details["curve_height"] == 1.0
  assert ("the most distinct correct the curve reaches at pass@1 ≥ 0.625: 1.000; F = "
          "Poly-EPO − curve +2.000 [+2.000, +2.000] (95.00%") in judged.lines[0]
  _, judged = _frontier([poly(0.75)] + shaping)
  assert judged.verdict == "refuted"
  # One registered λ missing: not evaluated, as "beyond the curve" is over every λ.
  _, judged = _frontier([poly(3)] + shaping[:3])
  assert judged.verdict == "not evaluated" and "λ = 3 did not run" in judged.lines[0]


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
  assert RARE_SHARE == 0.01 and judged.secondary.size == 2   # one rare strategy, two intervals
  [line] = claims.bullets(judged.claims)
  assert line.startswith("- `r` (rare) reaches ≥ 5× its base share under Poly-EPO and not "
                         "under GRPO: ")
  # Shares by hand: Base 1/128 = 0.78%, Poly-EPO 6/64 = 9.38% (12.0x), GRPO 0.
  assert "Base 0.78% [" in line and "Poly-EPO 9.38% [" in line
  assert "(12.0×; Poly-EPO − 5·Base +5.47 [" in line   # 9.375 - 5 * 0.78125
  assert "GRPO 0.00% [0.00, 0.00] (0.0×" in line and line.endswith("**holds**")
  # One family of two intervals, each at 1 - 0.05/2.
  assert judged.claims[0].details["level"] == 97.5
  entry = judged.claims[0].to_json()
  assert entry["strategy"] == "r" and entry["verdict"] == "holds"
  assert entry["share"]["Poly-EPO"] == {"mean": 0.0938, "ci_low": 0.0938, "ci_high": 0.0938}
  assert entry["a_minus_scaled_base"]["mean"] == round(6 / 64 - 5 / 128, 4)
  assert entry["b_minus_scaled_base"]["verdict"] == "holds"


def test_amplification_is_refuted_when_grpo_amplifies_too_or_poly_epo_falls_short():
  # GRPO at 12x too: GRPO − 5·Base is +5.47 points, above −0.2 (δ 0.002): refuted.
  both = _amplified(_shares_rows(
      {"Base": RARE_BASE, "GRPO": np.full(P, 6), "Poly-EPO": np.full(P, 6)}))
  assert both.claims[0].verdict == "refuted"
  assert both.claims[0].details["b_minus_scaled_base"]["verdict"] == "refuted"
  # 3x the base share is not 5x: Poly-EPO − 5·Base is -3.1 points on even problems
  # and 0 on odd ones, never as much as +0.2.
  short = _amplified(_shares_rows(
      {"Base": RARE_BASE, "GRPO": np.zeros(P, int), "Poly-EPO": np.where(EVEN, 3, 0)}))
  assert short.claims[0].verdict == "refuted"
  assert short.claims[0].details["a_minus_scaled_base"]["verdict"] == "refuted"
  # 5x on even problems and 6/64 on problem 1: Poly-EPO − 5·Base is +9.4 points
  # there and 0 elsewhere; 16 draws miss problem 1 with probability (15/16)^16 =
  # 0.36, so the interval reaches 0, and above δ: undecided.
  some = np.where(EVEN, 5, np.where(np.arange(P) == 1, 6, 0))
  close = _amplified(_shares_rows({"Base": RARE_BASE, "GRPO": np.zeros(P, int),
                                   "Poly-EPO": some}))
  assert close.claims[0].verdict == "undecided"
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
  assert judged.secondary.size == 4
  assert [(c.details["strategy"], c.verdict) for c in judged.claims] == [
      ("r", "holds"), ("q", "refuted")]


def test_amplification_of_poly_ppo_is_judged_against_ppo():
  rows = _shares_rows({"Base": RARE_BASE, "PPO": np.full(P, 6), "Poly-PPO": np.full(P, 6),
                       "GRPO": np.zeros(P, int), "Poly-EPO": np.full(P, 6)})
  judged = _amplified(rows, "rare_amplified_by_poly_ppo").claims[0]
  assert judged.lines[0].startswith("- `r` (rare) reaches ≥ 5× its base share under Poly-PPO "
                                    "and not under PPO")
  assert judged.verdict == "refuted"
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
    assert claim.kind in registry.KINDS, claim.id
    assert {claim.a, claim.b} <= labels, claim.id
    assert claim.split in splits.EVAL_SPLITS and claim.source, claim.id
    assert claim.relation in stats.RELATIONS, claim.id
    if claim.relation in (">", "<"):
      assert claim.delta > 0, claim.id
    if claim.kind == "compare" and claim.metric.startswith("pass@"):
      assert int(claim.metric[len("pass@"):]) <= registry.RULE["eval_samples"], claim.id
      assert claim.delta == (0.0 if claim.relation == "within" else 0.02), claim.id
    if claim.metric == "distinct_correct":
      assert claim.delta == 0.25, claim.id
  # The primary family comes first: 8 claims per domain, the papers' headline ones
  # and the release against Dr. GRPO; pass@k at k = 32 on test and ood, the
  # other k secondary, and every amplified claim secondary.
  primary = [claim.id for claim in registry.CLAIMS if claim.primary]
  assert registry.CLAIMS[:len(primary)] == registry.PRIMARY_CLAIMS
  assert primary == ["grpo_collapses", "poly_epo_keeps", "poly_epo_more_than_grpo",
                     "poly_epo_beats_grpo_test_pass@32", "poly_epo_beats_grpo_ood_pass@32",
                     "poly_epo_pass@1", "no_lambda", "released_more_than_dr_grpo"]
  assert BY_ID["released_more_than_dr_grpo"].a == "Poly-EPO (as released)"
  assert BY_ID["released_more_than_dr_grpo"].b == "Dr. GRPO"
  assert BY_ID["no_lambda"].kind == "frontier" and BY_ID["poly_epo_keeps"].relation == ">="
  assert not any(c.primary for c in registry.CLAIMS if c.kind == "amplified")
  # pass@k is claimed at every k from 8 to 64, on test and ood, against GRPO and
  # (for Poly-PPO) against PPO.
  assert registry.PASS_KS == (8, 16, 32, 64)
  for prefix in ("poly_epo_beats_grpo", "grpo_below_base", "poly_ppo_beats_ppo"):
    assert {f"{prefix}_{s}_pass@{k}" for s in ("test", "ood") for k in registry.PASS_KS} <= set(ids)
  # Every algorithm of the comparison is a row of some claim.
  assert set(registry.rows()) >= {
      "Base", "GRPO", "Dr. GRPO", "Reward shaping", "Poly-EPO", "Poly-EPO (as released)",
      "Poly-EPO (correct-only diversity)", "Poly-EPO (windowed)", "PPO", "Poly-PPO"}


@pytest.mark.parametrize("fields, message", [
    (dict(relation=">", delta=0.0), "a '>' claim needs delta > 0"),
    (dict(relation="<", delta=-0.1), "a '<' claim needs delta > 0"),
    (dict(relation="within", margin=0.03, delta=0.01), "a 'within' claim uses no delta"),
    (dict(relation=">=", delta=-0.25), "delta must be >= 0"),
    (dict(relation="≥", delta=0.25), "relation must be"),
    (dict(kind="lambda", delta=0.25), "kind must be one of"),
    (dict(kind="frontier", relation="<", delta=0.25), "a frontier claim is judged as '>'"),
    (dict(kind="amplified", amplification=5.0, delta=0.002, primary=True), "cannot be primary"),
])
def test_a_claim_that_cannot_be_judged_is_refused(fields, message):
  with pytest.raises(ValueError, match=message):
    registry.Claim("x", "a claim", "a source", "Poly-EPO", "GRPO", **fields)


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
