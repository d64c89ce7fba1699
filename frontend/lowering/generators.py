"""Lowering rules: ops that make tensors from attributes and shapes, and random ops.

- ``Constant``, ``Range`` and small ``ConstantOfShape``/``EyeLike`` results are compile-time
  numpy arrays (later rules can read them as constant inputs); ``ConstantOfShape`` and
  ``EyeLike`` results above ``_MAX_FOLDED_ELEMENTS`` are emitted instead (a splat constant, an
  ``iota`` comparison) so no large dense constant is built.
- Random ops draw bits with ``stablehlo.rng_bit_generator`` (THREE_FRY) from a state made of
  the ``seed`` attribute (0 without one, so a module is deterministic): uniform floats come
  from the top mantissa bits, normals by Box-Muller, Bernoulli by comparing a uniform with
  ``p``, Multinomial by inverting the cumulative distribution.
"""

from __future__ import annotations

import numpy as np
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import stablehlo

from onnx_stablehlo.errors import NonConstantInputError, ShapeError, UnsupportedDtypeError
from onnx_stablehlo.frontend import dtypes, emit
from onnx_stablehlo.frontend.context import LoweringContext, OnnxNode
from onnx_stablehlo.frontend.dtypes import DataType
from onnx_stablehlo.frontend.registry import lowering

_MAX_FOLDED_ELEMENTS = 1024
"""Results with more elements than this are emitted (splat / iota) rather than numpy arrays."""


# Constants -----------------------------------------------------------------------------------

# (attribute, numpy dtype of its value; None: the value is already an array)
_CONSTANT_ATTRIBUTES = (
    ("value", None),
    ("value_float", np.float32),
    ("value_floats", np.float32),
    ("value_int", np.int64),
    ("value_ints", np.int64),
)


@lowering("Constant", since=1)
@lowering("Constant", since=9)  # 9 widened types
@lowering("Constant", since=11)  # 11 added sparse_value
@lowering("Constant", since=12)  # 12 added value_float(s), value_int(s), value_string(s)
@lowering("Constant", since=13)  # 13, 19, 21, 23, 24, 25 widened types
@lowering("Constant", since=19)
@lowering("Constant", since=21)
@lowering("Constant", since=23)
@lowering("Constant", since=24)
@lowering("Constant", since=25)
def lower_constant(ctx: LoweringContext, node: OnnxNode) -> list[np.ndarray]:
    """Lowers Constant to a compile-time numpy array (emitted as stablehlo.constant on use).

    Spec: onnx.ai/onnx/operators/onnx__Constant.html (Constant-1, 9, 11, 12, 13, 19, 21, 23, 24, 25).
    Shapes: the attribute's.
    Dtypes: every numeric type and bool.
    Deviations: ``sparse_value`` never reaches the rule (onnx-ir cannot load sparse tensors).
    Raises: UnsupportedDtypeError for ``value_string(s)`` and string tensors;
        UnsupportedAttributeError when no value attribute is set.
    """
    for name, np_dtype in _CONSTANT_ATTRIBUTES:
        if node.has_attr(name):
            value = node.attr(name)
            array = np.asarray(value) if np_dtype is None else np.asarray(value, dtype=np_dtype)
            if array.dtype.kind in "OSU":
                raise ctx.unsupported_dtype(DataType.STRING, "numeric and bool tensors")
            return [array]
    for name in ("value_string", "value_strings"):
        if node.has_attr(name):
            raise ctx.unsupported_dtype(DataType.STRING, "numeric and bool tensors")
    raise ctx.unsupported_attribute(
        "sparse_value" if node.has_attr("sparse_value") else "value",
        None,
        "one of value, value_float(s), value_int(s)",
    )


def _shape_input(ctx: LoweringContext, index: int) -> tuple[int, ...]:
    shape = np.asarray(ctx.constant_input(index)).reshape(-1)
    if np.any(shape < 0):
        raise ctx.error(f"negative dim in shape {shape.tolist()}", ShapeError)
    return tuple(int(d) for d in shape)


@lowering("ConstantOfShape", since=9)
@lowering("ConstantOfShape", since=20)  # 20, 21, 23, 24, 25 widened the value's types
@lowering("ConstantOfShape", since=21)
@lowering("ConstantOfShape", since=23)
@lowering("ConstantOfShape", since=24)
@lowering("ConstantOfShape", since=25)
def lower_constant_of_shape(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value | np.ndarray]:
    """Lowers ConstantOfShape to a numpy array, or a splat stablehlo.constant when large.

    Spec: onnx.ai/onnx/operators/onnx__ConstantOfShape.html (ConstantOfShape-9, 20, 21, 23, 24, 25).
    Shapes: input [rank] int64, must be constant; output that shape.
    Dtypes: the `value` tensor's (float32 0 by default).
    Raises: NonConstantInputError if the shape is computed at run time; ShapeError for a
        negative dim; UnsupportedAttributeError if `value` has more than one element.
    """
    shape = _shape_input(ctx, 0)
    value = node.attr("value")
    value = np.zeros((1,), np.float32) if value is None else np.asarray(value)
    if value.size != 1:
        raise ctx.unsupported_attribute("value", value.tolist(), "a one-element tensor")
    size = int(np.prod(shape, dtype=np.int64))
    if size > _MAX_FOLDED_ELEMENTS:
        return [emit.splat(value.reshape(-1)[0], dtypes.dtype_of_numpy(value.dtype), shape)]
    return [np.full(shape, value.reshape(-1)[0], dtype=value.dtype)]


