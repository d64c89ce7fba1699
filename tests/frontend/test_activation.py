"""Parity of the activation family (frontend/lowering/activation.py) against onnxruntime."""

from __future__ import annotations

import numpy as np
import pytest

from tests.util import assert_allclose_for_dtype, compile_and_run, emitted_text, onnx_type_name, oracle_run, parse

FLOATS = [np.float32, np.float16, np.float64]
FLOAT_IDS = ["f32", "f16", "f64"]

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
    assert "stablehlo.maximum" in emitted_text(model)


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
