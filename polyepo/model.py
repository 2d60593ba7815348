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

KV cache. Decoding uses an explicit, immutable `KVCache` pytree that is passed
in and returned (no linen 'cache' collection):

  cache = init_cache(config, batch_size, capacity)
  logits, cache = forward_cached(params, config, prompt, cache, prompt_mask)
  logits, cache = forward_cached(params, config, next_token[:, None], cache)

Each call writes its T new keys/values at slots [index, index + T) of every
row (all rows share the slot index, which is why prompts are left-padded) and
attends causally over the filled slots whose `mask` is set. The per-layer
buffers fold the KV heads into the batch, keys and values f32[B * KV, S, D],
so that a decoding step writes each row's new key and value contiguously, and
`lax.dynamic_update_slice` updates them in place inside a `while_loop` / `scan`.
N continuations of each of B prompts can share the prompts' cache as a prefix
instead of copying it to their rows:

  _, prefix = forward_cached(params, config, prompts, init_cache(config, B, P), mask)
  cache = continuation_cache(config, prefix, N, capacity)   # B * N rows
  logits, cache = forward_cached(params, config, tokens, cache, prefix=prefix)
"""

import dataclasses
import functools
import math
from typing import Optional, Tuple

import flax
import flax.linen as nn
import jax
import jax.numpy as jnp

from polyepo import checks

ACTIVATIONS = {"relu": nn.relu, "gelu": nn.gelu, "silu": nn.silu}
MATMUL_DTYPES = ("float32", "bfloat16")
_MASKED = -1e9  # Added to attention scores of masked keys (finite: no NaNs).


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
      `init_cache`; RoPE itself has no hard limit).
    pad_id: padding token id (prompts are left-padded with it).
    eos_id: end-of-sequence token id (sampling stops after it).
    rope_base: RoPE frequency base.
    activation: MLP non-linearity, one of ACTIVATIONS. ReLU is the default:
      on a CPU, XLA fuses GELU's backward into a slow transpose, which ReLU's
      backward (a mask) avoids.
    matmul_dtype: operand type of the projection matmuls (QKV, attention
      output, MLP, head), one of MATMUL_DTYPES. "bfloat16" rounds both
      operands to bfloat16 and accumulates in float32, forward and backward
      (`bf16_matmul`); parameters, activations, norms, attention and softmax
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


@flax.struct.dataclass
class KVCache:
  """Keys and values of the tokens decoded so far (immutable pytree).

  Attributes:
    keys: per layer, f32[B * KV, S, D] (row b, kv head j at b * KV + j),
      rotary embedding applied.
    values: per layer, f32[B * KV, S, D].
    mask: bool[B, S], slots that hold a real (non-pad) token.
    index: i32[], the next slot to write (shared by all rows).
    length: i32[B], real tokens seen so far per row (= next rotary position).
  """
  keys: Tuple[jax.Array, ...]
  values: Tuple[jax.Array, ...]
  mask: jax.Array
  index: jax.Array
  length: jax.Array

  @property
  def capacity(self) -> int:
    return self.mask.shape[1]


def rotary_angles(positions: jax.Array, head_dim: int, base: float):
  """(sin, cos) of the rotary angles, each f32[B, T, 1, D/2].

  Computed once per forward pass and shared by all layers.
  """
  half = head_dim // 2
  freqs = base ** (-jnp.arange(half, dtype=jnp.float32) / half)
  angles = positions[..., None].astype(jnp.float32) * freqs  # [B, T, D/2]
  return jnp.sin(angles)[:, :, None, :], jnp.cos(angles)[:, :, None, :]


def rotary(x: jax.Array, sin: jax.Array, cos: jax.Array) -> jax.Array:
  """Rotary position embedding (Su et al. 2021), half-split convention.

  Args:
    x: f32[B, T, H, D].
    sin, cos: f32[B, T, 1, D/2] from `rotary_angles`.

  Returns:
    f32[B, T, H, D]: pairs (x[i], x[i + D/2]) rotated by position * base^(-2i/D).
  """
  x1, x2 = jnp.split(x, 2, axis=-1)
  return jnp.concatenate([x1 * cos - x2 * sin, x2 * cos + x1 * sin], axis=-1)


@jax.custom_vjp
def bf16_matmul(a: jax.Array, b: jax.Array) -> jax.Array:
  """a @ b with bfloat16 operands and float32 accumulation, in both passes.

  The backward pass rounds the incoming gradient to bfloat16 too, so its two
  matmuls (dA = g B^T, dB = A^T g) take the same fast path; left to autodiff,
  they would mix a float32 and a bfloat16 operand and fall back to float32.

  Args:
    a: f32[M, K].
    b: f32[K, N].

  Returns:
    f32[M, N].
  """
  return _bf16_matmul_fwd(a, b)[0]


def _bf16_dot(a, b, contract):
  return jax.lax.dot_general(a, b, (contract, ((), ())), preferred_element_type=jnp.float32)


def _bf16_matmul_fwd(a, b):
  a, b = a.astype(jnp.bfloat16), b.astype(jnp.bfloat16)
  return _bf16_dot(a, b, ((1,), (0,))), (a, b)


def _bf16_matmul_bwd(residuals, g):
  a, b = residuals
  g = g.astype(jnp.bfloat16)
  return _bf16_dot(g, b, ((1,), (1,))), _bf16_dot(a, g, ((0,), (0,)))


bf16_matmul.defvjp(_bf16_matmul_fwd, _bf16_matmul_bwd)


def bf16_dot_general(lhs, rhs, dimension_numbers, precision=None,
                     preferred_element_type=None):
  """`lax.dot_general` for flax Dense layers, computed by `bf16_matmul`.

  Supports what Dense / DenseGeneral emit with axis=(-k, ..., -1): the last k
  axes of lhs contracted with the first k of rhs, no batch axes.
  """
  del precision, preferred_element_type
  (lhs_contract, rhs_contract), batch = dimension_numbers
  k = len(lhs_contract)
  if (batch != ((), ()) or tuple(lhs_contract) != tuple(range(lhs.ndim - k, lhs.ndim))
      or tuple(rhs_contract) != tuple(range(k))):
    raise NotImplementedError(f"bf16_dot_general: unsupported dimension_numbers "
                              f"{dimension_numbers}.")
  out_shape = lhs.shape[:lhs.ndim - k] + rhs.shape[k:]
  contracted = math.prod(lhs.shape[lhs.ndim - k:])
  out = bf16_matmul(lhs.reshape(-1, contracted), rhs.reshape(contracted, -1))
  return out.reshape(out_shape)


def _dense_kwargs(config: "TransformerConfig"):
  """Extra keyword arguments of the projection layers for config.matmul_dtype."""
  return {"dot_general": bf16_dot_general} if config.matmul_dtype == "bfloat16" else {}


class Attention(nn.Module):
  """Multi-head causal self-attention over the current tokens or a cache."""
  config: TransformerConfig

  @nn.compact
  def __call__(self, x, rope, attn_mask, kv=None, index=None, prefix=None):
    """Attention of T query tokens.

    Args:
      x: f32[B, T, d].
      rope: (sin, cos) from `rotary_angles`.
      attn_mask: bool[B, T, S], which keys each query may attend to; S = T
        without a cache, else the cache capacity; with a prefix, its P keys
        come first (S = P + the cache capacity).
      kv: None, or (keys, values) each f32[B * KV, S, D], to write into.
      index: i32[], slot of the first new token in `kv`.
      prefix: None, or (keys, values) each f32[B_p * KV, P, D],
        of B_p shared prefixes that come before `kv` (with a cache only): rows
        b * N .. b * N + N - 1 of x continue prefix b (N = B / B_p). The N
        rows' queries attend to their prefix in one product, which reads its
        keys and values once instead of once per row.

    Returns:
      (f32[B, T, d], (keys, values)): the updated cache, or without a cache
      keys and values of the T tokens, each f32[B * KV, T, D].
    """
    cfg = self.config
    heads, kv_heads, dim = cfg.num_heads, cfg.num_kv_heads, cfg.head_dim
    group = heads // kv_heads
    batch, length = x.shape[:2]
    qkv = nn.DenseGeneral((heads + 2 * kv_heads, dim), use_bias=False, name="qkv",
                          **_dense_kwargs(cfg))(x)  # [B, T, H + 2 * KV, D]
    # `split`, not slicing: its gradient is one concatenation, where slices'
    # gradients are each padded to full size and then summed.
    if length == 1:
      # A decoding step turns its queries and keys in one rotary: half the
      # rotary operations of every step of the decode loop, the same tokens
      # (teacher forcing keeps two: its backward pass is faster with them apart).
      qk, v = jnp.split(qkv, (heads + kv_heads,), axis=2)
      q, k = jnp.split(rotary(qk, *rope), (heads,), axis=2)
    else:
      q, k, v = jnp.split(qkv, (heads, heads + kv_heads), axis=2)
      q, k = rotary(q, *rope), rotary(k, *rope)
    q = q * (1.0 / math.sqrt(dim))
    # KV heads folded into the batch, [B * KV, T, D]; the G = H / KV query
    # heads of a group share its keys and are stacked along the query axis,
    # [B * KV, G * T, D]. A 3-D cache also makes the per-step
    # `dynamic_update_slice` several times faster on XLA:CPU than a 4-D one.
    k, v = (jnp.swapaxes(a, 1, 2).reshape(batch * kv_heads, length, dim)
            for a in (k, v))
    q = q.reshape(batch, length, kv_heads, group, dim).transpose(0, 2, 3, 1, 4)
    q = q.reshape(batch * kv_heads, group * length, dim)
    if kv is None:
      scores = jnp.einsum("nqd,nkd->nqk", q, k)
    else:
      # Keys as [B * KV, S, D], like values: a decoding step writes each row's
      # key contiguously (a transposed [B * KV, D, S] cache streams the
      # decoding dot along its minor axis, but its strided writes cost more).
      k = jax.lax.dynamic_update_slice(kv[0], k, (0, index, 0))
      v = jax.lax.dynamic_update_slice(kv[1], v, (0, index, 0))
      scores = jnp.einsum("nqd,nkd->nqk", q, k)
      if prefix is not None:
        by_prefix, by_row = _prefix_layout(prefix[0].shape[0] // kv_heads, batch, kv_heads)
        prefix_len = prefix[0].shape[1]
        scores = jnp.concatenate(
            [by_row(jnp.einsum("nqd,nkd->nqk", by_prefix(q), prefix[0])), scores], axis=-1)
    scores = scores.reshape(batch, heads, length, -1)  # head = kv * G + g.
    scores = jnp.where(attn_mask[:, None], scores, _MASKED)
    probs = jax.nn.softmax(scores, axis=-1)
    probs = probs.reshape(batch * kv_heads, group * length, -1)
    if prefix is None:
      out = jnp.einsum("nqk,nkd->nqd", probs, v)
    else:
      out = (by_row(jnp.einsum("nqk,nkd->nqd", by_prefix(probs[..., :prefix_len]), prefix[1]))
             + jnp.einsum("nqk,nkd->nqd", probs[..., prefix_len:], v))
    out = jnp.swapaxes(out.reshape(batch, heads, length, dim), 1, 2)
    out = nn.DenseGeneral(cfg.width, axis=(-2, -1), use_bias=False, name="out",
                          **_dense_kwargs(cfg))(out)
    return out, (k, v)


def _prefix_layout(num_prefixes: int, batch: int, kv_heads: int):
  """(by_prefix, by_row): [B * KV, Q, X] <-> [B_p * KV, N * Q, X], where rows
  b * N .. b * N + N - 1 continue prefix b: a prefix's N rows stacked along
  one query axis, kv heads kept apart."""
  n = batch // num_prefixes

  def by_prefix(a):
    a = a.reshape(num_prefixes, n, kv_heads, -1, a.shape[-1]).swapaxes(1, 2)
    return a.reshape(num_prefixes * kv_heads, -1, a.shape[-1])

  def by_row(a):
    a = a.reshape(num_prefixes, kv_heads, n, -1, a.shape[-1]).swapaxes(1, 2)
    return a.reshape(batch * kv_heads, -1, a.shape[-1])

  return by_prefix, by_row


class Block(nn.Module):
  """Pre-norm transformer block: x + attn(norm(x)), then x + mlp(norm(x))."""
  config: TransformerConfig

  @nn.compact
  def __call__(self, x, rope, attn_mask, kv=None, index=None, prefix=None):
    cfg = self.config
    h, kv = Attention(cfg, name="attn")(
        nn.RMSNorm(name="norm_attn")(x), rope, attn_mask, kv, index, prefix)
    x = x + h
    h = nn.RMSNorm(name="norm_mlp")(x)
    dense = functools.partial(nn.Dense, use_bias=False, **_dense_kwargs(cfg))
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
        come before `kv` (see `Attention`).

    Returns:
      (logits f32[B, T, V], per-layer (keys, values)), and with
      return_features the features f32[B, T, d] the head reads.
    """
    cfg = self.config
    if prefix is not None and kv is None:
      raise ValueError("a shared prefix is continued in a cache: pass kv (see "
                       "`forward_cached` and `continuation_cache`), or no prefix.")
    x = nn.Embed(cfg.vocab_size, cfg.width, name="embed")(tokens)
    rope = rotary_angles(positions, cfg.head_dim, cfg.rope_base)
    new_kv = []
    for layer in range(cfg.num_layers):
      x, layer_kv = Block(cfg, name=f"block_{layer}")(
          x, rope, attn_mask, None if kv is None else kv[layer], index,
          None if prefix is None else prefix[layer])
      new_kv.append(layer_kv)
    x = nn.RMSNorm(name="norm_out")(x)
    logits = nn.Dense(cfg.vocab_size, use_bias=False, name="head", **_dense_kwargs(cfg))(x)
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


