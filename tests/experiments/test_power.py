"""experiments.power: variance components by two-way ANOVA on matrices worked by hand
and on data drawn from known components, the chance of a decision against normal
tables and a simulation, and the command on hand-written sweep directories."""

import json
import math
import os
import re
import subprocess
import sys

import numpy as np
import pytest

from configs import claims as registry
from experiments import power
from experiments.analysis import records
from sweep_dirs import ROOT

# Φ from a normal table (Abramowitz & Stegun, table 26.1).
PHI_1, PHI_2, PHI_3, PHI_4 = 0.8413447461, 0.9772498681, 0.9986501020, 0.9999683288
ALPHA_Z1 = 2 * (1 - PHI_1)   # the two-sided level whose z is 1


def _components(problem, seed_a, seed_b, residual_a, residual_b, difference=0.0,
                seeds=5, problems=128):
  """DifferenceComponents with the given (true) variances."""
  def row(seed, residual):
    return power.RowComponents(seeds, problems, 0.0, seed, residual,
                               {"seed": seed, "problem": 0.0, "residual": residual})
  return power.DifferenceComponents(difference, problem, problem, row(seed_a, residual_a),
                                    row(seed_b, residual_b))


# -- (a) the method of moments by hand ------------------------------------------------

# a = [[1, 2, 6], [4, 5, 6]] (2 seeds x 3 problems): grand mean 24/6 = 4; seed means
# 3, 5; problem means 2.5, 3.5, 6.
#   MS_u = 3 [(3 - 4)² + (5 - 4)²] / 1 = 6
#   MS_e = 2 [(-1.5)² + (-0.5)² + 2²] / 2 = 6.5
#   residuals x - seed mean - problem mean + 4: [[-0.5, -0.5, 1], [0.5, 0.5, -1]],
#   MS_ε = (4 · 0.25 + 2 · 1) / (1 · 2) = 1.5
#   σ²_ε = 1.5, σ²_u = (6 - 1.5) / 3 = 1.5, σ²_e = (6.5 - 1.5) / 2 = 2.5.
A = [[1, 2, 6], [4, 5, 6]]
# b = [[1, 3, 6], [3, 3, 5]]: grand mean 3.5; seed means 10/3, 11/3; problem means 2, 3, 5.5.
#   MS_u = 3 [2 (1/6)²] = 1/6;  MS_e = 2 (2.25 + 0.25 + 4) / 2 = 6.5
#   residuals [[-5/6, 1/6, 2/3], -the same], MS_ε = 2 (25 + 1 + 16)/36 / 2 = 7/6
#   σ²_u = (1/6 - 7/6) / 3 = -1/3 -> clamped at 0; σ²_e = (6.5 - 7/6) / 2 = 8/3.
B = [[1, 3, 6], [3, 3, 5]]
# c = [[1, 1, 1], [3, 3, 3]]: seeds only. MS_u = 3 (1 + 1) = 6, MS_ε = 0, MS_e = 0:
#   σ²_u = 2, σ²_e = σ²_ε = 0.
C = [[1, 1, 1], [3, 3, 3]]


def test_row_components_by_hand():
  a = power.row_components(A)
  assert (a.seeds, a.problems) == (2, 3)
  assert a.residual == pytest.approx(1.5) and a.seed == pytest.approx(1.5)
  assert a.problem == pytest.approx(2.5)
  assert a.raw["ms_seed"] == pytest.approx(6) and a.raw["ms_problem"] == pytest.approx(6.5)
  b = power.row_components(B)
  assert b.raw["seed"] == pytest.approx(-1 / 3) and b.seed == 0.0   # clamped
  assert b.problem == pytest.approx(8 / 3) and b.residual == pytest.approx(7 / 6)
  c = power.row_components(C)
  assert (c.seed, c.problem, c.residual) == pytest.approx((2, 0, 0))


