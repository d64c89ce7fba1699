"""The Trainer's engines: the bridge by default, the PJRT engine on the inference path
(``runtime/executables.py``) with training's options, and 64-bit weights on the PJRT engine."""

from __future__ import annotations

import numpy as np
import onnx
import onnx.numpy_helper
import optax

import onnx_stablehlo
from onnx_stablehlo.runtime.executables import Executables
from onnx_stablehlo.runtime.training import Trainer
from tests.training.models import classification_data, mlp_classifier


def test_the_default_engine_is_the_bridge():
    trainer = Trainer(mlp_classifier(), "softmax_cross_entropy")
    assert trainer.engine == "bridge"
    assert onnx_stablehlo.Trainer is Trainer


def test_the_pjrt_engine_compiles_through_the_inference_path_with_training_options():
    data = classification_data(16)
    trainer = Trainer(mlp_classifier(), "softmax_cross_entropy", optimizer=optax.sgd(0.1), engine="pjrt")
    first = trainer.train_step(data)
    for _ in range(5):
        last = trainer.train_step(data)
    assert last < first
    engine = trainer._engine
    assert isinstance(engine.train, Executables) and isinstance(engine.eval, Executables)
    options = engine.train.options
    assert (options.hoist_weights, options.runtime_checks, options.inline_scalar_weights) == (False, False, False)
    assert options.float64_math_on("tpu") is False and options.float64_math_on("cpu") is True
    spec = engine.train.last
    assert spec.artifact.entry == "main_value_and_grad"
    assert spec.artifact.parameter_names == ["w1", "b1", "w2", "b2"]
    assert trainer.compile_count == 1
    trainer.evaluate([data])
    assert trainer.compile_count == 2  # the forward of the same batch shape


def _float64(model: onnx.ModelProto) -> onnx.ModelProto:
    """``model`` with float64 weights, input and output."""
    wide = onnx.ModelProto()
    wide.CopyFrom(model)
    for index, tensor in enumerate(wide.graph.initializer):
        array = onnx.numpy_helper.to_array(tensor).astype(np.float64)
        wide.graph.initializer[index].CopyFrom(onnx.numpy_helper.from_array(array, tensor.name))
    for value in list(wide.graph.input) + list(wide.graph.output):
        value.type.tensor_type.elem_type = onnx.TensorProto.DOUBLE
    return wide


def test_float64_weights_train_on_the_pjrt_engine_by_default():
    data = classification_data(16)
    data = {"x": data["x"].astype(np.float64), "labels": data["labels"]}
    trainer = Trainer(_float64(mlp_classifier()), "softmax_cross_entropy", optimizer=optax.sgd(0.1))
    assert trainer.engine == "pjrt"
    losses = [trainer.train_step(data) for _ in range(6)]
    assert losses[-1] < losses[0]
    assert trainer.trainable_params["w1"].dtype == np.float64


def test_finetune_engine_option_trains_on_either_engine(tmp_path, capsys):
    from onnx_stablehlo.cli import main
    from onnx_stablehlo.runtime.export_onnx import load_initializers

    onnx.save(mlp_classifier(), str(tmp_path / "mlp.onnx"))
    data = classification_data(64, seed=1)
    np.savez(tmp_path / "train.npz", x=data["x"], labels=data["labels"])
    weights = {}
    for engine in ("pjrt", "bridge"):
        out = tmp_path / f"{engine}.onnx"
        code = main([
            "finetune", str(tmp_path / "mlp.onnx"), "--train", str(tmp_path / "train.npz"),
            "--loss", "softmax_cross_entropy", "--steps", "3", "--optimizer", "sgd", "--lr", "0.1",
            "--batch-size", "16", "--engine", engine, "--no-progress", "-o", str(out),
        ])
        assert code == 0, capsys.readouterr().out
        weights[engine] = load_initializers(out)
    for name, value in weights["pjrt"].items():
        np.testing.assert_allclose(weights["bridge"][name], value, rtol=1e-5, atol=1e-6)
    assert not np.array_equal(weights["pjrt"]["w1"], onnx.numpy_helper.to_array(mlp_classifier().graph.initializer[0]))
