"""The bridge lowers through the runtime's one lowering step (issue 13 item 3): ``to_jax`` options
become a ``CompileOptions``, the symbolic forward module and the per-shape static backward
fallback come from ``runtime.executables.lower_artifact`` as frozen ``Artifact``s, the float64
policy is CompileOptions' (off for TPU), and no module is printed to text on the way."""

from __future__ import annotations

import numpy as np
import onnx
import onnx.helper as oh
import pytest

from onnx_stablehlo.errors import InvalidOptionError


def _erf_model() -> onnx.ModelProto:
    graph = oh.make_graph(
        [oh.make_node("Erf", ["x"], ["y"], name="erf")],
        "g",
        [oh.make_tensor_value_info("x", onnx.TensorProto.FLOAT, ["batch", 3])],
        [oh.make_tensor_value_info("y", onnx.TensorProto.FLOAT, ["batch", 3])],
    )
    return oh.make_model(graph, opset_imports=[oh.make_opsetid("", 18)], ir_version=9)


def test_to_jax_options_are_a_compile_options(mlp_model):
    from onnx_stablehlo.jax import to_jax
    from onnx_stablehlo.runtime.artifact import Artifact
    from onnx_stablehlo.runtime.options import CompileOptions

    fn = to_jax(mlp_model, dims={"batch": 3})
    assert isinstance(fn.options, CompileOptions)
    assert dict(fn.options.dims) == {"batch": 3}
    assert (fn.options.weights, fn.options.runtime_checks, fn.options.inline_scalar_weights) == ("args", False, False)
    assert isinstance(fn.lowered, Artifact)
    assert [tuple(s) for _, s in fn.lowered.input_types] == [(3, 4), (3,)]


def test_bad_options_fail_in_to_jax(mlp_model):
    from onnx_stablehlo.jax import to_jax

    with pytest.raises(InvalidOptionError, match=r"dims\['batch'\]"):
        to_jax(mlp_model, dims={"batch": "eight"})


def test_forward_and_fallback_go_through_lower_artifact(mlp_model, rng, monkeypatch):
    import jax
    import jax.numpy as jnp

    from onnx_stablehlo.jax import to_jax
    from onnx_stablehlo.runtime import executables

    calls = []
    original = executables.lower_artifact

    def counting(model, options, platform, **kwargs):
        calls.append((options, platform, kwargs.get("dynamic"), kwargs.get("input_shapes")))
        return original(model, options, platform, **kwargs)

    monkeypatch.setattr(executables, "lower_artifact", counting)
    fn = to_jax(mlp_model)
    assert [(c[0], c[2]) for c in calls] == [(fn.options, True)]
    # The static backward fallback (a symbolic VJP build-vjp cannot make) lowers per shape
    # through the same function, with input_shapes set.
    fn._symbolic_vjp_error = RuntimeError("forced for the test")
    x = jnp.asarray(rng.standard_normal((2, 4)).astype(np.float32))
    ids = jnp.asarray(np.arange(2, dtype=np.int32))
    grads = jax.grad(lambda p: jnp.sum(fn(p, x, ids)[0]))(fn.params)
    assert [(c[2], c[3]) for c in calls[1:]] == [(False, {"x": (2, 4), "ids": (2,)})]
    symbolic = to_jax(mlp_model)
    expected = jax.grad(lambda p: jnp.sum(symbolic(p, x, ids)[0]))(symbolic.params)
    for name in expected:
        np.testing.assert_allclose(np.asarray(grads[name]), np.asarray(expected[name]), rtol=1e-5, atol=1e-6)


def test_float64_math_follows_the_platform():
    from onnx_stablehlo.jax import to_jax

    model = _erf_model()
    assert "f64" in to_jax(model, platforms=["cpu"]).lowered.text  # float64 Horner erf
    tpu = to_jax(model, platforms=["tpu"]).lowered.text
    assert "f64" not in tpu and "chlo.erf" in tpu


def test_no_module_text_on_the_bridge_path(mlp_model, rng, monkeypatch):
    import jax
    import jax.numpy as jnp
    from jaxlib.mlir import ir

    from onnx_stablehlo.jax import to_jax

    prints = []
    original = ir.Operation.get_asm

    def counting(self, *args, **kwargs):
        prints.append(1)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(ir.Operation, "get_asm", counting)
    fn = to_jax(mlp_model)
    x = jnp.asarray(rng.standard_normal((2, 4)).astype(np.float32))
    ids = jnp.asarray(np.arange(2, dtype=np.int32))
    y, twice = fn(fn.params, x, ids)
    grads = jax.grad(lambda p: jnp.sum(fn(p, x, ids)[0]))(fn.params)
    assert prints == []
    assert np.asarray(y).shape == (2, 3)
    np.testing.assert_array_equal(np.asarray(twice), [0, 2])
    assert all(np.all(np.isfinite(np.asarray(g))) for g in grads.values())