@lowering("Range", since=11)
@lowering("Range", since=27)  # 27 added stash_type (float16/bfloat16 computed in float32)
def lower_range(ctx: LoweringContext, node: OnnxNode) -> list[np.ndarray]:
    """Lowers Range with constant inputs to a compile-time numpy array.

    Spec: onnx.ai/onnx/operators/onnx__Range.html (Range-11, 27).
    Shapes: start, limit, delta scalars; output [max(ceil((limit - start) / delta), 0)].
    Dtypes: f16, bf16, f32, f64, i16, i32, i64.
    Deviations: start, limit and delta must be known at compile time (the result size depends
        on their values and shapes are static here).
    Raises: NonConstantInputError if any input is computed at run time.
    """
    for index, name in enumerate(("start", "limit", "delta")):
        if not ctx.is_constant_input(index):
            raise ctx.error(
                f"input '{name}' ('{node.input_names[index]}') must be known at compile time: the "
                "result size depends on start, limit and delta, and shapes are static",
                NonConstantInputError,
            )
    start, limit, delta = (np.asarray(ctx.constant_input(i)).reshape(()) for i in range(3))
    dtype = start.dtype
    compute = dtype
    if node.since_version >= 27 and dtype in (np.dtype(np.float16), dtypes.numpy_dtype(DataType.BFLOAT16)):
        stash = node.attr_int("stash_type")
        stash_dtypes = {int(DataType.FLOAT): np.dtype(np.float32), int(DataType.DOUBLE): np.dtype(np.float64)}
        if stash not in stash_dtypes:
            raise ctx.unsupported_attribute("stash_type", stash, "1 (FLOAT), 11 (DOUBLE)")
        compute = stash_dtypes[stash]
    if float(delta) == 0:
        raise ctx.error("delta must not be zero", ShapeError)
    if compute.kind == "f" or dtype.kind == "V":
        count = max(int(np.ceil((float(limit) - float(start)) / float(delta))), 0)
        steps = np.arange(count, dtype=compute)
        result = (start.astype(compute) + steps * delta.astype(compute)).astype(dtype)
    else:
        result = np.arange(start.item(), limit.item(), delta.item()).astype(dtype)
    return [result]


@lowering("EyeLike", since=9)
@lowering("EyeLike", since=22)  # 22 added bfloat16
def lower_eye_like(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value | np.ndarray]:
    """Lowers EyeLike to a numpy identity, or ``iota(rows) + k == iota(cols)`` when large.

    Only the input's shape is used, never its values.

    Spec: onnx.ai/onnx/operators/onnx__EyeLike.html (EyeLike-9, 22).
    Shapes: input [M, N] static (a 1-D [N] is read as [N, N], as onnx.reference does).
    Dtypes: `dtype` attribute, default the input's: numeric types and bool.
    Raises: ShapeError for other ranks.
    """
    shape = ctx.input_static_shape(0)
    if len(shape) == 1:
        shape = (shape[0], shape[0])
    if len(shape) != 2:
        raise ctx.error(f"input must be 2-D, got shape {list(shape)}", ShapeError)
    dtype = DataType(node.attr_int("dtype", int(ctx.input_dtype(0))))
    try:
        np_dtype = dtypes.numpy_dtype(dtype)
        dtypes.mlir_element_type(dtype)
    except (UnsupportedDtypeError, TypeError, ValueError):
        raise ctx.unsupported_dtype(dtype, "numeric types and bool") from None
    k = node.attr_int("k")
    rows, cols = shape
    if rows * cols <= _MAX_FOLDED_ELEMENTS:
        return [np.eye(rows, cols, k=k, dtype=np_dtype)]
    row = stablehlo.IotaOp(emit.tensor_type(shape, DataType.INT64), 0).result
    col = stablehlo.IotaOp(emit.tensor_type(shape, DataType.INT64), 1).result
    shifted = stablehlo.AddOp(row, emit.splat(k, DataType.INT64, shape)).result
    return [emit.convert(emit.compare(shifted, col, "EQ"), dtype)]
