"""Throughput of the default policy: sampling and training, with CPU "MFU".

  python -m bench.model [--batch=256 --prompt_len=16 --response_len=64]

Prints the median over repeats (after a warm-up call) of
  * sampled tokens/s: `polyepo.sampling.sample`, fixed length (no early stop),
    temperature 1, prompts prefilled in one pass;
  * training tokens/s: one jitted Adam step of next-token cross-entropy on the
    response tokens (`polyepo.model.sequence_logprobs`), its gradient accumulated
    over micro-batches of --microbatch_rows sequences as the RL update does, and
    the same step on the whole batch at once;
and each as model FLOP/s over the peak measured in this process (median time
of a 2048^3 float32 matmul), i.e. a CPU "MFU".

FLOP counts (N = matmul parameters: QKV, attention output, MLP and head per
token; embeddings and norms excluded; d = width, L = layers, a multiply-add is
2 FLOPs):
  forward of one token attending to c keys:  2 N + 4 L d c   (QK^T and PV)
  sampling: prefill of B x P prompt tokens (c = causal context) plus B x T
    decoded tokens, token t attending to the P + t + 1 keys it may see;
  training on B sequences of S = P + T tokens:  3 x (2 N S + 4 L d S^2)
    = 6 N S + 12 L d S^2 per sequence (backward = 2 x forward; attention
    counted over the full S x S score matrix that is computed).
Other processes on the machine distort all of this; the load average is
printed with the results.
"""

import argparse
import functools
import os

import jax
import jax.numpy as jnp
import optax

from bench.timing import median_seconds
from polyepo.policy import bf16, model
from polyepo import accumulation
from polyepo.policy import sampling


def matmul_peak(size=2048, repeats=10, matmul_dtype="float32"):
  """Median FLOP/s of a size^3 matmul: float32, or as `bf16.bf16_matmul` does it."""
  a = jax.random.normal(jax.random.key(0), (size, size), jnp.float32)
  b = jax.random.normal(jax.random.key(1), (size, size), jnp.float32)
  matmul = jax.jit(bf16.bf16_matmul if matmul_dtype == "bfloat16" else jnp.matmul)
  return 2 * size**3 / median_seconds(lambda: matmul(a, b), repeats)


def matmul_params(config: model.TransformerConfig) -> int:
  """N: parameters that take part in a matmul per token."""
  d, dh = config.width, config.head_dim
  qkv = d * (config.num_heads + 2 * config.num_kv_heads) * dh
  out = config.num_heads * dh * d
  mlp = 2 * d * config.mlp_ratio * d
  return config.num_layers * (qkv + out + mlp) + d * config.vocab_size


def sampling_flops(config, batch, prompt_len, steps, samples_per_prompt=1):
  """FLOPs of `batch` rollouts; each prompt prefilled once for its samples."""
  n, ld = matmul_params(config), config.num_layers * config.width
  prefill = sum(2 * n + 4 * ld * (c + 1) for c in range(prompt_len))
  decode = sum(2 * n + 4 * ld * (prompt_len + t + 1) for t in range(steps))
  return batch // samples_per_prompt * prefill + batch * decode


def training_flops(config, batch, seq_len):
  n, ld = matmul_params(config), config.num_layers * config.width
  return batch * (6 * n * seq_len + 12 * ld * seq_len**2)


