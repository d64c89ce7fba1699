"""External data is checked like onnxruntime >= 1.24 does, before anything is read (issue 15).

Every hostile location, offset or length gives a ModelLoadError naming the tensor, with
``check=True`` and ``check=False`` alike; a model given as bytes or a proto needs ``base_dir``.
"""

from __future__ import annotations

import os

import numpy as np
import onnx
import onnx.helper as oh
import onnx.numpy_helper
import pytest

import onnx_stablehlo
from onnx_stablehlo import errors

W = np.arange(6, dtype=np.float32).reshape(2, 3)


def _model(info: dict[str, str] | None) -> onnx.ModelProto:
    """y = x + w, with w stored externally as ``info`` says (None: stored inline)."""
    weight = onnx.numpy_helper.from_array(W, "w")
    if info is not None:
        weight.ClearField("raw_data")
        weight.data_location = onnx.TensorProto.EXTERNAL
        for key, value in info.items():
            entry = weight.external_data.add()
            entry.key, entry.value = key, value
    graph = oh.make_graph(
        [oh.make_node("Add", ["x", "w"], ["y"], name="add")],
        "g",
        [oh.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [2, 3])],
        [oh.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [2, 3])],
        [weight],
    )
    return oh.make_model(graph, opset_imports=[oh.make_opsetid("", 18)], ir_version=9)


def _write(folder, info, data: bytes | None = W.tobytes(), data_name="w.bin"):
    folder.mkdir(parents=True, exist_ok=True)
    if data is not None:
        (folder / data_name).write_bytes(data)
    path = folder / "m.onnx"
    path.write_bytes(_model(info).SerializeToString())
    return path


def _run(model, **load_options):
    loaded = onnx_stablehlo.load(model, **load_options)
    x = np.ones((2, 3), np.float32)
    return onnx_stablehlo.compile(loaded).run({"x": x})[0]


def test_valid_external_data_runs(tmp_path):
    path = _write(tmp_path, {"location": "w.bin", "offset": "0", "length": str(W.nbytes)})
    np.testing.assert_array_equal(_run(path), W + 1)


def test_symlink_inside_the_folder_is_allowed(tmp_path):
    (tmp_path / "blobs").mkdir()
    (tmp_path / "blobs" / "real.bin").write_bytes(W.tobytes())
    os.symlink(tmp_path / "blobs" / "real.bin", tmp_path / "w.bin")
    path = _write(tmp_path, {"location": "w.bin"}, data=None)
    np.testing.assert_array_equal(_run(path, check=False), W + 1)


def test_symlink_into_a_hugging_face_blob_store_is_allowed(tmp_path):
    blobs = tmp_path / "hub" / "models--org--name" / "blobs"
    blobs.mkdir(parents=True)
    (blobs / "0123abcd").write_bytes(W.tobytes())
    snapshot = tmp_path / "hub" / "models--org--name" / "snapshots" / "rev"
    snapshot.mkdir(parents=True)
    os.symlink(blobs / "0123abcd", snapshot / "w.bin")
    path = _write(snapshot, {"location": "w.bin"}, data=None)
    np.testing.assert_array_equal(_run(path), W + 1)


def _hostile_cases(tmp_path):
    outside = tmp_path / "outside.bin"
    outside.write_bytes(W.tobytes())
    model_dir = tmp_path / "model"
    model_dir.mkdir()
    os.symlink(outside, model_dir / "link.bin")
    os.mkfifo(model_dir / "fifo.bin")
    (model_dir / "short.bin").write_bytes(W.tobytes()[:8])
    (model_dir / "w.bin").write_bytes(W.tobytes())
    return {
        "parent": ({"location": "../outside.bin"}, "'..' is not allowed"),
        "absolute": ({"location": str(outside)}, "absolute locations are not allowed"),
        "symlink_out": ({"location": "link.bin"}, "outside the model's folder"),
        "fifo": ({"location": "fifo.bin"}, "is not a regular file"),
        "missing": ({"location": "nope.bin"}, "cannot stat"),
        "short_file": ({"location": "short.bin"}, "run past the end"),
        "offset_past_end": ({"location": "w.bin", "offset": "4096"}, "run past the end"),
        "negative_offset": ({"location": "w.bin", "offset": "-8"}, "offset"),
        "length_too_small": ({"location": "w.bin", "length": "8"}, "length 8 does not match"),
        "length_too_large": ({"location": "w.bin", "length": str(4 * 2**40)}, "does not match"),
        "empty": ({"location": ""}, "location"),
    }, model_dir


@pytest.mark.parametrize("check", [True, False])
def test_hostile_locations_are_model_load_errors(tmp_path, check):
    cases, model_dir = _hostile_cases(tmp_path)
    for name, (info, expected) in cases.items():
        path = model_dir / f"{name}.onnx"
        path.write_bytes(_model(info).SerializeToString())
        with pytest.raises(errors.ModelLoadError) as caught:
            onnx_stablehlo.load(path, check=check)
        assert expected in str(caught.value), (name, str(caught.value))
        assert "'w'" in str(caught.value) or name == "negative_offset", (name, str(caught.value))


def test_a_4_tib_declared_weight_is_refused_before_allocating(tmp_path):
    weight = onnx.numpy_helper.from_array(W, "w")
    weight.ClearField("raw_data")
    weight.ClearField("dims")
    weight.dims.extend([2**20, 2**20, 2])  # 4 TiB of float32
    weight.data_location = onnx.TensorProto.EXTERNAL
    entry = weight.external_data.add()
    entry.key, entry.value = "location", "w.bin"
    (tmp_path / "w.bin").write_bytes(W.tobytes())
    model = _model(None)
    model.graph.initializer[0].CopyFrom(weight)
    path = tmp_path / "big.onnx"
    path.write_bytes(model.SerializeToString())
    with pytest.raises(errors.ModelLoadError, match="run past the end"):
        onnx_stablehlo.load(path, check=False)


def test_bytes_and_protos_need_a_base_dir(tmp_path, monkeypatch):
    path = _write(tmp_path, {"location": "w.bin"})
    proto = onnx.load(str(path), load_external_data=False)
    monkeypatch.chdir(tmp_path)  # the current folder holds w.bin: it must not be used
    for source in (proto, proto.SerializeToString()):
        with pytest.raises(errors.ModelLoadError, match="pass base_dir"):
            onnx_stablehlo.load(source)
        np.testing.assert_array_equal(_run(source, base_dir=tmp_path), W + 1)


def test_an_onnx_ir_model_is_checked_too(tmp_path):
    import onnx_ir

    outside = tmp_path / "outside.bin"
    outside.write_bytes(W.tobytes())
    (tmp_path / "model").mkdir()
    os.symlink(outside, tmp_path / "model" / "w.bin")
    path = _write(tmp_path / "model", {"location": "w.bin"}, data=None)
    with pytest.raises(errors.ModelLoadError, match="outside the model's folder"):
        onnx_stablehlo.load(onnx_ir.load(str(path)))
