"""The importer: lowers an ONNX model to a StableHLO module with one function, ``@main``.

:func:`import_model` runs the steps, each in its own module:

1. ``support.py``: refuse unknown opsets; expand ops without a rule into their function
   bodies; list every node still without a rule (one ``UnsupportedOpError``).
2. ``signature.py``: graph inputs become ``@main``'s first arguments, in graph order, with
   shapes from the model and ``input_shapes`` (symbolic under ``dynamic``).
3. ``graph_lowering.py``: the nodes, in graph order. A node whose inputs are all known at
   compile time and small is folded (``folding.py``: ``onnx.reference`` on constants, the
   registry's symbolic evaluators on symbolic dims); this is how shape subgraphs
   (Shape -> Gather -> Concat -> Reshape) become the constant targets later rules need. Otherwise
   the node's rule is resolved in the registry and run under ``loc("<node name>")``;
   ``dim_resolver.py`` names and sizes the ``?`` dims. Weights (float initializers) are never
   folded under ``weights="args"``.
4. the graph outputs (and the packed run-time checks) become ``@main``'s results; the module
   is verified.

Under ``weights="args"`` each weight that the module actually uses becomes one more argument,
appended in first-use order (``LoweredModule.parameter_names``); under ``weights="inline"``
weights are constants and ``@main`` takes only the graph inputs.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Mapping, Sequence

import numpy as np
import onnx_ir
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import func

from onnx_stablehlo.errors import LoweringError
from onnx_stablehlo.frontend import builders, jaxlib_mlir
from onnx_stablehlo.frontend.dtypes import DataType
from onnx_stablehlo.frontend.graph_lowering import GraphLowering, WeightsMode
from onnx_stablehlo.frontend.layout import Layout
from onnx_stablehlo.frontend.registry import LoweringRegistry
from onnx_stablehlo.frontend.shapes import DimEquality, Shape
from onnx_stablehlo.frontend.signature import graph_input_values, input_layouts, set_dim_names
from onnx_stablehlo.frontend.support import check_opsets, check_supported, find_unsupported, require_supported

__all__ = [
    "LoweredModule",
    "import_model",
    "find_unsupported",
    "check_supported",
    "check_opsets",
    "graph_input_values",
]


@dataclasses.dataclass(frozen=True)
class LoweredModule:
    """The result of lowering one ONNX graph: a StableHLO module and its calling convention.

    Attributes:
        module: the MLIR module holding ``func.func @main``.
        context: the MLIR context that owns ``module`` (keep it alive as long as the module).
        input_names: graph inputs, the first arguments of ``@main``.
        input_types: ``(dtype, shape)`` per ``@main`` input argument (a sequence input is
            one argument per element).
        parameter_names: weights that follow the inputs as arguments (``weights="args"``).
        parameters: weight name -> getter of its numpy value.
        output_names: graph outputs, the results of ``@main`` in order.
        output_types: ``(dtype, shape)`` per ``@main`` result.
        seconds: time spent lowering, in seconds.
        input_layouts: how each graph input maps onto those arguments (see ``layout.py``).
        output_layouts: how each graph output maps onto ``@main``'s results.
        value_shapes: every ONNX value of the main graph -> (dtype, dims), dims symbolic where
            unknown.
        dim_equalities: equalities of graph-input symbols that broadcasts implied and the
            symbolic lowering assumed (checked against the feeds before the artifact is used).
        check_messages: see the field's docstring.
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
    """Every ONNX value of the main graph -> (dtype, dims), dims symbolic where unknown."""
    dim_equalities: list[DimEquality] = dataclasses.field(default_factory=list)
    """Graph-input symbol equalities the symbolic lowering assumed (``"s2 == s1 (node 'add')"``)."""
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
    integer_dots: bool = False,
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
        float64_math: whether rules may compute in float64 for accuracy (``builders.erf``);
            ``CompiledModel`` turns it off for TPU, which emulates float64.
        integer_dots: 8-bit products (MatMulInteger, QLinearMatMul, DynamicQuantizeMatMul, ...)
            become int8 x int8 -> int32 ``dot_general`` (uint8 operands shifted to int8) rather
            than exact float32 GEMMs (``builders.integer_matmul``); ``CompiledModel`` turns it
            on for CPU, where XLA runs them through YNNPACK.
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
    model = require_supported(model, registry, input_shapes, constant_inputs)
    graph = model.graph
    constant_inputs = dict(constant_inputs or {})
    shapes = {**(input_shapes or {}), **{name: np.shape(array) for name, array in constant_inputs.items()}}
    lowering = GraphLowering(model, registry, weights, fold_max_elements, inline_scalar_weights, runtime_checks)
    lowering.add_initializers(graph)
    inputs, layouts, flat_types = [], [], []
    for value, (layout, flat) in zip(graph_input_values(graph), input_layouts(graph, shapes, dynamic, dims)):
        if value.name in constant_inputs:
            lowering.bind_constant_input(value.name, *flat[0], constant_inputs[value.name])
        else:
            inputs.append(value.name)
            layouts.append(layout)
            flat_types.extend(flat)

    context = jaxlib_mlir.make_mlir_context()
    with context, ir.Location.unknown():
        module, func_op, entry = _create_main(inputs, layouts, flat_types)
        lowering.bind_arguments(entry, inputs, layouts, [shape for _, shape in flat_types])
        with (
            ir.InsertionPoint(entry),
            builders.dim_resolver(lowering.resolver),
            builders.float64_math(float64_math),
            builders.integer_dots(integer_dots),
        ):
            lowering.lower_graph(graph)
            output_values, output_types, output_layouts = lowering.emit_outputs(graph)
            func.ReturnOp(output_values)
        func_op.attributes["function_type"] = ir.TypeAttr.get(
            ir.FunctionType.get([a.type for a in entry.arguments], [v.type for v in output_values])
        )
        if dynamic:
            _record_symbols(func_op, [shape for _, shape in flat_types], lowering.resolver.equalities)
        _verify(module)
    return LoweredModule(
        module=module,
        context=context,
        input_names=inputs,
        input_types=[(d, tuple(s)) for d, s in flat_types],
        parameter_names=lowering.parameter_names,
        parameters=lowering.parameters,
        output_names=[o.name for o in graph.outputs],
        output_types=output_types,
        seconds=time.perf_counter() - start,
        input_layouts=layouts,
        output_layouts=output_layouts,
        value_shapes={  # graph inputs keep their declared symbols; the rest use merged ones
            name: (value.dtype, tuple(value.shape) if name in inputs else lowering.canonical_shape(value.shape))
            for name, value in lowering.values.own.items()
            if value.kind == "tensor" and not value.parameter
        },
        dim_equalities=list(lowering.resolver.equalities),
        check_messages=[message for _, message in lowering.checks],
    )


