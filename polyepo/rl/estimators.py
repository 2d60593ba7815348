"""The RL estimators: how a step's rollouts become the batch the loss trains on.

One entry per estimator, in `REGISTRY`, each declaring what it needs and
building its batch from the step's rollouts (rollouts -> advantages, and for a
critic value targets -> metrics); `polyepo.train.make_train` reads the entry
and never the name. The entries are built from small pieces:

  group_estimator(name, advantage)       per-prompt advantages from the group's
                                         rewards and strategy labels (GRPO,
                                         reward shaping, set RL = Poly-EPO)
  set_rl_windowed                        the set advantage on each response's
                                         first step (its strategy choice), the
                                         reward advantage on the rest
  critic_estimator(name, set_objective)  a value head, GAE, token-level
                                         advantages; with a set objective, set
                                         advantages at rollout states from
                                         vines (Poly-PPO, §6.1 of the set RL note, docs/method.md#references)

Adding an estimator is one entry (`register(...)` here, or an `Estimator` in a
module of your own named as 'package.module:ATTRIBUTE') and one config that
names it (docs/adding-an-algorithm.md).
"""

import dataclasses
import functools
import importlib
from typing import Any, Callable, Dict, Optional, Tuple

import jax
import jax.numpy as jnp

from polyepo import checks
from polyepo.core import metrics
from polyepo.core import advantages as adv_lib
from polyepo.parallel import shard_prompts
from polyepo.rl import ppo_batch as critic
from polyepo.rl import vines as vines_lib
from polyepo.rl.estimator_inputs import Rollouts, Setup, check_set_objective, masked_std, rollout_logprobs

Batch = Dict[str, jax.Array]   # name -> [B, M, ...]: tokens, mask, loss_mask, old_logp, advantages
BuildBatch = Callable[[Setup, Rollouts, jax.Array, Optional[str]],
                      Tuple[Batch, Dict[str, jax.Array]]]
GroupAdvantage = Callable[..., jax.Array]


def _no_checks(config) -> None:
  del config


@dataclasses.dataclass(frozen=True)
class Estimator:
  """An estimator: what it needs, and how it builds a step's batch.

  Attributes:
    name: the `TrainConfig.estimator` that selects it.
    build_batch: (setup, rollouts, key, axis_name) -> (batch, metrics); batch
      {tokens, mask, loss_mask, old_logp, advantages: [B, M, T]} and, with a
      critic, old_values and returns [B, M, T]; metrics {name: scalar}.
    check: raises ValueError naming a TrainConfig field this estimator cannot
      use (the fields every estimator reads are checked by TrainConfig).
    critic: trains a value head (`polyepo.value_head`, its own optimiser) whose
      loss the update adds.
    step_boundaries: needs the env's `step_boundaries`.
    set_objective: reads `objective`, `set_size` and `num_subsets`.
    responses_per_group: config -> M, the responses per prompt it trains on
      (N unless it samples more, e.g. vines).
    group_advantage: for a group estimator, (config, rewards f32[N],
      labels i32[N], key, normalize) -> f32[N]; None otherwise.
  """
  name: str
  build_batch: BuildBatch
  check: Callable[[Any], None] = _no_checks
  critic: bool = False
  step_boundaries: bool = False
  set_objective: bool = False
  responses_per_group: Callable[[Any], int] = lambda config: config.samples_per_prompt
  group_advantage: Optional[GroupAdvantage] = None


REGISTRY: Dict[str, Estimator] = {}


def register(estimator: Estimator) -> Estimator:
  """Adds `estimator` under its name (ValueError if the name is taken) and returns it."""
  if estimator.name in REGISTRY:
    raise ValueError(f"an estimator named {estimator.name!r} is already registered.")
  REGISTRY[estimator.name] = estimator
  return estimator


def get(name: str) -> Estimator:
  """The estimator `name`: a registered name, or 'package.module:ATTRIBUTE' naming an
  `Estimator` that a module outside the package defines (imported on first use).

  Raises:
    ValueError: one line naming `name`: unknown (with the registered names), a
      module that does not import, or an attribute that is not an Estimator.
  """
  if name in REGISTRY or not isinstance(name, str) or ":" not in name:
    checks.one_of("estimator", name, tuple(REGISTRY))
    return REGISTRY[name]
  module_name, attribute = name.split(":", 1)
  try:
    value = getattr(importlib.import_module(module_name), attribute, None)
  except ImportError as err:
    raise ValueError(f"estimator={name!r}: cannot import module {module_name!r} ({err}); is "
                     f"its directory on PYTHONPATH?") from err
  if not isinstance(value, Estimator):
    raise ValueError(f"estimator={name!r}: module {module_name!r} defines no Estimator "
                     f"named {attribute!r}.")
  return value


