"""Lowering rules: slicing, gathering, scattering, padding and index-driven ops.

::

    Slice(x, starts, ends, axes, steps) -> stablehlo.reverse (negative steps) + stablehlo.slice
    Gather(x, i)                        -> stablehlo.gather (a constant scalar index: slice + reshape)
    GatherND(x, i), GatherElements(x, i)-> stablehlo.gather
    ScatterND, ScatterElements, Scatter -> stablehlo.scatter with a reduction body
    Pad(x, pads)                        -> stablehlo.pad (constant) or stablehlo.gather with a
                                           compile-time index map (reflect, edge, wrap)
    Trilu(x, k)                         -> stablehlo.iota + compare + select
    OneHot(i, depth, values)            -> stablehlo.iota + compare + select
    CumSum(x, axis)                     -> log2(n) steps of stablehlo.pad (shift) + stablehlo.add
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
from onnx_stablehlo.frontend.registry import lowering
from onnx_stablehlo.frontend.shapes import Dim, ceil_div, is_static


def _constant_ints(ctx: LoweringContext, index: int) -> list[int]:
    """A constant int input (starts, axes, pads ...) as Python ints, flattened."""
    return [int(v) for v in np.asarray(ctx.constant_input(index)).reshape(-1)]




# Shared builders -------------------------------------------------------------------------------


def _normalize_indices(indices: ir.Value, bounds: np.ndarray) -> ir.Value:
    """``i + bound where i < 0`` for run-time indices; ``bounds`` broadcasts to their shape."""
    shape = emit.dims_of(indices)
    dtype = emit.dtype_of(indices)
    if dtypes.is_unsigned_int(dtype):
        return indices
    bounds = np.asarray(bounds)
    if bounds.size == 1:
        bound = emit.splat(bounds.reshape(()).item(), dtype, shape)
    else:
        bound = emit.constant(np.broadcast_to(bounds, shape), dtype)
    negative = emit.compare(indices, emit.splat(0, dtype, shape), "LT")
    return stablehlo.SelectOp(negative, stablehlo.AddOp(indices, bound).result, indices).result


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
    shape = list(emit.static_shape_of(indices))
    column_type = emit.tensor_type(shape + [1], DataType.INT64)
    columns = []
    for dim in range(len(shape)):
        if dim == axis:
            columns.append(emit.reshape(emit.convert(indices, DataType.INT64), shape + [1]))
        else:
            columns.append(stablehlo.IotaOp(column_type, dim).result)
    if len(columns) == 1:
        return columns[0]
    return stablehlo.ConcatenateOp(columns, len(shape)).result


def _gather_points(value: ir.Value, points: ir.Value) -> ir.Value:
    """Gathers single elements: ``points`` is ``[..., r]`` full coordinates into ``value``."""
    shape = emit.static_shape_of(value)
    point_shape = emit.static_shape_of(points)
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
    return stablehlo.GatherOp(value, points, numbers, [1] * rank, results=[result_type]).result


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
    Shapes: data static; starts/ends clamped to the dims, negative counting from the end.
    Dtypes: any.
    Raises: ShapeError if the attribute lengths differ or an axis repeats.
    """
    starts = node.attr_ints("starts")
    ends = node.attr_ints("ends")
    if starts is None or ends is None:
        raise ctx.error("attributes starts and ends are required", ShapeError)
    axes = node.attr_ints("axes")
    return [_slice(ctx, ctx.input(0), starts, ends, axes, None)]


@lowering("Slice", since=10)
@lowering("Slice", since=11)  # 11 allowed negative axes
@lowering("Slice", since=13)  # 13 added bfloat16
def lower_slice(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value]:
    """Lowers Slice to stablehlo.slice, reversing axes with a negative step first.

    Spec: Slice-10/11/13.
    Shapes: data static; starts, ends, axes, steps int32/int64 [k] known at compile time
        (INT64_MAX / INT64_MIN mean "to the end"); omitted axes are [0, k), omitted steps 1.
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
    """Slice with symbolic dims or bounds, as stablehlo.real_dynamic_slice (positive steps).

    A symbolic bound is taken to lie within its dim (exporters slice position tables and the
    like by a sequence length); an int bound against a symbolic dim is clamped at run time, and
    the result dim is then unknown until the module is refined.
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
    for axis, start, end, step in zip(axes, starts, ends, steps):
        axis = ctx.axis(axis, rank)
        if step <= 0:
            raise ctx.error(f"step {step} with symbolic bounds is not supported (positive steps only)", ShapeError)
        dim = shape[axis]
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

    result_type = emit.tensor_type(out, emit.dtype_of(data))
    op = stablehlo.RealDynamicSliceOp(
        result_type, data, bounds(begin, 0), bounds(limit, 1), emit.shape_tensor(stride)
    )
    if any(d is None for d in out):
        return op.result  # the importer names the unknown dims
    return emit.record(op.result, out)


