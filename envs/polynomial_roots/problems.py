"""Polynomial-root problems: vocabulary, params, sampling and prompts."""

import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp
from flax import struct

from envs.kit import symbols
from envs.kit import text
from envs.kit.trace import Trace

VOCAB = text.vocab("-+*/=()xy²³,;|√±#DSPf")
"""Digits 0-9, then `-+*/=()xy²³,;|√±#DSPf`, EOS `$` and PAD `_`."""
STOI = VOCAB.stoi
MINUS, ANSWER, COMMA = STOI["-"], STOI["#"], STOI[","]


@struct.dataclass
class PolynomialParams:
  """Numeric knobs (vmappable scalars).

  Attributes:
    root_range: i32[]: roots are uniform in [-root_range, root_range].
    min_lead: i32[]: the leading coefficient is uniform in [min_lead, lead_range].
    lead_range: i32[]: the largest leading coefficient.
    cubic_prob: f32[]: probability that a problem is a cubic.
    structured_prob: f32[]: probability that a cubic has a ±s root pair or
      roots in arithmetic progression (half each) rather than free roots.
  """
  root_range: jnp.ndarray
  min_lead: jnp.ndarray
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


TRAIN_MAX_LEAD = 3
"""The largest leading coefficient (of the training distribution and of `ood`'s)."""
TRAIN_MAX_ROOT = 12
"""The largest |root| of the training distribution; `ood` exercises have a larger one."""


def default_params(max_root: int, max_lead: int) -> PolynomialParams:
  """Roots in [-12, 12], leading coefficient 1..3, 30% cubics."""
  return PolynomialParams(root_range=jnp.int32(min(TRAIN_MAX_ROOT, max_root)),
                          min_lead=jnp.int32(1),
                          lead_range=jnp.int32(min(TRAIN_MAX_LEAD, max_lead)),
                          cubic_prob=jnp.float32(0.3),
                          structured_prob=jnp.float32(0.3))


def ood_params(max_root: int, max_lead: int) -> PolynomialParams:
  """Roots up to the static bound (15 by default), all cubics, half of them
  structured, the training leading coefficients: `polyepo.splits` keeps the
  exercises with a root beyond `TRAIN_MAX_ROOT`, whose coefficients are larger
  than any training problem's, on which the quadratic strategies never apply
  and the searches run long."""
  return PolynomialParams(root_range=jnp.int32(max_root),
                          min_lead=jnp.int32(1),
                          lead_range=jnp.int32(min(TRAIN_MAX_LEAD, max_lead)),
                          cubic_prob=jnp.float32(1.0),
                          structured_prob=jnp.float32(0.5))


def sort_live(roots, degree):
  """i32[..., 3]: the first `degree` roots ascending, index 2 zeroed for quadratics."""
  live = jnp.arange(3) < jnp.asarray(degree)[..., None]
  out = jnp.sort(jnp.where(live, roots, jnp.iinfo(jnp.int32).max), axis=-1)
  return jnp.where(live, out, 0)


def coeffs_from_roots(degree, roots, lead):
  """i32[B, 4]: ascending coefficients of lead * prod (x - r) over the live roots."""
  return jax.vmap(_coeffs_from_roots)(lead, roots, degree == 3).astype(jnp.int32)


def without_a_zero(degree, roots):
  """(degree i32[B], roots i32[B, 3]): a cubic with a zero root as its quadratic
  q, since x * q(x) is solved by solving q; other problems unchanged."""
  zero = (degree == 3) & jnp.any(roots == 0, axis=-1)
  first_zero = jnp.argmax(roots == 0, axis=-1)
  dropped = jnp.where(jnp.arange(3) == first_zero[:, None], jnp.iinfo(jnp.int32).max, roots)
  quadratic = sort_live(jnp.sort(dropped, axis=-1), jnp.full_like(degree, 2))
  return (jnp.where(zero, 2, degree).astype(jnp.int32),
          jnp.where(zero[:, None], quadratic, roots).astype(jnp.int32))


def exercise(degree, roots):
  """i32[B, 4]: a problem's exercise, the degree and the root multiset (sorted)
  with a cubic's zero root removed (`without_a_zero`) and p(-x) folded in (the
  smaller of the roots and their negation, lexicographically)."""
  degree, roots = without_a_zero(degree, roots)
  mirror = sort_live(-roots, degree)
  # Roots are bounded by 19 (`PolynomialRoots`): base-64 digits order rows lexicographically.
  key = lambda r: ((r[:, 0] + 32) * 64 + r[:, 1] + 32) * 64 + r[:, 2] + 32
  smaller = jnp.where((key(mirror) < key(roots))[:, None], mirror, roots)
  return jnp.concatenate([degree[:, None], smaller], axis=1).astype(jnp.int32)


class Problem(NamedTuple):
  """One problem (unbatched), as the strategies read it, and derived quantities."""
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


def isqrt(n):
  """round(sqrt(max(n, 0))): i32[...]."""
  return jnp.round(jnp.sqrt(jnp.maximum(n, 0).astype(jnp.float32))).astype(jnp.int32)



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
  a = params.min_lead + jnp.floor(
      u[1] * (params.lead_range - params.min_lead + 1)).astype(jnp.int32)
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
  t = Trace(STOI, minus_id=MINUS)
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
  tokens, _ = symbols.symbols_to_tokens(kinds, values, length, VOCAB.pad_id)
  src = jnp.arange(length) - (length - jnp.sum(symbols.symbol_lengths(kinds, values)))
  return jnp.where(src >= 0, tokens[jnp.maximum(src, 0)], VOCAB.pad_id)


@functools.partial(jax.jit, static_argnums=(2,))
def sample(key, params: PolynomialParams, batch_size: int):
  """(degree i32[B], coeffs i32[B, 4], roots i32[B, 3]) of `batch_size` problems."""
  k_u, k_free, k_pair, k_s = jax.random.split(key, 4)
  rng = params.root_range
  u = jax.random.uniform(k_u, (batch_size, 4))
  free = jax.random.randint(k_free, (batch_size, 3), -rng, rng + 1)
  pair = jax.random.bernoulli(k_pair, 0.5, (batch_size,))
  s = jax.random.randint(k_s, (batch_size,), 0, rng + 1)
  return jax.vmap(_sample_one, in_axes=(None, 0, 0, 0, 0))(params, u, free, pair, s)


@functools.partial(jax.jit, static_argnums=(2,))
def prompts(degree, coeffs, length: int):
  """i32[B, length]: each polynomial's prompt, left-padded."""
  return jax.vmap(lambda d, c: _prompt_one(d, c, length))(degree, coeffs)


# ---------------------------------------------------------------------------
# Host-side text.
