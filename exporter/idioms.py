"""Rewrite rules that give back the ONNX ops a lowering spelled out (clean-up, ``cleanup.py``).

StableHLO has no LayerNormalization, Softmax or (for this project's frontend) float32 Erf:
they arrive as reductions and arithmetic, which onnxruntime runs as many small kernels. Each
rule here matches one such spelling and replaces it only where the replacement provably
computes the same function (up to float rounding):

* a keepdims=0 reduction reshaped back to the operand's rank is a keepdims=1 reduction
  (proved on the reshape's target, symbolic dims included: :class:`_Dims`);
* a sum divided by the static count of its reduced elements is a mean;
* the mean/variance normalization is LayerNormalization, the max-shifted exp over its sum
  is Softmax, and the frontend's float64 erf polynomial (``frontend/builders/activations.py``)
  is Erf.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Sequence
from typing import Any

import numpy as np
import onnx_ir as ir
from onnxscript.rewriter import pattern
from onnxscript.rewriter._basics import MatchResult

from onnx_stablehlo.frontend.builders.activations import ERF_COEFFICIENTS

__all__ = ["idiom_rules"]

_FLOATS = frozenset([ir.DataType.FLOAT, ir.DataType.DOUBLE])
_REDUCTIONS = ("ReduceSum", "ReduceMax", "ReduceMin", "ReduceMean", "ReduceProd")


# --- constants --------------------------------------------------------------------------------


def _array(value: ir.Value | None) -> np.ndarray | None:
    """The constant behind ``value`` (initializer or Constant node), else None."""
    if value is None:
        return None
    tensor = value.const_value
    if tensor is None:
        producer = value.producer()
        if producer is not None and producer.op_type == "Constant" and producer.domain == "":
            attr = producer.attributes.get("value")
            tensor = attr.value if attr is not None else None
    if tensor is None:
        return None
    try:
        return tensor.numpy()
    except Exception:  # noqa: BLE001 - an external or odd tensor is no constant for us
        return None


def _scalar(value: ir.Value | None, rank: int | None = None, like: ir.Value | None = None) -> float | None:
    """The value of a constant whose elements are all equal and whose broadcasting with a
    tensor of ``like``'s shape (else of rank ``rank``) changes no shape, else None."""
    array = _array(value)
    if array is None or array.size == 0:
        return None
    if like is not None:
        if like.shape is None or array.ndim > len(like.shape):
            return None
        dims = list(like.shape)[len(like.shape) - array.ndim :]
        if any(d != 1 and d != t for d, t in zip(array.shape, dims)):
            return None
    elif array.size != 1 or (rank is not None and array.ndim > rank):
        return None
    flat = array.reshape(-1)
    first = flat[0]
    if array.size > 1 and not (np.all(flat == first) or (np.isnan(first) and np.all(np.isnan(flat)))):
        return None
    return float(first)


def _axes(node: ir.Node, rank: int) -> list[int] | None:
    """A reduction's or (Un)squeeze's constant axes, normalized against ``rank`` and sorted."""
    if len(node.inputs) > 1 and node.inputs[1] is not None:
        array = _array(node.inputs[1])
        if array is None:
            return None
        axes = [int(a) for a in array.reshape(-1)]
    else:
        attr = node.attributes.get("axes")
        if attr is None:
            return None if node.op_type in ("Unsqueeze",) else list(range(rank))
        axes = list(attr.as_ints())
    if any(not -rank <= a < rank for a in axes):
        return None
    return sorted({a % rank for a in axes})


def _rank(value: ir.Value) -> int | None:
    return None if value.shape is None else len(value.shape)


# --- symbolic dims ----------------------------------------------------------------------------


