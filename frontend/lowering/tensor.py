"""Lowering rules: shape and layout ops that move data without computing on it.

Each op maps to one or two StableHLO data-movement ops::

    Identity(x)                 -> x
    Shape(x), Size(x)           -> a compile-time int64 constant (shapes are static)
    Reshape(x, shape)           -> stablehlo.reshape
    Flatten(x), Squeeze(x), Unsqueeze(x)
                                -> stablehlo.reshape
    Transpose(x)                -> stablehlo.transpose
    Concat(x0, x1, ...)         -> stablehlo.concatenate
    Expand(x, shape)            -> stablehlo.broadcast_in_dim
    Split(x)                    -> one stablehlo.slice per output
    Tile(x, repeats)            -> stablehlo.broadcast_in_dim + stablehlo.reshape
    DepthToSpace, SpaceToDepth  -> stablehlo.reshape + stablehlo.transpose + stablehlo.reshape

Constraints: the shape-like inputs (``shape``, ``axes``, ``split``, ``repeats``) must be known
at compile time, since result shapes are static. Revisions after 13 (21, 23, 24, 25, 28) only
widened the type constraints (int4, float8, float4, int2 ...), so one function covers them.

Spec: onnx.ai/onnx/operators (each op's page).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import stablehlo

from onnx_stablehlo.errors import ShapeError
from onnx_stablehlo.frontend import builders
from onnx_stablehlo.frontend.context import LoweringContext, OnnxNode
from onnx_stablehlo.frontend.registry import lowering
from onnx_stablehlo.frontend.shapes import Dim, SymbolicDim, ceil_div, exact_div, floor_div, is_static, product

def _axes(ctx: LoweringContext, axes: Sequence[int], rank: int, what: str = "axes") -> list[int]:
    """Normalizes axes for ``rank``; duplicates are an error.

    Raises:
        ShapeError: an axis is out of range or repeated.
    """
    normalized = [ctx.axis(int(a), rank) for a in axes]
    if len(set(normalized)) != len(normalized):
        raise ctx.error(f"{what} {list(axes)} repeat an axis", ShapeError)
    return normalized


def _axes_attr_or_input(ctx: LoweringContext, node: OnnxNode) -> list[int] | None:
    """``axes`` from the attribute (before revision 13) or the optional input 1 (from 13)."""
    if node.since_version >= 13:
        return ctx.constant_ints(1) if ctx.has_input(1) else None
    return node.attr_ints("axes")


# Identity, Shape, Size -------------------------------------------------------------------------


@lowering("Identity", since=1)
@lowering("Identity", since=13)  # 13 added bfloat16
@lowering("Identity", since=14)  # 14 and 16 added sequence and optional types (not lowered)
@lowering("Identity", since=16)
@lowering("Identity", since=19)  # 19 and later added float8, int4, float4, int2
@lowering("Identity", since=21)
@lowering("Identity", since=23)
@lowering("Identity", since=24)
@lowering("Identity", since=25)
def lower_identity(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value]:
    """Forwards the input value; nothing is emitted.

    Spec: Identity-1/13/14/16/19/21/23/24/25.
    Shapes: any.
    Dtypes: any tensor element type.
    Sequence and optional inputs (revisions 14, 16) pass through unchanged.
    """
    if ctx.input_kind(0) != "tensor":
        return [ctx.lowered(0)]
    return [ctx.input(0)]


@lowering("Shape", since=1)
@lowering("Shape", since=13)  # 13 added bfloat16
@lowering("Shape", since=15)  # 15 added the start/end attributes
@lowering("Shape", since=19)  # 19 and later added element types
@lowering("Shape", since=21)
@lowering("Shape", since=23)
@lowering("Shape", since=24)
@lowering("Shape", since=25)
def lower_shape(ctx: LoweringContext, node: OnnxNode) -> list[np.ndarray]:
    """Returns the input's shape (or its ``[start:end]`` slice) as a compile-time int64 array.

    Spec: Shape-1/13/15/19/21/23/24/25.
    Shapes: data [d0, ..., dn], static; start/end are clamped to [0, rank] after adding rank to
        negative values.
    Dtypes: any input; the result is int64 [k].
    Raises: ShapeError if a dim is symbolic.
    """
    shape = ctx.input_static_shape(0)
    rank = len(shape)
    start = node.attr_int("start", 0) if node.since_version >= 15 else 0
    end = node.attr("end") if node.since_version >= 15 else None
    end = rank if end is None else int(end)
    start, end = (_clamp(v + rank if v < 0 else v, 0, rank) for v in (start, end))
    return [np.asarray(shape[start:end], dtype=np.int64).reshape(-1)]


def _clamp(value: int, low: int, high: int) -> int:
    return max(low, min(high, value))


@lowering("Size", since=1)
@lowering("Size", since=13)  # 13 and later added element types
@lowering("Size", since=19)
@lowering("Size", since=21)
@lowering("Size", since=23)
@lowering("Size", since=24)
@lowering("Size", since=25)
def lower_size(ctx: LoweringContext, node: OnnxNode) -> list[np.ndarray]:
    """Returns the input's element count as a compile-time int64 scalar.

    Spec: Size-1/13/19/21/23/24/25.
    Shapes: data static; the result is an int64 scalar.
    Raises: ShapeError if a dim is symbolic.
    """
    shape = ctx.input_static_shape(0)
    return [np.asarray(int(np.prod(shape, dtype=np.int64)), dtype=np.int64)]


# Reshape, Flatten, Squeeze, Unsqueeze ---------------------------------------------------------


@lowering("Reshape", since=5)
@lowering("Reshape", since=13)  # 13 added bfloat16
@lowering("Reshape", since=14)  # 14 added allowzero
@lowering("Reshape", since=19)  # 19 and later added element types
@lowering("Reshape", since=21)
@lowering("Reshape", since=23)
@lowering("Reshape", since=24)
@lowering("Reshape", since=25)
def lower_reshape(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value]:
    """Lowers Reshape to stablehlo.reshape.

    A 0 in ``shape`` copies the input dim at that position (unless ``allowzero=1``, where it is a
    zero-size dim); one -1 is inferred from the element count.

    With symbolic dims the -1 is ``total / known`` as a dim expression: exact when it divides
    as written, else a floor division (``floor(h / 3)``) that is exact for a valid model, or,
    when no expression states it (``(a*b) / c``), a quotient computed at run time. The element
    count is not proved at compile time then: it is checked when the module is refined to the
    feeds' static shapes (a reshape between different element counts does not verify).

    Spec: Reshape-5/13/14/19/21/23/24/25.
    Shapes: data any, symbolic dims allowed; shape int64 [k], known at compile time (possibly
        as symbolic dims of a shape computation).
    Dtypes: any.
    Raises: NonConstantInputError if `shape` is computed at run time; ShapeError if the element
        counts differ, more than one dim is -1, or -1 is combined with 0 under allowzero=1.
    """
    data = ctx.input(0)
    source = builders.dims_of(data)
    if ctx.is_constant_input(1):
        requested = ctx.constant_ints(1)
    else:
        requested = [d if not isinstance(d, (int, np.integer)) else int(d) for d in ctx.symbolic_input(1).reshape(-1)]
    allowzero = node.attr_int("allowzero", 0) if node.since_version >= 14 else 0
    target, run_time = _reshape_target(ctx, source, requested, bool(allowzero))
    if run_time is not None:
        return [_reshape_run_time(data, target, *run_time)]
    return [builders.reshape(data, target)]


def _reshape_target(
    ctx: LoweringContext, source: Sequence[Dim], requested: Sequence[Dim], allowzero: bool
) -> tuple[list[Dim], tuple[Dim, Dim] | None]:
    """Resolves Reshape's 0 and -1 entries against the input shape.

    Returns the target dims and None, or, when the -1 is a quotient of symbolic dims that no
    dim expression states (see :func:`_inferred_dim`), the target with the -1 kept and the
    ``(total, known)`` element counts whose quotient it is at run time.
    """
    target: list[int] = []
    for position, dim in enumerate(requested):
        if not isinstance(dim, int):
            target.append(dim)
        elif dim == 0 and not allowzero:
            if position >= len(source):
                raise ctx.error(
                    f"shape {list(requested)} copies dim {position} (a 0) but the input has rank "
                    f"{len(source)}",
                    ShapeError,
                )
            target.append(source[position])
        elif dim < -1:
            raise ctx.error(f"shape {list(requested)} has a negative dim {dim}", ShapeError)
        else:
            target.append(dim)
    total = product(source)
    inferred = [i for i, d in enumerate(target) if isinstance(d, int) and d == -1]
    if len(inferred) > 1:
        raise ctx.error(f"shape {list(requested)} has more than one -1", ShapeError)
    if inferred:
        if allowzero and 0 in target:
            raise ctx.error(f"shape {list(requested)} combines -1 with 0 under allowzero=1", ShapeError)
        known = product([d for i, d in enumerate(target) if i != inferred[0]])
        quotient = _inferred_dim(total, known)
        if quotient is None:
            if is_static([total, known]):
                raise ctx.error(f"cannot reshape {list(source)} to {list(requested)}", ShapeError)
            return target, (total, known)  # computed at run time: see _reshape_run_time
        target[inferred[0]] = quotient
    if not is_static(target) or not is_static(source):
        return target, None  # element counts are checked when the module is refined to static shapes
    if int(np.prod(target, dtype=np.int64)) != total:
        raise ctx.error(
            f"cannot reshape {list(source)} ({total} elements) to {list(requested)}", ShapeError
        )
    return target, None


def _reshape_run_time(data: ir.Value, target: list[Dim], total: Dim, known: Dim) -> ir.Value:
    """stablehlo.dynamic_reshape of ``data`` to ``target`` whose -1 is ``total / known``
    computed at run time (a quotient no dim expression states, as ``(a*b) / c`` for unrelated
    symbols); the importer names that dim with a fresh symbol bound to the result."""
    position = target.index(-1)
    quotient = stablehlo.divide(builders.dim_value(total), builders.dim_value(known))
    parts = [builders.reshape(quotient if i == position else builders.dim_value(d), (1,)) for i, d in enumerate(target)]
    shape = parts[0] if len(parts) == 1 else stablehlo.concatenate(
        parts, ir.IntegerAttr.get(ir.IntegerType.get_signless(64), 0)
    )
    result_type = builders.tensor_type([None if i == position else d for i, d in enumerate(target)], builders.dtype_of(data))
    result = stablehlo.dynamic_reshape(result_type, data, shape)
    fresh = builders.dims_of(result)[position]  # a new symbol for the quotient, bound to result
    return builders.record(result, [fresh if i == position else d for i, d in enumerate(target)])


def _inferred_dim(total: Dim, known: Dim) -> Dim | None:
    """The size of Reshape's -1 dim: ``total / known`` as a dim, or None when not expressible.

    An exact symbolic division when :func:`exact_div` proves one (``(6*b*s) / (2*s) = 3*b``);
    otherwise the symbols of a single-term ``known`` are cancelled and the int coefficient left
    is divided with :func:`floor_div` (``(b*s*h) / (3*b*s) = floor(h / 3)``). A valid model has
    ``total`` a multiple of ``known``, so the floor is exact; an invalid feed is not caught here
    but when the module is refined to static shapes (a reshape whose element counts differ does
    not verify). A ``known`` of several terms (``b + 1``) or with symbols ``total`` lacks gives
    None (the caller then computes the quotient at run time).
    """
    quotient = exact_div(total, known)
    if quotient is not None:
        return quotient
    if isinstance(known, int):
        return floor_div(total, known) if known > 0 else None
    coefficient, symbols = _split_coefficient(known)
    if coefficient is None or coefficient <= 0:
        return None
    reduced = exact_div(total, symbols)
    return None if reduced is None else floor_div(reduced, coefficient)


def _split_coefficient(dim: SymbolicDim) -> tuple[int | None, Dim]:
    """``(c, m)`` with ``dim == c * m`` for a single-term ``dim``; ``(None, dim)`` otherwise."""
    terms = dim._terms  # the canonical sum of monomials (shapes.py); importer.py reads it too
    if len(terms) != 1:
        return None, dim
    ((monomial, coefficient),) = terms.items()
    return coefficient, SymbolicDim(_terms={monomial: 1})


@lowering("Flatten", since=1)
@lowering("Flatten", since=9)  # 9 widened types
@lowering("Flatten", since=11)  # 11 allowed a negative axis
@lowering("Flatten", since=13)  # 13 and later widened types
@lowering("Flatten", since=21)
@lowering("Flatten", since=23)
@lowering("Flatten", since=24)
@lowering("Flatten", since=25)
def lower_flatten(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value]:
    """Lowers Flatten to stablehlo.reshape to [prod(d[:axis]), prod(d[axis:])].

    Spec: Flatten-1/9/11/13/21/23/24/25.
    Shapes: data static, rank r; axis in [-r, r] (negative from revision 11).
    Dtypes: any.
    Raises: ShapeError if axis is out of range.
    """
    data = ctx.input(0)
    shape = builders.dims_of(data)
    rank = len(shape)
    axis = node.attr_int("axis")
    if not -rank <= axis <= rank:
        raise ctx.error(f"axis {axis} is out of range [{-rank}, {rank}]", ShapeError)
    axis = axis + rank if axis < 0 else axis
    return [builders.reshape(data, [product(shape[:axis]), product(shape[axis:])])]


@lowering("Squeeze", since=1)
@lowering("Squeeze", since=11)  # 11 allowed negative axes
@lowering("Squeeze", since=13)  # 13 moved axes from an attribute to an optional input
@lowering("Squeeze", since=21)  # 21 and later widened types
@lowering("Squeeze", since=23)
@lowering("Squeeze", since=24)
@lowering("Squeeze", since=25)
def lower_squeeze(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value]:
    """Lowers Squeeze to stablehlo.reshape; without axes, every size-1 dim is removed.

    Spec: Squeeze-1/11/13/21/23/24/25.
    Shapes: data static; axes (attribute before 13, int64 input from 13) known at compile time.
    Dtypes: any.
    Deviations: an empty ``axes`` input squeezes nothing, as onnx.reference does (onnxruntime
        squeezes every size-1 dim).
    Raises: NonConstantInputError if `axes` is computed at run time; ShapeError if a squeezed
        dim is not 1.
    """
    data = ctx.input(0)
    shape = builders.dims_of(data)
    axes = _axes_attr_or_input(ctx, node)
    if axes is None:
        axes = [i for i, d in enumerate(shape) if d == 1]
    axes = _axes(ctx, axes, len(shape))
    for axis in axes:
        if shape[axis] != 1:
            raise ctx.error(f"cannot squeeze axis {axis} of size {shape[axis]} (shape {list(shape)})", ShapeError)
    return [builders.reshape(data, [d for i, d in enumerate(shape) if i not in axes])]


@lowering("Unsqueeze", since=1)
@lowering("Unsqueeze", since=11)  # 11 allowed negative axes
@lowering("Unsqueeze", since=13)  # 13 moved axes from an attribute to a required input
@lowering("Unsqueeze", since=21)  # 21 and later widened types
@lowering("Unsqueeze", since=23)
@lowering("Unsqueeze", since=24)
@lowering("Unsqueeze", since=25)
def lower_unsqueeze(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value]:
    """Lowers Unsqueeze to stablehlo.reshape inserting size-1 dims at ``axes`` of the result.

    Spec: Unsqueeze-1/11/13/21/23/24/25.
    Shapes: data static; axes (attribute before 13, int64 input from 13) known at compile time,
        relative to the result's rank, in any order.
    Dtypes: any.
    Raises: NonConstantInputError if `axes` is computed at run time; ShapeError for out-of-range
        or repeated axes.
    """
    data = ctx.input(0)
    shape = builders.dims_of(data)
    axes = _axes_attr_or_input(ctx, node)
    if axes is None:
        raise ctx.error("axes is required", ShapeError)
    out_rank = len(shape) + len(axes)
    axes = _axes(ctx, axes, out_rank)
    dims = iter(shape)
    target = [1 if i in axes else next(dims) for i in range(out_rank)]
    return [builders.reshape(data, target)]


# Transpose, Concat, Expand, Tile ---------------------------------------------------------------


@lowering("Transpose", since=1)
@lowering("Transpose", since=13)  # 13 and later widened types
@lowering("Transpose", since=21)
@lowering("Transpose", since=23)
@lowering("Transpose", since=24)
@lowering("Transpose", since=25)
def lower_transpose(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value]:
    """Lowers Transpose to stablehlo.transpose (default ``perm``: dims reversed).

    Spec: Transpose-1/13/21/23/24/25.
    Shapes: data static, rank r; perm a permutation of [0, r).
    Dtypes: any.
    Raises: ShapeError if perm is not a permutation of the input's dims.
    """
    data = ctx.input(0)
    rank = builders.rank_of(data)
    perm = node.attr_ints("perm")
    if perm is None:
        perm = list(reversed(range(rank)))
    if sorted(perm) != list(range(rank)):
        raise ctx.error(f"perm {perm} is not a permutation of {rank} dims", ShapeError)
    return [builders.transpose(data, perm)]


@lowering("Concat", since=4)
@lowering("Concat", since=11)  # 11 allowed a negative axis
@lowering("Concat", since=13)  # 13 added bfloat16
def lower_concat(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value]:
    """Lowers Concat to stablehlo.concatenate.

    Spec: Concat-4/11/13.
    Shapes: inputs static, equal except along axis (negative from revision 11); zero-size
        inputs are allowed.
    Dtypes: any.
    Raises: ShapeError if the inputs' shapes disagree off the axis.
    """
    values = [v for v in ctx.inputs() if v is not None]
    shapes = [builders.dims_of(v) for v in values]
    rank = len(shapes[0])
    axis = ctx.attr_axis("axis", rank)
    for shape in shapes[1:]:
        if len(shape) != rank or any(
            a != b for i, (a, b) in enumerate(zip(shape, shapes[0])) if i != axis and is_static((a, b))
        ):
            raise ctx.error(f"cannot concatenate shapes {[list(s) for s in shapes]} on axis {axis}", ShapeError)
    if len(values) == 1:
        return [values[0]]
    dims = list(shapes[0])
    for shape in shapes[1:]:  # symbols off the axis must agree: merged, checked per call
        dims = [d if i == axis or d == other else builders.unify(d, other) for i, (d, other) in enumerate(zip(dims, shape))]
    dims[axis] = sum_dims([s[axis] for s in shapes])
    return [builders.record(stablehlo.concatenate(values, axis), dims)]


def sum_dims(dims: Sequence) -> object:
    """The sum of dims (an int when all are ints)."""
    total = 0
    for dim in dims:
        total = total + dim
    return total


@lowering("Expand", since=8)
@lowering("Expand", since=13)  # 13 added bfloat16
def lower_expand(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value]:
    """Lowers Expand to stablehlo.broadcast_in_dim to broadcast(input shape, ``shape``).

    Spec: Expand-8/13.
    Shapes: data [d0, ...] (symbolic dims allowed); shape int64 [k] known at compile time, up to
        symbolic dims; the result shape is the numpy broadcast of both (so a 1 in ``shape``
        keeps the input's dim).
    Dtypes: any.
    Raises: NonConstantInputError if `shape` is computed at run time; ShapeError if the shapes
        do not broadcast.
    """
    data = ctx.input(0)
    source = builders.dims_of(data)
    if ctx.is_constant_input(1):
        requested = ctx.constant_ints(1)
    else:
        requested = [d if not isinstance(d, (int, np.integer)) else int(d) for d in ctx.symbolic_input(1).reshape(-1)]
    try:
        target = builders.broadcast_shapes(source, requested)
    except ValueError as exc:
        raise ctx.error(f"cannot expand {list(source)} to {requested}", ShapeError) from exc
    return [builders.broadcast_to(data, target)]


@lowering("Tile", since=6)
@lowering("Tile", since=13)  # 13 added bfloat16
def lower_tile(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value]:
    """Lowers Tile to stablehlo.broadcast_in_dim to [r0, d0, r1, d1, ...] and a reshape.

    Spec: Tile-6/13.
    Shapes: data static, rank r; repeats int64 [r] known at compile time, each >= 0.
    Dtypes: any.
    Raises: NonConstantInputError if `repeats` is computed at run time; ShapeError if it has
        the wrong length or a negative entry.
    """
    data = ctx.input(0)
    shape = builders.dims_of(data)
    repeats = ctx.constant_ints(1)
    if len(repeats) != len(shape) or any(r < 0 for r in repeats):
        raise ctx.error(f"repeats {repeats} must be {len(shape)} non-negative counts", ShapeError)
    if all(r == 1 for r in repeats):
        return [data]
    interleaved = [n for pair in zip(repeats, shape) for n in pair]
    expanded = builders.broadcast_to(data, interleaved, dims=range(1, 2 * len(shape), 2))
    return [builders.reshape(expanded, [r * d for r, d in zip(repeats, shape)])]


# Split -----------------------------------------------------------------------------------------


@lowering("Split", since=2)
@lowering("Split", since=11)  # 11 allowed a negative axis
@lowering("Split", since=13)  # 13 moved split from an attribute to an optional input
@lowering("Split", since=18)  # 18 added num_outputs (uneven split: the last chunk is smaller)
def lower_split(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value]:
    """Lowers Split to one stablehlo.slice per output.

    Spec: Split-2/11/13/18.
    Shapes: data any rank (symbolic dims allowed); split (attribute before 13, int64 input from
        13) known at compile time, possibly as symbolic dims of a shape computation, and summing
        to the axis size; without it the axis is split into equal parts (from 18 the last part
        may be smaller, as ``num_outputs`` asks: chunks of ``ceil(size / n)``). A symbolic axis
        size split into equal parts gives ``floor(size / n)`` per part: exact for a valid model
        (the spec asks for divisibility), and an indivisible feed gives slices that do not cover
        the axis rather than an error. Explicit int sizes on a symbolic axis need the axis size
        to be their sum; that cannot be proved at compile time, so it is a ShapeError (the model
        then lowers per shape, where it is checked).
    Dtypes: any.
    Raises: NonConstantInputError if `split` is computed at run time; ShapeError if the sizes do
        not fit the axis or cannot be matched to a symbolic axis size.
    """
    data = ctx.input(0)
    shape = builders.dims_of(data)
    axis = ctx.attr_axis("axis", len(shape))
    size = shape[axis]
    count = len(node.output_names)
    if node.since_version >= 13:
        sizes = _split_sizes(ctx) if ctx.has_input(1) else None
    else:
        sizes = node.attr_ints("split")
    if sizes is None:
        if node.since_version >= 18 and node.has_attr("num_outputs"):
            count = node.attr_int("num_outputs")
            if count <= 0:
                raise ctx.error(f"num_outputs {count} must be positive", ShapeError)
            chunk = ceil_div(size, count)
            sizes = [chunk] * (count - 1) + [size - chunk * (count - 1)]
        elif isinstance(size, int) and size % count == 0:
            sizes = [size // count] * count
        elif not isinstance(size, int):
            sizes = [floor_div(size, count)] * count
        else:
            raise ctx.error(f"axis {axis} of size {size} does not split into {count} equal parts", ShapeError)
        equal_parts = True
    else:
        equal_parts = False
    static = isinstance(size, int) and all(isinstance(s, int) for s in sizes)
    if len(sizes) != count or (static and (sum(sizes) != size or any(s < 0 for s in sizes))):
        raise ctx.error(f"split sizes {sizes} do not fit axis {axis} of size {size} into {count} outputs", ShapeError)
    if not static and not equal_parts and sum(sizes) != size:
        raise ctx.error(
            f"split sizes {list(map(str, sizes))} on axis {axis} of size {size}: their sum cannot be "
            "matched to the axis size at compile time",
            ShapeError,
        )
    results = []
    offset: Dim = 0
    for length in sizes:
        results.append(builders.slice_axis(data, axis, offset, offset + length))
        offset = offset + length
    return results


def _split_sizes(ctx: LoweringContext) -> list[Dim]:
    """Split's ``split`` input as ints, or ints and symbolic dims of a shape computation."""
    if ctx.is_constant_input(1):
        return ctx.constant_ints(1)
    return [d if not isinstance(d, (int, np.integer)) else int(d) for d in ctx.symbolic_input(1).reshape(-1)]


# DepthToSpace, SpaceToDepth --------------------------------------------------------------------


@lowering("DepthToSpace", since=1)
@lowering("DepthToSpace", since=11)  # 11 added mode (DCR or CRD)
@lowering("DepthToSpace", since=13)  # 13 and 28 widened types
@lowering("DepthToSpace", since=28)
def lower_depth_to_space(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value]:
    """Lowers DepthToSpace to reshape, transpose, reshape.

    DCR views channels as [b, b, C']; CRD as [C', b, b] (b = blocksize).

    Spec: DepthToSpace-1/11/13/28.
    Shapes: data [N, C, H, W] (symbolic dims allowed), C divisible by blocksize**2; result
        [N, C/b**2, H*b, W*b]. A symbolic C is assumed divisible (``floor(C / b**2)``); an
        indivisible feed fails the dynamic_reshape's element count when refined or run.
    Dtypes: any.
    Raises: UnsupportedAttributeError for another mode; ShapeError for a rank other than 4 or
        a channel count not divisible by blocksize**2.
    """
    data = ctx.input(0)
    n, c, h, w = _nchw(ctx, data)
    block = node.attr_int("blocksize")
    mode = node.attr_str("mode", "DCR") if node.since_version >= 11 else "DCR"
    if block <= 0 or (isinstance(c, int) and c % (block * block)):
        raise ctx.error(f"channels {c} are not divisible by blocksize**2 (blocksize {block})", ShapeError)
    depth = floor_div(c, block * block)  # exact for valid symbolic C (see the docstring)
    if mode == "DCR":
        split = builders.reshape(data, [n, block, block, depth, h, w])
        moved = builders.transpose(split, [0, 3, 4, 1, 5, 2])
    elif mode == "CRD":
        split = builders.reshape(data, [n, depth, block, block, h, w])
        moved = builders.transpose(split, [0, 1, 4, 2, 5, 3])
    else:
        raise ctx.unsupported_attribute("mode", mode, "DCR, CRD")
    return [builders.reshape(moved, [n, depth, h * block, w * block])]


@lowering("SpaceToDepth", since=1)
@lowering("SpaceToDepth", since=13)  # 13 widened types
@lowering("SpaceToDepth", since=28)  # 28 added mode (DCR or CRD) and widened types
def lower_space_to_depth(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value]:
    """Lowers SpaceToDepth to reshape, transpose, reshape (the inverse of DepthToSpace).

    Spec: SpaceToDepth-1/13/28.
    Shapes: data [N, C, H, W] (symbolic dims allowed), H and W divisible by blocksize; result
        [N, C*b**2, H/b, W/b]. Symbolic H, W are assumed divisible (``floor(H / b)``); an
        indivisible feed fails the dynamic_reshape's element count when refined or run.
    Dtypes: any.
    Raises: UnsupportedAttributeError for another mode; ShapeError for a rank other than 4 or
        H, W not divisible by blocksize.
    """
    data = ctx.input(0)
    n, c, h, w = _nchw(ctx, data)
    block = node.attr_int("blocksize")
    mode = node.attr_str("mode", "DCR") if node.since_version >= 28 else "DCR"
    if block <= 0 or any(isinstance(d, int) and d % block for d in (h, w)):
        raise ctx.error(f"spatial dims {h}x{w} are not divisible by blocksize {block}", ShapeError)
    split = builders.reshape(data, [n, c, floor_div(h, block), block, floor_div(w, block), block])
    if mode == "DCR":
        moved = builders.transpose(split, [0, 3, 5, 1, 2, 4])
    elif mode == "CRD":
        moved = builders.transpose(split, [0, 1, 3, 5, 2, 4])
    else:
        raise ctx.unsupported_attribute("mode", mode, "DCR, CRD")
    return [builders.reshape(moved, [n, c * block * block, floor_div(h, block), floor_div(w, block)])]


def _nchw(ctx: LoweringContext, value: ir.Value) -> tuple[Dim, Dim, Dim, Dim]:
    shape = builders.dims_of(value)
    if len(shape) != 4:
        raise ctx.error(f"expects a rank-4 [N, C, H, W] input, got shape {list(shape)}", ShapeError)
    return shape  # type: ignore[return-value]
