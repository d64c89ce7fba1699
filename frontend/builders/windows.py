"""Window arithmetic shared by the convolution and pooling rules.

``window`` reads kernel, strides, dilations, pads and ``auto_pad`` into a :class:`Window`, with
output sizes and SAME_* / ``ceil_mode`` padding as ints or :class:`SymbolicDim` expressions;
``pad_symbolic`` applies padding that depends on a symbolic size with stablehlo.dynamic_pad.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence

import numpy as np
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import stablehlo

from onnx_stablehlo.errors import ShapeError
from onnx_stablehlo.frontend import builders, limits
from onnx_stablehlo.frontend.context import LoweringContext, OnnxNode
from onnx_stablehlo.frontend.shapes import Dim, SymbolicDim, ceil_div, floor_div


AUTO_PADS = ("NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID")


@dataclasses.dataclass(frozen=True)
class Window:
    """The per-spatial-axis geometry of a convolution or pooling window.

    Attributes:
        kernel: window size per spatial axis, in elements.
        strides: step between windows, in elements.
        dilations: step between window taps, in elements.
        pads: ``(begin, end)`` zero padding per spatial axis, as ONNX ``pads`` (or auto_pad) say.
    """

    kernel: tuple[int, ...]
    strides: tuple[int, ...]
    dilations: tuple[int, ...]
    pads: tuple[tuple[int, int], ...]

    @property
    def effective_kernel(self) -> tuple[int, ...]:
        """The extent of the dilated window: ``(k - 1) * d + 1``."""
        return tuple((k - 1) * d + 1 for k, d in zip(self.kernel, self.dilations))


def spatial_ints(ctx: LoweringContext, node: OnnxNode, name: str, count: int, default: int) -> tuple[int, ...]:
    """An INTS attribute with one value per spatial axis (``default`` for each when absent)."""
    values = node.attr_ints(name)
    if not values:
        return (default,) * count
    if len(values) != count:
        raise ctx.error(f"attribute {name}={values} needs {count} values, one per spatial axis", ShapeError)
    return tuple(values)


def split_same_padding(total: int, auto_pad: str) -> tuple[int, int]:
    """Splits a SAME_* total padding into ``(begin, end)``.

    The odd element goes to the end for SAME_UPPER and to the start for SAME_LOWER. A negative
    total (a stride larger than the window) is split with C's truncating division, as
    onnxruntime does.
    """
    if auto_pad == "SAME_UPPER":
        begin = int(total / 2)
    else:
        begin = int((total + 1) / 2)
    return begin, total - begin


def split_same_padding_symbolic(total: Dim, auto_pad: str) -> tuple[Dim, Dim]:
    """:func:`split_same_padding` of a non-negative symbolic total (truncation is floor)."""
    begin = floor_div(total, 2) if auto_pad == "SAME_UPPER" else floor_div(total + 1, 2)
    return begin, total - begin


def is_int(dim: Dim) -> bool:
    return not isinstance(dim, SymbolicDim)


def window(
    ctx: LoweringContext,
    node: OnnxNode,
    spatial_shape: Sequence[Dim],
    kernel: Sequence[int],
    *,
    ceil_mode: bool = False,
    clamp_same: bool = True,
) -> tuple[Window, tuple[Dim, ...]]:
    """Reads strides, dilations, pads and auto_pad; returns the window and the output size.

    SAME_UPPER/SAME_LOWER give ``ceil(in / stride)`` outputs with the total padding
    ``(out - 1) * stride + (k - 1) * dilation + 1 - in`` split evenly; convolutions clamp it at
    zero (``clamp_same``), pooling keeps it negative as the pooling specs' formula does (the
    first window then starts inside the input). VALID pads nothing; NOTSET uses ``pads``. With
    ``ceil_mode`` a last partial window is kept unless it would start in the end padding (the
    rule of MaxPool-22/AveragePool-22, and onnxruntime's); a window larger than the padded
    input then still gives one output while it overshoots by less than a stride (the specs'
    ``ceil((in + pads - k) / s) + 1``).

    A symbolic spatial size gives a symbolic output size and, for SAME_* with strides, symbolic
    pads (see the module docstring for what raises a ShapeError).
    """
    rank = len(spatial_shape)
    strides = spatial_ints(ctx, node, "strides", rank, 1)
    dilations = spatial_ints(ctx, node, "dilations", rank, 1)
    if any(s < 1 for s in strides) or any(d < 1 for d in dilations):
        raise ctx.error(f"strides {list(strides)} and dilations {list(dilations)} must be >= 1", ShapeError)
    auto_pad = node.attr_str("auto_pad", "NOTSET")
    window = Window(tuple(kernel), strides, dilations, ((0, 0),) * rank)
    effective = window.effective_kernel
    limits.check_window(ctx, "the window (kernel_shape with dilations)", effective)
    limits.check_window(ctx, "strides", strides)
    limits.check_window(ctx, "pads", node.attr_ints("pads") or [])
    if auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        pads, out = [], []
        for size, s, k in zip(spatial_shape, strides, effective):
            if is_int(size):
                o = -(-size // s)
                total = (o - 1) * s + k - size
            elif s == 1:  # the total padding k - 1 does not depend on the size
                o, total = size, k - 1
            elif k >= s:
                # total = (ceil(in / s) - 1) * s + k - in is k - s when s divides in, else k - (in mod s):
                # never negative, so clamping does nothing; the split is symbolic (dynamic_pad).
                o = ceil_div(size, s)
                total = (o - 1) * s + k - size
                out.append(o)
                pads.append(split_same_padding_symbolic(total, auto_pad))
                continue
            elif clamp_same and k == 1:  # (ceil(in / s) - 1) * s + 1 - in <= 0: no padding
                o, total = ceil_div(size, s), 0
            else:
                raise ctx.error(
                    f"auto_pad={auto_pad} with stride {s} larger than the window {k} on the symbolic size "
                    f"{size} needs a static shape (the padding would depend on the size modulo the stride)",
                    ShapeError,
                )
            out.append(o)
            pads.append(split_same_padding(max(0, total) if clamp_same else total, auto_pad))
        return dataclasses.replace(window, pads=tuple(pads)), tuple(out)
    if auto_pad == "VALID":
        pads = ((0, 0),) * rank
    elif auto_pad == "NOTSET":
        flat = node.attr_ints("pads") or [0] * (2 * rank)
        if len(flat) != 2 * rank:
            raise ctx.error(f"attribute pads={flat} needs {2 * rank} values (begins, then ends)", ShapeError)
        if any(p < 0 for p in flat):
            raise ctx.unsupported_attribute("pads", flat, "non-negative values")
        pads = tuple((flat[i], flat[i + rank]) for i in range(rank))
    else:
        raise ctx.unsupported_attribute("auto_pad", auto_pad, ", ".join(AUTO_PADS))
    out = []
    for size, s, k, (begin, end) in zip(spatial_shape, strides, effective, pads):
        span = size + begin + end - k
        if is_int(span):
            # In ceil_mode a window larger than the padded input still gives ceil(span / s) + 1 >= 1
            # outputs while span > -s (EfficientNet's AvgPool2d(1280, ceil_mode=True) on 7x7): one
            # window over the whole input, its tail in the uncounted ceil_mode padding.
            if span < 0 and not (ceil_mode and span > -s):
                raise ctx.error(f"the window ({k}) is larger than the padded input ({size + begin + end})", ShapeError)
            count = (-(-span // s) if ceil_mode else span // s) + 1
            if ceil_mode and (count - 1) * s >= size + begin:
                count -= 1
        elif ceil_mode and s > 1:
            # The last window starts at ceil(span / s) * s <= span + s - 1 = in + begin + end - k + s - 1,
            # so with end + s <= k it always starts inside the input (or the begin padding) and no
            # window is dropped; the end padding it needs is symbolic (see _reduce_window_symbolic).
            if end + s > k:
                raise ctx.error(
                    f"ceil_mode with stride {s}, end padding {end} and window {k} on the symbolic size "
                    f"{size} needs a static shape (whether the last window is kept depends on the size)",
                    ShapeError,
                )
            count = ceil_div(span, s) + 1
        else:
            # stride 1: ceil and floor agree, and the last window starts at span <= size + begin - 1
            # unless the end padding reaches a whole window (then the windows are the same).
            if ceil_mode and end >= k:
                raise ctx.error(f"ceil_mode with end padding {end} >= window {k} needs a static shape", ShapeError)
            count = floor_div(span, s) + 1
        out.append(count)
    return dataclasses.replace(window, pads=pads), tuple(out)


def kernel_from_attr(ctx: LoweringContext, node: OnnxNode, rank: int) -> tuple[int, ...]:
    """The required ``kernel_shape`` attribute of the pooling ops."""
    kernel = node.attr_ints("kernel_shape")
    if not kernel:
        raise ctx.error("attribute kernel_shape is required", ShapeError)
    if len(kernel) != rank:
        raise ctx.error(f"kernel_shape={kernel} needs {rank} values, one per spatial axis", ShapeError)
    return tuple(kernel)


def reduce_window(
    operands: Sequence[ir.Value],
    inits: Sequence[float | int],
    window: Window,
    out_spatial: Sequence[int],
    body: Callable[[list[ir.Value], list[ir.Value]], list[ir.Value]],
) -> list[ir.Value]:
    """``stablehlo.reduce_window`` over the spatial dims of ``[N, C, *S]`` operands.

    Exactly the ``out_spatial`` windows are computed: the begin padding is the window's, the end
    padding is whatever the last window needs (beyond ``pads`` in ``ceil_mode``). Negative
    padding (SAME with a stride larger than the window) becomes a slice. Padded positions hold
    the init values.

    Args:
        operands: values of one shape.
        inits: the init (and padding) value per operand.
        window: kernel, strides, dilations and pads.
        out_spatial: the output size per spatial axis.
        body: ``body(lhs_args, rhs_args) -> results``, the scalar reduction.
    """
    shape = builders.dims_of(operands[0])
    if not all(is_int(d) for d in (*shape, *out_spatial)):
        return reduce_window_symbolic(operands, inits, window, out_spatial, body)
    operands, padding = _trimmed(operands, window, out_spatial)
    return emit_reduce_window(operands, inits, window, [shape[0], shape[1], *out_spatial], padding, body)


def _trimmed(
    operands: Sequence[ir.Value], window: Window, out_spatial: Sequence[int]
) -> tuple[list[ir.Value], list[tuple[int, int]]]:
    """Static ``[N, C, *S]`` operands cut to the input the ``out_spatial`` windows read, and the
    ``(low, high)`` padding per dim that they still need: the begin padding is the window's, the
    end padding whatever the last window needs (beyond ``pads`` in ``ceil_mode``); negative
    padding (SAME with a stride larger than the window) is the cut."""
    shape = [int(d) for d in builders.dims_of(operands[0])]
    padding = [(0, 0), (0, 0)]
    start, limit = [0, 0], shape[:2]
    for size, (begin, _), s, k, o in zip(shape[2:], window.pads, window.strides, window.effective_kernel, out_spatial):
        extent = (o - 1) * s + k  # the padded input the windows cover, from -begin
        start.append(max(0, -begin))
        limit.append(min(size, extent - begin))
        padding.append((max(0, begin), max(0, extent - begin - size)))
    if start != [0] * len(shape) or limit != shape:
        operands = [
            stablehlo.slice(v, builders.i64_array(start), builders.i64_array(limit), builders.i64_array([1] * len(shape)))
            for v in operands
        ]
    return list(operands), padding


SLICED_MAX_MAX_TAPS = 32
"""The most taps (the kernel's sizes summed) :func:`max_by_slices` takes; a larger window keeps
``reduce_window``."""


def max_by_slices(x: ir.Value, init: float | int, window: Window, out_spatial: Sequence[int]) -> ir.Value:
    """The windowed max of ``[N, C, *S]`` ``x`` (static shapes, no dilation) as an elementwise
    ``maximum`` of strided slices, one spatial axis after the other (a box's max is the max of
    its rows' maxes), over ``x`` padded with ``init``: the same windows as
    :func:`reduce_window`.

    XLA CPU emits a ``reduce_window`` max as a scalar loop per output element; the slices fuse
    into one vectorized loop per axis (a 3x3 stride-2 MaxPool on [1, 64, 112, 112]: 3.85 ->
    0.71 ms). ``maximum`` propagates NaN, so callers that ignore NaN replace it first.
    """
    (x,), padding = _trimmed([x], window, out_spatial)
    rank = len(padding)
    low, high = [lo for lo, _ in padding], [hi for _, hi in padding]
    if any(low) or any(high):
        x = stablehlo.pad(x, builders.splat(init, builders.dtype_of(x)), low, high, [0] * rank)
    for axis, (s, k, o) in enumerate(zip(window.strides, window.kernel, out_spatial), start=2):
        padded = [int(d) for d in builders.dims_of(x)]
        result = None
        for tap in range(k):
            begin, end, step = [0] * rank, list(padded), [1] * rank
            begin[axis], end[axis], step[axis] = tap, tap + (o - 1) * s + 1, s
            part = stablehlo.slice(x, builders.i64_array(begin), builders.i64_array(end), builders.i64_array(step))
            result = part if result is None else stablehlo.maximum(result, part)
        x = result
    return x


def reduce_window_symbolic(
    operands: Sequence[ir.Value],
    inits: Sequence[float | int],
    window: Window,
    out_spatial: Sequence[Dim],
    body: Callable[[list[ir.Value], list[ir.Value]], list[ir.Value]],
) -> list[ir.Value]:
    """:func:`reduce_window` for operands with symbolic dims.

    The window's own pads are the padding (``reduce_window`` then yields exactly the floor-mode
    windows :func:`window` counted); a static axis keeps the static computation.

    Raises:
        ShapeError: the padding would need a slice or a size-dependent tail.
    """
    shape = builders.dims_of(operands[0])
    padding = [(0, 0), (0, 0)]
    for size, (begin, end), s, k, o in zip(shape[2:], window.pads, window.strides, window.effective_kernel, out_spatial):
        if is_int(size) and is_int(o) and is_int(begin) and is_int(end):
            extent = (o - 1) * s + k  # the padded input the windows cover, from -begin
            tail = extent - begin - size
            if tail < 0 and (size + begin + end - k) // s + 1 == o:
                tail = end  # the unused tail is dropped by reduce_window itself
            if begin < 0 or tail < 0:
                raise ShapeError(f"pooling padding {window.pads} needs a static shape here")
            padding.append((begin, tail))
        elif is_int(begin) and is_int(end) and floor_div(size + begin + end - k, s) + 1 == o:
            # floor-mode windows: reduce_window drops the unused tail of the end padding itself
            if begin < 0 or end < 0:
                raise ShapeError(f"pooling padding {window.pads} on a symbolic size needs a static shape")
            padding.append((begin, end))
        else:
            # symbolic SAME pads, or the ceil_mode tail: exactly the padding the o windows cover
            if is_int(begin) and begin < 0:
                raise ShapeError(f"pooling padding {window.pads} on a symbolic size needs a static shape")
            padding.append((begin, (o - 1) * s + k - begin - size))
    operands, padding = pad_symbolic(operands, inits, padding)
    return emit_reduce_window(operands, inits, window, [shape[0], shape[1], *out_spatial], padding, body)


def pad_symbolic(
    operands: Sequence[ir.Value], values: Sequence[float | int], padding: Sequence[tuple[Dim, Dim]]
) -> tuple[list[ir.Value], list[tuple[int, int]]]:
    """Applies the symbolic entries of ``padding`` with ``stablehlo.dynamic_pad``.

    Args:
        operands: values of one shape (rank = len(padding)).
        values: the padding value per operand.
        padding: ``(low, high)`` per dim; ints or :class:`SymbolicDim` expressions (non-negative
            at run time).

    Returns:
        The operands, padded along every dim that has a symbolic amount, and the padding left
        for the consumer's static padding attribute (0 where applied here).
    """
    if all(is_int(lo) and is_int(hi) for lo, hi in padding):
        return list(operands), [(int(lo), int(hi)) for lo, hi in padding]
    dynamic = [not (is_int(lo) and is_int(hi)) for lo, hi in padding]
    low = [lo if d else 0 for d, (lo, _) in zip(dynamic, padding)]
    high = [hi if d else 0 for d, (_, hi) in zip(dynamic, padding)]
    shape = builders.dims_of(operands[0])
    padded_dims = [size + lo + hi for size, lo, hi in zip(shape, low, high)]
    low_t, high_t = builders.shape_tensor(low), builders.shape_tensor(high)
    interior = builders.constant(np.zeros(len(shape), np.int64))
    padded = []
    for value, fill in zip(operands, values):
        dtype = builders.dtype_of(value)
        result = stablehlo.dynamic_pad(
            builders.tensor_type(padded_dims, dtype), value, builders.splat(fill, dtype), low_t, high_t, interior
        )
        padded.append(builders.record(result, padded_dims))
    rest = [(0, 0) if d else (int(lo), int(hi)) for d, (lo, hi) in zip(dynamic, padding)]
    return padded, rest


def emit_reduce_window(
    operands: Sequence[ir.Value],
    inits: Sequence[float | int],
    window: Window,
    out_shape: Sequence[Dim],
    padding: Sequence[tuple[int, int]],
    body: Callable[[list[ir.Value], list[ir.Value]], list[ir.Value]],
) -> list[ir.Value]:
    """One ``stablehlo.reduce_window`` over N x C x spatial operands with a variadic ``body``."""
    inits = [builders.splat(init, builders.dtype_of(v)) for init, v in zip(inits, operands)]
    return builders.reduce_window(
        operands,
        inits,
        [1, 1, *window.kernel],
        body,
        out_shape=out_shape,
        strides=[1, 1, *window.strides],
        dilations=[1, 1, *window.dilations],
        padding=padding,
    )


def window_counts(
    spatial: Sequence[int], window: Window, out: Sequence[int], *, include_pad: bool
) -> np.ndarray:
    """How many elements each pooling window averages over, as an ``[*out]`` float64 array.

    A window counts positions inside X (``include_pad=False``) or inside X plus its pads
    (``include_pad=True``); positions in the ``ceil_mode`` tail never count. The count is a
    product over axes because the window is a box.
    """
    counts = np.ones((), dtype=np.float64)
    for size, (begin, end), s, k, d, o in zip(
        spatial, window.pads, window.strides, window.kernel, window.dilations, out
    ):
        positions = np.arange(o)[:, None] * s - begin + np.arange(k)[None, :] * d
        low, high = (-begin, size + end) if include_pad else (0, size)
        axis_count = ((positions >= low) & (positions < high)).sum(axis=1).astype(np.float64)
        counts = np.multiply.outer(counts, axis_count)
    return counts
