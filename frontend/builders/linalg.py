"""Linear algebra: ``stablehlo.dot_general`` under one precision policy, numpy ``matmul``, and the
8-bit integer product with zero points.

Precision policy (:func:`dot_general`):

- accumulation: float16/bfloat16 operands accumulate in float32 and the result is converted
  back (onnxruntime accumulates in float32 too), unless ``result_dtype`` names the result type;
- ``precision``: ``None`` (the default) emits no ``precision_config``, so XLA's default applies
  (exact float32 on CPU; TF32 passes allowed on GPU): model weights (MatMul, Gemm, Einsum,
  recurrent gates, attention). ``"HIGHEST"`` forces full-precision passes for the constant
  coordinate and transform matrices (Resize, DFT/STFT, GridSample/RoiAlign interpolation), where
  a TF32 rounding of the matrix would move results visibly. The two emit different IR, so the
  choice is an explicit parameter rather than one silent rule.
"""

from __future__ import annotations

from collections.abc import Sequence

from jaxlib.mlir import ir
from jaxlib.mlir.dialects import stablehlo

from onnx_stablehlo.frontend.builders.core import (
    BuilderShapeError,
    broadcast_shapes,
    broadcast_to,
    convert,
    dims_of,
    dtype_of,
    integer_dots_allowed,
    record,
    reshape,
    splat,
    tensor_type,
    transpose,
    unify,
)
from onnx_stablehlo.frontend.builders.reduce import reduce
from onnx_stablehlo.frontend.dtypes import DataType
from onnx_stablehlo.frontend.shapes import product as _product

__all__ = ["dot_general", "matmul", "integer_matmul", "exact_integer_product", "EXACT_FLOAT32_SUM", "broadcast_onto", "centered", "row_parameter"]


_NARROW_FLOATS = (DataType.FLOAT16, DataType.BFLOAT16)


def dot_general(
    lhs: ir.Value,
    rhs: ir.Value,
    *,
    lhs_contracting: Sequence[int],
    rhs_contracting: Sequence[int],
    lhs_batch: Sequence[int] = (),
    rhs_batch: Sequence[int] = (),
    result_dtype: DataType | None = None,
    precision: str | None = None,
) -> ir.Value:
    """``stablehlo.dot_general``; the result is ``batch dims, lhs free dims, rhs free dims``.

    float16/bfloat16 operands accumulate in float32 and the result is converted back, unless
    ``result_dtype`` asks for something else (then the product is computed in that type).
    ``precision`` is ``None`` (XLA's default) or ``"HIGHEST"`` for both operands (see the module
    docstring). Symbolic dims are allowed.
    """
    dtype = dtype_of(lhs)
    out_dtype = result_dtype or dtype
    accumulate = DataType.FLOAT if dtype in _NARROW_FLOATS and result_dtype is None else out_dtype
    lhs_shape, rhs_shape = dims_of(lhs), dims_of(rhs)
    shape = (
        [lhs_shape[d] for d in lhs_batch]
        + [d for i, d in enumerate(lhs_shape) if i not in lhs_batch and i not in lhs_contracting]
        + [d for i, d in enumerate(rhs_shape) if i not in rhs_batch and i not in rhs_contracting]
    )
    numbers = stablehlo.DotDimensionNumbers.get(
        lhs_batching_dimensions=list(lhs_batch),
        rhs_batching_dimensions=list(rhs_batch),
        lhs_contracting_dimensions=list(lhs_contracting),
        rhs_contracting_dimensions=list(rhs_contracting),
    )
    config = None
    if precision is not None:
        attr = stablehlo.PrecisionAttr.get(precision)
        config = ir.ArrayAttr.get([attr, attr])
    result = stablehlo.dot_general(tensor_type(shape, accumulate), lhs, rhs, numbers, precision_config=config)
    return convert(record(result, shape), out_dtype)


