"""Lowering rules: convolutions.

Convolutions become ``stablehlo.convolution`` in ONNX's own layout (``[N, C, D1 ... Dn]``
input, ``[M, C/group, k1 ... kn]`` kernel), so no transposes are emitted:

- ``Conv(x, w, b)`` -> ``convolution(x, w)`` with ``feature_group_count = group``, plus a
  broadcast ``add`` of the bias.
- ``ConvTranspose(x, w, b)`` -> ``convolution(x, reverse(w'))`` with ``lhs_dilation = strides``
  (the gradient of a strided convolution), where ``w'`` swaps the kernel's in/out channels per
  group. Padding the dilated input by ``k_eff - 1 - pad`` realizes ``pads``, ``output_padding``
  and ``output_shape``; negative amounts (pads larger than the kernel) become a slice.
- ``ConvInteger`` and ``QLinearConv`` subtract the zero points in int32 and convolve in int32;
  ``QLinearConv`` requantizes in float32 (round half to even, saturate), as onnxruntime does.
- ``DeformConv(X, W, offset, ..)``: every kernel tap sampled bilinearly at its offset position
  (stablehlo.gather), masked, then stablehlo.dot_general with W.
- ``Col2Im(x, image, block)``: per kernel offset, a stablehlo.pad placing that offset's column
  block in the image (interior padding = stride - 1), summed with stablehlo.add.

Symbolic batch and spatial dims (channels and kernels static) keep ``?`` dims in the
convolution types; output sizes are :class:`SymbolicDim` expressions (the window arithmetic is
in ``builders/windows.py``). ConvTranspose's cropping (pads beyond ``k - 1``) is a
``real_dynamic_slice``; its ``output_shape`` with symbolic dims raises a ``ShapeError`` (the
model is then lowered per shape).

Spec: onnx.ai/onnx/operators (each op's page); onnx.reference where the page leaves details open.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence

import numpy as np
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import stablehlo

from onnx_stablehlo.errors import ShapeError
from onnx_stablehlo.frontend import builders, dtypes, limits
from onnx_stablehlo.frontend.builders import geometry, windows
from onnx_stablehlo.frontend.context import LoweringContext, OnnxNode
from onnx_stablehlo.frontend.dtypes import DataType
from onnx_stablehlo.frontend.registry import lowering
from onnx_stablehlo.frontend.shapes import Dim, floor_div


_CONV_FLOATS = "float16, bfloat16, float32, float64"


def _precision_config(dtype: DataType) -> ir.ArrayAttr | None:
    """HIGHEST precision for float32/float64, so accelerators never drop to TF32 or bf16 passes."""
    if dtype in (DataType.FLOAT, DataType.DOUBLE):
        highest = stablehlo.PrecisionAttr.get("HIGHEST")
        return ir.ArrayAttr.get([highest, highest])
    return None


def _convolution(
    lhs: ir.Value,
    rhs: ir.Value,
    *,
    strides: Sequence[int],
    padding: Sequence[tuple[int, int]],
    lhs_dilation: Sequence[int],
    rhs_dilation: Sequence[int],
    groups: int,
    result_dtype: DataType,
) -> ir.Value:
    """``stablehlo.convolution`` in ONNX layout: lhs ``[N, C, *S]``, rhs ``[M, C/g, *K]``.

    The batch and spatial dims of lhs may be symbolic (the result's are then symbolic too).
    """
    lhs_shape = builders.dims_of(lhs)
    rhs_shape = builders.static_shape_of(rhs)
    rank = len(lhs_shape) - 2
    spatial = list(range(2, rank + 2))
    out_spatial = []
    for i in range(rank):
        dilated_in = (lhs_shape[i + 2] - 1) * lhs_dilation[i] + 1
        dilated_k = (rhs_shape[i + 2] - 1) * rhs_dilation[i] + 1
        span = dilated_in + padding[i][0] + padding[i][1] - dilated_k
        out_spatial.append(floor_div(span, strides[i]) + 1)
    out_dims = [lhs_shape[0], rhs_shape[0], *out_spatial]
    result_type = builders.tensor_type(out_dims, result_dtype)
    numbers = stablehlo.ConvDimensionNumbers.get(
        input_batch_dimension=0,
        input_feature_dimension=1,
        input_spatial_dimensions=spatial,
        kernel_input_feature_dimension=1,
        kernel_output_feature_dimension=0,
        kernel_spatial_dimensions=spatial,
        output_batch_dimension=0,
        output_feature_dimension=1,
        output_spatial_dimensions=spatial,
    )
    result = stablehlo.convolution(
        result_type,
        lhs,
        rhs,
        numbers,
        groups,
        1,
        window_strides=list(strides),
        padding=builders.padding_attr(padding),
        lhs_dilation=list(lhs_dilation),
        rhs_dilation=list(rhs_dilation),
        precision_config=_precision_config(result_dtype),
    )
    return builders.record(result, out_dims)


def _add_bias(ctx: LoweringContext, y: ir.Value, bias_index: int) -> ir.Value:
    """``y + b`` with ``b`` of shape ``[M]`` broadcast along the feature dim of ``y``."""
    if not ctx.has_input(bias_index):
        return y
    shape = builders.dims_of(y)
    bias = ctx.input(bias_index)
    if builders.static_shape_of(bias) != (shape[1],):
        raise ctx.error(f"bias shape {builders.static_shape_of(bias)} must be [{shape[1]}]", ShapeError)
    bias = builders.convert(bias, builders.dtype_of(y))
    return stablehlo.add(y, builders.broadcast_to(bias, shape, dims=[1]))


def _batch_spatial_symbolic(ctx: LoweringContext, index: int) -> tuple[Dim, ...]:
    """Input ``index``'s ``[N, C, *S]`` dims: N and S may be symbolic, C must be static."""
    shape = tuple(ctx.input_shape(index))
    if len(shape) >= 2 and not windows.is_int(shape[1]):
        ctx.input_static_shape(index)  # raises the ShapeError naming the input
    return shape


def _float_conv_operands(ctx: LoweringContext, node: OnnxNode):
    """Conv/ConvTranspose's X and W, their dims (X's batch and spatial dims may be symbolic), the
    float dtype and ``group``; an integer X raises UnsupportedDtypeError."""
    x, w = ctx.input(0), ctx.input(1)
    x_shape, w_shape = _batch_spatial_symbolic(ctx, 0), ctx.input_static_shape(1)
    dtype = builders.dtype_of(x)
    if not dtypes.is_float(dtype):
        raise ctx.unsupported_dtype(dtype, _CONV_FLOATS)
    return x, w, x_shape, w_shape, dtype, node.attr_int("group")


def _check_conv_shapes(ctx: LoweringContext, x_shape: Sequence[int], w_shape: Sequence[int], groups: int) -> None:
    if len(x_shape) < 3 or len(w_shape) != len(x_shape):
        raise ctx.error(f"X {list(x_shape)} and W {list(w_shape)} need equal ranks >= 3", ShapeError)
    if groups < 1 or x_shape[1] % groups or w_shape[0] % groups:
        raise ctx.error(
            f"group={groups} must divide the channels of X {list(x_shape)} and W {list(w_shape)}", ShapeError
        )
    if w_shape[1] * groups != x_shape[1]:
        raise ctx.error(
            f"W {list(w_shape)} needs C/group = {x_shape[1] // groups} input channels for X {list(x_shape)}",
            ShapeError,
        )


def _kernel_shape_matches(ctx: LoweringContext, node: OnnxNode, kernel: Sequence[int]) -> None:
    declared = node.attr_ints("kernel_shape")
    if declared and tuple(declared) != tuple(kernel):
        raise ctx.error(f"kernel_shape={declared} disagrees with W's spatial dims {list(kernel)}", ShapeError)


@lowering("Conv", since=1)
@lowering("Conv", since=11)  # 11 documented the default strides/dilations and SAME_* output size
@lowering("Conv", since=22)  # 22 added bfloat16
def lower_conv(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value]:
    """Lowers Conv to stablehlo.convolution (plus a broadcast add of the bias).

    Spec: Conv-1/11/22.
    Shapes: X [N, C, D1 ... Dn] (n >= 1; N and D symbolic allowed), W [M, C/group, k1 ... kn], B [M].
    Dtypes: float16, bfloat16, float32, float64.
    Raises:
        UnsupportedAttributeError: an unknown auto_pad or negative pads.
        ShapeError: inconsistent shapes, group or kernel_shape; a symbolic dim.
    """
    x, w, x_shape, w_shape, dtype, groups = _float_conv_operands(ctx, node)
    _check_conv_shapes(ctx, x_shape, w_shape, groups)
    kernel = tuple(w_shape[2:])
    _kernel_shape_matches(ctx, node, kernel)
    window, _ = windows.window(ctx, node, x_shape[2:], kernel)
    (x,), padding = windows.pad_symbolic([x], [0], [(0, 0), (0, 0), *window.pads])
    y = _convolution(
        x,
        w,
        strides=window.strides,
        padding=padding[2:],
        lhs_dilation=[1] * len(kernel),
        rhs_dilation=window.dilations,
        groups=groups,
        result_dtype=dtype,
    )
    return [_add_bias(ctx, y, 2)]


def _transpose_kernel_pads(
    ctx: LoweringContext, node: OnnxNode, in_spatial: Sequence[int], window: windows.Window
) -> tuple[tuple[tuple[int, int], ...], tuple[int, ...]]:
    """ConvTranspose's ``(pad_begin, pad_end)`` per axis and the output spatial size.

    ``output_shape`` (which wins over ``pads``) and SAME_* derive the total padding from the
    output size; SAME_UPPER puts the odd element at the end, everything else at the start.
    """
    rank = len(in_spatial)
    output_padding = windows.spatial_ints(ctx, node, "output_padding", rank, 0)
    full = [
        s * (size - 1) + op + k
        for s, size, op, k in zip(window.strides, in_spatial, output_padding, window.effective_kernel)
    ]
    auto_pad = node.attr_str("auto_pad", "NOTSET")
    if auto_pad not in windows.AUTO_PADS:
        raise ctx.unsupported_attribute("auto_pad", auto_pad, ", ".join(windows.AUTO_PADS))
    output_shape = node.attr_ints("output_shape")
    if output_shape:
        if len(output_shape) == rank + 2:  # some exporters include N and C
            output_shape = output_shape[2:]
        if len(output_shape) != rank:
            raise ctx.error(f"output_shape={output_shape} needs {rank} values, one per spatial axis", ShapeError)
        targets = list(output_shape)
    elif auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        targets = [size * s for size, s in zip(in_spatial, window.strides)]
    else:
        targets = None
    if targets is not None:
        pads = []
        for total_full, target in zip(full, targets):
            total = total_full - target
            small, large = total // 2, total - total // 2
            pads.append((small, large) if auto_pad == "SAME_UPPER" else (large, small))
        return tuple(pads), tuple(targets)
    if auto_pad == "VALID":
        pads = ((0, 0),) * rank
    else:
        pads = window.pads
    out = tuple(f - b - e for f, (b, e) in zip(full, pads))
    if any(windows.is_int(o) and o < 1 for o in out):
        raise ctx.error(f"pads {list(pads)} leave an empty output {list(out)}", ShapeError)
    return tuple(pads), out


@lowering("ConvTranspose", since=1)
@lowering("ConvTranspose", since=11)  # 11 documented defaults, output_padding and SAME_* sizes
@lowering("ConvTranspose", since=22)  # 22 added bfloat16
def lower_conv_transpose(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value]:
    """Lowers ConvTranspose to stablehlo.convolution with lhs_dilation = strides.

    Spec: ConvTranspose-1/11/22.
    Shapes: X [N, C, D1 ... Dn] (N and D symbolic allowed, without output_shape), W [C, M/group,
        k1 ... kn], B [M].
    Dtypes: float16, bfloat16, float32, float64.
    Deviations: with ``output_shape`` (or SAME_*), the split of an odd total padding follows
        the ConvTranspose-11 text (and onnxruntime) for every revision: the extra element goes
        to the end for SAME_UPPER, to the start otherwise. SAME_* always gives ``in * stride``
        outputs as the spec says; onnxruntime clamps the total padding at zero, so its output is
        shorter when the kernel is smaller than the stride. NaN or inf weights reach only the
        outputs onnxruntime's col2im gives them (``_non_finite_weights_like_col2im``), on static
        and symbolic shapes.
    Raises:
        UnsupportedAttributeError: an unknown auto_pad or negative pads.
        ShapeError: inconsistent shapes, group, kernel_shape or output_shape.
    """
    x, w, x_shape, w_shape, dtype, groups = _float_conv_operands(ctx, node)
    rank = len(x_shape) - 2
    if rank < 1 or len(w_shape) != len(x_shape) or groups < 1 or x_shape[1] % groups or w_shape[0] != x_shape[1]:
        raise ctx.error(
            f"X {list(x_shape)} and W {list(w_shape)} do not fit ConvTranspose with group={groups} "
            "(W must be [C, M/group, k...])",
            ShapeError,
        )
    kernel = tuple(w_shape[2:])
    _kernel_shape_matches(ctx, node, kernel)
    strides = windows.spatial_ints(ctx, node, "strides", rank, 1)
    dilations = windows.spatial_ints(ctx, node, "dilations", rank, 1)
    flat = node.attr_ints("pads") or [0] * (2 * rank)
    if len(flat) != 2 * rank:
        raise ctx.error(f"attribute pads={flat} needs {2 * rank} values (begins, then ends)", ShapeError)
    window = windows.Window(kernel, strides, dilations, tuple((flat[i], flat[i + rank]) for i in range(rank)))
    # A fuzzed stride of 2^31 dilates the input past any memory (XLA ran for ever or ran out).
    limits.check_window(ctx, "the window (kernel_shape with dilations)", window.effective_kernel)
    limits.check_window(ctx, "strides", strides)
    limits.check_window(ctx, "pads", flat)
    limits.check_window(ctx, "output_padding", node.attr_ints("output_padding") or [])
    pads, out = _transpose_kernel_pads(ctx, node, x_shape[2:], window)

    in_per_group, out_per_group = x_shape[1] // groups, w_shape[1]

    def flipped(weights: ir.Value) -> ir.Value:
        # W [C, M/g, K] -> [g, C/g, M/g, K] -> [g, M/g, C/g, K] -> [M, C/g, K], spatially reversed.
        in_per_group = builders.static_shape_of(weights)[0] // groups  # stacked indicators have more
        kernel_w = builders.reshape(weights, [groups, in_per_group, out_per_group, *kernel])
        kernel_w = builders.transpose(kernel_w, [0, 2, 1, *range(3, rank + 3)])
        kernel_w = builders.reshape(kernel_w, [groups * out_per_group, in_per_group, *kernel])
        return stablehlo.reverse(kernel_w, builders.i64_array(range(2, rank + 2)))

    conv_pads = [(k - 1 - b, k - 1 - e) for k, (b, e) in zip(window.effective_kernel, pads)]
    # output_padding (or output_shape) may ask for more tail than the formula gives.
    conv_pads = [
        (lo, hi + (o - ((size - 1) * s + 1 + lo + hi - k + 1)))
        for (lo, hi), o, size, s, k in zip(conv_pads, out, x_shape[2:], strides, window.effective_kernel)
    ]
    if not all(windows.is_int(lo) and windows.is_int(hi) for lo, hi in conv_pads):
        raise ctx.error(f"padding {conv_pads} depends on a symbolic size; it needs a static shape", ShapeError)
    # output_shape = [2^31, ...] over a 3-pixel input pads by 2^31 (XLA compiled for ever).
    limits.check_window(ctx, "the padding that output_shape/output_padding imply", [v for pair in conv_pads for v in pair])
    negative = [(max(0, -lo), max(0, -hi)) for lo, hi in conv_pads]

    def transposed(lhs: ir.Value, weights: ir.Value) -> ir.Value:
        y = _convolution(
            lhs,
            flipped(weights),
            strides=[1] * rank,
            padding=[(max(0, lo), max(0, hi)) for lo, hi in conv_pads],
            lhs_dilation=strides,
            rhs_dilation=dilations,
            groups=groups,
            result_dtype=builders.dtype_of(lhs),
        )
        return _crop(y, negative)

    y = transposed(x, w)
    y = _non_finite_weights_like_col2im(x, w, y, transposed, groups)
    return [_add_bias(ctx, y, 2)]


def _crop(y: ir.Value, negative: Sequence[tuple[int, int]]) -> ir.Value:
    """Crops ``(begin, end)`` elements off each spatial dim of ``y`` (symbolic dims allowed)."""
    if not any(lo or hi for lo, hi in negative):
        return y
    dtype = builders.dtype_of(y)
    shape = builders.dims_of(y)
    start = [0, 0, *(lo for lo, _ in negative)]
    limit = [shape[0], shape[1], *(size - hi for size, (_, hi) in zip(shape[2:], negative))]
    if not all(windows.is_int(d) for d in shape):
        cropped = [lim - st for st, lim in zip(start, limit)]
        y = stablehlo.real_dynamic_slice(
            builders.tensor_type(cropped, dtype),
            y,
            builders.shape_tensor(start),
            builders.shape_tensor(limit),
            builders.shape_tensor([1] * len(shape)),
        )
        return builders.record(y, cropped)
    ones = builders.i64_array([1] * len(shape))
    return stablehlo.slice(y, builders.i64_array(start), builders.i64_array(limit), ones)


def _non_finite_weights_like_col2im(
    x: ir.Value, w: ir.Value, y: ir.Value, transposed: Callable[[ir.Value, ir.Value], ir.Value], groups: int
) -> ir.Value:
    """ConvTranspose when W holds NaN or inf, as onnxruntime's GEMM + col2im computes it.

    The convolution over the dilated, padded X multiplies the padding zeros by every weight, so
    a NaN weight would spread NaN to outputs no input reaches (0 x NaN); onnxruntime multiplies
    real inputs only. A ``stablehlo.if`` on "W is all finite" keeps the plain convolution; the
    other branch convolves X and W with their non-finite values zeroed, and counts, with three
    convolutions of stacked 0/+-1 indicators (which only real inputs carry), the products that
    are NaN (NaN x anything, 0 x inf), +inf or -inf: an output with a NaN product, or both
    infinities, is NaN, else one with an infinite product is that infinity, else the finite sum.
    """
    dtype = builders.dtype_of(w)
    count_dtype = DataType.DOUBLE if dtype == DataType.DOUBLE else DataType.FLOAT
    w_finite_all = builders.all_finite(w)
    op = stablehlo.IfOp([y.type], w_finite_all)
    plain = op.true_branch.blocks.append()
    with ir.InsertionPoint(plain):
        stablehlo.return_([y])
    exact = op.false_branch.blocks.append()
    with ir.InsertionPoint(exact), builders.region_scope():

        def classes(value: ir.Value) -> dict[str, ir.Value]:
            zero = builders.full_like(value, 0.0)
            inf = builders.full_like(value, float("inf"))
            nan = builders.compare(value, value, "NE")
            pinf = builders.compare(value, inf, "EQ")
            ninf = builders.compare(value, stablehlo.negate(inf), "EQ")
            finite = builders.compare(stablehlo.abs(value), inf, "LT")
            return {
                "nan": nan,
                "pinf": pinf,
                "ninf": ninf,
                "inf": stablehlo.or_(pinf, ninf),
                "pos": stablehlo.and_(finite, builders.compare(value, zero, "GT")),
                "neg": stablehlo.and_(finite, builders.compare(value, zero, "LT")),
                "zero": builders.compare(value, zero, "EQ"),
                "any": builders.compare(zero, zero, "EQ"),
                "finite": finite,
            }

        xc, wc = classes(x), classes(w)

        def ind(mask: ir.Value) -> ir.Value:
            return builders.convert(mask, count_dtype)

        def signed(plus: ir.Value, minus: ir.Value) -> ir.Value:
            return stablehlo.subtract(ind(plus), ind(minus))

        def stacked(pairs: Sequence[tuple[ir.Value, ir.Value]]) -> ir.Value:
            """``sum(transposed(a, b) for a, b in pairs)`` as one convolution: the pairs are
            stacked along the input channels, within each group."""
            x_shape, w_shape = builders.dims_of(x), builders.static_shape_of(w)
            n, c, spatial = x_shape[0], x_shape[1], x_shape[2:]
            per = c // groups
            lhs = [builders.reshape(a, [n, groups, 1, per, *spatial]) for a, _ in pairs]
            rhs = [builders.reshape(b, [groups, 1, per, *w_shape[1:]]) for _, b in pairs]
            k = len(pairs)
            lhs_all = builders.reshape(stablehlo.concatenate(lhs, 2), [n, k * c, *spatial])
            rhs_all = builders.reshape(stablehlo.concatenate(rhs, 1), [k * c, *w_shape[1:]])
            return transposed(lhs_all, rhs_all)

        # NaN products: NaN x anything, anything x NaN, 0 x inf, inf x 0.
        nan_count = stacked([
            (ind(xc["nan"]), ind(wc["any"])), (ind(xc["any"]), ind(wc["nan"])),
            (ind(xc["zero"]), ind(wc["inf"])), (ind(xc["inf"]), ind(wc["zero"])),
        ])
        # Infinite products: a non-zero x times an infinite w, an infinite x times a finite
        # non-zero w. ``difference`` is (+inf count) - (-inf count), ``total`` their sum.
        x_sign = signed(stablehlo.or_(xc["pos"], xc["pinf"]), stablehlo.or_(xc["neg"], xc["ninf"]))
        w_inf_sign, x_inf_sign = signed(wc["pinf"], wc["ninf"]), signed(xc["pinf"], xc["ninf"])
        w_sign = signed(wc["pos"], wc["neg"])
        difference = stacked([(x_sign, w_inf_sign), (x_inf_sign, w_sign)])
        total = stacked(
            [(stablehlo.abs(x_sign), stablehlo.abs(w_inf_sign)), (stablehlo.abs(x_inf_sign), stablehlo.abs(w_sign))]
        )
        half = builders.full_like(total, 0.5)
        positive = builders.compare(stablehlo.add(total, difference), half, "GT")  # 2 x (+inf count)
        negative = builders.compare(stablehlo.subtract(total, difference), half, "GT")
        nan_products = builders.compare(nan_count, half, "GT")
        zero_x, zero_w = builders.full_like(x, 0.0), builders.full_like(w, 0.0)
        finite_sum = transposed(stablehlo.select(xc["finite"], x, zero_x), stablehlo.select(wc["finite"], w, zero_w))
        inf = builders.full_like(finite_sum, float("inf"))
        result = stablehlo.select(positive, inf, stablehlo.select(negative, stablehlo.negate(inf), finite_sum))
        is_nan = stablehlo.or_(nan_products, stablehlo.and_(positive, negative))
        result = stablehlo.select(is_nan, builders.full_like(finite_sum, float("nan")), result)
        stablehlo.return_([result])
    return builders.record(op.results[0], builders.dims_of(y))


def _zero_point(ctx: LoweringContext, index: int, per_channel_dim: int | None, shape: Sequence[int]) -> ir.Value | None:
    """An int32 zero point broadcast to ``shape``: a scalar, or 1-D along ``per_channel_dim``."""
    if not ctx.has_input(index):
        return None
    zp = builders.convert(ctx.input(index), DataType.INT32)
    zp_shape = builders.static_shape_of(zp)
    size = math.prod(zp_shape)
    if size == 1:
        return builders.broadcast_to(builders.reshape(zp, []), shape)
    if per_channel_dim is not None and size == shape[per_channel_dim]:
        return builders.broadcast_to(builders.reshape(zp, [size]), shape, dims=[per_channel_dim])
    raise ctx.error(f"zero point '{ctx.node.input_names[index]}' of shape {list(zp_shape)} must be a scalar"
                    + (f" or have {shape[per_channel_dim]} values" if per_channel_dim is not None else ""), ShapeError)


def _integer_conv(
    ctx: LoweringContext, node: OnnxNode, x_index: int, w_index: int, x_zp_index: int, w_zp_index: int
) -> ir.Value:
    """The int32 convolution ``(x - x_zp) * (w - w_zp)`` shared by ConvInteger and QLinearConv."""
    accepted = "int8, uint8"
    for index in (x_index, w_index):
        if ctx.input_dtype(index) not in (DataType.INT8, DataType.UINT8):
            raise ctx.unsupported_dtype(ctx.input_dtype(index), accepted)
    x_shape, w_shape = ctx.input_static_shape(x_index), ctx.input_static_shape(w_index)
    groups = node.attr_int("group")
    _check_conv_shapes(ctx, x_shape, w_shape, groups)
    kernel = tuple(w_shape[2:])
    _kernel_shape_matches(ctx, node, kernel)
    window, _ = windows.window(ctx, node, x_shape[2:], kernel)
    x = builders.convert(ctx.input(x_index), DataType.INT32)
    w = builders.convert(ctx.input(w_index), DataType.INT32)
    x_zp = _zero_point(ctx, x_zp_index, None, x_shape)
    if x_zp is not None:
        x = stablehlo.subtract(x, x_zp)
    w_zp = _zero_point(ctx, w_zp_index, 0, w_shape)
    if w_zp is not None:
        w = stablehlo.subtract(w, w_zp)
    # Padding with zeros after the zero-point shift pads with the zero point, as the spec says.
    chunks = _float32_channel_chunks(ctx, x_index, w_index, x_zp_index, w_zp_index, groups)
    if chunks is None:
        return _convolution(
            x, w, strides=window.strides, padding=window.pads, lhs_dilation=[1] * len(kernel),
            rhs_dilation=window.dilations, groups=groups, result_dtype=DataType.INT32,
        )
    total = None
    for start, stop in chunks:
        part = _convolution(
            # Ranges index W's C/group axis; a grouped convolution has the one whole range, and
            # x's axis (C channels) is then not sliced.
            builders.convert(x if groups > 1 else builders.slice_axis(x, 1, start, stop), DataType.FLOAT),
            builders.convert(builders.slice_axis(w, 1, start, stop), DataType.FLOAT),
            strides=window.strides,
            padding=window.pads,
            lhs_dilation=[1] * len(kernel),
            rhs_dilation=window.dilations,
            groups=groups,
            result_dtype=DataType.FLOAT,
        )
        part = builders.convert(part, DataType.INT32)
        total = part if total is None else stablehlo.add(total, part)
    return total


def _float32_channel_chunks(
    ctx: LoweringContext, x_index: int, w_index: int, x_zp_index: int, w_zp_index: int, groups: int
) -> list[tuple[int, int]] | None:
    """Input-channel ranges whose float32 convolutions are each exact, or None (int32 it is).

    XLA CPU runs an int32 convolution as a plain loop, 15-40x slower than its float32 one
    (``[1, 64, 56, 56]`` by ``[64, 64, 3, 3]``: 105-114 against 5-8 ms; ``[1, 512, 7, 7]`` by
    ``[512, 512, 3, 3]``: 870 against 22-42 ms; float64 is slower still, 1.4 s). A float32
    convolution (HIGHEST precision) is exact when every output's ``sum |x'| |w'|`` is at most
    2^24: its partial sums are then integers float32 holds. That bound is ``max |x'|`` (x's dtype
    and a constant zero point) times the largest per-filter ``sum |w'|`` over the channels
    convolved (constant weights; else their count times ``max |w'|``). Past it (ResNet-50's 3x3
    convolutions over 512 channels), the input channels are split into ranges that each fit,
    convolved apart and added in int32 (``group == 1`` only; a grouped convolution past the
    bound stays int32).
    """
    def extent(index: int, zp_index: int) -> tuple[int, np.ndarray | None]:
        info = np.iinfo(dtypes.numpy_dtype(ctx.input_dtype(index)))
        if not ctx.has_input(zp_index):
            return max(-int(info.min), int(info.max)), None
        if not ctx.is_constant_input(zp_index):
            return int(info.max) - int(info.min), None
        zp = np.asarray(ctx.constant_input(zp_index), np.int64).reshape(-1)
        return int(max(np.abs(int(info.min) - zp).max(), np.abs(int(info.max) - zp).max())), zp

    x_extent, _ = extent(x_index, x_zp_index)
    w_extent, w_zp = extent(w_index, w_zp_index)
    w_shape = ctx.input_static_shape(w_index)
    channels = w_shape[1]
    # |w'| per filter, input channel and tap: the constant weights' own, else the dtype's bound
    if ctx.is_constant_input(w_index) and (w_zp is not None or not ctx.has_input(w_zp_index)):
        w = np.asarray(ctx.constant_input(w_index), np.int64).reshape(w_shape[0], channels, -1)
        if w_zp is not None:
            w = w - (w_zp.reshape(-1, 1, 1) if w_zp.size == w_shape[0] else w_zp.reshape(()))
        per_channel = np.abs(w).sum(axis=2)  # [M, C/group]
    else:
        per_channel = np.full((w_shape[0], channels), w_extent * math.prod(w_shape[2:]), np.int64)
    for count in range(1, (channels if groups == 1 else 1) + 1):
        bounds = np.linspace(0, channels, count + 1).round().astype(int)
        ranges = [(int(a), int(b)) for a, b in zip(bounds[:-1], bounds[1:]) if b > a]
        if all(x_extent * int(per_channel[:, a:b].sum(axis=1).max()) <= builders.EXACT_FLOAT32_SUM for a, b in ranges):
            return ranges
    return None


@lowering("ConvInteger", since=10)
def lower_conv_integer(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value]:
    """Lowers ConvInteger to an int32 stablehlo.convolution of zero-point-shifted operands.

    Spec: ConvInteger-10.
    Shapes: x [N, C, D1 ... Dn], w [M, C/group, k...]; x_zero_point a scalar; w_zero_point a
        scalar or [M].
    Dtypes: x, w int8 or uint8; result int32.
    Raises:
        UnsupportedDtypeError: x or w is not int8/uint8.
        ShapeError: inconsistent shapes or zero points.
    """
    return [_integer_conv(ctx, node, 0, 1, 2, 3)]


@lowering("QLinearConv", since=10)
def lower_qlinear_conv(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value]:
    """Lowers QLinearConv to an int32 convolution requantized in float32.

    ``y = saturate(round_half_even((acc + B) * x_scale * w_scale / y_scale) + y_zero_point)``.

    Spec: QLinearConv-10.
    Shapes: x [N, C, D...], w [M, C/group, k...]; x_scale, x_zero_point, y_scale,
        y_zero_point scalars; w_scale, w_zero_point scalars or [M]; B [M] int32.
    Dtypes: x, w, y int8 or uint8 (y has y_zero_point's dtype).
    Raises:
        UnsupportedDtypeError: x, w or y_zero_point is not int8/uint8.
        ShapeError: inconsistent shapes, scales or zero points.
    """
    acc = _integer_conv(ctx, node, 0, 3, 2, 5)
    shape = builders.static_shape_of(acc)
    if ctx.has_input(8):
        bias = builders.convert(ctx.input(8), DataType.INT32)
        acc = stablehlo.add(acc, builders.broadcast_to(builders.reshape(bias, [shape[1]]), shape, dims=[1]))
    f32 = DataType.FLOAT

    def scale(index: int, per_channel: bool) -> ir.Value:
        """The scale as ``[M]`` (one per output channel; a scalar is repeated)."""
        value = builders.convert(ctx.input(index), f32)
        size = math.prod(builders.static_shape_of(value))
        if size == 1:
            return builders.broadcast_to(builders.reshape(value, []), [shape[1]])
        if per_channel and size == shape[1]:
            return builders.reshape(value, [size])
        accepted = f"a scalar or {shape[1]} values" if per_channel else "a scalar"
        raise ctx.error(f"scale '{node.input_names[index]}' must be {accepted}", ShapeError)

    # builders.divide: XLA would turn the division by a constant y_scale into a multiplication by
    # its rounded reciprocal, an ulp off onnxruntime's multiplier (flips some roundings). The
    # multiplier is per output channel, so it is computed on [M] and broadcast (computing it at
    # the output's size put a full-size barriered constant and divide in every layer).
    multiplier = builders.divide(stablehlo.multiply(scale(1, False), scale(4, True)), scale(6, False))
    multiplier = builders.broadcast_to(multiplier, shape, dims=[1])
    y = stablehlo.multiply(builders.convert(acc, f32), multiplier)
    y = stablehlo.round_nearest_even(y)
    out_dtype = ctx.input_dtype(7) if ctx.has_input(7) else DataType.UINT8
    if out_dtype not in (DataType.INT8, DataType.UINT8):
        raise ctx.unsupported_dtype(out_dtype, "int8, uint8")
    if ctx.has_input(7):
        y = stablehlo.add(y, builders.broadcast_to(builders.reshape(builders.convert(ctx.input(7), f32), []), shape))
    info = np.iinfo(dtypes.numpy_dtype(out_dtype))
    y = stablehlo.clamp(builders.splat(info.min, f32), y, builders.splat(info.max, f32))
    return [builders.convert(y, out_dtype)]


@lowering("Col2Im", since=18)
def lower_col2im(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value]:
    """Lowers Col2Im to one strided stablehlo.pad per kernel offset, summed.

    The column block of kernel offset ``o`` lands at image positions
    ``o * dilation - pad_begin + i * stride``: a pad with ``interior = stride - 1`` and
    ``low = o * dilation - pad_begin`` (negative low/high padding crops what falls outside).

    Spec: Col2Im-18.
    Shapes: input [N, C * prod(block_shape), L] static, L the number of blocks;
        image_shape and block_shape int64 [r], known at compile time; output [N, C, *image_shape].
    Dtypes: any numeric type and bool (bool blocks are or-ed).
    Raises: NonConstantInputError if image_shape or block_shape is computed at run time;
        ShapeError if the input does not hold whole blocks for the image.
    """
    x = ctx.input(0)
    dtype = ctx.input_dtype(0)
    batch, block_channels, length = geometry.expect_rank(ctx, 0, 3)
    image = ctx.constant_ints(1)
    block = ctx.constant_ints(2)
    rank = len(image)
    if len(block) != rank or rank == 0:
        raise ctx.error(f"image_shape {image} and block_shape {block} must have the same nonzero length", ShapeError)
    dilations = geometry.ints_attr(node, "dilations", [1] * rank)
    pads = geometry.ints_attr(node, "pads", [0] * (2 * rank))
    strides = geometry.ints_attr(node, "strides", [1] * rank)
    if len(dilations) != rank or len(strides) != rank or len(pads) != 2 * rank:
        raise ctx.error(
            f"dilations {dilations}, strides {strides} and pads {pads} must match {rank} image dims", ShapeError
        )
    kernel = math.prod(block)
    columns = [
        (image[i] + pads[i] + pads[rank + i] - (dilations[i] * (block[i] - 1) + 1)) // strides[i] + 1
        for i in range(rank)
    ]
    if block_channels % kernel or min(columns) < 1 or math.prod(columns) != length:
        raise ctx.error(
            f"input shape {[batch, block_channels, length]} does not hold blocks {block} of image {image} "
            f"(expected dim 1 a multiple of {kernel} and dim 2 = {math.prod(columns)})",
            ShapeError,
        )
    channels = block_channels // kernel
    blocks = builders.reshape(x, [batch, channels, kernel, *columns])
    zero = builders.splat(0, dtype)
    combine = stablehlo.OrOp if dtype == DataType.BOOL else stablehlo.AddOp
    image_value = None
    for k, offsets in enumerate(itertools.product(*[range(b) for b in block])):
        starts = [0, 0, k] + [0] * rank
        limits = [batch, channels, k + 1, *columns]
        slab = stablehlo.slice(blocks, starts, limits, [1] * (rank + 3))
        slab = builders.reshape(slab, [batch, channels, *columns])
        low = [offsets[i] * dilations[i] - pads[i] for i in range(rank)]
        high = [image[i] - (low[i] + (columns[i] - 1) * strides[i] + 1) for i in range(rank)]
        interior = [s - 1 for s in strides]
        placed = stablehlo.pad(slab, zero, [0, 0, *low], [0, 0, *high], [0, 0, *interior])
        image_value = placed if image_value is None else combine(image_value, placed).result
    return [image_value]


@lowering("DeformConv", since=19)
@lowering("DeformConv", since=22)  # 22 added bfloat16
def lower_deform_conv(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value]:
    """Lowers DeformConv to bilinear sampling (stablehlo.gather) and stablehlo.dot_general.

    Kernel tap ``k`` of output position ``p`` samples X at ``p * stride - pad_begin +
    k * dilation + offset[k, p]``, bilinearly with zeros outside X (the 2^r corners of every
    tap in one gather, batched over N and offset groups), times ``mask``; the sampled columns
    ``[N, C, K, P]`` are then contracted with W per group.

    Spec: DeformConv-19/22.
    Shapes: X [N, C, d1..dr]; W [M, C/group, k1..kr]; offset [N, offset_group*K*r, o1..or];
        B [M] optional; mask [N, offset_group*K, o1..or] optional (K = prod(k)); all static;
        Y [N, M, o1..or] with the convolution output sizes.
    Dtypes: float16, bfloat16, float32, float64 (float16/bfloat16 computed in float32).
    Raises: ShapeError for inconsistent shapes, groups or offset groups.
    """
    dtype = geometry.require_float(ctx, 0)
    x_shape = ctx.input_static_shape(0)
    w_shape = ctx.input_static_shape(1)
    offset_shape = ctx.input_static_shape(2)
    rank = len(x_shape) - 2
    batch, channels, *dims = x_shape
    out_channels = w_shape[0]
    kernel = geometry.ints_attr(node, "kernel_shape", w_shape[2:])
    group = node.attr_int("group")
    offset_group = node.attr_int("offset_group")
    strides = geometry.ints_attr(node, "strides", [1] * rank)
    dilations = geometry.ints_attr(node, "dilations", [1] * rank)
    pads = geometry.ints_attr(node, "pads", [0] * (2 * rank))
    if rank < 1 or len(w_shape) != rank + 2 or list(w_shape[2:]) != kernel:
        raise ctx.error(f"X {list(x_shape)} and W {list(w_shape)} must be [N, C, *spatial] and "
                        f"[M, C/group, *kernel_shape] with kernel_shape {kernel}", ShapeError)
    if len(strides) != rank or len(dilations) != rank or len(pads) != 2 * rank:
        raise ctx.error(f"strides {strides}, dilations {dilations} and pads {pads} must match {rank} spatial dims",
                        ShapeError)
    taps = math.prod(kernel)
    out_dims = [
        (dims[i] + pads[i] + pads[rank + i] - (dilations[i] * (kernel[i] - 1) + 1)) // strides[i] + 1
        for i in range(rank)
    ]
    problems = []
    if group < 1 or channels != w_shape[1] * group or out_channels % group:
        problems.append(f"C={channels} and M={out_channels} must split into group={group}")
    if offset_group < 1 or channels % offset_group:
        problems.append(f"C={channels} must split into offset_group={offset_group}")
    if list(offset_shape) != [batch, offset_group * taps * rank, *out_dims]:
        problems.append(f"offset {list(offset_shape)} must be {[batch, offset_group * taps * rank, *out_dims]}")
    if ctx.has_input(4) and list(ctx.input_static_shape(4)) != [batch, offset_group * taps, *out_dims]:
        problems.append(f"mask {list(ctx.input_static_shape(4))} must be {[batch, offset_group * taps, *out_dims]}")
    if problems:
        raise ctx.error("; ".join(problems), ShapeError)

    compute = geometry.compute_dtype(dtype)
    points = math.prod(out_dims)
    lead = [batch, offset_group, taps, points]
    offsets = builders.reshape(builders.convert(ctx.input(2), compute), [batch, offset_group, taps, rank, points])
    f = builders.Arith(lead, compute)
    # Compile-time part of every sample position: [K, P] per axis.
    kernel_index = np.stack(np.meshgrid(*[np.arange(k) for k in kernel], indexing="ij"), -1).reshape(taps, rank)
    out_index = np.stack(np.meshgrid(*[np.arange(o) for o in out_dims], indexing="ij"), -1).reshape(points, rank)
    per_axis = []
    for axis, size in enumerate(dims):
        base = (
            out_index[None, :, axis] * strides[axis]
            - pads[axis]
            + kernel_index[:, None, axis] * dilations[axis]
        ).astype(np.float64)
        position = f.add(
            builders.broadcast_to(builders.constant(base, compute), lead, dims=[2, 3]),
            builders.reshape(geometry.axis_slice(offsets, 3, axis), lead),
        )
        low = f.floor(position)
        t = f.sub(position, low)
        axis_taps = []
        for corner, weight in ((low, f.sub(1.0, t)), (f.add(low, 1.0), t)):
            valid = builders.logical_and(f.cmp(corner, 0.0, "GE"), f.cmp(corner, size - 1.0, "LE"))
            index = builders.convert(f.clamp(corner, 0.0, size - 1.0), DataType.INT64)
            axis_taps.append((index, weight, valid))
        per_axis.append(axis_taps)
    indices, weights, valid = geometry.combine_taps(per_axis, lead)
    corners = 2**rank

    group_channels = channels // offset_group
    x = builders.reshape(ctx.input(0), [batch, offset_group, group_channels, *dims])
    table = builders.transpose(x, [0, 1, *range(3, rank + 3), 2])  # [N, G, d1..dr, C/G]
    values = builders.convert(geometry.gather_vectors(table, indices, batch=2), compute)  # [N, G, K, P, T, C/G]
    full = [*lead, corners, group_channels]
    valid_full = builders.broadcast_to(valid, full, dims=[0, 1, 2, 3, 4])
    values = stablehlo.select(valid_full, values, builders.splat(0, compute, full))
    weighted = stablehlo.multiply(values, builders.broadcast_to(weights, full, dims=[0, 1, 2, 3, 4]))
    sampled = builders.reduce(weighted, [4], stablehlo.AddOp, 0)  # [N, G, K, P, C/G]
    if ctx.has_input(4):
        # after the bilinear sum, as onnxruntime does: an infinite mask must not meet the zero
        # weight of an unused corner (0 x inf = NaN)
        mask = builders.reshape(builders.convert(ctx.input(4), compute), lead)
        sampled = stablehlo.multiply(sampled, builders.broadcast_to(mask, builders.dims_of(sampled), dims=[0, 1, 2, 3]))
    # Columns [N, group, C/group, K, P] against W [group, M/group, C/group, K].
    columns = builders.transpose(sampled, [0, 1, 4, 2, 3])
    columns = builders.reshape(columns, [batch, group, channels // group, taps, points])
    w = builders.convert(ctx.input(1), compute)
    w = builders.reshape(w, [group, out_channels // group, channels // group, taps])
    product = builders.dot_general(w, columns, lhs_batch=[0], rhs_batch=[1], lhs_contracting=[2, 3], rhs_contracting=[2, 3], precision="HIGHEST")  # [group, M/group, N, P]
    y = builders.reshape(builders.transpose(product, [2, 0, 1, 3]), [batch, out_channels, points])
    if ctx.has_input(3):
        bias = builders.convert(ctx.input(3), compute)
        y = stablehlo.add(y, builders.broadcast_to(bias, [batch, out_channels, points], dims=[1]))
    return [builders.convert(builders.reshape(y, [batch, out_channels, *out_dims]), dtype)]
