"""Decoder-only transformer policy (flax linen) with an explicit KV cache.

A small pre-norm (RMSNorm) transformer with rotary position embeddings (RoPE),
grouped-query attention (default: multi-query, one shared key/value head, which
makes the KV cache and thus decoding much cheaper on CPU), fused QKV
projection, GELU MLP and an untied output head. Everything is a pure
function of a params pytree:

  config = TransformerConfig(vocab_size=env.vocab_size, pad_id=env.pad_id,
                             eos_id=env.eos_id)
  params = init_params(key, config)
  logits = forward(params, config, tokens, mask)            # f32[B, T, V]
  logp = sequence_logprobs(params, config, prompt, response, response_mask)

Padding. Prompts are LEFT-padded with `pad_id`. `mask` marks real tokens; pad
tokens are never attended to, and the rotary position of a token counts only
the real tokens before it, so a left-padded prompt gives the same logits at its
real positions as the unpadded prompt (up to float rounding).

KV cache. Decoding uses an explicit, immutable `attention.KVCache` pytree that
is passed in and returned (its layout, and how a cache is built, grown or
shared: `polyepo.attention`):

  cache = attention.init_cache(config, batch_size, capacity)
  logits, cache = forward_cached(params, config, prompt, cache, prompt_mask)
  logits, cache = forward_cached(params, config, next_token[:, None], cache)

N continuations of each of B prompts can share the prompts' cache as a prefix
instead of copying it to their rows:

  _, prefix = forward_cached(params, config, prompts,
                             attention.init_cache(config, B, P), mask)
  cache = attention.continuation_cache(config, prefix, N, capacity)   # B * N rows
  logits, cache = forward_cached(params, config, tokens, cache, prefix=prefix)

The layers: `Transformer` and its `Block`s here, `attention.Attention` and the
rotary embedding in `polyepo.attention`, the bfloat16 projection products
(`TransformerConfig.matmul_dtype`) in `polyepo.bf16`.
"""

import dataclasses
import functools
from typing import Optional

import flax.linen as nn
import jax
import jax.numpy as jnp

from polyepo import checks
from polyepo.policy import attention, bf16

ACTIVATIONS = {"relu": nn.relu, "gelu": nn.gelu, "silu": nn.silu}
MATMUL_DTYPES = ("float32", "bfloat16")


@dataclasses.dataclass(frozen=True)
class TransformerConfig:
  """Static shape of the transformer (hashable; safe as a jit static arg).

  Attributes:
    vocab_size: number of token ids V.
    width: residual stream width d.
    num_layers: number of transformer blocks L.
    num_heads: attention (query) heads H; head_dim = width // num_heads
      (even, for RoPE).
    num_kv_heads: key/value heads KV (grouped-query attention, Ainslie et al.
      2023); H must be a multiple. KV = H is standard multi-head attention,
      KV = 1 multi-query attention (Shazeer 2019): a KV times smaller cache.
    mlp_ratio: hidden width of the MLP is mlp_ratio * width.
    max_len: longest prompt + response the model is meant for (checked by
      `attention.init_cache`; RoPE itself has no hard limit).
    pad_id: padding token id (prompts are left-padded with it).
    eos_id: end-of-sequence token id (sampling stops after it).
    rope_base: RoPE frequency base.
    activation: MLP non-linearity, one of ACTIVATIONS. ReLU is the default:
      on a CPU, XLA fuses GELU's backward into a slow transpose, which ReLU's
      backward (a mask) avoids.
    matmul_dtype: operand type of the projection matmuls (QKV, attention
      output, MLP, head), one of MATMUL_DTYPES. "bfloat16" rounds both
      operands to bfloat16 and accumulates in float32, forward and backward
      (`bf16.bf16_matmul`); parameters, activations, norms, attention and softmax
      stay float32. On CPUs with AMX (Intel Sapphire Rapids and later) these
      matmuls run several times faster. XLA:CPU (jaxlib 0.10.2) runs only the
      forward and input-gradient products in bfloat16. It upcasts the
      weight-gradient products, which contract the rows (their operands'
      leading axis), to float32: exact products of the rounded operands, at
      float32 speed. `python -m bench.profile_step --matmul-dtype bfloat16
      --ops K` shows which products run in which type.
  """
  vocab_size: int = 64
  width: int = 128
  num_layers: int = 3
  num_heads: int = 4
  num_kv_heads: int = 1
  mlp_ratio: int = 4
  max_len: int = 256
  pad_id: int = 0
  eos_id: int = 1
  rope_base: float = 10_000.0
  activation: str = "relu"
  matmul_dtype: str = "float32"

  def __post_init__(self):
    if self.activation not in ACTIVATIONS:
      raise ValueError(f"activation must be one of {', '.join(ACTIVATIONS)}; "
                       f"got {self.activation!r}.")
    if self.matmul_dtype not in MATMUL_DTYPES:
      raise ValueError(f"matmul_dtype must be one of {', '.join(MATMUL_DTYPES)}; "
                       f"got {self.matmul_dtype!r}.")
    if self.width % self.num_heads:
      raise ValueError(
          f"width={self.width} is not divisible by num_heads={self.num_heads}.")
    if self.num_heads % self.num_kv_heads:
      raise ValueError(f"num_heads={self.num_heads} is not a multiple of "
                       f"num_kv_heads={self.num_kv_heads}.")
    if self.head_dim % 2:
      raise ValueError(f"head_dim={self.head_dim} must be even for RoPE.")
    for name in ("pad_id", "eos_id"):
      if not 0 <= getattr(self, name) < self.vocab_size:
        raise ValueError(f"{name} must lie in [0, vocab_size={self.vocab_size}).")

  @property
  def head_dim(self) -> int:
    return self.width // self.num_heads


