"""Lowering rules: ops whose output size depends on the data.

::

    Compress(x, cond)    -> stablehlo.gather with the compile-time nonzero positions
    NonZero(x), Unique(x)-> computed at compile time (x must be known)

Output sizes must be known at compile time, so these need the data that decides the size to be
known at compile time (the host-split runtime runs them between two compiled parts otherwise).

Spec: onnx.ai/onnx/operators (each op's page).
"""

from __future__ import annotations

import numpy as np
from jaxlib.mlir import ir

from onnx_stablehlo.errors import DataDependentShapeError, NonConstantInputError, ShapeError
from onnx_stablehlo.frontend import builders
from onnx_stablehlo.frontend.context import LoweringContext, OnnxNode
from onnx_stablehlo.frontend.registry import lowering


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
    Deviations: a condition of rank > 1 is flattened and one longer than the axis is cut to
        the axis length, as onnxruntime does (the spec asks for rank 1; onnx.reference fails);
        the host-split path does the same.
    Raises: NonConstantInputError if condition is computed at run time (the output size would
        depend on it); InvalidAttributeError for an axis out of range, checked first, so the
        host-split path refuses it at compile time too.
    """
    # Checked before the host split, so a bad axis fails at compile time there too.
    input_shape = ctx.input_shape(0)
    axis = None
    if node.attr("axis") is not None:
        if not input_shape:
            raise ctx.invalid_input(0, "is a scalar; Compress with an axis needs rank >= 1")
        axis = ctx.attr_axis("axis", len(input_shape))
    if not ctx.is_constant_input(1):
        raise _data_dependent(ctx, 1, "the condition")
    data = ctx.input(0)
    shape = builders.static_shape_of(data)
    if axis is None:
        data = builders.reshape(data, [int(np.prod(shape, dtype=np.int64))])
        axis = 0
    size = builders.static_shape_of(data)[axis]
    condition = np.asarray(ctx.constant_input(1)).astype(bool).reshape(-1)[:size]
    return [builders.take(data, np.nonzero(condition)[0].astype(np.int64), axis)]


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
    Raises: NonConstantInputError if x is computed at run time; InvalidAttributeError for an
        axis out of range (checked first, so the host-split path refuses it at compile time).
    """
    rank = len(ctx.input_shape(0))
    if node.attr("axis") is not None and rank == 0:
        raise ctx.invalid_input(0, "is a scalar; Unique with an axis needs rank >= 1")
    axis = None if node.attr("axis") is None else ctx.attr_axis("axis", rank)  # before the host split
    if not ctx.is_constant_input(0):
        raise _data_dependent(ctx, 0, "the number of distinct values")
    x = np.asarray(ctx.constant_input(0))
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
