"""Tests of polyepo.sampling against teacher forcing and hand-worked values."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.stats

from polyepo.policy import model, sampling

CONFIG = model.TransformerConfig(
    vocab_size=16, width=32, num_layers=2, num_heads=4, num_kv_heads=2,
    max_len=32, pad_id=0, eos_id=1)
PARAMS = model.init_params(jax.random.key(0), CONFIG)
B, P, T = 8, 5, 12

# Knobs (temperature, top_k, top_p) are traced here: one compilation serves
# every setting. `make_sampler` (below) specialises on Python values instead.
sample = jax.jit(sampling.sample,
                 static_argnames=("config", "max_new_tokens", "early_stop",
                                  "samples_per_prompt", "return_features", "cache_block"))
SAMPLER = sampling.make_sampler(CONFIG, T)  # static temperature 1
forward = jax.jit(model.forward, static_argnums=1)
sequence_logprobs = jax.jit(model.sequence_logprobs, static_argnums=1)


def _prompts(key=jax.random.key(1), batch=B, pads=(0, 1, 4, 0, 2, 0, 3, 0)):
  """Prompts of real tokens (never EOS), row b left-padded with pads[b]."""
  tokens = np.array(jax.random.randint(key, (batch, P), 2, CONFIG.vocab_size))
  for b in range(batch):
    tokens[b, :pads[b % len(pads)]] = CONFIG.pad_id
  return jnp.asarray(tokens)


def _rollout(key=jax.random.key(2), prompts=None, **knobs):
  prompts = _prompts() if prompts is None else prompts
  return sample(PARAMS, CONFIG, key, prompts, max_new_tokens=T,
                **{"temperature": 1.0, "top_k": 0, "top_p": 1.0, **knobs})


def _first_eos(tokens, mask):
  """Index of the first EOS per row, or T if none."""
  is_eos = (tokens == CONFIG.eos_id) & mask
  return np.where(is_eos.any(1), is_eos.argmax(1), tokens.shape[1])


def test_logprobs_equal_teacher_forced_logprobs():
  prompts = _prompts()
  r = SAMPLER(PARAMS, jax.random.key(3), prompts)
  assert r.tokens.shape == r.logprobs.shape == r.mask.shape == (B, T)
  assert r.tokens.dtype == jnp.int32 and r.mask.dtype == jnp.bool_
  assert not r.mask.all() and r.mask.all(1).any()  # some rows end early
  ref = sequence_logprobs(PARAMS, CONFIG, prompts, r.tokens, r.mask)
  np.testing.assert_allclose(r.logprobs, ref, atol=1e-4)
  assert (np.asarray(r.logprobs)[np.asarray(r.mask)] < 0).all()


def test_features_are_the_teacher_forced_features_each_token_was_drawn_from():
  """Rollout.features[r, t] is the hidden state the teacher-forced pass reads
  token t's logits from (the state prompt + response[:t]), with N samples per
  prompt and in both loops; without return_features there are none."""
  prompts = _prompts(batch=4)
  for early_stop in (True, False):
    r = sample(PARAMS, CONFIG, jax.random.key(3), prompts, max_new_tokens=T,
               samples_per_prompt=2, early_stop=early_stop, return_features=True)
    assert r.features.shape == (8, T, CONFIG.width) and r.features.dtype == jnp.float32
    logp, ref = model.sequence_logprobs_and_features(PARAMS, CONFIG, prompts, r.tokens, r.mask,
                                                     samples_per_prompt=2)
    mask = np.asarray(r.mask)
    assert not mask.all() and mask.sum() > 30
    np.testing.assert_allclose(np.asarray(r.features)[mask], np.asarray(ref)[mask], atol=1e-4)
    np.testing.assert_allclose(r.logprobs, logp, atol=1e-4)
  assert _rollout().features is None


def test_samples_per_prompt_equals_repeated_prompts():
  """A prompt prefilled once for its N samples gives the rollouts of the prompt
  repeated N times (same key): rows b * N + j, tokens equal, log-probs close."""
  prompts = _prompts(batch=4)
  once = sample(PARAMS, CONFIG, jax.random.key(5), prompts, max_new_tokens=T,
                samples_per_prompt=3)
  each = sample(PARAMS, CONFIG, jax.random.key(5), jnp.repeat(prompts, 3, axis=0),
                max_new_tokens=T)
  assert once.tokens.shape == (12, T)
  np.testing.assert_array_equal(once.tokens, each.tokens)
  np.testing.assert_array_equal(once.mask, each.mask)
  np.testing.assert_allclose(once.logprobs, each.logprobs, atol=1e-5)
  assert len({tuple(r) for r in np.asarray(once.tokens[:3])}) > 1  # samples differ


def test_eos_handling():
  r = jax.tree.map(np.asarray, _rollout(jax.random.key(4)))
  eos = _first_eos(r.tokens, r.mask)
  assert (eos < T).any() and (eos == T).any()
  for b in range(B):
    np.testing.assert_array_equal(r.mask[b], np.arange(T) <= eos[b])
    assert (r.tokens[b, eos[b] + 1:] == CONFIG.pad_id).all()
    assert (r.logprobs[b, eos[b] + 1:] == 0).all()
    assert (r.tokens[b, :eos[b]] != CONFIG.eos_id).all()


def test_left_padding_gives_same_samples():
  prompts = _prompts(pads=(0,))
  padded = jnp.concatenate(
      [jnp.full((B, 3), CONFIG.pad_id, jnp.int32), prompts], axis=1)
  a = _rollout(jax.random.key(5), prompts)
  b = _rollout(jax.random.key(5), padded)
  np.testing.assert_array_equal(a.tokens, b.tokens)
  np.testing.assert_array_equal(a.mask, b.mask)
  np.testing.assert_allclose(a.logprobs, b.logprobs, atol=1e-5)


def test_fixed_key_reproduces_and_keys_differ():
  a, b = _rollout(jax.random.key(6)), _rollout(jax.random.key(6))
  c = _rollout(jax.random.key(7))
  np.testing.assert_array_equal(a.tokens, b.tokens)
  np.testing.assert_array_equal(a.logprobs, b.logprobs)
  assert (np.asarray(a.tokens) != np.asarray(c.tokens)).any()


@pytest.mark.parametrize("raw", [False, True])
def test_a_key_per_prompt_draws_each_prompt_alone(raw):
  """With keys[B], prompt b's N samples are those of prompt b sampled alone with
  keys[b] (typed or raw uint32 keys); a wrong number of keys is named."""
  prompts = _prompts(batch=4)
  keys = jax.random.split(jax.random.key(8), 4)
  if raw:
    keys = jax.random.key_data(keys)
  batch = sample(PARAMS, CONFIG, keys, prompts, max_new_tokens=T, samples_per_prompt=3)
  for b in range(4):
    alone = sample(PARAMS, CONFIG, keys[b], prompts[b:b + 1], max_new_tokens=T,
                   samples_per_prompt=3)
    np.testing.assert_array_equal(batch.tokens[3 * b:3 * b + 3], alone.tokens)
    np.testing.assert_allclose(batch.logprobs[3 * b:3 * b + 3], alone.logprobs, atol=1e-5)
  assert len({tuple(r) for r in np.asarray(batch.tokens[:3])}) > 1  # samples differ
  with pytest.raises(ValueError, match=r"key must have 4 \(prompts\) entries on axis 0"):
    sample(PARAMS, CONFIG, keys[:3], prompts, max_new_tokens=T)


def test_early_stop_equals_fixed_length():
  # A 4-token vocabulary: EOS is likely, so every row stops well before 24.
  config = model.TransformerConfig(
      vocab_size=4, width=16, num_layers=1, num_heads=2, max_len=32)
  params = model.init_params(jax.random.key(0), config)
  prompts = jax.random.randint(jax.random.key(1), (B, 3), 2, 4)
  kw = dict(max_new_tokens=24)
  a = sampling.make_sampler(config, early_stop=True, **kw)(
      params, jax.random.key(8), prompts)
  b = sampling.make_sampler(config, early_stop=False, **kw)(
      params, jax.random.key(8), prompts)
  assert int(a.mask.sum(1).max()) < 20  # the while loop did exit early
  for x, y in zip(a, b):
    np.testing.assert_array_equal(x, y)


@pytest.mark.parametrize("early_stop", [True, False])
def test_a_growing_cache_gives_the_same_rollout(early_stop):
  """The cache grown by 1, 3 or 5 slots at a time, or in one phase (cache_block
  >= T), gives the rollout of a cache allocated at full length (cache_block=0):
  tokens, masks, log-probs and features, with N samples per prompt."""
  prompts = _prompts(batch=4)
  run = lambda block: sample(PARAMS, CONFIG, jax.random.key(16), prompts, max_new_tokens=T,
                             samples_per_prompt=2, early_stop=early_stop,
                             return_features=True, cache_block=block)
  full = run(0)
  assert not full.mask.all() and full.mask[:, -1].any()  # rows stop early and late
  for block in (1, 3, 5, T):
    grown = run(block)
    np.testing.assert_array_equal(grown.tokens, full.tokens)
    np.testing.assert_array_equal(grown.mask, full.mask)
    np.testing.assert_allclose(grown.logprobs, full.logprobs, atol=1e-5)
    np.testing.assert_allclose(grown.features, full.features, atol=1e-5)


def _loop_cache_capacities(fn, *args, rows=B * CONFIG.num_kv_heads):
  """Capacities S of the key and value caches [B * KV, S, D] carried by the loops
  of fn's jaxpr."""
  found = set()
  cache = lambda shape: len(shape) == 3 and (shape[0], shape[2]) == (rows, CONFIG.head_dim)

  def walk(jaxpr):
    for eqn in jaxpr.eqns:
      if eqn.primitive.name in ("while", "scan"):
        found.update(v.aval.shape[1] for v in eqn.invars if cache(v.aval.shape))
      for param in eqn.params.values():
        for sub in param if isinstance(param, (tuple, list)) else (param,):
          if isinstance(sub, jax.extend.core.ClosedJaxpr):
            walk(sub.jaxpr)
          elif isinstance(sub, jax.extend.core.Jaxpr):
            walk(sub)

  walk(jax.make_jaxpr(fn)(*args).jaxpr)
  return found


