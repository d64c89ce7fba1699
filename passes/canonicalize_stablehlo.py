"""``canonicalize-stablehlo``: algebraic identities and no-op removal on StableHLO.

Upstream ``canonicalize`` does not fold ``x * 1.0`` in StableHLO (jaxlib does not register
``stablehlo-aggressive-simplification``); this pass does, keeping IEEE semantics: a float rule
applies only when it holds for every input, NaN, infinities and both zeros included. Named
``canonicalize-stablehlo`` so it never collides with the upstream ``canonicalize``.
"""

from __future__ import annotations

import dataclasses
import math
from typing import ClassVar

import numpy as np
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import stablehlo

from onnx_stablehlo.passes.base import ModulePass
from onnx_stablehlo.passes.ir_utils import (
    dense_attr,
    defining_op_named,
    element_type_of,
    is_float,
    is_integer,
    is_splat_of,
    is_static,
    numpy_dtype,
    read_i64_array,
    shape_of,
    splat_scalar,
)
from onnx_stablehlo.passes.patterns import PatternRewritePass, RewritePattern, Rewriter

__all__ = ["CanonicalizeStableHLOPass"]


def _result(op: ir.Operation) -> ir.Value:
    return op.results[0]


def _replace_by_operand(op: ir.Operation, value: ir.Value, rw: Rewriter, why: str) -> bool:
    if value.type != _result(op).type:
        return rw.fail(op, f"{why}, but the operand type {value.type} differs from the result type")
    rw.replace_op(op, [value])
    return True


class AddOfZero(RewritePattern):
    """x + 0 -> x and 0 + x -> x for integers; x + (-0.0) -> x for floats.

    ``x + (+0.0)`` is kept: for x = -0.0 it gives +0.0.
    """

    root = "stablehlo.add"

    def match_and_rewrite(self, op: ir.Operation, rw: Rewriter) -> bool:
        lhs, rhs = op.operands
        element = element_type_of(lhs)
        identity = -0.0 if is_float(element) else 0
        if not (is_float(element) or is_integer(element)):
            return rw.fail(op, f"element type {element} is neither float nor integer")
        for x, other in ((lhs, rhs), (rhs, lhs)):
            if is_splat_of(other, identity):
                return _replace_by_operand(op, x, rw, "adds zero")
        if is_float(element) and (is_splat_of(rhs, 0.0) or is_splat_of(lhs, 0.0)):
            return rw.fail(op, "adds +0.0, which turns -0.0 into +0.0")
        return rw.fail(op, "no operand is a splat zero")


class SubtractOfZero(RewritePattern):
    """x - 0 -> x for integers; x - (+0.0) -> x for floats.

    ``x - (-0.0)`` is kept: for x = -0.0 it gives +0.0.
    """

    root = "stablehlo.subtract"

    def match_and_rewrite(self, op: ir.Operation, rw: Rewriter) -> bool:
        lhs, rhs = op.operands
        element = element_type_of(lhs)
        if is_float(element):
            if is_splat_of(rhs, 0.0):
                return _replace_by_operand(op, lhs, rw, "subtracts +0.0")
            if is_splat_of(rhs, -0.0):
                return rw.fail(op, "subtracts -0.0, which turns -0.0 into +0.0")
        elif is_integer(element) and is_splat_of(rhs, 0):
            return _replace_by_operand(op, lhs, rw, "subtracts zero")
        return rw.fail(op, "rhs is not a splat zero")


class SubtractOfSelf(RewritePattern):
    """x - x -> 0 for integers (static shapes).

    Floats are kept: inf - inf and NaN - NaN are NaN.
    """

    root = "stablehlo.subtract"

    def match_and_rewrite(self, op: ir.Operation, rw: Rewriter) -> bool:
        lhs, rhs = op.operands
        if lhs != rhs:
            return rw.fail(op, "operands differ")
        element = element_type_of(lhs)
        if not is_integer(element) or numpy_dtype(element) is None:
            return rw.fail(op, "x - x is 0 only for integers (inf - inf is NaN)")
        result = _result(op)
        if not is_static(result):
            return rw.fail(op, "result shape is dynamic")
        zero = rw.constant(dense_attr(np.zeros((1,), numpy_dtype(element)), result.type))
        rw.replace_op(op, [zero])
        return True


class MultiplyByOne(RewritePattern):
    """x * 1 -> x and 1 * x -> x (integers and floats; exact for NaN and -0.0)."""

    root = "stablehlo.multiply"

    def match_and_rewrite(self, op: ir.Operation, rw: Rewriter) -> bool:
        lhs, rhs = op.operands
        for x, other in ((lhs, rhs), (rhs, lhs)):
            if is_splat_of(other, 1):
                return _replace_by_operand(op, x, rw, "multiplies by one")
        return rw.fail(op, "no operand is a splat one")


