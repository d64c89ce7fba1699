"""Runs the ONNX backend node suite against a compiler and says, per case, pass, fail or error.

The cases come from ``onnx.backend.test.case.node.collect_testcases`` (built in memory, cached per
process). A case passes when every data set's outputs match the reference outputs the way ONNX's
own backend runner (``onnx.backend.test.runner.Runner.assert_similar_outputs``) checks them: same
count, same shape, same dtype (strings compared exactly), then ``np.testing.assert_allclose`` with
the case's ``rtol``/``atol`` (NaN equal to NaN; bfloat16 compared in float32 with ``rtol`` at least
two bfloat16 ULPs). Two deliberate differences: a sequence output must also have the reference's
length, and an omitted optional output (``None``) must be ``None``.

Statuses: ``pass``; ``fail`` (it ran, outputs differ); ``error`` (compile or run raised, timed out,
or killed its worker process). Each result carries a one-line reason.

``run_all`` runs cases in worker processes started with ``spawn`` (JAX does not survive a fork
after it initialized). Each worker imports the compiler once and serves many cases; a case past its
timeout, or one that crashes its worker (XLA aborts), is recorded as an error and the worker is
replaced. Workers see ``JAX_PLATFORMS=cpu`` so N workers never all claim an accelerator.

The compiler is named by a spec ``"module:attribute"`` (default ``onnx_stablehlo:compile``), a
callable ``model -> compiled`` where ``compiled.run(feeds: dict[str, Any]) -> list`` returns the
graph outputs in order. ``reference_compile`` here wraps ``onnx.reference`` and exists to check the
harness itself.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
import multiprocessing
import multiprocessing.connection
import os
import re
import signal
import time
import traceback
import warnings
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any, Literal

import numpy as np
import onnx
import onnx.numpy_helper

DEFAULT_COMPILER = "onnx_stablehlo:compile"
CASE_TIMEOUT_S = 60.0
"""Seconds one case (compile and every data set) may take before it becomes ``error: timeout``."""
WORKER_START_TIMEOUT_S = 180.0
"""Seconds a fresh worker may take to import the compiler."""
MAX_CASES_PER_WORKER = 1000
"""A worker is replaced after serving this many cases, bounding whatever a compiler leaks."""
MAX_REASON_CHARS = 240

EXPECTED_FAILURES_PATH = Path(__file__).with_name("expected_failures.txt")

Status = Literal["pass", "fail", "error"]


@dataclasses.dataclass(frozen=True)
class CaseResult:
    """The outcome of one node-suite case.

    Attributes:
        name: the case name, e.g. ``test_abs``.
        status: ``pass``, ``fail`` (outputs differ) or ``error`` (raised, timed out, crashed).
        reason: one line; empty for ``pass``.
        seconds: wall time of the case (compile and all data sets), in seconds.
        missing_ops: ``domain::op_type`` of every op the compiler said it has no lowering for
            (read from the error's ``missing`` mapping, as ``UnsupportedOpError`` carries it).
        roundtrip: the round trip's status (``roundtrip.py``: pass, fail, error, skip; empty
            when the runner did not do it) and ``roundtrip_reason`` its one-line reason.
    """

    name: str
    status: Status
    reason: str = ""
    seconds: float = 0.0
    missing_ops: tuple[str, ...] = ()
    roundtrip: str = ""
    roundtrip_reason: str = ""


class HarnessError(RuntimeError):
    """The harness itself could not run (e.g. the compiler does not import in a worker)."""


# --------------------------------------------------------------------------------------------
# Cases


@functools.cache
def collect_cases() -> dict[str, Any]:
    """Builds every node test case once per process; name -> ``onnx.backend.test.case.TestCase``."""
    from onnx.backend.test.case.node import collect_testcases

    with warnings.catch_warnings():
        # The case generators compute references with numpy and overflow on purpose.
        warnings.simplefilter("ignore")
        cases = collect_testcases(None)
    return {case.name: case for case in cases}


def case_names() -> list[str]:
    """All node case names, sorted."""
    return sorted(collect_cases())


def to_runtime_value(value: Any) -> Any:
    """Converts a data-set value as ONNX's runner does: TensorProto -> ndarray (ml_dtypes for
    float8, int4, bfloat16...); numpy scalars -> 0-d arrays; lists (sequences) element-wise;
    ``None`` (an empty optional) stays ``None``."""
    if isinstance(value, onnx.TensorProto):
        return onnx.numpy_helper.to_array(value)
    if isinstance(value, (list, tuple)):
        return [to_runtime_value(item) for item in value]
    if isinstance(value, np.generic):
        return np.asarray(value)
    return value


def graph_input_names(model: onnx.ModelProto) -> list[str]:
    """The model's graph inputs that are not initializers, in order."""
    initializers = {init.name for init in model.graph.initializer}
    return [inp.name for inp in model.graph.input if inp.name not in initializers]


