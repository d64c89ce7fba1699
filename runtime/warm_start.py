"""Warm start: a new process runs a model's stored executable without loading onnx_ir or the frontend.

With the on-disk caches (``runtime/artifact_cache.py``, ``runtime/executable_cache.py``) a second
process skips lowering, passes and XLA's compile, but it still imported onnx_ir (0.6 s, most of
it the sympy that onnx_ir imports) and the frontend, and read the model through onnx_ir, only to
find the stored specialization. A *warm-start entry* holds, in plain Python types, everything a
call of one static specialization needs: the graph's input and output names, the input avals
(numpy dtype and shape), the weights' names and avals, the output and ``@hoisted_weights``
result avals, the run-time check messages and the bytecode of the entry and ``@hoisted_weights``
modules, and where each weight's bytes lie in the model file (found by ``record``, which checks
that they are there as they are). ``onnx_stablehlo.compile`` looks it up before loading the
model; on a hit it maps the file and takes the weights as views at those offsets (no protobuf
parse, no onnx import: the source digest says the file is the same), or, for a model whose
weights are not stored as raw bytes, parses it with ``onnx``'s protobuf and checks each weight's
dtype and shape (as the artifact cache binds weights by name); gets the executables from the
executable cache and returns a ``CompiledModel`` that runs them
(``CompiledModel.from_warm_start``). On CPU, in a process that has not imported jax, they run on
a PJRT client made by jaxlib alone (``pjrt.jax_free_cpu_device``), so jax's import (0.7-1.1 s)
is skipped too. Feeds of another signature, a bad feed, or anything that
needs the model (``mlir``, ``model``, ``executables``...) load the model then, through the
usual path (whose on-disk entries make that a warm compile too), and the model behaves exactly
as one compiled in that process.

Key: :func:`~onnx_stablehlo.runtime.artifact_cache.specialization_key` of the model's source
digest (path, size, modification time and inode of the file; or the bytes) with the options,
platform, package sources, jaxlib and onnx versions and ``XLA_FLAGS``. An entry is written only
for a model whose inputs and outputs are all tensors, with no external data, no host stages, no
split, bucketing or value specialization, no caller's registry, and whose static specialization
was stored on disk. ``ONNX_STABLEHLO_ARTIFACT_CACHE=0`` turns it off with the artifact cache.

This module imports neither onnx_ir nor the frontend (``record`` does, in a process that has them).
"""

from __future__ import annotations

import mmap
import os
import pickle
import weakref
from collections.abc import Mapping
from typing import Any

import numpy as np

from onnx_stablehlo.runtime import artifact_cache, pjrt
from onnx_stablehlo.runtime.call_plan import CallPlan

__all__ = ["WARM_VERSION", "WarmStart", "lookup", "record"]

WARM_VERSION = "onnx-stablehlo warm start v4"


def _warm_key(cache: Any, source_digest: str, options: Any, platform: str) -> str:
    return artifact_cache.specialization_key(
        cache, source_digest, options, platform, (WARM_VERSION, f"onnx {_onnx_version()}")
    )


def _onnx_version() -> str:
    """The installed onnx's version (its checker's pass is part of the entry), without importing
    onnx (0.1-0.2 s) when nothing has."""
    import sys

    onnx = sys.modules.get("onnx")
    if onnx is not None:
        return str(onnx.__version__)
    from importlib import metadata

    return metadata.version("onnx")


def _eligible(source_digest: str | None, options: Any) -> Any:
    """The on-disk cache when a model of ``source_digest`` with ``options`` may have a warm-start entry
    (``source_digest`` is None for sources without an identity: an ``onnx_ir.Model``)."""
    if source_digest is None or options.registry is not None or options.bucketing is not None:
        return None
    return artifact_cache.default_cache()


