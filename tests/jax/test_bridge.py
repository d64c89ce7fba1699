"""``to_jax``: the calling convention, ``jax.jit`` against ``CompiledModel.run``, symbolic dims, errors."""

from __future__ import annotations

import numpy as np
import pytest

jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402

import onnx_stablehlo  # noqa: E402
from onnx_stablehlo.errors import FeedError, InvalidOptionError, OnnxStableHLOError  # noqa: E402
from onnx_stablehlo.jax import OnnxFunction, to_jax  # noqa: E402
from tests.jax.models import broadcast_pair, mlp  # noqa: E402


def _feeds(rng, n):
    return {"x": rng.standard_normal((n, 4)).astype(np.float32), "ids": rng.integers(0, 100, n).astype(np.int64)}


def test_calling_convention(mlp_fn):
    assert isinstance(mlp_fn, OnnxFunction)
    assert mlp_fn.input_names == ["x", "ids"]
    assert mlp_fn.output_names == ["y", "twice"]
    assert sorted(mlp_fn.params) == ["b1", "scale", "w1", "w2"]
    assert mlp_fn.params["w1"].shape == (4, 8)
    assert mlp_fn.params["w1"].dtype == np.float32
    assert mlp_fn.symbols == {"batch": [("x", 0), ("ids", 0)]}
    assert mlp_fn.batch_dim == "batch"
    # one Exported with symbolic dims; int64 is int32 on the JAX side (x64 off)
    x_aval, ids_aval = mlp_fn.exported.in_avals[:2]
    assert str(x_aval.shape[0]) == "batch" and x_aval.shape[1] == 4
    assert ids_aval.dtype == np.int32
    assert [str(a.shape[0]) for a in mlp_fn.exported.out_avals] == ["batch", "batch"]


@pytest.mark.parametrize("n", [1, 5, 12])
def test_jit_matches_compiled_model(mlp_model, mlp_fn, rng, n):
    feeds = _feeds(rng, n)
    expected = onnx_stablehlo.compile(mlp_model).run(feeds)
    y, twice = jax.jit(mlp_fn)(mlp_fn.params, feeds["x"], feeds["ids"])
    np.testing.assert_allclose(np.asarray(y), expected[0], rtol=1e-6, atol=1e-6)
    np.testing.assert_array_equal(np.asarray(twice), expected[1])
    # keywords, and no jit
    y2, _ = mlp_fn(mlp_fn.params, ids=feeds["ids"], x=feeds["x"])
    np.testing.assert_allclose(np.asarray(y2), expected[0], rtol=1e-6, atol=1e-6)


def test_one_exported_serves_every_shape(mlp_fn, rng):
    exported = mlp_fn.exported
    for n in (2, 7):
        feeds = _feeds(rng, n)
        (y, _) = exported.call(feeds["x"], feeds["ids"].astype(np.int32), *[mlp_fn.params[k] for k in mlp_fn.parameter_names])
        assert y.shape == (n, 3)
    assert mlp_fn.exported is exported


def test_bundled_model_matches_compiled_model(rng):
    path = onnx_stablehlo.example_model_path()
    fn = to_jax(path)
    ids = rng.integers(0, 256, (2, 16)).astype(np.int64)
    expected = onnx_stablehlo.compile(path).run({"input_ids": ids})
    (out,) = jax.jit(fn)(fn.params, ids)
    np.testing.assert_allclose(np.asarray(out), expected[0], rtol=1e-5, atol=1e-5)


def test_params_are_a_pytree_that_changes_the_result(mlp_fn, rng):
    feeds = _feeds(rng, 3)
    params = jax.tree.map(lambda p: p * 2, mlp_fn.params)
    params["scale"] = jnp.asarray(0.0, jnp.float32)
    (y, _) = jax.jit(mlp_fn)(params, feeds["x"], feeds["ids"])
    np.testing.assert_array_equal(np.asarray(y), np.zeros((3, 3), np.float32))


