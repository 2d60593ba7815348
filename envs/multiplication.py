"""Multiplication of two whole numbers, solved by eight different algorithms.

A problem is `a * b` with `digits_a`- and `digits_b`-digit factors (default 2 x 2:
DESIGN.md's calibration shows 3 x 2 is not learnable by the small CPU transformer).
The prompt is `37*48?`; a response is a sequence of steps, each ending in `;`,
then the answer marker `#`, the answer and EOS: `37*8=296;37*40=1480;296+1480=1776;#1776`.

Strategies (labels in this order; examples for 37 * 48 or a problem they apply to):

0. `long_by_b`: long multiplication, a times each digit of b (units first), then
   the partial products added.  `37*8=296;37*40=1480;296+1480=1776;#1776`
1. `long_by_a`: the same by the digits of a (`48*7=336;48*30=1440;...`); applies
   when a != b (else it is `long_by_b`). Micro-label of the macro "long".
2. `place_value`: (30+7)(40+8), all digit-times-digit partials with their place
   values, highest first, then one sum.  `30*40=1200;30*8=240;7*40=280;7*8=56;...`
3. `round_adjust`: round the factor with the larger units digit (b on ties) up
   to the next multiple of ten and subtract the excess.  `37*50=1850;37*2=74;1850-74=1776;#1776`.
   Applies when that units digit is >= 6.
4. `difference_of_squares`: a*b = m^2 - d^2 with m the midpoint, d the half gap.
   `42-6=36;42+6=48;42*42=1764;6*6=36;1764-36=1728;#1728` for 36 * 48. Applies
   when a and b have the same parity and differ.
5. `halve_double`: halve one factor and double the other until the halved one
   is odd.  `24*74;12*148;6*296;3*592=1776;#1776`. Applies when a (else b) is
   c * 2^k with c odd and at most 9, k >= 1 (12, 14, 16, 18, 20, 24, 28, 32, ...).
6. `factor_out`: b (else a) is p*q with single digits 2 <= p <= q <= 9 (p the
   smallest such), so a*b = (p*a)*q: `6*37=222;222*8=1776;#1776`. Applies when b or a is such a
   product (48 = 6*8 yes, 91 = 7*13 no: factor structure, not visible at a glance).
7. `karatsuba`: z2 = A*C, z0 = B*D, z1 = (A+B)(C+D) - z2 - z0, then
   100 z2 + 10 z1 + z0.  `3*4=12;7*8=56;10*12=120;120-12-56=52;1200+520+56=1776;#1776`.
   Only for 2-digit x 2-digit problems.

Which strategies apply thus hinges on parity and units digits (visible) but also
on factor structure (factor_out, halve_double: is 91 or 57 a product of digits?),
and which succeed for a model on carry patterns (long multiplication and the
place-value split carry in every partial product when digits are large).

**Label recognition (no strategy tag).** Each strategy has a step grammar: the
sequence of symbol kinds (numbers and operator tokens, see `envs.common`) of its
trace for this problem size. A response follows a strategy iff its symbols have
exactly that sequence of kinds; the numbers in it are free, so an arithmetic slip,
a miscopied operand or a wrong rounding keeps the label and costs only the reward
(what a judge reading the work would do). Two signatures are checked on numbers:
halve_double's first factor is half of a or b, and the long multiplications are
told apart by their first operand (b first: long_by_a). The grammars differ
pairwise, so the label is unique; a strategy used where it does not apply keeps
its label too (and earns 0 unless the answer is right). Everything is vectorised
in `jnp` (symbol reading by windows and cumulative sums, grammar matching by
broadcast comparison).

**Reward** is 1 iff the response contains EOS and its last symbols before EOS
are `#` and a well-formed number (no leading zero) equal to a * b, computed
from the problem. The work itself is never checked for reward.

**Lengths.** With 2 x 2 digits the longest correct trace is place_value's 63
tokens (EOS included: `90*90=8100;90*9=810;9*90=810;9*9=81;8100+810+810+81=9801;#9801`),
so `max_response_len` defaults to 64: the whole mixture fits the ~64-token budget
that DESIGN.md's calibration found learnable. Lengths (min/median/max, EOS
included): factor_out 22/26/26, halve_double 14/30/52, long_by_a/b 32/40/40,
round_adjust 34/39/41, karatsuba 43/54/62, difference_of_squares 47/59/61,
place_value 49/59/63. Other digit counts get the longest
correct trace over all problems (or a large sample) plus 2.

**Params.** `min_digit`, `max_digit`: every digit of both factors is drawn
uniformly from [min_digit, max_digit] (the leading digit at least 1). Default
0..9 (uniform over all factors). **OOD** (`ood_params`): digits 5..9. Every
partial product then carries; the short shortcut strategies become rare
(factor_out applies to ~8% of problems, only 56 = 7*8 qualifies, vs ~51%
in-distribution; halve_double to ~15%, only 56 and 96, vs ~34%), while
round_adjust applies to ~96% (vs ~64%): the strategies RL is likely to favour
in-distribution (short traces) are mostly inapplicable, and the carry-heavy
routes (long, place_value, karatsuba) are at their hardest.
"""

