"""VJP rules of CHLO ops the lowerings emit (``chlo.erf`` for GELU, trigonometric and
hyperbolic functions), so CHLO need not be legalized to StableHLO before differentiating.

Derivatives (cotangent = ct times):

* ``erf``: 2/sqrt(pi) exp(-x^2); ``erfc``: its negation; ``erf_inv``: sqrt(pi)/2 exp(y^2).
* ``sinh``: cosh(x); ``cosh``: sinh(x); ``tan``: 1 + y^2.
* ``asin``: 1/sqrt(1 - x^2); ``acos``: -1/sqrt(1 - x^2); ``atan``: 1/(1 + x^2).
* ``asinh``: 1/sqrt(x^2 + 1); ``acosh``: 1/sqrt((x - 1)(x + 1)); ``atanh``: 1/(1 - x^2).
* ``square``: 2x; ``lgamma``: digamma(x); ``digamma``: polygamma(1, x).
"""

from __future__ import annotations

import math

from jaxlib.mlir import ir
from jaxlib.mlir.dialects import chlo

from onnx_stablehlo.passes.autodiff import emit
from onnx_stablehlo.passes.autodiff.context import VjpContext
from onnx_stablehlo.passes.autodiff.registry import vjp_rule


def _one_minus_square(x: ir.Value) -> ir.Value:
    return emit.sub(emit.ones_like(x), emit.square(x))


@vjp_rule("chlo.erf")
def vjp_erf(ctx: VjpContext, ct: ir.Value) -> list:
    x = ctx.operands[0]
    slope = emit.mul(emit.full_like(x, 2.0 / math.sqrt(math.pi)), emit.exp(emit.neg(emit.square(x))))
    return [emit.mul(ct, slope)]


@vjp_rule("chlo.erfc")
def vjp_erfc(ctx: VjpContext, ct: ir.Value) -> list:
    x = ctx.operands[0]
    slope = emit.mul(emit.full_like(x, -2.0 / math.sqrt(math.pi)), emit.exp(emit.neg(emit.square(x))))
    return [emit.mul(ct, slope)]


@vjp_rule("chlo.erf_inv")
def vjp_erf_inv(ctx: VjpContext, ct: ir.Value) -> list:
    y = ctx.results[0]
    slope = emit.mul(emit.full_like(y, math.sqrt(math.pi) / 2.0), emit.exp(emit.square(y)))
    return [emit.mul(ct, slope)]


@vjp_rule("chlo.sinh")
def vjp_sinh(ctx: VjpContext, ct: ir.Value) -> list:
    return [emit.mul(ct, emit.cosh(ctx.operands[0]))]


@vjp_rule("chlo.cosh")
def vjp_cosh(ctx: VjpContext, ct: ir.Value) -> list:
    return [emit.mul(ct, emit.sinh(ctx.operands[0]))]


@vjp_rule("chlo.tan")
def vjp_tan(ctx: VjpContext, ct: ir.Value) -> list:
    y = ctx.results[0]
    return [emit.mul(ct, emit.add(emit.ones_like(y), emit.square(y)))]


@vjp_rule("chlo.asin")
def vjp_asin(ctx: VjpContext, ct: ir.Value) -> list:
    return [emit.mul(ct, emit.rsqrt(_one_minus_square(ctx.operands[0])))]


@vjp_rule("chlo.acos")
def vjp_acos(ctx: VjpContext, ct: ir.Value) -> list:
    return [emit.neg(emit.mul(ct, emit.rsqrt(_one_minus_square(ctx.operands[0]))))]


@vjp_rule("chlo.atan")
def vjp_atan(ctx: VjpContext, ct: ir.Value) -> list:
    x = ctx.operands[0]
    return [emit.div(ct, emit.add(emit.ones_like(x), emit.square(x)))]


@vjp_rule("chlo.asinh")
def vjp_asinh(ctx: VjpContext, ct: ir.Value) -> list:
    x = ctx.operands[0]
    return [emit.mul(ct, emit.rsqrt(emit.add(emit.square(x), emit.ones_like(x))))]


@vjp_rule("chlo.acosh")
def vjp_acosh(ctx: VjpContext, ct: ir.Value) -> list:
    x = ctx.operands[0]
    one = emit.ones_like(x)
    return [emit.mul(ct, emit.rsqrt(emit.mul(emit.sub(x, one), emit.add(x, one))))]


@vjp_rule("chlo.atanh")
def vjp_atanh(ctx: VjpContext, ct: ir.Value) -> list:
    return [emit.div(ct, _one_minus_square(ctx.operands[0]))]


@vjp_rule("chlo.square")
def vjp_square(ctx: VjpContext, ct: ir.Value) -> list:
    x = ctx.operands[0]
    return [emit.mul(ct, emit.mul(emit.full_like(x, 2.0), x))]


@vjp_rule("chlo.lgamma")
def vjp_lgamma(ctx: VjpContext, ct: ir.Value) -> list:
    return [emit.mul(ct, chlo.DigammaOp(ctx.operands[0]).result)]


@vjp_rule("chlo.digamma")
def vjp_digamma(ctx: VjpContext, ct: ir.Value) -> list:
    x = ctx.operands[0]
    return [emit.mul(ct, chlo.PolygammaOp(emit.ones_like(x), x).result)]
