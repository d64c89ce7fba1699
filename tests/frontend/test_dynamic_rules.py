"""Symbolic dims in Pad (reflect/edge/wrap), Resize (linear/cubic) and strided SAME/ceil pooling.

Each model is compiled once with ``?`` dims (``artifact is not None``) and run at two shapes
against onnxruntime.
"""

from __future__ import annotations

from tests.util import check_symbolic, normal_feeds

import numpy as np
import pytest

import onnx_stablehlo
from tests.util import assert_allclose_for_dtype, check_dynamic, ort_run, parse






# Pad ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["reflect", "edge", "wrap"])
def test_pad_modes_with_symbolic_dims(mode, rng):
    text = f"""<ir_version: 9, opset_import: ["" : 19]>
g (float[N, C] x) => (float[M, D] y) {{
  pads = Constant <value = int64[4] {{1, 2, 0, 3}}> ()
  y = Pad <mode = "{mode}"> (x, pads)
}}"""
    compiled = check_symbolic(None, text, normal_feeds("x"), [(3, 4), (6, 5)], rng, oracle=ort_run)
    assert "dynamic_iota" in compiled.artifact.text


@pytest.mark.parametrize(
    "mode, end",
    # onnxruntime wraps around the cropped axis (the static rule and numpy.pad around the whole
    # one), so wrap is checked without cropping.
    [("reflect", -1), ("edge", -1), ("wrap", 2)],
)
def test_pad_modes_negative_pads_and_static_axis(mode, end, rng):
    # axis 1 is static (compile-time map into a dynamic_gather), axis 2 symbolic (cropped at the end)
    text = f"""<ir_version: 9, opset_import: ["" : 19]>
g (float[N, 3, W] x) => (float[N, E, F] y) {{
  pads = Constant <value = int64[6] {{0, 2, 3, 0, 1, {end}}}> ()
  y = Pad <mode = "{mode}"> (x, pads)
}}"""
    check_symbolic(None, text, normal_feeds("x"), [(2, 3, 5), (1, 3, 9)], rng, oracle=ort_run)


def test_pad_reflect_single_element_axis(rng):
    text = """<ir_version: 9, opset_import: ["" : 18]>
g (float[N] x) => (float[M] y) {
  pads = Constant <value = int64[2] {2, 3}> ()
  y = Pad <mode = "edge"> (x, pads)
}"""
    check_symbolic(None, text, normal_feeds("x"), [(1,), (4,)], rng, oracle=ort_run)


# Conv and pooling: SAME_* and ceil_mode with strides ----------------------------------------------


def _conv_model(attrs: str, kernel: tuple[int, int], channels: int = 3, out_channels: int = 4) -> str:
    kh, kw = kernel
    return f"""<ir_version: 9, opset_import: ["" : 18]>
g (float[N, {channels}, H, W] x, float[{out_channels}, {channels}, {kh}, {kw}] w, float[{out_channels}] b)
  => (float[N, {out_channels}, P, Q] y) {{
  y = Conv <{attrs}> (x, w, b)
}}"""


def _conv_feeds(kernel, channels=3, out_channels=4):
    def feeds(rng, shape):
        return {
            "x": rng.standard_normal(shape).astype(np.float32),
            "w": rng.standard_normal((out_channels, channels, *kernel)).astype(np.float32),
            "b": rng.standard_normal(out_channels).astype(np.float32),
        }

    return feeds


@pytest.mark.parametrize("auto_pad", ["SAME_UPPER", "SAME_LOWER"])
@pytest.mark.parametrize("kernel, strides, dilations", [((3, 3), (2, 2), (1, 1)), ((4, 2), (3, 2), (1, 1)),
                                                        ((5, 3), (2, 3), (1, 1)), ((1, 1), (2, 2), (1, 1))])
def test_conv_same_with_stride_on_symbolic_dims(auto_pad, kernel, strides, dilations, rng):
    attrs = f'auto_pad = "{auto_pad}", strides = {list(strides)}, dilations = {list(dilations)}'
    # 9x12 and 10x13 hit both "stride divides the size" and a remainder
    compiled = check_symbolic(None, _conv_model(attrs, kernel), _conv_feeds(kernel), [(1, 3, 9, 12), (2, 3, 10, 13)], rng,
                              rtol=1e-4, atol=1e-4, oracle=ort_run)
    if kernel != (1, 1):
        assert "stablehlo.dynamic_pad" in compiled.artifact.text


def _pool_model(op: str, attrs: str) -> str:
    return f"""<ir_version: 9, opset_import: ["" : 19]>
g (float[N, 2, H, W] x) => (float[N, 2, P, Q] y) {{
  y = {op} <{attrs}> (x)
}}"""


_POOLS = [("MaxPool", 0), ("LpPool", 0), ("AveragePool", 0), ("AveragePool", 1)]  # (op, count_include_pad)


