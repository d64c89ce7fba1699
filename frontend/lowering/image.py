"""Lowering rules: image geometry, regions of interest, unpooling and determinants.

::

    GridSample(X, grid)          -> per spatial axis, source coordinates and tap weights computed
                                    from the run-time grid; one stablehlo.gather of every tap
                                    combination (batched over N), weighted sum over the taps
    AffineGrid(theta, size)      -> a compile-time base grid times theta (multiply-adds)
    Col2Im(x, image, block)      -> per kernel offset, a stablehlo.pad placing that offset's
                                    column block in the image (interior padding = stride - 1),
                                    summed with stablehlo.add
    DeformConv(X, W, offset, ..) -> every kernel tap sampled bilinearly at its offset position
                                    (stablehlo.gather), masked, then stablehlo.dot_general with W
    RoiAlign(X, rois, batch)     -> per sample point, the 4 bilinear corners gathered from X and
                                    averaged or maxed; a stablehlo.while over the sample points
                                    when sampling_ratio = 0 (their count depends on each roi)
    MaxRoiPool(X, rois)          -> masked stablehlo.reduce (max) over W, then over H
    MaxUnpool(X, I, shape)       -> stablehlo.scatter of X at the flat indices I into zeros
    Det(X)                       -> Gaussian elimination with partial pivoting, unrolled up to
                                    8x8, a stablehlo.while beyond

Coordinates and weights are computed in float32 (float64 for float64 inputs); float16 and
bfloat16 data are interpolated in float32. Run-time indices are clamped into range before every
gather; taps outside the input get weight zero (or the edge/reflected pixel, per padding mode).

CenterCropPad has no rule: the importer expands its ONNX function body. Einsum is in matmul.py.

Spec: onnx.ai/onnx/operators (each op's page); onnx.reference where the page leaves details open.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence

import numpy as np
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import stablehlo

from onnx_stablehlo.errors import ResourceLimitError, ShapeError
from onnx_stablehlo.frontend import dtypes, emit, limits
from onnx_stablehlo.frontend.context import LoweringContext, OnnxNode
from onnx_stablehlo.frontend.dtypes import DataType
from onnx_stablehlo.frontend.registry import lowering

_FLOATS = "float16, bfloat16, float32, float64"

_DET_UNROLL_MAX = 8
"""Det of matrices up to this size is unrolled; larger ones loop in a stablehlo.while."""

_ROI_UNROLL_MAX_SAMPLES = 16
"""RoiAlign with a fixed sampling_ratio unrolls up to this many sample points per bin."""


# --------------------------------------------------------------------------------------------
# Shared builders


def _compute_dtype(*types: DataType) -> DataType:
    """float64 if any of ``types`` is float64, else float32."""
    return DataType.DOUBLE if DataType.DOUBLE in types else DataType.FLOAT


def _require_float(ctx: LoweringContext, index: int) -> DataType:
    dtype = ctx.input_dtype(index)
    if not dtypes.is_float(dtype):
        raise ctx.unsupported_dtype(dtype, _FLOATS)
    return dtype


def _ints_attr(node: OnnxNode, name: str, default: Sequence[int]) -> list[int]:
    """An ints attribute, or ``default`` when it is absent or empty."""
    value = node.attr_ints(name)
    return list(value) if value else list(default)


def _constant_ints(ctx: LoweringContext, index: int) -> list[int]:
    return [int(v) for v in np.asarray(ctx.constant_input(index)).reshape(-1)]


class _Arith:
    """Elementwise ops on values of one static shape and dtype; Python numbers become splats."""

    def __init__(self, shape: Sequence[int], dtype: DataType) -> None:
        self.shape = tuple(int(d) for d in shape)
        self.dtype = dtype

    def const(self, value: float) -> ir.Value:
        return emit.splat(value, self.dtype, self.shape)

    def _v(self, value: ir.Value | float) -> ir.Value:
        return value if isinstance(value, ir.Value) else self.const(value)

    def add(self, a, b) -> ir.Value:
        return stablehlo.AddOp(self._v(a), self._v(b)).result

    def sub(self, a, b) -> ir.Value:
        return stablehlo.SubtractOp(self._v(a), self._v(b)).result

    def mul(self, a, b) -> ir.Value:
        return stablehlo.MulOp(self._v(a), self._v(b)).result

    def exact_div(self, a, b) -> ir.Value:
        """``a / b`` correctly rounded: the divisor passes through an optimization barrier, so
        XLA cannot turn the division into a multiplication by a reciprocal (which moves
        ``floor``/``ceil`` of exact quotients)."""
        (opaque,) = stablehlo.OptimizationBarrierOp([self._v(b)]).results
        return stablehlo.DivOp(self._v(a), opaque).result

    def floor(self, a: ir.Value) -> ir.Value:
        return stablehlo.FloorOp(a).result

    def ceil(self, a: ir.Value) -> ir.Value:
        return stablehlo.CeilOp(a).result

    def max(self, a, b) -> ir.Value:
        return stablehlo.MaxOp(self._v(a), self._v(b)).result

    def clamp(self, a: ir.Value, lo: float, hi: float) -> ir.Value:
        return stablehlo.ClampOp(self._v(lo), a, self._v(hi)).result

    def cmp(self, a, b, direction: str) -> ir.Value:
        return emit.compare(self._v(a), self._v(b), direction)

    def select(self, cond: ir.Value, a, b) -> ir.Value:
        return stablehlo.SelectOp(cond, self._v(a), self._v(b)).result

    def iota(self, dim: int) -> ir.Value:
        return stablehlo.IotaOp(emit.tensor_type(self.shape, self.dtype), dim).result


def _and(a: ir.Value, b: ir.Value) -> ir.Value:
    return stablehlo.AndOp(a, b).result


def _or(a: ir.Value, b: ir.Value) -> ir.Value:
    return stablehlo.OrOp(a, b).result


def _stack(values: Sequence[ir.Value]) -> ir.Value:
    """Stacks same-shape values along a new last axis."""
    shape = list(emit.static_shape_of(values[0]))
    parts = [emit.reshape(v, [*shape, 1]) for v in values]
    return parts[0] if len(parts) == 1 else stablehlo.ConcatenateOp(parts, len(shape)).result


def _component(value: ir.Value, index: int) -> ir.Value:
    """``value[..., index]`` (the last axis dropped)."""
    shape = emit.static_shape_of(value)
    return emit.reshape(_axis_slice(value, len(shape) - 1, index), shape[:-1])


def _expect_rank(ctx: LoweringContext, index: int, rank: int) -> tuple[int, ...]:
    """Input ``index``'s static shape, which must have ``rank`` dims (ShapeError otherwise)."""
    shape = ctx.input_static_shape(index)
    if len(shape) != rank:
        name = ctx.node.input_names[index]
        raise ctx.error(f"input {index} ('{name}') must be {rank}-D, got {list(shape)}", ShapeError)
    return shape