@pytest.mark.parametrize("early_stop", [True, False])
def test_the_cache_grows_by_blocks(early_stop):
  """Decoding T = 12 tokens with cache_block=4 runs three loops over response
  caches of 4, 8 and 11 slots (the last token is never fed back), where
  cache_block=0 runs one over all 11; each loop also reads the P = 5 prompt
  slots, a prefix that is never copied or grown."""
  prompts = _prompts()
  for block, capacities in ((4, {P, 4, 8, T - 1}), (0, {P, T - 1})):
    fn = lambda key, block=block: sampling.sample(
        PARAMS, CONFIG, key, prompts, max_new_tokens=T, early_stop=early_stop,
        cache_block=block)
    assert _loop_cache_capacities(fn, jax.random.key(0)) == capacities


def test_a_negative_cache_block_is_named():
  with pytest.raises(ValueError, match="cache_block"):
    sampling.sample(PARAMS, CONFIG, jax.random.key(0), _prompts(), max_new_tokens=T,
                    cache_block=-1)


def _greedy_reference(prompts):
  """Greedy decoding by repeated full forward passes (no cache), numpy loop."""
  batch = prompts.shape[0]
  tokens = np.concatenate(
      [np.asarray(prompts), np.full((batch, T), CONFIG.pad_id)], 1)
  mask = tokens != CONFIG.pad_id
  done = np.zeros(batch, bool)
  for t in range(T):
    # Fixed shapes (one compilation): positions >= P + t are masked out and,
    # by causality, never read by position P - 1 + t.
    logits = forward(PARAMS, CONFIG, jnp.asarray(tokens), jnp.asarray(mask))
    nxt = np.where(done, CONFIG.pad_id, np.asarray(logits[:, P - 1 + t]).argmax(-1))
    tokens[:, P + t], mask[:, P + t] = nxt, True
    done |= nxt == CONFIG.eos_id
  return tokens[:, P:]


