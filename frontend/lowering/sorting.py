"""Lowering rules: sorting and selection.

    TopK(x, k)                   -> static shape, k at least half the axis (sort, argsort) or
                                    k >= 64 and at least a fifth of it, float32, 8/16-bit
                                    types (as float32), int32, uint32: one stablehlo.sort of
                                    uint64 keys (value bits << 32 | index; _top_k_packed_sort)
                                 -> static shape, other k, float32 and 8/16-bit types:
                                    chlo.top_k on a canonical copy of x (XLA CPU runs it as a
                                    partial selection; see _top_k_selection)
                                 -> static shape, int32, uint32, int64, uint64: a stablehlo.if
                                    on every value lying within +-2^24: chlo.top_k on x as
                                    float32 (exact there), else the rules below
                                    (_top_k_if_float32_exact)
                                 -> static shape, int32, uint32: the packed-key sort
                                 -> static shape, k <= 16, int64, uint64, float64: k rounds of
                                    reductions over uint64 keys (_top_k_rounds)
                                 -> otherwise: stablehlo.sort of (x, iota) along the axis with
                                    a comparator that breaks ties by index, then stablehlo.slice

TopK's comparator orders NaN above every number (first when ``largest=1``, last otherwise), as
numpy's sort does; equal values keep the lower index first, as the spec requires.

ArgMax and ArgMin live in reduction.py; NonMaxSuppression in detection.py.

Spec: onnx.ai/onnx/operators (TopK).
"""

from __future__ import annotations

import numpy as np
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import chlo, stablehlo

from onnx_stablehlo.errors import ShapeError
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
    static = all(isinstance(d, int) for d in shape)
    if static and builders.dtype_of(x) in _PACKED_DTYPES and _packed_sort_is_faster(shape[axis], k):
        return _top_k_packed_sort(x, k, axis, largest)
    if static and builders.dtype_of(x) in _SELECTION_DTYPES:
        return _top_k_selection(x, k, axis, largest)
    if static and builders.dtype_of(x) in _GUARDED_DTYPES and k > 0:
        return _top_k_if_float32_exact(x, k, axis, largest)
    return _top_k_without_selection(x, k, axis, largest)


def _top_k_without_selection(x: ir.Value, k: int, axis: int, largest: bool) -> list[ir.Value]:
    """TopK of the dtypes XLA's TopK cannot select on exactly: packed-key sort, rounds or sort."""
    shape = builders.dims_of(x)
    static = all(isinstance(d, int) for d in shape)
    if static and builders.dtype_of(x) in _PACKED_DTYPES:
        return _top_k_packed_sort(x, k, axis, largest)
    if static and builders.dtype_of(x) in _ROUNDS_DTYPES and 0 < k <= _MAX_ROUNDS:
        return _top_k_rounds(x, k, axis, largest)
    values, indices = _sort_with_indices(x, axis, descending=largest)
    return [_slice_front(values, axis, k), _slice_front(indices, axis, k)]


# Dtypes whose every value float32 holds exactly: TopK selects on them as float32.
_SELECTION_DTYPES = (
    DataType.FLOAT, DataType.FLOAT16, DataType.BFLOAT16,
    DataType.INT8, DataType.UINT8, DataType.INT16, DataType.UINT16,
)


# Dtypes whose values map to 32 order-preserving bits (through float32, or as int32/uint32).
_PACKED_DTYPES = _SELECTION_DTYPES + (DataType.INT32, DataType.UINT32)


# Integer dtypes float32 does not hold exactly in general, but does whenever every value is
# within +-2^24: TopK checks that at run time and selects as float32 when it holds.
_GUARDED_DTYPES = (DataType.INT32, DataType.UINT32, DataType.INT64, DataType.UINT64)
_FLOAT32_EXACT_LIMIT = 1 << 24


