import numpy as np
import pytest


@pytest.fixture
def rng() -> np.random.Generator:
    """A seeded generator: every test sees the same inputs on every run."""
    return np.random.default_rng(20261129)
