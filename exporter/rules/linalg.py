"""Linear algebra: ``stablehlo.dot_general`` and ``stablehlo.dot`` -> ONNX ``MatMul`` (or
``MatMulInteger``, or ``Einsum`` where no MatMul layout exists).

Spec: StableHLO spec, "dot_general" (result dims: batch dims, then the lhs free dims, then the
rhs free dims, each in operand order) and "dot" (the legacy rank <= 2 form).

Mappings (``A -> B``):
  dot_general(lhs, rhs) -> [Transpose] [Reshape] [Unsqueeze] MatMul [Squeeze] [Reshape]
      lhs is laid out as ``[batch..., lhs free..., K]`` and rhs as ``[batch..., K, N]`` (a
      Transpose only where an operand is not already in that order); several contracting dims
      are merged into one K and several rhs free dims into one N by a Reshape that copies every
      other dim (``0``), so ``?`` batch and lhs free dims stay symbolic; a rhs with no free dim
      is a vector (1-D MatMul, or Unsqueeze/Squeeze when there are batch dims); several lhs
      free dims with batch dims broadcast against an Unsqueezed rhs.
      Constraint for MatMul: the merged contracting dims (when more than one) and the merged
      rhs free dims (when more than one) are static. Otherwise -> Einsum (any dims, ``?``
      included, no reshapes).
  dot_general(i8/u8, i8/u8) -> i32 on the MatMul layout -> MatMulInteger (exact, no casts).
  dot(lhs, rhs) -> MatMul (ONNX MatMul's 1-D rules are dot's: [K]x[K] -> [], [M,K]x[K] -> [M]).
  einsum/unary_einsum {einsum_config} -> Einsum(equation = the config).

Element types: when the result type differs from the operands' (``preferred_element_type``:
i8 x i8 -> i32, bf16 x bf16 -> f32), the operands are Cast to the result type first (a float
result narrower than its float operands is computed in the operands' type, then Cast).
onnxruntime's CPU MatMul has kernels for f16/f32/f64/i32/i64/u32/u64 only (Einsum: f16, f32,
f64, i32, i64): narrower integers and bool are computed in i32, u32/u64 Einsums in i64 (exact:
integer dots wrap modulo 2^bits, and the Cast back to the result type takes the low bits; a
bool result is "any product true", i.e. the i32 sum != 0), bf16 and float8 in f32, then Cast
back to the result type.

``precision_config`` and ``algorithm`` are ignored: they ask for at least a precision
(DEFAULT/HIGH/HIGHEST, or a dot algorithm's operand/accumulation types such as
bf16_bf16_f32) that accelerators may lower to cheaper passes; onnxruntime computes in the
operands' (or the result's, when wider) own type, which is at least as precise as requested.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import onnx_ir
from jaxlib.mlir.dialects import stablehlo

from onnx_stablehlo.exporter.context import ExportContext
from onnx_stablehlo.exporter.registry import export_rule

__all__ = ["export_dot_general", "export_dot", "emit_dot_general", "export_einsum"]

DT = onnx_ir.DataType

_FLOATS = {DT.FLOAT16: 2, DT.BFLOAT16: 2, DT.FLOAT: 4, DT.DOUBLE: 8, DT.FLOAT8E4M3FN: 1, DT.FLOAT8E4M3FNUZ: 1,
           DT.FLOAT8E5M2: 1, DT.FLOAT8E5M2FNUZ: 1}
_MATMUL_TYPES = {DT.FLOAT16, DT.FLOAT, DT.DOUBLE, DT.INT32, DT.INT64, DT.UINT32, DT.UINT64}
_EINSUM_TYPES = {DT.FLOAT16, DT.FLOAT, DT.DOUBLE, DT.INT32, DT.INT64}
_MATMUL_INTEGER_TYPES = {DT.INT8, DT.UINT8}


def _compute_dtype(operands: Sequence[DT], result: DT, kernels: set[DT]) -> DT:
    """The type the product is computed in: the result's (the operands' when they are wider
    floats), moved to one with an onnxruntime kernel in ``kernels``."""
    dtype = result
    if result in _FLOATS:
        widest = max((d for d in operands if d in _FLOATS), key=lambda d: _FLOATS[d], default=result)
        if _FLOATS[widest] > _FLOATS[result]:
            dtype = widest
    if dtype in kernels:
        return dtype
    if dtype in _FLOATS:
        return DT.FLOAT if _FLOATS[dtype] <= 4 else DT.DOUBLE
    if dtype in (DT.UINT32, DT.UINT64):
        return DT.INT64
    return DT.INT32  # bool, (u)int8, (u)int16, sub-byte ints


def _transpose(ctx: ExportContext, x: onnx_ir.Value, perm: list[int]) -> onnx_ir.Value:
    return x if perm == sorted(perm) else ctx.emit("Transpose", [x], {"perm": perm})


def _static_product(shape: Sequence[int | None], dims: Sequence[int]) -> int | None:
    sizes = [shape[d] for d in dims]
    return None if None in sizes else math.prod(sizes)  # type: ignore[arg-type]


def emit_dot_general(ctx: ExportContext, lhs: onnx_ir.Value, rhs: onnx_ir.Value,
                     lhs_shape: Sequence[int | None], rhs_shape: Sequence[int | None],
                     lhs_batch: Sequence[int], rhs_batch: Sequence[int],
                     lhs_contract: Sequence[int], rhs_contract: Sequence[int],
                     operand_dtypes: tuple[DT, DT], result_dtype: DT) -> onnx_ir.Value:
    """The ONNX form of a ``dot_general``.

    Args:
        lhs, rhs: the operands (any ranks; ``*_shape`` their MLIR shapes, ``None`` for ``?``).
        lhs_batch, rhs_batch: paired batching dims; lhs_contract, rhs_contract: paired
            contracting dims.
        operand_dtypes: the lhs and rhs element types; result_dtype: the result's.

    Returns:
        the result, shape ``[batch..., lhs free..., rhs free...]`` of ``result_dtype``.
    """
    lhs_free = [d for d in range(len(lhs_shape)) if d not in lhs_batch and d not in lhs_contract]
    rhs_free = [d for d in range(len(rhs_shape)) if d not in rhs_batch and d not in rhs_contract]
    nb, nlf, nrf, nc = len(lhs_batch), len(lhs_free), len(rhs_free), len(lhs_contract)
    k = _static_product(lhs_shape, lhs_contract)
    if k is None:
        k = _static_product(rhs_shape, rhs_contract)
    n = _static_product(rhs_shape, rhs_free)
    matmul_layout = (nc <= 1 or k is not None) and (nrf <= 1 or n is not None)
    if not matmul_layout:
        return _einsum(ctx, lhs, rhs, len(lhs_shape), len(rhs_shape), lhs_batch, rhs_batch, lhs_contract,
                       rhs_contract, lhs_free, rhs_free, operand_dtypes, result_dtype)

    integer = (set(operand_dtypes) <= _MATMUL_INTEGER_TYPES and result_dtype == DT.INT32)
    compute = result_dtype if integer else _compute_dtype(operand_dtypes, result_dtype, _MATMUL_TYPES)
    if not integer:
        lhs = lhs if operand_dtypes[0] == compute else ctx.cast(lhs, compute)
        rhs = rhs if operand_dtypes[1] == compute else ctx.cast(rhs, compute)

    # lhs -> [batch..., lhs free..., K]
    lhs = _transpose(ctx, lhs, list(lhs_batch) + lhs_free + list(lhs_contract))
    if nc == 0:
        lhs = ctx.emit("Unsqueeze", [lhs, ctx.ints([nb + nlf])])
    elif nc > 1:
        lhs = ctx.emit("Reshape", [lhs, ctx.ints([0] * (nb + nlf) + [k])])  # type: ignore[list-item]
    # rhs -> [batch..., K, N] (or [K] / [batch..., K] without free dims)
    rhs = _transpose(ctx, rhs, list(rhs_batch) + list(rhs_contract) + rhs_free)
    if nc == 0:
        rhs = ctx.emit("Unsqueeze", [rhs, ctx.ints([nb])])
    if nc > 1 or nrf > 1:
        last = [] if nrf == 0 else [n if nrf > 1 else (rhs_shape[rhs_free[0]] or -1)]
        rhs = ctx.emit("Reshape", [rhs, ctx.ints([0] * nb + [k] + last)])  # type: ignore[list-item]

    squeeze: list[int] = []
    if nb > 0:
        if nlf == 0:
            lhs = ctx.emit("Unsqueeze", [lhs, ctx.ints([nb])])
            squeeze.append(nb)
        if nrf == 0:
            rhs = ctx.emit("Unsqueeze", [rhs, ctx.ints([nb + 1])])
            squeeze.append(nb + max(nlf, 1))
        if nlf > 1:  # rhs [batch, 1..., K, N] broadcasts against lhs [batch, free..., K]
            rhs = ctx.emit("Unsqueeze", [rhs, ctx.ints(list(range(nb, nb + nlf - 1)))])
    out = ctx.emit("MatMulInteger" if integer else "MatMul", [lhs, rhs])
    if squeeze:
        out = ctx.emit("Squeeze", [out, ctx.ints(squeeze)])
    if nrf > 1:
        free_sizes = [int(rhs_shape[d]) for d in rhs_free]  # type: ignore[arg-type]
        out = ctx.emit("Reshape", [out, ctx.ints([0] * (nb + nlf) + free_sizes)])
    return out if compute == result_dtype else ctx.cast(out, result_dtype)


def _einsum(ctx: ExportContext, lhs: onnx_ir.Value, rhs: onnx_ir.Value, lhs_rank: int, rhs_rank: int,
            lhs_batch: Sequence[int], rhs_batch: Sequence[int], lhs_contract: Sequence[int],
            rhs_contract: Sequence[int], lhs_free: list[int], rhs_free: list[int],
            operand_dtypes: tuple[DT, DT], result_dtype: DT) -> onnx_ir.Value:
    """``dot_general`` as one Einsum: every dim keeps its own letter, ``?`` dims included."""
    letters = iter("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
    lhs_letters = [next(letters) for _ in range(lhs_rank)]
    rhs_letters = [""] * rhs_rank
    for l_dim, r_dim in zip(list(lhs_batch) + list(lhs_contract), list(rhs_batch) + list(rhs_contract)):
        rhs_letters[r_dim] = lhs_letters[l_dim]
    for d in rhs_free:
        rhs_letters[d] = next(letters)
    out_letters = [lhs_letters[d] for d in lhs_batch] + [lhs_letters[d] for d in lhs_free] + \
                  [rhs_letters[d] for d in rhs_free]
    equation = f"{''.join(lhs_letters)},{''.join(rhs_letters)}->{''.join(out_letters)}"
    compute = _compute_dtype(operand_dtypes, result_dtype, _EINSUM_TYPES)
    lhs = lhs if operand_dtypes[0] == compute else ctx.cast(lhs, compute)
    rhs = rhs if operand_dtypes[1] == compute else ctx.cast(rhs, compute)
    out = ctx.emit("Einsum", [lhs, rhs], {"equation": equation})
    return out if compute == result_dtype else ctx.cast(out, result_dtype)


@export_rule("stablehlo.dot_general")
def export_dot_general(ctx: ExportContext) -> list[onnx_ir.Value]:
    """``dot_general(lhs, rhs)``: any batching/contracting dims, any element types with an ONNX
    form; result ``[batch..., lhs free..., rhs free...]`` (see the module docstring)."""
    numbers = stablehlo.DotDimensionNumbers(ctx.attr("dot_dimension_numbers"))
    return [emit_dot_general(
        ctx, ctx.input(0), ctx.input(1), ctx.operand_shape(0), ctx.operand_shape(1),
        list(numbers.lhs_batching_dimensions), list(numbers.rhs_batching_dimensions),
        list(numbers.lhs_contracting_dimensions), list(numbers.rhs_contracting_dimensions),
        (ctx.operand_dtype(0), ctx.operand_dtype(1)), ctx.result_dtype())]


@export_rule("stablehlo.dot")
def export_dot(ctx: ExportContext) -> list[onnx_ir.Value]:
    """``dot(lhs, rhs)``: lhs ``[K]`` or ``[M, K]``, rhs ``[K]`` or ``[K, N]`` (the last lhs dim
    contracts with the first rhs dim)."""
    lhs_shape, rhs_shape = ctx.operand_shape(0), ctx.operand_shape(1)
    return [emit_dot_general(ctx, ctx.input(0), ctx.input(1), lhs_shape, rhs_shape, [], [],
                             [len(lhs_shape) - 1], [0], (ctx.operand_dtype(0), ctx.operand_dtype(1)),
                             ctx.result_dtype())]


def _einsum_config(ctx: ExportContext) -> str:
    attr = ctx.attr("einsum_config")
    if attr is None:
        raise ctx.error("no einsum_config attribute")
    from jaxlib.mlir import ir

    return ir.StringAttr(attr).value.replace(" ", "")


@export_rule("stablehlo.einsum", "stablehlo.unary_einsum")
def export_einsum(ctx: ExportContext) -> list[onnx_ir.Value]:
    """``einsum(lhs, rhs) {einsum_config = "ab,bc->ac"}`` and ``unary_einsum(x)
    {einsum_config = "ab->a"}`` -> ONNX Einsum with the config as its equation (the notation
    is numpy's in both; a unary config written with a leading comma, as MHLO's canonical form
    of unary_einsum, loses it). Element types as ``dot_general``'s Einsum form."""
    equation = _einsum_config(ctx)
    operands = ctx.inputs()
    if len(operands) == 1 and equation.startswith(","):
        equation = equation[1:]
    dtypes = [ctx.operand_dtype(i) for i in range(len(operands))]
    result_dtype = ctx.result_dtype()
    compute = _compute_dtype(dtypes, result_dtype, _EINSUM_TYPES)
    operands = [v if d == compute else ctx.cast(v, compute) for v, d in zip(operands, dtypes)]
    out = ctx.emit("Einsum", operands, {"equation": equation})
    return [out if compute == result_dtype else ctx.cast(out, result_dtype)]
