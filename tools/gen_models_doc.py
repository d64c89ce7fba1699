"""Runs the real-model zoo (``tools/zoo.py``) and writes ``docs/models.md``.

For every zoo model: builds or finds the ``.onnx`` file, counts its nodes and op types
(subgraphs included), runs it with onnxruntime and with onnx_stablehlo on the zoo's seeded
inputs, and records the max error against onnxruntime, the ONNX -> StableHLO conversion time,
the PJRT compile time, and the latency ratio against onnxruntime at the zoo's input shape
(median of repeated single calls, after a warm-up call). A model that fails records why: the
missing ``(domain, op_type, opset)`` of an ``UnsupportedOpError``, or the error.

Each model runs in its own subprocess (a crash or an out-of-memory kill costs one row, not the
run); results are kept as JSON in ``<cache>/zoo-results/`` so that ``--models`` can refresh a
few rows and render the rest from the last run.

Usage::

    python tools/gen_models_doc.py [--models NAME ...] [--skip-slow] [--out docs/models.md]
                                   [--json results.json] [--timeout SECONDS]
"""

from __future__ import annotations

import argparse
import collections
import importlib.metadata
import json
import os
import platform
import statistics
import subprocess
import sys
import time
import traceback
from collections.abc import Sequence
from pathlib import Path

import numpy as np

TOOLS = Path(__file__).resolve().parent
REPO_ROOT = TOOLS.parent
if str(TOOLS) not in sys.path:
    sys.path.insert(0, str(TOOLS))
import zoo  # noqa: E402

DEFAULT_OUT = REPO_ROOT / "docs" / "models.md"
LATENCY_BUDGET_SECONDS = 3.0
"""Time spent timing each runtime per model (at least 3 calls, at most 50)."""


# ------------------------------------------------------------------------------------------
# Worker: one model, in its own process


def _node_stats(path: Path) -> dict:
    import onnx

    model = onnx.load(str(path), load_external_data=False)
    counts: collections.Counter[str] = collections.Counter()

    def walk(graph) -> None:
        for node in graph.node:
            counts[f"{node.domain}::{node.op_type}" if node.domain not in ("", "ai.onnx") else node.op_type] += 1
            for attribute in node.attribute:
                if attribute.type == onnx.AttributeProto.GRAPH:
                    walk(attribute.g)
                for subgraph in attribute.graphs:
                    walk(subgraph)

    walk(model.graph)
    opsets = {(o.domain or "ai.onnx"): o.version for o in model.opset_import}
    return {
        "opset": opsets.get("ai.onnx"),
        "other_opsets": {k: v for k, v in opsets.items() if k != "ai.onnx"},
        "nodes": sum(counts.values()),
        "main_graph_nodes": len(model.graph.node),
        "op_types": dict(sorted(counts.items())),
    }


def _median_seconds(run, feeds) -> float:
    run(feeds)  # warm-up (and, for us, the compile of this shape)
    times: list[float] = []
    start = time.perf_counter()
    while len(times) < 3 or (len(times) < 50 and time.perf_counter() - start < LATENCY_BUDGET_SECONDS):
        t0 = time.perf_counter()
        run(feeds)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def _describe_error(error: BaseException) -> dict:
    from onnx_stablehlo import errors

    info = {"error_type": type(error).__name__, "error": str(error).strip()}
    if isinstance(error, errors.UnsupportedOpError):
        info["missing"] = [
            {"domain": d, "op_type": o, "opset": v, "nodes": len(nodes)} for (d, o, v), nodes in sorted(error.missing.items())
        ]
    return info


