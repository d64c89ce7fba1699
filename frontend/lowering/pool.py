"""Lowering rules: pooling and unpooling.

Pooling becomes ``stablehlo.reduce_window`` whose padding is the ONNX pads plus, in
``ceil_mode``, the extra tail the last partial window needs:

- ``MaxPool`` -> ``reduce_window(max)`` with a ``-inf`` (or integer minimum) init; its
  ``Indices`` output is a second, variadic ``reduce_window`` operand carrying flat indices.
  Static float32/float16 (no dilation) and integer windows without ``Indices`` are a
  ``maximum`` of strided slices (``windows.max_by_slices``), one spatial axis after the other.
- ``AveragePool`` -> ``reduce_window(add)`` divided by a compile-time constant holding each
  window's element count (which positions count depends on ``count_include_pad``).
- ``LpPool`` -> ``reduce_window(add)`` of ``|x|^p``, then ``^(1/p)``.
- ``GlobalAveragePool``, ``GlobalMaxPool``, ``GlobalLpPool`` -> ``stablehlo.reduce`` over the
  spatial dims, keeping them as size 1.
- ``MaxUnpool(X, I, shape)`` -> ``stablehlo.scatter`` of X at the flat indices I into zeros.

Symbolic batch and spatial dims (channels and kernels static) keep ``?`` dims in the
``reduce_window`` types; output sizes are :class:`SymbolicDim` expressions
(``floor((in + pads - k_eff) / stride) + 1``). Padding that depends on a symbolic size is a
:class:`SymbolicDim` too, applied with ``stablehlo.dynamic_pad`` before a ``reduce_window`` that
pads that axis no further (the window arithmetic is in ``builders/windows.py``):

- SAME_* with a stride ``s`` above 1 and a window ``k >= s``: ``ceil(in / s)`` outputs, the total
  ``(ceil(in / s) - 1) * s + k - in`` (never negative then) split as ONNX says;
- ``ceil_mode`` with a stride above 1 when ``end + s <= k`` (no window can start in the end
  padding): ``ceil((in + pads - k) / s) + 1`` outputs, the tail padded to cover the last window.

What still raises a ``ShapeError`` (the model is then lowered per shape): SAME_* with a stride
above a window larger than 1 (the padding is ``max(k - in mod s, 0)``-like), ``ceil_mode``
where the last window may start in the end padding, negative pads, MaxPool's Indices.

Spec: onnx.ai/onnx/operators (each op's page).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence

import numpy as np
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import stablehlo

from onnx_stablehlo.errors import ShapeError
from onnx_stablehlo.frontend import builders, dtypes
from onnx_stablehlo.frontend.builders import geometry, windows
from onnx_stablehlo.frontend.context import LoweringContext, OnnxNode
from onnx_stablehlo.frontend.dtypes import DataType
from onnx_stablehlo.frontend.registry import lowering
from onnx_stablehlo.frontend.shapes import Dim, floor_div, product


def _pool_input(
    ctx: LoweringContext, accepted: Sequence[DataType], accepted_text: str
) -> tuple[ir.Value, tuple[int, ...]]:
    x = ctx.input(0)
    shape = tuple(ctx.input_shape(0))  # any dim may be symbolic: pooling has no weights
    if len(shape) < 3:
        raise ctx.error(f"X {list(shape)} needs rank >= 3 ([N, C, D1 ...])", ShapeError)
    dtype = builders.dtype_of(x)
    if dtype not in accepted:
        raise ctx.unsupported_dtype(dtype, accepted_text)
    return x, shape


_POOL_FLOATS = (DataType.FLOAT16, DataType.BFLOAT16, DataType.FLOAT, DataType.DOUBLE)

_MAXPOOL_TYPES = (*_POOL_FLOATS, DataType.INT8, DataType.UINT8)


@lowering("MaxPool", since=1)
@lowering("MaxPool", since=8)  # 8 added storage_order and the optional Indices output
@lowering("MaxPool", since=10)  # 10 added ceil_mode and dilations
@lowering("MaxPool", since=11)  # 11 documented default strides/dilations
@lowering("MaxPool", since=12)  # 12 added int8/uint8
@lowering("MaxPool", since=22)  # 22 added bfloat16 and dropped windows starting in the end padding
def lower_max_pool(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value]:
    """Lowers MaxPool to stablehlo.reduce_window(max); Indices by a variadic reduce_window.

    Static shapes on onnxruntime's MLAS path (float32/float16 without Indices or dilation) and
    integers take a maximum of strided slices instead (``windows.max_by_slices``, the same
    bits), which XLA CPU vectorizes: SqueezeNet 12.2 -> 4.9 ms, Inception-v1 44 -> 22 ms.

    Indices are flat indices into X (batch and channel included), row major, or column major
    over the spatial dims with ``storage_order=1``; ties go to the first element in row-major
    order.

    Spec: MaxPool-1/8/10/11/12/22.
    Shapes: X [N, C, D1 ... Dn] (N and D symbolic allowed without Indices); kernel_shape required.
    Dtypes: float16, bfloat16, float32, float64, int8, uint8; Indices int64.
    Deviations: ``ceil_mode`` drops a last window that would start in the end padding for every
        revision (MaxPool-22 wrote this down; onnxruntime always did it). SAME_* pads for the
        dilated window, as the spec's formula says; onnxruntime pads for the undilated one (a
        different output size when dilations > 1). NaN follows onnxruntime's two CPU kernels:
        float32 and float16 without Indices and without dilation (onnxruntime's MLAS kernel; onnx.reference
        for unit strides) ignores NaN and starts at the finite lowest value, so a window of NaNs
        or of -infs gives -3.4e38 (float16: -inf); every other case
        (onnxruntime's generic kernel, onnx.reference with strides or dilations) starts the
        running max at the window's first in-bounds element in row-major order and replaces it
        only by a greater one, so a NaN wins exactly when it is that first element (its index
        then being the Indices output).
        MLAS's 2D/3D vector kernels let a NaN win by SIMD lane order (x86 ``maxps``), which is
        platform-dependent and not followed (docs/fuzzing.md). A window of one element (kernel
        all 1s) gives that element, NaN and -inf included, as onnxruntime does.
    Raises:
        UnsupportedAttributeError: an unknown auto_pad or storage_order, negative pads.
        ShapeError: kernel_shape missing or of the wrong length; a symbolic dim.
    """
    x, shape = _pool_input(ctx, _MAXPOOL_TYPES, "float16, bfloat16, float32, float64, int8, uint8")
    kernel = windows.kernel_from_attr(ctx, node, len(shape) - 2)
    window, out = windows.window(ctx, node, shape[2:], kernel, ceil_mode=bool(node.attr_int("ceil_mode", 0)), clamp_same=False)
    dtype = builders.dtype_of(x)
    wants_indices = len(node.output_names) > 1 and bool(node.output_names[1])
    is_float = dtypes.is_float(dtype)

    def isnan(value: ir.Value) -> ir.Value:
        return builders.compare(value, value, "NE")

    def max_ignoring_nan(a: list[ir.Value], b: list[ir.Value]) -> list[ir.Value]:
        largest = stablehlo.maximum(a[0], b[0])
        if not is_float:
            return [largest]
        # onnxruntime keeps the running max when x > max is false, so NaN never wins.
        return [stablehlo.select(isnan(a[0]), b[0], stablehlo.select(isnan(b[0]), a[0], largest))]

    # onnxruntime's generic kernel (see Deviations): a NaN first element of a window wins.
    generic_kernel = dtype not in (DataType.FLOAT, DataType.FLOAT16) or wants_indices or any(d > 1 for d in window.dilations)
    first_wins = is_float and generic_kernel
    if not wants_indices and all(k == 1 for k in window.kernel):
        # A 1x1... window holds one element, which onnxruntime returns as it is (NaN and -inf
        # included: fuzz seed 50 #20751); XLA's maximum from -inf gives exactly that element.
        (y,) = windows.reduce_window([x], [dtypes.lowest(dtype)], window, out, lambda a, b: [stablehlo.maximum(a[0], b[0])])
        return [y]
    if not wants_indices:
        # float32 MLAS starts at the finite lowest value: a window of NaNs or -infs gives it.
        init = float(np.finfo(np.float32).min) if dtype == DataType.FLOAT and not first_wins else dtypes.lowest(dtype)
        static = all(windows.is_int(d) for d in (*shape, *out))
        if static and not first_wins and all(d == 1 for d in window.dilations) and sum(window.kernel) <= windows.SLICED_MAX_MAX_TAPS:
            # x > init is false for NaN (and for init itself): NaN starts no window, as in MLAS.
            start = builders.splat(init, dtype, builders.dims_of(x))
            source = stablehlo.select(builders.compare(x, start, "GT"), x, start) if is_float else x
            return [windows.max_by_slices(source, init, window, out)]
        (y,) = windows.reduce_window([x], [init], window, out, max_ignoring_nan)
        if first_wins:
            nan = builders.splat(float("nan"), dtype, builders.dims_of(y))
            y = stablehlo.select(_first_is_nan(x, window, out), nan, y)
        return [y]
    shape = ctx.input_static_shape(0)  # Indices need static shapes
    storage_order = node.attr_int("storage_order", 0)
    if storage_order not in (0, 1):
        raise ctx.unsupported_attribute("storage_order", storage_order, "0 (row major), 1 (column major)")
    flat = _flat_index(shape)

    def argmax(a: list[ir.Value], b: list[ir.Value]) -> list[ir.Value]:
        greater = builders.compare(a[0], b[0], "GT")
        equal = builders.compare(a[0], b[0], "EQ")
        earlier = stablehlo.and_(equal, builders.compare(a[1], b[1], "LT"))
        take_a = stablehlo.or_(greater, earlier)
        if is_float:  # NaN never wins (see max_ignoring_nan)
            a_nan, b_nan = isnan(a[0]), isnan(b[0])
            take_a = stablehlo.select(builders.compare(a_nan, b_nan, "NE"), b_nan, take_a)
        return [stablehlo.select(take_a, a[0], b[0]), stablehlo.select(take_a, a[1], b[1])]

    y, indices = windows.reduce_window([x, flat], [dtypes.lowest(dtype), np.iinfo(np.int64).max], window, out, argmax)
    if first_wins:
        first, first_index = _first_in_window(x, flat, window, out)
        first_nan = isnan(first)
        y = stablehlo.select(first_nan, first, y)
        indices = stablehlo.select(first_nan, first_index, indices)
    if storage_order == 1:
        indices = _column_major_indices(indices, shape)
    return [y, indices]


def _flat_index(shape: Sequence[int]) -> ir.Value:
    """Row-major flat indices into a static ``shape``, as int64 of that shape."""
    flat = stablehlo.iota(builders.tensor_type([math.prod(shape)], DataType.INT64), 0)
    return builders.reshape(flat, shape)


def _first_in_window(
    x: ir.Value, flat: ir.Value, window: windows.Window, out: Sequence[Dim]
) -> tuple[ir.Value, ir.Value]:
    """Each window's first in-bounds element of ``x`` in row-major order, and its flat index.

    A reduce_window keeping the operand pair with the smaller index (padding holds index
    int64 max and value 0, so it never comes first unless a window is all padding).
    """

    def earlier(a: list[ir.Value], b: list[ir.Value]) -> list[ir.Value]:
        take_a = builders.compare(a[1], b[1], "LT")
        return [stablehlo.select(take_a, a[0], b[0]), stablehlo.select(take_a, a[1], b[1])]

    first, index = windows.reduce_window([x, flat], [0, np.iinfo(np.int64).max], window, out, earlier)
    return first, index


def _first_is_nan(x: ir.Value, window: windows.Window, out: Sequence[Dim]) -> ir.Value:
    """Whether each window's first in-bounds element of ``x`` (row-major) is NaN, as bool.

    A window spans spatial dims only, so "first" is the smallest row-major spatial position.
    One ``reduce_window(min)`` over int64 keys ``2 * position + isnan(x)`` finds it (padding
    holds an even int64 max, never NaN); sizes of symbolic dims enter the position as run-time
    values. Integer keys carry no cotangent, so autodiff passes over this (a variadic
    reduce_window of values has no VJP).
    """
    dims = builders.dims_of(x)
    i64 = DataType.INT64
    position = None
    for axis in range(2, len(dims)):
        coord = builders.iota(dims, axis, i64)
        if position is None:
            position = coord
            continue
        size = builders.broadcast_to(builders.dim_value(dims[axis]), dims, dims=[])
        position = stablehlo.add(stablehlo.multiply(position, size), coord)
    key = stablehlo.add(
        stablehlo.multiply(position, builders.splat(2, i64, dims)), builders.convert(builders.compare(x, x, "NE"), i64)
    )
    padding = np.iinfo(np.int64).max - 1
    (smallest,) = windows.reduce_window([key], [padding], window, out, lambda a, b: [stablehlo.minimum(a[0], b[0])])
    out_dims = builders.dims_of(smallest)
    parity = stablehlo.remainder(smallest, builders.splat(2, i64, out_dims))
    return builders.compare(parity, builders.splat(1, i64, out_dims), "EQ")


def _column_major_indices(indices: ir.Value, shape: Sequence[int]) -> ir.Value:
    """Re-encodes row-major flat indices into X with column-major spatial order."""
    spatial = list(shape[2:])
    i64 = DataType.INT64
    out_shape = builders.static_shape_of(indices)

    def const(value: int) -> ir.Value:
        return builders.splat(value, i64, out_shape)

    block = math.prod(spatial)
    within = stablehlo.remainder(indices, const(block))
    result = stablehlo.subtract(indices, within)
    row_stride = block
    col_stride = 1
    col_strides = [int(np.prod(spatial[:i])) for i in range(len(spatial))]
    for axis, size in enumerate(spatial):
        row_stride //= size
        coord = stablehlo.remainder(stablehlo.divide(within, const(row_stride)), const(size))
        col_stride = col_strides[axis]
        result = stablehlo.add(result, stablehlo.multiply(coord, const(col_stride)))
    return result


@lowering("AveragePool", since=7)  # 7 added count_include_pad
@lowering("AveragePool", since=10)  # 10 added ceil_mode
@lowering("AveragePool", since=11)  # 11 documented default strides
@lowering("AveragePool", since=19)  # 19 added dilations
@lowering("AveragePool", since=22)  # 22 added bfloat16 and dropped windows starting in the end padding
def lower_average_pool(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value]:
    """Lowers AveragePool to stablehlo.reduce_window(add) divided by constant window counts.

    Spec: AveragePool-7/10/11/19/22.
    Shapes: X [N, C, D1 ... Dn] (N and D symbolic allowed); kernel_shape required.
    Dtypes: float16, bfloat16, float32, float64.
    Deviations: ``ceil_mode`` drops a last window that would start in the end padding for every
        revision (AveragePool-22 wrote this down); the ``ceil_mode`` tail is never counted,
        even with ``count_include_pad=1`` (as onnxruntime and PyTorch do). SAME_* pads for the
        dilated window, as the spec's formula says; onnxruntime pads for the undilated one.
    Raises:
        UnsupportedAttributeError: an unknown auto_pad, negative pads.
        ShapeError: kernel_shape missing or of the wrong length; a symbolic dim.
    """
    x, shape = _pool_input(ctx, _POOL_FLOATS, "float16, bfloat16, float32, float64")
    kernel = windows.kernel_from_attr(ctx, node, len(shape) - 2)
    window, out = windows.window(ctx, node, shape[2:], kernel, ceil_mode=bool(node.attr_int("ceil_mode", 0)), clamp_same=False)
    dtype = builders.dtype_of(x)
    (total,) = windows.reduce_window([x], [0], window, out, lambda a, b: [stablehlo.add(a[0], b[0])])
    if not all(windows.is_int(d) for d in shape):
        return [_symbolic_average(x, total, window, out, include_pad=bool(node.attr_int("count_include_pad", 0)))]
    counts = windows.window_counts(shape[2:], window, out, include_pad=bool(node.attr_int("count_include_pad", 0)))
    out_shape = builders.static_shape_of(total)
    divisor = builders.broadcast_to(builders.constant(counts, dtype), out_shape, dims=range(2, len(out_shape)))
    return [builders.divide(total, divisor)]


def _symbolic_average(
    x: ir.Value, total: ir.Value, window: windows.Window, out: Sequence[Dim], *, include_pad: bool
) -> ir.Value:
    """``total`` divided by the window counts when X has symbolic dims.

    With ``count_include_pad`` every (floor-mode) window counts the whole kernel; otherwise the
    counts are a ``reduce_window(add)`` of ones over X's spatial dims, padded with zeros.
    """
    dtype = builders.dtype_of(x)
    out_dims = builders.dims_of(total)
    spatial = builders.dims_of(x)[2:]
    covered = all(
        floor_div(size + b + e - k, s) + 1 == o
        for size, (b, e), s, k, o in zip(spatial, window.pads, window.strides, window.effective_kernel, out)
    )
    if not covered and include_pad:
        # ceil_mode: the tail past the end padding does not count; pad ones with ones (the pads)
        # and let the reduce_window pad the tail with zeros.
        ones = builders.splat(1, dtype, [1, 1, *spatial])
        low = [0, 0, *(b for b, _ in window.pads)]
        high = [0, 0, *(e for _, e in window.pads)]
        ones = builders.record(
            stablehlo.pad(ones, builders.splat(1, dtype), low, high, [0] * len(low)),
            [1, 1, *(size + b + e for size, (b, e) in zip(spatial, window.pads))],
        )
        bare = dataclasses.replace(window, pads=((0, 0),) * len(spatial))
        (counts,) = windows.reduce_window_symbolic([ones], [0], bare, out, lambda a, b: [stablehlo.add(a[0], b[0])])
        divisor = builders.broadcast_to(counts, out_dims)
    elif include_pad or (covered and all(windows.is_int(b) and windows.is_int(e) and b == 0 and e == 0 for b, e in window.pads)):
        divisor = builders.splat(math.prod(window.kernel), dtype, out_dims)
    else:
        ones = builders.splat(1, dtype, [1, 1, *spatial])
        (counts,) = windows.reduce_window_symbolic(
            [ones], [0], window, out, lambda a, b: [stablehlo.add(a[0], b[0])]
        )
        divisor = builders.broadcast_to(counts, out_dims)
    return builders.divide(total, divisor)


def _lp_power(x: ir.Value, p: int) -> ir.Value:
    """``|x|^p`` (``x*x`` for p=2)."""
    if p == 2:
        return stablehlo.multiply(x, x)
    magnitude = stablehlo.abs(x)
    if p == 1:
        return magnitude
    return stablehlo.power(magnitude, builders.splat(p, builders.dtype_of(x), builders.dims_of(x)))


def _lp_root(total: ir.Value, p: int) -> ir.Value:
    """``total^(1/p)`` (sqrt for p=2)."""
    if p == 1:
        return total
    if p == 2:
        return stablehlo.sqrt(total)
    return stablehlo.power(total, builders.splat(1.0 / p, builders.dtype_of(total), builders.dims_of(total)))


def _lp_order(ctx: LoweringContext, node: OnnxNode) -> int:
    p = node.attr_int("p", 2)
    if p < 1:
        raise ctx.unsupported_attribute("p", p, "integers >= 1")
    return p


@lowering("LpPool", since=2)  # 2 made p an int
@lowering("LpPool", since=11)  # 11 documented default strides
@lowering("LpPool", since=18)  # 18 added ceil_mode and dilations
@lowering("LpPool", since=22)  # 22 added bfloat16
def lower_lp_pool(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value]:
    """Lowers LpPool to stablehlo.reduce_window(add) of ``|x|^p``, then ``^(1/p)``.

    Spec: LpPool-2/11/18/22.
    Shapes: X [N, C, D1 ... Dn] static; kernel_shape required.
    Dtypes: float16, bfloat16, float32, float64.
    Deviations: SAME_* pads for the dilated window, as for MaxPool.
    Raises:
        UnsupportedAttributeError: p < 1, an unknown auto_pad, negative pads.
        ShapeError: kernel_shape missing or of the wrong length; a symbolic dim.
    """
    x, shape = _pool_input(ctx, _POOL_FLOATS, "float16, bfloat16, float32, float64")
    kernel = windows.kernel_from_attr(ctx, node, len(shape) - 2)
    p = _lp_order(ctx, node)
    window, out = windows.window(ctx, node, shape[2:], kernel, ceil_mode=bool(node.attr_int("ceil_mode", 0)), clamp_same=False)
    (total,) = windows.reduce_window([_lp_power(x, p)], [0], window, out, lambda a, b: [stablehlo.add(a[0], b[0])])
    return [_lp_root(total, p)]


def _global_reduce(x: ir.Value, body_op: type, init: float | int) -> ir.Value:
    """``stablehlo.reduce`` over the spatial dims of ``[N, C, *S]``, kept as size-1 dims."""
    return builders.reduce(x, range(2, builders.rank_of(x)), body_op, init, keepdims=True)


@lowering("GlobalAveragePool", since=1)
@lowering("GlobalAveragePool", since=22)  # 22 added bfloat16
def lower_global_average_pool(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value]:
    """Lowers GlobalAveragePool to stablehlo.reduce(add) over the spatial dims, then a divide.

    Spec: GlobalAveragePool-1/22.
    Shapes: X [N, C, D1 ... Dn] static -> [N, C, 1 ... 1].
    Dtypes: float16, bfloat16, float32, float64.
    """
    x, shape = _pool_input(ctx, _POOL_FLOATS, "float16, bfloat16, float32, float64")
    total = _global_reduce(x, stablehlo.AddOp, 0)
    size = product(shape[2:])
    if windows.is_int(size):
        count = builders.splat(size, builders.dtype_of(x), builders.dims_of(total))
    else:
        count = builders.convert(builders.dim_value(size), builders.dtype_of(x))
        count = builders.broadcast_to(count, builders.dims_of(total), dims=())
    return [builders.divide(total, count)]


@lowering("GlobalMaxPool", since=1)
@lowering("GlobalMaxPool", since=22)  # 22 added bfloat16
def lower_global_max_pool(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value]:
    """Lowers GlobalMaxPool to stablehlo.reduce(max) over the spatial dims.

    Spec: GlobalMaxPool-1/22.
    Shapes: X [N, C, D1 ... Dn] static -> [N, C, 1 ... 1].
    Dtypes: float16, bfloat16, float32, float64.
    """
    x, _ = _pool_input(ctx, _POOL_FLOATS, "float16, bfloat16, float32, float64")
    return [_global_reduce(x, stablehlo.MaxOp, dtypes.lowest(builders.dtype_of(x)))]


@lowering("GlobalLpPool", since=2)  # 2 made p an int
@lowering("GlobalLpPool", since=22)  # 22 added bfloat16
def lower_global_lp_pool(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value]:
    """Lowers GlobalLpPool to stablehlo.reduce(add) of ``|x|^p`` over the spatial dims, then ``^(1/p)``.

    Spec: GlobalLpPool-2/22.
    Shapes: X [N, C, D1 ... Dn] static -> [N, C, 1 ... 1].
    Dtypes: float16, bfloat16, float32, float64.
    Raises:
        UnsupportedAttributeError: p < 1.
    """
    x, _ = _pool_input(ctx, _POOL_FLOATS, "float16, bfloat16, float32, float64")
    p = _lp_order(ctx, node)
    return [_lp_root(_global_reduce(_lp_power(x, p), stablehlo.AddOp, 0), p)]


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
    geometry.require_float(ctx, 0)
    x = ctx.input(0)
    x_shape = ctx.input_static_shape(0)
    kernel = node.attr_ints("kernel_shape") or []
    rank = len(x_shape) - 2
    if len(kernel) != rank or rank < 1:
        raise ctx.error(f"kernel_shape {kernel} must have one entry per spatial dim of X {list(x_shape)}", ShapeError)
    if ctx.input_static_shape(1) != x_shape:
        raise ctx.error(f"I {list(ctx.input_static_shape(1))} must have X's shape {list(x_shape)}", ShapeError)
    strides = geometry.ints_attr(node, "strides", [1] * rank)
    pads = geometry.ints_attr(node, "pads", [0] * (2 * rank))
    inferred = [
        *x_shape[:2],
        *((x_shape[2 + i] - 1) * strides[i] - (pads[i] + pads[rank + i]) + kernel[i] for i in range(rank)),
    ]
    out_shape = ctx.constant_ints(2) if ctx.has_input(2) else inferred
    if len(out_shape) != len(inferred) or any(o < i for o, i in zip(out_shape, inferred)):
        raise ctx.error(f"output_shape {out_shape} must not be smaller than the inferred shape {inferred}", ShapeError)
    dtype = ctx.input_dtype(0)
    elements = math.prod(x_shape)
    updates = builders.reshape(x, [elements])
    indices = builders.reshape(builders.convert(ctx.input(1), DataType.INT64), [elements, 1])
    zeros = builders.splat(0, dtype, [math.prod(inferred)])
    numbers = stablehlo.ScatterDimensionNumbers.get(
        update_window_dims=[],
        inserted_window_dims=[0],
        input_batching_dims=[],
        scatter_indices_batching_dims=[],
        scattered_dims_to_operand_dims=[0],
        index_vector_dim=1,
    )
    op = stablehlo.ScatterOp([zeros.type], [zeros], indices, [updates], numbers)
    scalar = builders.tensor_type((), dtype)
    block = op.update_computation.blocks.append(scalar, scalar)
    with ir.InsertionPoint(block):
        stablehlo.ReturnOp([block.arguments[1]])
    y = builders.reshape(op.results[0], inferred)
    if out_shape != inferred:
        high = [o - i for o, i in zip(out_shape, inferred)]
        y = stablehlo.pad(y, builders.splat(0, dtype), [0] * len(high), high, [0] * len(high))
    return [y]
