"""Parity of the sorting family (frontend/lowering/sorting.py: TopK) against onnxruntime.

TopK data flows through graph inputs (with many ties, which the spec orders by index); K is a
Constant node.

Symbolic-dim tests (``check_symbolic``) compile one model with its ``dim_param`` dims kept as
``?``, keep that artifact through runs at two shapes, and compare each run with the oracle.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import onnx_stablehlo
from onnx_stablehlo.errors import ShapeError
from tests.util import (assert_allclose_for_dtype, check_symbolic, compile_and_run, dims_text, emitted_text,
                        onnx_type_name, oracle_run, parse, reference_run, standard_normal)


def _ir_version(opset: int) -> int:
    return 9 if opset <= 20 else 10 if opset <= 23 else 11


def _tied(shape, dtype, rng: np.random.Generator) -> np.ndarray:
    """Values from a small range, so most rows hold ties."""
    if np.issubdtype(dtype, np.unsignedinteger):
        return rng.integers(0, 6, shape).astype(dtype)
    return rng.integers(-3, 3, shape).astype(dtype)


# TopK ----------------------------------------------------------------------------------------


def top_k_model(opset, dtype, shape, k, axis, largest=None, sort=None):
    ty = onnx_type_name(dtype)
    out = list(shape)
    out[axis] = k
    attrs = [f"axis = {axis}"]
    if largest is not None:
        attrs.append(f"largest = {largest}")
    if sort is not None:
        attrs.append(f"sorted = {sort}")
    if opset < 10:
        body = f"v, i = TopK <{', '.join(attrs + [f'k = {k}'])}> (x)"
    else:
        body = f"k = Constant <value = int64[1] {{{k}}}> ()\n  v, i = TopK <{', '.join(attrs)}> (x, k)"
    return parse(f"""<ir_version: {_ir_version(opset)}, opset_import: ["" : {opset}]>
