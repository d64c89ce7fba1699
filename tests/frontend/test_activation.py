"""Parity of the activation family (frontend/lowering/activation.py) against onnxruntime.

Symbolic-dim tests (``check_symbolic``) compile one model with its ``dim_param`` dims kept as
``?``, keep that artifact through runs at two shapes, and compare each run with the oracle.
"""

from __future__ import annotations

import numpy as np
import pytest

import onnx_stablehlo
from tests.util import (FLOATS, FLOAT_IDS, assert_allclose_for_dtype, check_symbolic, compile_and_run, emitted_text,
                        onnx_type_name, oracle_run, ort_run, parse, reference_run, standard_normal)

SOFTMAX_MODEL = """<ir_version: 9, opset_import: ["" : {opset}]>
g ({ty}[2, 3, 5] x) => ({ty}[2, 3, 5] y) {{
  y = {op} {attrs} (x)
}}"""

# (opset, axis or None for the default): opsets 7 and 11 coerce to 2-D at `axis`, 13 uses one axis.
SOFTMAX_CASES = [(7, None), (11, None), (11, 0), (11, -1), (11, 2), (13, None), (13, 0), (13, 1), (13, -2)]
SOFTMAX_IDS = [f"opset{o}-{'default' if a is None else f'axis{a}'}" for o, a in SOFTMAX_CASES]


def _softmax_model(op: str, opset: int, axis: int | None, dtype) -> str:
    attrs = "" if axis is None else f"<axis = {axis}>"
    return SOFTMAX_MODEL.format(opset=opset, ty=onnx_type_name(dtype), op=op, attrs=attrs)


@pytest.mark.parametrize("dtype", FLOATS, ids=FLOAT_IDS)
@pytest.mark.parametrize("opset,axis", SOFTMAX_CASES, ids=SOFTMAX_IDS)
@pytest.mark.parametrize("op", ["Softmax", "LogSoftmax"])
def test_softmax_family_matches_onnxruntime(op, opset, axis, dtype, rng):
    model = parse(_softmax_model(op, opset, axis, dtype))
    feeds = {"x": (rng.standard_normal((2, 3, 5)) * 3).astype(dtype)}
    assert_allclose_for_dtype(compile_and_run(model, feeds), oracle_run(model, feeds))


@pytest.mark.parametrize("op", ["Softmax", "LogSoftmax"])
def test_softmax_family_opset_semantics_differ(op, rng):
    """axis=1 reduces over dims 1 and 2 before opset 13, over dim 1 only from 13 on."""
    feeds = {"x": rng.standard_normal((2, 3, 5)).astype(np.float32)}
    old = compile_and_run(parse(_softmax_model(op, 11, 1, np.float32)), feeds)[0]
    new = compile_and_run(parse(_softmax_model(op, 13, 1, np.float32)), feeds)[0]
    total = np.exp(old).sum(axis=(1, 2)) if op == "LogSoftmax" else old.sum(axis=(1, 2))
    np.testing.assert_allclose(total, np.ones(2), rtol=1e-5)
    total = np.exp(new).sum(axis=1) if op == "LogSoftmax" else new.sum(axis=1)
    np.testing.assert_allclose(total, np.ones((2, 5)), rtol=1e-5)


@pytest.mark.parametrize("op", ["Softmax", "LogSoftmax"])
def test_softmax_family_is_stable_for_large_inputs(op):
    model = parse(_softmax_model(op, 13, None, np.float32))
    x = np.full((2, 3, 5), 1e4, np.float32)
    x[..., 0] = -1e4
    feeds = {"x": x}
    actual = compile_and_run(model, feeds)
    assert np.all(np.isfinite(actual[0]))
    assert_allclose_for_dtype(actual, oracle_run(model, feeds))
    text = emitted_text(model)  # the max shift: a reduce whose body picks a > b ? a : b
    assert "stablehlo.reduce" in text and "stablehlo.compare GT" in text


