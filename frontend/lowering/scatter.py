"""Lowering rules: scatters.

::

    ScatterND, ScatterElements, Scatter -> stablehlo.scatter with a reduction body
    TensorScatter(cache, update, idx)   -> stablehlo.scatter with batch dim 0 and per-batch start
                                           positions along the sequence axis

Run-time indices are normalized (``i < 0 -> i + dim``) with compare + select. Out-of-range
run-time indices (an error in the spec) are skipped by stablehlo.scatter.

Spec: onnx.ai/onnx/operators (each op's page).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from jaxlib.mlir import ir
from jaxlib.mlir.dialects import stablehlo

from onnx_stablehlo.errors import ShapeError
from onnx_stablehlo.frontend import builders, dtypes
from onnx_stablehlo.frontend.builders import indexing
from onnx_stablehlo.frontend.context import LoweringContext, OnnxNode
from onnx_stablehlo.frontend.dtypes import DataType
from onnx_stablehlo.frontend.registry import lowering
from onnx_stablehlo.frontend.shapes import Dim, is_static


def _fits(dims: Sequence[Dim], expected: Sequence[Dim]) -> bool:
    """Equal ranks and equal dims wherever both are static (symbolic dims bind at run time)."""
    if len(dims) != len(expected):
        return False
    return all(not isinstance(a, int) or not isinstance(b, int) or a == b for a, b in zip(dims, expected))


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
    dtype = builders.dtype_of(data)
    op = stablehlo.ScatterOp([data.type], [data], indices, [updates], numbers)
    scalar_type = builders.tensor_type((), dtype)
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
    shape = builders.dims_of(data)
    index_shape = builders.dims_of(ctx.input(1))
    update_shape = builders.dims_of(ctx.input(2))
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
    indices = indexing.normalize_symbolic(ctx.input(1), shape[:depth], vector=True, ctx=ctx)
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
        which), as the spec allows. With reduction max/min and float data, NaN follows
        onnxruntime's sequential fold (see ``_scatter_nan_like_onnxruntime``), on static and
        symbolic shapes.
    Raises: UnsupportedAttributeError for an unknown reduction; ShapeError if indices and
        updates differ in shape.
    """
    data = ctx.input(0)
    shape = builders.dims_of(data)
    index_shape = builders.dims_of(ctx.input(1))
    if not _fits(builders.dims_of(ctx.input(2)), index_shape) or len(index_shape) != len(shape):
        raise ctx.error("indices and updates must have the same shape, of the data's rank", ShapeError)
    axis = ctx.axis(node.attr_int("axis"), len(shape))
    reduction = _reduction(ctx, node) if node.op_type == "ScatterElements" else "none"
    indices = indexing.normalize_symbolic(ctx.input(1), [shape[axis]], vector=False, ctx=ctx, what=f"indices for axis {axis}")
    points = indexing.element_coordinates(indices, axis)
    rank = len(shape)
    numbers = stablehlo.ScatterDimensionNumbers.get(
        update_window_dims=[],
        inserted_window_dims=list(range(rank)),
        input_batching_dims=[],
        scatter_indices_batching_dims=[],
        scattered_dims_to_operand_dims=list(range(rank)),
        index_vector_dim=rank,
    )
    updates = ctx.input(2)
    nan_rule = reduction in ("max", "min") and dtypes.is_float(builders.dtype_of(data))
    if nan_rule:
        return [_scatter_nan_like_onnxruntime(data, points, updates, numbers, reduction)]
    return [_scatter(data, points, updates, numbers, reduction)]


def _scatter_nan_like_onnxruntime(
    data: ir.Value, points: ir.Value, updates: ir.Value, numbers: ir.Attribute, reduction: str
) -> ir.Value:
    """ScatterElements max/min with onnxruntime's NaN rule, independent of XLA's update order.

    onnxruntime folds ``data[p], u1, u2, ...`` (updates in row-major order) with
    ``a = u unless a > u`` (``<`` for min): a NaN update makes ``a`` NaN, the next update
    replaces that NaN. So the result is NaN when the last element of that sequence is NaN, else
    the max (min) of the elements after its last NaN. Three scatters find, per element, the order
    of its last NaN (data is order 0, update ``k`` order ``k + 1``) and of its last element, and
    the max (min) of the elements ordered after the last NaN.
    """
    dtype = builders.dtype_of(data)
    i64 = DataType.INT64
    shape = builders.dims_of(updates)
    count = math.prod(shape)  # a SymbolicDim product when dims are symbolic
    order = builders.reshape(builders.iota([count], 0, i64), shape)
    order = stablehlo.add(order, builders.splat(1, i64, shape))
    minus_one = builders.splat(-1, i64, shape)
    data_shape = builders.dims_of(data)

    def isnan(value: ir.Value) -> ir.Value:
        return builders.compare(value, value, "NE")

    init = stablehlo.select(isnan(data), builders.splat(0, i64, data_shape), builders.splat(-1, i64, data_shape))
    last_nan = _scatter(init, points, stablehlo.select(isnan(updates), order, minus_one), numbers, "max")
    last = _scatter(builders.splat(0, i64, data_shape), points, order, numbers, "max")
    last_nan_at = indexing.gather_points(last_nan, points)
    identity = dtypes.lowest(dtype) if reduction == "max" else dtypes.highest(dtype)
    kept = stablehlo.select(builders.compare(order, last_nan_at, "GT"), updates, builders.splat(identity, dtype, shape))
    data_kept = stablehlo.select(
        builders.compare(last_nan, builders.splat(-1, i64, data_shape), "EQ"),
        data,
        builders.splat(identity, dtype, data_shape),
    )
    value = _scatter(data_kept, points, kept, numbers, reduction)
    nan = builders.splat(float("nan"), dtype, data_shape)
    return stablehlo.select(builders.compare(last_nan, last, "EQ"), nan, value)


