"""Tests for polyepo.rl.train: learning, validation, determinism, seeds, the critic.

The policy trains on `toy_env.ChoiceEnv`, where rewards depend on the problem
and the untrained base is right about 10% of the time: every estimator must
raise the exact expected reward past what a policy blind to its prompt can
reach, which fails if rewards are paired with the wrong prompts, grouped across
prompts, or the advantage sign is flipped.
"""

import dataclasses
import functools
import types

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import envs
import tiny_rl
import toy_env
from polyepo import accumulation, estimators, model, parallel, pretrain, train, value_head

SMALL, TINY = tiny_rl.SMALL, tiny_rl.TINY
LEARN = train.TrainConfig(estimator="set_rl", prompts_per_step=8, samples_per_prompt=8,
                          set_size=4, num_minibatches=1, num_steps=20, steps_per_chunk=20,
                          learning_rate=1e-2, warmup_steps=1)


setup = pytest.fixture(scope="module")(tiny_rl.setup)  # (env, env_params, model_config, base)


def _keys(num_seeds, offset=0):
  return jnp.arange(offset, offset + 2 * num_seeds, dtype=jnp.uint32).reshape(num_seeds, 2)


def _run(setup, config, keys, env=None, policy=None, seed_batch_size=0):
  """Trains num_seeds = len(keys) seeds for one chunk from `policy` (default: base)."""
  default_env, params, mc, base = setup
  init, run_chunk = train.make_train(config, mc, env or default_env, params,
                                     num_seeds=keys.shape[0], seed_batch_size=seed_batch_size)
  return run_chunk(init(base if policy is None else policy, keys), base)


def _expected_reward(setup, params):
  """f32[S, problems]: exact expected reward of each seed's policy."""
  mc = setup[2]
  return np.asarray(jax.vmap(lambda p: toy_env.expected_reward(p, mc))(params))


# -- learning -------------------------------------------------------------------

ESTIMATORS = {
    "grpo": dict(estimator="grpo"),
    "dr_grpo": dict(estimator="grpo", normalize=False),
    "reward_shaping": dict(estimator="reward_shaping", lam=0.5),
    "poly_epo_exact": dict(estimator="set_rl", objective="polychromic"),
    "poly_epo_sampled": dict(estimator="set_rl", objective="polychromic", num_subsets=16),
    "ppo": dict(estimator="ppo"),
    "poly_ppo": dict(estimator="poly_ppo", objective="polychromic"),
    "poly_epo_windowed": dict(estimator="set_rl_windowed", objective="polychromic"),
    "poly_ppo_surprise": dict(estimator="poly_ppo", objective="polychromic",
                              value_model="surprise"),
    "poly_ppo_trunk": dict(estimator="poly_ppo", objective="polychromic", value_model="trunk"),
}
SLOW_ESTIMATORS = ("grpo", "poly_epo_sampled", "ppo", "poly_ppo", "poly_ppo_surprise",
                   "poly_ppo_trunk")  # over 20 s each on 2 cores


@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.slow) if n in SLOW_ESTIMATORS
                                  else n for n in ESTIMATORS])
def test_each_estimator_raises_reward_from_a_nontrivial_start(setup, name):
  """20 steps lift the exact expected reward from ~0.1 past the 0.5 that any
  prompt-blind policy is capped at, for both seeds."""
  base = setup[3]
  start = toy_env.expected_reward(base, setup[2])
  assert 0.02 < float(start.min()) and float(start.mean()) < 0.2
  state, metrics = _run(setup, dataclasses.replace(LEARN, **ESTIMATORS[name]), _keys(2))
  final = _expected_reward(setup, state.params).mean(1)
  assert (final > toy_env.PROMPT_ONLY_BOUND + 0.1).all(), final
  # The rollouts' rewards rise too: last 5 steps against the first 5.
  reward = np.asarray(metrics["reward"])  # [S, steps]
  assert (reward[:, -5:].mean(1) > reward[:, :5].mean(1) + 0.3).all(), reward


