"""Weight-only computations run once (passes conv-kernel-layout + hoist-weights in CompiledModel)."""

from __future__ import annotations

import numpy as np
import onnx
import onnx.helper as oh
import onnx.numpy_helper as onh

import onnx_stablehlo
from tests.util import reference_run


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


def test_inline_weights_and_hoist_weights_false_leave_main_alone(rng):
    model = _conv_and_int8_model(rng)
    feeds = {"x": rng.standard_normal((1, 3, 6, 6)).astype(np.float32)}
    for options in ({"weights": "inline"}, {"hoist_weights": False}):
        compiled = onnx_stablehlo.compile(model, **options)
        np.testing.assert_allclose(compiled.run(feeds)[0], reference_run(model, feeds)[0], rtol=1e-5, atol=1e-5)
        assert "@hoisted_weights" not in compiled.mlir
