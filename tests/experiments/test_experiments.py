"""The entry points end to end: every RL config at size=smoke, and bad configs."""

import json
import os
import re
import subprocess
import sys

import pytest

import envs
import repo

ROOT = repo.ROOT
CONFIGS = ("grpo", "reward_shaping", "poly_epo", "pass_at_k", "ppo", "poly_ppo",
           "poly_epo_official", "dr_grpo")
# Hand-written: the algorithm each config runs and the row label its config.json records.
ALGORITHMS = {"grpo": ("grpo", "GRPO"), "reward_shaping": ("reward_shaping", "Reward shaping"),
              "poly_epo": ("set_rl", "Poly-EPO"), "pass_at_k": ("set_rl", "Set RL pass@n"),
              "ppo": ("ppo", "PPO"), "poly_ppo": ("poly_ppo", "Poly-PPO"),
              "poly_epo_official": ("set_rl", "Poly-EPO (as released)"),
              "dr_grpo": ("grpo", "Dr. GRPO")}
# The release's recipe and its Dr. GRPO run end to end on multiplication only (a
# shared loss and their algorithms' code are the other configs'; they learn in
# tests/experiments/test_poly_epo_official.py).
RECIPES = ("poly_epo_official", "dr_grpo")


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
  return str(tmp_path_factory.mktemp("cache"))


def _run(args, cache, timeout=600):
  env = dict(os.environ, POLYEPO_CACHE=os.path.join(cache, "models"),
             POLYEPO_DATA_DIR=os.path.join(cache, "tfds"), JAX_PLATFORMS="cpu")
  return subprocess.run([sys.executable, "-m", *args], cwd=ROOT, env=env, capture_output=True,
                        text=True, timeout=timeout)


def _smoke(name, domain, cache, tmp_path):
  workdir = tmp_path / name
  result = _run(["experiments.synthetic", f"--config=configs/{name}.py:domain={domain},size=smoke",
                 f"--workdir={workdir}"], cache)
  assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-4000:]
  records = [json.loads(l) for l in open(workdir / "train.jsonl")]
  assert [r["step"] for r in records] == [1, 2, 3, 4]
  evals = [json.loads(l) for l in open(workdir / "eval.jsonl")]
  assert [e["step"] for e in evals] == [0, 4]
  assert set(evals[-1]) >= {"test", "ood"}
  record = json.load(open(workdir / "config.json"))
  assert (record["algorithm"]["name"], record["label"]) == ALGORITHMS[name]
  assert "estimator" not in record["train"]
  assert (workdir / "checkpoints").is_dir() and (workdir / "tb").is_dir()
  return workdir, result


@pytest.mark.parametrize("name", CONFIGS)
def test_each_config_runs_its_algorithm_under_its_label(name):
  """What _smoke checks in a run's config.json, for every config without training."""
  import importlib  # pylint: disable=g-import-not-at-top
  from experiments.analysis import algorithms  # pylint: disable=g-import-not-at-top
  config = importlib.import_module(f"configs.{name}").get_config("size=smoke")
  label = algorithms.label_of(config.algorithm.to_dict(), config.train.to_dict())
  assert (config.algorithm.name, label) == ALGORITHMS[name]


# The main job's algorithm runs end to end in the default suite; the algorithms no
# other end-to-end test runs are slow. GRPO runs in test_the_domain_override_...,
# GRPO and reward shaping in the tiny sweep (test_sweep.py), Poly-PPO on
# polynomial_roots below: the configs do not depend on the domain.
SMOKED = ("poly_epo", "pass_at_k", "ppo", "poly_epo_official", "dr_grpo")


@pytest.mark.parametrize("name", [n if n == "poly_epo" else pytest.param(n, marks=pytest.mark.slow)
                                  for n in SMOKED])
