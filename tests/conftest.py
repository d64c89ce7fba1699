import numpy as np
import pytest


@pytest.fixture
def rng() -> np.random.Generator:
    """A seeded generator: every test sees the same inputs on every run."""
    return np.random.default_rng(20261129)


def pytest_configure(config: pytest.Config) -> None:
    """Compiled executables go to a fresh folder per test process, not the user's cache.

    The on-disk executable cache (runtime/executable_cache.py) stays on, so the suite exercises
    it (a module compiled twice in one session is deserialized the second time), but a run
    never reads entries an earlier run or another checkout left behind.
    """
    import os
    import tempfile

    if "ONNX_STABLEHLO_EXECUTABLE_CACHE" not in os.environ:
        os.environ["ONNX_STABLEHLO_EXECUTABLE_CACHE"] = tempfile.mkdtemp(prefix="onnx-stablehlo-executables-")
