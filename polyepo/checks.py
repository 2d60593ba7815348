"""Argument checks that raise `ValueError` naming the argument, at trace time.

Every public function of the library and every config's `validate` reports a bad
argument or field the same way: a `ValueError` whose message names it and the
valid choices or range (chex's assertions would raise `AssertionError`, so
these small checks wrap the few cases we need). Everything inspected is static
(shapes, dtypes, Python numbers), so the checks run once while tracing and cost
nothing inside `jit`.
"""

import math

import jax.numpy as jnp


def set_size(num_samples: int, n: int, *, name: str = "n") -> None:
  """1 <= n <= N, both Python ints."""
  for arg, value in (("N", num_samples), (name, n)):
    if not isinstance(value, int) or isinstance(value, bool):
      raise ValueError(f"{arg} must be a Python int, got {value!r}.")
  if num_samples < 1:
    raise ValueError(f"N must be >= 1, got N={num_samples}.")
  if not 1 <= n <= num_samples:
    raise ValueError(
        f"{name} must satisfy 1 <= {name} <= N, got {name}={n}, N={num_samples}.")


def num_subsets(num_samples: int, n: int, k: int) -> None:
  """1 <= K <= C(N, n)."""
  if not isinstance(k, int) or isinstance(k, bool):
    raise ValueError(f"K must be a Python int, got {k!r}.")
  total = math.comb(num_samples, n)
  if not 1 <= k <= total:
    raise ValueError(
        f"K must satisfy 1 <= K <= C(N, n) = C({num_samples}, {n}) = {total}, "
        f"got K={k}.")


def rank(name: str, x, expected: int) -> None:
  if jnp.ndim(x) != expected:
    raise ValueError(
        f"{name} must have rank {expected}, got shape {jnp.shape(x)}.")


def axis_size(name: str, x, axis: int, expected: int, meaning: str) -> None:
  """x.shape[axis] == expected; `meaning` says where `expected` comes from."""
  if jnp.shape(x)[axis] != expected:
    raise ValueError(
        f"{name} must have {expected} ({meaning}) entries on axis {axis}, got shape "
        f"{jnp.shape(x)}.")


def same_shape(name_a: str, a, name_b: str, b) -> None:
  if jnp.shape(a) != jnp.shape(b):
    raise ValueError(
        f"{name_a} and {name_b} must have the same shape, got "
        f"{jnp.shape(a)} and {jnp.shape(b)}.")


def integer(name: str, x) -> None:
  dtype = jnp.result_type(x)
  if not jnp.issubdtype(dtype, jnp.integer):
    raise ValueError(f"{name} must have an integer dtype, got {dtype}.")


def floating_or_integer(name: str, x) -> None:
  dtype = jnp.result_type(x)
  if not (jnp.issubdtype(dtype, jnp.floating) or
          jnp.issubdtype(dtype, jnp.integer) or dtype == jnp.bool_):
    raise ValueError(f"{name} must be numeric, got dtype {dtype}.")


def at_least(name: str, value, low) -> None:
  """value >= low (a config field or a Python-number argument)."""
  if not value >= low:
    raise ValueError(f"{name} must be >= {low}, got {value}.")


def at_most(name: str, value, high, why: str = "") -> None:
  """value <= high (a config field or a Python-number argument); `why` says why."""
  if not value <= high:
    raise ValueError(f"{name} must be <= {high}{why}, got {value}.")


def greater_than(name: str, value, low) -> None:
  """value > low (a config field or a Python-number argument)."""
  if not value > low:
    raise ValueError(f"{name} must be > {low}, got {value}.")


def one_of(name: str, value, choices) -> None:
  if value not in choices:
    raise ValueError(
        f"{name} must be one of {', '.join(map(repr, choices))}; got {value!r}.")


def per_generation(rewards, labels, answers=None) -> None:
  """rewards f32[N], labels i32[N], optional answers i32[N]."""
  rank("rewards", rewards, 1)
  floating_or_integer("rewards", rewards)
  integer("labels", labels)
  same_shape("rewards", rewards, "labels", labels)
  if answers is not None:
    integer("answers", answers)
    same_shape("rewards", rewards, "answers", answers)