class WarmStart:
    """A stored static specialization, its weights on the device, and a ``CallPlan`` over it.

    Attributes:
        input_names: graph inputs, in graph order.
        output_names: graph outputs, in the order ``run`` returns them.
    """

    def __init__(self, entry: Mapping[str, Any], source: _PinnedSource, source_digest: str, device: pjrt.Device,
                 device_spec: str, weights: list[np.ndarray]) -> None:
        self.input_names = list(entry["input_names"])
        self.output_names = list(entry["output_names"])
        self.device = device
        self.device_spec = device_spec
        self._source = source
        self._source_digest = source_digest
        executable = pjrt.compile_module(entry["entry_module"], device)  # the executable cache's hit
        constants = [pjrt.to_device(w, device) for w in weights]
        if entry["hoisted_module"] is not None:
            hoisted = pjrt.compile_module(entry["hoisted_module"], device)
            constants += pjrt.executor_for_avals(hoisted, entry["hoisted_avals"], device)(constants)
        inputs = tuple(
            (name, np.dtype(dtype), tuple(shape), pjrt.transfer_of(tuple(shape), np.dtype(dtype), device))
            for name, (dtype, shape) in zip(self.input_names, entry["input_avals"])
        )
        execute = pjrt.executor_for_avals(executable, entry["output_avals"], device)
        self._plan = CallPlan(
            inputs, tuple(self.input_names), constants, executable, tuple(entry["check_messages"]), device, execute,
        )

    def run(self, feeds: Any) -> list[np.ndarray] | None:
        """The outputs for ``feeds`` of the stored signature (run-time checks raised), else None."""
        if feeds.__class__ is not dict and not isinstance(feeds, Mapping):
            return None
        return self._plan.run(feeds)

    def run_device(self, feeds: Any) -> list[Any] | None:
        """``run``, leaving the outputs on the device; None for feeds of another signature."""
        if self.device.jax_free or (feeds.__class__ is not dict and not isinstance(feeds, Mapping)):
            return None  # device arrays for the caller come from jax's client: load the model first
        if any(getattr(feeds.get(n), "dtype", None) is None for n in self.input_names):
            return None
        return self._plan.run_device(feeds)

    def load_model(self) -> tuple[Any, str | None]:
        """The ONNX model loaded through onnx_ir (no checker: the entry's process ran it) and its
        digest as ``onnx_stablehlo.compile`` computes it: the model ``compile`` was given, as a
        model compiled then would hold it (see :class:`_PinnedSource`).

        Raises:
            ModelLoadError: the file was changed in place since ``compile``, or does not parse.
        """
        from onnx_stablehlo.frontend.loader import load

        data, base_dir = self._source.read()
        model = load(data, check=False, base_dir=base_dir)
        return model, artifact_cache.with_external_data(self._source_digest, model)

    def release(self) -> None:
        """Closes the model file held since ``compile`` (once the model is built from it)."""
        self._source.close()


class _PinnedSource:
    """The model ``compile`` was given, held as it was then: a model file stays open (a later
    replacement, deletion or ``os.chdir`` does not change what a warm start loads when it needs
    the model, as a model loaded at ``compile`` would not see them either); a mutable buffer is
    copied; bytes and protos are kept as they are."""

    def __init__(self, source: Any) -> None:
        self.path: str | None = None
        self.file: Any = None
        self.value = source
        if isinstance(source, (str, os.PathLike)):
            self.path = os.fspath(source)
            self.file = open(self.path, "rb")  # noqa: SIM115 - held until the model is loaded
            self._closer = weakref.finalize(self, self.file.close)  # or until the model is dropped
            stat = os.fstat(self.file.fileno())
            self.stat = (stat.st_size, stat.st_mtime_ns)
        elif isinstance(source, (bytearray, memoryview)):
            self.value = bytes(source)

    def read(self) -> tuple[Any, str | None]:
        """``(bytes or proto, the folder of the model file or None)``."""
        if self.file is None:
            return self.value, None
        from onnx_stablehlo.errors import ModelLoadError

        stat = os.fstat(self.file.fileno())
        if (stat.st_size, stat.st_mtime_ns) != self.stat:
            raise ModelLoadError(
                f"model file {self.path} was changed in place after compile loaded its executable; "
                "compile it again"
            )
        self.file.seek(0)
        return self.file.read(), os.path.dirname(os.path.abspath(self.path))

    def close(self) -> None:
        if self.file is not None:
            self._closer()
            self.file = None


