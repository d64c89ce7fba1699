"""``examples/browser``: the fine-tuned int8 sentiment model in Chromium with onnxruntime-web.

The page's WordPiece tokenizer (``tokenizer.js``) is checked against the ``tokenizers`` library
under node; the page itself is driven through chromedriver: a sentence is typed, the button
clicked, and the page's token ids, label and probabilities must equal those of onnxruntime in
Python on the same ``.onnx`` file. Building the model fine-tunes MiniLM (about 3 minutes on 2
cores, cached under the model cache folder); vendoring fetches onnxruntime-web with npm.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import build_minilm  # tools/ is put on sys.path by conftest.py
import zoo
from tests import chromium

pytest.importorskip("vaderSentiment", reason="needs the [models] extra")
pytest.importorskip("onnxruntime", reason="needs the [test] extra")

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "browser"
sys.path.insert(0, str(EXAMPLE))

import build_model  # noqa: E402
import serve  # noqa: E402
import vendor  # noqa: E402

pytestmark = pytest.mark.models

SENTENCES = (
    "What a wonderful, delightful day!",
    "This was the worst film I have ever seen.",
    "Naïve café owners don't like UNBELIEVABLY long queues... 東京",
)


def _tokenize_with_node(sentences) -> list[list[int]]:
    node = shutil.which("node")
    if node is None:
        pytest.skip("needs node to run tokenizer.js outside the browser")
    script = (
        "const { WordPieceTokenizer } = require(process.argv[1]);"
        "const fs = require('fs');"
        "const t = new WordPieceTokenizer(fs.readFileSync(process.argv[2], 'utf8'));"
        "console.log(JSON.stringify(JSON.parse(process.argv[3]).map((s) => t.encode(s))));"
    )
    vocab = build_minilm.minilm_model_dir() / "vocab.txt"
    done = subprocess.run([node, "-e", script, str(EXAMPLE / "tokenizer.js"), str(vocab), json.dumps(list(sentences))],
                          capture_output=True, text=True, timeout=60, check=True)
    return json.loads(done.stdout)


def _python_ids(sentence: str) -> list[int]:
    return build_minilm.tokenize([sentence])["input_ids"][0].tolist()


def test_tokenizer_js_matches_the_tokenizers_library():
    assert _tokenize_with_node(SENTENCES) == [_python_ids(s) for s in SENTENCES]


@pytest.fixture(scope="module")
def model_dir() -> Path:
    """The quick (20-step) fine-tuned int8 model, built once into the model cache."""
    out = zoo.cache_dir() / "browser-sentiment"
    if not (out / "config.json").is_file():
        build_model.build(out, steps=20)
    return out


@pytest.fixture(scope="module")
def site(model_dir, tmp_path_factory) -> Path:
    """The page's folder with the vendored onnxruntime-web and the built model linked in."""
    try:
        vendored = vendor.vendor()
    except RuntimeError as exc:
        pytest.skip(f"onnxruntime-web could not be vendored: {exc}")
    root = tmp_path_factory.mktemp("site")
    for name in ("index.html", "tokenizer.js", "app.js"):
        (root / name).symlink_to(EXAMPLE / name)
    (root / "vendor").symlink_to(vendored, target_is_directory=True)
    (root / "model").symlink_to(model_dir, target_is_directory=True)
    return root


def _onnxruntime(model: Path, sentence: str) -> tuple[list[int], np.ndarray, np.ndarray]:
    import onnxruntime as ort

    feeds = build_minilm.tokenize([sentence])
    session = ort.InferenceSession(str(model), providers=["CPUExecutionProvider"])
    logits = session.run(["logits"], feeds)[0][0].astype(np.float64)
    exps = np.exp(logits - logits.max())
    return feeds["input_ids"][0].tolist(), logits, exps / exps.sum()


@pytest.mark.slow
def test_page_classifies_typed_sentences_like_onnxruntime(site, model_dir, tmp_path):
    config = json.loads((model_dir / "config.json").read_text())
    server = serve.start(site)
    try:
        with chromium.WebDriver(tmp_path / "profile", timeout=120) as browser:
            browser.get(f"http://127.0.0.1:{server.server_address[1]}/")
            assert browser.wait_for_attribute("#status", "data-ready") == "yes", browser.text("#status")
            for count, sentence in enumerate(SENTENCES, start=1):
                browser._session_request("POST", f"/element/{browser.find('#text')}/clear")
                browser.type("#text", sentence)
                browser.click("#classify")
                browser.wait_for_attribute("#result", "data-done", str(count))
                page = json.loads(browser.property("#result", "textContent"))
                ids, logits, probabilities = _onnxruntime(model_dir / config["model"], sentence)
                assert page["text"] == sentence and page["input_ids"] == ids
                np.testing.assert_allclose(page["logits"], logits, rtol=0, atol=1e-4, err_msg=sentence)
                np.testing.assert_allclose(page["probabilities"], probabilities, rtol=0, atol=1e-5, err_msg=sentence)
                assert page["label"] == config["labels"][int(np.argmax(probabilities))] == browser.text("#label")
            browser.screenshot(tmp_path / "page.png")
    finally:
        server.shutdown()
