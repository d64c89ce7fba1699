"""Lowering rules: activations (Softmax family first, then pointwise activations).

Softmax, LogSoftmax and Hardmax changed meaning at opset 13: before it the input is coerced to
2-D at ``axis`` (``[a0 * ... * a(k-1), ak * ... * a(n-1)]``) and the op runs over the whole
trailing block, which is a reduction over axes ``[axis, rank)``; from 13 on it runs over the one
axis ``axis`` (default -1). Both variants share the builders below and differ only in the axes.

Softmax and LogSoftmax subtract the maximum before exponentiating; f16 and bf16 inputs are
computed in f32 and rounded once at the end.

Spec: onnx.ai/onnx/operators (each op's page).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import stablehlo

from onnx_stablehlo.frontend import emit
from onnx_stablehlo.frontend.context import LoweringContext, OnnxNode
from onnx_stablehlo.frontend.dtypes import DataType
from onnx_stablehlo.frontend.registry import lowering

_HALF_FLOATS = (DataType.FLOAT16, DataType.BFLOAT16)


# Helpers -------------------------------------------------------------------------------------


def _splat_like(value: float, x: ir.Value) -> ir.Value:
    """A constant of ``x``'s shape and dtype filled with ``value``."""
    return emit.splat(value, emit.dtype_of(x), emit.static_shape_of(x))


def _reduce(x: ir.Value, axes: Sequence[int], body_op: type, init: float, keepdims: bool = False) -> ir.Value:
    """``stablehlo.reduce`` of ``x`` over ``axes`` with a binary body op.

    Like ``emit.reduce``, whose scalar init value comes out as ``tensor<1xT>`` today
    (``np.ascontiguousarray`` turns 0-d arrays into 1-d ones in ``emit.constant``); this builds
    the init as a reshaped one-element splat instead.
    """
    dtype = emit.dtype_of(x)
    shape = emit.static_shape_of(x)
    axes = sorted(set(axes))
    init_value = emit.reshape(emit.splat(init, dtype, (1,)), ())
    scalar_type = emit.tensor_type((), dtype)
    out_shape = [d for i, d in enumerate(shape) if i not in axes]
    op = stablehlo.ReduceOp([emit.tensor_type(out_shape, dtype)], [x], [init_value], emit.i64_array(axes))
    block = op.body.blocks.append(scalar_type, scalar_type)
    with ir.InsertionPoint(block):
        stablehlo.ReturnOp([body_op(block.arguments[0], block.arguments[1]).result])
    result = op.result
    if keepdims:
        result = emit.reshape(result, [1 if i in axes else d for i, d in enumerate(shape)])
    return result


def _reduce_keep(x: ir.Value, axes: Sequence[int], body_op: type, init: float) -> ir.Value:
    """Reduces ``x`` over ``axes`` and broadcasts the result back to ``x``'s shape."""
    reduced = _reduce(x, axes, body_op, init, keepdims=True)
    return emit.broadcast_to(reduced, emit.static_shape_of(x))


def _wide_dtype(dtype: DataType) -> DataType:
    """The dtype a reduction over ``dtype`` is computed in (f32 for f16 and bf16)."""
    return DataType.FLOAT if dtype in _HALF_FLOATS else dtype


def _softmax_axes(ctx: LoweringContext, node: OnnxNode, rank: int) -> list[int]:
    """The axes Softmax, LogSoftmax and Hardmax run over for the node's revision."""
    axis = ctx.axis(node.attr_int("axis"), rank)
    if node.since_version >= 13:
        return [axis] if rank else []
    return list(range(axis, rank))


def _shifted_exp(x: ir.Value, axes: Sequence[int]) -> tuple[ir.Value, ir.Value]:
    """``(x - max(x), sum(exp(x - max(x))))`` over ``axes``, both of ``x``'s shape."""
    shifted = stablehlo.SubtractOp(x, _reduce_keep(x, axes, stablehlo.MaxOp, -np.inf)).result
    total = _reduce_keep(stablehlo.ExpOp(shifted).result, axes, stablehlo.AddOp, 0)
    return shifted, total


# Softmax family ------------------------------------------------------------------------------


