"""What a VJP rule sees: the forward op, which operands need cotangents, and helpers."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Sequence

from jaxlib.mlir import ir

from onnx_stablehlo.frontend.node_names import describe_location_name
from onnx_stablehlo.passes.autodiff.errors import MissingVjpRuleError

__all__ = ["VjpContext", "describe_location"]

_NAMED_LOC = re.compile(r'^loc\("((?:[^"\\]|\\.)*)"')


def describe_location(location: ir.Location) -> str:
    """``node 'Erf_3'`` for ``loc("Erf_3")`` (``node #3 producing 'y'`` for an unnamed node's
    ``loc("Erf#3:y")``, see ``frontend/node_names.py``), else the location's text."""
    text = str(location)
    match = _NAMED_LOC.match(text)
    if match:
        described = describe_location_name(match.group(1))
        return described if described.startswith("node #") else f"node {described}"
    return text


@dataclasses.dataclass
class VjpContext:
    """The forward op a rule differentiates, and what the transform needs from the rule.

    Attributes:
        op: the forward op, inside the function being built (its operands and results are
            primal values the backward code may use).
        needs: per operand, whether a cotangent is wanted (false for integer/boolean/index
            operands and for operands that do not depend on the differentiated arguments);
            a rule may return ``None`` where this is false and skip the work.
        captures: values defined outside ``op`` and used inside its regions that need a
            cotangent (only region ops such as ``stablehlo.if`` see any); a rule handling
            them returns their cotangents after the operands'.
        rules_module: the module of the rule (named in errors).
        backprop: the transform's reverse-mode driver, for rules of region ops: see
            :func:`onnx_stablehlo.passes.autodiff.transform.backprop_ops`.
    """

    op: ir.Operation
    needs: tuple[bool, ...]
    captures: tuple[ir.Value, ...] = ()
    rules_module: str = ""
    backprop: Callable[..., list[ir.Value | None]] | None = None

    @property
    def operands(self) -> list[ir.Value]:
        return list(self.op.operands)

    @property
    def results(self) -> list[ir.Value]:
        return list(self.op.results)

    @property
    def location(self) -> ir.Location:
        return self.op.location

    def need(self, index: int) -> bool:
        """Whether operand ``index`` needs a cotangent."""
        return self.needs[index]

    def attr(self, name: str) -> ir.Attribute:
        return self.op.attributes[name]

    def has_attr(self, name: str) -> bool:
        return name in self.op.attributes

    def i64s(self, name: str, default: Sequence[int] | None = None) -> list[int]:
        """An ``array<i64: ...>`` (or dense int elements) attribute as ints."""
        if name not in self.op.attributes:
            if default is None:
                raise KeyError(name)
            return list(default)
        attr = self.op.attributes[name]
        if isinstance(attr, ir.DenseI64ArrayAttr):
            return [int(v) for v in attr]
        if isinstance(attr, ir.DenseIntElementsAttr):
            return [int(v) for v in attr]
        return [int(v) for v in ir.DenseI64ArrayAttr(attr)]

    def int_attr(self, name: str, default: int | None = None) -> int:
        if name not in self.op.attributes:
            if default is None:
                raise KeyError(name)
            return default
        return int(ir.IntegerAttr(self.op.attributes[name]).value)

    def missing(self, detail: str) -> MissingVjpRuleError:
        """The error a rule raises for a form of its op it cannot differentiate."""
        return MissingVjpRuleError(self.op.name, describe_location(self.op.location), self.rules_module, detail)
