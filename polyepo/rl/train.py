"""RL post-training of the policy: GRPO, reward shaping, set RL (Poly-EPO), PPO, Poly-PPO.

One compiled step does all of it: sample B prompts -> N rollouts each -> reward
and strategy label from the environment -> the algorithm's batch
(`polyepo.rl.algorithms`: advantages, and for a critic value targets, over
M >= N responses per prompt) -> μ epochs of the clipped policy-gradient loss over
minibatches (each gradient accumulated over micro-batches,
`polyepo.accumulation`) -> optax update. `make_train` returns pure functions:

  init(base_params, key) -> TrainState                 # the policy starts at the base model
  run_chunk(state, base_params) -> (state, metrics)   # `steps_per_chunk` steps in one lax.scan

Both are vmappable over seeds; `make_train(..., num_seeds=S)` returns them vmapped
(`init(base_params, keys u32[S, 2])`) and jitted. Metrics come back stacked,
[S, steps_per_chunk] per entry.
"""

import dataclasses
from typing import Any, Callable, NamedTuple, Optional, Tuple

import jax
import jax.numpy as jnp
import optax

from polyepo import accumulation, checks, parallel
from polyepo.core import losses, metrics
from polyepo.evaluation import splits
from polyepo.policy import sampling
from polyepo.policy import model as model_lib
from polyepo.policy import value_head as value_head_lib
from polyepo.rl import parts
from polyepo.rl import algorithms as algorithms_lib
from polyepo.rl import estimator_inputs as rollouts_lib


@dataclasses.dataclass(frozen=True)
class TrainConfig:
  """The settings every RL algorithm shares (hashable; checked at construction, `validate`).

  An algorithm's own hyperparameters are bound in its value
  (`polyepo.rl.algorithms`, `config.algorithm`), not here. The defaults are the
  RL configs' (configs/base.py builds `config.train` from them and overrides
  only the size presets), so this is the one place each default is written.

  Attributes:
    prompts_per_step: B, prompts per step.
    samples_per_prompt: N, rollouts per prompt.
    temperature: rollout temperature.
    num_epochs: μ, passes over the rollouts per step.
    num_minibatches: minibatches per epoch; each holds B / num_minibatches
      whole groups (a prompt and its M responses), so it must divide B.
    microbatch_rows: responses per micro-batch of the update: each minibatch's
      gradient is accumulated over micro-batches of whole groups, the most
      that hold at most this many responses (at least one group; as many as
      the minibatch holds or more: the whole minibatch at once); 0: by platform
      (`default_microbatch_rows`). The same loss and gradient to float rounding
      (the micro-batches' losses divide by the minibatch's totals,
      `polyepo.losses.Totals`).
    learning_rate, warmup_steps, weight_decay, grad_clip: the policy's optimiser
      (AdamW, linear warm-up then constant; a critic's gradient is clipped at
      grad_clip too).
    eps_low, eps_high, aggregation, kl_coef: the clipped PG loss (polyepo.losses).
    num_steps: total RL steps.
    steps_per_chunk: steps per compiled chunk.
  """
  prompts_per_step: int = 16
  samples_per_prompt: int = 16
  temperature: float = 1.0
  num_epochs: int = 1
  num_minibatches: int = 2
  microbatch_rows: int = 0
  learning_rate: float = 3e-5
  warmup_steps: int = 5
  weight_decay: float = 0.0
  grad_clip: float = 1.0
  eps_low: float = 0.2
  eps_high: float = 0.28
  aggregation: str = "token_mean"
  kl_coef: float = 0.0
  num_steps: int = 100
  steps_per_chunk: int = 10

  def __post_init__(self):
    validate(self)


