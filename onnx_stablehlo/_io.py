"""Atomic file writes: write to a temporary file in the same folder, then rename over the target.

A crash or an error half-way leaves the old file (or none) in place, never a truncated one.
"""

from __future__ import annotations

import contextlib
import io
import os
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path

import numpy as np

__all__ = ["atomic_writer", "atomic_write_bytes", "atomic_write_text", "atomic_write_npz"]


@contextlib.contextmanager
def atomic_writer(path: Path) -> Iterator[io.BufferedWriter]:
    """Yields a binary file that replaces ``path`` only if the block finishes without error."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(tmp, 0o666 & ~umask)  # mkstemp creates 0600; give the file the usual mode
    try:
        with os.fdopen(fd, "wb") as handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def atomic_write_bytes(path: Path, data: bytes) -> None:
    with atomic_writer(path) as handle:
        handle.write(data)


def atomic_write_text(path: Path, text: str) -> None:
    atomic_write_bytes(path, text.encode())


def atomic_write_npz(path: Path, arrays: Mapping[str, np.ndarray]) -> None:
    with atomic_writer(path) as handle:
        np.savez(handle, **arrays)
