r"""Mutation check: break the core on purpose and see that the tests notice.

  python -m tests.mutants                      # every mutant, each against its tests
  python -m tests.mutants --list               # the mutants, what each breaks
  python -m tests.mutants pg_min sampler_reuses_step0_uniforms   # some, by name
  python -m tests.mutants --full               # each against the whole default suite

Each mutant replaces one snippet of one source file (the snippet must occur
exactly once, so a stale mutant fails loudly instead of testing nothing) in a
temporary copy of the repository, then runs pytest there on the tests that
should notice it (default selection: a mutant whose killer is a slow test
ends its tests with `*WITH_SLOW`). A mutant is *killed* when pytest
fails and *survives* when it passes; survivors are listed at the end and make
the exit status 1. The unmutated copy runs every chosen mutant's tests first (slow
ones too) and must pass, and must import the copy's packages, not the checkout's.
The mutants run in `--lanes` copies side by side, one pytest process each (a
process per mutant pays for importing JAX and collecting the tests once; xdist
workers would pay it again each). The copies share the tests' XLA compilation
cache (tests/conftest.py), so run it after the suites have warmed it (its time:
docs/testing.md#how-long-ci-takes).
"""

import argparse
import os
import shutil
import subprocess
import sys
import queue
import tempfile
import threading
import time
from typing import NamedTuple, Sequence, Tuple

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WITH_SLOW = ("-m", "slow or not slow")  # for a mutant whose killers are slow tests


class Mutant(NamedTuple):
  name: str
  path: str             # relative to the repository root
  old: str              # occurs exactly once in the file
  new: str
  tests: Tuple[str, ...]  # pytest arguments that should kill it
  breaks: str           # what the mutant gets wrong


