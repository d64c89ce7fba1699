"""Casts and quantization: ONNX Cast semantics (float8 saturation, float8e8m0, wrapping narrow
integers), QuantizeLinear's formula, and DynamicQuantizeLinear's uint8 per-tensor quantization
(shared by the conversion and quantized families and com.microsoft DynamicQuantizeMatMul)."""

from __future__ import annotations

import ml_dtypes
import numpy as np
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import stablehlo

from onnx_stablehlo.errors import UnsupportedDtypeError
from onnx_stablehlo.frontend import dtypes
from onnx_stablehlo.frontend.builders.arith import divide
from onnx_stablehlo.frontend.builders.core import (
    broadcast_to,
    compare,
    convert,
    dims_of,
    dtype_of,
    record,
    splat,
    tensor_type,
)
from onnx_stablehlo.frontend.builders.reduce import reduce_many
from onnx_stablehlo.frontend.dtypes import DataType

__all__ = [
    "SATURATING_FLOAT8",
    "INTEGER_RANGES",
    "cast",
    "quantize",
    "dynamic_quantize_uint8",
]


SATURATING_FLOAT8 = (
    DataType.FLOAT8E4M3FN,
    DataType.FLOAT8E4M3FNUZ,
    DataType.FLOAT8E5M2,
    DataType.FLOAT8E5M2FNUZ,
)


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


def cast(x: ir.Value, to: DataType, *, saturate: bool = True, round_mode: str = "up") -> ir.Value:
    """ONNX Cast semantics for numeric and bool types.

    Args:
        x: the operand.
        to: the target dtype.
        saturate: for float8 targets, clamp out-of-range values (and +-inf) to the finite range.
        round_mode: for float8e8m0 targets, ``up``, ``down`` or ``nearest``.
    """
    source = dtype_of(x)
    if source == to:
        return x
    if to == DataType.FLOAT8E8M0:
        return _to_float8e8m0(x, saturate, round_mode)
    if to in SATURATING_FLOAT8 and saturate and dtypes.is_float(source):
        info = ml_dtypes.finfo(dtypes.numpy_dtype(to))
        shape = dims_of(x)
        x = stablehlo.clamp(
            splat(float(info.min), source, shape), x, splat(float(info.max), source, shape)
        )
    if dtypes.is_float(source) and to in _SUB_WORD_INTEGERS:
        # Through int32, so out-of-range values wrap (as onnx.reference and C casts do) rather
        # than saturate (as XLA's float -> narrow int convert does).
        x = convert(x, DataType.INT32)
    return convert(x, to)


def _to_float8e8m0(x: ir.Value, saturate: bool, round_mode: str) -> ir.Value:
    """float8e8m0 (a biased power-of-two exponent) from the float32 exponent and mantissa bits."""
    shape = dims_of(x)
    u32 = DataType.UINT32

    def const(value: int) -> ir.Value:
        return splat(value, u32, shape)

    x = convert(x, DataType.FLOAT)
    bits = stablehlo.bitcast_convert(tensor_type(shape, u32), x)
    exponent = stablehlo.and_(stablehlo.shift_right_logical(bits, const(23)), const(0xFF))
    special = compare(exponent, const(0xFF), "EQ")
    if round_mode == "up":
        round_up = compare(stablehlo.and_(bits, const(0x7FFFFF)), const(0), "NE")
    elif round_mode == "nearest":
        guard = compare(stablehlo.and_(bits, const(0x400000)), const(0), "NE")
        rest = compare(stablehlo.and_(bits, const(0x3FFFFF)), const(0), "NE")
        lsb = compare(exponent, const(0), "NE")
        round_up = stablehlo.and_(guard, stablehlo.or_(rest, lsb))
    else:
        round_up = splat(False, DataType.BOOL, shape)
    if saturate:
        at_max = compare(exponent, const(0xFE), "EQ")
        round_up = stablehlo.and_(round_up, stablehlo.not_(at_max))
    exponent = stablehlo.add(exponent, convert(round_up, u32))
    exponent = stablehlo.select(special, const(0xFF), exponent)
    # An exponent rounded up past 0xFE lands on 0xFF (NaN), as the reference's uint8 wrap does.
    byte = convert(stablehlo.and_(exponent, const(0xFF)), DataType.UINT8)
    return stablehlo.bitcast_convert(tensor_type(shape, DataType.FLOAT8E8M0), byte)


INTEGER_RANGES = {
    DataType.UINT8: (0, 255),
    DataType.INT8: (-128, 127),
    DataType.UINT16: (0, 65535),
    DataType.INT16: (-32768, 32767),
    DataType.UINT4: (0, 15),
    DataType.INT4: (-8, 7),
    DataType.UINT2: (0, 3),
    DataType.INT2: (-2, 1),
}


def _promoted_float(*types: DataType) -> DataType:
    """numpy's result type of dividing values of these dtypes (float16 / float32 -> float32)."""
    result = np.result_type(*[dtypes.numpy_dtype(t) for t in types])
    if result.kind != "f" and result != dtypes.numpy_dtype(DataType.BFLOAT16):
        result = np.dtype(np.float64)
    return dtypes.dtype_of_numpy(result)


