"""Parity of the pooling family (frontend/lowering/pool.py: AveragePool, MaxPool, LpPool, the
Global* pools, MaxUnpool) against onnxruntime.

onnxruntime is the oracle; onnx.reference stands in for MaxUnpool with an ``output_shape``, where
the lowering follows onnx.reference and the ONNX backend test rather than onnxruntime. SAME
padding of dilated pooling windows, where onnxruntime departs from the spec, is avoided.

Symbolic-dim tests (``check_symbolic``) compile one model with its ``dim_param`` dims kept as
``?``, keep that artifact through runs at two shapes, and compare each run with the oracle.
"""

from __future__ import annotations

import numpy as np
import pytest

import onnx_stablehlo
from onnx_stablehlo.errors import ShapeError, UnsupportedAttributeError, UnsupportedDtypeError
from onnx_stablehlo.frontend.builders import windows
from tests.util import (FLOATS, FLOAT_IDS, assert_allclose_for_dtype, attrs_text as _attrs,
                        check_bfloat16_matches_float32, check_node, check_symbolic, check_symbolic_nchw,
                        compile_and_run, emitted_text, int_array, node_model_text, normal_feeds, onnx_type_name,
                        ort_run, parse, reference_run, typed)

# --------------------------------------------------------------------------------------------
# MaxUnpool


@pytest.mark.parametrize("opset", [9, 11, 22])
@pytest.mark.parametrize(
    "x_shape,attributes",
    [((1, 2, 4, 6), {"kernel_shape": [2, 2], "strides": [2, 2]}),
     ((2, 1, 5, 5), {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]}),
     ((1, 3, 9), {"kernel_shape": [3], "strides": [3]})],
    ids=["2x2", "3x3-pads", "1d"],
)
def test_max_unpool_inverts_max_pool_like_onnxruntime(x_shape, attributes, opset, rng):
    rank = len(x_shape) - 2
    kernel, strides = attributes["kernel_shape"], attributes["strides"]
    pads = attributes.get("pads", [0] * 2 * rank)
    pooled = [(x_shape[2 + i] + pads[i] + pads[rank + i] - kernel[i]) // strides[i] + 1 for i in range(rank)]
    unpooled = [(pooled[i] - 1) * strides[i] - pads[i] - pads[rank + i] + kernel[i] for i in range(rank)]
    text = f"""<ir_version: 9, opset_import: ["" : {opset}]>
g ({typed("x", np.float32, x_shape)}) => ({typed("y", np.float32, (*x_shape[:2], *unpooled))}) {{
  [pool] p, i = MaxPool {_attrs(attributes)} (x)
  [unpool] y = MaxUnpool {_attrs(attributes)} (p, i)
}}"""
    model = parse(text)
    feeds = {"x": rng.standard_normal(x_shape).astype(np.float32)}
    assert_allclose_for_dtype(compile_and_run(model, feeds), ort_run(model, feeds))
    assert '"stablehlo.scatter"' in emitted_text(model)


def test_max_unpool_output_shape_pads_like_reference(rng):
    """With output_shape, I indexes the inferred shape (onnx.reference, the ONNX backend test)."""
    text = f"""<ir_version: 9, opset_import: ["" : 22]>
g (float[1, 2, 2, 3] x, int64[1, 2, 2, 3] i) => (float[1, 2, 5, 7] y) <int64[4] shape = {{1, 2, 5, 7}}> {{
  [unpool] y = MaxUnpool <kernel_shape = [2, 2], strides = [2, 2]> (x, i, shape)
}}"""
    model = parse(text)
    indices = np.stack([rng.choice(24, 6, replace=False) + plane * 24 for plane in range(2)])  # 4x6 planes
    feeds = {"x": rng.standard_normal((1, 2, 2, 3)).astype(np.float32),
             "i": indices.reshape(1, 2, 2, 3).astype(np.int64)}
    assert_allclose_for_dtype(compile_and_run(model, feeds), reference_run(model, feeds))


# MaxPool --------------------------------------------------------------------------------------

POOL_CASES = {
    "1d": ((1, 2, 9), {"kernel_shape": [3]}),
    "2d": ((1, 2, 6, 7), {"kernel_shape": [2, 3]}),
    "2d-strides-pads": ((2, 1, 7, 7), {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 0, 2, 1]}),
    "2d-ceil": ((1, 2, 7, 8), {"kernel_shape": [3, 3], "strides": [2, 3], "ceil_mode": 1}),
    "2d-ceil-pads": ((1, 1, 6, 6), {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1], "ceil_mode": 1}),
    "2d-dilations": ((1, 1, 9, 8), {"kernel_shape": [2, 3], "dilations": [3, 2], "pads": [1, 1, 1, 1]}),
    "2d-same-upper": ((1, 2, 7, 8), {"kernel_shape": [3, 2], "strides": [2, 3], "auto_pad": "SAME_UPPER"}),
    "2d-same-lower": ((1, 2, 7, 8), {"kernel_shape": [2, 3], "strides": [2, 2], "auto_pad": "SAME_LOWER"}),
    "2d-valid": ((1, 2, 7, 8), {"kernel_shape": [3, 3], "strides": [2, 2], "auto_pad": "VALID"}),
    "3d": ((1, 1, 5, 6, 4), {"kernel_shape": [2, 3, 2], "strides": [2, 1, 2], "pads": [0, 1, 1, 1, 0, 0]}),
}


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.float64, np.int8, np.uint8],
                         ids=["f32", "f16", "f64", "i8", "u8"])
