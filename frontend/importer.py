"""The importer: the one place that walks ONNX nodes and emits ``func.func @main``.

For every node, in graph order:

1. inputs that are all known at compile time (Constant nodes, small non-float initializers,
   results of earlier folding) and small are folded: the node is evaluated with
   ``onnx.reference`` (the ONNX project's reference implementation) and its outputs become
   compile-time constants. This is how shape subgraphs (Shape -> Gather -> Concat -> Reshape)
   become the constant targets later rules need. Weights (float initializers) are never folded
   this way under ``weights="args"``.
2. otherwise the node's rule is resolved in the registry and run under
   ``loc("<node name>")``.

Graph inputs are ``@main``'s first arguments, in graph order. Under ``weights="args"`` each
weight that the module actually uses becomes one more argument, appended in first-use order
(``LoweredModule.parameter_names``); under ``weights="inline"`` weights are constants and
``@main`` takes only the graph inputs.
"""

from __future__ import annotations

import dataclasses
import logging
import re
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, Literal

import numpy as np
import onnx
import onnx_ir
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import func, stablehlo

from onnx_stablehlo.errors import (
    FrontendError,
    InvalidOptionError,
    LoweringError,
    OnnxStableHLOError,
    ResourceLimitError,
    ShapeError,
    UnsupportedDtypeError,
    UnsupportedOpError,
    UnsupportedOpsetError,
)
from onnx_stablehlo.frontend import dtypes, emit
from onnx_stablehlo.frontend.context import LoweredValue, LoweringContext, OnnxNode, SequenceResult
from onnx_stablehlo.frontend.dtypes import DataType
from onnx_stablehlo.frontend.expand import expand_function_ops, has_function_body, node_opset
from onnx_stablehlo.frontend.layout import TENSOR, Layout, onnx_kind
from onnx_stablehlo.frontend.loader import opset_imports
from onnx_stablehlo.frontend.registry import LoweringRegistry
from onnx_stablehlo.frontend import symbolic_eval
from onnx_stablehlo.frontend.shapes import DimEquality, Shape, SymbolicDim, format_shape, is_static, sym_max, symbols_of
from onnx_stablehlo.frontend import jaxlib_mlir

__all__ = ["LoweredModule", "import_model", "find_unsupported", "graph_input_values"]

_log = logging.getLogger(__name__)

WeightsMode = Literal["args", "inline"]

# Ops whose value changes from run to run: never evaluated at compile time.
_NOT_FOLDABLE = frozenset(
    {
        "RandomNormal",
        "RandomNormalLike",
        "RandomUniform",
        "RandomUniformLike",
        "Multinomial",
        "Bernoulli",
        "Dropout",
        # Its rule computes constant ranges with the spec's element count (an infinite delta
        # gives none, as in onnxruntime; onnx.reference's np.arange gives one) and checks it
        # against the resource limits before allocating.
        "Range",
    }
)

# Non-float initializers up to this many elements are compile-time constants (shape vectors,
# axes, indices); larger ones and every float initializer are weights.
_SMALL_INITIALIZER_ELEMENTS = 1024


@dataclasses.dataclass
class LoweredModule:
    """The result of lowering one ONNX graph: a StableHLO module and its calling convention.

    Attributes:
        module: the MLIR module holding ``func.func @main``.
        context: the MLIR context that owns ``module`` (keep it alive as long as the module).
        input_names: graph inputs, the first arguments of ``@main``.
        input_types: ``(dtype, shape)`` per ``@main`` input argument (a sequence input is
            one argument per element).
        input_layouts: how each graph input maps onto those arguments (see ``layout.py``).
        output_layouts: how each graph output maps onto ``@main``'s results.
        parameter_names: weights that follow the inputs as arguments (``weights="args"``).
        parameters: weight name -> getter of its numpy value.
        output_names: graph outputs, the results of ``@main`` in order.
        output_types: ``(dtype, shape)`` per ``@main`` result.
        dim_equalities: equalities of graph-input symbols that broadcasts implied and the
            symbolic lowering assumed (checked against the feeds before the artifact is used).
        seconds: time spent lowering, in seconds.
    """

    module: ir.Module
    context: ir.Context
    input_names: list[str]
    input_types: list[tuple[DataType, Shape]]
    parameter_names: list[str]
    parameters: dict[str, Callable[[], np.ndarray]]
    output_names: list[str]
    output_types: list[tuple[DataType, Shape]]
    seconds: float = 0.0
    input_layouts: list[Layout] = dataclasses.field(default_factory=list)
    output_layouts: list[Layout] = dataclasses.field(default_factory=list)
    value_shapes: dict[str, tuple[DataType, Shape]] = dataclasses.field(default_factory=dict)
    dim_equalities: list[DimEquality] = dataclasses.field(default_factory=list)
    """Every ONNX value of the main graph -> (dtype, dims), dims symbolic where unknown."""
    check_messages: list[str] = dataclasses.field(default_factory=list)
    """Run-time checks (``import_model(runtime_checks=True)``): when non-empty, ``@main`` has
    one more result after the graph outputs, a ``tensor<N x i1>`` whose entry ``i`` is false
    when check ``i`` failed (an out-of-range Gather index, say); this is its message."""

    @property
    def text(self) -> str:
        """The module as StableHLO text (generic-free, parseable by jaxlib's MLIR parser)."""
        return self.module.operation.get_asm(enable_debug_info=False)

    def text_with_locations(self) -> str:
        """The module text with ``loc(...)`` annotations (ONNX node names)."""
        return self.module.operation.get_asm(enable_debug_info=True)


def graph_input_values(graph: onnx_ir.Graph) -> list[onnx_ir.Value]:
    """Graph inputs that are real inputs (not initializers listed as inputs, as IR < 4 does)."""
    return [v for v in graph.inputs if v.name not in graph.initializers]


