"""A persistent, on-disk cache of compiled PJRT executables.

XLA compiles MiniLM in about 0.4 s on a quiet 2-core machine (seconds on a busy one), and
every new process paid it again. ``pjrt.compile_module`` looks a module up here first and
stores what it compiled, so a second process deserializes the executable (milliseconds).

Key: SHA-256 of the module that is compiled (StableHLO text or MLIR bytecode) together with
everything else that changes the machine code: platform, device index and kind, the PJRT platform
version, the jaxlib version, ``XLA_FLAGS``, the host CPU (machine and ``/proc/cpuinfo`` flags: XLA
CPU code uses the host's vector instructions) and the entry format version. Two processes that
compile the same module with the same toolchain on the same kind of machine share one entry.

Entries: ``<key>.xla`` files, written to a temporary file in the same folder and renamed into
place (``os.replace``), so a reader never sees half an entry and concurrent writers of one key
leave one whole entry. Each entry starts with a magic string and the SHA-256 of its payload: a
truncated or corrupt entry fails the check (or PJRT's own parser) and is deleted and rebuilt.
A hit touches the file's mtime; when the folder grows past ``max_bytes`` the least recently
used entries are deleted, down to 7/8 of the cap (so a full cache does not scan on every store).

Eviction scans the folder (a stat per entry: about 30 ms per thousand entries), so a store does
not scan every time: it keeps the total it last scanned plus what it wrote since, together with
the folder's mtime after its own write. It scans again when that total would pass the cap, when
the folder's mtime shows that someone else added or deleted an entry, and at least every
``_RESCAN_EVERY`` stores (mtimes are coarse, so a change in the same clock tick can hide).

Settings (read when the process first compiles, or given to :class:`ExecutableCache`):

- ``ONNX_STABLEHLO_EXECUTABLE_CACHE``: the folder (default ``$ONNX_STABLEHLO_CACHE/executables``
  when that variable, the model builders' cache folder, is set, else
  ``~/.cache/onnx-stablehlo/executables``, or under ``$XDG_CACHE_HOME``); ``0``, ``off`` or
  ``none`` turns the cache off.
- ``ONNX_STABLEHLO_EXECUTABLE_CACHE_BYTES``: the size cap in bytes (default 2 GiB).

This module does not import jaxlib: ``runtime/pjrt.py`` serializes and deserializes.
"""

from __future__ import annotations

import functools
import hashlib
import os
import platform
import tempfile
import threading
from collections.abc import Iterable
from pathlib import Path

__all__ = [
    "ENV_DIRECTORY",
    "ENV_MAX_BYTES",
    "DEFAULT_MAX_BYTES",
    "ExecutableCache",
    "default_cache",
    "host_fingerprint",
]

ENV_DIRECTORY = "ONNX_STABLEHLO_EXECUTABLE_CACHE"
ENV_MAX_BYTES = "ONNX_STABLEHLO_EXECUTABLE_CACHE_BYTES"
DEFAULT_MAX_BYTES = 2 << 30
"""Default size cap of the cache folder, in bytes."""

_MAGIC = b"onnx-stablehlo executable v1\n"
_SUFFIX = ".xla"
_DIGEST_BYTES = 32
_OFF = ("0", "off", "none", "false", "no")
_RESCAN_EVERY = 64


