"""Integer roots of quadratics and cubics, solved by eight different algorithms.

A problem is a polynomial `a (x - r1) (x - r2) [(x - r3)]` with integer roots
`|r_i| <= root_range` and leading coefficient `1 <= a <= lead_range`, given
expanded: the prompt is `2x²+-10x+12=0` (every power down to x⁰, `+-` for minus).
A response is a sequence of steps separated by `;`, then the answer marker `#`,
the roots and EOS (`$`). Numbers are a digit run with an optional `-` token in
front (no leading zeros).

**The answer** is the multiset of roots in canonical order: ascending, a repeated
root written as often as its multiplicity, exactly `degree` numbers separated by
`,` (`x³-3x+2` -> `#-2,1,1`). Any other order or count earns 0.

Strategies (labels in this order; examples for the problem named):

0. `factor` -- factor by inspection, roots read off the factors (all problems).
   `2(x+-2)(x+-3)#2,3` for 2x²-10x+12.
1. `quadratic_formula` -- D = b²-4ac, its root, (-b ± √D)/2a (degree 2).
   `D=-10*-10+-4*2*12=4;√4=2;(10±2)/4#2,3`.
2. `complete_square` -- (x + b/2a)² = (b/2a)² - c/a, then x = -b/2a ± root
   (degree 2 with b/a even, i.e. roots of equal parity).  `(x+-3)²=9+-8=1;x=3±1#2,4`.
3. `vieta_pairs` -- S = r1+r2 = -b/a, P = r1 r2 = c/a, try factor pairs of P
   (smaller factor 1, 2, 3, ...) until the sum is S (degree 2, c != 0).
   `S=5,P=6;1+6=7;2+3=5#2,3`.
4. `rational_root` -- P = c0/a; test the divisors t of P (1, -1, 2, -2, ...) by
   the remainder f(t) of synthetic division until degree-1 roots are found;
   the last root is S minus them (c0 != 0, not a triple root).
   `P=6;1|2;-1|12;2|0;S=5#2,3` for x²-5x+6.
5. `integer_scan` -- evaluate f at 0, 1, -1, 2, -2, ... until degree-1 roots are
   found; the last from S (not a triple root). `f0=6;f1=2;f-1=12;f2=0;S=5#2,3`.
6. `grouping` -- x²(ax+b) + m(ax+b) = (ax+b)(x²+m) (degree 3 with a d = b c,
   i.e. two roots ±s). `x²(1x+-1)+-4(1x+-1);x=1,±2#-2,1,2` for x³-x²-4x+4.
7. `depressed_cubic` -- shift x = y + h (h = -b/3a) to y³ + p y = 0 (degree 3
   with roots in arithmetic progression). `x=y+2;y³+-1y=0;y=0,±1#1,2,3`.

Macro labels (`macro_names`): factoring (0, 6), formula (1), shift (2, 7: the
substitution that removes the second-highest term), vieta (3), root_search (4, 5).

Which strategy works hinges on properties that cost work to read off the prompt:
whether b is a multiple of 2a (complete_square), whether a d = b c (grouping),
whether the roots are in arithmetic progression (depressed_cubic), whether
c0 = 0, and -- through the token budget -- where a root sits among the divisors
of c/a (vieta_pairs, rational_root) or how far the roots are from 0
(integer_scan): a strategy *applies* only if its full correct trace fits in
`max_response_len` tokens, and those search strategies run long on some problems.
Degree (visible) decides the rest. `factor` applies everywhere, so every problem
has at least one applicable strategy.

**Label recognition (no strategy tag).** Responses are read as symbols
(`envs.common`: a digit run is one NUM symbol). Each strategy has a regular step
grammar over symbols, e.g. vieta_pairs is `S=N,P=N{;N+N=N}+#N,N$` with N = `-`?NUM;
the eight grammars are compiled at import into one DFA over symbols (they start
differently, so the union is unambiguous; checked at build time) whose accepting
states carry the label; `score` runs it with one `lax.scan` over the symbols.
Only the grammars' literal constants must match (the -4 of the formula, the
evaluation point 0 of the scan, the 0s of the depressed cubic). Numbers copied
from the problem are free like computed ones: a miscopied coefficient keeps the
label and costs the reward, as it would for a judge reading the work. Computed numbers are free, so a slip -- which changes computed numbers, their
length or sign, or how many candidates are tried -- keeps the label. A
response that follows no grammar to EOS, copies a number wrongly, or only states
an answer is DEGENERATE. Labels do not depend on applicability: using a strategy
where it does not apply is labelled by the grammar followed (and earns 0).

**Reward** is 1 iff the response contains EOS, the symbols between the last `#`
and EOS are exactly `degree` comma-separated well-formed numbers, and they equal
the sorted roots stored in the problem (checked from the problem; the work is
never compared to a reference).

**Sizes and lengths.** Defaults: degree 3 with probability 0.25, roots in
[-4, 4], leading coefficient 1..2 (static bounds: |root| <= 6, a <= 3, for the
OOD split). `max_response_len` is 64 (DESIGN.md's calibration: ~64-token traces
of 2-digit arithmetic are learnable by the small CPU transformer, 3-digit
products are not). Roots in [-4, 4] with a <= 2 keep every computed number at
2 digits for quadratics (3 at most for cubics: |c0| <= 128) and the traces of
all eight strategies within 64 tokens on most problems; cubics are a quarter
of the mix because their searches are the longest.
Correct trace lengths in tokens, EOS included (10th/50th/90th percentile
in-distribution): factor 17/18/26, quadratic_formula 34/36/41, complete_square
24/25/27, vieta_pairs 18/25/38, rational_root 18/30/47, integer_scan 15/30/54,
grouping 32/34/35, depressed_cubic 27/29/31. Applicable in-distribution (share
of problems): 1.0, 0.74, 0.36, 0.58, 0.74, 0.93, 0.10, 0.07; on OOD: 1.0, 0, 0,
0, 0.53, 0.51, 0.39, 0.33.

**Params.** `root_range`, `lead_range`, `cubic_prob`, and `structured_prob` (the
share of cubics drawn with a ±s root pair or roots in arithmetic progression,
half each, so grouping and depressed_cubic get a fair number of problems).
**OOD** (`ood_params`): all cubics, roots in [-6, 6], leading coefficient 1..3,
structured_prob 0.5. The in-distribution workhorses quadratic_formula,
complete_square and vieta_pairs never apply; the searches fit the budget on only
about half of the problems (vs 0.74-0.93 in-distribution: roots are farther out,
divisor lists longer, values have more digits), so factoring by inspection of a
cubic, grouping and the depressed cubic carry the split.
"""

