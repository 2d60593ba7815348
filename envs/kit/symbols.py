"""Symbols: a response read as numbers and operator tokens, and written back.

Conventions shared by every domain built on the kit:

* Token ids 0-9 are the digits 0-9; every other token is an operator, separator,
  marker, EOS or PAD whose id the domain chooses (>= 10).
* A response is read as a sequence of **symbols**: every maximal run of digit
  tokens is one number symbol (kind `NUM`, with its value), every other token
  is a symbol of its own (kind = its token id). Everything after the first EOS
  is ignored; empty slots have kind `FILL`. A run with a leading zero ("07") or
  more than `MAX_NUM_DIGITS` digits has kind `BAD_NUM` and matches nothing.

All functions below work on ONE example (unbatched) and are `jit`/`vmap`-able;
callers vmap them over the batch. No Python loop runs over tokens: the only
Python loops are over at most `MAX_NUM_DIGITS` digit positions.
"""

from typing import NamedTuple, Sequence

import jax
import jax.numpy as jnp
import numpy as np

NUM = -2
"""Symbol kind of a (well-formed) number."""
FILL = -1
"""Symbol kind of an empty slot (after EOS, or past a template's end)."""
BAD_NUM = -3
"""Symbol kind of a malformed number (leading zero or too many digits)."""

MAX_NUM_DIGITS = 9
"""Longest digit run read as a number (values stay below 2**31)."""

_POW10 = np.array([10**i for i in range(MAX_NUM_DIGITS + 1)], np.int32)


def pow10(e):
  """10**e for int e in [0, MAX_NUM_DIGITS]: i32[...] (clipped)."""
  return jnp.asarray(_POW10)[jnp.clip(e, 0, MAX_NUM_DIGITS)]


def num_digits(x):
  """Number of decimal digits of x >= 0 (0 has one digit): i32[...]."""
  x = jnp.asarray(x, jnp.int32)
  return jnp.maximum(1, jnp.sum(x[..., None] >= jnp.asarray(_POW10[1:]), axis=-1) + 1)


