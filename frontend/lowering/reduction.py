"""Lowering rules: reductions (ReduceSum, ReduceMean, ... and ArgMax/ArgMin).

Every ``Reduce*`` op becomes ``map -> stablehlo.reduce -> finish``:

===============  ==================  =======================  ===========================
op               map (elementwise)   reduce body, init        finish
===============  ==================  =======================  ===========================
ReduceSum        -                   add, 0                   -
ReduceMean       -                   add, 0                   divide by the reduced count
ReduceProd       -                   multiply, 1              -
ReduceMax        -                   maximum, -inf / min      -  (bool: or, false)
ReduceMin        -                   minimum, +inf / max      -  (bool: and, true)
ReduceL1         abs                 add, 0                   -
ReduceL2         x * x               add, 0                   sqrt
ReduceSumSquare  x * x               add, 0                   -
ReduceLogSum     -                   add, 0                   log
ReduceLogSumExp  exp(x - max)        add, 0                   log(.) + max
===============  ==================  =======================  ===========================

so a reduction over an empty set yields the init value pushed through ``finish`` (0 for sums,
-inf for ReduceMax and ReduceLogSum, NaN for ReduceMean), as the spec asks. ``axes`` is an
attribute up to ReduceSum-11 and the other ops' revision 13, an optional constant input from
ReduceSum-13 and the others' revision 18. No axes reduces everything, unless
``noop_with_empty_axes=1``: then nothing is reduced but map and finish still apply (the
reduction over an empty axis set), as onnx.reference does.

float16/bfloat16 sums (Sum, Mean, L1, L2, SumSquare, LogSum, LogSumExp, Prod) accumulate in
float32 and convert back; integer inputs of L2/LogSum/LogSumExp are computed in float64 and
truncated back, as onnx.reference does.

``ArgMax``/``ArgMin`` are one two-operand ``stablehlo.reduce`` over ``(value, iota index)``
whose body keeps the better value (NaN counts as the best, as in numpy) and, on ties, the
first index (the last with ``select_last_index=1``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence

import numpy as np
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import stablehlo

from onnx_stablehlo.frontend import builders, dtypes
from onnx_stablehlo.frontend.context import LoweringContext, OnnxNode
from onnx_stablehlo.frontend.dtypes import DataType
from onnx_stablehlo.frontend.registry import lowering
from onnx_stablehlo.frontend.shapes import Dim, product

@dataclasses.dataclass(frozen=True)
class _Reduction:
    """How one Reduce* op is computed.

    Attributes:
        body: the reduce body builder (``stablehlo.add`` ...), given the (compute) dtype.
        init: the body's identity, given the (compute) dtype.
        map: elementwise op before the reduction (``None``: identity).
        finish: op after the reduction, given (reduced value, element count); ``None``: identity.
        widen_narrow_floats: float16/bfloat16 are computed in float32.
        float_only: integers are computed in float64 and truncated back.
        description: what it lowers to, for the docstring.
    """

    body: Callable[[DataType], Callable]
    init: Callable[[DataType], float | int | bool]
    map: Callable[[ir.Value], ir.Value] | None = None
    finish: Callable[[ir.Value, int], ir.Value] | None = None
    widen_narrow_floats: bool = True
    float_only: bool = False
    description: str = ""


def _add(dtype: DataType) -> Callable:
    return stablehlo.or_ if dtype == DataType.BOOL else stablehlo.add


def _square(x: ir.Value) -> ir.Value:
    return stablehlo.multiply(x, x)


def _divide_by_count(total: ir.Value, count: Dim) -> ir.Value:
    """``total / count``; an empty reduction (count 0, total 0) gives 0, as onnxruntime and
    torch do (an EmbeddingBag with an empty bag), where the spec's formula gives NaN."""
    shape = builders.dims_of(total)
    if isinstance(count, int):
        scalar = builders.splat(max(count, 1), builders.dtype_of(total))
    else:  # a symbolic count: its size at run time, at least 1
        size = builders.dim_value(count)
        size = stablehlo.maximum(size, builders.constant(np.array(1, np.int64)))
        scalar = builders.convert(size, builders.dtype_of(total))
    divisor = builders.broadcast_to(scalar, shape, dims=[])
    return builders.divide(total, divisor)


