"""Lowering a graph's nodes in order: values in scope, node dispatch, subgraphs, outputs.

:class:`GraphLowering` is the one place that walks ONNX nodes. Per node it resolves the rule,
folds the node when its inputs are known at compile time (``folding.py``), otherwise runs the
rule under ``loc(<node name>)``, and binds the results to the node's output names. Values are
held as :class:`~onnx_stablehlo.frontend.context.LoweredValue`: an MLIR value, or a constant /
weight / symbolic value that is emitted on first use (:meth:`GraphLowering.materialize`).
Subgraphs (If branches, Loop and Scan bodies) are lowered into the current region with a scope
of their own that sees the enclosing graphs' values.
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Callable, Sequence
from typing import Any, Literal

import numpy as np
import onnx_ir
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import stablehlo

from onnx_stablehlo.errors import (
    DeclaredShapeWarning,
    DeclaredTypeError,
    FrontendError,
    InvalidGraphError,
    LoweringError,
    OnnxStableHLOError,
    ResourceLimitError,
)
from onnx_stablehlo.frontend import builders, dtypes, limits
from onnx_stablehlo.frontend.context import LoweredValue, LoweringContext, OnnxNode, SequenceResult
from onnx_stablehlo.frontend.dim_resolver import DimResolver
from onnx_stablehlo.frontend.dtypes import DataType
from onnx_stablehlo.frontend.expand import node_opset
from onnx_stablehlo.frontend.folding import (
    SMALL_INITIALIZER_ELEMENTS,
    SymbolicResult,
    constant_getter,
    fold_node,
    lazy_value,
)
from onnx_stablehlo.frontend.layout import Layout
from onnx_stablehlo.frontend.loader import opset_imports
from onnx_stablehlo.frontend.registry import LoweringRegistry, normalize_domain
from onnx_stablehlo.frontend.schema_checks import check_node
from onnx_stablehlo.frontend.shapes import symbols_of
from onnx_stablehlo.frontend.signature import bind_argument, flatten_lowered
from onnx_stablehlo.frontend.support import first_line

__all__ = ["GraphLowering", "Scope", "WeightsMode"]

WeightsMode = Literal["args", "inline"]


class Scope:
    """Values visible in one graph: its own, then its enclosing graphs' (ONNX outer scope)."""

    def __init__(self, parent: Scope | None = None) -> None:
        self.parent = parent
        self.own: dict[str, LoweredValue] = {}
        self.depth = 0 if parent is None else parent.depth + 1

    def get(self, name: str) -> LoweredValue | None:
        scope: Scope | None = self
        while scope is not None:
            found = scope.own.get(name)
            if found is not None:
                return found
            scope = scope.parent
        return None

    def __setitem__(self, name: str, value: LoweredValue) -> None:
        self.own[name] = value

    def __getitem__(self, name: str) -> LoweredValue:
        found = self.get(name)
        if found is None:
            raise KeyError(name)
        return found


