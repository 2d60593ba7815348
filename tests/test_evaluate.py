"""Tests for polyepo.evaluate against hand-worked summaries."""

import jax
import numpy as np
import pytest

import envs
from polyepo import evaluate, model, pretrain


def test_summarize_hand_values():
  rewards = np.array([[1, 0, 0, 1], [0, 0, 0, 0]], np.float32)
  labels = np.array([[0, 0, 1, -1], [1, 1, 2, 2]], np.int32)
  answers = np.array([[7, 3, 3, 7], [5, 5, 6, -1]], np.int32)
  samples = evaluate.Samples(rewards, labels, np.full((2, 4), 10, np.int32),
                             np.array([2.0, 4.0], np.float32), answers)
  s = evaluate.summarize(samples, ("a", "b", "c"))
  assert s["pass_at_k"][1] == pytest.approx((0.5 + 0.0) / 2)
  assert s["pass_at_k"][4] == pytest.approx(0.5)
  assert s["pass_at_k"][2] == pytest.approx((1 - 1 / 6) / 2)  # 1 - C(2,2)/C(4,2)
  assert s["strategy_share"] == {"a": 2 / 8, "b": 3 / 8, "c": 2 / 8, "DEGENERATE": 1 / 8}
  assert s["strategy_accuracy"]["a"] == 0.5 and s["strategy_accuracy"]["b"] == 0.0
  assert s["strategy_accuracy"]["DEGENERATE"] == 1.0
  assert s["distinct_strategies"] == 2.0          # {a, b} and {b, c}
  assert s["distinct_correct_strategies"] == 0.5  # {a} and {}
  assert s["strategies_used"] == 3 and s["correct_strategies_used"] == 1
  # Decoys: problem 0 -> b (1 sample); problem 1 -> b, c (4 samples): 5 of 8.
  assert s["decoy_mass"] == pytest.approx(5 / 8)
  assert s["branch_point"] == 3.0 and s["mean_length"] == 10.0
  # Majority vote: problem 0 ties 7 (right) with 3 (wrong) -> 0.5; problem 1 picks 5 -> 0.
  assert s["majority_vote"] == pytest.approx(0.25)
  assert "pass@k" in evaluate.format_report(s) and "majority vote" in evaluate.format_report(s)
  no_answers = evaluate.summarize(samples._replace(answers=np.full((2, 4), -1, np.int32)),
                                  ("a", "b", "c"))
  assert no_answers["majority_vote"] is None


@pytest.mark.parametrize("kwargs,match", [
    (dict(num_samples=0), "num_samples must be >= 1, got 0"),
    (dict(temperature=-0.5), "temperature must be >= 0, got -0.5"),
    (dict(num_problems=0), "num_problems must be >= 1, got 0"),
    (dict(problems_per_chunk=0), "problems_per_chunk must be >= 1, got 0"),
    (dict(num_samples=0, prefix="eval_"), "eval_num_samples must be >= 1, got 0"),
    (dict(temperature=-1.0, prefix="report."), "report.temperature must be >= 0, got -1.0"),
])
def test_validate_names_the_bad_setting(kwargs, match):
  settings = dict(num_samples=4, temperature=1.0, num_problems=2, problems_per_chunk=1)
  with pytest.raises(ValueError, match=match):
    evaluate.validate(**{**settings, **kwargs})


def test_validate_accepts_greedy_and_one_sample():
  evaluate.validate(num_samples=1, temperature=0.0, num_problems=1)


def test_evaluate_checks_its_settings_before_sampling():
  env, params = envs.make("multiplication")
  mc = pretrain.model_config_for(env, width=32, num_layers=1, num_heads=2)
  problems = jax.tree.map(np.asarray, env.sample_problems(jax.random.key(1), params, 2))
  with pytest.raises(ValueError, match="num_samples must be >= 1, got 0"):
    evaluate.evaluate(None, mc, env, problems, jax.random.key(2), num_samples=0)
  with pytest.raises(ValueError, match="temperature must be >= 0, got -1.0"):
    evaluate.sample_responses(None, mc, env, problems, jax.random.key(2), temperature=-1.0)


