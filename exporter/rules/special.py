"""Special functions (CHLO) -> ONNX: ``square``, ``erfc``, ``lgamma``, ``digamma``, ``erf_inv``,
``next_after``, ``mulhi``.

ONNX has none of these but ``Erf``; each is a published approximation written with ONNX
arithmetic. f16/bf16 inputs are computed in f32 (``lgamma``/``digamma``: in f64, see below) and
cast back. Semantics at poles and infinities are JAX's (``jax.lax.lgamma`` etc. on CPU):

  lgamma(x) = log|Gamma(x)|; +inf at 0, the negative integers and +-inf.
  digamma(x): NaN at 0, the negative integers and -inf; +inf at +inf.
  erf_inv(+-1) = +-inf, NaN outside [-1, 1].  erfc(+inf) = 0, erfc(-inf) = 2.

Mappings and sources:
  square(x) -> Mul(x, x)
  erfc(x) -> 1 - Erf(x) for |x| < 0.5 (there erfc > 0.47: no cancellation, f32 Erf);
      elsewhere the Chebyshev-fitted formula of Press, Teukolsky, Vetterling & Flannery,
      "Numerical Recipes in C", 2nd ed. (1992), section 6.2 (``erfcc``, fractional error below
      1.2e-7 everywhere), evaluated in f64 so that exp(-z^2) loses nothing to the rounding of
      z^2; erfc(x) = 2 - erfc(-x) for x < 0. f64 operands are refused (1.2e-7 is f32 accuracy).
  lgamma(x) -> in f64: the Lanczos approximation (C. Lanczos, "A precision approximation of the
      gamma function", SIAM J. Numer. Anal. B 1 (1964)) with Paul Godfrey's g = 7, n = 9
      coefficients (P. Godfrey, "A note on the computation of the convergent Lanczos complex
      Gamma approximation", 2001; relative error ~1e-15) for x >= 0.5, and Euler's reflection
      lgamma(x) = log(pi / |sin(pi x)|) - lgamma(1 - x) below (sin of the reduced argument
      x - round(x), exact in floating point), then Cast to the result type.
  digamma(x) -> in f64: the recurrence psi(x) = psi(x + 10) - sum_{k<10} 1/(x + k) and the
      asymptotic series psi(y) ~ log y - 1/(2y) - sum_n B_2n / (2n y^2n) to n = 6
      (Abramowitz & Stegun, "Handbook of Mathematical Functions", 6.3.6 and 6.3.18; the
      truncation error at y >= 10.5 is below 1e-16), with the reflection
      psi(x) = psi(1 - x) - pi cos(pi x) / sin(pi x) for x < 0.5 (A&S 6.3.7).
  erf_inv(x) -> M. Giles, "Approximating the erfinv function", GPU Computing Gems Jade Edition
      (2011): the single-precision polynomials in w = -log((1 - x)(1 + x)) (w < 5: central,
      else sqrt(w) - 3); f64 operands are refused (single-precision coefficients).
  next_after(x, y) -> BitCast to the same-width integer, +-1, BitCast back (opset >= 26);
      NaN if either is NaN, y if x == y, the smallest subnormal signed like y if x == 0.
  mulhi(x, y) -> the high half of the double-width product: i8/i16/i32 (u8/u16/u32) are
      multiplied in i64 (u64) and shifted (floor division by 2^bits for signed values); i64/u64
      are refused (no 128-bit integers in ONNX).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import onnx_ir
from jaxlib.mlir import ir

from onnx_stablehlo.exporter.context import ExportContext
from onnx_stablehlo.exporter.registry import export_rule

DT = onnx_ir.DataType
BITCAST_MIN_OPSET = 26
_NARROW_FLOATS = frozenset({DT.FLOAT16, DT.BFLOAT16})


def _c(ctx: ExportContext, value: float, dtype: DT) -> onnx_ir.Value:
    return ctx.const(np.array(value, dtype=dtype.numpy()))


def _poly(ctx: ExportContext, t: onnx_ir.Value, coeffs: Sequence[float], dtype: DT) -> onnx_ir.Value:
    """Horner's rule: coeffs[0] * t^(n-1) + ... + coeffs[-1]."""
    acc = _c(ctx, coeffs[0], dtype)
    for c in coeffs[1:]:
        acc = ctx.emit("Add", [ctx.emit("Mul", [acc, t]), _c(ctx, c, dtype)])
    return acc


def _element(value: ir.Value) -> str:
    return str(ir.RankedTensorType(value.type).element_type)


def _f32_only(op: ir.Operation) -> str | None:
    if _element(op.operands[0]) == "f64":
        return f"{op.name} on f64: the approximation used is accurate to f32 precision only"
    return None


def _widen(ctx: ExportContext, x: onnx_ir.Value, dtype: DT, to: DT) -> onnx_ir.Value:
    return x if dtype == to else ctx.cast(x, to)


