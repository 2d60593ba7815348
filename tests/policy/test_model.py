"""Tests of polyepo.model against an independent numpy transformer."""

import math

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from polyepo.policy import attention, bf16, model

CONFIG = model.TransformerConfig(
    vocab_size=16, width=32, num_layers=2, num_heads=4, num_kv_heads=2,
    max_len=32, pad_id=0, eos_id=1)


forward = jax.jit(model.forward, static_argnums=1)
forward_cached = jax.jit(model.forward_cached, static_argnums=1)
sequence_logprobs = jax.jit(model.sequence_logprobs, static_argnums=1)


def _params(config=CONFIG, seed=0):
  return model.init_params(jax.random.key(seed), config)


def _tokens(key, shape, config=CONFIG):
  """Real (non-pad) tokens."""
  return jax.random.randint(key, shape, 1, config.vocab_size)


# An independent reference: one unpadded sequence, plain numpy, float64.


def _np_rms(x, scale):
  return x / np.sqrt(np.mean(x * x, -1, keepdims=True) + 1e-6) * scale


def _np_gelu(x):
  return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)))


_NP_ACTIVATIONS = {"gelu": _np_gelu, "relu": lambda x: np.maximum(x, 0.0),
                   "silu": lambda x: x / (1 + np.exp(-x))}


def _np_rope(x, config):
  """x: [T, heads, D]; position of row t is t."""
  half = config.head_dim // 2
  freqs = config.rope_base ** (-np.arange(half) / half)
  ang = np.arange(x.shape[0])[:, None, None] * freqs
  x1, x2 = x[..., :half], x[..., half:]
  return np.concatenate(
      [x1 * np.cos(ang) - x2 * np.sin(ang), x2 * np.cos(ang) + x1 * np.sin(ang)],
      -1)


def _np_forward(params, config, tokens):
  """Logits [T, V] of one unpadded sequence, written from the equations."""
  p = jax.tree.map(lambda a: np.asarray(a, np.float64), params)
  h, kvh, d = config.num_heads, config.num_kv_heads, config.head_dim
  x = p["embed"]["embedding"][np.asarray(tokens)]
  t = len(tokens)
  for layer in range(config.num_layers):
    blk = p[f"block_{layer}"]
    y = _np_rms(x, blk["norm_attn"]["scale"])
    qkv = np.einsum("tc,chd->thd", y, blk["attn"]["qkv"]["kernel"])
    q = _np_rope(qkv[:, :h], config)
    k = _np_rope(qkv[:, h:h + kvh], config)
    v = qkv[:, h + kvh:]
    out = np.zeros((t, h, d))
    for head in range(h):
      j = head // (h // kvh)  # the kv head this query head reads
      s = q[:, head] @ k[:, j].T / math.sqrt(d)
      s = np.where(np.tril(np.ones((t, t), bool)), s, -np.inf)
      w = np.exp(s - s.max(-1, keepdims=True))
      out[:, head] = (w / w.sum(-1, keepdims=True)) @ v[:, j]
    x = x + np.einsum("thd,hdc->tc", out, blk["attn"]["out"]["kernel"])
    y = _np_rms(x, blk["norm_mlp"]["scale"])
    y = _NP_ACTIVATIONS[config.activation](y @ blk["mlp_in"]["kernel"]) @ blk["mlp_out"]["kernel"]
    x = x + y
  return _np_rms(x, p["norm_out"]["scale"]) @ p["head"]["kernel"]


def test_default_config_size():
  params = jax.eval_shape(model.init_params, jax.random.key(0),
                          model.TransformerConfig())
  assert 450_000 < model.num_params(params) < 700_000


@pytest.mark.parametrize("num_kv_heads,activation", [(1, "relu"), (2, "gelu"), (1, "silu")])
def test_forward_matches_numpy_reference(num_kv_heads, activation):
  config = model.TransformerConfig(
      **{**CONFIG.__dict__, "num_kv_heads": num_kv_heads, "activation": activation})
  params = _params(config)
  tokens = _tokens(jax.random.key(1), (2, 9), config)
  logits = forward(params, config, tokens)
  assert logits.shape == (2, 9, config.vocab_size)
  for b in range(2):
    np.testing.assert_allclose(
        logits[b], _np_forward(params, config, tokens[b]), atol=1e-4, rtol=1e-4)


