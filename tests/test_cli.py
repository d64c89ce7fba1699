"""The onnx-stablehlo command line: compile and run, on the bundled example and on files."""

from __future__ import annotations

import numpy as np
import onnx
import pytest

import onnx_stablehlo
from onnx_stablehlo.cli import main
from tests.util import ort_run, parse


def test_compile_without_model_prints_the_example_module(capsys):
    assert main(["compile"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("module {")
    assert "func.func public @main(%arg0: tensor<2x16xi64>" in out


def test_compile_writes_a_parseable_file(tmp_path, capsys):
    from jaxlib.mlir import ir

    from onnx_stablehlo.frontend import jaxlib_mlir

    out = tmp_path / "example.mlir"
    assert main(["compile", "-o", str(out), "--weights", "inline"]) == 0
    text = out.read_text()
    with jaxlib_mlir.make_mlir_context() as context:
        module = ir.Module.parse(text, context)
        main_func = module.body.operations[0]
        assert len(main_func.regions[0].blocks[0].arguments) == 1  # weights inlined
    assert "wrote" in capsys.readouterr().err


def test_run_with_input_files_saves_outputs(tmp_path, capsys, rng):
    path = onnx_stablehlo.example_model_path()
    ids = rng.integers(0, 256, (2, 16)).astype(np.int64)
    np.save(tmp_path / "ids.npy", ids)
    out = tmp_path / "out.npz"
    assert main(["run", path, "--input", f"input_ids={tmp_path / 'ids.npy'}", "-o", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "output hidden: float32 [2, 16, 64]" in printed
    saved = np.load(out)
    np.testing.assert_allclose(saved["hidden"], ort_run(onnx.load(path), {"input_ids": ids})[0], rtol=1e-4, atol=1e-4)


def test_run_without_model_generates_inputs(capsys):
    assert main(["run"]) == 0
    printed = capsys.readouterr().out
    assert "input input_ids: generated int64 [2, 16] (seed 0)" in printed
    assert "output hidden: float32 [2, 16, 64]" in printed


def test_input_shape_flag_specializes_symbolic_dims(tmp_path, capsys):
    model = parse("""<ir_version: 9, opset_import: ["" : 18]>
g (float[N, 4] x) => (float[N, 4] y) {
  y = Relu(x)
}""")
    path = tmp_path / "sym.onnx"
    onnx.save(model, path)
    assert main(["compile", str(path), "--input-shape", "x=5,4"]) == 0
    assert "tensor<5x4xf32>" in capsys.readouterr().out


@pytest.mark.parametrize(
    "argv,message",
    [
        (["compile", "/nonexistent/model.onnx"], "error: model file not found: /nonexistent/model.onnx"),
        (["run", "--input", "bogus"], "error: --input expects NAME=FILE.npy, got 'bogus'"),
        (["compile", "--input-shape", "x"], "error: --input-shape expects NAME=D0,D1,..., got 'x'"),
        (["run", "--device", "tpu"], "error: device 'tpu' is not available"),
    ],
    ids=["missing-file", "bad-input", "bad-shape", "absent-device"],
)
def test_errors_print_one_line_and_exit_1(argv, message, capsys):
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert err.startswith(message)
    assert err.count("\n") == 1 and "Traceback" not in err


def test_check_compares_with_onnxruntime(capsys):
    assert main(["check"]) == 0
    printed = capsys.readouterr().out
    assert "output hidden: float32 [2, 16, 64]  max abs diff vs onnxruntime" in printed
    assert "OK: worst relative error" in printed


def test_check_fills_symbolic_dims_from_dim_flags(tmp_path, capsys):
    model = parse("""<ir_version: 9, opset_import: ["" : 18]>
g (float[N, 4] x, int64[N] ids) => (float[N, 4] y, int64[N] z) {
  y = Tanh(x)
  z = Neg(ids)
}""")
    path = tmp_path / "sym.onnx"
    onnx.save(model, path)
    assert main(["check", str(path), "--dim", "N=3"]) == 0
    printed = capsys.readouterr().out
    assert "symbolic artifact: yes" in printed
    assert "output y: float32 [3, 4]" in printed and "output z: int64 [3]" in printed


def test_check_sizes_merged_dims_from_one_dim(tmp_path, capsys):
    # M is never given: the Add equates it with N, so --dim N=5 sizes both inputs.
    path = tmp_path / "add.onnx"
    onnx.save(parse("""<ir_version: 9, opset_import: ["" : 17]>
g (float[N, 4] x, float[M, 4] y) => (float[N, 4] z) {
  z = Add(x, y)
}"""), path)
    assert main(["check", str(path), "--dim", "N=5"]) == 0
    assert "z" in capsys.readouterr().out


# What a user gets wrong first: each mistake is named as such, before anything is generated.


@pytest.fixture
def symbolic_model(tmp_path):
    path = tmp_path / "sym.onnx"
    onnx.save(parse("""<ir_version: 9, opset_import: ["" : 18]>
g (float[batch, 4] x, int64[batch] ids) => (float[batch, 4] y) {
  y = Relu(x)
}"""), path)
    return path


def _error_lines(argv, capsys) -> list[str]:
    assert main(argv) == 1
    return capsys.readouterr().err.strip().splitlines()


@pytest.mark.parametrize("command", ["run", "check"])
def test_input_mistakes_are_named(command, symbolic_model, tmp_path, capsys):
    np.save(tmp_path / "x.npy", np.ones((2, 4), np.float32))
    np.save(tmp_path / "flat.npy", np.ones(8, np.float32))
    np.savez(tmp_path / "x.npz", x=np.ones((2, 4), np.float32))
    model = str(symbolic_model)
    assert _error_lines([command, model, "--input", f"xx={tmp_path / 'x.npy'}"], capsys) == [
        "error: --input xx: the model has no input named 'xx' (inputs: x, ids)"
    ]
    assert _error_lines([command, model, "--dim", "batchh=2"], capsys) == [
        "error: --dim batchh: no input has a dim named 'batchh' (named dims: batch)"
    ]
    assert _error_lines([command, model, "--input", f"x={tmp_path / 'flat.npy'}"], capsys) == [
        "error: --input x: expected rank 2 [batch, 4], got shape (8,)"
    ]
    (npz,) = _error_lines([command, model, "--input", f"x={tmp_path / 'x.npz'}"], capsys)
    assert npz.endswith("x.npz is an .npz archive; --input takes one array per .npy file")
    assert _error_lines([command, model], capsys) == [
        "error: input 'x' has symbolic dims [batch, 4] without a size; give --dim batch=N, "
        "--input-shape x=N,4 or --input x=FILE.npy"
    ]
    # --input-shape: its rank is checked before any other input is generated, and its named
    # dims size the other inputs (ids [batch] from x's batch).
    assert _error_lines([command, model, "--input-shape", "x=3,4,4"], capsys) == [
        "error: --input-shape x: expected rank 2 [batch, 4], got [3, 4, 4]"
    ]
    assert main([command, model, "--input-shape", "x=3,4"]) == 0
    assert "input ids: generated int64 [3]" in capsys.readouterr().out


def test_unnamed_symbolic_dims_ask_for_an_input_shape(tmp_path, capsys):
    path = tmp_path / "unnamed.onnx"
    model = parse("""<ir_version: 9, opset_import: ["" : 18]>
g (float[2, 4] x) => (float[2, 4] y) {
  y = Relu(x)
}""")
    model.graph.input[0].type.tensor_type.shape.dim[0].Clear()  # an unnamed symbolic dim
    onnx.save(model, path)
    assert _error_lines(["check", str(path)], capsys) == [
        "error: input 'x' has symbolic dims [?, 4] without a size; give --input-shape x=N,4 or --input x=FILE.npy"
    ]
    assert main(["check", str(path), "--input-shape", "x=3,4"]) == 0


def test_a_failure_with_generated_inputs_says_they_were_generated(tmp_path, capsys):
    # Reshape to the shape fed in `shape`: a generated int64 of 0s and 1s is no valid shape here.
    path = tmp_path / "reshape.onnx"
    onnx.save(parse("""<ir_version: 9, opset_import: ["" : 18]>
g (float[6] x, int64[2] shape) => (float[?, ?] y) {
  y = Reshape(x, shape)
}"""), path)
    lines = _error_lines(["run", str(path)], capsys)
    assert lines[0].startswith("error: ") and len(lines) == 2
    assert lines[1] == (
        "note: inputs x, shape were generated (floats standard normal, integers 0 or 1); "
        "if the model needs meaningful values there, give them with --input NAME=FILE.npy"
    )
    np.save(tmp_path / "shape.npy", np.array([2, 3], np.int64))
    assert main(["run", str(path), "--input", f"shape={tmp_path / 'shape.npy'}"]) == 0
    assert "output y: float32 [2, 3]" in capsys.readouterr().out
    # A wrong file of the user's own is the whole story: no note about the generated `shape`.
    np.save(tmp_path / "x.npy", np.arange(6, dtype=np.int64))
    lines = _error_lines(["run", str(path), "--input", f"x={tmp_path / 'x.npy'}"], capsys)
    assert lines == ["error: input 'x': expected dtype float32, got int64"]


SPLIT_INPUT = """# RUN: (not read by the CLI)
<ir_version: 9, opset_import: ["" : 18]>
relu_case (float[2, 3] x) => (float[2, 3] y) {
  [relu_1] y = Relu(x)
}
# CHECK-LABEL: module @relu_case
# -----
<ir_version: 9, opset_import: ["" : 18]>
broken_case (float[2, 3] x) => (float[2, 3] y) {
  [frob_1] y = Frobnicate(x)
}
# -----
<ir_version: 9, opset_import: ["" : 18]>
neg_case (float[4] x) => (float[4] y) {
  [neg_1] y = Neg(x)
}
"""


def test_compile_split_input_file_compiles_each_chunk_as_a_named_module(tmp_path, capsys):
    path = tmp_path / "cases.onnxtxt"
    path.write_text(SPLIT_INPUT)
    assert main(["compile", "-p", "none", "--split-input-file", str(path)]) == 1  # one chunk fails
    captured = capsys.readouterr()
    modules = captured.out.split("// -----\n")
    assert len(modules) == 2
    assert modules[0].startswith("module @relu_case {")
    assert "stablehlo.maximum" in modules[0] and "stablehlo.negate" not in modules[0]
    assert modules[1].startswith("module @neg_case {")
    assert "func.func public @main(%arg0: tensor<4xf32>)" in modules[1]
    assert "stablehlo.negate" in modules[1]
    # the failing chunk is named by the line it starts on (after the first '# -----', line 7)
    assert f"error: {path}:7: " in captured.err and "Frobnicate" in captured.err


def test_compile_without_split_keeps_the_anonymous_module(tmp_path, capsys):
    path = tmp_path / "one.onnxtxt"
    path.write_text(SPLIT_INPUT.split("# -----")[0])
    assert main(["compile", "-p", "none", str(path)]) == 0
    assert capsys.readouterr().out.startswith("module {")


def test_compile_split_input_file_needs_onnx_text(tmp_path, capsys):
    path = tmp_path / "model.onnx"
    onnx.save(parse(SPLIT_INPUT.split("# -----")[0].split("\n", 1)[1]), path)
    assert main(["compile", "--split-input-file", str(path)]) == 1
    assert "--split-input-file needs a model in ONNX text syntax" in capsys.readouterr().err
