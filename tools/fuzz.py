"""Seeded fuzzing of onnx-stablehlo against onnxruntime (issue 15).

Usage::

    python tools/fuzz.py [--cases N] [--seed S] [--first I] [--timeout SECONDS] [--memory-gb G] [--pause-file F]
                         [--source node|zoo|all] [--jobs N] [--out/--save-failures DIR]
                         [--log FILE [--resume]] [--json FILE] [--quick]
    python tools/fuzz.py --merge LOG [LOG ...] [--json FILE]

Each case is a seed model with its inputs (a case of the ONNX backend node suite, or a small
model of the zoo) and one seeded mutation of it: an attribute changed (ints to 0, -1, 2^31,
2^62 ..., floats to 0, NaN, inf, 1e30), an attribute dropped, NaN/inf or extreme values fed,
declared input or output shapes and dtypes that lie, inputs rewired, the opset changed (29,
10000, 0), the protobuf truncated. Case ``i`` of seed ``S`` is the same on every machine with
the same onnx version, so a failure is reproduced with ``--seed S --first i --cases 1``.

Every case runs in a worker subprocess (``spawn``) under an address-space cap
(``RLIMIT_AS``, ``--memory-gb``), in three stages, each under ``--timeout``: our compile and
run (``onnx_stablehlo.compile(model, check=False)``), onnxruntime, and, only when both ran and
disagree, ``onnx.reference``. A stage past its timeout or a worker that dies is recorded and the
worker replaced. Classes:

- ``crash``: the worker died in our stage (a segfault, an abort in XLA);
- ``hang``: our stage timed out;
- ``untyped``: we raised something that is not an ``OnnxStableHLOError``;
- ``memory``: we raised ``MemoryError`` under the cap (a size not checked before allocating);
- ``disagree``: both ran, the outputs differ, and onnx.reference agrees with onnxruntime;
- ``ambiguous``: both ran and differ, but onnx.reference disagrees with onnxruntime or fails
  (a spec ambiguity: not counted as ours);
- ``internal``: our ``LoweringError`` (a rule's exception wrapped) where onnxruntime ran;
- ``typed``: we raised a typed error (onnxruntime ran or not); ``both_error``: both refused;
- ``ok``: both ran and agree; ``ort_error``: we ran, onnxruntime refused.

``crash``, ``hang``, ``untyped``, ``memory`` and ``disagree`` are failures: the exit code is 1
when any occurred that is not a known open one (:data:`OPEN_DISAGREEMENTS`). ``--out DIR``
(``--save-failures``) writes each failing case as ``<class>-s<seed>-<case>.onnx`` plus ``.npz``
inputs and a ``.json`` result: the replay corpus format of ``tests/fuzz/corpus/``.

At scale: ``--jobs N`` runs N workers in parallel (results sorted by index, equal to
``--jobs 1``); ``--log FILE`` appends each result as a JSON line, ``--resume`` skips the cases
that file already holds (a killed run goes on where it stopped); shards of one run
(``--first``/``--cases``) each with its own log are combined by ``--merge LOG ...``; ``--json``
writes the summary (run parameters, seconds, cases/s per job, counts, failures).

Seeds: the node suite is collected once (``onnx.backend.test.case.node.collect_testcases``,
~15-30 s) and cached as ``fuzz-seeds-<onnx version>.npz`` in the shared model cache
(``tools/_cache.py``); the zoo seeds are the cached small models of ``tools/zoo.py`` that exist.

The short seeded run in the default tests is ``tests/fuzz/test_fuzz.py``; the long run is
documented in docs/fuzzing.md (``python tools/fuzz.py --cases 100000 --out fuzz-out``).
"""

from __future__ import annotations

import argparse
import dataclasses
import io
import json
import math
import multiprocessing
import multiprocessing.connection
import os
import sys
import threading
import time
import traceback
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import onnx

sys.path.insert(0, str(Path(__file__).resolve().parent))

FAILURES = ("crash", "hang", "untyped", "memory", "disagree")
"""Classes that fail a run."""