def test_each_step_draws_fresh_problems_and_scores_them_right(setup):
  """Learning rate 0: the policy never moves, every step samples anew (fresh keys),
  and the mean training reward estimates the policy's exact expected reward."""
  config = dataclasses.replace(LEARN, learning_rate=0.0, estimator="grpo")
  state, metrics = _run(setup, config, _keys(1))
  jax.tree.map(lambda a, b: np.testing.assert_array_equal(a[0], b), state.params, setup[3])
  entropy = np.asarray(metrics["entropy"][0])
  assert len(set(entropy.tolist())) > 15, entropy  # 20 steps, (nearly) all distinct
  exact = float(toy_env.expected_reward(setup[3], setup[2]).mean())
  samples = config.num_steps * config.prompts_per_step * config.samples_per_prompt
  sd = np.sqrt(exact * (1 - exact) / samples)
  assert abs(float(np.mean(metrics["reward"])) - exact) < 4 * sd, (np.mean(metrics["reward"]), exact)


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
  config = dataclasses.replace(LEARN, estimator="grpo", kl_coef=1.0)
  state, metrics = _run(setup, config, _keys(1), env=env, policy=policy)
  assert float(jnp.max(metrics["reward"])) == 0.0
  assert _first_token_kl(setup, state.params)[0] < 0.5 * start
  state, _ = _run(setup, dataclasses.replace(config, kl_coef=0.0), _keys(1), env=env,
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
    init, run_chunk = train.make_train(config, mc, env, params, num_seeds=1)
    state = init(base, _keys(1))
    (good, good_metrics), (bad, bad_metrics) = run_chunk(state, base), run_chunk(state, nan_base)
    if kl_coef:
      assert np.isnan(bad_metrics["loss"]).all() and "kl_to_base" in good_metrics
      assert np.isfinite(good_metrics["kl_to_base"]).all()
    else:
      assert "kl_to_base" not in good_metrics
      jax.tree.map(np.testing.assert_array_equal, (bad, bad_metrics), (good, good_metrics))


@pytest.mark.parametrize("estimator,extra", [
    ("grpo", {}), ("reward_shaping", {"lam": 0.5}), ("set_rl", {}),
    pytest.param("grpo", {"normalize": False}, marks=pytest.mark.slow),
    pytest.param("set_rl", {"objective": "pass_at_n"}, marks=pytest.mark.slow),
    pytest.param("set_rl", {"num_subsets": 3, "objective": "srl"}, marks=pytest.mark.slow),
])
def test_equal_rewards_give_no_nan_and_no_update(setup, estimator, extra):
  """Every reward 0: every advantage 0, no NaN, and Adam leaves the parameters
  exactly where they were."""
  env = toy_env.ChoiceEnv(solves=np.zeros_like(toy_env.SOLVES))
  config = dataclasses.replace(TINY, estimator=estimator, kl_coef=0.0, **extra)
  state, metrics = _run(setup, config, _keys(1), env=env)
  assert float(jnp.max(metrics["reward"])) == 0.0
  for name, value in metrics.items():
    assert np.all(np.isfinite(value)), name
  np.testing.assert_array_equal(metrics["advantage_std"], 0.0)
  jax.tree.map(lambda a, b: np.testing.assert_array_equal(a[0], b), state.params, setup[3])


# -- seeds ----------------------------------------------------------------------


@pytest.mark.slow
def test_same_seed_same_run_and_seeds_are_independent(setup):
  keys = _keys(2, offset=3)
  s1, m1 = _run(setup, TINY, keys, seed_batch_size=2)  # vmapped
  s2, m2 = _run(setup, TINY, keys, seed_batch_size=2)
  jax.tree.map(np.testing.assert_array_equal, m1, m2)
  jax.tree.map(np.testing.assert_array_equal, s1.params, s2.params)
  assert float(np.max(m1["reward"])) > 0  # the runs did learn something to compare
  # Seed 1 of a 2-seed vmapped run equals a 1-seed run with its key.
  s_one, m_one = _run(setup, TINY, keys[1:])
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
    init, run_chunk = train.make_train(TINY, mc, env, params, num_seeds=3,
                                       seed_batch_size=seed_batch_size)
    state, metrics = run_chunk(init(base, keys), base)
    results.append((state.params, metrics))
  close = lambda a, b: np.testing.assert_allclose(a, b, rtol=2e-5, atol=2e-6)
  jax.tree.map(close, results[0][0], results[1][0])
  jax.tree.map(close, results[0][1], results[1][1])
  assert not np.allclose(results[0][1]["entropy"][0], results[0][1]["entropy"][2])


@pytest.mark.parametrize("change", [
    dict(),
    dict(estimator="grpo", aggregation="sequence_mean"),
    pytest.param(dict(estimator="ppo", aggregation="sequence_sum"), marks=pytest.mark.slow),
])
def test_micro_batches_give_the_minibatch_update(setup, change):
  """Accumulating each minibatch's gradient over micro-batches of one group
  moves the policy as the whole minibatch at once does (float rounding apart).
  Without a KL term: its gradient is zero at the first step but not its float
  rounding, which Adam divides by a tiny second moment (the loss-level test of
  totals covers the KL term)."""
  config = dataclasses.replace(TINY, prompts_per_step=4, num_minibatches=2, num_steps=2,
                               **change)
  rows = config.samples_per_prompt
  minibatch_rows = config.prompts_per_step // config.num_minibatches * rows
  results = [_run(setup, dataclasses.replace(config, microbatch_rows=r), _keys(1, offset=5))
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


@pytest.mark.parametrize("change,match", [
    (dict(estimator="a2c"), "estimator must be one of 'grpo', 'reward_shaping', 'set_rl', "
     "'set_rl_windowed', 'ppo', 'poly_ppo'"),
    (dict(objective="polychromatic"), "objective must be one of 'polychromic'"),
    (dict(set_size=4), "set_size must satisfy 1 <= set_size < samples_per_prompt=4"),
    (dict(set_size=0), "set_size must satisfy"),
    (dict(num_subsets=7), r"num_subsets must be 0 \(all subsets\) or 1..C\(N, n\) = 6"),
    (dict(num_subsets=-1), r"num_subsets must be 0"),
    (dict(lam=-0.1, estimator="reward_shaping"), "lam must be >= 0"),
    (dict(kl_coef=-0.5), "kl_coef must be >= 0, got -0.5"),
    (dict(eps_low=1.0), "eps_low < 1 .* got eps_low=1.0"),
    (dict(eps_low=-0.1), "0 <= eps_low .* got eps_low=-0.1"),
    (dict(eps_high=-0.2), "eps_high >= 0, got eps_low=0.2, eps_high=-0.2"),
    (dict(num_minibatches=3), "num_minibatches=3 must divide"),
    (dict(aggregation="mean"), "aggregation must be one of"),
    (dict(objective="majority_vote"), "needs answer ids"),
    (dict(samples_per_prompt=1, set_size=1), "samples_per_prompt must be >= 2"),
    (dict(temperature=0.0), "temperature must be > 0"),
    (dict(num_steps=0), "num_steps must be >= 1"),
    (dict(learning_rate=-1e-3), "learning_rate must be >= 0, got -0.001"),
    (dict(warmup_steps=-1), "warmup_steps must be >= 0, got -1"),
    (dict(weight_decay=-0.1), "weight_decay must be >= 0, got -0.1"),
    (dict(grad_clip=0.0), "grad_clip must be > 0, got 0.0"),
    (dict(microbatch_rows=-1), "microbatch_rows must be >= 0, got -1"),
    (dict(samples_per_prompt=32, set_size=8, objective="srl"),
     r"objective='srl' has no closed form and C\(N, n\) = 10518300 .* set num_subsets"),
    (dict(estimator="poly_ppo", vine_window=0), "vine_window must be >= 1, got 0"),
    (dict(estimator="poly_ppo", vine_samples=2), "vine_samples must be > set_size=2 .* "
     "got vine_samples=2"),
    (dict(estimator="poly_ppo", vine_samples=1), "vine_samples must be > set_size=2"),
    (dict(estimator="poly_ppo", num_vine_states=-1), "num_vine_states must be >= 0, got -1"),
    (dict(estimator="poly_ppo", vine_selection="late"),
     "vine_selection must be one of 'uniform', 'early'; got 'late'"),
    (dict(estimator="poly_ppo", set_size=4), "set_size must satisfy 1 <= set_size < "
     "samples_per_prompt=4"),
    (dict(estimator="poly_ppo", vine_samples=3, num_subsets=5),
     r"num_subsets must be 0 \(all subsets\) or 1..C\(N, n\) = 3, got 5"),
    (dict(estimator="ppo", gamma=1.5), r"gamma must be in \[0, 1\], got 1.5"),
    (dict(estimator="poly_ppo", gae_lambda=-0.1), r"gae_lambda must be in \[0, 1\], got -0.1"),
    (dict(estimator="ppo", value_learning_rate=0.0), "value_learning_rate must be > 0, got 0.0"),
    (dict(estimator="ppo", value_clip=-0.1), "value_clip must be >= 0, got -0.1"),
    (dict(normalize_over="group"), "normalize_over must be one of 'prompt', 'batch'; "
     "got 'group'"),
    (dict(normalize_over="batch", normalize=False), "normalize_over='batch' needs "
     "normalize=True .* got normalize=False"),
    (dict(estimator="ppo", normalize_over="batch"), "normalize_over='batch' is not available "
     "to estimator='ppo'"),
    (dict(estimator="rloo"), "estimator must be one of 'grpo', .*; got 'rloo'"),
    (dict(estimator="rloo_estimator:RLO"), "estimator='rloo_estimator:RLO': module "
     "'rloo_estimator' defines no Estimator named 'RLO'"),
    (dict(estimator="no_such_module:RLOO"), "estimator='no_such_module:RLOO': cannot import "
     "module 'no_such_module'"),
])
def test_bad_configs_fail_before_compiling(change, match):
  with pytest.raises(ValueError, match=match):
    train.validate(dataclasses.replace(TINY, **change))


def test_batch_normalisation_scales_all_groups_together():
  """normalize_over="batch" by hand: GRPO groups [1, 0, 0, 0] and [1, 1, 1, 1] centre
  to [.75, -.25, -.25, -.25] and zeros; their std over all 8 is sqrt(.75 / 8), so the
  first group's advantages are [.75, -.25, ...] / .30619 and the second's stay 0.
  Per prompt the first group is divided by its own std .4330 instead."""
  rewards = jnp.array([[1., 0., 0., 0.], [1., 1., 1., 1.]])
  labels = jnp.zeros((2, 4), jnp.int32)
  keys = jax.random.split(jax.random.PRNGKey(0), 2)
  config = dataclasses.replace(TINY, estimator="grpo", normalize_over="batch")
  std = np.sqrt(.75 / 8)
  np.testing.assert_allclose(estimators.batch_advantages(config, rewards, labels, keys),
                             [[.75 / std] + [-.25 / std] * 3, [0.] * 4], rtol=1e-5)
  per_prompt = estimators.batch_advantages(dataclasses.replace(config, normalize_over="prompt"),
                                           rewards, labels, keys)
  np.testing.assert_allclose(per_prompt[0], np.array([.75, -.25, -.25, -.25]) / np.sqrt(.1875),
                             rtol=1e-5)
  # Poly-EPO: the raw marginal advantages of every group, over one batch std. A group
  # whose strategies are all the same (second) has small advantages and keeps them small.
  set_config = dataclasses.replace(TINY, estimator="set_rl", set_size=2,
                                   normalize_over="batch")
  labels = jnp.array([[0, 1, 2, 3], [0, 0, 0, 1]])
  rewards = jnp.ones((2, 4))
  raw = jax.vmap(lambda r, l, k: estimators.group_advantages(
      dataclasses.replace(set_config, normalize=False, normalize_over="prompt"), r, l, k)
  )(rewards, labels, keys)
  flat = np.asarray(raw).ravel()
  np.testing.assert_allclose(estimators.batch_advantages(set_config, rewards, labels, keys),
                             ((flat - flat.mean()) / (flat.std() + 1e-6)).reshape(2, 4),
                             rtol=1e-5, atol=1e-6)
  assert np.ptp(raw[0]) == 0 and np.ptp(raw[1]) > 0   # all-distinct: no one stands out


def test_poly_ppo_needs_step_boundaries_before_compiling(setup):
  """An env without step boundaries is refused for Poly-PPO (naming the estimator),
  accepted for PPO; with no vine states, vine_samples is not read."""
  config = dataclasses.replace(TINY, estimator="poly_ppo")
  with pytest.raises(ValueError, match="estimator='poly_ppo' needs an env with step_boundaries"):
    train.validate_env(config, types.SimpleNamespace(has_step_boundaries=False))
  train.validate_env(dataclasses.replace(config, estimator="ppo"),
                     types.SimpleNamespace(has_step_boundaries=False))
  train.validate(dataclasses.replace(config, num_vine_states=0, vine_samples=1))


def test_critic_estimators_add_a_zero_value_head_and_leave_the_others_alone(setup):
  """PPO / Poly-PPO: the base model's tree plus `value_head` (V = 0 at the start); the
  other estimators' states hold exactly the base model's tree."""
  env, params, mc, base = setup
  for estimator in ("ppo", "poly_ppo", "set_rl"):
    init, _ = train.make_train(dataclasses.replace(TINY, estimator=estimator), mc, env, params)
    state = init(base, jnp.zeros(2, jnp.uint32))
    critic = estimators.get(estimator).critic
    assert set(state.params) == set(base) | ({value_head.KEY} if critic else set())
    jax.tree.map(np.testing.assert_array_equal,
                 {k: state.params[k] for k in base}, base)
    if critic:
      features = jax.random.normal(jax.random.key(0), (3, 5, mc.width))
      np.testing.assert_array_equal(value_head.apply(state.params, features), 0.0)
      # The transformer ignores the head: same logits as the base model.
      tokens = jnp.array([[2, 3, 6]])
      np.testing.assert_array_equal(model.forward(state.params, mc, tokens),
                                    model.forward(base, mc, tokens))


def test_a_critic_with_a_trunk_starts_as_the_base_model_and_never_moves_the_policy(setup):
  """value_model="trunk": the critic's trunk starts as a copy of the base model and V = 0.
  Two steps (warm-up: the policy moves at the second): the trunk's features equal the
  policy's until then, so the policy is the same as with a head, and the value loss
  has reached the trunk (once the head's output layer moved), not the policy."""
  env, params, mc, base = setup
  config = dataclasses.replace(TINY, estimator="ppo")
  trunk_config = dataclasses.replace(config, value_model="trunk")
  init, _ = train.make_train(trunk_config, mc, env, params)
  critic = init(base, jnp.zeros(2, jnp.uint32)).params[value_head.KEY]
  jax.tree.map(np.testing.assert_array_equal, critic["trunk"], base)
  keys = jnp.zeros((1, 2), jnp.uint32)   # a seed whose first steps have rewards
  (head, _), (trunk, metrics) = _run(setup, config, keys), _run(setup, trunk_config, keys)
  policy = lambda state: jax.tree.map(lambda x: x[0], {k: state.params[k] for k in base})
  jax.tree.map(functools.partial(np.testing.assert_allclose, atol=1e-6), policy(head),
               policy(trunk))
  assert not np.allclose(policy(trunk)["embed"]["embedding"], base["embed"]["embedding"])
  moved = jax.tree.map(lambda a, b: np.abs(a[0] - b).max(),
                       trunk.params[value_head.KEY]["trunk"], base)
  assert max(jax.tree.leaves(moved)) > 0
  assert np.all(np.isfinite(metrics["value_loss"]))


def test_value_model_must_be_known():
  with pytest.raises(ValueError, match="value_model.*head.*trunk"):
    dataclasses.replace(TINY, estimator="ppo", value_model="transformer")


@pytest.mark.slow
@pytest.mark.parametrize("estimator", ["ppo", "poly_ppo"])
def test_critic_estimators_with_equal_rewards_do_not_move(setup, estimator):
  """Every reward 0 and V = 0: every advantage and the value loss are 0, no NaN, and
  neither the policy nor the value head moves."""
  env = toy_env.ChoiceEnv(solves=np.zeros_like(toy_env.SOLVES))
  config = dataclasses.replace(TINY, estimator=estimator)
  state, metrics = _run(setup, config, _keys(1), env=env)
  for name, value in metrics.items():
    assert np.all(np.isfinite(value)), name
  np.testing.assert_array_equal(metrics["advantage_std"], 0.0)
  np.testing.assert_array_equal(metrics["value_loss"], 0.0)
  policy = {k: v for k, v in state.params.items() if k != value_head.KEY}
  jax.tree.map(lambda a, b: np.testing.assert_array_equal(a[0], b), policy, setup[3])
  np.testing.assert_array_equal(state.params[value_head.KEY]["out"]["kernel"], 0.0)


@pytest.mark.slow
@pytest.mark.parametrize("value_model", value_head.VALUE_MODELS)
def test_poly_ppo_with_vines_on_a_real_domain_is_deterministic_and_logs_its_states(
    value_model):
  """Multiplication, a small random policy, K = 2 states of N_v = 3 vines per prompt,
  each critic: the same state gives the same numbers twice; a prompt has 1 to 1 + K
  rollout states (fewer when its random responses have fewer step boundaries), vine
  tokens are counted, the logged metrics are finite."""
  env, env_params = envs.make("multiplication")
  mc = pretrain.model_config_for(env, **SMALL)
  base = model.init_params(jax.random.key(1), mc)
  config = dataclasses.replace(TINY, estimator="poly_ppo", num_vine_states=2, vine_samples=3,
                               steps_per_chunk=1, learning_rate=1e-3, value_model=value_model)
  init, run_chunk = train.make_train(config, mc, env, env_params, num_seeds=2,
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
  train.validate(dataclasses.replace(TINY, samples_per_prompt=16, set_size=4, objective="srl"))


def test_a_mesh_that_does_not_divide_the_prompts_is_refused(setup):
  env, params, mc, _ = setup
  mesh = types.SimpleNamespace(shape={"data": 4})  # only its size is read before compiling
  with pytest.raises(ValueError, match="prompts_per_step=2 must be divisible by the 4 devices"):
    train.make_train(TINY, mc, env, params, mesh=mesh)
  with pytest.raises(ValueError, match=r"num_devices=3 must divide prompts_per_step=16"):
    parallel.make_mesh(3, 16)
  for negative in (-1, -3):
    with pytest.raises(ValueError, match=rf"num_devices={negative} must be 0"):
      parallel.make_mesh(negative, 16)
  with pytest.raises(ValueError, match=rf"num_devices=64 must be 0 .* 1..{len(jax.devices())}"):
    parallel.make_mesh(64, 64)
  if len(jax.devices()) == 1:
    assert parallel.make_mesh(0, 16) is None and parallel.make_mesh(1, 16) is None


# -- the estimator registry -------------------------------------------------------------

def test_an_estimator_outside_the_package_trains_and_matches_its_formula(setup):
  """docs/adding-an-algorithm.md's worked example: RLOO (tests/helpers/rloo_estimator.py), named
  'module:ATTRIBUTE', gives N / (N - 1) · (r - mean r) by hand, GRPO's advantages once
  standardised, and raises the toy env's reward like the registered estimators."""
  import rloo_estimator  # pylint: disable=g-import-not-at-top
  config = dataclasses.replace(TINY, estimator="rloo_estimator:RLOO", normalize=False)
  rewards = jnp.array([[1., 0., 0., 0.], [1., 1., 0., 1.]])
  keys = jax.random.split(jax.random.PRNGKey(0), 2)
  labels = jnp.zeros((2, 4), jnp.int32)
  by_hand = 4 / 3 * (rewards - rewards.mean(1, keepdims=True))
  np.testing.assert_allclose(estimators.batch_advantages(config, rewards, labels, keys),
                             by_hand, rtol=1e-6)
  grpo = dataclasses.replace(TINY, estimator="grpo")
  np.testing.assert_allclose(
      estimators.batch_advantages(dataclasses.replace(config, normalize=True), rewards,
                                  labels, keys),
      estimators.batch_advantages(grpo, rewards, labels, keys), rtol=1e-4, atol=1e-5)
  assert estimators.get("rloo_estimator:RLOO") is rloo_estimator.RLOO
  state, _ = _run(setup, dataclasses.replace(LEARN, estimator="rloo_estimator:RLOO",
                                             normalize=False), _keys(1))
  assert (_expected_reward(setup, state.params).mean(1) > toy_env.PROMPT_ONLY_BOUND + 0.1).all()


def test_registering_an_estimator_name_twice_is_refused():
  with pytest.raises(ValueError, match="an estimator named 'grpo' is already registered"):
    estimators.register(estimators.REGISTRY["grpo"])
