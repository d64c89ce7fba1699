"""Parity of the signal family (frontend/lowering/signal.py) against onnxruntime and onnx.reference.

Signals flow through graph inputs; lengths, axes and sizes the lowering needs at compile time are
Constant nodes. Transforms are compared with a tolerance scaled by the largest magnitude of the
expected result, since both sides accumulate rounding over whole rows.

DFT and STFT are checked against onnx.reference (numpy's FFT): onnxruntime's DFT of lengths
that are not powers of two (Bluestein's algorithm) is off by up to 5e-4 of the largest
magnitude in float32 and 1e-8 in float64, more than either dtype's tolerance.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import onnx_stablehlo
from onnx_stablehlo.errors import NonConstantInputError, ShapeError, UnsupportedAttributeError
from tests.util import TOLERANCES, compile_and_run, emitted_text, onnx_type_name, oracle_run, parse, reference_run


def _ir_version(opset: int) -> int:
    return 9 if opset <= 20 else 10


def _dims(shape) -> str:
    return ", ".join(str(d) for d in shape)


def assert_spectrum_close(actual, expected, dtype) -> None:
    """Same dtype and shape; values within the dtype's tolerance times the largest magnitude."""
    assert len(actual) == len(expected)
    for got, want in zip(actual, expected):
        assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, got.shape, want.dtype, want.shape)
        rtol, atol = TOLERANCES[str(np.dtype(dtype))]
        scale = max(1.0, float(np.max(np.abs(want.astype(np.float64)), initial=0.0)))
        np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=rtol, atol=atol * scale)


# DFT -----------------------------------------------------------------------------------------

# (input shape, axis, onesided, inverse, dft_length)
DFT_CASES = [
    ((2, 8, 1), 1, 0, 0, None),
    ((3, 6, 5, 1), 2, 1, 0, None),
    ((3, 6, 5, 1), -3, 1, 0, None),
    ((2, 7, 2), 1, 0, 0, None),
    ((2, 8, 3, 2), 1, 0, 1, None),
    ((2, 5, 2), 1, 1, 1, None),
    ((2, 5, 3, 2), 1, 1, 1, 9),
    ((2, 8, 1), 1, 0, 0, 5),
    ((2, 8, 2), 1, 0, 0, 12),
    ((4, 3, 1), 0, 1, 0, 7),
]
DFT_IDS = ["real", "rfft-axis2", "rfft-negative-axis", "complex-odd", "inverse", "irfft",
           "irfft-odd-length", "truncated", "zero-padded", "rfft-axis0-padded"]


def _dft_out_shape(shape, axis, onesided, inverse, length):
    axis = axis % len(shape)
    if length is None:
        length = 2 * (shape[axis] - 1) if onesided and inverse else shape[axis]
    out = list(shape)
    out[axis] = length // 2 + 1 if onesided and not inverse else length
    out[-1] = 1 if onesided and inverse else 2
    return out


def dft_model(opset, dtype, shape, axis, onesided, inverse, length):
    ty = onnx_type_name(dtype)
    lines, args = [], ["x"]
    if length is not None:
        lines.append(f"n = Constant <value = int64 {{{length}}}> ()")
    attrs = [f"onesided = {onesided}", f"inverse = {inverse}"]
    if opset >= 20:
        lines.append(f"a = Constant <value = int64 {{{axis}}}> ()")
        args += ["n" if length is not None else "", "a"]
    else:
        attrs.append(f"axis = {axis}")
        if length is not None:
            args.append("n")
    out = _dft_out_shape(shape, axis, onesided, inverse, length)
    body = "\n  ".join([*lines, f"y = DFT <{', '.join(attrs)}> ({', '.join(args)})"])
    return parse(f"""<ir_version: {_ir_version(opset)}, opset_import: ["" : {opset}]>
g ({ty}[{_dims(shape)}] x) => ({ty}[{_dims(out)}] y) {{
  {body}
}}""")


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("opset", [17, 20], ids=lambda v: f"opset{v}")
@pytest.mark.parametrize("case", DFT_CASES, ids=DFT_IDS)
def test_dft_matches_reference(case, opset, dtype, rng):
    model = dft_model(opset, dtype, *case)
    feeds = {"x": rng.standard_normal(case[0]).astype(dtype)}
    assert_spectrum_close(compile_and_run(model, feeds), reference_run(model, feeds), dtype)


@pytest.mark.parametrize("dtype", [np.float16, ml_dtypes.bfloat16], ids=["f16", "bf16"])
def test_dft_narrow_floats_compute_in_float32(dtype, rng):
    model = dft_model(20, dtype, (2, 16, 2), 1, 0, 0, None)
    x = rng.standard_normal((2, 16, 2)).astype(dtype)
    expected = np.fft.fft(x[..., 0].astype(np.float64) + 1j * x[..., 1].astype(np.float64), axis=1)
    want = np.stack([expected.real, expected.imag], axis=-1).astype(dtype)
    assert_spectrum_close(compile_and_run(model, {"x": x}), [want], dtype)
    assert "stablehlo.dot_general" in emitted_text(model)