class MultiplyByZero(RewritePattern):
    """x * 0 -> 0 and 0 * x -> 0 for integers.

    Floats are kept: NaN * 0 is NaN, inf * 0 is NaN and -1 * 0 is -0.0.
    """

    root = "stablehlo.multiply"

    def match_and_rewrite(self, op: ir.Operation, rw: Rewriter) -> bool:
        lhs, rhs = op.operands
        if not is_integer(element_type_of(lhs)):
            return rw.fail(op, "x * 0 is 0 only for integers (NaN * 0 is NaN)")
        for zero in (rhs, lhs):
            if is_splat_of(zero, 0):
                return _replace_by_operand(op, zero, rw, "multiplies by zero")
        return rw.fail(op, "no operand is a splat zero")


class DivideByOne(RewritePattern):
    """x / 1 -> x (integers and floats)."""

    root = "stablehlo.divide"

    def match_and_rewrite(self, op: ir.Operation, rw: Rewriter) -> bool:
        lhs, rhs = op.operands
        if is_splat_of(rhs, 1):
            return _replace_by_operand(op, lhs, rw, "divides by one")
        return rw.fail(op, "rhs is not a splat one")


class InvolutionOfInvolution(RewritePattern):
    """negate(negate(x)) -> x; not(not(x)) -> x (exact, integer wrap-around included)."""

    root = ("stablehlo.negate", "stablehlo.not")

    def match_and_rewrite(self, op: ir.Operation, rw: Rewriter) -> bool:
        inner = defining_op_named(op.operands[0], op.name)
        if inner is None:
            return rw.fail(op, f"operand is not produced by {op.name}")
        return _replace_by_operand(op, inner.operands[0], rw, f"{op.name} twice")


class IdempotentOfSame(RewritePattern):
    """max(x, x) -> x; min(x, x) -> x; and(x, x) -> x; or(x, x) -> x."""

    root = ("stablehlo.maximum", "stablehlo.minimum", "stablehlo.and", "stablehlo.or")

    def match_and_rewrite(self, op: ir.Operation, rw: Rewriter) -> bool:
        lhs, rhs = op.operands
        if lhs != rhs:
            return rw.fail(op, "operands differ")
        return _replace_by_operand(op, lhs, rw, "same operand twice")


class SelectOfSameOperands(RewritePattern):
    """select(p, x, x) -> x."""

    root = "stablehlo.select"

    def match_and_rewrite(self, op: ir.Operation, rw: Rewriter) -> bool:
        _, on_true, on_false = op.operands
        if on_true != on_false:
            return rw.fail(op, "branches differ")
        return _replace_by_operand(op, on_true, rw, "both branches are the same value")


class SelectOfConstantPredicate(RewritePattern):
    """select(splat true, a, b) -> a; select(splat false, a, b) -> b."""

    root = "stablehlo.select"

    def match_and_rewrite(self, op: ir.Operation, rw: Rewriter) -> bool:
        predicate, on_true, on_false = op.operands
        value = splat_scalar(predicate)
        if value is None:
            return rw.fail(op, "predicate is not a splat constant")
        chosen = on_true if value else on_false
        return _replace_by_operand(op, chosen, rw, "constant predicate")


class IdentityTranspose(RewritePattern):
    """transpose(x, [0, 1, ..., n-1]) -> x."""

    root = "stablehlo.transpose"

    def match_and_rewrite(self, op: ir.Operation, rw: Rewriter) -> bool:
        permutation = read_i64_array(op, "permutation")
        if permutation != list(range(len(permutation))):
            return rw.fail(op, f"permutation {permutation} is not the identity")
        return _replace_by_operand(op, op.operands[0], rw, "identity permutation")


class IdentityReshape(RewritePattern):
    """reshape(x) -> x when the result type is x's type."""

    root = "stablehlo.reshape"

    def match_and_rewrite(self, op: ir.Operation, rw: Rewriter) -> bool:
        operand = op.operands[0]
        if operand.type != _result(op).type:
            return rw.fail(op, "the reshape changes the shape")
        rw.replace_op(op, [operand])
        return True


