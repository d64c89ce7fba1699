"""``jax.vmap`` through the bridge: folded into the batch symbol, or a loop; with gradients."""

from __future__ import annotations

import numpy as np
import pytest

jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402

from onnx_stablehlo.jax import to_jax  # noqa: E402
from tests.jax.models import mlp  # noqa: E402
from tests.jax.test_grad import twin  # noqa: E402


def _exported_shapes(jaxpr) -> list[tuple]:
    """Input shapes of every call_exported in a jaxpr (nested ones included)."""
    found = []

    def visit(jaxpr):
        for eqn in jaxpr.eqns:
            if eqn.primitive.name == "call_exported":
                found.append(tuple(v.aval.shape for v in eqn.invars))
            for value in eqn.params.values():
                inner = getattr(value, "jaxpr", None)
                if inner is not None and hasattr(inner, "eqns"):
                    visit(inner)
                elif hasattr(value, "eqns"):
                    visit(value)

    visit(jaxpr.jaxpr)
    return found


def test_vmap_folds_into_the_batch_dim(mlp_fn, rng):
    xs = rng.standard_normal((3, 5, 4)).astype(np.float32)
    ids = np.arange(5)
    f = jax.vmap(lambda x: mlp_fn(mlp_fn.params, x, ids)[0])
    np.testing.assert_allclose(np.asarray(f(xs)), np.asarray(jax.vmap(lambda x: twin(mlp_fn.params, x))(xs)), rtol=1e-5, atol=1e-6)
    shapes = _exported_shapes(jax.make_jaxpr(f)(xs))
    assert shapes and shapes[0][0] == (15, 4)  # one call on 3*5 rows, no loop


def test_vmap_loops_without_a_batch_dim(rng):
    fn = to_jax(mlp(batch="N"))  # no symbol named like a batch: batch_dim is None
    xs = rng.standard_normal((3, 5, 4)).astype(np.float32)
    f = jax.vmap(lambda x, ids: fn(fn.params, x, ids))
    ys, twice = f(xs, np.tile(np.arange(5), (3, 1)))
    np.testing.assert_allclose(np.asarray(ys), np.asarray(jax.vmap(lambda x: twin(fn.params, x))(xs)), rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(np.asarray(twice), np.tile(2 * np.arange(5), (3, 1)))
    shapes = _exported_shapes(jax.make_jaxpr(f)(xs, np.zeros((3, 5), np.int32)))
    assert shapes and shapes[0][0] == (5, 4)  # one example per iteration


def test_vmap_over_params_loops(mlp_fn, rng):
    """An ensemble of weights: the params are mapped, so the rule loops."""
    x = rng.standard_normal((5, 4)).astype(np.float32)
    stacked = jax.tree.map(lambda p: jnp.stack([p, 0.5 * p]), mlp_fn.params)
    ys = jax.vmap(lambda p: mlp_fn(p, x, np.arange(5))[0])(stacked)
    for k in range(2):
        params_k = jax.tree.map(lambda p: p[k], stacked)
        np.testing.assert_allclose(np.asarray(ys[k]), np.asarray(twin(params_k, x)), rtol=1e-5, atol=1e-6)


def test_nested_vmap(mlp_fn, rng):
    xs = rng.standard_normal((2, 3, 5, 4)).astype(np.float32)
    f = jax.vmap(jax.vmap(lambda x: mlp_fn(mlp_fn.params, x, np.arange(5))[0]))
    np.testing.assert_allclose(np.asarray(f(xs)), np.asarray(twin(mlp_fn.params, xs)), rtol=1e-5, atol=1e-6)


def test_vmap_of_grad_and_grad_of_vmap(mlp_fn, rng):
    xs = rng.standard_normal((3, 5, 4)).astype(np.float32)
    ids = np.arange(5)

    def loss(params, x):
        return jnp.sum(jnp.sin(mlp_fn(params, x, ids)[0]))

    def twin_loss(params, x):
        return jnp.sum(jnp.sin(twin(params, x)))

    per_example = jax.jit(jax.vmap(jax.grad(loss), in_axes=(None, 0)))(mlp_fn.params, xs)
    expected = jax.vmap(jax.grad(twin_loss), in_axes=(None, 0))(mlp_fn.params, xs)
    for name in mlp_fn.params:
        np.testing.assert_allclose(np.asarray(per_example[name]), np.asarray(expected[name]), rtol=2e-5, atol=1e-6)

    total = jax.jit(jax.grad(lambda p: jnp.sum(jax.vmap(lambda x: loss(p, x))(xs))))(mlp_fn.params)
    expected_total = jax.grad(lambda p: jnp.sum(jax.vmap(lambda x: twin_loss(p, x))(xs)))(mlp_fn.params)
    for name in mlp_fn.params:
        np.testing.assert_allclose(np.asarray(total[name]), np.asarray(expected_total[name]), rtol=2e-5, atol=1e-5)
