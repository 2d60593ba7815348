r"""What limits the critic: value functions fitted offline to the base model's rollouts.

  python -m experiments.critic_fit --domain=multiplication --out=results/critic_fit

Poly-PPO's and PPO's value head (`polyepo.value_head`) explains a small part of
what a critic could explain at vine states (`gae.state_explained_variance`,
docs/method.md). This separates the head's features from its training: it samples
the shipped base model's rollouts exactly as a Poly-PPO step does (N roots per
prompt, K step-boundary states with N_v vines each) and fits, to convergence on
a fixed set of `train` problems, critics of the Monte Carlo return (γ = 1: the
response's reward):

  head        the value head as RL trains it: an MLP (hidden = width) on the
              policy's final hidden states through stop_gradient;
  wide_head   the same with a 4x wider hidden layer;
  surprise_head  the head reading also the policy's surprise at the tokens
              before the state (`value_head.surprise`; critic.model "surprise"):
              a slip is a token the policy itself thought unlikely;
  trunk       a copy of the base transformer with that head on top, trained
              end to end (the critic has features of its own).

Each is scored on rollouts of `validation` problems (never fitted): explained
variance over all tokens, at the prompt and at the vine states, the latter two
beside the bound (the most any critic can explain there). The head's score is
also given after as many Adam steps as 60 RL steps give it (`ONLINE_STEPS`), to
compare with the critic probe in results/critic_probe. Writes
<out>/<domain>.json when --out is given (adding to the critics a run with the
same settings fitted there before); prints a markdown table.
"""

import functools
import json
import os
import time
from typing import Dict

from absl import app, flags
import jax
import jax.numpy as jnp
import numpy as np
import optax
from tqdm.auto import tqdm

from configs import pretrain as pretrain_config
from experiments import build
from polyepo.core import gae
from polyepo.evaluation import splits
from polyepo.policy import model, sampling
from polyepo.policy import value_head as value_head_lib
from polyepo.rl import vines as vines_lib

CRITICS = ("head", "wide_head", "surprise_head", "trunk")

_DOMAIN = flags.DEFINE_string("domain", "multiplication", "The synthetic domain.")
_TRAIN_PROMPTS = flags.DEFINE_integer("train_prompts", 1024, "Prompts of `train` to fit on.")
_EVAL_PROMPTS = flags.DEFINE_integer("eval_prompts", 256, "Prompts of `validation` to score.")
_HEAD_STEPS = flags.DEFINE_integer("head_steps", 3000, "Adam steps of each head.")
_TRUNK_STEPS = flags.DEFINE_integer("trunk_steps", 600, "Adam steps of the trunk critic.")
_TRUNK_LEARNING_RATE = flags.DEFINE_float("trunk_learning_rate", 3e-4,
                                          "The trunk critic's Adam learning rate.")
_CRITICS = flags.DEFINE_list("critics", list(CRITICS), "Which critics to fit (module doc).")
_SEED = flags.DEFINE_integer("seed", 0, "PRNG seed of the rollouts and the critics.")
_OUT = flags.DEFINE_string("out", "", "Directory for <domain>.json (none: print only).")

ROOTS, STATES, VINES = 16, 2, 8     # N, K, N_v: configs/poly_ppo.py's defaults
CHUNK = 64                          # prompts per sampler call
HEAD_BATCH = 8192                   # tokens per head step
TRUNK_BATCH = 8                     # prompts (each with its N + K * N_v responses) per step
HEAD_LEARNING_RATE = 1e-3           # polyepo.rl.parts.Critic.learning_rate's default
ONLINE_STEPS = 120                  # 60 RL steps x num_epochs x num_minibatches


