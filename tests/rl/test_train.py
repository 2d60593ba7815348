"""Tests for polyepo.rl.train and the algorithms it trains (polyepo.rl.algorithms):
learning, validation, determinism, seeds, the critic, specs and the registry.

The policy trains on `toy_env.ChoiceEnv`, where rewards depend on the problem
and the untrained base is right about 10% of the time: every algorithm must
raise the exact expected reward past what a policy blind to its prompt can
reach, which fails if rewards are paired with the wrong prompts, grouped across
prompts, or the advantage sign is flipped.
"""

import dataclasses
import functools
import re
import types

import jax
import jax.numpy as jnp
import ml_collections
import numpy as np
import pytest

import envs
import tiny_rl
import toy_env
from polyepo import accumulation, parallel
from polyepo.policy import model, value_head
from polyepo.pretraining import pretrain
from polyepo.rl import algorithms, estimators, parts, train

SMALL, TINY, SET_RL = tiny_rl.SMALL, tiny_rl.TINY, tiny_rl.SET_RL
LEARN = train.TrainConfig(prompts_per_step=8, samples_per_prompt=8, num_minibatches=1,
                          num_steps=20, steps_per_chunk=20, learning_rate=1e-2, warmup_steps=1)


setup = pytest.fixture(scope="module")(tiny_rl.setup)  # (env, env_params, model_config, base)


def _keys(num_seeds, offset=0):
  return jnp.arange(offset, offset + 2 * num_seeds, dtype=jnp.uint32).reshape(num_seeds, 2)


def _run(setup, config, algorithm, keys, env=None, policy=None, seed_batch_size=0):
  """Trains num_seeds = len(keys) seeds of `algorithm` (a spec or an Algorithm) for one
  chunk from `policy` (default: base), after the checks `plan.make` runs."""
  default_env, params, mc, base = setup
  algorithm, env = algorithms.resolve(algorithm), env or default_env
  train.check(config, algorithm, env)
  init, run_chunk = train.make_train(config, algorithm, mc, env, params,
                                     num_seeds=keys.shape[0], seed_batch_size=seed_batch_size)
  return run_chunk(init(base if policy is None else policy, keys), base)
def _expected_reward(setup, params):
  """f32[S, problems]: exact expected reward of each seed's policy."""
  mc = setup[2]
  return np.asarray(jax.vmap(lambda p: toy_env.expected_reward(p, mc))(params))


# -- learning -------------------------------------------------------------------

SETS = dict(objective="polychromic", set_size=4)   # n = 4 of N = 8
ALGORITHMS = {
    "grpo": dict(name="grpo"),
    "dr_grpo": dict(name="grpo", normalize=False),
    "reward_shaping": dict(name="reward_shaping", lam=0.5),
    "poly_epo_exact": dict(name="set_rl", **SETS),
    "poly_epo_sampled": dict(name="set_rl", num_subsets=16, **SETS),
    "ppo": dict(name="ppo"),
    "poly_ppo": dict(name="poly_ppo", **SETS),
    "poly_epo_windowed": dict(name="set_rl_windowed", first=dict(name="set_rl", **SETS)),
    "poly_ppo_surprise": dict(name="poly_ppo", critic=dict(model="surprise"), **SETS),
    "poly_ppo_trunk": dict(name="poly_ppo", critic=dict(model="trunk"), **SETS),
}
SLOW_ALGORITHMS = ("grpo", "poly_epo_sampled", "ppo", "poly_ppo", "poly_ppo_surprise",
                   "poly_ppo_trunk")  # over 20 s each on 2 cores


@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.slow) if n in SLOW_ALGORITHMS
                                  else n for n in ALGORITHMS])
def test_each_algorithm_raises_reward_from_a_nontrivial_start(setup, name):
  """20 steps lift the exact expected reward from ~0.1 past the 0.5 that any
  prompt-blind policy is capped at, for both seeds."""
  base = setup[3]
  start = toy_env.expected_reward(base, setup[2])
  assert 0.02 < float(start.min()) and float(start.mean()) < 0.2
  state, metrics = _run(setup, LEARN, ALGORITHMS[name], _keys(2))
  final = _expected_reward(setup, state.params).mean(1)
  assert (final > toy_env.PROMPT_ONLY_BOUND + 0.1).all(), final
  # The rollouts' rewards rise too: last 5 steps against the first 5.
  reward = np.asarray(metrics["reward"])  # [S, steps]
  assert (reward[:, -5:].mean(1) > reward[:, :5].mean(1) + 0.3).all(), reward


def test_each_step_draws_fresh_problems_and_scores_them_right(setup):
  """Learning rate 0: the policy never moves, every step samples anew (fresh keys),
  and the mean training reward estimates the policy's exact expected reward."""
  config = dataclasses.replace(LEARN, learning_rate=0.0)
  state, metrics = _run(setup, config, "grpo", _keys(1))
  jax.tree.map(lambda a, b: np.testing.assert_array_equal(a[0], b), state.params, setup[3])
  entropy = np.asarray(metrics["entropy"][0])
  assert len(set(entropy.tolist())) > 15, entropy  # 20 steps, (nearly) all distinct
  exact = float(toy_env.expected_reward(setup[3], setup[2]).mean())
  samples = config.num_steps * config.prompts_per_step * config.samples_per_prompt
  sd = np.sqrt(exact * (1 - exact) / samples)
  mean = float(np.mean(metrics["reward"]))
  assert abs(mean - exact) < 4 * sd, (mean, exact)


def _first_token_kl(setup, params):
  """f32[S]: exact KL(π || π_base) of the first response token, mean over problems."""
  mc, base = setup[2], setup[3]
  base_logp = toy_env.first_token_logprobs(base, mc)

  def kl(p):
    logp = toy_env.first_token_logprobs(p, mc)
    return jnp.mean(jnp.sum(jnp.exp(logp) * (logp - base_logp), -1))

  return np.asarray(jax.vmap(kl)(params))