def test_difference_components_by_hand():
  # a - c: D = (2.5 - 2, 3.5 - 2, 6 - 2) = (0.5, 1.5, 4), mean 2, s²_D = (2.25 + 0.25 + 4)/2
  # = 3.25; σ²_e,diff = 3.25 - 1.5/2 - 0/2 = 2.5; d̂ = 4 - 2 = 2.
  d = power.difference_components(A, C)
  assert d.difference == pytest.approx(2) and d.problem == pytest.approx(2.5)
  assert d.clamped == () and d.estimable
  # Var d̂ at 2 seeds and 3 problems: 2.5/3 + 1.5/2 + 2/2 + 1.5/(2·3) + 0 = 2.8333.
  terms = power.variance_terms(d, 2, 2, 3)
  assert terms == pytest.approx({"problem": 2.5 / 3, "seed_a": 0.75, "seed_b": 1.0,
                                 "residual_a": 0.25, "residual_b": 0.0})
  assert power._now(d)["shares"]["seed_b"] == pytest.approx(1.0 / (2.5 / 3 + 2.0))
  # The bootstrap's W², exactly: Σα²/S² (a: 2/4, c: 2/4) + Σ(β^a - β^c)²/P² (6.5/9)
  # + Σγ²/(SP)² (a: 3/36) = 0.5 + 0.5 + 0.7222 + 0.0833 = 1.80556.
  assert power.bootstrap_sd(d, 2, 2, 3) ** 2 == pytest.approx(1.80556, abs=1e-5)
  # a - b: D = (0.5, 0.5, 0.5), s²_D = 0, so σ²_e,diff = 0 - 1.5/2 - (7/6)/2 = -4/3 -> 0,
  # and b's seed component is clamped too.
  d = power.difference_components(A, B)
  assert d.raw_problem == pytest.approx(-4 / 3) and d.problem == 0.0
  assert d.clamped == ("problem", "seed_b")


def test_one_seed_is_not_estimable():
  one = power.row_components([[1.0, 2.0, 4.0]])
  assert (one.seed, one.residual, one.problem) == (None, None, None)
  d = power.difference_components([[1.0, 2.0, 4.0]], A)
  # D = (1 - 2.5, 2 - 3.5, 4 - 6) = (-1.5, -1.5, -2), s²_D = (1/36 + 1/36 + 4/36)/2 = 1/12,
  # less A's residual 1.5/2 only: the 1-seed row's residual is unknown and stays in.
  assert d.raw_problem == pytest.approx(1 / 12 - 0.75) and not d.estimable
  with pytest.raises(ValueError, match="1 seed"):
    power.variance_terms(d, 5, 5, 128)
  with pytest.raises(ValueError, match="same problems"):
    power.difference_components(A, [[1.0, 2.0]])


def test_bootstrap_sd_is_the_replicates_sd():
  # Given the data, W² (unclamped estimates, the records' own S and P) is the variance
  # of the paired bootstrap's replicates: problems drawn once for both, seeds apart.
  rng = np.random.default_rng(1)
  problems = rng.normal(0, 1.0, 30)
  a = problems + rng.normal(0, 0.5, (4, 1)) + rng.normal(0, 0.7, (4, 30))
  b = 0.8 * problems + rng.normal(0, 0.5, (3, 1)) + rng.normal(0, 0.7, (3, 30))
  d = power.difference_components(a, b)
  assert d.clamped == ()
  replicates = 20_000
  p = rng.integers(0, 30, (replicates, 30))
  sa, sb = rng.integers(0, 4, (replicates, 4)), rng.integers(0, 3, (replicates, 3))
  draws = (a[sa[:, :, None], p[:, None, :]].mean(axis=(1, 2))
           - b[sb[:, :, None], p[:, None, :]].mean(axis=(1, 2)))
  # The sample variance of 20,000 near-normal replicates is within 4·sqrt(2/20,000) = 4%.
  assert draws.var() == pytest.approx(power.bootstrap_sd(d, 4, 3, 30) ** 2, rel=0.04)


# -- (b) data drawn from known components -------------------------------------------------


