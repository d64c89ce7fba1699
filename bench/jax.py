"""Per-call latency of an ONNX model through the JAX bridge (``jax.jit(to_jax(model))``) against
``CompiledModel.run``, on the bundled tiny model and all-MiniLM-L6-v2 1x16 and 8x128.

Usage::

    python bench/jax.py [--quick] [--grad] [--seed 0] [--device cpu|cuda]      (or: python -m bench.jax ...)

Every script in bench/ runs with bench/ first on ``sys.path``, so ``import jax`` there finds
this file. When it is imported under the name ``jax`` it loads the real jax package in its own
place (``sys.modules["jax"]``) and does nothing else, so this script and the others in
bench/ get the real jax.

Both sides take the same numpy feeds (int64 token ids) and return numpy outputs (the bridge's
outputs are copied to the host with ``np.asarray``, as ``run`` does); the weights are on the
device beforehand on both sides. The two are timed in alternation (A, B, A, B, ...) so that
load from other processes hits both alike; the table gives the medians, their ratio
(bridge / run, below 1 is faster) and whether the outputs are bit-identical. ``--quick`` runs
fewer repetitions and skips 8x128. ``--grad`` also times ``jax.jit(jax.grad(...))`` with respect
to MiniLM's weights at two (three without ``--quick``) shapes in turn: the first call at each
shape (trace and XLA compile; the one symbolic backward module is built at the first) and the
median per call. This is a script, not a test.
"""

from __future__ import annotations

import sys

if __name__ == "jax":  # imported as the jax package (bench/ first on sys.path): load the real one
    import importlib.machinery
    import importlib.util
    import os

    _here = os.path.dirname(os.path.abspath(__file__))
    _spec = importlib.machinery.PathFinder.find_spec(
        "jax", [p for p in sys.path if os.path.abspath(p or os.curdir) != _here]
    )
    if _spec is None or _spec.loader is None:
        raise ImportError("the jax package is not installed (bench/jax.py is a benchmark, not jax)")
    _module = importlib.util.module_from_spec(_spec)
    sys.modules["jax"] = _module
    _spec.loader.exec_module(_module)
else:
    import argparse
    import os
    import platform
    import statistics
    import time
    from collections.abc import Callable, Sequence
    from pathlib import Path
    from typing import Any

    import numpy as np

    REPO_ROOT = Path(__file__).resolve().parents[1]
    sys.path.insert(0, str(REPO_ROOT / "tools"))
    sys.path.insert(0, str(Path(__file__).resolve().parent))

    import _timing  # noqa: E402

    import onnx_stablehlo  # noqa: E402


def alternate(a: Callable[[], Any], b: Callable[[], Any], reps: int, warmup: int = 3) -> tuple[float, float]:
    """Medians (seconds) of ``a`` and ``b`` timed in alternation after ``warmup`` calls of each."""
    for _ in range(warmup):
        a()
        b()
    times_a, times_b = [], []
    for _ in range(reps):
        start = time.perf_counter()
        a()
        times_a.append(time.perf_counter() - start)
        start = time.perf_counter()
        b()
        times_b.append(time.perf_counter() - start)
    return statistics.median(times_a), statistics.median(times_b)


def bench(name: str, path: str, feeds: dict[str, np.ndarray], reps: int, device: str = "cpu") -> list[str]:
    import jax

    from onnx_stablehlo.jax import to_jax

    compiled = onnx_stablehlo.compile(path, device)
    fn = to_jax(path)
    params = jax.device_put(fn.params, jax.devices(device)[0])  # jit runs where its committed inputs are
    jitted = jax.jit(fn)

    def bridge() -> list[np.ndarray]:
        return [np.asarray(o) for o in jitted(params, **feeds)]

    def run() -> list[np.ndarray]:
        return compiled.run(feeds)

    identical = all(np.array_equal(x, y) for x, y in zip(bridge(), run()))
    ours, theirs = alternate(bridge, run, reps)
    return [name, _timing.format_ms(ours, 3), _timing.format_ms(theirs, 3), f"{ours / theirs:.2f}", "yes" if identical else "no"]


def bench_grad(
    path: str, shapes: Sequence[tuple[int, int]], rng: np.random.Generator, reps: int, device: str = "cpu"
) -> list[list[str]]:
    """``jax.jit(jax.grad(sum(output ** 2)))`` w.r.t. the weights at each shape in turn: the
    first call (trace, backward module, XLA compile) and the median per call after it. One
    backward module serves every shape, so a new shape costs a trace and a compile only."""
    import jax
    import jax.numpy as jnp

    from onnx_stablehlo.jax import to_jax

    fn = to_jax(path)
    params = jax.device_put(fn.params, jax.devices(device)[0])

    def loss(p: Any, feeds: dict[str, Any]) -> Any:
        return jnp.sum(fn(p, **feeds)[0] ** 2)

    grad = jax.jit(jax.grad(loss))
    rows = []
    for batch, sequence in shapes:
        feeds = {k: v.astype(np.int32) for k, v in minilm_feeds(rng, batch, sequence).items()}
        start = time.perf_counter()
        jax.block_until_ready(grad(params, feeds))
        first = time.perf_counter() - start
        times = []
        for _ in range(reps):
            start = time.perf_counter()
            jax.block_until_ready(grad(params, feeds))
            times.append(time.perf_counter() - start)
        rows.append([f"MiniLM {batch}x{sequence}", f"{first:.1f}", _timing.format_ms(statistics.median(times), 1)])
    return rows


def minilm_feeds(rng: np.random.Generator, batch: int, sequence: int) -> dict[str, np.ndarray]:
    ids = rng.integers(1000, 30522, size=(batch, sequence), dtype=np.int64)
    return {"input_ids": ids, "attention_mask": np.ones_like(ids), "token_type_ids": np.zeros_like(ids)}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="JAX bridge vs CompiledModel.run: per-call latency.")
    parser.add_argument("--quick", action="store_true", help="fewer repetitions; skip MiniLM 8x128")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda"], help="both sides on this PJRT platform")
    parser.add_argument(
        "--grad", action="store_true", help="also time jax.grad w.r.t. the weights of MiniLM at two shapes in turn"
    )
    args = parser.parse_args(argv)
    rng = np.random.default_rng(args.seed)
    import jax

    print(f"# jax {jax.__version__}, {platform.machine()}, {os.cpu_count()} CPUs, device {args.device}")
    rows = []
    tiny = onnx_stablehlo.example_model_path()
    rows.append(bench("tiny transformer 2x16", tiny, {"input_ids": rng.integers(0, 256, (2, 16))}, 40 if args.quick else 300, args.device))
    import build_minilm

    path = str(build_minilm.build_minilm("legacy"))
    rows.append(bench("MiniLM 1x16", path, minilm_feeds(rng, 1, 16), 20 if args.quick else 100, args.device))
    if not args.quick:
        rows.append(bench("MiniLM 8x128", path, minilm_feeds(rng, 8, 128), 20, args.device))
    print(_timing.markdown_table(["model", "bridge (ms)", "CompiledModel.run (ms)", "ratio", "bit-identical"], rows))
    if args.grad:
        shapes = [(1, 16), (2, 24)] if args.quick else [(1, 16), (2, 24), (8, 128)]
        grad_rows = bench_grad(path, shapes, rng, 5 if args.quick else 20, args.device)
        print()
        print(_timing.markdown_table(["jax.grad (weights)", "first call (s)", "per call (ms)"], grad_rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
