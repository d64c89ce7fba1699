"""Small StableHLO builders shared by the lowering rules.

Each function emits ops at the current insertion point and location (the importer sets both
per ONNX node) and returns ``ir.Value``s. Shapes here are static tuples of ints; a dim that is
dynamic in MLIR reads as ``None``.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator, Sequence
from typing import Protocol

import numpy as np
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import chlo, stablehlo

from onnx_stablehlo.frontend import dtypes
from onnx_stablehlo.frontend.dtypes import DataType
from onnx_stablehlo.frontend.shapes import Dim, sym_max

class DimResolver(Protocol):
    """What the importer provides while lowering, so builders handle symbolic dims.

    ``dims_of`` gives a value's dims (ints, or :class:`SymbolicDim` for ``?`` dims);
    ``dim_value`` emits a dim's run-time size as a ``tensor<i64>`` scalar; ``record`` tells the
    importer the symbolic shape of a value a builder just made.
    """

    def dims_of(self, value: ir.Value) -> tuple[Dim, ...]: ...

    def dim_value(self, dim: Dim) -> ir.Value: ...

    def record(self, value: ir.Value, dims: Sequence[Dim]) -> None: ...


_RESOLVER: contextvars.ContextVar[DimResolver | None] = contextvars.ContextVar("dim_resolver", default=None)


_FLOAT64_MATH: contextvars.ContextVar[bool] = contextvars.ContextVar("float64_math", default=True)


@contextlib.contextmanager
def _bound(variable: contextvars.ContextVar, value: object) -> Iterator[None]:
    token = variable.set(value)
    try:
        yield
    finally:
        variable.reset(token)


def dim_resolver(resolver: DimResolver) -> contextlib.AbstractContextManager[None]:
    """Makes ``resolver`` the one builders use inside the block (the importer's lifetime)."""
    return _bound(_RESOLVER, resolver)


def float64_math(allowed: bool) -> contextlib.AbstractContextManager[None]:
    """Whether builders may compute in float64 inside the block (``erf``); off for TPU."""
    return _bound(_FLOAT64_MATH, allowed)


def float64_allowed() -> bool:
    """Whether rules may compute in float64 for accuracy here (see :func:`float64_math`)."""
    return _FLOAT64_MATH.get()


def _resolver() -> DimResolver:
    resolver = _RESOLVER.get()
    if resolver is None:
        raise ValueError("a dynamic dim needs the importer's dim resolver (lower through import_model)")
    return resolver


def erase(op: ir.Operation) -> None:
    """Erases ``op`` (and what it holds) after the importer forgets its values' dims and sizes.

    Use it for every op a builder throws away (placeholders, a failed If): see
    ``DimResolver.forget`` (frontend/dim_resolver.py) for why erasing directly is unsafe.
    """
    forget = getattr(_RESOLVER.get(), "forget", None)
    if forget is not None:
        forget(op)
    op.erase()


def _is_static(dims: Sequence[Dim]) -> bool:
    return all(isinstance(d, (int, np.integer)) for d in dims)


def dims_of(value: ir.Value) -> tuple[Dim, ...]:
    """The dims of a value: ints where static, :class:`SymbolicDim` where ``?``."""
    shape = shape_of(value)
    if all(d is not None for d in shape):
        return shape  # type: ignore[return-value]
    return _resolver().dims_of(value)


def dim_value(dim: Dim) -> ir.Value:
    """A dim's size at run time as a ``tensor<i64>`` scalar."""
    if isinstance(dim, (int, np.integer)):
        return constant(np.array(int(dim), np.int64))
    return _resolver().dim_value(dim)


def shape_tensor(dims: Sequence[Dim]) -> ir.Value:
    """A ``tensor<Nxi64>`` holding ``dims`` (constant where static)."""
    if _is_static(dims):
        return constant(np.array([int(d) for d in dims], np.int64))
    parts = [reshape(dim_value(d), (1,)) for d in dims]
    if len(parts) == 1:
        return parts[0]
    return stablehlo.ConcatenateOp(parts, ir.IntegerAttr.get(ir.IntegerType.get_signless(64), 0)).result


def record(value: ir.Value, dims: Sequence[Dim]) -> ir.Value:
    """Tells the importer the symbolic dims of a value a rule just built; returns ``value``."""
    if not _is_static(dims):
        _resolver().record(value, dims)
    return value


_record = record


__all__ = [
    "DimResolver",
    "dim_resolver",
    "dims_of",
    "dim_value",
    "shape_tensor",
    "record",
    "iota",
    "tensor_type",
    "shape_of",
    "dtype_of",
    "rank_of",
    "constant",
    "splat",
    "full_like",
    "convert",
    "reshape",
    "broadcast_to",
    "broadcast_shapes",
    "broadcast_values",
    "transpose",
    "i64_array",
    "reduce",
    "normalize_axis",
]


def tensor_type(shape: Sequence[int | None], dtype: DataType) -> ir.RankedTensorType:
    """``tensor<...>`` of ``dtype``; ``None`` dims become ``?``."""
    dynamic = ir.ShapedType.get_dynamic_size()
    dims = [dynamic if d is None or not isinstance(d, int) else int(d) for d in shape]
    return ir.RankedTensorType.get(dims, dtypes.mlir_element_type(dtype))


def shape_of(value: ir.Value) -> tuple[int | None, ...]:
    """The shape of a ranked tensor value, ``None`` for a dynamic dim."""
    ty = ir.RankedTensorType(value.type)
    return tuple(None if ty.is_dynamic_dim(i) else ty.get_dim_size(i) for i in range(ty.rank))


def static_shape_of(value: ir.Value) -> tuple[int, ...]:
    """The shape of a value that must be static (raises ValueError otherwise)."""
    shape = shape_of(value)
    if any(d is None for d in shape):
        raise ValueError(f"expected a static shape, got {value.type}")
    return shape  # type: ignore[return-value]


def rank_of(value: ir.Value) -> int:
    return ir.RankedTensorType(value.type).rank


def dtype_of(value: ir.Value) -> DataType:
    """The ONNX dtype of a tensor value."""
    return dtypes.dtype_of_element_type(ir.RankedTensorType(value.type).element_type)


def constant(array: np.ndarray, dtype: DataType | None = None) -> ir.Value:
    """``stablehlo.constant`` holding ``array`` (converted to ``dtype`` when given).

    Splat arrays are emitted as splat attributes, so ``dense<0.0>`` stays small in the text.
    """
    if dtype is None:
        dtype = dtypes.dtype_of_numpy(array.dtype)
    array = np.asarray(array).astype(dtypes.numpy_dtype(dtype), copy=False)
    array = np.ascontiguousarray(array).reshape(array.shape)  # keeps 0-d arrays 0-d
    ty = tensor_type(array.shape, dtype)
    if array.size > 1 and _is_splat(array):
        attr = ir.DenseElementsAttr.get_splat(ty, _scalar_attr(array.reshape(-1)[0], dtype))
    else:
        attr = ir.DenseElementsAttr.get(_buffer(array, dtype), type=ty)
    return stablehlo.ConstantOp(attr).result


def _is_splat(array: np.ndarray) -> bool:
    flat = array.reshape(-1)
    raw = flat.view(np.uint8).reshape(flat.size, -1)
    return bool(np.all(raw == raw[0]))


def _buffer(array: np.ndarray, dtype: DataType) -> np.ndarray:
    if dtype == DataType.BOOL:
        return array.astype(np.bool_)
    if array.dtype.kind == "V" or array.dtype.type.__module__.startswith("ml_dtypes"):
        # bfloat16, float8, int4 ...: MLIR reads the raw bytes for the given element type.
        return array.view(np.dtype(f"u{array.dtype.itemsize}"))
    return array


def _scalar_attr(value: np.generic, dtype: DataType) -> ir.Attribute:
    element_type = dtypes.mlir_element_type(dtype)
    ty = ir.RankedTensorType.get([], element_type)
    return ir.DenseElementsAttr.get(_buffer(np.asarray(value).reshape(()), dtype), type=ty).get_splat_value()


def splat(value: float | int | bool, dtype: DataType, shape: Sequence[Dim] = ()) -> ir.Value:
    """A tensor of ``shape`` filled with ``value`` (a constant when static)."""
    scalar = np.array(value, dtype=dtypes.numpy_dtype(dtype))
    if _is_static(shape) and dtype not in (DataType.COMPLEX64, DataType.COMPLEX128):  # a splat attribute, without building the full array
        attr = ir.DenseElementsAttr.get_splat(tensor_type([int(d) for d in shape], dtype), _scalar_attr(scalar, dtype))
        return stablehlo.ConstantOp(attr).result
    scalar = constant(scalar, dtype)
    return broadcast_to(scalar, shape, dims=())


def full_like(x: ir.Value, value: float | int | bool) -> ir.Value:
    """A tensor of ``x``'s shape (symbolic dims allowed) and dtype filled with ``value``."""
    return splat(value, dtype_of(x), dims_of(x))


def convert(value: ir.Value, dtype: DataType) -> ir.Value:
    """``stablehlo.convert`` to ``dtype`` (no op when the dtype already matches).

    Bool targets compare with zero, as ONNX Cast does (``convert`` to ``i1`` would truncate).
    """
    source = dtype_of(value)
    if source == dtype:
        return value
    if dtype == DataType.BOOL and source != DataType.BOOL:
        zero = splat(0, source, dims_of(value))
        return compare(value, zero, "NE")
    result_type = tensor_type(shape_of(value), dtype)
    return stablehlo.ConvertOp(result_type, value).result


def _constant_source(value: ir.Value) -> ir.Value | None:
    """The ``stablehlo.constant`` result that ``value`` broadcasts, reshapes or converts, else None."""
    for _ in range(4):
        owner = value.owner
        if isinstance(owner, ir.Block):
            return None
        op = owner.operation
        if op.name == "stablehlo.constant":
            return value
        if op.name not in ("stablehlo.broadcast_in_dim", "stablehlo.reshape", "stablehlo.convert"):
            return None
        value = op.operands[0]
    return None


def divide(lhs: ir.Value, rhs: ir.Value) -> ir.Value:
    """``lhs / rhs`` (same shapes), correctly rounded like ONNX Runtime's division.

    XLA's algebraic simplifier rewrites a float division by a constant into a multiplication by
    the rounded reciprocal (``x / 169`` becomes ``x * 0.00591716``): one ulp away from the true
    quotient, and LLVM may then contract the multiplication with a following subtraction into an
    FMA (a softmax after an average pool then sees ``x - max(x) != 0`` for the maximum). A constant
    divisor of a float type therefore passes through ``stablehlo.optimization_barrier`` at its
    full shape (barriering only the scalar is not enough: XLA also rewrites a division by any
    broadcast scalar). Integer and non-constant divisions are plain ``stablehlo.divide``.
    """
    source = _constant_source(rhs) if dtypes.is_float(dtype_of(rhs)) else None
    if source is None:
        return stablehlo.DivOp(lhs, rhs).result
    (rhs,) = stablehlo.OptimizationBarrierOp([rhs]).results
    return stablehlo.DivOp(lhs, rhs).result


# erf(x) / x as a polynomial in t = x*x/8 - 1 (|x| <= 4), lowest order first: tools/fit_erf.py.
_ERF_COEFFICIENTS = (
    0.3535309956441155,
    -0.17657623321204846,
    0.1316751167236021,
    -0.1077104490414851,
    0.09020900091822269,
    -0.07472772604291059,
    0.059886799520317696,
    -0.04576648219343254,
    0.033061469312073107,
    -0.02246618228827233,
    0.014345736370187677,
    -0.008630040847743426,
    0.004864629097372639,
    -0.0025303514504570333,
    0.001272321840892123,
    -0.0006730914809618823,
    0.00029918311337250996,
    -7.231423106077696e-05,
    3.107333479309528e-05,
    -3.6714682068024315e-05,
    1.3255744908573331e-05,
)


def erf(x: ir.Value) -> ir.Value:
    """``erf(x)`` for an ONNX Erf or exact Gelu; float32 correctly rounded on 99.99% of inputs.

    XLA's float32 erf (``chlo.erf``) is up to 5 ulp off and correctly rounded on less than half
    of GELU-sized inputs; onnxruntime's MLAS is within one ulp and correctly rounded on 85%.
    int8 models amplify the difference (a DynamicQuantizeLinear after GELU rounds the other
    way). For float32, ``x`` is clamped to [-4, 4] (float32 erf is +-1 beyond 3.92), and
    ``x * P(x*x/8 - 1)`` is evaluated in float64 by Horner's rule and rounded once, P being the
    degree-20 fit of erf(x)/x that ``tools/fit_erf.py`` makes (relative error 1e-14; at most
    1 ulp off, and only where erf lies within 1e-14 of a float32 rounding boundary). This costs
    about 15% over ``chlo.erf`` on XLA CPU and needs float64 on the device: where the importer
    disallows float64 (``import_model(float64_math=False)``, which ``CompiledModel`` does for
    TPU, whose float64 is emulated) it is ``chlo.erf``. NaN stays NaN, the
    sign of zero is kept. Other dtypes use ``chlo.erf`` (float16/bfloat16 are computed in float32
    there and rounded once more, float64 is already accurate).

    Source: Abramowitz & Stegun 7.1.1 (definition); the fit is ours.
    """
    if dtype_of(x) != DataType.FLOAT or not _FLOAT64_MATH.get():
        return chlo.ErfOp(x).result
    dims = dims_of(x)
    bound = constant(np.array(4.0, np.float64))
    wide = stablehlo.ClampOp(stablehlo.NegOp(bound).result, convert(x, DataType.DOUBLE), bound).result

    def double(value: float) -> ir.Value:
        return splat(value, DataType.DOUBLE, dims)

    t = stablehlo.SubtractOp(stablehlo.MulOp(stablehlo.MulOp(wide, wide).result, double(0.125)).result, double(1.0))
    poly = double(_ERF_COEFFICIENTS[-1])
    for coefficient in _ERF_COEFFICIENTS[-2::-1]:
        poly = stablehlo.AddOp(stablehlo.MulOp(poly, t.result).result, double(coefficient)).result
    return record(convert(stablehlo.MulOp(wide, poly).result, DataType.FLOAT), dims)


def rounded_product(value: ir.Value) -> ir.Value:
    """``value`` itself, made opaque to FMA contraction when it is a float ``stablehlo.multiply``.

    XLA CPU compiles with LLVM's FP-op fusion on, so ``a * b + c`` inside one fused kernel becomes
    ``fma(a, b, c)``, which skips the rounding of ``a * b``. ONNX runs Mul and Add as two ops, each
    rounded (onnxruntime does so at every optimization level), and int8 models amplify the
    difference: a dequantized ``MatMulInteger`` output plus bias one ulp off flips a later
    DynamicQuantizeLinear rounding. ``select(p == p, p, NaN)`` is ``p`` for every ``p`` (a NaN
    stays NaN) and neither XLA nor LLVM folds it, so the product is rounded before the addition.
    (A no-op ``reduce_precision`` or a bitcast round trip does not stop the contraction; measured.)
    Values not produced by a multiply (through broadcasts and reshapes) are returned unchanged.
    """
    if not dtypes.is_float(dtype_of(value)):
        return value
    source = value
    for _ in range(4):
        owner = source.owner
        if isinstance(owner, ir.Block):
            return value
        name = owner.operation.name
        if name == "stablehlo.multiply":
            nan = splat(float("nan"), dtype_of(value), dims_of(value))
            return stablehlo.SelectOp(compare(value, value, "EQ"), value, nan).result
        if name not in ("stablehlo.broadcast_in_dim", "stablehlo.reshape", "stablehlo.dynamic_broadcast_in_dim"):
            return value
        source = owner.operation.operands[0]
    return value


def compare(lhs: ir.Value, rhs: ir.Value, direction: str) -> ir.Value:
    """``stablehlo.compare`` with the comparison type chosen from the operand dtype."""
    dtype = dtype_of(lhs)
    if dtypes.is_float(dtype):
        kind = "FLOAT"
    elif dtypes.is_unsigned_int(dtype) or dtype == DataType.BOOL:
        kind = "UNSIGNED"
    else:
        kind = "SIGNED"
    return stablehlo.compare(
        lhs,
        rhs,
        stablehlo.ComparisonDirectionAttr.get(direction),
        compare_type=stablehlo.ComparisonTypeAttr.get(kind),
    )


def reshape(value: ir.Value, shape: Sequence[Dim]) -> ir.Value:
    """``stablehlo.reshape`` to ``shape``; ``dynamic_reshape`` when a dim is symbolic."""
    if _is_static(shape) and all(d is not None for d in shape_of(value)):
        shape = tuple(int(d) for d in shape)
        if shape_of(value) == shape:
            return value
        return stablehlo.ReshapeOp(tensor_type(shape, dtype_of(value)), value).result
    if tuple(dims_of(value)) == tuple(shape):
        return value
    result_type = tensor_type(shape, dtype_of(value))
    return _record(stablehlo.DynamicReshapeOp(result_type, value, shape_tensor(shape)).result, shape)


def slice_axis(value: ir.Value, axis: int, start: Dim, limit: Dim) -> ir.Value:
    """``value[..., start:limit, ...]`` along ``axis`` (bounds within the dim; symbolic allowed).

    ``stablehlo.slice`` when every dim and bound is static, else ``real_dynamic_slice`` whose
    other limits are the run-time dims; the whole axis returns ``value`` itself.
    """
    shape = dims_of(value)
    if start == 0 and limit == shape[axis]:
        return value
    begin: list[Dim] = [0] * len(shape)
    end = list(shape)
    begin[axis], end[axis] = start, limit
    if _is_static(end) and _is_static(begin):
        ones = i64_array([1] * len(shape))
        return stablehlo.SliceOp(value, i64_array(begin), i64_array(end), ones).result
    out = list(shape)
    out[axis] = limit - start
    result = stablehlo.RealDynamicSliceOp(
        tensor_type(out, dtype_of(value)),
        value,
        shape_tensor(begin),
        shape_tensor(end),
        shape_tensor([1] * len(shape)),
    ).result
    return _record(result, out)


def i64_array(values: Sequence[int]) -> ir.Attribute:
    """A ``array<i64: ...>`` attribute (dims, permutations, ...)."""
    return ir.DenseI64ArrayAttr.get([int(v) for v in values])


def transpose(value: ir.Value, permutation: Sequence[int]) -> ir.Value:
    """``stablehlo.transpose`` (no op for the identity permutation)."""
    permutation = [int(p) for p in permutation]
    if permutation == list(range(len(permutation))):
        return value
    result = stablehlo.TransposeOp(value, i64_array(permutation)).result
    if any(d is None for d in shape_of(value)):
        source = dims_of(value)
        record(result, [source[p] for p in permutation])
    return result


def take(x: ir.Value, indices: ir.Value, axis: int) -> ir.Value:
    """``numpy.take(x, indices, axis)`` for in-range int64 ``[count]`` indices (symbolic dims allowed)."""
    shape = dims_of(x)
    (count,) = dims_of(indices)
    rank = len(shape)
    numbers = stablehlo.GatherDimensionNumbers.get(
        offset_dims=[d for d in range(rank) if d != axis],
        collapsed_slice_dims=[axis],
        operand_batching_dims=[],
        start_indices_batching_dims=[],
        start_index_map=[axis],
        index_vector_dim=1,
    )
    slice_sizes = [1 if d == axis else size for d, size in enumerate(shape)]
    out_shape = [count if d == axis else size for d, size in enumerate(shape)]
    result_type = tensor_type(out_shape, dtype_of(x))
    points = reshape(indices, [count, 1])
    if all(isinstance(d, int) for d in slice_sizes):
        result = stablehlo.GatherOp(x, points, numbers, i64_array(slice_sizes), results=[result_type]).result
    else:
        result = stablehlo.DynamicGatherOp(
            x, points, shape_tensor(slice_sizes), numbers, results=[result_type]
        ).result
    return record(result, out_shape)


def broadcast_shapes(*shapes: Sequence[Dim]) -> tuple[Dim, ...]:
    """Numpy (multidirectional) broadcasting of shapes with symbolic dims.

    A static size ``N != 1`` against a symbolic dim gives ``N`` (the only valid outcome). Two
    different symbolic dims are merged by the importer's resolver (``merge``: the equality is
    assumed, recorded as a :class:`DimEquality` and checked at run time) when both are made of
    graph-input symbols, and broadcast to ``max(a, b)`` otherwise.

    Raises:
        ValueError: static dims that do not broadcast.
    """
    if all(_is_static(s) for s in shapes):
        try:
            return tuple(np.broadcast_shapes(*[tuple(int(d) for d in s) for s in shapes]))
        except ValueError:
            raise ValueError(f"shapes {[list(map(int, s)) for s in shapes]} do not broadcast") from None
    rank = max(len(s) for s in shapes)
    result: list[Dim] = [1] * rank
    resolver = _RESOLVER.get()
    for shape in shapes:
        padded = (1,) * (rank - len(shape)) + tuple(shape)
        for axis, dim in enumerate(padded):
            current = result[axis]
            if isinstance(current, int) and isinstance(dim, int) and current != 1 and dim != 1 and current != dim:
                raise ValueError(f"shapes {[tuple(map(str, s)) for s in shapes]} do not broadcast")
            if current == dim or dim == 1:
                continue
            if current == 1:
                result[axis] = dim
            elif isinstance(current, int) or isinstance(dim, int):
                # A known size N != 1 against an unknown one: valid inputs give N (recorded, so
                # a feed with another size is a clear error and a 1 is lowered on its own).
                result[axis] = current if isinstance(current, int) else dim
                assume = getattr(resolver, "assume_equal", None)
                if assume is not None:
                    assume(result[axis], dim if isinstance(current, int) else current)
            else:
                merge = getattr(resolver, "merge", None)
                result[axis] = merge(current, dim) if merge is not None else sym_max(current, dim)
    return tuple(result)


def unify(a: Dim, b: Dim) -> Dim:
    """The size of two dims that an op requires to be equal (MatMul's K, Concat off its axis).

    Equal dims give themselves; a static size wins over a symbol; two different graph-input
    symbols are merged by the importer's resolver, as a broadcast of them is (the equality is
    recorded on the module and checked against each call's feeds).
    """
    return broadcast_shapes((a,), (b,))[0]


def broadcast_to(value: ir.Value, shape: Sequence[int], dims: Sequence[int] | None = None) -> ir.Value:
    """``stablehlo.broadcast_in_dim`` of ``value`` to ``shape``.

    Args:
        value: the operand.
        shape: the result shape (symbolic dims give ``dynamic_broadcast_in_dim``).
        dims: result dims the operand's dims map to; default numpy-style trailing alignment.
    """
    source = dims_of(value)
    if dims is None:
        if tuple(source) == tuple(shape):
            return value
        dims = range(len(shape) - len(source), len(shape))
    result_type = tensor_type(shape, dtype_of(value))
    if _is_static(shape) and _is_static(source):
        return stablehlo.BroadcastInDimOp(result_type, value, i64_array(dims)).result
    op = stablehlo.DynamicBroadcastInDimOp(result_type, value, shape_tensor(shape), i64_array(dims))
    return _record(op.result, shape)


def broadcast_values(*values: ir.Value) -> list[ir.Value]:
    """Broadcasts operands to their common numpy-broadcast shape."""
    shape = broadcast_shapes(*[dims_of(v) for v in values])
    return [broadcast_to(v, shape) for v in values]


def iota(shape: Sequence[Dim], dimension: int, dtype: DataType) -> ir.Value:
    """``stablehlo.iota`` (``dynamic_iota`` when a dim is symbolic)."""
    result_type = tensor_type(shape, dtype)
    attr = ir.IntegerAttr.get(ir.IntegerType.get_signless(64), dimension)
    if _is_static(shape):
        return stablehlo.IotaOp(result_type, attr).result
    return _record(stablehlo.DynamicIotaOp(result_type, shape_tensor(shape), attr).result, shape)


def normalize_axis(axis: int, rank: int) -> int:
    """Maps a negative axis into ``[0, rank)``.

    Raises:
        ValueError: the axis is out of range.
    """
    if not -rank <= axis < max(rank, 1):
        raise ValueError(f"axis {axis} is out of range for rank {rank}")
    return axis + rank if axis < 0 else axis


def reduce(
    value: ir.Value,
    axes: Sequence[int],
    body_op: type,
    init: float | int | bool,
    keepdims: bool = False,
) -> ir.Value:
    """``stablehlo.reduce`` of ``value`` over ``axes`` with a binary body op.

    Args:
        value: the operand (symbolic dims allowed).
        axes: normalized axes to reduce.
        body_op: the stablehlo op class of the body (``stablehlo.AddOp``, ``MaxOp`` ...).
        init: the init value (identity of the body op).
        keepdims: keep reduced dims as size 1.
    """
    dtype = dtype_of(value)
    shape = dims_of(value)
    axes = sorted(set(axes))
    init_value = splat(init, dtype)
    scalar_type = tensor_type((), dtype)
    out_shape = [d for i, d in enumerate(shape) if i not in axes]
    op = stablehlo.ReduceOp([tensor_type(out_shape, dtype)], [value], [init_value], i64_array(axes))
    block = op.body.blocks.append(scalar_type, scalar_type)
    with ir.InsertionPoint(block):
        stablehlo.ReturnOp([body_op(block.arguments[0], block.arguments[1]).result])
    result = _record(op.result, out_shape)
    if keepdims:
        result = reshape(result, [1 if i in axes else d for i, d in enumerate(shape)])
    return result