def test_dft_is_a_matmul_with_a_constant_matrix():
    text = emitted_text(dft_model(20, np.float32, (2, 8, 1), 1, 1, 0, None))
    assert "stablehlo.dot_general" in text and "precision = [HIGHEST, HIGHEST]" in text
    assert "tensor<8x1x5x2xf32>" in text  # [n, real, bins, re/im]
    assert "stablehlo.fft" not in text


# (input shape, onesided, inverse, dft_length): matrices above 2**22 elements use stablehlo.fft.
LONG_CASES = [
    ((2, 2048, 2), 0, 0, None),
    ((2, 2048, 2), 0, 1, None),
    ((1, 4096, 1), 1, 0, None),
    ((1, 1025, 2), 1, 1, None),
    ((1, 3000, 1), 0, 0, 2100),
    ((1, 1500, 2), 0, 0, 3000),
    ((1, 1000, 2), 1, 1, 3000),
    ((1, 2048, 1), 0, 1, None),
]


@pytest.mark.parametrize(
    "case", LONG_CASES, ids=["fft", "ifft", "rfft", "irfft", "truncated", "zero-padded", "irfft-padded", "ifft-real"]
)
def test_long_dft_uses_stablehlo_fft(case, rng):
    shape, onesided, inverse, length = case
    model = dft_model(20, np.float32, shape, 1, onesided, inverse, length)
    feeds = {"x": rng.standard_normal(shape).astype(np.float32)}
    assert_spectrum_close(compile_and_run(model, feeds), reference_run(model, feeds), np.float32)
    text = emitted_text(model)
    assert "stablehlo.fft" in text and "stablehlo.dot_general" not in text


def test_dft_rejects_the_complex_axis():
    with pytest.raises(ShapeError, match=r"axis 2 is out of range"):
        emitted_text(dft_model(17, np.float32, (2, 8, 1), 2, 0, 0, None))


def test_dft_rejects_a_bad_last_dim():
    model = parse("""<ir_version: 9, opset_import: ["" : 17]>
g (float[2, 8, 3] x) => (float[2, 8, 2] y) {
  y = DFT (x)
}""")
    with pytest.raises(ShapeError, match="must end in a dim of 1"):
        emitted_text(model)


def test_dft_length_computed_at_run_time_is_rejected():
    model = parse("""<ir_version: 9, opset_import: ["" : 20]>
g (float[2, 8, 1] x, int64 n) => (float[2, 8, 2] y) {
  y = DFT (x, n)
}""")
    with pytest.raises(NonConstantInputError, match="dft_length|'n'"):
        onnx_stablehlo.lower(model, check=False)


def test_dft_length_fed_at_run_time_is_value_specialized(rng):
    model = parse("""<ir_version: 9, opset_import: ["" : 20]>
g (float[2, 8, 1] x, int64 n) => (float[2, ?, 2] y) {
  y = DFT (x, n)
}""")
    feeds = {"x": rng.standard_normal((2, 8, 1)).astype(np.float32), "n": np.array(6, dtype=np.int64)}
    assert_spectrum_close(compile_and_run(model, feeds), reference_run(model, feeds), np.float32)


# STFT ----------------------------------------------------------------------------------------

# (signal shape, step, frame_length, window length or None, onesided)
STFT_CASES = [
    ((2, 64, 1), 8, 16, None, 1),
    ((2, 64, 1), 8, None, 16, 1),
    ((1, 50, 1), 7, 12, 12, 0),
    ((2, 40, 2), 5, 10, None, 0),
    ((1, 33, 1), 4, 9, 9, 1),
]
STFT_IDS = ["frame-length", "window", "window-and-length-two-sided", "complex", "odd-frame"]


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("case", STFT_CASES, ids=STFT_IDS)
def test_stft_matches_reference(case, dtype, rng):
    shape, step, length, window, onesided = case
    ty = onnx_type_name(dtype)
    n = length if length is not None else window
    frames = (shape[1] - n) // step + 1
    bins = n // 2 + 1 if onesided else n
    inputs = [f"{ty}[{_dims(shape)}] x"] + ([f"{ty}[{window}] w"] if window else [])
    lines = [f"s = Constant <value = int64 {{{step}}}> ()"]
    args = ["x", "s", "w" if window else ""]
    if length is not None:
        lines.append(f"l = Constant <value = int64 {{{length}}}> ()")
        args.append("l")
    body = "\n  ".join([*lines, f"y = STFT <onesided = {onesided}> ({', '.join(args).rstrip(', ')})"])
    model = parse(f"""<ir_version: 9, opset_import: ["" : 17]>
g ({', '.join(inputs)}) => ({ty}[{shape[0]}, {frames}, {bins}, 2] y) {{
  {body}
}}""")
    feeds = {"x": rng.standard_normal(shape).astype(dtype)}
    if window:
        feeds["w"] = rng.random(window).astype(dtype)
    assert_spectrum_close(compile_and_run(model, feeds), reference_run(model, feeds), dtype)
    assert "stablehlo.gather" in emitted_text(model)


