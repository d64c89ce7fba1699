"""Index helpers shared by the gather, scatter, slicing and cumulative rules.

Normalizing indices (``i < 0 -> i + dim``: numpy for compile-time indices, compare + select for
run-time ones, with an optional run-time range check), taking rows along an axis with a
stablehlo.gather, and building element coordinates for GatherElements/ScatterElements.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import stablehlo

from onnx_stablehlo.frontend import dtypes, emit
from onnx_stablehlo.frontend.context import LoweringContext
from onnx_stablehlo.frontend.dtypes import DataType
from onnx_stablehlo.frontend.shapes import Dim, is_static


def normalize_indices(
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
    return normalized(indices, bound, ctx, f"{what} out of range (bound {shown})")


def normalized(indices: ir.Value, bound: ir.Value, ctx: LoweringContext | None, message: str) -> ir.Value:
    """``indices + bound where indices < 0`` (``bound`` has their shape), with the range check."""
    shape = emit.dims_of(indices)
    dtype = emit.dtype_of(indices)
    if dtypes.is_unsigned_int(dtype):
        normalized = indices
    else:
        negative = emit.compare(indices, emit.splat(0, dtype, shape), "LT")
        normalized = stablehlo.select(negative, stablehlo.add(indices, bound), indices)
        normalized = emit.record(normalized, shape)
    if ctx is not None:
        ok = emit.compare(normalized, bound, "LT")
        if not dtypes.is_unsigned_int(dtype):
            ok = stablehlo.and_(ok, emit.compare(normalized, emit.splat(0, dtype, shape), "GE"))
        ctx.runtime_check(ok, message)
    return normalized


def normalize_symbolic(
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
        return normalize_indices(indices, np.asarray(bounds if vector else bounds[0], dtype=np.int64), ctx, what)
    dtype = emit.dtype_of(indices)
    if vector:
        bound = emit.broadcast_to(emit.convert(emit.shape_tensor(bounds), dtype), shape, dims=[len(shape) - 1])
    else:
        bound = emit.broadcast_to(emit.convert(emit.dim_value(bounds[0]), dtype), shape, dims=())
    shown = [str(b) for b in bounds] if vector else str(bounds[0])
    return normalized(indices, bound, ctx, f"{what} out of range (bound {shown})")


def take(value: ir.Value, indices: ir.Value, axis: int) -> ir.Value:
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
        result = stablehlo.gather(value, indices, numbers, slice_sizes, results=[result_type])
    else:
        result = stablehlo.dynamic_gather(
            value, indices, emit.shape_tensor(slice_sizes), numbers, results=[result_type]
        )
    return emit.record(result, result_shape)


def take_constant(value: ir.Value, indices: np.ndarray, axis: int) -> ir.Value:
    """``numpy.take`` with compile-time in-range indices: a slice when they form a range."""
    indices = np.asarray(indices, dtype=np.int64)
    flat = indices.reshape(-1)
    shape = emit.static_shape_of(value)
    if indices.ndim <= 1 and flat.size > 0 and np.array_equal(flat, np.arange(flat[0], flat[0] + flat.size)):
        starts = [0] * len(shape)
        limits = list(shape)
        starts[axis], limits[axis] = int(flat[0]), int(flat[0]) + flat.size
        sliced = stablehlo.slice(value, starts, limits, [1] * len(shape))
        if indices.ndim == 0:
            return emit.reshape(sliced, [d for i, d in enumerate(shape) if i != axis])
        return sliced
    return take(value, emit.constant(indices, DataType.INT64), axis)


def element_coordinates(indices: ir.Value, axis: int) -> ir.Value:
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
    return emit.record(stablehlo.concatenate(columns, len(shape)), shape + [len(shape)])
