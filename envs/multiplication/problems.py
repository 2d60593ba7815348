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
  """Numeric knobs (vmappable). Every digit is uniform in [min_digit, max_digit]
  (a leading digit at least 1)."""
  min_digit: jnp.ndarray
  max_digit: jnp.ndarray


@struct.dataclass
class MultiplicationProblems:
  """A batch of problems a * b: `a: i32[B]`, `b: i32[B]`."""
  a: jnp.ndarray
  b: jnp.ndarray


def default_params() -> MultiplicationParams:
  """Every digit 0..9: uniform over all factors."""
  return MultiplicationParams(min_digit=jnp.int32(0), max_digit=jnp.int32(9))


def ood_params() -> MultiplicationParams:
  """Every digit 5..9: every partial product carries, and the short shortcut
  strategies (factor_out, halve_double) rarely apply."""
  return MultiplicationParams(min_digit=jnp.int32(5), max_digit=jnp.int32(9))


def _sample_factor(key, params, digits, batch_size):
  low = jnp.full((batch_size, digits), params.min_digit).at[:, 0].max(1)
  digit = jax.random.randint(key, (batch_size, digits), low, params.max_digit + 1)
  return jnp.sum(digit * symbols.pow10(jnp.arange(digits - 1, -1, -1)), axis=-1)


def sample(key, params: MultiplicationParams, batch_size: int, digits_a: int,
           digits_b: int) -> MultiplicationProblems:
  """`batch_size` problems with `digits_a`- and `digits_b`-digit factors."""
  key_a, key_b = jax.random.split(key)
  return MultiplicationProblems(
      a=_sample_factor(key_a, params, digits_a, batch_size).astype(jnp.int32),
      b=_sample_factor(key_b, params, digits_b, batch_size).astype(jnp.int32))


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
