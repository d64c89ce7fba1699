"""Lowering rules: dtype conversions (Cast, CastLike, BitCast) and linear (de)quantization.

- ``Cast``/``CastLike`` -> ``stablehlo.convert``, with ONNX's special cases:
  to bool compares with zero (``builders.convert``); float8 targets with ``saturate=1`` clamp to the
  target's finite range first (so +-inf become +-max, NaN stays NaN); float8e8m0 is built from
  the float32 exponent bits with the ``round_mode`` rounding, as onnx.reference does; float to
  8/16-bit and sub-byte integers goes through int32 so out-of-range values wrap.
- ``QuantizeLinear`` -> ``clamp(round_nearest_even(x / scale) + zero_point)`` then ``convert``;
  ``DequantizeLinear`` -> ``(x - zero_point) * scale``; ``DynamicQuantizeLinear`` computes the
  uint8 scale and zero point from the input's range with two ``stablehlo.reduce``.
- ``BitCast`` -> ``stablehlo.bitcast_convert`` (bool through uint8; complex through its two
  float halves).
"""

from __future__ import annotations

from collections.abc import Sequence

import ml_dtypes
import numpy as np
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import stablehlo

from onnx_stablehlo.errors import ShapeError, UnsupportedAttributeError, UnsupportedDtypeError
from onnx_stablehlo.frontend import builders, dtypes
from onnx_stablehlo.frontend.context import LoweringContext, OnnxNode
from onnx_stablehlo.frontend.dtypes import DataType
from onnx_stablehlo.frontend.registry import lowering
from onnx_stablehlo.frontend.shapes import Dim, ceil_div, is_static

_ROUND_MODES = ("up", "down", "nearest")


def _target_dtype(ctx: LoweringContext, to: int) -> DataType:
    """The ONNX dtype ``to`` names, checked to have a StableHLO element type."""
    try:
        dtype = DataType(to)
    except ValueError:
        raise ctx.unsupported_attribute("to", to, "an onnx.TensorProto.DataType value") from None
    try:
        dtypes.mlir_element_type(dtype)
    except UnsupportedDtypeError:
        raise ctx.unsupported_dtype(dtype, "numeric and bool types; STRING and float6 have no StableHLO type") from None
    return dtype


def _cast_attributes(ctx: LoweringContext, node: OnnxNode) -> tuple[bool, str]:
    saturate = bool(node.attr_int("saturate", 1))
    round_mode = node.attr_str("round_mode", "up")
    if round_mode not in _ROUND_MODES:
        raise ctx.unsupported_attribute("round_mode", round_mode, ", ".join(_ROUND_MODES))
    return saturate, round_mode


@lowering("Cast", since=6)
@lowering("Cast", since=9)  # 9 added string (not lowered)
@lowering("Cast", since=13)  # 13 added bfloat16
@lowering("Cast", since=19)  # 19 added float8 and `saturate`
@lowering("Cast", since=21)  # 21 added int4/uint4
@lowering("Cast", since=23)  # 23 added float4e2m1
@lowering("Cast", since=24)  # 24 added float8e8m0 and `round_mode`
@lowering("Cast", since=25)  # 25 added int2/uint2
@lowering("Cast", since=28)  # 28 added float6 (not lowered: no StableHLO type)
def lower_cast(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value]:
    """Lowers Cast to stablehlo.convert (compare with zero for bool, clamp for saturating float8).

    Spec: onnx.ai/onnx/operators/onnx__Cast.html (Cast-6, 9, 13, 19, 21, 23, 24, 25, 28).
    Shapes: any, static.
    Dtypes: every numeric type StableHLO has (float8, float4, int4, int2 included) and bool.
    Deviations: float -> integer truncates toward zero, as onnx.reference and onnxruntime's
        casts to 8 bits and wider do (onnxruntime 1.32's int4/int2 casts round to nearest even
        first: 3.5 gives 4 there, 3 here). The spec leaves float -> integer out of range (and
        NaN/inf) undefined: int32/int64 targets saturate (XLA's convert), narrower ones go
        through int32 and wrap modulo 2^bits, as onnx.reference did with ml_dtypes <= 0.6 (0.7
        gives 0 for int4); the tests compare only in-range elements against oracles.
    Raises: UnsupportedDtypeError for STRING and float6; UnsupportedAttributeError for an unknown
        `to` or `round_mode`.
    """
    to = _target_dtype(ctx, node.attr_int("to"))
    _check_source(ctx, 0)
    saturate, round_mode = _cast_attributes(ctx, node)
    return [builders.cast(ctx.input(0), to, saturate=saturate, round_mode=round_mode)]


