"""Vine sampling: reset to states of sampled responses, branch there.

This is case 2 of §6.1 of Ibn Hamid et al., *Set Reinforcement Learning: Principles and
Approaches* (the set RL note). For a language policy the state s_t of a response y is
the prompt x and the response's first t tokens; "resetting the environment to s_t" is
continuing the prefix y[:t]. Poly-PPO branches at the **rollout states** chosen here, at step
boundaries of the sampled traces (`Env.step_boundaries`: where a new reasoning
step starts), as VinePPO (Kazemnejad et al., 2025) branches at reasoning steps.

  states = choose_states(key, boundaries, num_states, "uniform")  # per prompt
  vines = sample_vines(params, model_config, key, prompts, roots, states,
                       samples=N_v, temperature=1.0)              # batched
  window = window_mask(boundaries, start, window, mask)           # per response

A vine is stored as a full response: the root's prefix y[:t] (context, not
trained: the vine did not sample it) followed by the continuation, cut at the
response budget T like any response, so the environment scores it as it scores
any response. All vines of all states of all prompts are drawn in ONE call of
`polyepo.sampling.sample`: each state's prefix (prompt + y[:t], right-aligned)
is prefilled once and its KV cache copied to its N_v vines.

Each rollout state's set holds its N_v vines only, not the root response it
was chosen from: the choice of (response, boundary) depends on the whole
response (how many boundaries it has), so the root's own continuation is not a
draw from π(· | s_t), while the vines are (tests/rl/test_vines.py checks it).
"""

import dataclasses
from typing import NamedTuple, Optional, Tuple

import jax
import jax.numpy as jnp

from polyepo import checks
from polyepo.policy import sampling
from polyepo.policy import model as model_lib

SELECTIONS = ("uniform", "early")
"""How rollout states are drawn among a prompt's step boundaries:
uniform: every boundary of every root response equally likely;
early: a boundary that starts step k+1 of its response has weight 2^-(k-1), so
the first steps, where strategies branch, are chosen most."""


class RolloutStates(NamedTuple):
  """K chosen rollout states of one prompt (besides the prompt itself).

  Attributes:
    root: i32[K], which of the prompt's N root responses the state lies on.
    position: i32[K], t: the state is the prompt plus root[:t].
    valid: bool[K], False for padding when the responses have fewer than K
      boundaries (then root = position = 0).
  """
  root: jax.Array
  position: jax.Array
  valid: jax.Array


