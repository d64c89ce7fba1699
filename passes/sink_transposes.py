"""``sink-transposes``: channels-last convolutions, and transposes moved down to where they
cancel or are absorbed.

XLA CPU computes every convolution channels-last (NHWC) and ``unroll-depthwise-conv`` computes
depthwise taps channels-last, but ONNX models are channels-first (NCHW). Left implicit, XLA's
layout copies land inside fusions: after a depthwise tap sum, a squeeze-and-excitation block's
activation, pool and gate made XLA CPU write the sum channels-first, one strided channel at a
time (0.2-0.25 ms for a 14x14x240 block of MobileNetV3-small, 4-5x its channels-last cost), and
between a 1x1 convolution and the next tap sum every activation ran channels-first between two
layout copies. This pass makes a 2-D convolution's result channels-last with an explicit
transpose back, and moves the transposes back to channels-first (``p = [0, r-1, 1, ..., r-2]``)
down:

    convolution(x, k) -> [b, f, s...] -> transpose(convolution(x, k) -> [b, s..., f], p)
    f(transpose(x, p), b(s), c)   -> transpose(f(x, b'(s), c'), p)     f elementwise
    reduce(transpose(x, p), dims) -> [transpose](reduce(x, p[dims]))
    pad / slice / concatenate / reduce_window of transposes -> transpose of the same op
    convolution(transpose(x, p))  -> convolution(x) with p folded into its input dims
    dot_general(transpose(x, p))  -> dot_general(x) (fold-transposes' DotGeneralOfTranspose)
    transpose(transpose(x))       -> one transpose, or none (the next tap sum's cancels)

where ``b(s)`` is a ``broadcast_in_dim`` (rebuilt with permuted dims), ``c`` a constant
(transposed at compile time; behind its ``optimization_barrier`` again when it had one, as
``builders.divide`` keeps divisors) or a rank-0 operand (clamp's bounds), and every transposed
operand has the same ``p``. ``reduce_window`` (AveragePool) moves like pad and slice. A transpose stops at anything else (a reshape, a return, a residual that is not
transposed); nothing is computed twice, since an op moves below its transpose rather than
being copied. Two limits keep it from costing what it saves (A/B on the zoo):

- only transposes back to channels-first move: a tap sum's own transpose to channels-last,
  moved below its pad and slices, would compute the taps channels-first again (PP-OCRv6 det
  1.5x slower);
- a convolution becomes channels-last only when every path from its result ends in a
  convolution, dot_general, transpose or reduce: XLA runs a channels-first 1x1 convolution as a
  dot that writes that layout for free, and a transpose stopped by a reshape (ShuffleNet's
  channel shuffle, PP-OCR's sequence head) would add a copy. 1-D convolutions keep their layout
  (Silero VAD's STFT convolutions were 20% slower channels-last).

Numerics are unchanged: the same ops on the same elements, in another order in memory.
"""

from __future__ import annotations

import dataclasses
from typing import ClassVar

import numpy as np
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import stablehlo

from onnx_stablehlo.passes.base import ModulePass
from onnx_stablehlo.passes.fold_transposes import DotGeneralOfTranspose, TransposeOfTranspose
from onnx_stablehlo.passes.ir_utils import (
    constant_array,
    constant_attr,
    conv_numbers_with,
    defining_op,
    defining_op_named,
    dense_attr,
    element_type_of,
    i64_array,
    read_i64_array,
    shape_of,
    tensor_type,
)
from onnx_stablehlo.passes.patterns import PatternRewritePass, RewritePattern, Rewriter

__all__ = ["SinkTransposesPass", "ELEMENTWISE_OPS"]

