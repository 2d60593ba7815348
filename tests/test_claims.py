"""The papers' claims judged on constructed records (experiments.claims).

The bootstrap and the rule themselves are checked in test_stats.py; here, that
the claims feed them the right per-problem values and print what they say.
"""

import numpy as np

from experiments import claims

P = 16
EVEN = np.arange(P) % 2 == 0


def _seed(num_correct, distinct_correct, num_samples=32):
  return {"num_samples": num_samples,
          "per_problem": {"num_correct": list(num_correct),
                          "distinct_correct": list(distinct_correct)}}


def _rows(per_label, seeds=3, num_samples=32):
  """Rows of one domain; per_label: {label: (num_correct[P], distinct_correct[P])},
  the same values on every seed and on both claim splits."""
  def record(num_correct, distinct_correct):
    split = {"seeds": [_seed(num_correct, distinct_correct, num_samples)
                       for _ in range(seeds)]}
    return {"step": 100, "test": split, "ood": split}
  return {label: {"record": record(*values), "note": ""} for label, values in per_label.items()}


# Base: 5 / 4 distinct correct on even / odd problems; GRPO 2 / 1; Poly-EPO as Base.
# Correct samples of 32: Poly-EPO 1 on every problem, GRPO 2 on even and 0 on odd
# ones. So both have pass@1 1/32 (per problem they differ by 1/32 either way), and
# pass@32 is 1 for Poly-EPO, 1 / 0 on even / odd problems for GRPO.
BASE = (np.full(P, 20), np.where(EVEN, 5, 4))
GRPO = (np.where(EVEN, 2, 0), np.where(EVEN, 2, 1))
POLY = (np.full(P, 1), np.where(EVEN, 5, 4))


def test_claims_from_constructed_records():
  lines = claims.bullets(claims.claims(_rows({"Base": BASE, "GRPO": GRPO, "Poly-EPO": POLY})))
  assert len(lines) == 6 and all(l.endswith("**holds**") for l in lines), lines
  # Poly-EPO - GRPO = 3 distinct correct strategies on every problem: [3, 3] > 2.
  assert "difference +3.000 [+3.000, +3.000]" in lines[2]
  # The same values from one seed each: nothing is judged.
  one = claims.bullets(claims.claims(_rows({"Base": BASE, "GRPO": GRPO, "Poly-EPO": POLY},
                                            seeds=1)))
  assert len(one) == 6 and all("**not judged** (fewer than 2 seeds)" in l for l in one), one


def test_claims_on_identical_rows():
  """Three identical rows: every difference is exactly 0."""
  lines = claims.bullets(claims.claims(_rows({"Base": POLY, "GRPO": POLY, "Poly-EPO": POLY})))
  verdicts = [l.rsplit("→ ", 1)[1] for l in lines]
  assert verdicts[0] == "**does not hold**"    # GRPO below Base: high 0 is not < 0
  assert verdicts[1] == "**holds**"            # keeps them: 0 > -0.5
  assert verdicts[2] == "**does not hold**"    # exceeds by 2
  # pass@32 is 1 for both (every problem has a correct sample): saturated, and said so.
  for line in lines[3:5]:
    assert "**does not hold** (both saturated" in line, line
  assert lines[5].endswith("**holds**")        # pass@1 within 3 points


