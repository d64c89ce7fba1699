"""stablehlo.reduce / reduce_window -> ONNX: JAX functions exported, run in onnxruntime and
compared with JAX on seeded inputs (exporter/rules/reduction.py)."""

from __future__ import annotations

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
    (lambda x: jnp.mean(x, axis=1), "ReduceSum"),
    (lambda x: jnp.var(x, axis=2), "ReduceSum"),
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


def test_bitwise_reduction_is_listed():
    def fn(x):
        return lax.reduce(x, np.int32(0), lax.bitwise_or, (1,))

    with pytest.raises(UnsupportedExportError, match="bitwise or"):
        export_jax(fn, _i32(3, 4))


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