def test_sample_responses_shapes_and_determinism():
  env, params = envs.make("multiplication")
  mc = pretrain.model_config_for(env, width=32, num_layers=1, num_heads=2)
  policy = model.init_params(jax.random.key(0), mc)
  problems = jax.tree.map(np.asarray, env.sample_problems(jax.random.key(1), params, 5))
  a = evaluate.sample_responses(policy, mc, env, problems, jax.random.key(2), num_samples=3,
                                problems_per_chunk=2)
  b = evaluate.sample_responses(policy, mc, env, problems, jax.random.key(2), num_samples=3,
                                problems_per_chunk=2)
  assert a.rewards.shape == (5, 3) and a.labels.shape == (5, 3) and a.branch_points.shape == (5,)
  assert a.answers.shape == (5, 3) and a.answers.dtype == np.int32
  for x, y in zip(a, b):
    np.testing.assert_array_equal(x, y)
  assert np.all((a.lengths >= 1) & (a.lengths <= env.max_response_len))


def test_rewards_are_scored_against_their_own_problems():
  """Per-problem mean rewards of 1,500 samples match the policy's exact expected
  reward on that problem (toy choice task, whose problems differ: 0.06 to 0.19),
  also when problems are split into padded chunks."""
  import toy_env  # pylint: disable=g-import-not-at-top
  env = toy_env.ChoiceEnv()
  mc = pretrain.model_config_for(env, width=32, num_layers=1, num_heads=2)
  policy = model.init_params(jax.random.key(0), mc)
  exact = np.asarray(toy_env.expected_reward(policy, mc))
  assert exact.max() - exact.min() > 0.1  # problems a mix-up would blur
  problems = toy_env.Problems(np.array([0, 1, 2, 3, 2], np.int32))
  samples = evaluate.sample_responses(policy, mc, env, problems, jax.random.key(3),
                                      num_samples=1500, problems_per_chunk=2)
  means = samples.rewards.mean(1)
  expected = exact[problems.problem]
  sd = np.sqrt(expected * (1 - expected) / 1500)
  np.testing.assert_array_less(np.abs(means - expected), 4 * sd)


def test_kl_to_base_matches_the_exact_kl():
  """Toy choice task (responses of at most 2 tokens): the mean per-response KL
  estimate over 3,000 samples matches KL(policy || base) computed exactly by
  enumerating the first token, and is ~0 when the base is the policy itself."""
  import toy_env  # pylint: disable=g-import-not-at-top
  env = toy_env.ChoiceEnv()
  mc = pretrain.model_config_for(env, width=32, num_layers=1, num_heads=2)
  base = model.init_params(jax.random.key(0), mc)
  leaves, treedef = jax.tree.flatten(base)
  keys = jax.random.split(jax.random.key(1), len(leaves))
  policy = jax.tree.unflatten(treedef, [x + 0.3 * jax.random.normal(k, x.shape)
                                        for x, k in zip(leaves, keys)])
  problems = toy_env.Problems(np.array([0, 3], np.int32))

  def next_token_logp(params, prefix):  # prefix i32[R, L] -> f32[R, V]
    logits = model.forward(params, mc, prefix)[:, -1]
    return np.asarray(jax.nn.log_softmax(logits, -1), np.float64)

  exact = []
  for a in problems.problem:
    prompt = np.array([[toy_env.PROMPT0 + a]])
    p1, b1 = next_token_logp(policy, prompt), next_token_logp(base, prompt)
    kl = np.sum(np.exp(p1) * (p1 - b1))
    firsts = np.arange(env.vocab_size)
    prefixes = np.concatenate([np.repeat(prompt, len(firsts), 0), firsts[:, None]], 1)
    p2, b2 = next_token_logp(policy, prefixes), next_token_logp(base, prefixes)
    second = np.sum(np.exp(p2) * (p2 - b2), -1)
    continues = firsts != env.eos_id  # EOS ends the response after one token
    exact.append(kl + np.sum(np.exp(p1[0]) * second * continues))
  num = 3000
  samples = evaluate.sample_responses(policy, mc, env, problems, jax.random.key(2),
                                      num_samples=num, base_params=base)
  assert samples.kl_to_base.shape == (2, num)
  means = samples.kl_to_base.mean(1)
  se = samples.kl_to_base.std(1) / np.sqrt(num)
  assert min(exact) > 0.05
  np.testing.assert_array_less(np.abs(means - np.array(exact)), 4 * se)
  summary = evaluate.summarize(samples, env.strategy_names)
  assert summary["kl_to_base"] == pytest.approx(samples.kl_to_base.sum() / samples.lengths.sum())
  itself = evaluate.evaluate(base, mc, env, problems, jax.random.key(3), num_samples=50,
                             base_params=base)
  assert abs(itself["kl_to_base"]) < 1e-5
  assert evaluate.evaluate(base, mc, env, problems, jax.random.key(3),
                           num_samples=4)["kl_to_base"] is None
