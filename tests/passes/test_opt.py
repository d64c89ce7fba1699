"""``onnx-stablehlo-opt`` as a function: exit codes, stdin, split input, output file."""

from __future__ import annotations

import io
import sys

from onnx_stablehlo import opt

MODULE = """
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %one = stablehlo.constant dense<1.0> : tensor<4xf32>
  %p = stablehlo.multiply %x, %one : tensor<4xf32>
  return %p : tensor<4xf32>
}
"""


def test_runs_a_pipeline_from_stdin(monkeypatch, capsys):
    monkeypatch.setattr(sys, "stdin", io.StringIO(MODULE))
    assert opt.main(["-", "-p", "canonicalize-stablehlo"]) == 0
    out = capsys.readouterr().out
    assert "stablehlo.multiply" not in out and "return %arg0" in out


def test_writes_the_output_file(tmp_path, capsys):
    source = tmp_path / "in.mlir"
    source.write_text(MODULE)
    target = tmp_path / "out.mlir"
    assert opt.main([str(source), "-p", "none", "-o", str(target)]) == 0
    assert "stablehlo.multiply" in target.read_text()
    assert capsys.readouterr().out == ""


def test_bad_pipeline_prints_error_and_exits_1(tmp_path, capsys):
    source = tmp_path / "in.mlir"
    source.write_text(MODULE)
    assert opt.main([str(source), "-p", "fold-constants{max-elems=1}"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: pass 'fold-constants' has no option 'max-elems'")


def test_split_input_file_keeps_going_after_a_bad_chunk(tmp_path, capsys):
    source = tmp_path / "in.mlir"
    source.write_text("func.func @broken(\n// -----\n" + MODULE)
    assert opt.main([str(source), "-p", "canonicalize-stablehlo", "--split-input-file"]) == 1
    captured = capsys.readouterr()
    assert captured.err.startswith(f"error: cannot parse {source}: {source}:")
    assert "return %arg0" in captured.out


def test_list_passes_shows_options_and_their_docs(capsys):
    assert opt.main(["--list-passes"]) == 0
    out = capsys.readouterr().out
    assert "fold-constants" in out and "max-elements: int = 65536" in out
    assert "Operands and results with more elements than this" in out
