"""Parity of image geometry and ROI ops (frontend/lowering/image.py) against onnxruntime.

onnxruntime is the oracle; onnx.reference stands in where onnxruntime has no kernel (RoiAlign-22,
float64 Col2Im and Det, integer GridSample, cubic GridSample beyond 2-D) and for MaxUnpool with an
``output_shape``, where the lowering follows onnx.reference and the ONNX backend test rather than
onnxruntime (see the rule's docstring). MaxRoiPool-22 has neither: it is checked against
onnxruntime's MaxRoiPool-1, whose semantics it keeps. Data always comes through graph inputs, so
the rules run instead of being folded at compile time.
"""

from __future__ import annotations

from tests.util import node_model_text, ints_text, typed

import numpy as np
import pytest

import onnx_stablehlo
from onnx_stablehlo.errors import NonConstantInputError, ShapeError, UnsupportedAttributeError
from tests.util import (
    attrs_text as _attrs,
    assert_allclose_for_dtype,
    compile_and_run,
    emitted_text,
    onnx_type_name,
    oracle_run,
    ort_run,
    parse,
    reference_run,
)










# --------------------------------------------------------------------------------------------
# GridSample


def _grid_sample_model(x_shape, grid_shape, opset, dtype=np.float32, **attributes) -> str:
    out = (*x_shape[:2], *grid_shape[1:-1])
    return node_model_text("GridSample", opset, [("x", dtype, x_shape), ("grid", dtype, grid_shape)], ("y", dtype, out),
                  attributes)


def _grid(rng, shape, dtype=np.float32):
    """Normalized coordinates, some beyond [-1, 1] so every padding mode matters."""
    return rng.uniform(-1.3, 1.3, size=shape).astype(dtype)


@pytest.mark.parametrize("align_corners", [0, 1], ids=["half-pixel", "align-corners"])
@pytest.mark.parametrize("padding_mode", ["zeros", "border", "reflection"])
@pytest.mark.parametrize(
    "mode,opset",
    [("bilinear", 16), ("nearest", 16), ("bicubic", 16), ("linear", 20), ("nearest", 20), ("cubic", 22)],
    ids=lambda v: str(v),
)
def test_grid_sample_2d_matches_onnxruntime(mode, opset, padding_mode, align_corners, rng):
    model = parse(_grid_sample_model((2, 3, 5, 6), (2, 4, 7, 2), opset, mode=mode, padding_mode=padding_mode,
                                     align_corners=align_corners))
    feeds = {"x": rng.standard_normal((2, 3, 5, 6)).astype(np.float32), "grid": _grid(rng, (2, 4, 7, 2))}
    assert_allclose_for_dtype(compile_and_run(model, feeds), ort_run(model, feeds))


