"""RL train-step throughput: ours next to TRL's, phase split, MFU, seeds.

  python -m bench.train_step [--repeats 5] [--seeds 4] [--no-trl] [--no-seeds]
  python -m bench.train_step --poly-ppo [--prompts 16 --samples 16 --tiny]

1. A preset other libraries can run identically: a 2-layer, width-128, 4-head
   transformer (standard multi-head attention), 32-token vocabulary, 16 prompts x
   16 samples x 48 response tokens (forced to full length), one update epoch, Adam.
   The step is timed whole (one jitted program) and split into its phases, each
   jitted alone: rollout, advantage (Poly-EPO's exact polychromic advantage), update;
   once with float32 matmuls and once with `matmul_dtype="bfloat16"` (bfloat16
   operands, float32 accumulation; AMX on recent Intel CPUs). Then, in the same
   run, Hugging Face TRL's GRPOTrainer on the same preset (bench/trl_preset.py,
   in its own virtual environment, created on first use) and the ratio of its
   step time to ours.
2. The real train step (polyepo.train, multiplication domain, default model): S
   seeds vmapped in one program, mapped one at a time in one program
   (`seed_batch_size=1`), S single-seed programs run one after another, and one
   seed with S times the prompts: the most any batching of the seeds can gain,
   since it runs the same FLOPs with shared weights. Timed in turn, round after
   round.

3. `--poly-ppo` (alone): Poly-PPO's step split into root rollout, vine rollout
   (both returning the features the critic reads), advantages (scoring, step
   boundaries, the values, GAE and set advantages) and update (the whole step
   minus those), and its whole step next to Poly-EPO's and PPO's at equal root
   batch (multiplication, default model; `--tiny` a 1-layer width-32 model for a
   quick check).

All numbers are medians after a warm-up, measured side by side in this process;
FLOP/s are divided by a 2048^3 matmul of the same precision measured here too (CPU
"MFU"; the bfloat16 one includes casting its float32 operands, as the model does).
The FLOPs are those the step runs: each prompt once for its 16 samples.
"""

import argparse
import dataclasses
import json
import os
import subprocess
import sys

import jax
import jax.numpy as jnp
import optax

import envs
from bench.model import matmul_peak, sampling_flops
from bench.timing import interleaved_median_seconds, median_seconds
from experiments.machine import cpu_name
from polyepo import (accumulation, advantages, algorithms, losses, model, parts, poly_ppo,
                     pretrain, sampling, train, value_head, vines)

PROMPTS, SAMPLES, RESPONSE, PROMPT_LEN = 16, 16, 48, 16
PRESET = model.TransformerConfig(vocab_size=32, width=128, num_layers=2, num_heads=4,
                                 num_kv_heads=4, max_len=PROMPT_LEN + RESPONSE, pad_id=0,
                                 eos_id=1)


