"""Interpolation tables for Resize and Upsample, one resized axis at a time.

``Interpolation`` is the node's decoded attributes; ``plan_constant`` computes an axis's index
table (nearest) or ``[out, in]`` interpolation matrix (linear, cubic) in numpy float64,
following onnx.reference, when scales, sizes and roi are known at compile time;
``runtime_coordinates``, ``runtime_nearest`` and ``runtime_matrix`` compute the same tables in
the graph (float64, exact divisions through ``Vec``) when they are known only at run time.
``apply_plans`` contracts each axis with its table and fills extrapolated positions.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence

import numpy as np
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import stablehlo

from onnx_stablehlo.frontend import builders, dtypes
from onnx_stablehlo.frontend.dtypes import DataType
from onnx_stablehlo.frontend.shapes import Dim


# Coordinate modes whose formula uses length_resized = in * scale.
USES_WIDTH = ("half_pixel_symmetric", "pytorch_half_pixel", "align_corners", "tf_crop_and_resize")

# Kernel support radius in (scaled) input pixels.
SUPPORT = {"linear": 1.0, "cubic": 2.0}


@dataclasses.dataclass(frozen=True)
class Interpolation:
    """How to compute one output position from the input (the node's attributes, decoded).

    Attributes:
        mode: ``nearest``, ``linear`` or ``cubic``.
        coordinate_mode: the coordinate_transformation_mode.
        nearest_mode: a Resize nearest_mode, or ``simple`` (Resize-10 and Upsample: ceil when
            downsampling, floor otherwise, as onnxruntime does).
        cubic_a: cubic_coeff_a.
        exclude_outside: zero the weights of taps outside the input, then renormalize.
        antialias: stretch the linear/cubic kernel by ``1 / scale`` when downsampling.
        extrapolation_value: the value of tf_crop_and_resize positions outside the input.
    """

    mode: str
    coordinate_mode: str = "asymmetric"
    nearest_mode: str = "simple"
    cubic_a: float = -0.75
    exclude_outside: bool = False
    antialias: bool = False
    extrapolation_value: float = 0.0


@dataclasses.dataclass
class AxisPlan:
    """How to resize one axis: an index table (nearest) or an interpolation matrix.

    Entries are numpy arrays when known at compile time, ``ir.Value``s otherwise.

    Attributes:
        axis: the resized axis of X.
        indices: ``[out]`` source index per output position (nearest).
        weights: ``[out, in]`` interpolation matrix (linear, cubic).
        extrapolated: ``[out]`` bool, True where tf_crop_and_resize extrapolates; or None.
    """

    axis: int
    indices: np.ndarray | ir.Value | None = None
    weights: np.ndarray | ir.Value | None = None
    extrapolated: np.ndarray | ir.Value | None = None
    touched: dict[str, np.ndarray] | dict[str, ir.Value] | None = None
    """``[out, in]`` 0/1 matrices of the taps onnxruntime multiplies (zero
    weights included), by weight sign: ``all``, ``zero``, ``pos``, ``neg`` (linear and cubic
    with compile-time tables, no antialias); None: NaN/inf follow the matrix product."""


def source_coordinates(
    spec: Interpolation, out_size: int, in_size: int, scale: float, roi: tuple[float, float], width: float
) -> tuple[np.ndarray, np.ndarray | None]:
    """Maps output positions to (fractional) input positions; also the extrapolation mask.

    ``width`` is the ``length_resized`` of the spec's formulas: the output size when sizes are
    given, ``in_size * scale`` (fractional) otherwise. The spec defines ``scale =
    length_resized / length_original``; onnx.reference and the backend tests read it so, and
    onnxruntime uses the integer output length.
    """
    y = np.arange(out_size, dtype=np.float64)
    mode = spec.coordinate_mode
    if mode == "half_pixel":
        return (y + 0.5) / scale - 0.5, None
    if mode == "half_pixel_symmetric":
        offset = in_size / 2 * (1 - out_size / width)
        return offset + (y + 0.5) / scale - 0.5, None
    if mode == "pytorch_half_pixel":
        return ((y + 0.5) / scale - 0.5 if width > 1 else np.zeros(out_size)), None
    if mode == "align_corners":
        return (y * (in_size - 1) / (width - 1) if width != 1 else np.zeros(out_size)), None
    if mode == "asymmetric":
        return y / scale, None
    if mode == "tf_half_pixel_for_nn":
        return (y + 0.5) / scale, None
    if mode == "tf_crop_and_resize":
        start, end = roi
        if width != 1:
            x = y * (end - start) * (in_size - 1) / (width - 1)
        else:
            x = np.full(out_size, (end - start) * (in_size - 1) / 2)
        x = x + start * (in_size - 1)
        return x, (x < 0) | (x > in_size - 1)
    raise AssertionError(mode)


def nearest_indices(spec: Interpolation, x: np.ndarray, scale: float, in_size: int) -> np.ndarray:
    rounding = spec.nearest_mode
    if rounding == "simple":
        rounding = "ceil" if scale < 1 else "floor"
    if rounding == "round_prefer_floor":
        index = np.ceil(x - 0.5)
    elif rounding == "round_prefer_ceil":
        index = np.floor(x + 0.5)
    elif rounding == "floor":
        index = np.floor(x)
    else:
        index = np.ceil(x)
    return np.clip(index, 0, in_size - 1).astype(np.int64)


def kernel(spec: Interpolation, distance: np.ndarray) -> np.ndarray:
    """The linear (triangle) or cubic (Keys, ``a = cubic_coeff_a``) kernel at ``distance``."""
    d = np.abs(distance)
    if spec.mode == "linear":
        return np.clip(1 - d, 0, 1)
    a = spec.cubic_a
    near = ((a + 2) * d - (a + 3)) * d * d + 1
    far = ((a * d - 5 * a) * d + 8 * a) * d - 4 * a
    return np.where(d <= 1, near, np.where(d < 2, far, 0.0))


def tap_radius(spec: Interpolation, kernel_scale: float) -> int:
    """Taps on each side of the source position that can have a nonzero weight."""
    return int(math.ceil(SUPPORT[spec.mode] / kernel_scale)) + 1


def interpolation_matrix(spec: Interpolation, x: np.ndarray, scale: float, in_size: int) -> np.ndarray:
    """The ``[out, in]`` matrix of linear/cubic weights for source positions ``x``.

    Taps outside the input are clamped to the edge (their weight adds to the edge pixel), or
    dropped with ``exclude_outside``; antialiasing scales distances by ``min(scale, 1)`` and
    normalizes the weights to sum to one.
    """
    kernel_scale = min(scale, 1.0) if spec.antialias else 1.0
    radius = tap_radius(spec, kernel_scale)
    base = np.floor(x).astype(np.int64)
    taps = base[:, None] + np.arange(-radius + 1, radius + 1)[None, :]
    weights = kernel(spec, (taps - x[:, None]) * kernel_scale)
    if spec.exclude_outside:
        weights = np.where((taps < 0) | (taps >= in_size), 0.0, weights)
    if spec.antialias or spec.exclude_outside:
        total = weights.sum(axis=1, keepdims=True)
        weights = weights / np.where(total == 0, 1.0, total)
    matrix = np.zeros((x.size, in_size), dtype=np.float64)
    rows = np.broadcast_to(np.arange(x.size)[:, None], taps.shape)
    np.add.at(matrix, (rows, np.clip(taps, 0, in_size - 1)), weights)
    return matrix


TAP_OFFSETS = {"linear": (0, 1), "cubic": (-1, 0, 1, 2)}
"""The taps around ``floor(x)`` that onnx.reference and onnxruntime multiply per output."""


def touched_matrices(spec: Interpolation, x: np.ndarray, in_size: int) -> dict[str, np.ndarray]:
    """Which inputs each output multiplies, and with which weight sign (see ``AxisPlan.touched``).

    The interpolation matrix sums every input of the axis, so a NaN or inf anywhere would reach
    every output; onnxruntime multiplies only the taps around the source position (edge-clamped),
    a zero weight included (0 x inf = NaN). Its tap set is followed; onnx.reference's differs at
    the edges for linear (it does not clamp the source position first).
    """
    if spec.mode == "linear" and spec.coordinate_mode != "tf_crop_and_resize":
        # onnxruntime clamps the source position into the input first: at the edges it
        # multiplies the neighbour with a zero weight (x = 0) or the edge twice, by 0.5 each.
        x = np.clip(x, 0, in_size - 1)
    base = np.floor(x).astype(np.int64)
    taps = base[:, None] + np.array(TAP_OFFSETS[spec.mode])[None, :]
    weights = kernel(spec, taps - x[:, None])
    if spec.mode == "linear":
        weights = np.where((taps >= in_size - 1) & (base[:, None] == in_size - 1), 0.5, weights)
    if spec.exclude_outside:
        weights = np.where((taps < 0) | (taps >= in_size), 0.0, weights)
        total = weights.sum(axis=1, keepdims=True)
        weights = weights / np.where(total == 0, 1.0, total)
    rows = np.broadcast_to(np.arange(x.size)[:, None], taps.shape)
    columns = np.clip(taps, 0, in_size - 1)
    found = {}
    for name, mask in (("all", np.ones_like(weights, dtype=bool)), ("zero", weights == 0), ("pos", weights > 0),
                       ("neg", weights < 0)):
        matrix = np.zeros((x.size, in_size), dtype=np.float64)
        matrix[rows[mask], columns[mask]] = 1.0
        found[name] = matrix
    return found


def plan_constant(
    spec: Interpolation,
    axis: int,
    in_size: int,
    out_size: int,
    scale: float,
    roi: tuple[float, float],
    width: float,
) -> AxisPlan:
    x, extrapolated = source_coordinates(spec, out_size, in_size, scale, roi, width)
    plan = AxisPlan(axis, extrapolated=extrapolated if extrapolated is not None and extrapolated.any() else None)
    if spec.mode == "nearest":
        plan.indices = nearest_indices(spec, x, scale, in_size)
    else:
        plan.weights = interpolation_matrix(spec, x, scale, in_size)
        if not spec.antialias:
            plan.touched = touched_matrices(spec, x, in_size)
    return plan


class Vec:
    """Emits float64 elementwise ops on small coordinate vectors and grids.

    Divisors pass through ``stablehlo.optimization_barrier``: XLA rewrites a division by a
    broadcast scalar into a multiplication by its reciprocal, which is not correctly rounded and
    moves nearest-mode ties; with the barrier every division is IEEE-exact, as in
    onnx.reference's float64 arithmetic.
    """

    dtype = DataType.DOUBLE

    def const(self, value: float | np.ndarray, shape: Sequence[int]) -> ir.Value:
        return builders.constant(np.broadcast_to(np.asarray(value, dtype=np.float64), tuple(shape)).copy(), self.dtype)

    def scalar(self, value: float) -> ir.Value:
        """A rank-0 constant."""
        return builders.splat(value, self.dtype)

    def scalar_to(self, scalar: ir.Value, shape: Sequence[int]) -> ir.Value:
        """A rank-0 value broadcast to ``shape``."""
        return builders.broadcast_to(scalar, shape, dims=[])

    def add(self, a: ir.Value, b: ir.Value) -> ir.Value:
        return stablehlo.add(a, b)

    def sub(self, a: ir.Value, b: ir.Value) -> ir.Value:
        return stablehlo.subtract(a, b)

    def mul(self, a: ir.Value, b: ir.Value) -> ir.Value:
        return stablehlo.multiply(a, b)

    def div(self, a: ir.Value, b: ir.Value) -> ir.Value:
        return builders.exact_divide(a, b)

    def select(self, cond: ir.Value, a: ir.Value, b: ir.Value) -> ir.Value:
        return stablehlo.select(cond, a, b)


def element(vector: ir.Value, index: int, dtype: DataType) -> ir.Value:
    """``vector[index]`` as a rank-0 value of ``dtype``."""
    one = stablehlo.slice(vector, builders.i64_array([index]), builders.i64_array([index + 1]), builders.i64_array([1]))
    return builders.reshape(builders.convert(one, dtype), ())


def runtime_coordinates(
    spec: Interpolation,
    vec: Vec,
    out_size: int,
    in_size: int,
    scale: ir.Value,
    roi: tuple[ir.Value, ir.Value] | None,
) -> tuple[ir.Value, ir.Value | None]:
    """The in-graph twin of :func:`source_coordinates` (``scale`` and ``roi`` are rank 0)."""
    shape = [out_size]

    def c(value: float | np.ndarray) -> ir.Value:
        return vec.const(value, shape)

    y = c(np.arange(out_size))
    s = vec.scalar_to(scale, shape)
    mode = spec.coordinate_mode
    width = vec.mul(s, c(in_size)) if mode in USES_WIDTH else None
    if mode in ("half_pixel", "pytorch_half_pixel", "half_pixel_symmetric"):
        source = vec.div(vec.add(y, c(0.5)), s)
        if mode == "half_pixel_symmetric":
            offset = vec.mul(c(in_size / 2), vec.sub(c(1.0), vec.div(c(out_size), width)))
            source = vec.add(offset, source)
        x = vec.sub(source, c(0.5))
        if mode == "pytorch_half_pixel":
            x = vec.select(builders.compare(width, c(1.0), "GT"), x, c(0.0))
        return x, None
    if mode == "align_corners":
        x = vec.div(vec.mul(y, c(in_size - 1)), vec.sub(width, c(1.0)))
        return vec.select(builders.compare(width, c(1.0), "EQ"), c(0.0), x), None
    if mode == "asymmetric":
        return vec.div(y, s), None
    if mode == "tf_half_pixel_for_nn":
        return vec.div(vec.add(y, c(0.5)), s), None
    assert mode == "tf_crop_and_resize" and roi is not None
    start, end = (vec.scalar_to(r, shape) for r in roi)
    last = c(in_size - 1)
    extent = vec.sub(end, start)
    x = vec.div(vec.mul(vec.mul(y, extent), last), vec.sub(width, c(1.0)))
    x = vec.select(builders.compare(width, c(1.0), "EQ"), vec.div(vec.mul(extent, last), c(2.0)), x)
    x = vec.add(x, vec.mul(start, last))
    outside = stablehlo.or_(builders.compare(x, c(0.0), "LT"), builders.compare(x, last, "GT"))
    return x, outside


def runtime_nearest(spec: Interpolation, vec: Vec, x: ir.Value, scale: ir.Value, in_size: int) -> ir.Value:
    shape = builders.static_shape_of(x)
    half = vec.const(0.5, shape)
    rounding = spec.nearest_mode
    if rounding == "simple":
        down = builders.compare(vec.scalar_to(scale, shape), vec.const(1.0, shape), "LT")
        index = vec.select(down, stablehlo.ceil(x), stablehlo.floor(x))
    elif rounding == "round_prefer_floor":
        index = stablehlo.ceil(vec.sub(x, half))
    elif rounding == "round_prefer_ceil":
        index = stablehlo.floor(vec.add(x, half))
    elif rounding == "floor":
        index = stablehlo.floor(x)
    else:
        index = stablehlo.ceil(x)
    index = stablehlo.clamp(vec.const(0.0, shape), index, vec.const(in_size - 1, shape))
    return builders.convert(index, DataType.INT64)


def runtime_kernel(spec: Interpolation, vec: Vec, distance: ir.Value) -> ir.Value:
    """The in-graph twin of :func:`kernel`."""
    shape = builders.static_shape_of(distance)
    d = stablehlo.abs(distance)
    one = vec.const(1.0, shape)
    zero = vec.const(0.0, shape)
    if spec.mode == "linear":
        return stablehlo.clamp(zero, vec.sub(one, d), one)
    a = spec.cubic_a

    def c(value: float) -> ir.Value:
        return vec.const(value, shape)

    near = vec.add(vec.mul(vec.mul(vec.sub(vec.mul(c(a + 2), d), c(a + 3)), d), d), one)
    far = vec.sub(vec.mul(vec.add(vec.mul(vec.sub(vec.mul(c(a), d), c(5 * a)), d), c(8 * a)), d), c(4 * a))
    inner = builders.compare(d, one, "LE")
    within = builders.compare(d, c(2.0), "LT")
    return vec.select(inner, near, vec.select(within, far, zero))


def runtime_matrix(
    spec: Interpolation, vec: Vec, x: ir.Value, scale: ir.Value, in_size: int, min_scale: float
) -> ir.Value:
    """The in-graph twin of :func:`interpolation_matrix`; ``min_scale`` bounds the tap count."""
    out_size = builders.static_shape_of(x)[0]
    kernel_scale_bound = min(min_scale, 1.0) if spec.antialias else 1.0
    radius = tap_radius(spec, kernel_scale_bound)
    taps_count = 2 * radius
    grid = [out_size, taps_count]
    base = stablehlo.floor(x)
    offsets = vec.const(np.arange(-radius + 1, radius + 1)[None, :], grid)
    taps = vec.add(builders.broadcast_to(base, grid, dims=[0]), offsets)
    distance = vec.sub(taps, builders.broadcast_to(x, grid, dims=[0]))
    if spec.antialias:
        kernel_scale = stablehlo.minimum(scale, vec.scalar(1.0))
        distance = vec.mul(distance, vec.scalar_to(kernel_scale, grid))
    weights = runtime_kernel(spec, vec, distance)
    low, high = vec.const(0.0, grid), vec.const(in_size - 1, grid)
    if spec.exclude_outside:
        outside = stablehlo.or_(builders.compare(taps, low, "LT"), builders.compare(taps, high, "GT"))
        weights = vec.select(outside, vec.const(0.0, grid), weights)
    if spec.antialias or spec.exclude_outside:
        total = builders.reduce(weights, [1], stablehlo.AddOp, 0)
        total = vec.select(builders.compare(total, vec.const(0.0, [out_size]), "EQ"), vec.const(1.0, [out_size]), total)
        weights = vec.div(weights, builders.broadcast_to(total, grid, dims=[0]))
    clamped = stablehlo.clamp(low, taps, high)
    # matrix[o, i] = sum_t weights[o, t] * (clamped[o, t] == i)
    cube = [out_size, taps_count, in_size]
    columns = vec.const(np.arange(in_size)[None, None, :], cube)
    hit = builders.compare(builders.broadcast_to(clamped, cube, dims=[0, 1]), columns, "EQ")
    spread = vec.select(hit, builders.broadcast_to(weights, cube, dims=[0, 1]), vec.const(0.0, cube))
    return builders.reduce(spread, [1], stablehlo.AddOp, 0)


def runtime_touched(spec: Interpolation, vec: Vec, x: ir.Value, in_size: int) -> dict[str, ir.Value]:
    """The in-graph twin of :func:`touched_matrices` (float64 0/1 ``[out, in]`` matrices)."""
    out_size = builders.static_shape_of(x)[0]
    offsets = TAP_OFFSETS[spec.mode]
    grid = [out_size, len(offsets)]
    if spec.mode == "linear" and spec.coordinate_mode != "tf_crop_and_resize":
        x = stablehlo.clamp(vec.scalar(0.0), x, vec.scalar(float(in_size - 1)))
    base = stablehlo.floor(x)
    wide_base = builders.broadcast_to(base, grid, dims=[0])
    taps = vec.add(wide_base, vec.const(np.array(offsets, dtype=np.float64)[None, :], grid))
    weights = runtime_kernel(spec, vec, vec.sub(taps, builders.broadcast_to(x, grid, dims=[0])))
    low, high = vec.const(0.0, grid), vec.const(in_size - 1, grid)
    if spec.mode == "linear":
        at_edge = stablehlo.and_(builders.compare(taps, high, "GE"), builders.compare(wide_base, high, "EQ"))
        weights = vec.select(at_edge, vec.const(0.5, grid), weights)
    if spec.exclude_outside:
        outside = stablehlo.or_(builders.compare(taps, low, "LT"), builders.compare(taps, high, "GT"))
        weights = vec.select(outside, vec.const(0.0, grid), weights)
    clamped = stablehlo.clamp(low, taps, high)
    cube = [out_size, len(offsets), in_size]
    columns = vec.const(np.arange(in_size)[None, None, :], cube)
    hit = builders.compare(builders.broadcast_to(clamped, cube, dims=[0, 1]), columns, "EQ")
    zero = vec.const(0.0, grid)
    masks = {
        "all": builders.compare(zero, zero, "EQ"),
        "zero": builders.compare(weights, zero, "EQ"),
        "pos": builders.compare(weights, zero, "GT"),
        "neg": builders.compare(weights, zero, "LT"),
    }
    found = {}
    for name, mask in masks.items():
        chosen = stablehlo.and_(hit, builders.broadcast_to(mask, cube, dims=[0, 1]))
        found[name] = builders.reduce(builders.convert(chosen, vec.dtype), [1], stablehlo.AddOp, 0)
    return found


def contract_axis(x: ir.Value, matrix: ir.Value, axis: int) -> ir.Value:
    """``x`` with ``axis`` replaced by ``matrix @ x`` along it (``matrix`` is ``[out, in]``)."""
    rank = len(builders.static_shape_of(x))
    product = builders.dot_general(x, matrix, lhs_contracting=[axis], rhs_contracting=[1], precision="HIGHEST")
    # dot_general puts the new axis last; move it back.
    permutation = list(range(rank - 1))
    permutation.insert(axis, rank - 1)
    return builders.transpose(product, permutation)


def contract_axis_non_finite(
    x: ir.Value, matrix: ir.Value, touched: dict[str, np.ndarray] | dict[str, ir.Value], axis: int
) -> ir.Value:
    """:func:`contract_axis` where NaN and inf reach only the outputs whose taps hold them.

    The finite inputs are contracted with ``matrix``; contractions of 0/1 indicators with the
    ``touched`` matrices count, per output, the NaN products (NaN x any tap, inf x a zero-weight
    tap) and the +inf and -inf ones: an output with a NaN product or both infinities is NaN,
    else one with an infinite product is that infinity, else the finite sum.
    """
    dtype = builders.dtype_of(x)
    inf = builders.full_like(x, float("inf"))
    nan = builders.compare(x, x, "NE")
    pinf = builders.compare(x, inf, "EQ")
    ninf = builders.compare(x, stablehlo.negate(inf), "EQ")
    finite = builders.compare(stablehlo.abs(x), inf, "LT")

    def count(*terms: tuple[ir.Value, str]) -> ir.Value:
        total = None
        for mask, name in terms:
            table = touched[name]
            table = builders.constant(table, dtype) if isinstance(table, np.ndarray) else builders.convert(table, dtype)
            term = contract_axis(builders.convert(mask, dtype), table, axis)
            total = term if total is None else stablehlo.add(total, term)
        return builders.compare(total, builders.full_like(total, 0.5), "GT")

    nan_products = count((nan, "all"), (stablehlo.or_(pinf, ninf), "zero"))
    positive = count((pinf, "pos"), (ninf, "neg"))
    negative = count((ninf, "pos"), (pinf, "neg"))
    finite_sum = contract_axis(stablehlo.select(finite, x, builders.full_like(x, 0.0)), matrix, axis)
    out_inf = builders.full_like(finite_sum, float("inf"))
    result = stablehlo.select(positive, out_inf, stablehlo.select(negative, stablehlo.negate(out_inf), finite_sum))
    is_nan = stablehlo.or_(nan_products, stablehlo.and_(positive, negative))
    return stablehlo.select(is_nan, builders.full_like(finite_sum, float("nan")), result)


def apply_plans(x: ir.Value, plans: Sequence[AxisPlan], spec: Interpolation) -> ir.Value:
    """Resizes ``x`` axis by axis, then fills extrapolated positions."""
    dtype = builders.dtype_of(x)
    result = x
    compute = dtype
    if spec.mode != "nearest":
        compute = dtypes.float_compute_dtype(dtype)
        result = builders.convert(result, compute)
    def resize(result: ir.Value, exact: bool) -> ir.Value:
        for plan in plans:
            if plan.indices is not None:
                indices = plan.indices
                if isinstance(indices, np.ndarray):
                    indices = builders.constant(indices.astype(np.int64), DataType.INT64)
                result = builders.take(result, indices, plan.axis)
                continue
            weights = plan.weights
            if isinstance(weights, np.ndarray):
                weights = builders.constant(weights, compute)
            else:
                weights = builders.convert(weights, compute)
            if exact and plan.touched is not None:
                result = contract_axis_non_finite(result, weights, plan.touched, plan.axis)
            else:
                result = contract_axis(result, weights, plan.axis)
        return result

    if any(p.touched is not None for p in plans):
        # NaN/inf in X: only the taps onnxruntime multiplies see them (contract_axis_non_finite);
        # a stablehlo.if keeps the plain products for finite inputs.
        plain = resize(result, exact=False)
        finite = builders.all_finite(result)
        op = stablehlo.IfOp([plain.type], finite)
        with ir.InsertionPoint(op.true_branch.blocks.append()):
            stablehlo.return_([plain])
        with ir.InsertionPoint(op.false_branch.blocks.append()):
            stablehlo.return_([resize(result, exact=True)])
        result = op.results[0]
    else:
        result = resize(result, exact=False)
    if compute != dtype:
        result = convert_back(result, dtype)
    masked = [p for p in plans if p.extrapolated is not None]
    if masked:
        shape = builders.static_shape_of(result)
        mask = None
        for plan in masked:
            flags = plan.extrapolated
            if isinstance(flags, np.ndarray):
                flags = builders.constant(flags.astype(np.bool_), DataType.BOOL)
            flags = builders.broadcast_to(flags, shape, dims=[plan.axis])
            mask = flags if mask is None else stablehlo.or_(mask, flags)
        fill = builders.splat(spec.extrapolation_value, dtype, shape)
        result = stablehlo.select(mask, fill, result)
    return result


def convert_back(value: ir.Value, dtype: DataType) -> ir.Value:
    """Float -> ``dtype``; integers saturate and truncate toward zero (as onnxruntime does)."""
    if dtypes.is_integer(dtype):
        info = np.iinfo(dtypes.numpy_dtype(dtype))
        source = builders.dtype_of(value)
        shape = builders.dims_of(value)
        low = builders.splat(float(info.min), source, shape)
        high = builders.splat(float(info.max), source, shape)
        value = stablehlo.clamp(low, value, high)
    return builders.convert(value, dtype)


def runtime_kernel_dims(spec: Interpolation, distance: ir.Value, shape: Sequence[Dim]) -> ir.Value:
    """:func:`runtime_kernel` for a float64 ``distance`` of (possibly symbolic) ``shape``."""
    d = stablehlo.abs(distance)

    def c(value: float) -> ir.Value:
        return builders.splat(value, DataType.DOUBLE, shape)

    add, sub, mul = stablehlo.add, stablehlo.subtract, stablehlo.multiply
    if spec.mode == "linear":
        return stablehlo.clamp(c(0.0), sub(c(1.0), d), c(1.0))
    a = spec.cubic_a
    near = add(mul(mul(sub(mul(c(a + 2), d), c(a + 3)), d), d), c(1.0))
    far = sub(mul(add(mul(sub(mul(c(a), d), c(5 * a)), d), c(8 * a)), d), c(4 * a))
    inner = builders.compare(d, c(1.0), "LE")
    within = builders.compare(d, c(2.0), "LT")
    return stablehlo.select(inner, near, stablehlo.select(within, far, c(0.0)))
