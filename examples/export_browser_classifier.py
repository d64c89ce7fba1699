"""The browser flow in JAX: MiniLM + a jnp head trained with optax, one int8 .onnx for the web.

Usage::

    python examples/export_browser_classifier.py --out DIR [--serve]

1. ``to_jax`` turns the legacy MiniLM export of ``tools/build_minilm.py`` into a JAX function;
   mean pooling and L2 normalization in jax.numpy give sentence embeddings
   (``examples/export_sentence_embedding.py``).
2. A linear head in jax.numpy (``[384] -> 2``, seeded) is trained with ``optax.adam`` on the
   frozen embeddings of a few dozen labelled sentences (:data:`TRAIN`), a few hundred steps of
   a 384x2 matrix: well under a second.
3. ``tokens -> MiniLM -> pooling -> head -> logits`` is exported as ONE ONNX model (MiniLM's
   weights and the head's as initializers): ``DIR/model/classifier-float.onnx``, then quantized
   by onnxruntime's ``quantize_dynamic`` (8-bit, unsigned weights: see
   ``examples/browser/build_model.py`` for why) into ``DIR/model/classifier-int8.onnx``.
4. ``DIR`` becomes the page of ``examples/browser/`` (``index.html``, ``tokenizer.js`` and
   ``app.js`` copied in, ``model/config.json`` and ``model/vocab.txt`` written), which runs the
   int8 file with onnxruntime-web (WebAssembly). ``--serve`` vendors onnxruntime-web into
   ``DIR/vendor`` (``npm pack``) and serves ``DIR`` on http://127.0.0.1:8000/.

The script prints the labels and logits of the held-out sentences (:data:`TEST`) in JAX, in
onnxruntime on the float file and on the int8 file. ``tests/exporter/test_examples.py`` types the
same sentences into the page in headless Chromium and checks the page gives JAX's labels.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tools"))
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE / "browser"))

import _example_util  # noqa: E402
import build_minilm  # noqa: E402
import export_sentence_embedding  # noqa: E402
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import optax  # noqa: E402

import onnx_stablehlo  # noqa: E402
from onnx_stablehlo.jax import to_jax  # noqa: E402

LABELS = ("negative", "positive")
FLOAT_FILE = "classifier-float.onnx"
INT8_FILE = "classifier-int8.onnx"
PAGE_FILES = ("index.html", "tokenizer.js", "app.js")
INPUTS = build_minilm.INPUT_NAMES

# (sentence, label): 0 negative, 1 positive.
TRAIN = (
    ("I love this, it is wonderful.", 1), ("What a fantastic experience.", 1),
    ("The food was delicious and the staff were kind.", 1), ("Absolutely brilliant work!", 1),
    ("This made me so happy.", 1), ("A beautiful, moving film.", 1), ("Great value, I would buy it again.", 1),
    ("The hotel was clean and comfortable.", 1), ("She gave an excellent talk.", 1), ("Best day of my life.", 1),
    ("I really enjoyed the concert.", 1), ("The new update works perfectly.", 1), ("Such a lovely surprise.", 1),
    ("The team did an amazing job.", 1), ("I am delighted with the results.", 1), ("This book is a joy to read.", 1),
    ("Everything went smoothly and quickly.", 1), ("Thank you, this is very helpful.", 1),
    ("I hate this, it is awful.", 0), ("What a terrible experience.", 0),
    ("The food was cold and the staff were rude.", 0), ("Absolutely dreadful work.", 0), ("This made me so sad.", 0),
    ("A boring, pointless film.", 0), ("A waste of money, never again.", 0), ("The hotel was dirty and noisy.", 0),
    ("He gave a confusing, dull talk.", 0), ("Worst day of my life.", 0), ("I regret going to the concert.", 0),
    ("The new update broke everything.", 0), ("Such a nasty shock.", 0), ("The team made a mess of it.", 0),
    ("I am disappointed with the results.", 0), ("This book is painful to read.", 0),
    ("Everything went wrong and took forever.", 0), ("This is useless and frustrating.", 0),
)
TEST = (
    ("What a wonderful, delightful day!", 1), ("This was the worst film I have ever seen.", 0),
    ("The service was slow and the food was cold.", 0), ("I am very pleased with my purchase.", 1),
    ("The staff were friendly and helpful.", 1), ("It broke after one day, awful quality.", 0),
)
STEPS = 300
LEARNING_RATE = 0.05


def classifier_function(encoder):
    """``fn(params, input_ids, attention_mask, token_type_ids) -> (logits,)``; params
    ``{"encoder": encoder.params, "head": {"head.weight", "head.bias"}}``."""
    embed = export_sentence_embedding.embedding_function(encoder)

    def classify(params, input_ids, attention_mask, token_type_ids):
        (embedding,) = embed(params["encoder"], input_ids, attention_mask, token_type_ids)
        head = params["head"]
        return (embedding @ head["head.weight"] + head["head.bias"],)

    return classify


def train_head(embeddings: np.ndarray, labels: np.ndarray, seed: int) -> tuple[dict, list[float]]:
    """A ``[384] -> 2`` linear head trained with Adam on fixed embeddings; returns (head, losses)."""
    rng = np.random.default_rng(seed)
    head = {"head.weight": jnp.asarray(rng.standard_normal((embeddings.shape[1], len(LABELS))) * 0.01, jnp.float32),
            "head.bias": jnp.zeros(len(LABELS), jnp.float32)}
    optimizer = optax.adam(LEARNING_RATE)

    def loss_fn(head):
        logits = embeddings @ head["head.weight"] + head["head.bias"]
        return optax.softmax_cross_entropy_with_integer_labels(logits, labels).mean()

    @jax.jit
    def step(head, state):
        loss, grads = jax.value_and_grad(loss_fn)(head)
        updates, state = optimizer.update(grads, state, head)
        return optax.apply_updates(head, updates), state, loss

    state, losses = optimizer.init(head), []
    for _ in range(STEPS):
        head, state, loss = step(head, state)
        losses.append(float(loss))
    return head, losses


def quantize(source: Path, target: Path) -> Path:
    """``quantize_dynamic`` with unsigned 8-bit weights (the x86 and WebAssembly kernels agree)."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    quantize_dynamic(str(source), str(target), weight_type=QuantType.QUInt8)
    return target