@pytest.mark.parametrize("align_corners", [0, 1], ids=["half-pixel", "align-corners"])
@pytest.mark.parametrize("padding_mode", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("mode", ["linear", "nearest"])
def test_grid_sample_3d_matches_onnxruntime(mode, padding_mode, align_corners, rng):
    model = parse(_grid_sample_model((1, 2, 3, 4, 5), (1, 2, 3, 4, 3), 20, mode=mode, padding_mode=padding_mode,
                                     align_corners=align_corners))
    feeds = {"x": rng.standard_normal((1, 2, 3, 4, 5)).astype(np.float32), "grid": _grid(rng, (1, 2, 3, 4, 3))}
    assert_allclose_for_dtype(compile_and_run(model, feeds), ort_run(model, feeds))


# Not border: onnx.reference clamps the cubic sampling position, onnxruntime and the rule each tap.
@pytest.mark.parametrize("padding_mode", ["zeros", "reflection"])
@pytest.mark.parametrize("shape", [((1, 1, 3, 4, 4), (1, 2, 2, 2, 3)), ((2, 3, 6), (2, 5, 1))], ids=["3d", "1d"])
def test_grid_sample_cubic_nd_matches_reference(shape, padding_mode, rng):
    x_shape, grid_shape = shape
    model = parse(_grid_sample_model(x_shape, grid_shape, 22, mode="cubic", padding_mode=padding_mode))
    feeds = {"x": rng.standard_normal(x_shape).astype(np.float32), "grid": _grid(rng, grid_shape)}
    assert_allclose_for_dtype(compile_and_run(model, feeds), reference_run(model, feeds))


@pytest.mark.parametrize("dtype", [np.float64, np.float16], ids=["f64", "f16"])
def test_grid_sample_other_floats_match_onnxruntime(dtype, rng):
    model = parse(_grid_sample_model((1, 2, 4, 5), (1, 3, 3, 2), 20, dtype=dtype, mode="linear"))
    feeds = {"x": rng.standard_normal((1, 2, 4, 5)).astype(dtype), "grid": _grid(rng, (1, 3, 3, 2), dtype)}
    assert_allclose_for_dtype(compile_and_run(model, feeds), ort_run(model, feeds))


def test_grid_sample_nearest_of_integers_matches_reference(rng):
    text = node_model_text("GridSample", 20, [("x", np.int32, (1, 2, 4, 5)), ("grid", np.float32, (1, 3, 3, 2))],
                  ("y", np.int32, (1, 2, 3, 3)), {"mode": "nearest", "padding_mode": "zeros"})
    model = parse(text)
    feeds = {"x": rng.integers(-100, 100, (1, 2, 4, 5)).astype(np.int32), "grid": _grid(rng, (1, 3, 3, 2))}
    assert_allclose_for_dtype(compile_and_run(model, feeds), reference_run(model, feeds))


def test_grid_sample_gathers_every_tap_at_once():
    model = parse(_grid_sample_model((1, 2, 4, 5), (1, 3, 3, 2), 20, mode="cubic"))
    text = emitted_text(model)
    assert text.count('"stablehlo.gather"') == 1
    assert "tensor<1x9x16x2xi64>" in text  # 16 = 4 x 4 cubic taps, 2 coordinates each


def test_grid_sample_rejects_unknown_mode_and_old_volumes():
    with pytest.raises(UnsupportedAttributeError, match="mode='linear'.*bilinear"):
        emitted_text(parse(_grid_sample_model((1, 1, 4, 4), (1, 2, 2, 2), 16, mode="linear")))
    with pytest.raises(ShapeError, match="4-D"):
        emitted_text(parse(_grid_sample_model((1, 1, 2, 4, 4), (1, 2, 2, 2, 3), 16)))


# --------------------------------------------------------------------------------------------
# AffineGrid


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["f32", "f64"])
@pytest.mark.parametrize(
    "size,align_corners",
    [((2, 3, 4, 5), 0), ((2, 3, 4, 5), 1), ((2, 1, 3, 4, 5), 0), ((2, 1, 3, 4, 5), 1), ((1, 1, 1, 3), 0)],
    ids=["2d-half-pixel", "2d-align-corners", "3d-half-pixel", "3d-align-corners", "2d-unit-height"],
)
def test_affine_grid_matches_onnxruntime(size, align_corners, dtype, rng):
    rank = len(size) - 2
    theta_shape = (size[0], rank, rank + 1)
    model = parse(node_model_text("AffineGrid", 20, [("theta", dtype, theta_shape), ("size", np.int64, (len(size),))],
                         ("grid", dtype, (size[0], *size[2:], rank)), {"align_corners": align_corners},
                         constants={"size": size}))
    feeds = {"theta": rng.standard_normal(theta_shape).astype(dtype)}
    assert_allclose_for_dtype(compile_and_run(model, feeds), ort_run(model, feeds))


def test_affine_grid_unit_size_with_align_corners_is_the_center():
    """PyTorch's choice (0); onnxruntime answers 1 and onnx.reference -1 for this corner case."""
    text = """<ir_version: 9, opset_import: ["" : 20]>
g (float[1, 2, 3] theta) => (float[1, 1, 3, 2] grid) <int64[4] size = {1, 1, 1, 3}> {
  [affine] grid = AffineGrid <align_corners = 1> (theta, size)
}"""
    identity = np.array([[[1, 0, 0], [0, 1, 0]]], np.float32)
    (grid,) = compile_and_run(parse(text), {"theta": identity})
    np.testing.assert_array_equal(grid[0, 0], [[-1, 0], [0, 0], [1, 0]])


