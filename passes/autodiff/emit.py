"""Op builders the VJP rules use: typed constants, arithmetic, shape ops, reductions.

Every builder emits at the current insertion point under the current location (the transform
sets both) and returns an ``ir.Value``.

Shapes may be dynamic (``?``): :func:`shape` gives :data:`DYNAMIC` for such a dim, and builders
that need a target shape take a *like* value, whose shape is the target, instead of a tuple
(:data:`Like`). Where a dim is dynamic they emit the shape-polymorphic forms the forward
lowering uses: sizes read with ``stablehlo.get_dimension_size``, then
``dynamic_broadcast_in_dim``, ``dynamic_reshape``, ``real_dynamic_slice``, ``dynamic_pad``,
``dynamic_iota``; a static module gets exactly the static ops it got before. Sizes computed at
run time are ``tensor<1xi64>`` values (:func:`dim_size`, :func:`dim_constant`), concatenated
into shape operands by :func:`shape_tensor`. Two ``?`` dims in the same position of operands
of one op are taken to be equal (what StableHLO's verifier and the forward lowering assume);
a ``?`` dim is never broadcast from size 1.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import chlo, stablehlo

from onnx_stablehlo.passes.autodiff.errors import AutodiffError

__all__ = [
    "DYNAMIC",
    "Like",
    "tensor_type",
    "shape",
    "is_static",
    "is_dynamic",
    "dim_size",
    "dim_constant",
    "shape_tensor",
    "rank",
    "element_type",
    "is_float_type",
    "splat",
    "full_like",
    "zeros_like",
    "ones_like",
    "scalar_like",
    "add",
    "sub",
    "mul",
    "div",
    "neg",
    "exp",
    "log",
    "sqrt",
    "rsqrt",
    "sin",
    "cos",
    "power",
    "square",
    "select",
    "compare",
    "convert",
    "broadcast_in_dim",
    "broadcast_to",
    "reshape",
    "transpose",
    "reduce",
    "reduce_sum",
    "pad",
    "slice_",
    "dot_general",
    "i64_attr",
    "clone_ops",
]

DYNAMIC: int = ir.ShapedType.get_dynamic_size()
"""The size :func:`shape` gives for a dynamic (``?``) dim."""

Like = ir.Value | Sequence[int]
"""A target shape: a value whose shape it is (required where a dim is dynamic), or a static
shape."""


def tensor_type(shape_: Sequence[int], element: ir.Type) -> ir.RankedTensorType:
    return ir.RankedTensorType.get([int(d) for d in shape_], element)


def shape(value: ir.Value | ir.Type) -> tuple[int, ...]:
    """The shape of a ranked tensor value or type (:data:`DYNAMIC` for a ``?`` dim)."""
    ty = ir.RankedTensorType(value.type if isinstance(value, ir.Value) else value)
    return tuple(ty.shape)


def is_dynamic(dim: int) -> bool:
    return dim == DYNAMIC


def is_static(value: ir.Value | ir.Type) -> bool:
    """Whether ``value`` (or a type) has a static shape."""
    ty = value.type if isinstance(value, ir.Value) else value
    return ir.RankedTensorType(ty).has_static_shape


def _i64() -> ir.Type:
    return ir.IntegerType.get_signless(64)


def dim_constant(values: int | Sequence[int]) -> ir.Value:
    """A ``tensor<nxi64>`` constant (``tensor<1xi64>`` for one int)."""
    array = np.array([values] if isinstance(values, int) else list(values), dtype=np.int64)
    return stablehlo.ConstantOp(ir.DenseElementsAttr.get(array, type=tensor_type(array.shape, _i64()))).result


def dim_size(value: ir.Value, axis: int) -> ir.Value:
    """The size of ``value``'s ``axis`` as a ``tensor<1xi64>`` (a constant when it is static)."""
    size = shape(value)[axis]
    if not is_dynamic(size):
        return dim_constant(size)
    read = stablehlo.GetDimensionSizeOp(value, axis).result
    return stablehlo.ReshapeOp(tensor_type((1,), _i64()), convert(read, _i64())).result


