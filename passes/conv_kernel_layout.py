"""``conv-kernel-layout``: makes every convolution kernel ``[spatial..., in, out]`` (HWIO).

XLA CPU runs convolutions with the kernel physically in HWIO order. An ONNX ``Conv`` weight is
OIHW, so when the weight is an ``@main`` argument (``weights="args"``) XLA inserts a transpose
of every kernel on every call: 100 MB of copies per ResNet-50 inference, about half of its run
time on 2 cores (a constant kernel is transposed once, at compile time). This pass makes that
transpose an explicit ``stablehlo.transpose`` of the kernel and gives the convolution HWIO
dimension numbers; ``hoist-weights`` then moves the transpose out of ``@main`` so it runs once
per set of weights. Numerics are unchanged (a transpose moves elements, it does not round).
"""

from __future__ import annotations

import dataclasses
from typing import ClassVar

from jaxlib.mlir import ir
from jaxlib.mlir.dialects import stablehlo

from onnx_stablehlo.passes.base import ModulePass
from onnx_stablehlo.passes.ir_utils import conv_numbers_with, element_type_of, i64_array, shape_of, tensor_type
from onnx_stablehlo.passes.patterns import PatternRewritePass, RewritePattern, Rewriter

__all__ = ["ConvKernelLayoutPass"]


class ConvKernelToSpatialInOut(RewritePattern):
    """convolution(x, w) with kernel dims (o, i, s...) -> convolution(x, transpose(w)) with (s..., i, o).

    Constraint: the kernel has a static shape (weights always do).
    """

    root = "stablehlo.convolution"

    def match_and_rewrite(self, op: ir.Operation, rw: Rewriter) -> bool:
        numbers = stablehlo.ConvDimensionNumbers(op.attributes["dimension_numbers"])
        spatial = list(numbers.kernel_spatial_dimensions)
        kernel_in, kernel_out = numbers.kernel_input_feature_dimension, numbers.kernel_output_feature_dimension
        permutation = [*spatial, kernel_in, kernel_out]
        if permutation == list(range(len(permutation))):
            return rw.fail(op, "kernel is already [spatial..., in, out]")
        kernel = op.operands[1]
        shape = shape_of(kernel)
        if shape is None or any(d is None for d in shape):
            return rw.fail(op, "kernel shape is not static")
        transposed_type = tensor_type([shape[p] for p in permutation], element_type_of(kernel))
        transposed = rw.create("stablehlo.transpose", [kernel], [transposed_type], {"permutation": i64_array(permutation)})
        rank = len(spatial)
        new_numbers = conv_numbers_with(
            numbers, kernel_input_feature_dimension=rank, kernel_output_feature_dimension=rank + 1,
            kernel_spatial_dimensions=list(range(rank)),
        )
        attributes = {name: op.attributes[name] for name in op.attributes}
        attributes["dimension_numbers"] = new_numbers
        operands = [op.operands[0], transposed.result, *list(op.operands)[2:]]
        new = rw.create("stablehlo.convolution", operands, [r.type for r in op.results], attributes)
        rw.replace_op(op, list(new.results))
        return True


@dataclasses.dataclass(frozen=True)
class ConvKernelLayoutPass(PatternRewritePass, ModulePass):
    """Gives every ``stablehlo.convolution`` a ``[spatial..., in, out]`` kernel via a transpose.

    Rewrites:

    - ``convolution(x, w) {kernel dims [o, i, 0, 1]}`` ->
      ``convolution(x, transpose(w, [2, 3, 1, 0])) {kernel dims [0, 1, i, o]}``

    For XLA CPU (see the module docstring); ``CompiledModel`` runs it on CPU before
    ``hoist-weights``. Other backends choose their own kernel layout.
    """

    name: ClassVar[str] = "conv-kernel-layout"

    def patterns(self) -> list[RewritePattern]:
        return [ConvKernelToSpatialInOut()]