@pytest.mark.slow
def test_kl_penalty_pulls_the_policy_back_to_the_base(setup):
  """With every reward 0 only the KL term has a gradient: kl_coef > 0 shrinks the
  KL to the base from a perturbed start; kl_coef = 0 leaves the policy untouched."""
  zero = np.zeros_like(toy_env.SOLVES)
  env = toy_env.ChoiceEnv(solves=zero)
  base = setup[3]
  leaves, treedef = jax.tree.flatten(base)
  noise = jax.random.split(jax.random.key(5), len(leaves))
  policy = jax.tree.unflatten(treedef, [x + 0.3 * jax.random.normal(k, x.shape)
                                        for x, k in zip(leaves, noise)])
  start = _first_token_kl(setup, jax.tree.map(lambda x: x[None], policy))[0]
  assert start > 0.05
  config = dataclasses.replace(LEARN, kl_coef=1.0)
  state, metrics = _run(setup, config, "grpo", _keys(1), env=env, policy=policy)
  assert float(jnp.max(metrics["reward"])) == 0.0
  assert _first_token_kl(setup, state.params)[0] < 0.5 * start
  state, _ = _run(setup, dataclasses.replace(config, kl_coef=0.0), "grpo", _keys(1), env=env,
                  policy=policy)
  jax.tree.map(lambda a, b: np.testing.assert_array_equal(a[0], b), state.params, policy)


@pytest.mark.slow
def test_the_base_model_is_read_only_for_the_kl_term(setup):
  """kl_coef = 0: a NaN base model changes nothing (rollouts are not scored under
  it) and no KL is logged; kl_coef > 0: it is read (NaN loss) and the KL is logged."""
  env, params, mc, base = setup
  nan_base = jax.tree.map(lambda x: jnp.full_like(x, jnp.nan), base)
  for kl_coef in (0.0, 0.5):
    config = dataclasses.replace(TINY, kl_coef=kl_coef)
    init, run_chunk = train.make_train(config, SET_RL, mc, env, params, num_seeds=1)
    state = init(base, _keys(1))
    (good, good_metrics), (bad, bad_metrics) = run_chunk(state, base), run_chunk(state, nan_base)
    if kl_coef:
      assert np.isnan(bad_metrics["loss"]).all() and "kl_to_base" in good_metrics
      assert np.isfinite(good_metrics["kl_to_base"]).all()
    else:
      assert "kl_to_base" not in good_metrics
      jax.tree.map(np.testing.assert_array_equal, (bad, bad_metrics), (good, good_metrics))


def _spec_id(value):
  """A parametrised spec's (or change's) test id, "poly_ppo-set_size=2-vines.samples=3";
  None (pytest's own) for any other value."""
  def items(mapping, prefix=""):
    for k, v in mapping.items():
      if isinstance(v, dict):
        yield from items(v, f"{prefix}{k}.")
      else:
        yield f"{v}" if k == "name" and not prefix else f"{prefix}{k}={v}"
  return "-".join(items(value)) or None if isinstance(value, dict) else None


@pytest.mark.parametrize("spec", [
    dict(name="grpo"), dict(name="reward_shaping", lam=0.5), tiny_rl.SET_RL_SPEC,
    pytest.param(dict(name="grpo", normalize=False), marks=pytest.mark.slow),
    pytest.param(dict(name="set_rl", set_size=2, objective="pass_at_n"), marks=pytest.mark.slow),
    pytest.param(dict(name="set_rl", set_size=2, num_subsets=3, objective="srl"),
                 marks=pytest.mark.slow),
], ids=_spec_id)
def test_equal_rewards_give_no_nan_and_no_update(setup, spec):
  """Every reward 0: every advantage 0, no NaN, and Adam leaves the parameters
  exactly where they were."""
  env = toy_env.ChoiceEnv(solves=np.zeros_like(toy_env.SOLVES))
  state, metrics = _run(setup, dataclasses.replace(TINY, kl_coef=0.0), spec, _keys(1), env=env)
  assert float(jnp.max(metrics["reward"])) == 0.0
  for name, value in metrics.items():
    assert np.all(np.isfinite(value)), name
  np.testing.assert_array_equal(metrics["advantage_std"], 0.0)
  jax.tree.map(lambda a, b: np.testing.assert_array_equal(a[0], b), state.params, setup[3])


# -- seeds ----------------------------------------------------------------------


@pytest.mark.slow
def test_same_seed_same_run_and_seeds_are_independent(setup):
  keys = _keys(2, offset=3)
  s1, m1 = _run(setup, TINY, SET_RL, keys, seed_batch_size=2)  # vmapped
  s2, m2 = _run(setup, TINY, SET_RL, keys, seed_batch_size=2)
  jax.tree.map(np.testing.assert_array_equal, m1, m2)
  jax.tree.map(np.testing.assert_array_equal, s1.params, s2.params)
  assert float(np.max(m1["reward"])) > 0  # the runs did learn something to compare
  # Seed 1 of a 2-seed vmapped run equals a 1-seed run with its key.
  s_one, m_one = _run(setup, TINY, SET_RL, keys[1:])
  jax.tree.map(lambda a, b: np.testing.assert_allclose(a[1], b[0], rtol=1e-5, atol=1e-6),
               m1, m_one)
  jax.tree.map(lambda a, b: np.testing.assert_allclose(a[1], b[0], rtol=1e-5, atol=1e-6),
               s1.params, s_one.params)
  assert not np.allclose(m1["entropy"][0], m1["entropy"][1])


def test_the_default_seed_batch_follows_the_platform(monkeypatch):
  """seed_batch_size=0: one seed at a time on a CPU, all at once elsewhere."""
  monkeypatch.setattr(jax, "default_backend", lambda: "cpu")
  assert parallel.default_seed_batch_size(5) == 1
  monkeypatch.setattr(jax, "default_backend", lambda: "gpu")
  assert parallel.default_seed_batch_size(5) == 5


