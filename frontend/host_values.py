"""Values at the graph boundary that StableHLO has no type for: maps and strings.

The loader rewrites the ONNX model (the protobuf, before onnx-ir reads it) so that the device
graph holds only tensors, and records here what the runtime's host stages
(``runtime/host_stages.py``) do at the boundary:

- **ZipMap outputs** ``seq(map(int64|string, tensor(float)))`` are retyped as the ``float[N, C]``
  tensor ZipMap receives (its lowering is the identity); the runtime returns a list of one
  ``{label: probability}`` dict per row, as onnxruntime does.
- **Map inputs** ``map(string|int64, tensor(float|double|int64))`` whose one consumer is an
  ai.onnx.ml DictVectorizer are retyped as the dense ``[1, V]`` tensor the DictVectorizer
  makes of them (``V`` = its vocabulary; its lowering is then the identity); the runtime turns
  the dict a user feeds (what onnxruntime's Python API takes for such an input) into that row.
- **Strings are interned**: every string the model holds (class labels, LabelEncoder /
  CategoryMapper / OneHotEncoder keys, values and defaults, string initializers and constants)
  gets an int64 id, its index in :attr:`HostBoundary.vocabulary`; string tensors become int64
  tensors of ids, and the string attributes of those nodes become their int64 forms
  (``classlabels_strings`` -> ``classlabels_ints``/``classlabels_int64s``, ``cats_strings`` ->
  ``cats_int64s``, LabelEncoder ``keys_strings`` -> ``keys_int64s`` ...). LabelEncoder-1 and
  CategoryMapper, whose one side is always a string, become the LabelEncoder-2 mapping over
  ids (the ai.onnx.ml opset is raised to 2 if it was 1: opset 2 changed only LabelEncoder).
  The runtime maps string feeds to ids (a string the model does not know gets a fresh id past
  the vocabulary, so it matches no key and equals only itself) and ids in string outputs back
  to strings. Between the two, a string may flow through data-movement ops (Gather, Reshape,
  Concat, ArrayFeatureExtractor, Identity, Equal ...), where an id behaves as its string; a
  string reaching any other op (StringNormalizer, Cast, a subgraph ...) is an
  :class:`UnsupportedDtypeError` naming the node and the value.

What the runtime needs is stored in the model's ``metadata_props`` under
:data:`HOST_BOUNDARY_KEY` (JSON), so it survives saving the loaded model; ZipMap outputs are
read from the graph itself (:func:`zipmap_outputs`).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable

import onnx
import onnx_ir
from onnx import TensorProto

from onnx_stablehlo.errors import UnsupportedDtypeError, UnsupportedValueTypeError
from onnx_stablehlo.frontend.node_names import describe_node

__all__ = ["HOST_BOUNDARY_KEY", "HostBoundary", "MapInput", "retype_host_values", "zipmap_outputs"]

HOST_BOUNDARY_KEY = "onnx_stablehlo.host_boundary"
_ML = "ai.onnx.ml"

_MAP_VALUE_DTYPES = {TensorProto.FLOAT: "float32", TensorProto.DOUBLE: "float64", TensorProto.INT64: "int64"}
_MAP_KEY_TYPES = {TensorProto.STRING: "string", TensorProto.INT64: "int64"}

# Default-domain ops through which an interned string may flow: input positions carrying data
# (None: every input); their outputs are strings when such an input is. Index, shape and
# condition inputs stay numbers.
_STRING_CARRIERS: dict[str, tuple[int, ...] | None] = {
    "Identity": (0,), "Reshape": (0,), "Squeeze": (0,), "Unsqueeze": (0,), "Flatten": (0,),
    "Transpose": (0,), "Slice": (0,), "Gather": (0,), "GatherElements": (0,), "GatherND": (0,),
    "Concat": None, "Split": (0,), "Expand": (0,), "Tile": (0,), "Where": (1, 2), "Compress": (0,),
}
# Ops that read strings and give numbers: equality of ids is equality of strings.
_STRING_READERS = {"Equal", "Shape", "Size"}
# ai.onnx.ml ops whose string attributes are rewritten; their string inputs are handled there.
_ML_STRING_OPS = {
    "LabelEncoder", "CategoryMapper", "OneHotEncoder", "ArrayFeatureExtractor",
    "LinearClassifier", "SVMClassifier", "TreeEnsembleClassifier", "ZipMap", "DictVectorizer",
}
_CLASSIFIER_LABELS = {"LinearClassifier": "classlabels_ints", "SVMClassifier": "classlabels_ints",
                      "TreeEnsembleClassifier": "classlabels_int64s"}


@dataclasses.dataclass(frozen=True)
class MapInput:
    """A map-typed graph input, retyped as the ``[1, V]`` row of the DictVectorizer it feeds."""

    name: str
    key_type: str
    """``"string"`` or ``"int64"``."""
    vocabulary: tuple[str, ...] | tuple[int, ...]
    """The DictVectorizer's vocabulary: column ``j`` holds the value of key ``vocabulary[j]``."""
    dtype: str
    """The numpy dtype of the values and of the row: ``float32``, ``float64`` or ``int64``."""