def init_cache(config: TransformerConfig, batch_size: int, capacity: int,
               dtype=jnp.float32) -> KVCache:
  """An empty cache with `capacity` slots per row (prompt + response length)."""
  if capacity > config.max_len:
    raise ValueError(
        f"cache capacity {capacity} exceeds config.max_len={config.max_len}.")
  rows = batch_size * config.num_kv_heads
  shape = (rows, capacity, config.head_dim)
  return KVCache(
      keys=tuple(jnp.zeros(shape, dtype) for _ in range(config.num_layers)),
      values=tuple(jnp.zeros(shape, dtype) for _ in range(config.num_layers)),
      mask=jnp.zeros((batch_size, capacity), bool),
      index=jnp.zeros((), jnp.int32),
      length=jnp.zeros((batch_size,), jnp.int32))


def repeat_cache(cache: KVCache, repeats: int) -> KVCache:
  """Each row's cache copied `repeats` times: row b becomes rows b * R .. b * R + R - 1.

  The result is the cache of `jnp.repeat(tokens, repeats, axis=0)`: a prompt
  prefilled once serves all its samples.
  """
  if repeats == 1:
    return cache
  kv_heads = cache.keys[0].shape[0] // cache.mask.shape[0]

  def rows(x):  # [B * KV, ...] -> [B * R * KV, ...], kv heads kept innermost.
    x = x.reshape((-1, kv_heads) + x.shape[1:])
    return jnp.repeat(x, repeats, axis=0).reshape((-1,) + x.shape[2:])

  return KVCache(keys=tuple(map(rows, cache.keys)), values=tuple(map(rows, cache.values)),
                 mask=jnp.repeat(cache.mask, repeats, axis=0), index=cache.index,
                 length=jnp.repeat(cache.length, repeats, axis=0))