def test_each_claim_carries_its_verdict_and_interval_for_summary_json():
  """The structured claims behind the bullets, worked by hand on the rows above."""
  judged = claims.claims(_rows({"Base": BASE, "GRPO": GRPO, "Poly-EPO": POLY}))
  assert [c.verdict for c in judged] == ["holds"] * 6
  exceeds = judged[2].to_json()
  # Poly-EPO − GRPO is 3 distinct correct strategies on every problem and seed.
  assert exceeds == {
      "statement": "Poly-EPO exceeds GRPO by more than 2 distinct correct strategies",
      "verdict": "holds", "a": "Poly-EPO", "b": "GRPO", "split": "test",
      "metric": "distinct_correct", "relation": ">", "margin": 2.0,
      "difference": {"mean": 3.0, "ci_low": 3.0, "ci_high": 3.0}}
  # pass@1 differs by +1/32 on odd and -1/32 on even problems: mean 0, within 3 points.
  within = judged[5].to_json()
  assert (within["relation"], within["margin"], within["difference"]["mean"]) == \
      ("within", 0.03, 0.0)
  # Identical rows: pass@32 is 1 on both sides, marked saturated; one seed: not judged.
  same = claims.claims(_rows({"Base": POLY, "GRPO": POLY, "Poly-EPO": POLY}))
  assert same[3].to_json()["saturated"] and "saturated" not in same[2].to_json()
  one = claims.claims(_rows({"Base": BASE, "GRPO": GRPO, "Poly-EPO": POLY}, seeds=1))
  assert {c.verdict for c in one} == {"not judged"}
  assert claims.claims(_rows({"Base": BASE, "GRPO": GRPO}))[0].verdict == "not evaluated"
  # 24 samples per problem: pass@32 cannot be estimated, and says so.
  few = claims.claims(_rows({"Base": BASE, "GRPO": GRPO, "Poly-EPO": POLY}, num_samples=24))
  assert [c.verdict for c in few[3:5]] == ["not evaluated"] * 2
  assert claims.bullets(few[3:4]) == [
      "- Poly-EPO's test pass@32 beats GRPO's: not evaluated (fewer than 32 samples per "
      "problem)"]


def test_claims_need_the_three_rows():
  assert claims.bullets(claims.claims(_rows({"Base": BASE, "GRPO": GRPO}))) == [
      "- (needs Base, GRPO and Poly-EPO runs)"]


def test_critic_claims_judge_poly_ppo_against_ppo_and_poly_epo():
  # PPO and Poly-EPO as GRPO above, Poly-PPO as Poly-EPO above.
  lines = claims.bullets(claims.critic_claims(_rows({"Base": BASE, "PPO": GRPO, "Poly-PPO": POLY,
                                      "Poly-EPO": GRPO})))
  assert len(lines) == 5, lines
  assert lines[0].startswith("- PPO's distinct correct strategies fall below the base model's")
  assert lines[1].startswith("- Poly-PPO exceeds PPO by more than 2 distinct correct")
  assert "difference +3.000 [+3.000, +3.000]" in lines[1]
  assert all(l.endswith("**holds**") for l in lines[:4]), lines
  # pass@1 differs by +1/32 on odd and -1/32 on even problems: no gain over Poly-EPO.
  assert lines[4].startswith("- Poly-PPO's test pass@1 beats Poly-EPO's")
  assert lines[4].endswith("**does not hold**")
  assert claims.critic_claims(_rows({"Base": BASE, "GRPO": GRPO, "Poly-EPO": POLY})) == []
  assert len(claims.critic_claims(_rows({"Base": BASE, "PPO": GRPO, "Poly-PPO": POLY}))) == 3


