"""The numerical VJP check: <J t, c> (central differences) against <t, J^T c> (the VJP).

``check_vjp`` parses a small StableHLO module, builds ``@main_vjp`` with the gradient transform,
compiles both on the PJRT CPU client and compares the two inner products in float64.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence

import numpy as np
from jaxlib.mlir import ir

from onnx_stablehlo.passes.autodiff import build_vjp, entry_module_text
from onnx_stablehlo.frontend import jaxlib_mlir
from onnx_stablehlo.runtime import pjrt

EPS = 1e-6
"""Central-difference step (float64): truncation error ~EPS^2, rounding ~1e-16/EPS."""
RTOL = 1e-6
"""Relative tolerance on the two inner products."""
ATOL = 1e-8
"""Absolute tolerance on the two inner products (for values near 0)."""


@dataclasses.dataclass
class VjpCheck:
    """What one check computed (kept for assertion messages)."""

    jt_dot_c: float
    t_dot_jtc: float
    cotangents: list[np.ndarray]
    vjp_text: str

    @property
    def error(self) -> float:
        return abs(self.jt_dot_c - self.t_dot_jtc)

    def ok(self, rtol: float = RTOL, atol: float = ATOL) -> bool:
        return self.error <= rtol * max(abs(self.jt_dot_c), abs(self.t_dot_jtc)) + atol


def _run(executable, arrays: Sequence[np.ndarray], device) -> list[np.ndarray]:
    return pjrt.to_host(pjrt.execute(executable, [pjrt.to_device(np.asarray(a), device) for a in arrays]))


def compile_vjp(text: str, wrt: Sequence[int] | None = None):
    """Parses ``text``, builds ``@main_vjp`` and compiles both functions.

    Returns:
        ``(forward, backward, device, vjp_text)``: executables of ``@main`` and ``@main_vjp``.
    """
    context = jaxlib_mlir.make_mlir_context()
    with context:
        module = ir.Module.parse(text)
    name = build_vjp(module, wrt=wrt)
    module.operation.verify()
    vjp_text = entry_module_text(module, name)
    device = pjrt.get_device("cpu")
    forward = pjrt.compile_module(entry_module_text(module, "main"), device)
    backward = pjrt.compile_module(vjp_text, device)
    return forward, backward, device, vjp_text


def run(executable, arrays: Sequence[np.ndarray], device) -> list[np.ndarray]:
    """Runs a compiled function on host arrays; returns host arrays."""
    return _run(executable, arrays, device)


def check_vjp(
    text: str,
    inputs: Sequence[np.ndarray],
    rng: np.random.Generator,
    *,
    wrt: Sequence[int] | None = None,
    eps: float = EPS,
) -> VjpCheck:
    """Builds @main_vjp for ``text`` and evaluates both sides of the inner-product identity.

    Args:
        text: a module with ``func.func @main`` (float64 for the differentiated values).
        inputs: one array per argument of ``@main``.
        rng: the seeded generator for the directions ``t`` and ``c``.
        wrt: argument indices; default every float argument.
        eps: the central-difference step.
    """
    forward, backward, device, vjp_text = compile_vjp(text, wrt)
    return inner_product_identity(
        lambda arrays: _run(forward, arrays, device),
        lambda arrays: _run(backward, arrays, device),
        inputs, rng, vjp_text, wrt=wrt, eps=eps,
    )


def inner_product_identity(
    forward: Callable[[list[np.ndarray]], list[np.ndarray]],
    backward: Callable[[list[np.ndarray]], list[np.ndarray]],
    inputs: Sequence[np.ndarray],
    rng: np.random.Generator,
    vjp_text: str,
    *,
    wrt: Sequence[int] | None = None,
    eps: float = EPS,
) -> VjpCheck:
    """Both sides of <J t, c> = <t, J^T c> for ``forward`` (inputs -> outputs) and ``backward``
    (inputs + one cotangent per float output -> one cotangent per ``wrt`` input), with seeded
    directions ``t`` and ``c`` and central differences of step ``eps``."""
    inputs = [np.asarray(a) for a in inputs]
    if wrt is None:
        wrt = [i for i, a in enumerate(inputs) if np.issubdtype(a.dtype, np.floating)]
    outputs = forward(inputs)
    float_outputs = [i for i, o in enumerate(outputs) if np.issubdtype(o.dtype, np.floating)]
    tangents = {i: rng.standard_normal(inputs[i].shape).astype(inputs[i].dtype) for i in wrt}
    cotangents = [rng.standard_normal(outputs[i].shape).astype(outputs[i].dtype) for i in float_outputs]

    def shifted(sign: float) -> list[np.ndarray]:
        return [a + sign * eps * tangents[i] if i in tangents else a for i, a in enumerate(inputs)]

    plus, minus = forward(shifted(1.0)), forward(shifted(-1.0))
    jt_dot_c = sum(
        float(np.vdot((plus[i] - minus[i]) / (2 * eps), c)) for i, c in zip(float_outputs, cotangents)
    )
    results = backward([*inputs, *cotangents])
    assert len(results) == len(wrt)
    for index, result in zip(wrt, results):
        assert result.shape == inputs[index].shape and result.dtype == inputs[index].dtype, (
            f"cotangent of argument {index}: {result.dtype}{result.shape}, "
            f"expected {inputs[index].dtype}{inputs[index].shape}"
        )
    t_dot_jtc = sum(float(np.vdot(tangents[i], r)) for i, r in zip(wrt, results))
    return VjpCheck(jt_dot_c, t_dot_jtc, results, vjp_text)
