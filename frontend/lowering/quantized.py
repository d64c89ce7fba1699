"""Lowering rules: onnxruntime's ``com.microsoft`` quantized operators (QOperator format).

``onnxruntime.quantization.quantize_static(..., quant_format=QuantFormat.QOperator)`` writes
these next to the standard QLinearConv/QLinearMatMul (``conv.py``, ``matmul.py``):

    QLinearAdd / QLinearMul (a, b)      -> int32 (a - za), (b - zb); float32 rescale; round
    QLinearSigmoid / QLinearLeakyRelu /
    QLinearSoftmax (x)                  -> dequantize, the float op, quantize
    QLinearConcat (x_i)                 -> each input requantized to Y's scale, concatenate
    QLinearGlobalAveragePool (x)        -> int32 sum over the spatial dims, one float rescale
    QLinearAveragePool (x)              -> dequantize, AveragePool's reduce_window, quantize
    QGemm (a, b, c)                     -> integer_matmul (int8 dot_general) + int32 bias,
                                           float rescale; float output without y_scale

Every scale and zero point is per tensor (a scalar or one element), except QGemm's b_scale /
b_zero_point which may be per output column. Rounding is round-half-to-even, as MLAS's
``_mm_cvtps_epi32``; results can differ from onnxruntime by one quantization step where MLAS
rounds an intermediate in another order (lookup tables for the sigmoid, fused multiply-adds).

Spec: github.com/microsoft/onnxruntime/blob/main/docs/ContribOperators.md (com.microsoft).
"""

from __future__ import annotations

import numpy as np
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import stablehlo

from onnx_stablehlo.errors import ShapeError
from onnx_stablehlo.frontend import builders, dtypes
from onnx_stablehlo.frontend.builders import windows
from onnx_stablehlo.frontend.context import LoweringContext, OnnxNode
from onnx_stablehlo.frontend.dtypes import DataType
from onnx_stablehlo.frontend.registry import lowering

_MS = "com.microsoft"
_F32 = DataType.FLOAT
_QUANTIZED = (DataType.INT8, DataType.UINT8)


def _scalar(ctx: LoweringContext, index: int, what: str) -> ir.Value:
    """Input ``index`` (a per-tensor scale or zero point) as a rank-0 value."""
    value = ctx.input(index)
    shape = builders.dims_of(value)
    if int(np.prod([d for d in shape if isinstance(d, int)])) != 1 or not all(isinstance(d, int) for d in shape):
        raise ctx.error(f"{what} ('{ctx.node.input_names[index]}') must be one value, got shape {list(shape)}", ShapeError)
    return builders.reshape(value, ())


def _zero_point(ctx: LoweringContext, index: int, dtype: DataType) -> ir.Value:
    """A zero point as rank-0 ``dtype`` (0 when omitted)."""
    if not ctx.has_input(index):
        return builders.splat(0, dtype)
    return builders.convert(_scalar(ctx, index, "zero point"), dtype)


def _quantized_input(ctx: LoweringContext, index: int) -> ir.Value:
    x = ctx.input(index)
    if builders.dtype_of(x) not in _QUANTIZED:
        raise ctx.unsupported_dtype(builders.dtype_of(x), "int8, uint8")
    return x


def _full(value: ir.Value, like: ir.Value) -> ir.Value:
    return builders.broadcast_to(value, builders.dims_of(like), dims=[])


def _dequantize(ctx: LoweringContext, x_index: int, scale_index: int, zero_index: int) -> ir.Value:
    """``(x - zero_point) * scale`` in float32."""
    x = _quantized_input(ctx, x_index)
    centered = stablehlo.subtract(builders.convert(x, _F32), _full(_zero_point(ctx, zero_index, _F32), x))
    return stablehlo.multiply(centered, _full(builders.convert(_scalar(ctx, scale_index, "scale"), _F32), x))


def _output_dtype(ctx: LoweringContext, zero_index: int, default: DataType) -> DataType:
    dtype = ctx.input_dtype(zero_index) if ctx.has_input(zero_index) else default
    if dtype not in _QUANTIZED:
        raise ctx.unsupported_dtype(dtype, "int8, uint8")
    return dtype


def _saturate(q: ir.Value, dtype: DataType) -> ir.Value:
    """Clamps float32 ``q`` (already rounded, zero point added) to ``dtype``'s range, converts."""
    info = np.iinfo(dtypes.numpy_dtype(dtype))
    shape = builders.dims_of(q)
    low, high = builders.splat(float(info.min), _F32, shape), builders.splat(float(info.max), _F32, shape)
    return builders.convert(stablehlo.clamp(low, q, high), dtype)


