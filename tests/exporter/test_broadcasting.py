"""chlo.broadcast_* (numpy and broadcast_dimensions alignment), stablehlo.broadcast,
chlo.constant_like, chlo.constant: hand-written modules against numpy."""

from __future__ import annotations

import numpy as np

from onnx_stablehlo.exporter import module_to_onnx
from tests.exporter.util import run_onnx

_MODULE = """
func.func @main(%a: tensor<2x3xf32>, %b: tensor<3xf32>, %c: tensor<2xf32>, %i: tensor<2x3xi32>, %s: tensor<3xi32>,
                %p: tensor<2x1xi1>, %d: tensor<?x3xf32>)
    -> (tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xi1>, tensor<2x3xi32>, tensor<4x2x3xf32>, tensor<?x3xf32>,
        tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xi32>, tensor<2x3xf32>, tensor<2xi32>, tensor<2x3xi1>) {
  %0 = chlo.broadcast_add %a, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %1 = chlo.broadcast_subtract %a, %c {broadcast_dimensions = array<i64: 0>} : (tensor<2x3xf32>, tensor<2xf32>) -> tensor<2x3xf32>
  %2 = chlo.broadcast_compare %a, %b {comparison_direction = #chlo<comparison_direction LT>} : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xi1>
  %3 = chlo.broadcast_shift_left %i, %s : (tensor<2x3xi32>, tensor<3xi32>) -> tensor<2x3xi32>
  %4 = stablehlo.broadcast %a, sizes = [4] : (tensor<2x3xf32>) -> tensor<4x2x3xf32>
  %5 = "chlo.constant_like"(%d) {value = 2.5 : f32} : (tensor<?x3xf32>) -> tensor<?x3xf32>
  %6 = chlo.broadcast_atan2 %c, %a {broadcast_dimensions = array<i64: 0>} : (tensor<2xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %7 = chlo.broadcast_select %p, %a, %b : (tensor<2x1xi1>, tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %8 = chlo.broadcast_remainder %i, %s : (tensor<2x3xi32>, tensor<3xi32>) -> tensor<2x3xi32>
  %9 = chlo.broadcast_maximum %a, %c {broadcast_dimensions = array<i64: 0>} : (tensor<2x3xf32>, tensor<2xf32>) -> tensor<2x3xf32>
  %10 = "chlo.constant"() {value = dense<[7, -1]> : tensor<2xi32>} : () -> tensor<2xi32>
  %11 = chlo.broadcast_compare %a, %c {broadcast_dimensions = array<i64: 0>, comparison_direction = #chlo<comparison_direction NE>} : (tensor<2x3xf32>, tensor<2xf32>) -> tensor<2x3xi1>
  return %0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11 : tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xi1>, tensor<2x3xi32>, tensor<4x2x3xf32>, tensor<?x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xi32>, tensor<2x3xf32>, tensor<2xi32>, tensor<2x3xi1>
}
"""


def test_broadcasting_ops_against_numpy():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((2, 3)).astype(np.float32)
    b = rng.standard_normal(3).astype(np.float32)
    c = np.array([a[0, 1], 0.5], np.float32)
    i = rng.integers(-1000, 1000, (2, 3)).astype(np.int32)
    s = np.array([1, 5, 40], np.int32)
    p = np.array([[True], [False]])
    d = np.zeros((5, 3), np.float32)
    out = run_onnx(module_to_onnx(_MODULE).model, a, b, c, i, s, p, d)
    col = c[:, None]
    np.testing.assert_allclose(out[0], a + b, rtol=1e-6)
    np.testing.assert_allclose(out[1], a - col, rtol=1e-6)
    np.testing.assert_array_equal(out[2], a < b)
    np.testing.assert_array_equal(out[3], np.where(s >= 32, 0, i << np.minimum(s, 31)))
    np.testing.assert_array_equal(out[4], np.broadcast_to(a, (4, 2, 3)))
    np.testing.assert_array_equal(out[5], np.full((5, 3), 2.5, np.float32))
    np.testing.assert_allclose(out[6], np.arctan2(col, a), rtol=1e-6)
    np.testing.assert_array_equal(out[7], np.where(p, a, b))
    np.testing.assert_array_equal(out[8], np.fmod(i, s))
    np.testing.assert_array_equal(out[9], np.maximum(a, col))
    np.testing.assert_array_equal(out[10], [7, -1])
    np.testing.assert_array_equal(out[11], a != col)


_UNSORTED = """
func.func @main(%a: tensor<2x3x4xf32>, %b: tensor<4x2xf32>) -> tensor<2x3x4xf32> {
  %0 = chlo.broadcast_multiply %a, %b {broadcast_dimensions = array<i64: 2, 0>} : (tensor<2x3x4xf32>, tensor<4x2xf32>) -> tensor<2x3x4xf32>
  return %0 : tensor<2x3x4xf32>
}
"""


def test_broadcast_dimensions_unsorted():
    rng = np.random.default_rng(1)
    a = rng.standard_normal((2, 3, 4)).astype(np.float32)
    b = rng.standard_normal((4, 2)).astype(np.float32)
    got = run_onnx(module_to_onnx(_UNSORTED).model, a, b)[0]
    np.testing.assert_allclose(got, a * b.T[:, None, :], rtol=1e-6)
