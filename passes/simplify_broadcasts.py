"""``simplify-broadcasts``: merges broadcast chains and computes before broadcasting.

ONNX's implicit broadcasting lowers to a ``broadcast_in_dim`` per operand; the normalizations
(LayerNorm, Softmax) add ``reshape`` to re-insert the reduced axis before broadcasting back.
This pass merges such chains and moves elementwise work before the broadcast, on fewer
elements, without changing any value.
"""

from __future__ import annotations

import dataclasses
from typing import ClassVar

import numpy as np
from jaxlib.mlir import ir

from onnx_stablehlo.passes.base import ModulePass
from onnx_stablehlo.passes.ir_utils import (
    constant_attr,
    defining_op_named,
    dense_attr,
    element_type_of,
    has_one_use,
    i64_array,
    is_static,
    numpy_dtype,
    read_i64_array,
    shape_of,
    splat_scalar,
    tensor_type,
)
from onnx_stablehlo.passes.op_catalog import BINARY_ELEMENTWISE, UNARY_ELEMENTWISE
from onnx_stablehlo.passes.patterns import PatternRewritePass, RewritePattern, Rewriter

__all__ = ["SimplifyBroadcastsPass"]

# Sorted, so the patterns' roots are listed in a fixed order.
_BINARY = tuple(sorted(BINARY_ELEMENTWISE))
_UNARY = tuple(sorted(UNARY_ELEMENTWISE))


class BroadcastOfBroadcast(RewritePattern):
    """broadcast_in_dim(broadcast_in_dim(x, d1), d2) -> broadcast_in_dim(x, d2[d1])."""

    root = "stablehlo.broadcast_in_dim"

    def match_and_rewrite(self, op: ir.Operation, rw: Rewriter) -> bool:
        inner = defining_op_named(op.operands[0], "stablehlo.broadcast_in_dim")
        if inner is None:
            return rw.fail(op, "operand is not produced by broadcast_in_dim")
        outer_dims = read_i64_array(op, "broadcast_dimensions")
        dims = [outer_dims[d] for d in read_i64_array(inner, "broadcast_dimensions")]
        new = rw.create(
            "stablehlo.broadcast_in_dim",
            [inner.operands[0]],
            [op.results[0].type],
            {"broadcast_dimensions": i64_array(dims)},
        )
        rw.replace_op(op, [new.result])
        return True


def unit_dim_alignment(source: tuple[int, ...], target: tuple[int, ...]) -> list[int] | None:
    """Maps each source dim to a target dim when ``target`` is ``source`` with size-1 dims inserted.

    Returns ``None`` when the reshape does anything else (merges, splits or drops dims).

    >>> unit_dim_alignment((2, 16), (2, 16, 1))
    [0, 1]
    >>> unit_dim_alignment((4,), (1, 4, 1))
    [1]
    >>> unit_dim_alignment((2, 8), (16,)) is None
    True
    """
    mapping = []
    j = 0
    for size in source:
        while j < len(target) and target[j] != size:
            if target[j] != 1:
                return None
            j += 1
        if j == len(target):
            return None
        mapping.append(j)
        j += 1
    if any(size != 1 for size in target[j:]):
        return None
    return mapping


class BroadcastOfUnitReshape(RewritePattern):
    """broadcast_in_dim(reshape(x), d) -> broadcast_in_dim(x, d') when the reshape only inserts size-1 dims.

    Constraint: static shapes. ``d'`` maps each dim of x to where its reshaped dim went.
    Typical source: ``ReduceMean(keepdims=1)`` then a broadcast back, in LayerNorm and Softmax.
    """

    root = "stablehlo.broadcast_in_dim"

    def match_and_rewrite(self, op: ir.Operation, rw: Rewriter) -> bool:
        reshape = defining_op_named(op.operands[0], "stablehlo.reshape")
        if reshape is None:
            return rw.fail(op, "operand is not produced by a reshape")
        source = reshape.operands[0]
        if not (is_static(source) and is_static(reshape.results[0])):
            return rw.fail(op, "dynamic shapes")
        mapping = unit_dim_alignment(shape_of(source), shape_of(reshape.results[0]))
        if mapping is None:
            return rw.fail(op, "the reshape does more than insert size-1 dims")
        outer_dims = read_i64_array(op, "broadcast_dimensions")
        dims = [outer_dims[j] for j in mapping]
        new = rw.create(
            "stablehlo.broadcast_in_dim", [source], [op.results[0].type], {"broadcast_dimensions": i64_array(dims)}
        )
        rw.replace_op(op, [new.result])
        return True


