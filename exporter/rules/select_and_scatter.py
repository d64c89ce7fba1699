"""``stablehlo.select_and_scatter`` -> ONNX: the gradient of max (or min) pooling.

StableHLO spec "select_and_scatter": for each window of ``operand`` (``window_dimensions``,
``window_strides``, ``padding``), ``select`` picks one element, and the ``source`` element of
that window is combined (``scatter``) into the result at the picked position; the result starts
as ``init_value`` everywhere.

Mapping (the form JAX emits for the VJP of ``reduce_window`` max/min):
  select = compare GE (first maximum wins) -> MaxPool(operand) with its Indices output
  select = compare LE (first minimum wins) -> MaxPool(-operand) with Indices
  scatter = add -> ScatterElements(reduction="add") of ``source`` at those indices into a
      tensor filled with ``init_value``
Layout: the windowed dims become MaxPool's spatial dims (1 to 3 of them), every other dim is
folded into its batch (a Transpose and a Reshape; both undone at the end). onnxruntime's
MaxPool scans a window in row-major order and keeps the first maximum, as GE does; its Indices
are flat row-major offsets into its input, padding excluded, so padded positions are never
picked (as in StableHLO, where padding is never selected).
"""

from __future__ import annotations

import numpy as np
import onnx_ir
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import stablehlo

from onnx_stablehlo.exporter.context import ExportContext, read_ints
from onnx_stablehlo.exporter.registry import export_rule

DT = onnx_ir.DataType


def _body_ops(region: ir.Region) -> list[ir.Operation]:
    return [op.operation for op in region.blocks[0].operations]


def _select_direction(op: ir.Operation) -> str | None:
    ops = _body_ops(op.regions[0])
    if len(ops) != 2 or ops[0].name != "stablehlo.compare" or ops[1].name != "stablehlo.return":
        return None
    args = list(op.regions[0].blocks[0].arguments)
    if list(ops[0].operands) != args:
        return None
    return stablehlo.ComparisonDirectionAttr(ops[0].attributes["comparison_direction"]).value


def _scatter_is_add(op: ir.Operation) -> bool:
    ops = _body_ops(op.regions[1])
    args = list(op.regions[1].blocks[0].arguments)
    if len(ops) != 2 or ops[0].name != "stablehlo.add" or ops[1].name != "stablehlo.return":
        return False
    operands = list(ops[0].operands)
    return (operands[0] == args[0] and operands[1] == args[1]) or (operands[0] == args[1] and operands[1] == args[0])


def _owner_name(value: ir.Value) -> str:
    owner = value.owner
    owner = owner.operation if isinstance(owner, ir.OpView) else owner
    return owner.name if isinstance(owner, ir.Operation) else ""


def _window(op: ir.Operation) -> tuple[list[int], list[int], list[tuple[int, int]]]:
    rank = ir.RankedTensorType(op.operands[0].type).rank
    attrs = op.attributes
    window = read_ints(attrs["window_dimensions"]) if "window_dimensions" in attrs else [1] * rank
    strides = read_ints(attrs["window_strides"]) if "window_strides" in attrs else [1] * rank
    padding = [(0, 0)] * rank
    if "padding" in attrs:
        flat = read_ints(attrs["padding"])
        padding = [(flat[2 * i], flat[2 * i + 1]) for i in range(rank)]
    return window, strides, padding


def _check(op: ir.Operation) -> str | None:
    direction = _select_direction(op)
    if direction not in ("GE", "LE"):
        return f"select_and_scatter with a select other than compare GE/LE of its two arguments ({direction})"
    if not _scatter_is_add(op):
        return "select_and_scatter with a scatter other than add"
    if _owner_name(op.operands[2]) != "stablehlo.constant":
        return "select_and_scatter with an init value that is not a constant"
    window, strides, padding = _window(op)
    spatial = [d for d in range(len(window)) if window[d] != 1 or strides[d] != 1 or padding[d] != (0, 0)]
    if not 1 <= len(spatial) <= 3:
        return f"select_and_scatter over {len(spatial)} windowed dims (ONNX MaxPool takes 1 to 3)"
    if any(p < 0 for pad in padding for p in pad):
        return "select_and_scatter with negative padding"
    return None


@export_rule("stablehlo.select_and_scatter", check=_check)
def export_select_and_scatter(ctx: ExportContext) -> list[onnx_ir.Value]:
    operand, source = ctx.input(0), ctx.input(1)
    init = ctx.constant_operand(2)
    dtype = ctx.operand_dtype(0)
    window, strides, padding = _window(ctx.op)
    rank = len(window)
    spatial = [d for d in range(rank) if window[d] != 1 or strides[d] != 1 or padding[d] != (0, 0)]
    others = [d for d in range(rank) if d not in spatial]
    perm = others + spatial
    inverse = [perm.index(d) for d in range(rank)]
    if _select_direction(ctx.op) == "LE":
        operand = ctx.emit("Neg", [operand])
    moved = ctx.emit("Transpose", [operand], {"perm": perm}) if perm != list(range(rank)) else operand
    moved_source = ctx.emit("Transpose", [source], {"perm": perm}) if perm != list(range(rank)) else source
    moved_shape = ctx.shape_of(moved)
    spatial_shape = ctx.emit("Slice", [moved_shape, ctx.ints([len(others)]), ctx.ints([rank])])
    pool_shape = ctx.emit("Concat", [ctx.ints([-1, 1]), spatial_shape], {"axis": 0})
    pooled_in = ctx.emit("Reshape", [moved, pool_shape])
    pads = [padding[d][0] for d in spatial] + [padding[d][1] for d in spatial]
    _, indices = ctx.emit_multi("MaxPool", [pooled_in], 2, {
        "kernel_shape": [window[d] for d in spatial], "strides": [strides[d] for d in spatial], "pads": pads})
    flat_indices = ctx.emit("Reshape", [indices, ctx.ints([-1])])
    flat_source = ctx.emit("Reshape", [moved_source, ctx.ints([-1])])
    size = ctx.emit("ReduceProd", [moved_shape, ctx.ints([0])], {"keepdims": 1})
    filled = ctx.emit("Expand", [ctx.const(np.asarray(init).reshape(1).astype(dtype.numpy())), size])
    scattered = ctx.emit("ScatterElements", [filled, flat_indices, flat_source], {"axis": 0, "reduction": "add"})
    result = ctx.emit("Reshape", [scattered, moved_shape])
    if perm != list(range(rank)):
        result = ctx.emit("Transpose", [result], {"perm": inverse})
    return [result]
