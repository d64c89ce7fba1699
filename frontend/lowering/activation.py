"""Lowering rules: activations (Softmax family first, then pointwise activations).

Softmax, LogSoftmax and Hardmax changed meaning at opset 13: before it the input is coerced to
2-D at ``axis`` (``[a0 * ... * a(k-1), ak * ... * a(n-1)]``) and the op runs over the whole
trailing block, which is a reduction over axes ``[axis, rank)``; from 13 on it runs over the one
axis ``axis`` (default -1). Both variants share the builders below and differ only in the axes.

Softmax and LogSoftmax subtract the maximum before exponentiating; f16 and bf16 inputs are
computed in f32 and rounded once at the end.

Spec: onnx.ai/onnx/operators (each op's page).
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence

import numpy as np
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import stablehlo

from onnx_stablehlo.errors import ShapeError
from onnx_stablehlo.frontend import builders, dtypes
from onnx_stablehlo.frontend.context import LoweringContext, OnnxNode
from onnx_stablehlo.frontend.dtypes import DataType
from onnx_stablehlo.frontend.registry import lowering
from onnx_stablehlo.frontend.shapes import Dim, is_static, product

# Helpers -------------------------------------------------------------------------------------


def _reduce_keep(x: ir.Value, axes: Sequence[int], body, init: float) -> ir.Value:
    """Reduces ``x`` over ``axes`` and broadcasts the result back to ``x``'s shape."""
    reduced = builders.reduce(x, axes, body, init, keepdims=True)
    return builders.broadcast_to(reduced, builders.dims_of(x))


def _softmax_axes(ctx: LoweringContext, node: OnnxNode, rank: int) -> list[int]:
    """The axes Softmax, LogSoftmax and Hardmax run over for the node's revision."""
    axis = ctx.attr_axis("axis", rank)
    if node.since_version >= 13:
        return [axis] if rank else []
    return list(range(axis, rank))


def _shifted_exp(x: ir.Value, axes: Sequence[int]) -> tuple[ir.Value, ir.Value, ir.Value]:
    """``(x - max(x), exp(x - max(x)), sum(exp(x - max(x))))`` over ``axes``, all of ``x``'s shape."""
    peak = builders.broadcast_to(builders.shift_max(x, axes, keepdims=True), builders.dims_of(x))
    shifted = stablehlo.subtract(x, peak)
    exp = stablehlo.exponential(shifted)
    return shifted, exp, _reduce_keep(exp, axes, stablehlo.add, 0)


# Softmax family ------------------------------------------------------------------------------


def _softmax_family(ctx: LoweringContext, node: OnnxNode, finish) -> list[ir.Value]:
    """``finish(x - max, exp(x - max), sum(exp(x - max)))`` over the op's axes, f16/bf16 in f32."""
    x = ctx.input(0)
    dtype = builders.dtype_of(x)
    axes = _softmax_axes(ctx, node, builders.rank_of(x))
    wide = builders.convert(x, dtypes.wide_dtype(dtype))
    return [builders.convert(finish(*_shifted_exp(wide, axes)), dtype)]


@lowering("Softmax", since=1)  # 1: coerced to 2-D at `axis` (default 1)
@lowering("Softmax", since=11)  # 11: negative `axis` allowed; same coercion
@lowering("Softmax", since=13)  # 13: one axis, default -1 (see _softmax_axes)
def lower_softmax(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value]:
    """Lowers Softmax to exp(x - max) / sum(exp(x - max)) over the op's axes.

    Spec: Softmax-1/11 (axes [axis, rank)), Softmax-13 (the one axis).
    Shapes: input [d0, ..., dn], symbolic dims allowed.
    Dtypes: f16, bf16 (computed in f32), f32, f64.
    Raises: ShapeError if `axis` is out of range.
    """
    return _softmax_family(ctx, node, lambda shifted, exp, total: stablehlo.divide(exp, total))


@lowering("LogSoftmax", since=1)  # 1: coerced to 2-D at `axis` (default 1)
@lowering("LogSoftmax", since=11)  # 11: negative `axis` allowed; same coercion
@lowering("LogSoftmax", since=13)  # 13: one axis, default -1 (see _softmax_axes)
def lower_log_softmax(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value]:
    """Lowers LogSoftmax to (x - max) - log(sum(exp(x - max))) over the op's axes.

    Spec: LogSoftmax-1/11 (axes [axis, rank)), LogSoftmax-13 (the one axis).
    Shapes: input [d0, ..., dn], symbolic dims allowed.
    Dtypes: f16, bf16 (computed in f32), f32, f64.
    Raises: ShapeError if `axis` is out of range.
    """
    return _softmax_family(ctx, node, lambda shifted, exp, total: stablehlo.subtract(shifted, stablehlo.log(total)))


