"""Benchmarks all-MiniLM-L6-v2 compiled by onnx_stablehlo against onnxruntime on CPU.

Usage::

    python bench/minilm.py [--flavour legacy|dynamo] [--ort-threads 2] [--seed 0]
                           [--model PATH] [--shapes 1x16:20,64x12:5 ...]

For each batch x sequence shape (1x16, 8x128, 32x128) it prints, as one markdown table:

* the median latency of our compiled model and of onnxruntime (``intra_op_num_threads``
  = ``--ort-threads``, sequential executor), after warm-up, and their ratio (ours / ORT);
* the ONNX -> StableHLO conversion time and the PJRT compile time. When the compiled model has
  a ``timings`` dict these come from it; otherwise conversion is the wall time of
  ``onnx_stablehlo.compile(...)`` and PJRT compile is the first ``run`` minus the median run
  (a note under the table says which);
* the wall time of the whole ``compile(...)`` call (model loading included);
* the max abs difference of the two outputs, as a sanity check.

Inputs are seeded random token ids within the vocabulary, full attention masks. Each shape gets
its own ``compile`` (with ``input_shapes``), so conversion and compile times are per shape.
``--model`` times another file with MiniLM's inputs and output instead of the fp32 export (the
int8 files of ``tools/build_minilm_variants.py``: ``~/.cache/onnx-stablehlo/all-MiniLM-L6-v2.int8-*.onnx``);
``--shapes`` replaces the rows (``BATCHxSEQ:REPS``, comma-separated).
This is a script, not a test; numbers depend on the machine (see the header it prints).
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT / "tools"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import _timing  # noqa: E402
import build_minilm  # noqa: E402

import onnx_stablehlo  # noqa: E402

SHAPES: tuple[tuple[int, int, int], ...] = ((1, 16, 20), (8, 128, 10), (32, 128, 5))
"""(batch, sequence, timed repetitions) per row."""
WARMUP = 2

# Keys of ``CompiledModel.timings`` (seconds, latest shape specialization), most specific first.
CONVERSION_KEYS = ("lower_seconds", "lower", "convert", "import")
PJRT_COMPILE_KEYS = ("compile_seconds", "compile")


def make_feeds(rng: np.random.Generator, batch: int, sequence: int) -> dict[str, np.ndarray]:
    """Random ``[CLS] ... [SEP]`` token ids within the vocabulary, full masks, int64."""
    ids = rng.integers(1000, build_minilm.VOCAB_SIZE, size=(batch, sequence), dtype=np.int64)
    ids[:, 0] = 101
    ids[:, -1] = 102
    return {
        "input_ids": ids,
        "attention_mask": np.ones_like(ids),
        "token_type_ids": np.zeros_like(ids),
    }


def _phase_seconds(timings: Mapping[str, float] | None, keys: Sequence[str]) -> float | None:
    """First entry of ``timings`` whose key matches one of ``keys`` (exact, then substring)."""
    if not timings:
        return None
    for key in keys:
        if key in timings:
            return float(timings[key])
    for key in keys:
        for name, value in timings.items():
            if key in name:
                return float(value)
    return None


def bench_shape(path: Path, batch: int, sequence: int, reps: int, ort_threads: int, seed: int, device: str = "cpu") -> dict:
    """Measures one shape; returns the row's numbers in seconds (and the parity diff)."""
    feeds = make_feeds(np.random.default_rng(seed), batch, sequence)
    shapes = {name: (batch, sequence) for name in build_minilm.INPUT_NAMES}

    compiled, compile_call_s = _timing.timed(
        lambda: onnx_stablehlo.compile(str(path), device=device, input_shapes=shapes)
    )
    outputs, first_run_s = _timing.timed(lambda: compiled.run(feeds))
    ours = _timing.sample_seconds(lambda: compiled.run(feeds), reps, WARMUP)
    ours_median = statistics.median(ours)

    timings = getattr(compiled, "timings", None)
    timings = timings if isinstance(timings, Mapping) else None
    conversion_s = _phase_seconds(timings, CONVERSION_KEYS)
    pjrt_s = _phase_seconds(timings, PJRT_COMPILE_KEYS)
    from_timings = conversion_s is not None and pjrt_s is not None
    if conversion_s is None:
        conversion_s = compile_call_s
    if pjrt_s is None:
        pjrt_s = max(first_run_s - ours_median, 0.0)

    session = _timing.ort_session(path, device, ort_threads, sequential=True)
    expected = session.run([build_minilm.OUTPUT_NAME], feeds)[0]
    ort_median = _timing.median_seconds(lambda: session.run([build_minilm.OUTPUT_NAME], feeds), reps, WARMUP)

    return {
        "ours_s": ours_median,
        "ort_s": ort_median,
        "compile_call_s": compile_call_s,
        "conversion_s": conversion_s,
        "pjrt_compile_s": pjrt_s,
        "from_timings": from_timings,
        "timings": dict(timings) if timings else {},
        "max_abs_diff": float(np.abs(np.asarray(outputs[0]) - expected).max()),
    }