@dataclasses.dataclass(frozen=True)
class HostBoundary:
    """What the runtime converts on the host around the device graph (see the module docstring)."""

    vocabulary: tuple[str, ...] = ()
    """Interned strings: id ``i`` stands for ``vocabulary[i]``."""
    string_inputs: tuple[str, ...] = ()
    """Graph inputs that were string tensors (now int64 ids)."""
    string_outputs: tuple[str, ...] = ()
    """Graph outputs that were string tensors (now int64 ids)."""
    map_inputs: tuple[MapInput, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.string_inputs or self.string_outputs or self.map_inputs)

    def to_json(self) -> str:
        return json.dumps(dataclasses.asdict(self))

    @staticmethod
    def from_json(text: str) -> HostBoundary:
        data = json.loads(text)
        maps = tuple(
            MapInput(m["name"], m["key_type"], tuple(m["vocabulary"]), m["dtype"]) for m in data.get("map_inputs", ())
        )
        return HostBoundary(
            tuple(data.get("vocabulary", ())), tuple(data.get("string_inputs", ())),
            tuple(data.get("string_outputs", ())), maps,
        )

    @staticmethod
    def of(model: onnx_ir.Model) -> HostBoundary:
        """The boundary the loader recorded in ``model`` (an empty one when there is none)."""
        text = model.metadata_props.get(HOST_BOUNDARY_KEY)
        return HostBoundary.from_json(text) if text else HostBoundary()


def retype_host_values(proto: onnx.ModelProto) -> tuple[onnx.ModelProto, HostBoundary]:
    """Rewrites maps and strings at the graph boundary into tensors (see the module docstring).

    Returns:
        ``(proto, boundary)``: ``proto`` itself and an empty boundary when the model has no map
        and no string, else a rewritten copy and what the runtime must convert.

    Raises:
        UnsupportedValueTypeError: a map-typed value other than a ZipMap graph output or a
            DictVectorizer's map input; a sequence of strings.
        UnsupportedDtypeError: a string reaching an op that computes on it.
    """
    maps = _map_typed_values(proto.graph, "the main graph")
    if not maps and not _has_strings(proto.graph):
        return proto, HostBoundary()
    proto = onnx.ModelProto.FromString(proto.SerializeToString())
    map_inputs = _retype_maps(proto, maps)
    interner = _StringInterner(proto)
    interner.run()
    kept = [v for v in proto.graph.value_info if not _has_map(v.type)]
    del proto.graph.value_info[:]
    proto.graph.value_info.extend(kept)
    boundary = HostBoundary(
        tuple(interner.vocabulary), tuple(interner.string_inputs), tuple(interner.string_outputs), tuple(map_inputs)
    )
    return proto, boundary


def zipmap_outputs(model: onnx_ir.Model) -> dict[str, list[int] | list[str]]:
    """The graph outputs produced by an ai.onnx.ml ZipMap node, with the node's class labels.

    ``CompiledModel.run`` returns each as a list of ``{label: probability}`` dicts, one per
    row, as onnxruntime does.
    """
    result: dict[str, list[int] | list[str]] = {}
    for value in model.graph.outputs:
        node = value.producer()
        if node is None or node.op_type != "ZipMap" or node.domain != _ML:
            continue
        ints = node.attributes.get("classlabels_int64s")
        strings = node.attributes.get("classlabels_strings")
        if ints is not None:
            result[value.name] = [int(v) for v in ints.as_ints()]
        elif strings is not None:
            result[value.name] = [str(v) for v in strings.as_strings()]
    return result


# Maps -----------------------------------------------------------------------------------------


def _elem_name(elem_type: int) -> str:
    return TensorProto.DataType.Name(elem_type).lower()