class GraphLowering:
    """The state of one import: values in scope, weights taken as arguments, run-time checks.

    Args:
        model: the model (its opset imports resolve each node's rule).
        registry: rules and symbolic evaluators.
        weights: ``"args"`` (weights become ``@main`` arguments) or ``"inline"`` (constants).
        fold_max_elements: see ``import_model``.
        inline_scalar_weights: single-element initializers are constants, not weights.
        runtime_checks: record rules' run-time checks (top-level graph only).
    """

    def __init__(
        self,
        model: onnx_ir.Model,
        registry: LoweringRegistry,
        weights: WeightsMode,
        fold_max_elements: int,
        inline_scalar_weights: bool = False,
        runtime_checks: bool = False,
    ) -> None:
        self.model = model
        self.runtime_checks = runtime_checks
        self.checks: list[tuple[ir.Value, str]] = []
        self.registry = registry
        self.weights = weights
        self.inline_scalar_weights = inline_scalar_weights
        self.fold_max_elements = fold_max_elements
        self.opsets = opset_imports(model)
        self.values = Scope()
        self.parameter_names: list[str] = []
        self.parameters: dict[str, Callable[[], np.ndarray]] = {}
        self.entry_block: ir.Block | None = None
        self.resolver = DimResolver()

    # Graph inputs and outputs ----------------------------------------------------------------

    def bind_constant_input(self, name: str, dtype: DataType, shape: Sequence[int], value: np.ndarray) -> None:
        """Binds graph input ``name`` to a value fixed at compile time (value specialization)."""
        array = np.asarray(value).astype(dtypes.numpy_dtype(dtype), copy=False)
        self.values[name] = LoweredValue(name, dtype, tuple(shape), const=constant_getter(array))

    def bind_arguments(
        self, entry: ir.Block, names: Sequence[str], layouts: Sequence[Layout], shapes: Sequence[Sequence[Any]]
    ) -> None:
        """Binds graph inputs to ``@main``'s arguments (``shapes``: one per argument, symbolic dims
        included), and records the symbols they carry."""
        self.entry_block = entry
        arguments = iter(entry.arguments)
        flat_shapes = iter(shapes)
        for name, layout in zip(names, layouts):
            lowered_input = bind_argument(name, layout, arguments)
            for tensor in flatten_lowered(lowered_input)[1]:
                tensor.shape = tuple(next(flat_shapes))
                self.resolver.bind(tensor.value, tensor.shape)
                self.resolver.input_symbols |= symbols_of(tensor.shape)
            self.values[name] = lowered_input

    def lower_graph(self, graph: onnx_ir.Graph) -> None:
        """Lowers every node of ``graph`` in order, at the current insertion point.

        Nodes out of topological order (a node reading a value a later node produces) are
        sorted first, as onnxruntime does (the onnx checker refuses such a graph).

        Raises:
            InvalidGraphError: the graph has a cycle.
        """
        if _needs_sort(graph):
            try:
                graph.sort()
            except ValueError as exc:
                raise InvalidGraphError(
                    f"graph '{graph.name}' has a cycle: its nodes cannot be put in an order where each "
                    f"value is produced before it is used ({first_line(exc)})"
                ) from exc
        for index, node in enumerate(graph):
            self.lower_node(node, index)

    def emit_outputs(self, graph: onnx_ir.Graph) -> tuple[list[ir.Value], list[tuple[DataType, tuple]], list[Layout]]:
        """``@main``'s results: the graph outputs' tensors, then the packed run-time checks.

        Returns:
            The result values, their ``(dtype, shape)`` and each graph output's layout.
        """
        values: list[ir.Value] = []
        types: list[tuple[DataType, tuple]] = []
        layouts: list[Layout] = []
        for out in graph.outputs:
            lowered = self.values.get(out.name)
            if lowered is None:
                raise InvalidGraphError(f"graph output '{out.name}' is never produced by any node")
            layout, tensors = flatten_lowered(lowered)
            layouts.append(layout)
            with ir.Location.name(out.name):
                for tensor in tensors:
                    values.append(self.materialize(tensor))
                    types.append((tensor.dtype, self.canonical_shape(tensor.shape)))
        if self.checks:
            with ir.Location.name("onnx_stablehlo.runtime_checks"):
                flags = [value for value, _ in self.checks]
                packed = flags[0] if len(flags) == 1 else stablehlo.ConcatenateOp(flags, 0).result
            values.append(packed)
            types.append((DataType.BOOL, (len(flags),)))
        return values, types, layouts

    def add_check(self, ok: ir.Value, message: str) -> bool:
        """Records a run-time check: ``ok`` (i1, any shape) must be all true. Returns whether it
        was recorded: checks are off, or inside a subgraph (a region's value cannot reach
        ``@main``'s results), otherwise."""
        if not self.runtime_checks or self.values.depth != 0:
            return False
        if builders.rank_of(ok):
            ok = builders.reduce(ok, list(range(builders.rank_of(ok))), stablehlo.AndOp, True)
        self.checks.append((builders.reshape(ok, [1]), message))
        return True

    # Values --------------------------------------------------------------------------------

    def materialize(self, value: LoweredValue) -> ir.Value:
        """The MLIR value of ``value``, emitting its constant or weight argument on first use.

        Inside a subgraph (a region), a constant is emitted in the region and cached in the
        subgraph's scope only, since the region's ops do not dominate the outer graph.
        """
        if value.value is not None:
            return value.value
        if value.kind != "tensor":
            raise LoweringError(f"'{value.name}' is a {value.kind}, used where a tensor is expected")
        if value.sym is not None:
            local = self.values.get(value.name)
            if local is not None and local is not value and local.value is not None:
                return local.value
            tensor = builders.shape_tensor(list(value.sym.reshape(-1)))
            tensor = builders.convert(builders.reshape(tensor, value.shape), value.dtype)
            if self.values.depth == 0:
                value.value = tensor
            else:
                self.values[value.name] = dataclasses.replace(value, value=tensor)
            return tensor
        local = self.values.get(value.name)
        if local is not None and local is not value and local.value is not None:
            return local.value
        result = self._emit_constant_or_argument(value)
        if self.values.depth == 0 or (value.parameter and self.weights == "args"):
            value.value = result
        else:
            self.values[value.name] = dataclasses.replace(value, value=result)
        return result

    def _emit_constant_or_argument(self, value: LoweredValue) -> ir.Value:
        assert value.const is not None
        if value.parameter and self.weights == "args":
            assert self.entry_block is not None
            shape = tuple(int(d) for d in value.shape)  # type: ignore[arg-type]
            arg = self.entry_block.add_argument(
                builders.tensor_type(shape, value.dtype), ir.Location.name(value.name)
            )
            self.parameter_names.append(value.name)
            self.parameters[value.name] = value.const
            return arg
        return builders.constant(value.const(), value.dtype)

    def add_initializers(self, graph: onnx_ir.Graph) -> None:
        """Binds ``graph``'s initializers: weights (floats, large tensors) or compile-time constants."""
        for name, init in graph.initializers.items():
            tensor = init.const_value
            if tensor is None:
                continue
            dtype = tensor.dtype
            shape = tuple(int(d) for d in tensor.shape)
            size = int(np.prod(shape, dtype=np.int64))
            weight = dtypes.is_float(dtype) or size > SMALL_INITIALIZER_ELEMENTS
            if self.inline_scalar_weights and size == 1:
                weight = False  # an exponent, a scale, an epsilon: rules may need it as a constant
            if dtype == DataType.STRING:
                weight = False
            self.values[name] = LoweredValue(
                name=name, dtype=dtype, shape=shape, const=lazy_value(tensor), parameter=weight
            )

    def canonical_shape(self, shape: Sequence[Any]) -> tuple:
        """``shape`` with merged symbols replaced by their representative."""
        return tuple(self.resolver.canonical(d) for d in shape)

    # Nodes ---------------------------------------------------------------------------------

    def lower_node(self, node: onnx_ir.Node, index: int) -> None:
        """Folds or lowers one node and binds its outputs.

        Raises:
            LoweringError: an input is undefined, or the rule (or folding) failed untyped.
            FrontendError: the rule rejected the node.
        """
        domain = normalize_domain(node.domain)
        opset = node_opset(node, self.opsets)
        resolved = self.registry.resolve(domain, node.op_type, opset)
        assert resolved is not None, "find_unsupported runs first"
        since, rule = resolved
        onnx_node = OnnxNode(node, index, opset, since)
        inputs = [self.values.get(v.name) if v is not None and v.name else None for v in node.inputs]
        for value, ir_value in zip(inputs, node.inputs):
            if ir_value is not None and ir_value.name and value is None:
                raise onnx_node.error(f"input '{ir_value.name}' is not defined before use", InvalidGraphError)
        check_node(onnx_node, inputs)
        self.resolver.node_name = onnx_node.name
        try:
            results = fold_node(
                node, onnx_node, inputs, self.registry,
                weights_are_args=self.weights == "args", max_elements=self.fold_max_elements,
            )
            if results is None:
                ctx = LoweringContext(
                    onnx_node, inputs, self.materialize, self.lower_subgraph, add_check=self.add_check
                )
                with ir.Location.name(onnx_node.location_name):
                    results = list(rule(ctx, onnx_node))
            self.bind_outputs(node, onnx_node, results)
        except FrontendError as exc:
            completed = _with_node(onnx_node, exc, inputs) if exc.op_type is None else None
            if completed is not None:  # raised by a builder, which does not know the node
                raise completed from exc
            raise
        except OnnxStableHLOError:
            raise
        except Exception as exc:  # a rule's bug or an MLIR builder's type error
            raise onnx_node.error(f"lowering failed ({type(exc).__name__}: {first_line(exc)})", LoweringError) from exc

    def lower_subgraph(
        self, graph: onnx_ir.Graph, inputs: Sequence[ir.Value | LoweredValue], raw: bool = False
    ) -> list:
        """Lowers a subgraph (If branch, Loop/Scan body) at the current insertion point.

        Its inputs are bound to ``inputs`` in order; names it does not define resolve to the
        enclosing graphs' values (outer scope). Returns its outputs as MLIR values, emitted in
        the current block (the caller adds the region's terminator).
        """
        if len(inputs) != len(graph.inputs):
            raise LoweringError(
                f"subgraph '{graph.name}' takes {len(graph.inputs)} inputs, {len(inputs)} given"
            )
        parent = self.values
        self.values = Scope(parent)
        try:
            with builders.region_scope():
                for formal, actual in zip(graph.inputs, inputs):
                    if isinstance(actual, LoweredValue):
                        self.values[formal.name] = dataclasses.replace(actual, name=formal.name)
                        continue
                    shape = self.resolver.dims_of(actual)
                    self.values[formal.name] = LoweredValue(formal.name, builders.dtype_of(actual), shape, value=actual)
                self.add_initializers(graph)
                self.lower_graph(graph)
                outputs = []
                for out in graph.outputs:
                    lowered = self.values.get(out.name)
                    if lowered is None:
                        raise InvalidGraphError(f"subgraph '{graph.name}' output '{out.name}' is never produced")
                    outputs.append(lowered if raw else self.materialize(lowered))
                return outputs
        finally:
            self.values = parent

    def _lowered_result(self, name: str, result: Any) -> LoweredValue:
        if isinstance(result, SymbolicResult):
            array = result.array
            if all(isinstance(v, (int, np.integer, bool, np.bool_)) for v in array.reshape(-1)):
                constant = array.astype(dtypes.numpy_dtype(result.dtype))
                return LoweredValue(name, result.dtype, tuple(array.shape), const=constant_getter(constant))
            return LoweredValue(name, result.dtype, tuple(array.shape), sym=array)
        if isinstance(result, LoweredValue):
            return dataclasses.replace(result, name=name)
        if isinstance(result, SequenceResult):
            elements = [self._lowered_result(f"{name}[{i}]", e) for i, e in enumerate(result.elements)]
            return LoweredValue(name, result.dtype, (), kind=result.kind, elements=elements)
        if isinstance(result, ir.Value):
            return LoweredValue(name, builders.dtype_of(result), self.resolver.dims_of(result), value=result)
        array = np.asarray(result)
        return LoweredValue(name, dtypes.dtype_of_numpy(array.dtype), tuple(array.shape), const=constant_getter(array))

    def bind_outputs(self, node: onnx_ir.Node, onnx_node: OnnxNode, results: list) -> None:
        """Binds a node's results (MLIR values, arrays, lowered or symbolic values) to its outputs."""
        outputs = list(node.outputs)
        if len(results) > len(outputs):
            results = results[: len(outputs)]
        for position, out in enumerate(outputs):
            if out is None or not out.name:
                continue
            result = results[position] if position < len(results) else None
            if result is None:
                raise onnx_node.error(f"output {position} ('{out.name}') was not produced", LoweringError)
            if isinstance(result, (LoweredValue, SequenceResult, SymbolicResult)):
                self.values[out.name] = self._lowered_result(out.name, result)
            elif isinstance(result, ir.Value):
                shape = self.resolver.dims_of(result)
                _check_size(onnx_node, out.name, shape)
                self.values[out.name] = LoweredValue(out.name, builders.dtype_of(result), shape, value=result)
            else:
                array = np.asarray(result)
                self.values[out.name] = LoweredValue(
                    out.name, dtypes.dtype_of_numpy(array.dtype), tuple(array.shape),
                    const=constant_getter(array),
                )
            check_declared(onnx_node, out, self.values.own[out.name])