def find_unsupported(
    model: onnx_ir.Model, registry: LoweringRegistry
) -> dict[tuple[str, str, int], list[str]]:
    """Scans every node (subgraphs included) for ops without a lowering.

    Returns:
        ``{(domain, op_type, opset): [node names]}``; empty when everything is supported.
    """
    opsets = opset_imports(model)
    missing: dict[tuple[str, str, int], list[str]] = {}
    for index, node in enumerate(model.graph.all_nodes()):
        domain = "" if node.domain in ("", "ai.onnx") else node.domain
        opset = node_opset(node, opsets)
        if registry.resolve(domain, node.op_type, opset) is None:
            name = node.name or f"node #{index} ({node.op_type})"
            missing.setdefault((domain, node.op_type, opset), []).append(name)
    return missing


def check_supported(model: onnx_ir.Model, registry: LoweringRegistry | None = None) -> None:
    """Raises for ops that cannot be lowered at any shape: no rule and no function body.

    Ops with a function body in their schema are left to :func:`import_model`, which expands
    them once shapes are known.

    Raises:
        UnsupportedOpError: listing every such ``(domain, op_type, opset)`` and its nodes.
    """
    if registry is None:
        from onnx_stablehlo.frontend.lowering import default_registry

        registry = default_registry()
    missing = {
        key: nodes for key, nodes in find_unsupported(model, registry).items() if not has_function_body(*key)
    }
    if missing:
        raise UnsupportedOpError(missing, {(d, o): registry.since_versions(d, o) for (d, o, _) in missing})


def _dims_of(value: onnx_ir.Value) -> list[int | str | None] | None:
    if value.shape is None:
        return None
    dims: list[int | str | None] = []
    for dim in value.shape:
        if isinstance(dim, int):
            dims.append(dim if dim >= 0 else None)  # some exporters write -1 for "unknown"
        else:
            dims.append(dim.value)  # onnx_ir.SymbolicDim: a name or None
    return dims


def _check_tensor_shape(
    name: str,
    value: onnx_ir.Value | None,
    declared: list | None,
    shape: Any,
    dynamic: bool = False,
    fixed_dims: Mapping[str, int] | None = None,
) -> tuple:
    if shape is None and dynamic and declared is not None:
        fixed = dict(fixed_dims or {})
        dims: list = []
        for axis, dim in enumerate(declared):
            if isinstance(dim, int):
                dims.append(dim)
                continue
            # A dim_param that is not a name ('?', '-1', '') marks an unknown dim of its own.
            named = isinstance(dim, str) and re.fullmatch(r"[A-Za-z_][\w.:/-]*", dim) is not None
            symbol = dim if named else f"{name}.{axis}"
            dims.append(int(fixed[symbol]) if symbol in fixed else SymbolicDim(symbol))
        return tuple(dims)
    if shape is not None:
        shape = tuple(int(d) for d in shape)
        if declared is not None:
            if len(declared) != len(shape):
                raise ShapeError(
                    f"input '{name}': rank {len(shape)} given, but the model declares "
                    f"rank {len(declared)} {format_shape([d if d is not None else '?' for d in declared])}"
                )
            for axis, (want, got) in enumerate(zip(declared, shape)):
                if isinstance(want, int) and want != got:
                    raise ShapeError(f"input '{name}': dim {axis} is {want} in the model, {got} given")
    else:
        if declared is None or not all(isinstance(d, int) for d in declared):
            shown = "unknown rank" if declared is None else format_shape(
                [d if d is not None else "?" for d in declared]
            )
            raise ShapeError(
                f"input '{name}' has a symbolic or unknown shape ({shown}); pass its "
                "shape in input_shapes (CLI: --input-shape NAME=D0,D1,...)"
            )
        shape = tuple(int(d) for d in declared)  # type: ignore[arg-type]
    if any(d < 0 for d in shape):
        raise ShapeError(f"input '{name}': negative dim in {shape}")
    return shape


def _layout_of_input(
    name: str,
    value_type: onnx_ir.TypeProtocol | None,
    declared: list | None,
    spec: Any,
    has_spec: bool,
    dynamic: bool = False,
    fixed_dims: Mapping[str, int] | None = None,
) -> tuple[Layout, list[tuple[DataType, tuple]]]:
    kind = onnx_kind(value_type)
    if kind == "tensor":
        shape = _check_tensor_shape(name, None, declared, spec if has_spec else None, dynamic, fixed_dims)
        return TENSOR, [(value_type.dtype, shape)]  # type: ignore[union-attr]
    if kind == "sequence":
        if not has_spec or spec is None:
            raise ShapeError(
                f"input '{name}' is a sequence: its length and element shapes come from the feed "
                "(pass a list of shapes in input_shapes)"
            )
        element_type = value_type.elem_type  # type: ignore[union-attr]
        if onnx_kind(element_type) != "tensor":
            raise UnsupportedDtypeError(f"input '{name}': sequences of {element_type} are not supported")
        flat = [(element_type.dtype, _check_tensor_shape(f"{name}[{i}]", None, None, s)) for i, s in enumerate(spec)]
        return Layout("sequence", tuple(TENSOR for _ in flat)), flat
    if kind == "optional":
        if has_spec and spec is None:
            return Layout("optional"), []
        inner, flat = _layout_of_input(name, value_type.elem_type, None, spec, has_spec)  # type: ignore[union-attr]
        return Layout("optional", (inner,)), flat
    raise UnsupportedDtypeError(f"input '{name}' has type {value_type}, which is not supported")