def _top_k_if_float32_exact(x: ir.Value, k: int, axis: int, largest: bool) -> list[ir.Value]:
    """TopK of a static integer ``x`` through XLA's TopK when float32 holds every value exactly.

    A ``stablehlo.if`` on whether every element lies within +-2^24 (one fused pass over ``x``):
    then :func:`_top_k_selection` on ``x`` as float32 (order and equality are those of the
    integers, so values and indices are exact), otherwise :func:`_top_k_without_selection` (the
    packed-key sort for 32-bit, rounds or the sort for 64-bit types). Integer TopK inputs are mostly ids, counts and
    scores far inside that range. Measured with jax on a quiet 2-core machine: int64 64x1000
    k=10 through float32 TopK 0.51 ms, against 2.2 ms for the rounds, 14.5 ms for
    ``jax.lax.top_k`` on int64 (a sort of (values, indices)) and 0.16 ms for onnxruntime.
    """
    dtype = builders.dtype_of(x)
    shape = builders.dims_of(x)
    in_range = builders.compare(x, builders.splat(_FLOAT32_EXACT_LIMIT, dtype, shape), "LE")
    if dtype in (DataType.INT32, DataType.INT64):
        in_range = stablehlo.and_(in_range, builders.compare(x, builders.splat(-_FLOAT32_EXACT_LIMIT, dtype, shape), "GE"))
    exact = builders.reduce(in_range, list(range(len(shape))), stablehlo.and_, True)
    top_shape = list(shape)
    top_shape[axis] = k
    result_types = [builders.tensor_type(top_shape, dtype), builders.tensor_type(top_shape, DataType.INT64)]
    op = stablehlo.IfOp(result_types, exact)
    with ir.InsertionPoint(op.true_branch.blocks.append()):
        stablehlo.return_(_top_k_selection(x, k, axis, largest))
    with ir.InsertionPoint(op.false_branch.blocks.append()):
        stablehlo.return_(_top_k_without_selection(x, k, axis, largest))
    return list(op.results)


# Key width -> the (unsigned, signed, float) dtypes of that width.
_KEY_DTYPES = {
    32: (DataType.UINT32, DataType.INT32, DataType.FLOAT),
    64: (DataType.UINT64, DataType.INT64, DataType.DOUBLE),
}


def _ordered_bits(x: ir.Value, width: int, largest: bool) -> ir.Value:
    """``x`` as unsigned ``width``-bit keys whose unsigned order is TopK's order (ascending, or
    descending with ``largest``: all bits flipped).

    The unsigned dtype is its own key; the signed one has its sign bit flipped (two's
    complement); anything else goes through the float dtype of that width (exact for the types
    the callers pass), every NaN made +NaN and -0.0 made +0.0 (onnxruntime: NaN above every
    number, -0.0 equal to 0.0), and then negative bit patterns are flipped whole and the others
    given the sign bit. :func:`_from_ordered_bits` inverts it.
    """
    unsigned, signed, floating = _KEY_DTYPES[width]
    dtype = builders.dtype_of(x)
    shape = builders.dims_of(x)
    key_type = builders.tensor_type(shape, unsigned)
    sign_bit = builders.splat(1 << (width - 1), unsigned, shape)
    if dtype == unsigned:
        ordered = x
    elif dtype == signed:
        ordered = stablehlo.xor(stablehlo.bitcast_convert(key_type, x), sign_bit)
    else:
        f = builders.convert(x, floating)
        zero = builders.splat(0.0, floating, shape)
        nan = builders.splat(float("nan"), floating, shape)
        f = stablehlo.select(builders.compare(f, f, "NE"), nan, f)
        f = stablehlo.select(builders.compare(f, zero, "EQ"), zero, f)
        bits = stablehlo.bitcast_convert(key_type, f)
        negative = builders.compare(stablehlo.and_(bits, sign_bit), sign_bit, "EQ")
        ordered = stablehlo.select(negative, stablehlo.not_(bits), stablehlo.or_(bits, sign_bit))
    return stablehlo.not_(ordered) if largest else ordered


def _from_ordered_bits(ordered: ir.Value, dtype: DataType, largest: bool) -> ir.Value:
    """The values of ``dtype`` whose :func:`_ordered_bits` keys are ``ordered`` (a selected -0.0
    comes back as +0.0 and a NaN as +NaN)."""
    width = 32 if builders.dtype_of(ordered) == DataType.UINT32 else 64
    unsigned, signed, floating = _KEY_DTYPES[width]
    shape = builders.dims_of(ordered)
    if largest:
        ordered = stablehlo.not_(ordered)
    sign_bit = builders.splat(1 << (width - 1), unsigned, shape)
    if dtype == unsigned:
        return ordered
    if dtype == signed:
        return stablehlo.bitcast_convert(builders.tensor_type(shape, dtype), stablehlo.xor(ordered, sign_bit))
    was_positive = builders.compare(stablehlo.and_(ordered, sign_bit), sign_bit, "EQ")
    bits = stablehlo.select(was_positive, stablehlo.xor(ordered, sign_bit), stablehlo.not_(ordered))
    return builders.convert(stablehlo.bitcast_convert(builders.tensor_type(shape, floating), bits), dtype)