# --------------------------------------------------------------------------------------------
# Comparison


# Fixed-point types a float may be cast to, with their value ranges.
_FIXED_POINT_RANGES = {
    onnx.TensorProto.INT2: (-2, 1),
    onnx.TensorProto.UINT2: (0, 3),
    onnx.TensorProto.INT4: (-8, 7),
    onnx.TensorProto.UINT4: (0, 15),
    onnx.TensorProto.INT8: (-(2**7), 2**7 - 1),
    onnx.TensorProto.UINT8: (0, 2**8 - 1),
    onnx.TensorProto.INT16: (-(2**15), 2**15 - 1),
    onnx.TensorProto.UINT16: (0, 2**16 - 1),
    onnx.TensorProto.INT32: (-(2**31), 2**31 - 1),
    onnx.TensorProto.UINT32: (0, 2**32 - 1),
    onnx.TensorProto.INT64: (-(2**63), 2**63 - 1),
    onnx.TensorProto.UINT64: (0, 2**64 - 1),
}

UNDEFINED_CAST_REASON = (
    "ONNX leaves a float -> fixed-point Cast undefined out of the target's range (and for "
    "NaN/inf); the oracle's value there is whatever its ml_dtypes/numpy release computes "
    "(ml_dtypes 0.7 changed float -> int4 from wrapping to 0), so those elements are not compared"
)


def _is_float(dtype: np.dtype) -> bool:
    return dtype.kind == "f" or dtype.name.startswith(("bfloat16", "float8", "float4", "float6"))


def undefined_elements(model: onnx.ModelProto, feeds: dict[str, Any]) -> dict[int, np.ndarray]:
    """``{output index: mask of elements whose value ONNX leaves undefined}`` for one data set.

    Only a single Cast/CastLike from a float type to a fixed-point type has such elements here
    (:data:`UNDEFINED_CAST_REASON`): those whose truncated value is out of the target's range,
    or NaN/inf. Everything else is compared in full.
    """
    if len(model.graph.node) != 1:
        return {}
    node = model.graph.node[0]
    if node.op_type not in ("Cast", "CastLike") or node.domain not in ("", "ai.onnx"):
        return {}
    x = feeds.get(node.input[0])
    if not isinstance(x, np.ndarray) or not _is_float(x.dtype):
        return {}
    if node.op_type == "Cast":
        target = next(a.i for a in node.attribute if a.name == "to")
    else:
        like = feeds.get(node.input[1])
        if not isinstance(like, np.ndarray):
            return {}
        target = onnx.helper.np_dtype_to_tensor_dtype(like.dtype)
    if target not in _FIXED_POINT_RANGES:
        return {}
    low, high = _FIXED_POINT_RANGES[target]
    with np.errstate(invalid="ignore"):
        values = np.trunc(x.astype(np.float64))
        mask = ~np.isfinite(values) | (values < low) | (values > high)
    outputs = [value.name for value in model.graph.output]
    return {outputs.index(node.output[0]): mask} if mask.any() else {}


def compare_outputs(
    expected: Sequence[Any],
    actual: Sequence[Any],
    rtol: float,
    atol: float,
    undefined: dict[int, np.ndarray] | None = None,
) -> str | None:
    """Compares one data set's outputs; returns None when they match, else a one-line reason.

    ``undefined`` masks, per output index, elements the spec leaves undefined (see
    :func:`undefined_elements`); they are not compared.
    """
    if not isinstance(actual, (list, tuple)):
        return f"outputs: got {type(actual).__name__}, expected a list"
    if len(actual) != len(expected):
        return f"outputs: got {len(actual)} outputs, expected {len(expected)}"
    for index, (ref, out) in enumerate(zip(expected, actual, strict=True)):
        mask = (undefined or {}).get(index)
        if mask is not None and isinstance(out, np.ndarray) and out.shape == mask.shape:
            out = out.copy()
            out[mask] = np.asarray(ref)[mask]
        reason = _compare_value(f"output {index}", ref, out, rtol, atol)
        if reason is not None:
            return reason
    return None