def _input_layouts(
    graph: onnx_ir.Graph,
    input_shapes: Mapping[str, Any] | None,
    dynamic: bool = False,
    fixed_dims: Mapping[str, int] | None = None,
) -> list[tuple[Layout, list[tuple[DataType, tuple]]]]:
    inputs = graph_input_values(graph)
    given = dict(input_shapes or {})
    known = {v.name for v in inputs}
    unknown = sorted(set(given) - known)
    if unknown:
        raise ShapeError(
            f"input_shapes names {', '.join(repr(n) for n in unknown)}, which the model does not "
            f"have; its inputs are {', '.join(repr(n) for n in sorted(known))}"
        )
    fixed = dict(fixed_dims or {})
    if dynamic:
        known_names = {d for v in inputs for d in (_dims_of(v) or []) if isinstance(d, str)}
        unknown_dims = sorted(set(fixed) - known_names)
        if unknown_dims:
            raise InvalidOptionError(
                f"dims names {', '.join(repr(n) for n in unknown_dims)}, which no input has; the "
                f"model's dim names are {', '.join(repr(n) for n in sorted(known_names)) or '(none)'}"
            )
        # A shape given for one input fixes its dim names in every other input too.
        for v in inputs:
            shape = given.get(v.name)
            declared = _dims_of(v)
            if shape is None or declared is None or onnx_kind(v.type) != "tensor":
                continue
            for dim, size in zip(declared, shape):
                if isinstance(dim, str) and dim:
                    fixed.setdefault(dim, int(size))
    return [
        _layout_of_input(v.name, v.type, _dims_of(v), given.get(v.name), v.name in given, dynamic, fixed)
        for v in inputs
    ]


class _Scope:
    """Values visible in one graph: its own, then its enclosing graphs' (ONNX outer scope)."""

    def __init__(self, parent: _Scope | None = None) -> None:
        self.parent = parent
        self.own: dict[str, LoweredValue] = {}
        self.depth = 0 if parent is None else parent.depth + 1

    def get(self, name: str) -> LoweredValue | None:
        scope: _Scope | None = self
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


# Ops whose result has the shape of their same-rank operands (for naming ? dims).
_SAME_SHAPE_OPS = frozenset(
    "stablehlo." + name
    for name in (
        "add subtract multiply divide remainder maximum minimum power atan2 and or xor not "
        "negate abs sign floor ceil round_nearest_even round_nearest_afz exponential "
        "exponential_minus_one log log_plus_one logistic sqrt rsqrt cbrt tanh sine cosine tan "
        "convert compare select clamp is_finite shift_left shift_right_arithmetic "
        "shift_right_logical popcnt optimization_barrier"
    ).split()
) | {"chlo.erf", "chlo.erfc", "chlo.asin", "chlo.acos", "chlo.atan", "chlo.sinh", "chlo.cosh",
     "chlo.asinh", "chlo.acosh", "chlo.atanh", "chlo.tan"}


