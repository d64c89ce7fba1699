"""StableHLO module -> ONNX model: the walk over ``@main`` that runs one rule per op.

Functions reached by ``func.call`` are inlined; regions become ONNX subgraphs (``while`` ->
``Loop``, ``case``/``if`` -> ``If``) or are matched by their rule (a ``reduce`` body). Before
anything is converted, :meth:`Converter.scan` walks every op of the module and collects each
op or type with no ONNX form; they are raised together as one
:class:`~onnx_stablehlo.errors.UnsupportedExportError`.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import onnx_ir
from jaxlib.mlir import ir

from onnx_stablehlo.errors import ExportError, UnsupportedExportError
from onnx_stablehlo.exporter.context import ExportContext, Frame, GraphScope, location_text
from onnx_stablehlo.exporter.registry import ExportRegistry
from onnx_stablehlo.exporter.types import dtype_reason, mlir_shape, onnx_dtype

__all__ = ["Converter", "GraphSignature", "Names", "read_dense_attr"]

_TERMINATORS = frozenset({"func.return", "stablehlo.return"})
_SMALL_CONSTANT = 64
_IDENT = re.compile(r"[^A-Za-z0-9_./:\-]+")


class Names:
    """Unique names for ONNX values and nodes across the model and all its subgraphs."""

    def __init__(self) -> None:
        self._values: set[str] = set()
        self._nodes: dict[str, int] = {}
        self._taken: set[str] = set()
        self._counter = 0

    def reserve(self, name: str) -> None:
        self._values.add(name)

    def value(self, hint: str) -> str:
        base = _IDENT.sub("_", hint) or "v"
        if base not in self._values:
            self._values.add(base)
            return base
        while True:
            self._counter += 1
            name = f"{base}_{self._counter}"
            if name not in self._values:
                self._values.add(name)
                return name

    def node(self, hint: str) -> str:
        """``hint``, or ``hint_<k>`` with the first ``k`` not taken (a source node may itself be
        called ``hint_1``: every name handed out is remembered)."""
        count = self._nodes.get(hint, 0)
        name = hint if count == 0 and hint not in self._taken else f"{hint}_{count}"
        while name in self._taken:
            count += 1
            name = f"{hint}_{count}"
        self._nodes[hint] = count + 1
        self._taken.add(name)
        return name


@dataclasses.dataclass
class GraphSignature:
    """How ``@main``'s arguments and results become graph inputs, initializers and outputs.

    Attributes:
        input_names: one name per ``@main`` argument (initializers included).
        input_dims: per argument, one entry per dim: an ``int``, a ``str`` dim_param, or ``None``.
        output_names: one name per ``@main`` result.
        output_dims: per result, as ``input_dims``.
        initializers: ``{argument index: array}``: arguments that become initializers.
    """

    input_names: list[str]
    input_dims: list[list[int | str | None]]
    output_names: list[str]
    output_dims: list[list[int | str | None]]
    initializers: dict[int, Any] = dataclasses.field(default_factory=dict)
    hoisted: tuple[str, int] | None = None
    """``(function, count)``: ``@main``'s last ``count`` arguments are the results of
    ``@function`` applied to the initializer arguments, in argument order (the frontend's
    ``@hoisted_weights``, ``passes/hoist_weights.py``); they are computed in the graph."""


class Converter:
    """Converts one StableHLO module to an ``onnx_ir.Model``.

    Args:
        module: the parsed module (its context must be current while converting).
        registry: the export rules (default: ``exporter.rules.default_registry()``).
        opset: the target ONNX opset (default domain).
    """

    def __init__(self, module: ir.Module, registry: ExportRegistry, opset: int) -> None:
        self.module = module
        self.registry = registry
        self.opset = opset
        self.names = Names()
        self.initializers: list[onnx_ir.Value] = []
        self._small: dict[tuple, onnx_ir.Value] = {}
        self._funcs: dict[str, ir.Operation] = {}
        for op in module.body.operations:
            if op.operation.name == "func.func":
                self._funcs[ir.StringAttr(op.attributes["sym_name"]).value] = op.operation
        self.call_depth = 0

    # Functions --------------------------------------------------------------------------

    def func(self, name: str) -> ir.Operation:
        if name not in self._funcs:
            raise ExportError(f"the module has no function @{name}")
        return self._funcs[name]

    def main(self) -> ir.Operation:
        if "main" in self._funcs:
            return self._funcs["main"]
        public = [op for op in self._funcs.values()
                  if "sym_visibility" not in op.attributes
                  or ir.StringAttr(op.attributes["sym_visibility"]).value == "public"]
        if len(public) == 1:
            return public[0]
        raise ExportError("the module has no @main function (and not exactly one public function)")

    # The pre-scan -----------------------------------------------------------------------

    def scan(self) -> None:
        """Raises :class:`UnsupportedExportError` listing every op or type with no ONNX form."""
        problems: list[tuple[str, str, str]] = []
        seen_funcs: set[str] = set()

        def visit_func(name: str) -> None:
            if name in seen_funcs:
                return
            seen_funcs.add(name)
            func = self.func(name)
            ftype = ir.FunctionType(ir.TypeAttr(func.attributes["function_type"]).value)
            for ty in list(ftype.inputs) + list(ftype.results):
                reason = dtype_reason(ty, self.opset)
                if reason is not None:
                    problems.append(("func.func", f"@{name}", f"signature: {reason}"))
            for region in func.regions:
                visit_region(region)

        def visit_region(region: ir.Region) -> None:
            for block in region.blocks:
                for arg in block.arguments:
                    reason = dtype_reason(arg.type, self.opset)
                    if reason is not None and not _is_token(arg.type):
                        problems.append(("block argument", "", reason))
                for op in block.operations:
                    visit_op(op.operation)

        def visit_op(op: ir.Operation) -> None:
            name = op.name
            if name in _TERMINATORS:
                return
            if name not in self.registry:
                problems.append((name, location_text(op), "no export rule"))
                return
            for value in list(op.results) + list(op.operands):
                reason = dtype_reason(value.type, self.opset)
                if reason is not None:
                    problems.append((name, location_text(op), reason))
                    return
            check = self.registry.check(name)
            if check is not None:
                reason = check(op)
                if reason:
                    problems.append((name, location_text(op), reason))
                    return
            if name == "func.call":
                visit_func(ir.FlatSymbolRefAttr(op.attributes["callee"]).value)
            elif name == "stablehlo.composite":
                visit_func(ir.FlatSymbolRefAttr(op.attributes["decomposition"]).value)
            if _regions_are_matched(name):
                return  # reduce/sort/scatter bodies are read by their rule, not converted op by op
            for region in op.regions:
                visit_region(region)

        visit_func(ir.StringAttr(self.main().attributes["sym_name"]).value)
        if problems:
            raise UnsupportedExportError(problems)

    # Conversion -------------------------------------------------------------------------

    def convert(self, signature: GraphSignature, *, graph_name: str = "main") -> onnx_ir.Graph:
        """Converts ``@main`` into an ONNX graph with ``signature``'s names and dims."""
        main = self.main()
        block = main.regions[0].blocks[0]
        for name in signature.input_names + signature.output_names:
            self.names.reserve(name)
        scope = GraphScope(self)
        frame = Frame()
        args: list[onnx_ir.Value] = []
        arguments = list(block.arguments)
        if signature.hoisted is not None:
            arguments = arguments[: len(arguments) - signature.hoisted[1]]
        for i, arg in enumerate(arguments):
            name = signature.input_names[i]
            dtype = onnx_dtype(arg.type)
            shape = onnx_ir.Shape(signature.input_dims[i])
            if i in signature.initializers:
                array = np.asarray(signature.initializers[i])
                want = dtype.numpy()
                if array.dtype != want:
                    raise ExportError(f"initializer {name!r} is {array.dtype}, the module's argument is {want}")
                value = onnx_ir.Value(name=name, type=onnx_ir.TensorType(dtype), shape=shape,
                                      const_value=onnx_ir.Tensor(array, name=name))
                self.initializers.append(value)
            else:
                value = onnx_ir.Value(name=name, type=onnx_ir.TensorType(dtype), shape=shape)
                scope.inputs.append(value)
            args.append(value)
        if signature.hoisted is not None:
            function, count = signature.hoisted
            weights = [args[i] for i in sorted(signature.initializers)]
            derived = self.call(function, weights, scope)
            if len(derived) != count:
                raise ExportError(f"@{function} gives {len(derived)} values, @main takes {count}")
            args += derived
        results = self.convert_block(block, args, scope, frame)
        outputs = self._graph_outputs(scope, results, block.operations[len(block.operations) - 1],
                                      signature.output_names, signature.output_dims)
        return onnx_ir.Graph(scope.inputs, outputs, nodes=scope.nodes, initializers=self.initializers,
                             opset_imports={"": self.opset}, name=graph_name)

    def _graph_outputs(self, scope: GraphScope, results: Sequence[onnx_ir.Value], terminator: ir.Operation,
                       names: Sequence[str] | None, dims: Sequence[Sequence[int | str | None]] | None
                       ) -> list[onnx_ir.Value]:
        produced = {id(out) for node in scope.nodes for out in node.outputs}
        outputs: list[onnx_ir.Value] = []
        seen: set[int] = set()
        for i, value in enumerate(results):
            mlir_value = terminator.operands[i]
            if id(value) not in produced or id(value) in seen:
                value = scope.emit("Identity", [value], name="output")[0]
            seen.add(id(value))
            value.name = names[i] if names is not None else self.names.value(f"out{i}")
            value.type = onnx_ir.TensorType(onnx_dtype(mlir_value.type))
            value.shape = onnx_ir.Shape(list(dims[i]) if dims is not None else mlir_shape(mlir_value.type))
            outputs.append(value)
        return outputs

    def convert_block(self, block: ir.Block, args: Sequence[onnx_ir.Value], scope: GraphScope,
                      frame: Frame) -> list[onnx_ir.Value]:
        """Converts the ops of ``block`` into ``scope``; returns its terminator's ONNX operands."""
        if len(args) != len(block.arguments):
            raise ExportError(f"a block of {len(block.arguments)} arguments got {len(args)} values")
        for arg, value in zip(block.arguments, args):
            frame.bind(arg, value)
        for op in block.operations:
            op = op.operation
            if op.name in _TERMINATORS:
                return [frame.lookup(v) for v in op.operands]
            self.convert_op(op, scope, frame)
        raise ExportError("a block without a terminator")

    def convert_op(self, op: ir.Operation, scope: GraphScope, frame: Frame) -> None:
        rule = self.registry.lookup(op.name)
        if rule is None:
            raise UnsupportedExportError([(op.name, location_text(op), "no export rule")])
        ctx = ExportContext(self, scope, frame, op)
        values = rule(ctx)
        if len(values) != len(op.results):
            raise ExportError(f"the export rule of {op.name} at {location_text(op)} gave {len(values)} values "
                              f"for {len(op.results)} results")
        for result, value in zip(op.results, values):
            frame.bind(result, value)

    def call(self, name: str, args: Sequence[onnx_ir.Value], scope: GraphScope) -> list[onnx_ir.Value]:
        """Inlines function ``@name`` into ``scope`` with ``args``; returns its results."""
        self.call_depth += 1
        if self.call_depth > 200:
            raise ExportError(f"func.call nesting deeper than 200 at @{name} (recursion?)")
        try:
            return self.convert_block(self.func(name).regions[0].blocks[0], args, scope, Frame())
        finally:
            self.call_depth -= 1

    def build_subgraph(self, region: ir.Region, parent: GraphScope, frame: Frame, *,
                       extra_inputs: Sequence[tuple[str, Any]] = (), prologue: Callable | None = None,
                       epilogue: Callable | None = None, name: str = "body") -> onnx_ir.Graph:
        scope = GraphScope(self, parent)
        sub_frame = Frame(frame)
        block = region.blocks[0]
        for input_name, ty in extra_inputs:
            if isinstance(ty, tuple):  # (onnx dtype, shape)
                dtype, shape = ty
                value = onnx_ir.Value(name=self.names.value(input_name), type=onnx_ir.TensorType(dtype),
                                      shape=onnx_ir.Shape(shape))
                scope.inputs.append(value)
            else:
                scope.add_input(input_name, ty)
        if prologue is None:
            args = [scope.add_input("arg", arg.type) for arg in block.arguments]
        else:
            args = prologue(scope, sub_frame, list(scope.inputs))
        results = self.convert_block(block, args, scope, sub_frame)
        terminator = block.operations[len(block.operations) - 1]
        if epilogue is not None:
            results = epilogue(scope, sub_frame, results)
        produced = {id(out) for node in scope.nodes for out in node.outputs}
        outputs = []
        seen: set[int] = set()
        for i, value in enumerate(results):
            if id(value) not in produced or id(value) in seen:
                value = scope.emit("Identity", [value], name=f"{name}/output")[0]
            seen.add(id(value))
            if epilogue is None:
                mlir_type = terminator.operands[i].type
                value.type = onnx_ir.TensorType(onnx_dtype(mlir_type))
                value.shape = onnx_ir.Shape(mlir_shape(mlir_type))
            outputs.append(value)
        return onnx_ir.Graph(scope.inputs, outputs, nodes=scope.nodes, name=self.names.node(_IDENT.sub("_", name)))

    # Constants --------------------------------------------------------------------------

    def constant(self, array: np.ndarray, hint: str = "") -> onnx_ir.Value:
        """A main-graph initializer holding ``array``; small arrays are shared by value."""
        array = np.asarray(array, order="C")
        key = None
        if array.size <= _SMALL_CONSTANT:
            key = (array.dtype.str, array.shape, array.tobytes())
            found = self._small.get(key)
            if found is not None:
                return found
        name = self.names.value(f"const_{hint}" if hint else "const")
        value = onnx_ir.Value(name=name, type=onnx_ir.TensorType(onnx_ir.DataType.from_numpy(array.dtype)),
                              shape=onnx_ir.Shape(array.shape), const_value=onnx_ir.Tensor(array, name=name))
        self.initializers.append(value)
        if key is not None:
            self._small[key] = value
        return value

    def constant_value(self, mlir_value: ir.Value) -> np.ndarray | None:
        """``mlir_value`` as numpy when a ``stablehlo.constant`` defines it, else ``None``."""
        owner = mlir_value.owner
        if not isinstance(owner, (ir.Operation, ir.OpView)):
            return None
        op = owner.operation if isinstance(owner, ir.OpView) else owner
        if op.name not in ("stablehlo.constant", "arith.constant"):
            return None
        return read_dense_attr(op.attributes["value"], mlir_value.type)


