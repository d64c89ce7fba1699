"""Helpers shared by the ``ai.onnx.ml`` rules (linear models, SVMs, tree ensembles, preprocessing).

Float inputs (``float_input``, ``as_matrix``), class labels (``labels``: string labels raise
:class:`UnsupportedDtypeError`), the ``post_transform`` scores (softmax, logistic, probit,
rounded once as onnxruntime's float32 kernels do) and the row argmax that picks a label.
"""

from __future__ import annotations

import numpy as np
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import stablehlo

from onnx_stablehlo.errors import ShapeError, UnsupportedDtypeError
from onnx_stablehlo.frontend import builders, dtypes
from onnx_stablehlo.frontend.context import LoweringContext, OnnxNode
from onnx_stablehlo.frontend.dtypes import DataType


ML = "ai.onnx.ml"

NUMERIC_INPUTS = (DataType.FLOAT, DataType.DOUBLE, DataType.INT64, DataType.INT32)


def float_input(ctx: LoweringContext, index: int = 0, keep_double: bool = True) -> ir.Value:
    """Input ``index`` as float32 (float64 kept when ``keep_double``), as onnxruntime reads it."""
    x = ctx.input(index)
    dtype = builders.dtype_of(x)
    if dtype not in NUMERIC_INPUTS:
        raise ctx.unsupported_dtype(dtype, "float32, float64, int64, int32")
    if dtype == DataType.DOUBLE and keep_double:
        return x
    return builders.convert(x, DataType.FLOAT)


def as_matrix(ctx: LoweringContext, x: ir.Value) -> ir.Value:
    """``[N, F]`` from ``[F]`` (one row) or ``[N, F]``; onnxruntime reads rank 1 as one row."""
    shape = builders.dims_of(x)
    if len(shape) == 1:
        return builders.reshape(x, (1, shape[0]))
    if len(shape) != 2:
        raise ctx.error(f"X must have rank 1 or 2, got shape {list(shape)}", ShapeError)
    return x


def labels(ctx: LoweringContext, node: OnnxNode, ints: str, strings: str) -> np.ndarray | None:
    """The int64 class labels, ``None`` when neither attribute is set.

    Raises:
        UnsupportedDtypeError: the labels are strings.
    """
    if node.attr(strings):
        raise ctx.error(
            f"string class labels ('{strings}') reached the lowering: StableHLO has no string type; "
            "load the model with onnx_stablehlo.load, which interns them as int64 ids "
            f"(or convert it with integer labels, '{ints}')",
            UnsupportedDtypeError,
        )
    values = node.attr(ints)
    return None if values is None else np.asarray(values, np.int64)


def rounded_once(function, x: ir.Value) -> ir.Value:
    """``function(x)`` for float32 ``x`` computed in float64 and rounded once.

    XLA's float32 pow, exp and tanh are a few ulp off where onnxruntime's (the C library's)
    are within one; SVM probabilities amplify that. Without float64 on the device
    (``builders.float64_allowed()``) it is computed in float32.
    """
    if builders.dtype_of(x) != DataType.FLOAT or not builders.float64_allowed():
        return function(x)
    return builders.convert(function(builders.convert(x, DataType.DOUBLE)), DataType.FLOAT)


def logistic(x: ir.Value) -> ir.Value:
    """onnxruntime's ``ComputeLogistic``: ``v = 1 / (1 + exp(-|x|))``, ``1 - v`` for x < 0."""
    dtype, shape = builders.dtype_of(x), builders.dims_of(x)
    one = builders.splat(1.0, dtype, shape)
    v = stablehlo.divide(one, stablehlo.add(one, stablehlo.exponential(stablehlo.negate(stablehlo.abs(x)))))
    negative = builders.compare(x, builders.splat(0.0, dtype, shape), "LT")
    return stablehlo.select(negative, stablehlo.subtract(one, v), v)


def probit(x: ir.Value) -> ir.Value:
    """onnxruntime's ``ComputeProbit``: ``1.41421356 * erfinv(2x - 1)`` with its erfinv approximation.

    ``erfinv(y) = sgn(y) sqrt(sqrt(v^2 - ln(1 - y^2) / a) - v)``, ``v = 2 / (pi a) + ln(1 - y^2) / 2``,
    ``a = 0.147`` (Winitzki's formula), with onnxruntime's float32 constants (``pi = 3.14159f``).
    Near ``x = 0.5`` the formula subtracts nearly equal terms, so an ulp of difference in
    ``log`` or ``sqrt`` becomes up to about 1e-4 there (absolute; the approximation itself is
    only good to about 2e-3).
    """
    dtype, shape = builders.dtype_of(x), builders.dims_of(x)
    f32 = np.float32

    def c(value: float) -> ir.Value:
        return builders.splat(float(value), dtype, shape)

    y = stablehlo.subtract(stablehlo.multiply(x, c(2.0)), c(1.0))
    sign = stablehlo.select(builders.compare(y, c(0.0), "LT"), c(-1.0), c(1.0))
    w = stablehlo.multiply(stablehlo.subtract(c(1.0), y), stablehlo.add(c(1.0), y))
    log = rounded_once(lambda v: stablehlo.log(v), w)
    v = stablehlo.add(c(f32(2) / (f32(3.14159) * f32(0.147))), stablehlo.multiply(c(0.5), log))
    v2 = stablehlo.multiply(c(f32(1) / f32(0.147)), log)
    v3 = stablehlo.add(
        stablehlo.negate(v), stablehlo.sqrt(stablehlo.subtract(stablehlo.multiply(v, v), v2))
    )
    erfinv = stablehlo.multiply(sign, stablehlo.sqrt(v3))
    return stablehlo.multiply(c(f32(1.41421356)), erfinv)


