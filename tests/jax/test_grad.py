"""Reverse mode through the bridge: ``jax.grad``/``jax.vjp`` against a jnp twin, finite differences
and the ``Trainer``; forward mode fails with a clear message; the zero-gradient trap."""

from __future__ import annotations

import numpy as np
import pytest

jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402
import optax  # noqa: E402

from onnx_stablehlo.errors import UnsupportedTransformError  # noqa: E402
from onnx_stablehlo.jax import to_jax  # noqa: E402
from onnx_stablehlo.runtime import jax_export  # noqa: E402
from tests.jax.models import mlp  # noqa: E402

RTOL = 2e-5


def twin(params, x):
    """The mlp model of tests/jax/models.py in jax.numpy (the oracle)."""
    h = jax.nn.relu(x @ params["w1"] + params["b1"])
    return jnp.tanh(h @ params["w2"]) * params["scale"]


def _loss(fn, ids):
    def loss(params, x):
        y, _ = fn(params, x, ids)
        return jnp.sum(jnp.sin(y))

    return loss


def test_grad_wrt_params_and_inputs_matches_jnp_twin(mlp_fn, rng):
    x = rng.standard_normal((6, 4)).astype(np.float32)
    ids = np.arange(6)
    ours = jax.jit(jax.grad(_loss(mlp_fn, ids), argnums=(0, 1)))(mlp_fn.params, x)
    expected = jax.grad(lambda p, x: jnp.sum(jnp.sin(twin(p, x))), argnums=(0, 1))(mlp_fn.params, x)
    for name in mlp_fn.params:
        np.testing.assert_allclose(np.asarray(ours[0][name]), np.asarray(expected[0][name]), rtol=RTOL, atol=1e-6)
    np.testing.assert_allclose(np.asarray(ours[1]), np.asarray(expected[1]), rtol=RTOL, atol=1e-6)
    assert float(jnp.abs(ours[0]["w1"]).max()) > 1e-3  # not a silent zero


def test_vjp_matches_finite_differences(mlp_fn, rng):
    x = rng.standard_normal((3, 4)).astype(np.float64)
    ids = np.arange(3)
    direction = rng.standard_normal((3, 4))
    cotangent = rng.standard_normal((3, 3)).astype(np.float32)

    def f(x):
        return mlp_fn(mlp_fn.params, x.astype(np.float32), ids)[0]

    _, pullback = jax.vjp(f, jnp.asarray(x, jnp.float32))
    (x_ct,) = pullback(jnp.asarray(cotangent))
    eps = 1e-3  # (relu: a larger step can cross a kink)
    plus = np.asarray(f(x + eps * direction), np.float64)
    minus = np.asarray(f(x - eps * direction), np.float64)
    numeric = float(np.sum(cotangent * (plus - minus) / (2 * eps)))
    analytic = float(np.sum(np.asarray(x_ct, np.float64) * direction))
    assert abs(numeric - analytic) <= 5e-3 * max(1.0, abs(analytic))


def test_grad_matches_trainer_step():
    """One SGD step of learning rate 1 moves each weight by its gradient."""
    from onnx_stablehlo.runtime.training import Trainer
    from tests.training.models import classification_data, mlp_classifier

    model = mlp_classifier()
    data = classification_data(16)
    trainer = Trainer(model, "softmax_cross_entropy", optimizer=optax.sgd(1.0))
    before = trainer.trainable_params
    trainer.train_step(data)
    after = trainer.trainable_params

    fn = to_jax(model)

    def loss(params):
        (logits,) = fn(params, data["x"])
        return optax.softmax_cross_entropy_with_integer_labels(logits, jnp.asarray(data["labels"])).mean()

    grads = jax.jit(jax.grad(loss))(fn.params)
    assert sorted(grads) == sorted(trainer.trainable)
    for name in trainer.trainable:
        np.testing.assert_allclose(np.asarray(grads[name]), before[name] - after[name], rtol=1e-4, atol=1e-6)


def test_integer_inputs_and_outputs_have_no_gradient(mlp_fn):
    x = np.ones((2, 4), np.float32)

    def f(x, ids):
        y, twice = mlp_fn(mlp_fn.params, x, ids)
        return jnp.sum(y) + jnp.sum(twice)

    grad_ids = jax.grad(f, argnums=1, allow_int=True)(x, jnp.arange(2))
    assert grad_ids.dtype == jax.dtypes.float0


