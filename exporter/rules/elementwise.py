"""Elementwise StableHLO/CHLO ops -> ONNX: arithmetic, math functions, comparisons, logic, bit
shifts, ``select``, ``clamp``, ``convert``, ``constant``.

StableHLO elementwise ops take operands of one shape, so every mapping is 1:1 onto ONNX's
broadcasting ops. Where ONNX has no op, the decomposition is accurate to the last ulp or two
(``expm1``/``log1p`` by Kahan's rewriting, ``atan2`` by quadrant, round-half-away by floor and
remainder) rather than the naive formula. Spec: StableHLO spec, "Ops" (openxla.org/stablehlo/spec).

Mappings (``A -> B``):
  add subtract multiply divide maximum minimum power -> Add Sub Mul Div Max Min Pow
  remainder -> Mod(fmod=1) (sign of the dividend, as C's fmod and StableHLO)
  and/or/xor/not -> And/Or/Xor/Not on i1, BitwiseAnd/Or/Xor/Not on integers
  shift_left/shift_right_logical/shift_right_arithmetic -> BitShift on the unsigned view, with
      shifts >= the bit width giving 0 (-1 for negative values shifted arithmetically)
  compare EQ NE LT LE GT GE -> Equal Not(Equal) Less LessOrEqual Greater GreaterOrEqual
  select -> Where; clamp -> Clip (scalar bounds) or Max(Min(x, hi), lo)
  convert -> Cast; constant -> an initializer
"""

from __future__ import annotations

import numpy as np
import onnx_ir
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import stablehlo

from onnx_stablehlo.exporter.context import ExportContext
from onnx_stablehlo.exporter.registry import export_rule

DT = onnx_ir.DataType

_UNARY = {
    "stablehlo.abs": "Abs",
    "stablehlo.negate": "Neg",
    "stablehlo.exponential": "Exp",
    "stablehlo.log": "Log",
    "stablehlo.logistic": "Sigmoid",
    "stablehlo.tanh": "Tanh",
    "stablehlo.sqrt": "Sqrt",
    "stablehlo.sine": "Sin",
    "stablehlo.cosine": "Cos",
    "stablehlo.tan": "Tan",
    "stablehlo.floor": "Floor",
    "stablehlo.ceil": "Ceil",
    "stablehlo.round_nearest_even": "Round",
    "stablehlo.sign": "Sign",
    "chlo.erf": "Erf",
    "chlo.tan": "Tan",
    "chlo.sinh": "Sinh",
    "chlo.cosh": "Cosh",
    "chlo.asin": "Asin",
    "chlo.acos": "Acos",
    "chlo.atan": "Atan",
    "chlo.asinh": "Asinh",
    "chlo.acosh": "Acosh",
    "chlo.atanh": "Atanh",
    "chlo.is_inf": "IsInf",
}

_BINARY = {
    "stablehlo.add": "Add",
    "stablehlo.subtract": "Sub",
    "stablehlo.multiply": "Mul",
    "stablehlo.divide": "Div",
    "stablehlo.maximum": "Max",
    "stablehlo.minimum": "Min",
    "stablehlo.power": "Pow",
}

_LOGIC = {"stablehlo.and": ("And", "BitwiseAnd"), "stablehlo.or": ("Or", "BitwiseOr"),
          "stablehlo.xor": ("Xor", "BitwiseXor")}

_FLOAT8 = frozenset({DT.FLOAT8E4M3FN, DT.FLOAT8E4M3FNUZ, DT.FLOAT8E5M2, DT.FLOAT8E5M2FNUZ})
UNSIGNED_OF = {DT.INT8: DT.UINT8, DT.INT16: DT.UINT16, DT.INT32: DT.UINT32, DT.INT64: DT.UINT64}
BIT_WIDTH = {DT.INT8: 8, DT.UINT8: 8, DT.INT16: 16, DT.UINT16: 16, DT.INT32: 32, DT.UINT32: 32, DT.INT64: 64,
             DT.UINT64: 64}
"""Bits per integer type."""
_SIGNED_OF = {u: t for t, u in UNSIGNED_OF.items()}


@export_rule(*_UNARY)
def export_unary(ctx: ExportContext) -> list[onnx_ir.Value]:
    return [ctx.emit(_UNARY[ctx.op.name], [ctx.input(0)])]


