"""``unroll-depthwise-conv``: a depthwise convolution as a sum of its kernel taps.

A depthwise convolution (``feature_group_count`` = input channels = output channels: MobileNet,
ShuffleNet, PP-OCR, every "separable" block) does ``k*k`` multiply-adds per output element.
XLA CPU runs it as a grouped convolution with one group per channel, which is 10-20x slower
than the memory traffic it needs (measured: 25 ms for 96 channels of 112x112 with a 3x3
kernel, against 1.4 ms for the unrolled form). Written as a sum over the taps of strided
slices of the padded input, each scaled by one kernel column, the whole convolution is one
elementwise loop fusion:

    y[b, c, h, w] = sum over (i, j) of pad(x)[b, c, h*s + i*d, w*s + j*d] * k[c, 0, i, j]

The taps are computed channels-last (``x`` transposed to [b, h, w, c], the sum transposed
back), the layout XLA CPU gives the dots of the 1x1 convolutions around it, so the transposes
cancel against theirs instead of costing two layout copies per block.

Numerics: the same products, summed tap by tap (a convolution kernel's summation order is its
own business too); the difference is float rounding, about 1e-6 relative.
"""

from __future__ import annotations

import dataclasses
import itertools
from typing import ClassVar

import numpy as np
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import stablehlo

from onnx_stablehlo.passes.base import ModulePass
from onnx_stablehlo.passes.ir_utils import element_type_of, i64_array, is_float, shape_of, tensor_type
from onnx_stablehlo.passes.patterns import PatternRewritePass, RewritePattern, Rewriter

__all__ = ["UnrollDepthwiseConvPass"]

MAX_TAPS = 49
"""Kernels with more taps (a 7x7 kernel has 49) stay convolutions."""


def _ints(op: ir.Operation, name: str, rank: int, default: int) -> list[int]:
    if name not in op.attributes:
        return [default] * rank
    return [int(v) for v in ir.DenseI64ArrayAttr(op.attributes[name])]