def test_smoke_run_of_every_config(name, cache, tmp_path):
  workdir, result = _smoke(name, "multiplication", cache, tmp_path)
  assert "pass@k" in result.stdout
  if name in RECIPES:   # the release's loss, unstandardised, recorded as run
    record = json.load(open(workdir / "config.json"))
    assert (record["algorithm"]["normalize"], record["train"]["aggregation"],
            record["train"]["grad_clip"]) == (False, "sequence_sum", 0.3)
  # The same workdir again is refused; --resume at the end is a no-op that succeeds.
  again = _run(["experiments.synthetic", f"--config=configs/{name}.py:size=smoke",
                f"--workdir={workdir}"], cache)
  assert again.returncode != 0 and "--resume" in again.stderr
  if name == "poly_epo":
    resumed = _run(["experiments.synthetic", f"--config=configs/{name}.py:size=smoke",
                    f"--workdir={workdir}", "--resume"], cache)
    assert resumed.returncode == 0, resumed.stderr[-3000:]


def test_the_domain_override_trains_and_evaluates_that_domain(cache, tmp_path):
  """--config.domain=X is the config string's domain=X: the base model, the
  trained env, the eval splits and the run record are all X's."""
  from configs import grpo  # pylint: disable=g-import-not-at-top
  workdir = tmp_path / "run"
  result = _run(["experiments.synthetic", "--config=configs/grpo.py:size=smoke",
                 "--config.domain=polynomial_roots", f"--workdir={workdir}"], cache)
  assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-4000:]
  assert "base model: results/base/polynomial_roots-smoke/model" in result.stdout
  record = json.load(open(workdir / "config.json"))
  expected = json.loads(json.dumps(grpo.get_config("domain=polynomial_roots,size=smoke")
                                   .to_dict(), default=str))
  assert record["domain"] == "polynomial_roots" and record["base"] == expected["base"]
  names = envs.make("polynomial_roots")[0].strategy_names
  assert set(record["strategy_families"]) == set(names)
  final = [json.loads(l) for l in open(workdir / "eval.jsonl")][-1]
  for split in ("test", "ood"):
    assert set(final[split]["mean"]["strategy_share"]) == set(names) | {"DEGENERATE"}


@pytest.mark.slow
def test_smoke_run_with_bfloat16_matmuls(cache, tmp_path):
  workdir = tmp_path / "bf16"
  result = _run(["experiments.synthetic", "--config=configs/poly_epo.py:size=smoke",
                 f"--workdir={workdir}", "--config.matmul_dtype=bfloat16"], cache)
  assert result.returncode == 0, result.stderr[-3000:]
  assert json.load(open(workdir / "config.json"))["matmul_dtype"] == "bfloat16"
  records = [json.loads(l) for l in open(workdir / "train.jsonl")]
  # The rollout and the update compute the same log-probs up to bfloat16 rounding.
  assert all(abs(r["ratio_mean"] - 1) < 0.05 for r in records)


@pytest.mark.slow
def test_smoke_run_of_poly_ppo_on_polynomial_roots(cache, tmp_path):
  """Poly-PPO on the second domain (its vines cut responses at that domain's step
  boundaries) logs its rollout states, vine tokens, value loss, explained
  variance and the advantage spread at rollout states and elsewhere."""
  workdir, _ = _smoke("poly_ppo", "polynomial_roots", cache, tmp_path)
  record = json.loads(open(workdir / "train.jsonl").readline())
  assert {"value_loss", "explained_variance", "advantage_std", "rollout_states", "vine_tokens",
          "advantage_std_rollout", "advantage_std_other"} <= set(record)
  assert 1 <= record["rollout_states"] <= 2


@pytest.mark.slow
def test_a_tuning_run_evaluates_validation_only(cache, tmp_path):
  """A run of the tuning sweep (configs/sweeps/tuning.py) never evaluates test or ood."""
  from experiments import sweep  # pylint: disable=g-import-not-at-top
  run = sweep.load_sweep("configs/sweeps/tuning.py:domains=multiplication,size=smoke")[0]
  workdir = tmp_path / "tuning"
  result = _run(["experiments.synthetic", *run.flags(), f"--workdir={workdir}"], cache)
  assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-4000:]
  evals = [json.loads(l) for l in open(workdir / "eval.jsonl")]
  assert [e["step"] for e in evals] == [0, 4]
  assert all(set(e) - {"step"} == {"validation"} for e in evals), evals[-1].keys()
  assert evals[-1]["validation"]["mean"].get("forced_accuracy") is None


