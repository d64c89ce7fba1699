"""``fold-transposes``: merges transpose chains and absorbs transposes into their users.

ONNX exporters emit many ``Transpose`` nodes around attention (``[0, 2, 1, 3]`` on the way in
and out of the head split); each becomes a ``stablehlo.transpose``. Chains collapse to one
permutation, and a transpose feeding ``dot_general`` folds into its dimension numbers.
"""

from __future__ import annotations

import dataclasses
from typing import ClassVar

from jaxlib.mlir import ir
from jaxlib.mlir.dialects import stablehlo

from onnx_stablehlo.passes.base import ModulePass
from onnx_stablehlo.passes.ir_utils import (
    defining_op_named,
    has_one_use,
    i64_array,
    read_i64_array,
    shape_of,
)
from onnx_stablehlo.passes.patterns import PatternRewritePass, RewritePattern, Rewriter

__all__ = ["FoldTransposesPass", "dot_dimension_numbers"]


def dot_dimension_numbers(op: ir.Operation) -> tuple[list[int], list[int], list[int], list[int]]:
    """(lhs batch, rhs batch, lhs contracting, rhs contracting) dims of a ``dot_general``."""
    numbers = stablehlo.DotDimensionNumbers(op.attributes["dot_dimension_numbers"])
    return (
        list(numbers.lhs_batching_dimensions),
        list(numbers.rhs_batching_dimensions),
        list(numbers.lhs_contracting_dimensions),
        list(numbers.rhs_contracting_dimensions),
    )


def make_dot_dimension_numbers(
    lhs_batch: list[int], rhs_batch: list[int], lhs_contracting: list[int], rhs_contracting: list[int]
) -> ir.Attribute:
    return stablehlo.DotDimensionNumbers.get(
        lhs_batching_dimensions=lhs_batch,
        rhs_batching_dimensions=rhs_batch,
        lhs_contracting_dimensions=lhs_contracting,
        rhs_contracting_dimensions=rhs_contracting,
    )


class TransposeOfTranspose(RewritePattern):
    """transpose(transpose(x, p1), p2) -> transpose(x, p1[p2]) (dropped when the identity)."""

    root = "stablehlo.transpose"

    def match_and_rewrite(self, op: ir.Operation, rw: Rewriter) -> bool:
        inner = defining_op_named(op.operands[0], "stablehlo.transpose")
        if inner is None:
            return rw.fail(op, "operand is not produced by a transpose")
        first = read_i64_array(inner, "permutation")
        second = read_i64_array(op, "permutation")
        combined = [first[i] for i in second]
        source = inner.operands[0]
        if combined == list(range(len(combined))):
            rw.replace_op(op, [source])
        else:
            new = rw.create("stablehlo.transpose", [source], [op.results[0].type], {"permutation": i64_array(combined)})
            rw.replace_op(op, [new.result])
        return True


class TransposeOfUnitDimsToReshape(RewritePattern):
    """transpose(x, p) -> reshape(x) when p only moves size-1 dims.

    Constraint: the dims of size > 1 keep their relative order (static shapes), so the
    element order in memory is unchanged.
    """

    root = "stablehlo.transpose"

    def match_and_rewrite(self, op: ir.Operation, rw: Rewriter) -> bool:
        shape = shape_of(op.operands[0])
        if shape is None or any(d is None for d in shape):
            return rw.fail(op, "operand shape is dynamic")
        permutation = read_i64_array(op, "permutation")
        moved = [axis for axis in permutation if shape[axis] != 1]
        if moved != sorted(moved):
            return rw.fail(op, "dims of size > 1 change order")
        new = rw.create("stablehlo.reshape", [op.operands[0]], [op.results[0].type])
        rw.replace_op(op, [new.result])
        return True


