"""The eight polynomial-root strategies, each with its step grammar beside it.

Each `build(t, p, max_root)` writes the work of one problem `p` (everything
before `#`) into a `envs.kit.trace.Trace` and returns (answer i32[3], ok bool[]):
the roots the work arrives at and whether the strategy structurally applies.
Numbers are signed (`N` in the grammars: an optional `-` token, then a number).
Slips are named sites of each strategy (`t.slips(i)`, `slip_sites` of them):
a sign error, a square root or D off by one, 2a written as a, a non-root's
value taken as 0, a wrong pair sum taken as S.

Post-checks hold the grammars' literal constants: the -4 of the formula, the
evaluation point 0 of the scan, the 0s of the depressed cubic. Numbers copied
from the problem are free like computed ones: a miscopied coefficient keeps the
label and costs the reward, as for a judge reading the work.
"""

import jax.numpy as jnp

from envs.kit import symbols
from envs.kit.strategy import Strategy
from envs.polynomial_roots.problems import MINUS, isqrt

MACROS = {"N": "{ - }? NUM"}
"""A signed number."""


def _numbers(sym, count=4):
  return symbols.signed_numbers(sym, MINUS, count)


def _flip(x, hit):
  """-x where hit (a sign slip)."""
  return jnp.where(hit, -x, x)


