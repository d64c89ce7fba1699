"""Parity of the convolution family (frontend/lowering/conv.py: Conv, ConvTranspose, ConvInteger,
QLinearConv, DeformConv, Col2Im) against onnxruntime.

onnxruntime is the oracle (``oracle_run`` falls back to onnx.reference for dtypes onnxruntime
has no kernel for, float64 convolutions for instance). Cases where onnxruntime departs from the
spec are avoided here and listed in the rules' docstrings: SAME ConvTranspose with a kernel
smaller than the stride.

Symbolic-dim tests (``check_symbolic``) compile one model with its ``dim_param`` dims kept as
``?``, keep that artifact through runs at two shapes, and compare each run with the oracle.
"""

from __future__ import annotations

import numpy as np
import onnx
import onnx.numpy_helper
import pytest

import onnx_stablehlo
from onnx_stablehlo.errors import NonConstantInputError, ShapeError, UnsupportedAttributeError, UnsupportedDtypeError
from tests.util import (FLOATS, FLOAT_IDS, assert_allclose_for_dtype, check_bfloat16_matches_float32, check_node,
                        check_symbolic, check_symbolic_nchw, compile_and_run, emitted_text, int_array, node_model_text,
                        oracle_run, ort_run, parse, reference_run)

# --------------------------------------------------------------------------------------------
# Col2Im

# (input shape, image_shape, block_shape, attributes)
COL2IM_CASES = {
    "basic": ((1, 4, 9), [4, 4], [2, 2], {}),
    "strides": ((2, 8, 4), [5, 5], [2, 2], {"strides": [2, 2]}),
    "pads": ((1, 9, 24), [4, 6], [3, 3], {"pads": [1, 2, 1, 0]}),
    "dilations": ((1, 4, 6), [4, 5], [2, 2], {"dilations": [2, 2]}),
    "all": ((1, 12, 12), [5, 7], [2, 3], {"strides": [2, 1], "pads": [1, 0, 0, 1], "dilations": [1, 2]}),
    "3d": ((1, 16, 8), [3, 4, 5], [2, 2, 2], {"strides": [1, 2, 2]}),
    "1d": ((2, 6, 3), [6], [3], {"pads": [1, 1], "strides": [2]}),
}


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32], ids=["f32", "f64", "i32"])
@pytest.mark.parametrize("case", list(COL2IM_CASES), ids=list(COL2IM_CASES))
def test_col2im_matches_onnxruntime(case, dtype, rng):
    shape, image, block, attributes = COL2IM_CASES[case]
    channels = shape[1] // int(np.prod(block))
    inputs = [("x", dtype, shape), ("image", np.int64, (len(image),)), ("block", np.int64, (len(block),))]
    model = parse(node_model_text("Col2Im", 18, inputs, ("y", dtype, (shape[0], channels, *image)), attributes,
                         constants={"image": image, "block": block}))
    values = rng.integers(-9, 9, shape) if dtype == np.int32 else rng.standard_normal(shape)
    feeds = {"x": values.astype(dtype)}
    assert_allclose_for_dtype(compile_and_run(model, feeds), oracle_run(model, feeds))
    assert "stablehlo.pad" in emitted_text(model)


def test_col2im_needs_constant_shapes():
    text = node_model_text("Col2Im", 18, [("x", np.float32, (1, 4, 9)), ("image", np.int64, (2,)), ("block", np.int64, (2,))],
                  ("y", np.float32, (1, 1, 4, 4)), {})
    with pytest.raises(NonConstantInputError, match="image"):
        onnx_stablehlo.lower(parse(text))


# --------------------------------------------------------------------------------------------
# DeformConv

