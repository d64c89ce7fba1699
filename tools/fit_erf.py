"""Fits the float64 polynomial behind ``builders.erf`` (the float32 Erf lowering) and checks it.

erf(x) = x * P(t) with t = x*x/8 - 1 for |x| <= 4 (x clamped there: float32 erf rounds to
+-1 beyond 3.92). P is the degree-20 Chebyshev least-squares fit of erf(sqrt(u))/sqrt(u),
u = x*x in [0, 16], on 4000 Chebyshev points, with Python's ``math.erf`` (double precision)
as the reference, converted to monomial coefficients in t for a Horner evaluation.

Run ``python tools/fit_erf.py`` to print the coefficient tuple and how often the float32
result is correctly rounded on a seeded sample (``builders.activations.ERF_COEFFICIENTS`` holds the output).
"""

from __future__ import annotations

import math

import numpy as np
from numpy.polynomial import chebyshev

DEGREE = 20


def _erf_over_x(u: np.ndarray) -> np.ndarray:
    root = np.sqrt(u)
    return np.array([math.erf(r) / r if r > 0 else 2 / math.sqrt(math.pi) for r in root])


def fit(degree: int = DEGREE) -> np.ndarray:
    """Monomial coefficients of P in t = u/8 - 1, lowest order first."""
    nodes = np.cos(np.linspace(0.0, np.pi, 4000))  # t in [-1, 1]
    series = chebyshev.chebfit(nodes, _erf_over_x(8.0 * nodes + 8.0), degree)
    return chebyshev.cheb2poly(series)


def evaluate(x: np.ndarray, coefficients: np.ndarray) -> np.ndarray:
    """The float32 erf the lowering computes, in numpy (float64 Horner, rounded once)."""
    xd = np.clip(x.astype(np.float64), -4.0, 4.0)
    t = xd * xd / 8.0 - 1.0
    poly = np.full_like(t, coefficients[-1])
    for c in coefficients[-2::-1]:
        poly = poly * t + c
    return (xd * poly).astype(np.float32)


def main() -> None:
    coefficients = fit()
    print("ERF_COEFFICIENTS = (")
    for c in coefficients:
        print(f"    {float(c)!r},")
    print(")")
    x = (np.random.default_rng(0).standard_normal(200_000) * 1.5).astype(np.float32)
    exact = np.array([math.erf(float(v)) for v in x]).astype(np.float32)
    got = evaluate(x, coefficients)
    ulps = np.abs(got.view(np.int32).astype(np.int64) - exact.view(np.int32))
    print(f"# correctly rounded: {np.mean(ulps == 0):.5f}, max error {ulps.max()} ulp")


if __name__ == "__main__":
    main()
