"""sink-transposes on seeded random CNN graphs, against onnxruntime and against the same build
without the pass.

Each graph chains the blocks whose layouts the pass moves through or stops at: dense, strided,
depthwise and grouped convolutions, ReLU / Clip / HardSwish / swish / decomposed HardSwish (a Div) activations, residual Adds,
channel Concats, MaxPool and AveragePool, squeeze-and-excitation gates, explicit Pads and
ShuffleNet's channel shuffle (a Reshape, where a transpose must stop), and ends in a global
pool and, for half the seeds, a raw convolution output as a second graph output.
"""

from __future__ import annotations

import numpy as np
import onnx
import pytest

import onnx_stablehlo
from onnx_stablehlo.frontend.graph_edit import FragmentBuilder
from onnx_stablehlo.passes.sink_transposes import SinkTransposesPass
from tests.util import assert_allclose_for_dtype, ort_run


class _Builder:
    """Random CNN pieces on a FragmentBuilder; weights are initializers (graph arguments), as
    in exported models."""

    def __init__(self, rng: np.random.Generator) -> None:
        self.rng = rng
        self.graph = FragmentBuilder(opset=17, prefix="cnn")
        self.count = 0

    def initializer(self, stem: str, array: np.ndarray) -> str:
        self.count += 1
        return self.graph.initializer(f"{stem}{self.count}", array)

    def weight(self, shape: tuple[int, ...]) -> str:
        scale = 1.0 / np.sqrt(np.prod(shape[1:]))
        return self.initializer("w", (self.rng.standard_normal(shape) * scale).astype(np.float32))

    def node(self, op: str, inputs: list[str], **attributes) -> str:
        return self.graph.node(op, inputs, **attributes)

    def conv(self, x: str, c_in: int, c_out: int, k: int, *, stride: int = 1, group: int = 1) -> str:
        w = self.weight((c_out, c_in // group, k, k))
        b = self.weight((c_out,))
        pad = k // 2
        return self.node("Conv", [x, w, b], pads=[pad] * 4, strides=[stride] * 2, group=group)

    def activation(self, x: str) -> str:
        kind = self.rng.integers(5)
        if kind == 0:
            return self.node("Relu", [x])
        if kind == 1:
            lo, hi = self.weight_scalar(0.0), self.weight_scalar(6.0)
            return self.node("Clip", [x, lo, hi])
        if kind == 2:
            return self.node("HardSwish", [x])
        if kind == 3:
            return self.node("Mul", [x, self.node("Sigmoid", [x])])
        # HardSwish as PaddlePaddle exports it: x * Clip(x + 3, 0, 6) / 6 (a Div by a constant,
        # which the lowering keeps behind an optimization_barrier)
        clipped = self.node("Clip", [self.node("Add", [x, self.weight_scalar(3.0)]), self.weight_scalar(0.0), self.weight_scalar(6.0)])
        return self.node("Div", [self.node("Mul", [x, clipped]), self.weight_scalar(6.0)])

    def weight_scalar(self, value: float) -> str:
        return self.initializer("s", np.array(value, np.float32))


def _random_cnn(seed: int) -> tuple[onnx.ModelProto, dict[str, np.ndarray]]:
    rng = np.random.default_rng(seed)
    g = _Builder(rng)
    batch, c, size = int(rng.integers(1, 3)), 8, 12
    x = g.graph.input("x", onnx.TensorProto.FLOAT, [batch, 3, 12, 12])
    x = g.activation(g.conv(x, 3, c, 3, stride=2))
    size //= 2
    outputs = []
    for _ in range(5):
        block = int(rng.integers(7))
        if block == 0:  # inverted residual with a depthwise 3x3 or 5x5
            k = int(rng.choice([3, 5]))
            y = g.activation(g.conv(x, c, 2 * c, 1))
            y = g.activation(g.conv(y, 2 * c, 2 * c, k, group=2 * c))
            x = g.node("Add", [x, g.conv(y, 2 * c, c, 1)])
        elif block == 1:  # squeeze-and-excitation gate
            pooled = g.node("GlobalAveragePool", [x])
            gate = g.node("HardSigmoid", [g.conv(g.node("Relu", [g.conv(pooled, c, 4, 1)]), 4, c, 1)], alpha=1 / 6)
            x = g.conv(g.node("Mul", [x, gate]), c, c, 1)
        elif block == 2:  # two branches concatenated, projected back
            left, right = g.activation(g.conv(x, c, c // 2, 1)), g.activation(g.conv(x, c, c // 2, 3))
            x = g.conv(g.node("Concat", [left, right], axis=1), c, c, 1)
        elif block == 3 and size >= 4:  # a pool: max or average
            op = "MaxPool" if rng.integers(2) else "AveragePool"
            x = g.node(op, [x], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
            size = (size + 1) // 2
        elif block == 4:  # channel shuffle: a Reshape + Transpose + Reshape the transpose stops at
            y = g.conv(x, c, c, 1, group=2)
            shape = g.initializer("shape", np.array([batch, 2, c // 2, size, size], np.int64))
            back = g.initializer("back", np.array([batch, c, size, size], np.int64))
            y = g.node("Transpose", [g.node("Reshape", [y, shape])], perm=[0, 2, 1, 3, 4])
            x = g.activation(g.node("Reshape", [y, back]))
        elif block == 5:  # an explicit Pad before a valid convolution
            pads = g.initializer("pads", np.array([0, 0, 1, 1, 0, 0, 1, 1], np.int64))
            w = g.weight((c, c, 3, 3))
            x = g.activation(g.node("Conv", [g.node("Pad", [x, pads]), w]))
        else:  # a plain residual block
            x = g.node("Relu", [g.node("Add", [x, g.conv(g.activation(g.conv(x, c, c, 3)), c, c, 3)])])
        if rng.integers(4) == 0:
            outputs.append(x)
    g.graph.output("pooled", g.node("GlobalAveragePool", [x]))
    if outputs:
        g.graph.output("side", outputs[-1])
    model = g.graph.model()
    feeds = {"x": rng.standard_normal((batch, 3, 12, 12)).astype(np.float32)}
    return model, feeds


@pytest.mark.parametrize("seed", range(10))
def test_random_cnn_matches_onnxruntime_and_the_build_without_the_pass(seed, monkeypatch):
    model, feeds = _random_cnn(seed)
    compiled = onnx_stablehlo.compile(model, check=False)
    got = compiled.run(feeds)
    assert_allclose_for_dtype(got, ort_run(model, feeds))
    text = compiled.executables.last.artifact.text
    assert "->[b, 0, 1, f]" in text, "no convolution went channels-last"

    monkeypatch.setattr(SinkTransposesPass, "run", lambda self, module: None)
    without = onnx_stablehlo.compile(model, check=False)
    assert "->[b, 0, 1, f]" not in without.executables.last.artifact.text
    for a, b in zip(got, without.run(feeds), strict=True):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-5, atol=1e-6)
