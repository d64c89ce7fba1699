"""Parity of the matmul family (frontend/lowering/matmul.py) against onnxruntime.

Symbolic-dim tests (``check_symbolic``) compile one model with its ``dim_param`` dims kept as
``?``, keep that artifact through runs at two shapes, and compare each run with the oracle.
"""

from __future__ import annotations

import re

import ml_dtypes
import numpy as np
import onnx
import pytest

import onnx_stablehlo
from onnx_stablehlo.errors import ShapeError
from onnx_stablehlo.runtime.options import CompileOptions
from tests.util import (assert_allclose_for_dtype, check_symbolic, compile_and_run, emitted_text, onnx_type_name,
                        oracle_run, parse, parse_with_scalars, reference_run, standard_normal)

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
    return parse_with_scalars(text, ("c",) if c_shape == () else ()), a_shape, b_shape


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


# (equation, operand shapes): products, transposes, sums, diagonals, ellipsis broadcasting.
EINSUM_CASES = [
    ("ij,jk->ik", [(3, 4), (4, 5)]),
    ("ij,jk", [(3, 4), (4, 5)]),
    ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]),
    ("bhqd,bhkd->bhqk", [(2, 2, 3, 4), (2, 2, 5, 4)]),
    ("ij->ji", [(3, 4)]),
    ("ij->", [(3, 4)]),
    ("i,i", [(5,), (5,)]),
    ("i,j->ij", [(3,), (4,)]),
    ("ii->i", [(4, 4)]),
    ("ii", [(4, 4)]),
    ("bii->bi", [(2, 3, 3)]),
    ("iij->j", [(3, 3, 4)]),
    ("...ij,...jk->...ik", [(2, 1, 3, 4), (5, 4, 6)]),
    ("...ii->...i", [(2, 3, 3)]),
    ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 5)]),
    ("abc,cd,b->ad", [(2, 3, 4), (4, 5), (3,)]),
    ("ijk,jil->kl", [(2, 3, 4), (3, 2, 5)]),
    ("Ab,bA->A", [(2, 3), (3, 2)]),
]


def _einsum_model(equation: str, shapes, dtype, opset: int = 12) -> onnx.ModelProto:
    names = [f"x{i}" for i in range(len(shapes))]
    ty = onnx_type_name(dtype)
    inputs = ", ".join(f"{ty}{_dims(s)} {n}" for n, s in zip(names, shapes))
    return parse(
        f"""<ir_version: 9, opset_import: ["" : {opset}]>
g ({inputs}) => ({ty} y) {{
  y = Einsum <equation = "{equation}"> ({", ".join(names)})
}}"""
    )


@pytest.mark.parametrize("equation,shapes", EINSUM_CASES, ids=[c[0] for c in EINSUM_CASES])
def test_einsum_matches_numpy(equation, shapes, rng):
    model = _einsum_model(equation, shapes, np.float32)
    xs = [_values(s, np.float32, rng) for s in shapes]
    feeds = {f"x{i}": x for i, x in enumerate(xs)}
    assert_allclose_for_dtype(compile_and_run(model, feeds), [np.asarray(np.einsum(equation, *xs))])


@pytest.mark.parametrize("dtype", [np.float64, np.int32, np.int64], ids=["f64", "i32", "i64"])
def test_einsum_dtypes_match_onnxruntime(dtype, rng):
    shapes = [(2, 3, 4), (2, 4, 5)]
    model = _einsum_model("bij,bjk->bik", shapes, dtype)
    feeds = {f"x{i}": _values(s, dtype, rng) for i, s in enumerate(shapes)}
    assert_allclose_for_dtype(compile_and_run(model, feeds), oracle_run(model, feeds))


def test_einsum_contracts_in_one_dot_general():
    text = emitted_text(_einsum_model("bhqd,bhkd->bhqk", [(2, 2, 3, 4), (2, 2, 5, 4)], np.float32))
    assert text.count("stablehlo.dot_general") == 1
    assert "batching_dims = [0, 1] x [0, 1], contracting_dims = [3] x [3]" in text


