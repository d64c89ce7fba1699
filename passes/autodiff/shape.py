"""VJP rules of data-movement ops: broadcasts, reshapes, transposes, slices, pads, concatenation,
gather/scatter, reverse, sort, and the dynamic forms of these (with ``?`` dims: see below).

All but ``sort`` are linear in their float operand and get transpose rules (JAX's
``jax/_src/lax/lax.py`` and ``slicing.py``):

* ``broadcast_in_dim`` -> sum over the added dims and the expanded size-1 dims, reshape.
* ``reshape`` -> reshape back; ``transpose`` -> the inverse permutation; ``reverse`` -> reverse.
* ``slice`` -> ``pad`` with zeros (strides become interior padding).
* ``pad`` -> ``pad`` by the negated edges and ``slice`` with stride interior+1; the padding
  value gets ``sum(ct) - sum(ct of operand)``.
* ``concatenate`` -> one ``slice`` per operand.
* ``real_dynamic_slice``, ``dynamic_pad``, ``dynamic_gather`` with constant start/limit/
  stride, padding or slice-size operands: as ``slice``, ``pad`` and ``gather``.
* ``dynamic_slice`` -> ``dynamic_update_slice`` into zeros; ``dynamic_update_slice`` -> the
  operand gets ``ct`` with the window zeroed, the update gets the window.
* ``gather`` -> ``scatter`` (add) into zeros with the matching dimension numbers. Gather clamps
  start indices into range, so the start indices are clamped the same way first.
* ``scatter`` with a replacing or adding body -> the updates get ``gather(ct)``; with
  replacement the operand gets ``ct`` with the scattered places zeroed. Replacement assumes
  unique indices (where several updates hit one place, each gets the place's cotangent).
* ``sort``: results are permutations of the operands along ``dimension``; each float operand
  gets its result's cotangent scattered back through the permutation (an integer ``iota``
  operand along that dimension, as TopK lowers to, is the permutation; otherwise the sort is
  redone with one).

Start indices, shapes and other integer operands get no cotangent.

Dynamic (``?``) dims: every rule reads the sizes it needs from a primal value of that shape
(``stablehlo.get_dimension_size``), so one backward function serves every shape. Pad amounts
and slice limits that depend on a ``?`` dim are computed at run time (``dynamic_pad``,
``real_dynamic_slice``); a ``?`` dim of a broadcast operand is never expanded (the forward
lowering records that as a dim equality). Not supported on a ``?`` dim (``MissingVjpRuleError``):
the update of a ``dynamic_update_slice``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import stablehlo

from onnx_stablehlo.passes.autodiff import emit
from onnx_stablehlo.passes.autodiff.context import VjpContext
from onnx_stablehlo.passes.autodiff.reduction import body_kind
from onnx_stablehlo.passes.autodiff.registry import vjp_rule
from onnx_stablehlo.passes.ir_utils import constant_array


def _unbroadcast(ct: ir.Value, x: ir.Value, dims: list[int], expanding: Sequence[int] = ()) -> ir.Value:
    """Transpose of ``broadcast_in_dim(x, ct.shape, dims)``: ``ct`` summed over the added dims
    and the size-1 dims of ``x`` that were expanded (``expanding``: known expanding ones)."""
    operand_shape, ct_shape = emit.shape(x), emit.shape(ct)
    unit = [i for i, d in enumerate(operand_shape) if (d == 1 and ct_shape[dims[i]] != 1) or i in expanding]
    kept = [d for i, d in enumerate(dims) if i not in unit]
    summed = [a for a in range(emit.rank(ct)) if a not in kept]
    reduced = emit.reduce_sum(ct, summed)
    if not unit and reduced.type == x.type and kept == sorted(kept):
        return reduced
    return emit.reshape(reduced, x)


@vjp_rule("stablehlo.broadcast_in_dim")
def vjp_broadcast_in_dim(ctx: VjpContext, ct: ir.Value) -> list:
    (x,) = ctx.operands
    return [_unbroadcast(ct, x, ctx.i64s("broadcast_dimensions"))]


@vjp_rule("stablehlo.dynamic_broadcast_in_dim")
def vjp_dynamic_broadcast_in_dim(ctx: VjpContext, ct: ir.Value) -> list:
    x = ctx.operands[0]
    expanding = ctx.i64s("known_expanding_dimensions", [])
    return [_unbroadcast(ct, x, ctx.i64s("broadcast_dimensions"), expanding), None]


@vjp_rule("stablehlo.broadcast")
def vjp_broadcast(ctx: VjpContext, ct: ir.Value) -> list:
    """``broadcast`` prepends ``broadcast_sizes`` dims."""
    added = len(ctx.i64s("broadcast_sizes"))
    return [emit.reduce_sum(ct, range(added))]


@vjp_rule("stablehlo.reshape")
def vjp_reshape(ctx: VjpContext, ct: ir.Value) -> list:
    return [emit.reshape(ct, ctx.operands[0])]


@vjp_rule("stablehlo.dynamic_reshape")
def vjp_dynamic_reshape(ctx: VjpContext, ct: ir.Value) -> list:
    return [emit.reshape(ct, ctx.operands[0]), None]


@vjp_rule("stablehlo.transpose")
def vjp_transpose(ctx: VjpContext, ct: ir.Value) -> list:
    permutation = ctx.i64s("permutation")
    return [emit.transpose(ct, [int(i) for i in np.argsort(permutation)])]


@vjp_rule("stablehlo.reverse")
def vjp_reverse(ctx: VjpContext, ct: ir.Value) -> list:
    return [stablehlo.ReverseOp(ct, emit.i64_attr(ctx.i64s("dimensions"))).result]


def _constant_ints(ctx: VjpContext, index: int, what: str) -> list[int]:
    """Operand ``index`` of ``ctx.op`` as ints; it must be a ``stablehlo.constant``."""
    array = constant_array(ctx.operands[index])
    if array is None:
        raise ctx.missing(f"its {what} operand is not a constant")
    return [int(v) for v in array.reshape(-1)]


def _transpose_slice(ct: ir.Value, x: ir.Value, start: list[int], strides: list[int]) -> ir.Value:
    """Transpose of slicing ``x`` from ``start`` with ``strides`` (to ``ct``'s shape): ``ct``
    padded back with zeros. The high padding of a ``?`` dim is computed at run time."""
    operand_shape, out_shape = emit.shape(x), emit.shape(ct)
    high: list[int | ir.Value] = []
    for axis, (s, n, st, d) in enumerate(zip(start, out_shape, strides, operand_shape)):
        if not emit.is_dynamic(n) and not emit.is_dynamic(d):
            high.append(d - (s + (0 if n == 0 else 1 + (n - 1) * st)))
            continue
        # d - s - max(0, (n - 1) * st + 1): the slice covers max(0, (n - 1) * st + 1) elements
        if emit.is_dynamic(n):
            covered = emit.sub(emit.mul(emit.dim_size(ct, axis), emit.dim_constant(st)), emit.dim_constant(st - 1))
            covered = stablehlo.MaxOp(covered, emit.dim_constant(0)).result
            high.append(emit.sub(emit.sub(emit.dim_size(x, axis), emit.dim_constant(s)), covered))
        else:
            used = s + (0 if n == 0 else 1 + (n - 1) * st)
            high.append(emit.sub(emit.dim_size(x, axis), emit.dim_constant(used)))
    return emit.pad(ct, emit.scalar_like(ct, 0), start, high, [s - 1 for s in strides])


@vjp_rule("stablehlo.slice")
def vjp_slice(ctx: VjpContext, ct: ir.Value) -> list:
    start, strides = ctx.i64s("start_indices"), ctx.i64s("strides")
    return [_transpose_slice(ct, ctx.operands[0], start, strides)]


@vjp_rule("stablehlo.real_dynamic_slice")
def vjp_real_dynamic_slice(ctx: VjpContext, ct: ir.Value) -> list:
    x, start_value, _, strides_value = ctx.operands
    if constant_array(start_value) is not None and constant_array(strides_value) is not None:
        start = _constant_ints(ctx, 1, "start_indices")
        strides = _constant_ints(ctx, 3, "strides")
        return [_transpose_slice(ct, x, start, strides), None, None, None]
    # start (or strides) computed at run time (a Slice whose bounds depend on a ? dim): pad
    # with low = start, interior = stride - 1, high = size - start - max(0, (n - 1) * stride + 1)
    i64 = ir.IntegerType.get_signless(64)
    start = emit.convert(start_value, i64)
    strides = emit.convert(strides_value, i64)
    one = emit.dim_constant([1] * emit.rank(x))
    covered = emit.sub(emit.mul(emit.shape_tensor(ct), strides), emit.sub(strides, one))
    covered = stablehlo.MaxOp(covered, emit.dim_constant([0] * emit.rank(x))).result
    high = emit.sub(emit.sub(emit.shape_tensor(x), start), covered)
    ct_x = stablehlo.DynamicPadOp(
        x.type, ct, emit.scalar_like(ct, 0), start, high, emit.sub(strides, one)
    ).result
    return [ct_x, None, None, None]


@vjp_rule("stablehlo.pad")
def vjp_pad(ctx: VjpContext, ct: ir.Value) -> list:
    low, high = ctx.i64s("edge_padding_low"), ctx.i64s("edge_padding_high")
    return _transpose_pad(ctx, ct, low, high, ctx.i64s("interior_padding"))


@vjp_rule("stablehlo.dynamic_pad")
def vjp_dynamic_pad(ctx: VjpContext, ct: ir.Value) -> list:
    low = _constant_ints(ctx, 2, "edge_padding_low")
    high = _constant_ints(ctx, 3, "edge_padding_high")
    interior = _constant_ints(ctx, 4, "interior_padding")
    return [*_transpose_pad(ctx, ct, low, high, interior), None, None, None]


def _transpose_pad(ctx: VjpContext, ct: ir.Value, low: list[int], high: list[int], interior: list[int]) -> list:
    unpadded = emit.pad(ct, emit.scalar_like(ct, 0), [-v for v in low], [-v for v in high], [0] * len(low))
    ct_x = emit.slice_(unpadded, [0] * len(low), emit.shape(unpadded), [i + 1 for i in interior])
    ct_value = None
    if ctx.need(1):
        everything = range(emit.rank(ct))
        ct_value = emit.sub(emit.reduce_sum(ct, everything), emit.reduce_sum(ct_x, everything))
    return [ct_x if ctx.need(0) else None, ct_value]


@vjp_rule("stablehlo.concatenate")
def vjp_concatenate(ctx: VjpContext, ct: ir.Value) -> list:
    axis = ctx.int_attr("dimension")
    shape = emit.shape(ct)
    cts: list = []
    offset: int | ir.Value = 0
    for index, operand in enumerate(ctx.operands):
        size = emit.shape(operand)[axis]
        end: int | ir.Value
        if isinstance(offset, int) and not emit.is_dynamic(size):
            end = offset + size
        else:  # an operand before or this one has a ? size along the axis: offsets at run time
            size_value = emit.dim_size(operand, axis)
            if isinstance(offset, int):
                end = size_value if offset == 0 else emit.add(emit.dim_constant(offset), size_value)
            else:
                end = emit.add(offset, size_value)
        if ctx.need(index):
            if isinstance(offset, int) and isinstance(end, int):
                start = [0] * len(shape)
                limit = list(shape)
                start[axis], limit[axis] = offset, end
                cts.append(emit.slice_(ct, start, limit, [1] * len(shape)))
            else:
                cts.append(_slice_along(ct, operand, axis, offset, end))
        else:
            cts.append(None)
        offset = end
    return cts


def _slice_along(ct: ir.Value, like: ir.Value, axis: int, start: int | ir.Value, limit: ir.Value) -> ir.Value:
    """``ct[..., start:limit, ...]`` along ``axis`` (bounds computed at run time), of ``like``'s type."""
    starts: list[int | ir.Value] = [0] * emit.rank(ct)
    limits: list[int | ir.Value] = [emit.dim_size(ct, a) for a in range(emit.rank(ct))]
    starts[axis], limits[axis] = start, limit
    return stablehlo.RealDynamicSliceOp(
        ir.RankedTensorType.get(emit.shape(like), emit.element_type(ct)),
        ct,
        emit.shape_tensor(starts),
        emit.shape_tensor(limits),
        emit.dim_constant([1] * emit.rank(ct)),
    ).result


@vjp_rule("stablehlo.dynamic_slice")
def vjp_dynamic_slice(ctx: VjpContext, ct: ir.Value) -> list:
    x, *starts = ctx.operands
    zeros = emit.zeros_like(x)
    return [stablehlo.DynamicUpdateSliceOp(zeros, ct, starts).result, *([None] * len(starts))]


@vjp_rule("stablehlo.dynamic_update_slice")
def vjp_dynamic_update_slice(ctx: VjpContext, ct: ir.Value) -> list:
    x, update, *starts = ctx.operands
    ct_x = ct_update = None
    if ctx.need(0):
        ct_x = stablehlo.DynamicUpdateSliceOp(ct, emit.zeros_like(update), starts).result
    if ctx.need(1):
        if not emit.is_static(update):
            raise ctx.missing(f"an update of the dynamic type {update.type}")
        ct_update = stablehlo.DynamicSliceOp(ct, starts, emit.i64_attr(emit.shape(update))).result
    return [ct_x, ct_update, *([None] * len(starts))]


# gather / scatter -------------------------------------------------------------------------------


def _clamped_gather_indices(
    indices: ir.Value, x: ir.Value, slice_sizes, start_index_map: list[int], index_vector_dim: int
) -> ir.Value:
    """Start indices clamped into ``[0, operand_dim - slice_size]`` as gather does."""
    operand_shape = emit.shape(x)
    shape = emit.shape(indices)
    element = emit.element_type(indices)
    vector_type = emit.tensor_type((len(start_index_map),), element)
    if all(not emit.is_dynamic(operand_shape[d]) for d in start_index_map):
        bounds = [operand_shape[d] - slice_sizes[d] for d in start_index_map]
        bounds_value = stablehlo.ConstantOp(
            ir.DenseElementsAttr.get(np.array(bounds, dtype=_int_dtype(element)), type=vector_type)
        ).result
    else:  # operand dims read at run time
        parts = [emit.sub(emit.dim_size(x, d), emit.dim_constant(slice_sizes[d])) for d in start_index_map]
        bounds_value = emit.convert(emit.shape_tensor(parts), element)
    if index_vector_dim < len(shape):
        upper = emit.broadcast_in_dim(bounds_value, indices, [index_vector_dim])
    else:
        upper = emit.broadcast_in_dim(emit.reshape(bounds_value, ()), indices, [])
    return stablehlo.ClampOp(emit.zeros_like(indices), indices, upper).result


def _int_dtype(element: ir.Type) -> np.dtype:
    width = ir.IntegerType(element).width
    unsigned = ir.IntegerType(element).is_unsigned
    return np.dtype(f"{'u' if unsigned else 'i'}{width // 8}")


def _scatter(operand: ir.Value, indices: ir.Value, updates: ir.Value, numbers: ir.Attribute, kind: str,
             indices_are_sorted: ir.Attribute | None = None) -> ir.Value:
    op = stablehlo.ScatterOp([operand.type], [operand], indices, [updates], numbers)
    if indices_are_sorted is not None:
        op.attributes["indices_are_sorted"] = indices_are_sorted
    scalar = emit.tensor_type((), emit.element_type(operand))
    block = op.update_computation.blocks.append(scalar, scalar)
    with ir.InsertionPoint(block):
        new = block.arguments[1]
        stablehlo.ReturnOp([emit.add(block.arguments[0], new) if kind == "add" else new])
    return op.results[0]


@vjp_rule("stablehlo.gather")
def vjp_gather(ctx: VjpContext, ct: ir.Value) -> list:
    return [_transpose_gather(ctx, ct, ctx.i64s("slice_sizes")), None]


@vjp_rule("stablehlo.dynamic_gather")
def vjp_dynamic_gather(ctx: VjpContext, ct: ir.Value) -> list:
    return [_transpose_gather(ctx, ct, _constant_ints(ctx, 2, "slice_sizes")), None, None]


def _transpose_gather(ctx: VjpContext, ct: ir.Value, slice_sizes: list[int]) -> ir.Value:
    x, indices = ctx.operands[:2]
    numbers = stablehlo.GatherDimensionNumbers(ctx.attr("dimension_numbers"))
    clamped = _clamped_gather_indices(
        indices, x, slice_sizes, list(numbers.start_index_map), numbers.index_vector_dim
    )
    scatter_numbers = stablehlo.ScatterDimensionNumbers.get(
        update_window_dims=list(numbers.offset_dims),
        inserted_window_dims=list(numbers.collapsed_slice_dims),
        input_batching_dims=list(numbers.operand_batching_dims),
        scatter_indices_batching_dims=list(numbers.start_indices_batching_dims),
        scattered_dims_to_operand_dims=list(numbers.start_index_map),
        index_vector_dim=numbers.index_vector_dim,
    )
    return _scatter(emit.zeros_like(x), clamped, ct, scatter_numbers, "add")


@vjp_rule("stablehlo.scatter")
def vjp_scatter(ctx: VjpContext, *cts: ir.Value | None) -> list:
    if len(ctx.results) != 1:
        raise ctx.missing(f"variadic scatter with {len(ctx.results)} results")
    (ct,) = cts
    kind = body_kind(ctx.op)
    block = ctx.op.regions[0].blocks[0]
    body_ops = [o.operation for o in block.operations]
    if kind is None and len(body_ops) == 1 and body_ops[0].operands[0] == block.arguments[1]:
        kind = "replace"
    if kind not in ("add", "replace"):
        names = ", ".join(o.name for o in body_ops)
        raise ctx.missing(f"scatter body {names}")
    x, indices, updates = ctx.operands
    numbers = stablehlo.ScatterDimensionNumbers(ctx.attr("scatter_dimension_numbers"))
    ct_x = ct_updates = None
    if ctx.need(0):
        if kind == "add":
            ct_x = ct
        else:  # the scattered places were overwritten: zero them
            ct_x = _scatter(ct, indices, emit.zeros_like(updates), ctx.attr("scatter_dimension_numbers"), "replace")
    if ctx.need(2):
        inserted = set(numbers.inserted_window_dims) | set(numbers.input_batching_dims)
        window_dims = list(numbers.update_window_dims)
        updates_shape = emit.shape(updates)
        slice_sizes: list[int | ir.Value] = []
        position = 0
        for d in range(emit.rank(x)):
            if d in inserted:
                slice_sizes.append(1)
            else:
                size = updates_shape[window_dims[position]]
                slice_sizes.append(emit.dim_size(updates, window_dims[position]) if emit.is_dynamic(size) else size)
                position += 1
        gather_numbers = stablehlo.GatherDimensionNumbers.get(
            offset_dims=window_dims,
            collapsed_slice_dims=list(numbers.inserted_window_dims),
            operand_batching_dims=list(numbers.input_batching_dims),
            start_indices_batching_dims=list(numbers.scatter_indices_batching_dims),
            start_index_map=list(numbers.scattered_dims_to_operand_dims),
            index_vector_dim=numbers.index_vector_dim,
        )
        if all(isinstance(size, int) for size in slice_sizes):
            ct_updates = stablehlo.GatherOp(ct, indices, gather_numbers, emit.i64_attr(slice_sizes)).result
        else:  # a window dim of ? size: the slice sizes at run time
            ct_updates = stablehlo.DynamicGatherOp(
                ct, indices, emit.shape_tensor(slice_sizes), gather_numbers, results=[updates.type]
            ).result
    return [ct_x, None, ct_updates]


# sort ---------------------------------------------------------------------------------------------


def _is_iota_along(value: ir.Value, dimension: int) -> bool:
    owner = value.owner
    op = owner.operation if isinstance(owner, ir.OpView) else owner
    if isinstance(op, ir.Block) or op.name != "stablehlo.iota":
        return False
    return int(ir.IntegerAttr(op.attributes["iota_dimension"]).value) == dimension


def _sort_permutation(ctx: VjpContext, dimension: int) -> ir.Value:
    """The integer permutation the sort applied along ``dimension`` (result j came from
    operand position perm[j])."""
    for operand, result in zip(ctx.operands, ctx.results):
        if not emit.is_float_type(operand.type) and _is_iota_along(operand, dimension):
            return result
    # Redo the sort with an iota operand appended (the comparator ignores its block args).
    operands = ctx.operands
    shape = emit.shape(operands[0])
    iota_type = emit.tensor_type(shape, ir.IntegerType.get_signless(64))
    if emit.is_static(operands[0]):
        iota = stablehlo.IotaOp(iota_type, dimension).result
    else:
        iota = stablehlo.DynamicIotaOp(iota_type, emit.shape_tensor(operands[0]), dimension).result
    op = stablehlo.SortOp([*[v.type for v in operands], iota_type], [*operands, iota], dimension=dimension,
                          is_stable=ctx.attr("is_stable") if ctx.has_attr("is_stable") else None)
    old_block = ctx.op.regions[0].blocks[0]
    scalar_types = [a.type for a in old_block.arguments]
    index_scalar = emit.tensor_type((), ir.IntegerType.get_signless(64))
    block = op.comparator.blocks.append(*scalar_types, index_scalar, index_scalar)
    mapping = dict(zip(old_block.arguments, list(block.arguments)[: len(scalar_types)]))
    emit.clone_ops([o.operation for o in old_block.operations], ir.InsertionPoint(block), mapping)
    return op.results[-1]


@vjp_rule("stablehlo.sort")
def vjp_sort(ctx: VjpContext, *cts: ir.Value | None) -> list:
    dimension = ctx.int_attr("dimension", -1)
    rank = emit.rank(ctx.operands[0])
    if dimension < 0:
        dimension += rank
    permutation = _sort_permutation(ctx, dimension)
    others = [d for d in range(rank) if d != dimension]
    numbers = stablehlo.ScatterDimensionNumbers.get(
        update_window_dims=[],
        inserted_window_dims=[dimension],
        input_batching_dims=others,
        scatter_indices_batching_dims=others,
        scattered_dims_to_operand_dims=[dimension],
        index_vector_dim=rank,
    )
    result = []
    for index, (operand, ct) in enumerate(zip(ctx.operands, cts)):
        if ct is None or not ctx.need(index):
            result.append(None)
        else:
            result.append(_scatter(emit.zeros_like(operand), permutation, ct, numbers, "add"))
    return result


@vjp_rule("stablehlo.get_dimension_size")
def vjp_get_dimension_size(ctx: VjpContext, *cts: ir.Value | None) -> list:
    """An integer result: no cotangent."""
    return [None]