class ReshapeOfReshape(RewritePattern):
    """reshape(reshape(x)) -> reshape(x) (static shapes)."""

    root = "stablehlo.reshape"

    def match_and_rewrite(self, op: ir.Operation, rw: Rewriter) -> bool:
        inner = defining_op_named(op.operands[0], "stablehlo.reshape")
        if inner is None:
            return rw.fail(op, "operand is not produced by a reshape")
        source = inner.operands[0]
        result = _result(op)
        if not (is_static(source) and is_static(result)):
            return rw.fail(op, "dynamic shapes")
        if source.type == result.type:
            rw.replace_op(op, [source])
            return True
        new = rw.create("stablehlo.reshape", [source], [result.type])
        rw.replace_op(op, [new.result])
        return True


class IdentityConvert(RewritePattern):
    """convert(x) -> x when the result type is x's type."""

    root = "stablehlo.convert"

    def match_and_rewrite(self, op: ir.Operation, rw: Rewriter) -> bool:
        operand = op.operands[0]
        if operand.type != _result(op).type:
            return rw.fail(op, "the convert changes the type")
        rw.replace_op(op, [operand])
        return True


class IdentityBroadcastInDim(RewritePattern):
    """broadcast_in_dim(x, dims = [0, 1, ..., n-1]) -> x when the result type is x's type."""

    root = "stablehlo.broadcast_in_dim"

    def match_and_rewrite(self, op: ir.Operation, rw: Rewriter) -> bool:
        operand = op.operands[0]
        dims = read_i64_array(op, "broadcast_dimensions")
        if operand.type != _result(op).type:
            return rw.fail(op, "the broadcast changes the shape")
        if dims != list(range(len(dims))):
            return rw.fail(op, f"dims {dims} permute the operand")
        rw.replace_op(op, [operand])
        return True


class FullSlice(RewritePattern):
    """slice(x, start = 0, limit = shape, strides = 1) -> x."""

    root = "stablehlo.slice"

    def match_and_rewrite(self, op: ir.Operation, rw: Rewriter) -> bool:
        operand = op.operands[0]
        starts = read_i64_array(op, "start_indices")
        limits = read_i64_array(op, "limit_indices")
        strides = read_i64_array(op, "strides")
        shape = shape_of(operand)
        if operand.type != _result(op).type or shape is None:
            return rw.fail(op, "the slice changes the shape")
        if any(s != 0 for s in starts) or list(limits) != list(shape) or any(s != 1 for s in strides):
            return rw.fail(op, "not a full slice")
        rw.replace_op(op, [operand])
        return True


class SingleOperandConcatenate(RewritePattern):
    """concatenate(x) -> x."""

    root = "stablehlo.concatenate"

    def match_and_rewrite(self, op: ir.Operation, rw: Rewriter) -> bool:
        if len(op.operands) != 1:
            return rw.fail(op, f"{len(op.operands)} operands")
        return _replace_by_operand(op, op.operands[0], rw, "one operand")


class IdentityPad(RewritePattern):
    """pad(x, v, low = 0, high = 0, interior = 0) -> x."""

    root = "stablehlo.pad"

    def match_and_rewrite(self, op: ir.Operation, rw: Rewriter) -> bool:
        pads = [read_i64_array(op, n) for n in ("edge_padding_low", "edge_padding_high", "interior_padding")]
        if any(p != 0 for pad in pads for p in pad):
            return rw.fail(op, "non-zero padding")
        return _replace_by_operand(op, op.operands[0], rw, "zero padding")


class ReverseOfReverse(RewritePattern):
    """reverse(reverse(x, dims), dims) -> x (same dims, in any order)."""

    root = "stablehlo.reverse"

    def match_and_rewrite(self, op: ir.Operation, rw: Rewriter) -> bool:
        inner = defining_op_named(op.operands[0], "stablehlo.reverse")
        if inner is None:
            return rw.fail(op, "operand is not produced by a reverse")
        if sorted(read_i64_array(op, "dimensions")) != sorted(read_i64_array(inner, "dimensions")):
            return rw.fail(op, "the two reverses flip different dims")
        return _replace_by_operand(op, inner.operands[0], rw, "reverse twice")