ELEMENTWISE_OPS = tuple(
    f"stablehlo.{name}"
    for name in (
        "abs", "add", "and", "atan2", "cbrt", "ceil", "clamp", "compare", "convert", "cosine",
        "divide", "exponential", "exponential_minus_one", "floor", "is_finite", "log",
        "log_plus_one", "logistic", "maximum", "minimum", "multiply", "negate", "not", "or",
        "popcnt", "power", "remainder", "round_nearest_afz", "round_nearest_even", "rsqrt",
        "select", "shift_left", "shift_right_arithmetic", "shift_right_logical", "sign", "sine",
        "sqrt", "subtract", "tan", "tanh", "xor",
    )
)
"""Ops applied element by element to operands of one shape (clamp and select also take rank-0
operands, which broadcast)."""


def _permuted(shape: list[int], permutation: list[int]) -> list[int]:
    """The shape ``s`` with ``transpose(x: s, permutation)`` of shape ``shape``."""
    source = [0] * len(shape)
    for position, axis in enumerate(permutation):
        source[axis] = shape[position]
    return source


def _to_channels_first(rank: int) -> list[int]:
    """The permutation of ``transpose`` from [b, s..., f] to [b, f, s...]."""
    return [0, rank - 1, *range(1, rank - 1)]


def _transpose_of(value: ir.Value) -> tuple[ir.Value, list[int]] | None:
    """``(x, p)`` when ``value`` is ``transpose(x, p)`` back to channels-first (the transposes
    this pass moves; others, such as a tap sum's own transpose to channels-last, stay)."""
    op = defining_op_named(value, "stablehlo.transpose")
    if op is None:
        return None
    permutation = read_i64_array(op, "permutation")
    if len(permutation) < 3 or permutation != _to_channels_first(len(permutation)):
        return None
    return op.operands[0], permutation


def _rebuild_below(rw: Rewriter, op: ir.Operation, operands: list[ir.Value], p: list[int], attributes: dict) -> None:
    """Replaces ``op`` by ``transpose(op'(operands), p)``: the same op on ``operands`` (taken
    from below its ``transpose(., p)`` operands) with ``attributes``, in the source layout, its
    region moved over, and the transpose back to ``op``'s result type."""
    result_type = op.results[0].type
    new = rw.create(
        op.name, operands, [tensor_type(_permuted(list(shape_of(result_type)), p), element_type_of(result_type))],
        attributes, regions=len(op.regions),
    )
    for old, region in zip(op.regions, new.regions):
        old.blocks[0].append_to(region)
    back = rw.create("stablehlo.transpose", [new.results[0]], [result_type], {"permutation": i64_array(p)})
    rw.replace_op(op, [back.result])


_MAX_CONSTANT_ELEMENTS = 1 << 20
"""A non-splat constant operand up to this size is transposed at compile time (AveragePool's
per-position divisor counts); a larger one stops the transpose."""


def _constant_of(value: ir.Value) -> tuple[ir.Value, bool] | None:
    """``(constant, barriered)`` when ``value`` is a constant small enough to transpose, or one
    passed through a one-operand ``optimization_barrier`` (``builders.divide`` keeps a constant
    divisor so, so that XLA does not multiply by its reciprocal); else None."""
    barriered = False
    barrier = defining_op_named(value, "stablehlo.optimization_barrier")
    if barrier is not None and len(barrier.operands) == 1:
        value, barriered = barrier.operands[0], True
    attr = constant_attr(value)
    if attr is None or (not attr.is_splat and int(np.prod(shape_of(value))) > _MAX_CONSTANT_ELEMENTS):
        return None
    return value, barriered


def _permuted_constant(rw: Rewriter, value: ir.Value, barriered: bool, p: list[int]) -> ir.Value:
    """The constant ``c`` with ``transpose(c, p)`` equal to constant ``value`` (barriered again)."""
    attr = constant_attr(value)
    new_type = tensor_type(_permuted(list(shape_of(value)), p), element_type_of(value))
    if attr.is_splat:
        new_attr = ir.DenseElementsAttr.get_splat(new_type, attr.get_splat_value())
    else:
        inverse = [p.index(d) for d in range(len(p))]
        new_attr = dense_attr(np.transpose(constant_array(value), inverse), new_type)
    result = rw.constant(new_attr)
    if barriered:
        result = rw.create("stablehlo.optimization_barrier", [result], [new_type]).results[0]
    return result