class ExecutableCache:
    """Serialized executables in one folder, keyed by a SHA-256 hex digest.

    Args:
        directory: the folder; created on the first store.
        max_bytes: size cap of the folder's entries, in bytes; least recently used go first.

    Thread- and process-safe: writes are atomic renames, reads verify a checksum, and a file
    deleted by another process in between is a miss.

    Attributes:
        hits, misses, stores, corrupt: counters for this object (this process only).
    """

    def __init__(self, directory: str | os.PathLike[str], max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        if max_bytes < 0:
            raise ValueError(f"max_bytes must be >= 0, got {max_bytes}")
        self.directory = Path(directory).expanduser()
        self.max_bytes = int(max_bytes)
        self.hits = 0
        self.misses = 0
        self.stores = 0
        self.corrupt = 0
        self._lock = threading.Lock()
        self._scan_lock = threading.Lock()
        self._scanned: tuple[int, int] | None = None  # (total bytes, folder mtime_ns) after our last change
        self._stores_since_scan = 0

    def __repr__(self) -> str:
        return f"ExecutableCache({str(self.directory)!r}, max_bytes={self.max_bytes})"

    @staticmethod
    def key(module: str | bytes, parts: Iterable[str]) -> str:
        """The entry key of ``module`` (StableHLO text or MLIR bytecode) compiled under
        ``parts`` (toolchain, device, flags)."""
        digest = hashlib.sha256(_MAGIC)
        for part in parts:
            encoded = part.encode()
            digest.update(len(encoded).to_bytes(8, "little"))
            digest.update(encoded)
        digest.update(module.encode() if isinstance(module, str) else bytes(module))
        return digest.hexdigest()

    def path(self, key: str) -> Path:
        return self.directory / (key + _SUFFIX)

    def load(self, key: str) -> bytes | None:
        """The payload stored under ``key``, or None (absent or corrupt: a corrupt entry is deleted)."""
        path = self.path(key)
        try:
            data = path.read_bytes()
        except OSError:
            self._count("misses")
            return None
        payload = _unwrap(data)
        if payload is None:
            self.discard(key)
            self._count("misses")
            return None
        try:
            os.utime(path)  # least recently used is evicted first
        except OSError:
            pass
        self._count("hits")
        return payload

    def discard(self, key: str) -> None:
        """Deletes the entry of ``key`` (a corrupt or unusable one); absent is fine."""
        self._count("corrupt")
        try:
            self.path(key).unlink()
        except OSError:
            pass

    def store(self, key: str, payload: bytes) -> bool:
        """Writes ``payload`` under ``key`` atomically, then evicts down to ``max_bytes``.

        Returns whether the entry was written (an entry larger than the cap, or a folder that
        cannot be written, is skipped: the cache never makes a compile fail).
        """
        data = _MAGIC + hashlib.sha256(payload).digest() + payload
        if len(data) > self.max_bytes:
            return False
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            before = self._folder_mtime()
            fd, temporary = tempfile.mkstemp(prefix=".tmp-", suffix=_SUFFIX, dir=self.directory)
            try:
                with os.fdopen(fd, "wb") as file:
                    file.write(data)
                os.replace(temporary, self.path(key))
            except BaseException:
                try:
                    os.unlink(temporary)
                except OSError:
                    pass
                raise
        except OSError:
            return False
        self._count("stores")
        with self._scan_lock:
            scanned = self._scanned
            self._stores_since_scan += 1
            if (
                scanned is None
                or scanned[1] != before
                or scanned[0] + len(data) > self.max_bytes
                or self._stores_since_scan >= _RESCAN_EVERY
            ):
                self._evict_locked()
            else:  # only our own write changed the folder since the last scan
                self._scanned = (scanned[0] + len(data), self._folder_mtime())
        return True

    def _folder_mtime(self) -> int:
        try:
            return os.stat(self.directory).st_mtime_ns
        except OSError:
            return -1

    def entries(self) -> list[tuple[Path, int, float]]:
        """``(path, size in bytes, mtime)`` of every entry, oldest first."""
        found = []
        try:
            with os.scandir(self.directory) as scan:
                for item in scan:
                    if not item.name.endswith(_SUFFIX) or item.name.startswith(".tmp-"):
                        continue
                    try:
                        stat = item.stat()
                    except OSError:
                        continue
                    found.append((Path(item.path), stat.st_size, stat.st_mtime))
        except OSError:
            return []
        found.sort(key=lambda entry: entry[2])
        return found

    def size_bytes(self) -> int:
        """Total size of the entries, in bytes."""
        return sum(size for _, size, _ in self.entries())

    def evict(self) -> int:
        """Deletes least recently used entries until the folder fits ``max_bytes``, or down to 7/8 of
        it once it had to delete; returns how many."""
        with self._scan_lock:
            return self._evict_locked()

    def _evict_locked(self) -> int:
        entries = self.entries()
        total = sum(size for _, size, _ in entries)
        removed = 0
        target = self.max_bytes if total <= self.max_bytes else self.max_bytes - self.max_bytes // 8
        for path, size, _ in entries:
            if total <= target:
                break
            try:
                path.unlink()
                removed += 1
            except OSError:
                pass  # another process evicted it first
            total -= size
        self._scanned = (total, self._folder_mtime())
        self._stores_since_scan = 0
        return removed

    def clear(self) -> None:
        """Deletes every entry."""
        with self._scan_lock:
            self._scanned = None
        for path, _, _ in self.entries():
            try:
                path.unlink()
            except OSError:
                pass

    def _count(self, name: str) -> None:
        with self._lock:
            setattr(self, name, getattr(self, name) + 1)


def _unwrap(data: bytes) -> bytes | None:
    head = len(_MAGIC) + _DIGEST_BYTES
    if len(data) < head or not data.startswith(_MAGIC):
        return None
    payload = data[head:]
    if hashlib.sha256(payload).digest() != data[len(_MAGIC):head]:
        return None
    return payload


@functools.cache
def host_fingerprint() -> str:
    """The host CPU as XLA CPU code depends on it: machine and the instruction-set flags."""
    flags = ""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as cpuinfo:
            for line in cpuinfo:
                if line.startswith(("flags", "Features")):
                    flags = " ".join(sorted(line.split(":", 1)[1].split()))
                    break
    except OSError:
        flags = platform.processor()
    return f"{platform.machine()} {hashlib.sha256(flags.encode()).hexdigest()[:16]}"


_default: list[ExecutableCache | None] = []
_default_lock = threading.Lock()


def default_cache() -> ExecutableCache | None:
    """The process's cache from the environment (read once), or None when it is turned off."""
    with _default_lock:
        if not _default:
            _default.append(_from_environment())
        return _default[0]


def _from_environment() -> ExecutableCache | None:
    setting = os.environ.get(ENV_DIRECTORY, "").strip()
    if setting.lower() in _OFF:
        return None
    project = os.environ.get("ONNX_STABLEHLO_CACHE", "").strip()  # the project's one cache folder
    if setting:
        directory = Path(setting)
    elif project:
        directory = Path(project).expanduser() / "executables"
    else:
        base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
        directory = Path(base) / "onnx-stablehlo" / "executables"
    max_bytes = DEFAULT_MAX_BYTES
    text = os.environ.get(ENV_MAX_BYTES, "").strip()
    if text:
        try:
            max_bytes = int(text)
        except ValueError:
            from onnx_stablehlo.errors import InvalidOptionError

            raise InvalidOptionError(f"{ENV_MAX_BYTES} must be a number of bytes, got {text!r}") from None
    return ExecutableCache(directory, max_bytes)
