"""Poly-EPO as released (configs/poly_epo_official.py) and Dr. GRPO beside it
(configs/dr_grpo.py): the release's settings by hand, its set advantage against
brute force over the 70 sets of 4 of 8, and both recipes learning on the toy env
(the end-to-end smoke runs are tests/experiments/test_experiments.py's, slow)."""

import dataclasses
import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import tiny_rl
import toy_env
from configs import dr_grpo, grpo, poly_epo, poly_epo_official
from experiments import build
from experiments.analysis import algorithms as analysis_algorithms
from polyepo.core import sets
from polyepo.env_api import DEGENERATE
from polyepo.rl import algorithms, train

# Hand-written from the release (qwen3_polyepo_withdrgrpo.sh and
# compute_polyepo_advantage): rollout.n=8, n = 4, every set, norm_adv_by_std_in_grpo=False,
# loss_agg_mode=seq-mean-token-sum-norm, clip_ratio_low/high=0.2/0.28, grad_clip=0.3,
# no KL loss or KL reward.
RELEASE_ALGORITHM = dict(name="set_rl", objective="polychromic", set_size=4, num_subsets=0,
                         normalize=False, normalize_over="prompt")
RELEASE_TRAIN = dict(samples_per_prompt=8, aggregation="sequence_sum", eps_low=0.2,
                     eps_high=0.28, grad_clip=0.3, kl_coef=0.0)


def _differences(a, b):
  """{field: (a's, b's)} where two flat dicts differ."""
  return {k: (a.get(k), b.get(k)) for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k)}


@pytest.mark.parametrize("size", ["default", "paper"])
def test_the_official_config_is_the_release_s_recipe(size):
  config = poly_epo_official.get_config(f"size={size}")
  assert config.algorithm.to_dict() == RELEASE_ALGORITHM
  assert {k: config.train[k] for k in RELEASE_TRAIN} == RELEASE_TRAIN
  settings = build.rl_settings(config)   # valid, and unpacked as given
  assert {k: getattr(settings.train, k) for k in RELEASE_TRAIN} == RELEASE_TRAIN
  assert settings.algorithm.maximises == ("polychromic", 4)
  train.check(settings.train, settings.algorithm, settings.env)
  # num_subsets=0 is every set of 4 of the 8: C(8, 4) = 70.
  assert sets.all_subsets(8, 4).shape == (70, 4)
  # The release's learning rate (1e-6, for a 4B model) is not copied: the shared one,
  # which tuning sets as for every algorithm.
  assert config.train.learning_rate == train.TrainConfig().learning_rate != 1e-6
  # Against this project's Poly-EPO it differs in the release's settings alone.
  ours = poly_epo.get_config(f"size={size}")
  assert _differences(config.train.to_dict(), ours.train.to_dict()) == {
      "samples_per_prompt": (8, 16 if size == "default" else 32),
      "aggregation": ("sequence_sum", "token_mean"), "grad_clip": (0.3, 1.0)}
  assert _differences(config.algorithm.to_dict(), ours.algorithm.to_dict()) == (
      {"normalize": (False, True)} if size == "default"
      else {"normalize": (False, True), "set_size": (4, 8)})
  assert analysis_algorithms.label_of(config.algorithm.to_dict(), config.train.to_dict()) == \
      "Poly-EPO (as released)"
  assert build.run_record(config, settings.env)["label"] == "Poly-EPO (as released)"


def test_dr_grpo_is_grpo_unstandardised_with_the_release_s_loss():
  config = dr_grpo.get_config()
  assert config.algorithm.to_dict() == dict(name="grpo", normalize=False,
                                            normalize_over="prompt")
  assert _differences(config.train.to_dict(), grpo.get_config().train.to_dict()) == {
      "samples_per_prompt": (8, 16), "aggregation": ("sequence_sum", "token_mean"),
      "grad_clip": (0.3, 1.0)}
  # The pair shares every shared setting: only the advantage differs.
  assert config.train.to_dict() == poly_epo_official.get_config().train.to_dict()
  assert analysis_algorithms.label_of(config.algorithm.to_dict(), config.train.to_dict()) == \
      "Dr. GRPO"


def test_at_size_smoke_the_recipe_shrinks_and_stays_valid():
  for module in (poly_epo_official, dr_grpo):
    config = module.get_config("size=smoke")
    build.check_config(config)
    assert config.train.samples_per_prompt == 4
    assert {k: config.train[k] for k in RELEASE_TRAIN if k != "samples_per_prompt"} == \
        {k: v for k, v in RELEASE_TRAIN.items() if k != "samples_per_prompt"}
  assert poly_epo_official.get_config("size=smoke").algorithm.set_size == 2


