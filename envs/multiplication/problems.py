"""Multiplication problems: vocabulary, params, sampling, prompts and number facts."""

import jax
import jax.numpy as jnp
from flax import struct

from envs.kit import symbols
from envs.kit import text

VOCAB = text.vocab("+-*=;#?")
"""Digits 0-9, then `+-*=;#?`, EOS `$` and PAD `_`."""
STOI = VOCAB.stoi
PLUS, MINUS, TIMES, EQUALS, SEP, ANSWER, QUESTION = (STOI[c] for c in "+-*=;#?")


@struct.dataclass
class MultiplicationParams:
  """Numeric knobs (vmappable). A factor is *large* when its leading digit is
  at least `large_from`; training problems have at most one large factor, ood
  problems (`both_large`) two. Within that, factors are uniform."""
  large_from: jnp.ndarray  # i32[]
  both_large: jnp.ndarray  # bool[]


@struct.dataclass
class MultiplicationProblems:
  """A batch of problems a * b: `a: i32[B]`, `b: i32[B]`."""
  a: jnp.ndarray
  b: jnp.ndarray


def default_params() -> MultiplicationParams:
  """At most one factor of 50 or more (5,600 of the 8,100 2 x 2 problems)."""
  return MultiplicationParams(large_from=jnp.int32(5), both_large=jnp.bool_(False))


def ood_params() -> MultiplicationParams:
  """Both factors 50 or more: every factor occurs in training, never two large
  ones together, so the partial products (e.g. 87*90) and the products are
  larger than any training problem's."""
  return MultiplicationParams(large_from=jnp.int32(5), both_large=jnp.bool_(True))


def _sample_factors(key, batch_size, digits):
  digit = jax.random.randint(key, (batch_size, digits), 0, 10).at[:, 0].set(
      jax.random.randint(jax.random.fold_in(key, 1), (batch_size,), 1, 10))
  return jnp.sum(digit * symbols.pow10(jnp.arange(digits - 1, -1, -1)), axis=-1)


def in_region(params: MultiplicationParams, a, b, digits_a: int, digits_b: int):
  """bool[...]: whether a * b is drawn under `params` (see MultiplicationParams)."""
  large_a = a // 10**(digits_a - 1) >= params.large_from
  large_b = b // 10**(digits_b - 1) >= params.large_from
  return jnp.where(params.both_large, large_a & large_b, ~(large_a & large_b))


def has_pair_in_region(params: MultiplicationParams, n, digits_a: int, digits_b: int):
  """bool[...]: whether some `digits_a` x `digits_b`-digit pair in the region of
  `params` has product n (i32[...])."""
  a = jnp.arange(10**(digits_a - 1), 10**digits_a)
  n = jnp.asarray(n)[..., None]
  b = n // a
  pair = ((n % a == 0) & (b >= 10**(digits_b - 1)) & (b < 10**digits_b)
          & in_region(params, a, b, digits_a, digits_b))
  return jnp.any(pair, axis=-1)


def sample(key, params: MultiplicationParams, batch_size: int, digits_a: int,
           digits_b: int) -> MultiplicationProblems:
  """`batch_size` problems with `digits_a`- and `digits_b`-digit factors, uniform
  over the region `params` names (rejection sampling in a `lax.while_loop`)."""
  def draw(i):
    k = jax.random.fold_in(key, i)
    return (_sample_factors(jax.random.fold_in(k, 0), batch_size, digits_a).astype(jnp.int32),
            _sample_factors(jax.random.fold_in(k, 1), batch_size, digits_b).astype(jnp.int32))

  def redraw(carry):
    i, a, b = carry
    fresh_a, fresh_b = draw(i)
    keep = in_region(params, a, b, digits_a, digits_b)
    return i + 1, jnp.where(keep, a, fresh_a), jnp.where(keep, b, fresh_b)

  def pending(carry):
    _, a, b = carry
    return ~jnp.all(in_region(params, a, b, digits_a, digits_b))

  _, a, b = jax.lax.while_loop(pending, redraw, (jnp.int32(1), *draw(0)))
  return MultiplicationProblems(a=a, b=b)


def prompt_tokens(problems: MultiplicationProblems, digits_a: int, digits_b: int):
  """i32[B, digits_a + digits_b + 2]: `a * b ?` as tokens."""
  a = symbols.int_to_tokens(problems.a, digits_a)
  b = symbols.int_to_tokens(problems.b, digits_b)
  n = a.shape[0]
  return jnp.concatenate([a, jnp.full((n, 1), TIMES), b, jnp.full((n, 1), QUESTION)],
                         axis=1).astype(jnp.int32)


def odd_part(n):
  """n without its factors of 2: i32[...]."""
  n = jnp.asarray(n, jnp.int32)
  return n // jnp.bitwise_and(n, -n)


def halvable(n):
  """n = c * 2^k with c odd, c <= 9 and k >= 1: bool[...]."""
  return (n % 2 == 0) & (n > 0) & (odd_part(n) <= 9)


def smallest_digit_factor(n):
  """Smallest p in 2..9 with n = p * q, p <= q <= 9; 0 if none: i32[...]."""
  p = jnp.arange(2, 10)
  ok = (n[..., None] % p == 0) & (n[..., None] // p <= 9) & (n[..., None] // p >= p)
  return jnp.where(jnp.any(ok, -1), p[jnp.argmax(ok, -1)], 0)


def applicable(a, b, digits_a: int, digits_b: int):
  """bool[..., 8] for factors a, b: i32[...], in the strategies' order."""
  ua, ub = a % 10, b % 10
  return jnp.stack([
      jnp.ones_like(a, bool),                                          # long_by_b
      a != b,                                                          # long_by_a
      jnp.ones_like(a, bool),                                          # place_value
      jnp.maximum(ua, ub) >= 6,                                        # round_adjust
      ((a - b) % 2 == 0) & (a != b),                                   # difference_of_squares
      halvable(a) | halvable(b),                                       # halve_double
      (smallest_digit_factor(a) > 0) | (smallest_digit_factor(b) > 0),  # factor_out
      jnp.full(jnp.shape(a), (digits_a, digits_b) == (2, 2)),          # karatsuba
  ], axis=-1)
