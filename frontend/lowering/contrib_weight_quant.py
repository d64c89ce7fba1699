"""Lowering rules: onnxruntime's ``com.microsoft`` weight-quantized and dynamically quantized products.

* ``MatMulNBits``: A @ dequantize(B)^T with B block-quantized along K to 2, 4 or 8 bits
  (ORT GenAI's int4 LLMs, ``MatMulNBitsQuantizer``);
* ``GatherBlockQuantized``: an embedding lookup in a block-quantized table (ORT GenAI's
  tied int4 embeddings);
* ``DynamicQuantizeMatMul`` and ``MatMulIntegerToFloat``: the int8 products
  ``onnxruntime.quantization.quantize_dynamic`` writes.

Integer work stays integer on the device: packed 2/4-bit weights are unpacked with shifts and
masks on ``ui8`` values, zero points are subtracted in int32, and the 8-bit products are one
int8/uint8 ``dot_general`` accumulating in int32 (``builders.integer_matmul``); only the
dequantized weight (an exact ``int * scale`` rounding, as ORT's fp32 path does) and the final
scaling are float. Static QLinear* ops live in their own module; DynamicQuantizeLSTM lives with LSTM in ``recurrent.py``.

Spec: onnxruntime docs/ContribOperators.md; the CPU kernels in onnxruntime/contrib_ops/cpu
(quantization/) where the text is silent.
"""

from __future__ import annotations

import math

import numpy as np
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import stablehlo

from onnx_stablehlo.errors import ShapeError, UnsupportedAttributeError
from onnx_stablehlo.frontend import builders, dtypes
from onnx_stablehlo.frontend.context import LoweringContext, OnnxNode
from onnx_stablehlo.frontend.dtypes import DataType
from onnx_stablehlo.frontend.builders import dynamic_quantize_uint8, integer_matmul
from onnx_stablehlo.frontend.builders.contrib import MS
from onnx_stablehlo.frontend.registry import lowering

DEFAULTS: dict[tuple[str, str], object] = {
    ("MatMulNBits", "bits"): 4,
    ("MatMulNBits", "accuracy_level"): 0,
    ("MatMulNBits", "weight_prepacked"): 0,
    ("GatherBlockQuantized", "bits"): 4,
    ("GatherBlockQuantized", "block_size"): 128,
    ("GatherBlockQuantized", "quantize_axis"): 1,
    ("GatherBlockQuantized", "gather_axis"): 0,
}
"""``(op_type, attribute) -> default`` of the com.microsoft schemas (checked by the tests)."""



def _attr(node: OnnxNode, name: str):
    return node.attr(name, DEFAULTS[(node.op_type, name)])


def unpack_bits(packed: ir.Value, bits: int) -> ir.Value:
    """``[..., n]`` uint8 holding ``8 // bits`` values per byte (low bits first) -> ``[..., n * 8 // bits]`` uint8."""
    if bits == 8:
        return packed
    per = 8 // bits
    shape = builders.dims_of(packed)
    wide_shape = (*shape, per)
    wide = builders.broadcast_to(packed, wide_shape, dims=list(range(len(shape))))
    shifts = builders.broadcast_to(builders.constant(np.arange(per, dtype=np.uint8) * bits), wide_shape, dims=[len(shape)])
    shifted = stablehlo.shift_right_logical(wide, shifts)
    values = stablehlo.and_(shifted, builders.full_like(shifted, (1 << bits) - 1))
    return builders.reshape(values, (*shape[:-1], shape[-1] * per))


def _check_bits(ctx: LoweringContext, bits: int, accepted=(2, 4, 8)) -> None:
    if bits not in accepted:
        raise ctx.unsupported_attribute("bits", bits, ", ".join(map(str, accepted)))