def grow_cache(cache: KVCache, capacity: int) -> KVCache:
  """The cache with empty slots appended up to `capacity` (>= cache.capacity).

  Attention reads every slot of the cache, filled or not, so a decoder that
  grows its cache as it goes reads fewer slots than one allocated at full
  length. The new slots lie after every query so far (the causal mask hides
  them) and are written before they are read, so the logits are the same to
  float rounding.
  """
  extra = capacity - cache.capacity
  if extra < 0:
    raise ValueError(f"cannot shrink a cache of capacity {cache.capacity} to {capacity}.")
  if extra == 0:
    return cache

  def grow(x, axis):
    return jnp.pad(x, [(0, extra if a == axis else 0) for a in range(x.ndim)])

  return cache.replace(keys=tuple(grow(k, 1) for k in cache.keys),
                       values=tuple(grow(v, 1) for v in cache.values),
                       mask=grow(cache.mask, 1))


def continuation_cache(config: TransformerConfig, prefix: KVCache, repeats: int,
                       capacity: int) -> KVCache:
  """An empty cache of `capacity` slots for `repeats` continuations of each prefix.

  Row b * R + j continues prefix b: its rotary positions go on from the
  prefix's real tokens. Pass `prefix` to `forward_cached` along with it; the
  prefix is then attended to without being copied to its R rows
  (`repeat_cache` would copy it).
  """
  cache = init_cache(config, prefix.mask.shape[0] * repeats, capacity)
  return cache.replace(length=jnp.repeat(prefix.length, repeats))


