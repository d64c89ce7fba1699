"""Helpers shared by the spatial rules (sampling, detection, conv's DeformConv/Col2Im, pool's MaxUnpool, linalg's Det).

Coordinates and weights are computed in float32 (float64 for float64 inputs): ``compute_dtype``.
``gather_vectors`` takes rows of a table at run-time points; the tap helpers combine the per-axis
sample positions and weights of an interpolation. Arithmetic goes through the floor's
:class:`~onnx_stablehlo.frontend.builders.Arith` and loops through its ``while_loop``.
"""

from __future__ import annotations

from collections.abc import Sequence

from jaxlib.mlir import ir
from jaxlib.mlir.dialects import stablehlo

from onnx_stablehlo.errors import ShapeError
from onnx_stablehlo.frontend import builders, dtypes
from onnx_stablehlo.frontend.context import LoweringContext, OnnxNode
from onnx_stablehlo.frontend.dtypes import DataType


FLOATS = "float16, bfloat16, float32, float64"


def compute_dtype(*types: DataType) -> DataType:
    """float64 if any of ``types`` is float64, else float32."""
    return DataType.DOUBLE if DataType.DOUBLE in types else DataType.FLOAT


def require_float(ctx: LoweringContext, index: int) -> DataType:
    dtype = ctx.input_dtype(index)
    if not dtypes.is_float(dtype):
        raise ctx.unsupported_dtype(dtype, FLOATS)
    return dtype


def ints_attr(node: OnnxNode, name: str, default: Sequence[int]) -> list[int]:
    """An ints attribute, or ``default`` when it is absent or empty."""
    value = node.attr_ints(name)
    return list(value) if value else list(default)


def stack(values: Sequence[ir.Value]) -> ir.Value:
    """Stacks same-shape values along a new last axis."""
    shape = list(builders.static_shape_of(values[0]))
    parts = [builders.reshape(v, [*shape, 1]) for v in values]
    return parts[0] if len(parts) == 1 else stablehlo.concatenate(parts, len(shape))


def component(value: ir.Value, index: int) -> ir.Value:
    """``value[..., index]`` (the last axis dropped)."""
    shape = builders.static_shape_of(value)
    return builders.reshape(axis_slice(value, len(shape) - 1, index), shape[:-1])


def expect_rank(ctx: LoweringContext, index: int, rank: int) -> tuple[int, ...]:
    """Input ``index``'s static shape, which must have ``rank`` dims (ShapeError otherwise)."""
    shape = ctx.input_static_shape(index)
    if len(shape) != rank:
        name = ctx.node.input_names[index]
        raise ctx.error(f"input {index} ('{name}') must be {rank}-D, got {list(shape)}", ShapeError)
    return shape


def axis_slice(value: ir.Value, axis: int, index: int) -> ir.Value:
    """``value`` sliced to ``index`` along ``axis`` (kept as size 1)."""
    shape = builders.static_shape_of(value)
    starts = [0] * len(shape)
    limits = list(shape)
    starts[axis], limits[axis] = index, index + 1
    return stablehlo.slice(value, starts, limits, [1] * len(shape))


def gather_vectors(table: ir.Value, indices: ir.Value, batch: int) -> ir.Value:
    """Gathers last-axis vectors of ``table`` at run-time points.

    Args:
        table: ``[b1..bk, d1..dr, c]``.
        indices: ``[b1..bk, s..., r]`` int, in-range coordinates into ``d1..dr``.
        batch: ``k``, the leading dims ``table`` and ``indices`` share (gather batching dims).

    Returns:
        ``[b1..bk, s..., c]``.
    """
    table_shape = builders.static_shape_of(table)
    index_shape = builders.static_shape_of(indices)
    point_rank = index_shape[-1]
    point_dims = list(range(batch, batch + point_rank))
    numbers = stablehlo.GatherDimensionNumbers.get(
        offset_dims=[len(index_shape) - 1],
        collapsed_slice_dims=point_dims,
        operand_batching_dims=list(range(batch)),
        start_indices_batching_dims=list(range(batch)),
        start_index_map=point_dims,
        index_vector_dim=len(index_shape) - 1,
    )
    slice_sizes = [1] * (batch + point_rank) + [table_shape[-1]]
    result_type = builders.tensor_type([*index_shape[:-1], table_shape[-1]], builders.dtype_of(table))
    return stablehlo.gather(
        table, indices, numbers, builders.i64_array(slice_sizes), indices_are_sorted=False, results=[result_type]
    )


Tap = tuple[ir.Value, "ir.Value | None", "ir.Value | None"]
"""(int64 index, float weight or None, bool validity or None) of one tap along one axis."""


def combine_taps(per_axis: Sequence[Sequence[Tap]], lead: Sequence[int]):
    """Every combination of one tap per axis: indices ``[*lead, T, r]``, weights and validity
    ``[*lead, T]`` (``None`` when no axis has them), ``T = taps ** r``."""
    rank = len(per_axis)
    count = len(per_axis[0])
    combos = count**rank
    grid = [*lead, *([count] * rank)]
    lead_dims = list(range(len(lead)))

    def spread(values: Sequence[ir.Value], axis: int) -> ir.Value:
        stacked = stack(values)
        spread_out = builders.broadcast_to(stacked, grid, dims=[*lead_dims, len(lead) + axis])
        return builders.reshape(spread_out, [*lead, combos])

    indices = stack([spread([tap[0] for tap in taps], axis) for axis, taps in enumerate(per_axis)])
    weights = valid = None
    for axis, taps in enumerate(per_axis):
        if taps[0][1] is not None:
            w = spread([tap[1] for tap in taps], axis)
            weights = w if weights is None else stablehlo.multiply(weights, w)
        if taps[0][2] is not None:
            v = spread([tap[2] for tap in taps], axis)
            valid = v if valid is None else builders.logical_and(valid, v)
    return indices, weights, valid