@export_rule(*_BINARY)
def export_binary(ctx: ExportContext) -> list[onnx_ir.Value]:
    return [ctx.emit(_BINARY[ctx.op.name], [ctx.input(0), ctx.input(1)])]


@export_rule("stablehlo.remainder")
def export_remainder(ctx: ExportContext) -> list[onnx_ir.Value]:
    return [ctx.emit("Mod", [ctx.input(0), ctx.input(1)], {"fmod": 1})]


@export_rule(*_LOGIC)
def export_logic(ctx: ExportContext) -> list[onnx_ir.Value]:
    boolean, bitwise = _LOGIC[ctx.op.name]
    op_type = boolean if ctx.operand_dtype(0) == DT.BOOL else bitwise
    return [ctx.emit(op_type, [ctx.input(0), ctx.input(1)])]


@export_rule("stablehlo.not")
def export_not(ctx: ExportContext) -> list[onnx_ir.Value]:
    op_type = "Not" if ctx.operand_dtype(0) == DT.BOOL else "BitwiseNot"
    return [ctx.emit(op_type, [ctx.input(0)])]


def _scalar(ctx: ExportContext, value: float | int, dtype: DT) -> onnx_ir.Value:
    return ctx.const(np.array(value, dtype=dtype.numpy()))


@export_rule("stablehlo.rsqrt")
def export_rsqrt(ctx: ExportContext) -> list[onnx_ir.Value]:
    return [ctx.emit("Reciprocal", [ctx.emit("Sqrt", [ctx.input(0)])])]


@export_rule("stablehlo.cbrt")
def export_cbrt(ctx: ExportContext) -> list[onnx_ir.Value]:
    x = ctx.input(0)
    dtype = ctx.operand_dtype(0)
    magnitude = ctx.emit("Pow", [ctx.emit("Abs", [x]), _scalar(ctx, 1.0 / 3.0, dtype)])
    return [ctx.emit("Mul", [ctx.emit("Sign", [x]), magnitude])]


@export_rule("stablehlo.exponential_minus_one")
def export_expm1(ctx: ExportContext) -> list[onnx_ir.Value]:
    """expm1(x) = x where exp(x) == 1; -1 where exp(x) - 1 == -1; else (u - 1) * x / log(u)
    with u = exp(x) (Kahan: the rounding errors of u - 1 and log(u) cancel)."""
    x = ctx.input(0)
    dtype = ctx.operand_dtype(0)
    one = _scalar(ctx, 1, dtype)
    u = ctx.emit("Exp", [x])
    um1 = ctx.emit("Sub", [u, one])
    general = ctx.emit("Div", [ctx.emit("Mul", [um1, x]), ctx.emit("Log", [u])])
    general = ctx.emit("Where", [ctx.emit("Equal", [um1, _scalar(ctx, -1, dtype)]), um1, general])
    # x = +inf: u = inf, (inf * inf) / inf is NaN; exp(x) - 1 is right there.
    general = ctx.emit("Where", [ctx.emit("IsInf", [u]), um1, general])
    return [ctx.emit("Where", [ctx.emit("Equal", [u, one]), x, general])]


@export_rule("stablehlo.log_plus_one")
def export_log1p(ctx: ExportContext) -> list[onnx_ir.Value]:
    """log1p(x) = x where 1 + x == 1, else log(u) * x / (u - 1) with u = 1 + x (Kahan)."""
    x = ctx.input(0)
    dtype = ctx.operand_dtype(0)
    one = _scalar(ctx, 1, dtype)
    u = ctx.emit("Add", [x, one])
    log_u = ctx.emit("Log", [u])
    general = ctx.emit("Div", [ctx.emit("Mul", [log_u, x]), ctx.emit("Sub", [u, one])])
    general = ctx.emit("Where", [ctx.emit("IsInf", [u]), log_u, general])
    return [ctx.emit("Where", [ctx.emit("Equal", [u, one]), x, general])]


@export_rule("stablehlo.round_nearest_afz")
def export_round_afz(ctx: ExportContext) -> list[onnx_ir.Value]:
    """Round half away from zero: sign(x) * (floor(|x|) + (|x| - floor(|x|) >= 0.5))."""
    x = ctx.input(0)
    dtype = ctx.operand_dtype(0)
    magnitude = ctx.emit("Abs", [x])
    floor = ctx.emit("Floor", [magnitude])
    up = ctx.emit("GreaterOrEqual", [ctx.emit("Sub", [magnitude, floor]), _scalar(ctx, 0.5, dtype)])
    rounded = ctx.emit("Add", [floor, ctx.cast(up, dtype)])
    # Sign(x) * rounded loses -0.0 and NaN; Where keeps x itself where |x| rounds to itself.
    result = ctx.emit("Mul", [ctx.emit("Sign", [x]), rounded])
    return [ctx.emit("Where", [ctx.emit("Equal", [rounded, magnitude]), x, result])]