@pytest.mark.parametrize("op, include_pad", _POOLS)
@pytest.mark.parametrize("auto_pad", ["SAME_UPPER", "SAME_LOWER"])
def test_pool_same_with_stride_on_symbolic_dims(op, include_pad, auto_pad, rng):
    attrs = f'auto_pad = "{auto_pad}", kernel_shape = [3, 2], strides = [2, 2]'
    if op == "AveragePool":
        attrs += f", count_include_pad = {include_pad}"
    check_symbolic(None, _pool_model(op, attrs), normal_feeds("x"), [(1, 2, 7, 6), (2, 2, 10, 9)], rng, rtol=1e-5, atol=1e-5, oracle=ort_run)


@pytest.mark.parametrize("op, include_pad", [p for p in _POOLS if p[0] != "LpPool"])
@pytest.mark.parametrize("pads", [[0, 0, 0, 0], [1, 1, 0, 0]])
def test_pool_ceil_mode_with_stride_on_symbolic_dims(op, include_pad, pads, rng):
    attrs = f"kernel_shape = [3, 3], strides = [2, 2], ceil_mode = 1, pads = {pads}"
    if op == "AveragePool":
        attrs += f", count_include_pad = {include_pad}"
    check_symbolic(None, _pool_model(op, attrs), normal_feeds("x"), [(1, 2, 8, 7), (2, 2, 11, 10)], rng, rtol=1e-5, atol=1e-5, oracle=ort_run)


def test_pool_ceil_mode_that_may_drop_a_window_falls_back(rng):
    # end padding 2 + stride 2 > window 3: whether the last window is kept depends on the size
    model = parse(_pool_model("MaxPool", "kernel_shape = [3, 3], strides = [2, 2], ceil_mode = 1, pads = [0, 0, 2, 2]"))
    compiled = onnx_stablehlo.compile(model)
    assert compiled.artifact is None and "ceil_mode" in compiled.dynamic_error
    for shape in [(1, 2, 8, 7), (1, 2, 9, 9)]:
        feeds = normal_feeds("x")(rng, shape)
        assert_allclose_for_dtype(compiled.run(feeds), ort_run(model, feeds))


# Resize: linear, cubic and general nearest ----------------------------------------------------------


def _symbolic_resize_model(attrs: str, scales: list[float] | None = None, sizes: list[int] | None = None,
                  dtype: str = "float", opset: int = 19) -> str:
    if scales is not None:
        inputs = f"roi = Constant <value = float[0] {{}}> ()\n  scales = Constant <value = float[{len(scales)}] {{{', '.join(map(str, scales))}}}> ()\n  y = Resize <{attrs}> (x, roi, scales)"
    else:
        inputs = f"roi = Constant <value = float[0] {{}}> ()\n  sizes = Constant <value = int64[{len(sizes)}] {{{', '.join(map(str, sizes))}}}> ()\n  y = Resize <{attrs}> (x, roi, , sizes)"
    return f"""<ir_version: 9, opset_import: ["" : {opset}]>
g ({dtype}[N, 2, H, W] x) => ({dtype}[N, 2, P, Q] y) {{
  {inputs}
}}"""


_RESIZE_CASES = {
    "linear_half_pixel_x2": ('mode = "linear"', [1.0, 1.0, 2.0, 2.0]),
    "linear_half_pixel_x0.5": ('mode = "linear"', [1.0, 1.0, 0.5, 0.5]),
    # align_corners with a fractional in * scale is a documented deviation (onnxruntime uses the
    # integer output length), so its scales keep in * scale integral
    "linear_align_corners": ('mode = "linear", coordinate_transformation_mode = "align_corners"',
                             [1.0, 1.0, 2.0, 3.0]),
    "linear_pytorch_half_pixel": ('mode = "linear", coordinate_transformation_mode = "pytorch_half_pixel"',
                                  [1.0, 1.0, 2.0, 0.75]),
    "linear_asymmetric": ('mode = "linear", coordinate_transformation_mode = "asymmetric"', [1.0, 1.0, 3.0, 2.0]),
    "linear_half_pixel_symmetric": ('mode = "linear", coordinate_transformation_mode = "half_pixel_symmetric"',
                                    [1.0, 1.0, 2.5, 0.5]),
    "cubic_half_pixel_x2": ('mode = "cubic"', [1.0, 1.0, 2.0, 2.0]),
    "cubic_exclude_outside": ('mode = "cubic", exclude_outside = 1, cubic_coeff_a = -0.5', [1.0, 1.0, 0.5, 1.5]),
    "cubic_align_corners": ('mode = "cubic", coordinate_transformation_mode = "align_corners"', [1.0, 1.0, 2.0, 4.0]),
    "linear_antialias_down": ('mode = "linear", antialias = 1', [1.0, 1.0, 0.5, 0.75]),
    "nearest_down": ('mode = "nearest", nearest_mode = "floor"', [1.0, 1.0, 0.5, 0.75]),
    "nearest_half_pixel_x1.5": ('mode = "nearest"', [1.0, 1.0, 1.5, 2.0]),
}