def _hardmax_last_axis(x: ir.Value) -> ir.Value:
    """One-hot (in ``x``'s dtype) of the first maximum along the last axis of ``x``."""
    shape = builders.dims_of(x)
    axis = len(shape) - 1
    is_max = builders.compare(x, _reduce_keep(x, [axis], stablehlo.maximum, -np.inf), "EQ")
    index = builders.iota(shape, axis, DataType.INT64)
    if isinstance(shape[axis], int):
        past_end = builders.splat(shape[axis], DataType.INT64, shape)
    else:  # the axis size at run time
        past_end = builders.broadcast_to(builders.dim_value(shape[axis]), shape, dims=[])
    candidates = stablehlo.select(is_max, index, past_end)
    first = _reduce_keep(candidates, [axis], stablehlo.minimum, np.iinfo(np.int64).max)
    return builders.convert(builders.compare(index, first, "EQ"), builders.dtype_of(x))


@lowering("Hardmax", since=1)  # 1: coerced to 2-D at `axis` (default 1)
@lowering("Hardmax", since=11)  # 11: negative `axis` allowed; same coercion
@lowering("Hardmax", since=13)  # 13: one axis, default -1
def lower_hardmax(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value]:
    """Lowers Hardmax to a one-hot of the first maximum (iota, compare, reduce min).

    Before 13 the trailing block ``[axis, rank)`` is flattened and the one-hot picks the first
    maximum of the flattened block (row-major order); from 13 on it runs along ``axis``, which
    is moved last for the computation and back after.

    Spec: Hardmax-1/11, Hardmax-13.
    Shapes: input [d0, ..., dn], symbolic dims allowed.
    Dtypes: f16, bf16, f32, f64.
    Raises: ShapeError if `axis` is out of range.
    """
    x = ctx.input(0)
    shape = builders.dims_of(x)
    rank = len(shape)
    if rank == 0:
        return [builders.full_like(x, 1)]
    axes = _softmax_axes(ctx, node, rank)
    if node.since_version < 13:
        outer = product(shape[: axes[0]])
        inner = product(shape[axes[0] :])
        flat = _hardmax_last_axis(builders.reshape(x, (outer, inner)))
        return [builders.reshape(flat, shape)]
    axis = axes[0]
    permutation = [d for d in range(rank) if d != axis] + [axis]
    inverse = list(np.argsort(permutation))
    moved = _hardmax_last_axis(builders.transpose(x, permutation))
    return [builders.transpose(moved, inverse)]


# Pointwise activations -----------------------------------------------------------------------


def _pointwise(ctx: LoweringContext, build) -> list[ir.Value]:
    """Applies ``build`` to input 0, computing f16 and bf16 in f32 and rounding once."""
    x = ctx.input(0)
    dtype = builders.dtype_of(x)
    return [builders.convert(build(builders.convert(x, dtypes.wide_dtype(dtype))), dtype)]


@lowering("Elu", since=6)
@lowering("Elu", since=22)  # 22 widened types (bfloat16)
def lower_elu(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value]:
    """Lowers Elu to select(x > 0, x, alpha * expm1(x)).

    Spec: Elu-6/22. Shapes: any, static. Dtypes: f16, bf16 (computed in f32), f32, f64.
    """
    alpha = node.attr_float("alpha")
    return _pointwise(ctx, lambda x: builders.elu(x, alpha))


@lowering("Selu", since=6)
@lowering("Selu", since=22)  # 22 widened types (bfloat16)
def lower_selu(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value]:
    """Lowers Selu to gamma * select(x > 0, x, alpha * expm1(x)).

    Spec: Selu-6/22. Shapes: any, static. Dtypes: f16, bf16 (computed in f32), f32, f64.
    """
    alpha, gamma = node.attr_float("alpha"), node.attr_float("gamma")
    return _pointwise(ctx, lambda x: builders.scale(builders.elu(x, alpha), gamma))


