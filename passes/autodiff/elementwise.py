"""VJP rules of elementwise ops: unary and binary math, select, clamp, convert, no-cotangent ops.

StableHLO elementwise ops take operands of one shape (no implicit broadcasting), so no rule
here has to sum a cotangent back to a smaller shape, except ``clamp`` whose bounds may be
rank 0. Derivatives follow JAX (``jax/_src/lax/lax.py``):

* ``abs``: ``select(x >= 0, ct, -ct)`` (derivative 1 at 0).
* ``maximum``/``minimum``: the cotangent is split equally between operands that tie with the
  result (JAX's ``_balanced_eq``).
* ``power(x, y)``: d/dx is 0 where ``y == 0``; d/dy uses ``log(x)`` with ``x == 0`` replaced
  by 1, so it is 0 there.
* ``floor``, ``ceil``, ``round_*``, ``sign``: zero derivative (no cotangent).
* Ops whose results are never floats (``compare``, ``and``, ``iota``, ``constant``, ...) get
  no cotangent; the transform never even calls a rule for them, the rules below only
  document that.
"""

from __future__ import annotations

from jaxlib.mlir import ir
from jaxlib.mlir.dialects import stablehlo

from onnx_stablehlo.passes.autodiff import emit
from onnx_stablehlo.passes.autodiff.context import VjpContext
from onnx_stablehlo.passes.autodiff.registry import vjp_rule

# Unary ops: cotangent = ct * f'(x), written with the primal operand x and result y. --------


@vjp_rule("stablehlo.negate")
def vjp_negate(ctx: VjpContext, ct: ir.Value) -> list:
    return [emit.neg(ct)]


@vjp_rule("stablehlo.abs")
def vjp_abs(ctx: VjpContext, ct: ir.Value) -> list:
    (x,) = ctx.operands
    return [emit.select(emit.compare(x, emit.zeros_like(x), "GE"), ct, emit.neg(ct))]


@vjp_rule("stablehlo.exponential")
def vjp_exponential(ctx: VjpContext, ct: ir.Value) -> list:
    return [emit.mul(ct, ctx.results[0])]


@vjp_rule("stablehlo.exponential_minus_one")
def vjp_exponential_minus_one(ctx: VjpContext, ct: ir.Value) -> list:
    y = ctx.results[0]
    return [emit.mul(ct, emit.add(y, emit.ones_like(y)))]


@vjp_rule("stablehlo.log")
def vjp_log(ctx: VjpContext, ct: ir.Value) -> list:
    return [emit.div(ct, ctx.operands[0])]


@vjp_rule("stablehlo.log_plus_one")
def vjp_log_plus_one(ctx: VjpContext, ct: ir.Value) -> list:
    x = ctx.operands[0]
    return [emit.div(ct, emit.add(x, emit.ones_like(x)))]


@vjp_rule("stablehlo.sqrt")
def vjp_sqrt(ctx: VjpContext, ct: ir.Value) -> list:
    y = ctx.results[0]
    return [emit.div(emit.mul(ct, emit.full_like(y, 0.5)), y)]


@vjp_rule("stablehlo.rsqrt")
def vjp_rsqrt(ctx: VjpContext, ct: ir.Value) -> list:
    # d/dx x^-1/2 = -1/2 * y / x
    (x,), y = ctx.operands, ctx.results[0]
    return [emit.mul(ct, emit.mul(emit.full_like(x, -0.5), emit.div(y, x)))]


@vjp_rule("stablehlo.cbrt")
def vjp_cbrt(ctx: VjpContext, ct: ir.Value) -> list:
    # d/dx x^1/3 = 1 / (3 y^2)
    y = ctx.results[0]
    return [emit.div(ct, emit.mul(emit.full_like(y, 3.0), emit.square(y)))]


@vjp_rule("stablehlo.tanh")
def vjp_tanh(ctx: VjpContext, ct: ir.Value) -> list:
    y = ctx.results[0]
    return [emit.mul(ct, emit.sub(emit.ones_like(y), emit.square(y)))]


@vjp_rule("stablehlo.logistic")
def vjp_logistic(ctx: VjpContext, ct: ir.Value) -> list:
    y = ctx.results[0]
    return [emit.mul(ct, emit.mul(y, emit.sub(emit.ones_like(y), y)))]