@pytest.mark.parametrize("op", ["Softmax", "LogSoftmax"])
def test_softmax_family_rows_with_nan_or_infinities_match_onnxruntime(op):
    """builders.shift_max lets a NaN win or lose the row max by order; the NaN still reaches the
    whole row through the sum, so rows with NaN, +inf or only -inf match onnxruntime."""
    model = parse(_softmax_model(op, 13, None, np.float32))
    x = np.random.default_rng(0).standard_normal((2, 3, 5)).astype(np.float32)
    x[0, 0, 0] = np.nan  # first in its row
    x[0, 1, 4] = np.nan  # last in its row
    x[0, 2, 2] = np.inf
    x[1, 0, :] = -np.inf
    x[1, 1, 1:3] = np.nan, np.inf
    feeds = {"x": x}
    assert_allclose_for_dtype(compile_and_run(model, feeds), oracle_run(model, feeds))


def test_softmax_bfloat16_is_computed_in_f32(rng):
    import ml_dtypes

    model = parse(_softmax_model("Softmax", 13, None, ml_dtypes.bfloat16))
    x = rng.standard_normal((2, 3, 5)).astype(ml_dtypes.bfloat16)
    expected = parse(_softmax_model("Softmax", 13, None, np.float32))
    want = oracle_run(expected, {"x": x.astype(np.float32)})[0].astype(ml_dtypes.bfloat16)
    assert_allclose_for_dtype(compile_and_run(model, {"x": x}), [want])
    assert "stablehlo.convert" in emitted_text(model)


HARDMAX_CASES = [(7, None), (11, 0), (11, 1), (11, -1), (13, None), (13, 0), (13, 1)]
HARDMAX_IDS = [f"opset{o}-{'default' if a is None else f'axis{a}'}" for o, a in HARDMAX_CASES]


@pytest.mark.parametrize("dtype", FLOATS, ids=FLOAT_IDS)
@pytest.mark.parametrize("opset,axis", HARDMAX_CASES, ids=HARDMAX_IDS)
def test_hardmax_matches_onnxruntime(opset, axis, dtype, rng):
    model = parse(_softmax_model("Hardmax", opset, axis, dtype))
    x = rng.integers(-3, 4, (2, 3, 5)).astype(dtype)  # ties: the first maximum wins
    # onnxruntime has Hardmax for f32 only, and onnx.reference implements only the opset-13
    # meaning: run onnxruntime in f32 (the integer inputs are exact in every float dtype).
    f32_model = parse(_softmax_model("Hardmax", opset, axis, np.float32))
    expected = [y.astype(dtype) for y in oracle_run(f32_model, {"x": x.astype(np.float32)})]
    assert_allclose_for_dtype(compile_and_run(model, {"x": x}), expected)


# Pointwise activations -------------------------------------------------------------------------

POINTWISE_MODEL = """<ir_version: 10, opset_import: ["" : {opset}]>
g ({ty}[3, 4, 5] x) => ({ty}[3, 4, 5] y) {{
  y = {op} {attrs} (x)
}}"""

# (op, opsets: one per registered revision, attributes)
POINTWISE_CASES = [
    ("Elu", (7, 22), ""), ("Elu", (13,), "<alpha = 0.5>"),
    ("Selu", (7, 22), ""), ("Selu", (13,), "<alpha = 2.0, gamma = 3.0>"),
    ("Celu", (12, 28), ""), ("Celu", (13,), "<alpha = 2.0>"),
    ("LeakyRelu", (7, 16), ""), ("LeakyRelu", (16,), "<alpha = 0.1>"),
    ("ThresholdedRelu", (10, 22), ""), ("ThresholdedRelu", (22,), "<alpha = 0.3>"),
    ("HardSigmoid", (7, 22), ""), ("HardSigmoid", (22,), "<alpha = 0.5, beta = 0.6>"),
    ("HardSwish", (14, 22), ""),
    ("Softplus", (7, 22), ""),
    ("Softsign", (7, 22), ""),
    ("Mish", (18, 22), ""),
    ("Swish", (24,), ""), ("Swish", (24,), "<alpha = 0.5>"),
    ("Gelu", (20,), ""), ("Gelu", (20,), '<approximate = "tanh">'),
    ("Shrink", (9,), ""), ("Shrink", (9,), "<bias = 1.5, lambd = 1.0>"),
]
POINTWISE_PARAMS = [(op, opset, attrs) for op, opsets, attrs in POINTWISE_CASES for opset in opsets]
POINTWISE_IDS = [
    f"{op.lower()}-opset{opset}{'-attrs' if attrs else ''}" for op, opset, attrs in POINTWISE_PARAMS
]


