"""Shape ops -> ONNX: ``broadcast_in_dim``, ``reshape``, ``transpose``, ``concatenate``,
``iota``, ``slice``, ``reverse``, ``get_dimension_size`` and the dynamic-shape forms
(``dynamic_broadcast_in_dim``, ``dynamic_reshape``, ``dynamic_iota``).

Symbolic dims: a static result becomes ONNX constants; a ``?`` dim is read at run time
(``Shape`` -> ``Gather``) or taken from the op's shape operand, so one ONNX file serves every
size. Spec: StableHLO spec, "broadcast_in_dim", "reshape", "dynamic_broadcast_in_dim", ...

Mappings:
  broadcast_in_dim(x, dims) -> Unsqueeze(x, missing axes) [Transpose when dims are unsorted]
      -> Expand(result shape); no Expand when the shape already matches
  reshape/dynamic_reshape -> Reshape(allowzero=1)
  transpose -> Transpose(perm); concatenate -> Concat(axis)
  iota (static) -> a constant; dynamic_iota -> Range + Unsqueeze + Expand
  slice -> Slice(starts, limits, axes, strides); reverse -> Slice with step -1
  get_dimension_size -> Shape(start=d, end=d+1) -> Reshape([]) -> Cast(i32)
"""

from __future__ import annotations

import numpy as np
import onnx_ir
from jaxlib.mlir import ir

from onnx_stablehlo.exporter.context import ExportContext
from onnx_stablehlo.exporter.registry import export_rule

DT = onnx_ir.DataType
_INT64_MAX = np.iinfo(np.int64).max


# Ops whose ONNX form broadcasts numpy-style: a broadcast_in_dim feeding only these, next to an
# operand of the full result type, needs no Expand (the Unsqueeze'd value broadcasts itself).
_IMPLICITLY_BROADCASTING = frozenset(
    "stablehlo." + name for name in """add subtract multiply divide maximum minimum power remainder and or xor
    compare select atan2""".split()
)


def consumers_broadcast(op: ir.Operation) -> bool:
    """Whether every use of ``op``'s result is an implicitly broadcasting ONNX op with another
    operand of the result's full type (so the broadcast can stay a rank-only Unsqueeze)."""
    result = op.results[0]
    uses = list(result.uses)
    if not uses:
        return False
    for use in uses:
        user = use.owner
        user = user.operation if isinstance(user, ir.OpView) else user
        if user.name not in _IMPLICITLY_BROADCASTING:
            return False
        if not any(other != result and other.type == result.type and not _is_broadcast(other)
                   for other in user.operands):
            return False
    return True


def _is_broadcast(value: ir.Value) -> bool:
    """Whether ``value`` comes from a broadcast, which may itself stay unexpanded: two of them
    side by side must not both count on the other for the full shape."""
    owner = value.owner
    owner = owner.operation if isinstance(owner, ir.OpView) else owner
    return isinstance(owner, ir.Operation) and owner.name in (
        "stablehlo.broadcast_in_dim", "stablehlo.dynamic_broadcast_in_dim", "stablehlo.broadcast")


def broadcast(ctx: ExportContext, x: onnx_ir.Value, in_shape: tuple, dims: list[int], out_shape: tuple,
              target: onnx_ir.Value | None) -> onnx_ir.Value:
    """``broadcast_in_dim`` of ``x`` (shape ``in_shape``) to ``out_shape`` (``target``: the
    run-time shape when ``out_shape`` has ``?`` dims). When every consumer broadcasts by itself
    (:func:`consumers_broadcast`) the result is only unsqueezed to the full rank."""
    rank = len(out_shape)
    source = x
    order = sorted(range(len(dims)), key=lambda i: dims[i])
    if order != list(range(len(dims))):
        x = ctx.emit("Transpose", [x], {"perm": order})
        in_shape = tuple(in_shape[i] for i in order)
        dims = [dims[i] for i in order]
    missing = [axis for axis in range(rank) if axis not in dims]
    if missing:
        x = ctx.emit("Unsqueeze", [x, ctx.ints(missing)])
    expanded_shape = [1] * rank
    for i, d in enumerate(dims):
        expanded_shape[d] = in_shape[i]
    full = tuple(expanded_shape) == tuple(out_shape) and None not in out_shape
    if full or consumers_broadcast(ctx.op):
        return x if x is not source else ctx.emit("Identity", [x])
    if target is None:
        target = ctx.ints(out_shape)  # type: ignore[arg-type]
    return ctx.emit("Expand", [x, target])


@export_rule("stablehlo.broadcast_in_dim")
def export_broadcast_in_dim(ctx: ExportContext) -> list[onnx_ir.Value]:
    out_shape = ctx.result_shape()
    dims = ctx.i64s("broadcast_dimensions")
    target = None
    if None in out_shape:
        # A ? result dim comes from the operand dim mapped to it (a static op cannot grow a ? dim).
        source = {d: i for i, d in enumerate(dims)}
        target = ctx.static_or_dynamic_shape(
            [1 if (d is None and source.get(axis) is None) else d for axis, d in enumerate(out_shape)],
            ctx.input(0), [source.get(axis, 0) for axis in range(len(out_shape))])
    return [broadcast(ctx, ctx.input(0), ctx.operand_shape(0), dims, out_shape, target)]


@export_rule("stablehlo.dynamic_broadcast_in_dim")
def export_dynamic_broadcast_in_dim(ctx: ExportContext) -> list[onnx_ir.Value]:
    dims = ctx.i64s("broadcast_dimensions")
    out_shape = ctx.result_shape()
    target = None if None not in out_shape else ctx.shape_value(1)
    return [broadcast(ctx, ctx.input(0), ctx.operand_shape(0), dims, out_shape, target)]


