"""Losses appended to an ONNX model as ONNX nodes, so that model and loss lower to one module.

>>> from onnx_stablehlo.losses import add_loss                              # doctest: +SKIP
>>> with_loss = add_loss(model, "softmax_cross_entropy", prediction="logits")  # doctest: +SKIP
>>> [i.name for i in with_loss.model.graph.input][-1], with_loss.loss_output   # doctest: +SKIP
('labels', 'loss')

Built-in losses (``prediction`` is the model output the loss reads, ``labels`` a new graph input;
every loss is the mean over the batch, a rank-0 float):

================================  ==========================  ===================================
name                              prediction / labels         loss
================================  ==========================  ===================================
``softmax_cross_entropy``         logits ``[N, C]`` /         ``mean(-log_softmax(logits)[i, y_i])``
                                  int64 ``[N]``               (ONNX ``SoftmaxCrossEntropyLoss``)
``binary_cross_entropy``          logits / float, same shape  ``mean(max(x, 0) - x y + log(1 + e^-|x|))``
                                                              (from logits, numerically stable)
``mse``                           any / float, same shape     ``mean((p - y)^2)``
``cosine``                        ``[..., D]`` / same shape   ``mean(1 - cos(p, y))`` over the last
                                                              axis, norms clamped at 1e-8
================================  ==========================  ===================================

A user loss is an ONNX model (or graph, or path) whose inputs are named after outputs of the
model (they are wired to them) plus any new inputs (labels), and whose first output is the loss
(one float element). It is converted to the model's opset when the two differ.

Accuracy (for evaluation) is defined for the two classification losses: ``argmax`` over the
class axis (1) equals the label, or ``(logit > 0) == (label > 0.5)``.
"""

from __future__ import annotations

import copy
import dataclasses
import os
from collections.abc import Callable, Mapping

import numpy as np
import onnx
import onnx.compose
import onnx.helper
import onnx.version_converter
import onnx_ir

from onnx_stablehlo.errors import FeedError, ShapeError
from onnx_stablehlo.frontend.graph_edit import FragmentBuilder, GraphEditError, attach, default_opset, to_proto, value_types

__all__ = [
    "LOSSES", "LossSpec", "ModelWithLoss", "add_loss", "accuracy_of", "GraphEditError", "label_classes",
    "check_batch_rows_and_labels",
]

ModelLike = str | os.PathLike | bytes | onnx.ModelProto | onnx_ir.Model
Accuracy = Callable[[np.ndarray, np.ndarray], np.ndarray]
"""``(prediction, labels) -> bool per example``."""

_COSINE_EPSILON = 1e-8


def _softmax_cross_entropy(b: FragmentBuilder, prediction: str, labels: str) -> str:
    if b.opset < 12:
        raise GraphEditError(f"softmax_cross_entropy needs opset 12 or later (SoftmaxCrossEntropyLoss); the model has {b.opset}")
    return b.node("SoftmaxCrossEntropyLoss", [prediction, labels], reduction="mean")


def _binary_cross_entropy(b: FragmentBuilder, prediction: str, labels: str) -> str:
    positive = b.node("Relu", [prediction])
    product = b.node("Mul", [prediction, labels])
    # log(1 + exp(-|x|)): exp of a non-positive value never overflows
    exp = b.node("Exp", [b.node("Neg", [b.node("Abs", [prediction])])])
    softplus = b.node("Log", [b.node("Add", [exp, b.node("CastLike", [b.constant(np.array(1.0, np.float32), "one"), prediction])])])
    return b.reduce_mean_all(b.node("Add", [b.node("Sub", [positive, product]), softplus]))


def _mse(b: FragmentBuilder, prediction: str, labels: str) -> str:
    difference = b.node("Sub", [prediction, labels])
    return b.reduce_mean_all(b.node("Mul", [difference, difference]))


def _cosine(b: FragmentBuilder, prediction: str, labels: str) -> str:
    dot = b.reduce_sum(b.node("Mul", [prediction, labels]), [-1], keepdims=False)
    norm_p = b.node("Sqrt", [b.reduce_sum(b.node("Mul", [prediction, prediction]), [-1], keepdims=False)])
    norm_y = b.node("Sqrt", [b.reduce_sum(b.node("Mul", [labels, labels]), [-1], keepdims=False)])
    eps = b.node("CastLike", [b.constant(np.array(_COSINE_EPSILON, np.float32), "eps"), prediction])
    one = b.node("CastLike", [b.constant(np.array(1.0, np.float32), "one"), prediction])
    cosine = b.node("Div", [dot, b.node("Max", [b.node("Mul", [norm_p, norm_y]), eps])])
    return b.reduce_mean_all(b.node("Sub", [one, cosine]))


