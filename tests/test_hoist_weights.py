"""CPU rewrites in CompiledModel: weight-only computations run once (conv-kernel-layout +
hoist-weights) and depthwise convolutions become sums of taps (unroll-depthwise-conv)."""

from __future__ import annotations

import json

import numpy as np
import onnx
import pytest
import onnx.helper as oh
import onnx.numpy_helper as onh

import onnx_stablehlo
from tests.util import ort_run, reference_run


def _conv_and_int8_model(rng) -> onnx.ModelProto:
    """Conv -> pool -> MatMul with an int8 weight behind DequantizeLinear.

    The oracle is onnx.reference: onnxruntime's optimizer turns DequantizeLinear + MatMul into a
    dynamically quantized MatMul (measured 0.039 away from the float result).
    """
    w = onh.from_array(rng.standard_normal((8, 3, 3, 3)).astype(np.float32), "w")
    b = onh.from_array(rng.standard_normal(8).astype(np.float32), "b")
    q = onh.from_array(rng.integers(-128, 127, (8, 200)).astype(np.int8), "q")
    scale = onh.from_array(np.array(0.02, np.float32), "scale")
    graph = oh.make_graph(
        [
            oh.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1]),
            oh.make_node("GlobalAveragePool", ["c"], ["p"]),
            oh.make_node("Flatten", ["p"], ["f"]),
            oh.make_node("DequantizeLinear", ["q", "scale"], ["wq"]),
            oh.make_node("MatMul", ["f", "wq"], ["y"]),
        ],
        "g",
        [oh.make_tensor_value_info("x", onnx.TensorProto.FLOAT, ["n", 3, "h", "w_"])],
        [oh.make_tensor_value_info("y", onnx.TensorProto.FLOAT, ["n", 200])],
        initializer=[w, b, q, scale],
    )
    return oh.make_model(graph, opset_imports=[oh.make_opsetid("", 19)])


def test_conv_kernel_transpose_and_dequantization_are_hoisted(rng):
    model = _conv_and_int8_model(rng)
    compiled = onnx_stablehlo.compile(model)
    for shape in [(1, 3, 8, 8), (2, 3, 5, 7)]:
        feeds = {"x": rng.standard_normal(shape).astype(np.float32)}
        np.testing.assert_allclose(compiled.run(feeds)[0], reference_run(model, feeds)[0], rtol=1e-5, atol=1e-5)
        text = compiled.mlir
        main, hoisted = text.split("func.func public @hoisted_weights")
        assert "stablehlo.transpose" in hoisted and "stablehlo.convert" in hoisted
        assert "[0, 1, i, o]" in main  # the convolution reads the hoisted HWIO kernel
        assert "stablehlo.transpose" not in main and "stablehlo.convert" not in main
        assert "onnx.hoisted_weights = 2" in main
    assert compiled.compile_count == 2


def test_weight_work_inside_an_if_branch_is_hoisted(rng):
    """silero-vad's shape: the whole network sits in an If branch on the sample rate."""
    w = onh.from_array(rng.standard_normal((8, 3, 3, 3)).astype(np.float32), "w")
    then_branch = oh.make_graph(
        [oh.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1])], "then", [],
        [oh.make_tensor_value_info("c", onnx.TensorProto.FLOAT, [1, 8, 9, 9])],
    )
    else_branch = oh.make_graph(
        [oh.make_node("Conv", ["x", "w"], ["c2"], pads=[2, 2, 2, 2], dilations=[2, 2])], "else", [],
        [oh.make_tensor_value_info("c2", onnx.TensorProto.FLOAT, [1, 8, 9, 9])],
    )
    graph = oh.make_graph(
        [oh.make_node("If", ["flag"], ["y"], then_branch=then_branch, else_branch=else_branch)],
        "g",
        [oh.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [1, 3, 9, 9]),
         oh.make_tensor_value_info("flag", onnx.TensorProto.BOOL, [])],
        [oh.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [1, 8, 9, 9])],
        initializer=[w],
    )
    model = oh.make_model(graph, opset_imports=[oh.make_opsetid("", 19)])
    compiled = onnx_stablehlo.compile(model)
    x = rng.standard_normal((1, 3, 9, 9)).astype(np.float32)
    for flag in (True, False):
        feeds = {"x": x, "flag": np.array(flag)}
        np.testing.assert_allclose(compiled.run(feeds)[0], ort_run(model, feeds)[0], rtol=1e-5, atol=1e-5)
    main, hoisted = compiled.mlir.split("func.func public @hoisted_weights")
    assert "stablehlo.if" in main  # one executable for both values of the flag
    assert "stablehlo.transpose" in hoisted and "stablehlo.transpose" not in main
    assert compiled.compile_count == 1