def lookup(source: Any, source_digest: str | None, options: Any, device_spec: str, *, check: bool) -> WarmStart | None:
    """The warm start of ``source`` compiled with ``options`` for the device ``device_spec``
    (``compile``'s ``device``), or None.

    On CPU, when nothing has imported jax yet, the executables run on
    :func:`~onnx_stablehlo.runtime.pjrt.jax_free_cpu_device`, so jax is not imported either.

    None when there is no entry, the entry did not run the onnx checker and ``check`` asks for
    it, or a weight in the model no longer matches the entry (name, dtype, shape) or lives in
    external data. A payload that is not an entry of this version is deleted.
    """
    cache = _eligible(source_digest, options)
    if cache is None or not isinstance(device_spec, str):
        return None
    device = None
    if device_spec.strip().lower() in ("cpu", "cpu:0"):
        device = pjrt.jax_free_cpu_device()
    if device is None:
        device = pjrt.get_device(device_spec)  # DeviceNotFoundError as compile's
    key = _warm_key(cache, source_digest, options, device.platform)
    payload = cache.load(key)
    if payload is None:
        return None
    entry = _loads(payload)
    if entry is None:
        cache.discard(key)
        return None
    if check and not entry["checked"]:
        return None
    try:
        pinned = _PinnedSource(source)
    except OSError:
        return None
    weights = _mapped_weights(pinned, entry["parameters"]) if entry["offsets"] else None
    if weights is None:
        weights = _read_weights(pinned, entry["parameters"])
    if weights is None:
        pinned.close()
        return None
    return WarmStart(entry, pinned, source_digest, device, device_spec, weights)


def _mapped_weights(source: _PinnedSource, parameters: list[tuple[Any, ...]]) -> list[np.ndarray] | None:
    """The weights as views of the model file (memory-mapped) or bytes at the offsets ``record``
    found them at, or None. No protobuf parse: the source digest (path, size, modification time,
    inode; or the bytes themselves) says the file is the one whose bytes were found there."""
    try:
        if source.file is not None:
            buffer: Any = mmap.mmap(source.file.fileno(), 0, access=mmap.ACCESS_READ)
        else:
            buffer = memoryview(source.value).cast("B")
        arrays = []
        for _name, dtype, shape, offset in parameters:
            count = int(np.prod(shape, dtype=np.int64))
            if offset is None or offset < 0 or offset + count * np.dtype(dtype).itemsize > len(buffer):
                return None
            arrays.append(np.frombuffer(buffer, dtype=np.dtype(dtype), count=count, offset=offset).reshape(shape))
        return arrays
    except (OSError, ValueError, TypeError):
        return None


def _weight_offsets(source: Any, model: Any, arrays: Mapping[str, np.ndarray]) -> dict[str, int] | None:
    """Where each weight's little-endian bytes lie in the model file (or bytes), in the order of
    the model's initializers, each search starting where the last match ended; None when the
    source is neither, or a weight's bytes are not found as they are (a typed-field tensor)."""
    if isinstance(source, (str, os.PathLike)):
        with open(source, "rb") as handle:
            data = handle.read()
    elif isinstance(source, (bytes, bytearray, memoryview)):
        data = bytes(source)
    else:
        return None
    order = [name for name in model.graph.initializers if name in arrays]
    order += [name for name in arrays if name not in set(order)]
    offsets: dict[str, int] = {}
    start = 0
    for name in order:
        array = arrays[name]
        raw = np.ascontiguousarray(array).astype(array.dtype.newbyteorder("<"), copy=False).tobytes()
        if not raw:
            offsets[name] = 0
            continue
        found = data.find(raw, start)
        if found < 0:
            found = data.find(raw)  # stored out of order
        if found < 0:
            return None
        offsets[name] = found
        start = found + len(raw)
    return offsets


def _read_weights(source: _PinnedSource, parameters: list[tuple[Any, ...]]) -> list[np.ndarray] | None:
    """The weights ``parameters`` names (name, numpy dtype, shape), read from the model's
    initializers with onnx's protobuf; None when one is missing, external or differs (or the
    file changed since it was opened)."""
    if not parameters:
        return []
    import onnx
    from onnx import numpy_helper

    try:
        data, _ = source.read()
        proto = onnx.ModelProto.FromString(data) if isinstance(data, bytes) else data
        initializers = {t.name: t for t in proto.graph.initializer}
        arrays = []
        for name, dtype, shape, _offset in parameters:
            tensor = initializers.get(name)
            if tensor is None or tensor.data_location == onnx.TensorProto.EXTERNAL:
                return None
            array = numpy_helper.to_array(tensor)
            if array.dtype.str != dtype or array.shape != tuple(shape):
                return None
            arrays.append(array)
        return arrays
    except Exception:  # an unreadable or changed file: the usual path reports it
        return None


