"""exporter/idioms.py: LayerNormalization, Softmax, Erf and ReduceMean recovered from the
spellings our frontend and JAX lower them to, values checked against onnxruntime on the
original ONNX model (or JAX)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import onnx
import onnx.helper as oh
import pytest

import onnx_stablehlo
from onnx_stablehlo.exporter import module_to_onnx
from onnx_stablehlo.exporter.idioms import ERF_COEFFICIENTS
from tests.exporter.util import assert_close, check_roundtrip, run_onnx

RNG = np.random.default_rng(0)
F32 = onnx.TensorProto.FLOAT


def _f32(*shape, scale=1.0):
    return (RNG.standard_normal(shape) * scale).astype(np.float32)


def _model(nodes, inputs, outputs, initializers=(), opset=17) -> onnx.ModelProto:
    graph = oh.make_graph(nodes, "g", inputs, outputs, initializer=list(initializers))
    return oh.make_model(graph, opset_imports=[oh.make_opsetid("", opset)])


def _round_trip(model: onnx.ModelProto) -> onnx.ModelProto:
    """ONNX -> our frontend's StableHLO (symbolic dims kept) -> our exporter's ONNX."""
    lowered = onnx_stablehlo.lower(model, weights="inline")
    dims = [[d if isinstance(d, int) else str(d) for d in shape] for _, shape in lowered.input_types]
    return module_to_onnx(str(lowered.module), input_names=lowered.input_names, input_dims=dims,
                          output_names=lowered.output_names).model


def _ops(model: onnx.ModelProto) -> list[str]:
    return [n.op_type for n in model.graph.node]


def _check(model: onnx.ModelProto, feeds: list[np.ndarray], fused: str, absent: tuple[str, ...] = ()) -> onnx.ModelProto:
    exported = _round_trip(model)
    ops = _ops(exported)
    assert fused in ops, ops
    for op in absent:
        assert op not in ops, ops
    for got, want in zip(run_onnx(exported, *feeds), run_onnx(model, *feeds), strict=True):
        assert_close(got, want)
    return exported


@pytest.mark.parametrize("bias", [True, False])
def test_layer_norm_from_onnx(bias):
    """ONNX LayerNormalization over the last axis (symbolic batch and sequence) comes back."""
    d = 16
    weight = onnx.numpy_helper.from_array(_f32(d), "w")
    inits = [weight]
    inputs = ["x", "w"]
    if bias:
        inits.append(onnx.numpy_helper.from_array(_f32(d), "b"))
        inputs.append("b")
    node = oh.make_node("LayerNormalization", inputs, ["y"], axis=-1, epsilon=1e-5)
    model = _model([node], [oh.make_tensor_value_info("x", F32, ["batch", "seq", d])],
                   [oh.make_tensor_value_info("y", F32, ["batch", "seq", d])], inits)
    exported = _check(model, [_f32(2, 5, d, scale=3.0)], "LayerNormalization", ("Sqrt", "ReduceSum"))
    assert _ops(exported).count("LayerNormalization") == 1


def test_layer_norm_from_jax():
    def layer_norm(x, w, b):
        mean = jnp.mean(x, axis=-1, keepdims=True)
        var = jnp.mean((x - mean) ** 2, axis=-1, keepdims=True)
        return (x - mean) / jnp.sqrt(var + 1e-5) * w + b

    check_roundtrip(layer_norm, _f32(4, 8, 32), _f32(32), _f32(32), op_types={"LayerNormalization"})


def test_layer_norm_not_over_leading_axes():
    """A normalization over a leading axis is no LayerNormalization(axis=-1): it stays reductions."""
    def norm(x):
        mean = jnp.mean(x, axis=0, keepdims=True)
        var = jnp.mean((x - mean) ** 2, axis=0, keepdims=True)
        return (x - mean) / jnp.sqrt(var + 1e-5)

    model = check_roundtrip(norm, _f32(6, 5))
    assert "LayerNormalization" not in _ops(model)


@pytest.mark.parametrize("axis", [-1, 1])
def test_softmax_from_onnx(axis):
    node = oh.make_node("Softmax", ["x"], ["y"], axis=axis)
    model = _model([node], [oh.make_tensor_value_info("x", F32, ["batch", 4, "seq"])],
                   [oh.make_tensor_value_info("y", F32, ["batch", 4, "seq"])], opset=13)
    exported = _check(model, [_f32(2, 4, 7, scale=5.0)], "Softmax", ("Exp", "ReduceMax"))
    softmax = next(n for n in exported.graph.node if n.op_type == "Softmax")
    assert oh.get_attribute_value(softmax.attribute[0]) % 3 == axis % 3


def test_softmax_from_jax():
    check_roundtrip(lambda x: jax.nn.softmax(x, axis=-1), _f32(3, 5, 9, scale=4.0), op_types={"Softmax"})


def test_softmax_over_two_axes_stays():
    model = check_roundtrip(lambda x: jax.nn.softmax(x, axis=(1, 2)), _f32(2, 3, 4))
    assert "Softmax" not in _ops(model)


def test_erf_from_onnx():
    """The frontend's float64 erf polynomial (frontend/builders/activations.py) comes back as Erf."""
    node = oh.make_node("Erf", ["x"], ["y"])
    model = _model([node], [oh.make_tensor_value_info("x", F32, ["n", 64])],
                   [oh.make_tensor_value_info("y", F32, ["n", 64])])
    x = np.concatenate([_f32(8, 64, scale=2.0), np.linspace(-6, 6, 64, dtype=np.float32)[None],
                        np.array([[np.nan, np.inf, -np.inf, 0.0, -0.0, 4.0, -4.0, 3.9] * 8], np.float32)])
    exported = _check(model, [x], "Erf", ("Cast", "Clip"))
    assert len(exported.graph.node) == 1