MUTANTS = (
    # -- polyepo/core/losses.py -------------------------------------------------------
    Mutant("pg_min", "polyepo/core/losses.py",
           "surrogate = jnp.minimum(ratio * advantages, clipped * advantages)",
           "surrogate = clipped * advantages",
           ("tests/core/test_losses.py::"
            "test_every_branch_of_the_clipped_objective[above 1 + eps_high, A < 0: unclipped]",),
           "PPO's min dropped: the clipped term always, also where the unclipped one is smaller"),
    Mutant("pg_clip_bounds_swapped", "polyepo/core/losses.py",
           "jnp.clip(ratio, 1.0 - config.eps_low, 1.0 + config.eps_high)",
           "jnp.clip(ratio, 1.0 - config.eps_high, 1.0 + config.eps_low)",
           ("tests/core/test_losses.py::"
            "test_every_branch_of_the_clipped_objective[above 1 + eps_high, A > 0: clipped]",),
           "eps_low and eps_high swapped (asymmetric clipping)"),
    Mutant("clip_fraction_counts_ratio_only", "polyepo/core/losses.py",
           "is_clipped = clipped * advantages < ratio * advantages",
           "is_clipped = (ratio * advantages) != (clipped * advantages)",
           ("tests/core/test_losses.py::"
            "test_every_branch_of_the_clipped_objective[above 1 + eps_high, A < 0: unclipped]",),
           "clip fraction counts tokens whose gradient is not clipped"),
    Mutant("kl_k3_reversed", "polyepo/core/losses.py",
           "log_ratio = ref_logprobs - logprobs",
           "log_ratio = logprobs - ref_logprobs",
           ("tests/core/test_losses.py::test_kl_k3",),
           "k3 of the wrong direction, KL(π_ref || π)"),
    Mutant("sequence_sum_divides_by_length", "polyepo/core/losses.py",
           "return jnp.sum(jnp.sum(masked, -1) / values.shape[-1]) / totals.sequences",
           "return jnp.sum(jnp.sum(masked, -1) / jnp.maximum(jnp.sum(mask, -1), 1.0)) "
           "/ totals.sequences",
           ("tests/core/test_losses.py::test_aggregations_hand_values",),
           "Dr. GRPO's sequence_sum divides by each response's length instead of T"),
    Mutant("micro_batch_divides_by_its_own_tokens", "polyepo/core/losses.py",
           "return jnp.sum(masked) / jnp.maximum(totals.tokens, 1.0)",
           "return jnp.sum(masked) / jnp.maximum(jnp.sum(mask), 1.0)",
           ("tests/core/test_losses.py::"
            "test_micro_batches_with_the_batch_totals_sum_to_the_batch[token_mean]",),
           "token_mean ignores the batch's totals: micro-batches no longer sum to the batch"),
    Mutant("pretrain_micro_batch_divides_by_its_own_tokens", "polyepo/pretraining/pretrain.py",
           "results = [corpus.part_value_and_grad(params, model_config, *part, count, env.eos_id)",
           "results = [corpus.part_value_and_grad(params, model_config, *part, "
           "jnp.maximum(jnp.sum(part[2]), 1), env.eos_id)",
           ("tests/pretraining/test_pretrain.py::"
            "test_micro_batches_give_the_batch_step[competence]",),
           "a pretraining micro-batch's mean ignores the batch's token counts"),
    Mutant("pretrain_resume_starts_over", "polyepo/pretraining/pretrain.py",
           "      done = int(state.step) // config.steps_per_chunk",
           "      done = 0",
           ("tests/pretraining/test_pretrain.py::"
            "test_base_model_resumes_its_pretraining_and_keeps_no_progress",),
           "a resumed pretraining runs every chunk of its stage again from the saved state"),
    Mutant("pretrain_cut_drops_the_last_trained_token", "polyepo/pretraining/corpus.py",
           "jnp.searchsorted(jnp.asarray(lengths), jnp.max(trained_ends(mask)))",
           "jnp.searchsorted(jnp.asarray(lengths), jnp.max(trained_ends(mask)) - 1)",
           ("tests/pretraining/test_pretrain.py::"
            "test_part_value_and_grad_is_the_loss_on_whole_responses[8]",),
           "pretraining cuts the responses one token short of a trained token"),
    Mutant("pretrain_micro_batches_mix_lengths", "polyepo/pretraining/corpus.py",
           "return ranks.reshape(num_micro, -1).T.reshape(-1)",
           "return ranks",
           ("tests/pretraining/test_pretrain.py::"
            "test_length_order_gives_each_micro_batch_a_block_of_lengths",),
           "pretraining micro-batches mix short and long rows (each is cut to its longest)"),
    # -- polyepo/policy/attention.py, polyepo/policy/sampling.py --------------------------------
    Mutant("grown_cache_prepends_its_slots", "polyepo/policy/attention.py",
           "return jnp.pad(x, [(0, extra if a == axis else 0) for a in range(x.ndim)])",
           "return jnp.pad(x, [(extra if a == axis else 0, 0) for a in range(x.ndim)])",
           ("tests/policy/test_sampling.py::test_a_growing_cache_gives_the_same_rollout[True]",),
           "a growing cache puts its new slots before the filled ones"),
    Mutant("continuation_restarts_rotary_positions", "polyepo/policy/attention.py",
           "return cache.replace(length=jnp.repeat(prefix.length, repeats))",
           "return cache",
           ("tests/policy/test_model.py::"
            "test_decoding_after_a_shared_prefix_matches_whole_sequences[1]",),
           "continuations of a shared prefix count their rotary positions from 0"),
    Mutant("prefix_rows_mix_kv_heads", "polyepo/policy/attention.py",
           "a = a.reshape(num_prefixes, kv_heads, n, -1, a.shape[-1]).swapaxes(1, 2)",
           "a = a.reshape(num_prefixes, n, kv_heads, -1, a.shape[-1])",
           ("tests/policy/test_model.py::"
            "test_decoding_after_a_shared_prefix_matches_whole_sequences[2]",),
           "a shared prefix's scores go back to the wrong rows' kv heads"),
    Mutant("sampler_reuses_step0_uniforms", "polyepo/policy/sampling.py",
           "token = inverse_cdf_sample(logp, uniforms[t])",
           "token = inverse_cdf_sample(logp, uniforms[0])",
           ("tests/policy/test_sampling.py::test_early_stop_equals_fixed_length",),
           "every decode step reuses the first step's uniforms"),
    Mutant("sampler_rows_share_uniforms", "polyepo/policy/sampling.py",
           "uniforms = jax.random.uniform(key, (steps, batch))",
           "uniforms = jnp.broadcast_to(jax.random.uniform(key, (steps, 1)), (steps, batch))",
           ("tests/policy/test_sampling.py::test_samples_per_prompt_equals_repeated_prompts",),
           "all rows draw with the same uniform"),
    Mutant("prompt_uniforms_interleave_prompts", "polyepo/policy/sampling.py",
           "return jnp.transpose(per_prompt, (1, 0, 2)).reshape(steps, -1)",
           "return per_prompt.reshape(steps, -1)",
           ("tests/policy/test_sampling.py::"
            "test_a_key_per_prompt_draws_each_prompt_alone[False]",),
           "with a key per prompt, rows draw other prompts' uniforms"),
    Mutant("sampler_ignores_traced_temperature", "polyepo/policy/sampling.py",
           "scaled = logits / jnp.where(temperature > 0, temperature, 1.0)",
           "scaled = logits",
           ("tests/policy/test_sampling.py::test_greedy_limits_match_argmax_decoding[knobs1]",),
           "a traced temperature is ignored"),
    Mutant("top_p_drops_crossing_token", "polyepo/policy/sampling.py",
           "mass_before = jnp.cumsum(probs, axis=-1) - probs",
           "mass_before = jnp.cumsum(probs, axis=-1)",
           ("tests/policy/test_sampling.py::test_left_padding_gives_same_samples",),
           "the nucleus loses the token that crosses top_p"),
    Mutant("one_token_rollout_decodes", "polyepo/policy/sampling.py",
           "if steps > 1 else []",
           "if steps > 0 else []",
           ("tests/policy/test_sampling.py::"
            "test_one_token_is_drawn_from_the_prompts_logits[True]",),
           "a one-token rollout runs a decoding phase over an empty cache"),
    # -- polyepo/rl/train.py --------------------------------------------------------
    Mutant("rewards_paired_with_wrong_prompts", "polyepo/rl/train.py",
           "repeated = jax.tree.map(lambda x: jnp.repeat(x, N, axis=0), problems)",
           "repeated = jax.tree.map(lambda x: jnp.tile(x, (N,) + (1,) * (x.ndim - 1)), problems)",
           ("tests/rl/test_train.py::"
            "test_each_algorithm_raises_reward_from_a_nontrivial_start[dr_grpo]",),
           "responses are scored against other prompts' problems"),
    Mutant("groups_across_prompts", "polyepo/rl/train.py",
           "reward, label = reward.reshape(B, N), label.reshape(B, N)",
           "reward, label = reward.reshape(N, B).T, label.reshape(N, B).T",
           ("tests/rl/test_train.py::"
            "test_each_algorithm_raises_reward_from_a_nontrivial_start[dr_grpo]",),
           "the (B, N) grouping mixes prompts"),
    Mutant("advantage_sign_flipped", "polyepo/rl/estimators.py",
           "advantages = batch_advantages(advantage, standardise_batch, rollouts.reward,",
           "advantages = -batch_advantages(advantage, standardise_batch, rollouts.reward,",
           ("tests/rl/test_train.py::"
            "test_each_algorithm_raises_reward_from_a_nontrivial_start[dr_grpo]",),
           "the policy is pushed away from high-advantage responses"),
    Mutant("step_key_reused", "polyepo/rl/train.py",
           "key = jax.random.fold_in(jax.random.wrap_key_data(state.key), state.step)",
           "key = jax.random.wrap_key_data(state.key)",
           ("tests/rl/test_train.py::"
            "test_each_step_draws_fresh_problems_and_scores_them_right",),
           "every step reuses one PRNG key (same problems and rollouts)"),
    Mutant("kl_coef_dropped", "polyepo/rl/train.py",
           "losses.PGLossConfig(config.eps_low, config.eps_high, config.aggregation,\n"
           "                                    config.kl_coef)",
           "losses.PGLossConfig(config.eps_low, config.eps_high, config.aggregation, 0.0)",
           ("tests/rl/test_train.py::"
            "test_kl_penalty_pulls_the_policy_back_to_the_base", *WITH_SLOW),
           "kl_coef never reaches the loss"),
    Mutant("critic_advantage_sign_flipped", "polyepo/rl/ppo_batch.py",
           "advantages = poly_ppo.token_advantages(groups, loss_mask, settings.normalize)",
           "advantages = -poly_ppo.token_advantages(groups, loss_mask, settings.normalize)",
           ("tests/rl/test_train.py::"
            "test_each_algorithm_raises_reward_from_a_nontrivial_start[ppo]", *WITH_SLOW),
           "PPO and Poly-PPO push the policy away from high-advantage tokens"),
    # -- polyepo/rl/parts.py, polyepo/rl/algorithms.py -------------------------------------
    Mutant("part_fields_ignored", "polyepo/rl/parts.py",
           "    return kind(**value)\n",
           "    return kind()\n",
           ("tests/rl/test_train_pinned.py::"
            "test_same_seed_gives_the_pinned_numbers[poly_ppo_multiplication]", *WITH_SLOW),
           "a config's critic, GAE or vines fields are dropped for the part's defaults"),
    # -- polyepo/core/gae.py, polyepo/rl/vines.py, polyepo/rl/poly_ppo.py -------------------
    Mutant("gae_lambda_dropped", "polyepo/core/gae.py",
           "advantage = delta + gamma * lam * carry * keep",
           "advantage = delta + gamma * carry * keep",
           ("tests/core/test_gae.py::test_hand_worked_example",),
           "GAE ignores λ (Monte Carlo returns whatever gae_lambda says)"),
    Mutant("window_counts_the_start_boundary", "polyepo/rl/vines.py",
           "steps = jnp.cumsum(boundaries & (t > start))",
           "steps = jnp.cumsum(boundaries & (t >= start))",
           ("tests/rl/test_vines.py::"
            "test_window_mask_is_exact_at_steps_and_ends[3-1-0001110000]",),
           "a rollout state's window is one step short"),
    Mutant("vine_prefix_off_by_one", "polyepo/rl/vines.py",
           "in_prefix = jnp.arange(length) < position",
           "in_prefix = jnp.arange(length) <= position",
           ("tests/rl/test_vines.py::"
            "test_prefix_prompts_right_align_prompt_and_prefix", *WITH_SLOW),
           "vines continue a prefix one token longer than their state"),
    Mutant("vine_context_drops_sampled_pads", "polyepo/rl/vines.py",
           "shift(jnp.concatenate([prompt != pad_id, in_prefix])))",
           "shift(jnp.concatenate([prompt != pad_id, in_prefix & (prefix != pad_id)])))",
           ("tests/rl/test_vines.py::"
            "test_prefix_prompts_right_align_prompt_and_prefix", *WITH_SLOW),
           "a pad token the root sampled is dropped from its vines' context"),
    Mutant("vine_features_one_token_late", "polyepo/rl/vines.py",
           "_shift(cont_features, start)",
           "_shift(cont_features, start + 1)",
           ("tests/rl/test_vines.py::"
            "test_vine_logprobs_are_the_policy_continuation_logprobs", *WITH_SLOW),
           "the critic reads each vine token's value from the state after it"),
    Mutant("vine_sets_include_roots", "polyepo/rl/poly_ppo.py",
           "roots = one_set(rewards[:num_roots], labels[:num_roots], keys[0])",
           "roots = one_set(rewards[:num_roots + 1], labels[:num_roots + 1], keys[0])[:num_roots]",
           ("tests/rl/test_poly_ppo.py::test_windows_and_gae_combine_token_by_token",),
           "the root set takes a vine in"),
    # -- polyepo/rl/loop.py ---------------------------------------------------------
    Mutant("resume_keeps_stale_logs", "polyepo/rl/loop.py",
           'writers.truncate_jsonl(os.path.join(workdir, f"{name}.jsonl"), start)',
           "pass",
           ("tests/rl/test_loop.py::"
            "test_resume_between_checkpoints_matches_uninterrupted_run[set_rl]", *WITH_SLOW),
           "a resumed run keeps the records logged after its last checkpoint"),
    Mutant("resume_allows_fewer_steps", "experiments/build.py",
           "and now[k] >= started[k])",
           "and True)",
           ("tests/experiments/test_build.py::test_resuming_under_another_config_is_refused",),
           "a run resumes with fewer steps than it was started with"),
    # -- polyepo/core/advantages.py ---------------------------------------------------
    Mutant("polychromic_closed_form_sign", "polyepo/core/advantages.py",
           "- q2 * (label_reward - r))",
           "+ q2 * (label_reward - r))",
           ("tests/core/test_advantages.py::test_closed_forms_equal_enumeration_every_n[2]",),
           "a sign error in the polychromic closed form"),
    Mutant("polychromic_degenerate_is_a_strategy", "polyepo/core/advantages.py",
           "strategic = labels != DEGENERATE",
           "strategic = labels != DEGENERATE - 1",
           ("tests/core/test_advantages.py::test_closed_forms_equal_enumeration_every_n[2]",),
           "degenerate responses count as one more strategy"),
    Mutant("grpo_sample_std", "polyepo/core/advantages.py",
           "return centered / (jnp.std(r) + eps)",
           "return centered / (jnp.std(r, ddof=1) + eps)",
           ("tests/core/test_advantages.py::test_explainer_worked_example",),
           "GRPO divides by the sample std (ddof = 1) instead of the population std"),
    Mutant("diversity_bonus_for_degenerate", "polyepo/core/advantages.py",
           "return jnp.where(labels == DEGENERATE, 0.0, d)",
           "return d",
           ("tests/core/test_advantages.py::test_diversity_bonus_hand_values",),
           "reward shaping pays degenerate responses a diversity bonus"),
    # -- polyepo/core/metrics.py, polyepo/evaluation/evaluate.py ---------------------------------
    Mutant("pass_at_k_off_by_one", "polyepo/core/metrics.py",
           "factors = jnp.maximum(1.0 - k / (num_samples - j), 0.0)",
           "factors = jnp.maximum(1.0 - k / (num_samples - j + 1), 0.0)",
           ("tests/core/test_metrics.py::test_pass_at_k_matches_exact_fraction[1]",),
           "pass@k's product off by one"),
    Mutant("distinct_correct_counts_wrong", "polyepo/core/metrics.py",
           "jnp.where(rewards > 0, labels, DEGENERATE)",
           "jnp.where(rewards >= 0, labels, DEGENERATE)",
           ("tests/core/test_metrics.py::test_strategy_counts_and_distinct",),
           "distinct correct strategies count wrong responses"),
    Mutant("eval_scores_wrong_problems", "polyepo/evaluation/evaluate.py",
           "problems_rep = jax.tree.map(lambda x: jnp.repeat(x, num_samples, axis=0), problems)",
           "problems_rep = jax.tree.map(lambda x: jnp.tile(x, (num_samples,) + (1,) * (x.ndim - 1)), "
           "problems)",
           ("tests/evaluation/test_evaluate.py::"
            "test_rewards_are_scored_against_their_own_problems",),
           "evaluation scores samples against other problems"),
    Mutant("eval_keys_restart_each_chunk", "polyepo/evaluation/evaluate.py",
           "(first + jnp.arange(num_problems))",
           "(jnp.arange(num_problems))",
           ("tests/evaluation/test_evaluate.py::"
            "test_a_problem_draws_the_same_samples_in_any_chunk",),
           "evaluation keys count problems within a chunk: the samples depend on the chunk size"),
    Mutant("train_draws_held_out_problems", "polyepo/evaluation/splits.py",
           "    return inside & ~jnp.isin(b, jnp.asarray(_held_buckets(env)))",
           "    return inside",
           ("tests/evaluation/test_splits.py::"
            "test_no_held_out_multiplication_product_is_a_training_product[validation]",),
           "training draws validation and test problems"),
    Mutant("roots_mirror_apart", "envs/polynomial_roots/problems.py",
           "  smaller = jnp.where((key(mirror) < key(roots))[:, None], mirror, roots)",
           "  smaller = roots",
           ("tests/evaluation/test_splits.py::"
            "test_no_held_out_roots_problem_is_trained_on_in_a_related_form[validation]",),
           "p(-x) is another exercise than p: a mirrored training problem answers a held-out one"),
    Mutant("splits_hash_the_surface_form", "polyepo/evaluation/splits.py",
           "problem_hash(env.canonical_form(problems))",
           "problem_hash(problems)",
           ("tests/evaluation/test_splits.py::"
            "test_no_held_out_multiplication_product_is_a_training_product[validation]",),
           "problems are held out by their own numbers, not their exercise: b * a is trained on"),
    Mutant("opening_one_token_short", "polyepo/evaluation/forced.py",
           "  length = jnp.max(jnp.where(others, common, 0), axis=-1) + 1",
           "  length = jnp.max(jnp.where(others, common, 0), axis=-1)",
           ("tests/evaluation/test_forced.py::"
            "test_openings_match_brute_force[multiplication]", *WITH_SLOW),
           "the opening stops one token before the one that tells the strategy apart"),
    Mutant("decoy_mass_inverted", "polyepo/evaluation/evaluate.py",
           "decoy = (one_hot & ~correct_by_strategy[:, None, :]).any(-1)",
           "decoy = (one_hot & correct_by_strategy[:, None, :]).any(-1)",
           ("tests/evaluation/test_evaluate.py::test_summarize_hand_values",),
           "decoy mass counts the strategies that are correct"),
    Mutant("strategy_accuracy_ignores_applicable", "polyepo/evaluation/evaluate.py",
           'counted = produced if name == "DEGENERATE" else produced & applicable[:, s, None]',
           "counted = produced",
           ("tests/evaluation/test_evaluate.py::"
            "test_summarize_families_applicability_and_per_problem_hand_values",),
           "per-strategy accuracy counts problems the strategy does not apply to"),
    Mutant("families_counted_as_strategies", "polyepo/evaluation/evaluate.py",
           "jnp.asarray(rewards), metrics.family_labels(labels, families)))",
           "jnp.asarray(rewards), jnp.asarray(labels)))",
           ("tests/evaluation/test_evaluate.py::"
            "test_summarize_families_applicability_and_per_problem_hand_values",),
           "distinct correct families counts strategies, not their families"),
    # -- experiments/analysis/stats.py, tables.py, claims.py, archive.py -----------------
    Mutant("one_seed_claims_are_judged", "experiments/analysis/stats.py",
           "  if min(np.shape(a)[0], np.shape(b)[0]) < MIN_SEEDS:\n",
           "  if False:\n",
           ("tests/experiments/analysis/test_stats.py::test_one_seed_is_never_judged",),
           "a claim resting on one seed is judged, so it can hold"),
    Mutant("bootstrap_difference_unpaired", "experiments/analysis/stats.py",
           "problems_b = problems_a if paired else _draws(rng, b.shape[1], replicates)",
           "problems_b = _draws(rng, b.shape[1], replicates)",
           ("tests/experiments/analysis/test_stats.py::"
            "test_identical_runs_differ_by_exactly_zero_only_when_paired",),
           "a difference draws each side's problems independently, not paired"),
    Mutant("bootstrap_keeps_every_seed", "experiments/analysis/stats.py",
           "  seeds = _draws(rng, values.shape[0])\n",
           "  seeds = np.tile(np.arange(values.shape[0]), (NUM_REPLICATES, 1))\n",
           ("tests/experiments/analysis/test_stats.py::test_seeds_are_resampled_hand_worked",),
           "the interval resamples problems but not seeds"),
    Mutant("shift_share_execution_weighted_by_one_side", "experiments/analysis/stats.py",
           "execution = (accuracy_a - accuracy_b) * (share_a + share_b) / 2",
           "execution = (accuracy_a - accuracy_b) * share_a",
           ("tests/experiments/analysis/test_stats.py::test_shift_share_by_hand",),
           "the execution part of a pass@1 difference weights one run's shares only"),
    Mutant("correct_counts_ignore_correctness", "polyepo/evaluation/evaluate.py",
           "name: ((labels == (DEGENERATE if name == \"DEGENERATE\" else s)) & (rewards > 0))",
           "name: ((labels == (DEGENERATE if name == \"DEGENERATE\" else s)))",
           ("tests/evaluation/test_evaluate.py::"
            "test_summarize_families_applicability_and_per_problem_hand_values",),
           "the per-problem correct counts per strategy count every sample"),
    Mutant("claim_margin_ignored", "experiments/analysis/stats.py",
           "    holds, refuted = low > m, high < m + delta\n",
           "    holds, refuted = low > 0, high < m + delta\n",
           ("tests/experiments/analysis/test_stats.py::test_one_problem_different_hand_worked",),
           "a claim \"a > b + m\" holds as a > b"),
    Mutant("amplification_factor_dropped", "experiments/analysis/claims.py",
           "scaled_base = m * shares[\"Base\"]",
           "scaled_base = shares[\"Base\"]",
           ("tests/experiments/analysis/test_claims.py::"
            "test_a_rare_strategy_amplified_by_poly_epo_and_not_grpo",),
           "the rare-strategy claim asks for any growth instead of 5x the base share"),
    Mutant("claims_not_simultaneous", "experiments/analysis/claims.py",
           "        share = alpha / max(total, 1)\n",
           "        share = alpha\n",
           ("tests/experiments/analysis/test_claims.py::"
            "test_the_secondary_family_is_bonferroni_within_a_domain",),
           "each secondary claim's interval is at 95% on its own, not simultaneous over "
           "the domain's secondary family"),
    Mutant("archive_keeps_stale_runs", "experiments/analysis/archive.py",
           "    shutil.rmtree(os.path.join(destination, \"runs\"))",
           "    pass",
           ("tests/experiments/analysis/test_archive.py::"
            "test_archiving_again_replaces_the_earlier_archive",),
           "archiving a sweep again leaves the runs it no longer has beside the new ones"),
    Mutant("holm_counts_claims_by_their_smaller_p", "experiments/analysis/stats.py",
           "  others = np.delete(pairs.max(axis=1), i)\n",
           "  others = np.delete(pairs.min(axis=1), i)\n",
           ("tests/experiments/analysis/test_stats.py::test_holm_pairs_by_hand",),
           "the primary family's step-down drops a refuted claim although its holding null "
           "may be true (plain Holm over each claim's smaller p-value)"),
    # -- experiments/analysis/records.py --------------------------------------------------
    Mutant("seed_blocks_mean_their_means", "experiments/analysis/records.py",
           'out[split] = {"mean": evaluate.mean_over_seeds(seeds), "seeds": seeds}',
           'out[split] = {"mean": evaluate.mean_over_seeds([r[split]["mean"] for r in records]),'
           ' "seeds": seeds}',
           ("tests/experiments/analysis/test_records.py::"
            "test_the_finished_seed_blocks_of_a_setting_join_into_one_run",),
           "a row joined from seed blocks averages its blocks' means, a seed of a smaller "
           "block weighing more"),
    Mutant("seed_blocks_overlap", "experiments/analysis/records.py",
           "      if _seeds(a).stop > _seeds(b).start:",
           "      if False:",
           ("tests/experiments/analysis/test_records.py::"
            "test_seed_blocks_with_a_seed_in_common_are_refused",),
           "a seed trained twice joins its row twice"),
    Mutant("tuning_chooses_on_test", "configs/claims.py",
           '    split="validation",\n    criterion="pass@1",',
           '    split="test",\n    criterion="pass@1",',
           ("tests/experiments/test_tuning.py::"
            "test_choose_takes_the_best_validation_pass_at_1",),
           "settings are chosen on the test split"),
    Mutant("token_results_counted_as_operands", "experiments/token_errors.py",
           '''    elif phase != "answer" and token == "=":
      phase = "result"''',
           '''    elif phase != "answer" and token == "=":
      phase = "operand"''',
           ("tests/experiments/test_token_errors.py::test_roles_of_a_worked_trace",),
           "the numbers a step computes are scored as numbers it copies"),
    Mutant("token_steps_run_across_steps", "experiments/token_errors.py",
           "    if text[i] == marker or text[i] in separators:\n      start = i + 1",
           "    if text[i] == marker:\n      start = i + 1",
           ("tests/experiments/test_token_errors.py::test_result_steps_of_a_worked_trace",),
           "a result's step is read from the start of the response, so no step is seen twice"),
    Mutant("edge_choices_trained", "configs/sweeps/tuning.py",
           "  if outside and not (edges or provisional):",
           "  if False:",
           ("tests/experiments/test_tuning.py::"
            "test_an_edge_choice_is_marked_refused_and_extended",),
           "the final sweep trains a choice at its grid's edge, which the tuning rule extends"),
    Mutant("edge_extended_inwards", "configs/sweeps/tuning.py",
           '{"lowest": (1 / factor,), "highest": (factor,),',
           '{"lowest": (factor,), "highest": (1 / factor,),',
           ("tests/experiments/test_tuning.py::"
            "test_an_edge_choice_is_marked_refused_and_extended",),
           "a choice at the grid's edge is extended back into the grid, not beyond it"),
    Mutant("tuning_ties_go_to_the_faster_rate", "experiments/analysis/records.py",
           "return max(in_grid_order(group), key=criterion)",
           "return max(in_grid_order(group)[::-1], key=criterion)",
           ("tests/experiments/test_tuning.py::"
            "test_choose_takes_the_best_validation_pass_at_1",),
           "a tie between settings goes to the larger learning rate, not the declared rule"),
    Mutant("edge_choices_never_extended", "experiments/comparison.py",
           "  while size != \"smoke\" and (edges := at_edge(chosen, domain)):",
           "  while size != \"smoke\" and (edges := []):",
           ("tests/experiments/test_comparison.py::"
            "test_a_domain_extends_its_tuning_while_a_choice_is_at_an_edge_then_trains_the_choices",),
           "the comparison trains a choice at its grid's edge without extending the grid, "
           "against the registered tuning rule"),
    Mutant("final_blocks_row_by_row", "configs/sweeps/final.py",
           "  return [run for blocks in itertools.zip_longest(*rows) for run in blocks "
           "if run is not None]",
           "  return [run for blocks in rows for run in blocks]",
           ("tests/experiments/test_tuning.py::"
            "test_tuning_files_feed_the_final_and_lambda_sweeps",),
           "the final sweep trains one row's seed blocks after another, so that a sweep "
           "stopped early leaves the last rows with none"),
    Mutant("provisional_choices_trained", "experiments/tuning.py",
           "    waiting = [run[\"name\"] for run in pending if planned_domain(run) in (domain, None)]\n",
           "    waiting = []\n",
           ("tests/experiments/test_tuning.py::"
            "test_tuning_files_feed_the_final_and_lambda_sweeps",),
           "a chosen.json written while tuning runs are unfinished feeds the final sweep unmarked"),
    Mutant("batch_normalisation_per_prompt", "polyepo/rl/estimators.py",
           "advantages = adv_lib.normalize_advantage(advantages.reshape(-1)).reshape(advantages.shape)",
           "advantages = jax.vmap(adv_lib.normalize_advantage)(advantages)",
           ("tests/rl/test_train.py::test_batch_normalisation_scales_all_groups_together",),
           "normalize_over='batch' standardises each prompt's group, as 'prompt' does"),
    Mutant("windowed_advantages_swapped", "polyepo/rl/estimators.py",
           "advantages = jnp.where(window, set_advantage[:, None], reward_advantage[:, None])",
           "advantages = jnp.where(window, reward_advantage[:, None], set_advantage[:, None])",
           ("tests/rl/test_estimators.py::"
            "test_a_wrong_response_with_a_new_strategy_is_credited_for_its_choice_not_its_slips",),
           "windowed Poly-EPO credits the strategy choice with the reward advantage and the "
           "execution with the set advantage"),
    Mutant("critic_bound_biased_within_variance", "polyepo/core/gae.py",
           "per_state - 1.0, 1.0)",
           "per_state, 1.0)",
           ("tests/core/test_gae.py::test_state_explained_variance_and_its_bound_by_hand",),
           "the critic's explained-variance bound uses each state's biased (plug-in) variance, "
           "so it credits a critic with more than any critic can explain"),
    Mutant("surprise_reads_the_next_token", "polyepo/policy/value_head.py",
           "before = jnp.concatenate([jnp.zeros_like(logprobs[..., :1]), logprobs[..., :-1]], "
           "axis=-1)",
           "before = logprobs",
           ("tests/policy/test_value_head.py::test_surprise_is_worked_by_hand",),
           "the surprise critic's V(s_t) reads the log-prob of token t, the action taken at "
           "s_t, so the baseline depends on the action it is a baseline for"),
)