# (x shape, w shape, attributes); offsets and mask follow from them
DEFORM_CASES = {
    "basic": ((1, 2, 5, 5), (3, 2, 3, 3), {}),
    "pads-strides": ((2, 2, 6, 7), (2, 2, 3, 2), {"pads": [1, 0, 1, 2], "strides": [2, 1]}),
    "dilations": ((1, 1, 7, 7), (2, 1, 2, 2), {"dilations": [2, 3]}),
    "groups": ((1, 4, 5, 5), (6, 2, 2, 2), {"group": 2}),
    "offset-groups": ((1, 4, 5, 5), (2, 4, 2, 2), {"offset_group": 2, "pads": [1, 1, 1, 1]}),
    "both-groups": ((1, 4, 4, 4), (4, 1, 2, 2), {"group": 4, "offset_group": 2}),
}


def _conv_out(x_shape, w_shape, attributes):
    rank = len(x_shape) - 2
    pads = attributes.get("pads", [0] * 2 * rank)
    strides = attributes.get("strides", [1] * rank)
    dilations = attributes.get("dilations", [1] * rank)
    return [
        (x_shape[2 + i] + pads[i] + pads[rank + i] - dilations[i] * (w_shape[2 + i] - 1) - 1) // strides[i] + 1
        for i in range(rank)
    ]


@pytest.mark.parametrize("extras", ["none", "bias-mask"])
@pytest.mark.parametrize("opset,dtype", [(19, np.float32), (22, np.float32), (22, np.float64)],
                         ids=["opset19-f32", "opset22-f32", "opset22-f64"])
@pytest.mark.parametrize("case", list(DEFORM_CASES), ids=list(DEFORM_CASES))
def test_deform_conv_matches_onnxruntime(case, opset, dtype, extras, rng):
    x_shape, w_shape, attributes = DEFORM_CASES[case]
    rank = len(x_shape) - 2
    out = _conv_out(x_shape, w_shape, attributes)
    taps = int(np.prod(w_shape[2:]))
    groups = attributes.get("offset_group", 1)
    offset_shape = (x_shape[0], groups * taps * rank, *out)
    mask_shape = (x_shape[0], groups * taps, *out)
    inputs = [("x", dtype, x_shape), ("w", dtype, w_shape), ("offset", dtype, offset_shape)]
    feeds = {
        "x": rng.standard_normal(x_shape).astype(dtype),
        "w": rng.standard_normal(w_shape).astype(dtype),
        "offset": (1.5 * rng.standard_normal(offset_shape)).astype(dtype),
    }
    if extras == "bias-mask":
        inputs += [("b", dtype, (w_shape[0],)), ("mask", dtype, mask_shape)]
        feeds["b"] = rng.standard_normal(w_shape[0]).astype(dtype)
        feeds["mask"] = rng.uniform(0, 1, mask_shape).astype(dtype)
    model = parse(node_model_text("DeformConv", opset, inputs, ("y", dtype, (x_shape[0], w_shape[0], *out)), attributes))
    assert_allclose_for_dtype(compile_and_run(model, feeds), ort_run(model, feeds))


def test_deform_conv_1d_matches_2d_of_height_one(rng):
    """onnxruntime has no 1-D DeformConv: compare with its 2-D one on a height-1 image whose
    offsets along the height are zero."""
    x = rng.standard_normal((2, 3, 8)).astype(np.float32)
    w = rng.standard_normal((2, 3, 3)).astype(np.float32)
    offset = (1.5 * rng.standard_normal((2, 3, 8))).astype(np.float32)
    one_d = parse(node_model_text("DeformConv", 22, [("x", np.float32, x.shape), ("w", np.float32, w.shape),
                                            ("offset", np.float32, offset.shape)], ("y", np.float32, (2, 2, 8)),
                         {"pads": [1, 1]}))
    two_d = parse(node_model_text("DeformConv", 22, [("x", np.float32, (2, 3, 1, 8)), ("w", np.float32, (2, 3, 1, 3)),
                                            ("offset", np.float32, (2, 6, 1, 8))], ("y", np.float32, (2, 2, 1, 8)),
                         {"pads": [0, 1, 0, 1]}))
    offset_2d = np.stack([np.zeros_like(offset), offset], axis=2).reshape(2, 6, 1, 8)  # (dy, dx) per tap
    (expected,) = ort_run(two_d, {"x": x[:, :, None], "w": w[:, :, None], "offset": offset_2d})
    actual = compile_and_run(one_d, {"x": x, "w": w, "offset": offset})
    assert_allclose_for_dtype(actual, [expected[:, :, 0]])


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