# onnxruntime has no f64 kernel for these and onnx.reference rounds them through float32.
F32_ONLY_ORACLES = {"HardSwish", "Gelu", "Shrink"}


@pytest.mark.parametrize("dtype", FLOATS, ids=FLOAT_IDS)
@pytest.mark.parametrize("op,opset,attrs", POINTWISE_PARAMS, ids=POINTWISE_IDS)
def test_pointwise_activation_matches_onnxruntime(op, opset, attrs, dtype, rng):
    if op == "Celu" and opset < 28 and dtype != np.float32:
        pytest.skip("Celu-12 is float32 only")
    model = parse(POINTWISE_MODEL.format(opset=opset, ty=onnx_type_name(dtype), op=op, attrs=attrs))
    feeds = {"x": (rng.standard_normal((3, 4, 5)) * 3).astype(dtype)}
    tolerance = dtype
    if dtype == np.float64 and op in F32_ONLY_ORACLES:
        tolerance = np.float32
    assert_allclose_for_dtype(compile_and_run(model, feeds), oracle_run(model, feeds), tolerance)


def test_pointwise_activation_bfloat16_matches_f32(rng):
    import ml_dtypes

    x = (rng.standard_normal((3, 4, 5)) * 3).astype(ml_dtypes.bfloat16)
    for op in ["Elu", "Selu", "HardSwish", "Softplus", "Mish", "Gelu"]:
        opset = 22 if op != "Gelu" else 20
        model = parse(POINTWISE_MODEL.format(opset=opset, ty="bfloat16", op=op, attrs=""))
        f32_model = parse(POINTWISE_MODEL.format(opset=opset, ty="float", op=op, attrs=""))
        expected = oracle_run(f32_model, {"x": x.astype(np.float32)})[0].astype(ml_dtypes.bfloat16)
        assert_allclose_for_dtype(compile_and_run(model, {"x": x}), [expected])


def test_softplus_does_not_overflow():
    model = parse(POINTWISE_MODEL.format(opset=22, ty="float", op="Softplus", attrs=""))
    x = np.linspace(-200, 200, 60, dtype=np.float32).reshape(3, 4, 5)
    actual = compile_and_run(model, {"x": x})[0]
    # atol: XLA on CPU flushes subnormal results (exp(-200) ~ 1e-87 in f32 is 0 anyway).
    np.testing.assert_allclose(actual, np.logaddexp(0, x), rtol=1e-6, atol=1e-37)
    assert "stablehlo.log_plus_one" in emitted_text(model)


@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu_lowering_choice(approximate):
    attrs = f'<approximate = "{approximate}">'
    model = parse(POINTWISE_MODEL.format(opset=20, ty="float", op="Gelu", attrs=attrs))
    text = emitted_text(model)
    assert ("xf64>" in text) == (approximate == "none")  # emit.erf's float64 polynomial
    assert ("stablehlo.tanh" in text) == (approximate == "tanh")


def test_gelu_rejects_unknown_approximation():
    from onnx_stablehlo.errors import UnsupportedAttributeError

    model = parse(POINTWISE_MODEL.format(opset=20, ty="float", op="Gelu", attrs='<approximate = "sigmoid">'))
    with pytest.raises(UnsupportedAttributeError, match="approximate='sigmoid'.*none, tanh"):
        emitted_text(model)


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.int8], ids=["i32", "i64", "i8"])
def test_shrink_integers_match_onnxruntime(dtype, rng):
    attrs = "<bias = 1.0, lambd = 2.0>"
    model = parse(POINTWISE_MODEL.format(opset=9, ty=onnx_type_name(dtype), op="Shrink", attrs=attrs))
    feeds = {"x": rng.integers(-6, 7, (3, 4, 5)).astype(dtype)}
    assert_allclose_for_dtype(compile_and_run(model, feeds), oracle_run(model, feeds))


# PRelu -------------------------------------------------------------------------------------------

PRELU_MODEL = """<ir_version: 10, opset_import: ["" : {opset}]>
g ({ty}[2, 3, 4, 5] x, {ty}[{slope}] slope) => ({ty}[2, 3, 4, 5] y) {{
  y = PRelu (x, slope)
}}"""

