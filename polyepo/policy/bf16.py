"""bfloat16 products with float32 accumulation, forward and backward.

The projection layers of `polyepo.model` (QKV, attention output, MLP, head)
compute through these when `TransformerConfig.matmul_dtype` is "bfloat16":
`dense_kwargs` gives a flax Dense / DenseGeneral the `bf16_dot_general` that
routes its product through `bf16_matmul`, a custom VJP whose backward pass is
bfloat16 too (the reason is in its docstring).
"""

import math

import jax
import jax.numpy as jnp


@jax.custom_vjp
def bf16_matmul(a: jax.Array, b: jax.Array) -> jax.Array:
  """a @ b with bfloat16 operands and float32 accumulation, in both passes.

  The backward pass rounds the incoming gradient to bfloat16 too, so its two
  matmuls (dA = g B^T, dB = A^T g) take the same fast path; left to autodiff,
  they would mix a float32 and a bfloat16 operand and fall back to float32.

  Args:
    a: f32[M, K].
    b: f32[K, N].

  Returns:
    f32[M, N].
  """
  return _bf16_matmul_fwd(a, b)[0]


def _bf16_dot(a, b, contract):
  return jax.lax.dot_general(a, b, (contract, ((), ())), preferred_element_type=jnp.float32)


def _bf16_matmul_fwd(a, b):
  a, b = a.astype(jnp.bfloat16), b.astype(jnp.bfloat16)
  return _bf16_dot(a, b, ((1,), (0,))), (a, b)


def _bf16_matmul_bwd(residuals, g):
  a, b = residuals
  g = g.astype(jnp.bfloat16)
  return _bf16_dot(g, b, ((1,), (1,))), _bf16_dot(a, g, ((0,), (0,)))


bf16_matmul.defvjp(_bf16_matmul_fwd, _bf16_matmul_bwd)


def bf16_dot_general(lhs, rhs, dimension_numbers, precision=None,
                     preferred_element_type=None):
  """`lax.dot_general` for flax Dense layers, computed by `bf16_matmul`.

  Supports what Dense / DenseGeneral emit with axis=(-k, ..., -1): the last k
  axes of lhs contracted with the first k of rhs, no batch axes.
  """
  del precision, preferred_element_type
  (lhs_contract, rhs_contract), batch = dimension_numbers
  k = len(lhs_contract)
  if (batch != ((), ()) or tuple(lhs_contract) != tuple(range(lhs.ndim - k, lhs.ndim))
      or tuple(rhs_contract) != tuple(range(k))):
    raise NotImplementedError(f"bf16_dot_general: unsupported dimension_numbers "
                              f"{dimension_numbers}.")
  out_shape = lhs.shape[:lhs.ndim - k] + rhs.shape[k:]
  contracted = math.prod(lhs.shape[lhs.ndim - k:])
  out = bf16_matmul(lhs.reshape(-1, contracted), rhs.reshape(contracted, -1))
  return out.reshape(out_shape)


def dense_kwargs(matmul_dtype: str):
  """Extra keyword arguments of the projection layers for a model's matmul_dtype."""
  return {"dot_general": bf16_dot_general} if matmul_dtype == "bfloat16" else {}
