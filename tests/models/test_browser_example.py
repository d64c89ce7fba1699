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
    config = out / "config.json"
    if not config.is_file() or json.loads(config.read_text()).get("build_version") != build_model.BUILD_VERSION:
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


# The page's sentences; onnxruntime gives each a margin over 0.2 on the quick model (a label
# must not hinge on the int8 tolerance below).
PAGE_SENTENCES = (
    "What a wonderful, delightful day!",
    "This was the worst film I have ever seen.",
    "The service was slow and the food was cold.",
    "meh",
)
FLOAT_ATOL = 1e-5
"""Logits of the float model, page vs onnxruntime in Python (measured: at most 6.6e-7)."""
INT8_PROBABILITY_ATOL = 0.02
"""Probabilities of the int8 model. Its per-tensor DynamicQuantizeLinear turns the 1-ulp
differences between the WebAssembly and x86 float kernels into a shifted quantization of a whole
layer: measured on these sentences, logits equal to 1e-7 on two and off by 0.014 and 0.065 on
the others, probabilities by at most 0.0087."""


@pytest.mark.slow
def test_page_classifies_typed_sentences_like_onnxruntime(site, model_dir, tmp_path):
    config = json.loads((model_dir / "config.json").read_text())
    server = serve.start(site)
    url = f"http://127.0.0.1:{server.server_address[1]}/"
    try:
        with chromium.WebDriver(tmp_path / "profile", timeout=120) as browser:
            int8_pages = chromium.classify_in_page(browser, PAGE_SENTENCES, url)
            browser.screenshot(tmp_path / "page.png")
            assert browser.attribute("#status", "data-model") == config["model"]
            float_pages = chromium.classify_in_page(browser, PAGE_SENTENCES, url + "?model=float")
            assert browser.attribute("#status", "data-model") == config["float_model"]
    finally:
        server.shutdown()
    for sentence, page in zip(PAGE_SENTENCES, float_pages):
        ids, logits, _ = _onnxruntime(model_dir / config["float_model"], sentence)
        assert page["input_ids"] == ids
        np.testing.assert_allclose(page["logits"], logits, rtol=0, atol=FLOAT_ATOL, err_msg=sentence)
    for sentence, page in zip(PAGE_SENTENCES, int8_pages):
        ids, logits, probabilities = _onnxruntime(model_dir / config["model"], sentence)
        assert page["input_ids"] == ids
        assert page["label"] == config["labels"][int(np.argmax(probabilities))], sentence
        np.testing.assert_allclose(page["probabilities"], probabilities, rtol=0, atol=INT8_PROBABILITY_ATOL,
                                   err_msg=sentence)
