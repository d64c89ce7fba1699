"""Lowering rules: onnxruntime's fused normalizations and activations.

These are the ops ``onnxruntime.transformers.optimizer.optimize_model`` and ORT's graph
optimizer fuse transformer graphs into:

* normalizations: ``SkipLayerNormalization``, ``SkipSimplifiedLayerNormalization``,
  ``EmbedLayerNormalization`` (com.microsoft) and ``SimplifiedLayerNormalization`` (which ORT
  registers in the *default* domain, since 1);
* activations: ``Gelu``, ``BiasGelu``, ``FastGelu``, ``QuickGelu``, ``BiasAdd``.

Spec: onnxruntime docs/ContribOperators.md (the schemas in onnxruntime's
``contrib_defs.cc``/``bert_defs.cc``); where that text is silent the CPU kernels in
``onnxruntime/contrib_ops/cpu`` are the reference, and each such choice is listed in the rule's
docstring under *Deviations/ORT behaviour* and in docs/coverage.md. Attribute defaults are
stated once in ``builders/contrib.py`` (:data:`DEFAULTS`).

float16 inputs are computed in float32 and rounded once at the end, as ORT's CPU kernels do.
"""

from __future__ import annotations

import math

from jaxlib.mlir import ir
from jaxlib.mlir.dialects import stablehlo

from onnx_stablehlo.errors import ShapeError, UnsupportedAttributeError
from onnx_stablehlo.frontend import builders
from onnx_stablehlo.frontend.builders import contrib
from onnx_stablehlo.frontend.context import LoweringContext, OnnxNode
from onnx_stablehlo.frontend.dtypes import DataType
from onnx_stablehlo.frontend.registry import lowering
from onnx_stablehlo.frontend.shapes import Dim


def _mean_last(x: ir.Value) -> ir.Value:
    """The mean of ``x`` over its last axis, keepdims."""
    shape = builders.dims_of(x)
    total = builders.reduce(x, [len(shape) - 1], stablehlo.AddOp, 0, keepdims=True)
    count = shape[-1]
    if isinstance(count, int):
        return builders.divide(total, builders.full_like(total, count))
    divisor = builders.convert(builders.dim_value(count), builders.dtype_of(total))
    return stablehlo.divide(total, builders.broadcast_to(divisor, builders.dims_of(total), dims=[]))


def _layer_norm_last(
    x: ir.Value, gamma: ir.Value | None, beta: ir.Value | None, epsilon: float, simplified: bool
) -> tuple[ir.Value, ir.Value | None, ir.Value]:
    """``(y, mean, inv_std_var)`` of a (RMS when ``simplified``) layer norm over the last axis.

    ``x`` is already wide (float32/float64); ``y`` is in ``x``'s dtype; mean is ``None`` for RMS.
    Two-pass variance ``mean((x - mean)^2)``; ORT's CPU kernels use ``mean(x^2) - mean^2``,
    which agrees to a few ulp on normalization-sized rows.
    """
    shape = builders.dims_of(x)
    if simplified:
        mean = None
        centered = x
    else:
        mean = _mean_last(x)
        centered = stablehlo.subtract(x, builders.broadcast_to(mean, shape))
    variance = _mean_last(stablehlo.multiply(centered, centered))
    std = stablehlo.sqrt(stablehlo.add(variance, builders.full_like(variance, epsilon)))
    inv_std = stablehlo.divide(builders.full_like(std, 1.0), std)
    y = stablehlo.divide(centered, builders.broadcast_to(std, shape))
    if gamma is not None:
        y = stablehlo.multiply(y, builders.broadcast_to(builders.convert(gamma, builders.dtype_of(x)), shape))
    if beta is not None:
        y = contrib.add_broadcast(y, beta)
    return y, mean, inv_std


def _check_hidden(ctx: LoweringContext, index: int, hidden: Dim) -> ir.Value:
    """Input ``index`` checked to be a vector of the hidden size."""
    value = ctx.input(index)
    shape = builders.dims_of(value)
    if len(shape) != 1 or (isinstance(shape[0], int) and isinstance(hidden, int) and shape[0] != hidden):
        raise ctx.error(
            f"input '{ctx.node.input_names[index]}' must have shape [{hidden}] (the hidden size), got {list(shape)}",
            ShapeError,
        )
    return value