def test_the_default_micro_batch_follows_the_platform(monkeypatch):
  """microbatch_rows=0: micro-batches of 16 responses on a CPU (8 groups of 16:
  one group each; 8 groups of 4: 4 each), the whole minibatch elsewhere."""
  monkeypatch.setattr(jax, "default_backend", lambda: "cpu")
  assert accumulation.microbatch_groups(0, 8, 16) == 1
  assert accumulation.microbatch_groups(0, 8, 4) == 4
  monkeypatch.setattr(jax, "default_backend", lambda: "gpu")
  assert accumulation.microbatch_groups(0, 8, 16) == 8


@pytest.mark.parametrize("num_micro, maxima", [(1, 14), (3, 39), (5, 60), (15, 105)])
def test_accumulate_sums_every_micro_batch_once(num_micro, maxima):
  """Rows 0..14 in C micro-batches, micro-batch c holding rows c, c + C, ...:
  the sums add up to 105, the counts to C, and the maxima (c + 15 - C) to
  sum_c (c + 15 - C), whatever the loop's unrolling leaves over (C = 3, 5 odd)."""
  fn = lambda params, x: {"sum": jnp.sum(x), "count": jnp.ones(()), "max": jnp.max(x)}
  out = accumulation.accumulate(fn, None, jnp.arange(15.0), num_micro)
  assert float(out["sum"]) == 105.0
  assert float(out["count"]) == num_micro
  assert float(out["max"]) == maxima


@pytest.mark.slow
def test_seed_batches_match_all_seeds_vmapped(setup):
  """3 seeds in batches of 2 (one batch plus a remainder of 1) = all 3 vmapped."""
  env, params, mc, base = setup
  keys = _keys(3)
  results = []
  for seed_batch_size in (3, 2):
    init, run_chunk = train.make_train(TINY, SET_RL, mc, env, params, num_seeds=3,
                                       seed_batch_size=seed_batch_size)
    state, metrics = run_chunk(init(base, keys), base)
    results.append((state.params, metrics))
  close = lambda a, b: np.testing.assert_allclose(a, b, rtol=2e-5, atol=2e-6)
  jax.tree.map(close, results[0][0], results[1][0])
  jax.tree.map(close, results[0][1], results[1][1])
  assert not np.allclose(results[0][1]["entropy"][0], results[0][1]["entropy"][2])


@pytest.mark.parametrize("spec,change", [
    (tiny_rl.SET_RL_SPEC, dict()),
    (dict(name="grpo"), dict(aggregation="sequence_mean")),
    pytest.param(dict(name="ppo"), dict(aggregation="sequence_sum"), marks=pytest.mark.slow),
])
def test_micro_batches_give_the_minibatch_update(setup, spec, change):
  """Accumulating each minibatch's gradient over micro-batches of one group
  moves the policy as the whole minibatch at once does (float rounding apart).
  Without a KL term: its gradient is zero at the first step but not its float
  rounding, which Adam divides by a tiny second moment (the loss-level test of
  totals covers the KL term)."""
  config = dataclasses.replace(TINY, prompts_per_step=4, num_minibatches=2, num_steps=2,
                               **change)
  rows = config.samples_per_prompt
  minibatch_rows = config.prompts_per_step // config.num_minibatches * rows
  results = [_run(setup, dataclasses.replace(config, microbatch_rows=r), spec,
                  _keys(1, offset=5))
             for r in (minibatch_rows, rows)]
  close = lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6)
  jax.tree.map(close, results[0][0].params, results[1][0].params)
  jax.tree.map(close, results[0][1], results[1][1])
  assert np.any(np.asarray(results[0][1]["loss"]) != 0)  # a non-trivial update was compared


def test_microbatch_groups_fit_the_rows():
  # 8 groups of 16 responses: 32 rows hold 2 groups, 40 rows still 2, 100 rows 4
  # (6 does not divide 8), fewer rows than a group still 1; 128 or more all 8.
  assert [accumulation.microbatch_groups(r, 8, 16) for r in (32, 40, 100, 5, 128, 1000)] == \
      [2, 2, 4, 1, 8, 8]
  assert accumulation.microbatch_groups(48, 6, 16) == 3


# -- validation: each error names the field ---------------------------------------
#
# Three places check a run, each once: TrainConfig (`train.validate`) its shared
# fields, an algorithm's factory (`algorithms.resolve`) its hyperparameters, and
# `Algorithm.check` (`train.check`) the one against the other.

REGISTERED = ("'grpo', 'reward_shaping', 'set_rl', 'set_rl_windowed', 'ppo', 'poly_ppo' or "
              r"'package\.module:ATTRIBUTE'")


