"""VJP rules of passes/autodiff/chlo.py (the chlo ops) against finite differences.

See tests/autodiff/vjp_cases.py for the check (inner-product identity against central finite
differences, in float64).
"""

from __future__ import annotations

import pytest

from tests.autodiff.vjp_cases import UNIT, Case, check_case, unary, uniform


UNARY_CASES = [
    unary("chlo.erf"),
    unary("chlo.erfc"),
    unary("chlo.erf_inv", UNIT),
    unary("chlo.sinh"),
    unary("chlo.cosh"),
    unary("chlo.tan", UNIT),
    unary("chlo.asin", UNIT),
    unary("chlo.acos", UNIT),
    unary("chlo.atan"),
    unary("chlo.asinh"),
    unary("chlo.acosh", uniform(1.5, 3.0, 2, 3)),
    unary("chlo.atanh", UNIT),
    unary("chlo.square"),
    unary("chlo.lgamma", uniform(0.5, 3.0, 2, 3)),
    unary("chlo.digamma", uniform(0.5, 3.0, 2, 3)),
]

CASES = UNARY_CASES


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_vjp_matches_finite_differences(case: Case):
    check_case(case)
