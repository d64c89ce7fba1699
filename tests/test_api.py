"""The public API: compile/lower/run, weights as arguments or constants, the executable cache."""

from __future__ import annotations

import numpy as np
import onnx
import pytest

import onnx_stablehlo
from onnx_stablehlo.frontend import jaxlib_mlir
from tests.util import assert_allclose_for_dtype, ort_run, parse

WEIGHTED = """<ir_version: 9, opset_import: ["" : 17]>
g (float[N, 4] x) => (float[N, 3] y) <float[4, 3] w = {w_values}, float[3] b = {{0.5, -1.0, 2.0}}, int64[2] shape = {{-1, 3}}> {{
  [mm] h = MatMul(x, w)
  [bias] z = Add(h, b)
  [reshape] y = Reshape(z, shape)
}}"""


def _weighted_model():
    values = ", ".join(str(v) for v in np.linspace(-1, 1, 12, dtype=np.float32).tolist())
    return parse(WEIGHTED.format(w_values="{" + values + "}"))


def test_weights_are_arguments_by_default_and_shape_initializers_are_constants():
    lowered = onnx_stablehlo.lower(_weighted_model(), {"x": (2, 4)})
    assert lowered.input_names == ["x"]
    assert lowered.parameter_names == ["w", "b"]
    assert "func.func public @main(%arg0: tensor<2x4xf32>, %arg1: tensor<4x3xf32>, %arg2: tensor<3xf32>)" in lowered.text


def test_single_element_float_initializers_are_constants_when_compiled(rng):
    """The dynamo exporter's GELU: Pow(x, 3.0) with the 3.0 an initializer, not a Constant node."""
    model = parse("""<ir_version: 9, opset_import: ["" : 18]>
g (float[2, 8] x) => (float[2, 8] y) <float three = {3.0}, float[8] w = {1, 2, 3, 4, 5, 6, 7, 8}> {
  cube = Pow(x, three)
  y = Mul(cube, w)
}""")
    x = rng.standard_normal((2, 8)).astype(np.float32)
    compiled = onnx_stablehlo.compile(model)
    np.testing.assert_allclose(compiled.run({"x": x})[0], ort_run(model, {"x": x})[0], rtol=1e-6)
    assert compiled.lowered.parameter_names == ["w"]  # the scalar is a constant; w stays a weight
    assert "dense<3.000000e+00>" in compiled.mlir  # a constant exponent XLA simplifies, not an argument
    # Lowering for a trainer keeps every float initializer an argument (a scalar can be trained).
    assert onnx_stablehlo.lower(model, {"x": (2, 8)}).parameter_names == ["three", "w"]


def test_inline_weights_make_a_self_contained_module():
    lowered = onnx_stablehlo.lower(_weighted_model(), {"x": (2, 4)}, weights="inline")
    assert lowered.parameter_names == []
    assert "func.func public @main(%arg0: tensor<2x4xf32>) -> tensor<2x3xf32>" in lowered.text
    assert "stablehlo.constant dense<[5.000000e-01, -1.000000e+00, 2.000000e+00]>" in lowered.text


@pytest.mark.parametrize("weights", ["args", "inline"])
def test_run_matches_onnxruntime_at_several_shapes_with_one_executable_each(weights, rng):
    model = _weighted_model()
    compiled = onnx_stablehlo.compile(model, weights=weights)
    assert compiled.input_names == ["x"] and compiled.output_names == ["y"]
    for batch in (1, 3, 1):
        feeds = {"x": rng.standard_normal((batch, 4)).astype(np.float32)}
        assert_allclose_for_dtype(compiled.run(feeds), ort_run(model, feeds))
    assert compiled.compile_count == 2  # batch 1 was cached
    assert "tensor<1x4xf32>" in compiled.mlir