def type_text(value_type: onnx.TypeProto) -> str:
    """A type in ONNX text syntax: ``seq(map(int64,tensor(float)))``."""
    kind = value_type.WhichOneof("value")
    if kind == "tensor_type":
        return f"tensor({_elem_name(value_type.tensor_type.elem_type)})"
    if kind == "sequence_type":
        return f"seq({type_text(value_type.sequence_type.elem_type)})"
    if kind == "optional_type":
        return f"optional({type_text(value_type.optional_type.elem_type)})"
    if kind == "map_type":
        return f"map({_elem_name(value_type.map_type.key_type)},{type_text(value_type.map_type.value_type)})"
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


def _subgraphs(node: onnx.NodeProto) -> list[onnx.GraphProto]:
    return [g for a in node.attribute for g in ([a.g] if a.HasField("g") else list(a.graphs))]


def _map_typed_values(graph: onnx.GraphProto, where: str) -> list[tuple[str, onnx.ValueInfoProto]]:
    """Every (where, value) of a map-containing type in ``graph`` and its subgraphs."""
    found = [(where, v) for v in (*graph.input, *graph.output, *graph.value_info) if _has_map(v.type)]
    for node in graph.node:
        for subgraph in _subgraphs(node):
            found += _map_typed_values(subgraph, f"a subgraph of node '{node.name or node.op_type}'")
    return found


def _retype_maps(proto: onnx.ModelProto, found: list[tuple[str, onnx.ValueInfoProto]]) -> list[MapInput]:
    """Retypes ZipMap outputs and DictVectorizer map inputs; returns the map inputs."""
    graph = proto.graph
    producers = {out: node for node in graph.node for out in node.output}
    consumers: dict[str, list[onnx.NodeProto]] = {}
    for node in graph.node:
        for name in node.input:
            consumers.setdefault(name, []).append(node)
    inputs = {v.name for v in graph.input}
    outputs = {v.name for v in graph.output}
    map_inputs: list[MapInput] = []
    for where, value in found:
        node = producers.get(value.name)
        if where == "the main graph" and value.name in outputs and node is not None and _is_ml(node, "ZipMap"):
            continue
        users = consumers.get(value.name, [])
        if any(m.name == value.name for m in map_inputs):
            continue  # the input listed again in value_info
        if where == "the main graph" and value.name in inputs and value.name not in outputs:
            map_input = _dict_vectorizer_input(value, users)
            if map_input is not None:
                map_inputs.append(map_input)
                continue
        role = "input" if value.name in inputs else "value"
        raise UnsupportedValueTypeError(
            f"{role} '{value.name}' in {where} has type {type_text(value.type)}: map-typed values are "
            "supported as the output of an ai.onnx.ml ZipMap node that is a graph output, and as a "
            "graph input map(string|int64, tensor(float|double|int64)) whose one consumer is an "
            "ai.onnx.ml DictVectorizer",
            value.name,
            type_text(value.type),
        )
    for value in graph.output:
        node = producers.get(value.name)
        if node is not None and _is_ml(node, "ZipMap") and _has_map(value.type):
            labels = next(
                (len(a.ints) or len(a.strings) for a in node.attribute if a.name in ("classlabels_int64s", "classlabels_strings")),
                None,
            )
            value.type.CopyFrom(onnx.helper.make_tensor_type_proto(TensorProto.FLOAT, [None, labels]))
    for value in graph.input:
        spec = next((m for m in map_inputs if m.name == value.name), None)
        if spec is not None:
            elem = next(k for k, v in _MAP_VALUE_DTYPES.items() if v == spec.dtype)
            value.type.CopyFrom(onnx.helper.make_tensor_type_proto(elem, [1, len(spec.vocabulary)]))
    return map_inputs


def _dict_vectorizer_input(value: onnx.ValueInfoProto, users: list[onnx.NodeProto]) -> MapInput | None:
    if value.type.WhichOneof("value") != "map_type" or len(users) != 1 or not _is_ml(users[0], "DictVectorizer"):
        return None
    map_type = value.type.map_type
    if map_type.value_type.WhichOneof("value") != "tensor_type":
        return None
    key_type = _MAP_KEY_TYPES.get(map_type.key_type)
    dtype = _MAP_VALUE_DTYPES.get(map_type.value_type.tensor_type.elem_type)
    if key_type is None or dtype is None:
        return None
    attrs = {a.name: a for a in users[0].attribute}
    if key_type == "string" and "string_vocabulary" in attrs:
        vocabulary: tuple = tuple(s.decode() for s in attrs["string_vocabulary"].strings)
    elif key_type == "int64" and "int64_vocabulary" in attrs:
        vocabulary = tuple(int(i) for i in attrs["int64_vocabulary"].ints)
    else:
        return None
    return MapInput(value.name, key_type, vocabulary, dtype)


