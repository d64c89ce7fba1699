"""VJP rules of control-flow ops: ``if`` and ``optimization_barrier``.

* ``if``: a new ``stablehlo.if`` on the same predicate whose branches each recompute their
  forward ops and run the reverse-mode transform over them, returning the cotangents of the
  values the branches use from the enclosing function (zeros for those a branch does not use).
  The predicate gets none.
* ``optimization_barrier``: each operand gets its result's cotangent.

``while`` has no rule: reverse mode through a loop needs the per-iteration values (a tape of
the loop state), which this transform does not build; a ``while`` on the differentiated path
raises ``MissingVjpRuleError``. Loops whose results do not depend on the differentiated
arguments are fine (they are not on the path).
"""

from __future__ import annotations

from jaxlib.mlir import ir
from jaxlib.mlir.dialects import stablehlo

from onnx_stablehlo.passes.autodiff import emit
from onnx_stablehlo.passes.autodiff.context import VjpContext
from onnx_stablehlo.passes.autodiff.registry import vjp_rule


@vjp_rule("stablehlo.optimization_barrier")
def vjp_optimization_barrier(ctx: VjpContext, *cts: ir.Value | None) -> list:
    return [ct if need else None for ct, need in zip(cts, ctx.needs)]


@vjp_rule("stablehlo.if")
def vjp_if(ctx: VjpContext, *cts: ir.Value | None) -> list:
    captures = list(ctx.captures)
    if not captures:
        return [None]
    new_if = stablehlo.IfOp([c.type for c in captures], ctx.operands[0])
    for index in range(2):
        old_block = ctx.op.regions[index].blocks[0]
        old_ops = [o.operation for o in old_block.operations]
        block = new_if.regions[index].blocks.append()
        mapping: dict[ir.Value, ir.Value] = {}
        with ir.InsertionPoint(block):
            clones = emit.clone_ops(old_ops[:-1], ir.InsertionPoint(block), mapping)
            outputs = [mapping.get(v, v) for v in old_ops[-1].operands]
            branch_cts = ctx.backprop(clones, outputs, list(cts), captures)
            stablehlo.ReturnOp([ct if ct is not None else emit.zeros_like(c) for ct, c in zip(branch_cts, captures)])
    return [None, *new_if.results]
