"""Warm start (runtime/warm_start.py): a later compile of the same model file runs the stored
executable without loading the model through onnx_ir (and, on CPU in a process without jax, on
jaxlib's own client without importing jax); anything else loads the model then and behaves as
before; a weight of another dtype or shape, a missing checker pass or a corrupt entry falls back
to the usual path."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import onnx
import onnx.numpy_helper as onh
import onnxruntime as ort
import pytest

import onnx_stablehlo
from onnx_stablehlo.errors import FeedError
from onnx_stablehlo.runtime import artifact_cache, warm_start
from tests.util import conv_mlp_model

SHAPES = {"x": [2, 3, 6, 6]}


@pytest.fixture
def model_file(tmp_path, rng):
    path = tmp_path / "conv_mlp.onnx"
    onnx.save(conv_mlp_model(rng), path)
    return path


def _ort(path, feeds):
    return ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(None, feeds)


def _is_warm(model) -> bool:
    return model.__dict__.get("_warm") is not None


def test_second_compile_is_a_warm_start_with_onnxruntime_s_numbers(disk_cache, model_file, rng):
    feeds = {"x": rng.standard_normal((2, 3, 6, 6)).astype(np.float32)}
    expected = _ort(model_file, feeds)
    first = onnx_stablehlo.compile(model_file, input_shapes=SHAPES)
    assert not _is_warm(first)
    first_out = first.run(feeds)
    second = onnx_stablehlo.compile(model_file, input_shapes=SHAPES)
    assert _is_warm(second)
    assert second.input_names == ["x"] and second.output_names == ["y"]
    out = second.run(feeds)
    np.testing.assert_allclose(out[0], expected[0], rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(out[0], first_out[0])  # the same executable and weights
    assert out[0].flags.writeable and out[0].flags.owndata
    again = second.run({"x": feeds["x"] * 2})  # the plan's C++ result handlers from the second call
    np.testing.assert_allclose(again[0], _ort(model_file, {"x": feeds["x"] * 2})[0], rtol=1e-5, atol=1e-5)
    on_device = second.run_device(feeds)
    np.testing.assert_array_equal(second.to_host(on_device)[0], out[0])
    assert _is_warm(second)  # nothing so far needed the model


def test_warm_start_loads_the_model_when_something_needs_it(disk_cache, model_file, rng):
    onnx_stablehlo.compile(model_file, input_shapes=SHAPES)
    warm = onnx_stablehlo.compile(model_file, input_shapes=SHAPES)
    assert _is_warm(warm)
    assert "stablehlo.convolution" in warm.mlir or "stablehlo.dot_general" in warm.mlir
    assert not _is_warm(warm)
    assert warm.model.graph.name == "g"
    feeds = {"x": rng.standard_normal((2, 3, 6, 6)).astype(np.float32)}
    np.testing.assert_allclose(warm.run(feeds)[0], _ort(model_file, feeds)[0], rtol=1e-5, atol=1e-5)


def test_warm_start_bad_feeds_raise_the_usual_typed_errors(disk_cache, model_file, rng):
    onnx_stablehlo.compile(model_file, input_shapes=SHAPES)
    warm = onnx_stablehlo.compile(model_file, input_shapes=SHAPES)
    good = rng.standard_normal((2, 3, 6, 6)).astype(np.float32)
    with pytest.raises(FeedError, match="mapping"):
        warm.run([good])
    with pytest.raises(FeedError, match="x"):
        warm.run({"x": good.astype(np.float64)})
    with pytest.raises(FeedError):
        warm.run({})
    with pytest.raises(FeedError, match="unknown feed 'z'"):
        warm.run({"x": good, "z": good})
    np.testing.assert_allclose(warm.run({"x": good})[0], _ort(model_file, {"x": good})[0], rtol=1e-5, atol=1e-5)


def test_a_weight_changed_in_place_is_read_from_the_file(disk_cache, model_file, rng):
    """Same path, size, inode and modification time (so the same digest), other weight values:
    the weights are executable arguments, read from the file at each start, so the warm start
    runs the new values (as the artifact cache's bound weights do)."""
    onnx_stablehlo.compile(model_file, input_shapes=SHAPES)
    stat = os.stat(model_file)
    proto = onnx.load(model_file)
    w = onh.to_array(proto.graph.initializer[2])
    proto.graph.initializer[2].CopyFrom(onh.from_array((w * -3).astype(np.float32), "w"))
    data = proto.SerializeToString()
    assert len(data) == stat.st_size
    with open(model_file, "r+b") as handle:
        handle.write(data)
    os.utime(model_file, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert artifact_cache.source_digest(model_file) is not None
    changed = onnx_stablehlo.compile(model_file, input_shapes=SHAPES)
    assert _is_warm(changed)
    feeds = {"x": rng.standard_normal((2, 3, 6, 6)).astype(np.float32)}
    np.testing.assert_allclose(changed.run(feeds)[0], _ort(model_file, feeds)[0], rtol=1e-5, atol=1e-5)


def test_an_entry_made_without_the_checker_does_not_skip_it(disk_cache, model_file):
    onnx_stablehlo.compile(model_file, input_shapes=SHAPES, check=False)
    assert _is_warm(onnx_stablehlo.compile(model_file, input_shapes=SHAPES, check=False))
    checked = onnx_stablehlo.compile(model_file, input_shapes=SHAPES)  # runs the checker, records again
    assert not _is_warm(checked)
    assert _is_warm(onnx_stablehlo.compile(model_file, input_shapes=SHAPES))


def test_a_corrupt_entry_is_deleted_and_rebuilt(disk_cache, model_file, rng):
    onnx_stablehlo.compile(model_file, input_shapes=SHAPES)
    options = onnx_stablehlo.compile(model_file, input_shapes=SHAPES).options
    key = warm_start._warm_key(disk_cache, artifact_cache.source_digest(model_file), options, "cpu")
    assert disk_cache.load(key) is not None
    disk_cache.store(key, b"not a pickle")
    rebuilt = onnx_stablehlo.compile(model_file, input_shapes=SHAPES)
    assert not _is_warm(rebuilt)
    feeds = {"x": rng.standard_normal((2, 3, 6, 6)).astype(np.float32)}
    np.testing.assert_allclose(rebuilt.run(feeds)[0], _ort(model_file, feeds)[0], rtol=1e-5, atol=1e-5)
    assert _is_warm(onnx_stablehlo.compile(model_file, input_shapes=SHAPES))


def test_no_warm_start_without_a_static_signature_or_with_external_data(disk_cache, model_file, tmp_path, rng):
    symbolic = onnx_stablehlo.compile(model_file)  # batch dim N: nothing compiled yet
    assert not _is_warm(onnx_stablehlo.compile(model_file))
    feeds = {"x": rng.standard_normal((3, 3, 6, 6)).astype(np.float32)}
    np.testing.assert_allclose(symbolic.run(feeds)[0], _ort(model_file, feeds)[0], rtol=1e-5, atol=1e-5)
    external = tmp_path / "external" / "m.onnx"
    external.parent.mkdir()
    onnx.save(onnx.load(model_file), external, save_as_external_data=True, size_threshold=0, location="m.data")
    onnx_stablehlo.compile(external, input_shapes=SHAPES)
    assert not _is_warm(onnx_stablehlo.compile(external, input_shapes=SHAPES))


def test_warm_start_with_the_artifact_cache_off(disk_cache, model_file, monkeypatch):
    onnx_stablehlo.compile(model_file, input_shapes=SHAPES)
    monkeypatch.setenv(artifact_cache.ENV_SWITCH, "0")
    assert not _is_warm(onnx_stablehlo.compile(model_file, input_shapes=SHAPES))


_CHILD = r"""
import json, sys
import numpy as np
import onnx_stablehlo
from onnx_stablehlo.errors import RuntimeCheckError
path, name, shape, dtype, out_path = sys.argv[1], sys.argv[2], json.loads(sys.argv[3]), sys.argv[4], sys.argv[5]
model = onnx_stablehlo.compile(path, input_shapes={name: shape})
rng = np.random.default_rng(7)
feed = rng.integers(0, 100, shape).astype(dtype) if dtype == "int64" else rng.standard_normal(shape).astype(dtype)
out = model.run({name: feed})[0]
again = model.run({name: feed})[0]
np.save(out_path, out)
report = {
    "warm": model.__dict__.get("_warm") is not None,
    "imported": sorted(m for m in ("jax", "onnx_ir", "sympy", "onnx_stablehlo.frontend.importer") if m in sys.modules),
    "repeat_equal": bool(np.array_equal(out, again)),
    "owned": bool(out.flags.writeable and out.flags.owndata and out.dtype == np.float32),
}
if dtype == "int64":  # the Gather's run-time check, raised from the warm start as from a compiled model
    try:
        model.run({name: np.full(shape, 10**6, dtype)})
        report["check_raised"] = False
    except RuntimeCheckError:
        report["check_raised"] = True
import threading
errors, done = [], threading.Event()
def loop():  # runs while this thread imports jax, whose half-installed Array methods raised here
    while not done.is_set():
        try:
            model.run({name: feed})
        except Exception as exc:
            errors.append(repr(exc))
worker = threading.Thread(target=loop)
worker.start()
import jax  # noqa: E402,F401
done.set()
worker.join()
report["runs_while_jax_imported"] = errors[:3]
device_array = model.to_device(feed)  # loads the model: device arrays come from jax's client
report["to_device"] = [model.__dict__.get("_warm") is not None, tuple(device_array.shape) == tuple(shape)]
has_mlir = "stablehlo." in model.mlir  # loads the model, on jax's client
report["after_mlir"] = [model.__dict__.get("_warm") is not None, "jax" in sys.modules, has_mlir,
                        bool(np.array_equal(model.run({name: feed})[0], out))]
print(json.dumps(report))
"""


@pytest.mark.parametrize("which", ["tiny transformer", "conv with hoisted weights"])
def test_a_new_process_runs_without_jax_or_onnx_ir(tmp_path, rng, which):
    """The first process lowers and compiles; the second imports neither jax, onnx_ir (nor
    sympy) nor the frontend until ``mlir`` needs the model, and gives the same numbers as the
    first and as onnxruntime, before and after; a run-time check still raises."""
    if which == "tiny transformer":
        path, name, shape, dtype = onnx_stablehlo.example_model_path(), "input_ids", [2, 16], "int64"
    else:
        path, name, shape, dtype = str(tmp_path / "conv_mlp.onnx"), "x", [2, 3, 6, 6], "float32"
        onnx.save(conv_mlp_model(rng), path)
    env = {
        **os.environ,
        "ONNX_STABLEHLO_EXECUTABLE_CACHE": str(tmp_path / "cache"),
        artifact_cache.ENV_SWITCH: "1",
    }
    reports = []
    for run in ("cold", "warm"):
        done = subprocess.run(
            [sys.executable, "-c", _CHILD, path, name, json.dumps(shape), dtype, str(tmp_path / f"{run}.npy")],
            env=env, capture_output=True, text=True, check=False, timeout=300,
        )
        assert done.returncode == 0, done.stderr[-3000:]
        reports.append(json.loads(done.stdout.strip().splitlines()[-1]))
    cold, warm = reports
    checks = {"check_raised": True} if dtype == "int64" else {}
    assert cold == {
        "warm": False, "imported": ["jax", "onnx_ir", "onnx_stablehlo.frontend.importer", "sympy"],
        "repeat_equal": True, "owned": True, "runs_while_jax_imported": [], "to_device": [False, True],
        "after_mlir": [False, True, True, True], **checks,
    }
    assert warm == {
        "warm": True, "imported": [], "repeat_equal": True, "owned": True, "runs_while_jax_imported": [],
        "to_device": [False, True], "after_mlir": [False, True, True, True], **checks,
    }
    np.testing.assert_array_equal(np.load(tmp_path / "warm.npy"), np.load(tmp_path / "cold.npy"))
    feed_rng = np.random.default_rng(7)
    feed = feed_rng.integers(0, 100, shape).astype(dtype) if dtype == "int64" else feed_rng.standard_normal(shape).astype(dtype)
    expected = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, {name: feed})[0]
    np.testing.assert_allclose(np.load(tmp_path / "warm.npy"), expected, rtol=1e-4, atol=1e-4)


def _warm_entry(cache, source, options) -> dict:
    key = warm_start._warm_key(cache, artifact_cache.source_digest(source), options, "cpu")
    return warm_start._loads(cache.load(key))


def test_typed_field_weights_are_read_through_the_protobuf(disk_cache, tmp_path, rng):
    """int64 weights in ``int64_data`` (varints) are not in the file as raw bytes: the entry has
    no offsets and the warm start parses the model with onnx instead."""
    import onnx.helper as oh

    w = rng.integers(-50, 50, (64, 64)).astype(np.int64)
    graph = oh.make_graph(
        [oh.make_node("Add", ["x", "w"], ["y"])], "g",
        [oh.make_tensor_value_info("x", onnx.TensorProto.INT64, [64, 64])],
        [oh.make_tensor_value_info("y", onnx.TensorProto.INT64, [64, 64])],
        [oh.make_tensor("w", onnx.TensorProto.INT64, [64, 64], w.reshape(-1).tolist())],
    )
    path = tmp_path / "typed.onnx"
    onnx.save(oh.make_model(graph, opset_imports=[oh.make_opsetid("", 18)]), path)
    first = onnx_stablehlo.compile(path, input_shapes={"x": [64, 64]})
    entry = _warm_entry(disk_cache, path, first.options)
    assert entry["offsets"] is False and [p[:3] for p in entry["parameters"]] == [("w", "<i8", (64, 64))]
    warm = onnx_stablehlo.compile(path, input_shapes={"x": [64, 64]})
    assert _is_warm(warm)
    x = rng.integers(-50, 50, (64, 64)).astype(np.int64)
    np.testing.assert_array_equal(warm.run({"x": x})[0], _ort(path, {"x": x})[0])


def test_raw_weights_are_mapped_from_the_file_or_the_bytes(disk_cache, model_file, rng):
    first = onnx_stablehlo.compile(model_file, input_shapes=SHAPES)
    entry = _warm_entry(disk_cache, model_file, first.options)
    assert entry["offsets"] is True and all(p[3] is not None for p in entry["parameters"])
    data = model_file.read_bytes()
    for name, dtype, shape, offset in entry["parameters"]:  # the offsets hold the initializers' bytes
        expected = onh.to_array(next(t for t in onnx.load(model_file).graph.initializer if t.name == name))
        stored = np.frombuffer(data, dtype=dtype, count=expected.size, offset=offset).reshape(shape)
        np.testing.assert_array_equal(stored, expected)
    feeds = {"x": rng.standard_normal((2, 3, 6, 6)).astype(np.float32)}
    onnx_stablehlo.compile(data, input_shapes=SHAPES)  # bytes: their own entry
    from_bytes = onnx_stablehlo.compile(data, input_shapes=SHAPES)
    assert _is_warm(from_bytes)
    np.testing.assert_allclose(from_bytes.run(feeds)[0], _ort(model_file, feeds)[0], rtol=1e-5, atol=1e-5)


def test_the_model_a_warm_start_loads_is_the_one_compile_was_given(disk_cache, tmp_path, rng, monkeypatch):
    """Replaced, deleted, or named by a relative path from another folder after ``compile``: the
    warm model loads what it was compiled from (the file stays open), as a model loaded at
    ``compile`` holds it; a file changed in place is a ModelLoadError."""
    from onnx_stablehlo.errors import ModelLoadError

    folder = tmp_path / "models"
    folder.mkdir()
    path = folder / "m.onnx"
    onnx.save(conv_mlp_model(rng), path)
    feeds = {"x": rng.standard_normal((2, 3, 6, 6)).astype(np.float32)}
    expected = _ort(path, feeds)[0]
    onnx_stablehlo.compile(path, input_shapes=SHAPES)
    monkeypatch.chdir(folder)
    warm = onnx_stablehlo.compile("m.onnx", input_shapes=SHAPES)
    assert _is_warm(warm)
    monkeypatch.chdir(tmp_path)
    replacement = tmp_path / "other.onnx"
    onnx.save(conv_mlp_model(np.random.default_rng(1)), replacement)
    os.replace(replacement, path)
    with pytest.raises(FeedError):
        warm.run({"x": feeds["x"][:1]})  # another shape: loads the model
    assert not _is_warm(warm) and "stablehlo.convolution" in warm.mlir
    np.testing.assert_allclose(warm.run(feeds)[0], expected, rtol=1e-5, atol=1e-5)

    onnx.save(conv_mlp_model(rng), path)
    onnx_stablehlo.compile(path, input_shapes=SHAPES)
    deleted = onnx_stablehlo.compile(path, input_shapes=SHAPES)
    expected = _ort(path, feeds)[0]
    os.remove(path)
    assert "stablehlo.convolution" in deleted.mlir
    np.testing.assert_allclose(deleted.run(feeds)[0], expected, rtol=1e-5, atol=1e-5)

    onnx.save(conv_mlp_model(rng), path)
    onnx_stablehlo.compile(path, input_shapes=SHAPES)
    in_place = onnx_stablehlo.compile(path, input_shapes=SHAPES)
    with open(path, "ab") as handle:
        handle.write(b"\0")
    with pytest.raises(ModelLoadError, match="changed in place"):
        in_place.mlir  # noqa: B018
    assert _is_warm(in_place)  # still runs what it was compiled with
    assert in_place.run(feeds)[0].shape == (2, 4, 6, 5)


def test_probing_a_missing_attribute_does_not_load_the_model(disk_cache, model_file):
    onnx_stablehlo.compile(model_file, input_shapes=SHAPES)
    warm = onnx_stablehlo.compile(model_file, input_shapes=SHAPES)
    assert not hasattr(warm, "_repr_html_") and getattr(warm, "nothing", None) is None
    assert _is_warm(warm)
