"""Parity of Resize and Upsample (frontend/lowering/resize.py) against onnxruntime and onnx.reference.

onnxruntime is the oracle where it implements the case and agrees with the spec; onnx.reference
elsewhere: float16 (onnxruntime's float16 linear/cubic overflow to inf), float64, cubic on inputs
that are not 4-D NCHW, and run-time ``scales`` (whose coordinate arithmetic the lowering does in
float64, as onnx.reference does). Cases where the two oracles disagree by design are left out:
align_corners/tf_crop_and_resize with a fractional ``in * scale``, and pytorch_half_pixel with a
length-1 output (see the rules' docstrings).

Symbolic-dim tests (``check_symbolic``) compile one model with its ``dim_param`` dims kept as
``?``, keep that artifact through runs at two shapes, and compare each run with the oracle.
"""

from __future__ import annotations

import numpy as np
import pytest

import onnx_stablehlo
from onnx_stablehlo.errors import NonConstantInputError, ShapeError, UnsupportedAttributeError
from tests.util import (assert_allclose_for_dtype, attrs_text as _attrs, check_symbolic, compile_and_run, emitted_text,
                        normal_feeds, onnx_type_name, oracle_run, ort_run, parse, reference_run)


def _floats(values) -> str:
    return ", ".join(repr(float(v)) for v in values)


def _ints(values) -> str:
    return ", ".join(str(int(v)) for v in values)


def _resize_model(
    x_shape, out_shape, *, dtype=np.float32, opset=19, scales=None, sizes=None, roi=None,
    runtime=False, **attributes,
) -> str:
    """A Resize model; scales/sizes/roi are initializers, or graph inputs with ``runtime``."""
    ty = onnx_type_name(dtype)
    inputs = [f"{ty}[{_ints(x_shape)}] x"]
    initializers = []
    names = ["x", "", "", ""]
    slots = ((1, "roi", roi, "float"), (2, "scales", scales, "float"), (3, "sizes", sizes, "int64"))
    for slot, name, values, elem in slots:
        if values is None:
            continue
        names[slot] = name
        literal = _floats(values) if elem == "float" else _ints(values)
        if runtime and name != "roi" or runtime == "all":
            inputs.append(f"{elem}[{len(values)}] {name}")
        else:
            initializers.append(f"{elem}[{len(values)}] {name} = {{{literal}}}")
    while names[-1] == "":
        names.pop()
    init = f"<{', '.join(initializers)}>" if initializers else ""
    return f"""<ir_version: 9, opset_import: ["" : {opset}]>
g ({", ".join(inputs)}) => ({ty}[{_ints(out_shape)}] y) {init} {{
  [resize] y = Resize {_attrs(attributes)} ({", ".join(names)})
}}"""


def _feeds(x, scales=None, sizes=None, roi=None, runtime=False) -> dict:
    feeds = {"x": x}
    if runtime:
        if scales is not None:
            feeds["scales"] = np.asarray(scales, np.float32)
        if sizes is not None:
            feeds["sizes"] = np.asarray(sizes, np.int64)
        if roi is not None and runtime == "all":
            feeds["roi"] = np.asarray(roi, np.float32)
    return feeds


def _input(rng, shape, dtype):
    if np.dtype(dtype) == np.int64:
        # onnx.reference (the int64 oracle) resizes through float64: keep values exact there.
        return rng.integers(-(2**40), 2**40, size=shape).astype(dtype)
    if np.dtype(dtype).kind in "iu":
        info = np.iinfo(dtype)
        return rng.integers(info.min, info.max + 1, size=shape).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