@pytest.mark.parametrize("knobs", [
    dict(temperature=0.0), dict(temperature=1e-6), dict(top_k=1),
    dict(top_p=1e-3)])
def test_greedy_limits_match_argmax_decoding(knobs):
  prompts = _prompts()
  r = _rollout(jax.random.key(9), prompts, **knobs)
  np.testing.assert_array_equal(r.tokens, _greedy_reference(prompts))
  np.testing.assert_allclose(r.logprobs, 0.0, atol=1e-5)  # a point mass


@pytest.mark.parametrize("early_stop", [True, False])
def test_one_token_is_drawn_from_the_prompts_logits(early_stop):
  """max_new_tokens=1 decodes nothing: greedily, each row's token is the
  argmax of its prompt's last logits (full forward pass, no cache); sampled,
  its log-prob is that token's under those logits."""
  prompts = _prompts()
  last = jax.nn.log_softmax(forward(PARAMS, CONFIG, prompts, prompts != CONFIG.pad_id)[:, -1])
  greedy = sample(PARAMS, CONFIG, jax.random.key(3), prompts, max_new_tokens=1,
                  early_stop=early_stop, temperature=0.0, top_k=0, top_p=1.0)
  np.testing.assert_array_equal(greedy.tokens[:, 0], np.argmax(last, -1))
  r = sample(PARAMS, CONFIG, jax.random.key(3), prompts, max_new_tokens=1,
             early_stop=early_stop, temperature=1.0, top_k=0, top_p=1.0)
  assert r.tokens.shape == r.logprobs.shape == r.mask.shape == (B, 1)
  np.testing.assert_allclose(r.logprobs[:, 0],
                             np.take_along_axis(last, r.tokens, -1)[:, 0], atol=1e-5)
  assert r.mask.all()