@lowering("MatMulNBits", since=1, domain=MS)
def lower_matmul_nbits(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value]:
    """Lowers MatMulNBits: ``A @ ((q - zero_point) * scale)^T + bias`` with q unpacked on the device.

    B [N, k_blocks, blob] uint8 is unpacked (shift and mask) to [N, K] integers, the zero point
    (packed uint8 per row, or a float one, default ``2^(bits-1)``) subtracted in int32, then
    one multiply by the block's scale gives the float weight, and a float dot_general the
    product (ORT's CPU path at accuracy_level 0..3, ``CompFp32``).

    Spec: com.microsoft MatMulNBits-1.
    Shapes: A [..., K] (symbolic leading dims allowed); B [N, ceil(K / block_size), block_size *
        bits / 8]; scales [N * k_blocks] or [N, k_blocks]; zero_points uint8 [N * ceil(k_blocks *
        bits / 8)] or A's dtype [N * k_blocks]; bias [N]. Y [..., N].
    Dtypes: A, scales f16 (computed in f32, rounded once), f32; B uint8.
    accuracy_level 4 with a float32 A and integer zero points follows ORT's CPU kernel (MLAS
        CompInt8): A quantized to int8 per block, int8 x int4 dot products exact in int32 (see
        :func:`_int8_blockwise_product`); levels 0-3 are the float path above.
    g_idx [K] (act-order, GPTQ ``desc_act``; 4 bits): column c is dequantized with block
        g_idx[c]'s scale and zero point (out-of-range groups clamped), always on the float path.
    Deviations: ORT picks CompInt8 only where the CPU has int8 dot instructions (AVX2, NEON...);
        we always do at level 4. Per-block float sums are in XLA's order (a few ulp). With g_idx,
        onnxruntime's CPU kernel (1.32) ignores uint8 zero points (it uses 2^(bits-1)) but
        applies float ones; here both apply, as the contrib spec says (tested against ORT given
        the same zero points as floats).
    Raises: UnsupportedAttributeError for bits other than 2/4/8, g_idx with 2 or 8 bits (ORT's
        CPU kernel refuses 8; its 2-bit act-order results differ from the spec), weight_prepacked;
        ShapeError when B, scales, zero points or g_idx do not fit N, K, block_size.
    Follows ORT: default zero point 2^(bits-1); accuracy_level 4 quantizes A per block to int8
        (MLAS CompInt8).
    """
    bits = int(_attr(node, "bits"))
    _check_bits(ctx, bits)
    if int(_attr(node, "weight_prepacked")):
        raise ctx.unsupported_attribute("weight_prepacked", 1, "0")
    n, k, block = node.attr_int("N"), node.attr_int("K"), node.attr_int("block_size")
    if block < 16 or block & (block - 1):
        raise ctx.unsupported_attribute("block_size", block, "a power of 2 >= 16")
    blocks = math.ceil(k / block)
    blob = block * bits // 8
    a = ctx.input(0)
    dtype = builders.dtype_of(a)
    compute = dtypes.wide_dtype(dtype)
    packed = ctx.input(1)
    if tuple(builders.dims_of(packed)) != (n, blocks, blob):
        raise ctx.error(f"B must be [N, k_blocks, blob] = {[n, blocks, blob]}, got {list(builders.dims_of(packed))}", ShapeError)
    if builders.dims_of(a)[-1] != k and isinstance(builders.dims_of(a)[-1], int):
        raise ctx.error(f"A's last dim {builders.dims_of(a)[-1]} != K={k}", ShapeError)
    q = builders.convert(builders.reshape(unpack_bits(packed, bits), (n, blocks, block)), DataType.INT32)
    scales = ctx.input(2)
    if builders.dims_of(scales) not in ((n * blocks,), (n, blocks)):
        raise ctx.error(f"scales must be [N * k_blocks] = [{n * blocks}], got {list(builders.dims_of(scales))}", ShapeError)
    if ctx.has_input(4):
        if bits != 4:
            raise ctx.error(
                f"g_idx with bits={bits} is not supported (4 bits only: onnxruntime's CPU kernel refuses 8 bits, and its "
                "2-bit act-order results do not follow the spec, so there is no oracle)",
                UnsupportedAttributeError,
            )
        weight = _act_order_weight(ctx, q, builders.reshape(builders.convert(scales, compute), (n, blocks)), bits, k, compute)
        return [_matmul_weight_t(ctx, a, weight, n, compute, dtype)]
    scales = builders.reshape(builders.convert(scales, compute), (n, blocks, 1))
    if ctx.has_input(3) and dtypes.is_float(ctx.input_dtype(3)):
        zero = builders.reshape(builders.convert(ctx.input(3), compute), (n, blocks, 1))
        centered = stablehlo.subtract(builders.convert(q, compute), builders.broadcast_to(zero, (n, blocks, block)))
    else:
        if ctx.has_input(3):
            zero_packed = ctx.input(3)
            per_row = math.ceil(blocks * bits / 8)
            if builders.dims_of(zero_packed) not in ((n * per_row,), (n, per_row)):
                raise ctx.error(f"zero_points must be [N * {per_row}], got {list(builders.dims_of(zero_packed))}", ShapeError)
            zero = unpack_bits(builders.reshape(zero_packed, (n, per_row)), bits)
            zero = builders.slice_axis(zero, 1, 0, blocks)
            zero = builders.convert(builders.reshape(zero, (n, blocks, 1)), DataType.INT32)
            zero = builders.broadcast_to(zero, (n, blocks, block))
        else:
            zero = builders.splat(1 << (bits - 1), DataType.INT32, (n, blocks, block))
        centered_int = stablehlo.subtract(q, zero)
        if int(_attr(node, "accuracy_level")) == 4 and dtype == DataType.FLOAT:
            y = _int8_blockwise_product(a, centered_int, scales, k, block, bits)
            if ctx.has_input(5):
                y = stablehlo.add(y, builders.broadcast_to(ctx.input(5), builders.dims_of(y)))
            return [y]
        centered = builders.convert(centered_int, compute)
    weight = stablehlo.multiply(centered, builders.broadcast_to(scales, (n, blocks, block)))
    weight = builders.slice_axis(builders.reshape(weight, (n, blocks * block)), 1, 0, k)
    return [_matmul_weight_t(ctx, a, weight, n, compute, dtype)]