def _factor(t, p, max_root):
  u = t.slip.bits
  j = u % p.deg
  k = -p.r
  step = jnp.where((u // 4) % 2 == 0, 1, -1)
  k = k.at[j].set(jnp.where(t.slips(0), -k[j], jnp.where(t.slips(1), k[j] + step, k[j])))
  t.num(p.a)
  t.block(("(", "x", "+", 0, ")"), k[:, None], jnp.arange(3) < p.deg)
  return -k, jnp.bool_(True)


def _quadratic_formula(t, p, max_root):
  a, b, c = p.c[2], p.c[1], p.c[0]
  disc = b * b - 4 * a * c
  s = isqrt(disc) + (t.slips(1))
  disc = jnp.where(t.slips(1), s * s, disc)
  nb = _flip(-b, t.slips(0))
  two_a = jnp.where(t.slips(2), a, 2 * a)
  t.op("D =")
  t.num(b)
  t.op("*")
  t.num(b)
  t.op("+")
  t.num(-4)
  t.op("*")
  t.num(a)
  t.op("*")
  t.num(c)
  t.op("=")
  t.num(disc)
  t.op("; √")
  t.num(disc)
  t.op("=")
  t.num(s)
  t.op("; (")
  t.num(nb)
  t.op("±")
  t.num(s)
  t.op(") /")
  t.num(two_a)
  den = jnp.maximum(two_a, 1)
  roots = jnp.stack([(nb - s) // den, (nb + s) // den, 0])
  return roots, p.deg == 2


def _complete_square(t, p, max_root):
  a, b, c = p.c[2], p.c[1], p.c[0]
  a_safe = jnp.maximum(a, 1)
  h = _flip(b // (2 * a_safe), t.slips(0))
  hh = h * h
  mq = -(c // a_safe)
  s = isqrt(hh + mq) + (t.slips(1))
  k = jnp.where(t.slips(1), s * s, hh + mq)
  t.op("( x +")
  t.num(h)
  t.op(") ² =")
  t.num(hh)
  t.op("+")
  t.num(mq)
  t.op("=")
  t.num(k)
  t.op("; x =")
  t.num(-h)
  t.op("±")
  t.num(s)
  ok = (p.deg == 2) & (b % (2 * a_safe) == 0)
  return jnp.stack([-h - s, -h + s, 0]), ok


def _vieta_pairs(t, p, max_root):
  a, b, c = p.c[2], p.c[1], p.c[0]
  a_safe = jnp.maximum(a, 1)
  total = _flip(-b // a_safe, t.slips(0))
  prod = c // a_safe
  d = jnp.arange(1, max_root + 1)
  cand = (jnp.abs(prod) % d == 0) & (d * d <= jnp.abs(prod))
  sign = jnp.where(total >= 0, 1, -1)
  small = jnp.where(prod > 0, sign * d, -sign * d)
  large = sign * (jnp.abs(prod) // d)
  sums = small + large
  match = cand & (sums == total)
  stop = jnp.where(jnp.any(match), jnp.argmax(match), max_root - 1)
  first = jnp.argmax(cand)
  # Slip 1: the first pair's sum miscomputed as S, so the search stops there.
  early = (t.slips(1)) & jnp.any(cand) & (first < stop)
  stop = jnp.where(early, first, stop)
  sums = jnp.where(early & (jnp.arange(max_root) == first), total, sums)
  t.op("S =")
  t.num(total)
  t.op(", P =")
  t.num(prod)
  t.block((";", 0, "+", 1, "=", 2), jnp.stack([small, large, sums], -1),
          cand & (jnp.arange(max_root) <= stop))
  return jnp.stack([small[stop], large[stop], 0]), (p.deg == 2) & (c != 0)


def _search(t, p, cands, tried, write_tests):
  """Shared root search of rational_root and integer_scan.

  Tests the candidates in order until degree-1 roots are found; the last root
  is S minus them. Slip 0: the sign of S; slip 1: a non-root's value written as
  0 (taken for a root).

  Args:
    cands: i32[C] candidates in test order; tried: bool[C] which are tested.
    write_tests: fn(values i32[C], on bool[C]) writing the test steps.
  """
  values = p.at(cands)
  zero = tried & (values == 0)
  need = p.deg - 1
  first_stop = jnp.argmax(jnp.cumsum(zero) >= need)
  slot = jnp.arange(cands.shape[0])
  false_zero = tried & ~zero & (slot < first_stop) & (slot > 0)
  hit = (t.slips(1)) & jnp.any(false_zero)
  values = jnp.where(hit & (slot == jnp.argmax(false_zero)), 0, values)
  zero = tried & (values == 0)
  enough = jnp.sum(zero) >= need
  stop = jnp.where(enough, jnp.argmax(jnp.cumsum(zero) >= need), cands.shape[0] - 1)
  on = tried & (slot <= stop)
  write_tests(values, on)
  total = _flip(p.root_sum, t.slips(0))
  t.op("; S =")
  t.num(total)
  found = zero & on
  (roots,) = symbols.compact(found, [cands], [0])
  last = total - jnp.sum(jnp.where(found, cands, 0))
  answer = jnp.where(p.deg == 3, jnp.stack([roots[0], roots[1], last]),
                     jnp.stack([roots[0], last, 0]))
  not_triple = (p.deg == 2) | (p.r[0] != p.r[2])
  return answer, not_triple & enough


def _signed_range(max_root, with_zero):
  """[0,] 1, -1, 2, -2, ..., max_root, -max_root: i32[C]."""
  k = jnp.arange(1, max_root + 1)
  out = jnp.stack([k, -k], -1).reshape(-1)
  return jnp.concatenate([jnp.zeros((1,), jnp.int32), out]) if with_zero else out


def _rational_root(t, p, max_root):
  p0 = p.c[0] // jnp.maximum(p.a, 1)
  cands = _signed_range(max_root, with_zero=False)
  tried = (p0 != 0) & (p0 % jnp.abs(cands) == 0)
  t.op("P =")
  t.num(p0)

  def write(values, on):
    t.block((";", 0, "|", 1), jnp.stack([cands, values], -1), on)

  answer, ok = _search(t, p, cands, tried, write)
  return answer, ok & (p.c[0] != 0)


def _integer_scan(t, p, max_root):
  cands = _signed_range(max_root, with_zero=True)

  def write(values, on):
    t.op("f")
    t.num(0)
    t.op("=")
    t.num(values[0])
    t.block((";", "f", 0, "=", 1), jnp.stack([cands, values], -1)[1:], on[1:])

  return _search(t, p, cands, jnp.ones(cands.shape, bool), write)


def _grouping(t, p, max_root):
  a, b, c1 = p.c[3], p.c[2], p.c[1]
  a_safe = jnp.maximum(a, 1)
  m = c1 // a_safe
  r0 = _flip(-b // a_safe, t.slips(0))
  s = isqrt(-m) + (t.slips(1))
  t.op("x ² (")
  t.num(a)
  t.op("x +")
  t.num(b)
  t.op(") +")
  t.num(m)
  t.op("(")
  t.num(a)
  t.op("x +")
  t.num(b)
  t.op(") ; x =")
  t.num(r0)
  t.op(", ±")
  t.num(s)
  ok = (p.deg == 3) & (a * p.c[0] == b * c1)
  return jnp.stack([r0, -s, s]), ok


def _depressed_cubic(t, p, max_root):
  h = _flip(p.r[1], t.slips(0))
  e = (p.r[2] - p.r[0]) // 2 + (t.slips(1))
  t.op("x = y +")
  t.num(h)
  t.op("; y ³ +")
  t.num(-e * e)
  t.op("y =")
  t.num(0)
  t.op("; y =")
  t.num(0)
  t.op(", ±")
  t.num(e)
  ok = (p.deg == 3) & (p.r[0] + p.r[2] == 2 * p.r[1])
  return jnp.stack([h - e, h, h + e]), ok




STRATEGIES = (
    Strategy("factor", "factoring",
             "N ( x + N ) ( x + N ) { ( x + N ) }? # N , N { , N }? $", _factor,
             slip_sites=2),
    Strategy("quadratic_formula", "formula",
             "D = N * N + N * N * N = N ; √ N = N ; ( N ± N ) / N # N , N $",
             _quadratic_formula, check=lambda sym, p: _numbers(sym)[2] == -4, slip_sites=3),
    Strategy("complete_square", "shift",
             "( x + N ) ² = N + N = N ; x = N ± N # N , N $", _complete_square, slip_sites=2),
    Strategy("vieta_pairs", "vieta",
             "S = N , P = N { ; N + N = N }+ # N , N $", _vieta_pairs, slip_sites=2),
    Strategy("rational_root", "root_search",
             "P = N { ; N | N }+ ; S = N # N , N { , N }? $", _rational_root, slip_sites=2),
    Strategy("integer_scan", "root_search",
             "f N = N { ; f N = N }* ; S = N # N , N { , N }? $", _integer_scan,
             check=lambda sym, p: _numbers(sym)[0] == 0, slip_sites=2),
    Strategy("grouping", "factoring",
             "x ² ( N x + N ) + N ( N x + N ) ; x = N , ± N # N , N , N $", _grouping,
             slip_sites=2),
    Strategy("depressed_cubic", "shift",
             "x = y + N ; y ³ + N y = N ; y = N , ± N # N , N , N $", _depressed_cubic,
             check=lambda sym, p: (_numbers(sym)[2] == 0) & (_numbers(sym)[3] == 0),
             slip_sites=2),
)
STRATEGY_NAMES = tuple(s.name for s in STRATEGIES)
