"""Lowering rules: sorting and selection.

    TopK(x, k)                   -> float32 (and 8/16-bit types as float32), static shape:
                                    chlo.top_k on a canonical copy of x
                                    (XLA CPU runs it as a partial selection, 5-10x faster than
                                    a full sort; see _top_k_selection)
                                    otherwise: stablehlo.sort of (x, iota) along the axis with a
                                    comparator that breaks ties by index, then stablehlo.slice
    NonMaxSuppression(boxes, s)  -> computed at compile time (every input must be known there)

TopK's comparator orders NaN above every number (first when ``largest=1``, last otherwise), as
numpy's sort does; equal values keep the lower index first, as the spec requires.
NonMaxSuppression's output size depends on the data, and output sizes must be known at compile
time, so it is lowered only when its inputs are constants (the importer already folds such a node
when the inputs are small; this rule covers larger ones).

ArgMax and ArgMin live in reduction.py.

Spec: onnx.ai/onnx/operators (TopK, NonMaxSuppression).
"""

from __future__ import annotations

import numpy as np
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import chlo, stablehlo

from onnx_stablehlo.errors import DataDependentShapeError, ShapeError
from onnx_stablehlo.frontend import builders, dtypes
from onnx_stablehlo.frontend.context import LoweringContext, OnnxNode
from onnx_stablehlo.frontend.dtypes import DataType
from onnx_stablehlo.frontend.registry import lowering

# TopK ----------------------------------------------------------------------------------------


def _sort_with_indices(x: ir.Value, axis: int, descending: bool) -> tuple[ir.Value, ir.Value]:
    """Sorts ``x`` along ``axis``; returns the sorted values and their int64 source indices.

    The comparator puts ``a`` before ``b`` when it is greater (``descending``) or smaller, when
    ``a`` is NaN and ``b`` is not (descending) or ``b`` is NaN and ``a`` is not (ascending), and,
    for equal values (two NaNs included), when its index is lower.
    """
    shape = builders.dims_of(x)
    dtype = builders.dtype_of(x)
    index = builders.iota(shape, axis, DataType.INT64)

    def comparator(lhs: list[ir.Value], rhs: list[ir.Value]) -> ir.Value:
        (a, index_a), (b, index_b) = lhs, rhs
        before = builders.compare(a, b, "GT" if descending else "LT")
        equal = builders.compare(a, b, "EQ")
        if dtypes.is_float(dtype):
            a_nan, b_nan = builders.compare(a, a, "NE"), builders.compare(b, b, "NE")
            first, second = (a_nan, b_nan) if descending else (b_nan, a_nan)
            before = stablehlo.or_(before, stablehlo.and_(first, stablehlo.not_(second)))
            equal = stablehlo.or_(equal, stablehlo.and_(a_nan, b_nan))
        tie_break = stablehlo.and_(equal, builders.compare(index_a, index_b, "LT"))
        return stablehlo.or_(before, tie_break)

    values, indices = builders.sort([x, index], axis, comparator)
    return values, indices


def _slice_front(value: ir.Value, axis: int, count: int) -> ir.Value:
    """The first ``count`` entries of ``value`` along ``axis`` (real_dynamic_slice when symbolic)."""
    shape = builders.dims_of(value)
    limits = list(shape)
    limits[axis] = count
    if all(isinstance(d, int) for d in shape):
        return stablehlo.slice(value, [0] * len(shape), limits, [1] * len(shape))
    result = stablehlo.real_dynamic_slice(
        builders.tensor_type(limits, builders.dtype_of(value)),
        value,
        builders.shape_tensor([0] * len(shape)),
        builders.shape_tensor(limits),
        builders.shape_tensor([1] * len(shape)),
    )
    return builders.record(result, limits)


def _top_k(ctx: LoweringContext, k: int, axis: int, largest: bool) -> list[ir.Value]:
    x = ctx.input(0)
    shape = builders.dims_of(x)
    axis = ctx.axis(axis, len(shape))
    # A symbolic axis size is assumed to be >= k (checked when the shapes are refined).
    if k < 0 or (isinstance(shape[axis], int) and k > shape[axis]):
        raise ctx.error(f"k={k} is out of range [0, {shape[axis]}] (the size of axis {axis})", ShapeError)
    if builders.dtype_of(x) in _SELECTION_DTYPES and all(isinstance(d, int) for d in shape):
        return _top_k_selection(x, k, axis, largest)
    values, indices = _sort_with_indices(x, axis, descending=largest)
    return [_slice_front(values, axis, k), _slice_front(indices, axis, k)]