def _brute_force(rewards, labels, n=4):
  """The release's set advantage in plain Python: every set G of n of the group,
  f(G) = mean reward x distinct non-degenerate labels / n, and each response's
  mean f over the sets holding it less the mean f over all sets."""
  groups = list(itertools.combinations(range(len(rewards)), n))
  score = {g: sum(rewards[j] for j in g) / n
              * len({labels[j] for j in g if labels[j] != DEGENERATE}) / n for g in groups}
  overall = sum(score.values()) / len(groups)
  return np.array([np.mean([score[g] for g in groups if i in g]) - overall
                   for i in range(len(rewards))])


def _advantage(config_module):
  """The group advantage f32[N] -> f32[N] that a config file's algorithm trains with."""
  return algorithms.resolve(config_module.get_config().algorithm).group_advantage


def test_the_official_set_advantage_is_the_unstandardised_marginal_polychromic_one():
  advantage = _advantage(poly_epo_official)
  key = jax.random.key(0)
  # Worked by hand (docs/method.md): 7 correct in one strategy and a wrong one of
  # its own. The 35 sets holding the wrong one score 3/4 * 2/4 = 3/8, the 35 others
  # 1 * 1/4; the mean is 5/16. The wrong one gets 3/8 - 5/16 = 1/16; a correct one
  # is in 15 of the first kind and 20 of the second: 17/56 - 5/16 = -1/112.
  rewards = jnp.array([1., 1, 1, 1, 1, 1, 1, 0])
  labels = jnp.array([0, 0, 0, 0, 0, 0, 0, 1])
  np.testing.assert_allclose(advantage(rewards, labels, key), [-1 / 112] * 7 + [1 / 16],
                             atol=1e-7)
  # A mixed group, degenerate responses among them, against all 70 sets.
  rewards = [1., 0, 1, 1, 0, 1, 0, 1]
  labels = [0, 1, 0, 2, DEGENERATE, DEGENERATE, 3, 1]
  expected = _brute_force(rewards, labels)
  got = advantage(jnp.array(rewards), jnp.array(labels), key)
  np.testing.assert_allclose(got, expected, atol=1e-6)
  assert np.std(expected) > 0.02 and abs(np.std(expected) - 1) > 0.5   # not standardised
  # Vmapped over prompts and jitted, as the training step computes it.
  batched = jax.jit(jax.vmap(advantage, in_axes=(0, 0, None)))
  got = batched(jnp.array([rewards, [1.] * 7 + [0]]),
                jnp.array([labels, [0] * 7 + [1]]), key)
  np.testing.assert_allclose(got, [expected, [-1 / 112] * 7 + [1 / 16]], atol=1e-6)
  # This project's Poly-EPO standardises the same advantage over the group.
  ours = _advantage(poly_epo)   # its n is 4 too
  np.testing.assert_allclose(ours(jnp.array(rewards), jnp.array(labels), key),
                             (expected - expected.mean()) / (expected.std() + 1e-6), atol=1e-5)


def test_dr_grpo_s_advantage_is_the_centred_reward():
  rewards = jnp.array([1., 0, 1, 1, 0, 0, 0, 1])
  got = _advantage(dr_grpo)(rewards, jnp.zeros(8, jnp.int32), jax.random.key(0))
  np.testing.assert_allclose(got, [0.5, -0.5, 0.5, 0.5, -0.5, -0.5, -0.5, 0.5], atol=1e-7)


setup = pytest.fixture(scope="module")(tiny_rl.setup)  # (env, env_params, model_config, base)


@pytest.mark.parametrize("config_module", [poly_epo_official, dr_grpo],
                         ids=["poly_epo_official", "dr_grpo"])
def test_the_release_s_recipe_learns(setup, config_module):
  """The recipe in-process on toy_env.ChoiceEnv (its shared settings from the
  config file, on test_train's tiny budget: 8 prompts, 20 steps, learning rate
  1e-2): the exact expected reward rises from ~0.1 past the 0.5 any prompt-blind
  policy is capped at, in both seeds."""
  env, env_params, mc, base = setup
  config = config_module.get_config()
  shared = train.TrainConfig(
      **dict(config.train.to_dict(), prompts_per_step=8, num_minibatches=1, num_steps=20,
             steps_per_chunk=20, learning_rate=1e-2, warmup_steps=1))
  assert (shared.samples_per_prompt, shared.aggregation, shared.grad_clip) == (8, "sequence_sum",
                                                                              0.3)
  algorithm = algorithms.resolve(config.algorithm)
  train.check(shared, algorithm, env)
  init, run_chunk = train.make_train(shared, algorithm, mc, env, env_params, num_seeds=2)
  state, _ = run_chunk(init(base, jnp.arange(4, dtype=jnp.uint32).reshape(2, 2)), base)
  final = np.asarray(jax.vmap(lambda p: toy_env.expected_reward(p, mc))(state.params)).mean(1)
  assert (final > toy_env.PROMPT_ONLY_BOUND + 0.1).all(), final