def _argmax_accuracy(prediction: np.ndarray, labels: np.ndarray) -> np.ndarray:
    return np.argmax(prediction, axis=1) == labels


def _sign_accuracy(prediction: np.ndarray, labels: np.ndarray) -> np.ndarray:
    return (prediction > 0) == (labels > 0.5)


@dataclasses.dataclass(frozen=True)
class LossSpec:
    """A built-in loss."""

    name: str
    build: Callable[[FragmentBuilder, str, str], str]
    """``(builder, prediction, labels) -> loss value`` (a rank-0 float)."""
    integer_labels: bool
    """Labels are int64 class indices ``[N]`` (else floats shaped like the prediction)."""
    accuracy: Accuracy | None
    """Per-example correctness, for classification losses."""


LOSSES: dict[str, LossSpec] = {
    spec.name: spec
    for spec in (
        LossSpec("softmax_cross_entropy", _softmax_cross_entropy, True, _argmax_accuracy),
        LossSpec("binary_cross_entropy", _binary_cross_entropy, False, _sign_accuracy),
        LossSpec("mse", _mse, False, None),
        LossSpec("cosine", _cosine, False, None),
    )
}


@dataclasses.dataclass
class ModelWithLoss:
    """A model extended with a loss.

    Attributes:
        model: the extended model; its outputs are ``loss_output`` then the original outputs.
        loss_output: name of the scalar loss output.
        prediction: the model output the loss reads (``None`` for a user loss).
        label_inputs: the graph inputs the loss added (labels).
        accuracy: per-example correctness of ``(prediction, labels)``, or ``None``.
        loss_name: the built-in loss name, or ``"custom"``.
    """

    model: onnx.ModelProto
    loss_output: str
    prediction: str | None
    label_inputs: list[str]
    accuracy: Accuracy | None
    loss_name: str


def accuracy_of(loss: str) -> Accuracy | None:
    """The accuracy function of a built-in loss (``None`` for regression losses)."""
    spec = LOSSES.get(loss)
    return spec.accuracy if spec is not None else None


def add_loss(
    model: ModelLike,
    loss: str | onnx.ModelProto | onnx.GraphProto | os.PathLike = "softmax_cross_entropy",
    *,
    prediction: str | None = None,
    labels: str = "labels",
    output_name: str = "loss",
) -> ModelWithLoss:
    """Appends a loss to ``model`` (which is not changed).

    Args:
        model: path, bytes, ``onnx.ModelProto`` or ``onnx_ir.Model``.
        loss: a built-in name (see :data:`LOSSES`) or a user loss: ``onnx.ModelProto``,
            ``onnx.GraphProto`` or a path (see the module docstring).
        prediction: the model output a built-in loss reads; default the first output.
        labels: the name of the new labels input of a built-in loss.
        output_name: the name of a built-in loss's output.

    Returns:
        :class:`ModelWithLoss`; its model's outputs are the loss then the model's outputs.

    Raises:
        GraphEditError: unknown loss or output, clashing names, a user loss without outputs or
            whose opset cannot be converted.
    """
    proto = to_proto(model)
    graph_outputs = [o.name for o in proto.graph.output]
    if isinstance(loss, str) and not os.path.exists(loss):
        spec = LOSSES.get(loss)
        if spec is None:
            raise GraphEditError(f"unknown loss {loss!r}; built-in losses: {', '.join(LOSSES)}")
        prediction = prediction or graph_outputs[0]
        if prediction not in graph_outputs:
            raise GraphEditError(f"the model has no output {prediction!r}; its outputs are {', '.join(map(repr, graph_outputs))}")
        fragment = _builtin_fragment(proto, spec, prediction, labels, output_name)
        connections = {"loss/prediction": prediction}
        merged = attach(proto, fragment, connections, [output_name, *graph_outputs])
        return ModelWithLoss(merged, output_name, prediction, [labels], spec.accuracy, spec.name)

    fragment = _user_fragment(loss, proto)
    if not fragment.graph.output:
        raise GraphEditError("the loss graph has no outputs")
    loss_output = fragment.graph.output[0].name
    connections = {i.name: i.name for i in fragment.graph.input if i.name in graph_outputs}
    if not connections:
        raise GraphEditError(
            f"no input of the loss graph is named after a model output ({', '.join(map(repr, graph_outputs))})"
        )
    new_inputs = [i.name for i in fragment.graph.input if i.name not in connections]
    merged = attach(proto, fragment, connections, [loss_output, *graph_outputs])
    return ModelWithLoss(merged, loss_output, None, new_inputs, None, "custom")


