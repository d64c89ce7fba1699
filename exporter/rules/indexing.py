"""Indexing ops -> ONNX: ``gather``, ``dynamic_gather``, ``scatter``, ``dynamic_slice``,
``dynamic_update_slice``, ``real_dynamic_slice``, ``pad``, ``dynamic_pad``.

The semantics that differ between the two sides, and how each rule makes them exact:

* StableHLO clamps every gather / ``dynamic_slice`` / ``dynamic_update_slice`` start into
  ``[0, dim - slice_size]`` (spec "gather", "dynamic_slice", "dynamic_update_slice"); ONNX
  Gather/GatherND raise on an out-of-range index and wrap negatives. Every rule clamps its starts
  (``Clip``, or ``Max``/``Min`` against a per-component bound vector) before indexing.
* A StableHLO scatter window that does not fit in the operand is skipped (XLA's behaviour, which
  JAX's default ``.at[]`` mode relies on to drop out-of-range updates); ONNX ScatterND raises.
  The rule computes a per-window ``valid`` mask, clamps the indices, and for a reduction
  (add/mul/max/min) replaces invalid updates with the reduction's identity; for a plain
  replacement it pads the operand with a dump slot along one indexed dim, redirects invalid
  windows there, and slices the slot off after the scatter. Indices that are constants and all
  in range skip the mask.

Mappings (``A -> B``; spec sections "gather", "scatter", "dynamic_slice", "pad", ...):
  gather/dynamic_gather, one indexed dim, no batching dims (``x[ids]``, ``jnp.take``,
      embedding lookup) -> Clip -> Gather(axis) [-> Transpose to the offset_dims order];
      a slice of size s > 1 in the indexed dim gathers ``start + arange(s)``
  gather, one collapsed indexed dim whose other dims are all operand batching dims
      (``jnp.take_along_axis``, vmap of a take) -> Clip -> GatherElements(axis)
  gather, a single start vector (no batch dims) -> Clip -> Slice [-> Squeeze collapsed dims]
  gather, general (several indexed dims, batching dims, windows > 1) -> Clip -> GatherND with
      ``batch_dims`` (operand transposed to batching, indexed, other dims; indices transposed so
      their batching dims lead) on the grid ``start + arange(window)`` -> Transpose
      Indexed dims whose slice is the whole dim (start clamps to 0) are dropped from the index;
      unindexed dims with a partial slice are sliced first. Slice sizes of indexed dims must be
      static (``dynamic_gather``: constant, the result's static dim, or a dim of the operand read
      by ``get_dimension_size``).
  scatter (update_computation returning the update / add / multiply / maximum / minimum, per
      operand of a variadic scatter; returning the operand keeps it)
      -> ScatterND(reduction none/add/mul/max/min) over the operand transposed to
      (batching dims, indexed dims, partial window dims, full window dims), batching dims by
      iota indices, windows by an index grid; or, for one inserted indexed dim that is not the
      leading one (``x.at[:, ids].add``, put_along_axis), ScatterElements(axis) with the indices
      expanded to the updates' shape (no transpose of the operand)
  dynamic_slice -> Clip(starts) -> Slice(starts, starts + sizes, axes)
  dynamic_update_slice -> Clip(starts) -> ScatterND over the update's index grid on the dims up
      to the last one the update does not cover (the KV-cache write: one copy of the buffer,
      which onnxruntime may do in place, and a small write)
  real_dynamic_slice -> Slice(start, limit, axes, strides)
  pad (negative low/high crop, interior > 0) -> interior: Unsqueeze after the dim, Pad the new
      axis, Reshape to merge, Slice off the tail; positive edges: Pad(constant); negative
      edges: Slice
  dynamic_pad -> the same, pads from operands (interior padding must be constant)

Not supported: scatter update computations other than the above (the pre-scan lists them),
``dynamic_gather`` with a run-time slice size on an indexed dim, ``dynamic_pad`` with run-time
interior padding.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Union

import numpy as np
import onnx_ir
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import stablehlo

from onnx_stablehlo.exporter.context import ExportContext, read_ints
from onnx_stablehlo.exporter.registry import export_rule

DT = onnx_ir.DataType
_INT64_MAX = np.iinfo(np.int64).max
_FULL = "full"
"""A slice size equal to the whole operand dim (static or symbolic)."""

Dim = Union[int, onnx_ir.Value]
"""A size: a Python int, or a 1-D ``[1]`` int64 ONNX value computed at run time."""


# Small helpers -----------------------------------------------------------------------------


def _i64(ctx: ExportContext, value: onnx_ir.Value, dtype: onnx_ir.DataType) -> onnx_ir.Value:
    return value if dtype == DT.INT64 else ctx.cast(value, DT.INT64)


def _dim(ctx: ExportContext, x: onnx_ir.Value, shape: Sequence[int | None], d: int) -> Dim:
    """Dim ``d`` of ``x``: an int when static, else ``Shape(start=d, end=d+1)``."""
    if shape[d] is not None:
        return int(shape[d])  # type: ignore[arg-type]
    return ctx.emit("Shape", [x], {"start": d, "end": d + 1})


def _pad(ctx: ExportContext, x: onnx_ir.Value, rank: int, axes: Sequence[int], begins: Sequence[Dim],
         ends: Sequence[Dim], value: onnx_ir.Value | None = None) -> onnx_ir.Value:
    """``Pad`` of ``x`` (rank ``rank``) on ``axes`` with full-rank pads and no ``axes`` input:
    onnxruntime's transpose optimizer mis-permutes a Pad's ``axes`` input (a Gather out of range
    at session creation), so every Pad here spells all ``2 * rank`` pads."""
    low: list[Dim] = [0] * rank
    high: list[Dim] = [0] * rank
    for axis, b, e in zip(axes, begins, ends):
        low[axis], high[axis] = b, e
    return ctx.emit("Pad", [x, _vec(ctx, low + high), value])


def _vec(ctx: ExportContext, parts: Sequence[Dim]) -> onnx_ir.Value:
    """A 1-D int64 vector from ints and ``[1]`` values (an initializer when all are ints)."""
    if all(isinstance(p, (int, np.integer)) for p in parts):
        return ctx.ints([int(p) for p in parts])  # type: ignore[arg-type]
    pieces: list[onnx_ir.Value] = []
    run: list[int] = []
    for p in parts:
        if isinstance(p, (int, np.integer)):
            run.append(int(p))
            continue
        if run:
            pieces.append(ctx.ints(run))
            run = []
        pieces.append(p)
    if run:
        pieces.append(ctx.ints(run))
    return pieces[0] if len(pieces) == 1 else ctx.emit("Concat", pieces, {"axis": 0})


def _scalar(ctx: ExportContext, part: Dim) -> onnx_ir.Value:
    """A 0-d int64 value."""
    if isinstance(part, (int, np.integer)):
        return ctx.const(np.array(int(part), np.int64))
    return ctx.emit("Reshape", [part, ctx.ints([])])


def _sub(ctx: ExportContext, a: Dim, b: Dim) -> Dim:
    if isinstance(a, int) and isinstance(b, int):
        return a - b
    return ctx.emit("Sub", [_vec(ctx, [a]), _vec(ctx, [b])])


def _arange(ctx: ExportContext, n: Dim) -> onnx_ir.Value:
    """1-D ``arange(n)`` int64 (a run-time length by an exclusive CumSum of ones)."""
    if isinstance(n, int):
        return ctx.const(np.arange(n, dtype=np.int64))
    ones = ctx.emit("ConstantOfShape", [n], {"value": onnx_ir.Tensor(np.array([1], dtype=np.int64))})
    return ctx.emit("CumSum", [ones, ctx.const(np.array(0, np.int64))], {"exclusive": 1})


def _clamp(ctx: ExportContext, value: onnx_ir.Value, his: Sequence[Dim]) -> onnx_ir.Value:
    """``value`` (int64, last axis one component per bound) clamped into ``[0, his[k]]``."""
    zero = ctx.const(np.array(0, np.int64))
    if len(his) == 1:
        return ctx.emit("Clip", [value, zero, _scalar(ctx, his[0])])
    return ctx.emit("Min", [ctx.emit("Max", [value, zero]), _vec(ctx, his)])


def _grid(ctx: ExportContext, sizes: Sequence[Dim], comp_axes: Sequence[int | None]) -> onnx_ir.Value:
    """The offsets ``[*sizes, C]``: component ``c`` is ``arange`` along grid axis
    ``comp_axes[c]``, or 0 when ``None``."""
    g = len(sizes)
    if all(isinstance(s, int) for s in sizes):
        out = np.zeros(list(sizes) + [len(comp_axes)], np.int64)  # type: ignore[operator]
        for c, a in enumerate(comp_axes):
            if a is not None:
                view = [1] * g
                view[a] = sizes[a]  # type: ignore[call-overload]
                out[..., c] = np.arange(sizes[a]).reshape(view)  # type: ignore[call-overload]
        return ctx.const(out)
    target = _vec(ctx, list(sizes) + [1])
    parts = []
    for a in comp_axes:
        if a is None:
            parts.append(ctx.emit("Expand", [ctx.const(np.zeros([1] * (g + 1), np.int64)), target]))
            continue
        view = [1] * (g + 1)
        view[a] = -1
        ramp = ctx.emit("Reshape", [_arange(ctx, sizes[a]), ctx.ints(view)])
        parts.append(ctx.emit("Expand", [ramp, target]))
    return parts[0] if len(parts) == 1 else ctx.emit("Concat", parts, {"axis": -1})


def _transpose(ctx: ExportContext, x: onnx_ir.Value, perm: Sequence[int]) -> onnx_ir.Value:
    perm = list(perm)
    return x if perm == list(range(len(perm))) else ctx.emit("Transpose", [x], {"perm": perm})


def _index_vector_last(ctx: ExportContext, idx: onnx_ir.Value, idx_shape: Sequence[int | None], ivd: int,
                       dtype: onnx_ir.DataType) -> tuple[onnx_ir.Value, list[int], list[int | None]]:
    """Indices as int64 ``[batch..., K]`` with the index vector last; also the original dims of
    the batch axes and their static sizes."""
    rank = len(idx_shape)
    idx = _i64(ctx, idx, dtype)
    batch = [d for d in range(rank) if d != ivd]
    if ivd == rank:
        idx = ctx.emit("Unsqueeze", [idx, ctx.ints([rank])])
    else:
        idx = _transpose(ctx, idx, batch + [ivd])
    return idx, batch, [idx_shape[d] for d in batch]


# Gather ------------------------------------------------------------------------------------


def _trace_ints(value: onnx_ir.Value, depth: int = 0) -> list[Any] | None:
    """The elements of a 1-D int ONNX value as ints or ``("dim", source, axis)`` (a dim read by
    ``Shape``), following Concat/Cast/Reshape; ``None`` when not traceable."""
    if depth > 32:
        return None
    if value.const_value is not None:
        return [int(v) for v in np.asarray(value.const_value.numpy()).reshape(-1)]
    node = value.producer()
    if node is None:
        return None
    if node.op_type in ("Cast", "Identity", "Reshape", "Squeeze", "Unsqueeze"):
        return _trace_ints(node.inputs[0], depth + 1)  # type: ignore[arg-type]
    if node.op_type == "Concat":
        out: list[Any] = []
        for part in node.inputs:
            items = _trace_ints(part, depth + 1)  # type: ignore[arg-type]
            if items is None:
                return None
            out += items
        return out
    if node.op_type == "Shape":
        source = node.inputs[0]
        rank = len(source.shape) if source is not None and source.shape is not None else None
        start_attr, end_attr = node.attributes.get("start"), node.attributes.get("end")
        start = start_attr.value if start_attr is not None else 0
        end = end_attr.value if end_attr is not None else rank
        if end is None or (start < 0 or end < 0) and rank is None:
            return None
        if start < 0:
            start += rank  # type: ignore[operator]
        if end < 0:
            end += rank  # type: ignore[operator]
        return [("dim", source, k) for k in range(start, end)]
    return None


def _gather_sizes(ctx: ExportContext, dn: Any) -> list[Any]:
    """Per operand dim: an int, ``_FULL``, or a ``[1]`` run-time value."""
    xshape = ctx.operand_shape(0)
    rank = len(xshape)
    if ctx.op.name == "stablehlo.gather":
        raw: list[Any] = ctx.i64s("slice_sizes")
    else:
        const = ctx.constant_operand(2)
        if const is not None:
            raw = [int(v) for v in const.reshape(-1)]
        else:
            raw = _trace_ints(ctx.input(2)) or [None] * rank
            # A non-collapsed, non-batching dim's size is the result's dim when static.
            unsliced = set(dn.collapsed_slice_dims) | set(dn.operand_batching_dims)
            offset_ops = [d for d in range(rank) if d not in unsliced]
            out_shape = ctx.result_shape()
            for j, d in enumerate(offset_ops):
                if not isinstance(raw[d], int) and out_shape[list(dn.offset_dims)[j]] is not None:
                    raw[d] = out_shape[list(dn.offset_dims)[j]]
            for d in range(rank):
                if d in dn.collapsed_slice_dims or d in dn.operand_batching_dims:
                    raw[d] = 1
    sizes: list[Any] = []
    sizes_value = None
    for d, s in enumerate(raw):
        if isinstance(s, int):
            sizes.append(_FULL if xshape[d] is not None and s == xshape[d] else s)
        elif isinstance(s, tuple) and s[1] is ctx.input(0) and s[2] == d:
            sizes.append(_FULL)
        else:
            if sizes_value is None:
                sizes_value = _i64(ctx, ctx.input(2), ctx.operand_dtype(2))
            sizes.append(ctx.emit("Gather", [sizes_value, ctx.ints([d])], {"axis": 0}))
    return sizes


@export_rule("stablehlo.gather", "stablehlo.dynamic_gather")
def export_gather(ctx: ExportContext) -> list[onnx_ir.Value]:
    dn = stablehlo.GatherDimensionNumbers(ctx.attr("dimension_numbers"))
    offset_dims = list(dn.offset_dims)
    collapsed = list(dn.collapsed_slice_dims)
    obd = list(dn.operand_batching_dims)
    sibd = list(dn.start_indices_batching_dims)
    sim = list(dn.start_index_map)
    sizes = _gather_sizes(ctx, dn)
    x, xshape = ctx.input(0), ctx.operand_shape(0)
    rank = len(xshape)
    idx, ib, ib_shape = _index_vector_last(ctx, ctx.input(1), ctx.operand_shape(1), dn.index_vector_dim,
                                           ctx.operand_dtype(1))
    nib, nb = len(ib), len(obd)

    def size(d: int) -> Dim:
        s = sizes[d]
        if d in collapsed:
            return 1
        if s == _FULL:
            return _dim(ctx, x, xshape, d)
        return s

    # An indexed dim sliced whole has start 0 after clamping: it is not indexed at all.
    kept = [k for k in range(len(sim)) if not (sizes[sim[k]] == _FULL and sim[k] not in collapsed)]
    comps = [sim[k] for k in kept]
    for d in comps:
        if not isinstance(size(d), int):
            raise ctx.error(f"the slice size of indexed dim {d} is only known at run time")
    if len(kept) < len(sim) and kept:
        idx = ctx.emit("Gather", [idx, ctx.ints(kept)], {"axis": -1})
    cur = list(range(rank))
    pre = [d for d in range(rank) if d not in comps and d not in obd and sizes[d] != _FULL]
    if pre:
        x = ctx.emit("Slice", [x, ctx.ints([0] * len(pre)), _vec(ctx, [size(d) for d in pre]), ctx.ints(pre)])
        dropped = [d for d in pre if d in collapsed]
        if dropped:
            x = ctx.emit("Squeeze", [x, ctx.ints(dropped)])
            cur = [d for d in cur if d not in dropped]
    if comps:
        idx = _clamp(ctx, idx, [_sub(ctx, _dim(ctx, ctx.input(0), xshape, d), size(d)) for d in comps])
    grid_comps = [c for c, d in enumerate(comps) if d not in collapsed]
    sib_pos = [ib.index(s) for s in sibd]

    out_labels: list[tuple[str, int]]
    if not comps and nib:
        raise ctx.error("a gather whose every indexed dim is sliced whole, with batch dims")
    if nib == 0:
        # One start vector: a dynamic slice.
        if comps:
            ends = ctx.emit("Add", [idx, ctx.ints([size(d) for d in comps])])  # type: ignore[misc]
            x = ctx.emit("Slice", [x, idx, ends, ctx.ints([cur.index(d) for d in comps])])
        squeeze = [cur.index(d) for d in comps if d in collapsed]
        if squeeze:
            x = ctx.emit("Squeeze", [x, ctx.ints(squeeze)])
        elif not comps and not pre:
            x = ctx.emit("Identity", [x])
        out_labels = [("op", d) for d in cur if not (d in comps and d in collapsed)]
    elif nb == 0 and len(comps) == 1:
        d = comps[0]
        p = cur.index(d)
        if d in collapsed:
            j = ctx.emit("Squeeze", [idx, ctx.ints([-1])])
            labels = [("ib", b) for b in range(nib)]
        else:
            j = ctx.emit("Add", [idx, _arange(ctx, size(d))])
            labels = [("ib", b) for b in range(nib)] + [("op", d)]
        x = ctx.emit("Gather", [x, j], {"axis": p})
        out_labels = [("op", e) for e in cur[:p]] + labels + [("op", e) for e in cur[p + 1:]]
    elif (nb and len(comps) == 1 and comps[0] in collapsed and nib == nb + 1
          and set(cur) == set(obd) | {comps[0]}):
        # take_along_axis: every other operand dim is a batching dim.
        d = comps[0]
        free = [b for b in range(nib) if b not in sib_pos][0]
        pos_of = {obd[i]: sib_pos[i] for i in range(nb)}
        pos_of[d] = free
        order = [pos_of[e] for e in cur]
        j = _transpose(ctx, ctx.emit("Squeeze", [idx, ctx.ints([-1])]), order)
        x = ctx.emit("GatherElements", [x, j], {"axis": cur.index(d)})
        out_labels = [("ib", pos_of[e]) for e in cur]
    else:
        rest = [e for e in cur if e not in obd and e not in comps]
        x = _transpose(ctx, x, [cur.index(e) for e in obd + comps + rest])
        other = [b for b in range(nib) if b not in sib_pos]
        iperm = sib_pos + other
        idx = _transpose(ctx, idx, iperm + [nib])
        if grid_comps:
            g = len(grid_comps)
            idx = ctx.emit("Unsqueeze", [idx, ctx.ints(list(range(nib, nib + g)))])
            axes = [grid_comps.index(c) if c in grid_comps else None for c in range(len(comps))]
            idx = ctx.emit("Add", [idx, _grid(ctx, [size(comps[c]) for c in grid_comps], axes)])
        x = ctx.emit("GatherND", [x, idx], {"batch_dims": nb})
        out_labels = ([("ib", b) for b in iperm] + [("op", comps[c]) for c in grid_comps]
                      + [("op", e) for e in rest])

    offset_ops = [d for d in range(rank) if d not in collapsed and d not in obd]
    result_labels = []
    b = 0
    for r in range(len(ctx.result_shape())):
        if r in offset_dims:
            result_labels.append(("op", offset_ops[offset_dims.index(r)]))
        else:
            result_labels.append(("ib", b))
            b += 1
    return [_transpose(ctx, x, [out_labels.index(label) for label in result_labels])]


# Scatter -----------------------------------------------------------------------------------

_REDUCTIONS = {"stablehlo.add": "add", "stablehlo.multiply": "mul", "stablehlo.maximum": "max",
               "stablehlo.minimum": "min"}


def _scatter_kinds(op: ir.Operation) -> list[str] | str:
    """Per scatter operand: ``none`` (replace), ``add``/``mul``/``max``/``min`` or ``keep``
    (the body returns the operand); a reason string when the body is none of these."""
    n = len(op.results)
    block = op.regions[0].blocks[0]
    args = list(block.arguments)
    ops = [o.operation for o in block.operations]
    ret = ops[-1]
    kinds = []
    for i in range(n):
        value = ret.operands[i]
        if value == args[n + i]:
            kinds.append("none")
            continue
        if value == args[i]:
            kinds.append("keep")
            continue
        owner = value.owner
        owner = owner.operation if isinstance(owner, ir.OpView) else owner
        if (isinstance(owner, ir.Operation) and owner.name in _REDUCTIONS and len(owner.operands) == 2
                and {owner.operands[0].get_name(), owner.operands[1].get_name()}
                == {args[i].get_name(), args[n + i].get_name()}
                and str(ir.RankedTensorType(args[i].type).element_type) != "i1"):
            kinds.append(_REDUCTIONS[owner.name])
            continue
        body = "; ".join(str(o).split("loc(")[0].strip() for o in ops)
        return f"update_computation is not replace/add/multiply/maximum/minimum of its arguments: {body}"
    return kinds


def _scatter_check(op: Any) -> str | None:
    kinds = _scatter_kinds(op.operation if isinstance(op, ir.OpView) else op)
    return kinds if isinstance(kinds, str) else None


def _constant(ctx: ExportContext, value: ir.Value, depth: int = 0) -> np.ndarray | None:
    """``value`` as numpy when it is a constant, looking through ``broadcast_in_dim``,
    ``reshape`` and ``convert`` (how JAX spells the indices of ``x.at[2]``)."""
    found = ctx.converter.constant_value(value)
    if found is not None or depth > 8:
        return found
    owner = value.owner
    owner = owner.operation if isinstance(owner, ir.OpView) else owner
    if not isinstance(owner, ir.Operation) or owner.name not in (
            "stablehlo.broadcast_in_dim", "stablehlo.reshape", "stablehlo.convert"):
        return None
    inner = _constant(ctx, owner.operands[0], depth + 1)
    if inner is None:
        return None
    shape = tuple(ir.RankedTensorType(value.type).shape)
    if owner.name == "stablehlo.broadcast_in_dim":
        dims = read_ints(owner.attributes["broadcast_dimensions"])
        view = [1] * len(shape)
        for i, d in enumerate(dims):
            view[d] = inner.shape[i]
        return np.broadcast_to(inner.reshape(view), shape)
    return inner.reshape(shape)


def _identity(kind: str, dtype: np.dtype) -> np.ndarray:
    if kind == "add":
        return np.array(0, dtype)
    if kind == "mul":
        return np.array(1, dtype)
    floating = np.dtype(dtype).kind == "f" or str(dtype) == "bfloat16"
    if kind == "max":
        return np.array(-np.inf, dtype) if floating else np.array(np.iinfo(dtype).min, dtype)
    return np.array(np.inf, dtype) if floating else np.array(np.iinfo(dtype).max, dtype)


@export_rule("stablehlo.scatter", check=_scatter_check)
def export_scatter(ctx: ExportContext) -> list[onnx_ir.Value]:
    kinds = _scatter_kinds(ctx.op)
    if isinstance(kinds, str):
        raise ctx.error(kinds)
    n = len(kinds)
    dn = stablehlo.ScatterDimensionNumbers(ctx.attr("scatter_dimension_numbers"))
    uwd, iwd = list(dn.update_window_dims), list(dn.inserted_window_dims)
    ibd, sibd = list(dn.input_batching_dims), list(dn.scatter_indices_batching_dims)
    sdod = list(dn.scattered_dims_to_operand_dims)
    xshape, ishape, ushape = ctx.operand_shape(0), ctx.operand_shape(n), ctx.operand_shape(n + 1)
    x0, u0 = ctx.input(0), ctx.input(n + 1)
    rank, urank = len(xshape), len(ushape)
    usd = [d for d in range(urank) if d not in uwd]
    win_ops = [d for d in range(rank) if d not in iwd and d not in ibd]
    uaxis = {d: uwd[j] for j, d in enumerate(win_ops)}

    def window(d: int) -> Dim:
        return _dim(ctx, u0, ushape, uaxis[d]) if d in uaxis else 1

    def full(d: int) -> bool:
        return d in uaxis and xshape[d] is not None and ushape[uaxis[d]] == xshape[d]

    idx, ib, ib_shape = _index_vector_last(ctx, ctx.input(n), ishape, dn.index_vector_dim, ctx.operand_dtype(n))
    nib = len(ib)
    sib_pos = [ib.index(s) for s in sibd]
    his = [_sub(ctx, _dim(ctx, x0, xshape, d), window(d)) for d in sdod]
    # Statically valid indices (constants in range) need no mask.
    known_valid = False
    const = _constant(ctx, ctx.op.operands[n])
    if const is not None and all(isinstance(h, int) for h in his):
        arr = np.moveaxis(const.reshape(ishape + (1,) if dn.index_vector_dim == len(ishape) else ishape),
                          dn.index_vector_dim, -1).astype(np.int64)
        known_valid = bool(np.all((arr >= 0) & (arr <= np.asarray(his, np.int64))))
    kinds_used = {k for k in kinds if k != "keep"}

    P = [ibd[j] for j in range(len(ibd))] + sdod + [d for d in win_ops if d not in sdod and not full(d)]
    F = [d for d in win_ops if d not in sdod and full(d)]
    G = [d for d in P if d in uaxis]
    free = [b for b in range(nib) if b not in sib_pos]
    use_elements = (len(sdod) == 1 and sdod[0] in iwd and len(free) <= 1
                    and not (P + F == list(range(rank)) and not G and not ibd))

    results: list[onnx_ir.Value] = []
    if use_elements:
        d = sdod[0]
        # The updates and the indices in operand-dim order.
        uorder: list[int] = []
        iorder: list[int] = []
        unsq_u = []
        for e in range(rank):
            if e in ibd:
                b = sib_pos[ibd.index(e)]
                uorder.append(usd[b])
                iorder.append(b)
            elif e == d:
                if free:
                    uorder.append(usd[free[0]])
                    iorder.append(free[0])
                else:
                    uorder.append(urank)
                    unsq_u = [urank]
            else:
                uorder.append(uaxis[e])
        j = _transpose(ctx, ctx.emit("Squeeze", [idx, ctx.ints([-1])]), iorder) if iorder else \
            ctx.emit("Reshape", [idx, ctx.ints([])])
        missing = [e for e in range(rank) if not (e in ibd or (e == d and free))]
        if missing:
            j = ctx.emit("Unsqueeze", [j, ctx.ints(missing)])
        dim_d = _dim(ctx, x0, xshape, d)
        prepared = []
        for i in range(n):
            u = ctx.input(n + 1 + i)
            if unsq_u:
                u = ctx.emit("Unsqueeze", [u, ctx.ints(unsq_u)])
            prepared.append(_transpose(ctx, u, uorder))
        jj = ctx.emit("Expand", [j, ctx.shape_of(prepared[0])])
        jc = jj if known_valid else _clamp(ctx, jj, [_sub(ctx, dim_d, 1)])
        valid = None if known_valid else ctx.emit("Equal", [jc, jj])
        for i, kind in enumerate(kinds):
            x, u = ctx.input(i), prepared[i]
            if kind == "keep":
                results.append(ctx.emit("Identity", [x]))
                continue
            if valid is None:
                results.append(ctx.emit("ScatterElements", [x, jc, u], {"axis": d, "reduction": kind}))
            elif kind != "none":
                u = ctx.emit("Where", [valid, u, ctx.const(_identity(kind, ctx.result_numpy_dtype(i)))])
                results.append(ctx.emit("ScatterElements", [x, jc, u], {"axis": d, "reduction": kind}))
            else:
                jn = ctx.emit("Where", [valid, jc, _scalar(ctx, dim_d)])
                padded = _pad(ctx, x, len(ctx.operand_shape(i)), [d], [0], [1])
                y = ctx.emit("ScatterElements", [padded, jn, u], {"axis": d})
                results.append(ctx.emit("Slice", [y, ctx.ints([0]), _vec(ctx, [dim_d]), ctx.ints([d])]))
        return results

    # General ScatterND over the operand transposed to P + F.
    clamped = idx if known_valid or not sdod else _clamp(ctx, idx, his)
    valid = None
    if not known_valid and sdod:
        eq = ctx.emit("Equal", [clamped, idx])
        if len(sdod) == 1:
            valid = ctx.emit("Squeeze", [eq, ctx.ints([-1])])
        else:
            low = ctx.emit("ReduceMin", [ctx.cast(eq, DT.INT32), ctx.ints([-1])], {"keepdims": 0})
            valid = ctx.cast(low, DT.BOOL)
    ib_like = None

    def like() -> onnx_ir.Value:  # the shape [IB..., 1]
        nonlocal ib_like
        if ib_like is None:
            ib_like = _vec(ctx, [_dim(ctx, idx, list(ib_shape) + [None], b) for b in range(nib)] + [1])
        return ib_like

    def components(redirect: bool) -> onnx_ir.Value:
        parts: list[onnx_ir.Value] = []
        for e in ([] if list(P) == list(sdod) and not redirect else P):
            if e in ibd:
                b = sib_pos[ibd.index(e)]
                view = [1] * (nib + 1)
                view[b] = -1
                ramp = ctx.emit("Reshape", [_arange(ctx, _dim(ctx, idx, list(ib_shape), b)), ctx.ints(view)])
                parts.append(ctx.emit("Expand", [ramp, like()]))
            elif e in sdod:
                k = sdod.index(e)
                comp = ctx.emit("Slice", [clamped, ctx.ints([k]), ctx.ints([k + 1]), ctx.ints([-1])]) \
                    if len(sdod) > 1 else clamped
                if redirect and k == 0:
                    vmask = ctx.emit("Unsqueeze", [valid, ctx.ints([-1])])
                    comp = ctx.emit("Where", [vmask, comp, _vec(ctx, [_dim(ctx, x0, xshape, e)])])
                parts.append(comp)
            else:
                parts.append(ctx.emit("Expand", [ctx.const(np.zeros([1] * (nib + 1), np.int64)), like()]))
        if not parts:
            starts = clamped
        else:
            starts = parts[0] if len(parts) == 1 else ctx.emit("Concat", parts, {"axis": -1})
        if G:
            starts = ctx.emit("Unsqueeze", [starts, ctx.ints(list(range(nib, nib + len(G))))])
            axes = [G.index(e) if e in G else None for e in P]
            starts = ctx.emit("Add", [starts, _grid(ctx, [window(e) for e in G], axes)])
        return starts

    xperm = P + F
    inverse = [xperm.index(a) for a in range(rank)]
    uperm = usd + [uaxis[e] for e in G] + [uaxis[e] for e in F]
    plain = components(False) if kinds_used - {"none"} or valid is None else None
    redirected = components(True) if "none" in kinds_used and valid is not None else None
    for i, kind in enumerate(kinds):
        x = ctx.input(i)
        if kind == "keep":
            results.append(ctx.emit("Identity", [x]))
            continue
        xt = _transpose(ctx, x, xperm)
        u = _transpose(ctx, ctx.input(n + 1 + i), uperm)
        if valid is None:
            y = ctx.emit("ScatterND", [xt, plain, u], {"reduction": kind})  # type: ignore[list-item]
        elif kind != "none":
            trailing = list(range(nib, nib + len(G) + len(F)))
            vmask = ctx.emit("Unsqueeze", [valid, ctx.ints(trailing)]) if trailing else valid
            u = ctx.emit("Where", [vmask, u, ctx.const(_identity(kind, ctx.result_numpy_dtype(i)))])
            y = ctx.emit("ScatterND", [xt, plain, u], {"reduction": kind})  # type: ignore[list-item]
        else:
            p0 = P.index(sdod[0])
            padded = _pad(ctx, xt, len(xperm), [p0], [0], [window(sdod[0])])
            y = ctx.emit("ScatterND", [padded, redirected, u])  # type: ignore[list-item]
            y = ctx.emit("Slice", [y, ctx.ints([0]), _vec(ctx, [_dim(ctx, x0, xshape, sdod[0])]), ctx.ints([p0])])
        results.append(_transpose(ctx, y, inverse))
    return results


# Dynamic slices ----------------------------------------------------------------------------


def _clamped_start(ctx: ExportContext, operand: int, hi: Dim) -> onnx_ir.Value:
    """Scalar start operand ``operand`` as int64 ``[1]``, clamped into ``[0, hi]``."""
    start = _i64(ctx, ctx.input(operand), ctx.operand_dtype(operand))
    start = ctx.emit("Clip", [start, ctx.const(np.array(0, np.int64)), _scalar(ctx, hi)])
    return ctx.emit("Reshape", [start, ctx.ints([1])])


@export_rule("stablehlo.dynamic_slice")
def export_dynamic_slice(ctx: ExportContext) -> list[onnx_ir.Value]:
    x, xshape = ctx.input(0), ctx.operand_shape(0)
    sizes = ctx.i64s("slice_sizes")
    axes = [d for d in range(len(xshape)) if not (xshape[d] is not None and sizes[d] == xshape[d])]
    if not axes:
        return [ctx.emit("Identity", [x])]
    starts = [_clamped_start(ctx, 1 + d, _sub(ctx, _dim(ctx, x, xshape, d), sizes[d])) for d in axes]
    start = starts[0] if len(starts) == 1 else ctx.emit("Concat", starts, {"axis": 0})
    end = ctx.emit("Add", [start, ctx.ints([sizes[d] for d in axes])])
    return [ctx.emit("Slice", [x, start, end, ctx.ints(axes)])]


@export_rule("stablehlo.dynamic_update_slice")
def export_dynamic_update_slice(ctx: ExportContext) -> list[onnx_ir.Value]:
    x, xshape = ctx.input(0), ctx.operand_shape(0)
    u, ushape = ctx.input(1), ctx.operand_shape(1)
    rank = len(xshape)
    covered = [xshape[d] is not None and ushape[d] == xshape[d] for d in range(rank)]
    if all(covered):
        return [ctx.emit("Identity", [u])]
    last = max(d for d in range(rank) if not covered[d])
    starts: list[Any] = []
    for d in range(last + 1):
        if covered[d]:
            starts.append(0)
        else:
            starts.append(_clamped_start(ctx, 2 + d, _sub(ctx, _dim(ctx, x, xshape, d), _dim(ctx, u, ushape, d))))
    grid = _grid(ctx, [_dim(ctx, u, ushape, d) for d in range(last + 1)], list(range(last + 1)))
    idx = ctx.emit("Add", [grid, _vec(ctx, starts)])
    return [ctx.emit("ScatterND", [x, idx, u])]


@export_rule("stablehlo.real_dynamic_slice")
def export_real_dynamic_slice(ctx: ExportContext) -> list[onnx_ir.Value]:
    rank = len(ctx.operand_shape(0))
    start = _i64(ctx, ctx.input(1), ctx.operand_dtype(1))
    limit = _i64(ctx, ctx.input(2), ctx.operand_dtype(2))
    strides = ctx.constant_operand(3)
    step = None if strides is not None and np.all(strides == 1) else _i64(ctx, ctx.input(3), ctx.operand_dtype(3))
    return [ctx.emit("Slice", [ctx.input(0), start, limit, ctx.ints(list(range(rank))), step])]


# Pad ---------------------------------------------------------------------------------------


def _interior(ctx: ExportContext, x: onnx_ir.Value, shape: list[int | None], value: onnx_ir.Value,
              interior: Sequence[int]) -> tuple[onnx_ir.Value, list[int | None]]:
    """``interior[d]`` copies of ``value`` between the elements of each dim."""
    rank = len(shape)
    for d, step in enumerate(interior):
        if step == 0:
            continue
        x = ctx.emit("Unsqueeze", [x, ctx.ints([d + 1])])
        x = _pad(ctx, x, rank + 1, [d + 1], [0], [step], value)
        wide = [_dim(ctx, x, shape[:d + 1] + [step + 1] + shape[d + 1:], a) for a in range(rank + 1)]
        merged = wide[:d] + [-1] + wide[d + 2:]
        x = ctx.emit("Reshape", [x, _vec(ctx, merged)])
        x = ctx.emit("Slice", [x, ctx.ints([0]), ctx.ints([-step]), ctx.ints([d])])
        n = shape[d]
        shape = shape[:d] + [None if n is None else max(0, (n - 1) * (step + 1) + 1)] + shape[d + 1:]
    return x, shape


def _edges(ctx: ExportContext, x: onnx_ir.Value, value: onnx_ir.Value, low: Sequence[int],
           high: Sequence[int]) -> onnx_ir.Value:
    """Static edge padding: positive parts by Pad, then negative parts (crops) by Slice."""
    axes = [d for d in range(len(low)) if low[d] > 0 or high[d] > 0]
    if axes:
        x = _pad(ctx, x, len(low), axes, [max(low[d], 0) for d in axes], [max(high[d], 0) for d in axes], value)
    crop = [d for d in range(len(low)) if low[d] < 0 or high[d] < 0]
    if crop:
        starts = [-low[d] if low[d] < 0 else 0 for d in crop]
        ends = [high[d] if high[d] < 0 else _INT64_MAX for d in crop]
        x = ctx.emit("Slice", [x, ctx.ints(starts), ctx.ints(ends), ctx.ints(crop)])
    return x


@export_rule("stablehlo.pad")
def export_pad(ctx: ExportContext) -> list[onnx_ir.Value]:
    low, high = ctx.i64s("edge_padding_low"), ctx.i64s("edge_padding_high")
    interior = ctx.i64s("interior_padding")
    x, value = ctx.input(0), ctx.input(1)
    x, _ = _interior(ctx, x, list(ctx.operand_shape(0)), value, interior)
    x = _edges(ctx, x, value, low, high)
    return [x if x is not ctx.input(0) else ctx.emit("Identity", [x])]


@export_rule("stablehlo.dynamic_pad")
def export_dynamic_pad(ctx: ExportContext) -> list[onnx_ir.Value]:
    x, value = ctx.input(0), ctx.input(1)
    rank = len(ctx.operand_shape(0))
    low, high, interior = (ctx.constant_operand(i) for i in (2, 3, 4))
    if interior is None:
        raise ctx.error("dynamic_pad with run-time interior padding")
    x, _ = _interior(ctx, x, list(ctx.operand_shape(0)), value, [int(v) for v in interior.reshape(-1)])
    if low is not None and high is not None:
        x = _edges(ctx, x, value, [int(v) for v in low.reshape(-1)], [int(v) for v in high.reshape(-1)])
        return [x if x is not ctx.input(0) else ctx.emit("Identity", [x])]
    lo = _i64(ctx, ctx.input(2), ctx.operand_dtype(2))
    hi = _i64(ctx, ctx.input(3), ctx.operand_dtype(3))
    zero = ctx.const(np.array(0, np.int64))
    pads = ctx.emit("Concat", [ctx.emit("Max", [lo, zero]), ctx.emit("Max", [hi, zero])], {"axis": 0})
    x = ctx.emit("Pad", [x, pads, value])
    starts = ctx.emit("Neg", [ctx.emit("Min", [lo, zero])])
    ends = ctx.emit("Add", [ctx.shape_of(x), ctx.emit("Min", [hi, zero])])
    return [ctx.emit("Slice", [x, starts, ends, ctx.ints(list(range(rank)))])]