def test_erf_coefficients_are_the_frontends():
    from onnx_stablehlo.frontend.builders import activations

    assert ERF_COEFFICIENTS is activations.ERF_COEFFICIENTS


def test_gelu_from_onnx():
    """Exact GELU (Div, Erf, Add, Mul, Mul as torch exports it) keeps its Erf."""
    c = lambda name, v: onnx.numpy_helper.from_array(np.array(v, np.float32), name)  # noqa: E731
    nodes = [oh.make_node("Div", ["x", "sqrt2"], ["a"]), oh.make_node("Erf", ["a"], ["e"]),
             oh.make_node("Add", ["e", "one"], ["p"]), oh.make_node("Mul", ["x", "p"], ["m"]),
             oh.make_node("Mul", ["m", "half"], ["y"])]
    model = _model(nodes, [oh.make_tensor_value_info("x", F32, ["n", 32])],
                   [oh.make_tensor_value_info("y", F32, ["n", 32])],
                   [c("sqrt2", 1.4142135), c("one", 1.0), c("half", 0.5)])
    _check(model, [_f32(4, 32, scale=3.0)], "Erf", ("Cast",))


@pytest.mark.parametrize("keepdims", [0, 1])
def test_reduce_mean_from_onnx(keepdims):
    node = oh.make_node("ReduceMean", ["x"], ["y"], axes=[1, 2], keepdims=keepdims)
    out = ["batch", 1, 1] if keepdims else ["batch"]
    model = _model([node], [oh.make_tensor_value_info("x", F32, ["batch", 3, 5])],
                   [oh.make_tensor_value_info("y", F32, out)])
    _check(model, [_f32(2, 3, 5)], "ReduceMean", ("Div",))


def test_mean_over_a_symbolic_dim_stays_a_division():
    """The count of a symbolic dim is no constant: Div(ReduceSum) stays."""
    model = check_roundtrip(lambda x: jnp.mean(x, axis=0), _f32(5, 3), symbolic=["n, 3"])
    assert "ReduceMean" not in _ops(model)


def test_example_model_round_trip_has_layer_norm_and_softmax():
    """The bundled tiny transformer, round-tripped, keeps its LayerNormalization and Softmax."""
    from onnx_stablehlo.exporter.artifact import artifact_to_onnx, best_artifact

    path = onnx_stablehlo.example_model_path()
    original = onnx.load(path)
    exported = artifact_to_onnx(best_artifact(onnx_stablehlo.compile(path))).model
    ops = _ops(exported)
    assert "LayerNormalization" in ops and "Softmax" in ops, sorted(set(ops))
    for op in ("LayerNormalization", "Softmax", "Erf"):
        assert ops.count(op) == _ops(original).count(op), (op, sorted(ops))
    feeds = [RNG.integers(0, 10, (2, 16)).astype(np.int64)]
    want = run_onnx(original, *feeds)
    got = run_onnx(exported, *feeds)[: len(want)]  # then the frontend's run-time checks output
    for g, w in zip(got, want, strict=True):
        assert_close(g, w)
