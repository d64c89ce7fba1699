"""Graph surgery shared by :mod:`onnx_stablehlo.heads` and :mod:`onnx_stablehlo.runtime.losses`.

* :class:`FragmentBuilder` writes a small ONNX graph (a head, a loss) at a given opset, picking
  the attribute or input form of ops whose ``axes`` moved (Unsqueeze/ReduceSum at 13).
* :func:`attach` joins such a fragment to a model with ``onnx.compose.merge_graphs``: fragment
  inputs are wired to model values (graph outputs, graph inputs or intermediate values), the
  fragment's other inputs become new graph inputs, and the merged graph returns the outputs
  asked for, in that order.
* :func:`to_proto` reads any model source into a fresh ``onnx.ModelProto`` (never the caller's).

It sits below the runtime (the trainer and ``save_onnx`` use it); ``onnx_stablehlo._compose``
re-exports it under its former name.
"""

from __future__ import annotations

import copy
import os
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import onnx
import onnx.compose
import onnx.numpy_helper
import onnx_ir

from onnx_stablehlo.errors import ModelLoadError, OnnxStableHLOError

__all__ = ["GraphEditError", "FragmentBuilder", "PROTO_LIMIT", "attach", "to_proto", "default_opset", "value_types"]

PROTO_LIMIT = 2**31 - 1
"""Largest serialized ModelProto protobuf can hold (bytes)."""


class GraphEditError(OnnxStableHLOError):
    """A head or loss cannot be attached: unknown value names, clashing names, bad types."""


def to_proto(model: str | os.PathLike | bytes | onnx.ModelProto | onnx_ir.Model) -> onnx.ModelProto:
    """A fresh ``onnx.ModelProto`` of ``model`` (a copy: the caller's object is never changed).

    Paths are read with their external data (relative to the file's folder), and so are the
    external tensors of an ``onnx_ir.Model``; ``.onnxtxt`` is parsed as ONNX text syntax.

    Raises:
        ModelLoadError: the file is missing or is not an ONNX model.
    """
    if isinstance(model, onnx.ModelProto):
        return copy.deepcopy(model)
    if isinstance(model, onnx_ir.Model):
        proto = onnx_ir.serde.serialize_model(model)
        # Tensors mapped from external data keep their file references when serialized; the
        # new model has no folder, so their bytes are copied in.
        external = {
            name: value.const_value
            for name, value in model.graph.initializers.items()
            if isinstance(value.const_value, onnx_ir.ExternalTensor)
        }
        for tensor in proto.graph.initializer:
            if tensor.name in external:
                tensor.CopyFrom(onnx.numpy_helper.from_array(external[tensor.name].numpy(), tensor.name))
        return proto
    if isinstance(model, (bytes, bytearray, memoryview)):
        proto = onnx.ModelProto()
        try:
            proto.ParseFromString(bytes(model))
        except Exception as exc:
            raise ModelLoadError(f"the given bytes are not an ONNX model: {exc}") from exc
        return proto
    if isinstance(model, (str, os.PathLike)):
        path = Path(model)
        if not path.is_file():
            raise ModelLoadError(f"no such model file: {path}")
        try:
            if path.suffix == ".onnxtxt":
                return onnx.parser.parse_model(path.read_text())
            return onnx.load(str(path))
        except Exception as exc:
            raise ModelLoadError(f"cannot read {path}: {exc}") from exc
    raise ModelLoadError(
        f"cannot read a model from {type(model).__name__}: expected a path, bytes, onnx.ModelProto "
        "or onnx_ir.Model"
    )


def default_opset(model: onnx.ModelProto) -> int:
    """The model's opset of the default ONNX domain."""
    for entry in model.opset_import:
        if entry.domain in ("", "ai.onnx"):
            return entry.version
    raise GraphEditError("the model imports no default-domain (ai.onnx) opset")


def value_types(model: onnx.ModelProto) -> dict[str, onnx.TypeProto]:
    """Type of every named value the graph declares or shape inference can tell (main graph).

    Models over 2 GB are not shape-inferred (only declared types are returned).
    """
    graph = model.graph
    types = {vi.name: vi.type for vi in [*graph.input, *graph.output, *graph.value_info]}
    for init in graph.initializer:
        types.setdefault(
            init.name,
            onnx.helper.make_tensor_type_proto(init.data_type, list(init.dims)),
        )
    if model.ByteSize() < PROTO_LIMIT:
        try:
            inferred = onnx.shape_inference.infer_shapes(model, strict_mode=False)
        except Exception:  # inference is best effort: declared types still answer
            inferred = None
        if inferred is not None:
            for vi in inferred.graph.value_info:
                types.setdefault(vi.name, vi.type)
    return types


