"""Lowering rules: normalizations (layer, batch, instance, group, RMS, Lp, LRN, MVN).

Every normalization is a mean and a variance over some axes (``stablehlo.reduce`` with keepdims,
broadcast back), then an affine step. Variances are two-pass, ``mean((x - mean)^2)``, which is
what the ONNX function bodies of LayerNormalization and RMSNormalization compute and is more
accurate than ``mean(x^2) - mean^2``.

``stash_type`` (LayerNormalization, GroupNormalization-21, RMSNormalization) names the dtype
stage one (standardization) runs in; see :func:`_stash_dtypes` for how it is honoured.

Spec: onnx.ai/onnx/operators (each op's page).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import stablehlo

from onnx_stablehlo.errors import ResourceLimitError, ShapeError, UnsupportedAttributeError
from onnx_stablehlo.frontend import builders, dtypes, limits
from onnx_stablehlo.frontend.context import LoweringContext, OnnxNode
from onnx_stablehlo.frontend.dtypes import DataType
from onnx_stablehlo.frontend.registry import lowering
from onnx_stablehlo.frontend.shapes import Dim, exact_div, floor_div, product

_FLOAT_BITS = {DataType.BFLOAT16: 16, DataType.FLOAT16: 16, DataType.FLOAT: 32, DataType.DOUBLE: 64}


# Helpers -------------------------------------------------------------------------------------


def _mean_keep(x: ir.Value, axes: Sequence[int]) -> ir.Value:
    """The mean of ``x`` over ``axes`` with the reduced dims kept as size 1.

    A static element count divides as a constant (``builders.divide``, correctly rounded); a
    symbolic one is the run-time product of the dims, converted to ``x``'s dtype.
    """
    shape = builders.dims_of(x)
    count = product([shape[a] for a in axes])
    total = builders.reduce(x, axes, stablehlo.add, 0, keepdims=True)
    if isinstance(count, int):
        return builders.divide(total, builders.full_like(total, count))
    divisor = builders.convert(builders.dim_value(count), builders.dtype_of(total))
    return stablehlo.divide(total, builders.broadcast_to(divisor, builders.dims_of(total), dims=[]))


def _broadcast_like(value: ir.Value, x: ir.Value) -> ir.Value:
    return builders.broadcast_to(value, builders.dims_of(x))


def _standardize(
    x: ir.Value, axes: Sequence[int], epsilon: float, *, overflow_like_moments: bool = False
) -> tuple[ir.Value, ir.Value, ir.Value]:
    """``(normalized, mean, inv_std_dev)`` of ``x`` over ``axes`` (mean, inv_std_dev keepdims).

    ``inv_std_dev = 1 / sqrt(var + epsilon)`` with ``var = mean((x - mean)^2)``.
    ``overflow_like_moments``: where ``mean(x^2)`` overflows, the variance is
    ``mean(x^2) - mean(x)^2`` as GroupNormalization's function body (and onnxruntime, and
    onnx.reference) compute it: inf, or NaN when ``mean(x)^2`` overflows too; elsewhere the
    centered form keeps its precision.
    """
    mean = _mean_keep(x, axes)
    centered = stablehlo.subtract(x, _broadcast_like(mean, x))
    variance = _mean_keep(stablehlo.multiply(centered, centered), axes)
    if overflow_like_moments:
        second = _mean_keep(stablehlo.multiply(x, x), axes)
        # mean(x^2) - mean(x)^2 with mean(x^2) = inf: NaN when mean(x)^2 overflows too, else inf.
        # (Written as selects: XLA's CPU backend fuses a - m * m into an FMA whose exact product
        # never overflows.)
        inf = builders.full_like(second, float("inf"))
        square_finite = stablehlo.is_finite(stablehlo.multiply(mean, mean))
        moments = stablehlo.select(square_finite, inf, builders.full_like(second, float("nan")))
        moments = stablehlo.select(builders.compare(second, inf, "EQ"), moments, second)  # NaN stays NaN
        variance = stablehlo.select(stablehlo.is_finite(second), variance, moments)
    std_dev = stablehlo.sqrt(stablehlo.add(variance, builders.full_like(variance, epsilon)))
    inv_std_dev = stablehlo.divide(builders.full_like(std_dev, 1), std_dev)
    normalized = stablehlo.multiply(centered, _broadcast_like(inv_std_dev, x))
    return normalized, mean, inv_std_dev


def _stash_dtypes(ctx: LoweringContext, node: OnnxNode, dtype: DataType) -> tuple[DataType, DataType]:
    """``(compute dtype, stash dtype)`` for a node with a ``stash_type`` attribute.

    The stash dtype is ``stash_type`` (the dtype of LayerNormalization's Mean and InvStdDev);
    stage one runs in it, or in ``dtype`` when ``dtype`` has more bits (onnxruntime computes
    f64 inputs in f64 under the default ``stash_type=1``).

    Raises:
        UnsupportedAttributeError: ``stash_type`` is not a float dtype.
    """
    stash_type = node.attr_int("stash_type")
    accepted = {int(d): d for d in _FLOAT_BITS}
    if stash_type not in accepted:
        raise ctx.unsupported_attribute(
            "stash_type", stash_type, "1 (float), 10 (float16), 11 (double), 16 (bfloat16)"
        )
    stash = accepted[stash_type]
    compute = dtype if _FLOAT_BITS.get(dtype, 0) > _FLOAT_BITS[stash] else stash
    return compute, stash


def _per_channel(value: ir.Value, shape: Sequence[int], dtype: DataType) -> ir.Value:
    """A [C] vector converted to ``dtype`` and broadcast along dim 1 of ``shape``."""
    return builders.broadcast_to(builders.convert(value, dtype), shape, dims=[1])


def _channel_vector(ctx: LoweringContext, index: int, channels: Dim) -> ir.Value:
    """Input ``index`` checked to be a [C] vector.

    When the vector's length or ``channels`` is symbolic, the two are assumed equal (merged by
    the importer like a broadcast of two unknown dims, and checked at run time).

    Raises:
        ShapeError: its shape is not [channels], or it is [1] against a symbolic C (which would
            broadcast instead of failing; lowered per shape then).
    """
    shape = builders.dims_of(ctx.input(index))
    if len(shape) == 1 and shape[0] != 1 and not (isinstance(shape[0], int) and isinstance(channels, int)):
        builders.broadcast_shapes(shape, (channels,))
        return ctx.input(index)
    if tuple(shape) != (channels,):
        raise ctx.error(
            f"input '{ctx.node.input_names[index]}' must have shape [{channels}] (the channel count), "
            f"got {list(shape)}",
            ShapeError,
        )
    return ctx.input(index)


# LayerNormalization --------------------------------------------------------------------------


@lowering("LayerNormalization", since=17)
def lower_layer_normalization(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value | None]:
    """Lowers LayerNormalization to a reduce-based standardization over [axis, rank), then Scale, B.

    Mean and InvStdDev are emitted only when the node names them.

    Spec: LayerNormalization-17.
    Shapes: X [d0, ..., dn] (symbolic dims allowed); Scale and B unidirectionally broadcastable to X;
        Mean, InvStdDev [d0, ..., d(axis-1), 1, ..., 1].
    Dtypes: X f16, bf16, f32, f64; Mean and InvStdDev in the `stash_type` dtype.
    Deviations: stage one never runs in fewer bits than X: f64 X with stash_type=1 is computed
        in f64, as onnxruntime does (the function body rounds through f32).
    Raises: UnsupportedAttributeError for a non-float `stash_type`; ShapeError for a bad `axis`.
    """
    x = ctx.input(0)
    dtype = builders.dtype_of(x)
    shape = builders.dims_of(x)
    axis = ctx.axis(node.attr_int("axis"), len(shape))
    compute, stash = _stash_dtypes(ctx, node, dtype)
    axes = list(range(axis, len(shape)))
    normalized, mean, inv_std_dev = _standardize(builders.convert(x, compute), axes, node.attr_float("epsilon"))
    y = builders.convert(normalized, dtype)
    scale = ctx.optional_input(1)
    if scale is not None:
        y = stablehlo.multiply(y, builders.broadcast_to(scale, shape))
    bias = ctx.optional_input(2)
    if bias is not None:
        y = stablehlo.add(y, builders.broadcast_to(bias, shape))
    outputs: list[ir.Value | None] = [y, None, None]
    if node.has_output(1):
        outputs[1] = builders.convert(mean, stash)
    if node.has_output(2):
        outputs[2] = builders.convert(inv_std_dev, stash)
    return outputs


# BatchNormalization --------------------------------------------------------------------------


@lowering("BatchNormalization", since=7)  # 7 dropped is_test (inference unless more outputs)
@lowering("BatchNormalization", since=9)  # 9 dropped `spatial` (always per channel)
@lowering("BatchNormalization", since=14)  # 14: `training_mode` attribute, 3 outputs
@lowering("BatchNormalization", since=15)  # 15: scale/B and mean/var may have their own dtypes
def lower_batch_normalization(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value | None]:
    """Lowers BatchNormalization: per-channel affine with running (inference) or batch statistics.

    Inference: ``y = scale * (x - mean) / sqrt(var + epsilon) + B``. Training (14+,
    ``training_mode=1``): the batch mean and (biased) variance over every axis but 1 normalize X,
    and ``running_* = input_* * momentum + batch_* * (1 - momentum)`` are the extra outputs.

    Spec: BatchNormalization-7/9/14/15.
    Shapes: X [N, C, d1, ..., dk] (rank >= 2, symbolic dims allowed); scale, B, mean, var [C]
        (a symbolic length is assumed to equal C).
    Dtypes: f16, bf16 (computed in f32), f32, f64; running statistics in the mean/var dtype.
    Raises: UnsupportedAttributeError for `spatial=0` (7) or training outputs before 14;
        ShapeError for a rank < 2 X or a bad [C] vector.
    """
    x = ctx.input(0)
    dtype = builders.dtype_of(x)
    shape = builders.dims_of(x)
    if len(shape) < 2:
        raise ctx.error(f"X must have rank >= 2 (N, C, ...), got shape {list(shape)}", ShapeError)
    if node.since_version < 9 and node.attr_int("spatial") != 1:
        raise ctx.unsupported_attribute("spatial", node.attr_int("spatial"), "1")
    channels = shape[1]
    scale, bias, mean, var = (_channel_vector(ctx, i, channels) for i in range(1, 5))
    stats_dtype = builders.dtype_of(mean)
    wide = dtypes.wide_dtype(dtype)
    epsilon = node.attr_float("epsilon")
    if node.since_version >= 14:
        training = node.attr_int("training_mode") != 0
    else:
        training = any(node.has_output(i) for i in range(1, 5))
        if training:
            raise ctx.error(
                "training outputs (mean, var, saved_mean, saved_var) of BatchNormalization before "
                "opset 14 are not lowered; use opset >= 14 with training_mode=1",
                UnsupportedAttributeError,
            )
    xw = builders.convert(x, wide)
    outputs: list[ir.Value | None] = [None, None, None]
    if training:
        axes = [a for a in range(len(shape)) if a != 1]
        batch_mean = _mean_keep(xw, axes)
        centered = stablehlo.subtract(xw, _broadcast_like(batch_mean, xw))
        batch_var = _mean_keep(stablehlo.multiply(centered, centered), axes)
        batch_mean = builders.reshape(batch_mean, (channels,))
        batch_var = builders.reshape(batch_var, (channels,))
        momentum = node.attr_float("momentum")
        for position, (running, batch) in enumerate([(mean, batch_mean), (var, batch_var)], start=1):
            if node.has_output(position):
                old = stablehlo.multiply(builders.convert(running, wide), builders.full_like(batch, momentum))
                new = stablehlo.multiply(batch, builders.full_like(batch, 1.0 - momentum))
                outputs[position] = builders.convert(stablehlo.add(old, new), stats_dtype)
        mean_w, var_w = batch_mean, batch_var
    else:
        mean_w, var_w = builders.convert(mean, wide), builders.convert(var, wide)
    # Fold the per-channel parts first: y = x * a + b with a = scale / sqrt(var + eps).
    inv_std = stablehlo.rsqrt(stablehlo.add(var_w, builders.full_like(var_w, epsilon)))
    factor = stablehlo.multiply(builders.convert(scale, wide), inv_std)
    offset = stablehlo.subtract(builders.convert(bias, wide), stablehlo.multiply(mean_w, factor))
    y = stablehlo.add(
        stablehlo.multiply(xw, _per_channel(factor, shape, wide)), _per_channel(offset, shape, wide)
    )
    outputs[0] = builders.convert(y, dtype)
    return outputs[: max(1, len(node.output_names))]


# InstanceNormalization -----------------------------------------------------------------------


@lowering("InstanceNormalization", since=6)
@lowering("InstanceNormalization", since=22)  # 22 widened types (bfloat16)
def lower_instance_normalization(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value]:
    """Lowers InstanceNormalization: standardize over the spatial dims, then scale[c], B[c].

    Spec: InstanceNormalization-6/22.
    Shapes: input [N, C, d1, ..., dk] (rank >= 3, symbolic dims allowed); scale, B [C] (a
        symbolic length is assumed to equal C).
    Dtypes: f16, bf16 (computed in f32), f32, f64.
    Raises: ShapeError for a rank < 3 input or a bad [C] vector.
    """
    x = ctx.input(0)
    dtype = builders.dtype_of(x)
    shape = builders.dims_of(x)
    if len(shape) < 3:
        raise ctx.error(f"input must have rank >= 3 (N, C, D1, ...), got shape {list(shape)}", ShapeError)
    scale, bias = _channel_vector(ctx, 1, shape[1]), _channel_vector(ctx, 2, shape[1])
    wide = dtypes.wide_dtype(dtype)
    normalized, _, _ = _standardize(builders.convert(x, wide), range(2, len(shape)), node.attr_float("epsilon"))
    y = stablehlo.add(
        stablehlo.multiply(normalized, _per_channel(scale, shape, wide)), _per_channel(bias, shape, wide)
    )
    return [builders.convert(y, dtype)]


# GroupNormalization --------------------------------------------------------------------------


@lowering("GroupNormalization", since=18)  # 18: scale and bias per group ([num_groups])
@lowering("GroupNormalization", since=21)  # 21: scale and bias per channel ([C]); stash_type
def lower_group_normalization(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value]:
    """Lowers GroupNormalization: X viewed as [N, G, C/G * D...], standardized over the last dim.

    Revision 18 scales and shifts per group (scale, bias [num_groups]); 21 per channel (scale,
    bias [C]) and computes stage one in `stash_type` (see _stash_dtypes).

    Spec: GroupNormalization-18, GroupNormalization-21.
    Shapes: X [N, C, d1, ..., dk] (rank >= 2, symbolic dims allowed), C divisible by num_groups
        (checked at compile time only when C is static); scale, bias [num_groups] (18) or [C] (21).
    Dtypes: f16, bf16 (computed in f32), f32, f64.
    Raises: ShapeError if C is not divisible by num_groups or scale/bias have the wrong shape;
        UnsupportedAttributeError for a non-float `stash_type` (21).
    """
    x = ctx.input(0)
    dtype = builders.dtype_of(x)
    shape = builders.dims_of(x)
    if len(shape) < 2:
        raise ctx.error(f"X must have rank >= 2 (N, C, ...), got shape {list(shape)}", ShapeError)
    groups = node.attr_int("num_groups")
    batch, channels = shape[0], shape[1]
    if groups <= 0 or (isinstance(channels, int) and channels % groups):
        raise ctx.error(f"num_groups={groups} does not divide the {channels} channels", ShapeError)
    per_channel = node.since_version >= 21
    width = channels if per_channel else groups
    scale, bias = _channel_vector(ctx, 1, width), _channel_vector(ctx, 2, width)
    if per_channel:
        compute, _ = _stash_dtypes(ctx, node, dtype)
    else:
        compute = dtypes.wide_dtype(dtype)
    group_size = product(shape[1:])
    if isinstance(group_size, int):
        group_size //= groups
    else:  # C / num_groups * D...; a symbolic C not divisible by num_groups fails the reshape at run time
        group_size = exact_div(group_size, groups) or floor_div(channels, groups) * product(shape[2:])
    grouped_shape = (batch, groups, group_size)
    grouped = builders.reshape(builders.convert(x, compute), grouped_shape)
    normalized, _, _ = _standardize(grouped, [2], node.attr_float("epsilon"), overflow_like_moments=True)
    if per_channel:
        normalized = builders.reshape(builders.convert(normalized, dtype), shape)
        target = shape
    else:
        normalized = builders.convert(normalized, dtype)
        target = grouped_shape
    scaled = stablehlo.multiply(normalized, _per_channel(scale, target, dtype))
    y = stablehlo.add(scaled, _per_channel(bias, target, dtype))
    return [builders.reshape(y, shape)]


# RMSNormalization ----------------------------------------------------------------------------


@lowering("RMSNormalization", since=23)
def lower_rms_normalization(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value]:
    """Lowers RMSNormalization to x / sqrt(mean(x^2 over [axis, rank)) + epsilon) * scale.

    Spec: RMSNormalization-23.
    Shapes: X [d0, ..., dn] (symbolic dims allowed); scale unidirectionally broadcastable to X.
    Dtypes: X and scale f16, bf16, f32, f64; Y has scale's dtype; stage one in `stash_type`
        (see _stash_dtypes).
    Raises: UnsupportedAttributeError for a non-float `stash_type`; ShapeError for a bad `axis`.
    """
    x = ctx.input(0)
    dtype = builders.dtype_of(x)
    shape = builders.dims_of(x)
    axis = ctx.axis(node.attr_int("axis"), len(shape))
    compute, _ = _stash_dtypes(ctx, node, dtype)
    xc = builders.convert(x, compute)
    mean_square = _mean_keep(stablehlo.multiply(xc, xc), range(axis, len(shape)))
    epsilon = builders.full_like(mean_square, node.attr_float("epsilon"))
    rms = stablehlo.sqrt(stablehlo.add(mean_square, epsilon))
    normalized = builders.convert(stablehlo.divide(xc, _broadcast_like(rms, xc)), dtype)
    scale = ctx.input(1)
    normalized = builders.convert(normalized, builders.dtype_of(scale))
    return [stablehlo.multiply(normalized, builders.broadcast_to(scale, shape))]


# LpNormalization -----------------------------------------------------------------------------


@lowering("LpNormalization", since=1)
@lowering("LpNormalization", since=22)  # 22 widened types (bfloat16)
def lower_lp_normalization(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value]:
    """Lowers LpNormalization to x / norm(x, axis), 0 where the norm is 0.

    p=1: the sum of |x|; p=2: sqrt of the sum of squares.

    Spec: LpNormalization-1/22.
    Shapes: input [d0, ..., dn] static.
    Dtypes: f16, bf16 (computed in f32), f32, f64.
    Raises: UnsupportedAttributeError for p other than 1 and 2; ShapeError for a bad `axis`.
    """
    x = ctx.input(0)
    dtype = builders.dtype_of(x)
    p = node.attr_int("p")
    if p not in (1, 2):
        raise ctx.unsupported_attribute("p", p, "1, 2")
    axis = ctx.axis(node.attr_int("axis"), builders.rank_of(x))
    xw = builders.convert(x, dtypes.wide_dtype(dtype))
    if p == 1:
        norm = builders.reduce(stablehlo.abs(xw), [axis], stablehlo.add, 0, keepdims=True)
    else:
        squares = stablehlo.multiply(xw, xw)
        norm = stablehlo.sqrt(builders.reduce(squares, [axis], stablehlo.add, 0, keepdims=True))
    norm = _broadcast_like(norm, xw)
    zero = builders.full_like(xw, 0)
    is_zero = builders.compare(norm, zero, "EQ")
    y = stablehlo.select(is_zero, zero, stablehlo.divide(xw, norm))
    return [builders.convert(y, dtype)]


# LRN -----------------------------------------------------------------------------------------


@lowering("LRN", since=1)
@lowering("LRN", since=13)  # 13 widened types (bfloat16)
def lower_lrn(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value]:
    """Lowers LRN: a stablehlo.reduce_window sum of squares across channels, then the power.

    ``y = x / (bias + alpha / size * square_sum) ^ beta``, the window covering channels
    ``[c - floor((size - 1) / 2), c + ceil((size - 1) / 2)]`` clipped to ``[0, C)``.

    Spec: LRN-1/13.
    Shapes: X [N, C, d1, ..., dk] static (rank >= 2).
    Dtypes: f16, bf16 (computed in f32), f32, f64.
    Deviations: the window is clipped to the channels before it is emitted (a ``size`` of
        2^62 sums the same channels as ``2 * C - 1``; ``alpha / size`` keeps the given size);
        onnxruntime refuses even sizes, which follow the formula above here as in onnx.reference.
    Raises: UnsupportedAttributeError for size < 1; ShapeError for rank < 2.
    """
    x = ctx.input(0)
    dtype = builders.dtype_of(x)
    shape = builders.dims_of(x)
    if len(shape) < 2:
        raise ctx.error(f"X must have rank >= 2 (N, C, ...), got shape {list(shape)}", ShapeError)
    size = node.attr_int("size")
    if size < 1:
        raise ctx.unsupported_attribute("size", size, "an integer >= 1")
    wide = dtypes.wide_dtype(dtype)
    xw = builders.convert(x, wide)
    squares = stablehlo.multiply(xw, xw)
    before, after = (size - 1) // 2, size - 1 - (size - 1) // 2
    channels = shape[1]
    if isinstance(channels, int):  # channels beyond [0, C) are padding: clip the window to them
        before, after = min(before, max(channels - 1, 0)), min(after, max(channels - 1, 0))
    elif size > 2 * limits.MAX_WINDOW:
        raise ctx.error(f"size={size} over a symbolic channel count exceeds the window limit", ResourceLimitError)
    window = [1] * len(shape)
    window[1] = before + after + 1
    padding = [(0, 0)] * len(shape)
    padding[1] = (before, after)
    (square_sum,) = builders.reduce_window(
        [squares], [builders.splat(0, wide)], window, lambda acc, x: [stablehlo.add(acc[0], x[0])], padding=padding
    )
    alpha, beta, bias = node.attr_float("alpha"), node.attr_float("beta"), node.attr_float("bias")
    weighted = stablehlo.multiply(square_sum, builders.full_like(square_sum, alpha / size))
    base = stablehlo.add(weighted, builders.full_like(square_sum, bias))
    denominator = stablehlo.power(base, builders.full_like(base, beta))
    return [builders.convert(stablehlo.divide(xw, denominator), dtype)]


# MeanVarianceNormalization -------------------------------------------------------------------

_MVN_EPSILON = 1e-9  # added to the standard deviation by the ONNX function body


@lowering("MeanVarianceNormalization", since=9)
@lowering("MeanVarianceNormalization", since=13)  # 13 widened types (bfloat16)
def lower_mean_variance_normalization(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value]:
    """Lowers MeanVarianceNormalization to (x - mean) / (sqrt(var) + 1e-9) over `axes`.

    Spec: MeanVarianceNormalization-9/13 (the 1e-9 comes from its function body).
    Shapes: X [d0, ..., dn] (symbolic dims allowed).
    Dtypes: f16, bf16 (computed in f32), f32, f64.
    Deviations: the variance is two-pass, mean((x - mean)^2), where the function body computes
        mean(x^2) - mean^2 (same value, never negative).
    Raises: ShapeError for an axis out of range.
    """
    x = ctx.input(0)
    dtype = builders.dtype_of(x)
    rank = builders.rank_of(x)
    axes = sorted({ctx.axis(a, rank) for a in node.attr_ints("axes")})
    xw = builders.convert(x, dtypes.wide_dtype(dtype))
    mean = _broadcast_like(_mean_keep(xw, axes), xw)
    centered = stablehlo.subtract(xw, mean)
    std = stablehlo.sqrt(_mean_keep(stablehlo.multiply(centered, centered), axes))
    denominator = _broadcast_like(stablehlo.add(std, builders.full_like(std, _MVN_EPSILON)), xw)
    return [builders.convert(stablehlo.divide(centered, denominator), dtype)]
