"""Checks on a model's external data before any of it is read, the way onnxruntime >= 1.24 does.

A tensor stored outside the protobuf names a ``location`` (a file relative to the model's
folder), an ``offset`` and a ``length``. A hostile or broken model can point that file
anywhere, or declare sizes that make a reader allocate terabytes, read past the end of the file
or block on a FIFO. :func:`check_external_data` refuses, with a :class:`ModelLoadError` that
names the tensor and the location:

- external data without a base folder (a model given as bytes or a proto without ``base_dir``);
- an empty, absolute or ``..``-containing location;
- a location that resolves (symlinks followed) outside the base folder, unless it lands in a
  Hugging Face cache blob store (``.../models--*/blobs/<hash>``), as onnxruntime accepts;
- a location that is missing or not a regular file (a FIFO, a device, a folder);
- an offset or length that is not a non-negative integer;
- a length that differs from the tensor's size (dims x element size);
- an ``offset + size`` past the end of the file.

Nothing is opened: only ``os.stat`` and ``os.path.realpath`` touch the file system, so a FIFO
cannot block and no size is trusted before it is compared with the file.
"""

from __future__ import annotations

import math
import os
import stat
from collections.abc import Iterator
from pathlib import Path

import onnx_ir

from onnx_stablehlo.errors import ModelLoadError

__all__ = ["check_external_data", "external_tensors"]


def external_tensors(graph: onnx_ir.Graph) -> Iterator[onnx_ir.ExternalTensor]:
    """Every external tensor of ``graph``: initializers and tensor attributes, subgraphs included."""
    for value in getattr(graph, "initializers", {}).values():
        if isinstance(value.const_value, onnx_ir.ExternalTensor):
            yield value.const_value
    yield from _attribute_tensors(graph)


def _initializer_values(graph: onnx_ir.Graph) -> dict[int, onnx_ir.Value]:
    """id(external tensor) -> the initializer value holding it, subgraphs included."""
    initializers = getattr(graph, "initializers", {})
    found = {id(v.const_value): v for v in initializers.values() if v.const_value is not None}
    for node in graph:
        for attr in node.attributes.values():
            if attr.is_ref() or attr.value is None:
                continue
            if attr.type == onnx_ir.AttributeType.GRAPH:
                found.update(_initializer_values(attr.value))
            elif attr.type == onnx_ir.AttributeType.GRAPHS:
                for subgraph in attr.value:
                    found.update(_initializer_values(subgraph))
    return found


def _attribute_tensors(graph: onnx_ir.Graph) -> Iterator[onnx_ir.ExternalTensor]:
    for node in graph:
        for attr in node.attributes.values():
            if attr.is_ref() or attr.value is None:
                continue
            if attr.type == onnx_ir.AttributeType.TENSOR:
                items = [attr.value]
            elif attr.type == onnx_ir.AttributeType.TENSORS:
                items = list(attr.value)
            elif attr.type == onnx_ir.AttributeType.GRAPH:
                yield from external_tensors(attr.value)
                continue
            elif attr.type == onnx_ir.AttributeType.GRAPHS:
                for subgraph in attr.value:
                    yield from external_tensors(subgraph)
                continue
            else:
                continue
            yield from (t for t in items if isinstance(t, onnx_ir.ExternalTensor))


def check_external_data(model: onnx_ir.Model, base_dir: str | os.PathLike | None) -> None:
    """Refuses external data that is not safe to map (see the module docstring).

    Args:
        model: the deserialized model; its external tensors' ``base_dir`` is set to
            ``base_dir`` when that is given.
        base_dir: the folder the locations are relative to (the model file's folder);
            ``None`` when the model came as bytes or a proto without one.

    Raises:
        ModelLoadError: naming the tensor, its location and what is wrong.
    """
    tensors = list(external_tensors(model.graph))
    for function in model.functions.values():
        tensors.extend(_attribute_tensors(function))  # type: ignore[arg-type]
    if not tensors:
        return
    owners = _initializer_values(model.graph)
    if base_dir is None and all(str(t.base_dir) for t in tensors):
        for tensor in tensors:  # an onnx_ir.Model read from a file: each tensor knows its folder
            _check_one(tensor, os.path.realpath(tensor.base_dir), owners)
        return
    if base_dir is None:
        names = ", ".join(repr(t.name) for t in tensors[:3])
        raise ModelLoadError(
            f"the model stores tensors in external files ({names}{' ...' if len(tensors) > 3 else ''}) but was "
            "given as bytes or a proto: pass base_dir=<the model's folder>, or load it from its path"
        )
    root = os.path.realpath(base_dir)
    if not os.path.isdir(root):
        raise ModelLoadError(f"base_dir {str(base_dir)!r} is not a folder")
    for tensor in tensors:
        _check_one(tensor, root, owners)


