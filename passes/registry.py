"""The table of our passes: pipeline name -> where the class lives (imported on first use).

Nothing is imported until a pipeline names a pass, so ``onnx-stablehlo-opt --help`` and the
CLI stay fast and importing ``onnx_stablehlo.passes`` has no side effects. To add a pass,
write ``passes/<snake_name>.py`` with a frozen dataclass ``<Name>Pass(ModulePass)`` and add a
line here; docs/passes.md is generated from this table (``python tools/gen_passes_doc.py``).
"""

from __future__ import annotations

import importlib

from onnx_stablehlo.passes.base import ModulePass

__all__ = ["pass_names", "get_pass_class", "all_pass_classes"]

# name -> "module:Class" under onnx_stablehlo.passes; sorted by name.
_PASSES: dict[str, str] = {
    "build-vjp": "build_vjp:BuildVjpPass",
    "canonicalize-stablehlo": "canonicalize_stablehlo:CanonicalizeStableHLOPass",
    "conv-kernel-layout": "conv_kernel_layout:ConvKernelLayoutPass",
    "convert-precision": "convert_precision:ConvertPrecisionPass",
    "fold-constants": "fold_constants:FoldConstantsPass",
    "fold-transposes": "fold_transposes:FoldTransposesPass",
    "hoist-weights": "hoist_weights:HoistWeightsPass",
    "mlir-pipeline": "mlir_pipeline:MlirPipelinePass",
    "simplify-broadcasts": "simplify_broadcasts:SimplifyBroadcastsPass",
    "simplify-dot-general": "simplify_dot_general:SimplifyDotGeneralPass",
    "simplify-reductions": "simplify_reductions:SimplifyReductionsPass",
    "sink-transposes": "sink_transposes:SinkTransposesPass",
    "specialize-shapes": "specialize_shapes:SpecializeShapesPass",
    "split-grouped-conv": "split_grouped_conv:SplitGroupedConvPass",
    "strip-debug-info": "strip_debug_info:StripDebugInfoPass",
    "unroll-depthwise-conv": "unroll_depthwise_conv:UnrollDepthwiseConvPass",
}


def pass_names() -> list[str]:
    """Names of our passes, sorted."""
    return sorted(_PASSES)


def get_pass_class(name: str) -> type[ModulePass] | None:
    """The class of our pass ``name`` (imported now), or ``None`` when we have no such pass."""
    target = _PASSES.get(name)
    if target is None:
        return None
    module_name, class_name = target.split(":")
    module = importlib.import_module(f"onnx_stablehlo.passes.{module_name}")
    cls = getattr(module, class_name)
    if cls.name != name:
        raise RuntimeError(f"pass table says {name!r} but {class_name}.name is {cls.name!r}")
    return cls


def all_pass_classes() -> list[type[ModulePass]]:
    """Every pass class, sorted by name (imports them all)."""
    return [get_pass_class(name) for name in pass_names()]  # type: ignore[misc]