class _Dims:
    """Dims of values as tokens: an int (static), ``("param", name)`` (a dim_param),
    ``("dim", id(input), i)`` (an unnamed graph-input dim), ``("min", token, int)`` (a slice
    to a run-time bound), or None (unknown). Two equal tokens are equal at run time in every
    run that does not fail: broadcasting's result is the largest of its operands' dims, which
    :meth:`_broadcast` only names when it is provably one of them."""

    _ELEMENTWISE = frozenset(
        "Add Sub Mul Div Pow Where Equal Less Greater LessOrEqual GreaterOrEqual And Or Xor Max Min "
        "Mod BitShift BitwiseAnd BitwiseOr".split()
    )
    _UNARY = frozenset(
        "Cast Exp Log Sqrt Reciprocal Neg Abs Not Erf Tanh Sigmoid Relu Identity Clip Softmax "
        "LogSoftmax LayerNormalization Gelu IsNaN IsInf Sign Floor Ceil Round Sin Cos".split()
    )

    def __init__(self) -> None:
        self._memo: dict[int, tuple | None] = {}
        self._keep: list[ir.Value] = []  # memo keys stay valid while the query lives

    def of(self, value: ir.Value | None) -> tuple | None:
        if value is None:
            return None
        key = id(value)
        if key not in self._memo:
            self._memo[key] = None  # cycles (none in a DAG) read as unknown
            self._keep.append(value)
            self._memo[key] = self._compute(value)
        return self._memo[key]

    def _compute(self, value: ir.Value) -> tuple | None:
        shape = value.shape
        declared: list[Any] | None = None
        if shape is not None:
            declared = []
            for i, d in enumerate(shape):
                if isinstance(d, int):
                    declared.append(d)
                elif d.value is not None:
                    declared.append(("param", d.value))
                elif value.producer() is None:
                    declared.append(("dim", id(value), i))
                else:
                    declared.append(None)
        derived = self._derive(value) if value.producer() is not None else None
        if declared is None:
            return derived
        if derived is None or len(derived) != len(declared):
            return tuple(declared)
        return tuple(d if d is not None else e for d, e in zip(declared, derived))

    @staticmethod
    def _broadcast(columns: Sequence[Sequence[Any]]) -> tuple | None:
        rank = max(len(c) for c in columns)
        out = []
        for i in range(rank):
            tokens = [c[i - rank + len(c)] for c in columns if i - rank + len(c) >= 0]
            tokens = [t for t in tokens if t != 1]
            if not tokens:
                out.append(1)
                continue
            if any(t is None for t in tokens):
                out.append(None)
                continue
            statics = {t for t in tokens if isinstance(t, int)}
            if statics:
                out.append(statics.pop() if len(statics) == 1 else None)
                continue
            names = set(tokens)
            names -= {t for t in names if t[0] == "min" and t[1] in names}
            out.append(names.pop() if len(names) == 1 else None)
        return tuple(out)

    def vector(self, value: ir.Value | None, depth: int = 0) -> list | None:
        """The elements of a small int tensor (a shape computation) as tokens, flattened."""
        if value is None or depth > 32:
            return None
        array = _array(value)
        if array is not None:
            if array.dtype.kind not in "iu" or array.size > 16:
                return None
            return [int(a) for a in array.reshape(-1)]
        node = value.producer()
        if node is None or node.domain != "":
            return None
        op = node.op_type
        if op == "Shape":
            dims = self.of(node.inputs[0])
            if dims is None:
                return None
            start = node.attributes.get_int("start", 0)
            end = node.attributes.get_int("end", len(dims))
            return list(dims[slice(start, end)])
        if op == "Concat" and node.attributes.get_int("axis", 0) in (0, -1):
            parts = [self.vector(v, depth + 1) for v in node.inputs]
            return None if any(p is None for p in parts) else [t for p in parts for t in p]
        if op in ("Reshape", "Squeeze", "Unsqueeze", "Identity", "Flatten"):
            return self.vector(node.inputs[0], depth + 1)
        if op == "Cast" and node.attributes.get_int("to", 0) in (ir.DataType.INT32, ir.DataType.INT64):
            return self.vector(node.inputs[0], depth + 1)
        if op == "Gather" and node.attributes.get_int("axis", 0) == 0:
            source, index = self.vector(node.inputs[0], depth + 1), _array(node.inputs[1])
            if source is None or index is None:
                return None
            try:
                return [source[int(i)] for i in index.reshape(-1)]
            except IndexError:
                return None
        if op == "Slice":
            source = self.vector(node.inputs[0], depth + 1)
            bounds = [_array(v) if v is not None else None for v in node.inputs[1:]]
            if source is None or bounds[0] is None or bounds[1] is None:
                return None
            step = 1 if len(bounds) < 4 or bounds[3] is None else int(bounds[3].reshape(-1)[0])
            return source[int(bounds[0].reshape(-1)[0]) : int(bounds[1].reshape(-1)[0]) : step]
        return None

    def _derive(self, value: ir.Value) -> tuple | None:
        node = value.producer()
        if node is None or node.domain != "" or value is not node.outputs[0]:
            return None
        op = node.op_type
        inputs = node.inputs
        if op in self._ELEMENTWISE:
            columns = [self.of(v) for v in inputs]
            return None if not columns or any(c is None for c in columns) else self._broadcast(columns)
        if op in self._UNARY:
            return self.of(inputs[0])
        if op == "Transpose":
            dims = self.of(inputs[0])
            if dims is None:
                return None
            perm = node.attributes.get("perm")
            order = list(perm.as_ints()) if perm is not None else list(range(len(dims)))[::-1]
            return tuple(dims[p] for p in order)
        if op == "Reshape":
            target = self.vector(inputs[1])
            if target is None or any(isinstance(t, int) and t < 0 for t in target):
                return None
            if node.attributes.get_int("allowzero", 0) == 0 and 0 in target:
                return None
            return tuple(target)
        if op == "Expand":
            dims, target = self.of(inputs[0]), self.vector(inputs[1])
            return None if dims is None or target is None else self._broadcast([dims, target])
        if op in ("Unsqueeze", "Squeeze"):
            dims = self.of(inputs[0])
            if dims is None:
                return None
            if op == "Squeeze":
                axes = _axes(node, len(dims))
                return None if axes is None else tuple(d for i, d in enumerate(dims) if i not in axes)
            axes = _axes(node, len(dims) + (len(_array(inputs[1]).reshape(-1)) if _array(inputs[1]) is not None else 0))
            if axes is None:
                return None
            rest = iter(dims)
            return tuple(1 if i in axes else next(rest) for i in range(len(dims) + len(axes)))
        if op in _REDUCTIONS:
            dims = self.of(inputs[0])
            if dims is None:
                return None
            axes = _axes(node, len(dims))
            if axes is None:
                return None
            if node.attributes.get_int("keepdims", 1):
                return tuple(1 if i in axes else d for i, d in enumerate(dims))
            return tuple(d for i, d in enumerate(dims) if i not in axes)
        if op == "Gather":
            data, index = self.of(inputs[0]), self.of(inputs[1])
            if data is None or index is None:
                return None
            axis = node.attributes.get_int("axis", 0) % len(data)
            return (*data[:axis], *index, *data[axis + 1 :])
        if op == "MatMul":
            a, b = self.of(inputs[0]), self.of(inputs[1])
            if a is None or b is None or len(a) < 2 or len(b) < 2:
                return None
            batch = self._broadcast([a[:-2], b[:-2]]) if len(a) > 2 or len(b) > 2 else ()
            return None if batch is None else (*batch, a[-2], b[-1])
        if op == "Slice":
            return self._slice(node)
        if op == "Range":
            start, delta = _scalar(inputs[0]), _scalar(inputs[2])
            limit = self.vector(inputs[1])
            if start == 0 and delta == 1 and limit is not None and len(limit) == 1:
                return (limit[0],)
            return None
        return None

    def _slice(self, node: ir.Node) -> tuple | None:
        dims = self.of(node.inputs[0])
        if dims is None:
            return None
        starts = _array(node.inputs[1])
        ends = self.vector(node.inputs[2])
        axes = _array(node.inputs[3]) if len(node.inputs) > 3 and node.inputs[3] is not None else None
        steps = _array(node.inputs[4]) if len(node.inputs) > 4 and node.inputs[4] is not None else None
        if starts is None or ends is None:
            return None
        starts_list = [int(s) for s in starts.reshape(-1)]
        axes_list = list(range(len(starts_list))) if axes is None else [int(a) % len(dims) for a in axes.reshape(-1)]
        if steps is not None and any(int(s) != 1 for s in steps.reshape(-1)):
            return None
        out = list(dims)
        for axis, start, end in zip(axes_list, starts_list, ends):
            if start != 0:
                out[axis] = None
            elif isinstance(end, int):
                out[axis] = None if end < 0 or not isinstance(dims[axis], int) else min(end, dims[axis])
            elif end == dims[axis]:
                out[axis] = end
            elif isinstance(dims[axis], int) and end[0] != "min":
                out[axis] = ("min", end, dims[axis])
            else:
                out[axis] = None
        return tuple(out)


