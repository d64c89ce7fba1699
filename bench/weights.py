"""Weights as ``@main`` arguments, with and without weight hoisting, against inlined weights and ORT.

Usage::

    python bench/weights.py [--models resnet50-legacy-opset17 mobilenetv2-legacy-opset17 ...] [--reps 10]

With ``weights="args"`` (the default) the weights are ``@main`` arguments, so XLA cannot fold
work that depends on weights alone: on CPU it re-lays-out every convolution kernel (OIHW to
HWIO) on every call, and an int8 weight is dequantized on every call. ``CompiledModel`` moves
such work into ``@hoisted_weights`` (passes ``conv-kernel-layout`` and ``hoist-weights``), run
once. For each zoo model this prints the median latency of: onnxruntime (2 threads), weights
inlined as constants (XLA folds everything), weights as arguments with hoisting (the default),
and weights as arguments without it (``hoist_weights=False``), with the ratios to
onnxruntime. Models come from ``tools/zoo.py`` (built offline on first use).
"""

from __future__ import annotations

import argparse
import platform
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(ROOT / "tools"))  # first: tools/zoo.py, not bench/zoo.py

import _timing  # noqa: E402
import zoo  # noqa: E402

DEFAULT_MODELS = ("resnet50-legacy-opset17", "mobilenetv2-legacy-opset17", "minilm-int8-per-channel")


def bench_model(name: str, reps: int, device: str = "cpu") -> list[str]:
    import onnx_stablehlo

    model = zoo.MODELS[name]
    path = model.build(zoo.cache_dir())
    feeds = model.inputs(np.random.default_rng(0))
    session = _timing.ort_session(path, device)
    times = {"onnxruntime": _timing.median_seconds(lambda: session.run(None, feeds), reps)}
    variants = {
        "inline": {"weights": "inline"},
        "args, hoisted": {},
        "args, not hoisted": {"hoist_weights": False},
    }
    for label, options_ in variants.items():
        compiled = onnx_stablehlo.compile(str(path), device, **options_)
        times[label] = _timing.median_seconds(lambda: compiled.run(feeds), reps)
    ort_s = times["onnxruntime"]
    row = [name, _timing.format_ms(ort_s)]
    for label in variants:
        row += [_timing.format_ms(times[label]), f"{times[label] / ort_s:.2f}"]
    return row


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", nargs="+", default=list(DEFAULT_MODELS), choices=sorted(zoo.MODELS))
    parser.add_argument("--reps", type=int, default=10)
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda"], help="ours on PJRT cuda, ORT with its CUDA EP")
    args = parser.parse_args(argv)
    print(f"weights benchmark on {platform.processor() or platform.machine()}, median of {args.reps} runs")
    headers = [
        "model", "ORT (ms)", "inline (ms)", "inline/ORT", "args+hoist (ms)", "args+hoist/ORT",
        "args, not hoisted (ms)", "not hoisted/ORT",
    ]
    rows = [bench_model(name, args.reps, args.device) for name in args.models]
    print(_timing.markdown_table(headers, rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
