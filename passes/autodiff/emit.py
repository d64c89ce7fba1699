"""Op builders the VJP rules use: typed constants, arithmetic, shape ops, reductions.

Every builder emits at the current insertion point under the current location (the transform
sets both) and returns an ``ir.Value``. Shapes are static: the gradient transform checks that
before any rule runs.
"""

from __future__ import annotations

from collections.abc import Sequence

from jaxlib.mlir import ir
from jaxlib.mlir.dialects import chlo, stablehlo

__all__ = [
    "tensor_type",
    "shape",
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


def tensor_type(shape_: Sequence[int], element: ir.Type) -> ir.RankedTensorType:
    return ir.RankedTensorType.get([int(d) for d in shape_], element)


def shape(value: ir.Value | ir.Type) -> tuple[int, ...]:
    """The static shape of a ranked tensor value or type."""
    ty = ir.RankedTensorType(value.type if isinstance(value, ir.Value) else value)
    return tuple(ty.shape)


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


def splat(value: float | int | bool, ty: ir.Type) -> ir.Value:
    """A ``stablehlo.constant`` of type ``ty`` with every element ``value``."""
    ranked = ir.RankedTensorType(ty)
    attr = ir.DenseElementsAttr.get_splat(ranked, _scalar_attr(ranked.element_type, value))
    return stablehlo.ConstantOp(attr).result


def full_like(value: ir.Value, scalar: float | int | bool) -> ir.Value:
    return splat(scalar, value.type)


def zeros_like(value: ir.Value) -> ir.Value:
    return splat(0, value.type)


def ones_like(value: ir.Value) -> ir.Value:
    return splat(1, value.type)


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


def broadcast_in_dim(value: ir.Value, shape_: Sequence[int], dims: Sequence[int]) -> ir.Value:
    ty = tensor_type(shape_, element_type(value))
    if ty == value.type and list(dims) == list(range(len(shape_))):
        return value
    return stablehlo.BroadcastInDimOp(ty, value, i64_attr(dims)).result


def broadcast_to(value: ir.Value, shape_: Sequence[int]) -> ir.Value:
    """A rank-0 value or one of ``shape_`` broadcast to ``shape_``."""
    if shape(value) == tuple(shape_):
        return value
    return broadcast_in_dim(value, shape_, [])


def reshape(value: ir.Value, shape_: Sequence[int]) -> ir.Value:
    if shape(value) == tuple(shape_):
        return value
    return stablehlo.ReshapeOp(tensor_type(shape_, element_type(value)), value).result


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
    high: Sequence[int],
    interior: Sequence[int],
) -> ir.Value:
    if not any(low) and not any(high) and not any(interior):
        return value
    return stablehlo.PadOp(value, padding_value, i64_attr(low), i64_attr(high), i64_attr(interior)).result


def slice_(value: ir.Value, start: Sequence[int], limit: Sequence[int], strides: Sequence[int]) -> ir.Value:
    if list(start) == [0] * len(start) and tuple(limit) == shape(value) and all(s == 1 for s in strides):
        return value
    return stablehlo.SliceOp(value, i64_attr(start), i64_attr(limit), i64_attr(strides)).result


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
