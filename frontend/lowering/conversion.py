"""Lowering rules: dtype conversions (Cast, CastLike) and linear (de)quantization.

- ``Cast``/``CastLike`` -> ``stablehlo.convert``, with ONNX's special cases:
  to bool compares with zero (``emit.convert``); float8 targets with ``saturate=1`` clamp to the
  target's finite range first (so +-inf become +-max, NaN stays NaN); float8e8m0 is built from
  the float32 exponent bits with the ``round_mode`` rounding, as onnx.reference does.
- ``QuantizeLinear`` -> ``clamp(round_nearest_even(x / scale) + zero_point)`` then ``convert``;
  ``DequantizeLinear`` -> ``(x - zero_point) * scale``; ``DynamicQuantizeLinear`` computes the
  uint8 scale and zero point from the input's range with two ``stablehlo.reduce``.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import stablehlo

from onnx_stablehlo.errors import UnsupportedDtypeError
from onnx_stablehlo.frontend import dtypes, emit
from onnx_stablehlo.frontend.context import LoweringContext, OnnxNode
from onnx_stablehlo.frontend.dtypes import DataType
from onnx_stablehlo.frontend.registry import lowering

_SATURATING_FLOAT8 = (
    DataType.FLOAT8E4M3FN,
    DataType.FLOAT8E4M3FNUZ,
    DataType.FLOAT8E5M2,
    DataType.FLOAT8E5M2FNUZ,
)
_ROUND_MODES = ("up", "down", "nearest")
_SUB_WORD_INTEGERS = (
    DataType.INT2,
    DataType.UINT2,
    DataType.INT4,
    DataType.UINT4,
    DataType.INT8,
    DataType.UINT8,
    DataType.INT16,
    DataType.UINT16,
)


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


def _splat(value: float | int | bool, dtype: DataType, shape: tuple[int, ...]) -> ir.Value:
    """``emit.splat`` that keeps a 0-d shape 0-d (``emit.splat`` widens it to ``[1]`` today)."""
    return emit.reshape(emit.splat(value, dtype, shape), shape)


def _convert(x: ir.Value, to: DataType) -> ir.Value:
    """``emit.convert``, with the compare-with-zero for bool targets done here for 0-d operands too."""
    source = emit.dtype_of(x)
    if to == DataType.BOOL and source != DataType.BOOL:
        return emit.compare(x, _splat(0, source, emit.static_shape_of(x)), "NE")
    return emit.convert(x, to)


def cast(x: ir.Value, to: DataType, *, saturate: bool = True, round_mode: str = "up") -> ir.Value:
    """ONNX Cast semantics for numeric and bool types.

    Args:
        x: the operand.
        to: the target dtype.
        saturate: for float8 targets, clamp out-of-range values (and +-inf) to the finite range.
        round_mode: for float8e8m0 targets, ``up``, ``down`` or ``nearest``.
    """
    source = emit.dtype_of(x)
    if source == to:
        return x
    if to == DataType.FLOAT8E8M0:
        return _to_float8e8m0(x, saturate, round_mode)
    if to in _SATURATING_FLOAT8 and saturate and dtypes.is_float(source):
        info = ml_dtypes.finfo(dtypes.numpy_dtype(to))
        shape = emit.static_shape_of(x)
        x = stablehlo.ClampOp(
            _splat(float(info.min), source, shape), x, _splat(float(info.max), source, shape)
        ).result
    if dtypes.is_float(source) and to in _SUB_WORD_INTEGERS:
        # Through int32, so out-of-range values wrap (as onnx.reference and C casts do) rather
        # than saturate (as XLA's float -> narrow int convert does).
        x = emit.convert(x, DataType.INT32)
    return _convert(x, to)


def _to_float8e8m0(x: ir.Value, saturate: bool, round_mode: str) -> ir.Value:
    """float8e8m0 (a biased power-of-two exponent) from the float32 exponent and mantissa bits."""
    shape = emit.static_shape_of(x)
    u32 = DataType.UINT32

    def const(value: int) -> ir.Value:
        return _splat(value, u32, shape)

    x = emit.convert(x, DataType.FLOAT)
    bits = stablehlo.BitcastConvertOp(emit.tensor_type(shape, u32), x).result
    exponent = stablehlo.AndOp(stablehlo.ShiftRightLogicalOp(bits, const(23)).result, const(0xFF)).result
    special = emit.compare(exponent, const(0xFF), "EQ")
    if round_mode == "up":
        round_up = emit.compare(stablehlo.AndOp(bits, const(0x7FFFFF)).result, const(0), "NE")
    elif round_mode == "nearest":
        guard = emit.compare(stablehlo.AndOp(bits, const(0x400000)).result, const(0), "NE")
        rest = emit.compare(stablehlo.AndOp(bits, const(0x3FFFFF)).result, const(0), "NE")
        lsb = emit.compare(exponent, const(0), "NE")
        round_up = stablehlo.AndOp(guard, stablehlo.OrOp(rest, lsb).result).result
    else:
        round_up = _splat(False, DataType.BOOL, shape)
    if saturate:
        at_max = emit.compare(exponent, const(0xFE), "EQ")
        round_up = stablehlo.AndOp(round_up, stablehlo.NotOp(at_max).result).result
    exponent = stablehlo.AddOp(exponent, emit.convert(round_up, u32)).result
    exponent = stablehlo.SelectOp(special, const(0xFF), exponent).result
    # An exponent rounded up past 0xFE lands on 0xFF (NaN), as the reference's uint8 wrap does.
    byte = emit.convert(stablehlo.AndOp(exponent, const(0xFF)).result, DataType.UINT8)
    return stablehlo.BitcastConvertOp(emit.tensor_type(shape, DataType.FLOAT8E8M0), byte).result


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
    Deviations: float -> integer out of range is whatever XLA's convert gives (the spec leaves
        it undefined).
    Raises: UnsupportedDtypeError for STRING and float6; UnsupportedAttributeError for an unknown
        `to` or `round_mode`.
    """
    to = _target_dtype(ctx, node.attr_int("to"))
    _check_source(ctx, 0)
    saturate, round_mode = _cast_attributes(ctx, node)
    return [cast(ctx.input(0), to, saturate=saturate, round_mode=round_mode)]


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
    return [cast(ctx.input(0), to, saturate=saturate, round_mode=round_mode)]


def _check_source(ctx: LoweringContext, index: int) -> None:
    dtype = ctx.input_dtype(index)
    try:
        dtypes.mlir_element_type(dtype)
    except UnsupportedDtypeError:
        raise ctx.unsupported_dtype(dtype, "numeric and bool types") from None