def test_einsum_rejects_a_wrong_term():
    with pytest.raises(ShapeError, match="does not fit"):
        onnx_stablehlo.lower(_einsum_model("ijk,jk->i", [(3, 4), (4, 5)], np.float32))


MATMUL_INTEGER_MODEL = """<ir_version: 9, opset_import: ["" : 10]>
g ({a_ty}[{m}, 4] a, {b_ty}[4, 3] b{zp_decl}) => (int32[{m}, 3] y) {{
  y = MatMulInteger (a, b{zp_use})
}}"""


@pytest.mark.parametrize(
    "a_ty,b_ty,zero_points",
    [
        ("uint8", "uint8", None),
        ("uint8", "uint8", ((), ())),
        ("int8", "int8", ((), (3,))),
        ("uint8", "int8", ((2,), ())),
    ],
    ids=["u8-u8", "u8-u8-zp", "i8-i8-zp-per-column", "u8-i8-zp-per-row"],
)
def test_matmul_integer_matches_numpy(a_ty, b_ty, zero_points, rng):
    """A's zero point is per tensor or per row ([M]), B's per tensor or per column ([N])."""
    feeds = {
        "a": rng.integers(0 if a_ty == "uint8" else -128, 128, (2, 4)).astype(a_ty),
        "b": rng.integers(0 if b_ty == "uint8" else -128, 128, (4, 3)).astype(b_ty),
    }
    zp_decl = zp_use = ""
    a32, b32 = feeds["a"].astype(np.int32), feeds["b"].astype(np.int32)
    if zero_points is not None:
        za, zb = zero_points
        zp_decl, zp_use = f", {a_ty}{_dims(za)} za, {b_ty}{_dims(zb)} zb", ", za, zb"
        feeds["za"] = rng.integers(0, 10, za).astype(a_ty)
        feeds["zb"] = rng.integers(0, 10, zb).astype(b_ty)
        a_zero = feeds["za"].astype(np.int32)
        a32 = a32 - (a_zero.reshape(-1, 1) if za else a_zero)  # per row: one value per row of A
        b32 = b32 - feeds["zb"].astype(np.int32)
    text = MATMUL_INTEGER_MODEL.format(a_ty=a_ty, b_ty=b_ty, m=2, zp_decl=zp_decl, zp_use=zp_use)
    scalars = tuple(n for n, z in zip(("za", "zb"), zero_points or ()) if z == ())
    model = parse_with_scalars(text, scalars)
    assert_allclose_for_dtype(compile_and_run(model, feeds), [a32 @ b32])
    assert "-> tensor<2x3xi32>" in emitted_text(model)


def test_matmul_integer_batched_zero_points_match_numpy(rng):
    """N-D zero points: [..., M, 1] for A, [..., 1, N] for B."""
    model = parse(
        """<ir_version: 9, opset_import: ["" : 10]>
g (uint8[2, 3, 4] a, int8[2, 4, 5] b, uint8[2, 3, 1] za, int8[2, 1, 5] zb) => (int32[2, 3, 5] y) {
  y = MatMulInteger (a, b, za, zb)
}"""
    )
    feeds = {
        "a": rng.integers(0, 256, (2, 3, 4)).astype(np.uint8),
        "b": rng.integers(-128, 128, (2, 4, 5)).astype(np.int8),
        "za": rng.integers(0, 256, (2, 3, 1)).astype(np.uint8),
        "zb": rng.integers(-128, 128, (2, 1, 5)).astype(np.int8),
    }
    a32 = feeds["a"].astype(np.int32) - feeds["za"].astype(np.int32)
    b32 = feeds["b"].astype(np.int32) - feeds["zb"].astype(np.int32)
    assert_allclose_for_dtype(compile_and_run(model, feeds), [a32 @ b32])
    text = emitted_text(model)
    # the 8-bit product runs as an exact float32 GEMM (builders.exact_integer_product)
    assert "(tensor<2x3x4xf32>, tensor<2x4x5xf32>) -> tensor<2x3x5xf32>" in text and "HIGHEST" in text


