"""Tiny models and data sets for the training tests (ONNX text, seeded; each trains in seconds)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import onnx.parser

FEATURES = 4
HIDDEN = 16
CLASSES = 3


def _floats(array: np.ndarray) -> str:
    return ", ".join(f"{v:.8g}" for v in np.asarray(array, dtype=np.float64).ravel())


def mlp_classifier(seed: int = 0, opset: int = 17) -> onnx.ModelProto:
    """``x float[N, 4] -> logits float[N, 3]``: Linear(4, 16) -> Relu -> Linear(16, 3), seeded."""
    rng = np.random.default_rng(seed)
    w1 = rng.standard_normal((FEATURES, HIDDEN)) * 0.5
    b1 = rng.standard_normal(HIDDEN) * 0.1
    w2 = rng.standard_normal((HIDDEN, CLASSES)) * 0.5
    b2 = np.zeros(CLASSES)
    text = f"""
    <ir_version: 9, opset_import: ["" : {opset}]>
    mlp (float[N, {FEATURES}] x) => (float[N, {CLASSES}] logits)
    <float[{FEATURES}, {HIDDEN}] w1 = {{{_floats(w1)}}}, float[{HIDDEN}] b1 = {{{_floats(b1)}}},
     float[{HIDDEN}, {CLASSES}] w2 = {{{_floats(w2)}}}, float[{CLASSES}] b2 = {{{_floats(b2)}}}>
    {{
      [fc1] h1 = MatMul(x, w1)
      [fc1_bias] h2 = Add(h1, b1)
      [relu] h = Relu(h2)
      [fc2] l1 = MatMul(h, w2)
      [fc2_bias] logits = Add(l1, b2)
    }}
    """
    model = onnx.parser.parse_model(text)
    onnx.checker.check_model(model)
    return model


def tiny_encoder(seed: int = 0, vocab: int = 12, width: int = 6, opset: int = 17) -> onnx.ModelProto:
    """``input_ids, attention_mask int64[B, S] -> hidden float[B, S, width]``: an embedding and tanh."""
    rng = np.random.default_rng(seed)
    embedding = rng.standard_normal((vocab, width))
    text = f"""
    <ir_version: 9, opset_import: ["" : {opset}]>
    enc (int64[B, S] input_ids, int64[B, S] attention_mask) => (float[B, S, {width}] hidden)
    <float[{vocab}, {width}] embedding = {{{_floats(embedding)}}}>
    {{
      [embed] e = Gather(embedding, input_ids)
      [act] hidden = Tanh(e)
    }}
    """
    model = onnx.parser.parse_model(text)
    onnx.checker.check_model(model)
    return model


def classification_data(examples: int = 256, seed: int = 0) -> dict[str, np.ndarray]:
    """Seeded points in R^4 with 3 classes that an MLP separates."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((examples, FEATURES)).astype(np.float32)
    labels = (x[:, 0] > 0).astype(np.int64) + (x[:, 1] > 0.5).astype(np.int64)
    return {"x": x, "labels": labels}


def ort_run(model: onnx.ModelProto | str | Path, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    """Runs a model with onnxruntime on CPU."""
    import onnxruntime as ort

    source = model.SerializeToString() if isinstance(model, onnx.ModelProto) else str(model)
    session = ort.InferenceSession(source, providers=["CPUExecutionProvider"])
    return session.run(None, feeds)