def _create_main(
    names: Sequence[str], layouts: Sequence[Layout], flat_types: Sequence[tuple[DataType, Shape]]
) -> tuple[ir.Module, func.FuncOp, ir.Block]:
    """A module with ``func.func public @main`` taking the graph inputs' arguments (results are
    set once the body is lowered); returns the module, the func and its entry block."""
    module = ir.Module.create()
    arg_types = [builders.tensor_type(shape, dtype) for dtype, shape in flat_types]
    arg_locations = [ir.Location.name(name) for name, layout in zip(names, layouts) for _ in range(layout.arg_count)]
    with ir.InsertionPoint(module.body):
        func_op = func.FuncOp("main", ir.FunctionType.get(arg_types, []))
        func_op.attributes["sym_visibility"] = ir.StringAttr.get("public")
        entry = ir.Block.create_at_start(func_op.body, arg_types, arg_locations)
    return module, func_op, entry


def _record_symbols(func_op: func.FuncOp, input_shapes: Sequence[Shape], equalities: Sequence[DimEquality]) -> None:
    """States the symbols of a dynamic ``@main``: per-argument dim names and the assumed equalities."""
    set_dim_names(func_op, input_shapes, len(func_op.body.blocks[0].arguments))
    if equalities:
        # The artifact states what it assumes: "s2 == s1 (node 'add')" per merge.
        func_op.attributes["onnx.dim_equalities"] = ir.ArrayAttr.get([ir.StringAttr.get(str(e)) for e in equalities])


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
