"""``SplitModel``: a model cut at a node whose output *size* depends on run-time values.

NonZero, Unique, Compress (with a run-time condition) and NonMaxSuppression (with run-time
boxes or scores) produce tensors whose sizes depend on the input *values*. XLA needs every
shape static when it compiles, so one static module cannot hold such a node together with the
ops after it. Lowering such a graph raises :class:`~onnx_stablehlo.errors.DataDependentShapeError`;
``CompiledModel`` then hands its ``run`` to a ``SplitModel`` built once.

Strategy: split the graph at that node, D.

1. **Prefix**: the nodes D needs (its ancestors), compiled as an ordinary ``CompiledModel``.
   Its outputs are D's inputs plus every value it computes that a later part (or a graph
   output) reads. Empty when D reads graph inputs and constants only.
2. **Host node**: D alone (with the ``Constant`` nodes it reads) in a small model at the
   model's opsets, run by ``onnx.reference.ReferenceEvaluator`` on numpy arrays, so it follows
   the ONNX spec exactly.
3. **Suffix**: every other node, compiled as an ordinary ``CompiledModel`` whose graph inputs
   are the original graph inputs it reads, D's outputs and the prefix values it reads. Its
   input shapes are unknown until D has run, so it is lowered per shape signature (per
   distinct D output size), each compiled once and kept in its LRU cache (``cache_size``).
   Empty when D's outputs are graph outputs only.

A suffix or prefix that holds another data-dependent node is itself split the same way (its
``CompiledModel`` hits the same error and delegates), so any number of such nodes works, in
sequence or in parallel branches. ``Constant`` nodes are copied into every part that reads
them instead of crossing a part boundary, so they stay compile-time constants there. Values
crossing from the prefix into the suffix are graph inputs of the suffix; small integer ones
that a suffix rule needs at compile time (a Reshape target computed in the prefix) are
specialized on their values by the suffix's ``CompiledModel``, as for any graph input. D's
outputs are not: specializing on them would compile once per distinct *value* (NonZero's
index set) where a further split compiles once per distinct *size*; only when a suffix rule
needs one of them as a constant and nothing else works (a Reshape whose target is Unique's
``counts``) does the suffix specialize on them.

Value specialization comes first: when the data-dependent input is a small integer graph
input (up to 64 elements), ``CompiledModel`` specializes the whole model on its value (one
module, no host round trip); a split is made only when that cannot help (a float input, a
computed value, or a larger input).

Cost:

- a device -> host -> device round trip per call at each split point (the prefix outputs
  the suffix reads are copied to the host and back, D runs on numpy in Python);
- one suffix compile per distinct output size of D (and per input-shape signature): a model
  whose D yields many different sizes compiles many times (bounded in memory by the LRU, not
  in time);
- the prefix and suffix are separate executables, so XLA cannot fuse across the cut.

Alternatives not taken:

- **Bounded sizes with a count**: lower D with its worst-case size (NonZero: the input's
  element count; NonMaxSuppression: ``batches * classes * max_output_boxes_per_class``), pad,
  and carry the real count as an extra value, masking everything downstream. One executable
  and no host trip, but every downstream op must respect the mask (a Reshape, ReduceMean or
  Softmax over the padded axis changes the result), the output size returned to the user
  still needs a slice, and worst cases can be huge (NonZero of an image). It needs a
  masking-aware lowering of every op that can follow; the split needs none.
- **Dynamic (``?``) dims in the suffix**: XLA still needs static shapes at compile time, so
  this saves lowering time only; the refinement per size recompiles anyway.

Limits: only nodes of the main graph are split (a data-dependent node inside an If/Loop/Scan
body still raises); bucketing is not applied to the parts; the parts are lowered per input
shape (no symbolic artifact).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

import numpy as np
import onnx
import onnx.numpy_helper
import onnx_ir

from onnx_stablehlo.errors import DataDependentShapeError, ExecutionError, FeedError, NonConstantInputError, ShapeError
from onnx_stablehlo.frontend import dtypes
from onnx_stablehlo.frontend.dtypes import DataType
from onnx_stablehlo.frontend.importer import graph_input_values
from onnx_stablehlo.frontend.layout import onnx_kind
from onnx_stablehlo.frontend.node_names import describe_node
from onnx_stablehlo.runtime.executables import VALUE_SPECIALIZATION_ELEMENTS
from onnx_stablehlo.runtime.feeds import reject_unknown_feeds

__all__ = ["DATA_DEPENDENT_OPS", "SplitModel", "find_split_node", "split_for"]

# op type -> the inputs whose values decide the output size.
DATA_DEPENDENT_OPS: dict[str, tuple[int, ...]] = {
    "NonZero": (0,),
    "Unique": (0,),
    "Compress": (1,),
    "NonMaxSuppression": (0, 1, 2, 3, 4),
}


def _is_default_domain(node: onnx_ir.Node) -> bool:
    return node.domain in ("", "ai.onnx")


def _is_constant_node(node: onnx_ir.Node) -> bool:
    return _is_default_domain(node) and node.op_type == "Constant" and not any(node.inputs)


def find_split_node(graph: onnx_ir.Graph, error: DataDependentShapeError | None = None) -> int | None:
    """The index, in ``graph``'s node order, of the main-graph node to split at.

    The node named by ``error`` (its op type and display name) when it is a main-graph node;
    otherwise the first NonZero, Unique, Compress or NonMaxSuppression whose size-deciding
    inputs are not all initializers or ``Constant`` outputs. ``None`` when there is none (the
    node sits in a subgraph).
    """
    nodes = list(graph)
    if error is not None and error.node_name:
        for index, node in enumerate(nodes):
            same_op = error.op_type is None or node.op_type == error.op_type
            if same_op and describe_node(node, index) == error.node_name:
                return index
    for index, node in enumerate(nodes):
        if not _is_default_domain(node) or node.op_type not in DATA_DEPENDENT_OPS:
            continue
        for position in DATA_DEPENDENT_OPS[node.op_type]:
            value = node.inputs[position] if position < len(node.inputs) else None
            if value is None or not value.name:
                continue
            producer = value.producer()
            if value.const_value is None and not (producer is not None and _is_constant_node(producer)):
                return index
    return None


class Compiled(Protocol):
    """What the split needs of the ``CompiledModel`` it takes over from (and of its parts).

    ``runtime/model.py`` imports this module, never the reverse: the model hands itself in.
    """

    model: onnx_ir.Model
    options: Any
    input_names: list[str]
    output_names: list[str]
    compile_count: int
    no_values: frozenset[str]
    mlir: str

    def run(self, feeds: Mapping[str, Any]) -> list[Any]: ...

    def part(self, model: onnx_ir.Model, *, input_shapes: Mapping[str, Any], no_values: frozenset[str]) -> Compiled: ...


def split_for(compiled: Compiled, error: DataDependentShapeError, *, eager: bool = False) -> SplitModel | None:
    """The ``SplitModel`` a ``CompiledModel`` delegates to after lowering raised ``error``.

    Args:
        compiled: the model whose lowering failed; its ``part`` compiles the parts with its
            options (lowered per shape, no bucketing).
        error: the error; it names the node to split at.
        eager: called at construction, without feeds. Returns ``None`` (decide at ``run``)
            when value specialization of small integer inputs may still make the node's
            inputs constant, since one specialized module is cheaper than a split.

    Raises:
        DataDependentShapeError: ``error`` itself, when the node is not in the main graph
            (``eager``: ``None`` is returned instead).
    """
    graph = compiled.model.graph
    index = find_split_node(graph, error)
    if index is None:
        if eager:
            return None
        raise error
    if eager and _values_may_help(compiled, graph, index):
        return None
    return SplitModel(
        compiled.model,
        index,
        make_part=compiled.part,
        input_shapes=compiled.options.input_shapes,
        no_values=compiled.no_values,
    )


def _values_may_help(compiled: Compiled, graph: onnx_ir.Graph, index: int) -> bool:
    """Whether every graph input whose values reach node ``index`` is small enough to be
    value-specialized (ignoring paths through Shape and Size, which read only shapes)."""
    fixed = compiled.options.input_shapes
    inputs = {id(v): v for v in graph_input_values(graph)}
    reached: list[onnx_ir.Value] = []
    seen: set[int] = set()
    stack = [v for v in list(graph)[index].inputs if v is not None]
    while stack:
        value = stack.pop()
        if id(value) in seen:
            continue
        seen.add(id(value))
        if id(value) in inputs:
            reached.append(value)
            continue
        producer = value.producer()
        if producer is None or (_is_default_domain(producer) and producer.op_type in ("Shape", "Size")):
            continue
        stack.extend(_uses(producer))
    if not reached:
        return False
    for value in reached:
        if onnx_kind(value.type) != "tensor":
            return False
        shape = fixed.get(value.name)
        if shape is None and value.shape is not None and all(isinstance(d, int) and d >= 0 for d in value.shape):
            shape = tuple(value.shape)
        size = None if shape is None else int(np.prod(shape, dtype=np.int64))
        if dtypes.is_integer(value.dtype) or value.dtype == DataType.BOOL:
            if size is not None and size > VALUE_SPECIALIZATION_ELEMENTS:
                return False
        elif size != 1:
            return False
    return True


def _uses(node: onnx_ir.Node) -> list[onnx_ir.Value]:
    """The values ``node`` reads: its inputs and the outer-scope values its subgraphs read."""
    used = [v for v in node.inputs if v is not None and v.name]
    subgraphs = []
    for attr in node.attributes.values():
        if attr.type == onnx_ir.AttributeType.GRAPH:
            subgraphs.append(attr.value)
        elif attr.type == onnx_ir.AttributeType.GRAPHS:
            subgraphs.extend(attr.value)
    for subgraph in subgraphs:
        defined: set[int] = set()
        for inner_graph in [subgraph, *_nested_graphs(subgraph)]:
            defined.update(id(v) for v in inner_graph.inputs)
            defined.update(id(v) for v in inner_graph.initializers.values())
        for inner in subgraph.all_nodes():
            defined.update(id(v) for v in inner.outputs)
        for inner in subgraph.all_nodes():
            used.extend(v for v in inner.inputs if v is not None and v.name and id(v) not in defined)
        used.extend(v for v in subgraph.outputs if id(v) not in defined)
    return used


def _nested_graphs(graph: onnx_ir.Graph) -> list[onnx_ir.Graph]:
    found = []
    for node in graph.all_nodes():
        for attr in node.attributes.values():
            if attr.type == onnx_ir.AttributeType.GRAPH:
                found.append(attr.value)
            elif attr.type == onnx_ir.AttributeType.GRAPHS:
                found.extend(attr.value)
    return found


def _unique(values: Sequence[onnx_ir.Value]) -> list[onnx_ir.Value]:
    seen: set[int] = set()
    result = []
    for value in values:
        if id(value) not in seen:
            seen.add(id(value))
            result.append(value)
    return result


class SplitModel:
    """A model run as compiled prefix -> host node -> compiled suffix (see the module docstring).

    Attributes:
        input_names: graph inputs, in graph order (``run`` takes a feed for each).
        output_names: graph outputs, in the order ``run`` returns them.
        host_node: the display name of the node run on the host (``'nms'`` or
            ``node #3 producing 'y'``), with its op type in ``host_op_type``.
        prefix: the ``CompiledModel`` of the nodes before the cut, or ``None`` when empty.
            A part does not specialize on the values of the host node's outputs unless a rule
            needs them as constants (see ``_run_part``): that would compile once per distinct
            *value* (NonZero's index set), where a further split compiles once per *size*.
        suffix: the ``CompiledModel`` of the nodes after it (made at the first ``run``, when
            the types of D's outputs are known), or ``None`` when empty or not made yet.
    """

    def __init__(
        self,
        model: onnx_ir.Model,
        node_index: int,
        *,
        make_part: Callable[..., Compiled],
        input_shapes: Mapping[str, Sequence[int]] | None = None,
        no_values: frozenset[str] = frozenset(),
    ) -> None:
        graph = model.graph
        self._no_values = no_values  # inputs whose values come from a host node of an outer split
        nodes = list(graph)
        host = nodes[node_index]
        self.host_op_type = host.op_type
        self.host_node = describe_node(host, node_index)
        self._model = model
        self._make_part = make_part
        self._input_shapes = dict(input_shapes or {})
        inputs = graph_input_values(graph)
        self.input_names = [v.name for v in inputs]
        self.output_names = [v.name for v in graph.outputs]
        self._initializers = {id(v): v for v in graph.initializers.values()}
        self._graph_inputs = inputs
        position = {id(node): i for i, node in enumerate(nodes)}

        def producer_index(value: onnx_ir.Value) -> int | None:
            producer = value.producer()
            return position.get(id(producer)) if producer is not None else None

        # Prefix: the ancestors of D, Constant nodes aside (each part copies those it reads).
        prefix: set[int] = set()
        stack = [i for v in _uses(host) if (i := producer_index(v)) is not None]
        while stack:
            i = stack.pop()
            if i in prefix or _is_constant_node(nodes[i]):
                continue
            prefix.add(i)
            stack.extend(j for v in _uses(nodes[i]) if (j := producer_index(v)) is not None)
        suffix = {
            i for i in range(len(nodes)) if i != node_index and i not in prefix and not _is_constant_node(nodes[i])
        }

        def with_constants(indices: set[int]) -> list[int]:
            needed = set(indices)
            for i in indices:
                for value in _uses(nodes[i]):
                    j = producer_index(value)
                    if j is not None and _is_constant_node(nodes[j]):
                        needed.add(j)
            return sorted(needed)

        prefix_values = {id(o) for i in prefix for o in nodes[i].outputs}
        suffix_uses = [v for i in sorted(suffix) for v in _uses(nodes[i])]
        crossing = [v for v in suffix_uses + list(graph.outputs) if id(v) in prefix_values]
        host_inputs = [v for v in host.inputs if v is not None and v.name]
        self._prefix_outputs = _unique([v for v in host_inputs if id(v) in prefix_values] + crossing)
        self._prefix_nodes = [nodes[i] for i in sorted(prefix)]
        self.prefix: Compiled | None = None
        if self._prefix_nodes:
            prefix_uses = {id(v) for i in prefix for v in _uses(nodes[i])}
            self.prefix = self._part(
                "prefix",
                [v for v in inputs if id(v) in prefix_uses],
                self._prefix_outputs,
                [nodes[i] for i in with_constants(prefix)],
            )

        # Host node: D and the Constant nodes it reads, as a model at the model's opsets.
        constant_indices = [
            j for v in _uses(host) if (j := producer_index(v)) is not None and _is_constant_node(nodes[j])
        ]
        constant_names = {o.name for j in constant_indices for o in nodes[j].outputs}
        self._host_inputs = [v.name for v in _unique(host_inputs) if v.name not in constant_names]
        self._host_opset = graph.opset_imports.get("", graph.opset_imports.get("ai.onnx"))
        self._host_input_positions = {
            slot: value.name for slot, value in enumerate(host.inputs) if value is not None and value.name
        }
        self._host_outputs = [o.name for o in host.outputs if o is not None and o.name]
        axis = host.attributes.get("axis")
        self._host_axis = axis.as_int() if axis is not None and axis.type == onnx_ir.AttributeType.INT else None
        node_protos = [onnx_ir.serde.serialize_node(nodes[j]) for j in sorted(set(constant_indices))]
        host_proto = onnx_ir.serde.serialize_node(host)
        if host.op_type == "NonMaxSuppression" and _is_default_domain(host):
            # onnx.reference's NonMaxSuppression fails on omitted optional inputs; give their
            # defaults explicitly: max_output_boxes_per_class 0 (selects no box, as onnxruntime
            # does), iou_threshold 0, no score threshold.
            defaults = (np.zeros(1, np.int64), np.zeros(1, np.float32), np.full(1, -np.inf, np.float32))
            for slot, default in zip((2, 3, 4), defaults):
                while len(host_proto.input) <= slot:
                    host_proto.input.append("")
                if not host_proto.input[slot]:
                    name = f"{host_proto.output[0]}__default_input_{slot}"
                    node_protos.append(onnx.helper.make_node(
                        "Constant", [], [name], value=onnx.numpy_helper.from_array(default)
                    ))
                    host_proto.input[slot] = name
        node_protos.append(host_proto)
        host_graph = onnx.helper.make_graph(
            node_protos,
            "host",
            [onnx.helper.make_empty_tensor_value_info(n) for n in self._host_inputs],
            [onnx.helper.make_empty_tensor_value_info(n) for n in self._host_outputs],
        )
        opsets = [onnx.helper.make_opsetid(d, v) for d, v in graph.opset_imports.items() if d != "ai.onnx"]
        host_model = onnx.helper.make_model(host_graph, opset_imports=opsets)
        from onnx.reference import ReferenceEvaluator

        self._evaluator = ReferenceEvaluator(host_model)

        # Suffix: everything else; made at the first run, when its input types are known.
        output_ids = {id(v) for v in graph.outputs}
        constant_outputs = {  # Constant nodes whose outputs are graph outputs
            i for i, node in enumerate(nodes)
            if _is_constant_node(node) and any(id(o) in output_ids for o in node.outputs)
        }
        suffix_indices = sorted(set(with_constants(suffix)) | constant_outputs)
        self._suffix_nodes = [nodes[i] for i in suffix_indices]
        suffix_defined = {id(o) for i in suffix_indices for o in nodes[i].outputs}
        self._suffix_outputs = _unique([v for v in graph.outputs if id(v) in suffix_defined])
        graph_input_ids = {id(v) for v in inputs}
        host_output_ids = {id(o) for o in host.outputs if o is not None}
        external = [v for v in suffix_uses if id(v) not in suffix_defined and id(v) not in self._initializers]
        reachable = graph_input_ids | host_output_ids | prefix_values
        external = [v for v in external if id(v) in reachable]
        external_ids = {id(v) for v in external}
        ordered_inputs = [v for v in inputs if id(v) in external_ids]
        self._suffix_inputs = _unique(ordered_inputs + [v for v in external if id(v) not in graph_input_ids])
        self.suffix: Compiled | None = None

    # Parts ------------------------------------------------------------------------------------

    def _part(
        self,
        name: str,
        inputs: Sequence[onnx_ir.Value],
        outputs: Sequence[onnx_ir.Value],
        nodes: Sequence[onnx_ir.Node],
        types: Mapping[str, Any] | None = None,
        no_values: frozenset[str] = frozenset(),
    ) -> Compiled:
        used = [v for node in nodes for v in _uses(node)]
        initializers = _unique([v for v in used + list(outputs) if id(v) in self._initializers])
        graph = self._model.graph
        view = onnx_ir.GraphView(
            list(inputs), list(outputs), nodes=list(nodes), initializers=tuple(initializers),
            opset_imports=graph.opset_imports, name=f"{graph.name or 'main'}_{name}",
        )
        part_graph = view.clone()
        for value in part_graph.inputs:
            if types and value.name in types:
                value.type, value.shape = types[value.name]
        part = onnx_ir.Model(
            part_graph, ir_version=self._model.ir_version, producer_name="onnx-stablehlo split",
            functions=list(self._model.functions.values()),
        )
        shapes = {v.name: s for v in inputs if (s := self._input_shapes.get(v.name)) is not None}
        no_values = (no_values | self._no_values) & {v.name for v in inputs}
        return self._make_part(part, input_shapes=shapes, no_values=frozenset(no_values))

    def _make_suffix(self, env: Mapping[str, Any]) -> Compiled:
        graph_inputs = {id(v) for v in self._graph_inputs}
        types: dict[str, Any] = {}
        for value in self._suffix_inputs:
            if id(value) in graph_inputs:
                continue  # keeps its declared type
            types[value.name] = _type_of(value.name, env[value.name])
        no_values = frozenset(self._host_outputs)
        return self._part("suffix", self._suffix_inputs, self._suffix_outputs, self._suffix_nodes, types, no_values)

    # Running ----------------------------------------------------------------------------------

    def run(self, feeds: Mapping[str, Any]) -> list[Any]:
        """Runs prefix, host node and suffix; returns one value per graph output.

        Feeds are checked by the parts (dtype, rank, static dims), as by ``CompiledModel.run``.
        """
        reject_unknown_feeds(feeds, self.input_names)
        for name in self.input_names:
            if name not in feeds:
                raise FeedError(f"missing feed for input '{name}'", name)
        env: dict[str, Any] = dict(feeds)
        if self.prefix is not None:
            env.update(zip(self.prefix.output_names, _run_part(self.prefix, env)))
        host_feeds = {n: self._value(n, env) for n in self._host_inputs}
        self._validate_host_inputs(host_feeds)
        if self.host_op_type == "Compress":
            self._compress_condition_like_onnxruntime(host_feeds)
        try:
            results = self._evaluator.run(None, host_feeds)
        except Exception as exc:
            raise ExecutionError(
                f"{self.host_op_type} at {self.host_node}, run on the host by onnx.reference, "
                f"failed: {type(exc).__name__}: {exc}"
            ) from exc
        env.update((n, np.asarray(r, order="C")) for n, r in zip(self._host_outputs, results))  # 0-d stays 0-d
        if self._suffix_outputs:
            if self.suffix is None:
                self.suffix = self._make_suffix(env)
            env.update(zip(self.suffix.output_names, _run_part(self.suffix, env)))
        return [self._value(n, env) for n in self.output_names]

    def __call__(self, **feeds: Any) -> list[Any]:
        return self.run(feeds)

    def _validate_host_inputs(self, feeds: Mapping[str, Any]) -> None:
        """Checks the host node's inputs as onnxruntime does, so a bad shape is a ShapeError
        naming the input rather than onnx.reference's IndexError wrapped in ExecutionError."""
        names = self._host_input_positions
        shapes = {position: np.shape(feeds[name]) for position, name in names.items() if name in feeds}

        def fail(message: str) -> ShapeError:
            return ShapeError(message, op_type=self.host_op_type, domain="", opset=self._host_opset, node_name=self.host_node)

        if self.host_op_type == "NonMaxSuppression" and 0 in shapes and 1 in shapes:
            boxes, scores = shapes[0], shapes[1]
            if len(boxes) != 3 or boxes[2] != 4:
                raise fail(f"boxes must have shape [batch, boxes, 4], got {list(boxes)}")
            if len(scores) != 3 or scores[0] != boxes[0] or scores[2] != boxes[1]:
                raise fail(f"scores must have shape [batch, classes, boxes] = [{boxes[0]}, C, {boxes[1]}], got {list(scores)}")

    def _compress_condition_like_onnxruntime(self, feeds: dict[str, Any]) -> None:
        """Flattens Compress's condition and cuts it to the axis length, as onnxruntime does
        (onnx.reference, which runs the host node, fails on a longer condition)."""
        data, condition = self._host_input_positions.get(0), self._host_input_positions.get(1)
        if condition not in feeds or data not in feeds:
            return
        shape, axis = np.shape(feeds[data]), self._host_axis
        if axis is None:
            size = int(np.prod(shape, dtype=np.int64))
        elif -len(shape) <= axis < len(shape):
            size = shape[axis]
        else:
            return
        feeds[condition] = np.asarray(feeds[condition]).reshape(-1)[:size]

    def _value(self, name: str, env: Mapping[str, Any]) -> Any:
        if name in env:
            return env[name]
        initializer = self._model.graph.initializers.get(name)
        if initializer is not None and initializer.const_value is not None:
            return np.asarray(initializer.const_value.numpy())
        raise ShapeError(f"value '{name}' is not computed by any part of the split model")

    # Introspection ----------------------------------------------------------------------------

    @property
    def compile_count(self) -> int:
        """Compiles so far, prefix and suffix (and their own splits) together."""
        return sum(part.compile_count for part in (self.prefix, self.suffix) if part is not None)

    @property
    def mlir(self) -> str:
        """The StableHLO of the parts most recently used, with a comment naming the host node."""
        sections = [f"// split at {self.host_op_type} {self.host_node}: the size of its outputs depends on values"]
        if self.prefix is not None:
            sections.append("// ---- prefix (compiled) ----\n" + _text(self.prefix))
        else:
            sections.append("// ---- prefix: empty ----")
        sections.append(
            f"// ---- host: {self.host_op_type} {self.host_node} runs on numpy (onnx.reference): "
            f"{', '.join(self._host_inputs)} -> {', '.join(self._host_outputs)} ----"
        )
        if not self._suffix_outputs:
            sections.append("// ---- suffix: empty ----")
        elif self.suffix is None:
            sections.append("// ---- suffix: not compiled yet (its input sizes are known after the first run) ----")
        else:
            sections.append("// ---- suffix (compiled per size of the host node's outputs) ----\n" + _text(self.suffix))
        return "\n".join(sections) + "\n"

    def __repr__(self) -> str:
        return (
            f"SplitModel(at {self.host_op_type} {self.host_node}, prefix {len(self._prefix_nodes)} nodes, "
            f"suffix {sum(not _is_constant_node(n) for n in self._suffix_nodes)} nodes, "
            f"{self.compile_count} compiles)"
        )


def _run_part(part: Compiled, env: Mapping[str, Any]) -> list[Any]:
    feeds = {n: env[n] for n in part.input_names}
    try:
        return part.run(feeds)
    except NonConstantInputError as exc:
        if isinstance(exc, DataDependentShapeError) or not part.no_values:
            raise
        # A rule needs a host node's output as a constant (a Reshape target computed by
        # Unique): specialize on the values of the small ones after all.
        part.no_values = frozenset()
        return part.run(feeds)


def _text(part: Compiled) -> str:
    try:
        return part.mlir.rstrip("\n")
    except ShapeError:
        return "// not compiled yet"


def _type_of(name: str, value: Any) -> tuple[onnx_ir.TypeProtocol, onnx_ir.Shape | None]:
    """An ONNX type of unknown rank for a value computed by an earlier part."""
    if isinstance(value, (list, tuple)):
        if not value:
            raise ShapeError(f"value '{name}' is an empty sequence; its element type is unknown")
        element = dtypes.dtype_of_numpy(np.asarray(value[0]).dtype)
        return onnx_ir.SequenceType(onnx_ir.TensorType(element)), None
    if value is None:
        raise ShapeError(f"value '{name}' is an empty optional; its type is unknown")
    return onnx_ir.TensorType(dtypes.dtype_of_numpy(np.asarray(value).dtype)), None