BAD_HYPERPARAMETERS = [  # (spec, the message of algorithms.resolve(spec))
    (dict(name="a2c"), rf"^algorithm\.name must be one of {REGISTERED}; got 'a2c'\.$"),
    (dict(name="set_rl", objective="polychromatic"),
     "algorithm.objective must be one of 'polychromic', .*; got 'polychromatic'"),
    (dict(name="set_rl", set_size=0), "algorithm.set_size must be >= 1, got 0"),
    (dict(name="set_rl", num_subsets=-1), "algorithm.num_subsets must be >= 0, got -1"),
    (dict(name="reward_shaping", lam=-0.1), "algorithm.lam must be >= 0, got -0.1"),
    (dict(name="set_rl", objective="majority_vote"),
     "algorithm.objective='majority_vote' needs answer ids"),
    (dict(name="poly_ppo", objective="majority_vote"), "algorithm.objective=.* needs answer ids"),
    (dict(name="poly_ppo", vines=dict(window=0)), r"algorithm\.vines\.window must be >= 1, got 0"),
    (dict(name="poly_ppo", set_size=2, vines=dict(samples=2)),
     r"algorithm\.vines\.samples must be > set_size=2 .* got vines\.samples=2"),
    (dict(name="poly_ppo", set_size=2, vines=dict(samples=1)),
     r"algorithm\.vines\.samples must be > set_size=2"),
    (dict(name="poly_ppo", vines=dict(num_states=-1)),
     r"algorithm\.vines\.num_states must be >= 0, got -1"),
    (dict(name="poly_ppo", vines=dict(selection="late")),
     r"algorithm\.vines\.selection must be one of 'uniform', 'early'; got 'late'"),
    (dict(name="ppo", gae=dict(gamma=1.5)), r"algorithm\.gae\.gamma must be in \[0, 1\], got 1.5"),
    (dict(name="poly_ppo", gae=dict(lam=-0.1)),
     r"algorithm\.gae\.lam must be in \[0, 1\], got -0.1"),
    (dict(name="ppo", critic=dict(learning_rate=0.0)),
     r"algorithm\.critic\.learning_rate must be > 0, got 0.0"),
    (dict(name="ppo", critic=dict(clip=-0.1)), r"algorithm\.critic\.clip must be >= 0, got -0.1"),
    (dict(name="grpo", normalize_over="group"),
     "algorithm.normalize_over must be one of 'prompt', 'batch'; got 'group'"),
    (dict(name="set_rl", normalize_over="batch", normalize=False),
     "algorithm.normalize_over='batch' needs normalize=True .* got normalize=False"),
    (dict(name="ppo", normalize_over="batch"),
     "^algorithm: ppo has no field 'normalize_over'; its fields: critic, gae, normalize."),
    (dict(name="rloo"), rf"algorithm\.name must be one of {REGISTERED}; got 'rloo'"),
    (dict(name="rloo_algorithm:rlo"), "algorithm.name='rloo_algorithm:rlo': module "
     "'rloo_algorithm' defines no algorithm factory named 'rlo'"),
    (dict(name="no_such_module:rloo"), "algorithm.name='no_such_module:rloo': cannot import "
     "module 'no_such_module'"),
    (dict(set_size=2), "algorithm needs a 'name' .* got fields \\['set_size'\\]"),
]


@pytest.mark.parametrize("spec,match", BAD_HYPERPARAMETERS,
                         ids=[_spec_id(spec) for spec, _ in BAD_HYPERPARAMETERS])
def test_bad_hyperparameters_are_refused_when_the_algorithm_is_resolved(spec, match):
  with pytest.raises(ValueError, match=match):
    algorithms.resolve(spec)


MISFITS = [  # (spec, TINY's fields changed, the message of Algorithm.check)
    (dict(name="set_rl", set_size=4), {},
     r"^set_size must satisfy 1 <= set_size < samples_per_prompt=4, got set_size=4\.$"),
    (dict(name="set_rl"), {}, "set_size must satisfy .* got set_size=4"),   # n's default, 4
    (dict(name="set_rl", set_size=2, num_subsets=7), {},
     r"num_subsets must be 0 \(all subsets\) or 1..C\(N, n\) = 6, got 7"),
    (dict(name="set_rl", set_size=8, objective="srl"), dict(samples_per_prompt=32),
     r"objective='srl' has no closed form and C\(N, n\) = 10518300 .* set num_subsets"),
    (dict(name="poly_ppo", set_size=4), {},
     "set_size must satisfy 1 <= set_size < samples_per_prompt=4"),
    (dict(name="poly_ppo", set_size=2, vines=dict(samples=3), num_subsets=5), {},
     r"num_subsets must be 0 \(all subsets\) or 1..C\(N, n\) = 3, got 5"),
    (dict(name="set_rl_windowed", first=dict(name="set_rl", set_size=4)), {},
     "set_size must satisfy 1 <= set_size < samples_per_prompt=4"),
    (dict(name="set_rl_windowed", first=dict(name="grpo"),
          rest=dict(name="set_rl", set_size=2, num_subsets=7)), {},
     r"num_subsets must be 0 \(all subsets\) or 1..C\(N, n\) = 6, got 7"),
]


@pytest.mark.parametrize("spec,change,match", MISFITS, ids=[
    "-".join(filter(None, [_spec_id(spec), _spec_id(change)])) for spec, change, _ in MISFITS])
def test_an_algorithm_that_does_not_fit_the_shared_settings_is_refused(spec, change, match):
  algorithm = algorithms.resolve(spec)   # its own hyperparameters are fine
  with pytest.raises(ValueError, match=match):
    algorithm.check(dataclasses.replace(TINY, **change))


@pytest.mark.parametrize("change,match", [
    (dict(kl_coef=-0.5), "kl_coef must be >= 0, got -0.5"),
    (dict(eps_low=1.0), "eps_low < 1 .* got eps_low=1.0"),
    (dict(eps_low=-0.1), "0 <= eps_low .* got eps_low=-0.1"),
    (dict(eps_high=-0.2), "eps_high >= 0, got eps_low=0.2, eps_high=-0.2"),
    (dict(num_minibatches=3), "num_minibatches=3 must divide"),
    (dict(aggregation="mean"), "aggregation must be one of"),
    (dict(samples_per_prompt=1), "samples_per_prompt must be >= 2"),
    (dict(temperature=0.0), "temperature must be > 0"),
    (dict(num_steps=0), "num_steps must be >= 1"),
    (dict(num_steps=5), "num_steps=5 must be a multiple of steps_per_chunk=2"),
    (dict(learning_rate=-1e-3), "learning_rate must be >= 0, got -0.001"),
    (dict(warmup_steps=-1), "warmup_steps must be >= 0, got -1"),
    (dict(weight_decay=-0.1), "weight_decay must be >= 0, got -0.1"),
    (dict(grad_clip=0.0), "grad_clip must be > 0, got 0.0"),
    (dict(microbatch_rows=-1), "microbatch_rows must be >= 0, got -1"),
])
def test_bad_shared_settings_fail_before_compiling(change, match):
  fields = types.SimpleNamespace(**dict(dataclasses.asdict(TINY), **change))
  with pytest.raises(ValueError, match=match):
    train.validate(fields)
  with pytest.raises(ValueError, match=match):   # a TrainConfig checks itself when built
    dataclasses.replace(TINY, **change)


