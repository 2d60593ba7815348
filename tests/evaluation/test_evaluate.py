"""Tests for polyepo.evaluate against hand-worked summaries."""

import jax
import numpy as np
import pytest

import envs
from polyepo.evaluation import evaluate
from polyepo.policy import model
from polyepo.pretraining import pretrain


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


def test_summarize_families_applicability_and_per_problem_hand_values():
  """3 problems x 4 samples; strategies a, b share the family x; c is y, d is z.

    problem  labels          rewards     applicable (a b c d)
       0     a  b  c  DEG    1 1 0 1     T T F T
       1     a  c  d  d      0 1 1 0     F T T T
       2     b  b  b  a      0 0 0 0     T T T T
  """
  rewards = np.array([[1, 1, 0, 1], [0, 1, 1, 0], [0, 0, 0, 0]], np.float32)
  labels = np.array([[0, 1, 2, -1], [0, 2, 3, 3], [1, 1, 1, 0]], np.int32)
  applicable = np.array([[1, 1, 0, 1], [0, 1, 1, 1], [1, 1, 1, 1]], bool)
  answers = np.array([[5, 5, 6, -1], [7, 8, 8, 7], [3, 4, 4, 3]], np.int32)
  samples = evaluate.Samples(rewards, labels, np.full((3, 4), 10, np.int32),
                             np.array([2.0, 4.0, 6.0], np.float32), answers,
                             applicable=applicable)
  names, families = ("a", "b", "c", "d"), ("x", "x", "y", "z")
  s = evaluate.summarize(samples, names, families)
  # Shares count every sample; accuracy only where the strategy applies:
  # a: P0 (right), P2 (wrong); its P1 sample is left out -> 1/2 (not 1/3).
  # b: P0 right, P2 three wrong -> 1/4.  c: P1 right; its P0 sample left out -> 1 (not 1/2).
  # d: P1 right and wrong -> 1/2.  DEGENERATE: P0, right -> 1.
  assert s["strategy_share"] == {"a": 3 / 12, "b": 4 / 12, "c": 2 / 12, "d": 2 / 12,
                                 "DEGENERATE": 1 / 12}
  assert s["strategy_accuracy"] == {"a": 0.5, "b": 0.25, "c": 1.0, "d": 0.5, "DEGENERATE": 1.0}
  # Correct non-degenerate strategies: P0 {a, b} = family {x}; P1 {c, d} = {y, z}; P2 none.
  per = s["per_problem"]
  assert per["num_correct"] == [3, 2, 0]
  assert per["distinct"] == [3, 3, 2]
  assert per["distinct_correct"] == [2, 2, 0]
  assert per["distinct_correct_families"] == [1, 2, 0]
  assert per["branch_point"] == [2.0, 4.0, 6.0]
  # Majority vote: P0 picks 5 (right); P1 ties 7 (wrong) and 8 (right); P2 ties, both wrong.
  assert per["majority_vote"] == [1.0, 0.5, 0.0]
  # Samples per strategy and problem, read off the labels above (every sample counted).
  assert per["strategy_counts"] == {"a": [1, 1, 1], "b": [1, 0, 3], "c": [1, 1, 0],
                                    "d": [0, 2, 0], "DEGENERATE": [1, 0, 0]}
  # The correct ones among them (P0: a, b, DEG right; P1: c and one d right).
  assert per["correct_counts"] == {"a": [1, 0, 0], "b": [1, 0, 0], "c": [0, 1, 0],
                                   "d": [0, 1, 0], "DEGENERATE": [1, 0, 0]}
  assert all(type(v) is int for v in per["num_correct"] + per["distinct_correct_families"])
  assert s["distinct_correct_strategies"] == pytest.approx(4 / 3)
  assert s["distinct_correct_families"] == pytest.approx(1.0)
  assert s["distinct_strategies"] == pytest.approx(8 / 3)
  assert s["pass_at_k"][1] == pytest.approx((3 / 4 + 2 / 4 + 0) / 3)
  assert s["majority_vote"] == pytest.approx(0.5)
  # Without families each strategy is its own family; without applicability all apply.
  own = evaluate.summarize(samples, names)
  assert own["per_problem"]["distinct_correct_families"] == [2, 2, 0]
  unrestricted = evaluate.summarize(samples._replace(applicable=None), names, families)
  assert unrestricted["strategy_accuracy"]["a"] == pytest.approx(1 / 3)
  assert unrestricted["strategy_accuracy"]["c"] == pytest.approx(0.5)
  # A strategy produced only where it does not apply has no accuracy.
  nowhere = applicable.copy()
  nowhere[:, 3] = False
  assert evaluate.summarize(samples._replace(applicable=nowhere), names,
                            families)["strategy_accuracy"]["d"] is None
  no_answers = evaluate.summarize(samples._replace(answers=np.full((3, 4), -1, np.int32)), names)
  assert "majority_vote" not in no_answers["per_problem"]
  with pytest.raises(ValueError, match="strategy_families has 3 entries for 4"):
    evaluate.summarize(samples, names, ("x", "x", "y"))
  with pytest.raises(ValueError, match="applicable has shape"):
    evaluate.summarize(samples._replace(applicable=applicable[:, :3]), names)


