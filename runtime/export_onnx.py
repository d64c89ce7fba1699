"""Writing trained weights back into an ONNX file.

>>> save_onnx(trainer, "fine-tuned.onnx")                                    # doctest: +SKIP
>>> save_onnx({"head.weight": w}, "out.onnx", original="model.onnx")         # doctest: +SKIP

The new file is the original model with the named initializers replaced; every replacement
must have the original's name, dtype and shape. Files are written atomically (a temporary file
in the target folder, then a rename), and the original file is never written to unless
``overwrite=True`` says so.

External data: models whose tensors total 2 GB or more (protobuf's limit for one message) are
written with their tensors in a side file (``external_data=None`` decides by size; ``True`` or
``False`` force it). The side file is named ``<file>.<pid>-<random>.data`` and written before the
``.onnx`` is renamed into place, so the ``.onnx`` on disk always points at a complete data file;
the data file of the replaced ``.onnx`` (if it was one of ours) is removed afterwards, and so is
any side file of that name pattern that the new ``.onnx`` does not reference and whose writer
process is gone (a killed save's debris). A failed save removes its own side file.
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import onnx.external_data_helper
import onnx.numpy_helper
import onnx_ir

from onnx_stablehlo.frontend import atomic_io as _io
from onnx_stablehlo.frontend.graph_edit import to_proto
from onnx_stablehlo.errors import OnnxStableHLOError

__all__ = [
    "ExportError",
    "InitializerMismatchError",
    "UnknownInitializerError",
    "save_onnx",
    "with_initializers",
    "EXTERNAL_DATA_THRESHOLD",
]

EXTERNAL_DATA_THRESHOLD = 2**31 - 2**26
"""Tensor bytes from which ``external_data=None`` writes a side file (2 GiB less 64 MiB of
headroom for the graph itself)."""

_FILE_MODE = 0o644
"""Mode of written files (the atomic writer's temporary files are created 0600)."""

_SMALL_TENSOR = 1024
"""Tensors under this many bytes stay in the ``.onnx`` when external data is written."""


class ExportError(OnnxStableHLOError):
    """The trained model cannot be written (bad target, would overwrite the original)."""


class UnknownInitializerError(ExportError):
    """A trained weight's name is not an initializer of the model written back."""

    def __init__(self, message: str, name: str) -> None:
        super().__init__(message)
        self.name = name


class InitializerMismatchError(ExportError):
    """A trained weight has another dtype or shape than the initializer it replaces.

    Attributes:
        name: the initializer.
        expected: ``(dtype, shape)`` in the model.
        got: ``(dtype, shape)`` of the trained value.
    """

    def __init__(self, name: str, expected: tuple[np.dtype, tuple[int, ...]], got: tuple[np.dtype, tuple[int, ...]]) -> None:
        super().__init__(
            f"initializer {name!r} is {expected[0]}{list(expected[1])} in the model, the trained value is "
            f"{got[0]}{list(got[1])}"
        )
        self.name = name
        self.expected = expected
        self.got = got


def with_initializers(model: Any, values: Mapping[str, np.ndarray]) -> onnx.ModelProto:
    """A copy of ``model`` whose initializers named in ``values`` hold those values.

    Args:
        model: path, bytes, ``onnx.ModelProto`` or ``onnx_ir.Model`` (not changed).
        values: initializer name -> new value (same dtype and shape).

    Raises:
        UnknownInitializerError: a name is not an initializer of the main graph.
        InitializerMismatchError: another dtype or shape.
    """
    proto = to_proto(model)
    index = {tensor.name: i for i, tensor in enumerate(proto.graph.initializer)}
    for name, value in values.items():
        if name not in index:
            known = [t.name for t in proto.graph.initializer][:8]
            raise UnknownInitializerError(
                f"the model has no initializer {name!r}; some it has: {', '.join(map(repr, known))}", name
            )
        old = proto.graph.initializer[index[name]]
        expected = (np.dtype(onnx.helper.tensor_dtype_to_np_dtype(old.data_type)), tuple(int(d) for d in old.dims))
        array = np.asarray(value)
        got = (array.dtype, tuple(array.shape))
        if got != expected:
            raise InitializerMismatchError(name, expected, got)
        tensor = onnx.numpy_helper.from_array(np.asarray(array, order="C"), name)
        if tensor.data_type != old.data_type:  # e.g. bfloat16 stored through ml_dtypes
            raise InitializerMismatchError(name, expected, got)
        proto.graph.initializer[index[name]].CopyFrom(tensor)
    return proto


def save_onnx(
    trained: Any,
    path: str | os.PathLike,
    *,
    original: Any = None,
    external_data: bool | None = None,
    overwrite: bool = False,
) -> Path:
    """Writes a model with trained weights to ``path``.

    Args:
        trained: a :class:`~onnx_stablehlo.runtime.training.Trainer` (its model without the
            loss and its trained weights), or a mapping initializer name -> array.
        path: the new ``.onnx`` file (in a folder that exists: it is not created).
        original: the model the weights go into: path, bytes, ``onnx.ModelProto`` or
            ``onnx_ir.Model``. Required with a mapping; with a trainer, default its model.
        external_data: write tensors to a side file; ``None``: only when they total
            :data:`EXTERNAL_DATA_THRESHOLD` bytes or more.
        overwrite: allow ``path`` to be the ``original`` file itself.

    Returns:
        ``path``.

    Raises:
        InvalidOptionError: ``path`` is not a ``str`` or ``os.PathLike``.
        WriteError: ``path`` is a folder, or its folder does not exist (it is not created).
        ExportError: ``trained`` is neither a trainer nor a mapping; ``path`` is the original
            file and ``overwrite`` is false; no original for a mapping; a model too large for
            one file with ``external_data=False``.
        UnknownInitializerError, InitializerMismatchError: see :func:`with_initializers`.
    """
    target = _io.output_path(path, "save_onnx")
    if isinstance(trained, Mapping):
        values = dict(trained)
        if original is None:
            raise ExportError("save_onnx(weights, path) needs original=<the model the weights belong to>")
    else:
        if not hasattr(trained, "trainable_params") or not hasattr(trained, "inference_model"):
            raise ExportError(
                f"save_onnx: trained must be a Trainer or a mapping initializer name -> array, got {type(trained).__name__}"
            )
        values = trained.trainable_params
        if original is None:
            original = trained.inference_model
    if isinstance(original, (str, os.PathLike)) and not overwrite:
        with contextlib.suppress(OSError):
            if target.exists() and os.path.samefile(original, target):
                raise ExportError(f"{target} is the original model; pass overwrite=True to replace it")
    proto = with_initializers(original, values)
    tensor_bytes = sum(_tensor_bytes(t) for t in proto.graph.initializer)
    external = tensor_bytes >= EXTERNAL_DATA_THRESHOLD if external_data is None else external_data
    if not external and tensor_bytes >= EXTERNAL_DATA_THRESHOLD:
        raise ExportError(
            f"the model's tensors take {tensor_bytes} bytes, too many for one protobuf; use external_data=True"
        )
    for tensor in proto.graph.initializer:
        if tensor.data_location == onnx.TensorProto.EXTERNAL:
            location = next((e.value for e in tensor.external_data if e.key == "location"), "")
            raise ExportError(
                f"initializer {tensor.name!r} of the original keeps its data in an external file "
                f"({location!r}) that was not read: pass the original as a path (its external data is read "
                "from its folder) or as an onnx_ir.Model loaded from one"
            )
    previous_data = _our_data_files(target)
    data_path: Path | None = None
    try:
        if external:
            for tensor in proto.graph.initializer:  # only raw_data moves to a side file
                if not tensor.HasField("raw_data") and tensor.data_location != onnx.TensorProto.EXTERNAL:
                    tensor.CopyFrom(onnx.numpy_helper.from_array(onnx.numpy_helper.to_array(tensor), tensor.name))
            location = f"{target.name}.{os.getpid()}-{secrets.token_hex(4)}.data"
            data_path = target.parent / location
            onnx.external_data_helper.convert_model_to_external_data(
                proto, all_tensors_to_one_file=True, location=location, size_threshold=_SMALL_TENSOR
            )
            onnx.external_data_helper.write_external_data_tensors(proto, str(target.parent))
            if data_path.exists():  # absent when every tensor is under _SMALL_TENSOR bytes
                with open(data_path, "rb+") as handle:
                    os.fsync(handle.fileno())
                os.chmod(data_path, _FILE_MODE)
                previous_data.discard(data_path)
        _io.atomic_write_bytes(target, proto.SerializeToString())
    except BaseException as exc:
        if data_path is not None:
            with contextlib.suppress(OSError):
                data_path.unlink()
        if not isinstance(exc, OnnxStableHLOError) and isinstance(exc, (onnx.checker.ValidationError, ValueError, OSError)):
            raise ExportError(f"cannot write {target}: {_first_line(exc)}") from exc
        raise
    os.chmod(target, _FILE_MODE)
    for stale in previous_data | _orphan_data_files(target):
        with contextlib.suppress(OSError):
            stale.unlink()
    return target


def _tensor_bytes(tensor: onnx.TensorProto) -> int:
    if tensor.HasField("raw_data"):
        return len(tensor.raw_data)
    return tensor.ByteSize()


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


_DATA_NAME = r"\.(?:(\d+)-)?[0-9a-f]{8}\.data"
"""How our side files are named after the target's name: ``.<pid>-<hex>.data`` (``.<hex>.data``
before the writer's pid was part of it)."""


def _orphan_data_files(target: Path) -> set[Path]:
    """Our side files of ``target`` that the ``target`` on disk does not reference and whose
    writer is gone (a killed save's data file)."""
    referenced = _our_data_files(target)
    pattern = re.compile(rf"^{re.escape(target.name)}{_DATA_NAME}$")
    found = set()
    with contextlib.suppress(OSError):
        for entry in os.scandir(target.parent):
            match = pattern.match(entry.name)
            if not match or Path(entry.path) in referenced:
                continue
            pid = match.group(1)
            if pid is None or not _io.pid_alive(int(pid)) or int(pid) == os.getpid():
                found.add(Path(entry.path))
    return found


def _our_data_files(target: Path) -> set[Path]:
    """Data files named ``<target>.<hex>.data`` that the current ``target`` file references."""
    if not target.is_file():
        return set()
    try:
        old = onnx.load(str(target), load_external_data=False)
    except Exception:
        return set()
    found = set()
    for tensor in old.graph.initializer:
        if tensor.data_location == onnx.TensorProto.EXTERNAL:
            info = {entry.key: entry.value for entry in tensor.external_data}
            location = info.get("location", "")
            if re.fullmatch(rf"{re.escape(target.name)}{_DATA_NAME}", location):
                found.add(target.parent / location)
    return found


def load_initializers(model: str | os.PathLike | onnx.ModelProto | onnx_ir.Model) -> dict[str, np.ndarray]:
    """Every initializer of a model's main graph as numpy (external data read)."""
    proto = to_proto(model)
    return {t.name: onnx.numpy_helper.to_array(t) for t in proto.graph.initializer}