def test_components_of_data_drawn_from_known_ones():
  # σ²_e = 0.04, σ²_u = 0.01, σ²_ε = 0.09 at S = 40, P = 400. Sampling SDs (normal
  # data, MS ~ E[MS] χ²_df / df): MS_ε has df 39 · 399 = 15,561: SD 0.09 sqrt(2/15,561)
  # = 0.0010; σ̂²_u = (MS_u - MS_ε)/P with E MS_u = 0.09 + 400 · 0.01 = 4.09, df 39:
  # SD 4.09 sqrt(2/39) / 400 = 0.0023; σ̂²_e = (MS_e - MS_ε)/S with E MS_e = 0.09 +
  # 40 · 0.04 = 1.69, df 399: SD 1.69 sqrt(2/399) / 40 = 0.0030. Tolerances: 4 SDs.
  rng = np.random.default_rng(0)
  shared = rng.normal(0, math.sqrt(0.03), 400)

  def row():
    own = rng.normal(0, math.sqrt(0.01), 400)   # e = shared + own: σ²_e = 0.04
    return (shared + own + rng.normal(0, 0.1, (40, 1)) + rng.normal(0, 0.3, (40, 400)),
            own)

  (a, own_a), (b, own_b) = row(), row()
  c = power.row_components(a)
  assert c.residual == pytest.approx(0.09, abs=0.0041)
  assert c.seed == pytest.approx(0.01, abs=0.0093)
  assert c.problem == pytest.approx(0.04, abs=0.012)
  # Var(e^a - e^b) = 0.01 + 0.01 = 0.02: s²_D has Var D_p = 0.02 + 2 · 0.09/40 = 0.0245,
  # SD 0.0245 sqrt(2/399) = 0.0017; tolerance 4 SDs.
  d = power.difference_components(a, b)
  assert d.problem == pytest.approx(0.02, abs=0.0069)
  assert np.var(own_a - own_b, ddof=1) == pytest.approx(0.02, abs=0.0069)   # the draw itself


def test_the_variance_of_the_difference_is_the_models():
  # 4,000 experiments at S = 5, P = 50 drawn from the model: Var d̂ = 0.02/50 +
  # 2 · 0.01/5 + 2 · 0.09/250 = 0.00512; the sample variance of 4,000 normal draws is
  # within 4 sqrt(2/4,000) = 9% of it.
  rng = np.random.default_rng(2)
  n = 4000
  shared = rng.normal(0, math.sqrt(0.03), (n, 1, 50))

  def rows():
    return (shared + rng.normal(0, 0.1, (n, 1, 50)) + rng.normal(0, 0.1, (n, 5, 1))
            + rng.normal(0, 0.3, (n, 5, 50)))

  d = rows().mean(axis=(1, 2)) - rows().mean(axis=(1, 2))
  truth = _components(0.02, 0.01, 0.01, 0.09, 0.09)
  assert float(power.standard_error(truth, 5, 50)) ** 2 == pytest.approx(0.00512)
  assert d.var() == pytest.approx(0.00512, rel=0.09)


# -- (c) the chance of a decision ------------------------------------------------------------


def test_decision_probability_by_hand():
  assert power.z_value(0.05) == pytest.approx(1.959964, abs=1e-6)
  z = power.z_value(ALPHA_Z1)
  assert z == pytest.approx(1.0)
  rule = power.Rule

  def p(d, relation, margin, delta, se=0.01):
    return float(power.decision_probability(d, rule(relation, margin, delta), se, z))

  # ">" 0, δ 0.01, d = 0.03: Φ((0.03 - 0)/0.01 - 1) + Φ((0 + 0.01 - 0.03)/0.01 - 1)
  # = Φ(2) + Φ(-3).
  assert p(0.03, ">", 0.0, 0.01) == pytest.approx(PHI_2 + 1 - PHI_3, abs=1e-9)
  # "<" 0, δ 0.01, d = -0.03: Φ(3 - 1) + Φ((-0.03 + 0.01)/0.01 - 1), the same.
  assert p(-0.03, "<", 0.0, 0.01) == pytest.approx(PHI_2 + 1 - PHI_3, abs=1e-9)
  # ">=" 0.01, δ 0.01, d = 0.02: Φ((0.02 - 0.01 + 0.01)/0.01 - 1) + Φ((0.01 - 0.01 -
  # 0.02)/0.01 - 1) = Φ(1) + Φ(-3).
  assert p(0.02, ">=", 0.01, 0.01) == pytest.approx(PHI_1 + 1 - PHI_3, abs=1e-9)
  # "within" 0.03, d = 0: holds Φ(3 - 1) - Φ(-3 + 1); refuted Φ(-3 - 1) twice.
  assert p(0.0, "within", 0.03, 0.0) == pytest.approx(2 * PHI_2 - 1 + 2 * (1 - PHI_4),
                                                      abs=1e-9)
  # The interval (0.02 wide) is narrower than δ = 0.1: no d̂ leaves neither verdict,
  # and Φ(4) + Φ(4) is capped at 1.
  assert p(0.05, ">", 0.0, 0.1) == 1.0
  # An exact d̂ (SE 0) decides for sure, unless it sits on the margin.
  assert p(0.03, ">", 0.0, 0.01, se=0.0) == 1.0
  assert p(0.0, ">", 0.0, 0.0, se=0.0) == pytest.approx(2 * (1 - PHI_1))
  with pytest.raises(ValueError, match="relation must be one of"):
    p(0.0, "!=", 0.0, 0.0)