def test_forward_is_causal():
  params = _params()
  tokens = _tokens(jax.random.key(1), (2, 8))
  changed = tokens.at[:, 5].set((tokens[:, 5] % 15) + 1)
  a = forward(params, CONFIG, tokens)
  b = forward(params, CONFIG, changed)
  np.testing.assert_allclose(a[:, :5], b[:, :5], atol=1e-6)
  assert not np.allclose(a[:, 5:], b[:, 5:], atol=1e-3)


def test_left_padding_matches_unpadded():
  params = _params()
  tokens = _tokens(jax.random.key(2), (3, 6))
  pads = (0, 2, 5)  # pad tokens in front of each row
  padded = np.zeros((3, 11), np.int32)
  for b, n in enumerate(pads):
    padded[b, n:n + 6] = tokens[b]
  logits = forward(params, CONFIG, jnp.asarray(padded), jnp.asarray(padded != 0))
  ref = forward(params, CONFIG, tokens)
  for b, n in enumerate(pads):
    np.testing.assert_allclose(logits[b, n:n + 6], ref[b], atol=1e-5)


@pytest.mark.parametrize("num_kv_heads", [1, 4])
def test_cached_decoding_matches_full_forward(num_kv_heads):
  config = model.TransformerConfig(**{**CONFIG.__dict__, "num_kv_heads": num_kv_heads})
  params = _params(config)
  prompt_len, steps = 7, 6
  tokens = np.array(_tokens(jax.random.key(3), (3, prompt_len + steps), config))
  tokens[1, :3] = config.pad_id  # left padding
  tokens[2, :6] = config.pad_id
  mask = tokens != config.pad_id
  full = forward(params, config, jnp.asarray(tokens), jnp.asarray(mask))

  fwd = forward_cached
  cache = attention.init_cache(config, 3, prompt_len + steps)
  logits, cache = fwd(params, config, jnp.asarray(tokens[:, :prompt_len]), cache,
                      jnp.asarray(mask[:, :prompt_len]))
  pieces = [logits]
  for t in range(prompt_len, prompt_len + steps):
    logits, cache = fwd(params, config, jnp.asarray(tokens[:, t:t + 1]), cache)
    pieces.append(logits)
  cached = np.concatenate(pieces, axis=1)
  np.testing.assert_allclose(cached[mask], np.asarray(full)[mask], atol=1e-4)
  assert int(cache.index) == prompt_len + steps
  np.testing.assert_array_equal(cache.length, mask.sum(1))


@pytest.mark.parametrize("num_kv_heads", [1, 4])
def test_a_grown_cache_decodes_as_the_full_forward(num_kv_heads):
  """A prompt prefilled into a cache of exactly its length, the cache grown
  before decoding and again half way, gives the logits of the full forward pass;
  growing keeps every filled slot, and a cache cannot shrink."""
  config = model.TransformerConfig(**{**CONFIG.__dict__, "num_kv_heads": num_kv_heads})
  params = _params(config)
  prompt_len, steps = 5, 6
  tokens = np.array(_tokens(jax.random.key(7), (3, prompt_len + steps), config))
  tokens[1, :2] = config.pad_id
  mask = tokens != config.pad_id
  full = forward(params, config, jnp.asarray(tokens), jnp.asarray(mask))

  cache = attention.init_cache(config, 3, prompt_len)
  logits, cache = forward_cached(params, config, jnp.asarray(tokens[:, :prompt_len]), cache,
                                 jnp.asarray(mask[:, :prompt_len]))
  pieces = [logits]
  for t in range(prompt_len, prompt_len + steps):
    if t in (prompt_len, prompt_len + 3):
      grown = attention.grow_cache(cache, t + 3)
      assert grown.capacity == t + 3 and int(grown.index) == int(cache.index)
      np.testing.assert_array_equal(grown.length, cache.length)
      # Keys and values [B * KV, S, D], mask [B, S]: filled slots kept.
      for field, axis in (("keys", 1), ("values", 1), ("mask", 1)):
        for old, new in zip(jax.tree.leaves(getattr(cache, field)),
                            jax.tree.leaves(getattr(grown, field))):
          np.testing.assert_array_equal(
              jax.lax.slice_in_dim(new, 0, cache.capacity, axis=axis), old)
      cache = grown
    logits, cache = forward_cached(params, config, jnp.asarray(tokens[:, t:t + 1]), cache)
    pieces.append(logits)
  cached = np.concatenate(pieces, axis=1)
  np.testing.assert_allclose(cached[mask], np.asarray(full)[mask], atol=1e-4)
  with pytest.raises(ValueError, match="cannot shrink a cache of capacity 11 to 10"):
    attention.grow_cache(cache, 10)
  assert attention.grow_cache(cache, cache.capacity) is cache