class ElementwiseOfTranspose(RewritePattern):
    """f(transpose(x, p), ...) -> transpose(f(x, ...'), p) for an elementwise ``f``.

    Constraints: static shapes; every operand of the result's rank is a transpose with the same
    ``p``, a ``broadcast_in_dim`` or a constant of at most ``_MAX_CONSTANT_ELEMENTS`` (possibly
    behind an ``optimization_barrier``), and at least one is a transpose.
    """

    root = ELEMENTWISE_OPS

    def match_and_rewrite(self, op: ir.Operation, rw: Rewriter) -> bool:
        result_shape = shape_of(op.results[0])
        if result_shape is None or None in result_shape or len(op.results) != 1:
            return rw.fail(op, "the result shape is not static")
        rank = len(result_shape)
        permutation = None
        for operand in op.operands:
            found = _transpose_of(operand)
            if found is not None and len(shape_of(operand)) == rank:
                if permutation is not None and found[1] != permutation:
                    return rw.fail(op, "operands are transposed by different permutations")
                permutation = found[1]
        if permutation is None:
            return rw.fail(op, "no operand is a transpose")
        source_shape = _permuted(list(result_shape), permutation)
        operands = []
        for operand in op.operands:
            shape = shape_of(operand)
            if len(shape) == 0:
                operands.append(operand)
                continue
            found = _transpose_of(operand)
            if found is not None:
                operands.append(found[0])
                continue
            producer = defining_op(operand)
            if producer is not None and producer.name == "stablehlo.broadcast_in_dim":
                dims = [permutation[d] for d in read_i64_array(producer, "broadcast_dimensions")]
                operands.append(rw.create(
                    "stablehlo.broadcast_in_dim", [producer.operands[0]],
                    [tensor_type(source_shape, element_type_of(operand))],
                    {"broadcast_dimensions": i64_array(dims)},
                ).result)
                continue
            found_constant = _constant_of(operand)
            if found_constant is not None:
                operands.append(_permuted_constant(rw, found_constant[0], found_constant[1], permutation))
                continue
            return rw.fail(op, "an operand is neither a transpose, a broadcast nor a constant")
        _rebuild_below(rw, op, operands, permutation, {name: op.attributes[name] for name in op.attributes})
        return True


class ReduceOfTranspose(RewritePattern):
    """reduce(transpose(x, p), init) over ``dims`` -> [transpose](reduce(x, init) over ``p[dims]``).

    The result is transposed when ``p`` reorders the kept dims. Constraints: one operand (a
    variadic reduce is left alone), a static shape.
    """

    root = "stablehlo.reduce"

    def match_and_rewrite(self, op: ir.Operation, rw: Rewriter) -> bool:
        if len(op.operands) != 2:
            return rw.fail(op, "a variadic reduce")
        found = _transpose_of(op.operands[0])
        if found is None:
            return rw.fail(op, "the operand is not a transpose")
        source, permutation = found
        source_shape = shape_of(source)
        if source_shape is None or None in source_shape:
            return rw.fail(op, "the operand shape is not static")
        dims = read_i64_array(op, "dimensions")
        reduced = sorted(permutation[d] for d in dims)
        kept_source = [d for d in range(len(source_shape)) if d not in reduced]  # the new result's dims
        kept_wanted = [permutation[d] for d in range(len(permutation)) if d not in dims]  # the old one's
        new = rw.create(
            "stablehlo.reduce", [source, op.operands[1]],
            [tensor_type([source_shape[d] for d in kept_source], element_type_of(op.results[0]))],
            {"dimensions": i64_array(reduced)}, regions=1,
        )
        op.regions[0].blocks[0].append_to(new.regions[0])
        result = new.results[0]
        order = [kept_source.index(d) for d in kept_wanted]
        if order != list(range(len(order))):
            result = rw.create("stablehlo.transpose", [result], [op.results[0].type], {"permutation": i64_array(order)}).result
        rw.replace_op(op, [result])
        return True



