"""Supervised pretraining of the base model on strategy demonstrations, in two stages.

A real base model knows many ways to solve a problem but prefers a few. The two
stages build that on purpose, keeping competence apart from preference:

1. **competence** (`num_steps`): demonstrations of strategies drawn from
   `mixture` (balanced by default) with arithmetic slips at `slip_rate`; the
   loss is next-token cross-entropy on the whole response (EOS included), so
   every strategy is learned.
2. **preference** (`preference_steps`, optional): starts from the competence
   stage's model. Half of each batch is drawn from the skewed
   `preference_mixture` and trained on each response's *opening* only
   (`polyepo.forced.openings`: its first tokens, up to the one that tells its
   strategy apart from every other applicable strategy's); the other half is
   drawn as in the competence stage and trained on everything *after* the
   opening. The loss is the sum of the two halves' mean token losses. So the
   skew moves only which strategy the model starts, and the rest keeps being
   trained as before (a model trained on openings alone forgets how to carry
   the strategies out, since nothing after the opening is trained any more).

The competence stage's model is the base model of the same config without a
preference stage, and is cached as such (`base_model`): changing the
preference stage does not retrain it.

The corpus is generated on the fly inside the jitted step from training
problems only, and a step reads each micro-batch's responses only as far as its
last trained token (`polyepo.corpus`). An interrupted pretraining resumes from
its last saved state (`pretrain`'s progress_dir, `base_model`).

  state = init(key); state, metrics = run_chunk(state)   # one compiled chunk of steps
"""

import contextlib
import dataclasses
import json
import os
import shutil
from typing import Any, Callable, Dict, NamedTuple, Optional, Sequence, Tuple

import jax
import jax.numpy as jnp
import optax
import orbax.checkpoint as ocp

from polyepo import accumulation, checks
from polyepo.evaluation import splits
from polyepo.io import checkpoint
from polyepo.policy import model as model_lib
from polyepo.pretraining import corpus


@dataclasses.dataclass(frozen=True)
class PretrainConfig:
  """Static settings of a pretraining run (hashable; validated by `validate`).

  mixture, slip_rate and num_steps differ per domain and have no default (each
  domain declares its values beside its env, `pretrain_defaults`, with
  fallbacks in configs/pretrain.py); the other defaults are the configs'
  (configs/pretrain.py builds `config.pretrain` from them).

  Attributes:
    mixture: competence stage: unnormalised weight of each strategy, in the
      env's strategy order; per problem it is renormalised over the strategies
      that apply.
    slip_rate: competence stage: probability that a demonstration carries an
      arithmetic slip.
    num_steps: competence stage: optimiser steps.
    preference_mixture: preference stage: the skewed weights, as `mixture`
      (empty: no preference stage).
    preference_steps: preference stage: optimiser steps (0: none).
    preference_learning_rate: preference stage: peak learning rate (a fresh
      AdamW state, the same warm-up and cosine decay).
    batch_size: demonstrations per step.
    learning_rate: peak Adam learning rate (linear warm-up, cosine decay).
    warmup_steps: warm-up length.
    end_lr_ratio: final learning rate as a fraction of the peak.
    weight_decay: AdamW weight decay.
    grad_clip: global-norm gradient clipping.
    steps_per_chunk: steps per compiled `lax.scan` chunk (host sees metrics
      between chunks).
    microbatch_rows: each step's gradient is accumulated over micro-batches of
      at most this many demonstrations (the batch size or more: the whole batch
      at once; 0: by platform, `corpus.CPU_MICROBATCH_ROWS` on a CPU, see
      `polyepo.accumulation.default_microbatch_rows`), the same loss and gradient to
      float rounding; not part of the cache key.
  """
  mixture: Tuple[float, ...]
  slip_rate: float
  num_steps: int
  preference_mixture: Tuple[float, ...] = ()
  preference_steps: int = 0
  preference_learning_rate: float = 3e-4
  batch_size: int = 256
  learning_rate: float = 3e-3
  warmup_steps: int = 50
  end_lr_ratio: float = 0.05
  weight_decay: float = 0.01
  grad_clip: float = 1.0
  steps_per_chunk: int = 50
  microbatch_rows: int = 0


# Fields that change how a base model is computed but not what it is (to float
# rounding): left out of its cache key.
COMPUTE_FIELDS = ("microbatch_rows",)


