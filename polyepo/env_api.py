"""The contract between the library and an environment.

This module is deliberately tiny and imports nothing heavy: `envs/` may import it
(and only it) from `polyepo`. Training, pretraining and evaluation accept any object
that satisfies `Env`.
"""

from typing import Any, Protocol, Sequence, Tuple

DEGENERATE = -1
"""Strategy label of a response that follows no strategy (or shows no work).

Degenerate responses still earn their reward but add nothing to diversity; all of
them count as one cluster wherever clusters are compared (as the LM judge's
"degenerate" cluster does in the Poly-EPO paper).
"""

Problems = Any  # A pytree of arrays with a leading batch axis.
Params = Any  # A pytree of numeric environment knobs (vmappable).


class Env(Protocol):
  """A synthetic reasoning domain with exact rewards and strategy labels.

  The object holds no state: everything that fixes a shape is a constructor
  argument, numeric difficulty knobs live in `params`.
  """

  strategy_names: Tuple[str, ...]
  vocab_size: int
  pad_id: int
  eos_id: int
  max_response_len: int

  def sample_problems(self, key, params: Params, batch_size: int) -> Problems:
    """Draws `batch_size` problems; a pytree with leading axis B."""

  def prompt_tokens(self, problems: Problems):
    """i32[B, P]: the prompt of each problem."""

  def applicable(self, problems: Problems):
    """bool[B, S]: which strategies apply to each problem."""

  def demonstrate(self, key, problems: Problems, strategy_ids, slip_rate: float = 0.0):
    """(i32[B, T], bool[B]): a full trace of each strategy, and whether it applies."""

  def score(self, problems: Problems, responses):
    """(f32[B], i32[B]): reward (1 iff exactly right) and strategy label."""

  def answers(self, problems: Problems, responses):
    """i32[B]: an id of each response's final answer, -1 for none (optional).

    Responses with equal ids give the same answer; evaluation uses it for
    majority-vote accuracy and skips that metric for envs without the method.
    """

  def render(self, problems: Problems, responses) -> Sequence[str]:
    """Human-readable text of each (problem, response)."""

  def parse_problems(self, texts: Sequence[str]) -> Problems:
    """Problems from questions typed as plain text; ValueError quoting a bad one."""
