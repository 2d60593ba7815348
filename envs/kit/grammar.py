"""Step grammars over symbols, compiled into one DFA that labels responses.

A strategy's **grammar** is a regular expression over symbols (`envs.kit.symbols`)
written as space-separated words:

* `NUM` is a number symbol (any value); any other word is a token of the
  domain's vocabulary (`stoi`), e.g. `*`, `=`, `;`, `#`, `$`;
* `{ ... }*`, `{ ... }+` and `{ ... }?` repeat a group any number of times, at
  least once, or at most once;
* `macros` name fragments, e.g. `{"N": "{ - }? NUM"}` for a signed number.

Every grammar ends with the EOS token (after it a response holds only FILL).
`compile_grammars` turns the S grammars of a domain into one DFA whose states
say which grammars accept there (regex -> NFA by Thompson's construction ->
DFA by the subset construction, on the host, once); `match` runs it over a
response's symbols with one `lax.scan`. Grammars may overlap (two strategies
can share the work and differ in a number only): the domain breaks such ties
with post-checks on the numbers (`envs.kit.strategy`).
"""

import functools
from typing import Mapping, NamedTuple, Optional, Sequence, Tuple

import jax
import jax.numpy as jnp
import numpy as np

from envs.kit import symbols as sym_lib

# DFA alphabet: the vocabulary's token ids, with the ids of the digits 1-3
# (never a symbol kind: a digit run is a NUM) standing for the special kinds.
_NUM_SYM, _BAD_SYM, _FILL_SYM = 1, 2, 3


class Grammar(NamedTuple):
  """A compiled union of grammars (host numpy arrays).

  Attributes:
    table: i32[Q, V]: next state per (state, symbol); state 0 is dead.
    start: the start state.
    accepts: bool[Q, S]: which grammars accept in each state. Accepting states
      are absorbing (they are reached on EOS).
    max_symbols: the longest accepted response in symbols, or None when some
      grammar repeats without bound.
  """
  table: np.ndarray
  start: int
  accepts: np.ndarray
  max_symbols: Optional[int]


def _words(text: str, macros: Mapping[str, str]):
  out = []
  for word in text.split():
    out += _words(macros[word], macros) if word in macros else [word]
  return out


def parse(text: str, stoi: Mapping[str, int], macros: Mapping[str, str] = None):
  """A grammar as nested tuples ('seq'|'star'|'plus'|'opt'|'sym', ...).

  Raises:
    ValueError: quoting the grammar, for an unknown word or unbalanced braces.
  """
  words = _words(text, macros or {})
  pos = 0

  def seq(closing):
    nonlocal pos
    out = []
    while pos < len(words):
      word = words[pos]
      pos += 1
      if word == "{":
        inner = seq(True)
        op = {"}*": "star", "}+": "plus", "}?": "opt"}.get(words[pos - 1])
        if op is None:
          raise ValueError(f"Grammar {text!r}: a group must close with }}*, }}+ or }}?.")
        out.append((op, inner))
      elif word.startswith("}"):
        if not closing:
          raise ValueError(f"Grammar {text!r}: {word!r} closes no group.")
        return ("seq", out)
      elif word == "NUM":
        out.append(("sym", _NUM_SYM))
      elif word in stoi and stoi[word] >= 10:
        out.append(("sym", stoi[word]))
      else:
        raise ValueError(f"Grammar {text!r}: {word!r} is neither NUM, a macro nor a "
                         "non-digit token of the vocabulary.")
    if closing:
      raise ValueError(f"Grammar {text!r}: a group is not closed.")
    return ("seq", out)

  return seq(False)


def _nfa(asts):
  """Thompson NFA of the union: (eps, edges, start, finals {state: grammar})."""
  eps, edges = [], []

  def new():
    eps.append([])
    edges.append([])
    return len(eps) - 1

  def build(node):
    kind = node[0]
    if kind == "sym":
      s, e = new(), new()
      edges[s].append((node[1], e))
      return s, e
    if kind == "seq":
      s = e = new()
      for child in node[1]:
        cs, ce = build(child)
        eps[e].append(cs)
        e = ce
      return s, e
    if kind == "plus":
      return build(("seq", [node[1], ("star", node[1])]))
    s, e = new(), new()
    cs, ce = build(node[1])
    eps[s] += [cs, e]
    eps[ce].append(e)
    if kind == "star":
      eps[ce].append(cs)
    return s, e

  start = new()
  finals = {}
  for label, ast in enumerate(asts):
    if ast is None:  # a strategy with no trace at this size
      continue
    s, e = build(ast)
    eps[start].append(s)
    finals[e] = label
  return eps, edges, start, finals


