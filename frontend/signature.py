"""``@main``'s calling convention: graph inputs as arguments, graph outputs as results.

A graph input is a tensor (one argument), a sequence (one argument per element) or an optional
(none or one); :class:`~onnx_stablehlo.frontend.layout.Layout` records how each maps onto
``@main``'s arguments. Shapes come from the model's declaration, checked against (or completed
by) the caller's ``input_shapes``; under ``dynamic`` a named or unknown dim stays symbolic.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import onnx_ir
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import func

from onnx_stablehlo.errors import InvalidOptionError, ShapeError, UnsupportedDtypeError
from onnx_stablehlo.frontend import builders
from onnx_stablehlo.frontend.context import LoweredValue
from onnx_stablehlo.frontend.dtypes import DataType
from onnx_stablehlo.frontend.layout import TENSOR, Layout, onnx_kind
from onnx_stablehlo.frontend.shapes import SymbolicDim, format_shape

__all__ = [
    "graph_input_values",
    "input_layouts",
    "bind_argument",
    "flatten_lowered",
    "set_dim_names",
]


def graph_input_values(graph: onnx_ir.Graph) -> list[onnx_ir.Value]:
    """Graph inputs that are real inputs (not initializers listed as inputs, as IR < 4 does)."""
    return [v for v in graph.inputs if v.name not in graph.initializers]


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
        shape = _check_tensor_shape(name, declared, spec if has_spec else None, dynamic, fixed_dims)
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
        flat = [(element_type.dtype, _check_tensor_shape(f"{name}[{i}]", None, s)) for i, s in enumerate(spec)]
        return Layout("sequence", tuple(TENSOR for _ in flat)), flat
    if kind == "optional":
        if has_spec and spec is None:
            return Layout("optional"), []
        inner, flat = _layout_of_input(name, value_type.elem_type, None, spec, has_spec)  # type: ignore[union-attr]
        return Layout("optional", (inner,)), flat
    raise UnsupportedDtypeError(f"input '{name}' has type {value_type}, which is not supported")


def input_layouts(
    graph: onnx_ir.Graph,
    input_shapes: Mapping[str, Any] | None,
    dynamic: bool = False,
    fixed_dims: Mapping[str, int] | None = None,
) -> list[tuple[Layout, list[tuple[DataType, tuple]]]]:
    """Per graph input: its layout and the ``(dtype, shape)`` of each ``@main`` argument it takes.

    Raises:
        ShapeError: ``input_shapes`` names an input the graph lacks, or does not fit a declared
            shape; or an input's shape is symbolic and not given (outside ``dynamic``).
        InvalidOptionError: ``fixed_dims`` names a dim no input has.
    """
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


def bind_argument(name: str, layout: Layout, arguments: Iterator[ir.Value]) -> LoweredValue:
    """The lowered value of graph input ``name``, taking its arguments from ``arguments``."""
    if layout.kind == "tensor":
        arg = next(arguments)
        return LoweredValue(name, builders.dtype_of(arg), tuple(builders.shape_of(arg)), value=arg)  # type: ignore[arg-type]
    elements = [bind_argument(f"{name}[{i}]", e, arguments) for i, e in enumerate(layout.elements)]
    dtype = elements[0].dtype if elements else DataType.UNDEFINED
    return LoweredValue(name, dtype, (), kind=layout.kind, elements=elements)


def flatten_lowered(value: LoweredValue) -> tuple[Layout, list[LoweredValue]]:
    """The layout of a lowered value and its tensors in argument/result order."""
    if value.kind == "tensor":
        return TENSOR, [value]
    layouts = []
    tensors: list[LoweredValue] = []
    for element in value.elements or []:
        layout, flat = flatten_lowered(element)
        layouts.append(layout)
        tensors.extend(flat)
    return Layout(value.kind, tuple(layouts)), tensors


def set_dim_names(func_op: func.FuncOp, input_shapes: Sequence[Sequence[Any]], count: int) -> None:
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