@export_rule("chlo.square")
def export_square(ctx: ExportContext) -> list[onnx_ir.Value]:
    x = ctx.input(0)
    return [ctx.emit("Mul", [x, x])]


# Numerical Recipes in C, 2nd ed., section 6.2, erfcc: t * exp(-z^2 + P(t)), t = 1 / (1 + z / 2).
_ERFCC = (0.17087277, -0.82215223, 1.48851587, -1.13520398, 0.27886807, -0.18628806, 0.09678418, 0.37409196,
          1.00002368, -1.26551223)


@export_rule("chlo.erfc", check=_f32_only)
def export_erfc(ctx: ExportContext) -> list[onnx_ir.Value]:
    dtype = ctx.operand_dtype(0)
    x32 = _widen(ctx, ctx.input(0), dtype, DT.FLOAT)
    small = ctx.emit("Sub", [_c(ctx, 1.0, DT.FLOAT), ctx.emit("Erf", [x32])])
    x = ctx.cast(x32, DT.DOUBLE)
    z = ctx.emit("Abs", [x])
    one = _c(ctx, 1.0, DT.DOUBLE)
    t = ctx.emit("Div", [one, ctx.emit("Add", [one, ctx.emit("Mul", [z, _c(ctx, 0.5, DT.DOUBLE)])])])
    exponent = ctx.emit("Sub", [_poly(ctx, t, _ERFCC, DT.DOUBLE), ctx.emit("Mul", [z, z])])
    tail = ctx.emit("Mul", [t, ctx.emit("Exp", [exponent])])
    negative = ctx.emit("Less", [x, _c(ctx, 0.0, DT.DOUBLE)])
    large = ctx.emit("Where", [negative, ctx.emit("Sub", [_c(ctx, 2.0, DT.DOUBLE), tail]), tail])
    large = ctx.cast(large, DT.FLOAT)
    result = ctx.emit("Where", [ctx.emit("Less", [ctx.emit("Abs", [x32]), _c(ctx, 0.5, DT.FLOAT)]), small, large])
    return [_widen(ctx, result, DT.FLOAT, ctx.result_dtype(0))]


def _reduced(ctx: ExportContext, x: onnx_ir.Value) -> onnx_ir.Value:
    """x - round(x) in [-0.5, 0.5] (exact): sin(pi x) and cos(pi x) up to sign from it."""
    return ctx.emit("Sub", [x, ctx.emit("Round", [x])])


def _is_pole(ctx: ExportContext, x: onnx_ir.Value) -> onnx_ir.Value:
    """x <= 0 and x an integer (-inf included)."""
    zero = _c(ctx, 0.0, DT.DOUBLE)
    return ctx.emit("And", [ctx.emit("LessOrEqual", [x, zero]), ctx.emit("Equal", [ctx.emit("Floor", [x]), x])])


# Godfrey's Lanczos coefficients, g = 7, n = 9.
_LANCZOS_G = 7.0
_LANCZOS = (0.99999999999980993, 676.5203681218851, -1259.1392167224028, 771.32342877765313, -176.61502916214059,
            12.507343278686905, -0.13857109526572012, 9.9843695780195716e-6, 1.5056327351493116e-7)


@export_rule("chlo.lgamma")
def export_lgamma(ctx: ExportContext) -> list[onnx_ir.Value]:
    dtype = ctx.operand_dtype(0)
    x = _widen(ctx, ctx.input(0), dtype, DT.DOUBLE)
    one = _c(ctx, 1.0, DT.DOUBLE)
    reflect = ctx.emit("Less", [x, _c(ctx, 0.5, DT.DOUBLE)])
    xr = ctx.emit("Where", [reflect, ctx.emit("Sub", [one, x]), x])
    z = ctx.emit("Sub", [xr, one])
    series = _c(ctx, _LANCZOS[0], DT.DOUBLE)
    for k, coeff in enumerate(_LANCZOS[1:], start=1):
        term = ctx.emit("Div", [_c(ctx, coeff, DT.DOUBLE), ctx.emit("Add", [z, _c(ctx, float(k), DT.DOUBLE)])])
        series = ctx.emit("Add", [series, term])
    t = ctx.emit("Add", [z, _c(ctx, _LANCZOS_G + 0.5, DT.DOUBLE)])
    main = ctx.emit("Mul", [ctx.emit("Add", [z, _c(ctx, 0.5, DT.DOUBLE)]), ctx.emit("Log", [t])])
    main = ctx.emit("Sub", [main, t])
    main = ctx.emit("Add", [main, ctx.emit("Add", [_c(ctx, 0.5 * math.log(2 * math.pi), DT.DOUBLE),
                                                   ctx.emit("Log", [series])])])
    # Reflection: log(pi) - log|sin(pi x)| - lgamma(1 - x); sin(pi x) = 0 at integers gives +inf.
    sin = ctx.emit("Abs", [ctx.emit("Sin", [ctx.emit("Mul", [_reduced(ctx, x), _c(ctx, math.pi, DT.DOUBLE)])])])
    reflected = ctx.emit("Sub", [ctx.emit("Sub", [_c(ctx, math.log(math.pi), DT.DOUBLE), ctx.emit("Log", [sin])]),
                                 main])
    result = ctx.emit("Where", [reflect, reflected, main])
    result = ctx.emit("Where", [ctx.emit("IsInf", [x]), _c(ctx, math.inf, DT.DOUBLE), result])
    return [_widen(ctx, result, DT.DOUBLE, ctx.result_dtype(0))]


