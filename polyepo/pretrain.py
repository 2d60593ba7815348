"""Supervised pretraining of the base model on strategy demonstrations.

The corpus is generated on the fly inside the jitted step: problems from the
environment, a strategy per problem drawn from a skewed mixture restricted to
the strategies that apply, the environment's demonstration of it, with
arithmetic slips injected at `slip_rate`. The loss is next-token cross-entropy
on the response tokens only (EOS included).

  state = init(key); state, metrics = run_chunk(state)   # one compiled chunk of steps
"""

import dataclasses
import json
import os
from typing import Any, Callable, Dict, NamedTuple, Optional, Sequence, Tuple

import jax
import jax.numpy as jnp
import optax

from polyepo import _checks, checkpoint
from polyepo import model as model_lib


@dataclasses.dataclass(frozen=True)
class PretrainConfig:
  """Static settings of a pretraining run (hashable; validated by `validate`).

  mixture, slip_rate and num_steps differ per domain and have no default (their
  values live in configs/pretrain.py); the other defaults are the configs'
  (configs/pretrain.py builds `config.pretrain` from them).

  Attributes:
    mixture: unnormalised weight of each strategy, in the env's strategy order;
      per problem it is renormalised over the strategies that apply.
    slip_rate: probability that a demonstration carries an arithmetic slip.
    num_steps: optimiser steps.
    batch_size: demonstrations per step.
    learning_rate: peak Adam learning rate (linear warm-up, cosine decay).
    warmup_steps: warm-up length.
    end_lr_ratio: final learning rate as a fraction of the peak.
    weight_decay: AdamW weight decay.
    grad_clip: global-norm gradient clipping.
    steps_per_chunk: steps per compiled `lax.scan` chunk (host sees metrics
      between chunks).
  """
  mixture: Tuple[float, ...]
  slip_rate: float
  num_steps: int
  batch_size: int = 256
  learning_rate: float = 3e-3
  warmup_steps: int = 50
  end_lr_ratio: float = 0.05
  weight_decay: float = 0.01
  grad_clip: float = 1.0
  steps_per_chunk: int = 50


def validate(config: PretrainConfig, strategy_names: Sequence[str]) -> None:
  """Raises ValueError naming the field and its valid range, before compiling.

  Args:
    config: the pretraining settings.
    strategy_names: the env's strategies; the mixture has a weight for each.
  """
  if len(config.mixture) != len(strategy_names):
    raise ValueError(
        f"mixture has {len(config.mixture)} weights but the env has "
        f"{len(strategy_names)} strategies: {', '.join(strategy_names)}.")
  if min(config.mixture) < 0 or sum(config.mixture) <= 0:
    raise ValueError(f"mixture weights must be >= 0 with a positive sum, got {config.mixture}.")
  if not 0 <= config.slip_rate < 1:
    raise ValueError(f"slip_rate must be in [0, 1), got {config.slip_rate}.")
  for name in ("num_steps", "batch_size", "steps_per_chunk"):
    _checks.at_least(name, getattr(config, name), 1)
  _checks.greater_than("learning_rate", config.learning_rate, 0)
  for name in ("warmup_steps", "weight_decay"):
    _checks.at_least(name, getattr(config, name), 0)
  if not 0 <= config.end_lr_ratio <= 1:
    raise ValueError(f"end_lr_ratio must be in [0, 1], got {config.end_lr_ratio}.")
  _checks.greater_than("grad_clip", config.grad_clip, 0)


class PretrainState(NamedTuple):
  params: Any
  opt_state: Any
  step: jax.Array
  key: jax.Array


def model_config_for(env, **overrides) -> model_lib.TransformerConfig:
  """A TransformerConfig sized for `env`'s vocabulary and sequence lengths."""
  prompt_len = env.prompt_tokens(env.sample_problems(
      jax.random.key(0), env.default_params(), 1)).shape[1]
  fields = dict(vocab_size=env.vocab_size, pad_id=env.pad_id, eos_id=env.eos_id,
                max_len=prompt_len + env.max_response_len)
  fields.update(overrides)
  return model_lib.TransformerConfig(**fields)


def response_mask(tokens: jax.Array, eos_id: int) -> jax.Array:
  """bool[B, T]: tokens up to and including the first EOS (all, if none)."""
  is_eos = tokens == eos_id
  return (jnp.cumsum(is_eos, axis=1) - is_eos) == 0


def corpus_batch(env, env_params, key: jax.Array, batch_size: int,
                 mixture: Sequence[float], slip_rate: float):
  """A batch of demonstrations.

  A problem none of whose applicable strategies has weight gets no demonstration
  (its mask row is all False), so it adds nothing to the loss.

  Returns:
    (prompts i32[B, P], responses i32[B, T], mask bool[B, T], strategies i32[B]).
  """
  problem_key, strategy_key, demo_key = jax.random.split(key, 3)
  problems = env.sample_problems(problem_key, env_params, batch_size)
  applicable = env.applicable(problems)
  weights = jnp.asarray(mixture, jnp.float32)
  allowed = applicable & (weights[None, :] > 0)
  logits = jnp.where(allowed, jnp.log(jnp.maximum(weights, 1e-30))[None, :], -jnp.inf)
  strategies = jax.random.categorical(strategy_key, logits, axis=-1).astype(jnp.int32)
  responses, ok = env.demonstrate(demo_key, problems, strategies, slip_rate=slip_rate)
  mask = response_mask(responses, env.eos_id) & (ok & jnp.any(allowed, axis=-1))[:, None]
  return env.prompt_tokens(problems), responses, mask, strategies


