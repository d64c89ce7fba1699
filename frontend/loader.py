"""Loading ONNX models into onnx-ir.

``load`` accepts a path, serialized bytes or an ``onnx.ModelProto``; runs the onnx checker;
inlines model-local functions; and returns an ``onnx_ir.Model`` whose external data (if any)
is mapped lazily from the model's folder.

Map-typed values. onnx-ir has no map type, and StableHLO has no map either. A classifier
converted by skl2onnx or onnxmltools with default options ends in an ``ai.onnx.ml`` ZipMap
node whose output, a graph output, is ``seq(map(int64|string, tensor(float)))``. Before onnx-ir
reads the model, such a graph output is retyped as the ``float[N, C]`` tensor ZipMap receives
(its lowering is the identity); ``CompiledModel.run`` turns it back into what onnxruntime
returns, a list of one ``{label: probability}`` dict per row (:func:`zipmap_outputs`). Any
other map-typed value is an :class:`UnsupportedValueTypeError` naming it and its type.
"""

from __future__ import annotations

import os
from pathlib import Path

import google.protobuf.message
import onnx
import onnx_ir
from onnx_ir.passes.common import InlinePass

from onnx_stablehlo.errors import ModelCheckError, ModelLoadError, OnnxStableHLOError, UnsupportedValueTypeError
from onnx_stablehlo.frontend.external_data import check_external_data
from onnx_stablehlo.frontend.qdq import fuse_qdq

__all__ = ["ModelSource", "load", "opset_imports", "zipmap_outputs"]