@pytest.mark.parametrize("case", list(POOL_CASES), ids=list(POOL_CASES))
def test_max_pool_matches_onnxruntime(case, dtype, rng):
    shape, attributes = POOL_CASES[case]
    x = int_array(rng, shape, dtype) if np.dtype(dtype).kind in "iu" else rng.standard_normal(shape).astype(dtype)
    text = check_node("MaxPool", 22, [("x", x)], attributes)
    # onnxruntime's MLAS path (float32/float16 without dilation) and integers: a maximum of
    # strided slices (windows.max_by_slices); float64 and dilated windows: reduce_window.
    sliced = np.dtype(dtype) != np.float64 and "dilations" not in attributes
    assert ("stablehlo.reduce_window" in text) != sliced and "stablehlo.maximum" in text


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int8, np.uint8], ids=["f32", "f16", "i8", "u8"])
@pytest.mark.parametrize("case", [c for c in POOL_CASES if c != "2d-dilations"])
def test_max_pool_slices_equal_reduce_window(case, dtype, rng, monkeypatch):
    """windows.max_by_slices (a maximum of strided slices, one axis after the other) gives the
    reduce_window lowering's bits, NaN and infinities included: NaN is left out and a window of
    NaNs or -infs gives the start value (float32: the lowest finite, as MLAS)."""
    shape, attributes = POOL_CASES[case]
    if np.dtype(dtype).kind in "iu":
        x = int_array(rng, shape, dtype)
    else:
        x = (rng.standard_normal(shape) * 3).astype(dtype)
        flat = x.reshape(-1)
        flat[rng.random(flat.size) < 0.2] = np.nan
        flat[rng.random(flat.size) < 0.1] = -np.inf
        flat[rng.random(flat.size) < 0.05] = np.inf
        flat[: shape[-1]] = np.nan  # a row of NaNs
        flat[shape[-1] : 2 * shape[-1]] = -np.inf  # a row of -infs
    out = [f"d{i}" for i in range(len(shape))]
    model = parse(node_model_text("MaxPool", 22, [("x", dtype, shape)], ("y", dtype, out), attributes))
    sliced = onnx_stablehlo.compile(model).run({"x": x})[0]
    monkeypatch.setattr(windows, "SLICED_MAX_MAX_TAPS", 0)
    windowed = onnx_stablehlo.compile(model).run({"x": x})[0]
    np.testing.assert_array_equal(sliced, windowed)


@pytest.mark.parametrize("storage_order", [0, 1], ids=["row-major", "column-major"])
@pytest.mark.parametrize("case", ["2d-strides-pads", "2d-ceil", "2d-dilations", "3d", "1d"])
def test_max_pool_indices_match_onnxruntime(case, storage_order, rng):
    shape, attributes = POOL_CASES[case]
    x = rng.standard_normal((2, *shape[1:])).astype(np.float32)
    check_node("MaxPool", 22, [("x", x)], {**attributes, "storage_order": storage_order}, outputs=2)