def test_weights_go_to_the_device_once(rng):
    compiled = onnx_stablehlo.compile(_weighted_model())
    compiled.run({"x": rng.standard_normal((2, 4)).astype(np.float32)})
    first = dict(compiled._device_weights)
    compiled.run({"x": rng.standard_normal((5, 4)).astype(np.float32)})
    assert set(first) == {"w", "b"}
    assert all(compiled._device_weights[name] is buffer for name, buffer in first.items())


def test_emitted_text_round_trips_through_the_mlir_parser():
    from jaxlib.mlir import ir

    text = onnx_stablehlo.lower(onnx_stablehlo.example_model_path()).text
    with jaxlib_mlir.make_mlir_context() as context:
        module = ir.Module.parse(text, context)
        assert module.operation.verify()
        assert str(module) == text


def test_example_model_matches_onnxruntime(rng):
    path = onnx_stablehlo.example_model_path()
    compiled = onnx_stablehlo.compile(path)
    feeds = {"input_ids": rng.integers(0, 256, (2, 16)).astype(np.int64)}
    expected = ort_run(onnx.load(path), feeds)
    actual = compiled.run(feeds)
    np.testing.assert_allclose(actual[0], expected[0], rtol=1e-4, atol=1e-4)
    assert "stablehlo.dot_general" in compiled.mlir


def test_symbolic_model_shows_its_artifact_until_a_shape_is_compiled():
    compiled = onnx_stablehlo.compile(_weighted_model())
    assert "tensor<?x4xf32>" in compiled.mlir  # the artifact, before any run
    compiled = onnx_stablehlo.compile(_weighted_model(), dynamic=False)
    with pytest.raises(onnx_stablehlo.errors.ShapeError):
        compiled.mlir  # noqa: B018
    compiled = onnx_stablehlo.compile(_weighted_model(), input_shapes={"x": (7, 4)})
    assert "tensor<7x4xf32>" in compiled.mlir


def test_model_local_functions_are_inlined(rng):
    model = onnx.parser.parse_model("""<ir_version: 9, opset_import: ["" : 18, "local" : 1]>
g (float[3] x) => (float[3] y) {
  y = local.Twice(x)
}
<domain: "local", opset_import: ["" : 18]>
Twice (a) => (b) {
  b = Add(a, a)
}""")
    feeds = {"x": rng.standard_normal(3).astype(np.float32)}
    np.testing.assert_allclose(onnx_stablehlo.compile(model).run(feeds)[0], 2 * feeds["x"])


def test_load_accepts_path_bytes_and_proto(tmp_path):
    model = _weighted_model()
    path = tmp_path / "m.onnx"
    onnx.save(model, path)
    for source in (path, str(path), model.SerializeToString(), model):
        loaded = onnx_stablehlo.load(source)
        assert [i.name for i in loaded.graph.inputs] == ["x"]


def test_external_data_is_read(tmp_path, rng):
    model = _weighted_model()
    onnx.save(model, tmp_path / "ext.onnx", save_as_external_data=True, all_tensors_to_one_file=True,
              location="ext.data", size_threshold=0)
    feeds = {"x": rng.standard_normal((2, 4)).astype(np.float32)}
    np.testing.assert_allclose(
        onnx_stablehlo.compile(tmp_path / "ext.onnx").run(feeds)[0], ort_run(model, feeds)[0], rtol=1e-6
    )


def test_small_integer_inputs_needed_as_constants_are_specialized_on_their_values(rng):
    model = parse("""<ir_version: 9, opset_import: ["" : 18]>
g (float[2, 6] x, int64[2] s) => (float[A, B] y) {
  [reshape_1] y = Reshape(x, s)
}""")
    compiled = onnx_stablehlo.compile(model)
    x = rng.standard_normal((2, 6)).astype(np.float32)
    for shape in ([3, 4], [12, 1], [3, 4]):
        feeds = {"x": x, "s": np.array(shape, np.int64)}
        assert_allclose_for_dtype(compiled.run(feeds), ort_run(model, feeds))
    assert compiled.compile_count == 2  # one executable per value of s
    assert "tensor<3x4xf32>" in compiled.mlir
