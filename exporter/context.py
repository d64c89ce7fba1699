"""What an export rule sees: :class:`ExportContext` (one op, its ONNX operands, emit helpers) over
a :class:`GraphScope` (the ONNX graph being filled: the main graph or a Loop/If body) and a
:class:`Frame` (the MLIR value -> ONNX value map of one function or region invocation).

After JAX's ``LoweringRuleContext``: a rule reads its operands as ONNX values
(``ctx.input(i)``), their MLIR shapes and dtypes (``ctx.operand_shape(i)``,
``ctx.operand_dtype(i)``), its attributes, and emits ONNX nodes with ``ctx.emit``; it returns
one ONNX value per MLIR result. Constants go to the main graph's initializers (subgraphs read
them from the outer scope, as ONNX allows).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import onnx_ir
from jaxlib.mlir import ir

from onnx_stablehlo.errors import ExportError
from onnx_stablehlo.exporter.types import mlir_shape, numpy_dtype_of, onnx_dtype

if TYPE_CHECKING:
    from onnx_stablehlo.exporter.converter import Converter

__all__ = ["ExportContext", "GraphScope", "Frame", "location_name"]

_QUOTED = re.compile(r'"((?:[^"\\]|\\.)*)"')


def location_name(op: ir.Operation | ir.OpView) -> str:
    """The first name in an op's location: ``loc("jit(f)/dot_general"(...))`` gives
    ``jit(f)/dot_general``, the frontend's ``loc("attn_qk")`` gives ``attn_qk``; ``""`` for an
    unknown or file-only location."""
    text = str(op.location)
    for match in _QUOTED.finditer(text):
        name = match.group(1)
        # A file location is "file":line:col; a name is followed by ( or ).
        end = match.end()
        if end < len(text) and text[end] == ":":
            continue
        return name.encode().decode("unicode_escape") if "\\" in name else name
    return ""


def location_text(op: ir.Operation | ir.OpView) -> str:
    """A one-line location for messages: the location name, else MLIR's own spelling."""
    return location_name(op) or str(op.location)


class Frame:
    """MLIR value -> ONNX value for one function invocation or region.

    A region frame sees its parent's values (StableHLO regions may use values from above); a
    function frame (an inlined ``func.call``) does not.
    """

    def __init__(self, parent: Frame | None = None) -> None:
        self.parent = parent
        self._values: dict[ir.Value, onnx_ir.Value] = {}

    def bind(self, mlir_value: ir.Value, value: onnx_ir.Value) -> None:
        self._values[mlir_value] = value

    def lookup(self, mlir_value: ir.Value) -> onnx_ir.Value:
        frame: Frame | None = self
        while frame is not None:
            found = frame._values.get(mlir_value)
            if found is not None:
                return found
            frame = frame.parent
        raise ExportError(f"value {mlir_value.get_name()} is used before it is defined")


class GraphScope:
    """The ONNX graph being filled: its nodes in order, its inputs, and a parent scope."""

    def __init__(self, converter: Converter, parent: GraphScope | None = None) -> None:
        self.converter = converter
        self.parent = parent
        self.nodes: list[onnx_ir.Node] = []
        self.inputs: list[onnx_ir.Value] = []
        self._shapes: dict[int, onnx_ir.Value] = {}

    def add_input(self, name: str, mlir_type: ir.Type) -> onnx_ir.Value:
        value = onnx_ir.Value(name=self.converter.names.value(name), type=onnx_ir.TensorType(onnx_dtype(mlir_type)),
                              shape=onnx_ir.Shape(mlir_shape(mlir_type)))
        self.inputs.append(value)
        return value

    def emit(self, op_type: str, inputs: Sequence[onnx_ir.Value | None], attributes: dict[str, Any] | None = None,
             *, outputs: int = 1, domain: str = "", name: str = "") -> list[onnx_ir.Value]:
        attrs = onnx_ir.convenience.convert_attributes({k: v for k, v in (attributes or {}).items() if v is not None})
        node = onnx_ir.Node(domain, op_type, list(inputs), attrs, num_outputs=outputs,
                            name=self.converter.names.node(name or op_type))
        for output in node.outputs:
            output.name = self.converter.names.value(op_type.lower())
        self.nodes.append(node)
        return list(node.outputs)

    def shape_of(self, value: onnx_ir.Value) -> onnx_ir.Value:
        """The run-time shape of ``value`` as a 1-D int64 tensor (one ``Shape`` node per value)."""
        key = id(value)
        if key not in self._shapes:
            self._shapes[key] = self.emit("Shape", [value])[0]
        return self._shapes[key]


