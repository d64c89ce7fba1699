"""CHLO's implicitly broadcasting binary ops, ``stablehlo.broadcast``, ``chlo.constant_like`` and
``chlo.constant`` -> ONNX.

``chlo.broadcast_<op>(lhs, rhs)`` is ``stablehlo.<op>`` after broadcasting both operands to one
shape. Without ``broadcast_dimensions`` the rule is numpy's (trailing dims aligned, size 1
stretched), which is ONNX's multidirectional broadcasting: the operands go straight to the
elementwise rule. With ``broadcast_dimensions`` (the result dims that the lower-rank operand's
dims map to) that operand is first Transposed (unsorted dims) and Unsqueezed to the full rank
at the other axes, and then broadcasts numpy-style. Spec: CHLO ops (openxla/stablehlo,
``chlo/ChloOps.td``), StableHLO spec "broadcast".

Mappings (each reuses ``elementwise``'s mapping of the plain op):
  broadcast_{add,subtract,multiply,divide,maximum,minimum,power,remainder,and,or,xor,atan2,
      shift_left,shift_right_logical,shift_right_arithmetic} -> the stablehlo op's ONNX form
  broadcast_compare (chlo comparison_direction) -> Equal/Less/... as stablehlo.compare
  broadcast_select -> Where (numpy broadcasting of all three operands)
  broadcast_next_after -> special's next_after
  broadcast(x, broadcast_sizes) -> Expand(x, sizes ++ shape(x))
  constant_like(x) {value} -> Expand(value, Shape(x)); constant -> an initializer
"""

from __future__ import annotations

import copy
import re

import numpy as np
import onnx_ir
from jaxlib.mlir import ir

from onnx_stablehlo.exporter.context import ExportContext, read_ints
from onnx_stablehlo.exporter.converter import read_dense_attr
from onnx_stablehlo.exporter.registry import export_rule
from onnx_stablehlo.exporter.rules import elementwise, special

DT = onnx_ir.DataType

# chlo.broadcast_<name> -> (stablehlo/chlo op the elementwise rules know, the rule).
_PLAIN = {
    **{f"chlo.broadcast_{name}": (f"stablehlo.{name}", elementwise.export_binary)
       for name in ("add", "subtract", "multiply", "divide", "maximum", "minimum", "power")},
    **{f"chlo.broadcast_{name}": (f"stablehlo.{name}", elementwise.export_logic) for name in ("and", "or", "xor")},
    "chlo.broadcast_remainder": ("stablehlo.remainder", elementwise.export_remainder),
    "chlo.broadcast_atan2": ("stablehlo.atan2", elementwise.export_atan2),
    "chlo.broadcast_next_after": ("chlo.next_after", special.export_next_after),
    **{f"chlo.broadcast_{name}": (f"stablehlo.{name}", elementwise.export_shift)
       for name in ("shift_left", "shift_right_logical", "shift_right_arithmetic")},
}
_SHIFTS = frozenset(k for k, (_, rule) in _PLAIN.items() if rule is elementwise.export_shift)


class _RenamedOp:
    """``op`` under another name (the plain op's), for the elementwise rules' table lookups."""

    def __init__(self, op: ir.Operation, name: str) -> None:
        self._op = op
        self.name = name

    def __getattr__(self, attr: str):
        return getattr(self._op, attr)


def _aligned(ctx: ExportContext) -> list[onnx_ir.Value]:
    """The operands, the lower-rank one Unsqueezed (Transposed first where needed) to the result
    rank at the axes ``broadcast_dimensions`` leaves out."""
    values = ctx.inputs()
    attr = ctx.attr("broadcast_dimensions")
    if attr is None:
        return values
    dims = read_ints(attr)
    rank = len(ctx.result_shape())
    ranks = [len(ctx.operand_shape(i)) for i in range(ctx.num_inputs)]
    out = []
    for value, r in zip(values, ranks):
        if r == rank or r != len(dims):
            out.append(value)
            continue
        order = sorted(range(r), key=lambda i: dims[i])
        if order != list(range(r)):
            value = ctx.emit("Transpose", [value], {"perm": order})
        mapped = {dims[i] for i in range(r)}
        missing = [axis for axis in range(rank) if axis not in mapped]
        if missing:
            value = ctx.emit("Unsqueeze", [value, ctx.ints(missing)])
        out.append(value)
    return out


