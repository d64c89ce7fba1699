"""Scalar activations (elementwise, in the operand's dtype), shared by the activation, elementwise
and recurrent families and the com.microsoft fused ops, so each has one formula.

Each takes and returns an ``ir.Value``; callers widen float16/bfloat16 first where they compute
in float32. :func:`erf` is the accurate float32 erf that exact GELU needs.
"""

from __future__ import annotations

import numpy as np
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import chlo, stablehlo

from onnx_stablehlo.frontend.builders.core import (
    compare,
    convert,
    constant,
    dims_of,
    dtype_of,
    float64_allowed,
    full_like,
    record,
    splat,
)
from onnx_stablehlo.frontend.dtypes import DataType

__all__ = [
    "erf",
    "scale",
    "shift",
    "clamp01",
    "relu",
    "leaky_relu",
    "thresholded_relu",
    "elu",
    "hard_sigmoid",
    "softplus",
    "softsign",
]


def scale(x: ir.Value, factor: float) -> ir.Value:
    """``x * factor`` (the factor splat to ``x``)."""
    return stablehlo.multiply(x, full_like(x, factor))


def shift(x: ir.Value, term: float) -> ir.Value:
    """``x + term`` (the term splat to ``x``)."""
    return stablehlo.add(x, full_like(x, term))


def clamp01(x: ir.Value) -> ir.Value:
    """``clamp(x, 0, 1)``."""
    return stablehlo.clamp(splat(0, dtype_of(x)), x, splat(1, dtype_of(x)))


def relu(x: ir.Value) -> ir.Value:
    """``max(x, 0)``."""
    return stablehlo.maximum(x, full_like(x, 0))


def leaky_relu(x: ir.Value, alpha: float) -> ir.Value:
    """``select(x < 0, alpha * x, x)``."""
    return stablehlo.select(compare(x, full_like(x, 0), "LT"), scale(x, alpha), x)


def thresholded_relu(x: ir.Value, alpha: float) -> ir.Value:
    """``select(x > alpha, x, 0)``."""
    return stablehlo.select(compare(x, full_like(x, alpha), "GT"), x, full_like(x, 0))


def elu(x: ir.Value, alpha: float) -> ir.Value:
    """``x`` for ``x > 0``, else ``alpha * (exp(x) - 1)`` (``expm1``)."""
    negative = scale(stablehlo.exponential_minus_one(x), alpha)
    return stablehlo.select(compare(x, full_like(x, 0), "GT"), x, negative)


def hard_sigmoid(x: ir.Value, alpha: float, beta: float) -> ir.Value:
    """``clamp(alpha * x + beta, 0, 1)``."""
    return clamp01(shift(scale(x, alpha), beta))


def softplus(x: ir.Value) -> ir.Value:
    """``log(1 + exp(x))`` as ``max(x, 0) + log1p(exp(-|x|))`` (no overflow for large x)."""
    positive = stablehlo.maximum(x, full_like(x, 0))
    tail = stablehlo.log_plus_one(stablehlo.exponential(stablehlo.negate(stablehlo.abs(x))))
    return stablehlo.add(positive, tail)


def softsign(x: ir.Value) -> ir.Value:
    """``x / (|x| + 1)``."""
    return stablehlo.divide(x, shift(stablehlo.abs(x), 1))


ERF_COEFFICIENTS = (
    # erf(x)/x as a polynomial in t = x*x/8 - 1 (|x| <= 4), lowest order first (tools/fit_erf.py);
    # the exporter's idiom rule (exporter/idioms.py) recognises the same polynomial.
    0.3535309956441155,
    -0.17657623321204846,
    0.1316751167236021,
    -0.1077104490414851,
    0.09020900091822269,
    -0.07472772604291059,
    0.059886799520317696,
    -0.04576648219343254,
    0.033061469312073107,
    -0.02246618228827233,
    0.014345736370187677,
    -0.008630040847743426,
    0.004864629097372639,
    -0.0025303514504570333,
    0.001272321840892123,
    -0.0006730914809618823,
    0.00029918311337250996,
    -7.231423106077696e-05,
    3.107333479309528e-05,
    -3.6714682068024315e-05,
    1.3255744908573331e-05,
)


def erf(x: ir.Value) -> ir.Value:
    """``erf(x)`` for an ONNX Erf or exact Gelu; float32 correctly rounded on 99.99% of inputs.

    XLA's float32 erf (``chlo.erf``) is up to 5 ulp off and correctly rounded on less than half
    of GELU-sized inputs; onnxruntime's MLAS is within one ulp and correctly rounded on 85%.
    int8 models amplify the difference (a DynamicQuantizeLinear after GELU rounds the other
    way). For float32, ``x`` is clamped to [-4, 4] (float32 erf is +-1 beyond 3.92), and
    ``x * P(x*x/8 - 1)`` is evaluated in float64 by Horner's rule and rounded once, P being the
    degree-20 fit of erf(x)/x that ``tools/fit_erf.py`` makes (relative error 1e-14; at most
    1 ulp off, and only where erf lies within 1e-14 of a float32 rounding boundary). This costs
    about 15% over ``chlo.erf`` on XLA CPU and needs float64 on the device: where the importer
    disallows float64 (``import_model(float64_math=False)``, which ``CompiledModel`` does for
    TPU, whose float64 is emulated) it is ``chlo.erf``. NaN stays NaN, the
    sign of zero is kept. Other dtypes use ``chlo.erf`` (float16/bfloat16 are computed in float32
    there and rounded once more, float64 is already accurate).

    Source: Abramowitz & Stegun 7.1.1 (definition); the fit is ours.
    """
    if dtype_of(x) != DataType.FLOAT or not float64_allowed():
        return chlo.erf(x)
    dims = dims_of(x)
    bound = constant(np.array(4.0, np.float64))
    wide = stablehlo.clamp(stablehlo.negate(bound), convert(x, DataType.DOUBLE), bound)

    def double(value: float) -> ir.Value:
        return splat(value, DataType.DOUBLE, dims)

    t = stablehlo.subtract(stablehlo.multiply(stablehlo.multiply(wide, wide), double(0.125)), double(1.0))
    poly = double(ERF_COEFFICIENTS[-1])
    for coefficient in ERF_COEFFICIENTS[-2::-1]:
        poly = stablehlo.add(stablehlo.multiply(poly, t), double(coefficient))
    return record(convert(stablehlo.multiply(wide, poly), DataType.FLOAT), dims)
