"""Fixtures of the JAX bridge tests: seeded models and inputs."""

from __future__ import annotations

import numpy as np
import pytest

from tests.jax.models import mlp


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(0)


@pytest.fixture(scope="module")
def mlp_model():
    return mlp()


@pytest.fixture(scope="module")
def mlp_fn(mlp_model):
    from onnx_stablehlo.jax import to_jax

    return to_jax(mlp_model)
