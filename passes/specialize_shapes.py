"""``specialize-shapes``: binds dynamic dims of a function's arguments and refines to static.

A module with ``?`` dims (symbolic ONNX dims kept dynamic) compiles once per concrete shape;
this pass writes the concrete sizes into ``@main``'s argument types and runs StableHLO's
``stablehlo-refine-shapes`` (then ``stablehlo-canonicalize-dynamism``) to propagate them
through the body and the result types.
"""

from __future__ import annotations

import dataclasses
import re
from typing import ClassVar

from jaxlib.mlir import ir, passmanager

from onnx_stablehlo.passes.base import ModulePass, PassResult
from onnx_stablehlo.passes.errors import PassError
from onnx_stablehlo.passes.ir_utils import element_type_of, shape_of, tensor_type
from onnx_stablehlo.frontend import jaxlib_mlir

__all__ = ["SpecializeShapesPass", "DIM_NAMES_ATTRIBUTE"]

# Argument attribute naming each axis of a dynamic argument (an array of strings, "" when the
# axis has no name), e.g. {onnx.dim_params = ["batch", "", "seq"]}: lets `dims=batch=2` bind
# by ONNX dim_param name. Positional names (`arg0.1`) work without it.
DIM_NAMES_ATTRIBUTE = "onnx.dim_params"

_POSITIONAL = re.compile(r"^arg(\d+)\.(\d+)$")


@dataclasses.dataclass(frozen=True)
class SpecializeShapesPass(ModulePass):
    """Binds dynamic argument dims to sizes and refines every type to static.

    Rewrites (in function ``func``):

    - ``func.func @main(%arg0: tensor<?x16xf32>) -> tensor<?x4xf32>`` with ``dims=arg0.0=2``
      -> ``func.func @main(%arg0: tensor<2x16xf32>) -> tensor<2x4xf32>``, every op in the body
      refined by ``stablehlo-refine-shapes``; dynamic ops whose shape operands became constants
      (``dynamic_broadcast_in_dim``, ``dynamic_reshape`` ...) turn static through
      ``stablehlo-canonicalize-dynamism``

    Names in ``dims``: ``argI.D`` (argument I, axis D), or a dim_param name listed in the
    argument attribute ``onnx.dim_params`` (``["batch", "", "seq"]``), which binds every axis
    carrying that name. Errors: an unknown name (the message lists the names available), a
    size for an axis that is already static with another size, a non-positive size.
    """

    name: ClassVar[str] = "specialize-shapes"

    dims: tuple[str, ...] = ()
    """Bindings NAME=SIZE, comma-separated: ``batch=2,seq=16`` or ``arg0.0=2,arg0.1=16``."""

    func: str = "main"
    """The function whose arguments are specialized."""

    def __post_init__(self) -> None:
        for binding in self.dims:
            name, sep, size = binding.partition("=")
            if not sep or not name.strip():
                raise ValueError(f"option 'dims': expected NAME=SIZE, got '{binding}'")
            try:
                value = int(size)
            except ValueError:
                raise ValueError(f"option 'dims': size of '{name}' must be an integer, got '{size}'") from None
            if value < 0:
                raise ValueError(f"option 'dims': size of '{name}' must be >= 0, got {value}")

    def bindings(self) -> dict[str, int]:
        return {name.strip(): int(size) for name, _, size in (b.partition("=") for b in self.dims)}

    def run(self, module: ir.Module) -> PassResult:
        bindings = self.bindings()
        if not bindings:
            return PassResult(modified=False)
        func_op = _find_func(module, self.func)
        block = func_op.regions[0].blocks[0]
        named = _named_axes(func_op, len(block.arguments))
        unused = set(bindings)
        with module.context, ir.Location.unknown():
            new_input_types = []
            for index, argument in enumerate(block.arguments):
                shape = shape_of(argument)
                if shape is None:
                    new_input_types.append(argument.type)
                    continue
                new_shape = list(shape)
                for axis in range(len(shape)):
                    for key in (f"arg{index}.{axis}", named.get((index, axis))):
                        if key is None or key not in bindings:
                            continue
                        unused.discard(key)
                        size = bindings[key]
                        if shape[axis] is not None and shape[axis] != size:
                            raise PassError(
                                f"dims binds {key}={size}, but axis {axis} of argument {index} is static "
                                f"with size {shape[axis]}"
                            )
                        new_shape[axis] = size
                new_input_types.append(tensor_type(new_shape, element_type_of(argument)))
            if unused:
                positional = {
                    f"arg{i}.{axis}"
                    for i, arg in enumerate(block.arguments)
                    for axis, size in enumerate(shape_of(arg) or ())
                    if size is None
                }
                available = sorted(positional | {name for name in named.values() if name})
                raise PassError(
                    f"dims names {', '.join(sorted(unused))}, which @{self.func} does not have; dynamic "
                    f"dims: {', '.join(available) or '(none)'}"
                )
            changed = False
            for argument, new_type in zip(block.arguments, new_input_types):
                if new_type != argument.type:
                    argument.set_type(new_type)
                    changed = True
            if not changed:
                return PassResult(modified=False)
            function_type = ir.FunctionType(ir.TypeAttr(func_op.attributes["function_type"]).value)
            func_op.attributes["function_type"] = ir.TypeAttr.get(
                ir.FunctionType.get(new_input_types, list(function_type.results))
            )
            jaxlib_mlir.register_upstream_passes()
            manager = passmanager.PassManager.parse(
                "builtin.module(stablehlo-refine-shapes,func.func(stablehlo-canonicalize-dynamism))",
                context=module.context,
            )
            manager.enable_verifier(False)
            manager.run(module.operation)
            # refine-shapes leaves a result type alone when @main returns an argument as it is
            # (an Identity output): take the result types from what func.return returns.
            terminator = list(func_op.regions[0].blocks[0].operations)[-1]
            function_type = ir.FunctionType(ir.TypeAttr(func_op.attributes["function_type"]).value)
            returned = [v.type for v in terminator.operands]
            if returned != list(function_type.results):
                func_op.attributes["function_type"] = ir.TypeAttr.get(
                    ir.FunctionType.get(list(function_type.inputs), returned)
                )
        return PassResult(modified=True)


def _find_func(module: ir.Module, name: str) -> ir.Operation:
    names = []
    for op in module.body.operations:
        if op.operation.name != "func.func":
            continue
        symbol = ir.StringAttr(op.attributes["sym_name"]).value
        if symbol == name:
            return op.operation
        names.append(symbol)
    raise PassError(
        f"no function @{name} in the module (functions: {', '.join('@' + n for n in names) or 'none'})"
    )


def _named_axes(func_op: ir.Operation, count: int) -> dict[tuple[int, int], str]:
    """(argument, axis) -> dim_param name, from the ``onnx.dim_params`` argument attributes."""
    if "arg_attrs" not in func_op.attributes:
        return {}
    named: dict[tuple[int, int], str] = {}
    arg_attrs = ir.ArrayAttr(func_op.attributes["arg_attrs"])
    for index in range(min(count, len(arg_attrs))):
        attrs = ir.DictAttr(arg_attrs[index])
        if DIM_NAMES_ATTRIBUTE not in attrs:
            continue
        for axis, entry in enumerate(ir.ArrayAttr(attrs[DIM_NAMES_ATTRIBUTE])):
            text = ir.StringAttr(entry).value
            if text:
                named[(index, axis)] = text
    return named
