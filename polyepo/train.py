"""RL post-training of the policy: GRPO, reward shaping, set RL (Poly-EPO), PPO, Poly-PPO.

One compiled step does all of it: sample B prompts -> N rollouts each -> reward
and strategy label from the environment -> per-prompt advantages by the
configured estimator -> μ epochs of the clipped policy-gradient loss over
minibatches (each gradient accumulated over micro-batches, `accumulate`) ->
optax update. The critic estimators ("ppo", "poly_ppo") add a
value head (`polyepo.value_head`) and token-level advantages: Poly-PPO also
samples vines from rollout states of the N rollouts (`polyepo.vines`) and
gives set advantages at those states, GAE elsewhere (`polyepo.poly_ppo`); the
vines join their prompt's group, M = N + K·N_v responses. `make_train`
returns pure functions:

  init(base_params, key) -> TrainState                 # the policy starts at the base model
  run_chunk(state, base_params) -> (state, metrics)   # `steps_per_chunk` steps in one lax.scan

Both are vmappable over seeds; `make_train(..., num_seeds=S)` returns them vmapped
(`init(base_params, keys u32[S, 2])`) and jitted. Metrics come back stacked,
[S, steps_per_chunk] per entry.
"""

import dataclasses
import functools
import math
from typing import Any, Callable, NamedTuple, Optional, Tuple

import jax
import jax.numpy as jnp
import optax
from jax.sharding import NamedSharding, PartitionSpec

from polyepo import _checks
from polyepo import advantages as adv_lib
from polyepo import losses, metrics
from polyepo import model as model_lib
from polyepo import objectives, poly_ppo, sampling, splits
from polyepo import gae as gae_lib
from polyepo import value_head as value_head_lib
from polyepo import vines as vines_lib
from polyepo.env_api import DEGENERATE

ESTIMATORS = ("grpo", "reward_shaping", "set_rl", "ppo", "poly_ppo")
NORMALIZE_OVER = ("prompt", "batch")  # what `normalize` standardises over
CRITIC_ESTIMATORS = ("ppo", "poly_ppo")  # a value head, GAE, token-level advantages
SET_ESTIMATORS = ("set_rl", "poly_ppo")  # a set objective


@dataclasses.dataclass(frozen=True)
class TrainConfig:
  """Static settings of an RL run (hashable; validated by `validate`).

  The defaults are the RL configs' (configs/base.py builds `config.train` from
  them, and overrides only the algorithm's fields and the size presets), so
  this is the one place each default is written.

  Attributes:
    estimator: "grpo", "reward_shaping", "set_rl" (Poly-EPO with the
      polychromic objective), "ppo" (GAE from a critic) or "poly_ppo" (set
      advantages at rollout states, GAE elsewhere; note §6.1).
    normalize: grpo / reward_shaping: divide by the group's reward std (False
      is Dr. GRPO); set_rl: standardise each prompt's marginal advantages;
      ppo / poly_ppo: standardise each set's advantages and the step's GAE
      advantages (`polyepo.poly_ppo`).
    normalize_over: with `normalize`, for grpo / reward_shaping / set_rl:
      "prompt" standardises each prompt's group of N (as above); "batch"
      computes each group's advantages unnormalised (centred rewards for
      grpo and reward shaping, raw marginal advantages for set_rl) and
      standardises all B * N of the step together, so a group whose
      advantages are small (an all-correct group under set_rl) keeps them
      small instead of being scaled to unit size.
    lam: reward-shaping weight λ >= 0.
    objective: set objective name for set_rl and poly_ppo (polychromic =
      Poly-EPO / Poly-PPO).
    set_size: n, the set size for set_rl and poly_ppo (1 <= n < N, and
      n < vine_samples with vines).
    num_subsets: 0 for the exact all-subsets advantage (closed form where one
      exists), else K sampled subsets (of each set).
    prompts_per_step: B, prompts per step.
    samples_per_prompt: N, rollouts per prompt.
    temperature: rollout temperature.
    num_epochs: μ, passes over the rollouts per step.
    num_minibatches: minibatches per epoch; each holds B / num_minibatches
      whole groups (a prompt and its N responses), so it must divide B.
    microbatch_rows: responses per micro-batch of the update: each minibatch's
      gradient is accumulated over micro-batches of whole groups, the most
      that hold at most this many responses (at least one group; as many as
      the minibatch holds or more: the whole minibatch at once); 0: by platform
      (`default_microbatch_rows`). The same loss and gradient to float rounding
      (the micro-batches' losses divide by the minibatch's totals,
      `polyepo.losses.Totals`).
    learning_rate, warmup_steps, weight_decay, grad_clip: optimiser (AdamW,
      linear warm-up then constant).
    eps_low, eps_high, aggregation, kl_coef: the clipped PG loss (polyepo.losses).
    num_steps: total RL steps.
    steps_per_chunk: steps per compiled chunk.
    gamma, gae_lambda: ppo / poly_ppo: GAE's discount γ and λ, in [0, 1].
    value_learning_rate: ppo / poly_ppo: Adam learning rate of the value head
      (its own optimiser: the head starts from zero, the policy from the base).
    value_clip: ppo / poly_ppo: ε of the clipped value loss (0: unclipped).
    num_vine_states: poly_ppo: rollout states per prompt besides the prompt
      (K; 0: set RL at the prompt only, GAE after its window).
    vine_samples: poly_ppo: N_v continuations sampled from each rollout state
      (n < N_v: the state's sets of n are drawn from its vines).
    vine_window: poly_ppo: W >= 1, reasoning steps from a rollout state that
      its set advantage covers (the note's window T).
    vine_selection: poly_ppo: how rollout states are drawn among the step
      boundaries (polyepo.vines.SELECTIONS: "uniform" or "early").
  """
  estimator: str = "set_rl"
  normalize: bool = True
  normalize_over: str = "prompt"
  lam: float = 0.0
  objective: str = "polychromic"
  set_size: int = 4
  num_subsets: int = 0
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
  gamma: float = 1.0
  gae_lambda: float = 0.95
  value_learning_rate: float = 1e-3
  value_clip: float = 0.2
  num_vine_states: int = 2
  vine_samples: int = 8
  vine_window: int = 2
  vine_selection: str = "uniform"