def shape_tensor(like: Like | Sequence[ir.Value | int]) -> ir.Value:
    """A ``tensor<rank x i64>`` shape operand: of a value, or of per-axis ints and
    ``tensor<1xi64>`` sizes."""
    if isinstance(like, ir.Value):
        parts: list[ir.Value | int] = [dim_size(like, axis) for axis in range(rank(like))]
    else:
        parts = list(like)
    if all(isinstance(p, int) for p in parts):
        return dim_constant([int(p) for p in parts])  # type: ignore[arg-type]
    pieces = [dim_constant(p) if isinstance(p, int) else p for p in parts]
    if len(pieces) == 1:
        return pieces[0]
    return stablehlo.ConcatenateOp(pieces, 0).result


def _target_shape(like: Like) -> tuple[int, ...]:
    return shape(like) if isinstance(like, ir.Value) else tuple(int(d) for d in like)


def _needs_like(like: Like, what: str) -> ir.Value:
    if not isinstance(like, ir.Value):
        raise AutodiffError(f"internal: {what} to the dynamic shape {like} needs a value of that shape")
    return like


def rank(value: ir.Value) -> int:
    return ir.RankedTensorType(value.type).rank


def element_type(value: ir.Value | ir.Type) -> ir.Type:
    ty = value.type if isinstance(value, ir.Value) else value
    return ir.ShapedType(ty).element_type


def is_float_type(ty: ir.Type) -> bool:
    """Whether ``ty`` is a ranked tensor of floats (the values that carry cotangents)."""
    return isinstance(ty, ir.RankedTensorType) and isinstance(ty.element_type, ir.FloatType)


def _scalar_attr(element: ir.Type, value: float | int | bool) -> ir.Attribute:
    if isinstance(element, ir.FloatType):
        return ir.FloatAttr.get(element, float(value))
    return ir.IntegerAttr.get(element, int(value))


def splat(value: float | int | bool, ty: ir.Type, like: ir.Value | None = None) -> ir.Value:
    """A ``stablehlo.constant`` of type ``ty`` with every element ``value``.

    A ``ty`` with dynamic dims takes its sizes from ``like`` (a value of that shape): a rank-0
    constant broadcast with ``dynamic_broadcast_in_dim``.
    """
    ranked = ir.RankedTensorType(ty)
    if not ranked.has_static_shape:
        scalar = splat(value, tensor_type((), ranked.element_type))
        return broadcast_in_dim(scalar, _needs_like(like, "a splat"), [])
    attr = ir.DenseElementsAttr.get_splat(ranked, _scalar_attr(ranked.element_type, value))
    return stablehlo.ConstantOp(attr).result


def full_like(value: ir.Value, scalar: float | int | bool) -> ir.Value:
    return splat(scalar, value.type, value)


def zeros_like(value: ir.Value) -> ir.Value:
    return splat(0, value.type, value)


def ones_like(value: ir.Value) -> ir.Value:
    return splat(1, value.type, value)


def scalar_like(value: ir.Value, scalar: float | int | bool) -> ir.Value:
    """A rank-0 constant of ``value``'s element type."""
    return splat(scalar, tensor_type((), element_type(value)))


def add(a: ir.Value, b: ir.Value) -> ir.Value:
    return stablehlo.AddOp(a, b).result


def sub(a: ir.Value, b: ir.Value) -> ir.Value:
    return stablehlo.SubtractOp(a, b).result


def mul(a: ir.Value, b: ir.Value) -> ir.Value:
    return stablehlo.MulOp(a, b).result


def div(a: ir.Value, b: ir.Value) -> ir.Value:
    return stablehlo.DivOp(a, b).result


def neg(a: ir.Value) -> ir.Value:
    return stablehlo.NegOp(a).result


def exp(a: ir.Value) -> ir.Value:
    return stablehlo.ExpOp(a).result


def log(a: ir.Value) -> ir.Value:
    return stablehlo.LogOp(a).result


def sqrt(a: ir.Value) -> ir.Value:
    return stablehlo.SqrtOp(a).result


def rsqrt(a: ir.Value) -> ir.Value:
    return stablehlo.RsqrtOp(a).result


def sin(a: ir.Value) -> ir.Value:
    return stablehlo.SineOp(a).result


def cos(a: ir.Value) -> ir.Value:
    return stablehlo.CosineOp(a).result


def power(a: ir.Value, b: ir.Value) -> ir.Value:
    return stablehlo.PowOp(a, b).result


def square(a: ir.Value) -> ir.Value:
    return mul(a, a)


def cosh(a: ir.Value) -> ir.Value:
    return chlo.CoshOp(a).result