def record(compiled: Any, source: Any, source_digest: str | None, *, checked: bool) -> bool:
    """Stores the warm-start entry of ``compiled`` (just built by ``onnx_stablehlo.compile``
    from ``source``) when it qualifies (see the module docstring); returns whether it did."""
    options = compiled.options
    cache = _eligible(source_digest, options)
    if cache is None:
        return False
    try:
        entry = _entry_of(compiled, source, checked)
    except Exception:  # anything unexpected in a model's make-up: no warm start, no harm
        return False
    if entry is None:
        return False
    cache.store(_warm_key(cache, source_digest, options, compiled.device.platform), _dumps(entry))
    return True


def _entry_of(compiled: Any, source: Any, checked: bool) -> dict[str, Any] | None:
    from onnx_stablehlo.frontend.dtypes import numpy_dtype
    from onnx_stablehlo.frontend.layout import onnx_kind

    executables = compiled.executables
    static = compiled._feeds.static_shapes()
    if (
        static is None or compiled._split is not None or compiled._host.encodes or compiled._host.decodes
        or executables.value_specialized or artifact_cache.external_files(compiled.model)
        or any(onnx_kind(compiled._feeds.input_types[n]) != "tensor" for n in compiled.input_names)
    ):
        return None
    stored = executables.stored_entry(static)
    if stored is None:
        return None
    stored_entry, artifact = stored
    if (
        list(artifact.input_names) != compiled.input_names or list(artifact.output_names) != compiled.output_names
        or any(layout.kind != "tensor" for layout in artifact.input_layouts + artifact.output_layouts)
        or len(artifact.input_types) != len(compiled.input_names)
    ):
        return None
    arrays = {name: np.asarray(artifact.parameters[name]()) for name in artifact.parameter_names}
    offsets = _weight_offsets(source, compiled.model, arrays) if arrays else {}
    parameters = [
        (name, array.dtype.str, tuple(array.shape), offsets.get(name) if offsets else None)
        for name, array in arrays.items()
    ]
    input_avals = [(np.dtype(numpy_dtype(t)).str, tuple(int(d) for d in shape)) for t, shape in artifact.input_types]
    output_avals = [(np.dtype(numpy_dtype(t)).str, tuple(int(d) for d in shape)) for t, shape in artifact.output_types]
    spec = executables.last
    hoisted = executables.constants(spec)[len(artifact.parameter_names):] if spec is not None else []
    hoisted_avals = [(np.dtype(a.dtype).str, tuple(int(d) for d in a.shape)) for a in hoisted]
    if (stored_entry["hoisted_module"] is None) != (not hoisted_avals):
        return None
    # numpy's own dtypes only (ml_dtypes' bfloat16, float8, int4 have no buffer-protocol format)
    kinds = [np.dtype(d).kind for d, _ in input_avals + output_avals + hoisted_avals]
    kinds += [np.dtype(p[1]).kind for p in parameters]
    if any(kind not in "biufc" for kind in kinds):
        return None
    return {
        "version": WARM_VERSION,
        "input_names": list(compiled.input_names),
        "output_names": list(compiled.output_names),
        "input_avals": input_avals,
        "output_avals": output_avals,
        "hoisted_avals": hoisted_avals,
        "parameters": parameters,
        "check_messages": list(artifact.check_messages),
        "entry_module": stored_entry["entry_module"],
        "hoisted_module": stored_entry["hoisted_module"],
        "checked": bool(checked),
        "offsets": offsets is not None,
    }


def _dumps(entry: Mapping[str, Any]) -> bytes:
    return pickle.dumps(dict(entry), protocol=pickle.HIGHEST_PROTOCOL)


_FIELDS = {
    "input_names": list, "output_names": list, "input_avals": list, "output_avals": list, "hoisted_avals": list,
    "parameters": list, "check_messages": list,
    "entry_module": bytes, "checked": bool, "offsets": bool,
}


def _loads(payload: bytes) -> dict[str, Any] | None:
    """The entry in ``payload``, or None when it is not a warm-start entry of this version."""
    try:
        entry = pickle.loads(payload)
    except Exception:
        return None
    if not isinstance(entry, dict) or entry.get("version") != WARM_VERSION:
        return None
    if any(not isinstance(entry.get(name), kind) for name, kind in _FIELDS.items()):
        return None
    if entry.get("hoisted_module") is not None and not isinstance(entry["hoisted_module"], bytes):
        return None
    if len(entry["input_avals"]) != len(entry["input_names"]):
        return None
    return entry
