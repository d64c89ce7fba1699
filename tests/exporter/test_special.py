"""chlo special functions (square, erfc, lgamma, digamma, erf_inv, next_after, mulhi): values
against scipy (f64 references) and JAX's definitions at poles and infinities.

``jax.jit(f).lower(x).as_text()`` keeps the chlo ops (``jax.export`` expands them), so these
tests convert the lowered text."""

from __future__ import annotations

import jax
import numpy as np
import pytest
import scipy.special as sp
from jax import lax

from onnx_stablehlo.errors import UnsupportedExportError
from onnx_stablehlo.exporter import module_to_onnx
from tests.exporter.util import run_onnx


def _export(fn, *args, opset=None):
    with jax.enable_x64(any(np.asarray(a).dtype == np.float64 for a in args)):
        text = jax.jit(fn).lower(*args).as_text()
    assert "chlo." in text
    return module_to_onnx(text, opset=opset).model


def _run(fn, *args, opset=None):
    return run_onnx(_export(fn, *args, opset=opset), *args)[0]


def _max_rel(got, want, floor=1e-30):
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    return float(np.max(np.abs(got - want) / np.maximum(np.abs(want), floor)))


_RNG = np.random.default_rng(0)
_X = np.concatenate([_RNG.uniform(-10, 10, 2000), _RNG.uniform(-60, 60, 500)]).astype(np.float32)


def test_square():
    x = _RNG.standard_normal(10).astype(np.float32)
    np.testing.assert_array_equal(_run(lambda v: lax.square(v), x), x * x)


def test_lgamma_f32_accuracy_and_poles():
    got = _run(lax.lgamma, _X)
    want = sp.gammaln(_X.astype(np.float64))
    away = np.abs(want) > 1e-2
    assert _max_rel(got[away], want[away]) < 2e-7
    np.testing.assert_allclose(got[~away], want[~away], atol=1e-7)
    special = np.array([0, -0.0, -1, -2, -1e10, np.inf, -np.inf, np.nan, 1, 2, 1e-30], np.float32)
    got = _run(lax.lgamma, special)
    np.testing.assert_array_equal(got[:7], np.inf)
    assert np.isnan(got[7])
    np.testing.assert_allclose(got[8:], [0, 0, 69.07755], atol=1e-6, rtol=1e-6)


def test_lgamma_f64_and_f16():
    x = _X.astype(np.float64)
    assert _max_rel(_run(lax.lgamma, x), sp.gammaln(x), floor=1e-2) < 1e-12
    h = _RNG.uniform(0.1, 20, 200).astype(np.float16)
    got = _run(lax.lgamma, h)
    assert got.dtype == np.float16
    np.testing.assert_allclose(got.astype(np.float64), sp.gammaln(h.astype(np.float64)), rtol=2e-3, atol=2e-3)


def test_digamma_f32_accuracy_and_poles():
    got = _run(lax.digamma, _X)
    want = sp.digamma(_X.astype(np.float64))
    away = np.abs(want) > 1e-2
    assert _max_rel(got[away], want[away]) < 2e-7
    np.testing.assert_allclose(got[~away], want[~away], atol=1e-7)
    special = np.array([0, -0.0, -1, -3, -1e10, -np.inf, np.nan, np.inf, 1, 1e-30, -2.5], np.float32)
    got = _run(lax.digamma, special)
    assert np.isnan(got[:7]).all()
    np.testing.assert_allclose(got[7:], [np.inf, -0.5772157, -1e30, 1.1031566], rtol=1e-6)


def test_digamma_f64():
    x = _X.astype(np.float64)
    assert _max_rel(_run(lax.digamma, x), sp.digamma(x), floor=1e-2) < 1e-12


def test_erfc_accuracy_tails_and_infinities():
    x = np.concatenate([_RNG.uniform(-4, 9, 3000), [0, 0.49, 0.5, -0.5, 9.0]]).astype(np.float32)
    got = _run(lax.erfc, x)
    assert _max_rel(got, sp.erfc(x.astype(np.float64))) < 3e-7  # JAX's own erfc: ~4e-6 near 8.5
    np.testing.assert_array_equal(_run(lax.erfc, np.float32([np.inf, -np.inf, 30])), [0, 2, 0])
    assert np.isnan(_run(lax.erfc, np.float32([np.nan]))).all()


def test_erf_inv_accuracy_and_edges():
    x = np.concatenate([_RNG.uniform(-1, 1, 3000), 1 - np.logspace(-7, -1, 100)]).astype(np.float32)
    assert _max_rel(_run(lax.erf_inv, x), sp.erfinv(x.astype(np.float64))) < 1e-6
    got = _run(lax.erf_inv, np.float32([1, -1, 0, 1.5, np.nan]))
    np.testing.assert_array_equal(got[:3], [np.inf, -np.inf, 0])
    assert np.isnan(got[3:]).all()


def test_f64_erfc_and_erf_inv_are_refused():
    x = np.zeros(3, np.float64)
    for fn in (lax.erfc, lax.erf_inv):
        with pytest.raises(UnsupportedExportError, match="f32 precision"):
            _export(fn, x)


def test_next_after_opset_26():
    x = np.float32([0, 0, 1, 1, -1, np.inf, 2, np.nan, -0.0, 3.4028235e38])
    y = np.float32([1, -1, 2, 0, -2, 0, 2, 0, 1, np.inf])
    got = _run(lax.nextafter, x, y, opset=26)
    np.testing.assert_array_equal(got, np.nextafter(x, y))


def test_next_after_needs_opset_26():
    x = np.ones(2, np.float32)
    with pytest.raises(UnsupportedExportError, match="opset >= 26"):
        _export(lax.nextafter, x, x)


_MULHI = """
func.func @main(%a: tensor<6x{t}>, %b: tensor<6x{t}>) -> tensor<6x{t}> {{
  %0 = "chlo.mulhi"(%a, %b) : (tensor<6x{t}>, tensor<6x{t}>) -> tensor<6x{t}>
  return %0 : tensor<6x{t}>
}}
"""


@pytest.mark.parametrize("t, dtype, bits", [("i32", np.int32, 32), ("ui32", np.uint32, 32), ("i8", np.int8, 8),
                                            ("i16", np.int16, 16), ("ui16", np.uint16, 16)])
def test_mulhi(t, dtype, bits):
    info = np.iinfo(dtype)
    a = np.array([info.min, info.max, -1 if info.min else 1, 12345 % (info.max + 1), info.max, 0]).astype(dtype)
    b = np.array([info.min, info.max, 7, -3 if info.min else 3, info.min, 5]).astype(dtype)
    got = run_onnx(module_to_onnx(_MULHI.format(t=t)).model, a, b)[0]
    want = [(int(x) * int(y)) >> bits for x, y in zip(a, b)]
    np.testing.assert_array_equal(got, np.array(want).astype(dtype))


def test_mulhi_i64_is_refused():
    with pytest.raises(UnsupportedExportError, match="128-bit"):
        module_to_onnx(_MULHI.format(t="i64"))
