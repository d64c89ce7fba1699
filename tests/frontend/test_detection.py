"""Parity of the detection family (frontend/lowering/detection.py: RoiAlign, MaxRoiPool,
NonMaxSuppression) against onnxruntime.

onnx.reference stands in for RoiAlign-22; MaxRoiPool-22 is checked against onnxruntime's
MaxRoiPool-1, whose semantics it keeps. NonMaxSuppression runs at compile time, so its inputs are
Constant nodes and the importer's own folding is switched off (``fold_max_elements=0``) to reach
the rule; onnxruntime is the oracle (onnx.reference fails on omitted optional inputs).
"""

from __future__ import annotations

import numpy as np
import pytest

import onnx_stablehlo
from onnx_stablehlo.errors import NonConstantInputError, UnsupportedAttributeError
from onnx_stablehlo.frontend.importer import import_model
from onnx_stablehlo.frontend.loader import load
from tests.util import (assert_allclose_for_dtype, compile_and_run, dims_text, emitted_text, node_model_text,
                        oracle_run, ort_run, parse, reference_run)

# --------------------------------------------------------------------------------------------
# RoiAlign


def _rois(rng, count, height, width, scale):
    """Boxes (x1, y1, x2, y2) in input coordinates: mostly inside, some past the border."""
    corners = rng.uniform(-0.2, 1.1, size=(count, 2, 2)) * np.array([width, height]) / scale
    low, high = corners.min(axis=1), corners.max(axis=1)
    return np.concatenate([low, high], axis=1).astype(np.float32)


def _roi_align_model(opset, x_shape, count, dtype=np.float32, **attributes) -> str:
    out = (count, x_shape[1], attributes.get("output_height", 1), attributes.get("output_width", 1))
    inputs = [("x", dtype, x_shape), ("rois", dtype, (count, 4)), ("batch", np.int64, (count,))]
    return node_model_text("RoiAlign", opset, inputs, ("y", dtype, out), attributes)


def _roi_align_feeds(rng, x_shape, count, scale, dtype=np.float32):
    return {
        "x": rng.standard_normal(x_shape).astype(dtype),
        "rois": _rois(rng, count, x_shape[2], x_shape[3], scale).astype(dtype),
        "batch": rng.integers(0, x_shape[0], count).astype(np.int64),
    }


@pytest.mark.parametrize("sampling_ratio", [0, 2, 5], ids=["adaptive", "ratio2", "ratio5"])
@pytest.mark.parametrize("coordinate_mode", ["half_pixel", "output_half_pixel"])
@pytest.mark.parametrize("mode", ["avg", "max"])
def test_roi_align_matches_onnxruntime(mode, coordinate_mode, sampling_ratio, rng):
    attributes = {"mode": mode, "coordinate_transformation_mode": coordinate_mode, "output_height": 3,
                  "output_width": 4, "sampling_ratio": sampling_ratio, "spatial_scale": 0.5}
    model = parse(_roi_align_model(16, (2, 3, 8, 9), 5, **attributes))
    feeds = _roi_align_feeds(rng, (2, 3, 8, 9), 5, 0.5)
    assert_allclose_for_dtype(compile_and_run(model, feeds), ort_run(model, feeds))
    # A sample count per roi known only at run time (or above the unroll limit) needs a loop.
    assert ("stablehlo.while" in emitted_text(model)) == (sampling_ratio != 2)


@pytest.mark.parametrize("mode", ["avg", "max"])
def test_roi_align_opset10_is_output_half_pixel(mode, rng):
    model = parse(_roi_align_model(10, (1, 2, 6, 6), 4, mode=mode, output_height=2, output_width=2))
    feeds = _roi_align_feeds(rng, (1, 2, 6, 6), 4, 1.0)
    assert_allclose_for_dtype(compile_and_run(model, feeds), ort_run(model, feeds))


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["f32", "f64"])
def test_roi_align_opset22_matches_reference(dtype, rng):
    model = parse(_roi_align_model(22, (2, 2, 6, 7), 3, dtype=dtype, output_height=2, output_width=3))
    feeds = _roi_align_feeds(rng, (2, 2, 6, 7), 3, 1.0, dtype)
    assert_allclose_for_dtype(compile_and_run(model, feeds), reference_run(model, feeds), np.float32)


def test_roi_align_rejects_unknown_mode():
    with pytest.raises(UnsupportedAttributeError, match="mode='sum'.*avg, max"):
        emitted_text(parse(_roi_align_model(16, (1, 1, 4, 4), 1, mode="sum")))


# --------------------------------------------------------------------------------------------
# MaxRoiPool


def _max_roi_pool_model(opset, x_shape, count, pooled, scale) -> str:
    return node_model_text("MaxRoiPool", opset, [("x", np.float32, x_shape), ("rois", np.float32, (count, 5))],
                  ("y", np.float32, (count, x_shape[1], *pooled)), {"pooled_shape": pooled, "spatial_scale": scale})