def _check_one(tensor: onnx_ir.ExternalTensor, root: str, owners: dict[int, onnx_ir.Value]) -> None:
    location = str(tensor.location)
    where = f"external tensor {tensor.name!r} (location {location!r})"
    if not location:
        raise ModelLoadError(f"{where}: the location is empty")
    if "\x00" in location:
        raise ModelLoadError(f"{where}: the location contains a NUL byte")
    if os.path.isabs(location) or location.startswith(("/", "\\")) or Path(location).drive:
        raise ModelLoadError(f"{where}: absolute locations are not allowed; it must be relative to the model's folder")
    parts = location.replace("\\", "/").split("/")
    if ".." in parts:
        raise ModelLoadError(f"{where}: '..' is not allowed in a location")
    joined = os.path.join(root, location)
    resolved = os.path.realpath(joined)
    in_blob_store = not _inside(resolved, root) and _in_hf_blob_store(resolved)
    if not _inside(resolved, root) and not in_blob_store:
        raise ModelLoadError(
            f"{where}: resolves to {resolved}, outside the model's folder {root} (a symlink out of it?)"
        )
    if in_blob_store and id(tensor) not in owners:
        raise ModelLoadError(f"{where}: a symlink into a Hugging Face blob store is accepted for initializers only")
    try:
        info = os.stat(resolved)
    except OSError as exc:
        raise ModelLoadError(f"{where}: cannot stat {joined}: {exc.strerror or exc}") from None
    if not stat.S_ISREG(info.st_mode):
        raise ModelLoadError(f"{where}: {joined} is not a regular file")
    offset = tensor.offset
    length = tensor.length
    if offset is not None and (not isinstance(offset, int) or offset < 0):
        raise ModelLoadError(f"{where}: offset {offset} is negative")
    if length is not None and (not isinstance(length, int) or length < 0):
        raise ModelLoadError(f"{where}: length {length} is negative")
    dims = list(tensor.shape.dims)
    if any(not isinstance(d, int) or d < 0 for d in dims):
        raise ModelLoadError(f"{where}: dims {dims} are not non-negative integers")
    expected = _nbytes(tensor.dtype, math.prod(dims))
    if length is not None and length != expected:
        raise ModelLoadError(
            f"{where}: length {length} does not match the tensor's {tensor.dtype.name}{dims}, which takes {expected} bytes"
        )
    start = offset or 0
    if start + expected > info.st_size:
        raise ModelLoadError(
            f"{where}: the tensor's {expected} bytes from offset {start} run past the end of {joined} "
            f"({info.st_size} bytes)"
        )
    if in_blob_store:
        # onnx-ir maps only files under the tensor's base_dir: point it at the blob itself.
        owners[id(tensor)].const_value = onnx_ir.ExternalTensor(
            os.path.basename(resolved),
            offset,
            length,
            tensor.dtype,
            shape=tensor.shape,
            name=tensor.name,
            base_dir=os.path.dirname(resolved),
        )
    else:
        tensor.base_dir = root


def _nbytes(dtype: onnx_ir.DataType, count: int) -> int:
    return (count * dtype.bitwidth + 7) // 8


def _inside(path: str, root: str) -> bool:
    return os.path.commonpath([path, root]) == root if os.path.isabs(path) else False


def _in_hf_blob_store(path: str) -> bool:
    """``path`` is a file in a Hugging Face hub cache's blob store (``.../models--org--name/blobs/<hash>``)."""
    parent = Path(path).parent
    return parent.name == "blobs" and parent.parent.name.startswith(("models--", "datasets--", "spaces--"))
