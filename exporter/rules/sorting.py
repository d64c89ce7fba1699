"""Sorting -> ONNX: ``stablehlo.sort`` and ``chlo.top_k``.

The comparator region is read as an expression tree (see ``rules/reduction.py``) and matched;
an unrecognised comparator is reported by the rule's ``check``. Spec: StableHLO spec, "sort";
CHLO's ``top_k``.

Mappings (``A -> B``):
  sort, comparator ``LT(lhs0, rhs0)`` (ascending) or ``GT(lhs0, rhs0)`` (descending) of the
      first operand only (``lax.sort(..., num_keys=1)``, ``jnp.sort``, ``jnp.argsort`` and the
      other operands carried along) -> TopK(k = the dim's size, read with ``Shape(start, end)``
      for a ``?`` dim; largest=1 for GT, 0 for LT; sorted=1) on the first operand;
      every other operand -> GatherElements with TopK's indices, or a Cast of the indices when
      it is an iota along the sort dim (argsort).
  chlo.top_k(x, k) -> TopK(x, k, axis=-1, largest=1, sorted=1), the indices cast to the
      result's index type.

Tie order: onnxruntime's TopK orders equal keys by lower index first, for both directions and
for NaNs (checked on 280 elements with few distinct values), so a sort with ``is_stable =
true`` keeps its order; ``is_stable = false`` allows any order, TopK's is one.

Float keys, honestly:
  - JAX's comparator (``jnp.sort``/``argsort``) first canonicalizes: -0.0 -> +0.0 and every NaN
    -> +NaN, then compares TOTALORDER. That is exactly TopK's order (zeros tie, NaN is
    largest: last ascending, first descending), so it is exact.
  - A plain ``FLOAT`` compare is not a strict weak order when there are NaNs (the spec leaves
    the result undefined); TopK gives NaN-largest.
  - A TOTALORDER compare of raw floats (``jax.lax.top_k``'s decomposition, ``GT ..., TOTALORDER``)
    orders -NaN < -inf and -0.0 < +0.0; ONNX has no op that reads a NaN's sign bit at opset 23,
    so here NaNs of either sign sort as the largest and -0.0/+0.0 tie (lower index first). This
    is the one known difference from XLA, on inputs holding -0.0 and +0.0 together or negative
    NaNs (x86 makes negative NaNs from 0/0); ``chlo.top_k`` has the same caveat.
Integer keys compare SIGNED (signless/signed) or UNSIGNED (unsigned, i1); bool keys are widened
to int32 for TopK by ``exporter/ort_types.py``.

Not supported (typed check reasons): comparators reading more than the first operand
(``num_keys > 1``, lexicographic sorts), LE/GE/EQ comparators, any other expression.
"""

from __future__ import annotations

import onnx_ir
from jaxlib.mlir import ir

from onnx_stablehlo.exporter.context import ExportContext
from onnx_stablehlo.exporter.registry import export_rule
from onnx_stablehlo.exporter.rules.reduction import (arg, body_trees, cmp, compare_types, element_name,
                                                    is_float_name, is_iota_along)
from onnx_stablehlo.exporter.types import mlir_shape

DT = onnx_ir.DataType


def _canonical(x: tuple) -> tuple:
    """JAX's ``_canonicalize_float_for_sort``: NaN -> +NaN, +-0 -> +0, as a tree."""
    zero = ("const", 0.0, False)
    no_zero = ("stablehlo.select", cmp("EQ", x, zero, "FLOAT"), zero, x)
    return ("stablehlo.select", cmp("NE", x, x, "FLOAT"), ("const", "nan", False), no_zero)


def _analyze_sort(op: ir.Operation) -> tuple[str, str | bool]:
    """``("ok", descending)`` or ``("error", reason)``."""
    _, trees = body_trees(op)
    name = element_name(op.operands[0])
    if len(trees) != 1:
        return "error", "a sort comparator returning more than one value"
    got = trees[0]
    a, b = arg(0), arg(1)
    candidates: list[tuple[tuple, tuple, tuple[str | None, ...]]] = []
    if is_float_name(name):
        candidates.append((_canonical(a), _canonical(b), ("TOTALORDER",)))
        candidates.append((a, b, (None, "FLOAT", "TOTALORDER")))
    else:
        candidates.append((a, b, compare_types(name)))
    for lhs, rhs, types in candidates:
        for ctype in types:
            if got == cmp("LT", lhs, rhs, ctype):
                return "ok", False
            if got == cmp("GT", lhs, rhs, ctype):
                return "ok", True
    return "error", ("the sort comparator is not LT/GT of the first operand's pair (optionally with JAX's "
                     "NaN/-0 canonicalization): lexicographic or custom comparators have no ONNX TopK form")


def _sort_check(op: ir.Operation) -> str | None:
    what, detail = _analyze_sort(op)
    return str(detail) if what == "error" else None


@export_rule("stablehlo.sort", check=_sort_check)
def export_sort(ctx: ExportContext) -> list[onnx_ir.Value]:
    what, descending = _analyze_sort(ctx.op)
    if what == "error":
        raise ctx.error(str(descending))
    rank = len(ctx.operand_shape(0))
    axis = ctx.int_attr("dimension", -1)
    if axis < 0:
        axis += rank
    x = ctx.input(0)
    size = ctx.operand_shape(0)[axis]
    k = ctx.ints([size]) if size is not None else ctx.emit("Shape", [x], {"start": axis, "end": axis + 1})
    values, indices = ctx.emit_multi("TopK", [x, k], 2, {"axis": axis, "largest": int(bool(descending)), "sorted": 1})
    results = [values]
    for i in range(1, ctx.num_inputs):
        if is_iota_along(ctx.op.operands[i], axis):
            dtype = ctx.operand_dtype(i)
            results.append(indices if dtype == DT.INT64 else ctx.cast(indices, dtype))
        else:
            results.append(ctx.emit("GatherElements", [ctx.input(i), indices], {"axis": axis}))
    return results


def _top_k_check(op: ir.Operation) -> str | None:
    if "k" not in op.attributes:
        return "chlo.top_k without a k attribute"
    if not mlir_shape(op.operands[0]):
        return "chlo.top_k of a rank-0 operand"
    return None


@export_rule("chlo.top_k", check=_top_k_check)
def export_top_k(ctx: ExportContext) -> list[onnx_ir.Value]:
    k = ctx.int_attr("k")
    values, indices = ctx.emit_multi("TopK", [ctx.input(0), ctx.ints([k])], 2,
                                     {"axis": -1, "largest": 1, "sorted": 1})
    if ctx.result_dtype(1) != DT.INT64:
        indices = ctx.cast(indices, ctx.result_dtype(1))
    return [values, indices]