@contextlib.contextmanager
def _deep_recursion(limit: int = 20000):
    """Dims are found by walking producers, which in a deep network recurses deeply."""
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(max(old, limit))
    try:
        yield
    finally:
        sys.setrecursionlimit(old)


# --- rules ------------------------------------------------------------------------------------


class ReshapedReduction(pattern.RewriteRuleClassBase):
    """Reshape(R(x, axes, keepdims=0), s) -> R(x, axes, keepdims=1): s provably x's shape with 1 at axes."""

    def __init__(self, op_type: str):
        super().__init__(f"Reshaped{op_type}")
        self._op_type = op_type

    def pattern(self, op, x, axes, shape):
        return op.Reshape(getattr(op, self._op_type)(x, axes, keepdims=0), shape)

    def check(self, context, x, axes, shape, **_) -> MatchResult:
        result = MatchResult()
        rank = _rank(x)
        array = _array(axes)
        if rank is None or array is None or array.size == 0:
            return result.fail("rank or axes unknown")
        normalized = {int(a) % rank for a in array.reshape(-1)}
        with _deep_recursion():
            dims = _Dims()
            operand, target = dims.of(x), dims.vector(shape)
        if operand is None or target is None or len(target) != rank:
            return result.fail("shapes unknown")
        expected = [1 if i in normalized else d for i, d in enumerate(operand)]
        if any(e is None for e in expected) or list(target) != expected:
            return result.fail("the reshape is not the keepdims shape")
        return result

    def rewrite(self, op, x, axes, shape, **_):
        return getattr(op, self._op_type)(x, axes, keepdims=1)


