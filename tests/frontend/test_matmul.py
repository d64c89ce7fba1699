"""Parity of the matmul family (frontend/lowering/matmul.py) against onnxruntime."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import onnx
import pytest

import onnx_stablehlo
from onnx_stablehlo.errors import ShapeError
from tests.util import assert_allclose_for_dtype, compile_and_run, emitted_text, onnx_type_name, oracle_run, parse

MATMUL_MODEL = """<ir_version: 9, opset_import: ["" : {opset}]>
g ({ty}{a_shape} a, {ty}{b_shape} b) => ({ty} y) {{
  y = MatMul(a, b)
}}"""

# (a shape, b shape, id): 1-D operands, a rank-2 weight, broadcast batch dims, rank-2 lhs.
MATMUL_SHAPES = [
    ((3, 4), (4, 5), "2d"),
    ((2, 3, 4), (4, 5), "3d-weight"),
    ((2, 2, 3, 4), (2, 2, 4, 5), "4d"),
    ((2, 1, 3, 4), (5, 4, 6), "bcast"),
    ((3, 4), (2, 4, 5), "2d-3d"),
    ((1, 3, 4), (2, 4, 5), "unit-batch-lhs"),
    ((2, 3, 4), (1, 4, 5), "unit-batch-rhs"),
    ((4,), (2, 4, 5), "1d-3d"),
    ((2, 3, 4), (4,), "3d-1d"),
    ((4,), (4,), "1d-1d"),
    ((4,), (4, 5), "1d-2d"),
]


def _dims(shape) -> str:
    return "[" + ", ".join(map(str, shape)) + "]"


def _matmul_model(a_shape, b_shape, dtype, opset: int = 13):
    return parse(
        MATMUL_MODEL.format(opset=opset, ty=onnx_type_name(dtype), a_shape=_dims(a_shape), b_shape=_dims(b_shape))
    )


def _parse_with_scalars(text: str, scalars: tuple[str, ...] = ()) -> onnx.ModelProto:
    """``parse``, giving the named inputs a 0-d shape (the text syntax drops ``[]``)."""
    model = onnx.parser.parse_model(text)
    for value in model.graph.input:
        if value.name in scalars:
            value.type.tensor_type.shape.SetInParent()
    onnx.checker.check_model(model)
    return model


def _values(shape, dtype, rng: np.random.Generator) -> np.ndarray:
    if np.issubdtype(dtype, np.integer):
        return rng.integers(-5, 6, shape).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


@pytest.mark.parametrize("a_shape,b_shape", [s[:2] for s in MATMUL_SHAPES], ids=[s[2] for s in MATMUL_SHAPES])
def test_matmul_shapes_match_onnxruntime(a_shape, b_shape, rng):
    model = _matmul_model(a_shape, b_shape, np.float32)
    feeds = {"a": _values(a_shape, np.float32, rng), "b": _values(b_shape, np.float32, rng)}
    assert_allclose_for_dtype(compile_and_run(model, feeds), oracle_run(model, feeds))


@pytest.mark.parametrize(
    "opset,dtype",
    [(7, np.float32), (9, np.float64), (9, np.int32), (9, np.int64), (13, np.float16), (13, np.uint32)],
    ids=["opset7-f32", "opset9-f64", "opset9-i32", "opset9-i64", "opset13-f16", "opset13-ui32"],
)
def test_matmul_dtypes_match_onnxruntime(opset, dtype, rng):
    model = _matmul_model((2, 3, 4), (2, 4, 5), dtype, opset)
    feeds = {"a": _values((2, 3, 4), dtype, rng), "b": _values((2, 4, 5), dtype, rng)}
    assert_allclose_for_dtype(compile_and_run(model, feeds), oracle_run(model, feeds))


def test_matmul_bfloat16_accumulates_in_f32(rng):
    model = _matmul_model((3, 64), (64, 5), ml_dtypes.bfloat16)
    a, b = _values((3, 64), np.float32, rng), _values((64, 5), np.float32, rng)
    a, b = a.astype(ml_dtypes.bfloat16), b.astype(ml_dtypes.bfloat16)
    expected = (a.astype(np.float32) @ b.astype(np.float32)).astype(ml_dtypes.bfloat16)
    assert_allclose_for_dtype(compile_and_run(model, {"a": a, "b": b}), [expected])
    text = emitted_text(model)
    assert "-> tensor<3x5xf32>" in text and "stablehlo.convert" in text


def test_matmul_with_a_weight_broadcasts_nothing():
    """[B, S, K] @ [K, N] contracts directly: no broadcast of the weight, no transpose."""
    text = emitted_text(_matmul_model((2, 3, 4), (4, 5), np.float32))
    assert "stablehlo.dot_general" in text
    assert "broadcast_in_dim" not in text and "stablehlo.transpose" not in text


def test_matmul_with_batched_operands_uses_batching_dims():
    text = emitted_text(_matmul_model((2, 1, 3, 4), (5, 4, 6), np.float32))
    assert "batching_dims = [0, 1] x [0, 1]" in text
    assert "stablehlo.broadcast_in_dim" in text


def test_matmul_rejects_mismatched_contracting_dims():
    model = _matmul_model((3, 4), (5, 6), np.float32)
    with pytest.raises(ShapeError, match="contracted dims differ"):
        onnx_stablehlo.lower(model)


GEMM_MODEL = """<ir_version: 9, opset_import: ["" : {opset}]>
g ({ty}{a_shape} a, {ty}{b_shape} b{c_decl}) => ({ty}[3, 5] y) {{
  y = Gemm {attrs} (a, b{c_use})
}}"""

# (transA, transB, alpha, beta, C shape or None)
GEMM_CASES = [
    (0, 0, 1.0, 1.0, (3, 5)),
    (1, 0, 1.0, 1.0, (5,)),
    (0, 1, 1.0, 1.0, (3, 1)),
    (1, 1, 0.5, 2.0, (1, 5)),
    (0, 0, 2.0, 1.0, ()),
    (0, 1, 1.0, 0.0, (5,)),
    (0, 0, 0.25, 1.0, None),
]


def _gemm_id(case) -> str:
    trans_a, trans_b, alpha, beta, c_shape = case
    c = "noC" if c_shape is None else "C" + "x".join(map(str, c_shape)) if c_shape else "Cscalar"
    return f"tA{trans_a}-tB{trans_b}-alpha{alpha}-beta{beta}-{c}"


def _gemm_model(trans_a, trans_b, alpha, beta, c_shape, dtype, opset):
    a_shape = (4, 3) if trans_a else (3, 4)
    b_shape = (5, 4) if trans_b else (4, 5)
    attrs = f"<transA = {trans_a}, transB = {trans_b}, alpha = {alpha}, beta = {beta}>"
    ty = onnx_type_name(dtype)
    c_decl = "" if c_shape is None else f", {ty}{_dims(c_shape)} c"
    c_use = "" if c_shape is None else ", c"
    text = GEMM_MODEL.format(
        opset=opset, ty=ty, a_shape=_dims(a_shape), b_shape=_dims(b_shape), c_decl=c_decl, c_use=c_use, attrs=attrs
    )
    return _parse_with_scalars(text, ("c",) if c_shape == () else ()), a_shape, b_shape


@pytest.mark.parametrize("case", GEMM_CASES, ids=[_gemm_id(c) for c in GEMM_CASES])
@pytest.mark.parametrize("opset", [11, 13])
def test_gemm_attributes_match_onnxruntime(case, opset, rng):
    model, a_shape, b_shape = _gemm_model(*case, np.float32, opset)
    feeds = {"a": _values(a_shape, np.float32, rng), "b": _values(b_shape, np.float32, rng)}
    if case[4] is not None:
        feeds["c"] = _values(case[4], np.float32, rng)
    assert_allclose_for_dtype(compile_and_run(model, feeds), oracle_run(model, feeds))


@pytest.mark.parametrize(
    "opset,dtype",
    [(7, np.float32), (9, np.float64), (9, np.int64), (13, np.float16)],
    ids=["opset7-f32", "opset9-f64", "opset9-i64", "opset13-f16"],
)
def test_gemm_dtypes_match_onnxruntime(opset, dtype, rng):
    model, a_shape, b_shape = _gemm_model(1, 1, 1.0, 1.0, (5,), dtype, opset)
    feeds = {k: _values(s, dtype, rng) for k, s in (("a", a_shape), ("b", b_shape), ("c", (5,)))}
    assert_allclose_for_dtype(compile_and_run(model, feeds), oracle_run(model, feeds))


def test_gemm_transposes_through_contracting_dims():
    model, _, _ = _gemm_model(1, 1, 1.0, 1.0, None, np.float32, 13)
    text = emitted_text(model)
    assert "contracting_dims = [0] x [1]" in text
    assert "stablehlo.transpose" not in text and "stablehlo.multiply" not in text
