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
from onnx_stablehlo.frontend import builders
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
    b, n, _ = builders.static_shape_of(a)
    dtype = builders.dtype_of(a)
    i64 = DataType.INT64
    zero = builders.splat(0, i64)
    rows = stablehlo.iota(builders.tensor_type([b, n], i64), 1)
    rows3 = stablehlo.iota(builders.tensor_type([b, n, n], i64), 1)
    k2 = builders.broadcast_to(k, [b, n], dims=[])
    k3 = builders.broadcast_to(k, [b, n, n], dims=[])
    f = builders.Arith([b, n], dtype)

    def column(m: ir.Value) -> ir.Value:
        return builders.reshape(stablehlo.dynamic_slice(m, [zero, zero, k], builders.i64_array([b, n, 1])), [b, n])

    # Partial pivoting: the first row >= k with the largest |a[row, k]|.
    candidates = f.select(builders.compare(rows, k2, "GE"), stablehlo.abs(column(a)), -1.0)
    largest = builders.reduce(candidates, [1], stablehlo.MaxOp, -np.inf)
    is_largest = f.cmp(candidates, builders.broadcast_to(largest, [b, n], dims=[0]), "EQ")
    first = stablehlo.select(is_largest, rows, builders.splat(n - 1, i64, [b, n]))
    pivot_row = builders.reduce(first, [1], stablehlo.MinOp, n - 1)  # [B]
    at_pivot = builders.compare(rows3, builders.broadcast_to(pivot_row, [b, n, n], dims=[0]), "EQ")
    zeros3 = builders.splat(0, dtype, [b, n, n])
    row_p = builders.reduce(stablehlo.select(at_pivot, a, zeros3), [1], stablehlo.AddOp, 0)
    row_k = builders.reshape(stablehlo.dynamic_slice(a, [zero, k, zero], builders.i64_array([b, 1, n])), [b, n])
    spread_p = builders.broadcast_to(row_p, [b, n, n], dims=[0, 2])
    spread_k = builders.broadcast_to(row_k, [b, n, n], dims=[0, 2])
    a = stablehlo.select(
        builders.compare(rows3, k3, "EQ"), spread_p, stablehlo.select(at_pivot, spread_k, a)
    )
    fb = builders.Arith([b], dtype)
    pivot = builders.reshape(stablehlo.dynamic_slice(row_p, [zero, k], builders.i64_array([b, 1])), [b])
    product = fb.mul(det, pivot)
    swapped = builders.compare(pivot_row, builders.broadcast_to(k, [b], dims=[]), "NE")
    det = fb.select(swapped, stablehlo.negate(product), product)
    # Rows below k lose their multiple of the pivot row (a zero pivot means a zero column).
    safe = fb.select(fb.cmp(pivot, 0.0, "EQ"), 1.0, pivot)
    ratio = stablehlo.divide(column(a), builders.broadcast_to(safe, [b, n], dims=[0]))
    factor = f.select(builders.compare(rows, k2, "GT"), ratio, 0.0)
    update = stablehlo.multiply(builders.broadcast_to(factor, [b, n, n], dims=[0, 1]), spread_p)
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
    a = builders.reshape(builders.convert(ctx.input(0), compute), [count, n, n])
    det = builders.splat(1, compute, [count])
    if n <= _DET_UNROLL_MAX:
        for k in range(n):
            a, det = _det_step(a, det, builders.splat(k, DataType.INT64))
    else:

        def cond(carry: list[ir.Value]) -> ir.Value:
            return builders.compare(carry[0], builders.splat(n, DataType.INT64), "LT")

        def body(carry: list[ir.Value]) -> list[ir.Value]:
            k, matrices, dets = carry
            matrices, dets = _det_step(matrices, dets, k)
            return [builders.increment(k), matrices, dets]

        det = builders.while_loop([builders.splat(0, DataType.INT64), a, det], cond, body)[2]
    return [builders.convert(builders.reshape(det, batch_shape), dtype)]