# 64-bit dtypes (no room for an index beside the value in a uint64 key): a small k selects in
# rounds of reductions instead of a sort of (values, indices).
_ROUNDS_DTYPES = (DataType.INT64, DataType.UINT64, DataType.DOUBLE)
_MAX_ROUNDS = 16


def _top_k_rounds(x: ir.Value, k: int, axis: int, largest: bool) -> list[ir.Value]:
    """TopK of a static 64-bit ``x`` as ``k`` rounds of two single-operand reductions.

    The values are mapped to uint64 keys whose unsigned order is the wanted order
    (:func:`_ordered_bits`). Each round takes the minimum key among the positions not yet taken, then the lowest such position
    holding it (ties by lower index, as the spec asks), and marks it taken; the value is decoded
    from the key.

    XLA CPU calls a sort's comparator per comparison when it sorts (values, indices), but runs a
    one-operand reduction as a fused loop: measured with jax on 2 loaded cores, int64 3x20x50
    k=5 0.14-0.25 ms against 0.61-0.69 ms for the sort, 64x1000 k=10 2.2-2.5 ms against 18-20
    ms. The rounds grow with ``k`` (64x1000 k=100 would take longer than the sort), hence
    ``k <= _MAX_ROUNDS``.

    Deviation: as the other paths, a selected float64 -0.0 is returned as +0.0 and a NaN as the
    canonical +NaN (indices are exact).
    """
    dtype = builders.dtype_of(x)
    shape = builders.dims_of(x)
    n = shape[axis]
    ordered = _ordered_bits(x, 64, largest)
    positions = builders.iota(shape, axis, DataType.INT64)
    taken = builders.splat(False, DataType.BOOL, shape)
    all_ones = builders.splat((1 << 64) - 1, DataType.UINT64, shape)
    past_end = builders.splat(n, DataType.INT64, shape)
    keys, indices = [], []
    for _ in range(k):
        key = builders.reduce(stablehlo.select(taken, all_ones, ordered), [axis], stablehlo.minimum, (1 << 64) - 1, keepdims=True)
        key_full = builders.broadcast_to(key, shape)
        holds = stablehlo.and_(stablehlo.not_(taken), builders.compare(ordered, key_full, "EQ"))
        index = builders.reduce(stablehlo.select(holds, positions, past_end), [axis], stablehlo.minimum, n, keepdims=True)
        taken = stablehlo.or_(taken, builders.compare(positions, builders.broadcast_to(index, shape), "EQ"))
        keys.append(key)
        indices.append(index)
    key = stablehlo.concatenate(keys, axis) if k > 1 else keys[0]
    index = stablehlo.concatenate(indices, axis) if k > 1 else indices[0]
    return [_from_ordered_bits(key, dtype, largest), index]


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
    if dtypes.is_float(dtype):  # integers hold no NaN and no -0.0
        nan = builders.splat(float("nan") if largest else -float("nan"), DataType.FLOAT, shape)
        zero = builders.splat(0.0, DataType.FLOAT, shape)
        operand = stablehlo.select(builders.compare(operand, operand, "NE"), nan, operand)
        operand = stablehlo.select(builders.compare(operand, zero, "EQ"), zero, operand)
    values, indices = chlo.top_k(operand, k)
    if not largest:
        values = stablehlo.negate(values)
    values, indices = builders.convert(values, dtype), builders.convert(indices, DataType.INT64)
    return [builders.transpose(values, permutation), builders.transpose(indices, permutation)]


