"""Our StableHLO as a ``jax.export.Exported``: the one module of the JAX bridge with private jax touches.

JAX has no public constructor for an ``Exported`` made from someone else's StableHLO. The route
that holds across releases (measured with jax 0.10.2, /work/shared/ARCHITECTURE.md "JAX
bridge") is a *template*: export a placeholder function with the right avals through the public
``jax.export.export``, so that JAX fills in the trees, avals (symbolic ones included),
shardings, platforms, effects and the calling-convention version; then swap in our serialized
module with ``dataclasses.replace``. The private details used here, each guarded by a test in
``tests/jax/test_confinement.py``:

* the dataclass field ``Exported._get_vjp`` (a template's own would differentiate the
  zero-returning placeholder: ``jax.grad`` would silently give zeros);
* the dataclass field ``Exported.mlir_module_serialized``;
* ``jax.extend.mlir.serialize_portable_artifact`` with a target version from
  ``jaxlib.mlir.dialects.stablehlo.get_version_from_compatibility_requirement``.

The module contract (what ``Exported.call`` checks): the entry function is ``@main``; its
argument and result types equal the avals exactly, ``?`` exactly where a dim is symbolic, with
JAX's element types (with x64 off an ONNX int64 arrives as i32); with more than one platform
``@main`` takes a leading ``tensor<i32>`` platform index. :func:`wrap_main` builds such a
``@main`` around the lowered one, converting element types where JAX's differ from ONNX's.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

from jaxlib.mlir import ir
from jaxlib.mlir.dialects import func as func_dialect
from jaxlib.mlir.dialects import stablehlo

__all__ = [
    "EXPORTED_PRIVATE_FIELDS",
    "exported_from_module",
    "serialize_module",
    "vjp_factory_of",
    "wrap_main",
]

EXPORTED_PRIVATE_FIELDS = ("mlir_module_serialized", "_get_vjp")
"""The ``jax.export.Exported`` dataclass fields :func:`exported_from_module` replaces."""


def serialize_module(module: ir.Module) -> bytes:
    """Our module as the portable artifact ``Exported.mlir_module_serialized`` holds.

    The target is a StableHLO version at least four weeks old, as JAX's own exporter picks.
    """
    import jax.extend.mlir as jax_mlir

    target = stablehlo.get_version_from_compatibility_requirement(
        stablehlo.StablehloCompatibilityRequirement.WEEK_4
    )
    return bytes(jax_mlir.serialize_portable_artifact(module, target))


def wrap_main(
    module: ir.Module,
    arg_types: Sequence[ir.Type],
    result_types: Sequence[ir.Type],
    *,
    platform_index: bool,
    inner_name: str = "onnx_main",
) -> None:
    """Renames ``@main`` to a private ``@<inner_name>`` and adds a public ``@main`` calling it.

    The new ``@main`` takes ``arg_types`` (after a ``tensor<i32>`` platform index when
    ``platform_index``) and returns ``result_types``; where an element type differs from the
    lowered function's, the value goes through ``stablehlo.convert``. Shapes must be equal
    (``?`` included).
    """
    with module.context, ir.Location.unknown():
        inner = None
        for op in module.body.operations:
            if op.operation.name == "func.func" and ir.StringAttr(op.attributes["sym_name"]).value == "main":
                inner = op
        if inner is None:
            raise ValueError("module has no @main")
        inner.attributes["sym_name"] = ir.StringAttr.get(inner_name)
        inner.attributes["sym_visibility"] = ir.StringAttr.get("private")
        inner_type = ir.FunctionType(ir.TypeAttr(inner.attributes["function_type"]).value)
        leading = [ir.RankedTensorType.get([], ir.IntegerType.get_signless(32))] if platform_index else []
        entry_type = ir.FunctionType.get([*leading, *arg_types], list(result_types))
        with ir.InsertionPoint(module.body):
            entry = func_dialect.FuncOp("main", entry_type)
        entry.attributes["sym_visibility"] = ir.StringAttr.get("public")
        block = entry.add_entry_block()
        with ir.InsertionPoint(block):
            arguments = list(block.arguments)[len(leading):]
            converted = [_convert(a, t) for a, t in zip(arguments, inner_type.inputs, strict=True)]
            call = func_dialect.CallOp(list(inner_type.results), ir.FlatSymbolRefAttr.get(inner_name), converted)
            results = [_convert(r, t) for r, t in zip(call.results, result_types, strict=True)]
            func_dialect.ReturnOp(results)


def _convert(value: ir.Value, target: ir.Type) -> ir.Value:
    if value.type == target:
        return value
    return stablehlo.ConvertOp(target, value).result


def exported_from_module(
    serialized: bytes,
    in_specs: Sequence[Any],
    out_specs: Sequence[Any],
    *,
    platforms: Sequence[str],
    get_vjp: Callable[[Any], Any],
) -> Any:
    """A ``jax.export.Exported`` of flat arrays ``in_specs -> tuple(out_specs)`` running ``serialized``.

    Args:
        serialized: the portable artifact (:func:`serialize_module`) of a module whose
            ``@main`` matches the specs (see the module docstring).
        in_specs, out_specs: ``jax.ShapeDtypeStruct``s, with symbolic dims from one
            ``jax.export.SymbolicScope``; output dims are expressions of the input symbols.
        platforms: the lowering platforms (``("cpu",)``).
        get_vjp: ``Exported -> Exported`` of the VJP (``Exported.vjp()`` and
            ``serialize(vjp_order=1)`` call it). Never left to the template: its own VJP
            differentiates the placeholder and gives zeros.
    """
    import jax
    import jax.numpy as jnp

    out_shapes = [tuple(s.shape) for s in out_specs]
    out_dtypes = [s.dtype for s in out_specs]

    def placeholder(*args: Any) -> tuple[Any, ...]:
        # Output dims are expressions of the input symbols (one scope), usable as they are.
        del args
        return tuple(jnp.zeros(shape, dtype) for shape, dtype in zip(out_shapes, out_dtypes))

    template = jax.export.export(jax.jit(placeholder, keep_unused=True), platforms=tuple(platforms))(*in_specs)
    return dataclasses.replace(template, mlir_module_serialized=serialized, _get_vjp=get_vjp)


def vjp_factory_of(exported: Any) -> Callable[[Any], Any] | None:
    """The ``_get_vjp`` an ``Exported`` carries (tests check it is ours, not a template's)."""
    return exported._get_vjp