@vjp_rule("stablehlo.sine")
def vjp_sine(ctx: VjpContext, ct: ir.Value) -> list:
    return [emit.mul(ct, emit.cos(ctx.operands[0]))]


@vjp_rule("stablehlo.cosine")
def vjp_cosine(ctx: VjpContext, ct: ir.Value) -> list:
    return [emit.neg(emit.mul(ct, emit.sin(ctx.operands[0])))]


@vjp_rule("stablehlo.tan")
def vjp_tan(ctx: VjpContext, ct: ir.Value) -> list:
    y = ctx.results[0]
    return [emit.mul(ct, emit.add(emit.ones_like(y), emit.square(y)))]


@vjp_rule("stablehlo.floor")
@vjp_rule("stablehlo.ceil")
@vjp_rule("stablehlo.round_nearest_even")
@vjp_rule("stablehlo.round_nearest_afz")
@vjp_rule("stablehlo.sign")
def vjp_zero_derivative(ctx: VjpContext, ct: ir.Value) -> list:
    """Piecewise-constant ops: zero derivative almost everywhere (JAX's ``defjvp_zero``)."""
    return [None] * len(ctx.operands)


@vjp_rule("stablehlo.reduce_precision")
def vjp_reduce_precision(ctx: VjpContext, ct: ir.Value) -> list:
    """Treated as the identity, like JAX does."""
    return [ct]


# Binary ops -------------------------------------------------------------------------------------


@vjp_rule("stablehlo.add")
def vjp_add(ctx: VjpContext, ct: ir.Value) -> list:
    return [ct, ct]


@vjp_rule("stablehlo.subtract")
def vjp_subtract(ctx: VjpContext, ct: ir.Value) -> list:
    return [ct, emit.neg(ct) if ctx.need(1) else None]


@vjp_rule("stablehlo.multiply")
def vjp_multiply(ctx: VjpContext, ct: ir.Value) -> list:
    x, y = ctx.operands
    return [
        emit.mul(ct, y) if ctx.need(0) else None,
        emit.mul(x, ct) if ctx.need(1) else None,
    ]


@vjp_rule("stablehlo.divide")
def vjp_divide(ctx: VjpContext, ct: ir.Value) -> list:
    # z = x / y: dz/dx = 1/y, dz/dy = -z/y
    (_, y), z = ctx.operands, ctx.results[0]
    return [
        emit.div(ct, y) if ctx.need(0) else None,
        emit.neg(emit.div(emit.mul(ct, z), y)) if ctx.need(1) else None,
    ]


@vjp_rule("stablehlo.remainder")
def vjp_remainder(ctx: VjpContext, ct: ir.Value) -> list:
    # z = x - y * trunc(x / y): dz/dx = 1, dz/dy = -trunc(x / y)
    x, y = ctx.operands
    quotient = None
    if ctx.need(1):
        ratio = emit.div(x, y)
        quotient = emit.mul(stablehlo.SignOp(ratio).result, stablehlo.FloorOp(stablehlo.AbsOp(ratio).result).result)
    return [ct if ctx.need(0) else None, emit.neg(emit.mul(ct, quotient)) if ctx.need(1) else None]


@vjp_rule("stablehlo.power")
def vjp_power(ctx: VjpContext, ct: ir.Value) -> list:
    (x, y), z = ctx.operands, ctx.results[0]
    ct_x = ct_y = None
    if ctx.need(0):
        # y * x^(y-1), and 0 where y == 0 (so 0^0 has derivative 0, as in JAX)
        slope = emit.mul(y, emit.power(x, emit.sub(y, emit.ones_like(y))))
        slope = emit.select(emit.compare(y, emit.zeros_like(y), "EQ"), emit.zeros_like(y), slope)
        ct_x = emit.mul(ct, slope)
    if ctx.need(1):
        # log(x) * z with log(0) replaced by log(1) = 0
        safe_x = emit.select(emit.compare(x, emit.zeros_like(x), "EQ"), emit.ones_like(x), x)
        ct_y = emit.mul(ct, emit.mul(emit.log(safe_x), z))
    return [ct_x, ct_y]


