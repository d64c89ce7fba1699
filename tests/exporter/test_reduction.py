"""stablehlo.reduce / reduce_window -> ONNX: JAX functions exported, run in onnxruntime and
compared with JAX on seeded inputs (exporter/rules/reduction.py)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax

from onnx_stablehlo.errors import UnsupportedExportError
from tests.exporter.util import check_roundtrip, export_jax

RNG = np.random.default_rng(0)


def _f32(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def _i32(*shape, low=-20, high=20):
    return RNG.integers(low, high, shape).astype(np.int32)


# reduce --------------------------------------------------------------------------------------

@pytest.mark.parametrize("fn, op_type", [
    (lambda x: jnp.sum(x, axis=1), "ReduceSum"),
    (lambda x: jnp.sum(x, axis=1, keepdims=True), "ReduceSum"),
    (lambda x: jnp.sum(x), "ReduceSum"),
    (lambda x: jnp.prod(x, axis=0), "ReduceProd"),
    (lambda x: jnp.max(x, axis=(0, 2)), "ReduceMax"),
    (lambda x: jnp.min(x, axis=-1), "ReduceMin"),
    (lambda x: jnp.mean(x, axis=1), "ReduceMean"),  # exporter/idioms.py: Div(ReduceSum, N)
    (lambda x: jnp.var(x, axis=2), "ReduceMean"),
])
def test_float_reductions(fn, op_type):
    check_roundtrip(fn, _f32(3, 4, 5), op_types={op_type})


@pytest.mark.parametrize("fn, op_type", [
    (lambda x: jnp.sum(x, axis=0), "ReduceSum"),
    (lambda x: jnp.prod(x, axis=1), "ReduceProd"),
    (lambda x: jnp.max(x), "ReduceMax"),
    (lambda x: jnp.min(x, axis=1), "ReduceMin"),
])
def test_int_reductions(fn, op_type):
    check_roundtrip(fn, _i32(4, 6, low=-3, high=4), op_types={op_type})


def test_int8_sum_wraps_like_jax():
    x = RNG.integers(-128, 127, (5, 40)).astype(np.int8)
    check_roundtrip(lambda x: jnp.sum(x, axis=1, dtype=jnp.int8), x, op_types={"ReduceSum"})
    check_roundtrip(lambda x: jnp.max(x, axis=1), x, op_types={"ReduceMax"})


def test_bool_all_any():
    x = RNG.random((4, 5)) > 0.3
    x[1] = True
    x[2] = False
    check_roundtrip(lambda x: (jnp.all(x, axis=1), jnp.any(x, axis=1), jnp.all(x), jnp.any(x, axis=0)), x,
                    op_types={"ReduceMin", "ReduceMax"})


def test_symbolic_batch():
    check_roundtrip(lambda x: (jnp.sum(x, axis=1), jnp.max(x, axis=0), jnp.mean(x), jnp.sum(x, axis=1, keepdims=True)),
                    _f32(5, 7), symbolic=["b, 7"], op_types={"ReduceSum", "ReduceMax"})


def test_max_min_propagate_nan():
    x = _f32(4, 4)
    x[0, 1] = x[0, 3] = x[2, 0] = np.nan  # onnxruntime's ReduceMax alone gives 3 for [1, nan, 3]
    check_roundtrip(lambda x: (jnp.max(x, axis=1), jnp.min(x, axis=1), jnp.max(x)), x, op_types={"ReduceMax"})


def test_general_init():
    x = _f32(3, 4)
    check_roundtrip(lambda x: lax.reduce(x, np.float32(2.5), lax.add, (1,)), x, op_types={"ReduceSum", "Add"})
    check_roundtrip(lambda x: lax.reduce(x, np.float32(0.5), lax.max, (0,)), x, op_types={"ReduceMax", "Max"})
    check_roundtrip(lambda x, y: lax.reduce(x, y, lax.mul, (0, 1)), x, np.float32(3.0), op_types={"ReduceProd"})


def test_variadic_independent():
    def fn(x, y):
        return lax.reduce((x, y), (np.float32(0), np.int32(-2**31)),
                          lambda a, b: (a[0] + b[0], jnp.maximum(a[1], b[1])), (1,))

    check_roundtrip(fn, _f32(3, 5), _i32(3, 5), op_types={"ReduceSum", "ReduceMax"})


def test_argmax_argmin_ties_and_nan():
    x = np.array([[1, 3, 3, 2], [5, 5, 5, 5], [0, np.nan, 2, np.nan], [-np.inf, -np.inf, -np.inf, -np.inf],
                  [np.nan, 1, np.nan, 0]], np.float32)
    check_roundtrip(lambda x: (jnp.argmax(x, axis=1), jnp.argmin(x, axis=1), jnp.argmax(x, axis=0)), x,
                    op_types={"ArgMax", "ArgMin"})


def test_argmax_int_and_symbolic():
    x = _i32(6, 7, low=0, high=3)
    check_roundtrip(lambda x: (jnp.argmax(x, axis=1), jnp.argmin(x, axis=0)), x, op_types={"ArgMax", "ArgMin"})
    check_roundtrip(lambda x: (jnp.argmax(x, axis=0), jnp.argmin(x, axis=1)), _f32(5, 7), symbolic=["b, 7"],
                    op_types={"ArgMax", "ArgMin"})


def test_max_with_argmax_values():
    def fn(x):
        return lax.argmax(x, 1, jnp.int32), jnp.max(x, axis=1)

    check_roundtrip(fn, _f32(4, 9), op_types={"ArgMax"})


def test_unrecognised_body_is_listed():
    def fn(x):
        return lax.reduce(x, np.float32(0), lambda a, b: a * 2 + b, (1,))

    with pytest.raises(UnsupportedExportError, match="reduce body"):
        export_jax(fn, _f32(3, 4))


_BITWISE = [(lax.bitwise_and, "BitwiseAnd"), (lax.bitwise_or, "BitwiseOr"), (lax.bitwise_xor, "BitwiseXor")]


@pytest.mark.parametrize("dtype", [np.uint64, np.int64, np.int32, np.uint32, np.int8, np.uint8])
@pytest.mark.parametrize("op, op_type", _BITWISE)
def test_bitwise_reductions(dtype, op, op_type):
    # The halving tree: odd lengths (5, 7, 35), length 1, several and all axes, identity and
    # other inits (all ones for and, 0 for or/xor), a run-time init. The tree ensemble's
    # ui64 and of its node masks is the first case.
    info = np.iinfo(dtype)
    with jax.enable_x64(True):
        x = RNG.integers(info.min, info.max, (3, 5, 7), dtype=dtype, endpoint=True)
        x[0, :, :] |= dtype(info.max >> 2)  # and-reductions of mostly set bits: not all zero
        ones = dtype(-1) if info.min < 0 else dtype(info.max)
        identity = ones if op is lax.bitwise_and else dtype(0)
        for axes in [(1,), (2,), (0, 2), (0, 1, 2)]:
            for init in (identity, dtype(6)):
                check_roundtrip(lambda x, init=init, axes=axes: lax.reduce(x, init, op, axes), x, op_types={op_type})
        check_roundtrip(lambda x: lax.reduce(x[:, :1], identity, op, (1,)), x)
        check_roundtrip(lambda x, i: lax.reduce(x, i, op, (1, 2)), x, dtype(5), op_types={op_type})
        check_roundtrip(lambda x: lax.reduce(x, identity, op, (1,)), x, symbolic=["b, 5, 7"], op_types={op_type})


def test_bool_xor_reduction_and_empty_bitwise():
    x = RNG.random((4, 7)) > 0.5
    check_roundtrip(lambda x: (lax.reduce(x, np.bool_(False), lax.bitwise_xor, (1,)),
                               lax.reduce(x, np.bool_(True), lax.bitwise_xor, (0, 1))), x, op_types={"Xor"})
    check_roundtrip(lambda x: lax.reduce(x[:, :0], np.int32(3), lax.bitwise_or, (1,)), _i32(4, 6))


def test_bitwise_reduction_unsupported_forms_are_listed():
    with pytest.raises(UnsupportedExportError, match="bitwise or"):
        export_jax(lambda x: lax.reduce_window(x, np.int32(0), lax.bitwise_or, (1, 2), (1, 1), "VALID"), _i32(3, 4))
    with pytest.raises(UnsupportedExportError, match=r"over a \? dim"):
        export_jax(lambda x: lax.reduce(x, np.int32(0), lax.bitwise_or, (0,)), _i32(3, 4), symbolic=["b, 4"])


# reduce_window -------------------------------------------------------------------------------

def _nhwc(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


@pytest.mark.parametrize("padding", ["SAME", "VALID"])
def test_max_pool_nhwc(padding):
    def fn(x):
        return lax.reduce_window(x, -jnp.inf, lax.max, (1, 3, 3, 1), (1, 2, 2, 1), padding)

    check_roundtrip(fn, _nhwc(2, 9, 8, 3), op_types={"MaxPool"})


def test_max_pool_nan_and_symbolic_batch():
    x = _nhwc(2, 6, 6, 2)
    x[0, 1, 1, 0] = np.nan

    def fn(x):
        return lax.reduce_window(x, -jnp.inf, lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")

    check_roundtrip(fn, x, op_types={"MaxPool"})
    check_roundtrip(fn, x, symbolic=["b, 6, 6, 2"], op_types={"MaxPool"})


def test_min_pool_and_int8_max_pool():
    def fn(x):
        return lax.reduce_window(x, jnp.inf, lax.min, (1, 2, 3, 1), (1, 1, 2, 1), "SAME")

    check_roundtrip(fn, _nhwc(2, 5, 7, 3), op_types={"MaxPool"})
    xi = RNG.integers(-128, 127, (2, 6, 6, 1)).astype(np.int8)

    def fi(x):
        return (lax.reduce_window(x, np.int8(-128), lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "SAME"),
                lax.reduce_window(x, np.int8(127), lax.min, (1, 2, 2, 1), (1, 1, 1, 1), "VALID"))

    check_roundtrip(fi, xi, op_types={"MaxPool"})


@pytest.mark.parametrize("padding", ["SAME", "VALID"])
def test_avg_pool_nhwc(padding):
    def fn(x):
        return lax.reduce_window(x, 0.0, lax.add, (1, 3, 3, 1), (1, 2, 2, 1), padding) / 9.0

    check_roundtrip(fn, _nhwc(2, 8, 7, 3), op_types={"AveragePool"})


def test_max_pool_dilated_and_relu_init():
    def fn(x):
        return (lax.reduce_window(x, -jnp.inf, lax.max, (1, 2, 2, 1), (1, 1, 1, 1), "VALID",
                                  window_dilation=(1, 2, 2, 1)),
                lax.reduce_window(x, 0.0, lax.max, (1, 3, 3, 1), (1, 2, 2, 1), "SAME"))

    check_roundtrip(fn, _nhwc(1, 7, 7, 2), op_types={"MaxPool"})


@pytest.mark.parametrize("fn", [
    lambda x: jnp.cumsum(x, axis=1),
    lambda x: jnp.cumsum(x, axis=0),
    lambda x: lax.cumsum(x, axis=1, reverse=True),
])
def test_cumsum(fn):
    check_roundtrip(fn, _f32(4, 6), op_types={"CumSum"})


def test_cumsum_int_and_symbolic_batch():
    check_roundtrip(lambda x: jnp.cumsum(x, axis=1), _i32(3, 8), op_types={"CumSum"})
    check_roundtrip(lambda x: jnp.cumsum(x, axis=1), _f32(3, 7), symbolic=["b, 7"], op_types={"CumSum"})


def test_cummax_cummin_cumprod():
    check_roundtrip(lambda x: (lax.cummax(x, axis=0), lax.cummin(x, axis=1)), _f32(5, 6), op_types={"MaxPool"})
    check_roundtrip(lambda x: jnp.cumprod(x, axis=1), _f32(3, 6), op_types={"ReduceProd", "Gather"})
    check_roundtrip(lambda x: lax.cummax(x, axis=1), _i32(3, 6), op_types={"ReduceMax", "Gather"})


def test_generic_windows():
    def fn(x):
        return (lax.reduce_window(x, 0, lax.add, (2, 3), (1, 2), ((1, 0), (2, 1))),
                lax.reduce_window(x, 1, lax.add, (2, 2), (1, 1), "VALID"),
                lax.reduce_window(x, 0, lax.max, (3, 1), (2, 1), ((-1, 1), (0, 0))))

    check_roundtrip(fn, _i32(6, 7), op_types={"Gather", "ReduceSum", "ReduceMax"})


def test_base_dilation_is_listed():
    def fn(x):
        return lax.reduce_window(x, 0.0, lax.add, (2, 2), (1, 1), "VALID", base_dilation=(2, 2))

    with pytest.raises(UnsupportedExportError, match="base_dilations"):
        export_jax(fn, _f32(4, 4))


def test_no_reduced_dims_returns_the_operand():
    # XLA does not apply the init when no dim is reduced (the spec leaves it implementation-defined).
    check_roundtrip(lambda x: lax.reduce(x, np.float32(1), lax.add, ()), _f32(3, 5))


def test_narrow_and_empty_reductions():
    check_roundtrip(lambda x: jnp.sum(x, axis=1), _f32(3, 5).astype(np.float16), op_types={"ReduceSum"})
    check_roundtrip(lambda x: jnp.sum(x, axis=1, dtype=jnp.uint8), RNG.integers(0, 255, (3, 50)).astype(np.uint8),
                    op_types={"ReduceSum"})
    check_roundtrip(lambda x: jnp.max(x, axis=1, initial=-jnp.inf), np.zeros((3, 0), np.float32))
    check_roundtrip(lambda x: (jnp.any(x, axis=1), jnp.all(x, axis=1)), np.zeros((3, 0), bool))


def test_argmax_bool_and_f16():
    check_roundtrip(lambda x: jnp.argmax(x, axis=1), RNG.random((4, 5)) > 0.5, op_types={"ArgMax"})
    check_roundtrip(lambda x: jnp.argmin(x, axis=0), _f32(4, 5).astype(np.float16), op_types={"ArgMin"})


def test_more_windows():
    check_roundtrip(lambda x: lax.reduce_window(x, -jnp.inf, lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "SAME"),
                    _nhwc(1, 5, 5, 2).astype(np.float16), op_types={"MaxPool"})
    check_roundtrip(lambda x: lax.reduce_window(x, 0.0, lax.add, (2, 2, 2), (1, 1, 1), "VALID"), _f32(3, 4, 5),
                    op_types={"AveragePool"})
    check_roundtrip(lambda x: lax.reduce_window(x, False, lax.bitwise_or, (2, 2), (1, 1), "SAME"),
                    RNG.random((4, 5)) > 0.7, op_types={"Gather"})


# The NaN-skipping max/min and ArgMax/ArgMin bodies our frontend emits (ONNX's ReduceMax,
# MaxPool, ArgMax(select_last_index)), written with lax so JAX traces the same bodies.

def _nan_skipping(op, swap=False):
    def body(a, b):
        inner = lax.select(lax.ne(b, b), a, op(a, b))
        return lax.select(lax.ne(a, a), b, inner) if not swap else \
            lax.select(lax.ne(b, b), a, lax.select(lax.ne(a, a), b, op(a, b)))
    return body


def _nan_rows():
    nan, inf = np.nan, np.inf
    return np.array([[1, nan, 3, 2, -1], [nan, 1, 2, 3, 0], [nan] * 5, [3, 2, 1, 0, nan], [-inf] * 5,
                     [inf, nan, -inf, nan, nan], [nan, nan, 5, nan, nan]], np.float32)


@pytest.mark.parametrize("swap", [False, True])
@pytest.mark.parametrize("init", [None, 2.0, np.nan])
def test_nan_skipping_max_min_reduce(swap, init):
    x = _nan_rows()
    for op, ident in ((lax.max, -np.inf), (lax.min, np.inf)):
        value = np.float32(ident if init is None else init)
        for axis in (0, 1):
            fn = lambda x, op=op, value=value, axis=axis: lax.reduce(x, value, _nan_skipping(op, swap), (axis,))
            model = check_roundtrip(fn, x)
            assert {"ReduceMax", "ReduceMin"} & {n.op_type for n in model.graph.node}


def test_nan_skipping_reduce_run_time_init_and_variadic():
    x = _nan_rows()
    for init in (np.float32(0.5), np.float32(np.nan)):
        check_roundtrip(lambda x, i: lax.reduce(x, i, _nan_skipping(lax.max), (1,)), x, init)

    def both(x):  # min of operand 0 and max of operand 1 in one reduce, as DynamicQuantizeLinear
        def body(acc, v):
            return _nan_skipping(lax.min)(acc[0], v[0]), _nan_skipping(lax.max)(acc[1], v[1])
        return lax.reduce((x, x), (np.float32(np.inf), np.float32(-np.inf)), body, (1,))

    check_roundtrip(both, x, op_types={"ReduceMin", "ReduceMax"})


def test_nan_skipping_lookalikes_are_listed():
    x = _nan_rows()
    wrong = [
        lambda a, b: lax.select(lax.ne(a, a), a, lax.select(lax.ne(b, b), a, lax.max(a, b))),  # NaN kept
        lambda a, b: lax.select(lax.ne(a, a), b, lax.select(lax.ne(b, b), b, lax.max(a, b))),
        lambda a, b: lax.select(lax.ne(a, a), b, lax.select(lax.ne(a, a), a, lax.max(a, b))),
    ]
    for body in wrong:
        with pytest.raises(UnsupportedExportError, match="reduce body"):
            export_jax(lambda x, body=body: lax.reduce(x, np.float32(-np.inf), body, (1,)), x)


@pytest.mark.parametrize("op", [lax.max, lax.min])
def test_nan_skipping_pool(op):
    # ONNX MaxPool as our frontend lowers it: windows with NaNs, all-NaN and all -inf windows, padding.
    rng = np.random.default_rng(40)
    x = rng.standard_normal((1, 1, 6, 7)).astype(np.float32)
    x[0, 0, rng.random((6, 7)) < 0.3] = np.nan
    x[0, 0, :2, :2] = np.nan
    x[0, 0, 4:, :3] = -np.inf if op is lax.max else np.inf
    ident = np.float32(-np.inf if op is lax.max else np.inf)
    for window, strides, dil, pad in [((1, 1, 2, 2), (1, 1, 1, 1), (1, 1, 2, 2), [(0, 0)] * 4),
                                      ((1, 1, 3, 2), (1, 1, 2, 1), (1, 1, 1, 1), [(0, 0), (0, 0), (1, 1), (1, 0)])]:
        for init in (ident, np.float32(0.25)):
            fn = lambda x, init=init, w=window, s=strides, d=dil, p=pad: lax.reduce_window(
                x, init, _nan_skipping(op), w, s, p, window_dilation=d)
            model = check_roundtrip(fn, x, op_types={"MaxPool"})
            assert model is not None
    # 3-D window and a 4-windowed-dim one (the generic Gather form)
    x3 = rng.standard_normal((2, 3, 4, 5)).astype(np.float32)
    x3[x3 > 0.8] = np.nan
    check_roundtrip(lambda x: lax.reduce_window(x, ident, _nan_skipping(op), (1, 2, 2, 2), (1, 1, 1, 1), "SAME"),
                    x3, op_types={"MaxPool"})
    check_roundtrip(lambda x: lax.reduce_window(x, ident, _nan_skipping(op), (2, 2, 2, 2), (1, 1, 1, 1), "VALID"),
                    x3)


def test_nan_skipping_pool_nan_init_is_listed():
    x = _nan_rows()
    with pytest.raises(UnsupportedExportError, match="init is NaN"):
        export_jax(lambda x: lax.reduce_window(x, np.float32(np.nan), _nan_skipping(lax.max), (1, 2), (1, 1),
                                               "VALID"), x)


def test_max_pool_over_padding_of_minus_inf():
    # onnxruntime's MaxPool gives -FLT_MAX for a padded window of -inf: the padding is explicit.
    x = np.full((1, 1, 3, 3), -np.inf, np.float32)
    x[0, 0, 2, 2] = 1
    for op, init in ((lax.max, -np.inf), (lax.min, np.inf)):
        xs = x if op is lax.max else -x
        check_roundtrip(lambda x, op=op, init=init: lax.reduce_window(x, np.float32(init), op, (1, 1, 2, 2),
                                                                      (1, 1, 1, 1), [(0, 0), (0, 0), (1, 1), (1, 1)]),
                        xs, op_types={"MaxPool"})


def _frontend_arg_body(better, last):
    def body(acc, v):
        (a, ia), (b, ib) = acc, v
        a_nan, b_nan = lax.ne(a, a), lax.ne(b, b)
        b_wins = lax.bitwise_and(lax.bitwise_or(better(b, a), b_nan), lax.bitwise_not(a_nan))
        same = lax.bitwise_or(lax.eq(b, a), lax.bitwise_and(b_nan, a_nan))
        tie = lax.bitwise_and(same, lax.gt(ib, ia) if last else lax.lt(ib, ia))
        return lax.select(b_wins, b, a), lax.select(lax.bitwise_or(b_wins, tie), ib, ia)
    return body


@pytest.mark.parametrize("last", [0, 1])
@pytest.mark.parametrize("direction", ["max", "min"])
def test_frontend_argmax_argmin_select_last_index(direction, last):
    nan, inf = np.nan, np.inf
    x = np.array([[1, 3, 3, 2, 3], [nan, 1, nan, 3, 0], [nan] * 5, [0, 0, 0, 0, 0], [-inf] * 5, [inf] * 5,
                  [2, -1, 2, -1, 2], [1, 2, 3, 4, nan]], np.float32)
    better = lax.gt if direction == "max" else lax.lt
    init = np.float32(-inf if direction == "max" else inf)
    for axis in (0, 1):
        def fn(x, axis=axis):
            index = lax.broadcasted_iota(np.int32, x.shape, axis)
            return lax.reduce((x, index), (init, np.int32(0)), _frontend_arg_body(better, last), (axis,))

        model = check_roundtrip(fn, x, op_types={"ArgMax" if direction == "max" else "ArgMin"})
        arg = next(n for n in model.graph.node if n.op_type in ("ArgMax", "ArgMin"))
        assert {a.name: a.i for a in arg.attribute}["select_last_index"] == last


def test_frontend_argmax_lookalike_is_listed():
    x = _nan_rows()

    def body(acc, v):  # the NaN test of the accumulator left out: not the order proven above
        (a, ia), (b, ib) = acc, v
        b_wins = lax.bitwise_or(lax.gt(b, a), lax.ne(b, b))
        tie = lax.bitwise_and(lax.eq(b, a), lax.gt(ib, ia))
        return lax.select(b_wins, b, a), lax.select(lax.bitwise_or(b_wins, tie), ib, ia)

    def fn(x):
        return lax.reduce((x, lax.broadcasted_iota(np.int32, x.shape, 1)), (np.float32(-np.inf), np.int32(0)),
                          body, (1,))

    with pytest.raises(UnsupportedExportError, match="reduce body"):
        export_jax(fn, x)


def _classifier_arg_body(better, index_lt=True):
    # The argmax/argmin our frontend emits for the ai.onnx.ml classifiers: no NaN term.
    def body(acc, v):
        (a, ia), (b, ib) = acc, v
        pick = better(b, a)
        tie = lax.bitwise_and(lax.eq(b, a), lax.lt(ib, ia) if index_lt else lax.gt(ib, ia))
        return lax.select(pick, b, a), lax.select(lax.bitwise_or(pick, tie), ib, ia)
    return body


@pytest.mark.parametrize("direction", ["max", "min"])
def test_classifier_argmax_argmin_skips_nan_as_the_sequential_fold(direction):
    # NaN rows as XLA CPU folds them (accumulator first, from the init): a NaN is never picked,
    # an all-NaN row gives the init (+-inf, index 0); NaN-free rows: first index of the max.
    nan, inf = np.nan, np.inf
    x = np.array([[1, 3, 3, 2, 3], [nan, 1, nan, 3, 0], [nan] * 5, [0, 0, 0, 0, 0], [-inf] * 5, [inf] * 5,
                  [2, -1, 2, -1, 2], [1, 2, 3, 4, nan], [nan, -inf, nan, -inf, nan], [nan, inf, nan, -inf, 1],
                  [3, nan, 3, nan, 5]], np.float32)
    better = lax.gt if direction == "max" else lax.lt
    init = np.float32(-inf if direction == "max" else inf)
    op_type = "ArgMax" if direction == "max" else "ArgMin"
    for axis in (0, 1):
        def fn(x, axis=axis):
            index = lax.broadcasted_iota(np.int32, x.shape, axis)
            return lax.reduce((x, index), (init, np.int32(0)), _classifier_arg_body(better), (axis,))

        values, index = jax.jit(fn)(x)
        if axis == 1:  # the fold's answers, spelled out
            want = [1, 3, 0, 0, 0, 0, 0, 3, 0, 1, 4] if direction == "max" else [0, 4, 0, 0, 0, 0, 1, 0, 1, 3, 0]
            assert np.asarray(index).tolist() == want
        model = check_roundtrip(fn, x, op_types={op_type})
        node = next(n for n in model.graph.node if n.op_type == op_type)
        assert {a.name: a.i for a in node.attribute}["select_last_index"] == 0
    ints = _i32(6, 5, low=-2, high=2)
    check_roundtrip(lambda x: lax.reduce((x, lax.broadcasted_iota(np.int32, x.shape, 1)),
                                         (np.int32(np.iinfo(np.int32).min if direction == "max" else
                                                   np.iinfo(np.int32).max), np.int32(0)),
                                         _classifier_arg_body(better), (1,)), ints, op_types={op_type})


def test_classifier_argmax_lookalikes_are_listed():
    x = _nan_rows()

    def fn(body, init=np.float32(-np.inf)):
        return lambda x: lax.reduce((x, lax.broadcasted_iota(np.int32, x.shape, 1)), (init, np.int32(0)), body, (1,))

    def picks_acc(acc, v):  # the accumulator picked on GT: a NaN element would win
        (a, ia), (b, ib) = acc, v
        pick = lax.gt(b, a)
        tie = lax.bitwise_and(lax.eq(b, a), lax.lt(ib, ia))
        return lax.select(pick, a, b), lax.select(lax.bitwise_or(pick, tie), ib, ia)

    for f in (fn(_classifier_arg_body(lax.gt, index_lt=False)), fn(picks_acc)):
        with pytest.raises(UnsupportedExportError, match="reduce body"):
            export_jax(f, x)
    with pytest.raises(UnsupportedExportError, match="init values"):  # a NaN init would stick
        export_jax(fn(_classifier_arg_body(lax.gt), np.float32(np.nan)), x)