def test_stft_rank2_signal_is_real_like_onnxruntime(rng):
    """The legacy torch exporter writes a [batch, length] signal; onnxruntime reads it as real."""
    model = parse("""<ir_version: 9, opset_import: ["" : 17]>
g (float[2, 64] x, float[16] w) => (float[2, 7, 9, 2] y) {
  s = Constant <value = int64 {8}> ()
  l = Constant <value = int64 {16}> ()
  y = STFT <onesided = 1> (x, s, w, l)
}""")
    feeds = {"x": rng.standard_normal((2, 64)).astype(np.float32), "w": rng.random(16).astype(np.float32)}
    assert_spectrum_close(compile_and_run(model, feeds), oracle_run(model, feeds), np.float32)


def test_stft_rejects_a_window_of_the_wrong_length():
    model = parse("""<ir_version: 9, opset_import: ["" : 17]>
g (float[1, 32, 1] x, float[8] w) => (float[1, 4, 6, 2] y) {
  s = Constant <value = int64 {8}> ()
  l = Constant <value = int64 {10}> ()
  y = STFT (x, s, w, l)
}""")
    with pytest.raises(ShapeError, match="window has 8 entries, frame_length is 10"):
        emitted_text(model)


# Windows -------------------------------------------------------------------------------------

WINDOWS = ["HannWindow", "HammingWindow", "BlackmanWindow"]
# Above the importer's folding limit (65536 elements), so the rule emits the window.
LARGE = 70001


# The importer first tries to fold the node with onnx.reference, whose float16 index overflows
# past 65504; that result is discarded (too large to fold) and the rule runs.
@pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning", "ignore:invalid value encountered:RuntimeWarning")
@pytest.mark.parametrize("periodic", [1, 0], ids=["periodic", "symmetric"])
@pytest.mark.parametrize("out", [(1, np.float32), (11, np.float64), (10, np.float16)], ids=["f32", "f64", "f16"])
@pytest.mark.parametrize("op", WINDOWS)
def test_large_window_matches_onnxruntime(op, out, periodic):
    code, dtype = out
    model = parse(f"""<ir_version: 9, opset_import: ["" : 17]>
g (float[1] unused) => ({onnx_type_name(dtype)}[{LARGE}] y) {{
  n = Constant <value = int64 {{{LARGE}}}> ()
  y = {op} <periodic = {periodic}, output_datatype = {code}> (n)
}}""")
    feeds = {"unused": np.zeros(1, np.float32)}
    expected = oracle_run(model, feeds)
    actual = compile_and_run(model, feeds)
    rtol, atol = TOLERANCES[str(np.dtype(dtype))]
    assert actual[0].dtype == expected[0].dtype and actual[0].shape == expected[0].shape
    np.testing.assert_allclose(actual[0].astype(np.float64), expected[0].astype(np.float64), rtol=rtol, atol=max(atol, 1e-6))
    assert "stablehlo.cosine" in emitted_text(model)


@pytest.mark.parametrize("op", WINDOWS)
def test_window_size_fed_at_run_time(op):
    model = parse(f"""<ir_version: 9, opset_import: ["" : 17]>
g (int32 n) => (float[?] y) {{
  y = {op} (n)
}}""")
    feeds = {"n": np.array(10, dtype=np.int32)}
    assert_spectrum_close(compile_and_run(model, feeds), oracle_run(model, feeds), np.float32)


def test_window_rejects_an_unknown_output_datatype():
    model = parse(f"""<ir_version: 9, opset_import: ["" : 17]>
g (float[1] unused) => (bool[{LARGE}] y) {{
  n = Constant <value = int64 {{{LARGE}}}> ()
  y = HannWindow <output_datatype = 9> (n)
}}""")
    with pytest.raises(UnsupportedAttributeError, match="output_datatype=9"):
        emitted_text(model)


# MelWeightMatrix -----------------------------------------------------------------------------

# (num_mel_bins, dft_length, sample_rate, lower_edge_hertz, upper_edge_hertz)
MEL_CASES = [
    (8, 16, 8192, 0.0, 4096.0),
    (20, 512, 16000, 20.0, 8000.0),
    (10, 255, 22050, 100.0, 5000.0),
]


@pytest.mark.parametrize("out", [(1, np.float32), (11, np.float64)], ids=["f32", "f64"])
@pytest.mark.parametrize("case", MEL_CASES, ids=["small", "speech", "odd-length"])
def test_mel_weight_matrix_matches_onnxruntime(case, out):
    mel_bins, length, rate, low, high = case
    code, dtype = out
    model = parse(f"""<ir_version: 9, opset_import: ["" : 17]>
g (float lo, float hi, int64 rate) => ({onnx_type_name(dtype)}[{length // 2 + 1}, {mel_bins}] y) {{
  m = Constant <value = int64 {{{mel_bins}}}> ()
  n = Constant <value = int64 {{{length}}}> ()
  y = MelWeightMatrix <output_datatype = {code}> (m, n, rate, lo, hi)
}}""")
    feeds = {"lo": np.array(low, np.float32), "hi": np.array(high, np.float32), "rate": np.array(rate, np.int64)}
    assert_spectrum_close(compile_and_run(model, feeds), oracle_run(model, feeds), dtype)
    assert "stablehlo.log_plus_one" in emitted_text(model)
