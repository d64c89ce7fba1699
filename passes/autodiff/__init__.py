"""Reverse-mode automatic differentiation of StableHLO functions.

>>> lowered = onnx_stablehlo.lower("model.onnx", shapes, weights="args")      # doctest: +SKIP
>>> name = build_value_and_grad(lowered.module, wrt=lowered.parameter_names)  # doctest: +SKIP
>>> text = entry_module_text(lowered.module, name)   # its @main, ready for PJRT  # doctest: +SKIP

* :func:`build_vjp` adds ``@<f>_vjp(args..., output cotangents...) -> cotangents of wrt``.
* :func:`build_value_and_grad` adds ``@<f>_value_and_grad(args...) -> (results..., grads)``
  for a scalar loss result.
* The ``build-vjp`` pass (``onnx-stablehlo-opt -p 'build-vjp{wrt=0,2}'``) runs the first
  from a pipeline.

VJP rules live in :mod:`.registry`'s table, filled from the family modules
:mod:`.elementwise`, :mod:`.linalg`, :mod:`.reduction`, :mod:`.shape`, :mod:`.control` and
:mod:`.chlo`; an op without one raises :class:`MissingVjpRuleError`.
"""

from onnx_stablehlo.passes.autodiff.errors import AutodiffError, MissingVjpRuleError
from onnx_stablehlo.passes.autodiff.registry import VjpRegistry, default_registry, vjp_rule
from onnx_stablehlo.passes.autodiff.transform import (
    Wrt,
    argument_names,
    build_value_and_grad,
    build_vjp,
    entry_module_text,
    resolve_wrt,
)

__all__ = [
    "AutodiffError",
    "MissingVjpRuleError",
    "VjpRegistry",
    "Wrt",
    "argument_names",
    "build_value_and_grad",
    "build_vjp",
    "default_registry",
    "entry_module_text",
    "resolve_wrt",
    "vjp_rule",
]