def _clamp_bound(bound: Dim, dim: Dim) -> Dim | None:
    """The bound clamped into [0, dim] as the spec says; ``None`` when only run time can tell."""
    if not isinstance(bound, int):
        return bound
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
            return [_take(data, _normalize_indices(indices, np.asarray(dim)), axis)]
        index_dtype = emit.dtype_of(indices)
        bound = emit.broadcast_to(emit.convert(emit.dim_value(dim), index_dtype), emit.dims_of(indices), dims=())
        negative = emit.compare(indices, emit.splat(0, index_dtype, emit.dims_of(indices)), "LT")
        normalized = stablehlo.SelectOp(negative, stablehlo.AddOp(indices, bound).result, indices).result
        return [_take(data, normalized, axis)]
    if ctx.is_constant_input(1):
        indices = np.asarray(ctx.constant_input(1)).astype(np.int64)
        if np.any((indices < -dim) | (indices >= dim)):
            raise ctx.error(f"indices {indices.tolist()} are out of range for axis {axis} of size {dim}", ShapeError)
        return [_take_constant(data, np.where(indices < 0, indices + dim, indices), axis)]
    indices = _normalize_indices(ctx.input(1), np.asarray(dim))
    return [_take(data, indices, axis)]


@lowering("GatherElements", since=11)
@lowering("GatherElements", since=13)  # 13 added bfloat16
def lower_gather_elements(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value]:
    """Lowers GatherElements (``numpy.take_along_axis``) to a pointwise stablehlo.gather.

    Spec: GatherElements-11/13.
    Shapes: data and indices static, same rank; the result has the indices' shape.
    Dtypes: any data type; indices int32/int64 (negative counts from the end).
    """
    data = ctx.input(0)
    shape = emit.static_shape_of(data)
    axis = ctx.axis(node.attr_int("axis"), len(shape))
    indices = _normalize_indices(ctx.input(1), np.asarray(shape[axis]))
    return [_gather_points(data, _element_coordinates(indices, axis))]


@lowering("GatherND", since=11)
@lowering("GatherND", since=12)  # 12 added batch_dims
@lowering("GatherND", since=13)  # 13 added bfloat16
def lower_gather_nd(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value]:
    """Lowers GatherND to stablehlo.gather, with ``batch_dims`` as gather batching dims.

    Spec: GatherND-11/12/13.
    Shapes: data rank r, indices rank q with last dim k <= r - b (b = batch_dims, the leading
        dims both share); result indices.shape[:-1] + data.shape[b + k:].
    Dtypes: any data type; indices int64 (negative counts from the end).
    Raises: ShapeError if k or batch_dims do not fit the ranks.
    """
    data = ctx.input(0)
    shape = emit.dims_of(data)
    index_shape = emit.dims_of(ctx.input(1))
    batch = node.attr_int("batch_dims", 0) if node.since_version >= 12 else 0
    rank, index_rank = len(shape), len(index_shape)
    depth = index_shape[-1] if index_rank else 0
    if index_rank < 1 or not 0 <= batch < min(rank, index_rank) or batch + depth > rank:
        raise ctx.error(
            f"indices of shape {list(index_shape)} with batch_dims={batch} do not fit data of shape {list(shape)}",
            ShapeError,
        )
    if not isinstance(depth, int):
        raise ctx.error("the last dim of indices must be static", ShapeError)
    if is_static(index_shape[:batch]) and is_static(shape[:batch]) and tuple(index_shape[:batch]) != tuple(shape[:batch]):
        raise ctx.error(
            f"batch dims {list(index_shape[:batch])} differ from the data's {list(shape[:batch])}", ShapeError
        )
    bounds = shape[batch : batch + depth]
    if is_static(bounds):
        indices = _normalize_indices(ctx.input(1), np.asarray(bounds, dtype=np.int64))
    else:
        raw = ctx.input(1)
        index_dtype = emit.dtype_of(raw)
        vector = emit.convert(emit.shape_tensor(bounds), index_dtype)
        bound = emit.broadcast_to(vector, index_shape, dims=[len(index_shape) - 1])
        negative = emit.compare(raw, emit.splat(0, index_dtype, index_shape), "LT")
        indices = stablehlo.SelectOp(negative, stablehlo.AddOp(raw, bound).result, raw).result
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


