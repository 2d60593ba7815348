"""experiments.build: one plan from a config, the domain named once, old records read."""

import json

import pytest

from configs import grpo, pass_at_k, poly_epo, poly_epo_windowed, poly_ppo, ppo, reward_shaping
from experiments import build
from experiments.analysis import algorithms
from polyepo.evaluation import splits
from polyepo.rl import algorithms as algorithms_lib
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
    ("algorithm.set_size", 9, "set_size must satisfy"),
    ("algorithm.name", "a2c", "algorithm.name must be one of"),
    ("algorithm.set_size", 0, "algorithm.set_size must"),
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
  old = {"domain": "multiplication", "env": {"digits": 2}, "train": {"learning_rate": 3e-5},
         "base": {"domain": "multiplication", "env": {"digits": 2}, "seed": 0}}
  assert build.upgrade_record(_flat(old)) == {
      "domain": "multiplication", "env.digits": 2, "train.learning_rate": 3e-5, "base.seed": 0}
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
  started = {"train": {"learning_rate": 3e-5, "microbatch_rows": 32},
             "algorithm": {"name": "poly_ppo", "set_size": 4, "critic": {"model": "head"}},
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
  with pytest.raises(ValueError, match=rf"another config: splits unset -> {splits.SCHEME!r}"):
    build.check_resumable(str(before), started)
  compute = {"train": {**started["train"], "microbatch_rows": 0},
             "algorithm": started["algorithm"],
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
  # A field no TrainConfig has is a change whatever its value.
  added = {**started, "train": {**started["train"], "lam": 0.0}}
  with pytest.raises(ValueError, match=r"train.lam unset -> 0.0"):
    build.check_resumable(str(tmp_path), added)
  # A TrainConfig field added since the run started, at its default, changes nothing.
  build.check_resumable(str(tmp_path), {**started, "train": {**started["train"],
                                                             "kl_coef": 0.0}})
  with pytest.raises(ValueError, match=r"train.kl_coef unset -> 0.1"):
    build.check_resumable(str(tmp_path), {**started, "train": {**started["train"],
                                                               "kl_coef": 0.1}})
  # So does a field of the algorithm (its factory's default), nested ones too; one
  # away from its default is a change, and so is a field the run set.
  algorithm = lambda **fields: {**started, "algorithm": {**started["algorithm"], **fields}}
  build.check_resumable(str(tmp_path), algorithm(
      objective="polychromic", critic={"model": "head", "clip": 0.2},
      vines={"num_states": 2, "samples": 8}))
  with pytest.raises(ValueError, match=r"algorithm.vines.samples unset -> 16"):
    build.check_resumable(str(tmp_path), algorithm(vines={"samples": 16}))
  with pytest.raises(ValueError, match=r"algorithm.critic.model 'head' -> 'trunk'"):
    build.check_resumable(str(tmp_path), algorithm(critic={"model": "trunk"}))
  with pytest.raises(ValueError, match=r"algorithm.set_size 4 -> 8"):
    build.check_resumable(str(tmp_path), algorithm(set_size=8))
  # Another algorithm is a change, and the first algorithm's fields it lacks are too.
  with pytest.raises(ValueError, match=r"algorithm.name 'poly_ppo' -> 'ppo'; "
                                       r"algorithm.set_size 4 -> unset"):
    build.check_resumable(str(tmp_path), {**started, "algorithm": {"name": "ppo",
                                                                   "critic": {"model": "head"}}})
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


# -- records of runs started before an algorithm's fields moved to config.algorithm ----

# Hand-written: an older config.json's config.train, every algorithm's fields in it
# (the old TrainConfig's), each away from its default so that a field moved to the
# wrong place shows (but normalize_over: "batch" needs normalize=True, and the
# upgraded algorithms must build); four of its shared fields.
OLD_SHARED = dict(prompts_per_step=4, samples_per_prompt=8, learning_rate=1e-4, num_steps=50)
OLD_FIELDS = dict(normalize=False, normalize_over="prompt", lam=0.7, objective="pass_at_n",
                  set_size=3, num_subsets=5, gamma=0.99, gae_lambda=0.9,
                  value_learning_rate=2e-3, value_clip=0.1, value_model="trunk",
                  num_vine_states=3, vine_samples=6, vine_window=1, vine_selection="early")
CRITIC = {"critic": {"model": "trunk", "learning_rate": 2e-3, "clip": 0.1},
          "gae": {"gamma": 0.99, "lam": 0.9}}
SETS = {"objective": "pass_at_n", "set_size": 3, "num_subsets": 5}
UPGRADED = {   # estimator -> config.algorithm, by hand
    "grpo": {"name": "grpo", "normalize": False, "normalize_over": "prompt"},
    "reward_shaping": {"name": "reward_shaping", "lam": 0.7, "normalize": False,
                       "normalize_over": "prompt"},
    "set_rl": {"name": "set_rl", **SETS, "normalize": False, "normalize_over": "prompt"},
    # windowed set RL's normalize standardised both advantages; normalize_over it ignored
    "set_rl_windowed": {"name": "set_rl_windowed",
                        "first": {"name": "set_rl", **SETS, "normalize": False},
                        "rest": {"name": "grpo", "normalize": False}},
    "ppo": {"name": "ppo", **CRITIC, "normalize": False},
    "poly_ppo": {"name": "poly_ppo", **SETS, **CRITIC, "normalize": False,
                 "vines": {"num_states": 3, "samples": 6, "window": 1, "selection": "early"}},
}


@pytest.mark.parametrize("estimator", sorted(UPGRADED))
def test_an_old_record_s_algorithm_moves_to_config_algorithm(estimator):
  old = {"name": "x", "domain": "multiplication", "run": {"seed": 3},
         "train": dict(OLD_SHARED, estimator=estimator, **OLD_FIELDS), "algorithm": "Mine",
         "strategy_families": {"a": "a"}, "splits": "exercise"}
  new = algorithms.upgrade(old)
  assert new == {"name": "x", "domain": "multiplication", "run": {"seed": 3},
                 "train": OLD_SHARED, "algorithm": UPGRADED[estimator], "label": "Mine",
                 "strategy_families": {"a": "a"}, "splits": "exercise"}
  algorithms_lib.resolve(new["algorithm"])   # an algorithm today's code builds
  assert algorithms.upgrade(new) == new     # today's layout is read as it is
  assert "estimator" in old["train"] and old["algorithm"] == "Mine"   # the input is kept


def test_an_old_record_without_a_label_or_of_an_outside_estimator():
  """A record from before the label was recorded gets none (the report makes one); an
  estimator defined outside the package keeps its name and the group fields."""
  old = {"train": dict(OLD_SHARED, estimator="my_module:Mine", **OLD_FIELDS)}
  assert algorithms.upgrade(old) == {
      "train": OLD_SHARED,
      "algorithm": {"name": "my_module:Mine", "normalize": False, "normalize_over": "prompt"}}
  assert algorithms.upgrade({"train": {"estimator": "grpo", "normalize": True}}) == {
      "train": {}, "algorithm": {"name": "grpo", "normalize": True}}


# Hand-written: what each config file set in config.train before its algorithm's
# fields moved (the old configs/*.py and base.py's smoke preset, over the old
# TrainConfig's defaults), and the top-level label its config.json recorded.
OLD_DEFAULTS = dict(estimator="set_rl", normalize=True, normalize_over="prompt", lam=0.0,
                    objective="polychromic", set_size=2, num_subsets=0, gamma=1.0,
                    gae_lambda=0.95, value_learning_rate=1e-3, value_clip=0.2,
                    value_model="head", num_vine_states=1, vine_samples=3, vine_window=2,
                    vine_selection="uniform")
OLD_CONFIGS = {
    "grpo": (grpo, dict(estimator="grpo"), "GRPO"),
    "reward_shaping": (reward_shaping, dict(estimator="reward_shaping", lam=0.3),
                       "Reward shaping"),
    "poly_epo": (poly_epo, dict(objective="polychromic"), "Poly-EPO"),
    "pass_at_k": (pass_at_k, dict(objective="pass_at_n"), "Set RL pass@n"),
    "poly_epo_windowed": (poly_epo_windowed, dict(estimator="set_rl_windowed",
                                                  normalize=True), "Poly-EPO (windowed)"),
    "ppo": (ppo, dict(estimator="ppo", value_model="surprise"), "PPO"),
    "poly_ppo": (poly_ppo, dict(estimator="poly_ppo", value_model="surprise"), "Poly-PPO"),
}
# A knob of each, changed in the old record: (old field, its value, the change named).
CHANGED_KNOBS = {
    "grpo": ("normalize", False, "algorithm.normalize False -> True"),
    "reward_shaping": ("lam", 0.1, "algorithm.lam 0.1 -> 0.3"),
    "poly_epo": ("set_size", 4, "algorithm.set_size 4 -> 2"),
    "pass_at_k": ("objective", "polychromic", "algorithm.objective 'polychromic' -> 'pass_at_n'"),
    "poly_epo_windowed": ("set_size", 4, "algorithm.first.set_size 4 -> 2"),
    "ppo": ("gae_lambda", 0.9, "algorithm.gae.lam 0.9 -> 0.95"),
    "poly_ppo": ("vine_samples", 8, "algorithm.vines.samples 8 -> 3"),
}


def _old_record(name, **changed):
  """The config.json a size=smoke run of configs/<name>.py wrote before its algorithm's
  fields moved, `changed` set in its config.train; and today's record of that config."""
  module, sets, label = OLD_CONFIGS[name]
  config = module.get_config("size=smoke")
  now = build.run_record(config, build.rl_settings(config).env)
  old = {k: v for k, v in now.items() if k != "label"}
  old["train"] = {**config.train.to_dict(), **OLD_DEFAULTS, **sets, **changed}
  old["algorithm"] = label
  return old, now


@pytest.mark.parametrize("name", sorted(OLD_CONFIGS))
def test_a_run_started_with_the_old_algorithm_fields_resumes_under_today_s_config(name,
                                                                                   tmp_path):
  old, now = _old_record(name)
  assert now["label"] == old["algorithm"]
  (tmp_path / "config.json").write_text(json.dumps(old, default=str))
  build.check_resumable(str(tmp_path), now)
  field, value, message = CHANGED_KNOBS[name]
  old, _ = _old_record(name, **{field: value})
  (tmp_path / "config.json").write_text(json.dumps(old, default=str))
  with pytest.raises(ValueError, match=r"was started with another config: "
                                       + message.replace("(", r"\(").replace(")", r"\)") + r"\."):
    build.check_resumable(str(tmp_path), now)


def test_an_old_record_s_fields_of_other_algorithms_are_not_changes(tmp_path):
  """config.train once held every algorithm's fields: GRPO's λ or set size changed
  nothing it computed, and resuming it ignores them; its own normalize does not."""
  old, now = _old_record("grpo", lam=0.5, set_size=3, value_model="trunk")
  (tmp_path / "config.json").write_text(json.dumps(old, default=str))
  build.check_resumable(str(tmp_path), now)
