"""Fine-tunes all-MiniLM-L6-v2 + a linear head to tell positive words from negative ones.

Data: the human-rated lexicon that ships in the PyPI package ``vaderSentiment``
(``vader_lexicon.txt``: each token's mean rating from 10 raters, -4 .. +4). The 7,227 entries
that are words (letters, inner ``-`` or ``'``; emoticons left out) are labelled positive when
the mean rating is > 0, and split 80/20 into train and test by a seeded permutation.

Model: the MiniLM encoder exported by ``tools/build_minilm.py`` (legacy exporter, opset 17),
extended with attention-mask mean pooling + ``Linear(384, 2)`` (:mod:`onnx_stablehlo.heads`),
trained with softmax cross-entropy by :class:`onnx_stablehlo.runtime.training.Trainer`. Words
are tokenized to a fixed length (``--max-length``, [CLS] and [SEP] included), so one executable
serves every batch.

Two runs from the same seeded head:

* ``head``: the encoder frozen, only the head trained (AdamW, ``--head-lr``);
* ``full``: every weight trained (AdamW, ``--full-lr``, linear warm-up then cosine decay).

The fully fine-tuned model is written back to ONNX and run by onnxruntime on the test set,
which must give the same accuracy as our compiled model.

Usage::

    python examples/finetune_sentiment.py [--steps 300] [--batch-size 32] [--max-length 8]
        [--seed 0] [--out DIR] [--runs head full]
"""

from __future__ import annotations

import argparse
import re
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT / "tools"))

import build_minilm  # noqa: E402

from onnx_stablehlo.heads import add_classifier_head  # noqa: E402
from onnx_stablehlo.runtime.training import ArrayBatches, Trainer, make_optimizer  # noqa: E402

WORD = re.compile(r"^[a-z]+(?:[-'][a-z]+)*$")
"""Lexicon tokens kept: words, not emoticons."""
TEST_FRACTION = 0.2
INPUTS = build_minilm.INPUT_NAMES


def lexicon_path() -> Path:
    """``vader_lexicon.txt`` inside the installed ``vaderSentiment`` package."""
    import vaderSentiment

    return Path(vaderSentiment.__file__).resolve().parent / "vader_lexicon.txt"


def load_lexicon() -> tuple[list[str], np.ndarray]:
    """The lexicon's words and their labels (1: mean rating > 0)."""
    words, labels = [], []
    for line in lexicon_path().read_text(encoding="utf-8").splitlines():
        fields = line.split("\t")
        if len(fields) >= 2 and WORD.match(fields[0]):
            words.append(fields[0])
            labels.append(int(float(fields[1]) > 0))
    return words, np.array(labels, dtype=np.int64)


def encode(words: Sequence[str], max_length: int) -> dict[str, np.ndarray]:
    """Token ids, mask and type ids, int64 ``[len(words), max_length]`` (padded with 0)."""
    tokens = build_minilm.tokenize(list(words), max_length=max_length)
    padded = {}
    for name, array in tokens.items():
        out = np.zeros((len(words), max_length), dtype=np.int64)
        out[:, : array.shape[1]] = array
        padded[name] = out
    return padded


def split(seed: int, max_length: int) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray], list[str]]:
    """Seeded train/test split of the encoded lexicon; also returns the test words."""
    words, labels = load_lexicon()
    arrays = {**encode(words, max_length), "labels": labels}
    order = np.random.default_rng(seed).permutation(len(words))
    cut = int(round(len(words) * (1 - TEST_FRACTION)))
    train = {k: v[order[:cut]] for k, v in arrays.items()}
    test = {k: v[order[cut:]] for k, v in arrays.items()}
    return train, test, [words[i] for i in order[cut:]]


def onnxruntime_accuracy(path: Path, test: dict[str, np.ndarray], batch_size: int) -> float:
    """Test accuracy of a written model run by onnxruntime on CPU."""
    import onnxruntime as ort

    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    correct = 0
    for start in range(0, len(test["labels"]), batch_size):
        feeds = {name: test[name][start : start + batch_size] for name in INPUTS}
        (logits,) = session.run(["logits"], feeds)
        correct += int(np.sum(np.argmax(logits, axis=1) == test["labels"][start : start + batch_size]))
    return correct / len(test["labels"])


