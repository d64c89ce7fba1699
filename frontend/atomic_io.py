"""Atomic file writes: write to a temporary file in the same folder, then rename over the target.

A crash or an error half-way leaves the old file (or none) in place, never a truncated one.
The temporary file is named ``.<target>.<pid>.<random>.tmp``; a writer killed before it could
remove it leaves it behind, and the next write to the same target removes every such file
whose process is gone (:func:`sweep_stale`), so debris never outlives the next save.

It sits below the runtime (checkpoints and ``save_onnx`` write through it); ``onnx_stablehlo._io``
re-exports it under its former name.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import tempfile
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from onnx_stablehlo.errors import InvalidOptionError, WriteError

__all__ = [
    "as_path",
    "output_path",
    "atomic_writer",
    "atomic_write_bytes",
    "atomic_write_text",
    "atomic_write_npz",
    "pid_alive",
    "sweep_stale",
]


def pid_alive(pid: int) -> bool:
    """Whether a process ``pid`` exists on this machine (ours counts as alive)."""
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError, ValueError):
        return pid > 0  # exists but belongs to someone else (or a bogus pid we leave alone)
    return True


_LEGACY_AGE_S = 3600.0


def sweep_stale(path: Path) -> list[Path]:
    """Removes temporary files ``.<path name>.<pid>.<random>.tmp`` of writers that are gone.

    Returns the removed paths. Files of live processes (a concurrent writer) are kept.
    """
    path = Path(path)
    pattern = re.compile(rf"^\.{re.escape(path.name)}\.(\d+)\.[A-Za-z0-9_]+\.tmp$")
    # Before the pid was part of the name: ".<name>.<8 random>.tmp", removed once an hour old.
    legacy = re.compile(rf"^\.{re.escape(path.name)}\.[a-z0-9_]{{8}}\.tmp$")
    removed = []
    try:
        entries = list(os.scandir(path.parent))
    except OSError:
        return removed
    for entry in entries:
        match = pattern.match(entry.name)
        stale = match is not None and not pid_alive(int(match.group(1)))
        if not stale and legacy.match(entry.name):
            with contextlib.suppress(OSError):
                stale = time.time() - entry.stat().st_mtime > _LEGACY_AGE_S
        if stale:
            with contextlib.suppress(OSError):
                os.unlink(entry.path)
                removed.append(Path(entry.path))
    return removed


def as_path(path: Any, where: str, name: str = "path") -> Path:
    """``path`` (a ``str`` or ``os.PathLike``) as a :class:`Path`.

    Args:
        where, name: the function and argument, for the message (``"Trainer.save_checkpoint"``,
            ``"path"``).

    Raises:
        InvalidOptionError: ``path`` is not a ``str`` or ``os.PathLike`` (``None``, an int, bytes).
    """
    if isinstance(path, (str, os.PathLike)):
        try:
            return Path(path)
        except TypeError:  # an os.PathLike whose __fspath__ gives bytes
            pass
    shown = repr(path) if len(repr(path)) <= 60 else repr(path)[:57] + "..."
    raise InvalidOptionError(f"{where}: {name} must be a path (str or os.PathLike), got {type(path).__name__} {shown}")


def output_path(path: Any, where: str, name: str = "path") -> Path:
    """``path`` as a :class:`Path` to write a file to, checked before any work is done: the
    folder it names must exist (nothing creates folders) and the path must not be a folder.

    Raises:
        InvalidOptionError: ``path`` is not a ``str`` or ``os.PathLike``.
        WriteError: ``path`` is a folder, or its folder does not exist or is not a folder.
    """
    target = as_path(path, where, name)
    if target.is_dir():
        raise WriteError(f"cannot write {target}: it is a folder")
    _check_folder(target)
    return target


def _check_folder(path: Path) -> None:
    folder = path.parent
    if not folder.is_dir():
        why = "is not a folder" if folder.exists() else "does not exist"
        raise WriteError(f"cannot write {path}: the folder {folder} {why} (folders are not created)")


@contextlib.contextmanager
def atomic_writer(path: Path) -> Iterator[io.BufferedWriter]:
    """Yields a binary file that replaces ``path`` only if the block finishes without error.

    The folder of ``path`` must exist: it is not created.

    Raises:
        WriteError: ``path`` is a folder, or its folder does not exist or cannot be written.
    """
    path = Path(path)
    if path.is_dir():
        raise WriteError(f"cannot write {path}: it is a folder")
    _check_folder(path)
    try:
        sweep_stale(path)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.{os.getpid()}.", suffix=".tmp", dir=path.parent)
    except OSError as exc:
        raise WriteError(f"cannot write {path}: {exc.strerror or exc}") from exc
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(tmp, 0o666 & ~umask)  # mkstemp creates 0600; give the file the usual mode
    try:
        with os.fdopen(fd, "wb") as handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException as exc:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        if isinstance(exc, OSError):
            raise WriteError(f"cannot write {path}: {exc.strerror or exc}") from exc
        raise


def atomic_write_bytes(path: Path, data: bytes) -> None:
    with atomic_writer(path) as handle:
        handle.write(data)


def atomic_write_text(path: Path, text: str) -> None:
    atomic_write_bytes(path, text.encode())


def atomic_write_npz(path: Path, arrays: Mapping[str, np.ndarray]) -> None:
    with atomic_writer(path) as handle:
        np.savez(handle, **arrays)