class ExportContext:
    """One MLIR op being exported: its ONNX operands and the helpers a rule emits with.

    Attributes:
        op: the MLIR operation (``ir.Operation``).
        name: the op's location name, used for the ONNX node names.
        opset: the target ONNX opset.
    """

    def __init__(self, converter: Converter, scope: GraphScope, frame: Frame, op: ir.Operation) -> None:
        self.converter = converter
        self.scope = scope
        self.frame = frame
        self.op = op
        self.name = location_name(op)
        self.opset = converter.opset

    # Operands and results ----------------------------------------------------------------

    @property
    def num_inputs(self) -> int:
        return len(self.op.operands)

    def input(self, index: int) -> onnx_ir.Value:
        """The ONNX value of operand ``index``."""
        return self.frame.lookup(self.op.operands[index])

    def inputs(self) -> list[onnx_ir.Value]:
        return [self.frame.lookup(v) for v in self.op.operands]

    def operand_shape(self, index: int) -> tuple[int | None, ...]:
        return mlir_shape(self.op.operands[index])

    def operand_dtype(self, index: int) -> onnx_ir.DataType:
        return onnx_dtype(self.op.operands[index])

    def result_shape(self, index: int = 0) -> tuple[int | None, ...]:
        return mlir_shape(self.op.results[index])

    def result_dtype(self, index: int = 0) -> onnx_ir.DataType:
        return onnx_dtype(self.op.results[index])

    def result_numpy_dtype(self, index: int = 0) -> np.dtype:
        return numpy_dtype_of(self.op.results[index])

    def constant_operand(self, index: int) -> np.ndarray | None:
        """Operand ``index`` as numpy when a ``stablehlo.constant`` defines it, else ``None``."""
        return self.converter.constant_value(self.op.operands[index])

    # Attributes ----------------------------------------------------------------------------

    def attr(self, name: str) -> ir.Attribute | None:
        attributes = self.op.attributes
        return attributes[name] if name in attributes else None

    def i64s(self, name: str, default: Sequence[int] | None = None) -> list[int]:
        """An ``array<i64: ...>`` (or dense int elements) attribute as ints."""
        attr = self.attr(name)
        if attr is None:
            if default is None:
                raise ExportError(f"{self.op.name} at {location_text(self.op)} has no attribute {name!r}")
            return list(default)
        return read_ints(attr)

    def int_attr(self, name: str, default: int | None = None) -> int:
        attr = self.attr(name)
        if attr is None:
            if default is None:
                raise ExportError(f"{self.op.name} at {location_text(self.op)} has no attribute {name!r}")
            return default
        return int(ir.IntegerAttr(attr).value)

    # Emitting ------------------------------------------------------------------------------

    def emit(self, op_type: str, inputs: Sequence[onnx_ir.Value | None], attributes: dict[str, Any] | None = None,
             *, domain: str = "") -> onnx_ir.Value:
        """Emits one ONNX node with one output; returns that output."""
        return self.scope.emit(op_type, inputs, attributes, outputs=1, domain=domain, name=self.name)[0]

    def emit_multi(self, op_type: str, inputs: Sequence[onnx_ir.Value | None], outputs: int,
                   attributes: dict[str, Any] | None = None, *, domain: str = "") -> list[onnx_ir.Value]:
        """Emits one ONNX node with ``outputs`` outputs."""
        return self.scope.emit(op_type, inputs, attributes, outputs=outputs, domain=domain, name=self.name)

    def const(self, array: Any, dtype: Any = None) -> onnx_ir.Value:
        """An initializer holding ``array`` (numpy, or a Python scalar/list with ``dtype``)."""
        return self.converter.constant(np.asarray(array, dtype=dtype), self.name)

    def ints(self, values: Sequence[int]) -> onnx_ir.Value:
        """A 1-D int64 initializer (axes, shapes, pads, starts)."""
        return self.converter.constant(np.asarray(list(values), dtype=np.int64), self.name)

    def cast(self, value: onnx_ir.Value, to: onnx_ir.DataType) -> onnx_ir.Value:
        return self.emit("Cast", [value], {"to": int(to)})

    def shape_of(self, value: onnx_ir.Value) -> onnx_ir.Value:
        """The run-time shape of ``value``, 1-D int64."""
        return self.scope.shape_of(value)

    def shape_value(self, operand: int) -> onnx_ir.Value:
        """A shape operand (``output_dimensions`` of the dynamic ops, any int type) as 1-D int64."""
        value = self.input(operand)
        if self.operand_dtype(operand) != onnx_ir.DataType.INT64:
            value = self.cast(value, onnx_ir.DataType.INT64)
        return value

    def static_or_dynamic_shape(self, shape: Sequence[int | None], like: onnx_ir.Value | None = None,
                                dims_of: Sequence[int] | None = None) -> onnx_ir.Value:
        """A 1-D int64 shape: an initializer when ``shape`` is static; else built from ``like``'s
        run-time shape, where ``dims_of[i]`` names the dim of ``like`` that gives dim ``i``."""
        if all(d is not None for d in shape):
            return self.ints(shape)  # type: ignore[arg-type]
        if like is None or dims_of is None:
            raise ExportError(f"{self.op.name} at {location_text(self.op)}: a dynamic shape without a source")
        full = self.shape_of(like)
        parts = []
        for i, d in enumerate(shape):
            if d is not None:
                parts.append(self.ints([d]))
            else:
                parts.append(self.emit("Gather", [full, self.ints([dims_of[i]])], {"axis": 0}))
        return parts[0] if len(parts) == 1 else self.emit("Concat", parts, {"axis": 0})

    # Regions -------------------------------------------------------------------------------

    def inline_region(self, region: ir.Region, args: Sequence[onnx_ir.Value]) -> list[onnx_ir.Value]:
        """Converts ``region``'s single block into the current graph with its block arguments
        bound to ``args``; returns the ONNX values of its terminator's operands."""
        return self.converter.convert_block(region.blocks[0], args, self.scope, Frame(self.frame))

    def subgraph(self, region: ir.Region, *, input_names: Sequence[str] = (), extra_inputs: Sequence[tuple[str, Any]] = (),
                 prologue: Any = None, epilogue: Any = None, name: str = "body") -> onnx_ir.Graph:
        """Builds an ONNX subgraph (a Loop or If body) from ``region``.

        Args:
            region: a one-block region; its block arguments become graph inputs after
                ``extra_inputs``.
            extra_inputs: ``(name, mlir_type_or_onnx_dtype)`` graph inputs put first (a Loop's
                iteration number and condition).
            prologue: ``f(scope, frame, inputs) -> block args`` to compute the block's arguments
                from the graph inputs (default: the inputs after the extra ones).
            epilogue: ``f(scope, frame, results) -> graph outputs`` (default: the results).
        """
        return self.converter.build_subgraph(region, self.scope, self.frame, extra_inputs=extra_inputs,
                                             prologue=prologue, epilogue=epilogue, name=name or self.name)

    def error(self, reason: str) -> ExportError:
        return ExportError(f"{self.op.name} at {location_text(self.op)}: {reason}")


def read_ints(attr: ir.Attribute) -> list[int]:
    """The ints of an ``array<i64: ...>``, ``dense<...> : tensor<Nxi64>`` or array of ints."""
    if isinstance(attr, ir.DenseI64ArrayAttr):
        return [int(v) for v in ir.DenseI64ArrayAttr(attr)]
    if isinstance(attr, ir.DenseIntElementsAttr):
        return [int(v) for v in ir.DenseIntElementsAttr(attr)]
    if isinstance(attr, ir.DenseBoolArrayAttr):
        return [int(bool(v)) for v in ir.DenseBoolArrayAttr(attr)]
    if isinstance(attr, ir.ArrayAttr):
        return [int(ir.IntegerAttr(a).value) for a in ir.ArrayAttr(attr)]
    raise ExportError(f"attribute {attr} is not a list of integers")
