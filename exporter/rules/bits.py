"""Bit-level ops -> ONNX: ``bitcast_convert``, ``popcnt``, ``count_leading_zeros``; and the ops
with no ONNX form at all, each registered with the reason the pre-scan reports.

Mappings:
  bitcast_convert between integer types of one width -> Cast (two's complement: the bits stay)
  bitcast_convert to or from a float type of the same width -> BitCast (opset >= 26; earlier
      targets: an UnsupportedExportError naming the op and the opset to use)
  popcnt -> the SWAR sum of bits (BitwiseAnd, BitShift, Add on the unsigned view)
  count_leading_zeros -> a binary search over halves (shift, compare, Where), exact for 8-64 bits
"""

from __future__ import annotations

import numpy as np
import onnx_ir
from jaxlib.mlir import ir

from onnx_stablehlo.exporter.context import ExportContext
from onnx_stablehlo.exporter.registry import export_rule
from onnx_stablehlo.exporter.rules.elementwise import BIT_WIDTH, UNSIGNED_OF

DT = onnx_ir.DataType
BITCAST_MIN_OPSET = 26
"""ONNX BitCast is opset 26 (onnxruntime 1.32 has a CPU kernel)."""



def _is_integer(dtype: DT) -> bool:
    return dtype in BIT_WIDTH


def _bitcast_check(op: ir.Operation) -> str | None:
    if ir.RankedTensorType(op.operands[0].type).rank != ir.RankedTensorType(op.results[0].type).rank:
        return "bitcast_convert between element types of different widths (a rank change)"
    return None


@export_rule("stablehlo.bitcast_convert", check=_bitcast_check)
def export_bitcast_convert(ctx: ExportContext) -> list[onnx_ir.Value]:
    source, target = ctx.operand_dtype(0), ctx.result_dtype(0)
    if source == target:
        return [ctx.emit("Identity", [ctx.input(0)])]
    if _is_integer(source) and _is_integer(target):
        return [ctx.cast(ctx.input(0), target)]
    if ctx.opset < BITCAST_MIN_OPSET:
        from onnx_stablehlo.errors import UnsupportedExportError
        from onnx_stablehlo.exporter.context import location_text

        raise UnsupportedExportError([(ctx.op.name, location_text(ctx.op),
                                       f"a bitcast between {source.name} and {target.name} needs ONNX BitCast "
                                       f"(opset >= {BITCAST_MIN_OPSET}; target opset {ctx.opset})")])
    return [ctx.emit("BitCast", [ctx.input(0)], {"to": int(target)})]


def _unsigned(ctx: ExportContext, value: onnx_ir.Value, dtype: DT) -> tuple[onnx_ir.Value, DT]:
    unsigned = UNSIGNED_OF.get(dtype, dtype)
    return (ctx.cast(value, unsigned) if unsigned != dtype else value), unsigned


def _u(ctx: ExportContext, value: int, dtype: DT) -> onnx_ir.Value:
    return ctx.const(np.array(value, dtype=dtype.numpy()))


@export_rule("stablehlo.popcnt")
def export_popcnt(ctx: ExportContext) -> list[onnx_ir.Value]:
    """Population count: each pair, nibble, byte ... of bits summed in place (SWAR)."""
    dtype = ctx.operand_dtype(0)
    x, unsigned = _unsigned(ctx, ctx.input(0), dtype)
    width = BIT_WIDTH[dtype]
    shift = 1
    while shift < width:
        mask = 0
        for i in range(0, width, 2 * shift):
            mask |= ((1 << shift) - 1) << i
        low = ctx.emit("BitwiseAnd", [x, _u(ctx, mask, unsigned)])
        high = ctx.emit("BitwiseAnd", [ctx.emit("BitShift", [x, _u(ctx, shift, unsigned)], {"direction": "RIGHT"}),
                                       _u(ctx, mask, unsigned)])
        x = ctx.emit("Add", [low, high])
        shift *= 2
    return [ctx.cast(x, dtype) if unsigned != dtype else x]


@export_rule("stablehlo.count_leading_zeros")
def export_count_leading_zeros(ctx: ExportContext) -> list[onnx_ir.Value]:
    """Leading zeros by halving: if the top ``k`` bits are zero, count ``k`` and shift left by
    ``k``, for ``k`` = width/2, width/4, ..., 1; an all-zero value counts ``width``."""
    dtype = ctx.operand_dtype(0)
    x, unsigned = _unsigned(ctx, ctx.input(0), dtype)
    width = BIT_WIDTH[dtype]
    count = _u(ctx, 0, unsigned)
    zero = _u(ctx, 0, unsigned)
    k = width // 2
    while k >= 1:
        top = ctx.emit("BitShift", [x, _u(ctx, width - k, unsigned)], {"direction": "RIGHT"})
        empty = ctx.emit("Equal", [top, zero])
        count = ctx.emit("Where", [empty, ctx.emit("Add", [count, _u(ctx, k, unsigned)]), count])
        x = ctx.emit("Where", [empty, ctx.emit("BitShift", [x, _u(ctx, k, unsigned)], {"direction": "LEFT"}), x])
        k //= 2
    # After the search the top bit is set unless the value was 0: add its last zero.
    last = ctx.emit("Equal", [ctx.emit("BitShift", [x, _u(ctx, width - 1, unsigned)], {"direction": "RIGHT"}), zero])
    count = ctx.emit("Where", [last, ctx.emit("Add", [count, _u(ctx, 1, unsigned)]), count])
    return [ctx.cast(count, dtype) if unsigned != dtype else count]


_NO_ONNX_FORM = {
    "stablehlo.rng_bit_generator": "ONNX has no counter-based random bit generator: pass the random bits in "
                                   "as an input (or draw them with ONNX RandomUniform outside the function)",
    "stablehlo.rng": "ONNX's random ops are not StableHLO's rng (other distribution parameters, no seed "
                     "threading): pass the random values in as an input",
    "stablehlo.complex": "complex numbers: ONNX Runtime has no complex kernels",
    "stablehlo.real": "complex numbers: ONNX Runtime has no complex kernels",
    "stablehlo.imag": "complex numbers: ONNX Runtime has no complex kernels",
    "stablehlo.fft": "complex FFT: ONNX's DFT takes real/imaginary pairs; not exported",
    "stablehlo.after_all": "tokens (side-effect ordering) have no ONNX form",
    "stablehlo.infeed": "host communication (infeed) has no ONNX form",
    "stablehlo.outfeed": "host communication (outfeed) has no ONNX form",
    "stablehlo.send": "host/device communication (send) has no ONNX form",
    "stablehlo.recv": "host/device communication (recv) has no ONNX form",
    "stablehlo.all_reduce": "collectives (all_reduce) need several devices; export the per-device program",
    "stablehlo.all_gather": "collectives (all_gather) need several devices; export the per-device program",
    "stablehlo.all_to_all": "collectives (all_to_all) need several devices; export the per-device program",
    "stablehlo.reduce_scatter": "collectives (reduce_scatter) need several devices; export the per-device program",
    "stablehlo.collective_permute": "collectives need several devices; export the per-device program",
    "stablehlo.replica_id": "replica ids need several devices",
    "stablehlo.partition_id": "partition ids need several devices",
}


def _no_onnx_form(op: ir.Operation) -> str:
    return _NO_ONNX_FORM[op.name]


@export_rule(*_NO_ONNX_FORM, check=_no_onnx_form)
def export_no_onnx_form(ctx: ExportContext) -> list[onnx_ir.Value]:
    raise ctx.error(_NO_ONNX_FORM[ctx.op.name])  # the scan reports these first