def sinh(a: ir.Value) -> ir.Value:
    return chlo.SinhOp(a).result


def select(pred: ir.Value, on_true: ir.Value, on_false: ir.Value) -> ir.Value:
    return stablehlo.SelectOp(pred, on_true, on_false).result


def compare(a: ir.Value, b: ir.Value, direction: str) -> ir.Value:
    """``stablehlo.compare`` (``EQ``, ``NE``, ``LT``, ``LE``, ``GT``, ``GE``)."""
    return stablehlo.CompareOp(a, b, stablehlo.ComparisonDirectionAttr.get(direction)).result


def logical_and(a: ir.Value, b: ir.Value) -> ir.Value:
    return stablehlo.AndOp(a, b).result


def convert(value: ir.Value, element: ir.Type) -> ir.Value:
    """``value`` converted to ``element`` (returned as is when it already has that type)."""
    if element_type(value) == element:
        return value
    return stablehlo.ConvertOp(tensor_type(shape(value), element), value).result


def broadcast_in_dim(value: ir.Value, like: Like, dims: Sequence[int]) -> ir.Value:
    """``value`` broadcast to ``like``'s shape, its dims going to ``dims``.

    ``dynamic_broadcast_in_dim`` with ``like``'s sizes where the target has a ``?`` dim.
    """
    shape_ = _target_shape(like)
    ty = tensor_type(shape_, element_type(value))
    if ty == value.type and list(dims) == list(range(len(shape_))):
        return value
    if ty.has_static_shape:
        return stablehlo.BroadcastInDimOp(ty, value, i64_attr(dims)).result
    target = _needs_like(like, "a broadcast")
    return stablehlo.DynamicBroadcastInDimOp(ty, value, shape_tensor(target), i64_attr(dims)).result


def broadcast_to(value: ir.Value, like: Like) -> ir.Value:
    """A rank-0 value or one of ``like``'s shape broadcast to ``like``'s shape."""
    if shape(value) == _target_shape(like):
        return value
    return broadcast_in_dim(value, like, [])


def reshape(value: ir.Value, like: Like) -> ir.Value:
    """``value`` reshaped to ``like``'s shape (``dynamic_reshape`` where it has a ``?`` dim)."""
    shape_ = _target_shape(like)
    if shape(value) == shape_ and is_static(value):
        return value
    ty = tensor_type(shape_, element_type(value))
    if ty.has_static_shape:
        return stablehlo.ReshapeOp(ty, value).result
    target = _needs_like(like, "a reshape")
    if value.type == ty and rank(value) <= 1:
        return value
    return stablehlo.DynamicReshapeOp(ty, value, shape_tensor(target)).result


def transpose(value: ir.Value, permutation: Sequence[int]) -> ir.Value:
    if list(permutation) == list(range(len(permutation))):
        return value
    return stablehlo.TransposeOp(value, i64_attr(permutation)).result


_REDUCERS = {"add": stablehlo.AddOp, "max": stablehlo.MaxOp, "min": stablehlo.MinOp}


def reduce(value: ir.Value, dims: Sequence[int], kind: str, init: ir.Value) -> ir.Value:
    """``stablehlo.reduce`` of ``value`` over ``dims`` with an ``add``/``max``/``min`` body."""
    dims = sorted(set(int(d) for d in dims))
    element = element_type(value)
    out_shape = [d for i, d in enumerate(shape(value)) if i not in dims]
    op = stablehlo.ReduceOp([tensor_type(out_shape, element)], [value], [init], i64_attr(dims))
    scalar = tensor_type((), element)
    block = op.body.blocks.append(scalar, scalar)
    with ir.InsertionPoint(block):
        stablehlo.ReturnOp([_REDUCERS[kind](block.arguments[0], block.arguments[1]).result])
    return op.result


def reduce_sum(value: ir.Value, dims: Sequence[int]) -> ir.Value:
    """Sum of ``value`` over ``dims`` (``value`` itself when ``dims`` is empty)."""
    if not list(dims):
        return value
    return reduce(value, dims, "add", scalar_like(value, 0))


