"""Small timing helpers for the benchmark scripts (wall clock, ``time.perf_counter``)."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any


class Stopwatch:
    """Context manager measuring the wall time of its body in seconds.

    >>> with Stopwatch() as sw:
    ...     pass
    >>> sw.seconds >= 0.0
    True
    """

    def __init__(self) -> None:
        self.seconds = float("nan")
        self._start = 0.0

    def __enter__(self) -> Stopwatch:
        self._start = time.perf_counter()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.seconds = time.perf_counter() - self._start


def timed(fn: Callable[[], Any]) -> tuple[Any, float]:
    """Calls ``fn()`` once; returns its result and the wall time in seconds."""
    with Stopwatch() as sw:
        result = fn()
    return result, sw.seconds


def sample_seconds(fn: Callable[[], Any], reps: int, warmup: int = 2) -> list[float]:
    """Times ``reps`` calls of ``fn`` after ``warmup`` untimed calls.

    Args:
        fn: The call to time; its result is discarded.
        reps: Timed calls, at least 1.
        warmup: Untimed calls made first (JIT, caches, thread pools).

    Returns:
        Wall time of each timed call, in seconds.

    Raises:
        ValueError: ``reps`` < 1 or ``warmup`` < 0.
    """
    if reps < 1 or warmup < 0:
        raise ValueError(f"need reps >= 1 and warmup >= 0, got reps={reps}, warmup={warmup}")
    for _ in range(warmup):
        fn()
    samples = []
    for _ in range(reps):
        _, seconds = timed(fn)
        samples.append(seconds)
    return samples


def median_seconds(fn: Callable[[], Any], reps: int, warmup: int = 2) -> float:
    """Median wall time of ``fn`` in seconds (see :func:`sample_seconds`)."""
    return statistics.median(sample_seconds(fn, reps, warmup))


def per_call_ms(fn: Callable[[], Any], calls: int) -> float:
    """Mean wall time of ``calls`` back-to-back calls of ``fn``, in milliseconds (one round of
    the interleaved rounds the bench scripts take medians of)."""
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    return (time.perf_counter() - start) / calls * 1e3


def format_ms(seconds: float, digits: int = 2) -> str:
    """Formats seconds as milliseconds, e.g. ``0.01234 -> '12.34'``; NaN prints as ``n/a``."""
    return "n/a" if seconds != seconds else f"{seconds * 1e3:.{digits}f}"


def format_s(seconds: float, digits: int = 2) -> str:
    """Formats seconds, e.g. ``1.234 -> '1.23'``; NaN prints as ``n/a``."""
    return "n/a" if seconds != seconds else f"{seconds:.{digits}f}"


def markdown_table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """Renders a GitHub markdown table with right-aligned columns after the first.

    >>> print(markdown_table(["a", "b"], [["x", "1"]]))
    | a | b |
    |:--|--:|
    | x | 1 |
    """
    lines = ["| " + " | ".join(headers) + " |", "|:--|" + "--:|" * (len(headers) - 1)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def executable_only(model: Any, on_device: Mapping[str, Any]) -> Callable[[], None]:
    """A call of ``model``'s executable alone: the call plan's executor (what ``run`` repeats,
    ``runtime/call_plan.py``) on inputs already on the device, with its device-resident weights,
    waiting for every result; no feed checks, transfers or copies to the host.

    Args:
        model: A ``CompiledModel`` whose ``run`` has been called once with these input
            shapes (that call builds the plan).
        on_device: Each graph input's device array (``model.to_device``), by name.

    Raises:
        ValueError: ``model`` has no call plan yet.
    """
    plan = model._plan
    if plan is None:
        raise ValueError("call model.run once before timing its executable alone")
    arguments = [on_device[name] for name in plan.order] + plan.constants

    def call() -> None:
        for out in plan._execute(arguments):
            out.block_until_ready()

    return call


def ort_session(model: Any, device: str = "cpu", threads: int = 2, *, sequential: bool = False, quiet: bool = False):
    """The onnxruntime ``InferenceSession`` a bench script compares against, on ``device``.

    Args:
        model: A path (``str`` or ``Path``), the serialized bytes, or an ``onnx.ModelProto``.
        device: ``"cpu"``: the CPU execution provider with ``threads`` intra-op threads;
            ``"cuda"``: the CUDA execution provider (the ``onnxruntime-gpu`` wheel).
        threads: ``intra_op_num_threads``.
        sequential: one inter-op thread and ``ORT_SEQUENTIAL`` execution.
        quiet: log errors only (``log_severity_level=3``).

    Returns:
        The session, checked to run on the requested provider.

    Raises:
        SystemExit: ``device`` is ``"cuda"`` and this onnxruntime has no CUDA execution
            provider, or the session did not take it. onnxruntime itself only warns and falls
            back to its CPU provider, so every ratio would silently compare against CPU.
        ValueError: ``device`` is neither ``"cpu"`` nor ``"cuda"``.
    """
    import onnxruntime as ort

    providers = {"cpu": "CPUExecutionProvider", "cuda": "CUDAExecutionProvider"}
    if device not in providers:
        raise ValueError(f"device must be 'cpu' or 'cuda', got {device!r}")
    provider = providers[device]
    if provider not in ort.get_available_providers():
        raise SystemExit(
            f"onnxruntime {ort.__version__} has no {provider} (available: "
            f"{', '.join(ort.get_available_providers())}); for --device {device} install the "
            "onnxruntime-gpu wheel of the same version in place of onnxruntime"
        )
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    if sequential:
        options.inter_op_num_threads = 1
        options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    if quiet:
        options.log_severity_level = 3
    if hasattr(model, "SerializeToString"):
        model = model.SerializeToString()
    session = ort.InferenceSession(model if isinstance(model, bytes) else str(model), options, providers=[provider])
    if session.get_providers()[:1] != [provider]:
        raise SystemExit(f"onnxruntime did not take {provider} for this model (it runs on {session.get_providers()})")
    return session
