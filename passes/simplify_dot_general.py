"""``simplify-dot-general``: turns broadcast batched matmuls into plain dots.

``MatMul`` of a ``[B, M, K]`` activation with a ``[K, N]`` weight is sometimes exported (or
lowered) as a batched matmul against the weight broadcast to ``[B, K, N]``. The broadcast
materializes B copies of the weight and the batched dot cannot use one large GEMM. Here the
broadcast batch dims are dropped (the lhs batch dims become free dims), and optionally an
N-D x 2-D dot is flattened to a 2-D GEMM between reshapes.
"""

from __future__ import annotations

import dataclasses
import math
from typing import ClassVar

from jaxlib.mlir import ir

from onnx_stablehlo.passes.base import ModulePass
from onnx_stablehlo.passes.fold_transposes import dot_dimension_numbers, make_dot_dimension_numbers
from onnx_stablehlo.passes.ir_utils import (
    defining_op_named,
    element_type_of,
    is_static,
    read_i64_array,
    shape_of,
    tensor_type,
)
from onnx_stablehlo.passes.patterns import PatternRewritePass, RewritePattern, Rewriter

__all__ = ["SimplifyDotGeneralPass"]


class DotGeneralOfBroadcastRhs(RewritePattern):
    """dot_general(a, broadcast_in_dim(w), batch [b..] x [r..]) -> dot_general(a, w) without batch dims.

    Constraints: every rhs batch dim is created by the broadcast (w has no dim there); the
    broadcast maps w's dims in increasing order and w's dims keep their sizes (no expansion
    of size-1 dims); the lhs batch dims are ``0..k-1`` in order, so they lead the result
    both before and after; static shapes.
    """

    root = "stablehlo.dot_general"

    def match_and_rewrite(self, op: ir.Operation, rw: Rewriter) -> bool:
        lhs, rhs = op.operands[0], op.operands[1]
        broadcast = defining_op_named(rhs, "stablehlo.broadcast_in_dim")
        if broadcast is None:
            return rw.fail(op, "rhs is not produced by broadcast_in_dim")
        lhs_batch, rhs_batch, lhs_contracting, rhs_contracting = dot_dimension_numbers(op)
        if not rhs_batch:
            return rw.fail(op, "no batch dims")
        weight = broadcast.operands[0]
        if not (is_static(weight) and is_static(rhs) and is_static(lhs)):
            return rw.fail(op, "dynamic shapes")
        dims = read_i64_array(broadcast, "broadcast_dimensions")
        if dims != sorted(dims):
            return rw.fail(op, "the broadcast transposes")
        if any(d in dims for d in rhs_batch):
            return rw.fail(op, "a rhs batch dim comes from the weight, not from the broadcast")
        if lhs_batch != list(range(len(lhs_batch))):
            return rw.fail(op, "lhs batch dims are not the leading dims in order")
        weight_shape, rhs_shape = shape_of(weight), shape_of(rhs)
        if any(weight_shape[i] != rhs_shape[d] for i, d in enumerate(dims)):
            return rw.fail(op, "the broadcast expands size-1 dims of the weight")
        if any(d not in dims for d in range(len(rhs_shape)) if d not in rhs_batch):
            return rw.fail(op, "the broadcast adds non-batch dims")
        position = {d: i for i, d in enumerate(dims)}
        new_contracting = [position[d] for d in rhs_contracting]
        attributes = {name: op.attributes[name] for name in op.attributes}
        attributes["dot_dimension_numbers"] = make_dot_dimension_numbers([], [], lhs_contracting, new_contracting)
        new = rw.create("stablehlo.dot_general", [lhs, weight], [op.results[0].type], attributes)
        rw.replace_op(op, [new.result])
        return True


class DotGeneralToMatrixDot(RewritePattern):
    """dot_general(a[d0..dn-1, K], w[K, N]) -> reshape(dot_general(reshape(a)[D, K], w)[D, N]).

    Constraints: no batch dims; a contracts its last dim, w (rank 2) its first; a has rank
    > 2; static shapes. Off by default (XLA handles N-D dots itself); for backends that want
    2-D GEMMs.
    """

    root = "stablehlo.dot_general"

    def match_and_rewrite(self, op: ir.Operation, rw: Rewriter) -> bool:
        lhs, rhs = op.operands[0], op.operands[1]
        lhs_batch, rhs_batch, lhs_contracting, rhs_contracting = dot_dimension_numbers(op)
        if lhs_batch or rhs_batch:
            return rw.fail(op, "has batch dims")
        if not (is_static(lhs) and is_static(rhs)):
            return rw.fail(op, "dynamic shapes")
        lhs_shape, rhs_shape = shape_of(lhs), shape_of(rhs)
        if len(lhs_shape) <= 2 or len(rhs_shape) != 2:
            return rw.fail(op, "not an N-D x 2-D product")
        if lhs_contracting != [len(lhs_shape) - 1] or rhs_contracting != [0]:
            return rw.fail(op, "does not contract a's last dim with w's first")
        rows = math.prod(lhs_shape[:-1])
        element = element_type_of(lhs)
        flat = rw.create("stablehlo.reshape", [lhs], [tensor_type([rows, lhs_shape[-1]], element)])
        attributes = {name: op.attributes[name] for name in op.attributes}
        attributes["dot_dimension_numbers"] = make_dot_dimension_numbers([], [], [1], [0])
        product_type = tensor_type([rows, rhs_shape[1]], element_type_of(op.results[0]))
        product = rw.create("stablehlo.dot_general", [flat.result, rhs], [product_type], attributes)
        new = rw.create("stablehlo.reshape", [product.result], [op.results[0].type])
        rw.replace_op(op, [new.result])
        return True


@dataclasses.dataclass(frozen=True)
class SimplifyDotGeneralPass(PatternRewritePass, ModulePass):
    """Turns batched matmuls against a broadcast weight into plain dots.

    Rewrites:

    - ``dot_general(a[B.., M, K], broadcast_in_dim(w[K, N])[B.., K, N], batch [0..] x [0..])
      -> dot_general(a, w)`` with no batch dims (result ``[B.., M, N]`` either way), when
      every rhs batch dim is created by the broadcast, the broadcast neither transposes nor
      expands w's dims, and the lhs batch dims are its leading dims in order
    - with ``flatten=true``: ``dot_general(a[d.., K], w[K, N]) -> reshape(dot_general(
      reshape(a)[D, K], w)[D, N])`` for rank(a) > 2, so the product is one 2-D GEMM

    All rewrites need static shapes; every output element is the same sum of products.
    """

    name: ClassVar[str] = "simplify-dot-general"

    flatten: bool = False
    """Also flatten N-D x 2-D products to a 2-D dot between reshapes."""

    def patterns(self) -> list[RewritePattern]:
        patterns: list[RewritePattern] = [DotGeneralOfBroadcastRhs()]
        if self.flatten:
            patterns.append(DotGeneralToMatrixDot())
        return patterns