def test_affine_grid_feeds_grid_sample(rng):
    """The spatial-transformer pair: AffineGrid's grid sampled by GridSample."""
    model = parse("""<ir_version: 9, opset_import: ["" : 20]>
g (float[2, 2, 3] theta, float[2, 3, 5, 6] x) => (float[2, 3, 4, 4] y) <int64[4] size = {2, 3, 4, 4}> {
  [affine] grid = AffineGrid(theta, size)
  [sample] y = GridSample(x, grid)
}""")
    feeds = {"theta": rng.standard_normal((2, 2, 3)).astype(np.float32),
             "x": rng.standard_normal((2, 3, 5, 6)).astype(np.float32)}
    assert_allclose_for_dtype(compile_and_run(model, feeds), ort_run(model, feeds))


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


# --------------------------------------------------------------------------------------------
# MaxUnpool


@pytest.mark.parametrize("opset", [9, 11, 22])
@pytest.mark.parametrize(
    "x_shape,attributes",
    [((1, 2, 4, 6), {"kernel_shape": [2, 2], "strides": [2, 2]}),
     ((2, 1, 5, 5), {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]}),
     ((1, 3, 9), {"kernel_shape": [3], "strides": [3]})],
    ids=["2x2", "3x3-pads", "1d"],
)
def test_max_unpool_inverts_max_pool_like_onnxruntime(x_shape, attributes, opset, rng):
    rank = len(x_shape) - 2
    kernel, strides = attributes["kernel_shape"], attributes["strides"]
    pads = attributes.get("pads", [0] * 2 * rank)
    pooled = [(x_shape[2 + i] + pads[i] + pads[rank + i] - kernel[i]) // strides[i] + 1 for i in range(rank)]
    unpooled = [(pooled[i] - 1) * strides[i] - pads[i] - pads[rank + i] + kernel[i] for i in range(rank)]
    text = f"""<ir_version: 9, opset_import: ["" : {opset}]>
g ({typed("x", np.float32, x_shape)}) => ({typed("y", np.float32, (*x_shape[:2], *unpooled))}) {{
  [pool] p, i = MaxPool {_attrs(attributes)} (x)
  [unpool] y = MaxUnpool {_attrs(attributes)} (p, i)
}}"""
    model = parse(text)
    feeds = {"x": rng.standard_normal(x_shape).astype(np.float32)}
    assert_allclose_for_dtype(compile_and_run(model, feeds), ort_run(model, feeds))
    assert '"stablehlo.scatter"' in emitted_text(model)


def test_max_unpool_output_shape_pads_like_reference(rng):
    """With output_shape, I indexes the inferred shape (onnx.reference, the ONNX backend test)."""
    text = f"""<ir_version: 9, opset_import: ["" : 22]>
g (float[1, 2, 2, 3] x, int64[1, 2, 2, 3] i) => (float[1, 2, 5, 7] y) <int64[4] shape = {{1, 2, 5, 7}}> {{
  [unpool] y = MaxUnpool <kernel_shape = [2, 2], strides = [2, 2]> (x, i, shape)
}}"""
    model = parse(text)
    indices = np.stack([rng.choice(24, 6, replace=False) + plane * 24 for plane in range(2)])  # 4x6 planes
    feeds = {"x": rng.standard_normal((1, 2, 2, 3)).astype(np.float32),
             "i": indices.reshape(1, 2, 2, 3).astype(np.int64)}
    assert_allclose_for_dtype(compile_and_run(model, feeds), reference_run(model, feeds))


# --------------------------------------------------------------------------------------------
# Det


@pytest.mark.parametrize("batch", [(), (3,), (2, 2)], ids=["single", "batch3", "batch2x2"])
@pytest.mark.parametrize("n", [1, 2, 3, 5, 8, 9, 12])
def test_det_matches_onnxruntime(n, batch, rng):
    shape = (*batch, n, n)
    model = parse(node_model_text("Det", 22, [("x", np.float32, shape)], ("y", np.float32, batch), {}))
    feeds = {"x": rng.standard_normal(shape).astype(np.float32)}
    assert_allclose_for_dtype(compile_and_run(model, feeds), ort_run(model, feeds))
    assert ("stablehlo.while" in emitted_text(model)) == (n > 8)


@pytest.mark.parametrize("opset", [11, 22])
@pytest.mark.parametrize("dtype", [np.float64, np.float16], ids=["f64", "f16"])
def test_det_other_floats_match_oracle(dtype, opset, rng):
    model = parse(node_model_text("Det", opset, [("x", dtype, (4, 4, 4))], ("y", dtype, (4,)), {}))
    feeds = {"x": rng.standard_normal((4, 4, 4)).astype(dtype)}
    assert_allclose_for_dtype(compile_and_run(model, feeds), oracle_run(model, feeds))


@pytest.mark.parametrize("n", [3, 10])
def test_det_of_singular_and_permuted_matrices(n, rng):
    """Zero pivots (a repeated row) give 0; row swaps flip the sign exactly."""
    base = rng.standard_normal((n, n))
    singular = base.copy()
    singular[-1] = singular[0]
    permutation = np.eye(n)[[1, 0, *range(2, n)]]
    stack = np.stack([singular, np.zeros((n, n)), permutation, np.eye(n) * 2]).astype(np.float64)
    model = parse(node_model_text("Det", 22, [("x", np.float64, (4, n, n))], ("y", np.float64, (4,)), {}))
    (actual,) = compile_and_run(model, {"x": stack})
    np.testing.assert_allclose(actual, [0.0, 0.0, -1.0, 2.0**n], atol=1e-12)


def test_det_rejects_non_square():
    with pytest.raises(ShapeError, match=r"\[\*, n, n\]"):
        emitted_text(parse(node_model_text("Det", 22, [("x", np.float32, (2, 3))], ("y", np.float32, ()), {})))


# --------------------------------------------------------------------------------------------
# bfloat16 (added to every op here at opset 22): computed in float32, so it must match the
# float32 oracle on the same (bfloat16-representable) inputs to bfloat16 precision.

BF16_CASES = {
    "grid-sample": ("GridSample", [("x", (1, 2, 4, 5)), ("grid", (1, 3, 3, 2))], (1, 2, 3, 3), {"mode": "cubic"}),
    "deform-conv": ("DeformConv", [("x", (1, 2, 5, 5)), ("w", (2, 2, 2, 2)), ("offset", (1, 8, 4, 4))],
                    (1, 2, 4, 4), {}),
    "det": ("Det", [("x", (3, 4, 4))], (3,), {}),
    "max-unpool": ("MaxUnpool", [("x", (1, 1, 2, 2)), ("i", (1, 1, 2, 2))], (1, 1, 4, 4),
                   {"kernel_shape": [2, 2], "strides": [2, 2]}),
}


@pytest.mark.parametrize("case", list(BF16_CASES), ids=list(BF16_CASES))
def test_bfloat16_matches_float32_oracle(case, rng):
    import ml_dtypes

    op, inputs, out_shape, attributes = BF16_CASES[case]

    def model(dtype):
        specs = [(name, np.int64 if name == "i" else dtype, shape) for name, shape in inputs]
        return parse(node_model_text(op, 22, specs, ("y", dtype, out_shape), attributes))

    feeds = {name: rng.uniform(-1, 1, shape).astype(ml_dtypes.bfloat16) for name, shape in inputs}
    if "i" in feeds:
        feeds["i"] = np.array([[[[1, 6], [8, 15]]]], np.int64)
    (actual,) = compile_and_run(model(ml_dtypes.bfloat16), feeds)
    wide = {name: value.astype(np.float32) if value.dtype == ml_dtypes.bfloat16 else value
            for name, value in feeds.items()}
    (expected,) = ort_run(model(np.float32), wide)
    assert actual.dtype == ml_dtypes.bfloat16
    np.testing.assert_allclose(actual.astype(np.float32), expected, rtol=2e-2, atol=2e-2)


# --------------------------------------------------------------------------------------------
# CenterCropPad (expanded from its ONNX function body; no rule of its own)


@pytest.mark.parametrize(
    "x_shape,shape,axes",
    [((5, 7, 3), [3, 9], [0, 1]), ((2, 4, 6), [5, 3], [-1, 1]), ((6, 4), [4, 6], None)],
    ids=["crop-pad", "negative-axes", "all-axes"],
)
def test_center_crop_pad_matches_onnxruntime(x_shape, shape, axes, rng):
    out = list(x_shape)
    for axis, size in zip(axes if axes is not None else range(len(x_shape)), shape):
        out[axis] = size
    attributes = {"axes": axes} if axes is not None else {}
    inputs = [("x", np.float32, x_shape), ("shape", np.int64, (len(shape),))]
    model = parse(node_model_text("CenterCropPad", 18, inputs, ("y", np.float32, out), attributes, constants={"shape": shape}))
    feeds = {"x": rng.standard_normal(x_shape).astype(np.float32)}
    assert_allclose_for_dtype(compile_and_run(model, feeds), ort_run(model, feeds))

