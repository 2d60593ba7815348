"""The RL estimators: how a step's rollouts become the batch the loss trains on.

One entry per estimator, in `REGISTRY`, each declaring what it needs and
building its batch from the step's rollouts (rollouts -> advantages, and for a
critic value targets -> metrics); `polyepo.train.make_train` reads the entry
and never the name. Two families are built from small pieces:

  group_estimator(name, advantage)       per-prompt advantages from the group's
                                         rewards and strategy labels (GRPO,
                                         reward shaping, set RL = Poly-EPO)
  critic_estimator(name, set_objective)  a value head, GAE, token-level
                                         advantages; with a set objective, set
                                         advantages at rollout states from
                                         vines (Poly-PPO, note §6.1)

Adding an estimator is one entry (`register(...)` here, or an `Estimator` in a
module of your own named as 'package.module:ATTRIBUTE') and one config that
names it (docs/adding-an-algorithm.md).
"""

import dataclasses
import functools
import importlib
import math
from typing import Any, Callable, Dict, NamedTuple, Optional, Tuple

import jax
import jax.numpy as jnp

from polyepo import advantages as adv_lib
from polyepo import checks, metrics
from polyepo import model as model_lib
from polyepo import objectives, poly_ppo, sampling
from polyepo import gae as gae_lib
from polyepo import value_head as value_head_lib
from polyepo import vines as vines_lib
from polyepo.parallel import shard_prompts

Batch = Dict[str, jax.Array]   # name -> [B, M, ...]: tokens, mask, loss_mask, old_logp, advantages


class Setup(NamedTuple):
  """What is fixed for a run: the settings, the policy's shape, the env, the mesh."""
  config: Any                  # polyepo.train.TrainConfig
  model_config: model_lib.TransformerConfig
  env: Any
  mesh: Optional[jax.sharding.Mesh]


class Rollouts(NamedTuple):
  """A step's rollouts: B prompts, N responses each."""
  params: Any                  # the policy that sampled them (value head included)
  problems: Any                # the env's problems, leaves [B, ...]
  prompts: jax.Array           # i32[B, P]
  rollout: sampling.Rollout    # [B * N, T], prompt-major
  reward: jax.Array            # f32[B, N]
  label: jax.Array             # i32[B, N]


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


# -- pieces shared by the entries ------------------------------------------------------

def rollout_logprobs(setup: Setup, params, prompts, tokens, mask, sampled, count: int):
  """The rollout policy's log-probs of its responses, f32[G * count, T]: at
  temperature 1 the sampler's own (`sampled`), else one forward pass."""
  if setup.config.temperature == 1.0:
    return sampled
  return model_lib.sequence_logprobs(params, setup.model_config, prompts, tokens, mask,
                                     samples_per_prompt=count)


def masked_std(x: jax.Array, mask: jax.Array) -> jax.Array:
  """Standard deviation of x over the True entries of mask (0 when there are none)."""
  m = mask.astype(jnp.float32)
  count = jnp.maximum(jnp.sum(m), 1.0)
  mean = jnp.sum(x * m) / count
  return jnp.sqrt(jnp.sum(jnp.square(x - mean) * m) / count)


def check_set_objective(config, num_samples: int) -> None:
  """The objective exists and needs no answers, 1 <= n < num_samples, and
  num_subsets fits C(num_samples, n) (an exact advantage must be affordable)."""
  checks.one_of("objective", config.objective, tuple(objectives.OBJECTIVES))
  if config.objective in objectives.NEEDS_ANSWERS:
    raise ValueError(f"objective={config.objective!r} needs answer ids, which training "
                     f"does not collect; choose another objective.")
  if not 1 <= config.set_size < config.samples_per_prompt:
    raise ValueError(f"set_size must satisfy 1 <= set_size < samples_per_prompt="
                     f"{config.samples_per_prompt}, got set_size={config.set_size}.")
  check_subsets(config, num_samples)


