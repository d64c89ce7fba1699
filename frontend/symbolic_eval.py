"""Shape computations evaluated on symbolic dims (shape-as-value).

Exporters compute reshape targets at run time: ``Shape -> Gather -> Unsqueeze -> Concat ->
Reshape``. When an input has symbolic dims, those small integer tensors are evaluated here as
arrays of :class:`~onnx_stablehlo.frontend.shapes.SymbolicDim` expressions (numpy object arrays),
so a Reshape or Expand target is known symbolically (``[batch, seq, 12, 32]``) instead of being
an opaque run-time tensor. A result whose elements are all ints becomes an ordinary constant.

Evaluators live in the lowering registry beside the rules, keyed the same way
``(domain, op_type, since_version)`` and resolved the same way: ``@symbolic(op_type, since=...)``
tags a function for the revisions it handles (those of the op's rule;
``tests/test_registry.py`` checks that they agree). Each takes the node, its inputs and their
values (object arrays, or ``None`` when an input is omitted) and returns the outputs, or raises
:class:`NotSymbolic` when it cannot decide (a comparison of two different symbols, a division by
a symbol ...); the node is then lowered by its rule as usual.
"""

from __future__ import annotations

import dataclasses
import operator
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Literal

import numpy as np

from onnx_stablehlo.frontend import dtypes
from onnx_stablehlo.frontend.context import LoweredValue, OnnxNode
from onnx_stablehlo.frontend.dtypes import DataType
from onnx_stablehlo.frontend.registry import tag_evaluator
from onnx_stablehlo.frontend.shapes import SymbolicDim, floor_div, simplify, sym_max

__all__ = ["NotSymbolic", "SymbolicEvaluator", "symbolic", "MAX_ELEMENTS", "normalize"]

MAX_ELEMENTS = 64
"""Integer tensors larger than this are never evaluated symbolically."""


class NotSymbolic(Exception):
    """The node cannot be evaluated on these symbolic inputs."""


EvaluatorFn = Callable[[OnnxNode, Sequence[LoweredValue | None], Sequence[np.ndarray | None]], list[np.ndarray]]


def _dtype_of_symbolic_input(node: OnnxNode, present: Sequence[LoweredValue]) -> DataType:
    return next(v.dtype for v in present if v.sym is not None)


@dataclasses.dataclass(frozen=True)
class SymbolicEvaluator:
    """How the importer evaluates one op on symbolic dims.

    Attributes:
        fn: ``fn(node, inputs, values) -> outputs``; ``values`` holds the inputs as object
            arrays of ints and SymbolicDims (``[None]`` when ``reads`` is ``"shape"``).
        reads: ``"shape"``: only the first input's dims (Shape, Size; evaluated when they are
            not all static); ``"values"``: the inputs' values, of which one at least symbolic.
        float_inputs: whether symbolic values may arrive as floats (a Cast or Identity passes
            them on; arithmetic on float dims is not integer math and is left to the rule).
        result_dtype: the outputs' element type from the node and its present inputs.
    """

    fn: EvaluatorFn
    reads: Literal["shape", "values"] = "values"
    float_inputs: bool = False
    result_dtype: Callable[[OnnxNode, Sequence[LoweredValue]], DataType] = _dtype_of_symbolic_input

    def evaluate(
        self, node: OnnxNode, inputs: Sequence[LoweredValue | None], values: Sequence[np.ndarray | None]
    ) -> list[np.ndarray]:
        """The outputs, every element simplified; raises :class:`NotSymbolic` when undecidable."""
        return [normalize(r) for r in self.fn(node, inputs, values)]


def symbolic(
    op_type: str,
    *,
    since: Iterable[int],
    reads: Literal["shape", "values"] = "values",
    float_inputs: bool = False,
    result_dtype: Callable[[OnnxNode, Sequence[LoweredValue]], DataType] | None = None,
) -> Callable[[EvaluatorFn], EvaluatorFn]:
    """Tags ``fn`` as the symbolic evaluator of ai.onnx ``op_type`` at each revision in ``since``.

    ``since`` lists the revisions of the op's lowering rule that ``fn`` handles (one evaluator
    per key, as for rules); the other arguments are :class:`SymbolicEvaluator`'s.
    """

    def tag(fn: EvaluatorFn) -> EvaluatorFn:
        evaluator = SymbolicEvaluator(fn, reads, float_inputs, result_dtype or _dtype_of_symbolic_input)
        for version in since:
            tag_evaluator(fn, op_type, version, evaluator)
        return fn

    return tag


def _int64(node: OnnxNode, present: Sequence[LoweredValue]) -> DataType:
    return DataType.INT64


