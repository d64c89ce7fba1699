"""``Artifact``: a lowered module frozen for compiling, in the spirit of ``jax.export.Exported``.

The importer returns a :class:`~onnx_stablehlo.frontend.importer.LoweredModule`: a live MLIR
module and its context, which the passes transform in place. Once the runtime has transformed
it, it freezes it into an ``Artifact``: the module as MLIR bytecode plus its calling
convention (symbolic input and output avals, weight names, dim equalities, run-time check
messages, layouts). Nothing in an ``Artifact`` is live MLIR: the executable cache keeps
artifacts, PJRT compiles their bytes, the symbolic artifact is parsed back (from bytecode) once
per new input shape, and the text is printed only when someone asks for it (``text``).

MLIR bytecode, not the portable (VHLO) artifact: the bytes stay in this process and this
jaxlib, so the versioned form would only cost a conversion each way; ``to_portable`` gives it
for callers that store or ship the module.
"""

from __future__ import annotations

import dataclasses
import functools
import io
import types
from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np
from jaxlib.mlir import ir

from onnx_stablehlo.frontend.dtypes import DataType
from onnx_stablehlo.frontend.importer import LoweredModule

__all__ = ["Artifact", "Aval", "module_bytecode", "entry_bytecode"]


class Aval(NamedTuple):
    """One ``@main`` argument or result: its name, ONNX dtype and shape (ints and SymbolicDims)."""

    name: str
    dtype: DataType
    shape: tuple[Any, ...]


@dataclasses.dataclass(frozen=True, eq=False)
class Artifact:
    """A lowered (and transformed) module as bytecode, with what a compile and a call need.

    Attributes:
        bytecode: the module as MLIR bytecode (locations kept).
        entry: the function PJRT runs (``main``).
        input_names: graph inputs, the first arguments of ``@main``.
        input_types: ``(dtype, shape)`` per ``@main`` input argument (a sequence input is
            one argument per element); shapes hold SymbolicDims where the artifact is symbolic.
        input_layouts: how each graph input maps onto those arguments.
        parameter_names: weights that follow the inputs as arguments (``weights="args"``).
        parameters: weight name -> getter of its numpy value (read-only mapping).
        output_names: graph outputs, the results of ``@main`` in order.
        output_types: ``(dtype, shape)`` per ``@main`` result.
        output_layouts: how each graph output maps onto ``@main``'s results.
        dim_equalities: equalities of graph-input symbols the symbolic lowering assumed.
        check_messages: run-time checks: when non-empty, ``@main``'s last result is their flags.
        value_shapes: every ONNX value of the main graph -> ``(dtype, dims)``.
        hoisted_count: how many ``@hoisted_weights`` results ``@main`` takes after the weights
            (0: none; see ``passes/hoist_weights.py``).
        seconds: time spent lowering (or refining), in seconds.
    """

    bytecode: bytes
    input_names: list[str]
    input_types: list[tuple[DataType, Any]]
    parameter_names: list[str]
    parameters: Mapping[str, Callable[[], np.ndarray]]
    output_names: list[str]
    output_types: list[tuple[DataType, Any]]
    input_layouts: tuple[Any, ...] = ()
    output_layouts: tuple[Any, ...] = ()
    dim_equalities: tuple[Any, ...] = ()
    check_messages: tuple[str, ...] = ()
    value_shapes: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    entry: str = "main"
    hoisted_count: int = 0
    seconds: float = 0.0

    @classmethod
    def freeze(cls, lowered: LoweredModule, module: ir.Module | None = None, **changes: Any) -> Artifact:
        """The artifact of ``lowered`` (of ``module`` when given: a transformed copy of it)."""
        fields = dict(
            bytecode=module_bytecode(module if module is not None else lowered.module),
            input_names=list(lowered.input_names),
            input_types=list(lowered.input_types),
            parameter_names=list(lowered.parameter_names),
            parameters=types.MappingProxyType(dict(lowered.parameters)),
            output_names=list(lowered.output_names),
            output_types=list(lowered.output_types),
            input_layouts=tuple(lowered.input_layouts),
            output_layouts=tuple(lowered.output_layouts),
            dim_equalities=tuple(lowered.dim_equalities),
            check_messages=tuple(lowered.check_messages),
            value_shapes=types.MappingProxyType(dict(lowered.value_shapes)),
            seconds=lowered.seconds,
        )
        fields.update(changes)
        return cls(**fields)

    def replace(self, **changes: Any) -> Artifact:
        """A copy with ``changes`` (``dataclasses.replace``)."""
        return dataclasses.replace(self, **changes)

    def parse(self, context: ir.Context) -> ir.Module:
        """A live module of this artifact in ``context`` (parsed from bytecode)."""
        with context:
            return ir.Module.parse(self.bytecode, context)

    @functools.cached_property
    def text(self) -> str:
        """The module as StableHLO text (printed on first use, then kept)."""
        return self._print(debug_info=False)

    def text_with_locations(self) -> str:
        """The module text with ``loc(...)`` annotations (ONNX node names)."""
        return self._print(debug_info=True)

    def _print(self, debug_info: bool) -> str:
        from onnx_stablehlo.frontend import jaxlib_mlir

        module = self.parse(jaxlib_mlir.make_mlir_context())
        return module.operation.get_asm(enable_debug_info=debug_info)

    @property
    def in_avals(self) -> tuple[Aval, ...]:
        """``@main``'s input arguments (graph inputs; a sequence input gives ``name[i]``)."""
        names: list[str] = []
        for name, layout in zip(self.input_names, self.input_layouts or [None] * len(self.input_names)):
            count = getattr(layout, "arg_count", 1)
            names.extend([name] if count == 1 and getattr(layout, "kind", "tensor") == "tensor" else [f"{name}[{i}]" for i in range(count)])
        return tuple(Aval(n, dtype, tuple(shape)) for n, (dtype, shape) in zip(names, self.input_types))

    @property
    def out_avals(self) -> tuple[Aval, ...]:
        """``@main``'s results: graph outputs, then the run-time check flags when there are checks."""
        names = list(self.output_names)
        names += ["run-time checks"] * (len(self.output_types) - len(names))
        return tuple(Aval(n, dtype, tuple(shape)) for n, (dtype, shape) in zip(names, self.output_types))


