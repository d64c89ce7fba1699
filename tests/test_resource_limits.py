"""Attributes that imply absurd work are refused up front, not compiled for ever (issue 15)."""

from __future__ import annotations

import numpy as np
import onnx
import pytest

import onnx_stablehlo
from onnx_stablehlo import errors
from tests.util import TOLERANCES, ort_run

HEADER = '<ir_version: 9, opset_import: ["" : 18]>'
HUGE = 2**62


@pytest.mark.parametrize(
    "attributes",
    [f"kernel_shape = [2, {HUGE}]", f'kernel_shape = [2, {HUGE}], auto_pad = "SAME_UPPER"',
     f"kernel_shape = [2, {HUGE}], pads = [0, 0, 0, {HUGE}]", f"kernel_shape = [2, 2], pads = [0, 0, 0, {HUGE}]",
     f"kernel_shape = [2, 2], dilations = [1, {HUGE}]"],
    ids=["kernel", "kernel-same", "kernel-pads", "pads", "dilations"],
)
def test_huge_pooling_windows_are_refused(attributes):
    model = onnx.parser.parse_model(
        f"{HEADER}\ng (float[1, 1, 4, 4] x) => (float[1, 1, 3, 1] y) {{ [mp] y = MaxPool <{attributes}> (x) }}"
    )
    with pytest.raises(errors.ResourceLimitError, match="'mp'.*exceeds the limit"):
        onnx_stablehlo.compile(model, check=False)


@pytest.mark.parametrize("size", [5, 11, 2**62 + 1])
def test_lrn_window_is_clipped_to_the_channels(size):
    model = onnx.parser.parse_model(
        f"{HEADER}\ng (float[2, 3, 4, 4] x) => (float[2, 3, 4, 4] y) {{ [lrn] y = LRN <size = {size}, alpha = 0.5> (x) }}"
    )
    x = np.random.default_rng(0).standard_normal((2, 3, 4, 4)).astype(np.float32)
    got = onnx_stablehlo.compile(model, check=False).run({"x": x})[0]
    rtol, atol = TOLERANCES["float32"]
    if size < 2**31:
        expected = ort_run(model, {"x": x})[0]
    else:  # onnxruntime and onnx.reference cannot run a window of 2^62: the spec's formula
        expected = _lrn_reference(x, size, 0.5, 0.75, 1.0)
        np.testing.assert_allclose(_lrn_reference(x, 11, 0.5, 0.75, 1.0), ort_run(_with_size(model, 11), {"x": x})[0],
                                   rtol=rtol, atol=atol)
    np.testing.assert_allclose(got, expected, rtol=rtol, atol=atol)


def _lrn_reference(x, size, alpha, beta, bias):
    """The spec's formula with the window clipped to [0, C) (exact for any size)."""
    channels = x.shape[1]
    square = np.zeros_like(x, dtype=np.float64)
    for c in range(channels):
        lo = max(0, c - (size - 1) // 2)
        hi = min(channels - 1, c + size - 1 - (size - 1) // 2)
        square[:, c] = (x[:, lo : hi + 1].astype(np.float64) ** 2).sum(axis=1)
    return (x / (bias + alpha / size * square) ** beta).astype(np.float32)


def _with_size(model: onnx.ModelProto, size: int) -> onnx.ModelProto:
    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    for attribute in copy.graph.node[0].attribute:
        if attribute.name == "size":
            attribute.i = size
    return copy


def test_a_padded_size_of_2_to_the_63_is_refused_not_an_xla_abort():
    """Found by tools/fuzz.py (seed 5, case 1710): XLA aborted the process on this shape."""
    model = onnx.parser.parse_model(
        f"{HEADER}\ng (float[10, 7, 3] x, int64[3] shape) => (float[20, 10, 3] y) {{ [ccp] y = CenterCropPad(x, shape) }}"
    )
    feeds = {"x": np.ones((10, 7, 3), np.float32), "shape": np.array([20, 10, 2**63 - 1], np.int64)}
    with pytest.raises(errors.ResourceLimitError, match="over the limit of 1099511627776"):
        onnx_stablehlo.compile(model, check=False).run(feeds)


def test_a_huge_roi_align_sampling_ratio_is_refused():
    """Found by tools/fuzz.py (seed 6, case 173): a run-time loop of 2^62 steps."""
    model = onnx.parser.parse_model(
        f"{HEADER}\ng (float[1, 1, 10, 10] x, float[3, 4] rois, int64[3] b) => (float[3, 1, 5, 5] y) "
        f"{{ [roi] y = RoiAlign <output_height = 5, output_width = 5, sampling_ratio = {2**31}> (x, rois, b) }}"
    )
    with pytest.raises(errors.ResourceLimitError, match="sampling_ratio=2147483648"):
        onnx_stablehlo.compile(model, check=False)