def _longest(table, accepts) -> Optional[int]:
  """Longest path from the start (state 1) to acceptance, None if unbounded."""
  memo, on_path = {}, set()

  def depth(q):  # most symbols from q to an accepting state (-inf if none)
    if accepts[q].any():
      return 0
    if q in on_path:
      raise OverflowError
    if q not in memo:
      on_path.add(q)
      nxt = [depth(int(r)) for r in set(table[q].tolist()) if r != 0]
      on_path.discard(q)
      memo[q] = 1 + max(nxt) if nxt else -np.inf
    return memo[q]

  try:
    return int(depth(1))
  except OverflowError:
    return None


@functools.lru_cache(maxsize=None)
def _compile(grammars: Tuple[str, ...], stoi: Tuple[Tuple[str, int], ...], eos_id: int,
             macros: Tuple[Tuple[str, str], ...]) -> Grammar:
  stoi, macros = dict(stoi), dict(macros)
  vocab_size = max(stoi.values()) + 1
  asts = [None if g is None else parse(g, stoi, macros) for g in grammars]
  for text, ast in zip(grammars, asts):
    if ast is not None and (not ast[1] or ast[1][-1] != ("sym", eos_id)):
      raise ValueError(f"Grammar {text!r} must end with the EOS token.")
  eps, edges, start, finals = _nfa(asts)

  def closure(states):
    stack, seen = list(states), set(states)
    while stack:
      for t in eps[stack.pop()]:
        if t not in seen:
          seen.add(t)
          stack.append(t)
    return frozenset(seen)

  order = [frozenset(), closure([start])]
  ids = {s: i for i, s in enumerate(order)}
  rows = []
  while len(rows) < len(order):
    current = order[len(rows)]
    row = [0] * vocab_size
    for a in range(vocab_size):
      nxt = closure([e for s in current for b, e in edges[s] if b == a])
      if nxt not in ids:
        ids[nxt] = len(order)
        order.append(nxt)
      row[a] = ids[nxt]
    rows.append(row)
  table = np.asarray(rows, np.int32)
  accepts = np.zeros((len(order), len(grammars)), bool)
  for q, states in enumerate(order):
    for s in states:
      if s in finals:
        accepts[q, finals[s]] = True
    if accepts[q].any():
      table[q, :] = q
  return Grammar(table, 1, accepts, _longest(table, accepts))


def compile_grammars(grammars: Sequence[str], stoi: Mapping[str, int], eos_id: int,
                     macros: Mapping[str, str] = None) -> Grammar:
  """Compiles the grammars (one per strategy) into one DFA (cached).

  Args:
    grammars: S grammar strings (see the module docstring); None for a
      strategy that matches nothing (it has no trace at this problem size).
    stoi: the vocabulary, token text -> id (digits are ids 0-9).
    eos_id: the EOS token each grammar must end with.
    macros: word -> grammar fragment, expanded before parsing.

  Returns:
    The `Grammar`.
  """
  return _compile(tuple(grammars), tuple(sorted(stoi.items())), eos_id,
                  tuple(sorted((macros or {}).items())))


def match(grammar: Grammar, symbols: sym_lib.Symbols):
  """Which grammars one response follows to its EOS: bool[S].

  Only the first `grammar.max_symbols` symbols are read when the grammars are
  bounded: a longer response follows none of them.
  """
  kinds = symbols.kinds
  alpha = jnp.where(kinds == sym_lib.NUM, _NUM_SYM,
                    jnp.where(kinds == sym_lib.BAD_NUM, _BAD_SYM,
                              jnp.where(kinds == sym_lib.FILL, _FILL_SYM, kinds)))
  if grammar.max_symbols is not None:
    alpha = alpha[:grammar.max_symbols]
  table = jnp.asarray(grammar.table)
  state, _ = jax.lax.scan(lambda q, a: (table[q, a], None), jnp.int32(grammar.start), alpha)
  return jnp.asarray(grammar.accepts)[state]
