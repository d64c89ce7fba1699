"""Measures what the default pass pipeline does to real models: op counts, pass time, run time.

Usage::

    python bench/passes.py [--pipeline PIPELINE] [--models NAME,...] [--reps 30] [--device cpu]

For each model it prints, as markdown:

* op counts per op kind before and after the pipeline (kinds whose count changed, and totals);
* the conversion time of every pass (wall time, verification excluded);
* the median run time of the module compiled before and after (same process, same inputs, the
  two executables timed in alternation so machine noise hits both alike), and the median of
  the per-round after/before ratios;
* the largest abs difference between the two outputs, as a sanity check.

Models: ``example`` (the bundled tiny transformer), ``minilm-legacy`` and ``minilm-dynamo``
(all-MiniLM-L6-v2 built by ``tools/build_minilm.py``), and any name of ``tools/zoo.py``
(default: ``magika-standard-v3.3``, ``mobilenetv2-dynamo-opset18``, ``bert-dynamo-opset18``).
Models that cannot be built offline here are reported as skipped. Weights are ``@main``
arguments (the default), so the passes see what ``onnx-stablehlo compile`` emits.
This is a script, not a test; numbers depend on the machine (see the header it prints).
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "tools"))

from _timing import format_ms, markdown_table  # noqa: E402

DEFAULT_MODELS = (
    "example",
    "minilm-legacy",
    "minilm-dynamo",
    "magika-standard-v3.3",
    "mobilenetv2-dynamo-opset18",
    "bert-dynamo-opset18",
)

Feeds = dict[str, np.ndarray]


def _example() -> tuple[str, Feeds]:
    import onnx_stablehlo
    from onnx_stablehlo.cli import generated_inputs

    path = onnx_stablehlo.example_model_path()
    return path, generated_inputs(onnx_stablehlo.load(path), None, seed=0)


def _minilm(flavour: str) -> Callable[[], tuple[str, Feeds]]:
    def build() -> tuple[str, Feeds]:
        from build_minilm import EXAMPLE_SENTENCES, build_minilm, tokenize

        path = build_minilm(flavour)
        return str(path), tokenize(list(EXAMPLE_SENTENCES) * 4, max_length=128)

    return build


def _zoo(name: str) -> Callable[[], tuple[str, Feeds]]:
    def build() -> tuple[str, Feeds]:
        import zoo

        model = zoo.get(name)
        path = model.build(zoo.cache_dir())
        return str(path), model.inputs(np.random.default_rng(model.seed))

    return build


def _source(name: str) -> Callable[[], tuple[str, Feeds]]:
    if name == "example":
        return _example
    if name.startswith("minilm-") and name.split("-", 1)[1] in ("legacy", "dynamo"):
        return _minilm(name.split("-", 1)[1])
    return _zoo(name)


def _executable(text: str, device):
    from onnx_stablehlo.runtime import pjrt

    return pjrt.compile_module(text, device)


def _interleaved_samples(executables: list, arguments: list, reps: int) -> list[list[float]]:
    """Seconds per run of each executable, timed in alternation (one sample each per round, the
    order reversed every round)."""
    import time

    from onnx_stablehlo.runtime import pjrt

    samples: list[list[float]] = [[] for _ in executables]
    for executable in executables:  # warm-up
        for _ in range(3):
            pjrt.to_host(pjrt.execute(executable, arguments))
    order = list(range(len(executables)))
    for _ in range(reps):
        order.reverse()  # alternate which one goes first: no positional bias
        for index in order:
            executable = executables[index]
            start = time.perf_counter()
            pjrt.to_host(pjrt.execute(executable, arguments))
            samples[index].append(time.perf_counter() - start)
    return samples


def bench_model(name: str, pipeline: str, reps: int, device_name: str) -> str:
    import onnx_stablehlo
    from onnx_stablehlo.passes import run_pipeline
    from onnx_stablehlo.runtime import pjrt

    try:
        path, feeds = _source(name)()
    except Exception as exc:  # a model that cannot be built here is skipped, with the reason
        return f"### {name}\n\nskipped: {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}\n"
    shapes = {k: v.shape for k, v in feeds.items()}
    lowered = onnx_stablehlo.lower(path, shapes)
    before_text = lowered.text
    result = run_pipeline(lowered.module, pipeline)
    after_text = lowered.text

    device = pjrt.get_device(device_name)
    arguments = [pjrt.to_device(feeds[n], device) for n in lowered.input_names]
    arguments += [
        pjrt.to_device(np.ascontiguousarray(lowered.parameters[n]()), device) for n in lowered.parameter_names
    ]
    executables = [_executable(before_text, device), _executable(after_text, device)]
    outputs = [pjrt.to_host(pjrt.execute(e, arguments)) for e in executables]
    max_diff = max(
        (float(np.max(np.abs(a.astype(np.float64) - b.astype(np.float64)))) if a.size else 0.0)
        for a, b in zip(*outputs)
    )
    before_samples, after_samples = _interleaved_samples(executables, arguments, reps)
    before_s, after_s = float(np.median(before_samples)), float(np.median(after_samples))
    # Per-round ratios: a burst of load from elsewhere hits both runs of a round alike.
    ratio = float(np.median(np.asarray(after_samples) / np.asarray(before_samples)))

    lines = [f"### {name}", ""]
    shape_text = ", ".join(f"{k} {'x'.join(map(str, v))}" for k, v in shapes.items())
    lines.append(f"Inputs: {shape_text}. Max abs difference of outputs after vs before: {max_diff:.3g}.")
    lines.append("")
    before, after = result.ops_before, result.ops_after
    changed = sorted(k for k in set(before) | set(after) if before[k] != after[k])
    rows = [[f"`{k}`", str(before[k]), str(after[k]), f"{after[k] - before[k]:+d}"] for k in changed]
    total_before, total_after = sum(before.values()), sum(after.values())
    rows.append(["**all ops**", str(total_before), str(total_after), f"{total_after - total_before:+d}"])
    lines.append(markdown_table(["Op kind", "Before", "After", "Change"], rows))
    lines.append("")
    pass_rows = [[f"`{r.label}`", format_ms(r.seconds), _stats(r.result.statistics)] for r in result.records]
    pass_rows.append(["**total (verification included)**", format_ms(result.seconds), ""])
    lines.append(markdown_table(["Pass", "Time (ms)", "Rewrites"], pass_rows))
    lines.append("")
    lines.append(
        markdown_table(
            ["Run time", "Before (ms)", "After (ms)", "After / before (median of per-round ratios)"],
            [[f"median of {reps}", format_ms(before_s, 3), format_ms(after_s, 3), f"{ratio:.3f}"]],
        )
    )
    lines.append("")
    return "\n".join(lines)


def _stats(statistics) -> str:
    if not statistics:
        return ""
    return ", ".join(f"{k} {v}" for k, v in sorted(statistics.items(), key=lambda kv: -kv[1]))


def main(argv: list[str] | None = None) -> int:
    from onnx_stablehlo.passes import DEFAULT_PIPELINE

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pipeline", default=DEFAULT_PIPELINE, help="pipeline to measure (default: the default one)")
    parser.add_argument("--models", default=",".join(DEFAULT_MODELS), help="comma-separated model names")
    parser.add_argument("--reps", type=int, default=30, help="timed runs per executable")
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda"], help="PJRT device (default cpu)")
    args = parser.parse_args(argv)

    import jax
    import onnx_stablehlo

    print(
        f"onnx-stablehlo {onnx_stablehlo.__version__}, jax {jax.__version__}, "
        f"{platform.machine()} with {os.cpu_count()} CPUs, device {args.device}"
    )
    print(f"\nPipeline: `{args.pipeline}`\n")
    for name in [n.strip() for n in args.models.split(",") if n.strip()]:
        print(bench_model(name, args.pipeline, args.reps, args.device), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
