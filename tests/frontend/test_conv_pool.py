"""Parity of the convolution and pooling family (frontend/lowering/conv_pool.py) against onnxruntime.

onnxruntime is the oracle (``oracle_run`` falls back to onnx.reference for dtypes onnxruntime
has no kernel for, float64 convolutions for instance). Cases where onnxruntime departs from the
spec are avoided here and listed in the rules' docstrings: SAME padding of dilated pooling
windows, and SAME ConvTranspose with a kernel smaller than the stride.
"""

from __future__ import annotations

from tests.util import FLOATS, FLOAT_IDS, check_node, int_array, node_model_text, oracle_output_shapes, typed

import numpy as np
import pytest

from onnx_stablehlo.errors import ShapeError, UnsupportedAttributeError, UnsupportedDtypeError
from tests.util import (
    attrs_text as _attrs,
    assert_allclose_for_dtype,
    compile_and_run,
    emitted_text,
    onnx_type_name,
    oracle_run,
    ort_run,
    parse,
    reference_run,
)















# Conv -----------------------------------------------------------------------------------------

CONV_CASES = {
    "1d": ((1, 2, 9), (3, 2, 3), {}),
    "1d-strides-pads": ((2, 2, 10), (4, 2, 3), {"strides": [2], "pads": [1, 2]}),
    "2d": ((1, 3, 7, 8), (4, 3, 3, 3), {}),
    "2d-asymmetric-pads": ((1, 2, 7, 6), (3, 2, 3, 2), {"pads": [1, 0, 2, 1], "strides": [2, 1]}),
    "2d-dilations": ((1, 2, 9, 9), (2, 2, 3, 3), {"dilations": [2, 3], "pads": [1, 1, 1, 1]}),
    "2d-group": ((2, 4, 6, 6), (6, 2, 3, 3), {"group": 2, "pads": [1, 1, 1, 1]}),
    "2d-depthwise": ((1, 3, 6, 5), (3, 1, 3, 3), {"group": 3, "strides": [2, 2]}),
    # More depthwise shapes: on CPU these run as taps (passes/unroll_depthwise_conv.py).
    "1d-depthwise": ((2, 4, 11), (4, 1, 5), {"group": 4, "pads": [2, 1]}),
    "2d-depthwise-dilated": ((2, 5, 9, 8), (5, 1, 3, 3), {"group": 5, "dilations": [2, 1], "pads": [2, 0, 1, 1]}),
    "3d-depthwise": ((1, 3, 4, 5, 6), (3, 1, 2, 3, 3), {"group": 3, "strides": [1, 2, 2], "pads": [0, 1, 1, 1, 1, 1]}),
    "2d-same-upper": ((1, 2, 7, 8), (3, 2, 3, 4), {"auto_pad": "SAME_UPPER", "strides": [2, 3]}),
    "2d-same-lower": ((1, 2, 7, 8), (3, 2, 4, 3), {"auto_pad": "SAME_LOWER", "strides": [2, 2]}),
    "2d-valid": ((1, 2, 7, 8), (3, 2, 3, 3), {"auto_pad": "VALID", "strides": [2, 2]}),
    "2d-kernel-shape": ((1, 2, 5, 5), (2, 2, 3, 3), {"kernel_shape": [3, 3]}),
    "3d": ((1, 2, 5, 6, 4), (3, 2, 3, 2, 2), {"pads": [1, 0, 1, 1, 1, 0], "strides": [1, 2, 1]}),
}


@pytest.mark.parametrize("dtype", FLOATS, ids=FLOAT_IDS)
@pytest.mark.parametrize("bias", [False, True], ids=["nobias", "bias"])
@pytest.mark.parametrize("case", list(CONV_CASES), ids=list(CONV_CASES))
def test_conv_matches_onnxruntime(case, bias, dtype, rng):
    x_shape, w_shape, attributes = CONV_CASES[case]
    inputs = [("x", rng.standard_normal(x_shape).astype(dtype)), ("w", rng.standard_normal(w_shape).astype(dtype))]
    if bias:
        inputs.append(("b", rng.standard_normal(w_shape[0]).astype(dtype)))
    text = check_node("Conv", 22, inputs, attributes)
    assert "stablehlo.convolution" in text


@pytest.mark.parametrize("opset", [7, 11, 22])
def test_conv_each_revision_matches_onnxruntime(opset, rng):
    inputs = [("x", rng.standard_normal((1, 2, 6, 6)).astype(np.float32)),
              ("w", rng.standard_normal((3, 2, 3, 3)).astype(np.float32)),
              ("b", rng.standard_normal(3).astype(np.float32))]
    check_node("Conv", opset, inputs, {"auto_pad": "SAME_UPPER", "strides": [2, 2]})


def test_conv_emits_feature_group_count_and_highest_precision(rng):
    inputs = [("x", rng.standard_normal((1, 4, 5, 5)).astype(np.float32)),
              ("w", rng.standard_normal((4, 2, 3, 3)).astype(np.float32))]
    text = check_node("Conv", 22, inputs, {"group": 2})
    assert "feature_group_count = 2" in text and "HIGHEST" in text