_ML_DOMAIN = "ai.onnx.ml"

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
        if isinstance(model, (str, os.PathLike)):
            proto, base_dir = _read_file(Path(model))
        elif isinstance(model, (bytes, bytearray, memoryview)):
            proto = _parse_bytes(bytes(model), "the given bytes")
        elif isinstance(model, onnx.ModelProto):
            proto = model
        else:
            raise ModelLoadError(
                f"cannot load a model from {type(model).__name__}: expected a path, bytes, "
                "onnx.ModelProto or onnx_ir.Model"
            )
        ir_model = _deserialize(_retype_zipmap_outputs(proto))
        # Before the checker: it would open (and block on) a FIFO named as a location.
        check_external_data(ir_model, base_dir)
        if check:
            # External data was checked above, against the model's folder; the checker sees a
            # copy without it (given the proto alone it would resolve locations against the
            # current folder).
            _check(_without_external_data(proto))
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
    stubs = [t for t in _proto_tensors(proto.graph) if t.data_location == onnx.TensorProto.EXTERNAL]
    if not stubs:
        return proto
    copy = onnx.ModelProto()
    copy.CopyFrom(proto)
    for tensor in _proto_tensors(copy.graph):
        if tensor.data_location == onnx.TensorProto.EXTERNAL:
            placeholder = onnx.TensorProto(name=tensor.name, data_type=tensor.data_type)
            try:
                width = onnx_ir.DataType(tensor.data_type).bitwidth
            except ValueError:
                width = 8
            placeholder.raw_data = b"\0" * max(1, (width + 7) // 8)
            tensor.CopyFrom(placeholder)
    return copy


def _proto_tensors(graph: onnx.GraphProto):
    yield from graph.initializer
    for node in graph.node:
        for attr in node.attribute:
            if attr.HasField("t"):
                yield attr.t
            yield from attr.tensors
            if attr.HasField("g"):
                yield from _proto_tensors(attr.g)
            for subgraph in attr.graphs:
                yield from _proto_tensors(subgraph)


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


def _read_file(path: Path) -> tuple[onnx.ModelProto, str]:
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
    else:
        proto = _parse_bytes(data, str(path))
    return proto, str(path.resolve().parent)


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


def _check(model: onnx.ModelProto) -> None:
    try:
        onnx.checker.check_model(model)
    except (onnx.checker.ValidationError, ValueError) as exc:
        moved = _with_ort_ops_moved(model) if "No Op registered for" in str(exc) else None
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


def _elem_name(elem_type: int) -> str:
    return onnx.TensorProto.DataType.Name(elem_type).lower()


def _type_text(value_type: onnx.TypeProto) -> str:
    """A type in ONNX text syntax: ``seq(map(int64,tensor(float)))``."""
    kind = value_type.WhichOneof("value")
    if kind == "tensor_type":
        return f"tensor({_elem_name(value_type.tensor_type.elem_type)})"
    if kind == "sequence_type":
        return f"seq({_type_text(value_type.sequence_type.elem_type)})"
    if kind == "optional_type":
        return f"optional({_type_text(value_type.optional_type.elem_type)})"
    if kind == "map_type":
        return f"map({_elem_name(value_type.map_type.key_type)},{_type_text(value_type.map_type.value_type)})"
    return kind or "undefined"


def _has_map(value_type: onnx.TypeProto) -> bool:
    kind = value_type.WhichOneof("value")
    if kind == "map_type":
        return True
    if kind == "sequence_type":
        return _has_map(value_type.sequence_type.elem_type)
    if kind == "optional_type":
        return _has_map(value_type.optional_type.elem_type)
    return False


def _map_typed_values(graph: onnx.GraphProto, where: str) -> list[tuple[str, onnx.ValueInfoProto]]:
    """Every (where, value) of a map-containing type in ``graph`` and its subgraphs."""
    found = [
        (where, v)
        for v in (*graph.input, *graph.output, *graph.value_info)
        if _has_map(v.type)
    ]
    for node in graph.node:
        for attribute in node.attribute:
            for subgraph in (*([attribute.g] if attribute.HasField("g") else []), *attribute.graphs):
                found += _map_typed_values(subgraph, f"a subgraph of node '{node.name or node.op_type}'")
    return found


def _retype_zipmap_outputs(proto: onnx.ModelProto) -> onnx.ModelProto:
    """Retypes ZipMap graph outputs as ``float[N, C]``; see the module docstring.

    Returns ``proto`` itself when it has no map-typed value, else a modified copy.

    Raises:
        UnsupportedValueTypeError: a map-typed value that is not a ZipMap graph output.
    """
    found = _map_typed_values(proto.graph, "the main graph")
    if not found:
        return proto
    zipmaps = {
        node.output[0]: node
        for node in proto.graph.node
        if node.op_type == "ZipMap" and node.domain == _ML_DOMAIN and node.output
    }
    outputs = {v.name for v in proto.graph.output}
    for where, value in found:
        if where != "the main graph" or value.name not in zipmaps or value.name not in outputs:
            role = "input" if any(v.name == value.name for v in proto.graph.input) else "value"
            raise UnsupportedValueTypeError(
                f"{role} '{value.name}' in {where} has type {_type_text(value.type)}: map-typed values "
                "are not supported, except the output of an ai.onnx.ml ZipMap node that is a graph output",
                value.name,
                _type_text(value.type),
            )
    proto = onnx.ModelProto.FromString(proto.SerializeToString())
    for value in proto.graph.output:
        node = zipmaps.get(value.name)
        if node is None:
            continue
        labels = next(
            (len(a.ints) or len(a.strings) for a in node.attribute if a.name in ("classlabels_int64s", "classlabels_strings")),
            None,
        )
        value.type.CopyFrom(onnx.helper.make_tensor_type_proto(onnx.TensorProto.FLOAT, [None, labels]))
    kept = [v for v in proto.graph.value_info if not _has_map(v.type)]
    del proto.graph.value_info[:]
    proto.graph.value_info.extend(kept)
    return proto


def zipmap_outputs(model: onnx_ir.Model) -> dict[str, list[int] | list[str]]:
    """The graph outputs produced by an ai.onnx.ml ZipMap node, with the node's class labels.

    ``CompiledModel.run`` returns each as a list of ``{label: probability}`` dicts, one per
    row, as onnxruntime does.
    """
    result: dict[str, list[int] | list[str]] = {}
    for value in model.graph.outputs:
        node = value.producer()
        if node is None or node.op_type != "ZipMap" or node.domain != _ML_DOMAIN:
            continue
        ints = node.attributes.get("classlabels_int64s")
        strings = node.attributes.get("classlabels_strings")
        if ints is not None:
            result[value.name] = [int(v) for v in ints.as_ints()]
        elif strings is not None:
            result[value.name] = [str(v) for v in strings.as_strings()]
    return result