def _quantize(ctx: LoweringContext, y: ir.Value, scale_index: int, zero_index: int, dtype: DataType) -> ir.Value:
    """``saturate(round_half_even(y / scale) + zero_point)``."""
    scale = _full(builders.convert(_scalar(ctx, scale_index, "scale"), _F32), y)
    q = stablehlo.round_nearest_even(builders.divide(y, scale))
    q = stablehlo.add(q, _full(_zero_point(ctx, zero_index, _F32), y))
    return _saturate(q, dtype)


def _ratio(ctx: LoweringContext, numerator: list[int], denominator: int) -> ir.Value:
    """``prod(scales[numerator]) / scales[denominator]`` as a float32 scalar."""
    value = builders.convert(_scalar(ctx, numerator[0], "scale"), _F32)
    for index in numerator[1:]:
        value = stablehlo.multiply(value, builders.convert(_scalar(ctx, index, "scale"), _F32))
    return builders.divide(value, builders.convert(_scalar(ctx, denominator, "scale"), _F32))


def _centered_int(ctx: LoweringContext, x_index: int, zero_index: int, shape) -> ir.Value:
    x = _quantized_input(ctx, x_index)
    centered = stablehlo.subtract(
        builders.convert(x, DataType.INT32), _full(_zero_point(ctx, zero_index, DataType.INT32), x)
    )
    return builders.broadcast_to(centered, shape)


@lowering("QLinearAdd", since=1, domain=_MS)
def lower_qlinear_add(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value]:
    """Lowers QLinearAdd: ``C = round((a - za) * sa/sc + (b - zb) * sb/sc) + zc``, saturated.

    Spec: com.microsoft QLinearAdd-1.
    Shapes: A, B broadcast (numpy); scales and zero points per tensor.
    Dtypes: int8, uint8 (C has C_zero_point's dtype).
    """
    shape = builders.broadcast_shapes(builders.dims_of(ctx.input(0)), builders.dims_of(ctx.input(3)))
    a = builders.convert(_centered_int(ctx, 0, 2, shape), _F32)
    b = builders.convert(_centered_int(ctx, 3, 5, shape), _F32)
    ra = builders.broadcast_to(_ratio(ctx, [1], 6), shape, dims=[])
    rb = builders.broadcast_to(_ratio(ctx, [4], 6), shape, dims=[])
    total = stablehlo.add(stablehlo.multiply(a, ra), stablehlo.multiply(b, rb))
    q = stablehlo.add(stablehlo.round_nearest_even(total), builders.broadcast_to(_zero_point(ctx, 7, _F32), shape, dims=[]))
    return [_saturate(q, _output_dtype(ctx, 7, builders.dtype_of(ctx.input(0))))]


@lowering("QLinearMul", since=1, domain=_MS)
def lower_qlinear_mul(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value]:
    """Lowers QLinearMul: ``C = round((a - za)(b - zb) * sa sb / sc) + zc``, saturated.

    Spec: com.microsoft QLinearMul-1.
    Shapes: A, B broadcast (numpy); scales and zero points per tensor.
    Dtypes: int8, uint8.
    """
    shape = builders.broadcast_shapes(builders.dims_of(ctx.input(0)), builders.dims_of(ctx.input(3)))
    product = stablehlo.multiply(_centered_int(ctx, 0, 2, shape), _centered_int(ctx, 3, 5, shape))
    scaled = stablehlo.multiply(builders.convert(product, _F32), builders.broadcast_to(_ratio(ctx, [1, 4], 6), shape, dims=[]))
    q = stablehlo.add(stablehlo.round_nearest_even(scaled), builders.broadcast_to(_zero_point(ctx, 7, _F32), shape, dims=[]))
    return [_saturate(q, _output_dtype(ctx, 7, builders.dtype_of(ctx.input(0))))]


def _pointwise(ctx: LoweringContext, function) -> list[ir.Value]:
    """``quantize(function(dequantize(x)))`` for the (X, X_scale, X_zp, Y_scale, Y_zp) ops."""
    y = function(_dequantize(ctx, 0, 1, 2))
    return [_quantize(ctx, y, 3, 4, _output_dtype(ctx, 4, builders.dtype_of(ctx.input(0))))]


@lowering("QLinearSigmoid", since=1, domain=_MS)
def lower_qlinear_sigmoid(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value]:
    """Lowers QLinearSigmoid to dequantize, logistic, quantize.

    Spec: com.microsoft QLinearSigmoid-1.
    Shapes: any; scales and zero points per tensor.
    Dtypes: int8, uint8.
    Deviations: onnxruntime reads a 256-entry lookup table built the same way; equal.
    """
    return _pointwise(ctx, lambda v: stablehlo.logistic(v))


