"""Lowered artifacts on disk: a second process reaches its first result without lowering.

The executable cache (:mod:`~onnx_stablehlo.runtime.executable_cache`) saves XLA's compile, but
a new process still lowered the ONNX model, ran the pass pipeline and the device passes to get
the module whose digest is that cache's key (MiniLM: about 1-2 s on 2 busy cores). This module
stores what ``Executables`` made of one input signature, a *specialization entry*: the frozen
:class:`~onnx_stablehlo.runtime.artifact.Artifact` (bytecode and calling convention, weights
left out), the entry function's bytecode (the executable cache's key) and the
``@hoisted_weights`` bytecode. A hit rebuilds the specialization from it: the executables come
from the executable cache (or are compiled again when evicted), the weights from the model.

Key (:func:`specialization_key`): SHA-256 over the model's digest (:func:`model_digest`: the
bytes of the ONNX file or proto, and the name, size and modification time of each external
data file), the options that change the lowering, the input signature (shapes, and the values
of value-specialized inputs), the platform, this package's version and source files
(:func:`source_fingerprint`: every ``.py`` file's path, size and modification time, so an
edited rule never meets a stale artifact), the jaxlib version and ``XLA_FLAGS``.

The onnx checker's pass is remembered the same way (:func:`checker_passed`), keyed by the
model's identity and the onnx version: it took 0.4 s of MiniLM's warm start.

Entries live in the executable cache's folder, under the same size cap and least-recently-used
eviction, written atomically and checksummed by it; ``ONNX_STABLEHLO_EXECUTABLE_CACHE=0`` turns
both off, ``ONNX_STABLEHLO_ARTIFACT_CACHE=0`` this one alone. A payload that does not unpickle to an entry of this version is deleted and rebuilt.
Payloads are pickles: the folder is as trusted as the executables in it (both are code).

This module imports neither jaxlib nor the frontend.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import importlib.util
import os
import pickle
import sys
import types
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

__all__ = [
    "ENTRY_VERSION",
    "ENV_SWITCH",
    "enabled",
    "default_cache",
    "checker_passed",
    "record_checker_pass",
    "model_digest",
    "source_digest",
    "with_external_data",
    "external_files",
    "source_fingerprint",
    "specialization_key",
    "read_entry",
    "write_entry",
    "dumps",
    "loads",
]

ENV_SWITCH = "ONNX_STABLEHLO_ARTIFACT_CACHE"
"""``0``/``off``/``none`` keeps lowered artifacts (and checker passes) off disk while executables
are still cached; read on every compile (the test suite turns it off: tests that patch a rule
must not meet an artifact an earlier test lowered)."""

ENTRY_VERSION = "onnx-stablehlo lowered specialization v1"
_PACKAGES = ("onnx_stablehlo", "onnx_stablehlo.frontend", "onnx_stablehlo.passes", "onnx_stablehlo.runtime")


def model_digest(source: Any, model: Any = None) -> str | None:
    """A SHA-256 hex digest identifying a model, or None when it has no stable identity
    (:func:`source_digest` of ``source`` with :func:`with_external_data` of ``model``)."""
    return with_external_data(source_digest(source), model)


def source_digest(source: Any) -> str | None:
    """A SHA-256 hex digest of what ``onnx_stablehlo.compile`` was given, or None.

    A path: its real path, size, modification time and inode are hashed, not its content
    (MiniLM's 90 MB would cost 60 ms a start, BERT's 440 MB 0.3 s); bytes or an
    ``onnx.ModelProto``: their serialized content; an ``onnx_ir.Model`` has no identity (None).
    """
    digest = hashlib.sha256()
    if isinstance(source, (str, os.PathLike)):
        path = os.path.realpath(source)
        try:
            stat = os.stat(path)
        except OSError:
            return None
        digest.update(f"file\0{path}\0{stat.st_size}\0{stat.st_mtime_ns}\0{stat.st_ino}\0{stat.st_dev}".encode())
    elif isinstance(source, (bytes, bytearray, memoryview)):
        digest.update(b"bytes\0")
        digest.update(source)
    elif hasattr(source, "SerializeToString"):
        digest.update(b"bytes\0")
        digest.update(source.SerializeToString())
    else:
        return None
    return digest.hexdigest()


def with_external_data(digest: str | None, model: Any) -> str | None:
    """``digest`` extended by the path, size and modification time of each external data file
    the loaded ``model`` reads (None stays None)."""
    if digest is None:
        return None
    combined = hashlib.sha256(digest.encode())
    for path in sorted(external_files(model)):
        try:
            stat = os.stat(path)
            combined.update(f"\0{path}\0{stat.st_size}\0{stat.st_mtime_ns}".encode())
        except OSError:
            combined.update(f"\0{path}\0missing".encode())
    return combined.hexdigest()


def enabled() -> bool:
    """Whether lowered artifacts go to disk (``ONNX_STABLEHLO_ARTIFACT_CACHE``; the executable
    cache's own switch, ``ONNX_STABLEHLO_EXECUTABLE_CACHE=0``, turns both off)."""
    return os.environ.get(ENV_SWITCH, "1").strip().lower() not in ("0", "off", "none", "false", "no")


def default_cache() -> Any:
    """The on-disk cache lowered artifacts go to, or None when either switch turns it off."""
    from onnx_stablehlo.runtime.executable_cache import default_cache as executables_cache

    return executables_cache() if enabled() else None


def _checker_key(digest: str | None) -> str | None:
    cache = default_cache()
    if digest is None or cache is None:
        return None
    import onnx

    return cache.key(b"", ("onnx checker passed v1", digest, f"onnx {onnx.__version__}"))


def checker_passed(digest: str | None) -> bool:
    """Whether the onnx checker passed the model of ``digest`` (:func:`source_digest`) in an
    earlier process with this onnx version (an entry in the on-disk cache; never with it off)."""
    key = _checker_key(digest)
    return key is not None and default_cache().load(key) == b"passed"


def record_checker_pass(digest: str | None) -> None:
    """Remembers that the onnx checker passed the model of ``digest`` (see :func:`checker_passed`)."""
    key = _checker_key(digest)
    if key is not None:
        default_cache().store(key, b"passed")


def external_files(model: Any) -> set[str]:
    """Paths of the external data files ``model``'s initializers read (main graph and subgraphs)."""
    if model is None:
        return set()
    found = set()
    graphs = [model.graph]
    try:
        graphs += list(model.graph.subgraphs())
    except AttributeError:
        pass
    for graph in graphs:
        for value in graph.initializers.values():
            path = getattr(value.const_value, "path", None)
            if isinstance(path, (str, os.PathLike)):
                found.add(os.path.realpath(path))
    return found


@functools.cache
def source_fingerprint() -> str:
    """A digest of this package's ``.py`` files (relative path, size, mtime): edits invalidate entries."""
    digest = hashlib.sha256()
    for package in _PACKAGES:
        spec = importlib.util.find_spec(package)
        for location in (spec.submodule_search_locations or []) if spec is not None else []:
            root = Path(location)
            for path in sorted(root.rglob("*.py")):
                try:
                    stat = path.stat()
                except OSError:
                    continue
                digest.update(f"{package}/{path.relative_to(root)}\0{stat.st_size}\0{stat.st_mtime_ns}\n".encode())
    return digest.hexdigest()


def specialization_key(
    cache: Any,
    model_digest: str,
    options: Any,
    platform: str,
    signature: Any,
) -> str:
    """The cache key of one specialization (``signature``: the ``Executables`` key) of a model.

    Args:
        cache: the :class:`~onnx_stablehlo.runtime.executable_cache.ExecutableCache`.
        model_digest: :func:`model_digest` of the model.
        options: the :class:`~onnx_stablehlo.runtime.options.CompileOptions` (``registry``
            must be ``None``: a caller's registry has no stable identity).
        platform: the PJRT platform.
        signature: the input shapes (and value-specialized values) as a hashable tuple.
    """
    import jaxlib

    from onnx_stablehlo import __version__

    parts = (
        ENTRY_VERSION,
        model_digest,
        repr(
            (
                options.weights,
                sorted((k, repr(v)) for k, v in options.input_shapes.items()),
                sorted(options.dims.items()),
                options.dynamic,
                options.pipeline,
                options.device_passes,
                options.hoist_weights,
                options.runtime_checks,
                options.inline_scalar_weights,
                options.float64_math_on(platform),
            )
        ),
        platform,
        repr(signature),
        f"onnx-stablehlo {__version__} {source_fingerprint()}",
        f"jaxlib {jaxlib.__version__}",
        f"python {sys.version_info[:2]}",
        "XLA_FLAGS=" + os.environ.get("XLA_FLAGS", ""),
    )
    return cache.key(b"", parts)


def read_entry(disk_key: str, model: Any) -> tuple[dict[str, Any], Any] | None:
    """The entry under ``disk_key`` and its :class:`~onnx_stablehlo.runtime.artifact.Artifact`,
    its weights bound to ``model``'s initializers by name; None when absent, or when corrupt or
    its weights do not match the model's (the entry is then deleted)."""
    from onnx_stablehlo.runtime.artifact import Artifact

    cache = default_cache()
    payload = cache.load(disk_key) if cache is not None else None
    if payload is None:
        return None
    entry = loads(payload)
    parameters = _initializer_getters(model, entry["parameter_avals"]) if entry is not None else None
    if entry is None or parameters is None:
        cache.discard(disk_key)
        return None
    return entry, Artifact(**entry["fields"], parameters=types.MappingProxyType(parameters))


def write_entry(disk_key: str, model: Any, artifact: Any, entry_module: bytes, hoisted_module: bytes | None) -> None:
    """Stores ``artifact`` (weights left out) and the modules PJRT runs under ``disk_key``.

    Skipped when a weight is not ``model``'s own initializer (one the importer made or changed):
    a later process binds the weights by name from the model.
    """
    import numpy as np

    cache = default_cache()
    if cache is None:
        return
    initializers = model.graph.initializers
    avals = {}
    for name in artifact.parameter_names:
        init = initializers.get(name)
        tensor = init.const_value if init is not None else None
        if tensor is None or not np.array_equal(np.asarray(tensor.numpy()), artifact.parameters[name]()):
            return
        avals[name] = (tensor.dtype, tuple(int(d) for d in tensor.shape))
    fields = {f.name: getattr(artifact, f.name) for f in dataclasses.fields(artifact) if f.name != "parameters"}
    fields["value_shapes"] = dict(fields["value_shapes"])
    try:
        payload = dumps(fields, avals, entry_module, hoisted_module)
    except Exception:  # a field that does not pickle: this signature is simply not cached
        return
    cache.store(disk_key, payload)


def _initializer_getters(model: Any, avals: Mapping[str, Any]) -> dict[str, Callable[[], Any]] | None:
    """Getters of the weights ``avals`` names, from ``model``'s initializers; None when one is
    missing or has another dtype or shape than the stored entry expects."""
    initializers = model.graph.initializers
    getters = {}
    for name, (dtype, shape) in avals.items():
        init = initializers.get(name)
        tensor = init.const_value if init is not None else None
        if tensor is None or tensor.dtype != dtype or tuple(int(d) for d in tensor.shape) != shape:
            return None
        getters[name] = _lazy_numpy(tensor)
    return getters


def _lazy_numpy(tensor: Any) -> Callable[[], Any]:
    """A getter reading ``tensor`` into numpy on first call (as the importer's weights do)."""
    cache: list[Any] = []

    def get() -> Any:
        if not cache:
            import numpy as np

            cache.append(np.asarray(tensor.numpy()))
        return cache[0]

    return get


def dumps(fields: Mapping[str, Any], parameter_avals: Mapping[str, Any], entry_module: bytes, hoisted_module: bytes | None) -> bytes:
    """The payload of one specialization entry."""
    return pickle.dumps(
        {
            "version": ENTRY_VERSION,
            "fields": dict(fields),
            "parameter_avals": dict(parameter_avals),
            "entry_module": entry_module,
            "hoisted_module": hoisted_module,
        },
        protocol=pickle.HIGHEST_PROTOCOL,
    )


def loads(payload: bytes) -> dict[str, Any] | None:
    """The entry in ``payload``, or None when it is not an entry of this version."""
    try:
        entry = pickle.loads(payload)
    except Exception:  # a payload of another version or build: a miss
        return None
    if not isinstance(entry, dict) or entry.get("version") != ENTRY_VERSION:
        return None
    if not isinstance(entry.get("fields"), dict) or not isinstance(entry.get("entry_module"), bytes):
        return None
    return entry