# (x shape, out shape, scales, sizes, roi, attributes)
NEAREST_CASES = {
    "upsample-scales": ((1, 2, 3, 4), (1, 2, 6, 10), [1, 1, 2, 2.5], None, None, {}),
    "downsample-scales": ((1, 1, 6, 9), (1, 1, 3, 5), [1, 1, 0.5, 0.6], None, None, {}),
    "sizes": ((1, 2, 4, 4), (1, 2, 7, 3), None, [1, 2, 7, 3], None, {}),
    "round-prefer-ceil-asymmetric": ((1, 1, 4, 4), (1, 1, 8, 6), None, [1, 1, 8, 6], None,
                                     {"nearest_mode": "round_prefer_ceil",
                                      "coordinate_transformation_mode": "asymmetric"}),
    "floor-align-corners": ((1, 1, 4, 5), (1, 1, 7, 9), None, [1, 1, 7, 9], None,
                            {"nearest_mode": "floor", "coordinate_transformation_mode": "align_corners"}),
    "ceil-half-pixel": ((1, 1, 4, 4), (1, 1, 8, 5), None, [1, 1, 8, 5], None, {"nearest_mode": "ceil"}),
    "pytorch-half-pixel": ((1, 1, 5, 4), (1, 1, 3, 7), None, [1, 1, 3, 7], None,
                           {"coordinate_transformation_mode": "pytorch_half_pixel"}),
    "tf-crop-and-resize": ((1, 1, 5, 5), (1, 1, 4, 3), None, [1, 1, 4, 3], [0, 0, 0.2, -0.1, 1, 1, 0.9, 1.3],
                           {"coordinate_transformation_mode": "tf_crop_and_resize", "extrapolation_value": 9.0}),
    "axes": ((2, 3, 4, 5), (2, 3, 8, 5), [2.0], None, None, {"axes": [2]}),
    "axes-reversed": ((1, 2, 4, 5), (1, 2, 6, 10), None, [10, 6], None, {"axes": [3, 2]}),
    "not-larger": ((1, 1, 4, 6), (1, 1, 6, 9), None, [7, 9], None,
                   {"axes": [2, 3], "keep_aspect_ratio_policy": "not_larger"}),
    "not-smaller": ((1, 1, 4, 6), (1, 1, 5, 8), None, [5, 7], None,
                    {"axes": [2, 3], "keep_aspect_ratio_policy": "not_smaller"}),
}


@pytest.mark.parametrize("dtype", [np.float32, np.int8, np.uint8, np.int64], ids=["f32", "i8", "u8", "i64"])
@pytest.mark.parametrize("case", list(NEAREST_CASES), ids=list(NEAREST_CASES))
def test_resize_nearest_matches_onnxruntime(case, dtype, rng):
    x_shape, out_shape, scales, sizes, roi, attributes = NEAREST_CASES[case]
    model = parse(_resize_model(x_shape, out_shape, dtype=dtype, scales=scales, sizes=sizes, roi=roi,
                                mode="nearest", **attributes))
    feeds = _feeds(_input(rng, x_shape, dtype))
    assert_allclose_for_dtype(compile_and_run(model, feeds), oracle_run(model, feeds))  # no int64 in onnxruntime
    text = emitted_text(model)
    assert "stablehlo.gather" in text and "dot_general" not in text


INTERPOLATION_CASES = {
    "upsample-scales": ((1, 2, 3, 4), (1, 2, 6, 10), [1, 1, 2, 2.5], None, None, {}),
    "downsample-scales": ((1, 1, 6, 9), (1, 1, 3, 5), [1, 1, 0.5, 0.6], None, None, {}),
    "sizes": ((1, 2, 4, 4), (1, 2, 7, 3), None, [1, 2, 7, 3], None, {}),
    "asymmetric": ((1, 1, 4, 5), (1, 1, 7, 8), [1, 1, 1.75, 1.6], None, None,
                   {"coordinate_transformation_mode": "asymmetric"}),
    "align-corners-sizes": ((1, 1, 4, 5), (1, 1, 7, 3), None, [1, 1, 7, 3], None,
                            {"coordinate_transformation_mode": "align_corners"}),
    "pytorch-half-pixel": ((1, 1, 5, 4), (1, 1, 3, 7), None, [1, 1, 3, 7], None,
                           {"coordinate_transformation_mode": "pytorch_half_pixel"}),
    # 1/49 * 49 != 1 in floating point: the requested size, not in * scale, is length_resized.
    "align-corners-to-one": ((1, 1, 49, 3), (1, 1, 1, 5), None, [1, 1, 1, 5], None,
                             {"coordinate_transformation_mode": "align_corners"}),
    "half-pixel-symmetric": ((1, 1, 4, 5), (1, 1, 9, 2), [1, 1, 2.3, 0.5], None, None,
                             {"coordinate_transformation_mode": "half_pixel_symmetric"}),
    "tf-crop-and-resize": ((1, 1, 5, 5), (1, 1, 4, 3), None, [1, 1, 4, 3], [0, 0, 0.2, -0.1, 1, 1, 0.9, 1.3],
                           {"coordinate_transformation_mode": "tf_crop_and_resize", "extrapolation_value": -3.0}),
    "exclude-outside": ((1, 1, 5, 6), (1, 1, 8, 4), None, [1, 1, 8, 4], None, {"exclude_outside": 1}),
    "axes": ((1, 3, 4, 5), (1, 3, 8, 5), [2.0], None, None, {"axes": [2]}),
}


