"""Lowering rules: bit reinterpretation, cumulative products, cache updates, training
optimizers (``ai.onnx.preview.training``) and small ``ai.onnx.ml`` ops.

    BitCast(x)                         -> stablehlo.bitcast_convert (bool through uint8; complex
                                          through its two float halves)
    CumProd(x, axis)                   -> log2(n) steps of stablehlo.pad (shift, ones in) +
                                          stablehlo.multiply, as CumSum in indexing.py
    TensorScatter(cache, update, idx)  -> stablehlo.scatter with batch dim 0 and per-batch start
                                          positions along the sequence axis
    Adagrad / Adam / Momentum          -> their spec's elementwise update formulas
    Binarizer(x)                       -> select(x > threshold, 1, 0)
    ArrayFeatureExtractor(x, idx)      -> stablehlo.gather along the last axis

Spec: onnx.ai/onnx/operators (BitCast, CumProd, TensorScatter), the ai.onnx.preview.training
operators (Adagrad, Adam, Momentum) and the ai.onnx.ml operators (Binarizer,
ArrayFeatureExtractor).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import stablehlo

from onnx_stablehlo.errors import ShapeError, UnsupportedAttributeError
from onnx_stablehlo.frontend import dtypes, emit
from onnx_stablehlo.frontend.context import LoweringContext, OnnxNode
from onnx_stablehlo.frontend.dtypes import DataType
from onnx_stablehlo.frontend.lowering.indexing import cumulative_scan
from onnx_stablehlo.frontend.registry import lowering
from onnx_stablehlo.frontend.shapes import Dim, is_static

_TRAINING = "ai.onnx.preview.training"
_ML = "ai.onnx.ml"




# BitCast -------------------------------------------------------------------------------------

_BIT_WIDTHS = {
    DataType.BOOL: 8,  # one byte per element in ONNX tensors
    DataType.INT2: 2, DataType.UINT2: 2,
    DataType.INT4: 4, DataType.UINT4: 4, DataType.FLOAT4E2M1: 4,
    DataType.INT8: 8, DataType.UINT8: 8,
    DataType.FLOAT8E4M3FN: 8, DataType.FLOAT8E4M3FNUZ: 8, DataType.FLOAT8E5M2: 8,
    DataType.FLOAT8E5M2FNUZ: 8, DataType.FLOAT8E8M0: 8,
    DataType.INT16: 16, DataType.UINT16: 16, DataType.FLOAT16: 16, DataType.BFLOAT16: 16,
    DataType.INT32: 32, DataType.UINT32: 32, DataType.FLOAT: 32,
    DataType.INT64: 64, DataType.UINT64: 64, DataType.DOUBLE: 64,
    DataType.COMPLEX64: 64, DataType.COMPLEX128: 128,
}


def _bitcast(value: ir.Value, dtype: DataType) -> ir.Value:
    """stablehlo.bitcast_convert between types of equal width (no op for the same type)."""
    if emit.dtype_of(value) == dtype:
        return value
    dims = emit.dims_of(value)
    return emit.record(stablehlo.BitcastConvertOp(emit.tensor_type(dims, dtype), value).result, dims)


def _to_bits(value: ir.Value) -> ir.Value:
    """``value`` as a type that bitcast_convert takes: bool as uint8 (0/1 bytes), complex64
    as uint64 ``imag << 32 | real`` (little-endian, as ONNX stores it); others unchanged."""
    dtype = emit.dtype_of(value)
    if dtype == DataType.BOOL:
        return emit.convert(value, DataType.UINT8)
    if dtype == DataType.COMPLEX64:
        half, full = DataType.UINT32, DataType.UINT64
        real = emit.convert(_bitcast(stablehlo.RealOp(value).result, half), full)
        imag = emit.convert(_bitcast(stablehlo.ImagOp(value).result, half), full)
        shift = emit.splat(32, full, emit.dims_of(value))
        return stablehlo.OrOp(stablehlo.ShiftLeftOp(imag, shift).result, real).result
    return value


def _from_bits(bits: ir.Value, dtype: DataType) -> ir.Value:
    """Inverse of :func:`_to_bits`: reinterprets ``bits`` as ``dtype``."""
    if dtype == DataType.BOOL:
        return emit.convert(_bitcast(bits, DataType.UINT8), DataType.BOOL)
    if dtype == DataType.COMPLEX64:
        part, half, full = DataType.FLOAT, DataType.UINT32, DataType.UINT64
        bits = _bitcast(bits, full)
        shift = emit.splat(32, full, emit.dims_of(bits))
        low = stablehlo.AndOp(bits, emit.splat(0xFFFFFFFF, full, emit.dims_of(bits))).result
        real = _bitcast(emit.convert(low, half), part)
        imag = _bitcast(emit.convert(stablehlo.ShiftRightLogicalOp(bits, shift).result, half), part)
        return stablehlo.ComplexOp(real, imag).result
    return _bitcast(bits, dtype)


@lowering("BitCast", since=26)
def lower_bit_cast(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value]:
    """Lowers BitCast to stablehlo.bitcast_convert; the shape is unchanged.

    Bool is one byte (0 or 1) in ONNX, so it goes through uint8 (a nonzero byte reads as true);
    complex values go through their float halves, the real part in the low bits.

    Spec: BitCast-26.
    Shapes: any, symbolic dims allowed; the result has the same shape.
    Dtypes: every non-string type; input and ``to`` must have the same bit width.
    Raises: UnsupportedAttributeError if ``to`` is not a type of the input's bit width (or
        is string).
    """
    source = ctx.input_dtype(0)
    code = node.attr_int("to")
    try:
        target = DataType(code)
    except ValueError:
        target = None
    width = _BIT_WIDTHS.get(source)
    same_width = sorted(d.name for d, w in _BIT_WIDTHS.items() if w == width)
    if target not in _BIT_WIDTHS or _BIT_WIDTHS[target] != width:
        name = target.name if target is not None else str(code)
        raise ctx.error(
            f"attribute to={code} ({name}) is not supported for a {source.name} input: BitCast needs "
            f"a type of the same bit width ({width} bits; accepted: {', '.join(same_width)})",
            UnsupportedAttributeError,
        )
    value = ctx.input(0)
    if source == target:  # complex128 always ends here: no other type has 128 bits
        return [value]
    return [_from_bits(_to_bits(value), target)]


# CumProd -------------------------------------------------------------------------------------


@lowering("CumProd", since=26)
def lower_cum_prod(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value]:
    """Lowers CumProd to a log-step scan: ``x *= shift(x, s)`` for s = 1, 2, 4, ... < n.

    The scan of CumSum's lowering (``indexing.cumulative_scan``) with multiplies and ones
    shifted in: each step is a stablehlo.pad and a stablehlo.multiply; ``exclusive`` shifts the
    input by one first; ``reverse`` reverses the axis before and after; a symbolic length n
    along the axis makes the steps a stablehlo.while (``s`` doubling while ``s < n``).

    Spec: CumProd-26.
    Shapes: x any, symbolic dims allowed; axis an int32/int64 scalar known at compile time.
    Dtypes: float16, bfloat16, float32, float64, int32, int64, uint32, uint64.
    Deviations: float products are associated pairwise, not left to right (differences within
        rounding).
    Raises: NonConstantInputError if axis is computed at run time.
    """
    return [cumulative_scan(ctx, node, stablehlo.MulOp, 1)]


# TensorScatter -------------------------------------------------------------------------------

_SCATTER_MODES = ("linear", "circular")


@lowering("TensorScatter", since=24)
def lower_tensor_scatter(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value]:
    """Lowers TensorScatter to a stablehlo.scatter that writes ``update`` into the cache.

    Sequence position ``s`` of batch ``b`` goes to ``write_indices[b] + s`` along ``axis``
    (modulo the cache length with ``mode="circular"``). Dim 0 is a scatter batching dim; every
    other dim is a window.

    Spec: TensorScatter-24.
    Shapes: past_cache ``[batch, D1, ..., max_len, ..., Dn]``; update the same but
        ``sequence_length <= max_len`` along ``axis``; write_indices int64 ``[batch]``, may be
        computed at run time (omitted: zeros). Symbolic dims allowed: update's dims off ``axis``
        are assumed equal to the cache's (checked when the feeds bind them), and
        ``sequence_length <= max_len`` is not checked for symbolic sizes.
    Dtypes: every type except string.
    Deviations: in linear mode, positions past the cache end (an error in the spec) are
        dropped.
    Raises: UnsupportedAttributeError for an unknown mode; ShapeError for axis 0 or shapes
        that do not match.
    """
    mode = node.attr_str("mode", "linear")
    if mode not in _SCATTER_MODES:
        raise ctx.unsupported_attribute("mode", mode, ", ".join(_SCATTER_MODES))
    cache, update = ctx.input(0), ctx.input(1)
    shape, update_shape = emit.dims_of(cache), emit.dims_of(update)
    rank = len(shape)
    axis = ctx.axis(node.attr_int("axis"), rank)
    if axis == 0:
        raise ctx.error("axis must not be 0 (the batch dimension)", ShapeError)
    if len(update_shape) != rank or any(
        isinstance(a, int) and isinstance(b, int) and (a > b if d == axis else a != b)
        for d, (a, b) in enumerate(zip(update_shape, shape))
    ):
        raise ctx.error(
            f"update {list(map(str, update_shape))} must match past_cache {list(map(str, shape))} "
            f"except along axis {axis}, where it may not be longer",
            ShapeError,
        )
    # Symbolic dims that must agree are merged (the equality is checked at run time).
    shape = tuple(
        d if i == axis else emit.broadcast_shapes((d,), (u,))[0] for i, (d, u) in enumerate(zip(shape, update_shape))
    )
    batch, length, max_length = shape[0], update_shape[axis], shape[axis]
    if ctx.has_input(2):
        starts = emit.broadcast_to(emit.convert(ctx.input(2), DataType.INT64), (batch, length), dims=[0])
    else:
        starts = emit.splat(0, DataType.INT64, (batch, length))
    positions = stablehlo.AddOp(starts, emit.iota((batch, length), 1, DataType.INT64)).result
    if mode == "circular":
        bound = emit.broadcast_to(emit.dim_value(max_length), (batch, length), dims=())
        positions = stablehlo.RemOp(stablehlo.AddOp(stablehlo.RemOp(positions, bound).result, bound).result, bound).result
    indices = emit.reshape(positions, (batch, length, 1))
    window_dims = [d for d in range(1, rank) if d != axis]
    numbers = stablehlo.ScatterDimensionNumbers.get(
        update_window_dims=window_dims,
        inserted_window_dims=[axis],
        input_batching_dims=[0],
        scatter_indices_batching_dims=[0],
        scattered_dims_to_operand_dims=[axis],
        index_vector_dim=2,
    )
    op = stablehlo.ScatterOp([cache.type], [cache], indices, [update], numbers, unique_indices=True)
    scalar_type = emit.tensor_type((), emit.dtype_of(cache))
    block = op.update_computation.blocks.append(scalar_type, scalar_type)
    with ir.InsertionPoint(block):
        stablehlo.ReturnOp([block.arguments[1]])
    return [emit.record(op.results[0], shape)]


# ai.onnx.preview.training optimizers ---------------------------------------------------------


def _optimizer_groups(ctx: LoweringContext, groups: int, op_type: str) -> list[list[ir.Value]]:
    """Splits the variadic inputs after R and T into ``groups`` lists of equal length."""
    count = ctx.num_inputs - 2
    if count <= 0 or count % groups:
        raise ctx.error(
            f"{op_type} takes R, T and {groups} tensors per optimized tensor, got {ctx.num_inputs} inputs",
            ShapeError,
        )
    per_group = count // groups
    tensors = [ctx.input(2 + i) for i in range(count)]
    return [tensors[g * per_group : (g + 1) * per_group] for g in range(groups)]


def _scalar_like(ctx: LoweringContext, index: int, dtype: DataType) -> ir.Value:
    """Input ``index`` (a one-element tensor) as a 0-d value of ``dtype``.

    A symbolic shape is assumed to hold one element (a dynamic_reshape to ``[]``, whose
    element count is checked when refined to the feeds' shapes)."""
    shape = emit.dims_of(ctx.input(index))
    if is_static(shape) and int(np.prod(shape, dtype=np.int64)) != 1:
        raise ctx.error(f"input {index} ('{ctx.node.input_names[index]}') must be a scalar, got shape {list(shape)}", ShapeError)
    return emit.convert(emit.reshape(ctx.input(index), []), dtype)


def _check_float(ctx: LoweringContext, value: ir.Value) -> DataType:
    dtype = emit.dtype_of(value)
    if dtype not in (DataType.FLOAT, DataType.DOUBLE):
        raise ctx.unsupported_dtype(dtype, "float32, float64")
    return dtype


def _common_shape(*values: ir.Value) -> tuple[Dim, ...]:
    """The shape an optimizer's tensors share (X_i, G_i, ...): their symbolic dims are merged,
    the equality checked when the feeds bind them."""
    return emit.broadcast_shapes(*[emit.dims_of(v) for v in values])


class _Elementwise:
    """Scalar-broadcasting arithmetic on values of one shape and dtype, for update formulas."""

    def __init__(self, shape: tuple[Dim, ...], dtype: DataType) -> None:
        self.shape, self.dtype = shape, dtype

    def lift(self, value: ir.Value | float) -> ir.Value:
        if not isinstance(value, ir.Value):
            return emit.splat(value, self.dtype, self.shape)
        return emit.broadcast_to(value, self.shape)

    def _binary(self, op: Callable, lhs: ir.Value | float, rhs: ir.Value | float) -> ir.Value:
        return op(self.lift(lhs), self.lift(rhs)).result

    def add(self, lhs, rhs):
        return self._binary(stablehlo.AddOp, lhs, rhs)

    def sub(self, lhs, rhs):
        return self._binary(stablehlo.SubtractOp, lhs, rhs)

    def mul(self, lhs, rhs):
        return self._binary(stablehlo.MulOp, lhs, rhs)

    def div(self, lhs, rhs):
        return self._binary(stablehlo.DivOp, lhs, rhs)

    def sqrt(self, value):
        return stablehlo.SqrtOp(self.lift(value)).result


def _regularized(f: _Elementwise, x: ir.Value, g: ir.Value, coefficient: float) -> ir.Value:
    """``norm_coefficient * X + G``."""
    return f.add(f.mul(coefficient, x), g) if coefficient else g


@lowering("Adagrad", since=1, domain=_TRAINING)
def lower_adagrad(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value]:
    """Lowers Adagrad (one step, any number of tensors) to its elementwise update formula.

    ``r = R / (1 + T * decay_factor)``, ``G' = norm_coefficient * X + G``, ``H' = H + G'^2``,
    ``X' = X - r * G' / (sqrt(H') + epsilon)``.

    Spec: ai.onnx.preview.training Adagrad-1.
    Shapes: R and T scalars; X_i, G_i, H_i, one shape per i (symbolic dims allowed). Outputs X'_1.., H'_1...
    Dtypes: float32, float64 (R is converted to each tensor's dtype).
    Raises: ShapeError if the inputs do not split into three equal groups.
    """
    xs, gs, hs = _optimizer_groups(ctx, 3, "Adagrad")
    decay = node.attr_float("decay_factor")
    epsilon = node.attr_float("epsilon")
    norm = node.attr_float("norm_coefficient")
    new_xs, new_hs = [], []
    for x, g, h in zip(xs, gs, hs):
        dtype = _check_float(ctx, x)
        scalars = _Elementwise((), dtype)
        rate = scalars.div(_scalar_like(ctx, 0, dtype), scalars.add(1.0, scalars.mul(_scalar_like(ctx, 1, dtype), decay)))
        f = _Elementwise(_common_shape(x, g, h), dtype)
        g_reg = _regularized(f, x, g, norm)
        h_new = f.add(h, f.mul(g_reg, g_reg))
        x_new = f.sub(x, f.div(f.mul(rate, g_reg), f.add(f.sqrt(h_new), epsilon)))
        new_xs.append(x_new)
        new_hs.append(h_new)
    return new_xs + new_hs


@lowering("Adam", since=1, domain=_TRAINING)
def lower_adam(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value]:
    """Lowers Adam (one step, any number of tensors) to its elementwise update formula.

    ``G' = norm_coefficient * X + G``, ``V' = alpha V + (1 - alpha) G'``,
    ``H' = beta H + (1 - beta) G'^2``, ``R' = R sqrt(1 - beta^T) / (1 - alpha^T)`` if T > 0 else
    ``R``, ``X' = (1 - norm_coefficient_post) (X - R' V' / (sqrt(H') + epsilon))``.

    Spec: ai.onnx.preview.training Adam-1.
    Shapes: R and T scalars; X_i, G_i, V_i, H_i, one shape per i (symbolic dims allowed). Outputs
        X'_1.., V'_1.., H'_1...
    Dtypes: float32, float64 (R and T are converted to each tensor's dtype).
    Raises: ShapeError if the inputs do not split into four equal groups.
    """
    xs, gs, vs, hs = _optimizer_groups(ctx, 4, "Adam")
    alpha, beta = node.attr_float("alpha"), node.attr_float("beta")
    epsilon = node.attr_float("epsilon")
    norm, norm_post = node.attr_float("norm_coefficient"), node.attr_float("norm_coefficient_post")
    t_positive = emit.compare(
        emit.reshape(emit.convert(ctx.input(1), DataType.INT64), []), emit.splat(0, DataType.INT64), "GT"
    )
    new_xs, new_vs, new_hs = [], [], []
    for x, g, v, h in zip(xs, gs, vs, hs):
        dtype = _check_float(ctx, x)
        s = _Elementwise((), dtype)
        rate, step = _scalar_like(ctx, 0, dtype), _scalar_like(ctx, 1, dtype)
        beta_power = stablehlo.PowOp(s.lift(beta), step).result
        alpha_power = stablehlo.PowOp(s.lift(alpha), step).result
        corrected = s.div(s.mul(rate, s.sqrt(s.sub(1.0, beta_power))), s.sub(1.0, alpha_power))
        rate = stablehlo.SelectOp(t_positive, corrected, rate).result
        f = _Elementwise(_common_shape(x, g, v, h), dtype)
        g_reg = _regularized(f, x, g, norm)
        v_new = f.add(f.mul(alpha, v), f.mul(1.0 - alpha, g_reg))
        h_new = f.add(f.mul(beta, h), f.mul(1.0 - beta, f.mul(g_reg, g_reg)))
        x_new = f.sub(x, f.mul(rate, f.div(v_new, f.add(f.sqrt(h_new), epsilon))))
        if norm_post:
            x_new = f.mul(1.0 - norm_post, x_new)
        new_xs.append(x_new)
        new_vs.append(v_new)
        new_hs.append(h_new)
    return new_xs + new_vs + new_hs


_MOMENTUM_MODES = ("standard", "nesterov")


@lowering("Momentum", since=1, domain=_TRAINING)
def lower_momentum(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value]:
    """Lowers Momentum (one step, any number of tensors) to its elementwise update formula.

    ``G' = norm_coefficient * X + G``, ``V' = alpha V + (T > 0 ? beta : 1) G'``; standard:
    ``X' = X - R V'``; nesterov: ``X' = X - R (G' + alpha V')``.

    Spec: ai.onnx.preview.training Momentum-1.
    Shapes: R and T scalars; X_i, G_i, V_i, one shape per i (symbolic dims allowed). Outputs X'_1.., V'_1...
    Dtypes: float32, float64 (R is converted to each tensor's dtype).
    Raises: UnsupportedAttributeError for a mode other than standard/nesterov; ShapeError if
        the inputs do not split into three equal groups.
    """
    mode = node.attr_str("mode")
    if mode not in _MOMENTUM_MODES:
        raise ctx.unsupported_attribute("mode", mode, ", ".join(_MOMENTUM_MODES))
    xs, gs, vs = _optimizer_groups(ctx, 3, "Momentum")
    alpha, beta = node.attr_float("alpha"), node.attr_float("beta")
    norm = node.attr_float("norm_coefficient")
    t_positive = emit.compare(
        emit.reshape(emit.convert(ctx.input(1), DataType.INT64), []), emit.splat(0, DataType.INT64), "GT"
    )
    new_xs, new_vs = [], []
    for x, g, v in zip(xs, gs, vs):
        dtype = _check_float(ctx, x)
        rate = _scalar_like(ctx, 0, dtype)
        beta_adjusted = stablehlo.SelectOp(t_positive, emit.splat(beta, dtype), emit.splat(1.0, dtype)).result
        f = _Elementwise(_common_shape(x, g, v), dtype)
        g_reg = _regularized(f, x, g, norm)
        v_new = f.add(f.mul(alpha, v), f.mul(beta_adjusted, g_reg))
        direction = v_new if mode == "standard" else f.add(g_reg, f.mul(alpha, v_new))
        new_xs.append(f.sub(x, f.mul(rate, direction)))
        new_vs.append(v_new)
    return new_xs + new_vs


# ai.onnx.ml ----------------------------------------------------------------------------------


@lowering("Binarizer", since=1, domain=_ML)
def lower_binarizer(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value]:
    """Lowers Binarizer to ``select(x > threshold, 1, 0)`` in x's dtype.

    Integer inputs compare with ``floor(threshold)`` in their own type (``x > t`` and
    ``x > floor(t)`` agree for integers), so no value is rounded.

    Spec: ai.onnx.ml Binarizer-1.
    Shapes: any, symbolic dims allowed.
    Dtypes: float32, float64, int32, int64.
    """
    x = ctx.input(0)
    dtype = emit.dtype_of(x)
    shape = emit.dims_of(x)
    threshold = node.attr_float("threshold")
    if dtypes.is_float(dtype):
        bound = emit.splat(threshold, dtype, shape)
        above = emit.compare(x, bound, "GT")
    elif dtype in (DataType.INT32, DataType.INT64):
        if np.isnan(threshold):
            above = emit.splat(False, DataType.BOOL, shape)
        else:
            info = np.iinfo(dtypes.numpy_dtype(dtype))
            floor = min(max(np.floor(threshold), float(info.min)), float(info.max))
            above = emit.compare(x, emit.splat(int(floor), dtype, shape), "GT")
            if threshold < info.min:
                above = emit.splat(True, DataType.BOOL, shape)
    else:
        raise ctx.unsupported_dtype(dtype, "float32, float64, int32, int64")
    return [stablehlo.SelectOp(above, emit.splat(1, dtype, shape), emit.splat(0, dtype, shape)).result]


@lowering("ArrayFeatureExtractor", since=1, domain=_ML)
def lower_array_feature_extractor(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value]:
    """Lowers ArrayFeatureExtractor to a stablehlo.gather along the last axis.

    Spec: ai.onnx.ml ArrayFeatureExtractor-1.
    Shapes: X static ``[..., n]``; Y int64 indices of any shape (flattened to ``k``); result
        ``[..., k]``, or ``[1, k]`` for a 1-D X (as onnxruntime does).
    Dtypes: float32, float64, int32, int64 (no strings).
    Deviations: out-of-range indices (an error in onnxruntime) are clamped.
    """
    x = ctx.input(0)
    dtype = emit.dtype_of(x)
    if dtype not in (DataType.FLOAT, DataType.DOUBLE, DataType.INT32, DataType.INT64):
        raise ctx.unsupported_dtype(dtype, "float32, float64, int32, int64")
    shape = emit.static_shape_of(x)
    if not shape:
        raise ctx.error("X must have rank >= 1", ShapeError)
    if len(shape) == 1:
        x = emit.reshape(x, (1, shape[0]))
        shape = (1, shape[0])
    count = int(np.prod(ctx.input_static_shape(1), dtype=np.int64))
    indices = emit.reshape(ctx.input(1), (count, 1))
    rank = len(shape)
    numbers = stablehlo.GatherDimensionNumbers.get(
        offset_dims=list(range(rank - 1)),
        collapsed_slice_dims=[rank - 1],
        operand_batching_dims=[],
        start_indices_batching_dims=[],
        start_index_map=[rank - 1],
        index_vector_dim=1,
    )
    # The gathered dim comes first (the indices' batch dim); offset dims fill positions 0..r-2
    # of the result, so the result is already [..., k].
    result_type = emit.tensor_type([*shape[:-1], count], dtype)
    return [stablehlo.GatherOp(x, indices, numbers, [*shape[:-1], 1], results=[result_type]).result]