def validate(config: TrainConfig) -> None:
  """Raises ValueError naming the field and the valid choices or range, before compiling.

  Learning rate 0 is allowed: the policy then stays the base model (a control).
  """
  _checks.one_of("estimator", config.estimator, ESTIMATORS)
  _checks.one_of("aggregation", config.aggregation, losses.AGGREGATIONS)
  _checks.one_of("normalize_over", config.normalize_over, NORMALIZE_OVER)
  if config.normalize_over == "batch" and (not config.normalize
                                           or config.estimator in CRITIC_ESTIMATORS):
    raise ValueError(f"normalize_over='batch' needs normalize=True and estimator one of "
                     f"grpo, reward_shaping, set_rl; got normalize={config.normalize}, "
                     f"estimator={config.estimator!r}.")
  N = config.samples_per_prompt
  _checks.at_least("samples_per_prompt", N, 2)
  for name in ("prompts_per_step", "num_epochs", "num_minibatches", "num_steps",
               "steps_per_chunk"):
    _checks.at_least(name, getattr(config, name), 1)
  if config.prompts_per_step % config.num_minibatches:
    raise ValueError(
        f"num_minibatches={config.num_minibatches} must divide prompts_per_step="
        f"{config.prompts_per_step}: a minibatch holds whole groups (a prompt and its "
        f"samples_per_prompt responses).")
  for name in ("lam", "kl_coef", "learning_rate", "warmup_steps", "weight_decay",
               "microbatch_rows"):
    _checks.at_least(name, getattr(config, name), 0)
  _checks.greater_than("grad_clip", config.grad_clip, 0)
  _checks.greater_than("temperature", config.temperature, 0)
  if not 0 <= config.eps_low < 1 or config.eps_high < 0:
    raise ValueError(f"need 0 <= eps_low < 1 and eps_high >= 0, got "
                     f"eps_low={config.eps_low}, eps_high={config.eps_high}.")
  if config.estimator in SET_ESTIMATORS:
    _checks.one_of("objective", config.objective, tuple(objectives.OBJECTIVES))
    if config.objective in objectives.NEEDS_ANSWERS:
      raise ValueError(f"objective={config.objective!r} needs answer ids, which training "
                       f"does not collect; choose another objective.")
    if not 1 <= config.set_size < N:
      raise ValueError(f"set_size must satisfy 1 <= set_size < samples_per_prompt={N}, "
                       f"got set_size={config.set_size}.")
    _check_subsets(config, N)
  if config.estimator in CRITIC_ESTIMATORS:
    for name in ("gamma", "gae_lambda"):
      if not 0 <= getattr(config, name) <= 1:
        raise ValueError(f"{name} must be in [0, 1], got {getattr(config, name)}.")
    _checks.greater_than("value_learning_rate", config.value_learning_rate, 0)
    _checks.at_least("value_clip", config.value_clip, 0)
  if config.estimator == "poly_ppo":
    _checks.at_least("num_vine_states", config.num_vine_states, 0)
    _checks.at_least("vine_window", config.vine_window, 1)
    _checks.one_of("vine_selection", config.vine_selection, vines_lib.SELECTIONS)
    if config.num_vine_states and config.vine_samples <= config.set_size:
      raise ValueError(
          f"vine_samples must be > set_size={config.set_size} (a rollout state's sets of n "
          f"are drawn from its vines; with vine_samples = n every vine's advantage is 0), "
          f"got vine_samples={config.vine_samples}.")
    if config.num_vine_states:
      _check_subsets(config, config.vine_samples)


