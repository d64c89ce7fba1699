"""Pooling windows larger than the padded input in ``ceil_mode`` (frontend/builders/windows.py).

EfficientNet's transformers implementation pools its 7x7 features with
``AvgPool2d(1280, ceil_mode=True)``; the exporters write an AveragePool whose window (1280) is
larger than the input. The specs' ``ceil((in + pads - k) / s) + 1`` is 1 while the window
overshoots the padded input by less than a stride, and onnxruntime pools the whole input (the
overshoot is ceil_mode padding, never counted). onnxruntime is the oracle.
"""

from __future__ import annotations

import numpy as np
import pytest

import onnx_stablehlo
from onnx_stablehlo.errors import ShapeError
from tests.util import check_node, node_model_text, parse

CASES = {  # x shape, attributes: one output window per spatial axis
    "efficientnet": ((1, 3, 7, 7), {"kernel_shape": [1280, 1280], "strides": [1280, 1280]}),
    "pads": ((1, 2, 7, 6), {"kernel_shape": [9, 8], "strides": [4, 3], "pads": [1, 1, 0, 0]}),
    "stride-2": ((2, 1, 7), {"kernel_shape": [8], "strides": [2]}),
}


@pytest.mark.parametrize("op,include_pad", [("AveragePool", 0), ("AveragePool", 1), ("MaxPool", None)],
                         ids=["average-exclude-pad", "average-include-pad", "max"])
@pytest.mark.parametrize("case", list(CASES), ids=list(CASES))
def test_ceil_mode_window_larger_than_input_matches_onnxruntime(case, op, include_pad, rng):
    shape, attributes = CASES[case]
    attributes = {**attributes, "ceil_mode": 1}
    if include_pad is not None:
        attributes["count_include_pad"] = include_pad
    x = rng.standard_normal(shape).astype(np.float32)
    text = check_node(op, 18, [("x", x)], attributes)
    # float32 MaxPool: a maximum of strided slices (windows.max_by_slices) up to 32 taps
    sliced = op == "MaxPool" and sum(attributes["kernel_shape"]) <= 32
    assert ("stablehlo.reduce_window" in text) != sliced


@pytest.mark.parametrize("ceil_mode,kernel", [(0, 8), (1, 9)], ids=["floor", "ceil-overshoot-by-a-stride"])
def test_window_larger_than_input_without_an_output_raises_shape_error(ceil_mode, kernel):
    """Floor mode, or a window overshooting by a whole stride, leaves no window: a ShapeError."""
    attributes = {"kernel_shape": [kernel], "strides": [2], "ceil_mode": ceil_mode}
    text = node_model_text("AveragePool", 18, [("x", "float", (1, 1, 7))], [("y", "float", (1, 1, 1))], attributes)
    model = parse(text)
    with pytest.raises(ShapeError, match="larger than the padded input"):
        onnx_stablehlo.compile(model)(x=np.zeros((1, 1, 7), np.float32))