def _as_plain(ctx: ExportContext, name: str) -> ExportContext:
    """A copy of ``ctx`` that reads the aligned operands and names the plain op."""
    aligned = _aligned(ctx)
    plain = copy.copy(ctx)
    plain.op = _RenamedOp(ctx.op, name)  # type: ignore[assignment]
    plain.input = lambda i: aligned[i]  # type: ignore[method-assign]
    plain.inputs = lambda: list(aligned)  # type: ignore[method-assign]
    return plain


@export_rule(*(k for k in _PLAIN if k not in _SHIFTS))
def export_broadcast_binary(ctx: ExportContext) -> list[onnx_ir.Value]:
    name, rule = _PLAIN[ctx.op.name]
    return rule(_as_plain(ctx, name))


@export_rule(*_SHIFTS, check=elementwise._shift_check)
def export_broadcast_shift(ctx: ExportContext) -> list[onnx_ir.Value]:
    name, rule = _PLAIN[ctx.op.name]
    return rule(_as_plain(ctx, name))


_DIRECTION = re.compile(r"\b(EQ|NE|GE|GT|LE|LT)\b")


@export_rule("chlo.broadcast_compare")
def export_broadcast_compare(ctx: ExportContext) -> list[onnx_ir.Value]:
    direction = _DIRECTION.search(str(ctx.attr("comparison_direction"))).group(1)  # type: ignore[union-attr]
    a, b = _aligned(ctx)
    if direction == "NE":
        return [ctx.emit("Not", [ctx.emit("Equal", [a, b])])]
    return [ctx.emit(elementwise._COMPARE[direction], [a, b])]


@export_rule("chlo.broadcast_select")
def export_broadcast_select(ctx: ExportContext) -> list[onnx_ir.Value]:
    return [ctx.emit("Where", ctx.inputs())]


@export_rule("stablehlo.broadcast")
def export_broadcast(ctx: ExportContext) -> list[onnx_ir.Value]:
    x = ctx.input(0)
    sizes = ctx.i64s("broadcast_sizes")
    out_shape = ctx.result_shape()
    if None not in out_shape:
        target = ctx.ints(out_shape)  # type: ignore[arg-type]
    else:
        target = ctx.emit("Concat", [ctx.ints(sizes), ctx.shape_of(x)], {"axis": 0})
    if not sizes:
        return [ctx.emit("Identity", [x])]
    return [ctx.emit("Expand", [x, target])]


@export_rule("chlo.constant_like")
def export_constant_like(ctx: ExportContext) -> list[onnx_ir.Value]:
    attr = ctx.attr("value")
    dtype = ctx.result_dtype(0)
    if isinstance(attr, ir.BoolAttr):
        scalar: object = bool(ir.BoolAttr(attr).value)
    elif isinstance(attr, ir.IntegerAttr):
        scalar = ir.IntegerAttr(attr).value
    elif isinstance(attr, ir.FloatAttr):
        scalar = ir.FloatAttr(attr).value
    else:
        raise ctx.error(f"constant_like with value {attr}")
    value = ctx.const(np.array(scalar, dtype=dtype.numpy()))
    out_shape = ctx.result_shape()
    if not out_shape:
        return [ctx.emit("Identity", [value])]
    target = ctx.ints(out_shape) if None not in out_shape else ctx.shape_of(ctx.input(0))  # type: ignore[arg-type]
    return [ctx.emit("Expand", [value, target])]


@export_rule("chlo.constant")
def export_chlo_constant(ctx: ExportContext) -> list[onnx_ir.Value]:
    array = read_dense_attr(ctx.attr("value"), ctx.op.results[0].type)
    return [ctx.converter.constant(array, ctx.name or "c")]
