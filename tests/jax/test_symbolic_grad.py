"""Reverse mode through the bridge with symbolic dims (one backward module for every shape),
second order, and forward mode's clear error."""

from __future__ import annotations

import numpy as np
import pytest

jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402

from onnx_stablehlo.errors import ForwardModeError, UnsupportedTransformError  # noqa: E402
from onnx_stablehlo.jax import to_jax  # noqa: E402
import onnx.parser  # noqa: E402

from tests.jax.models import pooled_encoder  # noqa: E402
from tests.jax.test_grad import twin  # noqa: E402

RTOL = 2e-5


def encoder_twin(params, input_ids, attention_mask):
    """tests/jax/models.pooled_encoder in jax.numpy."""
    e = params["embedding"][input_ids]
    p = e @ params["proj"]
    return jnp.tanh(p * attention_mask.astype(jnp.float32)[..., None])


def test_one_backward_module_serves_every_batch_and_sequence_length(rng):
    fn = to_jax(pooled_encoder())
    assert sorted(fn.symbols) == ["batch", "sequence"]

    def loss(params, ids, mask):
        (hidden,) = fn(params, ids, mask)
        return jnp.sum(jnp.sin(hidden))

    grad = jax.jit(jax.grad(loss))
    built = None
    for batch, sequence in ((2, 3), (3, 7)):
        ids = rng.integers(0, 20, (batch, sequence)).astype(np.int32)
        mask = (rng.random((batch, sequence)) > 0.3).astype(np.int32)
        ours = grad(fn.params, ids, mask)
        expected = jax.grad(lambda p: jnp.sum(jnp.sin(encoder_twin(p, ids, mask))))(fn.params)
        for name in ("embedding", "proj"):
            np.testing.assert_allclose(np.asarray(ours[name]), np.asarray(expected[name]), rtol=RTOL, atol=1e-6)
        assert float(jnp.abs(ours["proj"]).max()) > 1e-2
        backward = fn._vjp_built[0]
        assert built is None or backward is built, "the backward module is built once, for every shape"
        built = backward


def test_exported_vjp_is_symbolic_and_serializes(mlp_fn, rng):
    """``fn.exported.vjp()`` keeps the symbolic batch: one serialized VJP runs at two sizes."""
    vjp = mlp_fn.exported.vjp()
    assert not isinstance(vjp.in_avals[0].shape[0], int)
    restored = jax.export.deserialize(vjp.serialize())
    weights = [mlp_fn.params[n] for n in mlp_fn.parameter_names]
    for batch in (2, 6):
        x = rng.standard_normal((batch, 4)).astype(np.float32)
        ids = np.arange(batch, dtype=np.int32)
        ct = rng.standard_normal((batch, 3)).astype(np.float32)
        ct_int = np.zeros((batch,), jax.dtypes.float0)
        cts = restored.call(x, ids, *weights, ct, ct_int)
        _, pullback = jax.vjp(lambda x, *w: twin(dict(zip(mlp_fn.parameter_names, w)), x), x, *weights)
        expected = pullback(jnp.asarray(ct))
        np.testing.assert_allclose(np.asarray(cts[0]), np.asarray(expected[0]), rtol=RTOL, atol=1e-6)
        for ours, theirs in zip(cts[2:], expected[1:]):
            np.testing.assert_allclose(np.asarray(ours), np.asarray(theirs), rtol=RTOL, atol=1e-6)


def test_forward_mode_raises_our_error(mlp_fn):
    x = np.ones((2, 4), np.float32)
    ids = np.arange(2)

    def f(x):
        return mlp_fn(mlp_fn.params, x, ids)[0]

    for transform in (
        lambda: jax.jvp(f, (x,), (x,)),
        lambda: jax.jacfwd(f)(x),
        lambda: jax.hessian(lambda x: jnp.sum(f(x)))(x),
    ):
        with pytest.raises(ForwardModeError, match=r"forward-mode autodiff .* is not supported.*reverse mode") as info:
            transform()
        assert isinstance(info.value, UnsupportedTransformError)


def test_linearize_transposes_but_its_linear_map_raises_jaxs_own_error(mlp_fn):
    """``jax.linearize`` succeeds and its map transposes (a VJP); evaluating the map is forward mode,
    which JAX refuses inside its own evaluation of the linearized jaxpr, after our call returned: no
    hook turns that into ForwardModeError (docs/jax.md). This test fails when JAX changes that."""
    x = np.ones((2, 4), np.float32)
    ids = np.arange(2)

    def f(x):
        return mlp_fn(mlp_fn.params, x, ids)[0]

    y, linear = jax.linearize(f, x)
    (transposed,) = jax.linear_transpose(linear, x)(jnp.ones_like(y))
    (expected,) = jax.vjp(f, x)[1](jnp.ones_like(y))
    np.testing.assert_allclose(np.asarray(transposed), np.asarray(expected), rtol=1e-6)
    with pytest.raises(TypeError, match=r"can't apply forward-mode autodiff \(jvp\) to a custom_vjp function"):
        linear(x)


