"""``jax.export`` of the bridge: ``fn.exported`` and jitted compositions serialize, deserialize and
run with symbolic shapes; with static shapes they carry their VJP (``vjp_order=1``)."""

from __future__ import annotations

import numpy as np
import pytest

jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402
from jax import export  # noqa: E402

from onnx_stablehlo.jax import to_jax  # noqa: E402
from tests.jax.models import mlp, pooled_encoder  # noqa: E402
from tests.jax.test_grad import twin  # noqa: E402


def test_exported_round_trip_with_symbolic_shapes(mlp_fn, rng):
    restored = export.deserialize(mlp_fn.exported.serialize())
    weights = [mlp_fn.params[n] for n in mlp_fn.parameter_names]
    for n in (1, 6):
        x = rng.standard_normal((n, 4)).astype(np.float32)
        y, twice = restored.call(x, np.arange(n, dtype=np.int32), *weights)
        np.testing.assert_allclose(np.asarray(y), np.asarray(twin(mlp_fn.params, x)), rtol=1e-5, atol=1e-6)
        np.testing.assert_array_equal(np.asarray(twice), 2 * np.arange(n))


def test_composition_reexports_with_symbolic_shapes(rng):
    """jnp pre-processing, an ONNX encoder, jnp mean pooling and a second ONNX model, re-exported."""
    encoder = to_jax(pooled_encoder())
    head = to_jax(mlp(batch="batch", hidden=4))

    def pipeline(params, ids, mask):
        (hidden,) = encoder(params["encoder"], ids, mask)
        weights = mask.astype(hidden.dtype)[..., None]
        pooled = jnp.sum(hidden * weights, axis=1) / jnp.maximum(jnp.sum(weights, axis=1), 1.0)
        y, _ = head(params["head"], pooled[:, :4], jnp.zeros(ids.shape[0], jnp.int32))
        return y

    params = {"encoder": encoder.params, "head": head.params}
    b, s = export.symbolic_shape("b, s")
    spec = jax.ShapeDtypeStruct((b, s), np.int32)
    exported = export.export(jax.jit(pipeline))(params, spec, spec)
    assert str(exported.in_avals[-1].shape) == "(b, s)"
    restored = export.deserialize(exported.serialize())
    for shape in ((2, 3), (4, 7)):
        ids = rng.integers(0, 20, shape).astype(np.int32)
        mask = (rng.random(shape) > 0.3).astype(np.int32)
        np.testing.assert_allclose(
            np.asarray(restored.call(params, ids, mask)), np.asarray(jax.jit(pipeline)(params, ids, mask)), rtol=1e-5, atol=1e-6
        )


def test_static_export_carries_its_vjp(rng):
    fn = to_jax(mlp(), {"x": (3, 4), "ids": (3,)})
    restored = export.deserialize(fn.exported.serialize(vjp_order=1))
    x = rng.standard_normal((3, 4)).astype(np.float32)
    weights = [fn.params[n] for n in fn.parameter_names]
    grads = jax.grad(lambda x, w: jnp.sum(jnp.sin(restored.call(x, np.arange(3, dtype=np.int32), *w)[0])), argnums=(0, 1))(
        x, weights
    )
    expected = jax.grad(lambda x, p: jnp.sum(jnp.sin(twin(p, x))), argnums=(0, 1))(x, fn.params)
    np.testing.assert_allclose(np.asarray(grads[0]), np.asarray(expected[0]), rtol=2e-5, atol=1e-6)
    for name, grad in zip(fn.parameter_names, grads[1]):
        np.testing.assert_allclose(np.asarray(grad), np.asarray(expected[1][name]), rtol=2e-5, atol=1e-6)


def test_jitted_training_step_reexports_with_vjp(rng):
    """A user's loss through the bridge, exported with static shapes and its VJP."""
    fn = to_jax(mlp(), {"x": (3, 4), "ids": (3,)})

    def loss(params, x):
        return jnp.mean(fn(params, x, jnp.arange(3))[0] ** 2)

    x = rng.standard_normal((3, 4)).astype(np.float32)
    exported = export.export(jax.jit(loss))(fn.params, jax.ShapeDtypeStruct((3, 4), np.float32))
    restored = export.deserialize(exported.serialize(vjp_order=1))
    grads = jax.grad(restored.call)(fn.params, x)
    expected = jax.grad(lambda p: jnp.mean(twin(p, x) ** 2))(fn.params)
    for name in fn.params:
        np.testing.assert_allclose(np.asarray(grads[name]), np.asarray(expected[name]), rtol=2e-5, atol=1e-7)
