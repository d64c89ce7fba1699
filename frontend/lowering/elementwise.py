"""Lowering rules: elementwise math, logic, bitwise and comparison ops.

Binary ops broadcast numpy-style (multidirectional broadcasting, ONNX opset >= 7) with
``stablehlo.broadcast_in_dim``; revisions before 7 (the ``broadcast``/``axis`` attributes) are
not lowered. Most ops map 1:1 to a StableHLO (or CHLO) op; the table below lists them with the
revisions each lowering covers. Later revisions of these ops only widened type constraints
(bfloat16, int8 ...), so one function covers them all.

Spec: onnx.ai/onnx/operators (each op's page).
Dtypes: whatever the op's ONNX type constraint allows and StableHLO has.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import chlo, stablehlo

from onnx_stablehlo.frontend import dtypes, emit
from onnx_stablehlo.frontend.context import LoweringContext, OnnxNode
from onnx_stablehlo.frontend.dtypes import DataType
from onnx_stablehlo.frontend.registry import lowering

_Build = Callable[[ir.Value], ir.Value]


def _define(op_type: str, since: tuple[int, ...], body: Callable[[LoweringContext], ir.Value], doc: str) -> Callable:
    """Defines ``lower_<op>`` from ``body(ctx) -> value``, tagged for each revision in ``since``."""

    def rule(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value]:
        return [body(ctx)]

    rule.__name__ = f"lower_{op_type.lower()}"
    rule.__qualname__ = rule.__name__
    rule.__doc__ = f"Lowers {op_type} to {doc}.\n\nSpec: {op_type}, revisions {', '.join(map(str, since))}."
    for version in since:
        rule = lowering(op_type, since=version)(rule)
    globals()[rule.__name__] = rule
    return rule


def _make_unary(op_type: str, since: tuple[int, ...], build: _Build, doc: str) -> Callable:
    return _define(op_type, since, lambda ctx: build(ctx.input(0)), doc)


def _one_like(x: ir.Value) -> ir.Value:
    return emit.full_like(x, 1)


def _zero_like(x: ir.Value) -> ir.Value:
    return emit.full_like(x, 0)


def _relu(x: ir.Value) -> ir.Value:
    return stablehlo.MaxOp(x, _zero_like(x)).result


def _reciprocal(x: ir.Value) -> ir.Value:
    return stablehlo.DivOp(_one_like(x), x).result


def _is_nan(x: ir.Value) -> ir.Value:
    return emit.compare(x, x, "NE")


# (op_type, revisions, builder, what it becomes)
_UNARY: list[tuple[str, tuple[int, ...], _Build, str]] = [
    ("Abs", (6, 13), lambda x: stablehlo.AbsOp(x).result, "stablehlo.abs"),
    ("Neg", (6, 13), lambda x: stablehlo.NegOp(x).result, "stablehlo.negate"),
    ("Exp", (6, 13), lambda x: stablehlo.ExpOp(x).result, "stablehlo.exponential"),
    ("Log", (6, 13), lambda x: stablehlo.LogOp(x).result, "stablehlo.log"),
    ("Sqrt", (6, 13), lambda x: stablehlo.SqrtOp(x).result, "stablehlo.sqrt"),
    ("Tanh", (6, 13), lambda x: stablehlo.TanhOp(x).result, "stablehlo.tanh"),
    ("Sigmoid", (6, 13), lambda x: stablehlo.LogisticOp(x).result, "stablehlo.logistic"),
    ("Erf", (9, 13), emit.erf, "erf (float32: a float64 polynomial rounded once, see emit.erf; else chlo.erf)"),
    ("Relu", (6, 13, 14), _relu, "stablehlo.maximum with zero"),
    ("Reciprocal", (6, 13), _reciprocal, "stablehlo.divide of one"),
    ("Floor", (6, 13), lambda x: stablehlo.FloorOp(x).result, "stablehlo.floor"),
    ("Ceil", (6, 13), lambda x: stablehlo.CeilOp(x).result, "stablehlo.ceil"),
    ("Round", (11, 22), lambda x: stablehlo.RoundNearestEvenOp(x).result, "stablehlo.round_nearest_even"),
    ("Sign", (9, 13), lambda x: stablehlo.SignOp(x).result, "stablehlo.sign"),
    ("Sin", (7, 22), lambda x: stablehlo.SineOp(x).result, "stablehlo.sine"),
    ("Cos", (7, 22), lambda x: stablehlo.CosineOp(x).result, "stablehlo.cosine"),
    ("Tan", (7, 22), lambda x: stablehlo.TanOp(x).result, "stablehlo.tan"),
    ("Asin", (7, 22), lambda x: chlo.AsinOp(x).result, "chlo.asin"),
    ("Acos", (7, 22), lambda x: chlo.AcosOp(x).result, "chlo.acos"),
    ("Atan", (7, 22), lambda x: chlo.AtanOp(x).result, "chlo.atan"),
    ("Sinh", (9, 22), lambda x: chlo.SinhOp(x).result, "chlo.sinh"),
    ("Cosh", (9, 22), lambda x: chlo.CoshOp(x).result, "chlo.cosh"),
    ("Asinh", (9, 22), lambda x: chlo.AsinhOp(x).result, "chlo.asinh"),
    ("Acosh", (9, 22), lambda x: chlo.AcoshOp(x).result, "chlo.acosh"),
    ("Atanh", (9, 22), lambda x: chlo.AtanhOp(x).result, "chlo.atanh"),
    ("Not", (1,), lambda x: stablehlo.NotOp(x).result, "stablehlo.not"),
    ("BitwiseNot", (18,), lambda x: stablehlo.NotOp(x).result, "stablehlo.not"),
    ("IsNaN", (9, 13, 20), _is_nan, "stablehlo.compare NE of x with itself"),
]

for _op_type, _since, _build, _doc in _UNARY:
    _make_unary(_op_type, _since, _build, _doc)


def _make_binary(op_type: str, since: tuple[int, ...], op_class: type, doc: str) -> Callable:
    def body(ctx: LoweringContext) -> ir.Value:
        out = op_class(*emit.broadcast_values(ctx.input(0), ctx.input(1)))
        return out if isinstance(out, ir.Value) else out.result

    return _define(op_type, since, body, f"{doc} after numpy broadcasting")


def _unfused(op_class: type, lhs: ir.Value, rhs: ir.Value) -> ir.Value:
    """``op_class(lhs, rhs)`` with multiply operands rounded first, as two ONNX ops would be."""
    return op_class(emit.rounded_product(lhs), emit.rounded_product(rhs)).result


# Integer Div: stablehlo.divide rounds toward zero, as ONNX (C semantics) requires.
_BINARY: list[tuple[str, tuple[int, ...], Callable, str]] = [
    ("Add", (7, 13, 14), lambda a, b: _unfused(stablehlo.AddOp, a, b), "stablehlo.add (see emit.rounded_product)"),
    ("Sub", (7, 13, 14), lambda a, b: _unfused(stablehlo.SubtractOp, a, b), "stablehlo.subtract (see emit.rounded_product)"),
    ("Mul", (7, 13, 14), stablehlo.MulOp, "stablehlo.multiply"),
    ("Div", (7, 13, 14), emit.divide, "stablehlo.divide (constant divisors behind a barrier, see emit.divide)"),
    ("And", (7,), stablehlo.AndOp, "stablehlo.and"),
    ("Or", (7,), stablehlo.OrOp, "stablehlo.or"),
    ("Xor", (7,), stablehlo.XorOp, "stablehlo.xor"),
    ("BitwiseAnd", (18,), stablehlo.AndOp, "stablehlo.and"),
    ("BitwiseOr", (18,), stablehlo.OrOp, "stablehlo.or"),
    ("BitwiseXor", (18,), stablehlo.XorOp, "stablehlo.xor"),
]

for _op_type, _since, _class, _doc in _BINARY:
    _make_binary(_op_type, _since, _class, _doc)


def _make_compare(op_type: str, since: tuple[int, ...], direction: str) -> Callable:
    def body(ctx: LoweringContext) -> ir.Value:
        return emit.compare(*emit.broadcast_values(ctx.input(0), ctx.input(1)), direction)

    return _define(op_type, since, body, f"stablehlo.compare {direction} (bool result)")


for _op_type, _since, _direction in [
    ("Equal", (7, 11, 13, 19), "EQ"),
    ("Less", (7, 9, 13), "LT"),
    ("Greater", (7, 9, 13), "GT"),
    ("LessOrEqual", (12, 16), "LE"),
    ("GreaterOrEqual", (12, 16), "GE"),
]:
    _make_compare(_op_type, _since, _direction)


@lowering("Pow", since=7)
@lowering("Pow", since=12)  # 12 lets the exponent have its own (integer) type
@lowering("Pow", since=13)  # 13 and 15 widened the type constraints (bfloat16)
@lowering("Pow", since=15)
def lower_pow(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value]:
    """Lowers Pow to stablehlo.power; the result has the base's dtype.

    Spec: Pow-7/12/13/15.
    Dtypes: base f16/bf16/f32/f64/i32/i64; exponent any numeric type.
    Deviations: an integer base with a float exponent is computed in float64 and truncated,
        as onnxruntime does; a NaN or out-of-range result is the integer minimum, as
        onnxruntime's C cast gives on x86-64.
    """
    base, exponent = ctx.input(0), ctx.input(1)
    base_dtype, exp_dtype = emit.dtype_of(base), emit.dtype_of(exponent)
    if dtypes.is_float(base_dtype):
        exponent = emit.convert(exponent, base_dtype)
        base, exponent = emit.broadcast_values(base, exponent)
        if ctx.is_constant_input(1):
            special = _pow_by_constant(ctx, base)
            if special is not None:
                return [special]
        return [stablehlo.PowOp(base, exponent).result]
    if dtypes.is_float(exp_dtype):
        wide = DataType.DOUBLE
        result = stablehlo.PowOp(*emit.broadcast_values(emit.convert(base, wide), emit.convert(exponent, wide))).result
        converted = emit.convert(result, base_dtype)
        if dtypes.is_unsigned_int(base_dtype):
            return [converted]
        # onnxruntime casts with C's double -> int conversion: on x86-64 a NaN or a value out of
        # range gives the minimum integer (XLA's convert saturates, and gives 0 for NaN).
        bits = dtypes.numpy_dtype(base_dtype).itemsize * 8
        shape = emit.dims_of(result)
        in_range = stablehlo.AndOp(
            emit.compare(result, emit.splat(-(2.0 ** (bits - 1)), wide, shape), "GE"),
            emit.compare(result, emit.splat(2.0 ** (bits - 1), wide, shape), "LT"),
        ).result  # false for NaN too
        lowest = emit.splat(int(np.iinfo(dtypes.numpy_dtype(base_dtype)).min), base_dtype, shape)
        return [stablehlo.SelectOp(in_range, converted, lowest).result]
    base, exponent = emit.broadcast_values(base, emit.convert(exponent, base_dtype))
    return [stablehlo.PowOp(base, exponent).result]


def _pow_by_constant(ctx: LoweringContext, base: ir.Value) -> ir.Value | None:
    """x ** 2 -> x * x, x ** 0.5 -> sqrt(x), x ** 1 -> x (exact for these exponents)."""
    exponent = np.asarray(ctx.constant_input(1))
    if exponent.size == 0 or not np.all(exponent == exponent.reshape(-1)[0]):
        return None
    value = float(exponent.reshape(-1)[0])
    if value == 2.0:
        return stablehlo.MulOp(base, base).result
    if value == 1.0:
        return base
    if value == 0.5:
        return stablehlo.SqrtOp(base).result
    return None


@lowering("Mod", since=10)
@lowering("Mod", since=13)  # 13 widened types (bfloat16)
@lowering("Mod", since=28)  # 28 widened types
def lower_mod(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value]:
    """Lowers Mod: ``fmod=1`` is C fmod (stablehlo.remainder); ``fmod=0`` takes the divisor's sign.

    Spec: Mod-10/13/28.
    Dtypes: integers (fmod 0 or 1), floats (fmod=1 only, as the spec requires).
    """
    lhs, rhs = emit.broadcast_values(ctx.input(0), ctx.input(1))
    remainder = stablehlo.RemOp(lhs, rhs).result
    if node.attr_int("fmod") == 1:
        return [remainder]
    dtype = emit.dtype_of(lhs)
    if dtypes.is_unsigned_int(dtype):
        return [remainder]
    zero = _zero_like(remainder)
    nonzero = emit.compare(remainder, zero, "NE")
    signs_differ = stablehlo.XorOp(emit.compare(remainder, zero, "LT"), emit.compare(rhs, zero, "LT")).result
    adjust = stablehlo.AndOp(nonzero, signs_differ).result
    return [stablehlo.SelectOp(adjust, stablehlo.AddOp(remainder, rhs).result, remainder).result]


@lowering("BitShift", since=11)
@lowering("BitShift", since=28)  # 28 added signed types: RIGHT is then arithmetic
def lower_bit_shift(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value]:
    """Lowers BitShift to stablehlo.shift_left / shift_right_logical / shift_right_arithmetic.

    Spec: BitShift-11/28. A shift amount that is negative or at least the bit width gives the
    sign fill alone: -1 for RIGHT on a negative signed value, 0 otherwise.
    Dtypes: uint8 ... uint64; int8 ... int64 from revision 28.
    Raises: UnsupportedAttributeError for a direction other than LEFT/RIGHT.
    """
    x, amount = emit.broadcast_values(ctx.input(0), ctx.input(1))
    direction = node.attr_str("direction")
    dtype = emit.dtype_of(x)
    shape = emit.dims_of(x)
    signed = dtypes.is_signed_int(dtype)
    if direction == "LEFT":
        shifted = stablehlo.ShiftLeftOp(x, amount).result
        fill = _zero_like(x)
    elif direction == "RIGHT":
        if signed:
            shifted = stablehlo.ShiftRightArithmeticOp(x, amount).result
            fill = stablehlo.SelectOp(emit.compare(x, _zero_like(x), "LT"),
                                      emit.splat(-1, dtype, shape), _zero_like(x)).result
        else:
            shifted = stablehlo.ShiftRightLogicalOp(x, amount).result
            fill = _zero_like(x)
    else:
        raise ctx.unsupported_attribute("direction", direction, "LEFT, RIGHT")
    bits = dtypes.numpy_dtype(dtype).itemsize * 8
    out_of_range = emit.compare(amount, emit.splat(bits, dtype, shape), "GE")
    if signed:
        negative = emit.compare(amount, _zero_like(amount), "LT")
        out_of_range = stablehlo.OrOp(out_of_range, negative).result
    return [stablehlo.SelectOp(out_of_range, fill, shifted).result]


@lowering("Where", since=9)
@lowering("Where", since=16)  # 16 widened types (bfloat16)
def lower_where(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value]:
    """Lowers Where(cond, x, y) to stablehlo.select after three-way broadcasting.

    Spec: Where-9/16.
    """
    cond, x, y = emit.broadcast_values(ctx.input(0), ctx.input(1), ctx.input(2))
    return [stablehlo.SelectOp(cond, x, y).result]


def _variadic(ctx: LoweringContext, op_class: type) -> ir.Value:
    values = emit.broadcast_values(*[v for v in ctx.inputs() if v is not None])
    result = values[0]
    for value in values[1:]:
        result = op_class(result, value).result
    return result


@lowering("Max", since=6)  # 6 requires equal shapes, for which broadcasting is a no-op
@lowering("Max", since=8)  # 8 added multidirectional broadcasting
@lowering("Max", since=12)  # 12 and 13 widened types
@lowering("Max", since=13)
def lower_max(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value]:
    """Lowers variadic Max to a chain of stablehlo.maximum (NaN propagates).

    Spec: Max-6/8/12/13.
    """
    return [_variadic(ctx, stablehlo.MaxOp)]


@lowering("Min", since=6)  # 6 requires equal shapes, for which broadcasting is a no-op
@lowering("Min", since=8)  # 8 added multidirectional broadcasting
@lowering("Min", since=12)  # 12 and 13 widened types
@lowering("Min", since=13)
def lower_min(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value]:
    """Lowers variadic Min to a chain of stablehlo.minimum (NaN propagates).

    Spec: Min-6/8/12/13.
    """
    return [_variadic(ctx, stablehlo.MinOp)]


@lowering("Sum", since=6)  # 6 requires equal shapes, for which broadcasting is a no-op
@lowering("Sum", since=8)  # 8 added multidirectional broadcasting
@lowering("Sum", since=13)  # 13 widened types
def lower_sum(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value]:
    """Lowers variadic Sum to a chain of stablehlo.add.

    Spec: Sum-6/8/13.
    """
    return [_variadic(ctx, stablehlo.AddOp)]


@lowering("Mean", since=6)  # 6 requires equal shapes, for which broadcasting is a no-op
@lowering("Mean", since=8)  # 8 added multidirectional broadcasting
@lowering("Mean", since=13)  # 13 widened types
def lower_mean(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value]:
    """Lowers variadic Mean to a chain of stablehlo.add divided by the input count.

    Spec: Mean-6/8/13.
    """
    total = _variadic(ctx, stablehlo.AddOp)
    count = sum(1 for v in ctx.inputs() if v is not None)
    divisor = emit.splat(count, emit.dtype_of(total), emit.dims_of(total))
    return [emit.divide(total, divisor)]


@lowering("IsInf", since=10)
@lowering("IsInf", since=20)  # 20 widened types (bfloat16, float8)
def lower_is_inf(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value]:
    """Lowers IsInf to comparisons with +inf / -inf (``detect_positive``/``detect_negative``).

    Spec: IsInf-10/20.
    """
    x = ctx.input(0)
    dtype, shape = emit.dtype_of(x), emit.dims_of(x)
    result = emit.splat(False, DataType.BOOL, shape)
    if node.attr_int("detect_positive"):
        result = stablehlo.OrOp(result, emit.compare(x, emit.splat(np.inf, dtype, shape), "EQ")).result
    if node.attr_int("detect_negative"):
        result = stablehlo.OrOp(result, emit.compare(x, emit.splat(-np.inf, dtype, shape), "EQ")).result
    return [result]
