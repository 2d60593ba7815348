"""Vocabularies, host-side text of responses, and answer ids for majority voting."""

from typing import NamedTuple, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from envs.kit import symbols


class Vocab(NamedTuple):
  """A domain's tokens: the digits 0-9, its own single characters, EOS `$`, PAD `_`.

  Attributes:
    itos: token id -> text.
    stoi: text -> token id.
  """
  itos: tuple
  stoi: dict

  @property
  def size(self) -> int:
    return len(self.itos)

  @property
  def eos_id(self) -> int:
    return self.stoi["$"]

  @property
  def pad_id(self) -> int:
    return self.stoi["_"]


def vocab(characters: str) -> Vocab:
  """The vocabulary of digits, then `characters` (each one token), then `$` and `_`."""
  itos = tuple("0123456789") + tuple(characters) + ("$", "_")
  if len(set(itos)) != len(itos):
    raise ValueError(f"vocab characters {characters!r} repeat a token or use 0-9, $ or _.")
  return Vocab(itos, {s: i for i, s in enumerate(itos)})


def tokens_to_text(tokens, itos: Sequence[str], eos_id: int, pad_id: int) -> str:
  """Host-side text of one response: tokens up to EOS, PAD skipped after it.

  A response without EOS ends with " [no EOS]" so cut-off responses show.
  """
  out = []
  for tok in np.asarray(tokens).tolist():
    if tok == eos_id:
      return "".join(out)
    out.append(itos[tok] if 0 <= tok < len(itos) else f"<{tok}>")
  text = "".join(out).rstrip(itos[pad_id]) if pad_id < len(itos) else "".join(out)
  return text + " [no EOS]"


def text_to_tokens(text: str, stoi: dict, skip: str = " ") -> np.ndarray:
  """Host-side inverse of `tokens_to_text` for single-character tokens.

  Raises:
    ValueError: quoting `text`, if a character is not a token.
  """
  out = []
  for ch in text:
    if ch in skip:
      continue
    if ch not in stoi:
      raise ValueError(f"{text!r}: character {ch!r} is not a token.")
    out.append(stoi[ch])
  return np.asarray(out, np.int32)


_ANSWER_HASH_MULTIPLIER = 1_000_003


def answer_id(tokens, *, marker_id: int, eos_id: int):
  """An id of the final answer of one response, for majority voting.

  The answer is the token string after the last `marker_id` and before the
  first EOS; two responses get the same id iff their answer strings agree (up
  to a 31-bit hash collision, about 1e-6 for 64 distinct answers).

  Args:
    tokens: i32[T] one response.
    marker_id: the token that introduces the answer (e.g. `#`).
    eos_id: end of sequence.

  Returns:
    i32[] in [0, 2**31), or -1 when the response has no EOS or no marker before it.
  """
  pos = jnp.arange(tokens.shape[-1])
  has_eos, eos_pos = symbols.eos_position(tokens, eos_id)
  is_marker = (tokens == marker_id) & (pos < eos_pos)
  start = jnp.max(jnp.where(is_marker, pos, -1))
  in_answer = (pos > start) & (pos < eos_pos)

  def step(h, x):
    token, keep = x
    h2 = (h * jnp.uint32(_ANSWER_HASH_MULTIPLIER) + token.astype(jnp.uint32) + jnp.uint32(1))
    return jnp.where(keep, h2, h), None

  h, _ = jax.lax.scan(step, jnp.uint32(0), (tokens, in_answer))
  h = (h & jnp.uint32(0x7FFFFFFF)).astype(jnp.int32)
  return jnp.where(has_eos & (start >= 0), h, -1)


def answer_ids(responses, *, marker_id: int, eos_id: int):
  """`answer_id` of each response: i32[B, T] -> i32[B]."""
  responses = jnp.asarray(responses, jnp.int32)
  if responses.ndim != 2:
    raise ValueError(f"responses must be i32[B, T], got shape {responses.shape}.")
  return jax.vmap(lambda r: answer_id(r, marker_id=marker_id, eos_id=eos_id))(responses)