def main(argv: Sequence[str] | None = None) -> int:
    """CLI entry point; prints the environment and a markdown table."""
    parser = argparse.ArgumentParser(description="MiniLM latency: onnx_stablehlo vs onnxruntime (CPU).")
    parser.add_argument("--flavour", choices=sorted(build_minilm.FLAVOURS), default="legacy")
    parser.add_argument("--ort-threads", type=int, default=2, help="onnxruntime intra_op_num_threads")
    parser.add_argument("--seed", type=int, default=0, help="seed of the random token ids")
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda"], help="ours on PJRT cuda, ORT with its CUDA EP")
    parser.add_argument("--quick", action="store_true", help="1x16 only")
    parser.add_argument("--model", type=Path, help="a MiniLM-shaped ONNX file to time instead (e.g. an int8 one)")
    parser.add_argument("--shapes", help="rows as BATCHxSEQ:REPS,... (default 1x16:20,8x128:10,32x128:5)")
    args = parser.parse_args(argv)

    path = args.model if args.model else build_minilm.build_minilm(args.flavour)
    shapes = SHAPES[:1] if args.quick else SHAPES
    if args.shapes:
        shapes = tuple(
            (int(size.split("x")[0]), int(size.split("x")[1]), int(reps))
            for size, _, reps in (item.partition(":") for item in args.shapes.split(","))
        )
    import jax
    import onnxruntime as ort

    print(
        f"MiniLM-L6-v2 ({args.model.name if args.model else build_minilm.FLAVOURS[args.flavour].test_id}) on {platform.processor() or platform.machine()}, "
        f"{os.cpu_count()} CPUs; jax {jax.__version__}, onnxruntime {ort.__version__} "
        f"(intra_op_num_threads={args.ort_threads}, sequential); warm-up {WARMUP}, median of N reps\n"
    )
    headers = [
        "batch×seq",
        "N",
        "ours (ms)",
        "ORT (ms)",
        "ours/ORT",
        "ONNX→StableHLO (s)",
        "PJRT compile (s)",
        "compile() total (s)",
        "max abs diff",
    ]
    rows, notes = [], []
    for batch, sequence, reps in shapes:
        result = bench_shape(path, batch, sequence, reps, args.ort_threads, args.seed, args.device)
        rows.append(
            [
                f"{batch}×{sequence}",
                str(reps),
                _timing.format_ms(result["ours_s"]),
                _timing.format_ms(result["ort_s"]),
                f"{result['ours_s'] / result['ort_s']:.2f}",
                _timing.format_s(result["conversion_s"]),
                _timing.format_s(result["pjrt_compile_s"]),
                _timing.format_s(result["compile_call_s"]),
                f"{result['max_abs_diff']:.1e}",
            ]
        )
        if result["timings"]:
            phases = ", ".join(f"{k}={v:.3f}" for k, v in result["timings"].items())
            notes.append(f"{batch}×{sequence} cm.timings (s): {phases}")
        if not result["from_timings"]:
            notes.append(
                f"{batch}×{sequence}: phases measured from outside (compile() call; first run - median run)"
            )
    print(_timing.markdown_table(headers, rows))
    if notes:
        print()
        print("\n".join(f"- {note}" for note in notes))
    return 0


if __name__ == "__main__":
    sys.exit(main())