@pytest.mark.parametrize("d,relation,margin,delta", [
    (0.015, ">", 0.0, 0.01), (-0.012, "<", 0.0, 0.02), (0.005, ">=", 0.0, 0.01),
    (0.01, "within", 0.03, 0.0), (0.045, "within", 0.03, 0.0)])
def test_decision_probability_is_the_rules_frequency(d, relation, margin, delta):
  # 200,000 draws of d̂ ~ N(d, SE²), each judged by the rule on d̂ ± z SE: the share of
  # decisions is within 4 sqrt(1/4 / 200,000) = 0.0045 of P.
  se, z = 0.01, 1.5
  hat = np.random.default_rng(3).normal(d, se, 200_000)
  low, high = hat - z * se, hat + z * se
  decided = {">": (low > margin) | (high < margin + delta),
             "<": (high < margin) | (low > margin - delta),
             ">=": (low >= margin - delta) | (high < margin - delta),
             "within": ((-margin <= low) & (high <= margin)) | (low > margin) | (high < -margin)}
  expected = float(power.decision_probability(d, power.Rule(relation, margin, delta), se, z))
  assert decided[relation].mean() == pytest.approx(expected, abs=0.0045)


def test_smallest_seeds_and_exercises():
  c = _components(0.002, 0.0003, 0.0005, 0.012, 0.026, difference=0.03)
  rule, z = power.Rule(">", 0.0, 0.02), power.z_value(0.05 / 16)
  seeds = [power.smallest_seeds(c, rule, e, z) for e in (64, 128, 256, 512)]
  assert None not in seeds
  assert seeds == sorted(seeds, reverse=True) and seeds[0] > seeds[-1]   # more E, fewer S
  for e, s in zip((64, 128, 256, 512), seeds):   # the smallest: one fewer falls short
    at = lambda n: float(power.chance(c, rule, z, n, n, e))
    assert at(s) >= power.POWER and (s == power.MIN_SEEDS or at(s - 1) < power.POWER)
  exercises = [power.smallest_exercises(c, rule, s, z) for s in (30, 60, 120)]
  assert None not in exercises and exercises == sorted(exercises, reverse=True)
  # The seeds' floor: at 5 seeds even unlimited exercises leave SE² >= 0.0008/5 = 0.00016,
  # P <= Φ(0.03/0.0126 - 2.955) + Φ(-0.01/0.0126 - 2.955) = 0.28, so no E suffices.
  assert power.never(c, rule, z, seeds=5) and power.smallest_exercises(c, rule, 5, z) is None
  # The bootstrap's wider interval (its residual counted about three times) needs more.
  assert power.smallest_seeds(c, rule, 128, z, width="bootstrap") > seeds[1]


# -- (d) the command ---------------------------------------------------------------------------

SAMPLES, PROBLEMS, STEPS = 16, 12, 50


def _split(rng, seeds, accuracy, distinct):
  """One eval split: per seed, each problem's correct samples and distinct correct."""
  per_seed = []
  for _ in range(seeds):
    correct = rng.binomial(SAMPLES, accuracy)
    per_seed.append({"num_samples": SAMPLES, "per_problem": {
        "num_correct": correct.tolist(),
        "distinct_correct": (distinct + rng.normal(0, 0.2, PROBLEMS)).tolist()}})
  return {"mean": {"num_samples": SAMPLES, "num_problems": PROBLEMS}, "seeds": per_seed}


def _write_run(root, name, spec, evals):
  workdir = root / "runs" / name
  workdir.mkdir(parents=True)
  config = {"name": name, "domain": "multiplication", "env": {}, "algorithm": spec,
            "train": {"learning_rate": 3e-5, "num_steps": STEPS}}
  (workdir / "config.json").write_text(json.dumps(config))
  (workdir / "eval.jsonl").write_text("".join(json.dumps(e) + "\n" for e in evals))


