"""A strategy declared once: its trace builder and its step grammar side by side.

  Strategy("long_by_b", family="long", grammar=long_grammar, build=long_by_b,
           check=not_b_first)

Labelling (`label`) is the same for every domain: a response follows strategy
s iff its symbols follow s's grammar to EOS (`envs.kit.grammar`) and s's
post-check, if any, holds on its numbers; the label is the first such strategy,
else DEGENERATE. Grammars say what the work looks like (which steps, which
operators, where numbers go) and leave the numbers free, so a slip or a
miscopied operand keeps the label and only costs the reward, as a judge reading
the work would keep it. Post-checks are for what a grammar cannot say: two
strategies with the same steps told apart by the number they start from, or a
literal constant of a formula.
"""

from typing import Any, Callable, NamedTuple, Optional, Sequence

import jax.numpy as jnp

from envs.kit import grammar as grammar_lib
from envs.kit import symbols as sym_lib
from polyepo.env_api import DEGENERATE


class Strategy(NamedTuple):
  """One strategy of a domain.

  Attributes:
    name: the label's name (`env.strategy_names`).
    family: the macro label: strategies of one family share an idea (long
      multiplication by either factor; the root searches).
    grammar: the step grammar, or a function of the env's static sizes giving
      it (None where the strategy has no trace at that size).
    build: writes the work for one problem into an `envs.kit.trace.Trace`;
      domain-specific arguments and return value.
    check: optional post-check (symbols, problem) -> bool[] on one response
      whose symbols follow the grammar.
    slip_sites: how many named slip sites `build` asks about with
      `Trace.slips(i)`; 0 where slips fall on the `Trace.result` numbers.
  """
  name: str
  family: str
  grammar: Any
  build: Callable
  check: Optional[Callable] = None
  slip_sites: int = 0


def label(grammar: grammar_lib.Grammar, strategies: Sequence[Strategy],
          symbols: sym_lib.Symbols, problem):
  """The strategy label of one response: i32[] in [0, S), or DEGENERATE.

  Args:
    grammar: the compiled grammars of `strategies`, in order.
    strategies: the S strategies.
    symbols: the response's symbols.
    problem: the (unbatched) problem, passed to the post-checks.
  """
  follows = grammar_lib.match(grammar, symbols)
  checks = [follows[i] if s.check is None else follows[i] & s.check(symbols, problem)
            for i, s in enumerate(strategies)]
  follows = jnp.stack(checks)
  return jnp.where(jnp.any(follows), jnp.argmax(follows), DEGENERATE).astype(jnp.int32)
