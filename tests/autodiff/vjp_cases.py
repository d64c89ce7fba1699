"""The finite-difference cases of the VJP rule tests (test_vjp_<family>.py) and their check.

Each case is a small ``@main`` in StableHLO text holding the op under test (plus whatever
makes its inputs, such as a ``compare`` for a ``select`` predicate). ``check_case`` builds
``@main_vjp``, runs both on the PJRT CPU client and checks the inner-product identity
``<J t, c> == <t, J^T c>`` for seeded random tangents ``t`` (every float argument) and output
cotangents ``c``: ``|lhs - rhs| <= RTOL * max(|lhs|, |rhs|) + ATOL`` with ``RTOL = 1e-6``,
``ATOL = 1e-8`` (central differences with step 1e-6 are accurate to ~1e-9 here). Inputs of
piecewise ops (floor, max pools, sort, remainder, clamp) stay away from their kinks.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence

import numpy as np

from tests.autodiff.vjp_check import ATOL, RTOL, check_vjp


Inputs = Callable[[np.random.Generator], list[np.ndarray]]


@dataclasses.dataclass(frozen=True)
class Case:
    """One rule check.

    Attributes:
        id: the pytest id.
        covers: the op names whose rules this case exercises.
        text: the module.
        inputs: seeded inputs, one per ``@main`` argument.
        wrt: argument indices to differentiate (default: every float argument).
        eps: the central-difference step.
        rtol: the relative tolerance (looser only where stated).
    """

    id: str
    covers: tuple[str, ...]
    text: str
    inputs: Inputs
    wrt: tuple[int, ...] | None = None
    eps: float = 1e-6
    rtol: float = RTOL


def tensor_type(shape: Sequence[int], element: str = "f64") -> str:
    return "tensor<" + "".join(f"{d}x" for d in shape) + element + ">"


def normal(*shape: int, scale: float = 1.0) -> Callable[[np.random.Generator], np.ndarray]:
    return lambda rng: scale * rng.standard_normal(shape)


def uniform(lo: float, hi: float, *shape: int) -> Callable[[np.random.Generator], np.ndarray]:
    return lambda rng: rng.uniform(lo, hi, shape)


def off_integers(*shape: int) -> Callable[[np.random.Generator], np.ndarray]:
    """Values k + 0.2 ... k + 0.4 or k + 0.6 ... k + 0.8: no floor/ceil/round kink nearby."""
    return lambda rng: (
        rng.integers(-3, 3, shape) + rng.choice([0.3, 0.7], shape) + rng.uniform(-0.1, 0.1, shape)
    )


def away_from_zero(*shape: int) -> Callable[[np.random.Generator], np.ndarray]:
    return lambda rng: rng.choice([-1.0, 1.0], shape) * rng.uniform(0.3, 2.0, shape)


def fixed(array) -> Callable[[np.random.Generator], np.ndarray]:
    return lambda rng: np.asarray(array)


def inputs(*makers: Callable[[np.random.Generator], np.ndarray]) -> Inputs:
    return lambda rng: [make(rng) for make in makers]


def unary(op: str, make: Callable[[np.random.Generator], np.ndarray] | None = None, shape=(2, 3)) -> Case:
    t = tensor_type(shape)
    text = f"""
func.func @main(%x: {t}) -> {t} {{
  %y = "{op}"(%x) : ({t}) -> {t}
  return %y : {t}
}}"""
    return Case(op.replace(".", "-"), (op,), text, inputs(make or normal(*shape)))


def binary(op: str, lhs=None, rhs=None, shape=(2, 3), case_id: str | None = None) -> Case:
    t = tensor_type(shape)
    text = f"""
func.func @main(%x: {t}, %y: {t}) -> {t} {{
  %z = "{op}"(%x, %y) : ({t}, {t}) -> {t}
  return %z : {t}
}}"""
    return Case(case_id or op.replace(".", "-"), (op,), text, inputs(lhs or normal(*shape), rhs or normal(*shape)))


def distinct(*shape: int) -> Callable[[np.random.Generator], np.ndarray]:
    """A permutation of well-separated values (no ties within a window)."""
    count = math.prod(shape)
    return lambda rng: rng.permutation(np.arange(count) * 0.37 - count * 0.15).reshape(shape)


NEG_INF = "0xFFF0000000000000"
POS_INF = "0x7FF0000000000000"


def dilated_size(size: int, dilation: int) -> int:
    """The extent of ``size`` elements spread ``dilation`` apart (0 for none)."""
    return 0 if size == 0 else 1 + dilation * (size - 1)


T23 = tensor_type((2, 3))
POSITIVE = uniform(0.5, 2.0, 2, 3)
UNIT = uniform(-0.9, 0.9, 2, 3)


def check_case(case: Case) -> None:
    """Asserts the inner-product identity of ``case`` against central finite differences."""
    rng = np.random.default_rng(20261129)
    arrays = case.inputs(rng)
    result = check_vjp(case.text, arrays, rng, wrt=case.wrt, eps=case.eps)
    assert result.ok(rtol=case.rtol, atol=ATOL), (
        f"<J t, c> = {result.jt_dot_c!r} but <t, J^T c> = {result.t_dot_jtc!r} "
        f"(error {result.error:.3e})\n{result.vjp_text}"
    )
