"""The on-disk executable cache: hits across processes, corrupt entries, eviction, off switch."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

import onnx_stablehlo
from onnx_stablehlo.runtime import executable_cache, pjrt
from onnx_stablehlo.runtime.executable_cache import ExecutableCache

ADD_TEXT = """module @m {
  func.func public @main(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
    %0 = stablehlo.multiply %a, %b : tensor<4xf32>
    %1 = stablehlo.add %0, %a : tensor<4xf32>
    return %1 : tensor<4xf32>
  }
}"""


@pytest.fixture(scope="module")
def cpu():
    return pjrt.get_device("cpu")


def _run(executable, cpu, a, b):
    (out,) = pjrt.to_host(pjrt.execute(executable, [pjrt.to_device(a, cpu), pjrt.to_device(b, cpu)]))
    return out


def test_executable_cache_second_compile_is_a_hit_with_equal_results(cpu, tmp_path, rng):
    cache = ExecutableCache(tmp_path)
    a, b = rng.standard_normal(4).astype(np.float32), rng.standard_normal(4).astype(np.float32)
    first = pjrt.compile_module(ADD_TEXT, cpu, cache=cache)
    assert (cache.hits, cache.misses, cache.stores) == (0, 1, 1)
    second = pjrt.compile_module(ADD_TEXT, cpu, cache=cache)
    assert (cache.hits, cache.misses, cache.stores) == (1, 1, 1)
    np.testing.assert_array_equal(_run(second, cpu, a, b), _run(first, cpu, a, b))
    np.testing.assert_allclose(_run(second, cpu, a, b), a * b + a, rtol=1e-6)


def test_executable_cache_key_changes_with_module_and_toolchain_parts():
    parts = ("cpu", "cpu", "jaxlib 0.10.2", "XLA_FLAGS=")
    key = ExecutableCache.key(ADD_TEXT, parts)
    assert key == ExecutableCache.key(ADD_TEXT, parts)
    assert key != ExecutableCache.key(ADD_TEXT.replace("add", "subtract"), parts)
    assert key != ExecutableCache.key(ADD_TEXT, parts[:-1] + ("XLA_FLAGS=--xla_cpu_enable_fast_math=true",))
    assert key != ExecutableCache.key(ADD_TEXT, ("cpu", "cpu", "jaxlib 0.10.3", "XLA_FLAGS="))


@pytest.mark.parametrize("damage", ["truncate", "flip_payload_byte", "garbage"])
def test_executable_cache_corrupt_entry_is_ignored_and_rebuilt(cpu, tmp_path, rng, damage):
    cache = ExecutableCache(tmp_path)
    pjrt.compile_module(ADD_TEXT, cpu, cache=cache)
    (path, size, _), = cache.entries()
    data = path.read_bytes()
    if damage == "truncate":
        path.write_bytes(data[: size // 2])
    elif damage == "flip_payload_byte":
        path.write_bytes(data[:-100] + bytes([data[-100] ^ 0xFF]) + data[-99:])
    else:
        path.write_bytes(b"not an executable")
    executable = pjrt.compile_module(ADD_TEXT, cpu, cache=cache)
    a, b = rng.standard_normal(4).astype(np.float32), rng.standard_normal(4).astype(np.float32)
    np.testing.assert_allclose(_run(executable, cpu, a, b), a * b + a, rtol=1e-6)
    assert cache.corrupt == 1 and cache.hits == 0 and cache.stores == 2
    assert executable_cache._unwrap(path.read_bytes()) is not None  # rebuilt whole
    pjrt.compile_module(ADD_TEXT, cpu, cache=cache)
    assert cache.hits == 1


def test_executable_cache_entry_pjrt_cannot_read_is_discarded(cpu, tmp_path, rng):
    """A checksum-valid entry that PJRT rejects (another build wrote it) is deleted and rebuilt."""
    cache = ExecutableCache(tmp_path)
    key = cache.key(ADD_TEXT, pjrt._cache_key_parts(cpu))
    cache.store(key, b"checksummed but not an XLA executable")
    executable = pjrt.compile_module(ADD_TEXT, cpu, cache=cache)
    a, b = rng.standard_normal(4).astype(np.float32), rng.standard_normal(4).astype(np.float32)
    np.testing.assert_allclose(_run(executable, cpu, a, b), a * b + a, rtol=1e-6)
    assert cache.corrupt == 1 and cache.load(key) is not None and cache.load(key) != b"checksummed but not an XLA executable"


def test_executable_cache_evicts_least_recently_used_past_the_cap(tmp_path):
    cache = ExecutableCache(tmp_path, max_bytes=3700)  # 3 entries of 1064 bytes fit 7/8 of it, 4 do not fit
    keys = [f"{i:064x}" for i in range(3)]
    for index, key in enumerate(keys):
        assert cache.store(key, bytes([index]) * 1000)
        os.utime(cache.path(key), (1000 + index, 1000 + index))  # oldest first, seconds apart
    assert cache.load(keys[0]) == bytes([0]) * 1000  # a hit makes keys[0] the most recent
    assert cache.store(f"{3:064x}", b"\x03" * 1000)
    assert not cache.path(keys[1]).exists()  # least recently used went
    assert all(cache.path(k).exists() for k in (keys[0], keys[2], f"{3:064x}"))
    assert cache.size_bytes() <= cache.max_bytes
    assert not cache.store("f" * 64, b"x" * 4000)  # bigger than the cap: not written


def test_executable_cache_concurrent_writers_of_one_key_leave_one_whole_entry(tmp_path):
    cache = ExecutableCache(tmp_path)
    payload = os.urandom(200_000)
    threads = [threading.Thread(target=cache.store, args=("a" * 64, payload)) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert [p.name for p, _, _ in cache.entries()] == ["a" * 64 + ".xla"]
    assert cache.load("a" * 64) == payload
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".tmp-")]


@pytest.mark.parametrize("setting", ["0", "off", "none"])
def test_executable_cache_environment_turns_it_off(monkeypatch, setting):
    monkeypatch.setenv(executable_cache.ENV_DIRECTORY, setting)
    assert executable_cache._from_environment() is None


def test_executable_cache_environment_sets_folder_and_cap(monkeypatch, tmp_path):
    monkeypatch.setenv(executable_cache.ENV_DIRECTORY, str(tmp_path))
    monkeypatch.setenv(executable_cache.ENV_MAX_BYTES, "12345")
    cache = executable_cache._from_environment()
    assert cache.directory == tmp_path and cache.max_bytes == 12345
    monkeypatch.setenv(executable_cache.ENV_MAX_BYTES, "lots")
    with pytest.raises(onnx_stablehlo.errors.InvalidOptionError, match="BYTES"):
        executable_cache._from_environment()


def test_executable_cache_follows_the_project_cache_folder(monkeypatch, tmp_path):
    """Without its own setting the cache lives in ``$ONNX_STABLEHLO_CACHE/executables`` (the
    folder the model builders use), so one variable keeps everything out of ``~/.cache``."""
    monkeypatch.delenv(executable_cache.ENV_DIRECTORY, raising=False)
    monkeypatch.setenv("ONNX_STABLEHLO_CACHE", str(tmp_path))
    assert executable_cache._from_environment().directory == tmp_path / "executables"
    monkeypatch.setenv(executable_cache.ENV_DIRECTORY, str(tmp_path / "own"))
    assert executable_cache._from_environment().directory == tmp_path / "own"
    monkeypatch.delenv(executable_cache.ENV_DIRECTORY)
    monkeypatch.delenv("ONNX_STABLEHLO_CACHE")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert executable_cache._from_environment().directory == tmp_path / "xdg" / "onnx-stablehlo" / "executables"


_CHILD = """
import json, sys
import numpy as np
import onnx_stablehlo
from onnx_stablehlo.runtime.executable_cache import default_cache
model = onnx_stablehlo.compile(onnx_stablehlo.example_model_path())
ids = np.random.default_rng(0).integers(0, 100, (2, 16)).astype(np.int64)
out = model.run({"input_ids": ids})
cache = default_cache()
json.dump({"hits": cache.hits, "stores": cache.stores, "out": [o.tolist() for o in out]}, sys.stdout)
"""


def test_executable_cache_second_process_reuses_the_first_ones_executables(tmp_path):
    env = {**os.environ, executable_cache.ENV_DIRECTORY: str(tmp_path / "cache")}
    results = []
    for _ in range(2):
        done = subprocess.run([sys.executable, "-c", _CHILD], env=env, capture_output=True, text=True, check=False)
        assert done.returncode == 0, done.stderr[-2000:]
        results.append(json.loads(done.stdout))
    assert results[0]["hits"] == 0 and results[0]["stores"] >= 1
    assert results[1]["hits"] == results[0]["stores"] and results[1]["stores"] == 0
    for first, second in zip(results[0]["out"], results[1]["out"]):
        np.testing.assert_array_equal(np.array(second), np.array(first))


_WRITER = """
import importlib.util, sys
spec = importlib.util.spec_from_file_location("executable_cache", sys.argv[4])  # no jax: starts fast
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
cache = module.ExecutableCache(sys.argv[1], max_bytes=int(sys.argv[2]))
worker = int(sys.argv[3])
for round_ in range(30):
    cache.store("a" * 64, bytes([7]) * 50_000)  # every process writes this one
    cache.store(f"{worker:02d}{round_:062d}", bytes([worker]) * 20_000)  # and its own
    assert cache.load("a" * 64) in (None, bytes([7]) * 50_000)  # None: evicted meanwhile
