"""What a lowering rule sees: the node (:class:`OnnxNode`) and its context (:class:`LoweringContext`).

A rule reads only its node: input values, their shapes and dtypes, constant inputs, and
attributes (with defaults from the ``onnx.defs`` schema of the node's revision, never retyped).
It returns one entry per ONNX output: an ``ir.Value``, a numpy array when the result is known at
compile time (``Shape`` of a static value, for instance), or ``None`` for an omitted optional
output.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import onnx
import onnx_ir
from jaxlib.mlir import ir

from onnx_stablehlo.errors import (
    AttributeShapeError,
    FrontendError,
    InvalidAttributeError,
    InvalidInputError,
    NonConstantInputError,
    ShapeError,
    UnsupportedAttributeError,
    UnsupportedDtypeError,
)
from onnx_stablehlo.frontend import builders, dtypes
from onnx_stablehlo.frontend.dtypes import DataType
from onnx_stablehlo.frontend.node_names import describe_node, location_name
from onnx_stablehlo.frontend.shapes import Shape

__all__ = ["LoweredValue", "OnnxNode", "LoweringContext", "RuleResult", "SequenceResult"]


@dataclasses.dataclass
class SequenceResult:
    """A rule's result that is an ONNX sequence or optional rather than a tensor.

    Attributes:
        elements: the element values (``ir.Value``, numpy arrays, or :class:`LoweredValue`).
        dtype: the element dtype (needed for an empty sequence).
        kind: ``"sequence"`` or ``"optional"`` (an optional holds zero or one element).
    """

    elements: list
    dtype: DataType
    kind: str = "sequence"

RuleResult = Sequence["ir.Value | np.ndarray | None"]


@dataclasses.dataclass
class LoweredValue:
    """An ONNX value during lowering.

    At least one of ``value`` (emitted) or ``const`` (known at compile time) is set.

    Attributes:
        name: the ONNX value name.
        dtype: ONNX element type.
        shape: dims (ints today; :class:`SymbolicDim` once dims stay symbolic).
        value: the MLIR value, once emitted.
        const: a getter of the compile-time value (lazy, so large weights are read only when
            needed), or ``None``.
        parameter: True for a weight that becomes a ``@main`` argument under ``weights="args"``;
            parameters are never folded into constants behind the user's back.
        sym: symbolic elements of a shape computation (see below).
        kind: ``"tensor"``, ``"sequence"`` (``elements`` lists the tensors; the length is
            known at compile time) or ``"optional"`` (``elements`` is empty or holds one value).
        elements: the element values of a sequence or optional.
    """

    name: str
    dtype: DataType
    shape: Shape
    value: ir.Value | None = None
    const: Callable[[], np.ndarray] | None = None
    parameter: bool = False
    kind: str = "tensor"
    elements: list[LoweredValue] | None = None
    sym: np.ndarray | None = None
    """For a small integer tensor computed from shapes: its elements as ints and
    :class:`SymbolicDim` expressions (a numpy object array), see ``symbolic_eval.py``."""

    @property
    def size(self) -> int:
        return int(np.prod([d if isinstance(d, int) else 1 for d in self.shape], dtype=np.int64))


@functools.cache
def _schema(op_type: str, since_version: int, domain: str) -> onnx.defs.OpSchema | None:
    try:
        return onnx.defs.get_schema(op_type, since_version, domain)
    except onnx.defs.SchemaError:
        return None


class OnnxNode:
    """A read-only view of one ONNX node for its lowering rule.

    Attributes:
        op_type: e.g. ``"Gemm"``.
        domain: ``""`` for the default domain.
        opset: the model's opset for ``domain``.
        since_version: the revision of the op the rule was resolved for.
        name: the node name, or ``node #k producing 'y'`` for an unnamed node.
        location_name: the name put in ``loc(...)`` of every op emitted for this node.
    """

    def __init__(self, node: onnx_ir.Node, index: int, opset: int, since_version: int) -> None:
        self.ir_node = node
        self.op_type = node.op_type
        self.domain = "" if node.domain in ("", "ai.onnx") else node.domain
        self.opset = opset
        self.since_version = since_version
        self.name = describe_node(node, index)
        self.location_name = location_name(node, index)
        self.input_names = [v.name if v is not None else "" for v in node.inputs]
        self.output_names = [v.name if v is not None else "" for v in node.outputs]
        self._schema = _schema(self.op_type, since_version, self.domain)

    def __repr__(self) -> str:
        return f"OnnxNode({self.op_type}-{self.since_version} {self.name})"

    def has_output(self, index: int) -> bool:
        """True if output ``index`` exists and is named (an omitted optional output is not)."""
        return index < len(self.output_names) and bool(self.output_names[index])

    # Attributes ----------------------------------------------------------------------------

    def has_attr(self, name: str) -> bool:
        """True if the node sets ``name`` explicitly."""
        return name in self.ir_node.attributes

    def attr(self, name: str, default: Any = None) -> Any:
        """The attribute's value: set on the node, else the schema default, else ``default``.

        Ints, floats and strings come back as Python values, tensors as numpy arrays, graphs as
        ``onnx_ir.Graph``, lists as lists.
        """
        attribute = self.ir_node.attributes.get(name)
        if attribute is not None:
            return _attr_value(attribute)
        if self._schema is not None and name in self._schema.attributes:
            proto = self._schema.attributes[name].default_value
            if proto is not None and proto.type != onnx.AttributeProto.UNDEFINED:
                value = onnx.helper.get_attribute_value(proto)
                if isinstance(value, bytes):
                    return value.decode()
                if isinstance(value, list) and value and isinstance(value[0], bytes):
                    return [v.decode() for v in value]
                return value
        return default

    def attr_int(self, name: str, default: int | None = None) -> int:
        value = self.attr(name, default)
        if value is None:
            raise self._missing(name)
        return int(value)

    def attr_float(self, name: str, default: float | None = None) -> float:
        value = self.attr(name, default)
        if value is None:
            raise self._missing(name)
        return float(value)

    def attr_ints(self, name: str, default: Sequence[int] | None = None) -> list[int] | None:
        value = self.attr(name, default)
        return None if value is None else [int(v) for v in value]

    def attr_floats(self, name: str, default: Sequence[float] | None = None) -> list[float] | None:
        value = self.attr(name, default)
        return None if value is None else [float(v) for v in value]

    def attr_str(self, name: str, default: str | None = None) -> str:
        value = self.attr(name, default)
        if value is None:
            raise self._missing(name)
        return value.decode() if isinstance(value, bytes) else str(value)

    def _missing(self, name: str) -> FrontendError:
        return self.error(f"required attribute '{name}' is missing", UnsupportedAttributeError)

    def error(self, message: str, kind: type[FrontendError] = FrontendError, **fields: Any) -> FrontendError:
        """An error of ``kind`` naming this node's op, domain, opset and name (``fields``: the
        kind's own attributes, such as ``attribute=`` of an ``InvalidAttributeError``)."""
        return kind(
            message, op_type=self.op_type, domain=self.domain, opset=self.opset, node_name=self.name, **fields
        )

    def invalid_attribute(
        self, name: str, value: Any, allowed: str, kind: type[InvalidAttributeError] = InvalidAttributeError
    ) -> FrontendError:
        """An :class:`InvalidAttributeError` (or ``kind``): ``name`` carries ``value``, the spec
        allows ``allowed``."""
        message = f"attribute {name}={value!r} is invalid (allowed: {allowed})"
        return self.error(message, kind, attribute=name, value=value)


