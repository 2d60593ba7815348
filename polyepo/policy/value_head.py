"""The critic of PPO and Poly-PPO: a small value head on the policy's final hidden states.

  params = value_head.attach(policy_params, value_head.init(key, width))
  rollout = sampling.sample(params, ..., return_features=True)   # while sampling,
  values = value_head.apply(params, rollout.features)            # f32[B, T]
  logp, features = model.sequence_logprobs_and_features(params, ...)  # or teacher-forced
  values = value_head.apply(params, features)                    # (the update)

Design. The head is a two-layer MLP, V(s_t) = w2 · relu(W1 h_t + b1) + b2, that
reads the transformer's final normalised hidden state h_t (the one the policy's
logits are computed from) through `stop_gradient`:

* the base model is pretrained without a critic, so the head lives in its own
  subtree `params["value_head"]`, created only when an algorithm has a critic
  ("ppo", "poly_ppo"). The transformer ignores parameters it does not own, so
  sampling, evaluation and checkpoints of the policy read the same tree; the
  other estimators' parameter trees, optimiser states and checkpoints are
  unchanged, and base models load as before;
* its output layer starts at zero, so V = 0 at the start of RL (no random
  baseline at step 0);
* the value loss moves the head only (the features are a stop_gradient): the
  policy's update is the clipped policy gradient alone, exactly as for the
  other estimators, so PPO and Poly-PPO differ from GRPO and Poly-EPO in their
  advantages and nothing else. The head has its own optimiser and learning
  rate (`polyepo.rl.parts.Critic.optimizer`).

What else it reads is the critic's `model` (`polyepo.rl.parts.Critic`, `VALUE_MODELS`): with
"surprise" the head also reads the policy's surprise at the tokens before each
state (`surprise`, from the sampling log-probs: free); with "trunk" it reads a
transformer of its own instead, a copy of the base model that the value loss
trains (`values` runs it). `experiments.critic_fit` measures what each can
explain (docs/method.md).
"""

from typing import Any, Dict, Optional

import jax
import jax.numpy as jnp

from polyepo.policy import model as model_lib

KEY = "value_head"
"""The subtree of the parameters that holds the head."""

VALUE_MODELS = ("head", "surprise", "trunk")
"""What the critic reads (`Critic.model`): "head", the policy's final
hidden states through stop_gradient; "surprise", those and the policy's surprise
at the tokens before each state (`surprise`); "trunk", the final hidden states of
a transformer of its own, a copy of the base model trained by the value loss
(stored under the head as `"trunk"`)."""

SURPRISE_FEATURES = 4
"""How many inputs `surprise` adds to a head's features."""


def init(key: jax.Array, width: int, hidden: int = 0, trunk=None) -> Dict[str, Any]:
  """Head parameters for features of size `width`; `hidden` defaults to width.

  Args:
    key: PRNG key of the hidden layer.
    width: d, the features' size.
    hidden: h, the hidden layer's size (0: d).
    trunk: None, or the transformer parameters the critic reads its features
      from (critic model "trunk": a copy of the base model's).

  Returns:
    {"hidden": {"kernel": f32[d, h], "bias": f32[h]},
     "out": {"kernel": f32[h], "bias": f32[]}}, the output layer all zeros, and
    `"trunk"` when given.
  """
  hidden = hidden or width
  kernel = jax.random.normal(key, (width, hidden), jnp.float32) / jnp.sqrt(width)
  head = {"hidden": {"kernel": kernel, "bias": jnp.zeros((hidden,), jnp.float32)},
          "out": {"kernel": jnp.zeros((hidden,), jnp.float32),
                  "bias": jnp.zeros((), jnp.float32)}}
  return head if trunk is None else {**head, "trunk": trunk}


def attach(policy_params, head) -> Dict[str, Any]:
  """The policy's parameters with the head added under `KEY` (a new dict)."""
  return {**policy_params, KEY: head}


def has_head(params) -> bool:
  return KEY in params


def has_trunk(params) -> bool:
  """Whether the critic reads a transformer of its own (critic model "trunk")."""
  return "trunk" in (params[KEY] if KEY in params else params)


