"""VJP rules of ``dot_general``, ``dot`` and ``convolution``: one rule per side, after JAX.

``dot_general`` (``jax/_src/lax/lax.py``, ``_dot_general_transpose_lhs/rhs``): the lhs
cotangent is ``dot_general(ct, rhs)`` contracting the result's rhs-free dims with the rhs's
free dims, batched over the batch dims, then transposed into the lhs's dim order; the rhs side
is the same with the operands swapped.

``convolution`` (``jax/_src/lax/convolution.py``, ``_conv_general_dilated_transpose_lhs/rhs``):
the input cotangent is a convolution of ``ct`` with the spatially reversed kernel (strides
and input dilation swapped, padding from ``_conv_general_vjp_lhs_padding``); the kernel
cotangent is a convolution of the input with ``ct`` as the kernel (strides and kernel
dilation swapped). Feature groups become batch groups on the kernel side and vice versa.
``window_reversal`` is not supported, nor a ``?`` kernel; a ``?`` spatial dim needs stride 1
and no input dilation along it (then the transposed convolutions' padding does not depend on
the size); a ``?`` batch dim is fine.

When the result's element type differs from an operand's (a preferred accumulation type),
the cotangent is converted to the operand's type first.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import stablehlo

from onnx_stablehlo.passes.autodiff import emit
from onnx_stablehlo.passes.autodiff.context import VjpContext
from onnx_stablehlo.passes.autodiff.registry import vjp_rule

# dot_general ------------------------------------------------------------------------------------


def _dot_numbers(op: ir.Operation) -> tuple[list[int], list[int], list[int], list[int]]:
    numbers = stablehlo.DotDimensionNumbers(op.attributes["dot_dimension_numbers"])
    return (
        list(numbers.lhs_batching_dimensions),
        list(numbers.rhs_batching_dimensions),
        list(numbers.lhs_contracting_dimensions),
        list(numbers.rhs_contracting_dimensions),
    )


def _remaining(rank: int, *removed: Sequence[int]) -> list[int]:
    gone = {d for dims in removed for d in dims}
    return [d for d in range(rank) if d not in gone]


def _transpose_lhs(
    ct: ir.Value,
    x: ir.Value,
    y: ir.Value,
    x_batch: list[int],
    y_batch: list[int],
    x_contract: list[int],
    y_contract: list[int],
    precision: ir.Attribute | None,
    swap_ans: bool = False,
) -> ir.Value:
    """The cotangent of ``x`` in ``dot_general(x, y)`` (or ``dot_general(y, x)`` if ``swap_ans``)."""
    x_rank, y_rank = emit.rank(x), emit.rank(y)
    x_kept = _remaining(x_rank, x_contract, x_batch)
    y_kept = _remaining(y_rank, y_contract, y_batch)
    n_batch = len(x_batch)
    if swap_ans:
        ans_y = list(range(n_batch, n_batch + len(y_kept)))
    else:
        ans_y = list(range(n_batch + len(x_kept), n_batch + len(x_kept) + len(y_kept)))
    ans_batch = list(range(n_batch))
    ct = emit.convert(ct, emit.element_type(y))
    # result dims: batch, ct's remaining (= x_kept, in x order), y's remaining (= y_contract sorted)
    product = emit.dot_general(ct, y, ans_batch, y_batch, ans_y, y_kept, precision)
    x_contract_sorted_by_y = [x_contract[i] for i in np.argsort(y_contract)]
    out_axes = np.argsort(list(x_batch) + x_kept + x_contract_sorted_by_y)
    return emit.convert(emit.transpose(product, [int(a) for a in out_axes]), emit.element_type(x))


def _precision(op: ir.Operation) -> ir.Attribute | None:
    return op.attributes["precision_config"] if "precision_config" in op.attributes else None


@vjp_rule("stablehlo.dot_general")
def vjp_dot_general(ctx: VjpContext, ct: ir.Value) -> list:
    x, y = ctx.operands
    x_batch, y_batch, x_contract, y_contract = _dot_numbers(ctx.op)
    precision = _precision(ctx.op)
    ct_x = ct_y = None
    if ctx.need(0):
        ct_x = _transpose_lhs(ct, x, y, x_batch, y_batch, x_contract, y_contract, precision)
    if ctx.need(1):
        ct_y = _transpose_lhs(ct, y, x, y_batch, x_batch, y_contract, x_contract, precision, swap_ans=True)
    return [ct_x, ct_y]


@vjp_rule("stablehlo.dot")
def vjp_dot(ctx: VjpContext, ct: ir.Value) -> list:
    """``dot`` is ``dot_general`` contracting the lhs's last dim with the rhs's first."""
    x, y = ctx.operands
    x_contract, y_contract = [emit.rank(x) - 1], [0]
    precision = _precision(ctx.op)
    ct_x = ct_y = None
    if ctx.need(0):
        ct_x = _transpose_lhs(ct, x, y, [], [], x_contract, y_contract, precision)
    if ctx.need(1):
        ct_y = _transpose_lhs(ct, y, x, [], [], y_contract, x_contract, precision, swap_ans=True)
    return [ct_x, ct_y]


# convolution ------------------------------------------------------------------------------------


def _conv_specs(attr: ir.Attribute) -> tuple[list[int], list[int], list[int]]:
    """JAX-style (lhs, rhs, out) specs: (batch, feature, *spatial), (out, in, *spatial), ..."""
    numbers = stablehlo.ConvDimensionNumbers(attr)
    lhs = [numbers.input_batch_dimension, numbers.input_feature_dimension, *numbers.input_spatial_dimensions]
    rhs = [
        numbers.kernel_output_feature_dimension,
        numbers.kernel_input_feature_dimension,
        *numbers.kernel_spatial_dimensions,
    ]
    out = [numbers.output_batch_dimension, numbers.output_feature_dimension, *numbers.output_spatial_dimensions]
    return lhs, rhs, out


def _conv_numbers(lhs: Sequence[int], rhs: Sequence[int], out: Sequence[int]) -> ir.Attribute:
    return stablehlo.ConvDimensionNumbers.get(
        input_batch_dimension=lhs[0],
        input_feature_dimension=lhs[1],
        input_spatial_dimensions=list(lhs[2:]),
        kernel_input_feature_dimension=rhs[1],
        kernel_output_feature_dimension=rhs[0],
        kernel_spatial_dimensions=list(rhs[2:]),
        output_batch_dimension=out[0],
        output_feature_dimension=out[1],
        output_spatial_dimensions=list(out[2:]),
    )


def _dilate(shape: Sequence[int], dilation: Sequence[int]) -> list[int]:
    return [0 if d == 0 else 1 + r * (d - 1) for d, r in zip(shape, dilation)]


def _spec_transpose(spec: Sequence[int]) -> list[int]:
    return [spec[1], spec[0], *spec[2:]]


def _vjp_lhs_padding(in_shape, window, strides, out_shape, padding, lhs_dilation, rhs_dilation):
    lhs_dilated = _dilate(in_shape, lhs_dilation)
    rhs_dilated = _dilate(window, rhs_dilation)
    out_dilated = _dilate(out_shape, strides)
    before = [r - lo - 1 for r, (lo, _) in zip(rhs_dilated, padding)]
    after = [l + r - 1 - o - b for l, r, o, b in zip(lhs_dilated, rhs_dilated, out_dilated, before)]
    for i, (size, out) in enumerate(zip(in_shape, out_shape)):
        if emit.is_dynamic(size) or emit.is_dynamic(out):
            # a ? spatial dim (stride 1, no input dilation): o = l + lo + hi - r + 1, so the high
            # padding l + r - 1 - o - before is r - 1 - hi whatever l is
            after[i] = rhs_dilated[i] - 1 - padding[i][1]
    return list(zip(before, after))


def _vjp_rhs_padding(in_shape, window, strides, out_shape, padding, lhs_dilation, rhs_dilation):
    if not in_shape:
        return []
    lhs_dilated = _dilate(in_shape, lhs_dilation)
    rhs_dilated = _dilate(window, rhs_dilation)
    out_dilated = _dilate(out_shape, strides)
    lows = [lo for lo, _ in padding]
    from_lhs = [o - l for o, l in zip(out_dilated, lhs_dilated)]
    from_rhs = [r - lo - 1 for r, lo in zip(rhs_dilated, lows)]
    pads = [(lo, a + b) for lo, a, b in zip(lows, from_lhs, from_rhs)]
    for i, (size, out) in enumerate(zip(in_shape, out_shape)):
        if emit.is_dynamic(size) or emit.is_dynamic(out):
            pads[i] = padding[i]  # stride 1, no input dilation: o - l + r - lo - 1 is hi
    return pads


def _conv(
    lhs: ir.Value,
    rhs: ir.Value,
    specs: tuple[Sequence[int], Sequence[int], Sequence[int]],
    *,
    strides: Sequence[int],
    padding: Sequence[tuple[int, int]],
    lhs_dilation: Sequence[int],
    rhs_dilation: Sequence[int],
    feature_group_count: int,
    batch_group_count: int,
    precision: ir.Attribute | None,
    result_shape: Sequence[int] | None = None,
) -> ir.Value:
    """``stablehlo.convolution`` with the result type worked out from the operands (or
    ``result_shape`` where ``?`` spatial dims leave it unknown here)."""
    lhs_spec, rhs_spec, out_spec = specs
    lhs_shape, rhs_shape = emit.shape(lhs), emit.shape(rhs)
    out_shape = [0] * len(lhs_shape)
    batch = lhs_shape[lhs_spec[0]]
    out_shape[out_spec[0]] = emit.DYNAMIC if emit.is_dynamic(batch) else batch // batch_group_count
    out_shape[out_spec[1]] = rhs_shape[rhs_spec[0]]
    for i, (ld, rd, od) in enumerate(zip(lhs_spec[2:], rhs_spec[2:], out_spec[2:])):
        if emit.is_dynamic(lhs_shape[ld]) or emit.is_dynamic(rhs_shape[rd]):
            out_shape[od] = emit.DYNAMIC
            continue
        size = _dilate([lhs_shape[ld]], [lhs_dilation[i]])[0] + padding[i][0] + padding[i][1]
        window = _dilate([rhs_shape[rd]], [rhs_dilation[i]])[0]
        out_shape[od] = max(0, (size - window) // strides[i] + 1) if size >= window else 0
    if result_shape is not None:
        out_shape = list(result_shape)
    n = len(strides)
    return stablehlo.ConvolutionOp(
        emit.tensor_type(out_shape, emit.element_type(lhs)),
        lhs,
        rhs,
        _conv_numbers(lhs_spec, rhs_spec, out_spec),
        feature_group_count,
        batch_group_count,
        window_strides=emit.i64_attr(strides),
        padding=ir.DenseIntElementsAttr.get(np.array(padding, dtype=np.int64).reshape(n, 2)),
        lhs_dilation=emit.i64_attr(lhs_dilation),
        rhs_dilation=emit.i64_attr(rhs_dilation),
        precision_config=precision,
    ).result


def _reshape_axis_out_of(src: int, size1: int, x: ir.Value) -> ir.Value:
    shape = list(emit.shape(x))
    size2 = shape[src] // size1
    shape[src : src + 1] = [size1, size2]
    return emit.reshape(x, shape)


def _reshape_axis_into(src: int, dst: int, x: ir.Value) -> ir.Value:
    shape = emit.shape(x)
    perm = [i for i in range(len(shape)) if i != src]
    perm.insert(dst, src)
    new_shape = [d for i, d in enumerate(shape) if i != src]
    new_shape[dst] *= shape[src]
    return emit.reshape(emit.transpose(x, perm), new_shape)


@vjp_rule("stablehlo.convolution")
def vjp_convolution(ctx: VjpContext, ct: ir.Value) -> list:
    lhs, rhs = ctx.operands
    if ctx.has_attr("window_reversal") and any(ir.DenseBoolArrayAttr(ctx.attr("window_reversal"))):
        raise ctx.missing("window_reversal is set")
    lhs_spec, rhs_spec, out_spec = _conv_specs(ctx.attr("dimension_numbers"))
    n = len(lhs_spec) - 2
    strides = ctx.i64s("window_strides", [1] * n)
    lhs_dilation = ctx.i64s("lhs_dilation", [1] * n)
    rhs_dilation = ctx.i64s("rhs_dilation", [1] * n)
    flat_padding = ctx.i64s("padding", [0] * (2 * n))
    padding = [(flat_padding[2 * i], flat_padding[2 * i + 1]) for i in range(n)]
    feature_groups = ctx.int_attr("feature_group_count", 1)
    batch_groups = ctx.int_attr("batch_group_count", 1)
    precision = _precision(ctx.op)
    lhs_shape, rhs_shape, ct_shape = emit.shape(lhs), emit.shape(rhs), emit.shape(ct)
    # The padding of the transposed convolutions is worked out from the spatial sizes; a ? batch
    # or feature dim is fine.
    # A ? spatial dim needs stride 1 and no input dilation there: the transposed convolutions'
    # padding is then static (see _vjp_lhs_padding).
    dynamic_spatial = False
    for i, (ld, od) in enumerate(zip(lhs_spec[2:], out_spec[2:])):
        if emit.is_dynamic(lhs_shape[ld]) or emit.is_dynamic(ct_shape[od]):
            dynamic_spatial = True
            if strides[i] != 1 or lhs_dilation[i] != 1:
                raise ctx.missing(
                    f"a dynamic spatial dim with stride {strides[i]} / input dilation {lhs_dilation[i]} "
                    f"({lhs.type} * {rhs.type} -> {ct.type})"
                )
    if batch_groups > 1 and not emit.is_static(lhs):
        raise ctx.missing(f"batch_group_count {batch_groups} with the dynamic input {lhs.type}")
    if not emit.is_static(rhs):
        raise ctx.missing(f"the dynamic kernel {rhs.type}")

    ct_lhs = ct_rhs = None
    if ctx.need(0):
        ct_in = emit.convert(ct, emit.element_type(rhs))
        kernel = rhs
        groups = feature_groups
        if feature_groups > 1:
            kernel = _reshape_axis_out_of(rhs_spec[0], feature_groups, kernel)
            kernel = _reshape_axis_into(rhs_spec[0], rhs_spec[1], kernel)
        elif batch_groups > 1:
            kernel = _reshape_axis_out_of(rhs_spec[0], batch_groups, kernel)
            kernel = _reshape_axis_into(rhs_spec[0], rhs_spec[1], kernel)
            groups = batch_groups
        pads = _vjp_lhs_padding(
            [lhs_shape[d] for d in lhs_spec[2:]],
            [emit.shape(kernel)[d] for d in rhs_spec[2:]],
            strides,
            [ct_shape[d] for d in out_spec[2:]],
            padding,
            lhs_dilation,
            rhs_dilation,
        )
        reversed_kernel = stablehlo.ReverseOp(kernel, emit.i64_attr(rhs_spec[2:])).result if n else kernel
        out = _conv(
            ct_in,
            reversed_kernel,
            (out_spec, _spec_transpose(rhs_spec), lhs_spec),
            strides=lhs_dilation,
            padding=pads,
            lhs_dilation=strides,
            rhs_dilation=rhs_dilation,
            feature_group_count=groups,
            batch_group_count=1,
            precision=precision,
            result_shape=lhs_shape if dynamic_spatial and batch_groups == 1 else None,
        )
        if batch_groups > 1:
            out = _reshape_axis_out_of(lhs_spec[1], batch_groups, out)
            out = _reshape_axis_into(lhs_spec[1], lhs_spec[0], out)
        ct_lhs = emit.convert(out, emit.element_type(lhs))
    if ctx.need(1):
        ct_in = emit.convert(ct, emit.element_type(lhs))
        if batch_groups > 1:
            feature, batch = batch_groups, 1
        elif feature_groups > 1:
            feature, batch = 1, feature_groups
        else:
            feature, batch = 1, 1
        pads = _vjp_rhs_padding(
            [lhs_shape[d] for d in lhs_spec[2:]],
            [rhs_shape[d] for d in rhs_spec[2:]],
            strides,
            [ct_shape[d] for d in out_spec[2:]],
            padding,
            lhs_dilation,
            rhs_dilation,
        )
        out = _conv(
            lhs,
            ct_in,
            (_spec_transpose(lhs_spec), _spec_transpose(out_spec), _spec_transpose(rhs_spec)),
            strides=rhs_dilation,
            padding=pads,
            lhs_dilation=lhs_dilation,
            rhs_dilation=strides,
            feature_group_count=feature,
            batch_group_count=batch,
            precision=precision,
            result_shape=rhs_shape if dynamic_spatial else None,
        )
        ct_rhs = emit.convert(out, emit.element_type(rhs))
    return [ct_lhs, ct_rhs]
