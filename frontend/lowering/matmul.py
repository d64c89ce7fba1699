"""Lowering rules: matrix products (MatMul, Gemm, Einsum, MatMulInteger, QLinearMatMul).

Every product becomes ``stablehlo.dot_general`` with default precision; contracting and batch
dims replace explicit transposes of the operands (a result is transposed only where ONNX's
dim order differs from ``dot_general``'s batch, lhs-free, rhs-free order).

- ``MatMul(a, b)`` -> ``dot_general`` with numpy ``matmul`` semantics: a 1-D operand contracts
  directly (no reshape), a rank-2 ``b`` contracts without batch dims (``[B, S, K] @ [K, N]``
  needs no broadcast of the weight), and otherwise the batch dims are broadcast to their common
  shape and become ``dot_general`` batch dims.
- ``Gemm(A, B, C)`` -> ``alpha * dot_general(A, B) + beta * C``; ``transA``/``transB`` only pick
  the contracting dims.
- ``Einsum`` -> a chain of pairwise ``dot_general`` (+ ``reduce`` for labels summed within one
  operand, + a diagonal mask for labels repeated within one operand, + ``transpose``).
- ``MatMulInteger`` / ``QLinearMatMul`` -> an 8-bit ``dot_general`` with an int32 result (an
  integer GEMM on devices that have one); zero points enter as row/column-sum corrections.

float16/bfloat16 products accumulate in float32 (``dot_general`` with an f32 result, then
``convert``), so long contractions keep float32 accuracy.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import stablehlo

from onnx_stablehlo.errors import ShapeError
from onnx_stablehlo.frontend import builders, dtypes
from onnx_stablehlo.frontend.context import LoweringContext, OnnxNode
from onnx_stablehlo.frontend.dtypes import DataType
from onnx_stablehlo.frontend.registry import lowering
from onnx_stablehlo.frontend.shapes import Dim


@lowering("MatMul", since=1)
@lowering("MatMul", since=9)  # 9 added integer types
@lowering("MatMul", since=13)  # 13 added bfloat16
def lower_matmul(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value]:
    """Lowers MatMul (numpy ``matmul``) to one stablehlo.dot_general.

    Spec: onnx.ai/onnx/operators/onnx__MatMul.html (MatMul-1, 9, 13).
    Shapes: a [..., M, K] or [K]; b [..., K, N] or [K]; batch dims broadcast; symbolic dims
        allowed (K must agree as written).
    Dtypes: f16, bf16 (accumulated in f32), f32, f64, i32, i64, ui32, ui64.
    Raises: ShapeError if K differs or the batch dims do not broadcast.
    """
    lhs, rhs = ctx.input(0), ctx.input(1)
    try:
        return [builders.matmul(lhs, rhs)]
    except ValueError as exc:
        raise ctx.error(str(exc), ShapeError) from exc


@lowering("Gemm", since=7)  # 7 dropped the `broadcast` attribute: C broadcasts unidirectionally
@lowering("Gemm", since=9)  # 9 added integer types
@lowering("Gemm", since=11)  # 11 made C optional
@lowering("Gemm", since=13)  # 13 added bfloat16
def lower_gemm(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value]:
    """Lowers Gemm to ``alpha * dot_general(A, B) + beta * C``.

    ``transA``/``transB`` choose the contracting dims, so no transpose is emitted; ``alpha`` and
    ``beta`` multiply only when they differ from 1, and C (broadcast to [M, N]) only when present
    and ``beta != 0``.

    Spec: onnx.ai/onnx/operators/onnx__Gemm.html (Gemm-7, 9, 11, 13).
    Shapes: A [M, K] ([K, M] if transA), B [K, N] ([N, K] if transB), C broadcastable to [M, N];
        symbolic dims allowed (a symbolic K is assumed to agree, as MatMul does).
    Dtypes: f16, bf16 (accumulated in f32), f32, f64, i32, i64, ui32, ui64.
    Raises: ShapeError for operands that are not 2-D or do not fit.
    """
    a, b = ctx.input(0), ctx.input(1)
    a_shape, b_shape = builders.dims_of(a), builders.dims_of(b)
    if len(a_shape) != 2 or len(b_shape) != 2:
        raise ctx.error(f"A and B must be 2-D, got {list(a_shape)} and {list(b_shape)}", ShapeError)
    trans_a, trans_b = node.attr_int("transA"), node.attr_int("transB")
    a_k = a_shape[0] if trans_a else a_shape[1]
    b_k = b_shape[1] if trans_b else b_shape[0]
    if isinstance(a_k, int) and isinstance(b_k, int) and a_k != b_k:
        raise ctx.error(
            f"contracted dims differ: A {list(a_shape)} (transA={trans_a}), B {list(b_shape)} (transB={trans_b})",
            ShapeError,
        )
    result = builders.dot_general(a, b, lhs_contracting=[0 if trans_a else 1], rhs_contracting=[1 if trans_b else 0])
    dtype = builders.dtype_of(result)
    shape = builders.dims_of(result)
    alpha, beta = node.attr_float("alpha"), node.attr_float("beta")
    if alpha != 1.0:
        result = stablehlo.multiply(result, _scalar_like(alpha, dtype, shape))
    c = ctx.optional_input(2)
    if c is not None and beta != 0.0:
        c_shape = builders.dims_of(c)
        if len(c_shape) > 2 or any(
            isinstance(d, int) and isinstance(want, int) and d not in (1, want)
            for d, want in zip(c_shape[::-1], shape[::-1])
        ):
            raise ctx.error(f"C {list(c_shape)} does not broadcast to {list(shape)}", ShapeError)
        # A symbolic dim of C is 1 or the result's dim at run time (unidirectional broadcast).
        c = builders.broadcast_to(c, shape)
        if beta != 1.0:
            c = stablehlo.multiply(c, _scalar_like(beta, dtype, shape))
        result = stablehlo.add(result, c)
    return [result]


def _scalar_like(value: float, dtype: DataType, shape: Sequence[int]) -> ir.Value:
    """A splat of ``value`` (truncated for integer dtypes, as a C cast does)."""
    if not dtypes.is_float(dtype):
        value = int(value)
    return builders.splat(value, dtype, shape)


# Einsum ---------------------------------------------------------------------------------------


def _parse_einsum(equation: str, ranks: Sequence[int]) -> tuple[list[list[str]], list[str]]:
    """Operand and output labels; each ellipsis dim becomes a label ``"...k"`` (right-aligned).

    Raises:
        ValueError: the equation does not fit the operands.
    """
    equation = equation.replace(" ", "")
    lhs, arrow, rhs = equation.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(ranks):
        raise ValueError(f"equation {equation!r} has {len(terms)} operand terms, got {len(ranks)} inputs")
    ellipsis_counts = []
    for term, rank in zip(terms, ranks):
        letters = len(term.replace("...", ""))
        count = rank - letters if "..." in term else 0
        if count < 0 or ("..." not in term and letters != rank):
            raise ValueError(f"term {term!r} does not fit an operand of rank {rank}")
        ellipsis_counts.append(count)
    width = max(ellipsis_counts, default=0)
    ellipsis = [f"...{k}" for k in range(width)]

    def expand(term: str, count: int) -> list[str]:
        before, dots, after = term.partition("...")
        return [*before, *(ellipsis[width - count :] if dots else []), *after]

    operands = [expand(t, c) for t, c in zip(terms, ellipsis_counts)]
    if arrow:
        output = expand(rhs, width)
        if len(set(output)) != len(output):
            raise ValueError(f"output term {rhs!r} repeats a label")
    else:
        letters = [label for labels in operands for label in labels if not label.startswith("...")]
        output = ellipsis + sorted(label for label in set(letters) if letters.count(label) == 1)
    known = {label for labels in operands for label in labels}
    missing = [label for label in output if label not in known]
    if missing:
        raise ValueError(f"output labels {missing} appear in no operand")
    return operands, output


def _take_diagonals(value: ir.Value, labels: list[str]) -> tuple[ir.Value, list[str]]:
    """Folds each label repeated within one operand to its diagonal (select on iota equality, sum)."""

    labels = list(labels)
    while len(set(labels)) != len(labels):
        first = next(i for i, label in enumerate(labels) if labels.index(label) != i)
        keep = labels.index(labels[first])
        shape = builders.dims_of(value)
        on_diagonal = builders.compare(
            builders.iota(shape, keep, DataType.INT64), builders.iota(shape, first, DataType.INT64), "EQ"
        )
        zeros = builders.broadcast_to(builders.reshape(builders.splat(0, builders.dtype_of(value)), ()), shape, dims=[])
        value = stablehlo.select(on_diagonal, value, zeros)
        value = builders.reduce(value, [first], stablehlo.add, 0)
        labels.pop(first)
    return value, labels


def _sum_labels(value: ir.Value, labels: list[str], keep: set[str]) -> tuple[ir.Value, list[str]]:
    """Sums out the labels not in ``keep``."""

    axes = [i for i, label in enumerate(labels) if label not in keep]
    if not axes:
        return value, labels
    dtype = builders.dtype_of(value)
    total = builders.reduce(builders.convert(value, dtypes.wide_dtype(dtype)), axes, stablehlo.add, 0)
    value = builders.convert(total, dtype)
    return value, [label for i, label in enumerate(labels) if i not in axes]


def einsum(values: Sequence[ir.Value], equation: str) -> ir.Value:
    """``numpy.einsum(equation, *values)`` as pairwise ``stablehlo.dot_general``, left to right.

    Labels repeated within one operand become diagonals, labels of one operand that nothing
    else needs are summed first, labels shared by the running product and the next operand
    become batch dims (still needed later) or contracting dims; a size-1 ellipsis dim
    broadcasts against a larger one. A final transpose puts the output labels in order.

    Raises:
        ValueError: the equation does not fit the operands.
    """
    shapes = [builders.dims_of(v) for v in values]
    operands, output = _parse_einsum(equation, [len(s) for s in shapes])
    sizes: dict[str, Dim] = {}
    for labels, shape in zip(operands, shapes):
        for label, size in zip(labels, shape):
            seen = sizes.get(label)
            if seen is None or seen == 1:
                sizes[label] = size
            elif size == 1 or size == seen:
                continue
            elif isinstance(size, int) and isinstance(seen, int):
                raise ValueError(f"label {label!r} has sizes {seen} and {size}")
            else:  # a symbolic size: the two are assumed equal (or broadcast), as for numpy broadcasting
                sizes[label] = builders.broadcast_shapes((seen,), (size,))[0]
    terms = [_take_diagonals(v, labels) for v, labels in zip(values, operands)]
    out = set(output)

    def needed_after(index: int) -> set[str]:
        return out.union(*[set(labels) for _, labels in terms[index + 1 :]])

    value, labels = _sum_labels(*terms[0], needed_after(0))
    for index in range(1, len(terms)):
        later = needed_after(index)
        other, other_labels = _sum_labels(*terms[index], later | set(labels))
        shared = [label for label in labels if label in other_labels]
        value = _broadcast_labels(value, labels, shared, sizes)
        other = _broadcast_labels(other, other_labels, shared, sizes)
        batch = [label for label in shared if label in later]
        contract = [label for label in shared if label not in later]
        value = builders.dot_general(
            value,
            other,
            lhs_batch=[labels.index(b) for b in batch],
            rhs_batch=[other_labels.index(b) for b in batch],
            lhs_contracting=[labels.index(c) for c in contract],
            rhs_contracting=[other_labels.index(c) for c in contract],
        )
        labels = batch + [la for la in labels if la not in shared] + [la for la in other_labels if la not in shared]
    value, labels = _sum_labels(value, labels, out)
    value = _broadcast_labels(value, labels, labels, sizes)
    return builders.transpose(value, [labels.index(label) for label in output])


def _broadcast_labels(value: ir.Value, labels: list[str], which: Sequence[str], sizes: dict[str, Dim]) -> ir.Value:
    """Broadcasts size-1 dims of ``which`` labels to the label's full size."""
    shape = builders.dims_of(value)
    target = [sizes[label] if label in which else d for label, d in zip(labels, shape)]
    if tuple(target) == tuple(shape):
        return value
    return builders.broadcast_to(value, target, dims=range(len(shape)))