def test_static_temperature_zero_is_greedy():
  prompts = _prompts()
  r = sampling.make_sampler(CONFIG, T, temperature=0.0)(
      PARAMS, jax.random.key(10), prompts)
  np.testing.assert_array_equal(r.tokens, _greedy_reference(prompts))


def _teacher_logits(prompts, r):
  """Logits f32[B, T, V] at each response position, by full forward pass."""
  tokens = jnp.concatenate([prompts, r.tokens], 1)
  mask = jnp.concatenate([prompts != CONFIG.pad_id, r.mask], 1)
  return np.asarray(forward(PARAMS, CONFIG, tokens, mask))[:, P - 1:-1]


def _definition_probs(logits, temperature=1.0, top_k=0, top_p=1.0):
  """The sampling distribution f32[..., V] written from its definition, in numpy:
  softmax(z / τ) restricted to the k largest, renormalised, then to the smallest
  top set whose mass reaches top_p (a token is kept while the mass before it is
  < top_p), renormalised."""
  z = np.asarray(logits, np.float64) / temperature
  vocab = z.shape[-1]
  k = top_k if 0 < top_k < vocab else vocab
  order = np.argsort(-z, axis=-1, kind="stable")
  zs = np.take_along_axis(z, order, -1)
  zs[..., k:] = -np.inf
  p = np.exp(zs - zs[..., :1])
  p /= p.sum(-1, keepdims=True)
  kept = (np.cumsum(p, -1) - p) < top_p
  kept[..., 0] = True
  p = np.where(kept, p, 0.0)
  p /= p.sum(-1, keepdims=True)
  out = np.zeros_like(p)
  np.put_along_axis(out, order, p, -1)
  return out


@pytest.mark.parametrize("knobs", [
    dict(top_k=3), dict(top_p=0.5), dict(top_k=5, top_p=0.6, temperature=0.7)])
def test_top_k_top_p_stay_in_allowed_set(knobs):
  checked = 0
  for seed in range(4):
    prompts = _prompts(jax.random.key(100 + seed))
    r = _rollout(jax.random.key(200 + seed), prompts, **knobs)
    probs = _definition_probs(_teacher_logits(prompts, r), **knobs)
    for b, t in zip(*np.nonzero(np.asarray(r.mask))):
      tok = int(r.tokens[b, t])
      assert probs[b, t, tok] > 0, (b, t)
      np.testing.assert_allclose(r.logprobs[b, t], np.log(probs[b, t, tok]), atol=1e-4)
      checked += 1
  assert checked > 200