def validate(config: TrainConfig) -> None:
  """Raises ValueError naming the field and the valid choices or range, before compiling.

  Learning rate 0 is allowed: the policy then stays the base model (a control).
  """
  checks.one_of("aggregation", config.aggregation, losses.AGGREGATIONS)
  checks.at_least("samples_per_prompt", config.samples_per_prompt, 2)
  for name in ("prompts_per_step", "num_epochs", "num_minibatches", "num_steps",
               "steps_per_chunk"):
    checks.at_least(name, getattr(config, name), 1)
  if config.num_steps % config.steps_per_chunk:
    raise ValueError(f"num_steps={config.num_steps} must be a multiple of "
                     f"steps_per_chunk={config.steps_per_chunk}.")
  if config.prompts_per_step % config.num_minibatches:
    raise ValueError(
        f"num_minibatches={config.num_minibatches} must divide prompts_per_step="
        f"{config.prompts_per_step}: a minibatch holds whole groups (a prompt and its "
        f"samples_per_prompt responses).")
  for name in ("kl_coef", "learning_rate", "warmup_steps", "weight_decay", "microbatch_rows"):
    checks.at_least(name, getattr(config, name), 0)
  checks.greater_than("grad_clip", config.grad_clip, 0)
  checks.greater_than("temperature", config.temperature, 0)
  if not 0 <= config.eps_low < 1 or config.eps_high < 0:
    raise ValueError(f"need 0 <= eps_low < 1 and eps_high >= 0, got "
                     f"eps_low={config.eps_low}, eps_high={config.eps_high}.")


def check(config: TrainConfig, algorithm: algorithms_lib.Algorithm, env) -> None:
  """Raises ValueError naming the field when the algorithm cannot run with these shared
  settings (`Algorithm.check`) or on this env: Poly-PPO's rollout states and windowed
  set RL's windows are step boundaries, so the env must declare
  `has_step_boundaries` (`polyepo.env_api.Env`). `plan.make` runs it before any work."""
  algorithm.check(config)
  if algorithm.step_boundaries and not env.has_step_boundaries:
    raise ValueError(
        f"algorithm {algorithm.name!r} needs an env with step_boundaries (its windows are "
        f"reasoning-step boundaries); {type(env).__name__} has none. Choose a domain that "
        f"marks its steps or another algorithm.")


class TrainState(NamedTuple):
  params: Any
  opt_state: Any
  step: jax.Array      # i32[]
  key: jax.Array       # u32[2], raw PRNG key data (checkpointable)


def make_optimizer(config: TrainConfig,
                   critic: Optional[parts.Critic] = None) -> optax.GradientTransformation:
  """AdamW with linear warm-up and global-norm clipping for the policy.

  With a critic (ppo, poly_ppo) the value head (`params["value_head"]`) has its
  own optimiser (`Critic.optimizer`, through optax.multi_transform); the
  policy's part is the same transformation as for the other algorithms.
  """
  schedule = optax.linear_schedule(0.0, config.learning_rate, max(config.warmup_steps, 1))
  policy = optax.chain(optax.clip_by_global_norm(config.grad_clip),
                       optax.adamw(schedule, weight_decay=config.weight_decay))
  if critic is None:
    return policy
  value = critic.optimizer(config.grad_clip)
  labels = lambda params: {k: "value" if k == value_head_lib.KEY else "policy" for k in params}
  return optax.multi_transform({"policy": policy, "value": value}, labels)