@export_rule("stablehlo.is_finite")
def export_is_finite(ctx: ExportContext) -> list[onnx_ir.Value]:
    x = ctx.input(0)
    return [ctx.emit("Not", [ctx.emit("Or", [ctx.emit("IsInf", [x]), ctx.emit("IsNaN", [x])])])]


@export_rule("chlo.is_pos_inf", "chlo.is_neg_inf")
def export_is_signed_inf(ctx: ExportContext) -> list[onnx_ir.Value]:
    positive = ctx.op.name == "chlo.is_pos_inf"
    return [ctx.emit("IsInf", [ctx.input(0)], {"detect_positive": int(positive), "detect_negative": int(not positive)})]


@export_rule("stablehlo.atan2")
def export_atan2(ctx: ExportContext) -> list[onnx_ir.Value]:
    """atan2(y, x) = atan(y / x) corrected by quadrant: +pi for x < 0, y >= 0; -pi for x < 0,
    y < 0; +-pi/2 for x = 0 (sign of y); 0 for x = y = 0 (signed like y)."""
    y, x = ctx.input(0), ctx.input(1)
    dtype = ctx.operand_dtype(0)
    zero = _scalar(ctx, 0, dtype)
    pi = _scalar(ctx, np.pi, dtype)
    base = ctx.emit("Atan", [ctx.emit("Div", [y, x])])
    x_negative = ctx.emit("Less", [x, zero])
    y_negative = ctx.emit("Less", [y, zero])
    shift = ctx.emit("Where", [y_negative, ctx.emit("Neg", [pi]), pi])
    result = ctx.emit("Where", [x_negative, ctx.emit("Add", [base, shift]), base])
    half_pi = ctx.emit("Mul", [ctx.emit("Sign", [y]), _scalar(ctx, np.pi / 2, dtype)])
    x_zero = ctx.emit("Equal", [x, zero])
    result = ctx.emit("Where", [x_zero, half_pi, result])
    both_zero = ctx.emit("And", [x_zero, ctx.emit("Equal", [y, zero])])
    # atan2(+-0, +0) = +-0; atan2(+-0, -0) = +-pi: the sign of x is read from 1/x.
    x_neg_zero = ctx.emit("Less", [ctx.emit("Reciprocal", [x]), zero])
    y_sign_pi = ctx.emit("Where", [ctx.emit("Less", [ctx.emit("Reciprocal", [y]), zero]), ctx.emit("Neg", [pi]), pi])
    zeros = ctx.emit("Where", [x_neg_zero, y_sign_pi, y])
    result = ctx.emit("Where", [both_zero, zeros, result])
    # atan2(+-inf, +inf) = +-pi/4, atan2(+-inf, -inf) = +-3pi/4 (inf / inf is NaN otherwise).
    both_inf = ctx.emit("And", [ctx.emit("IsInf", [x]), ctx.emit("IsInf", [y])])
    corner = ctx.emit("Where", [x_negative, _scalar(ctx, 3 * np.pi / 4, dtype), _scalar(ctx, np.pi / 4, dtype)])
    corner = ctx.emit("Where", [y_negative, ctx.emit("Neg", [corner]), corner])
    return [ctx.emit("Where", [both_inf, corner, result])]


_COMPARE = {"EQ": "Equal", "LT": "Less", "LE": "LessOrEqual", "GT": "Greater", "GE": "GreaterOrEqual"}


@export_rule("stablehlo.compare")
def export_compare(ctx: ExportContext) -> list[onnx_ir.Value]:
    direction = stablehlo.ComparisonDirectionAttr(ctx.attr("comparison_direction")).value
    a, b = ctx.input(0), ctx.input(1)
    if direction == "NE":
        return [ctx.emit("Not", [ctx.emit("Equal", [a, b])])]
    return [ctx.emit(_COMPARE[direction], [a, b])]