def sample_rollouts(env, env_params, model_config, params, key, num_prompts: int, split: str):
  """The base model's roots and vines on `num_prompts` problems of `split`.

  Returns numpy arrays, per prompt M = N + K * N_v responses (roots first):
    prompts i32[B, P]; tokens i32[B, M, T]; mask, loss_mask bool[B, M, T] (what
    the model reads; the tokens the response sampled); start i32[B, M] (0 for
    roots, the state's position for vines); reward f32[B, M]; features
    f32[B, M, T, d] (the sampler's, 0 before a vine's state); logprobs
    f32[B, M, T] (every token's under the policy, a vine's prefix included: at
    temperature 1 the sampling log-probs that RL's surprise critic reads).
  """
  T = env.max_response_len

  @jax.jit
  def chunk(key):
    problem_key, root_key, state_key, vine_key = jax.random.split(key, 4)
    problems = splits.sample(env, problem_key, env_params, CHUNK, split)
    prompts = env.prompt_tokens(problems)
    roots = sampling.sample(params, model_config, root_key, prompts, max_new_tokens=T,
                            samples_per_prompt=ROOTS, return_features=True)
    repeat = lambda count: jax.tree.map(lambda x: jnp.repeat(x, count, axis=0), problems)
    root_reward, _ = env.score(repeat(ROOTS), roots.tokens)
    per_prompt = lambda x: x.reshape((CHUNK, -1) + x.shape[1:])
    boundaries = per_prompt(env.step_boundaries(roots.tokens))
    states = jax.vmap(lambda k, b: vines_lib.choose_states(k, b, STATES))(
        jax.random.split(state_key, CHUNK), boundaries)
    vines = vines_lib.sample_vines(params, model_config, vine_key, prompts,
                                   per_prompt(roots.tokens), states, samples=VINES,
                                   return_features=True)
    flat = lambda x: x.reshape((CHUNK, STATES * VINES) + x.shape[3:])
    vine_reward, _ = env.score(repeat(STATES * VINES), flat(vines.tokens).reshape(-1, T))
    cat = lambda a, b: jnp.concatenate([per_prompt(a), flat(b)], axis=1)
    return dict(prompts=prompts, tokens=cat(roots.tokens, vines.tokens),
                mask=cat(roots.mask, vines.mask), loss_mask=cat(roots.mask, vines.loss_mask),
                start=cat(jnp.zeros((CHUNK * ROOTS,), jnp.int32), vines.start),
                reward=jnp.concatenate([per_prompt(root_reward),
                                        vine_reward.reshape(CHUNK, -1)], axis=1),
                features=cat(roots.features, vines.features))

  @jax.jit
  def logprobs(prompts, tokens, mask):
    """Teacher-forced log-probs of every token, a vine's prefix included."""
    B, M, _ = tokens.shape
    return model.sequence_logprobs(params, model_config, prompts, tokens.reshape(B * M, T),
                                   mask.reshape(B * M, T), samples_per_prompt=M).reshape(B, M, T)

  keys = jax.random.split(key, -(-num_prompts // CHUNK))
  parts = []
  for k in keys:
    part = chunk(k)
    part["logprobs"] = logprobs(part["prompts"], part["tokens"], part["mask"])
    parts.append(jax.device_get(part))
  return {name: np.concatenate([p[name] for p in parts])[:num_prompts] for name in parts[0]}


def scores(values: np.ndarray, data: Dict[str, np.ndarray]) -> Dict[str, float]:
  """Explained variance of V f32[B, M, T] over all tokens, at the prompt and at the
  vine states (each beside its bound)."""
  B = values.shape[0]
  reward = jnp.asarray(data["reward"], jnp.float32)
  returns = jnp.broadcast_to(reward[..., None], values.shape)
  every = gae.explained_variance(values, returns, jnp.asarray(data["loss_mask"]))
  prompt, prompt_bound = gae.state_explained_variance(
      values[:, :ROOTS, 0], reward[:, :ROOTS], jnp.ones((B, ROOTS), bool))
  by_state = lambda x: jnp.asarray(x).reshape((B * STATES, VINES) + x.shape[2:])
  start = by_state(data["start"][:, ROOTS:])
  state_values = jnp.take_along_axis(by_state(values[:, ROOTS:]), start[..., None], -1)[..., 0]
  valid = by_state(data["loss_mask"][:, ROOTS:].any(-1))
  states, states_bound = gae.state_explained_variance(
      state_values, by_state(data["reward"][:, ROOTS:]).astype(jnp.float32), valid)
  return {name: round(float(value), 4) for name, value in dict(
      all_tokens=every, prompt=prompt, prompt_bound=prompt_bound, states=states,
      states_bound=states_bound).items()}


def inputs(data, with_surprise: bool) -> np.ndarray:
  """What a head reads: the policy's features f32[B, M, T, d], and with
  `with_surprise` the `value_head.surprise` inputs after them."""
  if not with_surprise:
    return data["features"]
  surprise = value_head_lib.surprise(data["logprobs"], data["mask"])
  return np.concatenate([data["features"], np.asarray(surprise)], -1)


def fit_head(key, train, held_out, hidden: int, with_surprise: bool = False,
             checkpoints=(ONLINE_STEPS,)):
  """A value head fitted to the training tokens' returns; its scores at `checkpoints`
  and after `--head_steps` Adam steps, on the held-out rollouts and the training set."""
  features = inputs(train, with_surprise)[train["loss_mask"]]               # [tokens, d]
  targets = np.broadcast_to(train["reward"][..., None], train["loss_mask"].shape)
  features, targets = jnp.asarray(features), jnp.asarray(targets[train["loss_mask"]])
  head = value_head_lib.init(key, features.shape[-1], hidden)
  optimizer = optax.adam(HEAD_LEARNING_RATE)

  @functools.partial(jax.jit, static_argnums=2)
  def run(head, opt_state, steps, key):
    def step(carry, key):
      head, opt_state = carry
      index = jax.random.randint(key, (HEAD_BATCH,), 0, features.shape[0])
      loss = lambda h: jnp.mean(jnp.square(value_head_lib.apply(h, features[index])
                                           - targets[index]))
      grads = jax.grad(loss)(head)
      updates, opt_state = optimizer.update(grads, opt_state)
      return (optax.apply_updates(head, updates), opt_state), None
    return jax.lax.scan(step, (head, opt_state), jax.random.split(key, steps))[0]

  values = jax.jit(value_head_lib.apply)
  result, done, opt_state = {}, 0, optimizer.init(head)
  for steps in sorted(set(checkpoints) | {_HEAD_STEPS.value}):
    head, opt_state = run(head, opt_state, steps - done, jax.random.fold_in(key, steps))
    done = steps
    result[f"step_{steps}"] = scores(values(head, inputs(held_out, with_surprise)), held_out)
  result["train_set"] = scores(values(head, inputs(train, with_surprise)), train)
  return result


def fit_trunk(key, params, model_config, train, held_out):
  """A copy of the base model with a value head, trained end to end on the returns."""
  M = ROOTS + STATES * VINES
  critic = value_head_lib.attach({}, value_head_lib.init(key, model_config.width, trunk=params))
  optimizer = optax.chain(optax.clip_by_global_norm(1.0), optax.adam(_TRUNK_LEARNING_RATE.value))

  def values(critic, prompts, tokens, mask):
    """prompts [g, P], tokens/mask [g, M, T] -> V f32[g, M, T]."""
    g, _, T = tokens.shape
    return value_head_lib.values(critic, model_config, prompts, tokens.reshape(g * M, T),
                                 mask.reshape(g * M, T), samples_per_prompt=M).reshape(g, M, T)

  @jax.jit
  def step(critic, opt_state, batch):
    def loss(c):
      error = values(c, batch["prompts"], batch["tokens"], batch["mask"]) - batch["reward"][
          ..., None]
      m = batch["loss_mask"]
      return jnp.sum(jnp.square(error) * m) / jnp.maximum(jnp.sum(m), 1)
    grads = jax.grad(loss)(critic)
    updates, opt_state = optimizer.update(grads, opt_state, critic)
    return optax.apply_updates(critic, updates), opt_state

  names = ("prompts", "tokens", "mask", "loss_mask", "reward")
  opt_state, rng = optimizer.init(critic), np.random.default_rng(_SEED.value)
  for _ in tqdm(range(_TRUNK_STEPS.value), desc="trunk critic", unit="step"):
    index = rng.choice(len(train["prompts"]), TRUNK_BATCH, replace=False)
    critic, opt_state = step(critic, opt_state, {n: jnp.asarray(train[n][index]) for n in names})

  predict = jax.jit(values)
  value_of = lambda data: np.concatenate([
      np.asarray(predict(critic, *(data[n][i:i + CHUNK] for n in names[:3])))
      for i in range(0, len(data["prompts"]), CHUNK)])
  return {f"step_{_TRUNK_STEPS.value}": scores(value_of(held_out), held_out),
          "train_set": scores(value_of(train), train)}


def main(argv):
  del argv
  unknown = set(_CRITICS.value) - set(CRITICS)
  if unknown:
    raise app.UsageError(f"--critics: unknown {sorted(unknown)}; choose from {CRITICS}.")
  config = pretrain_config.get_config(f"domain={_DOMAIN.value}")
  env, model_config, params, _ = build.base_model(config)
  env_params = env.default_params()
  key = jax.random.key(_SEED.value)
  started = time.time()
  train = sample_rollouts(env, env_params, model_config, params, jax.random.fold_in(key, 0),
                          _TRAIN_PROMPTS.value, "train")
  held_out = sample_rollouts(env, env_params, model_config, params,
                             jax.random.fold_in(key, 1), _EVAL_PROMPTS.value, "validation")
  result = {"domain": _DOMAIN.value, "train_prompts": _TRAIN_PROMPTS.value,
            "eval_prompts": _EVAL_PROMPTS.value, "roots": ROOTS, "states": STATES,
            "vines": VINES, "seed": _SEED.value, "head_steps": _HEAD_STEPS.value,
            "trunk_steps": _TRUNK_STEPS.value,
            "trunk_learning_rate": _TRUNK_LEARNING_RATE.value, "critics": {}}
  path = os.path.join(_OUT.value, f"{_DOMAIN.value}.json") if _OUT.value else ""
  if path and os.path.exists(path):   # the same rollouts: add to the critics fitted before
    with open(path) as f:
      previous = json.load(f)
    if {k: v for k, v in previous.items() if k != "critics"} == {
        k: v for k, v in result.items() if k != "critics"}:
      result["critics"] = previous["critics"]
  print(f"rollouts: {time.time() - started:.0f} s", flush=True)
  hidden = {"head": model_config.width, "wide_head": 4 * model_config.width,
            "surprise_head": model_config.width}
  for name in _CRITICS.value:
    if name == "trunk":
      fit = fit_trunk(jax.random.fold_in(key, 2), params, model_config, train, held_out)
    else:
      fit = fit_head(jax.random.fold_in(key, hidden[name]), train, held_out, hidden[name],
                     with_surprise=name == "surprise_head")
    result["critics"][name] = fit
    print(name, json.dumps(fit), f"{time.time() - started:.0f} s", flush=True)
  print(table(result))
  if path:
    os.makedirs(_OUT.value, exist_ok=True)
    with open(path, "w") as f:
      json.dump(result, f, indent=2, sort_keys=True)
      f.write("\n")


def table(result) -> str:
  """Markdown: per critic and checkpoint, held-out critic / bound."""
  lines = ["| critic | fit | all tokens | prompt: critic / bound | vine states: critic / bound |",
           "|---|---|---|---|---|"]
  for name in [c for c in CRITICS if c in result["critics"]]:
    for fit, s in result["critics"][name].items():
      lines.append(f"| {name} | {fit} | {s['all_tokens']:.2f} | {s['prompt']:.2f} / "
                   f"{s['prompt_bound']:.2f} | {s['states']:.2f} / {s['states_bound']:.2f} |")
  return "\n".join(lines)


if __name__ == "__main__":
  app.run(main)