def _needs_sort(graph: onnx_ir.Graph) -> bool:
    """True if a node of ``graph`` reads a value produced by itself or a later node."""
    position = {id(node): index for index, node in enumerate(graph)}
    for index, node in enumerate(graph):
        for value in node.inputs:
            producer = value.producer() if value is not None else None
            if producer is not None and position.get(id(producer), -1) >= index:
                return True
    return False


def _with_node(
    onnx_node: OnnxNode, exc: FrontendError, inputs: Sequence[LoweredValue | None]
) -> FrontendError | None:
    """``exc`` (raised without a node, by a builder) as the same public error class naming the
    node and its inputs' shapes; ``None`` when that class cannot be built from a message."""
    from onnx_stablehlo import errors

    kind = next(k for k in type(exc).__mro__ if k.__module__ == errors.__name__)
    shown = ", ".join(
        f"'{name}' {[d if isinstance(d, int) else str(d) for d in value.shape]}"
        for name, value in zip(onnx_node.input_names, inputs)
        if value is not None and value.kind == "tensor"
    )
    try:
        return onnx_node.error(f"{exc.detail} (inputs: {shown})" if shown else exc.detail, kind)
    except TypeError:  # a class whose constructor takes more than a message
        return None


def check_declared(onnx_node: OnnxNode, declared: onnx_ir.Value, computed: LoweredValue) -> None:
    """Compares a node result's computed type with the type the model declares for the value
    (a graph output or ``value_info``), as onnxruntime does when it builds a session.

    A different dtype raises (onnxruntime refuses the model); a different rank or static dim
    warns with :class:`DeclaredShapeWarning` and the computed shape is used (onnxruntime warns
    and runs). Symbolic or unknown dims on either side match anything; sequences and optionals
    are not compared.

    Raises:
        DeclaredTypeError: the computed dtype differs from the declared one.
    """
    if computed.kind != "tensor" or declared.type is None:
        return
    if not isinstance(declared.type, onnx_ir.TensorType):
        return
    declared_dtype = declared.dtype
    declared_shape = declared.shape
    computed_text = _type_text(computed.dtype, computed.shape)
    declared_dims = None
    if declared_shape is not None:
        declared_dims = [d if isinstance(d, int) else (d.value or "?") for d in declared_shape]
    if declared_dtype is not None and declared_dtype != DataType.UNDEFINED and declared_dtype != computed.dtype:
        declared_text = _type_text(declared_dtype, declared_dims)
        raise onnx_node.error(
            f"value '{declared.name}' is declared {declared_text} but computed {computed_text}: "
            "the model's type annotation (graph output or value_info) contradicts the op",
            DeclaredTypeError, value_name=declared.name, declared=declared_text, computed=computed_text,
        )
    if declared_dims is None:
        return
    mismatch = len(declared_dims) != len(computed.shape) or any(
        isinstance(d, int) and isinstance(c, (int, np.integer)) and d != int(c)
        for d, c in zip(declared_dims, computed.shape)
    )
    if mismatch:
        declared_text = _type_text(computed.dtype, declared_dims)
        # Attributed to the ONNX model, not to a line of this package: Python would print that
        # line of source under the message, which reads like a traceback. The registry keeps
        # the default once-per-message behaviour.
        warnings.warn_explicit(
            DeclaredShapeWarning(
                f"{onnx_node.domain or 'ai.onnx'}::{onnx_node.op_type} (opset {onnx_node.opset}) at "
                f"{onnx_node.name}: value '{declared.name}' is declared {declared_text} but computed "
                f"{computed_text}; the computed shape is used (as onnxruntime does)",
                value_name=declared.name, node_name=onnx_node.name,
                declared=str(declared_dims), computed=computed_text,
            ),
            DeclaredShapeWarning, "<onnx model>", 0, module=__name__, registry=_WARNING_REGISTRY,
        )


_WARNING_REGISTRY: dict[Any, Any] = {}  # warnings already shown (see warnings.warn_explicit)


def _type_text(dtype: DataType, shape: Sequence[Any] | None) -> str:
    name = DataType(dtype).name.lower()
    if shape is None:
        return f"{name}[unknown rank]"
    return f"{name}[{', '.join(str(d) for d in shape)}]"


def _check_size(onnx_node: OnnxNode, name: str, shape: Sequence[Any]) -> None:
    """Refuses a result whose static element count is over ``limits.MAX_ELEMENTS`` (XLA aborts
    the process on a shape whose element count overflows int64). Zero dims do not count: XLA
    multiplies the other dims first, so [3, 2^63 - 1, 0] aborts it too."""
    count = 1
    for dim in shape:
        if isinstance(dim, (int, np.integer)):
            count *= max(int(dim), 1)
    if count > limits.MAX_ELEMENTS:
        raise onnx_node.error(
            f"output '{name}' of shape {[str(d) for d in shape]} has {count} elements counting only its non-zero dims, over the limit "
            f"of {limits.MAX_ELEMENTS} (onnx_stablehlo.frontend.limits.MAX_ELEMENTS)",
            ResourceLimitError,
        )
