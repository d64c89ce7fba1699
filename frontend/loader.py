"""Loading ONNX models into onnx-ir.

``load`` accepts a path, serialized bytes or an ``onnx.ModelProto``; runs the onnx checker;
inlines model-local functions; and returns an ``onnx_ir.Model`` whose external data (if any)
is mapped lazily from the model's folder.

Maps and strings. onnx-ir has no map type, and StableHLO has neither maps nor strings. Before
onnx-ir reads the model, :func:`~onnx_stablehlo.frontend.host_values.retype_host_values`
rewrites them at the graph boundary into tensors: a ZipMap graph output
(``seq(map(int64|string, tensor(float)))``) becomes the ``float[N, C]`` tensor ZipMap receives,
a ``map(K, V)`` input feeding a DictVectorizer becomes its dense row, and strings become int64
ids. What the runtime converts on the host is recorded in the model's ``metadata_props``
(``frontend/host_values.py``); any other map-typed value is an
:class:`UnsupportedValueTypeError` naming it and its type.
"""

from __future__ import annotations

import os
from pathlib import Path

import google.protobuf.message
import onnx
import onnx_ir
from onnx_ir.passes.common import InlinePass

from onnx_stablehlo.errors import ModelCheckError, ModelLoadError, OnnxStableHLOError
from onnx_stablehlo.frontend.external_data import check_external_data
from onnx_stablehlo.frontend.host_values import HOST_BOUNDARY_KEY, retype_host_values, zipmap_outputs
from onnx_stablehlo.frontend.qdq import fuse_qdq

__all__ = ["ModelSource", "load", "opset_imports", "proto_tensors", "zipmap_outputs"]

ModelSource = str | os.PathLike | bytes | onnx.ModelProto | onnx_ir.Model


def load(
    model: ModelSource, *, check: bool = True, base_dir: str | os.PathLike | None = None
) -> onnx_ir.Model:
    """Reads an ONNX model into onnx-ir.

    Args:
        model: a path to a ``.onnx`` file (or ``.onnxtxt`` in ONNX text syntax), the serialized
            bytes of a ModelProto, a ``onnx.ModelProto``, or an ``onnx_ir.Model`` (returned
            with its functions inlined).
        check: run ``onnx.checker.check_model`` first.
        base_dir: the folder external data is read from when ``model`` is bytes or a proto
            (a path's own folder is always used for a path). Without it, a model given as bytes
            or a proto that stores tensors externally is refused.

    Returns:
        The model as ``onnx_ir.Model`` with model-local functions inlined and QDQ groups
        (DequantizeLinear -> Conv/Add -> QuantizeLinear) fused into QLinearConv/QLinearAdd, as
        onnxruntime runs them (``frontend/qdq.py``).

    Raises:
        ModelLoadError: the file is missing or unreadable, the bytes are not an ONNX model, or
            its external data is unsafe (see :mod:`onnx_stablehlo.frontend.external_data`;
            checked with ``check=False`` too).
        ModelCheckError: the onnx checker rejects the model.
    """
    if isinstance(model, onnx_ir.Model):
        ir_model = model
        check_external_data(ir_model, base_dir)
    else:
        serialized: bytes | None = None  # the proto's own bytes, when it was parsed from them
        if isinstance(model, (str, os.PathLike)):
            proto, base_dir, serialized = _read_file(Path(model))
        elif isinstance(model, (bytes, bytearray, memoryview)):
            serialized = bytes(model)
            proto = _parse_bytes(serialized, "the given bytes")
        elif isinstance(model, onnx.ModelProto):
            proto = model
        else:
            raise ModelLoadError(
                f"cannot load a model from {type(model).__name__}: expected a path, bytes, "
                "onnx.ModelProto or onnx_ir.Model"
            )
        device_proto, boundary = retype_host_values(proto)
        ir_model = _deserialize(device_proto)
        if boundary:
            ir_model.metadata_props[HOST_BOUNDARY_KEY] = boundary.to_json()
        # Before the checker: it would open (and block on) a FIFO named as a location.
        check_external_data(ir_model, base_dir)
        if check:
            # External data was checked above, against the model's folder; the checker sees a
            # copy without it (given the proto alone it would resolve locations against the
            # current folder). A model without external data is checked from the bytes it was
            # read from: the checker would otherwise serialize the proto again (0.25 s for
            # MiniLM's 90 MB).
            checked = _without_external_data(proto)
            _check(serialized if checked is proto and serialized is not None else checked)
    if ir_model.functions:
        try:
            InlinePass()(ir_model)
        except OnnxStableHLOError:
            raise
        except Exception as exc:  # onnx-ir refuses a malformed function (bad signature, recursion)
            raise ModelLoadError(f"cannot inline the model's local functions: {_first_line(exc)}") from exc
    fuse_qdq(ir_model)
    return ir_model