# psi(y) ~ log y - 1/(2y) + w * P(w), w = 1/y^2: -B_2n/(2n) for n = 1..6 (A&S 6.3.18).
_DIGAMMA_ASYMPTOTIC = (691.0 / 32760.0, -1.0 / 132.0, 1.0 / 240.0, -1.0 / 252.0, 1.0 / 120.0, -1.0 / 12.0)
_DIGAMMA_SHIFT = 10


@export_rule("chlo.digamma")
def export_digamma(ctx: ExportContext) -> list[onnx_ir.Value]:
    dtype = ctx.operand_dtype(0)
    x = _widen(ctx, ctx.input(0), dtype, DT.DOUBLE)
    one = _c(ctx, 1.0, DT.DOUBLE)
    reflect = ctx.emit("Less", [x, _c(ctx, 0.5, DT.DOUBLE)])
    xr = ctx.emit("Where", [reflect, ctx.emit("Sub", [one, x]), x])
    shifts = ctx.emit("Div", [one, xr])
    for k in range(1, _DIGAMMA_SHIFT):
        shifts = ctx.emit("Add", [shifts, ctx.emit("Div", [one, ctx.emit("Add", [xr, _c(ctx, float(k), DT.DOUBLE)])])])
    y = ctx.emit("Add", [xr, _c(ctx, float(_DIGAMMA_SHIFT), DT.DOUBLE)])
    inv = ctx.emit("Div", [one, y])
    w = ctx.emit("Mul", [inv, inv])
    asymptotic = ctx.emit("Sub", [ctx.emit("Log", [y]), ctx.emit("Mul", [inv, _c(ctx, 0.5, DT.DOUBLE)])])
    asymptotic = ctx.emit("Add", [asymptotic, ctx.emit("Mul", [w, _poly(ctx, w, _DIGAMMA_ASYMPTOTIC, DT.DOUBLE)])])
    main = ctx.emit("Sub", [asymptotic, shifts])
    # Reflection: psi(x) = psi(1 - x) - pi cos(pi x) / sin(pi x) (ONNX Tan has no f64 kernel in
    # onnxruntime; the reduced argument keeps the quotient exact to rounding).
    angle = ctx.emit("Mul", [_reduced(ctx, x), _c(ctx, math.pi, DT.DOUBLE)])
    cot = ctx.emit("Div", [ctx.emit("Cos", [angle]), ctx.emit("Sin", [angle])])
    reflected = ctx.emit("Sub", [main, ctx.emit("Mul", [cot, _c(ctx, math.pi, DT.DOUBLE)])])
    result = ctx.emit("Where", [reflect, reflected, main])
    result = ctx.emit("Where", [_is_pole(ctx, x), _c(ctx, math.nan, DT.DOUBLE), result])
    return [_widen(ctx, result, DT.DOUBLE, ctx.result_dtype(0))]


# Giles (2011), single precision: central (w < 5, in w - 2.5) and tail (in sqrt(w) - 3) polynomials.
_ERFINV_CENTRAL = (2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087, -0.00125372503,
                   -0.00417768164, 0.246640727, 1.50140941)
_ERFINV_TAIL = (-0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773, -0.0076224613,
                0.00943887047, 1.00167406, 2.83297682)


@export_rule("chlo.erf_inv", check=_f32_only)
def export_erf_inv(ctx: ExportContext) -> list[onnx_ir.Value]:
    dtype = ctx.operand_dtype(0)
    x = _widen(ctx, ctx.input(0), dtype, DT.FLOAT)
    one = _c(ctx, 1.0, DT.FLOAT)
    w = ctx.emit("Neg", [ctx.emit("Log", [ctx.emit("Mul", [ctx.emit("Sub", [one, x]), ctx.emit("Add", [one, x])])])])
    central = _poly(ctx, ctx.emit("Sub", [w, _c(ctx, 2.5, DT.FLOAT)]), _ERFINV_CENTRAL, DT.FLOAT)
    tail = _poly(ctx, ctx.emit("Sub", [ctx.emit("Sqrt", [w]), _c(ctx, 3.0, DT.FLOAT)]), _ERFINV_TAIL, DT.FLOAT)
    p = ctx.emit("Where", [ctx.emit("Less", [w, _c(ctx, 5.0, DT.FLOAT)]), central, tail])
    result = ctx.emit("Mul", [p, x])
    # |x| = 1: w = inf and the tail polynomial is inf - inf; the answer is x * inf.
    unit = ctx.emit("Equal", [ctx.emit("Abs", [x]), one])
    result = ctx.emit("Where", [unit, ctx.emit("Mul", [x, _c(ctx, math.inf, DT.FLOAT)]), result])
    return [_widen(ctx, result, DT.FLOAT, ctx.result_dtype(0))]


