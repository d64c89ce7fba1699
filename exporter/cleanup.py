"""After conversion: onnxscript's optimizer (constant folding, dead-code removal, the
rewriter's default rules), then serialization to an ``onnx.ModelProto``.

A literal translation of StableHLO is correct but noisy (shape arithmetic on constants, Identity
for no-op reshapes, Casts of constants); ``onnxscript.optimizer.optimize_ir`` folds and removes
these with onnx's own shape inference.
"""

from __future__ import annotations

import onnx
import onnx_ir

__all__ = ["clean_up"]


def clean_up(model: onnx_ir.Model, *, optimize: bool = True) -> onnx.ModelProto:
    """Optimizes ``model`` in place (when ``optimize``), serializes it, and legalizes its dtypes
    for onnxruntime's kernels (``exporter/ort_types.py``)."""
    from onnx_stablehlo.exporter.ort_types import legalize_for_onnxruntime

    if optimize:
        import onnxscript.optimizer

        onnxscript.optimizer.optimize_ir(model, num_iterations=2)
    return legalize_for_onnxruntime(onnx_ir.serde.serialize_model(model))
