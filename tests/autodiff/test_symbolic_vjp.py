"""build-vjp on modules with ``?`` dims: one ``@main_vjp`` per model, checked at two shapes.

Each ONNX model (float64, so central differences are accurate) is lowered with its symbolic
batch/sequence dims kept dynamic; ``build_vjp`` runs once on that module; then ``@main`` and the
one ``@main_vjp`` are specialized to two different input shapes and the inner-product identity
``<J t, c> == <t, J^T c>`` is checked at each (``tests/autodiff/symbolic_vjp_check.py``), with
``RTOL = 1e-6`` and ``ATOL = 1e-8`` as the per-rule checks.
"""

from __future__ import annotations

import numpy as np
import onnx
import onnx.parser
import pytest

from onnx_stablehlo import lower
from tests.autodiff.symbolic_vjp_check import build_symbolic_vjp, check_symbolic_vjp
from tests.autodiff.vjp_check import ATOL, RTOL


def _floats(rng: np.random.Generator, *shape: int, scale: float = 1.0) -> str:
    return ", ".join(f"{v:.17g}" for v in (scale * rng.standard_normal(shape)).ravel())


def _encoder_block(rng: np.random.Generator) -> onnx.ModelProto:
    """Embedding + residual, attention-style head split (Reshape/Transpose with symbolic
    sizes), Softmax, LayerNormalization, Slice/Concat along the symbolic sequence, ReduceMax."""
    text = f"""
    <ir_version: 9, opset_import: ["" : 18]>
    block (double[B, S, 8] x, int64[B, S] ids) => (double[B, S, 8] y, double[B, 8] pooled)
    <double[8, 8] w = {{{_floats(rng, 8, 8, scale=0.5)}}}, double[8] gamma = {{{_floats(rng, 8)}}},
     double[8] beta = {{{_floats(rng, 8)}}}, double[10, 8] emb = {{{_floats(rng, 10, 8)}}},
     int64[1] zero = {{0}}, int64[1] one = {{1}}, int64[1] two = {{2}}, int64[1] big = {{1000}},
     int64[2] heads = {{2, 4}}>
    {{
      e = Gather(emb, ids)
      h0 = Add(x, e)
      h = MatMul(h0, w)
      shape = Shape(h)
      bs = Slice(shape, zero, two)
      heads_shape = Concat<axis=0>(bs, heads)
      split = Reshape(h, heads_shape)
      scores = Transpose<perm=[0, 2, 1, 3]>(split)
      attn = Softmax<axis=-1>(scores)
      back = Transpose<perm=[0, 2, 1, 3]>(attn)
      merged = Reshape(back, shape)
      n = LayerNormalization<axis=-1>(merged, gamma, beta)
      rest = Slice(n, one, big, one)
      first = Slice(n, zero, one, one)
      c = Concat<axis=1>(rest, first)
      y = Tanh(c)
      pooled = ReduceMax<keepdims=0>(c, one)
    }}
    """
    return onnx.parser.parse_model(text)


def _conv_net(rng: np.random.Generator) -> onnx.ModelProto:
    """Conv, Relu, MaxPool, AveragePool, Flatten and a Gemm with a symbolic batch."""
    text = f"""
    <ir_version: 9, opset_import: ["" : 18]>
    convnet (double[N, 2, 6, 6] x) => (double[N, 3] y)
    <double[3, 2, 3, 3] w = {{{_floats(rng, 3, 2, 3, 3, scale=0.4)}}}, double[3] b = {{{_floats(rng, 3)}}},
     double[27, 3] fc = {{{_floats(rng, 27, 3, scale=0.3)}}}>
    {{
      c = Conv<pads = [1, 1, 1, 1]>(x, w, b)
      r = Relu(c)
      m = MaxPool<kernel_shape = [2, 2], strides = [2, 2]>(r)
      a = AveragePool<kernel_shape = [2, 2], strides = [1, 1], pads = [0, 0, 1, 1]>(m)
      f = Flatten<axis = 1>(a)
      g = MatMul(f, fc)
      y = Sigmoid(g)
    }}
    """
    return onnx.parser.parse_model(text)


def _conv_spatial(rng: np.random.Generator) -> onnx.ModelProto:
    """Convolutions and an AveragePool over symbolic H, W (stride 1; asymmetric pads, kernel
    dilation, groups) and a MatMul over the pooled channels."""
    text = f"""
    <ir_version: 9, opset_import: ["" : 18]>
    convhw (double[N, 2, H, W] x) => (double[N, 3] y)
    <double[4, 2, 3, 3] w = {{{_floats(rng, 4, 2, 3, 3, scale=0.4)}}}, double[4, 2, 2, 2] g = {{{_floats(rng, 4, 2, 2, 2, scale=0.4)}}},
     double[4, 3] fc = {{{_floats(rng, 4, 3, scale=0.5)}}}>
    {{
      c = Conv<pads = [1, 0, 2, 1], dilations = [2, 1]>(x, w)
      t = Tanh(c)
      d = Conv<pads = [1, 1, 0, 0], group = 2>(t, g)
      a = AveragePool<kernel_shape = [2, 3], pads = [1, 0, 0, 1]>(d)
      p = GlobalAveragePool(a)
      f = Flatten<axis = 1>(p)
      y = MatMul(f, fc)
    }}
    """
    return onnx.parser.parse_model(text)


