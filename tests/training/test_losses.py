"""Losses appended as ONNX nodes: values against numpy, gradients against finite differences."""

from __future__ import annotations

import numpy as np
import onnx
import onnx.parser
import optax
import pytest

import onnx_stablehlo
from onnx_stablehlo.losses import LOSSES, GraphEditError, add_loss
from onnx_stablehlo.runtime.training import Trainer
from tests.training.models import CLASSES, classification_data, mlp_classifier, ort_run

LOSS_RTOL = 1e-5
GRAD_RTOL = 2e-2
"""Central differences in float32 with step FD_STEP: about 1e-3 relative error expected."""
FD_STEP = 1e-2


def _labels(loss: str, rng: np.random.Generator, n: int) -> np.ndarray:
    if loss == "softmax_cross_entropy":
        return rng.integers(0, CLASSES, n).astype(np.int64)
    if loss == "binary_cross_entropy":
        return rng.integers(0, 2, (n, CLASSES)).astype(np.float32)
    return rng.standard_normal((n, CLASSES)).astype(np.float32)


def _numpy_loss(loss: str, logits: np.ndarray, labels: np.ndarray) -> float:
    x = logits.astype(np.float64)
    if loss == "softmax_cross_entropy":
        shifted = x - x.max(axis=1, keepdims=True)
        log_softmax = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
        return float(-log_softmax[np.arange(len(labels)), labels].mean())
    if loss == "binary_cross_entropy":
        p = 1 / (1 + np.exp(-x))
        return float(-(labels * np.log(p) + (1 - labels) * np.log(1 - p)).mean())
    if loss == "mse":
        return float(((x - labels) ** 2).mean())
    dot = (x * labels).sum(-1)
    cosine = dot / (np.linalg.norm(x, axis=-1) * np.linalg.norm(labels, axis=-1))
    return float((1 - cosine).mean())


@pytest.mark.parametrize("loss", list(LOSSES))
def test_builtin_loss_value_matches_numpy_in_onnxruntime_and_ours(loss, rng):
    model = mlp_classifier()
    with_loss = add_loss(model, loss)
    onnx.checker.check_model(with_loss.model, full_check=True)
    assert [o.name for o in with_loss.model.graph.output] == ["loss", "logits"]
    assert [i.name for i in with_loss.model.graph.input] == ["x", "labels"]
    feeds = {"x": rng.standard_normal((6, 4)).astype(np.float32), "labels": _labels(loss, rng, 6)}
    ort_loss, ort_logits = ort_run(with_loss.model, feeds)
    expected = _numpy_loss(loss, ort_logits, feeds["labels"])
    np.testing.assert_allclose(ort_loss, expected, rtol=LOSS_RTOL)
    ours = onnx_stablehlo.compile(with_loss.model).run(feeds)
    assert ours[0].shape == ()
    np.testing.assert_allclose(ours[0], expected, rtol=LOSS_RTOL)


@pytest.mark.parametrize("loss", list(LOSSES))
def test_builtin_loss_gradient_matches_finite_differences(loss, rng):
    """One SGD step with learning rate 1 moves b2 by exactly -dL/db2."""
    model = mlp_classifier()
    feeds = {"x": rng.standard_normal((8, 4)).astype(np.float32), "labels": _labels(loss, rng, 8)}
    trainer = Trainer(model, loss, trainable="b2", optimizer=optax.sgd(1.0))
    before = trainer.trainable_params["b2"].copy()
    trainer.train_step(feeds)
    grad = before - trainer.trainable_params["b2"]

    with_loss = add_loss(model, loss).model
    expected = np.zeros(CLASSES)
    index = [t.name for t in with_loss.graph.initializer].index("b2")
    for k in range(CLASSES):
        values = []
        for sign in (1, -1):
            shifted = before.copy()
            shifted[k] += sign * FD_STEP
            probe = onnx.ModelProto()
            probe.CopyFrom(with_loss)
            probe.graph.initializer[index].CopyFrom(onnx.numpy_helper.from_array(shifted, "b2"))
            values.append(float(ort_run(probe, feeds)[0]))
        expected[k] = (values[0] - values[1]) / (2 * FD_STEP)
    np.testing.assert_allclose(grad, expected, rtol=GRAD_RTOL, atol=1e-4)


USER_LOSS = """
<ir_version: 9, opset_import: ["" : 17]>
l1 (float[N, 3] logits, float[N, 3] target) => (float total) {
  diff = Sub(logits, target)
  absolute = Abs(diff)
  total = ReduceMean <keepdims = 0> (absolute)
}
"""


def test_user_loss_graph_is_wired_to_model_outputs_and_adds_its_inputs(rng):
    user = onnx.parser.parse_model(USER_LOSS)
    with_loss = add_loss(mlp_classifier(), user)
    assert with_loss.loss_output == "total"
    assert with_loss.label_inputs == ["target"]
    assert [o.name for o in with_loss.model.graph.output] == ["total", "logits"]
    assert [n.output[0] for n in with_loss.model.graph.node if n.op_type == "Abs"] == ["loss/absolute"]
    feeds = {"x": rng.standard_normal((5, 4)).astype(np.float32), "target": rng.standard_normal((5, 3)).astype(np.float32)}
    total, logits = ort_run(with_loss.model, feeds)
    np.testing.assert_allclose(total, np.abs(logits - feeds["target"]).mean(), rtol=LOSS_RTOL)


def test_user_loss_graph_at_another_opset_is_converted(rng):
    user = onnx.parser.parse_model(USER_LOSS.replace('"" : 17', '"" : 15'))
    with_loss = add_loss(mlp_classifier(), user)
    opsets = {o.domain: o.version for o in with_loss.model.opset_import}
    assert opsets[""] == 17


def test_unknown_loss_is_rejected_with_the_builtin_names():
    with pytest.raises(GraphEditError, match="unknown loss 'hinge'.*softmax_cross_entropy"):
        add_loss(mlp_classifier(), "hinge")


def test_unknown_prediction_output_is_rejected():
    with pytest.raises(GraphEditError, match="no output 'scores'.*'logits'"):
        add_loss(mlp_classifier(), "mse", prediction="scores")


def test_labels_name_clashing_with_a_model_value_is_rejected():
    with pytest.raises(GraphEditError, match="names used by both.*'x'"):
        add_loss(mlp_classifier(), "mse", labels="x")


def test_user_loss_without_model_output_inputs_is_rejected():
    user = onnx.parser.parse_model(USER_LOSS.replace("logits", "scores"))
    with pytest.raises(GraphEditError, match="no input of the loss graph is named after a model output"):
        add_loss(mlp_classifier(), user)


def test_add_loss_leaves_the_model_unchanged():
    model = mlp_classifier()
    before = model.SerializeToString()
    add_loss(model, "softmax_cross_entropy")
    assert model.SerializeToString() == before


def test_training_data_fixture_is_seeded():
    a, b = classification_data(seed=3), classification_data(seed=3)
    assert np.array_equal(a["x"], b["x"]) and np.array_equal(a["labels"], b["labels"])
