"""Causal self-attention of the transformer policy, and its explicit KV cache.

`Attention` attends over the current tokens (teacher forcing) or over a cache
of the tokens decoded so far, with rotary position embeddings (`rotary`) and
grouped-query key/value heads. The cache is an explicit, immutable `KVCache`
pytree that is passed in and returned (no linen 'cache' collection); it is
built here (`init_cache`, `repeat_cache`, `grow_cache`, `continuation_cache`)
and filled by `polyepo.model.forward_cached`.

Each call writes its T new keys/values at slots [index, index + T) of every
row (all rows share the slot index, which is why prompts are left-padded) and
attends causally over the filled slots whose `mask` is set. The per-layer
buffers fold the KV heads into the batch, keys and values f32[B * KV, S, D],
so that a decoding step writes each row's new key and value contiguously, and
`lax.dynamic_update_slice` updates them in place inside a `while_loop` / `scan`.
N continuations of each of B prompts can share the prompts' cache as a prefix
(`continuation_cache`) instead of copying it to their rows (`repeat_cache`).
"""

import math
from typing import TYPE_CHECKING, Tuple

import flax
import flax.linen as nn
import jax
import jax.numpy as jnp

from polyepo.policy import bf16

if TYPE_CHECKING:  # polyepo.model imports this module; annotations only.
  from polyepo.policy.model import TransformerConfig

_MASKED = -1e9  # Added to attention scores of masked keys (finite: no NaNs).


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


class Attention(nn.Module):
  """Multi-head causal self-attention over the current tokens or a cache."""
  config: "TransformerConfig"

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
                          **bf16.dense_kwargs(cfg.matmul_dtype))(x)  # [B, T, H + 2 * KV, D]
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
                          **bf16.dense_kwargs(cfg.matmul_dtype))(out)
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


def init_cache(config: "TransformerConfig", batch_size: int, capacity: int,
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


def continuation_cache(config: "TransformerConfig", prefix: KVCache, repeats: int,
                       capacity: int) -> KVCache:
  """An empty cache of `capacity` slots for `repeats` continuations of each prefix.

  Row b * R + j continues prefix b: its rotary positions go on from the
  prefix's real tokens. Pass `prefix` to `model.forward_cached` along with it; the
  prefix is then attended to without being copied to its R rows
  (`repeat_cache` would copy it).
  """
  cache = init_cache(config, prefix.mask.shape[0] * repeats, capacity)
  return cache.replace(length=jnp.repeat(prefix.length, repeats))
