"""Compile-time evaluation of nodes: on constants (``onnx.reference``) and on symbolic dims.

A node whose inputs are all known at compile time (Constant nodes, small non-float
initializers, results of earlier folding) and small is evaluated with ``onnx.reference`` (the
ONNX project's reference implementation, so folding follows the spec), and its outputs become
constants. A shape computation over symbolic dims (Shape -> Gather -> Concat) is evaluated by
the node's symbolic evaluator from the registry (``symbolic_eval.py``). Either way a node that
cannot be evaluated is left to its rule.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import threading
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import onnx
import onnx_ir

from onnx_stablehlo.frontend import dtypes, symbolic_eval
from onnx_stablehlo.frontend.context import LoweredValue, OnnxNode
from onnx_stablehlo.frontend.dtypes import DataType
from onnx_stablehlo.frontend.registry import LoweringRegistry
from onnx_stablehlo.frontend.shapes import is_static

__all__ = ["SymbolicResult", "fold_node", "lazy_value", "constant_getter", "SMALL_INITIALIZER_ELEMENTS"]

_log = logging.getLogger(__name__)

# Ops whose value changes from run to run: never evaluated at compile time.
_NOT_FOLDABLE = frozenset(
    {
        "RandomNormal",
        "RandomNormalLike",
        "RandomUniform",
        "RandomUniformLike",
        "Multinomial",
        "Bernoulli",
        "Dropout",
        # Its rule computes constant ranges with the spec's element count (an infinite delta
        # gives none, as in onnxruntime; onnx.reference's np.arange gives one) and checks it
        # against the resource limits before allocating.
        "Range",
    }
)

SMALL_INITIALIZER_ELEMENTS = 1024
"""Non-float initializers up to this many elements are compile-time constants (shape vectors,
axes, indices); larger ones and every float initializer are weights."""


@dataclasses.dataclass
class SymbolicResult:
    """A folded shape computation: an object array of ints and SymbolicDims, and its dtype."""

    array: np.ndarray
    dtype: DataType


def lazy_value(tensor: onnx_ir.TensorProtocol) -> Callable[[], np.ndarray]:
    """A getter reading ``tensor`` into numpy on first call (weights stay on disk until used)."""
    cache: list[np.ndarray] = []

    def get() -> np.ndarray:
        if not cache:
            cache.append(np.asarray(tensor.numpy()))
        return cache[0]

    return get


def constant_getter(array: np.ndarray) -> Callable[[], np.ndarray]:
    """A getter returning ``array``."""
    return lambda: array


def fold_node(
    node: onnx_ir.Node,
    onnx_node: OnnxNode,
    inputs: Sequence[LoweredValue | None],
    registry: LoweringRegistry,
    *,
    weights_are_args: bool,
    max_elements: int,
) -> list | None:
    """The node's outputs computed at compile time, or ``None`` when its rule must lower it.

    Args:
        node: the node.
        onnx_node: its view for rules.
        inputs: its lowered inputs (``None`` for omitted ones).
        registry: where the node's symbolic evaluator is resolved.
        weights_are_args: whether weights are ``@main`` arguments (then never folded).
        max_elements: inputs or outputs with more elements in all are not folded.

    Returns:
        One entry per output: a :class:`SymbolicResult` or a numpy array.
    """
    symbolic = _fold_symbolic(onnx_node, inputs, registry, weights_are_args)
    if symbolic is not None:
        return symbolic
    present = [v for v in inputs if v is not None]
    if onnx_node.domain != "" or node.op_type in _NOT_FOLDABLE or not present:
        return None
    if any(v.const is None or (v.parameter and weights_are_args) for v in present):
        return None
    if sum(v.size for v in present) > max_elements:
        return None
    if any(a.type in (onnx_ir.AttributeType.GRAPH, onnx_ir.AttributeType.GRAPHS) for a in node.attributes.values()):
        return None
    try:
        results = _evaluate_with_reference(node, onnx_node, inputs)
    except Exception as exc:  # the rule lowers it at run time instead
        _log.debug("not folding %s: %s", onnx_node, exc)
        return None
    if any(r is None or isinstance(r, (list, tuple)) for r in results):
        return None  # sequences and optionals are built by their rules
    if sum(np.size(r) for r in results) > max_elements:
        return None  # an Expand or Tile of a small constant: keep the op, not a huge constant
    return results


def _fold_symbolic(
    onnx_node: OnnxNode, inputs: Sequence[LoweredValue | None], registry: LoweringRegistry, weights_are_args: bool
) -> list[SymbolicResult] | None:
    """Evaluates a shape computation on symbolic dims with the node's registered evaluator."""
    evaluator = registry.resolve_evaluator(onnx_node.domain, onnx_node.op_type, onnx_node.opset)
    if evaluator is None:
        return None
    present = [v for v in inputs if v is not None]
    if not present or any(v.kind != "tensor" for v in present):
        return None
    if evaluator.reads == "shape":
        if is_static(present[0].shape):
            return None  # the rule returns a plain constant
        values: list = [None]
    else:
        if not any(v.sym is not None for v in present):
            return None
        if not evaluator.float_inputs and any(v.sym is not None and dtypes.is_float(v.dtype) for v in present):
            return None  # float arithmetic on dims (a true division, say) is not integer math
        values = []
        for value in inputs:
            if value is None:
                values.append(None)
            elif value.sym is not None:
                values.append(value.sym)
            elif value.const is not None and value.size <= symbolic_eval.MAX_ELEMENTS and not (
                value.parameter and weights_are_args
            ):
                array = np.asarray(value.const())
                if array.dtype.kind not in "iub":
                    return None
                values.append(symbolic_eval.normalize(array.astype(np.int64) if array.dtype.kind != "b" else array))
            else:
                return None
    try:
        results = evaluator.evaluate(onnx_node, inputs, values)
    except (symbolic_eval.NotSymbolic, ValueError, IndexError, TypeError) as exc:
        _log.debug("not evaluating %s symbolically: %s", onnx_node, exc)
        return None
    dtype = evaluator.result_dtype(onnx_node, present)
    return [SymbolicResult(r, dtype) for r in results]