@pytest.mark.parametrize("attrs, scales", list(_RESIZE_CASES.values()), ids=list(_RESIZE_CASES))
def test_resize_scales_with_symbolic_dims(attrs, scales, rng):
    compiled = check_symbolic(None, _symbolic_resize_model(attrs, scales=scales), normal_feeds("x"), [(1, 2, 8, 6), (2, 2, 13, 11)], rng,
                              rtol=1e-5, atol=1e-5, oracle=ort_run)
    assert "stablehlo.dynamic_iota" in compiled.artifact.text


@pytest.mark.parametrize("mode", ["linear", "cubic", "nearest"])
def test_resize_sizes_with_symbolic_dims(mode, rng):
    attrs = f'mode = "{mode}"'
    text = _symbolic_resize_model(attrs, sizes=[1, 2, 9, 5]).replace("float[N, 2, H, W] x", "float[1, 2, H, W] x")
    check_symbolic(None, text, normal_feeds("x"), [(1, 2, 8, 6), (1, 2, 13, 3)], rng, rtol=1e-5, atol=1e-5, oracle=ort_run)


def test_resize_linear_uint8_with_symbolic_dims(rng):
    def feeds(rng, shape):
        return {"x": rng.integers(0, 256, shape).astype(np.uint8)}

    check_symbolic(None, _symbolic_resize_model('mode = "linear"', scales=[1.0, 1.0, 2.0, 2.0], dtype="uint8"), feeds,
                   [(1, 2, 5, 4), (1, 2, 7, 3)], rng, rtol=0, atol=1, oracle=ort_run)


def test_resize_10_linear_with_symbolic_dims(rng):
    text = """<ir_version: 9, opset_import: ["" : 10]>
g (float[N, 2, H, W] x) => (float[N, 2, P, Q] y) {
  scales = Constant <value = float[4] {1.0, 1.0, 2.0, 0.5}> ()
  y = Resize <mode = "linear"> (x, scales)
}"""
    check_symbolic(None, text, normal_feeds("x"), [(1, 2, 4, 6), (2, 2, 5, 9)], rng, rtol=1e-5, atol=1e-5, oracle=ort_run)


def test_resize_scale_one_third_falls_back(rng):
    model = parse(_symbolic_resize_model('mode = "linear"', scales=[1.0, 1.0, 0.3333333, 1.0]))
    compiled = onnx_stablehlo.compile(model)
    assert compiled.artifact is None and "2**16" in compiled.dynamic_error
    feeds = normal_feeds("x")(rng, (1, 2, 9, 4))
    assert_allclose_for_dtype(compiled.run(feeds), ort_run(model, feeds))


# ConvTranspose ------------------------------------------------------------------------------------


_CONV_TRANSPOSE_CASES = {
    "strided": "strides = [2, 2]",
    "pads_output_padding": "strides = [2, 3], pads = [1, 0, 1, 2], output_padding = [1, 2]",
    "dilated": "strides = [2, 1], dilations = [2, 2], pads = [1, 1, 0, 1]",
    "same_upper": 'strides = [2, 2], auto_pad = "SAME_UPPER"',
    "same_lower": 'strides = [3, 2], auto_pad = "SAME_LOWER"',
    "crop": "strides = [2, 2], pads = [3, 1, 4, 2]",  # pads beyond k - 1 crop the convolution output
    "group": "strides = [2, 2], group = 2, pads = [0, 1, 1, 0]",
}


@pytest.mark.parametrize("attrs", list(_CONV_TRANSPOSE_CASES.values()), ids=list(_CONV_TRANSPOSE_CASES))
def test_conv_transpose_with_symbolic_dims(attrs, rng):
    groups = 2 if "group" in attrs else 1
    text = f"""<ir_version: 9, opset_import: ["" : 18]>
g (float[N, 4, H, W] x, float[4, {6 // groups}, 3, 3] w, float[6] b) => (float[N, 6, P, Q] y) {{
  y = ConvTranspose <{attrs}> (x, w, b)
}}"""

    def feeds(rng, shape):
        return {
            "x": rng.standard_normal(shape).astype(np.float32),
            "w": rng.standard_normal((4, 6 // groups, 3, 3)).astype(np.float32),
            "b": rng.standard_normal(6).astype(np.float32),
        }

    check_symbolic(None, text, feeds, [(1, 4, 5, 4), (2, 4, 7, 9)], rng, rtol=1e-4, atol=1e-4, oracle=ort_run)