# Responses per micro-batch of the RL update on a CPU when none is asked for
# (microbatch_rows=0).
CPU_MICROBATCH_ROWS = 16


def default_microbatch_rows(minibatch_rows: int, cpu_rows: int = CPU_MICROBATCH_ROWS) -> int:
  """Responses per micro-batch when none is asked for (microbatch_rows=0).

  `cpu_rows` on a CPU: past the caches, the update's element-wise passes over
  memory cost more than its matmuls at these widths, and micro-batches of 16
  responses keep a micro-batch's activations in cache while ACCUMULATE_UNROLL
  of them run side by side on two cores. The whole `minibatch_rows` on an
  accelerator, whose many cores a micro-batch leaves idle and which pays a
  fixed cost per operation, so that splitting a batch only adds operations
  (timings: docs/performance.md).
  """
  return cpu_rows if jax.default_backend() == "cpu" else minibatch_rows


def microbatch_groups(microbatch_rows: int, groups: int, rows_per_group: int,
                      cpu_rows: int = CPU_MICROBATCH_ROWS) -> int:
  """Groups per micro-batch: the largest divisor of `groups` whose rows fit in
  `microbatch_rows` (at least 1); microbatch_rows 0 is `default_microbatch_rows`
  (`cpu_rows` on a CPU)."""
  rows = microbatch_rows or default_microbatch_rows(groups * rows_per_group, cpu_rows)
  most = max(1, rows // rows_per_group)
  return max(d for d in range(1, groups + 1) if groups % d == 0 and d <= most)


# Micro-batches per iteration of `accumulate`'s loop. Two independent ones let
# XLA:CPU run the operations of one beside those of the other on two cores,
# with the same numbers; more per iteration find no more cores to run on, only
# more activations live at once.
ACCUMULATE_UNROLL = 2


def accumulate(fn: Callable, params, batch, num_micro: int):
  """The sum of `fn(params, micro)` over `num_micro` micro-batches of `batch`.

  Micro-batch c holds rows c, c + C, c + 2C, ... of every leaf's leading axis
  (strided: on an axis sharded in blocks over devices, a micro-batch is spread
  over several of them instead of sitting on one); they
  run in a `lax.scan`, ACCUMULATE_UNROLL per iteration, so the activations of
  that many micro-batches are live at a time.
  With fn = jax.value_and_grad(loss) and each micro-batch's loss divided by the
  whole batch's totals (`polyepo.losses.Totals`), this is the batch's loss and
  gradient. num_micro = 1 calls fn on the whole batch.

  Args:
    fn: (params, batch) -> pytree of arrays.
    params: passed to every call.
    batch: pytree of arrays whose leading axis (size G) num_micro divides.
    num_micro: C, number of micro-batches (static).
  """
  if num_micro == 1:
    return fn(params, batch)
  micro = jax.tree.map(
      lambda x: jnp.swapaxes(x.reshape((-1, num_micro) + x.shape[1:]), 0, 1), batch)

  def add(total, one):
    return jax.tree.map(jnp.add, total, fn(params, one)), None

  zeros = jax.tree.map(lambda x: jnp.zeros(x.shape, x.dtype),
                       jax.eval_shape(fn, params, jax.tree.map(lambda x: x[0], micro)))
  return jax.lax.scan(add, zeros, micro, unroll=ACCUMULATE_UNROLL)[0]


def _check_subsets(config: TrainConfig, num_samples: int) -> None:
  """num_subsets fits C(num_samples, n), and an exact advantage is affordable."""
  total = math.comb(num_samples, config.set_size)
  if config.num_subsets < 0 or config.num_subsets > total:
    raise ValueError(f"num_subsets must be 0 (all subsets) or 1..C(N, n) = {total}, "
                     f"got {config.num_subsets}.")
  if config.num_subsets == 0 and config.objective not in adv_lib.CLOSED_FORMS and total > 1 << 16:
    raise ValueError(f"objective={config.objective!r} has no closed form and C(N, n) = "
                     f"{total} subsets are too many to enumerate; set num_subsets.")


def validate_env(config: TrainConfig, env) -> None:
  """Raises ValueError naming the field when the env cannot serve the estimator.

  Poly-PPO's rollout states and windows are step boundaries: the env must
  have `step_boundaries` (`polyepo.env_api.Env`).
  """
  if config.estimator == "poly_ppo" and not callable(getattr(env, "step_boundaries", None)):
    raise ValueError(
        f"estimator='poly_ppo' needs an env with step_boundaries (its rollout states and "
        f"windows are reasoning-step boundaries); {type(env).__name__} has none. Choose a "
        f"domain that marks its steps or another estimator.")


class TrainState(NamedTuple):
  params: Any
  opt_state: Any
  step: jax.Array      # i32[]
  key: jax.Array       # u32[2], raw PRNG key data (checkpointable)


def make_optimizer(config: TrainConfig) -> optax.GradientTransformation:
  """AdamW with linear warm-up and global-norm clipping for the policy.

  With a critic (ppo, poly_ppo) the value head (`params["value_head"]`) has its
  own clipped Adam at `value_learning_rate` (optax.multi_transform); the
  policy's part is the same transformation as for the other estimators.
  """
  schedule = optax.linear_schedule(0.0, config.learning_rate, max(config.warmup_steps, 1))
  policy = optax.chain(optax.clip_by_global_norm(config.grad_clip),
                       optax.adamw(schedule, weight_decay=config.weight_decay))
  if config.estimator not in CRITIC_ESTIMATORS:
    return policy
  value = optax.chain(optax.clip_by_global_norm(config.grad_clip),
                      optax.adam(config.value_learning_rate))
  labels = lambda params: {k: "value" if k == value_head_lib.KEY else "policy" for k in params}
  return optax.multi_transform({"policy": policy, "value": value}, labels)


def group_advantages(config: TrainConfig, rewards: jax.Array, labels: jax.Array,
                     key: jax.Array) -> jax.Array:
  """Advantages of one prompt's group. rewards: f32[N], labels: i32[N] -> f32[N].

  Standardised over the group only with normalize_over="prompt" (see
  `batch_advantages` for "batch").
  """
  per_prompt = config.normalize and config.normalize_over == "prompt"
  if config.estimator == "grpo":
    return adv_lib.grpo_advantage(rewards, normalize=per_prompt)
  if config.estimator == "reward_shaping":
    return adv_lib.reward_shaping_advantage(rewards, labels, config.lam,
                                            normalize=per_prompt)
  a = adv_lib.set_rl_advantage(
      config.objective, rewards, labels, set_size=config.set_size,
      num_subsets=config.num_subsets or None, key=key)
  return adv_lib.normalize_advantage(a) if per_prompt else a


def batch_advantages(config: TrainConfig, rewards: jax.Array, labels: jax.Array,
                     keys: jax.Array) -> jax.Array:
  """Advantages of a step's groups. rewards: f32[B, N], labels: i32[B, N], keys: [B] -> f32[B, N].

  With normalize_over="batch", the groups' unnormalised advantages are
  standardised together: (A - mean A) / (std A + 1e-6) over all B * N.
  """
  advantages = jax.vmap(functools.partial(group_advantages, config))(rewards, labels, keys)
  if config.normalize and config.normalize_over == "batch":
    advantages = adv_lib.normalize_advantage(advantages.reshape(-1)).reshape(advantages.shape)
  return advantages


def _masked_std(x, mask):
  """Standard deviation of x over the True entries of mask (0 when there are none)."""
  m = mask.astype(jnp.float32)
  count = jnp.maximum(jnp.sum(m), 1.0)
  mean = jnp.sum(x * m) / count
  return jnp.sqrt(jnp.sum(jnp.square(x - mean) * m) / count)


def _constrain(x, mesh):
  """Shards the leading (prompt) axis of x over the mesh's `data` axis."""
  if mesh is None:
    return x
  spec = PartitionSpec("data", *([None] * (x.ndim - 1)))
  return jax.lax.with_sharding_constraint(x, NamedSharding(mesh, spec))


def check_seed_batch_size(seed_batch_size: int, num_seeds: int) -> None:
  """Raises ValueError unless 0 <= seed_batch_size <= num_seeds."""
  if not 0 <= seed_batch_size <= num_seeds:
    raise ValueError(f"seed_batch_size={seed_batch_size} must be 0 (by platform: all seeds "
                     f"at once on an accelerator, one at a time on a CPU) or "
                     f"1..num_seeds={num_seeds}.")


def default_seed_batch_size(num_seeds: int) -> int:
  """Seeds computed at once when none is asked for (seed_batch_size=0).

  All of them on an accelerator, which runs many vmapped seeds for little more
  than one, since one seed leaves most of its cores idle; one at a time on a
  CPU, whose cores one seed already keeps busy, so vmapping buys no
  parallelism, and vmapped seeds decode until the longest response of any of
  them ends (they stop together; timings: docs/performance.md).
  """
  return num_seeds if jax.default_backend() != "cpu" else 1


def make_mesh(num_devices: int, prompts_per_step: int):
  """A 1-D `data` mesh over the first num_devices devices, or None for one device.

  num_devices = 0 takes the most devices that divide the prompt batch B; an
  explicit count must divide B and be available (ValueError otherwise).
  Explicit axis types are the default of jax.make_mesh in this JAX; we pass
  Auto so that the sharding constraints inside the train step guide XLA's
  propagation instead of making every op's sharding part of its type.
  """
  devices = jax.devices()
  if num_devices > 0 and prompts_per_step % num_devices:
    raise ValueError(f"num_devices={num_devices} must divide prompts_per_step="
                     f"{prompts_per_step}: prompts are sharded evenly over the devices.")
  if not 0 <= num_devices <= len(devices):
    raise ValueError(f"num_devices={num_devices} must be 0 (all devices that divide the "
                     f"prompt batch) or 1..{len(devices)}, the devices available.")
  count = num_devices or len(devices)
  while prompts_per_step % count:
    count -= 1
  if count == 1:
    return None
  return jax.make_mesh((count,), ("data",), axis_types=(jax.sharding.AxisType.Auto,),
                       devices=devices[:count])


def make_train(config: TrainConfig, model_config: model_lib.TransformerConfig, env,
               env_params, *, num_seeds: Optional[int] = None, seed_batch_size: int = 0,
               mesh=None) -> Tuple[Callable, Callable]:
  """Builds `init(base_params, key)` and `run_chunk(state, base_params)`.

  Args:
    config: the RL settings (validated here).
    model_config: the policy's TransformerConfig.
    env, env_params: the environment and its numeric params.
    num_seeds: if given, the returned functions are vmapped over S seeds and
      jitted: `init(base_params, keys u32[S, 2])`, states with a leading S axis.
    seed_batch_size: with num_seeds, how many seeds `run_chunk` computes at
      once: k = S vmaps all S; 0 < k < S runs them as `lax.map` over batches
      of k (one program either way, same results to float tolerance); 0 picks
      by platform (`default_seed_batch_size`: all on an accelerator, 1 on a
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
    the KL).
  """
  validate(config)
  validate_env(config, env)
  if mesh is not None and config.prompts_per_step % mesh.shape["data"]:
    raise ValueError(f"prompts_per_step={config.prompts_per_step} must be divisible by the "
                     f"{mesh.shape['data']} devices of the data axis.")
  optimizer = make_optimizer(config)
  B, N, T = config.prompts_per_step, config.samples_per_prompt, env.max_response_len
  critic = config.estimator in CRITIC_ESTIMATORS
  K = config.num_vine_states if config.estimator == "poly_ppo" else 0
  N_v = config.vine_samples
  M = N + K * N_v                       # responses per group: roots, then vines
  groups_per_minibatch = B // config.num_minibatches
  groups_per_microbatch = microbatch_groups(config.microbatch_rows, groups_per_minibatch, M)
  loss_config = losses.PGLossConfig(config.eps_low, config.eps_high, config.aggregation,
                                    config.kl_coef)
  num_strategies = len(env.strategy_names)

  def init(params, key):
    """A state whose policy starts from `params` (the base model); key: u32[2]."""
    key = jax.random.wrap_key_data(key) if key.dtype == jnp.uint32 else key
    if critic:  # a zero-output value head of its own (polyepo.value_head)
      head = value_head_lib.init(jax.random.fold_in(key, 1 << 30), model_config.width)
      params = value_head_lib.attach(params, head)
    return TrainState(params, optimizer.init(params), jnp.zeros((), jnp.int32),
                      jax.random.key_data(key))

  def logprobs(params, prompts, tokens, mask, count=N):
    """Prompts [G, P], responses [G * count, T] -> f32[G * count, T]; a prompt is run once."""
    return model_lib.sequence_logprobs(params, model_config, prompts, tokens, mask,
                                       samples_per_prompt=count)

  def old_logprobs(params, prompts, tokens, mask, sampled, count=N):
    """The rollout policy's log-probs of its responses, f32[G * count, T]: at
    temperature 1 the sampler's own (`sampled`), else one forward pass."""
    if config.temperature == 1.0:
      return sampled
    return logprobs(params, prompts, tokens, mask, count=count)

  def logprobs_and_values(params, prompts, tokens, mask):
    """Prompts [G, P], responses [G * M, T] -> (log-probs, V(s_t)), each f32[G * M, T]."""
    logp, features = model_lib.sequence_logprobs_and_features(
        params, model_config, prompts, tokens, mask, samples_per_prompt=M)
    return logp, value_head_lib.apply(params, features)

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
        logp, values = logprobs_and_values(p, prompts, rest["tokens"], rest["mask"])
      else:
        logp = logprobs(p, prompts, rest["tokens"], rest["mask"])
      loss, m = losses.clipped_pg_loss(logp, rest["old_logp"], rest["advantages"],
                                       rest["loss_mask"], loss_config, rest["ref_logp"],
                                       totals)
      if critic:
        m["value_loss"] = gae_lib.value_loss(values, rest["old_values"], rest["returns"],
                                             rest["loss_mask"], config.value_clip,
                                             totals.tokens)
        loss = loss + m["value_loss"]   # reaches the value head only
      return loss, m

    grad_fn = jax.value_and_grad(loss_fn, has_aux=True)
    (loss, loss_metrics), grads = accumulate(
        grad_fn, params, batch, groups_per_minibatch // groups_per_microbatch)
    updates, opt_state = optimizer.update(grads, opt_state, params)
    loss_metrics = dict(loss_metrics, loss=loss, grad_norm=optax.tree.norm(grads))
    return optax.apply_updates(params, updates), opt_state, loss_metrics

  def critic_batch(params, problems, prompts, rollout, reward, label, key, axis_name):
    """PPO / Poly-PPO: vines, values, GAE and set advantages of the step's groups.

    The values V(s_t) come from the features the sampler drew each token from
    (`sampling.Rollout.features`), so no forward pass is run for them; at
    temperature 1 the sampling log-probs are the policy's own and serve as the
    old log-probs too.

    Returns (batch {name: [B, M, ...]}, metrics).
    """
    choose_key, vine_key, subset_key = jax.random.split(key, 3)
    per_group = lambda x: x.reshape((B, -1) + x.shape[1:])
    tokens, mask = per_group(rollout.tokens), per_group(rollout.mask)       # [B, N, T]
    old_logp = per_group(rollout.logprobs)
    old_values = per_group(value_head_lib.apply(params, rollout.features))
    start = jnp.zeros((B, N), jnp.int32)
    if config.estimator == "poly_ppo":
      boundaries = per_group(env.step_boundaries(rollout.tokens))
    else:
      boundaries = jnp.zeros_like(mask)
    loss_mask, states_valid = mask, jnp.ones((B, 1), bool)
    if K:
      states = jax.vmap(lambda k, b: vines_lib.choose_states(
          k, b, K, config.vine_selection))(jax.random.split(choose_key, B), boundaries)
      vines = vines_lib.sample_vines(params, model_config, vine_key, prompts, tokens, states,
                                     samples=N_v, temperature=config.temperature,
                                     axis_name=axis_name, return_features=True)
      flat = lambda x: x.reshape((B, K * N_v) + x.shape[3:])                # [B, K*N_v, ...]
      vine_tokens = flat(vines.tokens).reshape(B * K * N_v, T)
      repeated = jax.tree.map(lambda x: jnp.repeat(x, K * N_v, axis=0), problems)
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
    tokens, mask, loss_mask = (_constrain(x, mesh) for x in (tokens, mask, loss_mask))
    old_logp = per_group(old_logprobs(params, prompts, tokens.reshape(B * M, T),
                                      mask.reshape(B * M, T), old_logp.reshape(B * M, T),
                                      count=M))
    old_logp = jnp.where(loss_mask, old_logp, 0.0)
    old_values = jnp.where(loss_mask, old_values, 0.0)
    groups = jax.vmap(functools.partial(
        poly_ppo.group_advantages, num_roots=N, vine_samples=N_v,
        objective=config.objective if config.estimator == "poly_ppo" else None,
        set_size=config.set_size, num_subsets=config.num_subsets or None,
        window=config.vine_window, gamma=config.gamma, lam=config.gae_lambda,
        normalize=config.normalize))(reward, label, old_values, loss_mask, boundaries, start,
                                     jax.random.split(subset_key, B))
    advantages = poly_ppo.token_advantages(groups, loss_mask, config.normalize)
    batch = dict(tokens=tokens, mask=mask, loss_mask=loss_mask, old_logp=old_logp,
                 advantages=advantages, old_values=old_values, returns=groups.returns)
    in_window, other = loss_mask & groups.window, loss_mask & ~groups.window
    vine_mask = loss_mask[:, N:]
    vine_valid = jnp.any(vine_mask, axis=-1)
    step_metrics = dict(
        explained_variance=gae_lib.explained_variance(old_values, groups.returns, loss_mask),
        advantage_std=_masked_std(advantages, loss_mask))
    if config.estimator == "poly_ppo":
      step_metrics.update(
          rollout_states=jnp.mean(jnp.sum(states_valid, axis=1)),   # the prompt included
          vine_tokens=jnp.sum(vine_mask),
          vine_reward=jnp.sum(reward[:, N:] * vine_valid) / jnp.maximum(jnp.sum(vine_valid), 1),
          advantage_std_rollout=_masked_std(advantages, in_window),
          advantage_std_other=_masked_std(advantages, other),
          rollout_token_share=jnp.sum(in_window) / jnp.maximum(jnp.sum(loss_mask), 1))
    return batch, step_metrics

  def train_step(state: TrainState, base_params, axis_name=None):
    key = jax.random.fold_in(jax.random.wrap_key_data(state.key), state.step)
    problem_key, rollout_key, subset_key, shuffle_key = jax.random.split(key, 4)
    problems = splits.sample(env, problem_key, env_params, B)             # train split
    prompts = _constrain(env.prompt_tokens(problems), mesh)               # [B, P]
    rollout = sampling.sample(state.params, model_config, rollout_key, prompts,
                              max_new_tokens=T, temperature=config.temperature,
                              samples_per_prompt=N, axis_name=axis_name,
                              return_features=critic)                     # [B*N, T]
    repeated = jax.tree.map(lambda x: jnp.repeat(x, N, axis=0), problems)
    reward, label = env.score(repeated, rollout.tokens)
    reward, label = reward.reshape(B, N), label.reshape(B, N)
    per_group = lambda x: x.reshape((B, -1) + x.shape[1:])                # [B, N, ...]
    if critic:
      batch, extra_metrics = critic_batch(
          state.params, problems, prompts, rollout, reward, label,
          jax.random.fold_in(subset_key, 1), axis_name)
    else:
      advantages = batch_advantages(config, reward, label, jax.random.split(subset_key, B))
      tokens, mask = _constrain(rollout.tokens, mesh), _constrain(rollout.mask, mesh)
      old_logp = old_logprobs(state.params, prompts, tokens, mask, rollout.logprobs)
      batch = dict(tokens=per_group(tokens), mask=per_group(mask), loss_mask=per_group(mask),
                   old_logp=per_group(old_logp), advantages=advantages)
      extra_metrics = dict(advantage_std=jnp.std(advantages),
                           **metrics.advantage_alignment(reward, advantages))
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

    counts = jax.vmap(lambda l: metrics.strategy_counts(l, num_strategies))(label)
    correct_label = jnp.where(reward > 0, label, DEGENERATE)
    correct_counts = jax.vmap(lambda l: metrics.strategy_counts(l, num_strategies))(correct_label)
    family = metrics.family_labels(label, env.strategy_families)
    step_metrics = dict(
        loss_metrics,
        reward=jnp.mean(reward),
        pass_at_1=jnp.mean(reward > 0),
        pass_at_n=jnp.mean(jnp.any(reward > 0, axis=1)),
        distinct_strategies=jnp.mean(jax.vmap(metrics.distinct_strategies)(label)),
        distinct_correct_strategies=jnp.mean(
            jax.vmap(metrics.distinct_correct_strategies)(reward, label)),
        distinct_correct_families=jnp.mean(
            jax.vmap(metrics.distinct_correct_strategies)(reward, family)),
        strategy_share=jnp.sum(counts, 0) / (B * N),
        # Share of rollouts that are correct and follow each strategy (the last
        # entry, correct DEGENERATE responses, is left out: it is no strategy).
        correct_strategy_share=jnp.sum(correct_counts, 0)[:num_strategies] / (B * N),
        decoy_mass=jnp.mean(jax.vmap(metrics.decoy_mass)(reward, label)),
        # Mean -log p of the sampled tokens: an unbiased estimate of the per-token
        # entropy of the sampling distribution.
        entropy=-jnp.sum(rollout.logprobs) / jnp.maximum(jnp.sum(rollout.mask), 1),
        response_length=jnp.mean(jnp.sum(rollout.mask, -1)),
        **extra_metrics,
    )
    if config.kl_coef:
      step_metrics["kl_to_base"] = losses.aggregate(
          losses.kl_k3(batch["old_logp"], batch["ref_logp"]), batch["loss_mask"], "token_mean")
    return TrainState(params, opt_state, state.step + 1, state.key), step_metrics

  def run_chunk(state, base_params, axis_name=None):
    return jax.lax.scan(lambda s, _: train_step(s, base_params, axis_name), state, None,
                        length=config.steps_per_chunk)

  if num_seeds is None:
    return init, run_chunk
  check_seed_batch_size(seed_batch_size, num_seeds)

  def seed_batch(states, base_params):
    """A batch of seeds [k, ...]. One seed runs unbatched: a vmapped decode
    loop evaluates its exit test per seed and selects every loop variable, the
    KV cache included, at every step. More are vmapped under a name, so that
    their rollouts stop together (see sampling.sample's axis_name)."""
    if jax.tree.leaves(states)[0].shape[0] == 1:
      out = run_chunk(jax.tree.map(lambda x: x[0], states), base_params)
      return jax.tree.map(lambda x: x[None], out)
    return jax.vmap(lambda s: run_chunk(s, base_params, "seeds"), axis_name="seeds")(states)

  k = seed_batch_size or default_seed_batch_size(num_seeds)
  full = num_seeds - num_seeds % k

  def run_seeds(states, base_params):
    """Batches of k seeds one after another (`lax.map`), then the remainder."""
    if k == num_seeds:
      return seed_batch(states, base_params)
    split = lambda x: x[:full].reshape((full // k, k) + x.shape[1:])
    out = jax.lax.map(lambda s: seed_batch(s, base_params), jax.tree.map(split, states))
    out = jax.tree.map(lambda x: x.reshape((full,) + x.shape[2:]), out)
    if full < num_seeds:
      rest = seed_batch(jax.tree.map(lambda x: x[full:], states), base_params)
      out = jax.tree.map(lambda a, b: jnp.concatenate([a, b]), out, rest)
    return out

  return jax.jit(jax.vmap(init, in_axes=(None, 0))), jax.jit(run_seeds)