import functools
import re
from typing import NamedTuple, Sequence

import chex
import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from envs import common
from polyepo.env_api import DEGENERATE

# Vocabulary: digits are tokens 0-9 (envs.common), then single characters.
ITOS = tuple("0123456789") + tuple("-+*/=()xy²³,;|√±#DSPf") + ("$", "_")
STOI = {s: i for i, s in enumerate(ITOS)}
EOS, PAD = STOI["$"], STOI["_"]
MINUS, ANSWER, COMMA = STOI["-"], STOI["#"], STOI[","]
VOCAB_SIZE = len(ITOS)

STRATEGY_NAMES = (
    "factor",
    "quadratic_formula",
    "complete_square",
    "vieta_pairs",
    "rational_root",
    "integer_scan",
    "grouping",
    "depressed_cubic",
)
MACRO_NAMES = ("factoring", "formula", "shift", "vieta", "root_search")
MACRO_OF = (0, 1, 2, 3, 4, 4, 0, 2)
"""Macro label of each strategy (index into MACRO_NAMES)."""

# Symbol grammars (see `_compile_grammars`): N is a signed number, {...}* / {...}+
# / {...}? group, everything else a literal token.
_GRAMMARS = (
    "N ( x + N ) ( x + N ) { ( x + N ) }? # N , N { , N }? $",
    "D = N * N + N * N * N = N ; √ N = N ; ( N ± N ) / N # N , N $",
    "( x + N ) ² = N + N = N ; x = N ± N # N , N $",
    "S = N , P = N { ; N + N = N }+ # N , N $",
    "P = N { ; N | N }+ ; S = N # N , N { , N }? $",
    "f N = N { ; f N = N }* ; S = N # N , N { , N }? $",
    "x ² ( N x + N ) + N ( N x + N ) ; x = N , ± N # N , N , N $",
    "x = y + N ; y ³ + N y = N ; y = N , ± N # N , N , N $",
)
_NUM_SYM = 0  # DFA alphabet index of a NUM symbol (digit ids are never kinds).
_BAD_SYM = 1  # ... of a BAD_NUM symbol (matches nothing).
_FILL_SYM = 2  # ... of a FILL slot (only after EOS).
_NUM_COPIES = 5  # numbers checked against the problem: the first five at most.
_NUM_SLIP_SITES = (2, 3, 2, 2, 2, 2, 2, 2)


@struct.dataclass
class PolynomialParams:
  """Numeric knobs (vmappable scalars).

  Attributes:
    root_range: i32[]: roots are uniform in [-root_range, root_range].
    lead_range: i32[]: the leading coefficient is uniform in [1, lead_range].
    cubic_prob: f32[]: probability that a problem is a cubic.
    structured_prob: f32[]: probability that a cubic has a ±s root pair or
      roots in arithmetic progression (half each) rather than free roots.
  """
  root_range: jnp.ndarray
  lead_range: jnp.ndarray
  cubic_prob: jnp.ndarray
  structured_prob: jnp.ndarray


@struct.dataclass
class PolynomialProblems:
  """A batch of polynomials with integer roots.

  Attributes:
    degree: i32[B]: 2 or 3.
    coeffs: i32[B, 4]: coefficient of x^k at index k (x³'s is 0 for quadratics).
    roots: i32[B, 3]: roots ascending, repeated by multiplicity; index 2 is 0
      for quadratics.
  """
  degree: jnp.ndarray
  coeffs: jnp.ndarray
  roots: jnp.ndarray


# ---------------------------------------------------------------------------
# Grammars -> one DFA over symbols (host side, once).


def _grammar_ast(text):
  """Parses a grammar string into nested ('seq'|'star'|'plus'|'opt'|'sym', ...)."""
  items = text.split()
  pos = 0

  def seq(closing):
    nonlocal pos
    out = []
    while pos < len(items):
      item = items[pos]
      pos += 1
      if item == "{":
        inner = seq(True)
        op = items[pos - 1][1:]
        out.append(({"*": "star", "+": "plus", "?": "opt"}[op], inner))
      elif item.startswith("}"):
        assert closing, text
        return ("seq", out)
      elif item == "N":
        out.append(("seq", [("opt", ("sym", MINUS)), ("sym", _NUM_SYM)]))
      else:
        out.append(("sym", STOI[item]))
    assert not closing, text
    return ("seq", out)

  return seq(False)


@functools.lru_cache(maxsize=None)
def _compile_grammars():
  """The union of the strategy grammars as one DFA over symbols.

  Returns:
    (table i32[Q, V], start int, label i32[Q]): transitions (state 0 is dead),
    the start state, and the strategy accepted in each state (-1: none).
    Accepting states are absorbing (they are reached on EOS).
  """
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
  for label, text in enumerate(_GRAMMARS):
    s, e = build(_grammar_ast(text))
    eps[start].append(s)
    finals[e] = label

  def closure(states):
    stack, seen = list(states), set(states)
    while stack:
      for t in eps[stack.pop()]:
        if t not in seen:
          seen.add(t)
          stack.append(t)
    return frozenset(seen)

  ids = {frozenset(): 0, closure([start]): 1}
  order = [frozenset(), closure([start])]
  rows = []
  i = 0
  while i < len(order):
    current = order[i]
    row = [0] * VOCAB_SIZE
    for sym in range(VOCAB_SIZE):
      nxt = closure([e for s in current for a, e in edges[s] if a == sym])
      if nxt not in ids:
        ids[nxt] = len(order)
        order.append(nxt)
      row[sym] = ids[nxt]
    rows.append(row)
    i += 1
  table = np.asarray(rows, np.int32)
  label = np.full(len(order), -1, np.int32)
  for q, states in enumerate(order):
    hits = {finals[s] for s in states if s in finals}
    assert len(hits) <= 1, f"grammars {hits} overlap"
    if hits:
      label[q] = hits.pop()
      table[q, :] = q
  return table, 1, label