class Block(nn.Module):
  """Pre-norm transformer block: x + attn(norm(x)), then x + mlp(norm(x))."""
  config: TransformerConfig

  @nn.compact
  def __call__(self, x, rope, attn_mask, kv=None, index=None, prefix=None):
    cfg = self.config
    h, kv = attention.Attention(cfg, name="attn")(
        nn.RMSNorm(name="norm_attn")(x), rope, attn_mask, kv, index, prefix)
    x = x + h
    h = nn.RMSNorm(name="norm_mlp")(x)
    dense = functools.partial(nn.Dense, use_bias=False, **bf16.dense_kwargs(cfg.matmul_dtype))
    h = dense(cfg.mlp_ratio * cfg.width, name="mlp_in")(h)
    h = dense(cfg.width, name="mlp_out")(ACTIVATIONS[cfg.activation](h))
    return x + h, kv


class Transformer(nn.Module):
  """Token embedding, `num_layers` blocks, final RMSNorm, linear head."""
  config: TransformerConfig

  @nn.compact
  def __call__(self, tokens, positions, attn_mask, kv=None, index=None,
               return_features=False, prefix=None):
    """Logits of every position.

    Args:
      tokens: i32[B, T].
      positions: i32[B, T].
      attn_mask: bool[B, T, S].
      kv: None, or per layer a (keys, values) pair, each f32[B * KV, S, D].
      index: i32[], first slot written in `kv`.
      return_features: also return the final normalised hidden states (static).
      prefix: None, or per layer the (keys, values) of shared prefixes that
        come before `kv` (see `attention.Attention`).

    Returns:
      (logits f32[B, T, V], per-layer (keys, values)), and with
      return_features the features f32[B, T, d] the head reads.
    """
    cfg = self.config
    if prefix is not None and kv is None:
      raise ValueError("a shared prefix is continued in a cache: pass kv (see "
                       "`forward_cached` and `attention.continuation_cache`), or no prefix.")
    x = nn.Embed(cfg.vocab_size, cfg.width, name="embed")(tokens)
    rope = attention.rotary_angles(positions, cfg.head_dim, cfg.rope_base)
    new_kv = []
    for layer in range(cfg.num_layers):
      x, layer_kv = Block(cfg, name=f"block_{layer}")(
          x, rope, attn_mask, None if kv is None else kv[layer], index,
          None if prefix is None else prefix[layer])
      new_kv.append(layer_kv)
    x = nn.RMSNorm(name="norm_out")(x)
    logits = nn.Dense(cfg.vocab_size, use_bias=False, name="head",
                      **bf16.dense_kwargs(cfg.matmul_dtype))(x)
    if return_features:
      return logits, tuple(new_kv), x
    return logits, tuple(new_kv)


@functools.partial(jax.jit, static_argnums=1)
def init_params(key: jax.Array, config: TransformerConfig):
  """Initial parameters (a pytree of f32 arrays); jitted (init is one XLA call)."""
  tokens = jnp.zeros((1, 1), jnp.int32)
  attn_mask = jnp.ones((1, 1, 1), bool)
  return Transformer(config).init(key, tokens, tokens, attn_mask)["params"]


def num_params(params) -> int:
  """Total number of parameters."""
  return sum(x.size for x in jax.tree.leaves(params))


def positions_from_mask(mask: jax.Array, offset: Optional[jax.Array] = None):
  """Rotary positions that count only real tokens.

  Args:
    mask: bool[B, T], True for real tokens.
    offset: optional i32[B], real tokens before this chunk (cache length).

  Returns:
    i32[B, T]: offset + (number of real tokens strictly before each token);
    pad tokens get the position of the next real token (they are never read).
  """
  positions = jnp.cumsum(mask, axis=1, dtype=jnp.int32) - mask.astype(jnp.int32)
  if offset is not None:
    positions = positions + offset[:, None]
  return positions