_ABSORBING_OPS = ("stablehlo.convolution", "stablehlo.dot_general", "stablehlo.transpose", "stablehlo.reduce")
_CARRYING_OPS = ELEMENTWISE_OPS + ("stablehlo.pad", "stablehlo.slice", "stablehlo.concatenate", "stablehlo.reduce_window")
# Producers of the other operands of an op a transpose sinks through that do not stop it: a
# broadcast (rebuilt permuted), a transpose, or what becomes one (a convolution's result, an op
# the same transpose sinks through: the x of x * sigmoid(x)); constants: see _constant_of.
_FOLLOWING_PRODUCERS = _CARRYING_OPS + (
    "stablehlo.broadcast_in_dim", "stablehlo.transpose", "stablehlo.convolution",
)


def _reaches_only_absorbers(value: ir.Value, seen: set[int], budget: list[int]) -> bool:
    """Whether a transpose of ``value`` would sink, through elementwise ops, pads, slices,
    reduce_windows and concatenates, only into ops that take it for free: a convolution or
    dot_general (folded into its dims), a transpose (merged; the next tap sum's cancels it) or a
    reduce (folded into its dims, on a smaller result). The other operands of an elementwise op
    or concatenate must come from ``_FOLLOWING_PRODUCERS``, be constants ``_constant_of``
    accepts, or be rank-0, or the sunk transpose would stop there."""
    for use in value.uses:
        user = use.owner
        user = user.operation if isinstance(user, ir.OpView) else user
        budget[0] -= 1
        if budget[0] < 0:
            return False
        if hash(user) in seen:
            continue
        name = user.name
        if name in _ABSORBING_OPS:
            if name == "stablehlo.reduce" and len(user.operands) != 2:
                return False
            continue
        if name not in _CARRYING_OPS or (name == "stablehlo.reduce_window" and len(user.operands) != 2):
            return False
        if name in ELEMENTWISE_OPS or name == "stablehlo.concatenate":
            for operand in user.operands:
                if operand == value or len(shape_of(operand) or ()) == 0:
                    continue
                producer = defining_op(operand)
                if producer is None:
                    return False
                if producer.name not in _FOLLOWING_PRODUCERS and _constant_of(operand) is None:
                    return False
        seen.add(hash(user))
        if not _reaches_only_absorbers(user.results[0], seen, budget):
            return False
    return True


_LOOKAHEAD_USES = 4096
"""How many uses ``ConvolutionToChannelsLast`` follows from one convolution before giving up."""