OPEN_DISAGREEMENTS = {
    # (seed-name prefix, mutation, seed-name parts it excludes): why it stays; docs/fuzzing.md,
    # "Known spec ambiguities".
    ("test_maxpool", "nan_inputs", ("1d", "dilations", "argmax", "uint8")): "MaxPool float32 "
    "without Indices or dilation, 2D/3D: onnxruntime's MLAS vector kernels let a NaN win by SIMD "
    "lane order (x86 maxps keeps the second operand), platform-dependent; every other MaxPool NaN "
    "case follows onnxruntime (frontend/lowering/pool.py)",
    ("test_dynamicquantizelinear", "nan_inputs", ("expanded",)): "DynamicQuantizeLinear with NaN "
    "and an infinity: onnxruntime's MLAS min/max (x86 minps/maxps keep the second operand) lets a "
    "NaN into the range, or not, by its position in the SIMD blocks, platform-dependent; we leave "
    "NaN out of the range as its scalar path does (frontend/builders/quantize.py)",
    ("test_dft", "nan_inputs", ()): "DFT of a power-of-two length with NaN/inf: where inf becomes NaN "
    "depends on the FFT's butterfly order (other lengths follow onnxruntime's Bluestein FFT)",
    ("test_resize", "nan_inputs", ("nearest", "antialias")): "Resize cubic with inf at a tap whose "
    "weight rounds to zero in onnxruntime's float32 coordinates only (1 of 135 random cases); "
    "linear/cubic taps otherwise follow onnxruntime",
    ("test_linear_attention", "extreme_inputs", ()): "a MatMul whose products overflow float32 "
    "with both signs: a fused multiply-add (XLA's dot, numpy.matmul's BLAS) keeps the exact "
    "product finite, so an accumulator at -inf stays -inf; separately rounded products (onnxruntime's "
    "MLAS here) are -inf and +inf, summed to NaN; onnx.reference's numpy.matmul answers -inf for one "
    "batch element and NaN for the other in the same step (seed 50 #33090)",
}
"""Disagreements with onnxruntime that are documented residuals: onnxruntime's answer depends on
its platform or algorithm there (docs/fuzzing.md); every other failure of a fuzz run is new."""


def open_disagreement(result: "Result") -> str | None:
    """The reason a disagreement is a known open one (:data:`OPEN_DISAGREEMENTS`), else None."""
    if result.kind != "disagree":
        return None
    for (prefix, mutation, excluded), reason in OPEN_DISAGREEMENTS.items():
        if result.seed.startswith(prefix) and result.mutation == mutation and not any(p in result.seed for p in excluded):
            return reason
    return None

DEFAULT_TIMEOUT_S = 30.0
DEFAULT_MEMORY_GB = 4.0
WORKER_START_TIMEOUT_S = 240.0
MAX_FEED_BYTES = 64 << 20
"""Seeds whose inputs take more bytes than this are skipped (the fuzzer feeds them many times)."""

INT_VALUES = (0, 1, -1, 2, 3, 7, 2**31, -(2**31), 2**62, -(2**62))
FLOAT_VALUES = (0.0, -1.0, 0.5, float("nan"), float("inf"), float("-inf"), 1e30, 1e-30)
OPSETS = (29, 10000, 0, 1, 6)


@dataclasses.dataclass
class Seed:
    """A model with one set of inputs, as the mutations start from."""

    name: str
    model: bytes
    feeds: dict[str, np.ndarray]


@dataclasses.dataclass
class Case:
    index: int
    seed: str
    mutation: str
    model: bytes
    feeds: dict[str, np.ndarray]


@dataclasses.dataclass
class Result:
    index: int
    seed: str
    mutation: str
    kind: str
    detail: str = ""
    run_seed: int | None = None
    """The run's ``--seed`` (None for a case that did not come from :func:`make_case`)."""

    @property
    def failed(self) -> bool:
        return self.kind in FAILURES


# Seeds -----------------------------------------------------------------------------------------


def _cache_dir() -> Path:
    from _cache import cache_dir

    return cache_dir()


def node_seeds() -> list[Seed]:
    """The node suite's cases with plain array inputs, cached on disk per onnx version."""
    path = _cache_dir() / f"fuzz-seeds-{onnx.__version__}.npz"
    if path.is_file():
        with np.load(path, allow_pickle=False) as archive:
            names = [str(n) for n in archive["names"]]
            seeds = []
            for i, name in enumerate(names):
                feeds = {
                    key.split("/", 2)[2]: archive[key] for key in archive.files if key.startswith(f"in/{i}/")
                }
                seeds.append(Seed(name, archive[f"model/{i}"].tobytes(), feeds))
            return seeds
    import warnings

    from onnx.backend.test.case.node import collect_testcases

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cases = collect_testcases(None)
    seeds = []
    for case in sorted(cases, key=lambda c: c.name):
        if not case.data_sets:
            continue
        inputs = case.data_sets[0][0]
        if not all(isinstance(a, np.ndarray) and a.dtype.kind in "biufc" for a in inputs):
            continue
        names = [v.name for v in case.model.graph.input][: len(inputs)]
        feeds = dict(zip(names, inputs))
        if sum(a.nbytes for a in feeds.values()) > MAX_FEED_BYTES:
            continue
        seeds.append(Seed(case.name, case.model.SerializeToString(), feeds))
    arrays: dict[str, np.ndarray] = {"names": np.array([s.name for s in seeds])}
    for i, seed in enumerate(seeds):
        arrays[f"model/{i}"] = np.frombuffer(seed.model, dtype=np.uint8)
        for name, value in seed.feeds.items():
            arrays[f"in/{i}/{name}"] = value
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_bytes(buffer.getvalue())
    os.replace(tmp, path)
    return seeds