def matmul(
    lhs: ir.Value, rhs: ir.Value, result_dtype: DataType | None = None, precision: str | None = None
) -> ir.Value:
    """numpy ``matmul`` of two static-shaped values as one ``stablehlo.dot_general``
    (``precision`` as :func:`dot_general`'s).

    Raises:
        ValueError: the contracted dims differ or the batch dims do not broadcast.
    """
    lhs_shape, rhs_shape = dims_of(lhs), dims_of(rhs)
    lhs_rank, rhs_rank = len(lhs_shape), len(rhs_shape)
    if lhs_rank == 0 or rhs_rank == 0:
        raise BuilderShapeError("MatMul operands must have rank >= 1")
    lhs_k = lhs_shape[-1]
    rhs_k = rhs_shape[0] if rhs_rank == 1 else rhs_shape[-2]
    if lhs_k != rhs_k and isinstance(lhs_k, int) and isinstance(rhs_k, int):
        raise BuilderShapeError(f"contracted dims differ: {list(lhs_shape)} @ {list(rhs_shape)}")
    if lhs_k != rhs_k:
        unify(lhs_k, rhs_k)  # two symbols for K: the same size (merged, checked per call)
    if lhs_rank == 1 or rhs_rank <= 2:
        # No batch dims needed: [K] @ [..., K, N] -> [..., N]; [..., M, K] @ [K(, N)] -> [..., M(, N)].
        rhs_contracting = 0 if rhs_rank == 1 else rhs_rank - 2
        return dot_general(
            lhs, rhs, lhs_contracting=[lhs_rank - 1], rhs_contracting=[rhs_contracting], result_dtype=result_dtype, precision=precision
        )
    lhs_batch, rhs_batch = lhs_shape[:-2], rhs_shape[:-2]
    batch = broadcast_shapes(lhs_batch, rhs_batch)
    if lhs_rank == 2 or (_product(lhs_batch) == 1 and len(rhs_batch) >= len(lhs_batch)):
        # [M, K] @ [B..., K, N] -> [M, B..., N], then the M dim moves behind the batch dims.
        lhs2 = reshape(lhs, lhs_shape[-2:])
        product = dot_general(
            lhs2, rhs, lhs_contracting=[1], rhs_contracting=[rhs_rank - 2], result_dtype=result_dtype, precision=precision
        )
        nb = len(rhs_batch)
        return transpose(product, [*range(1, nb + 1), 0, nb + 1])
    if _product(rhs_batch) == 1 and len(lhs_batch) >= len(rhs_batch):
        # [B..., M, K] @ [1..., K, N]: the weight drops its unit batch dims.
        rhs2 = reshape(rhs, rhs_shape[-2:])
        return dot_general(lhs, rhs2, lhs_contracting=[lhs_rank - 1], rhs_contracting=[0], result_dtype=result_dtype, precision=precision)
    lhs = broadcast_to(lhs, (*batch, *lhs_shape[-2:]))
    rhs = broadcast_to(rhs, (*batch, *rhs_shape[-2:]))
    nb = len(batch)
    return dot_general(
        lhs,
        rhs,
        lhs_batch=range(nb),
        rhs_batch=range(nb),
        lhs_contracting=[nb + 1],
        rhs_contracting=[nb],
        result_dtype=result_dtype,
        precision=precision,
    )


def row_parameter(value: ir.Value, operand_shape: Sequence[int]) -> ir.Value:
    """A per-row ([M]) parameter of a [..., M, K] operand as [M, 1]; others unchanged (numpy broadcasting)."""
    shape = dims_of(value)
    if len(shape) == 1 and shape[0] != 1 and len(operand_shape) >= 2:
        return reshape(value, (shape[0], 1))
    return value


def centered(value: ir.Value, zero_point: ir.Value | None, dtype: DataType, per_row: bool) -> ir.Value:
    """``convert(value, dtype) - zero_point`` with the zero point broadcast numpy-style."""
    value = convert(value, dtype)
    if zero_point is None:
        return value
    if per_row:
        zero_point = row_parameter(zero_point, dims_of(value))
    zero_point = convert(zero_point, dtype)
    return stablehlo.subtract(value, broadcast_onto(zero_point, dims_of(value)))


def broadcast_onto(value: ir.Value, shape: Sequence[int]) -> ir.Value:
    """numpy-broadcasts ``value`` to exactly ``shape``.

    Raises:
        ValueError: ``value`` does not broadcast to ``shape``.
    """
    given = dims_of(value)
    if len(given) > len(shape) or any(g not in (1, d) for g, d in zip(given[::-1], tuple(shape)[::-1])):
        raise ValueError(f"zero point or scale {list(given)} does not fit {list(shape)}")
    return broadcast_to(value, shape)


def integer_matmul(a: ir.Value, b: ir.Value, a_zero: ir.Value | None, b_zero: ir.Value | None) -> ir.Value:
    """``(a - a_zero) @ (b - b_zero)`` in int32, the 8-bit ``a @ b`` by :func:`exact_integer_product`.

    The zero points enter through the expansion
    ``a @ b - a_zero * colsum(b) - rowsum(a) * b_zero + K * a_zero * b_zero``
    (``a_zero`` per tensor or per row, ``b_zero`` per tensor or per column). 1-D operands
    subtract the zero points first instead.

    Raises:
        ValueError: shapes do not fit.
    """
    i32 = DataType.INT32
    a_shape, b_shape = dims_of(a), dims_of(b)
    if len(a_shape) < 2 or len(b_shape) < 2:
        return matmul(centered(a, a_zero, i32, per_row=True), centered(b, b_zero, i32, per_row=False))
    if integer_dots_allowed() and dtype_of(a) in _MAGNITUDE and dtype_of(b) in _MAGNITUDE:
        a, a_zero = _as_int8(a, a_zero)
        b, b_zero = _as_int8(b, b_zero)
        product = matmul(a, b, result_dtype=i32)
    else:
        product = exact_integer_product(a, b)
    shape = dims_of(product)
    k = a_shape[-1]
    a_zero_term = b_zero_term = None
    if a_zero is not None:
        a_zero_term = convert(row_parameter(a_zero, a_shape), i32)
        column_sums = reduce(convert(b, i32), [len(b_shape) - 2], stablehlo.add, 0, keepdims=True)
        correction = stablehlo.multiply(broadcast_onto(a_zero_term, shape), broadcast_onto(column_sums, shape))
        product = stablehlo.subtract(product, correction)
    if b_zero is not None:
        b_zero_term = convert(b_zero, i32)
        row_sums = reduce(convert(a, i32), [len(a_shape) - 1], stablehlo.add, 0, keepdims=True)
        correction = stablehlo.multiply(broadcast_onto(row_sums, shape), broadcast_onto(b_zero_term, shape))
        product = stablehlo.subtract(product, correction)
    if a_zero_term is not None and b_zero_term is not None:
        both = stablehlo.multiply(broadcast_onto(a_zero_term, shape), broadcast_onto(b_zero_term, shape))
        scaled = stablehlo.multiply(both, broadcast_to(_splat_i32(k), shape, dims=[]))
        product = stablehlo.add(product, scaled)
    return product