_REDUCTIONS: dict[str, _Reduction] = {
    "ReduceSum": _Reduction(_add, lambda d: 0, description="stablehlo.reduce with an add body"),
    "ReduceMean": _Reduction(
        _add, lambda d: 0, finish=_divide_by_count, description="an add stablehlo.reduce divided by the count"
    ),
    "ReduceProd": _Reduction(
        lambda d: stablehlo.and_ if d == DataType.BOOL else stablehlo.multiply,
        lambda d: True if d == DataType.BOOL else 1,
        description="stablehlo.reduce with a multiply body",
    ),
    "ReduceMax": _Reduction(
        lambda d: stablehlo.or_ if d == DataType.BOOL else stablehlo.maximum,
        dtypes.lowest,
        widen_narrow_floats=False,
        description="stablehlo.reduce with a maximum body (or for bool)",
    ),
    "ReduceMin": _Reduction(
        lambda d: stablehlo.and_ if d == DataType.BOOL else stablehlo.minimum,
        dtypes.highest,
        widen_narrow_floats=False,
        description="stablehlo.reduce with a minimum body (and for bool)",
    ),
    "ReduceL1": _Reduction(
        _add, lambda d: 0, map=lambda x: stablehlo.abs(x), description="abs, then an add stablehlo.reduce"
    ),
    "ReduceL2": _Reduction(
        _add,
        lambda d: 0,
        map=_square,
        finish=lambda x, n: stablehlo.sqrt(x),
        float_only=True,
        description="x * x, an add stablehlo.reduce, then sqrt",
    ),
    "ReduceSumSquare": _Reduction(_add, lambda d: 0, map=_square, description="x * x, then an add stablehlo.reduce"),
    "ReduceLogSum": _Reduction(
        _add,
        lambda d: 0,
        finish=lambda x, n: stablehlo.log(x),
        float_only=True,
        description="an add stablehlo.reduce, then log",
    ),
    # ReduceLogSumExp is special-cased in _reduce (max-shifted for stability).
    "ReduceLogSumExp": _Reduction(
        _add, lambda d: 0, float_only=True, description="max + log(sum(exp(x - max))) (two stablehlo.reduce)"
    ),
}


def _reduce_axes(ctx: LoweringContext, node: OnnxNode, axes_from_input: bool) -> list[int] | None:
    """The normalized axes to reduce, ``None`` for every axis, ``[]`` for none (noop)."""
    rank = ctx.input_rank(0)
    if axes_from_input:
        given = ctx.optional_constant_input(1)
        axes = None if given is None else [int(a) for a in np.asarray(given).reshape(-1)]
        noop = bool(node.attr_int("noop_with_empty_axes"))
    else:
        axes = node.attr_ints("axes")
        noop = False
    if not axes:
        return [] if noop else None
    normalized = sorted({ctx.axis(a, rank) for a in axes})
    if rank == 0:
        return None  # a scalar has no dims: axes 0 / -1 mean "the only element"
    return normalized


def _reduce(ctx: LoweringContext, node: OnnxNode, spec: _Reduction, axes_from_input: bool) -> ir.Value:
    x = ctx.input(0)
    shape = builders.dims_of(x)
    dtype = builders.dtype_of(x)
    axes = _reduce_axes(ctx, node, axes_from_input)
    if axes is None:
        axes = list(range(len(shape)))
    keepdims = node.attr_int("keepdims") == 1  # 2, -1 ...: false, as onnxruntime and onnx.reference
    count = product([shape[a] for a in axes])

    compute = dtype
    if spec.float_only and not dtypes.is_float(dtype):
        compute = DataType.DOUBLE
    elif spec.widen_narrow_floats:
        compute = dtypes.wide_dtype(dtype)
    x = builders.convert(x, compute)

    if node.op_type == "ReduceLogSumExp":
        result = _log_sum_exp(x, axes, keepdims)
    else:
        if spec.map is not None:
            x = spec.map(x)
        if axes:
            result = builders.reduce(x, axes, spec.body(compute), spec.init(compute), keepdims)
        else:
            result = x
        if spec.finish is not None:
            result = spec.finish(result, count)
    return builders.convert(result, dtype)