PRELU_SLOPES = ["2, 3, 4, 5", "5", "3, 1, 1", "1"]


@pytest.mark.parametrize("slope", PRELU_SLOPES, ids=["same", "trailing", "per-channel", "scalar"])
@pytest.mark.parametrize("opset", [7, 9, 16])
def test_prelu_broadcasts_like_onnxruntime(opset, slope, rng):
    model = parse(PRELU_MODEL.format(opset=opset, ty="float", slope=slope))
    slope_shape = tuple(int(d) for d in slope.split(","))
    feeds = {"x": rng.standard_normal((2, 3, 4, 5)).astype(np.float32),
             "slope": rng.standard_normal(slope_shape).astype(np.float32)}
    assert_allclose_for_dtype(compile_and_run(model, feeds), oracle_run(model, feeds))


@pytest.mark.parametrize(
    "dtype", [np.float16, np.float64, np.int32, np.int64], ids=["f16", "f64", "i32", "i64"]
)
def test_prelu_other_dtypes_match_onnxruntime(dtype, rng):
    model = parse(PRELU_MODEL.format(opset=16, ty=onnx_type_name(dtype), slope="3, 1, 1"))
    if np.issubdtype(dtype, np.integer):
        x, slope = rng.integers(-9, 9, (2, 3, 4, 5)), rng.integers(-3, 4, (3, 1, 1))
    else:
        x, slope = rng.standard_normal((2, 3, 4, 5)), rng.standard_normal((3, 1, 1))
    feeds = {"x": x.astype(dtype), "slope": slope.astype(dtype)}
    assert_allclose_for_dtype(compile_and_run(model, feeds), oracle_run(model, feeds))


def test_prelu_rejects_slope_that_does_not_broadcast():
    from onnx_stablehlo.errors import ShapeError

    model = parse(PRELU_MODEL.format(opset=16, ty="float", slope="4"))
    with pytest.raises(ShapeError, match="does not broadcast"):
        emitted_text(model)


# Clip --------------------------------------------------------------------------------------------

CLIP_ATTR_MODEL = """<ir_version: 10, opset_import: ["" : 6]>
g ({ty}[3, 4] x) => ({ty}[3, 4] y) {{
  y = Clip {attrs} (x)
}}"""

CLIP_INPUT_MODEL = """<ir_version: 10, opset_import: ["" : {opset}]>
g ({ty}[3, 4] x{bound_inputs}) => ({ty}[3, 4] y) {{
  y = Clip ({args})
}}"""


@pytest.mark.parametrize(
    "attrs",
    ["", "<min = -0.5>", "<max = 0.5>", "<min = -0.5, max = 0.5>", "<min = 0.5, max = -0.5>"],
    ids=["none", "min", "max", "both", "min-above-max"],
)
def test_clip_attributes_match_onnxruntime(attrs, rng):
    model = parse(CLIP_ATTR_MODEL.format(ty="float", attrs=attrs))
    feeds = {"x": rng.standard_normal((3, 4)).astype(np.float32)}
    # onnxruntime's Clip-6 refuses min > max; onnx.reference (numpy.clip) gives max everywhere.
    oracle = reference_run if "min = 0.5" in attrs else oracle_run
    assert_allclose_for_dtype(compile_and_run(model, feeds), oracle(model, feeds))


CLIP_BOUNDS = [("min", "max"), ("min", ""), ("", "max"), ("", "")]


@pytest.mark.parametrize("bounds", CLIP_BOUNDS, ids=["both", "min", "max", "none"])
@pytest.mark.parametrize(
    "opset,dtype",
    [(11, np.float32), (12, np.int32), (12, np.uint8), (13, np.float16), (13, np.int64)],
    ids=["opset11-f32", "opset12-i32", "opset12-u8", "opset13-f16", "opset13-i64"],
)
def test_clip_inputs_match_onnxruntime(opset, dtype, bounds, rng):
    ty = onnx_type_name(dtype)
    names = [b for b in bounds if b]
    args = ", ".join(["x", *bounds]).rstrip(", ")
    model = parse(CLIP_INPUT_MODEL.format(
        opset=opset, ty=ty, bound_inputs="".join(f", {ty} {n}" for n in names), args=args))
    if np.issubdtype(dtype, np.integer):
        x = rng.integers(0 if dtype == np.uint8 else -20, 20, (3, 4)).astype(dtype)
        values = {"min": dtype(5), "max": dtype(12)}
    else:
        x = rng.standard_normal((3, 4)).astype(dtype)
        values = {"min": dtype(-0.3), "max": dtype(0.4)}
    feeds = {"x": x, **{n: np.array(values[n], dtype) for n in names}}
    assert_allclose_for_dtype(compile_and_run(model, feeds), oracle_run(model, feeds))