import functools
import re
from typing import Optional, Sequence

import chex
import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from envs import common
from polyepo.env_api import DEGENERATE

# Vocabulary: digits are tokens 0-9.
PLUS, MINUS, TIMES, EQUALS, SEP, ANSWER, QUESTION, EOS, PAD = range(10, 19)
VOCAB_SIZE = 19
ITOS = tuple("0123456789+-*=;#?") + ("$", "_")
STOI = {s: i for i, s in enumerate(ITOS)}

STRATEGY_NAMES = (
    "long_by_b",
    "long_by_a",
    "place_value",
    "round_adjust",
    "difference_of_squares",
    "halve_double",
    "factor_out",
    "karatsuba",
)
MACRO_NAMES = ("long", "long", "place_value", "round_adjust",
               "difference_of_squares", "halve_double", "factor_out", "karatsuba")


@struct.dataclass
class MultiplicationParams:
  """Numeric knobs (vmappable). Every digit is uniform in [min_digit, max_digit]."""
  min_digit: jnp.ndarray
  max_digit: jnp.ndarray


@struct.dataclass
class MultiplicationProblems:
  """A batch of problems a * b: `a: i32[B]`, `b: i32[B]`."""
  a: jnp.ndarray
  b: jnp.ndarray


# ---------------------------------------------------------------------------
# Number facts used by applicability and the strategies (scalar or batched).


def _odd_part(n):
  n = jnp.asarray(n, jnp.int32)
  return n // jnp.bitwise_and(n, -n)


def _halvable(n):
  """n = c * 2^k with c odd, c <= 9 and k >= 1."""
  return (n % 2 == 0) & (n > 0) & (_odd_part(n) <= 9)