@lowering("CastLike", since=15)
@lowering("CastLike", since=19)  # 19 added float8 and `saturate`
@lowering("CastLike", since=21)  # 21 added int4/uint4
@lowering("CastLike", since=23)  # 23 added float4e2m1
@lowering("CastLike", since=24)  # 24 added float8e8m0 and `round_mode`
@lowering("CastLike", since=25)  # 25 added int2/uint2
def lower_cast_like(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value]:
    """Lowers CastLike(x, like) as Cast to the dtype of ``like`` (whose values are unused).

    Spec: onnx.ai/onnx/operators/onnx__CastLike.html (CastLike-15, 19, 21, 23, 24, 25).
    Shapes: any, static.
    Dtypes: as Cast.
    Raises: UnsupportedDtypeError for STRING.
    """
    to = _target_dtype(ctx, ctx.input_dtype(1))
    _check_source(ctx, 0)
    saturate, round_mode = _cast_attributes(ctx, node)
    return [builders.cast(ctx.input(0), to, saturate=saturate, round_mode=round_mode)]


def _check_source(ctx: LoweringContext, index: int) -> None:
    dtype = ctx.input_dtype(index)
    try:
        dtypes.mlir_element_type(dtype)
    except UnsupportedDtypeError:
        raise ctx.unsupported_dtype(dtype, "numeric and bool types") from None


# Linear quantization --------------------------------------------------------------------------


def quantization_parameter(
    ctx: LoweringContext, value: ir.Value, shape: tuple[Dim, ...], axis: int, block_size: int
) -> ir.Value:
    """A scale or zero point broadcast to the data's ``shape``.

    A scalar (or one-element) value is per-tensor, a 1-D one runs along ``axis``, and with
    ``block_size > 0`` each entry covers ``block_size`` consecutive elements along ``axis``.

    Symbolic dims: a 1-D value of symbolic length is broadcast along ``axis`` with
    dynamic_broadcast_in_dim, which also expands a length of 1 (per-tensor) at run time (for a
    rank where ``axis`` does not exist, it is per-tensor: a one-element reshape); a
    blocked value needs ``ceil(d / block_size)`` entries along ``axis`` (checked where both are
    static; otherwise when the module is refined to the feeds' shapes).

    Raises:
        ShapeError: the value's shape fits none of these.
    """
    given = builders.dims_of(value)
    rank = len(shape)
    per_tensor = not given or (
        is_static(given) and int(np.prod(given, dtype=np.int64)) == 1 and (len(given) <= 1 or not block_size)
    )
    # A 1-D value of symbolic length whose axis does not exist can only be one element.
    per_tensor = per_tensor or (len(given) == 1 and not block_size and not -rank <= axis < rank)
    if per_tensor:
        return builders.broadcast_to(builders.reshape(value, ()), shape, dims=[])
    axis = ctx.axis(axis, rank)
    if not block_size:
        if len(given) != 1 or (is_static([given[0], shape[axis]]) and given[0] != shape[axis]):
            raise ctx.error(
                f"per-axis scale/zero point must be [{shape[axis]}] (dim {axis} of "
                f"{list(map(str, shape))}), got {list(map(str, given))}",
                ShapeError,
            )
        return builders.broadcast_to(value, shape, dims=[axis])
    blocks = ceil_div(shape[axis], block_size)
    expected = tuple(blocks if i == axis else d for i, d in enumerate(shape))
    if len(given) != rank or any(
        is_static([g, e]) and g != e for g, e in zip(given, expected)
    ):
        raise ctx.error(
            f"blocked scale/zero point must be {list(map(str, expected))} for block_size={block_size}, "
            f"got {list(map(str, given))}",
            ShapeError,
        )
    # [.., nb, ..] -> [.., nb, B, ..] -> [.., nb * B, ..] -> slice to D.
    widened = [*shape[:axis], blocks, block_size, *shape[axis + 1 :]]
    dims = [i if i <= axis else i + 1 for i in range(rank)]
    value = builders.broadcast_to(value, widened, dims=dims)
    value = builders.reshape(value, [*shape[:axis], blocks * block_size, *shape[axis + 1 :]])
    if blocks * block_size != shape[axis]:
        value = _slice_to(value, shape)
    return value