def apply(params, features: jax.Array, trainable_features: bool = False) -> jax.Array:
  """V(s) of every feature vector; gradients reach the head only.

  Args:
    params: parameters holding the head under `KEY` (or the head itself).
    features: f32[..., d] hidden states, e.g. from
      `model.sequence_logprobs_and_features`.
    trainable_features: let gradients reach the features too (a critic with a
      trunk of its own, `experiments.critic_fit`), not only the head.

  Returns:
    f32[...].
  """
  head = params[KEY] if KEY in params else params
  h = features if trainable_features else jax.lax.stop_gradient(features)
  h = jax.nn.relu(h @ head["hidden"]["kernel"] + head["hidden"]["bias"])
  return h @ head["out"]["kernel"] + head["out"]["bias"]


def surprise(logprobs: jax.Array, mask: jax.Array) -> jax.Array:
  """The policy's surprise at the tokens before each position.

  A slip is a token the policy itself thought unlikely, and a response with a
  slip is almost always wrong, so what the policy's log-probs say of a prefix
  decides much of its outcome, and its final hidden state need not carry it.
  At each position t, over the response's tokens before t: the lowest log-prob,
  how many had p < 0.1 and p < 0.01, and the sum of their log-probs (all 0 at
  t = 0).

  Args:
    logprobs: f32[..., T], each token's log-prob under the sampling policy (a
      vine's prefix included: the root's).
    mask: bool[..., T], the real tokens.

  Returns:
    f32[..., T, SURPRISE_FEATURES].
  """
  logprobs = jnp.where(mask, logprobs, 0.0)
  before = jnp.concatenate([jnp.zeros_like(logprobs[..., :1]), logprobs[..., :-1]], axis=-1)
  count = lambda p: jnp.cumsum(before < jnp.log(p), axis=-1).astype(jnp.float32)
  return jnp.stack([jax.lax.cummin(before, axis=before.ndim - 1), count(0.1), count(0.01),
                    jnp.cumsum(before, axis=-1)], axis=-1)


def read(params, features: jax.Array, surprise_inputs: Optional[jax.Array] = None):
  """A head's V(s) from the policy's features f32[..., d] and, for a head that
  reads them, the `surprise` inputs f32[..., SURPRISE_FEATURES] -> f32[...]."""
  if surprise_inputs is not None:
    features = jnp.concatenate([features, surprise_inputs], axis=-1)
  return apply(params, features)


def input_width(width: int, value_model: str) -> int:
  """The size of the vectors a head reads for features of size `width`."""
  return width + SURPRISE_FEATURES if value_model == "surprise" else width


def values(params, model_config: model_lib.TransformerConfig, prompt_tokens: jax.Array,
           response_tokens: jax.Array, response_mask: jax.Array, samples_per_prompt: int,
           features: Optional[jax.Array] = None,
           surprise_inputs: Optional[jax.Array] = None) -> jax.Array:
  """V(s_t) of every response token, whichever features the critic reads.

  Args:
    params: parameters holding the head under `KEY`.
    model_config: the policy's TransformerConfig (the trunk's too).
    prompt_tokens: i32[G, P]; response_tokens i32[G * count, T]; response_mask
      bool[G * count, T]; samples_per_prompt: count (as for
      `model.sequence_logprobs_and_features`).
    features: f32[G * count, T, d], the policy's hidden states of these tokens:
      what a head reads. A critic with a trunk ignores them and runs its trunk
      on the tokens (one more forward pass; the value loss trains the trunk).
    surprise_inputs: f32[G * count, T, SURPRISE_FEATURES], `surprise` of these
      tokens: read after the features by a head that reads them
      (critic model "surprise").

  Returns:
    f32[G * count, T].
  """
  if not has_trunk(params):
    return read(params, features, surprise_inputs)
  _, own = model_lib.sequence_logprobs_and_features(
      params[KEY]["trunk"], model_config, prompt_tokens, response_tokens, response_mask,
      samples_per_prompt=samples_per_prompt)
  return apply(params, own, trainable_features=True)