def _inputs_conv_spatial(rng, h, w):
    return [rng.standard_normal((2, 2, h, w))]


def _topk_cumsum(rng: np.random.Generator) -> onnx.ModelProto:
    """TopK (a sort with a dynamic iota), CumSum, Expand and Where over symbolic dims."""
    text = f"""
    <ir_version: 9, opset_import: ["" : 18]>
    topk (double[B, 6] x, double[B, 1] s) => (double[B, 2] top, double[B, 6] cum)
    <double[6] bias = {{{_floats(rng, 6)}}}>
    {{
      k = Constant<value = int64[1] {{2}}>()
      top, idx = TopK<axis = -1>(x, k)
      shape = Shape(x)
      wide = Expand(s, shape)
      pos = Greater(x, bias)
      mixed = Where(pos, wide, x)
      axis = Constant<value = int64 {{1}}>()
      cum = CumSum(mixed, axis)
    }}
    """
    return onnx.parser.parse_model(text)


def _inputs_block(rng, b, s):
    return [rng.standard_normal((b, s, 8)), rng.integers(0, 10, (b, s))]


def _inputs_conv(rng, n, _):
    return [rng.standard_normal((n, 2, 6, 6))]


def _inputs_topk(rng, b, _):
    # distinct values away from ties (TopK's derivative is piecewise)
    x = np.stack([rng.permutation(6) + 0.1 * rng.standard_normal(6) for _ in range(b)]).astype(np.float64)
    return [x, rng.standard_normal((b, 1))]


CASES = {
    "encoder-block-B-S": (_encoder_block, _inputs_block, [(2, 3), (3, 5)]),
    "conv-pool-N": (_conv_net, _inputs_conv, [(1, 0), (3, 0)]),
    "conv-spatial-H-W": (_conv_spatial, _inputs_conv_spatial, [(5, 6), (7, 4)]),
    "topk-cumsum-B": (_topk_cumsum, _inputs_topk, [(2, 0), (5, 0)]),
}


@pytest.mark.parametrize(
    "case", [c if c == "encoder-block-B-S" else pytest.param(c, marks=pytest.mark.slow) for c in sorted(CASES)]
)
def test_one_symbolic_vjp_matches_finite_differences_at_two_shapes(case):
    rng = np.random.default_rng(0)
    make, inputs, shapes = CASES[case]
    model = make(rng)
    onnx.checker.check_model(model)
    lowered = lower(model, weights="inline")
    assert "?" in lowered.text, "the model must lower with dynamic dims"
    forward, vjp = build_symbolic_vjp(lowered.text)
    assert "tensor<?x" in vjp.split("func.func")[1].split("{")[0], "@main_vjp keeps the ? dims"
    for sizes in shapes:
        arrays = inputs(rng, *sizes)
        check = check_symbolic_vjp(forward, vjp, arrays, rng)
        assert check.ok(RTOL, ATOL), f"{case} at {[a.shape for a in arrays]}: {check}"
        assert max(float(np.abs(c).max()) for c in check.cotangents) > 1e-3  # not a silent zero


def test_slice_whose_start_depends_on_a_dynamic_dim():
    """``x[n - 3 : n : 2]`` of a ``tensor<?>``: real_dynamic_slice with a start computed from
    ``get_dimension_size``; its transpose is a dynamic_pad with run-time edges."""
    text = """
func.func @main(%x: tensor<?xf64>) -> tensor<2xf64> {
  %n = stablehlo.get_dimension_size %x, dim = 0 : (tensor<?xf64>) -> tensor<i32>
  %n64 = stablehlo.convert %n : (tensor<i32>) -> tensor<i64>
  %limit = stablehlo.reshape %n64 : (tensor<i64>) -> tensor<1xi64>
  %three = stablehlo.constant dense<[3]> : tensor<1xi64>
  %start = stablehlo.subtract %limit, %three : tensor<1xi64>
  %stride = stablehlo.constant dense<[2]> : tensor<1xi64>
  %y = stablehlo.real_dynamic_slice %x, %start, %limit, %stride : (tensor<?xf64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<2xf64>
  %t = stablehlo.tanh %y : tensor<2xf64>
  return %t : tensor<2xf64>
}"""
    rng = np.random.default_rng(1)
    forward, vjp = build_symbolic_vjp(text)
    assert "stablehlo.dynamic_pad" in vjp
    for size in (5, 8):
        check = check_symbolic_vjp(forward, vjp, [rng.standard_normal(size)], rng)
        assert check.ok(RTOL, ATOL), check
        expected_nonzero = np.zeros(size, bool)
        expected_nonzero[[size - 3, size - 1]] = True
        np.testing.assert_array_equal(check.cotangents[0] != 0, expected_nonzero)