@pytest.mark.parametrize("mode", ["linear", "cubic"])
@pytest.mark.parametrize("case", list(INTERPOLATION_CASES), ids=list(INTERPOLATION_CASES))
def test_resize_interpolation_matches_onnxruntime(case, mode, rng):
    x_shape, out_shape, scales, sizes, roi, attributes = INTERPOLATION_CASES[case]
    if mode == "cubic":
        attributes = {**attributes, "cubic_coeff_a": -0.5}
    model = parse(_resize_model(x_shape, out_shape, scales=scales, sizes=sizes, roi=roi, mode=mode, **attributes))
    feeds = _feeds(_input(rng, x_shape, np.float32))
    # onnxruntime takes exclude_outside only for cubic (or antialiased linear).
    oracle = reference_run if mode == "linear" and attributes.get("exclude_outside") else ort_run
    assert_allclose_for_dtype(compile_and_run(model, feeds), oracle(model, feeds))
    text = emitted_text(model)
    assert "stablehlo.dot_general" in text and "optimization_barrier" not in text


@pytest.mark.parametrize("mode", ["linear", "cubic"])
@pytest.mark.parametrize("sizes", [[1, 1, 3, 5], [1, 1, 2, 9]], ids=["down", "down-up"])
def test_resize_antialias_matches_onnxruntime(sizes, mode, rng):
    model = parse(_resize_model((1, 1, 7, 8), sizes, sizes=sizes, mode=mode, antialias=1))
    feeds = _feeds(_input(rng, (1, 1, 7, 8), np.float32))
    assert_allclose_for_dtype(compile_and_run(model, feeds), ort_run(model, feeds))


@pytest.mark.parametrize("dtype", [np.uint8, np.int8], ids=["u8", "i8"])
def test_resize_linear_of_integers_truncates_like_onnxruntime(dtype, rng):
    model = parse(_resize_model((1, 1, 4, 5), (1, 1, 7, 8), dtype=dtype, sizes=[1, 1, 7, 8], mode="linear"))
    feeds = _feeds(_input(rng, (1, 1, 4, 5), dtype))
    assert_allclose_for_dtype(compile_and_run(model, feeds), ort_run(model, feeds))


@pytest.mark.parametrize("dtype", [np.float16, np.float64], ids=["f16", "f64"])
@pytest.mark.parametrize("mode", ["nearest", "linear", "cubic"])
def test_resize_other_floats_match_reference(mode, dtype, rng):
    model = parse(_resize_model((2, 3, 5), (2, 6, 4), dtype=dtype, scales=[1, 2, 0.8], mode=mode))
    feeds = _feeds(_input(rng, (2, 3, 5), dtype))
    # onnx.reference's downsampling cubic weights are off by ~1e-7 relative (float32 somewhere in
    # its arithmetic), so float64 results are held to float32 tolerances.
    tolerance_dtype = np.float32 if dtype == np.float64 else None
    assert_allclose_for_dtype(compile_and_run(model, feeds), reference_run(model, feeds), tolerance_dtype)


