"""VJP rules of passes/autodiff/control.py (if, optimization_barrier) against finite differences.

See tests/autodiff/vjp_cases.py for the check (inner-product identity against central finite
differences, in float64).
"""

from __future__ import annotations

import numpy as np
import pytest

from tests.autodiff.vjp_cases import T23, Case, check_case, fixed, inputs, normal


def _if_case(case_id: str, predicate: bool) -> Case:
    text = f"""
func.func @main(%p: tensor<i1>, %x: {T23}, %w: {T23}) -> ({T23}, {T23}) {{
  %e = stablehlo.exponential %x : {T23}
  %r:2 = "stablehlo.if"(%p) ({{
    %s = stablehlo.sine %x : {T23}
    %m = stablehlo.multiply %s, %w : {T23}
    stablehlo.return %m, %e : {T23}, {T23}
  }}, {{
    %t = stablehlo.tanh %e : {T23}
    stablehlo.return %t, %x : {T23}, {T23}
  }}) : (tensor<i1>) -> ({T23}, {T23})
  return %r#0, %r#1 : {T23}, {T23}
}}"""
    return Case(case_id, ("stablehlo.if",), text, inputs(fixed(np.array(predicate)), normal(2, 3), normal(2, 3)))


CONTROL_CASES = [
    _if_case("if-true-branch", True),
    _if_case("if-false-branch", False),
    Case(
        "optimization-barrier",
        ("stablehlo.optimization_barrier",),
        f"""
func.func @main(%x: {T23}, %y: {T23}) -> {T23} {{
  %a, %b = stablehlo.optimization_barrier %x, %y : {T23}, {T23}
  %z = stablehlo.multiply %a, %b : {T23}
  return %z : {T23}
}}""",
        inputs(normal(2, 3), normal(2, 3)),
    ),
]

CASES = CONTROL_CASES


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_vjp_matches_finite_differences(case: Case):
    check_case(case)
