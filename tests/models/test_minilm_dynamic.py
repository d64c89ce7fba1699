"""MiniLM compiled once with symbolic dims: one artifact, refined per (batch, sequence)."""

from __future__ import annotations

import numpy as np
import pytest

import onnx_stablehlo

pytestmark = pytest.mark.models

SHAPES = [(1, 7), (2, 16), (4, 128), (3, 1)]


def _feeds(rng: np.random.Generator, batch: int, seq: int) -> dict[str, np.ndarray]:
    mask = np.ones((batch, seq), np.int64)
    mask[0, seq // 2 + 1 :] = 0  # one padded row
    return {
        "input_ids": rng.integers(0, 30522, (batch, seq)).astype(np.int64),
        "attention_mask": mask,
        "token_type_ids": np.zeros((batch, seq), np.int64),
    }


def test_one_artifact_runs_every_shape_and_matches_onnxruntime(minilm_path, rng):
    ort = pytest.importorskip("onnxruntime")
    compiled = onnx_stablehlo.compile(minilm_path)
    assert compiled.artifact is not None, compiled.dynamic_error
    artifact = compiled.artifact.text
    assert artifact.count("tensor<?x?xi64>") >= 3  # the three inputs
    session = ort.InferenceSession(str(minilm_path), providers=["CPUExecutionProvider"])
    for batch, seq in SHAPES:
        feeds = _feeds(rng, batch, seq)
        ours = compiled.run(feeds)[0]
        expected = session.run(None, feeds)[0]
        assert ours.shape == expected.shape == (batch, seq, 384)
        np.testing.assert_allclose(ours, expected, rtol=0, atol=1e-4)
    assert compiled.compile_count == len(SHAPES)
    compiled.run(_feeds(rng, 2, 16))
    assert compiled.compile_count == len(SHAPES)  # the same shape again: from the cache
    assert compiled.artifact.text == artifact  # one artifact, never re-lowered
