"""The export rule modules, one per op family (the exporter's mirror of ``frontend/lowering``).

Each module's rules are tagged with ``@export_rule``; :func:`default_registry` registers every
module listed here. A new family is a new module and one line in ``RULE_MODULES``.
"""

from __future__ import annotations

import functools
import importlib

from onnx_stablehlo.exporter.registry import ExportRegistry

__all__ = ["RULE_MODULES", "default_registry"]

RULE_MODULES = (
    "elementwise",  # arithmetic, math, compare, select, clamp, convert, constant, shifts
    "shape",  # broadcast_in_dim, reshape, transpose, concatenate, iota, slice, reverse, dynamic shapes
    "linalg",  # dot_general, dot, einsum, unary_einsum
    "conv",  # convolution (and dynamic_conv)
    "reduction",  # reduce (sum/max/min/prod/and/or, argmax/argmin), reduce_window
    "indexing",  # gather, scatter, dynamic_slice, dynamic_update_slice, pad, dynamic_gather, ...
    "sorting",  # sort, chlo.top_k
    "control_flow",  # func.call, composite, while, if, case, optimization_barrier, custom_call
    "select_and_scatter",  # the gradient of max/min pooling
    "bits",  # bitcast_convert, popcnt, count_leading_zeros; ops with no ONNX form, with reasons
    "special",  # chlo.square, erfc, lgamma, digamma, erf_inv, next_after, mulhi
    "broadcasting",  # chlo.broadcast_* binary ops, stablehlo.broadcast, chlo.constant(_like)
    "normalization",  # batch_norm_inference, batch_norm_training, batch_norm_grad
)


@functools.cache
def default_registry() -> ExportRegistry:
    """The registry of every rule module in :data:`RULE_MODULES` (built once per process)."""
    return ExportRegistry.from_modules(
        importlib.import_module(f"onnx_stablehlo.exporter.rules.{name}") for name in RULE_MODULES
    )