def test_the_train_config_holds_only_the_shared_settings():
  """An algorithm's hyperparameters are its own (config.algorithm), not TrainConfig's."""
  assert [f.name for f in dataclasses.fields(train.TrainConfig)] == [
      "prompts_per_step", "samples_per_prompt", "temperature", "num_epochs", "num_minibatches",
      "microbatch_rows", "learning_rate", "warmup_steps", "weight_decay", "grad_clip",
      "eps_low", "eps_high", "aggregation", "kl_coef", "num_steps", "steps_per_chunk"]
  with pytest.raises(TypeError, match="set_size"):
    dataclasses.replace(TINY, set_size=2)


def test_batch_normalisation_scales_all_groups_together():
  """normalize_over="batch" by hand: GRPO groups [1, 0, 0, 0] and [1, 1, 1, 1] centre
  to [.75, -.25, -.25, -.25] and zeros; their std over all 8 is sqrt(.75 / 8), so the
  first group's advantages are [.75, -.25, ...] / .30619 and the second's stay 0.
  Per prompt the first group is divided by its own std .4330 instead."""
  rewards = jnp.array([[1., 0., 0., 0.], [1., 1., 1., 1.]])
  labels = jnp.zeros((2, 4), jnp.int32)
  keys = jax.random.split(jax.random.PRNGKey(0), 2)
  advantages = lambda a, rewards, labels: estimators.batch_advantages(
      a.group_advantage, a.standardises_batch, rewards, labels, keys)
  batch = algorithms.grpo(normalize_over="batch")
  assert batch.standardises_batch and not algorithms.grpo().standardises_batch
  std = np.sqrt(.75 / 8)
  np.testing.assert_allclose(advantages(batch, rewards, labels),
                             [[.75 / std] + [-.25 / std] * 3, [0.] * 4], rtol=1e-5)
  per_prompt = advantages(algorithms.grpo(normalize_over="prompt"), rewards, labels)
  np.testing.assert_allclose(per_prompt[0], np.array([.75, -.25, -.25, -.25]) / np.sqrt(.1875),
                             rtol=1e-5)
  # Poly-EPO: the raw marginal advantages of every group, over one batch std. A group
  # whose strategies are all the same (second) has small advantages and keeps them small.
  labels = jnp.array([[0, 1, 2, 3], [0, 0, 0, 1]])
  rewards = jnp.ones((2, 4))
  raw = jax.vmap(algorithms.set_rl(set_size=2, normalize=False).group_advantage)(
      rewards, labels, keys)
  flat = np.asarray(raw).ravel()
  np.testing.assert_allclose(
      advantages(algorithms.set_rl(set_size=2, normalize_over="batch"), rewards, labels),
      ((flat - flat.mean()) / (flat.std() + 1e-6)).reshape(2, 4), rtol=1e-5, atol=1e-6)
  assert np.ptp(raw[0]) == 0 and np.ptp(raw[1]) > 0   # all-distinct: no one stands out


def test_poly_ppo_needs_step_boundaries_before_compiling():
  """An env without step boundaries is refused for Poly-PPO (naming the algorithm),
  accepted for PPO; with no vine states, vines.samples is not read."""
  no_boundaries = types.SimpleNamespace(has_step_boundaries=False)
  poly_ppo = algorithms.resolve(dict(name="poly_ppo", set_size=2))
  assert poly_ppo.step_boundaries and not algorithms.resolve("ppo").step_boundaries
  with pytest.raises(ValueError, match="algorithm 'poly_ppo' needs an env with step_boundaries"):
    train.check(TINY, poly_ppo, no_boundaries)
  train.check(TINY, poly_ppo, toy_env.ChoiceEnv())
  train.check(TINY, algorithms.resolve("ppo"), no_boundaries)
  no_vines = algorithms.resolve(dict(name="poly_ppo", set_size=2,
                                     vines=dict(num_states=0, samples=1)))
  no_vines.check(TINY)
  assert no_vines.responses_per_group(TINY) == TINY.samples_per_prompt


def test_critic_algorithms_add_a_zero_value_head_and_leave_the_others_alone(setup):
  """PPO / Poly-PPO: the base model's tree plus `value_head` (V = 0 at the start); the
  other algorithms' states hold exactly the base model's tree."""
  env, params, mc, base = setup
  for spec, has_critic in ((dict(name="ppo"), True), (dict(name="poly_ppo", set_size=2), True),
                           (tiny_rl.SET_RL_SPEC, False)):
    algorithm = algorithms.resolve(spec)
    assert (algorithm.critic == parts.Critic()) if has_critic else algorithm.critic is None
    init, _ = train.make_train(TINY, algorithm, mc, env, params)
    state = init(base, jnp.zeros(2, jnp.uint32))
    assert set(state.params) == set(base) | ({value_head.KEY} if has_critic else set())
    jax.tree.map(np.testing.assert_array_equal,
                 {k: state.params[k] for k in base}, base)
    if has_critic:
      features = jax.random.normal(jax.random.key(0), (3, 5, mc.width))
      np.testing.assert_array_equal(value_head.apply(state.params, features), 0.0)
      # The transformer ignores the head: same logits as the base model.
      tokens = jnp.array([[2, 3, 6]])
      np.testing.assert_array_equal(model.forward(state.params, mc, tokens),
                                    model.forward(base, mc, tokens))