@export_rule("stablehlo.select")
def export_select(ctx: ExportContext) -> list[onnx_ir.Value]:
    return [ctx.emit("Where", [ctx.input(0), ctx.input(1), ctx.input(2)])]


@export_rule("stablehlo.clamp")
def export_clamp(ctx: ExportContext) -> list[onnx_ir.Value]:
    low, x, high = ctx.input(0), ctx.input(1), ctx.input(2)
    return [ctx.emit("Max", [ctx.emit("Min", [x, high]), low])]


@export_rule("stablehlo.convert")
def export_convert(ctx: ExportContext) -> list[onnx_ir.Value]:
    source, target = ctx.operand_dtype(0), ctx.result_dtype(0)
    if source == target:
        return [ctx.emit("Identity", [ctx.input(0)])]
    if _is_float_type(source) and target in _INT_RANGE:
        return [_saturating_cast(ctx, ctx.input(0), source, target)]
    if target in _FLOAT8:
        # StableHLO's convert does not saturate: out-of-range values become inf (or NaN where
        # the type has no inf), as ONNX Cast with saturate=0 does.
        return [ctx.emit("Cast", [ctx.input(0)], {"to": int(target), "saturate": 0})]
    return [ctx.cast(ctx.input(0), target)]


_INT_RANGE = {DT.INT8: (-(2**7), 2**7 - 1), DT.INT16: (-(2**15), 2**15 - 1), DT.INT32: (-(2**31), 2**31 - 1),
              DT.INT64: (-(2**63), 2**63 - 1), DT.UINT8: (0, 2**8 - 1), DT.UINT16: (0, 2**16 - 1),
              DT.UINT32: (0, 2**32 - 1), DT.UINT64: (0, 2**64 - 1)}


def _is_float_type(dtype: DT) -> bool:
    return dtype in (DT.FLOAT, DT.DOUBLE, DT.FLOAT16, DT.BFLOAT16)


def _saturating_cast(ctx: ExportContext, x: onnx_ir.Value, source: DT, target: DT) -> onnx_ir.Value:
    """float -> int the way XLA converts: truncation toward zero, saturated at the type's range,
    NaN to 0. (StableHLO leaves out-of-range conversions implementation-defined; ONNX Cast is
    undefined there; this matches what JAX on XLA gives.) The bounds compared against are powers
    of two, exact in every float type."""
    low, high = _INT_RANGE[target]
    np_dtype = source.numpy()
    too_high = ctx.emit("GreaterOrEqual", [x, ctx.const(np.array(float(high) + 1, dtype=np_dtype))])
    too_low = ctx.emit("LessOrEqual", [x, ctx.const(np.array(float(low) - (1 if low == 0 else 0), dtype=np_dtype))])
    nan = ctx.emit("IsNaN", [x])
    unsafe = ctx.emit("Or", [ctx.emit("Or", [too_high, too_low]), nan])
    safe = ctx.emit("Where", [unsafe, ctx.const(np.array(0, dtype=np_dtype)), x])
    result = ctx.cast(safe, target)
    tdtype = target.numpy()
    result = ctx.emit("Where", [too_high, ctx.const(np.array(high, dtype=tdtype)), result])
    return ctx.emit("Where", [too_low, ctx.const(np.array(low, dtype=tdtype)), result])


@export_rule("stablehlo.constant", "arith.constant")
def export_constant(ctx: ExportContext) -> list[onnx_ir.Value]:
    array = ctx.converter.constant_value(ctx.op.results[0])
    return [ctx.converter.constant(array, ctx.name or "c")]


def _shift_check(op: ir.Operation) -> str | None:
    element = str(ir.RankedTensorType(op.results[0].type).element_type)
    if element in ("i1",):
        return "bit shifts of i1"
    return None


@export_rule("stablehlo.shift_left", "stablehlo.shift_right_logical", "stablehlo.shift_right_arithmetic",
             check=_shift_check)