@lowering("Softmax", since=1)  # 1: coerced to 2-D at `axis` (default 1)
@lowering("Softmax", since=11)  # 11: negative `axis` allowed; same coercion
@lowering("Softmax", since=13)  # 13: one axis, default -1 (see _softmax_axes)
def lower_softmax(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value]:
    """Lowers Softmax to exp(x - max) / sum(exp(x - max)) over the op's axes.

    Spec: Softmax-1/11 (axes [axis, rank)), Softmax-13 (the one axis).
    Shapes: input [d0, ..., dn], static.
    Dtypes: f16, bf16 (computed in f32), f32, f64.
    Raises: ShapeError if `axis` is out of range.
    """
    x = ctx.input(0)
    dtype = emit.dtype_of(x)
    axes = _softmax_axes(ctx, node, emit.rank_of(x))
    wide = emit.convert(x, _wide_dtype(dtype))
    shifted, total = _shifted_exp(wide, axes)
    result = stablehlo.DivOp(stablehlo.ExpOp(shifted).result, total).result
    return [emit.convert(result, dtype)]


@lowering("LogSoftmax", since=1)  # 1: coerced to 2-D at `axis` (default 1)
@lowering("LogSoftmax", since=11)  # 11: negative `axis` allowed; same coercion
@lowering("LogSoftmax", since=13)  # 13: one axis, default -1 (see _softmax_axes)
def lower_log_softmax(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value]:
    """Lowers LogSoftmax to (x - max) - log(sum(exp(x - max))) over the op's axes.

    Spec: LogSoftmax-1/11 (axes [axis, rank)), LogSoftmax-13 (the one axis).
    Shapes: input [d0, ..., dn], static.
    Dtypes: f16, bf16 (computed in f32), f32, f64.
    Raises: ShapeError if `axis` is out of range.
    """
    x = ctx.input(0)
    dtype = emit.dtype_of(x)
    axes = _softmax_axes(ctx, node, emit.rank_of(x))
    wide = emit.convert(x, _wide_dtype(dtype))
    shifted, total = _shifted_exp(wide, axes)
    result = stablehlo.SubtractOp(shifted, stablehlo.LogOp(total).result).result
    return [emit.convert(result, dtype)]


def _hardmax_last_axis(x: ir.Value) -> ir.Value:
    """One-hot (in ``x``'s dtype) of the first maximum along the last axis of ``x``."""
    shape = emit.static_shape_of(x)
    axis = len(shape) - 1
    is_max = emit.compare(x, _reduce_keep(x, [axis], stablehlo.MaxOp, -np.inf), "EQ")
    index = stablehlo.IotaOp(emit.tensor_type(shape, DataType.INT64), axis).result
    candidates = stablehlo.SelectOp(is_max, index, emit.splat(shape[axis], DataType.INT64, shape)).result
    first = _reduce_keep(candidates, [axis], stablehlo.MinOp, np.iinfo(np.int64).max)
    return emit.convert(emit.compare(index, first, "EQ"), emit.dtype_of(x))


@lowering("Hardmax", since=1)  # 1: coerced to 2-D at `axis` (default 1)
@lowering("Hardmax", since=11)  # 11: negative `axis` allowed; same coercion
@lowering("Hardmax", since=13)  # 13: one axis, default -1
def lower_hardmax(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value]:
    """Lowers Hardmax to a one-hot of the first maximum (iota, compare, reduce min).

    Before 13 the trailing block ``[axis, rank)`` is flattened and the one-hot picks the first
    maximum of the flattened block (row-major order); from 13 on it runs along ``axis``, which
    is moved last for the computation and back after.

    Spec: Hardmax-1/11, Hardmax-13.
    Shapes: input [d0, ..., dn], static.
    Dtypes: f16, bf16, f32, f64.
    Raises: ShapeError if `axis` is out of range.
    """
    x = ctx.input(0)
    shape = emit.static_shape_of(x)
    rank = len(shape)
    if rank == 0:
        return [_splat_like(1, x)]
    axes = _softmax_axes(ctx, node, rank)
    if node.since_version < 13:
        outer = int(np.prod(shape[: axes[0]], dtype=np.int64))
        inner = int(np.prod(shape[axes[0] :], dtype=np.int64))
        flat = _hardmax_last_axis(emit.reshape(x, (outer, inner)))
        return [emit.reshape(flat, shape)]
    axis = axes[0]
    permutation = [d for d in range(rank) if d != axis] + [axis]
    inverse = list(np.argsort(permutation))
    moved = _hardmax_last_axis(emit.transpose(x, permutation))
    return [emit.transpose(moved, inverse)]