def test_matmul_integer_matches_onnxruntime(rng):
    text = MATMUL_INTEGER_MODEL.format(
        a_ty="uint8", b_ty="uint8", m=2, zp_decl=", uint8 za, uint8 zb", zp_use=", za, zb"
    )
    model = parse_with_scalars(text, ("za", "zb"))
    feeds = {
        "a": rng.integers(0, 256, (2, 4)).astype(np.uint8),
        "b": rng.integers(0, 256, (4, 3)).astype(np.uint8),
        "za": np.array(12, np.uint8),
        "zb": np.array(200, np.uint8),
    }
    assert_allclose_for_dtype(compile_and_run(model, feeds), oracle_run(model, feeds))


QLINEAR_MATMUL_MODEL = """<ir_version: 9, opset_import: ["" : {opset}]>
g ({ty}[2, 2, 4] a, float a_scale, {ty} a_zp, {ty}[4, 3] b, float b_scale, {ty} b_zp, float y_scale, {ty} y_zp)
  => ({ty}[2, 2, 3] y) {{
  y = QLinearMatMul (a, a_scale, a_zp, b, b_scale, b_zp, y_scale, y_zp)
}}"""


@pytest.mark.parametrize("ty", ["uint8", "int8"])
@pytest.mark.parametrize("opset", [10, 21])
def test_qlinear_matmul_matches_onnxruntime(ty, opset, rng):
    text = QLINEAR_MATMUL_MODEL.format(ty=ty, opset=opset)
    model = parse_with_scalars(text, ("a_scale", "a_zp", "b_scale", "b_zp", "y_scale", "y_zp"))
    low, high = (0, 256) if ty == "uint8" else (-128, 128)
    feeds = {
        "a": rng.integers(low, high, (2, 2, 4)).astype(ty),
        "a_scale": np.array(0.02, np.float32),
        "a_zp": np.array(3, ty),
        "b": rng.integers(low, high, (4, 3)).astype(ty),
        "b_scale": np.array(0.05, np.float32),
        "b_zp": np.array(-2 if ty == "int8" else 7, ty),
        "y_scale": np.array(0.4, np.float32),
        "y_zp": np.array(5, ty),
    }
    actual = compile_and_run(model, feeds)[0]
    expected = oracle_run(model, feeds)[0]
    assert actual.dtype == expected.dtype
    # Requantization rounds a float product: onnxruntime may differ by one step at .5 ties.
    assert np.max(np.abs(actual.astype(np.int32) - expected.astype(np.int32))) <= 1
    np.testing.assert_array_equal(actual, reference_run(model, feeds)[0])


# Gemm, Einsum ------------------------------------------------------------------------------------


@pytest.mark.parametrize("trans_a, trans_b", [(0, 0), (1, 0), (0, 1), (1, 1)])
def test_gemm_symbolic_dims(trans_a, trans_b, rng):
    def feeds(m, k, n):
        a = standard_normal(rng, *((k, m) if trans_a else (m, k)))
        b = standard_normal(rng, *((n, k) if trans_b else (k, n)))
        return {"a": a, "b": b, "c": standard_normal(rng, n)}

    a_type = "float[K, M]" if trans_a else "float[M, K]"
    b_type = "float[N, K]" if trans_b else "float[K, N]"
    check_symbolic(
        13,
        f"g ({a_type} a, {b_type} b, float[N] c) => (float[M, N] y) {{\n"
        f"  y = Gemm <alpha = 0.5, beta = 2.0, transA = {trans_a}, transB = {trans_b}> (a, b, c)\n"
        "}",
        feeds,
        [(2, 3, 4), (5, 1, 3)],
    )


def test_gemm_scalar_bias_static_weight(rng):
    def feeds(m):
        return {"a": standard_normal(rng, m, 3), "c": standard_normal(rng, 1, 1)}

    check_symbolic(
        13,
        "g (float[M, 3] a, float[1, 1] c) => (float[M, 2] y) <float[3, 2] b = {1, 2, 3, 4, 5, 6}> {\n"
        "  y = Gemm (a, b, c)\n"
        "}",
        feeds,
        [(2,), (7,)],
    )