def test_resize_negative_axes_match_reference(rng):
    def model(axes):
        return parse(_resize_model((1, 2, 4, 6), (1, 2, 5, 8), sizes=[5, 7], mode="linear",
                                   axes=axes, keep_aspect_ratio_policy="not_smaller"))

    feeds = _feeds(_input(rng, (1, 2, 4, 6), np.float32))
    # onnx.reference rejects negative axes: its result for the positive ones is the oracle.
    assert_allclose_for_dtype(compile_and_run(model([-2, -1]), feeds), reference_run(model([2, 3]), feeds))


# Run-time scales/sizes/roi (the declared output shape gives the result shape) -----------------

RUNTIME_CASES = {
    "nearest-scales": ((1, 1, 4, 6), (1, 1, 6, 3), dict(scales=[1, 1, 1.5, 0.6]), {"mode": "nearest"}),
    "nearest-ties": ((1, 1, 6, 6), (1, 1, 4, 3), dict(scales=[1, 1, 0.75, 0.5]),
                     {"mode": "nearest", "nearest_mode": "round_prefer_ceil",
                      "coordinate_transformation_mode": "half_pixel_symmetric"}),
    "linear-scales": ((1, 2, 4, 5), (1, 2, 9, 3), dict(scales=[1, 1, 2.3, 0.6]), {"mode": "linear"}),
    "linear-align-corners-fractional": ((1, 1, 4, 4), (1, 1, 2, 2), dict(scales=[1, 1, 0.6, 0.6]),
                                        {"mode": "linear", "coordinate_transformation_mode": "align_corners"}),
    "cubic-antialias": ((1, 1, 8, 7), (1, 1, 3, 4), dict(scales=[1, 1, 0.4, 0.6]), {"mode": "cubic", "antialias": 1}),
    "cubic-exclude-outside": ((1, 1, 4, 4), (1, 1, 7, 5), dict(scales=[1, 1, 1.8, 1.3]),
                              {"mode": "cubic", "exclude_outside": 1, "cubic_coeff_a": -0.5}),
    "sizes-not-smaller": ((1, 1, 3, 5), (1, 1, 4, 7), dict(sizes=[4, 6]),
                          {"mode": "linear", "axes": [2, 3], "keep_aspect_ratio_policy": "not_smaller"}),
    "tf-crop-roi": ((1, 1, 5, 5), (1, 1, 4, 3), dict(sizes=[1, 1, 4, 3], roi=[0, 0, 0.2, -0.1, 1, 1, 0.9, 1.3]),
                    {"mode": "linear", "coordinate_transformation_mode": "tf_crop_and_resize",
                     "extrapolation_value": 2.0}),
}


@pytest.mark.parametrize("case", list(RUNTIME_CASES), ids=list(RUNTIME_CASES))
def test_resize_with_runtime_scales_matches_reference(case, rng):
    x_shape, out_shape, values, attributes = RUNTIME_CASES[case]
    model = parse(_resize_model(x_shape, out_shape, runtime="all", **values, **attributes))
    feeds = _feeds(_input(rng, x_shape, np.float32), runtime="all", **values)
    assert_allclose_for_dtype(compile_and_run(model, feeds), reference_run(model, feeds))
    assert "optimization_barrier" in emitted_text(model)


@pytest.mark.parametrize("case", ["nearest-scales", "linear-scales", "cubic-exclude-outside", "tf-crop-roi"])
def test_resize_runtime_and_constant_scales_agree(case, rng):
    x_shape, out_shape, values, attributes = RUNTIME_CASES[case]
    x = _input(rng, x_shape, np.float32)
    runtime = parse(_resize_model(x_shape, out_shape, runtime="all", **values, **attributes))
    constant = parse(_resize_model(x_shape, out_shape, **values, **attributes))
    assert_allclose_for_dtype(
        compile_and_run(runtime, _feeds(x, runtime="all", **values)), compile_and_run(constant, {"x": x})
    )


def test_resize_runtime_scales_need_a_declared_shape():
    text = _resize_model((1, 1, 2, 2), (1, 1, 4, 4), runtime=True, scales=[1, 1, 2, 2], mode="nearest")
    model = parse(text.replace("float[1, 1, 4, 4] y", "float[N, C, H, W] y"))
    with pytest.raises(NonConstantInputError, match="'scales'.*declared static shape"):
        emitted_text(model)