def _log_sum_exp(x: ir.Value, axes: Sequence[int], keepdims: bool) -> ir.Value:
    """``m + log(sum(exp(x - m)))`` with ``m`` the max over ``axes`` (0 where not finite)."""
    dtype = builders.dtype_of(x)
    shape = builders.dims_of(x)
    if not axes:
        return stablehlo.log(stablehlo.exponential(x))
    peak = builders.shift_max(x, axes, keepdims=True)
    finite = stablehlo.is_finite(peak)
    zero = builders.broadcast_to(builders.splat(0, dtype), builders.dims_of(peak), dims=[])
    peak = stablehlo.select(finite, peak, zero)
    shifted = stablehlo.subtract(x, builders.broadcast_to(peak, shape))
    total = builders.reduce(stablehlo.exponential(shifted), axes, stablehlo.add, 0, True)
    result = stablehlo.add(stablehlo.log(total), peak)
    if not keepdims:
        result = builders.reshape(result, [d for i, d in enumerate(shape) if i not in axes])
    return result


def _make_reduce(op_type: str, attr_since: tuple[int, ...], input_since: tuple[int, ...], dtypes_doc: str) -> Callable:
    """The rule ``lower_reduce_<op>`` of a Reduce* op, tagged for each revision; the caller binds
    it to a module-level name, which is how the registry finds it (no ``globals()`` writes)."""
    spec = _REDUCTIONS[op_type]
    first_input = min(input_since)

    def rule(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value]:
        return [_reduce(ctx, node, spec, axes_from_input=node.since_version >= first_input)]

    name = "lower_" + "".join("_" + c.lower() if c.isupper() else c for c in op_type).lstrip("_")
    rule.__name__ = rule.__qualname__ = name
    rule.__doc__ = (
        f"Lowers {op_type} to {spec.description}.\n\n"
        f"Spec: onnx.ai/onnx/operators/onnx__{op_type}.html ({op_type}-"
        f"{', '.join(map(str, attr_since + input_since))}); `axes` is an attribute before "
        f"revision {first_input}, an optional input from it on.\n"
        "Shapes: data [d0, ..., dn] (symbolic dims allowed); axes (input) [k] int64, must be constant.\n"
        f"Dtypes: {dtypes_doc}.\n"
        + "Deviations: keepdims other than 0 and 1 (2, -1, ...) is false, as in onnxruntime and "
        "onnx.reference (the spec says only 1 keeps the dims)."
        + (
            " The mean over an empty set is 0, as in onnxruntime and torch (the spec's "
            "sum / count is NaN)."
            if op_type == "ReduceMean"
            else ""
        )
        + "\n"
        + "Raises: NonConstantInputError if `axes` is computed at run time; ShapeError for an axis out of range."
    )
    for version in attr_since + input_since:
        rule = lowering(op_type, since=version)(rule)
    return rule


# Revisions: 11 allowed negative axes, 12 added int8/uint8 (Max/Min), 13 added bfloat16, 18 moved
# axes to an input (13 for ReduceSum), 20 added bool (Max/Min), 28 dropped integers (LogSum*).
_NUMERIC = "f16, bf16 (accumulated in f32), f32, f64, i32, i64, ui32, ui64"
lower_reduce_sum = _make_reduce("ReduceSum", (1, 11), (13,), _NUMERIC)
lower_reduce_mean = _make_reduce("ReduceMean", (1, 11, 13), (18,), _NUMERIC)
lower_reduce_prod = _make_reduce("ReduceProd", (1, 11, 13), (18,), _NUMERIC)
lower_reduce_max = _make_reduce("ReduceMax", (1, 11, 12, 13), (18, 20), "f16, bf16, f32, f64, i8 ... i64, ui8 ... ui64, bool")
lower_reduce_min = _make_reduce("ReduceMin", (1, 11, 12, 13), (18, 20), "f16, bf16, f32, f64, i8 ... i64, ui8 ... ui64, bool")
lower_reduce_l1 = _make_reduce("ReduceL1", (1, 11, 13), (18,), _NUMERIC)
lower_reduce_l2 = _make_reduce("ReduceL2", (1, 11, 13), (18,), _NUMERIC + " (integers computed in f64)")
lower_reduce_sum_square = _make_reduce("ReduceSumSquare", (1, 11, 13), (18,), _NUMERIC)
lower_reduce_log_sum = _make_reduce("ReduceLogSum", (1, 11, 13), (18, 28), "f16, bf16 (accumulated in f32), f32, f64; integers before 28")
lower_reduce_log_sum_exp = _make_reduce("ReduceLogSumExp", (1, 11, 13), (18, 28), "f16, bf16 (accumulated in f32), f32, f64; integers before 28")


