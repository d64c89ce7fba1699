"""``convert-precision``: runs matmuls and convolutions on bf16/f16 operands, accumulating in f32.

Opt-in (not in the default pipeline): results change within the target type's precision.
"""

from __future__ import annotations

import dataclasses
from typing import ClassVar, Literal

from jaxlib.mlir import ir

from onnx_stablehlo.passes.base import ModulePass
from onnx_stablehlo.passes.ir_utils import defining_op_named, element_type_of, shape_of, tensor_type
from onnx_stablehlo.passes.patterns import PatternRewritePass, RewritePattern, Rewriter

__all__ = ["ConvertPrecisionPass"]

_OPS = ("dot_general", "dot", "convolution")


class LowerPrecisionOperands(RewritePattern):
    """dot_general(a: f32, b: f32) -> f32  ->  dot_general(convert(a): T, convert(b): T) -> f32.

    Same for ``dot`` and ``convolution``. Constraints: both operands are f32 (ops already on
    T are left alone, so the rewrite applies once); ranked operand types. ``convert(convert(
    x: T) : f32)`` operands reuse x instead of converting twice (that round trip is exact).
    """

    def __init__(self, target: str, op_names: tuple[str, ...]) -> None:
        self.target = target
        self.root = tuple(f"stablehlo.{name}" for name in op_names)  # type: ignore[misc]

    def match_and_rewrite(self, op: ir.Operation, rw: Rewriter) -> bool:
        lhs, rhs = op.operands[0], op.operands[1]
        if any(str(element_type_of(v)) != "f32" for v in (lhs, rhs)):
            return rw.fail(op, "operands are not both f32")
        if shape_of(lhs) is None or shape_of(rhs) is None:
            return rw.fail(op, "unranked operands")
        target = ir.BF16Type.get() if self.target == "bf16" else ir.F16Type.get()
        narrowed = [self._narrow(v, target, rw) for v in (lhs, rhs)]
        attributes = {name: op.attributes[name] for name in op.attributes}
        new = rw.create(op.name, narrowed + list(op.operands)[2:], [op.results[0].type], attributes)
        rw.replace_op(op, [new.result])
        return True

    @staticmethod
    def _narrow(value: ir.Value, target: ir.Type, rw: Rewriter) -> ir.Value:
        widened = defining_op_named(value, "stablehlo.convert")
        if widened is not None and element_type_of(widened.operands[0]) == target:
            return widened.operands[0]
        return rw.create("stablehlo.convert", [value], [tensor_type(shape_of(value), target)]).result


@dataclasses.dataclass(frozen=True)
class ConvertPrecisionPass(PatternRewritePass, ModulePass):
    """Mixed precision: matmul and convolution operands in bf16 or f16, accumulation in f32.

    Rewrites:

    - ``dot_general(a: f32, b: f32) -> f32`` to ``dot_general(convert(a): T, convert(b): T)
      -> f32`` with T = ``to``; the same for ``dot`` and ``convolution`` (choose with
      ``ops``). The result stays f32, so XLA accumulates in f32 and the rest of the model is
      unchanged.

    Opt-in: operands are rounded to T (8 bits of mantissa for bf16, 11 for f16; f16 also
    overflows above 65504). Operands already in T via ``convert`` are reused, not rounded
    twice.
    """

    name: ClassVar[str] = "convert-precision"

    to: Literal["bf16", "f16"] = "bf16"
    """The operand type: bf16 (f32's range, less precision) or f16."""

    ops: tuple[str, ...] = ("dot_general", "dot", "convolution")
    """Which ops to convert, by StableHLO name without the dialect prefix."""

    def __post_init__(self) -> None:
        unknown = [name for name in self.ops if name not in _OPS]
        if unknown:
            raise ValueError(f"option 'ops': unknown op {', '.join(unknown)}; choose from {', '.join(_OPS)}")

    def patterns(self) -> list[RewritePattern]:
        return [LowerPrecisionOperands(self.to, self.ops)]
