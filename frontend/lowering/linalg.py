"""Lowering rules: linear algebra.

::

    Det(X)   -> Gaussian elimination with partial pivoting, unrolled up to 8x8, a
                stablehlo.while beyond

Einsum is in matmul.py.

Spec: onnx.ai/onnx/operators (Det).
"""

from __future__ import annotations

import math

import numpy as np
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import stablehlo

from onnx_stablehlo.errors import ShapeError
from onnx_stablehlo.frontend import emit
from onnx_stablehlo.frontend.builders import geometry
from onnx_stablehlo.frontend.context import LoweringContext, OnnxNode
from onnx_stablehlo.frontend.dtypes import DataType
from onnx_stablehlo.frontend.registry import lowering


_DET_UNROLL_MAX = 8
"""Det of matrices up to this size is unrolled; larger ones loop in a stablehlo.while."""


def _det_step(a: ir.Value, det: ir.Value, k: ir.Value) -> tuple[ir.Value, ir.Value]:
    """Eliminates column ``k`` (rank-0 int64) of ``a`` [B, n, n]: pivot, swap, subtract.

    Returns the updated matrices and running determinants ``det`` [B] (times the pivot, negated
    when rows were swapped).
    """
    b, n, _ = emit.static_shape_of(a)
    dtype = emit.dtype_of(a)
    i64 = DataType.INT64
    zero = geometry.scalar(0, i64)
    rows = stablehlo.iota(emit.tensor_type([b, n], i64), 1)
    rows3 = stablehlo.iota(emit.tensor_type([b, n, n], i64), 1)
    k2 = emit.broadcast_to(k, [b, n], dims=[])
    k3 = emit.broadcast_to(k, [b, n, n], dims=[])
    f = geometry.Arith([b, n], dtype)

    def column(m: ir.Value) -> ir.Value:
        return emit.reshape(stablehlo.dynamic_slice(m, [zero, zero, k], emit.i64_array([b, n, 1])), [b, n])

    # Partial pivoting: the first row >= k with the largest |a[row, k]|.
    candidates = f.select(emit.compare(rows, k2, "GE"), stablehlo.abs(column(a)), -1.0)
    largest = emit.reduce(candidates, [1], stablehlo.MaxOp, -np.inf)
    is_largest = f.cmp(candidates, emit.broadcast_to(largest, [b, n], dims=[0]), "EQ")
    first = stablehlo.select(is_largest, rows, emit.splat(n - 1, i64, [b, n]))
    pivot_row = emit.reduce(first, [1], stablehlo.MinOp, n - 1)  # [B]
    at_pivot = emit.compare(rows3, emit.broadcast_to(pivot_row, [b, n, n], dims=[0]), "EQ")
    zeros3 = emit.splat(0, dtype, [b, n, n])
    row_p = emit.reduce(stablehlo.select(at_pivot, a, zeros3), [1], stablehlo.AddOp, 0)
    row_k = emit.reshape(stablehlo.dynamic_slice(a, [zero, k, zero], emit.i64_array([b, 1, n])), [b, n])
    spread_p = emit.broadcast_to(row_p, [b, n, n], dims=[0, 2])
    spread_k = emit.broadcast_to(row_k, [b, n, n], dims=[0, 2])
    a = stablehlo.select(
        emit.compare(rows3, k3, "EQ"), spread_p, stablehlo.select(at_pivot, spread_k, a)
    )
    fb = geometry.Arith([b], dtype)
    pivot = emit.reshape(stablehlo.dynamic_slice(row_p, [zero, k], emit.i64_array([b, 1])), [b])
    product = fb.mul(det, pivot)
    swapped = emit.compare(pivot_row, emit.broadcast_to(k, [b], dims=[]), "NE")
    det = fb.select(swapped, stablehlo.negate(product), product)
    # Rows below k lose their multiple of the pivot row (a zero pivot means a zero column).
    safe = fb.select(fb.cmp(pivot, 0.0, "EQ"), 1.0, pivot)
    ratio = stablehlo.divide(column(a), emit.broadcast_to(safe, [b, n], dims=[0]))
    factor = f.select(emit.compare(rows, k2, "GT"), ratio, 0.0)
    update = stablehlo.multiply(emit.broadcast_to(factor, [b, n, n], dims=[0, 1]), spread_p)
    return stablehlo.subtract(a, update), det


@lowering("Det", since=11)
@lowering("Det", since=22)  # 22 added bfloat16
def lower_det(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value]:
    """Lowers Det to Gaussian elimination with partial pivoting (LU, as LAPACK's getrf).

    The determinant is the product of the pivots, negated per row swap. Up to 8x8 the ``n``
    elimination steps are unrolled; larger matrices loop in a stablehlo.while.

    Spec: Det-11/22.
    Shapes: X [*, n, n] static; Y [*].
    Dtypes: float16, bfloat16, float32, float64 (float16/bfloat16 computed in float32).
    Raises: ShapeError if X is not a (batch of) square matrices.
    """
    dtype = geometry.require_float(ctx, 0)
    shape = ctx.input_static_shape(0)
    if len(shape) < 2 or shape[-1] != shape[-2]:
        raise ctx.error(f"X must be [*, n, n], got {list(shape)}", ShapeError)
    n = shape[-1]
    batch_shape = list(shape[:-2])
    count = math.prod(batch_shape)
    compute = geometry.compute_dtype(dtype)
    a = emit.reshape(emit.convert(ctx.input(0), compute), [count, n, n])
    det = emit.splat(1, compute, [count])
    if n <= _DET_UNROLL_MAX:
        for k in range(n):
            a, det = _det_step(a, det, geometry.scalar(k, DataType.INT64))
    else:

        def cond(carry: list[ir.Value]) -> ir.Value:
            return emit.compare(carry[0], geometry.scalar(n, DataType.INT64), "LT")

        def body(carry: list[ir.Value]) -> list[ir.Value]:
            k, matrices, dets = carry
            matrices, dets = _det_step(matrices, dets, k)
            return [geometry.increment(k), matrices, dets]

        det = geometry.while_loop([geometry.scalar(0, DataType.INT64), a, det], cond, body)[2]
    return [emit.convert(emit.reshape(det, batch_shape), dtype)]
