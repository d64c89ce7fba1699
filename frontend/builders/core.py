"""The floor's core: types, constants, dims (symbolic ones through the importer's resolver), and
layout builders (convert, compare, reshape, slice, transpose, broadcast, iota).

Each function emits ops at the current insertion point and location (the importer sets both
per ONNX node) and returns ``ir.Value``s. ``shape_of`` gives MLIR's view (``None`` for ``?``);
``dims_of`` the symbolic one (:class:`SymbolicDim` for ``?``).
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator, Sequence
from typing import Protocol

import numpy as np
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import stablehlo

from onnx_stablehlo.errors import ShapeError
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

_INTEGER_DOTS: contextvars.ContextVar[bool] = contextvars.ContextVar("integer_dots", default=False)


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


def integer_dots(allowed: bool) -> contextlib.AbstractContextManager[None]:
    """Whether 8-bit products may be int8 x int8 -> int32 ``dot_general`` inside the block.

    On for XLA CPU, which runs them through YNNPACK 1.5-2.8x faster than the exact float32
    GEMM of :func:`~onnx_stablehlo.frontend.builders.linalg.exact_integer_product` (and runs
    uint8 operands as a plain loop, so those are shifted to int8 first); off elsewhere.
    """
    return _bound(_INTEGER_DOTS, allowed)


def integer_dots_allowed() -> bool:
    """Whether 8-bit products may be int8 ``dot_general`` here (see :func:`integer_dots`)."""
    return _INTEGER_DOTS.get()


class BuilderShapeError(ShapeError, ValueError):
    """Shapes a builder cannot combine: static dims that do not broadcast, an axis out of range.

    A :class:`ShapeError` without the node: the importer completes it with the node's op,
    opset and name (``graph_lowering.lower_node``). A ``ValueError`` too, so a rule that
    catches the builder's ``ValueError`` to say more keeps working.
    """


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


@contextlib.contextmanager
def region_scope() -> Iterator[None]:
    """Builds inside a region (an If branch a rule makes) with its own cache of dim sizes.

    A size a builder emits inside the region must not be found again outside it (it would not
    dominate its later uses); sizes emitted before the region are still used inside, as MLIR
    regions see enclosing values. Without the importer's resolver (static shapes) it does nothing.
    """
    resolver = _RESOLVER.get()
    if resolver is None or not hasattr(resolver, "new_scope_key"):
        yield
        return
    parent_key = resolver.scope_key
    resolver.scope_key = resolver.new_scope_key()
    try:
        yield
    finally:
        resolver.scope_key = parent_key


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
    return stablehlo.concatenate(parts, ir.IntegerAttr.get(ir.IntegerType.get_signless(64), 0))


def record(value: ir.Value, dims: Sequence[Dim]) -> ir.Value:
    """Tells the importer the symbolic dims of a value a rule just built; returns ``value``."""
    if not _is_static(dims):
        _resolver().record(value, dims)
    return value


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
    return stablehlo.constant(attr)


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
        return stablehlo.constant(attr)
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
    return stablehlo.convert(result_type, value)


# erf(x) / x as a polynomial in t = x*x/8 - 1 (|x| <= 4), lowest order first: tools/fit_erf.py.


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
        return stablehlo.reshape(tensor_type(shape, dtype_of(value)), value)
    if tuple(dims_of(value)) == tuple(shape):
        return value
    result_type = tensor_type(shape, dtype_of(value))
    return record(stablehlo.dynamic_reshape(result_type, value, shape_tensor(shape)), shape)


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
        return stablehlo.slice(value, i64_array(begin), i64_array(end), ones)
    out = list(shape)
    out[axis] = limit - start
    result = stablehlo.real_dynamic_slice(
        tensor_type(out, dtype_of(value)),
        value,
        shape_tensor(begin),
        shape_tensor(end),
        shape_tensor([1] * len(shape)),
    )
    return record(result, out)


def i64_array(values: Sequence[int]) -> ir.Attribute:
    """A ``array<i64: ...>`` attribute (dims, permutations, ...)."""
    return ir.DenseI64ArrayAttr.get([int(v) for v in values])


def transpose(value: ir.Value, permutation: Sequence[int]) -> ir.Value:
    """``stablehlo.transpose`` (no op for the identity permutation)."""
    permutation = [int(p) for p in permutation]
    if permutation == list(range(len(permutation))):
        return value
    result = stablehlo.transpose(value, i64_array(permutation))
    if any(d is None for d in shape_of(value)):
        source = dims_of(value)
        record(result, [source[p] for p in permutation])
    return result


def broadcast_shapes(*shapes: Sequence[Dim]) -> tuple[Dim, ...]:
    """Numpy (multidirectional) broadcasting of shapes with symbolic dims.

    A static size ``N != 1`` against a symbolic dim gives ``N`` (the only valid outcome). Two
    different symbolic dims are merged by the importer's resolver (``merge``: the equality is
    assumed, recorded as a :class:`DimEquality` and checked at run time) when both are made of
    graph-input symbols, and broadcast to ``max(a, b)`` otherwise.

    Raises:
        BuilderShapeError: static dims that do not broadcast (a ShapeError and a ValueError).
    """
    if all(_is_static(s) for s in shapes):
        try:
            return tuple(np.broadcast_shapes(*[tuple(int(d) for d in s) for s in shapes]))
        except ValueError:
            raise BuilderShapeError(f"shapes {[list(map(int, s)) for s in shapes]} do not broadcast") from None
    rank = max(len(s) for s in shapes)
    result: list[Dim] = [1] * rank
    resolver = _RESOLVER.get()
    for shape in shapes:
        padded = (1,) * (rank - len(shape)) + tuple(shape)
        for axis, dim in enumerate(padded):
            current = result[axis]
            if isinstance(current, int) and isinstance(dim, int) and current != 1 and dim != 1 and current != dim:
                raise BuilderShapeError(f"shapes {[tuple(map(str, s)) for s in shapes]} do not broadcast")
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

    Raises:
        BuilderShapeError: the operand does not broadcast to ``shape`` (more dims than the
            result, or a static dim that is neither 1 nor the result's static dim).
    """
    source = dims_of(value)
    if dims is None:
        if tuple(source) == tuple(shape):
            return value
        dims = range(len(shape) - len(source), len(shape))
    dims = list(dims)
    if len(dims) != len(source) or any(not 0 <= d < len(shape) for d in dims) or any(
        isinstance(size, int) and isinstance(shape[d], int) and size not in (1, shape[d])
        for size, d in zip(source, dims)
    ):
        raise BuilderShapeError(
            f"a value of shape {[_dim_text(d) for d in source]} does not broadcast to "
            f"{[_dim_text(d) for d in shape]}"
        )
    result_type = tensor_type(shape, dtype_of(value))
    if _is_static(shape) and _is_static(source):
        return stablehlo.broadcast_in_dim(result_type, value, i64_array(dims))
    result = stablehlo.dynamic_broadcast_in_dim(result_type, value, shape_tensor(shape), i64_array(dims))
    return record(result, shape)


def _dim_text(dim: Dim) -> int | str:
    return dim if isinstance(dim, int) else str(dim)


def broadcast_values(*values: ir.Value) -> list[ir.Value]:
    """Broadcasts operands to their common numpy-broadcast shape."""
    shape = broadcast_shapes(*[dims_of(v) for v in values])
    return [broadcast_to(v, shape) for v in values]


def iota(shape: Sequence[Dim], dimension: int, dtype: DataType) -> ir.Value:
    """``stablehlo.iota`` (``dynamic_iota`` when a dim is symbolic)."""
    result_type = tensor_type(shape, dtype)
    attr = ir.IntegerAttr.get(ir.IntegerType.get_signless(64), dimension)
    if _is_static(shape):
        return stablehlo.iota(result_type, attr)
    return record(stablehlo.dynamic_iota(result_type, shape_tensor(shape), attr), shape)


def normalize_axis(axis: int, rank: int) -> int:
    """Maps a negative axis into ``[0, rank)``.

    Raises:
        BuilderShapeError: the axis is out of range (a ShapeError and a ValueError).
    """
    if not -rank <= axis < max(rank, 1):
        raise BuilderShapeError(f"axis {axis} is out of range for rank {rank}")
    return axis + rank if axis < 0 else axis