def _filled_weights_model(size: int) -> onnx.ModelProto:
    """The onnx wheel's light models' shape: no initializers, every weight a ConstantOfShape,
    read by a MatMul and by a Conv (through the kernel-layout transpose); plus a filled tensor
    of the same size that only an Add reads."""
    def shape(name, dims):
        return oh.make_node("Constant", [], [name], value=onh.from_array(np.array(dims, np.int64)))

    def fill(name, dims, value):
        return [shape(name + "_shape", dims),
                oh.make_node("ConstantOfShape", [name + "_shape"], [name],
                             value=onh.from_array(np.array([value], np.float32)))]

    graph = oh.make_graph(
        [*fill("w", [8, size], 0.125), *fill("k", [size // 8, 8, 3, 3], -0.25), *fill("bias", [1, size], 0.5),
         oh.make_node("MatMul", ["x", "w"], ["m"]), oh.make_node("Add", ["m", "bias"], ["y"]),
         oh.make_node("Conv", ["img", "k"], ["z"], pads=[1, 1, 1, 1])],
        "filled",
        [oh.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [2, 8]),
         oh.make_tensor_value_info("img", onnx.TensorProto.FLOAT, [1, 8, 5, 5])],
        [oh.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [2, size]),
         oh.make_tensor_value_info("z", onnx.TensorProto.FLOAT, [1, size // 8, 5, 5])],
    )
    return oh.make_model(graph, opset_imports=[oh.make_opsetid("", 19)])


@pytest.mark.parametrize("size", [4096, 8])
def test_filled_weights_of_contractions_are_hoisted_without_initializers(size, rng):
    """A ConstantOfShape weight of at least SPLAT_MIN_ELEMENTS read by a MatMul or a Conv runs
    once in @hoisted_weights (XLA would fill it on every call); a small one, and a large fill an
    Add reads (it fuses), stay in @main. Outputs equal onnxruntime's."""
    from onnx_stablehlo.passes.hoist_weights import SPLAT_MIN_ELEMENTS

    model = _filled_weights_model(size)
    compiled = onnx_stablehlo.compile(model)
    feeds = {"x": rng.standard_normal((2, 8)).astype(np.float32), "img": rng.standard_normal((1, 8, 5, 5)).astype(np.float32)}
    for actual, expected in zip(compiled.run(feeds), ort_run(model, feeds)):
        np.testing.assert_allclose(actual, expected, rtol=1e-5, atol=1e-5)
    text = compiled.mlir
    if 8 * size < SPLAT_MIN_ELEMENTS:
        assert "@hoisted_weights" not in text
        return
    main, hoisted = text.split("func.func public @hoisted_weights")
    assert "onnx.hoisted_weights = 2" in main  # the MatMul weight and the Conv kernel (HWIO)
    assert f"dense<1.250000e-01> : tensor<8x{size}xf32>" in hoisted
    assert "stablehlo.transpose" in hoisted and "dense<-2.500000e-01>" in hoisted  # the kernel, in HWIO
    assert "dense<5.000000e-01>" in main and "dense<5.000000e-01>" not in hoisted  # the Add's fill stays


def test_inline_weights_and_hoist_weights_false_leave_main_alone(rng):
    model = _conv_and_int8_model(rng)
    feeds = {"x": rng.standard_normal((1, 3, 6, 6)).astype(np.float32)}
    for options in ({"weights": "inline"}, {"hoist_weights": False}):
        compiled = onnx_stablehlo.compile(model, **options)
        np.testing.assert_allclose(compiled.run(feeds)[0], reference_run(model, feeds)[0], rtol=1e-5, atol=1e-5)
        assert "@hoisted_weights" not in compiled.mlir


# Depthwise convolutions as sums of taps (pass unroll-depthwise-conv, run by CompiledModel on CPU)

DEPTHWISE = {
    "3x3": ("[1, 1, 1, 1]", "[1, 1]", "[1, 1]", (2, 6, 9, 11)),
    "3x3-stride-2": ("[1, 1, 1, 1]", "[2, 2]", "[1, 1]", (1, 6, 10, 9)),
    "5x5-dilated-asymmetric-pads": ("[2, 0, 1, 3]", "[1, 2]", "[2, 1]", (1, 6, 12, 12)),
}


def _depthwise_model(pads: str, strides: str, dilations: str, x_shape, rng) -> onnx.ModelProto:
    channels = x_shape[1]
    kernel = (5, 5) if dilations == "[2, 1]" else (3, 3)
    w = onh.from_array(rng.standard_normal((channels, 1, *kernel)).astype(np.float32), "w")
    b = onh.from_array(rng.standard_normal(channels).astype(np.float32), "b")
    node = oh.make_node(
        "Conv", ["x", "w", "b"], ["y"], group=channels,
        pads=json.loads(pads), strides=json.loads(strides), dilations=json.loads(dilations),
    )
    graph = oh.make_graph(
        [node], "g", [oh.make_tensor_value_info("x", onnx.TensorProto.FLOAT, list(x_shape))],
        [oh.make_tensor_value_info("y", onnx.TensorProto.FLOAT, ["n", "c", "h", "w"])], initializer=[w, b],
    )
    return oh.make_model(graph, opset_imports=[oh.make_opsetid("", 19)])


@pytest.mark.parametrize("case", list(DEPTHWISE), ids=list(DEPTHWISE))
def test_depthwise_conv_is_unrolled_and_matches_onnxruntime(case, rng):
    model = _depthwise_model(*DEPTHWISE[case], rng)
    feeds = {"x": rng.standard_normal(DEPTHWISE[case][3]).astype(np.float32)}
    compiled = onnx_stablehlo.compile(model)
    np.testing.assert_allclose(compiled.run(feeds)[0], ort_run(model, feeds)[0], rtol=1e-5, atol=1e-5)
    assert "stablehlo.convolution" not in compiled.mlir
    unrolled = onnx_stablehlo.compile(model, pipeline="none")  # no rewrites: a grouped convolution
    assert "feature_group_count = 6" in unrolled.mlir