def make_train(config: TrainConfig, algorithm: algorithms_lib.Algorithm,
               model_config: model_lib.TransformerConfig, env, env_params, *,
               num_seeds: Optional[int] = None, seed_batch_size: int = 0,
               mesh=None) -> Tuple[Callable, Callable]:
  """Builds `init(base_params, key)` and `run_chunk(state, base_params)`.

  Args:
    config: the shared RL settings.
    algorithm: the algorithm (`polyepo.rl.algorithms`), its hyperparameters bound.
    model_config: the policy's TransformerConfig.
    env, env_params: the environment and its numeric params.
    num_seeds: if given, the returned functions are vmapped over S seeds and
      jitted: `init(base_params, keys u32[S, 2])`, states with a leading S axis.
    seed_batch_size: with num_seeds, how many seeds `run_chunk` computes at
      once: k = S vmaps all S; 0 < k < S runs them as `lax.map` over batches
      of k (one program either way, same results to float tolerance); 0 picks
      by platform (`parallel.default_seed_batch_size`: all on an accelerator, 1 on a
      CPU). A batch of one seed runs unbatched, which on a CPU is faster than
      vmapping large batches.
    mesh: optional jax.sharding.Mesh with a `data` axis; prompts and rollouts
      are sharded over it (B must be divisible by its size).

  Returns:
    (init, run_chunk); without num_seeds, `run_chunk(state, base_params,
    axis_name=None)` takes the name of an axis it is vmapped over, so that
    the seeds' rollouts stop together. With config.kl_coef > 0 the base
    model scores every rollout: the KL to it enters the loss and is logged
    (`kl_to_base`); otherwise `base_params` is not read (evaluation measures
    the KL). The settings must suit the algorithm and the env (`check`,
    which `plan.make` runs before any work).
  """
  if mesh is not None and config.prompts_per_step % mesh.shape["data"]:
    raise ValueError(f"prompts_per_step={config.prompts_per_step} must be divisible by the "
                     f"{mesh.shape['data']} devices of the data axis.")
  setup = rollouts_lib.Setup(config, model_config, env, mesh)
  critic = algorithm.critic
  optimizer = make_optimizer(config, critic)
  B, N, T = config.prompts_per_step, config.samples_per_prompt, env.max_response_len
  head_critic = critic is not None and critic.reads_features   # reads the sampler's features
  M = algorithm.responses_per_group(config)   # N rollouts, then any responses it adds
  groups_per_minibatch = B // config.num_minibatches
  groups_per_microbatch = accumulation.microbatch_groups(config.microbatch_rows,
                                                         groups_per_minibatch, M)
  loss_config = losses.PGLossConfig(config.eps_low, config.eps_high, config.aggregation,
                                    config.kl_coef)

  def init(params, key):
    """A state whose policy starts from `params` (the base model); key: u32[2]."""
    key = jax.random.wrap_key_data(key) if key.dtype == jnp.uint32 else key
    if critic:  # a zero-output value head of its own (polyepo.value_head)
      params = critic.init(jax.random.fold_in(key, 1 << 30), params, model_config)
    return TrainState(params, optimizer.init(params), jnp.zeros((), jnp.int32),
                      jax.random.key_data(key))

  def logprobs(params, prompts, tokens, mask, count=N):
    """Prompts [G, P], responses [G * count, T] -> f32[G * count, T]; a prompt is run once."""
    return model_lib.sequence_logprobs(params, model_config, prompts, tokens, mask,
                                       samples_per_prompt=count)

  def logprobs_and_values(params, prompts, tokens, mask, surprise=None):
    """Prompts [G, P], responses [G * M, T] (surprise: None or [G * M, T, k], what a
    head reads besides the features) -> (log-probs, V(s_t)), each f32[G * M, T]."""
    logp, features = model_lib.sequence_logprobs_and_features(
        params, model_config, prompts, tokens, mask, samples_per_prompt=M)
    return logp, critic.values(params, model_config, prompts, tokens, mask, M, features,
                               surprise)

  def update(params, opt_state, batch):
    """One optimiser step on G whole groups: prompts [G, P], the rest [G, M, ...].

    The gradient is accumulated over micro-batches of `groups_per_microbatch`
    groups (`TrainConfig.microbatch_rows`), each loss divided by the totals of
    all G groups, so the sum is the minibatch's loss and gradient.
    """
    totals = losses.batch_totals(batch["loss_mask"].reshape(-1, T))

    def loss_fn(p, micro):
      """Loss and metrics of a micro-batch: prompts [g, P], the rest [g, M, ...]."""
      prompts = micro["prompts"]
      rest = jax.tree.map(lambda x: x.reshape((-1,) + x.shape[2:]),
                          {k: v for k, v in micro.items() if k != "prompts"})
      if critic:
        logp, values = logprobs_and_values(p, prompts, rest["tokens"], rest["mask"],
                                           rest.get("surprise"))
      else:
        logp = logprobs(p, prompts, rest["tokens"], rest["mask"])
      loss, m = losses.clipped_pg_loss(logp, rest["old_logp"], rest["advantages"],
                                       rest["loss_mask"], loss_config, rest["ref_logp"],
                                       totals)
      if critic:
        m["value_loss"] = critic.loss(values, rest["old_values"], rest["returns"],
                                      rest["loss_mask"], totals.tokens)
        loss = loss + m["value_loss"]   # reaches the value head only
      return loss, m

    grad_fn = jax.value_and_grad(loss_fn, has_aux=True)
    (loss, loss_metrics), grads = accumulation.accumulate(
        grad_fn, params, batch, groups_per_minibatch // groups_per_microbatch)
    updates, opt_state = optimizer.update(grads, opt_state, params)
    loss_metrics = dict(loss_metrics, loss=loss, grad_norm=optax.tree.norm(grads))
    return optax.apply_updates(params, updates), opt_state, loss_metrics

  def train_step(state: TrainState, base_params, axis_name=None):
    key = jax.random.fold_in(jax.random.wrap_key_data(state.key), state.step)
    problem_key, rollout_key, subset_key, shuffle_key = jax.random.split(key, 4)
    problems = splits.sample(env, problem_key, env_params, B)             # train split
    prompts = parallel.shard_prompts(env.prompt_tokens(problems), mesh)  # [B, P]
    rollout = sampling.sample(state.params, model_config, rollout_key, prompts,
                              max_new_tokens=T, temperature=config.temperature,
                              samples_per_prompt=N, axis_name=axis_name,
                              return_features=head_critic)                # [B*N, T]
    repeated = jax.tree.map(lambda x: jnp.repeat(x, N, axis=0), problems)
    reward, label = env.score(repeated, rollout.tokens)
    reward, label = reward.reshape(B, N), label.reshape(B, N)
    batch, extra_metrics = algorithm.build_batch(
        setup, rollouts_lib.Rollouts(state.params, problems, prompts, rollout, reward, label),
        subset_key, axis_name)
    per_group = lambda x: x.reshape((B, -1) + x.shape[1:])                # [B, M, ...]
    # The base model's log-probs are needed only for the KL term of the loss
    # (evaluation measures the KL to the base model either way).
    if config.kl_coef:
      ref_logp = logprobs(base_params, prompts, batch["tokens"].reshape(B * M, T),
                          batch["mask"].reshape(B * M, T), count=M)
      batch["ref_logp"] = per_group(ref_logp)
    else:
      batch["ref_logp"] = None
    batch["prompts"] = prompts

    def epoch(carry, epoch_key):
      params, opt_state = carry
      order = jax.random.permutation(epoch_key, B).reshape(config.num_minibatches,
                                                           groups_per_minibatch)

      def minibatch_step(carry, idx):
        params, opt_state = carry
        params, opt_state, m = update(params, opt_state, jax.tree.map(lambda x: x[idx], batch))
        return (params, opt_state), m

      return jax.lax.scan(minibatch_step, (params, opt_state), order)

    (params, opt_state), loss_metrics = jax.lax.scan(
        epoch, (state.params, state.opt_state), jax.random.split(shuffle_key, config.num_epochs))
    loss_metrics = jax.tree.map(jnp.mean, loss_metrics)

    step_metrics = dict(
        loss_metrics,
        **metrics.rollout_metrics(reward, label, rollout.logprobs, rollout.mask,
                                  env.strategy_families),
        **extra_metrics)
    if config.kl_coef:
      step_metrics["kl_to_base"] = losses.aggregate(
          losses.kl_k3(batch["old_logp"], batch["ref_logp"]), batch["loss_mask"], "token_mean")
    return TrainState(params, opt_state, state.step + 1, state.key), step_metrics

  def run_chunk(state, base_params, axis_name=None):
    return jax.lax.scan(lambda s, _: train_step(s, base_params, axis_name), state, None,
                        length=config.steps_per_chunk)

  if num_seeds is None:
    return init, run_chunk
  return (jax.jit(jax.vmap(init, in_axes=(None, 0))),
          jax.jit(parallel.over_seeds(run_chunk, num_seeds, seed_batch_size)))
