"""Calls and control flow -> ONNX: ``func.call`` (inlined), ``stablehlo.composite`` (its
decomposition, inlined), ``while`` -> ``Loop``, ``if``/``case`` -> ``If``,
``optimization_barrier`` -> ``Identity``, and the ``custom_call``s JAX emits for ordinary
programs.

``while`` (StableHLO spec "while"): ``Loop(M="", cond=cond(init), carried=init)`` whose body runs
the while body, then the cond region on the new carries to give the loop's condition output.
``case(index)`` selects branch ``index``, the last one when out of range: ``If(index == 0,
branch 0, If(index == 1, ...))`` with the last branch as the final else. The trip count is not
recovered (a ``Loop`` with ``M`` empty runs until its condition is false; onnxruntime runs that
as fast).

custom_call targets: ``shape_assertion`` (JAX's check of symbolic dims at call time) is dropped:
onnxruntime's own shape checks of the declared input dims stand in for it. Any other target
(host callbacks, ``Sharding``, ``SPMDFullToShardShape``, ...) has no ONNX form.
"""

from __future__ import annotations

import numpy as np
import onnx_ir
from jaxlib.mlir import ir

from onnx_stablehlo.exporter.context import ExportContext
from onnx_stablehlo.exporter.registry import export_rule
from onnx_stablehlo.exporter.types import mlir_shape, onnx_dtype

DT = onnx_ir.DataType

_DROPPED_CUSTOM_CALLS = frozenset({"shape_assertion"})
_IDENTITY_CUSTOM_CALLS = frozenset({"Sharding", "SPMDFullToShardShape", "SPMDShardToFullShape", "annotate_device_placement"})


@export_rule("func.call")
def export_call(ctx: ExportContext) -> list[onnx_ir.Value]:
    callee = ir.FlatSymbolRefAttr(ctx.attr("callee")).value
    return ctx.converter.call(callee, ctx.inputs(), ctx.scope)


@export_rule("stablehlo.composite")
def export_composite(ctx: ExportContext) -> list[onnx_ir.Value]:
    """A composite keeps its decomposition: ``decomposition`` is inlined (its name and
    attributes are not kept; the onnxscript rewriter recovers fused ops where it knows them)."""
    callee = ir.FlatSymbolRefAttr(ctx.attr("decomposition")).value
    return ctx.converter.call(callee, ctx.inputs(), ctx.scope)


@export_rule("stablehlo.optimization_barrier")
def export_optimization_barrier(ctx: ExportContext) -> list[onnx_ir.Value]:
    return [ctx.emit("Identity", [value]) for value in ctx.inputs()]


def _custom_call_target(op: ir.Operation) -> str:
    return ir.StringAttr(op.attributes["call_target_name"]).value


def _custom_call_check(op: ir.Operation) -> str | None:
    target = _custom_call_target(op)
    if target in _DROPPED_CUSTOM_CALLS:
        return None
    if target in _IDENTITY_CUSTOM_CALLS and len(op.operands) == 1 and len(op.results) == 1:
        return None
    if "callback" in target.lower():
        return f"custom_call @{target} is a host callback (Python code), which an ONNX file cannot hold"
    return f"custom_call @{target} has no ONNX form"


@export_rule("stablehlo.custom_call", check=_custom_call_check)
def export_custom_call(ctx: ExportContext) -> list[onnx_ir.Value]:
    target = _custom_call_target(ctx.op)
    if target in _DROPPED_CUSTOM_CALLS:
        return []
    return [ctx.emit("Identity", [ctx.input(0)])]