# Revisions ------------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["nearest", "linear"])
@pytest.mark.parametrize("scales", [[1, 1, 2, 3], [1, 1, 0.5, 0.7], [1, 1, 1.7, 2.5]], ids=["up", "down", "fractional"])
def test_resize_10_matches_onnxruntime(scales, mode, rng):
    model = parse(f"""<ir_version: 9, opset_import: ["" : 10]>
g (float[1, 2, 4, 6] x) => (float[1, 2, {int(4 * scales[2])}, {int(6 * scales[3])}] y)
  <float[4] scales = {{{_floats(scales)}}}> {{
  [resize] y = Resize <mode = "{mode}"> (x, scales)
}}""")
    feeds = {"x": _input(rng, (1, 2, 4, 6), np.float32)}
    assert_allclose_for_dtype(compile_and_run(model, feeds), ort_run(model, feeds))


@pytest.mark.parametrize("mode", ["nearest", "linear", "cubic"])
@pytest.mark.parametrize("coordinate_mode", ["half_pixel", "tf_half_pixel_for_nn", "align_corners", "asymmetric"])
def test_resize_11_matches_onnxruntime(coordinate_mode, mode, rng):
    # Resize-11 requires roi and scales inputs even when sizes is given.
    model = parse(f"""<ir_version: 9, opset_import: ["" : 11]>
g (float[1, 1, 4, 5] x) => (float[1, 1, 7, 3] y)
  <float[0] roi = {{}}, float[0] scales = {{}}, int64[4] sizes = {{1, 1, 7, 3}}> {{
  [resize] y = Resize <mode = "{mode}", coordinate_transformation_mode = "{coordinate_mode}"> (x, roi, scales, sizes)
}}""")
    feeds = {"x": _input(rng, (1, 1, 4, 5), np.float32)}
    assert_allclose_for_dtype(compile_and_run(model, feeds), ort_run(model, feeds))


@pytest.mark.parametrize("opset", [13, 18, 19])
@pytest.mark.parametrize("mode", ["nearest", "linear", "cubic"])
def test_resize_13_18_19_match_onnxruntime(mode, opset, rng):
    model = parse(_resize_model((1, 2, 4, 5), (1, 2, 6, 4), opset=opset, sizes=[1, 2, 6, 4], mode=mode))
    feeds = {"x": _input(rng, (1, 2, 4, 5), np.float32)}
    assert_allclose_for_dtype(compile_and_run(model, feeds), ort_run(model, feeds))


@pytest.mark.parametrize("mode", ["nearest", "linear"])
def test_upsample_7_matches_onnxruntime(mode, rng):
    model = parse(f"""<ir_version: 9, opset_import: ["" : 7]>
g (float[1, 2, 3, 4] x) => (float[1, 2, 6, 10] y) {{
  [upsample] y = Upsample <mode = "{mode}", scales = [1.0, 1.0, 2.0, 2.5]> (x)
}}""")
    feeds = {"x": _input(rng, (1, 2, 3, 4), np.float32)}
    assert_allclose_for_dtype(compile_and_run(model, feeds), ort_run(model, feeds))


@pytest.mark.parametrize("mode", ["nearest", "linear"])
@pytest.mark.parametrize("runtime", [False, True], ids=["constant-scales", "runtime-scales"])
def test_upsample_9_matches_onnxruntime(runtime, mode, rng):
    scales = np.array([1, 1, 2, 1.5], np.float32)
    scales_decl = "float[4] scales" if runtime else ""
    init = "" if runtime else f"<float[4] scales = {{{_floats(scales)}}}>"
    model = parse(f"""<ir_version: 9, opset_import: ["" : 9]>
g (float[1, 2, 3, 4] x{", " + scales_decl if runtime else ""}) => (float[1, 2, 6, 6] y) {init} {{
  [upsample] y = Upsample <mode = "{mode}"> (x, scales)
}}""")
    feeds = {"x": _input(rng, (1, 2, 3, 4), np.float32)}
    if runtime:
        feeds["scales"] = scales
    assert_allclose_for_dtype(compile_and_run(model, feeds), ort_run(model, feeds))