def _attr_value(attribute: onnx_ir.Attr) -> Any:
    kind = attribute.type
    types = onnx_ir.AttributeType
    if kind == types.INT:
        return attribute.as_int()
    if kind == types.FLOAT:
        return attribute.as_float()
    if kind == types.STRING:
        return attribute.as_string()
    if kind == types.INTS:
        return list(attribute.as_ints())
    if kind == types.FLOATS:
        return list(attribute.as_floats())
    if kind == types.STRINGS:
        return list(attribute.as_strings())
    if kind == types.TENSOR:
        return attribute.as_tensor().numpy()
    if kind == types.TENSORS:
        return [t.numpy() for t in attribute.as_tensors()]
    if kind == types.GRAPH:
        return attribute.as_graph()
    if kind == types.GRAPHS:
        return list(attribute.as_graphs())
    return attribute.value


class LoweringContext:
    """The lowering context of one node: its inputs as MLIR values or constants, and helpers.

    Created by the importer per node; the active MLIR insertion point and location are the
    node's while its rule runs.
    """

    def __init__(
        self,
        node: OnnxNode,
        inputs: Sequence[LoweredValue | None],
        materialize: Callable[[LoweredValue], ir.Value],
        lower_subgraph: Callable[[onnx_ir.Graph, Sequence[ir.Value]], list[ir.Value]] | None = None,
        add_check: Callable[[ir.Value, str], bool] | None = None,
    ) -> None:
        self.node = node
        self._inputs = list(inputs)
        self._materialize = materialize
        self._lower_subgraph = lower_subgraph
        self._add_check = add_check

    # Run-time checks -------------------------------------------------------------------------

    def runtime_check(self, ok: ir.Value, message: str) -> bool:
        """Asks the runtime to raise ``RuntimeCheckError`` with ``message`` (prefixed with the
        node) when the i1 tensor ``ok`` is not all true after a run.

        Returns whether the check was recorded (``import_model(runtime_checks=True)``, top-level
        graph only); otherwise the rule's clamping semantics apply unchecked.
        """
        if self._add_check is None:
            return False
        node = self.node
        where = f"{node.domain or 'ai.onnx'}::{node.op_type} (opset {node.opset}) at {node.name}"
        return self._add_check(ok, f"{where}: {message}")

    # Inputs --------------------------------------------------------------------------------

    @property
    def num_inputs(self) -> int:
        """The number of input slots, trailing omitted optionals included."""
        return len(self._inputs)

    def has_input(self, index: int) -> bool:
        """True if input ``index`` is present (not omitted, not past the end)."""
        return index < len(self._inputs) and self._inputs[index] is not None

    def lowered(self, index: int) -> LoweredValue:
        """The :class:`LoweredValue` of input ``index``.

        Raises:
            FrontendError: the input is omitted.
        """
        if not self.has_input(index):
            raise self.error(f"input {index} is required but omitted")
        return self._inputs[index]  # type: ignore[return-value]

    def input(self, index: int) -> ir.Value:
        """Input ``index`` as an MLIR value (constants and weights are emitted on first use)."""
        return self._materialize(self.lowered(index))

    def optional_input(self, index: int) -> ir.Value | None:
        """Like :meth:`input`, but ``None`` for an omitted optional input."""
        return self.input(index) if self.has_input(index) else None

    def inputs(self) -> list[ir.Value | None]:
        """All inputs as MLIR values, ``None`` for omitted ones."""
        return [self.optional_input(i) for i in range(self.num_inputs)]

    def input_kind(self, index: int) -> str:
        """``"tensor"``, ``"sequence"`` or ``"optional"`` for input ``index``."""
        return self.lowered(index).kind

    def elements(self, index: int) -> list[LoweredValue]:
        """The elements of a sequence or optional input.

        Raises:
            FrontendError: the input is a tensor.
        """
        value = self.lowered(index)
        if value.elements is None:
            raise self.error(f"input {index} ('{self.node.input_names[index]}') is a tensor, not a sequence")
        return value.elements

    def materialize(self, value: LoweredValue) -> ir.Value:
        """The MLIR value of a :class:`LoweredValue` (an element of a sequence, say)."""
        return self._materialize(value)

    def input_shape(self, index: int) -> Shape:
        return self.lowered(index).shape

    def input_static_shape(self, index: int) -> tuple[int, ...]:
        """Input ``index``'s shape, which must be static here.

        Raises:
            ShapeError: a dim is symbolic.
        """
        shape = self.lowered(index).shape
        if not all(isinstance(d, int) for d in shape):
            raise self.error(f"input '{self.node.input_names[index]}' needs a static shape here, got {shape}", ShapeError)
        return shape  # type: ignore[return-value]

    def input_dtype(self, index: int) -> DataType:
        return self.lowered(index).dtype

    def input_rank(self, index: int) -> int:
        return len(self.lowered(index).shape)

    def is_constant_input(self, index: int) -> bool:
        """True if input ``index`` is present and known at compile time."""
        return self.has_input(index) and self._inputs[index].const is not None  # type: ignore[union-attr]

    def constant_input(self, index: int) -> np.ndarray:
        """The compile-time value of input ``index`` (an axes, shape or pads input ...).

        Raises:
            NonConstantInputError: the input is computed at run time.
        """
        value = self.lowered(index)
        if value.const is None:
            raise self.error(
                f"input {index} ('{self.node.input_names[index]}') must be known at compile time "
                "(a constant, an initializer or a shape computation)",
                NonConstantInputError,
            )
        return value.const()

    def symbolic_input(self, index: int) -> np.ndarray:
        """Input ``index`` as a numpy object array of ints and :class:`SymbolicDim` expressions.

        For shape-like inputs (a Reshape target, an Expand shape) that are known at compile time
        up to symbolic dims.

        Raises:
            NonConstantInputError: the input is neither constant nor a shape computation.
        """
        value = self.lowered(index)
        if value.sym is not None:
            return value.sym
        array = self.constant_input(index)
        result = np.empty(array.shape, dtype=object)
        result[...] = array.astype(np.int64) if array.dtype.kind in "iub" else array
        return result

    def constant_int(self, index: int, what: str) -> int:
        """A compile-time scalar (or one-element) input as a Python int.

        Raises:
            NonConstantInputError: the input is computed at run time.
            ShapeError: it holds more than one value (``what`` names it in the message).
        """
        array = np.asarray(self.constant_input(index))
        if array.size != 1:
            raise self.error(f"{what} must hold one value, got shape {list(array.shape)}", ShapeError)
        return int(array.reshape(-1)[0])

    def constant_ints(self, index: int) -> list[int]:
        """A compile-time int input (axes, starts, pads, shape, repeats ...) as Python ints, flattened.

        Raises:
            NonConstantInputError: the input is computed at run time.
        """
        return [int(v) for v in np.asarray(self.constant_input(index)).reshape(-1)]

    def optional_constant_input(self, index: int) -> np.ndarray | None:
        """Like :meth:`constant_input`, but ``None`` for an omitted input (or an empty name)."""
        return self.constant_input(index) if self.has_input(index) else None

    def lower_subgraph_values(
        self, graph: onnx_ir.Graph, inputs: Sequence[ir.Value | LoweredValue]
    ) -> list[LoweredValue]:
        """Like :meth:`lower_subgraph`, but inputs and outputs may be sequences or constants.

        Outputs come back as :class:`LoweredValue` (not materialized), so a rule can forward
        a constant or a sequence without emitting anything.
        """
        if self._lower_subgraph is None:
            raise self.error("subgraphs cannot be lowered in this context")
        return self._lower_subgraph(graph, inputs, raw=True)  # type: ignore[call-arg]

    def lower_subgraph(self, graph: onnx_ir.Graph, inputs: Sequence[ir.Value]) -> list[ir.Value]:
        """Lowers a graph attribute (If branch, Loop or Scan body) at the current insertion point.

        ``inputs`` bind the subgraph's inputs in order (e.g. a region's block arguments); values
        of the enclosing graphs are visible inside (ONNX outer scope; StableHLO regions are not
        isolated from above). Returns the subgraph's outputs; the caller emits the terminator
        (``stablehlo.return``) of the region it is building.
        """
        if self._lower_subgraph is None:
            raise self.error("subgraphs cannot be lowered in this context")
        return self._lower_subgraph(graph, inputs)

    # Errors --------------------------------------------------------------------------------

    def error(self, message: str, kind: type[FrontendError] = FrontendError, **fields: Any) -> FrontendError:
        """An error of ``kind`` naming this node's op, domain, opset and name."""
        return self.node.error(message, kind, **fields)

    def invalid_attribute(
        self, name: str, value: Any, allowed: str, kind: type[InvalidAttributeError] = InvalidAttributeError
    ) -> FrontendError:
        """An :class:`InvalidAttributeError` (or ``kind``) naming the attribute, its value and what
        the spec allows."""
        return self.node.invalid_attribute(name, value, allowed, kind)

    def invalid_input(self, index: int, message: str) -> FrontendError:
        """An :class:`InvalidInputError` about input ``index``: ``input 1 ('B') <message>``."""
        name = self.node.input_names[index] if index < len(self.node.input_names) else ""
        return self.error(
            f"input {index} ('{name}') {message}", InvalidInputError, input_index=index, input_name=name
        )

    def attr_axis(self, name: str, rank: int, default: int | None = None) -> int:
        """Integer attribute ``name`` (an axis) normalized for ``rank``.

        Raises:
            AttributeShapeError: it is outside ``[-rank, rank - 1]`` (an InvalidAttributeError
                and a ShapeError).
        """
        axis = self.node.attr_int(name, default)
        if not -rank <= axis < max(rank, 1):
            raise self.invalid_attribute(
                name, axis, f"[{-rank}, {max(rank - 1, 0)}] for an input of rank {rank}", AttributeShapeError
            )
        return axis + rank if axis < 0 else axis

    def attr_axes(self, name: str, rank: int) -> list[int] | None:
        """Ints attribute ``name`` (axes) normalized for ``rank``; ``None`` when absent.

        Raises:
            AttributeShapeError: an axis is out of range.
            InvalidAttributeError: an axis is repeated.
        """
        axes = self.node.attr_ints(name)
        if axes is None:
            return None
        normalized = []
        for axis in axes:
            if not -rank <= axis < max(rank, 1):
                raise self.invalid_attribute(
                    name, axes, f"axes in [{-rank}, {max(rank - 1, 0)}] for an input of rank {rank}",
                    AttributeShapeError,
                )
            normalized.append(axis + rank if axis < 0 else axis)
        if len(set(normalized)) != len(normalized):
            raise self.invalid_attribute(name, axes, "distinct axes")
        return normalized

    def unsupported_attribute(self, name: str, value: Any, accepted: str) -> FrontendError:
        """An :class:`UnsupportedAttributeError` naming the attribute, its value and what works."""
        return self.error(f"attribute {name}={value!r} is not supported (accepted: {accepted})", UnsupportedAttributeError)

    def unsupported_dtype(self, dtype: DataType, accepted: str = "") -> FrontendError:
        extra = f" (accepted: {accepted})" if accepted else ""
        return self.error(f"dtype {DataType(dtype).name} is not supported{extra}", UnsupportedDtypeError)

    # Helpers -------------------------------------------------------------------------------

    def axis(self, axis: int, rank: int) -> int:
        """Normalizes a possibly negative axis for ``rank``.

        Raises:
            FrontendError: the axis is out of range.
        """
        if not -rank <= axis < max(rank, 1):
            raise self.error(f"axis {axis} is out of range for rank {rank}", ShapeError)
        return axis + rank if axis < 0 else axis

    def numpy_dtype(self, index: int) -> np.dtype:
        return dtypes.numpy_dtype(self.input_dtype(index))

    def constant(self, array: np.ndarray, dtype: DataType | None = None) -> ir.Value:
        """Emits ``array`` as a ``stablehlo.constant``."""
        return builders.constant(array, dtype)