def _packed_sort_is_faster(n: int, k: int) -> bool:
    """Whether TopK of ``k`` of ``n`` runs faster as a packed-key sort than as XLA's TopK.

    XLA CPU's TopK costs grow with ``k`` (a partial sort per row); the packed sort does not.
    Measured with jax on 2 loaded cores (ms, TopK / packed sort): 3x20x50 k=5 0.09 / 0.15,
    k=50 1.5 / 0.23; 1x1000 k=10 0.12 / 0.22, k=1000 0.27 / 0.14; 64x1000 k=10 0.69 / 2.1;
    8x4096 k=256 1.9 / 5.0, k=4096 17 / 2.9; 1x100000 k=1000 2.2 / 5.1. The crossing for a
    large ``k``, measured on the quiet machine (2026-12-03: both forms compiled from the ONNX
    TopK in one process, executables alone, 7 interleaved rounds): 64x1000 k=100 2.64 / 4.23,
    k=150 3.54 / 4.15, k=200 4.37 / 4.28; 8x4096 k=410 1.23 / 1.86, k=614 2.00 / 2.18, k=820
    2.79 / 2.64; 1x100000 k=10000 7.8 / 9.7, k=20000 10.1 / 9.0; 64x640 k=100 2.09 / 2.56;
    256x256 k=52 3.25 / 3.24, k=64 3.25 / 2.62. So: a sort or argsort (``k`` at least half
    the axis), or a ``k`` of 64 or more that is at least a fifth of the axis. (Below 64, where
    times are tens of microseconds, the crossing moves with the shape: 3x20x50 k=15 0.064 /
    0.087, k=24 0.138 / 0.080; 16x64 k=13 0.030 / 0.023; left at half the axis.)
    """
    return 2 * k >= n or (k >= 64 and 5 * k >= n)


def _top_k_packed_sort(x: ir.Value, k: int, axis: int, largest: bool) -> list[ir.Value]:
    """TopK of a static ``x`` as one sort of uint64 keys: (order-preserving value bits << 32) | index.

    int32 and uint32 values are their own 32 bits (int32 with the sign bit flipped); the float
    types and the 8- and 16-bit integers go through float32 as below.

    XLA CPU sorts a single integer operand under a plain ``LT`` comparator with its native sort,
    5-10x faster than a sort of (values, indices) whose comparator it calls per comparison
    (8x4096 argsort: 2.9 ms against 26 ms; see ``_packed_sort_is_faster``). The value goes
    through float32 (exact for the 8- and 16-bit types), every NaN made +NaN and -0.0 made +0.0
    (onnxruntime: NaN above every number, -0.0 equal to 0.0); its bits are mapped so that
    unsigned order is numeric order (negative: all bits flipped; otherwise the sign bit set),
    and flipped again for ``largest``. The index in the low 32 bits breaks ties by lower index,
    as the spec asks, in both directions. Values are decoded from the sorted keys' high bits.

    Deviation: as ``_top_k_selection``, a selected -0.0 is returned as +0.0 and a NaN as the
    canonical +NaN (indices are exact).
    """
    shape = builders.dims_of(x)
    ordered = _ordered_bits(x, 32, largest)
    thirty_two = builders.splat(32, DataType.UINT64, shape)
    keys = stablehlo.or_(
        stablehlo.shift_left(builders.convert(ordered, DataType.UINT64), thirty_two),
        builders.iota(shape, axis, DataType.UINT64),
    )
    (keys,) = builders.sort([keys], axis, lambda lhs, rhs: builders.compare(lhs[0], rhs[0], "LT"))
    keys = _slice_front(keys, axis, k)
    top_shape = builders.dims_of(keys)
    low = builders.splat(0xFFFFFFFF, DataType.UINT64, top_shape)
    indices = builders.convert(stablehlo.and_(keys, low), DataType.INT64)
    ordered = builders.convert(stablehlo.shift_right_logical(keys, builders.splat(32, DataType.UINT64, top_shape)), DataType.UINT32)
    return [_from_ordered_bits(ordered, builders.dtype_of(x), largest), indices]


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
        16-bit types with static shapes (XLA's TopK, see ``_top_k_selection``, or for a large
        ``k`` one sort of packed uint64 keys, see ``_top_k_packed_sort``) and float64 with a
        static shape and ``k <= 16`` (``_top_k_rounds``): a selected -0.0 is returned as 0.0
        (a NaN as +NaN); indices match onnxruntime's. Static int32/uint32/int64/uint64 TopK
        checks at run time whether float32 holds every value (all within +-2^24) and then
        selects with XLA's TopK; values and indices are exact either way.
    Raises: NonConstantInputError if K is computed at run time; ShapeError if K exceeds the
        axis size.
    """
    k = np.asarray(ctx.constant_input(1))
    if k.size != 1:
        raise ctx.error(f"K must hold one value, got shape {list(k.shape)}", ShapeError)
    largest = bool(node.attr_int("largest", 1))
    return _top_k(ctx, int(k.reshape(-1)[0]), node.attr_int("axis"), largest)
