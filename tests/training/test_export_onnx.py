"""Writing trained weights back to .onnx: onnxruntime reproduces our outputs; typed errors."""

from __future__ import annotations

import os

import numpy as np
import onnx
import optax
import pytest

import onnx_stablehlo
from onnx_stablehlo.heads import add_classifier_head
from onnx_stablehlo.runtime.export_onnx import (
    ExportError,
    InitializerMismatchError,
    UnknownInitializerError,
    load_initializers,
    save_onnx,
)
from onnx_stablehlo.runtime.training import ArrayBatches, Trainer
from tests.training.models import ort_run, tiny_encoder

ORT_ATOL = 1e-5
"""onnxruntime on the written file against our outputs (float32)."""


@pytest.fixture
def trained(mlp, data):
    trainer = Trainer(mlp, "softmax_cross_entropy", trainable=["w1", "w2", "b2"], optimizer=optax.adam(1e-2))
    trainer.fit(ArrayBatches(data, 32), steps=10, progress=False)
    return trainer


def test_onnxruntime_on_the_written_file_reproduces_our_outputs(trained, mlp, data, tmp_path):
    path = trained.save_onnx(tmp_path / "trained.onnx")
    written = onnx.load(str(path))
    onnx.checker.check_model(written, full_check=True)
    original = {t.name: t for t in mlp.graph.initializer}
    assert [t.name for t in written.graph.initializer] == [t.name for t in mlp.graph.initializer]
    for tensor in written.graph.initializer:
        assert tensor.data_type == original[tensor.name].data_type
        assert list(tensor.dims) == list(original[tensor.name].dims)
    values = load_initializers(path)
    assert np.array_equal(values["b1"], onnx.numpy_helper.to_array(original["b1"]))  # frozen
    assert np.array_equal(values["w1"], trained.trainable_params["w1"])
    feeds = {"x": data["x"][:20]}
    (ours,) = trained.predict(feeds)
    (theirs,) = ort_run(path, feeds)
    np.testing.assert_allclose(theirs, ours, rtol=0, atol=ORT_ATOL)
    assert oct(os.stat(path).st_mode & 0o777) == oct(0o644)


def test_the_original_file_is_never_overwritten_unless_asked(trained, mlp, tmp_path):
    source = tmp_path / "model.onnx"
    onnx.save(mlp, str(source))
    before = source.read_bytes()
    with pytest.raises(ExportError, match="is the original model; pass overwrite=True"):
        save_onnx(trained.trainable_params, source, original=source)
    assert source.read_bytes() == before
    save_onnx(trained.trainable_params, tmp_path / "copy.onnx", original=source)
    assert source.read_bytes() == before
    save_onnx(trained.trainable_params, source, original=source, overwrite=True)
    assert np.array_equal(load_initializers(source)["w2"], trained.trainable_params["w2"])


def test_mismatched_dtype_shape_and_name_raise_typed_errors(mlp):
    w1 = onnx.numpy_helper.to_array(mlp.graph.initializer[0])
    with pytest.raises(InitializerMismatchError, match=r"'w1' is float32\[4, 16\] in the model.*float64\[4, 16\]") as info:
        save_onnx({"w1": w1.astype(np.float64)}, "unused.onnx", original=mlp)
    assert info.value.name == "w1" and info.value.expected == (np.dtype(np.float32), (4, 16))
    with pytest.raises(InitializerMismatchError, match=r"float32\[16, 4\]"):
        save_onnx({"w1": w1.T.copy()}, "unused.onnx", original=mlp)
    with pytest.raises(UnknownInitializerError, match="no initializer 'w9'") as unknown:
        save_onnx({"w9": w1}, "unused.onnx", original=mlp)
    assert unknown.value.name == "w9"
    with pytest.raises(ExportError, match="needs original="):
        save_onnx({"w1": w1}, "unused.onnx")
    assert not os.path.exists("unused.onnx")


def _encoder_trainer(seed: int = 3) -> tuple[Trainer, dict[str, np.ndarray]]:
    model = add_classifier_head(tiny_encoder(vocab=64), 2, seed=seed)  # embedding: 1,536 bytes
    trainer = Trainer(model, "softmax_cross_entropy", optimizer=optax.adam(0.05))
    rng = np.random.default_rng(0)
    ids = rng.integers(1, 64, (16, 5))
    batch = {"input_ids": ids, "attention_mask": np.ones_like(ids), "labels": (ids[:, 0] > 30).astype(np.int64)}
    return trainer, batch


def test_external_data_is_written_beside_the_model_and_replaced_atomically(tmp_path):
    trainer, batch = _encoder_trainer()
    feeds = {k: batch[k] for k in ("input_ids", "attention_mask")}
    trainer.train_step(batch)
    path = tmp_path / "big.onnx"
    trainer.save_onnx(path, external_data=True)
    data_files = [p.name for p in tmp_path.iterdir() if p.suffix == ".data"]
    assert len(data_files) == 1 and data_files[0].startswith("big.onnx.")
    header = onnx.load(str(path), load_external_data=False)
    external = [t.name for t in header.graph.initializer if t.data_location == onnx.TensorProto.EXTERNAL]
    assert external == ["embedding"]
    np.testing.assert_allclose(ort_run(path, feeds)[0], trainer.predict(feeds)[0], rtol=0, atol=ORT_ATOL)
    trainer.train_step(batch)
    trainer.save_onnx(path, external_data=True)  # a new side file; the old one goes away
    again = [p.name for p in tmp_path.iterdir() if p.suffix == ".data"]
    assert len(again) == 1 and again != data_files
    np.testing.assert_allclose(ort_run(path, feeds)[0], trainer.predict(feeds)[0], rtol=0, atol=ORT_ATOL)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["big.onnx", *again])


def test_a_model_with_a_new_head_round_trips(tmp_path):
    trainer, batch = _encoder_trainer()
    initial = trainer.trainable_params
    for _ in range(5):
        trainer.train_step(batch)
    path = trainer.save_onnx(tmp_path / "head.onnx")
    feeds = {k: batch[k] for k in ("input_ids", "attention_mask")}
    np.testing.assert_allclose(ort_run(path, feeds)[0], trainer.predict(feeds)[0], rtol=0, atol=ORT_ATOL)
    written = load_initializers(path)
    assert set(written) == {"embedding", "head.weight", "head.bias"}
    assert not np.array_equal(written["head.weight"], initial["head.weight"])


def test_a_model_written_with_external_data_trains_again(tmp_path, monkeypatch):
    trainer, batch = _encoder_trainer()
    trainer.train_step(batch)
    path = trainer.save_onnx(tmp_path / "first.onnx", external_data=True)
    monkeypatch.chdir("/")  # external data is found from the model's folder, not the cwd
    compiled = onnx_stablehlo.compile(onnx_stablehlo.load(path, check=False))
    again = Trainer(compiled, "softmax_cross_entropy", trainable="head.*")
    assert np.array_equal(again.trainable_params["head.weight"], trainer.trainable_params["head.weight"])
    assert np.array_equal(again.params["embedding"], trainer.params["embedding"])
    assert np.isfinite(again.train_step(batch))