# Scatter family --------------------------------------------------------------------------------


@lowering("ScatterND", since=11)
@lowering("ScatterND", since=13)  # 13 added bfloat16
@lowering("ScatterND", since=16)  # 16 added reduction none/add/mul
@lowering("ScatterND", since=18)  # 18 added reduction max/min
def lower_scatter_nd(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value]:
    """Lowers ScatterND to stablehlo.scatter.

    Spec: ScatterND-11/13/16/18.
    Shapes: data rank r; indices rank q, last dim k <= r; updates
        indices.shape[:-1] + data.shape[k:].
    Dtypes: any data type; indices int64 (negative counts from the end).
    Deviations: with reduction=none, duplicate indices leave one of the updates (unspecified
        which), as the spec allows.
    Raises: UnsupportedAttributeError for an unknown reduction; ShapeError if the shapes do not
        fit.
    """
    data = ctx.input(0)
    shape = emit.static_shape_of(data)
    index_shape = emit.static_shape_of(ctx.input(1))
    update_shape = emit.static_shape_of(ctx.input(2))
    reduction = _reduction(ctx, node)
    rank, index_rank = len(shape), len(index_shape)
    depth = index_shape[-1] if index_rank else rank + 1
    expected = tuple(index_shape[:-1]) + tuple(shape[depth:])
    if depth > rank or tuple(update_shape) != expected:
        raise ctx.error(
            f"updates of shape {list(update_shape)} and indices of shape {list(index_shape)} do not fit "
            f"data of shape {list(shape)}",
            ShapeError,
        )
    indices = _normalize_indices(ctx.input(1), np.asarray(shape[:depth], dtype=np.int64))
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
    Shapes: data rank r; indices and updates the same shape, rank r.
    Dtypes: any data type; indices int32/int64 (negative counts from the end).
    Deviations: with reduction=none, duplicate indices leave one of the updates (unspecified
        which), as the spec allows.
    Raises: UnsupportedAttributeError for an unknown reduction; ShapeError if indices and
        updates differ in shape.
    """
    data = ctx.input(0)
    shape = emit.static_shape_of(data)
    index_shape = emit.static_shape_of(ctx.input(1))
    if tuple(emit.static_shape_of(ctx.input(2))) != tuple(index_shape) or len(index_shape) != len(shape):
        raise ctx.error("indices and updates must have the same shape, of the data's rank", ShapeError)
    axis = ctx.axis(node.attr_int("axis"), len(shape))
    reduction = _reduction(ctx, node) if node.op_type == "ScatterElements" else "none"
    indices = _normalize_indices(ctx.input(1), np.asarray(shape[axis]))
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
    with a compile-time index map (numpy.pad's definition of each mode).

    Spec: Pad-2/11/13/18/19/21/23/24/25.
    Shapes: data static, rank r; pads int64 [2 * len(axes)] known at compile time; axes
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
    if not is_static(shape):
        raise ctx.error(f"mode={mode} needs static shapes (got {[str(d) for d in shape]})", ShapeError)
    result = data
    for axis in range(rank):
        if low[axis] == 0 and high[axis] == 0:
            continue
        dim = shape[axis]
        if dim == 0:
            raise ctx.error(f"mode={mode} cannot pad axis {axis}, which is empty", ShapeError)
        positions = np.arange(-low[axis], dim + high[axis], dtype=np.int64)
        result = _take_constant(result, _pad_source(positions, dim, mode), axis)
    return result


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
    Shapes: data [..., N, M] static, rank >= 2; k an int64 scalar, may be computed at run time.
    Dtypes: any.
    Raises: ShapeError for rank < 2.
    """
    data = ctx.input(0)
    shape = emit.static_shape_of(data)
    if len(shape) < 2:
        raise ctx.error(f"expects rank >= 2, got shape {list(shape)}", ShapeError)
    rows, cols = shape[-2], shape[-1]
    plane = emit.tensor_type((rows, cols), DataType.INT64)
    offset = stablehlo.SubtractOp(stablehlo.IotaOp(plane, 1).result, stablehlo.IotaOp(plane, 0).result).result
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
    Shapes: indices static, rank r; depth a scalar known at compile time; values [2] (off, on),
        may be computed at run time; result rank r + 1 with depth inserted at ``axis``.
    Dtypes: indices any numeric type (float indices match only integral values); depth any
        numeric type; values any.
    Deviations: indices outside [-depth, depth) give an all-off row, as the spec says.
    Raises: NonConstantInputError if depth is computed at run time.
    """
    indices = ctx.input(0)
    index_shape = list(emit.static_shape_of(indices))
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
    positions = stablehlo.IotaOp(emit.tensor_type(result_shape, index_dtype), axis).result
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

    Spec: CumSum-11/14.
    Shapes: x static; axis an int32/int64 scalar known at compile time.
    Dtypes: f16, bf16, f32, f64, i32, i64, u32, u64.
    Deviations: float sums are associated pairwise, not left to right (differences within
        rounding).
    Raises: NonConstantInputError if axis is computed at run time.
    """
    x = ctx.input(0)
    shape = emit.static_shape_of(x)
    axis = ctx.axis(ctx.constant_int(1, "axis"), len(shape))
    reverse = bool(node.attr_int("reverse"))
    if reverse:
        x = stablehlo.ReverseOp(x, emit.i64_array([axis])).result
    if node.attr_int("exclusive"):
        x = _shift(x, axis, 1)
    step = 1
    while step < shape[axis]:
        x = stablehlo.AddOp(x, _shift(x, axis, step)).result
        step *= 2
    if reverse:
        x = stablehlo.ReverseOp(x, emit.i64_array([axis])).result
    return [x]