@pytest.mark.slow
def test_hessian_by_reverse_over_reverse_matches_jnp_twin(mlp_fn, rng):
    """``jax.hessian`` is forward mode; ``jacrev(jacrev)`` (what the error suggests) works."""
    x = rng.standard_normal((2, 4)).astype(np.float32)
    ids = np.arange(2)

    def loss(x):
        return jnp.sum(jnp.sin(mlp_fn(mlp_fn.params, x, ids)[0]))

    ours = jax.jacrev(jax.jacrev(loss))(x)
    expected = jax.hessian(lambda x: jnp.sum(jnp.sin(twin(mlp_fn.params, x))))(x)
    assert ours.shape == (2, 4, 2, 4)
    np.testing.assert_allclose(np.asarray(ours), np.asarray(expected), rtol=1e-4, atol=1e-5)


@pytest.mark.slow
def test_third_order_fails_clearly(mlp_fn):
    x = np.ones((2, 4), np.float32)
    ids = np.arange(2)

    def loss(x):
        return jnp.sum(mlp_fn(mlp_fn.params, x, ids)[0] ** 2)

    def second(x):
        return jnp.sum(jax.grad(lambda x: jnp.sum(jax.grad(loss)(x)))(x))

    with pytest.raises(UnsupportedTransformError, match="derivatives of order 3"):
        jax.grad(second)(x)


def _conv_over_symbolic_image(stride: int):
    """``x float[N, 1, H, W] -> Conv 3x3 (pads 1, strides) -> tanh``: H, W symbolic spatial dims."""
    weights = ", ".join(f"{v:.4f}" for v in np.linspace(-1, 1, 18))
    return onnx.parser.parse_model(f"""
    <ir_version: 9, opset_import: ["" : 18]>
    conv (float[N, 1, H, W] x) => (float[N, 2, H2, W2] y)
    <float[2, 1, 3, 3] w = {{{weights}}}>
    {{
      c = Conv<pads = [1, 1, 1, 1], strides = [{stride}, {stride}]>(x, w)
      y = Tanh(c)
    }}
    """)


def _conv_twin_grads(params, x, stride):
    import jax.lax as lax

    def twin_loss(p, x):
        y = lax.conv_general_dilated(x, p["w"], (stride, stride), ((1, 1), (1, 1)))
        return jnp.sum(jnp.tanh(y) ** 2)

    return jax.grad(twin_loss, argnums=(0, 1))(params, x)


def test_conv_over_symbolic_spatial_dims_has_one_symbolic_backward(rng):
    """Stride 1: the transposed convolutions' padding does not depend on H, W."""
    fn = to_jax(_conv_over_symbolic_image(1))
    weights = [fn.params[n] for n in fn.parameter_names]
    for shape in ((1, 1, 4, 5), (2, 1, 6, 3)):
        x = rng.standard_normal(shape).astype(np.float32)
        ours = jax.grad(lambda x, *w: jnp.sum(fn.exported.call(x, *w)[0] ** 2), argnums=(0, 1))(x, *weights)
        expected = _conv_twin_grads(fn.params, x, 1)
        np.testing.assert_allclose(np.asarray(ours[0]), np.asarray(expected[1]), rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(np.asarray(ours[1]), np.asarray(expected[0]["w"]), rtol=1e-4, atol=1e-5)
    assert fn._vjp_built is not None and not fn._vjp_cache


def test_strided_conv_over_symbolic_spatial_dims_falls_back_to_a_backward_per_shape(rng):
    """Stride 2 over a ? dim: the convolution VJP needs the size; the bridge then lowers the
    model per concrete shape for the backward (as before symbolic build-vjp), and says why when
    traced with symbolic shapes."""
    fn = to_jax(_conv_over_symbolic_image(2))
    for shape in ((1, 1, 4, 5), (2, 1, 6, 3)):
        x = rng.standard_normal(shape).astype(np.float32)
        ours = jax.grad(lambda p, x: jnp.sum(fn(p, x)[0] ** 2), argnums=(0, 1))(fn.params, x)
        expected = _conv_twin_grads(fn.params, x, 2)
        np.testing.assert_allclose(np.asarray(ours[0]["w"]), np.asarray(expected[0]["w"]), rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(np.asarray(ours[1]), np.asarray(expected[1]), rtol=1e-4, atol=1e-5)
    assert fn._vjp_built is None and len(fn._vjp_cache) == 2
    with pytest.raises(UnsupportedTransformError, match="convolution .*stride 2"):
        weights = [fn.params[n] for n in fn.parameter_names]
        jax.grad(lambda x: jnp.sum(fn.exported.call(x, *weights)[0]))(np.ones((1, 1, 4, 4), np.float32))
