"""Parity tests of onnxruntime's com.microsoft quantized ops (frontend/lowering/quantized.py).

onnxruntime is the oracle (it defines these ops). Outputs are uint8/int8: compared exactly,
except where a test says why one quantization step is allowed. Real quantized models are in
the zoo (``tools/build_quantized.py``).
"""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

import onnx_stablehlo
from tests.util import ort_run

MS = "com.microsoft"
U8 = TensorProto.UINT8


def _model(nodes, inputs, outputs, initializers=()) -> onnx.ModelProto:
    graph = helper.make_graph(nodes, "g", inputs, outputs, initializer=list(initializers))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid(MS, 1)], ir_version=9)


def _scalars(prefix: str, scale: float, zero: int, dtype=U8):
    return [
        helper.make_tensor(f"{prefix}_scale", TensorProto.FLOAT, [], [scale]),
        helper.make_tensor(f"{prefix}_zero", dtype, [], [zero]),
    ]


def _check(model, feeds, max_step: int = 0) -> None:
    actual = onnx_stablehlo.compile(model).run(feeds)
    expected = ort_run(model, feeds)
    for got, want in zip(actual, expected):
        got = np.asarray(got)
        assert got.dtype == want.dtype and got.shape == want.shape
        diff = np.abs(got.astype(np.int64) - want.astype(np.int64)) if want.dtype != np.float32 else np.abs(got - want)
        assert diff.max(initial=0) <= max_step, f"max diff {diff.max()} (allowed {max_step})"


@pytest.mark.parametrize("op", ["QLinearAdd", "QLinearMul"])
def test_qlinear_binary_broadcast(op, rng):
    node = helper.make_node(op, ["a", "a_scale", "a_zero", "b", "b_scale", "b_zero", "c_scale", "c_zero"], ["c"], domain=MS)
    inits = [*_scalars("a", 0.05, 120), *_scalars("b", 0.03, 100), *_scalars("c", 0.08 if op == "QLinearAdd" else 0.1, 128)]
    model = _model(
        [node],
        [helper.make_tensor_value_info("a", U8, [2, 3, 4]), helper.make_tensor_value_info("b", U8, [3, 1])],
        [helper.make_tensor_value_info("c", U8, [2, 3, 4])],
        inits,
    )
    feeds = {"a": rng.integers(0, 256, (2, 3, 4)).astype(np.uint8), "b": rng.integers(0, 256, (3, 1)).astype(np.uint8)}
    _check(model, feeds)


@pytest.mark.parametrize("op", ["QLinearSigmoid", "QLinearLeakyRelu", "QLinearSoftmax"])
def test_qlinear_unary(op, rng):
    attrs = {"alpha": 0.1} if op == "QLinearLeakyRelu" else {"axis": -1, "opset": 13} if op == "QLinearSoftmax" else {}
    node = helper.make_node(op, ["x", "x_scale", "x_zero", "y_scale", "y_zero"], ["y"], domain=MS, **attrs)
    y_scale, y_zero = (1 / 256, 0) if op != "QLinearLeakyRelu" else (0.04, 100)
    model = _model(
        [node],
        [helper.make_tensor_value_info("x", U8, [3, 8])],
        [helper.make_tensor_value_info("y", U8, [3, 8])],
        [*_scalars("x", 0.05, 128), *_scalars("y", y_scale, y_zero)],
    )
    feeds = {"x": rng.integers(0, 256, (3, 8)).astype(np.uint8)}
    # onnxruntime's softmax reads exp from a 256-entry table scaled in its own way and divides
    # by a rounded sum: one step of 1/256 differs on some values.
    _check(model, feeds, max_step=1 if op == "QLinearSoftmax" else 0)


def test_qlinear_concat_requantizes_each_input(rng):
    node = helper.make_node(
        "QLinearConcat", ["y_scale", "y_zero", "a", "a_scale", "a_zero", "b", "b_scale", "b_zero"], ["y"], domain=MS, axis=1
    )
    model = _model(
        [node],
        [helper.make_tensor_value_info("a", U8, [2, 3, 4]), helper.make_tensor_value_info("b", U8, [2, 2, 4])],
        [helper.make_tensor_value_info("y", U8, [2, 5, 4])],
        [*_scalars("y", 0.07, 110), *_scalars("a", 0.05, 120), *_scalars("b", 0.09, 90)],
    )
    feeds = {"a": rng.integers(0, 256, (2, 3, 4)).astype(np.uint8), "b": rng.integers(0, 256, (2, 2, 4)).astype(np.uint8)}
    _check(model, feeds)


def test_qlinear_global_and_window_average_pool(rng):
    pool = helper.make_node("QLinearGlobalAveragePool", ["x", "x_scale", "x_zero", "y_scale", "y_zero"], ["g"], domain=MS)
    window = helper.make_node(
        "QLinearAveragePool", ["x", "x_scale", "x_zero", "y_scale", "y_zero"], ["w"], domain=MS,
        kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1],
    )
    model = _model(
        [pool, window],
        [helper.make_tensor_value_info("x", U8, [1, 4, 7, 7])],
        [helper.make_tensor_value_info("g", U8, [1, 4, 1, 1]), helper.make_tensor_value_info("w", U8, [1, 4, 4, 4])],
        [*_scalars("x", 0.05, 128), *_scalars("y", 0.02, 100)],
    )
    _check(model, {"x": rng.integers(0, 256, (1, 4, 7, 7)).astype(np.uint8)})


@pytest.mark.parametrize("quantized_output", [True, False], ids=["uint8-out", "float-out"])
def test_qgemm_per_column_weights(quantized_output, rng):
    inputs = ["a", "a_scale", "a_zero", "b", "b_scale", "b_zero", "c"] + (["y_scale", "y_zero"] if quantized_output else [])
    node = helper.make_node("QGemm", inputs, ["y"], domain=MS, transB=1, alpha=1.0)
    inits = [
        *_scalars("a", 0.05, 120),
        helper.make_tensor("b", TensorProto.INT8, [6, 5], rng.integers(-63, 64, 30).tolist()),
        helper.make_tensor("b_scale", TensorProto.FLOAT, [6], rng.uniform(0.01, 0.05, 6).tolist()),
        helper.make_tensor("b_zero", TensorProto.INT8, [6], [0] * 6),
        helper.make_tensor("c", TensorProto.INT32, [6], rng.integers(-500, 500, 6).tolist()),
    ]
    if quantized_output:
        inits += _scalars("y", 0.1, 128)
    out_type = U8 if quantized_output else TensorProto.FLOAT
    model = _model(
        [node], [helper.make_tensor_value_info("a", U8, [4, 5])], [helper.make_tensor_value_info("y", out_type, [4, 6])], inits
    )
    feeds = {"a": rng.integers(0, 256, (4, 5)).astype(np.uint8)}
    if quantized_output:
        _check(model, feeds)
    else:
        actual = onnx_stablehlo.compile(model).run(feeds)[0]
        np.testing.assert_allclose(actual, ort_run(model, feeds)[0], rtol=1e-6, atol=1e-6)