def _slice_to(value: ir.Value, shape: Sequence[Dim]) -> ir.Value:
    """``value[:d0, :d1, ...]``: stablehlo.slice, or real_dynamic_slice for symbolic dims."""
    rank = len(shape)
    if is_static(shape) and is_static(builders.dims_of(value)):
        return stablehlo.slice(value, [0] * rank, list(shape), [1] * rank)
    result = stablehlo.real_dynamic_slice(
        builders.tensor_type(shape, builders.dtype_of(value)),
        value,
        builders.shape_tensor([0] * rank),
        builders.shape_tensor(shape),
        builders.shape_tensor([1] * rank),
    )
    return builders.record(result, shape)


_QUANTIZED_TYPES = ", ".join(t.name for t in [*builders.INTEGER_RANGES, *builders.SATURATING_FLOAT8, DataType.FLOAT4E2M1])


@lowering("QuantizeLinear", since=10)
@lowering("QuantizeLinear", since=13)  # 13 added `axis` (per-axis scales)
@lowering("QuantizeLinear", since=19)  # 19 added float16/bfloat16 inputs, float8 outputs, `saturate`
@lowering("QuantizeLinear", since=21)  # 21 added blocked quantization, int4/int16 and `output_dtype`
@lowering("QuantizeLinear", since=23)  # 23 added float4e2m1 and `precision`
@lowering("QuantizeLinear", since=24)  # 24 added float8e8m0 scales
@lowering("QuantizeLinear", since=25)  # 25 added int2/uint2
@lowering("QuantizeLinear", since=28)  # 28 added float6 (not lowered)
def lower_quantize_linear(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value]:
    """Lowers QuantizeLinear to divide, round_nearest_even, add, clamp and convert.

    Spec: onnx.ai/onnx/operators/onnx__QuantizeLinear.html (QuantizeLinear-10, 13, 19, 21, 23,
    24, 25, 28).
    Shapes: x [d0, ..., dn], symbolic dims allowed; scale and zero point scalar, [d_axis], or
        blocked (see quantization_parameter).
    Dtypes: x f32, f16, bf16, i32; output int8/uint8/int16/uint16/int4/uint4/int2/uint2,
        float8 (saturating or not) and float4e2m1.
    Raises: ShapeError for a scale shape that fits no granularity; UnsupportedDtypeError for
        float6 targets; UnsupportedAttributeError when `output_dtype` disagrees with the zero point.
    """
    x, scale = ctx.input(0), ctx.input(1)
    shape = builders.dims_of(ctx.input(0))
    axis, block_size = node.attr_int("axis", 1), node.attr_int("block_size", 0)
    output_dtype = node.attr_int("output_dtype", 0)
    if ctx.has_input(2):
        target = ctx.input_dtype(2)
        if output_dtype and output_dtype != int(target):
            raise ctx.unsupported_attribute(
                "output_dtype", output_dtype, f"0 or the zero point's dtype ({int(target)}, {target.name})"
            )
    else:
        target = _target_dtype(ctx, output_dtype) if output_dtype else DataType.UINT8
    if target not in builders.INTEGER_RANGES and target not in builders.SATURATING_FLOAT8 and target != DataType.FLOAT4E2M1:
        raise ctx.unsupported_dtype(target, _QUANTIZED_TYPES)
    precision = node.attr_int("precision", 0)
    compute = _target_dtype(ctx, precision) if precision else None
    scale = quantization_parameter(ctx, scale, shape, axis, block_size)
    zero_point = ctx.optional_input(2)
    if zero_point is not None:
        zero_point = quantization_parameter(ctx, zero_point, shape, axis, block_size)
    saturate = bool(node.attr_int("saturate", 1))
    return [builders.quantize(x, scale, zero_point, target, saturate=saturate, compute=compute)]


