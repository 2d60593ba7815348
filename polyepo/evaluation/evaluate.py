"""Evaluation of a policy on a fixed set of problems: sample, score, summarise.

  results = evaluate(params, model_config, env, problems, key, num_samples=64)

For each problem, `num_samples` responses are drawn at the given temperature in
jitted chunks of problems, problem i's from fold_in(key, i) alone, so the chunk
size changes only the speed (`default_problems_per_chunk`), not the samples
(to float rounding: on an accelerator, whose kernels depend on the batch size,
a few samples may change between chunk sizes; docs/running.md); rewards and
strategy labels come from the environment. The
summary (`summarize`) holds pass@k for every k = 1..num_samples (unbiased),
strategy shares, per-strategy accuracy (on the problems a strategy applies to),
distinct and distinct-correct strategies and strategy families, decoy mass,
branch point, majority-vote accuracy (from `env.answers`), response length, and
the per-problem values behind the means (`per_problem`, which
`experiments.report` bootstraps over problems).
"""

import functools
from typing import Any, Dict, List, NamedTuple, Optional

import jax
import jax.numpy as jnp
import numpy as np

from polyepo import checks
from polyepo.core import losses, metrics
from polyepo.env_api import DEGENERATE
from polyepo.policy import model, sampling


def validate(*, num_samples: int, temperature: float, num_problems: Optional[int] = None,
             problems_per_chunk: int = 0, prefix: str = "") -> None:
  """Raises ValueError naming the setting and its valid range, before compiling.

  Args:
    num_samples: S, samples per problem (>= 1).
    temperature: sampling temperature (>= 0; 0 is greedy decoding).
    num_problems: problems evaluated (>= 1), if known.
    problems_per_chunk: problems per compiled call (>= 1; 0: by platform).
    prefix: prepended to each name in a message, so that it names the config
      field the setting came from ("eval_" for `plan.RunSettings`, "report."
      for the pretraining config's report).
  """
  checks.at_least(f"{prefix}num_samples", num_samples, 1)
  checks.at_least(f"{prefix}temperature", temperature, 0)
  if num_problems is not None:
    checks.at_least(f"{prefix}num_problems", num_problems, 1)
  checks.at_least(f"{prefix}problems_per_chunk", problems_per_chunk, 0)


# Responses per compiled call when no chunk size is asked for.
CPU_CHUNK_ROWS = 32
ACCELERATOR_CHUNK_ROWS = 8192


