"""Lowering rules: cumulative sums and products.

::

    CumSum(x, axis)    -> log2(n) steps of stablehlo.pad (shift) + stablehlo.add
                          (a stablehlo.while of masked gathers when n is symbolic)
    CumProd(x, axis)   -> the same scan with ones shifted in and stablehlo.multiply

Spec: onnx.ai/onnx/operators (CumSum, CumProd).
"""

from __future__ import annotations

from jaxlib.mlir import ir
from jaxlib.mlir.dialects import stablehlo

from onnx_stablehlo.frontend import builders
from onnx_stablehlo.frontend.context import LoweringContext, OnnxNode
from onnx_stablehlo.frontend.dtypes import DataType
from onnx_stablehlo.frontend.registry import lowering


@lowering("CumSum", since=11)
@lowering("CumSum", since=14)  # 14 added bfloat16 and float16
def lower_cumsum(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value]:
    """Lowers CumSum to a log-step scan: ``x += shift(x, s)`` for s = 1, 2, 4, ... < n.

    Each step is a stablehlo.pad (shift by ``s`` along the axis, zeros in) and a
    stablehlo.add, so an axis of length n takes ceil(log2 n) steps (O(n log n) adds rather
    than the O(n**2) of a full-length reduce_window). ``exclusive`` shifts the input by one
    first; ``reverse`` reverses the axis before and after.

    A symbolic length n along the axis makes the steps a stablehlo.while (``s`` doubling while
    ``s < n``), each shift a gather of ``x[i - s]`` masked to zero where ``i < s``; symbolic dims
    on other axes keep the static steps.

    Spec: CumSum-11/14.
    Shapes: x any, symbolic dims allowed; axis an int32/int64 scalar known at compile time.
    Dtypes: f16, bf16, f32, f64, i32, i64, u32, u64.
    Deviations: float sums are associated pairwise, not left to right (differences within
        rounding).
    Raises: NonConstantInputError if axis is computed at run time.
    """
    return [_cumulative_scan(ctx, node, stablehlo.AddOp, 0)]


def _cumulative_scan(ctx: LoweringContext, node: OnnxNode, combine: type, identity: int) -> ir.Value:
    """CumSum/CumProd: the log-step scan ``x = combine(x, shift(x, s))`` for s = 1, 2, 4, ...

    Reads the node's axis input and its ``exclusive``/``reverse`` attributes; ``identity`` (0 for
    sums, 1 for products) fills the shifted-in positions. A symbolic length along the axis
    makes the steps a stablehlo.while (see :func:`_scan_symbolic`).
    """
    x = ctx.input(0)
    shape = builders.dims_of(x)
    axis = ctx.axis(ctx.constant_int(1, "axis"), len(shape))
    reverse = bool(node.attr_int("reverse"))
    if reverse:
        x = builders.record(stablehlo.reverse(x, builders.i64_array([axis])), shape)
    if node.attr_int("exclusive"):
        x = _shift(x, axis, 1, identity)
    if isinstance(shape[axis], int):
        step = 1
        while step < shape[axis]:
            x = combine(x, _shift(x, axis, step, identity)).result
            step *= 2
    else:
        x = _scan_symbolic(x, axis, combine, identity)
    if reverse:
        x = builders.record(stablehlo.reverse(x, builders.i64_array([axis])), shape)
    return x


def _scan_symbolic(x: ir.Value, axis: int, combine: type, identity: int) -> ir.Value:
    """The inclusive scan along an axis of symbolic length n: log-steps in a stablehlo.while.

    Carries ``(s, x)`` from ``(1, x)``; each step combines ``x`` with ``x[i - s]`` (a gather at
    ``max(i - s, 0)``, ``identity`` where ``i < s``) and doubles ``s``, while ``s < n``.
    """
    shape = builders.dims_of(x)
    length = shape[axis]
    i64 = DataType.INT64
    along = builders.iota([length], 0, i64)  # i, for the gather's indices
    positions = builders.iota(shape, axis, i64)  # i at every element, for the mask
    limit = builders.dim_value(length)

    def below(args: list[ir.Value]) -> ir.Value:
        return builders.compare(args[0], limit, "LT")

    def step(args: list[ir.Value]) -> list[ir.Value]:
        s, acc = args
        source = stablehlo.maximum(
            stablehlo.subtract(along, builders.broadcast_to(s, [length], dims=())), builders.splat(0, i64, [length])
        )
        moved = builders.take(acc, source, axis)
        keep = builders.compare(positions, builders.broadcast_to(s, shape, dims=()), "GE")
        shifted = stablehlo.select(keep, moved, builders.splat(identity, builders.dtype_of(acc), shape))
        doubled = stablehlo.multiply(s, builders.splat(2, i64))
        return [doubled, combine(acc, shifted).result]

    return builders.while_loop([builders.splat(1, i64), x], below, step)[1]


def _shift(value: ir.Value, axis: int, amount: int, fill: int) -> ir.Value:
    """Moves entries ``amount`` places up ``axis``, ``fill`` in: ``y[i] = x[i - amount]``."""
    rank = builders.rank_of(value)
    low, high = [0] * rank, [0] * rank
    low[axis], high[axis] = amount, -amount
    padding = builders.splat(fill, builders.dtype_of(value))
    return builders.record(stablehlo.pad(value, padding, low, high, [0] * rank), builders.dims_of(value))


@lowering("CumProd", since=26)
def lower_cum_prod(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value]:
    """Lowers CumProd to a log-step scan: ``x *= shift(x, s)`` for s = 1, 2, 4, ... < n.

    The scan of CumSum's lowering (:func:`_cumulative_scan`) with multiplies and ones
    shifted in: each step is a stablehlo.pad and a stablehlo.multiply; ``exclusive`` shifts the
    input by one first; ``reverse`` reverses the axis before and after; a symbolic length n
    along the axis makes the steps a stablehlo.while (``s`` doubling while ``s < n``).

    Spec: CumProd-26.
    Shapes: x any, symbolic dims allowed; axis an int32/int64 scalar known at compile time.
    Dtypes: float16, bfloat16, float32, float64, int32, int64, uint32, uint64.
    Deviations: float products are associated pairwise, not left to right (differences within
        rounding).
    Raises: NonConstantInputError if axis is computed at run time.
    """
    return [_cumulative_scan(ctx, node, stablehlo.MulOp, 1)]
