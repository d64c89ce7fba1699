"""Lowering rules: sampling an image at computed positions.

::

    GridSample(X, grid)          -> per spatial axis, source coordinates and tap weights computed
                                    from the run-time grid; one stablehlo.gather of every tap
                                    combination (batched over N), weighted sum over the taps
    AffineGrid(theta, size)      -> a compile-time base grid times theta (multiply-adds)

Coordinates and weights are computed in float32 (float64 for float64 inputs); float16 and
bfloat16 data are interpolated in float32. Run-time indices are clamped into range before every
gather; taps outside the input get weight zero (or the edge/reflected pixel, per padding mode).

CenterCropPad has no rule: the importer expands its ONNX function body.

Spec: onnx.ai/onnx/operators (each op's page); onnx.reference where the page leaves details open.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import stablehlo

from onnx_stablehlo.errors import ShapeError
from onnx_stablehlo.frontend import builders
from onnx_stablehlo.frontend.builders import geometry
from onnx_stablehlo.frontend.context import LoweringContext, OnnxNode
from onnx_stablehlo.frontend.dtypes import DataType
from onnx_stablehlo.frontend.registry import lowering


_GRID_SAMPLE_MODES = {
    16: {"bilinear": "linear", "nearest": "nearest", "bicubic": "cubic"},
    20: {"linear": "linear", "nearest": "nearest", "cubic": "cubic"},
}

_PADDING_MODES = ("zeros", "border", "reflection")

_CUBIC_A = -0.75  # GridSample's cubic coefficient (PyTorch's), not configurable


def _reflect(f: builders.Arith, x: ir.Value, lo: float, hi: float) -> ir.Value:
    """Reflects ``x`` by the borders ``[lo, hi]`` until it lies inside (GridSample's rule)."""
    span = hi - lo
    if span <= 0:
        return f.const(lo)
    below = f.cmp(x, lo, "LT")
    above = f.cmp(x, hi, "GT")
    distance = f.select(below, f.sub(lo, x), f.sub(x, hi))
    folds = f.floor(f.exact_div(distance, span))
    rest = f.sub(distance, f.mul(folds, span))
    odd = f.cmp(f.sub(folds, f.mul(f.floor(f.mul(folds, 0.5)), 2.0)), 0.0, "NE")
    # Below the range an even fold count lands at lo + rest, above it at hi - rest; odd swaps.
    from_lo = stablehlo.xor(below, odd)
    reflected = f.select(from_lo, f.add(lo, rest), f.sub(hi, rest))
    return f.select(builders.logical_or(below, above), reflected, x)


def _cubic_weights(f: builders.Arith, t: ir.Value) -> list[ir.Value]:
    """Keys cubic weights of the taps at -1, 0, 1, 2 from the floor, ``t`` the fraction."""
    a = _CUBIC_A

    def near(d: ir.Value) -> ir.Value:  # |d| <= 1
        return f.add(f.mul(f.mul(f.sub(f.mul(a + 2, d), a + 3), d), d), 1.0)

    def far(d: ir.Value) -> ir.Value:  # 1 < |d| < 2
        return f.sub(f.mul(f.add(f.mul(f.sub(f.mul(a, d), 5 * a), d), 8 * a), d), 4 * a)

    return [far(f.add(t, 1.0)), near(t), near(f.sub(1.0, t)), far(f.sub(2.0, t))]


def _grid_axis_taps(f: builders.Arith, coord: ir.Value, size: int, mode: str, padding: str, align: bool) -> list[geometry.Tap]:
    """The taps of normalized coordinates ``coord`` along one spatial axis of length ``size``."""
    lo, hi = (0.0, size - 1.0) if align else (-0.5, size - 0.5)
    if align:
        x = f.mul(f.mul(f.add(coord, 1.0), 0.5), size - 1)
    else:
        x = f.mul(f.sub(f.mul(f.add(coord, 1.0), size), 1.0), 0.5)
    # The padding mode applies to each tap (as in onnxruntime and PyTorch), except that linear
    # ``border`` clamps x itself first, as onnxruntime does: the same taps and weights for a
    # finite x (both taps of an outside x read the edge pixel), and an infinite x reads the edge
    # pixel instead of turning the weights into inf - inf = NaN (fuzz seed 50 #76054).
    if mode == "linear" and padding == "border":
        x = f.clamp(x, 0.0, size - 1.0)
    if mode == "nearest":
        x = stablehlo.round_nearest_even(x)  # ties to even, as PyTorch
        positions: list[tuple[ir.Value, ir.Value | None]] = [(x, None)]
    else:
        base = f.floor(x)
        t = f.sub(x, base)
        if mode == "linear":
            positions = [(base, f.sub(1.0, t)), (f.add(base, 1.0), t)]
        else:
            weights = _cubic_weights(f, t)
            positions = [(f.add(base, float(o)), w) for o, w in zip((-1, 0, 1, 2), weights)]
    taps = []
    for position, weight in positions:
        valid = None
        if padding == "zeros":
            valid = builders.logical_and(f.cmp(position, 0.0, "GE"), f.cmp(position, size - 1.0, "LE"))
        elif padding == "reflection":
            position = stablehlo.round_nearest_even(_reflect(f, position, lo, hi))
        index = builders.convert(f.clamp(position, 0.0, size - 1.0), DataType.INT64)
        taps.append((index, weight, valid))
    return taps


def _grid_sample(x: ir.Value, grid: ir.Value, mode: str, padding: str, align: bool) -> ir.Value:
    batch, channels, *dims = builders.static_shape_of(x)
    grid_shape = builders.static_shape_of(grid)
    out_dims = list(grid_shape[1:-1])
    rank = len(dims)
    points = math.prod(out_dims)
    x_dtype = builders.dtype_of(x)
    compute = geometry.compute_dtype(x_dtype, builders.dtype_of(grid))
    coords = builders.reshape(builders.convert(grid, compute), [batch, points, rank])
    f = builders.Arith([batch, points], compute)
    # grid[..., 0] indexes the last spatial axis (x = width), grid[..., 1] the one before, ...
    per_axis = [
        _grid_axis_taps(f, geometry.component(coords, rank - 1 - axis), size, mode, padding, align)
        for axis, size in enumerate(dims)
    ]
    indices, weights, valid = geometry.combine_taps(per_axis, [batch, points])
    combos = builders.static_shape_of(indices)[2]
    table = builders.transpose(x, [0, *range(2, rank + 2), 1])  # [N, d1..dr, C]
    values = geometry.gather_vectors(table, indices, batch=1)  # [N, P, T, C]
    full = [batch, points, combos, channels]
    if valid is not None:
        zeros = builders.splat(0, x_dtype, full)
        values = stablehlo.select(builders.broadcast_to(valid, full, dims=[0, 1, 2]), values, zeros)
    if weights is None:
        result = builders.reshape(values, [batch, points, channels])
    else:
        spread = builders.broadcast_to(weights, full, dims=[0, 1, 2])
        weighted = stablehlo.multiply(builders.convert(values, compute), spread)
        result = builders.convert(builders.reduce(weighted, [2], stablehlo.AddOp, 0), x_dtype)
    return builders.reshape(builders.transpose(result, [0, 2, 1]), [batch, channels, *out_dims])


@lowering("GridSample", since=16)
@lowering("GridSample", since=20)  # 20 renamed the modes to linear/cubic and allowed N-D inputs
@lowering("GridSample", since=22)  # 22 added bfloat16
def lower_grid_sample(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value]:
    """Lowers GridSample to tap coordinates computed from the grid and one batched gather.

    Each spatial axis gets 1 (nearest), 2 (linear) or 4 (cubic) taps per output point; every
    combination of taps is gathered at once from X transposed to ``[N, d1..dr, C]`` and the
    weighted taps are summed. Out-of-range taps read zero (``zeros``), the edge pixel
    (``border``) or the pixel reflected at the borders (``reflection``).

    Spec: GridSample-16/20/22.
    Shapes: X [N, C, d1..dr] static (r = 2 before opset 20); grid [N, D1..Dr, r] static, its
        last axis holding (x, y, ...) = (dr, ..., d1) coordinates in [-1, 1]; Y [N, C, D1..Dr].
    Dtypes: X float16, bfloat16, float32, float64 (any type with ``nearest``); grid float.
    Deviations: ``cubic`` with ``border`` padding clamps each tap, as onnxruntime and PyTorch do;
        onnx.reference clamps the sampling position first (the other modes agree either way).
    Raises: UnsupportedAttributeError for an unknown mode or padding_mode; ShapeError for
        mismatched shapes; UnsupportedDtypeError for a non-float X with linear/cubic.
    """
    names = _GRID_SAMPLE_MODES[16 if node.since_version < 20 else 20]
    mode_name = node.attr_str("mode")
    if mode_name not in names:
        raise ctx.unsupported_attribute("mode", mode_name, ", ".join(names))
    mode = names[mode_name]
    padding = node.attr_str("padding_mode")
    if padding not in _PADDING_MODES:
        raise ctx.unsupported_attribute("padding_mode", padding, ", ".join(_PADDING_MODES))
    x_shape = ctx.input_static_shape(0)
    grid_shape = ctx.input_static_shape(1)
    rank = len(x_shape) - 2
    if rank < 1 or (node.since_version < 20 and rank != 2):
        expected = "4-D" if node.since_version < 20 else "at least 3-D"
        raise ctx.error(f"X must be {expected}, got shape {list(x_shape)}", ShapeError)
    if len(grid_shape) != rank + 2 or grid_shape[0] != x_shape[0] or grid_shape[-1] != rank:
        raise ctx.error(
            f"grid must have shape [{x_shape[0]}, D1..D{rank}, {rank}] for X {list(x_shape)}, got {list(grid_shape)}",
            ShapeError,
        )
    if mode != "nearest":
        geometry.require_float(ctx, 0)
    geometry.require_float(ctx, 1)
    align = bool(node.attr_int("align_corners"))
    return [_grid_sample(ctx.input(0), ctx.input(1), mode, padding, align)]


def _affine_base_grid(spatial: Sequence[int], align: bool) -> np.ndarray:
    """``[prod(spatial), r + 1]`` homogeneous points ``(x, y, [z,] 1)``, x along the last axis."""
    axes = []
    for size in spatial:
        index = np.arange(size, dtype=np.float64)
        if size == 1:  # the center, in both modes (as PyTorch)
            axes.append(np.zeros(1))
        elif align:
            axes.append(-1.0 + index * (2.0 / (size - 1)))
        else:
            step = 2.0 / size
            axes.append(-1.0 + step / 2 + index * step)
    mesh = np.meshgrid(*axes, indexing="ij")
    columns = [m.reshape(-1) for m in reversed(mesh)]
    columns.append(np.ones(math.prod(spatial)))
    return np.stack(columns, axis=1)


@lowering("AffineGrid", since=20)
def lower_affine_grid(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value]:
    """Lowers AffineGrid to a compile-time base grid multiplied by theta.

    ``grid[n, p, i] = sum_k theta[n, i, k] * base[p, k]``, with ``base`` the homogeneous
    normalized coordinates of every output position (in float64, then in the compute dtype);
    the sum over the 3 or 4 ``k`` is emitted as broadcast multiply-adds, exact in the input
    precision on every device.

    Spec: AffineGrid-20.
    Shapes: theta [N, 2, 3] (2-D) or [N, 3, 4] (3-D); size int64 [4] = (N, C, H, W) or
        [5] = (N, C, D, H, W), known at compile time; grid [N, H, W, 2] or [N, D, H, W, 3].
    Dtypes: theta float16, bfloat16, float32, float64 (float16/bfloat16 computed in float32).
    Deviations: a spatial size of 1 samples the center (0) with align_corners=1 too, as PyTorch
        does; onnxruntime puts it at 1 and onnx.reference at -1.
    Raises: NonConstantInputError if size is computed at run time; ShapeError for mismatched
        shapes.
    """
    dtype = geometry.require_float(ctx, 0)
    theta_shape = ctx.input_static_shape(0)
    size = ctx.constant_ints(1)
    rank = len(size) - 2
    if rank not in (2, 3) or theta_shape != (size[0], rank, rank + 1):
        raise ctx.error(
            f"theta {list(theta_shape)} and size {size} must be [N, 2, 3] with 4 sizes or [N, 3, 4] with 5",
            ShapeError,
        )
    batch, spatial = size[0], size[2:]
    points = math.prod(spatial)
    compute = geometry.compute_dtype(dtype)
    theta = builders.convert(ctx.input(0), compute)
    base = _affine_base_grid(spatial, bool(node.attr_int("align_corners")))
    out = [batch, points, rank]
    grid = None
    for k in range(rank + 1):
        term = builders.broadcast_to(geometry.component(theta, k), out, dims=[0, 2])
        if k < rank:  # the last homogeneous coordinate is 1
            column = builders.broadcast_to(builders.constant(base[:, k], compute), out, dims=[1])
            term = stablehlo.multiply(term, column)
        grid = term if grid is None else stablehlo.add(grid, term)
    return [builders.convert(builders.reshape(grid, [batch, *spatial, rank]), dtype)]
