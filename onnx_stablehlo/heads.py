"""Extending an ONNX model with a new head: pooling and a linear classifier with seeded weights.

>>> import onnx_stablehlo.heads as heads                                       # doctest: +SKIP
>>> model = heads.add_classifier_head("minilm.onnx", num_classes=2, seed=0)    # doctest: +SKIP
>>> [o.name for o in model.graph.output]                                       # doctest: +SKIP
['logits']

The head is built as a small ONNX graph at the model's opset and joined to the model with
``onnx.compose.merge_graphs`` (:func:`onnx_stablehlo._compose.attach`). Its weights are new
initializers ``<prefix>.weight`` (``[hidden, classes]``, the transpose of torch's
``Linear.weight``) and ``<prefix>.bias`` (``[classes]``), drawn like torch's ``nn.Linear``
default: uniform in ``[-1/sqrt(hidden), 1/sqrt(hidden)]``, from ``numpy.random.default_rng(seed)``.

Poolings of a ``[batch, sequence, hidden]`` value:

* ``"mean"``: the attention-mask mean over the sequence, ``sum(h * m) / max(sum(m), 1e-9)``
  (sentence-transformers' mean pooling);
* ``"cls"``: the first token, ``h[:, 0, :]``;
* ``"none"``: the value is already ``[batch, hidden]``.
"""

from __future__ import annotations

import os

import numpy as np
import onnx
import onnx.helper
import onnx_ir

from onnx_stablehlo.frontend.graph_edit import FragmentBuilder, GraphEditError, attach, default_opset, to_proto, value_types

__all__ = ["POOLINGS", "add_classifier_head", "GraphEditError"]

POOLINGS = ("mean", "cls", "none")

_MASK_EPSILON = 1e-9
"""Smallest token count in mean pooling (an all-padding row gives zeros, not NaN)."""

ModelLike = str | os.PathLike | bytes | onnx.ModelProto | onnx_ir.Model