@pytest.mark.parametrize("auto_pad", ["SAME_UPPER", "SAME_LOWER"])
def test_max_pool_same_with_stride_above_kernel_matches_onnxruntime(auto_pad, rng):
    # The SAME padding is negative: the first window starts inside the input. (onnxruntime's
    # kernel without Indices rejects negative padding, so the case asks for Indices.)
    x = rng.standard_normal((1, 2, 6, 7)).astype(np.float32)
    check_node("MaxPool", 22, [("x", x)], {"kernel_shape": [1, 2], "strides": [2, 3], "auto_pad": auto_pad}, outputs=2)


def test_max_pool_indices_prefer_the_first_of_ties(rng):
    x = np.round(rng.standard_normal((1, 2, 6, 6))).astype(np.float32)  # many equal values
    check_node("MaxPool", 12, [("x", x)], {"kernel_shape": [3, 3], "strides": [1, 2]}, outputs=2)


@pytest.mark.parametrize("opset", [7, 8, 10, 11, 12, 22])
def test_max_pool_each_revision_matches_onnxruntime(opset, rng):
    attributes = {"kernel_shape": [3, 2], "strides": [2, 1], "pads": [1, 0, 1, 1]}
    if opset >= 10:
        attributes["ceil_mode"] = 1
    x = rng.standard_normal((1, 2, 6, 7)).astype(np.float32)
    check_node("MaxPool", opset, [("x", x)], attributes, outputs=2 if opset >= 8 else 1)


def test_max_pool_rejects_kernel_shape_of_wrong_rank():
    model = parse(node_model_text("MaxPool", 22, [("x", "float", (1, 1, 4, 4))], [("y", "float", (1, 1, 3, 3))],
                         {"kernel_shape": [2]}))
    with pytest.raises(ShapeError, match="kernel_shape"):
        emitted_text(model)


# AveragePool, LpPool --------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.float64], ids=["f32", "f16", "f64"])
@pytest.mark.parametrize("count_include_pad", [0, 1], ids=["exclude-pad", "include-pad"])
@pytest.mark.parametrize("case", list(POOL_CASES), ids=list(POOL_CASES))
def test_average_pool_matches_onnxruntime(case, count_include_pad, dtype, rng):
    shape, attributes = POOL_CASES[case]
    x = rng.standard_normal(shape).astype(dtype)
    text = check_node("AveragePool", 22, [("x", x)], {**attributes, "count_include_pad": count_include_pad})
    assert "stablehlo.reduce_window" in text and "stablehlo.divide" in text


@pytest.mark.parametrize("opset", [7, 10, 11, 19, 22])
def test_average_pool_each_revision_matches_onnxruntime(opset, rng):
    attributes = {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 0], "count_include_pad": 1}
    if opset >= 10:
        attributes["ceil_mode"] = 1
    if opset >= 19:
        attributes["dilations"] = [1, 2]
    x = rng.standard_normal((1, 2, 7, 8)).astype(np.float32)
    check_node("AveragePool", opset, [("x", x)], attributes)


@pytest.mark.parametrize("p", [1, 2, 3])
@pytest.mark.parametrize("case", ["1d", "2d-strides-pads", "2d-same-lower", "3d"])
def test_lp_pool_matches_onnxruntime(case, p, rng):
    shape, attributes = POOL_CASES[case]
    x = rng.standard_normal(shape).astype(np.float32)
    check_node("LpPool", 22, [("x", x)], {**attributes, "p": p})


@pytest.mark.parametrize("opset", [7, 11, 18, 22])
def test_lp_pool_each_revision_matches_onnxruntime(opset, rng):
    attributes = {"kernel_shape": [2, 2], "strides": [2, 1], "p": 2}
    if opset >= 18:
        attributes.update(ceil_mode=1, dilations=[1, 2])
    x = rng.standard_normal((1, 2, 7, 6)).astype(np.float32)
    check_node("LpPool", opset, [("x", x)], attributes)