class UnsqueezedReduction(pattern.RewriteRuleClassBase):
    """Unsqueeze(R(x, axes, keepdims=0), axes) -> R(x, axes, keepdims=1): the same axes, normalized."""

    def __init__(self, op_type: str):
        super().__init__(f"Unsqueezed{op_type}")
        self._op_type = op_type

    def pattern(self, op, x, axes, unsqueeze_axes):
        return op.Unsqueeze(getattr(op, self._op_type)(x, axes, keepdims=0), unsqueeze_axes)

    def check(self, context, x, axes, unsqueeze_axes, **_) -> MatchResult:
        result = MatchResult()
        rank = _rank(x)
        reduced, inserted = _array(axes), _array(unsqueeze_axes)
        if rank is None or reduced is None or inserted is None or reduced.size == 0:
            return result.fail("rank or axes unknown")
        if sorted({int(a) % rank for a in reduced.reshape(-1)}) != sorted(int(a) % rank for a in inserted.reshape(-1)):
            return result.fail("different axes")
        return result

    def rewrite(self, op, x, axes, unsqueeze_axes, **_):
        return getattr(op, self._op_type)(x, axes, keepdims=1)


class MeanFromSum(pattern.RewriteRuleClassBase):
    """Div(ReduceSum(x, axes, keepdims=k), N) -> ReduceMean(x, axes, keepdims=k): N the static count reduced."""

    def pattern(self, op, x, axes, count):
        return op.Div(op.ReduceSum(x, axes, _outputs=["total"]), count)

    def check(self, context, x, axes, count, total, **_) -> MatchResult:
        result = MatchResult()
        node = total.producer()
        rank = _rank(x)
        if x.dtype not in _FLOATS or rank is None or node.attributes.get_int("noop_with_empty_axes", 0):
            return result.fail("not a float reduction of known rank")
        normalized = _axes(node, rank)
        if not normalized:
            return result.fail("axes unknown")
        reduced = [x.shape[i] for i in normalized]
        if not all(isinstance(d, int) for d in reduced):
            return result.fail("a reduced dim is symbolic")
        value = _scalar(count, like=total)
        if value is None or value != float(np.prod(reduced)):
            return result.fail("the divisor is not the count")
        self._keepdims = node.attributes.get_int("keepdims", 1)
        return result

    def rewrite(self, op, x, axes, count, total, **_):
        return op.ReduceMean(x, axes, keepdims=self._keepdims)