# Dropout -----------------------------------------------------------------------------------------

DROPOUT_OLD_MODEL = """<ir_version: 10, opset_import: ["" : {opset}]>
g (float[3, 4, 5] x) => (float[3, 4, 5] y, {mask_ty}[3, 4, 5] mask) {{
  y, mask = Dropout <ratio = 0.3> (x)
}}"""


@pytest.mark.parametrize("opset,mask_ty", [(7, "float"), (10, "bool")], ids=["opset7", "opset10"])
def test_dropout_attribute_revisions_are_identity(opset, mask_ty, rng):
    model = parse(DROPOUT_OLD_MODEL.format(opset=opset, mask_ty=mask_ty))
    feeds = {"x": rng.standard_normal((3, 4, 5)).astype(np.float32)}
    y, mask = compile_and_run(model, feeds)
    assert_allclose_for_dtype([y], ort_run(model, feeds)[:1])
    # onnxruntime leaves the mask of 7/10 all zeros; nothing is dropped, so it is all ones here
    # (as onnx.reference and Dropout-12 say).
    np.testing.assert_array_equal(mask, np.ones((3, 4, 5), np.float32 if mask_ty == "float" else np.bool_))
    assert mask.dtype == (np.float32 if mask_ty == "float" else np.bool_)


DROPOUT_MODEL = """<ir_version: 10, opset_import: ["" : {opset}]>
g ({ty}[40, 50] x, float r, bool t) => ({ty}[40, 50] y, bool[40, 50] mask) {{
  y, mask = Dropout <seed = 7> (x, r, t)
}}"""


@pytest.mark.parametrize("opset", [12, 13, 22])
def test_dropout_inference_with_runtime_flags_matches_onnxruntime(opset, rng):
    model = parse(DROPOUT_MODEL.format(opset=opset, ty="float"))
    feeds = {"x": rng.standard_normal((40, 50)).astype(np.float32), "r": np.array(0.4, np.float32),
             "t": np.array(False)}
    assert_allclose_for_dtype(compile_and_run(model, feeds), oracle_run(model, feeds))
    feeds["t"], feeds["r"] = np.array(True), np.array(0.0, np.float32)  # training, ratio 0: identity
    assert_allclose_for_dtype(compile_and_run(model, feeds), oracle_run(model, feeds))


@pytest.mark.parametrize("dtype", [np.float32, np.float16], ids=["f32", "f16"])
@pytest.mark.parametrize("ratio", [0.25, 0.75])
def test_dropout_training_drops_and_rescales(ratio, dtype, rng):
    model = parse(DROPOUT_MODEL.format(opset=22, ty=onnx_type_name(dtype)))
    x = (rng.standard_normal((40, 50)) + 5).astype(dtype)
    y, mask = compile_and_run(model, {"x": x, "r": np.array(ratio, np.float32), "t": np.array(True)})
    assert mask.dtype == np.bool_ and y.dtype == dtype
    kept = mask.mean()
    assert abs(kept - (1 - ratio)) < 0.05, f"kept {kept:.3f} of the elements with ratio {ratio}"
    np.testing.assert_array_equal(y[~mask], 0)
    assert_allclose_for_dtype([y[mask]], [(x[mask].astype(np.float32) / (1 - ratio)).astype(dtype)])
    assert "stablehlo.rng_bit_generator" in emitted_text(model)


def test_dropout_without_training_input_emits_no_rng(rng):
    model = parse("""<ir_version: 10, opset_import: ["" : 22]>
g (float[3, 4] x) => (float[3, 4] y, bool[3, 4] mask) {
  y, mask = Dropout (x)
}""")
    feeds = {"x": rng.standard_normal((3, 4)).astype(np.float32)}
    assert_allclose_for_dtype(compile_and_run(model, feeds), oracle_run(model, feeds))
    assert "rng_bit_generator" not in emitted_text(model)


