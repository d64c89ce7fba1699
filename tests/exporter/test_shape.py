"""Shape rules (exporter/rules/shape.py): broadcasts, reshapes, transposes, concatenation, iota,
slices, reverse and the dynamic-shape ops, static and with symbolic dims, against JAX."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from .util import check_roundtrip, export_jax, run_onnx

RNG = np.random.default_rng(7)


def _f32(*shape):
    return RNG.normal(size=shape).astype(np.float32)


def test_two_broadcasts_side_by_side_keep_the_full_shape():
    # Neither operand may count on the other one to carry the full result shape.
    def f(a, b):
        return jnp.broadcast_to(a[None, :, None], (3, 4, 5)) * jnp.broadcast_to(b[None, None, :], (3, 4, 5))

    check_roundtrip(f, _f32(4), _f32(5))


def test_broadcast_in_dim_with_unsorted_dims_and_size_one_dims():
    x = _f32(3, 1, 2)
    check_roundtrip(lambda a: (jax.lax.broadcast_in_dim(a, (2, 4, 3), (2, 0)) * 2.0 + 1.0,), x[:, 0, :].copy())
    check_roundtrip(lambda a: jnp.broadcast_to(a, (4, 3, 6, 2)), x)


def test_broadcast_used_as_an_output_is_expanded():
    model = check_roundtrip(lambda a: jnp.broadcast_to(a, (3, 4)), _f32(4))
    assert "Expand" in {n.op_type for n in model.graph.node}


def test_symbolic_broadcasts_reshapes_and_iota_serve_every_size():
    def f(x):
        rows = jnp.arange(x.shape[0], dtype=jnp.float32)[:, None]
        flat = x.reshape(x.shape[0], -1)
        return flat * rows + x.sum(), jnp.transpose(x, (2, 0, 1)), jnp.concatenate([x, x * 2], axis=0)

    model = export_jax(f, _f32(3, 2, 4), symbolic=["b, 2, 4"])
    assert model.graph.input[0].type.tensor_type.shape.dim[0].dim_param == "b"
    for rows in (1, 5):
        x = _f32(rows, 2, 4)
        got = run_onnx(model, x)
        for g, w in zip(got, jax.jit(f)(x)):
            np.testing.assert_allclose(g, np.asarray(w), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("fn", [
    lambda a: a[1:5:2, ::-1],
    lambda a: jax.lax.slice(a, (0, 1), (6, 4), (3, 2)),
    lambda a: jax.lax.rev(a, (0, 1)),
    lambda a: jnp.flip(a, 1)[2:],
], ids=["strided", "lax-slice", "rev", "flip-slice"])
def test_slices_and_reverse(fn):
    check_roundtrip(fn, _f32(6, 5))


def test_reshape_to_zero_sized_and_scalar_shapes():
    check_roundtrip(lambda a: (a.reshape(0, 3, 2), a.sum().reshape(())), np.zeros((6, 0), np.float32))


def test_get_dimension_size_of_a_symbolic_dim_is_an_integer_output():
    model = export_jax(lambda a: jnp.full((), a.shape[0], jnp.int32) + 1, _f32(3, 2), symbolic=["n, 2"])
    for n in (2, 7):
        assert int(run_onnx(model, _f32(n, 2))[0]) == n + 1
