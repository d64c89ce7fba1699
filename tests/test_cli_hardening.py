"""The CLI answers bad arguments and unwritable outputs with one ``error:`` line, never a
traceback (issue 15): a negative --input-shape dim, ``-o`` onto a folder or into an unwritable
folder, a generated input of terabytes."""

from __future__ import annotations

import os

import onnx
import pytest

from onnx_stablehlo.cli import main
from tests.util import parse

HUGE = """<ir_version: 9, opset_import: ["" : 18]>
g (float[1048576, 1048576] x) => (float[1048576, 1048576] y) {
  [neg] y = Neg(x)
}"""


def _one_error_line(capsys, expected: str) -> str:
    err = capsys.readouterr().err
    assert err.startswith("error: ") and expected in err, err
    assert "Traceback" not in err
    return err


def test_negative_input_shape_dim(capsys):
    assert main(["compile", "--input-shape", "input_ids=2,-16"]) == 1
    _one_error_line(capsys, "dims must be non-negative")


def test_run_output_onto_a_folder(tmp_path, capsys):
    assert main(["run", "-o", str(tmp_path)]) == 1
    _one_error_line(capsys, "it is a folder")


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only folders")
def test_compile_output_into_an_unwritable_folder(tmp_path, capsys):
    folder = tmp_path / "ro"
    folder.mkdir()
    folder.chmod(0o500)
    try:
        assert main(["compile", "-o", str(folder / "out.mlir")]) == 1
    finally:
        folder.chmod(0o700)
    _one_error_line(capsys, "cannot write")


def test_compile_output_below_a_file(tmp_path, capsys):
    (tmp_path / "file").write_text("")
    assert main(["compile", "-o", str(tmp_path / "file" / "out.mlir")]) == 1
    _one_error_line(capsys, "cannot write")


def test_a_4_tib_generated_input_is_refused_before_allocating(tmp_path, capsys):
    path = tmp_path / "huge.onnx"
    onnx.save(parse(HUGE), path)
    assert main(["run", str(path)]) == 1
    _one_error_line(capsys, "4398046511104 bytes, over the 2147483648-byte limit")


def test_an_internal_error_is_one_line_too(monkeypatch, capsys):
    from onnx_stablehlo import cli

    def broken(args):
        raise TypeError("unexpected")

    monkeypatch.setattr(cli, "_cmd_compile", broken)
    assert main(["compile"]) == 3
    _one_error_line(capsys, "internal error (TypeError: unexpected)")