def test_lp_pool_rejects_p_zero():
    model = parse(node_model_text("LpPool", 18, [("x", "float", (1, 1, 4, 4))], [("y", "float", (1, 1, 3, 3))],
                         {"kernel_shape": [2, 2], "p": 0}))
    with pytest.raises(UnsupportedAttributeError, match="p=0"):
        emitted_text(model)


def test_average_pool_rejects_integer_input():
    model = parse(node_model_text("AveragePool", 22, [("x", "int8", (1, 1, 4, 4))], [("y", "int8", (1, 1, 3, 3))],
                         {"kernel_shape": [2, 2]}))
    with pytest.raises(UnsupportedDtypeError, match="INT8"):
        emitted_text(model)


# Global pooling -------------------------------------------------------------------------------


def _global_pool_numpy(op: str, x: np.ndarray, p: int) -> np.ndarray:
    """The definition, for dtypes and ops onnxruntime has no kernel for (and onnx.reference's
    GlobalMaxPool drops the spatial dims of 1-D inputs)."""
    axes = tuple(range(2, x.ndim))
    wide = x.astype(np.float64)
    if op == "GlobalAveragePool":
        result = wide.mean(axis=axes, keepdims=True)
    elif op == "GlobalMaxPool":
        result = wide.max(axis=axes, keepdims=True)
    else:
        result = (np.abs(wide) ** p).sum(axis=axes, keepdims=True) ** (1.0 / p)
    return result.astype(x.dtype)


@pytest.mark.parametrize("dtype", FLOATS, ids=FLOAT_IDS)
@pytest.mark.parametrize("op", ["GlobalAveragePool", "GlobalMaxPool", "GlobalLpPool"])
@pytest.mark.parametrize("shape", [(2, 3, 5), (1, 2, 4, 5), (1, 2, 3, 2, 4)], ids=["1d", "2d", "3d"])
@pytest.mark.parametrize("opset", [7, 22])
def test_global_pool_matches_onnxruntime(opset, shape, op, dtype, rng):
    from onnxruntime.capi.onnxruntime_pybind11_state import NotImplemented as OrtNotImplemented

    x = rng.standard_normal(shape).astype(dtype)
    p = 3 if op == "GlobalLpPool" and opset == 22 else 2
    attributes = {"p": p} if p != 2 else {}
    ty = onnx_type_name(dtype)
    out_shape = (*shape[:2], *([1] * (len(shape) - 2)))
    model = parse(node_model_text(op, opset, [("x", ty, shape)], [("y", ty, out_shape)], attributes))
    try:
        expected = ort_run(model, {"x": x})
    except OrtNotImplemented:
        expected = [_global_pool_numpy(op, x, p)]
    assert_allclose_for_dtype(compile_and_run(model, {"x": x}), expected)
    text = emitted_text(model)
    assert "stablehlo.reduce" in text and "reduce_window" not in text


def _pool_model(op: str, attrs: str) -> str:
    return f"""<ir_version: 9, opset_import: ["" : 19]>
g (float[N, 2, H, W] x) => (float[N, 2, P, Q] y) {{
  y = {op} <{attrs}> (x)
}}"""


_POOLS = [("MaxPool", 0), ("LpPool", 0), ("AveragePool", 0), ("AveragePool", 1)]  # (op, count_include_pad)


@pytest.mark.parametrize("op, include_pad", _POOLS)
@pytest.mark.parametrize("auto_pad", ["SAME_UPPER", "SAME_LOWER"])
def test_pool_same_with_stride_on_symbolic_dims(op, include_pad, auto_pad, rng):
    attrs = f'auto_pad = "{auto_pad}", kernel_shape = [3, 2], strides = [2, 2]'
    if op == "AveragePool":
        attrs += f", count_include_pad = {include_pad}"
    check_symbolic(None, _pool_model(op, attrs), normal_feeds("x"), [(1, 2, 7, 6), (2, 2, 10, 9)], rng, rtol=1e-5, atol=1e-5, oracle=ort_run)