g ({ty}[{dims_text(shape)}] x) => ({ty}[{dims_text(out)}] v, int64[{dims_text(out)}] i) {{
  {body}
}}""")


# (shape, k, axis)
TOP_K_SHAPES = [((3, 7), 3, 1), ((3, 7), 7, -1), ((5, 4, 6), 2, 0), ((2, 9, 3), 1, 1), ((4, 5), 0, 1)]
TOP_K_SHAPE_IDS = ["last-axis", "whole-axis", "axis0", "k1", "k0"]


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.float64], ids=["f32", "f16", "f64"])
@pytest.mark.parametrize("opset", [1, 10], ids=lambda v: f"opset{v}")
@pytest.mark.parametrize("case", TOP_K_SHAPES, ids=TOP_K_SHAPE_IDS)
def test_top_k_largest_matches_onnxruntime(case, opset, dtype, rng):
    shape, k, axis = case
    if opset == 1 and k == 0:
        pytest.skip("onnxruntime rejects k=0 in TopK-1's shape inference")
    model = top_k_model(opset, dtype, shape, k, axis)
    feeds = {"x": _tied(shape, dtype, rng)}
    # onnxruntime cannot load TopK-1 on float16 (its inserted Cast uses a newer attribute type).
    oracle = reference_run if opset == 1 and dtype == np.float16 else oracle_run
    assert_allclose_for_dtype(compile_and_run(model, feeds), oracle(model, feeds))


TOP_K_DTYPES = [np.float32, np.float64, np.int32, np.int64, np.uint8, np.int8, np.uint64, np.int16, np.uint16]


@pytest.mark.parametrize("largest", [1, 0], ids=["largest", "smallest"])
@pytest.mark.parametrize("dtype", TOP_K_DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("opset", [11, 24], ids=lambda v: f"opset{v}")
@pytest.mark.parametrize("case", TOP_K_SHAPES[:4], ids=TOP_K_SHAPE_IDS[:4])
def test_top_k_matches_onnxruntime(case, opset, dtype, largest, rng):
    shape, k, axis = case
    model = top_k_model(opset, dtype, shape, k, axis, largest=largest, sort=1)
    feeds = {"x": _tied(shape, dtype, rng)}
    assert_allclose_for_dtype(compile_and_run(model, feeds), oracle_run(model, feeds))


def test_top_k_bfloat16_matches_reference(rng):
    model = top_k_model(24, ml_dtypes.bfloat16, (4, 9), 4, 1, largest=1)
    feeds = {"x": _tied((4, 9), ml_dtypes.bfloat16, rng)}
    assert_allclose_for_dtype(compile_and_run(model, feeds), reference_run(model, feeds))


@pytest.mark.parametrize("largest", [1, 0], ids=["largest", "smallest"])
def test_top_k_orders_nan_as_numpy_sort_does(largest):
    """NaN ranks above every number (first when largest, last when smallest); NaNs tie."""
    model = top_k_model(11, np.float32, (1, 6), 6, 1, largest=largest)
    x = np.array([[1.0, np.nan, -2.0, np.nan, 1.0, np.inf]], np.float32)
    values, indices = compile_and_run(model, {"x": x})
    order = [1, 3, 5, 0, 4, 2] if largest else [2, 0, 4, 5, 1, 3]
    np.testing.assert_array_equal(indices, [order])
    np.testing.assert_array_equal(values, x[:, order])


def test_top_k_is_a_sort_with_an_index_operand():
    # float64 with k past _MAX_ROUNDS (a smaller k selects in rounds: see the test below)
    text = emitted_text(top_k_model(11, np.float64, (3, 40), 17, 1))
    assert '"stablehlo.sort"' in text and "stablehlo.iota" in text
    assert "stablehlo.slice" in text and "chlo.top_k" not in text


@pytest.mark.parametrize("largest", [1, 0], ids=["largest", "smallest"])
@pytest.mark.parametrize("axis", [1, 0], ids=["last-axis", "axis0"])
@pytest.mark.parametrize("dtype", [np.int64, np.uint64, np.float64], ids=["i64", "u64", "f64"])
def test_top_k_of_64_bit_types_selects_in_rounds_of_reductions(dtype, axis, largest, rng):
    """_top_k_rounds (static, k <= 16): no sort, and onnxruntime's values and indices on the
    type's extremes, ties, NaN and signed zeros."""
    if dtype == np.float64:
        special = np.array([np.nan, -0.0, 0.0, np.inf, -np.inf, 1e308, -1e308, 5e-324, np.nan, 0.0, -0.0])
    else:
        info = np.iinfo(dtype)
        special = np.array([info.min, info.max, 0, 1, info.max, info.min, 2, 1, 0], dtype)
    row = np.concatenate([special.astype(dtype), _tied(20, dtype, rng)])
    x = np.stack([row, rng.permutation(row), row[::-1]], axis=0)
    if axis == 0:
        x = np.ascontiguousarray(x.T)
    model = top_k_model(11, dtype, x.shape, 9, axis, largest=largest)
    text = emitted_text(model)
    assert '"stablehlo.sort"' not in text and "stablehlo.reduce" in text
    values, indices = compile_and_run(model, {"x": x})
    expected_values, expected_indices = oracle_run(model, {"x": x})
    np.testing.assert_array_equal(indices, expected_indices)
    np.testing.assert_array_equal(values, expected_values)  # -0.0 == 0.0 here (see the rule's deviation)


