"""com.microsoft.nchwc (ORT's level-99 CPU layout) against onnxruntime: contrib_nchwc.py.

Two kinds of files:

* written by onnxruntime itself: a small CNN saved by an ORT session at ``ORT_ENABLE_ALL``
  (``optimized_model_filepath``), so the blocked filters, padded biases, fused Sum and
  activations are ORT's own for this CPU; checked against onnxruntime running the same file,
  at two batch sizes of one compiled model;
* written here for the other block size (the file an AVX-512 machine writes on an AVX2 one and
  the reverse): filters blocked by :func:`block_filter` (MLAS's ``OIHWBo``/``OIHWBiBo`` as
  ``reorder.cpp`` documents them, checked against ORT's own output in the first test) and
  checked against onnxruntime running the plain Conv.
"""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import helper, numpy_helper

import onnx_stablehlo
from onnx_stablehlo.errors import ShapeError, UnsupportedAttributeError
from onnx_stablehlo.frontend.lowering import contrib_nchwc
from tests import util

NCHWC = "com.microsoft.nchwc"
RTOL, ATOL = 1e-4, 1e-5


def block_filter(w: np.ndarray, block: int, layout: str) -> np.ndarray:
    """``w`` [O, I, KH, KW] as MLAS stores it (output, and for OIHWBiBo input, channels zero padded)."""
    out, inner, kh, kw = w.shape
    padded_out = -(-out // block) * block
    if layout == "OIHWBo":
        full = np.zeros((padded_out, inner, kh, kw), np.float32)
        full[:out] = w
        blocked = full.reshape(padded_out // block, block, inner, kh, kw).transpose(0, 2, 3, 4, 1)
        return np.ascontiguousarray(blocked).reshape(padded_out, inner, kh, kw)
    padded_in = -(-inner // block) * block
    full = np.zeros((padded_out, padded_in, kh, kw), np.float32)
    full[:out, :inner] = w
    blocked = full.reshape(padded_out // block, block, padded_in // block, block, kh, kw).transpose(0, 2, 4, 5, 3, 1)
    return np.ascontiguousarray(blocked).reshape(padded_out, padded_in, kh, kw)


def _cnn(rng: np.random.Generator) -> onnx.ModelProto:
    """Conv stem (3 channels: NCHW input) + Relu, strided conv, depthwise + Clip, pointwise + Add
    (Sum fusion) + Relu, MaxPool and AveragePool concatenated, grouped conv + Sigmoid, nearest
    Resize, global pools; a second input of 16 channels (ReorderInput) into a 1x1 conv + Tanh."""

    def w(*shape):
        return (rng.standard_normal(shape) * 0.3).astype(np.float32)

    inits = {
        "w1": w(16, 3, 3, 3), "b1": w(16), "w2": w(32, 16, 3, 3), "b2": w(32), "w3": w(32, 1, 3, 3),
        "w4": w(32, 32, 1, 1), "b4": w(32), "w5": w(32, 16, 3, 3), "lo": np.array(0, np.float32),
        "hi": np.array(6, np.float32), "scales": np.array([1, 1, 2, 2], np.float32), "w6": w(16, 16, 1, 1),
    }
    n = helper.make_node
    nodes = [
        n("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]),
        n("Relu", ["c1"], ["r1"]),
        n("Conv", ["r1", "w2", "b2"], ["c2"], pads=[1, 1, 1, 1], strides=[2, 2]),
        n("Conv", ["c2", "w3"], ["c3"], pads=[1, 1, 1, 1], group=32),
        n("Clip", ["c3", "lo", "hi"], ["r3"]),
        n("Conv", ["r3", "w4", "b4"], ["c4"]),
        n("Add", ["c4", "c2"], ["a4"]),
        n("Relu", ["a4"], ["r4"]),
        n("MaxPool", ["r4"], ["m"], kernel_shape=[2, 2], strides=[2, 2]),
        n("AveragePool", ["r4"], ["p"], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]),
        n("Concat", ["m", "p"], ["cat"], axis=1),
        n("Conv", ["cat", "w5"], ["c5"], pads=[1, 1, 1, 1], group=4),
        n("Sigmoid", ["c5"], ["s5"]),
        n("Resize", ["s5", "", "scales"], ["up"], mode="nearest"),
        n("GlobalAveragePool", ["up"], ["gap"]),
        n("GlobalMaxPool", ["r4"], ["gmp"]),
        n("Conv", ["z", "w6"], ["c6"]),
        n("Tanh", ["c6"], ["zo"]),
    ]
    graph = helper.make_graph(
        nodes,
        "cnn",
        [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, ["N", 3, 16, 16]),
         helper.make_tensor_value_info("z", onnx.TensorProto.FLOAT, ["N", 16, 4, 4])],
        [helper.make_tensor_value_info(name, onnx.TensorProto.FLOAT, None) for name in ("up", "gap", "gmp", "zo")],
        initializer=[numpy_helper.from_array(v, k) for k, v in inits.items()],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=9)


def _ort_level99(model: onnx.ModelProto, path) -> onnx.ModelProto:
    """The model as an onnxruntime session at ORT_ENABLE_ALL saves it (NCHWc layout for this CPU)."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.optimized_model_filepath = str(path)
    options.log_severity_level = 3  # the "hardware specific" warning
    ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    return onnx.load(str(path))


@pytest.mark.skipif(contrib_nchwc.host_block_size() is None, reason="onnxruntime writes NCHWc ops on x86-64 only")
def test_ort_written_nchwc_cnn_matches_onnxruntime_at_two_batch_sizes(tmp_path, rng):
    pytest.importorskip("onnxruntime")
    original = _cnn(rng)
    optimized = _ort_level99(original, tmp_path / "cnn.O99.onnx")
    ops = {n.op_type for n in optimized.graph.node if n.domain == NCHWC}
    assert {"ReorderInput", "ReorderOutput", "Conv", "MaxPool", "AveragePool", "GlobalMaxPool"} <= ops, ops
    activations = {helper.get_attribute_value(a) for n in optimized.graph.node for a in n.attribute if a.name == "activation"}
    assert {b"Relu", b"Clip", b"Tanh"} <= activations, activations
    assert any(n.op_type == "Conv" and n.domain == NCHWC and len(n.input) == 4 for n in optimized.graph.node)  # Sum

    # The test's blocking is ORT's: the stem's filter (NCHW input) is OIHWBo at this CPU's block size.
    stem = next(n for n in optimized.graph.node if n.domain == NCHWC and n.op_type == "Conv" and n.input[0] == "x")
    stored = numpy_helper.to_array(next(i for i in optimized.graph.initializer if i.name == stem.input[1]))
    w1 = numpy_helper.to_array(next(i for i in original.graph.initializer if i.name == "w1"))
    np.testing.assert_array_equal(stored, block_filter(w1, contrib_nchwc.host_block_size(), "OIHWBo"))

    feeds = [
        {"x": rng.standard_normal((n, 3, 16, 16)).astype(np.float32), "z": rng.standard_normal((n, 16, 4, 4)).astype(np.float32)}
        for n in (1, 3)
    ]
    util.check_dynamic(optimized, feeds, oracle=lambda _m, f: util.ort_run(original, f), rtol=RTOL, atol=ATOL)


def _plain_conv(x_shape, w, b, attributes, activation=None) -> onnx.ModelProto:
    """ai.onnx Conv (+ activation) over a graph input x: the oracle of a hand-written nchwc file."""
    n = helper.make_node
    nodes = [n("Conv", ["x", "w", "b"], ["y" if activation is None else "c"], **attributes)]
    if activation is not None:
        op, attrs = activation
        nodes.append(n(op, ["c"], ["y"], **attrs))
    graph = helper.make_graph(
        nodes, "plain", [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, x_shape)],
        [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, None)],
        initializer=[numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=9)


def _nchwc_model(nodes, x_shape, initializers, y_shape) -> onnx.ModelProto:
    graph = helper.make_graph(
        nodes, "nchwc", [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, x_shape)],
        [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, y_shape)],
        initializer=[numpy_helper.from_array(v, k) for k, v in initializers.items()],
    )
    return helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid(NCHWC, 1)], ir_version=9
    )


def test_block_16_decided_by_shapes_nchw_input_conv_with_leaky_relu(rng):
    # 12 input channels: below 16 (NCHW input, OIHWBo) but not a multiple of 8, so only block 16 fits.
    w = rng.standard_normal((20, 12, 3, 3)).astype(np.float32)
    b = rng.standard_normal(20).astype(np.float32)
    padded_b = np.concatenate([b, np.zeros(12, np.float32)])
    nodes = [
        helper.make_node("Conv", ["x", "w", "b"], ["t"], domain=NCHWC, pads=[1, 1, 1, 1],
                         activation="LeakyRelu", activation_params=[0.1]),
        helper.make_node("ReorderOutput", ["t"], ["y"], domain=NCHWC, channels=20),
    ]
    model = _nchwc_model(nodes, ["N", 12, 7, 7], {"w": block_filter(w, 16, "OIHWBo"), "b": padded_b}, ["N", 20, 7, 7])
    plain = _plain_conv(["N", 12, 7, 7], w, b, {"pads": [1, 1, 1, 1]}, ("LeakyRelu", {"alpha": 0.1}))
    feeds = [{"x": rng.standard_normal((n, 12, 7, 7)).astype(np.float32)} for n in (2, 3)]
    util.check_dynamic(model, feeds, oracle=lambda _m, f: util.ort_run(plain, f), rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize("block", [8, 16])
def test_blocked_input_conv_with_sum_and_nhwc_output_at_either_host_block(monkeypatch, rng, block):
    """ReorderInput of 20 channels (padded to 24 or 32), an OIHWBiBo conv, a Sum, ReorderOutput to NHWC:
    every size fits both blocks, so the host's block size decides (patched to each)."""
    monkeypatch.setattr(contrib_nchwc, "host_block_size", lambda: block)
    w = rng.standard_normal((48, 20, 3, 3)).astype(np.float32)
    b = rng.standard_normal(48).astype(np.float32)
    stored = block_filter(w, block, "OIHWBiBo")
    nodes = [
        helper.make_node("ReorderInput", ["x"], ["xb"], domain=NCHWC),
        helper.make_node("Conv", ["xb", "w", "b"], ["s"], domain=NCHWC, kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        helper.make_node("Conv", ["xb", "w", "b", "s"], ["t"], domain=NCHWC, pads=[1, 1, 1, 1], activation="Relu"),
        helper.make_node("ReorderOutput", ["t"], ["y"], domain=NCHWC, channels=48, channels_last=1),
    ]
    model = _nchwc_model(nodes, [2, 20, 5, 5], {"w": stored, "b": b}, [2, 5, 5, 48])
    x = rng.standard_normal((2, 20, 5, 5)).astype(np.float32)
    conv = util.ort_run(_plain_conv([2, 20, 5, 5], w, b, {"pads": [1, 1, 1, 1]}), {"x": x})[0]
    expected = np.maximum(2 * conv, 0).transpose(0, 2, 3, 1)
    (got,) = util.compile_and_run(model, {"x": x})
    np.testing.assert_allclose(got, expected, rtol=RTOL, atol=ATOL)


def test_nchwc_upsample_linear_and_nearest_match_resize(rng):
    x = rng.standard_normal((2, 8, 5, 6)).astype(np.float32)
    for mode, coordinates in (("nearest", "asymmetric"), ("linear", "asymmetric"), ("linear", "align_corners"), ("linear", "half_pixel")):
        nodes = [helper.make_node("Upsample", ["x"], ["y"], domain=NCHWC, scales=[1, 1, 2, 3], mode=mode,
                                  coordinate_transformation_mode=coordinates)]
        model = _nchwc_model(nodes, [2, 8, 5, 6], {}, [2, 8, 10, 18])
        extra = {"nearest_mode": "floor"} if mode == "nearest" else {}
        resize = helper.make_node("Resize", ["x", "", "s"], ["y"], mode=mode, coordinate_transformation_mode=coordinates, **extra)
        plain = helper.make_model(
            helper.make_graph([resize], "r", [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [2, 8, 5, 6])],
                              [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, None)],
                              initializer=[numpy_helper.from_array(np.array([1, 1, 2, 3], np.float32), "s")]),
            opset_imports=[helper.make_opsetid("", 17)], ir_version=9,
        )
        (got,) = util.compile_and_run(model, {"x": x})
        np.testing.assert_allclose(got, util.ort_run(plain, {"x": x})[0], rtol=RTOL, atol=ATOL, err_msg=f"{mode} {coordinates}")


def test_unknown_fused_activation_is_refused():
    w = np.zeros((16, 3, 1, 1), np.float32)
    nodes = [helper.make_node("Conv", ["x", "w"], ["y"], domain=NCHWC, activation="Softplus")]
    with pytest.raises(UnsupportedAttributeError, match="activation"):
        onnx_stablehlo.lower(_nchwc_model(nodes, [1, 3, 4, 4], {"w": w}, [1, 16, 4, 4]))


def test_reorder_output_channels_outside_the_padded_block_is_a_shape_error():
    nodes = [helper.make_node("ReorderOutput", ["x"], ["y"], domain=NCHWC, channels=8)]
    with pytest.raises(ShapeError, match="channels=8"):
        onnx_stablehlo.lower(_nchwc_model(nodes, [1, 32, 4, 4], {}, [1, 8, 4, 4]))


def test_ambiguous_block_without_an_mlas_cpu_is_a_shape_error(monkeypatch):
    monkeypatch.setattr(contrib_nchwc, "host_block_size", lambda: None)
    w = np.zeros((32, 3, 1, 1), np.float32)
    nodes = [helper.make_node("Conv", ["x", "w"], ["y"], domain=NCHWC)]
    with pytest.raises(ShapeError, match="block sizes \\[8, 16\\]"):
        onnx_stablehlo.lower(_nchwc_model(nodes, [1, 3, 4, 4], {"w": w}, [1, 32, 4, 4]))


@pytest.mark.parametrize(
    ("activation", "params", "with_z", "group"),
    [("Relu", [], False, 1), ("Sigmoid", [], True, 4), ("Tanh", [], False, 2), ("LeakyRelu", [0.1], True, 1),
     ("Clip", [0.0, 6.0], False, 4), ("HardSigmoid", [0.2, 0.5], True, 2), (None, [], True, 1)],
    ids=["relu", "sigmoid-z-grouped", "tanh-grouped", "leaky-relu-z", "clip-grouped", "hard-sigmoid-z", "no-activation-z"],
)
def test_fused_conv_matches_onnxruntime(activation, params, with_z, group, rng):
    """com.microsoft FusedConv (onnxruntime's optimizer writes it where the NCHWc transformer
    leaves a Conv + activation): activation(Conv(X, W, B) + Z), against onnxruntime's kernel."""
    pytest.importorskip("onnxruntime")
    attributes = {"pads": [1, 1, 1, 1], "group": group}
    if activation is not None:
        attributes["activation"] = activation
        if params:
            attributes["activation_params"] = params
    inputs = ["x", "w", "b"] + (["z"] if with_z else [])
    graph = helper.make_graph(
        [helper.make_node("FusedConv", inputs, ["y"], domain="com.microsoft", **attributes)], "g",
        [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [2, 8, 6, 6])]
        + ([helper.make_tensor_value_info("z", onnx.TensorProto.FLOAT, [2, 12, 6, 6])] if with_z else []),
        [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [2, 12, 6, 6])],
        [numpy_helper.from_array(rng.standard_normal((12, 8 // group, 3, 3)).astype(np.float32), "w"),
         numpy_helper.from_array(rng.standard_normal(12).astype(np.float32), "b")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)])
    feeds = {"x": rng.standard_normal((2, 8, 6, 6)).astype(np.float32) * 2}
    if with_z:
        feeds["z"] = rng.standard_normal((2, 12, 6, 6)).astype(np.float32)
    got = onnx_stablehlo.compile(model, check=False).run(feeds)
    np.testing.assert_allclose(got[0], util.ort_run(model, feeds)[0], rtol=RTOL, atol=ATOL)