@lowering("Celu", since=12)
@lowering("Celu", since=28)  # 28 widened types (f16, bf16, f64)
def lower_celu(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value]:
    """Lowers Celu to max(0, x) + min(0, alpha * expm1(x / alpha)).

    ``x / alpha`` is an IEEE division in the graph, so ``alpha = 0`` (or NaN, inf) gives the
    NaNs and zeros onnxruntime and onnx.reference give, not a compile-time division error.

    Spec: Celu-12/28. Shapes: any, static. Dtypes: f16, bf16 (computed in f32), f32, f64.
    """
    alpha = node.attr_float("alpha")

    def build(x: ir.Value) -> ir.Value:
        zero = builders.full_like(x, 0)
        scaled = stablehlo.divide(x, builders.full_like(x, alpha))
        negative = builders.scale(stablehlo.exponential_minus_one(scaled), alpha)
        return stablehlo.add(stablehlo.maximum(x, zero), stablehlo.minimum(negative, zero))

    return _pointwise(ctx, build)


@lowering("LeakyRelu", since=6)
@lowering("LeakyRelu", since=16)  # 16 widened types (bfloat16)
def lower_leaky_relu(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value]:
    """Lowers LeakyRelu to select(x < 0, alpha * x, x).

    Spec: LeakyRelu-6/16. Shapes: any, static. Dtypes: f16, bf16 (computed in f32), f32, f64.
    """
    alpha = node.attr_float("alpha")
    return _pointwise(ctx, lambda x: builders.leaky_relu(x, alpha))


def _broadcasts_to(source: Sequence[int], target: Sequence[int]) -> bool:
    """True if ``source`` broadcasts unidirectionally (numpy-style) to ``target``."""
    if len(source) > len(target):
        return False
    return all(s in (1, t) for s, t in zip(reversed(source), reversed(target)))


@lowering("PRelu", since=7)  # 7: slope broadcasts unidirectionally (numpy-style) to X
@lowering("PRelu", since=9)  # 9 added integer types
@lowering("PRelu", since=16)  # 16 added bfloat16
def lower_prelu(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value]:
    """Lowers PRelu to select(x < 0, slope * x, x), slope broadcast to X's shape.

    Spec: PRelu-7/9/16.
    Shapes: X [d0, ..., dn] static; slope unidirectionally broadcastable to X.
    Dtypes: f16, bf16, f32, f64, i32, i64, ui32, ui64.
    Raises: ShapeError if slope does not broadcast to X.
    """
    x = ctx.input(0)
    shape = builders.dims_of(x)
    slope_shape = builders.dims_of(ctx.input(1))
    if not _broadcasts_to(slope_shape, shape):
        message = f"slope of shape {list(slope_shape)} does not broadcast to X's {list(shape)}"
        raise ctx.error(message, ShapeError)
    slope = builders.broadcast_to(ctx.input(1), shape)
    negative = builders.compare(x, builders.full_like(x, 0), "LT")
    return [stablehlo.select(negative, stablehlo.multiply(x, slope), x)]


@lowering("ThresholdedRelu", since=10)
@lowering("ThresholdedRelu", since=22)  # 22 widened types (bfloat16)
def lower_thresholded_relu(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value]:
    """Lowers ThresholdedRelu to select(x > alpha, x, 0).

    Spec: ThresholdedRelu-10/22. Shapes: any, static. Dtypes: f16, bf16, f32, f64.
    """
    alpha = node.attr_float("alpha")
    return [builders.thresholded_relu(ctx.input(0), alpha)]


@lowering("HardSigmoid", since=6)
@lowering("HardSigmoid", since=22)  # 22 widened types (bfloat16)
def lower_hard_sigmoid(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value]:
    """Lowers HardSigmoid to clamp(alpha * x + beta, 0, 1).

    Spec: HardSigmoid-6/22. Shapes: any, static. Dtypes: f16, bf16 (computed in f32), f32, f64.
    """
    alpha, beta = node.attr_float("alpha"), node.attr_float("beta")
    return _pointwise(ctx, lambda x: builders.hard_sigmoid(x, alpha, beta))


@lowering("HardSwish", since=14)
@lowering("HardSwish", since=22)  # 22 widened types (bfloat16)
def lower_hard_swish(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value]:
    """Lowers HardSwish to x * clamp(x / 6 + 0.5, 0, 1).

    Spec: HardSwish-14/22. Shapes: any, static. Dtypes: f16, bf16 (computed in f32), f32, f64.
    """
    return _pointwise(ctx, lambda x: stablehlo.multiply(x, builders.hard_sigmoid(x, 1.0 / 6.0, 0.5)))


