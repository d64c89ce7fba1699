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

from onnx_stablehlo.frontend import builders, dtypes
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
    shape = builders.dims_of(indices)
    dtype = builders.dtype_of(indices)
    bounds = np.asarray(bounds)
    if bounds.size == 1:
        bound = builders.splat(bounds.reshape(()).item(), dtype, shape)
    else:
        bound = builders.constant(np.broadcast_to(bounds, shape), dtype)
    shown = bounds.reshape(()).item() if bounds.size == 1 else bounds.reshape(-1).tolist()
    return normalized(indices, bound, ctx, f"{what} out of range (bound {shown})")


def normalized(indices: ir.Value, bound: ir.Value, ctx: LoweringContext | None, message: str) -> ir.Value:
    """``indices + bound where indices < 0`` (``bound`` has their shape), with the range check."""
    shape = builders.dims_of(indices)
    dtype = builders.dtype_of(indices)
    if dtypes.is_unsigned_int(dtype):
        normalized = indices
    else:
        negative = builders.compare(indices, builders.splat(0, dtype, shape), "LT")
        normalized = stablehlo.select(negative, stablehlo.add(indices, bound), indices)
        normalized = builders.record(normalized, shape)
    if ctx is not None:
        ok = builders.compare(normalized, bound, "LT")
        if not dtypes.is_unsigned_int(dtype):
            ok = stablehlo.and_(ok, builders.compare(normalized, builders.splat(0, dtype, shape), "GE"))
        ctx.runtime_check(ok, message)
    return normalized


def normalize_symbolic(
    indices: ir.Value, bounds: Sequence[Dim], vector: bool, ctx: LoweringContext | None = None, what: str = "indices"
) -> ir.Value:
    """:func:`normalize_indices` for bounds and index shapes that may be symbolic.

    Args:
        indices: run-time indices, any shape.
        bounds: one bound for every index (``vector=False``, ``bounds[0]``), or one per entry of
            the indices' last axis (``vector=True``, ScatterND-style index vectors).
        vector: which of the two.
        ctx, what: record the range check (see :func:`normalize_indices`).

    Returns ``i + bound where i < 0`` (unsigned indices unchanged); a static case is exactly
    :func:`normalize_indices`.
    """
    shape = builders.dims_of(indices)
    if is_static(bounds) and is_static(shape):
        return normalize_indices(indices, np.asarray(bounds if vector else bounds[0], dtype=np.int64), ctx, what)
    dtype = builders.dtype_of(indices)
    if vector:
        bound = builders.broadcast_to(builders.convert(builders.shape_tensor(bounds), dtype), shape, dims=[len(shape) - 1])
    else:
        bound = builders.broadcast_to(builders.convert(builders.dim_value(bounds[0]), dtype), shape, dims=())
    shown = [str(b) for b in bounds] if vector else str(bounds[0])
    return normalized(indices, bound, ctx, f"{what} out of range (bound {shown})")


def element_coordinates(indices: ir.Value, axis: int) -> ir.Value:
    """Full int64 coordinates ``[..., r]`` for GatherElements/ScatterElements-style indexing.

    Coordinate ``d`` of entry ``(i0, ..., i_{r-1})`` is ``i_d`` for ``d != axis`` and
    ``indices[i0, ..., i_{r-1}]`` for ``d == axis``.
    """
    shape = list(builders.dims_of(indices))
    columns = []
    for dim in range(len(shape)):
        if dim == axis:
            columns.append(builders.reshape(builders.convert(indices, DataType.INT64), shape + [1]))
        else:
            columns.append(builders.iota(shape + [1], dim, DataType.INT64))
    if len(columns) == 1:
        return columns[0]
    return builders.record(stablehlo.concatenate(columns, len(shape)), shape + [len(shape)])


def gather_points(value: ir.Value, points: ir.Value) -> ir.Value:
    """Gathers single elements: ``points`` is ``[..., r]`` full coordinates into ``value``
    (GatherElements; ScatterElements reading back what it scattered).

    Slices are 1x...x1, so this is a plain stablehlo.gather even when dims are symbolic.
    """
    shape = builders.dims_of(value)
    point_shape = builders.dims_of(points)
    rank = len(shape)
    numbers = stablehlo.GatherDimensionNumbers.get(
        offset_dims=[],
        collapsed_slice_dims=list(range(rank)),
        operand_batching_dims=[],
        start_indices_batching_dims=[],
        start_index_map=list(range(rank)),
        index_vector_dim=len(point_shape) - 1,
    )
    result_type = builders.tensor_type(point_shape[:-1], builders.dtype_of(value))
    result = stablehlo.gather(value, points, numbers, [1] * rank, results=[result_type])
    return builders.record(result, point_shape[:-1])