def apply(mutant: Mutant, root: str) -> str:
  """Writes the mutated file under `root`; returns the original text."""
  path = os.path.join(root, mutant.path)
  with open(path) as f:
    text = f.read()
  count = text.count(mutant.old)
  if count != 1:
    raise ValueError(f"mutant {mutant.name}: the snippet occurs {count} times in "
                     f"{mutant.path}, expected once: {mutant.old!r}")
  with open(path, "w") as f:
    f.write(text.replace(mutant.old, mutant.new))
  return text


def copy_repository(destination: str) -> None:
  """The working tree without its environments, caches and top-level runs/ (the
  run records archived under results/ are kept: tests read them)."""
  anywhere = shutil.ignore_patterns(".git", ".venv", "venv", "__pycache__", "*.egg-info",
                                    ".pytest_cache", ".hypothesis", "build", "dist")

  def ignore(directory, names):
    ignored = set(anywhere(directory, names))
    if os.path.abspath(directory) == os.path.abspath(ROOT) and "runs" in names:
      ignored.add("runs")
    return ignored

  shutil.copytree(ROOT, destination, ignore=ignore)


def pytest(root: str, args: Sequence[str], workers: int, timeout: int):
  """(passed, seconds, the first failing test or the output's tail) of pytest in `root`."""
  command = [sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider"]
  if workers > 1:
    command += ["-n", str(workers)]
  tic = time.perf_counter()
  try:
    result = subprocess.run(command + list(args), cwd=root, capture_output=True, text=True,
                            timeout=timeout, env=dict(os.environ, HYPOTHESIS_PROFILE="ci"))
  except subprocess.TimeoutExpired:
    return False, time.perf_counter() - tic, "a timeout"
  lines = (result.stdout + result.stderr).strip().splitlines()
  failed = [l.split(" - ")[0].replace("FAILED ", "") for l in lines if l.startswith("FAILED ")]
  return (result.returncode == 0, time.perf_counter() - tic,
          failed[0] if failed else "\n".join(lines[-3:]))


def prepare(root: str, chosen: Sequence[Mutant]) -> None:
  """Copies the repository to `root` and checks it before anything runs: every
  chosen snippet is present once, and the copy imports its own packages."""
  copy_repository(root)
  for m in chosen:
    with open(os.path.join(root, m.path)) as f:
      if f.read().count(m.old) != 1:
        apply(m, root)  # raises, naming the mutant
  where = subprocess.run(
      [sys.executable, "-c", "import polyepo, experiments; print(polyepo.__file__); "
       "print(experiments.__path__[0])"], cwd=root, capture_output=True, text=True)
  if not all(line.startswith(root) for line in where.stdout.split()):
    raise RuntimeError(f"the copy imports packages from elsewhere:\n{where.stdout}{where.stderr}")


def run_lanes(roots: Sequence[str], chosen: Sequence[Mutant], full: bool, timeout: int):
  """Runs each mutant in the first free copy of `roots`, printing each verdict as it
  comes; returns the survivors in `chosen`'s order."""
  todo = queue.Queue()
  for i, m in enumerate(chosen):
    todo.put((i, m))
  survived, done, lock = set(), [0], threading.Lock()

  def lane(root):
    while True:
      try:
        i, m = todo.get_nowait()
      except queue.Empty:
        return
      original = apply(m, root)
      try:
        passed, seconds, tail = pytest(root, [] if full else m.tests, 1, timeout)
      finally:
        with open(os.path.join(root, m.path), "w") as f:
          f.write(original)
      with lock:
        done[0] += 1
        verdict = "SURVIVED" if passed else f"killed by {tail}"
        print(f"[{done[0]}/{len(chosen)}] {m.name}: {verdict} ({seconds:.0f} s)\n"
              f"    {m.breaks}", flush=True)
        if passed:
          survived.add(i)

  threads = [threading.Thread(target=lane, args=(root,)) for root in roots]
  for t in threads:
    t.start()
  for t in threads:
    t.join()
  return [m for i, m in enumerate(chosen) if i in survived]


def main(argv=None) -> int:
  parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                   formatter_class=argparse.RawDescriptionHelpFormatter)
  parser.add_argument("names", nargs="*", help="mutants to run (default: all)")
  parser.add_argument("--list", action="store_true", help="list the mutants and exit")
  parser.add_argument("--full", action="store_true",
                      help="run the whole default suite against each mutant (slow)")
  parser.add_argument("--lanes", type=int, default=2,
                      help="mutants run side by side, each in its own copy (one core each)")
  parser.add_argument("--workers", type=int, default=2,
                      help="pytest-xdist workers of the unmutated copy's run")
  parser.add_argument("--timeout", type=int, default=1800, help="seconds per pytest run")
  args = parser.parse_args(argv)
  if args.list:
    for m in MUTANTS:
      print(f"{m.name:40s} {m.path:24s} {m.breaks}")
    return 0
  if args.lanes < 1 or args.workers < 1:
    parser.error(f"--lanes and --workers must be at least 1, not {args.lanes} and {args.workers}")
  known = {m.name: m for m in MUTANTS}
  unknown = [n for n in args.names if n not in known]
  if unknown:
    parser.error(f"unknown mutant(s) {', '.join(unknown)}; valid: {', '.join(known)}")
  chosen = [known[n] for n in args.names] or list(MUTANTS)

  with tempfile.TemporaryDirectory(prefix="polyepo-mutants-") as tmp:
    roots = [os.path.join(tmp, f"repo{i}") for i in range(min(args.lanes, len(chosen)))]
    for root in roots:
      prepare(root, chosen)
    files = sorted({a for m in chosen for a in m.tests if a.startswith("tests/")})
    # Every killer, slow ones too: each must pass unmutated for its failure to count.
    baseline = [] if args.full else [*files, *WITH_SLOW]
    print(f"unmutated copy: pytest {' '.join(files) if baseline else '(default suite)'}",
          flush=True)
    ok, seconds, tail = pytest(roots[0], baseline, args.workers, args.timeout)
    if not ok:
      print(f"the unmutated tests fail ({seconds:.0f} s):\n{tail}")
      return 2
    print(f"  passed in {seconds:.0f} s\n", flush=True)
    tic = time.perf_counter()
    survivors = run_lanes(roots, chosen, args.full, args.timeout)
  print(f"\n{len(chosen) - len(survivors)} of {len(chosen)} mutants killed "
        f"({time.perf_counter() - tic:.0f} s in {len(roots)} lanes).")
  if survivors:
    print("Survivors (no test notices them):")
    for m in survivors:
      print(f"  {m.name} ({m.path}): {m.breaks}")
    return 1
  return 0


if __name__ == "__main__":
  sys.exit(main())