@pytest.mark.parametrize(
    ("x_shape", "w_shape", "attributes"),
    [((1, 24, 14, 14), (32, 6, 1, 1), {"group": 4}),  # ShuffleNet's grouped 1x1
     ((2, 64, 9, 9), (64, 2, 3, 3), {"group": 32, "pads": [1, 1, 1, 1], "strides": [2, 2]}),  # ResNeXt
     ((1, 12, 10, 9), (6, 4, 3, 2), {"group": 3, "dilations": [2, 1], "pads": [1, 0, 2, 1]}),
     ((1, 8, 13), (4, 4, 3), {"group": 2, "pads": [1, 1]})],
    ids=["1x1-4-groups", "3x3-32-groups-strided", "2d-dilated-3-groups", "1d-2-groups"],
)
def test_grouped_conv_splits_into_one_conv_per_group_on_cpu(x_shape, w_shape, attributes, rng):
    """passes/split_grouped_conv.py: on CPU a grouped (not depthwise) Conv with an initializer
    weight is one convolution per group, concatenated; the result equals onnxruntime's."""
    w = rng.standard_normal(w_shape).astype(np.float32)
    b = rng.standard_normal(w_shape[0]).astype(np.float32)
    graph = onnx.helper.make_graph(
        [onnx.helper.make_node("Conv", ["x", "w", "b"], ["y"], **attributes)], "g",
        [onnx.helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, list(x_shape))],
        [onnx.helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, None)],
        [onnx.numpy_helper.from_array(w, "w"), onnx.numpy_helper.from_array(b, "b")],
    )
    model = onnx.helper.make_model(graph, opset_imports=[onnx.helper.make_opsetid("", 17)])
    feeds = {"x": rng.standard_normal(x_shape).astype(np.float32)}
    compiled = onnx_stablehlo.compile(model, check=False)
    assert_allclose_for_dtype(compiled.run(feeds), ort_run(model, feeds))
    text = compiled.executables.last.artifact.text
    assert text.count("stablehlo.convolution") == attributes["group"] and "feature_group_count = 1 " in text
    assert f"feature_group_count = {attributes['group']} " not in text


@pytest.mark.parametrize("batch", [1, 3])
def test_squeeze_excitation_after_a_depthwise_conv_runs_channels_last_on_cpu(batch, rng):
    """passes/sink_transposes.py: after unroll-depthwise-conv (channels-last taps), the HardSwish,
    the GlobalAveragePool and the gating Mul of a MobileNetV3 squeeze-and-excitation block work
    channels-last and the next 1x1 Conv absorbs the transpose; the result equals onnxruntime's."""
    c = 8
    weights = {
        "dw": rng.standard_normal((c, 1, 5, 5)).astype(np.float32), "dw_b": rng.standard_normal(c).astype(np.float32),
        "fc1": rng.standard_normal((4, c, 1, 1)).astype(np.float32), "fc1_b": rng.standard_normal(4).astype(np.float32),
        "fc2": rng.standard_normal((c, 4, 1, 1)).astype(np.float32), "fc2_b": rng.standard_normal(c).astype(np.float32),
        "pw": rng.standard_normal((6, c, 1, 1)).astype(np.float32),
    }
    nodes = [
        onnx.helper.make_node("Conv", ["x", "dw", "dw_b"], ["d"], group=c, pads=[2, 2, 2, 2], strides=[2, 2]),
        onnx.helper.make_node("HardSwish", ["d"], ["a"]),
        onnx.helper.make_node("GlobalAveragePool", ["a"], ["p"]),
        onnx.helper.make_node("Conv", ["p", "fc1", "fc1_b"], ["f1"]),
        onnx.helper.make_node("Relu", ["f1"], ["r"]),
        onnx.helper.make_node("Conv", ["r", "fc2", "fc2_b"], ["f2"]),
        onnx.helper.make_node("HardSigmoid", ["f2"], ["g"], alpha=1 / 6),
        onnx.helper.make_node("Mul", ["a", "g"], ["z"]),
        onnx.helper.make_node("Conv", ["z", "pw"], ["y"]),
    ]
    graph = onnx.helper.make_graph(
        nodes, "se",
        [onnx.helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [batch, c, 11, 11])],
        [onnx.helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, None),
         onnx.helper.make_tensor_value_info("p", onnx.TensorProto.FLOAT, None)],
        [onnx.numpy_helper.from_array(v, k) for k, v in weights.items()],
    )
    model = onnx.helper.make_model(graph, opset_imports=[onnx.helper.make_opsetid("", 17)])
    feeds = {"x": rng.standard_normal((batch, c, 11, 11)).astype(np.float32)}
    compiled = onnx_stablehlo.compile(model, check=False)
    assert_allclose_for_dtype(compiled.run(feeds), ort_run(model, feeds))
    text = compiled.executables.last.artifact.text
    # The pool reduces the spatial dims of the channels-last [b, 6, 6, c] tap sum ...
    assert f"across dimensions = [1, 2] : (tensor<{batch}x6x6x{c}xf32>" in text
    # ... and the last Conv reads the gated activation channels-last.
    assert "dim_numbers = [b, 0, 1, f]x" in text


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