def validate(config: PretrainConfig, strategy_names: Sequence[str]) -> None:
  """Raises ValueError naming the field and its valid range, before compiling.

  Args:
    config: the pretraining settings.
    strategy_names: the env's strategies; the mixture has a weight for each.
  """
  checks.at_least("preference_steps", config.preference_steps, 0)
  mixtures = [("mixture", config.mixture)]
  if config.preference_steps:
    mixtures.append(("preference_mixture", config.preference_mixture))
  for name, mixture in mixtures:
    if len(mixture) != len(strategy_names):
      raise ValueError(
          f"{name} has {len(mixture)} weights but the env has "
          f"{len(strategy_names)} strategies: {', '.join(strategy_names)}.")
    if min(mixture) < 0 or sum(mixture) <= 0:
      raise ValueError(f"{name} weights must be >= 0 with a positive sum, got {mixture}.")
  checks.greater_than("preference_learning_rate", config.preference_learning_rate, 0)
  if not 0 <= config.slip_rate < 1:
    raise ValueError(f"slip_rate must be in [0, 1), got {config.slip_rate}.")
  for name in ("num_steps", "batch_size", "steps_per_chunk"):
    checks.at_least(name, getattr(config, name), 1)
  checks.greater_than("learning_rate", config.learning_rate, 0)
  for name in ("warmup_steps", "weight_decay", "microbatch_rows"):
    checks.at_least(name, getattr(config, name), 0)
  if not 0 <= config.end_lr_ratio <= 1:
    raise ValueError(f"end_lr_ratio must be in [0, 1], got {config.end_lr_ratio}.")
  checks.greater_than("grad_clip", config.grad_clip, 0)


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



class Stage(NamedTuple):
  """One stage's schedule (its corpus is described in the module docstring)."""
  num_steps: int
  learning_rate: float


def stages(config: PretrainConfig) -> Dict[str, Stage]:
  """{stage name: Stage} of the stages `config` runs, in order."""
  out = {"competence": Stage(config.num_steps, config.learning_rate)}
  if config.preference_steps:
    out["preference"] = Stage(config.preference_steps, config.preference_learning_rate)
  return out


def without_preference(config: PretrainConfig) -> PretrainConfig:
  """The config whose base model is `config`'s competence stage."""
  defaults = {f.name: f.default for f in dataclasses.fields(PretrainConfig)
              if f.name.startswith("preference_")}
  return dataclasses.replace(config, **defaults)