def _bool(node: OnnxNode, present: Sequence[LoweredValue]) -> DataType:
    return DataType.BOOL


def _cast_to(node: OnnxNode, present: Sequence[LoweredValue]) -> DataType:
    return DataType(node.attr_int("to"))


def normalize(array: np.ndarray) -> np.ndarray:
    """Simplifies every element (constant expressions become ints)."""
    flat = [simplify(v) if isinstance(v, SymbolicDim) else int(v) for v in np.asarray(array, dtype=object).reshape(-1)]
    result = np.empty(len(flat), dtype=object)
    result[:] = flat
    return result.reshape(np.shape(array))


def _ints(value: np.ndarray | None) -> list[int]:
    if value is None:
        raise NotSymbolic("omitted input")
    flat = value.reshape(-1)
    if not all(isinstance(v, (int, np.integer)) for v in flat):
        raise NotSymbolic("needs integer constants")
    return [int(v) for v in flat]


def _axis(axis: int, rank: int) -> int:
    return axis + rank if axis < 0 else axis


def _shape_slice(inputs: Sequence[LoweredValue | None], start: int, end: int | None) -> list[np.ndarray]:
    shape = list(inputs[0].shape)  # type: ignore[union-attr]
    rank = len(shape)
    end = rank if end is None else int(end)
    start, end = (min(max(_axis(v, rank), 0), rank) for v in (start, end))
    result = np.empty(max(end - start, 0), dtype=object)
    result[:] = shape[start:end]
    return [result]


@symbolic("Shape", since=(1, 13), reads="shape", result_dtype=_int64)
def evaluate_shape(node: OnnxNode, inputs: Sequence[LoweredValue | None], values: Sequence[Any]) -> list[np.ndarray]:
    return _shape_slice(inputs, 0, None)


@symbolic("Shape", since=(15, 19, 21, 23, 24, 25), reads="shape", result_dtype=_int64)
def evaluate_shape_start_end(
    node: OnnxNode, inputs: Sequence[LoweredValue | None], values: Sequence[Any]
) -> list[np.ndarray]:
    return _shape_slice(inputs, node.attr_int("start", 0), node.attr("end"))


@symbolic("Size", since=(1, 13, 19, 21, 23, 24, 25), reads="shape", result_dtype=_int64)
def evaluate_size(node: OnnxNode, inputs: Sequence[LoweredValue | None], values: Sequence[Any]) -> list[np.ndarray]:
    total: Any = 1
    for dim in inputs[0].shape:  # type: ignore[union-attr]
        total = total * dim
    result = np.empty((), dtype=object)
    result[()] = total
    return [result]


@symbolic("Identity", since=(1, 13, 14, 16, 19, 21, 23, 24, 25), float_inputs=True)
def evaluate_identity(node: OnnxNode, inputs: Sequence[Any], values: Sequence[Any]) -> list[np.ndarray]:
    return [values[0]]


@symbolic("Cast", since=(6, 9, 13, 19, 21, 23, 24, 25, 28), float_inputs=True, result_dtype=_cast_to)
def evaluate_cast(node: OnnxNode, inputs: Sequence[Any], values: Sequence[Any]) -> list[np.ndarray]:
    to = DataType(node.attr_int("to"))
    if not (dtypes.is_integer(to) or dtypes.is_float(to)):
        raise NotSymbolic("cast to a non-numeric type")
    return [values[0]]  # dims are integers: exact in every float type these models use


@symbolic("Gather", since=(1, 11, 13))
def evaluate_gather(node: OnnxNode, inputs: Sequence[Any], values: Sequence[Any]) -> list[np.ndarray]:
    data = values[0]
    axis = _axis(node.attr_int("axis", 0), data.ndim)
    indices = np.asarray(_ints(values[1])).reshape(values[1].shape)
    indices = np.where(indices < 0, indices + data.shape[axis], indices)
    return [np.take(data, indices, axis=axis)]


@symbolic("Concat", since=(4, 11, 13))
def evaluate_concat(node: OnnxNode, inputs: Sequence[Any], values: Sequence[Any]) -> list[np.ndarray]:
    present = [v for v in values if v is not None]
    axis = _axis(node.attr_int("axis"), present[0].ndim)
    return [np.concatenate(present, axis=axis)]


def _unsqueeze(data: np.ndarray, axes: Sequence[int]) -> list[np.ndarray]:
    rank = data.ndim + len(axes)
    result = data
    for axis in sorted(_axis(a, rank) for a in axes):
        result = np.expand_dims(result, axis)
    return [result]


@symbolic("Unsqueeze", since=(1, 11))
def evaluate_unsqueeze_axes_attr(node: OnnxNode, inputs: Sequence[Any], values: Sequence[Any]) -> list[np.ndarray]:
    return _unsqueeze(values[0], list(node.attr_ints("axes") or []))


