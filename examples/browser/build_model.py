"""Builds the model the browser page runs: fine-tuned MiniLM sentiment, quantized to int8.

Steps: fine-tune all-MiniLM-L6-v2 + a linear head on the vaderSentiment lexicon with
onnx_stablehlo (``examples/finetune_sentiment.py``, the ``full`` run), write the weights back into
ONNX, quantize the written model with onnxruntime's ``quantize_dynamic`` (8-bit weights and
activations, per tensor; see :func:`quantize` for why unsigned), and put next to it what the
page needs: ``vocab.txt`` (the WordPiece vocabulary of the same tokenizer) and ``config.json``
(labels, tokenizer settings, test accuracies).

Usage::

    python examples/browser/build_model.py [--steps 300] [--quick] [--out examples/browser/model]

``--quick`` trains 20 steps (a minute on 2 cores): the page and its test do not need a good
classifier, only the same file in both runtimes.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))  # examples/
sys.path.insert(0, str(HERE.parents[1] / "tools"))

import finetune_sentiment  # noqa: E402

LABELS = ("negative", "positive")
BUILD_VERSION = 2
"""Written into config.json; bumped when what is built changes (2: uint8 weights, float model kept)."""
MODEL_FILE = "sentiment-int8.onnx"
FLOAT_FILE = "sentiment-float.onnx"
"""The fine-tuned float model, kept next to the int8 one (the page does not load it)."""


def quantize(source: Path, target: Path) -> Path:
    """``quantize_dynamic`` of ``source`` written to ``target``: uint8 weights and activations.

    Unsigned weights (``QUInt8``), not ``QInt8``: onnxruntime's x86 CPU kernel for uint8 x int8
    products sums pairs in int16 with saturation (AVX2 ``vpmaddubsw``), which onnxruntime-web's
    WebAssembly kernel does not, so the two runtimes disagree on the same file. Measured on
    "What a wonderful, delightful day!": QInt8 logits -1.5722/1.1881 on CPU against
    -1.5665/1.2320 in the browser; QUInt8 -1.552327/1.317090 in both (float model
    -1.4759/1.2953); QInt8 with ``reduce_range`` also agrees but moves the logits to -0.96/1.02.
    What remains with QUInt8 is the per-tensor activation quantization amplifying 1-ulp float
    differences on some inputs (logits off by up to 0.065 on one of six sentences tried).
    """
    from onnxruntime.quantization import QuantType, quantize_dynamic

    quantize_dynamic(str(source), str(target), weight_type=QuantType.QUInt8)
    return target


def build(out: Path, *, steps: int = 300, seed: int = 0, max_length: int = 8) -> dict:
    """Fine-tunes, writes back, quantizes; returns the config written to ``out/config.json``."""
    import build_minilm

    out.mkdir(parents=True, exist_ok=True)
    results = finetune_sentiment.run(steps=steps, seed=seed, max_length=max_length, runs=("full",),
                                     out_dir=out, progress=False)
    full = Path(results["full"]["path"]).replace(out / FLOAT_FILE)
    model = quantize(full, out / MODEL_FILE)
    _, test, _ = finetune_sentiment.split(seed, max_length)
    int8_accuracy = finetune_sentiment.onnxruntime_accuracy(model, test, 64)
    shutil.copyfile(build_minilm.minilm_model_dir() / "vocab.txt", out / "vocab.txt")
    config = {
        "build_version": BUILD_VERSION,
        "model": MODEL_FILE,
        "float_model": FLOAT_FILE,
        "labels": list(LABELS),
        "inputs": list(finetune_sentiment.INPUTS),
        "output": "logits",
        "do_lower_case": True,
        "max_length": 128,
        "steps": steps,
        "float_accuracy": results["full"]["onnxruntime_accuracy"],
        "int8_accuracy": int8_accuracy,
    }
    (out / "config.json").write_text(json.dumps(config, indent=2) + "\n")
    return config


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--quick", action="store_true", help="20 training steps")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=HERE / "model")
    args = parser.parse_args(argv)
    config = build(args.out, steps=20 if args.quick else args.steps, seed=args.seed)
    print(f"wrote {args.out / config['model']} ({config['steps']} steps; test accuracy "
          f"float {config['float_accuracy']:.4f}, int8 {config['int8_accuracy']:.4f}) and vocab.txt, config.json")
    return 0


if __name__ == "__main__":
    sys.exit(main())
