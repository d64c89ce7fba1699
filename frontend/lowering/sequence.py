"""Lowering rules: sequence and optional ops.

A sequence is a list of tensors whose length is known at compile time (see
``frontend/layout.py``); an optional is an empty list or one value. So the sequence ops are
bookkeeping at compile time and emit StableHLO only where they compute on tensors::

    SequenceConstruct(x0, x1, ...)      -> [x0, x1, ...]
    SequenceAt(s, i)                     -> s[i]                  (i known at compile time)
    SequenceInsert(s, x[, i])            -> s[:i] + [x] + s[i:]
    SequenceErase(s[, i])                -> s without s[i]
    SequenceLength(s)                    -> len(s) as an int64 constant
    ConcatFromSequence(s)                -> stablehlo.concatenate (new_axis: after reshapes)
    SplitToSequence(x[, split])          -> one stablehlo.slice per piece
    SequenceMap(s, ...)                  -> the body lowered once per element
    Optional(x) / Optional<type>()       -> [x] / []
    OptionalHasElement(o), OptionalGetElement(o)

Constraints: positions and splits must be known at compile time, since they decide the
sequence's length and its element shapes.

Spec: onnx.ai/onnx/operators (each op's page).
"""

from __future__ import annotations

import numpy as np
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import stablehlo

from onnx_stablehlo.errors import ShapeError
from onnx_stablehlo.frontend import builders
from onnx_stablehlo.frontend.context import LoweredValue, LoweringContext, OnnxNode, SequenceResult
from onnx_stablehlo.frontend.dtypes import DataType
from onnx_stablehlo.frontend.registry import lowering


def _position(ctx: LoweringContext, index: int, length: int, *, insert: bool = False) -> int:
    position = int(np.asarray(ctx.constant_input(index)).reshape(-1)[0])
    bound = length + 1 if insert else length
    if not -bound <= position < max(bound, 1) or (not insert and length == 0):
        raise ctx.error(f"position {position} is out of range for a sequence of length {length}", ShapeError)
    return position + bound if position < 0 else position


def _element_dtype(ctx: LoweringContext, index: int) -> DataType:
    return ctx.lowered(index).dtype


@lowering("SequenceConstruct", since=11)
def lower_sequence_construct(ctx: LoweringContext, node: OnnxNode) -> list[SequenceResult]:
    """Builds a sequence of the inputs. Spec: SequenceConstruct-11."""
    elements = [ctx.lowered(i) for i in range(ctx.num_inputs)]
    return [SequenceResult(elements, elements[0].dtype)]


@lowering("SequenceEmpty", since=11)
def lower_sequence_empty(ctx: LoweringContext, node: OnnxNode) -> list[SequenceResult]:
    """An empty sequence of ``dtype`` (default float). Spec: SequenceEmpty-11."""
    return [SequenceResult([], DataType(node.attr_int("dtype", int(DataType.FLOAT))))]


@lowering("SequenceAt", since=11)
def lower_sequence_at(ctx: LoweringContext, node: OnnxNode) -> list[LoweredValue]:
    """The element at a compile-time position (negative counts from the end). Spec: SequenceAt-11."""
    elements = ctx.elements(0)
    return [elements[_position(ctx, 1, len(elements))]]


@lowering("SequenceInsert", since=11)
def lower_sequence_insert(ctx: LoweringContext, node: OnnxNode) -> list[SequenceResult]:
    """Inserts a tensor at a position (default: the end). Spec: SequenceInsert-11."""
    elements = list(ctx.elements(0))
    position = _position(ctx, 2, len(elements), insert=True) if ctx.has_input(2) else len(elements)
    elements.insert(position, ctx.lowered(1))
    return [SequenceResult(elements, _element_dtype(ctx, 0))]


@lowering("SequenceErase", since=11)
def lower_sequence_erase(ctx: LoweringContext, node: OnnxNode) -> list[SequenceResult]:
    """Removes the element at a position (default: the last). Spec: SequenceErase-11."""
    elements = list(ctx.elements(0))
    position = _position(ctx, 1, len(elements)) if ctx.has_input(1) else len(elements) - 1
    if not elements:
        raise ctx.error("cannot erase from an empty sequence", ShapeError)
    del elements[position]
    return [SequenceResult(elements, _element_dtype(ctx, 0))]


@lowering("SequenceLength", since=11)
def lower_sequence_length(ctx: LoweringContext, node: OnnxNode) -> list[np.ndarray]:
    """The number of elements, an int64 scalar known at compile time. Spec: SequenceLength-11."""
    return [np.array(len(ctx.elements(0)), dtype=np.int64)]


@lowering("ConcatFromSequence", since=11)
def lower_concat_from_sequence(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value]:
    """Concatenates the elements along ``axis`` (or stacks them with ``new_axis=1``).

    Spec: ConcatFromSequence-11.
    Raises: ShapeError for an empty sequence or an out-of-range axis.
    """
    elements = [ctx.materialize(e) for e in ctx.elements(0)]
    if not elements:
        raise ctx.error("cannot concatenate an empty sequence", ShapeError)
    rank = builders.rank_of(elements[0])
    new_axis = node.attr_int("new_axis") == 1
    axis = ctx.axis(node.attr_int("axis"), rank + 1 if new_axis else rank)
    if new_axis:
        elements = [builders.reshape(e, builders.dims_of(e)[:axis] + (1,) + builders.dims_of(e)[axis:]) for e in elements]
    if len(elements) == 1:
        return [elements[0]]
    result = stablehlo.concatenate(elements, ir.IntegerAttr.get(ir.IntegerType.get_signless(64), axis))
    dims = list(builders.dims_of(elements[0]))
    dims[axis] = sum((builders.dims_of(e)[axis] for e in elements), start=0)
    return [builders.record(result, dims)]