# -- group estimators: an advantage per response from its prompt's group ------------------

def group_advantages(config, rewards: jax.Array, labels: jax.Array, key: jax.Array) -> jax.Array:
  """Advantages of one prompt's group. rewards: f32[N], labels: i32[N] -> f32[N].

  Standardised over the group only with normalize_over="prompt" (see
  `batch_advantages` for "batch").
  """
  per_prompt = config.normalize and config.normalize_over == "prompt"
  return get(config.estimator).group_advantage(config, rewards, labels, key, per_prompt)


def batch_advantages(config, rewards: jax.Array, labels: jax.Array, keys: jax.Array) -> jax.Array:
  """Advantages of a step's groups. rewards: f32[B, N], labels: i32[B, N], keys: [B] -> f32[B, N].

  With normalize_over="batch", the groups' unnormalised advantages are
  standardised together: (A - mean A) / (std A + 1e-6) over all B * N.
  """
  advantages = jax.vmap(functools.partial(group_advantages, config))(rewards, labels, keys)
  if config.normalize and config.normalize_over == "batch":
    advantages = adv_lib.normalize_advantage(advantages.reshape(-1)).reshape(advantages.shape)
  return advantages


def _group_batch(setup: Setup, rollouts: Rollouts, key, axis_name):
  """Each response's advantage on all its tokens; the old log-probs at the rollouts'."""
  del axis_name
  config, mesh = setup.config, setup.mesh
  B = config.prompts_per_step
  per_group = lambda x: x.reshape((B, -1) + x.shape[1:])
  advantages = batch_advantages(config, rollouts.reward, rollouts.label, jax.random.split(key, B))
  tokens = shard_prompts(rollouts.rollout.tokens, mesh)
  mask = shard_prompts(rollouts.rollout.mask, mesh)
  old_logp = rollout_logprobs(setup, rollouts.params, rollouts.prompts, tokens, mask,
                              rollouts.rollout.logprobs, config.samples_per_prompt)
  batch = dict(tokens=per_group(tokens), mask=per_group(mask), loss_mask=per_group(mask),
               old_logp=per_group(old_logp), advantages=advantages)
  return batch, dict(advantage_std=jnp.std(advantages),
                     **metrics.advantage_alignment(rollouts.reward, advantages))


def group_estimator(name: str, advantage: GroupAdvantage,
                    check: Callable[[Any], None] = _no_checks,
                    set_objective: bool = False) -> Estimator:
  """An estimator whose response advantage comes from its prompt's group alone.

  Args:
    advantage: (config, rewards f32[N], labels i32[N], key, normalize) -> f32[N];
      with normalize, standardised over the group (normalize_over="prompt"),
      else unnormalised (centred where the estimator centres), for
      normalize_over="batch" or normalize=False.
  """
  return Estimator(name=name, build_batch=_group_batch, check=check,
                   set_objective=set_objective, group_advantage=advantage)


def _grpo(config, rewards, labels, key, normalize):
  del config, labels, key
  return adv_lib.grpo_advantage(rewards, normalize=normalize)


def _reward_shaping(config, rewards, labels, key, normalize):
  del key
  return adv_lib.reward_shaping_advantage(rewards, labels, config.lam, normalize=normalize)


def _set_rl(config, rewards, labels, key, normalize):
  a = adv_lib.set_rl_advantage(config.objective, rewards, labels, set_size=config.set_size,
                               num_subsets=config.num_subsets or None, key=key)
  return adv_lib.normalize_advantage(a) if normalize else a


# -- windowed set RL: the set advantage on the strategy choice only ----------------------