def _schedule(config: PretrainConfig, stage: Stage):
  return optax.warmup_cosine_decay_schedule(
      init_value=0.0, peak_value=stage.learning_rate,
      warmup_steps=min(config.warmup_steps, stage.num_steps // 2),
      decay_steps=max(stage.num_steps, config.warmup_steps + 1),
      end_value=stage.learning_rate * config.end_lr_ratio)


def make_optimizer(config: PretrainConfig, stage: Optional[Stage] = None
                   ) -> optax.GradientTransformation:
  """Clipped AdamW with the stage's schedule (default: the competence stage)."""
  stage = stage or stages(config)["competence"]
  return optax.chain(
      optax.clip_by_global_norm(config.grad_clip),
      optax.adamw(_schedule(config, stage), weight_decay=config.weight_decay))


def make_pretrain(config: PretrainConfig, model_config: model_lib.TransformerConfig,
                  env, env_params, stage: str = "competence") -> Tuple[Callable, Callable]:
  """Builds `init(key, params=None) -> PretrainState` and a jitted `run_chunk(state)`.

  `run_chunk` runs `config.steps_per_chunk` steps of `stage` in one `lax.scan`;
  metrics are stacked per step: "loss" (mean cross-entropy over the trained
  response tokens; for the preference stage the sum of the opening and
  continuation halves'), "token_prob" (mean probability given to the trained
  tokens; for the preference stage to the openings), and "learning_rate".
  `init` starts from fresh parameters, or from `params` (the previous stage's)
  with a fresh optimiser. A bad config raises ValueError here, before anything
  compiles (`validate`).
  """
  validate(config, env.strategy_names)
  if stage not in stages(config):
    raise ValueError(f"stage={stage!r} is not run by this config; valid choices: "
                     f"{', '.join(stages(config))}.")
  spec = stages(config)[stage]
  optimizer = make_optimizer(config, spec)
  schedule = _schedule(config, spec)

  def init(key, params=None):
    init_key, key = jax.random.split(key)
    if params is None:
      params = model_lib.init_params(init_key, model_config)
    return PretrainState(params, optimizer.init(params), jnp.zeros((), jnp.int32), key)

  def batches(key):
    """[(prompts, responses, mask)]: the parts whose mean token losses are summed."""
    if stage == "competence":
      prompts, responses, mask, _ = corpus.corpus_batch(
          env, env_params, key, config.batch_size, config.mixture, config.slip_rate)
      return [(prompts, responses, mask)]
    half = config.batch_size // 2
    opening_key, replay_key = jax.random.split(key)
    skewed = corpus.corpus_batch(env, env_params, opening_key, half, config.preference_mixture,
                                 0.0, part="opening")
    replay = corpus.corpus_batch(env, env_params, replay_key, config.batch_size - half,
                                 config.mixture, config.slip_rate, part="continuation")
    return [skewed[:3], replay[:3]]

  def train_step(state, _):
    batch_key = jax.random.fold_in(state.key, state.step)
    parts = batches(batch_key)
    counts = [jnp.maximum(jnp.sum(mask), 1) for _, _, mask in parts]
    num_micro = corpus.num_microbatches([len(part[0]) for part in parts], config.microbatch_rows)
    # Rows of similar length share a micro-batch, whose responses are cut to them.
    orders = [corpus.length_order(mask, num_micro) for _, _, mask in parts]
    parts = [tuple(x[order] for x in part) for part, order in zip(parts, orders)]

    def micro_step(params, micro):
      """The loss (the sum of the parts'), the first part's token probability
      and the gradient. Each part is divided by the whole batch's count, so the
      sum over micro-batches is the batch's loss and gradient."""
      results = [corpus.part_value_and_grad(params, model_config, *part, count, env.eos_id)
                 for part, count in zip(micro, counts)]
      (loss, token_prob), grads = results[0]
      for (part_loss, _), part_grads in results[1:]:
        loss, grads = loss + part_loss, jax.tree.map(jnp.add, grads, part_grads)
      return (loss, token_prob), grads

    (loss, token_prob), grads = accumulation.accumulate(micro_step, state.params, parts, num_micro)
    updates, opt_state = optimizer.update(grads, state.opt_state, state.params)
    params = optax.apply_updates(state.params, updates)
    metrics = {"loss": loss, "token_prob": token_prob, "learning_rate": schedule(state.step)}
    return PretrainState(params, opt_state, state.step + 1, state.key), metrics

  @jax.jit
  def run_chunk(state):
    return jax.lax.scan(train_step, state, None, length=config.steps_per_chunk)

  return init, run_chunk


SAVE_EVERY_CHUNKS = 4
"""With a `progress_dir`, the stage's state is saved every this many chunks (200
steps at the default 50 a chunk: a few minutes of 2-core time lost at most)."""


def pretrain(config: PretrainConfig, model_config: model_lib.TransformerConfig, env,
             env_params, key: jax.Array, progress: bool = True,
             log: Optional[Callable[[str, int, Dict[str, float]], None]] = None,
             competence_params=None, progress_dir: str = "",
             save_every_chunks: int = SAVE_EVERY_CHUNKS):
  """Runs the stages on the host loop with a progress bar each; returns the params.

  Each stage's steps are rounded up to whole chunks. `log(stage, step, metrics)`
  is called after every chunk with its last step's metrics. With
  `competence_params` (the competence stage's result), only the later stages run.

  With `progress_dir`, each stage's whole state (params, optimiser state, step,
  key) is saved under `progress_dir/<stage>` every `save_every_chunks` chunks and
  at the stage's end, and a later call with the same arguments resumes from the
  last one saved: the batches are drawn from (key, step), so a resumed stage
  gives the params an uninterrupted one gives. The caller removes the
  directory once the result is kept (`base_model` does).
  """
  from tqdm.auto import tqdm  # pylint: disable=g-import-not-at-top

  checks.at_least("save_every_chunks", save_every_chunks, 1)
  params = competence_params
  for i, (name, spec) in enumerate(stages(config).items()):
    if name == "competence" and params is not None:
      continue
    init, run_chunk = make_pretrain(config, model_config, env, env_params, name)
    state = init(jax.random.fold_in(key, i), params)
    chunks = -(-spec.num_steps // config.steps_per_chunk)
    with contextlib.ExitStack() as stack:
      manager = None
      if progress_dir:
        manager = stack.enter_context(ocp.CheckpointManager(
            os.path.join(os.path.abspath(progress_dir), name),
            options=ocp.CheckpointManagerOptions(max_to_keep=1, create=True)))
        if manager.latest_step() is not None:
          abstract = jax.tree.map(ocp.utils.to_shape_dtype_struct, state)
          state = PretrainState(*manager.restore(manager.latest_step(),
                                                 args=ocp.args.StandardRestore(abstract)))
      done = int(state.step) // config.steps_per_chunk
      bar = stack.enter_context(tqdm(total=chunks * config.steps_per_chunk,
                                     initial=done * config.steps_per_chunk,
                                     desc=f"pretrain: {name}", disable=not progress,
                                     unit="step"))
      for chunk in range(done, chunks):
        state, metrics = run_chunk(state)
        last = {k: float(v[-1]) for k, v in metrics.items()}
        bar.update(config.steps_per_chunk)
        bar.set_postfix(loss=f"{last['loss']:.3f}", p_token=f"{last['token_prob']:.3f}")
        if manager is not None and ((chunk + 1) % save_every_chunks == 0
                                    or chunk + 1 == chunks):
          manager.save(int(state.step), args=ocp.args.StandardSave(state))
        if log is not None:
          log(name, int(state.step), last)
    params = state.params
  return params


def cache_key_fields(description: Dict[str, Any], model_config: model_lib.TransformerConfig,
                     config: PretrainConfig, seed: int) -> Dict[str, Any]:
  """What identifies a base model: hashed into its cache key, saved as its config.json.

  Leaves out what changes only how it is computed (`COMPUTE_FIELDS`, and the
  default float32 matmuls), so that those settings find the same cached model.
  Holds `splits.SCHEME`, which decides the training problems, so that a model
  pretrained under another split scheme is never reused.
  """
  model_fields = dataclasses.asdict(model_config)
  if model_fields["matmul_dtype"] == "float32":  # the default compute is implied
    del model_fields["matmul_dtype"]
  pretrain_fields = {k: v for k, v in dataclasses.asdict(config).items()
                     if k not in COMPUTE_FIELDS}
  return {"env": description, "model": model_fields, "pretrain": pretrain_fields,
          "seed": seed, "splits": splits.SCHEME}


# Model fields that change how the model computes, not which parameters it has:
# a base checkpoint is restored under any value of them (`check_checkpoint`).
MODEL_COMPUTE_FIELDS = ("matmul_dtype",)


def check_checkpoint(directory: str, model_config: model_lib.TransformerConfig) -> None:
  """Refuses a base-model directory whose config.json records another model.

  config.json, written by `base_model` beside the params (`cache_key_fields`),
  records the `model` section the params were trained with. Each field it
  shares with `model_config`, apart from MODEL_COMPUTE_FIELDS, must be equal. A
  directory without config.json passes (its params are checked when restored,
  `checkpoint.load_params`).

  Raises:
    ValueError: naming the directory and each differing field with both values.
  """
  path = os.path.join(directory, "config.json")
  if not os.path.isfile(path):
    return
  with open(path) as f:
    try:
      saved = json.load(f)
    except ValueError as err:
      raise ValueError(f"base checkpoint {directory}: its config.json is not JSON "
                       f"({err}).") from err
  saved = saved.get("model", {}) if isinstance(saved, dict) else {}
  now = json.loads(json.dumps(dataclasses.asdict(model_config), default=str))
  differ = [f"model.{name}={saved[name]!r}, this config has {now[name]!r}"
            for name in now if name in saved and name not in MODEL_COMPUTE_FIELDS
            and saved[name] != now[name]]
  if differ:
    raise ValueError(f"base checkpoint {directory} was trained with " + "; ".join(differ)
                     + " (see its config.json).")


PROGRESS = "progress"
"""The subdirectory of a base model's directory holding an unfinished
pretraining's saved states (`pretrain`'s progress_dir)."""


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
    checkpoint_dir: an explicit directory; used as is (trained into if empty),
      after `check_checkpoint`.
    cache_dir: root of the cache (see `checkpoint.cache_root`).
    progress: show a progress bar while training.

  A config with a preference stage starts from the base model of the same
  config without one (`without_preference`, itself restored or trained and
  cached), so that changing the preference stage does not retrain competence.
  An interrupted pretraining resumes where it was saved last (`PROGRESS`).

  Returns:
    (params, directory, trained): trained is False when restored.

  Raises:
    ValueError: the directory's config.json records another model
      (`check_checkpoint`), or its params do not fit `model_config`.
  """
  key_fields = cache_key_fields(description, model_config, config, seed)
  directory = checkpoint_dir or os.path.join(
      checkpoint.cache_root(cache_dir), "base",
      f"{description.get('name', 'env')}-{checkpoint.config_hash(key_fields)}")
  check_checkpoint(directory, model_config)
  abstract = jax.eval_shape(model_lib.init_params, jax.random.key(0), model_config)
  if checkpoint.has_params(directory):
    return checkpoint.load_params(directory, abstract), directory, False
  competence = None
  if config.preference_steps:
    competence, _, _ = base_model(env, env_params, description=description,
                                  model_config=model_config, config=without_preference(config),
                                  seed=seed, cache_dir=cache_dir, progress=progress)
  # An interrupted pretraining resumes from its last saved state (`pretrain`),
  # kept beside the params it is training towards until they are saved.
  progress_dir = os.path.join(directory, PROGRESS)
  params = pretrain(config, model_config, env, env_params, jax.random.key(seed),
                    progress=progress, competence_params=competence,
                    progress_dir=progress_dir)
  checkpoint.save_params(directory, params)
  with open(os.path.join(directory, "config.json"), "w") as f:
    json.dump(key_fields, f, indent=2, default=str)
  shutil.rmtree(progress_dir, ignore_errors=True)
  return params, directory, True