def _skip_layer_norm(ctx: LoweringContext, node: OnnxNode, simplified: bool) -> list[ir.Value | None]:
    x = ctx.input(0)
    dtype = builders.dtype_of(x)
    shape = builders.dims_of(x)
    if len(shape) not in (2, 3):
        raise ctx.error(f"input must have rank 2 or 3 ([batch, sequence,] hidden), got {list(shape)}", ShapeError)
    skip = ctx.input(1)
    try:
        builders.broadcast_shapes(builders.dims_of(skip), shape)
    except ValueError as exc:
        raise ctx.error(f"skip {list(builders.dims_of(skip))} does not broadcast to input {list(shape)}", ShapeError) from exc
    hidden = shape[-1]
    gamma = _check_hidden(ctx, 2, hidden)
    beta_index, bias_index = (None, 3) if simplified else (3, 4)
    beta = _check_hidden(ctx, beta_index, hidden) if beta_index is not None and ctx.has_input(beta_index) else None
    bias = _check_hidden(ctx, bias_index, hidden) if ctx.has_input(bias_index) else None
    total = contrib.add_broadcast(contrib.wide(x), contrib.wide(skip))
    if bias is not None:
        total = contrib.add_broadcast(total, contrib.wide(bias))
    y, mean, inv_std = _layer_norm_last(total, contrib.wide(gamma), None if beta is None else contrib.wide(beta), contrib.attr(node, "epsilon"), simplified)
    outputs: list[ir.Value | None] = [builders.convert(y, dtype), None, None, None]
    if node.has_output(1):
        if mean is None:
            raise ctx.error("output 'mean' is not computed by a simplified (RMS) layer norm", UnsupportedAttributeError)
        outputs[1] = builders.convert(mean, DataType.FLOAT)
    if node.has_output(2):
        outputs[2] = builders.convert(inv_std, DataType.FLOAT)
    if node.has_output(3):
        outputs[3] = builders.convert(total, dtype)
    return outputs


@lowering("SkipLayerNormalization", since=1, domain=contrib.MS)
def lower_skip_layer_normalization(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value | None]:
    """Lowers SkipLayerNormalization: LayerNorm(input + skip + bias) * gamma + beta over the last axis.

    Spec: com.microsoft SkipLayerNormalization-1.
    Shapes: input [B, S, H] or [S, H] (symbolic B, S allowed); skip broadcastable to input
        ([1, S, H], [S, H]); gamma, beta, bias [H]. Outputs: output like input; mean and
        inv_std_var [B, S, 1] float32; input_skip_bias_sum like input.
    Dtypes: f16 (computed in f32, as ORT's CPU kernel does), f32, f64.
    Deviations: variance two-pass (ORT: mean(x^2) - mean^2); agrees within float tolerance.
    Raises: ShapeError for a rank other than 2/3, a skip that does not broadcast, or gamma/beta/
        bias not of the hidden size.
    """
    return _skip_layer_norm(ctx, node, simplified=False)


@lowering("SkipSimplifiedLayerNormalization", since=1, domain=contrib.MS)
def lower_skip_simplified_layer_normalization(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value | None]:
    """Lowers SkipSimplifiedLayerNormalization: RMSNorm(input + skip + bias) * gamma (T5/Llama norm).

    Spec: com.microsoft SkipSimplifiedLayerNormalization-1 (inputs input, skip, gamma, bias).
    Shapes: as SkipLayerNormalization, without beta. Outputs: output, mean (never produced: an
        RMS norm has none), inv_std_var [B, S, 1] f32, input_skip_bias_sum.
    Dtypes: f16 (computed in f32), f32, f64.
    Raises: ShapeError as SkipLayerNormalization; UnsupportedAttributeError when output 'mean'
        is requested (ORT leaves it unset).
    Follows ORT: output 'mean' is never written.
    """
    return _skip_layer_norm(ctx, node, simplified=True)