class TransposeOfBroadcastInDim(RewritePattern):
    """transpose(broadcast_in_dim(x, dims), p) -> broadcast_in_dim(x, dims') with dims'[i] = p^-1[dims[i]].

    Constraint: the broadcast has no other use (it would be computed twice otherwise).
    """

    root = "stablehlo.transpose"

    def match_and_rewrite(self, op: ir.Operation, rw: Rewriter) -> bool:
        broadcast = defining_op_named(op.operands[0], "stablehlo.broadcast_in_dim")
        if broadcast is None:
            return rw.fail(op, "operand is not produced by broadcast_in_dim")
        if not has_one_use(broadcast.results[0]):
            return rw.fail(op, "the broadcast has other uses")
        permutation = read_i64_array(op, "permutation")
        inverse = [0] * len(permutation)
        for position, axis in enumerate(permutation):
            inverse[axis] = position
        dims = [inverse[d] for d in read_i64_array(broadcast, "broadcast_dimensions")]
        new = rw.create(
            "stablehlo.broadcast_in_dim",
            [broadcast.operands[0]],
            [op.results[0].type],
            {"broadcast_dimensions": i64_array(dims)},
        )
        rw.replace_op(op, [new.result])
        return True


class DotGeneralOfTranspose(RewritePattern):
    """dot_general(transpose(a, p), b) -> dot_general(a, b) with p folded into the dims; same for b.

    Constraint: the operand's free (non-batch, non-contracting) dims keep their relative
    order under p, so the result's dim order is unchanged.
    """

    root = "stablehlo.dot_general"

    def match_and_rewrite(self, op: ir.Operation, rw: Rewriter) -> bool:
        lhs, rhs = op.operands[0], op.operands[1]
        lhs_batch, rhs_batch, lhs_contracting, rhs_contracting = dot_dimension_numbers(op)
        reasons = []
        for side, operand, batch, contracting in (
            ("lhs", lhs, lhs_batch, lhs_contracting),
            ("rhs", rhs, rhs_batch, rhs_contracting),
        ):
            transpose = defining_op_named(operand, "stablehlo.transpose")
            if transpose is None:
                reasons.append(f"{side} is not produced by a transpose")
                continue
            permutation = read_i64_array(transpose, "permutation")
            rank = len(permutation)
            free = [d for d in range(rank) if d not in batch and d not in contracting]
            mapped_free = [permutation[d] for d in free]
            if mapped_free != sorted(mapped_free):
                reasons.append(f"{side} transpose reorders free dims")
                continue
            new_batch = [permutation[d] for d in batch]
            new_contracting = [permutation[d] for d in contracting]
            operands = [transpose.operands[0], rhs] if side == "lhs" else [lhs, transpose.operands[0]]
            numbers = (
                (new_batch, rhs_batch, new_contracting, rhs_contracting)
                if side == "lhs"
                else (lhs_batch, new_batch, lhs_contracting, new_contracting)
            )
            attributes = {name: op.attributes[name] for name in op.attributes}
            attributes["dot_dimension_numbers"] = make_dot_dimension_numbers(*numbers)
            new = rw.create("stablehlo.dot_general", operands, [op.results[0].type], attributes)
            rw.replace_op(op, [new.result])
            return True
        return rw.fail(op, "; ".join(reasons))


@dataclasses.dataclass(frozen=True)
class FoldTransposesPass(PatternRewritePass, ModulePass):
    """Merges transpose chains and folds transposes into broadcasts and dot_general.

    Rewrites:

    - ``transpose(transpose(x, p1), p2) -> transpose(x, p1[p2])``, or ``x`` when that is the
      identity
    - ``transpose(x, p) -> reshape(x)`` when ``p`` moves only size-1 dims (static shapes)
    - ``transpose(broadcast_in_dim(x, dims), p) -> broadcast_in_dim(x, inverse(p)[dims])``
      when the broadcast has no other use
    - ``dot_general(transpose(a, p), b) -> dot_general(a, b)`` with ``p`` folded into the
      batching and contracting dims (and the same for ``b``), when the operand's free dims
      keep their relative order under ``p`` (so the result's dim order is unchanged)

    Transposes of constants are left to ``fold-constants``.
    """

    name: ClassVar[str] = "fold-transposes"

    def patterns(self) -> list[RewritePattern]:
        return [
            TransposeOfTranspose(),
            TransposeOfUnitDimsToReshape(),
            TransposeOfBroadcastInDim(),
            DotGeneralOfTranspose(),
        ]