def test_chunked_prefill_matches_single_prefill():
  params = _params()
  tokens = _tokens(jax.random.key(4), (2, 10))
  cache = attention.init_cache(CONFIG, 2, 10)
  one, _ = forward_cached(params, CONFIG, tokens, cache)
  a, cache = forward_cached(params, CONFIG, tokens[:, :4], cache)
  b, _ = forward_cached(params, CONFIG, tokens[:, 4:], cache)
  np.testing.assert_allclose(np.concatenate([a, b], 1), one, atol=1e-5)


def _np_logprobs(params, config, prompt, response, length):
  """Per-token log-probs of response[:length] after the unpadded prompt."""
  logits = _np_forward(params, config, np.concatenate([prompt, response[:length]]))
  logits = logits[len(prompt) - 1:-1]
  logp = logits - np.log(np.exp(logits - logits.max(-1, keepdims=True)).sum(
      -1, keepdims=True)) - logits.max(-1, keepdims=True)
  return logp[np.arange(length), response[:length]]


def test_sequence_logprobs_matches_reference():
  params = _params()
  prompts = np.array(_tokens(jax.random.key(5), (2, 5)))
  prompts[1, :2] = CONFIG.pad_id  # row 1: 3 real prompt tokens
  responses = np.array(_tokens(jax.random.key(6), (2, 6)))
  lengths = (6, 3)
  mask = np.arange(6)[None] < np.asarray(lengths)[:, None]
  responses[1, 3:] = CONFIG.pad_id
  logp = np.asarray(sequence_logprobs(params, CONFIG, prompts, responses, mask))
  for b in range(2):
    ref = _np_logprobs(params, CONFIG, prompts[b][prompts[b] != 0], responses[b],
                       lengths[b])
    np.testing.assert_allclose(logp[b, :lengths[b]], ref, atol=1e-4)
    np.testing.assert_array_equal(logp[b, lengths[b]:], 0.0)


def test_sequence_logprobs_is_differentiable():
  params = _params()
  prompts = _tokens(jax.random.key(7), (2, 4))
  responses = _tokens(jax.random.key(8), (2, 5))
  mask = jnp.ones((2, 5), bool)

  @jax.jit
  def loss(p):
    return -model.sequence_logprobs(p, CONFIG, prompts, responses, mask).sum()

  grads = jax.jit(jax.grad(loss))(params)
  norms = [float(jnp.abs(g).sum()) for g in jax.tree.leaves(grads)]
  assert all(np.isfinite(norms)) and all(n > 0 for n in norms)
  # A gradient step along -grad lowers the loss.
  step = jax.tree.map(lambda p, g: p - 1e-3 * g, params, grads)
  assert loss(step) < loss(params)


