"""bench/_jax_cnn.py, the hand-written JAX CNN baseline of ``bench/zoo.py``, computes what
onnxruntime computes: the JAX columns time the same network, not a different one.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import onnx.helper as oh
import onnx.numpy_helper as onh
import pytest

pytest.importorskip("jax")

from tests.util import load_file_module, ort_run  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


def _baseline():
    return load_file_module(ROOT / "bench" / "_jax_cnn.py", "bench_jax_cnn")


def _small_cnn(rng: np.random.Generator) -> onnx.ModelProto:
    """Every layout-sensitive path of the baseline: a strided conv, BatchNormalization, a
    depthwise conv after an explicit Pad, ceil-mode pools with and without the pads counted,
    HardSwish (the pools' last windows run past the padded input), an SE gate (ReduceMean, HardSigmoid, Mul), a channel concat, LRN, a channel
    shuffle (Reshape, Transpose, Reshape), a Slice of a computed tensor, Sum and the classifier
    (Flatten, Gemm)."""

    def weight(name, shape):
        return onh.from_array((rng.standard_normal(shape) * 0.3).astype(np.float32), name)

    inits = [
        weight("w1", (8, 3, 3, 3)), weight("b1", (8,)),
        onh.from_array(np.abs(rng.standard_normal(8)).astype(np.float32) + 0.5, "bn_scale"),
        weight("bn_bias", (8,)), weight("bn_mean", (8,)),
        onh.from_array(np.abs(rng.standard_normal(8)).astype(np.float32) + 0.5, "bn_var"),
        onh.from_array(np.array([0, 0, 1, 0, 0, 0, 2, 1], np.int64), "pads"),
        weight("dw", (8, 1, 3, 3)), weight("w2", (8, 16, 1, 1)),
        onh.from_array(np.array([2, 3], np.int64), "axes"),
        onh.from_array(np.array([1, 2, 8, 5, 4], np.int64), "split_shape"),
        onh.from_array(np.array([1, 16, 5, 4], np.int64), "merge_shape"),
        weight("fc", (5, 160)), weight("fc_b", (5,)),
        onh.from_array(np.array([0], np.int64), "zero"), onh.from_array(np.array([8], np.int64), "eight"),
        onh.from_array(np.array([1], np.int64), "one"),
    ]
    nodes = [
        oh.make_node("Conv", ["x", "w1", "b1"], ["c1"], strides=[2, 2], pads=[1, 1, 1, 1]),
        oh.make_node("BatchNormalization", ["c1", "bn_scale", "bn_bias", "bn_mean", "bn_var"], ["bn"]),
        oh.make_node("HardSwish", ["bn"], ["a1"]),
        oh.make_node("Pad", ["a1", "pads"], ["p1"]),
        oh.make_node("Conv", ["p1", "dw"], ["d1"], group=8),
        oh.make_node("ReduceMean", ["d1", "axes"], ["m1"], keepdims=1),
        oh.make_node("HardSigmoid", ["m1"], ["g1"], alpha=0.2, beta=0.5),
        oh.make_node("Mul", ["d1", "g1"], ["s1"]),
        oh.make_node("MaxPool", ["s1"], ["mp"], kernel_shape=[2, 2], strides=[2, 2], pads=[1, 0, 0, 0], ceil_mode=1),
        oh.make_node("AveragePool", ["s1"], ["ap"], kernel_shape=[2, 2], strides=[2, 2], pads=[1, 0, 0, 0],
                     ceil_mode=1, count_include_pad=1),
        oh.make_node("Concat", ["mp", "ap"], ["cat"], axis=1),
        oh.make_node("LRN", ["cat"], ["lrn"], size=3, alpha=1e-3, beta=0.75, bias=1.0),
        oh.make_node("Reshape", ["lrn", "split_shape"], ["r1"]),
        oh.make_node("Transpose", ["r1"], ["t1"], perm=[0, 2, 1, 3, 4]),
        oh.make_node("Reshape", ["t1", "merge_shape"], ["shuffled"]),
        oh.make_node("Conv", ["shuffled", "w2"], ["c2"]),
        oh.make_node("Relu", ["c2"], ["r2"]),
        oh.make_node("Slice", ["shuffled", "zero", "eight", "one"], ["shuffled_half"]),
        oh.make_node("Sum", ["r2", "c2", "shuffled_half"], ["a2"]),
        oh.make_node("Flatten", ["a2"], ["flat"]),
        oh.make_node("Gemm", ["flat", "fc", "fc_b"], ["logits"], transB=1),
    ]
    graph = oh.make_graph(
        nodes, "small_cnn",
        [oh.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [1, 3, 16, 16])],
        [oh.make_tensor_value_info("logits", onnx.TensorProto.FLOAT, [1, 5]),
         oh.make_tensor_value_info("d1", onnx.TensorProto.FLOAT, [1, 8, 9, 7])],
        inits,
    )
    return oh.make_model(graph, opset_imports=[oh.make_opsetid("", 18)], ir_version=9)


def test_jax_cnn_baseline_matches_onnxruntime(tmp_path):
    rng = np.random.default_rng(0)
    model = _small_cnn(rng)
    path = tmp_path / "small_cnn.onnx"
    onnx.save(model, str(path))
    x = rng.standard_normal((1, 3, 16, 16)).astype(np.float32)
    fn, names = _baseline().jax_cnn(path)
    assert names == ["x"]
    got = fn(x)
    expected = ort_run(model, {"x": x})
    for g, e in zip(got, expected):
        assert g.shape == e.shape  # NCHW again at the graph's outputs
        np.testing.assert_allclose(g, e, rtol=1e-4, atol=1e-5)


def test_jax_cnn_baseline_names_an_op_it_does_not_write(tmp_path):
    graph = oh.make_graph(
        [oh.make_node("Resize", ["x", "", "scales"], ["y"], mode="linear")], "resize",
        [oh.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [1, 2, 4, 4])],
        [oh.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [1, 2, 8, 8])],
        [onh.from_array(np.array([1, 1, 2, 2], np.float32), "scales")],
    )
    path = tmp_path / "resize.onnx"
    onnx.save(oh.make_model(graph, opset_imports=[oh.make_opsetid("", 18)], ir_version=9), str(path))
    baseline = _baseline()
    with pytest.raises(baseline.UnsupportedOp, match="Resize"):
        baseline.jax_cnn(path)