def _normalized_axis(axes: ir.Value, other: ir.Value, rank: int) -> int | None:
    """The first axis of trailing ``axes`` (both reductions' own, the same), as ``axis - rank``."""
    first, second = _array(axes), _array(other)
    if first is None or second is None:
        return None
    a = sorted({int(v) % rank for v in first.reshape(-1)})
    b = sorted({int(v) % rank for v in second.reshape(-1)})
    if a != b or not a or a != list(range(a[0], rank)):
        return None
    return a[0] - rank


class LayerNormFusion(pattern.RewriteRuleClassBase):
    """(x - mean(x)) / sqrt(mean((x - mean(x))^2) + eps) * w (+ b) -> LayerNormalization(x, w, b, axis, eps): trailing axes, w/b over them."""

    _FORMS = ("reciprocal_div", "div", "reciprocal")

    def __init__(self, bias: bool, form: str):
        super().__init__(f"LayerNorm{'WithBias' if bias else ''}_{form}")
        self._bias, self._form = bias, form

    def pattern(self, op, x, axes, axes2, epsilon, one, scale, bias):
        deviation = op.Sub(x, op.ReduceMean(x, axes, keepdims=1))
        variance = op.ReduceMean(op.Mul(deviation, deviation), axes2, keepdims=1)
        std = op.Sqrt(op.Add(variance, epsilon))
        if self._form == "reciprocal_div":
            normalized = op.Mul(deviation, op.Div(one, std))
        elif self._form == "div":
            normalized = op.Div(deviation, std)
        else:
            normalized = op.Mul(deviation, op.Reciprocal(std))
        scaled = op.Mul(normalized, scale)
        return op.Add(scaled, bias) if self._bias else scaled

    def _affine(self, value: ir.Value, x: ir.Value, axis: int) -> tuple[ir.Value, bool] | None:
        """``value`` as a tensor of the normalized shape: itself, the input of its Unsqueeze, or
        (True) to be reshaped; None when it varies along other dims or broadcasts."""
        norm = list(x.shape)[axis:]
        if value.shape is None or not all(isinstance(d, int) for d in norm):
            return None
        dims = list(value.shape)
        if not all(isinstance(d, int) for d in dims) or len(dims) > len(x.shape):
            return None
        lead = len(dims) - len(norm)
        if lead < 0 or any(d != 1 for d in dims[:lead]) or dims[lead:] != norm:
            return None
        if lead == 0:
            return value, False
        producer = value.producer()
        if producer is not None and producer.op_type == "Unsqueeze" and producer.domain == "":
            source = producer.inputs[0]
            if source.shape is not None and list(source.shape) == norm:
                return source, False
        return value, True

    def check(self, context, x, axes, axes2, epsilon, scale, bias=None, one=None, **_) -> MatchResult:
        result = MatchResult()
        rank = _rank(x)
        if x.dtype not in _FLOATS or rank is None:
            return result.fail("not a float of known rank")
        axis = _normalized_axis(axes, axes2, rank)
        if axis is None:
            return result.fail("not the same trailing axes")
        eps = _scalar(epsilon, like=x)
        if eps is None or (one is not None and _scalar(one, like=x) != 1.0):
            return result.fail("epsilon (or the 1 of 1/std) not a constant")
        self._axis, self._eps = axis, eps
        self._scale = self._affine(scale, x, axis)
        self._bias_value = self._affine(bias, x, axis) if self._bias else None
        if self._scale is None or (self._bias and self._bias_value is None):
            return result.fail("scale or bias not of the normalized shape")
        if scale.dtype != x.dtype or (self._bias and bias.dtype != x.dtype):
            return result.fail("mixed dtypes")
        return result

    def rewrite(self, op, x, **_):
        norm = [int(d) for d in list(x.shape)[self._axis :]]

        def tensor(found):
            value, reshape = found
            return op.Reshape(value, op.Constant(value_ints=norm)) if reshape else value

        inputs = [x, tensor(self._scale)]
        if self._bias:
            inputs.append(tensor(self._bias_value))
        return op.LayerNormalization(*inputs, axis=self._axis, epsilon=self._eps, stash_type=x.dtype)