@symbolic("Unsqueeze", since=(13, 21, 23, 24, 25))
def evaluate_unsqueeze_axes_input(node: OnnxNode, inputs: Sequence[Any], values: Sequence[Any]) -> list[np.ndarray]:
    return _unsqueeze(values[0], _ints(values[1]))


def _squeeze(data: np.ndarray, axes: Sequence[int] | None) -> list[np.ndarray]:
    if axes is None:
        return [data.reshape([d for d in data.shape if d != 1])]
    return [np.squeeze(data, axis=tuple(_axis(a, data.ndim) for a in axes))]


@symbolic("Squeeze", since=(1, 11))
def evaluate_squeeze_axes_attr(node: OnnxNode, inputs: Sequence[Any], values: Sequence[Any]) -> list[np.ndarray]:
    return _squeeze(values[0], node.attr_ints("axes"))


@symbolic("Squeeze", since=(13, 21, 23, 24, 25))
def evaluate_squeeze_axes_input(node: OnnxNode, inputs: Sequence[Any], values: Sequence[Any]) -> list[np.ndarray]:
    axes = _ints(values[1]) if len(values) > 1 and values[1] is not None else None
    return _squeeze(values[0], axes)


# Reshape-14's allowzero is not read: a 0 in the target copies the input dim, as before 14.
@symbolic("Reshape", since=(5, 13, 14, 19, 21, 23, 24, 25))
def evaluate_reshape(node: OnnxNode, inputs: Sequence[Any], values: Sequence[Any]) -> list[np.ndarray]:
    target = _ints(values[1])
    data = values[0]
    target = [data.shape[i] if d == 0 and i < data.ndim else d for i, d in enumerate(target)]
    return [data.reshape(target)]


def _slice(data: np.ndarray, starts: Sequence[int], ends: Sequence[int], axes: Sequence[int], steps: Sequence[int]) -> list[np.ndarray]:
    index: list[Any] = [slice(None)] * data.ndim
    for start, end, axis, step in zip(starts, ends, axes, steps):
        index[_axis(axis, data.ndim)] = slice(*slice(start, end, step).indices(data.shape[_axis(axis, data.ndim)]))
    return [data[tuple(index)]]


@symbolic("Slice", since=(1,))
def evaluate_slice_attrs(node: OnnxNode, inputs: Sequence[Any], values: Sequence[Any]) -> list[np.ndarray]:
    starts, ends = node.attr_ints("starts") or [], node.attr_ints("ends") or []
    axes = node.attr_ints("axes") or list(range(len(starts)))
    return _slice(values[0], starts, ends, axes, [1] * len(starts))


@symbolic("Slice", since=(10, 11, 13))
def evaluate_slice_inputs(node: OnnxNode, inputs: Sequence[Any], values: Sequence[Any]) -> list[np.ndarray]:
    starts, ends = _ints(values[1]), _ints(values[2])
    axes = _ints(values[3]) if len(values) > 3 and values[3] is not None else list(range(len(starts)))
    steps = _ints(values[4]) if len(values) > 4 and values[4] is not None else [1] * len(starts)
    return _slice(values[0], starts, ends, axes, steps)


def _binary(fn: Callable[[Any, Any], Any]) -> EvaluatorFn:
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


evaluate_add = symbolic("Add", since=(7, 13, 14))(_binary(operator.add))
evaluate_sub = symbolic("Sub", since=(7, 13, 14))(_binary(operator.sub))
evaluate_mul = symbolic("Mul", since=(7, 13, 14))(_binary(operator.mul))
evaluate_div = symbolic("Div", since=(7, 13, 14))(_binary(_divide))
evaluate_max = symbolic("Max", since=(6, 8, 12, 13))(_binary(sym_max))
evaluate_min = symbolic("Min", since=(6, 8, 12, 13))(_binary(_minimum))
evaluate_equal = symbolic("Equal", since=(7, 11, 13, 19), result_dtype=_bool)(_binary(_equal))


@symbolic("Where", since=(9, 16))
def evaluate_where(node: OnnxNode, inputs: Sequence[Any], values: Sequence[Any]) -> list[np.ndarray]:
    condition = values[0]
    if not all(isinstance(v, (bool, np.bool_, int, np.integer)) for v in condition.reshape(-1)):
        raise NotSymbolic("condition not known")
    cond, x, y = np.broadcast_arrays(condition.astype(bool), values[1], values[2])
    result = np.empty(cond.shape, dtype=object)
    for index in np.ndindex(cond.shape):
        result[index] = x[index] if cond[index] else y[index]
    return [result]
