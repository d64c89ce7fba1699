"""Helpers shared by the ``com.microsoft`` rules (contrib_layers, contrib_attention, contrib_weight_quant).

Attribute defaults: ``onnx.defs`` has no ``com.microsoft`` schemas, so each default is stated
once in :data:`DEFAULTS` (from the contrib schema); ``tests/frontend/test_contrib_layers.py``
checks them against the schemas onnxruntime registers.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import stablehlo

from onnx_stablehlo.frontend import builders, dtypes
from onnx_stablehlo.frontend.context import OnnxNode
from onnx_stablehlo.frontend.dtypes import DataType
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

HALF = (DataType.FLOAT16, DataType.BFLOAT16)


def attr(node: OnnxNode, name: str):
    return node.attr(name, DEFAULTS[(node.op_type, name)])


def wide(x: ir.Value) -> ir.Value:
    """``x`` in float32 when it is float16/bfloat16 (ORT's CPU kernels compute those in float)."""
    return builders.convert(x, dtypes.wide_dtype(builders.dtype_of(x)))


def add_broadcast(x: ir.Value, other: ir.Value) -> ir.Value:
    """``x + other`` with ``other`` numpy-broadcast onto ``x``'s shape (and dtype)."""
    other = builders.convert(other, builders.dtype_of(x))
    return stablehlo.add(x, builders.broadcast_to(other, builders.dims_of(x)))


def product(dims: Sequence[Dim]) -> Dim:
    total: Dim = 1
    for d in dims:
        total = total * d
    return total


def embed(table: ir.Value, ids: ir.Value) -> ir.Value:
    """``table[ids]`` (rows of a [V, H] table) for any-rank integer ids, clamped into range."""
    ids_shape = builders.dims_of(ids)
    vocab, hidden = builders.dims_of(table)
    flat = builders.reshape(builders.convert(ids, DataType.INT64), [product(ids_shape)])
    flat = stablehlo.clamp(builders.full_like(flat, 0), flat, dim_minus_one(vocab, flat))
    rows = builders.take(table, flat, 0)
    return builders.reshape(rows, (*ids_shape, hidden))


def dim_minus_one(dim: Dim, like: ir.Value) -> ir.Value:
    value = builders.dim_value(dim)
    value = stablehlo.subtract(value, builders.constant(np.array(1, np.int64)))
    return builders.broadcast_to(value, builders.dims_of(like), dims=[])