@pytest.mark.slow
def test_pretrain_reports_the_base_model(cache, tmp_path):
  """The base-model entry point: every split's report, the targets (on
  validation), and forced accuracy on training problems beside validation's for
  every strategy."""
  checkpoint = tmp_path / "base"
  result = _run(["experiments.pretrain", "--config=configs/pretrain.py:size=smoke",
                 f"--config.checkpoint={checkpoint}"], cache)
  assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-4000:]
  report = json.load(open(checkpoint / "report.json"))
  assert set(report) == {"validation", "test", "ood", "train"}
  strategies = set(report["test"]["strategy_share"]) - {"DEGENERATE"}
  assert set(report["train"]["forced_accuracy"]) == strategies
  for section in ("== multiplication / validation ==", "== multiplication / test ==",
                  "== multiplication / ood ==",
                  "== forced accuracy: training vs validation problems",
                  "== targets (validation) =="):
    assert section in result.stdout


@pytest.mark.slow
def test_token_errors_scores_every_strategy_on_training_and_test_problems(cache):
  """The entry point on the shipped smoke model: a row per strategy, a pair of
  shares (training / test) per role, each a share; then test's results split by
  whether a training demonstration writes their step."""
  result = _run(["experiments.token_errors", "--config=configs/pretrain.py:size=smoke",
                 "--num_problems=8", "--num_seen_problems=64"], cache)
  assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-4000:]
  lines = result.stdout.splitlines()
  names = list(envs.make("multiplication")[0].strategy_names)
  header = next(i for i, l in enumerate(lines) if l.startswith("tokens with p < 1/2"))
  rows = lines[header + 2:header + 2 + len(names)]
  assert [r.split()[0] for r in rows] == names
  for row in rows:
    pairs = [tuple(p.split(" / ")) for p in re.findall(r"\S+ / \S+", row)]
    assert len(pairs) == 4, row
    for value in (v for pair in pairs for v in pair if v != "–"):
      assert 0.0 <= float(value) <= 1.0, row
  # Then test's results by step: a share and a count, seen and never seen, per strategy.
  header = next(i for i, l in enumerate(lines) if l.startswith("test results, by step"))
  rows = lines[header + 2:]
  assert [r.split()[0] for r in rows] == names
  total = 0
  for row in rows:
    cells = re.findall(r"(\S+) \((\d+)\)", row)
    assert len(cells) == 2, row
    for share, count in cells:
      assert (share == "–") == (count == "0") and (share == "–" or 0 <= float(share) <= 1), row
      total += int(count)
  assert total > 0


@pytest.mark.parametrize("override,message", [
    ("--config.algorithm.set_size=4",
     "set_size must satisfy 1 <= set_size < samples_per_prompt=4"),
    ("--config.algorithm.name=a2c", "algorithm.name must be one of 'grpo', 'reward_shaping', "
     "'set_rl', 'set_rl_windowed', 'ppo', 'poly_ppo' or 'package.module:ATTRIBUTE'; got 'a2c'."),
    ("--config.algorithm.objective=polychromatic",
     "algorithm.objective must be one of 'polychromic'"),
    ("--config.algorithm.num_subsets=7",
     "num_subsets must be 0 (all subsets) or 1..C(N, n) = 6"),
    ("--config.algorithm.normalize_over=group",
     "algorithm.normalize_over must be one of 'prompt', 'batch'"),
    ("--config.matmul_dtype=float16", "matmul_dtype must be one of 'float32', 'bfloat16'"),
    ("--config.run.num_devices=3", "num_devices=3 must divide prompts_per_step="),
    ("--config.run.eval_num_samples=0", "eval_num_samples must be >= 1, got 0"),
    ("--config.run.eval_splits=('validation', 'tset')", "eval_splits=('validation', 'tset') "
     "must name each split at most once, at least one, among: validation, test, ood"),
    ("--config.base.pretrain.num_steps=0", "base: num_steps must be >= 1, got 0"),
    ("--config.base.pretrain.slip_rate=1.0", "base: slip_rate must be in [0, 1), got 1.0"),
])
def test_bad_config_fails_before_compiling(override, message, cache, tmp_path):
  result = _run(["experiments.synthetic", "--config=configs/poly_epo.py:size=smoke",
                 f"--workdir={tmp_path / 'bad'}", override], cache, timeout=120)
  assert result.returncode != 0
  assert message in result.stderr, result.stderr[-2000:]
  assert "pretrain:" not in result.stderr  # no pretraining progress bar: failed before it


