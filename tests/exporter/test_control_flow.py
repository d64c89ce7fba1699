"""Control flow and calls (exporter/rules/control_flow.py): while -> Loop, cond/switch -> If,
func.call inlined, optimization_barrier, JAX's shape assertions dropped; against JAX."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from .util import check_roundtrip, export_jax, run_onnx

RNG = np.random.default_rng(11)


def _f32(*shape):
    return RNG.normal(size=shape).astype(np.float32)


def test_while_loop_with_a_data_dependent_trip_count():
    def f(x, limit):
        def body(state):
            i, acc = state
            return i + 1, acc * 1.5 + jnp.sin(acc)

        return jax.lax.while_loop(lambda s: (s[0] < limit) & (jnp.max(s[1]) < 50.0), body, (0, x))

    model = check_roundtrip(f, _f32(3, 4), np.int32(6), op_types={"Loop"})
    for limit in (0, 2, 40):
        got = run_onnx(model, np.ones((3, 4), np.float32), np.int32(limit))
        want = jax.jit(f)(np.ones((3, 4), np.float32), np.int32(limit))
        np.testing.assert_array_equal(got[0], np.asarray(want[0]))
        np.testing.assert_allclose(got[1], np.asarray(want[1]), rtol=1e-5)


def test_fori_loop_and_scan():
    def f(x):
        total = jax.lax.fori_loop(0, 5, lambda i, acc: acc + x * i, jnp.zeros_like(x))
        carry, ys = jax.lax.scan(lambda c, r: (c + r, c * r), jnp.zeros(x.shape[1]), x)
        return total, carry, ys

    check_roundtrip(f, _f32(4, 3))


def test_cond_and_switch_pick_the_branch_the_predicate_names():
    def f(x, index):
        a = jax.lax.cond(jnp.sum(x) > 0, lambda v: v * 2, lambda v: v - 1, x)
        b = jax.lax.switch(index, [lambda v: v + 1, lambda v: v * v, lambda v: -v], x)
        return a, b

    model = export_jax(f, _f32(2, 3), np.int32(1))
    assert "If" in {n.op_type for n in model.graph.node}
    for index in (-3, 0, 1, 2, 9):  # out of range clamps to the first/last branch, as in JAX
        for x in (_f32(2, 3), -np.abs(_f32(2, 3))):
            got = run_onnx(model, x, np.int32(index))
            for g, w in zip(got, jax.jit(f)(x, np.int32(index))):
                np.testing.assert_allclose(g, np.asarray(w), rtol=1e-6)


def test_nested_jit_calls_are_inlined_and_barriers_pass_values_through():
    inner = jax.jit(lambda v: jnp.tanh(v) * 3)

    def f(x):
        y = inner(x) + inner(x * 2)
        y, z = jax.lax.optimization_barrier((y, x))
        return y - z

    check_roundtrip(f, _f32(5))


def test_symbolic_shape_assertions_are_dropped_and_the_file_serves_every_batch():
    model = export_jax(lambda x: x * x.shape[0], _f32(3, 2), symbolic=["b, 2"])
    assert not any("assert" in n.op_type.lower() for n in model.graph.node)
    for rows in (1, 4):
        x = _f32(rows, 2)
        np.testing.assert_allclose(run_onnx(model, x)[0], x * rows, rtol=1e-6)
