"""VJP rules of passes/autodiff/elementwise.py against finite differences.

See tests/autodiff/vjp_cases.py for the check (inner-product identity against central finite
differences, in float64).
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from tests.autodiff.vjp_cases import (POSITIVE, T23, UNIT, Case, away_from_zero, binary, check_case, fixed, inputs,
                                      normal, off_integers, tensor_type, unary, uniform)

from tests.autodiff.vjp_check import compile_vjp, run

UNARY_CASES = [
    unary("stablehlo.negate"),
    unary("stablehlo.abs", away_from_zero(2, 3)),
    unary("stablehlo.exponential"),
    unary("stablehlo.exponential_minus_one"),
    unary("stablehlo.log", POSITIVE),
    unary("stablehlo.log_plus_one", uniform(-0.5, 2.0, 2, 3)),
    unary("stablehlo.sqrt", POSITIVE),
    unary("stablehlo.rsqrt", POSITIVE),
    unary("stablehlo.cbrt", away_from_zero(2, 3)),
    unary("stablehlo.tanh"),
    unary("stablehlo.logistic"),
    unary("stablehlo.sine"),
    unary("stablehlo.cosine"),
    unary("stablehlo.tan", UNIT),
    unary("stablehlo.floor", off_integers(2, 3)),
    unary("stablehlo.ceil", off_integers(2, 3)),
    unary("stablehlo.round_nearest_even", off_integers(2, 3)),
    unary("stablehlo.round_nearest_afz", off_integers(2, 3)),
    unary("stablehlo.sign", away_from_zero(2, 3)),
]


def _remainder_inputs(rng: np.random.Generator) -> list[np.ndarray]:
    y = rng.choice([-1.0, 1.0], (2, 3)) * rng.uniform(1.0, 2.0, (2, 3))
    # x / y = n + f with f in [0.2, 0.8]: away from the jumps of trunc(x / y)
    x = y * (rng.integers(-3, 3, (2, 3)) + rng.uniform(0.2, 0.8, (2, 3)))
    return [x, y]


BINARY_CASES = [
    binary("stablehlo.add"),
    binary("stablehlo.subtract"),
    binary("stablehlo.multiply"),
    binary("stablehlo.divide", rhs=away_from_zero(2, 3)),
    binary("stablehlo.power", lhs=POSITIVE),
    binary("stablehlo.atan2"),
    binary("stablehlo.maximum"),
    binary("stablehlo.minimum"),
    dataclasses.replace(binary("stablehlo.remainder"), inputs=_remainder_inputs),
]

TIE_CASES = [
    # max(x, x) = x: each side gets half the cotangent, the sum is exact.
    Case(
        "maximum-tie",
        ("stablehlo.maximum",),
        f"""
func.func @main(%x: {T23}) -> {T23} {{
  %z = stablehlo.maximum %x, %x : {T23}
  return %z : {T23}
}}""",
        inputs(normal(2, 3)),
    ),
    Case(
        "minimum-tie",
        ("stablehlo.minimum",),
        f"""
func.func @main(%x: {T23}) -> {T23} {{
  %z = stablehlo.minimum %x, %x : {T23}
  return %z : {T23}
}}""",
        inputs(normal(2, 3)),
    ),
    Case(
        "power-zero-exponent",
        ("stablehlo.power",),
        f"""
func.func @main(%x: {T23}) -> {T23} {{
  %zero = stablehlo.constant dense<0.0> : {T23}
  %z = stablehlo.power %x, %zero : {T23}
  %w = stablehlo.multiply %z, %x : {T23}
  return %w : {T23}
}}""",
        inputs(POSITIVE),
    ),
]

SELECT_CLAMP_CONVERT_CASES = [
    Case(
        "select-compare",
        ("stablehlo.select", "stablehlo.compare", "stablehlo.constant"),
        f"""
func.func @main(%x: {T23}, %y: {T23}) -> {T23} {{
  %zero = stablehlo.constant dense<0.0> : {T23}
  %p = stablehlo.compare GT, %x, %zero : ({T23}, {T23}) -> {tensor_type((2, 3), "i1")}
  %z = stablehlo.select %p, %x, %y : {tensor_type((2, 3), "i1")}, {T23}
  %w = stablehlo.multiply %z, %y : {T23}
  return %w : {T23}
}}""",
        inputs(away_from_zero(2, 3), normal(2, 3)),
    ),
    Case(
        "select-scalar-predicate",
        ("stablehlo.select",),
        f"""
func.func @main(%p: tensor<i1>, %x: {T23}, %y: {T23}) -> {T23} {{
  %z = stablehlo.select %p, %x, %y : tensor<i1>, {T23}
  return %z : {T23}
}}""",
        inputs(fixed(np.array(True)), normal(2, 3), normal(2, 3)),
    ),
    Case(
        "boolean-logic-no-cotangent",
        ("stablehlo.and", "stablehlo.or", "stablehlo.xor", "stablehlo.not", "stablehlo.is_finite"),
        f"""