class _DimResolver:
    """Symbolic dims of MLIR values during one import (see ``emit.DimResolver``).

    A symbol is bound to the first (value, axis) that carries it: graph input dims use the
    ONNX ``dim_param`` names; other ``?`` dims get fresh names bound to the value itself, so
    their size is always available at run time through ``stablehlo.get_dimension_size``.
    """

    def __init__(self) -> None:
        self.shapes: dict[ir.Value, tuple] = {}
        self.bindings: dict[str, tuple[ir.Value, int]] = {}
        self._cache: dict[tuple[int, Any], ir.Value] = {}
        self._fresh = 0
        self.scope_key = 0
        self._scopes = 0
        # Symbol merging (see merge): graph-input symbols, symbol -> representative, assumptions.
        self.input_symbols: set[str] = set()
        self.merged: dict[str, Any] = {}
        self.equalities: list[DimEquality] = []
        self.node_name = ""

    def new_scope_key(self) -> int:
        """A key no other subgraph scope had (``id()`` of a scope object can be reused once it is
        freed, and a cached size from an erased region must never be found again)."""
        self._scopes += 1
        return self._scopes

    def forget(self, op: ir.Operation) -> None:
        """Drops what is known about the values of ``op`` and everything nested in it.

        Called before a builder erases ops it made (an If whose branches do not fit, a loop
        placeholder): MLIR may reuse the memory of an erased value for a new one, and a stale
        entry would then give the new value the old one's dims, or a cached size that no longer
        exists (a use after free).
        """
        dead: set[ir.Value] = set()

        def collect(nested: ir.Operation) -> ir.WalkResult:
            dead.update(nested.results)
            for region in nested.regions:
                for block in region.blocks:
                    dead.update(block.arguments)
            return ir.WalkResult.ADVANCE

        op.walk(collect)
        if not dead:
            return
        for value in [v for v in self.shapes if v in dead]:
            del self.shapes[value]
        for key in [k for k, v in self._cache.items() if v in dead]:
            del self._cache[key]
        for name in [n for n, (v, _) in self.bindings.items() if v in dead]:
            del self.bindings[name]

    def merge(self, a: SymbolicDim, b: SymbolicDim) -> Any:
        """The dim of a broadcast of ``a`` against ``b`` (both symbolic, different).

        When both are made of graph-input symbols, ``a == b`` is assumed (the other valid case,
        one of them being 1, is caught at run time by ``CompiledModel``, which then lowers that
        shape on its own): the simpler dim is kept, a bare symbol on the other side is rewritten
        to it from now on, and the assumption is recorded. Otherwise the result is ``max(a, b)``.
        """
        a, b = self.canonical(a), self.canonical(b)
        if a == b:
            return a
        if not (a.symbols() | b.symbols()) <= self.input_symbols:
            return sym_max(a, b)
        keep, other = (a, b) if (len(str(a)), str(a)) <= (len(str(b)), str(b)) else (b, a)
        if other.name is not None:
            self.merged[other.name] = keep
        self.equalities.append(DimEquality(keep, other, self.node_name))
        return keep

    def assume_equal(self, size: int, dim: SymbolicDim) -> None:
        """Records that a broadcast needs symbolic ``dim`` to be the static ``size`` (or 1)."""
        dim = self.canonical(dim)
        if isinstance(dim, SymbolicDim) and dim.symbols() <= self.input_symbols:
            equality = DimEquality(size, dim, self.node_name)
            if equality not in self.equalities:
                self.equalities.append(equality)

    def canonical(self, dim: Any) -> Any:
        """``dim`` with merged symbols replaced by their representative."""
        if not isinstance(dim, SymbolicDim) or not self.merged or not (dim.symbols() & self.merged.keys()):
            return dim
        for _ in range(len(self.merged) + 1):
            substituted = dim.substitute(self.merged)
            if substituted == dim or not isinstance(substituted, SymbolicDim):
                return substituted
            dim = substituted
        return dim

    def bind(self, value: ir.Value, dims: Sequence[Any]) -> None:
        for axis, dim in enumerate(dims):
            if isinstance(dim, SymbolicDim) and dim.name is not None:
                self.bindings.setdefault(dim.name, (value, axis))
        self.record(value, dims)

    def record(self, value: ir.Value, dims: Sequence[Any]) -> None:
        self.shapes[value] = tuple(dims)

    def dims_of(self, value: ir.Value) -> tuple:
        known = self.shapes.get(value)
        if known is not None:
            return tuple(self.canonical(d) for d in known) if self.merged else known
        static = emit.shape_of(value)
        dims: list[Any] = list(static)
        owner = value.owner
        name = owner.name if isinstance(owner, ir.Operation) else getattr(getattr(owner, "operation", None), "name", None)
        if name in _SAME_SHAPE_OPS:
            for operand in (owner.operands if isinstance(owner, ir.Operation) else owner.operation.operands):
                if ir.RankedTensorType(operand.type).rank == len(static):
                    operand_dims = self.dims_of(operand)
                    dims = [s if s is not None else o for s, o in zip(static, operand_dims)]
                    break
        for axis, dim in enumerate(dims):
            if dim is None:
                self._fresh += 1
                symbol = SymbolicDim(f"_d{self._fresh}")
                self.bindings[symbol.name] = (value, axis)  # type: ignore[index]
                dims[axis] = symbol
        result = tuple(dims)
        self.shapes[value] = result
        return result

    def dim_value(self, dim: Any) -> ir.Value:
        key = (self.scope_key, dim)
        cached = self._cache.get(key)
        if cached is not None:
            return cached
        value = self._emit_dim(dim)
        self._cache[key] = value
        return value

    def _emit_dim(self, dim: Any) -> ir.Value:
        if isinstance(dim, int):
            return emit.constant(np.array(dim, np.int64))
        total: ir.Value | None = None
        for monomial, coefficient in dim._terms.items():
            term = emit.constant(np.array(coefficient, np.int64))
            for atom, power in monomial:
                factor = self._emit_atom(atom)
                for _ in range(power):
                    term = stablehlo.MulOp(term, factor).result
            total = term if total is None else stablehlo.AddOp(total, term).result
        return total if total is not None else emit.constant(np.array(0, np.int64))

    def _emit_atom(self, atom: Any) -> ir.Value:
        if isinstance(atom, str):
            if atom not in self.bindings:
                raise LoweringError(f"symbolic dim '{atom}' has no binding")
            value, axis = self.bindings[atom]
            size = stablehlo.GetDimensionSizeOp(value, axis).result
            return emit.convert(size, DataType.INT64)
        kind, expr, other = atom
        left = self.dim_value(expr)
        if kind == "max":
            return stablehlo.MaxOp(left, self.dim_value(other)).result
        divisor = emit.constant(np.array(other, np.int64))
        if kind == "floordiv":  # dims are non-negative, so truncation is floor
            return stablehlo.DivOp(left, divisor).result
        return stablehlo.RemOp(left, divisor).result


