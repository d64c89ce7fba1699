"""Elementwise rules (exporter/rules/elementwise.py) against JAX on seeded inputs, edge values
included (signed zeros, infinities, NaN, integer extremes)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from .util import check_roundtrip

RNG = np.random.default_rng(5)
EDGES = np.array([0.0, -0.0, 1e-8, -1e-8, 0.5, -0.5, 1.5, -2.5, 2.5, 1e30, -1e30, np.inf, -np.inf, np.nan],
                 np.float32)


def _floats():
    return np.concatenate([EDGES, RNG.normal(scale=3, size=50).astype(np.float32)])


@pytest.mark.parametrize("name,fn", [
    ("exp", jnp.exp), ("log", jnp.log), ("tanh", jnp.tanh), ("sqrt", jnp.sqrt), ("rsqrt", jax.lax.rsqrt),
    ("sigmoid", jax.nn.sigmoid), ("sin", jnp.sin), ("cos", jnp.cos), ("floor", jnp.floor), ("ceil", jnp.ceil),
    ("round_even", jnp.round), ("round_away", jax.lax.round), ("sign", jnp.sign), ("abs", jnp.abs),
    ("neg", jnp.negative), ("expm1", jnp.expm1), ("log1p", jnp.log1p), ("cbrt", jnp.cbrt),
    ("isfinite", jnp.isfinite), ("erf", jax.scipy.special.erf), ("tan", jnp.tan),
])
def test_unary(name, fn):
    x = _floats()
    if name in ("log", "sqrt", "rsqrt", "log1p"):
        x = np.abs(x)
    check_roundtrip(fn, x)


def test_atan2_quadrants_and_signed_zeros():
    y = np.array([0.0, -0.0, 0.0, -0.0, 1.0, -1.0, 1.0, -1.0, 0.0, 3.0, -3.0, np.inf, -np.inf], np.float32)
    x = np.array([0.0, 0.0, -0.0, -0.0, 0.0, 0.0, -2.0, -2.0, 5.0, np.inf, -np.inf, 1.0, -np.inf], np.float32)
    check_roundtrip(jnp.arctan2, y, x)


def test_binary_arithmetic_comparisons_select_and_clamp():
    a, b = RNG.normal(size=(4, 5)).astype(np.float32), RNG.normal(size=(4, 5)).astype(np.float32)
    check_roundtrip(lambda x, y: (x + y, x - y, x * y, x / y, jnp.maximum(x, y), jnp.minimum(x, y),
                                  jnp.abs(x) ** y, jnp.fmod(x, y), x < y, x <= y, x == y, x != y, x > y, x >= y,
                                  jnp.where(x > y, x, y), jnp.clip(x, -0.5, 0.5)), a, b)


def test_integer_division_remainder_and_logic():
    a = RNG.integers(-50, 50, (30,)).astype(np.int32)
    b = RNG.integers(1, 9, (30,)).astype(np.int32) * np.where(RNG.random(30) < 0.5, -1, 1).astype(np.int32)
    check_roundtrip(lambda x, y: (jax.lax.div(x, y), jax.lax.rem(x, y), x & y, x | y, x ^ y, ~x), a, b)
    p, q = RNG.random(10) < 0.5, RNG.random(10) < 0.5
    check_roundtrip(lambda x, y: (x & y, x | y, x ^ y, ~x), p, q)


@pytest.mark.parametrize("dtype", [np.int8, np.int32, np.uint8, np.uint32])
def test_shifts_with_out_of_range_amounts(dtype):
    info = np.iinfo(dtype)
    width = info.bits
    x = RNG.integers(info.min, info.max, (40,), endpoint=True).astype(dtype)
    s = RNG.integers(0, width + 3, (40,)).astype(dtype)
    check_roundtrip(lambda a, k: (jax.lax.shift_left(a, k), jax.lax.shift_right_logical(a, k),
                                  jax.lax.shift_right_arithmetic(a, k)), x, s)


def test_converts_between_floats_ints_and_bools():
    x = np.concatenate([RNG.normal(scale=100, size=20), [0.0, -0.0, 0.5, -0.5, 2.5]]).astype(np.float32)
    check_roundtrip(lambda a: (a.astype(jnp.int32), a.astype(jnp.uint8), a.astype(jnp.bool_),
                               a.astype(jnp.float16), (a > 0).astype(jnp.float32)), x)