def _shares_rows(counts_by_label, seeds=3, samples=64):
  """Rows whose test records hold per-problem counts of strategies "r" (rare) and
  "m" (the rest); counts_by_label: {label: i[P] counts of "r" of `samples`}."""
  def record(r_counts):
    r_counts = np.asarray(r_counts)
    seed = {"num_samples": samples, "per_problem": {
        "num_correct": [samples // 2] * P, "distinct_correct": [1] * P,
        "strategy_counts": {"r": r_counts.tolist(), "m": (samples - r_counts).tolist()}}}
    share = r_counts.sum() / (samples * P)
    test = {"mean": {"strategy_share": {"r": share, "m": 1 - share, "DEGENERATE": 0.0}},
            "seeds": [seed] * seeds}
    return {"step": 100, "test": test}
  return {label: {"record": record(c), "note": ""} for label, c in counts_by_label.items()}


# "r" is rare in the base model: 1 sample of 64 on half the problems, 0.78% overall.
RARE_BASE = np.where(EVEN, 1, 0)


def test_a_rare_strategy_amplified_by_poly_epo_and_not_grpo():
  # Poly-EPO: 6 of 64 on every problem (12x the base share); GRPO: never.
  lines = claims.bullets(claims.amplification_claims(_shares_rows(
      {"Base": RARE_BASE, "GRPO": np.zeros(P, int), "Poly-EPO": np.full(P, 6)})))
  assert len(lines) == 2
  assert lines[0].startswith("- A strategy under 1% of the base model's test samples reaches "
                             "≥ 5× its base share under Poly-EPO and not under GRPO")
  assert lines[0].endswith("**holds**")
  # Shares by hand: Base 1/128 = 0.78%, Poly-EPO 6/64 = 9.38% (12.0x), GRPO 0.
  assert "`r`: Base 0.78% [" in lines[1] and "Poly-EPO 9.38% [" in lines[1]
  assert "(12.0×; Poly-EPO − 5·Base +5.47 [" in lines[1]   # 9.375 - 5 * 0.78125
  assert "GRPO 0.00% [0.00, 0.00] (0.0×" in lines[1] and lines[1].endswith("**holds**")


def test_amplification_fails_when_grpo_amplifies_too_or_poly_epo_falls_short():
  both = claims.bullets(claims.amplification_claims(_shares_rows(
      {"Base": RARE_BASE, "GRPO": np.full(P, 6), "Poly-EPO": np.full(P, 6)})))
  assert both[0].endswith("**does not hold**") and both[1].endswith("**does not hold**")
  # 3x the base share is not 5x.
  short = claims.bullets(claims.amplification_claims(_shares_rows(
      {"Base": RARE_BASE, "GRPO": np.zeros(P, int), "Poly-EPO": np.where(EVEN, 3, 0)})))
  assert short[0].endswith("**does not hold**")
  one_seed = claims.bullets(claims.amplification_claims(_shares_rows(
      {"Base": RARE_BASE, "GRPO": np.zeros(P, int), "Poly-EPO": np.full(P, 6)}, seeds=1)))
  assert one_seed[0].endswith("**not judged** (fewer than 2 seeds)")


def test_amplification_of_poly_ppo_is_judged_against_ppo():
  rows = _shares_rows({"Base": RARE_BASE, "PPO": np.full(P, 6), "Poly-PPO": np.full(P, 6),
                       "GRPO": np.zeros(P, int), "Poly-EPO": np.full(P, 6)})
  lines = claims.bullets(claims.amplification_claims(rows, amplifier="Poly-PPO", baseline="PPO"))
  assert lines[0].endswith("under Poly-PPO and not under PPO → **does not hold**"), lines[0]
  assert "Poly-PPO 9.38% [" in lines[1] and "PPO 9.38% [" in lines[1]
  # The default pair reads other rows of the same domain.
  assert claims.bullets(claims.amplification_claims(rows))[0].endswith("**holds**")


def test_amplification_without_strategy_counts_says_so():
  rows = _shares_rows({"Base": RARE_BASE, "GRPO": np.zeros(P, int), "Poly-EPO": np.full(P, 6)})
  for row in rows.values():
    for seed in row["record"]["test"]["seeds"]:
      seed["per_problem"] = {k: v for k, v in seed["per_problem"].items()
                             if k != "strategy_counts"}
  lines = claims.bullets(claims.amplification_claims(rows))
  assert lines[0].endswith("→ not evaluated")
  assert "rerun with this version" in lines[1]


def test_the_rare_strategy_claim_has_one_part_per_strategy():
  [claim] = claims.amplification_claims(_shares_rows(
      {"Base": RARE_BASE, "GRPO": np.zeros(P, int), "Poly-EPO": np.full(P, 6)}))
  entry = claim.to_json()
  assert entry["verdict"] == "holds" and entry["amplification"] == 5.0
  [part] = entry["parts"]
  assert part["strategy"] == "r" and part["verdict"] == "holds"
  # By hand: Base 1/128, Poly-EPO 6/64 on every problem, GRPO 0; Poly-EPO − 5·Base
  # = 0.09375 − 5/128 = 0.0547 on average.
  assert part["share"]["Base"]["mean"] == round(1 / 128, 4)
  assert part["share"]["Poly-EPO"] == {"mean": 0.0938, "ci_low": 0.0938, "ci_high": 0.0938}
  assert part["a_minus_scaled_base"]["mean"] == round(6 / 64 - 5 / 128, 4)
  assert part["a_minus_scaled_base"]["verdict"] == "holds"
  assert part["b_minus_scaled_base"]["verdict"] == "holds"