def _smallest_digit_factor(n):
  """Smallest p in 2..9 with n = p * q, p <= q <= 9; 0 if none."""
  p = jnp.arange(2, 10)
  ok = (n[..., None] % p == 0) & (n[..., None] // p <= 9) & (n[..., None] // p >= p)
  return jnp.where(jnp.any(ok, -1), p[jnp.argmax(ok, -1)], 0)


# ---------------------------------------------------------------------------
# Trace construction. A `_Trace` collects symbol slots at trace time (Python);
# each strategy is a straight-line function of the scalar factors a, b.


def _slip_value(v, u, sign):
  """v changed by +-10^j in one digit (j from u in [0, 1)), keeping its length."""
  nd = common.num_digits(v)
  delta = common.pow10(jnp.minimum((u * nd).astype(jnp.int32), nd - 1))
  up = v + sign * delta
  ok = (up >= 0) & (common.num_digits(up) == nd)
  return jnp.where(ok, up, v - sign * delta)


class _Trace:
  """Symbol slots of one strategy's trace for one problem.

  Kinds and fixed flags are Python constants (they are the same for every
  problem); a slot's `on` flag is True or, for variable-length traces, a traced
  bool. `slip = (step, delta)` adds delta to the step-th slippable result.
  """

  def __init__(self, slip=None):
    self.slip = slip
    self.kinds, self.values, self.fixed, self.on = [], [], [], []
    self.results, self.slippable = [], []  # unslipped value, on flag

  def _add(self, kind, value, fixed, on):
    self.kinds.append(kind)
    self.values.append(value)
    self.fixed.append(fixed)
    self.on.append(on)

  @property
  def dynamic(self):
    return any(on is not True for on in self.on)

  def op(self, *tokens, on=True):
    for tok in tokens:
      self._add(tok, None, False, on)

  def given(self, value, on=True):
    """A number copied or read off the problem (fixed in the template)."""
    self._add(common.NUM, value, True, on)

  def copy(self, value, on=True):
    """A computed number written again (free, never slips by itself)."""
    self._add(common.NUM, value, False, on)

  def result(self, value, on=True):
    """A computed number (free); the slip, if it falls here, changes it."""
    value = jnp.asarray(value, jnp.int32)
    self.results.append(value)
    if self.slip is not None:
      step, delta = self.slip
      value = value + jnp.where(step == len(self.slippable), delta, 0)
    self.slippable.append(on)
    self._add(common.NUM, value, False, on)
    return value

  def step(self, x, op_tok, y, value, fixed_x=True, fixed_y=True, on=True):
    """`x op y = value;` with value a slippable result; returns the value."""
    (self.given if fixed_x else self.copy)(x, on)
    self.op(op_tok, on=on)
    (self.given if fixed_y else self.copy)(y, on)
    self.op(EQUALS, on=on)
    value = self.result(value, on)
    self.op(SEP, on=on)
    return value

  def total(self, terms, op_tok=PLUS, value=None):
    """`t1 + t2 + ... = value;` over computed terms; returns the value."""
    for i, term in enumerate(terms):
      if i:
        self.op(op_tok)
      self.copy(term)
    self.op(EQUALS)
    value = sum(terms[1:], terms[0]) if value is None else value
    value = self.result(value)
    self.op(SEP)
    return value

  def answer(self, value):
    self.op(ANSWER)
    self.copy(value)
    self.op(EOS)


def _long(t, x, y, dy):
  """x times each digit of y (dy digits), units first, then the sum."""
  parts = []
  for j in range(dy):
    yj = (y // 10**j) % 10 * 10**j
    parts.append(t.step(x, TIMES, yj, x * yj))
  t.answer(t.total(parts) if dy > 1 else parts[0])


def _long_by_b(t, a, b, da, db):
  _long(t, a, b, db)


def _long_by_a(t, a, b, da, db):
  _long(t, b, a, da)


def _place_value(t, a, b, da, db):
  parts = []
  for i in reversed(range(da)):
    ai = (a // 10**i) % 10 * 10**i
    for j in reversed(range(db)):
      bj = (b // 10**j) % 10 * 10**j
      parts.append(t.step(ai, TIMES, bj, ai * bj))
  t.answer(t.total(parts))


def _round_adjust(t, a, b, da, db):
  round_b = b % 10 >= a % 10
  x = jnp.where(round_b, a, b)  # kept factor
  y = jnp.where(round_b, b, a)  # rounded factor
  r = y - y % 10 + 10
  big = t.step(x, TIMES, r, x * r)
  small = t.step(x, TIMES, r - y, x * (r - y))
  t.answer(t.total([big, small], MINUS, big - small))


def _difference_of_squares(t, a, b, da, db):
  lo, hi = jnp.minimum(a, b), jnp.maximum(a, b)
  m, d = (a + b) // 2, (hi - lo) // 2
  for op_tok, side in ((MINUS, lo), (PLUS, hi)):  # `m-d=lo;m+d=hi;`: all read off
    t.given(m)
    t.op(op_tok)
    t.given(d)
    t.op(EQUALS)
    t.given(side)
    t.op(SEP)
  m2 = t.step(m, TIMES, m, m * m)
  d2 = t.step(d, TIMES, d, d * d)
  t.answer(t.total([m2, d2], MINUS, m2 - d2))


def _max_halvings(da, db):
  return int(np.log2(10**max(da, db)))


def _halvings(a, b, da, db):
  """(h, o, k): halve h = a (else b) k times, doubling o."""
  halve_a = _halvable(a)
  h = jnp.where(halve_a, a, b)
  o = jnp.where(halve_a, b, a)
  k = sum(((h >> i) << i == h).astype(jnp.int32)
          for i in range(1, _max_halvings(da, db) + 1))
  return h, o, k


def _halve_double(t, a, b, da, db, k=None):
  """With a static k (an int) the slots are static; else they follow the problem."""
  h, o, k_problem = _halvings(a, b, da, db)
  k = k_problem if k is None else k
  kmax = _max_halvings(da, db)
  doubled = o
  product = jnp.int32(0)
  for i in range(1, kmax + 1):  # `h/2*2o;h/4*4o;...;`
    on = i <= k
    t.given(h >> i, on)
    t.op(TIMES, on=on)
    if i == 1:
      doubled = 2 * o
      t.given(doubled, on)
    else:
      doubled = t.result(2 * doubled, on)
    t.op(SEP, on=on & (i < k))
    product = jnp.where(i == k, (h >> i) * doubled, product)
  t.op(EQUALS)
  product = t.result(product)
  t.op(SEP)
  t.answer(product)


def _factor_out(t, a, b, da, db):
  use_b = _smallest_digit_factor(b) > 0
  y = jnp.where(use_b, b, a)
  x = jnp.where(use_b, a, b)
  p = jnp.maximum(_smallest_digit_factor(y), 1)
  q = y // p
  px = t.step(p, TIMES, x, p * x)
  t.answer(t.step(px, TIMES, q, px * q, fixed_x=False))


def _karatsuba(t, a, b, da, db):
  if (da, db) != (2, 2):
    return
  hi_a, lo_a, hi_b, lo_b = a // 10, a % 10, b // 10, b % 10
  z2 = t.step(hi_a, TIMES, hi_b, hi_a * hi_b)
  z0 = t.step(lo_a, TIMES, lo_b, lo_a * lo_b)
  s_a, s_b = hi_a + lo_a, hi_b + lo_b
  z3 = t.step(s_a, TIMES, s_b, s_a * s_b)
  z1 = t.total([z3, z2, z0], MINUS, z3 - z2 - z0)
  t.answer(t.total([100 * z2, 10 * z1, z0]))


_STRATEGIES = (_long_by_b, _long_by_a, _place_value, _round_adjust,
               _difference_of_squares, _halve_double, _factor_out, _karatsuba)


def _applicable(a, b, da, db):
  """bool[..., S] for factors a, b: i32[...]."""
  ua, ub = a % 10, b % 10
  return jnp.stack([
      jnp.ones_like(a, bool),
      a != b,
      jnp.ones_like(a, bool),
      jnp.maximum(ua, ub) >= 6,
      ((a - b) % 2 == 0) & (a != b),
      _halvable(a) | _halvable(b),
      (_smallest_digit_factor(a) > 0) | (_smallest_digit_factor(b) > 0),
      jnp.full(jnp.shape(a), (da, db) == (2, 2)),
  ], axis=-1)


def _templates(a, b, slip, da, db, length):
  """Every strategy's trace for one problem a * b (scalars).

  Args:
    a, b: i32[] factors.
    slip: None or (step i32[], delta i32[]): add delta to the step-th
      slippable result of every strategy (and carry it into later steps).
    da, db, length: static digit counts and number of symbol slots L.

  Returns:
    kinds, values: i32[S, L]; fixed: bool[S, L]; slippable: bool[S, M];
    results: i32[S, M], the unslipped value of each slippable result.
  """
  kinds, values, fixed, slippable, results = [], [], [], [], []
  zero = jnp.zeros_like(a)
  traces = []
  for fn in _STRATEGIES:
    t = _Trace(slip)
    fn(t, a, b, da, db)
    traces.append(t)
  m = max(len(t.slippable) for t in traces)
  for t in traces:
    n = len(t.kinds)
    assert n <= length, (n, length)
    k = jnp.asarray(np.array(t.kinds + [common.FILL] * (length - n), np.int32))
    f = jnp.asarray(np.array(t.fixed + [False] * (length - n), bool))
    v = jnp.stack([zero if x is None else x for x in t.values] + [zero] * (length - n))
    if t.dynamic:
      on = jnp.stack([jnp.asarray(x, bool) for x in t.on] + [jnp.asarray(False)] * (length - n))
      k, v, f = common.compact(on, [k, v, f], [common.FILL, 0, False])
    else:
      k, f = jnp.broadcast_to(k, v.shape), jnp.broadcast_to(f, v.shape)
    kinds.append(k)
    values.append(v)
    fixed.append(f)
    pad = m - len(t.slippable)
    slippable.append(jnp.stack([jnp.asarray(x, bool) for x in t.slippable]
                               + [jnp.asarray(False)] * pad))
    results.append(jnp.stack(t.results + [zero] * pad))
  return (jnp.stack(kinds), jnp.stack(values), jnp.stack(fixed),
          jnp.stack(slippable), jnp.stack(results))


def _template_length(da, db):
  """Number of symbol slots of the longest strategy (before compaction)."""
  lengths = []
  for fn in _STRATEGIES:
    t = _Trace(None)
    jax.eval_shape(lambda a, b: fn(t, a, b, da, db), jnp.int32(0), jnp.int32(0))
    lengths.append(len(t.kinds))
  return max(lengths)


_LONGEST = {(2, 2): 63, (2, 3): 100, (3, 2): 100, (3, 3): 161}
"""`_longest_trace` for each digit pair, precomputed (tests recompute 2 x 2)."""


@functools.lru_cache(maxsize=None)
def _longest_trace(da: int, db: int) -> int:
  """Longest correct trace (EOS included) over all problems, or a large sample."""
  lo_a, hi_a, lo_b, hi_b = 10**(da - 1), 10**da, 10**(db - 1), 10**db
  count = (hi_a - lo_a) * (hi_b - lo_b)
  if count <= 200_000:
    a, b = np.meshgrid(np.arange(lo_a, hi_a), np.arange(lo_b, hi_b), indexing="ij")
    a, b, margin = a.ravel(), b.ravel(), 0
  else:
    rng = np.random.default_rng(0)
    a = np.concatenate([rng.integers(lo_a, hi_a, 200_000), [hi_a - 1, hi_a - 2]])
    b = np.concatenate([rng.integers(lo_b, hi_b, 200_000), [hi_b - 1, hi_b - 1]])
    margin = 2
  length = _template_length(da, db)

  @jax.jit
  def lengths(a, b):
    def one(a, b):
      kinds, values, _, _, _ = _templates(a, b, None, da, db, length)
      lens = jnp.where(kinds == common.NUM, common.num_digits(values),
                       jnp.where(kinds == common.FILL, 0, 1))
      return jnp.max(jnp.where(_applicable(a, b, da, db), lens.sum(-1), 0))
    return jnp.max(jax.vmap(one)(a, b))

  return int(lengths(jnp.asarray(a, jnp.int32), jnp.asarray(b, jnp.int32))) + margin


@functools.partial(jax.jit, static_argnums=(5, 6, 7, 8))
def _demonstrate(key, a, b, strategy_ids, slip_rate, da, db, length, max_len):
  """Batched `Multiplication.demonstrate` for static sizes."""
  k_slip, k_step, k_pos, k_sign = jax.random.split(key, 4)
  n = a.shape[0]
  do_slip = jax.random.uniform(k_slip, (n,)) < slip_rate
  u_step = jax.random.uniform(k_step, (n,))
  u_pos = jax.random.uniform(k_pos, (n,))
  sign = jnp.where(jax.random.bernoulli(k_sign, 0.5, (n,)), 1, -1)

  def one(a, b, s, do_slip, u_step, u_pos, sign):
    kinds, values, _, slippable, results = _templates(a, b, None, da, db, length)
    clean, _ = common.symbols_to_tokens(kinds[s], values[s], max_len, PAD)
    mask = slippable[s]
    count = jnp.sum(mask)
    target = jnp.minimum((u_step * count).astype(jnp.int32), count - 1)
    step = jnp.where(do_slip & (count > 0), jnp.argmax(jnp.cumsum(mask) > target), -1)
    value = results[s][jnp.maximum(step, 0)]
    deltas = jnp.stack([_slip_value(value, u_pos, sign),
                        _slip_value(value, u_pos, -sign)]) - value

    def write(delta):
      kinds, values, _, _, _ = _templates(a, b, (step, delta), da, db, length)
      tokens, fits = common.symbols_to_tokens(kinds[s], values[s], max_len, PAD)
      final = values[s][jnp.argmax(kinds[s] == EOS) - 1]
      # A slip may not make a later value negative (e.g. m^2 - d^2 < 0).
      return tokens, fits & jnp.all(values[s] >= 0) & (final != a * b)

    slipped, good = jax.vmap(write)(deltas)
    return jnp.where(good[0], slipped[0], jnp.where(good[1], slipped[1], clean))

  responses = jax.vmap(one)(a, b, strategy_ids, do_slip, u_step, u_pos, sign)
  ok = jnp.take_along_axis(_applicable(a, b, da, db), strategy_ids[:, None], 1)[:, 0]
  return jnp.where(ok[:, None], responses, PAD), ok


def _follows_static(sym, t):
  """Whether the symbols have the kinds of trace t, whose slots are all static: bool[]."""
  slots = [i for i, on in enumerate(t.on) if on]
  if not slots:
    return jnp.asarray(False)
  kinds = np.array([t.kinds[i] for i in slots], np.int32)
  return jnp.all(sym.kinds[:len(slots)] == kinds)  # the kinds end with EOS


def _follows(sym, a, b, da, db):
  """bool[S]: which strategies' step grammar the symbols follow (one example).

  A response follows a strategy when its sequence of symbol kinds (numbers and
  operator tokens) is that strategy's for this problem size: the numbers in it,
  copied or computed, are free, so a slip or a miscopied operand keeps the label
  (as a judge reading the work would keep it) and only costs the reward.
  halve_double's grammar is matched for every number of halvings, with its first
  factor half of a or b (its signature: without it, one halving would read as
  "x*y=z", a bare restatement of the problem). The two long
  multiplications share a grammar and are told apart by the first operand: b
  first (with a != b) is long_by_a, anything else long_by_b.
  """
  out = []
  for fn in _STRATEGIES:
    if fn is _halve_double:
      match = jnp.asarray(False)
      for k in range(1, _max_halvings(da, db) + 1):
        t = _Trace()
        fn(t, a, b, da, db, k=k)
        match |= _follows_static(sym, t)
      # What makes it halving: the first factor written is half of a or of b
      # (with k = 1 the grammar alone is just "x*y=z").
      first = sym.values[0]
      match &= ((2 * first == a) | (2 * first == b)) & (first > 0)
    else:
      t = _Trace()
      fn(t, a, b, da, db)
      assert not t.dynamic, fn.__name__
      match = _follows_static(sym, t)
    out.append(match)
  by_a = (sym.values[0] == b) & (a != b)
  by_b_index, by_a_index = _STRATEGIES.index(_long_by_b), _STRATEGIES.index(_long_by_a)
  out[by_b_index] = out[by_b_index] & ~by_a
  out[by_a_index] = out[by_a_index] & by_a
  return jnp.stack(out)


@functools.partial(jax.jit, static_argnums=(3, 4, 5))
def _score(a, b, responses, da, db, length):
  """Batched `Multiplication.score` for static sizes."""

  def one(a, b, tokens):
    sym = common.tokens_to_symbols(tokens, eos_id=EOS, num_symbols=length)
    follows = _follows(sym, a, b, da, db)
    label = jnp.where(jnp.any(follows), jnp.argmax(follows), DEGENERATE)
    correct = ((sym.final_kind == common.NUM) & (sym.marker == ANSWER)
               & (sym.final_value == a * b))
    return correct.astype(jnp.float32), label.astype(jnp.int32)

  return jax.vmap(one)(a, b, responses)


_NUM = r"(-?\d+(?:\.\d+)?|-?\.\d+)"  # signed and decimal too: refused later, saying why
_PATTERNS = tuple(re.compile(p.replace("NUM", _NUM)) for p in (
    # "37*48", "37 x 48", "What is 37 times 48?", "(37)*(48) = ?", "Compute 37·48."
    r"^(?:what\s+is|what's|compute|calculate|evaluate|find|work\s+out)?\s*"
    r"\(?\s*NUM\s*\)?\s*(?:\*|x|×|·|times|multiplied\s+by)\s*"
    r"\(?\s*NUM\s*\)?\s*(?:=\s*\??)?\s*[?.!]?$",
    r"^multiply\s+NUM\s+(?:by|and|with)\s+NUM\s*[?.!]?$",
    # "What is the product of 37 and 48?", "Product of 37 and 48." (mathematics_dataset)
    r"^(?:what\s+is\s+|what's\s+|find\s+|calculate\s+|compute\s+|work\s+out\s+|give\s+)?"
    r"(?:the\s+)?product\s+of\s+NUM\s+and\s+NUM\s*[?.!]?$",
    # sympy: Mul(37, 48), Mul(Integer(37), Integer(48))
    r"^mul\(\s*(?:integer\()?\s*NUM\s*\)?\s*,\s*(?:integer\()?\s*NUM\s*\)?\s*\)$",
))


class Multiplication:
  """`a * b` with exact rewards and strategy labels; see the module docstring.

  Args:
    digits_a: digits of the first factor (2 or 3).
    digits_b: digits of the second factor (2 or 3).
    max_response_len: T; default: the longest correct trace (64 for 2 x 2).
  """

  strategy_names = STRATEGY_NAMES
  macro_names = MACRO_NAMES
  vocab_size = VOCAB_SIZE
  pad_id = PAD
  eos_id = EOS
  itos = ITOS

  def __init__(self, digits_a: int = 2, digits_b: int = 2,
               max_response_len: Optional[int] = None):
    for name, d in (("digits_a", digits_a), ("digits_b", digits_b)):
      if d not in (2, 3):
        raise ValueError(f"{name} must be 2 or 3, got {d!r}.")
    self.digits_a, self.digits_b = digits_a, digits_b
    self.prompt_len = digits_a + digits_b + 2
    self._length = _template_length(digits_a, digits_b)
    longest = _LONGEST.get((digits_a, digits_b)) or _longest_trace(digits_a, digits_b)
    if max_response_len is None:
      max_response_len = max(64, longest) if (digits_a, digits_b) == (2, 2) else longest
    self.max_response_len = max_response_len

  # -- params -----------------------------------------------------------------

  def default_params(self) -> MultiplicationParams:
    return MultiplicationParams(min_digit=jnp.int32(0), max_digit=jnp.int32(9))

  def ood_params(self) -> MultiplicationParams:
    return MultiplicationParams(min_digit=jnp.int32(5), max_digit=jnp.int32(9))

  # -- problems ---------------------------------------------------------------

  def _sample_factor(self, key, params, digits, batch_size):
    low = jnp.full((batch_size, digits), params.min_digit).at[:, 0].max(1)
    digit = jax.random.randint(key, (batch_size, digits), low, params.max_digit + 1)
    return jnp.sum(digit * common.pow10(jnp.arange(digits - 1, -1, -1)), axis=-1)

  def sample_problems(self, key, params: MultiplicationParams,
                      batch_size: int) -> MultiplicationProblems:
    """`batch_size` problems; each digit uniform in [min_digit, max_digit]."""
    key_a, key_b = jax.random.split(key)
    return MultiplicationProblems(
        a=self._sample_factor(key_a, params, self.digits_a, batch_size).astype(jnp.int32),
        b=self._sample_factor(key_b, params, self.digits_b, batch_size).astype(jnp.int32))

  def prompt_tokens(self, problems: MultiplicationProblems):
    """i32[B, P]: `a * b ?` as tokens, P = digits_a + digits_b + 2."""
    a = common.int_to_tokens(problems.a, self.digits_a)
    b = common.int_to_tokens(problems.b, self.digits_b)
    n = a.shape[0]
    return jnp.concatenate([
        a, jnp.full((n, 1), TIMES), b, jnp.full((n, 1), QUESTION)], axis=1).astype(jnp.int32)

  def applicable(self, problems: MultiplicationProblems):
    """bool[B, S]: which strategies apply to each problem."""
    return _applicable(problems.a, problems.b, self.digits_a, self.digits_b)

  # -- traces -----------------------------------------------------------------

  def demonstrate(self, key, problems: MultiplicationProblems, strategy_ids,
                  slip_rate: float = 0.0):
    """Full traces of the given strategies, with arithmetic slips.

    With probability `slip_rate` a trace gets one slip: a computed value (a
    product, sum, difference or doubled value; never a number read off the
    problem) changes by +-10^j in one digit, keeping its length, and every later
    step uses the wrong value, so the answer is wrong. In the rare case where
    both signs of the drawn slip would overflow `max_response_len` the trace
    stays correct.

    Args:
      key: PRNG key.
      problems: B problems.
      strategy_ids: i32[B] strategy of each trace.
      slip_rate: probability of a slip per trace.

    Returns:
      (responses i32[B, T], ok bool[B]): ok is False (and the response all PAD)
      where the strategy does not apply.
    """
    strategy_ids = jnp.asarray(strategy_ids, jnp.int32)
    chex.assert_equal_shape([problems.a, strategy_ids])
    return _demonstrate(key, problems.a, problems.b, strategy_ids,
                        jnp.asarray(slip_rate, jnp.float32), self.digits_a,
                        self.digits_b, self._length, self.max_response_len)

  def score(self, problems: MultiplicationProblems, responses):
    """Exact reward and strategy label of each response.

    Args:
      problems: B problems.
      responses: i32[B, T] tokens (anything after the first EOS is ignored).

    Returns:
      (reward f32[B], label i32[B]): reward 1 iff the response ends in
      `# <a*b> EOS`; label the strategy whose template it follows, else
      DEGENERATE.
    """
    chex.assert_rank(responses, 2)
    return _score(problems.a, problems.b, jnp.asarray(responses, jnp.int32),
                  self.digits_a, self.digits_b, self._length)

  def answers(self, problems, responses):
    """i32[B]: an id of each response's final answer (after `#`), -1 if none.

    Equal ids mean equal answer strings; used for majority voting.
    """
    del problems  # the answer is read from the response alone
    return common.answer_ids(responses, marker_id=STOI["#"], eos_id=EOS)

  # -- text -------------------------------------------------------------------

  def question_text(self, problems: MultiplicationProblems) -> list:
    return [f"{a}*{b}?" for a, b in zip(np.asarray(problems.a).tolist(),
                                        np.asarray(problems.b).tolist())]

  def render(self, problems: MultiplicationProblems, responses) -> list:
    """`37*48? 37*8=296; 37*40=1480; 296+1480=1776; #1776` per problem.

    The response is shown up to EOS (PAD is `_`); one cut off before EOS ends
    in ` [no EOS]`. `parse_problems` reads the question back, and
    `text_to_tokens` the response.
    """
    out = []
    for q, r in zip(self.question_text(problems), np.asarray(responses)):
      text = common.tokens_to_text(r, ITOS, EOS, PAD).replace(";", "; ")
      out.append(f"{q} {text.rstrip()}")
    return out

  @staticmethod
  def text_to_tokens(text: str):
    """i32[n]: tokens of a rendered response (spaces ignored)."""
    return common.text_to_tokens(text, STOI)

  def parse_problems(self, texts: Sequence[str]) -> MultiplicationProblems:
    """Problems from text such as `What is 37 times 48?`, `37*48`, `37 x 48`,
    `multiply 37 by 48`, `Product of 37 and 48.`, `Work out 37 * 48.`, or
    sympy's `Mul(37, 48)`.

    Raises:
      ValueError: quoting the text: "Cannot parse" if it is not a product of two
      numbers; "out of range", saying why, if a factor is negative, not whole, or
      does not have `digits_a` / `digits_b` digits.
    """
    if isinstance(texts, str):
      texts = [texts]
    a_list, b_list = [], []
    for text in texts:
      norm = " ".join(str(text).strip().lower().split())
      match = next((m for p in _PATTERNS if (m := p.match(norm))), None)
      if match is None:
        raise ValueError(
            f"Cannot parse {text!r}: expected a product of two whole numbers, "
            "e.g. 'What is 37 times 48?', '37*48', '37 x 48' or 'Mul(37, 48)'.")
      a, b = match.group(1), match.group(2)
      for name, s, d in (("first", a, self.digits_a), ("second", b, self.digits_b)):
        if "." in s:
          raise ValueError(f"{text!r} is out of range: the {name} factor {s} is not a whole "
                           "number (this env multiplies positive whole numbers).")
        if s.startswith("-"):
          raise ValueError(f"{text!r} is out of range: the {name} factor {s} is negative "
                           "(this env multiplies positive whole numbers).")
        if len(s) != d or s[0] == "0":
          raise ValueError(
              f"{text!r} is out of range: the {name} factor {s} must have exactly "
              f"{d} digits (this env multiplies {self.digits_a}-digit by "
              f"{self.digits_b}-digit numbers).")
      a_list.append(int(a))
      b_list.append(int(b))
    return MultiplicationProblems(a=jnp.asarray(a_list, jnp.int32),
                                  b=jnp.asarray(b_list, jnp.int32))