def _is_nan_any(value: ir.Value, x: ir.Value, axes: list[int]) -> bool:
    """``value`` is "some element of x along axes is NaN": Cast(ReduceMax(Cast(IsNaN(x))), bool)."""
    node = value.producer()
    if node is None or node.op_type != "Cast" or node.attributes.get_int("to", 0) != ir.DataType.BOOL:
        return False
    node = node.inputs[0].producer()
    if node is None or node.op_type != "ReduceMax" or node.attributes.get_int("keepdims", 1) != 0:
        return False
    if _axes(node, len(x.shape)) != axes:
        return False
    node = node.inputs[0].producer()
    if node is None or node.op_type != "Cast":
        return False
    node = node.inputs[0].producer()
    return node is not None and node.op_type == "IsNaN" and node.inputs[0] is x


def _is_row_max(shift: ir.Value, x: ir.Value, axis: int) -> bool:
    """``shift`` is the max of ``x`` along ``axis`` with keepdims wherever that row has no NaN:
    ReduceMax(x, [axis], keepdims=1), or Unsqueeze(m, [axis]) of a keepdims=0 max ``m``, which
    JAX wraps as Max(-inf, Where(<row has a NaN>, NaN, m))."""
    rank = len(x.shape)
    node = shift.producer()
    if node is None or node.domain != "":
        return False
    if node.op_type == "ReduceMax":
        return node.inputs[0] is x and node.attributes.get_int("keepdims", 1) == 1 and _axes(node, rank) == [axis]
    if node.op_type != "Unsqueeze" or _axes(node, rank) != [axis]:
        return False
    value = node.inputs[0]
    for _ in range(4):
        node = value.producer()
        if node is None or node.domain != "":
            return False
        if node.op_type == "ReduceMax":
            return node.inputs[0] is x and node.attributes.get_int("keepdims", 1) == 0 and _axes(node, rank) == [axis]
        if node.op_type == "Max" and len(node.inputs) == 2:
            bounds = [_scalar(v, rank - 1) for v in node.inputs]
            if bounds[0] == -np.inf:
                value = node.inputs[1]
            elif bounds[1] == -np.inf:
                value = node.inputs[0]
            else:
                return False
        elif node.op_type == "Where":
            fill = _scalar(node.inputs[1], rank - 1)
            if fill is None or not np.isnan(fill) or not _is_nan_any(node.inputs[0], x, [axis]):
                return False
            value = node.inputs[2]
        else:
            return False
    return False


class SoftmaxFusion(pattern.RewriteRuleClassBase):
    """Exp(x - m) / ReduceSum(Exp(x - m), [a], keepdims=1) -> Softmax(x, axis=a): m the max of x along a (keepdims)."""

    def pattern(self, op, x, shift, axes):
        exp = op.Exp(op.Sub(x, shift))
        return op.Div(exp, op.ReduceSum(exp, axes, keepdims=1))

    def check(self, context, x, shift, axes, **_) -> MatchResult:
        result = MatchResult()
        rank = _rank(x)
        array = _array(axes)
        if x.dtype not in _FLOATS or rank is None or array is None:
            return result.fail("not a float of known rank, or axes unknown")
        normalized = {int(v) % rank for v in array.reshape(-1)}
        if len(normalized) != 1:
            return result.fail("not one axis")
        self._axis = normalized.pop()
        if not _is_row_max(shift, x, self._axis):
            return result.fail("the shift is not the row max")
        return result

    def rewrite(self, op, x, **_):
        return op.Softmax(x, axis=self._axis)