@pytest.mark.parametrize("op, include_pad", [p for p in _POOLS if p[0] != "LpPool"])
@pytest.mark.parametrize("pads", [[0, 0, 0, 0], [1, 1, 0, 0]])
def test_pool_ceil_mode_with_stride_on_symbolic_dims(op, include_pad, pads, rng):
    attrs = f"kernel_shape = [3, 3], strides = [2, 2], ceil_mode = 1, pads = {pads}"
    if op == "AveragePool":
        attrs += f", count_include_pad = {include_pad}"
    check_symbolic(None, _pool_model(op, attrs), normal_feeds("x"), [(1, 2, 8, 7), (2, 2, 11, 10)], rng, rtol=1e-5, atol=1e-5, oracle=ort_run)


def test_pool_ceil_mode_that_may_drop_a_window_falls_back(rng):
    # end padding 2 + stride 2 > window 3: whether the last window is kept depends on the size
    model = parse(_pool_model("MaxPool", "kernel_shape = [3, 3], strides = [2, 2], ceil_mode = 1, pads = [0, 0, 2, 2]"))
    compiled = onnx_stablehlo.compile(model)
    assert compiled.artifact is None and "ceil_mode" in compiled.dynamic_error
    for shape in [(1, 2, 8, 7), (1, 2, 9, 9)]:
        feeds = normal_feeds("x")(rng, shape)
        assert_allclose_for_dtype(compiled.run(feeds), ort_run(model, feeds))


# Symbolic batch and spatial dims: one artifact, refined per input shape ----------------------

_SYMBOLIC_BODIES = {
    "maxpool_padded": 'y = MaxPool <kernel_shape = [5, 5], pads = [2, 2, 2, 2]> (x)',
    "maxpool_same": 'y = MaxPool <kernel_shape = [2, 2], auto_pad = "SAME_UPPER"> (x)',
    "maxpool_strided": 'y = MaxPool <kernel_shape = [3, 3], strides = [2, 2], pads = [1, 1, 1, 1]> (x)',
    "avgpool_exclude_pad": 'y = AveragePool <kernel_shape = [3, 3], strides = [2, 2], pads = [1, 1, 1, 1]> (x)',
    "avgpool_include_pad": (
        'y = AveragePool <kernel_shape = [3, 3], strides = [2, 2], pads = [1, 1, 1, 1], count_include_pad = 1> (x)'
    ),
    "global_average": "y = GlobalAveragePool (x)",
    "global_max": "y = GlobalMaxPool (x)",
}


@pytest.mark.parametrize("body", list(_SYMBOLIC_BODIES.values()), ids=list(_SYMBOLIC_BODIES))
def test_symbolic_batch_and_spatial_dims_lower_once(body, rng):
    check_symbolic_nchw(body, rng)


def test_symbolic_dims_with_size_dependent_geometry_fall_back_to_per_shape(rng):
    import onnx_stablehlo

    # SAME padding with a stride above the window depends on the size mod the stride: lowered
    # per shape instead.
    model = parse("""<ir_version: 9, opset_import: ["" : 19]>
g (float[N, 3, H, W] x) => (float[N, 3, OH, OW] y) {
  y = MaxPool <kernel_shape = [2, 2], strides = [3, 3], auto_pad = "SAME_UPPER"> (x)
}""")
    compiled = onnx_stablehlo.compile(model)
    assert compiled.artifact is None and "MaxPool" in compiled.dynamic_error
    for shape in [(1, 3, 8, 7), (2, 3, 5, 8)]:
        feeds = {"x": rng.standard_normal(shape).astype(np.float32)}
        assert_allclose_for_dtype(compiled.run(feeds), ort_run(model, feeds))


# bfloat16 (added to MaxUnpool at opset 22): computed in float32, so it must match the float32 oracle
# on the same (bfloat16-representable) inputs to bfloat16 precision.

BF16_CASES = {
    "max-unpool": ("MaxUnpool", [("x", (1, 1, 2, 2)), ("i", (1, 1, 2, 2))], (1, 1, 4, 4),
                   {"kernel_shape": [2, 2], "strides": [2, 2]}),
}


@pytest.mark.parametrize("case", list(BF16_CASES), ids=list(BF16_CASES))
def test_bfloat16_matches_float32_oracle(case, rng):
    check_bfloat16_matches_float32(*BF16_CASES[case], rng)