def _axis_slice(value: ir.Value, axis: int, index: int) -> ir.Value:
    """``value`` sliced to ``index`` along ``axis`` (kept as size 1)."""
    shape = emit.static_shape_of(value)
    starts = [0] * len(shape)
    limits = list(shape)
    starts[axis], limits[axis] = index, index + 1
    return stablehlo.SliceOp(value, starts, limits, [1] * len(shape)).result


def _take_rows(value: ir.Value, indices: ir.Value) -> ir.Value:
    """``value[indices]`` along axis 0 (``indices`` [R] in range): ``[R, *value.shape[1:]]``."""
    shape = emit.static_shape_of(value)
    count = emit.static_shape_of(indices)[0]
    numbers = stablehlo.GatherDimensionNumbers.get(
        offset_dims=list(range(1, len(shape))),
        collapsed_slice_dims=[0],
        operand_batching_dims=[],
        start_indices_batching_dims=[],
        start_index_map=[0],
        index_vector_dim=1,
    )
    result_type = emit.tensor_type([count, *shape[1:]], emit.dtype_of(value))
    return stablehlo.GatherOp(
        value, indices, numbers, emit.i64_array([1, *shape[1:]]), indices_are_sorted=False, results=[result_type]
    ).result


def _gather_vectors(table: ir.Value, indices: ir.Value, batch: int) -> ir.Value:
    """Gathers last-axis vectors of ``table`` at run-time points.

    Args:
        table: ``[b1..bk, d1..dr, c]``.
        indices: ``[b1..bk, s..., r]`` int, in-range coordinates into ``d1..dr``.
        batch: ``k``, the leading dims ``table`` and ``indices`` share (gather batching dims).

    Returns:
        ``[b1..bk, s..., c]``.
    """
    table_shape = emit.static_shape_of(table)
    index_shape = emit.static_shape_of(indices)
    point_rank = index_shape[-1]
    point_dims = list(range(batch, batch + point_rank))
    numbers = stablehlo.GatherDimensionNumbers.get(
        offset_dims=[len(index_shape) - 1],
        collapsed_slice_dims=point_dims,
        operand_batching_dims=list(range(batch)),
        start_indices_batching_dims=list(range(batch)),
        start_index_map=point_dims,
        index_vector_dim=len(index_shape) - 1,
    )
    slice_sizes = [1] * (batch + point_rank) + [table_shape[-1]]
    result_type = emit.tensor_type([*index_shape[:-1], table_shape[-1]], emit.dtype_of(table))
    return stablehlo.GatherOp(
        table, indices, numbers, emit.i64_array(slice_sizes), indices_are_sorted=False, results=[result_type]
    ).result


def _dot(
    lhs: ir.Value,
    rhs: ir.Value,
    batch: tuple[Sequence[int], Sequence[int]],
    contract: tuple[Sequence[int], Sequence[int]],
) -> ir.Value:
    """``stablehlo.dot_general`` at HIGHEST precision (no TF32/bf16 passes on accelerators)."""
    lhs_shape = emit.static_shape_of(lhs)
    rhs_shape = emit.static_shape_of(rhs)
    numbers = stablehlo.DotDimensionNumbers.get(
        lhs_batching_dimensions=list(batch[0]),
        rhs_batching_dimensions=list(batch[1]),
        lhs_contracting_dimensions=list(contract[0]),
        rhs_contracting_dimensions=list(contract[1]),
    )
    lhs_free = [d for i, d in enumerate(lhs_shape) if i not in batch[0] and i not in contract[0]]
    rhs_free = [d for i, d in enumerate(rhs_shape) if i not in batch[1] and i not in contract[1]]
    shape = [lhs_shape[i] for i in batch[0]] + lhs_free + rhs_free
    highest = stablehlo.PrecisionAttr.get("HIGHEST")
    return stablehlo.DotGeneralOp(
        emit.tensor_type(shape, emit.dtype_of(lhs)),
        lhs,
        rhs,
        numbers,
        precision_config=ir.ArrayAttr.get([highest, highest]),
    ).result


def _while(
    init: Sequence[ir.Value],
    cond: Callable[[list[ir.Value]], ir.Value],
    body: Callable[[list[ir.Value]], Sequence[ir.Value]],
) -> list[ir.Value]:
    """``stablehlo.while`` carrying ``init``; ``cond``/``body`` build its regions from the carry."""
    types = [v.type for v in init]
    op = stablehlo.WhileOp(types, list(init))
    cond_block = op.cond.blocks.append(*types)
    with ir.InsertionPoint(cond_block):
        stablehlo.ReturnOp([cond(list(cond_block.arguments))])
    body_block = op.body.blocks.append(*types)
    with ir.InsertionPoint(body_block):
        stablehlo.ReturnOp(list(body(list(body_block.arguments))))
    return list(op.results)


def _scalar(value: float | int, dtype: DataType) -> ir.Value:
    return emit.splat(value, dtype)


def _clamp_index(index: ir.Value, size: int) -> ir.Value:
    """int64 ``index`` clamped into ``[0, size)``."""
    return stablehlo.ClampOp(_scalar(0, DataType.INT64), index, _scalar(size - 1, DataType.INT64)).result


def _increment(counter: ir.Value) -> ir.Value:
    return stablehlo.AddOp(counter, _scalar(1, DataType.INT64)).result


# --------------------------------------------------------------------------------------------
# GridSample and AffineGrid

_GRID_SAMPLE_MODES = {
    16: {"bilinear": "linear", "nearest": "nearest", "bicubic": "cubic"},
    20: {"linear": "linear", "nearest": "nearest", "cubic": "cubic"},
}
_PADDING_MODES = ("zeros", "border", "reflection")
_CUBIC_A = -0.75  # GridSample's cubic coefficient (PyTorch's), not configurable


def _reflect(f: _Arith, x: ir.Value, lo: float, hi: float) -> ir.Value:
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
    from_lo = stablehlo.XorOp(below, odd).result
    reflected = f.select(from_lo, f.add(lo, rest), f.sub(hi, rest))
    return f.select(_or(below, above), reflected, x)


def _cubic_weights(f: _Arith, t: ir.Value) -> list[ir.Value]:
    """Keys cubic weights of the taps at -1, 0, 1, 2 from the floor, ``t`` the fraction."""
    a = _CUBIC_A

    def near(d: ir.Value) -> ir.Value:  # |d| <= 1
        return f.add(f.mul(f.mul(f.sub(f.mul(a + 2, d), a + 3), d), d), 1.0)

    def far(d: ir.Value) -> ir.Value:  # 1 < |d| < 2
        return f.sub(f.mul(f.add(f.mul(f.sub(f.mul(a, d), 5 * a), d), 8 * a), d), 4 * a)

    return [far(f.add(t, 1.0)), near(t), near(f.sub(1.0, t)), far(f.sub(2.0, t))]


_Tap = tuple[ir.Value, "ir.Value | None", "ir.Value | None"]
"""(int64 index, float weight or None, bool validity or None) of one tap along one axis."""


