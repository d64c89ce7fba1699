"""onnx_stablehlo.to_onnx: JAX callables, Exported artifacts and StableHLO modules to ONNX."""

from __future__ import annotations

import os

import jax
import jax.numpy as jnp
import numpy as np
import onnx
import onnxruntime
import pytest

import onnx_stablehlo
from onnx_stablehlo import export
from onnx_stablehlo.errors import (
    ExportError,
    ExportMismatchError,
    OnnxStableHLOError,
    UnsupportedExportError,
    WriteError,
)
from onnx_stablehlo.exporter.rules import default_registry

RNG = np.random.default_rng(0)


def _f32(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def _run(model, feeds):
    session = onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return session.run(None, feeds)


def _dims(value_info):
    return [d.dim_param or d.dim_value for d in value_info.type.tensor_type.shape.dim]


def test_package_face_exposes_to_onnx():
    assert onnx_stablehlo.to_onnx is export.to_onnx
    assert "to_onnx" in onnx_stablehlo.__all__ and "to_onnx" in dir(onnx_stablehlo)


def test_callable_with_concrete_args_is_checked_and_named_by_signature():
    def f(x, y):
        return jnp.tanh(x) * y

    x, y = _f32(2, 3), _f32(2, 3)
    model = onnx_stablehlo.to_onnx(f, x, y)
    assert isinstance(model, onnx.ModelProto)
    assert [i.name for i in model.graph.input] == ["x", "y"]
    assert [o.name for o in model.graph.output] == ["output_0"]
    (got,) = _run(model, {"x": x, "y": y})
    np.testing.assert_allclose(got, np.tanh(x) * y, rtol=1e-5, atol=1e-6)


def test_params_become_initializers_named_by_unique_keys():
    params = {"encoder.weight": _f32(40, 32), "encoder.bias": _f32(40, 32)}

    def f(params, ids):
        return ids * params["encoder.weight"] + params["encoder.bias"]

    ids = _f32(40, 32)
    model = export.to_onnx(f, ids, params=params, optimize=False)
    assert {i.name for i in model.graph.initializer} >= {"encoder.weight", "encoder.bias"}
    assert [i.name for i in model.graph.input] == ["ids"]


def test_nested_params_are_named_by_their_paths():
    params = {"params": {"Dense_0": {"kernel": _f32(3, 3)}, "Dense_1": {"kernel": _f32(3, 3), "bias": _f32(3)}}}

    def f(params, x):
        p = params["params"]
        return x * p["Dense_0"]["kernel"] * p["Dense_1"]["kernel"] + p["Dense_1"]["bias"]

    model = export.to_onnx(f, _f32(3, 3), params=params, optimize=False)
    names = {i.name for i in model.graph.initializer}
    assert {"params/Dense_0/kernel", "params/Dense_1/kernel", "bias"} <= names


def test_tuple_params_and_a_lone_array_params():
    model = export.to_onnx(lambda p, x: x + p[0] * p[1], _f32(4), params=(_f32(4), _f32(4)), optimize=False)
    assert {"params/0", "params/1"} <= {i.name for i in model.graph.initializer}
    model = export.to_onnx(lambda p, x: x + p, _f32(4), params=_f32(4), optimize=False)
    assert "params" in {i.name for i in model.graph.initializer}


def test_pytree_inputs_and_outputs_are_named_by_their_paths():
    def f(batch, scale):
        return {"logits": batch["image"] * scale, "aux": (batch["label"] + 1, batch["image"].sum(axis=()))}

    batch = {"image": _f32(2, 2), "label": np.arange(3, dtype=np.int32)}
    model = export.to_onnx(f, batch, np.float32(2.0))
    assert [i.name for i in model.graph.input] == ["image", "label", "scale"]
    assert [o.name for o in model.graph.output] == ["aux/0", "aux/1", "logits"]
    model = export.to_onnx(lambda a: (a + 1, a * 2), _f32(2), output_names=["plus", "times"], input_names=["a_in"])
    assert [o.name for o in model.graph.output] == ["plus", "times"]
    assert [i.name for i in model.graph.input] == ["a_in"]


def test_symbolic_dims_become_dim_params_and_struct_args_skip_the_check():
    b, n = jax.export.symbolic_shape("b, n")
    spec = jax.ShapeDtypeStruct((b, n, 4), np.float32)
    model = export.to_onnx(lambda x: (jnp.exp(x), x.reshape(-1)), spec)
    assert _dims(model.graph.input[0]) == ["b", "n", 4]
    assert _dims(model.graph.output[0]) == ["b", "n", 4]
    assert _dims(model.graph.output[1])[0] in ("4*b*n", "4*n*b", "b*n*4")
    x = _f32(2, 3, 4)
    got = _run(model, {"x": x})
    np.testing.assert_allclose(got[0], np.exp(x), rtol=1e-5)
    np.testing.assert_array_equal(got[1], x.reshape(-1))


def test_int64_inputs_are_int32_with_x64_off():
    model = export.to_onnx(lambda i: i + 1, np.arange(4, dtype=np.int64))
    assert model.graph.input[0].type.tensor_type.elem_type == onnx.TensorProto.INT32


def test_exported_artifact_and_its_serialized_bytes():
    exported = jax.export.export(jax.jit(lambda x, y: {"s": jnp.sin(x) + y}), platforms=("cpu",))(
        jax.ShapeDtypeStruct((2, 3), np.float32), jax.ShapeDtypeStruct((3,), np.float32))
    x, y = _f32(2, 3), _f32(3)
    model = export.to_onnx(exported, x, y)
    assert [i.name for i in model.graph.input] == ["input_0", "input_1"]
    assert [o.name for o in model.graph.output] == ["s"]
    again = export.to_onnx(exported.serialize(), x, y)
    np.testing.assert_allclose(_run(again, {"input_0": x, "input_1": y})[0], np.sin(x) + y, rtol=1e-5, atol=1e-6)


def test_multi_platform_exported_gets_the_cpu_index():
    exported = jax.export.export(jax.jit(lambda x: x * 3), platforms=("cuda", "cpu"))(
        jax.ShapeDtypeStruct((2,), np.float32))
    model = export.to_onnx(exported, check=False)
    assert [i.name for i in model.graph.input] == ["input_0"]
    np.testing.assert_allclose(_run(model, {"input_0": np.ones(2, np.float32)})[0], [3.0, 3.0])


MLIR = """
func.func @main(%x: tensor<?x4xf32>, %w: tensor<4xf32>) -> tensor<?x4xf32> {
  %e = stablehlo.exponential %x : tensor<?x4xf32>
  %n = stablehlo.negate %e : tensor<?x4xf32>
  return %n : tensor<?x4xf32>
}
"""


def test_mlir_text_path_and_bytes_are_checked_on_pjrt(tmp_path):
    path = tmp_path / "m.mlir"
    path.write_text(MLIR)
    x, w = _f32(3, 4), _f32(4)
    for source in (MLIR, path, str(path)):
        model = export.to_onnx(source, x, w)
        assert [i.name for i in model.graph.input] == ["input_0", "input_1"]
        assert _dims(model.graph.input[0]) == ["input_0_d0", 4]
    from jaxlib.mlir import ir

    from onnx_stablehlo.frontend.jaxlib_mlir import make_mlir_context

    with make_mlir_context() as context:
        bytecode_module = ir.Module.parse(MLIR, context)
        import io

        buffer = io.BytesIO()
        bytecode_module.operation.write_bytecode(buffer)
    model = export.to_onnx(buffer.getvalue(), x, w, input_names=["x", "w"])
    np.testing.assert_allclose(_run(model, {"x": x, "w": w})[0], -np.exp(x), rtol=1e-5)
    with pytest.raises(ExportError, match="params are the first arguments"):
        export.to_onnx(MLIR, w, params={"x": w})
    swapped = MLIR.replace("%x: tensor<?x4xf32>, %w: tensor<4xf32>", "%w: tensor<4xf32>, %x: tensor<?x4xf32>")
    model = export.to_onnx(swapped, x, params={"w": w})
    assert [i.name for i in model.graph.input] == ["input_0"]


def test_check_raises_export_mismatch_on_a_broken_rule(monkeypatch):
    def broken_sine(ctx):
        return [ctx.emit("Cos", [ctx.input(0)])]

    monkeypatch.setitem(default_registry()._rules, "stablehlo.sine", broken_sine)
    with pytest.raises(ExportMismatchError) as info:
        export.to_onnx(lambda x: {"wave": jnp.sin(x)}, _f32(8))
    assert info.value.output == "wave" and "max abs diff" in str(info.value)
    export.to_onnx(lambda x: jnp.sin(x), _f32(8), check=False)  # no check: no error


def test_check_tolerances():
    x = _f32(64)
    export.to_onnx(lambda x: jnp.exp(x), x, rtol=1e-3, atol=1e-3)
    got, want = np.float32([1.0, 2.0]), np.float32([1.0, 2.001])
    with pytest.raises(ExportMismatchError, match="'y'.*first at \\[1\\]"):
        export.check_outputs(["y"], [got], [want])
    export.check_outputs(["y"], [got], [want], rtol=1e-3, atol=0)
    with pytest.raises(ExportMismatchError, match="int32"):
        export.check_outputs(["y"], [np.int64([1])], [np.int32([1])])
    with pytest.raises(ExportMismatchError, match="at 1 of 2"):
        export.check_outputs(["k"], [np.int32([1, 2])], [np.int32([1, 3])])
    export.check_outputs(["n"], [np.float32([np.nan, np.inf])], [np.float32([np.nan, np.inf])])


def test_typed_errors():
    with pytest.raises(ExportError, match="JAX callable"):
        export.to_onnx(42)
    with pytest.raises(ExportError, match="input names one per input leaf"):
        export.to_onnx(lambda x, y: x + y, _f32(2), _f32(2), input_names=["only_one"])
    with pytest.raises(ExportError, match="output names"):
        export.to_onnx(lambda x: x, _f32(2), output_names=["a", "b"])
    with pytest.raises(ExportError, match="could not trace"):
        export.to_onnx(lambda x: x @ jnp.ones((5, 7)), _f32(2, 3))
    with pytest.raises(ExportError, match="not a StableHLO module"):
        export.to_onnx("func.func @main( garbage")
    with pytest.raises(ExportError, match="params do not match"):
        exported = jax.export.export(jax.jit(lambda p, x: x + p), platforms=("cpu",))(
            jax.ShapeDtypeStruct((2,), np.float32), jax.ShapeDtypeStruct((2,), np.float32))
        export.to_onnx(exported, params={"a": np.ones(2, np.float32)})
    with pytest.raises(ExportError, match="cannot read"):
        export.to_onnx("/nonexistent/model.mlir")


def test_unsupported_ops_are_listed():
    def f(key, x):
        return jax.lax.rng_bit_generator(key, (4,), dtype=jnp.uint32)[1], jnp.sqrt(x)

    with pytest.raises(UnsupportedExportError) as info:
        export.to_onnx(f, np.zeros(2, np.uint64) if jax.config.jax_enable_x64 else np.zeros(4, np.uint32), _f32(2))
    assert any(name == "stablehlo.rng_bit_generator" for name, _, _ in info.value.problems)
    assert isinstance(info.value, OnnxStableHLOError)


def _listing(folder):
    return sorted(os.listdir(folder))


def test_path_is_written_atomically_without_debris(tmp_path):
    target = tmp_path / "m.onnx"
    model = export.to_onnx(lambda x: x * 2, _f32(3), path=target)
    assert _listing(tmp_path) == ["m.onnx"]
    assert onnx.load(target) == model
    before = target.read_bytes()

    def broken_sine(ctx):
        return [ctx.emit("Cos", [ctx.input(0)])]

    registry = default_registry()
    original = registry._rules["stablehlo.sine"]
    registry._rules["stablehlo.sine"] = broken_sine
    try:
        with pytest.raises(ExportMismatchError):
            export.to_onnx(lambda x: jnp.sin(x), _f32(3), path=target)
    finally:
        registry._rules["stablehlo.sine"] = original
    assert target.read_bytes() == before and _listing(tmp_path) == ["m.onnx"]
    with pytest.raises(WriteError, match="does not exist"):
        export.to_onnx(lambda x: x * 2, _f32(3), path=tmp_path / "missing" / "m.onnx")
    with pytest.raises(WriteError, match="folder"):
        export.to_onnx(lambda x: x * 2, _f32(3), path=tmp_path)


def test_failing_write_leaves_nothing(tmp_path):
    class Boom(RuntimeError):
        pass

    class Unserializable:
        graph = onnx.GraphProto()

        def ByteSize(self):
            return 10

        def SerializeToString(self):
            raise Boom("serialization failed")

    (tmp_path / "m.onnx").write_bytes(b"old")
    with pytest.raises(Boom):
        export.save_model(Unserializable(), tmp_path / "m.onnx")
    assert _listing(tmp_path) == ["m.onnx"] and (tmp_path / "m.onnx").read_bytes() == b"old"


def test_large_model_goes_to_external_data(tmp_path, monkeypatch):
    monkeypatch.setattr(export, "EXTERNAL_DATA_THRESHOLD", 10_000)
    weight = _f32(64, 64)  # 16 KiB
    target = tmp_path / "big.onnx"
    model = export.to_onnx(lambda p, x: x * p["weight"], _f32(64, 64), params={"weight": weight}, path=target,
                           optimize=False)
    assert _listing(tmp_path) == ["big.onnx", "big.onnx.data"]
    stored = onnx.load(target, load_external_data=False)
    tensor = next(t for t in stored.graph.initializer if t.name == "weight")
    assert tensor.data_location == onnx.TensorProto.EXTERNAL and not tensor.raw_data
    assert {e.key: e.value for e in tensor.external_data}["location"] == "big.onnx.data"
    assert target.stat().st_size < 10_000 < (tmp_path / "big.onnx.data").stat().st_size
    # the returned model keeps its data inline
    inline = next(t for t in model.graph.initializer if t.name == "weight")
    assert inline.raw_data and inline.data_location == onnx.TensorProto.DEFAULT
    x = _f32(64, 64)
    session = onnxruntime.InferenceSession(str(target), providers=["CPUExecutionProvider"])
    np.testing.assert_allclose(session.run(None, {"x": x})[0], x * weight, rtol=1e-6)
    np.testing.assert_array_equal(onnx.numpy_helper.to_array(
        next(t for t in onnx.load(target).graph.initializer if t.name == "weight")), weight)


def test_describe_and_example_inputs():
    described = export.describe_inputs(MLIR)
    assert described == [("input_0", ("input_0_d0", 4), np.dtype(np.float32)), ("input_1", (4,), np.dtype(np.float32))]
    arrays = export.example_inputs(MLIR, dims={"input_0_d0": 5})
    assert [a.shape for a in arrays] == [(5, 4), (4,)]
    again = export.example_inputs(MLIR, shapes={"input_0": (5, 4)})
    np.testing.assert_array_equal(arrays[0], again[0])
    with pytest.raises(ExportError, match="--dim input_0_d0=N"):
        export.example_inputs(MLIR)
    with pytest.raises(ExportError, match="symbolic dims are input_0_d0"):
        export.example_inputs(MLIR, dims={"batch": 2})
