"""Parity of the reduction family (frontend/lowering/reduction.py) against onnxruntime.

Symbolic-dim tests (``check_symbolic``) compile one model with its ``dim_param`` dims kept as
``?``, keep that artifact through runs at two shapes, and compare each run with the oracle.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import onnx
import pytest

import onnx_stablehlo
from onnx_stablehlo.errors import NonConstantInputError
from tests.util import (assert_allclose_for_dtype, check_symbolic, compile_and_run, emitted_text, onnx_type_name,
                        oracle_run, parse, standard_normal)

REDUCE_OPS = [
    "ReduceSum",
    "ReduceMean",
    "ReduceMax",
    "ReduceMin",
    "ReduceProd",
    "ReduceL1",
    "ReduceL2",
    "ReduceSumSquare",
    "ReduceLogSum",
    "ReduceLogSumExp",
]
# The first opset where `axes` is an input rather than an attribute.
AXES_INPUT_OPSET = {op: 13 if op == "ReduceSum" else 18 for op in REDUCE_OPS}

ATTR_MODEL = """<ir_version: 9, opset_import: ["" : {opset}]>
g ({ty}{shape} x) => ({ty} y) {{
  y = {op} {attrs} (x)
}}"""

INPUT_MODEL = """<ir_version: 9, opset_import: ["" : {opset}]>
g ({ty}{shape} x) => ({ty} y) {axes_init}{{
  y = {op} {attrs} (x{axes_use})
}}"""


def _dims(shape) -> str:
    return "[" + ", ".join(map(str, shape)) + "]"


def reduce_model(op: str, opset: int, axes, keepdims: int | None, dtype, shape=(2, 3, 4), noop: int | None = None):
    """A one-node model; `axes` goes to the attribute or to an int64 initializer by opset."""
    ty = onnx_type_name(dtype)
    attrs = {}
    if keepdims is not None:
        attrs["keepdims"] = keepdims
    if noop is not None:
        attrs["noop_with_empty_axes"] = noop
    if opset < AXES_INPUT_OPSET[op]:
        if axes is not None:
            attrs["axes"] = "[" + ", ".join(map(str, axes)) + "]"
        text = ATTR_MODEL.format(opset=opset, ty=ty, shape=_dims(shape), op=op, attrs=_attrs(attrs))
    else:
        axes_init = "" if axes is None else f"<int64[{len(axes)}] axes = {{{', '.join(map(str, axes))}}}> "
        axes_use = "" if axes is None else ", axes"
        text = INPUT_MODEL.format(
            opset=opset, ty=ty, shape=_dims(shape), op=op, attrs=_attrs(attrs), axes_init=axes_init, axes_use=axes_use
        )
    model = onnx.parser.parse_model(text)
    if shape == ():
        model.graph.input[0].type.tensor_type.shape.SetInParent()  # the text syntax drops `[]`
    onnx.checker.check_model(model)
    return model


def _attrs(attrs: dict) -> str:
    return "<" + ", ".join(f"{k} = {v}" for k, v in attrs.items()) + ">" if attrs else ""


def _input(op: str, shape, dtype, rng: np.random.Generator) -> np.ndarray:
    if np.dtype(dtype) == np.bool_:
        return rng.integers(0, 2, shape).astype(bool)
    if np.issubdtype(dtype, np.integer):
        return rng.integers(1 if op == "ReduceProd" else -5, 4, shape).astype(dtype)
    x = rng.standard_normal(shape)
    if op in ("ReduceLogSum",):
        x = np.abs(x) + 0.1
    if op == "ReduceProd":
        x = 0.5 + np.abs(x)
    return x.astype(dtype)


# (axes, keepdims) per case: one axis, negative and unsorted axes, the default (all), keepdims 0.
AXES_CASES = [([1], 1), ([-1, 0], 1), (None, 1), ([2], 0), (None, 0)]
AXES_IDS = ["axis1", "axes-1,0", "all", "axis2-nokeep", "all-nokeep"]


@pytest.mark.parametrize("axes,keepdims", AXES_CASES, ids=AXES_IDS)
@pytest.mark.parametrize("op", REDUCE_OPS)
def test_reduce_axes_input_matches_onnxruntime(op, axes, keepdims, rng):
    model = reduce_model(op, 18, axes, keepdims, np.float32)
    feeds = {"x": _input(op, (2, 3, 4), np.float32, rng)}
    assert_allclose_for_dtype(compile_and_run(model, feeds), oracle_run(model, feeds))


@pytest.mark.parametrize("opset", [11, 13])
@pytest.mark.parametrize("axes,keepdims", AXES_CASES[:3], ids=AXES_IDS[:3])
@pytest.mark.parametrize("op", REDUCE_OPS)
def test_reduce_axes_attribute_matches_onnxruntime(op, axes, keepdims, opset, rng):
    if opset >= AXES_INPUT_OPSET[op]:
        opset = 11
    model = reduce_model(op, opset, axes, keepdims, np.float32)
    feeds = {"x": _input(op, (2, 3, 4), np.float32, rng)}
    assert_allclose_for_dtype(compile_and_run(model, feeds), oracle_run(model, feeds))


@pytest.mark.parametrize("op", ["ReduceSum", "ReduceMean", "ReduceMax"])
def test_reduce_opset7_uses_revision_1(op, rng):
    model = reduce_model(op, 7, [0, 2], 0, np.float32)
    feeds = {"x": _input(op, (2, 3, 4), np.float32, rng)}
    assert_allclose_for_dtype(compile_and_run(model, feeds), oracle_run(model, feeds))


DTYPE_CASES = [
    ("ReduceSum", np.float16),
    ("ReduceSum", np.float64),
    ("ReduceSum", np.int32),
    ("ReduceSum", np.int64),
    ("ReduceMean", np.float16),
    ("ReduceMean", np.int32),
    ("ReduceMax", np.int64),
    ("ReduceMax", np.float16),
    ("ReduceMin", np.int32),
    ("ReduceProd", np.int64),
    ("ReduceL1", np.float16),
    ("ReduceL2", np.float64),
    ("ReduceSumSquare", np.int32),
    ("ReduceLogSumExp", np.float16),
]


@pytest.mark.parametrize("op,dtype", DTYPE_CASES, ids=[f"{o}-{np.dtype(d).name}" for o, d in DTYPE_CASES])
def test_reduce_dtypes_match_onnxruntime(op, dtype, rng):
    model = reduce_model(op, 18, [1], 0, dtype)
    feeds = {"x": _input(op, (2, 3, 4), dtype, rng)}
    assert_allclose_for_dtype(compile_and_run(model, feeds), oracle_run(model, feeds))


@pytest.mark.parametrize("op", ["ReduceMax", "ReduceMin"])
def test_reduce_max_min_bool_opset20(op, rng):
    model = reduce_model(op, 20, [1], 1, np.bool_)
    feeds = {"x": _input(op, (2, 3, 4), np.bool_, rng)}
    assert_allclose_for_dtype(compile_and_run(model, feeds), oracle_run(model, feeds))


def test_reduce_sum_bfloat16_accumulates_in_f32(rng):
    model = reduce_model("ReduceSum", 13, [1], 0, ml_dtypes.bfloat16, shape=(2, 256))
    x = rng.standard_normal((2, 256)).astype(ml_dtypes.bfloat16)
    expected = x.astype(np.float32).sum(axis=1).astype(ml_dtypes.bfloat16)
    assert_allclose_for_dtype(compile_and_run(model, {"x": x}), [expected])
    assert "tensor<2x256xf32>" in emitted_text(model)


@pytest.mark.parametrize("op", REDUCE_OPS)
def test_reduce_empty_set_gives_the_identity(op, rng):
    """Reducing a 0-size dim: 0 for sums and the mean (onnxruntime's and torch's choice; the
    spec's sum / count is NaN), -inf for max and log-sums, +inf for min, 1 for prod."""
    model = reduce_model(op, 18, [1], 1, np.float32, shape=(2, 0, 4))
    feeds = {"x": np.zeros((2, 0, 4), np.float32)}
    actual = compile_and_run(model, feeds)
    assert_allclose_for_dtype(actual, oracle_run(model, feeds))
    if op == "ReduceMean":
        assert actual[0].shape == (2, 1, 4) and np.all(actual[0] == 0)


@pytest.mark.parametrize("op", ["ReduceSum", "ReduceMax", "ReduceMean"])
def test_reduce_noop_with_empty_axes_returns_the_input(op, rng):
    model = reduce_model(op, 18, [], 1, np.float32, noop=1)
    feeds = {"x": _input(op, (2, 3, 4), np.float32, rng)}
    actual = compile_and_run(model, feeds)
    assert_allclose_for_dtype(actual, oracle_run(model, feeds))
    assert "stablehlo.reduce" not in emitted_text(model)


@pytest.mark.parametrize("op", ["ReduceSum", "ReduceL2"])
def test_reduce_empty_axes_without_noop_reduces_everything(op, rng):
    model = reduce_model(op, 18, [], 0, np.float32, noop=0)
    feeds = {"x": _input(op, (2, 3, 4), np.float32, rng)}
    actual = compile_and_run(model, feeds)
    assert actual[0].shape == ()
    assert_allclose_for_dtype(actual, oracle_run(model, feeds))


def test_reduce_of_a_scalar(rng):
    model = reduce_model("ReduceSum", 13, None, 1, np.float32, shape=())
    feeds = {"x": np.array(2.5, np.float32)}
    assert_allclose_for_dtype(compile_and_run(model, feeds), oracle_run(model, feeds))


def test_reduce_log_sum_exp_is_stable_for_large_inputs():
    model = reduce_model("ReduceLogSumExp", 18, [1], 0, np.float32)
    x = np.full((2, 3, 4), 1e4, np.float32)
    x[0, 0, 0] = -np.inf
    actual = compile_and_run(model, {"x": x})[0]
    assert np.all(np.isfinite(actual))
    np.testing.assert_allclose(actual, 1e4 + np.log(np.array([[2, 3, 3, 3], [3, 3, 3, 3]], np.float32)), rtol=1e-6)


def test_reduce_mean_divides_a_sum():
    text = emitted_text(reduce_model("ReduceMean", 18, [1], 1, np.float32))
    assert "stablehlo.add" in text and "stablehlo.divide" in text


def test_reduce_rejects_runtime_axes():
    model = parse(
        """<ir_version: 9, opset_import: ["" : 18]>
g (float[2, 3] x, int64[1] axes) => (float y) {
  y = ReduceSum(x, axes)
}"""
    )
    with pytest.raises(NonConstantInputError, match="axes"):
        onnx_stablehlo.lower(model)


ARG_MODEL = """<ir_version: 9, opset_import: ["" : {opset}]>
g ({ty}[3, 4, 5] x) => (int64 y) {{
  y = {op} {attrs} (x)
}}"""

# (opset, axis, keepdims, select_last_index or None)
ARG_CASES = [
    (11, 0, 1, None),
    (11, -1, 0, None),
    (12, 1, 1, 1),
    (12, 2, 0, 0),
    (13, -2, 1, 1),
    (13, None, None, None),
]


def _arg_id(case) -> str:
    opset, axis, keepdims, last = case
    parts = [f"opset{opset}", "default" if axis is None else f"axis{axis}"]
    if keepdims == 0:
        parts.append("nokeep")
    if last:
        parts.append("last")
    return "-".join(parts)


def arg_model(op: str, opset: int, axis, keepdims, last, dtype):
    attrs = {}
    if axis is not None:
        attrs["axis"] = axis
    if keepdims is not None:
        attrs["keepdims"] = keepdims
    if last is not None:
        attrs["select_last_index"] = last
    return parse(ARG_MODEL.format(opset=opset, ty=onnx_type_name(dtype), op=op, attrs=_attrs(attrs)))


@pytest.mark.parametrize("case", ARG_CASES, ids=[_arg_id(c) for c in ARG_CASES])
@pytest.mark.parametrize("op", ["ArgMax", "ArgMin"])
def test_arg_reduce_matches_onnxruntime(op, case, rng):
    model = arg_model(op, *case, np.float32)
    feeds = {"x": rng.integers(-2, 3, (3, 4, 5)).astype(np.float32)}  # many ties
    assert_allclose_for_dtype(compile_and_run(model, feeds), oracle_run(model, feeds))


@pytest.mark.parametrize(
    "dtype", [np.int32, np.int64, np.float16, np.float64, np.uint8], ids=["i32", "i64", "f16", "f64", "ui8"]
)
@pytest.mark.parametrize("op", ["ArgMax", "ArgMin"])
def test_arg_reduce_dtypes_match_onnxruntime(op, dtype, rng):
    model = arg_model(op, 13, 1, 0, 1, dtype)
    feeds = {"x": rng.integers(0, 4, (3, 4, 5)).astype(dtype)}
    assert_allclose_for_dtype(compile_and_run(model, feeds), oracle_run(model, feeds))


@pytest.mark.parametrize("op", ["ArgMax", "ArgMin"])
def test_arg_reduce_picks_the_first_nan_like_numpy(op):
    model = arg_model(op, 13, 1, 0, None, np.float32)
    x = np.zeros((3, 4, 5), np.float32)
    x[0, 2, :] = np.nan
    x[0, 3, :] = np.nan
    x[1, 1, 0] = np.nan
    expected = (np.argmax if op == "ArgMax" else np.argmin)(x, axis=1)
    np.testing.assert_array_equal(compile_and_run(model, {"x": x})[0], expected)


def test_arg_max_is_one_variadic_reduce():
    text = emitted_text(arg_model("ArgMax", 13, 1, 1, 0, np.float32))
    assert text.count("stablehlo.reduce") == 1 and "stablehlo.iota" in text


# Reductions --------------------------------------------------------------------------------------


@pytest.mark.parametrize("op", ["ArgMax", "ArgMin"])
@pytest.mark.parametrize("keepdims", [0, 1])
@pytest.mark.parametrize("last", [0, 1])
def test_arg_reduce(op, keepdims, last, rng):
    def feeds(a, b):
        return {"x": rng.integers(0, 4, (a, b, 3)).astype(np.float32)}

    out = "[A, 1, 3]" if keepdims else "[A, 3]"
    check_symbolic(
        13,
        f"g (float[A, B, 3] x) => (int64{out} y) {{\n"
        f"  y = {op} <axis = 1, keepdims = {keepdims}, select_last_index = {last}> (x)\n"
        "}",
        feeds,
        [(2, 5), (4, 3)],
    )


@pytest.mark.parametrize("op", ["ReduceMean", "ReduceLogSumExp", "ReduceL2", "ReduceMax"])
def test_reduce_constant_axes(op, rng):
    def feeds(a, b):
        return {"x": standard_normal(rng, a, b, 4)}

    check_symbolic(
        18,
        "g (float[A, B, 4] x) => (float[A, 1, 1] y) <int64[2] axes = {1, 2}> {\n"
        f"  y = {op} <keepdims = 1> (x, axes)\n"
        "}",
        feeds,
        [(2, 5), (3, 2)],
    )
