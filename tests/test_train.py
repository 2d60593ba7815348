"""Tests for polyepo.train and polyepo.loop: validation, determinism, seeds, resume."""

import dataclasses
import json
import os

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import envs
from polyepo import loop, model, pretrain, train

SMALL = dict(width=32, num_layers=1, num_heads=2)
TINY = train.TrainConfig(prompts_per_step=2, samples_per_prompt=4, set_size=2,
                         num_steps=4, steps_per_chunk=2, learning_rate=1e-3, warmup_steps=1)


@pytest.fixture(scope="module")
def setup():
  env, params = envs.make("multiplication")
  mc = pretrain.model_config_for(env, **SMALL)
  base = model.init_params(jax.random.key(0), mc)
  return env, params, mc, base


@pytest.mark.parametrize("change,match", [
    (dict(estimator="ppo"), "estimator must be one of 'grpo', 'reward_shaping', 'set_rl'"),
    (dict(objective="polychromatic"), "objective must be one of 'polychromic'"),
    (dict(set_size=4), "set_size must satisfy 1 <= set_size < samples_per_prompt=4"),
    (dict(set_size=0), "set_size must satisfy"),
    (dict(num_subsets=7), r"num_subsets must be 0 \(all subsets\) or 1..C\(N, n\) = 6"),
    (dict(lam=-0.1, estimator="reward_shaping"), "lam must be >= 0"),
    (dict(num_minibatches=3), "num_minibatches=3 must divide"),
    (dict(aggregation="mean"), "aggregation must be one of"),
    (dict(objective="majority_vote"), "needs answer ids"),
    (dict(samples_per_prompt=1, set_size=1), "samples_per_prompt must be >= 2"),
    (dict(temperature=0.0), "temperature must be > 0"),
])
def test_bad_configs_fail_before_compiling(change, match):
  with pytest.raises(ValueError, match=match):
    train.validate(dataclasses.replace(TINY, **change))


def test_run_settings_validation():
  with pytest.raises(ValueError, match="eval_every=3 must be a non-negative multiple"):
    loop.validate_settings(loop.RunSettings(eval_every=3), TINY)
  with pytest.raises(ValueError, match="num_steps=5 must be a multiple"):
    loop.validate_settings(loop.RunSettings(), dataclasses.replace(TINY, num_steps=5))
  with pytest.raises(ValueError, match=r"seed_batch_size=3 must be 0 .* or 1..num_seeds=2"):
    loop.validate_settings(loop.RunSettings(num_seeds=2, seed_batch_size=3), TINY)


def _run(setup, config, keys):
  env, params, mc, base = setup
  init, run_chunk = train.make_train(config, mc, env, params, num_seeds=keys.shape[0])
  state = init(base, keys)
  state, metrics = run_chunk(state, base)
  return state, metrics


def test_same_seed_same_metrics_and_seeds_are_independent(setup):
  keys = jax.random.split(jax.random.PRNGKey(3), 2)
  keys = jax.vmap(jax.random.key_data)(keys) if keys.dtype != jnp.uint32 else keys
  s1, m1 = _run(setup, TINY, keys)
  s2, m2 = _run(setup, TINY, keys)
  jax.tree.map(np.testing.assert_array_equal, m1, m2)
  jax.tree.map(np.testing.assert_array_equal, s1.params, s2.params)
  # Seed 1 of a 2-seed vmapped run equals a 1-seed run with its key.
  s_one, m_one = _run(setup, TINY, keys[1:])
  jax.tree.map(lambda a, b: np.testing.assert_allclose(a[1], b[0], rtol=1e-5, atol=1e-6),
               m1, m_one)
  assert not np.allclose(m1["entropy"][0], m1["entropy"][1])


def test_seed_batches_match_all_seeds_vmapped(setup):
  """3 seeds in batches of 2 (one batch plus a remainder of 1) = all 3 vmapped."""
  env, params, mc, base = setup
  keys = jnp.arange(6, dtype=jnp.uint32).reshape(3, 2)
  results = []
  for seed_batch_size in (0, 2):
    init, run_chunk = train.make_train(TINY, mc, env, params, num_seeds=3,
                                       seed_batch_size=seed_batch_size)
    state, metrics = run_chunk(init(base, keys), base)
    results.append((state.params, metrics))
  close = lambda a, b: np.testing.assert_allclose(a, b, rtol=2e-5, atol=2e-6)
  jax.tree.map(close, results[0][0], results[1][0])
  jax.tree.map(close, results[0][1], results[1][1])
  assert not np.allclose(results[0][1]["entropy"][0], results[0][1]["entropy"][2])