def test_feed_errors_name_the_input_and_the_symbol(mlp_fn, rng):
    x = rng.standard_normal((4, 4)).astype(np.float32)
    with pytest.raises(FeedError, match=r"dim 'batch' is 4 in input 'x' \(axis 0\) but 3 in input 'ids' \(axis 0\)"):
        mlp_fn(mlp_fn.params, x, np.arange(3))
    with pytest.raises(FeedError, match=r"input 'x': axis 1 must be 4"):
        mlp_fn(mlp_fn.params, np.zeros((4, 5), np.float32), np.arange(4))
    with pytest.raises(FeedError, match=r"input 'x': expected rank 2"):
        mlp_fn(mlp_fn.params, np.zeros((4,), np.float32), np.arange(4))
    with pytest.raises(FeedError, match=r"input 'x': expected dtype float32, got int32"):
        mlp_fn(mlp_fn.params, np.zeros((4, 4), np.int32), np.arange(4))
    with pytest.raises(FeedError, match=r"missing input 'ids'"):
        mlp_fn(mlp_fn.params, x)
    with pytest.raises(FeedError, match=r"unknown input 'z'"):
        mlp_fn(mlp_fn.params, x, np.arange(4), z=x)
    params = dict(mlp_fn.params)
    del params["w2"]
    with pytest.raises(FeedError, match=r"params lack 'w2'"):
        mlp_fn(params, x, np.arange(4))
    with pytest.raises(FeedError, match=r"param 'w1': expected shape \(4, 8\)"):
        mlp_fn({**mlp_fn.params, "w1": jnp.zeros((8, 4))}, x, np.arange(4))
    # the same checks hold under jit (shapes are concrete at trace time)
    with pytest.raises(FeedError, match="dim 'batch'"):
        jax.jit(mlp_fn)(mlp_fn.params, x, np.arange(3))


def test_recorded_dim_equality_is_checked():
    fn = to_jax(broadcast_pair())
    a = np.ones((3, 4), np.float32)
    (c,) = fn(fn.params, a, 2 * a)
    np.testing.assert_array_equal(np.asarray(c), 3 * a)
    with pytest.raises(FeedError, match=r"dim 'N' is 3 in input 'a' \(axis 0\) and dim 'M' is 5 in input 'b' \(axis 0\), but the model was lowered assuming 'N' == 'M' \(broadcast at node 'add'\)"):
        fn(fn.params, a, np.ones((5, 4), np.float32))


def test_batch_dim_option():
    model = mlp(batch="N")
    assert to_jax(model).batch_dim is None  # "auto" wants a name with "batch" in it
    assert to_jax(model, batch_dim="N").batch_dim == "N"
    with pytest.raises(InvalidOptionError, match="batch_dim 'B' is not a symbolic dim.*'N'"):
        to_jax(model, batch_dim="B")


def test_static_input_shapes(mlp_model, rng):
    fn = to_jax(mlp_model, {"x": (3, 4), "ids": (3,)})
    assert fn.exported.in_avals[0].shape == (3, 4)
    feeds = _feeds(rng, 3)
    expected = onnx_stablehlo.compile(mlp_model).run(feeds)
    np.testing.assert_allclose(np.asarray(fn(fn.params, feeds["x"], feeds["ids"])[0]), expected[0], rtol=1e-6, atol=1e-6)


def test_errors_are_ours():
    assert issubclass(FeedError, OnnxStableHLOError)
    with pytest.raises(OnnxStableHLOError):
        to_jax(b"not a model")


def test_export_for_several_platforms(mlp_fn, rng):
    """With two platforms @main takes a leading platform index; the CPU call is unchanged."""
    fn = to_jax(mlp(), platforms=("cpu", "cuda"))
    assert fn.exported.platforms == ("cpu", "cuda")
    feeds = _feeds(rng, 3)
    (y, _) = jax.jit(fn)(fn.params, feeds["x"], feeds["ids"])
    (expected, _) = mlp_fn(mlp_fn.params, feeds["x"], feeds["ids"])
    np.testing.assert_array_equal(np.asarray(y), np.asarray(expected))


def test_onnx_values_restore_initializer_dtypes(tmp_path, rng):
    """A float64 model: with x64 off its weight is float32 in JAX and float64 again for save_onnx."""
    import onnx.parser

    from onnx_stablehlo.runtime.export_onnx import save_onnx
    from tests.training.models import ort_run

    model = onnx.parser.parse_model("""
    <ir_version: 9, opset_import: ["" : 18]>
    g (double[N, 2] x) => (double[N, 2] y)
    <double[2] w = {0.5, -2.0}> {
      y = Mul(x, w)
    }
    """)
    fn = to_jax(model)
    assert fn.params["w"].dtype == np.float32 and fn.exported.out_avals[0].dtype == np.float32
    params = {"w": fn.params["w"] * 3}
    values = fn.onnx_values(params)
    assert values["w"].dtype == np.float64
    path = save_onnx(values, tmp_path / "m.onnx", original=model)
    x = rng.standard_normal((3, 2))
    (theirs,) = ort_run(path, {"x": x})
    (ours,) = fn(params, x)
    np.testing.assert_allclose(theirs, np.asarray(ours), rtol=1e-6)
    with pytest.raises(FeedError, match="'v' is not a weight"):
        fn.onnx_values({"v": np.zeros(2)})