def check_subsets(config, num_samples: int) -> None:
  """num_subsets fits C(num_samples, n), and an exact advantage is affordable."""
  total = math.comb(num_samples, config.set_size)
  if config.num_subsets < 0 or config.num_subsets > total:
    raise ValueError(f"num_subsets must be 0 (all subsets) or 1..C(N, n) = {total}, "
                     f"got {config.num_subsets}.")
  if config.num_subsets == 0 and config.objective not in adv_lib.CLOSED_FORMS and total > 1 << 16:
    raise ValueError(f"objective={config.objective!r} has no closed form and C(N, n) = "
                     f"{total} subsets are too many to enumerate; set num_subsets.")


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


# -- critic estimators: GAE, and set advantages at rollout states ------------------------

def _critic_batch(set_objective: bool, setup: Setup, rollouts: Rollouts, key, axis_name):
  """Vines, values, GAE and (with a set objective) set advantages of the step's groups.

  The values V(s_t) come from the features the sampler drew each token from
  (`sampling.Rollout.features`), so no forward pass is run for them; at
  temperature 1 the sampling log-probs are the policy's own and serve as the
  old log-probs too.
  """
  config, env, mesh = setup.config, setup.env, setup.mesh
  params, prompts, rollout = rollouts.params, rollouts.prompts, rollouts.rollout
  reward, label = rollouts.reward, rollouts.label
  B, N, T = config.prompts_per_step, config.samples_per_prompt, env.max_response_len
  K = config.num_vine_states if set_objective else 0
  N_v = config.vine_samples
  M = N + K * N_v
  choose_key, vine_key, subset_key = jax.random.split(jax.random.fold_in(key, 1), 3)
  per_group = lambda x: x.reshape((B, -1) + x.shape[1:])
  tokens, mask = per_group(rollout.tokens), per_group(rollout.mask)       # [B, N, T]
  old_logp = per_group(rollout.logprobs)
  old_values = per_group(value_head_lib.apply(params, rollout.features))
  start = jnp.zeros((B, N), jnp.int32)
  if set_objective:
    boundaries = per_group(env.step_boundaries(rollout.tokens))
  else:
    boundaries = jnp.zeros_like(mask)
  loss_mask, states_valid = mask, jnp.ones((B, 1), bool)
  if K:
    states = jax.vmap(lambda k, b: vines_lib.choose_states(
        k, b, K, config.vine_selection))(jax.random.split(choose_key, B), boundaries)
    vines = vines_lib.sample_vines(params, setup.model_config, vine_key, prompts, tokens,
                                   states, samples=N_v, temperature=config.temperature,
                                   axis_name=axis_name, return_features=True)
    flat = lambda x: x.reshape((B, K * N_v) + x.shape[3:])                # [B, K*N_v, ...]
    vine_tokens = flat(vines.tokens).reshape(B * K * N_v, T)
    repeated = jax.tree.map(lambda x: jnp.repeat(x, K * N_v, axis=0), rollouts.problems)
    vine_reward, vine_label = env.score(repeated, vine_tokens)
    vine_boundaries = env.step_boundaries(vine_tokens)
    cat = lambda a, b: jnp.concatenate([a, b], axis=1)
    tokens, mask = cat(tokens, flat(vines.tokens)), cat(mask, flat(vines.mask))
    loss_mask = cat(loss_mask, flat(vines.loss_mask))
    old_logp = cat(old_logp, flat(vines.logprobs))
    old_values = cat(old_values, value_head_lib.apply(params, flat(vines.features)))
    start = cat(start, flat(vines.start))
    boundaries = cat(boundaries, per_group(vine_boundaries))
    reward, label = cat(reward, per_group(vine_reward)), cat(label, per_group(vine_label))
    states_valid = cat(states_valid, states.valid)
  tokens, mask, loss_mask = (shard_prompts(x, mesh) for x in (tokens, mask, loss_mask))
  old_logp = per_group(rollout_logprobs(setup, params, prompts, tokens.reshape(B * M, T),
                                        mask.reshape(B * M, T), old_logp.reshape(B * M, T), M))
  old_logp = jnp.where(loss_mask, old_logp, 0.0)
  old_values = jnp.where(loss_mask, old_values, 0.0)
  groups = jax.vmap(functools.partial(
      poly_ppo.group_advantages, num_roots=N, vine_samples=N_v,
      objective=config.objective if set_objective else None,
      set_size=config.set_size, num_subsets=config.num_subsets or None,
      window=config.vine_window, gamma=config.gamma, lam=config.gae_lambda,
      normalize=config.normalize))(reward, label, old_values, loss_mask, boundaries, start,
                                   jax.random.split(subset_key, B))
  advantages = poly_ppo.token_advantages(groups, loss_mask, config.normalize)
  batch = dict(tokens=tokens, mask=mask, loss_mask=loss_mask, old_logp=old_logp,
               advantages=advantages, old_values=old_values, returns=groups.returns)
  step_metrics = dict(
      explained_variance=gae_lib.explained_variance(old_values, groups.returns, loss_mask),
      advantage_std=masked_std(advantages, loss_mask))
  if set_objective:
    in_window, other = loss_mask & groups.window, loss_mask & ~groups.window
    vine_mask = loss_mask[:, N:]
    vine_valid = jnp.any(vine_mask, axis=-1)
    step_metrics.update(
        rollout_states=jnp.mean(jnp.sum(states_valid, axis=1)),   # the prompt included
        vine_tokens=jnp.sum(vine_mask),
        vine_reward=jnp.sum(reward[:, N:] * vine_valid) / jnp.maximum(jnp.sum(vine_valid), 1),
        advantage_std_rollout=masked_std(advantages, in_window),
        advantage_std_other=masked_std(advantages, other),
        rollout_token_share=jnp.sum(in_window) / jnp.maximum(jnp.sum(loss_mask), 1))
  return batch, step_metrics


