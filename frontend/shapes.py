"""Dimensions and shapes of ONNX values, with room for symbols.

A dim is an ``int`` or a :class:`SymbolicDim`. Today every dim that reaches the lowering is an
int: :func:`onnx_stablehlo.compile` specializes symbolic ONNX dims (``dim_param``) to the shapes
of the feeds. The type already holds a symbol so that keeping dims dynamic in the artifact
(``?`` in MLIR) can be added without changing the rules' view of shapes.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

__all__ = ["SymbolicDim", "Dim", "Shape", "is_static", "format_shape"]


@dataclasses.dataclass(frozen=True)
class SymbolicDim:
    """A named dim whose size is not known at compile time (ONNX ``dim_param``).

    >>> SymbolicDim("batch")
    SymbolicDim('batch')
    """

    name: str

    def __repr__(self) -> str:
        return f"SymbolicDim({self.name!r})"

    def __str__(self) -> str:
        return self.name


Dim = int | SymbolicDim
Shape = tuple[Dim, ...]


def is_static(shape: Sequence[Dim]) -> bool:
    """True when every dim is an int.

    >>> is_static((2, 3)), is_static((SymbolicDim("n"), 3))
    (True, False)
    """
    return all(isinstance(d, int) for d in shape)


def format_shape(shape: Sequence[Dim]) -> str:
    """Formats a shape as ``[2, seq, 4]``."""
    return "[" + ", ".join(str(d) for d in shape) + "]"
