"""Lowering rules: ops that make tensors from attributes and shapes, random ops and OneHot.

- ``Constant``, ``Range`` and small ``ConstantOfShape``/``EyeLike`` results are compile-time
  numpy arrays (later rules can read them as constant inputs); ``ConstantOfShape`` and
  ``EyeLike`` results above ``_MAX_FOLDED_ELEMENTS`` are emitted instead (a splat constant, an
  ``iota`` comparison) so no large dense constant is built.
- Random ops draw bits with ``stablehlo.rng_bit_generator`` (THREE_FRY) from a state made of
  the ``seed`` attribute (without one, a hash of the output name: a module is deterministic
  and two unseeded nodes still differ): uniform floats come
  from the top mantissa bits, normals by Box-Muller, Bernoulli by comparing a uniform with
  ``p``, Multinomial by inverting the cumulative distribution.
- ``OneHot(i, depth, values)`` -> ``stablehlo.iota`` + compare + select.
"""

from __future__ import annotations

import zlib

import numpy as np
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import stablehlo

from onnx_stablehlo.errors import NonConstantInputError, ShapeError, UnsupportedDtypeError
from onnx_stablehlo.frontend import builders, dtypes, limits
from onnx_stablehlo.frontend.builders import indexing
from onnx_stablehlo.frontend.context import LoweringContext, OnnxNode
from onnx_stablehlo.frontend.dtypes import DataType
from onnx_stablehlo.frontend.registry import lowering
from onnx_stablehlo.frontend.shapes import ceil_div

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
    Shapes: input [rank] int64, constant or a shape computation with symbolic dims (then a
        dynamic splat); output that shape.
    Dtypes: the `value` tensor's (float32 0 by default).
    Raises: NonConstantInputError if the shape is computed at run time; ShapeError for a
        negative dim; UnsupportedAttributeError if `value` has more than one element.
    """
    value = node.attr("value")
    value = np.zeros((1,), np.float32) if value is None else np.asarray(value)
    if value.size != 1:
        raise ctx.unsupported_attribute("value", value.tolist(), "a one-element tensor")
    if not ctx.is_constant_input(0) and ctx.lowered(0).sym is not None:
        dims = [d if not isinstance(d, (int, np.integer)) else int(d) for d in ctx.symbolic_input(0).reshape(-1)]
        return [builders.splat(value.reshape(-1)[0], dtypes.dtype_of_numpy(value.dtype), dims)]
    shape = _shape_input(ctx, 0)
    size = int(np.prod(shape, dtype=np.int64))
    if size > _MAX_FOLDED_ELEMENTS:
        return [builders.splat(value.reshape(-1)[0], dtypes.dtype_of_numpy(value.dtype), shape)]
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
    symbolic = _symbolic_range(ctx)
    if symbolic is not None:
        return [symbolic]
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
        with np.errstate(all="ignore"):
            exact = np.ceil((float(limit) - float(start)) / float(delta))
        if not np.isfinite(exact):
            raise ctx.error(
                f"the number of elements ceil((limit - start) / delta) = ceil(({float(limit)} - {float(start)}) / "
                f"{float(delta)}) is not finite",
                ShapeError,
            )
        count = max(int(exact), 0)
        limits.check_elements(ctx, "the Range output", count)
        steps = np.arange(count, dtype=compute)
        result = (start.astype(compute) + steps * delta.astype(compute)).astype(dtype)
    else:
        count = max(-(-(int(limit.item()) - int(start.item())) // int(delta.item())), 0)
        limits.check_elements(ctx, "the Range output", count)
        result = np.arange(start.item(), limit.item(), delta.item()).astype(dtype)
    return [result]


def _symbolic_range(ctx: LoweringContext) -> ir.Value | None:
    """An integer Range whose limit is a symbolic dim (``arange(seq)``): a dynamic iota.

    Needs integer start and delta known at compile time (delta > 0) and a limit that is a shape
    computation; returns ``None`` otherwise.
    """
    lowered = [ctx.lowered(i) for i in range(3)]
    if lowered[1].sym is None or not (ctx.is_constant_input(0) and ctx.is_constant_input(2)):
        return None
    start = np.asarray(ctx.constant_input(0)).reshape(())
    delta = np.asarray(ctx.constant_input(2)).reshape(())
    # A float range over a dim (``arange(float(W))``) is fine when start and delta are integral.
    if start.dtype.kind not in "iuf" or float(start) != int(start) or float(delta) != int(delta) or int(delta) <= 0:
        return None
    limit = ctx.symbolic_input(1).reshape(())[()]
    count = ceil_div(limit - int(start), int(delta))
    dtype = ctx.input_dtype(0)
    steps = builders.iota([count], 0, dtype)
    scaled = stablehlo.multiply(steps, builders.splat(int(delta), dtype, [count]))
    return builders.record(stablehlo.add(scaled, builders.splat(int(start), dtype, [count])), [count])


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
    row = stablehlo.iota(builders.tensor_type(shape, DataType.INT64), 0)
    col = stablehlo.iota(builders.tensor_type(shape, DataType.INT64), 1)
    shifted = stablehlo.add(row, builders.splat(k, DataType.INT64, shape))
    return [builders.convert(builders.compare(shifted, col, "EQ"), dtype)]


# Random ---------------------------------------------------------------------------------------


def _seed(node: OnnxNode) -> int:
    """The ``seed`` attribute as an integer; without one, a hash of the node's output name.

    Hashing the name keeps a module deterministic while two unseeded random nodes still draw
    different streams.
    """
    if node.has_attr("seed"):
        return int(node.attr_float("seed")) & 0xFFFFFFFFFFFFFFFF
    return zlib.crc32(node.output_names[0].encode())


class _Bits:
    """A ``stablehlo.rng_bit_generator`` (THREE_FRY) stream; each draw advances the state."""

    def __init__(self, seed: int) -> None:
        self.state = builders.constant(np.array([seed, 0], np.uint64), DataType.UINT64)

    def draw(self, shape: tuple[int, ...], dtype: DataType) -> ir.Value:
        algorithm = stablehlo.RngAlgorithmAttr.get("THREE_FRY")
        self.state, bits = stablehlo.rng_bit_generator(self.state.type, builders.tensor_type(shape, dtype), algorithm, self.state)
        return bits

    def uniform(self, shape: tuple[int, ...], dtype: DataType) -> ir.Value:
        """Floats uniform in [0, 1): random mantissa bits under the exponent of 1.0, minus 1."""
        if dtype == DataType.DOUBLE:
            bits_type, float_type, shift, one = DataType.UINT64, DataType.DOUBLE, 12, 0x3FF0000000000000
        else:
            bits_type, float_type, shift, one = DataType.UINT32, DataType.FLOAT, 9, 0x3F800000
        bits = self.draw(shape, bits_type)
        mantissa = stablehlo.shift_right_logical(bits, builders.splat(shift, bits_type, shape))
        in_one_two = stablehlo.or_(mantissa, builders.splat(one, bits_type, shape))
        floats = stablehlo.bitcast_convert(builders.tensor_type(shape, float_type), in_one_two)
        return builders.convert(stablehlo.subtract(floats, builders.splat(1.0, float_type, shape)), dtype)


def _random_dtype(ctx: LoweringContext, node: OnnxNode, default: DataType) -> DataType:
    dtype = DataType(node.attr_int("dtype", int(default)))
    if not dtypes.is_float(dtype) and node.op_type != "Bernoulli":
        raise ctx.unsupported_attribute("dtype", int(dtype), "float16, bfloat16, float, double")
    try:
        dtypes.mlir_element_type(dtype)
    except UnsupportedDtypeError:
        raise ctx.unsupported_dtype(dtype, "numeric types") from None
    return dtype


def _uniform(node: OnnxNode, shape: tuple[int, ...], dtype: DataType) -> ir.Value:
    compute = DataType.DOUBLE if dtype == DataType.DOUBLE else DataType.FLOAT
    u = _Bits(_seed(node)).uniform(shape, compute)
    low, high = node.attr_float("low"), node.attr_float("high")
    value = stablehlo.add(
        stablehlo.multiply(u, builders.splat(high - low, compute, shape)), builders.splat(low, compute, shape)
    )
    return builders.convert(value, dtype)


def _normal(node: OnnxNode, shape: tuple[int, ...], dtype: DataType) -> ir.Value:
    """Box-Muller: ``sqrt(-2 log(1 - u1)) * cos(2 pi u2) * scale + mean``."""
    compute = DataType.DOUBLE if dtype == DataType.DOUBLE else DataType.FLOAT
    bits = _Bits(_seed(node))
    u1, u2 = bits.uniform(shape, compute), bits.uniform(shape, compute)
    radius = stablehlo.sqrt(
        stablehlo.multiply(
            builders.splat(-2.0, compute, shape),
            stablehlo.log(stablehlo.subtract(builders.splat(1.0, compute, shape), u1)),
        )
    )
    angle = stablehlo.multiply(builders.splat(2 * np.pi, compute, shape), u2)
    z = stablehlo.multiply(radius, stablehlo.cosine(angle))
    value = stablehlo.add(
        stablehlo.multiply(z, builders.splat(node.attr_float("scale"), compute, shape)),
        builders.splat(node.attr_float("mean"), compute, shape),
    )
    return builders.convert(value, dtype)


def _shape_attribute(ctx: LoweringContext, node: OnnxNode) -> tuple[int, ...]:
    shape = node.attr_ints("shape")
    if shape is None:
        raise ctx.unsupported_attribute("shape", None, "a list of non-negative dims")
    if any(d < 0 for d in shape):
        raise ctx.error(f"negative dim in shape {shape}", ShapeError)
    return tuple(shape)


@lowering("RandomUniform", since=1)
@lowering("RandomUniform", since=22)  # 22 added bfloat16
def lower_random_uniform(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value]:
    """Lowers RandomUniform to stablehlo.rng_bit_generator bits turned into [low, high) floats.

    Spec: onnx.ai/onnx/operators/onnx__RandomUniform.html (RandomUniform-1, 22).
    Shapes: the `shape` attribute.
    Dtypes: f16, bf16, f32, f64 (`dtype`, default f32).
    Deviations: the stream differs from onnxruntime's for the same seed; without `seed` the
        stream is fixed per output name rather than fresh per run.
    """
    return [_uniform(node, _shape_attribute(ctx, node), _random_dtype(ctx, node, DataType.FLOAT))]


@lowering("RandomNormal", since=1)
@lowering("RandomNormal", since=22)  # 22 added bfloat16
def lower_random_normal(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value]:
    """Lowers RandomNormal to Box-Muller over stablehlo.rng_bit_generator uniforms.

    Spec: onnx.ai/onnx/operators/onnx__RandomNormal.html (RandomNormal-1, 22).
    Shapes: the `shape` attribute.
    Dtypes: f16, bf16, f32, f64 (`dtype`, default f32).
    Deviations: as RandomUniform.
    """
    return [_normal(node, _shape_attribute(ctx, node), _random_dtype(ctx, node, DataType.FLOAT))]


@lowering("RandomUniformLike", since=1)
@lowering("RandomUniformLike", since=22)  # 22 added bfloat16
def lower_random_uniform_like(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value]:
    """Lowers RandomUniformLike as RandomUniform with the input's shape (and dtype by default).

    Spec: onnx.ai/onnx/operators/onnx__RandomUniformLike.html (RandomUniformLike-1, 22).
    Shapes: the input's, static.
    Dtypes: f16, bf16, f32, f64.
    Deviations: as RandomUniform.
    """
    shape = ctx.input_static_shape(0)
    return [_uniform(node, shape, _random_dtype(ctx, node, ctx.input_dtype(0)))]


@lowering("RandomNormalLike", since=1)
@lowering("RandomNormalLike", since=22)  # 22 added bfloat16
def lower_random_normal_like(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value]:
    """Lowers RandomNormalLike as RandomNormal with the input's shape (and dtype by default).

    Spec: onnx.ai/onnx/operators/onnx__RandomNormalLike.html (RandomNormalLike-1, 22).
    Shapes: the input's, static.
    Dtypes: f16, bf16, f32, f64.
    Deviations: as RandomUniform.
    """
    shape = ctx.input_static_shape(0)
    return [_normal(node, shape, _random_dtype(ctx, node, ctx.input_dtype(0)))]


@lowering("Bernoulli", since=15)
@lowering("Bernoulli", since=22)  # 22 added bfloat16
def lower_bernoulli(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value]:
    """Lowers Bernoulli to ``uniform < p`` converted to `dtype` (default the input's).

    Spec: onnx.ai/onnx/operators/onnx__Bernoulli.html (Bernoulli-15, 22).
    Shapes: the input's, static.
    Dtypes: input f16, bf16, f32, f64; output any numeric type or bool.
    Deviations: as RandomUniform.
    """
    p = ctx.input(0)
    shape = ctx.input_static_shape(0)
    dtype = _random_dtype(ctx, node, ctx.input_dtype(0))
    compute = DataType.DOUBLE if ctx.input_dtype(0) == DataType.DOUBLE else DataType.FLOAT
    u = _Bits(_seed(node)).uniform(shape, compute)
    hit = builders.compare(u, builders.convert(p, compute), "LT")
    return [builders.convert(hit, dtype)]


@lowering("Multinomial", since=7)
@lowering("Multinomial", since=22)  # 22 added bfloat16
def lower_multinomial(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value]:
    """Lowers Multinomial by inverting the cumulative distribution of ``softmax(input)``.

    The cumulative sums come from a stablehlo.reduce_window; each sample counts the classes
    whose cumulative probability is <= a uniform draw scaled by the total.

    Spec: onnx.ai/onnx/operators/onnx__Multinomial.html (Multinomial-7, 22).
    Shapes: input [batch, classes] unnormalized log-probabilities; output [batch, sample_size].
    Dtypes: input f16, bf16, f32, f64; output int32 (default) or int64.
    Deviations: as RandomUniform.
    Raises: ShapeError if the input is not 2-D; UnsupportedAttributeError for another `dtype`.
    """

    logits = ctx.input(0)
    shape = ctx.input_static_shape(0)
    if len(shape) != 2:
        raise ctx.error(f"input must be [batch, classes], got {list(shape)}", ShapeError)
    batch, classes = shape
    samples = node.attr_int("sample_size")
    out_dtype = DataType(node.attr_int("dtype"))
    if out_dtype not in (DataType.INT32, DataType.INT64):
        raise ctx.unsupported_attribute("dtype", int(out_dtype), "6 (int32), 7 (int64)")
    compute = DataType.DOUBLE if ctx.input_dtype(0) == DataType.DOUBLE else DataType.FLOAT
    logits = builders.convert(logits, compute)
    peak = builders.reduce(logits, [1], stablehlo.maximum, -np.inf, keepdims=True)
    weights = stablehlo.exponential(stablehlo.subtract(logits, builders.broadcast_to(peak, shape)))
    cumulative = _cumulative_sum(weights)
    total = builders.reshape(stablehlo.slice(cumulative, [0, classes - 1], [batch, classes], [1, 1]), (batch, 1))
    u = _Bits(_seed(node)).uniform((batch, samples), compute)
    threshold = stablehlo.multiply(u, builders.broadcast_to(total, (batch, samples)))
    grid = (batch, samples, classes)
    below = builders.compare(
        builders.broadcast_to(cumulative, grid, dims=[0, 2]), builders.broadcast_to(threshold, grid, dims=[0, 1]), "LE"
    )
    index = builders.reduce(builders.convert(below, out_dtype), [2], stablehlo.add, 0)
    last = builders.splat(classes - 1, out_dtype, (batch, samples))
    return [stablehlo.minimum(index, last)]


def _cumulative_sum(value: ir.Value) -> ir.Value:
    """Inclusive cumulative sum along the last dim of a [batch, n] value (stablehlo.reduce_window)."""
    shape = builders.static_shape_of(value)
    dtype = builders.dtype_of(value)
    n = shape[-1]
    (total,) = builders.reduce_window(
        [value], [builders.splat(0, dtype, ())], [1, n], lambda acc, x: [stablehlo.add(acc[0], x[0])], padding=[(0, 0), (n - 1, 0)]
    )
    return total


@lowering("OneHot", since=9)
@lowering("OneHot", since=11)  # 11 allowed negative indices and a negative axis
@lowering("OneHot", since=28)  # 28 widened types
def lower_one_hot(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value]:
    """Lowers OneHot to compare(indices, iota) + select(on, off).

    Spec: OneHot-9/11/28.
    Shapes: indices rank r, symbolic dims allowed; depth a scalar known at compile time; values [2] (off, on),
        may be computed at run time; result rank r + 1 with depth inserted at ``axis``.
    Dtypes: indices any numeric type (float indices match only integral values); depth any
        numeric type; values any.
    Deviations: indices outside [-depth, depth) give an all-off row, as the spec says.
    Raises: NonConstantInputError if depth is computed at run time.
    """
    indices = ctx.input(0)
    index_shape = list(builders.dims_of(indices))
    depth = int(np.asarray(ctx.constant_input(1)).reshape(-1)[0])
    if depth <= 0:
        raise ctx.error(f"depth must be positive, got {depth}", ShapeError)
    axis = node.attr_int("axis")
    out_rank = len(index_shape) + 1
    if not -out_rank <= axis < out_rank:
        raise ctx.error(f"axis {axis} is out of range for rank {out_rank}", ShapeError)
    axis = axis + out_rank if axis < 0 else axis
    result_shape = index_shape[:axis] + [depth] + index_shape[axis:]
    # Float indices are compared as floats, as onnxruntime and onnx.reference do: 1.5 hits nothing.
    index_dtype = builders.dtype_of(indices)
    if not dtypes.is_float(index_dtype):
        index_dtype = DataType.INT64
        indices = builders.convert(indices, index_dtype)
    indices = indexing.normalize_indices(indices, np.asarray(depth))
    spread = builders.broadcast_to(indices, result_shape, dims=[d for d in range(out_rank) if d != axis])
    positions = builders.iota(result_shape, axis, index_dtype)
    hot = builders.compare(spread, positions, "EQ")
    values = ctx.input(2)
    off, on = (
        builders.broadcast_to(builders.reshape(_slice_axis0(values, i), []), result_shape) for i in (0, 1)
    )
    return [stablehlo.select(hot, on, off)]


def _slice_axis0(value: ir.Value, index: int) -> ir.Value:
    return stablehlo.slice(value, [index], [index + 1], [1])