def _check_critic(config) -> None:
  """GAE's γ and λ in [0, 1], the value head's optimiser, per-set standardisation only."""
  if config.normalize_over != "prompt":
    raise ValueError(f"normalize_over={config.normalize_over!r} is not available to "
                     f"estimator={config.estimator!r}, which standardises each set's and the "
                     f"step's GAE advantages (polyepo.poly_ppo); use normalize_over='prompt'.")
  for name in ("gamma", "gae_lambda"):
    if not 0 <= getattr(config, name) <= 1:
      raise ValueError(f"{name} must be in [0, 1], got {getattr(config, name)}.")
  checks.greater_than("value_learning_rate", config.value_learning_rate, 0)
  checks.at_least("value_clip", config.value_clip, 0)


def _check_vines(config) -> None:
  """A critic's checks, the set objective at the prompt, and the vines' settings."""
  _check_critic(config)
  check_set_objective(config, config.samples_per_prompt)
  checks.at_least("num_vine_states", config.num_vine_states, 0)
  checks.at_least("vine_window", config.vine_window, 1)
  checks.one_of("vine_selection", config.vine_selection, vines_lib.SELECTIONS)
  if config.num_vine_states and config.vine_samples <= config.set_size:
    raise ValueError(
        f"vine_samples must be > set_size={config.set_size} (a rollout state's sets of n "
        f"are drawn from its vines; with vine_samples = n every vine's advantage is 0), "
        f"got vine_samples={config.vine_samples}.")
  if config.num_vine_states:
    check_subsets(config, config.vine_samples)


def critic_estimator(name: str, set_objective: bool) -> Estimator:
  """A value head and GAE; with `set_objective`, Poly-PPO's set advantages at the
  prompt and at `num_vine_states` rollout states per prompt, from vines."""
  if not set_objective:
    return Estimator(name=name, build_batch=functools.partial(_critic_batch, False),
                     check=_check_critic, critic=True)
  return Estimator(
      name=name, build_batch=functools.partial(_critic_batch, True), check=_check_vines,
      critic=True, step_boundaries=True, set_objective=True,
      responses_per_group=lambda c: c.samples_per_prompt + c.num_vine_states * c.vine_samples)


register(group_estimator("grpo", _grpo))
register(group_estimator("reward_shaping", _reward_shaping))
register(group_estimator("set_rl", _set_rl,
                         check=lambda c: check_set_objective(c, c.samples_per_prompt),
                         set_objective=True))
register(critic_estimator("ppo", set_objective=False))
register(critic_estimator("poly_ppo", set_objective=True))
