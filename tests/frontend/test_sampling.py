"""Parity of the sampling family (frontend/lowering/sampling.py: GridSample, AffineGrid) against
onnxruntime, onnx.reference where onnxruntime has no kernel (integer GridSample, cubic GridSample
beyond 2-D).
"""

from __future__ import annotations

import numpy as np
import pytest

from onnx_stablehlo.errors import ShapeError, UnsupportedAttributeError
from tests.util import (assert_allclose_for_dtype, check_bfloat16_matches_float32, compile_and_run, emitted_text,
                        node_model_text, ort_run, parse, reference_run)

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


@pytest.mark.parametrize("align_corners", [0, 1], ids=["half-pixel", "align-corners"])
def test_grid_sample_linear_border_clamps_infinite_coordinates(align_corners, rng):
    """Linear ``border`` clamps the unnormalized coordinate before its taps: an infinite or huge
    coordinate reads the edge pixel, as onnx.reference does (fuzz seed 50 #76054: -inf gave NaN
    weights, inf - inf). onnxruntime agrees on that case; on others it converts such coordinates
    to integer indices (undefined in C++), so onnx.reference is the oracle here."""
    model = parse(_grid_sample_model((1, 2, 3, 4), (1, 2, 5, 2), 20, mode="linear", padding_mode="border",
                                     align_corners=align_corners))
    grid = _grid(rng, (1, 2, 5, 2))
    grid.reshape(-1)[[0, 3, 5, 6, 9, 12, 17]] = [-np.inf, np.inf, -np.inf, 1e30, -1e30, np.inf, -1e30]
    feeds = {"x": rng.standard_normal((1, 2, 3, 4)).astype(np.float32), "grid": grid}
    (got,) = compile_and_run(model, feeds)
    assert np.isfinite(got).all()
    assert_allclose_for_dtype([got], reference_run(model, feeds))


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


# bfloat16 (added to GridSample at opset 22): computed in float32, so it must match the float32
# oracle on the same (bfloat16-representable) inputs to bfloat16 precision.

BF16_CASES = {
    "grid-sample": ("GridSample", [("x", (1, 2, 4, 5)), ("grid", (1, 3, 3, 2))], (1, 2, 3, 3), {"mode": "cubic"}),
}


@pytest.mark.parametrize("case", list(BF16_CASES), ids=list(BF16_CASES))
def test_bfloat16_matches_float32_oracle(case, rng):
    check_bfloat16_matches_float32(*BF16_CASES[case], rng)