def _without_external_data(proto: onnx.ModelProto) -> onnx.ModelProto:
    """``proto``, or a copy whose external tensors are one-element placeholders of their dtype.

    The checker (without ``full_check``) does not infer shapes, so a placeholder's shape does
    not matter; its name and dtype stay.
    """
    stubs = [t for t in proto_tensors(proto.graph) if t.data_location == onnx.TensorProto.EXTERNAL]
    if not stubs:
        return proto
    copy = onnx.ModelProto()
    copy.CopyFrom(proto)
    for tensor in proto_tensors(copy.graph):
        if tensor.data_location == onnx.TensorProto.EXTERNAL:
            placeholder = onnx.TensorProto(name=tensor.name, data_type=tensor.data_type)
            try:
                width = onnx_ir.DataType(tensor.data_type).bitwidth
            except ValueError:
                width = 8
            placeholder.raw_data = b"\0" * max(1, (width + 7) // 8)
            tensor.CopyFrom(placeholder)
    return copy


def proto_tensors(graph: onnx.GraphProto):
    """Every TensorProto of ``graph``: initializers, tensor attributes (Constant values), and
    those of its subgraphs, recursively."""
    yield from graph.initializer
    for node in graph.node:
        for attr in node.attribute:
            if attr.HasField("t"):
                yield attr.t
            yield from attr.tensors
            if attr.HasField("g"):
                yield from proto_tensors(attr.g)
            for subgraph in attr.graphs:
                yield from proto_tensors(subgraph)


def _deserialize(proto: onnx.ModelProto) -> onnx_ir.Model:
    try:
        return onnx_ir.serde.deserialize_model(proto)
    except Exception as exc:  # onnx_ir.serde.SerdeError and the ValueError/TypeError it wraps
        raise ModelLoadError(f"the model is malformed and cannot be read: {_first_line(exc)}") from exc


def _first_line(exc: BaseException) -> str:
    """The innermost cause's first line (onnx-ir's SerdeError wraps the real reason), with the
    outermost context ("Error calling _deserialize_graph with: g")."""
    chain = [exc]
    while (cause := chain[-1].__cause__ or chain[-1].__context__) is not None and len(chain) < 16:
        chain.append(cause)
    texts = [str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__ for e in chain]
    return texts[-1] if len(texts) == 1 else f"{texts[-1]} ({texts[0]})"


def _read_file(path: Path) -> tuple[onnx.ModelProto, str, bytes | None]:
    """The model at ``path``, its folder, and the bytes it was parsed from (None for text syntax)."""
    if not path.exists():
        raise ModelLoadError(f"model file not found: {path}")
    if path.is_dir():
        raise ModelLoadError(f"model path is a directory, not a file: {path}")
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ModelLoadError(f"cannot read model file {path}: {exc.strerror}") from exc
    if path.suffix in (".onnxtxt", ".txt"):
        try:
            proto = onnx.parser.parse_model(data.decode())
        except (onnx.parser.ParseError, UnicodeDecodeError) as exc:
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise ModelLoadError(f"{path} is not valid ONNX text syntax: {first}") from exc
        return proto, str(path.resolve().parent), None
    return _parse_bytes(data, str(path)), str(path.resolve().parent), data


def _parse_bytes(data: bytes, what: str) -> onnx.ModelProto:
    proto = onnx.ModelProto()
    try:
        proto.ParseFromString(data)
    except google.protobuf.message.DecodeError as exc:
        raise ModelLoadError(f"{what} is not an ONNX model (protobuf parse failed: {exc})") from exc
    if not proto.HasField("graph"):
        raise ModelLoadError(f"{what} is not an ONNX model (it has no graph)")
    return proto


ORT_DEFAULT_DOMAIN_OPS = frozenset({"SimplifiedLayerNormalization"})
"""Ops onnxruntime registers in the ai.onnx domain though ONNX has no such op (ORT GenAI and
the transformer optimizer emit them there); the checker is told to treat them as a custom domain."""

_ORT_CHECK_DOMAIN = "onnx_stablehlo.ort_default_domain"


def _check(model: onnx.ModelProto | bytes) -> None:
    """Runs the onnx checker on ``model`` (a proto, or its serialized bytes).

    Raises:
        ModelCheckError: the checker rejects it.
    """
    try:
        onnx.checker.check_model(model)
    except (onnx.checker.ValidationError, ValueError) as exc:
        moved = None
        if "No Op registered for" in str(exc):
            moved = _with_ort_ops_moved(onnx.ModelProto.FromString(model) if isinstance(model, bytes) else model)
        if moved is not None:
            _check(moved)
            return
        message = " ".join(str(exc).strip().split("\n")[:2])
        raise ModelCheckError(f"the onnx checker rejected the model: {message}") from exc


def _with_ort_ops_moved(model: onnx.ModelProto) -> onnx.ModelProto | None:
    """A copy of ``model`` whose ORT-only default-domain nodes are in a custom domain, so the
    checker skips them; ``None`` when there are none."""
    proto = onnx.ModelProto()
    proto.CopyFrom(model)
    moved = 0

    def visit(graph: onnx.GraphProto) -> None:
        nonlocal moved
        for node in graph.node:
            if node.domain in ("", "ai.onnx") and node.op_type in ORT_DEFAULT_DOMAIN_OPS:
                node.domain = _ORT_CHECK_DOMAIN
                moved += 1
            for attribute in node.attribute:
                for sub in [attribute.g] if attribute.HasField("g") else list(attribute.graphs):
                    visit(sub)

    visit(proto.graph)
    if not moved:
        return None
    proto.opset_import.append(onnx.helper.make_opsetid(_ORT_CHECK_DOMAIN, 1))
    return proto


def opset_imports(model: onnx_ir.Model) -> dict[str, int]:
    """The model's opset per domain, with ``ai.onnx`` normalized to ``""``."""
    result: dict[str, int] = {}
    for domain, version in model.opset_imports.items():
        result["" if domain in ("", "ai.onnx") else domain] = int(version)
    return result
