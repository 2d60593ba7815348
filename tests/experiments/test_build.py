"""experiments.build: one plan from a config, the domain named once, old records read."""

import json

import pytest

from configs import grpo, poly_epo
from experiments import build
from polyepo.evaluation import splits
from polyepo.rl import plan


def test_the_base_model_derives_its_domain_and_env_from_the_config():
  config = grpo.get_config("domain=polynomial_roots,size=smoke")
  assert "domain" not in config.base and "env" not in config.base
  base = build.base_config(config)
  assert (base.domain, base.env.to_dict()) == ("polynomial_roots", {})
  config.env.max_root = 7   # an env kwarg reaches the base model too
  assert build.base_config(config).env.to_dict() == {"max_root": 7}
  # configs/pretrain.py's layout: the same fields as a pretraining config's
  from configs import pretrain as pretrain_config  # pylint: disable=g-import-not-at-top
  assert set(base) == set(pretrain_config.get_config("domain=polynomial_roots,size=smoke"))


def _refuse_loading(monkeypatch):
  def fail(*args, **kwargs):
    raise AssertionError("loaded before the checks")
  monkeypatch.setattr(build, "base_model", fail)
  monkeypatch.setattr(build, "eval_problems", fail)


@pytest.mark.parametrize("field,value,match", [
    ("run.eval_every", 3, "eval_every=3 must be a non-negative multiple of steps_per_chunk=2"),
    ("train.set_size", 9, "set_size must satisfy"),
    ("matmul_dtype", "int8", "matmul_dtype must be one of"),
    ("base.pretrain.num_steps", 0, "base: num_steps must be >= 1, got 0"),
])
def test_a_bad_config_is_refused_before_anything_loads(field, value, match, monkeypatch,
                                                        tmp_path):
  _refuse_loading(monkeypatch)
  config = poly_epo.get_config("size=smoke")
  config.update_from_flattened_dict({field: value})
  with pytest.raises(ValueError, match=match):
    build.rl_plan(config, str(tmp_path / "run"))
  assert not (tmp_path / "run").exists()


def test_an_existing_run_directory_is_refused_before_anything_loads(monkeypatch, tmp_path):
  _refuse_loading(monkeypatch)
  (tmp_path / "run").mkdir()
  (tmp_path / "run" / "train.jsonl").write_text("{}\n")
  with pytest.raises(FileExistsError, match="already exists"):
    build.rl_plan(poly_epo.get_config("size=smoke"), str(tmp_path / "run"))


def test_resuming_under_another_config_is_refused_before_anything_loads(monkeypatch, tmp_path):
  _refuse_loading(monkeypatch)
  config = poly_epo.get_config("size=smoke")
  (tmp_path / "run").mkdir()
  started = dict(config.to_dict(), train=dict(config.train.to_dict(), learning_rate=1.0))
  (tmp_path / "run" / "config.json").write_text(json.dumps(started, default=str))
  with pytest.raises(ValueError, match="train.learning_rate 1.0 -> "):
    build.rl_plan(config, str(tmp_path / "run"), resume=True)


def test_a_plan_holds_the_domain_s_env_base_model_and_splits(tmp_path):
  config = grpo.get_config("domain=polynomial_roots,size=smoke")
  config.run.eval_splits = ("test",)
  run = build.rl_plan(config, str(tmp_path / "run"))
  assert isinstance(run, plan.RunPlan) and run.workdir == str(tmp_path / "run")
  assert type(run.env).__name__ == "PolynomialRoots"
  assert run.record["domain"] == "polynomial_roots"
  assert run.record["strategy_families"] == dict(zip(run.env.strategy_names,
                                                     run.env.strategy_families))
  assert set(run.eval_problems) == {"test"}
  assert type(run.eval_problems["test"]).__name__ == "PolynomialProblems"
  assert run.model_config.vocab_size == run.env.vocab_size
  assert not (tmp_path / "run").exists()


def _flat(record):
  from flax import traverse_util  # pylint: disable=g-import-not-at-top
  return traverse_util.flatten_dict(record, sep=".")


def test_an_old_record_s_base_domain_reads_as_the_domain():
  """Hand-made records: config.json once held the base model's domain and env as
  base.domain and base.env; equal to the domain's, they are that field."""
  old = {"domain": "multiplication", "env": {"digits": 2}, "train": {"lam": 0.3},
         "base": {"domain": "multiplication", "env": {"digits": 2}, "seed": 0}}
  assert build.upgrade_record(_flat(old)) == {
      "domain": "multiplication", "env.digits": 2, "train.lam": 0.3, "base.seed": 0}
  other = dict(old, base={"domain": "polynomial_roots", "env": {"digits": 3}, "seed": 0})
  assert build.upgrade_record(_flat(other)) == dict(_flat(other))