def read_dense_attr(attr: ir.Attribute, ty: ir.Type) -> np.ndarray:
    """A dense elements attribute as numpy of the tensor type's dtype (bf16, bool, ints, floats)."""
    dtype = onnx_dtype(ty).numpy()
    shape = mlir_shape(ty)
    dense = ir.DenseElementsAttr(attr)
    if dense.is_splat:
        element = dense.get_splat_value()
        if isinstance(element, ir.BoolAttr):
            scalar: Any = bool(ir.BoolAttr(element).value)
        elif isinstance(element, ir.IntegerAttr):
            scalar = ir.IntegerAttr(element).value
            if dtype == np.bool_:
                scalar = bool(scalar)
        else:
            scalar = ir.FloatAttr(element).value
        return np.full(shape, scalar, dtype=dtype)
    if dtype == np.bool_:
        return np.array([bool(v) for v in ir.DenseIntElementsAttr(attr)], dtype=np.bool_).reshape(shape)
    try:
        raw = np.array(dense)
        if raw.dtype == object:
            raise TypeError("no buffer format")
    except (TypeError, ValueError, RuntimeError):  # bf16/float8/sub-byte: no buffer format numpy reads
        return _parse_dense_text(str(attr), np.dtype(dtype), shape)
    if raw.dtype.itemsize == np.dtype(dtype).itemsize and raw.dtype != dtype:
        raw = raw.view(dtype)
    return raw.astype(dtype, copy=False).reshape(shape)