def run_one(name: str) -> dict:
    """Runs one zoo model end to end; returns a JSON-able result (never raises for model errors)."""
    model = zoo.get(name)
    result: dict = {
        "name": name,
        "source": model.source,
        "description": model.description,
        "tolerance": model.tolerance.describe(),
        "steps": None,
    }
    try:
        result["source_version"] = importlib.metadata.version(model.source)
    except importlib.metadata.PackageNotFoundError:
        result["source_version"] = None
    missing = model.missing_requirements()
    if missing:
        result.update(status="skipped", reason=f"needs {', '.join(missing)}")
        return result
    start = time.perf_counter()
    try:
        path = model.build(zoo.cache_dir())
    except Exception as error:  # a builder failure is a row of the table, not a crash
        result.update(status="build-failed", build_seconds=time.perf_counter() - start, **_describe_build_error(error))
        return result
    result.update(build_seconds=time.perf_counter() - start, path=str(path), size_mb=path.stat().st_size / 1e6)
    result.update(_node_stats(path))

    feeds = model.inputs(np.random.default_rng(model.seed))
    result["latency_shape"] = {k: list(np.shape(v)) for k, v in feeds.items()}
    ort_run = zoo.onnxruntime_runner(path)
    expected = model.steps(ort_run)
    result["steps"] = len(expected)

    import onnx_stablehlo

    try:
        start = time.perf_counter()
        run, compiled = zoo.onnx_stablehlo_runner(path)
        first = run(feeds)
        result["first_call_seconds"] = time.perf_counter() - start
        timings = dict(getattr(compiled, "timings", {}) or {})
        result["conversion_seconds"] = timings.get("lower_seconds")
        result["compile_seconds"] = timings.get("compile_seconds")
        del first
        actual = model.steps(run)
    except onnx_stablehlo.errors.OnnxStableHLOError as error:
        result.update(status="failed", stage="compile/run", **_describe_error(error))
        return result
    except Exception as error:  # an internal error is reported like any other failure
        result.update(status="failed", stage="compile/run", **_describe_error(error))
        result["traceback"] = traceback.format_exc(limit=-8)
        return result

    comparison = zoo.compare_steps(actual, expected, model.tolerance, compiled.output_names)
    result.update(
        max_abs=comparison.max_abs,
        max_rel=comparison.max_rel,
        min_cosine=comparison.min_cosine,
        comparison=comparison.summary(),
    )
    result["ours_seconds"] = _median_seconds(run, feeds)
    result["ort_seconds"] = _median_seconds(ort_run, feeds)
    result["latency_ratio"] = result["ours_seconds"] / result["ort_seconds"]
    result["status"] = "passed" if comparison.ok else "mismatch"
    return result


def _describe_build_error(error: BaseException) -> dict:
    text = str(error).strip()
    return {"error_type": type(error).__name__, "error": text}


# ------------------------------------------------------------------------------------------
# Driver


def results_dir() -> Path:
    path = zoo.cache_dir() / "zoo-results"
    path.mkdir(parents=True, exist_ok=True)
    return path


def run_in_subprocess(name: str, timeout: float) -> dict:
    """Runs :func:`run_one` for ``name`` in a fresh interpreter; a crash or timeout is a result too."""
    target = results_dir() / f"{name}.json"
    target.unlink(missing_ok=True)
    command = [sys.executable, str(Path(__file__).resolve()), "--worker", name, "--result", str(target)]
    start = time.perf_counter()
    try:
        completed = subprocess.run(command, capture_output=True, text=True, timeout=timeout, check=False)
        output = (completed.stdout + completed.stderr)[-3000:]
        code: int | None = completed.returncode
    except subprocess.TimeoutExpired:
        output, code = f"timed out after {timeout:.0f} s", None
    if target.exists():
        return json.loads(target.read_text())
    model = zoo.get(name)
    result = {
        "name": name,
        "source": model.source,
        "description": model.description,
        "status": "crashed",
        "error_type": "Crash" if code is not None else "Timeout",
        "error": f"worker exited with code {code} after {time.perf_counter() - start:.0f} s: {output.strip()}",
    }
    target.write_text(json.dumps(result, indent=1))
    return result


# ------------------------------------------------------------------------------------------
# Rendering


def _seconds(value: float | None) -> str:
    return "" if value is None else f"{value:.2f}"


def _shape_text(shapes: dict) -> str:
    return ", ".join(f"{k} {'x'.join(map(str, v)) or 'scalar'}" for k, v in shapes.items())


