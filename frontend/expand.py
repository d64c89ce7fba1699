"""Function-body expansion: the fallback for ops that ONNX defines as functions.

Many ONNX ops (SoftmaxCrossEntropyLoss, Attention, RotaryEmbedding, CenterCropPad, ...) have a
function body in their schema, fixed or built per node from its attributes and input types
(a *context-dependent* function). When no lowering rule exists for a node's revision and its
schema has such a body for the model's opset, the node is replaced by the body's nodes:
inputs and outputs renamed to the node's, internal values given a unique prefix, attribute
references (``ref_attr_name``) resolved from the node's attributes or the schema defaults. A
direct lowering, when one exists, is always preferred.

Body nodes are written against the opset the body declares, which may be older than the
model's; each expanded node records that opset in its metadata
(``onnx_stablehlo.opset``), and the importer resolves its rule at that opset.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Callable, Mapping, Sequence

import onnx
import onnx_ir

from onnx_stablehlo.errors import LoweringError
from onnx_stablehlo.frontend.loader import opset_imports
from onnx_stablehlo.frontend.registry import LoweringRegistry, normalize_domain

__all__ = ["OPSET_METADATA_KEY", "expand_function_ops", "function_body", "has_function_body"]

_log = logging.getLogger(__name__)

OPSET_METADATA_KEY = "onnx_stablehlo.opset"
_MAX_ROUNDS = 8


def has_function_body(domain: str, op_type: str, opset: int) -> bool:
    """Whether the schema of ``op_type`` at ``opset`` defines a function body (fixed or
    context-dependent), so a node without a lowering may still be expanded."""
    try:
        schema = onnx.defs.get_schema(op_type, opset, normalize_domain(domain))
    except onnx.defs.SchemaError:
        return False
    versions = [*schema.function_opset_versions, *schema.context_dependent_function_opset_versions]
    return any(v <= opset for v in versions)


def function_body(
    node: onnx.NodeProto, opset: int, input_types: list[onnx.TypeProto | None]
) -> onnx.FunctionProto | None:
    """The schema's function body for ``node`` at ``opset``, or ``None`` if it has none.

    Args:
        node: the node, with every attribute it sets.
        opset: the model's opset for the node's domain.
        input_types: the type of each input (needed by context-dependent functions); ``None``
            for an omitted input or an unknown type.
    """
    try:
        schema = onnx.defs.get_schema(node.op_type, opset, normalize_domain(node.domain))
    except onnx.defs.SchemaError:
        return None
    fixed = [v for v in schema.function_opset_versions if v <= opset]
    dependent = [v for v in schema.context_dependent_function_opset_versions if v <= opset]
    if fixed and (not dependent or max(fixed) >= max(dependent)):
        text = schema.get_function_with_opset_version(max(fixed))
    elif dependent:
        types = [t.SerializeToString() if t is not None else onnx.TypeProto().SerializeToString()
                 for t in input_types]
        try:
            text = schema.get_context_dependent_function_with_opset_version(
                max(dependent), node.SerializeToString(), types
            )
        except Exception as exc:  # the schema's builder rejects this node
            _log.debug("no context-dependent body for %s: %s", node.op_type, exc)
            return None
    else:
        return None
    body = onnx.FunctionProto()
    body.ParseFromString(text)
    return body if len(body.node) else None


def _with_defaults(node: onnx.NodeProto, opset: int) -> dict[str, onnx.AttributeProto]:
    attributes = {a.name: a for a in node.attribute}
    schema = onnx.defs.get_schema(node.op_type, opset, normalize_domain(node.domain))
    for name, spec in schema.attributes.items():
        if name not in attributes and spec.default_value is not None and spec.default_value.type:
            default = copy.deepcopy(spec.default_value)
            default.name = name
            attributes[name] = default
    return attributes


def _expand_node(
    node: onnx.NodeProto, body: onnx.FunctionProto, prefix: str, opset: int
) -> list[onnx.NodeProto]:
    names: dict[str, str] = {}
    for index, formal in enumerate(body.input):
        names[formal] = node.input[index] if index < len(node.input) else ""
    for index, formal in enumerate(body.output):
        if index < len(node.output) and node.output[index]:
            names[formal] = node.output[index]
    attributes = _with_defaults(node, opset)

    def rename(name: str) -> str:
        if not name:
            return ""
        return names.get(name, prefix + name)

    body_opset = {normalize_domain(o.domain): o.version for o in body.opset_import}
    expanded = []
    for inner in body.node:
        new = _rename_node(inner, rename, attributes)
        if new is None:
            continue
        version = body_opset.get(normalize_domain(new.domain))
        if version is not None:
            entry = new.metadata_props.add()
            entry.key, entry.value = OPSET_METADATA_KEY, str(version)
        expanded.append(new)
    return expanded


def _rename_node(
    inner: onnx.NodeProto,
    rename: Callable[[str], str],
    attributes: dict[str, onnx.AttributeProto],
) -> onnx.NodeProto | None:
    new = onnx.NodeProto()
    new.CopyFrom(inner)
    del new.input[:]
    new.input.extend(rename(n) for n in inner.input)
    del new.output[:]
    new.output.extend(rename(n) for n in inner.output)
    del new.attribute[:]
    for attribute in inner.attribute:
        if attribute.ref_attr_name:
            actual = attributes.get(attribute.ref_attr_name)
            if actual is None:
                continue  # unset optional attribute: the inner op's default applies
            resolved = copy.deepcopy(actual)
            resolved.name = attribute.name
            new.attribute.append(resolved)
        elif attribute.type in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS):
            new.attribute.append(_rename_subgraph_attribute(attribute, rename, attributes))
        else:
            new.attribute.append(attribute)
    return new


def _rename_subgraph_attribute(
    attribute: onnx.AttributeProto,
    rename: Callable[[str], str],
    attributes: dict[str, onnx.AttributeProto],
) -> onnx.AttributeProto:
    result = copy.deepcopy(attribute)
    graphs = [result.g] if attribute.type == onnx.AttributeProto.GRAPH else list(result.graphs)
    for graph in graphs:
        local = {v.name for v in graph.input} | {i.name for i in graph.initializer}
        for n in graph.node:
            local |= set(n.output)

        def scoped(name: str, local: set[str] = local) -> str:
            return name if name in local or not name else rename(name)

        nodes = [_rename_node(n, scoped, attributes) for n in graph.node]
        del graph.node[:]
        graph.node.extend(n for n in nodes if n is not None)
        for output in graph.output:
            output.name = scoped(output.name)
    return result


def expand_function_ops(
    model: onnx_ir.Model, registry: LoweringRegistry, input_shapes: Mapping[str, Sequence[int]] | None = None
) -> onnx_ir.Model | None:
    """Expands nodes without a lowering whose op has a function body (top-level graph).

    Args:
        model: the model.
        registry: the lowering registry (nodes it lowers are kept).
        input_shapes: static shapes of graph inputs, written into the inputs' types first:
            a context-dependent body (CausalConvWithState, ...) may need static shapes that the
            model declares as symbols.

    Returns:
        A new model with those nodes expanded, or ``None`` when nothing was expanded.
    """
    proto = onnx_ir.serde.serialize_model(model)
    for graph_input in proto.graph.input:
        shape = (input_shapes or {}).get(graph_input.name)
        if shape is not None and graph_input.type.HasField("tensor_type"):
            dims = graph_input.type.tensor_type.shape.dim
            if len(dims) == len(shape):
                for dim, size in zip(dims, shape):
                    dim.Clear()
                    dim.dim_value = int(size)
    model_opsets = opset_imports(model)
    changed = False
    for round_index in range(_MAX_ROUNDS):
        try:
            # onnx's shape inference segfaults on a node that omits a required input (a fuzzed
            # ai.onnx.ml TreeEnsemble): such a graph is not inferred.
            if _omits_required_input(proto, model_opsets):
                typed = proto
            else:
                typed = onnx.shape_inference.infer_shapes(proto, strict_mode=False)
        except Exception:  # shape inference is only needed for context-dependent bodies
            typed = proto
        types = {v.name: v.type for v in list(typed.graph.value_info) + list(typed.graph.input)
                 + list(typed.graph.output)}
        for initializer in proto.graph.initializer:
            types.setdefault(initializer.name, onnx.helper.make_tensor_type_proto(
                initializer.data_type, list(initializer.dims)))
        new_nodes: list[onnx.NodeProto] = []
        expanded_any = False
        for index, node in enumerate(proto.graph.node):
            domain = normalize_domain(node.domain)
            opset = _node_opset(node, model_opsets)
            if registry.resolve(domain, node.op_type, opset) is not None:
                new_nodes.append(node)
                continue
            node = _as_onnxruntime_reads(node, domain)
            body = function_body(node, opset, [types.get(name) if name else None for name in node.input])
            if body is None:
                new_nodes.append(node)
                continue
            prefix = f"{node.name or node.op_type}__{round_index}_{index}__"
            new_nodes.extend(_expand_node(node, body, prefix, opset))
            expanded_any = True
        if not expanded_any:
            break
        changed = True
        del proto.graph.node[:]
        proto.graph.node.extend(new_nodes)
    if not changed:
        return None
    try:
        return onnx_ir.serde.deserialize_model(proto)
    except Exception as exc:  # onnx_ir.serde.SerdeError: a body built from bad attributes
        cause = exc
        while cause.__cause__ is not None:
            cause = cause.__cause__
        raise LoweringError(
            f"expanding function bodies gave a malformed graph: {type(cause).__name__}: "
            f"{(str(cause).strip().splitlines() or [''])[0]}"
        ) from exc


def _omits_required_input(proto: onnx.ModelProto, model_opsets: dict[str, int]) -> bool:
    """Whether a node of the main graph leaves a required (single) input empty or absent."""
    for node in proto.graph.node:
        try:
            schema = onnx.defs.get_schema(node.op_type, _node_opset(node, model_opsets), normalize_domain(node.domain))
        except onnx.defs.SchemaError:
            continue
        for index, formal in enumerate(schema.inputs):
            if formal.option == onnx.defs.OpSchema.FormalParameterOption.Single and (
                index >= len(node.input) or not node.input[index]
            ):
                return True
    return False


def _as_onnxruntime_reads(node: onnx.NodeProto, domain: str) -> onnx.NodeProto:
    """``node`` with attribute values that its schema's function body reads differently from
    onnxruntime (and onnx.reference) rewritten to the value with onnxruntime's meaning.

    - Attention ``softcap``: onnxruntime and onnx.reference cap only when ``softcap > 0``; the
      function body caps for any non-zero value (a negative or NaN softcap changed the scores).
    """
    if domain == "" and node.op_type == "Attention":
        kept = [a for a in node.attribute if not (a.name == "softcap" and not a.f > 0)]
        if len(kept) != len(node.attribute):
            node = copy.deepcopy(node)
            del node.attribute[:]
            node.attribute.extend(kept)
    return node


def _node_opset(node: onnx.NodeProto, model_opsets: dict[str, int]) -> int:
    for entry in node.metadata_props:
        if entry.key == OPSET_METADATA_KEY:
            return int(entry.value)
    return model_opsets.get(normalize_domain(node.domain), 1)


def node_opset(node: onnx_ir.Node, model_opsets: dict[str, int]) -> int:
    """The opset a node is written for: its expansion metadata, else the model's opset."""
    value = node.metadata_props.get(OPSET_METADATA_KEY)
    if value is not None:
        return int(value)
    return model_opsets.get(normalize_domain(node.domain), 1)