# ArgMax / ArgMin ------------------------------------------------------------------------------


def _arg_reduce(ctx: LoweringContext, node: OnnxNode, direction: str) -> ir.Value:
    """A two-operand stablehlo.reduce over (value, iota index) along ``axis``.

    The body keeps the candidate that compares ``direction`` (GT for max, LT for min) or is
    NaN (the first NaN wins, as numpy's argmax does); on equal values it keeps the smaller
    index, or the larger one with ``select_last_index=1``.
    """
    x = ctx.input(0)
    shape = builders.dims_of(x)
    dtype = builders.dtype_of(x)
    rank = len(shape)
    axis = ctx.attr_axis("axis", rank)
    keepdims = node.attr_int("keepdims") == 1  # 2, -1 ...: false, as onnxruntime and onnx.reference
    last = bool(node.attr_int("select_last_index", 0))
    if dtype == DataType.BOOL:
        x, dtype = builders.convert(x, DataType.UINT8), DataType.UINT8
    index_type = DataType.INT64
    index = builders.iota(shape, axis, index_type)
    init_value = dtypes.lowest(dtype) if direction == "GT" else dtypes.highest(dtype)

    def body(accumulators: list[ir.Value], elements: list[ir.Value]) -> list[ir.Value]:
        (acc_value, acc_index), (value, idx) = accumulators, elements
        better = builders.compare(value, acc_value, direction)
        if dtypes.is_float(dtype):
            value_nan = builders.compare(value, value, "NE")
            acc_nan = builders.compare(acc_value, acc_value, "NE")
            # A NaN candidate wins over a number; two NaNs tie.
            better = stablehlo.and_(stablehlo.or_(better, value_nan), stablehlo.not_(acc_nan))
            tie = stablehlo.or_(builders.compare(value, acc_value, "EQ"), stablehlo.and_(value_nan, acc_nan))
        else:
            tie = builders.compare(value, acc_value, "EQ")
        index_wins = builders.compare(idx, acc_index, "GT" if last else "LT")
        take_index = stablehlo.or_(better, stablehlo.and_(tie, index_wins))
        return [stablehlo.select(better, value, acc_value), stablehlo.select(take_index, idx, acc_index)]

    inits = [builders.splat(init_value, dtype), builders.splat(0, index_type)]
    _, result = builders.reduce_many([x, index], inits, [axis], body)
    if keepdims:
        result = builders.reshape(result, [1 if i == axis else d for i, d in enumerate(shape)])
    return result


@lowering("ArgMax", since=1)
@lowering("ArgMax", since=11)  # 11 allowed negative axis
@lowering("ArgMax", since=12)  # 12 added select_last_index
@lowering("ArgMax", since=13)  # 13 added bfloat16
def lower_arg_max(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value]:
    """Lowers ArgMax to a (value, index) stablehlo.reduce; the result is int64.

    Spec: onnx.ai/onnx/operators/onnx__ArgMax.html (ArgMax-1, 11, 12, 13).
    Shapes: data [d0, ..., dn] (symbolic dims allowed); result without (keepdims=0) or with a
        1 at `axis`.
    Dtypes: every numeric type.
    Deviations: keepdims other than 0 and 1 (2, -1, ...) is false, as in onnxruntime
        (onnx.reference keeps the dims for any non-zero value).
    Raises: ShapeError for an axis out of range.
    """
    return [_arg_reduce(ctx, node, "GT")]


@lowering("ArgMin", since=1)
@lowering("ArgMin", since=11)  # 11 allowed negative axis
@lowering("ArgMin", since=12)  # 12 added select_last_index
@lowering("ArgMin", since=13)  # 13 added bfloat16
def lower_arg_min(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value]:
    """Lowers ArgMin to a (value, index) stablehlo.reduce; the result is int64.

    Spec: onnx.ai/onnx/operators/onnx__ArgMin.html (ArgMin-1, 11, 12, 13).
    Shapes: data [d0, ..., dn] (symbolic dims allowed); result without (keepdims=0) or with a
        1 at `axis`.
    Dtypes: every numeric type.
    Deviations: keepdims other than 0 and 1 (2, -1, ...) is false, as in onnxruntime
        (onnx.reference keeps the dims for any non-zero value).
    Raises: ShapeError for an axis out of range.
    """
    return [_arg_reduce(ctx, node, "LT")]