class _Importer:
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
        self.values = _Scope()
        self.parameter_names: list[str] = []
        self.parameters: dict[str, Callable[[], np.ndarray]] = {}
        self.entry_block: ir.Block | None = None
        self.resolver = _DimResolver()

    def add_check(self, ok: ir.Value, message: str) -> bool:
        """Records a run-time check: ``ok`` (i1, any shape) must be all true. Returns whether it
        was recorded: checks are off, or inside a subgraph (a region's value cannot reach
        ``@main``'s results), otherwise."""
        if not self.runtime_checks or self.values.depth != 0:
            return False
        if emit.rank_of(ok):
            ok = emit.reduce(ok, list(range(emit.rank_of(ok))), stablehlo.AndOp, True)
        self.checks.append((emit.reshape(ok, [1]), message))
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
            tensor = emit.shape_tensor(list(value.sym.reshape(-1)))
            tensor = emit.convert(emit.reshape(tensor, value.shape), value.dtype)
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
                emit.tensor_type(shape, value.dtype), ir.Location.name(value.name)
            )
            self.parameter_names.append(value.name)
            self.parameters[value.name] = value.const
            return arg
        return emit.constant(value.const(), value.dtype)

    def add_initializers(self, graph: onnx_ir.Graph) -> None:
        for name, init in graph.initializers.items():
            tensor = init.const_value
            if tensor is None:
                continue
            dtype = tensor.dtype
            shape = tuple(int(d) for d in tensor.shape)
            size = int(np.prod(shape, dtype=np.int64))
            weight = dtypes.is_float(dtype) or size > _SMALL_INITIALIZER_ELEMENTS
            if self.inline_scalar_weights and size == 1:
                weight = False  # an exponent, a scale, an epsilon: rules may need it as a constant
            if dtype == DataType.STRING:
                weight = False
            self.values[name] = LoweredValue(
                name=name, dtype=dtype, shape=shape, const=_lazy(tensor), parameter=weight
            )

    # Nodes ---------------------------------------------------------------------------------

    def canonical_shape(self, shape: Sequence[Any]) -> tuple:
        """``shape`` with merged symbols replaced by their representative."""
        return tuple(self.resolver.canonical(d) for d in shape)

    def lower_node(self, node: onnx_ir.Node, index: int) -> None:
        domain = "" if node.domain in ("", "ai.onnx") else node.domain
        opset = node_opset(node, self.opsets)
        resolved = self.registry.resolve(domain, node.op_type, opset)
        assert resolved is not None, "find_unsupported runs first"
        since, rule = resolved
        onnx_node = OnnxNode(node, index, opset, since)
        inputs = [self.values.get(v.name) if v is not None and v.name else None for v in node.inputs]
        for value, ir_value in zip(inputs, node.inputs):
            if ir_value is not None and ir_value.name and value is None:
                raise LoweringError(f"input '{ir_value.name}' is not defined before use", op_type=node.op_type,
                                    domain=domain, opset=opset, node_name=onnx_node.name)
        self.resolver.node_name = onnx_node.name
        try:
            results = self.try_fold(node, onnx_node, inputs)
            if results is None:
                ctx = LoweringContext(
                    onnx_node, inputs, self.materialize, self.lower_subgraph, add_check=self.add_check
                )
                with ir.Location.name(onnx_node.location_name):
                    results = list(rule(ctx, onnx_node))
            self.bind_outputs(node, onnx_node, results)
        except OnnxStableHLOError:
            raise
        except Exception as exc:  # a rule's bug or an MLIR builder's type error
            detail = _first_line(exc)
            raise LoweringError(
                f"lowering failed ({type(exc).__name__}: {detail})",
                op_type=node.op_type,
                domain=domain,
                opset=opset,
                node_name=onnx_node.name,
            ) from exc

    def try_fold_symbolic(
        self, node: onnx_ir.Node, onnx_node: OnnxNode, inputs: Sequence[LoweredValue | None]
    ) -> list | None:
        """Evaluates a shape computation on symbolic dims (see ``symbolic_eval.py``)."""
        if onnx_node.domain != "" or node.op_type not in symbolic_eval.EVALUATORS:
            return None
        present = [v for v in inputs if v is not None]
        if not present or any(v.kind != "tensor" for v in present):
            return None
        if node.op_type in ("Shape", "Size"):
            if is_static(present[0].shape):
                return None  # the rule returns a plain constant
            values: list = [None]
        else:
            if not any(v.sym is not None for v in present):
                return None
            if node.op_type not in ("Cast", "Identity") and any(
                v.sym is not None and dtypes.is_float(v.dtype) for v in present
            ):
                return None  # float arithmetic on dims (a true division, say) is not integer math
            values = []
            for value in inputs:
                if value is None:
                    values.append(None)
                elif value.sym is not None:
                    values.append(value.sym)
                elif value.const is not None and value.size <= symbolic_eval.MAX_ELEMENTS and not (
                    value.parameter and self.weights == "args"
                ):
                    array = np.asarray(value.const())
                    if array.dtype.kind not in "iub":
                        return None
                    values.append(symbolic_eval.normalize(array.astype(np.int64) if array.dtype.kind != "b" else array))
                else:
                    return None
        try:
            results = symbolic_eval.evaluate(onnx_node, inputs, values)
        except (symbolic_eval.NotSymbolic, ValueError, IndexError, TypeError) as exc:
            _log.debug("not evaluating %s symbolically: %s", onnx_node, exc)
            return None
        if node.op_type in ("Shape", "Size"):
            dtype = DataType.INT64
        elif node.op_type == "Cast":
            dtype = DataType(onnx_node.attr_int("to"))
        elif node.op_type == "Equal":
            dtype = DataType.BOOL
        else:
            dtype = next(v.dtype for v in present if v.sym is not None)
        return [_SymbolicResult(r, dtype) for r in results]

    def try_fold(
        self, node: onnx_ir.Node, onnx_node: OnnxNode, inputs: Sequence[LoweredValue | None]
    ) -> list | None:
        symbolic = self.try_fold_symbolic(node, onnx_node, inputs)
        if symbolic is not None:
            return symbolic
        present = [v for v in inputs if v is not None]
        if onnx_node.domain != "" or node.op_type in _NOT_FOLDABLE or not present:
            return None
        if any(v.const is None or (v.parameter and self.weights == "args") for v in present):
            return None
        if sum(v.size for v in present) > self.fold_max_elements:
            return None
        if any(a.type in (onnx_ir.AttributeType.GRAPH, onnx_ir.AttributeType.GRAPHS)
               for a in node.attributes.values()):
            return None
        try:
            results = _evaluate_with_reference(node, onnx_node, inputs)
        except Exception as exc:  # the rule lowers it at run time instead
            _log.debug("not folding %s: %s", onnx_node, exc)
            return None
        if any(r is None or isinstance(r, (list, tuple)) for r in results):
            return None  # sequences and optionals are built by their rules
        if sum(np.size(r) for r in results) > self.fold_max_elements:
            return None  # an Expand or Tile of a small constant: keep the op, not a huge constant
        return results

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
        parent_key = self.resolver.scope_key
        self.values = _Scope(parent)
        self.resolver.scope_key = self.resolver.new_scope_key()
        try:
            for formal, actual in zip(graph.inputs, inputs):
                if isinstance(actual, LoweredValue):
                    self.values[formal.name] = dataclasses.replace(actual, name=formal.name)
                    continue
                shape = self.resolver.dims_of(actual)
                self.values[formal.name] = LoweredValue(formal.name, emit.dtype_of(actual), shape, value=actual)
            self.add_initializers(graph)
            for index, node in enumerate(graph):
                self.lower_node(node, index)
            outputs = []
            for out in graph.outputs:
                lowered = self.values.get(out.name)
                if lowered is None:
                    raise LoweringError(f"subgraph '{graph.name}' output '{out.name}' is never produced")
                outputs.append(lowered if raw else self.materialize(lowered))
            return outputs
        finally:
            self.values = parent
            self.resolver.scope_key = parent_key

    def _lowered_result(self, name: str, result: Any) -> LoweredValue:
        if isinstance(result, _SymbolicResult):
            array = result.array
            if all(isinstance(v, (int, np.integer, bool, np.bool_)) for v in array.reshape(-1)):
                constant = array.astype(dtypes.numpy_dtype(result.dtype))
                return LoweredValue(name, result.dtype, tuple(array.shape), const=_constant_getter(constant))
            return LoweredValue(name, result.dtype, tuple(array.shape), sym=array)
        if isinstance(result, LoweredValue):
            return dataclasses.replace(result, name=name)
        if isinstance(result, SequenceResult):
            elements = [self._lowered_result(f"{name}[{i}]", e) for i, e in enumerate(result.elements)]
            return LoweredValue(name, result.dtype, (), kind=result.kind, elements=elements)
        if isinstance(result, ir.Value):
            return LoweredValue(name, emit.dtype_of(result), self.resolver.dims_of(result), value=result)
        array = np.asarray(result)
        return LoweredValue(name, dtypes.dtype_of_numpy(array.dtype), tuple(array.shape), const=_constant_getter(array))

    def bind_outputs(self, node: onnx_ir.Node, onnx_node: OnnxNode, results: list) -> None:
        outputs = list(node.outputs)
        if len(results) > len(outputs):
            results = results[: len(outputs)]
        for position, out in enumerate(outputs):
            if out is None or not out.name:
                continue
            result = results[position] if position < len(results) else None
            if result is None:
                raise LoweringError(
                    f"output {position} ('{out.name}') was not produced",
                    op_type=onnx_node.op_type,
                    domain=onnx_node.domain,
                    opset=onnx_node.opset,
                    node_name=onnx_node.name,
                )
            if isinstance(result, (LoweredValue, SequenceResult, _SymbolicResult)):
                self.values[out.name] = self._lowered_result(out.name, result)
            elif isinstance(result, ir.Value):
                shape = self.resolver.dims_of(result)
                _check_size(onnx_node, out.name, shape)
                self.values[out.name] = LoweredValue(out.name, emit.dtype_of(result), shape, value=result)
            else:
                array = np.asarray(result)
                self.values[out.name] = LoweredValue(
                    out.name, dtypes.dtype_of_numpy(array.dtype), tuple(array.shape),
                    const=_constant_getter(array),
                )


