"""``fold-constants``: evaluates ops whose operands are all constants, with numpy.

Only exact or IEEE-faithful evaluations are done: integer arithmetic wraps as StableHLO's
does, integer division truncates toward zero (never folded by zero), float results follow
numpy's IEEE arithmetic (transcendental functions through libm, within an ulp of XLA's).
Element types numpy holds exactly are supported (f16, f32, f64, bool, i8-i64, ui8-ui64);
others (bf16, float8, complex) are left alone.
"""

from __future__ import annotations

import dataclasses
from typing import ClassVar

import numpy as np
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import stablehlo

from onnx_stablehlo.passes.base import ModulePass
from onnx_stablehlo.passes.ir_utils import (
    constant_array,
    constant_attr,
    dense_attr,
    element_type_of,
    is_static,
    numpy_dtype,
    read_i64_array,
    shape_of,
    splat_scalar,
)
from onnx_stablehlo.passes.op_catalog import ELEMENTWISE
from onnx_stablehlo.passes.patterns import PatternRewritePass, RewritePattern, Rewriter

__all__ = ["FoldConstantsPass"]


# Elementwise ops with a numpy equivalent (op_catalog.ElementwiseOp.numpy), by arity.
_UNARY = {name: op for name, op in ELEMENTWISE.items() if op.numpy is not None and op.arity == 1}
_BINARY = {name: op for name, op in ELEMENTWISE.items() if op.numpy is not None and op.arity == 2}