def row_max(x: ir.Value) -> ir.Value:
    shape = builders.dims_of(x)
    return builders.broadcast_to(builders.reduce(x, [1], stablehlo.MaxOp, -np.inf), shape, dims=[0])


def row_sum(x: ir.Value, in_order: bool = False) -> ir.Value:
    """Each row's sum, broadcast back to ``x``'s shape.

    ``in_order`` adds the columns left to right (onnxruntime's loop order) for up to 256
    static columns; a ``stablehlo.reduce`` may add them in any order.
    """
    shape = builders.dims_of(x)
    columns = shape[1]
    if in_order and isinstance(columns, int) and columns <= 256:
        total = builders.reshape(builders.slice_axis(x, 1, 0, 1), shape[:1])
        for column in range(1, columns):
            total = stablehlo.add(total, builders.reshape(builders.slice_axis(x, 1, column, column + 1), shape[:1]))
        return builders.broadcast_to(total, shape, dims=[0])
    return builders.broadcast_to(builders.reduce(x, [1], stablehlo.AddOp, 0.0), shape, dims=[0])


def softmax(x: ir.Value, zero: bool) -> ir.Value:
    """Row softmax; ``zero`` (SOFTMAX_ZERO) keeps scores within 1e-7 of 0 at 0, as onnxruntime."""
    e = stablehlo.exponential(stablehlo.subtract(x, row_max(x)))
    if zero:
        near_zero = builders.compare(stablehlo.abs(x), builders.full_like(x, 1e-7), "LE")
        e = stablehlo.select(near_zero, builders.full_like(x, 0.0), e)
    return stablehlo.divide(e, row_sum(e))


POST_TRANSFORMS = ("NONE", "SOFTMAX", "LOGISTIC", "SOFTMAX_ZERO", "PROBIT")


def post_transform(ctx: LoweringContext, name: str, scores: ir.Value) -> ir.Value:
    """Applies a post_transform to ``[N, C]`` scores."""
    if name == "NONE":
        return scores
    if name == "LOGISTIC":
        return logistic(scores)
    if name in ("SOFTMAX", "SOFTMAX_ZERO"):
        return softmax(scores, zero=name == "SOFTMAX_ZERO")
    if name == "PROBIT":
        return probit(scores)
    raise ctx.unsupported_attribute("post_transform", name, ", ".join(POST_TRANSFORMS))


def argmax_rows(x: ir.Value) -> ir.Value:
    """The first index of each row's maximum as int64 ``[N]`` (NaN never wins)."""
    shape = builders.dims_of(x)
    dtype = builders.dtype_of(x)
    index = builders.iota(shape, 1, DataType.INT64)

    def body(acc: list[ir.Value], element: list[ir.Value]) -> list[ir.Value]:
        (acc_value, acc_index), (value, idx) = acc, element
        better = builders.compare(value, acc_value, "GT")
        tie = stablehlo.and_(builders.compare(value, acc_value, "EQ"), builders.compare(idx, acc_index, "LT"))
        take = stablehlo.or_(better, tie)
        return [stablehlo.select(better, value, acc_value), stablehlo.select(take, idx, acc_index)]

    inits = [builders.splat(-np.inf, dtype), builders.splat(0, DataType.INT64)]
    return builders.reduce_many([x, index], inits, [1], body)[1]


def take_labels(labels: np.ndarray, index: ir.Value) -> ir.Value:
    """``labels[index]`` for int64 indices ``[N]`` into a constant label table."""
    return builders.take(builders.constant(labels.astype(np.int64)), index, 0)


def add_row(x: ir.Value, row: np.ndarray) -> ir.Value:
    dtype = builders.dtype_of(x)
    shape = builders.dims_of(x)
    value = builders.broadcast_to(builders.constant(row.astype(dtypes.numpy_dtype(dtype))), shape, dims=[1])
    return stablehlo.add(x, value)
