"""Lowering rules: control flow (If, Loop) as StableHLO regions (Scan: ``scan.py``).

::

    If(cond) {then} {else}     -> the taken branch, inline, when cond is known at compile time;
                                  else stablehlo.if (both branches must give the same types)
    Loop(M, cond, v...)        -> stablehlo.while over (i: i64, cond: i1, v..., scan buffers...)

Subgraphs (branches, bodies) are lowered by the importer (``ctx.lower_subgraph``) straight into
a region's block; outer-scope values are used as they are, since StableHLO regions are not
isolated from above. A region's result types are known only once its graph is lowered, so a
branch or body is first lowered into a block of a throwaway placeholder op; the block then
moves to the real op (``Block.append_to``) and the placeholder is erased.

Static shapes shape the choices:

- Loop scan outputs are preallocated ``[N, ...]`` buffers, so the number of iterations ``N``
  must be known at compile time: a constant trip count with no condition, or a condition that
  starts true and stays true (the body forwards it, or returns a constant true). A trip count
  that is a symbolic dim (``Shape -> Gather``) counts as known: the buffers are ``[?, ...]``.
- Symbolic dims: carried values and scan outputs may have symbolic dims. Their run-time sizes
  are emitted before the ``stablehlo.while`` and its block arguments carry the same symbolic
  dims (``builders.carry_dims``).
- Loop-carried values must keep their type from one iteration to the next.
- When the ``stablehlo.while`` body cannot be lowered (a Slice whose start is the iteration
  number, a carried value that grows, a carried sequence) but the iteration count is known and
  small, the loop is unrolled instead: the body is lowered once per iteration with the
  iteration number a compile-time constant, and each iteration's results (constants and
  sequences included) carried into the next as they are.
- Sequences and optionals (lists of tensors whose length is known at compile time) pass
  through an If with a constant cond and an unrolled Loop; a ``stablehlo.if`` or
  ``stablehlo.while`` carries tensors only.

Errors that a compile-time value of an input would resolve (the trip count, a condition) are
both :class:`ShapeError`/:class:`FrontendError` and :class:`NonConstantInputError`, so
:class:`onnx_stablehlo.runtime.model.CompiledModel` retries with small integer inputs
specialized on their values.

Spec: onnx.ai/onnx/operators/onnx__If.html, onnx__Loop.html.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import onnx_ir
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import stablehlo

from onnx_stablehlo.errors import (
    FrontendError,
    NonConstantInputError,
    ShapeError,
    UnsupportedDtypeError,
)
from onnx_stablehlo.frontend import builders, dtypes
from onnx_stablehlo.frontend.context import LoweredValue, LoweringContext, OnnxNode
from onnx_stablehlo.frontend.dtypes import DataType
from onnx_stablehlo.frontend.registry import lowering
from onnx_stablehlo.frontend.shapes import Dim


_MAX_UNROLLED_ITERATIONS = 64
"""A Loop whose ``stablehlo.while`` body cannot be lowered is unrolled up to this many steps."""


class _NeedsConstantError(ShapeError, NonConstantInputError):
    """Types that differ, or an iteration count unknown, unless some input is a constant."""


class _NeedsConstantKindError(UnsupportedDtypeError, NonConstantInputError):
    """Sequences or optionals in a region, which they can leave only when unrolled or inlined."""


# Helpers --------------------------------------------------------------------------------------


def _constant_bool(value: ir.Value) -> bool | None:
    """The value of a one-element bool ``stablehlo.constant`` result, else ``None``.

    A Loop body's cond output comes back from ``ctx.lower_subgraph`` as an MLIR value (a
    region's results must be); this tells a constant cond from a computed one.
    """
    operation = getattr(value.owner, "operation", None)
    if operation is None or operation.name != "stablehlo.constant" or builders.dtype_of(value) != DataType.BOOL:
        return None
    return bool(np.array(operation.attributes["value"]).reshape(-1)[0])


def _scalar_pred(ctx: LoweringContext, value: ir.Value, what: str) -> ir.Value:
    shape = builders.static_shape_of(value)
    if int(np.prod(shape, dtype=np.int64)) != 1:
        raise ctx.error(f"{what} must hold one element, got shape {list(shape)}", ShapeError)
    return builders.reshape(builders.convert(value, DataType.BOOL), ())


def _non_tensor(graph: onnx_ir.Graph) -> onnx_ir.Value | None:
    """The first sequence- or optional-typed input or output the subgraph declares, if any."""
    for value in (*graph.inputs, *graph.outputs):
        if isinstance(value.type, (onnx_ir.SequenceType, onnx_ir.OptionalType)):
            return value
    return None


def _known(kind: DataType, value: int | bool) -> LoweredValue:
    """A compile-time scalar to bind to a subgraph input."""
    array = np.array(value, dtype=dtypes.numpy_dtype(kind))
    return LoweredValue("", kind, (), const=lambda: array)


def _empty(like: ir.Value, length_axis_shape: Sequence[int]) -> np.ndarray:
    return np.zeros(tuple(length_axis_shape), dtype=dtypes.numpy_dtype(builders.dtype_of(like)))


# If -----------------------------------------------------------------------------------------


@lowering("If", since=1)
@lowering("If", since=11)  # 11: the branches' output shapes may differ
@lowering("If", since=13)  # 13: sequence outputs
@lowering("If", since=16)  # 16: optional outputs
@lowering("If", since=19)  # 19 and later: float8, int4, float4, int2 outputs
@lowering("If", since=21)
@lowering("If", since=23)
@lowering("If", since=24)
@lowering("If", since=25)
def lower_if(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value | LoweredValue]:
    """Lowers If to its taken branch (constant cond) or to stablehlo.if.

    Spec: If-1/11/13/16/19/21/23/24/25.
    Shapes: cond one element (``[]`` or ``[1]``); branches nest to any depth and may read
        outer-scope values. With a constant cond only the taken branch is lowered, so the
        branches may differ in shapes; its constant, sequence and optional outputs pass through.
    Dtypes: any tensor type.
    Deviations: with a run-time cond both branches must produce the same types (StableHLO
        is statically shaped).
    Raises: ShapeError when a run-time cond selects between branches of different types or
        one branch does not lower for the given shapes; UnsupportedDtypeError when it selects
        sequences or optionals (both also NonConstantInputError: a constant cond lowers).
    """
    then_graph = node.attr("then_branch")
    else_graph = node.attr("else_branch")
    if ctx.is_constant_input(0):
        flat = np.asarray(ctx.constant_input(0)).reshape(-1)
        if flat.size != 1:
            raise ctx.error(f"cond must hold one element, got {flat.size}", ShapeError)
        taken = then_graph if bool(flat[0]) else else_graph
        return ctx.lower_subgraph_values(taken, [])
    for what, graph in (("then_branch", then_graph), ("else_branch", else_graph)):
        found = _non_tensor(graph)
        if found is not None:
            raise ctx.error(
                f"{what} output '{found.name}' has type {found.type}; stablehlo.if returns tensors "
                "only, so sequences and optionals need cond known at compile time",
                _NeedsConstantKindError,
            )
    pred = _scalar_pred(ctx, ctx.input(0), "cond")
    holder, blocks = builders.detached_blocks([], [])
    try:
        results = []
        for block, graph, what in zip(blocks, (then_graph, else_graph), ("then_branch", "else_branch")):
            with ir.InsertionPoint(block):
                try:
                    outputs = ctx.lower_subgraph(graph, [])
                except (ShapeError, NonConstantInputError) as exc:
                    # Exporters branch on shapes: the branch not taken may not fit these shapes.
                    raise ctx.error(
                        f"{what} does not lower for these inputs ({exc}); with cond known at compile "
                        "time only the taken branch is lowered",
                        _NeedsConstantError,
                    ) from exc
                stablehlo.return_(outputs)
            results.append(outputs)
        then_out, else_out = results
        for index, (a, b) in enumerate(zip(then_out, else_out)):
            if a.type != b.type:
                raise ctx.error(
                    f"output {index} ('{node.output_names[index]}') is {a.type} in "
                    f"then_branch but {b.type} in else_branch; stablehlo.if needs equal "
                    "types, so the branches may differ only when cond is known at compile time",
                    _NeedsConstantError,
                )
        outputs = builders.if_with_branches([v.type for v in then_out], pred, *blocks)
    finally:
        builders.erase(holder.operation)
    return outputs


# Loop ---------------------------------------------------------------------------------------


@lowering("Loop", since=1)
@lowering("Loop", since=11)  # 11: the trip count and cond inputs became optional by name
@lowering("Loop", since=13)  # 13: sequence-typed carried values
@lowering("Loop", since=16)  # 16: optional-typed carried values
@lowering("Loop", since=19)  # 19 and later: float8, int4, float4, int2 carried values
@lowering("Loop", since=21)
@lowering("Loop", since=23)
@lowering("Loop", since=24)
@lowering("Loop", since=25)
def lower_loop(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value | np.ndarray | LoweredValue]:
    """Lowers Loop to stablehlo.while carrying (iteration number, cond, values, scan buffers).

    Spec: Loop-1/11/13/16/19/21/23/24/25.
    Shapes: M (trip count) and cond one element each, either may be omitted (not both);
        loop-carried values keep their type across iterations; scan outputs stack along a new
        axis 0 and need the number of iterations at compile time (see the module docstring).
    Dtypes: any tensor type.
    Deviations: a loop whose body needs the iteration number at compile time, whose carried
        values change shape, or that carries sequences or optionals, is unrolled when it runs a
        known number of iterations (at most 64); it is not a stablehlo.while then.
    Raises: NonConstantInputError when scan outputs need an iteration count that is not known
        at compile time; ShapeError (also a NonConstantInputError) when a carried value
        changes type; UnsupportedDtypeError (also a NonConstantInputError) for sequences or
        optionals in a loop that cannot be unrolled; FrontendError for a loop with neither
        trip count nor cond (it never ends).
    """
    body = node.attr("body")
    initial = [ctx.lowered(i) for i in range(2, ctx.num_inputs)]
    num_carried = len(initial)
    if len(body.inputs) != 2 + num_carried:
        raise ctx.error(
            f"body takes {len(body.inputs)} inputs; it needs 2 + {num_carried} (iteration number, "
            "cond, loop-carried values)",
            ShapeError,
        )
    num_scan = len(body.outputs) - 1 - num_carried
    if num_scan < 0 or len(node.output_names) != num_carried + num_scan:
        raise ctx.error(
            f"body has {len(body.outputs)} outputs for {num_carried} loop-carried values and "
            f"{len(node.output_names)} node outputs",
            ShapeError,
        )
    trip = _LoopInput.of(ctx, 0, "M", DataType.INT64)
    cond = _LoopInput.of(ctx, 1, "cond", DataType.BOOL)
    if trip.absent and cond.absent:
        raise ctx.error("Loop with neither a trip count M nor a cond input never ends")
    found = _non_tensor(body)
    if found is not None or any(v.kind != "tensor" for v in initial):
        if not _unrollable(trip, cond):
            what = f"body value '{found.name}' has type {found.type}" if found else "it carries a sequence or optional"
            raise ctx.error(
                f"{what}; stablehlo.while carries tensors only, so the loop is unrolled, which "
                "needs a trip count or cond known at compile time",
                _NeedsConstantKindError,
            )
        return _loop_unrolled(ctx, body, trip, cond, initial, num_scan)
    try:
        return _loop_while(ctx, body, trip, cond, [ctx.input(i) for i in range(2, ctx.num_inputs)], num_scan)
    except (NonConstantInputError, ShapeError) as exc:
        if not _unrollable(trip, cond):
            raise
        try:
            return _loop_unrolled(ctx, body, trip, cond, initial, num_scan)
        except FrontendError:
            raise exc from None


class _LoopInput:
    """The trip count or cond of a Loop: absent, a compile-time constant, or a run-time value."""

    def __init__(
        self, absent: bool, const: int | bool | None, value: ir.Value | None, dim: Dim | None = None
    ) -> None:
        self.absent = absent
        self.const = const
        self.value = value
        self.dim = dim  # a trip count that is a symbolic dim (``Shape -> Gather``): known up to symbols

    @classmethod
    def of(cls, ctx: LoweringContext, index: int, what: str, dtype: DataType) -> _LoopInput:
        if not ctx.has_input(index):
            return cls(True, None, None)
        if ctx.is_constant_input(index):
            flat = np.asarray(ctx.constant_input(index)).reshape(-1)
            if flat.size != 1:
                raise ctx.error(f"{what} must hold one element, got {flat.size}", ShapeError)
            const = bool(flat[0]) if dtype == DataType.BOOL else int(flat[0])
            return cls(False, const, None)
        dim = None
        if dtype == DataType.INT64 and ctx.lowered(index).sym is not None:
            flat = ctx.symbolic_input(index).reshape(-1)
            dim = flat[0] if flat.size == 1 else None
        value = ctx.input(index)
        if builders.dtype_of(value) != dtype or int(np.prod(builders.static_shape_of(value), dtype=np.int64)) != 1:
            raise ctx.error(f"{what} must be one {dtype.name.lower()} element, got {value.type}", ShapeError)
        return cls(False, None, builders.reshape(value, ()), dim)

    def materialize(self, dtype: DataType) -> ir.Value:
        return self.value if self.value is not None else builders.splat(self.const, dtype)


def _unrollable(trip: _LoopInput, cond: _LoopInput) -> bool:
    if trip.value is not None or cond.value is not None:
        return False  # a run-time trip count or cond: specializing the inputs may help
    return trip.const is not None or cond.const is not None


def _iterations(trip: _LoopInput, cond: _LoopInput, cond_stays: bool | None) -> Dim | None:
    """The number of iterations when known at compile time (a symbolic dim counts as known).

    ``cond_stays`` says what the body does with cond: True when it forwards it or returns a
    constant true, False when it returns a constant false, None when it computes it.
    """
    bound: Dim | None = None
    if not trip.absent:
        bound = max(trip.const, 0) if trip.const is not None else trip.dim
    if cond.absent:
        return bound
    if cond.const is False:
        return 0
    if cond.const is None:
        return None
    if cond_stays is True:
        return bound if not trip.absent else None
    if cond_stays is False:
        if trip.absent:
            return 1
        return min(bound, 1) if isinstance(bound, int) else None
    return None


def _loop_while(
    ctx: LoweringContext,
    body: onnx_ir.Graph,
    trip: _LoopInput,
    cond: _LoopInput,
    carried: list[ir.Value],
    num_scan: int,
) -> list[ir.Value | np.ndarray]:
    counter_init = builders.splat(0, DataType.INT64)
    cond_init = [] if cond.absent else [cond.materialize(DataType.BOOL)]
    init = [counter_init, *cond_init, *carried]
    init_dims: list[tuple[Dim, ...] | None] = [None, *(None for _ in cond_init), *(builders.carry_dims(v) for v in carried)]
    if trip.dim is not None and not isinstance(trip.dim, int):
        builders.dim_value(trip.dim)  # a scan output's length, emitted before the loop
    holder, (block,) = builders.detached_blocks([v.type for v in init])
    try:
        with ir.InsertionPoint(block):
            args = builders.record_carried(list(block.arguments), init_dims)
            counter = args[0]
            cond_arg = args[1] if cond_init else builders.splat(True, DataType.BOOL)
            state = args[1 + len(cond_init):]
            outputs = ctx.lower_subgraph(body, [counter, cond_arg, *state])
            cond_out = _scalar_pred(ctx, outputs[0], "the body's cond output")
            next_state = outputs[1 : 1 + len(carried)]
            elements = outputs[1 + len(carried):]
            for index, (before, after) in enumerate(zip(state, next_state)):
                if before.type != after.type:
                    raise ctx.error(
                        f"loop-carried value {index} ('{body.inputs[2 + index].name}') enters the body as "
                        f"{before.type} and leaves it as {after.type}; stablehlo.while needs "
                        "equal types (unrolling needs the iteration count at compile time)",
                        _NeedsConstantError,
                    )
            stays = _cond_stays(cond_out, cond_arg if cond_init else None)
            iterations = _iterations(trip, cond, stays)
            if elements and iterations is None:
                raise ctx.error(
                    "scan outputs need the number of iterations at compile time: give a constant "
                    "trip count M, and a cond that is constant true and that the body forwards "
                    "unchanged (or no cond)",
                    NonConstantInputError,
                )
            if isinstance(iterations, int) and iterations == 0:
                return [*carried, *(_empty(e, (0, *builders.static_shape_of(e))) for e in elements)]
            with ir.InsertionPoint(holder.operation):
                for element in elements:  # sizes for the buffers, emitted before the loop
                    builders.carry_dims(element)
            buffers = []
            for element in elements:
                shape = (iterations, *builders.dims_of(element))
                buffer_type = builders.tensor_type(shape, builders.dtype_of(element))
                buffers.append(builders.record(block.add_argument(buffer_type, ir.Location.unknown()), shape))
                init_dims.append(shape)
            written = [builders.write_row(buf, e, counter, 0) for buf, e in zip(buffers, elements)]
            next_cond = [cond_out] if cond_init else []
            stablehlo.return_([builders.increment(counter), *next_cond, *next_state, *written])
        init += [builders.splat(0, builders.dtype_of(b), d) for b, d in zip(block.arguments[len(init):], init_dims[len(init):])]

        def keep_going(arguments: list[ir.Value]) -> ir.Value:
            pred = None
            if not trip.absent:
                pred = builders.compare(arguments[0], trip.materialize(DataType.INT64), "LT")
            if cond_init:
                pred = arguments[1] if pred is None else stablehlo.and_(pred, arguments[1])
            return pred

        results = builders.while_with_body(init, keep_going, block)
    finally:
        builders.erase(holder.operation)
    return builders.record_carried(results, init_dims)[1 + len(cond_init):]


def _cond_stays(cond_out: ir.Value, cond_arg: ir.Value | None) -> bool | None:
    if cond_arg is not None and cond_out == cond_arg:
        return True
    return _constant_bool(cond_out)


def _loop_unrolled(
    ctx: LoweringContext,
    body: onnx_ir.Graph,
    trip: _LoopInput,
    cond: _LoopInput,
    initial: list[LoweredValue],
    num_scan: int,
) -> list[ir.Value | np.ndarray | LoweredValue]:
    """Lowers the body once per iteration; each iteration's results feed the next as they are."""
    state: list[LoweredValue] = list(initial)
    going = True if cond.absent else bool(cond.const)
    stacks: list[list[LoweredValue]] = [[] for _ in range(num_scan)]
    iteration = 0
    while going and (trip.absent or iteration < trip.const):
        if iteration >= _MAX_UNROLLED_ITERATIONS:
            raise ctx.error(f"Loop runs more than {_MAX_UNROLLED_ITERATIONS} iterations; not unrolled")
        inputs = [_known(DataType.INT64, iteration), _known(DataType.BOOL, going), *state]
        outputs = ctx.lower_subgraph_values(body, inputs)
        if not cond.absent:
            if outputs[0].const is None:
                raise ctx.error("the body's cond output is computed at run time", NonConstantInputError)
            going = bool(np.asarray(outputs[0].const()).reshape(-1)[0])
        state = outputs[1 : 1 + len(initial)]
        for stack, element in zip(stacks, outputs[1 + len(initial):]):
            stack.append(element)
        iteration += 1
    results: list[ir.Value | np.ndarray | LoweredValue] = list(state)
    for stack in stacks:
        if not stack:
            raise ctx.error("zero iterations: the scan outputs' types are unknown")
        shapes = {tuple(e.shape) for e in stack}
        if len(shapes) != 1 or any(e.kind != "tensor" for e in stack):
            raise ctx.error(f"scan output rows differ in shape: {sorted(map(str, shapes))}", ShapeError)
        if all(e.const is not None and not e.parameter for e in stack):
            results.append(np.stack([np.asarray(e.const()) for e in stack]))  # type: ignore[misc]
            continue
        rows = [builders.reshape(ctx.materialize(e), (1, *e.shape)) for e in stack]
        results.append(rows[0] if len(rows) == 1 else stablehlo.concatenate(rows, 0))
    return results