def _grid_axis_taps(f: _Arith, coord: ir.Value, size: int, mode: str, padding: str, align: bool) -> list[_Tap]:
    """The taps of normalized coordinates ``coord`` along one spatial axis of length ``size``."""
    lo, hi = (0.0, size - 1.0) if align else (-0.5, size - 0.5)
    if align:
        x = f.mul(f.mul(f.add(coord, 1.0), 0.5), size - 1)
    else:
        x = f.mul(f.sub(f.mul(f.add(coord, 1.0), size), 1.0), 0.5)
    # The padding mode applies to each tap, never to x itself (as in onnxruntime and PyTorch).
    if mode == "nearest":
        x = stablehlo.RoundNearestEvenOp(x).result  # ties to even, as PyTorch
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
            valid = _and(f.cmp(position, 0.0, "GE"), f.cmp(position, size - 1.0, "LE"))
        elif padding == "reflection":
            position = stablehlo.RoundNearestEvenOp(_reflect(f, position, lo, hi)).result
        index = emit.convert(f.clamp(position, 0.0, size - 1.0), DataType.INT64)
        taps.append((index, weight, valid))
    return taps


def _combine_taps(per_axis: Sequence[Sequence[_Tap]], lead: Sequence[int]):
    """Every combination of one tap per axis: indices ``[*lead, T, r]``, weights and validity
    ``[*lead, T]`` (``None`` when no axis has them), ``T = taps ** r``."""
    rank = len(per_axis)
    count = len(per_axis[0])
    combos = count**rank
    grid = [*lead, *([count] * rank)]
    lead_dims = list(range(len(lead)))

    def spread(values: Sequence[ir.Value], axis: int) -> ir.Value:
        stacked = _stack(values)
        spread_out = emit.broadcast_to(stacked, grid, dims=[*lead_dims, len(lead) + axis])
        return emit.reshape(spread_out, [*lead, combos])

    indices = _stack([spread([tap[0] for tap in taps], axis) for axis, taps in enumerate(per_axis)])
    weights = valid = None
    for axis, taps in enumerate(per_axis):
        if taps[0][1] is not None:
            w = spread([tap[1] for tap in taps], axis)
            weights = w if weights is None else stablehlo.MulOp(weights, w).result
        if taps[0][2] is not None:
            v = spread([tap[2] for tap in taps], axis)
            valid = v if valid is None else _and(valid, v)
    return indices, weights, valid


def _grid_sample(x: ir.Value, grid: ir.Value, mode: str, padding: str, align: bool) -> ir.Value:
    batch, channels, *dims = emit.static_shape_of(x)
    grid_shape = emit.static_shape_of(grid)
    out_dims = list(grid_shape[1:-1])
    rank = len(dims)
    points = math.prod(out_dims)
    x_dtype = emit.dtype_of(x)
    compute = _compute_dtype(x_dtype, emit.dtype_of(grid))
    coords = emit.reshape(emit.convert(grid, compute), [batch, points, rank])
    f = _Arith([batch, points], compute)
    # grid[..., 0] indexes the last spatial axis (x = width), grid[..., 1] the one before, ...
    per_axis = [
        _grid_axis_taps(f, _component(coords, rank - 1 - axis), size, mode, padding, align)
        for axis, size in enumerate(dims)
    ]
    indices, weights, valid = _combine_taps(per_axis, [batch, points])
    combos = emit.static_shape_of(indices)[2]
    table = emit.transpose(x, [0, *range(2, rank + 2), 1])  # [N, d1..dr, C]
    values = _gather_vectors(table, indices, batch=1)  # [N, P, T, C]
    full = [batch, points, combos, channels]
    if valid is not None:
        zeros = emit.splat(0, x_dtype, full)
        values = stablehlo.SelectOp(emit.broadcast_to(valid, full, dims=[0, 1, 2]), values, zeros).result
    if weights is None:
        result = emit.reshape(values, [batch, points, channels])
    else:
        spread = emit.broadcast_to(weights, full, dims=[0, 1, 2])
        weighted = stablehlo.MulOp(emit.convert(values, compute), spread).result
        result = emit.convert(emit.reduce(weighted, [2], stablehlo.AddOp, 0), x_dtype)
    return emit.reshape(emit.transpose(result, [0, 2, 1]), [batch, channels, *out_dims])


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
        _require_float(ctx, 0)
    _require_float(ctx, 1)
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
    dtype = _require_float(ctx, 0)
    theta_shape = ctx.input_static_shape(0)
    size = _constant_ints(ctx, 1)
    rank = len(size) - 2
    if rank not in (2, 3) or theta_shape != (size[0], rank, rank + 1):
        raise ctx.error(
            f"theta {list(theta_shape)} and size {size} must be [N, 2, 3] with 4 sizes or [N, 3, 4] with 5",
            ShapeError,
        )
    batch, spatial = size[0], size[2:]
    points = math.prod(spatial)
    compute = _compute_dtype(dtype)
    theta = emit.convert(ctx.input(0), compute)
    base = _affine_base_grid(spatial, bool(node.attr_int("align_corners")))
    out = [batch, points, rank]
    grid = None
    for k in range(rank + 1):
        term = emit.broadcast_to(_component(theta, k), out, dims=[0, 2])
        if k < rank:  # the last homogeneous coordinate is 1
            column = emit.broadcast_to(emit.constant(base[:, k], compute), out, dims=[1])
            term = stablehlo.MulOp(term, column).result
        grid = term if grid is None else stablehlo.AddOp(grid, term).result
    return [emit.convert(emit.reshape(grid, [batch, *spatial, rank]), dtype)]


# --------------------------------------------------------------------------------------------
# Col2Im