@vjp_rule("stablehlo.atan2")
def vjp_atan2(ctx: VjpContext, ct: ir.Value) -> list:
    # z = atan2(a, b): dz/da = b / (a^2 + b^2), dz/db = -a / (a^2 + b^2)
    a, b = ctx.operands
    denominator = emit.add(emit.square(a), emit.square(b))
    scaled = emit.div(ct, denominator)
    return [
        emit.mul(scaled, b) if ctx.need(0) else None,
        emit.neg(emit.mul(scaled, a)) if ctx.need(1) else None,
    ]


def _balanced_eq(x: ir.Value, z: ir.Value, y: ir.Value) -> ir.Value:
    """1 where x == z and y != z, 1/2 where both tie with z, 0 elsewhere (JAX's rule)."""
    one, zero, two = emit.ones_like(z), emit.zeros_like(z), emit.full_like(z, 2.0)
    return emit.div(
        emit.select(emit.compare(x, z, "EQ"), one, zero),
        emit.select(emit.compare(y, z, "EQ"), two, one),
    )


@vjp_rule("stablehlo.maximum")
@vjp_rule("stablehlo.minimum")
def vjp_max_min(ctx: VjpContext, ct: ir.Value) -> list:
    (x, y), z = ctx.operands, ctx.results[0]
    return [
        emit.mul(ct, _balanced_eq(x, z, y)) if ctx.need(0) else None,
        emit.mul(ct, _balanced_eq(y, z, x)) if ctx.need(1) else None,
    ]


# Select, clamp, convert ---------------------------------------------------------------------------


@vjp_rule("stablehlo.select")
def vjp_select(ctx: VjpContext, ct: ir.Value) -> list:
    pred, on_true, _ = ctx.operands
    if emit.rank(pred) != emit.rank(ct):  # a rank-0 predicate selects whole tensors
        pred = emit.broadcast_to(pred, ct)
    zeros = emit.zeros_like(ct)
    return [
        None,
        emit.select(pred, ct, zeros) if ctx.need(1) else None,
        emit.select(pred, zeros, ct) if ctx.need(2) else None,
    ]


@vjp_rule("stablehlo.clamp")
def vjp_clamp(ctx: VjpContext, ct: ir.Value) -> list:
    """clamp(lo, x, hi): x's cotangent where lo < x < hi, lo's where lo > x (and lo < hi), hi's
    where x > hi; rank-0 bounds get the sum of theirs (JAX's rule)."""
    lo, x, hi = ctx.operands
    rank = emit.rank(x)
    lo_full, hi_full = emit.broadcast_to(lo, x), emit.broadcast_to(hi, x)
    zeros = emit.zeros_like(ct)

    def unbroadcast(bound: ir.Value, value: ir.Value) -> ir.Value:
        return emit.reduce_sum(value, range(rank)) if emit.rank(bound) != rank else value

    ct_lo = ct_x = ct_hi = None
    if ctx.need(0):
        picked = emit.logical_and(emit.compare(lo_full, x, "GT"), emit.compare(lo_full, hi_full, "LT"))
        ct_lo = unbroadcast(lo, emit.select(picked, ct, zeros))
    if ctx.need(1):
        inside = emit.logical_and(emit.compare(x, lo_full, "GT"), emit.compare(x, hi_full, "LT"))
        ct_x = emit.select(inside, ct, zeros)
    if ctx.need(2):
        ct_hi = unbroadcast(hi, emit.select(emit.compare(hi_full, x, "LT"), ct, zeros))
    return [ct_lo, ct_x, ct_hi]


@vjp_rule("stablehlo.convert")
def vjp_convert(ctx: VjpContext, ct: ir.Value) -> list:
    """float -> float: the cotangent converted back. From integers or to them: none (the
    transform never asks, since integer values are never active)."""
    (x,) = ctx.operands
    if not emit.is_float_type(x.type):
        return [None]
    return [emit.convert(ct, emit.element_type(x))]


# No cotangent: ops whose results are integers/booleans, or that have no operands. ------------------


@vjp_rule("stablehlo.compare")
@vjp_rule("stablehlo.and")
@vjp_rule("stablehlo.or")
@vjp_rule("stablehlo.xor")
@vjp_rule("stablehlo.not")
@vjp_rule("stablehlo.is_finite")
@vjp_rule("stablehlo.constant")
@vjp_rule("stablehlo.iota")
def vjp_no_cotangent(ctx: VjpContext, *cts: ir.Value | None) -> list:
    """Results are booleans/integers or constants: nothing flows back."""
    return [None] * len(ctx.operands)


