"""Where the real RL train step spends its time, phase by phase.

  python -m bench.profile_step [--domain multiplication] [--repeats 5] [--ops 12]
                               [--matmul-dtype bfloat16]

The step is the main job's (configs/poly_epo.py, default size: 16 prompts x 16
samples, up to 64 response tokens, the exact Poly-EPO advantage with sets of 4,
2 minibatches, AdamW) on the domain's default model, from a random
initialisation, which never emits EOS: every rollout runs all T decode steps,
the worst case of the real step. Each phase is jitted alone at the step's shapes
and timed (median after a warm-up):

  prompts      sample B problems, render their prompts
  prefill      one forward pass over the B prompts, the cache copied to N samples
  decode       T cached one-token steps of the B x N rows (prefill subtracted)
  scoring      rewards and strategy labels of the B x N responses
  advantages   the per-prompt advantages
  ref logp     teacher-forced log-probs under the base model (only when
               kl_coef > 0: the KL term; not part of the default step)
  forward      the loss of every minibatch (teacher-forced forward), over its
               micro-batches (`TrainConfig.microbatch_rows`) as the step does
  backward     its gradient (value_and_grad minus forward)
  optimiser    clipping + AdamW update of every minibatch

and the whole step (one compiled `run_chunk` of one step) next to their sum.
The decode's cost per step is split into a fixed part (the same loop decoding
one row) and a per-row part (the rest, over the other B x N - 1 rows).

With --ops K, the forward and backward pass of one micro-batch is also
traced with the JAX profiler and its time split by XLA operation: matmuls (dots,
and the fusions built around one; "matmul bf16" where both operands are
bfloat16, so that `--matmul-dtype bfloat16` shows which products XLA runs in
bfloat16 and which it upcasts to float32), data movement (copies, transposes,
slices, pads, broadcasts) and the rest (element-wise work and reductions), then
its K slowest operations with their output shapes (`bench.timing.xla_op_seconds`).
"""

import argparse
import collections
import dataclasses
import functools

import jax
import jax.numpy as jnp

import envs
from bench.timing import median_seconds, xla_op_seconds
from configs import poly_epo
from experiments import build
from polyepo import accumulation
from polyepo.core import losses
from polyepo.policy import model, sampling
from polyepo.pretraining import pretrain
from polyepo.rl import estimators, train


def phases(domain: str, repeats: int, ops: bool = False, matmul_dtype: str = "float32"):
  """{phase: seconds}, and a dict describing the step (with ops, also "update":
  one minibatch's update timed whole and by XLA operation); the domain's default
  model with `matmul_dtype` (model.MATMUL_DTYPES)."""
  config = poly_epo.get_config(f"domain={domain}")
  settings = build.rl_settings(config)
  train_config = dataclasses.replace(settings.train, steps_per_chunk=1)
  algorithm = settings.algorithm
  advantages = functools.partial(estimators.batch_advantages, algorithm.group_advantage,
                                 algorithm.standardises_batch)
  env, env_params = envs.make(domain)
  model_config = dataclasses.replace(pretrain.model_config_for(env), matmul_dtype=matmul_dtype)
  params = model.init_params(jax.random.key(0), model_config)
  B, N, T = train_config.prompts_per_step, train_config.samples_per_prompt, env.max_response_len
  M = train_config.num_minibatches
  key = jax.random.key(1)
  time = lambda fn, *args: median_seconds(lambda: fn(*args), repeats)

  problems = env.sample_problems(key, env_params, B)
  distinct = env.prompt_tokens(problems)
  repeated = jax.tree.map(lambda x: jnp.repeat(x, N, axis=0), problems)

  def rollout(prompts, steps, samples):
    return sampling.sample(params, model_config, key, prompts, max_new_tokens=steps,
                           samples_per_prompt=samples, early_stop=False)

  rollout_fn = jax.jit(rollout, static_argnums=(1, 2))
  out = rollout_fn(distinct, T, N)
  reward, label = jax.jit(env.score)(repeated, out.tokens)
  adv = jax.jit(advantages)(
      reward.reshape(B, N), label.reshape(B, N), jax.random.split(key, B))
  adv = adv.reshape(-1)
  logprobs = jax.jit(lambda p, *batch: model.sequence_logprobs(p, model_config, *batch,
                                                               samples_per_prompt=N))
  optimizer = train.make_optimizer(train_config, algorithm.critic)
  opt_state = optimizer.init(params)
  groups = B // M
  by_group = lambda x: x[:groups * N].reshape((groups, N) + x.shape[1:])
  mb = ({"prompts": distinct[:groups], "tokens": by_group(out.tokens),
         "mask": by_group(out.mask), "old_logp": by_group(out.logprobs), "adv": by_group(adv)},)
  loss_config = losses.PGLossConfig(train_config.eps_low, train_config.eps_high,
                                    train_config.aggregation)
  num_micro = groups // accumulation.microbatch_groups(train_config.microbatch_rows, groups, N)

  def micro_loss(p, g, totals):
    rows = lambda x: x.reshape((-1,) + x.shape[2:])
    logp = model.sequence_logprobs(p, model_config, g["prompts"], rows(g["tokens"]),
                                   rows(g["mask"]), samples_per_prompt=N)
    return losses.clipped_pg_loss(logp, rows(g["old_logp"]), rows(g["adv"]), rows(g["mask"]),
                                  loss_config, totals=totals)[0]

  def minibatch(fn):
    """fn of each micro-batch, summed over the minibatch as polyepo.train does."""
    def over_minibatch(p, minibatch):
      totals = losses.batch_totals(minibatch["mask"].reshape(-1, T))
      return accumulation.accumulate(lambda p, g: fn(p, g, totals), p, minibatch, num_micro)
    return over_minibatch

  loss_fn = minibatch(micro_loss)
  value_and_grad_fn = minibatch(jax.value_and_grad(micro_loss))

  grads = value_and_grad_fn(params, *mb)[1]

  def apply(params, opt_state, grads):
    updates, opt_state = optimizer.update(grads, opt_state, params)
    return jax.tree.map(jnp.add, params, updates), opt_state

  init, run_chunk = train.make_train(train_config, algorithm, model_config, env, env_params,
                                     num_seeds=1)
  state = init(params, jnp.zeros((1, 2), jnp.uint32))

  one_row = distinct[:1]
  prefill = time(rollout_fn, distinct, 1, N)
  full = time(rollout_fn, distinct, T, N)
  row_prefill = time(rollout_fn, one_row, 1, 1)
  row_full = time(rollout_fn, one_row, T, 1)
  fixed = (row_full - row_prefill) / (T - 1)
  per_row = ((full - prefill) / (T - 1) - fixed) / (B * N - 1)
  forward = time(jax.jit(loss_fn), params, *mb)
  forward_backward = time(jax.jit(value_and_grad_fn), params, *mb)
  seconds = {
      "prompts": time(jax.jit(lambda k: env.prompt_tokens(env.sample_problems(k, env_params, B))),
                      key),
      "prefill": prefill,
      "decode": full - prefill,
      "scoring": time(jax.jit(env.score), repeated, out.tokens),
      "advantages": time(jax.jit(advantages), reward.reshape(B, N), label.reshape(B, N),
                         jax.random.split(key, B)),
      "ref logp": (time(logprobs, params, distinct, out.tokens, out.mask)
                   if train_config.kl_coef else 0.0),
      "forward": M * forward,
      "backward": M * (forward_backward - forward),
      "optimiser": M * time(jax.jit(apply), params, opt_state, grads),
  }
  whole = time(run_chunk, state, params)
  info = dict(B=B, N=N, T=T, P=distinct.shape[1], M=M, whole=whole,
              fixed_ms=1e3 * fixed, per_row_us=1e6 * per_row)
  if ops:
    # One micro-batch's forward and backward, compiled alone: the profiler does
    # not see the operations inside the step's loop over micro-batches.
    micro = jax.tree.map(lambda x: x[::num_micro], mb[0])
    totals = losses.batch_totals(mb[0]["mask"].reshape(-1, T))
    one = jax.jit(lambda p, g: jax.value_and_grad(micro_loss)(p, g, totals))
    info["update"] = (time(one, params, micro), xla_op_seconds(one, (params, micro), repeats),
                      micro["mask"].shape[0] * N)
  return seconds, info