@pytest.mark.parametrize("group", [1, 3], ids=["dense", "depthwise"])
def test_explicit_zero_pad_before_conv_folds_into_its_padding(group, rng):
    """TorchScript writes TF-style "same" padding as a Pad node; canonicalize-stablehlo folds it."""
    model = parse(f"""<ir_version: 9, opset_import: ["" : 18]>
g (float[1, 3, 9, 8] x, float[3, {3 // group}, 3, 3] w) => (float[1, 3, 5, 4] y) {{
  pads = Constant <value = int64[8] {{0, 0, 1, 0, 0, 0, 1, 1}}> ()
  padded = Pad(x, pads)
  y = Conv <group = {group}, strides = [2, 2]> (padded, w)
}}""")
    feeds = {"x": rng.standard_normal((1, 3, 9, 8)).astype(np.float32),
             "w": rng.standard_normal((3, 3 // group, 3, 3)).astype(np.float32)}
    assert_allclose_for_dtype(compile_and_run(model, feeds), ort_run(model, feeds))
    from onnx_stablehlo import lower
    from onnx_stablehlo.passes import DEFAULT_PIPELINE, run_pipeline

    lowered = lower(model)
    with lowered.context:
        run_pipeline(lowered.module, DEFAULT_PIPELINE)
    assert "stablehlo.pad" not in lowered.text and "pad = [[1, 1], [0, 1]]" in lowered.text


def test_conv_rejects_unknown_auto_pad(rng):
    model = parse(node_model_text("Conv", 22, [("x", "float", (1, 1, 5, 5)), ("w", "float", (1, 1, 3, 3))],
                         [("y", "float", (1, 1, 5, 5))], {"auto_pad": "SAME"}))
    with pytest.raises(UnsupportedAttributeError, match="auto_pad='SAME'.*SAME_UPPER"):
        emitted_text(model)


def test_conv_rejects_a_kernel_shape_that_disagrees_with_w():
    model = parse(node_model_text("Conv", 22, [("x", "float", (1, 1, 5, 5)), ("w", "float", (1, 1, 3, 3))],
                         [("y", "float", (1, 1, 4, 4))], {"kernel_shape": [2, 2]}))
    with pytest.raises(ShapeError, match="kernel_shape"):
        emitted_text(model)


# ConvTranspose --------------------------------------------------------------------------------

CONV_TRANSPOSE_CASES = {
    "1d": ((1, 2, 5), (2, 3, 3), {}),
    "1d-strides": ((2, 2, 5), (2, 2, 3), {"strides": [2]}),
    "2d-strides-pads": ((1, 2, 4, 5), (2, 3, 3, 3), {"strides": [3, 2], "pads": [1, 2, 1, 2]}),
    "2d-output-padding": ((1, 1, 3, 3), (1, 2, 3, 3), {"strides": [3, 2], "output_padding": [1, 1]}),
    "2d-output-shape": ((1, 1, 3, 3), (1, 2, 3, 3), {"strides": [3, 2], "output_shape": [10, 8]}),
    "2d-dilations": ((1, 2, 4, 4), (2, 2, 3, 2), {"dilations": [2, 2], "strides": [2, 1]}),
    "2d-group": ((1, 4, 3, 4), (4, 3, 3, 3), {"group": 2, "strides": [2, 2]}),
    "2d-same-upper": ((1, 2, 4, 5), (2, 2, 3, 3), {"auto_pad": "SAME_UPPER", "strides": [2, 2]}),
    "2d-same-lower": ((1, 2, 4, 5), (2, 2, 3, 3), {"auto_pad": "SAME_LOWER", "strides": [2, 2]}),
    "2d-pads-larger-than-kernel": ((1, 1, 6, 6), (1, 1, 2, 2), {"pads": [2, 0, 3, 2], "strides": [2, 2]}),
    "3d": ((1, 1, 3, 4, 3), (1, 2, 2, 3, 2), {"strides": [2, 1, 2], "pads": [0, 1, 0, 1, 0, 1]}),
}


@pytest.mark.parametrize("dtype", [np.float32, np.float16], ids=["f32", "f16"])
@pytest.mark.parametrize("bias", [False, True], ids=["nobias", "bias"])
@pytest.mark.parametrize("case", list(CONV_TRANSPOSE_CASES), ids=list(CONV_TRANSPOSE_CASES))
def test_conv_transpose_matches_onnxruntime(case, bias, dtype, rng):
    x_shape, w_shape, attributes = CONV_TRANSPOSE_CASES[case]
    groups = attributes.get("group", 1)
    inputs = [("x", rng.standard_normal(x_shape).astype(dtype)), ("w", rng.standard_normal(w_shape).astype(dtype))]
    if bias:
        inputs.append(("b", rng.standard_normal(w_shape[1] * groups).astype(dtype)))
    text = check_node("ConvTranspose", 22, inputs, attributes)
    if attributes.get("strides", [1])[0] > 1:
        assert "lhs_dilate" in text


@pytest.mark.parametrize("opset", [7, 11, 22])
def test_conv_transpose_each_revision_matches_onnxruntime(opset, rng):
    inputs = [("x", rng.standard_normal((1, 2, 3, 3)).astype(np.float32)),
              ("w", rng.standard_normal((2, 2, 3, 3)).astype(np.float32))]
    check_node("ConvTranspose", opset, inputs, {"strides": [2, 2], "output_padding": [1, 0], "pads": [1, 1, 0, 1]})


# ConvInteger, QLinearConv ---------------------------------------------------------------------



@pytest.mark.parametrize("w_dtype", [np.uint8, np.int8], ids=["w-u8", "w-i8"])
@pytest.mark.parametrize("zero_points", ["none", "scalar", "per-channel"])
def test_conv_integer_matches_onnxruntime(zero_points, w_dtype, rng):
    inputs = [("x", int_array(rng, (1, 2, 5, 5), np.uint8)), ("w", int_array(rng, (3, 2, 2, 2), w_dtype))]
    if zero_points != "none":
        inputs.append(("x_zero_point", np.array(7, np.uint8)))
        w_zp_shape = () if zero_points == "scalar" else (3,)
        inputs.append(("w_zero_point", int_array(rng, w_zp_shape, w_dtype)))
    # onnxruntime has no per-channel w_zero_point: onnx.reference is the oracle there.
    oracle = reference_run if zero_points == "per-channel" else oracle_run
    text = check_node("ConvInteger", 10, inputs, {"pads": [1, 0, 1, 1]}, output_types=("int32",), oracle=oracle)
    assert "stablehlo.convolution" in text and "xi32" in text


@pytest.mark.parametrize("dtype", [np.uint8, np.int8], ids=["u8", "i8"])
@pytest.mark.parametrize("per_channel", [False, True], ids=["per-tensor", "per-channel"])
def test_qlinear_conv_matches_onnxruntime(per_channel, dtype, rng):
    channels = (3,) if per_channel else ()
    inputs = [
        ("x", int_array(rng, (1, 2, 6, 6), dtype)),
        ("x_scale", np.array(0.05, np.float32)),
        ("x_zero_point", np.array(3, dtype)),
        ("w", int_array(rng, (3, 2, 3, 3), dtype)),
        ("w_scale", (rng.uniform(0.01, 0.03, size=channels)).astype(np.float32)),
        ("w_zero_point", np.zeros(channels, dtype)),
        ("y_scale", np.array(0.7, np.float32)),
        ("y_zero_point", np.array(5, dtype)),
        ("b", rng.integers(-500, 500, size=3).astype(np.int32)),
    ]
    check_node("QLinearConv", 10, inputs, {"pads": [1, 1, 1, 1], "strides": [2, 1]})


def test_conv_integer_rejects_int16_input():
    model = parse(node_model_text("ConvInteger", 10, [("x", "int16", (1, 1, 3, 3)), ("w", "uint8", (1, 1, 2, 2))],
                         [("y", "int32", (1, 1, 2, 2))], {}))
    with pytest.raises(UnsupportedDtypeError, match="INT16.*int8, uint8"):
        emitted_text(model)


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
    assert "stablehlo.reduce_window" in text and "stablehlo.maximum" in text


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


# Symbolic batch and spatial dims: one artifact, refined per input shape ----------------------

_SYMBOLIC_BODIES = {
    "conv_strided": 'y = Conv <pads = [1, 1, 1, 1], strides = [2, 2]> (x, w, b)',
    "conv_same_stride1": 'y = Conv <auto_pad = "SAME_UPPER"> (x, w, b)',
    "conv_transpose": 'y = ConvTranspose <strides = [2, 2]> (x, wt, b)',
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
    import onnx_stablehlo

    w = rng.standard_normal((4, 3, 3, 3)).astype(np.float32)
    wt = rng.standard_normal((3, 4, 2, 2)).astype(np.float32)
    b = rng.standard_normal(4).astype(np.float32)

    def values(a: np.ndarray) -> str:
        return ", ".join(repr(float(v)) for v in a.ravel())

    model = parse(f"""<ir_version: 9, opset_import: ["" : 19]>
g (float[N, 3, H, W] x) => (float[N, C, OH, OW] y)
<float[4, 3, 3, 3] w = {{{values(w)}}}, float[3, 4, 2, 2] wt = {{{values(wt)}}}, float[4] b = {{{values(b)}}}>
{{
  {body}
}}""")
    compiled = onnx_stablehlo.compile(model)
    assert compiled.artifact is not None, compiled.dynamic_error
    for shape in [(1, 3, 8, 8), (2, 3, 11, 7)]:
        feeds = {"x": rng.standard_normal(shape).astype(np.float32)}
        assert_allclose_for_dtype(compiled.run(feeds), ort_run(model, feeds))
    assert compiled.compile_count == 2


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
