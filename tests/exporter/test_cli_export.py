"""``onnx-stablehlo export``: StableHLO modules and serialized jax.export artifacts to ONNX."""

from __future__ import annotations

import os

import jax
import jax.numpy as jnp
import numpy as np
import onnx
import pytest

from onnx_stablehlo.cli import main
from onnx_stablehlo.exporter.rules import default_registry

MLIR = """
func.func @main(%x: tensor<?x4xf32>, %y: tensor<4xf32>) -> tensor<?x4xf32> {
  %e = stablehlo.exponential %x : tensor<?x4xf32>
  %s = stablehlo.sine %e : tensor<?x4xf32>
  return %s : tensor<?x4xf32>
}
"""


@pytest.fixture
def module_path(tmp_path):
    path = tmp_path / "m.mlir"
    path.write_text(MLIR)
    return path


def test_export_writes_a_model(module_path, tmp_path, capsys):
    out = tmp_path / "m.onnx"
    assert main(["export", str(module_path), "-o", str(out), "--input-name", "x", "--input-name", "y",
                 "--output-name", "z"]) == 0
    model = onnx.load(out)
    assert [i.name for i in model.graph.input] == ["x", "y"]
    assert [o.name for o in model.graph.output] == ["z"]
    assert capsys.readouterr().out == ""
    assert sorted(os.listdir(tmp_path)) == ["m.mlir", "m.onnx"]


def test_export_prints_text_without_output(module_path, capsys):
    assert main(["export", str(module_path), "--opset", "21", "--no-optimize"]) == 0
    text = capsys.readouterr().out
    assert 'opset_import: ["" : 21]' in text
    assert "float[input_0_d0,4] input_0" in text and "Sin (" in text
    assert main(["export", str(module_path), "-o", "-"]) == 0
    assert "Exp (input_0)" in capsys.readouterr().out


def test_export_check(module_path, tmp_path, capsys):
    out = tmp_path / "m.onnx"
    assert main(["export", str(module_path), "--check", "--dim", "input_0_d0=3", "-o", str(out), "--print"]) == 0
    captured = capsys.readouterr()
    assert "check: OK" in captured.err and "Sin (" in captured.out
    assert main(["export", str(module_path), "--check", "--input-shape", "input_0=2,4", "--seed", "3",
                 "-o", str(out)]) == 0
    assert "seed 3" in capsys.readouterr().err


def test_export_check_needs_sizes_for_symbolic_dims(module_path, capsys):
    assert main(["export", str(module_path), "--check"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "--dim input_0_d0=N" in err
    assert main(["export", str(module_path), "--dim", "input_0_d0=3"]) == 1
    assert "--check" in capsys.readouterr().err


def test_export_check_reports_a_mismatch(module_path, tmp_path, capsys, monkeypatch):
    def broken_sine(ctx):
        return [ctx.emit("Cos", [ctx.input(0)])]

    monkeypatch.setitem(default_registry()._rules, "stablehlo.sine", broken_sine)
    out = tmp_path / "m.onnx"
    assert main(["export", str(module_path), "--check", "--dim", "input_0_d0=2", "-o", str(out)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: output 'output_0' differs from PJRT's")
    assert not out.exists()


def test_export_serialized_jax_artifact(tmp_path, capsys):
    b, = jax.export.symbolic_shape("b")
    exported = jax.export.export(jax.jit(lambda x: {"y": jnp.tanh(x) * 2}), platforms=("cpu",))(
        jax.ShapeDtypeStruct((b, 3), np.float32))
    artifact = tmp_path / "f.jax"
    artifact.write_bytes(exported.serialize())
    out = tmp_path / "f.onnx"
    assert main(["export", str(artifact), "--check", "--dim", "b=4", "-o", str(out)]) == 0
    assert "check: OK" in capsys.readouterr().err
    model = onnx.load(out)
    assert [o.name for o in model.graph.output] == ["y"]
    assert [d.dim_param or d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim] == ["b", 3]


def test_export_errors(tmp_path, capsys):
    assert main(["export", str(tmp_path / "missing.mlir")]) == 1
    assert "error: cannot read" in capsys.readouterr().err
    bad = tmp_path / "bad.mlir"
    bad.write_text("func.func @main(%x: tensor<4xcomplex<f32>>) -> tensor<4xcomplex<f32>> {\n"
                   "  %n = stablehlo.negate %x : tensor<4xcomplex<f32>>\n  return %n : tensor<4xcomplex<f32>>\n}\n")
    assert main(["export", str(bad), "-o", str(tmp_path / "bad.onnx")]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "have no ONNX form" in err and 'loc("-":2:' in err
    assert not (tmp_path / "bad.onnx").exists()
    good = tmp_path / "good.mlir"
    good.write_text(MLIR)
    assert main(["export", str(good), "-o", str(tmp_path / "nowhere" / "x.onnx")]) == 1
    assert "does not exist" in capsys.readouterr().err
    garbage = tmp_path / "garbage.mlir"
    garbage.write_bytes(b"\x00\x01 not a module")
    assert main(["export", str(garbage)]) == 1
    assert "not a StableHLO module" in capsys.readouterr().err