@pytest.mark.parametrize(
    "equation, inputs, output, shapes_of",
    [
        ("bij,bjk->bik", "float[B, I, J] x, float[B, J, K] z", "float[B, I, K]",
         lambda n, m: [(2, n, m), (2, m, 3)]),
        ("ii->i", "float[N, N] x", "float[N]", lambda n, m: [(n, n)]),
        ("...ij->...ji", "float[B, I, J] x", "float[B, J, I]", lambda n, m: [(2, n, m)]),
        ("ij->", "float[I, J] x", "float", lambda n, m: [(n, m)]),
        ("i,i", "float[I] x, float[I] z", "float", lambda n, m: [(n,), (n,)]),
        ("bij,jk->bk", "float[B, I, J] x, float[J, K] z", "float[B, K]", lambda n, m: [(n, 3, m), (m, 2)]),
    ],
)
def test_einsum_symbolic_dims(equation, inputs, output, shapes_of, rng):
    names = re.findall(r"\]\s+(\w+)", inputs)

    def feeds(n, m):
        return {name: standard_normal(rng, *shape) for name, shape in zip(names, shapes_of(n, m))}

    check_symbolic(
        12,
        f'g ({inputs}) => ({output} y) {{\n  y = Einsum <equation = "{equation}"> ({", ".join(names)})\n}}',
        feeds,
        [(3, 4), (5, 2)],
    )


@pytest.fixture(params=["integer-dots", "float32-gemm"])
def integer_dots(request, monkeypatch):
    """Both forms of an 8-bit product, compiled and run on CPU: int8 dot_generals (what
    CompiledModel emits for CPU) and the exact float32 GEMM (every other platform)."""
    if request.param == "float32-gemm":
        original = CompileOptions.import_options
        monkeypatch.setattr(CompileOptions, "import_options", lambda self, platform: {**original(self, platform), "integer_dots": False})
    return request.param == "integer-dots"


@pytest.mark.parametrize(
    ("a_ty", "b_ty", "k"),
    [("uint8", "int8", 514), ("uint8", "int8", 1536), ("uint8", "int8", 1031), ("uint8", "uint8", 300),
     ("int8", "int8", 2100), ("int8", "uint8", 700)],
    ids=["u8-i8-one-chunk", "u8-i8-3-chunks", "u8-i8-padded", "u8-u8-2-chunks", "i8-i8-3-chunks", "i8-u8"],
)
def test_matmul_integer_float32_product_is_exact_at_the_extremes(a_ty, b_ty, k, rng, integer_dots):
    """builders.exact_integer_product: every row and column at the largest magnitudes (255 x -128)
    sums past 2^24 for a long K; the float32 chunks keep each partial sum exact, so the int32
    result equals numpy's integer product bit for bit. The int8 dot_general of uint8 operands
    shifted to int8 (``integer_dots``) must give the same bits."""
    lo = {"uint8": 0, "int8": -128}
    hi = {"uint8": 255, "int8": 127}
    model = parse(
        f"""<ir_version: 9, opset_import: ["" : 10]>
g ({a_ty}[2, 3, {k}] a, {b_ty}[{k}, 5] b) => (int32[2, 3, 5] y) {{
  y = MatMulInteger (a, b)
}}"""
    )
    a = rng.integers(lo[a_ty], hi[a_ty] + 1, (2, 3, k)).astype(a_ty)
    b = rng.integers(lo[b_ty], hi[b_ty] + 1, (k, 5)).astype(b_ty)
    extreme = {"uint8": 255, "int8": -127}  # odd products: their sums past 2^24 round in float32
    a[0, 0] = extreme[a_ty]  # the (nearly) largest-magnitude row and column
    b[:, 0] = extreme[b_ty]
    want = a.astype(np.int64) @ b.astype(np.int64)
    assert abs(int(want[0, 0, 0])) == k * abs(extreme[a_ty] * extreme[b_ty])
    (got,) = compile_and_run(model, {"a": a, "b": b})
    np.testing.assert_array_equal(got, want.astype(np.int32))


