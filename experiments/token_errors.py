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
and on `test`; then the same share for `test`'s results split by their step (the
step's text up to its result, `1+6=7`): steps that some training problem's
demonstration also writes, which the model may recall, and steps none does, which
it has to work out (docs/base-models.md reads both).
"""

from typing import Dict, List, NamedTuple, Sequence, Set, Tuple

import jax
import jax.numpy as jnp
import numpy as np
from absl import flags, logging
from ml_collections import config_flags

from experiments import build, cli
from polyepo.evaluation import splits
from polyepo.policy import model

# experiments.pretrain defines --config too; allow_override lets one process (the
# tests) import both, and each module's FlagHolder reads the value parsed.
_CONFIG = config_flags.DEFINE_config_file("config", None, "Pretraining config file.",
                                          lock_config=True, allow_override=True)
_NUM_PROBLEMS = flags.DEFINE_integer("num_problems", 256, "Problems per split.")
_NUM_SEEN_PROBLEMS = flags.DEFINE_integer(
    "num_seen_problems", 8192, "Training problems whose demonstrations' steps count as seen.")
flags.mark_flags_as_required(["config"])

ROLES = ("operand", "result", "answer", "structure")
UNSURE = 0.5   # a token the model gives less than this is one it would likely miss
CHUNK = 1024   # problems demonstrated at once


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


def result_steps(text: Sequence[str], roles: Sequence[str], marker: str = "#",
                 separators: Sequence[str] = (";", ",")) -> List[Tuple[str, range]]:
  """Each result number of one response: (its step, its tokens' positions).

  The step is the response's text from just after the last separator (or answer
  `marker`) up to the result's last token: `1+6=7` in `S=5,P=6;1+6=7`. A model
  that recalls steps knows the result of a step it was trained on, whatever the
  exercise; one that computes also knows those of steps it never saw. Where a
  result reads the prompt rather than its step's operands (`S=5`, a search's
  `f2=0`), a step seen in training is not one the model can recall from the step.
  """
  out, start, i = [], 0, 0
  while i < len(text):
    if roles[i] == "result":
      end = i
      while end < len(text) and roles[end] == "result":
        end += 1
      out.append(("".join(text[start:end]), range(i, end)))
      i = end
      continue
    if text[i] == marker or text[i] in separators:
      start = i + 1
    i += 1
  return out


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


class Scored(NamedTuple):
  """Every strategy's slip-free demonstration of one split's problems, scored.

  Attributes:
    probs: f64[R, T], each token's teacher-forced probability.
    roles: i32[R, T], its index in ROLES; -1 past the response, and on every
      token of a demonstration whose strategy does not apply.
    strategy: i32[R], each demonstration's strategy.
    steps: R lists of `result_steps` (empty where the strategy does not apply).
  """
  probs: np.ndarray
  roles: np.ndarray
  strategy: np.ndarray
  steps: List[List[Tuple[str, range]]]


def _demonstrations(env, split: str, num_problems: int, key: jax.Array):
  """(problems, demos i32[N*S, T], applies bool[N*S], strategy i32[N*S]): every
  strategy's slip-free demonstration of `num_problems` problems of `split`."""
  problems = splits.sample(env, key, env.default_params(), num_problems, split)
  S = len(env.strategy_names)
  every = jax.tree.map(lambda x: jnp.repeat(x, S, 0), problems)
  strategy = jnp.tile(jnp.arange(S), num_problems)
  demos, applies = env.demonstrate(jax.random.key(1), every, strategy, 0.0)
  return problems, np.asarray(demos), np.asarray(applies), np.asarray(strategy)


def _read(env, demos: np.ndarray, applies: np.ndarray, pad_id: int):
  """(row, tokens as text, their roles, result_steps) of each applicable demonstration."""
  separators = tuple(env.step_separators) + (",",)
  for row in np.flatnonzero(applies):
    text = [env.itos[t] for t in demos[row, :int(np.sum(demos[row] != pad_id))]]
    roles = token_roles(text, env.answer_marker, separators)
    yield row, text, roles, result_steps(text, roles, env.answer_marker, separators)


