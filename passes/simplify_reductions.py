"""``simplify-reductions``: removes reductions that do not reduce anything.

A ``stablehlo.reduce`` over no dims, or over dims of size 1, combines each element with the
init value once; it is an elementwise op (after a reshape). A max/min/and/or reduction over
dims that a broadcast created sees every value repeated, and repetition does not change an
idempotent reduction, so those dims can be dropped.
"""

from __future__ import annotations

import dataclasses
from typing import ClassVar

from jaxlib.mlir import ir

from onnx_stablehlo.passes.base import ModulePass
from onnx_stablehlo.passes.ir_utils import (
    defining_op_named,
    element_type_of,
    i64_array,
    is_static,
    read_i64_array,
    shape_of,
    tensor_type,
)
from onnx_stablehlo.passes.patterns import PatternRewritePass, RewritePattern, Rewriter

__all__ = ["SimplifyReductionsPass"]

_BODY_OPS = (
    "stablehlo.add",
    "stablehlo.multiply",
    "stablehlo.maximum",
    "stablehlo.minimum",
    "stablehlo.and",
    "stablehlo.or",
)
_IDEMPOTENT = ("stablehlo.maximum", "stablehlo.minimum", "stablehlo.and", "stablehlo.or")


def reduce_body_op(op: ir.Operation) -> str | None:
    """The body op name of a one-input reduce whose body is ``return f(arg0, arg1)``, else None."""
    if len(op.operands) != 2:
        return None
    block = op.regions[0].blocks[0]
    operations = list(block.operations)
    arguments = list(block.arguments)
    if len(operations) != 2 or operations[1].name != "stablehlo.return" or len(arguments) != 2:
        return None
    body = operations[0]
    if body.name not in _BODY_OPS or list(body.operands) != arguments:
        return None
    if list(operations[1].operands) != [body.results[0]]:
        return None
    return body.name


class ReduceOfUnitDims(RewritePattern):
    """reduce(x, init, dims) {f} -> f(reshape(x), broadcast_in_dim(init)) when every reduced dim has size 1.

    Also when ``dims`` is empty (no reshape then). Constraints: one input; the body is
    ``return f(arg0, arg1)`` with f in add, multiply, maximum, minimum, and, or; static
    shapes. Exact: the reduce computes ``f(init, x)`` once per element, as the rewrite does.
    """

    root = "stablehlo.reduce"

    def match_and_rewrite(self, op: ir.Operation, rw: Rewriter) -> bool:
        body = reduce_body_op(op)
        if body is None:
            return rw.fail(op, "not a one-input reduce with a single add/multiply/maximum/minimum/and/or body")
        data, init = op.operands[0], op.operands[1]
        if not is_static(data):
            return rw.fail(op, "dynamic shapes")
        shape = shape_of(data)
        dims = read_i64_array(op, "dimensions")
        if any(shape[d] != 1 for d in dims):
            return rw.fail(op, "reduces a dim of size > 1")
        result_type = op.results[0].type
        reshaped = data if data.type == result_type else rw.create("stablehlo.reshape", [data], [result_type]).result
        init_broadcast = rw.create(
            "stablehlo.broadcast_in_dim", [init], [result_type], {"broadcast_dimensions": i64_array([])}
        )
        # The body computes f(accumulator, element) with the init as the first accumulator.
        combined = rw.create(body, [init_broadcast.result, reshaped], [result_type])
        rw.replace_op(op, [combined.result])
        return True