@lowering("SplitToSequence", since=11)
@lowering("SplitToSequence", since=24)  # 24 widened the type constraints
def lower_split_to_sequence(ctx: LoweringContext, node: OnnxNode) -> list[SequenceResult]:
    """Splits a tensor into a sequence along ``axis``.

    Spec: SplitToSequence-11/24. ``split`` (compile-time) is a scalar chunk size (the last
    chunk may be smaller) or a list of sizes; without it the tensor is split into size-1
    pieces, squeezed when ``keepdims=0``.
    Shapes: x any rank; dims other than ``axis`` may be symbolic. The split axis must be static
        (the sequence length and the piece sizes depend on it), unless ``split`` is a list whose
        sum is that symbolic size as an expression.
    Raises: NonConstantInputError if `split` is computed at run time; ShapeError when the sizes
        do not add up to the dim, or the split axis is symbolic.
    """
    x = ctx.input(0)
    shape = builders.dims_of(x)
    axis = ctx.axis(node.attr_int("axis"), len(shape))
    dim = shape[axis]
    squeeze = False
    if ctx.has_input(1):
        split = ctx.symbolic_input(1)
        if split.ndim == 0:
            chunk = split.item()
            if not isinstance(dim, int) or not isinstance(chunk, int):
                raise ctx.error(
                    f"a chunk size {chunk} on axis {axis} of symbolic size {dim}: the sequence "
                    "length depends on the size",
                    ShapeError,
                )
            if chunk <= 0:
                raise ctx.error(f"split chunk size {chunk} must be positive", ShapeError)
            sizes = [chunk] * (dim // chunk) + ([dim % chunk] if dim % chunk else [])
        else:
            sizes = [v if not isinstance(v, (int, np.integer)) else int(v) for v in split.reshape(-1)]
    else:
        if not isinstance(dim, int):
            raise ctx.error(
                f"splitting axis {axis} of symbolic size {dim} into size-1 pieces: the sequence "
                "length depends on the size",
                ShapeError,
            )
        sizes = [1] * dim
        squeeze = node.attr_int("keepdims") == 0
    if sum(sizes) != dim:
        raise ctx.error(f"split sizes {list(map(str, sizes))} do not add up to dim {axis} of size {dim}", ShapeError)
    pieces = []
    start = 0
    for size in sizes:
        piece = builders.slice_axis(x, axis, start, start + size)
        if squeeze:
            piece = builders.reshape(piece, shape[:axis] + shape[axis + 1:])
        pieces.append(piece)
        start = start + size
    return [SequenceResult(pieces, builders.dtype_of(x))]


@lowering("SequenceMap", since=17)
def lower_sequence_map(ctx: LoweringContext, node: OnnxNode) -> list[SequenceResult]:
    """Applies the ``body`` graph to each element (with the extra inputs), one copy per element.

    Spec: SequenceMap-17. Extra inputs that are sequences are indexed in step; tensors are
    passed whole. Every output is a sequence.
    Raises: ShapeError when input sequences differ in length.
    """
    body = node.attr("body")
    sequences = [i for i in range(ctx.num_inputs) if ctx.has_input(i) and ctx.input_kind(i) == "sequence"]
    lengths = {len(ctx.elements(i)) for i in sequences}
    if len(lengths) != 1:
        raise ctx.error(f"input sequences have different lengths {sorted(lengths)}", ShapeError)
    length = lengths.pop()
    per_output: list[list[LoweredValue]] = [[] for _ in body.outputs]
    for position in range(length):
        inputs = [
            ctx.elements(i)[position] if i in sequences else ctx.lowered(i)
            for i in range(ctx.num_inputs)
        ]
        for collected, value in zip(per_output, ctx.lower_subgraph_values(body, inputs)):
            collected.append(value)
    dtypes_ = [out.dtype if out.dtype is not None else DataType.FLOAT for out in body.outputs]
    return [SequenceResult(values, dtype) for values, dtype in zip(per_output, dtypes_)]


@lowering("Optional", since=15)
@lowering("Optional", since=28)  # 28 widened the type constraints
def lower_optional(ctx: LoweringContext, node: OnnxNode) -> list[SequenceResult]:
    """Wraps the input in an optional, or makes an empty one of the ``type`` attribute.

    Spec: Optional-15/28.
    """
    if ctx.has_input(0):
        return [SequenceResult([ctx.lowered(0)], ctx.lowered(0).dtype, kind="optional")]
    return [SequenceResult([], DataType.FLOAT, kind="optional")]


@lowering("OptionalHasElement", since=15)
@lowering("OptionalHasElement", since=18)  # 18 accepts plain tensors and sequences too
@lowering("OptionalHasElement", since=28)
def lower_optional_has_element(ctx: LoweringContext, node: OnnxNode) -> list[np.ndarray]:
    """Whether the optional holds a value: a bool scalar known at compile time.

    Spec: OptionalHasElement-15/18/28. An omitted input (18+) has no element.
    """
    if not ctx.has_input(0):
        return [np.array(False)]
    value = ctx.lowered(0)
    present = bool(value.elements) if value.kind == "optional" else True
    return [np.array(present)]


@lowering("OptionalGetElement", since=15)
@lowering("OptionalGetElement", since=18)  # 18 accepts plain tensors and sequences too
@lowering("OptionalGetElement", since=28)
def lower_optional_get_element(ctx: LoweringContext, node: OnnxNode) -> list[LoweredValue]:
    """The optional's value (a plain tensor or sequence passes through).

    Spec: OptionalGetElement-15/18/28.
    Raises: FrontendError for an empty optional.
    """
    value = ctx.lowered(0)
    if value.kind != "optional":
        return [value]
    if not value.elements:
        raise ctx.error("the optional is empty")
    return [value.elements[0]]