def seen_steps(env, pad_id: int, num_problems: int) -> List[Set[str]]:
  """Per strategy, the steps (`result_steps`) its demonstrations of `num_problems`
  training problems write: the steps a model pretrained on them may recall."""
  seen = [set() for _ in env.strategy_names]
  for chunk, start in enumerate(range(0, num_problems, CHUNK)):
    _, demos, applies, strategy = _demonstrations(
        env, "train", min(CHUNK, num_problems - start), jax.random.key(100 + chunk))
    for row, _, _, steps in _read(env, demos, applies, pad_id):
      seen[strategy[row]].update(step for step, _ in steps)
  return seen


def score_split(env, model_config, params, split: str, num_problems: int) -> Scored:
  """Every strategy's slip-free demonstration of `num_problems` problems of
  `split` (a kit env), scored token by token by the model."""
  problems, demos, applies, strategy = _demonstrations(env, split, num_problems,
                                                       jax.random.key(7))
  mask = demos != model_config.pad_id
  logp = model.sequence_logprobs(params, model_config, env.prompt_tokens(problems), demos, mask,
                                 samples_per_prompt=len(env.strategy_names))
  roles = np.full(demos.shape, -1, np.int32)
  steps = [[] for _ in range(demos.shape[0])]
  for row, text, row_roles, row_steps in _read(env, demos, applies, model_config.pad_id):
    roles[row, :len(text)] = [ROLES.index(role) for role in row_roles]
    steps[row] = row_steps
  return Scored(np.exp(np.asarray(logp, np.float64)), roles, strategy, steps)


def step_shares(scored: Scored, seen: Sequence[Set[str]]) -> Tuple[np.ndarray, np.ndarray]:
  """Results split by whether their step is in `seen` (per strategy).

  Returns:
    (shares f64[S, 2], counts i64[S, 2]): per strategy, the share of result
    tokens with p < UNSURE and the number of results, for steps in `seen`
    (column 0) and steps not in it (column 1); NaN shares where there are none.
  """
  S = len(seen)
  unsure = np.zeros((S, 2))
  tokens = np.zeros((S, 2))
  counts = np.zeros((S, 2), np.int64)
  for row, row_steps in enumerate(scored.steps):
    s = scored.strategy[row]
    for step, positions in row_steps:
      novel = int(step not in seen[s])
      probs = scored.probs[row, list(positions)]
      unsure[s, novel] += np.sum(probs < UNSURE)
      tokens[s, novel] += probs.size
      counts[s, novel] += 1
  with np.errstate(invalid="ignore"):
    return unsure / tokens, counts


def table(names: Sequence[str], shares: Dict[str, np.ndarray]) -> str:
  """Text: per strategy, each role's share on training / `test` problems."""
  lines = [f"{'tokens with p < 1/2':24s}" + "".join(f"{r:>16s}" for r in ROLES),
           f"{'(training / test)':24s}"]
  for s, name in enumerate(names):
    cells = [f"{shares['train'][s, r]:.3f} / {shares['test'][s, r]:.3f}"
             for r in range(len(ROLES))]
    lines.append(f"{name:24s}" + "".join(f"{c:>16s}" for c in cells))
  return "\n".join(lines).replace("nan", "  –")


def step_table(names: Sequence[str], shares: np.ndarray, counts: np.ndarray) -> str:
  """Text: per strategy, `step_shares` of `test`'s results, seen / novel steps."""
  lines = [f"{'test results, by step':24s}{'seen in training':>22s}{'never seen':>22s}",
           f"{'(p < 1/2 share, results)':24s}"]
  for s, name in enumerate(names):
    cells = [f"{shares[s, j]:.3f} ({counts[s, j]})" for j in range(2)]
    lines.append(f"{name:24s}" + "".join(f"{c:>22s}" for c in cells))
  return "\n".join(lines).replace("nan", "  –")


def main(argv):
  del argv
  logging.set_verbosity(logging.WARNING)
  config = _CONFIG.value
  env, model_config, params, directory = build.base_model(config)
  print(f"base model: {build.describe_base_model(directory)}")
  scored = {split: score_split(env, model_config, params, split, _NUM_PROBLEMS.value)
            for split in ("train", "test")}
  S = len(env.strategy_names)
  print(table(env.strategy_names, {split: unsure_shares(x.probs, x.roles, x.strategy, S)
                                   for split, x in scored.items()}))
  seen = seen_steps(env, model_config.pad_id, _NUM_SEEN_PROBLEMS.value)
  print()
  print(step_table(env.strategy_names, *step_shares(scored["test"], seen)))


if __name__ == "__main__":
  cli.run(main)
