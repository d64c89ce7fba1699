"""Lowering rules: onnxruntime's ``com.microsoft`` attention ops and RoPE.

``Attention`` (packed QKV projection, optional past), ``MultiHeadAttention``,
``GroupQueryAttention`` and ``RotaryEmbedding`` (the contrib input order ``(input,
position_ids, cos_cache, sin_cache)``, which differs from ai.onnx RotaryEmbedding-23: the
registry dispatches by domain), as ``onnxruntime.transformers.optimizer.optimize_model``, ORT
GenAI and Optimum exports write them.

Spec: onnxruntime docs/ContribOperators.md, with the CPU kernels in ``onnxruntime/contrib_ops/cpu``
as the reference where it is silent (as for contrib_layers.py: each such choice is in the rule's
docstring and in docs/coverage.md); attribute defaults come from ``builders/contrib.py``. float16
inputs are computed in float32 and rounded once at the end, as ORT's CPU kernels do.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import stablehlo

from onnx_stablehlo.errors import ShapeError, UnsupportedAttributeError
from onnx_stablehlo.frontend import builders
from onnx_stablehlo.frontend.builders import contrib
from onnx_stablehlo.frontend.context import LoweringContext, OnnxNode
from onnx_stablehlo.frontend.dtypes import DataType
from onnx_stablehlo.frontend.builders import matmul
from onnx_stablehlo.frontend.registry import lowering
from onnx_stablehlo.frontend.shapes import Dim


def _concat(values: Sequence[ir.Value], axis: int) -> ir.Value:
    """``stablehlo.concatenate`` along ``axis`` (symbolic dims recorded)."""
    shapes = [builders.dims_of(v) for v in values]
    out = list(shapes[0])
    total: Dim = 0
    for shape in shapes:
        total = total + shape[axis]
    out[axis] = total
    joined = stablehlo.concatenate(list(values), ir.IntegerAttr.get(ir.IntegerType.get_signless(64), axis))
    return builders.record(joined, out)


def _heads(x: ir.Value, num_heads: int, head_size: int) -> ir.Value:
    """[B, S, N*h] -> [B, N, S, h]."""
    batch, seq, _ = builders.dims_of(x)
    return builders.transpose(builders.reshape(x, (batch, seq, num_heads, head_size)), [0, 2, 1, 3])


def _merge_heads(x: ir.Value) -> ir.Value:
    """[B, N, S, h] -> [B, S, N*h]."""
    batch, heads, seq, size = builders.dims_of(x)
    return builders.reshape(builders.transpose(x, [0, 2, 1, 3]), (batch, seq, heads * size))


def _repeat_kv(x: ir.Value, groups: int) -> ir.Value:
    """[B, KV, T, h] -> [B, KV*groups, T, h], each kv head repeated for its group of q heads."""
    if groups == 1:
        return x
    batch, kv, total, size = builders.dims_of(x)
    wide = builders.broadcast_to(x, (batch, kv, groups, total, size), dims=[0, 1, 3, 4])
    return builders.reshape(wide, (batch, kv * groups, total, size))


def attention_probabilities(
    q: ir.Value,
    k: ir.Value,
    scale: float,
    additive: ir.Value | None = None,
    keep: ir.Value | None = None,
    softcap: float = 0.0,
    sink: ir.Value | None = None,
) -> tuple[ir.Value, ir.Value]:
    """``(scores, softmax(scores))`` for [B, N, S, h] q and [B, N, T, h] k: both [B, N, S, T].

    The scores returned are those the softmax reads (dropped keys at the lowest float).

    ``scores = scale * q k^T``, capped to ``softcap * tanh(s / softcap)`` when ``softcap > 0``
    (Gemma 2), plus ``additive`` (broadcast to [B, N, S, T]: masks with a finite filter value,
    attention biases); ``keep`` (bool, broadcastable to [B, N, S, T]) drops keys: their scores
    are the lowest float before the softmax (probabilities exactly 0), as ORT does for causal
    masks. ``sink`` (broadcastable to [B, N, S, 1]) is one extra logit per row that takes part
    in the softmax's denominator only (ORT's smooth softmax: 0; GQA's head_sink). Computed in
    q's dtype (callers widen f16 first); the softmax is max-shifted.
    """
    scores = builders.dot_general(q, k, lhs_batch=[0, 1], rhs_batch=[0, 1], lhs_contracting=[3], rhs_contracting=[3])
    shape = builders.dims_of(scores)
    scores = stablehlo.multiply(scores, builders.full_like(scores, scale))
    if softcap > 0:
        capped = stablehlo.tanh(stablehlo.divide(scores, builders.full_like(scores, softcap)))
        scores = stablehlo.multiply(capped, builders.full_like(scores, softcap))
    if additive is not None:
        scores = stablehlo.add(scores, builders.broadcast_to(builders.convert(additive, builders.dtype_of(scores)), shape))
    masked = scores
    if keep is not None:
        lowest = float(np.finfo(np.float32).min) if builders.dtype_of(scores) == DataType.FLOAT else float(np.finfo(np.float64).min)
        masked = stablehlo.select(builders.broadcast_to(keep, shape), scores, builders.full_like(scores, lowest))
    top = builders.shift_max(masked, [3], keepdims=True)
    row_shape = builders.dims_of(top)
    if sink is not None:
        sink = builders.broadcast_to(builders.convert(sink, builders.dtype_of(scores)), row_shape)
        top = stablehlo.maximum(top, sink)
    exp = stablehlo.exponential(stablehlo.subtract(masked, builders.broadcast_to(top, shape)))
    total = builders.reduce(exp, [3], stablehlo.AddOp, 0, keepdims=True)
    if sink is not None:
        total = stablehlo.add(total, stablehlo.exponential(stablehlo.subtract(sink, top)))
    return masked, stablehlo.divide(exp, builders.broadcast_to(total, shape))


def scaled_dot_product_attention(
    q: ir.Value,
    k: ir.Value,
    v: ir.Value,
    scale: float,
    additive: ir.Value | None = None,
    keep: ir.Value | None = None,
    softcap: float = 0.0,
) -> ir.Value:
    """``softmax(scale * q k^T + additive, where keep) v`` for [B, N, S, h] q and [B, N, T, h] k, v
    (see :func:`attention_probabilities`)."""
    _, probs = attention_probabilities(q, k, scale, additive, keep, softcap)
    return builders.dot_general(probs, v, lhs_batch=[0, 1], rhs_batch=[0, 1], lhs_contracting=[3], rhs_contracting=[2])


def causal_keep(seq: Dim, total: Dim, past: Dim | ir.Value) -> ir.Value:
    """[S, T] bool: key position t is visible from query s when t <= past + s (past: a dim or an int64 scalar)."""
    rows = builders.iota([seq, total], 0, DataType.INT64)
    cols = builders.iota([seq, total], 1, DataType.INT64)
    offset = past if isinstance(past, ir.Value) else builders.dim_value(past)
    limit = stablehlo.add(rows, builders.broadcast_to(offset, builders.dims_of(rows), dims=[]))
    return builders.compare(cols, limit, "LE")


def _mask_from_index(
    ctx: LoweringContext, index: int, batch: Dim, seq: Dim, total: Dim, filter_value: float, dtype: DataType
) -> ir.Value:
    """Attention's ``mask_index`` as an additive [B, 1, S|1, T] mask (0 or ``filter_value``).

    1-D [B]: keys at or after ``mask_index[b]`` are masked (right padding); [2B]: also keys
    before ``mask_index[B + b]`` (left padding); 2-D [B, T]: raw 0/1 mask; 3-D [B, S, T].
    """
    mask = ctx.input(index)
    shape = builders.dims_of(mask)
    zero, fill = builders.splat(0.0, dtype), builders.splat(filter_value, dtype)

    def additive(keep: ir.Value) -> ir.Value:
        out_shape = builders.dims_of(keep)
        return stablehlo.select(keep, builders.broadcast_to(zero, out_shape, dims=[]), builders.broadcast_to(fill, out_shape, dims=[]))

    if len(shape) == 1:
        positions = builders.iota([batch, total], 1, DataType.INT32)
        end_only = shape[0] == batch
        end = mask if end_only else builders.slice_axis(mask, 0, 0, batch)
        keep = builders.compare(positions, builders.broadcast_to(builders.convert(end, DataType.INT32), [batch, total], dims=[0]), "LT")
        if not end_only:
            start = builders.slice_axis(mask, 0, batch, shape[0])
            after = builders.compare(positions, builders.broadcast_to(builders.convert(start, DataType.INT32), [batch, total], dims=[0]), "GE")
            keep = stablehlo.and_(keep, after)
        return builders.reshape(additive(keep), (batch, 1, 1, total))
    if len(shape) == 2:
        keep = builders.compare(mask, builders.full_like(mask, 0), "GT")
        return builders.reshape(additive(keep), (shape[0], 1, 1, shape[1]))
    if len(shape) == 3:
        keep = builders.compare(mask, builders.full_like(mask, 0), "GT")
        return builders.reshape(additive(keep), (shape[0], 1, shape[1], shape[2]))
    raise ctx.error(f"mask_index of rank {len(shape)} is not supported (accepted: [B], [2B], [B, T], [B, S, T])", ShapeError)


@lowering("Attention", since=1, domain=contrib.MS)
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
    Raises: UnsupportedAttributeError for do_rotary and past_present_share_buffer (ORT's CPU
        kernel refuses both); ShapeError for sizes that do not divide into heads or a mask of
        another rank.
    Follows ORT: masked keys get mask_filter_value (-10000) added, not -inf, so a fully masked
        row averages its keys; causal positions get the lowest float; a [2B] mask_index holds
        end then start positions; past_sequence_length is ignored without
        past_present_share_buffer.
    """
    num_heads = node.attr_int("num_heads")
    for name in ("do_rotary", "past_present_share_buffer"):
        if int(contrib.attr(node, name)):
            raise ctx.unsupported_attribute(name, node.attr(name), "0")
    x = ctx.input(0)
    dtype = builders.dtype_of(x)
    weights = ctx.input(1)
    batch, seq, _ = builders.dims_of(x)
    width = builders.dims_of(weights)[1]
    sizes = node.attr_ints("qkv_hidden_sizes") or ([width // 3] * 3 if isinstance(width, int) else None)
    if sizes is None or len(sizes) != 3 or any(s % num_heads for s in sizes):
        raise ctx.error(f"qkv sizes {sizes} must be three multiples of num_heads={num_heads}", ShapeError)
    qkv = matmul(contrib.wide(x), contrib.wide(weights))
    if ctx.has_input(2):
        qkv = contrib.add_broadcast(qkv, contrib.wide(ctx.input(2)))
    q_size, k_size, v_size = sizes
    q = _heads(builders.slice_axis(qkv, 2, 0, q_size), num_heads, q_size // num_heads)
    k = _heads(builders.slice_axis(qkv, 2, q_size, q_size + k_size), num_heads, k_size // num_heads)
    v = _heads(builders.slice_axis(qkv, 2, q_size + k_size, q_size + k_size + v_size), num_heads, v_size // num_heads)
    past_len: Dim = 0
    if ctx.has_input(4):
        past = contrib.wide(ctx.input(4))
        past_shape = builders.dims_of(past)
        past_len = past_shape[3]
        k = _concat([_squeeze0(builders.slice_axis(past, 0, 0, 1)), k], 2)
        v = _concat([_squeeze0(builders.slice_axis(past, 0, 1, 2)), v], 2)
    total = builders.dims_of(k)[2]
    wide_dtype = builders.dtype_of(q)
    additive = None
    if ctx.has_input(3):
        additive = _mask_from_index(ctx, 3, batch, seq, total, float(contrib.attr(node, "mask_filter_value")), wide_dtype)
    if ctx.has_input(5):
        bias = contrib.wide(ctx.input(5))
        additive = bias if additive is None else stablehlo.add(
            *builders.broadcast_values(additive, bias)
        )
    keep = None
    if int(contrib.attr(node, "unidirectional")):
        keep = builders.reshape(causal_keep(seq, total, past_len), (1, 1, seq, total))
    scale = node.attr_float("scale", 1.0 / math.sqrt(q_size // num_heads))
    out = scaled_dot_product_attention(q, k, v, scale, additive, keep)
    outputs: list[ir.Value | None] = [builders.convert(_merge_heads(out), dtype), None]
    if node.has_output(1):
        present = _concat([_unsqueeze0(k), _unsqueeze0(v)], 0)
        outputs[1] = builders.convert(present, dtype)
    return outputs


def _squeeze0(x: ir.Value) -> ir.Value:
    return builders.reshape(x, builders.dims_of(x)[1:])


def _unsqueeze0(x: ir.Value) -> ir.Value:
    return builders.reshape(x, (1, *builders.dims_of(x)))


@lowering("MultiHeadAttention", since=1, domain=contrib.MS)
def lower_multi_head_attention(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value | None]:
    """Lowers com.microsoft MultiHeadAttention with separate (already projected) Q, K, V.

    ``Q + bias_q`` etc., heads split, K/V prepended with past_key/past_value,
    ``softmax(scale Q K^T + mask + attention_bias) V``. key_padding_mask is 0/1 per key
    ([B, T]) or valid lengths ([B]); masked keys get ``mask_filter_value`` added (ORT).

    Spec: com.microsoft MultiHeadAttention-1.
    Shapes: query [B, S, D], or packed QKV [B, S, N, 3, h] without key and value; key [B, L, D],
        [B, N, L, h] (already in heads, then without past) or packed KV [B, L, N, 2, h] without
        value; value like key (Dv may differ); bias [2D + Dv]; past_key/past_value [B, N, P, h];
        attention_bias [B|1, N|1, S, T]. Outputs: output [B, S, Dv], present_key/value
        [B, N, T, h], qk [B, N, S, T].
    Dtypes: f16 (computed in f32), f32.
    Deviations: packed QKV and packed KV are CUDA-only in onnxruntime (its CPU kernel refuses
        them); here they are the separate query, key and value they pack (tested against ORT's
        CPU kernel on the unpacked inputs).
    past_sequence_length (scalar int32, with past_key/past_value [B, N, M, h]): one shared
        buffer, as ORT's CPU kernel: the new keys and values are written at rows
        [past_sequence_length, past_sequence_length + S) of the past buffers, present_key/value
        are those [B, N, M, h] buffers, and only the first past_sequence_length + S keys are
        attended.
    Raises: UnsupportedAttributeError for cache_indirection (beam search; ORT's CPU kernel runs
        it, not lowered here); ShapeError for sizes
        that do not divide, a packed input with the inputs it replaces, a missing key/value, or
        past_sequence_length without past buffers.
    Follows ORT: key_padding_mask 0s add mask_filter_value (-10000); unidirectional masks with
        the lowest float; output qk is the scaled scores plus masks and attention_bias, as the
        softmax reads them (causally hidden keys at the lowest float).
    """
    num_heads = node.attr_int("num_heads")
    if ctx.has_input(9):
        raise ctx.error("input cache_indirection (beam search) is not supported", UnsupportedAttributeError)
    query = contrib.wide(ctx.input(0))
    dtype = ctx.input_dtype(0)
    if len(builders.dims_of(query)) == 5:  # packed QKV [B, S, N, 3, h]
        if ctx.has_input(1) or ctx.has_input(2):
            raise ctx.error("a packed [B, S, N, 3, h] query takes no key or value", ShapeError)
        query, key, value = _unpack(ctx, query, 3, num_heads)
    elif ctx.has_input(1) and len(builders.dims_of(ctx.input(1))) == 5:  # packed KV [B, L, N, 2, h]
        if ctx.has_input(2):
            raise ctx.error("a packed [B, L, N, 2, h] key takes no value", ShapeError)
        key, value = _unpack(ctx, contrib.wide(ctx.input(1)), 2, num_heads)
    elif ctx.has_input(1) and ctx.has_input(2):
        key, value = contrib.wide(ctx.input(1)), contrib.wide(ctx.input(2))
    else:
        raise ctx.error("key and value are required unless query or key is packed", ShapeError)
    batch, seq, q_hidden = builders.dims_of(query)
    if not isinstance(q_hidden, int) or q_hidden % num_heads:
        raise ctx.error(f"query hidden size {q_hidden} is not a multiple of num_heads={num_heads}", ShapeError)
    head = q_hidden // num_heads
    key_rank = len(builders.dims_of(key))
    bias = contrib.wide(ctx.input(3)) if ctx.has_input(3) else None
    v_hidden = builders.dims_of(value)[-1] * (num_heads if key_rank == 4 else 1)
    if bias is not None:
        query = contrib.add_broadcast(query, builders.slice_axis(bias, 0, 0, q_hidden))
    q = _heads(query, num_heads, head)
    if key_rank == 4:
        k, v = key, value
        if bias is not None:
            k = contrib.add_broadcast(k, builders.reshape(builders.slice_axis(bias, 0, q_hidden, 2 * q_hidden), (num_heads, 1, head)))
            v = contrib.add_broadcast(v, builders.reshape(builders.slice_axis(bias, 0, 2 * q_hidden, 2 * q_hidden + v_hidden), (num_heads, 1, v_hidden // num_heads)))
    else:
        if bias is not None:
            key = contrib.add_broadcast(key, builders.slice_axis(bias, 0, q_hidden, 2 * q_hidden))
            value = contrib.add_broadcast(value, builders.slice_axis(bias, 0, 2 * q_hidden, 2 * q_hidden + v_hidden))
        k = _heads(key, num_heads, head)
        v = _heads(value, num_heads, v_hidden // num_heads)
    past_len: Dim | ir.Value = 0
    shared = ctx.has_input(8)
    if shared and not (ctx.has_input(6) and ctx.has_input(7) and key_rank == 3):
        raise ctx.error("past_sequence_length needs past_key and past_value and a 3-D key", ShapeError)
    if ctx.has_input(6) and ctx.has_input(7):
        past_key, past_value = contrib.wide(ctx.input(6)), contrib.wide(ctx.input(7))
        if shared:  # one buffer: the new keys and values are written at past_sequence_length
            past_len = builders.reshape(builders.convert(ctx.input(8), DataType.INT64), ())
            k, v = _write_at(past_key, k, past_len), _write_at(past_value, v, past_len)
        else:
            past_len = builders.dims_of(past_key)[2]
            k = _concat([past_key, k], 2)
            v = _concat([past_value, v], 2)
    total = builders.dims_of(k)[2]
    additive = None
    filter_value = float(contrib.attr(node, "mask_filter_value"))
    if ctx.has_input(4):
        additive = _mask_from_index(ctx, 4, batch, seq, total, filter_value, builders.dtype_of(q))
    if ctx.has_input(5):
        attention_bias = contrib.wide(ctx.input(5))
        additive = attention_bias if additive is None else stablehlo.add(*builders.broadcast_values(additive, attention_bias))
    keep = None
    if int(contrib.attr(node, "unidirectional")):
        keep = builders.reshape(causal_keep(seq, total, past_len), (1, 1, seq, total))
    if shared:
        cols = builders.iota([seq, total], 1, DataType.INT64)
        end = stablehlo.add(past_len, builders.dim_value(seq))
        written = builders.reshape(builders.compare(cols, builders.broadcast_to(end, [seq, total], dims=[]), "LT"), (1, 1, seq, total))
        keep = written if keep is None else stablehlo.and_(keep, written)
    scale = node.attr_float("scale", 1.0 / math.sqrt(head))
    scores, probs = attention_probabilities(q, k, scale, additive, keep)
    out = builders.dot_general(probs, v, lhs_batch=[0, 1], rhs_batch=[0, 1], lhs_contracting=[3], rhs_contracting=[2])
    outputs: list[ir.Value | None] = [builders.convert(_merge_heads(out), dtype), None, None, None]
    if node.has_output(1):
        outputs[1] = builders.convert(k, dtype)
    if node.has_output(2):
        outputs[2] = builders.convert(v, dtype)
    if node.has_output(3):
        outputs[3] = builders.convert(scores, dtype)
    return outputs


def _write_at(buffer: ir.Value, new: ir.Value, start: ir.Value) -> ir.Value:
    """``buffer`` [B, N, M, h] with ``new`` [B, N, S, h] written at rows ``start`` (int64 scalar) onwards."""
    zero = builders.constant(np.array(0, np.int64))
    return stablehlo.dynamic_update_slice(buffer, new, [zero, zero, start, zero])


def _unpack(ctx: LoweringContext, packed: ir.Value, parts: int, num_heads: int) -> list[ir.Value]:
    """[B, L, N, parts, h] -> ``parts`` values [B, L, N*h] (MultiHeadAttention's packed QKV or KV)."""
    batch, length, heads, count, head = builders.dims_of(packed)
    if heads != num_heads or count != parts or not isinstance(head, int):
        raise ctx.error(f"packed input {list(builders.dims_of(packed))} must be [B, L, {num_heads}, {parts}, h]", ShapeError)
    return [
        builders.reshape(builders.slice_axis(packed, 3, i, i + 1), (batch, length, num_heads * head)) for i in range(parts)
    ]


def rotate(
    x: ir.Value, cos: ir.Value, sin: ir.Value, rotary_dim: int, interleaved: bool
) -> ir.Value:
    """Applies RoPE to the first ``rotary_dim`` channels of x's last axis; the rest pass through.

    ``x`` [..., S, h]; ``cos``, ``sin`` [..., S, rotary_dim / 2] broadcastable to x's leading
    dims. Non-interleaved: halves ``(x1, x2)`` -> ``(x1 cos - x2 sin, x2 cos + x1 sin)``;
    interleaved: the pairs ``(x[2i], x[2i+1])`` rotate.
    """
    shape = builders.dims_of(x)
    rank = len(shape)
    head = shape[-1]
    half = rotary_dim // 2
    rot = builders.slice_axis(x, rank - 1, 0, rotary_dim) if rotary_dim != head else x
    lead = list(shape[:-1])
    cos = builders.broadcast_to(cos, (*lead, half))
    sin = builders.broadcast_to(sin, (*lead, half))
    if interleaved:
        pairs = builders.reshape(rot, (*lead, half, 2))
        x1 = builders.reshape(builders.slice_axis(pairs, rank, 0, 1), (*lead, half))
        x2 = builders.reshape(builders.slice_axis(pairs, rank, 1, 2), (*lead, half))
    else:
        x1 = builders.slice_axis(rot, rank - 1, 0, half)
        x2 = builders.slice_axis(rot, rank - 1, half, rotary_dim)
    out1 = stablehlo.subtract(
        builders.rounded_product(stablehlo.multiply(x1, cos)), stablehlo.multiply(x2, sin)
    )
    out2 = stablehlo.add(
        builders.rounded_product(stablehlo.multiply(x2, cos)), stablehlo.multiply(x1, sin)
    )
    if interleaved:
        stacked = _concat([builders.reshape(out1, (*lead, half, 1)), builders.reshape(out2, (*lead, half, 1))], rank)
        rotated = builders.reshape(stacked, (*lead, rotary_dim))
    else:
        rotated = _concat([out1, out2], rank - 1)
    if rotary_dim == head:
        return rotated
    return _concat([rotated, builders.slice_axis(x, rank - 1, rotary_dim, head)], rank - 1)


def cache_rows(cache: ir.Value, positions: ir.Value) -> ir.Value:
    """``cache[positions]`` for a [max_pos, d] cos/sin cache and integer positions of any shape."""
    return contrib.embed(cache, positions)


@lowering("RotaryEmbedding", since=1, domain=contrib.MS)
def lower_rotary_embedding(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value]:
    """Lowers com.microsoft RotaryEmbedding (inputs: input, position_ids, cos_cache, sin_cache).

    position_ids [B, S] gives each token's position; a [1] position_ids is an offset: token s
    is at ``offset + s`` (ORT's CPU kernel). The input order differs from ai.onnx
    RotaryEmbedding-23 (X, cos_cache, sin_cache, position_ids); the registry keys them apart.

    Spec: com.microsoft RotaryEmbedding-1.
    Shapes: input [B, S, N*h] (needs num_heads when rotary_embedding_dim < h, else h is inferred
        from the cache) or [B, N, S, h]; position_ids [B, S] or [1]; caches [max_pos, d/2].
    Dtypes: f16 (computed in f32), f32; position_ids int64.
    Raises: UnsupportedAttributeError for is_packed_batching (ORT's CPU kernel runs it; not
        lowered here); ShapeError for bad shapes.
    Follows ORT: a [1] position_ids is an offset (token s at offset + s).
    """
    if int(contrib.attr(node, "is_packed_batching")):
        raise ctx.unsupported_attribute("is_packed_batching", 1, "0")
    x = ctx.input(0)
    dtype = builders.dtype_of(x)
    shape = builders.dims_of(x)
    cos_cache, sin_cache = contrib.wide(ctx.input(2)), contrib.wide(ctx.input(3))
    half = builders.dims_of(cos_cache)[1]
    if not isinstance(half, int):
        raise ctx.error("cos_cache needs a static last dim", ShapeError)
    rotary_dim = int(contrib.attr(node, "rotary_embedding_dim")) or 2 * half
    if rotary_dim != 2 * half:
        raise ctx.error(f"rotary_embedding_dim {rotary_dim} != 2 * cos_cache's last dim ({half})", ShapeError)
    num_heads = int(contrib.attr(node, "num_heads"))
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
    pos_shape = builders.dims_of(positions)
    if len(pos_shape) == 1:
        offsets = builders.broadcast_to(builders.convert(positions, DataType.INT64), (batch, seq), dims=[0]) if pos_shape[0] == batch and pos_shape[0] != 1 else builders.broadcast_to(builders.reshape(builders.convert(positions, DataType.INT64), ()), (batch, seq), dims=[])
        positions = stablehlo.add(offsets, builders.iota([batch, seq], 1, DataType.INT64))
    cos = cache_rows(cos_cache, positions)  # [B, S, half]
    sin = cache_rows(sin_cache, positions)
    wide = contrib.wide(x)
    if len(shape) == 4:
        cos4 = builders.reshape(cos, (batch, 1, seq, half))
        sin4 = builders.reshape(sin, (batch, 1, seq, half))
        y = rotate(wide, cos4, sin4, rotary_dim, bool(contrib.attr(node, "interleaved")))
    else:
        split = builders.reshape(wide, (batch, seq, num_heads, head))
        cos4 = builders.reshape(cos, (batch, seq, 1, half))
        sin4 = builders.reshape(sin, (batch, seq, 1, half))
        y = builders.reshape(rotate(split, cos4, sin4, rotary_dim, bool(contrib.attr(node, "interleaved"))), shape)
    return [builders.convert(y, dtype)]


def _batched_take(x: ir.Value, indices: ir.Value) -> ir.Value:
    """``x[b, indices[b, t], ...]``: x [B, S, *rest], int64 indices [B, T] in range -> [B, T, *rest]."""
    shape = builders.dims_of(x)
    batch, rest = shape[0], list(shape[2:])
    count = builders.dims_of(indices)[1]
    numbers = stablehlo.GatherDimensionNumbers.get(
        offset_dims=list(range(2, 2 + len(rest))),
        collapsed_slice_dims=[1],
        operand_batching_dims=[0],
        start_indices_batching_dims=[0],
        start_index_map=[1],
        index_vector_dim=2,
    )
    out_shape = [batch, count, *rest]
    points = builders.reshape(indices, [batch, count, 1])
    result = stablehlo.gather(
        x, points, numbers, builders.i64_array([1, 1, *rest]), results=[builders.tensor_type(out_shape, builders.dtype_of(x))]
    )
    return builders.record(result, out_shape)


def _grow_cache(past: ir.Value, new: ir.Value, past_lengths: ir.Value) -> ir.Value:
    """present [B, KV, P + S, h]: per batch ``past[:past_b] ++ new ++ zeros`` (ORT's ConcatStateChunkGQA).

    ``past_lengths`` [B] int64 is each row's valid past length (<= P); positions after
    ``past_b + S`` are zeros.
    """
    batch, heads, past_len, size = builders.dims_of(past)
    seq = builders.dims_of(new)[2]
    total = past_len + seq
    t = builders.iota([batch, total], 1, DataType.INT64)
    start = builders.broadcast_to(past_lengths, [batch, total], dims=[0])
    offset = stablehlo.subtract(t, start)
    last = stablehlo.subtract(builders.dim_value(seq), builders.constant(np.array(1, np.int64)))
    index = stablehlo.clamp(builders.full_like(offset, 0), offset, builders.broadcast_to(last, [batch, total], dims=[]))
    from_new = builders.transpose(_batched_take(builders.transpose(new, [0, 2, 1, 3]), index), [0, 2, 1, 3])
    zeros = builders.splat(0.0, builders.dtype_of(past), [batch, heads, seq, size])
    padded_past = _concat([past, zeros], 2)
    shape = (batch, heads, total, size)
    in_past = builders.broadcast_to(builders.compare(t, start, "LT"), shape, dims=[0, 2])
    end = stablehlo.add(start, builders.broadcast_to(builders.dim_value(seq), [batch, total], dims=[]))
    in_new = builders.broadcast_to(builders.compare(t, end, "LT"), shape, dims=[0, 2])
    chosen = stablehlo.select(in_new, from_new, builders.splat(0.0, builders.dtype_of(past), shape))
    return stablehlo.select(in_past, padded_past, chosen)


@lowering("GroupQueryAttention", since=1, domain=contrib.MS)
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
        position_ids [B, S] int64; attention_bias [B|1, N|1, S, P + S]; head_sink [N].
        Outputs: output [B, S, N*h]; present_key/value [B, KV, P + S, h]; output_qk
        [B, N, S, P + S].
    Dtypes: f16 (computed in f32), f32.
    Deviations: present has P + S positions. ORT allocates max(P, total_sequence_length); the
        two agree when the caller grows the cache (total_sequence_length = P + S: ORT GenAI on
        CPU, Optimum); with a preallocated max-length buffer our present has S extra trailing
        positions, zeros. Positions after a row's ``past_b + S`` are zeros (ORT leaves them
        unset).
    Raises: UnsupportedAttributeError for q/k norm weights (ORT's CPU kernel refuses them
        too), for quantized KV caches (k/v_quant_type, k_scale, v_scale) and query_seqlens
        (ORT's CPU kernel runs both; not lowered here), and for output_qk without qk_output.
    Follows ORT: first prompt when S == total_sequence_length (past_b = 0), else past_b =
        seqlens_k[b] + 1 - S; local window = the last local_window_size keys; softmax only over
        visible keys (masked ones are exactly 0); attention_bias [B|1, N|1, S, T] is added after
        softcap; smooth_softmax adds a logit 0 to each row's softmax denominator, head_sink[n]
        replaces that 0 per head (and implies it); output_qk is [B, N, S, T]: with qk_output=1
        the scaled (capped, biased) scores with masked keys 0, with 2 the probabilities.
    """
    num_heads, kv_heads = node.attr_int("num_heads"), node.attr_int("kv_num_heads")
    if num_heads % kv_heads:
        raise ctx.error(f"num_heads={num_heads} is not a multiple of kv_num_heads={kv_heads}", ShapeError)
    for name in ("k_quant_type", "v_quant_type"):
        if str(contrib.attr(node, name)) != "NONE":
            raise ctx.unsupported_attribute(name, node.attr(name), "NONE")
    for index, what in ((12, "k_scale"), (13, "v_scale"), (14, "q_norm_weight"), (15, "k_norm_weight"),
                        (16, "query_seqlens")):
        if ctx.has_input(index):
            raise ctx.error(f"input {what} is not supported", UnsupportedAttributeError)
    qk_output = int(contrib.attr(node, "qk_output"))
    if qk_output not in (0, 1, 2):
        raise ctx.unsupported_attribute("qk_output", qk_output, "0 (none), 1 (before softmax), 2 (after softmax)")
    if node.has_output(3) and not qk_output:
        raise ctx.error("output output_qk needs qk_output 1 (before softmax) or 2 (after softmax)", UnsupportedAttributeError)
    query = ctx.input(0)
    dtype = builders.dtype_of(query)
    query = contrib.wide(query)
    batch, seq, width = builders.dims_of(query)
    if ctx.has_input(1) and ctx.has_input(2):
        if not isinstance(width, int) or width % num_heads:
            raise ctx.error(f"query width {width} is not a multiple of num_heads={num_heads}", ShapeError)
        head = width // num_heads
        key, value = contrib.wide(ctx.input(1)), contrib.wide(ctx.input(2))
    else:
        parts = num_heads + 2 * kv_heads
        if not isinstance(width, int) or width % parts:
            raise ctx.error(f"packed QKV width {width} is not a multiple of num_heads + 2 kv_num_heads", ShapeError)
        head = width // parts
        packed = query
        query = builders.slice_axis(packed, 2, 0, num_heads * head)
        key = builders.slice_axis(packed, 2, num_heads * head, (num_heads + kv_heads) * head)
        value = builders.slice_axis(packed, 2, (num_heads + kv_heads) * head, width)
    q = _heads(query, num_heads, head)
    k = _heads(key, kv_heads, head)
    v = _heads(value, kv_heads, head)
    i64 = DataType.INT64
    seqlens = builders.convert(ctx.input(5), i64)
    total_len = builders.reshape(builders.convert(ctx.input(6), i64), ())
    seq_value = builders.dim_value(seq)
    first = builders.compare(seq_value, total_len, "EQ")
    grown = stablehlo.subtract(
        stablehlo.add(seqlens, builders.full_like(seqlens, 1)), builders.broadcast_to(seq_value, [batch], dims=[])
    )
    past_lengths = stablehlo.select(
        builders.broadcast_to(first, [batch], dims=[]), builders.full_like(grown, 0), grown
    )
    positions = stablehlo.add(
        builders.broadcast_to(past_lengths, [batch, seq], dims=[0]), builders.iota([batch, seq], 1, i64)
    )
    if int(contrib.attr(node, "do_rotary")):
        rotary_positions = builders.convert(ctx.input(9), i64) if ctx.has_input(9) else positions
        cos_cache, sin_cache = contrib.wide(ctx.input(7)), contrib.wide(ctx.input(8))
        half = builders.dims_of(cos_cache)[1]
        interleaved = bool(contrib.attr(node, "rotary_interleaved"))
        cos = builders.reshape(cache_rows(cos_cache, rotary_positions), (batch, 1, seq, half))
        sin = builders.reshape(cache_rows(sin_cache, rotary_positions), (batch, 1, seq, half))
        q = rotate(q, cos, sin, 2 * half, interleaved)
        k = rotate(k, cos, sin, 2 * half, interleaved)
    if ctx.has_input(3) and ctx.has_input(4):
        present_k = _grow_cache(contrib.wide(ctx.input(3)), k, past_lengths)
        present_v = _grow_cache(contrib.wide(ctx.input(4)), v, past_lengths)
    else:
        present_k, present_v = k, v
    total = builders.dims_of(present_k)[2]
    groups = num_heads // kv_heads
    t = builders.iota([batch, seq, total], 2, i64)
    limit = builders.broadcast_to(positions, [batch, seq, total], dims=[0, 1])
    keep = builders.compare(t, limit, "LE")
    window = int(contrib.attr(node, "local_window_size"))
    if window > 0:
        lower = stablehlo.subtract(limit, builders.full_like(limit, window))
        keep = stablehlo.and_(keep, builders.compare(t, lower, "GT"))
    keep = builders.reshape(keep, (batch, 1, seq, total))
    scale = node.attr_float("scale", 0.0) or 1.0 / math.sqrt(head)
    bias = contrib.wide(ctx.input(10)) if ctx.has_input(10) else None
    sink = None
    if ctx.has_input(11):
        sink = builders.reshape(contrib.wide(ctx.input(11)), (1, num_heads, 1, 1))
    elif int(contrib.attr(node, "smooth_softmax")) > 0:
        sink = builders.splat(0.0, builders.dtype_of(q), (1, 1, 1, 1))
    scores, probs = attention_probabilities(
        q, _repeat_kv(present_k, groups), scale, bias, keep, float(contrib.attr(node, "softcap")), sink
    )
    out = builders.dot_general(
        probs, _repeat_kv(present_v, groups), lhs_batch=[0, 1], rhs_batch=[0, 1], lhs_contracting=[3], rhs_contracting=[2]
    )
    outputs: list[ir.Value | None] = [builders.convert(_merge_heads(out), dtype), None, None, None]
    if node.has_output(1):
        outputs[1] = builders.convert(present_k, dtype)
    if node.has_output(2):
        outputs[2] = builders.convert(present_v, dtype)
    if node.has_output(3):
        if qk_output == 1:
            shape = builders.dims_of(scores)
            visible = stablehlo.select(builders.broadcast_to(keep, shape), scores, builders.full_like(scores, 0.0))
            outputs[3] = builders.convert(visible, dtype)
        else:
            outputs[3] = builders.convert(probs, dtype)
    return outputs
