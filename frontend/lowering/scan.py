"""Lowering rules: Scan as a ``stablehlo.while`` over the sequence length.

::

    Scan(s..., x...)           -> stablehlo.while over the sequence length: one
                                  dynamic_slice per scan input, one dynamic_update_slice per
                                  scan output
    Scan-8(lens, s..., x...)   -> the Scan-9 loop once per batch element, results concatenated

The body is lowered by the importer (``ctx.lower_subgraph``) into a block of a throwaway op
first (``builders.detached_blocks``): its scan outputs' types, and so the buffers the loop
carries, are known only then. A Scan over a symbolic length runs ``get_dimension_size``
iterations; states and scan outputs may carry symbolic dims (``builders.carry_dims``).

Spec: onnx.ai/onnx/operators/onnx__Scan.html.
"""

from __future__ import annotations

import numpy as np
import onnx_ir
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import stablehlo

from onnx_stablehlo.errors import ShapeError
from onnx_stablehlo.frontend import builders, dtypes
from onnx_stablehlo.frontend.context import LoweringContext, OnnxNode
from onnx_stablehlo.frontend.dtypes import DataType
from onnx_stablehlo.frontend.registry import lowering


def _reverse_index(counter: ir.Value, length: int) -> ir.Value:
    """``length - 1 - counter``."""
    return stablehlo.subtract(builders.splat(length - 1, builders.dtype_of(counter)), counter)


def _empty(like: ir.Value, shape: list[int]) -> np.ndarray:
    """A zero-length scan output of ``like``'s dtype (a compile-time result)."""
    return np.zeros(tuple(shape), dtype=dtypes.numpy_dtype(builders.dtype_of(like)))


# Scan ---------------------------------------------------------------------------------------


def _scan_loop(
    ctx: LoweringContext,
    body: onnx_ir.Graph,
    states: list[ir.Value],
    scan_inputs: list[tuple[ir.Value, int, bool]],
    output_axes: list[int],
    output_reverse: list[bool],
) -> list[ir.Value | np.ndarray]:
    """Runs a Scan body over the scan inputs' common length with a stablehlo.while.

    Args:
        states: initial state values.
        scan_inputs: ``(value, axis, reverse)`` per scan input (axis normalized).
        output_axes: per scan output, the axis of the stacked output (may be negative).
        output_reverse: per scan output, whether rows are written last to first.

    Symbolic dims: a symbolic sequence length runs ``get_dimension_size`` iterations; states
    and scan outputs may carry symbolic dims (their run-time sizes are emitted before the loop,
    so a dim bound only inside the body cannot size a scan output: the module then fails to
    verify and the model is lowered per shape).

    Returns:
        Final states, then the stacked scan outputs.
    """
    found = [builders.dims_of(v)[axis] for v, axis, _ in scan_inputs]
    static = {d for d in found if isinstance(d, int)}
    if len(static) > 1 or (static and len(set(found)) > 1):
        raise ctx.error(f"scan inputs have different sequence lengths {sorted(map(str, set(found)))}", ShapeError)
    # Symbolic lengths that differ by name are equal at run time (the spec requires it).
    length = found[0]
    symbolic = not isinstance(length, int)
    for value in [*states, *(v for v, _, _ in scan_inputs)]:
        builders.carry_dims(value)
    last = builders.dim_value(length - 1) if symbolic else None

    def reverse_index(counter: ir.Value) -> ir.Value:
        return _reverse_index(counter, length) if last is None else stablehlo.subtract(last, counter)

    counter_init = builders.splat(0, DataType.INT64)
    init = [counter_init, *states]
    init_dims = [None, *(builders.carry_dims(v) for v in states)]
    holder, (block,) = builders.detached_blocks([v.type for v in init])
    try:
        with ir.InsertionPoint(block):
            arguments = builders.record_carried(list(block.arguments), init_dims)
            counter = arguments[0]
            state = arguments[1:]
            backward = None
            slices = []
            for value, axis, reverse in scan_inputs:
                if reverse and backward is None:
                    backward = reverse_index(counter)
                slices.append(builders.dynamic_index(value, backward if reverse else counter, axis))
            outputs = ctx.lower_subgraph(body, [*state, *slices])
            next_state = outputs[: len(states)]
            elements = outputs[len(states):]
            for index, (before, after) in enumerate(zip(state, next_state)):
                if before.type != after.type:
                    raise ctx.error(
                        f"state {index} ('{body.inputs[index].name}') enters the body as {before.type} "
                        f"and leaves it as {after.type}; the types must stay equal",
                        ShapeError,
                    )
            if len(output_axes) != len(elements) or len(output_reverse) != len(elements):
                raise ctx.error(
                    f"{len(elements)} scan outputs but {len(output_axes)} scan_output_axes and "
                    f"{len(output_reverse)} scan_output_directions",
                    ShapeError,
                )
            axes = [ctx.axis(a, builders.rank_of(e) + 1) for a, e in zip(output_axes, elements)]
            with ir.InsertionPoint(holder.operation):
                for element in elements:  # sizes for the buffers, emitted before the loop
                    builders.carry_dims(element)
            if length == 0:
                empties = []
                for element, axis in zip(elements, axes):
                    shape = list(builders.static_shape_of(element))
                    shape.insert(axis, 0)
                    empties.append(_empty(element, shape))
                return [*states, *empties]
            written = []
            buffer_dims = []
            for element, axis, reverse in zip(elements, axes, output_reverse):
                shape = list(builders.dims_of(element))
                shape.insert(axis, length)
                buffer = block.add_argument(builders.tensor_type(shape, builders.dtype_of(element)), ir.Location.unknown())
                buffer_dims.append(tuple(shape))
                builders.record(buffer, shape)
                if reverse and backward is None:
                    backward = reverse_index(counter)
                written.append(builders.write_row(buffer, element, backward if reverse else counter, axis))
            stablehlo.return_([builders.increment(counter), *next_state, *written])
        init += [builders.splat(0, builders.dtype_of(b), d) for b, d in zip(block.arguments[len(init):], buffer_dims)]
        init_dims += buffer_dims

        def below(arguments: list[ir.Value]) -> ir.Value:
            limit = builders.splat(length, DataType.INT64) if not symbolic else builders.dim_value(length)
            return builders.compare(arguments[0], limit, "LT")

        results = builders.while_with_body(init, below, block)
    finally:
        builders.erase(holder.operation)
    return builders.record_carried(results, init_dims)[1:]