def default_problems_per_chunk(num_samples: int) -> int:
  """Problems per compiled call when none is asked for (problems_per_chunk=0):
  as many as make CPU_CHUNK_ROWS (a CPU) or ACCELERATOR_CHUNK_ROWS (elsewhere)
  responses, and at least one.

  On a CPU one problem of 32 or 64 samples: the early-stopping decode loop of a
  call runs until its longest response ends, and problems' response lengths
  differ, so a call of one problem stops as soon as its own responses end. On
  a GPU 128 problems of 64 samples: a decoding step of thousands of rows takes
  little longer there than one of 64, so fewer, larger calls take fewer steps
  in all (timings: docs/running.md).
  """
  rows = CPU_CHUNK_ROWS if jax.default_backend() == "cpu" else ACCELERATOR_CHUNK_ROWS
  return max(1, rows // num_samples)


class Samples(NamedTuple):
  """Responses to P problems, S samples each (host numpy arrays)."""
  rewards: np.ndarray        # f32[P, S]
  labels: np.ndarray         # i32[P, S]
  lengths: np.ndarray        # i32[P, S]  response tokens incl. EOS
  branch_points: np.ndarray  # f32[P]     mean shared-prefix length per problem
  answers: np.ndarray        # i32[P, S]  final-answer ids (-1: none)
  kl_to_base: Optional[np.ndarray] = None  # f32[P, S] k3 KL to the base model, summed over
                                           # each response's tokens (None: not measured)
  applicable: Optional[np.ndarray] = None  # bool[P, K] which of the K strategies apply to
                                           # each problem (env.applicable; None: all)


def _take(tree, start, stop):
  return jax.tree.map(lambda x: x[start:stop], tree)


@functools.partial(jax.jit, static_argnums=(1, 2, 4, 7))
def _sample_chunk(params, model_config, env, problems, num_samples, key, first, temperature,
                  base_params):
  """Problems first, first + 1, ... of an evaluation, problem i sampled from fold_in(key, i)."""
  prompts = env.prompt_tokens(problems)
  num_problems = prompts.shape[0]
  keys = jax.vmap(lambda i: jax.random.fold_in(key, i))(first + jnp.arange(num_problems))
  rollout = sampling.sample(params, model_config, keys, prompts,
                            max_new_tokens=env.max_response_len, temperature=temperature,
                            samples_per_prompt=num_samples)
  problems_rep = jax.tree.map(lambda x: jnp.repeat(x, num_samples, axis=0), problems)
  reward, label = env.score(problems_rep, rollout.tokens)
  answers = env.answers(problems_rep, rollout.tokens)
  shape = (num_problems, num_samples)
  tokens = rollout.tokens.reshape(shape + rollout.tokens.shape[1:])
  mask = rollout.mask.reshape(shape + rollout.mask.shape[1:])
  branch = jax.vmap(metrics.branch_point)(tokens, mask)
  kl = None
  if base_params is not None:
    kl = _kl_to_base(params, base_params, model_config, prompts, rollout, temperature)
    kl = kl.reshape(shape)
  return (reward.reshape(shape), label.reshape(shape),
          jnp.sum(mask, -1).astype(jnp.int32), branch, answers.reshape(shape), kl,
          env.applicable(problems))


@functools.partial(jax.jit, static_argnums=(1, 2, 4, 7))
def _sample_chunk_seeds(params, model_config, env, problems, num_samples, keys, first,
                        temperature, base_params):
  """`_sample_chunk` for B seeds at once: params [B, ...], keys [B, 2]; outputs [B, ...]."""
  return jax.vmap(lambda p, k: _sample_chunk(p, model_config, env, problems, num_samples, k,
                                             first, temperature, base_params))(params, keys)


def _kl_to_base(params, base_params, model_config, prompts, rollout, temperature):
  """Per-sample sum over its tokens of the k3 estimate of KL(policy || base), f32[P * S].

  Unbiased for the per-sequence KL when the samples come from the policy itself
  (temperature 1); at another temperature it is measured on tempered samples.
  """
  samples = rollout.tokens.shape[0] // prompts.shape[0]
  logp = lambda p: model.sequence_logprobs(p, model_config, prompts, rollout.tokens,
                                           rollout.mask, samples_per_prompt=samples)
  policy_logp = rollout.logprobs if temperature == 1.0 else logp(params)
  return jnp.sum(jnp.where(rollout.mask, losses.kl_k3(policy_logp, logp(base_params)), 0.0),
                 axis=-1)


def sample_responses(params, model_config, env, problems, key, *, num_samples: int = 64,
                     temperature: float = 1.0, problems_per_chunk: int = 0,
                     base_params=None) -> Samples:
  """Samples and scores `num_samples` responses per problem, in jitted chunks.

  Args:
    params: policy parameters.
    model_config: its TransformerConfig.
    env: an environment (polyepo.env_api.Env).
    problems: pytree with leading axis P (e.g. a TFDS split).
    key: PRNG key; problem i's samples are drawn from fold_in(key, i) alone.
    num_samples: S, samples per problem.
    temperature: sampling temperature.
    problems_per_chunk: problems per compiled call (P is padded to a multiple
      by repeating the last problem; padded rows are dropped); 0: by platform
      (`default_problems_per_chunk`). The samples do not depend on it.
    base_params: if given, the base model's parameters: every response is also
      scored by it for the KL to the base model (`Samples.kl_to_base`).

  Returns:
    Samples with host arrays (`applicable` filled from env.applicable).
  """
  return Samples(*_sample_in_chunks(_sample_chunk, params, model_config, env, problems, key,
                                    num_samples, temperature, problems_per_chunk, base_params))


def sample_seeds(params, model_config, env, problems, keys, *, num_samples: int = 64,
                 temperature: float = 1.0, problems_per_chunk: int = 0,
                 base_params=None) -> List[Samples]:
  """`sample_responses` for B seeds in each compiled call (vmapped over seeds).

  Args:
    params: B seeds' policy parameters, each leaf with a leading axis B.
    keys: u32[B, 2], seed b's key.
    (the rest as in `sample_responses`.)

  Returns:
    B Samples; seed b's are `sample_responses(params[b], ..., keys[b])`'s to
    float tolerance: the same keys draw the same responses, while the seeds'
    decode loops stop together, when the longest response of any seed ends.
  """
  stacked = _sample_in_chunks(_sample_chunk_seeds, params, model_config, env, problems, keys,
                              num_samples, temperature, problems_per_chunk, base_params, axis=1)
  return [Samples(*(None if x is None else x[b] for x in stacked))
          for b in range(keys.shape[0])]


def _sample_in_chunks(sample_chunk, params, model_config, env, problems, key, num_samples,
                      temperature, problems_per_chunk, base_params, axis=0):
  """The 7 `Samples` fields as host arrays, sampled `problems_per_chunk` problems
  per call of `sample_chunk` and concatenated along the problem axis `axis`."""
  num_problems = jax.tree.leaves(problems)[0].shape[0]
  validate(num_samples=num_samples, temperature=temperature, num_problems=num_problems,
           problems_per_chunk=problems_per_chunk)
  chunk = min(problems_per_chunk or default_problems_per_chunk(num_samples), num_problems)
  padded = -(-num_problems // chunk) * chunk
  problems = jax.tree.map(
      lambda x: np.concatenate([np.asarray(x), np.repeat(np.asarray(x)[-1:], padded - len(x), 0)]),
      problems)
  outputs = []
  for start in range(0, padded, chunk):
    outputs.append(sample_chunk(params, model_config, env, _take(problems, start, start + chunk),
                                num_samples, key, start, temperature, base_params))
  take = lambda x: x[:num_problems] if axis == 0 else x[:, :num_problems]
  return tuple(None if outputs[0][j] is None else
               take(np.concatenate([np.asarray(o[j]) for o in outputs], axis=axis))
               for j in range(7))


def summarize(samples: Samples, strategy_names, strategy_families=None) -> Dict[str, Any]:
  """Summary statistics of sampled responses (plain Python numbers and lists).

  Args:
    samples: P problems x S samples.
    strategy_names: the K strategies' names (label k is strategy_names[k]).
    strategy_families: the family of each strategy, K strings parallel to
      strategy_names (env.strategy_families; two strategies may share one);
      None: every strategy is its own family.

  Keys:
    pass_at_k: {k: mean over problems of the unbiased pass@k}, k = 1..S.
    strategy_share: {name: share of all samples}, plus "DEGENERATE".
    strategy_accuracy: {name: mean reward of the samples with that label on the
      problems where the strategy applies (`samples.applicable`; all problems
      when it is None)}; None where the strategy was never produced on such a
      problem. "DEGENERATE": over all problems.
    distinct_strategies / distinct_correct_strategies: mean over problems of the
      number of distinct (correct) non-degenerate strategies among its S samples.
    distinct_correct_families: mean over problems of the number of distinct
      strategy families among its correct non-degenerate samples.
    strategies_used / correct_strategies_used: strategies produced (produced
      correctly) at least once over all problems.
    decoy_mass: share of all samples whose (non-degenerate) strategy has no
      correct sample for that problem.
    majority_vote: mean over problems of the reward of the most common answer
      among the S samples (ties averaged); None when no answer ids exist.
    kl_to_base: the k3 estimate of KL(policy || base) per response token
      (None unless the samples were scored by the base model).
    branch_point, mean_length, mean_reward.
    per_problem: the per-problem values behind the means, lists of P plain
      numbers: "num_correct" (correct samples), "distinct", "distinct_correct",
      "distinct_correct_families" (ints), "branch_point" and "majority_vote"
      (floats; "majority_vote" absent when no answer ids exist), and
      "strategy_counts": {name: samples with that label, per problem} and
      "correct_counts": {name: correct samples with that label, per problem},
      both with "DEGENERATE" (so the correct counts sum to "num_correct").
  """
  rewards, labels = samples.rewards, samples.labels
  num_problems, num_samples = rewards.shape
  names = list(strategy_names)
  applicable = samples.applicable
  if applicable is None:
    applicable = np.ones((num_problems, len(names)), bool)
  if applicable.shape != (num_problems, len(names)):
    raise ValueError(f"samples.applicable has shape {applicable.shape}, expected "
                     f"{(num_problems, len(names))} (problems, strategies).")
  families = names if strategy_families is None else list(strategy_families)
  if len(families) != len(names):
    raise ValueError(f"strategy_families has {len(families)} entries for {len(names)} "
                     f"strategies.")
  correct = (rewards > 0).sum(-1)
  pass_at = np.asarray(metrics.pass_at_k_curve(num_samples, jnp.asarray(correct),
                                               range(1, num_samples + 1))).mean(0)
  share, accuracy = {}, {}
  for s, name in enumerate(names + ["DEGENERATE"]):
    produced = labels == (DEGENERATE if name == "DEGENERATE" else s)   # [P, S]
    counted = produced if name == "DEGENERATE" else produced & applicable[:, s, None]
    share[name] = float(produced.mean())
    accuracy[name] = float(rewards[counted].mean()) if counted.any() else None
  distinct = np.asarray(jax.vmap(metrics.distinct_strategies)(jnp.asarray(labels)))
  distinct_correct = np.asarray(jax.vmap(metrics.distinct_correct_strategies)(
      jnp.asarray(rewards), jnp.asarray(labels)))
  distinct_correct_families = np.asarray(jax.vmap(metrics.distinct_correct_strategies)(
      jnp.asarray(rewards), metrics.family_labels(labels, families)))
  # decoys: per problem, strategies with samples but no correct sample
  one_hot = labels[..., None] == np.arange(len(names))            # [P, S, K]
  correct_by_strategy = (one_hot & (rewards[..., None] > 0)).any(1)  # [P, K]
  decoy = (one_hot & ~correct_by_strategy[:, None, :]).any(-1)     # [P, S]
  kl = None
  if samples.kl_to_base is not None:
    kl = float(samples.kl_to_base.sum() / max(samples.lengths.sum(), 1))
  per_problem = {
      "num_correct": correct.astype(int).tolist(),
      "distinct": distinct.astype(int).tolist(),
      "distinct_correct": distinct_correct.astype(int).tolist(),
      "distinct_correct_families": distinct_correct_families.astype(int).tolist(),
      "branch_point": samples.branch_points.astype(float).tolist(),
      "strategy_counts": {
          name: (labels == (DEGENERATE if name == "DEGENERATE" else s)).sum(-1).astype(int)
          .tolist() for s, name in enumerate(names + ["DEGENERATE"])},
      "correct_counts": {
          name: ((labels == (DEGENERATE if name == "DEGENERATE" else s)) & (rewards > 0))
          .sum(-1).astype(int).tolist() for s, name in enumerate(names + ["DEGENERATE"])},
  }
  majority = None
  if (samples.answers >= 0).any():
    by_problem = np.asarray(jax.vmap(metrics.majority_vote_accuracy)(
        jnp.asarray(rewards), jnp.asarray(samples.answers)), float)
    majority = float(np.mean(by_problem))
    per_problem["majority_vote"] = by_problem.tolist()
  return {
      "num_problems": int(num_problems),
      "num_samples": int(num_samples),
      "mean_reward": float(rewards.mean()),
      "pass_at_k": {int(k): float(v) for k, v in zip(range(1, num_samples + 1), pass_at)},
      "strategy_share": share,
      "strategy_accuracy": accuracy,
      "distinct_strategies": float(distinct.mean()),
      "distinct_correct_strategies": float(distinct_correct.mean()),
      "distinct_correct_families": float(distinct_correct_families.mean()),
      "strategies_used": int(sum(share[n] > 0 for n in names)),
      "correct_strategies_used": int(correct_by_strategy.any(0).sum()),
      "decoy_mass": float(decoy.mean()),
      "majority_vote": majority,
      "branch_point": float(samples.branch_points.mean()),
      "mean_length": float(samples.lengths.mean()),
      "kl_to_base": kl,
      "per_problem": per_problem,
  }


def mean_over_seeds(summaries):
  """The "mean" of an evaluation's split: the numeric leaves of per-seed
  summaries (`summarize`) averaged over seeds (None-aware); an integer that
  every seed shares (a count such as num_samples) stays an integer. The
  per-problem values ("per_problem") are left out: the per-seed summaries keep
  them, and a mean over seeds of per-problem values would mean nothing to read."""
  first = summaries[0]
  if isinstance(first, dict):
    return {k: mean_over_seeds([s[k] for s in summaries]) for k in first if k != "per_problem"}
  values = [s for s in summaries if s is not None]
  if not values:
    return None
  if all(isinstance(v, int) and v == values[0] for v in values):
    return values[0]
  return float(np.mean(values))


def evaluate(params, model_config, env, problems, key, *, num_samples: int = 64,
             temperature: float = 1.0, problems_per_chunk: int = 0,
             base_params=None) -> Dict[str, Any]:
  """`summarize(sample_responses(...))` with the env's strategy names and families."""
  samples = sample_responses(params, model_config, env, problems, key, num_samples=num_samples,
                             temperature=temperature, problems_per_chunk=problems_per_chunk,
                             base_params=base_params)
  return summarize(samples, env.strategy_names, env.strategy_families)


def format_report(summary: Dict[str, Any], title: str = "") -> str:
  """A compact human-readable report of a summary."""
  p = summary["pass_at_k"]
  ks = [k for k in (1, 2, 4, 8, 16, 32, 64) if k in p]
  lines = [title] if title else []
  lines.append("pass@k   " + "  ".join(f"@{k}={p[k]:.3f}" for k in ks))
  families = summary.get("distinct_correct_families")
  lines.append(f"distinct strategies / problem {summary['distinct_strategies']:.2f}, "
               f"correct {summary['distinct_correct_strategies']:.2f}"
               + ("" if families is None else f" (families {families:.2f})") + "; used overall "
               f"{summary['strategies_used']}, correct {summary['correct_strategies_used']}; "
               f"decoy mass {summary['decoy_mass']:.3f}; branch point "
               f"{summary['branch_point']:.1f}; mean length {summary['mean_length']:.1f}")
  if summary.get("kl_to_base") is not None:
    lines.append(f"KL to the base model {summary['kl_to_base']:.4f} per token")
  if summary.get("majority_vote") is not None:
    lines.append(f"majority vote over {summary['num_samples']} samples: "
                 f"{summary['majority_vote']:.3f}")
  forced_acc = summary.get("forced_accuracy") or {}
  cell = lambda x: f"{'–':>10}" if x is None else f"{x:>10.3f}"
  lines.append(f"{'strategy':<24}{'share':>8}{'accuracy':>10}"
               + (f"{'forced':>10}" if forced_acc else ""))
  for name, share in summary["strategy_share"].items():
    row = f"{name:<24}{share:>8.4f}{cell(summary['strategy_accuracy'][name])}"
    if forced_acc and name in forced_acc:
      row += cell(forced_acc[name])
    lines.append(row.rstrip())
  return "\n".join(lines)
