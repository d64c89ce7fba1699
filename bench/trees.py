"""A 500-tree, depth-8 forest on 10,000 rows: onnx_stablehlo against onnxruntime.

The forest is a scikit-learn ``ExtraTreesRegressor(n_estimators=500, max_depth=8)`` trained
(seeded) on ``make_regression`` data with 20 features and converted by skl2onnx
(TreeEnsembleRegressor, about 250,000 nodes). Every tree is walked at once on the device
(``frontend/lowering/ml.py``): 8 steps of gathers over a ``[rows, trees]`` index tensor.

Prints one markdown table: compile time, median latency per call (both after warm-up) and the
max abs / relative difference to onnxruntime. A script, not a test.

Usage::

    python bench/trees.py [--quick] [--trees 500] [--depth 8] [--rows 10000] [--reps 5] [--device cpu|cuda]

``--quick`` is 50 trees on 1,000 rows (seconds, for a smoke run). ``--device cuda`` runs ours on
PJRT's CUDA client and onnxruntime with its CUDA execution provider.
"""

from __future__ import annotations

import argparse
import platform
import statistics
import sys
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _timing import ort_session, sample_seconds, timed  # noqa: E402

import onnx_stablehlo  # noqa: E402


def build_forest(trees: int, depth: int, features: int, seed: int):
    """Trains and converts the forest; returns the ``onnx.ModelProto``."""
    from sklearn.datasets import make_regression
    from sklearn.ensemble import ExtraTreesRegressor
    from skl2onnx import to_onnx

    x, y = make_regression(n_samples=4000, n_features=features, noise=1.0, random_state=seed)
    x = x.astype(np.float32)
    forest = ExtraTreesRegressor(n_estimators=trees, max_depth=depth, random_state=seed, n_jobs=1).fit(x, y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return to_onnx(forest, x[:1], target_opset={"": 17, "ai.onnx.ml": 3})


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="50 trees, 1,000 rows")
    parser.add_argument("--trees", type=int, default=500)
    parser.add_argument("--depth", type=int, default=8)
    parser.add_argument("--rows", type=int, default=10_000)
    parser.add_argument("--features", type=int, default=20)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--threads", type=int, default=2, help="onnxruntime intra-op threads")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    args = parser.parse_args(argv)
    if args.quick:
        args.trees, args.rows, args.reps = 50, 1000, 3
    model, build_s = timed(lambda: build_forest(args.trees, args.depth, args.features, args.seed))
    nodes = sum(len(a.ints) for n in model.graph.node for a in n.attribute if a.name == "nodes_nodeids")
    x = np.random.default_rng(args.seed).normal(size=(args.rows, args.features)).astype(np.float32)

    session = ort_session(model, args.device, args.threads)
    expected = session.run(None, {"X": x})[0]
    ort_s = statistics.median(sample_seconds(lambda: session.run(None, {"X": x}), args.reps, warmup=1))

    compiled, compile_s = timed(lambda: onnx_stablehlo.compile(model, args.device, input_shapes={"X": list(x.shape)}))
    actual = compiled.run({"X": x})[0]
    ours_s = statistics.median(sample_seconds(lambda: compiled.run({"X": x}), args.reps, warmup=1))
    diff = float(np.max(np.abs(actual - expected)))
    rel = diff / float(np.max(np.abs(expected)))

    print(f"{args.trees} trees, depth {args.depth}, {nodes} nodes, {args.rows} rows x {args.features} features; "
          f"{platform.processor() or platform.machine()}, device {args.device}, build {build_s:.1f} s")
    print()
    print("| runtime | compile (s) | median per call (ms) | max abs diff | rel |")
    print("|---|---|---|---|---|")
    print(f"| onnxruntime ({args.device}, {args.threads} threads) | - | {ort_s * 1e3:.1f} | - | - |")
    print(f"| onnx_stablehlo (PJRT {args.device}) | {compile_s:.2f} | {ours_s * 1e3:.1f} | {diff:.3g} | {rel:.3g} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