def _compare_value(label: str, ref: Any, out: Any, rtol: float, atol: float) -> str | None:
    if ref is None:
        return None if out is None else f"{label}: expected an empty optional, got {_kind(out)}"
    if isinstance(ref, (list, tuple)):
        if not isinstance(out, (list, tuple)):
            return f"{label}: expected a sequence, got {_kind(out)}"
        if len(out) != len(ref):
            return f"{label}: sequence length {len(out)} != {len(ref)}"
        for j, (ref_item, out_item) in enumerate(zip(ref, out, strict=True)):
            reason = _compare_value(f"{label}[{j}]", ref_item, out_item, rtol, atol)
            if reason is not None:
                return reason
        return None
    return _compare_arrays(label, np.asarray(ref), out, rtol, atol)


def _kind(value: Any) -> str:
    if isinstance(value, np.ndarray):
        return f"ndarray {value.dtype}{list(value.shape)}"
    return type(value).__name__


def _compare_arrays(label: str, ref: np.ndarray, out: Any, rtol: float, atol: float) -> str | None:
    if isinstance(out, np.generic):
        out = np.asarray(out)
    if not isinstance(out, np.ndarray):
        return f"{label}: expected ndarray, got {_kind(out)}"
    if out.shape != ref.shape:
        return f"{label}: shape {tuple(out.shape)} != {tuple(ref.shape)}"
    if ref.dtype == object:  # strings: exact, whatever the actual string dtype
        try:
            np.testing.assert_array_equal(out, ref)
        except AssertionError:
            differ = int(np.sum(out.astype(object) != ref))
            return f"{label}: {differ}/{ref.size} strings differ"
        return None
    if out.dtype != ref.dtype:
        return f"{label}: dtype {out.dtype} != {ref.dtype}"
    if out.dtype.name == "bfloat16":
        rtol = max(rtol, 2**-6)  # two bfloat16 ULPs, as ONNX's runner
        out, ref = out.astype(np.float32), ref.astype(np.float32)
    try:
        np.testing.assert_allclose(out, ref, rtol=rtol, atol=atol)
    except AssertionError:
        return f"{label}: {_describe_mismatch(out, ref, rtol, atol)}"
    except (TypeError, ValueError) as exc:  # a dtype numpy cannot compare
        return f"{label}: cannot compare: {_one_line(exc)}"
    return None