class BroadcastToReshape(RewritePattern):
    """broadcast_in_dim(x, d) -> reshape(x) when no element is repeated and d is increasing.

    Constraint: static shapes with the same element count.
    """

    root = "stablehlo.broadcast_in_dim"

    def match_and_rewrite(self, op: ir.Operation, rw: Rewriter) -> bool:
        operand, result = op.operands[0], op.results[0]
        if not (is_static(operand) and is_static(result)):
            return rw.fail(op, "dynamic shapes")
        if np.prod(shape_of(operand)) != np.prod(shape_of(result)):
            return rw.fail(op, "the broadcast repeats elements")
        dims = read_i64_array(op, "broadcast_dimensions")
        if dims != sorted(dims):
            return rw.fail(op, "dims are not increasing (the broadcast also transposes)")
        if operand.type == result.type:
            rw.replace_op(op, [operand])
        else:
            rw.replace_op(op, [rw.create("stablehlo.reshape", [operand], [result.type]).result])
        return True


def _narrow_splat(value: ir.Value, shape: tuple[int, ...], rw: Rewriter) -> ir.Value | None:
    """A splat constant like ``value`` but of ``shape``; ``None`` if value is no readable splat."""
    attr = constant_attr(value)
    if attr is None or not attr.is_splat:
        return None
    element = element_type_of(value)
    dtype = numpy_dtype(element)
    if dtype is None:
        return None
    return rw.constant(dense_attr(np.full((1,), splat_scalar(value), dtype), tensor_type(shape, element)))


class ElementwiseOfBroadcasts(RewritePattern):
    """f(broadcast_in_dim(a, d), broadcast_in_dim(b, d)) -> broadcast_in_dim(f(a, b), d).

    Also with a splat constant for either operand: ``f(broadcast_in_dim(a, d), splat c) ->
    broadcast_in_dim(f(a, splat c'), d)``. For binary elementwise ops (add, subtract,
    multiply, divide, remainder, maximum, minimum, power, atan2, and, or, xor, compare,
    shifts). Constraints: a and b have the same type, the broadcasts have the same dims and
    no other use; static shapes.
    """

    root = _BINARY

    def match_and_rewrite(self, op: ir.Operation, rw: Rewriter) -> bool:
        lhs, rhs = op.operands[0], op.operands[1]
        broadcasts = [defining_op_named(v, "stablehlo.broadcast_in_dim") for v in (lhs, rhs)]
        present = [b for b in broadcasts if b is not None]
        if not present:
            return rw.fail(op, "no operand is produced by broadcast_in_dim")
        first = present[0]
        dims = read_i64_array(first, "broadcast_dimensions")
        small = first.operands[0]
        if not is_static(small) or not is_static(op.results[0]):
            return rw.fail(op, "dynamic shapes")
        small_shape = shape_of(small)
        for b in present:
            if not has_one_use(b.results[0]):
                return rw.fail(op, "a broadcast operand has other uses")
            if read_i64_array(b, "broadcast_dimensions") != dims or b.operands[0].type != small.type:
                return rw.fail(op, "the broadcasts differ in dims or operand type")
        new_operands = []
        for value, broadcast in zip((lhs, rhs), broadcasts):
            if broadcast is not None:
                new_operands.append(broadcast.operands[0])
                continue
            narrowed = _narrow_splat(value, small_shape, rw)
            if narrowed is None:
                return rw.fail(op, "the other operand is neither a matching broadcast nor a splat constant")
            new_operands.append(narrowed)
        result_type = tensor_type(small_shape, element_type_of(op.results[0]))
        attributes = {name: op.attributes[name] for name in op.attributes}
        inner = rw.create(op.name, new_operands, [result_type], attributes)
        new = rw.create(
            "stablehlo.broadcast_in_dim",
            [inner.result],
            [op.results[0].type],
            {"broadcast_dimensions": i64_array(dims)},
        )
        rw.replace_op(op, [new.result])
        return True


class UnaryOfBroadcast(RewritePattern):
    """f(broadcast_in_dim(x, d)) -> broadcast_in_dim(f(x), d) for unary elementwise ops (convert included).

    Constraint: the broadcast has no other use; static shapes.
    """

    root = _UNARY

    def match_and_rewrite(self, op: ir.Operation, rw: Rewriter) -> bool:
        broadcast = defining_op_named(op.operands[0], "stablehlo.broadcast_in_dim")
        if broadcast is None:
            return rw.fail(op, "operand is not produced by broadcast_in_dim")
        if not has_one_use(broadcast.results[0]):
            return rw.fail(op, "the broadcast has other uses")
        small = broadcast.operands[0]
        if not is_static(small):
            return rw.fail(op, "dynamic shapes")
        result_type = tensor_type(shape_of(small), element_type_of(op.results[0]))
        attributes = {name: op.attributes[name] for name in op.attributes}
        inner = rw.create(op.name, [small], [result_type], attributes)
        dims = read_i64_array(broadcast, "broadcast_dimensions")
        new = rw.create(
            "stablehlo.broadcast_in_dim",
            [inner.result],
            [op.results[0].type],
            {"broadcast_dimensions": i64_array(dims)},
        )
        rw.replace_op(op, [new.result])
        return True