@pytest.mark.parametrize("largest", [1, 0], ids=["largest", "smallest"])
@pytest.mark.parametrize("values", ["within-2^24", "around-2^24", "full-range"])
@pytest.mark.parametrize("dtype", [np.int32, np.uint32, np.int64, np.uint64], ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("shape, k, axis", [((4, 300), 10, 1), ((40, 3), 5, 0)], ids=["last-axis", "axis0"])
def test_top_k_of_wide_integers_selects_as_float32_when_every_value_fits(shape, k, axis, dtype, values, largest, rng):
    """_top_k_if_float32_exact: a stablehlo.if on every value lying within +-2^24 picks XLA's
    TopK on float32 (exact there), else the packed-key sort (32-bit) or the rounds (64-bit); the
    oracle's values and indices either way, ties and the range's edges included."""
    info = np.iinfo(dtype)
    if values == "within-2^24":
        low = 0 if info.min == 0 else -(1 << 24)
        x = rng.integers(low, (1 << 24) + 1, shape).astype(dtype)
        x.reshape(-1)[::7] = 1 << 24  # the edge itself is exact in float32
        x.reshape(-1)[1::9] = low
    elif values == "around-2^24":  # neighbours float32 rounds together: the fallback must take them
        x = rng.integers((1 << 24) - 8, (1 << 24) + 9, shape).astype(dtype)
    else:
        x = rng.integers(info.min, int(info.max) + 1, shape, dtype=dtype)
        x.reshape(-1)[::7] = info.max
        x.reshape(-1)[1::9] = (1 << 24) + 1  # the first value float32 does not hold
    x.reshape(-1)[2::5] = x.reshape(-1)[3::5][: x.reshape(-1)[2::5].size]  # ties
    model = top_k_model(11, dtype, shape, k, axis, largest=largest)
    text = emitted_text(model)
    assert "stablehlo.if" in text and "chlo.top_k" in text
    values_out, indices = compile_and_run(model, {"x": x})
    expected_values, expected_indices = oracle_run(model, {"x": x})
    np.testing.assert_array_equal(indices, expected_indices)
    np.testing.assert_array_equal(values_out, expected_values)


def test_top_k_of_static_float32_is_a_selection_and_symbolic_is_a_sort():
    # (A k of at least half the axis is a packed-key sort instead: see the test below.)
    text = emitted_text(top_k_model(11, np.float32, (9, 7), 3, 0))
    assert "chlo.top_k" in text and '"stablehlo.sort"' not in text
    text = emitted_text(top_k_model(11, np.int8, (9, 7), 3, 0))  # float32 holds every int8
    assert "chlo.top_k" in text and '"stablehlo.sort"' not in text
    text = emitted_text(top_k_model(11, np.int32, (3, 7), 3, 0))  # it does not hold every int32
    assert "chlo.top_k" not in text and '"stablehlo.sort"' in text
    # k >= 64 below a fifth of the axis: XLA's TopK (1.6x faster than the sort at 64x1000 k=100)
    text = emitted_text(top_k_model(11, np.float32, (2, 1000), 100, 1))
    assert "chlo.top_k" in text and '"stablehlo.sort"' not in text
    text = emitted_text(top_k_model(11, np.float32, (2, 1000), 200, 1))  # a fifth: the packed sort
    assert "chlo.top_k" not in text and '"stablehlo.sort"' in text
    symbolic = parse("""<ir_version: 9, opset_import: ["" : 11]>
g (float[n, 7] x) => (float[n, 3] v, int64[n, 3] i) {
  k = Constant <value = int64[1] {3}> ()
  v, i = TopK (x, k)
}""")
    text = onnx_stablehlo.lower(symbolic).text
    assert '"stablehlo.sort"' in text and "chlo.top_k" not in text


@pytest.mark.parametrize("largest", [1, 0], ids=["largest", "smallest"])
@pytest.mark.parametrize("shape, k, axis", [((2, 1000), 100, 1), ((640, 3), 100, 0), ((2, 4096), 600, 1)],
                         ids=["64x1000-k100-like", "axis0", "8x4096-k600-like"])
def test_top_k_large_k_below_a_fifth_selects_like_onnxruntime(shape, k, axis, largest, rng):
    """A k of 64 or more below a fifth of the axis takes XLA's TopK: ties, infinities and the
    index order of equal values as onnxruntime has them."""
    x = (rng.standard_normal(shape) * 10).round().astype(np.float32)  # many ties
    x.reshape(-1)[::97] = np.inf
    x.reshape(-1)[1::89] = -np.inf
    model = top_k_model(11, np.float32, shape, k, axis, largest=largest)
    assert "chlo.top_k" in emitted_text(model)
    values, indices = compile_and_run(model, {"x": x})
    expected_values, expected_indices = oracle_run(model, {"x": x})
    np.testing.assert_array_equal(indices, expected_indices)
    np.testing.assert_array_equal(values, expected_values)


@pytest.mark.parametrize("largest", [1, 0], ids=["largest", "smallest"])
@pytest.mark.parametrize("axis", [1, 0], ids=["last-axis", "axis0"])
def test_top_k_selection_orders_signed_zeros_and_nans_like_onnxruntime(largest, axis):
    """XLA's TopK uses IEEE total order (-NaN lowest, -0 < 0); the lowering canonicalizes both."""
    row = np.array([1.0, np.nan, -0.0, 0.0, 1.0, -np.nan, np.inf, -np.inf, 0.0, -0.0, 2.0], np.float32)
    x = row[None, :] if axis == 1 else row[:, None]
    model = top_k_model(11, np.float32, x.shape, 7, axis, largest=largest)
    values, indices = compile_and_run(model, {"x": x})
    expected_values, expected_indices = oracle_run(model, {"x": x})
    np.testing.assert_array_equal(indices, expected_indices)
    np.testing.assert_array_equal(values, expected_values)  # -0.0 == 0.0 here (see the rule's deviation)


@pytest.mark.parametrize(
    "shape, k, axis", [((3, 7), 3, 0), ((4, 9), 9, 1), ((2, 300), 64, 1)], ids=["half", "argsort", "k64-fifth"]
)
def test_top_k_large_k_is_one_sort_of_packed_uint64_keys(shape, k, axis):
    text = emitted_text(top_k_model(11, np.float32, shape, k, axis))
    assert "chlo.top_k" not in text and text.count('"stablehlo.sort"') == 1
    assert f"stablehlo.iota dim = {axis} : tensor<{'x'.join(map(str, shape))}xui64>" in text
    assert "stablehlo.bitcast_convert" in text


PACKED_DTYPES = [np.float32, np.float16, ml_dtypes.bfloat16, np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32]


@pytest.mark.parametrize("largest", [1, 0], ids=["largest", "smallest"])
@pytest.mark.parametrize("dtype", PACKED_DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("shape, k, axis", [((3, 20, 50), 50, -1), ((40, 3), 20, 0), ((2, 300), 64, 1)],
                         ids=["argsort", "half-axis0", "k64-fifth"])
def test_top_k_packed_sort_matches_onnxruntime_on_full_range_values(shape, k, axis, dtype, largest, rng):
    """Distinct and tied values across the whole range (negatives, +-inf for floats)."""
    if np.issubdtype(dtype, np.integer):
        info = np.iinfo(dtype)
        x = rng.integers(info.min, int(info.max) + 1, shape).astype(dtype)
        x.reshape(-1)[::7] = info.min
        x.reshape(-1)[1::11] = info.max
    else:
        x = (rng.standard_normal(shape) * 100).astype(dtype)
        x.reshape(-1)[::13] = np.inf
        x.reshape(-1)[1::17] = -np.inf
        x.reshape(-1)[2::5] = x.reshape(-1)[3::5][: x.reshape(-1)[2::5].size]  # ties
    model = top_k_model(24, dtype, shape, k, axis, largest=largest, sort=1)
    oracle = reference_run if dtype == ml_dtypes.bfloat16 else oracle_run
    values, indices = compile_and_run(model, {"x": x})
    expected_values, expected_indices = oracle(model, {"x": x})
    np.testing.assert_array_equal(indices, expected_indices)
    np.testing.assert_array_equal(values, expected_values)


def test_top_k_rejects_k_beyond_the_axis():
    with pytest.raises(ShapeError, match=r"k=8 is out of range \[0, 7\]"):
        emitted_text(top_k_model(11, np.float32, (3, 7), 8, 1))


def test_top_k_k_fed_at_run_time_is_value_specialized(rng):
    model = parse("""<ir_version: 9, opset_import: ["" : 11]>
g (float[3, 7] x, int64[1] k) => (float[3, ?] v, int64[3, ?] i) {
  v, i = TopK (x, k)
}""")
    feeds = {"x": _tied((3, 7), np.float32, rng), "k": np.array([4], np.int64)}
    assert_allclose_for_dtype(compile_and_run(model, feeds), oracle_run(model, feeds))


# TopK --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("largest", [0, 1])
@pytest.mark.parametrize("axis", [1, -1, 0])
def test_top_k_constant_k_symbolic_axis(largest, axis, rng):
    def feeds(a, b):
        # few distinct values, so ties (lower index first) happen
        return {"x": rng.integers(0, 5, (a, b)).astype(np.float32)}

    out = "[3, B]" if axis == 0 else "[A, 3]"
    check_symbolic(
        11,
        f"g (float[A, B] x) => (float{out} v, int64{out} i) <int64[1] k = {{3}}> {{\n"
        f"  v, i = TopK <axis = {axis}, largest = {largest}> (x, k)\n"
        "}",
        feeds,
        [(4, 5), (6, 3)],
    )


def test_top_k_attribute_revision(rng):
    def feeds(a, b):
        return {"x": standard_normal(rng, a, b)}

    check_symbolic(
        1,
        "g (float[A, B] x) => (float[A, 2] v, int64[A, 2] i) {\n  v, i = TopK <k = 2> (x)\n}",
        feeds,
        [(2, 4), (5, 3)],
    )
