"""The benchmarks' own helpers (their timings are not tested, only what they count)."""

import jax
import jax.numpy as jnp

from bench import timing


def test_xla_op_seconds_classifies_matmuls_data_movement_and_the_rest():
  a = jnp.ones((256, 128)) * jnp.arange(128.0)
  b = jnp.ones((128, 64))
  program = jax.jit(lambda a, b: (jnp.dot(a, b).T, jnp.sin(a).sum(axis=0)))
  kinds = timing._op_kinds(program.lower(a, b).compile().as_text())
  assert any(k == "matmul" and s.startswith(("f32[256,64]", "f32[64,256]"))
             for k, s in kinds.values())
  assert any(k == "other" and s.startswith("f32[128]") for k, s in kinds.values())
  ops = timing.xla_op_seconds(program, (a, b), repeats=2)
  assert ops and {op.name for op in ops} <= set(kinds)
  assert all(op.seconds >= 0 and (op.kind, op.shape) == kinds[op.name] for op in ops)
  assert any(op.kind == "matmul" for op in ops)


def test_op_kinds_reads_fusion_bodies():
  hlo = """HloModule m

%fused_dot (p0: f32[4,4], p1: f32[4,4]) -> f32[4,4] {
  %p0 = f32[4,4]{1,0} parameter(0)
  %p1 = f32[4,4]{1,0} parameter(1)
  ROOT %dot.1 = f32[4,4]{1,0} dot(%p0, %p1), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}

%fused_copy (p0: f32[4,4]) -> f32[4,4] {
  %p0 = f32[4,4]{1,0} parameter(0)
  %neg = f32[4,4]{1,0} negate(%p0)
  ROOT %copy.2 = f32[4,4]{0,1} copy(%neg)
}

%fused_transpose (p0: f32[4,4]) -> f32[16] {
  %p0 = f32[4,4]{1,0} parameter(0)
  %copy.3 = f32[4,4]{0,1} copy(%p0)
  ROOT %bitcast.4 = f32[16]{0} bitcast(%copy.3)
}

%fused_add (p0: f32[4,4]) -> f32[4,4] {
  %p0 = f32[4,4]{1,0} parameter(0)
  ROOT %add.3 = f32[4,4]{1,0} add(%p0, %p0)
}

ENTRY %main (a: f32[4,4], b: f32[4,4]) -> (f32[4,4], /*index=1*/f32[16]) {
  %a = f32[4,4]{1,0} parameter(0)
  %b = f32[4,4]{1,0} parameter(1)
  %ynn_fusion = f32[4,4]{1,0} fusion(%a, %b), kind=kCustom, calls=%fused_dot
  %copy_fusion = f32[4,4]{0,1} fusion(%ynn_fusion), kind=kLoop, calls=%fused_copy
  %transpose.1 = f32[4,4]{1,0} transpose(%copy_fusion), dimensions={1,0}
  %add_fusion = f32[4,4]{1,0} fusion(%transpose.1), kind=kLoop, calls=%fused_add
  %transposed = f32[16]{0} fusion(%add_fusion), kind=kLoop, calls=%fused_transpose
  ROOT %tuple = (f32[4,4]{1,0}, /*index=1*/f32[16]{0}) tuple(%add_fusion, %transposed)
}
"""
  kinds = timing._op_kinds(hlo)
  assert kinds["ynn_fusion"] == ("matmul", "f32[4,4]{1,0}")
  assert kinds["copy_fusion"][0] == "other"    # the negation computes
  assert kinds["transpose.1"][0] == "movement"
  assert kinds["transposed"][0] == "movement"
  assert kinds["add_fusion"][0] == "other"


def test_op_kinds_tells_bfloat16_products_from_upcast_ones():
  hlo = """HloModule m

%fused_bf16 (p0: f32[4,4], p1: bf16[4,4]) -> f32[4,4] {
  %p0 = f32[4,4]{1,0} parameter(0)
  %c0 = bf16[4,4]{1,0} convert(%p0)
  %p1 = bf16[4,4]{1,0} parameter(1)
  ROOT %dot.1 = f32[4,4]{1,0} dot(%c0, %p1), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}

%fused_up (p0: bf16[4,4]) -> f32[4,4] {
  %p0 = bf16[4,4]{1,0} parameter(0)
  ROOT %convert.2 = f32[4,4]{1,0} convert(%p0)
}

ENTRY %main (a: bf16[4,4], b: bf16[4,4], c: f32[4,4]) -> (f32[4,4], f32[4,4], f32[4,4], f32[4,4]) {
  %a = bf16[4,4]{1,0} parameter(0)
  %b = bf16[4,4]{1,0} parameter(1)
  %c = f32[4,4]{1,0} parameter(2)
  %ynn_fusion = f32[4,4]{1,0} fusion(%c, %b), kind=kCustom, calls=%fused_bf16
  %up = f32[4,4]{1,0} fusion(%a), kind=kLoop, calls=%fused_up
  %dot.2 = f32[4,4]{1,0} dot(%up, %c), lhs_contracting_dims={0}, rhs_contracting_dims={0}
  %dot.3 = f32[4,4]{1,0} dot(%a, %b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  %dot.4 = f32[4,4]{1,0} dot(%a, %c), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT %tuple = (f32[4,4]{1,0}, f32[4,4]{1,0}, f32[4,4]{1,0}, f32[4,4]{1,0}) tuple(%ynn_fusion, %dot.2, %dot.3, %dot.4)
}
"""
  kinds = timing._op_kinds(hlo)
  assert kinds["ynn_fusion"][0] == "matmul bf16"  # converted to bfloat16 inside
  assert kinds["dot.2"][0] == "matmul"            # bfloat16 values upcast to float32
  assert kinds["dot.3"][0] == "matmul bf16"
  assert kinds["dot.4"][0] == "matmul"            # one float32 operand
  assert kinds["up"][0] == "other"
