"""Shared by the ai.onnx.ml parity tests (test_ml_linear, test_ml_tree, test_ml_preprocess):
one-node ai.onnx.ml models built with ``onnx.helper``, and their comparison with onnxruntime."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper

import onnx_stablehlo
from tests.util import assert_allclose_for_dtype, ort_run


def assert_scores_close(actual, expected, post: str) -> None:
    """PROBIT's erfinv approximation subtracts nearly equal terms near 0.5: an ulp of log or
    sqrt becomes up to ~1e-4 there (the approximation itself is only good to ~2e-3)."""
    if post != "PROBIT":
        assert_allclose_for_dtype(actual, expected)
        return
    np.testing.assert_array_equal(actual[0], expected[0])
    np.testing.assert_allclose(actual[1], expected[1], rtol=0, atol=2e-4, equal_nan=True)


ML = "ai.onnx.ml"
POST_TRANSFORMS = ["NONE", "LOGISTIC", "SOFTMAX", "SOFTMAX_ZERO", "PROBIT"]


def ml_model(node: onnx.NodeProto, inputs, outputs, ml_opset: int = 3, opset: int = 17) -> onnx.ModelProto:
    """A checked model of one ai.onnx.ml ``node`` (default domain at ``opset``)."""
    graph = helper.make_graph([node], "g", inputs, outputs)
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", opset), helper.make_opsetid(ML, ml_opset)], ir_version=9
    )
    onnx.checker.check_model(model)
    return model


def feature_input(features: int, dtype=TensorProto.FLOAT):
    """The graph input ``X`` of shape [N, features]."""
    return helper.make_tensor_value_info("X", dtype, ["N", features])


def run_both(model: onnx.ModelProto, feeds: dict) -> tuple[list, list]:
    """(our outputs, onnxruntime's) for ``feeds``."""
    return onnx_stablehlo.compile(model).run(feeds), ort_run(model, feeds)
