"""Small timing helpers for the benchmark scripts (wall clock, ``time.perf_counter``)."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence
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
