"""Two ONNX models and jnp code in one ``jax.jit``; gradients reach every model's weights."""

from __future__ import annotations

import numpy as np
import pytest

jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402

from onnx_stablehlo.jax import to_jax  # noqa: E402
from tests.jax.models import mlp, pooled_encoder  # noqa: E402
from tests.jax.test_grad import twin  # noqa: E402


def encoder_twin(params, ids, mask):
    e = params["embedding"][ids] @ params["proj"]
    return jnp.tanh(e * mask.astype(e.dtype)[..., None])


def test_ensemble_in_one_jit_with_gradients(rng):
    encoder = to_jax(pooled_encoder())
    heads = [to_jax(mlp(seed=s)) for s in (0, 1)]

    def model(params, ids, mask, fn=(encoder, *heads)):
        (hidden,) = fn[0](params["encoder"], ids, mask)
        pooled = jnp.mean(hidden, axis=1)[:, :4]
        zeros = jnp.zeros(ids.shape[0], jnp.int32)
        return 0.5 * (fn[1](params["head0"], pooled, zeros)[0] + fn[2](params["head1"], pooled, zeros)[0])

    def model_twin(params, ids, mask):
        pooled = jnp.mean(encoder_twin(params["encoder"], ids, mask), axis=1)[:, :4]
        return 0.5 * (twin(params["head0"], pooled) + twin(params["head1"], pooled))

    params = {"encoder": encoder.params, "head0": heads[0].params, "head1": heads[1].params}
    ids = rng.integers(0, 20, (4, 5)).astype(np.int32)
    mask = (rng.random((4, 5)) > 0.2).astype(np.int32)
    np.testing.assert_allclose(
        np.asarray(jax.jit(model)(params, ids, mask)), np.asarray(model_twin(params, ids, mask)), rtol=1e-5, atol=1e-6
    )

    def loss(m):
        return lambda p: jnp.sum(m(p, ids, mask) ** 2)

    grads = jax.jit(jax.grad(loss(model)))(params)
    expected = jax.grad(loss(model_twin))(params)
    for group in params:
        for name in params[group]:
            np.testing.assert_allclose(
                np.asarray(grads[group][name]), np.asarray(expected[group][name]), rtol=5e-5, atol=1e-6, err_msg=f"{group}/{name}"
            )
    assert float(jnp.abs(grads["encoder"]["proj"]).max()) > 1e-4
    assert float(jnp.abs(grads["head1"]["w2"]).max()) > 1e-4