class ConvolutionToChannelsLast(RewritePattern):
    """convolution(x, k) -> [b, f, s...] -> transpose(convolution(x, k) -> [b, s..., f]).

    XLA CPU computes every convolution channels-last and, for a channels-first result, copies
    it into that layout; with the transpose explicit, the other patterns carry it down to the
    next convolution (which absorbs it) or to the next depthwise tap sum (whose channels-last
    transpose cancels it). Constraints: 2-D or more spatial dims, static result shape, output
    feature dim not already last, and every path from the result through elementwise ops,
    pads, slices, reduce_windows and concatenates ends in a convolution, dot_general,
    transpose or reduce.
    """

    root = "stablehlo.convolution"

    def match_and_rewrite(self, op: ir.Operation, rw: Rewriter) -> bool:
        numbers = stablehlo.ConvDimensionNumbers(op.attributes["dimension_numbers"])
        shape = shape_of(op.results[0])
        if shape is None or None in shape:
            return rw.fail(op, "the result shape is not static")
        rank = len(shape)
        if rank < 4:
            return rw.fail(op, "a 1-D convolution (kept channels-first)")
        batch, feature = numbers.output_batch_dimension, numbers.output_feature_dimension
        spatial = list(numbers.output_spatial_dimensions)
        if [batch, *spatial, feature] == list(range(rank)):
            return rw.fail(op, "the output is already channels-last")
        if not _reaches_only_absorbers(op.results[0], set(), [_LOOKAHEAD_USES]):
            # A 1x1 convolution XLA runs as a dot writes channels-first at no cost; a transpose
            # stopped by a reshape (ShuffleNet's channel shuffle) or a resize would be a copy
            # that was not there (PP-OCRv4 det and rec were 1.3x slower).
            return rw.fail(op, "a transpose of the result would stop short of a convolution")
        order = [batch, *spatial, feature]  # new dim i holds old dim order[i]
        attributes = {name: op.attributes[name] for name in op.attributes}
        attributes["dimension_numbers"] = conv_numbers_with(
            numbers, output_batch_dimension=0, output_feature_dimension=rank - 1,
            output_spatial_dimensions=list(range(1, rank - 1)),
        )
        new = rw.create(
            "stablehlo.convolution", list(op.operands),
            [tensor_type([shape[d] for d in order], element_type_of(op.results[0]))], attributes,
        )
        back = [order.index(d) for d in range(rank)]
        result = rw.create("stablehlo.transpose", [new.result], [op.results[0].type], {"permutation": i64_array(back)})
        rw.replace_op(op, [result.result])
        return True


class _LayoutOpOfTranspose(RewritePattern):
    """op(transpose(x, p), ...) -> transpose(op(x, ...), p) for an op whose attributes hold one
    entry per dim (``permuted_attributes`` reorders them); its other operands (a pad value, an
    init) stay. Constraints: ``operand_count`` operands (not variadic), a static result shape."""

    operand_count: ClassVar[int] = 1

    def permuted_attributes(self, op: ir.Operation, p: list[int]) -> dict:
        raise NotImplementedError

    def match_and_rewrite(self, op: ir.Operation, rw: Rewriter) -> bool:
        if len(op.operands) != self.operand_count:
            return rw.fail(op, f"{len(op.operands)} operands (variadic)")
        found = _transpose_of(op.operands[0])
        if found is None:
            return rw.fail(op, "the operand is not a transpose")
        shape = shape_of(op.results[0])
        if shape is None or None in shape:
            return rw.fail(op, "the result shape is not static")
        source, p = found
        _rebuild_below(rw, op, [source, *list(op.operands)[1:]], p, self.permuted_attributes(op, p))
        return True


class PadOfTranspose(_LayoutOpOfTranspose):
    """pad(transpose(x, p), v) -> transpose(pad(x, v), p) with the paddings permuted."""

    root = "stablehlo.pad"
    operand_count = 2

    def permuted_attributes(self, op: ir.Operation, p: list[int]) -> dict:
        names = ("edge_padding_low", "edge_padding_high", "interior_padding")
        return {name: i64_array(_permuted(read_i64_array(op, name), p)) for name in names}


class SliceOfTranspose(_LayoutOpOfTranspose):
    """slice(transpose(x, p)) -> transpose(slice(x), p) with the bounds permuted."""

    root = "stablehlo.slice"

    def permuted_attributes(self, op: ir.Operation, p: list[int]) -> dict:
        names = ("start_indices", "limit_indices", "strides")
        return {name: i64_array(_permuted(read_i64_array(op, name), p)) for name in names}


class ConcatenateOfTranspose(RewritePattern):
    """concatenate(transpose(x, p), transpose(y, p), ...) along d -> transpose(concatenate(x, y, ...) along p[d], p)."""

    root = "stablehlo.concatenate"

    def match_and_rewrite(self, op: ir.Operation, rw: Rewriter) -> bool:
        found = [_transpose_of(operand) for operand in op.operands]
        if any(f is None for f in found) or any(f[1] != found[0][1] for f in found):
            return rw.fail(op, "not every operand is a transpose by one permutation")
        p = found[0][1]
        shape = shape_of(op.results[0])
        if shape is None or None in shape:
            return rw.fail(op, "the result shape is not static")
        dimension = ir.IntegerAttr(op.attributes["dimension"]).value
        attributes = {"dimension": ir.IntegerAttr.get(ir.IntegerType.get_signless(64), p[dimension])}
        _rebuild_below(rw, op, [f[0] for f in found], p, attributes)
        return True