@pytest.mark.parametrize(
    ("weights", "constant", "chunks"),
    [("typical", True, 1), ("extreme", True, 2), ("typical", False, 2)],
    ids=["constant-typical-one", "constant-extreme-chunked", "runtime-chunked"],
)
def test_conv_integer_runs_in_float32_chunks_whose_sums_are_exact(weights, constant, chunks, rng):
    """_float32_channel_chunks: 64 input channels x 3x3 taps. Constant int8 weights of typical
    size bound every sum below 2^24: one float32 convolution. All -127 (odd products: 576 x 255 x
    127 = 18.7M, past 2^24, would round in one float32 sum), or weights known only at run time
    (255 x 128 per product), could pass 2^24 over 64 channels, so the channels are split into two
    float32 convolutions added in int32. Results equal onnx.reference's either way."""
    import onnx
    import onnx.numpy_helper

    x = rng.integers(0, 256, (1, 64, 5, 5)).astype(np.uint8)
    x[..., 1:4, 1:4] = 255  # an output whose 576 products are all 255 x w
    w = (rng.integers(-20, 21, (4, 64, 3, 3)) if weights == "typical" else np.full((4, 64, 3, 3), -127)).astype(np.int8)
    w_decl = "" if constant else ", int8[4, 64, 3, 3] w"
    model = onnx.parser.parse_model(
        f"""<ir_version: 9, opset_import: ["" : 10]>
g (uint8[1, 64, 5, 5] x, uint8 xz{w_decl}) => (int32[1, 4, 5, 5] y) {{
  y = ConvInteger <pads = [1, 1, 1, 1]> (x, w, xz)
}}"""
    )
    feeds = {"x": x, "xz": np.array(0, np.uint8)}
    if constant:
        model.graph.initializer.append(onnx.numpy_helper.from_array(w, "w"))
    else:
        feeds["w"] = w
    text = emitted_text(model)
    operands = [line.split(" : (")[-1].split(",")[0] for line in text.splitlines() if "stablehlo.convolution" in line]
    assert len(operands) == chunks and all(o.endswith("xf32>") for o in operands), operands
    (got,) = onnx_stablehlo.compile(model, check=False).run(feeds)
    (want,) = reference_run(model, feeds)
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("constant", [True, False], ids=["constant-w", "runtime-w"])
@pytest.mark.parametrize(("channels", "group"), [(6, 2), (8, 8)], ids=["group-2", "depthwise"])
def test_grouped_qlinear_conv_matches_onnxruntime(channels, group, constant, rng):
    """A grouped QLinearConv (MobileNetV2's depthwise convolutions): the float32 path convolves
    all C channels of x against W's C/group, never a slice of x (CI failure of aa2aa33:
    feature_group_count = 8 with 1 input channel). Weights are 7-bit against onnxruntime (its
    AVX2 u8s8 kernel for group > 1 sums pairs of products in int16 with saturation, as
    quantizers' reduce_range assumes); full-range weights are checked against onnx.reference."""
    import onnx
    import onnx.numpy_helper

    w = rng.integers(-63, 64, (channels, channels // group, 3, 3)).astype(np.int8)
    w_decl = "" if constant else f", int8[{channels}, {channels // group}, 3, 3] w"
    model = onnx.parser.parse_model(
        f"""<ir_version: 9, opset_import: ["" : 10]>
g (uint8[2, {channels}, 7, 6] x{w_decl}) => (uint8[2, {channels}, 4, 3] y) {{
  xs = Constant <value = float {{0.05}}> ()
  xz = Constant <value = uint8 {{3}}> ()
  ws = Constant <value = float {{0.02}}> ()
  wz = Constant <value = int8 {{0}}> ()
  ys = Constant <value = float {{0.7}}> ()
  yz = Constant <value = uint8 {{128}}> ()
  y = QLinearConv <group = {group}, pads = [1, 1, 1, 1], strides = [2, 2]> (x, xs, xz, w, ws, wz, ys, yz)
}}"""
    )
    feeds = {"x": rng.integers(0, 256, (2, channels, 7, 6)).astype(np.uint8)}
    if constant:
        model.graph.initializer.append(onnx.numpy_helper.from_array(w, "w"))
    else:
        feeds["w"] = w
    assert f"feature_group_count = {group}" in emitted_text(model)
    (got,) = compile_and_run(model, feeds)
    (want,) = ort_run(model, feeds)
    np.testing.assert_array_equal(got, want)
    full = rng.integers(-127, 128, w.shape).astype(np.int8)
    if constant:
        model.graph.initializer[-1].CopyFrom(onnx.numpy_helper.from_array(full, "w"))
    else:
        feeds["w"] = full
    (got,) = compile_and_run(model, feeds)
    (want,) = reference_run(model, feeds)
    np.testing.assert_array_equal(got, want)


def test_conv_integer_rejects_int16_input():
    model = parse(node_model_text("ConvInteger", 10, [("x", "int16", (1, 1, 3, 3)), ("w", "uint8", (1, 1, 2, 2))],
                         [("y", "int32", (1, 1, 2, 2))], {}))
    with pytest.raises(UnsupportedDtypeError, match="INT16.*int8, uint8"):
        emitted_text(model)


# Symbolic batch and spatial dims: one artifact, refined per input shape ----------------------

_SYMBOLIC_BODIES = {
    "conv_strided": 'y = Conv <pads = [1, 1, 1, 1], strides = [2, 2]> (x, w, b)',
    "conv_same_stride1": 'y = Conv <auto_pad = "SAME_UPPER"> (x, w, b)',
    "conv_transpose": 'y = ConvTranspose <strides = [2, 2]> (x, wt, b)',
}


@pytest.mark.parametrize("body", list(_SYMBOLIC_BODIES.values()), ids=list(_SYMBOLIC_BODIES))
def test_symbolic_batch_and_spatial_dims_lower_once(body, rng):
    check_symbolic_nchw(body, rng)


# Conv and pooling: SAME_* and ceil_mode with strides ----------------------------------------------


def _conv_model(attrs: str, kernel: tuple[int, int], channels: int = 3, out_channels: int = 4) -> str:
    kh, kw = kernel
    return f"""<ir_version: 9, opset_import: ["" : 18]>
g (float[N, {channels}, H, W] x, float[{out_channels}, {channels}, {kh}, {kw}] w, float[{out_channels}] b)
  => (float[N, {out_channels}, P, Q] y) {{
  y = Conv <{attrs}> (x, w, b)
}}"""


def _conv_feeds(kernel, channels=3, out_channels=4):
    def feeds(rng, shape):
        return {
            "x": rng.standard_normal(shape).astype(np.float32),
            "w": rng.standard_normal((out_channels, channels, *kernel)).astype(np.float32),
            "b": rng.standard_normal(out_channels).astype(np.float32),
        }

    return feeds


@pytest.mark.parametrize("auto_pad", ["SAME_UPPER", "SAME_LOWER"])
@pytest.mark.parametrize("kernel, strides, dilations", [((3, 3), (2, 2), (1, 1)), ((4, 2), (3, 2), (1, 1)),
                                                        ((5, 3), (2, 3), (1, 1)), ((1, 1), (2, 2), (1, 1))])
def test_conv_same_with_stride_on_symbolic_dims(auto_pad, kernel, strides, dilations, rng):
    attrs = f'auto_pad = "{auto_pad}", strides = {list(strides)}, dilations = {list(dilations)}'
    # 9x12 and 10x13 hit both "stride divides the size" and a remainder
    compiled = check_symbolic(None, _conv_model(attrs, kernel), _conv_feeds(kernel), [(1, 3, 9, 12), (2, 3, 10, 13)], rng,
                              rtol=1e-4, atol=1e-4, oracle=ort_run)
    if kernel != (1, 1):
        assert "stablehlo.dynamic_pad" in compiled.artifact.text


# ConvTranspose ------------------------------------------------------------------------------------


_CONV_TRANSPOSE_CASES = {
    "strided": "strides = [2, 2]",
    "pads_output_padding": "strides = [2, 3], pads = [1, 0, 1, 2], output_padding = [1, 2]",
    "dilated": "strides = [2, 1], dilations = [2, 2], pads = [1, 1, 0, 1]",
    "same_upper": 'strides = [2, 2], auto_pad = "SAME_UPPER"',
    "same_lower": 'strides = [3, 2], auto_pad = "SAME_LOWER"',
    "crop": "strides = [2, 2], pads = [3, 1, 4, 2]",  # pads beyond k - 1 crop the convolution output
    "group": "strides = [2, 2], group = 2, pads = [0, 1, 1, 0]",
}


@pytest.mark.parametrize("attrs", list(_CONV_TRANSPOSE_CASES.values()), ids=list(_CONV_TRANSPOSE_CASES))
def test_conv_transpose_with_symbolic_dims(attrs, rng):
    groups = 2 if "group" in attrs else 1
    text = f"""<ir_version: 9, opset_import: ["" : 18]>
g (float[N, 4, H, W] x, float[4, {6 // groups}, 3, 3] w, float[6] b) => (float[N, 6, P, Q] y) {{
  y = ConvTranspose <{attrs}> (x, w, b)
}}"""

    def feeds(rng, shape):
        return {
            "x": rng.standard_normal(shape).astype(np.float32),
            "w": rng.standard_normal((4, 6 // groups, 3, 3)).astype(np.float32),
            "b": rng.standard_normal(6).astype(np.float32),
        }

    check_symbolic(None, text, feeds, [(1, 4, 5, 4), (2, 4, 7, 9)], rng, rtol=1e-4, atol=1e-4, oracle=ort_run)


# bfloat16 (added to DeformConv at opset 22): computed in float32, so it must match the float32 oracle
# on the same (bfloat16-representable) inputs to bfloat16 precision.

BF16_CASES = {
    "deform-conv": ("DeformConv", [("x", (1, 2, 5, 5)), ("w", (2, 2, 2, 2)), ("offset", (1, 8, 4, 4))],
                    (1, 2, 4, 4), {}),
}


@pytest.mark.parametrize("case", list(BF16_CASES), ids=list(BF16_CASES))
def test_bfloat16_matches_float32_oracle(case, rng):
    check_bfloat16_matches_float32(*BF16_CASES[case], rng)