def module_bytecode(module: ir.Module | ir.Operation | ir.OpView) -> bytes:
    """``module`` as MLIR bytecode (what PJRT's compile accepts besides text, without a print)."""
    operation = module.operation
    buffer = io.BytesIO()
    operation.write_bytecode(buffer)
    return buffer.getvalue()


def entry_bytecode(module: ir.Module, func: str, *, drop: Sequence[str] = (), whole: bytes | None = None) -> bytes:
    """Bytecode of a copy of ``module`` whose ``@main`` is ``func``; functions it does not call
    (and those named in ``drop``) are left out.

    ``whole``: ``module``'s own bytecode, returned as it is when the copy would not differ
    (``func`` is ``main`` and calls every other function), saving a clone and a write.
    """
    with module.context:
        if func == "main" and whole is not None and not drop:
            functions = {
                ir.StringAttr(op.attributes["sym_name"]).value: op
                for op in module.body.operations
                if op.operation.name == "func.func"
            }
            if "main" in functions and _called(functions, "main") == set(functions):
                return whole
        copy = module.operation.clone()
        functions = {
            ir.StringAttr(op.attributes["sym_name"]).value: op
            for op in copy.regions[0].blocks[0].operations
            if op.operation.name == "func.func"
        }
        if func not in functions:
            raise KeyError(f"module has no function @{func}")
        keep = _called(functions, func)
        for name, op in functions.items():
            if name not in keep or name in drop:
                op.operation.erase()
        if func != "main":
            target = functions[func]
            target.attributes["sym_name"] = ir.StringAttr.get("main")
            target.attributes["sym_visibility"] = ir.StringAttr.get("public")
        data = module_bytecode(copy)
        copy.operation.erase()
        return data


def _called(functions: Mapping[str, Any], root: str) -> set[str]:
    """``root`` and every function it calls, directly or not."""
    seen = {root}
    stack = [root]
    while stack:
        for callee in _callees(functions[stack.pop()].operation):
            if callee in functions and callee not in seen:
                seen.add(callee)
                stack.append(callee)
    return seen


def _callees(operation: ir.Operation) -> list[str]:
    found = []
    for region in operation.regions:
        for block in region.blocks:
            for op in block.operations:
                inner = op.operation
                if inner.name == "func.call":
                    found.append(ir.FlatSymbolRefAttr(inner.attributes["callee"]).value)
                found.extend(_callees(inner))
    return found