def _is_ml(node: onnx.NodeProto, op_type: str) -> bool:
    return node.op_type == op_type and node.domain == _ML


# Strings --------------------------------------------------------------------------------------


_STRING_ATTRIBUTES = frozenset(
    {"classlabels_strings", "keys_strings", "values_strings", "cats_strings", "classes_strings"}
)
"""ai.onnx.ml attributes that hold strings the interner rewrites (ZipMap's labels and
DictVectorizer's vocabulary stay: the host stages use them)."""


def _has_strings(graph: onnx.GraphProto) -> bool:
    """Whether ``graph`` (or a subgraph) has a string value, initializer, constant or one of
    :data:`_STRING_ATTRIBUTES` on a node other than ZipMap."""
    values = (*graph.input, *graph.output, *graph.value_info)
    if any(_string_type(v.type) for v in values) or any(t.data_type == TensorProto.STRING for t in graph.initializer):
        return True
    for node in graph.node:
        for attribute in node.attribute:
            if attribute.name in _STRING_ATTRIBUTES and node.domain == _ML and node.op_type != "ZipMap" and attribute.strings:
                return True
            if attribute.HasField("t") and attribute.t.data_type == TensorProto.STRING:
                return True
        if any(_has_strings(g) for g in _subgraphs(node)):
            return True
    return False


def _string_type(value_type: onnx.TypeProto) -> bool:
    kind = value_type.WhichOneof("value")
    if kind == "tensor_type":
        return value_type.tensor_type.elem_type == TensorProto.STRING
    if kind == "sequence_type":
        return _string_type(value_type.sequence_type.elem_type)
    if kind == "optional_type":
        return _string_type(value_type.optional_type.elem_type)
    return False


def _schema_default(op_type: str, opset: int, name: str):
    schema = onnx.defs.get_schema(op_type, opset, _ML)
    return onnx.helper.get_attribute_value(schema.attributes[name].default_value)


