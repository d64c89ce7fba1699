"""dot_general / dot -> MatMul, MatMulInteger, Einsum: values against JAX, and the idiom."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from tests.exporter.util import check_roundtrip, export_jax, run_onnx


def _f32(rng: np.random.Generator, *shape: int) -> np.ndarray:
    return rng.standard_normal(shape).astype(np.float32)


def _ops(model) -> list[str]:
    return [n.op_type for n in model.graph.node]


def test_matmul_2d():
    rng = np.random.default_rng(0)
    model = check_roundtrip(lambda x, w: x @ w, _f32(rng, 5, 16), _f32(rng, 16, 8), op_types={"MatMul"})
    assert "Transpose" not in _ops(model) and "Einsum" not in _ops(model)


def test_matmul_3d_symbolic_batch():
    rng = np.random.default_rng(1)
    model = check_roundtrip(lambda x, w: x @ w, _f32(rng, 3, 8, 16), _f32(rng, 16, 4),
                            symbolic=["b, 8, 16", None], op_types={"MatMul"})
    assert _ops(model).count("MatMul") == 1 and "Reshape" not in _ops(model)


def test_matmul_runs_at_other_batch_sizes():
    rng = np.random.default_rng(2)
    w = _f32(rng, 16, 4)
    model = export_jax(lambda x, w: x @ w, _f32(rng, 3, 8, 16), w, symbolic=["b, s, 16", None])
    for b, s in [(1, 1), (4, 7)]:
        x = _f32(rng, b, s, 16)
        np.testing.assert_allclose(run_onnx(model, x, w)[0], x @ w, rtol=1e-5, atol=1e-5)


def test_batched_matmul():
    rng = np.random.default_rng(3)
    model = check_roundtrip(lambda a, b: jnp.einsum("bij,bjk->bik", a, b), _f32(rng, 4, 5, 6), _f32(rng, 4, 6, 3),
                            op_types={"MatMul"})
    assert "Transpose" not in _ops(model)


def test_batched_matmul_symbolic():
    rng = np.random.default_rng(4)
    check_roundtrip(lambda a, b: jnp.einsum("bij,bjk->bik", a, b), _f32(rng, 2, 5, 6), _f32(rng, 2, 6, 3),
                    symbolic=["b, m, 6", "b, 6, n"], op_types={"MatMul"})


def test_einsum_two_contracting_dims():
    rng = np.random.default_rng(5)
    check_roundtrip(lambda a, b: jnp.einsum("ijk,kjl->il", a, b), _f32(rng, 3, 4, 5), _f32(rng, 5, 4, 6),
                    op_types={"MatMul"})


def test_einsum_two_contracting_dims_symbolic_falls_back_to_einsum():
    rng = np.random.default_rng(6)
    check_roundtrip(lambda a, b: jnp.einsum("ijk,kjl->il", a, b), _f32(rng, 3, 4, 5), _f32(rng, 5, 4, 6),
                    symbolic=["i, j, 5", "5, j, 6"], op_types={"Einsum"})


def test_attention_scores():
    rng = np.random.default_rng(7)
    model = check_roundtrip(lambda q, k: jnp.einsum("bhqd,bhkd->bhqk", q, k), _f32(rng, 2, 3, 5, 8),
                            _f32(rng, 2, 3, 7, 8), symbolic=["b, 3, q, 8", "b, 3, k, 8"], op_types={"MatMul"})
    assert _ops(model).count("Transpose") == 1


def test_attention_heads_in_the_middle():
    rng = np.random.default_rng(8)
    check_roundtrip(lambda q, k: jnp.einsum("bqhd,bkhd->bhqk", q, k), _f32(rng, 2, 5, 3, 8),
                    _f32(rng, 2, 7, 3, 8), op_types={"MatMul"})


def test_dense_general_several_rhs_free_dims():
    rng = np.random.default_rng(9)
    # flax DenseGeneral: [b, s, d] x [d, h, k] -> [b, s, h, k] with a symbolic batch
    check_roundtrip(lambda x, w: jnp.einsum("bsd,dhk->bshk", x, w), _f32(rng, 2, 5, 8), _f32(rng, 8, 3, 4),
                    symbolic=["b, s, 8", None], op_types={"MatMul"})


def test_batch_and_several_lhs_free_dims():
    rng = np.random.default_rng(10)
    check_roundtrip(lambda a, b: jnp.einsum("bijk,bkl->bijl", a, b), _f32(rng, 2, 3, 4, 5), _f32(rng, 2, 5, 6),
                    symbolic=["b, 3, 4, 5", "b, 5, 6"], op_types={"MatMul"})


def test_batched_matrix_vector():
    rng = np.random.default_rng(11)
    check_roundtrip(lambda a, v: jnp.einsum("bij,bj->bi", a, v), _f32(rng, 2, 3, 4), _f32(rng, 2, 4),
                    op_types={"MatMul"})
    check_roundtrip(lambda v, a: jnp.einsum("bj,bjk->bk", v, a), _f32(rng, 2, 4), _f32(rng, 2, 4, 3),
                    op_types={"MatMul"})
    check_roundtrip(lambda u, v: jnp.einsum("bj,bj->b", u, v), _f32(rng, 2, 4), _f32(rng, 2, 4),
                    symbolic=["b, 4", "b, 4"], op_types={"MatMul"})


def test_vector_dot():
    rng = np.random.default_rng(12)
    check_roundtrip(jnp.dot, _f32(rng, 7), _f32(rng, 7), op_types={"MatMul"})
    check_roundtrip(jnp.dot, _f32(rng, 3, 7), _f32(rng, 7), op_types={"MatMul"})
    check_roundtrip(jnp.dot, _f32(rng, 7), _f32(rng, 7, 2), op_types={"MatMul"})


def test_outer_product():
    rng = np.random.default_rng(13)
    # a dot_general with no contracting dim (jnp.outer itself is a broadcast multiply)
    check_roundtrip(lambda a, b: lax.dot_general(a, b, (((), ()), ((), ()))), _f32(rng, 3), _f32(rng, 4),
                    op_types={"MatMul"})
    check_roundtrip(lambda a, b: lax.dot_general(a, b, (((), ()), ((0,), (0,)))), _f32(rng, 2, 3), _f32(rng, 2, 4),
                    symbolic=["b, 3", "b, 4"], op_types={"MatMul"})
    check_roundtrip(lambda a, b: lax.dot_general(a, b, (((), ()), ((0,), (0,)))), _f32(rng, 2), _f32(rng, 2))


def test_transposed_weight():
    rng = np.random.default_rng(14)
    # x @ w.T, as torch-style Linear weights [out, in] give.
    check_roundtrip(lambda x, w: lax.dot_general(x, w, (((1,), (1,)), ((), ()))), _f32(rng, 5, 16),
                    _f32(rng, 8, 16), op_types={"MatMul"})


def test_int8_to_int32():
    rng = np.random.default_rng(15)
    a = rng.integers(-128, 128, (5, 16), dtype=np.int8)
    b = rng.integers(-128, 128, (16, 8), dtype=np.int8)
    model = check_roundtrip(lambda a, b: lax.dot_general(a, b, (((1,), (0,)), ((), ())),
                                                         preferred_element_type=jnp.int32), a, b,
                            op_types={"MatMulInteger"})
    assert "Cast" not in _ops(model)


def test_int8_to_int32_batched_symbolic():
    rng = np.random.default_rng(16)
    a = rng.integers(-128, 128, (2, 5, 16), dtype=np.int8)
    b = rng.integers(-128, 128, (2, 8, 16), dtype=np.int8)
    check_roundtrip(lambda a, b: lax.dot_general(a, b, (((2,), (2,)), ((0,), (0,))),
                                                 preferred_element_type=jnp.int32), a, b,
                    symbolic=["b, 5, 16", "b, 8, 16"])


def test_int8_wraps_like_jax():
    rng = np.random.default_rng(17)
    a = rng.integers(-128, 128, (4, 16), dtype=np.int8)
    b = rng.integers(-128, 128, (16, 3), dtype=np.int8)
    check_roundtrip(lambda a, b: a @ b, a, b, op_types={"MatMul"})


def test_int32_and_uint8_einsum_fallback():
    rng = np.random.default_rng(18)
    a = rng.integers(-50, 50, (3, 4, 5), dtype=np.int32)
    b = rng.integers(-50, 50, (5, 4, 2), dtype=np.int32)
    check_roundtrip(lambda a, b: jnp.einsum("ijk,kjl->il", a, b), a, b, symbolic=["i, j, 5", "5, j, 2"],
                    op_types={"Einsum"})
    u = rng.integers(0, 255, (3, 4), dtype=np.uint8)
    v = rng.integers(0, 255, (4, 2), dtype=np.uint8)
    check_roundtrip(lambda a, b: a @ b, u, v)


def test_f16_matmul():
    rng = np.random.default_rng(19)
    a = (rng.standard_normal((4, 8)) * 0.5).astype(np.float16)
    b = (rng.standard_normal((8, 3)) * 0.5).astype(np.float16)
    model = check_roundtrip(lambda a, b: a @ b, a, b, op_types={"MatMul"})
    assert "Cast" not in _ops(model)


def test_bf16_to_f32_preferred_type():
    rng = np.random.default_rng(20)
    # onnxruntime's Python API cannot feed bf16 arrays: the function converts its f32 inputs.
    def fn(a, b):
        a, b = a.astype(jnp.bfloat16), b.astype(jnp.bfloat16)
        return lax.dot_general(a, b, (((1,), (0,)), ((), ())), preferred_element_type=jnp.float32)

    check_roundtrip(fn, _f32(rng, 4, 8), _f32(rng, 8, 3), op_types={"MatMul"})


def test_bf16_matmul():
    rng = np.random.default_rng(21)

    def fn(a, b):
        return (a.astype(jnp.bfloat16) @ b.astype(jnp.bfloat16)).astype(jnp.float32)

    # XLA's CPU JIT keeps the f32 accumulator across the convert pair (excess precision); the
    # ONNX graph rounds the product to bf16 as the module says: compare at bf16's precision.
    a, b = _f32(rng, 4, 8), _f32(rng, 8, 3)
    model = export_jax(fn, a, b)
    got = run_onnx(model, a, b)[0]
    np.testing.assert_allclose(got, np.asarray(jax.jit(fn)(a, b)), rtol=1e-2, atol=1e-2)
    assert {"MatMul", "Cast"} <= set(_ops(model))


def test_precision_highest_is_ignored():
    rng = np.random.default_rng(22)
    check_roundtrip(lambda a, b: jnp.matmul(a, b, precision=lax.Precision.HIGHEST), _f32(rng, 4, 8),
                    _f32(rng, 8, 3), op_types={"MatMul"})


def test_legacy_dot_op():
    from onnx_stablehlo.exporter import module_to_onnx

    text = """
    func.func @main(%a: tensor<3x4xf32>, %b: tensor<4x2xf32>, %v: tensor<4xf32>) -> (tensor<3x2xf32>, tensor<3xf32>) {
      %0 = stablehlo.dot %a, %b : (tensor<3x4xf32>, tensor<4x2xf32>) -> tensor<3x2xf32>
      %1 = stablehlo.dot %a, %v : (tensor<3x4xf32>, tensor<4xf32>) -> tensor<3xf32>
      return %0, %1 : tensor<3x2xf32>, tensor<3xf32>
    }
    """
    rng = np.random.default_rng(23)
    a, b, v = _f32(rng, 3, 4), _f32(rng, 4, 2), _f32(rng, 4)
    model = module_to_onnx(text).model
    got = run_onnx(model, a, b, v)
    np.testing.assert_allclose(got[0], a @ b, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(got[1], a @ v, rtol=1e-5, atol=1e-5)
    assert {n.op_type for n in model.graph.node} == {"MatMul"}


def test_grad_of_matmul():
    rng = np.random.default_rng(24)

    def loss_grads(x, w, g):
        _, vjp = jax.vjp(lambda x, w: jnp.tanh(x @ w), x, w)
        return vjp(g)

    check_roundtrip(loss_grads, _f32(rng, 3, 5, 8), _f32(rng, 8, 4), _f32(rng, 3, 5, 4),
                    symbolic=["b, 5, 8", None, "b, 5, 4"], op_types={"MatMul"})


_EINSUM = """
func.func @main(%a: tensor<2x3x4xf32>, %b: tensor<4x5xf32>, %i: tensor<3x3xi32>) -> (tensor<2x3x5xf32>, tensor<3xf32>, tensor<3xi32>) {
  %0 = "stablehlo.einsum"(%a, %b) {einsum_config = "abc,cd->abd"} : (tensor<2x3x4xf32>, tensor<4x5xf32>) -> tensor<2x3x5xf32>
  %1 = "stablehlo.unary_einsum"(%a) {einsum_config = "abc->b"} : (tensor<2x3x4xf32>) -> tensor<3xf32>
  %2 = "stablehlo.unary_einsum"(%i) {einsum_config = "aa->a"} : (tensor<3x3xi32>) -> tensor<3xi32>
  return %0, %1, %2 : tensor<2x3x5xf32>, tensor<3xf32>, tensor<3xi32>
}
"""


def test_stablehlo_einsum_and_unary_einsum():
    from onnx_stablehlo.exporter import module_to_onnx

    rng = np.random.default_rng(9)
    a, b = _f32(rng, 2, 3, 4), _f32(rng, 4, 5)
    i = rng.integers(-9, 9, (3, 3)).astype(np.int32)
    model = module_to_onnx(_EINSUM).model
    assert _ops(model).count("Einsum") == 3
    got = run_onnx(model, a, b, i)
    np.testing.assert_allclose(got[0], np.einsum("abc,cd->abd", a, b), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(got[1], a.sum(axis=(0, 2)), rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(got[2], np.diagonal(i))
