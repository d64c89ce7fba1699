"""Lowering rules: onnxruntime's ``com.microsoft`` transformer ops (fused norms, GELUs, attention, RoPE).

These are the ops ``onnxruntime.transformers.optimizer.optimize_model`` and ORT's graph
optimizer fuse transformer graphs into, and that ORT GenAI / Optimum exports use:

* normalizations: ``SkipLayerNormalization``, ``SkipSimplifiedLayerNormalization``,
  ``EmbedLayerNormalization`` (com.microsoft) and ``SimplifiedLayerNormalization`` (which ORT
  registers in the *default* domain, since 1);
* activations: ``Gelu``, ``BiasGelu``, ``FastGelu``, ``QuickGelu``, ``BiasAdd``;
* attention: ``Attention`` (packed QKV projection, optional past), ``MultiHeadAttention``,
  ``RotaryEmbedding`` (the contrib input order ``(input, position_ids, cos_cache, sin_cache)``,
  which differs from ai.onnx RotaryEmbedding-23: the registry dispatches by domain).

Spec: onnxruntime docs/ContribOperators.md (the schemas in onnxruntime's
``contrib_defs.cc``/``bert_defs.cc``); where that text is silent the CPU kernels in
``onnxruntime/contrib_ops/cpu`` are the reference, and each such choice is listed in the rule's
docstring under *Deviations/ORT behaviour* and in docs/coverage.md.

Attribute defaults: ``onnx.defs`` has no ``com.microsoft`` schemas, so each default is stated
once in :data:`DEFAULTS` (from the contrib schema); ``tests/frontend/test_contrib_transformer.py``
checks them against the schemas onnxruntime registers.

float16 inputs are computed in float32 and rounded once at the end, as ORT's CPU kernels do.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import stablehlo

from onnx_stablehlo.errors import ShapeError, UnsupportedAttributeError
from onnx_stablehlo.frontend import emit
from onnx_stablehlo.frontend.context import LoweringContext, OnnxNode
from onnx_stablehlo.frontend.dtypes import DataType
from onnx_stablehlo.frontend.builders import matmul
from onnx_stablehlo.frontend.registry import lowering
from onnx_stablehlo.frontend.shapes import Dim

MS = "com.microsoft"

DEFAULTS: dict[tuple[str, str], object] = {
    ("SkipLayerNormalization", "epsilon"): 1e-12,
    ("SkipSimplifiedLayerNormalization", "epsilon"): 1e-12,
    ("EmbedLayerNormalization", "epsilon"): 1e-12,
    ("EmbedLayerNormalization", "mask_index_type"): 1,
    ("SimplifiedLayerNormalization", "epsilon"): 1e-5,
    ("SimplifiedLayerNormalization", "axis"): -1,
    ("SimplifiedLayerNormalization", "stash_type"): 1,
    ("QuickGelu", "alpha"): 1.702,
    ("Attention", "unidirectional"): 0,
    ("Attention", "mask_filter_value"): -10000.0,
    ("Attention", "do_rotary"): 0,
    ("Attention", "past_present_share_buffer"): 0,
    ("MultiHeadAttention", "unidirectional"): 0,
    ("MultiHeadAttention", "mask_filter_value"): -10000.0,
    ("RotaryEmbedding", "interleaved"): 0,
    ("RotaryEmbedding", "rotary_embedding_dim"): 0,
    ("RotaryEmbedding", "num_heads"): 0,
    ("RotaryEmbedding", "scale"): 1.0,
    ("RotaryEmbedding", "is_packed_batching"): 0,
    ("GroupQueryAttention", "local_window_size"): -1,
    ("GroupQueryAttention", "do_rotary"): 0,
    ("GroupQueryAttention", "rotary_interleaved"): 0,
    ("GroupQueryAttention", "softcap"): 0.0,
    ("GroupQueryAttention", "smooth_softmax"): -1,
    ("GroupQueryAttention", "qk_output"): 0,
    ("GroupQueryAttention", "k_quant_type"): "NONE",
    ("GroupQueryAttention", "v_quant_type"): "NONE",
}
"""``(op_type, attribute) -> default`` of the com.microsoft (and ORT-only) schemas."""

_HALF = (DataType.FLOAT16, DataType.BFLOAT16)


def _attr(node: OnnxNode, name: str):
    return node.attr(name, DEFAULTS[(node.op_type, name)])


def _wide(x: ir.Value) -> ir.Value:
    """``x`` in float32 when it is float16/bfloat16 (ORT's CPU kernels compute those in float)."""
    return emit.convert(x, DataType.FLOAT) if emit.dtype_of(x) in _HALF else x


def _scalar(value: float, like: ir.Value) -> ir.Value:
    return emit.full_like(like, value)


def _output_wanted(node: OnnxNode, index: int) -> bool:
    return index < len(node.output_names) and bool(node.output_names[index])


def _concat(values: Sequence[ir.Value], axis: int) -> ir.Value:
    """``stablehlo.concatenate`` along ``axis`` (symbolic dims recorded)."""
    shapes = [emit.dims_of(v) for v in values]
    out = list(shapes[0])
    total: Dim = 0
    for shape in shapes:
        total = total + shape[axis]
    out[axis] = total
    op = stablehlo.ConcatenateOp(list(values), ir.IntegerAttr.get(ir.IntegerType.get_signless(64), axis))
    return emit.record(op.result, out)


def _add_broadcast(x: ir.Value, other: ir.Value) -> ir.Value:
    """``x + other`` with ``other`` numpy-broadcast onto ``x``'s shape (and dtype)."""
    other = emit.convert(other, emit.dtype_of(x))
    return stablehlo.AddOp(x, emit.broadcast_to(other, emit.dims_of(x))).result


def _mean_last(x: ir.Value) -> ir.Value:
    """The mean of ``x`` over its last axis, keepdims."""
    shape = emit.dims_of(x)
    total = emit.reduce(x, [len(shape) - 1], stablehlo.AddOp, 0, keepdims=True)
    count = shape[-1]
    if isinstance(count, int):
        return emit.divide(total, emit.full_like(total, count))
    divisor = emit.convert(emit.dim_value(count), emit.dtype_of(total))
    return stablehlo.DivOp(total, emit.broadcast_to(divisor, emit.dims_of(total), dims=[])).result


def _layer_norm_last(
    x: ir.Value, gamma: ir.Value | None, beta: ir.Value | None, epsilon: float, simplified: bool
) -> tuple[ir.Value, ir.Value | None, ir.Value]:
    """``(y, mean, inv_std_var)`` of a (RMS when ``simplified``) layer norm over the last axis.

    ``x`` is already wide (float32/float64); ``y`` is in ``x``'s dtype; mean is ``None`` for RMS.
    Two-pass variance ``mean((x - mean)^2)``; ORT's CPU kernels use ``mean(x^2) - mean^2``,
    which agrees to a few ulp on normalization-sized rows.
    """
    shape = emit.dims_of(x)
    if simplified:
        mean = None
        centered = x
    else:
        mean = _mean_last(x)
        centered = stablehlo.SubtractOp(x, emit.broadcast_to(mean, shape)).result
    variance = _mean_last(stablehlo.MulOp(centered, centered).result)
    std = stablehlo.SqrtOp(stablehlo.AddOp(variance, _scalar(epsilon, variance)).result).result
    inv_std = stablehlo.DivOp(_scalar(1.0, std), std).result
    y = stablehlo.DivOp(centered, emit.broadcast_to(std, shape)).result
    if gamma is not None:
        y = stablehlo.MulOp(y, emit.broadcast_to(emit.convert(gamma, emit.dtype_of(x)), shape)).result
    if beta is not None:
        y = _add_broadcast(y, beta)
    return y, mean, inv_std


def _check_hidden(ctx: LoweringContext, index: int, hidden: Dim) -> ir.Value:
    """Input ``index`` checked to be a vector of the hidden size."""
    value = ctx.input(index)
    shape = emit.dims_of(value)
    if len(shape) != 1 or (isinstance(shape[0], int) and isinstance(hidden, int) and shape[0] != hidden):
        raise ctx.error(
            f"input '{ctx.node.input_names[index]}' must have shape [{hidden}] (the hidden size), got {list(shape)}",
            ShapeError,
        )
    return value


# Normalizations ------------------------------------------------------------------------------


def _skip_layer_norm(ctx: LoweringContext, node: OnnxNode, simplified: bool) -> list[ir.Value | None]:
    x = ctx.input(0)
    dtype = emit.dtype_of(x)
    shape = emit.dims_of(x)
    if len(shape) not in (2, 3):
        raise ctx.error(f"input must have rank 2 or 3 ([batch, sequence,] hidden), got {list(shape)}", ShapeError)
    skip = ctx.input(1)
    try:
        emit.broadcast_shapes(emit.dims_of(skip), shape)
    except ValueError as exc:
        raise ctx.error(f"skip {list(emit.dims_of(skip))} does not broadcast to input {list(shape)}", ShapeError) from exc
    hidden = shape[-1]
    gamma = _check_hidden(ctx, 2, hidden)
    beta_index, bias_index = (None, 3) if simplified else (3, 4)
    beta = _check_hidden(ctx, beta_index, hidden) if beta_index is not None and ctx.has_input(beta_index) else None
    bias = _check_hidden(ctx, bias_index, hidden) if ctx.has_input(bias_index) else None
    total = _add_broadcast(_wide(x), _wide(skip))
    if bias is not None:
        total = _add_broadcast(total, _wide(bias))
    y, mean, inv_std = _layer_norm_last(total, _wide(gamma), None if beta is None else _wide(beta), _attr(node, "epsilon"), simplified)
    outputs: list[ir.Value | None] = [emit.convert(y, dtype), None, None, None]
    if _output_wanted(node, 1):
        if mean is None:
            raise ctx.error("output 'mean' is not computed by a simplified (RMS) layer norm", UnsupportedAttributeError)
        outputs[1] = emit.convert(mean, DataType.FLOAT)
    if _output_wanted(node, 2):
        outputs[2] = emit.convert(inv_std, DataType.FLOAT)
    if _output_wanted(node, 3):
        outputs[3] = emit.convert(total, dtype)
    return outputs


@lowering("SkipLayerNormalization", since=1, domain=MS)
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


@lowering("SkipSimplifiedLayerNormalization", since=1, domain=MS)
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
    shape = emit.dims_of(x)
    axis = ctx.axis(int(_attr(node, "axis")), len(shape))
    wide = _wide(x)
    rows = emit.reshape(wide, (*shape[:axis], _product(shape[axis:])))
    _, _, inv_std = _layer_norm_last(rows, None, None, float(_attr(node, "epsilon")), simplified=True)
    inv_std = emit.reshape(inv_std, (*shape[:axis], *([1] * (len(shape) - axis))))
    normalized = stablehlo.MulOp(wide, emit.broadcast_to(inv_std, shape)).result
    scale = ctx.input(1)
    y = stablehlo.MulOp(normalized, emit.broadcast_to(_wide(scale), shape)).result
    outputs: list[ir.Value | None] = [emit.convert(y, emit.dtype_of(scale)), None]
    if _output_wanted(node, 1):
        outputs[1] = emit.convert(inv_std, DataType.FLOAT)
    return outputs


def _product(dims: Sequence[Dim]) -> Dim:
    total: Dim = 1
    for d in dims:
        total = total * d
    return total


@lowering("EmbedLayerNormalization", since=1, domain=MS)
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
    shape = emit.dims_of(ids)
    if len(shape) != 2:
        raise ctx.error(f"input_ids must be [batch, sequence], got {list(shape)}", ShapeError)
    batch, seq = shape
    word = ctx.input(2)
    dtype = emit.dtype_of(word)
    hidden = emit.dims_of(word)[1]
    total = _wide(_embed(word, ids))
    if ctx.has_input(8):
        positions = ctx.input(8)
        position_rows = _embed(ctx.input(3), positions)
        total = _add_broadcast(total, _wide(position_rows))
    else:
        arange = emit.iota([seq], 0, DataType.INT32)
        position_rows = _embed(ctx.input(3), arange)  # [S, H]
        total = _add_broadcast(total, _wide(position_rows))
    if ctx.has_input(1) and ctx.has_input(4):
        total = _add_broadcast(total, _wide(_embed(ctx.input(4), ctx.input(1))))
    gamma = _check_hidden(ctx, 5, hidden)
    beta = _check_hidden(ctx, 6, hidden)
    y, _, _ = _layer_norm_last(total, _wide(gamma), _wide(beta), float(_attr(node, "epsilon")), simplified=False)
    outputs: list[ir.Value | None] = [emit.convert(y, dtype), None, None]
    if _output_wanted(node, 1):
        if ctx.has_input(7):
            mask = ctx.input(7)
            ones = emit.convert(emit.compare(mask, emit.full_like(mask, 1), "EQ"), DataType.INT32)
            outputs[1] = emit.reduce(ones, [1], stablehlo.AddOp, 0)
        else:
            outputs[1] = emit.splat(0, DataType.INT32, [batch])
    if _output_wanted(node, 2):
        outputs[2] = emit.convert(total, dtype)
    return outputs


def _embed(table: ir.Value, ids: ir.Value) -> ir.Value:
    """``table[ids]`` (rows of a [V, H] table) for any-rank integer ids, clamped into range."""
    ids_shape = emit.dims_of(ids)
    vocab, hidden = emit.dims_of(table)
    flat = emit.reshape(emit.convert(ids, DataType.INT64), [_product(ids_shape)])
    flat = stablehlo.ClampOp(emit.full_like(flat, 0), flat, _dim_minus_one(vocab, flat)).result
    rows = emit.take(table, flat, 0)
    return emit.reshape(rows, (*ids_shape, hidden))


def _dim_minus_one(dim: Dim, like: ir.Value) -> ir.Value:
    value = emit.dim_value(dim)
    value = stablehlo.SubtractOp(value, emit.constant(np.array(1, np.int64))).result
    return emit.broadcast_to(value, emit.dims_of(like), dims=[])


# Activations ---------------------------------------------------------------------------------


def _with_bias(ctx: LoweringContext, bias_index: int) -> ir.Value:
    x = _wide(ctx.input(0))
    if ctx.has_input(bias_index):
        bias = ctx.input(bias_index)
        try:
            emit.broadcast_shapes(emit.dims_of(bias), emit.dims_of(x))
        except ValueError as exc:
            raise ctx.error(f"bias {list(emit.dims_of(bias))} does not broadcast to {list(emit.dims_of(x))}", ShapeError) from exc
        x = _add_broadcast(x, _wide(bias))
    return x


def _gelu_erf(x: ir.Value) -> ir.Value:
    inner = emit.erf(stablehlo.MulOp(x, _scalar(1.0 / math.sqrt(2.0), x)).result)
    return stablehlo.MulOp(stablehlo.MulOp(x, _scalar(0.5, x)).result, stablehlo.AddOp(inner, _scalar(1.0, x)).result).result


@lowering("Gelu", since=1, domain=MS)
def lower_gelu(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value]:
    """Lowers com.microsoft Gelu: 0.5 * x * (1 + erf(x / sqrt(2))) (the exact GELU).

    Spec: com.microsoft Gelu-1.
    Shapes: any (symbolic allowed).
    Dtypes: f16 (in f32), f32, f64.
    """
    x = ctx.input(0)
    return [emit.convert(_gelu_erf(_wide(x)), emit.dtype_of(x))]


@lowering("BiasGelu", since=1, domain=MS)
def lower_bias_gelu(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value]:
    """Lowers BiasGelu: exact GELU of A + B.

    Spec: com.microsoft BiasGelu-1.
    Shapes: A [..., H], B [H] (numpy-broadcast onto A).
    Dtypes: f16 (in f32), f32, f64.
    Raises: ShapeError when B does not broadcast to A.
    """
    return [emit.convert(_gelu_erf(_with_bias(ctx, 1)), ctx.input_dtype(0))]


@lowering("FastGelu", since=1, domain=MS)
def lower_fast_gelu(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value]:
    """Lowers FastGelu: the tanh GELU, 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), x = X + bias.

    Spec: com.microsoft FastGelu-1.
    Shapes: X any, bias [H] optional (broadcast onto X).
    Dtypes: f16 (in f32), f32, f64.
    Raises: ShapeError when bias does not broadcast to X.
    """
    x = _with_bias(ctx, 1)
    cube = stablehlo.MulOp(stablehlo.MulOp(x, x).result, x).result
    poly = stablehlo.AddOp(x, stablehlo.MulOp(cube, _scalar(0.044715, x)).result).result
    inner = stablehlo.TanhOp(stablehlo.MulOp(poly, _scalar(math.sqrt(2.0 / math.pi), x)).result).result
    y = stablehlo.MulOp(stablehlo.MulOp(x, _scalar(0.5, x)).result, stablehlo.AddOp(inner, _scalar(1.0, x)).result).result
    return [emit.convert(y, ctx.input_dtype(0))]


@lowering("QuickGelu", since=1, domain=MS)
def lower_quick_gelu(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value]:
    """Lowers QuickGelu: x * sigmoid(alpha * x) (CLIP's GELU approximation).

    Spec: com.microsoft QuickGelu-1 (alpha default 1.702).
    Shapes: any (symbolic allowed).
    Dtypes: f16 (in f32), f32, f64.
    """
    x = _wide(ctx.input(0))
    alpha = float(_attr(node, "alpha"))
    y = stablehlo.MulOp(x, stablehlo.LogisticOp(stablehlo.MulOp(x, _scalar(alpha, x)).result).result).result
    return [emit.convert(y, ctx.input_dtype(0))]


@lowering("BiasAdd", since=1, domain=MS)
def lower_bias_add(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value]:
    """Lowers BiasAdd: X + bias + skip (the Stable Diffusion UNet fusion).

    Spec: com.microsoft BiasAdd-1.
    Shapes: X, skip [B, S, C]; bias [C].
    Dtypes: f16 (in f32), f32.
    Deviations: onnxruntime has a CUDA kernel only; tested against the formula.
    Raises: ShapeError for shapes that do not fit.
    """
    x = ctx.input(0)
    shape = emit.dims_of(x)
    if len(shape) != 3:
        raise ctx.error(f"X must be [batch, sequence, channels], got {list(shape)}", ShapeError)
    _check_hidden(ctx, 1, shape[-1])
    y = _add_broadcast(_add_broadcast(_wide(x), _wide(ctx.input(1))), _wide(ctx.input(2)))
    return [emit.convert(y, emit.dtype_of(x))]


# Attention -----------------------------------------------------------------------------------


def _heads(x: ir.Value, num_heads: int, head_size: int) -> ir.Value:
    """[B, S, N*h] -> [B, N, S, h]."""
    batch, seq, _ = emit.dims_of(x)
    return emit.transpose(emit.reshape(x, (batch, seq, num_heads, head_size)), [0, 2, 1, 3])


def _merge_heads(x: ir.Value) -> ir.Value:
    """[B, N, S, h] -> [B, S, N*h]."""
    batch, heads, seq, size = emit.dims_of(x)
    return emit.reshape(emit.transpose(x, [0, 2, 1, 3]), (batch, seq, heads * size))


def _batched_dot(lhs: ir.Value, rhs: ir.Value, lhs_contract: int, rhs_contract: int) -> ir.Value:
    """dot_general batched over the first two dims of rank-4 operands."""
    lhs_shape, rhs_shape = emit.dims_of(lhs), emit.dims_of(rhs)
    shape = [lhs_shape[0], lhs_shape[1]]
    shape += [d for i, d in enumerate(lhs_shape) if i >= 2 and i != lhs_contract]
    shape += [d for i, d in enumerate(rhs_shape) if i >= 2 and i != rhs_contract]
    numbers = stablehlo.DotDimensionNumbers.get(
        lhs_batching_dimensions=[0, 1],
        rhs_batching_dimensions=[0, 1],
        lhs_contracting_dimensions=[lhs_contract],
        rhs_contracting_dimensions=[rhs_contract],
    )
    result = stablehlo.DotGeneralOp(emit.tensor_type(shape, emit.dtype_of(lhs)), lhs, rhs, numbers).result
    return emit.record(result, shape)


def _repeat_kv(x: ir.Value, groups: int) -> ir.Value:
    """[B, KV, T, h] -> [B, KV*groups, T, h], each kv head repeated for its group of q heads."""
    if groups == 1:
        return x
    batch, kv, total, size = emit.dims_of(x)
    wide = emit.broadcast_to(x, (batch, kv, groups, total, size), dims=[0, 1, 3, 4])
    return emit.reshape(wide, (batch, kv * groups, total, size))


def scaled_dot_product_attention(
    q: ir.Value,
    k: ir.Value,
    v: ir.Value,
    scale: float,
    additive: ir.Value | None = None,
    keep: ir.Value | None = None,
    softcap: float = 0.0,
) -> ir.Value:
    """``softmax(scale * q k^T + additive, where keep) v`` for [B, N, S, h] q and [B, N, T, h] k, v.

    ``additive`` broadcasts to [B, N, S, T] (masks with a finite filter value, attention
    biases); ``keep`` (bool, broadcastable to [B, N, S, T]) sets the dropped scores to the
    lowest float before the softmax, as ORT does for causal masks; ``softcap > 0`` caps the
    scaled scores to ``softcap * tanh(s / softcap)`` first (Gemma 2). Computed in q's dtype
    (callers widen f16 first); softmax is max-shifted.
    """
    scores = _batched_dot(q, k, 3, 3)
    shape = emit.dims_of(scores)
    scores = stablehlo.MulOp(scores, _scalar(scale, scores)).result
    if softcap > 0:
        capped = stablehlo.TanhOp(stablehlo.DivOp(scores, _scalar(softcap, scores)).result).result
        scores = stablehlo.MulOp(capped, _scalar(softcap, scores)).result
    if additive is not None:
        scores = stablehlo.AddOp(scores, emit.broadcast_to(emit.convert(additive, emit.dtype_of(scores)), shape)).result
    if keep is not None:
        lowest = float(np.finfo(np.float32).min) if emit.dtype_of(scores) == DataType.FLOAT else float(np.finfo(np.float64).min)
        scores = stablehlo.SelectOp(emit.broadcast_to(keep, shape), scores, _scalar(lowest, scores)).result
    top = emit.reduce(scores, [3], stablehlo.MaxOp, -np.inf, keepdims=True)
    exp = stablehlo.ExpOp(stablehlo.SubtractOp(scores, emit.broadcast_to(top, shape)).result).result
    total = emit.reduce(exp, [3], stablehlo.AddOp, 0, keepdims=True)
    probs = stablehlo.DivOp(exp, emit.broadcast_to(total, shape)).result
    return _batched_dot(probs, v, 3, 2)


def causal_keep(seq: Dim, total: Dim, past: Dim) -> ir.Value:
    """[S, T] bool: key position t is visible from query s when t <= past + s."""
    rows = emit.iota([seq, total], 0, DataType.INT64)
    cols = emit.iota([seq, total], 1, DataType.INT64)
    limit = stablehlo.AddOp(rows, emit.broadcast_to(emit.dim_value(past), emit.dims_of(rows), dims=[])).result
    return emit.compare(cols, limit, "LE")


def _mask_from_index(
    ctx: LoweringContext, index: int, batch: Dim, seq: Dim, total: Dim, filter_value: float, dtype: DataType
) -> ir.Value:
    """Attention's ``mask_index`` as an additive [B, 1, S|1, T] mask (0 or ``filter_value``).

    1-D [B]: keys at or after ``mask_index[b]`` are masked (right padding); [2B]: also keys
    before ``mask_index[B + b]`` (left padding); 2-D [B, T]: raw 0/1 mask; 3-D [B, S, T].
    """
    mask = ctx.input(index)
    shape = emit.dims_of(mask)
    zero, fill = emit.splat(0.0, dtype), emit.splat(filter_value, dtype)

    def additive(keep: ir.Value) -> ir.Value:
        out_shape = emit.dims_of(keep)
        return stablehlo.SelectOp(keep, emit.broadcast_to(zero, out_shape, dims=[]), emit.broadcast_to(fill, out_shape, dims=[])).result

    if len(shape) == 1:
        positions = emit.iota([batch, total], 1, DataType.INT32)
        end_only = shape[0] == batch
        end = mask if end_only else emit.slice_axis(mask, 0, 0, batch)
        keep = emit.compare(positions, emit.broadcast_to(emit.convert(end, DataType.INT32), [batch, total], dims=[0]), "LT")
        if not end_only:
            start = emit.slice_axis(mask, 0, batch, shape[0])
            after = emit.compare(positions, emit.broadcast_to(emit.convert(start, DataType.INT32), [batch, total], dims=[0]), "GE")
            keep = stablehlo.AndOp(keep, after).result
        return emit.reshape(additive(keep), (batch, 1, 1, total))
    if len(shape) == 2:
        keep = emit.compare(mask, emit.full_like(mask, 0), "GT")
        return emit.reshape(additive(keep), (shape[0], 1, 1, shape[1]))
    if len(shape) == 3:
        keep = emit.compare(mask, emit.full_like(mask, 0), "GT")
        return emit.reshape(additive(keep), (shape[0], 1, shape[1], shape[2]))
    raise ctx.error(f"mask_index of rank {len(shape)} is not supported (accepted: [B], [2B], [B, T], [B, S, T])", ShapeError)


@lowering("Attention", since=1, domain=MS)
def lower_attention(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value | None]:
    """Lowers com.microsoft Attention: QKV projection, multi-head scaled-dot-product attention.

    ``qkv = input @ weights + bias`` split into Q, K, V (``qkv_hidden_sizes`` or three equal
    parts), heads split, K/V prepended with ``past``, ``softmax(scale Q K^T + mask + attention_bias) V``.
    ORT behaviour followed: masked keys get ``mask_filter_value`` (default -10000) *added* (not
    -inf; a fully masked row therefore still averages its keys, as in ORT); causal
    (``unidirectional``) positions get the lowest float; scale defaults to 1/sqrt(head_size).

    Spec: com.microsoft Attention-1.
    Shapes: input [B, S, D] (symbolic B, S allowed); weights [D, Dq + Dk + Dv]; bias [Dq+Dk+Dv];
        mask_index [B], [2B], [B, T], [B, S, T] (T = past + S); past [2, B, N, P, h];
        attention_bias [B|1, N|1, S, T]. Outputs: output [B, S, Dv]; present [2, B, N, T, h].
    Dtypes: f16 (computed in f32), f32; mask_index int32.
    Raises: UnsupportedAttributeError for do_rotary, past_present_share_buffer and a 4-D mask;
        ShapeError for sizes that do not divide into heads.
    Follows ORT: masked keys get mask_filter_value (-10000) added, not -inf, so a fully masked
        row averages its keys; causal positions get the lowest float; a [2B] mask_index holds
        end then start positions.
    """
    num_heads = node.attr_int("num_heads")
    for name in ("do_rotary", "past_present_share_buffer"):
        if int(_attr(node, name)):
            raise ctx.unsupported_attribute(name, node.attr(name), "0")
    if ctx.has_input(6):
        raise ctx.error("past_sequence_length (a shared past/present buffer) is not supported", UnsupportedAttributeError)
    x = ctx.input(0)
    dtype = emit.dtype_of(x)
    weights = ctx.input(1)
    batch, seq, _ = emit.dims_of(x)
    width = emit.dims_of(weights)[1]
    sizes = node.attr_ints("qkv_hidden_sizes") or ([width // 3] * 3 if isinstance(width, int) else None)
    if sizes is None or len(sizes) != 3 or any(s % num_heads for s in sizes):
        raise ctx.error(f"qkv sizes {sizes} must be three multiples of num_heads={num_heads}", ShapeError)
    qkv = matmul(_wide(x), _wide(weights))
    if ctx.has_input(2):
        qkv = _add_broadcast(qkv, _wide(ctx.input(2)))
    q_size, k_size, v_size = sizes
    q = _heads(emit.slice_axis(qkv, 2, 0, q_size), num_heads, q_size // num_heads)
    k = _heads(emit.slice_axis(qkv, 2, q_size, q_size + k_size), num_heads, k_size // num_heads)
    v = _heads(emit.slice_axis(qkv, 2, q_size + k_size, q_size + k_size + v_size), num_heads, v_size // num_heads)
    past_len: Dim = 0
    if ctx.has_input(4):
        past = _wide(ctx.input(4))
        past_shape = emit.dims_of(past)
        past_len = past_shape[3]
        k = _concat([_squeeze0(emit.slice_axis(past, 0, 0, 1)), k], 2)
        v = _concat([_squeeze0(emit.slice_axis(past, 0, 1, 2)), v], 2)
    total = emit.dims_of(k)[2]
    wide_dtype = emit.dtype_of(q)
    additive = None
    if ctx.has_input(3):
        additive = _mask_from_index(ctx, 3, batch, seq, total, float(_attr(node, "mask_filter_value")), wide_dtype)
    if ctx.has_input(5):
        bias = _wide(ctx.input(5))
        additive = bias if additive is None else stablehlo.AddOp(
            *emit.broadcast_values(additive, bias)
        ).result
    keep = None
    if int(_attr(node, "unidirectional")):
        keep = emit.reshape(causal_keep(seq, total, past_len), (1, 1, seq, total))
    scale = node.attr_float("scale", 1.0 / math.sqrt(q_size // num_heads))
    out = scaled_dot_product_attention(q, k, v, scale, additive, keep)
    outputs: list[ir.Value | None] = [emit.convert(_merge_heads(out), dtype), None]
    if _output_wanted(node, 1):
        present = _concat([_unsqueeze0(k), _unsqueeze0(v)], 0)
        outputs[1] = emit.convert(present, dtype)
    return outputs


def _squeeze0(x: ir.Value) -> ir.Value:
    return emit.reshape(x, emit.dims_of(x)[1:])


def _unsqueeze0(x: ir.Value) -> ir.Value:
    return emit.reshape(x, (1, *emit.dims_of(x)))


@lowering("MultiHeadAttention", since=1, domain=MS)
def lower_multi_head_attention(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value | None]:
    """Lowers com.microsoft MultiHeadAttention with separate (already projected) Q, K, V.

    ``Q + bias_q`` etc., heads split, K/V prepended with past_key/past_value,
    ``softmax(scale Q K^T + mask + attention_bias) V``. key_padding_mask is 0/1 per key
    ([B, T]) or valid lengths ([B]); masked keys get ``mask_filter_value`` added (ORT).

    Spec: com.microsoft MultiHeadAttention-1.
    Shapes: query [B, S, D]; key [B, L, D] or [B, N, L, h] (already in heads, then without
        past); value like key (Dv may differ); bias [2D + Dv]; past_key/past_value [B, N, P, h];
        attention_bias [B|1, N|1, S, T]. Outputs: output [B, S, Dv], present_key/value
        [B, N, T, h].
    Dtypes: f16 (computed in f32), f32.
    Raises: UnsupportedAttributeError for packed QKV (no key), cache_indirection,
        past_sequence_length and the qk output; ShapeError for sizes that do not divide.
    Follows ORT: key_padding_mask 0s add mask_filter_value (-10000); unidirectional masks with
        the lowest float.
    """
    num_heads = node.attr_int("num_heads")
    if not ctx.has_input(1) or not ctx.has_input(2):
        raise ctx.error("packed QKV (query without key and value) is not supported", UnsupportedAttributeError)
    for index, what in ((8, "past_sequence_length"), (9, "cache_indirection")):
        if ctx.has_input(index):
            raise ctx.error(f"input {what} (beam-search buffers) is not supported", UnsupportedAttributeError)
    if _output_wanted(node, 3):
        raise ctx.error("output qk is not supported", UnsupportedAttributeError)
    query = _wide(ctx.input(0))
    dtype = ctx.input_dtype(0)
    batch, seq, q_hidden = emit.dims_of(query)
    if not isinstance(q_hidden, int) or q_hidden % num_heads:
        raise ctx.error(f"query hidden size {q_hidden} is not a multiple of num_heads={num_heads}", ShapeError)
    head = q_hidden // num_heads
    key, value = _wide(ctx.input(1)), _wide(ctx.input(2))
    key_rank = len(emit.dims_of(key))
    bias = _wide(ctx.input(3)) if ctx.has_input(3) else None
    v_hidden = emit.dims_of(value)[-1] * (num_heads if key_rank == 4 else 1)
    if bias is not None:
        query = _add_broadcast(query, emit.slice_axis(bias, 0, 0, q_hidden))
    q = _heads(query, num_heads, head)
    if key_rank == 4:
        k, v = key, value
        if bias is not None:
            k = _add_broadcast(k, emit.reshape(emit.slice_axis(bias, 0, q_hidden, 2 * q_hidden), (num_heads, 1, head)))
            v = _add_broadcast(v, emit.reshape(emit.slice_axis(bias, 0, 2 * q_hidden, 2 * q_hidden + v_hidden), (num_heads, 1, v_hidden // num_heads)))
    else:
        if bias is not None:
            key = _add_broadcast(key, emit.slice_axis(bias, 0, q_hidden, 2 * q_hidden))
            value = _add_broadcast(value, emit.slice_axis(bias, 0, 2 * q_hidden, 2 * q_hidden + v_hidden))
        k = _heads(key, num_heads, head)
        v = _heads(value, num_heads, v_hidden // num_heads)
    past_len: Dim = 0
    if ctx.has_input(6) and ctx.has_input(7):
        past_key, past_value = _wide(ctx.input(6)), _wide(ctx.input(7))
        past_len = emit.dims_of(past_key)[2]
        k = _concat([past_key, k], 2)
        v = _concat([past_value, v], 2)
    total = emit.dims_of(k)[2]
    additive = None
    filter_value = float(_attr(node, "mask_filter_value"))
    if ctx.has_input(4):
        additive = _mask_from_index(ctx, 4, batch, seq, total, filter_value, emit.dtype_of(q))
    if ctx.has_input(5):
        attention_bias = _wide(ctx.input(5))
        additive = attention_bias if additive is None else stablehlo.AddOp(*emit.broadcast_values(additive, attention_bias)).result
    keep = None
    if int(_attr(node, "unidirectional")):
        keep = emit.reshape(causal_keep(seq, total, past_len), (1, 1, seq, total))
    scale = node.attr_float("scale", 1.0 / math.sqrt(head))
    out = scaled_dot_product_attention(q, k, v, scale, additive, keep)
    outputs: list[ir.Value | None] = [emit.convert(_merge_heads(out), dtype), None, None, None]
    if _output_wanted(node, 1):
        outputs[1] = emit.convert(k, dtype)
    if _output_wanted(node, 2):
        outputs[2] = emit.convert(v, dtype)
    return outputs


# Rotary embedding ----------------------------------------------------------------------------


def rotate(
    x: ir.Value, cos: ir.Value, sin: ir.Value, rotary_dim: int, interleaved: bool
) -> ir.Value:
    """Applies RoPE to the first ``rotary_dim`` channels of x's last axis; the rest pass through.

    ``x`` [..., S, h]; ``cos``, ``sin`` [..., S, rotary_dim / 2] broadcastable to x's leading
    dims. Non-interleaved: halves ``(x1, x2)`` -> ``(x1 cos - x2 sin, x2 cos + x1 sin)``;
    interleaved: the pairs ``(x[2i], x[2i+1])`` rotate.
    """
    shape = emit.dims_of(x)
    rank = len(shape)
    head = shape[-1]
    half = rotary_dim // 2
    rot = emit.slice_axis(x, rank - 1, 0, rotary_dim) if rotary_dim != head else x
    lead = list(shape[:-1])
    cos = emit.broadcast_to(cos, (*lead, half))
    sin = emit.broadcast_to(sin, (*lead, half))
    if interleaved:
        pairs = emit.reshape(rot, (*lead, half, 2))
        x1 = emit.reshape(emit.slice_axis(pairs, rank, 0, 1), (*lead, half))
        x2 = emit.reshape(emit.slice_axis(pairs, rank, 1, 2), (*lead, half))
    else:
        x1 = emit.slice_axis(rot, rank - 1, 0, half)
        x2 = emit.slice_axis(rot, rank - 1, half, rotary_dim)
    out1 = stablehlo.SubtractOp(
        emit.rounded_product(stablehlo.MulOp(x1, cos).result), stablehlo.MulOp(x2, sin).result
    ).result
    out2 = stablehlo.AddOp(
        emit.rounded_product(stablehlo.MulOp(x2, cos).result), stablehlo.MulOp(x1, sin).result
    ).result
    if interleaved:
        stacked = _concat([emit.reshape(out1, (*lead, half, 1)), emit.reshape(out2, (*lead, half, 1))], rank)
        rotated = emit.reshape(stacked, (*lead, rotary_dim))
    else:
        rotated = _concat([out1, out2], rank - 1)
    if rotary_dim == head:
        return rotated
    return _concat([rotated, emit.slice_axis(x, rank - 1, rotary_dim, head)], rank - 1)


def cache_rows(cache: ir.Value, positions: ir.Value) -> ir.Value:
    """``cache[positions]`` for a [max_pos, d] cos/sin cache and integer positions of any shape."""
    return _embed(cache, positions)


@lowering("RotaryEmbedding", since=1, domain=MS)
def lower_rotary_embedding(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value]:
    """Lowers com.microsoft RotaryEmbedding (inputs: input, position_ids, cos_cache, sin_cache).

    position_ids [B, S] gives each token's position; a [1] position_ids is an offset: token s
    is at ``offset + s`` (ORT's CPU kernel). The input order differs from ai.onnx
    RotaryEmbedding-23 (X, cos_cache, sin_cache, position_ids); the registry keys them apart.

    Spec: com.microsoft RotaryEmbedding-1.
    Shapes: input [B, S, N*h] (needs num_heads when rotary_embedding_dim < h, else h is inferred
        from the cache) or [B, N, S, h]; position_ids [B, S] or [1]; caches [max_pos, d/2].
    Dtypes: f16 (computed in f32), f32; position_ids int64.
    Raises: UnsupportedAttributeError for is_packed_batching; ShapeError for bad shapes.
    Follows ORT: a [1] position_ids is an offset (token s at offset + s).
    """
    if int(_attr(node, "is_packed_batching")):
        raise ctx.unsupported_attribute("is_packed_batching", 1, "0")
    x = ctx.input(0)
    dtype = emit.dtype_of(x)
    shape = emit.dims_of(x)
    cos_cache, sin_cache = _wide(ctx.input(2)), _wide(ctx.input(3))
    half = emit.dims_of(cos_cache)[1]
    if not isinstance(half, int):
        raise ctx.error("cos_cache needs a static last dim", ShapeError)
    rotary_dim = int(_attr(node, "rotary_embedding_dim")) or 2 * half
    if rotary_dim != 2 * half:
        raise ctx.error(f"rotary_embedding_dim {rotary_dim} != 2 * cos_cache's last dim ({half})", ShapeError)
    num_heads = int(_attr(node, "num_heads"))
    if len(shape) == 4:
        batch, heads, seq, head = shape
    elif len(shape) == 3:
        batch, seq, hidden = shape
        if not num_heads:
            if rotary_dim != 2 * half or not isinstance(hidden, int):
                raise ctx.error("a 3-D input needs num_heads", ShapeError)
            num_heads = hidden // rotary_dim
        head = hidden // num_heads
    else:
        raise ctx.error(f"input must be [B, S, N*h] or [B, N, S, h], got {list(shape)}", ShapeError)
    positions = ctx.input(1)
    pos_shape = emit.dims_of(positions)
    if len(pos_shape) == 1:
        offsets = emit.broadcast_to(emit.convert(positions, DataType.INT64), (batch, seq), dims=[0]) if pos_shape[0] == batch and pos_shape[0] != 1 else emit.broadcast_to(emit.reshape(emit.convert(positions, DataType.INT64), ()), (batch, seq), dims=[])
        positions = stablehlo.AddOp(offsets, emit.iota([batch, seq], 1, DataType.INT64)).result
    cos = cache_rows(cos_cache, positions)  # [B, S, half]
    sin = cache_rows(sin_cache, positions)
    wide = _wide(x)
    if len(shape) == 4:
        cos4 = emit.reshape(cos, (batch, 1, seq, half))
        sin4 = emit.reshape(sin, (batch, 1, seq, half))
        y = rotate(wide, cos4, sin4, rotary_dim, bool(_attr(node, "interleaved")))
    else:
        split = emit.reshape(wide, (batch, seq, num_heads, head))
        cos4 = emit.reshape(cos, (batch, seq, 1, half))
        sin4 = emit.reshape(sin, (batch, seq, 1, half))
        y = emit.reshape(rotate(split, cos4, sin4, rotary_dim, bool(_attr(node, "interleaved"))), shape)
    return [emit.convert(y, dtype)]


# GroupQueryAttention -------------------------------------------------------------------------


def _batched_take(x: ir.Value, indices: ir.Value) -> ir.Value:
    """``x[b, indices[b, t], ...]``: x [B, S, *rest], int64 indices [B, T] in range -> [B, T, *rest]."""
    shape = emit.dims_of(x)
    batch, rest = shape[0], list(shape[2:])
    count = emit.dims_of(indices)[1]
    numbers = stablehlo.GatherDimensionNumbers.get(
        offset_dims=list(range(2, 2 + len(rest))),
        collapsed_slice_dims=[1],
        operand_batching_dims=[0],
        start_indices_batching_dims=[0],
        start_index_map=[1],
        index_vector_dim=2,
    )
    out_shape = [batch, count, *rest]
    points = emit.reshape(indices, [batch, count, 1])
    result = stablehlo.GatherOp(
        x, points, numbers, emit.i64_array([1, 1, *rest]), results=[emit.tensor_type(out_shape, emit.dtype_of(x))]
    ).result
    return emit.record(result, out_shape)


def _grow_cache(past: ir.Value, new: ir.Value, past_lengths: ir.Value) -> ir.Value:
    """present [B, KV, P + S, h]: per batch ``past[:past_b] ++ new ++ zeros`` (ORT's ConcatStateChunkGQA).

    ``past_lengths`` [B] int64 is each row's valid past length (<= P); positions after
    ``past_b + S`` are zeros.
    """
    batch, heads, past_len, size = emit.dims_of(past)
    seq = emit.dims_of(new)[2]
    total = past_len + seq
    t = emit.iota([batch, total], 1, DataType.INT64)
    start = emit.broadcast_to(past_lengths, [batch, total], dims=[0])
    offset = stablehlo.SubtractOp(t, start).result
    last = stablehlo.SubtractOp(emit.dim_value(seq), emit.constant(np.array(1, np.int64))).result
    index = stablehlo.ClampOp(emit.full_like(offset, 0), offset, emit.broadcast_to(last, [batch, total], dims=[])).result
    from_new = emit.transpose(_batched_take(emit.transpose(new, [0, 2, 1, 3]), index), [0, 2, 1, 3])
    zeros = emit.splat(0.0, emit.dtype_of(past), [batch, heads, seq, size])
    padded_past = _concat([past, zeros], 2)
    shape = (batch, heads, total, size)
    in_past = emit.broadcast_to(emit.compare(t, start, "LT"), shape, dims=[0, 2])
    end = stablehlo.AddOp(start, emit.broadcast_to(emit.dim_value(seq), [batch, total], dims=[])).result
    in_new = emit.broadcast_to(emit.compare(t, end, "LT"), shape, dims=[0, 2])
    chosen = stablehlo.SelectOp(in_new, from_new, emit.splat(0.0, emit.dtype_of(past), shape)).result
    return stablehlo.SelectOp(in_past, padded_past, chosen).result


@lowering("GroupQueryAttention", since=1, domain=MS)
def lower_group_query_attention(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value | None]:
    """Lowers GroupQueryAttention (ORT GenAI's decoder attention): KV cache, rotary, causal/local window.

    Per batch row b: ``total_b = seqlens_k[b] + 1``; the row's valid past is ``past_b = 0`` for
    the first prompt (``S == total_sequence_length``) and ``total_b - S`` otherwise (ORT's CPU
    kernel). Q and the new K are rotated (``do_rotary``) at positions ``past_b + s`` (or
    ``position_ids``); ``present[b] = past[b, :past_b] ++ K_new[b] ++ zeros``; query s of row b
    sees keys ``t <= past_b + s`` (and ``t > past_b + s - local_window_size`` when that is
    > 0: a window of local_window_size keys, as ORT's CPU kernel), each KV head serving
    ``num_heads / kv_num_heads`` query heads; scores are scaled, soft-capped (``softcap``) and softmaxed over the visible keys only.

    Spec: com.microsoft GroupQueryAttention-1.
    Shapes: query [B, S, N*h] (or packed [B, S, (N + 2 KV) h] without key/value); key, value
        [B, S, KV*h]; past_key/past_value [B, KV, P, h]; seqlens_k [B] int32;
        total_sequence_length scalar int32; cos/sin caches [max_pos, rotary_dim / 2];
        position_ids [B, S] int64. Outputs: output [B, S, N*h]; present_key/value
        [B, KV, P + S, h].
    Dtypes: f16 (computed in f32), f32.
    Deviations: present has P + S positions. ORT allocates max(P, total_sequence_length); the
        two agree when the caller grows the cache (total_sequence_length = P + S: ORT GenAI on
        CPU, Optimum); with a preallocated max-length buffer our present has S extra trailing
        positions, zeros. Positions after a row's ``past_b + S`` are zeros (ORT leaves them
        unset).
    Raises: UnsupportedAttributeError for quantized KV caches, smooth_softmax/head_sink,
        attention_bias, q/k norms, query_seqlens and the qk output.
    Follows ORT: first prompt when S == total_sequence_length (past_b = 0), else past_b =
        seqlens_k[b] + 1 - S; local window = the last local_window_size keys; softmax only over
        visible keys (masked ones are exactly 0).
    """
    num_heads, kv_heads = node.attr_int("num_heads"), node.attr_int("kv_num_heads")
    if num_heads % kv_heads:
        raise ctx.error(f"num_heads={num_heads} is not a multiple of kv_num_heads={kv_heads}", ShapeError)
    for name in ("k_quant_type", "v_quant_type"):
        if str(_attr(node, name)) != "NONE":
            raise ctx.unsupported_attribute(name, node.attr(name), "NONE")
    if int(_attr(node, "smooth_softmax")) > 0 or ctx.has_input(11):
        raise ctx.error("smooth_softmax / head_sink is not supported", UnsupportedAttributeError)
    for index, what in ((10, "attention_bias"), (12, "k_scale"), (13, "v_scale"), (14, "q_norm_weight"),
                        (15, "k_norm_weight"), (16, "query_seqlens")):
        if ctx.has_input(index):
            raise ctx.error(f"input {what} is not supported", UnsupportedAttributeError)
    if int(_attr(node, "qk_output")) or _output_wanted(node, 3):
        raise ctx.error("output output_qk is not supported", UnsupportedAttributeError)
    query = ctx.input(0)
    dtype = emit.dtype_of(query)
    query = _wide(query)
    batch, seq, width = emit.dims_of(query)
    if ctx.has_input(1) and ctx.has_input(2):
        if not isinstance(width, int) or width % num_heads:
            raise ctx.error(f"query width {width} is not a multiple of num_heads={num_heads}", ShapeError)
        head = width // num_heads
        key, value = _wide(ctx.input(1)), _wide(ctx.input(2))
    else:
        parts = num_heads + 2 * kv_heads
        if not isinstance(width, int) or width % parts:
            raise ctx.error(f"packed QKV width {width} is not a multiple of num_heads + 2 kv_num_heads", ShapeError)
        head = width // parts
        packed = query
        query = emit.slice_axis(packed, 2, 0, num_heads * head)
        key = emit.slice_axis(packed, 2, num_heads * head, (num_heads + kv_heads) * head)
        value = emit.slice_axis(packed, 2, (num_heads + kv_heads) * head, width)
    q = _heads(query, num_heads, head)
    k = _heads(key, kv_heads, head)
    v = _heads(value, kv_heads, head)
    i64 = DataType.INT64
    seqlens = emit.convert(ctx.input(5), i64)
    total_len = emit.reshape(emit.convert(ctx.input(6), i64), ())
    seq_value = emit.dim_value(seq)
    first = emit.compare(seq_value, total_len, "EQ")
    grown = stablehlo.SubtractOp(
        stablehlo.AddOp(seqlens, emit.full_like(seqlens, 1)).result, emit.broadcast_to(seq_value, [batch], dims=[])
    ).result
    past_lengths = stablehlo.SelectOp(
        emit.broadcast_to(first, [batch], dims=[]), emit.full_like(grown, 0), grown
    ).result
    positions = stablehlo.AddOp(
        emit.broadcast_to(past_lengths, [batch, seq], dims=[0]), emit.iota([batch, seq], 1, i64)
    ).result
    if int(_attr(node, "do_rotary")):
        rotary_positions = emit.convert(ctx.input(9), i64) if ctx.has_input(9) else positions
        cos_cache, sin_cache = _wide(ctx.input(7)), _wide(ctx.input(8))
        half = emit.dims_of(cos_cache)[1]
        interleaved = bool(_attr(node, "rotary_interleaved"))
        cos = emit.reshape(cache_rows(cos_cache, rotary_positions), (batch, 1, seq, half))
        sin = emit.reshape(cache_rows(sin_cache, rotary_positions), (batch, 1, seq, half))
        q = rotate(q, cos, sin, 2 * half, interleaved)
        k = rotate(k, cos, sin, 2 * half, interleaved)
    if ctx.has_input(3) and ctx.has_input(4):
        present_k = _grow_cache(_wide(ctx.input(3)), k, past_lengths)
        present_v = _grow_cache(_wide(ctx.input(4)), v, past_lengths)
    else:
        present_k, present_v = k, v
    total = emit.dims_of(present_k)[2]
    groups = num_heads // kv_heads
    t = emit.iota([batch, seq, total], 2, i64)
    limit = emit.broadcast_to(positions, [batch, seq, total], dims=[0, 1])
    keep = emit.compare(t, limit, "LE")
    window = int(_attr(node, "local_window_size"))
    if window > 0:
        lower = stablehlo.SubtractOp(limit, emit.full_like(limit, window)).result
        keep = stablehlo.AndOp(keep, emit.compare(t, lower, "GT")).result
    keep = emit.reshape(keep, (batch, 1, seq, total))
    scale = node.attr_float("scale", 0.0) or 1.0 / math.sqrt(head)
    out = scaled_dot_product_attention(
        q, _repeat_kv(present_k, groups), _repeat_kv(present_v, groups), scale, None, keep,
        softcap=float(_attr(node, "softcap")),
    )
    outputs: list[ir.Value | None] = [emit.convert(_merge_heads(out), dtype), None, None, None]
    if _output_wanted(node, 1):
        outputs[1] = emit.convert(present_k, dtype)
    if _output_wanted(node, 2):
        outputs[2] = emit.convert(present_v, dtype)
    return outputs