def _zero_points_per_block(ctx: LoweringContext, n: int, blocks: int, bits: int, compute: DataType) -> ir.Value:
    """MatMulNBits' zero points as [N, k_blocks] of ``compute`` (float, packed uint8, or the default)."""
    if not ctx.has_input(3):
        return builders.splat(float(1 << (bits - 1)), compute, (n, blocks))
    if dtypes.is_float(ctx.input_dtype(3)):
        return builders.reshape(builders.convert(ctx.input(3), compute), (n, blocks))
    per_row = math.ceil(blocks * bits / 8)
    zero_packed = ctx.input(3)
    if builders.dims_of(zero_packed) not in ((n * per_row,), (n, per_row)):
        raise ctx.error(f"zero_points must be [N * {per_row}], got {list(builders.dims_of(zero_packed))}", ShapeError)
    zero = builders.slice_axis(unpack_bits(builders.reshape(zero_packed, (n, per_row)), bits), 1, 0, blocks)
    return builders.convert(zero, compute)


def _act_order_weight(ctx: LoweringContext, q: ir.Value, scales: ir.Value, bits: int, k: int, compute: DataType) -> ir.Value:
    """The [N, K] float weight of an act-order (GPTQ ``desc_act``) MatMulNBits.

    Column ``c`` of B keeps its place (B packs columns in order), but is dequantized with the
    scale and zero point of block ``g_idx[c]`` rather than ``c // block_size``.
    """
    n, blocks, block = builders.dims_of(q)
    g_idx = ctx.input(4)
    if builders.dims_of(g_idx) != (k,) or not dtypes.is_integer(ctx.input_dtype(4)):
        raise ctx.error(f"g_idx must be [K] = [{k}] integers, got {list(builders.dims_of(g_idx))}", ShapeError)
    groups = stablehlo.clamp(
        builders.splat(0, DataType.INT64), builders.convert(g_idx, DataType.INT64), builders.splat(blocks - 1, DataType.INT64)
    )
    column_scale = builders.take(scales, groups, 1)  # [N, K]
    if ctx.has_input(3):
        column_zero = builders.take(_zero_points_per_block(ctx, n, blocks, bits, compute), groups, 1)
    else:
        column_zero = builders.splat(float(1 << (bits - 1)), compute, (n, k))
    values = builders.slice_axis(builders.reshape(builders.convert(q, compute), (n, blocks * block)), 1, 0, k)
    return stablehlo.multiply(stablehlo.subtract(values, column_zero), column_scale)


