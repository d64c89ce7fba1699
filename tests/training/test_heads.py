"""Appending a classifier head: pooling + linear, checked against numpy in onnxruntime and ours."""

from __future__ import annotations

import numpy as np
import onnx
import pytest

import onnx_stablehlo
from onnx_stablehlo.heads import GraphEditError, add_classifier_head
from tests.training.models import mlp_classifier, ort_run, tiny_encoder

RTOL = 1e-5
ATOL = 1e-6


def _feeds() -> dict[str, np.ndarray]:
    ids = np.array([[1, 5, 7, 2], [3, 4, 0, 0], [0, 0, 0, 0]], dtype=np.int64)
    return {"input_ids": ids, "attention_mask": (ids != 0).astype(np.int64)}


def _head_weights(model: onnx.ModelProto) -> tuple[np.ndarray, np.ndarray]:
    values = {t.name: onnx.numpy_helper.to_array(t) for t in model.graph.initializer}
    return values["head.weight"], values["head.bias"]


@pytest.mark.parametrize("opset", [13, 17, 18], ids=["opset13", "opset17", "opset18"])
@pytest.mark.parametrize("pooling", ["mean", "cls"])
def test_head_matches_numpy_in_onnxruntime_and_ours(pooling, opset):
    encoder = tiny_encoder(opset=opset)
    model = add_classifier_head(encoder, 3, pooling=pooling, seed=7)
    onnx.checker.check_model(model, full_check=True)
    assert [o.name for o in model.graph.output] == ["logits"]
    assert [i.name for i in model.graph.input] == ["input_ids", "attention_mask"]
    feeds = _feeds()
    (hidden,) = ort_run(encoder, feeds)
    mask = feeds["attention_mask"].astype(np.float32)[:, :, None]
    if pooling == "mean":
        pooled = (hidden * mask).sum(1) / np.maximum(mask.sum(1), 1e-9)
    else:
        pooled = hidden[:, 0, :]
    weight, bias = _head_weights(model)
    expected = pooled @ weight + bias
    (logits,) = ort_run(model, feeds)
    np.testing.assert_allclose(logits, expected, rtol=RTOL, atol=ATOL)
    (ours,) = onnx_stablehlo.compile(model).run(feeds)
    np.testing.assert_allclose(ours, expected, rtol=RTOL, atol=ATOL)


def test_all_padding_row_gives_the_bias_not_nan():
    model = add_classifier_head(tiny_encoder(), 2)
    (logits,) = ort_run(model, _feeds())
    np.testing.assert_allclose(logits[2], _head_weights(model)[1])


def test_weights_are_seeded_like_torch_linear():
    a = _head_weights(add_classifier_head(tiny_encoder(), 2, seed=1))
    b = _head_weights(add_classifier_head(tiny_encoder(), 2, seed=1))
    c = _head_weights(add_classifier_head(tiny_encoder(), 2, seed=2))
    assert np.array_equal(a[0], b[0]) and np.array_equal(a[1], b[1])
    assert not np.array_equal(a[0], c[0])
    assert a[0].shape == (6, 2) and a[0].dtype == np.float32
    assert np.abs(a[0]).max() <= 1 / np.sqrt(6)


def test_pooling_none_on_a_rank2_output_and_keep_outputs():
    model = add_classifier_head(mlp_classifier(), 2, pooling="none", prefix="cls", output_name="scores", keep_outputs=True)
    assert [o.name for o in model.graph.output] == ["scores", "logits"]
    assert {"cls.weight", "cls.bias"} <= {t.name for t in model.graph.initializer}
    x = np.random.default_rng(0).standard_normal((5, 4)).astype(np.float32)
    scores, logits = ort_run(model, {"x": x})
    values = {t.name: onnx.numpy_helper.to_array(t) for t in model.graph.initializer}
    np.testing.assert_allclose(scores, logits @ values["cls.weight"] + values["cls.bias"], rtol=RTOL, atol=ATOL)


def test_head_on_an_intermediate_value():
    model = add_classifier_head(mlp_classifier(), 2, pooling="none", hidden="h", hidden_size=16, output_name="new_logits")
    assert [o.name for o in model.graph.output] == ["new_logits"]
    (logits,) = ort_run(model, {"x": np.ones((2, 4), np.float32)})
    assert logits.shape == (2, 2)


def test_original_model_is_not_changed():
    encoder = tiny_encoder()
    before = encoder.SerializeToString()
    add_classifier_head(encoder, 2)
    assert encoder.SerializeToString() == before


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"pooling": "max"}, "unknown pooling 'max'"),
        ({"attention_mask": "mask"}, "no input 'mask' for mean pooling"),
        ({"hidden": "nowhere"}, "no value 'nowhere'"),
        ({"pooling": "none"}, "'none' pooling needs a rank-2 'hidden'"),
        ({"prefix": "embedding", "output_name": "embedding"}, "names used by both"),
    ],
    ids=["pooling", "mask", "hidden", "rank", "clash"],
)
def test_bad_head_requests_are_rejected(kwargs, message):
    with pytest.raises(GraphEditError, match=message):
        add_classifier_head(tiny_encoder(), 2, **kwargs)