def zoo_seeds() -> list[Seed]:
    """Small models of the zoo that are in the cache, with seeded generated inputs."""
    from onnx_stablehlo import example_model_path
    from onnx_stablehlo.cli import generated_inputs
    from onnx_stablehlo.frontend.loader import load

    paths = [Path(example_model_path())]
    paths += sorted(p for p in _cache_dir().glob("*.onnx") if p.stat().st_size < 8 << 20)
    seeds = []
    for path in paths:
        try:
            model = load(path)
            feeds = generated_inputs(model, None, seed=0, dims={})
        except Exception:  # symbolic dims without sizes, external data: not a seed
            continue
        seeds.append(Seed(f"zoo:{path.name}", path.read_bytes(), feeds))
    return seeds


# Mutations -------------------------------------------------------------------------------------


def _parse(seed: Seed) -> onnx.ModelProto:
    model = onnx.ModelProto()
    model.ParseFromString(seed.model)
    return model


def _nodes_with(model: onnx.ModelProto, types: Sequence[int]) -> list[tuple[onnx.NodeProto, onnx.AttributeProto]]:
    return [(n, a) for n in model.graph.node for a in n.attribute if a.type in types]


def m_none(seed: Seed, rng: np.random.Generator) -> tuple[onnx.ModelProto | bytes, dict] | None:
    return _parse(seed), seed.feeds


def m_attr_int(seed, rng):
    model = _parse(seed)
    found = _nodes_with(model, (onnx.AttributeProto.INT, onnx.AttributeProto.INTS))
    if not found:
        return None
    _, attr = found[rng.integers(len(found))]
    value = int(INT_VALUES[rng.integers(len(INT_VALUES))])
    if attr.type == onnx.AttributeProto.INT:
        attr.i = value
    elif len(attr.ints):
        attr.ints[int(rng.integers(len(attr.ints)))] = value
    else:
        attr.ints.append(value)
    return model, seed.feeds


def m_attr_float(seed, rng):
    model = _parse(seed)
    found = _nodes_with(model, (onnx.AttributeProto.FLOAT, onnx.AttributeProto.FLOATS))
    if not found:
        return None
    _, attr = found[rng.integers(len(found))]
    value = float(FLOAT_VALUES[rng.integers(len(FLOAT_VALUES))])
    if attr.type == onnx.AttributeProto.FLOAT:
        attr.f = value
    elif len(attr.floats):
        attr.floats[int(rng.integers(len(attr.floats)))] = value
    else:
        return None
    return model, seed.feeds


def m_attr_drop(seed, rng):
    model = _parse(seed)
    found = [(n, i) for n in model.graph.node for i in range(len(n.attribute))]
    if not found:
        return None
    node, index = found[rng.integers(len(found))]
    del node.attribute[index]
    return model, seed.feeds