def forward(params, config: TransformerConfig, tokens: jax.Array,
            mask: Optional[jax.Array] = None) -> jax.Array:
  """Teacher-forced logits of a (left-padded) batch, no cache.

  Args:
    params: model parameters.
    config: the model's TransformerConfig.
    tokens: i32[B, T].
    mask: bool[B, T], True for real tokens (default: all real). Pad tokens are
      not attended to and do not advance positions; their own logits are
      meaningless.

  Returns:
    logits: f32[B, T, V]; logits[:, t] predicts token t + 1.
  """
  checks.rank("tokens", tokens, 2)
  if mask is None:
    mask = jnp.ones(tokens.shape, bool)
  checks.same_shape("tokens", tokens, "mask", mask)
  t = tokens.shape[1]
  causal = jnp.tril(jnp.ones((t, t), bool))
  attn_mask = causal[None] & mask[:, None, :]
  logits, _ = Transformer(config).apply(
      {"params": params}, tokens, positions_from_mask(mask), attn_mask)
  return logits


def forward_cached(params, config: TransformerConfig, tokens: jax.Array,
                   cache: attention.KVCache, mask: Optional[jax.Array] = None,
                   return_features: bool = False,
                   prefix: Optional[attention.KVCache] = None):
  """Logits of T new tokens that follow the cached ones; updates the cache.

  Used both to prefill a prompt (T = P, empty cache) and to decode (T = 1).
  The caller must keep cache.index + T <= cache.capacity (not checked: index
  is traced; `lax.dynamic_update_slice` would clamp silently).

  Args:
    params: model parameters.
    config: the model's TransformerConfig.
    tokens: i32[B, T].
    cache: KVCache of capacity S.
    mask: bool[B, T], True for real tokens (default: all real).
    return_features: also return the final hidden states (static).
    prefix: None, or a filled KVCache of B_p rows that comes before `cache`
      (from `continuation_cache`): rows b * N .. b * N + N - 1 continue
      prefix b (N = B / B_p). The same logits, to float rounding, as a cache
      holding each prefix copied to its N rows (`repeat_cache`), for 1 / N of
      the prefix's reads.

  Returns:
    (logits f32[B, T, V], the cache with the T tokens appended), and with
    return_features the final normalised hidden states f32[B, T, d] third.
  """
  checks.rank("tokens", tokens, 2)
  if mask is None:
    mask = jnp.ones(tokens.shape, bool)
  checks.same_shape("tokens", tokens, "mask", mask)
  t = tokens.shape[1]
  slot_mask = jax.lax.dynamic_update_slice(cache.mask, mask, (0, cache.index))
  query_slot = cache.index + jnp.arange(t)
  causal = jnp.arange(cache.capacity)[None, :] <= query_slot[:, None]  # [T, S]
  attn_mask = causal[None] & slot_mask[:, None, :]
  prefix_kv = None
  if prefix is not None:
    repeats, rest = divmod(tokens.shape[0], prefix.mask.shape[0])
    if rest or not repeats:
      raise ValueError(f"tokens has {tokens.shape[0]} rows, not a multiple of the "
                       f"prefix's {prefix.mask.shape[0]}.")
    prefix_mask = jnp.repeat(prefix.mask, repeats, axis=0)[:, None, :]
    attn_mask = jnp.concatenate(
        [jnp.broadcast_to(prefix_mask, (tokens.shape[0], t, prefix.capacity)), attn_mask],
        axis=-1)
    prefix_kv = tuple(zip(prefix.keys, prefix.values))
  kv = tuple(zip(cache.keys, cache.values))
  outputs = Transformer(config).apply(
      {"params": params}, tokens, positions_from_mask(mask, cache.length),
      attn_mask, kv, cache.index, return_features, prefix_kv)
  logits, new_kv = outputs[:2]
  new_cache = attention.KVCache(
      keys=tuple(k for k, _ in new_kv),
      values=tuple(v for _, v in new_kv),
      mask=slot_mask,
      index=cache.index + t,
      length=cache.length + mask.sum(axis=1, dtype=jnp.int32))
  if return_features:
    return logits, new_cache, outputs[2]
  return logits, new_cache