def test_forward_mode_fails_with_a_clear_message(mlp_fn):
    x = np.ones((2, 4), np.float32)
    with pytest.raises(TypeError, match="forward-mode autodiff"):
        jax.jvp(lambda x: mlp_fn(mlp_fn.params, x, np.arange(2))[0], (x,), (x,))
    with pytest.raises(TypeError, match="forward-mode autodiff"):
        jax.jacfwd(lambda x: mlp_fn(mlp_fn.params, x, np.arange(2))[0])(x)
    # a Hessian maps tangents only: the vmap rule must not fold them (it recursed, growing sizes)
    with pytest.raises(TypeError, match="forward-mode autodiff"):
        jax.hessian(lambda x: jnp.sum(mlp_fn(mlp_fn.params, x, np.arange(2))[0]))(x)


def test_exported_call_has_our_vjp_not_the_templates(rng):
    """The trap: a template ``Exported``'s own VJP differentiates its zero placeholder."""
    fn = to_jax(mlp(), {"x": (5, 4), "ids": (5,)})
    assert jax_export.vjp_factory_of(fn.exported) == fn._exported_vjp
    x = rng.standard_normal((5, 4)).astype(np.float32)
    ids = np.arange(5, dtype=np.int32)
    weights = [fn.params[n] for n in fn.parameter_names]
    through_exported = jax.grad(lambda x: jnp.sum(fn.exported.call(x, ids, *weights)[0]))(x)
    expected = jax.grad(lambda x: jnp.sum(twin(fn.params, x)))(x)
    assert float(jnp.abs(through_exported).max()) > 1e-2
    np.testing.assert_allclose(np.asarray(through_exported), np.asarray(expected), rtol=RTOL, atol=1e-6)


def test_template_vjp_would_be_zero(mlp_fn, rng):
    """Guards the trap itself: an Exported built with the template's VJP gives zero gradients.

    If a jax upgrade changes this, the reason for replacing ``_get_vjp`` is gone and this test
    says so (then revisit runtime/jax_export.py).
    """
    import dataclasses

    x = rng.standard_normal((2, 4)).astype(np.float32)
    static = to_jax(mlp(), {"x": (2, 4), "ids": (2,)})
    template = jax.export.export(jax.jit(lambda *a: (jnp.zeros((2, 3)), jnp.zeros((2,), jnp.int32)), keep_unused=True))(
        *static.exported.in_avals
    )
    trapped = dataclasses.replace(static.exported, _get_vjp=template._get_vjp)
    weights = [static.params[n] for n in static.parameter_names]
    grad = jax.grad(lambda x: jnp.sum(trapped.call(x, np.arange(2, dtype=np.int32), *weights)[0]))(x)
    assert float(jnp.abs(grad).max()) == 0.0


def test_grad_through_symbolic_exported_at_two_shapes(mlp_fn, rng):
    """``fn.exported`` has symbolic dims; its VJP is build-vjp's one shape-polymorphic module."""
    weights = [mlp_fn.params[n] for n in mlp_fn.parameter_names]
    assert not isinstance(mlp_fn.exported.in_avals[0].shape[0], int)
    for batch in (2, 5):
        x = rng.standard_normal((batch, 4)).astype(np.float32)
        ids = np.arange(batch, dtype=np.int32)
        ours = jax.grad(lambda x: jnp.sum(jnp.sin(mlp_fn.exported.call(x, ids, *weights)[0])))(x)
        expected = jax.grad(lambda x: jnp.sum(jnp.sin(twin(mlp_fn.params, x))))(x)
        assert float(jnp.abs(ours).max()) > 1e-2
        np.testing.assert_allclose(np.asarray(ours), np.asarray(expected), rtol=RTOL, atol=1e-6)


def test_second_order_reverse_mode_matches_jnp_twin(mlp_fn, rng):
    """grad of grad: the VJP of the backward module is build-vjp of it."""
    x = rng.standard_normal((3, 4)).astype(np.float32)
    ids = np.arange(3)

    def loss(x):
        return jnp.sum(mlp_fn(mlp_fn.params, x, ids)[0] ** 2)

    def twin_loss(x):
        return jnp.sum(twin(mlp_fn.params, x) ** 2)

    ours = jax.grad(lambda x: jnp.sum(jnp.cos(jax.grad(loss)(x))))(x)
    expected = jax.grad(lambda x: jnp.sum(jnp.cos(jax.grad(twin_loss)(x))))(x)
    assert float(jnp.abs(expected).max()) > 1e-2
    np.testing.assert_allclose(np.asarray(ours), np.asarray(expected), rtol=1e-4, atol=1e-5)