def _matmul_weight_t(ctx: LoweringContext, a: ir.Value, weight: ir.Value, n: int, compute: DataType, dtype: DataType) -> ir.Value:
    """``A @ weight^T + bias`` for a float [N, K] weight, computed in ``compute``, rounded to ``dtype``."""
    a_shape = builders.dims_of(a)
    numbers = stablehlo.DotDimensionNumbers.get(
        lhs_batching_dimensions=[], rhs_batching_dimensions=[],
        lhs_contracting_dimensions=[len(a_shape) - 1], rhs_contracting_dimensions=[1],
    )
    out_shape = (*a_shape[:-1], n)
    y = builders.record(
        stablehlo.dot_general(builders.tensor_type(out_shape, compute), builders.convert(a, compute), weight, numbers),
        out_shape,
    )
    if ctx.has_input(5):
        y = stablehlo.add(y, builders.broadcast_to(builders.convert(ctx.input(5), compute), out_shape))
    return builders.convert(y, dtype)


def _int8_blockwise_product(a: ir.Value, weight: ir.Value, scales: ir.Value, k: int, block: int, bits: int) -> ir.Value:
    """``A @ W^T`` the way ORT's CPU kernel runs accuracy_level 4 (MLAS ``CompInt8``).

    Each block of ``block`` values of A's rows is quantized to int8 with its own scale
    ``max|a| / 127`` (``q = round_half_even(a * 127 / max|a|)``, 0 for an all-zero block); each
    block's integer dot product with the centered weights ``q_w - zero_point`` is exact (one
    float32 dot_general batched over the blocks whose sums stay below 2^24, else int32), then
    scaled by ``scale_a * scale_w`` and the blocks summed in float32.

    ``weight`` [N, blocks, block] int32 (centered), ``scales`` [N, blocks, 1] float32.
    """
    a_shape = builders.dims_of(a)
    lead = list(a_shape[:-1])
    n, blocks = builders.dims_of(weight)[:2]
    padded = blocks * block
    if padded != k:
        zeros = builders.splat(0.0, DataType.FLOAT, (*lead, padded - k))
        joined = stablehlo.concatenate([a, zeros], ir.IntegerAttr.get(ir.IntegerType.get_signless(64), len(lead)))
        a = builders.record(joined, (*lead, padded))
    a_blocks = builders.reshape(a, (*lead, blocks, block))
    amax = builders.reduce(stablehlo.abs(a_blocks), [len(lead) + 1], stablehlo.MaxOp, 0.0, keepdims=True)
    is_zero = builders.compare(amax, builders.full_like(amax, 0.0), "EQ")
    safe = stablehlo.select(is_zero, builders.full_like(amax, 1.0), amax)
    inverse = stablehlo.select(is_zero, builders.full_like(amax, 0.0), builders.divide(builders.full_like(amax, 127.0), safe))
    a_scale = builders.divide(amax, builders.full_like(amax, 127.0))  # [..., blocks, 1]
    block_shape = builders.dims_of(a_blocks)
    quantized = stablehlo.round_nearest_even(
        stablehlo.multiply(a_blocks, builders.broadcast_to(inverse, block_shape))
    )
    quantized = stablehlo.clamp(builders.full_like(quantized, -127.0), quantized, builders.full_like(quantized, 127.0))
    rank = len(block_shape)
    out_shape = (blocks, *lead, n)
    # Each block's sum of |q| |w'| is at most block * 127 * (2^bits - 1): within 2^24 it is exact
    # in a float32 dot (XLA CPU's int32 dot is a plain loop: builders.exact_integer_product).
    if block * 127 * ((1 << bits) - 1) <= builders.EXACT_FLOAT32_SUM:
        dots = builders.dot_general(
            quantized, builders.convert(weight, DataType.FLOAT), lhs_batch=[rank - 2], rhs_batch=[1],
            lhs_contracting=[rank - 1], rhs_contracting=[2], precision="HIGHEST",
        )
    else:
        narrow = DataType.INT8 if bits <= 4 else DataType.INT32  # 8-bit q - zero_point spans [-255, 255]
        lhs, rhs = builders.convert(quantized, narrow), builders.convert(weight, narrow)
        numbers = stablehlo.DotDimensionNumbers.get(
            lhs_batching_dimensions=[rank - 2], rhs_batching_dimensions=[1],
            lhs_contracting_dimensions=[rank - 1], rhs_contracting_dimensions=[2],
        )
        dots = builders.record(
            stablehlo.dot_general(builders.tensor_type(out_shape, DataType.INT32), lhs, rhs, numbers), out_shape
        )
    a_scale = builders.transpose(builders.reshape(a_scale, (*lead, blocks)), [len(lead), *range(len(lead))])  # [blocks, ...]
    w_scale = builders.transpose(builders.reshape(scales, (n, blocks)), [1, 0])  # [blocks, N]
    scale = stablehlo.multiply(
        builders.broadcast_to(a_scale, out_shape, dims=list(range(len(lead) + 1))),
        builders.broadcast_to(w_scale, out_shape, dims=[0, len(lead) + 1]),
    )
    scaled = stablehlo.multiply(builders.convert(dots, DataType.FLOAT), scale)
    return builders.reduce(scaled, [0], stablehlo.AddOp, 0.0)