def windowed_advantages(config, rewards: jax.Array, labels: jax.Array, boundaries: jax.Array,
                        mask: jax.Array, key: jax.Array) -> Tuple[jax.Array, jax.Array]:
  """Token advantages of one prompt's group, and where the set advantage applies.

  A response's first reasoning step (its tokens before its first step boundary,
  `vines.window_mask` with a window of one step from the prompt; a response with
  no boundary is all first step) chooses its strategy: those tokens get the set
  advantage (`_set_rl`: the objective's marginal advantage, standardised over
  the group with `normalize`). The tokens after it carry out the strategy: they
  get the reward advantage (GRPO's, standardised over the group with
  `normalize`), so a wrong response that adds a new strategy to its sets is
  credited for choosing it and not for its slips.

  Args:
    rewards: f32[N]; labels: i32[N].
    boundaries: bool[N, T], the responses' step boundaries; mask: bool[N, T].
    key: for sampled subsets.

  Returns:
    (advantages f32[N, T], 0 outside mask; window bool[N, T]).
  """
  per_prompt = config.normalize
  set_advantage = _set_rl(config, rewards, labels, key, per_prompt)
  reward_advantage = _grpo(config, rewards, labels, key, per_prompt)
  window = jax.vmap(lambda b, m: vines_lib.window_mask(b, jnp.int32(0), 1, m))(boundaries, mask)
  advantages = jnp.where(window, set_advantage[:, None], reward_advantage[:, None])
  return jnp.where(mask, advantages, 0.0), window


def _windowed_batch(setup: Setup, rollouts: Rollouts, key, axis_name):
  """`windowed_advantages` of each group; the old log-probs at the rollouts'."""
  del axis_name
  config, mesh = setup.config, setup.mesh
  B = config.prompts_per_step
  per_group = lambda x: x.reshape((B, -1) + x.shape[1:])
  tokens = shard_prompts(rollouts.rollout.tokens, mesh)
  mask = shard_prompts(rollouts.rollout.mask, mesh)
  boundaries = per_group(setup.env.step_boundaries(rollouts.rollout.tokens))
  advantages, window = jax.vmap(functools.partial(windowed_advantages, config))(
      rollouts.reward, rollouts.label, boundaries, per_group(mask), jax.random.split(key, B))
  old_logp = rollout_logprobs(setup, rollouts.params, rollouts.prompts, tokens, mask,
                              rollouts.rollout.logprobs, config.samples_per_prompt)
  batch = dict(tokens=per_group(tokens), mask=per_group(mask), loss_mask=per_group(mask),
               old_logp=per_group(old_logp), advantages=advantages)
  loss_mask = per_group(mask)
  in_window, other = loss_mask & window, loss_mask & ~window
  return batch, dict(advantage_std=masked_std(advantages, loss_mask),
                     advantage_std_window=masked_std(advantages, in_window),
                     advantage_std_other=masked_std(advantages, other),
                     window_token_share=jnp.sum(in_window) / jnp.maximum(jnp.sum(loss_mask), 1))


def _check_windowed(config) -> None:
  """The set objective's checks; both advantages are standardised per prompt."""
  check_set_objective(config, config.samples_per_prompt)
  if config.normalize_over != "prompt":
    raise ValueError(f"normalize_over={config.normalize_over!r} is not available to "
                     f"estimator={config.estimator!r}, which standardises its set and reward "
                     f"advantages over each prompt's group; use normalize_over='prompt'.")


def critic_estimator(name: str, set_objective: bool) -> Estimator:
  """A value head and GAE; with `set_objective`, Poly-PPO's set advantages at the
  prompt and at `num_vine_states` rollout states per prompt, from vines."""
  if not set_objective:
    return Estimator(name=name, build_batch=functools.partial(critic.batch, False),
                     check=critic.check, critic=True)
  return Estimator(
      name=name, build_batch=functools.partial(critic.batch, True), check=critic.check_vines,
      critic=True, step_boundaries=True, set_objective=True,
      responses_per_group=lambda c: c.samples_per_prompt + c.num_vine_states * c.vine_samples)


register(group_estimator("grpo", _grpo))
register(group_estimator("reward_shaping", _reward_shaping))
register(group_estimator("set_rl", _set_rl,
                         check=lambda c: check_set_objective(c, c.samples_per_prompt),
                         set_objective=True))
register(Estimator(name="set_rl_windowed", build_batch=_windowed_batch, check=_check_windowed,
                   step_boundaries=True, set_objective=True))
register(critic_estimator("ppo", set_objective=False))
register(critic_estimator("poly_ppo", set_objective=True))