@lowering("QLinearLeakyRelu", since=1, domain=_MS)
def lower_qlinear_leaky_relu(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value]:
    """Lowers QLinearLeakyRelu to dequantize, ``select(v >= 0, v, alpha v)``, quantize.

    Spec: com.microsoft QLinearLeakyRelu-1.
    Shapes: any; scales and zero points per tensor.
    Dtypes: int8, uint8.
    """
    alpha = node.attr_float("alpha", 0.01)

    def leaky(v: ir.Value) -> ir.Value:
        negative = builders.compare(v, builders.full_like(v, 0.0), "LT")
        return stablehlo.select(negative, stablehlo.multiply(v, builders.full_like(v, alpha)), v)

    return _pointwise(ctx, leaky)


@lowering("QLinearSoftmax", since=1, domain=_MS)
def lower_qlinear_softmax(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value]:
    """Lowers QLinearSoftmax to dequantize, softmax over ``axis``, quantize.

    ``opset`` < 13 (the attribute) flattens from ``axis`` on, as Softmax-1/11 do.

    Spec: com.microsoft QLinearSoftmax-1.
    Shapes: any; scales and zero points per tensor.
    Dtypes: int8, uint8.
    """
    rank = ctx.input_rank(0)
    axis = ctx.axis(node.attr_int("axis", -1), rank)
    legacy = node.attr_int("opset", 13) < 13

    def softmax(v: ir.Value) -> ir.Value:
        axes = list(range(axis, rank)) if legacy else [axis]
        top = builders.reduce(v, axes, stablehlo.MaxOp, -np.inf, keepdims=True)
        e = stablehlo.exponential(stablehlo.subtract(v, builders.broadcast_to(top, builders.dims_of(v))))
        total = builders.reduce(e, axes, stablehlo.AddOp, 0.0, keepdims=True)
        return stablehlo.divide(e, builders.broadcast_to(total, builders.dims_of(v)))

    return _pointwise(ctx, softmax)


@lowering("QLinearConcat", since=1, domain=_MS)
def lower_qlinear_concat(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value]:
    """Lowers QLinearConcat: each input requantized to (Y_scale, Y_zero_point), then concatenated.

    Inputs: Y_scale, Y_zero_point, then (X, X_scale, X_zero_point) per tensor.

    Spec: com.microsoft QLinearConcat-1.
    Shapes: inputs equal off ``axis``.
    Dtypes: int8, uint8.
    """
    if (ctx.num_inputs - 2) % 3 or ctx.num_inputs < 5:
        raise ctx.error(f"expects Y_scale, Y_zero_point and triples (X, X_scale, X_zero_point); got {ctx.num_inputs} inputs", ShapeError)
    dtype = _output_dtype(ctx, 1, DataType.UINT8)
    rank = ctx.input_rank(2)
    axis = ctx.axis(node.attr_int("axis"), rank)
    parts = []
    for start in range(2, ctx.num_inputs, 3):
        parts.append(_quantize(ctx, _dequantize(ctx, start, start + 1, start + 2), 0, 1, dtype))
    if len(parts) == 1:
        return parts
    return [stablehlo.concatenate(parts, ir.IntegerAttr.get(ir.IntegerType.get_signless(64), axis))]


@lowering("QLinearGlobalAveragePool", since=1, domain=_MS)
def lower_qlinear_global_average_pool(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value]:
    """Lowers QLinearGlobalAveragePool: int32 sum over the spatial dims, one float rescale.

    ``y = round((sum(x) - count * zx) * sx / (sy * count)) + zy``, saturated.

    Spec: com.microsoft QLinearGlobalAveragePool-1.
    Shapes: X [N, C, D...] (``channels_last=0``) or [N, D..., C]; Y keeps the spatial dims as 1.
    Dtypes: int8, uint8.
    """
    x = _quantized_input(ctx, 0)
    shape = builders.static_shape_of(x)
    rank = len(shape)
    spatial = list(range(1, rank - 1)) if node.attr_int("channels_last", 0) else list(range(2, rank))
    count = int(np.prod([shape[d] for d in spatial]))
    centered = stablehlo.subtract(builders.convert(x, DataType.INT32), _full(_zero_point(ctx, 2, DataType.INT32), x))
    total = builders.reduce(centered, spatial, stablehlo.AddOp, 0, keepdims=True)
    ratio = builders.divide(_ratio(ctx, [1], 3), builders.splat(float(count), _F32))
    scaled = stablehlo.multiply(builders.convert(total, _F32), _full(ratio, total))
    q = stablehlo.add(stablehlo.round_nearest_even(scaled), _full(_zero_point(ctx, 4, _F32), total))
    return [_saturate(q, _output_dtype(ctx, 4, builders.dtype_of(x)))]


