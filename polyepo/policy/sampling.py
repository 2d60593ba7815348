"""Jitted autoregressive rollout of the transformer policy with a KV cache.

  rollout = sample(params, config, key, prompt_tokens, max_new_tokens=64,
                   temperature=1.0)
  rollout.tokens    # i32[B, T]  response tokens, pad after EOS
  rollout.logprobs  # f32[B, T]  log-prob under the sampling distribution
  rollout.mask      # bool[B, T] True up to and including EOS
  rollout.features  # f32[B, T, d] with return_features=True, else None

The prompt (left-padded with config.pad_id) is prefilled in one forward pass;
then each step samples a token from the last logits and runs the model on that
one token against the cache. With `samples_per_prompt=N`, each of the B prompts
is prefilled once and its cache serves its N samples (rows b * N + j of the
B * N rollouts) as a shared prefix (`attention.continuation_cache`), never copied
to them: the rollouts of `jnp.repeat(prompt_tokens, N, axis=0)`, to float
rounding, for 1 / N of the prefill and of the reads of the prompt's keys and
values at every decoding step (attention over a cache is bound by reading
it). The loop is a `lax.while_loop` that exits once every row has emitted EOS
(`early_stop=True`), or a fixed-length `lax.scan`
(`early_stop=False`, for benchmarks). Step t draws its token by inverting the
CDF with uniform u[t], where u = uniform(key, [T, B]) is drawn once up front,
so both loops give identical rollouts and the result is a deterministic
function of the key. Given one key per prompt instead, each prompt's samples
are a function of its own key: a prompt draws the same samples in any batch
(to float rounding), which lets `polyepo.evaluate` chunk its problems as the
platform prefers without changing the evaluation. The responses' KV cache
starts at `cache_block` slots and grows by `cache_block` slots between
phases of the loop (`attention.grow_cache`): attention reads every slot of the
cache, filled or not, so this reads about half the slots of a cache allocated
at full length, with the same rollout to float rounding. `sample` is pure:
wrap it in `jax.jit` (static: config, max_new_tokens, early_stop) and
`jax.vmap` it freely (e.g. over keys).
`make_sampler` does the wrapping for a fixed setting.

Sampling distribution. Logits are divided by the temperature, then optionally
restricted to the top-k tokens, then to the smallest top set whose probability
reaches top_p (nucleus; renormalised after top-k, as in Hugging Face
`generate`). Tokens tied with the last kept logit are kept too. Temperature 0
is greedy decoding (log-prob 0). temperature / top_k / top_p may be Python
numbers (filters that are off are then skipped at trace time) or traced
scalars (vmappable, e.g. a temperature sweep).
"""

from typing import NamedTuple, Optional, Union

import jax
import jax.numpy as jnp

from polyepo import checks
from polyepo.policy import attention
from polyepo.policy import model as model_lib

Scalar = Union[float, int, jax.Array]

# Slots the KV cache grows by during a rollout (`sample`'s cache_block).
DEFAULT_CACHE_BLOCK = 16


class Rollout(NamedTuple):
  """Sampled responses.

  Attributes:
    tokens: i32[B, T], response tokens; config.pad_id after EOS.
    logprobs: f32[B, T], log-prob of each token under the sampling
      distribution (after temperature / top-k / top-p); 0 where mask is False.
    mask: bool[B, T], True for real response tokens, EOS included.
    features: f32[B, T, d], the final normalised hidden state each token was
      sampled from (the state "prompt + response[:t]", as
      `model.sequence_logprobs_and_features` gives it, to float rounding), or
      None unless asked for: a critic reads V(s_t) from it without another
      forward pass.
  """
  tokens: jax.Array
  logprobs: jax.Array
  mask: jax.Array
  features: Optional[jax.Array] = None


def _is_static(x) -> bool:
  return isinstance(x, (int, float))


