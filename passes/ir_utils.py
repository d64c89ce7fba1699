"""Small helpers over jaxlib's MLIR objects shared by the passes.

Types: ranked tensor shapes (``None`` for a dynamic dim), element-type predicates and the
numpy dtype of an element type. Constants: reading a ``stablehlo.constant`` into numpy (or a
splat into one Python scalar) and building dense attributes back. Ops: the defining op of a
value, use counts, ``array<i64: ...>`` attributes, convolution dimension numbers with some
fields changed, and the set of ops without side effects that dead-code removal may erase.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import stablehlo

from onnx_stablehlo.passes.op_catalog import PURE_OPS

__all__ = [
    "PURE_OPS",
    "is_pure",
    "defining_op",
    "has_no_uses",
    "has_one_use",
    "tensor_type",
    "shape_of",
    "element_type_of",
    "is_static",
    "is_float",
    "is_integer",
    "is_bool",
    "numpy_dtype",
    "constant_attr",
    "constant_array",
    "splat_scalar",
    "is_splat_of",
    "dense_attr",
    "i64_array",
    "read_i64_array",
    "num_elements",
    "conv_numbers_with",
]

def is_pure(op: ir.Operation) -> bool:
    """Whether ``op`` has no side effects (``stablehlo`` ops in PURE_OPS, every ``chlo`` op)."""
    name = op.name
    return name in PURE_OPS or name.startswith("chlo.")


def defining_op(value: ir.Value) -> ir.Operation | None:
    """The op producing ``value``; ``None`` for a block argument."""
    owner = value.owner
    if isinstance(owner, ir.Block):
        return None
    return owner.operation if isinstance(owner, ir.OpView) else owner


def defining_op_named(value: ir.Value, name: str) -> ir.Operation | None:
    """The op producing ``value`` when it is named ``name``, else ``None``."""
    op = defining_op(value)
    return op if op is not None and op.name == name else None


def has_no_uses(value: ir.Value) -> bool:
    return next(iter(value.uses), None) is None


def has_one_use(value: ir.Value) -> bool:
    uses = iter(value.uses)
    return next(uses, None) is not None and next(uses, None) is None


# Types ----------------------------------------------------------------------------------------


def tensor_type(shape: Sequence[int | None], element_type: ir.Type) -> ir.RankedTensorType:
    """``tensor<...>``; ``None`` dims become ``?``."""
    dynamic = ir.ShapedType.get_dynamic_size()
    return ir.RankedTensorType.get([dynamic if d is None else int(d) for d in shape], element_type)


def shape_of(value_or_type: ir.Value | ir.Type) -> tuple[int | None, ...] | None:
    """The shape of a ranked tensor (``None`` per dynamic dim); ``None`` when unranked."""
    ty = value_or_type.type if isinstance(value_or_type, ir.Value) else value_or_type
    if not isinstance(ty, ir.RankedTensorType):
        return None
    return tuple(None if ty.is_dynamic_dim(i) else ty.get_dim_size(i) for i in range(ty.rank))


def is_static(value_or_type: ir.Value | ir.Type) -> bool:
    """Whether a ranked tensor type has only static dims."""
    shape = shape_of(value_or_type)
    return shape is not None and all(d is not None for d in shape)


def num_elements(shape: Sequence[int | None]) -> int | None:
    """Element count of a static shape; ``None`` when a dim is dynamic."""
    if any(d is None for d in shape):
        return None
    return math.prod(shape)  # type: ignore[arg-type]


def element_type_of(value_or_type: ir.Value | ir.Type) -> ir.Type:
    ty = value_or_type.type if isinstance(value_or_type, ir.Value) else value_or_type
    return ir.ShapedType(ty).element_type


def is_float(element_type: ir.Type) -> bool:
    return isinstance(element_type, ir.FloatType)


def is_bool(element_type: ir.Type) -> bool:
    return isinstance(element_type, ir.IntegerType) and element_type.width == 1


def is_integer(element_type: ir.Type) -> bool:
    """Signless, signed or unsigned integers of more than one bit (``i1`` is a bool)."""
    return isinstance(element_type, ir.IntegerType) and element_type.width > 1


_FLOAT_DTYPES = {"f16": np.float16, "f32": np.float32, "f64": np.float64}


def numpy_dtype(element_type: ir.Type) -> np.dtype | None:
    """The numpy dtype holding ``element_type`` exactly; ``None`` when numpy has none here.

    Covered: ``f16``, ``f32``, ``f64``, ``i1`` (bool), signless/signed ``i8`` ... ``i64`` and
    ``ui8`` ... ``ui64``. Not covered: bf16, float8, sub-byte ints, complex.
    """
    if isinstance(element_type, ir.FloatType):
        dtype = _FLOAT_DTYPES.get(str(element_type))
        return np.dtype(dtype) if dtype is not None else None
    if isinstance(element_type, ir.IntegerType):
        width = element_type.width
        if width == 1:
            return np.dtype(np.bool_)
        if width not in (8, 16, 32, 64):
            return None
        return np.dtype(f"u{width // 8}" if element_type.is_unsigned else f"i{width // 8}")
    return None


# Constants -----------------------------------------------------------------------------------


def constant_attr(value: ir.Value) -> ir.DenseElementsAttr | None:
    """The dense attribute of a ``stablehlo.constant`` producing ``value``, else ``None``."""
    op = defining_op(value)
    if op is None or op.name not in ("stablehlo.constant", "arith.constant"):
        return None
    attr = op.attributes["value"]
    return attr if isinstance(attr, ir.DenseElementsAttr) else None


def constant_array(value: ir.Value, max_elements: int | None = None) -> np.ndarray | None:
    """A constant's value as numpy; ``None`` when not a readable constant or too large.

    Splats are materialized to their full shape, so ``max_elements`` bounds the cost.
    """
    attr = constant_attr(value)
    if attr is None or numpy_dtype(element_type_of(attr.type)) is None:
        return None
    shape = shape_of(attr.type)
    if shape is None:
        return None
    if max_elements is not None and math.prod(shape) > max_elements:  # type: ignore[arg-type]
        return None
    if attr.is_splat:
        scalar = splat_scalar(value)
        dtype = numpy_dtype(element_type_of(attr.type))
        return np.full(shape, scalar, dtype=dtype)
    return np.array(attr)


def splat_scalar(value: ir.Value) -> float | int | bool | None:
    """The element of a splat constant as a Python scalar (``-0.0`` keeps its sign)."""
    attr = constant_attr(value)
    if attr is None or not attr.is_splat:
        return None
    element = attr.get_splat_value()
    if isinstance(element, ir.BoolAttr):
        return bool(element.value)
    if isinstance(element, (ir.FloatAttr, ir.IntegerAttr)):
        return element.value
    return None


def is_splat_of(value: ir.Value, expected: float | int) -> bool:
    """Whether ``value`` is a splat constant equal to ``expected``.

    Floats compare bit-exactly in sign: ``-0.0`` matches only ``-0.0``, ``0.0`` only ``+0.0``;
    NaN matches nothing.
    """
    scalar = splat_scalar(value)
    if scalar is None or isinstance(scalar, bool):
        return False
    if isinstance(scalar, float) or isinstance(expected, float):
        scalar = float(scalar)
        expected = float(expected)
        return scalar == expected and math.copysign(1.0, scalar) == math.copysign(1.0, expected)
    return scalar == expected


def dense_attr(array: np.ndarray, ty: ir.RankedTensorType) -> ir.DenseElementsAttr:
    """A dense attribute of type ``ty`` holding ``array`` (a one-element array makes a splat).

    The array's dtype must be ``numpy_dtype`` of the element type.
    """
    flat = np.ascontiguousarray(array)
    if flat.size > 1 and _all_equal(flat):
        flat = flat.reshape(-1)[:1]
    return ir.DenseElementsAttr.get(flat, type=ty)


def _all_equal(array: np.ndarray) -> bool:
    raw = array.reshape(-1).view(np.uint8).reshape(array.size, -1)
    return bool(np.all(raw == raw[0]))


def i64_array(values: Sequence[int]) -> ir.DenseI64ArrayAttr:
    """An ``array<i64: ...>`` attribute."""
    return ir.DenseI64ArrayAttr.get([int(v) for v in values])


def read_i64_array(op: ir.Operation, name: str) -> list[int]:
    """The ints of an ``array<i64: ...>`` attribute of ``op``."""
    return [int(v) for v in ir.DenseI64ArrayAttr(op.attributes[name])]


_CONV_NUMBER_FIELDS = (
    "input_batch_dimension", "input_feature_dimension", "input_spatial_dimensions",
    "kernel_input_feature_dimension", "kernel_output_feature_dimension", "kernel_spatial_dimensions",
    "output_batch_dimension", "output_feature_dimension", "output_spatial_dimensions",
)


def conv_numbers_with(numbers: Any, **changes: int | Sequence[int]) -> ir.Attribute:
    """``stablehlo.ConvDimensionNumbers`` equal to ``numbers`` except the fields in ``changes``
    (``input_batch_dimension=...``, ``kernel_spatial_dimensions=[...]``, ...)."""
    fields = {name: getattr(numbers, name) for name in _CONV_NUMBER_FIELDS}
    fields.update(changes)
    return stablehlo.ConvDimensionNumbers.get(
        **{name: value if isinstance(value, int) else [int(v) for v in value] for name, value in fields.items()}
    )
