"""Many request shapes on MiniLM: compiles and total time, with and without bucketing.

Usage::

    python bench/shapes.py [--requests 200] [--max-length 128] [--flavour legacy] [--seed 0]

Sends ``--requests`` batch-1 requests with seeded random lengths in [1, max-length] to

* onnx_stablehlo with one symbolic artifact refined per distinct length (``compile(path)``),
* the same with ``Bucketing({"sequence": "pow2"})`` (padded tokens get attention mask 0, so the
  unpadded positions' outputs are unchanged; outputs are sliced back),
* onnxruntime (``intra_op_num_threads=2``),

and prints one markdown table: compiles, total wall time in seconds (compiles included), the
time per request, and the max abs difference to onnxruntime. A script, not a test.
"""

from __future__ import annotations

import argparse
import platform
import sys
import time
from pathlib import Path

import numpy as np

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT / "tools"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import _timing  # noqa: E402
import build_minilm  # noqa: E402

import onnx_stablehlo  # noqa: E402


def _requests(count: int, max_length: int, seed: int) -> list[dict[str, np.ndarray]]:
    rng = np.random.default_rng(seed)
    requests = []
    for length in rng.integers(1, max_length + 1, count):
        requests.append(
            {
                "input_ids": rng.integers(1000, 30000, (1, int(length))).astype(np.int64),
                "attention_mask": np.ones((1, int(length)), np.int64),
                "token_type_ids": np.zeros((1, int(length)), np.int64),
            }
        )
    return requests


def _run_ours(compiled, requests) -> tuple[float, list[np.ndarray]]:
    start = time.perf_counter()
    outputs = [compiled.run(r)[0] for r in requests]
    return time.perf_counter() - start, outputs


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--max-length", type=int, default=128)
    parser.add_argument("--flavour", default="legacy", choices=("legacy", "dynamo"))
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda"], help="ours on PJRT cuda, ORT with its CUDA EP")
    args = parser.parse_args(argv)
    path = build_minilm.build_minilm(args.flavour)
    requests = _requests(args.requests, args.max_length, args.seed)
    lengths = {r["input_ids"].shape[1] for r in requests}

    device = args.device
    session = _timing.ort_session(path, device)
    start = time.perf_counter()
    expected = [session.run(None, r)[0] for r in requests]
    ort_seconds = time.perf_counter() - start

    rows = []
    for label, kwargs in (
        ("onnx-stablehlo, artifact refined per length", {}),
        ("onnx-stablehlo, pow2 buckets", {"bucketing": onnx_stablehlo.Bucketing({"sequence": "pow2"})}),
    ):
        compiled = onnx_stablehlo.compile(path, device, **kwargs)  # lowers the artifact once
        seconds, outputs = _run_ours(compiled, requests)  # every compile happens in here
        error = max(float(np.abs(o - e).max()) for o, e in zip(outputs, expected))
        rows.append((label, compiled.compile_count, seconds, error))
    rows.append(("onnxruntime (2 threads)", 0, ort_seconds, 0.0))

    print(f"# {args.requests} requests, batch 1, lengths 1-{args.max_length} ({len(lengths)} distinct), "
          f"MiniLM {args.flavour}; {platform.processor() or platform.machine()}")
    print()
    print("| runtime | compiles | total (s) | per request (ms) | max abs diff vs ORT |")
    print("|---|---|---|---|---|")
    for label, compiles, seconds, error in rows:
        print(f"| {label} | {compiles} | {seconds:.1f} | {1000 * seconds / len(requests):.1f} | {error:.1e} |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