class IdempotentReduceOfBroadcast(RewritePattern):
    """reduce(broadcast_in_dim(x), init, dims) {max|min|and|or} -> reduce(x', init, dims') over fewer dims.

    The dims the broadcast created (or expanded from size 1) hold repeated values, which an
    idempotent reduction does not need; they are dropped from the reduction, and the
    broadcast keeps only the dims the result needs. Constraints: one input; static shapes;
    the broadcast maps x's dims in increasing order.
    """

    root = "stablehlo.reduce"

    def match_and_rewrite(self, op: ir.Operation, rw: Rewriter) -> bool:
        body = reduce_body_op(op)
        if body not in _IDEMPOTENT:
            return rw.fail(op, "body is not maximum, minimum, and, or")
        broadcast = defining_op_named(op.operands[0], "stablehlo.broadcast_in_dim")
        if broadcast is None:
            return rw.fail(op, "input is not produced by broadcast_in_dim")
        source = broadcast.operands[0]
        if not (is_static(source) and is_static(broadcast.results[0])):
            return rw.fail(op, "dynamic shapes")
        source_shape = shape_of(source)
        full_shape = shape_of(broadcast.results[0])
        bdims = read_i64_array(broadcast, "broadcast_dimensions")
        if bdims != sorted(bdims):
            return rw.fail(op, "the broadcast transposes")
        reduced = read_i64_array(op, "dimensions")
        # Result dim d carries x's values along it only if some x dim of size > 1 maps there.
        carrying = {d: i for i, d in enumerate(bdims) if source_shape[i] == full_shape[d]}
        needed = [d for d in reduced if d in carrying and full_shape[d] != 1]
        if len(needed) == len(reduced):
            return rw.fail(op, "every reduced dim carries distinct values")
        kept = [d for d in range(len(full_shape)) if d not in reduced or d in needed]
        narrow_shape = [full_shape[d] for d in kept]
        # Broadcast x to the kept dims only (reduced repeated dims removed).
        narrow_type = tensor_type(narrow_shape, element_type_of(source))
        position = {d: k for k, d in enumerate(kept)}
        narrow_dims = []
        for i, d in enumerate(bdims):
            if d in position:
                narrow_dims.append(position[d])
            elif source_shape[i] != 1:
                return rw.fail(op, "a reduced broadcast dim carries values")
        if len(narrow_dims) != len(bdims):
            # x has size-1 dims on dropped axes: reshape them away first.
            kept_source = [i for i, d in enumerate(bdims) if d in position]
            source = rw.create(
                "stablehlo.reshape",
                [source],
                [tensor_type([source_shape[i] for i in kept_source], element_type_of(source))],
            ).result
        if source.type == narrow_type and narrow_dims == list(range(len(narrow_dims))):
            narrow = source  # nothing left to broadcast
        else:
            narrow = rw.create(
                "stablehlo.broadcast_in_dim", [source], [narrow_type], {"broadcast_dimensions": i64_array(narrow_dims)}
            ).result
        new_dims = [position[d] for d in needed]
        new_reduce = rw.create(
            "stablehlo.reduce",
            [narrow, op.operands[1]],
            [op.results[0].type],
            {"dimensions": i64_array(new_dims)},
            regions=1,
        )
        _copy_body(op, new_reduce)
        rw.replace_op(op, [new_reduce.result])
        return True


def _copy_body(source: ir.Operation, target: ir.Operation) -> None:
    """Clones the single-op reducer body of ``source`` into ``target``'s empty region."""
    old_block = source.regions[0].blocks[0]
    argument_types = [a.type for a in old_block.arguments]
    block = target.regions[0].blocks.append(*argument_types)
    body = list(old_block.operations)[0]
    with ir.InsertionPoint(block), body.location:
        combined = ir.Operation.create(body.name, results=[body.results[0].type], operands=list(block.arguments))
        ir.Operation.create("stablehlo.return", operands=[combined.result])


@dataclasses.dataclass(frozen=True)
class SimplifyReductionsPass(PatternRewritePass, ModulePass):
    """Replaces reductions that reduce nothing, and drops repeated dims from idempotent ones.

    Rewrites (one-input reduce whose body is ``return f(acc, x)``):

    - ``reduce(x, init, dims) {f} -> f(broadcast(init), reshape(x))`` when ``dims`` is empty
      or every reduced dim has size 1 (f in add, multiply, maximum, minimum, and, or)
    - ``reduce(broadcast_in_dim(x), init, dims) {f} -> reduce(broadcast_in_dim(x)', init,
      dims')`` for idempotent f (maximum, minimum, and, or): reduced dims that only repeat
      values (created by the broadcast, or expanded from size 1) are dropped

    Static shapes only. Both are exact: the same values are combined in the same way, float
    ``add`` included (each output combines one element with the init).
    """

    name: ClassVar[str] = "simplify-reductions"

    def patterns(self) -> list[RewritePattern]:
        return [ReduceOfUnitDims(), IdempotentReduceOfBroadcast()]