class ConvolutionOfZeroPad(RewritePattern):
    """convolution(pad(x, 0, low, high), k) -> convolution(x, k) with ``low``/``high`` added to its padding.

    A convolution pads with zeros itself, so an explicit zero pad of the input's spatial dims
    (the TorchScript exporter writes one for TF-style "same" padding) folds into it, and XLA
    does not materialize the padded copy. Constraints: the pad value is a splat ``+0.0`` (or
    integer 0); no interior padding; no padding on the batch or feature dims; pads are not
    negative; the convolution has no lhs dilation.
    """

    root = "stablehlo.convolution"

    def match_and_rewrite(self, op: ir.Operation, rw: Rewriter) -> bool:
        pad = defining_op_named(op.operands[0], "stablehlo.pad")
        if pad is None:
            return rw.fail(op, "input is not produced by a pad")
        value = splat_scalar(pad.operands[1])
        if value is None or value != 0 or (isinstance(value, float) and math.copysign(1.0, value) < 0):
            return rw.fail(op, "pad value is not +0")
        low, high = read_i64_array(pad, "edge_padding_low"), read_i64_array(pad, "edge_padding_high")
        if any(read_i64_array(pad, "interior_padding")) or min(low + high) < 0:
            return rw.fail(op, "interior or negative padding")
        numbers = stablehlo.ConvDimensionNumbers(op.attributes["dimension_numbers"])
        spatial = list(numbers.input_spatial_dimensions)
        if any(low[d] or high[d] for d in range(len(low)) if d not in spatial):
            return rw.fail(op, "pads the batch or feature dim")
        if "lhs_dilation" in op.attributes and any(v != 1 for v in read_i64_array(op, "lhs_dilation")):
            return rw.fail(op, "lhs dilation")
        padding = (
            np.asarray(ir.DenseIntElementsAttr(op.attributes["padding"]), dtype=np.int64).reshape(len(spatial), 2)
            if "padding" in op.attributes else np.zeros((len(spatial), 2), np.int64)
        )
        padding = padding + np.array([[low[d], high[d]] for d in spatial], dtype=np.int64)
        attributes = {name: op.attributes[name] for name in op.attributes}
        attributes["padding"] = ir.DenseIntElementsAttr.get(padding)
        folded = rw.create("stablehlo.convolution", [pad.operands[0], op.operands[1]], [op.results[0].type], attributes)
        rw.replace_op(op, [folded.result])
        return True


@dataclasses.dataclass(frozen=True)
class CanonicalizeStableHLOPass(PatternRewritePass, ModulePass):
    """Removes algebraic identities and no-op ops, keeping IEEE float semantics.

    Rewrites (``x`` any value, constants are splats):

    - ``x + 0 -> x`` (integers); ``x + (-0.0) -> x`` (floats; ``x + 0.0`` is kept, it maps
      -0.0 to +0.0); both operand orders
    - ``x - 0 -> x`` (integers); ``x - (+0.0) -> x`` (floats; ``x - (-0.0)`` is kept)
    - ``x - x -> 0`` (integers only: ``inf - inf`` is NaN)
    - ``x * 1 -> x``, ``1 * x -> x`` (integers and floats)
    - ``x * 0 -> 0`` (integers only: ``NaN * 0`` is NaN, ``-1.0 * 0.0`` is -0.0)
    - ``x / 1 -> x``
    - ``negate(negate(x)) -> x``, ``not(not(x)) -> x``
    - ``max(x, x) -> x``, ``min(x, x) -> x``, ``and(x, x) -> x``, ``or(x, x) -> x``
    - ``select(p, x, x) -> x``; ``select(true, a, b) -> a``; ``select(false, a, b) -> b``
    - ``transpose(x, identity) -> x``; ``reshape(x) -> x``, ``convert(x) -> x`` and
      ``broadcast_in_dim(x, [0..n-1]) -> x`` when the result type is x's type
    - ``reshape(reshape(x)) -> reshape(x)`` (static shapes)
    - ``slice(x, 0, shape, 1) -> x``; ``concatenate(x) -> x``; ``pad(x, v, 0, 0, 0) -> x``
    - ``reverse(reverse(x, d), d) -> x``
    - ``convolution(pad(x, +0), k) -> convolution(x, k)`` with the pads added to its padding
      (spatial dims only, no interior padding)

    A rewrite applies only when the replacement has exactly the result's type. Ops left
    unused are erased when they have no side effects.
    """

    name: ClassVar[str] = "canonicalize-stablehlo"

    def patterns(self) -> list[RewritePattern]:
        return [
            AddOfZero(),
            SubtractOfZero(),
            SubtractOfSelf(),
            MultiplyByOne(),
            MultiplyByZero(),
            DivideByOne(),
            InvolutionOfInvolution(),
            IdempotentOfSame(),
            SelectOfSameOperands(),
            SelectOfConstantPredicate(),
            IdentityTranspose(),
            IdentityReshape(),
            ReshapeOfReshape(),
            IdentityConvert(),
            IdentityBroadcastInDim(),
            FullSlice(),
            SingleOperandConcatenate(),
            IdentityPad(),
            ReverseOfReverse(),
            ConvolutionOfZeroPad(),
        ]
