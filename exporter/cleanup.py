"""After conversion: onnxscript's optimizer and rewriter, then serialization and dtype
legalization for onnxruntime.

A literal translation of StableHLO is correct but noisy: shape arithmetic on constants,
Identity for no-op reshapes, Casts of constants, an ``Expand`` before every broadcasting
binary op (StableHLO broadcasts explicitly, ONNX implicitly), and normalizations spelled out
as reductions. The clean-up, in order:

1. ``onnxscript.optimizer.optimize_ir``: constant folding (with onnx's shape inference) and
   dead-code removal;
2. ``onnxscript.rewriter.rewrite`` with its default rules (no-op Cast/Expand/Transpose/Reshape,
   Reshape/Unsqueeze chains, Min/Max -> Clip, ...), its rules that drop an ``Expand`` a
   binary op's own broadcasting makes redundant, and its LayerNormalization fusion;
3. ``optimize_ir`` again, for what the rewrites exposed;
4. serialization, then ``exporter/ort_types.py`` (types without an onnxruntime kernel).
"""

from __future__ import annotations

import onnx
import onnx_ir

__all__ = ["clean_up", "rewrite_rules"]


def rewrite_rules() -> list:
    """The onnxscript rewrite rules the clean-up applies (standard ONNX ops only: the result
    runs on any runtime, onnxruntime-web included)."""
    from onnxscript.rewriter import _DEFAULT_REWRITE_RULES
    from onnxscript.rewriter.rules.common import expand_before_binary_op_rules
    from onnxscript.rewriter.rules.fusion._layer_norm import layer_normalization_rules

    return [*_DEFAULT_REWRITE_RULES, *expand_before_binary_op_rules, *layer_normalization_rules]


def clean_up(model: onnx_ir.Model, *, optimize: bool = True, keep: frozenset[str] = frozenset()) -> onnx.ModelProto:
    """Optimizes ``model`` in place (when ``optimize``), serializes it, and legalizes its dtypes
    for onnxruntime's kernels (``exporter/ort_types.py``).

    Args:
        keep: initializer names that must stay initializers under their names (the weights:
            a node reading one is never folded, so a fine-tuned weight can be written back
            and found by name; onnxruntime folds such nodes itself when it loads the file).
    """
    from onnx_stablehlo.exporter.ort_types import legalize_for_onnxruntime

    if optimize:
        import onnxscript.optimizer
        import onnxscript.rewriter

        def should_fold(node: onnx_ir.Node) -> bool | None:
            if any(value is not None and value.name in keep for value in node.inputs):
                return False
            return None

        onnxscript.optimizer.optimize_ir(model, num_iterations=2, should_fold=should_fold)
        onnxscript.rewriter.rewrite(model, pattern_rewrite_rules=rewrite_rules())
        onnxscript.optimizer.optimize_ir(model, num_iterations=1, should_fold=should_fold)
    return legalize_for_onnxruntime(onnx_ir.serde.serialize_model(model))