# Dtypes whose every value float32 holds exactly: TopK selects on them as float32.
_SELECTION_DTYPES = (
    DataType.FLOAT, DataType.FLOAT16, DataType.BFLOAT16,
    DataType.INT8, DataType.UINT8, DataType.INT16, DataType.UINT16,
)


def _top_k_selection(x: ir.Value, k: int, axis: int, largest: bool) -> list[ir.Value]:
    """TopK of a static ``x`` through ``chlo.top_k`` (XLA's TopK: a partial selection).

    XLA CPU has its fast TopK for float32 only (other types become a sort), so 8- and 16-bit
    types, which float32 holds exactly, select as float32 and convert back.

    XLA CPU runs TopK as a runtime partial sort: 3x20x50 k=5 took 0.17 ms against 1.5 ms for
    the sort + slice (and 6 ms against 43 ms at 64x1000 k=100; bench/sorting.py). Its order is
    IEEE total order on the last axis, largest first, equal bit patterns by lower index. ONNX
    (and onnxruntime) want NaN above every number and -0.0 equal to 0.0, so the operand is a
    copy with every NaN made +NaN (-NaN for smallest-first, on ``-x``) and every zero +0.0;
    ``largest=0`` selects from ``-x`` and negates back. Other axes are transposed to the last.

    Deviation: a -0.0 among the selected values is returned as +0.0 (indices are exact).
    """
    dtype = builders.dtype_of(x)
    x = builders.convert(x, DataType.FLOAT)
    rank = len(builders.dims_of(x))
    permutation = list(range(rank))
    permutation[axis], permutation[-1] = permutation[-1], permutation[axis]
    operand = builders.transpose(x, permutation)
    if not largest:
        operand = stablehlo.negate(operand)
    shape = builders.dims_of(operand)
    nan = builders.splat(float("nan") if largest else -float("nan"), DataType.FLOAT, shape)
    zero = builders.splat(0.0, DataType.FLOAT, shape)
    operand = stablehlo.select(builders.compare(operand, operand, "NE"), nan, operand)
    operand = stablehlo.select(builders.compare(operand, zero, "EQ"), zero, operand)
    values, indices = chlo.top_k(operand, k)
    if not largest:
        values = stablehlo.negate(values)
    values, indices = builders.convert(values, dtype), builders.convert(indices, DataType.INT64)
    return [builders.transpose(values, permutation), builders.transpose(indices, permutation)]


@lowering("TopK", since=1)
def lower_top_k_attr(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value]:
    """Lowers TopK-1 (k as an attribute) to stablehlo.sort + stablehlo.slice; largest first.

    Spec: TopK-1.
    Shapes: x [d0, ..., dn] (symbolic dims allowed, a symbolic axis size must be >= k at run
        time); result values and int64 indices with ``k`` entries along ``axis``.
    Dtypes: float16, float32, float64.
    Raises: ShapeError if k exceeds the axis size.
    """
    return _top_k(ctx, node.attr_int("k"), node.attr_int("axis"), largest=True)


@lowering("TopK", since=10)  # 10 moved k to an input
@lowering("TopK", since=11)  # 11 added largest, sorted and integer types
@lowering("TopK", since=24)  # 24 added bfloat16
def lower_top_k(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value]:
    """Lowers TopK to stablehlo.sort of (x, iota) with an index tie-break, then stablehlo.slice.

    Spec: TopK-10/11/24.
    Shapes: x [d0, ..., dn] (symbolic dims allowed, a symbolic axis size must be >= K at run
        time); K int64 ``[1]`` known at compile time; results values and int64 indices with K
        entries along ``axis``.
    Dtypes: every real numeric type of the revision.
    Deviations: ``sorted=0`` (order unspecified) returns sorted results too. float32, 8- and
        16-bit types with static shapes (XLA's TopK, see ``_top_k_selection``): a selected -0.0 is returned as
        0.0; indices match onnxruntime's.
    Raises: NonConstantInputError if K is computed at run time; ShapeError if K exceeds the
        axis size.
    """
    k = np.asarray(ctx.constant_input(1))
    if k.size != 1:
        raise ctx.error(f"K must hold one value, got shape {list(k.shape)}", ShapeError)
    largest = bool(node.attr_int("largest", 1))
    return _top_k(ctx, int(k.reshape(-1)[0]), node.attr_int("axis"), largest)


# NonMaxSuppression -------------------------------------------------------------------------


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
        for center_point_box not 0/1.
    """
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
