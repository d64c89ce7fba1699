"""Control flow: ``stablehlo.while`` with region callbacks or a body built first, a counted loop
(scan form), ``stablehlo.if`` from branches built first, and the dynamic row read/write a loop
body uses.

Carried values may have symbolic dims (their run-time sizes are emitted before the loop, so a
region never defines a size that code after the loop reuses).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import stablehlo

from onnx_stablehlo.frontend.builders.core import (
    compare,
    convert,
    dim_value,
    dims_of,
    dtype_of,
    i64_array,
    record,
    reshape,
    shape_of,
    splat,
)
from onnx_stablehlo.frontend.builders.gather import take
from onnx_stablehlo.frontend.dtypes import DataType
from onnx_stablehlo.frontend.shapes import Dim

__all__ = [
    "detached_blocks",
    "if_with_branches",
    "while_loop",
    "while_with_body",
    "carry_dims",
    "record_carried",
    "counted_loop",
    "increment",
    "dynamic_index",
    "write_row",
]


def while_loop(
    init: Sequence[ir.Value],
    cond: Callable[[list[ir.Value]], ir.Value],
    body: Callable[[list[ir.Value]], Sequence[ir.Value]],
) -> list[ir.Value]:
    """``stablehlo.while`` carrying ``init``; ``cond`` and ``body`` build its two regions.

    Carried values may have symbolic dims: the run-time sizes of those dims are emitted before
    the loop (so a region never defines a size that code after the loop reuses), and the
    regions' block arguments carry the same symbolic dims as ``init``.

    Args:
        init: the initial carried values.
        cond: carried values -> ``tensor<i1>``, emitted in the condition region.
        body: carried values -> next carried values (same types), emitted in the body region.

    Returns:
        The carried values after the last iteration.
    """
    dims = [carry_dims(v) for v in init]
    types = [v.type for v in init]
    op = stablehlo.WhileOp(types, list(init))
    cond_block = op.cond.blocks.append(*types)
    with ir.InsertionPoint(cond_block):
        stablehlo.return_([cond(record_carried(cond_block.arguments, dims))])
    body_block = op.body.blocks.append(*types)
    with ir.InsertionPoint(body_block):
        stablehlo.return_(list(body(record_carried(body_block.arguments, dims))))
    return record_carried(op.results, dims)


def detached_blocks(*arg_types: Sequence[ir.Type]) -> tuple[ir.OpView, list[ir.Block]]:
    """One or two blocks (with these argument types) owned by a throwaway op, for bodies lowered
    before the op that takes them can be built (Loop and Scan bodies add scan-output buffers, If
    compares its branches' types first). Move them with :func:`while_with_body` or
    :func:`if_with_branches`, then erase the holder with :func:`erase`.
    """
    holder = stablehlo.WhileOp([], [])
    regions = [holder.cond, holder.body]
    return holder, [regions[i].blocks.append(*types) for i, types in enumerate(arg_types)]


def if_with_branches(
    result_types: Sequence[ir.Type], pred: ir.Value, then_block: ir.Block, else_block: ir.Block
) -> list[ir.Value]:
    """``stablehlo.if`` whose branches were built first (each ending in its ``stablehlo.return``)."""
    op = stablehlo.IfOp(list(result_types), pred)
    then_block.append_to(op.true_branch)
    else_block.append_to(op.false_branch)
    return list(op.results)


def while_with_body(
    init: Sequence[ir.Value],
    cond: Callable[[list[ir.Value]], ir.Value],
    body_block: ir.Block,
) -> list[ir.Value]:
    """``stablehlo.while`` whose body was built first, in ``body_block`` (detached, ending in its
    ``stablehlo.return``): ONNX Loop and Scan lower their body before they know every carried
    value (scan outputs add buffers). ``cond`` builds the condition region from the block
    arguments. Returns the raw results (the caller records their dims with
    :func:`record_carried`).
    """
    types = [v.type for v in init]
    op = stablehlo.WhileOp(types, list(init))
    cond_block = op.cond.blocks.append(*types)
    with ir.InsertionPoint(cond_block):
        stablehlo.return_([cond(list(cond_block.arguments))])
    body_block.append_to(op.body)
    return list(op.results)


def carry_dims(value: ir.Value) -> tuple[Dim, ...] | None:
    """A carried value's dims, its symbolic ones' sizes emitted here, before the loop (None when static)."""
    if all(d is not None for d in shape_of(value)):
        return None
    dims = dims_of(value)
    for dim in dims:
        if not isinstance(dim, int):
            dim_value(dim)  # cached by the importer: later uses in the regions reuse it
    return dims


def record_carried(values: Sequence[ir.Value], dims: Sequence[tuple[Dim, ...] | None]) -> list[ir.Value]:
    """``values`` with the dims :func:`carry_dims` gave recorded (block arguments, loop results)."""
    return [v if d is None else record(v, d) for v, d in zip(values, dims)]


def counted_loop(
    count: Dim,
    init: Sequence[ir.Value],
    body: Callable[[ir.Value, list[ir.Value]], Sequence[ir.Value]],
) -> list[ir.Value]:
    """``for i in range(count)`` as a ``stablehlo.while`` with an i64 counter.

    Args:
        count: the number of iterations: an int, or a symbolic dim whose run-time size
            (``stablehlo.get_dimension_size``) bounds the loop.
        init: the initial carried values (symbolic dims allowed).
        body: ``(i: tensor<i64>, carried) -> next carried``.

    Returns:
        The carried values after ``count`` iterations.
    """
    limit = None if isinstance(count, (int, np.integer)) else dim_value(count)

    def step(args: list[ir.Value]) -> list[ir.Value]:
        counter = args[0]
        return [increment(counter), *body(counter, args[1:])]

    def below(args: list[ir.Value]) -> ir.Value:
        bound = splat(int(count), DataType.INT64) if limit is None else limit
        return compare(args[0], bound, "LT")

    return while_loop([splat(0, DataType.INT64), *init], below, step)[1:]


def increment(counter: ir.Value) -> ir.Value:
    """``counter + 1``."""
    return stablehlo.add(counter, splat(1, dtype_of(counter)))


def dynamic_index(value: ir.Value, index: ir.Value, axis: int) -> ir.Value:
    """``value[..., index, ...]`` (``index`` a scalar tensor along ``axis``), axis dropped.

    A static ``value`` gives ``stablehlo.dynamic_slice``; with symbolic dims the slice sizes
    are run-time values, so it is a ``stablehlo.dynamic_gather`` of one index (a plain gather
    once the module is refined to static shapes). An out-of-range index is clamped.
    """
    shape = shape_of(value)
    if all(d is not None for d in shape):
        zero = splat(0, dtype_of(index))
        starts = [index if d == axis else zero for d in range(len(shape))]
        sizes = [1 if d == axis else n for d, n in enumerate(shape)]
        row = stablehlo.dynamic_slice(value, starts, i64_array(sizes))
        return reshape(row, [n for d, n in enumerate(shape) if d != axis])
    row = take(value, reshape(convert(index, DataType.INT64), (1,)), axis)
    return reshape(row, [n for d, n in enumerate(dims_of(value)) if d != axis])


def write_row(buffer: ir.Value, row: ir.Value, index: ir.Value, axis: int) -> ir.Value:
    """``buffer`` with ``buffer[..., index, ...] = row`` along ``axis`` (dynamic_update_slice).

    Symbolic dims are allowed (``dynamic_update_slice`` takes its sizes from ``row``).
    """
    dims = dims_of(buffer)
    row_dims = list(dims_of(row))
    row_dims.insert(axis, 1)
    update = reshape(row, row_dims)
    zero = splat(0, dtype_of(index))
    starts = [index if d == axis else zero for d in range(len(dims))]
    result = stablehlo.dynamic_update_slice(buffer, update, starts)
    return record(result, dims)
