"""The trace builder: a strategy's work for ONE problem as symbol slots.

A strategy is a straight-line Python function of one (unbatched) problem that
writes its steps into a `Trace` at trace time:

  t.op("* =")          # operator tokens, by name
  t.num(x)             # a number read off the problem or copied
  y = t.result(x * 8)  # a computed number: a slip site (see below)
  y = t.step(x, "*", 8, x * 8)  # `x * 8 = y ;`, y a slip site
  t.answer(y)          # `# y $`
  t.block((";", 0, "+", 1, "=", 2), nums, on)  # a repeated step, vectorised

The slot structure (token ids, number and sign slots) is static numpy; only
the numbers and the on/off masks are traced, and they are placed into the slots
by one gather each, so a trace costs a handful of XLA ops whatever its length.
A slot switched off (`on=False`, e.g. the halvings a problem does not need) is
FILL, which `symbols.symbols_to_tokens` skips. With `minus_id` set, numbers are
signed: each takes two slots, the sign token (or FILL) and the NUM.

**Slips.** A demonstration may carry one slip (`Slip`): `slip.site` names the
slip site it falls on (-1: none). `result` numbers its calls as sites 0, 1, ...
and adds `slip.delta` to the value at the chosen one; strategies whose slips are
not additive ask `t.slips(i)` and change the work themselves (a sign error, a
wrong candidate taken for a root). Later steps compute from the slipped values,
so the error propagates to the answer; the step grammar, and so the label, is
the same as without the slip.
"""

from typing import Mapping, NamedTuple, Optional

import jax.numpy as jnp
import numpy as np

from envs.kit import symbols as sym_lib

_SIGN = -10  # static placeholder kind: the minus token if the number is negative


class Slip(NamedTuple):
  """One slip of a demonstration (all i32[] scalars, traced).

  Attributes:
    site: the slip site it falls on, -1 for none.
    delta: what `Trace.result` adds to the value at that site.
    bits: random bits >= 0 a strategy may read to choose details of its slip.
  """
  site: jnp.ndarray
  delta: jnp.ndarray
  bits: jnp.ndarray


NO_SLIP = Slip(jnp.int32(-1), jnp.int32(0), jnp.int32(0))


class Trace:
  """Symbol slots of one trace, built at trace time (see the module docstring).

  Args:
    stoi: the vocabulary, token text -> id.
    minus_id: token written before a negative number (None: numbers are
      unsigned and take one slot).
    slip: the slip to apply, if any.
  """

  def __init__(self, stoi: Mapping[str, int], minus_id: Optional[int] = None,
               slip: Slip = NO_SLIP):
    self.stoi, self.minus_id, self.slip = stoi, minus_id, slip
    self._kinds = []  # static kind per slot
    self._val_src = []  # index into the traced numbers (-1: none)
    self._on_src = []  # index into the traced masks (-1: always on)
    self._vals, self._ons = [], []  # traced 1-D arrays
    self._n_vals = self._n_ons = 0
    self.site_on = []  # bool[] per result site: whether it is written
    self.site_values = []  # i32[] per result site: its value before the slip

  def _mask(self, on, size=1):
    """Indices of `on` (True, a bool or bool[size]) among the traced masks."""
    if on is True:
      return np.full(size, -1)
    self._ons.append(jnp.broadcast_to(jnp.asarray(on, bool), (size,)))
    self._n_ons += size
    return np.arange(self._n_ons - size, self._n_ons)

  def _numbers(self, v):
    v = jnp.asarray(v, jnp.int32).reshape(-1)
    self._vals.append(v)
    self._n_vals += v.shape[0]
    return np.arange(self._n_vals - v.shape[0], self._n_vals)

  def _slot(self, kind, val_idx, on_idx):
    kinds = [kind] if kind != sym_lib.NUM or self.minus_id is None else [_SIGN, kind]
    self._kinds += kinds
    self._val_src += [val_idx] * len(kinds)
    self._on_src += [on_idx] * len(kinds)

  def op(self, text: str, on=True):
    """Writes the space-separated tokens of `text`."""
    on_idx = self._mask(on)[0]
    for name in text.split():
      self._slot(self.stoi[name], -1, on_idx)

  def num(self, value, on=True):
    """Writes a number (read off the problem, copied, or computed)."""
    self._slot(sym_lib.NUM, self._numbers(value)[0], self._mask(on)[0])

  def result(self, value, on=True):
    """Writes a computed number, the next slip site; returns it (slipped)."""
    value = jnp.asarray(value, jnp.int32)
    self.site_values.append(value)
    value = value + jnp.where(self.slip.site == len(self.site_on), self.slip.delta, 0)
    self.site_on.append(on)
    self.num(value, on)
    return value

  def step(self, x, op: str, y, value):
    """Writes `x op y = value ;` with value a slip site; returns it (slipped).

    For vocabularies with `=` and `;`.
    """
    self.num(x)
    self.op(op)
    self.num(y)
    self.op("=")
    value = self.result(value)
    self.op(";")
    return value

  def answer(self, value):
    """Writes `# value $` (the answer marker, the answer and EOS); returns value."""
    self.op("#")
    self.num(value)
    self.op("$")
    return value

  def slips(self, site: int):
    """bool[]: whether the slip falls on the strategy's own site `site`."""
    return self.slip.site == site

  def block(self, spec, nums, on):
    """A repeated step over C rows: spec items are token names or columns of nums.

    Args:
      spec: e.g. (";", 0, "+", 1, "=", 2).
      nums: i32[C, M] numbers.
      on: bool[C] which rows are written.
    """
    c, m = nums.shape
    val_idx = self._numbers(nums).reshape(c, m)
    on_idx = self._mask(on, c)
    for row in range(c):
      for item in spec:
        if isinstance(item, str):
          self._slot(self.stoi[item], -1, on_idx[row])
        else:
          self._slot(sym_lib.NUM, val_idx[row, item], on_idx[row])

  def __len__(self):
    return len(self._kinds)

  def arrays(self, length: Optional[int] = None):
    """(kinds i32[L], values i32[L]): FILL in the slots switched off and past the
    trace's end when `length` is larger than the trace."""
    kinds = np.asarray(self._kinds + [sym_lib.FILL] * ((length or 0) - len(self)), np.int32)
    val_src = np.asarray(self._val_src + [-1] * (len(kinds) - len(self)))
    on_src = np.asarray(self._on_src + [-1] * (len(kinds) - len(self)))
    vals = jnp.concatenate(self._vals + [jnp.zeros((1,), jnp.int32)])
    vals = vals[np.where(val_src < 0, self._n_vals, val_src)]
    ons = jnp.concatenate(self._ons + [jnp.ones((1,), bool)])
    on = ons[np.where(on_src < 0, self._n_ons, on_src)]
    sign = sym_lib.FILL if self.minus_id is None else self.minus_id
    out = jnp.where(kinds == _SIGN, jnp.where(vals < 0, sign, sym_lib.FILL), kinds)
    out = jnp.where(on, out, sym_lib.FILL)
    values = jnp.where(kinds == sym_lib.NUM,
                       vals if self.minus_id is None else jnp.abs(vals), 0)
    return out.astype(jnp.int32), values.astype(jnp.int32)