class ReduceWindowOfTranspose(_LayoutOpOfTranspose):
    """reduce_window(transpose(x, p), init) -> transpose(reduce_window(x, init), p) with the
    window dims, strides, dilations and padding permuted (AveragePool, LpPool, a MaxPool that
    does not run as slices).

    Constraint: one operand, a static result shape.
    """

    root = "stablehlo.reduce_window"
    operand_count = 2

    def permuted_attributes(self, op: ir.Operation, p: list[int]) -> dict:
        attributes = {}
        for name in ("window_dimensions", "window_strides", "base_dilations", "window_dilations"):
            if name in op.attributes:
                attributes[name] = i64_array(_permuted(read_i64_array(op, name), p))
        if "padding" in op.attributes:
            padding = np.asarray(ir.DenseIntElementsAttr(op.attributes["padding"]), dtype=np.int64).reshape(len(p), 2)
            attributes["padding"] = ir.DenseIntElementsAttr.get(
                np.stack(_permuted(list(padding), p)),
                type=ir.RankedTensorType.get([len(p), 2], ir.IntegerType.get_signless(64)),
            )
        return attributes


class ConvolutionOfTranspose(RewritePattern):
    """convolution(transpose(x, p), k) -> convolution(x, k) with the input dims mapped through ``p``."""

    root = "stablehlo.convolution"

    def match_and_rewrite(self, op: ir.Operation, rw: Rewriter) -> bool:
        found = _transpose_of(op.operands[0])
        if found is None:
            return rw.fail(op, "the input is not a transpose")
        source, p = found
        numbers = stablehlo.ConvDimensionNumbers(op.attributes["dimension_numbers"])
        attributes = {name: op.attributes[name] for name in op.attributes}
        attributes["dimension_numbers"] = conv_numbers_with(
            numbers,
            input_batch_dimension=p[numbers.input_batch_dimension],
            input_feature_dimension=p[numbers.input_feature_dimension],
            input_spatial_dimensions=[p[d] for d in numbers.input_spatial_dimensions],
        )
        new = rw.create("stablehlo.convolution", [source, op.operands[1]], [op.results[0].type], attributes)
        rw.replace_op(op, [new.result])
        return True


@dataclasses.dataclass(frozen=True)
class SinkTransposesPass(PatternRewritePass, ModulePass):
    """Makes 2-D convolutions channels-last and moves transposes down to their users.

    Rewrites:

    - ``convolution(x, k) -> [b, f, 0, 1]`` -> ``transpose(convolution(x, k) -> [b, 0, 1, f], [0, 3, 1, 2])``
    - ``hardswish(transpose(taps, [0, 3, 1, 2]))`` -> ``transpose(hardswish(taps), [0, 3, 1, 2])``
    - ``reduce(transpose(x, [0, 3, 1, 2])) over [2, 3]`` -> ``reduce(x) over [1, 2]``
    - ``convolution(transpose(x, p), k)`` -> ``convolution(x, k)``, ``p`` in the input dims

    For XLA CPU, after ``unroll-depthwise-conv``; ``CompiledModel`` runs it on CPU.
    """

    name: ClassVar[str] = "sink-transposes"

    def patterns(self) -> list[RewritePattern]:
        return [
            TransposeOfTranspose(), ElementwiseOfTranspose(), ReduceOfTranspose(), ConvolutionOfTranspose(),
            ConvolutionToChannelsLast(), PadOfTranspose(), SliceOfTranspose(), ConcatenateOfTranspose(),
            ReduceWindowOfTranspose(), DotGeneralOfTranspose(),
        ]