def test_backward_pass_pads_nothing_per_layer():
  # Query, key and value (and the rotary halves) are cut from one product with
  # `split`, whose transpose is one concatenation; cut by slicing, each piece's
  # gradient is padded back to full size and the pads summed (several memory
  # passes per layer on XLA:CPU, ~5% of the update). The pads left are outside
  # the blocks, so their count must not grow with the number of layers.
  def pads(num_layers):
    config = model.TransformerConfig(vocab_size=16, width=32, num_layers=num_layers,
                                     num_heads=4, num_kv_heads=2, max_len=16)
    params = model.init_params(jax.random.key(0), config)
    prompts, responses = jnp.ones((2, 3), jnp.int32), jnp.ones((4, 5), jnp.int32)
    grad = jax.grad(lambda p: model.sequence_logprobs(
        p, config, prompts, responses, jnp.ones((4, 5), bool), samples_per_prompt=2).sum())
    return str(jax.make_jaxpr(grad)(params)).count(" pad[")

  assert pads(3) == pads(1)


@pytest.mark.parametrize("kwargs", [
    dict(width=30, num_heads=4),
    dict(num_heads=4, num_kv_heads=3),
    dict(width=12, num_heads=4),  # head_dim 3 is odd
    dict(eos_id=16),
])
def test_config_rejects_bad_shapes(kwargs):
  with pytest.raises(ValueError):
    model.TransformerConfig(**{**CONFIG.__dict__, **kwargs})


@pytest.mark.parametrize("call,match", [
    (lambda p: model.forward(p, CONFIG, jnp.ones((2, 3, 4), jnp.int32)),
     r"tokens must have rank 2, got shape \(2, 3, 4\)"),
    (lambda p: model.forward(p, CONFIG, jnp.ones((2, 3), jnp.int32), jnp.ones((2, 4), bool)),
     r"tokens and mask must have the same shape, got \(2, 3\) and \(2, 4\)"),
    (lambda p: model.forward_cached(p, CONFIG, jnp.ones((2,), jnp.int32),
                                    attention.init_cache(CONFIG, 2, 8)),
     "tokens must have rank 2"),
    (lambda p: model.forward_cached(p, CONFIG, jnp.ones((2, 1), jnp.int32),
                                    attention.init_cache(CONFIG, 2, 8), jnp.ones((2, 2), bool)),
     "tokens and mask must have the same shape"),
    (lambda p: model.sequence_logprobs(p, CONFIG, jnp.ones((2,), jnp.int32),
                                       jnp.ones((2, 3), jnp.int32), jnp.ones((2, 3), bool)),
     "prompt_tokens must have rank 2"),
    (lambda p: model.sequence_logprobs(p, CONFIG, jnp.ones((2, 4), jnp.int32),
                                       jnp.ones((2, 3, 1), jnp.int32), jnp.ones((2, 3), bool)),
     "response_tokens must have rank 2"),
    (lambda p: model.sequence_logprobs(p, CONFIG, jnp.ones((2, 4), jnp.int32),
                                       jnp.ones((2, 3), jnp.int32), jnp.ones((2, 5), bool)),
     "response_tokens and response_mask must have the same shape"),
    (lambda p: model.sequence_logprobs(p, CONFIG, jnp.ones((2, 4), jnp.int32),
                                       jnp.ones((6, 3), jnp.int32), jnp.ones((6, 3), bool),
                                       samples_per_prompt=2),
     r"response_tokens must have 4 \(prompts x samples_per_prompt\) entries on axis 0, "
     r"got shape \(6, 3\)"),
])
def test_public_functions_name_a_bad_argument(call, match):
  with pytest.raises(ValueError, match=match):
    call(_params())


def test_init_cache_checks_max_len():
  with pytest.raises(ValueError, match="max_len"):
    attention.init_cache(CONFIG, 2, CONFIG.max_len + 1)


def _bf16_round(x):
  return np.asarray(jnp.asarray(x).astype(jnp.bfloat16).astype(jnp.float32), np.float64)