class ErfPolynomial(pattern.RewriteRuleClassBase):
    """Cast(w * P(w*w/8 - 1), float) -> Erf(x), w = Clip(Cast(x, double), -4, 4): P the frontend's erf fit."""

    def pattern(self, op, wide, poly):
        return op.Cast(op.Mul(wide, poly), to=ir.DataType.FLOAT)

    @staticmethod
    def _node(value: ir.Value, op_type: str) -> ir.Node | None:
        node = value.producer()
        if node is None or node.op_type != op_type or node.domain != "" or len(node.inputs) < 2:
            return None
        return node

    def _split(self, node: ir.Node, like: ir.Value) -> tuple[float, ir.Value] | None:
        """A binary node's constant operand and its other operand."""
        for k in (0, 1):
            value = _scalar(node.inputs[k], like=like)
            if value is not None:
                return value, node.inputs[1 - k]
        return None

    def check(self, context, wide, poly, **_) -> MatchResult:
        result = MatchResult()
        clip = wide.producer()
        if clip is None or clip.op_type != "Clip" or len(clip.inputs) != 3:
            return result.fail("not a Clip")
        cast = clip.inputs[0].producer() if clip.inputs[0] is not None else None
        if cast is None or cast.op_type != "Cast" or cast.attributes.get_int("to", 0) != ir.DataType.DOUBLE:
            return result.fail("not a Cast to double")
        x = cast.inputs[0]
        rank = _rank(x)
        if x.dtype != ir.DataType.FLOAT or rank is None:
            return result.fail("not a float32 of known rank")
        if _scalar(clip.inputs[1], like=x) != -4.0 or _scalar(clip.inputs[2], like=x) != 4.0:
            return result.fail("not clamped to [-4, 4]")
        t = None
        value = poly
        for coefficient in ERF_COEFFICIENTS[:-1]:
            add = self._node(value, "Add")
            split = None if add is None else self._split(add, x)
            if split is None or split[0] != coefficient:
                return result.fail("not the erf polynomial")
            mul = self._node(split[1], "Mul")
            if mul is None:
                return result.fail("not Horner's rule")
            if t is None:
                t = mul.inputs[1]
            if mul.inputs[1] is t:
                value = mul.inputs[0]
            elif mul.inputs[0] is t:
                value = mul.inputs[1]
            else:
                return result.fail("not one t")
        if _scalar(value, like=x) != ERF_COEFFICIENTS[-1]:
            return result.fail("not the leading coefficient")
        sub = self._node(t, "Sub")
        if sub is None or _scalar(sub.inputs[1], like=x) != 1.0:
            return result.fail("t is not x*x/8 - 1")
        scaled = self._node(sub.inputs[0], "Mul")
        split = None if scaled is None else self._split(scaled, x)
        if split is None or split[0] != 0.125:
            return result.fail("t is not x*x/8 - 1")
        square = self._node(split[1], "Mul")
        if square is None or square.inputs[0] is not wide or square.inputs[1] is not wide:
            return result.fail("t is not x*x/8 - 1")
        self._x = x
        return result

    def rewrite(self, op, wide, poly, **_):
        return op.Erf(self._x)


class UnsqueezedOperand(pattern.RewriteRuleClassBase):
    """Op(y, Unsqueeze(b, [0..k-1])) -> Op(y, b): y of rank >= the Unsqueeze's (broadcasting pads b alike)."""

    def __init__(self, op_type: str, swapped: bool):
        super().__init__(f"UnsqueezedOperand{op_type}{'Swapped' if swapped else ''}")
        self._op_type, self._swapped = op_type, swapped

    def pattern(self, op, y, b, axes):
        operand = op.Unsqueeze(b, axes)
        return getattr(op, self._op_type)(*((operand, y) if self._swapped else (y, operand)))

    def check(self, context, y, b, axes, **_) -> MatchResult:
        result = MatchResult()
        array = _array(axes)
        if y.shape is None or b.shape is None or array is None:
            return result.fail("ranks or axes unknown")
        out_rank = len(b.shape) + array.size
        if sorted(int(a) % out_rank for a in array.reshape(-1)) != list(range(array.size)):
            return result.fail("not leading axes")
        if len(y.shape) < out_rank:
            return result.fail("the other operand's rank is smaller")
        return result

    def rewrite(self, op, y, b, **_):
        # Add/Mul commute: the variable operand first, the bias second (as exporters write them)
        first, second = (b, y) if self._swapped and self._op_type in ("Sub", "Div") else (y, b)
        return getattr(op, self._op_type)(first, second)


def idiom_rules() -> list:
    """The rules, in the order they build on each other (a rewrite pass repeats until none applies)."""
    reductions = ("ReduceSum", "ReduceMax", "ReduceMin", "ReduceMean")
    return [
        *(ReshapedReduction.rule(name) for name in reductions),
        *(UnsqueezedReduction.rule(name) for name in reductions),
        MeanFromSum.rule(),
        *(r for bias in (True, False) for form in LayerNormFusion._FORMS for r in LayerNormFusion.rule(bias, form).commute()),
        SoftmaxFusion.rule(),
        *ErfPolynomial.rule().commute(),
        *(UnsqueezedOperand.rule(name, swapped) for name in ("Add", "Mul", "Sub", "Div") for swapped in (False, True)),
    ]