@lowering("GatherBlockQuantized", since=1, domain=MS)
def lower_gather_block_quantized(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value]:
    """Lowers GatherBlockQuantized: ``(data[indices] - zero_point) * scale``, block-wise along quantize_axis.

    The rows are gathered while still quantized (uint8 or int4), unpacked, then dequantized,
    so only the gathered rows are ever widened.

    Spec: com.microsoft GatherBlockQuantized-1.
    Shapes: data [R, C'] (uint8: C' = C * bits / 8 packed along the last axis; int4/uint4: C)
        with gather_axis 0 and quantize_axis the last axis; indices any shape (symbolic
        allowed); scales [R, ceil(C / block_size)]; zero_points like scales (uint8: packed).
        Output [*indices.shape, C].
    Dtypes: data uint8 (bits 4 or 8), int4, uint4; scales f16 (in f32), f32; indices int32/int64.
    Deviations: out-of-range indices are clamped (ORT fails the run).
    Raises: UnsupportedAttributeError for other axes (ORT refuses them too for uint8 data),
        bits or data dtypes; ShapeError when
        scales or zero points do not fit.
    Follows ORT: default zero point 2^(bits-1) for uint8 data, 0 for int4/uint4.
    """
    data = ctx.input(0)
    data_dtype = builders.dtype_of(data)
    shape = builders.dims_of(data)
    rank = len(shape)
    if rank != 2:
        raise ctx.error(f"data must be a 2-D table, got {list(shape)}", ShapeError)
    gather_axis = ctx.axis(int(_attr(node, "gather_axis")), rank)
    quantize_axis = ctx.axis(int(_attr(node, "quantize_axis")), rank)
    if gather_axis != 0 or quantize_axis != 1:
        raise ctx.error(
            f"gather_axis={gather_axis}, quantize_axis={quantize_axis} not supported (accepted: 0 and 1)",
            UnsupportedAttributeError,
        )
    block = int(_attr(node, "block_size"))
    if block < 16 or block & (block - 1):
        raise ctx.unsupported_attribute("block_size", block, "a power of 2 >= 16")
    if data_dtype == DataType.UINT8:
        bits = int(_attr(node, "bits"))
        _check_bits(ctx, bits, (4, 8))
        default_zero = 1 << (bits - 1)
    elif data_dtype in (DataType.INT4, DataType.UINT4):
        bits = 4
        default_zero = 0
    else:
        raise ctx.unsupported_dtype(data_dtype, "uint8, int4, uint4")
    indices = ctx.input(1)
    index_shape = builders.dims_of(indices)
    count = 1
    for d in index_shape:
        count = count * d
    flat = builders.reshape(builders.convert(indices, DataType.INT64), [count])
    rows_max = builders.broadcast_to(
        stablehlo.subtract(builders.dim_value(shape[0]), builders.constant(np.array(1, np.int64))), [count], dims=[]
    )
    flat = stablehlo.clamp(builders.full_like(flat, 0), flat, rows_max)
    rows = builders.take(data, flat, 0)
    if data_dtype == DataType.UINT8:
        values = builders.convert(unpack_bits(rows, bits), DataType.INT32)
    else:
        values = builders.convert(rows, DataType.INT32)
    columns = builders.dims_of(values)[1]
    blocks = math.ceil(columns / block)
    scales = ctx.input(2)
    compute = dtypes.wide_dtype(builders.dtype_of(scales))
    if tuple(builders.dims_of(scales)) != (shape[0], blocks):
        raise ctx.error(f"scales must be [{shape[0]}, {blocks}], got {list(builders.dims_of(scales))}", ShapeError)

    def per_column(value: ir.Value) -> ir.Value:
        """[count, blocks] -> [count, columns] (each block's value repeated over its columns)."""
        wide = builders.broadcast_to(value, (count, blocks, block), dims=[0, 1])
        return builders.slice_axis(builders.reshape(wide, (count, blocks * block)), 1, 0, columns)

    if ctx.has_input(3):
        zero_rows = builders.take(ctx.input(3), flat, 0)
        if data_dtype == DataType.UINT8:
            zero_rows = builders.slice_axis(unpack_bits(zero_rows, bits), 1, 0, blocks)
        zero = per_column(builders.convert(zero_rows, DataType.INT32))
        values = stablehlo.subtract(values, zero)
    elif default_zero:
        values = stablehlo.subtract(values, builders.full_like(values, default_zero))
    scale = per_column(builders.convert(builders.take(scales, flat, 0), compute))
    out = stablehlo.multiply(builders.convert(values, compute), scale)
    out = builders.reshape(out, (*index_shape, columns))
    return [builders.convert(out, builders.dtype_of(scales))]


