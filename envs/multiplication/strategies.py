"""The eight multiplication strategies, each with its step grammar beside it.

Each `build(t, a, b, da, db)` writes the full trace of one problem a * b (a has
da digits, b has db) into a `envs.kit.trace.Trace` and returns its answer; every
computed number goes through `t.result`, so it is a slip site. Each grammar is
a function of (da, db). A response follows a strategy iff its symbols follow
the grammar to EOS and the strategy's post-check holds; two post-checks exist:
long_by_a and long_by_b share their steps when da == db and are told apart by
the first operand (b first, with a != b: long_by_a), and halve_double's first
factor must be half of a or b (with one halving its grammar alone is just
"x*y=z", a bare restatement of the problem).
"""

import jax.numpy as jnp
import numpy as np

from envs.kit.strategy import Strategy
from envs.multiplication import problems as problems_lib

_ANSWER = " # NUM $"


def _steps(n: int) -> str:
  """n steps `x * y = z ;`."""
  return " ".join(["NUM * NUM = NUM ;"] * n)


def _total(n: int, op: str = "+") -> str:
  """`t1 op t2 op ... = s ;` over n terms."""
  return "NUM" + f" {op} NUM" * (n - 1) + " = NUM ;"


def _total_step(t, terms, op="+", value=None):
  """`t1 op t2 op ... = value;` over computed terms; returns the value."""
  for i, term in enumerate(terms):
    if i:
      t.op(op)
    t.num(term)
  t.op("=")
  value = t.result(sum(terms[1:], terms[0]) if value is None else value)
  t.op(";")
  return value