def _shift(value: ir.Value, axis: int, amount: int) -> ir.Value:
    """Moves entries ``amount`` places up ``axis``, zeros in: ``y[i] = x[i - amount]``."""
    rank = emit.rank_of(value)
    low, high = [0] * rank, [0] * rank
    low[axis], high[axis] = amount, -amount
    zero = emit.splat(0, emit.dtype_of(value))
    return stablehlo.PadOp(value, zero, low, high, [0] * rank).result


@lowering("ReverseSequence", since=10)
@lowering("ReverseSequence", since=28)  # 28 widened types
def lower_reverse_sequence(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value]:
    """Lowers ReverseSequence to a stablehlo.gather with per-batch reversed time indices.

    Entry ``[b, t]`` reads time ``lens[b] - 1 - t`` where ``t < lens[b]``, else ``t``.

    Spec: ReverseSequence-10/28.
    Shapes: x static, rank >= 2; sequence_lens int64 [batch], may be computed at run time.
    Dtypes: any x type.
    Raises: ShapeError if batch_axis and time_axis are not distinct axes among the first two.
    """
    x = ctx.input(0)
    shape = emit.static_shape_of(x)
    rank = len(shape)
    batch_axis = ctx.axis(node.attr_int("batch_axis"), rank)
    time_axis = ctx.axis(node.attr_int("time_axis"), rank)
    if {batch_axis, time_axis} != {0, 1}:
        raise ctx.error(f"batch_axis {batch_axis} and time_axis {time_axis} must be 0 and 1", ShapeError)
    if batch_axis == 1:
        x = emit.transpose(x, [1, 0] + list(range(2, rank)))
    batch, time = emit.static_shape_of(x)[:2]
    grid = emit.tensor_type((batch, time), DataType.INT64)
    times = stablehlo.IotaOp(grid, 1).result
    lengths = emit.broadcast_to(emit.convert(ctx.input(1), DataType.INT64), (batch, time), dims=[0])
    reversed_times = stablehlo.SubtractOp(
        stablehlo.SubtractOp(lengths, emit.splat(1, DataType.INT64, (batch, time))).result, times
    ).result
    source = stablehlo.SelectOp(emit.compare(times, lengths, "LT"), reversed_times, times).result
    batches = stablehlo.IotaOp(emit.tensor_type((batch, time, 1), DataType.INT64), 0).result
    points = stablehlo.ConcatenateOp([batches, emit.reshape(source, (batch, time, 1))], 2).result
    rest = list(emit.static_shape_of(x)[2:])
    numbers = stablehlo.GatherDimensionNumbers.get(
        offset_dims=list(range(2, rank)),
        collapsed_slice_dims=[0, 1],
        operand_batching_dims=[],
        start_indices_batching_dims=[],
        start_index_map=[0, 1],
        index_vector_dim=2,
    )
    result_type = emit.tensor_type([batch, time] + rest, emit.dtype_of(x))
    result = stablehlo.GatherOp(x, points, numbers, [1, 1] + rest, results=[result_type]).result
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