# -- the sampled distribution, by chi-square tests -----------------------------
# Seeds are fixed, so each test is deterministic; the bound P_MIN on the p-value
# is loose for a right sampler and far above what a wrong one reaches (samplers
# that reuse uniforms across steps or rows, ignore the temperature, or misplace
# the nucleus give p-values below 1e-30 here).
P_MIN = 1e-4


def _pit(r, probs, seed=0, given_not_eos=False):
  """Randomised probability integral transform of each sampled token, f64[B, T]
  (nan after EOS): F(token - 1) + v p(token), v ~ U(0, 1) independent. It is
  U(0, 1), independently across rows and steps, iff every token is drawn from
  `probs` given its prefix, whatever order a sampler walks the vocabulary in.

  given_not_eos: the PIT under `probs` conditioned on "not EOS" (nan at EOS).
  Step t + 1 exists only where step t was not EOS, so pairs (t, t + 1) are
  compared with this form of step t.
  """
  tokens = np.asarray(r.tokens)
  mask = np.asarray(r.mask)
  if given_not_eos:
    probs = probs.copy()
    probs[..., CONFIG.eos_id] = 0.0
    probs /= probs.sum(-1, keepdims=True)
    mask = mask & (tokens != CONFIG.eos_id)
  p_token = np.take_along_axis(probs, tokens[..., None], -1)[..., 0]
  below = np.cumsum(probs, -1) - probs
  f_lo = np.take_along_axis(below, tokens[..., None], -1)[..., 0]
  v = np.random.default_rng(seed).uniform(size=tokens.shape)
  assert (p_token[mask] > 0).all(), "a token outside the support was sampled"
  return np.where(mask, f_lo + v * p_token, np.nan)


def _uniform_pvalue(u, bins=10):
  u = u[~np.isnan(u)]
  assert u.size >= 50 * bins, u.size
  return scipy.stats.chisquare(np.histogram(u, bins=bins, range=(0, 1))[0]).pvalue


def _pairs_pvalue(a, b, bins=4):
  """Chi-square of (a, b) against independent uniforms on a bins x bins grid."""
  keep = ~(np.isnan(a) | np.isnan(b))
  assert keep.sum() >= 50 * bins * bins, keep.sum()
  counts = np.histogram2d(a[keep], b[keep], bins=bins, range=[[0, 1], [0, 1]])[0]
  return scipy.stats.chisquare(counts.ravel()).pvalue


