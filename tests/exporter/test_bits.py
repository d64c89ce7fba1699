"""Bit-level rules (exporter/rules/bits.py) and the ops with no ONNX form."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from onnx_stablehlo.errors import UnsupportedExportError

from .util import check_roundtrip, export_jax


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32])
def test_popcnt_and_clz(dtype):
    info = np.iinfo(dtype)
    rng = np.random.default_rng(1)
    x = rng.integers(info.min, info.max, (64,), endpoint=True).astype(dtype)
    x[:4] = [0, 1, info.max, info.min]
    check_roundtrip(lambda a: (jax.lax.population_count(a), jax.lax.clz(a)), x)


def test_integer_bitcast_keeps_the_bits():
    x = np.array([-1, 0, 5, -128, 127], np.int8)
    check_roundtrip(lambda a: jax.lax.bitcast_convert_type(a, jnp.uint8), x)


def test_float_bitcast_needs_opset_26():
    x = np.array([1.0, -2.5, 0.0], np.float32)
    fn = lambda a: jax.lax.bitcast_convert_type(a, jnp.int32)  # noqa: E731
    with pytest.raises(UnsupportedExportError, match="BitCast.*opset >= 26"):
        export_jax(fn, x)
    model = export_jax(fn, x, opset=26)
    from .util import run_onnx

    np.testing.assert_array_equal(run_onnx(model, x)[0], x.view(np.int32))


def test_ops_without_onnx_form_are_listed_with_reasons():
    def f(key, x):
        bits = jax.random.bits(jax.random.wrap_key_data(key, impl="rbg"), (3,))
        return x + bits.astype(jnp.float32)

    key = jax.random.key_data(jax.random.key(0, impl="rbg"))  # rbg draws with rng_bit_generator
    with pytest.raises(UnsupportedExportError, match="rng_bit_generator.*random") as info:
        export_jax(f, key, np.zeros(3, np.float32))
    assert all(loc for _, loc, _ in info.value.problems)


def test_threefry_random_bits_export_exactly():
    """JAX's default PRNG (threefry) is plain integer arithmetic: the exported file draws the
    same bits as JAX for the same key."""
    key = jax.random.key_data(jax.random.key(42))
    check_roundtrip(lambda k: jax.random.bits(jax.random.wrap_key_data(k), (4, 5)), key)
    # uniform floats are built from the bits by a bitcast: ONNX BitCast, opset 26.
    uniform = lambda k: jax.random.uniform(jax.random.wrap_key_data(k), (7,))  # noqa: E731
    from .util import run_onnx

    got = run_onnx(export_jax(uniform, key, opset=26), key)[0]
    np.testing.assert_array_equal(got, np.asarray(jax.jit(uniform)(key)))