def quantize(
    x: ir.Value,
    scale: ir.Value,
    zero_point: ir.Value | None,
    target: DataType,
    *,
    saturate: bool = True,
    compute: DataType | None = None,
) -> ir.Value:
    """``saturate(round_half_even(x / scale) + zero_point)`` in ``target`` (scale/zero point already broadcast).

    Float8 targets ignore the zero point and cast with ``saturate``; float4 adds it, as
    onnx.reference does.
    """
    compute = compute or _promoted_float(dtype_of(x), dtype_of(scale))
    q = divide(convert(x, compute), convert(scale, compute))
    shape = dims_of(q)
    if target in INTEGER_RANGES:
        low, high = INTEGER_RANGES[target]
        q = stablehlo.round_nearest_even(q)
        if zero_point is not None:
            q = stablehlo.add(q, convert(zero_point, compute))
        q = stablehlo.clamp(splat(low, compute, shape), q, splat(high, compute, shape))
        return convert(q, target)
    if target in SATURATING_FLOAT8:
        return cast(q, target, saturate=saturate)
    if target == DataType.FLOAT4E2M1:
        if zero_point is not None:
            q = stablehlo.add(q, convert(zero_point, compute))
        limit = float(ml_dtypes.finfo(ml_dtypes.float4_e2m1fn).max)
        q = stablehlo.clamp(splat(-limit, compute, shape), q, splat(limit, compute, shape))
        return convert(q, target)
    raise UnsupportedDtypeError(f"{DataType(target).name} is not a quantized type")


def _finite_range(x: ir.Value) -> tuple[ir.Value, ir.Value]:
    """``(min, max)`` of ``x`` over every axis with NaN left out, as onnxruntime's scalar min/max does
    (XLA's would propagate it; docs/fuzzing.md); 0-d values of the dtype of ``x``.

    One variadic ``stablehlo.reduce`` computes both: XLA CPU runs it as one vectorized pass,
    where it splits a single min or max over a whole tensor into padded reduce-windows and
    runs a NaN-masked reduce as a scalar loop (int8 MiniLM at 32x128: the per-tensor ranges of
    its DynamicQuantizeLinear took about half of its run time; 1.5M elements: 3.1 -> 0.2 ms).
    Only when that range is NaN (a NaN in ``x``) does a ``stablehlo.if`` take a reduction
    whose body skips NaN, its last axis first and then the rest.
    """
    shape = dims_of(x)
    axes = list(range(len(shape)))
    dtype = dtype_of(x)
    plain = (splat(np.inf, dtype), splat(-np.inf, dtype))

    def min_max(acc: list[ir.Value], item: list[ir.Value]) -> list[ir.Value]:
        return [stablehlo.minimum(acc[0], item[0]), stablehlo.maximum(acc[1], item[1])]

    low, high = reduce_many([x, x], list(plain), axes, min_max)
    has_nan = stablehlo.or_(compare(low, low, "NE"), compare(high, high, "NE"))

    def skipping_nan(pick):  # NaN is the identity of each side, so any reduction order works
        def body(a: ir.Value, b: ir.Value) -> ir.Value:
            return stablehlo.select(compare(a, a, "NE"), b, stablehlo.select(compare(b, b, "NE"), a, pick(a, b)))

        return body

    least, greatest = skipping_nan(stablehlo.minimum), skipping_nan(stablehlo.maximum)

    def finite_min_max(acc: list[ir.Value], item: list[ir.Value]) -> list[ir.Value]:
        return [least(acc[0], item[0]), greatest(acc[1], item[1])]

    op = stablehlo.IfOp([low.type, high.type], has_nan)
    with ir.InsertionPoint(op.true_branch.blocks.append()):
        # Built from x alone: a symbolic dim's size made in this region could not be used after it.
        ranges = [x, x]
        if len(shape) >= 2:  # the last axis first: a row reduction is a vectorized loop
            ranges = reduce_many(ranges, list(plain), [len(shape) - 1], finite_min_max)
            axes = axes[:-1]
        stablehlo.return_(reduce_many(ranges, list(plain), axes, finite_min_max))
    with ir.InsertionPoint(op.false_branch.blocks.append()):
        stablehlo.return_([low, high])
    return op.results[0], op.results[1]


def dynamic_quantize_uint8(x: ir.Value) -> tuple[ir.Value, ir.Value, ir.Value]:
    """``(y, scale, zero_point)`` of DynamicQuantizeLinear (uint8, per tensor) for ``x``.

    Shared with com.microsoft DynamicQuantizeMatMul, which quantizes its A this way.
    """
    shape = dims_of(x)
    dtype = dtype_of(x)
    zero = splat(0, dtype, ())
    # x is read twice, for its range and to quantize it; without the barrier XLA fuses x's
    # producer into both and computes it twice (int8 MiniLM at 32x128: its exact-erf GELU; 531 -> 500 ms a run).
    x = record(stablehlo.optimization_barrier([x]), shape)

    low, high = _finite_range(x)
    high = stablehlo.maximum(high, zero)
    low = stablehlo.minimum(low, zero)
    span = stablehlo.subtract(high, low)
    empty = compare(high, low, "EQ")
    scale = divide(span, splat(255, dtype, ()))
    scale = stablehlo.select(empty, splat(1, dtype, ()), scale)
    initial = stablehlo.negate(divide(low, scale))
    # std::max(0, std::min(255, initial)) as onnxruntime writes it: a NaN initial (x holds an
    # infinity, so the scale is inf) gives 255, where stablehlo.clamp would give NaN.
    top = splat(255, dtype, ())
    below = stablehlo.select(compare(initial, top, "LT"), initial, top)
    clamped = stablehlo.select(compare(zero, below, "LT"), below, zero)
    zero_point = stablehlo.round_nearest_even(clamped)
    zero_point_u8 = convert(zero_point, DataType.UINT8)
    y = quantize(
        x,
        broadcast_to(scale, shape, dims=[]),
        broadcast_to(zero_point, shape, dims=[]),
        DataType.UINT8,
    )
    return y, scale, zero_point_u8
