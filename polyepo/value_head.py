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
  subtree `params["value_head"]`, created only when an estimator needs a critic
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
  rate (`polyepo.train.make_optimizer`).
"""

from typing import Any, Dict

import jax
import jax.numpy as jnp

KEY = "value_head"
"""The subtree of the parameters that holds the head."""


def init(key: jax.Array, width: int, hidden: int = 0) -> Dict[str, Any]:
  """Head parameters for features of size `width`; `hidden` defaults to width.

  Returns:
    {"hidden": {"kernel": f32[d, h], "bias": f32[h]},
     "out": {"kernel": f32[h], "bias": f32[]}}, the output layer all zeros.
  """
  hidden = hidden or width
  kernel = jax.random.normal(key, (width, hidden), jnp.float32) / jnp.sqrt(width)
  return {"hidden": {"kernel": kernel, "bias": jnp.zeros((hidden,), jnp.float32)},
          "out": {"kernel": jnp.zeros((hidden,), jnp.float32),
                  "bias": jnp.zeros((), jnp.float32)}}


def attach(policy_params, head) -> Dict[str, Any]:
  """The policy's parameters with the head added under `KEY` (a new dict)."""
  return {**policy_params, KEY: head}


def has_head(params) -> bool:
  return KEY in params


def apply(params, features: jax.Array) -> jax.Array:
  """V(s) of every feature vector; gradients reach the head only.

  Args:
    params: parameters holding the head under `KEY` (or the head itself).
    features: f32[..., d] hidden states, e.g. from
      `model.sequence_logprobs_and_features`.

  Returns:
    f32[...].
  """
  head = params[KEY] if KEY in params else params
  h = jax.lax.stop_gradient(features)
  h = jax.nn.relu(h @ head["hidden"]["kernel"] + head["hidden"]["bias"])
  return h @ head["out"]["kernel"] + head["out"]["bias"]