def int_to_tokens(x, width: int):
  """The `width` decimal digits of x, most significant first: i32[..., width].

  Leading positions are 0 when x has fewer digits (callers choose `width`).
  """
  x = jnp.asarray(x, jnp.int32)
  exps = jnp.arange(width - 1, -1, -1)
  return (x[..., None] // pow10(exps)) % 10


class Symbols(NamedTuple):
  """A response read as symbols (see module docstring).

  Attributes:
    kinds: i32[S]: NUM, BAD_NUM, FILL or a (non-digit) token id.
    values: i32[S]: the number where kinds == NUM, else 0.
    count: i32[]: symbols up to and including the first EOS (or all of them).
    has_eos: bool[]: whether the response contains EOS.
    final_kind: i32[]: kind of the symbol just before EOS (FILL if none).
    final_value: i32[]: its value where final_kind == NUM, else 0.
    marker: i32[]: kind of the symbol before that one (FILL if none).
  """
  kinds: jnp.ndarray
  values: jnp.ndarray
  count: jnp.ndarray
  has_eos: jnp.ndarray
  final_kind: jnp.ndarray
  final_value: jnp.ndarray
  marker: jnp.ndarray


def _shift(x, k: int, fill):
  """x delayed by k positions along the last axis: y[t] = x[t - k]."""
  pad = jnp.full(x.shape[:-1] + (k,), fill, x.dtype)
  return jnp.concatenate([pad, x[..., :-k]], axis=-1)


def eos_position(tokens, eos_id: int):
  """(has_eos bool[], eos_pos i32[]) of one response: the first EOS, T if none."""
  is_eos = tokens == eos_id
  has_eos = jnp.any(is_eos)
  return has_eos, jnp.where(has_eos, jnp.argmax(is_eos), tokens.shape[-1])


def tokens_to_symbols(tokens, *, eos_id: int, num_symbols: int) -> Symbols:
  """Reads a response (one example) as a sequence of symbols.

  Args:
    tokens: i32[T] token ids.
    eos_id: the end-of-sequence token; tokens after the first EOS are ignored.
    num_symbols: S, the number of symbol slots returned (later ones dropped).

  Returns:
    `Symbols` with arrays of length S.
  """
  t = tokens.shape[-1]
  pos = jnp.arange(t)
  has_eos, eos_pos = eos_position(tokens, eos_id)
  live = pos <= eos_pos
  is_digit = live & (tokens >= 0) & (tokens <= 9)
  next_digit = jnp.concatenate([is_digit[1:], jnp.zeros((1,), bool)])
  is_end = live & ~(is_digit & next_digit)

  # Value, length and first digit of the digit run ending at each position,
  # accumulated over a window of MAX_NUM_DIGITS positions.
  digit = jnp.where(is_digit, tokens, 0)
  value = digit
  first = digit
  in_run = is_digit
  for k in range(1, MAX_NUM_DIGITS):
    in_run = in_run & _shift(is_digit, k, False)
    d_k = _shift(digit, k, 0)
    value = value + jnp.where(in_run, d_k * _POW10[k], 0)
    first = jnp.where(in_run, d_k, first)
  run_len = jnp.ones_like(tokens)
  in_run = is_digit
  for k in range(1, MAX_NUM_DIGITS + 1):
    in_run = in_run & _shift(is_digit, k, False)
    run_len = run_len + in_run
  bad = (run_len > MAX_NUM_DIGITS) | ((first == 0) & (run_len > 1))
  kind_at = jnp.where(is_digit, jnp.where(bad, BAD_NUM, NUM), tokens)

  # Scatter the symbol ending at the (s+1)-th end position into slot s (a
  # scatter is several times faster on CPU than gathering by comparisons).
  cum = jnp.cumsum(is_end)
  count = cum[-1]
  dst = jnp.where(is_end, cum - 1, num_symbols)
  kinds = jnp.full((num_symbols,), FILL, jnp.int32).at[dst].set(kind_at, mode="drop")
  values = jnp.zeros((num_symbols,), jnp.int32).at[dst].set(
      jnp.where(kind_at == NUM, value, 0), mode="drop")

  # The last two symbols before EOS, read in token space (any count).
  last = eos_pos - 1
  last_c = jnp.clip(last, 0, t - 1)
  final_kind = jnp.where(has_eos & (last >= 0), kind_at[last_c], FILL)
  final_value = jnp.where(final_kind == NUM, value[last_c], 0)
  before = last - jnp.where(is_digit[last_c], run_len[last_c], 1)
  marker = jnp.where(has_eos & (before >= 0), kind_at[jnp.clip(before, 0, t - 1)], FILL)
  return Symbols(kinds, values, count, has_eos, final_kind, final_value, marker)


def symbols_to_tokens(kinds, values, length: int, pad_id: int):
  """Writes a symbol sequence (one example) as tokens: the inverse of reading.

  Args:
    kinds: i32[S] symbol kinds (NUM, FILL or token ids); FILL slots are skipped.
    values: i32[S] numbers (>= 0) where kinds == NUM.
    length: T, the number of tokens returned.
    pad_id: token written after the last symbol.

  Returns:
    (tokens i32[T], fits bool[]): fits is False when the symbols need more than
    T tokens (the tokens are then cut off).
  """
  is_num = kinds == NUM
  lens = symbol_lengths(kinds, values)
  ends = jnp.cumsum(lens)
  total = ends[-1]
  pos = jnp.arange(length)
  slot = jnp.minimum(jnp.sum(ends[None, :] <= pos[:, None], axis=1), kinds.shape[0] - 1)
  offset = pos - (ends[slot] - lens[slot])
  digit = (values[slot] // pow10(lens[slot] - 1 - offset)) % 10
  tokens = jnp.where(is_num[slot], digit, kinds[slot])
  tokens = jnp.where(pos < total, tokens, pad_id)
  return tokens.astype(jnp.int32), total <= length


def compact(enabled, arrays: Sequence, fills: Sequence):
  """Moves the enabled slots of each array to the front, in order (one example).

  Args:
    enabled: bool[L].
    arrays: arrays with leading axis L.
    fills: one fill value per array for the slots past the enabled ones.

  Returns:
    A list of arrays shaped like `arrays`.
  """
  n = enabled.shape[0]
  dst = jnp.where(enabled, jnp.cumsum(enabled) - 1, n)
  return [jnp.full_like(x, f).at[dst].set(x, mode="drop") for x, f in zip(arrays, fills)]


def symbol_lengths(kinds, values):
  """Tokens each symbol slot takes when written: i32[...] like `kinds`.

  A number takes its digit count, FILL nothing, any other symbol one token.
  """
  return jnp.where(kinds == NUM, num_digits(values), jnp.where(kinds == FILL, 0, 1))


def signed_values(symbols: Symbols, minus_id: int):
  """i32[S]: each symbol's value, negated where a `minus_id` token precedes it."""
  prev = jnp.concatenate([jnp.full((1,), FILL), symbols.kinds[:-1]])
  return jnp.where(prev == minus_id, -symbols.values, symbols.values)


def signed_numbers(symbols: Symbols, minus_id: int, count: int):
  """The first `count` numbers of a response, negated after a `minus_id` token.

  Args:
    symbols: one response's symbols.
    minus_id: the token read as a sign in front of a number.
    count: K, how many numbers to return.

  Returns:
    i32[K]: the numbers in order, 0 past the last one.
  """
  signed = signed_values(symbols, minus_id)
  is_num = symbols.kinds == NUM
  index = jnp.where(is_num, jnp.cumsum(is_num) - 1, count)
  return jnp.zeros((count,), jnp.int32).at[index].set(signed, mode="drop")