def sampling_logprobs(logits: jax.Array, temperature: Scalar = 1.0,
                      top_k: Scalar = 0, top_p: Scalar = 1.0) -> jax.Array:
  """Log-probabilities of the sampling distribution.

  Args:
    logits: f32[..., V].
    temperature: >= 0; 0 means greedy (a point mass on the argmax).
    top_k: keep the k largest logits; 0 (or >= V) keeps all.
    top_p: keep the smallest top set with probability >= top_p; 1 keeps all.

  Returns:
    f32[..., V], log-probs with -inf outside the support.
  """
  logits = logits.astype(jnp.float32)
  greedy_possible = not _is_static(temperature) or temperature <= 0
  if _is_static(temperature):
    scaled = logits / temperature if temperature > 0 else logits
  else:
    temperature = jnp.asarray(temperature, jnp.float32)
    scaled = logits / jnp.where(temperature > 0, temperature, 1.0)
  use_top_k = not _is_static(top_k) or 0 < top_k < logits.shape[-1]
  use_top_p = not _is_static(top_p) or top_p < 1.0
  if use_top_k or use_top_p:
    scaled = _filter(scaled, top_k if use_top_k else None,
                     top_p if use_top_p else None)
  logp = jax.nn.log_softmax(scaled, axis=-1)
  if greedy_possible:
    vocab = logits.shape[-1]
    onehot = jax.nn.one_hot(jnp.argmax(logits, axis=-1), vocab, dtype=bool)
    greedy = jnp.where(onehot, 0.0, -jnp.inf)
    logp = jnp.where(jnp.asarray(temperature) > 0, logp, greedy)
  return logp


def _filter(scaled, top_k, top_p):
  """Sets logits outside the top-k / nucleus set to -inf (see module doc)."""
  vocab = scaled.shape[-1]
  desc = -jnp.sort(-scaled, axis=-1)  # [..., V], largest first.
  threshold = jnp.full(scaled.shape[:-1] + (1,), -jnp.inf)
  if top_k is not None:
    k = jnp.asarray(top_k, jnp.int32)
    k = jnp.where((k <= 0) | (k > vocab), vocab, k)
    kth = jnp.take_along_axis(
        desc, jnp.broadcast_to(k - 1, threshold.shape), axis=-1)
    threshold = jnp.maximum(threshold, kth)
    desc = jnp.where(desc >= threshold, desc, -jnp.inf)
  if top_p is not None:
    probs = jax.nn.softmax(desc, axis=-1)
    mass_before = jnp.cumsum(probs, axis=-1) - probs
    num_kept = jnp.maximum(jnp.sum(mass_before < top_p, axis=-1, keepdims=True), 1)
    threshold = jnp.maximum(
        threshold, jnp.take_along_axis(desc, num_kept - 1, axis=-1))
  return jnp.where(scaled >= threshold, scaled, -jnp.inf)


def inverse_cdf_sample(logp: jax.Array, u: jax.Array) -> jax.Array:
  """Draws token ~ exp(logp) by inverting the CDF with one uniform per row.

  One uniform per row instead of V Gumbels (`jax.random.categorical`) makes
  the random numbers for a whole rollout one cheap up-front call.

  Args:
    logp: f32[B, V], log-probs (-inf outside the support).
    u: f32[B], uniform on [0, 1).

  Returns:
    i32[B], never a token of probability 0.
  """
  probs = jnp.exp(logp)
  cdf = jnp.cumsum(probs, axis=-1)
  token = jnp.sum(cdf <= (u * cdf[:, -1])[:, None], axis=-1, dtype=jnp.int32)
  # Rounding could push the count past the last token of non-zero mass.
  last = probs.shape[-1] - 1 - jnp.argmax(probs[:, ::-1] > 0, axis=-1)
  return jnp.minimum(token, last.astype(jnp.int32))


def _is_key_batch(key: jax.Array) -> bool:
  """Whether `key` holds several keys: a typed key array of rank 1, or raw
  uint32 keys of rank 2."""
  typed = jnp.issubdtype(key.dtype, jax.dtypes.prng_key)
  return key.ndim == (1 if typed else 2)


