"""Lowering rules, one module per op family.

``RULE_MODULES`` is the explicit list the default registry is built from; adding a family
means adding its module here.
"""

from __future__ import annotations

import functools
import importlib

from onnx_stablehlo.frontend import symbolic_eval
from onnx_stablehlo.frontend.registry import LoweringRegistry

__all__ = ["RULE_MODULES", "default_registry"]

RULE_MODULES = (
    "elementwise",
    "conversion",
    "generators",
    "tensor",
    "slicing",
    "gather",
    "scatter",
    "cumulative",
    "data_dependent",
    "matmul",
    "linalg",
    "reduction",
    "activation",
    "normalization",
    "conv",
    "pool",
    "resize",
    "sampling",
    "detection",
    "control_flow",
    "scan",
    "recurrent",
    "sequence",
    "signal",
    "sorting",
    "optimizers",
    "contrib_layers",
    "contrib_attention",
    "contrib_weight_quant",
    "contrib_nchwc",
    "ml_linear",
    "ml_tree",
    "ml_preprocess",
    "quantized",
)


@functools.cache
def default_registry() -> LoweringRegistry:
    """The registry of every rule in ``RULE_MODULES`` and the symbolic evaluators (built once per process)."""
    modules = [importlib.import_module(f"{__name__}.{name}") for name in RULE_MODULES]
    return LoweringRegistry.from_modules([*modules, symbolic_eval])