@pytest.mark.parametrize("config,override,message", [
    ("reward_shaping", "--config.algorithm.lam=-1.0", "algorithm.lam must be >= 0, got -1.0"),
    ("poly_ppo", "--config.algorithm.vines.window=0",
     "algorithm.vines.window must be >= 1, got 0"),
    ("poly_ppo", "--config.algorithm.vines.samples=2",
     "algorithm.vines.samples must be > set_size=2"),
    ("poly_ppo", "--config.algorithm.gae.lam=2.0", "algorithm.gae.lam must be in [0, 1], got 2.0"),
    ("poly_ppo", "--config.algorithm.critic.model=mlp",
     "algorithm.critic.model must be one of 'head', "),
    ("ppo", "--config.algorithm.critic.learning_rate=0.0",
     "algorithm.critic.learning_rate must be > 0, got 0.0"),
])
def test_bad_algorithm_config_fails_before_compiling(config, override, message, cache, tmp_path):
  result = _run(["experiments.synthetic", f"--config=configs/{config}.py:size=smoke",
                 f"--workdir={tmp_path / 'bad'}", override], cache, timeout=120)
  assert result.returncode != 0
  assert message in result.stderr, result.stderr[-2000:]
  assert "pretrain:" not in result.stderr


def test_bad_config_string(cache, tmp_path):
  result = _run(["experiments.synthetic", "--config=configs/grpo.py:domain=chess"], cache,
                timeout=120)
  assert result.returncode != 0
  assert "domain='chess' is not one of: multiplication, polynomial_roots" in result.stderr


# -- the shipped base models ------------------------------------------------------


def _key_fields(config):
  from experiments import build  # pylint: disable=g-import-not-at-top
  from polyepo.pretraining import pretrain  # pylint: disable=g-import-not-at-top
  _, _, model_config, settings = build.pretrain_settings(build.base_config(config))
  return pretrain.cache_key_fields({"name": config.domain, **config.env.to_dict()},
                                   model_config, settings, config.base.seed)


@pytest.mark.parametrize("domain", ["multiplication", "polynomial_roots"])
def test_the_main_config_finds_its_shipped_base_model(domain):
  """The default config's base model is the shipped one (results/base/<domain>/model):
  its config.json records exactly the main job's pretraining config."""
  from configs import poly_epo  # pylint: disable=g-import-not-at-top
  from experiments import build  # pylint: disable=g-import-not-at-top
  config = poly_epo.get_config(f"domain={domain}")
  assert config.base.shipped
  assert build.shipped_base_model(_key_fields(config)) == os.path.join(
      ROOT, "results", "base", domain, "model")
  assert build.is_shipped(os.path.join(ROOT, "results", "base", domain, "model"))
  # Any other pretraining config has none: it is pretrained (and cached).
  config.base.seed = 1
  assert build.shipped_base_model(_key_fields(config)) is None
  config.base.seed = 0
  config.base.pretrain.num_steps += 1
  assert build.shipped_base_model(_key_fields(config)) is None
  assert not build.is_shipped(os.path.join(ROOT, "results", "base", domain))


@pytest.mark.parametrize("shipped, checkpoint, expected", [
    (True, "", "shipped"), (False, "", ""), (True, "/my/model", "/my/model")])
def test_the_base_model_comes_from_the_checkpoint_then_the_shipped_one_then_the_cache(
    monkeypatch, shipped, checkpoint, expected):
  from configs import poly_epo  # pylint: disable=g-import-not-at-top
  from experiments import build  # pylint: disable=g-import-not-at-top
  from polyepo.pretraining import pretrain  # pylint: disable=g-import-not-at-top
  asked = {}
  monkeypatch.setattr(pretrain, "base_model", lambda *a, checkpoint_dir, **kw: (
      asked.setdefault("dir", checkpoint_dir), checkpoint_dir, False))
  config = poly_epo.get_config("domain=multiplication")
  config.base.shipped, config.base.checkpoint = shipped, checkpoint
  build.base_model(build.base_config(config))
  assert asked["dir"] == (os.path.join(ROOT, "results", "base", "multiplication", "model")
                          if expected == "shipped" else expected)
