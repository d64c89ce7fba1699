"""Lowered artifacts on disk (runtime/artifact_cache.py): a later compile of the same model file
skips lowering, passes and XLA; corrupt entries are rebuilt; the switches turn it off."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import onnx
import onnxruntime as ort
import pytest

import onnx_stablehlo
from onnx_stablehlo.runtime import artifact_cache, executable_cache
from onnx_stablehlo.runtime.executable_cache import ExecutableCache
from tests.util import conv_mlp_model


@pytest.fixture
def model_file(tmp_path, rng):
    proto = conv_mlp_model(rng)
    path = tmp_path / "conv_mlp.onnx"
    onnx.save(proto, path)
    return path


def _ort(path, feeds):
    return ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(None, feeds)


def _lowered_entries(cache: ExecutableCache) -> list:
    found = []
    for path, _, _ in cache.entries():
        payload = executable_cache._unwrap(path.read_bytes())
        if payload is not None and artifact_cache.loads(payload) is not None:
            found.append(path)
    return found


@pytest.mark.parametrize("input_shapes", [{"x": [2, 3, 6, 6]}, None], ids=["static", "symbolic"])
def test_artifact_cache_second_compile_reads_the_lowered_artifact(disk_cache, model_file, rng, input_shapes):
    feeds = {"x": rng.standard_normal((2, 3, 6, 6)).astype(np.float32)}
    expected = _ort(model_file, feeds)
    first = onnx_stablehlo.compile(model_file, input_shapes=input_shapes)
    np.testing.assert_allclose(first.run(feeds)[0], expected[0], rtol=1e-5, atol=1e-5)
    assert first.executables.disk_hits == 0
    assert first.timings["lower_seconds"] > 0
    assert len(_lowered_entries(disk_cache)) == (1 if input_shapes else 2)

    second = onnx_stablehlo.compile(model_file, input_shapes=input_shapes)
    out = second.run(feeds)[0]
    hits = 1 if input_shapes else 2  # symbolic: the ``?`` artifact too
    assert second.executables.disk_hits == hits
    assert second.timings["lower_seconds"] == 0.0 and second.timings["pass_seconds"] == 0.0
    np.testing.assert_allclose(out, expected[0], rtol=1e-5, atol=1e-5)
    assert second.lowered.hoisted_count > 0  # the hoisted kernel transpose came back from disk too
    # Another shape refines the ``?`` artifact read from disk, and is stored as its own entry.
    other = {"x": rng.standard_normal((1, 3, 6, 6)).astype(np.float32)}
    if input_shapes is None:
        assert second.artifact is not None and second.dynamic_error is None
        np.testing.assert_allclose(second.run(other)[0], _ort(model_file, other)[0], rtol=1e-5, atol=1e-5)
        assert second.executables.disk_hits == 2 and len(_lowered_entries(disk_cache)) == 3


def test_artifact_cache_weights_come_from_the_model_not_the_entry(disk_cache, tmp_path, rng):
    """Two files with one structure but other weights: each runs with its own weights."""
    feeds = {"x": rng.standard_normal((2, 3, 6, 6)).astype(np.float32)}
    paths = []
    for seed in (1, 2):
        path = tmp_path / f"m{seed}.onnx"
        onnx.save(conv_mlp_model(np.random.default_rng(seed)), path)
        paths.append(path)
    for path in paths + paths:
        model = onnx_stablehlo.compile(path, input_shapes={"x": [2, 3, 6, 6]})
        np.testing.assert_allclose(model.run(feeds)[0], _ort(path, feeds)[0], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("damage", ["truncate", "flip", "garbage"])
def test_artifact_cache_corrupt_entry_is_ignored_and_rebuilt(disk_cache, model_file, rng, damage):
    feeds = {"x": rng.standard_normal((2, 3, 6, 6)).astype(np.float32)}
    expected = _ort(model_file, feeds)[0]
    onnx_stablehlo.compile(model_file, input_shapes={"x": [2, 3, 6, 6]})
    (entry,) = _lowered_entries(disk_cache)
    data = entry.read_bytes()
    if damage == "truncate":
        entry.write_bytes(data[: len(data) // 2])
    elif damage == "flip":
        entry.write_bytes(data[:-10] + bytes([data[-10] ^ 0xFF]) + data[-9:])
    else:  # checksummed and whole, but not an entry of this version
        inner = ExecutableCache(entry.parent)
        inner.store(entry.name.removesuffix(".xla"), b"not a pickle")
    model = onnx_stablehlo.compile(model_file, input_shapes={"x": [2, 3, 6, 6]})
    assert model.executables.disk_hits == 0  # lowered again ...
    np.testing.assert_allclose(model.run(feeds)[0], expected, rtol=1e-5, atol=1e-5)
    assert len(_lowered_entries(disk_cache)) == 1  # ... and stored whole again
    again = onnx_stablehlo.compile(model_file, input_shapes={"x": [2, 3, 6, 6]})
    assert again.executables.disk_hits == 1


@pytest.mark.parametrize("switch", [artifact_cache.ENV_SWITCH, executable_cache.ENV_DIRECTORY])
def test_artifact_cache_switches_turn_it_off(disk_cache, model_file, monkeypatch, switch):
    if switch == executable_cache.ENV_DIRECTORY:
        monkeypatch.setattr(executable_cache, "_default", [])
    monkeypatch.setenv(switch, "0")
    for _ in range(2):
        model = onnx_stablehlo.compile(model_file, input_shapes={"x": [2, 3, 6, 6]})
        assert model.executables.disk_hits == 0
    assert not _lowered_entries(disk_cache)


def test_artifact_cache_key_changes_with_options_shapes_and_model(disk_cache, model_file, tmp_path):
    from onnx_stablehlo.runtime.options import CompileOptions

    digest = artifact_cache.model_digest(model_file)
    base = artifact_cache.specialization_key(disk_cache, digest, CompileOptions(), "cpu", ((2, 3, 6, 6),))
    assert base == artifact_cache.specialization_key(disk_cache, digest, CompileOptions(), "cpu", ((2, 3, 6, 6),))
    others = [
        artifact_cache.specialization_key(disk_cache, digest, CompileOptions(), "cpu", ((1, 3, 6, 6),)),
        artifact_cache.specialization_key(disk_cache, digest, CompileOptions(pipeline="none"), "cpu", ((2, 3, 6, 6),)),
        artifact_cache.specialization_key(disk_cache, digest, CompileOptions(weights="inline"), "cpu", ((2, 3, 6, 6),)),
        artifact_cache.specialization_key(disk_cache, digest, CompileOptions(runtime_checks=False), "cpu", ((2, 3, 6, 6),)),
        artifact_cache.specialization_key(disk_cache, digest, CompileOptions(), "tpu", ((2, 3, 6, 6),)),
    ]
    assert base not in others and len(set(others)) == len(others)
    copy = tmp_path / "copy.onnx"
    copy.write_bytes(model_file.read_bytes())
    assert artifact_cache.model_digest(copy) != digest  # another file: another identity
    assert artifact_cache.model_digest(model_file.read_bytes()) == artifact_cache.model_digest(copy.read_bytes())
    os.utime(model_file, ns=(1, 1))  # a rewritten file gets a new modification time
    assert artifact_cache.model_digest(model_file) != digest


def test_artifact_cache_checker_runs_once_per_model_file(disk_cache, model_file, monkeypatch):
    calls = []
    real = onnx.checker.check_model
    monkeypatch.setattr(onnx.checker, "check_model", lambda model, *a, **k: calls.append(1) or real(model, *a, **k))
    onnx_stablehlo.compile(model_file, input_shapes={"x": [2, 3, 6, 6]})
    onnx_stablehlo.compile(model_file, input_shapes={"x": [2, 3, 6, 6]})
    assert len(calls) == 1


_CHILD = """
import json, sys
import numpy as np
import onnx_stablehlo
from onnx_stablehlo.runtime.executable_cache import default_cache
model = onnx_stablehlo.compile(sys.argv[1], input_shapes={"x": [2, 3, 6, 6]})
out = model.run({"x": np.random.default_rng(0).standard_normal((2, 3, 6, 6)).astype(np.float32)})
import onnx_stablehlo.frontend.lowering as rules  # noqa: E402 (imported at all only when lowering)
json.dump({"disk_hits": model.executables.disk_hits, "lower": model.timings["lower_seconds"],
           "out": out[0].tolist(), "hits": default_cache().hits}, sys.stdout)
"""


@pytest.mark.slow
def test_artifact_cache_second_process_skips_lowering(tmp_path, model_file):
    env = {**os.environ, executable_cache.ENV_DIRECTORY: str(tmp_path / "cache"), artifact_cache.ENV_SWITCH: "1"}
    results = []
    for _ in range(2):
        done = subprocess.run([sys.executable, "-c", _CHILD, str(model_file)], env=env, capture_output=True, text=True)
        assert done.returncode == 0, done.stderr[-2000:]
        results.append(json.loads(done.stdout))
    assert results[0]["disk_hits"] == 0 and results[0]["lower"] > 0
    assert results[1]["disk_hits"] == 1 and results[1]["lower"] == 0.0
    np.testing.assert_array_equal(np.array(results[1]["out"]), np.array(results[0]["out"]))
