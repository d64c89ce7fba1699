"""Lowering rules: gathers.

::

    Gather(x, i)                        -> stablehlo.gather (a constant scalar index: slice + reshape)
    GatherND(x, i), GatherElements(x, i)-> stablehlo.gather

Run-time indices are normalized (``i < 0 -> i + dim``) with compare + select; compile-time
indices are normalized with numpy. Out-of-range run-time indices (an error in the spec) are
clamped by stablehlo.gather, and reported by a run-time check where the caller asks for them.

Spec: onnx.ai/onnx/operators (each op's page).
"""

from __future__ import annotations

import numpy as np
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import stablehlo

from onnx_stablehlo.errors import ShapeError
from onnx_stablehlo.frontend import builders
from onnx_stablehlo.frontend.builders import indexing
from onnx_stablehlo.frontend.context import LoweringContext, OnnxNode
from onnx_stablehlo.frontend.registry import lowering
from onnx_stablehlo.frontend.shapes import is_static


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
    Raises: ShapeError if compile-time indices are out of range, or any index would be (an
        empty axis); InvalidInputError for a scalar data; AttributeShapeError for an axis out
        of range.
    """
    data = ctx.input(0)
    shape = builders.dims_of(data)
    if not shape:
        raise ctx.invalid_input(0, "is a scalar; Gather's data must have rank >= 1")
    axis = ctx.attr_axis("axis", len(shape))
    dim = shape[axis]
    index_shape = ctx.input_shape(1)
    if dim == 0 and all(isinstance(d, int) and d > 0 for d in index_shape):
        raise ctx.error(
            f"indices of shape {list(index_shape)} index axis {axis} of data {list(shape)}, which is empty",
            ShapeError,
        )
    if not is_static(shape):
        indices = ctx.input(1)
        if isinstance(dim, int):
            return [builders.take(data, indexing.normalize_indices(indices, np.asarray(dim), ctx, f"indices for axis {axis}"), axis)]
        normalized = indexing.normalize_symbolic(indices, [dim], vector=False, ctx=ctx, what=f"indices for axis {axis}")
        return [builders.take(data, normalized, axis)]
    if ctx.is_constant_input(1):
        indices = np.asarray(ctx.constant_input(1)).astype(np.int64)
        if np.any((indices < -dim) | (indices >= dim)):
            raise ctx.error(f"indices {indices.tolist()} are out of range for axis {axis} of size {dim}", ShapeError)
        return [builders.take(data, np.where(indices < 0, indices + dim, indices), axis)]
    indices = indexing.normalize_indices(ctx.input(1), np.asarray(dim), ctx, f"indices for axis {axis}")
    return [builders.take(data, indices, axis)]


def _check_gather_elements_shapes(ctx: LoweringContext, shape, index_shape, axis: int) -> None:
    """Data and indices of the same rank; static dims of indices within data's off the axis (as
    onnxruntime requires); no index into an empty axis.

    Raises:
        ShapeError: naming both shapes.
    """
    def fail(why: str) -> Exception:
        return ctx.error(f"indices of shape {list(index_shape)} {why} (data {list(shape)}, axis {axis})", ShapeError)

    if len(index_shape) != len(shape):
        raise fail("must have the rank of data")
    for dim, (size, count) in enumerate(zip(shape, index_shape)):
        if isinstance(size, int) and isinstance(count, int):
            if dim != axis and count > size:
                raise fail(f"exceed data in dim {dim}")
            if dim == axis and size == 0 and count > 0 and all(isinstance(c, int) and c > 0 for c in index_shape):
                raise fail("index an empty axis")


@lowering("GatherElements", since=11)
@lowering("GatherElements", since=13)  # 13 added bfloat16
def lower_gather_elements(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value]:
    """Lowers GatherElements (``numpy.take_along_axis``) to a pointwise stablehlo.gather.

    Spec: GatherElements-11/13.
    Shapes: data and indices the same rank, symbolic dims allowed (the gather's slices are
        1x...x1); the result has the indices' shape.
    Dtypes: any data type; indices int32/int64 (negative counts from the end).
    Raises: ShapeError for indices of another rank than data, larger than data off the axis, or
        indexing an empty axis; InvalidAttributeError for an axis out of range.
    """
    data = ctx.input(0)
    shape = builders.dims_of(data)
    axis = ctx.attr_axis("axis", len(shape))
    _check_gather_elements_shapes(ctx, shape, builders.dims_of(ctx.input(1)), axis)
    indices = indexing.normalize_symbolic(ctx.input(1), [shape[axis]], vector=False, ctx=ctx, what=f"indices for axis {axis}")
    return [indexing.gather_points(data, indexing.element_coordinates(indices, axis))]


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
    shape = builders.dims_of(data)
    index_shape = builders.dims_of(ctx.input(1))
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
    indices = indexing.normalize_symbolic(ctx.input(1), shape[batch : batch + depth], vector=True, ctx=ctx)
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
    result_type = builders.tensor_type(result_shape, builders.dtype_of(data))
    if is_static(slice_sizes):
        result = stablehlo.gather(data, indices, numbers, slice_sizes, results=[result_type])
    else:
        result = stablehlo.dynamic_gather(
            data, indices, builders.shape_tensor(slice_sizes), numbers, results=[result_type]
        )
    return [builders.record(result, result_shape)]


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