def test_a_critic_with_a_trunk_starts_as_the_base_model_and_never_moves_the_policy(setup):
  """critic.model="trunk": the critic's trunk starts as a copy of the base model and V = 0.
  Two steps (warm-up: the policy moves at the second): the trunk's features equal the
  policy's until then, so the policy is the same as with a head, and the value loss
  has reached the trunk (once the head's output layer moved), not the policy."""
  env, params, mc, base = setup
  head_ppo = algorithms.resolve("ppo")
  trunk_ppo = algorithms.resolve(dict(name="ppo", critic=dict(model="trunk")))
  init, _ = train.make_train(TINY, trunk_ppo, mc, env, params)
  critic = init(base, jnp.zeros(2, jnp.uint32)).params[value_head.KEY]
  jax.tree.map(np.testing.assert_array_equal, critic["trunk"], base)
  keys = jnp.zeros((1, 2), jnp.uint32)   # a seed whose first steps have rewards
  (head, _), (trunk, metrics) = (_run(setup, TINY, head_ppo, keys),
                                 _run(setup, TINY, trunk_ppo, keys))
  policy = lambda state: jax.tree.map(lambda x: x[0], {k: state.params[k] for k in base})
  jax.tree.map(functools.partial(np.testing.assert_allclose, atol=1e-6), policy(head),
               policy(trunk))
  assert not np.allclose(policy(trunk)["embed"]["embedding"], base["embed"]["embedding"])
  moved = jax.tree.map(lambda a, b: np.abs(a[0] - b).max(),
                       trunk.params[value_head.KEY]["trunk"], base)
  assert max(jax.tree.leaves(moved)) > 0
  assert np.all(np.isfinite(metrics["value_loss"]))


def test_the_critic_model_must_be_known():
  with pytest.raises(ValueError, match="^model must be one of 'head', 'surprise', 'trunk'; "
                                       "got 'transformer'"):
    parts.Critic(model="transformer")
  with pytest.raises(ValueError, match="^algorithm.critic.model must be one of 'head', "
                                       "'surprise', 'trunk'; got 'transformer'"):
    algorithms.resolve(dict(name="ppo", critic=dict(model="transformer")))


@pytest.mark.slow
@pytest.mark.parametrize("spec", [dict(name="ppo"), dict(name="poly_ppo", set_size=2)],
                         ids=_spec_id)
def test_critic_algorithms_with_equal_rewards_do_not_move(setup, spec):
  """Every reward 0 and V = 0: every advantage and the value loss are 0, no NaN, and
  neither the policy nor the value head moves."""
  env = toy_env.ChoiceEnv(solves=np.zeros_like(toy_env.SOLVES))
  state, metrics = _run(setup, TINY, spec, _keys(1), env=env)
  for name, value in metrics.items():
    assert np.all(np.isfinite(value)), name
  np.testing.assert_array_equal(metrics["advantage_std"], 0.0)
  np.testing.assert_array_equal(metrics["value_loss"], 0.0)
  policy = {k: v for k, v in state.params.items() if k != value_head.KEY}
  jax.tree.map(lambda a, b: np.testing.assert_array_equal(a[0], b), policy, setup[3])
  np.testing.assert_array_equal(state.params[value_head.KEY]["out"]["kernel"], 0.0)


@pytest.mark.slow
@pytest.mark.parametrize("critic_model", value_head.VALUE_MODELS)
def test_poly_ppo_with_vines_on_a_real_domain_is_deterministic_and_logs_its_states(
    critic_model):
  """Multiplication, a small random policy, K = 2 states of N_v = 3 vines per prompt,
  each critic: the same state gives the same numbers twice; a prompt has 1 to 1 + K
  rollout states (fewer when its random responses have fewer step boundaries), vine
  tokens are counted, the logged metrics are finite."""
  env, env_params = envs.make("multiplication")
  mc = pretrain.model_config_for(env, **SMALL)
  base = model.init_params(jax.random.key(1), mc)
  config = dataclasses.replace(TINY, steps_per_chunk=1, learning_rate=1e-3)
  algorithm = algorithms.resolve(dict(name="poly_ppo", set_size=2,
                                      vines=dict(num_states=2, samples=3),
                                      critic=dict(model=critic_model)))
  assert algorithm.responses_per_group(config) == 4 + 2 * 3
  train.check(config, algorithm, env)
  init, run_chunk = train.make_train(config, algorithm, mc, env, env_params, num_seeds=2,
                                     seed_batch_size=2)  # vmapped: vines stop together
  state = init(base, _keys(2, offset=5))
  s1, m1 = run_chunk(state, base)
  s2, m2 = run_chunk(state, base)
  jax.tree.map(np.testing.assert_array_equal, (s1, m1), (s2, m2))
  for name in ("value_loss", "explained_variance", "advantage_std_rollout",
               "advantage_std_other", "vine_tokens", "rollout_states", "vine_reward",
               "explained_variance_root", "explained_variance_root_bound",
               "explained_variance_states", "explained_variance_states_bound",
               "root_strategies", "vine_strategies"):
    assert np.all(np.isfinite(m1[name])), name
  states = np.asarray(m1["rollout_states"])
  assert ((states >= 1) & (states <= 3)).all() and states.max() > 1, states
  assert (np.asarray(m1["vine_tokens"]) > 0).all()
  assert 0 < float(np.min(m1["rollout_token_share"])) < 1


def test_an_enumerable_objective_without_closed_form_is_accepted():
  algorithms.resolve(dict(name="set_rl", set_size=4, objective="srl")).check(
      dataclasses.replace(TINY, samples_per_prompt=16))


