r"""Where a base model errs on exercises it never saw: its demonstrations scored token by token.

  python -m experiments.token_errors --config=configs/pretrain.py:domain=polynomial_roots

Every strategy's slip-free demonstration of `--num_problems` training and `test`
problems is scored by the base model of the config (the one experiments.pretrain
reports on), token by token, given the prompt and the demonstration's own prefix
(`model.sequence_logprobs`). Each token takes the role of its place in the kit's
traces (`token_roles`): an *operand* (a number before a step's `=`), a *result*
(a number after it), the *answer* (after `#`), or *structure* (everything else).
A model that carries a strategy out computes results it has not seen; one that
recalls exercises gets them right on training problems only. Prints, per strategy
and role, the share of tokens the model gives less than 1/2, on training problems
and on `test` (docs/base-models.md reads it).
"""

from typing import Dict, List, Sequence

import jax
import jax.numpy as jnp
import numpy as np
from absl import flags, logging
from ml_collections import config_flags

from experiments import build, cli
from polyepo import model, splits

# experiments.pretrain defines --config too; allow_override lets one process (the
# tests) import both, and each module's FlagHolder reads the value parsed.
_CONFIG = config_flags.DEFINE_config_file("config", None, "Pretraining config file.",
                                          lock_config=True, allow_override=True)
_NUM_PROBLEMS = flags.DEFINE_integer("num_problems", 256, "Problems per split.")
flags.mark_flags_as_required(["config"])

ROLES = ("operand", "result", "answer", "structure")
UNSURE = 0.5   # a token the model gives less than this is one it would likely miss


def token_roles(text: Sequence[str], marker: str = "#",
                separators: Sequence[str] = (";", ",")) -> List[str]:
  """The role (ROLES) of each token of one response, given as token strings.

  A number's digits and sign are an operand until the step's `=`, a result after
  it until the next separator (a step's `;`, or a `,` between two clauses of one
  step), and the answer after the answer `marker`; every other token is structure.
  """
  roles, phase = [], "operand"
  for token in text:
    number = token.isdigit() or token == "-"
    if token == marker:
      phase = "answer"
    elif phase != "answer" and token == "=":
      phase = "result"
    elif phase != "answer" and token in separators:
      phase = "operand"
    roles.append(phase if number else "structure")
  return roles


def unsure_shares(probs: np.ndarray, roles: np.ndarray, strategy: np.ndarray,
                  num_strategies: int) -> np.ndarray:
  """f64[S, len(ROLES)]: per strategy and role, the share of tokens with p < UNSURE.

  Args:
    probs: f64[R, T], each demonstration token's teacher-forced probability.
    roles: i32[R, T], its index in ROLES, -1 past the response.
    strategy: i32[R], each demonstration's strategy.
    num_strategies: S.

  Returns:
    NaN where a strategy has no token of a role.
  """
  out = np.full((num_strategies, len(ROLES)), np.nan)
  for s in range(num_strategies):
    for r in range(len(ROLES)):
      chosen = (roles == r) & (strategy[:, None] == s)
      if chosen.any():
        out[s, r] = np.mean(probs[chosen] < UNSURE)
  return out


def score_split(env, model_config, params, split: str, num_problems: int) -> np.ndarray:
  """`unsure_shares` of every strategy's demonstrations of `split`'s problems (a kit env)."""
  problems = splits.sample(env, jax.random.key(7), env.default_params(), num_problems, split)
  S = len(env.strategy_names)
  every = jax.tree.map(lambda x: jnp.repeat(x, S, 0), problems)
  strategy = jnp.tile(jnp.arange(S), num_problems)
  demos, applies = env.demonstrate(jax.random.key(1), every, strategy, 0.0)
  mask = demos != model_config.pad_id
  logp = model.sequence_logprobs(params, model_config, env.prompt_tokens(problems), demos, mask,
                                 samples_per_prompt=S)
  demos, mask, applies = map(np.asarray, (demos, mask, applies))
  roles = np.full(demos.shape, -1, np.int32)
  for row in np.flatnonzero(applies):
    length = int(mask[row].sum())
    text = [env.itos[t] for t in demos[row, :length]]
    roles[row, :length] = [ROLES.index(role) for role in token_roles(
        text, env.answer_marker, tuple(env.step_separators) + (",",))]
  return unsure_shares(np.exp(np.asarray(logp, np.float64)), roles, np.asarray(strategy), S)


def table(names: Sequence[str], shares: Dict[str, np.ndarray]) -> str:
  """Text: per strategy, each role's share on training / `test` problems."""
  lines = [f"{'tokens with p < 1/2':24s}" + "".join(f"{r:>16s}" for r in ROLES),
           f"{'(training / test)':24s}"]
  for s, name in enumerate(names):
    cells = [f"{shares['train'][s, r]:.3f} / {shares['test'][s, r]:.3f}"
             for r in range(len(ROLES))]
    lines.append(f"{name:24s}" + "".join(f"{c:>16s}" for c in cells))
  return "\n".join(lines).replace("nan", "  –")


def main(argv):
  del argv
  logging.set_verbosity(logging.WARNING)
  config = _CONFIG.value
  env, model_config, params, directory = build.base_model(config)
  print(f"base model: {build.describe_base_model(directory)}")
  shares = {split: score_split(env, model_config, params, split, _NUM_PROBLEMS.value)
            for split in ("train", "test")}
  print(table(env.strategy_names, shares))


if __name__ == "__main__":
  cli.run(main)