class FragmentBuilder:
    """Builds a small ONNX model at one default-domain opset.

    Node outputs are named ``<prefix>/<op_type>_<k>`` so they never clash with the model the
    fragment is attached to (when the prefix is not used there).

    >>> b = FragmentBuilder(opset=17, prefix="loss")
    >>> x = b.input("x", onnx.TensorProto.FLOAT, ["N", 3])
    >>> b.output("y", b.reduce_sum(x, axes=[1], keepdims=False))
    >>> [n.op_type for n in b.model().graph.node]
    ['Constant', 'ReduceSum', 'Identity']
    """

    def __init__(self, opset: int, prefix: str) -> None:
        self.opset = opset
        self.prefix = prefix
        self._inputs: list[onnx.ValueInfoProto] = []
        self._outputs: list[onnx.ValueInfoProto] = []
        self._nodes: list[onnx.NodeProto] = []
        self._initializers: list[onnx.TensorProto] = []
        self._count = 0

    def _fresh(self, hint: str) -> str:
        self._count += 1
        return f"{self.prefix}/{hint}_{self._count}"

    def input(self, name: str, elem_type: int, shape: Sequence[int | str | None] | None) -> str:
        """Declares a graph input; returns its name."""
        self._inputs.append(onnx.helper.make_tensor_value_info(name, elem_type, shape))
        return name

    def initializer(self, name: str, array: np.ndarray) -> str:
        """Adds an initializer (a weight); returns its name."""
        self._initializers.append(onnx.numpy_helper.from_array(np.asarray(array), name))
        return name

    def constant(self, array: np.ndarray, hint: str = "const") -> str:
        """A Constant node holding ``array``; returns its output name."""
        name = self._fresh(hint)
        tensor = onnx.numpy_helper.from_array(np.asarray(array), name)
        self._nodes.append(onnx.helper.make_node("Constant", [], [name], value=tensor, name=name))
        return name

    def node(self, op_type: str, inputs: Sequence[str], **attributes: object) -> str:
        """Appends a one-output node; returns its output name."""
        name = self._fresh(op_type)
        self._nodes.append(onnx.helper.make_node(op_type, list(inputs), [name], name=name, **attributes))
        return name

    def reduce_sum(self, x: str, axes: Sequence[int], keepdims: bool) -> str:
        """ReduceSum over ``axes`` (attribute before opset 13, input from 13 on)."""
        if self.opset >= 13:
            axes_name = self.constant(np.array(list(axes), dtype=np.int64), "axes")
            return self.node("ReduceSum", [x, axes_name], keepdims=int(keepdims))
        return self.node("ReduceSum", [x], axes=list(axes), keepdims=int(keepdims))

    def reduce_mean(self, x: str, axes: Sequence[int], keepdims: bool) -> str:
        """ReduceMean over ``axes`` (attribute before opset 18, input from 18 on)."""
        if self.opset >= 18:
            axes_name = self.constant(np.array(list(axes), dtype=np.int64), "axes")
            return self.node("ReduceMean", [x, axes_name], keepdims=int(keepdims))
        return self.node("ReduceMean", [x], axes=list(axes), keepdims=int(keepdims))

    def reduce_mean_all(self, x: str) -> str:
        """The mean of every element of ``x``, as a rank-0 tensor (same form at every opset)."""
        return self.node("ReduceMean", [x], keepdims=0)

    def unsqueeze(self, x: str, axes: Sequence[int]) -> str:
        """Unsqueeze (attribute before opset 13, input from 13 on)."""
        if self.opset >= 13:
            axes_name = self.constant(np.array(list(axes), dtype=np.int64), "axes")
            return self.node("Unsqueeze", [x, axes_name])
        return self.node("Unsqueeze", [x], axes=list(axes))

    def output(
        self, name: str, value: str, elem_type: int = onnx.TensorProto.UNDEFINED, shape: Sequence | None = None
    ) -> None:
        """Exposes ``value`` as the graph output ``name`` (through an Identity)."""
        self._nodes.append(onnx.helper.make_node("Identity", [value], [name], name=f"{self.prefix}/{name}"))
        if elem_type == onnx.TensorProto.UNDEFINED:
            self._outputs.append(onnx.helper.make_empty_tensor_value_info(name))
        else:
            self._outputs.append(onnx.helper.make_tensor_value_info(name, elem_type, shape))

    def model(self, ir_version: int = 8) -> onnx.ModelProto:
        """The fragment as a model (default domain at ``opset``)."""
        graph = onnx.helper.make_graph(
            self._nodes, self.prefix, self._inputs, self._outputs, initializer=self._initializers
        )
        return onnx.helper.make_model(
            graph, opset_imports=[onnx.helper.make_opsetid("", self.opset)], ir_version=ir_version
        )


