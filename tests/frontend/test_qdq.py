"""The QDQ fusion (frontend/qdq.py): DequantizeLinear -> Conv/Add -> QuantizeLinear groups run as
QLinearConv / com.microsoft QLinearAdd, bit-identical to onnxruntime (which fuses them too)."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import onnx_stablehlo
from onnx_stablehlo.frontend.loader import load
from tests.util import ort_run


def _qdq_model(rng: np.random.Generator, per_channel: bool, fusable: bool = True) -> onnx.ModelProto:
    """x(uint8) -> DQ -> Conv(DQ(w int8), DQ(b int32)) -> Q -> DQ -> Add(DQ(skip)) -> Q -> y."""
    channels = 4
    w_scale = rng.uniform(0.01, 0.03, channels).astype(np.float32) if per_channel else np.float32(0.02)
    inits = [
        numpy_helper.from_array(np.float32(0.05), "x_scale"),
        numpy_helper.from_array(np.uint8(120), "x_zero"),
        numpy_helper.from_array(rng.integers(-63, 64, (channels, 3, 3, 3)).astype(np.int8), "w"),
        numpy_helper.from_array(np.asarray(w_scale, np.float32), "w_scale"),
        numpy_helper.from_array(np.zeros(channels, np.int8) if per_channel else np.int8(0), "w_zero"),
        numpy_helper.from_array(rng.integers(-300, 300, channels).astype(np.int32), "b"),
        numpy_helper.from_array(np.asarray(np.float32(0.05) * w_scale, np.float32).reshape(-1), "b_scale"),
        numpy_helper.from_array(np.float32(0.2), "y_scale"),
        numpy_helper.from_array(np.uint8(128), "y_zero"),
        numpy_helper.from_array(np.float32(0.1), "z_scale"),
        numpy_helper.from_array(np.uint8(100), "z_zero"),
    ]
    axis = {"axis": 0} if per_channel else {}
    nodes = [
        helper.make_node("DequantizeLinear", ["x", "x_scale", "x_zero"], ["xf"]),
        helper.make_node("DequantizeLinear", ["w", "w_scale", "w_zero"], ["wf"], **axis),
        helper.make_node("DequantizeLinear", ["b", "b_scale"], ["bf"], axis=0),
        helper.make_node("Conv", ["xf", "wf", "bf"], ["conv"], pads=[1, 1, 1, 1], name="conv"),
        helper.make_node("QuantizeLinear", ["conv", "y_scale", "y_zero"], ["yq"]),
        helper.make_node("DequantizeLinear", ["yq", "y_scale", "y_zero"], ["yf"]),
        helper.make_node("DequantizeLinear", ["skip", "x_scale", "x_zero"], ["sf"]),
        helper.make_node("Add", ["yf", "sf"], ["sum"], name="add"),
        helper.make_node("QuantizeLinear", ["sum", "z_scale", "z_zero"], ["z"]),
    ]
    outputs = [helper.make_tensor_value_info("z", TensorProto.UINT8, [1, channels, 6, 6])]
    if not fusable:  # the Conv's float output is also a graph output: the group stays float
        outputs.append(helper.make_tensor_value_info("conv", TensorProto.FLOAT, [1, channels, 6, 6]))
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", TensorProto.UINT8, [1, 3, 6, 6]), helper.make_tensor_value_info("skip", TensorProto.UINT8, [1, channels, 6, 6])],
        outputs,
        initializer=inits,
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=9)


@pytest.mark.parametrize("per_channel", [False, True], ids=["per-tensor", "per-channel"])
def test_qdq_conv_and_add_fuse_and_equal_onnxruntime(per_channel, rng):
    model = _qdq_model(rng, per_channel)
    ops = [(n.domain, n.op_type) for n in load(model).graph]
    assert ("", "QLinearConv") in ops and ("com.microsoft", "QLinearAdd") in ops
    assert ("", "Conv") not in ops and ("", "Add") not in ops
    feeds = {"x": rng.integers(0, 256, (1, 3, 6, 6)).astype(np.uint8), "skip": rng.integers(0, 256, (1, 4, 6, 6)).astype(np.uint8)}
    actual = onnx_stablehlo.compile(model).run(feeds)
    np.testing.assert_array_equal(actual[0], ort_run(model, feeds)[0])


def test_qdq_group_whose_float_value_is_used_elsewhere_is_kept(rng):
    model = _qdq_model(rng, per_channel=False, fusable=False)
    ops = [n.op_type for n in load(model).graph]
    assert "Conv" in ops and "QLinearConv" not in ops
    assert "QLinearAdd" in ops  # the Add group is independent