_BITS = {DT.FLOAT: DT.INT32, DT.DOUBLE: DT.INT64, DT.FLOAT16: DT.INT16, DT.BFLOAT16: DT.INT16}


@export_rule("chlo.next_after")
def export_next_after(ctx: ExportContext) -> list[onnx_ir.Value]:
    """C's nextafter on the bits (sign-magnitude: +-1 on the integer view moves away from or
    towards zero)."""
    dtype = ctx.operand_dtype(0)
    if ctx.opset < BITCAST_MIN_OPSET:
        from onnx_stablehlo.errors import UnsupportedExportError
        from onnx_stablehlo.exporter.context import location_text

        raise UnsupportedExportError([(ctx.op.name, location_text(ctx.op),
                                       f"next_after reads the bits of {dtype.name} values: ONNX BitCast needs opset "
                                       f">= {BITCAST_MIN_OPSET} (target opset {ctx.opset})")])
    if dtype not in _BITS:
        raise ctx.error(f"next_after of {dtype.name}")
    bits = _BITS[dtype]
    x, y = ctx.input(0), ctx.input(1)
    zero = _c(ctx, 0.0, dtype)
    ix = ctx.emit("BitCast", [x], {"to": int(bits)})
    # Away from zero (+1 on the magnitude) when y is beyond x in x's direction.
    away = ctx.emit("Equal", [ctx.emit("Less", [x, y]), ctx.emit("Greater", [x, zero])])
    step = ctx.emit("Where", [away, ctx.const(np.array(1, bits.numpy())), ctx.const(np.array(-1, bits.numpy()))])
    moved = ctx.emit("BitCast", [ctx.emit("Add", [ix, step])], {"to": int(dtype)})
    # x == 0: the smallest subnormal, signed like y (bits 1, or the sign bit | 1).
    tiny = ctx.emit("BitCast", [ctx.const(np.array(1, bits.numpy()))], {"to": int(dtype)})
    signed_tiny = ctx.emit("Where", [ctx.emit("Less", [y, zero]), ctx.emit("Neg", [tiny]), tiny])
    result = ctx.emit("Where", [ctx.emit("Equal", [x, zero]), signed_tiny, moved])
    result = ctx.emit("Where", [ctx.emit("Equal", [x, y]), y, result])
    nan = ctx.emit("Or", [ctx.emit("IsNaN", [x]), ctx.emit("IsNaN", [y])])
    return [ctx.emit("Where", [nan, ctx.emit("Add", [x, y]), result])]


_MULHI_WIDE = {DT.INT8: (DT.INT32, 8), DT.INT16: (DT.INT32, 16), DT.INT32: (DT.INT64, 32),
               DT.UINT8: (DT.UINT32, 8), DT.UINT16: (DT.UINT32, 16), DT.UINT32: (DT.UINT64, 32)}


def _mulhi_check(op: ir.Operation) -> str | None:
    element = _element(op.operands[0])
    if element in ("i64", "ui64"):
        return f"mulhi of {element}: the 128-bit product has no ONNX integer type"
    if element == "i1":
        return "mulhi of i1"
    return None


@export_rule("chlo.mulhi", check=_mulhi_check)
def export_mulhi(ctx: ExportContext) -> list[onnx_ir.Value]:
    dtype = ctx.operand_dtype(0)
    wide, width = _MULHI_WIDE[dtype]
    product = ctx.emit("Mul", [ctx.cast(ctx.input(0), wide), ctx.cast(ctx.input(1), wide)])
    scale = ctx.const(np.array(1 << width, wide.numpy()))
    if wide in (DT.UINT32, DT.UINT64):
        high = ctx.emit("BitShift", [product, ctx.const(np.array(width, wide.numpy()))], {"direction": "RIGHT"})
    else:
        # floor(p / 2^width): p - (p mod 2^width) (Mod with fmod=0 is non-negative here) is a multiple.
        remainder = ctx.emit("Mod", [product, scale], {"fmod": 0})
        high = ctx.emit("Div", [ctx.emit("Sub", [product, remainder]), scale])
    return [ctx.cast(high, dtype)]
