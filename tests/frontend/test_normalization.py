"""Parity of the normalization family (frontend/lowering/normalization.py) against onnxruntime."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from onnx_stablehlo.errors import UnsupportedAttributeError
from tests.util import assert_allclose_for_dtype, compile_and_run, emitted_text, onnx_type_name, oracle_run, parse

FLOATS = [np.float32, np.float16, np.float64]
FLOAT_IDS = ["f32", "f16", "f64"]

# LayerNormalization ---------------------------------------------------------------------------

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


LAYER_NORM_CASES = [(None, True, False), (-1, False, True), (1, True, True), (0, True, True), (-2, False, False)]
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