@export_rule("stablehlo.while")
def export_while(ctx: ExportContext) -> list[onnx_ir.Value]:
    cond_region, body_region = ctx.op.regions[0], ctx.op.regions[1]
    init = ctx.inputs()
    (keep_going,) = ctx.inline_region(cond_region, init)
    carried_types = [v.type for v in ctx.op.operands]

    def prologue(scope, frame, inputs):
        return inputs[2:]

    def epilogue(scope, frame, results):
        # The body's condition output: the cond region on the new carries.
        from onnx_stablehlo.exporter.context import Frame

        (cond,) = ctx.converter.convert_block(cond_region.blocks[0], results, scope, Frame(frame))
        outputs = [cond] + list(results)
        return outputs

    extra = [("iter", (DT.INT64, [])), ("cond_in", (DT.BOOL, []))]
    extra += [(f"carry{i}", (onnx_dtype(t), list(mlir_shape(t)))) for i, t in enumerate(carried_types)]
    body = ctx.subgraph(body_region, extra_inputs=extra, prologue=prologue, epilogue=epilogue,
                        name=f"{ctx.name or 'while'}/body")
    for value, ty in zip(body.outputs, [None] + carried_types):
        if ty is None:
            value.type, value.shape = onnx_ir.TensorType(DT.BOOL), onnx_ir.Shape([])
        else:
            value.type, value.shape = onnx_ir.TensorType(onnx_dtype(ty)), onnx_ir.Shape(list(mlir_shape(ty)))
    return ctx.emit_multi("Loop", [None, keep_going] + init, len(init), {"body": body})


def _branch(ctx: ExportContext, region: ir.Region, label: str) -> onnx_ir.Graph:
    return ctx.subgraph(region, prologue=lambda scope, frame, inputs: [], name=f"{ctx.name or 'if'}/{label}")


def _if(ctx: ExportContext, cond: onnx_ir.Value, then_graph: onnx_ir.Graph, else_graph: onnx_ir.Graph) -> list[onnx_ir.Value]:
    return ctx.emit_multi("If", [cond], len(ctx.op.results), {"then_branch": then_graph, "else_branch": else_graph})


@export_rule("stablehlo.if")
def export_if(ctx: ExportContext) -> list[onnx_ir.Value]:
    then_graph = _branch(ctx, ctx.op.regions[0], "then")
    else_graph = _branch(ctx, ctx.op.regions[1], "else")
    return _if(ctx, ctx.input(0), then_graph, else_graph)


@export_rule("stablehlo.case")
def export_case(ctx: ExportContext) -> list[onnx_ir.Value]:
    """``case(index)``: branch ``index``; an index outside [0, n) runs the last branch."""
    regions = list(ctx.op.regions)
    index = ctx.input(0)
    dtype = ctx.operand_dtype(0)
    if len(regions) == 1:
        return ctx.inline_region(regions[0], [])
    # Built from the last branch up: If(index == n-2, branch n-2, last), then n-3, ...
    graphs = [_branch(ctx, region, f"branch{i}") for i, region in enumerate(regions)]
    else_graph = graphs[-1]
    for i in range(len(regions) - 2, -1, -1):
        cond = ctx.emit("Equal", [index, ctx.const(np.array(i, dtype=dtype.numpy()))])
        if i == 0:
            return _if(ctx, cond, graphs[0], else_graph)
        outputs = _if(ctx, cond, graphs[i], else_graph)
        else_graph = _wrap(ctx, outputs, f"branch{i}_or_later")
    raise AssertionError("unreachable")


def _wrap(ctx: ExportContext, nested_outputs: list[onnx_ir.Value], label: str) -> onnx_ir.Graph:
    """Moves the ``If`` node that produced ``nested_outputs`` into a graph of its own (the else
    branch of the enclosing ``If``)."""
    node = nested_outputs[0].producer()
    ctx.scope.nodes.remove(node)
    # The condition of the nested If was emitted just before it; it moves along.
    cond_node = node.inputs[0].producer()
    moved = [node]
    if cond_node is not None and cond_node in ctx.scope.nodes:
        ctx.scope.nodes.remove(cond_node)
        moved = [cond_node, node]
    outputs = []
    for value, result in zip(nested_outputs, ctx.op.results):
        value.type = onnx_ir.TensorType(onnx_dtype(result.type))
        value.shape = onnx_ir.Shape(list(mlir_shape(result.type)))
        outputs.append(value)
    return onnx_ir.Graph([], outputs, nodes=moved, name=ctx.converter.names.node(f"{ctx.name or 'case'}/{label}"))