def test_bf16_matmul_values_and_gradients():
  a = jax.random.normal(jax.random.key(0), (5, 7))
  b = jax.random.normal(jax.random.key(1), (7, 3))
  g = jax.random.normal(jax.random.key(2), (5, 3))
  out, vjp = jax.vjp(bf16.bf16_matmul, a, b)
  ra, rb, rg = _bf16_round(a), _bf16_round(b), _bf16_round(g)
  # float32 accumulation of bfloat16-rounded operands: float64 reference.
  np.testing.assert_allclose(out, ra @ rb, rtol=1e-5, atol=1e-5)
  da, db = vjp(g)
  np.testing.assert_allclose(da, rg @ rb.T, rtol=1e-5, atol=1e-5)
  np.testing.assert_allclose(db, ra.T @ rg, rtol=1e-5, atol=1e-5)
  assert out.dtype == da.dtype == db.dtype == jnp.float32
  assert not np.allclose(out, np.asarray(a, np.float64) @ np.asarray(b, np.float64),
                         rtol=1e-6, atol=1e-6)  # the operands really were rounded


def test_bf16_dot_general_in_dense_layers():
  x = jax.random.normal(jax.random.key(3), (2, 4, 3, 8))
  for layer in (nn.Dense(5, use_bias=False), nn.DenseGeneral((2, 5), use_bias=False),
                nn.DenseGeneral(5, axis=(-2, -1), use_bias=False)):
    params = layer.init(jax.random.key(4), x)
    fast = layer.clone(dot_general=bf16.bf16_dot_general).apply(params, x)
    rounded = jax.tree.map(lambda p: jnp.asarray(_bf16_round(p), jnp.float32), params)
    ref = layer.apply(rounded, jnp.asarray(_bf16_round(x), jnp.float32))
    np.testing.assert_allclose(fast, ref, rtol=1e-5, atol=1e-5)
  with pytest.raises(NotImplementedError, match="dimension_numbers"):
    bf16.bf16_dot_general(x, jnp.ones((4, 5)), (((1,), (0,)), ((), ())))


def test_bfloat16_matmul_dtype_close_to_float32():
  config = model.TransformerConfig(**{**CONFIG.__dict__, "matmul_dtype": "bfloat16"})
  params = _params()
  tokens = _tokens(jax.random.key(5), (2, 9))
  full = forward(params, CONFIG, tokens)
  fast = forward(params, config, tokens)
  assert 1e-5 < float(jnp.max(jnp.abs(fast - full))) < 0.05
  with pytest.raises(ValueError, match="matmul_dtype must be one of float32, bfloat16"):
    model.TransformerConfig(matmul_dtype="float16")


@pytest.mark.parametrize("num_kv_heads", [1, 2])
def test_repeated_cache_is_the_cache_of_repeated_rows(num_kv_heads):
  """Prefilling 3 prompts and copying each row's cache 4 times gives the cache
  (keys, values per kv head, mask, lengths) of prefilling each prompt 4 times."""
  config = model.TransformerConfig(**{**CONFIG.__dict__, "num_kv_heads": num_kv_heads})
  params = _params(config)
  tokens = np.array(_tokens(jax.random.key(4), (3, 5), config))
  tokens[1, :2] = config.pad_id
  mask = jnp.asarray(tokens != config.pad_id)
  empty = lambda rows: attention.init_cache(config, rows, 8)
  _, once = forward_cached(params, config, jnp.asarray(tokens), empty(3), mask)
  _, each = forward_cached(params, config, jnp.repeat(jnp.asarray(tokens), 4, 0), empty(12),
                           jnp.repeat(mask, 4, 0))
  repeated = attention.repeat_cache(once, 4)
  for a, b in zip(jax.tree.leaves(repeated), jax.tree.leaves(each)):
    assert a.shape == b.shape
    np.testing.assert_allclose(a, b, atol=1e-5)
  assert attention.repeat_cache(once, 1) is once