def m_nan_inputs(seed, rng):
    floats = [n for n, a in seed.feeds.items() if a.dtype.kind == "f" and a.size]
    if not floats:
        return None
    feeds = dict(seed.feeds)
    name = floats[rng.integers(len(floats))]
    array = feeds[name].copy()
    flat = array.reshape(-1)
    count = max(1, flat.size // 4)
    positions = rng.choice(flat.size, size=min(count, flat.size), replace=False)
    flat[positions] = np.array([np.nan, np.inf, -np.inf], dtype=array.dtype)[rng.integers(3, size=positions.size)]
    feeds[name] = array
    return _parse(seed), feeds


def m_extreme_inputs(seed, rng):
    if not seed.feeds:
        return None
    feeds = dict(seed.feeds)
    name = list(feeds)[rng.integers(len(feeds))]
    array = feeds[name]
    if array.dtype.kind == "f":
        with np.errstate(over="ignore"):
            factor = np.asarray(1e30 if array.dtype.itemsize >= 4 else 6e4, dtype=array.dtype)
            feeds[name] = (array * factor).astype(array.dtype)
    elif array.dtype.kind in "iu" and array.size:
        info = np.iinfo(array.dtype)
        extreme = np.array([info.min, info.max, -1 if info.min < 0 else 0], dtype=array.dtype)
        changed = array.copy().reshape(-1)
        changed[rng.integers(changed.size)] = extreme[rng.integers(3)]
        feeds[name] = changed.reshape(array.shape)
    else:
        return None
    return _parse(seed), feeds


def m_opset(seed, rng):
    model = _parse(seed)
    for entry in model.opset_import:
        if entry.domain in ("", "ai.onnx"):
            entry.version = int(OPSETS[rng.integers(len(OPSETS))])
            return model, seed.feeds
    return None


def _tensor_values(values) -> list[onnx.ValueInfoProto]:
    return [v for v in values if v.type.HasField("tensor_type") and v.type.tensor_type.HasField("shape")]


def m_shape_lie(seed, rng):
    model = _parse(seed)
    values = _tensor_values(model.graph.input) + _tensor_values(model.graph.output)
    values = [v for v in values if len(v.type.tensor_type.shape.dim)]
    if not values:
        return None
    value = values[rng.integers(len(values))]
    dims = value.type.tensor_type.shape.dim
    dim = dims[int(rng.integers(len(dims)))]
    choice = int(rng.integers(3))
    if choice == 0:
        dim.Clear()
        dim.dim_value = int(rng.integers(0, 9))
    elif choice == 1:
        dim.Clear()
        dim.dim_param = "fuzzed"
    else:
        value.type.tensor_type.ClearField("shape")
    return model, seed.feeds


def m_dtype_lie(seed, rng):
    model = _parse(seed)
    values = [v for v in model.graph.input if v.type.HasField("tensor_type")]
    if not values:
        return None
    value = values[rng.integers(len(values))]
    choices = [onnx.TensorProto.FLOAT, onnx.TensorProto.INT64, onnx.TensorProto.INT32, onnx.TensorProto.DOUBLE,
               onnx.TensorProto.FLOAT16, onnx.TensorProto.BOOL, onnx.TensorProto.UINT8]
    value.type.tensor_type.elem_type = int(choices[rng.integers(len(choices))])
    return model, seed.feeds


def m_rewire(seed, rng):
    model = _parse(seed)
    nodes = [n for n in model.graph.node if len(n.input) >= 1]
    if not nodes:
        return None
    node = nodes[rng.integers(len(nodes))]
    names = [v.name for v in model.graph.input] + [o for n in model.graph.node for o in n.output if o]
    if len(node.input) >= 2 and rng.integers(2):
        i, j = rng.choice(len(node.input), size=2, replace=False)
        node.input[int(i)], node.input[int(j)] = node.input[int(j)], node.input[int(i)]
    else:
        position = int(rng.integers(len(node.input) + 1))
        replacement = names[rng.integers(len(names))] if names and rng.integers(4) else ""
        if position == len(node.input):
            node.input.append(replacement)
        else:
            node.input[position] = replacement
    return model, seed.feeds


def m_truncate(seed, rng):
    data = seed.model
    if len(data) < 4:
        return None
    return data[: int(rng.integers(1, len(data)))], seed.feeds


MUTATIONS: dict[str, Callable[[Seed, np.random.Generator], Any]] = {
    "none": m_none,
    "attr_int": m_attr_int,
    "attr_float": m_attr_float,
    "attr_drop": m_attr_drop,
    "nan_inputs": m_nan_inputs,
    "extreme_inputs": m_extreme_inputs,
    "opset": m_opset,
    "shape_lie": m_shape_lie,
    "dtype_lie": m_dtype_lie,
    "rewire": m_rewire,
    "truncate": m_truncate,
}
WEIGHTS = {"none": 1, "attr_int": 4, "attr_float": 3, "attr_drop": 3, "nan_inputs": 4, "extreme_inputs": 2,
           "opset": 1, "shape_lie": 3, "dtype_lie": 1, "rewire": 2, "truncate": 1}


def make_case(seeds: Sequence[Seed], seed: int, index: int) -> Case:
    """Case ``index`` of run ``seed``: a seed model and one mutation, both drawn from
    ``numpy.random.default_rng([seed, index])``."""
    rng = np.random.default_rng([seed, index])
    base = seeds[int(rng.integers(len(seeds)))]
    names = list(MUTATIONS)
    weights = np.array([WEIGHTS[n] for n in names], dtype=np.float64)
    for _ in range(4):
        name = names[int(rng.choice(len(names), p=weights / weights.sum()))]
        mutated = MUTATIONS[name](base, rng)
        if mutated is not None:
            break
    else:
        name, mutated = "none", m_none(base, rng)
    model, feeds = mutated
    data = model if isinstance(model, bytes) else model.SerializeToString()
    return Case(index, base.name, name, data, feeds)


# Worker ----------------------------------------------------------------------------------------


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text.splitlines()[0][:300] if text else ''}"


