"""`KitEnv`: the `polyepo.env_api.Env` methods every kit domain shares.

A domain subclasses it with its `vocab` and `strategies` and implements the
problem-specific methods (params, sampling, prompts, applicability, question
text and parsing, and the batched kernels `_demonstrate` and `_score`, called
with checked arguments); the class attributes of the protocol
(`strategy_names`, `strategy_families`, `vocab_size`, `pad_id`, `eos_id`) are
derived from those two, and answers, rendering and reading responses back are
done here, the same way for every domain.
"""

from typing import Sequence, Tuple

import jax
import jax.numpy as jnp
import numpy as np

from envs.kit import strategy as strategy_lib
from envs.kit import symbols
from envs.kit import text as text_lib


def check_responses(responses) -> jax.Array:
  """responses as i32[B, T]; ValueError naming them if the rank is not 2."""
  responses = jnp.asarray(responses)
  if responses.ndim != 2:
    raise ValueError(f"responses must be i32[B, T], got shape {responses.shape}.")
  return responses.astype(jnp.int32)


def check_strategy_ids(strategy_ids, batch_size: int) -> jax.Array:
  """strategy_ids as i32[B]; ValueError naming them if the shape is not (B,)."""
  strategy_ids = jnp.asarray(strategy_ids, jnp.int32)
  if strategy_ids.shape != (batch_size,):
    raise ValueError(f"strategy_ids must be i32[B] with B={batch_size} problems, "
                     f"got shape {strategy_ids.shape}.")
  return strategy_ids


class KitEnv:
  """Shared methods of the kit's domains (see the module docstring).

  Subclasses set `vocab` (`envs.kit.text.vocab(...)`), `strategies` (a tuple
  of `envs.kit.strategy.Strategy`) and, optionally, `render_separator`, the
  text between a question and its response in `render`.
  """

  vocab: text_lib.Vocab
  strategies: Tuple[strategy_lib.Strategy, ...]
  render_separator = " "
  answer_marker = "#"
  step_separators = (";",)
  hold_out = True
  has_step_boundaries = True

  def __init_subclass__(cls, **kwargs):
    super().__init_subclass__(**kwargs)
    cls.strategy_names = tuple(s.name for s in cls.strategies)
    cls.strategy_families = tuple(s.family for s in cls.strategies)
    cls.itos = cls.vocab.itos
    cls.vocab_size = cls.vocab.size
    cls.pad_id = cls.vocab.pad_id
    cls.eos_id = cls.vocab.eos_id

  def demonstrate(self, key, problems, strategy_ids, slip_rate: float = 0.0):
    """Full traces of the given strategies, some with one slip.

    With probability `slip_rate` a trace carries one slip (the domain's slip
    model, see its `_demonstrate`): a computed step goes wrong, the later steps
    use the wrong value, the answer is wrong and the label is kept.

    Args:
      key: PRNG key.
      problems: B problems.
      strategy_ids: i32[B] strategy of each trace.
      slip_rate: probability of a slip per trace.

    Returns:
      (responses i32[B, T], ok bool[B]): ok is False (and the response all PAD)
      where the strategy does not apply.
    """
    batch_size = jax.tree.leaves(problems)[0].shape[0]
    return self._demonstrate(key, problems, check_strategy_ids(strategy_ids, batch_size),
                             jnp.asarray(slip_rate, jnp.float32))

  def score(self, problems, responses):
    """Exact reward and strategy label of each response.

    Args:
      problems: B problems.
      responses: i32[B, T] tokens (anything after the first EOS is ignored).

    Returns:
      (reward f32[B], label i32[B]): reward 1 iff the answer after the last `#`
      is exactly right for the problem (the work is never checked for reward);
      label the strategy whose grammar and post-check the response follows
      (`envs.kit.strategy.label`), else DEGENERATE.
    """
    return self._score(problems, check_responses(responses))

  def step_boundaries(self, responses):
    """Where each response's reasoning steps start: bool[B, T].

    The kit's grammars write a step as a run of symbols ended by a step
    separator (`step_separators`, `;` in every kit domain) and the answer as
    `answer_marker`, the answer, EOS. A new step starts right after a separator
    and at the answer marker. Position 0 (the prompt itself) and positions at
    or after the first EOS are never boundaries: a boundary is a state the
    response continues from.

    Args:
      responses: i32[B, T].

    Returns:
      bool[B, T].
    """
    responses = check_responses(responses)
    separators = jnp.asarray([self.vocab.stoi[s] for s in self.step_separators], jnp.int32)
    marker = self.vocab.stoi[self.answer_marker]
    after = jnp.isin(responses, separators)
    after = jnp.concatenate([jnp.zeros_like(after[:, :1]), after[:, :-1]], axis=1)
    eos = jax.vmap(lambda r: symbols.eos_position(r, self.eos_id)[1])(responses)
    t = jnp.arange(responses.shape[1])
    return (after | (responses == marker)) & (t > 0) & (t < eos[:, None])

  def _demonstrate(self, key, problems, strategy_ids, slip_rate):
    raise NotImplementedError

  def _score(self, problems, responses):
    raise NotImplementedError

  def answers(self, problems, responses):
    """i32[B]: an id of each response's final answer (after the last `#`), -1 if none.

    Equal ids mean equal answer strings; used for majority voting.
    """
    del problems  # the answer is read from the response alone
    return text_lib.answer_ids(responses, marker_id=self.vocab.stoi[self.answer_marker],
                               eos_id=self.eos_id)

  def question_text(self, problems) -> list:
    """The question of each problem as text (`parse_problems` reads it back)."""
    raise NotImplementedError

  def response_text(self, responses) -> list:
    """Each response up to EOS, a space after each `;` (PAD is `_`); one cut off
    before EOS ends in ` [no EOS]`. `text_to_tokens` reads it back."""
    return [text_lib.tokens_to_text(tokens, self.itos, self.eos_id, self.pad_id)
            .replace(";", "; ").rstrip() for tokens in np.asarray(responses)]

  def render(self, problems, responses) -> list:
    """`question_text`, `render_separator` and `response_text` of each problem."""
    return [f"{q}{self.render_separator}{r}"
            for q, r in zip(self.question_text(problems), self.response_text(responses))]

  @classmethod
  def text_to_tokens(cls, text: str):
    """i32[n]: tokens of a rendered response (spaces ignored)."""
    return text_lib.text_to_tokens(text, cls.vocab.stoi)

  def parse_problems(self, texts: Sequence[str]):
    raise NotImplementedError