def _as_int8(x: ir.Value, zero: ir.Value | None) -> tuple[ir.Value, ir.Value | None]:
    """A uint8 operand as the int8 ``x - 128`` (its top bit flipped) and its zero point as the
    int32 ``zero - 128``, so ``x - zero`` is unchanged; an int8 operand as it is.

    XLA CPU runs int8 x int8 -> int32 dots through YNNPACK but uint8 ones as a plain loop.
    """
    if dtype_of(x) != DataType.UINT8:
        return x, zero
    shape = dims_of(x)
    flipped = stablehlo.xor(x, splat(128, DataType.UINT8, shape))
    signed = record(stablehlo.bitcast_convert(tensor_type(shape, DataType.INT8), flipped), shape)
    if zero is None:
        return signed, _splat_i32(-128)
    zero = convert(zero, DataType.INT32)
    return signed, stablehlo.subtract(zero, splat(128, DataType.INT32, dims_of(zero)))


EXACT_FLOAT32_SUM = 1 << 24
"""Every integer of magnitude up to 2^24 is a float32, so a float32 sum of integer terms whose
magnitudes add up to at most this is exact in any order (FMA included)."""

_MAGNITUDE = {DataType.INT8: 128, DataType.UINT8: 255}


def exact_integer_product(a: ir.Value, b: ir.Value) -> ir.Value:
    """``a @ b`` of 8-bit integer operands as int32, exactly, through float32 dot_generals.

    XLA CPU runs an int8 dot_general with an int32 result as a plain loop, 3-5x slower than its
    float32 GEMM (``[768, 384] @ [384, 1536]``: 103 against 20-33 ms on 2 cores). Products of
    8-bit values are integers below 2^15, so a float32 dot whose contraction length K keeps
    ``K * max|a| * max|b| <= 2^24`` sums them exactly (``HIGHEST`` precision: no TF32 passes
    on GPU) and converts back to the same int32 as the integer GEMM. A longer K (uint8 x int8:
    K > 514) is split into chunks that each fit, as a batched dot_general whose int32 results
    are added (with symbolic rows, in chunks that divide K); a longer K with batched ``b``, a
    symbolic K, or wider integer types keep the int32 dot_general.
    """
    i32, f32 = DataType.INT32, DataType.FLOAT
    a_type, b_type = dtype_of(a), dtype_of(b)
    a_shape, b_shape = dims_of(a), dims_of(b)
    k = a_shape[-1]
    if a_type not in _MAGNITUDE or b_type not in _MAGNITUDE or not isinstance(k, int):
        return matmul(a, b, result_dtype=i32)
    limit = EXACT_FLOAT32_SUM // (_MAGNITUDE[a_type] * _MAGNITUDE[b_type])
    if k <= limit:
        return convert(matmul(convert(a, f32), convert(b, f32), precision="HIGHEST"), i32)
    if len(b_shape) != 2:
        return matmul(a, b, result_dtype=i32)
    chunks = -(-k // limit)
    static = all(isinstance(d, int) for d in a_shape)
    if not static:  # symbolic rows (a dynamic-shape artifact): chunks that divide K, no padding
        chunks = next(c for c in range(chunks, k + 1) if k % c == 0)
    width = -(-k // chunks)
    padded = chunks * width
    lead = a_shape[:-1]
    a32, b32 = convert(a, f32), convert(b, f32)
    if padded != k:  # zeros add nothing
        zero = splat(0, f32)
        a32 = stablehlo.pad(a32, zero, [0] * len(a_shape), [0] * (len(a_shape) - 1) + [padded - k], [0] * len(a_shape))
        b32 = stablehlo.pad(b32, zero, [0, 0], [padded - k, 0], [0, 0])
    a32 = reshape(a32, (*lead, chunks, width))
    b32 = reshape(b32, (chunks, width, b_shape[1]))
    rank = len(a_shape) + 1
    partial = dot_general(  # [chunks, *lead, N]
        a32, b32, lhs_batch=[rank - 2], rhs_batch=[0], lhs_contracting=[rank - 1], rhs_contracting=[1],
        precision="HIGHEST",
    )
    return reduce(convert(partial, i32), [0], stablehlo.add, 0)


def _splat_i32(value: int) -> ir.Value:
    return reshape(splat(value, DataType.INT32), ())
