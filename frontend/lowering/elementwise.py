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

from onnx_stablehlo.frontend import builders, dtypes
from onnx_stablehlo.frontend.context import LoweringContext, OnnxNode
from onnx_stablehlo.frontend.dtypes import DataType
from onnx_stablehlo.frontend.registry import lowering

_Build = Callable[[ir.Value], ir.Value]


def _define(op_type: str, since: tuple[int, ...], body: Callable[[LoweringContext], ir.Value], doc: str) -> Callable:
    """A rule ``lower_<op>`` from ``body(ctx) -> value``, tagged for each revision in ``since``.

    The caller binds it to a module-level name (``lower_abs = _unary(...)``), which is how the
    registry finds it: one line per op, no writes into ``globals()``.
    """

    def rule(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value]:
        return [body(ctx)]

    rule.__name__ = f"lower_{op_type.lower()}"
    rule.__qualname__ = rule.__name__
    rule.__doc__ = f"Lowers {op_type} to {doc}.\n\nSpec: {op_type}, revisions {', '.join(map(str, since))}."
    for version in since:
        rule = lowering(op_type, since=version)(rule)
    return rule


def _unary(op_type: str, since: tuple[int, ...], build: _Build, doc: str) -> Callable:
    """The rule of a one-input op: ``build(x)``."""
    return _define(op_type, since, lambda ctx: build(ctx.input(0)), doc)


def _binary(op_type: str, since: tuple[int, ...], build: Callable[[ir.Value, ir.Value], ir.Value], doc: str) -> Callable:
    """The rule of a two-input op: ``build(a, b)`` after numpy broadcasting."""

    def body(ctx: LoweringContext) -> ir.Value:
        return build(*builders.broadcast_values(ctx.input(0), ctx.input(1)))

    return _define(op_type, since, body, f"{doc} after numpy broadcasting")


def _comparison(op_type: str, since: tuple[int, ...], direction: str) -> Callable:
    """The rule of a comparison: ``stablehlo.compare`` after numpy broadcasting."""

    def body(ctx: LoweringContext) -> ir.Value:
        return builders.compare(*builders.broadcast_values(ctx.input(0), ctx.input(1)), direction)

    return _define(op_type, since, body, f"stablehlo.compare {direction} (bool result)")


def _reciprocal(x: ir.Value) -> ir.Value:
    return stablehlo.divide(builders.full_like(x, 1), x)


def _is_nan(x: ir.Value) -> ir.Value:
    return builders.compare(x, x, "NE")


def _unfused(build: Callable[[ir.Value, ir.Value], ir.Value], lhs: ir.Value, rhs: ir.Value) -> ir.Value:
    """``build(lhs, rhs)`` with multiply operands rounded first, as two ONNX ops would be."""
    return build(builders.rounded_product(lhs), builders.rounded_product(rhs))