@pytest.mark.parametrize("num_kv_heads", [1, 2])
def test_decoding_after_a_shared_prefix_matches_whole_sequences(num_kv_heads):
  """3 left-padded prompts prefilled once, then 4 continuations each decoded
  token by token against the prompts as a prefix (`continuation_cache`; one
  continuation holds a pad token): every step's logits are those of a plain
  forward pass over prompt + continuation so far (brute force, no cache)."""
  config = model.TransformerConfig(**{**CONFIG.__dict__, "num_kv_heads": num_kv_heads})
  params = _params(config)
  prompts = np.array(_tokens(jax.random.key(6), (3, 5), config))
  prompts[1, :2] = prompts[2, :1] = config.pad_id
  prompt_mask = prompts != config.pad_id
  responses = np.array(_tokens(jax.random.key(7), (12, 6), config))
  responses[5, 3] = config.pad_id
  response_mask = responses != config.pad_id
  _, prefix = forward_cached(params, config, jnp.asarray(prompts),
                             attention.init_cache(config, 3, 5), jnp.asarray(prompt_mask))
  cache = attention.continuation_cache(config, prefix, 4, 6)
  whole_tokens = np.concatenate([np.repeat(prompts, 4, 0), responses], 1)
  whole_mask = np.concatenate([np.repeat(prompt_mask, 4, 0), response_mask], 1)
  step = jax.jit(model.forward_cached, static_argnums=1)
  for t in range(6):
    logits, cache = step(params, config, jnp.asarray(responses[:, t:t + 1]), cache,
                         jnp.asarray(response_mask[:, t:t + 1]), prefix=prefix)
    full = forward(params, config, jnp.asarray(whole_tokens[:, :6 + t]),
                   jnp.asarray(whole_mask[:, :6 + t]))
    real = response_mask[:, t]
    np.testing.assert_allclose(logits[real, 0], full[real, -1], atol=1e-5)
  with pytest.raises(ValueError, match="not a multiple of the prefix's 3"):
    model.forward_cached(params, config, jnp.ones((4, 1), jnp.int32),
                         attention.init_cache(config, 4, 6), prefix=prefix)
  tokens = jnp.ones((12, 1), jnp.int32)
  with pytest.raises(ValueError, match="a shared prefix is continued in a cache: pass kv"):
    model.Transformer(config).apply({"params": params}, tokens, jnp.zeros_like(tokens),
                                    jnp.ones((12, 1, 1), bool),
                                    prefix=tuple(zip(prefix.keys, prefix.values)))


@pytest.mark.slow
@pytest.mark.parametrize("num_kv_heads", [1, 2])
def test_shared_prompt_logprobs_equal_repeated_prompts(num_kv_heads):
  """Running each prompt once for its N responses gives the log-probs, and the
  gradient, of repeating the prompt N times (left-padded prompts, ragged masks)."""
  config = model.TransformerConfig(**{**CONFIG.__dict__, "num_kv_heads": num_kv_heads})
  params = _params(config)
  prompts = np.array(_tokens(jax.random.key(5), (3, 5), config))
  prompts[1, :2] = config.pad_id
  responses = _tokens(jax.random.key(6), (12, 7), config)
  mask = jnp.arange(7)[None] < jnp.array([7, 1, 4, 6] * 3)[:, None]
  prompts = jnp.asarray(prompts)

  def loss(p, shared):
    if shared:
      logp = model.sequence_logprobs(p, config, prompts, responses, mask, samples_per_prompt=4)
    else:
      logp = model.sequence_logprobs(p, config, jnp.repeat(prompts, 4, 0), responses, mask)
    return jnp.sum(logp * jnp.arange(1.0, 8.0)), logp

  (_, shared), g_shared = jax.value_and_grad(loss, has_aux=True)(params, True)
  (_, repeated), g_repeated = jax.value_and_grad(loss, has_aux=True)(params, False)
  assert shared.shape == (12, 7)
  np.testing.assert_allclose(shared, repeated, atol=1e-5)
  assert (np.asarray(shared)[~np.asarray(mask)] == 0).all()
  for a, b in zip(jax.tree.leaves(g_shared), jax.tree.leaves(g_repeated)):
    np.testing.assert_allclose(a, b, atol=1e-4, rtol=1e-4)