@dataclasses.dataclass
class _SymbolicResult:
    """A folded shape computation: an object array of ints and SymbolicDims, and its dtype."""

    array: np.ndarray
    dtype: DataType


def _lazy(tensor: onnx_ir.TensorProtocol) -> Callable[[], np.ndarray]:
    cache: list[np.ndarray] = []

    def get() -> np.ndarray:
        if not cache:
            cache.append(np.asarray(tensor.numpy()))
        return cache[0]

    return get


def _constant_getter(array: np.ndarray) -> Callable[[], np.ndarray]:
    return lambda: array


def _check_size(onnx_node: OnnxNode, name: str, shape: Sequence[Any]) -> None:
    """Refuses a result whose static element count is over ``limits.MAX_ELEMENTS`` (XLA aborts
    the process on a shape whose element count overflows int64)."""
    from onnx_stablehlo.frontend import limits

    count = 1
    for dim in shape:
        if isinstance(dim, (int, np.integer)):
            count *= max(int(dim), 0)
    if count > limits.MAX_ELEMENTS:
        raise ResourceLimitError(
            f"output '{name}' of shape {[str(d) for d in shape]} would have {count} elements, over the limit "
            f"of {limits.MAX_ELEMENTS} (onnx_stablehlo.frontend.limits.MAX_ELEMENTS)",
            op_type=onnx_node.op_type, domain=onnx_node.domain, opset=onnx_node.opset, node_name=onnx_node.name,
        )


def check_opsets(model: onnx_ir.Model) -> None:
    """Refuses opsets of ONNX's own domains newer than the installed onnx knows.

    Raises:
        UnsupportedOpsetError: naming the domain, the model's opset and the newest known one.
    """
    known = onnx.defs.C.schema_version_map()  # {domain: (first, last)} of the installed onnx
    for domain, version in model.opset_imports.items():
        key = "" if domain in ("", "ai.onnx") else domain
        if key in known and int(version) > known[key][1]:
            raise UnsupportedOpsetError(
                f"the model imports opset {version} of domain '{domain or 'ai.onnx'}', but the installed onnx "
                f"{onnx.__version__} knows opsets up to {known[key][1]}; export the model at opset "
                f"{known[key][1]} or lower"
            )
        if key in known and int(version) < 1:
            raise UnsupportedOpsetError(f"the model imports opset {version} of domain '{domain or 'ai.onnx'}'")


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def _evaluate_with_reference(
    node: onnx_ir.Node, onnx_node: OnnxNode, inputs: Sequence[LoweredValue | None]
) -> list[np.ndarray]:
    from onnx.reference import ReferenceEvaluator

    # A one-node model, so the evaluator uses the revision in force at the node's opset (a
    # bare NodeProto would be evaluated at the latest opset).
    proto = onnx_ir.serde.serialize_node(node)
    feeds = {
        name: value.const()  # type: ignore[union-attr]
        for name, value in zip(onnx_node.input_names, inputs)
        if value is not None and name
    }
    graph = onnx.helper.make_graph(
        [proto],
        "fold",
        [onnx.helper.make_empty_tensor_value_info(name) for name in feeds],
        [onnx.helper.make_empty_tensor_value_info(name) for name in proto.output if name],
    )
    model = onnx.helper.make_model(graph, opset_imports=[onnx.helper.make_opsetid("", onnx_node.opset)])
    results = ReferenceEvaluator(model).run(None, feeds)
    return [r if r is None or isinstance(r, list) else np.asarray(r) for r in results]