@pytest.mark.parametrize("kwargs,match", [
    (dict(num_samples=0), "num_samples must be >= 1, got 0"),
    (dict(temperature=-0.5), "temperature must be >= 0, got -0.5"),
    (dict(num_problems=0), "num_problems must be >= 1, got 0"),
    (dict(problems_per_chunk=-1), "problems_per_chunk must be >= 0, got -1"),
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
  # Applicability of the problems themselves, in order, padding dropped.
  np.testing.assert_array_equal(a.applicable, np.asarray(env.applicable(problems)))
  assert a.applicable.shape == (5, len(env.strategy_names)) and not a.applicable.all()
  for x, y in zip(a, b):
    np.testing.assert_array_equal(x, y)
  assert np.all((a.lengths >= 1) & (a.lengths <= env.max_response_len))


def test_a_problem_draws_the_same_samples_in_any_chunk():
  """Problem i is sampled from fold_in(key, i) alone: 5 problems in chunks of 1, 2
  (padded) or 5, or by platform, give the same samples; another key others."""
  env, params = envs.make("multiplication")
  mc = pretrain.model_config_for(env, width=32, num_layers=1, num_heads=2)
  policy = model.init_params(jax.random.key(0), mc)
  problems = jax.tree.map(np.asarray, env.sample_problems(jax.random.key(1), params, 5))
  draw = lambda chunk, key=2: evaluate.sample_responses(
      policy, mc, env, problems, jax.random.key(key), num_samples=3, problems_per_chunk=chunk)
  one = draw(1)
  for chunk in (2, 5, 0):
    other = draw(chunk)
    np.testing.assert_array_equal(one.labels, other.labels)
    np.testing.assert_array_equal(one.lengths, other.lengths)
    np.testing.assert_array_equal(one.rewards, other.rewards)
  assert not np.array_equal(one.lengths, draw(1, key=3).lengths)


def test_seeds_sampled_together_draw_what_each_draws_alone():
  """sample_seeds over 3 seeds (different params and keys) in one vmapped call, in
  chunks of 2 problems, gives each seed the samples sample_responses gives it alone
  in chunks of 1 (the CPU's default), KL to the base model included."""
  env, params = envs.make("multiplication")
  mc = pretrain.model_config_for(env, width=32, num_layers=1, num_heads=2)
  seeds = [model.init_params(jax.random.key(s), mc) for s in range(3)]
  problems = jax.tree.map(np.asarray, env.sample_problems(jax.random.key(1), params, 5))
  keys = jax.random.split(jax.random.key(2), 3)
  options = dict(num_samples=3, temperature=1.0, base_params=seeds[0])
  together = evaluate.sample_seeds(jax.tree.map(lambda *x: np.stack(x), *seeds), mc, env,
                                   problems, keys, problems_per_chunk=2, **options)
  assert len(together) == 3
  for policy, key, batched in zip(seeds, keys, together):
    alone = evaluate.sample_responses(policy, mc, env, problems, key, problems_per_chunk=1,
                                      **options)
    for name in ("rewards", "labels", "lengths", "answers", "applicable"):
      np.testing.assert_array_equal(getattr(alone, name), getattr(batched, name), err_msg=name)
    np.testing.assert_allclose(alone.branch_points, batched.branch_points, rtol=1e-6)
    np.testing.assert_allclose(alone.kl_to_base, batched.kl_to_base, rtol=1e-4, atol=1e-5)
  assert not np.array_equal(together[0].lengths, together[1].lengths)


def test_the_default_chunk_follows_the_platform(monkeypatch):
  """problems_per_chunk=0: 32 responses per call on a CPU and at least one
  problem (1 of 32 or 64 samples, 4 of 8), 8,192 elsewhere (128 of 64)."""
  monkeypatch.setattr(jax, "default_backend", lambda: "cpu")
  assert [evaluate.default_problems_per_chunk(s) for s in (64, 32, 8, 1000)] == [1, 1, 4, 1]
  monkeypatch.setattr(jax, "default_backend", lambda: "gpu")
  assert [evaluate.default_problems_per_chunk(s) for s in (64, 10_000)] == [128, 1]


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


@pytest.mark.slow
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
