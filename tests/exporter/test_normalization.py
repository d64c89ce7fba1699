"""batch_norm_inference / training / grad: hand-written modules against the spec's formulas in numpy."""

from __future__ import annotations

import numpy as np
import pytest

from onnx_stablehlo.exporter import module_to_onnx
from tests.exporter.util import run_onnx

_EPS = 1e-3


def _inference(shape: str, c: int, feature: int) -> str:
    return f"""
func.func @main(%x: tensor<{shape}xf32>, %s: tensor<{c}xf32>, %o: tensor<{c}xf32>, %m: tensor<{c}xf32>, %v: tensor<{c}xf32>) -> tensor<{shape}xf32> {{
  %0 = "stablehlo.batch_norm_inference"(%x, %s, %o, %m, %v) {{epsilon = {_EPS} : f32, feature_index = {feature} : i64}} : (tensor<{shape}xf32>, tensor<{c}xf32>, tensor<{c}xf32>, tensor<{c}xf32>, tensor<{c}xf32>) -> tensor<{shape}xf32>
  return %0 : tensor<{shape}xf32>
}}
"""


def _param_shape(rank, feature, c):
    return [c if a == feature else 1 for a in range(rank)]


@pytest.mark.parametrize("dims, feature, op", [((2, 3, 4, 5), 1, "BatchNormalization"), ((2, 4, 3), 2, "Sub"),
                                               ((3,), 0, "Sub")])
def test_batch_norm_inference(dims, feature, op):
    rng = np.random.default_rng(0)
    c = dims[feature]
    x = rng.standard_normal(dims).astype(np.float32)
    s, o, m = (rng.standard_normal(c).astype(np.float32) for _ in range(3))
    v = rng.uniform(0.5, 2, c).astype(np.float32)
    model = module_to_onnx(_inference("x".join(map(str, dims)), c, feature)).model
    assert op in {n.op_type for n in model.graph.node}
    got = run_onnx(model, x, s, o, m, v)[0]
    r = lambda p: p.reshape(_param_shape(len(dims), feature, c))  # noqa: E731
    want = (x - r(m)) / np.sqrt(r(v) + _EPS) * r(s) + r(o)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


_TRAINING = f"""
func.func @main(%x: tensor<?x4x3xf32>, %s: tensor<4xf32>, %o: tensor<4xf32>) -> (tensor<?x4x3xf32>, tensor<4xf32>, tensor<4xf32>) {{
  %0:3 = "stablehlo.batch_norm_training"(%x, %s, %o) {{epsilon = {_EPS} : f32, feature_index = 1 : i64}} : (tensor<?x4x3xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<?x4x3xf32>, tensor<4xf32>, tensor<4xf32>)
  return %0#0, %0#1, %0#2 : tensor<?x4x3xf32>, tensor<4xf32>, tensor<4xf32>
}}
"""


def test_batch_norm_training_dynamic_batch():
    rng = np.random.default_rng(1)
    x = (rng.standard_normal((5, 4, 3)) * 2 + 1).astype(np.float32)
    s, o = rng.standard_normal(4).astype(np.float32), rng.standard_normal(4).astype(np.float32)
    out, mean, var = run_onnx(module_to_onnx(_TRAINING).model, x, s, o)
    want_mean = x.mean(axis=(0, 2))
    want_var = x.var(axis=(0, 2))  # biased
    np.testing.assert_allclose(mean, want_mean, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(var, want_var, rtol=1e-5)
    r = lambda p: p[None, :, None]  # noqa: E731
    np.testing.assert_allclose(out, (x - r(want_mean)) / np.sqrt(r(want_var) + _EPS) * r(s) + r(o),
                               rtol=1e-4, atol=1e-5)


_GRAD = f"""
func.func @main(%x: tensor<6x3xf32>, %s: tensor<3xf32>, %m: tensor<3xf32>, %v: tensor<3xf32>, %dy: tensor<6x3xf32>) -> (tensor<6x3xf32>, tensor<3xf32>, tensor<3xf32>) {{
  %0:3 = "stablehlo.batch_norm_grad"(%x, %s, %m, %v, %dy) {{epsilon = {_EPS} : f32, feature_index = 1 : i64}} : (tensor<6x3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<6x3xf32>) -> (tensor<6x3xf32>, tensor<3xf32>, tensor<3xf32>)
  return %0#0, %0#1, %0#2 : tensor<6x3xf32>, tensor<3xf32>, tensor<3xf32>
}}
"""


def test_batch_norm_grad_matches_the_spec_formula():
    rng = np.random.default_rng(2)
    x = rng.standard_normal((6, 3))
    s, dy = rng.standard_normal(3), rng.standard_normal((6, 3))
    m, v = x.mean(axis=0), x.var(axis=0)
    args = [a.astype(np.float32) for a in (x, s, m, v, dy)]
    g_x, g_s, g_o = run_onnx(module_to_onnx(_GRAD).model, *args)
    n = x.shape[0]
    centered = x - m
    stddev = np.sqrt(v + _EPS)
    want_o = dy.sum(axis=0)
    want_s = (dy * centered / stddev).sum(axis=0)
    i6 = dy - dy.sum(axis=0) / n - (dy * centered).sum(axis=0) / n * centered / (v + _EPS)
    want_x = s / stddev * i6
    np.testing.assert_allclose(g_o, want_o, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(g_s, want_s, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(g_x, want_x, rtol=1e-4, atol=1e-5)