def import_model(
    model: onnx_ir.Model,
    input_shapes: Mapping[str, Sequence[int]] | None = None,
    *,
    weights: WeightsMode = "args",
    registry: LoweringRegistry | None = None,
    fold_max_elements: int = 1 << 16,
    constant_inputs: Mapping[str, np.ndarray] | None = None,
    dynamic: bool = False,
    dims: Mapping[str, int] | None = None,
    inline_scalar_weights: bool = False,
    float64_math: bool = True,
    runtime_checks: bool = False,
) -> LoweredModule:
    """Lowers an ONNX model to a StableHLO module with one function, ``@main``.

    Args:
        model: the loaded model (see :func:`onnx_stablehlo.frontend.loader.load`).
        input_shapes: a static shape per graph input; needed for inputs whose declared shape
            has symbolic or unknown dims, checked against the declared shape otherwise.
        weights: ``"args"`` (weights become ``@main`` arguments after the inputs) or
            ``"inline"`` (weights become constants; a self-contained artifact).
        registry: the lowering registry; the default one lists ``frontend/lowering/``.
        fold_max_elements: nodes whose constant inputs total more elements than this are not
            evaluated at compile time.
        constant_inputs: graph inputs whose value is fixed at compile time (value
            specialization, for inputs that rules need as constants, such as an ``axes`` or
            ``shape`` fed as a graph input). They are not ``@main`` arguments.
        dynamic: keep symbolic input dims (not fixed by ``input_shapes``) as ``?`` in the module;
            sizes are read with ``stablehlo.get_dimension_size`` and shape-dependent ops use the
            dynamic forms. A rule that needs static shapes raises (the runtime then specializes).
        dims: sizes for named symbols (``{"batch": 8}``), fixed ahead of time under ``dynamic``.
        inline_scalar_weights: under ``weights="args"``, single-element float initializers
            (the dynamo exporter's ``Pow`` exponent 3.0, scales, epsilons) become constants
            instead of arguments, so rules can specialize on them (``Pow(x, 3)`` is two
            multiplies, a generic ``power`` is exp and log) and XLA can fold them.
            ``CompiledModel`` sets it; the trainer does not, so such a scalar stays trainable.
        float64_math: whether rules may compute in float64 for accuracy (``emit.erf``);
            ``CompiledModel`` turns it off for TPU, which emulates float64.
        runtime_checks: rules may add checks of run-time values (Gather-family indices in
            range, Resize's run-time sizes against the declared shape); they become one extra
            result of ``@main`` (see ``LoweredModule.check_messages``) that ``CompiledModel``
            reads after each run. Off: such values are clamped as StableHLO does.

    Returns:
        The :class:`LoweredModule`.

    Raises:
        UnsupportedOpError: some nodes have no lowering (all of them are listed).
        ShapeError: ``input_shapes`` do not fit the model.
        FrontendError: a rule rejected its node (its subclasses say why).
        LoweringError: the emitted module does not verify.
    """
    if weights not in ("args", "inline"):
        raise ValueError(f"weights must be 'args' or 'inline', got {weights!r}")
    if registry is None:
        from onnx_stablehlo.frontend.lowering import default_registry

        registry = default_registry()
    start = time.perf_counter()
    check_opsets(model)
    try:
        missing = find_unsupported(model, registry)
    except ValueError as exc:  # a node's opset metadata that is not an integer
        raise LoweringError(f"cannot resolve the nodes' opsets: {_first_line(exc)}") from exc
    if missing:
        # Ops without a rule whose schema defines a function body are expanded into it.
        known_shapes = {n: tuple(s) for n, s in (input_shapes or {}).items() if s is not None}
        known_shapes.update({n: np.shape(a) for n, a in (constant_inputs or {}).items()})
        try:
            expanded = expand_function_ops(model, registry, known_shapes)
        except OnnxStableHLOError:
            raise
        except Exception as exc:  # onnx-ir refused to serialize the model, or a body is malformed
            raise LoweringError(f"expanding function bodies failed: {type(exc).__name__}: {_first_line(exc)}") from exc
        if expanded is not None:
            model = expanded
            missing = find_unsupported(model, registry)
    if missing:
        known = {(d, o): registry.since_versions(d, o) for (d, o, _) in missing}
        raise UnsupportedOpError(missing, known)
    graph = model.graph
    constant_inputs = dict(constant_inputs or {})
    shapes = dict(input_shapes or {})
    for name, array in constant_inputs.items():
        shapes[name] = np.shape(array)
    all_inputs = graph_input_values(graph)
    all_layouts = _input_layouts(graph, shapes, dynamic, dims)
    importer = _Importer(model, registry, weights, fold_max_elements, inline_scalar_weights, runtime_checks)
    importer.add_initializers(graph)
    inputs: list[onnx_ir.Value] = []
    input_layouts: list[Layout] = []
    flat_types: list[tuple[DataType, tuple[int, ...]]] = []
    for value, (layout, flat) in zip(all_inputs, all_layouts):
        if value.name in constant_inputs:
            dtype, shape = flat[0]
            array = np.asarray(constant_inputs[value.name]).astype(dtypes.numpy_dtype(dtype), copy=False)
            importer.values[value.name] = LoweredValue(
                value.name, dtype, tuple(shape), const=_constant_getter(array)
            )
            continue
        inputs.append(value)
        input_layouts.append(layout)
        flat_types.extend(flat)

    context = jaxlib_mlir.make_mlir_context()
    with context, ir.Location.unknown():
        module = ir.Module.create()
        arg_types = [emit.tensor_type(shape, dtype) for dtype, shape in flat_types]
        arg_locations = [
            ir.Location.name(value.name)
            for value, layout in zip(inputs, input_layouts)
            for _ in range(layout.arg_count)
        ]
        with ir.InsertionPoint(module.body):
            func_op = func.FuncOp("main", ir.FunctionType.get(arg_types, []))
            func_op.attributes["sym_visibility"] = ir.StringAttr.get("public")
            entry = ir.Block.create_at_start(func_op.body, arg_types, arg_locations)
        importer.entry_block = entry
        arguments = iter(entry.arguments)
        flat_shapes = iter(shape for _, shape in flat_types)
        for value, layout in zip(inputs, input_layouts):
            lowered_input = _bind_argument(value.name, layout, arguments)
            for tensor in _flatten_lowered(lowered_input)[1]:
                tensor.shape = tuple(next(flat_shapes))
                importer.resolver.bind(tensor.value, tensor.shape)
                importer.resolver.input_symbols |= symbols_of(tensor.shape)
            importer.values[value.name] = lowered_input
        with ir.InsertionPoint(entry), emit.dim_resolver(importer.resolver), emit.float64_math(float64_math):
            for index, node in enumerate(graph):
                importer.lower_node(node, index)
            output_values = []
            output_types = []
            output_layouts = []
            for out in graph.outputs:
                lowered = importer.values.get(out.name)
                if lowered is None:
                    raise LoweringError(f"graph output '{out.name}' is never produced")
                layout, tensors = _flatten_lowered(lowered)
                output_layouts.append(layout)
                with ir.Location.name(out.name):
                    for tensor in tensors:
                        output_values.append(importer.materialize(tensor))
                        output_types.append((tensor.dtype, importer.canonical_shape(tensor.shape)))
            if importer.checks:
                with ir.Location.name("onnx_stablehlo.runtime_checks"):
                    flags = [value for value, _ in importer.checks]
                    packed = flags[0] if len(flags) == 1 else stablehlo.ConcatenateOp(flags, 0).result
                output_values.append(packed)
                output_types.append((DataType.BOOL, (len(flags),)))
            func.ReturnOp(output_values)
        func_op.attributes["function_type"] = ir.TypeAttr.get(
            ir.FunctionType.get([a.type for a in entry.arguments], [v.type for v in output_values])
        )
        if dynamic:
            _set_dim_names(func_op, [shape for _, shape in flat_types], len(entry.arguments))
            if importer.resolver.equalities:
                # The artifact states what it assumes: "s2 == s1 (node 'add')" per merge.
                func_op.attributes["onnx.dim_equalities"] = ir.ArrayAttr.get(
                    [ir.StringAttr.get(str(e)) for e in importer.resolver.equalities]
                )
        _verify(module)
    input_names = {v.name for v in inputs}
    return LoweredModule(
        module=module,
        context=context,
        input_names=[v.name for v in inputs],
        input_types=[(d, tuple(s)) for d, s in flat_types],
        parameter_names=importer.parameter_names,
        parameters=importer.parameters,
        output_names=[o.name for o in graph.outputs],
        output_types=output_types,
        seconds=time.perf_counter() - start,
        input_layouts=input_layouts,
        output_layouts=output_layouts,
        value_shapes={  # graph inputs keep their declared symbols; the rest use merged ones
            name: (value.dtype, tuple(value.shape) if name in input_names else importer.canonical_shape(value.shape))
            for name, value in importer.values.own.items()
            if value.kind == "tensor" and not value.parameter
        },
        dim_equalities=list(importer.resolver.equalities),
        check_messages=[message for _, message in importer.checks],
    )