# One line per op: (op_type, revisions, builder, what it becomes). Later revisions only widened
# type constraints.
lower_abs = _unary("Abs", (6, 13), stablehlo.abs, "stablehlo.abs")
lower_neg = _unary("Neg", (6, 13), stablehlo.negate, "stablehlo.negate")
lower_exp = _unary("Exp", (6, 13), stablehlo.exponential, "stablehlo.exponential")
lower_log = _unary("Log", (6, 13), stablehlo.log, "stablehlo.log")
lower_sqrt = _unary("Sqrt", (6, 13), stablehlo.sqrt, "stablehlo.sqrt")
lower_tanh = _unary("Tanh", (6, 13), stablehlo.tanh, "stablehlo.tanh")
lower_sigmoid = _unary("Sigmoid", (6, 13), stablehlo.logistic, "stablehlo.logistic")
lower_erf = _unary(
    "Erf", (9, 13), builders.erf, "erf (float32: a float64 polynomial rounded once, see builders.erf; else chlo.erf)"
)
lower_relu = _unary("Relu", (6, 13, 14), builders.relu, "stablehlo.maximum with zero")
lower_reciprocal = _unary("Reciprocal", (6, 13), _reciprocal, "stablehlo.divide of one")
lower_floor = _unary("Floor", (6, 13), stablehlo.floor, "stablehlo.floor")
lower_ceil = _unary("Ceil", (6, 13), stablehlo.ceil, "stablehlo.ceil")
lower_round = _unary("Round", (11, 22), stablehlo.round_nearest_even, "stablehlo.round_nearest_even")
lower_sign = _unary("Sign", (9, 13), stablehlo.sign, "stablehlo.sign")
lower_sin = _unary("Sin", (7, 22), stablehlo.sine, "stablehlo.sine")
lower_cos = _unary("Cos", (7, 22), stablehlo.cosine, "stablehlo.cosine")
lower_tan = _unary("Tan", (7, 22), stablehlo.tan, "stablehlo.tan")
lower_asin = _unary("Asin", (7, 22), chlo.asin, "chlo.asin")
lower_acos = _unary("Acos", (7, 22), chlo.acos, "chlo.acos")
lower_atan = _unary("Atan", (7, 22), chlo.atan, "chlo.atan")
lower_sinh = _unary("Sinh", (9, 22), chlo.sinh, "chlo.sinh")
lower_cosh = _unary("Cosh", (9, 22), chlo.cosh, "chlo.cosh")
lower_asinh = _unary("Asinh", (9, 22), chlo.asinh, "chlo.asinh")
lower_acosh = _unary("Acosh", (9, 22), chlo.acosh, "chlo.acosh")
lower_atanh = _unary("Atanh", (9, 22), chlo.atanh, "chlo.atanh")
lower_not = _unary("Not", (1,), stablehlo.not_, "stablehlo.not")
lower_bitwisenot = _unary("BitwiseNot", (18,), stablehlo.not_, "stablehlo.not")
lower_isnan = _unary("IsNaN", (9, 13, 20), _is_nan, "stablehlo.compare NE of x with itself")

# Integer Div: stablehlo.divide rounds toward zero, as ONNX (C semantics) requires.
lower_add = _binary(
    "Add", (7, 13, 14), lambda a, b: _unfused(stablehlo.add, a, b), "stablehlo.add (see builders.rounded_product)"
)
lower_sub = _binary(
    "Sub", (7, 13, 14), lambda a, b: _unfused(stablehlo.subtract, a, b), "stablehlo.subtract (see builders.rounded_product)"
)
lower_mul = _binary("Mul", (7, 13, 14), stablehlo.multiply, "stablehlo.multiply")
lower_div = _binary(
    "Div", (7, 13, 14), builders.divide, "stablehlo.divide (constant divisors behind a barrier, see builders.divide)"
)
lower_and = _binary("And", (7,), stablehlo.and_, "stablehlo.and")
lower_or = _binary("Or", (7,), stablehlo.or_, "stablehlo.or")
lower_xor = _binary("Xor", (7,), stablehlo.xor, "stablehlo.xor")
lower_bitwiseand = _binary("BitwiseAnd", (18,), stablehlo.and_, "stablehlo.and")
lower_bitwiseor = _binary("BitwiseOr", (18,), stablehlo.or_, "stablehlo.or")
lower_bitwisexor = _binary("BitwiseXor", (18,), stablehlo.xor, "stablehlo.xor")

lower_equal = _comparison("Equal", (7, 11, 13, 19), "EQ")
lower_less = _comparison("Less", (7, 9, 13), "LT")
lower_greater = _comparison("Greater", (7, 9, 13), "GT")
lower_lessorequal = _comparison("LessOrEqual", (12, 16), "LE")
lower_greaterorequal = _comparison("GreaterOrEqual", (12, 16), "GE")


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
    base_dtype, exp_dtype = builders.dtype_of(base), builders.dtype_of(exponent)
    if dtypes.is_float(base_dtype):
        exponent = builders.convert(exponent, base_dtype)
        base, exponent = builders.broadcast_values(base, exponent)
        if ctx.is_constant_input(1):
            special = _pow_by_constant(ctx, base)
            if special is not None:
                return [special]
        return [stablehlo.power(base, exponent)]
    if dtypes.is_float(exp_dtype):
        wide = DataType.DOUBLE
        result = stablehlo.power(*builders.broadcast_values(builders.convert(base, wide), builders.convert(exponent, wide)))
        converted = builders.convert(result, base_dtype)
        if dtypes.is_unsigned_int(base_dtype):
            return [converted]
        # onnxruntime casts with C's double -> int conversion: on x86-64 a NaN or a value out of
        # range gives the minimum integer (XLA's convert saturates, and gives 0 for NaN).
        bits = dtypes.numpy_dtype(base_dtype).itemsize * 8
        shape = builders.dims_of(result)
        in_range = stablehlo.and_(
            builders.compare(result, builders.splat(-(2.0 ** (bits - 1)), wide, shape), "GE"),
            builders.compare(result, builders.splat(2.0 ** (bits - 1), wide, shape), "LT"),
        )  # false for NaN too
        lowest = builders.splat(int(np.iinfo(dtypes.numpy_dtype(base_dtype)).min), base_dtype, shape)
        return [stablehlo.select(in_range, converted, lowest)]
    base, exponent = builders.broadcast_values(base, builders.convert(exponent, base_dtype))
    return [stablehlo.power(base, exponent)]