@pytest.mark.parametrize(
    "pooled,scale", [([2, 2], 1.0), ([3, 4], 0.5), ([4, 3], 0.25)], ids=["2x2", "3x4-half", "4x3-quarter"]
)
def test_max_roi_pool_matches_onnxruntime(pooled, scale, rng):
    x_shape, count = (2, 3, 7, 8), 6
    boxes = _rois(rng, count, x_shape[2], x_shape[3], scale)
    rois = np.concatenate([rng.integers(0, x_shape[0], (count, 1)).astype(np.float32), boxes], axis=1)
    feeds = {"x": rng.standard_normal(x_shape).astype(np.float32), "rois": rois}
    expected = ort_run(parse(_max_roi_pool_model(1, x_shape, count, pooled, scale)), feeds)
    for opset in (1, 22):  # onnxruntime has MaxRoiPool-1 only; 22 only added bfloat16
        actual = compile_and_run(parse(_max_roi_pool_model(opset, x_shape, count, pooled, scale)), feeds)
        assert_allclose_for_dtype(actual, expected)


# NonMaxSuppression ---------------------------------------------------------------------------


def _floats(values: np.ndarray) -> str:
    return ", ".join(repr(float(v)) for v in values.reshape(-1))


def nms_model(boxes, scores, max_out=None, iou=None, score=None, center=0, opset=11):
    lines = [
        f"b = Constant <value = float[{dims_text(boxes.shape)}] {{{_floats(boxes)}}}> ()",
        f"s = Constant <value = float[{dims_text(scores.shape)}] {{{_floats(scores)}}}> ()",
    ]
    args = ["b", "s"]
    for name, value, ty in (("m", max_out, "int64"), ("t", iou, "float"), ("c", score, "float")):
        if value is None:
            args.append("")
            continue
        text = str(int(value)) if ty == "int64" else repr(float(value))
        lines.append(f"{name} = Constant <value = {ty}[1] {{{text}}}> ()")
        args.append(name)
    while args and args[-1] == "":
        args.pop()
    body = "\n  ".join([*lines, f"y = NonMaxSuppression <center_point_box = {center}> ({', '.join(args)})"])
    return parse(f"""<ir_version: 9, opset_import: ["" : {opset}]>
g (float[1] unused) => (int64[?, 3] y) {{
  {body}
}}""")


def _compile_time_outputs(model) -> list[np.ndarray]:
    """The constants @main returns when the rule (not the importer's folding) computes them."""
    lowered = import_model(load(model), fold_max_elements=0)
    with lowered.context:
        main = lowered.module.body.operations[0]
        ret = main.regions[0].blocks[0].operations[-1]
        return [np.array(v.owner.attributes["value"]) for v in ret.operands]


def _random_boxes(rng, batches, count, center):
    if center:
        xy = rng.uniform(0, 10, (batches, count, 2))
        wh = rng.uniform(0.5, 4, (batches, count, 2))
        return np.concatenate([xy, wh], axis=-1).astype(np.float32)
    corners = rng.uniform(0, 10, (batches, count, 4))
    return corners.astype(np.float32)  # unordered corners (flipped boxes) included


# (batches, classes, boxes, max_out, iou, score, center)
NMS_CASES = [
    (1, 1, 12, 5, 0.5, None, 0),
    (2, 3, 10, 4, 0.3, 0.4, 0),
    (1, 2, 15, 100, 0.0, 0.2, 1),
    (2, 1, 8, 3, 0.7, None, 1),
    (1, 1, 6, None, None, None, 0),
]


@pytest.mark.parametrize("opset", [10, 11], ids=lambda v: f"opset{v}")
@pytest.mark.parametrize("case", NMS_CASES, ids=["single-class", "score-threshold", "center-boxes", "batches", "defaults"])
def test_non_max_suppression_of_constants_matches_onnxruntime(case, opset, rng):
    batches, classes, count, max_out, iou, score, center = case
    boxes = _random_boxes(rng, batches, count, center)
    scores = rng.random((batches, classes, count)).astype(np.float32)
    scores[..., 1] = scores[..., 0]  # a tie, ordered by box index
    model = nms_model(boxes, scores, max_out, iou, score, center, opset)
    (actual,) = _compile_time_outputs(model)
    (expected,) = oracle_run(model, {"unused": np.zeros(1, np.float32)})
    assert actual.dtype == np.int64
    np.testing.assert_array_equal(actual, np.asarray(expected).reshape(-1, 3))


def test_non_max_suppression_of_identical_boxes_keeps_one():
    boxes = np.tile(np.array([0, 0, 1, 1], np.float32), (1, 5, 1))
    scores = np.full((1, 1, 5), 0.9, np.float32)
    (actual,) = _compile_time_outputs(nms_model(boxes, scores, 3, 0.5))
    np.testing.assert_array_equal(actual, [[0, 0, 0]])


def test_non_max_suppression_of_run_time_boxes_is_rejected():
    model = parse("""<ir_version: 9, opset_import: ["" : 11]>
g (float[1, 6, 4] boxes, float[1, 1, 6] scores) => (int64[?, 3] y) {
  m = Constant <value = int64[1] {3}> ()
  y = NonMaxSuppression (boxes, scores, m)
}""")
    with pytest.raises(NonConstantInputError, match=r"output size depends on the values of input 0 \('boxes'\)"):
        onnx_stablehlo.lower(model)