@pytest.mark.parametrize("zero_points", ["none", "scalar", "per-row-and-column"])
def test_matmul_integer_on_cpu_is_an_int8_dot(zero_points, rng, integer_dots):
    """On CPU a uint8 x uint8 MatMulInteger becomes an int8 x int8 -> int32 dot_general of the
    operands with their top bit flipped (zero points moved by 128); the result equals numpy's."""
    declared = {"none": "", "scalar": ", uint8 za, uint8 zb", "per-row-and-column": ", uint8[6] za, uint8[5] zb"}[zero_points]
    used = "" if zero_points == "none" else ", za, zb"
    model = parse(
        f"""<ir_version: 9, opset_import: ["" : 10]>
g (uint8[2, 6, 40] a, uint8[40, 5] b{declared}) => (int32[2, 6, 5] y) {{
  y = MatMulInteger (a, b{used})
}}"""
    )
    feeds = {"a": rng.integers(0, 256, (2, 6, 40)).astype(np.uint8), "b": rng.integers(0, 256, (40, 5)).astype(np.uint8)}
    feeds["a"][0, 0], feeds["b"][:, 0] = 255, 255
    a64, b64 = feeds["a"].astype(np.int64), feeds["b"].astype(np.int64)
    if zero_points != "none":
        shapes = {"scalar": ((), ()), "per-row-and-column": ((6,), (5,))}[zero_points]
        feeds["za"] = rng.integers(0, 256, shapes[0]).astype(np.uint8)
        feeds["zb"] = rng.integers(0, 256, shapes[1]).astype(np.uint8)
        za = feeds["za"].astype(np.int64)
        a64 = a64 - (za[:, None] if za.ndim else za)
        b64 = b64 - feeds["zb"].astype(np.int64)
    compiled = onnx_stablehlo.compile(model)
    np.testing.assert_array_equal(compiled.run(feeds)[0], (a64 @ b64).astype(np.int32))
    dots = [line for line in compiled.executables.last.artifact.text.splitlines() if "dot_general" in line]
    if integer_dots:
        assert len(dots) == 1 and "tensor<40x5xi8>) -> tensor<2x6x5xi32>" in dots[0], dots
        assert "stablehlo.xor" in compiled.executables.last.artifact.text
    else:
        assert len(dots) == 1 and "xf32>" in dots[0], dots


def test_matmul_integer_chunks_hold_on_symbolic_rows(rng):
    """A dynamic-shape artifact (symbolic batch and sequence, K = 1536 as MiniLM's FFN output
    projection): the K chunks divide K, so the float32 path needs no padding of symbolic rows."""
    model = parse(
        """<ir_version: 9, opset_import: ["" : 10]>
g (uint8[B, S, 1536] a, int8[1536, 7] b) => (int32[B, S, 7] y) {
  y = MatMulInteger (a, b)
}"""
    )
    dots = [line.split(" : (")[-1] for line in onnx_stablehlo.lower(model).text.splitlines() if "dot_general" in line]
    assert dots == ["tensor<?x?x3x512xf32>, tensor<3x512x7xf32>) -> tensor<3x?x?x7xf32>"]
    compiled = onnx_stablehlo.compile(model)
    assert compiled.artifact is not None, compiled.dynamic_error
    for shape in [(1, 3), (2, 5)]:
        a = rng.integers(0, 256, (*shape, 1536)).astype(np.uint8)
        a[..., 0, :] = 255
        b = rng.integers(-128, 128, (1536, 7)).astype(np.int8)
        b[:, 0] = -127
        (got,) = compiled.run({"a": a, "b": b})
        np.testing.assert_array_equal(got, a.astype(np.int64) @ b.astype(np.int64))
    assert compiled.compile_count == 2
