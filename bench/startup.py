"""Start-up: time from a new process to its first result, ours (cold and warm cache) against onnxruntime.

Usage::

    python bench/startup.py [--model PATH] [--rounds 3] [--quick] [--device cpu|cuda]

Each measurement is a fresh Python process that imports the library, compiles (or creates an
onnxruntime session for) the model and runs it once; the child reports the seconds from just
before its first import to the first result, so interpreter start-up is left out of both.

* ``ours cold``: an empty executable cache folder (``ONNX_STABLEHLO_EXECUTABLE_CACHE``), so XLA
  compiles everything;
* ``ours warm``: the same folder again: a warm start (``runtime/warm_start.py``) runs the stored
  executable (``runtime/executable_cache.py``) with the weights read by onnx's protobuf, without
  importing onnx_ir or the frontend: no lowering, passes or compile;
* ``ORT``: ``onnxruntime.InferenceSession`` (2 intra-op threads, or the CUDA execution provider
  with ``--device cuda``) plus its first run.
* ``jaxlib floor``: what any runtime on the pinned jaxlib pays before the warm run's first result,
  without our loading: importing jaxlib and its PJRT client (on CPU, jaxlib's own client without
  jax, as a warm start does: ``pjrt.jax_free_cpu_device``), reading the model file's bytes,
  deserializing the executables the warm run found on disk, transferring zeros of each
  parameter's shape and dtype and running each executable once. What ours spends above it is
  parsing the weights out of the protobuf, importing onnx, and our own Python.

An untimed child of each kind runs first, so the ``.pyc`` files exist (as in an installed
package). Rounds are interleaved (cold, warm, ORT, cold, ...) because the machine is shared; the table
gives the median of each and the ratios ours/ORT. The default model is all-MiniLM-L6-v2 (legacy
export, built by ``tools/build_minilm.py``) at batch 1 x 16 tokens; ``--quick`` uses the tiny
model bundled in the package and one round.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))

import _timing  # noqa: E402

_CHILD = r"""
import json, sys, time
start = time.perf_counter()
kind, path, shapes, device = sys.argv[1], sys.argv[2], json.loads(sys.argv[3]), sys.argv[4]
import numpy as np
def feeds_for(names_types):
    rng = np.random.default_rng(0)
    out = {}
    for name, dtype in names_types:
        shape = shapes[name]
        if np.dtype(dtype).kind in "iub":
            out[name] = rng.integers(0, 2, shape).astype(dtype)
        else:
            out[name] = rng.standard_normal(shape).astype(dtype)
    return out
if kind == "ours":
    import onnx_stablehlo
    model = onnx_stablehlo.compile(path, device, input_shapes=shapes)
    dtypes = json.loads(sys.argv[6])
    feeds = feeds_for([(n, dtypes[n]) for n in model.input_names])
    model.run(feeds)
    first = time.perf_counter() - start
    from onnx_stablehlo.runtime.executable_cache import default_cache
    cache = default_cache()
    warm = model._warm is not None  # a warm start (runtime/warm_start.py): nothing lowered or loaded
    detail = dict(cache_hits=cache.hits if cache else 0, warm_start=warm, onnx_ir_imported="onnx_ir" in sys.modules,
                  jax_imported="jax" in sys.modules)
    if not warm:
        detail.update(model.timings, lowered_from_disk=model.executables.disk_hits)
elif kind == "floor":
    import glob, os
    from jaxlib import _jax, xla_client
    from onnx_stablehlo.runtime import pjrt  # the PJRT layer alone: jaxlib, numpy, no jax
    handle_device = pjrt.jax_free_cpu_device() if device == "cpu" else pjrt.get_device(device)
    imported = time.perf_counter()
    with open(path, "rb") as model_file:
        model_bytes = model_file.read()
    read = time.perf_counter()
    payloads = sorted(glob.glob(os.path.join(sys.argv[5], "*.bin")))
    executables = []
    for payload in payloads:
        with open(payload, "rb") as entry:
            data = entry.read()
        try:
            executables.append(handle_device._client.deserialize_executable(
                data, _jax.DeviceList((handle_device._handle,)), _jax.CompileOptions()))
        except Exception:
            continue  # a lowered artifact or a check marker, not an executable
    deserialized = time.perf_counter()
    for executable in executables:
        proto = executable.hlo_modules()[0].as_serialized_hlo_module_proto()
        program = xla_client.XlaComputation(proto).program_shape()
        arguments = [pjrt.to_device(np.zeros(s.dimensions(), s.numpy_dtype()), handle_device) for s in program.parameter_shapes()]
        result = program.result_shape()
        results = result.tuple_shapes() if result.is_tuple() else [result]
        run = pjrt.executor_for_avals(executable, [(r.numpy_dtype(), r.dimensions()) for r in results], handle_device)
        pjrt.to_host(run(arguments))
    first = time.perf_counter() - start
    detail = dict(import_seconds=imported - start, client_and_read_seconds=read - imported,
                  deserialize_seconds=deserialized - read, run_seconds=time.perf_counter() - deserialized,
                  executables=len(executables), entries=len(payloads), jax_imported="jax" in sys.modules)
else:
    import onnxruntime as ort
    options = ort.SessionOptions()
    options.intra_op_num_threads = 2
    provider = "CUDAExecutionProvider" if device == "cuda" else "CPUExecutionProvider"
    session = ort.InferenceSession(path, options, providers=[provider])
    assert session.get_providers()[0] == provider, session.get_providers()
    types = {"tensor(float)": "<f4", "tensor(int64)": "<i8", "tensor(int32)": "<i4", "tensor(bool)": "|b1"}
    feeds = feeds_for([(i.name, types[i.type]) for i in session.get_inputs()])
    session.run(None, feeds)
    first = time.perf_counter() - start
    detail = {}