_SCATTER_MODES = ("linear", "circular")


@lowering("TensorScatter", since=24)
def lower_tensor_scatter(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value]:
    """Lowers TensorScatter to a stablehlo.scatter that writes ``update`` into the cache.

    Sequence position ``s`` of batch ``b`` goes to ``write_indices[b] + s`` along ``axis``
    (modulo the cache length with ``mode="circular"``). Dim 0 is a scatter batching dim; every
    other dim is a window.

    Spec: TensorScatter-24.
    Shapes: past_cache ``[batch, D1, ..., max_len, ..., Dn]``; update the same but
        ``sequence_length <= max_len`` along ``axis``; write_indices int64 ``[batch]``, may be
        computed at run time (omitted: zeros). Symbolic dims allowed: update's dims off ``axis``
        are assumed equal to the cache's (checked when the feeds bind them), and
        ``sequence_length <= max_len`` is not checked for symbolic sizes.
    Dtypes: every type except string.
    Deviations: in linear mode, positions past the cache end (an error in the spec) are
        dropped.
    Raises: UnsupportedAttributeError for an unknown mode; ShapeError for axis 0 or shapes
        that do not match.
    """
    mode = node.attr_str("mode", "linear")
    if mode not in _SCATTER_MODES:
        raise ctx.unsupported_attribute("mode", mode, ", ".join(_SCATTER_MODES))
    cache, update = ctx.input(0), ctx.input(1)
    shape, update_shape = builders.dims_of(cache), builders.dims_of(update)
    rank = len(shape)
    axis = ctx.axis(node.attr_int("axis"), rank)
    if axis == 0:
        raise ctx.error("axis must not be 0 (the batch dimension)", ShapeError)
    if len(update_shape) != rank or any(
        isinstance(a, int) and isinstance(b, int) and (a > b if d == axis else a != b)
        for d, (a, b) in enumerate(zip(update_shape, shape))
    ):
        raise ctx.error(
            f"update {list(map(str, update_shape))} must match past_cache {list(map(str, shape))} "
            f"except along axis {axis}, where it may not be longer",
            ShapeError,
        )
    # Symbolic dims that must agree are merged (the equality is checked at run time).
    shape = tuple(
        d if i == axis else builders.broadcast_shapes((d,), (u,))[0] for i, (d, u) in enumerate(zip(shape, update_shape))
    )
    batch, length, max_length = shape[0], update_shape[axis], shape[axis]
    if ctx.has_input(2):
        starts = builders.broadcast_to(builders.convert(ctx.input(2), DataType.INT64), (batch, length), dims=[0])
    else:
        starts = builders.splat(0, DataType.INT64, (batch, length))
    positions = stablehlo.add(starts, builders.iota((batch, length), 1, DataType.INT64))
    if mode == "circular":
        bound = builders.broadcast_to(builders.dim_value(max_length), (batch, length), dims=())
        positions = stablehlo.remainder(stablehlo.add(stablehlo.remainder(positions, bound), bound), bound)
    indices = builders.reshape(positions, (batch, length, 1))
    window_dims = [d for d in range(1, rank) if d != axis]
    numbers = stablehlo.ScatterDimensionNumbers.get(
        update_window_dims=window_dims,
        inserted_window_dims=[axis],
        input_batching_dims=[0],
        scatter_indices_batching_dims=[0],
        scattered_dims_to_operand_dims=[axis],
        index_vector_dim=2,
    )
    op = stablehlo.ScatterOp([cache.type], [cache], indices, [update], numbers, unique_indices=True)
    scalar_type = builders.tensor_type((), builders.dtype_of(cache))
    block = op.update_computation.blocks.append(scalar_type, scalar_type)
    with ir.InsertionPoint(block):
        stablehlo.ReturnOp([block.arguments[1]])
    return [builders.record(op.results[0], shape)]
