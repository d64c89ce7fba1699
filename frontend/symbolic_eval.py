"""Shape computations evaluated on symbolic dims (shape-as-value).

Exporters compute reshape targets at run time: ``Shape -> Gather -> Unsqueeze -> Concat ->
Reshape``. When an input has symbolic dims, those small integer tensors are evaluated here as
arrays of :class:`~onnx_stablehlo.frontend.shapes.SymbolicDim` expressions (numpy object arrays),
so a Reshape or Expand target is known symbolically (``[batch, seq, 12, 32]``) instead of being
an opaque run-time tensor. A result whose elements are all ints becomes an ordinary constant.

Each evaluator takes the node and its inputs' values (object arrays, or ``None`` when an input
is omitted) and returns the outputs, or raises :class:`NotSymbolic` when it cannot decide (a
comparison of two different symbols, a division by a symbol ...); the node is then lowered by
its rule as usual.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from onnx_stablehlo.frontend.context import LoweredValue, OnnxNode
from onnx_stablehlo.frontend.shapes import SymbolicDim, floor_div, simplify, sym_max

__all__ = ["NotSymbolic", "EVALUATORS", "MAX_ELEMENTS", "evaluate", "normalize"]

MAX_ELEMENTS = 64
"""Integer tensors larger than this are never evaluated symbolically."""


class NotSymbolic(Exception):
    """The node cannot be evaluated on these symbolic inputs."""


Evaluator = Callable[[OnnxNode, Sequence[LoweredValue | None], Sequence[np.ndarray | None]], list[np.ndarray]]
EVALUATORS: dict[str, Evaluator] = {}


def _evaluator(*op_types: str) -> Callable[[Evaluator], Evaluator]:
    def register(fn: Evaluator) -> Evaluator:
        for op_type in op_types:
            EVALUATORS[op_type] = fn
        return fn

    return register


def normalize(array: np.ndarray) -> np.ndarray:
    """Simplifies every element (constant expressions become ints)."""
    flat = [simplify(v) if isinstance(v, SymbolicDim) else int(v) for v in np.asarray(array, dtype=object).reshape(-1)]
    result = np.empty(len(flat), dtype=object)
    result[:] = flat
    return result.reshape(np.shape(array))


def evaluate(node: OnnxNode, inputs: Sequence[LoweredValue | None], values: Sequence[np.ndarray | None]) -> list[np.ndarray]:
    """Evaluates ``node`` symbolically; raises :class:`NotSymbolic` when it cannot."""
    evaluator = EVALUATORS.get(node.op_type)
    if evaluator is None or node.domain != "":
        raise NotSymbolic(node.op_type)
    return [normalize(r) for r in evaluator(node, inputs, values)]


def _ints(value: np.ndarray | None) -> list[int]:
    if value is None:
        raise NotSymbolic("omitted input")
    flat = value.reshape(-1)
    if not all(isinstance(v, (int, np.integer)) for v in flat):
        raise NotSymbolic("needs integer constants")
    return [int(v) for v in flat]


def _axis(axis: int, rank: int) -> int:
    return axis + rank if axis < 0 else axis


@_evaluator("Shape")
def _shape(node: OnnxNode, inputs: Sequence[LoweredValue | None], values: Sequence[Any]) -> list[np.ndarray]:
    shape = list(inputs[0].shape)  # type: ignore[union-attr]
    rank = len(shape)
    start = node.attr_int("start", 0) if node.since_version >= 15 else 0
    end = node.attr("end") if node.since_version >= 15 else None
    end = rank if end is None else int(end)
    start, end = (min(max(_axis(v, rank), 0), rank) for v in (start, end))
    result = np.empty(max(end - start, 0), dtype=object)
    result[:] = shape[start:end]
    return [result]


@_evaluator("Size")
def _size(node: OnnxNode, inputs: Sequence[LoweredValue | None], values: Sequence[Any]) -> list[np.ndarray]:
    total: Any = 1
    for dim in inputs[0].shape:  # type: ignore[union-attr]
        total = total * dim
    result = np.empty((), dtype=object)
    result[()] = total
    return [result]


@_evaluator("Identity")
def _identity(node: OnnxNode, inputs: Sequence[Any], values: Sequence[Any]) -> list[np.ndarray]:
    return [values[0]]


@_evaluator("Cast")
def _cast(node: OnnxNode, inputs: Sequence[Any], values: Sequence[Any]) -> list[np.ndarray]:
    from onnx_stablehlo.frontend import dtypes

    to = dtypes.DataType(node.attr_int("to"))
    if not (dtypes.is_integer(to) or dtypes.is_float(to)):
        raise NotSymbolic("cast to a non-numeric type")
    return [values[0]]  # dims are integers: exact in every float type these models use


@_evaluator("Gather")
def _gather(node: OnnxNode, inputs: Sequence[Any], values: Sequence[Any]) -> list[np.ndarray]:
    data = values[0]
    axis = _axis(node.attr_int("axis", 0), data.ndim)
    indices = np.asarray(_ints(values[1])).reshape(values[1].shape)
    indices = np.where(indices < 0, indices + data.shape[axis], indices)
    return [np.take(data, indices, axis=axis)]


@_evaluator("Concat")
def _concat(node: OnnxNode, inputs: Sequence[Any], values: Sequence[Any]) -> list[np.ndarray]:
    present = [v for v in values if v is not None]
    axis = _axis(node.attr_int("axis"), present[0].ndim)
    return [np.concatenate(present, axis=axis)]


@_evaluator("Unsqueeze")
def _unsqueeze(node: OnnxNode, inputs: Sequence[Any], values: Sequence[Any]) -> list[np.ndarray]:
    axes = _ints(values[1]) if node.since_version >= 13 else list(node.attr_ints("axes") or [])
    rank = values[0].ndim + len(axes)
    result = values[0]
    for axis in sorted(_axis(a, rank) for a in axes):
        result = np.expand_dims(result, axis)
    return [result]


@_evaluator("Squeeze")
def _squeeze(node: OnnxNode, inputs: Sequence[Any], values: Sequence[Any]) -> list[np.ndarray]:
    if node.since_version >= 13:
        axes = _ints(values[1]) if len(values) > 1 and values[1] is not None else None
    else:
        axes = node.attr_ints("axes")
    data = values[0]
    if axes is None:
        return [data.reshape([d for d in data.shape if d != 1])]
    return [np.squeeze(data, axis=tuple(_axis(a, data.ndim) for a in axes))]


@_evaluator("Reshape")
def _reshape(node: OnnxNode, inputs: Sequence[Any], values: Sequence[Any]) -> list[np.ndarray]:
    target = _ints(values[1])
    data = values[0]
    target = [data.shape[i] if d == 0 and i < data.ndim else d for i, d in enumerate(target)]
    return [data.reshape(target)]


@_evaluator("Slice")
def _slice(node: OnnxNode, inputs: Sequence[Any], values: Sequence[Any]) -> list[np.ndarray]:
    data = values[0]
    if node.since_version >= 10:
        starts, ends = _ints(values[1]), _ints(values[2])
        axes = _ints(values[3]) if len(values) > 3 and values[3] is not None else list(range(len(starts)))
        steps = _ints(values[4]) if len(values) > 4 and values[4] is not None else [1] * len(starts)
    else:
        starts, ends = node.attr_ints("starts") or [], node.attr_ints("ends") or []
        axes = node.attr_ints("axes") or list(range(len(starts)))
        steps = [1] * len(starts)
    index: list[Any] = [slice(None)] * data.ndim
    for start, end, axis, step in zip(starts, ends, axes, steps):
        index[_axis(axis, data.ndim)] = slice(*slice(start, end, step).indices(data.shape[_axis(axis, data.ndim)]))
    return [data[tuple(index)]]


def _binary(fn: Callable[[Any, Any], Any]) -> Evaluator:
    def evaluate_binary(node: OnnxNode, inputs: Sequence[Any], values: Sequence[Any]) -> list[np.ndarray]:
        left, right = np.broadcast_arrays(values[0], values[1])
        result = np.empty(left.shape, dtype=object)
        for index in np.ndindex(left.shape):
            result[index] = fn(left[index], right[index])
        return [result]

    return evaluate_binary


def _divide(a: Any, b: Any) -> Any:
    if not isinstance(b, (int, np.integer)) or b <= 0:
        raise NotSymbolic("division by a symbol or a non-positive int")
    if isinstance(a, (int, np.integer)):
        return int(np.trunc(int(a) / int(b))) if a < 0 else int(a) // int(b)
    return floor_div(a, int(b))


def _equal(a: Any, b: Any) -> bool:
    if isinstance(a, (int, np.integer)) and isinstance(b, (int, np.integer)):
        return int(a) == int(b)
    if SymbolicDim._of(a) == SymbolicDim._of(b):
        return True
    for constant in (a, b):
        if isinstance(constant, (int, np.integer)) and constant < 0:
            return False  # a dim is never negative (the -1 tests exporters write)
    raise NotSymbolic("undecidable comparison of symbols")


def _minimum(a: Any, b: Any) -> Any:
    if isinstance(a, (int, np.integer)) and isinstance(b, (int, np.integer)):
        return min(int(a), int(b))
    if a == b:
        return a
    raise NotSymbolic("min of different symbols")


EVALUATORS["Add"] = _binary(lambda a, b: a + b)
EVALUATORS["Sub"] = _binary(lambda a, b: a - b)
EVALUATORS["Mul"] = _binary(lambda a, b: a * b)
EVALUATORS["Div"] = _binary(_divide)
EVALUATORS["Max"] = _binary(sym_max)
EVALUATORS["Min"] = _binary(_minimum)
EVALUATORS["Equal"] = _binary(_equal)


@_evaluator("Where")
def _where(node: OnnxNode, inputs: Sequence[Any], values: Sequence[Any]) -> list[np.ndarray]:
    condition = values[0]
    if not all(isinstance(v, (bool, np.bool_, int, np.integer)) for v in condition.reshape(-1)):
        raise NotSymbolic("condition not known")
    cond, x, y = np.broadcast_arrays(condition.astype(bool), values[1], values[2])
    result = np.empty(cond.shape, dtype=object)
    for index in np.ndindex(cond.shape):
        result[index] = x[index] if cond[index] else y[index]
    return [result]