def forward_cached(params, config: TransformerConfig, tokens: jax.Array,
                   cache: KVCache, mask: Optional[jax.Array] = None,
                   return_features: bool = False, prefix: Optional[KVCache] = None):
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
  new_cache = KVCache(
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
    cache = init_cache(config, prompt_tokens.shape[0], p + response_tokens.shape[1])
    prompt_logits, cache = forward_cached(params, config, prompt_tokens, cache, prompt_mask)
    cache = repeat_cache(cache, samples_per_prompt)
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
  cache = init_cache(config, prompt_tokens.shape[0], p + response_tokens.shape[1])
  prompt_logits, cache, prompt_features = forward_cached(
      params, config, prompt_tokens, cache, prompt_tokens != config.pad_id,
      return_features=True)
  cache = repeat_cache(cache, samples_per_prompt)
  response_logits, _, response_features = forward_cached(
      params, config, response_tokens[:, :-1], cache, response_mask[:, :-1],
      return_features=True)
  repeat = lambda x: jnp.repeat(x[:, -1:], samples_per_prompt, axis=0)
  logits = jnp.concatenate([repeat(prompt_logits), response_logits], axis=1)
  features = jnp.concatenate([repeat(prompt_features), response_features], axis=1)
  logp = jax.nn.log_softmax(logits, axis=-1)
  logp = jnp.take_along_axis(logp, response_tokens[..., None], axis=-1)[..., 0]
  return jnp.where(response_mask, logp, 0.0), features
