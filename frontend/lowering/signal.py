"""Lowering rules: signal processing (Fourier transforms, window functions, mel filterbanks).

Complex values are real tensors whose last dim holds ``[re]`` (size 1) or ``[re, im]`` (size 2),
as ONNX represents them.

    DFT(x)                           -> stablehlo.dot_general of x with a compile-time DFT matrix
                                        (real [n, c_in, k, c_out]); stablehlo.fft on complex
                                        values when that matrix would be too large
    STFT(signal, step, window)       -> stablehlo.gather of the frames (constant indices),
                                        * window, then the DFT above along the frame axis
    Hann/Hamming/BlackmanWindow(n)   -> a0 - a1 cos(2 pi i / N) + a2 cos(4 pi i / N) over an iota
    MelWeightMatrix(bins, len, ...)  -> triangular filters from iota comparisons; the band edges
                                        may be computed at run time

Transform lengths (``dft_length``, the axis, frame sizes, window sizes, mel bin counts) set
output shapes, so they must be known at compile time; the data may not.

Spec: onnx.ai/onnx/operators (DFT, STFT, HannWindow, HammingWindow, BlackmanWindow,
MelWeightMatrix).
"""

from __future__ import annotations

import numpy as np
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import stablehlo

from onnx_stablehlo.errors import ShapeError, UnsupportedAttributeError
from onnx_stablehlo.frontend import builders, dtypes
from onnx_stablehlo.frontend.context import LoweringContext, OnnxNode
from onnx_stablehlo.frontend.dtypes import DataType
from onnx_stablehlo.frontend.registry import lowering

_MATRIX_MAX_ELEMENTS = 1 << 22
"""DFT matrices up to this many elements (16 MiB in float32) are used; larger transforms use
stablehlo.fft, whose cost grows as n log n rather than n**2."""

_NARROW_FLOATS = (DataType.FLOAT16, DataType.BFLOAT16)
_SIGNAL_FLOATS = (DataType.FLOAT, DataType.DOUBLE, *_NARROW_FLOATS)
# Transforms of float16/bfloat16 signals run in float32 (dtypes.wide_dtype, as JAX's FFTs do),
# float32 and float64 in their own precision (dot_general at HIGHEST precision: no TF32 passes).
_SIGNAL_DTYPES = "float16, bfloat16, float32, float64"


def _check_signal_dtype(ctx: LoweringContext, index: int) -> DataType:
    dtype = ctx.input_dtype(index)
    if dtype not in _SIGNAL_FLOATS:
        raise ctx.unsupported_dtype(dtype, _SIGNAL_DTYPES)
    return dtype


# The transform -----------------------------------------------------------------------------