def test_a_run_started_with_the_old_layout_resumes(tmp_path):
  config = poly_epo.get_config("size=smoke")
  started = dict(config.to_dict(), splits=splits.SCHEME)
  started["base"] = dict(started["base"], domain=config.domain, env={})
  (tmp_path / "config.json").write_text(json.dumps(started, default=str))
  build.check_resumable(str(tmp_path), config.to_dict())          # the same run
  started["base"]["domain"] = "polynomial_roots"
  (tmp_path / "config.json").write_text(json.dumps(started, default=str))
  with pytest.raises(ValueError, match="base.domain 'polynomial_roots' -> unset"):
    build.check_resumable(str(tmp_path), config.to_dict())


def test_resuming_under_another_config_is_refused(tmp_path):
  """A run resumes only under the config it started with, apart from how it is
  computed (seed batches, micro-batches, devices), where the base model is
  cached, more steps (it is extended) and fields added since at their defaults;
  every changed field is named with both values."""
  started = {"train": {"learning_rate": 3e-5, "microbatch_rows": 32, "set_size": 4},
             "run": {"seed_batch_size": 0, "eval_splits": ("test", "ood")},
             "base": {"pretrain": {"preference_steps": 150, "microbatch_rows": 32},
                      "cache_dir": ""}, "splits": splits.SCHEME}
  (tmp_path / "config.json").write_text(json.dumps(started))
  build.check_resumable(str(tmp_path), started)  # the same config (tuples as saved lists)
  # The split scheme is today's whatever the record says: a run started before it
  # trained on other problems.
  build.check_resumable(str(tmp_path), {k: v for k, v in started.items() if k != "splits"})
  before = tmp_path / "before"
  before.mkdir()
  (before / "config.json").write_text(json.dumps(
      {k: v for k, v in started.items() if k != "splits"}))
  with pytest.raises(ValueError, match=r"another config: splits unset -> 'exercise'"):
    build.check_resumable(str(before), started)
  compute = {"train": {**started["train"], "microbatch_rows": 0},
             "run": {**started["run"], "seed_batch_size": 1},
             "base": {"pretrain": {"preference_steps": 150, "microbatch_rows": 16},
                      "cache_dir": "/elsewhere"}}
  build.check_resumable(str(tmp_path), compute)
  science = {**started, "train": {**started["train"], "learning_rate": 1e-4},
             "base": {**started["base"], "pretrain": {"preference_steps": 900,
                                                      "microbatch_rows": 32}}}
  with pytest.raises(ValueError, match=r"another config: base.pretrain.preference_steps 150 "
                                       r"-> 900; train.learning_rate 3e-05 -> 0.0001\. .*"
                                       r"--overwrite"):
    build.check_resumable(str(tmp_path), science)
  added = {**started, "train": {**started["train"], "lam": 0.3}}
  with pytest.raises(ValueError, match=r"train.lam unset -> 0.3"):
    build.check_resumable(str(tmp_path), added)
  # A TrainConfig field added since the run started, at its default, changes nothing.
  build.check_resumable(str(tmp_path), {**started, "train": {**started["train"],
                                                             "value_model": "head"}})
  with pytest.raises(ValueError, match=r"train.value_model unset -> 'trunk'"):
    build.check_resumable(str(tmp_path), {**started, "train": {**started["train"],
                                                               "value_model": "trunk"}})
  # So does a RunSettings field; one away from its default is a change.
  build.check_resumable(str(tmp_path), {**started, "run": {**started["run"],
                                                           "eval_forced_samples": 8}})
  with pytest.raises(ValueError, match=r"run.eval_forced_samples unset -> 3"):
    build.check_resumable(str(tmp_path), {**started, "run": {**started["run"],
                                                             "eval_forced_samples": 3}})
  # How evaluation is batched, and what a run asks of Ray, change nothing computed.
  build.check_resumable(str(tmp_path), {**started, "resources": {"num_gpus": 0.5},
                                        "run": {**started["run"], "eval_seed_batch_size": 2,
                                                "eval_problems_per_chunk": 4}})
  steps = lambda n: {**started, "train": {**started["train"], "num_steps": n}}
  (tmp_path / "config.json").write_text(json.dumps(steps(300)))
  build.check_resumable(str(tmp_path), steps(600))  # a finished run is extended
  with pytest.raises(ValueError, match=r"train.num_steps 300 -> 200\. .*may only grow"):
    build.check_resumable(str(tmp_path), steps(200))
  build.check_resumable(str(tmp_path / "fresh"), science)  # nothing started there