def attach(
    model: onnx.ModelProto,
    fragment: onnx.ModelProto,
    connections: Mapping[str, str],
    outputs: Sequence[str],
) -> onnx.ModelProto:
    """Joins ``fragment`` to ``model`` with ``onnx.compose.merge_graphs``.

    Args:
        model: the model to extend (not changed).
        fragment: a model whose inputs named in ``connections`` are fed by ``model``'s values;
            its other inputs become graph inputs of the result.
        connections: fragment input name -> a value of ``model`` (a graph output, a graph input
            or an intermediate value).
        outputs: graph outputs of the result, in this order: names of ``model`` outputs and of
            fragment outputs.

    Returns:
        A new model: ``model``'s metadata, opsets (plus the fragment's), nodes and initializers,
        then the fragment's.

    Raises:
        GraphEditError: an unknown value, an output that exists in neither graph, a fragment
            name that clashes with a model name, mismatched default-domain opsets.
    """
    model = copy.deepcopy(model)
    fragment = copy.deepcopy(fragment)
    graph = model.graph
    model_values = _value_names(graph)
    for frag_input, model_value in connections.items():
        if frag_input not in {i.name for i in fragment.graph.input}:
            raise GraphEditError(f"the fragment has no input {frag_input!r}")
        if model_value not in model_values:
            raise GraphEditError(
                f"the model has no value {model_value!r}; its outputs are "
                f"{', '.join(repr(o.name) for o in graph.output)}"
            )
    if default_opset(model) != default_opset(fragment):
        raise GraphEditError(
            f"the fragment uses ai.onnx opset {default_opset(fragment)}, the model {default_opset(model)}"
        )
    # merge_graphs wires only g1 *outputs*: expose every connected value as an output first
    # (typed like the fragment input it feeds); the output list below drops them again.
    declared = {o.name for o in graph.output}
    fragment_inputs = {i.name: i for i in fragment.graph.input}
    for frag_input, model_value in connections.items():
        if model_value not in declared:
            info = copy.deepcopy(fragment_inputs[frag_input])
            info.name = model_value
            graph.output.append(info)
            declared.add(model_value)
    clashes = sorted(
        (_value_names(fragment.graph) - set(connections)) & (model_values | {i.name for i in graph.initializer})
    )
    if clashes:
        raise GraphEditError(
            f"names used by both the model and the attached graph: {', '.join(map(repr, clashes[:8]))}"
        )
    available = declared | {o.name for o in fragment.graph.output}
    missing = [name for name in outputs if name not in available]
    if missing:
        raise GraphEditError(f"no output named {', '.join(map(repr, missing))} in the model or the attached graph")
    io_map = [(model_value, frag_input) for frag_input, model_value in connections.items()]
    try:
        merged = onnx.compose.merge_graphs(graph, fragment.graph, io_map, outputs=list(outputs), name=graph.name)
    except ValueError as exc:
        raise GraphEditError(f"cannot attach the graph: {exc}") from exc
    by_name = {o.name: o for o in merged.output}
    ordered = [copy.deepcopy(by_name[name]) for name in outputs]
    del merged.output[:]
    merged.output.extend(ordered)
    # Keep value_info only for values that are not graph inputs/outputs.
    io_names = {v.name for v in [*merged.input, *merged.output]}
    kept = [vi for vi in merged.value_info if vi.name not in io_names]
    del merged.value_info[:]
    merged.value_info.extend(kept)
    merged.doc_string = graph.doc_string
    model.graph.CopyFrom(merged)
    opsets = {(o.domain or ""): o.version for o in model.opset_import}
    for entry in fragment.opset_import:
        opsets.setdefault(entry.domain or "", entry.version)
    del model.opset_import[:]
    model.opset_import.extend(onnx.helper.make_opsetid(d, v) for d, v in opsets.items())
    model.functions.extend(f for f in fragment.functions if f.name not in {g.name for g in model.functions})
    return model


def _value_names(graph: onnx.GraphProto) -> set[str]:
    names = {i.name for i in graph.input} | {i.name for i in graph.initializer}
    for node in graph.node:
        names.update(n for n in node.input if n)
        names.update(n for n in node.output if n)
    return names