def test_a_mesh_that_does_not_divide_the_prompts_is_refused(setup):
  env, params, mc, _ = setup
  mesh = types.SimpleNamespace(shape={"data": 4})  # only its size is read before compiling
  with pytest.raises(ValueError, match="prompts_per_step=2 must be divisible by the 4 devices"):
    train.make_train(TINY, SET_RL, mc, env, params, mesh=mesh)
  with pytest.raises(ValueError, match=r"num_devices=3 must divide prompts_per_step=16"):
    parallel.make_mesh(3, 16)
  for negative in (-1, -3):
    with pytest.raises(ValueError, match=rf"num_devices={negative} must be 0"):
      parallel.make_mesh(negative, 16)
  with pytest.raises(ValueError, match=rf"num_devices=64 must be 0 .* 1..{len(jax.devices())}"):
    parallel.make_mesh(64, 64)
  if len(jax.devices()) == 1:
    assert parallel.make_mesh(0, 16) is None and parallel.make_mesh(1, 16) is None


# -- algorithms as values: specs, parts, the registry -------------------------------------

REWARDS = jnp.array([[1., 0., 0., 0.], [1., 1., 0., 1.]])   # two groups of N = 4
KEYS = jax.random.split(jax.random.PRNGKey(0), 2)


def _advantages(algorithm, rewards=REWARDS, labels=None):
  """A group algorithm's advantages of the groups `rewards` [B, N] (labels: all 0)."""
  labels = jnp.zeros(rewards.shape, jnp.int32) if labels is None else labels
  return estimators.batch_advantages(algorithm.group_advantage, algorithm.standardises_batch,
                                     rewards, labels, KEYS)


def test_an_algorithm_outside_the_package_trains_and_matches_its_formula(setup):
  """docs/adding-an-algorithm.md's worked example: RLOO (tests/helpers/rloo_algorithm.py),
  named 'module:ATTRIBUTE'. By hand, groups [1, 0, 0, 0] (mean .25) and [1, 1, 0, 1]
  (mean .75): leave-one-out, A_i = r_i - mean of the other three = N / (N - 1) ·
  (r_i - mean r); leave_out=False, r_i - mean r; with normalize, either is GRPO's
  standardised advantage. It raises the toy env's reward like the registered ones."""
  import rloo_algorithm  # pylint: disable=g-import-not-at-top
  leave_one_out = [[1., -1 / 3, -1 / 3, -1 / 3], [1 / 3, 1 / 3, -1., 1 / 3]]
  centred = [[.75, -.25, -.25, -.25], [.25, .25, -.75, .25]]
  np.testing.assert_allclose(_advantages(rloo_algorithm.rloo()), leave_one_out, rtol=1e-6)
  np.testing.assert_allclose(_advantages(rloo_algorithm.rloo(leave_out=False)), centred,
                             rtol=1e-6)
  standardised = np.array(centred) / np.sqrt(.1875)   # both groups' std: sqrt(3 / 16)
  for leave_out in (True, False):
    normalised = _advantages(rloo_algorithm.rloo(leave_out=leave_out, normalize=True))
    np.testing.assert_allclose(normalised, standardised, rtol=1e-4)
    np.testing.assert_allclose(normalised, _advantages(algorithms.grpo()), rtol=1e-5, atol=1e-6)
  assert algorithms.factory("rloo_algorithm:rloo") is rloo_algorithm.rloo
  resolved = algorithms.resolve({"name": "rloo_algorithm:rloo", "leave_out": False})
  assert resolved.name == "rloo" and resolved.critic is None and not resolved.step_boundaries
  np.testing.assert_allclose(_advantages(resolved), centred, rtol=1e-6)
  state, _ = _run(setup, LEARN, dict(name="rloo_algorithm:rloo"), _keys(1))
  assert (_expected_reward(setup, state.params).mean(1) > toy_env.PROMPT_ONLY_BOUND + 0.1).all()


def test_a_registered_algorithm_resolves_by_name_and_a_name_is_registered_once(monkeypatch):
  import rloo_algorithm  # pylint: disable=g-import-not-at-top
  monkeypatch.setattr(algorithms, "REGISTRY", dict(algorithms.REGISTRY))   # undone after
  assert algorithms.register("rloo", rloo_algorithm.rloo) is rloo_algorithm.rloo
  assert algorithms.factory("rloo") is rloo_algorithm.rloo
  np.testing.assert_allclose(_advantages(algorithms.resolve(dict(name="rloo", leave_out=False))),
                             [[.75, -.25, -.25, -.25], [.25, .25, -.75, .25]], rtol=1e-6)
  for name in ("grpo", "rloo"):
    with pytest.raises(ValueError, match=f"an algorithm named '{name}' is already registered"):
      algorithms.register(name, rloo_algorithm.rloo)
  assert algorithms.REGISTRY["grpo"] is algorithms.grpo


def test_a_spec_names_an_algorithm_its_parts_and_its_nested_algorithms():
  """A name, a dict, a ConfigDict (what a config holds) or an Algorithm itself; a part as
  a dict of some of its fields (the rest at their defaults), a nested algorithm as
  its own spec."""
  ppo = algorithms.resolve(dict(name="ppo", critic=dict(model="trunk", learning_rate=3e-4,
                                                        clip=0.0), gae=dict(gamma=0.9, lam=0.5)))
  assert ppo.name == "ppo" and ppo.critic == parts.Critic("trunk", 3e-4, 0.0)
  assert ppo.maximises == ("mean_reward", 1) and ppo.extra_responses == 0
  from_config = algorithms.resolve(ml_collections.ConfigDict(
      dict(name="ppo", critic=dict(model="surprise"))))
  assert from_config.critic == parts.Critic(model="surprise", learning_rate=1e-3, clip=0.2)
  assert algorithms.resolve(ppo) is ppo
  assert algorithms.resolve("ppo").critic == parts.Critic("head", 1e-3, 0.2)
  poly_ppo = algorithms.resolve(dict(name="poly_ppo", objective="pass_at_n", set_size=2,
                                     vines=dict(num_states=3, samples=5),
                                     critic=dict(model="surprise")))
  assert poly_ppo.critic.model == "surprise" and poly_ppo.step_boundaries
  assert poly_ppo.extra_responses == 3 * 5 and poly_ppo.responses_per_group(TINY) == 4 + 15
  assert poly_ppo.maximises == ("pass_at_n", 2)
  windowed = algorithms.resolve(dict(
      name="set_rl_windowed", first=dict(name="set_rl", objective="pass_at_n", set_size=3),
      rest=dict(name="reward_shaping", lam=0.5)))
  assert windowed.name == "set_rl_windowed" and windowed.step_boundaries
  assert windowed.maximises == ("pass_at_n", 3) and windowed.critic is None
  assert windowed.group_advantage is None   # a token-level algorithm, not a group's
  with pytest.raises(ValueError, match="set_size must satisfy .* got set_size=3"):
    windowed.check(dataclasses.replace(TINY, samples_per_prompt=3))   # first's n reaches it
  windowed.check(TINY)