@lowering("Softplus", since=1)
@lowering("Softplus", since=22)  # 22 widened types (bfloat16)
def lower_softplus(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value]:
    """Lowers Softplus to max(x, 0) + log1p(exp(-|x|)) (log(1 + exp(x)) without overflow).

    Spec: Softplus-1/22. Shapes: any, static. Dtypes: f16, bf16 (computed in f32), f32, f64.
    """
    return _pointwise(ctx, builders.softplus)


@lowering("Softsign", since=1)
@lowering("Softsign", since=22)  # 22 widened types (bfloat16)
def lower_softsign(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value]:
    """Lowers Softsign to x / (1 + |x|).

    Spec: Softsign-1/22. Shapes: any, static. Dtypes: f16, bf16 (computed in f32), f32, f64.
    """
    return _pointwise(ctx, builders.softsign)


@lowering("Mish", since=18)
@lowering("Mish", since=22)  # 22 widened types (bfloat16)
def lower_mish(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value]:
    """Lowers Mish to x * tanh(softplus(x)).

    Spec: Mish-18/22. Shapes: any, static. Dtypes: f16, bf16 (computed in f32), f32, f64.
    """
    return _pointwise(ctx, lambda x: stablehlo.multiply(x, stablehlo.tanh(builders.softplus(x))))


@lowering("Swish", since=24)
def lower_swish(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value]:
    """Lowers Swish to x * logistic(alpha * x).

    Spec: Swish-24. Shapes: any, static. Dtypes: f16, bf16 (computed in f32), f32, f64.
    """
    alpha = node.attr_float("alpha")
    return _pointwise(ctx, lambda x: stablehlo.multiply(x, stablehlo.logistic(builders.scale(x, alpha))))


@lowering("Gelu", since=20)
def lower_gelu(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value]:
    """Lowers Gelu: ``approximate="none"`` with ``builders.erf``, ``"tanh"`` with the tanh formula.

    none: 0.5 * x * (1 + erf(x / sqrt(2))); tanh: 0.5 * x * (1 + tanh(sqrt(2 / pi) *
    (x + 0.044715 * x^3))).

    Spec: Gelu-20. Shapes: any, static. Dtypes: f16, bf16 (computed in f32), f32, f64.
    Raises: UnsupportedAttributeError for another `approximate`.
    """
    approximate = node.attr_str("approximate")
    if approximate not in ("none", "tanh"):
        raise ctx.unsupported_attribute("approximate", approximate, "none, tanh")

    def build(x: ir.Value) -> ir.Value:
        if approximate == "none":
            inner = builders.erf(builders.scale(x, 1.0 / np.sqrt(2.0)))
        else:
            cube = stablehlo.multiply(stablehlo.multiply(x, x), x)
            poly = stablehlo.add(x, builders.scale(cube, 0.044715))
            inner = stablehlo.tanh(builders.scale(poly, np.sqrt(2.0 / np.pi)))
        return stablehlo.multiply(builders.scale(x, 0.5), builders.shift(inner, 1))

    return _pointwise(ctx, build)


@lowering("Shrink", since=9)
def lower_shrink(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value]:
    """Lowers Shrink to select(x < -lambd, x + bias, select(x > lambd, x - bias, 0)).

    Spec: Shrink-9.
    Shapes: any, static.
    Dtypes: f16, f32, f64 and every integer type (lambd and bias are cast to X's dtype, as
        onnxruntime does).
    """
    x = ctx.input(0)
    lambd, bias = node.attr_float("lambd"), node.attr_float("bias")
    below = builders.compare(x, builders.full_like(x, -lambd), "LT")
    above = builders.compare(x, builders.full_like(x, lambd), "GT")
    bias_value = builders.full_like(x, bias)
    inner = stablehlo.select(above, stablehlo.subtract(x, bias_value), builders.full_like(x, 0))
    return [stablehlo.select(below, stablehlo.add(x, bias_value), inner)]


# Clip ----------------------------------------------------------------------------------------


def _clip(x: ir.Value, low: ir.Value | None, high: ir.Value | None) -> ir.Value:
    """``min(max(x, low), high)``; a bound that is ``None`` is not applied.

    With ``low > high`` every element becomes ``high``, as numpy.clip and onnxruntime do.
    """
    shape = builders.dims_of(x)
    if low is not None:
        x = stablehlo.maximum(x, builders.broadcast_to(low, shape))
    if high is not None:
        x = stablehlo.minimum(x, builders.broadcast_to(high, shape))
    return x