@pytest.fixture(scope="module")
def sweep_dir(tmp_path_factory):
  """GRPO (its step 0 the Base row) and Poly-EPO with 3 seeds, PPO with 1."""
  root = tmp_path_factory.mktemp("power_sweep")
  rng = np.random.default_rng(4)
  accuracy = rng.uniform(0.2, 0.9, PROBLEMS)

  def evaluation(step, seeds, shift, distinct):
    return {"step": step, **{split: _split(rng, seeds, np.clip(accuracy + shift, 0, 1), distinct)
                             for split in ("test", "ood")}}

  _write_run(root, "grpo", {"name": "grpo", "normalize": True},
             [evaluation(0, 3, 0.0, 3.0), evaluation(STEPS, 3, 0.05, 1.0)])
  _write_run(root, "poly_epo", {"name": "set_rl", "objective": "polychromic", "set_size": 4,
                                "normalize": True, "normalize_over": "prompt"},
             [evaluation(STEPS, 3, 0.0, 4.0)])
  _write_run(root, "ppo", {"name": "ppo"}, [evaluation(STEPS, 1, 0.0, 1.0)])
  return root


def test_command_on_a_sweep_directory(sweep_dir, tmp_path):
  result = subprocess.run(
      [sys.executable, "-m", "experiments.power", str(sweep_dir), "--claims=all",
       "--nocount_exercises", "--exercises=64,128,9999", f"--out={tmp_path}"],
      cwd=ROOT, capture_output=True, text=True, timeout=120,
      env=dict(os.environ, JAX_PLATFORMS="cpu"))
  assert result.returncode == 0, result.stderr[-3000:]
  lines = result.stdout.strip().splitlines()
  compare = [c for c in registry.CLAIMS if c.kind == "compare"]
  match = re.fullmatch(r"power: (\d+) of (\d+) primary claims decidable within 30 seeds x "
                       r"512 exercises", lines[-1])
  assert match, lines[-1]
  decidable, total = map(int, match.groups())
  assert total == 2 * len(compare)   # every comparison, on both registered domains
  saved = json.loads((tmp_path / "power.json").read_text())
  entries = saved["domains"]["multiplication"]["compare"]
  assert decidable == sum(e.get("sizing", {}).get("decidable", False) for e in entries) >= 1
  assert saved["exercises"] == [64, 128, 512]   # 9999 capped at --max_exercises
  assert "Seeds x problems: Base ood 3x12, test 3x12;" in result.stdout
  assert "PPO ood 1x12, test 1x12." in result.stdout and "1 seed: PPO " in result.stdout
  assert "test: 12 problems; distinct exercises not counted (not asked for)." in result.stdout
  by_id = {e["id"]: e for e in entries}
  # Poly-EPO's distinct correct is 3 above GRPO's on every problem and seed, the noise
  # 0.2: decided at once. Its d̂ is the difference of the written means.
  more = by_id.get("poly_epo_more_than_grpo")
  if more is not None:
    values = {label: np.array([s["per_problem"]["distinct_correct"] for s in json.loads(
        (sweep_dir / "runs" / name / "eval.jsonl").read_text().splitlines()[-1])["test"]["seeds"]])
              for label, name in (("a", "poly_epo"), ("b", "grpo"))}
    assert more["components"]["difference"] == pytest.approx(values["a"].mean()
                                                             - values["b"].mean())
    assert more["sizing"]["decidable"] and more["sizing"]["p_now"] > 0.99
  # A claim on PPO (1 seed) is not sized; one without its rows is skipped, named.
  ppo = [e for e in entries if "PPO" in (e.get("a"), e.get("b")) and "skipped" not in e]
  assert ppo and all("not_sized" in e["sizing"] for e in ppo)
  assert any("no Poly-PPO row" in e.get("skipped", "") for e in entries)
  # pass@32 needs 32 samples a problem; these have 16.
  assert any(e.get("skipped") == "test pass@32 not evaluated" for e in entries)
  assert (tmp_path / "power.txt").read_text() == result.stdout
  # The records' provenance: these were written by hand, without a sweep.jsonl.
  assert f"- `{os.path.basename(str(sweep_dir))}`: no sweep.jsonl" in result.stdout


