"""Parity of the normalization family (frontend/lowering/normalization.py) against onnxruntime.

Symbolic-dim tests (``check_symbolic``) compile one model with its ``dim_param`` dims kept as
``?``, keep that artifact through runs at two shapes, and compare each run with the oracle.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import onnx
import onnx.parser
import onnx_ir
import pytest

from onnx_stablehlo.errors import UnsupportedAttributeError
from tests.util import (FLOATS, FLOAT_IDS, assert_allclose_for_dtype, check_symbolic, compile_and_run, emitted_text,
                        onnx_type_name, oracle_run, parse, standard_normal)

LAYER_NORM_MODEL = """<ir_version: 9, opset_import: ["" : 17]>
g ({ty}[2, 3, 8] x, {ty}[{scale}] s{bias_input}) => ({ty}[2, 3, 8] y{extra_outputs}) {{
  y{extra_names} = LayerNormalization {attrs} (x, s{bias})
}}"""


def _layer_norm_model(dtype, axis: int | None, bias: bool, stats: bool, **attributes: float) -> str:
    ty = onnx_type_name(dtype)
    rank_axis = 2 if axis is None else axis % 3
    stats_shape = ", ".join(["2", "3", "8"][:rank_axis] + ["1"] * (3 - rank_axis))
    attrs = []
    if axis is not None:
        attrs.append(f"axis = {axis}")
    attrs += [f"{name} = {value}" for name, value in attributes.items()]
    return LAYER_NORM_MODEL.format(
        ty=ty,
        scale=", ".join(["2", "3", "8"][rank_axis:]),
        extra_outputs=f", float[{stats_shape}] mean, float[{stats_shape}] inv_std" if stats else "",
        extra_names=", mean, inv_std" if stats else "",
        attrs=f"<{', '.join(attrs)}>" if attrs else "",
        bias=", b" if bias else "",
        bias_input=f", {ty}[{', '.join(['2', '3', '8'][rank_axis:])}] b" if bias else "",
    )


def _layer_norm_feeds(dtype, axis: int | None, rng: np.random.Generator) -> dict[str, np.ndarray]:
    rank_axis = 2 if axis is None else axis % 3
    scale_shape = (2, 3, 8)[rank_axis:]
    return {
        "x": (rng.standard_normal((2, 3, 8)) * 2 + 1).astype(dtype),
        "s": rng.standard_normal(scale_shape).astype(dtype),
        "b": rng.standard_normal(scale_shape).astype(dtype),
    }


# (axis or None for the default, with B, with Mean and InvStdDev outputs)
LAYER_NORM_CASES = [
    (None, True, False), (-1, False, True), (1, True, True), (0, True, True), (-2, False, False),
]
LAYER_NORM_IDS = [
    f"{'default' if a is None else f'axis{a}'}-{'bias' if b else 'nobias'}{'-stats' if s else ''}"
    for a, b, s in LAYER_NORM_CASES
]


@pytest.mark.parametrize("dtype", FLOATS, ids=FLOAT_IDS)
@pytest.mark.parametrize("axis,bias,stats", LAYER_NORM_CASES, ids=LAYER_NORM_IDS)
def test_layer_normalization_matches_onnxruntime(axis, bias, stats, dtype, rng):
    model = parse(_layer_norm_model(dtype, axis, bias, stats))
    feeds = _layer_norm_feeds(dtype, axis, rng)
    if not bias:
        del feeds["b"]
    expected = oracle_run(model, feeds)
    actual = compile_and_run(model, feeds)
    assert_allclose_for_dtype(actual[:1], expected[:1])
    # Mean and InvStdDev are f32 (stash_type=1) whatever X is; their precision is X's at best.
    assert_allclose_for_dtype(actual[1:], expected[1:], dtype if dtype == np.float16 else np.float32)


def test_layer_normalization_epsilon_zero_matches_onnxruntime(rng):
    model = parse(_layer_norm_model(np.float32, 1, True, True, epsilon=0.0))
    feeds = _layer_norm_feeds(np.float32, 1, rng)
    assert_allclose_for_dtype(compile_and_run(model, feeds), oracle_run(model, feeds))


def test_layer_normalization_f16_stage_one_runs_in_f32(rng):
    model = parse(_layer_norm_model(np.float16, -1, True, True))
    text = emitted_text(model)
    assert "stablehlo.reduce" in text and "tensor<2x3x8xf16>) -> tensor<2x3x8xf32>" in text


def test_layer_normalization_bfloat16_matches_f32_onnxruntime(rng):
    model = parse(_layer_norm_model(ml_dtypes.bfloat16, -1, True, False))
    feeds = _layer_norm_feeds(ml_dtypes.bfloat16, -1, rng)
    reference = parse(_layer_norm_model(np.float32, -1, True, False))
    expected = oracle_run(reference, {k: v.astype(np.float32) for k, v in feeds.items()})
    assert_allclose_for_dtype(compile_and_run(model, feeds), [expected[0].astype(ml_dtypes.bfloat16)])


def test_layer_normalization_symbolic_dims_at_two_sizes(rng):
    model = parse("""<ir_version: 9, opset_import: ["" : 17]>