@lowering("Clip", since=6)  # 6: min and max are attributes (defaults: the f32 range)
def lower_clip_attributes(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value]:
    """Lowers Clip-6 (bounds as attributes) to stablehlo.maximum / minimum.

    Spec: Clip-6. Shapes: any, static. Dtypes: f16, f32, f64.
    Deviations: a bound the node does not set is not applied; the spec's defaults (the f32
        range) would clip f64 values beyond it.
    """
    x = ctx.input(0)
    dtype = builders.dtype_of(x)
    low = builders.splat(node.attr_float("min"), dtype) if node.has_attr("min") else None
    high = builders.splat(node.attr_float("max"), dtype) if node.has_attr("max") else None
    return [_clip(x, low, high)]


@lowering("Clip", since=11)  # 11: min and max became optional (scalar) inputs
@lowering("Clip", since=12)  # 12 added integer types
@lowering("Clip", since=13)  # 13 added bfloat16
def lower_clip_inputs(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value]:
    """Lowers Clip-11+ (bounds as optional inputs, known at compile time or not).

    Spec: Clip-11/12/13.
    Shapes: input any, static; min and max scalars (a one-element tensor is accepted too).
    Dtypes: f16, bf16, f32, f64 and every integer type.
    """
    x = ctx.input(0)
    bounds = []
    for index in (1, 2):
        bound = ctx.optional_input(index)
        if bound is not None and builders.rank_of(bound) > 0:
            bound = builders.reshape(bound, ())
        bounds.append(bound)
    return [_clip(x, *bounds)]


# Dropout -------------------------------------------------------------------------------------


@lowering("Dropout", since=7)  # 7: `ratio` attribute, no is_test; mask has X's dtype
@lowering("Dropout", since=10)  # 10: the mask is bool
def lower_dropout_inference(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value]:
    """Lowers Dropout-7/10 as inference: the output is X, the mask all ones.

    Spec: Dropout-7/10 (test mode is the runtime's choice; a compiled model is inference).
    Shapes: any, static. Dtypes: f16, f32, f64.
    Deviations: onnxruntime returns an all-zero mask here; nothing is dropped, so this mask is
        all ones (as onnx.reference's, and Dropout-12's in inference).
    """
    x = ctx.input(0)
    outputs = [x]
    if node.has_output(1):
        mask_dtype = builders.dtype_of(x) if node.since_version < 10 else DataType.BOOL
        outputs.append(builders.splat(1, mask_dtype, builders.dims_of(x)))
    return outputs


def _uniform(shape: Sequence[Dim], seed: int) -> ir.Value:
    """f32 uniforms in [0, 1) of ``shape`` from stablehlo.rng_bit_generator (Threefry).

    rng_bit_generator needs a static result shape, so a symbolic shape draws its bits from
    :func:`_hashed_bits` instead (a different, equally seeded stream).
    """
    if is_static(shape):
        state = builders.constant(np.array([seed & (2**64 - 1), 0], dtype=np.uint64), DataType.UINT64)
        bits_type = builders.tensor_type(shape, DataType.UINT32)
        _, bits = stablehlo.rng_bit_generator(state.type, bits_type, stablehlo.RngAlgorithmAttr.get("THREE_FRY"), state)
    else:
        bits = _hashed_bits(shape, seed)
    # 23 random mantissa bits under the exponent of 1.0 give [1, 2); minus 1 gives [0, 1).
    mantissa = stablehlo.shift_right_logical(bits, builders.splat(9, DataType.UINT32, shape))
    one_to_two = stablehlo.or_(mantissa, builders.splat(0x3F800000, DataType.UINT32, shape))
    floats = stablehlo.bitcast_convert(builders.tensor_type(shape, DataType.FLOAT), one_to_two)
    return stablehlo.subtract(floats, builders.splat(1.0, DataType.FLOAT, shape))