def _num_states(ctx: LoweringContext, body: onnx_ir.Graph, num_values: int, num_scan_inputs: int) -> int:
    """The number of state values before the scan inputs; raises ShapeError when the counts do not fit."""
    num_states = num_values - num_scan_inputs
    if num_scan_inputs < 1 or num_states < 0 or len(body.inputs) != num_values:
        raise ctx.error(
            f"num_scan_inputs={num_scan_inputs} does not fit {num_values} inputs and a body of "
            f"{len(body.inputs)} inputs",
            ShapeError,
        )
    return num_states


def _directions(ctx: LoweringContext, node: OnnxNode, name: str, count: int) -> list[bool]:
    values = node.attr_ints(name) or [0] * count
    if len(values) != count:
        raise ctx.error(f"{name} has {len(values)} entries for {count} values", ShapeError)
    for value in values:
        if value not in (0, 1):
            raise ctx.unsupported_attribute(name, values, "0 (forward) or 1 (reverse) per entry")
    return [bool(v) for v in values]


@lowering("Scan", since=9)
@lowering("Scan", since=11)  # 11: negative scan axes
@lowering("Scan", since=16)  # 16: bfloat16
@lowering("Scan", since=19)  # 19 and later: float8, int4, float4, int2
@lowering("Scan", since=21)
@lowering("Scan", since=23)
@lowering("Scan", since=24)
@lowering("Scan", since=25)
def lower_scan(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value | np.ndarray]:
    """Lowers Scan to stablehlo.while over the sequence length.

    Spec: Scan-9/11/16/19/21/23/24/25.
    Shapes: scan inputs of equal length along their scan axes (symbolic dims allowed, the
        length too); the states keep their types; scan outputs stack along ``scan_output_axes``.
    Dtypes: any tensor type.
    Raises: ShapeError for lengths or attribute counts that do not fit; UnsupportedAttributeError
        for a direction other than 0 or 1.
    """
    body = node.attr("body")
    num_scan_inputs = node.attr_int("num_scan_inputs")
    values = [ctx.input(i) for i in range(ctx.num_inputs)]
    num_states = _num_states(ctx, body, len(values), num_scan_inputs)
    num_outputs = len(body.outputs) - num_states
    input_axes = node.attr_ints("scan_input_axes") or [0] * num_scan_inputs
    output_axes = node.attr_ints("scan_output_axes") or [0] * num_outputs
    if len(input_axes) != num_scan_inputs:
        raise ctx.error(f"scan_input_axes has {len(input_axes)} entries for {num_scan_inputs} scan inputs", ShapeError)
    input_reverse = _directions(ctx, node, "scan_input_directions", num_scan_inputs)
    output_reverse = _directions(ctx, node, "scan_output_directions", num_outputs)
    scan_inputs = [
        (value, ctx.axis(axis, builders.rank_of(value)), reverse)
        for value, axis, reverse in zip(values[num_states:], input_axes, input_reverse)
    ]
    return _scan_loop(ctx, body, values[:num_states], scan_inputs, output_axes, output_reverse)