def _as_list(outputs: Any) -> list:
    return [np.asarray(o) if not isinstance(o, (list, type(None))) else o for o in outputs]


def outputs_differ(ours: Sequence[Any], theirs: Sequence[Any]) -> str | None:
    """A one-line difference between two output lists, or None when they agree.

    Arrays must have the same shape and dtype; floats agree within a tolerance per dtype (NaN
    equal to NaN, same-signed infinities equal).
    """
    if len(ours) != len(theirs):
        return f"{len(ours)} outputs against {len(theirs)}"
    for index, (a, b) in enumerate(zip(ours, theirs)):
        if isinstance(a, list) or isinstance(b, list) or a is None or b is None:
            if type(a) is not type(b):
                return f"output {index}: {type(a).__name__} against {type(b).__name__}"
            if isinstance(a, list):
                inner = outputs_differ(a, b)
                if inner:
                    return f"output {index}: {inner}"
            continue
        a, b = np.asarray(a), np.asarray(b)
        if a.shape != b.shape:
            return f"output {index}: shape {list(a.shape)} against {list(b.shape)}"
        if a.dtype != b.dtype:
            return f"output {index}: dtype {a.dtype} against {b.dtype}"
        if a.dtype.kind in "fc":
            tolerance = {2: 2e-2, 4: 1e-3, 8: 1e-6}.get(a.dtype.itemsize, 1e-3)
            if a.dtype.itemsize == 2 or a.dtype.kind == "c":
                a64, b64 = a.astype(np.complex128 if a.dtype.kind == "c" else np.float64), b.astype(
                    np.complex128 if a.dtype.kind == "c" else np.float64)
            else:
                a64, b64 = a.astype(np.float64), b.astype(np.float64)
            if not np.allclose(a64, b64, rtol=tolerance, atol=tolerance, equal_nan=True):
                bad = ~np.isclose(a64, b64, rtol=tolerance, atol=tolerance, equal_nan=True)
                where = tuple(int(i) for i in np.argwhere(bad)[0])
                return f"output {index}: {int(bad.sum())} values differ, first at {list(where)}: {a64[where]} against {b64[where]}"
        elif a.dtype.kind in "biu":
            if not np.array_equal(a, b):
                return f"output {index}: {int((a != b).sum())} values differ"
        elif a.dtype.kind in "OSU" and not np.array_equal(a.astype(str), b.astype(str)):
            return f"output {index}: strings differ"
    return None


def _worker_main(conn: multiprocessing.connection.Connection, memory_bytes: int) -> None:
    import resource
    import warnings

    warnings.simplefilter("ignore")
    if memory_bytes > 0:
        resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    # thousands of throwaway modules: kept out of the user's on-disk caches (and their writes' cost)
    os.environ.setdefault("ONNX_STABLEHLO_EXECUTABLE_CACHE", "0")
    os.environ.setdefault("ONNX_STABLEHLO_ARTIFACT_CACHE", "0")
    import onnxruntime as ort

    import onnx_stablehlo
    from onnx_stablehlo.errors import LoweringError, OnnxStableHLOError

    ort.set_default_logger_severity(4)
    conn.send(("ready",))
    while True:
        try:
            message = conn.recv()
        except EOFError:
            return
        if message is None:
            return
        model_bytes, feeds = message
        ours: list | None = None
        try:
            ours = _as_list(onnx_stablehlo.compile(model_bytes, check=False).run(dict(feeds)))
            conn.send(("ours", "ok", ""))
        except LoweringError as exc:
            conn.send(("ours", "internal", _one_line(exc)))
        except OnnxStableHLOError as exc:
            conn.send(("ours", "typed", _one_line(exc)))
        except MemoryError as exc:
            conn.send(("ours", "memory", _one_line(exc)))
        except Exception as exc:  # noqa: BLE001 - this is what the fuzzer looks for
            frames = traceback.extract_tb(exc.__traceback__)
            where = f" at {Path(frames[-1].filename).name}:{frames[-1].lineno}" if frames else ""
            conn.send(("ours", "untyped", _one_line(exc) + where))
        theirs: list | None = None
        try:
            options = ort.SessionOptions()
            options.intra_op_num_threads = 1
            options.log_severity_level = 4
            session = ort.InferenceSession(model_bytes, options, providers=["CPUExecutionProvider"])
            theirs = _as_list(session.run(None, dict(feeds)))
            conn.send(("ort", "ok", ""))
        except Exception as exc:  # noqa: BLE001 - onnxruntime refusing is an outcome
            conn.send(("ort", "error", _one_line(exc)))
        if ours is None or theirs is None:
            continue
        difference = outputs_differ(ours, theirs)
        conn.send(("compare", "differ" if difference else "same", difference or ""))
        if difference is None:
            continue
        try:
            from onnx.reference import ReferenceEvaluator

            proto = onnx.ModelProto()
            proto.ParseFromString(model_bytes)
            reference = _as_list(ReferenceEvaluator(proto).run(None, dict(feeds)))
            verdict = outputs_differ(reference, theirs)
            conn.send(("ref", "agrees_with_ort" if verdict is None else "differs", verdict or ""))
        except Exception as exc:  # noqa: BLE001
            conn.send(("ref", "error", _one_line(exc)))