def _long(t, x, y, dy):
  """x times each digit of y (dy digits), units first, then the sum."""
  parts = []
  for j in range(dy):
    yj = (y // 10**j) % 10 * 10**j
    parts.append(t.step(x, "*", yj, x * yj))
  return t.answer(_total_step(t, parts) if dy > 1 else parts[0])


def _long_grammar(dy):
  return _steps(dy) + (" " + _total(dy) if dy > 1 else "") + _ANSWER


def _b_first(symbols, p):
  """The long multiplication runs over the digits of a: b is written first."""
  return (symbols.values[0] == p.b) & (p.a != p.b)


def long_by_b(t, a, b, da, db):
  return _long(t, a, b, db)


def long_by_a(t, a, b, da, db):
  return _long(t, b, a, da)


def place_value(t, a, b, da, db):
  """(30+7)(40+8): all digit-times-digit partials, highest first, then one sum."""
  parts = []
  for i in reversed(range(da)):
    ai = (a // 10**i) % 10 * 10**i
    for j in reversed(range(db)):
      bj = (b // 10**j) % 10 * 10**j
      parts.append(t.step(ai, "*", bj, ai * bj))
  return t.answer(_total_step(t, parts))


def round_adjust(t, a, b, da, db):
  """Round the factor with the larger units digit (b on ties) up, subtract the excess."""
  round_b = b % 10 >= a % 10
  x = jnp.where(round_b, a, b)  # kept factor
  y = jnp.where(round_b, b, a)  # rounded factor
  r = y - y % 10 + 10
  big = t.step(x, "*", r, x * r)
  small = t.step(x, "*", r - y, x * (r - y))
  return t.answer(_total_step(t, [big, small], "-", big - small))


def difference_of_squares(t, a, b, da, db):
  """a*b = m^2 - d^2 with m the midpoint and d the half gap."""
  lo, hi = jnp.minimum(a, b), jnp.maximum(a, b)
  m, d = (a + b) // 2, (hi - lo) // 2
  for op, side in (("-", lo), ("+", hi)):  # `m-d=lo;m+d=hi;`: all read off
    t.num(m)
    t.op(op)
    t.num(d)
    t.op("=")
    t.num(side)
    t.op(";")
  m2 = t.step(m, "*", m, m * m)
  d2 = t.step(d, "*", d, d * d)
  return t.answer(_total_step(t, [m2, d2], "-", m2 - d2))


def max_halvings(da: int, db: int) -> int:
  """The most halvings a factor below 10**max(da, db) can need."""
  return int(np.log2(10**max(da, db)))


def halve_double(t, a, b, da, db):
  """Halve h = a (else b) k times, doubling the other: `h/2*2o;h/4*4o;...=p;`."""
  halve_a = problems_lib.halvable(a)
  h = jnp.where(halve_a, a, b)
  o = jnp.where(halve_a, b, a)
  kmax = max_halvings(da, db)
  k = sum(((h >> i) << i == h).astype(jnp.int32) for i in range(1, kmax + 1))
  doubled, product = o, jnp.int32(0)
  for i in range(1, kmax + 1):
    on = i <= k
    t.num(h >> i, on)
    t.op("*", on=on)
    if i == 1:
      doubled = 2 * o
      t.num(doubled, on)
    else:
      doubled = t.result(2 * doubled, on)
    t.op(";", on=on & (i < k))
    product = jnp.where(i == k, (h >> i) * doubled, product)
  t.op("=")
  product = t.result(product)
  t.op(";")
  return t.answer(product)


def _halved_first(symbols, p):
  """The first factor written is half of a or of b."""
  first = symbols.values[0]
  return ((2 * first == p.a) | (2 * first == p.b)) & (first > 0)


def factor_out(t, a, b, da, db):
  """b (else a) = p*q with single digits p <= q (p smallest): a*b = (p*a)*q."""
  use_b = problems_lib.smallest_digit_factor(b) > 0
  y = jnp.where(use_b, b, a)
  x = jnp.where(use_b, a, b)
  p = jnp.maximum(problems_lib.smallest_digit_factor(y), 1)
  q = y // p
  px = t.step(p, "*", x, p * x)
  return t.answer(t.step(px, "*", q, px * q))


def karatsuba(t, a, b, da, db):
  """z2 = A*C, z0 = B*D, z1 = (A+B)(C+D) - z2 - z0, then 100 z2 + 10 z1 + z0."""
  if (da, db) != (2, 2):
    return jnp.int32(0)
  hi_a, lo_a, hi_b, lo_b = a // 10, a % 10, b // 10, b % 10
  z2 = t.step(hi_a, "*", hi_b, hi_a * hi_b)
  z0 = t.step(lo_a, "*", lo_b, lo_a * lo_b)
  s_a, s_b = hi_a + lo_a, hi_b + lo_b
  z3 = t.step(s_a, "*", s_b, s_a * s_b)
  z1 = _total_step(t, [z3, z2, z0], "-", z3 - z2 - z0)
  return t.answer(_total_step(t, [100 * z2, 10 * z1, z0]))


STRATEGIES = (
    Strategy("long_by_b", "long", lambda da, db: _long_grammar(db), long_by_b,
             check=lambda s, p: ~_b_first(s, p)),
    Strategy("long_by_a", "long", lambda da, db: _long_grammar(da), long_by_a,
             check=_b_first),
    Strategy("place_value", "place_value",
             lambda da, db: _steps(da * db) + " " + _total(da * db) + _ANSWER, place_value),
    Strategy("round_adjust", "round_adjust",
             lambda da, db: _steps(2) + " NUM - NUM = NUM ;" + _ANSWER, round_adjust),
    Strategy("difference_of_squares", "difference_of_squares",
             lambda da, db: ("NUM - NUM = NUM ; NUM + NUM = NUM ; " + _steps(2)
                             + " NUM - NUM = NUM ;" + _ANSWER), difference_of_squares),
    Strategy("halve_double", "halve_double",
             lambda da, db: ("NUM * NUM" + " { ; NUM * NUM }?" * (max_halvings(da, db) - 1)
                             + " = NUM ;" + _ANSWER), halve_double, check=_halved_first),
    Strategy("factor_out", "factor_out", lambda da, db: _steps(2) + _ANSWER, factor_out),
    Strategy("karatsuba", "karatsuba",
             lambda da, db: (_steps(3) + " " + _total(3, "-") + " " + _total(3) + _ANSWER
                             if (da, db) == (2, 2) else None), karatsuba),
)
STRATEGY_NAMES = tuple(s.name for s in STRATEGIES)
