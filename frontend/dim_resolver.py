"""Symbolic dims of MLIR values during one import: naming ``?`` dims, merging, emitting sizes.

Builders (``frontend/builders.py``) ask the resolver for a value's dims and for a dim's size at run
time; rules tell it the dims of values they build (``builders.record``). Graph-input dims carry the
ONNX ``dim_param`` names; every other ``?`` dim gets a fresh symbol bound to the value that
carries it, so its size is always one ``stablehlo.get_dimension_size`` away.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import stablehlo

from onnx_stablehlo.errors import LoweringError
from onnx_stablehlo.frontend import builders
from onnx_stablehlo.frontend.dtypes import DataType
from onnx_stablehlo.frontend.shapes import DimEquality, SymbolicDim, sym_max
from onnx_stablehlo.passes.op_catalog import SAME_SHAPE_OPS

__all__ = ["DimResolver"]


class DimResolver:
    """Symbolic dims of MLIR values during one import (the ``builders.DimResolver`` builders use).

    A symbol is bound to the first (value, axis) that carries it: graph input dims use the
    ONNX ``dim_param`` names; other ``?`` dims get fresh names bound to the value itself, so
    their size is always available at run time through ``stablehlo.get_dimension_size``.
    """

    def __init__(self) -> None:
        self.shapes: dict[ir.Value, tuple] = {}
        self.bindings: dict[str, tuple[ir.Value, int]] = {}
        self._cache: dict[tuple[int, Any], ir.Value] = {}
        self._fresh = 0
        self.scope_key = 0
        self._scopes = 0
        # Symbol merging (see merge): graph-input symbols, symbol -> representative, assumptions.
        self.input_symbols: set[str] = set()
        self.merged: dict[str, Any] = {}
        self.equalities: list[DimEquality] = []
        self.node_name = ""

    def new_scope_key(self) -> int:
        """A key no other subgraph scope had (``id()`` of a scope object can be reused once it is
        freed, and a cached size from an erased region must never be found again)."""
        self._scopes += 1
        return self._scopes

    def forget(self, op: ir.Operation) -> None:
        """Drops what is known about the values of ``op`` and everything nested in it.

        Called before a builder erases ops it made (an If whose branches do not fit, a loop
        placeholder): MLIR may reuse the memory of an erased value for a new one, and a stale
        entry would then give the new value the old one's dims, or a cached size that no longer
        exists (a use after free).
        """
        dead: set[ir.Value] = set()

        def collect(nested: ir.Operation) -> ir.WalkResult:
            dead.update(nested.results)
            for region in nested.regions:
                for block in region.blocks:
                    dead.update(block.arguments)
            return ir.WalkResult.ADVANCE

        op.walk(collect)
        if not dead:
            return
        for value in [v for v in self.shapes if v in dead]:
            del self.shapes[value]
        for key in [k for k, v in self._cache.items() if v in dead]:
            del self._cache[key]
        for name in [n for n, (v, _) in self.bindings.items() if v in dead]:
            del self.bindings[name]

    def merge(self, a: SymbolicDim, b: SymbolicDim) -> Any:
        """The dim of a broadcast of ``a`` against ``b`` (both symbolic, different).

        When both are made of graph-input symbols, ``a == b`` is assumed (the other valid case,
        one of them being 1, is caught at run time by ``CompiledModel``, which then lowers that
        shape on its own): the simpler dim is kept, a bare symbol on the other side is rewritten
        to it from now on, and the assumption is recorded. Otherwise the result is ``max(a, b)``.
        """
        a, b = self.canonical(a), self.canonical(b)
        if a == b:
            return a
        if not (a.symbols() | b.symbols()) <= self.input_symbols:
            return sym_max(a, b)
        keep, other = (a, b) if (len(str(a)), str(a)) <= (len(str(b)), str(b)) else (b, a)
        if other.name is not None:
            self.merged[other.name] = keep
        self.equalities.append(DimEquality(keep, other, self.node_name))
        return keep

    def assume_equal(self, size: int, dim: SymbolicDim) -> None:
        """Records that a broadcast needs symbolic ``dim`` to be the static ``size`` (or 1)."""
        dim = self.canonical(dim)
        if isinstance(dim, SymbolicDim) and dim.symbols() <= self.input_symbols:
            equality = DimEquality(size, dim, self.node_name)
            if equality not in self.equalities:
                self.equalities.append(equality)

    def canonical(self, dim: Any) -> Any:
        """``dim`` with merged symbols replaced by their representative."""
        if not isinstance(dim, SymbolicDim) or not self.merged or not (dim.symbols() & self.merged.keys()):
            return dim
        for _ in range(len(self.merged) + 1):
            substituted = dim.substitute(self.merged)
            if substituted == dim or not isinstance(substituted, SymbolicDim):
                return substituted
            dim = substituted
        return dim

    def bind(self, value: ir.Value, dims: Sequence[Any]) -> None:
        for axis, dim in enumerate(dims):
            if isinstance(dim, SymbolicDim) and dim.name is not None:
                self.bindings.setdefault(dim.name, (value, axis))
        self.record(value, dims)

    def record(self, value: ir.Value, dims: Sequence[Any]) -> None:
        self.shapes[value] = tuple(dims)

    def dims_of(self, value: ir.Value) -> tuple:
        known = self.shapes.get(value)
        if known is not None:
            return tuple(self.canonical(d) for d in known) if self.merged else known
        static = builders.shape_of(value)
        dims: list[Any] = list(static)
        owner = value.owner
        name = owner.name if isinstance(owner, ir.Operation) else getattr(getattr(owner, "operation", None), "name", None)
        if name in SAME_SHAPE_OPS:
            for operand in (owner.operands if isinstance(owner, ir.Operation) else owner.operation.operands):
                if ir.RankedTensorType(operand.type).rank == len(static):
                    operand_dims = self.dims_of(operand)
                    dims = [s if s is not None else o for s, o in zip(static, operand_dims)]
                    break
        for axis, dim in enumerate(dims):
            if dim is None:
                self._fresh += 1
                symbol = SymbolicDim(f"_d{self._fresh}")
                self.bindings[symbol.name] = (value, axis)  # type: ignore[index]
                dims[axis] = symbol
        result = tuple(dims)
        self.shapes[value] = result
        return result

    def dim_value(self, dim: Any) -> ir.Value:
        key = (self.scope_key, dim)
        cached = self._cache.get(key)
        if cached is not None:
            return cached
        value = self._emit_dim(dim)
        self._cache[key] = value
        return value

    def _emit_dim(self, dim: Any) -> ir.Value:
        if isinstance(dim, int):
            return builders.constant(np.array(dim, np.int64))
        total: ir.Value | None = None
        for coefficient, factors in dim.terms():
            term = builders.constant(np.array(coefficient, np.int64))
            for atom, power in factors:
                factor = self._emit_atom(atom)
                for _ in range(power):
                    term = stablehlo.MulOp(term, factor).result
            total = term if total is None else stablehlo.AddOp(total, term).result
        return total if total is not None else builders.constant(np.array(0, np.int64))

    def _emit_atom(self, atom: Any) -> ir.Value:
        if isinstance(atom, str):
            if atom not in self.bindings:
                raise LoweringError(f"symbolic dim '{atom}' has no binding")
            value, axis = self.bindings[atom]
            size = stablehlo.GetDimensionSizeOp(value, axis).result
            return builders.convert(size, DataType.INT64)
        kind, expr, other = atom
        left = self.dim_value(expr)
        if kind == "max":
            return stablehlo.MaxOp(left, self.dim_value(other)).result
        divisor = builders.constant(np.array(other, np.int64))
        if kind == "floordiv":  # dims are non-negative, so truncation is floor
            return stablehlo.DivOp(left, divisor).result
        return stablehlo.RemOp(left, divisor).result