def _builtin_fragment(
    proto: onnx.ModelProto, spec: LossSpec, prediction: str, labels: str, output_name: str
) -> onnx.ModelProto:
    types = value_types(proto)
    tensor = types[prediction].tensor_type
    elem_type = tensor.elem_type
    rank = len(tensor.shape.dim) if tensor.HasField("shape") else None
    shape = [None] * rank if rank is not None else None
    builder = FragmentBuilder(default_opset(proto), "loss")
    pred = builder.input("loss/prediction", elem_type, shape)
    if spec.integer_labels:
        label = builder.input(labels, onnx.TensorProto.INT64, [None] if rank is None else [None] * (rank - 1))
    else:
        label = builder.input(labels, elem_type, shape)
    builder.output(output_name, spec.build(builder, pred, label), elem_type, [])
    return builder.model(proto.ir_version)


def _user_fragment(loss: onnx.ModelProto | onnx.GraphProto | os.PathLike | str, proto: onnx.ModelProto) -> onnx.ModelProto:
    opset = default_opset(proto)
    if isinstance(loss, onnx.GraphProto):
        fragment = onnx.helper.make_model(
            copy.deepcopy(loss), opset_imports=[onnx.helper.make_opsetid("", opset)], ir_version=proto.ir_version
        )
    else:
        fragment = to_proto(loss)
    fragment.ir_version = proto.ir_version
    if default_opset(fragment) != opset:
        try:
            fragment = onnx.version_converter.convert_version(fragment, opset)
        except Exception as exc:
            raise GraphEditError(
                f"the loss graph uses ai.onnx opset {default_opset(fragment)} and cannot be converted to "
                f"the model's opset {opset}: {exc}"
            ) from exc
        fragment.ir_version = proto.ir_version
    # Internal names get a prefix; inputs (model outputs, labels) and outputs keep theirs.
    return onnx.compose.add_prefix(
        fragment, "loss/", rename_inputs=False, rename_outputs=False, rename_functions=False
    )



# Losses whose labels are class indices into the prediction's last axis.
_CLASS_INDEX_LOSSES = ("softmax_cross_entropy",)


def label_classes(with_loss: ModelWithLoss, model: onnx.ModelProto) -> dict[str, int | None]:
    """The class-index label inputs of ``with_loss`` -> how many classes its prediction has in
    ``model`` (its last declared dim; None when not declared); empty for other losses."""
    if with_loss.loss_name not in _CLASS_INDEX_LOSSES:
        return {}
    classes = None
    for info in list(model.graph.output) + list(model.graph.value_info):
        if info.name == with_loss.prediction and info.type.tensor_type.HasField("shape"):
            dims = info.type.tensor_type.shape.dim
            classes = int(dims[-1].dim_value) if dims and dims[-1].HasField("dim_value") else None
    return {name: classes for name in with_loss.label_inputs}


def check_batch_rows_and_labels(arrays: Mapping[str, np.ndarray], classes: Mapping[str, int | None]) -> None:
    """Checks that a training batch's arrays have one row count and that class-index labels
    lie in ``[0, classes)`` (either mistake gave a finite, wrong loss).

    Raises:
        ShapeError: two arrays have different numbers of rows.
        FeedError: a label is negative or not below the prediction's number of classes.
    """
    rows = {name: np.shape(a)[0] for name, a in arrays.items() if np.ndim(a) > 0}
    if len(set(rows.values())) > 1:
        raise ShapeError(
            "the batch's arrays have different numbers of rows: " + ", ".join(f"{n!r} {c}" for n, c in rows.items())
        )
    for name, count in classes.items():
        labels = arrays[name]
        low, high = (int(labels.min()), int(labels.max())) if labels.size else (0, 0)
        if low < 0 or (count is not None and high >= count):
            raise FeedError(
                f"{name!r} holds class {low if low < 0 else high}, outside [0, "
                f"{count if count is not None else 'classes'}) of the prediction",
                name,
            )
