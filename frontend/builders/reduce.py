"""Reductions: ``stablehlo.reduce`` with a binary body."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from jaxlib.mlir import ir
from jaxlib.mlir.dialects import stablehlo

from onnx_stablehlo.frontend.builders.core import (
    dims_of,
    dtype_of,
    i64_array,
    record,
    reshape,
    splat,
    tensor_type,
)

__all__ = ["reduce", "reduce_many", "block_values"]

Body = Callable[[ir.Value, ir.Value], object]


def block_values(result: object) -> list[ir.Value]:
    """A builder's result as a list of values: jaxlib's generated builders give a value, a result
    list, or the op itself (no results); an op class (``stablehlo.AddOp``) gives an op view."""
    if isinstance(result, ir.Value):
        return [result]
    if isinstance(result, ir.OpView):
        return list(result.results)
    return list(result)  # type: ignore[call-overload]


def reduce(
    value: ir.Value,
    axes: Sequence[int],
    body: Body,
    init: float | int | bool,
    keepdims: bool = False,
) -> ir.Value:
    """``stablehlo.reduce`` of ``value`` over ``axes`` with a binary body.

    Args:
        value: the operand (symbolic dims allowed).
        axes: normalized axes to reduce.
        body: the binary builder of the body (``stablehlo.add``, ``stablehlo.maximum`` ...;
            an op class such as ``stablehlo.AddOp`` is accepted too).
        init: the init value (identity of the body op), a 0-d constant.
        keepdims: keep reduced dims as size 1.
    """
    dtype = dtype_of(value)
    (result,) = reduce_many([value], [splat(init, dtype)], axes, lambda acc, x: block_values(body(acc[0], x[0])))
    if keepdims:
        shape = dims_of(value)
        result = reshape(result, [1 if i in axes else d for i, d in enumerate(shape)])
    return result


def reduce_many(
    values: Sequence[ir.Value],
    inits: Sequence[ir.Value],
    axes: Sequence[int],
    body: Callable[[list[ir.Value], list[ir.Value]], Sequence[ir.Value]],
) -> list[ir.Value]:
    """One ``stablehlo.reduce`` of several operands of one shape (an argmax's values and indices).

    Args:
        values: the operands (symbolic dims allowed).
        inits: one 0-d init value per operand.
        axes: normalized axes to reduce.
        body: ``(accumulators, elements) -> new accumulators``, one 0-d value per operand each,
            emitted in the reduce body.

    Returns:
        One reduced value per operand.
    """
    shape = dims_of(values[0])
    axes = sorted(set(axes))
    out_shape = [d for i, d in enumerate(shape) if i not in axes]
    dtypes = [dtype_of(v) for v in values]
    op = stablehlo.ReduceOp([tensor_type(out_shape, d) for d in dtypes], list(values), list(inits), i64_array(axes))
    scalar_types = [tensor_type((), d) for d in dtypes]
    block = op.body.blocks.append(*scalar_types, *scalar_types)
    count = len(values)
    with ir.InsertionPoint(block):
        arguments = list(block.arguments)
        stablehlo.return_(list(body(arguments[:count], arguments[count:])))
    return [record(result, out_shape) for result in op.results]