_DENSE = re.compile(r"^dense<(.*)>\s*:\s*tensor<", re.S)
_TOKEN = re.compile(r"0x[0-9A-Fa-f]+|[-+]?(?:inf|nan|\d+\.?\d*(?:[eE][-+]?\d+)?)")


def _parse_dense_text(text: str, dtype: np.dtype, shape: tuple) -> np.ndarray:
    """A dense attribute's printed form as numpy, for element types numpy's buffer protocol
    cannot read (bf16, float8): ``dense<"0x...">`` (raw little-endian bytes) or a nested list
    whose hex items are bit patterns."""
    match = _DENSE.match(text)
    if match is None:
        raise ExportError(f"cannot read the constant {text[:80]}")
    body = match.group(1).strip()
    if body.startswith('"0x'):
        return np.frombuffer(bytes.fromhex(body[3:-1]), dtype=dtype).reshape(shape).copy()
    bits = np.dtype(f"u{dtype.itemsize}")
    values = [np.array(int(t, 16), dtype=bits).view(dtype) if t.startswith("0x") else np.array(float(t)).astype(dtype)
              for t in _TOKEN.findall(body)]
    return np.array(values, dtype=dtype).reshape(shape)


def _is_token(ty: ir.Type) -> bool:
    return str(ty).startswith("!stablehlo.token")


