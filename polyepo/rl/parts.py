"""The parts an algorithm is built from, each with its own hyperparameters.

  Critic(model, learning_rate, clip)           a value head: init / values / loss / optimizer
  GAE(gamma, lam)                              generalised advantage estimation's γ and λ
  Vines(num_states, samples, window, selection)  Poly-PPO's rollout states and their vines

`polyepo.rl.algorithms.ppo` and `poly_ppo` take them (or mappings of their
fields, which is what a config holds). Each checks its fields when built and
raises ValueError naming the field and its valid range.
"""

import dataclasses
from typing import Any, Mapping, Optional, Type, TypeVar, Union

import jax
import optax

from polyepo import checks
from polyepo.core import gae as gae_lib
from polyepo.policy import model as model_lib
from polyepo.policy import value_head as value_head_lib
from polyepo.rl import vines as vines_lib

Part = TypeVar("Part")


@dataclasses.dataclass(frozen=True)
class Critic:
  """A value head trained beside the policy with its own optimiser (`polyepo.value_head`).

  Attributes:
    model: what it reads (`value_head.VALUE_MODELS`): "head", an MLP on the
      policy's final hidden states through stop_gradient (the sampler's, no
      forward pass of its own); "surprise", the same MLP reading also the
      policy's surprise at the tokens so far (`value_head.surprise`, from the
      sampling log-probs); "trunk", the same MLP on a copy of the base
      transformer that the value loss trains (one more forward pass per step
      and a forward and backward per update).
    learning_rate: Adam's learning rate for the head (its own optimiser: the
      head starts from zero, the policy from the base model).
    clip: ε of the clipped value loss (0: unclipped).
  """
  model: str = "head"
  learning_rate: float = 1e-3
  clip: float = 0.2

  def __post_init__(self):
    checks.one_of("model", self.model, value_head_lib.VALUE_MODELS)
    checks.greater_than("learning_rate", self.learning_rate, 0)
    checks.at_least("clip", self.clip, 0)

  @property
  def reads_features(self) -> bool:
    """Whether it reads the sampler's hidden states (else a trunk of its own)."""
    return self.model != "trunk"

  @property
  def reads_surprise(self) -> bool:
    return self.model == "surprise"

  def init(self, key: jax.Array, params, model_config: model_lib.TransformerConfig):
    """The policy's `params` with a zero-output head attached (a trunk: a copy of them)."""
    trunk = params if self.model == "trunk" else None
    head = value_head_lib.init(key, value_head_lib.input_width(model_config.width, self.model),
                               model_config.width, trunk=trunk)
    return value_head_lib.attach(params, head)

  def optimizer(self, grad_clip: float) -> optax.GradientTransformation:
    """Adam at `learning_rate` after global-norm clipping, for `params[value_head.KEY]`."""
    return optax.chain(optax.clip_by_global_norm(grad_clip), optax.adam(self.learning_rate))

  def read(self, params, features: jax.Array, surprise: Optional[jax.Array] = None):
    """V(s_t) from hidden states [..., T, D] (and surprise [..., T, k]) -> f32[..., T]."""
    return value_head_lib.read(params, features, surprise)

  def values(self, params, model_config, prompts, tokens, mask, count: int, features=None,
             surprise=None) -> jax.Array:
    """V(s_t) of responses [G * count, T] to prompts [G, P] -> f32[G * count, T]
    (a head reads `features`, a trunk runs its own forward pass)."""
    return value_head_lib.values(params, model_config, prompts, tokens, mask, count, features,
                                 surprise)

  def loss(self, values, old_values, returns, mask, num_tokens) -> jax.Array:
    """The clipped value loss over the tokens of `mask`, divided by `num_tokens`."""
    return gae_lib.value_loss(values, old_values, returns, mask, self.clip, num_tokens)


@dataclasses.dataclass(frozen=True)
class GAE:
  """Generalised advantage estimation's discount γ and λ, each in [0, 1]."""
  gamma: float = 1.0
  lam: float = 0.95

  def __post_init__(self):
    for name in ("gamma", "lam"):
      if not 0 <= getattr(self, name) <= 1:
        raise ValueError(f"{name} must be in [0, 1], got {getattr(self, name)}.")


@dataclasses.dataclass(frozen=True)
class Vines:
  """Poly-PPO's rollout states and the continuations sampled from them (`polyepo.vines`).

  Attributes:
    num_states: K, rollout states per prompt besides the prompt (0: set RL at
      the prompt only, GAE after its window).
    samples: N_v continuations sampled from each rollout state (the set size
      n < N_v: a state's sets of n are drawn from its vines).
    window: W >= 1, reasoning steps from a rollout state that its set advantage
      covers (the window T of Set RL's Poly-PPO).
    selection: how rollout states are drawn among the step boundaries
      (`vines.SELECTIONS`: "uniform" or "early").
  """
  num_states: int = 2
  samples: int = 8
  window: int = 2
  selection: str = "uniform"

  def __post_init__(self):
    checks.at_least("num_states", self.num_states, 0)
    checks.at_least("window", self.window, 1)
    checks.one_of("selection", self.selection, vines_lib.SELECTIONS)


def build(kind: Type[Part], value: Union[Part, Mapping[str, Any]], name: str) -> Part:
  """`value` if it is a `kind`, else `kind(**value)`; ValueError naming `name`'s fields."""
  if isinstance(value, kind):
    return value
  if not isinstance(value, Mapping):
    raise ValueError(f"{name} must be a {kind.__name__} or a mapping of its fields, got "
                     f"{value!r}.")
  fields = tuple(f.name for f in dataclasses.fields(kind))
  unknown = sorted(set(value) - set(fields))
  if unknown:
    raise ValueError(f"{name} has no field {unknown[0]!r}; its fields: {', '.join(fields)}.")
  try:
    return kind(**value)
  except ValueError as err:
    raise ValueError(f"{name}.{err}") from err