def main():
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--domain", default="multiplication")
  parser.add_argument("--repeats", type=int, default=5)
  parser.add_argument("--ops", type=int, default=0, metavar="K",
                      help="also split one minibatch's update by XLA operation and list "
                           "its K slowest operations")
  parser.add_argument("--matmul-dtype", default="float32", choices=model.MATMUL_DTYPES,
                      help="the model's matmul_dtype")
  args = parser.parse_args()
  seconds, info = phases(args.domain, args.repeats, ops=bool(args.ops),
                         matmul_dtype=args.matmul_dtype)
  total = sum(seconds.values())
  print(f"{args.domain}: {info['B']} prompts x {info['N']} samples, prompt {info['P']} + "
        f"response {info['T']} tokens, {info['M']} minibatches, {args.matmul_dtype} matmuls")
  print(f"{'phase':<14}{'ms':>9}{'share':>8}")
  for name, s in seconds.items():
    print(f"{name:<14}{1e3 * s:>9.1f}{s / total:>8.0%}")
  print(f"{'sum':<14}{1e3 * total:>9.1f}")
  print(f"{'whole step':<14}{1e3 * info['whole']:>9.1f}")
  print(f"decode step: {info['fixed_ms']:.3f} ms fixed + {info['per_row_us']:.2f} us per row "
        f"({info['B'] * info['N']} rows: "
        f"{info['fixed_ms'] * info['T']:.0f} ms fixed of {1e3 * seconds['decode']:.0f} ms)")
  if args.ops:
    print_ops(*info["update"], args.ops)


def print_ops(wall, ops, rows, top):
  """The op-level split of one micro-batch's forward and backward (see the module doc)."""
  total = sum(op.seconds for op in ops)
  print(f"\nforward and backward of one micro-batch ({rows} responses): {1e3 * wall:.1f} ms "
        f"wall, {1e3 * total:.1f} ms in XLA operations (they can overlap on the cores; the "
        f"wall time also holds the gaps)")
  seconds, count = collections.Counter(), collections.Counter()
  for op in ops:
    seconds[op.kind] += op.seconds
    count[op.kind] += 1
  print(f"{'class':<14}{'ms':>9}{'share':>8}{'ops':>6}")
  for kind, s in seconds.most_common():
    print(f"{kind:<14}{1e3 * s:>9.1f}{s / total:>8.0%}{count[kind]:>6}")
  print(f"{'op':<34}{'ms':>8}  {'class':<13}output")
  for op in sorted(ops, key=lambda op: -op.seconds)[:top]:
    print(f"{op.name:<34}{1e3 * op.seconds:>8.2f}  {op.kind:<13}{op.shape}")


if __name__ == "__main__":
  main()