@lowering("QLinearAveragePool", since=1, domain=_MS)
def lower_qlinear_average_pool(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value]:
    """Lowers QLinearAveragePool to dequantize, AveragePool's reduce_window and counts, quantize.

    Spec: com.microsoft QLinearAveragePool-1 (AveragePool-10's attributes).
    Shapes: X [N, C, D...] static, or [N, D..., C] with ``channels_last=1`` (pooled as NCHW
        between two transposes).
    Dtypes: int8, uint8.
    Deviations: with ``channels_last=1`` onnxruntime's NHWC kernel rounds in its own order: a
        few percent of its outputs are one quantum from ours (and from its NCHW kernel's).
    """
    channels_last = bool(node.attr_int("channels_last", 0))
    x = _dequantize(ctx, 0, 1, 2)
    rank = len(builders.static_shape_of(x))
    if channels_last:
        x = builders.transpose(x, [0, rank - 1, *range(1, rank - 1)])
    shape = builders.static_shape_of(x)
    kernel = windows.kernel_from_attr(ctx, node, len(shape) - 2)
    window, out = windows.window(ctx, node, shape[2:], kernel, ceil_mode=bool(node.attr_int("ceil_mode", 0)), clamp_same=False)
    (total,) = windows.reduce_window([x], [0], window, out, lambda a, b: [stablehlo.add(a[0], b[0])])
    counts = windows.window_counts(shape[2:], window, out, include_pad=bool(node.attr_int("count_include_pad", 0)))
    out_shape = builders.static_shape_of(total)
    mean = builders.divide(total, builders.broadcast_to(builders.constant(counts, _F32), out_shape, dims=range(2, len(out_shape))))
    if channels_last:
        mean = builders.transpose(mean, [0, *range(2, rank), 1])
    return [_quantize(ctx, mean, 3, 4, _output_dtype(ctx, 4, builders.dtype_of(ctx.input(0))))]


@lowering("QGemm", since=1, domain=_MS)
def lower_qgemm(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value]:
    """Lowers QGemm: an int8 dot_general of the centered operands, int32 bias C, float rescale.

    ``acc = (A - za) @ (B - zb) + C``; ``y = alpha * sa * sb * acc``, then quantized with
    (y_scale, y_zero_point) when given, else returned as float32.

    Spec: com.microsoft QGemm-1.
    Shapes: A [M, K] (transA), B [K, N] (transB); b_scale/b_zero_point per tensor or [N];
        C [N] or [M, N] int32.
    Dtypes: A, B int8/uint8; Y int8/uint8 or float32.
    """
    from onnx_stablehlo.frontend.builders import integer_matmul

    a, b = _quantized_input(ctx, 0), _quantized_input(ctx, 3)
    if node.attr_int("transA", 0):
        a = builders.transpose(a, [1, 0])
    if node.attr_int("transB", 0):
        b = builders.transpose(b, [1, 0])
    a_zero = builders.reshape(ctx.input(2), ()) if ctx.has_input(2) else None
    n = builders.static_shape_of(b)[1]
    b_zero = None
    if ctx.has_input(5):
        b_zero = ctx.input(5)
        size = int(np.prod(builders.static_shape_of(b_zero)))
        b_zero = builders.reshape(b_zero, () if size == 1 else (1, n))
    acc = integer_matmul(a, b, a_zero, b_zero)
    shape = builders.static_shape_of(acc)
    if ctx.has_input(6):
        bias = builders.convert(ctx.input(6), DataType.INT32)
        acc = stablehlo.add(acc, builders.broadcast_to(bias, shape))
    b_scale = builders.convert(ctx.input(4), _F32)
    b_size = int(np.prod(builders.static_shape_of(b_scale)))
    b_scale = builders.broadcast_to(builders.reshape(b_scale, () if b_size == 1 else (n,)), shape, dims=[] if b_size == 1 else [1])
    alpha = node.attr_float("alpha", 1.0)
    scale = stablehlo.multiply(
        b_scale, _full(stablehlo.multiply(builders.convert(_scalar(ctx, 1, "a_scale"), _F32), builders.splat(alpha, _F32)), acc)
    )
    y = stablehlo.multiply(builders.convert(acc, _F32), scale)
    if not ctx.has_input(7):
        return [y]
    return [_quantize(ctx, y, 7, 8, _output_dtype(ctx, 8, DataType.UINT8))]