@lowering("SimplifiedLayerNormalization", since=1)  # ORT registers it in the default domain
def lower_simplified_layer_normalization(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value | None]:
    """Lowers SimplifiedLayerNormalization (ORT's RMSNorm): x / sqrt(mean(x^2) + epsilon) * scale.

    Spec: onnxruntime's ``SimplifiedLayerNormalization-1``, registered by ORT in the ai.onnx
    domain (not an ONNX standard op; RMSNormalization-23 is the standard one).
    Shapes: X [d0, ..., dn] (symbolic dims allowed), normalized over [axis, rank); scale
        broadcastable to the normalized dims. inv_std_var: X's shape with 1s from `axis` on.
    Dtypes: X, scale f16 (computed in f32), f32, f64; Y in scale's dtype; inv_std_var f32.
    Raises: ShapeError for a bad `axis`.
    """
    x = ctx.input(0)
    shape = builders.dims_of(x)
    axis = ctx.axis(int(contrib.attr(node, "axis")), len(shape))
    wide = contrib.wide(x)
    rows = builders.reshape(wide, (*shape[:axis], contrib.product(shape[axis:])))
    _, _, inv_std = _layer_norm_last(rows, None, None, float(contrib.attr(node, "epsilon")), simplified=True)
    inv_std = builders.reshape(inv_std, (*shape[:axis], *([1] * (len(shape) - axis))))
    normalized = stablehlo.multiply(wide, builders.broadcast_to(inv_std, shape))
    scale = ctx.input(1)
    y = stablehlo.multiply(normalized, builders.broadcast_to(contrib.wide(scale), shape))
    outputs: list[ir.Value | None] = [builders.convert(y, builders.dtype_of(scale)), None]
    if node.has_output(1):
        outputs[1] = builders.convert(inv_std, DataType.FLOAT)
    return outputs


@lowering("EmbedLayerNormalization", since=1, domain=contrib.MS)
def lower_embed_layer_normalization(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value | None]:
    """Lowers EmbedLayerNormalization: LayerNorm(word[ids] + position[pos] + segment[seg]).

    ``mask_index[b]`` counts the ones in ``mask[b]`` (ORT's CPU kernel: ``count(v == 1)``; 0s
    without a mask), the form Attention's 1-D ``mask_index`` takes.

    Spec: com.microsoft EmbedLayerNormalization-1.
    Shapes: input_ids, segment_ids, mask [B, S] (symbolic allowed); embeddings [vocab, H],
        [max_pos, H], [segments, H]; gamma, beta [H]; position_ids [B, S] or [1, S] (default
        arange(S)). Outputs: output [B, S, H], mask_index [B] int32, embedding_sum [B, S, H].
    Dtypes: ids int32; embeddings f16 (summed in f32), f32.
    Deviations: out-of-range ids are clamped (ORT fails the run); gathers have no run-time check.
    Raises: ShapeError for ids not of rank 2.
    Follows ORT: mask_index[b] = count(mask[b] == 1) (zeros without a mask).
    """
    ids = ctx.input(0)
    shape = builders.dims_of(ids)
    if len(shape) != 2:
        raise ctx.error(f"input_ids must be [batch, sequence], got {list(shape)}", ShapeError)
    batch, seq = shape
    word = ctx.input(2)
    dtype = builders.dtype_of(word)
    hidden = builders.dims_of(word)[1]
    total = contrib.wide(contrib.embed(word, ids))
    if ctx.has_input(8):
        positions = ctx.input(8)
        position_rows = contrib.embed(ctx.input(3), positions)
        total = contrib.add_broadcast(total, contrib.wide(position_rows))
    else:
        arange = builders.iota([seq], 0, DataType.INT32)
        position_rows = contrib.embed(ctx.input(3), arange)  # [S, H]
        total = contrib.add_broadcast(total, contrib.wide(position_rows))
    if ctx.has_input(1) and ctx.has_input(4):
        total = contrib.add_broadcast(total, contrib.wide(contrib.embed(ctx.input(4), ctx.input(1))))
    gamma = _check_hidden(ctx, 5, hidden)
    beta = _check_hidden(ctx, 6, hidden)
    y, _, _ = _layer_norm_last(total, contrib.wide(gamma), contrib.wide(beta), float(contrib.attr(node, "epsilon")), simplified=False)
    outputs: list[ir.Value | None] = [builders.convert(y, dtype), None, None]
    if node.has_output(1):
        if ctx.has_input(7):
            mask = ctx.input(7)
            ones = builders.convert(builders.compare(mask, builders.full_like(mask, 1), "EQ"), DataType.INT32)
            outputs[1] = builders.reduce(ones, [1], stablehlo.AddOp, 0)
        else:
            outputs[1] = builders.splat(0, DataType.INT32, [batch])
    if node.has_output(2):
        outputs[2] = builders.convert(total, dtype)
    return outputs