@lowering("Col2Im", since=18)
def lower_col2im(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value]:
    """Lowers Col2Im to one strided stablehlo.pad per kernel offset, summed.

    The column block of kernel offset ``o`` lands at image positions
    ``o * dilation - pad_begin + i * stride``: a pad with ``interior = stride - 1`` and
    ``low = o * dilation - pad_begin`` (negative low/high padding crops what falls outside).

    Spec: Col2Im-18.
    Shapes: input [N, C * prod(block_shape), L] static, L the number of blocks;
        image_shape and block_shape int64 [r], known at compile time; output [N, C, *image_shape].
    Dtypes: any numeric type and bool (bool blocks are or-ed).
    Raises: NonConstantInputError if image_shape or block_shape is computed at run time;
        ShapeError if the input does not hold whole blocks for the image.
    """
    x = ctx.input(0)
    dtype = ctx.input_dtype(0)
    batch, block_channels, length = _expect_rank(ctx, 0, 3)
    image = _constant_ints(ctx, 1)
    block = _constant_ints(ctx, 2)
    rank = len(image)
    if len(block) != rank or rank == 0:
        raise ctx.error(f"image_shape {image} and block_shape {block} must have the same nonzero length", ShapeError)
    dilations = _ints_attr(node, "dilations", [1] * rank)
    pads = _ints_attr(node, "pads", [0] * (2 * rank))
    strides = _ints_attr(node, "strides", [1] * rank)
    if len(dilations) != rank or len(strides) != rank or len(pads) != 2 * rank:
        raise ctx.error(
            f"dilations {dilations}, strides {strides} and pads {pads} must match {rank} image dims", ShapeError
        )
    kernel = math.prod(block)
    columns = [
        (image[i] + pads[i] + pads[rank + i] - (dilations[i] * (block[i] - 1) + 1)) // strides[i] + 1
        for i in range(rank)
    ]
    if block_channels % kernel or min(columns) < 1 or math.prod(columns) != length:
        raise ctx.error(
            f"input shape {[batch, block_channels, length]} does not hold blocks {block} of image {image} "
            f"(expected dim 1 a multiple of {kernel} and dim 2 = {math.prod(columns)})",
            ShapeError,
        )
    channels = block_channels // kernel
    blocks = emit.reshape(x, [batch, channels, kernel, *columns])
    zero = _scalar(0, dtype)
    combine = stablehlo.OrOp if dtype == DataType.BOOL else stablehlo.AddOp
    image_value = None
    for k, offsets in enumerate(itertools.product(*[range(b) for b in block])):
        starts = [0, 0, k] + [0] * rank
        limits = [batch, channels, k + 1, *columns]
        slab = stablehlo.SliceOp(blocks, starts, limits, [1] * (rank + 3)).result
        slab = emit.reshape(slab, [batch, channels, *columns])
        low = [offsets[i] * dilations[i] - pads[i] for i in range(rank)]
        high = [image[i] - (low[i] + (columns[i] - 1) * strides[i] + 1) for i in range(rank)]
        interior = [s - 1 for s in strides]
        placed = stablehlo.PadOp(slab, zero, [0, 0, *low], [0, 0, *high], [0, 0, *interior]).result
        image_value = placed if image_value is None else combine(image_value, placed).result
    return [image_value]


# --------------------------------------------------------------------------------------------
# DeformConv