def _int_divide(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Integer division truncating toward zero (C and StableHLO), b != 0."""
    quotient = np.floor_divide(a, b)
    if a.dtype.kind == "i":
        remainder = a - quotient * b
        quotient = quotient + ((remainder != 0) & ((a < 0) != (b < 0)))
    return quotient.astype(a.dtype)


_COMPARE = {
    "EQ": np.equal,
    "NE": np.not_equal,
    "LT": np.less,
    "LE": np.less_equal,
    "GT": np.greater,
    "GE": np.greater_equal,
}


def _kind(dtype: np.dtype) -> str:
    return "b" if dtype == np.bool_ else ("f" if dtype.kind == "f" else "i")


class _FoldPattern(RewritePattern):
    """Shared checks: static result type, readable operands within the size bound."""

    def __init__(self, max_elements: int) -> None:
        self.max_elements = max_elements

    def _operands(self, op: ir.Operation, rw: Rewriter) -> list[np.ndarray] | None:
        arrays = []
        for index, operand in enumerate(op.operands):
            if constant_attr(operand) is None:
                rw.fail(op, f"operand #{index} is not a constant")
                return None
            array = constant_array(operand, self.max_elements)
            if array is None:
                rw.fail(
                    op,
                    f"operand #{index} ({operand.type}) is not readable with numpy or has more than "
                    f"{self.max_elements} elements",
                )
                return None
            arrays.append(array)
        return arrays

    def _replace(self, op: ir.Operation, array: np.ndarray, rw: Rewriter, *, splat: bool = False) -> bool:
        """Replaces ``op`` by a constant holding ``array`` (or, when ``splat``, its one element)."""
        result = op.results[0]
        if not is_static(result):
            return rw.fail(op, "result shape is dynamic")
        dtype = numpy_dtype(element_type_of(result))
        if dtype is None:
            return rw.fail(op, f"result element type {element_type_of(result)} is not readable with numpy")
        array = np.asarray(array)
        if splat and 0 in shape_of(result):
            array, splat = np.zeros(shape_of(result), dtype), False
        if splat:
            array = array.reshape(-1)[:1]
        else:
            if array.size > self.max_elements:
                return rw.fail(op, f"result has {array.size} elements, more than max-elements={self.max_elements}")
            array = array.reshape(shape_of(result))
        array = np.ascontiguousarray(array.astype(dtype, copy=False))
        rw.replace_op(op, [rw.constant(dense_attr(array, result.type))])
        return True


def _all_splat(op: ir.Operation) -> bool:
    return all(constant_attr(v) is not None and constant_attr(v).is_splat for v in op.operands)


class FoldUnary(_FoldPattern):
    """f(c) -> c' for elementwise unary ops on a constant (negate, abs, not, sqrt, exp, ...).

    Transcendental functions only on floats; a splat folds at any size (computed once).
    """

    root = tuple(_UNARY)

    def match_and_rewrite(self, op: ir.Operation, rw: Rewriter) -> bool:
        function, kinds = _UNARY[op.name].numpy, _UNARY[op.name].numpy_kinds
        operand = op.operands[0]
        if constant_attr(operand) is None:
            return rw.fail(op, "operand is not a constant")
        dtype = numpy_dtype(element_type_of(operand))
        if dtype is None:
            return rw.fail(op, f"element type {element_type_of(operand)} is not readable with numpy")
        if _kind(dtype) not in kinds:
            return rw.fail(op, f"{op.name} is not folded for {dtype}")
        if constant_attr(operand).is_splat:
            arrays = [np.full((1,), splat_scalar(operand), dtype)]
        else:
            found = self._operands(op, rw)
            if found is None:
                return False
            arrays = found
        with np.errstate(all="ignore"):
            value = function(arrays[0])
        return self._replace(op, value, rw, splat=constant_attr(operand).is_splat)


class FoldBinary(_FoldPattern):
    """f(c1, c2) -> c for elementwise binary ops on constants (add, multiply, maximum, ...).

    Integer division and remainder are not folded when a divisor is 0 (or MIN / -1);
    float maximum/minimum not where -0.0 meets +0.0 (numpy does not pin down the sign of the
    result); integer power is not folded.
    """

    root = tuple(_BINARY)

    def match_and_rewrite(self, op: ir.Operation, rw: Rewriter) -> bool:
        function, kinds = _BINARY[op.name].numpy, _BINARY[op.name].numpy_kinds
        lhs, rhs = op.operands
        if constant_attr(lhs) is None or constant_attr(rhs) is None:
            return rw.fail(op, "an operand is not a constant")
        dtype = numpy_dtype(element_type_of(lhs))
        if dtype is None:
            return rw.fail(op, f"element type {element_type_of(lhs)} is not readable with numpy")
        kind = _kind(dtype)
        if op.name == "stablehlo.divide" and kind == "i":
            function, kinds = _int_divide, "i"
        if kind not in kinds:
            return rw.fail(op, f"{op.name} is not folded for {dtype}")
        splat = _all_splat(op)
        if splat:
            a = np.full((1,), splat_scalar(lhs), dtype)
            b = np.full((1,), splat_scalar(rhs), dtype)
        else:
            found = self._operands(op, rw)
            if found is None:
                return False
            a, b = found
        if kind == "i" and op.name in ("stablehlo.divide", "stablehlo.remainder"):
            if np.any(b == 0):
                return rw.fail(op, "integer division by zero is implementation-defined")
            if dtype.kind == "i" and np.any((a == np.iinfo(dtype).min) & (b == -1)):
                return rw.fail(op, "integer MIN / -1 overflows")
        if kind == "f" and op.name in ("stablehlo.maximum", "stablehlo.minimum"):
            if np.any((a == 0) & (b == 0) & (np.signbit(a) != np.signbit(b))):
                return rw.fail(op, "-0.0 against +0.0: numpy does not pin down the sign of the result")
        with np.errstate(all="ignore"):
            value = np.asarray(function(a, b)).astype(dtype, copy=False)
        return self._replace(op, value, rw, splat=splat)


class FoldCompare(_FoldPattern):
    """compare(c1, c2, dir) -> c (i1) for EQ, NE, LT, LE, GT, GE; not for TOTALORDER."""

    root = "stablehlo.compare"

    def match_and_rewrite(self, op: ir.Operation, rw: Rewriter) -> bool:
        direction = stablehlo.ComparisonDirectionAttr(op.attributes["comparison_direction"]).value
        if "compare_type" in op.attributes:
            compare_type = stablehlo.ComparisonTypeAttr(op.attributes["compare_type"]).value
            if compare_type == "TOTALORDER":
                return rw.fail(op, "TOTALORDER comparisons are not folded")
        arrays = self._operands(op, rw)
        if arrays is None:
            return False
        return self._replace(op, _COMPARE[direction](arrays[0], arrays[1]), rw)


class FoldSelect(_FoldPattern):
    """select(c_pred, c1, c2) -> c."""

    root = "stablehlo.select"

    def match_and_rewrite(self, op: ir.Operation, rw: Rewriter) -> bool:
        arrays = self._operands(op, rw)
        if arrays is None:
            return False
        predicate, on_true, on_false = arrays
        return self._replace(op, np.where(predicate, on_true, on_false), rw)


class FoldConvert(_FoldPattern):
    """convert(c) -> c' (float -> int only when every value is finite and in range)."""

    root = "stablehlo.convert"

    def match_and_rewrite(self, op: ir.Operation, rw: Rewriter) -> bool:
        operand = op.operands[0]
        target = numpy_dtype(element_type_of(op.results[0]))
        if target is None:
            return rw.fail(op, f"target type {element_type_of(op.results[0])} is not readable with numpy")
        if constant_attr(operand) is not None and constant_attr(operand).is_splat:
            source_dtype = numpy_dtype(element_type_of(operand))
            if source_dtype is None:
                return rw.fail(op, f"element type {element_type_of(operand)} is not readable with numpy")
            array = np.full((1,), splat_scalar(operand), source_dtype)
            splat = True
        else:
            found = self._operands(op, rw)
            if found is None:
                return False
            array, splat = found[0], False
        if array.dtype.kind == "f" and target.kind in "iu":
            info = np.iinfo(target)
            if not np.all(np.isfinite(array)) or np.any(array < info.min) or np.any(array >= float(info.max) + 1):
                return rw.fail(op, "float -> int of NaN, inf or out-of-range values is implementation-defined")
        with np.errstate(all="ignore"):
            if array.dtype.kind == "f" and target.kind in "iu":
                value = np.trunc(array).astype(target)  # toward zero, as StableHLO converts
            else:
                value = array.astype(target)
        return self._replace(op, value, rw, splat=splat)


class FoldReshape(_FoldPattern):
    """reshape(c) -> c' (a splat folds at any size)."""

    root = "stablehlo.reshape"

    def match_and_rewrite(self, op: ir.Operation, rw: Rewriter) -> bool:
        return _fold_layout(self, op, rw, lambda array, result_shape: array.reshape(result_shape))


class FoldBroadcastInDim(_FoldPattern):
    """broadcast_in_dim(c, dims) -> c' (a splat folds at any size)."""

    root = "stablehlo.broadcast_in_dim"

    def match_and_rewrite(self, op: ir.Operation, rw: Rewriter) -> bool:
        dims = read_i64_array(op, "broadcast_dimensions")
        return _fold_layout(self, op, rw, lambda array, result_shape: broadcast_in_dim(array, dims, result_shape))


class FoldTranspose(_FoldPattern):
    """transpose(c, perm) -> c' (a splat folds at any size)."""

    root = "stablehlo.transpose"

    def match_and_rewrite(self, op: ir.Operation, rw: Rewriter) -> bool:
        permutation = read_i64_array(op, "permutation")
        return _fold_layout(self, op, rw, lambda array, result_shape: np.transpose(array, permutation))


class FoldSlice(_FoldPattern):
    """slice(c, start, limit, strides) -> c' (a splat folds at any size)."""

    root = "stablehlo.slice"

    def match_and_rewrite(self, op: ir.Operation, rw: Rewriter) -> bool:
        starts = read_i64_array(op, "start_indices")
        limits = read_i64_array(op, "limit_indices")
        strides = read_i64_array(op, "strides")
        index = tuple(slice(s, l, st) for s, l, st in zip(starts, limits, strides))
        return _fold_layout(self, op, rw, lambda array, result_shape: array[index])


class FoldConcatenate(_FoldPattern):
    """concatenate(c1, c2, ..., dim) -> c."""

    root = "stablehlo.concatenate"

    def match_and_rewrite(self, op: ir.Operation, rw: Rewriter) -> bool:
        dimension = ir.IntegerAttr(op.attributes["dimension"]).value
        arrays = self._operands(op, rw)
        if arrays is None:
            return False
        return self._replace(op, np.concatenate(arrays, axis=dimension), rw)


_REDUCERS = {
    "stablehlo.add": np.add,
    "stablehlo.multiply": np.multiply,
    "stablehlo.maximum": np.maximum,
    "stablehlo.minimum": np.minimum,
    "stablehlo.and": np.bitwise_and,
    "stablehlo.or": np.bitwise_or,
}


class FoldReduce(_FoldPattern):
    """reduce(c, init, dims) {add|multiply|maximum|minimum|and|or} -> c'.

    One input, a body that is a single binary op on its two arguments; float sums may be
    associated differently than XLA would (as XLA itself may reassociate).
    """

    root = "stablehlo.reduce"

    def match_and_rewrite(self, op: ir.Operation, rw: Rewriter) -> bool:
        if len(op.operands) != 2:
            return rw.fail(op, "variadic reduce")
        reducer = _single_binary_body(op)
        if reducer is None:
            return rw.fail(op, "body is not one add/multiply/maximum/minimum/and/or of its arguments")
        arrays = self._operands(op, rw)
        if arrays is None:
            return False
        data, init = arrays
        dims = tuple(read_i64_array(op, "dimensions"))
        if data.size == 0:
            return rw.fail(op, "empty input")
        if data.dtype.kind == "f" and reducer in (np.maximum, np.minimum):
            zeros = np.concatenate([data[data == 0].reshape(-1), init[init == 0].reshape(-1)])
            if np.any(np.signbit(zeros)) and not np.all(np.signbit(zeros)):
                return rw.fail(op, "-0.0 and +0.0 in a max/min reduction: numpy does not pin down the sign")
        with np.errstate(all="ignore"):
            value = reducer(reducer.reduce(data, axis=dims), init)
        return self._replace(op, value, rw)


def _single_binary_body(op: ir.Operation):
    block = op.regions[0].blocks[0]
    operations = list(block.operations)
    if len(operations) != 2 or operations[1].name != "stablehlo.return":
        return None
    body_op = operations[0]
    reducer = _REDUCERS.get(body_op.name)
    arguments = list(block.arguments)
    if reducer is None or len(arguments) != 2:
        return None
    if {body_op.operands[0], body_op.operands[1]} != set(arguments) or body_op.operands[0] == body_op.operands[1]:
        return None
    if list(operations[1].operands) != [body_op.results[0]]:
        return None
    return reducer


def broadcast_in_dim(array: np.ndarray, dims: list[int], result_shape: tuple[int, ...]) -> np.ndarray:
    """numpy ``broadcast_in_dim``: operand dim i goes to result dim dims[i]."""
    order = sorted(range(len(dims)), key=lambda i: dims[i])
    moved = np.transpose(array, order) if order else array
    shape = [1] * len(result_shape)
    for i in order:
        shape[dims[i]] = array.shape[i]
    return np.broadcast_to(moved.reshape(shape), result_shape)


def _fold_layout(pattern: _FoldPattern, op: ir.Operation, rw: Rewriter, function) -> bool:
    operand = op.operands[0]
    attr = constant_attr(operand)
    if attr is None:
        return rw.fail(op, "operand is not a constant")
    result_shape = shape_of(op.results[0])
    if result_shape is None or not is_static(op.results[0]):
        return rw.fail(op, "result shape is dynamic")
    if attr.is_splat:
        dtype = numpy_dtype(element_type_of(operand))
        if dtype is None:
            return rw.fail(op, f"element type {element_type_of(operand)} is not readable with numpy")
        # Every element is the same: so is every element of the result.
        return pattern._replace(op, np.full((1,), splat_scalar(operand), dtype), rw, splat=True)
    arrays = pattern._operands(op, rw)
    if arrays is None:
        return False
    return pattern._replace(op, function(arrays[0], result_shape), rw)


@dataclasses.dataclass(frozen=True)
class FoldConstantsPass(PatternRewritePass, ModulePass):
    """Replaces ops whose operands are all constants by one ``stablehlo.constant``.

    Rewrites (``c`` constants):

    - ``f(c) -> c'`` for negate, abs, not, sqrt, rsqrt, exponential, exponential_minus_one,
      log, log_plus_one, logistic, tanh, sine, cosine, floor, ceil, round_nearest_even,
      round_nearest_afz (transcendental ones and rounding on floats only)
    - ``f(c1, c2) -> c`` for add, subtract, multiply, divide, remainder, maximum, minimum,
      power (floats), atan2 (floats), and, or, xor; ``compare(c1, c2) -> c`` (not
      TOTALORDER); ``select(c, c1, c2) -> c``
    - ``convert(c) -> c'`` (float -> int only for finite, in-range values)
    - ``reshape(c)``, ``broadcast_in_dim(c)``, ``transpose(c)``, ``slice(c)``,
      ``concatenate(c1, c2, ...)`` ``-> c'``
    - ``reduce(c, init)`` with an add/multiply/maximum/minimum/and/or body ``-> c'``

    Constraints: every operand is a ``stablehlo.constant`` whose element type numpy holds
    exactly (f16, f32, f64, bool, i8-i64, ui8-ui64); the result shape is static; integer
    division/remainder by 0 and MIN / -1 stay; float max/min where -0.0 meets +0.0 stay
    (numpy does not pin down the sign of the result). Operands and results may have at most ``max-elements``
    elements unless every operand is a splat and the result is a splat, which folds at any
    size (computed on one element).
    """

    name: ClassVar[str] = "fold-constants"

    max_elements: int = 65536
    """Operands and results with more elements than this are not folded (splats excepted)."""

    def __post_init__(self) -> None:
        if self.max_elements < 1:
            raise ValueError(f"option 'max-elements' must be at least 1; got {self.max_elements}")

    def patterns(self) -> list[RewritePattern]:
        limit = self.max_elements
        return [
            FoldUnary(limit),
            FoldBinary(limit),
            FoldCompare(limit),
            FoldSelect(limit),
            FoldConvert(limit),
            FoldReshape(limit),
            FoldBroadcastInDim(limit),
            FoldTranspose(limit),
            FoldSlice(limit),
            FoldConcatenate(limit),
            FoldReduce(limit),
        ]

