"""Cost of the run-time index checks (``compile(runtime_checks=True)``, the default) on MiniLM.

Usage::

    python bench/runtime_checks.py [--quick] [--model PATH] [--reps N] [--device cpu|cuda]

Compiles all-MiniLM-L6-v2 (legacy export, from the shared cache; build it with
``python tools/build_minilm.py --flavour legacy``) twice per shape, with and without run-time
checks, and prints the median latency of each, their ratio, and the number of checks in
``@main`` (one per Gather-family node of the top-level graph: the word, position and token-type
embeddings). ``--quick`` measures one shape (1x16) with few repetitions.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _timing  # noqa: E402

import onnx_stablehlo  # noqa: E402

DEFAULT_MODEL = Path.home() / ".cache" / "onnx-stablehlo" / "all-MiniLM-L6-v2.legacy-opset17.onnx"


def _feeds(model, batch: int, sequence: int, seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    feeds = {}
    for value in model.graph.inputs:
        if "mask" in value.name:
            feeds[value.name] = np.ones((batch, sequence), np.int64)
        elif "type" in value.name:
            feeds[value.name] = np.zeros((batch, sequence), np.int64)
        else:
            feeds[value.name] = rng.integers(0, 30522, (batch, sequence)).astype(np.int64)
    return feeds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=str(DEFAULT_MODEL))
    parser.add_argument("--quick", action="store_true", help="one shape (1x16), few repetitions")
    parser.add_argument("--reps", type=int, default=None)
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    args = parser.parse_args()
    shapes = [(1, 16)] if args.quick else [(1, 16), (8, 128)]
    reps = args.reps or (10 if args.quick else 30)
    model = onnx_stablehlo.load(args.model)
    print(f"# device {args.device}")
    print("| shape | checks | with checks (ms) | without (ms) | ratio |")
    print("|---|---|---|---|---|")
    for batch, sequence in shapes:
        feeds = _feeds(model, batch, sequence, seed=0)
        shapes_arg = {n: a.shape for n, a in feeds.items()}
        compiled = {c: onnx_stablehlo.compile(model, args.device, input_shapes=shapes_arg, runtime_checks=c) for c in (True, False)}
        outputs = {c: m.run(feeds) for c, m in compiled.items()}
        count = len(compiled[True].lowered.check_messages)
        # Alternate the two models, one call each per round, so load on the machine hits both alike.
        samples: dict[bool, list[float]] = {True: [], False: []}
        for _ in range(reps):
            for checks, m in compiled.items():
                samples[checks].append(_timing.timed(lambda m=m: m.run(feeds))[1])
        medians = {c: statistics.median(v) for c, v in samples.items()}
        same = all(np.array_equal(a, b) for a, b in zip(outputs[True], outputs[False]))
        ratio = medians[True] / medians[False]
        print(
            f"| {batch}x{sequence} | {count} | {medians[True] * 1e3:.2f} | {medians[False] * 1e3:.2f} | "
            f"{ratio:.3f} |{'' if same else ' OUTPUTS DIFFER'}"
        )


if __name__ == "__main__":
    main()