def test_a_windowed_part_that_standardises_over_the_batch_is_refused():
  for part in ("first", "rest"):
    with pytest.raises(ValueError, match=f"^algorithm.{part}.normalize_over='batch' is not "
                                         "available inside windowed"):
      algorithms.resolve({"name": "set_rl_windowed",
                          part: dict(name="grpo", normalize_over="batch")})
  with pytest.raises(ValueError, match="^algorithm.first must be a group algorithm .* got 'ppo'"):
    algorithms.resolve(dict(name="set_rl_windowed", first=dict(name="ppo")))


def test_an_unknown_field_is_refused_naming_the_valid_fields():
  cases = [
      (dict(name="grpo", lamb=0.5),
       "algorithm: grpo has no field 'lamb'; its fields: normalize, normalize_over."),
      (dict(name="ppo", critic=dict(mdl="trunk")),
       "algorithm.critic has no field 'mdl'; its fields: model, learning_rate, clip."),
      (dict(name="poly_ppo", vines=dict(states=2)),
       "algorithm.vines has no field 'states'; its fields: num_states, samples, window, "
       "selection."),
      (dict(name="set_rl_windowed", first=dict(name="set_rl", set_sz=2)),
       "algorithm.first: set_rl has no field 'set_sz'; its fields: objective, set_size, "
       "num_subsets, normalize, normalize_over."),
  ]
  for spec, message in cases:   # (a hint may follow)
    with pytest.raises(ValueError, match="^" + re.escape(message)):
      algorithms.resolve(spec)
  with pytest.raises(ValueError, match="^" + re.escape(
      "algorithm 'reward_shaping' has no field 'lamda'; its fields: lam, normalize, "
      "normalize_over.")):
    algorithms.spec("reward_shaping", lamda=0.5)


def test_a_spec_writes_every_default_and_resolves_to_the_factorys_defaults():
  """`algorithms.spec(name)` is the config sub-dict of the factory's defaults: written
  out by hand here, and resolved it gives the algorithm `factory()` does."""
  critic = dict(model="head", learning_rate=1e-3, clip=0.2)
  gae = dict(gamma=1.0, lam=0.95)
  grpo = dict(name="grpo", normalize=True, normalize_over="prompt")
  set_rl = dict(name="set_rl", objective="polychromic", set_size=4, num_subsets=0,
                normalize=True, normalize_over="prompt")
  expected = {
      "grpo": grpo,
      "reward_shaping": dict(name="reward_shaping", lam=0.0, normalize=True,
                             normalize_over="prompt"),
      "set_rl": set_rl,
      "set_rl_windowed": dict(name="set_rl_windowed", first=set_rl, rest=grpo),
      "ppo": dict(name="ppo", critic=critic, gae=gae, normalize=True),
      "poly_ppo": dict(name="poly_ppo", objective="polychromic", set_size=4, num_subsets=0,
                       vines=dict(num_states=2, samples=8, window=2, selection="uniform"),
                       critic=critic, gae=gae, normalize=True),
  }
  assert sorted(algorithms.REGISTRY) == sorted(expected)
  labels = jnp.array([[0, 1, 2, 3], [0, 0, 1, 1]])
  rewards = jnp.array([[1., 0., 1., 1.], [0., 1., 1., 0.]])
  config = dataclasses.replace(TINY, samples_per_prompt=8, num_steps=2)
  for name, spec in expected.items():
    assert algorithms.spec(name) == spec, name
    resolved, default = algorithms.resolve(algorithms.spec(name)), algorithms.factory(name)()
    for field in ("name", "critic", "step_boundaries", "extra_responses", "standardises_batch",
                  "maximises"):
      assert getattr(resolved, field) == getattr(default, field), (name, field)
    assert (resolved.group_advantage is None) == (default.group_advantage is None), name
    if default.group_advantage is not None:
      np.testing.assert_allclose(_advantages(resolved, rewards, labels),
                                 _advantages(default, rewards, labels), rtol=1e-6)
    resolved.check(config)   # N = 8 fits every default n = 4
  # Overrides merge into a part or a nested algorithm; a new name there is its spec.
  assert algorithms.spec("ppo", critic=dict(model="trunk"))["critic"] == dict(critic,
                                                                              model="trunk")
  assert algorithms.spec("set_rl_windowed", first=dict(set_size=2))["first"] == dict(
      set_rl, set_size=2)
  assert algorithms.spec("set_rl_windowed", first=dict(name="reward_shaping", lam=0.5)) == dict(
      name="set_rl_windowed", rest=grpo, first=dict(name="reward_shaping", lam=0.5,
                                                    normalize=True, normalize_over="prompt"))
  assert algorithms.resolve(algorithms.spec("set_rl", set_size=2)).maximises == ("polychromic", 2)