@export_rule("stablehlo.reshape")
def export_reshape(ctx: ExportContext) -> list[onnx_ir.Value]:
    out_shape = ctx.result_shape()
    if ctx.operand_shape(0) == out_shape and None not in out_shape:
        return [ctx.emit("Identity", [ctx.input(0)])]
    if None in out_shape:
        # A reshape with ? dims keeps one ? (the rest multiply out): -1 stands for it.
        unknown = out_shape.count(None)
        if unknown == 1:
            target = ctx.ints([-1 if d is None else d for d in out_shape])
            return [ctx.emit("Reshape", [ctx.input(0), target])]
        raise ctx.error("a static reshape with more than one ? dim in its result")
    return [ctx.emit("Reshape", [ctx.input(0), ctx.ints(out_shape)], {"allowzero": 1})]  # type: ignore[arg-type]


@export_rule("stablehlo.dynamic_reshape")
def export_dynamic_reshape(ctx: ExportContext) -> list[onnx_ir.Value]:
    return [ctx.emit("Reshape", [ctx.input(0), ctx.shape_value(1)], {"allowzero": 1})]


@export_rule("stablehlo.transpose")
def export_transpose(ctx: ExportContext) -> list[onnx_ir.Value]:
    perm = ctx.i64s("permutation")
    if perm == sorted(perm):
        return [ctx.emit("Identity", [ctx.input(0)])]
    return [ctx.emit("Transpose", [ctx.input(0)], {"perm": perm})]


@export_rule("stablehlo.concatenate")
def export_concatenate(ctx: ExportContext) -> list[onnx_ir.Value]:
    axis = ctx.int_attr("dimension")
    inputs = ctx.inputs()
    if len(inputs) == 1:
        return [ctx.emit("Identity", inputs)]
    return [ctx.emit("Concat", inputs, {"axis": axis})]


def _iota_array(shape: tuple[int, ...], axis: int, dtype: np.dtype) -> np.ndarray:
    ramp = np.arange(shape[axis]).astype(dtype)
    view = [1] * len(shape)
    view[axis] = shape[axis]
    return np.broadcast_to(ramp.reshape(view), shape).copy()


@export_rule("stablehlo.iota")
def export_iota(ctx: ExportContext) -> list[onnx_ir.Value]:
    shape = ctx.result_shape()
    return [ctx.const(_iota_array(shape, ctx.int_attr("iota_dimension"), ctx.result_numpy_dtype()))]  # type: ignore[arg-type]


@export_rule("stablehlo.dynamic_iota")
def export_dynamic_iota(ctx: ExportContext) -> list[onnx_ir.Value]:
    """Range(0, n) along ``iota_dimension``, unsqueezed and expanded to the run-time shape."""
    axis = ctx.int_attr("iota_dimension")
    out_shape = ctx.result_shape()
    dtype = ctx.result_dtype()
    shape = ctx.shape_value(0)
    if None not in out_shape:
        return [ctx.const(_iota_array(out_shape, axis, ctx.result_numpy_dtype()))]  # type: ignore[arg-type]
    size = ctx.emit("Squeeze", [ctx.emit("Slice", [shape, ctx.ints([axis]), ctx.ints([axis + 1])]), ctx.ints([0])])
    ramp = ctx.emit("Range", [ctx.const(np.array(0, np.int64)), size, ctx.const(np.array(1, np.int64))])
    others = [a for a in range(len(out_shape)) if a != axis]
    if others:
        ramp = ctx.emit("Unsqueeze", [ramp, ctx.ints(others)])
        ramp = ctx.emit("Expand", [ramp, shape])
    return [ctx.cast(ramp, dtype) if dtype != DT.INT64 else ramp]


@export_rule("stablehlo.slice")
def export_slice(ctx: ExportContext) -> list[onnx_ir.Value]:
    starts = ctx.i64s("start_indices")
    limits = ctx.i64s("limit_indices")
    strides = ctx.i64s("strides", [1] * len(starts))
    shape = ctx.operand_shape(0)
    axes = [a for a in range(len(starts)) if not (starts[a] == 0 and strides[a] == 1 and limits[a] == shape[a])]
    if not axes:
        return [ctx.emit("Identity", [ctx.input(0)])]
    return [ctx.emit("Slice", [ctx.input(0), ctx.ints([starts[a] for a in axes]), ctx.ints([limits[a] for a in axes]),
                               ctx.ints(axes), ctx.ints([strides[a] for a in axes])])]


@export_rule("stablehlo.reverse")
def export_reverse(ctx: ExportContext) -> list[onnx_ir.Value]:
    axes = ctx.i64s("dimensions")
    if not axes:
        return [ctx.emit("Identity", [ctx.input(0)])]
    n = len(axes)
    return [ctx.emit("Slice", [ctx.input(0), ctx.ints([-1] * n), ctx.ints([-_INT64_MAX] * n), ctx.ints(axes),
                               ctx.ints([-1] * n)])]


@export_rule("stablehlo.get_dimension_size")
def export_get_dimension_size(ctx: ExportContext) -> list[onnx_ir.Value]:
    axis = ctx.int_attr("dimension")
    size = ctx.operand_shape(0)[axis]
    dtype = ctx.result_dtype()
    if size is not None:
        return [ctx.const(np.array(size, dtype=dtype.numpy()))]
    dim = ctx.emit("Shape", [ctx.input(0)], {"start": axis, "end": axis + 1})
    scalar = ctx.emit("Reshape", [dim, ctx.ints([])])
    return [ctx.cast(scalar, dtype) if dtype != DT.INT64 else scalar]