@pytest.mark.parametrize("value", [5e9, 7e9, 3e10])
def test_softmax_after_average_pool_of_huge_values_has_no_nan(value):
    """SqueezeNet's tail with logits near 7e9 (the onnx wheel's light models): x * (1/169)
    contracted into the softmax's x - max gave x - max(x) = -115 for the maximum and NaN
    everywhere (fixed by emit.divide). Equal inputs keep the sums independent of their order."""
    model = parse("""<ir_version: 9, opset_import: ["" : 13]>
g (float[1, 1000, 13, 13] x) => (float[1, 1000] y) {
  pooled = GlobalAveragePool(x)
  flat = Flatten(pooled)
  y = Softmax(flat)
}""")
    x = np.full((1, 1000, 13, 13), value, np.float32)
    (actual,) = compile_and_run(model, {"x": x})
    assert not np.isnan(actual).any()
    np.testing.assert_allclose(actual, ort_run(model, {"x": x})[0], rtol=1e-5, atol=1e-6)


# Softmax family ----------------------------------------------------------------------------------


@pytest.mark.parametrize("opset", [11, 13])
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_hardmax(opset, axis, rng):
    def feeds(a, b, c):
        # integer-valued inputs, so ties (the first maximum wins) happen
        return {"x": rng.integers(0, 3, (a, b, c)).astype(np.float32)}

    check_symbolic(
        opset,
        f"g (float[A, B, C] x) => (float[A, B, C] y) {{\n  y = Hardmax <axis = {axis}> (x)\n}}",
        feeds,
        [(2, 3, 4), (3, 1, 5)],
    )


@pytest.mark.parametrize("op", ["Softmax", "LogSoftmax"])
@pytest.mark.parametrize("opset", [11, 13])
def test_softmax_legacy_and_current(op, opset, rng):
    def feeds(a, b, c):
        return {"x": standard_normal(rng, a, b, c)}

    check_symbolic(
        opset,
        f"g (float[A, B, C] x) => (float[A, B, C] y) {{\n  y = {op} <axis = 1> (x)\n}}",
        feeds,
        [(2, 3, 4), (3, 2, 5)],
    )


def _compile(opset: int, text: str, extra_opsets: str = "") -> tuple[onnx_stablehlo.CompiledModel, object]:
    model = parse(f'<ir_version: 9, opset_import: ["" : {opset}{extra_opsets}]>\n' + text)
    compiled = onnx_stablehlo.compile(model)
    assert compiled.artifact is not None, compiled.dynamic_error
    return compiled, model


# Dropout -------------------------------------------------------------------------------------------


def test_training_dropout_zero_ratio_symbolic(rng):
    check_symbolic(
        13,
        """g (float[N, M] x, float r, bool t) => (float[N, M] y, bool[N, M] mask) {
  y, mask = Dropout <seed = 3> (x, r, t)
}""",
        lambda n, m: {"x": standard_normal(rng, n, m), "r": np.array(0.0, np.float32), "t": np.array(True)},
        [(2, 3), (4, 5)],
    )


def test_training_dropout_symbolic_draws_a_seeded_mask(rng):
    compiled, _ = _compile(
        13,
        """g (float[N, M] x) => (float[N, M] y, bool[N, M] mask) {
  r = Constant <value = float {0.25}> ()
  t = Constant <value = bool {1}> ()
  y, mask = Dropout <seed = 7> (x, r, t)
}""",
    )
    assert "stablehlo.rng_bit_generator" not in compiled.mlir
    for n, m in [(64, 50), (30, 101)]:
        x = standard_normal(rng, n, m)
        y, mask = compiled.run({"x": x})
        assert 0.7 < mask.mean() < 0.8  # keep probability 1 - ratio
        np.testing.assert_allclose(y, np.where(mask, x / 0.75, 0), rtol=1e-6)
        again = compiled.run({"x": x})[1]
        np.testing.assert_array_equal(mask, again)  # the module's seed is fixed
    assert compiled.artifact is not None