# ---------------------------------------------------------------------------
# Trace construction: each strategy is a straight-line function of ONE problem
# that appends symbol slots to a `_Trace` at trace time (no Python loop runs
# over tokens; repeated steps are vectorised blocks).


class _Problem(NamedTuple):
  """One problem (unbatched) and derived quantities."""
  deg: jnp.ndarray
  c: jnp.ndarray  # i32[4] ascending powers
  r: jnp.ndarray  # i32[3] sorted roots (r[2] = 0 for quadratics)

  @property
  def a(self):
    return jnp.where(self.deg == 3, self.c[3], self.c[2])

  @property
  def b(self):
    return jnp.where(self.deg == 3, self.c[2], self.c[1])

  @property
  def root_sum(self):
    return -self.b // jnp.maximum(self.a, 1)

  def at(self, t):
    """f(t) for i32[...] t."""
    return self.c[0] + t * (self.c[1] + t * (self.c[2] + t * self.c[3]))


def _isqrt(n):
  return jnp.round(jnp.sqrt(jnp.maximum(n, 0).astype(jnp.float32))).astype(jnp.int32)


_SIGN = -10  # static placeholder kind: MINUS if the next number is negative.


class _Trace:
  """Symbol slots of one trace, built at trace time.

  The slot structure (token ids, number and sign slots) is static numpy; only
  the numbers and the on/off masks are traced, and they are placed into the
  slots by one gather each, so a trace costs a handful of XLA ops whatever its
  length. A signed number takes two slots: `-` (or FILL) and NUM.
  """

  def __init__(self):
    self._kinds = []  # static kind per slot
    self._val_src = []  # index into the traced numbers (-1: none)
    self._on_src = []  # index into the traced masks (-1: always on)
    self._vals = []  # traced 1-D number arrays
    self._ons = []  # traced 1-D bool arrays
    self._n_vals = 0
    self._n_ons = 0

  def _mask(self, on, size=1):
    """Index of the first entry of `on` (a bool or bool[size]) among the masks."""
    if on is True:
      return np.full(size, -1)
    on = jnp.broadcast_to(jnp.asarray(on, bool), (size,))
    self._ons.append(on)
    self._n_ons += size
    return np.arange(self._n_ons - size, self._n_ons)

  def _numbers(self, v):
    v = jnp.asarray(v, jnp.int32).reshape(-1)
    self._vals.append(v)
    self._n_vals += v.shape[0]
    return np.arange(self._n_vals - v.shape[0], self._n_vals)

  def op(self, text, on=True):
    names = text.split()
    on_idx = self._mask(on)[0]
    for name in names:
      self._kinds.append(STOI[name])
      self._val_src.append(-1)
      self._on_src.append(on_idx)

  def num(self, v, on=True):
    val_idx = self._numbers(v)[0]
    on_idx = self._mask(on)[0]
    self._kinds += [_SIGN, common.NUM]
    self._val_src += [val_idx, val_idx]
    self._on_src += [on_idx, on_idx]

  def block(self, spec, nums, on):
    """Repeated step over C slots: spec items are token names or columns of nums.

    Args:
      spec: e.g. (";", 0, "+", 1, "=", 2).
      nums: i32[C, M] numbers.
      on: bool[C] which repetitions are written.
    """
    c, m = nums.shape
    val_idx = self._numbers(nums).reshape(c, m)
    on_idx = self._mask(on, c)
    for row in range(c):
      for item in spec:
        if isinstance(item, str):
          self._kinds.append(STOI[item])
          self._val_src.append(-1)
          self._on_src.append(on_idx[row])
        else:
          self._kinds += [_SIGN, common.NUM]
          self._val_src += [val_idx[row, item]] * 2
          self._on_src += [on_idx[row]] * 2

  def arrays(self):
    """(kinds i32[L], values i32[L]) with FILL in the slots switched off."""
    kinds = np.asarray(self._kinds, np.int32)
    vals = jnp.concatenate(self._vals + [jnp.zeros((1,), jnp.int32)])
    vals = vals[np.where(np.asarray(self._val_src) < 0, self._n_vals, self._val_src)]
    ons = jnp.concatenate(self._ons + [jnp.ones((1,), bool)])
    on = ons[np.where(np.asarray(self._on_src) < 0, self._n_ons, self._on_src)]
    out = jnp.where(kinds == _SIGN, jnp.where(vals < 0, MINUS, common.FILL), kinds)
    out = jnp.where(on, out, common.FILL)
    values = jnp.where(kinds == common.NUM, jnp.abs(vals), 0)
    return out.astype(jnp.int32), values.astype(jnp.int32)


def _flip(x, hit):
  """-x where hit (a sign slip)."""
  return jnp.where(hit, -x, x)


