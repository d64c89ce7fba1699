"""The numerical VJP check for functions with ``?`` dims: one ``@main_vjp``, several shapes.

``build_vjp`` runs once on the dynamic module; for each set of inputs, ``@main`` and the one
``@main_vjp`` are specialized to the inputs' shapes (``specialize-shapes``, which runs
``stablehlo-refine-shapes``), compiled on PJRT CPU, and the inner-product identity
<J t, c> = <t, J^T c> is checked as in :mod:`tests.autodiff.vjp_check`.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from jaxlib.mlir import ir

from onnx_stablehlo.frontend import jaxlib_mlir
from onnx_stablehlo.passes.autodiff import build_vjp, entry_module_text
from onnx_stablehlo.passes.specialize_shapes import SpecializeShapesPass
from onnx_stablehlo.runtime import pjrt
from tests.autodiff.vjp_check import EPS, VjpCheck, inner_product_identity, run


def build_symbolic_vjp(text: str, wrt: Sequence[int] | None = None) -> tuple[str, str]:
    """``(@main text, @main_vjp text)`` (each as the module's ``@main``), built once, ``?`` dims kept."""
    context = jaxlib_mlir.make_mlir_context()
    with context:
        module = ir.Module.parse(text)
    name = build_vjp(module, wrt=wrt)
    module.operation.verify()
    return entry_module_text(module, "main"), entry_module_text(module, name)


def specialize(text: str, arrays: Sequence[np.ndarray]) -> str:
    """``text``'s ``@main`` with every ``?`` argument dim bound to ``arrays``' shapes."""
    context = jaxlib_mlir.make_mlir_context()
    with context:
        module = ir.Module.parse(text)
        main = next(op for op in module.body.operations if ir.StringAttr(op.attributes["sym_name"]).value == "main")
        arguments = main.regions[0].blocks[0].arguments
        dims = []
        for index, (argument, array) in enumerate(zip(arguments, arrays, strict=True)):
            for axis, size in enumerate(ir.RankedTensorType(argument.type).shape):
                if size == ir.ShapedType.get_dynamic_size():
                    dims.append(f"arg{index}.{axis}={np.shape(array)[axis]}")
        SpecializeShapesPass(dims=tuple(dims)).run(module)
        module.operation.verify()
        return module.operation.get_asm(enable_debug_info=False)


def check_symbolic_vjp(
    forward_text: str,
    vjp_text: str,
    inputs: Sequence[np.ndarray],
    rng: np.random.Generator,
    *,
    wrt: Sequence[int] | None = None,
    eps: float = EPS,
) -> VjpCheck:
    """The inner-product identity at ``inputs``' shapes for a prebuilt dynamic ``@main_vjp``."""
    device = pjrt.get_device("cpu")
    inputs = [np.asarray(a) for a in inputs]
    forward = pjrt.compile_module(specialize(forward_text, inputs), device)
    specialized: list[str] = []

    def backward(arrays: list[np.ndarray]) -> list[np.ndarray]:
        text = specialize(vjp_text, arrays)
        specialized.append(text)
        return run(pjrt.compile_module(text, device), arrays, device)

    check = inner_product_identity(
        lambda arrays: run(forward, arrays, device), backward, inputs, rng, "", wrt=wrt, eps=eps
    )
    check.vjp_text = specialized[-1]
    return check