def choose_states(key: jax.Array, boundaries: jax.Array, num_states: int,
                  selection: str = "uniform") -> RolloutStates:
  """Draws `num_states` distinct step boundaries of one prompt's N responses.

  Sampling without replacement with probability proportional to the weights of
  `SELECTIONS` (Gumbel top-k: successive draws, each proportional to the
  weights of the boundaries not yet drawn).

  Args:
    key: PRNG key.
    boundaries: bool[N, T], the step boundaries of the N root responses
      (`Env.step_boundaries`).
    num_states: K >= 1 (static).
    selection: one of SELECTIONS (static).

  Returns:
    RolloutStates of shape [K]; fewer than K boundaries leave the rest invalid.
  """
  checks.rank("boundaries", boundaries, 2)
  checks.one_of("selection", selection, SELECTIONS)
  num_roots, length = boundaries.shape
  if not 1 <= num_states <= num_roots * length:
    raise ValueError(f"num_states must be in 1..N*T = {num_roots * length}, got {num_states}.")
  if selection == "uniform":
    log_weight = jnp.zeros(boundaries.shape, jnp.float32)
  else:
    ordinal = jnp.cumsum(boundaries, axis=1)      # 1 at a response's first boundary
    log_weight = -jnp.log(2.0) * (ordinal - 1).astype(jnp.float32)
  gumbel = jax.random.gumbel(key, boundaries.shape)
  scores = jnp.where(boundaries, log_weight + gumbel, -jnp.inf).reshape(-1)
  top, index = jax.lax.top_k(scores, num_states)
  valid = top > -jnp.inf
  index = jnp.where(valid, index, 0)
  return RolloutStates(root=(index // length).astype(jnp.int32),
                       position=(index % length).astype(jnp.int32), valid=valid)


def prefix_prompts(prompt: jax.Array, roots: jax.Array, states: RolloutStates,
                   pad_id: int) -> Tuple[jax.Array, jax.Array]:
  """The context of each rollout state, right-aligned for the sampler.

  Args:
    prompt: i32[P], left-padded.
    roots: i32[N, T], the prompt's root responses.
    states: RolloutStates of shape [K].
    pad_id: the padding token.

  Returns:
    (tokens i32[K, P + T]: pad, then the prompt, then root[:position] (the
     prompt alone at position 0); mask bool[K, P + T]: the real tokens, which
     include every token of the prefix: a policy can sample the pad token, and
     a vine must continue the prefix the root actually had).
  """
  checks.rank("prompt", prompt, 1)
  checks.rank("roots", roots, 2)
  length = roots.shape[1]

  def one(root, position):
    in_prefix = jnp.arange(length) < position
    prefix = jnp.where(in_prefix, roots[root], pad_id)
    shift = lambda x: jnp.roll(x, length - position)
    return (shift(jnp.concatenate([prompt, prefix])),
            shift(jnp.concatenate([prompt != pad_id, in_prefix])))

  return jax.vmap(one)(states.root, states.position)


class Vines(NamedTuple):
  """Continuations of rollout states, each stored as a full response.

  Shapes [B, K, N_v, T] (start: [B, K, N_v]) for B prompts, K states, N_v vines.

  Attributes:
    tokens: i32: the root's prefix, then the continuation, pad after EOS.
    mask: bool: real tokens (prefix and continuation up to EOS): what the
      policy reads.
    loss_mask: bool: the continuation's real tokens of valid states: what the
      vine sampled, and trains.
    logprobs: f32: sampling log-probs of the continuation tokens, 0 elsewhere.
    start: i32: the state's position t (the first continuation token).
    features: f32[B, K, N_v, T, d] with return_features, else None: the
      sampler's features (`sampling.Rollout.features`) at the continuation's
      positions, 0 before the state.
  """
  tokens: jax.Array
  mask: jax.Array
  loss_mask: jax.Array
  logprobs: jax.Array
  start: jax.Array
  features: Optional[jax.Array] = None


def _shift(x, start):
  """x moved `start` positions later along axis 0: x[t - start] at t >= start
  (x[0] before, to be masked by the caller)."""
  t = jnp.arange(x.shape[0])
  return x[jnp.clip(t - start, 0, x.shape[0] - 1)]


def _splice(prefix, start, cont_tokens, cont_mask, cont_logp, pad_id):
  """One vine: prefix[:start] then the continuation, cut at T. All [T] but start."""
  after = jnp.arange(prefix.shape[0]) >= start
  cont_real = after & _shift(cont_mask, start)
  tokens = jnp.where(cont_real, _shift(cont_tokens, start), jnp.where(after, pad_id, prefix))
  return tokens, ~after | cont_real, cont_real, jnp.where(cont_real, _shift(cont_logp, start), 0.0)


def _splice_features(start, cont_features):
  """One vine's features: 0 before start, then the continuation's. f32[T, d]."""
  after = jnp.arange(cont_features.shape[0]) >= start
  return jnp.where(after[:, None], _shift(cont_features, start), 0.0)


def sample_vines(params, model_config: model_lib.TransformerConfig, key: jax.Array,
                 prompts: jax.Array, roots: jax.Array, states: RolloutStates, *,
                 samples: int, temperature=1.0, axis_name: Optional[str] = None,
                 return_features: bool = False) -> Vines:
  """Samples N_v continuations of every rollout state, in one sampler call.

  Args:
    params: policy parameters.
    model_config: the policy's TransformerConfig.
    key: PRNG key.
    prompts: i32[B, P], left-padded.
    roots: i32[B, N, T], the root responses.
    states: RolloutStates of shape [B, K].
    samples: N_v, continuations per state (static).
    temperature: sampling temperature.
    axis_name: as for `sampling.sample` (seeds vmapped under a name).
    return_features: also return `Vines.features` (static).

  Returns:
    Vines of shape [B, K, N_v, T]. A continuation is sampled with the full
    budget T and cut at T - t, so a vine, like a root response, has at most T
    tokens.
  """
  checks.rank("prompts", prompts, 2)
  checks.rank("roots", roots, 3)
  num_prompts, prompt_len = prompts.shape
  length = roots.shape[2]
  num_states = states.root.shape[1]
  pad = model_config.pad_id
  contexts, context_mask = jax.vmap(lambda p, r, s: prefix_prompts(p, r, s, pad))(
      prompts, roots, states)
  # The context has P + T slots, left-padded: its real tokens (and so the rotary
  # positions) never pass P + T, but the cache needs room for the pad slots.
  config = dataclasses.replace(model_config,
                               max_len=max(model_config.max_len, prompt_len + 2 * length))
  rows_of = lambda x: x.reshape(-1, prompt_len + length)
  out = sampling.sample(params, config, key, rows_of(contexts), max_new_tokens=length,
                        temperature=temperature, samples_per_prompt=samples,
                        axis_name=axis_name, return_features=return_features,
                        prompt_mask=rows_of(context_mask))
  shape = (num_prompts, num_states, samples)
  prefixes = jnp.take_along_axis(roots, states.root[:, :, None], axis=1)   # [B, K, T]
  prefixes = jnp.broadcast_to(prefixes[:, :, None], shape + (length,))
  start = jnp.broadcast_to(states.position[:, :, None], shape)
  valid = jnp.broadcast_to(states.valid[:, :, None], shape)
  rows = lambda x: x.reshape(shape + x.shape[1:])
  splice = jax.vmap(lambda p, s, t, m, l: _splice(p, s, t, m, l, pad))
  flat = lambda x: x.reshape((-1,) + x.shape[3:])
  tokens, mask, loss_mask, logprobs = splice(flat(prefixes), flat(start), out.tokens, out.mask,
                                             out.logprobs)
  loss_mask = loss_mask & flat(valid)[:, None]
  features = None
  if return_features:
    features = rows(jax.vmap(_splice_features)(flat(start), out.features))
  return Vines(rows(tokens), rows(mask), rows(loss_mask), rows(logprobs), start, features)


def context_logprobs(root_logprobs: jax.Array, states: RolloutStates,
                     vines: Vines) -> jax.Array:
  """Every token's sampling log-prob in each vine, its prefix's included.

  Args:
    root_logprobs: f32[B, N, T], the root responses' sampling log-probs.
    states: RolloutStates of shape [B, K].
    vines: Vines of shape [B, K, N_v, T].

  Returns:
    f32[B, K, N_v, T]: the root's log-probs before the state, then the vine's
    own (`Vines.logprobs`, 0 after its end).
  """
  prefix = jnp.take_along_axis(root_logprobs, states.root[:, :, None], axis=1)   # [B, K, T]
  before = jnp.arange(root_logprobs.shape[-1]) < vines.start[..., None]
  return jnp.where(before, prefix[:, :, None], vines.logprobs)


def window_mask(boundaries: jax.Array, start: jax.Array, window: int,
                mask: jax.Array) -> jax.Array:
  """The tokens from state s_start up to s_{start + window steps}: where the set
  advantage of the rollout state at `start` applies (Algorithm 2's window T).

  A token t is in the window iff start <= t, fewer than `window` step
  boundaries b lie in (start, t], and mask[t]: the window is the step that
  starts at `start` and the window - 1 steps after it, cut at the response's
  end.

  Args:
    boundaries: bool[T], the response's step boundaries.
    start: i32[], the rollout state's position.
    window: steps >= 1 (static).
    mask: bool[T], the tokens that are trained.

  Returns:
    bool[T].
  """
  checks.rank("boundaries", boundaries, 1)
  checks.same_shape("boundaries", boundaries, "mask", mask)
  checks.at_least("window", window, 1)
  t = jnp.arange(boundaries.shape[0])
  steps = jnp.cumsum(boundaries & (t > start))
  return (t >= start) & (steps < window) & mask
