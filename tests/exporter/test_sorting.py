"""stablehlo.sort / chlo.top_k -> ONNX TopK: JAX functions exported, run in onnxruntime and
compared with JAX on seeded inputs (exporter/rules/sorting.py)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax

from onnx_stablehlo.errors import UnsupportedExportError
from onnx_stablehlo.exporter import module_to_onnx
from tests.exporter.util import assert_close, check_roundtrip, export_jax, run_onnx

RNG = np.random.default_rng(1)


def _f32(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def _ties(*shape):
    return RNG.integers(0, 4, shape).astype(np.float32)


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_sort_float(axis):
    check_roundtrip(lambda x: jnp.sort(x, axis=axis), _f32(5, 6), op_types={"TopK"})


def test_sort_descending_and_argsort_ties():
    x = _ties(4, 9)
    check_roundtrip(lambda x: (jnp.sort(x, axis=1, descending=True), jnp.argsort(x, axis=1),
                               jnp.argsort(x, axis=0, descending=True), jnp.argsort(x, axis=1, stable=True)),
                    x, op_types={"TopK"})


def test_sort_nan_and_signed_zero_canonicalized():
    # JAX's comparator maps -0.0 to +0.0 and NaN to +NaN: TopK's order exactly (NaN last, zeros tie).
    x = np.array([[3, np.nan, -0.0, 0.0, 1, np.nan, -np.inf, 0.0, -0.0]], np.float32)
    check_roundtrip(lambda x: (jnp.sort(x, axis=1), jnp.argsort(x, axis=1), jnp.argsort(x, axis=1, descending=True)),
                    x, op_types={"TopK"})


def test_sort_int_and_bool():
    xi = RNG.integers(-5, 5, (3, 10)).astype(np.int32)
    check_roundtrip(lambda x: (jnp.sort(x, axis=1), jnp.argsort(x, axis=0)), xi, op_types={"TopK"})
    xb = RNG.random((3, 8)) > 0.5
    check_roundtrip(lambda x: (jnp.sort(x, axis=1), jnp.argsort(x, axis=1)), xb, op_types={"TopK"})
    xu = RNG.integers(0, 255, (4, 5)).astype(np.uint8)
    check_roundtrip(lambda x: (jnp.sort(x, axis=1), jnp.argsort(x, axis=1, descending=True)), xu, op_types={"TopK"})


def test_sort_symbolic():
    check_roundtrip(lambda x: (jnp.sort(x, axis=0), jnp.argsort(x, axis=1), jnp.argsort(x, axis=0)),
                    _ties(5, 7), symbolic=["b, 7"], op_types={"TopK"})


def test_lax_sort_carries_operands():
    def fn(x, y, z):
        return lax.sort((x, y, z), dimension=1, num_keys=1)

    x = _ties(3, 6)
    y = _f32(3, 6)
    z = RNG.integers(0, 100, (3, 6)).astype(np.int32)
    check_roundtrip(fn, x, y, z, op_types={"TopK", "GatherElements"})


def test_lax_top_k():
    x = _ties(4, 10)
    check_roundtrip(lambda x: lax.top_k(x, 3), x, op_types={"TopK"})
    check_roundtrip(lambda x: lax.top_k(x, 4), RNG.integers(-9, 9, (2, 3, 8)).astype(np.int32), op_types={"TopK"})
    check_roundtrip(lambda x: lax.top_k(x, 2), _f32(5, 7), symbolic=["b, 7"], op_types={"TopK"})


def test_chlo_top_k_module():
    x = _ties(3, 8)
    text = jax.jit(lambda x: lax.top_k(x, 3)).lower(x).as_text()
    assert "chlo.top_k" in text
    model = module_to_onnx(text).model
    assert [n.op_type for n in model.graph.node].count("TopK") == 1
    got = run_onnx(model, x)
    for g, w in zip(got, lax.top_k(x, 3)):
        assert_close(g, np.asarray(w))


def test_multi_key_sort_is_listed():
    def fn(x, y):
        return lax.sort((x, y), dimension=0, num_keys=2)

    with pytest.raises(UnsupportedExportError, match="sort comparator"):
        export_jax(fn, _f32(4), _f32(4))


_LE_SORT = """
func.func @main(%arg0: tensor<5xf32>) -> tensor<5xf32> {
  %0 = "stablehlo.sort"(%arg0) <{dimension = 0 : i64, is_stable = true}> ({
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    %1 = stablehlo.compare LE, %a, %b, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
    stablehlo.return %1 : tensor<i1>
  }) : (tensor<5xf32>) -> tensor<5xf32>
  return %0 : tensor<5xf32>
}
"""


def test_non_strict_comparator_is_listed():
    with pytest.raises(UnsupportedExportError, match="sort comparator"):
        module_to_onnx(_LE_SORT)