def _with_bias(ctx: LoweringContext, bias_index: int) -> ir.Value:
    x = contrib.wide(ctx.input(0))
    if ctx.has_input(bias_index):
        bias = ctx.input(bias_index)
        try:
            builders.broadcast_shapes(builders.dims_of(bias), builders.dims_of(x))
        except ValueError as exc:
            raise ctx.error(f"bias {list(builders.dims_of(bias))} does not broadcast to {list(builders.dims_of(x))}", ShapeError) from exc
        x = contrib.add_broadcast(x, contrib.wide(bias))
    return x


def _gelu_erf(x: ir.Value) -> ir.Value:
    inner = builders.erf(stablehlo.multiply(x, builders.full_like(x, 1.0 / math.sqrt(2.0))))
    return stablehlo.multiply(stablehlo.multiply(x, builders.full_like(x, 0.5)), stablehlo.add(inner, builders.full_like(x, 1.0)))


@lowering("Gelu", since=1, domain=contrib.MS)
def lower_gelu(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value]:
    """Lowers com.microsoft Gelu: 0.5 * x * (1 + erf(x / sqrt(2))) (the exact GELU).

    Spec: com.microsoft Gelu-1.
    Shapes: any (symbolic allowed).
    Dtypes: f16 (in f32), f32, f64.
    """
    x = ctx.input(0)
    return [builders.convert(_gelu_erf(contrib.wide(x)), builders.dtype_of(x))]


@lowering("BiasGelu", since=1, domain=contrib.MS)
def lower_bias_gelu(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value]:
    """Lowers BiasGelu: exact GELU of A + B.

    Spec: com.microsoft BiasGelu-1.
    Shapes: A [..., H], B [H] (numpy-broadcast onto A).
    Dtypes: f16 (in f32), f32, f64.
    Raises: ShapeError when B does not broadcast to A.
    """
    return [builders.convert(_gelu_erf(_with_bias(ctx, 1)), ctx.input_dtype(0))]


@lowering("FastGelu", since=1, domain=contrib.MS)
def lower_fast_gelu(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value]:
    """Lowers FastGelu: the tanh GELU, 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), x = X + bias.

    Spec: com.microsoft FastGelu-1.
    Shapes: X any, bias [H] optional (broadcast onto X).
    Dtypes: f16 (in f32), f32, f64.
    Raises: ShapeError when bias does not broadcast to X.
    """
    x = _with_bias(ctx, 1)
    cube = stablehlo.multiply(stablehlo.multiply(x, x), x)
    poly = stablehlo.add(x, stablehlo.multiply(cube, builders.full_like(x, 0.044715)))
    inner = stablehlo.tanh(stablehlo.multiply(poly, builders.full_like(x, math.sqrt(2.0 / math.pi))))
    y = stablehlo.multiply(stablehlo.multiply(x, builders.full_like(x, 0.5)), stablehlo.add(inner, builders.full_like(x, 1.0)))
    return [builders.convert(y, ctx.input_dtype(0))]


@lowering("QuickGelu", since=1, domain=contrib.MS)
def lower_quick_gelu(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value]:
    """Lowers QuickGelu: x * sigmoid(alpha * x) (CLIP's GELU approximation).

    Spec: com.microsoft QuickGelu-1 (alpha default 1.702).
    Shapes: any (symbolic allowed).
    Dtypes: f16 (in f32), f32, f64.
    """
    x = contrib.wide(ctx.input(0))
    alpha = float(contrib.attr(node, "alpha"))
    y = stablehlo.multiply(x, stablehlo.logistic(stablehlo.multiply(x, builders.full_like(x, alpha))))
    return [builders.convert(y, ctx.input_dtype(0))]


@lowering("BiasAdd", since=1, domain=contrib.MS)
def lower_bias_add(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value]:
    """Lowers BiasAdd: X + bias + skip (the Stable Diffusion UNet fusion).

    Spec: com.microsoft BiasAdd-1.
    Shapes: X, skip [B, S, C]; bias [C].
    Dtypes: f16 (in f32), f32.
    Deviations: onnxruntime has a CUDA kernel only; tested against the formula.
    Raises: ShapeError for shapes that do not fit.
    """
    x = ctx.input(0)
    shape = builders.dims_of(x)
    if len(shape) != 3:
        raise ctx.error(f"X must be [batch, sequence, channels], got {list(shape)}", ShapeError)
    _check_hidden(ctx, 1, shape[-1])
    y = contrib.add_broadcast(contrib.add_broadcast(contrib.wide(x), contrib.wide(ctx.input(1))), contrib.wide(ctx.input(2)))
    return [builders.convert(y, builders.dtype_of(x))]
