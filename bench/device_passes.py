"""A/B of one CPU device pass on zoo models: with it, without it, and onnxruntime, in one run.

Usage::

    python bench/device_passes.py [--without sink-transposes] [--only NAME ...] [--rounds 7]

CPU only, so it takes no ``--device``: the passes it switches off run only when the target is
XLA CPU (a CUDA compile never runs them, so with and without would be the same program).

``CompiledModel`` runs four device passes before XLA CPU compiles (``unroll-depthwise-conv``,
``split-grouped-conv``, ``sink-transposes``, ``conv-kernel-layout``; see
``runtime/executables.py``). For each zoo model (``tools/zoo.py``; those with a file in the
cache, as ``bench/zoo.py --only`` finds them) this script compiles the model twice in one
process, once as usual and once with the pass named by ``--without`` skipped (its ``run`` made
a no-op for that compile), checks that both give the same outputs, and times interleaved
rounds of both (swapping their order every round) and of an onnxruntime session
(``intra_op_num_threads=2``). It prints the
median milliseconds per call, with/without, and ours/ORT for both. The machines here are
shared and noisy, so only the interleaved ratio is worth reading; repeat a row that looks odd.
Default models: the CNNs of the zoo with depthwise or 2-D convolutions.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import statistics
import sys
from pathlib import Path

import numpy as np

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))

import _timing  # noqa: E402

PASSES = {
    "unroll-depthwise-conv": ("unroll_depthwise_conv", "UnrollDepthwiseConvPass"),
    "split-grouped-conv": ("split_grouped_conv", "SplitGroupedConvPass"),
    "sink-transposes": ("sink_transposes", "SinkTransposesPass"),
    "conv-kernel-layout": ("conv_kernel_layout", "ConvKernelLayoutPass"),
}

DEFAULT_MODELS = (
    "efficientnet-b0-legacy-opset17", "mobilenetv3-small-legacy-opset17", "mobilenetv3-large-legacy-opset17",
    "mobilenetv2-legacy-opset17", "resnet50-legacy-opset17", "deeplabv3-legacy-opset17", "light-inception-v1",
    "light-squeezenet", "light-shufflenet", "light-densenet121", "rapidocr-det-ppocrv6-small",
    "rapidocr-onnxruntime-rec-ppocrv4", "nudenet-320n",
)


def _bench_zoo():
    """bench/zoo.py (its model lookup and onnxruntime session), loaded by path."""
    spec = importlib.util.spec_from_file_location("bench_zoo", REPO_ROOT / "bench" / "zoo.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def _compile_without(path: Path, shapes: dict, pass_class: type | None):
    import onnx_stablehlo

    if pass_class is None:
        return onnx_stablehlo.compile(str(path), "cpu", input_shapes=shapes)
    run = pass_class.run
    pass_class.run = lambda self, module: None
    try:
        return onnx_stablehlo.compile(str(path), "cpu", input_shapes=shapes)
    finally:
        pass_class.run = run


def measure(bench_zoo, model, path: Path, pass_class: type, rounds: int) -> list[str]:
    feeds = model.inputs(np.random.default_rng(model.seed))
    shapes = {k: np.shape(v) for k, v in feeds.items()}
    with_pass = _compile_without(path, shapes, None)
    without = _compile_without(path, shapes, pass_class)
    ours_feeds = {k: v for k, v in feeds.items() if k in with_pass.input_names}
    session = bench_zoo.ort_session(path, "cpu")
    names = {i.name for i in session.get_inputs()}
    ort_feeds = {k: v for k, v in feeds.items() if k in names}
    a = [np.asarray(x) for x in with_pass.run(ours_feeds)]
    b = [np.asarray(x) for x in without.run(ours_feeds)]
    diff = max(
        (float(np.max(np.abs(x.astype(np.float64) - y))) if x.dtype.kind in "fiu" and x.size else 0.0)
        for x, y in zip(a, b, strict=True)
    )
    once = _timing.per_call_ms(lambda: with_pass.run(ours_feeds), 1)
    calls = max(1, min(200, int(150 / max(once, 1e-3))))
    samples: dict[str, list[float]] = {"with": [], "without": [], "ORT": []}
    runs = {"with": with_pass, "without": without}
    for round_index in range(rounds):
        # The two forms swap places every round, so each follows onnxruntime's round (whose
        # spinning threads can slow what comes next) equally often.
        for key in ("with", "without") if round_index % 2 == 0 else ("without", "with"):
            samples[key].append(_timing.per_call_ms(lambda: runs[key].run(ours_feeds), calls))
        samples["ORT"].append(_timing.per_call_ms(lambda: session.run(None, ort_feeds), calls))
    w, wo, ort = (statistics.median(samples[k]) for k in ("with", "without", "ORT"))
    ratios = [x / y for x, y in zip(samples["with"], samples["without"])]
    return [
        model.name, f"{w:.3f}", f"{wo:.3f}", f"{ort:.3f}", f"{w / wo:.3f}",
        f"{min(ratios):.2f}-{max(ratios):.2f}", f"{w / ort:.2f}", f"{wo / ort:.2f}", f"{diff:.1e}",
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--without", default="sink-transposes", choices=sorted(PASSES))
    parser.add_argument("--only", nargs="*", metavar="NAME", help="these zoo models (default: the CNNs)")
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args(argv)
    os.environ.setdefault("ONNX_STABLEHLO_ARTIFACT_CACHE", "0")  # both forms lowered here, not read back
    os.environ.setdefault("ONNX_STABLEHLO_EXECUTABLE_CACHE", "0")
    bench_zoo = _bench_zoo()
    module_name, class_name = PASSES[args.without]
    pass_class = getattr(importlib.import_module(f"onnx_stablehlo.passes.{module_name}"), class_name)
    directory = bench_zoo.zoo.cache_dir()
    rows, skipped = [], []
    for name in args.only or DEFAULT_MODELS:
        model = bench_zoo.zoo.MODELS.get(name)
        if model is None:
            skipped.append(f"{name} (not a zoo model)")
            continue
        path = bench_zoo.cached_file(model, directory)
        if path is None:
            skipped.append(f"{name} (not built: python tools/zoo.py --build {name})")
            continue
        rows.append(measure(bench_zoo, model, path, pass_class, args.rounds))
        print(f"# {name}: done", file=sys.stderr, flush=True)
    print(f"# {args.without}: ms per call, median of {args.rounds} interleaved rounds, device cpu, "
          f"{os.cpu_count()} CPUs")
    print(_timing.markdown_table(
        ["model", "with", "without", "ORT", "with/without", "round ratios", "with/ORT", "without/ORT",
         "max abs diff"], rows,
    ))
    if skipped:
        print("\nskipped: " + "; ".join(skipped))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