g (float[N, S, 8] x, float[8] s, float[8] b) => (float[N, S, 8] y) {
  y = LayerNormalization <epsilon = 1e-12> (x, s, b)
}""")
    for shape in [(1, 4, 8), (3, 7, 8)]:
        feeds = {"x": rng.standard_normal(shape).astype(np.float32),
                 "s": rng.standard_normal(8).astype(np.float32),
                 "b": rng.standard_normal(8).astype(np.float32)}
        assert_allclose_for_dtype(compile_and_run(model, feeds), oracle_run(model, feeds))


def test_layer_normalization_rejects_integer_stash_type():
    model = parse(_layer_norm_model(np.float32, -1, True, False, stash_type=7))
    with pytest.raises(UnsupportedAttributeError, match="stash_type=7"):
        emitted_text(model)


# BatchNormalization ---------------------------------------------------------------------------

BATCH_NORM_MODEL = """<ir_version: 10, opset_import: ["" : {opset}]>
g ({ty}[2, 3, 4, 5] x, {sty}[3] s, {sty}[3] b, {mty}[3] mean, {mty}[3] var) => ({ty}[2, 3, 4, 5] y{extra}) {{
  y{extra_names} = BatchNormalization {attrs} (x, s, b, mean, var)
}}"""


def _batch_norm_feeds(dtype, scale_dtype, stats_dtype, rng: np.random.Generator) -> dict[str, np.ndarray]:
    return {
        "x": (rng.standard_normal((2, 3, 4, 5)) * 2 + 1).astype(dtype),
        "s": rng.standard_normal(3).astype(scale_dtype),
        "b": rng.standard_normal(3).astype(scale_dtype),
        "mean": rng.standard_normal(3).astype(stats_dtype),
        "var": (rng.random(3) + 0.5).astype(stats_dtype),
    }


@pytest.mark.parametrize("dtype", FLOATS, ids=FLOAT_IDS)
@pytest.mark.parametrize("opset", [7, 9, 14, 15])
def test_batch_normalization_inference_matches_onnxruntime(opset, dtype, rng):
    ty = onnx_type_name(dtype)
    model = parse(BATCH_NORM_MODEL.format(opset=opset, ty=ty, sty=ty, mty=ty, extra="", extra_names="",
                                          attrs="<epsilon = 0.01>"))
    feeds = _batch_norm_feeds(dtype, dtype, dtype, rng)
    assert_allclose_for_dtype(compile_and_run(model, feeds), oracle_run(model, feeds))


def test_batch_normalization_15_mixed_dtypes_match_onnxruntime(rng):
    model = parse(BATCH_NORM_MODEL.format(opset=15, ty="float16", sty="float", mty="float", extra="",
                                          extra_names="", attrs=""))
    feeds = _batch_norm_feeds(np.float16, np.float32, np.float32, rng)
    assert_allclose_for_dtype(compile_and_run(model, feeds), oracle_run(model, feeds))


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("opset", [14, 15])
def test_batch_normalization_training_matches_onnxruntime(opset, dtype, rng):
    ty = onnx_type_name(dtype)
    model = parse(BATCH_NORM_MODEL.format(
        opset=opset, ty=ty, sty=ty, mty=ty, extra=f", {ty}[3] running_mean, {ty}[3] running_var",
        extra_names=", running_mean, running_var", attrs="<training_mode = 1, momentum = 0.8>"))
    feeds = _batch_norm_feeds(dtype, dtype, dtype, rng)
    assert_allclose_for_dtype(compile_and_run(model, feeds), oracle_run(model, feeds))


def test_batch_normalization_inference_folds_per_channel_factors():
    model = parse(BATCH_NORM_MODEL.format(opset=15, ty="float", sty="float", mty="float", extra="",
                                          extra_names="", attrs=""))
    text = emitted_text(model)
    assert "stablehlo.rsqrt" in text and "tensor<3xf32>" in text
    assert "stablehlo.reduce" not in text


def test_batch_normalization_rejects_training_outputs_before_14():
    stats = ["running_mean", "running_var", "saved_mean", "saved_var"]
    model = parse(BATCH_NORM_MODEL.format(opset=9, ty="float", sty="float", mty="float",
                                          extra="".join(f", float[3] {n}" for n in stats),
                                          extra_names="".join(f", {n}" for n in stats), attrs=""))
    with pytest.raises(UnsupportedAttributeError, match="opset >= 14"):
        emitted_text(model)


# InstanceNormalization ------------------------------------------------------------------------

INSTANCE_NORM_MODEL = """<ir_version: 10, opset_import: ["" : {opset}]>
g ({ty}[{shape}] x, {ty}[3] s, {ty}[3] b) => ({ty}[{shape}] y) {{
  y = InstanceNormalization <epsilon = 0.001> (x, s, b)
}}"""


@pytest.mark.parametrize("dtype", FLOATS, ids=FLOAT_IDS)
@pytest.mark.parametrize("shape", [(2, 3, 7), (2, 3, 4, 5)], ids=["1d", "2d"])
@pytest.mark.parametrize("opset", [7, 22])
def test_instance_normalization_matches_onnxruntime(opset, shape, dtype, rng):
    dims = ", ".join(map(str, shape))
    model = parse(INSTANCE_NORM_MODEL.format(opset=opset, ty=onnx_type_name(dtype), shape=dims))
    feeds = {"x": (rng.standard_normal(shape) * 3 + 2).astype(dtype),
             "s": rng.standard_normal(3).astype(dtype), "b": rng.standard_normal(3).astype(dtype)}
    assert_allclose_for_dtype(compile_and_run(model, feeds), oracle_run(model, feeds))


# GroupNormalization ---------------------------------------------------------------------------

GROUP_NORM_MODEL = """<ir_version: 10, opset_import: ["" : {opset}]>
g ({ty}[2, 6, 4, 3] x, {ty}[{width}] s, {ty}[{width}] b) => ({ty}[2, 6, 4, 3] y) {{
  y = GroupNormalization <num_groups = {groups}, epsilon = 0.001> (x, s, b)
}}"""


def _group_norm_expected(
    x: np.ndarray, scale: np.ndarray, bias: np.ndarray, groups: int, per_channel: bool
) -> np.ndarray:
    """GroupNormalization in float64 numpy, from the operator's formula (epsilon as the f32 attribute)."""
    n, c = x.shape[:2]
    grouped = x.astype(np.float64).reshape(n, groups, -1)
    mean = grouped.mean(axis=-1, keepdims=True)
    var = grouped.var(axis=-1, keepdims=True)
    normalized = ((grouped - mean) / np.sqrt(var + float(np.float32(0.001)))).reshape(x.shape)
    if not per_channel:
        scale, bias = np.repeat(scale, c // groups), np.repeat(bias, c // groups)
    shape = (1, c) + (1,) * (x.ndim - 2)
    return (normalized * scale.reshape(shape) + bias.reshape(shape)).astype(x.dtype)


@pytest.mark.parametrize("dtype", FLOATS, ids=FLOAT_IDS)
@pytest.mark.parametrize("groups", [1, 2, 3, 6])
@pytest.mark.parametrize("opset", [18, 21])
def test_group_normalization_matches_formula(opset, groups, dtype, rng):
    """Opset 18 scales per group, 21 per channel (onnxruntime lacks 18: the formula is the oracle)."""
    per_channel = opset >= 21
    width = 6 if per_channel else groups
    text = GROUP_NORM_MODEL.format(opset=opset, ty=onnx_type_name(dtype), width=width, groups=groups)
    # The onnx checker rejects GroupNormalization-18 as deprecated, and compile() runs it on
    # protos: hand over an onnx_ir model, which skips the check.
    model = onnx_ir.serde.deserialize_model(onnx.parser.parse_model(text)) if opset == 18 else parse(text)
    feeds = {"x": (rng.standard_normal((2, 6, 4, 3)) * 2 + 1).astype(dtype),
             "s": rng.standard_normal(width).astype(dtype), "b": rng.standard_normal(width).astype(dtype)}
    expected = _group_norm_expected(feeds["x"], feeds["s"], feeds["b"], groups, per_channel)
    assert_allclose_for_dtype(compile_and_run(model, feeds), [expected])


def test_group_normalization_21_matches_onnxruntime(rng):
    model = parse(GROUP_NORM_MODEL.format(opset=21, ty="float", width=6, groups=3))
    feeds = {"x": rng.standard_normal((2, 6, 4, 3)).astype(np.float32),
             "s": rng.standard_normal(6).astype(np.float32), "b": rng.standard_normal(6).astype(np.float32)}
    assert_allclose_for_dtype(compile_and_run(model, feeds), oracle_run(model, feeds))


def test_group_normalization_rejects_groups_not_dividing_channels():
    from onnx_stablehlo.errors import ShapeError

    model = parse(GROUP_NORM_MODEL.format(opset=21, ty="float", width=6, groups=4))
    with pytest.raises(ShapeError, match="num_groups=4 does not divide the 6 channels"):
        emitted_text(model)


# RMSNormalization -----------------------------------------------------------------------------

RMS_NORM_MODEL = """<ir_version: 10, opset_import: ["" : 23]>
g ({ty}[2, 3, 8] x, {ty}[{scale}] s) => ({ty}[2, 3, 8] y) {{
  y = RMSNormalization {attrs} (x, s)
}}"""


@pytest.mark.parametrize("dtype", FLOATS, ids=FLOAT_IDS)
@pytest.mark.parametrize("axis", [None, -1, 1, 0], ids=["default", "axis-1", "axis1", "axis0"])
def test_rms_normalization_matches_onnxruntime(axis, dtype, rng):
    rank_axis = 2 if axis is None else axis % 3
    scale_shape = (2, 3, 8)[rank_axis:]
    attrs = "<epsilon = 0.001>" if axis is None else f"<axis = {axis}, epsilon = 0.001>"
    dims = ", ".join(map(str, scale_shape))
    model = parse(RMS_NORM_MODEL.format(ty=onnx_type_name(dtype), scale=dims, attrs=attrs))
    feeds = {"x": (rng.standard_normal((2, 3, 8)) * 2).astype(dtype),
             "s": rng.standard_normal(scale_shape).astype(dtype)}
    assert_allclose_for_dtype(compile_and_run(model, feeds), oracle_run(model, feeds))


# LpNormalization ------------------------------------------------------------------------------

LP_NORM_MODEL = """<ir_version: 10, opset_import: ["" : {opset}]>
g ({ty}[3, 4, 5] x) => ({ty}[3, 4, 5] y) {{
  y = LpNormalization <p = {p}, axis = {axis}> (x)
}}"""


@pytest.mark.parametrize("dtype", FLOATS, ids=FLOAT_IDS)
@pytest.mark.parametrize("axis", [-1, 1, 0])
@pytest.mark.parametrize("p", [1, 2])
@pytest.mark.parametrize("opset", [7, 22])
def test_lp_normalization_matches_onnxruntime(opset, p, axis, dtype, rng):
    model = parse(LP_NORM_MODEL.format(opset=opset, ty=onnx_type_name(dtype), p=p, axis=axis))
    x = rng.standard_normal((3, 4, 5))
    x[1, 2, :] = 0  # a zero vector along the last axis: its output is 0, not NaN
    feeds = {"x": x.astype(dtype)}
    actual = compile_and_run(model, feeds)
    assert not np.any(np.isnan(actual[0]))
    assert_allclose_for_dtype(actual, oracle_run(model, feeds))


def test_lp_normalization_rejects_p3():
    model = parse(LP_NORM_MODEL.format(opset=22, ty="float", p=3, axis=-1))
    with pytest.raises(UnsupportedAttributeError, match="p=3"):
        emitted_text(model)


# LRN ------------------------------------------------------------------------------------------

LRN_MODEL = """<ir_version: 10, opset_import: ["" : {opset}]>
g ({ty}[2, 7, 4, 3] x) => ({ty}[2, 7, 4, 3] y) {{
  y = LRN <size = {size}{attrs}> (x)
}}"""


@pytest.mark.parametrize("dtype", FLOATS, ids=FLOAT_IDS)
@pytest.mark.parametrize(
    "size,attrs",
    [(3, ""), (4, ""), (5, ", alpha = 0.01, beta = 0.5, bias = 2.0"), (1, "")],
    ids=["size3", "size4-even", "size5-attrs", "size1"],
)
@pytest.mark.parametrize("opset", [7, 13])
def test_lrn_matches_onnxruntime(opset, size, attrs, dtype, rng):
    model = parse(LRN_MODEL.format(opset=opset, ty=onnx_type_name(dtype), size=size, attrs=attrs))
    feeds = {"x": (rng.standard_normal((2, 7, 4, 3)) * 5).astype(dtype)}
    if size % 2 == 1 and dtype != np.float64:
        expected = oracle_run(model, feeds)
    else:
        # onnxruntime takes odd sizes and f16/f32 only, and onnx.reference's LRN loops over the
        # batch dim instead of the channels: the formula is the oracle there.
        values = dict(alpha=1e-4, beta=0.75, bias=1.0)
        values.update({k.strip(): float(v) for k, v in (a.split("=") for a in attrs.split(",") if "=" in a)})
        values = {k: float(np.float32(v)) for k, v in values.items()}  # float attributes are f32
        expected = [_lrn_expected(feeds["x"], size, **values)]
    assert_allclose_for_dtype(compile_and_run(model, feeds), expected)
    assert "stablehlo.reduce_window" in emitted_text(model)


def _lrn_expected(x: np.ndarray, size: int, alpha: float, beta: float, bias: float) -> np.ndarray:
    """LRN in float64 numpy, from the operator's formula."""
    wide = x.astype(np.float64)
    channels = x.shape[1]
    square_sum = np.zeros_like(wide)
    for c in range(channels):
        low = max(0, c - (size - 1) // 2)
        high = min(channels - 1, c + int(np.ceil((size - 1) / 2)))
        square_sum[:, c] = np.sum(wide[:, low : high + 1] ** 2, axis=1)
    return (wide / (bias + alpha / size * square_sum) ** beta).astype(x.dtype)


# MeanVarianceNormalization --------------------------------------------------------------------

MVN_MODEL = """<ir_version: 10, opset_import: ["" : {opset}]>
g ({ty}[3, 4, 5, 2] x) => ({ty}[3, 4, 5, 2] y) {{
  y = MeanVarianceNormalization {attrs} (x)
}}"""


@pytest.mark.parametrize("dtype", FLOATS, ids=FLOAT_IDS)
@pytest.mark.parametrize("axes", [None, (1,), (0, -1)], ids=["default", "axis1", "axes0-last"])
@pytest.mark.parametrize("opset", [9, 13])
def test_mean_variance_normalization_matches_onnxruntime(opset, axes, dtype, rng):
    attrs = "" if axes is None else f"<axes = [{', '.join(map(str, axes))}]>"
    model = parse(MVN_MODEL.format(opset=opset, ty=onnx_type_name(dtype), attrs=attrs))
    feeds = {"x": (rng.standard_normal((3, 4, 5, 2)) * 3 + 1).astype(dtype)}
    if dtype == np.float32:
        expected = oracle_run(model, feeds)
    else:
        # The function body's f32 epsilon constant makes onnxruntime reject other dtypes.
        axes = (0, 2, 3) if axes is None else axes
        wide = feeds["x"].astype(np.float64)
        centered = wide - wide.mean(axis=axes, keepdims=True)
        expected = [(centered / (np.sqrt((centered**2).mean(axis=axes, keepdims=True)) + 1e-9)).astype(dtype)]
    assert_allclose_for_dtype(compile_and_run(model, feeds), expected)


# Normalizations --------------------------------------------------------------------------------


@pytest.mark.parametrize("axis", [-1, 1, 0])
def test_layer_normalization_symbolic_normalized_axes(axis, rng):
    def feeds(b, s, h):
        return {"x": standard_normal(rng, b, s, h), "scale": standard_normal(rng, h), "bias": standard_normal(rng, h)}

    check_symbolic(
        17,
        "g (float[B, S, H] x, float[H] scale, float[H] bias) => (float[B, S, H] y, float mean, float inv) {\n"
        f"  y, mean, inv = LayerNormalization <axis = {axis}, epsilon = 0.001> (x, scale, bias)\n"
        "}",
        feeds,
        [(2, 3, 8), (3, 5, 4)],
    )


def test_layer_normalization_static_hidden(rng):
    def feeds(b, s):
        return {"x": standard_normal(rng, b, s, 16)}

    check_symbolic(
        17,
        "g (float[B, S, 16] x) => (float[B, S, 16] y)\n"
        "<float[16] scale = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}, float[16] bias = "
        "{0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1}> {\n"
        "  y = LayerNormalization <axis = -1> (x, scale, bias)\n"
        "}",
        feeds,
        [(1, 7), (4, 3)],
    )


@pytest.mark.parametrize("axis", [-1, 1])
def test_rms_normalization(axis, rng):
    def feeds(b, s, h):
        scale_shape = (h,) if axis == -1 else (s, h)
        return {"x": standard_normal(rng, b, s, h), "scale": standard_normal(rng, *scale_shape)}

    scale = "float[H]" if axis == -1 else "float[S, H]"
    check_symbolic(
        23,
        f"g (float[B, S, H] x, {scale} scale) => (float[B, S, H] y) {{\n"
        f"  y = RMSNormalization <axis = {axis}, epsilon = 0.01> (x, scale)\n"
        "}",
        feeds,
        [(2, 3, 8), (3, 5, 4)],
    )


def test_mean_variance_normalization(rng):
    def feeds(n, c, h, w):
        return {"x": standard_normal(rng, n, c, h, w)}

    check_symbolic(
        13,
        "g (float[N, C, H, W] x) => (float[N, C, H, W] y) {\n  y = MeanVarianceNormalization (x)\n}",
        feeds,
        [(2, 3, 4, 5), (1, 2, 6, 3)],
    )


def test_instance_normalization(rng):
    def feeds(n, c, h, w):
        return {"x": standard_normal(rng, n, c, h, w), "s": standard_normal(rng, c), "b": standard_normal(rng, c)}

    check_symbolic(
        22,
        "g (float[N, C, H, W] x, float[C] s, float[C] b) => (float[N, C, H, W] y) {\n"
        "  y = InstanceNormalization <epsilon = 0.01> (x, s, b)\n"
        "}",
        feeds,
        [(2, 3, 4, 5), (1, 2, 6, 3)],
    )


BATCH_NORM = {
    "inference": ("float[N, C, H] y", "y", "epsilon = 0.01"),
    "training": (
        "float[N, C, H] y, float[C] rm, float[C] rv", "y, rm, rv",
        "epsilon = 0.01, momentum = 0.8, training_mode = 1",
    ),
}


@pytest.mark.parametrize("mode", list(BATCH_NORM))
def test_batch_normalization(mode, rng):
    outputs, names, attributes = BATCH_NORM[mode]

    def feeds(n, c, h):
        return {
            "x": standard_normal(rng, n, c, h),
            "s": standard_normal(rng, c),
            "b": standard_normal(rng, c),
            "m": standard_normal(rng, c),
            "v": rng.random(c).astype(np.float32) + 0.5,
        }

    check_symbolic(
        15,
        f"g (float[N, C, H] x, float[C] s, float[C] b, float[C] m, float[C] v) => ({outputs}) {{\n"
        f"  {names} = BatchNormalization <{attributes}> (x, s, b, m, v)\n"
        "}",
        feeds,
        [(2, 3, 4), (3, 5, 2)],
    )


def test_group_normalization_symbolic_channels(rng):
    def feeds(n, c, h):
        return {"x": standard_normal(rng, n, c, h), "s": standard_normal(rng, c), "b": standard_normal(rng, c)}

    check_symbolic(
        21,
        "g (float[N, C, H] x, float[C] s, float[C] b) => (float[N, C, H] y) {\n"
        "  y = GroupNormalization <epsilon = 0.01, num_groups = 2> (x, s, b)\n"
        "}",
        feeds,
        [(2, 4, 3), (1, 6, 5)],
    )


# LayerNormalization ---------------------------------------------------------------------------