def test_first_token_frequencies_match_the_softmax():
  """Rows sharing a prompt draw their first token from the model's softmax."""
  rows = 8000
  prompts = jnp.concatenate([jnp.tile(_prompts()[i:i + 1], (rows // 2, 1)) for i in (0, 2)])
  r = _rollout(jax.random.key(20), prompts)
  probs = _definition_probs(_teacher_logits(prompts, r)[:, 0])
  for half in (slice(0, rows // 2), slice(rows // 2, rows)):
    counts = np.bincount(np.asarray(r.tokens[half, 0]), minlength=CONFIG.vocab_size)
    expected = probs[half][0] * (rows // 2)
    assert np.allclose(probs[half], probs[half][:1], atol=1e-5)  # one prompt per half
    assert expected.min() > 5  # the chi-square approximation holds
    assert scipy.stats.chisquare(counts, expected).pvalue > P_MIN


KNOBS = [dict(), dict(temperature=0.7), dict(temperature=1.6), dict(top_k=5),
         dict(top_p=0.8), dict(top_k=6, top_p=0.7, temperature=0.8)]


@pytest.mark.parametrize("knobs", KNOBS, ids=[str(k) or "default" for k in KNOBS])
def test_tokens_follow_the_sampling_distribution_per_step_and_independently(knobs):
  """Per step over 2,000 rows, the PIT of each token is uniform; (step t,
  step t + 1) of a row and (row b, row b + 1) at a step are independent."""
  rows = 2000
  prompts = _prompts(jax.random.key(21), batch=rows)
  r = _rollout(jax.random.key(22), prompts, **knobs)
  probs = _definition_probs(_teacher_logits(prompts, r), **knobs)
  u = _pit(r, probs)
  for t in range(4):  # later steps hold fewer rows: EOS has ended some
    assert _uniform_pvalue(u[:, t]) > P_MIN, t
  u_not_eos = _pit(r, probs, given_not_eos=True)
  assert _pairs_pvalue(u_not_eos[:, :-1].ravel(), u[:, 1:].ravel()) > P_MIN
  assert _pairs_pvalue(u[:-1].ravel(), u[1:].ravel()) > P_MIN


def test_each_row_follows_its_own_distribution():
  """Row b over 300 keys: its PIT (all steps) is uniform for every b."""
  prompts = _prompts()
  keys = jax.random.split(jax.random.key(23), 300)
  r = jax.vmap(lambda k: _rollout(k, prompts))(keys)  # [keys, B, T]
  flat = jax.tree.map(lambda x: x.reshape((-1,) + x.shape[2:]), r)
  tiled = jnp.tile(prompts, (keys.shape[0], 1))
  u = _pit(flat, _definition_probs(_teacher_logits(tiled, flat))).reshape(r.tokens.shape)
  for b in range(B):
    assert _uniform_pvalue(u[:, b].ravel()) > P_MIN, b


def test_sampling_logprobs_hand_worked():
  logits = jnp.log(jnp.array([[0.5, 0.3, 0.15, 0.05]]))
  fn = jax.jit(sampling.sampling_logprobs)
  cases = [
      (dict(top_p=0.7), [0.625, 0.375, 0, 0]),
      (dict(top_k=3), [0.5 / 0.95, 0.3 / 0.95, 0.15 / 0.95, 0]),
      (dict(top_k=3, top_p=0.6), [0.625, 0.375, 0, 0]),
      (dict(top_k=2, temperature=0.5), [25 / 34, 9 / 34, 0, 0]),
      (dict(temperature=0.0), [1, 0, 0, 0]),
      (dict(), [0.5, 0.3, 0.15, 0.05]),
  ]
  for knobs, probs in cases:
    for f in (sampling.sampling_logprobs, fn):  # static and traced knobs
      np.testing.assert_allclose(jnp.exp(f(logits, **knobs))[0], probs,
                                 atol=1e-6, err_msg=str(knobs))


def test_inverse_cdf_sample_frequencies():
  n = 40_000
  logp = jnp.log(jnp.tile(jnp.array([0.0, 0.5, 0.3, 0.2, 0.0]), (n, 1)))
  u = jax.random.uniform(jax.random.key(13), (n,))
  tokens = np.asarray(jax.jit(sampling.inverse_cdf_sample)(logp, u))
  freq = np.bincount(tokens, minlength=5) / n
  np.testing.assert_allclose(freq, [0, 0.5, 0.3, 0.2, 0], atol=0.01)
  edges = sampling.inverse_cdf_sample(logp[:2], jnp.array([0.0, 1 - 1e-8]))
  np.testing.assert_array_equal(edges, [1, 3])


def test_jit_vmap_over_keys_and_temperatures():
  prompts = _prompts()
  keys = jax.random.split(jax.random.key(14), 3)
  batched = jax.jit(jax.vmap(SAMPLER, in_axes=(None, 0, None)))(
      PARAMS, keys, prompts)
  for i in range(3):
    single = SAMPLER(PARAMS, keys[i], prompts)
    np.testing.assert_array_equal(batched.tokens[i], single.tokens)
    np.testing.assert_allclose(batched.logprobs[i], single.logprobs, atol=1e-5)

  def at_temperature(temperature):
    return sampling.sample(PARAMS, CONFIG, jax.random.key(15), prompts,
                           max_new_tokens=T, temperature=temperature)

  swept = jax.jit(jax.vmap(at_temperature))(jnp.array([0.0, 1.0]))
  np.testing.assert_array_equal(swept.tokens[0], _greedy_reference(prompts))
  warm = _rollout(jax.random.key(15), prompts)
  np.testing.assert_array_equal(swept.tokens[1], warm.tokens)


def test_prompts_of_the_wrong_rank_are_named():
  with pytest.raises(ValueError, match=r"prompt_tokens must have rank 2, got shape \(5,\)"):
    sampling.sample(PARAMS, CONFIG, jax.random.key(0), jnp.ones((P,), jnp.int32),
                    max_new_tokens=T)