def export_shift(ctx: ExportContext) -> list[onnx_ir.Value]:
    """Shifts on the unsigned view of the bits (ONNX BitShift takes unsigned ints only); a shift
    amount outside [0, width) gives 0, or -1 for a negative value shifted arithmetically, as the
    StableHLO spec says."""
    dtype = ctx.operand_dtype(0)
    unsigned = UNSIGNED_OF.get(dtype, dtype)
    x, amount = ctx.input(0), ctx.input(1)
    name = ctx.op.name
    if name == "stablehlo.shift_right_arithmetic":
        if dtype in _SIGNED_OF:
            # An arithmetic shift of an unsigned int replicates its top bit: the signed shift of
            # the same bits (Casts between the two types keep the bits).
            signed = _SIGNED_OF[dtype]
            return [ctx.cast(_arithmetic_shift(ctx, ctx.cast(x, signed), ctx.cast(amount, signed), signed), dtype)]
        return [_arithmetic_shift(ctx, x, amount, dtype)]
    out_of_range = _amount_out_of_range(ctx, amount, dtype)
    direction = "LEFT" if name == "stablehlo.shift_left" else "RIGHT"
    if dtype == DT.UINT64:
        # onnxruntime has no uint64 Where: zero by multiplying with the in-range mask instead.
        keep = ctx.cast(ctx.emit("Not", [out_of_range]), dtype)
        safe = ctx.emit("Mul", [amount, keep])
        return [ctx.emit("Mul", [ctx.emit("BitShift", [x, safe], {"direction": direction}), keep])]
    safe = ctx.emit("Where", [out_of_range, _scalar(ctx, 0, dtype), amount])
    safe_u = ctx.cast(safe, unsigned) if unsigned != dtype else safe
    x_u = ctx.cast(x, unsigned) if unsigned != dtype else x
    shifted = ctx.emit("BitShift", [x_u, safe_u], {"direction": direction})
    if unsigned != dtype:
        shifted = ctx.cast(shifted, dtype)
    return [ctx.emit("Where", [out_of_range, _scalar(ctx, 0, dtype), shifted])]


def _amount_out_of_range(ctx: ExportContext, amount: onnx_ir.Value, dtype: DT) -> onnx_ir.Value:
    """Where a shift amount is outside [0, bit width): the shifts the spec defines apart."""
    return ctx.emit("Or", [ctx.emit("Less", [amount, _scalar(ctx, 0, dtype)]),
                           ctx.emit("GreaterOrEqual", [amount, _scalar(ctx, BIT_WIDTH[dtype], dtype)])])


def _arithmetic_shift(ctx: ExportContext, x: onnx_ir.Value, amount: onnx_ir.Value, dtype: DT) -> onnx_ir.Value:
    """``x >> amount`` on a signed type, the sign replicated; an amount outside [0, width)
    gives -1 for a negative ``x`` and 0 otherwise (StableHLO spec)."""
    unsigned = UNSIGNED_OF[dtype]
    out_of_range = _amount_out_of_range(ctx, amount, dtype)
    safe_u = ctx.cast(ctx.emit("Where", [out_of_range, _scalar(ctx, 0, dtype), amount]), unsigned)
    negative = ctx.emit("Less", [x, _scalar(ctx, 0, dtype)])
    # For x < 0: x >> s == ~((~x) >>> s); ~x >= 0 there.
    flipped = ctx.emit("Where", [negative, ctx.emit("BitwiseNot", [x]), x])
    shifted = ctx.cast(ctx.emit("BitShift", [ctx.cast(flipped, unsigned), safe_u], {"direction": "RIGHT"}), dtype)
    shifted = ctx.emit("Where", [negative, ctx.emit("BitwiseNot", [shifted]), shifted])
    overflow = ctx.emit("Where", [negative, _scalar(ctx, -1, dtype), _scalar(ctx, 0, dtype)])
    return ctx.emit("Where", [out_of_range, overflow, shifted])


# reduce_precision --------------------------------------------------------------------------

# (exponent bits, mantissa bits) of the float types; the narrower ones an ONNX Cast rounds to.
_FORMATS = {DT.FLOAT16: (5, 10), DT.BFLOAT16: (8, 7), DT.FLOAT: (8, 23), DT.DOUBLE: (11, 52)}
_CASTS = {(DT.FLOAT, 8, 7): DT.BFLOAT16, (DT.FLOAT, 5, 10): DT.FLOAT16, (DT.DOUBLE, 8, 23): DT.FLOAT}


def _precision(op: ir.Operation) -> tuple[int, int]:
    attrs = op.attributes
    return int(ir.IntegerAttr(attrs["exponent_bits"]).value), int(ir.IntegerAttr(attrs["mantissa_bits"]).value)