def _pow_by_constant(ctx: LoweringContext, base: ir.Value) -> ir.Value | None:
    """x ** 2 -> x * x, x ** 0.5 -> sqrt(x), x ** 1 -> x (exact for these exponents)."""
    exponent = np.asarray(ctx.constant_input(1))
    if exponent.size == 0 or not np.all(exponent == exponent.reshape(-1)[0]):
        return None
    value = float(exponent.reshape(-1)[0])
    if value == 2.0:
        return stablehlo.multiply(base, base)
    if value == 1.0:
        return base
    if value == 0.5:
        return stablehlo.sqrt(base)
    return None


@lowering("Mod", since=10)
@lowering("Mod", since=13)  # 13 widened types (bfloat16)
@lowering("Mod", since=28)  # 28 widened types
def lower_mod(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value]:
    """Lowers Mod: ``fmod=1`` is C fmod (stablehlo.remainder); ``fmod=0`` takes the divisor's sign.

    Spec: Mod-10/13/28.
    Dtypes: integers (fmod 0 or 1), floats (fmod=1 only, as the spec requires).
    """
    lhs, rhs = builders.broadcast_values(ctx.input(0), ctx.input(1))
    remainder = stablehlo.remainder(lhs, rhs)
    if node.attr_int("fmod") == 1:
        return [remainder]
    dtype = builders.dtype_of(lhs)
    if dtypes.is_unsigned_int(dtype):
        return [remainder]
    zero = builders.full_like(remainder, 0)
    nonzero = builders.compare(remainder, zero, "NE")
    signs_differ = stablehlo.xor(builders.compare(remainder, zero, "LT"), builders.compare(rhs, zero, "LT"))
    adjust = stablehlo.and_(nonzero, signs_differ)
    return [stablehlo.select(adjust, stablehlo.add(remainder, rhs), remainder)]


@lowering("BitShift", since=11)
@lowering("BitShift", since=28)  # 28 added signed types: RIGHT is then arithmetic
def lower_bit_shift(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value]:
    """Lowers BitShift to stablehlo.shift_left / shift_right_logical / shift_right_arithmetic.

    Spec: BitShift-11/28. A shift amount that is negative or at least the bit width gives the
    sign fill alone: -1 for RIGHT on a negative signed value, 0 otherwise.
    Dtypes: uint8 ... uint64; int8 ... int64 from revision 28.
    Raises: UnsupportedAttributeError for a direction other than LEFT/RIGHT.
    """
    x, amount = builders.broadcast_values(ctx.input(0), ctx.input(1))
    direction = node.attr_str("direction")
    dtype = builders.dtype_of(x)
    shape = builders.dims_of(x)
    signed = dtypes.is_signed_int(dtype)
    if direction == "LEFT":
        shifted = stablehlo.shift_left(x, amount)
        fill = builders.full_like(x, 0)
    elif direction == "RIGHT":
        if signed:
            shifted = stablehlo.shift_right_arithmetic(x, amount)
            fill = stablehlo.select(builders.compare(x, builders.full_like(x, 0), "LT"),
                                      builders.splat(-1, dtype, shape), builders.full_like(x, 0))
        else:
            shifted = stablehlo.shift_right_logical(x, amount)
            fill = builders.full_like(x, 0)
    else:
        raise ctx.unsupported_attribute("direction", direction, "LEFT, RIGHT")
    bits = dtypes.numpy_dtype(dtype).itemsize * 8
    out_of_range = builders.compare(amount, builders.splat(bits, dtype, shape), "GE")
    if signed:
        negative = builders.compare(amount, builders.full_like(amount, 0), "LT")
        out_of_range = stablehlo.or_(out_of_range, negative)
    return [stablehlo.select(out_of_range, fill, shifted)]