@lowering("Scan", since=8)
def lower_scan_batched(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value | np.ndarray]:
    """Lowers Scan-8 (batch axis 0, optional sequence_lens) to one Scan-9 loop per batch element.

    Spec: Scan-8.
    Shapes: every state and scan input has the batch as axis 0 and scan inputs the sequence
        as axis 1; ``sequence_lens`` [batch] must be known at compile time when given; scan
        output rows past a batch element's length are zero.
    Dtypes: any tensor type.
    Raises: NonConstantInputError for a run-time ``sequence_lens``; ShapeError for batch
        sizes or attribute counts that do not fit.
    """
    body = node.attr("body")
    num_scan_inputs = node.attr_int("num_scan_inputs")
    values = [ctx.input(i) for i in range(1, ctx.num_inputs)]
    num_states = _num_states(ctx, body, len(values), num_scan_inputs)
    reverse = _directions(ctx, node, "directions", num_scan_inputs)
    batches = {builders.static_shape_of(v)[0] if builders.rank_of(v) else None for v in values}
    if len(batches) != 1 or None in batches:
        raise ctx.error(f"every input needs the same batch size as axis 0, got {sorted(map(str, batches))}", ShapeError)
    (batch,) = batches
    lengths = {builders.static_shape_of(v)[1] if builders.rank_of(v) > 1 else None for v in values[num_states:]}
    if len(lengths) != 1 or None in lengths:
        raise ctx.error(
            f"scan inputs need the same sequence length as axis 1, got {sorted(map(str, lengths))}", ShapeError
        )
    (length,) = lengths
    if ctx.has_input(0):
        sequence_lens = [int(v) for v in np.asarray(ctx.constant_input(0)).reshape(-1)]
        if len(sequence_lens) != batch or any(not 0 <= n <= length for n in sequence_lens):
            raise ctx.error(f"sequence_lens {sequence_lens} does not fit batch {batch} and length {length}", ShapeError)
    else:
        sequence_lens = [length] * batch
    num_outputs = len(body.outputs) - num_states
    per_batch: list[list[ir.Value | np.ndarray]] = []
    for b, steps in enumerate(sequence_lens):
        rows = [_static_row(v, b) for v in values]
        scan_inputs = [(_static_prefix(x, steps), 0, r) for x, r in zip(rows[num_states:], reverse)]
        results = _scan_loop(ctx, body, rows[:num_states], scan_inputs, [0] * num_outputs, [False] * num_outputs)
        materialized = [builders.constant(r) if isinstance(r, np.ndarray) else r for r in results]
        for k in range(num_states, len(materialized)):
            materialized[k] = _pad_axis0(materialized[k], length)
        per_batch.append(materialized)
    outputs = []
    for k in range(len(per_batch[0])):
        rows = [builders.reshape(r[k], (1, *builders.static_shape_of(r[k]))) for r in per_batch]
        outputs.append(rows[0] if len(rows) == 1 else stablehlo.concatenate(rows, 0))
    return outputs


def _static_row(value: ir.Value, index: int) -> ir.Value:
    """``value[index]`` along axis 0 (static slice), axis dropped."""
    shape = builders.static_shape_of(value)
    row = stablehlo.slice(
        value,
        builders.i64_array([index] + [0] * (len(shape) - 1)),
        builders.i64_array([index + 1, *shape[1:]]),
        builders.i64_array([1] * len(shape)),
    )
    return builders.reshape(row, shape[1:])


def _static_prefix(value: ir.Value, steps: int) -> ir.Value:
    """The first ``steps`` entries of ``value`` along axis 0."""
    shape = builders.static_shape_of(value)
    if steps == shape[0]:
        return value
    return stablehlo.slice(
        value, builders.i64_array([0] * len(shape)), builders.i64_array([steps, *shape[1:]]), builders.i64_array([1] * len(shape))
    )


def _pad_axis0(value: ir.Value, length: int) -> ir.Value:
    """``value`` zero-padded at the end of axis 0 to ``length``."""
    shape = builders.static_shape_of(value)
    if shape[0] == length:
        return value
    zero = builders.splat(0, builders.dtype_of(value))
    rank = len(shape)
    return stablehlo.pad(
        value,
        zero,
        builders.i64_array([0] * rank),
        builders.i64_array([length - shape[0]] + [0] * (rank - 1)),
        builders.i64_array([0] * rank),
    )
