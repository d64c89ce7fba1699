"""stablehlo.reduce_precision (Cast round trips, XLA's flush below the format's smallest normal)
and stablehlo.map (the computation inlined on whole tensors)."""

from __future__ import annotations

import jax
import numpy as np
import pytest
from jax import lax

from onnx_stablehlo.errors import UnsupportedExportError
from onnx_stablehlo.exporter import module_to_onnx
from tests.exporter.util import check_roundtrip, run_onnx

_EDGES = np.array([1e-6, -3e-8, 6.1e-5, 6.1034e-5, 1e-40, 70000.0, 65519.0, 65520.0, np.nan, -np.inf, 3.4028235e38,
                   1.00048828125, 1.0009765625 * 1.00048828125, 1e-39, -2.5], np.float32)


@pytest.mark.parametrize("bits", [(8, 7), (5, 10), (8, 23), (11, 52)])
def test_reduce_precision_matches_jax(bits):
    x = np.concatenate([_EDGES, np.random.default_rng(0).standard_normal(200).astype(np.float32) * 1e3])
    model = check_roundtrip(lambda v: lax.reduce_precision(v, *bits), x)
    if bits in ((8, 23), (11, 52)):
        assert {n.op_type for n in model.graph.node} <= {"Identity"}


def test_reduce_precision_other_formats_are_refused():
    with pytest.raises(UnsupportedExportError, match="e4m3"):
        check_roundtrip(lambda v: lax.reduce_precision(v, 4, 3), np.ones(3, np.float32))


_MAP = """
func.func @main(%a: tensor<2x3xf32>, %b: tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<2x3xf32>) {
  %0 = "stablehlo.map"(%a, %b) ({
  ^bb0(%x: tensor<f32>, %y: tensor<f32>):
    %c = stablehlo.constant dense<2.0> : tensor<f32>
    %m = stablehlo.multiply %x, %c : tensor<f32>
    %s = stablehlo.maximum %m, %y : tensor<f32>
    %e = stablehlo.exponential %s : tensor<f32>
    stablehlo.return %e : tensor<f32>
  }) {dimensions = array<i64: 0, 1>} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %1 = "stablehlo.map"(%a) ({
  ^bb0(%x: tensor<f32>):
    %c = stablehlo.constant dense<7.0> : tensor<f32>
    stablehlo.return %c : tensor<f32>
  }) {dimensions = array<i64: 0, 1>} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %0, %1 : tensor<2x3xf32>, tensor<2x3xf32>
}
"""


def test_map_inlines_elementwise_computation():
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal((2, 3)).astype(np.float32), rng.standard_normal((2, 3)).astype(np.float32)
    got, constant = run_onnx(module_to_onnx(_MAP).model, a, b)
    np.testing.assert_allclose(got, np.exp(np.maximum(a * 2, b)), rtol=1e-6)
    np.testing.assert_array_equal(constant, np.full((2, 3), 7.0, np.float32))


def test_map_with_a_non_elementwise_body_is_refused():
    text = _MAP.replace("%e = stablehlo.exponential %s : tensor<f32>",
                        "%e = stablehlo.reshape %s : (tensor<f32>) -> tensor<f32>")
    with pytest.raises(UnsupportedExportError, match="stablehlo.reshape"):
        module_to_onnx(text)


def test_jax_map_is_not_stablehlo_map():
    # jax.lax.map lowers to a while loop, not stablehlo.map: the hand-written module above is the test.
    assert "stablehlo.map" not in jax.jit(lambda v: lax.map(jax.numpy.sin, v)).lower(np.ones(3)).as_text()