def preset_phases(repeats, matmul_dtype="float32"):
  config, batch = dataclasses.replace(PRESET, matmul_dtype=matmul_dtype), PROMPTS * SAMPLES
  params = model.init_params(jax.random.key(0), config)
  optimizer = optax.adam(1e-4)
  opt_state = optimizer.init(params)
  distinct = jax.random.randint(jax.random.key(1), (PROMPTS, PROMPT_LEN), 2, config.vocab_size)

  def rollout(params, key):
    return sampling.sample(params, config, key, distinct, max_new_tokens=RESPONSE,
                           samples_per_prompt=SAMPLES, early_stop=False)

  def advantage(key, tokens):
    rewards = jax.random.bernoulli(key, 0.4, (PROMPTS, SAMPLES)).astype(jnp.float32)
    labels = (tokens[:, 0] % 8).reshape(PROMPTS, SAMPLES)  # any i32 labels
    return jax.vmap(lambda r, l: advantages.polychromic_advantage(r, l, 4))(rewards, labels)

  def update(params, opt_state, out, adv):
    # As polyepo.train does: the gradient accumulated over micro-batches of
    # whole groups (TrainConfig.microbatch_rows), each loss divided by the
    # whole batch's totals, so the sum is the batch's loss.
    totals = losses.batch_totals(out.mask)
    groups = {"prompts": distinct, "adv": adv}
    groups.update((name, x.reshape(PROMPTS, SAMPLES, -1)) for name, x in
                  (("tokens", out.tokens), ("mask", out.mask), ("old_logp", out.logprobs)))

    def loss_fn(p, g):
      rows = lambda x: x.reshape((-1,) + x.shape[2:])
      logp = model.sequence_logprobs(p, config, g["prompts"], rows(g["tokens"]),
                                     rows(g["mask"]), samples_per_prompt=SAMPLES)
      return losses.clipped_pg_loss(logp, rows(g["old_logp"]), rows(g["adv"]), rows(g["mask"]),
                                    totals=totals)[0]

    micro = accumulation.microbatch_groups(train.TrainConfig.microbatch_rows, PROMPTS, SAMPLES)
    grads = accumulation.accumulate(jax.grad(loss_fn), params, groups, PROMPTS // micro)
    updates, opt_state = optimizer.update(grads, opt_state, params)
    return optax.apply_updates(params, updates), opt_state

  def step(params, opt_state, key):
    rollout_key, reward_key = jax.random.split(key)
    out = rollout(params, rollout_key)
    return update(params, opt_state, out, advantage(reward_key, out.tokens))

  key = jax.random.key(2)
  out = jax.jit(rollout)(params, key)
  adv = jax.jit(advantage)(key, out.tokens)
  times = {
      "rollout": median_seconds(lambda: jax.jit(rollout)(params, key), repeats),
      "advantage": median_seconds(lambda: jax.jit(advantage)(key, out.tokens), repeats),
      "update": median_seconds(lambda: jax.jit(update)(params, opt_state, out, adv), repeats),
      "whole step": median_seconds(lambda: jax.jit(step)(params, opt_state, key), repeats),
  }
  # The update runs the rollout's tokens again (each prompt once for its samples),
  # forward and backward: 3 x the rollout's FLOPs.
  flops = {"rollout": sampling_flops(config, batch, PROMPT_LEN, RESPONSE, SAMPLES)}
  flops["update"] = 3 * flops["rollout"]
  flops["whole step"] = flops["rollout"] + flops["update"]
  return times, flops


SEED_BATCHES = ((2, 4), (4, 4), (8, 8), (16, 16), (8, 32))  # (prompts, samples) per seed


def seeds_ratio(num_seeds, repeats, prompts, samples):
  """Seconds per step of S seeds trained four ways, timed in turn.

  vmapped: one program, all S seeds vmapped (seed_batch_size=S); mapped: one
  program, seeds one at a time (seed_batch_size=1, `lax.map`); sequential: S
  single-seed programs run one after another; combined: one seed with S times
  the prompts. The last is the ceiling of any seed batching: S seeds in one
  program do the same work as one seed with S times the prompts, except that
  their matmuls cannot share weights, so batched seeds are at most
  sequential / combined times faster than sequential runs.
  """
  env, env_params = envs.make("multiplication")
  config = pretrain.model_config_for(env)
  base = model.init_params(jax.random.key(0), config)

  def make(num_prompts, seeds, seed_batch_size=None):
    train_config = train.TrainConfig(prompts_per_step=num_prompts, samples_per_prompt=samples,
                                     num_minibatches=1, steps_per_chunk=1, num_steps=1)
    return train.make_train(train_config, algorithms.set_rl(set_size=2), config, env,
                            env_params, num_seeds=seeds,
                            seed_batch_size=seed_batch_size or seeds)

  keys = jnp.arange(2 * num_seeds, dtype=jnp.uint32).reshape(num_seeds, 2)
  (init_s, run_s), (_, run_m) = make(prompts, num_seeds), make(prompts, num_seeds, 1)
  (init_1, run_1), (init_c, run_c) = make(prompts, 1), make(prompts * num_seeds, 1)
  states = init_s(base, keys)
  singles = [init_1(base, keys[i:i + 1]) for i in range(num_seeds)]
  combined = init_c(base, keys[:1])
  return interleaved_median_seconds({
      "vmapped": lambda: run_s(states, base),
      "mapped": lambda: run_m(states, base),
      "sequential": lambda: [run_1(s, base) for s in singles],
      "combined": lambda: run_c(combined, base)}, repeats)


def poly_ppo_phases(repeats, prompts, samples, tiny=False):
  """Seconds of Poly-PPO's phases and of whole Poly-PPO / PPO / Poly-EPO steps."""
  env, env_params = envs.make("multiplication")
  overrides = dict(width=32, num_layers=1, num_heads=2) if tiny else {}
  config = pretrain.model_config_for(env, **overrides)
  base = model.init_params(jax.random.key(0), config)
  tc = train.TrainConfig(prompts_per_step=prompts, samples_per_prompt=samples,
                         num_minibatches=1, steps_per_chunk=1, num_steps=1)
  set_size = min(4, samples - 1)
  vine_settings = parts.Vines(samples=max(parts.Vines.samples, set_size + 1))
  B, N, T = prompts, samples, env.max_response_len
  K, N_v = vine_settings.num_states, vine_settings.samples
  problems = env.sample_problems(jax.random.key(1), env_params, B)
  prompt_tokens = env.prompt_tokens(problems)

  @jax.jit
  def root_rollout(key):
    return sampling.sample(base, config, key, prompt_tokens, max_new_tokens=T,
                           samples_per_prompt=N, return_features=True)

  roots = root_rollout(jax.random.key(2))
  bounds = env.step_boundaries(roots.tokens).reshape(B, N, T)

  @jax.jit
  def vine_rollout(key):
    states = jax.vmap(lambda k, b: vines.choose_states(k, b, K))(jax.random.split(key, B), bounds)
    return vines.sample_vines(base, config, key, prompt_tokens, roots.tokens.reshape(B, N, T),
                              states, samples=N_v, return_features=True)

  out = vine_rollout(jax.random.key(3))
  M = N + K * N_v
  head = value_head.init(jax.random.key(5), config.width)

  @jax.jit
  def advantage_phase(key):
    flat = lambda x: x.reshape(B, K * N_v, T)
    tokens = jnp.concatenate([roots.tokens.reshape(B, N, T), flat(out.tokens)], 1)
    mask = jnp.concatenate([roots.mask.reshape(B, N, T), flat(out.mask)], 1)
    loss_mask = jnp.concatenate([roots.mask.reshape(B, N, T), flat(out.loss_mask)], 1)
    start = jnp.concatenate([jnp.zeros((B, N), jnp.int32), out.start.reshape(B, -1)], 1)
    repeated = jax.tree.map(lambda x: jnp.repeat(x, M, axis=0), problems)
    reward, label = env.score(repeated, tokens.reshape(-1, T))
    boundaries = env.step_boundaries(tokens.reshape(-1, T)).reshape(B, M, T)
    features = jnp.concatenate([roots.features.reshape(B, N, T, -1),
                                out.features.reshape(B, K * N_v, T, -1)], 1)
    values = value_head.apply(head, features)   # the sampler's features feed the critic
    groups = jax.vmap(lambda *a: poly_ppo.group_advantages(
        *a, num_roots=N, vine_samples=N_v, objective="polychromic", set_size=set_size,
        num_subsets=None, window=vine_settings.window, gamma=1.0, lam=0.95, normalize=True))(
            reward.reshape(B, M), label.reshape(B, M), values, loss_mask, boundaries, start,
            jax.random.split(key, B))
    return poly_ppo.token_advantages(groups, loss_mask, True)

  times = {"root rollout": median_seconds(lambda: root_rollout(jax.random.key(2)), repeats),
           "vine rollout": median_seconds(lambda: vine_rollout(jax.random.key(3)), repeats),
           "advantages": median_seconds(lambda: advantage_phase(jax.random.key(4)), repeats)}
  steps = {}
  for name, algorithm in (("poly_ppo", algorithms.poly_ppo(set_size=set_size, vines=vine_settings)),
                          ("ppo", algorithms.ppo()),
                          ("poly_epo", algorithms.set_rl(set_size=set_size))):
    init, run = train.make_train(tc, algorithm, config, env, env_params, num_seeds=1)
    state = init(base, jnp.zeros((1, 2), jnp.uint32))
    jax.block_until_ready(run(state, base))
    steps[name] = median_seconds(lambda: run(state, base), repeats)
  times["update"] = max(steps["poly_ppo"] - sum(times.values()), 0.0)
  return times, steps, dict(states=K, vines=N_v, sequences=M)


def trl_seconds_per_step():
  """TRL's GRPOTrainer on the preset (bench/trl_preset.py, its own venv): its JSON result."""
  script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "trl_preset.py")
  done = subprocess.run([sys.executable, script, "--json"], capture_output=True, text=True)
  if done.returncode:
    raise RuntimeError(f"bench/trl_preset.py failed:\n{done.stdout}{done.stderr}")
  return json.loads(done.stdout.strip().splitlines()[-1])