def _reduce_precision_check(op: ir.Operation) -> str | None:
    from onnx_stablehlo.exporter.types import onnx_dtype

    dtype = onnx_dtype(op.operands[0])
    exponent, mantissa = _precision(op)
    own = _FORMATS.get(dtype)
    if own is not None and exponent >= own[0] and mantissa >= own[1]:
        return None
    if (dtype, exponent, mantissa) in _CASTS:
        return None
    return (f"reduce_precision of {dtype.name} to e{exponent}m{mantissa}: only the formats an ONNX Cast rounds "
            f"to exactly are exported (f32 -> e8m7 (bf16), e5m10 (f16); f64 -> e8m23 (f32))")


@export_rule("stablehlo.reduce_precision", check=_reduce_precision_check)
def export_reduce_precision(ctx: ExportContext) -> list[onnx_ir.Value]:
    """``reduce_precision`` as a round trip through the float type of that format: Cast rounds
    to nearest even, overflows to inf and keeps NaN, as the op does. Where the exponent range
    shrinks, the op (XLA's) flushes results below the format's smallest normal to zero instead
    of rounding to its subnormals: |x| < 2^emin (1 - 2^-(m+2)) (the half-way point below
    2^emin, ties going up to the even 2^emin) becomes +-0."""
    dtype = ctx.operand_dtype(0)
    exponent, mantissa = _precision(ctx.op)
    own = _FORMATS.get(dtype)
    x = ctx.input(0)
    if own is not None and exponent >= own[0] and mantissa >= own[1]:
        return [ctx.emit("Identity", [x])]
    narrow = _CASTS[(dtype, exponent, mantissa)]
    result = ctx.cast(ctx.cast(x, narrow), dtype)
    if exponent < own[0]:  # type: ignore[index]
        smallest_normal = 2.0 ** (2 - 2 ** (exponent - 1))
        threshold = _scalar(ctx, smallest_normal * (1 - 2.0 ** -(mantissa + 2)), dtype)
        tiny = ctx.emit("Less", [ctx.emit("Abs", [x]), threshold])
        result = ctx.emit("Where", [tiny, ctx.emit("Mul", [x, _scalar(ctx, 0, dtype)]), result])
    return [result]


# map -----------------------------------------------------------------------------------------

_MAPPABLE = frozenset(set(_UNARY) | set(_BINARY) | set(_LOGIC) | {
    "stablehlo.remainder", "stablehlo.not", "stablehlo.rsqrt", "stablehlo.cbrt", "stablehlo.exponential_minus_one",
    "stablehlo.log_plus_one", "stablehlo.round_nearest_afz", "stablehlo.is_finite", "chlo.is_pos_inf",
    "chlo.is_neg_inf", "stablehlo.atan2", "stablehlo.compare", "stablehlo.select", "stablehlo.clamp",
    "stablehlo.convert", "stablehlo.constant", "stablehlo.shift_left", "stablehlo.shift_right_logical",
    "stablehlo.shift_right_arithmetic", "stablehlo.return"})


def _map_check(op: ir.Operation) -> str | None:
    rank = ir.RankedTensorType(op.operands[0].type).rank
    from onnx_stablehlo.exporter.context import read_ints

    if "dimensions" in op.attributes and read_ints(op.attributes["dimensions"]) != list(range(rank)):
        return "map over a subset of the dimensions"
    for block in op.regions[0].blocks:
        for inner in block.operations:
            name = inner.operation.name
            if name not in _MAPPABLE:
                return f"map whose computation uses {name} (only elementwise ops can run on whole tensors)"
    return None


def _depends_on_arguments(value: ir.Value) -> bool:
    if isinstance(value, ir.BlockArgument):
        return True
    owner = value.owner
    owner = owner.operation if isinstance(owner, ir.OpView) else owner
    return any(_depends_on_arguments(v) for v in owner.operands)


@export_rule("stablehlo.map", check=_map_check)
def export_map(ctx: ExportContext) -> list[onnx_ir.Value]:
    """``map(xs...) {computation}`` on scalars -> the computation inlined on the whole operand
    tensors (its ops are elementwise and ONNX broadcasts their scalar constants); a result that
    depends on no argument (a constant) is Expanded to the operand shape."""
    region = ctx.op.regions[0]
    results = ctx.inline_region(region, ctx.inputs())
    terminator = list(region.blocks[0].operations)[-1]
    out = []
    for value, returned in zip(results, terminator.operands):
        if not _depends_on_arguments(returned):
            value = ctx.emit("Expand", [value, ctx.shape_of(ctx.input(0))])
        out.append(value)
    return out