def _set_dim_names(func_op: func.FuncOp, input_shapes: Sequence[Sequence[Any]], count: int) -> None:
    """Marks dynamic input axes with their symbol: ``{onnx.dim_params = ["batch", "seq"]}``.

    ``specialize-shapes{dims=batch=2}`` reads it to bind dims by name.
    """
    if not any(isinstance(d, SymbolicDim) for shape in input_shapes for d in shape):
        return  # a static module carries no argument attributes
    attrs = []
    for index in range(count):
        shape = input_shapes[index] if index < len(input_shapes) else ()
        names = [str(d) if isinstance(d, SymbolicDim) else "" for d in shape]
        if any(names):
            entries = ir.ArrayAttr.get([ir.StringAttr.get(n) for n in names])
            attrs.append(ir.DictAttr.get({"onnx.dim_params": entries}))
        else:
            attrs.append(ir.DictAttr.get({}))
    func_op.attributes["arg_attrs"] = ir.ArrayAttr.get(attrs)


def _bind_argument(name: str, layout: Layout, arguments: Iterator[ir.Value]) -> LoweredValue:
    if layout.kind == "tensor":
        arg = next(arguments)
        return LoweredValue(name, emit.dtype_of(arg), tuple(emit.shape_of(arg)), value=arg)  # type: ignore[arg-type]
    elements = [_bind_argument(f"{name}[{i}]", e, arguments) for i, e in enumerate(layout.elements)]
    dtype = elements[0].dtype if elements else DataType.UNDEFINED
    return LoweredValue(name, dtype, (), kind=layout.kind, elements=elements)


def _flatten_lowered(value: LoweredValue) -> tuple[Layout, list[LoweredValue]]:
    if value.kind == "tensor":
        return TENSOR, [value]
    layouts = []
    tensors: list[LoweredValue] = []
    for element in value.elements or []:
        layout, flat = _flatten_lowered(element)
        layouts.append(layout)
        tensors.extend(flat)
    return Layout(value.kind, tuple(layouts)), tensors


def _verify(module: ir.Module) -> None:
    try:
        module.operation.verify()
    except ir.MLIRError as exc:
        lines = []
        for diagnostic in exc.error_diagnostics:
            lines.append(f"{diagnostic.location}: {diagnostic.message}")
        raise LoweringError(
            "the emitted StableHLO does not verify: " + "; ".join(lines[:5])
        ) from exc