# Errors ---------------------------------------------------------------------------------------


def test_resize_rejects_unknown_mode():
    model = parse(_resize_model((1, 1, 2, 2), (1, 1, 4, 4), scales=[1, 1, 2, 2], mode="bilinear"))
    with pytest.raises(UnsupportedAttributeError, match="mode='bilinear'.*nearest, linear, cubic"):
        emitted_text(model)


def test_resize_rejects_half_pixel_symmetric_before_19():
    model = parse(_resize_model((1, 1, 2, 2), (1, 1, 4, 4), opset=18, scales=[1, 1, 2, 2], mode="linear",
                                coordinate_transformation_mode="half_pixel_symmetric"))
    with pytest.raises(UnsupportedAttributeError, match="coordinate_transformation_mode"):
        emitted_text(model)


def test_resize_rejects_both_scales_and_sizes():
    model = parse(_resize_model((1, 1, 2, 2), (1, 1, 4, 4), scales=[1, 1, 2, 2], sizes=[1, 1, 4, 4], mode="nearest"))
    with pytest.raises(ShapeError, match="exactly one of 'scales' and 'sizes'"):
        emitted_text(model)


def test_resize_rejects_scales_of_wrong_length():
    model = parse(_resize_model((1, 1, 2, 2), (1, 1, 4, 4), scales=[2, 2], mode="nearest"))
    with pytest.raises(ShapeError, match="'scales' has 2 values; expected 4"):
        emitted_text(model)


# Symbolic dims: nearest integer upscaling stays shape-polymorphic ----------------------------

_SYMBOLIC_RESIZES = {
    "resize_asymmetric_floor": (
        'y = Resize <mode = "nearest", coordinate_transformation_mode = "asymmetric", nearest_mode = "floor"> '
        "(x, roi, scales)"
    ),
    "resize_half_pixel_round": (
        'y = Resize <mode = "nearest", coordinate_transformation_mode = "half_pixel", '
        'nearest_mode = "round_prefer_ceil"> (x, roi, scales)'
    ),
}


@pytest.mark.parametrize("body", list(_SYMBOLIC_RESIZES.values()), ids=list(_SYMBOLIC_RESIZES))
def test_symbolic_nearest_integer_upscale_lowers_once(body, rng):
    import onnx_stablehlo

    model = parse(f"""<ir_version: 9, opset_import: ["" : 19]>
g (float[N, 3, H, W] x) => (float[N, 3, OH, OW] y)
<float[0] roi = {{}}, float[4] scales = {{1.0, 1.0, 2.0, 3.0}}>
{{
  {body}
}}""")
    compiled = onnx_stablehlo.compile(model)
    assert compiled.artifact is not None, compiled.dynamic_error
    for shape in [(1, 3, 4, 5), (2, 3, 7, 3)]:
        feeds = {"x": rng.standard_normal(shape).astype(np.float32)}
        np.testing.assert_array_equal(compiled.run(feeds)[0], ort_run(model, feeds)[0])
    assert compiled.compile_count == 2


def test_symbolic_linear_resize_lowers_once(rng):
    import onnx_stablehlo

    model = parse("""<ir_version: 9, opset_import: ["" : 19]>
g (float[N, 3, H, W] x) => (float[N, 3, OH, OW] y)
<float[0] roi = {}, float[4] scales = {1.0, 1.0, 2.0, 2.0}>
{
  y = Resize <mode = "linear"> (x, roi, scales)
}""")
    compiled = onnx_stablehlo.compile(model)
    assert compiled.artifact is not None, compiled.dynamic_error
    for shape in [(1, 3, 4, 5), (2, 3, 7, 3)]:
        feeds = {"x": rng.standard_normal(shape).astype(np.float32)}
        np.testing.assert_allclose(compiled.run(feeds)[0], ort_run(model, feeds)[0], rtol=1e-5, atol=1e-5)


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