class _Worker:
    def __init__(self, memory_bytes: int) -> None:
        context = multiprocessing.get_context("spawn")
        self.conn, child = context.Pipe()
        self.process = context.Process(target=_worker_main, args=(child, memory_bytes), daemon=True)
        self.process.start()
        child.close()
        if not self.conn.poll(WORKER_START_TIMEOUT_S):
            self.stop()
            raise RuntimeError("a fuzz worker did not start")
        self.conn.recv()

    def stop(self) -> None:
        if self.process.is_alive():
            self.process.kill()
        self.process.join(10)
        self.conn.close()


def _receive(worker: _Worker, timeout: float) -> tuple | str:
    """The worker's next message, ``"timeout"`` or ``"died"``."""
    try:
        if not worker.conn.poll(timeout):
            return "timeout"
        return worker.conn.recv()
    except (EOFError, OSError):
        return "died"


def run_cases(
    cases: Iterator[Case],
    *,
    timeout: float = DEFAULT_TIMEOUT_S,
    memory_gb: float = DEFAULT_MEMORY_GB,
    progress: Callable[[Result], None] | None = None,
    jobs: int = 1,
    pause_file: Path | None = None,
) -> list[Result]:
    """Runs each case in a worker subprocess and classifies it (see the module docstring).

    ``jobs`` workers run in parallel, each its own subprocess with the timeout and memory cap;
    the results come back sorted by case index, so they equal a ``jobs=1`` run's. While
    ``pause_file`` exists no case starts (those running finish; the workers wait idle, so no
    stage times out): a long run can make room for a benchmark on the same machine.
    """
    memory = int(memory_gb * (1 << 30))
    lock = threading.Lock()
    source = iter(cases)
    results: list[Result] = []

    def next_case() -> Case | None:
        while pause_file is not None and pause_file.exists():
            time.sleep(1.0)
        with lock:
            return next(source, None)

    def work() -> None:
        worker: _Worker | None = None
        try:
            while (case := next_case()) is not None:
                if worker is None:
                    worker = _Worker(memory)
                worker.conn.send((case.model, case.feeds))
                result, restart = _classify(case, worker, timeout)
                if restart:
                    worker.stop()
                    worker = None
                with lock:
                    results.append(result)
                    if progress is not None:
                        progress(result)
        finally:
            if worker is not None:
                try:
                    worker.conn.send(None)
                except OSError:
                    pass
                worker.stop()

    if jobs <= 1:
        work()
    else:
        errors: list[BaseException] = []

        def guarded() -> None:
            try:
                work()
            except BaseException as exc:  # noqa: BLE001 - re-raised below, in the caller's thread
                errors.append(exc)

        threads = [threading.Thread(target=guarded, name=f"fuzz-job-{i}") for i in range(jobs)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        if errors:
            raise errors[0]
    return sorted(results, key=lambda r: r.index)


def _classify(case: Case, worker: _Worker, timeout: float) -> tuple[Result, bool]:
    def result(kind: str, detail: str = "") -> Result:
        return Result(case.index, case.seed, case.mutation, kind, detail)

    ours = _receive(worker, timeout)
    if ours == "timeout":
        return result("hang", f"our compile/run took over {timeout:.0f} s"), True
    if ours == "died":
        code = worker.process.exitcode
        return result("crash", f"the worker died (exit code {code})"), True
    _, our_kind, our_detail = ours
    ort = _receive(worker, timeout)
    if not isinstance(ort, tuple):
        ort_kind, ort_detail, restart = "error", f"onnxruntime {ort}", True
    else:
        _, ort_kind, ort_detail = ort
        restart = False
    if our_kind in ("untyped", "memory"):
        return result(our_kind, our_detail), restart
    if our_kind == "internal":
        return result("internal" if ort_kind == "ok" else "both_error", our_detail), restart
    if our_kind == "typed":
        return result("typed" if ort_kind == "ok" else "both_error", our_detail), restart
    if ort_kind != "ok":
        return result("ort_error", ort_detail), restart
    compared = _receive(worker, timeout)
    if not isinstance(compared, tuple):
        return result("hang", f"comparing outputs: {compared}"), True
    if compared[1] == "same":
        return result("ok"), False
    reference = _receive(worker, timeout)
    if not isinstance(reference, tuple):
        return result("ambiguous", f"{compared[2]}; onnx.reference {reference}"), True
    if reference[1] == "agrees_with_ort":
        return result("disagree", compared[2]), False
    return result("ambiguous", f"{compared[2]}; onnx.reference: {reference[1]} {reference[2]}"), False


# Driver ----------------------------------------------------------------------------------------


def load_seeds(source: str) -> list[Seed]:
    seeds: list[Seed] = []
    if source in ("node", "all"):
        seeds += node_seeds()
    if source in ("zoo", "all"):
        seeds += zoo_seeds()
    return seeds


def fuzz(
    cases: int,
    seed: int = 0,
    *,
    first: int = 0,
    source: str = "node",
    timeout: float = DEFAULT_TIMEOUT_S,
    memory_gb: float = DEFAULT_MEMORY_GB,
    out: Path | None = None,
    progress: Callable[[Result], None] | None = None,
    jobs: int = 1,
    skip: frozenset[int] = frozenset(),
    pause_file: Path | None = None,
) -> list[Result]:
    """Runs cases ``first .. first + cases - 1`` of run ``seed`` (less those in ``skip``: a
    resumed run) on ``jobs`` workers; returns their results sorted by index. ``out``: failing
    cases are written there as replayable case files (:func:`write_case`)."""
    seeds = load_seeds(source)
    built: dict[int, Case] = {}

    def generate() -> Iterator[Case]:
        for index in range(first, first + cases):
            if index in skip:
                continue
            case = make_case(seeds, seed, index)
            built[index] = case
            yield case

    def record(result: Result) -> None:
        result.run_seed = seed
        case = built.pop(result.index)
        if out is not None and result.failed:
            write_case(out, result, case)
        if progress is not None:
            progress(result)

    return run_cases(generate(), timeout=timeout, memory_gb=memory_gb, progress=record, jobs=jobs, pause_file=pause_file)


def write_case(folder: Path, result: Result, case: Case) -> Path:
    """Writes a case as ``<class>-s<run seed>-<index>.onnx`` with its inputs (``.npz``) and its
    result (``.json``): the replay corpus format of ``tests/fuzz/corpus/``."""
    folder.mkdir(parents=True, exist_ok=True)
    run = "x" if result.run_seed is None else str(result.run_seed)
    stem = folder / f"{result.kind}-s{run}-{result.index}"
    stem.with_suffix(".onnx").write_bytes(case.model)
    np.savez(stem.with_suffix(".npz"), **case.feeds)
    stem.with_suffix(".json").write_text(json.dumps(dataclasses.asdict(result), indent=1) + "\n")
    return stem


def read_case(path: Path) -> tuple[Case, dict[str, Any]]:
    """A case written by :func:`write_case` (``path`` is its ``.onnx``) and its recorded result."""
    recorded = json.loads(path.with_suffix(".json").read_text())
    with np.load(path.with_suffix(".npz"), allow_pickle=False) as archive:
        feeds = {name: archive[name] for name in archive.files}
    case = Case(int(recorded.get("index", 0)), recorded.get("seed", path.stem), recorded.get("mutation", "none"),
                path.read_bytes(), feeds)
    return case, recorded


def summary(results: Sequence[Result], **run: Any) -> dict[str, Any]:
    """The JSON summary of a run: ``run`` (seed, first, cases, jobs, seconds ...), the counts
    per class, and the failing, internal and ambiguous cases in full."""
    counts = Counter(r.kind for r in results)
    return {
        **run,
        "cases": len(results),
        "counts": dict(sorted(counts.items())),
        "failures": [dataclasses.asdict(r) for r in results if r.failed],
        "new_failures": [dataclasses.asdict(r) for r in results if r.failed and open_disagreement(r) is None],
        "internal": [dataclasses.asdict(r) for r in results if r.kind == "internal"],
        "ambiguous": [dataclasses.asdict(r) for r in results if r.kind == "ambiguous"],
    }


def read_log(path: Path) -> list[Result]:
    """Results of a ``--log`` file (one JSON object a line); a torn last line is ignored."""
    results = []
    if not path.is_file():
        return results
    for line in path.read_text().splitlines():
        try:
            results.append(Result(**json.loads(line)))
        except (ValueError, TypeError):
            continue
    return results


def merge_logs(paths: Sequence[Path]) -> list[Result]:
    """The results of several ``--log`` files (shards of one run), one per (run seed, index)."""
    merged: dict[tuple[int | None, int], Result] = {}
    for path in paths:
        for result in read_log(path):
            merged[(result.run_seed, result.index)] = result
    return [merged[key] for key in sorted(merged, key=lambda k: (k[0] if k[0] is not None else -1, k[1]))]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--first", type=int, default=0, help="index of the first case")
    parser.add_argument("--source", choices=("node", "zoo", "all"), default="node")
    parser.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT_S, help="seconds per stage of a case")
    parser.add_argument("--memory-gb", type=float, default=DEFAULT_MEMORY_GB, help="address-space cap of each worker")
    parser.add_argument("--jobs", type=int, default=1, help="workers in parallel (results equal --jobs 1)")
    parser.add_argument("--out", "--save-failures", dest="out", type=Path,
                        help="write each failing case here as a replayable case file (tests/fuzz/corpus format)")
    parser.add_argument("--log", type=Path, help="append each case's result here (JSON lines)")
    parser.add_argument("--resume", action="store_true", help="skip the cases --log already holds")
    parser.add_argument("--merge", type=Path, nargs="+", metavar="LOG",
                        help="merge the --log files of shards into one summary (runs nothing)")
    parser.add_argument("--json", type=Path, help="write the summary here")
    parser.add_argument("--quick", action="store_true", help="100 cases")
    parser.add_argument("--pause-file", type=Path,
                        help="while this file exists no new case starts (make room for a benchmark; rm it to go on)")
    args = parser.parse_args(argv)
    if args.merge:
        results = merge_logs(args.merge)
        report = summary(results, merged=[str(p) for p in args.merge])
        print(f"{len(results)} cases merged: " + ", ".join(f"{k} {v}" for k, v in report["counts"].items()))
        if args.json:
            args.json.write_text(json.dumps(report, indent=1) + "\n")
        return 1 if report["new_failures"] else 0
    if args.resume and not args.log:
        parser.error("--resume needs --log")
    cases = 100 if args.quick else args.cases
    done = []
    if args.resume:
        in_range = range(args.first, args.first + cases)
        done = [r for r in read_log(args.log) if r.run_seed == args.seed and r.index in in_range]
    skip = frozenset(r.index for r in done)
    log = args.log.open("a") if args.log else None
    start = time.perf_counter()

    def progress(result: Result) -> None:
        if log is not None:
            log.write(json.dumps(dataclasses.asdict(result)) + "\n")
            log.flush()
        if result.failed or result.kind in ("internal", "ambiguous"):
            print(f"[{result.index}] {result.kind} {result.seed} ({result.mutation}): {result.detail}", flush=True)

    try:
        results = fuzz(cases, args.seed, first=args.first, source=args.source, timeout=args.timeout,
                       memory_gb=args.memory_gb, out=args.out, progress=progress, jobs=args.jobs, skip=skip,
                       pause_file=args.pause_file)
    finally:
        if log is not None:
            log.close()
    seconds = time.perf_counter() - start
    ran = len(results)
    results = sorted([*done, *results], key=lambda r: r.index)
    report = summary(results, seed=args.seed, first=args.first, source=args.source, jobs=args.jobs,
                     resumed=len(done), ran=ran, seconds=round(seconds, 1),
                     cases_per_second_per_job=round(ran / seconds / max(1, args.jobs), 3) if seconds else None)
    print(f"{len(results)} cases ({ran} run now in {seconds:.0f} s, {args.jobs} job(s)): "
          + ", ".join(f"{k} {v}" for k, v in report["counts"].items()))
    if args.json:
        args.json.write_text(json.dumps(report, indent=1) + "\n")
    return 1 if report["new_failures"] else 0


if __name__ == "__main__":
    sys.exit(main())