@pytest.mark.parametrize("estimator,extra", [
    ("grpo", {}), ("reward_shaping", {"lam": 0.5}), ("set_rl", {}),
    pytest.param("grpo", {"normalize": False}, marks=pytest.mark.slow),
    pytest.param("set_rl", {"objective": "pass_at_n"}, marks=pytest.mark.slow),
    pytest.param("set_rl", {"num_subsets": 3, "objective": "srl"}, marks=pytest.mark.slow),
])
def test_equal_rewards_give_no_nan_and_no_update(setup, estimator, extra):
  """An untrained policy never answers right: every reward is 0, every advantage 0,
  the loss 0, and Adam leaves the parameters exactly where they were."""
  env, params, mc, base = setup
  config = dataclasses.replace(TINY, estimator=estimator, kl_coef=0.0, **extra)
  state, metrics = _run(setup, config, jnp.zeros((1, 2), jnp.uint32))
  assert float(jnp.max(metrics["reward"])) == 0.0
  for name, value in metrics.items():
    assert np.all(np.isfinite(value)), name
  np.testing.assert_array_equal(metrics["advantage_std"], 0.0)
  jax.tree.map(lambda a, b: np.testing.assert_array_equal(a[0], b), state.params, base)


def test_policy_learns_from_nonzero_advantages(setup):
  """With a KL penalty the gradient is non-zero even at zero advantages: params move."""
  config = dataclasses.replace(TINY, kl_coef=1.0, learning_rate=1e-2)
  env, params, mc, base = setup
  state, metrics = _run(setup, config, jnp.zeros((1, 2), jnp.uint32))
  moved = jax.tree.map(lambda a, b: float(jnp.max(jnp.abs(a[0] - b))), state.params, base)
  assert max(jax.tree.leaves(moved)) > 0
  assert np.all(np.isfinite(metrics["kl_to_base"]))


def _problems(env, params, n=3):
  return {"test": jax.tree.map(np.asarray, env.sample_problems(jax.random.key(9), params, n))}


SETTINGS = loop.RunSettings(num_seeds=2, eval_every=0, checkpoint_every=2,
                            eval_num_problems=2, eval_num_samples=2)


def _final_params(workdir, setup, config):
  import orbax.checkpoint as ocp
  env, params, mc, base = setup
  init, _ = train.make_train(config, mc, env, params, num_seeds=2)
  abstract = jax.eval_shape(init, base, jnp.zeros((2, 2), jnp.uint32))
  with ocp.CheckpointManager(os.path.join(os.path.abspath(workdir), "checkpoints")) as m:
    return train.TrainState(*m.restore(m.latest_step(), args=ocp.args.StandardRestore(abstract)))


def test_resume_matches_uninterrupted_run(setup, tmp_path):
  env, params, mc, base = setup
  run = lambda cfg, wd, **kw: loop.train_and_evaluate(
      cfg, mc, env, params, base, _problems(env, params), str(wd), SETTINGS, progress=False, **kw)
  run(TINY, tmp_path / "full")
  # "Interrupted" after the first checkpoint (step 2), then resumed to step 4.
  run(dataclasses.replace(TINY, num_steps=2), tmp_path / "cut")
  run(TINY, tmp_path / "cut", resume=True)
  full = _final_params(tmp_path / "full", setup, TINY)
  resumed = _final_params(tmp_path / "cut", setup, TINY)
  assert int(full.step[0]) == int(resumed.step[0]) == 4
  jax.tree.map(np.testing.assert_array_equal, full.params, resumed.params)
  # The logs hold each step once, as in the uninterrupted run.
  steps = lambda wd: [json.loads(l)["step"] for l in open(wd / "train.jsonl")]
  assert steps(tmp_path / "cut") == steps(tmp_path / "full") == [1, 2, 3, 4]
  assert (tmp_path / "full" / "tb").is_dir()


def test_existing_workdir_is_refused(setup, tmp_path):
  workdir = tmp_path / "run"
  workdir.mkdir()
  (workdir / "train.jsonl").write_text("{}\n")
  with pytest.raises(FileExistsError, match="--resume .* --overwrite"):
    loop.prepare_workdir(str(workdir), resume=False, overwrite=False)
  loop.prepare_workdir(str(workdir), resume=False, overwrite=True)
  assert not (workdir / "train.jsonl").exists()