@lowering("DequantizeLinear", since=10)
@lowering("DequantizeLinear", since=13)  # 13 added `axis` (per-axis scales)
@lowering("DequantizeLinear", since=19)  # 19 added float8 inputs and float16/bfloat16 scales
@lowering("DequantizeLinear", since=21)  # 21 added blocked quantization and int4/int16
@lowering("DequantizeLinear", since=23)  # 23 added float4e2m1 and `output_dtype`
@lowering("DequantizeLinear", since=24)  # 24 added float8e8m0 scales
@lowering("DequantizeLinear", since=25)  # 25 added int2/uint2
@lowering("DequantizeLinear", since=28)  # 28 added float6 (not lowered)
def lower_dequantize_linear(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value]:
    """Lowers DequantizeLinear to ``(x - zero_point) * scale`` computed in float32.

    Spec: onnx.ai/onnx/operators/onnx__DequantizeLinear.html (DequantizeLinear-10, 13, 19, 21,
    23, 24, 25, 28).
    Shapes: x [d0, ..., dn], symbolic dims allowed; scale and zero point scalar, [d_axis], or
        blocked (see quantization_parameter).
    Dtypes: x int8/uint8/int16/uint16/int32/int4/uint4/int2/uint2, float8, float4e2m1; the
        result has the scale's dtype, or `output_dtype`.
    Raises: ShapeError for a scale shape that fits no granularity.
    """
    x, scale = ctx.input(0), ctx.input(1)
    shape = builders.dims_of(ctx.input(0))
    axis, block_size = node.attr_int("axis", 1), node.attr_int("block_size", 0)
    output_dtype = node.attr_int("output_dtype", 0)
    target = _target_dtype(ctx, output_dtype) if output_dtype else ctx.input_dtype(1)
    compute = DataType.FLOAT
    dx = builders.convert(x, compute)
    x_dtype = ctx.input_dtype(0)
    if ctx.has_input(2) and not (x_dtype in builders.SATURATING_FLOAT8 or x_dtype == DataType.FLOAT4E2M1):
        zero_point = quantization_parameter(ctx, ctx.input(2), shape, axis, block_size)
        dx = stablehlo.subtract(dx, builders.convert(zero_point, compute))
    scale = builders.convert(quantization_parameter(ctx, scale, shape, axis, block_size), compute)
    return [builders.convert(stablehlo.multiply(dx, scale), target)]


@lowering("DynamicQuantizeLinear", since=11)
def lower_dynamic_quantize_linear(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value]:
    """Lowers DynamicQuantizeLinear: uint8 scale and zero point from the range of x (with 0).

    ``scale = (max(0, max x) - min(0, min x)) / 255`` (1 when that range is empty),
    ``zero_point = round(clamp(-min / scale, 0, 255))``, then QuantizeLinear.

    Spec: onnx.ai/onnx/operators/onnx__DynamicQuantizeLinear.html (DynamicQuantizeLinear-11).
    Shapes: x any, symbolic dims allowed; y_scale and y_zero_point scalars.
    Dtypes: x f32; y and y_zero_point uint8.
    Deviations: for an all-zero x the scale is 1, as onnxruntime gives (onnx.reference: 1/255).
        An infinite x gives an infinite scale and the zero point 255, NaN is left out of the
        range and quantizes to 0, as in onnxruntime.
    """
    return list(builders.dynamic_quantize_uint8(ctx.input(0)))