def run(
    *,
    steps: int = 300,
    batch_size: int = 32,
    max_length: int = 8,
    seed: int = 0,
    head_lr: float = 3e-3,
    full_lr: float = 1e-4,
    runs: Sequence[str] = ("head", "full"),
    out_dir: Path | None = None,
    progress: bool = True,
) -> dict[str, dict[str, float]]:
    """Trains each run and returns, per run: test accuracy/loss, seconds, examples/s.

    The ``full`` run also reports ``onnxruntime_accuracy`` of the model written back to ONNX
    (``<out_dir>/minilm-sentiment.onnx``).
    """
    train, test, _ = split(seed, max_length)
    model = add_classifier_head(str(build_minilm.build_minilm("legacy")), 2, seed=seed)
    train_batches = ArrayBatches(train, batch_size)
    test_batches = ArrayBatches(test, batch_size, shuffle=False, drop_last=False)
    results: dict[str, dict[str, float]] = {}
    for name in runs:
        if name == "head":
            trainer = Trainer(model, "softmax_cross_entropy", trainable="head.*", seed=seed,
                              optimizer=make_optimizer("adamw", head_lr))
        elif name == "full":
            trainer = Trainer(model, "softmax_cross_entropy", trainable="*", seed=seed,
                              optimizer=make_optimizer("adamw", full_lr, schedule="cosine",
                                                       warmup_steps=steps // 10, total_steps=steps))
        else:
            raise ValueError(f"unknown run {name!r}: choose head or full")
        before = trainer.evaluate(test_batches)
        start = time.perf_counter()
        trainer.fit(train_batches, steps=steps, progress=progress)
        seconds = time.perf_counter() - start
        after = trainer.evaluate(test_batches)
        result = {
            "trainable_tensors": len(trainer.trainable),
            "steps": steps,
            "seconds": seconds,
            "accuracy_before": before.accuracy,
            "accuracy": after.accuracy,
            "loss": after.loss,
            "examples_per_second": trainer.throughput(),  # steps that compiled are left out
        }
        if name == "full":
            with tempfile.TemporaryDirectory(prefix="minilm-sentiment-") as scratch:  # kept only with --out
                path = trainer.save_onnx(Path(out_dir or scratch) / "minilm-sentiment.onnx")
                result["onnxruntime_accuracy"] = onnxruntime_accuracy(path, test, batch_size)
            result["path"] = str(path) if out_dir else None  # type: ignore[assignment]
        results[name] = result
    results["data"] = {"train": len(train["labels"]), "test": len(test["labels"]),
                       "test_majority": float(max(test["labels"].mean(), 1 - test["labels"].mean()))}
    return results


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--max-length", type=int, default=8)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--head-lr", type=float, default=3e-3)
    parser.add_argument("--full-lr", type=float, default=1e-4)
    parser.add_argument("--runs", nargs="+", choices=("head", "full"), default=["head", "full"])
    parser.add_argument("--out", type=Path, help="folder for the fine-tuned .onnx (default: not kept)")
    args = parser.parse_args(argv)
    if args.out is not None:  # the folder --out names is made (not its parents): save_onnx creates none
        try:
            args.out.mkdir(exist_ok=True)
        except OSError as exc:
            parser.error(f"--out {args.out}: {exc.strerror or exc}")
    results = run(steps=args.steps, batch_size=args.batch_size, max_length=args.max_length, seed=args.seed,
                  head_lr=args.head_lr, full_lr=args.full_lr, runs=args.runs, out_dir=args.out)
    data = results.pop("data")
    print(f"\nvader_lexicon words: {data['train']:.0f} train, {data['test']:.0f} test "
          f"(majority class {data['test_majority']:.3f})")
    print("| run | trained tensors | steps | train s | examples/s | test acc before | test acc after | onnxruntime acc |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for name, r in results.items():
        ort_acc = f"{r['onnxruntime_accuracy']:.4f}" if "onnxruntime_accuracy" in r else "-"
        print(f"| {name} | {r['trainable_tensors']:.0f} | {r['steps']:.0f} | {r['seconds']:.1f} | "
              f"{r['examples_per_second']:.0f} | {r['accuracy_before']:.4f} | {r['accuracy']:.4f} | {ort_acc} |")
    if "full" in results:
        path = results["full"]["path"]
        print(f"wrote {path}" if path else "the fine-tuned .onnx was checked with onnxruntime and not kept (pass --out)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
