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

from polyepo import model
from polyepo.env_api import DEGENERATE

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
  vocab_size = STRATEGY0 + NUM_STRATEGIES
  pad_id, eos_id = PAD, EOS
  max_response_len = 2

  def __init__(self, solves=SOLVES):
    self.solves = np.asarray(solves, np.float32)

  def default_params(self):
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

  def render(self, problems, responses):
    return [f"problem {int(a)}: {list(map(int, r))}"
            for a, r in zip(problems.problem, responses)]


def first_token_logprobs(params, model_config):
  """f32[NUM_PROBLEMS, V]: the policy's log-probs of the first response token."""
  prompts = (PROMPT0 + jnp.arange(NUM_PROBLEMS))[:, None]
  logits = model.forward(params, model_config, prompts, jnp.ones_like(prompts, bool))[:, -1]
  return jax.nn.log_softmax(logits, -1)


def expected_reward(params, model_config, solves=SOLVES):
  """f32[NUM_PROBLEMS]: the exact expected reward of the policy on each problem."""
  probs = jnp.exp(first_token_logprobs(params, model_config))
  return jnp.sum(probs[:, STRATEGY0:STRATEGY0 + NUM_STRATEGIES] * jnp.asarray(solves), -1)