def _factor(t, p, site, u, max_root):
  j = u % p.deg
  k = -p.r
  step = jnp.where((u // 4) % 2 == 0, 1, -1)
  k = k.at[j].set(jnp.where(site == 0, -k[j], jnp.where(site == 1, k[j] + step, k[j])))
  t.num(p.a)
  t.block(("(", "x", "+", 0, ")"), k[:, None], jnp.arange(3) < p.deg)
  return -k, jnp.bool_(True)


def _quadratic_formula(t, p, site, u, max_root):
  a, b, c = p.c[2], p.c[1], p.c[0]
  disc = b * b - 4 * a * c
  s = _isqrt(disc) + (site == 1)
  disc = jnp.where(site == 1, s * s, disc)
  nb = _flip(-b, site == 0)
  two_a = jnp.where(site == 2, a, 2 * a)
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


def _complete_square(t, p, site, u, max_root):
  a, b, c = p.c[2], p.c[1], p.c[0]
  a_safe = jnp.maximum(a, 1)
  h = _flip(b // (2 * a_safe), site == 0)
  hh = h * h
  mq = -(c // a_safe)
  s = _isqrt(hh + mq) + (site == 1)
  k = jnp.where(site == 1, s * s, hh + mq)
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


def _vieta_pairs(t, p, site, u, max_root):
  a, b, c = p.c[2], p.c[1], p.c[0]
  a_safe = jnp.maximum(a, 1)
  total = _flip(-b // a_safe, site == 0)
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
  early = (site == 1) & jnp.any(cand) & (first < stop)
  stop = jnp.where(early, first, stop)
  sums = jnp.where(early & (jnp.arange(max_root) == first), total, sums)
  t.op("S =")
  t.num(total)
  t.op(", P =")
  t.num(prod)
  t.block((";", 0, "+", 1, "=", 2), jnp.stack([small, large, sums], -1),
          cand & (jnp.arange(max_root) <= stop))
  return jnp.stack([small[stop], large[stop], 0]), (p.deg == 2) & (c != 0)


def _search(t, p, site, u, cands, tried, write_tests):
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
  hit = (site == 1) & jnp.any(false_zero)
  values = jnp.where(hit & (slot == jnp.argmax(false_zero)), 0, values)
  zero = tried & (values == 0)
  enough = jnp.sum(zero) >= need
  stop = jnp.where(enough, jnp.argmax(jnp.cumsum(zero) >= need), cands.shape[0] - 1)
  on = tried & (slot <= stop)
  write_tests(values, on)
  total = _flip(p.root_sum, site == 0)
  t.op("; S =")
  t.num(total)
  found = zero & on
  (roots,) = common.compact(found, [cands], [0])
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


def _rational_root(t, p, site, u, max_root):
  p0 = p.c[0] // jnp.maximum(p.a, 1)
  cands = _signed_range(max_root, with_zero=False)
  tried = (p0 != 0) & (p0 % jnp.abs(cands) == 0)
  t.op("P =")
  t.num(p0)

  def write(values, on):
    t.block((";", 0, "|", 1), jnp.stack([cands, values], -1), on)

  answer, ok = _search(t, p, site, u, cands, tried, write)
  return answer, ok & (p.c[0] != 0)


def _integer_scan(t, p, site, u, max_root):
  cands = _signed_range(max_root, with_zero=True)

  def write(values, on):
    t.op("f")
    t.num(0)
    t.op("=")
    t.num(values[0])
    t.block((";", "f", 0, "=", 1), jnp.stack([cands, values], -1)[1:], on[1:])

  return _search(t, p, site, u, cands, jnp.ones(cands.shape, bool), write)


def _grouping(t, p, site, u, max_root):
  a, b, c1 = p.c[3], p.c[2], p.c[1]
  a_safe = jnp.maximum(a, 1)
  m = c1 // a_safe
  r0 = _flip(-b // a_safe, site == 0)
  s = _isqrt(-m) + (site == 1)
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


def _depressed_cubic(t, p, site, u, max_root):
  h = _flip(p.r[1], site == 0)
  e = (p.r[2] - p.r[0]) // 2 + (site == 1)
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


_STRATEGIES = (_factor, _quadratic_formula, _complete_square, _vieta_pairs,
               _rational_root, _integer_scan, _grouping, _depressed_cubic)


def _sort_roots(roots, deg):
  """The first `deg` entries ascending, index 2 zeroed for quadratics."""
  live = jnp.arange(3) < deg
  out = jnp.sort(jnp.where(live, roots, jnp.iinfo(jnp.int32).max))
  return jnp.where(live, out, 0)


def _trace_symbols(strategy, p, site, u, max_root):
  """One strategy's work (everything before `#`) for one problem, as symbols.

  Args:
    strategy: index into _STRATEGIES (static).
    p: the problem.
    site: i32[] slip site of that strategy (-1: none).
    u: i32[] >= 0 random bits choosing details of the slip.
    max_root: static bound on |roots|.

  Returns:
    (kinds i32[L], values i32[L], answer i32[3], ok bool[]): the answer the
    work arrives at (sorted), ok the structural applicability.
  """
  t = _Trace()
  answer, ok = _STRATEGIES[strategy](t, p, site, u, max_root)
  kinds, values = t.arrays()
  return kinds, values, _sort_roots(answer, p.deg), ok


def _transcribe(answer, deg, u):
  """The answer with one root miscopied one step toward 0 (0 -> 1): never longer."""
  j = (u // 8) % deg
  answer = answer.at[j].add(jnp.where(answer[j] > 0, -1, 1))
  return _sort_roots(answer, deg)


def _with_answer(kinds, values, answer, deg):
  """Work + `#r1,r2[,r3]$`: (kinds i32[L+9], values i32[L+9], tokens i32[])."""
  t = _Trace()
  t.op("#")
  t.num(answer[0])
  t.op(",")
  t.num(answer[1])
  t.op(",", on=deg == 3)
  t.num(answer[2], on=deg == 3)
  t.op("$")
  ak, av = t.arrays()
  kinds = jnp.concatenate([kinds, ak])
  values = jnp.concatenate([values, av])
  lens = jnp.where(kinds == common.NUM, common.num_digits(values),
                   jnp.where(kinds == common.FILL, 0, 1))
  return kinds, values, jnp.sum(lens)


def _max_symbols(max_root):
  """Symbol slots of the longest strategy's trace (before FILL removal)."""
  p = _Problem(jnp.int32(3), jnp.zeros(4, jnp.int32), jnp.zeros(3, jnp.int32))
  return 10 + max(  # + the answer: # -N , -N , -N $
      jax.eval_shape(
          lambda p, i=i: _trace_symbols(i, p, jnp.int32(-1), jnp.int32(0), max_root)[0],
          p).shape[0]
      for i in range(len(_STRATEGIES)))


def _pad_to(x, length, fill):
  return jnp.concatenate([x, jnp.full((length - x.shape[0],), fill, x.dtype)])


def _applicable_one(p, max_root, max_len):
  """bool[S]: structurally applicable and the correct trace fits max_len."""
  oks = []
  for i in range(len(_STRATEGIES)):
    kinds, values, answer, ok = _trace_symbols(i, p, jnp.int32(-1), jnp.int32(0), max_root)
    _, _, length = _with_answer(kinds, values, answer, p.deg)
    oks.append(ok & (length <= max_len))
  return jnp.stack(oks)


@functools.partial(jax.jit, static_argnums=(3, 4))
def _applicable(degree, coeffs, roots, max_root, max_len):
  return jax.vmap(lambda d, c, r: _applicable_one(_Problem(d, c, r), max_root, max_len))(
      degree, coeffs, roots)


@functools.partial(jax.jit, static_argnums=(6, 7))
def _demonstrate(key, degree, coeffs, roots, strategy_ids, slip_rate, max_root, max_len):
  """Batched `PolynomialRoots.demonstrate` for static sizes."""
  num_slots = _max_symbols(max_root)

  def one(d, c, r, s, do_slip, site_bits, u):
    p = _Problem(d, c, r)
    all_kinds, all_values, oks = [], [], []
    for i in range(len(_STRATEGIES)):
      site = site_bits % _NUM_SLIP_SITES[i]
      ck, cv, c_ans, ok = _trace_symbols(i, p, jnp.int32(-1), u, max_root)
      sk, sv, s_ans, _ = _trace_symbols(i, p, site, u, max_root)
      _, _, c_len = _with_answer(ck, cv, c_ans, d)
      _, _, s_len = _with_answer(sk, sv, s_ans, d)
      # A slip must change the answer and keep the trace within max_len; if
      # the drawn one does not, the slip is a root miscopied into the answer.
      use_slip = do_slip & jnp.any(s_ans != r) & (s_len <= max_len)
      answer = jnp.where(use_slip, s_ans,
                         jnp.where(do_slip, _transcribe(c_ans, d, u), c_ans))
      kinds, values, _ = _with_answer(jnp.where(use_slip, sk, ck),
                                      jnp.where(use_slip, sv, cv), answer, d)
      all_kinds.append(_pad_to(kinds, num_slots, common.FILL))
      all_values.append(_pad_to(values, num_slots, 0))
      oks.append(ok & (c_len <= max_len))
    tokens, _ = common.symbols_to_tokens(
        jnp.stack(all_kinds)[s], jnp.stack(all_values)[s], max_len, PAD)
    ok = jnp.stack(oks)[s]
    return jnp.where(ok, tokens, PAD), ok

  n = degree.shape[0]
  k_slip, k_site, k_u = jax.random.split(key, 3)
  do_slip = jax.random.uniform(k_slip, (n,)) < slip_rate
  site_bits = jax.random.randint(k_site, (n,), 0, 1 << 20)
  u = jax.random.randint(k_u, (n,), 0, 1 << 20)
  return jax.vmap(one)(degree, coeffs, roots, strategy_ids, do_slip, site_bits, u)


def _copy_targets(d, c):
  """Numbers each grammar copies from the problem: (i32[S, K], bool[S, K])."""
  del d
  x = jnp.int32(0)
  values = jnp.stack([
      jnp.stack([jnp.where(c[3] != 0, c[3], c[2]), x, x, x, x]),
      jnp.stack([c[1], c[1], jnp.int32(-4), c[2], c[0]]),
      jnp.zeros(5, jnp.int32),
      jnp.zeros(5, jnp.int32),
      jnp.zeros(5, jnp.int32),
      jnp.stack([x, c[0], x, x, x]),
      jnp.stack([c[3], c[2], x, c[3], c[2]]),
      jnp.zeros(5, jnp.int32),
  ])
  # Only the grammars' literal constants are checked (the -4 of the formula, the
  # evaluation point 0 of the scan, the 0s of the depressed cubic): numbers copied
  # from the problem are free like computed ones, so a miscopied coefficient keeps
  # the label and costs the reward, as for a judge reading the work.
  mask = np.array([
      [0, 0, 0, 0, 0],
      [0, 0, 1, 0, 0],
      [0, 0, 0, 0, 0],
      [0, 0, 0, 0, 0],
      [0, 0, 0, 0, 0],
      [1, 0, 0, 0, 0],
      [0, 0, 0, 0, 0],
      [0, 0, 1, 1, 0],
  ], bool)
  return values, jnp.asarray(mask)


def _score_one(d, c, r, tokens):
  """(reward f32[], label i32[]) of one response (see `PolynomialRoots.score`)."""
  table, start, accept = _compile_grammars()
  n = tokens.shape[0]
  sym = common.tokens_to_symbols(tokens, eos_id=EOS, num_symbols=n)
  kinds, values = sym.kinds, sym.values
  alpha = jnp.where(kinds == common.NUM, _NUM_SYM,
                    jnp.where(kinds == common.BAD_NUM, _BAD_SYM,
                              jnp.where(kinds == common.FILL, _FILL_SYM, kinds)))
  table = jnp.asarray(table)
  state, _ = jax.lax.scan(lambda q, a: (table[q, a], None), jnp.int32(start), alpha)
  label = jnp.asarray(accept)[state]

  slot = jnp.arange(n)
  prev = jnp.concatenate([jnp.full((1,), common.FILL), kinds[:-1]])
  nxt = jnp.concatenate([kinds[1:], jnp.full((1,), common.FILL)])
  is_num = kinds == common.NUM
  signed = jnp.where(prev == MINUS, -values, values)

  # Numbers copied from the problem (the first _NUM_COPIES numbers).
  index = jnp.cumsum(is_num) - 1
  onehot = is_num[:, None] & (index[:, None] == jnp.arange(_NUM_COPIES))
  first = jnp.sum(jnp.where(onehot, signed[:, None], 0), axis=0)
  want, mask = _copy_targets(d, c)
  row = jnp.maximum(label, 0)
  copied = jnp.all(~mask[row] | (first == want[row]))
  label = jnp.where((label >= 0) & copied, label, DEGENERATE)

  # The answer: `# N , N [, N] $` after the last `#`.
  eos_slot = sym.count - 1
  ans_slot = jnp.max(jnp.where((kinds == ANSWER) & (slot < eos_slot), slot, -1))
  region = (slot > ans_slot) & (slot < eos_slot)
  well_formed = (is_num
                 | ((kinds == MINUS) & (nxt == common.NUM)
                    & ((prev == ANSWER) | (prev == COMMA)))
                 | ((kinds == COMMA) & (prev == common.NUM)
                    & ((nxt == common.NUM) | (nxt == MINUS))))
  count = jnp.sum(region & is_num)
  a_index = jnp.cumsum(region & is_num) - 1
  a_hot = (region & is_num)[:, None] & (a_index[:, None] == jnp.arange(3))
  answer = jnp.sum(jnp.where(a_hot, signed[:, None], 0), axis=0)
  live = jnp.arange(3) < d
  correct = (sym.has_eos & (ans_slot >= 0) & jnp.all(~region | well_formed)
             & (count == d) & jnp.all(~live | (answer == r)))
  return correct.astype(jnp.float32), label.astype(jnp.int32)


@jax.jit
def _score(degree, coeffs, roots, responses):
  return jax.vmap(_score_one)(degree, coeffs, roots, responses)


def _coeffs_from_roots(a, r, cubic):
  """Ascending coefficients of a (x - r0)(x - r1)[(x - r2)]: i32[4]."""
  e1 = r[0] + r[1] + r[2]
  e2 = r[0] * r[1] + r[0] * r[2] + r[1] * r[2]
  e3 = r[0] * r[1] * r[2]
  cubic_c = jnp.stack([-a * e3, a * e2, -a * e1, a])
  quad_c = jnp.stack([a * r[0] * r[1], -a * (r[0] + r[1]), a, jnp.zeros_like(a)])
  return jnp.where(cubic, cubic_c, quad_c)


def _sample_one(params, u, free, pair, s):
  """(degree, coeffs i32[4], roots i32[3]) of one problem.

  Args:
    params: the knobs; u: f32[4] uniforms (cubic?, lead, structured?, gap);
    free: i32[3] free roots; pair: bool[] (±s pair vs progression); s: i32[].
  """
  rng = params.root_range
  cubic = u[0] < params.cubic_prob
  a = 1 + jnp.floor(u[1] * params.lead_range).astype(jnp.int32)
  structured = cubic & (u[2] < params.structured_prob)
  h = free[1]
  e = jnp.floor(u[3] * (rng - jnp.abs(h) + 1)).astype(jnp.int32)
  r3 = jnp.where(structured, jnp.where(pair, jnp.stack([free[0], s, -s]),
                                       jnp.stack([h - e, h, h + e])), free)
  r = jnp.where(cubic, jnp.sort(r3),
                jnp.concatenate([jnp.sort(free[:2]), jnp.zeros(1, jnp.int32)]))
  return (jnp.where(cubic, 3, 2).astype(jnp.int32),
          _coeffs_from_roots(a, r, cubic).astype(jnp.int32), r.astype(jnp.int32))


def _prompt_one(d, c, length):
  """Left-padded prompt tokens of one problem: i32[length]."""
  cubic = d == 3
  t = _Trace()
  t.num(c[3], on=cubic)
  t.op("x ³ +", on=cubic)
  t.num(c[2])
  t.op("x ² +")
  t.num(c[1])
  t.op("x +")
  t.num(c[0])
  t.op("=")
  t.num(0)
  kinds, values = t.arrays()
  tokens, _ = common.symbols_to_tokens(kinds, values, length, PAD)
  lens = jnp.where(kinds == common.NUM, common.num_digits(values),
                   jnp.where(kinds == common.FILL, 0, 1))
  src = jnp.arange(length) - (length - jnp.sum(lens))
  return jnp.where(src >= 0, tokens[jnp.maximum(src, 0)], PAD)


@functools.partial(jax.jit, static_argnums=(2,))
def _sample(key, params, batch_size):
  k_u, k_free, k_pair, k_s = jax.random.split(key, 4)
  rng = params.root_range
  u = jax.random.uniform(k_u, (batch_size, 4))
  free = jax.random.randint(k_free, (batch_size, 3), -rng, rng + 1)
  pair = jax.random.bernoulli(k_pair, 0.5, (batch_size,))
  s = jax.random.randint(k_s, (batch_size,), 0, rng + 1)
  return jax.vmap(_sample_one, in_axes=(None, 0, 0, 0, 0))(params, u, free, pair, s)


@functools.partial(jax.jit, static_argnums=(2,))
def _prompts(degree, coeffs, length):
  return jax.vmap(lambda d, c: _prompt_one(d, c, length))(degree, coeffs)


# ---------------------------------------------------------------------------
# Host-side text.


def _poly_text(coeffs) -> str:
  """`2x^2 - 10x + 12 = 0` from ascending integer coefficients."""
  terms = []
  for k in range(len(coeffs) - 1, -1, -1):
    v = int(coeffs[k])
    if v == 0:
      continue
    mag = abs(v)
    body = {0: f"{mag}", 1: "x", 2: "x^2", 3: "x^3"}[k]
    if k and mag != 1:
      body = f"{mag}{body}"
    if not terms:
      terms.append(("-" if v < 0 else "") + body)
    else:
      terms.append(("- " if v < 0 else "+ ") + body)
  return " ".join(terms) + " = 0"


_FUNC = re.compile(r"\b(eq|solve|solveset|roots|real_roots|nroots|poly)\s*\((.*)\)", re.S)
_TERM = re.compile(r"([+-])(\d*)(\*?x(?:\^(\d+))?)?")


def _split_args(inner):
  """Top-level comma-separated arguments of a function call body."""
  depth, start, out = 0, 0, []
  for i, ch in enumerate(inner):
    depth += {"(": 1, ")": -1}.get(ch, 0)
    if ch == "," and depth == 0:
      out.append(inner[start:i])
      start = i + 1
  return out + [inner[start:]]


def _side_coeffs(side, text):
  """Ascending coefficients {power: int} of one side of an equation."""
  s = side.replace(" ", "")
  if not s:
    raise ValueError(f"Cannot parse {text!r}: an empty side of the equation.")
  while True:
    t = s.replace("+-", "-").replace("-+", "-").replace("--", "+").replace("++", "+")
    if t == s:
      break
    s = t
  if s[0] not in "+-":
    s = "+" + s
  out, pos = {}, 0
  while pos < len(s):
    m = _TERM.match(s, pos)
    if m is None or m.end() == pos or (not m.group(2) and not m.group(3)):
      raise ValueError(
          f"Cannot parse {text!r}: {side.strip()!r} is not a sum of integer "
          "multiples of powers of x (e.g. '2*x**2 - 10*x + 12' or '2x^2-10x+12').")
    sign = -1 if m.group(1) == "-" else 1
    coef = int(m.group(2)) if m.group(2) else 1
    power = 0 if not m.group(3) else int(m.group(4) or 1)
    out[power] = out.get(power, 0) + sign * coef
    pos = m.end()
  return out


def _integer_roots(coeffs):
  """Integer roots (ascending, with multiplicity) of ascending int coefficients,
  or None if some root is not an integer."""
  c = list(coeffs)
  roots = []
  while len(c) > 1:
    if c[0] == 0:
      roots.append(0)
      c = c[1:]
      continue
    n = abs(c[0])
    found = None
    for t in (s * q for q in range(1, n + 1) if n % q == 0 for s in (1, -1)):
      if sum(ck * t**k for k, ck in enumerate(c)) == 0:
        found = t
        break
    if found is None:
      return None
    # Synthetic division by (x - found), highest power first.
    hi = c[::-1]
    quo = [hi[0]]
    for ck in hi[1:-1]:
      quo.append(ck + found * quo[-1])
    c = quo[::-1]
    roots.append(found)
  return sorted(roots)


def _rename_variable(s, text):
  """`s` with its one variable (any letter: `c`, `s`, `x`, ...) written as x.

  A variable is a single letter next to a digit or an operator (`c^2`, `40*c`,
  `5c`, `c + 1`), unlike the words around the equation (`Calculate c.`);
  ValueError if two letters are.
  """
  after = re.findall(r"(?:(?<=[-+*^=\d])|(?<=[-+*^=\d]\s))([a-z])(?![a-z(])", s)
  before = re.findall(r"(?<![a-z])([a-z])(?=\s?[-+*^=])", s)
  letters = sorted(set(after) | set(before))
  if len(letters) > 1:
    raise ValueError(f"Cannot parse {text!r}: more than one variable ({', '.join(letters)}); "
                     "this env solves polynomials in one variable.")
  if not letters or letters[0] == "x":
    return s
  return re.sub(rf"(?<![a-z]){letters[0]}(?![a-z])", "x", s)


def _parse_one(text, max_root, max_lead):
  """(degree, ascending coeffs[4], roots[3]) of one question; ValueError if bad."""
  s = str(text).lower()
  for a, b in (("**", "^"), ("²", "^2"), ("³", "^3"), ("−", "-"), ("·", "*"), ("×", "*")):
    s = s.replace(a, b)
  if re.search(r"\d\.\d|/", s):
    raise ValueError(f"Cannot parse {text!r}: coefficients must be integers.")
  s = _rename_variable(s, text)
  m = _FUNC.search(s)
  if m:
    args = _split_args(m.group(2))
    s = f"{args[0]} = {args[1]}" if m.group(1) == "eq" and len(args) == 2 else args[0]
  runs = [r for r in re.findall(r"[-+0-9x*^= ]+", s) if "x" in r]
  if not runs:
    raise ValueError(f"Cannot parse {text!r}: no polynomial in one variable found.")
  eq = max(runs, key=lambda r: len(r.strip())).strip()
  sides = eq.split("=")
  if len(sides) > 2:
    raise ValueError(f"Cannot parse {text!r}: more than one '='.")
  lhs = _side_coeffs(sides[0], text)
  rhs = _side_coeffs(sides[1], text) if len(sides) == 2 else {0: 0}
  powers = {k: lhs.get(k, 0) - rhs.get(k, 0) for k in set(lhs) | set(rhs)}
  nonzero = [k for k, v in powers.items() if v != 0]
  degree = max(nonzero) if nonzero else 0
  if degree not in (2, 3):
    raise ValueError(
        f"{text!r} has degree {degree}: only quadratics and cubics (degree 2-3) are supported.")
  coeffs = [powers.get(k, 0) for k in range(4)]
  if coeffs[degree] < 0:
    coeffs = [-v for v in coeffs]
  lead = coeffs[degree]
  if lead > max_lead:
    raise ValueError(
        f"{text!r} is out of range: leading coefficient {lead} exceeds {max_lead} "
        "(raise max_lead).")
  roots = _integer_roots(coeffs[:degree + 1])
  if roots is None:
    raise ValueError(f"{text!r} does not have integer roots (this env needs "
                     "a polynomial a(x - r1)(x - r2)... with integer r_i).")
  if max(abs(r) for r in roots) > max_root:
    raise ValueError(f"{text!r} is out of range: roots {roots} exceed |r| <= {max_root} "
                     "(raise max_root).")
  return degree, coeffs, roots + [0] * (3 - degree)


def _num_width(bound):
  return len(str(int(bound)))


class PolynomialRoots:
  """Integer roots of polynomials with exact rewards and strategy labels.

  See the module docstring for the strategies, grammars and answer format.

  Args:
    max_root: static bound on |root| (sizes the prompt and the search strategies'
      candidate lists); `params.root_range` must not exceed it.
    max_lead: static bound on the leading coefficient (`params.lead_range`).
    max_response_len: T, the response budget in tokens (EOS included).
  """

  strategy_names = STRATEGY_NAMES
  macro_names = MACRO_NAMES
  macro_of = MACRO_OF
  vocab_size = VOCAB_SIZE
  pad_id = PAD
  eos_id = EOS
  itos = ITOS

  def __init__(self, max_root: int = 6, max_lead: int = 3, max_response_len: int = 64):
    if not 1 <= max_root <= 9:
      raise ValueError(f"max_root must be in 1..9, got {max_root!r}.")
    if not 1 <= max_lead <= 9:
      raise ValueError(f"max_lead must be in 1..9, got {max_lead!r}.")
    self.max_root, self.max_lead = max_root, max_lead
    self.max_response_len = int(max_response_len)
    a, r = max_lead, max_root
    # Prompt: `c3x³+c2x²+c1x+c0=0` with signs on all but the leading coefficient.
    self.prompt_len = (_num_width(a) + 3 + (1 + _num_width(3 * a * r)) + 3
                       + (1 + _num_width(3 * a * r * r)) + 2
                       + (1 + _num_width(a * r**3)) + 2)
    # The longest factor trace must fit, so every problem has a strategy.
    factor_len = (_num_width(a) + 3 * (5 + _num_width(r)) + 1
                  + 3 * (1 + _num_width(r)) + 2 + 1)
    if self.max_response_len < factor_len:
      raise ValueError(f"max_response_len must be >= {factor_len} for these bounds.")

  # -- params -----------------------------------------------------------------

  def default_params(self) -> PolynomialParams:
    return PolynomialParams(root_range=jnp.int32(min(4, self.max_root)),
                            lead_range=jnp.int32(min(2, self.max_lead)),
                            cubic_prob=jnp.float32(0.25),
                            structured_prob=jnp.float32(0.3))

  def ood_params(self) -> PolynomialParams:
    return PolynomialParams(root_range=jnp.int32(self.max_root),
                            lead_range=jnp.int32(self.max_lead),
                            cubic_prob=jnp.float32(1.0),
                            structured_prob=jnp.float32(0.5))

  # -- problems ---------------------------------------------------------------

  def sample_problems(self, key, params: PolynomialParams, batch_size: int) -> PolynomialProblems:
    """`batch_size` problems drawn as described in `PolynomialParams`."""
    params = jax.tree_util.tree_map(jnp.asarray, params)
    params = params.replace(root_range=jnp.clip(params.root_range, 0, self.max_root),
                            lead_range=jnp.clip(params.lead_range, 1, self.max_lead))
    degree, coeffs, roots = _sample(key, params, batch_size)
    return PolynomialProblems(degree=degree, coeffs=coeffs, roots=roots)

  def prompt_tokens(self, problems: PolynomialProblems):
    """i32[B, P]: `c3x³+c2x²+c1x+c0=0` (cubics) or `c2x²+c1x+c0=0`, left-padded."""
    return _prompts(problems.degree, problems.coeffs, self.prompt_len)

  def applicable(self, problems: PolynomialProblems):
    """bool[B, S]: the strategy applies and its correct trace fits the budget."""
    return _applicable(problems.degree, problems.coeffs, problems.roots,
                       self.max_root, self.max_response_len)

  # -- traces -----------------------------------------------------------------

  def demonstrate(self, key, problems: PolynomialProblems, strategy_ids,
                  slip_rate: float = 0.0):
    """Full traces of the given strategies, some with an arithmetic slip.

    With probability `slip_rate` a trace gets one slip at a computed step (a
    sign error in a factor, in -b, in S or in the shift; a square root, D or e
    off by one; 2a written as a; a non-root's test value taken as 0; a wrong
    pair sum taken as S...) and every later step uses the wrong value, so the
    answer is wrong. Where the drawn slip leaves the answer right (e.g. a sign
    error on 0) or would overflow the budget, the slip is a root miscopied
    into the answer instead (one step toward 0, never longer).

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
    chex.assert_equal_shape([problems.degree, strategy_ids])
    return _demonstrate(key, problems.degree, problems.coeffs, problems.roots,
                        strategy_ids, jnp.asarray(slip_rate, jnp.float32),
                        self.max_root, self.max_response_len)

  def score(self, problems: PolynomialProblems, responses):
    """Exact reward and strategy label of each response.

    Args:
      problems: B problems.
      responses: i32[B, T] tokens (anything after the first EOS is ignored).

    Returns:
      (reward f32[B], label i32[B]): reward 1 iff the response ends in
      `#r1,r2[,r3]$` with the sorted roots; label the strategy whose grammar it
      follows (copying the problem's numbers), else DEGENERATE.
    """
    chex.assert_rank(responses, 2)
    return _score(problems.degree, problems.coeffs, problems.roots,
                  jnp.asarray(responses, jnp.int32))

  def answers(self, problems, responses):
    """i32[B]: an id of each response's final answer (after `#`), -1 if none.

    Equal ids mean equal answer strings; used for majority voting.
    """
    del problems  # the answer is read from the response alone
    return common.answer_ids(responses, marker_id=STOI["#"], eos_id=EOS)

  # -- text -------------------------------------------------------------------

  def question_text(self, problems: PolynomialProblems) -> list:
    """`2x^2 - 10x + 12 = 0` per problem (parse_problems reads it back)."""
    out = []
    for d, c in zip(np.asarray(problems.degree).tolist(), np.asarray(problems.coeffs)):
      out.append(_poly_text(c[:d + 1]))
    return out

  def render(self, problems: PolynomialProblems, responses) -> list:
    """`x^2 - 5x + 6 = 0:  S=5,P=6; 1+6=7; 2+3=5#2,3` per problem.

    The response is shown up to EOS (`+-` is minus, PAD is `_`); one cut off
    before EOS ends in ` [no EOS]`. `parse_problems` reads the question (before
    `:`) back, `text_to_tokens` the response.
    """
    out = []
    for q, r in zip(self.question_text(problems), np.asarray(responses)):
      text = common.tokens_to_text(r, ITOS, EOS, PAD).replace(";", "; ")
      out.append(f"{q}:  {text}")
    return out

  @staticmethod
  def text_to_tokens(text: str):
    """i32[n]: tokens of a rendered response (spaces ignored)."""
    return common.text_to_tokens(text, STOI)

  def parse_problems(self, texts: Sequence[str]) -> PolynomialProblems:
    """Problems from questions typed as text.

    Accepts e.g. `Solve 2*x**2 - 10*x + 12 = 0 for x.`, `Find the roots of
    x**3 - 6*x**2 + 11*x - 6.`, `x^2 - 5x + 6 = 0`, `x² = 5x - 6`,
    `Eq(x**2 - 5*x + 6, 0)`, `solve(x**2 - 4, x)`, and mathematics_dataset's
    `Let 2*s**2 - 10*s + 12 = 0. Calculate s.`: a polynomial in one variable
    (any letter) with integer coefficients (terms on either side of `=`, `**`
    or `^`, `*` optional); the sign is normalised so the leading coefficient
    is positive.

    Raises:
      ValueError: quoting the text and saying why: it cannot be parsed (no
      polynomial, more than one variable, non-integer coefficients), its degree
      is not 2 or 3, a root is not an integer, or a root / the leading
      coefficient exceeds `max_root` / `max_lead`.
    """
    if isinstance(texts, str):
      texts = [texts]
    rows = [_parse_one(t, self.max_root, self.max_lead) for t in texts]
    return PolynomialProblems(
        degree=jnp.asarray([d for d, _, _ in rows], jnp.int32).reshape(-1),
        coeffs=jnp.asarray([c for _, c, _ in rows], jnp.int32).reshape(-1, 4),
        roots=jnp.asarray([r for _, _, r in rows], jnp.int32).reshape(-1, 3))
