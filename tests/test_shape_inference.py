"""Symbolic shape inference (onnx_stablehlo.infer_shapes / annotate_shapes, `onnx-stablehlo shapes`)."""

from __future__ import annotations

import numpy as np
import onnx

import onnx_stablehlo
from onnx_stablehlo.cli import main
from tests.util import ort_run, parse

MODEL = """<ir_version: 9, opset_import: ["" : 18]>
g (float[batch, seq, 8] x, float[batch, seq2] mask, float[batch, n] bias) => (float[batch, seq, 2, 4] y, float[batch, pairs] z) {
  two = Constant <value = int64[1] {2}> ()
  tail = Constant <value = int64[2] {2, 4}> ()
  zero = Constant <value = int64[1] {0}> ()
  shape = Shape(x)
  lead = Slice(shape, zero, two)
  target = Concat <axis = 0> (lead, tail)
  y = Reshape(x, target)
  doubled = Concat <axis = 1> (mask, mask)
  z = Add(doubled, bias)
}"""


def test_infer_shapes_gives_symbolic_expressions_and_merged_symbols():
    inferred = onnx_stablehlo.infer_shapes(parse(MODEL))
    shapes = {name: [str(d) for d in shape] for name, (_, shape) in inferred.values.items()}
    assert shapes["y"] == ["batch", "seq", "2", "4"]
    assert shapes["doubled"] == ["batch", "2*seq2"]
    assert shapes["z"] == ["batch", "n"]  # n == 2*seq2 assumed, and recorded
    assert [str(e) for e in inferred.equalities] == ["n == 2*seq2 (node #8 producing 'z')"]
    assert inferred.values["y"][0].name == "FLOAT"
    assert "y: float[batch, seq, 2, 4]" in inferred.format().splitlines()


def test_fixing_a_dim_makes_shapes_static():
    inferred = onnx_stablehlo.infer_shapes(parse(MODEL), dims={"seq2": 3})
    assert [str(d) for d in inferred.values["doubled"][1]] == ["batch", "6"]


def test_annotated_model_carries_dim_params_and_still_runs(tmp_path, rng):
    path = tmp_path / "annotated.onnx"
    annotated = onnx_stablehlo.annotate_shapes(parse(MODEL), path)
    infos = {v.name: v for v in onnx.load(path).graph.value_info}
    dims = [d.dim_param or d.dim_value for d in infos["doubled"].type.tensor_type.shape.dim]
    assert dims == ["batch", "2*seq2"]
    z_dims = [d.dim_param or d.dim_value for d in annotated.graph.output[1].type.tensor_type.shape.dim]
    assert z_dims == ["batch", "n"]  # the declared 'pairs' was not a known size
    onnx.checker.check_model(annotated)
    feeds = {"x": rng.standard_normal((2, 5, 8)).astype(np.float32),
             "mask": rng.standard_normal((2, 3)).astype(np.float32),
             "bias": rng.standard_normal((2, 6)).astype(np.float32)}
    for got, want in zip(ort_run(annotated, feeds), ort_run(parse(MODEL), feeds)):
        np.testing.assert_array_equal(got, want)


def test_cli_prints_shapes_and_writes_the_annotated_model(tmp_path, capsys):
    source = tmp_path / "model.onnx"
    onnx.save(parse(MODEL), source)
    out = tmp_path / "annotated.onnx"
    assert main(["shapes", str(source), "-o", str(out), "--dim", "batch=4"]) == 0
    captured = capsys.readouterr()
    assert "doubled: float[4, 2*seq2]" in captured.out.splitlines()
    assert out.exists() and "shapes of" in captured.err


def test_matmul_and_concat_merge_the_symbols_they_equate():
    inferred = onnx_stablehlo.infer_shapes(parse("""<ir_version: 9, opset_import: ["" : 18]>
g (float[b, s, k1] x, float[k2, n] w, float[b, t, n2] y) => (float[b, seq, n] z) {
  h = MatMul(x, w)
  z = Concat <axis = 1> (h, y)
}"""))
    assert [str(e) for e in inferred.equalities] == [
        "k1 == k2 (node #0 producing 'h')",
        "n == n2 (node #1 producing 'z')",
    ]
    assert [str(d) for d in inferred.values["z"][1]] == ["b", "s + t", "n"]