def _onnxruntime_logits(session, sentence: str) -> np.ndarray:
    return session.run(["logits"], build_minilm.tokenize([sentence]))[0][0]


def build(out: Path, seed: int = 0) -> dict:
    """Trains, exports, quantizes and writes the page into ``out``; returns the results: per test
    sentence the JAX, float-ONNX and int8-ONNX logits and labels, the loss curve's ends, the config."""
    model_dir = out / "model"
    model_dir.mkdir(exist_ok=True)
    train_feeds = build_minilm.tokenize([s for s, _ in TRAIN])
    with jax.enable_x64(True):  # int64 token ids, as MiniLM takes them
        encoder = to_jax(str(build_minilm.build_minilm("legacy")))
        embed = jax.jit(export_sentence_embedding.embedding_function(encoder))
        (embeddings,) = embed(encoder.params, *(train_feeds[n] for n in INPUTS))
        head, losses = train_head(np.asarray(embeddings), np.array([y for _, y in TRAIN], np.int32), seed)
        classify = classifier_function(encoder)
        params = {"encoder": encoder.params, "head": head}
        onnx_stablehlo.to_onnx(classify, *export_sentence_embedding.symbolic_inputs(), params=params,
                               input_names=INPUTS, output_names=["logits"], path=model_dir / FLOAT_FILE)
        jitted = jax.jit(classify)
        jax_logits = []
        for sentence, _ in TEST:
            feeds = build_minilm.tokenize([sentence])
            jax_logits.append(np.asarray(jitted(params, *(feeds[n] for n in INPUTS))[0][0]))
    quantize(model_dir / FLOAT_FILE, model_dir / INT8_FILE)
    float_session = _example_util.ort_session(model_dir / FLOAT_FILE)
    int8_session = _example_util.ort_session(model_dir / INT8_FILE)
    rows = []
    for (sentence, truth), logits in zip(TEST, jax_logits):
        float_logits = _onnxruntime_logits(float_session, sentence)
        int8_logits = _onnxruntime_logits(int8_session, sentence)
        rows.append({"text": sentence, "truth": LABELS[truth], "jax_logits": logits.tolist(),
                     "float_logits": float_logits.tolist(), "int8_logits": int8_logits.tolist(),
                     "jax_label": LABELS[int(np.argmax(logits))], "float_label": LABELS[int(np.argmax(float_logits))],
                     "int8_label": LABELS[int(np.argmax(int8_logits))]})
    config = {
        "model": INT8_FILE, "float_model": FLOAT_FILE, "labels": list(LABELS), "inputs": list(INPUTS),
        "output": "logits", "do_lower_case": True, "max_length": 128, "steps": STEPS,
        "float_accuracy": float(np.mean([r["float_label"] == r["truth"] for r in rows])),
        "int8_accuracy": float(np.mean([r["int8_label"] == r["truth"] for r in rows])),
    }
    (model_dir / "config.json").write_text(json.dumps(config, indent=2) + "\n")
    shutil.copyfile(build_minilm.minilm_model_dir() / "vocab.txt", model_dir / "vocab.txt")
    for name in PAGE_FILES:
        shutil.copyfile(HERE / "browser" / name, out / name)
    return {"rows": rows, "config": config, "first_loss": losses[0], "last_loss": losses[-1]}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True, help="folder for the page and model/ (must exist)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--serve", action="store_true", help="vendor onnxruntime-web into OUT/vendor and serve OUT")
    parser.add_argument("--port", type=int, default=8000)
    args = parser.parse_args(argv)
    if not args.out.is_dir():
        parser.error(f"--out {args.out} is not a folder")
    result = build(args.out, args.seed)
    print(f"head trained {STEPS} steps: loss {result['first_loss']:.4f} -> {result['last_loss']:.4f}")
    worst_float = max(np.abs(np.subtract(r["float_logits"], r["jax_logits"])).max() for r in result["rows"])
    worst_int8 = max(np.abs(np.subtract(r["int8_logits"], r["jax_logits"])).max() for r in result["rows"])
    for r in result["rows"]:
        print(f"{r['text']!r}: JAX {r['jax_label']} {np.round(r['jax_logits'], 4).tolist()}, onnxruntime float "
              f"{r['float_label']}, int8 {r['int8_label']} {np.round(r['int8_logits'], 4).tolist()}")
    print(f"max |logits, float ONNX - JAX| = {worst_float:.2e}; max |int8 ONNX - JAX| = {worst_int8:.3f}")
    print(f"wrote {args.out / 'model' / INT8_FILE}, {FLOAT_FILE}, config.json, vocab.txt and the page")
    if args.serve:
        import serve
        import vendor

        vendor.vendor(args.out / "vendor")
        serve.serve_until_interrupted(args.out, args.port)
    return 0


if __name__ == "__main__":
    sys.exit(main())
