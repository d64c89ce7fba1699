"""How ONNX sequence and optional values map onto flat lists of tensors.

StableHLO has tensors only. A sequence whose length is known at compile time is a list of
tensors; an optional is an empty list or one element. A graph input or output of such a type
becomes that many ``@main`` arguments or results, in order; :class:`Layout` records the nesting
so ``run`` can flatten feeds and rebuild outputs (a Python list for a sequence, ``None`` for an
empty optional).

The shape "spec" of a value is what ``input_shapes`` takes: a tuple of ints for a tensor, a
list of tuples for a sequence, ``None`` for an empty optional.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any

import numpy as np
import onnx_ir

__all__ = ["Layout", "TENSOR", "onnx_kind", "spec_of_feed"]


@dataclasses.dataclass(frozen=True)
class Layout:
    """The nesting of one ONNX value over flat tensors.

    Attributes:
        kind: ``"tensor"``, ``"sequence"`` or ``"optional"``.
        elements: a sequence's element layouts; an optional's inner layout (empty if absent).
    """

    kind: str
    elements: tuple[Layout, ...] = ()

    @property
    def arg_count(self) -> int:
        """How many tensors the value flattens to."""
        if self.kind == "tensor":
            return 1
        return sum(e.arg_count for e in self.elements)

    def flatten(self, value: Any) -> list[Any]:
        """The tensors of ``value`` in order."""
        if self.kind == "tensor":
            return [value]
        if self.kind == "optional":
            return [] if not self.elements else self.elements[0].flatten(value)
        return [t for element, item in zip(self.elements, value) for t in element.flatten(item)]

    def unflatten(self, tensors: Iterator[Any]) -> Any:
        """Rebuilds the value from an iterator of its tensors."""
        if self.kind == "tensor":
            return next(tensors)
        if self.kind == "optional":
            return None if not self.elements else self.elements[0].unflatten(tensors)
        return [element.unflatten(tensors) for element in self.elements]


TENSOR = Layout("tensor")


def onnx_kind(value_type: onnx_ir.TypeProtocol | None) -> str:
    """``"tensor"``, ``"sequence"``, ``"optional"`` or ``"other"`` for an onnx-ir type."""
    if value_type is None or isinstance(value_type, onnx_ir.TensorType):
        return "tensor"
    if isinstance(value_type, onnx_ir.SequenceType):
        return "sequence"
    if isinstance(value_type, onnx_ir.OptionalType):
        return "optional"
    return "other"


def spec_of_feed(value_type: onnx_ir.TypeProtocol | None, feed: Any) -> Any:
    """The shape spec of a feed: a tuple, a list of tuples, or ``None``."""
    kind = onnx_kind(value_type)
    if kind == "tensor":
        return tuple(np.shape(feed))
    if kind == "sequence":
        return [tuple(np.shape(item)) for item in feed]
    if feed is None:
        return None
    return spec_of_feed(value_type.elem_type, feed)  # type: ignore[union-attr]