json.dump({"seconds": first, "detail": detail}, sys.stdout)
"""


def _child(kind: str, path: str, shapes: dict, device: str, cache: str, payloads: str = "", dtypes: dict | None = None) -> dict:
    env = {**os.environ, "ONNX_STABLEHLO_EXECUTABLE_CACHE": cache}
    # Bytecode (.pyc) is written and reused, as in an installed package (a checkout run with
    # PYTHONDONTWRITEBYTECODE=1 would recompile every module in every child).
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, kind, path, json.dumps(shapes), device, payloads, json.dumps(dtypes or {})],
        env=env, capture_output=True, text=True, check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"{kind} child failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def _unwrap_entries(cache: str, target: str) -> None:
    """Writes each entry of the executable cache folder ``cache`` as its bare payload into
    ``target`` (what the ``jaxlib floor`` child deserializes, without our cache's header)."""
    from onnx_stablehlo.runtime.executable_cache import ExecutableCache

    store = ExecutableCache(cache)
    for entry, _size, _mtime in store.entries():
        payload = store.load(entry.stem)
        if payload is not None:
            Path(target, entry.stem + ".bin").write_bytes(payload)


def _model(quick: bool) -> tuple[str, dict, str]:
    if quick:
        import onnx_stablehlo

        return onnx_stablehlo.example_model_path(), {"input_ids": [2, 16]}, "tiny example model"
    sys.path.insert(0, str(REPO_ROOT / "tools"))
    import build_minilm

    path = build_minilm.build_minilm("legacy")  # cached: built once, offline
    shape = [1, 16]
    return str(path), {"input_ids": shape, "attention_mask": shape, "token_type_ids": shape}, "MiniLM legacy 1x16"


def _input_dtypes(path: str) -> dict[str, str]:
    """The numpy dtype of each graph input (read here, so the child's first result needs nothing
    from the compiled model but ``input_names``)."""
    import onnx
    from onnx import helper

    graph = onnx.load(path, load_external_data=False).graph
    return {v.name: helper.tensor_dtype_to_np_dtype(v.type.tensor_type.elem_type).str for v in graph.input}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", help="an .onnx file (its inputs need --shape)")
    parser.add_argument("--shape", action="append", default=[], help="NAME=d0,d1,... for --model")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="tiny bundled model, one round")
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    args = parser.parse_args(argv)
    if args.model:
        path = args.model
        shapes = {k: [int(d) for d in v.split(",")] for k, v in (s.split("=", 1) for s in args.shape)}
        label = Path(path).name
    else:
        path, shapes, label = _model(args.quick)
    rounds = 1 if args.quick else args.rounds
    dtypes = _input_dtypes(path)
    times: dict[str, list[float]] = {"ours cold": [], "ours warm": [], "ORT": [], "jaxlib floor": []}
    details: dict[str, dict] = {}
    # The child builds its own session (importing nothing but onnxruntime, as a user's process);
    # this one first stops the script if onnxruntime lacks the provider for --device.
    _timing.ort_session(path, args.device)
    with tempfile.TemporaryDirectory(prefix="startup-cache-") as cache:  # untimed: writes the .pyc files
        for kind in ("ours", "ort"):
            _child(kind, path, shapes, args.device, cache, dtypes=dtypes)
    for _ in range(rounds):
        with tempfile.TemporaryDirectory(prefix="startup-cache-") as cache:
            for name, kind in (("ours cold", "ours"), ("ours warm", "ours"), ("ORT", "ort")):
                result = _child(kind, path, shapes, args.device, cache, dtypes=dtypes)
                times[name].append(result["seconds"])
                details[name] = result["detail"]
            with tempfile.TemporaryDirectory(prefix="startup-payloads-") as payloads:
                _unwrap_entries(cache, payloads)
                result = _child("floor", path, shapes, args.device, cache, payloads)
            times["jaxlib floor"].append(result["seconds"])
            details["jaxlib floor"] = result["detail"]
    ort = statistics.median(times["ORT"])
    rows = []
    for name, samples in times.items():
        median = statistics.median(samples)
        detail = details[name]
        phases = ", ".join(f"{k.replace('_seconds', '')} {v:.2f}" for k, v in detail.items() if k.endswith("_seconds"))
        if "executables" in detail:
            phases += f", {detail['executables']} executables of {detail['entries']} cache entries"
            phases += ", jax " + ("imported" if detail["jax_imported"] else "not imported")
        if detail.get("warm_start"):
            phases = "warm start: nothing lowered; onnx_ir " + ("imported" if detail["onnx_ir_imported"] else "not imported")
            phases += ", jax " + ("imported" if detail["jax_imported"] else "not imported")
        elif "cache_hits" in detail:
            phases += f", executables from disk {detail['cache_hits']}, lowered from disk {detail['lowered_from_disk']}"
        rows.append([name, _timing.format_s(median), f"{median / ort:.2f}", phases or "-"])
    print(f"# first result in a new process: {label}, device {args.device}, {rounds} round(s), "
          f"{os.cpu_count()} CPUs")
    print(_timing.markdown_table(["run", "first result (s)", "ours/ORT", "last round's phases (s)"], rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