def _check_responses(prompt_tokens, response_tokens, response_mask, samples_per_prompt):
  """Raises ValueError unless B prompts [B, P] have B * N responses [B * N, T] and a mask."""
  checks.rank("prompt_tokens", prompt_tokens, 2)
  checks.rank("response_tokens", response_tokens, 2)
  checks.same_shape("response_tokens", response_tokens, "response_mask", response_mask)
  checks.axis_size("response_tokens", response_tokens, 0,
                    prompt_tokens.shape[0] * samples_per_prompt,
                    "prompts x samples_per_prompt")


def sequence_logprobs(params, config: TransformerConfig,
                      prompt_tokens: jax.Array, response_tokens: jax.Array,
                      response_mask: jax.Array, samples_per_prompt: int = 1) -> jax.Array:
  """Teacher-forced log-probabilities of each response token.

    logp[r, t] = log pi(response[r, t] | prompt[r // N], response[r, :t])

  at temperature 1 (the policy's own distribution). Differentiable in params.
  With N = samples_per_prompt > 1, each prompt is run once and its keys and
  values serve its N responses (`repeat_cache`): the same numbers as repeating
  the prompts N times, for 1 / N of the prompt's work (forward and backward).

  Args:
    params: model parameters.
    config: the model's TransformerConfig.
    prompt_tokens: i32[B, P], left-padded with config.pad_id.
    response_tokens: i32[B * N, T]; rows b * N .. b * N + N - 1 answer prompt b.
    response_mask: bool[B * N, T], True for real response tokens (EOS included).
    samples_per_prompt: N (static).

  Returns:
    f32[B * N, T], zero where response_mask is False.
  """
  _check_responses(prompt_tokens, response_tokens, response_mask, samples_per_prompt)
  p = prompt_tokens.shape[1]
  prompt_mask = prompt_tokens != config.pad_id
  if samples_per_prompt == 1:
    tokens = jnp.concatenate([prompt_tokens, response_tokens], axis=1)
    mask = jnp.concatenate([prompt_mask, response_mask], axis=1)
    logits = forward(params, config, tokens, mask)[:, p - 1:-1]
  else:
    cache = attention.init_cache(config, prompt_tokens.shape[0], p + response_tokens.shape[1])
    prompt_logits, cache = forward_cached(params, config, prompt_tokens, cache, prompt_mask)
    cache = attention.repeat_cache(cache, samples_per_prompt)
    response_logits, _ = forward_cached(params, config, response_tokens[:, :-1], cache,
                                        response_mask[:, :-1])
    first = jnp.repeat(prompt_logits[:, -1:], samples_per_prompt, axis=0)
    logits = jnp.concatenate([first, response_logits], axis=1)
  logp = jax.nn.log_softmax(logits, axis=-1)
  logp = jnp.take_along_axis(logp, response_tokens[..., None], axis=-1)[..., 0]
  return jnp.where(response_mask, logp, 0.0)


def sequence_logprobs_and_features(params, config: TransformerConfig,
                                   prompt_tokens: jax.Array, response_tokens: jax.Array,
                                   response_mask: jax.Array, samples_per_prompt: int = 1):
  """`sequence_logprobs` and the hidden state each response token is predicted from.

    features[r, t] = the final normalised hidden state at the position whose
                     logits give logp[r, t]: the state "prompt + response[:t]"

  A critic reading these gives V(s_t) for every token t (`polyepo.value_head`).
  Always takes the cached path of `sequence_logprobs` (the prompt run once for
  its N responses); the log-probs agree with `sequence_logprobs` to float rounding.

  Args:
    params, config, prompt_tokens, response_tokens, response_mask,
    samples_per_prompt: as for `sequence_logprobs`.

  Returns:
    (logp f32[B * N, T], zero where response_mask is False;
     features f32[B * N, T, d]).
  """
  _check_responses(prompt_tokens, response_tokens, response_mask, samples_per_prompt)
  p = prompt_tokens.shape[1]
  cache = attention.init_cache(config, prompt_tokens.shape[0], p + response_tokens.shape[1])
  prompt_logits, cache, prompt_features = forward_cached(
      params, config, prompt_tokens, cache, prompt_tokens != config.pad_id,
      return_features=True)
  cache = attention.repeat_cache(cache, samples_per_prompt)
  response_logits, _, response_features = forward_cached(
      params, config, response_tokens[:, :-1], cache, response_mask[:, :-1],
      return_features=True)
  repeat = lambda x: jnp.repeat(x[:, -1:], samples_per_prompt, axis=0)
  logits = jnp.concatenate([repeat(prompt_logits), response_logits], axis=1)
  features = jnp.concatenate([repeat(prompt_features), response_features], axis=1)
  logp = jax.nn.log_softmax(logits, axis=-1)
  logp = jnp.take_along_axis(logp, response_tokens[..., None], axis=-1)[..., 0]
  return jnp.where(response_mask, logp, 0.0), features