def _evaluate_with_reference(
    node: onnx_ir.Node, onnx_node: OnnxNode, inputs: Sequence[LoweredValue | None]
) -> list[np.ndarray]:
    """The node's outputs computed by ``onnx.reference`` on its constant inputs.

    The evaluator of a node is built once per (op, attributes, input and output arity, opset)
    and kept (:func:`_reference_evaluator`): building one costs about 1.5 ms, most of what a
    fold took, and an exporter repeats the same small shape nodes (MiniLM's legacy export
    folds 61 Unsqueeze, 26 Concat and 15 Gather nodes: 0.27 -> 0.06 s of its 0.6 s lowering).
    """
    proto = onnx_ir.serde.serialize_node(node)
    # Positional names (an omitted optional input stays ""), so equal nodes share an evaluator.
    del proto.input[:], proto.output[:]
    proto.input.extend(f"in{i}" if name else "" for i, name in enumerate(onnx_node.input_names))
    proto.output.extend(f"out{i}" if value.name else "" for i, value in enumerate(node.outputs))
    proto.name = ""
    feeds = {
        f"in{i}": value.const()  # type: ignore[union-attr]
        for i, (name, value) in enumerate(zip(onnx_node.input_names, inputs))
        if value is not None and name
    }
    evaluator = _reference_evaluator(proto.SerializeToString(), onnx_node.opset)
    with _REFERENCE_LOCK:
        results = evaluator.run(None, feeds)
    return [r if r is None or isinstance(r, list) else np.asarray(r) for r in results]


_REFERENCE_LOCK = threading.Lock()  # lowerings in several threads share the evaluators


@functools.lru_cache(maxsize=512)
def _reference_evaluator(node_proto: bytes, opset: int) -> Any:
    """An ``onnx.reference.ReferenceEvaluator`` of a one-node model of ``node_proto`` (inputs
    ``in0..``, outputs ``out0..``) at ``opset`` of the default domain: the evaluator then uses
    the revision in force at the node's opset (a bare NodeProto would be evaluated at the
    latest)."""
    from onnx.reference import ReferenceEvaluator

    node = onnx.NodeProto.FromString(node_proto)
    graph = onnx.helper.make_graph(
        [node],
        "fold",
        [onnx.helper.make_empty_tensor_value_info(name) for name in node.input if name],
        [onnx.helper.make_empty_tensor_value_info(name) for name in node.output if name],
    )
    model = onnx.helper.make_model(graph, opset_imports=[onnx.helper.make_opsetid("", opset)])
    return ReferenceEvaluator(model)
