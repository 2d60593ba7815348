"""A tiny learnable environment for the training tests: pick a strategy that solves the problem.

Problem a in [0, 4) is the one-token prompt `PROMPT0 + a`. A response is one
strategy token `STRATEGY0 + s` (anything after it is ignored); its label is s, and
its reward is SOLVES[a, s]. Any other first token is DEGENERATE with reward 0.

    problem  solved by strategies
       0     {0}
       1     {1, 2}
       2     {2, 3}
       3     {3, 0}

An untrained policy is nearly uniform over the 10 tokens, so it is right about 10%
of the time on problem 0 and 20% on the others: a non-trivial start. A policy that
ignores its prompt can reach at most 0.5 (no strategy solves more than two of the
four problems), so an expected reward above 0.5 shows that rewards were paired with
their own prompts. `expected_reward` computes the policy's exact expected reward
from its logits (no sampling).
"""

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from polyepo.env_api import DEGENERATE
from polyepo.policy import model

SOLVES = np.array([[1, 0, 0, 0],
                   [0, 1, 1, 0],
                   [0, 0, 1, 1],
                   [1, 0, 0, 1]], np.float32)
NUM_PROBLEMS, NUM_STRATEGIES = SOLVES.shape
PAD, EOS, PROMPT0 = 0, 1, 2
STRATEGY0 = PROMPT0 + NUM_PROBLEMS
PROMPT_ONLY_BOUND = float(SOLVES.mean(0).max())  # 0.5: best reward of a prompt-blind policy


class Problems(NamedTuple):
  problem: jax.Array  # i32[B]


class ChoiceEnv:
  """The `polyepo.env_api.Env` protocol for the choice task (no state)."""

  strategy_names = tuple(f"s{s}" for s in range(NUM_STRATEGIES))
  strategy_families = strategy_names
  vocab_size = STRATEGY0 + NUM_STRATEGIES
  pad_id, eos_id = PAD, EOS
  max_response_len = 2
  hold_out = False  # four problems: nothing to hold out
  has_step_boundaries = True

  def __init__(self, solves=SOLVES):
    self.solves = np.asarray(solves, np.float32)

  def canonical_form(self, problems):  # each problem its own exercise
    return problems.problem[:, None]

  def default_params(self):
    return {}

  def ood_params(self):
    return {}

  def sample_problems(self, key, params, batch_size):
    del params
    return Problems(jax.random.randint(key, (batch_size,), 0, NUM_PROBLEMS))

  def prompt_tokens(self, problems):
    return (PROMPT0 + problems.problem)[:, None].astype(jnp.int32)

  def applicable(self, problems):
    return jnp.ones((problems.problem.shape[0], NUM_STRATEGIES), bool)

  def score(self, problems, responses):
    strategy = responses[:, 0] - STRATEGY0
    valid = (strategy >= 0) & (strategy < NUM_STRATEGIES)
    safe = jnp.where(valid, strategy, 0)
    reward = jnp.where(valid, jnp.asarray(self.solves)[problems.problem, safe], 0.0)
    return reward, jnp.where(valid, strategy, DEGENERATE).astype(jnp.int32)

  def step_boundaries(self, responses):
    """bool[B, T]: a one-token answer has no step to branch at (Poly-PPO then forms
    sets at the prompt only, with a window over the whole response)."""
    return jnp.zeros(responses.shape, bool)

  def demonstrate(self, key, problems, strategy_ids, slip_rate=0.0):
    del key, slip_rate  # a one-token answer has no work to slip in
    tokens = jnp.stack([STRATEGY0 + strategy_ids, jnp.full_like(strategy_ids, EOS)], 1)
    return tokens.astype(jnp.int32), jnp.ones(strategy_ids.shape, bool)

  def answers(self, problems, responses):
    """The chosen strategy is the answer: i32[B], -1 for none."""
    _, label = self.score(problems, responses)
    return label

  def question_text(self, problems):
    return [f"problem {int(a)}" for a in problems.problem]

  def response_text(self, responses):
    return [" ".join(map(str, map(int, r))) for r in responses]

  def render(self, problems, responses):
    return [f"{q}: {r}" for q, r in zip(self.question_text(problems),
                                        self.response_text(responses))]

  def text_to_tokens(self, text):
    return np.asarray([int(t) for t in text.split()], np.int32)

  def parse_problems(self, texts):
    try:
      return Problems(jnp.asarray([int(t.removeprefix("problem ")) for t in texts], jnp.int32))
    except ValueError:
      raise ValueError(f"Cannot parse {texts!r}: expected 'problem <k>'.") from None


def first_token_logprobs(params, model_config):
  """f32[NUM_PROBLEMS, V]: the policy's log-probs of the first response token."""
  prompts = (PROMPT0 + jnp.arange(NUM_PROBLEMS))[:, None]
  logits = model.forward(params, model_config, prompts, jnp.ones_like(prompts, bool))[:, -1]
  return jax.nn.log_softmax(logits, -1)


def expected_reward(params, model_config, solves=SOLVES):
  """f32[NUM_PROBLEMS]: the exact expected reward of the policy on each problem."""
  probs = jnp.exp(first_token_logprobs(params, model_config))
  return jnp.sum(probs[:, STRATEGY0:STRATEGY0 + NUM_STRATEGIES] * jnp.asarray(solves), -1)
