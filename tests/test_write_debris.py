"""A killed writer's debris (temporary files, side .data files) is removed by the next write to
the same target; a failed save removes its own side file (issue 15, item 5)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np
import onnx
import onnx.helper as oh
import onnx.numpy_helper
import pytest

from onnx_stablehlo import _io
from onnx_stablehlo.runtime.export_onnx import ExportError, save_onnx

W = np.arange(64 * 64, dtype=np.float32).reshape(64, 64)


def _model() -> onnx.ModelProto:
    graph = oh.make_graph(
        [oh.make_node("Add", ["x", "w"], ["y"], name="add")],
        "g",
        [oh.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [64, 64])],
        [oh.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [64, 64])],
        [onnx.numpy_helper.from_array(W, "w")],
    )
    return oh.make_model(graph, opset_imports=[oh.make_opsetid("", 18)], ir_version=9)


def _killed(script: str) -> None:
    """Runs ``script`` in a child that dies with os._exit(9) where the script says so."""
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(script)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 9, done.stderr


def test_a_killed_writers_temporary_file_is_swept_by_the_next_write(tmp_path):
    target = tmp_path / "out.bin"
    _killed(
        f"""
        import os
        from onnx_stablehlo import _io
        with _io.atomic_writer({str(target)!r}) as handle:
            handle.write(b"x" * 100000)
            handle.flush()
            os._exit(9)
        """
    )
    debris = [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]
    assert len(debris) == 1 and not target.exists()
    _io.atomic_write_bytes(target, b"new")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.bin"]
    assert target.read_bytes() == b"new"


def test_a_live_writers_temporary_file_is_kept(tmp_path):
    target = tmp_path / "out.bin"
    with _io.atomic_writer(target) as handle:  # our own writer, still open
        handle.write(b"first")
        _io.atomic_write_bytes(target, b"second")  # a second write in the same (live) process
        assert len([p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]) == 1
    assert target.read_bytes() == b"first"


def test_a_killed_save_leaves_no_orphan_data_file_after_the_next_save(tmp_path):
    target = tmp_path / "m.onnx"
    model_path = tmp_path / "original.onnx"
    onnx.save(_model(), str(model_path))
    _killed(
        f"""
        import os
        import numpy as np
        from onnx_stablehlo import _io
        from onnx_stablehlo.runtime import export_onnx
        export_onnx._io.atomic_write_bytes = lambda *a, **k: os._exit(9)  # dies after the .data is written
        export_onnx.save_onnx({{"w": np.zeros((64, 64), np.float32)}}, {str(target)!r},
                              original={str(model_path)!r}, external_data=True)
        """
    )
    assert len(list(tmp_path.glob("m.onnx.*.data"))) == 1 and not target.exists()
    save_onnx({"w": W * 2}, target, original=model_path, external_data=True)
    data = list(tmp_path.glob("m.onnx.*.data"))
    assert len(data) == 1
    written = onnx.load(str(target))
    np.testing.assert_array_equal(onnx.numpy_helper.to_array(written.graph.initializer[0]), W * 2)
    reference = onnx.load(str(target), load_external_data=False).graph.initializer[0].external_data
    assert data[0].name == {e.key: e.value for e in reference}["location"]
    # Saving again without external data removes the now unreferenced side file too.
    save_onnx({"w": W * 3}, target, original=model_path, external_data=False)
    assert not list(tmp_path.glob("m.onnx.*.data"))


def test_an_unread_external_reference_is_refused_and_nothing_is_written(tmp_path):
    model = _model()
    extra = onnx.numpy_helper.from_array(np.zeros(4, np.float32), "hostile")
    extra.ClearField("raw_data")
    extra.data_location = onnx.TensorProto.EXTERNAL
    entry = extra.external_data.add()
    entry.key, entry.value = "location", "../../etc/passwd"
    model.graph.initializer.append(extra)
    with pytest.raises(ExportError, match="'hostile' of the original keeps its data in an external file"):
        save_onnx({"w": W}, tmp_path / "m.onnx", original=model, external_data=True)
    assert list(tmp_path.iterdir()) == []


def test_a_failed_save_removes_its_side_file(tmp_path, monkeypatch):
    from onnx_stablehlo.runtime import export_onnx

    def fail(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(export_onnx._io, "atomic_write_bytes", fail)
    with pytest.raises(ExportError, match="No space left"):
        save_onnx({"w": W}, tmp_path / "m.onnx", original=_model(), external_data=True)
    assert list(tmp_path.iterdir()) == []


def test_temporary_files_of_the_old_naming_are_swept_once_an_hour_old(tmp_path):
    import os
    import time

    target = tmp_path / "out.bin"
    old = tmp_path / ".out.bin.ab12cd34.tmp"
    fresh = tmp_path / ".out.bin.ef56gh78.tmp"
    old.write_bytes(b"x")
    fresh.write_bytes(b"y")
    an_hour_ago = time.time() - 3700
    os.utime(old, (an_hour_ago, an_hour_ago))
    _io.atomic_write_bytes(target, b"new")
    assert sorted(p.name for p in tmp_path.iterdir()) == [".out.bin.ef56gh78.tmp", "out.bin"]
