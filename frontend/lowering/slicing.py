"""Lowering rules: slicing, padding and masking by position.

::

    Slice(x, starts, ends, axes, steps) -> stablehlo.reverse (negative steps) + stablehlo.slice
    Pad(x, pads)                        -> stablehlo.pad (constant) or stablehlo.gather with a
                                           compile-time index map (reflect, edge, wrap); on a
                                           symbolic axis the map is computed from dynamic_iota
    Trilu(x, k)                         -> stablehlo.iota + compare + select
    ReverseSequence(x, lens)            -> stablehlo.gather with run-time time indices

Spec: onnx.ai/onnx/operators (each op's page).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import stablehlo

from onnx_stablehlo.errors import ShapeError
from onnx_stablehlo.frontend import builders
from onnx_stablehlo.frontend.context import LoweringContext, OnnxNode
from onnx_stablehlo.frontend.dtypes import DataType
from onnx_stablehlo.frontend.registry import lowering
from onnx_stablehlo.frontend.shapes import Dim, ceil_div, is_static, simplify


def _constant_ints(ctx: LoweringContext, index: int) -> list[int]:
    """A constant int input (starts, axes, pads ...) as Python ints, flattened."""
    return [int(v) for v in np.asarray(ctx.constant_input(index)).reshape(-1)]


@lowering("Slice", since=1)
def lower_slice_attrs(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value]:
    """Lowers Slice-1 (starts, ends, axes as attributes; step 1) to stablehlo.slice.

    Spec: Slice-1.
    Shapes: data any (symbolic dims as in :func:`lower_slice`); starts/ends clamped to the dims,
        negative counting from the end.
    Dtypes: any.
    Raises: ShapeError if the attribute lengths differ or an axis repeats.
    """
    starts = node.attr_ints("starts")
    ends = node.attr_ints("ends")
    if starts is None or ends is None:
        raise ctx.error("attributes starts and ends are required", ShapeError)
    axes = node.attr_ints("axes")
    if not is_static(ctx.input_shape(0)):
        return [_slice_symbolic(ctx, ctx.input(0), list(starts), list(ends), axes, None)]
    return [_slice(ctx, ctx.input(0), starts, ends, axes, None)]


@lowering("Slice", since=10)
@lowering("Slice", since=11)  # 11 allowed negative axes
@lowering("Slice", since=13)  # 13 added bfloat16
def lower_slice(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value]:
    """Lowers Slice to stablehlo.slice, reversing axes with a negative step first.

    Spec: Slice-10/11/13.
    Shapes: data any; starts, ends, axes, steps int32/int64 [k] known at compile time
        (INT64_MAX / INT64_MIN mean "to the end"); omitted axes are [0, k), omitted steps 1.
        With symbolic dims (or starts/ends computed from them) it is one real_dynamic_slice,
        negative steps reversing their axes first (see :func:`_slice_symbolic`).
    Dtypes: any.
    Raises: NonConstantInputError if starts/ends/axes/steps are computed at run time;
        ShapeError for mismatched lengths, repeated axes or a zero step.
    """
    axes = _constant_ints(ctx, 3) if ctx.has_input(3) else None
    steps = _constant_ints(ctx, 4) if ctx.has_input(4) else None
    if ctx.is_constant_input(1) and ctx.is_constant_input(2) and is_static(ctx.input_shape(0)):
        return [_slice(ctx, ctx.input(0), _constant_ints(ctx, 1), _constant_ints(ctx, 2), axes, steps)]
    starts = list(ctx.symbolic_input(1).reshape(-1))
    ends = list(ctx.symbolic_input(2).reshape(-1))
    return [_slice_symbolic(ctx, ctx.input(0), starts, ends, axes, steps)]


_END = 2**62  # ends at or above this mean "to the end" (INT64_MAX and friends)


def _slice_symbolic(
    ctx: LoweringContext,
    data: ir.Value,
    starts: Sequence[Dim],
    ends: Sequence[Dim],
    axes: Sequence[int] | None,
    steps: Sequence[int] | None,
) -> ir.Value:
    """Slice with symbolic dims or bounds, as stablehlo.real_dynamic_slice.

    A symbolic bound is taken to lie within its dim (exporters slice position tables and the
    like by a sequence length); an int bound against a symbolic dim is clamped at run time, and
    the result dim is then unknown until the module is refined. A negative step reverses its
    axis (``stablehlo.reverse``) and slices the reversed axis with step ``-step`` and mirrored
    bounds (:func:`_mirror_bound`).
    """
    shape = list(builders.dims_of(data))
    rank = len(shape)
    axes = list(range(len(starts))) if axes is None else list(axes)
    steps = [1] * len(starts) if steps is None else list(steps)
    begin: list[Dim | None] = [0] * rank
    limit: list[Dim | None] = list(shape)
    stride = [1] * rank
    out: list[Dim | None] = list(shape)
    runtime: dict[tuple[int, int], ir.Value] = {}
    if not len(starts) == len(ends) == len(axes) == len(steps):
        raise ctx.error(
            f"starts, ends, axes {list(axes)} and steps {list(steps)} must have the same length", ShapeError
        )
    mirrored = []
    for axis, start, end, step in zip(axes, starts, ends, steps):
        axis = ctx.axis(axis, rank)
        if step == 0:
            raise ctx.error(f"step 0 on axis {axis}", ShapeError)
        dim = shape[axis]
        if step < 0:
            start, end, step = _mirror_bound(start, dim), _mirror_bound(end, dim), -step
            mirrored.append(axis)
        first = _clamp_bound(start, dim)
        stop = _clamp_bound(end, dim)
        for slot, (bound, raw) in enumerate(((first, start), (stop, end))):
            if bound is None:  # an int bound against a symbolic dim: min(bound, dim) at run time
                runtime[(slot, axis)] = stablehlo.minimum(builders.dim_value(int(raw)), builders.dim_value(dim))
        begin[axis], limit[axis], stride[axis] = first, stop, step
        if first is None or stop is None:
            out[axis] = None
        elif isinstance(stop, int) and isinstance(first, int):
            out[axis] = max(0, -(-(stop - first) // step))
        else:
            out[axis] = ceil_div(stop - first, step)

    def bounds(values: list, slot: int) -> ir.Value:
        if all(v is not None for v in values) and not any(key[0] == slot for key in runtime):
            return builders.shape_tensor(values)
        parts = [
            builders.reshape(runtime[(slot, axis)] if v is None else builders.dim_value(v), (1,))
            for axis, v in enumerate(values)
        ]
        if len(parts) == 1:
            return parts[0]
        return stablehlo.concatenate(parts, ir.IntegerAttr.get(ir.IntegerType.get_signless(64), 0))

    if mirrored:
        data = builders.record(stablehlo.reverse(data, builders.i64_array(sorted(mirrored))), shape)
    result_type = builders.tensor_type(out, builders.dtype_of(data))
    sliced = stablehlo.real_dynamic_slice(
        result_type, data, bounds(begin, 0), bounds(limit, 1), builders.shape_tensor(stride)
    )
    if any(d is None for d in out):
        return sliced  # the importer names the unknown dims
    return builders.record(sliced, out)


def _mirror_bound(bound: Dim, dim: Dim) -> Dim:
    """A bound of a negative-step slice as a bound on the reversed axis (position p -> n-1-p).

    With step < 0 ONNX clamps a bound into [-1, n-1] (after adding n to a negative one); on the
    reversed axis that is ``n - 1 - bound`` in [0, n]. Ints stay relative so that
    :func:`_clamp_bound` clamps them: ``b < 0`` -> ``-1 - b`` (from the start), ``0 <= b`` ->
    ``-(b + 1)`` (from the end), ``b >= INT64_MAX``-ish -> 0; ``b <= INT64_MIN``-ish maps past
    the end by itself.
    """
    if not isinstance(bound, int):
        return dim - 1 - bound
    if bound >= _END:
        return 0
    return -1 - bound


def _clamp_bound(bound: Dim, dim: Dim) -> Dim | None:
    """The bound clamped into [0, dim] as the spec says; ``None`` when only run time can tell.

    A symbolic bound is taken as it is (inside the dim) unless it provably reaches past the
    dim (``seq + 1`` against ``seq``), which clamps to the dim.
    """
    if not isinstance(bound, int):
        past = simplify(bound - dim)
        return dim if isinstance(past, int) and past >= 0 else bound
    if bound >= _END:
        return dim
    if bound < 0:
        bound = dim + bound
        return max(bound, 0) if isinstance(bound, int) else bound
    if isinstance(dim, int):
        return min(bound, dim)
    return 0 if bound == 0 else None


def _slice(
    ctx: LoweringContext,
    data: ir.Value,
    starts: Sequence[int],
    ends: Sequence[int],
    axes: Sequence[int] | None,
    steps: Sequence[int] | None,
) -> ir.Value:
    shape = builders.static_shape_of(data)
    rank = len(shape)
    if axes is None:
        axes = list(range(len(starts)))
    if steps is None:
        steps = [1] * len(starts)
    if not len(starts) == len(ends) == len(axes) == len(steps):
        raise ctx.error(
            f"starts {list(starts)}, ends {list(ends)}, axes {list(axes)} and steps {list(steps)} "
            "must have the same length",
            ShapeError,
        )
    normalized = [ctx.axis(a, rank) for a in axes]
    if len(set(normalized)) != len(normalized):
        raise ctx.error(f"axes {list(axes)} repeat an axis", ShapeError)
    begin, limit, stride = [0] * rank, list(shape), [1] * rank
    reverse = []
    for axis, start, end, step in zip(normalized, starts, ends, steps):
        if step == 0:
            raise ctx.error(f"step 0 on axis {axis}", ShapeError)
        dim = shape[axis]
        # Python slices clamp exactly as the spec (and onnx.reference) does.
        first, stop, step = slice(start, end, step).indices(dim)
        count = len(range(first, stop, step))
        if step < 0:
            reverse.append(axis)
            first = dim - 1 - first
            step = -step
        step = min(step, max(dim, 1))  # a step past the dim takes at most one element (-2^63 has no int64 negation)
        if count == 0:
            first, last = 0, 0
        else:
            last = first + (count - 1) * step + 1
        begin[axis], limit[axis], stride[axis] = first, last, step
    if reverse:
        data = stablehlo.reverse(data, builders.i64_array(sorted(reverse)))
    if begin == [0] * rank and limit == list(shape) and stride == [1] * rank:
        return data
    return stablehlo.slice(data, begin, limit, stride)


@lowering("Pad", since=2)
def lower_pad_attrs(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value]:
    """Lowers Pad-2 (pads and value as attributes); see :func:`lower_pad`.

    Spec: Pad-2.
    """
    pads = node.attr_ints("pads")
    if pads is None:
        raise ctx.error("attribute pads is required", ShapeError)
    data = ctx.input(0)
    return [_pad(ctx, node, data, pads, None, lambda: builders.splat(node.attr_float("value", 0.0), builders.dtype_of(data)))]


@lowering("Pad", since=11)  # 11 moved pads and the constant value to inputs
@lowering("Pad", since=13)  # 13 added bfloat16
@lowering("Pad", since=18)  # 18 added the axes input
@lowering("Pad", since=19)  # 19 added mode=wrap
@lowering("Pad", since=21)  # 21 and later widened types
@lowering("Pad", since=23)
@lowering("Pad", since=24)
@lowering("Pad", since=25)
def lower_pad(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value]:
    """Lowers Pad: ``constant`` to stablehlo.pad, ``reflect``/``edge``/``wrap`` to a gather.

    Negative pads crop. For the non-constant modes every padded axis becomes a stablehlo.gather
    with a compile-time index map (numpy.pad's definition of each mode); on an axis of symbolic
    size the map is computed at run time from ``dynamic_iota`` and the run-time size, and the
    gather is a ``dynamic_gather`` when other dims are symbolic.

    Spec: Pad-2/11/13/18/19/21/23/24/25.
    Shapes: data rank r (symbolic dims allowed); pads int64 [2 * len(axes)] known at compile time; axes
        (from 18) int32/int64 known at compile time; constant_value a scalar, may be computed at
        run time.
    Dtypes: any.
    Raises: UnsupportedAttributeError for an unknown mode; NonConstantInputError if pads or
        axes are computed at run time; ShapeError for a wrong pads length or an edge/reflect/wrap
        pad of an empty axis.
    """
    data = ctx.input(0)
    pads = _constant_ints(ctx, 1)
    axes = _constant_ints(ctx, 3) if node.since_version >= 18 and ctx.has_input(3) else None
    dtype = builders.dtype_of(data)

    def padding_value() -> ir.Value:
        if ctx.has_input(2) and ctx.is_constant_input(2):
            return builders.constant(np.asarray(ctx.constant_input(2)).reshape(()), dtype)
        if ctx.has_input(2):
            return builders.reshape(ctx.input(2), [])
        return builders.splat(0, dtype)

    return [_pad(ctx, node, data, pads, axes, padding_value)]


def _pad(
    ctx: LoweringContext,
    node: OnnxNode,
    data: ir.Value,
    pads: Sequence[int],
    axes: Sequence[int] | None,
    padding_value: Callable[[], ir.Value],
) -> ir.Value:
    """Pads ``data``; ``padding_value`` builds the scalar for mode=constant (only then)."""
    shape = builders.dims_of(data)
    rank = len(shape)
    if axes is None:
        axes = list(range(rank))
    axes = [ctx.axis(a, rank) for a in axes]
    if len(pads) != 2 * len(axes) or len(set(axes)) != len(axes):
        raise ctx.error(f"pads {list(pads)} must hold 2 values for each of the axes {axes}", ShapeError)
    low, high = [0] * rank, [0] * rank
    for position, axis in enumerate(axes):
        low[axis], high[axis] = pads[position], pads[position + len(axes)]
    mode = node.attr_str("mode")
    modes = ("constant", "reflect", "edge", "wrap") if node.since_version >= 19 else ("constant", "reflect", "edge")
    if mode not in modes:
        raise ctx.unsupported_attribute("mode", mode, ", ".join(modes))
    if mode == "constant":
        if not any(low) and not any(high):
            return data
        padded = stablehlo.pad(data, padding_value(), low, high, [0] * rank)
        return builders.record(padded, [d + lo + hi for d, lo, hi in zip(shape, low, high)])
    result = data
    for axis in range(rank):
        if low[axis] == 0 and high[axis] == 0:
            continue
        dim = shape[axis]
        if dim == 0:
            raise ctx.error(f"mode={mode} cannot pad axis {axis}, which is empty", ShapeError)
        if isinstance(dim, int):
            positions = np.arange(-low[axis], dim + high[axis], dtype=np.int64)
            source = _pad_source(positions, dim, mode)
            if is_static(builders.dims_of(result)):
                result = builders.take(result, source, axis)
            else:
                result = builders.take(result, builders.constant(source, DataType.INT64), axis)
        else:
            result = builders.take(result, _pad_source_symbolic(dim, low[axis], high[axis], mode), axis)
    return result


def _pad_source_symbolic(dim: Dim, low: int, high: int, mode: str) -> ir.Value:
    """:func:`_pad_source` for a symbolic axis size: an int64 ``[dim + low + high]`` index vector.

    Positions come from ``stablehlo.dynamic_iota`` shifted by ``-low``; ``n`` is the run-time
    size. edge: ``clamp(0, p, n - 1)``; wrap: ``((p rem n) + n) rem n``; reflect: with the period
    ``P = max(2 * (n - 1), 1)``, ``f = ((p rem P) + P) rem P`` and ``f < n ? f : P - f`` (a
    single element has ``P = 1``, so every position reads index 0). ``rem`` truncates, hence the
    ``+ n``/``+ P`` before the second ``rem``. A run-time size of 0 is an error in the spec
    (onnxruntime rejects it); here the indices are then undefined.
    """
    i64 = DataType.INT64
    out = dim + low + high
    shape = [out]

    def scalar(value: ir.Value | int) -> ir.Value:
        if isinstance(value, int):
            return builders.splat(value, i64, shape)
        return builders.broadcast_to(value, shape, dims=())

    positions = builders.iota(shape, 0, i64)
    if low:
        positions = stablehlo.subtract(positions, scalar(low))
    n = builders.dim_value(dim)
    if mode == "edge":
        last = stablehlo.subtract(n, builders.constant(np.array(1, np.int64)))
        return stablehlo.clamp(scalar(0), positions, scalar(last))

    def positive_rem(value: ir.Value, divisor: ir.Value) -> ir.Value:
        wide = scalar(divisor)
        first = stablehlo.remainder(value, wide)
        return stablehlo.remainder(stablehlo.add(first, wide), wide)

    if mode == "wrap":
        return positive_rem(positions, n)
    one = builders.constant(np.array(1, np.int64))
    period = stablehlo.multiply(stablehlo.subtract(n, one), builders.constant(np.array(2, np.int64)))
    period = stablehlo.maximum(period, one)
    folded = positive_rem(positions, period)
    inside = builders.compare(folded, scalar(n), "LT")
    return stablehlo.select(inside, folded, stablehlo.subtract(scalar(period), folded))


def _pad_source(positions: np.ndarray, dim: int, mode: str) -> np.ndarray:
    """Maps output positions along an axis (input coordinates) to the input index they copy."""
    if mode == "edge":
        return np.clip(positions, 0, dim - 1)
    if mode == "wrap":
        return np.mod(positions, dim)
    if dim == 1:  # reflect of a single element repeats it
        return np.zeros_like(positions)
    period = 2 * (dim - 1)
    folded = np.mod(positions, period)
    return np.where(folded < dim, folded, period - folded)


@lowering("Trilu", since=14)
def lower_trilu(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value]:
    """Lowers Trilu to a select between the input and zeros on an iota mask of the last two dims.

    ``upper=1`` keeps ``j - i >= k``; ``upper=0`` keeps ``j - i <= k``.

    Spec: Trilu-14.
    Shapes: data [..., N, M], rank >= 2, symbolic dims allowed (the mask is a dynamic_iota);
        k an int64 scalar, may be computed at run time.
    Dtypes: any.
    Raises: ShapeError for rank < 2.
    """
    data = ctx.input(0)
    shape = builders.dims_of(data)
    if len(shape) < 2:
        raise ctx.error(f"expects rank >= 2, got shape {[str(d) for d in shape]}", ShapeError)
    rows, cols = shape[-2], shape[-1]
    plane = (rows, cols)
    offset = stablehlo.subtract(builders.iota(plane, 1, DataType.INT64), builders.iota(plane, 0, DataType.INT64))
    if ctx.has_input(1) and ctx.is_constant_input(1):
        k = builders.splat(ctx.constant_int(1, "k"), DataType.INT64, (rows, cols))
    elif ctx.has_input(1):
        k = builders.broadcast_to(builders.reshape(builders.convert(ctx.input(1), DataType.INT64), []), (rows, cols))
    else:
        k = builders.splat(0, DataType.INT64, (rows, cols))
    keep = builders.compare(offset, k, "GE" if node.attr_int("upper") else "LE")
    keep = builders.broadcast_to(keep, shape, dims=[len(shape) - 2, len(shape) - 1])
    zeros = builders.splat(0, builders.dtype_of(data), shape)
    return [stablehlo.select(keep, data, zeros)]


@lowering("ReverseSequence", since=10)
@lowering("ReverseSequence", since=28)  # 28 widened types
def lower_reverse_sequence(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value]:
    """Lowers ReverseSequence to a stablehlo.gather with per-batch reversed time indices.

    Entry ``[b, t]`` reads time ``lens[b] - 1 - t`` where ``t < lens[b]``, else ``t``.

    Spec: ReverseSequence-10/28.
    Shapes: x rank >= 2, symbolic dims allowed; sequence_lens int64 [batch], may be computed
        at run time.
    Dtypes: any x type.
    Raises: ShapeError if batch_axis and time_axis are not distinct axes among the first two.
    """
    x = ctx.input(0)
    shape = builders.dims_of(x)
    rank = len(shape)
    batch_axis = ctx.attr_axis("batch_axis", rank)
    time_axis = ctx.attr_axis("time_axis", rank)
    if {batch_axis, time_axis} != {0, 1}:
        raise ctx.error(f"batch_axis {batch_axis} and time_axis {time_axis} must be 0 and 1", ShapeError)
    if batch_axis == 1:
        x = builders.transpose(x, [1, 0] + list(range(2, rank)))
    batch, time = builders.dims_of(x)[:2]
    times = builders.iota((batch, time), 1, DataType.INT64)
    lengths = builders.broadcast_to(builders.convert(ctx.input(1), DataType.INT64), (batch, time), dims=[0])
    reversed_times = stablehlo.subtract(
        stablehlo.subtract(lengths, builders.splat(1, DataType.INT64, (batch, time))), times
    )
    source = stablehlo.select(builders.compare(times, lengths, "LT"), reversed_times, times)
    batches = builders.iota((batch, time, 1), 0, DataType.INT64)
    points = stablehlo.concatenate([batches, builders.reshape(source, (batch, time, 1))], 2)
    points = builders.record(points, (batch, time, 2))
    rest = list(builders.dims_of(x)[2:])
    numbers = stablehlo.GatherDimensionNumbers.get(
        offset_dims=list(range(2, rank)),
        collapsed_slice_dims=[0, 1],
        operand_batching_dims=[],
        start_indices_batching_dims=[],
        start_index_map=[0, 1],
        index_vector_dim=2,
    )
    result_type = builders.tensor_type([batch, time] + rest, builders.dtype_of(x))
    if is_static(rest):
        result = stablehlo.gather(x, points, numbers, [1, 1] + rest, results=[result_type])
    else:
        sizes = builders.shape_tensor([1, 1] + rest)
        result = stablehlo.dynamic_gather(x, points, sizes, numbers, results=[result_type])
    result = builders.record(result, [batch, time] + rest)
    if batch_axis == 1:
        result = builders.transpose(result, [1, 0] + list(range(2, rank)))
    return [result]
