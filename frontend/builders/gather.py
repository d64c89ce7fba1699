"""Gathers: ``numpy.take`` along one axis, for run-time or compile-time indices."""

from __future__ import annotations

import numpy as np
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import stablehlo

from onnx_stablehlo.frontend.builders.core import (
    _is_static,
    constant,
    dims_of,
    dtype_of,
    i64_array,
    record,
    reshape,
    shape_tensor,
    static_shape_of,
    tensor_type,
)
from onnx_stablehlo.frontend.dtypes import DataType

__all__ = ["take"]


def take(value: ir.Value, indices: ir.Value | np.ndarray, axis: int) -> ir.Value:
    """``numpy.take(value, indices, axis)`` for in-range indices (any rank; symbolic dims allowed).

    The result shape is ``shape[:axis] + indices.shape + shape[axis + 1:]``. Run-time indices
    give one ``stablehlo.gather`` (``dynamic_gather`` when a sliced dim is symbolic) with the
    index vector dim implicit; compile-time indices (a numpy array) that form a contiguous range
    give a ``stablehlo.slice`` instead (``value`` static then), others a constant gather.
    """
    if isinstance(indices, np.ndarray) or not isinstance(indices, ir.Value):
        return _take_constant(value, np.asarray(indices, dtype=np.int64), axis)
    shape = dims_of(value)
    index_shape = dims_of(indices)
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
    result_type = tensor_type(result_shape, dtype_of(value))
    if _is_static(slice_sizes):
        result = stablehlo.gather(value, indices, numbers, i64_array(slice_sizes), results=[result_type])
    else:
        result = stablehlo.dynamic_gather(value, indices, shape_tensor(slice_sizes), numbers, results=[result_type])
    return record(result, result_shape)


def _take_constant(value: ir.Value, indices: np.ndarray, axis: int) -> ir.Value:
    """``numpy.take`` with compile-time in-range indices: a slice when they form a range."""
    flat = indices.reshape(-1)
    if indices.ndim <= 1 and flat.size > 0 and np.array_equal(flat, np.arange(flat[0], flat[0] + flat.size)):
        shape = static_shape_of(value)
        starts = [0] * len(shape)
        limits = list(shape)
        starts[axis], limits[axis] = int(flat[0]), int(flat[0]) + flat.size
        sliced = stablehlo.slice(value, i64_array(starts), i64_array(limits), i64_array([1] * len(shape)))
        if indices.ndim == 0:
            return reshape(sliced, [d for i, d in enumerate(shape) if i != axis])
        return sliced
    return take(value, constant(indices, DataType.INT64), axis)