class DepthwiseConvToTaps(RewritePattern):
    """convolution(x, k) {feature_group_count = C = in = out channels} -> sum of scaled slices.

    Constraints: static shapes; one input channel per group and as many outputs as inputs (no
    channel multiplier); no lhs dilation or window reversal; batch_group_count 1; at most
    ``MAX_TAPS`` taps; the output's dims in the input's order.
    """

    root = "stablehlo.convolution"

    def match_and_rewrite(self, op: ir.Operation, rw: Rewriter) -> bool:
        x, kernel = op.operands[0], op.operands[1]
        x_shape, k_shape, y_shape = shape_of(x), shape_of(kernel), shape_of(op.results[0])
        if any(s is None or None in s for s in (x_shape, k_shape, y_shape)):
            return rw.fail(op, "shapes are not static")
        numbers = stablehlo.ConvDimensionNumbers(op.attributes["dimension_numbers"])
        groups = ir.IntegerAttr(op.attributes["feature_group_count"]).value
        channels = x_shape[numbers.input_feature_dimension]
        if groups == 1 or groups != channels or k_shape[numbers.kernel_input_feature_dimension] != 1:
            return rw.fail(op, "not depthwise (one input channel per group)")
        if k_shape[numbers.kernel_output_feature_dimension] != channels:
            return rw.fail(op, "a channel multiplier other than 1")
        if ir.IntegerAttr(op.attributes["batch_group_count"]).value != 1:
            return rw.fail(op, "batch_group_count is not 1")
        spatial = list(numbers.input_spatial_dimensions)
        rank = len(spatial)
        order_in = [numbers.input_batch_dimension, numbers.input_feature_dimension, *spatial]
        order_out = [
            numbers.output_batch_dimension, numbers.output_feature_dimension, *numbers.output_spatial_dimensions
        ]
        if order_in != order_out:
            return rw.fail(op, "output dims are not in the input's order")
        if any(d != 1 for d in _ints(op, "lhs_dilation", rank, 1)):
            return rw.fail(op, "lhs dilation")
        if "window_reversal" in op.attributes and any(ir.DenseBoolArrayAttr(op.attributes["window_reversal"])):
            return rw.fail(op, "window reversal")
        taps = [k_shape[d] for d in numbers.kernel_spatial_dimensions]
        if int(np.prod(taps)) > MAX_TAPS:
            return rw.fail(op, f"{int(np.prod(taps))} taps > {MAX_TAPS}")
        strides = _ints(op, "window_strides", rank, 1)
        dilation = _ints(op, "rhs_dilation", rank, 1)
        padding = (
            np.asarray(ir.DenseIntElementsAttr(op.attributes["padding"]), dtype=np.int64).reshape(rank, 2)
            if "padding" in op.attributes else np.zeros((rank, 2), np.int64)
        )
        element = element_type_of(x)
        result_type = op.results[0].type

        # Work channels-last: [batch, spatial..., feature]. The 1x1 convolutions around a
        # depthwise one run as dots on channels-last data, so XLA then drops the transposes
        # (channels-first taps cost two layout copies per block: 60% of MobileNetV2's time).
        order = [numbers.input_batch_dimension, *spatial, numbers.input_feature_dimension]
        x_last = [x_shape[d] for d in order]
        y_last = [y_shape[d] for d in order]
        source = rw.create("stablehlo.transpose", [x], [tensor_type(x_last, element)], {"permutation": i64_array(order)}).result
        axes = list(range(1, rank + 1))  # the spatial axes, channels-last

        # Pad (negative pads crop) so every tap reads inside the array.
        low, high = [0] * len(x_last), [0] * len(x_last)
        padded_shape = list(x_last)
        for axis, (lo, hi) in zip(axes, padding):
            low[axis], high[axis] = int(lo), int(hi)
            padded_shape[axis] += int(lo) + int(hi)
        if any(low) or any(high):
            zero = rw.create(
                "stablehlo.constant", [], [ir.RankedTensorType.get([], element)],
                {"value": ir.DenseElementsAttr.get_splat(ir.RankedTensorType.get([], element), _zero(element))},
            ).result
            source = rw.create(
                "stablehlo.pad", [source, zero], [tensor_type(padded_shape, element)],
                {
                    "edge_padding_low": i64_array(low),
                    "edge_padding_high": i64_array(high),
                    "interior_padding": i64_array([0] * len(x_last)),
                },
            ).result

        # Half-precision inputs accumulate in f32, as a convolution kernel does.
        narrow = isinstance(element, (ir.F16Type, ir.BF16Type))
        compute = ir.F32Type.get() if narrow else element
        compute_type = tensor_type(y_last, compute)

        def widened(value: ir.Value, shape: list[int]) -> ir.Value:
            if not narrow:
                return value
            return rw.create("stablehlo.convert", [value], [tensor_type(shape, compute)]).result

        total = None
        for tap in itertools.product(*[range(t) for t in taps]):
            start, limit, step = [0] * len(x_last), list(padded_shape), [1] * len(x_last)
            for n, axis in enumerate(axes):
                out = y_last[axis]
                start[axis] = tap[n] * dilation[n]
                limit[axis] = start[axis] + (out - 1) * strides[n] + 1
                step[axis] = strides[n]
            window = rw.create(
                "stablehlo.slice", [source], [tensor_type(y_last, element)],
                {"start_indices": i64_array(start), "limit_indices": i64_array(limit), "strides": i64_array(step)},
            ).result
            # The kernel column of this tap: [C] along the kernel's output-feature dim.
            k_start = [0] * len(k_shape)
            k_limit = list(k_shape)
            for n, axis in enumerate(numbers.kernel_spatial_dimensions):
                k_start[axis], k_limit[axis] = tap[n], tap[n] + 1
            column = rw.create(
                "stablehlo.slice", [kernel], [tensor_type([k_limit[d] - k_start[d] for d in range(len(k_shape))], element)],
                {"start_indices": i64_array(k_start), "limit_indices": i64_array(k_limit), "strides": i64_array([1] * len(k_shape))},
            ).result
            vector = rw.create("stablehlo.reshape", [column], [tensor_type([channels], element)]).result
            scale = rw.create(
                "stablehlo.broadcast_in_dim", [widened(vector, [channels])], [compute_type],
                {"broadcast_dimensions": i64_array([rank + 1])},
            ).result
            product = rw.create("stablehlo.multiply", [widened(window, y_last), scale], [compute_type]).result
            total = product if total is None else rw.create("stablehlo.add", [total, product], [compute_type]).result
        if narrow:
            total = rw.create("stablehlo.convert", [total], [tensor_type(y_last, element)]).result
        inverse = [order.index(d) for d in range(len(order))]
        total = rw.create("stablehlo.transpose", [total], [result_type], {"permutation": i64_array(inverse)}).result
        rw.replace_op(op, [total])
        return True


def _zero(element: ir.Type) -> ir.Attribute:
    if is_float(element):
        return ir.FloatAttr.get(element, 0.0)
    return ir.IntegerAttr.get(element, 0)


@dataclasses.dataclass(frozen=True)
class UnrollDepthwiseConvPass(PatternRewritePass, ModulePass):
    """Rewrites depthwise convolutions into sums of kernel taps (see the module docstring).

    Rewrites:

    - ``convolution(x, k) {feature_group_count = C}`` with ``x: [N, C, H, W]``, ``k: [C, 1, 3, 3]``
      -> ``transpose(sum over 9 taps of slice(pad(transpose(x))) * broadcast(k[:, 0, i, j]))``

    For XLA CPU, whose grouped convolution is slow; ``CompiledModel`` runs it on CPU.
    """

    name: ClassVar[str] = "unroll-depthwise-conv"

    def patterns(self) -> list[RewritePattern]:
        return [DepthwiseConvToTaps()]
