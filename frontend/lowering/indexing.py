"""Lowering rules: slicing, gathering, scattering, padding and index-driven ops.

::

    Slice(x, starts, ends, axes, steps) -> stablehlo.reverse (negative steps) + stablehlo.slice
    Gather(x, i)                        -> stablehlo.gather (a constant scalar index: slice + reshape)
    GatherND(x, i), GatherElements(x, i)-> stablehlo.gather
    ScatterND, ScatterElements, Scatter -> stablehlo.scatter with a reduction body
    Pad(x, pads)                        -> stablehlo.pad (constant) or stablehlo.gather with a
                                           compile-time index map (reflect, edge, wrap); on a
                                           symbolic axis the map is computed from dynamic_iota
    Trilu(x, k)                         -> stablehlo.iota + compare + select
    OneHot(i, depth, values)            -> stablehlo.iota + compare + select
    CumSum(x, axis)                     -> log2(n) steps of stablehlo.pad (shift) + stablehlo.add
                                           (a stablehlo.while of masked gathers when n is symbolic)
    ReverseSequence(x, lens)            -> stablehlo.gather with run-time time indices
    Compress(x, cond)                   -> stablehlo.gather with the compile-time nonzero positions
    NonZero(x), Unique(x)               -> computed at compile time (x must be known)

Run-time indices are normalized (``i < 0 -> i + dim``) with compare + select; compile-time
indices are normalized with numpy. Out-of-range run-time indices (an error in the spec) are
clamped by stablehlo.gather and skipped by stablehlo.scatter. Output sizes must be known at
compile time: ops whose output size depends on data values (NonZero, Unique, Compress) need
that data to be known at compile time.

Spec: onnx.ai/onnx/operators (each op's page).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import stablehlo

from onnx_stablehlo.errors import DataDependentShapeError, NonConstantInputError, ShapeError
from onnx_stablehlo.frontend import dtypes, emit
from onnx_stablehlo.frontend.context import LoweringContext, OnnxNode
from onnx_stablehlo.frontend.dtypes import DataType
from onnx_stablehlo.frontend.builders import while_loop
from onnx_stablehlo.frontend.registry import lowering
from onnx_stablehlo.frontend.shapes import Dim, ceil_div, is_static, simplify


def _constant_ints(ctx: LoweringContext, index: int) -> list[int]:
    """A constant int input (starts, axes, pads ...) as Python ints, flattened."""
    return [int(v) for v in np.asarray(ctx.constant_input(index)).reshape(-1)]




# Shared builders -------------------------------------------------------------------------------


def _normalize_indices(
    indices: ir.Value, bounds: np.ndarray, ctx: LoweringContext | None = None, what: str = "indices"
) -> ir.Value:
    """``i + bound where i < 0`` for run-time indices; ``bounds`` broadcasts to their shape.

    With ``ctx``, a run-time check that every index lies in ``[-bound, bound)`` is recorded
    (see :meth:`LoweringContext.runtime_check`), so an out-of-range index raises like
    onnxruntime instead of being clamped by the gather.
    """
    shape = emit.dims_of(indices)
    dtype = emit.dtype_of(indices)
    bounds = np.asarray(bounds)
    if bounds.size == 1:
        bound = emit.splat(bounds.reshape(()).item(), dtype, shape)
    else:
        bound = emit.constant(np.broadcast_to(bounds, shape), dtype)
    shown = bounds.reshape(()).item() if bounds.size == 1 else bounds.reshape(-1).tolist()
    return _normalized(indices, bound, ctx, f"{what} out of range (bound {shown})")


def _normalized(indices: ir.Value, bound: ir.Value, ctx: LoweringContext | None, message: str) -> ir.Value:
    """``indices + bound where indices < 0`` (``bound`` has their shape), with the range check."""
    shape = emit.dims_of(indices)
    dtype = emit.dtype_of(indices)
    if dtypes.is_unsigned_int(dtype):
        normalized = indices
    else:
        negative = emit.compare(indices, emit.splat(0, dtype, shape), "LT")
        normalized = stablehlo.SelectOp(negative, stablehlo.AddOp(indices, bound).result, indices).result
        normalized = emit.record(normalized, shape)
    if ctx is not None:
        ok = emit.compare(normalized, bound, "LT")
        if not dtypes.is_unsigned_int(dtype):
            ok = stablehlo.AndOp(ok, emit.compare(normalized, emit.splat(0, dtype, shape), "GE")).result
        ctx.runtime_check(ok, message)
    return normalized


def _normalize_symbolic(
    indices: ir.Value, bounds: Sequence[Dim], vector: bool, ctx: LoweringContext | None = None, what: str = "indices"
) -> ir.Value:
    """:func:`_normalize_indices` for bounds and index shapes that may be symbolic.

    Args:
        indices: run-time indices, any shape.
        bounds: one bound for every index (``vector=False``, ``bounds[0]``), or one per entry of
            the indices' last axis (``vector=True``, ScatterND-style index vectors).
        vector: which of the two.
        ctx, what: record the range check (see :func:`_normalize_indices`).

    Returns ``i + bound where i < 0`` (unsigned indices unchanged); a static case is exactly
    :func:`_normalize_indices`.
    """
    shape = emit.dims_of(indices)
    if is_static(bounds) and is_static(shape):
        return _normalize_indices(indices, np.asarray(bounds if vector else bounds[0], dtype=np.int64), ctx, what)
    dtype = emit.dtype_of(indices)
    if vector:
        bound = emit.broadcast_to(emit.convert(emit.shape_tensor(bounds), dtype), shape, dims=[len(shape) - 1])
    else:
        bound = emit.broadcast_to(emit.convert(emit.dim_value(bounds[0]), dtype), shape, dims=())
    shown = [str(b) for b in bounds] if vector else str(bounds[0])
    return _normalized(indices, bound, ctx, f"{what} out of range (bound {shown})")


def _fits(dims: Sequence[Dim], expected: Sequence[Dim]) -> bool:
    """Equal ranks and equal dims wherever both are static (symbolic dims bind at run time)."""
    if len(dims) != len(expected):
        return False
    return all(not isinstance(a, int) or not isinstance(b, int) or a == b for a, b in zip(dims, expected))


def _take(value: ir.Value, indices: ir.Value, axis: int) -> ir.Value:
    """``numpy.take(value, indices, axis)`` with stablehlo.gather (indices already in range).

    The result shape is ``shape[:axis] + indices.shape + shape[axis + 1:]``.
    """
    shape = emit.dims_of(value)
    index_shape = emit.dims_of(indices)
    rank, index_rank = len(shape), len(index_shape)
    numbers = stablehlo.GatherDimensionNumbers.get(
        offset_dims=list(range(axis)) + list(range(axis + index_rank, rank + index_rank - 1)),
        collapsed_slice_dims=[axis],
        operand_batching_dims=[],
        start_indices_batching_dims=[],
        start_index_map=[axis],
        index_vector_dim=index_rank,
    )
    slice_sizes = list(shape)
    slice_sizes[axis] = 1
    result_shape = list(shape[:axis]) + list(index_shape) + list(shape[axis + 1 :])
    result_type = emit.tensor_type(result_shape, emit.dtype_of(value))
    if is_static(slice_sizes):
        result = stablehlo.GatherOp(value, indices, numbers, slice_sizes, results=[result_type]).result
    else:
        result = stablehlo.DynamicGatherOp(
            value, indices, emit.shape_tensor(slice_sizes), numbers, results=[result_type]
        ).result
    return emit.record(result, result_shape)


def _take_constant(value: ir.Value, indices: np.ndarray, axis: int) -> ir.Value:
    """``numpy.take`` with compile-time in-range indices: a slice when they form a range."""
    indices = np.asarray(indices, dtype=np.int64)
    flat = indices.reshape(-1)
    shape = emit.static_shape_of(value)
    if indices.ndim <= 1 and flat.size > 0 and np.array_equal(flat, np.arange(flat[0], flat[0] + flat.size)):
        starts = [0] * len(shape)
        limits = list(shape)
        starts[axis], limits[axis] = int(flat[0]), int(flat[0]) + flat.size
        sliced = stablehlo.SliceOp(value, starts, limits, [1] * len(shape)).result
        if indices.ndim == 0:
            return emit.reshape(sliced, [d for i, d in enumerate(shape) if i != axis])
        return sliced
    return _take(value, emit.constant(indices, DataType.INT64), axis)


def _element_coordinates(indices: ir.Value, axis: int) -> ir.Value:
    """Full int64 coordinates ``[..., r]`` for GatherElements/ScatterElements-style indexing.

    Coordinate ``d`` of entry ``(i0, ..., i_{r-1})`` is ``i_d`` for ``d != axis`` and
    ``indices[i0, ..., i_{r-1}]`` for ``d == axis``.
    """
    shape = list(emit.dims_of(indices))
    columns = []
    for dim in range(len(shape)):
        if dim == axis:
            columns.append(emit.reshape(emit.convert(indices, DataType.INT64), shape + [1]))
        else:
            columns.append(emit.iota(shape + [1], dim, DataType.INT64))
    if len(columns) == 1:
        return columns[0]
    return emit.record(stablehlo.ConcatenateOp(columns, len(shape)).result, shape + [len(shape)])


def _gather_points(value: ir.Value, points: ir.Value) -> ir.Value:
    """Gathers single elements: ``points`` is ``[..., r]`` full coordinates into ``value``.

    Slices are 1x...x1, so this is a plain stablehlo.gather even when dims are symbolic.
    """
    shape = emit.dims_of(value)
    point_shape = emit.dims_of(points)
    rank = len(shape)
    numbers = stablehlo.GatherDimensionNumbers.get(
        offset_dims=[],
        collapsed_slice_dims=list(range(rank)),
        operand_batching_dims=[],
        start_indices_batching_dims=[],
        start_index_map=list(range(rank)),
        index_vector_dim=len(point_shape) - 1,
    )
    result_type = emit.tensor_type(point_shape[:-1], emit.dtype_of(value))
    result = stablehlo.GatherOp(value, points, numbers, [1] * rank, results=[result_type]).result
    return emit.record(result, point_shape[:-1])


_REDUCTIONS = ("none", "add", "mul", "max", "min")


def _combiner(reduction: str, dtype: DataType) -> type | None:
    """The stablehlo op combining old and new values under a scatter ``reduction``."""
    if dtype == DataType.BOOL:
        table = {"add": stablehlo.OrOp, "mul": stablehlo.AndOp, "max": stablehlo.OrOp, "min": stablehlo.AndOp}
    else:
        table = {"add": stablehlo.AddOp, "mul": stablehlo.MulOp, "max": stablehlo.MaxOp, "min": stablehlo.MinOp}
    return table.get(reduction)


def _scatter(
    data: ir.Value,
    indices: ir.Value,
    updates: ir.Value,
    numbers: ir.Attribute,
    reduction: str,
) -> ir.Value:
    """stablehlo.scatter whose body replaces (``none``) or combines by ``reduction``."""
    dtype = emit.dtype_of(data)
    op = stablehlo.ScatterOp([data.type], [data], indices, [updates], numbers)
    scalar_type = emit.tensor_type((), dtype)
    block = op.update_computation.blocks.append(scalar_type, scalar_type)
    with ir.InsertionPoint(block):
        combine = _combiner(reduction, dtype)
        old, new = block.arguments[0], block.arguments[1]
        stablehlo.ReturnOp([new if combine is None else combine(old, new).result])
    return op.results[0]


def _reduction(ctx: LoweringContext, node: OnnxNode) -> str:
    reduction = node.attr_str("reduction", "none")
    accepted = _REDUCTIONS if node.since_version >= 18 else _REDUCTIONS[:3]
    if reduction not in accepted:
        raise ctx.unsupported_attribute("reduction", reduction, ", ".join(accepted))
    return reduction


# Slice -----------------------------------------------------------------------------------------


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
    shape = list(emit.dims_of(data))
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
                runtime[(slot, axis)] = stablehlo.MinOp(emit.dim_value(int(raw)), emit.dim_value(dim)).result
        begin[axis], limit[axis], stride[axis] = first, stop, step
        if first is None or stop is None:
            out[axis] = None
        elif isinstance(stop, int) and isinstance(first, int):
            out[axis] = max(0, -(-(stop - first) // step))
        else:
            out[axis] = ceil_div(stop - first, step)

    def bounds(values: list, slot: int) -> ir.Value:
        if all(v is not None for v in values) and not any(key[0] == slot for key in runtime):
            return emit.shape_tensor(values)
        parts = [
            emit.reshape(runtime[(slot, axis)] if v is None else emit.dim_value(v), (1,))
            for axis, v in enumerate(values)
        ]
        if len(parts) == 1:
            return parts[0]
        return stablehlo.ConcatenateOp(parts, ir.IntegerAttr.get(ir.IntegerType.get_signless(64), 0)).result

    if mirrored:
        data = emit.record(stablehlo.ReverseOp(data, emit.i64_array(sorted(mirrored))).result, shape)
    result_type = emit.tensor_type(out, emit.dtype_of(data))
    op = stablehlo.RealDynamicSliceOp(
        result_type, data, bounds(begin, 0), bounds(limit, 1), emit.shape_tensor(stride)
    )
    if any(d is None for d in out):
        return op.result  # the importer names the unknown dims
    return emit.record(op.result, out)


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
    shape = emit.static_shape_of(data)
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
        if count == 0:
            first, last = 0, 0
        else:
            last = first + (count - 1) * step + 1
        begin[axis], limit[axis], stride[axis] = first, last, step
    if reverse:
        data = stablehlo.ReverseOp(data, emit.i64_array(sorted(reverse))).result
    if begin == [0] * rank and limit == list(shape) and stride == [1] * rank:
        return data
    return stablehlo.SliceOp(data, begin, limit, stride).result


# Gather family ---------------------------------------------------------------------------------


@lowering("Gather", since=1)
@lowering("Gather", since=11)  # 11 allowed negative indices and a negative axis
@lowering("Gather", since=13)  # 13 added bfloat16
def lower_gather(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value]:
    """Lowers Gather (``numpy.take``) to stablehlo.gather.

    Compile-time indices are normalized with numpy; a scalar or contiguous run of them becomes
    stablehlo.slice (plus a reshape for a scalar).

    Spec: Gather-1/11/13.
    Shapes: data [d0, ..., dr-1] static; indices any static shape, int32/int64; result
        data.shape[:axis] + indices.shape + data.shape[axis+1:].
    Dtypes: any data type.
    Raises: ShapeError if compile-time indices are out of range.
    """
    data = ctx.input(0)
    shape = emit.dims_of(data)
    axis = ctx.axis(node.attr_int("axis"), len(shape))
    dim = shape[axis]
    if not is_static(shape):
        indices = ctx.input(1)
        if isinstance(dim, int):
            return [_take(data, _normalize_indices(indices, np.asarray(dim), ctx, f"indices for axis {axis}"), axis)]
        normalized = _normalize_symbolic(indices, [dim], vector=False, ctx=ctx, what=f"indices for axis {axis}")
        return [_take(data, normalized, axis)]
    if ctx.is_constant_input(1):
        indices = np.asarray(ctx.constant_input(1)).astype(np.int64)
        if np.any((indices < -dim) | (indices >= dim)):
            raise ctx.error(f"indices {indices.tolist()} are out of range for axis {axis} of size {dim}", ShapeError)
        return [_take_constant(data, np.where(indices < 0, indices + dim, indices), axis)]
    indices = _normalize_indices(ctx.input(1), np.asarray(dim), ctx, f"indices for axis {axis}")
    return [_take(data, indices, axis)]


@lowering("GatherElements", since=11)
@lowering("GatherElements", since=13)  # 13 added bfloat16
def lower_gather_elements(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value]:
    """Lowers GatherElements (``numpy.take_along_axis``) to a pointwise stablehlo.gather.

    Spec: GatherElements-11/13.
    Shapes: data and indices the same rank, symbolic dims allowed (the gather's slices are
        1x...x1); the result has the indices' shape.
    Dtypes: any data type; indices int32/int64 (negative counts from the end).
    """
    data = ctx.input(0)
    shape = emit.dims_of(data)
    axis = ctx.axis(node.attr_int("axis"), len(shape))
    indices = _normalize_symbolic(ctx.input(1), [shape[axis]], vector=False, ctx=ctx, what=f"indices for axis {axis}")
    return [_gather_points(data, _element_coordinates(indices, axis))]


@lowering("GatherND", since=11)
@lowering("GatherND", since=12)  # 12 added batch_dims
@lowering("GatherND", since=13)  # 13 added bfloat16
def lower_gather_nd(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value]:
    """Lowers GatherND to stablehlo.gather, with ``batch_dims`` as gather batching dims.

    Spec: GatherND-11/12/13.
    Shapes: data rank r, indices rank q with last dim k <= r - b (b = batch_dims, the leading
        dims both share); result indices.shape[:-1] + data.shape[b + k:]. Dims may be symbolic;
        a symbolic k is read from the ranks, as the result has rank q - 1 + r - b - k (the
        output's rank from the model's value info).
    Dtypes: any data type; indices int64 (negative counts from the end).
    Raises: ShapeError if k or batch_dims do not fit the ranks, or k is symbolic and the output
        rank is unknown.
    """
    data = ctx.input(0)
    shape = emit.dims_of(data)
    index_shape = emit.dims_of(ctx.input(1))
    batch = node.attr_int("batch_dims", 0) if node.since_version >= 12 else 0
    rank, index_rank = len(shape), len(index_shape)
    depth = index_shape[-1] if index_rank else 0
    if not isinstance(depth, int):
        depth = _gather_nd_depth(ctx, node, rank, index_rank, batch)
    if index_rank < 1 or not 0 <= batch < min(rank, index_rank) or batch + depth > rank:
        raise ctx.error(
            f"indices of shape {list(map(str, index_shape))} with batch_dims={batch} do not fit data of "
            f"shape {list(map(str, shape))}",
            ShapeError,
        )
    if is_static(index_shape[:batch]) and is_static(shape[:batch]) and tuple(index_shape[:batch]) != tuple(shape[:batch]):
        raise ctx.error(
            f"batch dims {list(index_shape[:batch])} differ from the data's {list(shape[:batch])}", ShapeError
        )
    indices = _normalize_symbolic(ctx.input(1), shape[batch : batch + depth], vector=True, ctx=ctx)
    numbers = stablehlo.GatherDimensionNumbers.get(
        offset_dims=list(range(index_rank - 1, index_rank - 1 + rank - batch - depth)),
        collapsed_slice_dims=list(range(batch, batch + depth)),
        operand_batching_dims=list(range(batch)),
        start_indices_batching_dims=list(range(batch)),
        start_index_map=list(range(batch, batch + depth)),
        index_vector_dim=index_rank - 1,
    )
    slice_sizes = [1] * (batch + depth) + list(shape[batch + depth :])
    result_shape = list(index_shape[:-1]) + list(shape[batch + depth :])
    result_type = emit.tensor_type(result_shape, emit.dtype_of(data))
    if is_static(slice_sizes):
        result = stablehlo.GatherOp(data, indices, numbers, slice_sizes, results=[result_type]).result
    else:
        result = stablehlo.DynamicGatherOp(
            data, indices, emit.shape_tensor(slice_sizes), numbers, results=[result_type]
        ).result
    return [emit.record(result, result_shape)]


def _gather_nd_depth(ctx: LoweringContext, node: OnnxNode, rank: int, index_rank: int, batch: int) -> int:
    """GatherND's index depth k when the last dim of indices is symbolic: the result has rank
    ``q - 1 + r - b - k``, so k follows from the output's rank when the model states it.

    Raises:
        ShapeError: the output's rank is unknown, or gives a k outside ``[1, r - b]``.
    """
    output = node.ir_node.outputs[0]
    out_rank = len(output.shape) if output.shape is not None else None
    depth = None if out_rank is None else index_rank - 1 + rank - batch - out_rank
    if depth is None or not 1 <= depth <= rank - batch:
        raise ctx.error(
            f"the last dim of indices is symbolic and the ranks do not tell it (output rank {out_rank})",
            ShapeError,
        )
    return depth


# Scatter family --------------------------------------------------------------------------------


@lowering("ScatterND", since=11)
@lowering("ScatterND", since=13)  # 13 added bfloat16
@lowering("ScatterND", since=16)  # 16 added reduction none/add/mul
@lowering("ScatterND", since=18)  # 18 added reduction max/min
def lower_scatter_nd(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value]:
    """Lowers ScatterND to stablehlo.scatter.

    Spec: ScatterND-11/13/16/18.
    Shapes: data rank r; indices rank q, last dim k <= r; updates
        indices.shape[:-1] + data.shape[k:]; dims may be symbolic (a symbolic k is
        q - 1 + r - rank(updates)).
    Dtypes: any data type; indices int64 (negative counts from the end).
    Deviations: with reduction=none, duplicate indices leave one of the updates (unspecified
        which), as the spec allows.
    Raises: UnsupportedAttributeError for an unknown reduction; ShapeError if the shapes do not
        fit.
    """
    data = ctx.input(0)
    shape = emit.dims_of(data)
    index_shape = emit.dims_of(ctx.input(1))
    update_shape = emit.dims_of(ctx.input(2))
    reduction = _reduction(ctx, node)
    rank, index_rank = len(shape), len(index_shape)
    depth = index_shape[-1] if index_rank else rank + 1
    if not isinstance(depth, int):
        # The ranks tell it: updates have rank q - 1 + r - k.
        depth = index_rank - 1 + rank - len(update_shape)
        if not 0 < depth <= rank:
            raise ctx.error("the last dim of indices is symbolic and the ranks do not tell it", ShapeError)
    if depth > rank or not _fits(update_shape, tuple(index_shape[:-1]) + tuple(shape[depth:])):
        raise ctx.error(
            f"updates of shape {list(update_shape)} and indices of shape {list(index_shape)} do not fit "
            f"data of shape {list(shape)}",
            ShapeError,
        )
    indices = _normalize_symbolic(ctx.input(1), shape[:depth], vector=True, ctx=ctx)
    numbers = stablehlo.ScatterDimensionNumbers.get(
        update_window_dims=list(range(index_rank - 1, index_rank - 1 + rank - depth)),
        inserted_window_dims=list(range(depth)),
        input_batching_dims=[],
        scatter_indices_batching_dims=[],
        scattered_dims_to_operand_dims=list(range(depth)),
        index_vector_dim=index_rank - 1,
    )
    return [_scatter(data, indices, ctx.input(2), numbers, reduction)]


@lowering("Scatter", since=9)
@lowering("Scatter", since=11)  # 11 allowed negative indices and axis; Scatter is deprecated
@lowering("ScatterElements", since=11)
@lowering("ScatterElements", since=13)  # 13 added bfloat16
@lowering("ScatterElements", since=16)  # 16 added reduction none/add/mul
@lowering("ScatterElements", since=18)  # 18 added reduction max/min
def lower_scatter_elements(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value]:
    """Lowers ScatterElements (and the deprecated Scatter) to a pointwise stablehlo.scatter.

    Spec: Scatter-9/11, ScatterElements-11/13/16/18.
    Shapes: data rank r; indices and updates the same shape, rank r; symbolic dims allowed.
    Dtypes: any data type; indices int32/int64 (negative counts from the end).
    Deviations: with reduction=none, duplicate indices leave one of the updates (unspecified
        which), as the spec allows.
    Raises: UnsupportedAttributeError for an unknown reduction; ShapeError if indices and
        updates differ in shape.
    """
    data = ctx.input(0)
    shape = emit.dims_of(data)
    index_shape = emit.dims_of(ctx.input(1))
    if not _fits(emit.dims_of(ctx.input(2)), index_shape) or len(index_shape) != len(shape):
        raise ctx.error("indices and updates must have the same shape, of the data's rank", ShapeError)
    axis = ctx.axis(node.attr_int("axis"), len(shape))
    reduction = _reduction(ctx, node) if node.op_type == "ScatterElements" else "none"
    indices = _normalize_symbolic(ctx.input(1), [shape[axis]], vector=False, ctx=ctx, what=f"indices for axis {axis}")
    points = _element_coordinates(indices, axis)
    rank = len(shape)
    numbers = stablehlo.ScatterDimensionNumbers.get(
        update_window_dims=[],
        inserted_window_dims=list(range(rank)),
        input_batching_dims=[],
        scatter_indices_batching_dims=[],
        scattered_dims_to_operand_dims=list(range(rank)),
        index_vector_dim=rank,
    )
    return [_scatter(data, points, ctx.input(2), numbers, reduction)]


# Pad -------------------------------------------------------------------------------------------


@lowering("Pad", since=2)
def lower_pad_attrs(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value]:
    """Lowers Pad-2 (pads and value as attributes); see :func:`lower_pad`.

    Spec: Pad-2.
    """
    pads = node.attr_ints("pads")
    if pads is None:
        raise ctx.error("attribute pads is required", ShapeError)
    data = ctx.input(0)
    return [_pad(ctx, node, data, pads, None, lambda: emit.splat(node.attr_float("value", 0.0), emit.dtype_of(data)))]


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
    dtype = emit.dtype_of(data)

    def padding_value() -> ir.Value:
        if ctx.has_input(2) and ctx.is_constant_input(2):
            return emit.constant(np.asarray(ctx.constant_input(2)).reshape(()), dtype)
        if ctx.has_input(2):
            return emit.reshape(ctx.input(2), [])
        return emit.splat(0, dtype)

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
    shape = emit.dims_of(data)
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
        padded = stablehlo.PadOp(data, padding_value(), low, high, [0] * rank).result
        return emit.record(padded, [d + lo + hi for d, lo, hi in zip(shape, low, high)])
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
            if is_static(emit.dims_of(result)):
                result = _take_constant(result, source, axis)
            else:
                result = _take(result, emit.constant(source, DataType.INT64), axis)
        else:
            result = _take(result, _pad_source_symbolic(dim, low[axis], high[axis], mode), axis)
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
            return emit.splat(value, i64, shape)
        return emit.broadcast_to(value, shape, dims=())

    positions = emit.iota(shape, 0, i64)
    if low:
        positions = stablehlo.SubtractOp(positions, scalar(low)).result
    n = emit.dim_value(dim)
    if mode == "edge":
        last = stablehlo.SubtractOp(n, emit.constant(np.array(1, np.int64))).result
        return stablehlo.ClampOp(scalar(0), positions, scalar(last)).result

    def positive_rem(value: ir.Value, divisor: ir.Value) -> ir.Value:
        wide = scalar(divisor)
        first = stablehlo.RemOp(value, wide).result
        return stablehlo.RemOp(stablehlo.AddOp(first, wide).result, wide).result

    if mode == "wrap":
        return positive_rem(positions, n)
    one = emit.constant(np.array(1, np.int64))
    period = stablehlo.MulOp(stablehlo.SubtractOp(n, one).result, emit.constant(np.array(2, np.int64))).result
    period = stablehlo.MaxOp(period, one).result
    folded = positive_rem(positions, period)
    inside = emit.compare(folded, scalar(n), "LT")
    return stablehlo.SelectOp(inside, folded, stablehlo.SubtractOp(scalar(period), folded).result).result


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


# Trilu, OneHot, CumSum, ReverseSequence --------------------------------------------------------


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
    shape = emit.dims_of(data)
    if len(shape) < 2:
        raise ctx.error(f"expects rank >= 2, got shape {[str(d) for d in shape]}", ShapeError)
    rows, cols = shape[-2], shape[-1]
    plane = (rows, cols)
    offset = stablehlo.SubtractOp(emit.iota(plane, 1, DataType.INT64), emit.iota(plane, 0, DataType.INT64)).result
    if ctx.has_input(1) and ctx.is_constant_input(1):
        k = emit.splat(ctx.constant_int(1, "k"), DataType.INT64, (rows, cols))
    elif ctx.has_input(1):
        k = emit.broadcast_to(emit.reshape(emit.convert(ctx.input(1), DataType.INT64), []), (rows, cols))
    else:
        k = emit.splat(0, DataType.INT64, (rows, cols))
    keep = emit.compare(offset, k, "GE" if node.attr_int("upper") else "LE")
    keep = emit.broadcast_to(keep, shape, dims=[len(shape) - 2, len(shape) - 1])
    zeros = emit.splat(0, emit.dtype_of(data), shape)
    return [stablehlo.SelectOp(keep, data, zeros).result]


@lowering("OneHot", since=9)
@lowering("OneHot", since=11)  # 11 allowed negative indices and a negative axis
@lowering("OneHot", since=28)  # 28 widened types
def lower_one_hot(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value]:
    """Lowers OneHot to compare(indices, iota) + select(on, off).

    Spec: OneHot-9/11/28.
    Shapes: indices rank r, symbolic dims allowed; depth a scalar known at compile time; values [2] (off, on),
        may be computed at run time; result rank r + 1 with depth inserted at ``axis``.
    Dtypes: indices any numeric type (float indices match only integral values); depth any
        numeric type; values any.
    Deviations: indices outside [-depth, depth) give an all-off row, as the spec says.
    Raises: NonConstantInputError if depth is computed at run time.
    """
    indices = ctx.input(0)
    index_shape = list(emit.dims_of(indices))
    depth = int(np.asarray(ctx.constant_input(1)).reshape(-1)[0])
    if depth <= 0:
        raise ctx.error(f"depth must be positive, got {depth}", ShapeError)
    axis = node.attr_int("axis")
    out_rank = len(index_shape) + 1
    if not -out_rank <= axis < out_rank:
        raise ctx.error(f"axis {axis} is out of range for rank {out_rank}", ShapeError)
    axis = axis + out_rank if axis < 0 else axis
    result_shape = index_shape[:axis] + [depth] + index_shape[axis:]
    # Float indices are compared as floats, as onnxruntime and onnx.reference do: 1.5 hits nothing.
    index_dtype = emit.dtype_of(indices)
    if not dtypes.is_float(index_dtype):
        index_dtype = DataType.INT64
        indices = emit.convert(indices, index_dtype)
    indices = _normalize_indices(indices, np.asarray(depth))
    spread = emit.broadcast_to(indices, result_shape, dims=[d for d in range(out_rank) if d != axis])
    positions = emit.iota(result_shape, axis, index_dtype)
    hot = emit.compare(spread, positions, "EQ")
    values = ctx.input(2)
    off, on = (
        emit.broadcast_to(emit.reshape(_slice_axis0(values, i), []), result_shape) for i in (0, 1)
    )
    return [stablehlo.SelectOp(hot, on, off).result]


def _slice_axis0(value: ir.Value, index: int) -> ir.Value:
    return stablehlo.SliceOp(value, [index], [index + 1], [1]).result


@lowering("CumSum", since=11)
@lowering("CumSum", since=14)  # 14 added bfloat16 and float16
def lower_cumsum(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value]:
    """Lowers CumSum to a log-step scan: ``x += shift(x, s)`` for s = 1, 2, 4, ... < n.

    Each step is a stablehlo.pad (shift by ``s`` along the axis, zeros in) and a
    stablehlo.add, so an axis of length n takes ceil(log2 n) steps (O(n log n) adds rather
    than the O(n**2) of a full-length reduce_window). ``exclusive`` shifts the input by one
    first; ``reverse`` reverses the axis before and after.

    A symbolic length n along the axis makes the steps a stablehlo.while (``s`` doubling while
    ``s < n``), each shift a gather of ``x[i - s]`` masked to zero where ``i < s``; symbolic dims
    on other axes keep the static steps.

    Spec: CumSum-11/14.
    Shapes: x any, symbolic dims allowed; axis an int32/int64 scalar known at compile time.
    Dtypes: f16, bf16, f32, f64, i32, i64, u32, u64.
    Deviations: float sums are associated pairwise, not left to right (differences within
        rounding).
    Raises: NonConstantInputError if axis is computed at run time.
    """
    return [cumulative_scan(ctx, node, stablehlo.AddOp, 0)]


def cumulative_scan(ctx: LoweringContext, node: OnnxNode, combine: type, identity: int) -> ir.Value:
    """CumSum/CumProd: the log-step scan ``x = combine(x, shift(x, s))`` for s = 1, 2, 4, ...

    Reads the node's axis input and its ``exclusive``/``reverse`` attributes; ``identity`` (0 for
    sums, 1 for products) fills the shifted-in positions. A symbolic length along the axis
    makes the steps a stablehlo.while (see :func:`_scan_symbolic`).
    """
    x = ctx.input(0)
    shape = emit.dims_of(x)
    axis = ctx.axis(ctx.constant_int(1, "axis"), len(shape))
    reverse = bool(node.attr_int("reverse"))
    if reverse:
        x = emit.record(stablehlo.ReverseOp(x, emit.i64_array([axis])).result, shape)
    if node.attr_int("exclusive"):
        x = _shift(x, axis, 1, identity)
    if isinstance(shape[axis], int):
        step = 1
        while step < shape[axis]:
            x = combine(x, _shift(x, axis, step, identity)).result
            step *= 2
    else:
        x = _scan_symbolic(x, axis, combine, identity)
    if reverse:
        x = emit.record(stablehlo.ReverseOp(x, emit.i64_array([axis])).result, shape)
    return x


def _scan_symbolic(x: ir.Value, axis: int, combine: type, identity: int) -> ir.Value:
    """The inclusive scan along an axis of symbolic length n: log-steps in a stablehlo.while.

    Carries ``(s, x)`` from ``(1, x)``; each step combines ``x`` with ``x[i - s]`` (a gather at
    ``max(i - s, 0)``, ``identity`` where ``i < s``) and doubles ``s``, while ``s < n``.
    """
    shape = emit.dims_of(x)
    length = shape[axis]
    i64 = DataType.INT64
    along = emit.iota([length], 0, i64)  # i, for the gather's indices
    positions = emit.iota(shape, axis, i64)  # i at every element, for the mask
    limit = emit.dim_value(length)

    def below(args: list[ir.Value]) -> ir.Value:
        return emit.compare(args[0], limit, "LT")

    def step(args: list[ir.Value]) -> list[ir.Value]:
        s, acc = args
        source = stablehlo.MaxOp(
            stablehlo.SubtractOp(along, emit.broadcast_to(s, [length], dims=())).result, emit.splat(0, i64, [length])
        ).result
        moved = _take(acc, source, axis)
        keep = emit.compare(positions, emit.broadcast_to(s, shape, dims=()), "GE")
        shifted = stablehlo.SelectOp(keep, moved, emit.splat(identity, emit.dtype_of(acc), shape)).result
        doubled = stablehlo.MulOp(s, emit.splat(2, i64)).result
        return [doubled, combine(acc, shifted).result]

    return while_loop([emit.splat(1, i64), x], below, step)[1]


def _shift(value: ir.Value, axis: int, amount: int, fill: int) -> ir.Value:
    """Moves entries ``amount`` places up ``axis``, ``fill`` in: ``y[i] = x[i - amount]``."""
    rank = emit.rank_of(value)
    low, high = [0] * rank, [0] * rank
    low[axis], high[axis] = amount, -amount
    padding = emit.splat(fill, emit.dtype_of(value))
    return emit.record(stablehlo.PadOp(value, padding, low, high, [0] * rank).result, emit.dims_of(value))


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
    shape = emit.dims_of(x)
    rank = len(shape)
    batch_axis = ctx.axis(node.attr_int("batch_axis"), rank)
    time_axis = ctx.axis(node.attr_int("time_axis"), rank)
    if {batch_axis, time_axis} != {0, 1}:
        raise ctx.error(f"batch_axis {batch_axis} and time_axis {time_axis} must be 0 and 1", ShapeError)
    if batch_axis == 1:
        x = emit.transpose(x, [1, 0] + list(range(2, rank)))
    batch, time = emit.dims_of(x)[:2]
    times = emit.iota((batch, time), 1, DataType.INT64)
    lengths = emit.broadcast_to(emit.convert(ctx.input(1), DataType.INT64), (batch, time), dims=[0])
    reversed_times = stablehlo.SubtractOp(
        stablehlo.SubtractOp(lengths, emit.splat(1, DataType.INT64, (batch, time))).result, times
    ).result
    source = stablehlo.SelectOp(emit.compare(times, lengths, "LT"), reversed_times, times).result
    batches = emit.iota((batch, time, 1), 0, DataType.INT64)
    points = stablehlo.ConcatenateOp([batches, emit.reshape(source, (batch, time, 1))], 2).result
    points = emit.record(points, (batch, time, 2))
    rest = list(emit.dims_of(x)[2:])
    numbers = stablehlo.GatherDimensionNumbers.get(
        offset_dims=list(range(2, rank)),
        collapsed_slice_dims=[0, 1],
        operand_batching_dims=[],
        start_indices_batching_dims=[],
        start_index_map=[0, 1],
        index_vector_dim=2,
    )
    result_type = emit.tensor_type([batch, time] + rest, emit.dtype_of(x))
    if is_static(rest):
        result = stablehlo.GatherOp(x, points, numbers, [1, 1] + rest, results=[result_type]).result
    else:
        sizes = emit.shape_tensor([1, 1] + rest)
        result = stablehlo.DynamicGatherOp(x, points, sizes, numbers, results=[result_type]).result
    result = emit.record(result, [batch, time] + rest)
    if batch_axis == 1:
        result = emit.transpose(result, [1, 0] + list(range(2, rank)))
    return [result]


# Data-dependent output sizes -------------------------------------------------------------------


def _data_dependent(ctx: LoweringContext, index: int, what: str) -> NonConstantInputError:
    return ctx.error(
        f"the output size depends on the values of input {index} ('{ctx.node.input_names[index]}'), "
        f"{what}; one static module needs that input known at compile time",
        DataDependentShapeError,
    )


@lowering("Compress", since=9)
@lowering("Compress", since=11)  # 11 allowed a negative axis
@lowering("Compress", since=28)  # 28 widened types
def lower_compress(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value]:
    """Lowers Compress with a compile-time condition to a gather of the selected positions.

    Spec: Compress-9/11/28.
    Shapes: input static; condition bool [n] known at compile time (n may be shorter than the
        axis); without axis the input is flattened first.
    Dtypes: any input type.
    Raises: NonConstantInputError if condition is computed at run time (the output size would
        depend on it).
    """
    if not ctx.is_constant_input(1):
        raise _data_dependent(ctx, 1, "the condition")
    condition = np.asarray(ctx.constant_input(1)).astype(bool).reshape(-1)
    data = ctx.input(0)
    shape = emit.static_shape_of(data)
    if node.attr("axis") is None:
        data = emit.reshape(data, [int(np.prod(shape, dtype=np.int64))])
        axis = 0
    else:
        axis = ctx.axis(node.attr_int("axis"), len(shape))
    size = emit.static_shape_of(data)[axis]
    if condition.size > size:
        raise ctx.error(f"condition has {condition.size} entries, the axis only {size}", ShapeError)
    return [_take_constant(data, np.nonzero(condition)[0].astype(np.int64), axis)]


@lowering("NonZero", since=9)
@lowering("NonZero", since=13)  # 13 added bfloat16
def lower_non_zero(ctx: LoweringContext, node: OnnxNode) -> list[np.ndarray]:
    """Computes NonZero at compile time; a run-time input is rejected.

    Spec: NonZero-9/13.
    Shapes: x known at compile time; result int64 [rank, count].
    Raises: NonConstantInputError if x is computed at run time.
    """
    if not ctx.is_constant_input(0):
        raise _data_dependent(ctx, 0, "the nonzero count")
    x = np.asarray(ctx.constant_input(0))
    return [np.asarray(np.nonzero(x), dtype=np.int64).reshape(x.ndim, -1)]


@lowering("Unique", since=11)
@lowering("Unique", since=28)  # 28 widened types
def lower_unique(ctx: LoweringContext, node: OnnxNode) -> list[np.ndarray]:
    """Computes Unique at compile time; a run-time input is rejected.

    Spec: Unique-11/28.
    Shapes: x known at compile time; results y, indices, inverse_indices, counts (int64).
    Raises: NonConstantInputError if x is computed at run time.
    """
    if not ctx.is_constant_input(0):
        raise _data_dependent(ctx, 0, "the number of distinct values")
    x = np.asarray(ctx.constant_input(0))
    axis = node.attr("axis")
    if axis is not None:
        axis = ctx.axis(int(axis), x.ndim)
    values, first, inverse, counts = np.unique(
        x, return_index=True, return_inverse=True, return_counts=True, axis=axis
    )
    inverse = inverse.reshape(-1)
    if not node.attr_int("sorted"):
        order = np.argsort(first, kind="stable")
        rank = np.empty_like(order)
        rank[order] = np.arange(order.size)
        first, counts, inverse = first[order], counts[order], rank[inverse]
        values = np.take(x.reshape(-1) if axis is None else x, first, axis=0 if axis is None else axis)
    as_int64 = [np.asarray(a, dtype=np.int64) for a in (first, inverse, counts)]
    return [values, *as_int64]
