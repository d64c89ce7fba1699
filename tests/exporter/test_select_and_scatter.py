"""select_and_scatter (exporter/rules/select_and_scatter.py): the VJP of max and min pooling,
as JAX emits it, against JAX."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from .util import check_roundtrip


def _pool(x, op, init, window, strides, padding):
    return jax.lax.reduce_window(x, init, op, window, strides, padding)


@pytest.mark.parametrize("window,strides,padding", [
    ((1, 2, 2, 1), (1, 2, 2, 1), "VALID"),
    ((1, 3, 3, 1), (1, 2, 2, 1), "SAME"),
    ((1, 3, 3, 1), (1, 1, 1, 1), ((0, 0), (1, 1), (1, 1), (0, 0))),
])
def test_max_pool_gradient_nhwc(window, strides, padding):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(2, 7, 6, 3)).astype(np.float32)
    x[0, 0, :2, 0] = 1.5  # a tie inside one window: the first maximum takes the gradient
    grad = jax.grad(lambda a: jnp.sum(_pool(a, jax.lax.max, -jnp.inf, window, strides, padding) ** 2))
    check_roundtrip(grad, x, op_types={"MaxPool", "ScatterElements"})


def test_min_pool_gradient_and_symbolic_batch():
    rng = np.random.default_rng(1)
    x = rng.normal(size=(3, 2, 8)).astype(np.float32)
    grad = jax.grad(lambda a: jnp.sum(jnp.sin(_pool(a, jax.lax.min, jnp.inf, (1, 1, 3), (1, 1, 2), "VALID"))))
    check_roundtrip(grad, x, symbolic=["b, 2, 8"])