def _hashed_bits(shape: Sequence[Dim], seed: int) -> ir.Value:
    """uint32 random bits of a symbolic ``shape``: a counter-based generator.

    Each element's row-major index ``i`` goes through two rounds of MurmurHash3's 32-bit
    finalizer keyed by the seed, ``fmix32(fmix32(i + k0) ^ k1)``: a bijection of ``i`` for
    each key, so no two elements share bits, built from dynamic_iota and wrapping uint32
    arithmetic (any shape, no static size needed).
    """
    u32 = DataType.UINT32
    flat = builders.iota([product(shape)], 0, u32)
    counts = builders.reshape(flat, shape)

    def const(value: int) -> ir.Value:
        return builders.splat(value & 0xFFFFFFFF, u32, shape)

    def fmix32(h: ir.Value) -> ir.Value:
        h = stablehlo.xor(h, stablehlo.shift_right_logical(h, const(16)))
        h = stablehlo.multiply(h, const(0x85EBCA6B))
        h = stablehlo.xor(h, stablehlo.shift_right_logical(h, const(13)))
        h = stablehlo.multiply(h, const(0xC2B2AE35))
        return stablehlo.xor(h, stablehlo.shift_right_logical(h, const(16)))

    seed &= 2**64 - 1
    mixed = fmix32(stablehlo.add(counts, const(seed)))
    return fmix32(stablehlo.xor(mixed, const((seed >> 32) ^ 0x9E3779B9)))


def _scalar_input(ctx: LoweringContext, index: int, dtype: DataType) -> ir.Value:
    value = ctx.input(index)
    if builders.rank_of(value) > 0:
        value = builders.reshape(value, ())
    return builders.convert(value, dtype)


@lowering("Dropout", since=12)  # 12: `ratio` and `training_mode` became inputs; `seed` attribute
@lowering("Dropout", since=13)  # 13 and 22 widened types (bfloat16, float8)
@lowering("Dropout", since=22)
def lower_dropout_training_input(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value]:
    """Lowers Dropout-12+: identity unless `training_mode` may be true, else a random mask.

    Without `training_mode`, with it constant false, or with `ratio` constant 0, the output is
    X and the mask all true. Otherwise ``keep = uniform >= ratio`` (stablehlo.rng_bit_generator,
    Threefry, seeded by `seed`, or by a CRC of the node name when `seed` is unset), the output
    is ``select(keep, x / (1 - ratio), 0)``, and a `training_mode` computed at run time selects
    between that and the identity.

    Spec: Dropout-12/13/22.
    Shapes: data any, symbolic dims allowed; ratio and training_mode scalars.
    Dtypes: f16, bf16, f32, f64 (the float8 types of 22 are not lowered).
    Deviations: the RNG state is a constant of the module, so every run of one compiled model
        draws the same mask (onnxruntime draws a new one per run). With symbolic dims the bits
        come from a seeded hash of each element's index (rng_bit_generator needs a static
        shape), so the mask differs from the one a static lowering of the same shape draws.
    """
    x = ctx.input(0)
    dtype = builders.dtype_of(x)
    shape = builders.dims_of(x)
    training_known = ctx.constant_input(2) if ctx.is_constant_input(2) else None
    ratio_known = ctx.constant_input(1) if ctx.is_constant_input(1) else None
    inference = not ctx.has_input(2) or (
        training_known is not None and not bool(np.asarray(training_known).reshape(-1)[0])
    )
    zero_ratio = ratio_known is not None and float(np.asarray(ratio_known).reshape(-1)[0]) == 0.0
    if inference or zero_ratio:
        outputs = [x]
        if node.has_output(1):
            outputs.append(builders.splat(True, DataType.BOOL, shape))
        return outputs

    wide = dtypes.wide_dtype(dtype)
    if ctx.has_input(1):
        ratio = _scalar_input(ctx, 1, wide)
    else:
        ratio = builders.splat(0.5, wide)
    seed = node.attr_int("seed") if node.has_attr("seed") else zlib.crc32(node.location_name.encode())
    uniform = builders.convert(_uniform(shape, seed), wide)
    keep = builders.compare(uniform, builders.broadcast_to(ratio, shape), "GE")
    one = builders.splat(1, wide)
    scale = stablehlo.divide(one, stablehlo.subtract(one, ratio))
    if training_known is None:
        training = _scalar_input(ctx, 2, DataType.BOOL)
        keep = stablehlo.or_(keep, stablehlo.not_(builders.broadcast_to(training, shape)))
        scale = stablehlo.select(training, scale, one)
    scaled = stablehlo.multiply(builders.convert(x, wide), builders.broadcast_to(scale, shape))
    y = stablehlo.select(keep, scaled, builders.splat(0, wide, shape))
    outputs = [builders.convert(y, dtype)]
    if node.has_output(1):
        outputs.append(keep)
    return outputs