_BIT_WIDTHS = {
    DataType.BOOL: 8,  # one byte per element in ONNX tensors
    DataType.INT2: 2, DataType.UINT2: 2,
    DataType.INT4: 4, DataType.UINT4: 4, DataType.FLOAT4E2M1: 4,
    DataType.INT8: 8, DataType.UINT8: 8,
    DataType.FLOAT8E4M3FN: 8, DataType.FLOAT8E4M3FNUZ: 8, DataType.FLOAT8E5M2: 8,
    DataType.FLOAT8E5M2FNUZ: 8, DataType.FLOAT8E8M0: 8,
    DataType.INT16: 16, DataType.UINT16: 16, DataType.FLOAT16: 16, DataType.BFLOAT16: 16,
    DataType.INT32: 32, DataType.UINT32: 32, DataType.FLOAT: 32,
    DataType.INT64: 64, DataType.UINT64: 64, DataType.DOUBLE: 64,
    DataType.COMPLEX64: 64, DataType.COMPLEX128: 128,
}


def _bitcast(value: ir.Value, dtype: DataType) -> ir.Value:
    """stablehlo.bitcast_convert between types of equal width (no op for the same type)."""
    if builders.dtype_of(value) == dtype:
        return value
    dims = builders.dims_of(value)
    return builders.record(stablehlo.bitcast_convert(builders.tensor_type(dims, dtype), value), dims)


def _to_bits(value: ir.Value) -> ir.Value:
    """``value`` as a type that bitcast_convert takes: bool as uint8 (0/1 bytes), complex64
    as uint64 ``imag << 32 | real`` (little-endian, as ONNX stores it); others unchanged."""
    dtype = builders.dtype_of(value)
    if dtype == DataType.BOOL:
        return builders.convert(value, DataType.UINT8)
    if dtype == DataType.COMPLEX64:
        half, full = DataType.UINT32, DataType.UINT64
        real = builders.convert(_bitcast(stablehlo.real(value), half), full)
        imag = builders.convert(_bitcast(stablehlo.imag(value), half), full)
        shift = builders.splat(32, full, builders.dims_of(value))
        return stablehlo.or_(stablehlo.shift_left(imag, shift), real)
    return value


def _from_bits(bits: ir.Value, dtype: DataType) -> ir.Value:
    """Inverse of :func:`_to_bits`: reinterprets ``bits`` as ``dtype``."""
    if dtype == DataType.BOOL:
        return builders.convert(_bitcast(bits, DataType.UINT8), DataType.BOOL)
    if dtype == DataType.COMPLEX64:
        part, half, full = DataType.FLOAT, DataType.UINT32, DataType.UINT64
        bits = _bitcast(bits, full)
        shift = builders.splat(32, full, builders.dims_of(bits))
        low = stablehlo.and_(bits, builders.splat(0xFFFFFFFF, full, builders.dims_of(bits)))
        real = _bitcast(builders.convert(low, half), part)
        imag = _bitcast(builders.convert(stablehlo.shift_right_logical(bits, shift), half), part)
        return stablehlo.complex(real, imag)
    return _bitcast(bits, dtype)


@lowering("BitCast", since=26)
def lower_bit_cast(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value]:
    """Lowers BitCast to stablehlo.bitcast_convert; the shape is unchanged.

    Bool is one byte (0 or 1) in ONNX, so it goes through uint8 (a nonzero byte reads as true);
    complex values go through their float halves, the real part in the low bits.

    Spec: BitCast-26.
    Shapes: any, symbolic dims allowed; the result has the same shape.
    Dtypes: every non-string type; input and ``to`` must have the same bit width.
    Raises: UnsupportedAttributeError if ``to`` is not a type of the input's bit width (or
        is string).
    """
    source = ctx.input_dtype(0)
    code = node.attr_int("to")
    try:
        target = DataType(code)
    except ValueError:
        target = None
    width = _BIT_WIDTHS.get(source)
    same_width = sorted(d.name for d, w in _BIT_WIDTHS.items() if w == width)
    if target not in _BIT_WIDTHS or _BIT_WIDTHS[target] != width:
        name = target.name if target is not None else str(code)
        raise ctx.error(
            f"attribute to={code} ({name}) is not supported for a {source.name} input: BitCast needs "
            f"a type of the same bit width ({width} bits; accepted: {', '.join(same_width)})",
            UnsupportedAttributeError,
        )
    value = ctx.input(0)
    if source == target:  # complex128 always ends here: no other type has 128 bits
        return [value]
    return [_from_bits(_to_bits(value), target)]