def prompt_uniforms(keys: jax.Array, steps: int, samples_per_prompt: int) -> jax.Array:
  """f32[T, B * N]: the uniforms of B prompts' N samples, prompt b's from keys[b]
  alone (the B * N rows in `sample`'s order: row b * N + j is sample j of prompt b)."""
  per_prompt = jax.vmap(lambda k: jax.random.uniform(k, (steps, samples_per_prompt)))(keys)
  return jnp.transpose(per_prompt, (1, 0, 2)).reshape(steps, -1)


def sample(params, config: model_lib.TransformerConfig, key: jax.Array,
           prompt_tokens: jax.Array, *, max_new_tokens: int,
           temperature: Scalar = 1.0, top_k: Scalar = 0, top_p: Scalar = 1.0,
           samples_per_prompt: int = 1, early_stop: bool = True,
           axis_name: Optional[str] = None, return_features: bool = False,
           prompt_mask: Optional[jax.Array] = None,
           cache_block: int = DEFAULT_CACHE_BLOCK) -> Rollout:
  """Samples `samples_per_prompt` responses for each prompt.

  Args:
    params: model parameters.
    config: the model's TransformerConfig (static under jit).
    key: a PRNG key, or B of them (key[B], one per prompt: prompt b's samples
      then depend on key[b] alone, `prompt_uniforms`).
    prompt_tokens: i32[B, P], left-padded with config.pad_id; every row holds
      at least one real token.
    max_new_tokens: response length T (static).
    temperature, top_k, top_p: the sampling distribution (see module doc).
    samples_per_prompt: N (static); the prompt is prefilled once for its N
      samples.
    early_stop: stop once all rows emitted EOS (`while_loop`), else always run
      T steps (`scan`). Results are identical.
    axis_name: when `sample` is vmapped with this axis name (e.g. over seeds),
      the loop runs until every row of every vmapped instance is done. Without
      it, vmap turns the loop's exit test into one per instance, and every step
      then selects each loop variable (the KV cache included) between its old
      and new value.
    return_features: also return `Rollout.features` (static).
    prompt_mask: bool[B, P], the prompt's real tokens; default: those that are
      not config.pad_id. Needed when a context holds a sampled pad token that
      must count as real (a response prefix, `polyepo.vines`).
    cache_block: the KV cache grows by this many slots at a time (static; 0:
      allocated at full length up front). Attention reads every slot of the
      cache, so a growing cache reads fewer; the rollout is the same to float
      rounding.

  Returns:
    Rollout with fields of shape [B * N, T] (features [B * N, T, d]); row
    b * N + j is sample j of prompt b.
  """
  checks.rank("prompt_tokens", prompt_tokens, 2)
  num_prompts, prompt_len = prompt_tokens.shape
  batch = num_prompts * samples_per_prompt
  steps = max_new_tokens
  pad, eos = config.pad_id, config.eos_id

  checks.at_least("cache_block", cache_block, 0)
  # Step t < steps - 1 feeds its token to the model (slot t of the responses'
  # cache); the steps run in phases, phase k until ends[k], with a cache of
  # ends[k] slots.
  # One token (steps = 1) is drawn from the prompt's logits: no phase at all.
  block = cache_block or steps
  ends = (list(range(block, steps - 1, block)) + [steps - 1]) if steps > 1 else []

  if prompt_mask is None:
    prompt_mask = prompt_tokens != pad
  checks.same_shape("prompt_tokens", prompt_tokens, "prompt_mask", prompt_mask)
  outputs = model_lib.forward_cached(
      params, config, prompt_tokens, attention.init_cache(config, num_prompts, prompt_len),
      prompt_mask, return_features)
  # The prompts' cache is the prefix of all their samples' (never copied to
  # them); the samples' own cache holds their response tokens.
  prefix = outputs[1]
  cache = attention.continuation_cache(config, prefix, samples_per_prompt, (ends or [0])[0])
  last_rows = lambda x: jnp.repeat(x[:, -1], samples_per_prompt, axis=0)
  # `head` is what the next token is drawn from: (logits f32[B * N, V], and the
  # features f32[B * N, d] they were computed from, or None).
  head = (last_rows(outputs[0]), last_rows(outputs[2]) if return_features else None)
  done = jnp.zeros((batch,), bool)

  if _is_key_batch(key):
    checks.axis_size("key", key, 0, num_prompts, "prompts")
    uniforms = prompt_uniforms(key, steps, samples_per_prompt)
  else:
    uniforms = jax.random.uniform(key, (steps, batch))

  def choose(t, head, done):
    """The token of step t, its log-prob, whether it is real, the new done; and
    the features it was drawn from when they are returned."""
    logits, features = head
    logp = sampling_logprobs(logits, temperature, top_k, top_p)
    token = inverse_cdf_sample(logp, uniforms[t])
    token_logp = jnp.take_along_axis(logp, token[:, None], axis=-1)[:, 0]
    token = jnp.where(done, pad, token).astype(jnp.int32)
    token_logp = jnp.where(done, 0.0, token_logp)
    kept = (features,) if return_features else ()
    return (token, token_logp, ~done) + kept, done | (token == eos)

  def advance(token, cache):
    outputs = model_lib.forward_cached(params, config, token[:, None], cache,
                                       return_features=return_features, prefix=prefix)
    return (outputs[0][:, 0], outputs[2][:, 0] if return_features else None), outputs[1]

  starts = [0] + ends[:-1]
  if not early_stop:
    def scan_body(carry, t):
      head, cache, done = carry
      out, done = choose(t, head, done)
      head, cache = advance(out[0], cache)
      return (head, cache, done), out

    phase_outs = []
    for start, end in zip(starts, ends):
      cache = attention.grow_cache(cache, end)
      (head, cache, done), outs = jax.lax.scan(
          scan_body, (head, cache, done), jnp.arange(start, end))
      phase_outs.append(outs)
    last = choose(steps - 1, head, done)[0]
    if not phase_outs:
      return Rollout(*(y[:, None] for y in last))
    outs = [jnp.concatenate(x, axis=0) for x in zip(*phase_outs)]
    return Rollout(*(jnp.concatenate([jnp.swapaxes(x, 0, 1), y[:, None]], axis=1)
                     for x, y in zip(outs, last)))

  def write(buffers, t, values):
    return tuple(jax.lax.dynamic_update_slice(b, v[:, None], (0, t) + (0,) * (b.ndim - 2))
                 for b, v in zip(buffers, values))

  buffers = (jnp.full((batch, steps), pad, jnp.int32),
             jnp.zeros((batch, steps), jnp.float32),
             jnp.zeros((batch, steps), bool))
  if return_features:
    buffers += (jnp.zeros((batch, steps) + head[1].shape[1:], head[1].dtype),)

  def running(done):
    running = ~jnp.all(done)
    if axis_name is not None:
      running = jax.lax.psum(running.astype(jnp.int32), axis_name) > 0
    return running

  def body(carry):
    t, head, cache, done, buffers = carry
    out, done = choose(t, head, done)
    buffers = write(buffers, t, out)
    head, cache = advance(out[0], cache)
    return t + 1, head, cache, done, buffers

  t = jnp.zeros((), jnp.int32)
  for end in ends:
    cache = attention.grow_cache(cache, end)
    t, head, cache, done, buffers = jax.lax.while_loop(
        lambda carry, end=end: (carry[0] < end) & running(carry[3]), body,
        (t, head, cache, done, buffers))
  buffers = write(buffers, t, choose(t, head, done)[0])
  return Rollout(*buffers)


def make_sampler(config: model_lib.TransformerConfig, max_new_tokens: int, *,
                 temperature: Scalar = 1.0, top_k: Scalar = 0,
                 top_p: Scalar = 1.0, samples_per_prompt: int = 1,
                 early_stop: bool = True):
  """A jitted `fn(params, key, prompt_tokens) -> Rollout` for a fixed setting."""

  @jax.jit
  def sampler(params, key, prompt_tokens):
    return sample(params, config, key, prompt_tokens,
                  max_new_tokens=max_new_tokens, temperature=temperature,
                  top_k=top_k, top_p=top_p, samples_per_prompt=samples_per_prompt,
                  early_stop=early_stop)

  return sampler