class ElementwiseOfReshapes(RewritePattern):
    """f(reshape(a), ...) -> reshape(f(a, ...)) for elementwise f: sinks reshapes toward broadcasts.

    Unary: ``f(reshape(a)) -> reshape(f(a))``; binary: ``f(reshape(a), reshape(b)) ->
    reshape(f(a, b))`` and ``f(reshape(a), splat c) -> reshape(f(a, splat c'))`` (either
    operand order). Moves
    reshapes down to where a broadcast can absorb them. Constraints: each reshape has no other
    use; a and b have the same type; static shapes.
    """

    root = _UNARY + _BINARY

    def match_and_rewrite(self, op: ir.Operation, rw: Rewriter) -> bool:
        operands = list(op.operands)
        reshapes = [defining_op_named(v, "stablehlo.reshape") for v in operands]
        present = [r for r in reshapes if r is not None]
        if not present:
            return rw.fail(op, "no operand is produced by a reshape")
        source = present[0].operands[0]
        if not is_static(source) or not is_static(op.results[0]):
            return rw.fail(op, "dynamic shapes")
        for reshape in present:
            if not has_one_use(reshape.results[0]):
                return rw.fail(op, "a reshape operand has other uses")
            if reshape.operands[0].type != source.type:
                return rw.fail(op, "the reshaped operands differ in type")
        new_operands = []
        for value, reshape in zip(operands, reshapes):
            if reshape is not None:
                new_operands.append(reshape.operands[0])
                continue
            narrowed = _narrow_splat(value, shape_of(source), rw)
            if narrowed is None:
                return rw.fail(op, "the other operand is neither a matching reshape nor a splat constant")
            new_operands.append(narrowed)
        attributes = {name: op.attributes[name] for name in op.attributes}
        result_type = tensor_type(shape_of(source), element_type_of(op.results[0]))
        inner = rw.create(op.name, new_operands, [result_type], attributes)
        new = rw.create("stablehlo.reshape", [inner.result], [op.results[0].type])
        rw.replace_op(op, [new.result])
        return True


@dataclasses.dataclass(frozen=True)
class SimplifyBroadcastsPass(PatternRewritePass, ModulePass):
    """Merges broadcast chains and moves elementwise work before broadcasts.

    Rewrites:

    - ``broadcast_in_dim(broadcast_in_dim(x, d1), d2) -> broadcast_in_dim(x, d2[d1])``
    - ``broadcast_in_dim(reshape(x), d) -> broadcast_in_dim(x, d')`` when the reshape only
      inserts size-1 dims (``ReduceMean(keepdims=1)`` followed by a broadcast back)
    - ``broadcast_in_dim(x, d) -> reshape(x)`` when the element count is unchanged and ``d``
      is increasing
    - ``f(broadcast_in_dim(a, d), broadcast_in_dim(b, d)) -> broadcast_in_dim(f(a, b), d)``
      for binary elementwise ops, and the same with a splat constant as either operand
      (narrowed to a's shape); a and b of one type, the broadcasts used only there
    - ``f(broadcast_in_dim(x, d)) -> broadcast_in_dim(f(x), d)`` for unary elementwise ops
      (``convert`` and ``chlo.erf`` included), the broadcast used only there
    - ``f(reshape(a)) -> reshape(f(a))``, ``f(reshape(a), reshape(b)) -> reshape(f(a, b))``
      and ``f(reshape(a), splat c) -> reshape(f(a, splat c'))`` for elementwise ops, the
      reshapes used only there: sinks reshapes down to the broadcasts that absorb them

    All rewrites need static shapes. Values are unchanged: each elementwise result is computed
    from the same operand values, only fewer times.
    """

    name: ClassVar[str] = "simplify-broadcasts"

    def patterns(self) -> list[RewritePattern]:
        return [
            BroadcastOfBroadcast(),
            BroadcastOfUnitReshape(),
            BroadcastToReshape(),
            ElementwiseOfBroadcasts(),
            UnaryOfBroadcast(),
            ElementwiseOfReshapes(),
        ]