class _StringInterner:
    """Rewrites the main graph's strings into int64 ids (see the module docstring)."""

    def __init__(self, proto: onnx.ModelProto) -> None:
        self.proto = proto
        self.graph = proto.graph
        self.ids: dict[str, int] = {}
        self.vocabulary: list[str] = []
        self.strings: set[str] = set()  # names of string values
        self.string_inputs: list[str] = []
        self.string_outputs: list[str] = []
        self.ml_opset = next((o.version for o in proto.opset_import if o.domain == _ML), 1)

    def intern(self, text: str | bytes) -> int:
        if isinstance(text, bytes):
            text = text.decode()
        if text not in self.ids:
            self.ids[text] = len(self.vocabulary)
            self.vocabulary.append(text)
        return self.ids[text]

    def run(self) -> None:
        graph = self.graph
        for value in (*graph.input, *graph.output, *graph.value_info):
            if value.type.WhichOneof("value") != "tensor_type" and _string_type(value.type):
                raise UnsupportedValueTypeError(
                    f"value '{value.name}' has type {type_text(value.type)}: sequences and optionals "
                    "of strings are not supported (string tensors are, interned as int64 ids)",
                    value.name,
                    type_text(value.type),
                )
        for value in graph.input:
            if _string_type(value.type):
                self.strings.add(value.name)
                self.string_inputs.append(value.name)
                value.type.tensor_type.elem_type = TensorProto.INT64
        for tensor in graph.initializer:
            if tensor.data_type == TensorProto.STRING:
                self._intern_tensor(tensor)
                self.strings.add(tensor.name)
        for index, node in enumerate(graph.node):
            self._rewrite(node, index)
        for value in graph.output:
            if value.name in self.strings:
                self.string_outputs.append(value.name)
                if value.type.WhichOneof("value") == "tensor_type":
                    value.type.tensor_type.elem_type = TensorProto.INT64
        for value in graph.value_info:
            if _string_type(value.type):
                value.type.tensor_type.elem_type = TensorProto.INT64

    def _intern_tensor(self, tensor: onnx.TensorProto) -> None:
        ids = [self.intern(s) for s in tensor.string_data]
        name, dims = tensor.name, list(tensor.dims)
        tensor.Clear()
        tensor.CopyFrom(onnx.helper.make_tensor(name, TensorProto.INT64, dims, ids))

    def _error(self, node: onnx.NodeProto, index: int, value: str, why: str) -> UnsupportedDtypeError:
        opset = next(
            (o.version for o in self.proto.opset_import if (o.domain or "ai.onnx") == (node.domain or "ai.onnx")), None
        )
        return UnsupportedDtypeError(
            f"it {why} the string value '{value}' (dtype STRING): strings are interned as int64 ids on the host, which "
            f"only data-movement ops ({', '.join(sorted(_STRING_CARRIERS))}), Equal and the ai.onnx.ml "
            "encoders and classifiers can take",
            op_type=node.op_type, domain=node.domain, opset=opset, node_name=describe_node(node, index),
        )

    def _rewrite(self, node: onnx.NodeProto, index: int) -> None:
        string_inputs = [name for name in node.input if name in self.strings]
        for subgraph in _subgraphs(node):
            if _has_strings(subgraph) or any(n in self.strings for n in _outer_names(subgraph)):
                raise self._error(node, index, next(iter(string_inputs or ["(inside its subgraph)"])), "has a subgraph using")
        if node.op_type == "Constant" and node.domain in ("", "ai.onnx"):
            self._rewrite_constant(node)
            return
        if node.op_type == "Cast" and node.domain in ("", "ai.onnx") and any(
            a.name == "to" and a.i == TensorProto.STRING for a in node.attribute
        ):
            raise self._error(node, index, node.output[0], "makes (Cast to string formats numbers)")
        if node.domain == _ML and node.op_type in _ML_STRING_OPS:
            self._rewrite_ml(node, index, string_inputs)
            return
        if not string_inputs:
            return
        if node.domain in ("", "ai.onnx") and node.op_type in _STRING_CARRIERS:
            positions = _STRING_CARRIERS[node.op_type]
            carried = [n for i, n in enumerate(node.input) if n in self.strings and (positions is None or i in positions)]
            others = [n for i, n in enumerate(node.input) if n in self.strings and n not in carried]
            if others:
                raise self._error(node, index, others[0], "takes as an index or shape")
            if node.op_type in ("Concat", "Where") and len(carried) != len([
                n for i, n in enumerate(node.input) if n and (positions is None or i in positions)
            ]):
                raise self._error(node, index, carried[0], "mixes numbers with")
            self.strings.update(o for o in node.output if o)
            return
        if node.domain in ("", "ai.onnx") and node.op_type in _STRING_READERS:
            if node.op_type == "Equal" and len(string_inputs) != len([n for n in node.input if n]):
                raise self._error(node, index, string_inputs[0], "compares a number with")
            return
        raise self._error(node, index, string_inputs[0], "computes on")

    def _rewrite_constant(self, node: onnx.NodeProto) -> None:
        for attribute in node.attribute:
            if attribute.name == "value" and attribute.t.data_type == TensorProto.STRING:
                self._intern_tensor(attribute.t)
                self.strings.add(node.output[0])
            elif attribute.name == "value_strings":
                ids = [self.intern(s) for s in attribute.strings]
                attribute.CopyFrom(onnx.helper.make_attribute("value_ints", ids))
                self.strings.add(node.output[0])
            elif attribute.name == "value_string":
                attribute.CopyFrom(onnx.helper.make_attribute("value_int", self.intern(attribute.s)))
                self.strings.add(node.output[0])

    def _rewrite_ml(self, node: onnx.NodeProto, index: int, string_inputs: list[str]) -> None:
        attrs = {a.name: a for a in node.attribute}
        op = node.op_type
        if op in _CLASSIFIER_LABELS:
            if string_inputs:
                raise self._error(node, index, string_inputs[0], "computes on")
            if "classlabels_strings" in attrs:
                ids = [self.intern(s) for s in attrs["classlabels_strings"].strings]
                self._replace(node, {"classlabels_strings"}, {_CLASSIFIER_LABELS[op]: ids})
                self.strings.add(node.output[0])
        elif op == "OneHotEncoder":
            if "cats_strings" in attrs:
                ids = [self.intern(s) for s in attrs["cats_strings"].strings]
                self._replace(node, {"cats_strings"}, {"cats_int64s": ids})
            elif string_inputs:
                raise self._error(node, index, string_inputs[0], "compares integer categories with")
        elif op == "ArrayFeatureExtractor":
            if node.input[1] in self.strings:
                raise self._error(node, index, node.input[1], "takes as an index")
            if node.input[0] in self.strings:
                self.strings.add(node.output[0])
        elif op in ("ZipMap", "DictVectorizer"):
            if string_inputs:
                raise self._error(node, index, string_inputs[0], "computes on")
        elif op == "CategoryMapper" or (op == "LabelEncoder" and self.ml_opset < 2):
            self._rewrite_v1_mapping(node, attrs, string_inputs)
        else:
            self._rewrite_label_encoder(node, attrs)

    def _rewrite_v1_mapping(self, node: onnx.NodeProto, attrs: dict, string_inputs: list[str]) -> None:
        """CategoryMapper and LabelEncoder-1 -> LabelEncoder-2 over ids."""
        op = node.op_type
        names = [s for s in (attrs["cats_strings" if op == "CategoryMapper" else "classes_strings"].strings if (
            "cats_strings" in attrs or "classes_strings" in attrs) else [])]
        ids = [self.intern(s) for s in names]
        numbers = list(attrs["cats_int64s"].ints) if op == "CategoryMapper" and "cats_int64s" in attrs else list(range(len(ids)))
        default_int = attrs["default_int64"].i if "default_int64" in attrs else _schema_default(op, 1, "default_int64")
        default_string = attrs["default_string"].s if "default_string" in attrs else _schema_default(op, 1, "default_string")
        if string_inputs:  # strings -> numbers
            new = {"keys_int64s": ids, "values_int64s": numbers, "default_int64": int(default_int)}
        else:  # numbers -> strings
            new = {"keys_int64s": numbers, "values_int64s": ids, "default_int64": self.intern(default_string)}
            self.strings.add(node.output[0])
        del node.attribute[:]
        node.attribute.extend(_attribute(k, v) for k, v in new.items())
        node.op_type = "LabelEncoder"
        if self.ml_opset < 2:
            for opset in self.proto.opset_import:
                if opset.domain == _ML:
                    opset.version = 2
            self.ml_opset = 2

    def _rewrite_label_encoder(self, node: onnx.NodeProto, attrs: dict) -> None:
        """LabelEncoder-2/4: string keys, values and defaults -> ids."""
        new: dict[str, object] = {}
        removed: set[str] = set()
        string_values = False
        for kind in ("keys", "values"):
            if f"{kind}_strings" in attrs:
                new[f"{kind}_int64s"] = [self.intern(s) for s in attrs[f"{kind}_strings"].strings]
                removed.add(f"{kind}_strings")
                string_values |= kind == "values"
            tensor_attr = attrs.get(f"{kind}_tensor")
            if tensor_attr is not None and tensor_attr.t.data_type == TensorProto.STRING:
                self._intern_tensor(tensor_attr.t)
                string_values |= kind == "values"
        default_tensor = attrs.get("default_tensor")
        if default_tensor is not None and default_tensor.t.data_type == TensorProto.STRING:
            self._intern_tensor(default_tensor.t)
        elif string_values:
            default = attrs["default_string"].s if "default_string" in attrs else _schema_default(
                "LabelEncoder", self.ml_opset, "default_string")
            new["default_int64"] = self.intern(default)
            removed |= {"default_string", "default_int64"}
        if string_values:
            self.strings.add(node.output[0])
        self._replace(node, removed, new)

    @staticmethod
    def _replace(node: onnx.NodeProto, removed: set[str], new: dict[str, object]) -> None:
        kept = [a for a in node.attribute if a.name not in removed and a.name not in new]
        del node.attribute[:]
        node.attribute.extend(kept)
        node.attribute.extend(_attribute(k, v) for k, v in new.items())


def _attribute(name: str, value: object) -> onnx.AttributeProto:
    if isinstance(value, list):
        return onnx.helper.make_attribute(name, [int(v) for v in value], attr_type=onnx.AttributeProto.INTS)
    return onnx.helper.make_attribute(name, value)


def _outer_names(graph: onnx.GraphProto) -> Iterable[str]:
    """Names a subgraph reads (its nodes' inputs, nested subgraphs included)."""
    for node in graph.node:
        yield from node.input
        for subgraph in _subgraphs(node):
            yield from _outer_names(subgraph)
