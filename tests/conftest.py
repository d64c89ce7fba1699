import numpy as np
import pytest


@pytest.fixture
def rng() -> np.random.Generator:
    """A seeded generator: every test sees the same inputs on every run."""
    return np.random.default_rng(20261129)


@pytest.fixture
def disk_cache(monkeypatch, tmp_path):
    """A fresh on-disk cache for this test, with lowered artifacts (and warm starts) turned on."""
    from onnx_stablehlo.runtime import artifact_cache, executable_cache

    cache = executable_cache.ExecutableCache(tmp_path / "cache")
    monkeypatch.setattr(executable_cache, "_default", [cache])
    monkeypatch.setenv(artifact_cache.ENV_SWITCH, "1")
    return cache


_created_cache_dirs: list[str] = []


def pytest_configure(config: pytest.Config) -> None:
    """Compiled executables go to a fresh folder per test session, not the user's cache.

    The on-disk executable cache (runtime/executable_cache.py) stays on, so the suite exercises
    it (a module compiled twice in one session is deserialized the second time; xdist workers
    inherit the folder and share it), but a run never reads entries an earlier run or another
    checkout left behind. The process that made the folder deletes it at the end.
    """
    import os
    import tempfile

    if "ONNX_STABLEHLO_EXECUTABLE_CACHE" not in os.environ:
        folder = tempfile.mkdtemp(prefix="onnx-stablehlo-executables-")
        os.environ["ONNX_STABLEHLO_EXECUTABLE_CACHE"] = folder
        _created_cache_dirs.append(folder)
    # Lowered artifacts stay off disk (tests/test_artifact_cache.py turns them on): a test that
    # patches a lowering rule must not meet an artifact an earlier test lowered.
    os.environ.setdefault("ONNX_STABLEHLO_ARTIFACT_CACHE", "0")


def pytest_unconfigure(config: pytest.Config) -> None:
    import shutil

    for folder in _created_cache_dirs:
        shutil.rmtree(folder, ignore_errors=True)