@lowering("Einsum", since=12)
@lowering("Einsum", since=28)  # 28 added bfloat16
def lower_einsum(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value]:
    """Lowers Einsum to pairwise stablehlo.dot_general (+ reduce, diagonal select, transpose).

    Spec: onnx.ai/onnx/operators/onnx__Einsum.html (Einsum-12, 28).
    Shapes: symbolic dims allowed (one label's sizes are assumed equal); ellipsis dims broadcast
        (size 1 against n).
    Dtypes: f16, bf16 (accumulated in f32), f32, f64, integers.
    Raises: ShapeError when the equation does not fit the operands.
    """
    values = [ctx.input(i) for i in range(ctx.num_inputs)]
    try:
        return [einsum(values, node.attr_str("equation"))]
    except ValueError as exc:
        raise ctx.error(str(exc), ShapeError) from exc


# Integer and quantized products ---------------------------------------------------------------


def _is_zero(ctx: LoweringContext, index: int) -> bool:
    """True for an omitted input or a compile-time all-zero one."""
    return not ctx.has_input(index) or (ctx.is_constant_input(index) and not np.any(ctx.constant_input(index)))


@lowering("MatMulInteger", since=10)
def lower_matmul_integer(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value]:
    """Lowers MatMulInteger to an 8-bit dot_general with an int32 result, plus zero-point terms.

    Spec: onnx.ai/onnx/operators/onnx__MatMulInteger.html (MatMulInteger-10).
    Shapes: as MatMul; a_zero_point scalar or per row ([M], or [..., M, 1]), b_zero_point
        scalar or per column ([N], or [..., 1, N]).
    Dtypes: A, B int8/uint8 (mixed allowed); result int32 (accumulated in int32).
    Raises: ShapeError when shapes do not fit.
    """
    a_zero = None if _is_zero(ctx, 2) else ctx.input(2)
    b_zero = None if _is_zero(ctx, 3) else ctx.input(3)
    try:
        return [builders.integer_matmul(ctx.input(0), ctx.input(1), a_zero, b_zero)]
    except ValueError as exc:
        raise ctx.error(str(exc), ShapeError) from exc


