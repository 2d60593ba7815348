"""Subsets of a group of N generations (Ibn Hamid et al., *Set Reinforcement Learning:
Principles and Approaches*, the set RL note, §2.3, Algorithm 1 line 4).

Set RL scores sets G of size n drawn from the N generations of one prompt, either
all C(N, n) of them or K of them drawn uniformly without replacement. A subset is
a sorted row of n distinct indices into the group.
"""

import itertools
import math

import jax
import jax.numpy as jnp
import numpy as np

from polyepo import checks

# Above this many subsets `all_subsets` refuses (the array alone would be large);
# sample_subsets stops materialising all subsets well below it.
MAX_ENUMERATED = 1 << 24
_MATERIALISE_LIMIT = 1 << 16


def num_subsets(num_samples: int, n: int) -> int:
  """C(N, n), the number of subsets of size n of N generations."""
  checks.set_size(num_samples, n)
  return math.comb(num_samples, n)


def all_subsets(num_samples: int, n: int) -> jax.Array:
  """Every subset of size n of range(N), in lexicographic order.

  Args:
    num_samples: N, the number of generations per prompt (static).
    n: the set size (static), 1 <= n <= N.

  Returns:
    i32[C(N, n), n]: each row sorted ascending, rows distinct.

  Raises:
    ValueError: if n is out of range or C(N, n) exceeds `MAX_ENUMERATED`.
  """
  checks.set_size(num_samples, n)
  total = math.comb(num_samples, n)
  if total > MAX_ENUMERATED:
    raise ValueError(
        f"all_subsets(N={num_samples}, n={n}) would enumerate C(N, n) = {total} "
        f"subsets (> {MAX_ENUMERATED}); use sample_subsets or a closed form.")
  rows = np.fromiter(
      itertools.chain.from_iterable(itertools.combinations(range(num_samples), n)),
      dtype=np.int32, count=total * n)
  return jnp.asarray(rows.reshape(total, n))


def _random_subsets(key, num_samples: int, n: int, k: int) -> jax.Array:
  """K independent uniform subsets (repeats possible): i32[K, n], rows sorted."""
  scores = jax.random.uniform(key, (k, num_samples))
  _, idx = jax.lax.top_k(scores, n)
  return jnp.sort(idx, axis=-1).astype(jnp.int32)


def _repeats_earlier_row(subsets: jax.Array) -> jax.Array:
  """bool[K]: row k equals some row k' < k."""
  k = subsets.shape[0]
  equal = jnp.all(subsets[:, None, :] == subsets[None, :, :], axis=-1)
  earlier = jnp.tril(jnp.ones((k, k), bool), k=-1)
  return jnp.any(equal & earlier, axis=-1)


def sample_subsets(key: jax.Array, num_samples: int, n: int, k: int) -> jax.Array:
  """K distinct subsets of size n, a uniform draw without replacement from all C(N, n).

  When C(N, n) is small the subsets are enumerated and K of them picked without
  replacement. Otherwise K uniform subsets are drawn and every row that repeats an
  earlier one is redrawn until none does; this never materialises the C(N, n)
  subsets (e.g. N=64, n=8, K=512), and because the procedure treats all subsets
  alike, the unordered result is uniform over the K-subsets of subsets. It
  terminates quickly because K <= C(N, n) / 2 whenever this path is taken.

  Args:
    key: PRNG key.
    num_samples: N (static).
    n: set size (static), 1 <= n <= N.
    k: number of subsets K (static), 1 <= K <= C(N, n).

  Returns:
    i32[K, n]: each row sorted ascending, rows distinct, in random order.
  """
  checks.set_size(num_samples, n)
  checks.num_subsets(num_samples, n, k)
  total = math.comb(num_samples, n)
  if total <= max(_MATERIALISE_LIMIT, 2 * k):
    pick = jax.random.choice(key, total, (k,), replace=False)
    return all_subsets(num_samples, n)[pick]

  draw_key, redraw_key = jax.random.split(key)

  def cond(carry):
    _, subsets = carry
    return jnp.any(_repeats_earlier_row(subsets))

  def body(carry):
    i, subsets = carry
    fresh = _random_subsets(jax.random.fold_in(redraw_key, i), num_samples, n, k)
    repeats = _repeats_earlier_row(subsets)
    return i + 1, jnp.where(repeats[:, None], fresh, subsets)

  subsets = _random_subsets(draw_key, num_samples, n, k)
  _, subsets = jax.lax.while_loop(cond, body, (jnp.int32(0), subsets))
  return subsets