def _prompts(config, key, batch, prompt_len):
  """Left-padded random prompts of 60-100% of prompt_len real tokens."""
  k1, k2 = jax.random.split(key)
  tokens = jax.random.randint(k1, (batch, prompt_len), 2, config.vocab_size)
  pads = jax.random.randint(k2, (batch, 1), 0, prompt_len * 2 // 5 + 1)
  return jnp.where(jnp.arange(prompt_len) < pads, config.pad_id, tokens)


def bench_sampling(config, params, batch, prompt_len, steps, repeats):
  sampler = sampling.make_sampler(config, steps, early_stop=False)
  prompts = _prompts(config, jax.random.key(1), batch, prompt_len)
  keys = iter(jax.random.split(jax.random.key(2), repeats + 1))
  seconds = median_seconds(lambda: sampler(params, next(keys), prompts), repeats)
  return batch * steps / seconds, sampling_flops(
      config, batch, prompt_len, steps) / seconds


def bench_training(config, params, batch, prompt_len, steps, repeats, microbatch_rows):
  """Training throughput; the gradient accumulated over micro-batches of
  `microbatch_rows` sequences as `polyepo.train` does (`batch` or more: the
  batch at once)."""
  optimizer = optax.adam(3e-3)
  num_micro = batch // accumulation.microbatch_groups(microbatch_rows, batch, 1)

  def loss_fn(params, micro, count):
    logp = model.sequence_logprobs(params, config, *micro)
    return -jnp.sum(logp) / count

  @functools.partial(jax.jit, donate_argnums=(0, 1))
  def train_step(params, opt_state, prompts, responses, mask):
    grad_fn = jax.value_and_grad(functools.partial(loss_fn, count=jnp.sum(mask)))
    loss, grads = accumulation.accumulate(grad_fn, params, (prompts, responses, mask), num_micro)
    updates, opt_state = optimizer.update(grads, opt_state, params)
    return optax.apply_updates(params, updates), opt_state, loss

  prompts = _prompts(config, jax.random.key(3), batch, prompt_len)
  responses = jax.random.randint(
      jax.random.key(4), (batch, steps), 2, config.vocab_size)
  lengths = jax.random.randint(jax.random.key(5), (batch, 1), steps // 2, steps + 1)
  mask = jnp.arange(steps) < lengths
  state = [jax.tree.map(jnp.copy, params), optimizer.init(params)]

  def step():
    state[0], state[1], loss = train_step(state[0], state[1], prompts,
                                          responses, mask)
    return loss

  seconds = median_seconds(step, repeats)
  return (batch * steps / seconds, batch * (prompt_len + steps) / seconds,
          float(jnp.sum(mask)) / seconds,
          training_flops(config, batch, prompt_len + steps) / seconds)


def main():
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument("--batch", type=int, default=256)
  parser.add_argument("--prompt_len", type=int, default=16)
  parser.add_argument("--response_len", type=int, default=64)
  parser.add_argument("--repeats", type=int, default=5)
  parser.add_argument("--microbatch_rows", type=int, default=0,
                      help="training: sequences per micro-batch (0: by platform, as "
                           "polyepo.train; the batch at once is timed too)")
  parser.add_argument("--num_kv_heads", type=int, default=None,
                      help="override the default config (e.g. 4 for MHA)")
  args = parser.parse_args()

  config = model.TransformerConfig()
  if args.num_kv_heads is not None:
    config = model.TransformerConfig(num_kv_heads=args.num_kv_heads)
  params = model.init_params(jax.random.key(0), config)
  b, p, t = args.batch, args.prompt_len, args.response_len
  print(f"model: {config}")
  print(f"params: {model.num_params(params):,}  matmul params N: "
        f"{matmul_params(config):,}  devices: {jax.devices()}")
  print(f"batch {b}, prompt {p}, response {t}; median of {args.repeats}")

  peak = matmul_peak()
  print(f"matmul peak (2048^3 f32): {peak / 1e9:8.1f} GFLOP/s")
  tok_s, flop_s = bench_sampling(config, params, b, p, t, args.repeats)
  print(f"sampling: {tok_s:10,.0f} sampled tokens/s  {flop_s / 1e9:6.1f} GFLOP/s"
        f"  MFU {flop_s / peak:6.1%}")
  rows = args.microbatch_rows or accumulation.default_microbatch_rows(b)
  for rows in dict.fromkeys((min(rows, b), b)):  # micro-batches, then at once
    resp_s, all_s, masked_s, flop_s = bench_training(
        config, params, b, p, t, args.repeats, rows)
    print(f"training, {f'micro-batches of {rows}' if rows < b else 'the batch at once'}: "
          f"{resp_s:10,.0f} response tokens/s ({all_s:,.0f} tokens/s "
          f"incl. prompt, {masked_s:,.0f} unmasked response tokens/s; "
          f"{resp_s / (b * t):.2f} steps/s)  {flop_s / 1e9:6.1f} GFLOP/s"
          f"  MFU {flop_s / peak:6.1%}")
  peak_after = matmul_peak()
  print(f"matmul peak again: {peak_after / 1e9:8.1f} GFLOP/s "
        f"(load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs)")


if __name__ == "__main__":
  main()