@lowering("QLinearMatMul", since=10)
@lowering("QLinearMatMul", since=21)  # 21 added float8 operands and float16/bfloat16 scales
def lower_qlinear_matmul(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value]:
    """Lowers QLinearMatMul: an int32 (float32 for float8) product requantized to y's type.

    ``y = saturate(round((a - a_zp) @ (b - b_zp) * (a_scale * b_scale / y_scale)) + y_zp)``.

    Spec: onnx.ai/onnx/operators/onnx__QLinearMatMul.html (QLinearMatMul-10, 21).
    Shapes: as MatMul; a's scale and zero point scalar or per row, b's scalar or per column,
        y's scalar.
    Dtypes: int8/uint8 (float8 from 21) operands; float32 (float16/bfloat16 from 21) scales.
    Raises: ShapeError when shapes do not fit.
    """
    exact = dtypes.is_integer(ctx.input_dtype(0)) and dtypes.is_integer(ctx.input_dtype(3))
    try:
        if exact:
            a_zero = None if _is_zero(ctx, 2) else ctx.input(2)
            b_zero = None if _is_zero(ctx, 5) else ctx.input(5)
            product = builders.integer_matmul(ctx.input(0), ctx.input(3), a_zero, b_zero)
        else:
            a = builders.centered(ctx.input(0), ctx.input(2), DataType.FLOAT, per_row=True)
            b = builders.centered(ctx.input(3), ctx.input(5), DataType.FLOAT, per_row=False)
            product = builders.matmul(a, b)
        product = builders.convert(product, DataType.FLOAT)
        shape = builders.dims_of(product)
        a_scale = builders.convert(builders.row_parameter(ctx.input(1), ctx.input_static_shape(0)), DataType.FLOAT)
        b_scale = builders.convert(ctx.input(4), DataType.FLOAT)
        multiplier = stablehlo.multiply(builders.broadcast_onto(a_scale, shape), builders.broadcast_onto(b_scale, shape))
        y_scale = builders.broadcast_onto(ctx.input(6), shape)
        y_zero_point = builders.broadcast_onto(ctx.input(7), shape)
    except ValueError as exc:
        raise ctx.error(str(exc), ShapeError) from exc
    scaled = stablehlo.multiply(product, multiplier)
    return [builders.quantize(scaled, y_scale, y_zero_point, ctx.input_dtype(7), compute=DataType.FLOAT)]