def test_archived_records_regenerate_the_power_analysis(sweep_dir, tmp_path):
  """--archive copies the records beside power.json, and they alone give it again."""
  def run(source, out, *extra):
    result = subprocess.run(
        [sys.executable, "-m", "experiments.power", source, "--nocount_exercises",
         f"--out={out}", *extra], cwd=ROOT, capture_output=True, text=True, timeout=120,
        env=dict(os.environ, JAX_PLATFORMS="cpu"))
    assert result.returncode == 0, result.stderr[-3000:]
    return result

  first = tmp_path / "first"
  run(str(sweep_dir), first, "--archive")
  archived = first / os.path.basename(str(sweep_dir))
  assert (archived / "runs" / "grpo" / "eval.jsonl.gz").exists()
  run(str(archived), tmp_path / "again")
  for name in ("power.json", "power.txt"):
    assert (tmp_path / "again" / name).read_text() == (first / name).read_text(), name
  refused = subprocess.run([sys.executable, "-m", "experiments.power", str(sweep_dir),
                            "--archive"], cwd=ROOT, capture_output=True, text=True,
                           timeout=120, env=dict(os.environ, JAX_PLATFORMS="cpu"))
  assert refused.returncode != 0 and "give --out=DIR" in refused.stderr


def test_no_primary_claims_size_nothing(sweep_dir):
  claim = registry.Claim("close", "Poly-EPO's pass@1 is within 3 points of GRPO's", "test",
                         "Poly-EPO", "GRPO", metric="pass@1", relation="within", margin=0.03)
  result = power.analyse(records.load_runs([str(sweep_dir)]), claims=(claim,), counts=None)
  lines = power.render(result)
  assert lines[-1] == "power: 0 of 0 primary claims decidable within 30 seeds x 512 exercises"
  entry = result["domains"]["multiplication"]["compare"][0]
  assert "components" in entry and "sizing" not in entry   # the components all the same
  assert any(line.startswith("close ") for line in lines)
  assert power.to_json(result)   # JSON-ready


def test_an_undecided_claim_s_needs_at_its_family_s_level():
  """Each undecided claim of kind "compare" (and no other) is sized at α/M of its
  family: its chance now at its records' seeds and exercises, and the fewest seeds
  (at those exercises) and exercises (at those seeds) that reach POWER."""
  from experiments.analysis import claims as claims_lib   # pylint: disable=g-import-not-at-top
  rng = np.random.default_rng(3)
  problems = rng.normal(0, 1.0, 40)
  a = 2.1 + problems + rng.normal(0, 0.05, (6, 1)) + rng.normal(0, 0.5, (6, 40))
  b = 2.0 + problems + rng.normal(0, 0.05, (5, 1)) + rng.normal(0, 0.5, (5, 40))

  def record(values):
    return {"test": {"seeds": [{"num_samples": 4, "per_problem": {"distinct_correct": list(v)}}
                               for v in values]}}

  rows = {"Poly-EPO": {"record": record(a)}, "GRPO": {"record": record(b)}}
  more = next(c for c in registry.PRIMARY_CLAIMS if c.id == "poly_epo_more_than_grpo")
  secondary = next(c for c in registry.CLAIMS if c.id == "incorrect_samples_explore")
  frontier = next(c for c in registry.CLAIMS if c.kind == "frontier")
  judged = [claims_lib.Judged(more, "", "undecided", (), {}),
            claims_lib.Judged(frontier, "", "undecided", (), {}),      # not of kind compare
            claims_lib.Judged(secondary, "", "holds", (), {})]         # decided
  judgement = claims_lib.Judgement(judged, claims_lib.Family("holm", 0.05, 16, ("m",)),
                                   claims_lib.Family("bonferroni", 0.05, 40, ("m",)), [])
  needs = power.undecided_needs(judgement, rows)
  assert list(needs) == ["poly_epo_more_than_grpo"]
  need = needs["poly_epo_more_than_grpo"]
  assert need["difference"] == pytest.approx(a.mean() - b.mean())
  assert (need["seeds"], need["exercises"]) == (5, 40)
  c, rule = power.difference_components(a, b), power.rule_of(more)
  z = power.z_value(0.05 / 16)
  chance = lambda s, e: float(power.chance(c, rule, z, s, s, e, "bootstrap"))
  assert need["p_now"] == pytest.approx(float(power.chance(c, rule, z, 6, 5, 40, "bootstrap")))
  assert need["p_now"] < power.POWER
  s, e = need["seeds_needed"], need["exercises_needed"]
  assert chance(s, 40) >= power.POWER > chance(s - 1, 40)
  assert chance(5, e) >= power.POWER > chance(5, e - 1)
  assert need["never_seeds"] is False