def _scaled(ctx: LoweringContext, product: ir.Value, a_scale: ir.Value, b_scale_index: int, bias_index: int) -> ir.Value:
    """``float(product) * (a_scale * b_scale) + bias`` (b_scale scalar or per column [N])."""
    b_scale = ctx.input(b_scale_index)
    dtype = builders.dtype_of(b_scale)
    shape = builders.dims_of(product)
    multiplier = stablehlo.multiply(*builders.broadcast_values(builders.convert(a_scale, dtype), b_scale))
    y = stablehlo.multiply(builders.convert(product, dtype), builders.broadcast_to(multiplier, shape))
    if ctx.has_input(bias_index):
        y = stablehlo.add(y, builders.broadcast_to(ctx.input(bias_index), shape))
    return y


def _optional_zero(ctx: LoweringContext, index: int) -> ir.Value | None:
    if not ctx.has_input(index):
        return None
    if ctx.is_constant_input(index) and not np.any(ctx.constant_input(index)):
        return None
    return ctx.input(index)


@lowering("DynamicQuantizeMatMul", since=1, domain=MS)
def lower_dynamic_quantize_matmul(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value]:
    """Lowers DynamicQuantizeMatMul: A quantized to uint8 per tensor (DynamicQuantizeLinear),
    an 8-bit integer product with B accumulated in int32, scaled by ``a_scale * b_scale``, plus bias.

    Spec: com.microsoft DynamicQuantizeMatMul-1.
    Shapes: A [..., K] (symbolic allowed); B [K, N]; b_scale, b_zero_point scalar, [1] or [N];
        bias [N]. Y [..., N].
    Dtypes: A f32; B int8 or uint8.
    Raises: ShapeError when shapes do not fit.
    Follows ORT: A's scale is 1 when A is all zeros (DynamicQuantizeLinear); products are exact
        in int32 (ORT's AVX2 u8s8 kernel saturates pairwise int16 sums for full-range int8 B).
    """
    a = ctx.input(0)
    a_q, a_scale, a_zero = dynamic_quantize_uint8(a)
    try:
        product = integer_matmul(a_q, ctx.input(1), a_zero, _optional_zero(ctx, 3))
    except ValueError as exc:
        raise ctx.error(str(exc), ShapeError) from exc
    return [_scaled(ctx, product, a_scale, 2, 4)]


@lowering("MatMulIntegerToFloat", since=1, domain=MS)
def lower_matmul_integer_to_float(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value]:
    """Lowers MatMulIntegerToFloat: ``(A - a_zero) @ (B - b_zero)`` in int32, times ``a_scale * b_scale``, plus bias.

    Spec: com.microsoft MatMulIntegerToFloat-1.
    Shapes: A [..., K]; B [K, N]; a_scale, a_zero_point scalar; b_scale, b_zero_point scalar or
        [N]; bias [N]. Y [..., N].
    Dtypes: A, B int8/uint8; scales and Y f32 (f16 computed as given).
    Raises: ShapeError when shapes do not fit.
    """
    try:
        product = integer_matmul(ctx.input(0), ctx.input(1), _optional_zero(ctx, 4), _optional_zero(ctx, 5))
    except ValueError as exc:
        raise ctx.error(str(exc), ShapeError) from exc
    return [_scaled(ctx, product, ctx.input(2), 3, 6)]