def main():
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--repeats", type=int, default=5)
  parser.add_argument("--seeds", type=int, default=4)
  parser.add_argument("--no-trl", dest="trl", action="store_false",
                      help="skip TRL's GRPOTrainer (which needs its own venv)")
  parser.add_argument("--no-seeds", dest="seeds_table", action="store_false",
                      help="skip the seeds table")
  parser.add_argument("--poly-ppo", dest="poly_ppo", action="store_true",
                      help="only Poly-PPO's phase split and its cost relative to Poly-EPO")
  parser.add_argument("--prompts", type=int, default=16, help="--poly-ppo: root prompts B")
  parser.add_argument("--samples", type=int, default=16, help="--poly-ppo: root samples N")
  parser.add_argument("--tiny", action="store_true", help="--poly-ppo: a 1-layer width-32 model")
  args = parser.parse_args()
  print(f"CPU: {cpu_name()}")
  if args.poly_ppo:
    times, steps, shape = poly_ppo_phases(args.repeats, args.prompts, args.samples, args.tiny)
    print(f"\nPoly-PPO step, multiplication, {args.prompts} prompts x {args.samples} roots, "
          f"{shape['states']} states x {shape['vines']} vines per prompt "
          f"({shape['sequences']} responses per prompt):")
    for name, seconds in times.items():
      print(f"  {name:<13}{seconds:>9.4f} s{seconds / steps['poly_ppo']:>7.0%}")
    for name, seconds in steps.items():
      print(f"  whole step {name:<9}{seconds:>8.4f} s  "
            f"{seconds / steps['poly_epo']:.2f}x Poly-EPO's")
    return
  peaks = {dtype: matmul_peak(matmul_dtype=dtype) for dtype in ("float32", "bfloat16")}
  print("matmul peak (2048^3): " + ", ".join(f"{dtype} {peak / 1e9:.1f} GFLOP/s"
                                            for dtype, peak in peaks.items()))
  tokens = PROMPTS * SAMPLES * RESPONSE
  print(f"\npreset: 2 layers x 128, 4 heads, vocab 32, {PROMPTS} prompts x {SAMPLES} samples "
        f"x {RESPONSE} tokens (full length), 1 epoch, Adam")
  whole = {}
  for matmul_dtype in ("float32", "bfloat16"):
    times, flops = preset_phases(args.repeats, matmul_dtype)
    whole[matmul_dtype] = times["whole step"]
    peak = peaks[matmul_dtype]
    print(f"\nmatmul_dtype={matmul_dtype}")
    print(f"{'phase':<12}{'seconds':>10}{'share':>8}{'tokens/s':>11}{'GFLOP/s':>10}{'MFU':>7}")
    phases = times["rollout"] + times["advantage"] + times["update"]
    for name, seconds in times.items():
      share = f"{seconds / phases:>8.0%}" if name != "whole step" else " " * 8
      row = f"{name:<12}{seconds:>10.4f}{share}{tokens / seconds:>11,.0f}"
      if name in flops:
        row += f"{flops[name] / seconds / 1e9:>10.1f}{flops[name] / seconds / peak:>7.0%}"
      print(row)
  if args.trl:
    trl = trl_seconds_per_step()
    print(f"\nHugging Face TRL {trl['trl']} GRPOTrainer (torch {trl['torch']}, "
          f"{trl['threads']} threads), same preset, float32: {trl['seconds_per_step']:.3f} s/step "
          f"(generation {trl['generation_seconds']:.3f} s); median of steps "
          + " ".join(f"{t:.3f}" for t in trl["steps"][1:]))
    for matmul_dtype, seconds in whole.items():
      print(f"  ours, {matmul_dtype:<8}: {seconds:.3f} s/step, "
            f"{trl['seconds_per_step'] / seconds:.2f}x TRL's speed")
  if not args.seeds_table:
    return
  print(f"\ntrain step (multiplication, default model), seconds per step of {args.seeds} seeds:"
        f"\n  vmapped / mapped (seed_batch_size=S / 1) in one program, sequential single-seed"
        f"\n  programs, and one seed with {args.seeds}x the prompts (combined); speed-ups over"
        f"\n  sequential, the last the ceiling of any seed batching.")
  print(f"{'per seed':>12}{'vmapped':>9}{'mapped':>8}{'sequential':>12}{'combined':>10}"
        f"{'vmapped':>9}{'mapped':>8}{'ceiling':>9}")
  for prompts, samples in SEED_BATCHES:
    t = seeds_ratio(args.seeds, args.repeats, prompts, samples)
    speedup = lambda name: t["sequential"] / t[name]
    print(f"{f'{prompts} x {samples}':>12}{t['vmapped']:>9.3f}{t['mapped']:>8.3f}"
          f"{t['sequential']:>12.3f}{t['combined']:>10.3f}{speedup('vmapped'):>8.2f}x"
          f"{speedup('mapped'):>7.2f}x{speedup('combined'):>8.2f}x")


if __name__ == "__main__":
  main()