def _schedule(config: PretrainConfig):
  return optax.warmup_cosine_decay_schedule(
      init_value=0.0, peak_value=config.learning_rate,
      warmup_steps=config.warmup_steps, decay_steps=max(config.num_steps, config.warmup_steps + 1),
      end_value=config.learning_rate * config.end_lr_ratio)


def make_optimizer(config: PretrainConfig) -> optax.GradientTransformation:
  return optax.chain(
      optax.clip_by_global_norm(config.grad_clip),
      optax.adamw(_schedule(config), weight_decay=config.weight_decay))


def make_pretrain(config: PretrainConfig, model_config: model_lib.TransformerConfig,
                  env, env_params) -> Tuple[Callable, Callable]:
  """Builds `init(key) -> PretrainState` and a jitted `run_chunk(state) -> (state, metrics)`.

  `run_chunk` runs `config.steps_per_chunk` steps in one `lax.scan`; metrics
  are stacked per step: "loss" (mean response-token cross-entropy), "token_prob"
  (mean probability given to the demonstrated response tokens) and "learning_rate".
  A bad config raises ValueError here, before anything compiles (`validate`).
  """
  validate(config, env.strategy_names)
  optimizer = make_optimizer(config)
  schedule = _schedule(config)

  def init(key):
    init_key, key = jax.random.split(key)
    params = model_lib.init_params(init_key, model_config)
    return PretrainState(params, optimizer.init(params), jnp.zeros((), jnp.int32), key)

  def loss_fn(params, prompts, responses, mask):
    logp = model_lib.sequence_logprobs(params, model_config, prompts, responses, mask)
    denom = jnp.maximum(jnp.sum(mask), 1)
    return -jnp.sum(logp) / denom, logp

  def train_step(state, _):
    batch_key = jax.random.fold_in(state.key, state.step)
    prompts, responses, mask, _ = corpus_batch(
        env, env_params, batch_key, config.batch_size, config.mixture, config.slip_rate)
    (loss, logp), grads = jax.value_and_grad(loss_fn, has_aux=True)(
        state.params, prompts, responses, mask)
    updates, opt_state = optimizer.update(grads, state.opt_state, state.params)
    params = optax.apply_updates(state.params, updates)
    token_prob = jnp.sum(jnp.where(mask, jnp.exp(logp), 0.0)) / jnp.maximum(jnp.sum(mask), 1)
    metrics = {"loss": loss, "token_prob": token_prob, "learning_rate": schedule(state.step)}
    return PretrainState(params, opt_state, state.step + 1, state.key), metrics

  @jax.jit
  def run_chunk(state):
    return jax.lax.scan(train_step, state, None, length=config.steps_per_chunk)

  return init, run_chunk


def pretrain(config: PretrainConfig, model_config: model_lib.TransformerConfig, env,
             env_params, key: jax.Array, progress: bool = True,
             log: Optional[Callable[[int, Dict[str, float]], None]] = None):
  """Runs pretraining on the host loop with a progress bar; returns the params.

  The number of steps is rounded up to whole chunks.
  """
  from tqdm.auto import tqdm  # pylint: disable=g-import-not-at-top

  init, run_chunk = make_pretrain(config, model_config, env, env_params)
  state = init(key)
  chunks = -(-config.num_steps // config.steps_per_chunk)
  with tqdm(total=chunks * config.steps_per_chunk, desc="pretrain", disable=not progress,
            unit="step") as bar:
    for _ in range(chunks):
      state, metrics = run_chunk(state)
      last = {k: float(v[-1]) for k, v in metrics.items()}
      bar.update(config.steps_per_chunk)
      bar.set_postfix(loss=f"{last['loss']:.3f}", p_token=f"{last['token_prob']:.3f}")
      if log is not None:
        log(int(state.step), last)
  return state.params


def base_model(env, env_params, *, description: Dict[str, Any],
               model_config: model_lib.TransformerConfig, config: PretrainConfig,
               seed: int, checkpoint_dir: str = "", cache_dir: str = "",
               progress: bool = True):
  """The pretrained base model: restored if already trained, else trained and saved.

  Args:
    env, env_params: the environment and its default params.
    description: JSON-able identification of the env (e.g. name and static
      kwargs); part of the cache key.
    model_config, config, seed: the rest of the cache key.
    checkpoint_dir: an explicit directory; used as is (trained into if empty).
    cache_dir: root of the cache (see `checkpoint.cache_root`).
    progress: show a progress bar while training.

  Returns:
    (params, directory, trained): trained is False when restored.
  """
  model_fields = dataclasses.asdict(model_config)
  if model_fields["matmul_dtype"] == "float32":  # the default compute is implied
    del model_fields["matmul_dtype"]
  key_fields = {"env": description, "model": model_fields,
                "pretrain": dataclasses.asdict(config), "seed": seed}
  directory = checkpoint_dir or os.path.join(
      checkpoint.cache_root(cache_dir), "base",
      f"{description.get('name', 'env')}-{checkpoint.config_hash(key_fields)}")
  abstract = jax.eval_shape(model_lib.init_params, jax.random.key(0), model_config)
  if checkpoint.has_params(directory):
    return checkpoint.load_params(directory, abstract), directory, False
  params = pretrain(config, model_config, env, env_params, jax.random.key(seed),
                    progress=progress)
  checkpoint.save_params(directory, params)
  with open(os.path.join(directory, "config.json"), "w") as f:
    json.dump(key_fields, f, indent=2, default=str)
  return params, directory, True