func.func @main(%x: {T23}, %y: {T23}) -> {T23} {{
  %zero = stablehlo.constant dense<0.0> : {T23}
  %a = stablehlo.compare GT, %x, %zero : ({T23}, {T23}) -> {tensor_type((2, 3), "i1")}
  %b = stablehlo.compare LT, %y, %zero : ({T23}, {T23}) -> {tensor_type((2, 3), "i1")}
  %f = stablehlo.is_finite %x : ({T23}) -> {tensor_type((2, 3), "i1")}
  %c = stablehlo.and %a, %f : {tensor_type((2, 3), "i1")}
  %d = stablehlo.xor %c, %b : {tensor_type((2, 3), "i1")}
  %e = stablehlo.not %d : {tensor_type((2, 3), "i1")}
  %g = stablehlo.or %e, %a : {tensor_type((2, 3), "i1")}
  %xy = stablehlo.multiply %x, %y : {T23}
  %z = stablehlo.select %g, %xy, %y : {tensor_type((2, 3), "i1")}, {T23}
  return %z : {T23}
}}""",
        inputs(away_from_zero(2, 3), away_from_zero(2, 3)),
    ),
    Case(
        "clamp-scalar-bounds",
        ("stablehlo.clamp",),
        f"""
func.func @main(%lo: tensor<f64>, %x: {tensor_type((4, 5))}, %hi: tensor<f64>) -> {tensor_type((4, 5))} {{
  %z = stablehlo.clamp %lo, %x, %hi : (tensor<f64>, {tensor_type((4, 5))}, tensor<f64>) -> {tensor_type((4, 5))}
  return %z : {tensor_type((4, 5))}
}}""",
        # |x| in [0.1, 0.4] or [0.6, 2]: away from the bounds -0.5 and 0.5
        inputs(
            fixed(np.array(-0.5)),
            lambda rng: rng.choice([-1.0, 1.0], (4, 5)) * rng.choice([0.25, 1.3], (4, 5))
            + rng.uniform(-0.1, 0.1, (4, 5)),
            fixed(np.array(0.5)),
        ),
    ),
    Case(
        "clamp-tensor-bounds",
        ("stablehlo.clamp",),
        f"""
func.func @main(%lo: {T23}, %x: {T23}, %hi: {T23}) -> {T23} {{
  %z = stablehlo.clamp %lo, %x, %hi : {T23}
  return %z : {T23}
}}""",
        inputs(
            fixed(np.full((2, 3), -0.5)),
            fixed(np.array([[-2.0, -0.2, 0.3], [1.5, 0.1, -0.9]])),
            fixed(np.full((2, 3), 0.5)),
        ),
    ),
    Case(
        # f32 -> f64 is linear after the convert, so central differences are exact for any
        # step: a large step keeps the f32 rounding of x + eps t negligible (rtol 1e-5).
        "convert-f32-to-f64",
        ("stablehlo.convert",),
        f"""
func.func @main(%x: {tensor_type((2, 3), "f32")}, %w: {T23}) -> {T23} {{
  %y = stablehlo.convert %x : ({tensor_type((2, 3), "f32")}) -> {T23}
  %z = stablehlo.multiply %y, %w : {T23}
  return %z : {T23}
}}""",
        inputs(lambda rng: rng.standard_normal((2, 3)).astype(np.float32), normal(2, 3)),
        eps=0.5,
        rtol=1e-5,
    ),
    Case(
        "convert-through-int-no-cotangent",
        ("stablehlo.convert",),
        f"""
func.func @main(%x: {T23}) -> {T23} {{
  %i = stablehlo.convert %x : ({T23}) -> {tensor_type((2, 3), "i32")}
  %f = stablehlo.convert %i : ({tensor_type((2, 3), "i32")}) -> {T23}
  %z = stablehlo.multiply %f, %x : {T23}
  return %z : {T23}
}}""",
        inputs(off_integers(2, 3)),
    ),
    Case(
        "reduce-precision-identity",
        ("stablehlo.reduce_precision",),
        f"""
func.func @main(%x: {T23}) -> {T23} {{
  %y = stablehlo.reduce_precision %x, format = e11m52 : {T23}
  %z = stablehlo.multiply %y, %y : {T23}
  return %z : {T23}
}}""",
        inputs(normal(2, 3)),
    ),
]

CASES = [*UNARY_CASES, *BINARY_CASES, *TIE_CASES, *SELECT_CLAMP_CONVERT_CASES]


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_vjp_matches_finite_differences(case: Case):
    check_case(case)


@pytest.mark.parametrize("op", ["maximum", "minimum"])
def test_max_min_tie_splits_cotangent_equally(op):
    """max(x, y) at x == y: each operand gets exactly half the cotangent (JAX's rule)."""
    text = f"""
func.func @main(%x: {T23}, %y: {T23}) -> {T23} {{
  %z = stablehlo.{op} %x, %y : {T23}
  return %z : {T23}
}}"""
    forward, backward, device, _ = compile_vjp(text)
    rng = np.random.default_rng(1)
    x = rng.standard_normal((2, 3))
    y = x.copy()
    y[0, 0] -= 1.0  # one place without a tie
    c = rng.standard_normal((2, 3))
    ct_x, ct_y = run(backward, [x, y, c], device)
    expected_x = c / 2
    expected_y = c / 2
    winner_is_x = op == "maximum"
    expected_x[0, 0] = c[0, 0] if winner_is_x else 0.0
    expected_y[0, 0] = 0.0 if winner_is_x else c[0, 0]
    np.testing.assert_array_equal(ct_x, expected_x)
    np.testing.assert_array_equal(ct_y, expected_y)
