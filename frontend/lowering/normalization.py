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

from onnx_stablehlo.frontend import emit
from onnx_stablehlo.frontend.context import LoweringContext, OnnxNode
from onnx_stablehlo.frontend.dtypes import DataType
from onnx_stablehlo.frontend.registry import lowering

_FLOAT_BITS = {DataType.BFLOAT16: 16, DataType.FLOAT16: 16, DataType.FLOAT: 32, DataType.DOUBLE: 64}


# Helpers -------------------------------------------------------------------------------------


def _splat_like(value: float, x: ir.Value) -> ir.Value:
    """A constant of ``x``'s shape and dtype filled with ``value``."""
    return emit.splat(value, emit.dtype_of(x), emit.static_shape_of(x))


def _reduce(x: ir.Value, axes: Sequence[int], body_op: type, init: float, keepdims: bool = False) -> ir.Value:
    """``stablehlo.reduce`` of ``x`` over ``axes`` with a binary body op.

    Like ``emit.reduce``, whose scalar init value comes out as ``tensor<1xT>`` today
    (``np.ascontiguousarray`` turns 0-d arrays into 1-d ones in ``emit.constant``); this builds
    the init as a reshaped one-element splat instead.
    """
    dtype = emit.dtype_of(x)
    shape = emit.static_shape_of(x)
    axes = sorted(set(axes))
    init_value = emit.reshape(emit.splat(init, dtype, (1,)), ())
    scalar_type = emit.tensor_type((), dtype)
    out_shape = [d for i, d in enumerate(shape) if i not in axes]
    op = stablehlo.ReduceOp([emit.tensor_type(out_shape, dtype)], [x], [init_value], emit.i64_array(axes))
    block = op.body.blocks.append(scalar_type, scalar_type)
    with ir.InsertionPoint(block):
        stablehlo.ReturnOp([body_op(block.arguments[0], block.arguments[1]).result])
    result = op.result
    if keepdims:
        result = emit.reshape(result, [1 if i in axes else d for i, d in enumerate(shape)])
    return result


def _mean_keep(x: ir.Value, axes: Sequence[int]) -> ir.Value:
    """The mean of ``x`` over ``axes`` with the reduced dims kept as size 1."""
    shape = emit.static_shape_of(x)
    count = int(np.prod([shape[a] for a in axes], dtype=np.int64))
    total = _reduce(x, axes, stablehlo.AddOp, 0, keepdims=True)
    return stablehlo.DivOp(total, _splat_like(count, total)).result


def _broadcast_like(value: ir.Value, x: ir.Value) -> ir.Value:
    return emit.broadcast_to(value, emit.static_shape_of(x))


def _standardize(x: ir.Value, axes: Sequence[int], epsilon: float) -> tuple[ir.Value, ir.Value, ir.Value]:
    """``(normalized, mean, inv_std_dev)`` of ``x`` over ``axes`` (mean, inv_std_dev keepdims).

    ``inv_std_dev = 1 / sqrt(var + epsilon)`` with ``var = mean((x - mean)^2)``.
    """
    mean = _mean_keep(x, axes)
    centered = stablehlo.SubtractOp(x, _broadcast_like(mean, x)).result
    variance = _mean_keep(stablehlo.MulOp(centered, centered).result, axes)
    std_dev = stablehlo.SqrtOp(stablehlo.AddOp(variance, _splat_like(epsilon, variance)).result).result
    inv_std_dev = stablehlo.DivOp(_splat_like(1, std_dev), std_dev).result
    normalized = stablehlo.MulOp(centered, _broadcast_like(inv_std_dev, x)).result
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


def _output_wanted(node: OnnxNode, index: int) -> bool:
    return index < len(node.output_names) and bool(node.output_names[index])


# LayerNormalization --------------------------------------------------------------------------


@lowering("LayerNormalization", since=17)
def lower_layer_normalization(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value | None]:
    """Lowers LayerNormalization to a reduce-based standardization over [axis, rank), then Scale, B.

    Mean and InvStdDev are emitted only when the node names them.

    Spec: LayerNormalization-17.
    Shapes: X [d0, ..., dn], static; Scale and B unidirectionally broadcastable to X;
        Mean, InvStdDev [d0, ..., d(axis-1), 1, ..., 1].
    Dtypes: X f16, bf16, f32, f64; Mean and InvStdDev in the `stash_type` dtype.
    Deviations: stage one never runs in fewer bits than X: f64 X with stash_type=1 is computed
        in f64, as onnxruntime does (the function body rounds through f32).
    Raises: UnsupportedAttributeError for a non-float `stash_type`; ShapeError for a bad `axis`.
    """
    x = ctx.input(0)
    dtype = emit.dtype_of(x)
    shape = emit.static_shape_of(x)
    axis = ctx.axis(node.attr_int("axis"), len(shape))
    compute, stash = _stash_dtypes(ctx, node, dtype)
    axes = list(range(axis, len(shape)))
    normalized, mean, inv_std_dev = _standardize(emit.convert(x, compute), axes, node.attr_float("epsilon"))
    y = emit.convert(normalized, dtype)
    scale = ctx.optional_input(1)
    if scale is not None:
        y = stablehlo.MulOp(y, emit.broadcast_to(scale, shape)).result
    bias = ctx.optional_input(2)
    if bias is not None:
        y = stablehlo.AddOp(y, emit.broadcast_to(bias, shape)).result
    outputs: list[ir.Value | None] = [y, None, None]
    if _output_wanted(node, 1):
        outputs[1] = emit.convert(mean, stash)
    if _output_wanted(node, 2):
        outputs[2] = emit.convert(inv_std_dev, stash)
    return outputs
