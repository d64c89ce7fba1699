"""Compile-time folding with onnx.reference (frontend/folding.py): one evaluator per distinct
node, shared by equal nodes, with results that follow each node's own attributes and opset."""

from __future__ import annotations

import numpy as np

from onnx_stablehlo.frontend import folding
from tests.util import compile_and_run, oracle_run, parse


def test_equal_nodes_share_an_evaluator_and_distinct_ones_do_not(rng):
    model = parse("""<ir_version: 9, opset_import: ["" : 17]>
g (float[2, 3] x) => (float[2, 3] y) {
  a = Constant <value = int64[2] {2, 3}> ()
  zero = Constant <value = int64[1] {0}> ()
  a0 = Unsqueeze (a, zero)
  a1 = Unsqueeze (a, zero)
  b = Concat <axis = 0> (a0, a1)
  c = Concat <axis = 1> (a0, a1)
  n = Constant <value = int64[1] {-1}> ()
  sb = Reshape (b, n)
  sc = Reshape (c, n)
  s = Add (sb, sc)
  t = Slice (s, zero, n)
  u = ReduceSum <keepdims = 0> (t)
  f = Cast <to = 1> (u)
  y = Mul (x, f)
}""")
    folding._reference_evaluator.cache_clear()
    x = rng.standard_normal((2, 3)).astype(np.float32)
    (ours,) = compile_and_run(model, {"x": x})
    np.testing.assert_allclose(ours, oracle_run(model, {"x": x})[0], rtol=1e-6)
    np.testing.assert_allclose(ours, x * 14.0, rtol=1e-6)  # 4 + 6 + 4 of [4, 6, 4, 6]
    info = folding._reference_evaluator.cache_info()
    # The two Unsqueeze share one evaluator, the two Reshapes another; the two Concat differ in
    # their axis; Add, Slice, ReduceSum and Cast have one each.
    assert (info.hits, info.misses) == (2, 8), info