def _short_reason(result: dict) -> str:
    status = result.get("status")
    if status == "passed":
        return "pass"
    if status == "mismatch":
        return "**mismatch**"
    if status == "skipped":
        return f"skipped ({result['reason']})"
    if status == "not run":
        return "not run"
    if result.get("missing"):
        ops = ", ".join(_op_text(m) for m in result["missing"])
        return f"**fail**: no lowering for {ops}"
    first = (result.get("error") or "").splitlines()[0] if result.get("error") else ""
    if len(first) > 160:
        first = first[:157] + "..."
    return f"**{status}**: {result.get('error_type', '')}: {first}".replace("|", "\\|")


def _op_text(missing: dict) -> str:
    domain = f"{missing['domain']}::" if missing["domain"] not in ("", "ai.onnx") else ""
    return f"{domain}{missing['op_type']}-{missing['opset']}"


def render(results: list[dict]) -> str:
    """The markdown of docs/models.md for ``results`` (in zoo order)."""
    passed = sum(r.get("status") == "passed" for r in results)
    versions = []
    for dist in ("onnx-stablehlo", "onnxruntime", "jax", "jaxlib", "onnx", "torch", "transformers"):
        try:
            versions.append(f"{dist} {importlib.metadata.version(dist)}")
        except importlib.metadata.PackageNotFoundError:
            pass
    lines = [
        "# Real models",
        "",
        "<!-- Generated by tools/gen_models_doc.py from the zoo in tools/zoo.py; do not edit by hand. -->",
        "",
        f"{passed} of {len(results)} zoo models compile and match onnxruntime. Each model is built or found",
        "offline (see `tools/zoo.py`), run by onnxruntime (CPU) and by onnx-stablehlo (PJRT CPU) on the",
        "same seeded realistic inputs, and compared at the model's tolerance (f32: max abs <= 1e-4 or",
        "relative <= 1e-4; int8: row cosine >= 0.999 against onnxruntime's own int8 result). Stateful",
        "models run a whole clip chunk by chunk and every call is compared. The same comparison is",
        "`tests/models/test_zoo.py` (`pytest -m models`, and `-m slow` for the models over 50 MB).",
        "",
        "Columns: *opset* of the default domain; *nodes* including subgraphs; *max error* is the",
        "largest abs difference over all outputs and calls (relative to the largest |value| in",
        "parentheses); *conversion* is ONNX -> StableHLO, *compile* is PJRT/XLA for the first shape;",
        "*latency vs ORT* is our median time per call over onnxruntime's at the shape shown.",
        "",
        f"Measured with {', '.join(versions)} on {platform.machine()} with {os.cpu_count()} CPUs.",
        "",
        "| Model | Source | Opset | Nodes | Op types | Max error vs ORT | Conversion (s) | Compile (s) "
        "| Latency vs ORT | Shape | Result |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in results:
        source = r.get("source", "")
        if r.get("source_version"):
            source += f" {r['source_version']}"
        op_types = ", ".join(r.get("op_types", {}))
        error = ""
        if r.get("max_abs") is not None:
            error = f"{r['max_abs']:.2g} ({r['max_rel']:.1g})"
            if r.get("min_cosine") is not None:
                error += f", cos {r['min_cosine']:.5f}"
        ratio = f"{r['latency_ratio']:.2f}x" if r.get("latency_ratio") is not None else ""
        lines.append(
            "| "
            + " | ".join(
                [
                    f"`{r['name']}`",
                    source,
                    str(r.get("opset") or ""),
                    str(r.get("nodes") or ""),
                    op_types,
                    error,
                    _seconds(r.get("conversion_seconds")),
                    _seconds(r.get("compile_seconds")),
                    ratio,
                    _shape_text(r.get("latency_shape", {})),
                    _short_reason(r),
                ]
            )
            + " |"
        )
    union: dict[str, list[str]] = collections.defaultdict(list)
    nodes: collections.Counter[str] = collections.Counter()
    for r in results:
        for m in r.get("missing", []):
            union[_op_text(m)].append(r["name"])
            nodes[_op_text(m)] += m["nodes"]
    if union:
        lines += [
            "",
            "## Missing lowerings",
            "",
            "| Op (domain::type-opset) | Models | Nodes | Used by |",
            "| --- | --- | --- | --- |",
        ]
        for op in sorted(union, key=lambda k: (-len(union[k]), k)):
            lines.append(f"| {op} | {len(union[op])} | {nodes[op]} | {', '.join(union[op])} |")
    others = [r for r in results if r.get("status") not in ("passed", "skipped", "not run") and not r.get("missing")]
    if others:
        lines += ["", "## Other failures", ""]
        for r in others:
            text = (r.get("comparison") or r.get("error") or "").strip()
            lines += [f"### `{r['name']}` ({r.get('status')})", "", "```", text[:2000], "```", ""]
    models = [
        "",
        "## Models",
        "",
        "| Model | Description | Tolerance | File size (MB) |",
        "| --- | --- | --- | --- |",
    ]
    for r in results:
        size = f"{r['size_mb']:.1f}" if r.get("size_mb") is not None else ""
        models.append(f"| `{r['name']}` | {r.get('description', '')} | {r.get('tolerance', '')} | {size} |")
    return "\n".join(lines + models + POST_PROCESSED.splitlines() + CLASSIC_ML.splitlines()).rstrip() + "\n"


POST_PROCESSED = """
## How the post-processed transformer files are made

The files people download are rarely raw exports. These zoo entries and test models come from
the real post-processing tools, run offline:

* `<source>-ort-O1/O2/O99` (`tools/build_optimized.py`): `onnxruntime.transformers.optimizer.
  optimize_model(opt_level=1|2|99)` on the legacy exports of all-MiniLM-L6-v2 (eager attention:
  fuses into com.microsoft `Attention`, `EmbedLayerNormalization`, `SkipLayerNormalization`,
  `BiasGelu`), BERT, DistilBERT, GPT-2 and ViT (transformers' SDPA export: `SkipLayerNormalization`
  with `BiasGelu`/`FastGelu`; the attention stays standard ops). ViT at level 99 is not built: ORT
  writes CPU-specific `com.microsoft.nchwc` convolutions there.
* `<source>-ort-O2-fp16` and `-fp16-io32`: the O2 file through ORT's
  `convert_float_to_float16` with `keep_io_types` off and on.
* `genai-llama-int4` (`tools/build_genai.py`): **onnxruntime-genai's own model builder**
  (`python -m onnxruntime_genai.models.builder -p int4 -e cpu`) on a random-init Llama config
  saved locally with `save_pretrained` (it runs offline): `MatMulNBits` (4 bits, block 32,
  accuracy_level 4), `GroupQueryAttention` with packed QKV, rotary and a KV cache,
  `SkipSimplifiedLayerNormalization`, `SimplifiedLayerNormalization`, weights in external data.
  `tests/models/test_generation.py` generates 32 greedy and 16 sampled tokens for a padded
  batch, equal to onnxruntime's token for token, with two compiles in all.
* `gpt2-small-with-past` / `gpt2-with-past` (`tools/build_decoder_with_past.py`): Optimum's
  decoder-with-past interface (`past_key_values.*` in, `present.*` out) exported from torch,
  since `optimum-onnx` is not installed; generation as above.
* `lstm-bidi-int8-per-tensor/-channel` (`tools/build_quantized_lstm.py`):
  `onnxruntime.quantization.quantize_dynamic` of an LSTM tagger (com.microsoft
  `DynamicQuantizeLSTM`), with `reduce_range` (ORT's AVX2 u8s8 kernel saturates on full-range
  int8 weights, making its own result CPU-dependent).
* `large-embedding` (`tools/build_large.py`, `tests/models/test_large_model.py`): 2.25 GB of
  weights in external data; matches onnxruntime, but peak RSS is 2.1x the weights (the 1.3x
  goal is not met yet; the test says why).
"""


CLASSIC_ML = """
## Classic ML: maps, strings and the numerics followed

The `sklearn-*` entries (`tools/build_sklearn.py`) are trained with a fixed seed on datasets that
ship with scikit-learn and converted offline by skl2onnx or onnxmltools; their tolerance is
1e-5 (labels equal).

* **Map inputs** (`dictvectorizer-*`): a `map(string|int64, tensor(float))` graph input read by
  one DictVectorizer is fed as onnxruntime's Python API takes it, one dict per run; the host
  turns it into the DictVectorizer's dense row (`frontend/host_values.py`,
  `runtime/host_stages.py`). Any other map-typed input, and `seq(map(...))` inputs (no
  ai.onnx.ml op reads one), are an `UnsupportedValueTypeError` naming the value and its type.
* **Strings** (`*-string-labels*`, `onehot-strings-*`): the loader interns every string of the
  model as an int64 id; string feeds become ids on the host (an unknown string gets a fresh id,
  equal only to itself) and string outputs (class labels) come back as numpy `object` arrays
  of `str`, as onnxruntime returns them. A string reaching an op that computes on it
  (StringNormalizer, Cast to or from string, a subgraph) is an `UnsupportedDtypeError` naming
  the node and the value.
* **HistGradientBoosting**: skl2onnx 1.20's converter fails on scikit-learn 1.9 (it writes a
  Python `False`, a leaf's missing-value flag, into the int list
  `nodes_missing_value_tracks_true`, which onnx 1.23's `make_node` refuses). The builder
  re-registers skl2onnx's own converters through the public `update_registered_converter`
  around a container whose `add_node` writes bools and numpy integers as Python ints: the
  trees are skl2onnx's conversion unchanged. One model has 5% NaN inputs (missing-value
  branches).
* **XGBoost** (`xgboost-cpu` 3.2, `onnxmltools.convert_xgboost`): onnxmltools writes no ZipMap,
  the probabilities are a tensor.
* **SVC with a poly kernel** (`svc-poly-iris-probability`): onnxruntime computes the kernel
  with its float32 SGEMM (one fused multiply-add per feature, in feature order); with kernel
  values up to 262 its one-versus-one decision values are 1.4e-4 from the exact (float64) ones
  and its Platt probabilities 3.3e-5 from scikit-learn's `predict_proba`. The SVMClassifier
  lowering follows the same arithmetic (emulated exactly through float64, up to 64 features):
  decision values equal to onnxruntime's on these inputs, probabilities within 2.4e-7 of
  onnxruntime's (computed in float64 instead, they were 5e-7 from the exact values but 3.3e-5
  from onnxruntime's).
"""


def main(argv: Sequence[str] | None = None) -> int:
    """CLI entry point."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", nargs="+", metavar="NAME", help="run only these; the others come from the last run")
    parser.add_argument("--skip-slow", action="store_true", help="do not run models over 50 MB (keep their last results)")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="markdown file (default: %(default)s)")
    parser.add_argument("--json", type=Path, default=None, help="also write all results to this JSON file")
    parser.add_argument("--timeout", type=float, default=1800.0, help="seconds per model (default: %(default)s)")
    parser.add_argument("--worker", metavar="NAME", help=argparse.SUPPRESS)
    parser.add_argument("--result", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)

    if args.worker:
        result = run_one(args.worker)
        args.result.write_text(json.dumps(result, indent=1))
        return 0

    selected = args.models or [m.name for m in zoo.MODELS.values() if not (args.skip_slow and m.slow)]
    for name in selected:
        zoo.get(name)  # fail early on a typo
    results = []
    for model in zoo.MODELS.values():
        if model.name in selected:
            start = time.perf_counter()
            result = run_in_subprocess(model.name, args.timeout)
            print(f"{model.name}: {_short_reason(result)} ({time.perf_counter() - start:.0f} s)", flush=True)
        else:
            previous = results_dir() / f"{model.name}.json"
            result = json.loads(previous.read_text()) if previous.exists() else {
                "name": model.name, "source": model.source, "description": model.description,
                "status": "not run",
            }
        results.append(result)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(render(results))
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

