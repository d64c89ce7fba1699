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
   binary op's own broadcasting makes redundant, its LayerNormalization fusion, and
   ``exporter/idioms.py`` (keepdims reductions, ReduceMean, LayerNormalization, Softmax, Erf
   recovered from their lowered spellings);
3. ``optimize_ir`` again, for what the rewrites exposed;
4. serialization, then ``exporter/ort_types.py`` (types without an onnxruntime kernel).
"""

from __future__ import annotations

import contextlib
import logging

import onnx
import onnx.helper
import onnx_ir

__all__ = ["clean_up", "rewrite_rules"]


def rewrite_rules() -> list:
    """The onnxscript rewrite rules the clean-up applies (standard ONNX ops only: the result
    runs on any runtime, onnxruntime-web included)."""
    from onnxscript.rewriter import _DEFAULT_REWRITE_RULES
    from onnxscript.rewriter.rules.common import expand_before_binary_op_rules
    from onnxscript.rewriter.rules.fusion._layer_norm import layer_normalization_rules

    from onnx_stablehlo.exporter.idioms import idiom_rules

    return [*_DEFAULT_REWRITE_RULES, *expand_before_binary_op_rules, *layer_normalization_rules, *idiom_rules()]


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

        with _quiet("onnx_ir", "onnxscript"):
            onnxscript.optimizer.optimize_ir(model, num_iterations=2, should_fold=should_fold)
            onnxscript.rewriter.rewrite(model, pattern_rewrite_rules=rewrite_rules())
            onnxscript.optimizer.optimize_ir(model, num_iterations=1, should_fold=should_fold)
    return legalize_for_onnxruntime(_outputs_not_initializers(onnx_ir.serde.serialize_model(model)))


@contextlib.contextmanager
def _quiet(*names: str):
    """The optimizer's own notices (initializers it skipped deduplicating, ...) are not a
    user's concern: its loggers stay at errors while it runs."""
    loggers = [logging.getLogger(name) for name in names]
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        for logger, level in zip(loggers, levels):
            logger.setLevel(level)


def _outputs_not_initializers(proto: onnx.ModelProto) -> onnx.ModelProto:
    """A graph output folded into a constant becomes an initializer of the output's name, which
    onnxruntime refuses ("Duplicate definition"): it is renamed and an Identity gives the output."""
    graph = proto.graph
    outputs = {value.name for value in graph.output}
    for init in graph.initializer:
        if init.name in outputs:
            name = init.name
            init.name = f"{name}__constant"
            graph.node.append(onnx.helper.make_node("Identity", [init.name], [name], name=f"{name}/constant"))
    return proto
