"""Batch normalization -> ONNX: ``batch_norm_inference``, ``batch_norm_training``,
``batch_norm_grad``.

Spec: StableHLO spec, "batch_norm_inference", "batch_norm_training", "batch_norm_grad"
(openxla.org/stablehlo/spec). The 1-D scale/offset/mean/variance operands run along the
``feature_index`` axis; every statistic is over all the other axes, and the variance is the
biased one (the mean of squared deviations).

Mappings:
  batch_norm_inference with feature_index == 1 and rank >= 2 (f16/f32/f64) ->
      BatchNormalization(epsilon) (the inference form of ONNX's op is exactly the spec's)
  batch_norm_inference otherwise -> (x - mean) / sqrt(var + eps) * scale + offset, the 1-D
      operands Unsqueezed to the feature axis
  batch_norm_training -> mean = ReduceMean(x), var = ReduceMean((x - mean)^2) over the
      non-feature axes; output as above; mean and var Squeezed to 1-D
  batch_norm_grad -> grad_offset = ReduceSum(dy), grad_scale = ReduceSum(dy * xhat),
      grad_operand = scale / sqrt(var + eps) * (dy - mean(dy) - xhat * mean(dy * xhat)) with
      xhat = (x - mean) / sqrt(var + eps) (the spec's formula with the division by the
      element count N written as a ReduceMean, so ``?`` dims need no run-time N)
bf16 (no onnxruntime kernels for these ops) is computed in f32 and cast back.
"""

from __future__ import annotations

import numpy as np
import onnx_ir
from jaxlib.mlir import ir

from onnx_stablehlo.exporter.context import ExportContext
from onnx_stablehlo.exporter.registry import export_rule

DT = onnx_ir.DataType
_BN_TYPES = frozenset({DT.FLOAT16, DT.FLOAT, DT.DOUBLE})


def _epsilon(ctx: ExportContext) -> float:
    return float(ir.FloatAttr(ctx.attr("epsilon")).value)


class _Frame:
    """The operand rank, feature axis, the other axes and the compute type of one op."""

    def __init__(self, ctx: ExportContext) -> None:
        self.ctx = ctx
        self.rank = len(ctx.operand_shape(0))
        self.feature = ctx.int_attr("feature_index")
        self.others = [a for a in range(self.rank) if a != self.feature]
        self.dtype = ctx.operand_dtype(0)
        self.compute = DT.FLOAT if self.dtype not in _BN_TYPES else self.dtype

    def operand(self, i: int) -> onnx_ir.Value:
        value = self.ctx.input(i)
        return value if self.ctx.operand_dtype(i) == self.compute else self.ctx.cast(value, self.compute)

    def param(self, i: int) -> onnx_ir.Value:
        """1-D operand ``i`` shaped to broadcast along the feature axis."""
        value = self.operand(i)
        return self.ctx.emit("Unsqueeze", [value, self.ctx.ints(self.others)]) if self.others else value

    def scalar(self, value: float) -> onnx_ir.Value:
        return self.ctx.const(np.array(value, dtype=self.compute.numpy()))

    def reduce(self, op_type: str, x: onnx_ir.Value, keepdims: bool = True) -> onnx_ir.Value:
        if not self.others:
            return x
        return self.ctx.emit(op_type, [x, self.ctx.ints(self.others)], {"keepdims": int(keepdims)})

    def out(self, value: onnx_ir.Value, index: int) -> onnx_ir.Value:
        dtype = self.ctx.result_dtype(index)
        return value if dtype == self.compute else self.ctx.cast(value, dtype)

    def stddev(self, var: onnx_ir.Value, eps: float) -> onnx_ir.Value:
        return self.ctx.emit("Sqrt", [self.ctx.emit("Add", [var, self.scalar(eps)])])


def _normalize(ctx: ExportContext, f: _Frame, x: onnx_ir.Value, mean: onnx_ir.Value, var: onnx_ir.Value,
               scale: onnx_ir.Value, offset: onnx_ir.Value, eps: float) -> onnx_ir.Value:
    centered = ctx.emit("Sub", [x, mean])
    normalized = ctx.emit("Div", [centered, f.stddev(var, eps)])
    return ctx.emit("Add", [ctx.emit("Mul", [normalized, scale]), offset])


@export_rule("stablehlo.batch_norm_inference")
def export_batch_norm_inference(ctx: ExportContext) -> list[onnx_ir.Value]:
    f = _Frame(ctx)
    eps = _epsilon(ctx)
    if f.feature == 1 and f.rank >= 2:
        out = ctx.emit("BatchNormalization", [f.operand(i) for i in range(5)], {"epsilon": eps})
        return [f.out(out, 0)]
    x = f.operand(0)
    scale, offset, mean, var = (f.param(i) for i in (1, 2, 3, 4))
    return [f.out(_normalize(ctx, f, x, mean, var, scale, offset, eps), 0)]


@export_rule("stablehlo.batch_norm_training")
def export_batch_norm_training(ctx: ExportContext) -> list[onnx_ir.Value]:
    f = _Frame(ctx)
    eps = _epsilon(ctx)
    x = f.operand(0)
    mean = f.reduce("ReduceMean", x)
    centered = ctx.emit("Sub", [x, mean])
    var = f.reduce("ReduceMean", ctx.emit("Mul", [centered, centered]))
    out = _normalize(ctx, f, x, mean, var, f.param(1), f.param(2), eps)
    if f.others:
        axes = ctx.ints(f.others)
        mean, var = ctx.emit("Squeeze", [mean, axes]), ctx.emit("Squeeze", [var, axes])
    return [f.out(out, 0), f.out(mean, 1), f.out(var, 2)]


@export_rule("stablehlo.batch_norm_grad")
def export_batch_norm_grad(ctx: ExportContext) -> list[onnx_ir.Value]:
    f = _Frame(ctx)
    eps = _epsilon(ctx)
    x, dy = f.operand(0), f.operand(4)
    scale, mean, var = f.param(1), f.param(2), f.param(3)
    stddev = f.stddev(var, eps)
    xhat = ctx.emit("Div", [ctx.emit("Sub", [x, mean]), stddev])
    dy_xhat = ctx.emit("Mul", [dy, xhat])
    grad_offset = f.reduce("ReduceSum", dy, keepdims=False)
    grad_scale = f.reduce("ReduceSum", dy_xhat, keepdims=False)
    inner = ctx.emit("Sub", [dy, f.reduce("ReduceMean", dy)])
    inner = ctx.emit("Sub", [inner, ctx.emit("Mul", [xhat, f.reduce("ReduceMean", dy_xhat)])])
    grad_operand = ctx.emit("Mul", [ctx.emit("Div", [scale, stddev]), inner])
    return [f.out(grad_operand, 0), f.out(grad_scale, 1), f.out(grad_offset, 2)]
