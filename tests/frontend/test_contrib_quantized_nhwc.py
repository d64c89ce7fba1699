"""com.microsoft QLinearAveragePool with ``channels_last=1`` (NHWC, as ORT's NHWC transformer writes it)
against onnxruntime's CPU kernel: frontend/lowering/quantized.py."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper

import onnx_stablehlo
from tests.frontend.contrib_util import ort_run


@pytest.mark.parametrize("dtype", [np.uint8, np.int8], ids=["u8", "i8"])
@pytest.mark.parametrize("attributes", [{"kernel_shape": [2, 2]}, {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1], "strides": [2, 2]},
                                        {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1], "count_include_pad": 1}],
                         ids=["k2", "k3-pad-stride", "k3-include-pad"])
def test_qlinear_average_pool_channels_last(dtype, attributes, rng):
    elem = helper.np_dtype_to_tensor_dtype(np.dtype(dtype))
    node = helper.make_node("QLinearAveragePool", ["x", "xs", "xz", "ys", "yz"], ["y"], domain="com.microsoft",
                            channels_last=1, **attributes)
    graph = helper.make_graph(
        [node], "qlap_nhwc",
        [helper.make_tensor_value_info("x", elem, [2, 7, 6, 5])],
        [helper.make_tensor_value_info("y", elem, ["n", "h", "w", "c"])],
        initializer=[helper.make_tensor("xs", TensorProto.FLOAT, [], [0.05]), helper.make_tensor("xz", elem, [], [3]),
                     helper.make_tensor("ys", TensorProto.FLOAT, [], [0.04]), helper.make_tensor("yz", elem, [], [-2 if dtype == np.int8 else 5])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)], ir_version=9)
    info = np.iinfo(dtype)
    x = rng.integers(info.min, info.max, (2, 7, 6, 5), endpoint=True).astype(dtype)
    (got,), (want,) = onnx_stablehlo.compile(model).run({"x": x}), ort_run(model, {"x": x})
    assert got.dtype == want.dtype and got.shape == want.shape
    # ORT's NHWC kernel rounds its sum its own way: at most one quantum apart, on a few elements.
    difference = np.abs(got.astype(np.int64) - want.astype(np.int64))
    assert difference.max() <= 1 and (difference > 0).mean() < 0.05, (difference.max(), (difference > 0).mean())
