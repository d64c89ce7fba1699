"""Small seeded ONNX models for the JAX bridge tests (ONNX text syntax)."""

from __future__ import annotations

import numpy as np
import onnx
import onnx.parser


def _floats(array: np.ndarray) -> str:
    return ", ".join(f"{v:.8g}" for v in np.asarray(array, dtype=np.float64).ravel())


def mlp(seed: int = 0, batch: str = "batch", hidden: int = 8) -> onnx.ModelProto:
    """``x float[batch, 4], ids int64[batch] -> (y float[batch, 3], twice int64[batch])``.

    ``y = tanh(relu(x @ w1 + b1) @ w2) * scale``; the int output doubles ``ids`` (no gradient).
    """
    rng = np.random.default_rng(seed)
    w1, b1 = rng.standard_normal((4, hidden)) * 0.5, rng.standard_normal(hidden) * 0.1
    w2 = rng.standard_normal((hidden, 3)) * 0.5
    text = f"""
    <ir_version: 9, opset_import: ["" : 18]>
    mlp (float[{batch}, 4] x, int64[{batch}] ids) => (float[{batch}, 3] y, int64[{batch}] twice)
    <float[4, {hidden}] w1 = {{{_floats(w1)}}}, float[{hidden}] b1 = {{{_floats(b1)}}},
     float[{hidden}, 3] w2 = {{{_floats(w2)}}}, float scale = {{1.5}}>
    {{
      [fc1] h1 = MatMul(x, w1)
      [bias1] h2 = Add(h1, b1)
      [relu] h = Relu(h2)
      [fc2] l = MatMul(h, w2)
      [act] t = Tanh(l)
      [scale] y = Mul(t, scale)
      [double] twice = Add(ids, ids)
    }}
    """
    model = onnx.parser.parse_model(text)
    onnx.checker.check_model(model)
    return model


def pooled_encoder(seed: int = 1, vocab: int = 20, width: int = 6) -> onnx.ModelProto:
    """``input_ids, attention_mask int64[batch, sequence] -> hidden float[batch, sequence, width]``."""
    rng = np.random.default_rng(seed)
    embedding = rng.standard_normal((vocab, width))
    proj = rng.standard_normal((width, width)) * 0.4
    text = f"""
    <ir_version: 9, opset_import: ["" : 18]>
    enc (int64[batch, sequence] input_ids, int64[batch, sequence] attention_mask) => (float[batch, sequence, {width}] hidden)
    <float[{vocab}, {width}] embedding = {{{_floats(embedding)}}}, float[{width}, {width}] proj = {{{_floats(proj)}}}>
    {{
      [embed] e = Gather(embedding, input_ids)
      [proj] p = MatMul(e, proj)
      [mask_cast] m = Cast<to = 1>(attention_mask)
      [mask_axis] axes = Constant<value = int64[1] {{2}}>()
      [mask_unsq] m3 = Unsqueeze(m, axes)
      [masked] q = Mul(p, m3)
      [act] hidden = Tanh(q)
    }}
    """
    model = onnx.parser.parse_model(text)
    onnx.checker.check_model(model)
    return model


def broadcast_pair() -> onnx.ModelProto:
    """``a float[N, 4], b float[M, 4] -> a + b``: the lowering assumes ``N == M``."""
    text = """
    <ir_version: 9, opset_import: ["" : 18]>
    pair (float[N, 4] a, float[M, 4] b) => (float[N, 4] c) {
      [add] c = Add(a, b)
    }
    """
    return onnx.parser.parse_model(text)
