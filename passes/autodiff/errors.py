"""Errors of the gradient transform (under :class:`~onnx_stablehlo.passes.errors.PassError`).

Hierarchy::

    PassError
    └── AutodiffError             the gradient transform cannot differentiate this function
        └── MissingVjpRuleError   an op on the differentiated path has no VJP rule
"""

from __future__ import annotations

from onnx_stablehlo.passes.errors import PassError

__all__ = ["AutodiffError", "MissingVjpRuleError"]

_PASS_NAME = "build-vjp"


class AutodiffError(PassError):
    """The function cannot be differentiated as asked (bad ``wrt``, non-scalar loss, ...)."""

    def __init__(self, message: str) -> None:
        super().__init__(message, pass_name=_PASS_NAME)


class MissingVjpRuleError(AutodiffError):
    """An op that a cotangent flows through has no VJP rule (or none for this form of it).

    Attributes:
        op_name: the op, e.g. ``stablehlo.cholesky``.
        location: the op's location: the ONNX node name (``loc("node")``) where it has one.
        rules_module: the rules module to extend, e.g. ``onnx_stablehlo.passes.autodiff.linalg``.
        detail: what form of the op is unsupported (``reduce body computes
            stablehlo.multiply``), or ``""`` when the op has no rule at all.
    """

    def __init__(self, op_name: str, location: str, rules_module: str, detail: str = "") -> None:
        self.op_name = op_name
        self.location = location
        self.rules_module = rules_module
        self.detail = detail
        what = f"no VJP rule for {op_name}" + (f" ({detail})" if detail else "")
        super().__init__(f"{what} at {location}; add one in {rules_module}")