def _regions_are_matched(op_name: str) -> bool:
    return op_name in {"stablehlo.reduce", "stablehlo.reduce_window", "stablehlo.sort", "stablehlo.scatter",
                       "stablehlo.select_and_scatter", "stablehlo.all_reduce", "stablehlo.reduce_scatter"}


def signature_for(main: ir.Operation, *, input_names: Sequence[str] | None = None,
                  output_names: Sequence[str] | None = None,
                  input_dims: Sequence[Sequence[int | str | None]] | None = None,
                  output_dims: Sequence[Sequence[int | str | None]] | None = None,
                  initializers: Mapping[int, Any] | None = None,
                  hoisted: tuple[str, int] | None = None) -> GraphSignature:
    """A :class:`GraphSignature` for ``main`` filling what the caller left out: names from the
    arguments' ``loc``/``jax.result_info`` or ``input_k``/``output_k``, ``?`` dims as dim_params
    ``<input>_d<axis>`` (outputs: unknown)."""
    block = main.regions[0].blocks[0]
    ftype = ir.FunctionType(ir.TypeAttr(main.attributes["function_type"]).value)
    n_in, n_out = len(block.arguments) - (hoisted[1] if hoisted else 0), len(ftype.results)
    if input_names is None:
        input_names = [f"input_{i}" for i in range(n_in)]
    if output_names is None:
        output_names = [f"output_{i}" for i in range(n_out)]
    if len(input_names) != n_in or len(output_names) != n_out:
        raise ExportError(f"@main takes {n_in} arguments and returns {n_out} results; names were given for "
                          f"{len(input_names)} and {len(output_names)}")
    if len(set(input_names) | set(output_names)) != n_in + n_out:
        raise ExportError("input and output names must be unique: " + ", ".join(list(input_names) + list(output_names)))
    if input_dims is None:
        input_dims = [[d if d is not None else f"{input_names[i]}_d{axis}" for axis, d in enumerate(mlir_shape(arg.type))]
                      for i, arg in enumerate(list(block.arguments)[:n_in])]
    if output_dims is None:
        output_dims = [list(mlir_shape(t)) for t in ftype.results]
    return GraphSignature(list(input_names), [list(d) for d in input_dims], list(output_names),
                          [list(d) for d in output_dims], dict(initializers or {}), hoisted)