def _unit_circle(turns: np.ndarray, length: int) -> tuple[np.ndarray, np.ndarray]:
    """``cos`` and ``sin`` of ``2 pi turns / length`` (float64), with the angle reduced
    exactly (``turns mod length``) and quarter turns exact (``cos(pi / 2)`` is 0, not 6e-17)."""
    turns = np.asarray(turns, dtype=np.int64) % length
    angle = 2 * np.pi * turns / length
    cos, sin = np.cos(angle), np.sin(angle)
    quarter = (4 * turns) % length == 0
    which = (4 * turns // length) % 4
    cos = np.where(quarter, np.array([1.0, 0.0, -1.0, 0.0])[which], cos)
    sin = np.where(quarter, np.array([0.0, 1.0, 0.0, -1.0])[which], sin)
    return cos, sin


def _dft_matrix(n_in: int, c_in: int, length: int, inverse: bool, onesided: bool) -> np.ndarray:
    """The real DFT matrix ``M[n, c_in, k, c_out]`` (float64) with ``y[k, :] = sum x[n, :] M[n, :, k, :]``.

    Rows ``n < n_in`` of the input (``n_in <= length``; missing rows are the zero padding),
    complex parts ``c_in`` (1: real input). Forward and inverse transforms give ``[re, im]``
    (``c_out = 2``), with ``k < length // 2 + 1`` when one-sided. The inverse one-sided case
    (IRFFT) reads ``n_in`` Hermitian half-spectrum bins and gives ``length`` real samples.
    Angles are reduced exactly (``k * n mod length``) before the cosine.
    """
    if inverse and onesided:
        bins = np.arange(n_in)
        cos, sin = _unit_circle(bins[:, None] * np.arange(length)[None, :], length)
        # Bins 1 .. ceil(length/2) - 1 stand for themselves and their conjugate mirror image.
        weight = np.where((bins == 0) | (2 * bins == length), 1.0, 2.0)[:, None] / length
        matrix = np.zeros((n_in, 2, length, 1))
        matrix[:, 0, :, 0] = weight * cos
        # The imaginary parts of bin 0 and of the Nyquist bin do not contribute (numpy irfft);
        # their sines are exactly zero.
        matrix[:, 1, :, 0] = -weight * sin
        return matrix[:, :c_in]
    out_bins = length // 2 + 1 if onesided else length
    cos, sin = _unit_circle(np.arange(n_in)[:, None] * np.arange(out_bins)[None, :], length)
    sign = 1.0 if inverse else -1.0
    scale = 1.0 / length if inverse else 1.0
    cos, sin = scale * cos, scale * sign * sin
    # (a + ib)(cos + i sin) = (a cos - b sin) + i (a sin + b cos)
    matrix = np.empty((n_in, 2, out_bins, 2))
    matrix[:, 0, :, 0], matrix[:, 0, :, 1] = cos, sin
    matrix[:, 1, :, 0], matrix[:, 1, :, 1] = -sin, cos
    return matrix[:, :c_in]


def _slice_axis(value: ir.Value, axis: int, size: int) -> ir.Value:
    """The first ``size`` entries of ``value`` along ``axis``."""
    shape = builders.static_shape_of(value)
    if shape[axis] == size:
        return value
    limits = list(shape)
    limits[axis] = size
    return stablehlo.slice(value, [0] * len(shape), limits, [1] * len(shape))


def _fit_axis(value: ir.Value, axis: int, size: int) -> ir.Value:
    """``value`` truncated or zero-padded at the end of ``axis`` to ``size`` entries."""
    shape = builders.static_shape_of(value)
    if shape[axis] >= size:
        return _slice_axis(value, axis, size)
    rank = len(shape)
    high = [0] * rank
    high[axis] = size - shape[axis]
    zero = builders.splat(0, builders.dtype_of(value))
    return stablehlo.pad(value, zero, [0] * rank, high, [0] * rank)


def _dft(x: ir.Value, axis: int, length: int, inverse: bool, onesided: bool) -> ir.Value:
    """The DFT of ``x`` (``[..., c]``, c = 1 or 2) along ``axis`` (not the last dim).

    Returns ``[..., k, ..., 2]`` (``k = length`` or ``length // 2 + 1`` when one-sided), or
    ``[..., length, ..., 1]`` real samples for the inverse one-sided transform (IRFFT).

    NaN and inf: when ``length`` is not a power of two, onnxruntime's FFT (Bluestein's, through
    power-of-two FFTs of a chirp) turns a signal holding any NaN or inf into NaN throughout, and
    so does this lowering; a power-of-two length follows the matrix product (onnxruntime's
    radix-2 butterflies spread it in an algorithm-dependent pattern: docs/fuzzing.md).
    """
    y = _dft_values(x, axis, length, inverse, onesided)
    if length & (length - 1) == 0:
        return y
    shape = builders.static_shape_of(x)
    irfft = inverse and onesided
    used = _slice_axis(x, axis, min(shape[axis], length // 2 + 1 if irfft else length))
    rank = len(shape)
    finite = builders.all_finite(used, [axis, rank - 1])
    out_shape = builders.static_shape_of(y)
    finite = builders.broadcast_to(finite, out_shape, dims=[d for d in range(rank - 1) if d != axis])
    return stablehlo.select(finite, y, builders.full_like(y, float("nan")))


def _dft_values(x: ir.Value, axis: int, length: int, inverse: bool, onesided: bool) -> ir.Value:
    """:func:`_dft` for finite values: a matrix product, or stablehlo.fft for long transforms."""
    shape = builders.static_shape_of(x)
    c_in = shape[-1]
    irfft = inverse and onesided
    n_in = min(shape[axis], length // 2 + 1 if irfft else length)
    out_bins = length if irfft or not onesided else length // 2 + 1
    c_out = 1 if irfft else 2
    if n_in * c_in * out_bins * c_out > _MATRIX_MAX_ELEMENTS:
        return _dft_by_fft(x, axis, length, inverse, onesided)
    dtype = builders.dtype_of(x)
    compute = dtypes.wide_dtype(dtype)
    x = builders.convert(_slice_axis(x, axis, n_in), compute)
    matrix = builders.constant(_dft_matrix(n_in, c_in, length, inverse, onesided), compute)
    rank = len(shape)
    product = builders.dot_general(
        x, matrix, lhs_contracting=[axis, rank - 1], rhs_contracting=[0, 1], result_dtype=compute, precision="HIGHEST"
    )
    # dot_general puts the free dims of x first: move the bins back to `axis`.
    permutation = list(range(axis)) + [rank - 2] + list(range(axis, rank - 2)) + [rank - 1]
    return builders.convert(builders.transpose(product, permutation), dtype)


def _complex_type(shape: tuple[int, ...], dtype: DataType) -> ir.RankedTensorType:
    complex_dtype = DataType.COMPLEX128 if dtype == DataType.DOUBLE else DataType.COMPLEX64
    return builders.tensor_type(shape, complex_dtype)


def _dft_by_fft(x: ir.Value, axis: int, length: int, inverse: bool, onesided: bool) -> ir.Value:
    """:func:`_dft` with stablehlo.fft: the axis moves last, ``[re, im]`` become complex values."""
    dtype = builders.dtype_of(x)
    compute = dtypes.wide_dtype(dtype)
    shape = builders.static_shape_of(x)
    rank = len(shape)
    to_last = [d for d in range(rank - 1) if d != axis] + [axis, rank - 1]
    x = builders.convert(builders.transpose(x, to_last), compute)
    moved = builders.static_shape_of(x)
    parts = [
        builders.reshape(stablehlo.slice(x, [0] * (rank - 1) + [p], [*moved[:-1], p + 1], [1] * rank), moved[:-1])
        for p in range(moved[-1])
    ]
    irfft = inverse and onesided
    real_only = len(parts) == 1 and not inverse
    if real_only and onesided:
        signal = _fit_axis(parts[0], rank - 2, length)
        fft_type, out_len = "RFFT", length // 2 + 1
    else:
        imag = parts[1] if len(parts) == 2 else builders.splat(0, compute, moved[:-1])
        signal = stablehlo.complex(parts[0], imag)
        signal = _fit_axis(signal, rank - 2, length // 2 + 1 if irfft else length)
        fft_type = "IRFFT" if irfft else ("IFFT" if inverse else "FFT")
        out_len = length
    lead = list(builders.static_shape_of(signal)[:-1])
    if fft_type == "IRFFT":
        result_type = builders.tensor_type([*lead, out_len], compute)
    else:
        result_type = _complex_type((*lead, out_len), compute)
    spectrum = stablehlo.fft(
        signal, stablehlo.FftTypeAttr.get(fft_type), [length], results=[result_type]
    )
    if fft_type == "IRFFT":
        result = builders.reshape(spectrum, [*lead, out_len, 1])
    else:
        if onesided and not inverse and fft_type == "FFT":
            spectrum = _slice_axis(spectrum, rank - 2, length // 2 + 1)
        bins = builders.static_shape_of(spectrum)
        real = stablehlo.real(spectrum)
        imag = stablehlo.imag(spectrum)
        result = stablehlo.concatenate(
            [builders.reshape(real, [*bins, 1]), builders.reshape(imag, [*bins, 1])], rank - 1
        )
    back = [0] * rank
    for position, dim in enumerate(to_last):
        back[dim] = position
    return builders.convert(builders.transpose(result, back), dtype)


def _check_complex_dim(ctx: LoweringContext, shape: tuple[int, ...], what: str) -> None:
    if not shape or shape[-1] not in (1, 2):
        raise ctx.error(
            f"{what} must end in a dim of 1 (real) or 2 (real, imaginary), got shape {list(shape)}",
            ShapeError,
        )


def _check_flag(ctx: LoweringContext, node: OnnxNode, name: str) -> bool:
    value = node.attr_int(name)
    if value not in (0, 1):
        raise ctx.unsupported_attribute(name, value, "0, 1")
    return bool(value)


@lowering("DFT", since=17)  # axis is an attribute (default 1)
@lowering("DFT", since=20)  # 20 moved axis to an optional input (default -2)
def lower_dft(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value]:
    """Lowers DFT to a dot_general with a compile-time DFT matrix (stablehlo.fft when large).

    Covers the full transform and its inverse (``1/n`` scaled), the one-sided forward
    transform (RFFT: bins ``0 .. n // 2``) and the one-sided inverse (IRFFT: a Hermitian
    half spectrum to ``n`` real samples, last dim 1).

    Spec: DFT-17 (axis attribute), DFT-20 (axis input).
    Shapes: input static ``[..., c]`` with c = 1 (real) or 2 (complex); dft_length and axis
        int scalars known at compile time; the axis may not be the last dim. The input is
        truncated or zero-padded to dft_length.
    Dtypes: float16, bfloat16 (computed in float32), float32, float64.
    Raises: NonConstantInputError if dft_length or axis is computed at run time;
        ShapeError for a bad axis or last dim; UnsupportedAttributeError for flags not 0/1.
    """
    _check_signal_dtype(ctx, 0)
    shape = ctx.input_static_shape(0)
    _check_complex_dim(ctx, shape, "input")
    rank = len(shape)
    if node.since_version >= 20:
        axis = ctx.constant_int(2, "axis") if ctx.has_input(2) else -2
    else:
        axis = node.attr_int("axis")
    if not (-rank <= axis <= -2 or 0 <= axis <= rank - 2):
        raise ctx.error(f"axis {axis} is out of range [-{rank}, -2] U [0, {rank - 2}]", ShapeError)
    axis = axis + rank if axis < 0 else axis
    inverse = _check_flag(ctx, node, "inverse")
    onesided = _check_flag(ctx, node, "onesided")
    if ctx.has_input(1):
        length = ctx.constant_int(1, "dft_length")
    elif inverse and onesided:
        length = 2 * (shape[axis] - 1)
    else:
        length = shape[axis]
    if length < 1:
        raise ctx.error(f"dft_length must be positive, got {length}", ShapeError)
    return [_dft(ctx.input(0), axis, length, inverse, onesided)]


def _frames(signal: ir.Value, count: int, length: int, step: int) -> ir.Value:
    """``frames[b, f, n, c] = signal[b, f * step + n, c]`` as one gather with constant indices."""
    batch, _, parts = builders.static_shape_of(signal)
    starts = (np.arange(count)[:, None] * step + np.arange(length)[None, :]).astype(np.int64)
    indices = builders.constant(starts.reshape(count, length, 1))
    numbers = stablehlo.GatherDimensionNumbers.get(
        offset_dims=[0, 3],
        collapsed_slice_dims=[1],
        operand_batching_dims=[],
        start_indices_batching_dims=[],
        start_index_map=[1],
        index_vector_dim=2,
    )
    result_type = builders.tensor_type([batch, count, length, parts], builders.dtype_of(signal))
    return stablehlo.gather(
        signal, indices, numbers, [batch, 1, parts], indices_are_sorted=True, results=[result_type]
    )


@lowering("STFT", since=17)
def lower_stft(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value]:
    """Lowers STFT to a gather of the frames, a window multiply and DFT's matmul (or fft).

    Spec: STFT-17.
    Shapes: signal static ``[batch, length, c]`` (c = 1 real, 2 complex); frame_step and
        frame_length int scalars known at compile time; window ``[frame_length]`` may be
        computed at run time. Result ``[batch, frames, bins, 2]`` with
        ``frames = (length - frame_length) // frame_step + 1``.
    Dtypes: float16, bfloat16, float32, float64.
    Deviations: a rank-2 signal ``[batch, length]`` (the spec asks for rank 3; the legacy
        torch exporter writes rank 2) is read as a real ``[batch, length, 1]``, as onnxruntime
        does.
    Raises: NonConstantInputError if frame_step or frame_length is computed at run time;
        ShapeError for a window whose length differs from frame_length, a frame longer than
        the signal, or a non-positive step.
    """
    dtype = _check_signal_dtype(ctx, 0)
    shape = ctx.input_static_shape(0)
    signal = ctx.input(0)
    if len(shape) == 2:  # a real signal without its trailing 1, as onnxruntime accepts
        shape = (*shape, 1)
        signal = builders.reshape(signal, shape)
    if len(shape) != 3:
        raise ctx.error(f"signal must have rank 3 [batch, length, c] (or 2, real), got shape {list(shape)}", ShapeError)
    _check_complex_dim(ctx, shape, "signal")
    onesided = _check_flag(ctx, node, "onesided")
    step = ctx.constant_int(1, "frame_step")
    window = ctx.optional_input(2)
    window_shape = builders.static_shape_of(window) if window is not None else None
    if window_shape is not None and len(window_shape) != 1:
        raise ctx.error(f"window must be 1-D, got shape {list(window_shape)}", ShapeError)
    if ctx.has_input(3):
        length = ctx.constant_int(3, "frame_length")
        if window_shape is not None and window_shape[0] != length:
            raise ctx.error(f"window has {window_shape[0]} entries, frame_length is {length}", ShapeError)
    else:
        length = window_shape[0] if window_shape is not None else shape[1]
    if step < 1:
        raise ctx.error(f"frame_step must be positive, got {step}", ShapeError)
    if not 1 <= length <= shape[1]:
        raise ctx.error(f"frame_length {length} must be in [1, {shape[1]}] (the signal length)", ShapeError)
    count = (shape[1] - length) // step + 1
    frames = _frames(signal, count, length, step)
    if window is not None:
        window = builders.broadcast_to(builders.convert(window, dtype), builders.static_shape_of(frames), dims=[2])
        frames = stablehlo.multiply(frames, window)
    return [_dft(frames, 2, length, inverse=False, onesided=onesided)]


# Window functions --------------------------------------------------------------------------

_TWO_PI = 2 * np.pi


def _cosine_window(ctx: LoweringContext, node: OnnxNode, a0: float, a1: float, a2: float) -> ir.Value:
    """``a0 - a1 cos(2 pi i / N) + a2 cos(4 pi i / N)`` for ``i < size``; ``N = size`` when
    periodic, ``size - 1`` when symmetric. Computed in float64 for float64 and integer outputs,
    else in float32."""
    size = ctx.constant_int(0, "size")
    if size < 0:
        raise ctx.error(f"size must be non-negative, got {size}", ShapeError)
    periodic = _check_flag(ctx, node, "periodic")
    out_dtype = _output_datatype(ctx, node)
    compute = DataType.FLOAT if out_dtype in (DataType.FLOAT, *_NARROW_FLOATS) else DataType.DOUBLE
    period = size if periodic else size - 1
    index = stablehlo.iota(builders.tensor_type([size], compute), 0)
    # period 0 (a symmetric window of size 1) divides by zero, as the spec's formula does.
    step = _TWO_PI / period if period else np.inf

    def term(coefficient: float, multiple: int) -> ir.Value:
        angle = stablehlo.multiply(index, builders.splat(multiple * step, compute, [size]))
        return stablehlo.multiply(builders.splat(coefficient, compute, [size]), stablehlo.cosine(angle))

    window = stablehlo.subtract(builders.splat(a0, compute, [size]), term(a1, 1))
    if a2:
        window = stablehlo.add(window, term(a2, 2))
    return builders.convert(window, out_dtype)


_OUTPUT_DTYPES = (
    DataType.FLOAT, DataType.DOUBLE, DataType.FLOAT16, DataType.BFLOAT16,
    DataType.INT8, DataType.INT16, DataType.INT32, DataType.INT64,
    DataType.UINT8, DataType.UINT16, DataType.UINT32, DataType.UINT64,
)


def _output_datatype(ctx: LoweringContext, node: OnnxNode) -> DataType:
    code = node.attr_int("output_datatype")
    try:
        dtype = DataType(code)
    except ValueError:
        dtype = None
    if dtype not in _OUTPUT_DTYPES:
        accepted = ", ".join(f"{int(d)} ({d.name})" for d in _OUTPUT_DTYPES)
        raise ctx.error(
            f"attribute output_datatype={code} is not supported (accepted: {accepted})",
            UnsupportedAttributeError,
        )
    return dtype


@lowering("HannWindow", since=17)
def lower_hann_window(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value]:
    """Lowers HannWindow to ``0.5 - 0.5 cos(2 pi i / N)`` over an iota.

    A window whose size is known is usually computed at compile time by the importer; this
    rule emits the ops for windows too large to fold.

    Spec: HannWindow-17.
    Shapes: size an int scalar known at compile time; result ``[size]``.
    Dtypes: result output_datatype (any real numeric type).
    Raises: NonConstantInputError if size is computed at run time; UnsupportedAttributeError
        for an unknown output_datatype or periodic not 0/1.
    """
    return [_cosine_window(ctx, node, 0.5, 0.5, 0.0)]


@lowering("HammingWindow", since=17)
def lower_hamming_window(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value]:
    """Lowers HammingWindow to ``25/46 - 21/46 cos(2 pi i / N)`` over an iota.

    Spec: HammingWindow-17.
    Shapes: size an int scalar known at compile time; result ``[size]``.
    Dtypes: result output_datatype (any real numeric type).
    Raises: as :func:`lower_hann_window`.
    """
    return [_cosine_window(ctx, node, 25.0 / 46.0, 21.0 / 46.0, 0.0)]


@lowering("BlackmanWindow", since=17)
def lower_blackman_window(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value]:
    """Lowers BlackmanWindow to ``0.42 - 0.5 cos(2 pi i / N) + 0.08 cos(4 pi i / N)``.

    Spec: BlackmanWindow-17.
    Shapes: size an int scalar known at compile time; result ``[size]``.
    Dtypes: result output_datatype (any real numeric type).
    Raises: as :func:`lower_hann_window`.
    """
    return [_cosine_window(ctx, node, 0.42, 0.5, 0.08)]


# Mel filterbank ----------------------------------------------------------------------------


def _scalar_f64(ctx: LoweringContext, index: int, what: str) -> ir.Value:
    """A (run-time) one-element input as a float64 scalar tensor."""
    if ctx.input_rank(index) and int(np.prod(ctx.input_static_shape(index))) != 1:
        raise ctx.error(f"{what} must be a scalar, got shape {list(ctx.input_static_shape(index))}", ShapeError)
    return builders.reshape(builders.convert(ctx.input(index), DataType.DOUBLE), [])


@lowering("MelWeightMatrix", since=17)
def lower_mel_weight_matrix(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value]:
    """Lowers MelWeightMatrix to triangular filters built from iota comparisons.

    The ``num_mel_bins + 2`` band edges are spaced evenly on the mel scale
    (``2595 log10(1 + f / 700)``) and mapped to spectrogram bins
    ``floor((dft_length + 1) f / sample_rate)``; filter ``i`` rises from edge ``i`` to 1 at edge
    ``i + 1`` and falls to 0 at edge ``i + 2``. Edges are computed in float64.

    Spec: MelWeightMatrix-17.
    Shapes: num_mel_bins and dft_length int scalars known at compile time; sample_rate,
        lower_edge_hertz and upper_edge_hertz scalars, may be computed at run time. Result
        ``[dft_length // 2 + 1, num_mel_bins]``.
    Dtypes: result output_datatype (any real numeric type).
    Raises: NonConstantInputError if num_mel_bins or dft_length is computed at run time;
        UnsupportedAttributeError for an unknown output_datatype.
    """
    mel_bins = ctx.constant_int(0, "num_mel_bins")
    dft_length = ctx.constant_int(1, "dft_length")
    if mel_bins < 1 or dft_length < 1:
        raise ctx.error(f"num_mel_bins ({mel_bins}) and dft_length ({dft_length}) must be positive", ShapeError)
    out_dtype = _output_datatype(ctx, node)
    f64 = DataType.DOUBLE
    sample_rate = _scalar_f64(ctx, 2, "sample_rate")
    lower, upper = _scalar_f64(ctx, 3, "lower_edge_hertz"), _scalar_f64(ctx, 4, "upper_edge_hertz")
    ln10 = float(np.log(10.0))

    def scalar(value: float) -> ir.Value:
        return builders.splat(value, f64)

    def to_mel(hertz: ir.Value) -> ir.Value:
        ratio = builders.divide(hertz, scalar(700.0))
        return stablehlo.multiply(stablehlo.log_plus_one(ratio), scalar(2595.0 / ln10))

    low_mel, high_mel = to_mel(lower), to_mel(upper)
    edges = mel_bins + 2
    mel_step = builders.divide(stablehlo.subtract(high_mel, low_mel), scalar(float(edges)))
    index = stablehlo.iota(builders.tensor_type([edges], f64), 0)
    mel = stablehlo.add(
        stablehlo.multiply(index, builders.broadcast_to(mel_step, [edges])), builders.broadcast_to(low_mel, [edges])
    )
    hertz = stablehlo.multiply(
        builders.splat(700.0, f64, [edges]),
        stablehlo.exponential_minus_one(stablehlo.multiply(mel, builders.splat(ln10 / 2595.0, f64, [edges]))),
    )
    scaled = stablehlo.multiply(builders.splat(float(dft_length + 1), f64, [edges]), hertz)
    edge_bins = stablehlo.floor(stablehlo.divide(scaled, builders.broadcast_to(sample_rate, [edges])))

    spectrum_bins = dft_length // 2 + 1
    grid = (spectrum_bins, mel_bins)

    def edge(offset: int) -> ir.Value:
        picked = stablehlo.slice(edge_bins, [offset], [offset + mel_bins], [1])
        return builders.broadcast_to(picked, grid, dims=[1])

    left, center, right = edge(0), edge(1), edge(2)
    j = stablehlo.iota(builders.tensor_type(grid, f64), 0)
    rising = stablehlo.divide(stablehlo.subtract(j, left), stablehlo.subtract(center, left))
    falling = stablehlo.divide(stablehlo.subtract(right, j), stablehlo.subtract(right, center))
    zero, one = builders.splat(0.0, f64, grid), builders.splat(1.0, f64, grid)
    on_rise = stablehlo.and_(builders.compare(left, j, "LE"), builders.compare(j, center, "LT"))
    on_fall = stablehlo.and_(builders.compare(center, j, "LT"), builders.compare(j, right, "LT"))
    weights = stablehlo.select(on_fall, falling, zero)
    weights = stablehlo.select(on_rise, rising, weights)
    weights = stablehlo.select(builders.compare(j, center, "EQ"), one, weights)
    return [builders.convert(weights, out_dtype)]