def add_classifier_head(
    model: ModelLike,
    num_classes: int,
    *,
    pooling: str = "mean",
    hidden: str | None = None,
    attention_mask: str | None = "attention_mask",
    hidden_size: int | None = None,
    seed: int = 0,
    prefix: str = "head",
    output_name: str = "logits",
    keep_outputs: bool = False,
) -> onnx.ModelProto:
    """Appends pooling + ``Linear(hidden, num_classes)`` to ``model``.

    Args:
        model: path, bytes, ``onnx.ModelProto`` or ``onnx_ir.Model`` (not changed).
        num_classes: the classifier's width (use 1 with a binary cross-entropy loss).
        pooling: ``"mean"``, ``"cls"`` or ``"none"`` (see the module docstring).
        hidden: the value to pool: a graph output or any intermediate value; default the first
            graph output.
        attention_mask: the graph input holding the mask for ``"mean"`` pooling (int or bool,
            ``[batch, sequence]``, 1 for real tokens); ``None`` averages every token.
        hidden_size: the width of ``hidden``; default its last dim, from the declared or
            inferred shape.
        seed: seed of the new weights.
        prefix: the new weights are ``<prefix>.weight`` and ``<prefix>.bias``; new node names
            start with ``<prefix>/``.
        output_name: the name of the new graph output (float ``[batch, num_classes]``).
        keep_outputs: keep the model's graph outputs after the new one.

    Returns:
        A new ``onnx.ModelProto``.

    Raises:
        GraphEditError: unknown value or input, unknown pooling, a hidden size that cannot be
            told, a non-float ``hidden``, clashing names; ``num_classes`` or ``hidden_size``
            that is not an integer of at least 1.
    """
    if not isinstance(pooling, str) or pooling not in POOLINGS:
        raise GraphEditError(f"unknown pooling {pooling!r}; choose one of {', '.join(POOLINGS)}")
    _check_size("num_classes", num_classes)
    if hidden_size is not None:
        _check_size("hidden_size", hidden_size)
    proto = to_proto(model)
    graph = proto.graph
    hidden = hidden or graph.output[0].name
    types = value_types(proto)
    hidden_type = types.get(hidden)
    if hidden_type is None:
        raise GraphEditError(f"the model has no value {hidden!r} with a known type (pass hidden=<a graph output>)")
    elem_type = hidden_type.tensor_type.elem_type
    if elem_type not in (onnx.TensorProto.FLOAT, onnx.TensorProto.FLOAT16, onnx.TensorProto.DOUBLE, onnx.TensorProto.BFLOAT16):
        raise GraphEditError(f"{hidden!r} has element type {onnx.TensorProto.DataType.Name(elem_type)}; a float is needed")
    rank = len(hidden_type.tensor_type.shape.dim) if hidden_type.tensor_type.HasField("shape") else None
    want_rank = 2 if pooling == "none" else 3
    if rank is not None and rank != want_rank:
        raise GraphEditError(f"{pooling!r} pooling needs a rank-{want_rank} {hidden!r}; it has rank {rank}")
    if hidden_size is None:
        hidden_size = _last_dim(hidden_type)
        if hidden_size is None:
            raise GraphEditError(f"the last dim of {hidden!r} is not known; pass hidden_size=")
    dtype = onnx.helper.tensor_dtype_to_np_dtype(elem_type)

    builder = FragmentBuilder(default_opset(proto), prefix)
    frag_hidden = builder.input(f"{prefix}/hidden", elem_type, [None] * want_rank)
    connections = {frag_hidden: hidden}
    if pooling == "mean":
        pooled = _mean_pool(builder, proto, frag_hidden, attention_mask, elem_type, prefix, connections)
    elif pooling == "cls":
        first = builder.constant(np.array(0, dtype=np.int64), "first")
        pooled = builder.node("Gather", [frag_hidden, first], axis=1)
    else:
        pooled = frag_hidden

    rng = np.random.default_rng(seed)
    bound = 1.0 / np.sqrt(hidden_size)
    weight = rng.uniform(-bound, bound, size=(hidden_size, num_classes)).astype(dtype)
    bias = rng.uniform(-bound, bound, size=(num_classes,)).astype(dtype)
    w = builder.initializer(f"{prefix}.weight", weight)
    b = builder.initializer(f"{prefix}.bias", bias)
    logits = builder.node("Add", [builder.node("MatMul", [pooled, w]), b])
    builder.output(output_name, logits, elem_type, [None, num_classes])

    outputs = [output_name] + ([o.name for o in graph.output] if keep_outputs else [])
    return attach(proto, builder.model(proto.ir_version), connections, outputs)


def _check_size(what: str, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise GraphEditError(f"{what} must be an integer of at least 1, got {type(value).__name__} {value!r}")


def _mean_pool(
    builder: FragmentBuilder,
    proto: onnx.ModelProto,
    hidden: str,
    attention_mask: str | None,
    elem_type: int,
    prefix: str,
    connections: dict[str, str],
) -> str:
    if attention_mask is None:
        return builder.reduce_mean(hidden, [1], keepdims=False)
    inputs = {i.name: i for i in proto.graph.input}
    if attention_mask not in inputs:
        raise GraphEditError(
            f"the model has no input {attention_mask!r} for mean pooling; its inputs are "
            f"{', '.join(repr(n) for n in inputs)} (attention_mask=None, or --attention-mask none on the "
            "command line, averages every token; pooling='cls' takes the first token)"
        )
    mask_type = inputs[attention_mask].type.tensor_type.elem_type
    frag_mask = builder.input(f"{prefix}/attention_mask", mask_type, [None, None])
    connections[frag_mask] = attention_mask
    mask = builder.node("Cast", [frag_mask], to=elem_type)
    summed = builder.reduce_sum(builder.node("Mul", [hidden, builder.unsqueeze(mask, [2])]), [1], keepdims=False)
    dtype = onnx.helper.tensor_dtype_to_np_dtype(elem_type)
    count = builder.reduce_sum(mask, [1], keepdims=True)
    count = builder.node("Max", [count, builder.constant(np.array(_MASK_EPSILON, dtype=dtype), "eps")])
    return builder.node("Div", [summed, count])


def _last_dim(value_type: onnx.TypeProto) -> int | None:
    tensor = value_type.tensor_type
    if not tensor.HasField("shape") or not tensor.shape.dim:
        return None
    last = tensor.shape.dim[-1]
    return int(last.dim_value) if last.HasField("dim_value") and last.dim_value > 0 else None
