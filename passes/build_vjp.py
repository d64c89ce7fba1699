"""``build-vjp``: adds the reverse-mode derivative of a function to the module.

``build-vjp{func=main wrt=0,2}`` adds ``@main_vjp(args..., output cotangents...) ->
cotangents of arguments 0 and 2``; ``mode=value-and-grad`` adds ``@main_value_and_grad(args...)
-> (results..., gradients)`` for the scalar result ``loss-output`` instead. ``@main`` itself
is unchanged. See :mod:`onnx_stablehlo.passes.autodiff.transform` for the conventions.

Preconditions: ranked tensors (``?`` dims are fine: one backward function serves every shape)
and a VJP rule for every op the cotangents flow through; otherwise the pass fails with ``MissingVjpRuleError`` naming the op,
its ONNX node and the rules module to extend.
"""

from __future__ import annotations

import dataclasses
from typing import ClassVar, Literal

from jaxlib.mlir import ir

from onnx_stablehlo.passes.autodiff.transform import build_value_and_grad, build_vjp
from onnx_stablehlo.passes.base import ModulePass, PassResult

__all__ = ["BuildVjpPass"]


@dataclasses.dataclass(frozen=True)
class BuildVjpPass(ModulePass):
    """Adds @<func>_vjp (or @<func>_value_and_grad) built by reverse-mode differentiation.

    ``@f(args...) -> results`` gains ``@f_vjp(args..., cotangents of the float results...) ->
    cotangents of wrt``, or with ``mode=value-and-grad`` ``@f_value_and_grad(args...) ->
    (results..., gradients of wrt)``. ``?`` dims stay ``?``: the backward code reads the sizes it
    needs with ``stablehlo.get_dimension_size`` (``dynamic_broadcast_in_dim``,
    ``dynamic_reshape``, ``real_dynamic_slice``, ``dynamic_pad`` where a dim is dynamic), so one
    backward function serves every shape; ``specialize-shapes`` refines it like ``@main``.
    """

    name: ClassVar[str] = "build-vjp"

    func: str = "main"
    """The function to differentiate."""

    wrt: tuple[str, ...] = ("all-float",)
    """Arguments to differentiate with respect to: indices or argument names (their
    loc("name")), comma-separated, or all-float for every float argument."""

    mode: Literal["vjp", "value-and-grad"] = "vjp"
    """vjp: @<func>_vjp(args..., cotangents...) -> cotangents of wrt; value-and-grad:
    @<func>_value_and_grad(args...) -> (results..., gradients of wrt)."""

    loss_output: int = 0
    """With mode=value-and-grad: the index of the scalar result to differentiate."""

    result_name: str = ""
    """The new function's name; default <func>_vjp or <func>_value_and_grad."""

    def __post_init__(self) -> None:
        if not self.wrt:
            raise ValueError("wrt must name at least one argument (or all-float)")

    def run(self, module: ir.Module) -> PassResult:
        wrt = None if self.wrt == ("all-float",) else list(self.wrt)
        name = self.result_name or None
        if self.mode == "vjp":
            built = build_vjp(module, func=self.func, wrt=wrt, name=name)
        else:
            built = build_value_and_grad(module, func=self.func, loss_output=self.loss_output, wrt=wrt, name=name)
        del built
        return PassResult(modified=True)
