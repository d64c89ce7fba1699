"""Convolutions: ``stablehlo.convolution`` and ``stablehlo.dynamic_conv`` -> ONNX ``Conv``
(``ConvTranspose`` for the input-dilated form).

Spec: StableHLO spec, "convolution" (dimension numbers, window strides, padding, lhs/rhs
dilation, window reversal, feature and batch groups) and "dynamic_conv" (the same with the
padding as an operand).

Mappings (``A -> B``):
  convolution -> [Transpose] Conv [Transpose]
      The input goes to ``[N, C, spatial...]`` and the kernel to ``[O, I, spatial...]`` with a
      Transpose only where the dimension numbers are another layout (JAX's NHWC/HWIO: the
      kernel Transpose of a constant is folded); the result goes back from
      ``[N, O, spatial...]`` to the output dimension numbers' layout.
      window_strides -> strides, rhs_dilation -> dilations, feature_group_count -> group;
      padding ``[[lo, hi], ...]`` -> pads ``[lo..., hi...]`` for the positive parts, a Slice of
      the input for the negative parts; window_reversal -> a Slice (step -1) of the kernel.
  convolution with lhs_dilation > 1 and unit window strides (JAX's conv_transpose, the input
      gradient of a strided conv) -> ConvTranspose(strides=lhs_dilation,
      dilations=rhs_dilation) of the spatially flipped, in/out-swapped kernel; pads
      ``(k-1)*r - lo`` / ``(k-1)*r - hi``; a padding beyond the kernel's reach (a negative
      ConvTranspose pad) is zeros, added by Pad on the result. Constraint: the kernel's
      feature dims are static when feature_group_count > 1 (the kernel is regrouped by Reshape).
  convolution with lhs_dilation > 1 otherwise -> the input dilated with zeros (per dilated
      axis: Unsqueeze, Pad, Reshape, Slice), then Conv as above.
  convolution with batch_group_count = G > 1 (the kernel gradient of a grouped or depthwise
      conv) -> the input ``[N, C, ...]`` regrouped to ``[N/G, G*C, ...]`` (Reshape, Transpose,
      Reshape) and Conv(group=G). Constraint: feature_group_count = 1 then (the pre-scan
      reports other combinations).
  dynamic_conv -> as convolution when the padding operand is a constant; else the input is
      padded by Pad with the run-time pads (negative pads crop) and Conv gets no pads.

Element types: onnxruntime's CPU Conv/ConvTranspose have f32 and f16 kernels only. f16 stays
f16; bf16, float8 and f64 operands are computed in f32 and Cast back (f64 convolutions are so
computed at f32 precision); a result type differing from the operands'
(``preferred_element_type``) gets a Cast. Integer convolutions have no onnxruntime kernel and
no exact float form: the pre-scan reports them.

``precision_config`` is ignored (on CPU the convolution is computed in its operands' precision).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import onnx_ir
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import stablehlo

from onnx_stablehlo.exporter.context import ExportContext, read_ints
from onnx_stablehlo.exporter.registry import export_rule
from onnx_stablehlo.exporter.types import onnx_dtype

__all__ = ["export_convolution", "export_dynamic_conv"]

DT = onnx_ir.DataType
_INT64_MAX = np.iinfo(np.int64).max
_FLOAT_TYPES = {DT.FLOAT16, DT.BFLOAT16, DT.FLOAT, DT.DOUBLE, DT.FLOAT8E4M3FN, DT.FLOAT8E4M3FNUZ, DT.FLOAT8E5M2,
                DT.FLOAT8E5M2FNUZ}


def _attr_ints(op: ir.Operation, name: str, default: Sequence[int]) -> list[int]:
    return read_ints(op.attributes[name]) if name in op.attributes else list(default)


def _group_counts(op: ir.Operation) -> tuple[int, int]:
    attributes = op.attributes
    fgc = int(ir.IntegerAttr(attributes["feature_group_count"]).value) if "feature_group_count" in attributes else 1
    bgc = int(ir.IntegerAttr(attributes["batch_group_count"]).value) if "batch_group_count" in attributes else 1
    return fgc, bgc


def _check_conv(op: ir.Operation) -> str | None:
    """Why a convolution has no ONNX form here: integer operands, or both group counts > 1."""
    for value in list(op.operands)[:2]:
        if onnx_dtype(value) not in _FLOAT_TYPES:
            return (f"integer convolution ({value.type}): onnxruntime's Conv has float kernels only and a float "
                    "convolution is not exact for integers")
    fgc, bgc = _group_counts(op)
    if fgc > 1 and bgc > 1:
        return f"feature_group_count = {fgc} together with batch_group_count = {bgc}"
    return None


def _read_padding(attr: ir.Attribute | None, rank: int) -> list[tuple[int, int]]:
    if attr is None:
        return [(0, 0)] * rank
    flat = [int(v) for v in ir.DenseIntElementsAttr(attr)]
    return [(flat[2 * i], flat[2 * i + 1]) for i in range(rank)]


def _transpose(ctx: ExportContext, x: onnx_ir.Value, perm: list[int]) -> onnx_ir.Value:
    return x if perm == sorted(perm) else ctx.emit("Transpose", [x], {"perm": perm})


def _dilate(ctx: ExportContext, x: onnx_ir.Value, rank: int, factors: Sequence[int]) -> onnx_ir.Value:
    """Inserts ``f - 1`` zeros between neighbours along each spatial axis of ``x``
    (``[N, C, spatial...]``, ``rank`` dims): a length ``L`` becomes ``(L - 1) * f + 1``."""
    for i, f in enumerate(factors):
        if f == 1:
            continue
        axis = 2 + i
        x = ctx.emit("Unsqueeze", [x, ctx.ints([axis + 1])])  # [..., L, 1, ...]
        pads = [0] * (2 * (rank + 1))
        pads[rank + 1 + axis + 1] = f - 1
        x = ctx.emit("Pad", [x, ctx.ints(pads)])  # [..., L, f, ...] (zeros after each element)
        # Merge (L, f): dims before the axis are copied (0), the dims after come from Shape.
        target = ctx.ints([0] * axis + [-1])
        if axis + 2 <= rank:
            target = ctx.emit("Concat", [target, ctx.emit("Shape", [x], {"start": axis + 2})], {"axis": 0})
        x = ctx.emit("Reshape", [x, target])
        x = ctx.emit("Slice", [x, ctx.ints([0]), ctx.ints([-(f - 1)]), ctx.ints([axis])])
    return x


def _crop(ctx: ExportContext, x: onnx_ir.Value, padding: Sequence[tuple[int, int]]) -> onnx_ir.Value:
    """Slices the negative parts of ``padding`` off the spatial axes of ``x``."""
    axes, starts, ends = [], [], []
    for i, (lo, hi) in enumerate(padding):
        if lo < 0 or hi < 0:
            axes.append(2 + i)
            starts.append(max(0, -lo))
            ends.append(hi if hi < 0 else _INT64_MAX)
    if not axes:
        return x
    return ctx.emit("Slice", [x, ctx.ints(starts), ctx.ints(ends), ctx.ints(axes)])


def _batch_groups(ctx: ExportContext, x: onnx_ir.Value, groups: int, rank: int) -> onnx_ir.Value:
    """``[N, C, spatial...]`` -> ``[N/G, G*C, spatial...]``: batch group ``j`` (rows
    ``j*N/G...``) becomes channel group ``j``."""
    tail = ctx.emit("Shape", [x], {"start": 1})
    x = ctx.emit("Reshape", [x, ctx.emit("Concat", [ctx.ints([groups, -1]), tail], {"axis": 0})])
    x = ctx.emit("Transpose", [x], {"perm": [1, 0] + list(range(2, rank + 1))})
    spatial = ctx.emit("Shape", [x], {"start": 3})
    return ctx.emit("Reshape", [x, ctx.emit("Concat", [ctx.ints([0, -1]), spatial], {"axis": 0})])


def _conv_transpose_kernel(ctx: ExportContext, w: onnx_ir.Value, w_shape: Sequence[int | None],
                           groups: int) -> onnx_ir.Value | None:
    """Conv kernel ``[O, C/g, k...]`` -> ConvTranspose kernel ``[C, O/g, k...]``, flipped in
    every spatial dim; ``None`` when regrouping needs static feature dims that are ``?``."""
    rank = len(w_shape)
    spatial = list(range(2, rank))
    if groups == 1:
        w = ctx.emit("Transpose", [w], {"perm": [1, 0] + spatial})
    else:
        o, ig = w_shape[0], w_shape[1]
        if o is None or ig is None:
            return None
        k = [int(d) for d in w_shape[2:]]  # type: ignore[arg-type]
        w = ctx.emit("Reshape", [w, ctx.ints([groups, o // groups, ig] + k)])
        w = ctx.emit("Transpose", [w], {"perm": [0, 2, 1] + list(range(3, rank + 1))})
        w = ctx.emit("Reshape", [w, ctx.ints([groups * ig, o // groups] + k)])
    n = len(spatial)
    return ctx.emit("Slice", [w, ctx.ints([-1] * n), ctx.ints([-_INT64_MAX] * n), ctx.ints(spatial),
                              ctx.ints([-1] * n)])


def _convolution(ctx: ExportContext, padding: list[tuple[int, int]] | None,
                 dynamic_padding: onnx_ir.Value | None) -> onnx_ir.Value:
    """The ONNX form of ``ctx.op`` (a convolution or dynamic_conv); ``padding`` static, or
    ``dynamic_padding`` a ``[spatial, 2]`` int64 run-time value."""
    numbers = stablehlo.ConvDimensionNumbers(ctx.attr("dimension_numbers"))
    in_spatial = list(numbers.input_spatial_dimensions)
    k_spatial = list(numbers.kernel_spatial_dimensions)
    out_spatial = list(numbers.output_spatial_dimensions)
    n = len(in_spatial)
    rank = n + 2
    op = ctx.op
    strides = _attr_ints(op, "window_strides", [1] * n)
    lhs_dilation = _attr_ints(op, "lhs_dilation", [1] * n)
    rhs_dilation = _attr_ints(op, "rhs_dilation", [1] * n)
    reversal = _attr_ints(op, "window_reversal", [0] * n)
    fgc, bgc = _group_counts(op)

    in_dtypes = (ctx.operand_dtype(0), ctx.operand_dtype(1))
    result_dtype = ctx.result_dtype()
    compute = DT.FLOAT16 if set(in_dtypes) | {result_dtype} == {DT.FLOAT16} else DT.FLOAT
    x, w = ctx.input(0), ctx.input(1)
    x = x if in_dtypes[0] == compute else ctx.cast(x, compute)
    w = w if in_dtypes[1] == compute else ctx.cast(w, compute)

    x = _transpose(ctx, x, [numbers.input_batch_dimension, numbers.input_feature_dimension] + in_spatial)
    w_perm = [numbers.kernel_output_feature_dimension, numbers.kernel_input_feature_dimension] + k_spatial
    w = _transpose(ctx, w, w_perm)
    w_shape = [ctx.operand_shape(1)[d] for d in w_perm]
    no_spatial = n == 0
    if no_spatial:  # ONNX Conv needs a spatial dim: a 1-wide one, squeezed off the result
        x = ctx.emit("Unsqueeze", [x, ctx.ints([2])])
        w = ctx.emit("Unsqueeze", [w, ctx.ints([2])])
        w_shape.append(1)
        n, rank = 1, 3
        strides, lhs_dilation, rhs_dilation, reversal = [1], [1], [1], [0]
        padding, dynamic_padding = [(0, 0)], None
    flipped = [2 + i for i in range(n) if reversal[i]]
    if flipped:
        m = len(flipped)
        w = ctx.emit("Slice", [w, ctx.ints([-1] * m), ctx.ints([-_INT64_MAX] * m), ctx.ints(flipped),
                               ctx.ints([-1] * m)])
    group = fgc
    if bgc > 1:
        x = _batch_groups(ctx, x, bgc, rank)
        group = bgc

    out: onnx_ir.Value | None = None
    dilated = any(d != 1 for d in lhs_dilation)
    kernel_static = all(w_shape[2 + i] is not None for i in range(n))
    if dilated and padding is not None and all(s == 1 for s in strides) and kernel_static:
        out = _as_conv_transpose(ctx, x, w, w_shape, padding, lhs_dilation, rhs_dilation, group)
    if out is None:
        if dilated:
            x = _dilate(ctx, x, rank, lhs_dilation)
        pads = None
        if dynamic_padding is not None:
            # [n, 2] -> [2, n] -> [2, 2 + n] (no padding of N and C) -> [begins..., ends...]
            p = ctx.emit("Transpose", [dynamic_padding], {"perm": [1, 0]})
            p = ctx.emit("Pad", [p, ctx.ints([0, 2, 0, 0])])
            x = ctx.emit("Pad", [x, ctx.emit("Reshape", [p, ctx.ints([-1])])])
        else:
            assert padding is not None
            x = _crop(ctx, x, padding)
            positive = [max(0, lo) for lo, _ in padding] + [max(0, hi) for _, hi in padding]
            pads = positive if any(positive) else None
        out = ctx.emit("Conv", [x, w], {"strides": strides, "dilations": rhs_dilation, "pads": pads,
                                        "group": group})

    if no_spatial:
        out = ctx.emit("Squeeze", [out, ctx.ints([2])])
        rank = 2
    perm = [0] * rank
    perm[numbers.output_batch_dimension] = 0
    perm[numbers.output_feature_dimension] = 1
    for i, d in enumerate(out_spatial):
        perm[d] = 2 + i
    out = _transpose(ctx, out, perm)
    return out if compute == result_dtype else ctx.cast(out, result_dtype)


def _as_conv_transpose(ctx: ExportContext, x: onnx_ir.Value, w: onnx_ir.Value, w_shape: Sequence[int | None],
                       padding: Sequence[tuple[int, int]], lhs_dilation: Sequence[int],
                       rhs_dilation: Sequence[int], group: int) -> onnx_ir.Value | None:
    """A unit-stride convolution of the ``lhs_dilation``-dilated input as ConvTranspose;
    ``None`` when the kernel cannot be regrouped (``?`` feature dims)."""
    kernel = _conv_transpose_kernel(ctx, w, w_shape, group)
    if kernel is None:
        return None
    n = len(padding)
    begins, ends, extra = [], [], [0] * (2 * (n + 2))
    for i, (lo, hi) in enumerate(padding):
        reach = (w_shape[2 + i] - 1) * rhs_dilation[i]  # type: ignore[operator]
        b, e = reach - lo, reach - hi
        # A negative ConvTranspose pad: padding beyond the kernel's reach gives zeros there.
        extra[2 + i], extra[n + 2 + 2 + i] = max(0, -b), max(0, -e)
        begins.append(max(0, b))
        ends.append(max(0, e))
    out = ctx.emit("ConvTranspose", [x, kernel], {"strides": list(lhs_dilation), "dilations": list(rhs_dilation),
                                                  "pads": begins + ends, "group": group})
    if any(extra):
        out = ctx.emit("Pad", [out, ctx.ints(extra)])
    return out


@export_rule("stablehlo.convolution", check=_check_conv)
def export_convolution(ctx: ExportContext) -> list[onnx_ir.Value]:
    """``convolution(lhs, rhs)``: 1-D, 2-D and 3-D (any spatial rank), any dimension numbers,
    float operands; result as the op's type (see the module docstring)."""
    numbers = stablehlo.ConvDimensionNumbers(ctx.attr("dimension_numbers"))
    padding = _read_padding(ctx.attr("padding"), len(numbers.input_spatial_dimensions))
    return [_convolution(ctx, padding, None)]


@export_rule("stablehlo.dynamic_conv", check=_check_conv)
def export_dynamic_conv(ctx: ExportContext) -> list[onnx_ir.Value]:
    """``dynamic_conv(lhs, rhs, padding)``: a convolution whose ``padding`` (``[spatial, 2]``,
    any int type) is an operand."""
    constant = ctx.constant_operand(2)
    if constant is not None:
        return [_convolution(ctx, [(int(lo), int(hi)) for lo, hi in np.asarray(constant).reshape(-1, 2)], None)]
    pads = ctx.input(2)
    if ctx.operand_dtype(2) != DT.INT64:
        pads = ctx.cast(pads, DT.INT64)
    return [_convolution(ctx, None, pads)]