@lowering("DeformConv", since=19)
@lowering("DeformConv", since=22)  # 22 added bfloat16
def lower_deform_conv(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value]:
    """Lowers DeformConv to bilinear sampling (stablehlo.gather) and stablehlo.dot_general.

    Kernel tap ``k`` of output position ``p`` samples X at ``p * stride - pad_begin +
    k * dilation + offset[k, p]``, bilinearly with zeros outside X (the 2^r corners of every
    tap in one gather, batched over N and offset groups), times ``mask``; the sampled columns
    ``[N, C, K, P]`` are then contracted with W per group.

    Spec: DeformConv-19/22.
    Shapes: X [N, C, d1..dr]; W [M, C/group, k1..kr]; offset [N, offset_group*K*r, o1..or];
        B [M] optional; mask [N, offset_group*K, o1..or] optional (K = prod(k)); all static;
        Y [N, M, o1..or] with the convolution output sizes.
    Dtypes: float16, bfloat16, float32, float64 (float16/bfloat16 computed in float32).
    Raises: ShapeError for inconsistent shapes, groups or offset groups.
    """
    dtype = _require_float(ctx, 0)
    x_shape = ctx.input_static_shape(0)
    w_shape = ctx.input_static_shape(1)
    offset_shape = ctx.input_static_shape(2)
    rank = len(x_shape) - 2
    batch, channels, *dims = x_shape
    out_channels = w_shape[0]
    kernel = _ints_attr(node, "kernel_shape", w_shape[2:])
    group = node.attr_int("group")
    offset_group = node.attr_int("offset_group")
    strides = _ints_attr(node, "strides", [1] * rank)
    dilations = _ints_attr(node, "dilations", [1] * rank)
    pads = _ints_attr(node, "pads", [0] * (2 * rank))
    if rank < 1 or len(w_shape) != rank + 2 or list(w_shape[2:]) != kernel:
        raise ctx.error(f"X {list(x_shape)} and W {list(w_shape)} must be [N, C, *spatial] and "
                        f"[M, C/group, *kernel_shape] with kernel_shape {kernel}", ShapeError)
    if len(strides) != rank or len(dilations) != rank or len(pads) != 2 * rank:
        raise ctx.error(f"strides {strides}, dilations {dilations} and pads {pads} must match {rank} spatial dims",
                        ShapeError)
    taps = math.prod(kernel)
    out_dims = [
        (dims[i] + pads[i] + pads[rank + i] - (dilations[i] * (kernel[i] - 1) + 1)) // strides[i] + 1
        for i in range(rank)
    ]
    problems = []
    if group < 1 or channels != w_shape[1] * group or out_channels % group:
        problems.append(f"C={channels} and M={out_channels} must split into group={group}")
    if offset_group < 1 or channels % offset_group:
        problems.append(f"C={channels} must split into offset_group={offset_group}")
    if list(offset_shape) != [batch, offset_group * taps * rank, *out_dims]:
        problems.append(f"offset {list(offset_shape)} must be {[batch, offset_group * taps * rank, *out_dims]}")
    if ctx.has_input(4) and list(ctx.input_static_shape(4)) != [batch, offset_group * taps, *out_dims]:
        problems.append(f"mask {list(ctx.input_static_shape(4))} must be {[batch, offset_group * taps, *out_dims]}")
    if problems:
        raise ctx.error("; ".join(problems), ShapeError)

    compute = _compute_dtype(dtype)
    points = math.prod(out_dims)
    lead = [batch, offset_group, taps, points]
    offsets = emit.reshape(emit.convert(ctx.input(2), compute), [batch, offset_group, taps, rank, points])
    f = _Arith(lead, compute)
    # Compile-time part of every sample position: [K, P] per axis.
    kernel_index = np.stack(np.meshgrid(*[np.arange(k) for k in kernel], indexing="ij"), -1).reshape(taps, rank)
    out_index = np.stack(np.meshgrid(*[np.arange(o) for o in out_dims], indexing="ij"), -1).reshape(points, rank)
    per_axis = []
    for axis, size in enumerate(dims):
        base = (
            out_index[None, :, axis] * strides[axis]
            - pads[axis]
            + kernel_index[:, None, axis] * dilations[axis]
        ).astype(np.float64)
        position = f.add(
            emit.broadcast_to(emit.constant(base, compute), lead, dims=[2, 3]),
            emit.reshape(_axis_slice(offsets, 3, axis), lead),
        )
        low = f.floor(position)
        t = f.sub(position, low)
        axis_taps = []
        for corner, weight in ((low, f.sub(1.0, t)), (f.add(low, 1.0), t)):
            valid = _and(f.cmp(corner, 0.0, "GE"), f.cmp(corner, size - 1.0, "LE"))
            index = emit.convert(f.clamp(corner, 0.0, size - 1.0), DataType.INT64)
            axis_taps.append((index, weight, valid))
        per_axis.append(axis_taps)
    indices, weights, valid = _combine_taps(per_axis, lead)
    corners = 2**rank
    if ctx.has_input(4):
        mask = emit.reshape(emit.convert(ctx.input(4), compute), lead)
        weights = stablehlo.MulOp(weights, emit.broadcast_to(mask, [*lead, corners], dims=[0, 1, 2, 3])).result

    group_channels = channels // offset_group
    x = emit.reshape(ctx.input(0), [batch, offset_group, group_channels, *dims])
    table = emit.transpose(x, [0, 1, *range(3, rank + 3), 2])  # [N, G, d1..dr, C/G]
    values = emit.convert(_gather_vectors(table, indices, batch=2), compute)  # [N, G, K, P, T, C/G]
    full = [*lead, corners, group_channels]
    valid_full = emit.broadcast_to(valid, full, dims=[0, 1, 2, 3, 4])
    values = stablehlo.SelectOp(valid_full, values, emit.splat(0, compute, full)).result
    weighted = stablehlo.MulOp(values, emit.broadcast_to(weights, full, dims=[0, 1, 2, 3, 4])).result
    sampled = emit.reduce(weighted, [4], stablehlo.AddOp, 0)  # [N, G, K, P, C/G]
    # Columns [N, group, C/group, K, P] against W [group, M/group, C/group, K].
    columns = emit.transpose(sampled, [0, 1, 4, 2, 3])
    columns = emit.reshape(columns, [batch, group, channels // group, taps, points])
    w = emit.convert(ctx.input(1), compute)
    w = emit.reshape(w, [group, out_channels // group, channels // group, taps])
    product = _dot(w, columns, batch=([0], [1]), contract=([2, 3], [2, 3]))  # [group, M/group, N, P]
    y = emit.reshape(emit.transpose(product, [2, 0, 1, 3]), [batch, out_channels, points])
    if ctx.has_input(3):
        bias = emit.convert(ctx.input(3), compute)
        y = stablehlo.AddOp(y, emit.broadcast_to(bias, [batch, out_channels, points], dims=[1])).result
    return [emit.convert(emit.reshape(y, [batch, out_channels, *out_dims]), dtype)]


# --------------------------------------------------------------------------------------------
# RoiAlign and MaxRoiPool

_ROI_ALIGN_MODES = ("avg", "max")
_ROI_COORDINATE_MODES = ("half_pixel", "output_half_pixel")


def _roi_axis_samples(
    start: ir.Value, bin_size: ir.Value, grid: ir.Value, sample: ir.Value, pooled: int, size: int
) -> tuple[ir.Value, ir.Value, ir.Value, ir.Value, ir.Value]:
    """One sample point per bin along one axis of every roi (RoiAlign's bilinear rule).

    Args:
        start, bin_size, grid: ``[R]`` roi start, bin size and sample count along the axis.
        sample: the rank-0 sample number within each bin.
        pooled: bins along the axis; ``size``: the input's length along it.

    Returns:
        ``(low, high, low_weight, high_weight, valid)``, each ``[R, pooled]``; indices int64.
    """
    rois = emit.static_shape_of(start)[0]
    dtype = emit.dtype_of(start)
    f = _Arith([rois, pooled], dtype)

    def per_roi(v: ir.Value) -> ir.Value:
        return emit.broadcast_to(v, f.shape, dims=[0])

    step = per_roi(bin_size)
    offset = f.exact_div(f.mul(f.add(emit.broadcast_to(sample, f.shape, dims=[]), 0.5), step), per_roi(grid))
    y = f.add(f.add(per_roi(start), f.mul(f.iota(1), step)), offset)
    valid = stablehlo.NotOp(_or(f.cmp(y, -1.0, "LT"), f.cmp(y, float(size), "GT"))).result
    y = f.max(y, 0.0)
    low = f.floor(y)
    at_edge = f.cmp(low, size - 1.0, "GE")
    low = f.select(at_edge, size - 1.0, low)
    high = f.select(at_edge, size - 1.0, f.add(low, 1.0))
    y = f.select(at_edge, low, y)
    high_weight = f.sub(y, low)
    low_weight = f.sub(1.0, high_weight)
    return (
        emit.convert(low, DataType.INT64),
        emit.convert(high, DataType.INT64),
        low_weight,
        high_weight,
        valid,
    )


@lowering("RoiAlign", since=10)
@lowering("RoiAlign", since=16)  # 16 added coordinate_transformation_mode (default half_pixel)
@lowering("RoiAlign", since=22)  # 22 added bfloat16
def lower_roi_align(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value]:
    """Lowers RoiAlign to per-sample bilinear gathers, averaged or maxed over each bin.

    Sample ``(iy, ix)`` of every bin of every roi reads its 4 bilinear corners from X with one
    gather (batch index, y, x); as in onnx.reference and onnxruntime, samples outside
    ``[-1, H] x [-1, W]`` read zero, ``avg`` divides by the sample count and ``max`` takes the
    largest weighted corner. With ``sampling_ratio > 0`` the samples are unrolled (up to 16
    per bin); with ``sampling_ratio = 0`` each roi has ``ceil(roi_size / bins)`` samples per
    axis, known only at run time, so a stablehlo.while runs over the largest count and masks.

    Spec: RoiAlign-10/16/22 (10 behaves as ``output_half_pixel``).
    Shapes: X [N, C, H, W]; rois [R, 4] (x1, y1, x2, y2); batch_indices [R] int64; all static;
        Y [R, C, output_height, output_width].
    Dtypes: float16, bfloat16, float32, float64 (float16/bfloat16 computed in float32).
    Raises: UnsupportedAttributeError for an unknown mode or coordinate_transformation_mode;
        ShapeError for mismatched shapes.
    """
    dtype = _require_float(ctx, 0)
    mode = node.attr_str("mode")
    if mode not in _ROI_ALIGN_MODES:
        raise ctx.unsupported_attribute("mode", mode, ", ".join(_ROI_ALIGN_MODES))
    coordinate_mode = node.attr_str("coordinate_transformation_mode", "output_half_pixel")
    if coordinate_mode not in _ROI_COORDINATE_MODES:
        accepted = ", ".join(_ROI_COORDINATE_MODES)
        raise ctx.unsupported_attribute("coordinate_transformation_mode", coordinate_mode, accepted)
    batch, channels, height, width = _expect_rank(ctx, 0, 4)
    rois_shape = ctx.input_static_shape(1)
    count = rois_shape[0] if rois_shape else 0
    if list(rois_shape) != [count, 4] or list(ctx.input_static_shape(2)) != [count]:
        raise ctx.error(
            f"rois {list(rois_shape)} must be [R, 4] and batch_indices {list(ctx.input_static_shape(2))} [R]",
            ShapeError,
        )
    pooled_h, pooled_w = node.attr_int("output_height"), node.attr_int("output_width")
    ratio = node.attr_int("sampling_ratio")
    if ratio * ratio > limits.MAX_SAMPLES_PER_BIN:
        raise ctx.error(
            f"sampling_ratio={ratio} means {ratio * ratio} samples per bin, over the limit of "
            f"{limits.MAX_SAMPLES_PER_BIN} (onnx_stablehlo.frontend.limits.MAX_SAMPLES_PER_BIN)",
            ResourceLimitError,
        )
    scale = node.attr_float("spatial_scale")
    compute = _compute_dtype(dtype)

    rois = emit.convert(ctx.input(1), compute)
    fr = _Arith([count], compute)
    shift = 0.5 if coordinate_mode == "half_pixel" else 0.0
    x1, y1, x2, y2 = (fr.sub(fr.mul(_component(rois, j), scale), shift) for j in range(4))
    roi_w, roi_h = fr.sub(x2, x1), fr.sub(y2, y1)
    if coordinate_mode == "output_half_pixel":  # malformed rois are forced to 1x1
        roi_w, roi_h = fr.max(roi_w, 1.0), fr.max(roi_h, 1.0)
    bin_h, bin_w = fr.exact_div(roi_h, float(pooled_h)), fr.exact_div(roi_w, float(pooled_w))
    if ratio > 0:
        grid_h = grid_w = fr.const(float(ratio))
    else:
        grid_h, grid_w = fr.max(fr.ceil(bin_h), 0.0), fr.max(fr.ceil(bin_w), 0.0)
    samples = fr.max(fr.mul(grid_h, grid_w), 1.0)

    batch_index = _clamp_index(emit.convert(ctx.input(2), DataType.INT64), batch)
    table = emit.transpose(ctx.input(0), [0, 2, 3, 1])  # [N, H, W, C]
    bins = [count, pooled_h, pooled_w]
    out = [*bins, channels]
    roi_batch = emit.broadcast_to(batch_index, bins, dims=[0])

    def contribution(iy: ir.Value, ix: ir.Value) -> ir.Value:
        """``[R, PH, PW, C]``: sample ``(iy, ix)`` of every bin (zero where it is outside)."""
        y_low, y_high, wy_low, wy_high, valid_y = _roi_axis_samples(y1, bin_h, grid_h, iy, pooled_h, height)
        x_low, x_high, wx_low, wx_high, valid_x = _roi_axis_samples(x1, bin_w, grid_w, ix, pooled_w, width)

        def rows(v: ir.Value) -> ir.Value:
            return emit.broadcast_to(v, bins, dims=[0, 1])

        def cols(v: ir.Value) -> ir.Value:
            return emit.broadcast_to(v, bins, dims=[0, 2])

        corners = [(y, x, stablehlo.MulOp(rows(wy), cols(wx)).result)
                   for y, wy in ((y_low, wy_low), (y_high, wy_high))
                   for x, wx in ((x_low, wx_low), (x_high, wx_high))]
        indices = _stack([  # [R, PH, PW, 4 corners, (n, y, x)]
            _stack([roi_batch] * 4),
            _stack([rows(y) for y, _, _ in corners]),
            _stack([cols(x) for _, x, _ in corners]),
        ])
        values = emit.convert(_gather_vectors(table, indices, batch=0), compute)  # [R, PH, PW, 4, C]
        weights = emit.broadcast_to(_stack([w for _, _, w in corners]), [*bins, 4, channels], dims=[0, 1, 2, 3])
        weighted = stablehlo.MulOp(values, weights).result
        if mode == "avg":
            combined = emit.reduce(weighted, [3], stablehlo.AddOp, 0)
        else:
            combined = emit.reduce(weighted, [3], stablehlo.MaxOp, -np.inf)
        valid = emit.broadcast_to(_and(rows(valid_y), cols(valid_x)), out, dims=[0, 1, 2])
        return stablehlo.SelectOp(valid, combined, emit.splat(0, compute, out)).result

    def accumulate(total: ir.Value, value: ir.Value) -> ir.Value:
        if mode == "avg":
            return stablehlo.AddOp(total, value).result
        return stablehlo.MaxOp(total, value).result

    initial = emit.splat(0 if mode == "avg" else -np.inf, compute, out)
    if ratio > 0 and ratio * ratio <= _ROI_UNROLL_MAX_SAMPLES:
        total = initial
        for iy, ix in itertools.product(range(ratio), repeat=2):
            total = accumulate(total, contribution(_scalar(iy, compute), _scalar(ix, compute)))
    else:
        total = _roi_sample_loop(grid_h, grid_w, initial, contribution, accumulate, out)
    if mode == "avg":
        total = stablehlo.DivOp(total, emit.broadcast_to(samples, out, dims=[0])).result
    else:  # a roi without samples pools to zero
        some = fr.cmp(fr.mul(grid_h, grid_w), 0.0, "GT")
        total = stablehlo.SelectOp(emit.broadcast_to(some, out, dims=[0]), total, emit.splat(0, compute, out)).result
    return [emit.convert(emit.transpose(total, [0, 3, 1, 2]), dtype)]


def _roi_sample_loop(
    grid_h: ir.Value,
    grid_w: ir.Value,
    initial: ir.Value,
    contribution: Callable[[ir.Value, ir.Value], ir.Value],
    accumulate: Callable[[ir.Value, ir.Value], ir.Value],
    out: Sequence[int],
) -> ir.Value:
    """Accumulates the samples ``(iy, ix)`` of every roi in a stablehlo.while.

    The loop runs over the largest ``grid_h x grid_w`` of all rois; samples beyond a roi's own
    grid are masked out (zero for a sum, ``-inf`` for a max).
    """
    compute = emit.dtype_of(grid_h)
    i64 = DataType.INT64
    most_h = emit.convert(emit.reduce(grid_h, [0], stablehlo.MaxOp, 0), i64)
    most_w = emit.convert(emit.reduce(grid_w, [0], stablehlo.MaxOp, 0), i64)
    steps = stablehlo.MulOp(most_h, most_w).result
    neutral = initial  # the accumulator's identity: 0 for a sum, -inf for a max

    def cond(carry: list[ir.Value]) -> ir.Value:
        return emit.compare(carry[0], steps, "LT")

    def body(carry: list[ir.Value]) -> list[ir.Value]:
        step, total = carry
        row = stablehlo.DivOp(step, most_w).result
        column = stablehlo.SubtractOp(step, stablehlo.MulOp(row, most_w).result).result
        iy, ix = emit.convert(row, compute), emit.convert(column, compute)
        fr = _Arith(emit.static_shape_of(grid_h), compute)
        inside = _and(
            fr.cmp(emit.broadcast_to(iy, fr.shape, dims=[]), grid_h, "LT"),
            fr.cmp(emit.broadcast_to(ix, fr.shape, dims=[]), grid_w, "LT"),
        )
        value = stablehlo.SelectOp(emit.broadcast_to(inside, out, dims=[0]), contribution(iy, ix), neutral).result
        return [_increment(step), accumulate(total, value)]

    return _while([_scalar(0, i64), initial], cond, body)[1]


@lowering("MaxRoiPool", since=1)
@lowering("MaxRoiPool", since=22)  # 22 added bfloat16
def lower_max_roi_pool(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value]:
    """Lowers MaxRoiPool to masked max reductions, over W then over H.

    As onnxruntime (Caffe's ROI pooling): roi corners are ``round(coordinate * spatial_scale)``
    (half away from zero), each roi at least 1x1; bin ``p`` spans ``[floor(p * size / pooled),
    ceil((p + 1) * size / pooled))`` from the roi start, clipped to the input; empty bins are 0.

    Spec: MaxRoiPool-1/22.
    Shapes: X [N, C, H, W]; rois [R, 5] (batch index, x1, y1, x2, y2); both static;
        Y [R, C, pooled_h, pooled_w].
    Dtypes: float16, bfloat16, float32, float64 (float16/bfloat16 computed in float32).
    Raises: ShapeError for mismatched shapes or a pooled_shape that is not 2 positive ints.
    """
    dtype = _require_float(ctx, 0)
    batch, channels, height, width = _expect_rank(ctx, 0, 4)
    rois_shape = ctx.input_static_shape(1)
    if len(rois_shape) != 2 or rois_shape[1] != 5:
        raise ctx.error(f"rois must be [R, 5], got {list(rois_shape)}", ShapeError)
    pooled = node.attr_ints("pooled_shape") or []
    if len(pooled) != 2 or min(pooled) < 1:
        raise ctx.error(f"pooled_shape must be 2 positive ints, got {pooled}", ShapeError)
    count = rois_shape[0]
    pooled_h, pooled_w = pooled
    scale = node.attr_float("spatial_scale")
    compute = _compute_dtype(dtype)
    rois = emit.convert(ctx.input(1), compute)
    fr = _Arith([count], compute)
    batch_index = _clamp_index(emit.convert(_component(rois, 0), DataType.INT64), batch)
    x1, y1, x2, y2 = (stablehlo.RoundOp(fr.mul(_component(rois, j), scale)).result for j in range(1, 5))

    def bounds(start: ir.Value, end: ir.Value, bins: int, size: int) -> tuple[ir.Value, ir.Value]:
        """``[R, bins]`` window starts (inclusive) and ends (exclusive) along one axis."""
        extent = fr.max(fr.add(fr.sub(end, start), 1.0), 1.0)
        step = fr.exact_div(extent, float(bins))
        f = _Arith([count, bins], compute)
        step_b = emit.broadcast_to(step, f.shape, dims=[0])
        start_b = emit.broadcast_to(start, f.shape, dims=[0])
        index = f.iota(1)
        lo = f.add(f.floor(f.mul(index, step_b)), start_b)
        hi = f.add(f.ceil(f.mul(f.add(index, 1.0), step_b)), start_b)
        return f.clamp(lo, 0.0, float(size)), f.clamp(hi, 0.0, float(size))

    h_lo, h_hi = bounds(y1, y2, pooled_h, height)
    w_lo, w_hi = bounds(x1, x2, pooled_w, width)

    def window(lo: ir.Value, hi: ir.Value, size: int) -> ir.Value:
        """``[R, bins, size]``: True at positions inside each bin."""
        bins = emit.static_shape_of(lo)[1]
        f = _Arith([count, bins, size], compute)
        position = f.iota(2)
        inside_lo = f.cmp(position, emit.broadcast_to(lo, f.shape, dims=[0, 1]), "GE")
        return _and(inside_lo, f.cmp(position, emit.broadcast_to(hi, f.shape, dims=[0, 1]), "LT"))

    images = emit.convert(_take_rows(ctx.input(0), batch_index), compute)  # [R, C, H, W]
    lowest = -np.inf
    by_w = [count, channels, height, pooled_w, width]
    masked = stablehlo.SelectOp(
        emit.broadcast_to(window(w_lo, w_hi, width), by_w, dims=[0, 3, 4]),
        emit.broadcast_to(images, by_w, dims=[0, 1, 2, 4]),
        emit.splat(lowest, compute, by_w),
    ).result
    column_max = emit.reduce(masked, [4], stablehlo.MaxOp, lowest)  # [R, C, H, PW]
    by_h = [count, channels, pooled_h, pooled_w, height]
    masked = stablehlo.SelectOp(
        emit.broadcast_to(window(h_lo, h_hi, height), by_h, dims=[0, 2, 4]),
        emit.broadcast_to(column_max, by_h, dims=[0, 1, 4, 3]),
        emit.splat(lowest, compute, by_h),
    ).result
    pooled_max = emit.reduce(masked, [4], stablehlo.MaxOp, lowest)  # [R, C, PH, PW]
    fb = _Arith([count, pooled_h, pooled_w], compute)
    empty = _or(
        fb.cmp(emit.broadcast_to(h_hi, fb.shape, dims=[0, 1]), emit.broadcast_to(h_lo, fb.shape, dims=[0, 1]), "LE"),
        fb.cmp(emit.broadcast_to(w_hi, fb.shape, dims=[0, 2]), emit.broadcast_to(w_lo, fb.shape, dims=[0, 2]), "LE"),
    )
    out = [count, channels, pooled_h, pooled_w]
    result = stablehlo.SelectOp(
        emit.broadcast_to(empty, out, dims=[0, 2, 3]), emit.splat(0, compute, out), pooled_max
    ).result
    return [emit.convert(result, dtype)]


# --------------------------------------------------------------------------------------------
# MaxUnpool


@lowering("MaxUnpool", since=9)
@lowering("MaxUnpool", since=11)  # 11 documented the default strides
@lowering("MaxUnpool", since=22)  # 22 added bfloat16
def lower_max_unpool(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value]:
    """Lowers MaxUnpool to a stablehlo.scatter of X into zeros at the flat indices I.

    Spec: MaxUnpool-9/11/22.
    Shapes: X and I [N, C, d1..dr] static; output_shape int64 [r + 2] optional, known at
        compile time; Y [N, C, (d - 1) * stride - pads + kernel ...] or output_shape.
    Dtypes: X float16, bfloat16, float32, float64; I int64.
    Deviations: with an output_shape larger than the inferred shape, I indexes the inferred
        shape and the result is padded at the end of each axis, as onnx.reference and the ONNX
        backend test do; onnxruntime (and PyTorch) index output_shape instead. Out-of-range
        indices are dropped.
    Raises: NonConstantInputError if output_shape is computed at run time; ShapeError if it is
        smaller than the inferred shape or shapes do not match kernel_shape.
    """
    _require_float(ctx, 0)
    x = ctx.input(0)
    x_shape = ctx.input_static_shape(0)
    kernel = node.attr_ints("kernel_shape") or []
    rank = len(x_shape) - 2
    if len(kernel) != rank or rank < 1:
        raise ctx.error(f"kernel_shape {kernel} must have one entry per spatial dim of X {list(x_shape)}", ShapeError)
    if ctx.input_static_shape(1) != x_shape:
        raise ctx.error(f"I {list(ctx.input_static_shape(1))} must have X's shape {list(x_shape)}", ShapeError)
    strides = _ints_attr(node, "strides", [1] * rank)
    pads = _ints_attr(node, "pads", [0] * (2 * rank))
    inferred = [
        *x_shape[:2],
        *((x_shape[2 + i] - 1) * strides[i] - (pads[i] + pads[rank + i]) + kernel[i] for i in range(rank)),
    ]
    out_shape = _constant_ints(ctx, 2) if ctx.has_input(2) else inferred
    if len(out_shape) != len(inferred) or any(o < i for o, i in zip(out_shape, inferred)):
        raise ctx.error(f"output_shape {out_shape} must not be smaller than the inferred shape {inferred}", ShapeError)
    dtype = ctx.input_dtype(0)
    elements = math.prod(x_shape)
    updates = emit.reshape(x, [elements])
    indices = emit.reshape(emit.convert(ctx.input(1), DataType.INT64), [elements, 1])
    zeros = emit.splat(0, dtype, [math.prod(inferred)])
    numbers = stablehlo.ScatterDimensionNumbers.get(
        update_window_dims=[],
        inserted_window_dims=[0],
        input_batching_dims=[],
        scatter_indices_batching_dims=[],
        scattered_dims_to_operand_dims=[0],
        index_vector_dim=1,
    )
    op = stablehlo.ScatterOp([zeros.type], [zeros], indices, [updates], numbers)
    scalar = emit.tensor_type((), dtype)
    block = op.update_computation.blocks.append(scalar, scalar)
    with ir.InsertionPoint(block):
        stablehlo.ReturnOp([block.arguments[1]])
    y = emit.reshape(op.results[0], inferred)
    if out_shape != inferred:
        high = [o - i for o, i in zip(out_shape, inferred)]
        y = stablehlo.PadOp(y, _scalar(0, dtype), [0] * len(high), high, [0] * len(high)).result
    return [y]


# --------------------------------------------------------------------------------------------
# Det


def _det_step(a: ir.Value, det: ir.Value, k: ir.Value) -> tuple[ir.Value, ir.Value]:
    """Eliminates column ``k`` (rank-0 int64) of ``a`` [B, n, n]: pivot, swap, subtract.

    Returns the updated matrices and running determinants ``det`` [B] (times the pivot, negated
    when rows were swapped).
    """
    b, n, _ = emit.static_shape_of(a)
    dtype = emit.dtype_of(a)
    i64 = DataType.INT64
    zero = _scalar(0, i64)
    rows = stablehlo.IotaOp(emit.tensor_type([b, n], i64), 1).result
    rows3 = stablehlo.IotaOp(emit.tensor_type([b, n, n], i64), 1).result
    k2 = emit.broadcast_to(k, [b, n], dims=[])
    k3 = emit.broadcast_to(k, [b, n, n], dims=[])
    f = _Arith([b, n], dtype)

    def column(m: ir.Value) -> ir.Value:
        return emit.reshape(stablehlo.DynamicSliceOp(m, [zero, zero, k], emit.i64_array([b, n, 1])).result, [b, n])

    # Partial pivoting: the first row >= k with the largest |a[row, k]|.
    candidates = f.select(emit.compare(rows, k2, "GE"), stablehlo.AbsOp(column(a)).result, -1.0)
    largest = emit.reduce(candidates, [1], stablehlo.MaxOp, -np.inf)
    is_largest = f.cmp(candidates, emit.broadcast_to(largest, [b, n], dims=[0]), "EQ")
    first = stablehlo.SelectOp(is_largest, rows, emit.splat(n - 1, i64, [b, n])).result
    pivot_row = emit.reduce(first, [1], stablehlo.MinOp, n - 1)  # [B]
    at_pivot = emit.compare(rows3, emit.broadcast_to(pivot_row, [b, n, n], dims=[0]), "EQ")
    zeros3 = emit.splat(0, dtype, [b, n, n])
    row_p = emit.reduce(stablehlo.SelectOp(at_pivot, a, zeros3).result, [1], stablehlo.AddOp, 0)
    row_k = emit.reshape(stablehlo.DynamicSliceOp(a, [zero, k, zero], emit.i64_array([b, 1, n])).result, [b, n])
    spread_p = emit.broadcast_to(row_p, [b, n, n], dims=[0, 2])
    spread_k = emit.broadcast_to(row_k, [b, n, n], dims=[0, 2])
    a = stablehlo.SelectOp(
        emit.compare(rows3, k3, "EQ"), spread_p, stablehlo.SelectOp(at_pivot, spread_k, a).result
    ).result
    fb = _Arith([b], dtype)
    pivot = emit.reshape(stablehlo.DynamicSliceOp(row_p, [zero, k], emit.i64_array([b, 1])).result, [b])
    product = fb.mul(det, pivot)
    swapped = emit.compare(pivot_row, emit.broadcast_to(k, [b], dims=[]), "NE")
    det = fb.select(swapped, stablehlo.NegOp(product).result, product)
    # Rows below k lose their multiple of the pivot row (a zero pivot means a zero column).
    safe = fb.select(fb.cmp(pivot, 0.0, "EQ"), 1.0, pivot)
    ratio = stablehlo.DivOp(column(a), emit.broadcast_to(safe, [b, n], dims=[0])).result
    factor = f.select(emit.compare(rows, k2, "GT"), ratio, 0.0)
    update = stablehlo.MulOp(emit.broadcast_to(factor, [b, n, n], dims=[0, 1]), spread_p).result
    return stablehlo.SubtractOp(a, update).result, det


@lowering("Det", since=11)
@lowering("Det", since=22)  # 22 added bfloat16
def lower_det(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value]:
    """Lowers Det to Gaussian elimination with partial pivoting (LU, as LAPACK's getrf).

    The determinant is the product of the pivots, negated per row swap. Up to 8x8 the ``n``
    elimination steps are unrolled; larger matrices loop in a stablehlo.while.

    Spec: Det-11/22.
    Shapes: X [*, n, n] static; Y [*].
    Dtypes: float16, bfloat16, float32, float64 (float16/bfloat16 computed in float32).
    Raises: ShapeError if X is not a (batch of) square matrices.
    """
    dtype = _require_float(ctx, 0)
    shape = ctx.input_static_shape(0)
    if len(shape) < 2 or shape[-1] != shape[-2]:
        raise ctx.error(f"X must be [*, n, n], got {list(shape)}", ShapeError)
    n = shape[-1]
    batch_shape = list(shape[:-2])
    count = math.prod(batch_shape)
    compute = _compute_dtype(dtype)
    a = emit.reshape(emit.convert(ctx.input(0), compute), [count, n, n])
    det = emit.splat(1, compute, [count])
    if n <= _DET_UNROLL_MAX:
        for k in range(n):
            a, det = _det_step(a, det, _scalar(k, DataType.INT64))
    else:

        def cond(carry: list[ir.Value]) -> ir.Value:
            return emit.compare(carry[0], _scalar(n, DataType.INT64), "LT")

        def body(carry: list[ir.Value]) -> list[ir.Value]:
            k, matrices, dets = carry
            matrices, dets = _det_step(matrices, dets, k)
            return [_increment(k), matrices, dets]

        det = _while([_scalar(0, DataType.INT64), a, det], cond, body)[2]
    return [emit.convert(emit.reshape(det, batch_shape), dtype)]