"""


def test_executable_cache_concurrent_processes_leave_whole_entries_within_the_cap(tmp_path):
    cap = 400_000
    writers = [
        subprocess.Popen(
            [sys.executable, "-c", _WRITER, str(tmp_path), str(cap), str(i), executable_cache.__file__],
            stderr=subprocess.PIPE,
        )
        for i in range(4)
    ]
    for writer in writers:
        _, stderr = writer.communicate(timeout=120)
        assert writer.returncode == 0, stderr.decode()[-2000:]
    cache = ExecutableCache(tmp_path, max_bytes=cap)
    entries = cache.entries()
    assert entries and cache.size_bytes() <= cap
    for path, _, _ in entries:
        payload = executable_cache._unwrap(path.read_bytes())
        assert payload is not None and len(set(payload)) == 1  # whole, one writer's bytes
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".tmp-")]


def test_executable_cache_store_scans_the_folder_only_when_it_must(tmp_path, monkeypatch):
    """A store scans (a stat per entry) on its first write, when its running total would pass the
    cap, and when another writer changed the folder; otherwise it adds what it wrote."""
    cache = ExecutableCache(tmp_path, max_bytes=100_000)
    scans = []
    entries = cache.entries
    monkeypatch.setattr(cache, "entries", lambda: scans.append(1) or entries())
    for index in range(10):
        assert cache.store(f"{index:064x}", bytes([index]) * 1000)
    assert len(scans) == 1
    other = ExecutableCache(tmp_path, max_bytes=100_000)  # another process's writer
    time.sleep(0.02)  # past the folder mtime's clock tick
    assert other.store("e" * 64, b"\x0e" * 1000)
    assert cache.store(f"{10:064x}", b"\x0a" * 1000)
    assert len(scans) == 2  # the folder changed under it: scanned again
    for index in range(11, 200):  # the running total passes the cap: scans and evicts
        assert cache.store(f"{index:064x}", bytes([index % 256]) * 1000)
    assert cache.size_bytes() <= cache.max_bytes
    assert 3 <= len(scans) < 20