def pad(
    value: ir.Value,
    padding_value: ir.Value,
    low: Sequence[int],
    high: Sequence[int | ir.Value],
    interior: Sequence[int],
) -> ir.Value:
    """``stablehlo.pad``; ``dynamic_pad`` when some ``high`` entry is a ``tensor<1xi64>`` size
    computed at run time."""
    if all(isinstance(h, int) for h in high):
        if not any(low) and not any(high) and not any(interior):
            return value
        return stablehlo.PadOp(value, padding_value, i64_attr(low), i64_attr(high), i64_attr(interior)).result
    out = []
    for d, lo, hi, mid in zip(shape(value), low, high, interior):
        static = not is_dynamic(d) and isinstance(hi, int)
        out.append(lo + hi + d + max(d - 1, 0) * mid if static else DYNAMIC)
    return stablehlo.DynamicPadOp(
        tensor_type(out, element_type(value)),
        value,
        padding_value,
        dim_constant(list(low)),
        shape_tensor(high),
        dim_constant(list(interior)),
    ).result


def slice_(value: ir.Value, start: Sequence[int], limit: Sequence[int], strides: Sequence[int]) -> ir.Value:
    """``stablehlo.slice``; a ``limit`` entry :data:`DYNAMIC` on a ``?`` dim means its end
    (``real_dynamic_slice`` then)."""
    value_shape = shape(value)
    if list(start) == [0] * len(start) and tuple(limit) == value_shape and all(s == 1 for s in strides):
        return value
    if not any(is_dynamic(d) for d in limit):
        return stablehlo.SliceOp(value, i64_attr(start), i64_attr(limit), i64_attr(strides)).result
    limits: list[ir.Value | int] = []
    out = []
    for axis, (lo, hi, stride) in enumerate(zip(start, limit, strides)):
        limits.append(dim_size(value, axis) if is_dynamic(hi) else int(hi))
        out.append(DYNAMIC if is_dynamic(hi) else max(0, -(-(hi - lo) // stride)))
    return stablehlo.RealDynamicSliceOp(
        tensor_type(out, element_type(value)),
        value,
        dim_constant(list(start)),
        shape_tensor(limits),
        dim_constant(list(strides)),
    ).result


def dot_general(
    lhs: ir.Value,
    rhs: ir.Value,
    lhs_batch: Sequence[int],
    rhs_batch: Sequence[int],
    lhs_contracting: Sequence[int],
    rhs_contracting: Sequence[int],
    precision_config: ir.Attribute | None = None,
) -> ir.Value:
    """``stablehlo.dot_general``; result dims: batch, lhs free, rhs free (``lhs``'s element type)."""
    lhs_shape, rhs_shape = shape(lhs), shape(rhs)
    lhs_free = [d for i, d in enumerate(lhs_shape) if i not in lhs_batch and i not in lhs_contracting]
    rhs_free = [d for i, d in enumerate(rhs_shape) if i not in rhs_batch and i not in rhs_contracting]
    out = [lhs_shape[i] for i in lhs_batch] + lhs_free + rhs_free
    numbers = stablehlo.DotDimensionNumbers.get(
        lhs_batching_dimensions=list(lhs_batch),
        rhs_batching_dimensions=list(rhs_batch),
        lhs_contracting_dimensions=list(lhs_contracting),
        rhs_contracting_dimensions=list(rhs_contracting),
    )
    return stablehlo.DotGeneralOp(
        tensor_type(out, element_type(lhs)), lhs, rhs, numbers, precision_config=precision_config
    ).result


def i64_attr(values: Sequence[int]) -> ir.DenseI64ArrayAttr:
    return ir.DenseI64ArrayAttr.get([int(v) for v in values])


def clone_ops(
    ops: Sequence[ir.Operation], ip: ir.InsertionPoint, mapping: dict[ir.Value, ir.Value]
) -> list[ir.Operation]:
    """Clones ``ops`` (with their regions) at ``ip``, replacing uses of ``mapping``'s keys.

    ``mapping`` gains each old result -> its clone's result, so later ops (and ops nested in
    their regions) use the clones.
    """
    clones = []
    for old in ops:
        clone = old.clone(ip=ip)

        def remap(op: ir.Operation) -> ir.WalkResult:
            for index, operand in enumerate(op.operands):
                replacement = mapping.get(operand)
                if replacement is not None:
                    op.operands[index] = replacement
            return ir.WalkResult.ADVANCE

        clone.walk(remap)
        for a, b in zip(old.results, clone.results):
            mapping[a] = b
        clones.append(clone)
    return clones
