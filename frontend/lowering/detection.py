"""Lowering rules: object detection (regions of interest and box suppression).

::

    RoiAlign(X, rois, batch)     -> per sample point, the 4 bilinear corners gathered from X and
                                    averaged or maxed; a stablehlo.while over the sample points
                                    when sampling_ratio = 0 (their count depends on each roi)
    MaxRoiPool(X, rois)          -> masked stablehlo.reduce (max) over W, then over H
    NonMaxSuppression(boxes, s)  -> computed at compile time (every input must be known there)

Coordinates are computed in float32 (float64 for float64 inputs); run-time indices are clamped
into range before every gather. NonMaxSuppression's output size depends on the data, and output
sizes must be known at compile time, so it is lowered only when its inputs are constants (the
importer already folds such a node when the inputs are small; this rule covers larger ones).

Spec: onnx.ai/onnx/operators (each op's page); onnx.reference where the page leaves details open.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence

import numpy as np
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import stablehlo

from onnx_stablehlo.errors import DataDependentShapeError, ResourceLimitError, ShapeError
from onnx_stablehlo.frontend import builders, limits
from onnx_stablehlo.frontend.builders import geometry
from onnx_stablehlo.frontend.context import LoweringContext, OnnxNode
from onnx_stablehlo.frontend.dtypes import DataType
from onnx_stablehlo.frontend.registry import lowering


_ROI_UNROLL_MAX_SAMPLES = 16
"""RoiAlign with a fixed sampling_ratio unrolls up to this many sample points per bin."""


def _clamp_index(index: ir.Value, size: int) -> ir.Value:
    """int64 ``index`` clamped into ``[0, size)``."""
    return stablehlo.clamp(builders.splat(0, DataType.INT64), index, builders.splat(size - 1, DataType.INT64))


_ROI_ALIGN_MODES = ("avg", "max")

_ROI_COORDINATE_MODES = ("half_pixel", "output_half_pixel")


def _roi_axis_samples(
    start: ir.Value, bin_size: ir.Value, grid: ir.Value, sample: ir.Value, pooled: int, size: int
) -> tuple[ir.Value, ir.Value, ir.Value, ir.Value, ir.Value]:
    """One sample point per bin along one axis of every roi (RoiAlign's bilinear rule).

    Args:
        start, bin_size, grid: ``[R]`` roi start, bin size and sample count along the axis.
        sample: the rank-0 sample number within each bin.
        pooled: bins along the axis; ``size``: the input's length along it.

    Returns:
        ``(low, high, low_weight, high_weight, valid)``, each ``[R, pooled]``; indices int64.
    """
    rois = builders.static_shape_of(start)[0]
    dtype = builders.dtype_of(start)
    f = builders.Arith([rois, pooled], dtype)

    def per_roi(v: ir.Value) -> ir.Value:
        return builders.broadcast_to(v, f.shape, dims=[0])

    step = per_roi(bin_size)
    offset = f.exact_div(f.mul(f.add(builders.broadcast_to(sample, f.shape, dims=[]), 0.5), step), per_roi(grid))
    y = f.add(f.add(per_roi(start), f.mul(f.iota(1), step)), offset)
    valid = stablehlo.not_(builders.logical_or(f.cmp(y, -1.0, "LT"), f.cmp(y, float(size), "GT")))
    y = f.max(y, 0.0)
    low = f.floor(y)
    at_edge = f.cmp(low, size - 1.0, "GE")
    low = f.select(at_edge, size - 1.0, low)
    high = f.select(at_edge, size - 1.0, f.add(low, 1.0))
    y = f.select(at_edge, low, y)
    high_weight = f.sub(y, low)
    low_weight = f.sub(1.0, high_weight)
    return (
        builders.convert(low, DataType.INT64),
        builders.convert(high, DataType.INT64),
        low_weight,
        high_weight,
        valid,
    )


@lowering("RoiAlign", since=10)
@lowering("RoiAlign", since=16)  # 16 added coordinate_transformation_mode (default half_pixel)
@lowering("RoiAlign", since=22)  # 22 added bfloat16
def lower_roi_align(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value]:
    """Lowers RoiAlign to per-sample bilinear gathers, averaged or maxed over each bin.

    Sample ``(iy, ix)`` of every bin of every roi reads its 4 bilinear corners from X with one
    gather (batch index, y, x); as in onnx.reference and onnxruntime, samples outside
    ``[-1, H] x [-1, W]`` read zero, ``avg`` divides by the sample count and ``max`` takes the
    largest weighted corner. With ``sampling_ratio > 0`` the samples are unrolled (up to 16
    per bin); with ``sampling_ratio = 0`` each roi has ``ceil(roi_size / bins)`` samples per
    axis, known only at run time, so a stablehlo.while runs over the largest count and masks.

    Spec: RoiAlign-10/16/22 (10 behaves as ``output_half_pixel``).
    Shapes: X [N, C, H, W]; rois [R, 4] (x1, y1, x2, y2); batch_indices [R] int64; all static;
        Y [R, C, output_height, output_width].
    Dtypes: float16, bfloat16, float32, float64 (float16/bfloat16 computed in float32).
    Raises: UnsupportedAttributeError for an unknown mode or coordinate_transformation_mode;
        ShapeError for mismatched shapes.
    """
    dtype = geometry.require_float(ctx, 0)
    mode = node.attr_str("mode")
    if mode not in _ROI_ALIGN_MODES:
        raise ctx.unsupported_attribute("mode", mode, ", ".join(_ROI_ALIGN_MODES))
    coordinate_mode = node.attr_str("coordinate_transformation_mode", "output_half_pixel")
    if coordinate_mode not in _ROI_COORDINATE_MODES:
        accepted = ", ".join(_ROI_COORDINATE_MODES)
        raise ctx.unsupported_attribute("coordinate_transformation_mode", coordinate_mode, accepted)
    batch, channels, height, width = geometry.expect_rank(ctx, 0, 4)
    rois_shape = ctx.input_static_shape(1)
    count = rois_shape[0] if rois_shape else 0
    if list(rois_shape) != [count, 4] or list(ctx.input_static_shape(2)) != [count]:
        raise ctx.error(
            f"rois {list(rois_shape)} must be [R, 4] and batch_indices {list(ctx.input_static_shape(2))} [R]",
            ShapeError,
        )
    pooled_h, pooled_w = node.attr_int("output_height"), node.attr_int("output_width")
    ratio = node.attr_int("sampling_ratio")
    if ratio * ratio > limits.MAX_SAMPLES_PER_BIN:
        raise ctx.error(
            f"sampling_ratio={ratio} means {ratio * ratio} samples per bin, over the limit of "
            f"{limits.MAX_SAMPLES_PER_BIN} (onnx_stablehlo.frontend.limits.MAX_SAMPLES_PER_BIN)",
            ResourceLimitError,
        )
    scale = node.attr_float("spatial_scale")
    compute = geometry.compute_dtype(dtype)

    rois = builders.convert(ctx.input(1), compute)
    fr = builders.Arith([count], compute)
    shift = 0.5 if coordinate_mode == "half_pixel" else 0.0
    x1, y1, x2, y2 = (fr.sub(fr.mul(geometry.component(rois, j), scale), shift) for j in range(4))
    roi_w, roi_h = fr.sub(x2, x1), fr.sub(y2, y1)
    if coordinate_mode == "output_half_pixel":  # malformed rois are forced to 1x1
        roi_w, roi_h = fr.max(roi_w, 1.0), fr.max(roi_h, 1.0)
    bin_h, bin_w = fr.exact_div(roi_h, float(pooled_h)), fr.exact_div(roi_w, float(pooled_w))
    if ratio > 0:
        grid_h = grid_w = fr.const(float(ratio))
    else:
        grid_h, grid_w = fr.max(fr.ceil(bin_h), 0.0), fr.max(fr.ceil(bin_w), 0.0)
    samples = fr.max(fr.mul(grid_h, grid_w), 1.0)

    batch_index = _clamp_index(builders.convert(ctx.input(2), DataType.INT64), batch)
    table = builders.transpose(ctx.input(0), [0, 2, 3, 1])  # [N, H, W, C]
    bins = [count, pooled_h, pooled_w]
    out = [*bins, channels]
    roi_batch = builders.broadcast_to(batch_index, bins, dims=[0])

    def contribution(iy: ir.Value, ix: ir.Value) -> ir.Value:
        """``[R, PH, PW, C]``: sample ``(iy, ix)`` of every bin (zero where it is outside)."""
        y_low, y_high, wy_low, wy_high, valid_y = _roi_axis_samples(y1, bin_h, grid_h, iy, pooled_h, height)
        x_low, x_high, wx_low, wx_high, valid_x = _roi_axis_samples(x1, bin_w, grid_w, ix, pooled_w, width)

        def rows(v: ir.Value) -> ir.Value:
            return builders.broadcast_to(v, bins, dims=[0, 1])

        def cols(v: ir.Value) -> ir.Value:
            return builders.broadcast_to(v, bins, dims=[0, 2])

        corners = [(y, x, stablehlo.multiply(rows(wy), cols(wx)))
                   for y, wy in ((y_low, wy_low), (y_high, wy_high))
                   for x, wx in ((x_low, wx_low), (x_high, wx_high))]
        indices = geometry.stack([  # [R, PH, PW, 4 corners, (n, y, x)]
            geometry.stack([roi_batch] * 4),
            geometry.stack([rows(y) for y, _, _ in corners]),
            geometry.stack([cols(x) for _, x, _ in corners]),
        ])
        values = builders.convert(geometry.gather_vectors(table, indices, batch=0), compute)  # [R, PH, PW, 4, C]
        weights = builders.broadcast_to(geometry.stack([w for _, _, w in corners]), [*bins, 4, channels], dims=[0, 1, 2, 3])
        weighted = stablehlo.multiply(values, weights)
        if mode == "avg":
            combined = builders.reduce(weighted, [3], stablehlo.AddOp, 0)
        else:
            combined = builders.reduce(weighted, [3], stablehlo.MaxOp, -np.inf)
        valid = builders.broadcast_to(builders.logical_and(rows(valid_y), cols(valid_x)), out, dims=[0, 1, 2])
        return stablehlo.select(valid, combined, builders.splat(0, compute, out))

    def accumulate(total: ir.Value, value: ir.Value) -> ir.Value:
        if mode == "avg":
            return stablehlo.add(total, value)
        return stablehlo.maximum(total, value)

    initial = builders.splat(0 if mode == "avg" else -np.inf, compute, out)
    if ratio > 0 and ratio * ratio <= _ROI_UNROLL_MAX_SAMPLES:
        total = initial
        for iy, ix in itertools.product(range(ratio), repeat=2):
            total = accumulate(total, contribution(builders.splat(iy, compute), builders.splat(ix, compute)))
    else:
        total = _roi_sample_loop(grid_h, grid_w, initial, contribution, accumulate, out)
    if mode == "avg":
        total = stablehlo.divide(total, builders.broadcast_to(samples, out, dims=[0]))
    else:  # a roi without samples pools to zero
        some = fr.cmp(fr.mul(grid_h, grid_w), 0.0, "GT")
        total = stablehlo.select(builders.broadcast_to(some, out, dims=[0]), total, builders.splat(0, compute, out))
    return [builders.convert(builders.transpose(total, [0, 3, 1, 2]), dtype)]


def _roi_sample_loop(
    grid_h: ir.Value,
    grid_w: ir.Value,
    initial: ir.Value,
    contribution: Callable[[ir.Value, ir.Value], ir.Value],
    accumulate: Callable[[ir.Value, ir.Value], ir.Value],
    out: Sequence[int],
) -> ir.Value:
    """Accumulates the samples ``(iy, ix)`` of every roi in a stablehlo.while.

    The loop runs over the largest ``grid_h x grid_w`` of all rois; samples beyond a roi's own
    grid are masked out (zero for a sum, ``-inf`` for a max).
    """
    compute = builders.dtype_of(grid_h)
    i64 = DataType.INT64
    most_h = builders.convert(builders.reduce(grid_h, [0], stablehlo.MaxOp, 0), i64)
    most_w = builders.convert(builders.reduce(grid_w, [0], stablehlo.MaxOp, 0), i64)
    steps = stablehlo.multiply(most_h, most_w)
    neutral = initial  # the accumulator's identity: 0 for a sum, -inf for a max

    def cond(carry: list[ir.Value]) -> ir.Value:
        return builders.compare(carry[0], steps, "LT")

    def body(carry: list[ir.Value]) -> list[ir.Value]:
        step, total = carry
        row = stablehlo.divide(step, most_w)
        column = stablehlo.subtract(step, stablehlo.multiply(row, most_w))
        iy, ix = builders.convert(row, compute), builders.convert(column, compute)
        fr = builders.Arith(builders.static_shape_of(grid_h), compute)
        inside = builders.logical_and(
            fr.cmp(builders.broadcast_to(iy, fr.shape, dims=[]), grid_h, "LT"),
            fr.cmp(builders.broadcast_to(ix, fr.shape, dims=[]), grid_w, "LT"),
        )
        value = stablehlo.select(builders.broadcast_to(inside, out, dims=[0]), contribution(iy, ix), neutral)
        return [builders.increment(step), accumulate(total, value)]

    return builders.while_loop([builders.splat(0, i64), initial], cond, body)[1]


@lowering("MaxRoiPool", since=1)
@lowering("MaxRoiPool", since=22)  # 22 added bfloat16
def lower_max_roi_pool(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value]:
    """Lowers MaxRoiPool to masked max reductions, over W then over H.

    As onnxruntime (Caffe's ROI pooling): roi corners are ``round(coordinate * spatial_scale)``
    (half away from zero), each roi at least 1x1; bin ``p`` spans ``[floor(p * size / pooled),
    ceil((p + 1) * size / pooled))`` from the roi start, clipped to the input; empty bins are 0.

    Spec: MaxRoiPool-1/22.
    Shapes: X [N, C, H, W]; rois [R, 5] (batch index, x1, y1, x2, y2); both static;
        Y [R, C, pooled_h, pooled_w].
    Dtypes: float16, bfloat16, float32, float64 (float16/bfloat16 computed in float32).
    Raises: ShapeError for mismatched shapes or a pooled_shape that is not 2 positive ints.
    """
    dtype = geometry.require_float(ctx, 0)
    batch, channels, height, width = geometry.expect_rank(ctx, 0, 4)
    rois_shape = ctx.input_static_shape(1)
    if len(rois_shape) != 2 or rois_shape[1] != 5:
        raise ctx.error(f"rois must be [R, 5], got {list(rois_shape)}", ShapeError)
    pooled = node.attr_ints("pooled_shape") or []
    if len(pooled) != 2 or min(pooled) < 1:
        raise ctx.error(f"pooled_shape must be 2 positive ints, got {pooled}", ShapeError)
    count = rois_shape[0]
    pooled_h, pooled_w = pooled
    scale = node.attr_float("spatial_scale")
    compute = geometry.compute_dtype(dtype)
    rois = builders.convert(ctx.input(1), compute)
    fr = builders.Arith([count], compute)
    batch_index = _clamp_index(builders.convert(geometry.component(rois, 0), DataType.INT64), batch)
    x1, y1, x2, y2 = (stablehlo.round_nearest_afz(fr.mul(geometry.component(rois, j), scale)) for j in range(1, 5))

    def bounds(start: ir.Value, end: ir.Value, bins: int, size: int) -> tuple[ir.Value, ir.Value]:
        """``[R, bins]`` window starts (inclusive) and ends (exclusive) along one axis."""
        extent = fr.max(fr.add(fr.sub(end, start), 1.0), 1.0)
        step = fr.exact_div(extent, float(bins))
        f = builders.Arith([count, bins], compute)
        step_b = builders.broadcast_to(step, f.shape, dims=[0])
        start_b = builders.broadcast_to(start, f.shape, dims=[0])
        index = f.iota(1)
        lo = f.add(f.floor(f.mul(index, step_b)), start_b)
        hi = f.add(f.ceil(f.mul(f.add(index, 1.0), step_b)), start_b)
        return f.clamp(lo, 0.0, float(size)), f.clamp(hi, 0.0, float(size))

    h_lo, h_hi = bounds(y1, y2, pooled_h, height)
    w_lo, w_hi = bounds(x1, x2, pooled_w, width)

    def window(lo: ir.Value, hi: ir.Value, size: int) -> ir.Value:
        """``[R, bins, size]``: True at positions inside each bin."""
        bins = builders.static_shape_of(lo)[1]
        f = builders.Arith([count, bins, size], compute)
        position = f.iota(2)
        inside_lo = f.cmp(position, builders.broadcast_to(lo, f.shape, dims=[0, 1]), "GE")
        return builders.logical_and(inside_lo, f.cmp(position, builders.broadcast_to(hi, f.shape, dims=[0, 1]), "LT"))

    images = builders.convert(builders.take(ctx.input(0), batch_index, 0), compute)  # [R, C, H, W]
    lowest = -np.inf
    by_w = [count, channels, height, pooled_w, width]
    masked = stablehlo.select(
        builders.broadcast_to(window(w_lo, w_hi, width), by_w, dims=[0, 3, 4]),
        builders.broadcast_to(images, by_w, dims=[0, 1, 2, 4]),
        builders.splat(lowest, compute, by_w),
    )
    column_max = builders.reduce(masked, [4], stablehlo.MaxOp, lowest)  # [R, C, H, PW]
    by_h = [count, channels, pooled_h, pooled_w, height]
    masked = stablehlo.select(
        builders.broadcast_to(window(h_lo, h_hi, height), by_h, dims=[0, 2, 4]),
        builders.broadcast_to(column_max, by_h, dims=[0, 1, 4, 3]),
        builders.splat(lowest, compute, by_h),
    )
    pooled_max = builders.reduce(masked, [4], stablehlo.MaxOp, lowest)  # [R, C, PH, PW]
    fb = builders.Arith([count, pooled_h, pooled_w], compute)
    empty = builders.logical_or(
        fb.cmp(builders.broadcast_to(h_hi, fb.shape, dims=[0, 1]), builders.broadcast_to(h_lo, fb.shape, dims=[0, 1]), "LE"),
        fb.cmp(builders.broadcast_to(w_hi, fb.shape, dims=[0, 2]), builders.broadcast_to(w_lo, fb.shape, dims=[0, 2]), "LE"),
    )
    out = [count, channels, pooled_h, pooled_w]
    result = stablehlo.select(
        builders.broadcast_to(empty, out, dims=[0, 2, 3]), builders.splat(0, compute, out), pooled_max
    )
    return [builders.convert(result, dtype)]


def _corners(boxes: np.ndarray, center_point_box: int) -> tuple[np.ndarray, ...]:
    """``(y_min, x_min, y_max, x_max)`` per box (float32), from either box format."""
    if center_point_box:
        x_center, y_center, width, height = (boxes[..., i] for i in range(4))
        half_w, half_h = width / np.float32(2), height / np.float32(2)
        return y_center - half_h, x_center - half_w, y_center + half_h, x_center + half_w
    y1, x1, y2, x2 = (boxes[..., i] for i in range(4))
    return np.minimum(y1, y2), np.minimum(x1, x2), np.maximum(y1, y2), np.maximum(x1, x2)


def _suppresses(corners: tuple[np.ndarray, ...], kept: int, candidates: np.ndarray, iou_threshold: np.float32) -> np.ndarray:
    """True where a candidate box's IoU with box ``kept`` is above ``iou_threshold``."""
    y_min, x_min, y_max, x_max = corners
    inter_w = np.minimum(x_max[kept], x_max[candidates]) - np.maximum(x_min[kept], x_min[candidates])
    inter_h = np.minimum(y_max[kept], y_max[candidates]) - np.maximum(y_min[kept], y_min[candidates])
    overlap = (inter_w > 0) & (inter_h > 0)
    intersection = inter_w * inter_h
    area_kept = (x_max[kept] - x_min[kept]) * (y_max[kept] - y_min[kept])
    area = (x_max[candidates] - x_min[candidates]) * (y_max[candidates] - y_min[candidates])
    union = area_kept + area - intersection
    valid = overlap & (intersection > 0) & (area_kept > 0) & (area > 0) & (union > 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        iou = intersection / union
    return valid & (iou > iou_threshold)


def _non_max_suppression(
    boxes: np.ndarray,
    scores: np.ndarray,
    max_per_class: int,
    iou_threshold: np.float32,
    score_threshold: np.float32 | None,
    center_point_box: int,
) -> np.ndarray:
    """Greedy NMS per (batch, class), in float32: ``[selected, 3]`` int64 rows of
    ``(batch, class, box)``, by descending score (ties: lower box index first)."""
    selected: list[tuple[int, int, int]] = []
    batches, classes, _ = scores.shape
    for batch in range(batches):
        corners = _corners(boxes[batch], center_point_box)
        for cls in range(classes):
            class_scores = scores[batch, cls]
            candidates = np.arange(class_scores.size)
            if score_threshold is not None:
                candidates = candidates[class_scores > score_threshold]
            candidates = candidates[np.argsort(-class_scores[candidates], kind="stable")]
            kept = 0
            while candidates.size and kept < max_per_class:
                best, candidates = candidates[0], candidates[1:]
                selected.append((batch, cls, int(best)))
                kept += 1
                candidates = candidates[~_suppresses(corners, best, candidates, iou_threshold)]
    return np.asarray(selected, dtype=np.int64).reshape(len(selected), 3)


def _optional_scalar(ctx: LoweringContext, index: int) -> np.ndarray | None:
    value = ctx.optional_constant_input(index)
    if value is None or np.size(value) == 0:
        return None
    if np.size(value) != 1:
        raise ctx.error(f"input {index} ('{ctx.node.input_names[index]}') must be a scalar", ShapeError)
    return np.asarray(value).reshape(-1)[0]


def _check_non_max_suppression(ctx: LoweringContext, node: OnnxNode) -> None:
    """Checks NonMaxSuppression's attribute and the input shapes known at compile time."""
    center_point_box = node.attr_int("center_point_box")
    if center_point_box not in (0, 1):
        raise ctx.unsupported_attribute("center_point_box", center_point_box, "0, 1")
    boxes, scores = ctx.input_shape(0), ctx.input_shape(1)

    def static_differs(a, b) -> bool:
        return isinstance(a, int) and isinstance(b, int) and a != b

    if len(boxes) != 3 or static_differs(boxes[2], 4):
        raise ctx.error(f"boxes must have shape [batch, boxes, 4], got {list(boxes)}", ShapeError)
    if len(scores) != 3 or static_differs(scores[0], boxes[0]) or static_differs(scores[2], boxes[1]):
        raise ctx.error(
            f"scores must have shape [batch, classes, boxes] = [{boxes[0]}, C, {boxes[1]}], got {list(scores)}",
            ShapeError,
        )
    for index in range(2, min(ctx.num_inputs, 5)):
        if ctx.has_input(index):
            shape = ctx.input_shape(index)
            if len(shape) > 1 or (shape and static_differs(shape[0], 1)):
                raise ctx.invalid_input(index, f"must be a scalar or hold one element, got shape {list(shape)}")


@lowering("NonMaxSuppression", since=10)
@lowering("NonMaxSuppression", since=11)  # 11 revised the schema text only
def lower_non_max_suppression(ctx: LoweringContext, node: OnnxNode) -> list[np.ndarray]:
    """Computes NonMaxSuppression at compile time; run-time inputs are rejected.

    Spec: NonMaxSuppression-10/11.
    Shapes: boxes float ``[batches, boxes, 4]``, scores float ``[batches, classes, boxes]``,
        max_output_boxes_per_class int64 scalar (default 0: no output), iou_threshold and
        score_threshold float scalars (omitted score_threshold: no score filter); all known at
        compile time. Result int64 ``[selected, 3]``.
    Dtypes: float32 boxes and scores.
    Raises: NonConstantInputError if any input is computed at run time (the output size
        depends on the values); ShapeError for inconsistent shapes; UnsupportedAttributeError
        for center_point_box not 0/1; InvalidInputError for a threshold or count with more than
        one element. The shape checks use static dims and run before the host split.
    """
    _check_non_max_suppression(ctx, node)  # before the split: bad inputs fail at compile time
    for index in range(min(ctx.num_inputs, 5)):
        if ctx.has_input(index) and not ctx.is_constant_input(index):
            raise ctx.error(
                f"the output size depends on the values of input {index} "
                f"('{ctx.node.input_names[index]}'); one static module needs every input known at "
                "compile time (CompiledModel splits the graph at this node instead)",
                DataDependentShapeError,
            )
    center_point_box = node.attr_int("center_point_box")
    if center_point_box not in (0, 1):
        raise ctx.unsupported_attribute("center_point_box", center_point_box, "0, 1")
    boxes = np.asarray(ctx.constant_input(0), dtype=np.float32)
    scores = np.asarray(ctx.constant_input(1), dtype=np.float32)
    if boxes.ndim != 3 or boxes.shape[2] != 4 or scores.ndim != 3 or scores.shape[::2] != boxes.shape[:2]:
        raise ctx.error(
            f"boxes {list(boxes.shape)} must be [batches, boxes, 4] and scores {list(scores.shape)} "
            "[batches, classes, boxes]",
            ShapeError,
        )
    max_per_class = _optional_scalar(ctx, 2)
    iou = _optional_scalar(ctx, 3)
    score_threshold = _optional_scalar(ctx, 4)
    return [
        _non_max_suppression(
            boxes,
            scores,
            max(int(max_per_class), 0) if max_per_class is not None else 0,
            np.float32(iou) if iou is not None else np.float32(0),
            np.float32(score_threshold) if score_threshold is not None else None,
            center_point_box,
        )
    ]