def _describe_mismatch(out: np.ndarray, ref: np.ndarray, rtol: float, atol: float) -> str:
    a = out.astype(np.float64)
    r = ref.astype(np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        bad = ~np.isclose(a, r, rtol=rtol, atol=atol, equal_nan=True)
        finite_bad = bad & np.isfinite(a) & np.isfinite(r)
        count = f"{int(bad.sum())}/{ref.size} elements differ"
        if finite_bad.any():
            diff = float(np.max(np.abs(a - r)[finite_bad]))
            return f"max abs diff {diff:.3g} > tol ({count}, rtol={rtol:g}, atol={atol:g})"
    if bad.any():
        return f"NaN/inf mismatch ({count})"
    return f"not close at its own precision (rtol={rtol:g}, atol={atol:g})"


# --------------------------------------------------------------------------------------------
# Running one case


def _one_line(exc: BaseException) -> str:
    """``Type: first line of the message`` (with the second line when the first ends in ':')."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    if not lines:
        return type(exc).__name__
    first = lines[0]
    if first.endswith(":") and len(lines) > 1:
        first = f"{first} {lines[1]}"
    return _clip(f"{type(exc).__name__}: {first}")


def _clip(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= MAX_REASON_CHARS else text[: MAX_REASON_CHARS - 3] + "..."


def _missing_ops(exc: Exception) -> tuple[str, ...]:
    missing = getattr(exc, "missing", None)
    if not isinstance(missing, dict):
        return ()
    return tuple(sorted({f"{key[0] or 'ai.onnx'}::{key[1]}" for key in missing}))


def resolve_compiler(spec: str) -> Callable[[onnx.ModelProto], Any]:
    """Imports ``"module:attribute"`` and returns the callable."""
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise ValueError(f"compiler spec must be 'module:attribute', got {spec!r}")
    target: Any = importlib.import_module(module_name)
    for part in attr.split("."):
        target = getattr(target, part)
    return target


def run_test_case(case: Any, compile_fn: Callable[[onnx.ModelProto], Any]) -> CaseResult:
    """Compiles ``case.model`` once and checks every data set; never raises for a case problem."""
    start = time.perf_counter()

    def result(status: Status, reason: str = "", missing: tuple[str, ...] = ()) -> CaseResult:
        seconds = round(time.perf_counter() - start, 3)
        return CaseResult(case.name, status, reason, seconds, missing)

    try:
        compiled = compile_fn(case.model)
    except Exception as exc:  # a case outcome, reported as such
        return result("error", _one_line(exc), _missing_ops(exc))
    names = graph_input_names(case.model)
    for index, (inputs, ref_outputs) in enumerate(case.data_sets):
        feeds = {
            name: to_runtime_value(value) for name, value in zip(names, inputs, strict=False)
        }
        expected = [to_runtime_value(value) for value in ref_outputs]
        try:
            outputs = compiled.run(feeds)
        except Exception as exc:
            return result("error", _one_line(exc))
        undefined = undefined_elements(case.model, feeds)
        reason = compare_outputs(expected, outputs, case.rtol, case.atol, undefined)
        if reason is not None:
            if len(case.data_sets) > 1:
                reason = f"data set {index}: {reason}"
            return result("fail", _clip(reason))
    return result("pass")


def run_case(name: str, compile_fn: Callable[[onnx.ModelProto], Any] | None = None) -> CaseResult:
    """Runs one node case in this process (no timeout); the compiler defaults to ours."""
    if compile_fn is None:
        compile_fn = resolve_compiler(DEFAULT_COMPILER)
    return run_test_case(collect_cases()[name], compile_fn)


class _ReferenceCompiled:
    def __init__(self, model: onnx.ModelProto):
        from onnx.reference import ReferenceEvaluator

        self._session = ReferenceEvaluator(model)

    def run(self, feeds: dict[str, Any]) -> list[Any]:
        return list(self._session.run(None, feeds))


def reference_compile(model: onnx.ModelProto) -> _ReferenceCompiled:
    """A stand-in compiler over ``onnx.reference``, for checking the harness (not a backend)."""
    return _ReferenceCompiled(model)


# --------------------------------------------------------------------------------------------
# Running many cases in worker processes


def result_from_row(row: Sequence[Any]) -> CaseResult:
    """Inverse of ``dataclasses.astuple`` (also for rows read back from JSON)."""
    name, status, reason, seconds, missing_ops, *trip = row
    return CaseResult(name, status, reason, seconds, tuple(missing_ops), *trip)


RUN_TEST_CASE = f"{__name__}:run_test_case"


def _worker_main(conn: multiprocessing.connection.Connection, compiler: str, runner: str) -> None:
    os.environ["JAX_PLATFORMS"] = "cpu"
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")  # XLA would log each failure again
    warnings.simplefilter("ignore")  # cases feed NaN, inf and overflowing values on purpose
    try:
        compile_fn = resolve_compiler(compiler)
        run = resolve_compiler(runner)
    except BaseException as exc:
        conn.send(("import-error", f"{_one_line(exc)}\n{traceback.format_exc()}"))
        return
    conn.send(("ready", None))
    while True:
        message = conn.recv()
        if message is None:
            return
        result = run(message, compile_fn)
        conn.send(("result", dataclasses.astuple(result)))


@dataclasses.dataclass
class _Worker:
    process: Any
    conn: multiprocessing.connection.Connection
    started: float
    ready: bool = False
    case: str | None = None
    deadline: float = 0.0
    served: int = 0

    def stop(self, kill: bool = False) -> None:
        if kill or not self.ready:
            self.process.kill()
        else:
            try:
                self.conn.send(None)
            except OSError:
                self.process.kill()
        self.process.join(timeout=10)
        if self.process.is_alive():
            self.process.kill()
            self.process.join()
        self.conn.close()


def _death_reason(exitcode: int | None) -> str:
    if exitcode is not None and exitcode < 0:
        try:
            return f"worker died ({signal.Signals(-exitcode).name})"
        except ValueError:
            pass
    return f"worker died (exit code {exitcode})"


def run_all(
    names: Iterable[str] | None = None,
    processes: int | None = None,
    *,
    compiler: str = DEFAULT_COMPILER,
    timeout_s: float = CASE_TIMEOUT_S,
    max_cases_per_worker: int = MAX_CASES_PER_WORKER,
    on_result: Callable[[Any, int, int], None] | None = None,
    runner: str = RUN_TEST_CASE,
    from_row: Callable[[Sequence[Any]], Any] = result_from_row,
    lost: Callable[[str, str, float], Any] | None = None,
) -> list[Any]:
    """Runs the named cases (default: all) in ``processes`` workers; results in ``names`` order.

    Args:
        names: case names; unknown names raise KeyError before anything starts.
        processes: worker count (default ``os.cpu_count()``); 0 runs in this process, without
            timeouts or crash isolation (for debugging).
        compiler: ``"module:attribute"`` of the compile callable, imported once per worker.
        timeout_s: seconds per case (compile and all data sets) before ``error: timeout``.
        max_cases_per_worker: cases a worker serves before it is replaced.
        on_result: called as ``on_result(result, done, total)`` after each case.
        runner: ``"module:function"`` run as ``function(case, compile_fn)`` in the workers; it
            returns a dataclass whose first field is the case name (default: ``run_test_case``,
            the pass/fail check; ``dynamic.py`` runs its symbolic-dims check the same way).
        from_row: rebuilds a runner's result from ``dataclasses.astuple`` of it.
        lost: the result of a case whose worker died or timed out, from
            ``(name, reason, seconds)`` (default: a ``CaseResult`` with status ``error``).

    Raises:
        HarnessError: a worker could not import the compiler or start.
    """
    cases = collect_cases()
    names = list(case_names() if names is None else names)
    for name in names:
        if name not in cases:
            raise KeyError(f"no node test case named {name!r}")
    total = len(names)
    results: dict[str, CaseResult] = {}

    def record(result: CaseResult) -> None:
        results[result.name] = result
        if on_result is not None:
            on_result(result, len(results), total)

    if processes is None:
        processes = os.cpu_count() or 1
    if lost is None:
        lost = lambda name, reason, seconds: CaseResult(name, "error", reason, seconds)  # noqa: E731
    if processes == 0:
        compile_fn, run = resolve_compiler(compiler), resolve_compiler(runner)
        for name in names:
            record(run(cases[name], compile_fn))
        return [results[name] for name in names]

    context = multiprocessing.get_context("spawn")
    pending = list(reversed(dict.fromkeys(names)))  # pop() from the end keeps the given order
    workers: list[_Worker] = []

    def start_worker() -> _Worker:
        parent_conn, child_conn = context.Pipe()
        process = context.Process(
            target=_worker_main, args=(child_conn, compiler, runner), daemon=True, name="node-suite"
        )
        process.start()
        child_conn.close()
        worker = _Worker(process, parent_conn, time.monotonic())
        workers.append(worker)
        return worker

    def retire(worker: _Worker, kill: bool = False) -> None:
        workers.remove(worker)
        worker.stop(kill=kill)

    def dispatch(worker: _Worker) -> None:
        if worker.served >= max_cases_per_worker:
            retire(worker)
            if pending:
                start_worker()
            return
        if not pending:
            retire(worker)
            return
        name = pending.pop()
        try:
            worker.conn.send(cases[name])
        except OSError:  # it died after sending its last result; the case never reached it
            pending.append(name)
            retire(worker, kill=True)
            start_worker()
            return
        worker.case = name
        worker.deadline = time.monotonic() + timeout_s

    try:
        for _ in range(min(processes, len(pending))):
            start_worker()
        while workers:
            now = time.monotonic()
            deadlines = [
                w.deadline if w.ready else w.started + WORKER_START_TIMEOUT_S for w in workers
            ]
            ready = multiprocessing.connection.wait(
                [w.conn for w in workers] + [w.process.sentinel for w in workers],
                timeout=max(0.0, min(deadlines) - now),
            )
            for worker in list(workers):
                if worker not in workers:
                    continue
                message = None
                if worker.conn in ready or worker.process.sentinel in ready:
                    try:
                        if worker.conn.poll():
                            message = worker.conn.recv()
                    except (EOFError, OSError):
                        message = None
                if message is not None:
                    kind, payload = message
                    if kind == "import-error":
                        raise HarnessError(f"worker could not import {compiler!r}: {payload}")
                    if kind == "ready":
                        worker.ready = True
                    else:
                        record(from_row(payload))
                        worker.case = None
                        worker.served += 1
                    dispatch(worker)
                    continue
                died = worker.process.sentinel in ready and not worker.process.is_alive()
                late = time.monotonic() > (
                    worker.deadline if worker.ready else worker.started + WORKER_START_TIMEOUT_S
                )
                if not (died or late):
                    continue
                if not worker.ready:
                    raise HarnessError(
                        f"worker did not start: {_death_reason(worker.process.exitcode)}"
                        if died
                        else f"worker did not import {compiler!r} in {WORKER_START_TIMEOUT_S} s"
                    )
                name = worker.case
                retire(worker, kill=True)
                if name is not None:
                    reason = (
                        _death_reason(worker.process.exitcode)
                        if died
                        else f"timeout after {timeout_s:g} s"
                    )
                    record(lost(name, reason, round(timeout_s if late else 0, 3)))
                if pending:
                    start_worker()
    finally:
        for worker in list(workers):
            retire(worker, kill=True)
    return [results[name] for name in names]


# --------------------------------------------------------------------------------------------
# The expected-failures file


def describe_list_change(label: str, old: dict[str, str], new: dict[str, str], gone_word: str) -> str:
    """``label: 58 -> 57 (1 <gone_word>, 0 new)`` plus a line per new entry, for the list tools."""
    gone = sorted(set(old) - set(new))
    added = sorted(set(new) - set(old))
    lines = [f"{label}: {len(old)} -> {len(new)} ({len(gone)} {gone_word}, {len(added)} new)"]
    lines += [f"  new: {name}  # {new[name]}" for name in added]
    return "\n".join(lines)


def read_expected_failures(path: Path = EXPECTED_FAILURES_PATH) -> dict[str, str]:
    """Parses ``name  # reason`` lines (``#`` lines and blank lines skipped); name -> reason.

    Raises:
        ValueError: a line without a name, without a reason, or a name listed twice.
    """
    entries: dict[str, str] = {}
    for number, raw in enumerate(path.read_text().splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        name, sep, reason = line.partition("#")
        name, reason = name.strip(), reason.strip()
        if not name or " " in name:
            raise ValueError(f"{path.name}:{number}: expected 'case_name  # reason', got {raw!r}")
        if not sep or not reason:
            raise ValueError(f"{path.name}:{number}: {name} has no reason")
        if name in entries:
            raise ValueError(f"{path.name}:{number}: {name} is listed twice")
        entries[name] = reason
    return entries


EXPECTED_FAILURES_HEADER = """\
# ONNX backend node-suite cases (onnx {onnx_version}) that do not pass, one per line:
#   case_name  # reason
# Regenerate with: python tools/update_expected_failures.py
# tests/conformance/test_node_suite.py fails when a listed case passes, so this file only shrinks.
"""


def format_expected_failures(entries: dict[str, str]) -> str:
    """The file text for ``entries`` (name -> reason), sorted by name."""
    width = max((len(name) for name in entries), default=0)
    lines = [f"{name:<{width}}  # {entries[name]}" for name in sorted(entries)]
    header = EXPECTED_FAILURES_HEADER.format(onnx_version=onnx.__version__)
    return header + "".join(line + "\n" for line in lines)


_GROUP_PATTERNS = [
    (re.compile(r"'[^']*'"), "'...'"),
    (re.compile(r'"[^"]*"'), '"..."'),
    (re.compile(r"\btensor<[^>]*>"), "tensor<...>"),
    (re.compile(r"\(\d+(, \d+)*,?\)"), "(shape)"),
    (re.compile(r"\b\d+(\.\d+)?(e[-+]?\d+)?\b"), "N"),
]


def reason_group(reason: str) -> str:
    """The reason with names, numbers and shapes blanked, so similar failures group together."""
    reason = re.sub(r"^data set \d+: ", "", reason)
    for pattern, replacement in _GROUP_PATTERNS:
        reason = pattern.sub(replacement, reason)
    return reason


def summarize(results: Sequence[CaseResult], top: int = 40) -> str:
    """Counts by status, then the ``top`` most common failure groups (see ``reason_group``)."""
    statuses = Counter(result.status for result in results)
    lines = [
        f"{statuses['pass']}/{len(results)} pass, {statuses['fail']} fail, "
        f"{statuses['error']} error"
    ]
    groups = Counter(reason_group(r.reason) for r in results if r.status != "pass")
    lines.append("failure reasons, grouped (cases):")
    for group, count in groups.most_common(top):
        lines.append(f"{count:6d}  {group}")
    if len(groups) > top:
        lines.append(f"        ... {len(groups) - top} more groups")
    needed = Counter(op for r in results for op in r.missing_ops)
    alone = Counter(r.missing_ops[0] for r in results if len(r.missing_ops) == 1)
    if needed:
        lines.append("missing lowerings: cases needing it | cases missing only it")
        for op, count in needed.most_common(top):
            lines.append(f"{count:6d} {alone[op]:6d}  {op}")
        if len(needed) > top:
            lines.append(f"        ... {len(needed) - top} more ops")
    return "\n".join(lines)