@lowering("Where", since=9)
@lowering("Where", since=16)  # 16 widened types (bfloat16)
def lower_where(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value]:
    """Lowers Where(cond, x, y) to stablehlo.select after three-way broadcasting.

    Spec: Where-9/16.
    """
    cond, x, y = builders.broadcast_values(ctx.input(0), ctx.input(1), ctx.input(2))
    return [stablehlo.select(cond, x, y)]


def _variadic(ctx: LoweringContext, build: Callable[[ir.Value, ir.Value], ir.Value]) -> ir.Value:
    """``build`` folded left over the inputs after numpy broadcasting."""
    values = builders.broadcast_values(*[v for v in ctx.inputs() if v is not None])
    result = values[0]
    for value in values[1:]:
        result = build(result, value)
    return result


@lowering("Max", since=6)  # 6 requires equal shapes, for which broadcasting is a no-op
@lowering("Max", since=8)  # 8 added multidirectional broadcasting
@lowering("Max", since=12)  # 12 and 13 widened types
@lowering("Max", since=13)
def lower_max(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value]:
    """Lowers variadic Max to a chain of stablehlo.maximum (NaN propagates).

    Spec: Max-6/8/12/13.
    """
    return [_variadic(ctx, stablehlo.maximum)]


@lowering("Min", since=6)  # 6 requires equal shapes, for which broadcasting is a no-op
@lowering("Min", since=8)  # 8 added multidirectional broadcasting
@lowering("Min", since=12)  # 12 and 13 widened types
@lowering("Min", since=13)
def lower_min(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value]:
    """Lowers variadic Min to a chain of stablehlo.minimum (NaN propagates).

    Spec: Min-6/8/12/13.
    """
    return [_variadic(ctx, stablehlo.minimum)]


@lowering("Sum", since=6)  # 6 requires equal shapes, for which broadcasting is a no-op
@lowering("Sum", since=8)  # 8 added multidirectional broadcasting
@lowering("Sum", since=13)  # 13 widened types
def lower_sum(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value]:
    """Lowers variadic Sum to a chain of stablehlo.add.

    Spec: Sum-6/8/13.
    """
    return [_variadic(ctx, stablehlo.add)]


@lowering("Mean", since=6)  # 6 requires equal shapes, for which broadcasting is a no-op
@lowering("Mean", since=8)  # 8 added multidirectional broadcasting
@lowering("Mean", since=13)  # 13 widened types
def lower_mean(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value]:
    """Lowers variadic Mean to a chain of stablehlo.add divided by the input count.

    Spec: Mean-6/8/13.
    """
    total = _variadic(ctx, stablehlo.add)
    count = sum(1 for v in ctx.inputs() if v is not None)
    divisor = builders.splat(count, builders.dtype_of(total), builders.dims_of(total))
    return [builders.divide(total, divisor)]


@lowering("IsInf", since=10)
@lowering("IsInf", since=20)  # 20 widened types (bfloat16, float8)
def lower_is_inf(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value]:
    """Lowers IsInf to comparisons with +inf / -inf (``detect_positive``/``detect_negative``).

    Spec: IsInf-10/20.
    """
    x = ctx.input(0)
    dtype, shape = builders.dtype_of(x), builders.dims_of(x)
    result = builders.splat(False, DataType.BOOL, shape)
    if node.attr_int("detect_positive"):
        result = stablehlo.or_(result, builders.compare(x, builders.splat(np.inf, dtype, shape), "EQ"))
    if node.attr_int("detect_negative"):
        result = stablehlo.or_(result, builders.compare(x, builders.splat(-np.inf, dtype, shape), "EQ"))
    return [result]
