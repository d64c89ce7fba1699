"""Parity of the misc family (frontend/lowering/misc.py) against onnxruntime and onnx.reference.

Data flows through graph inputs; axes are Constant nodes. onnx.reference is the oracle for the
ai.onnx.preview.training optimizers (onnxruntime has no kernels for them) and for BitCast of
types onnxruntime cannot feed (complex, float8, int4, int2).
"""

from __future__ import annotations

from tests.util import dims_text, random_full_range

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from onnx_stablehlo.errors import ShapeError, UnsupportedAttributeError
from tests.util import (
    assert_allclose_for_dtype,
    compile_and_run,
    emitted_text,
    onnx_type_name,
    oracle_run,
    parse,
    reference_run,
)






# BitCast -------------------------------------------------------------------------------------


def bit_cast_model(source: int, target: int, shape=(2, 3)) -> onnx.ModelProto:
    node = helper.make_node("BitCast", ["x"], ["y"], to=target)
    graph = helper.make_graph(
        [node],
        "g",
        [helper.make_tensor_value_info("x", source, shape)],
        [helper.make_tensor_value_info("y", target, shape)],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 26)], ir_version=13)
    onnx.checker.check_model(model)
    return model


ORT_BIT_CASTS = [
    (np.float32, np.int32),
    (np.int32, np.float32),
    (np.float64, np.uint64),
    (np.int64, np.float64),
    (np.uint16, np.float16),
    (np.float16, np.int16),
    (np.int8, np.uint8),
    (np.uint32, np.int32),
    (np.bool_, np.uint8),
    (np.float32, np.float32),
]


@pytest.mark.parametrize("pair", ORT_BIT_CASTS, ids=lambda p: f"{np.dtype(p[0]).name}-to-{np.dtype(p[1]).name}")
def test_bit_cast_matches_onnxruntime(pair, rng):
    source, target = (helper.np_dtype_to_tensor_dtype(np.dtype(d)) for d in pair)
    model = bit_cast_model(source, target)
    feeds = {"x": random_full_range((2, 3), pair[0], rng)}
    actual, expected = compile_and_run(model, feeds), oracle_run(model, feeds)
    assert actual[0].dtype == expected[0].dtype
    np.testing.assert_array_equal(actual[0].view(np.uint8), expected[0].view(np.uint8))  # NaN bits too


def _values_of(dtype: int, rng: np.random.Generator) -> np.ndarray:
    np_dtype = helper.tensor_dtype_to_np_dtype(dtype)
    if dtype == TensorProto.COMPLEX64:
        return (rng.standard_normal((2, 3)) + 1j * rng.standard_normal((2, 3))).astype(np.complex64)
    if dtype == TensorProto.BOOL:
        return rng.integers(0, 2, (2, 3)).astype(bool)
    if np.dtype(np_dtype).itemsize == 1:  # float8, int4, uint4, float4, int2, uint2
        finite = np.asarray([0, 1, 2, -1, 0.5, 1.5], np.float32).reshape(2, 3)
        if dtype in (TensorProto.UINT4, TensorProto.UINT2):
            finite = np.abs(finite)
        if dtype in (TensorProto.INT2,):
            finite = np.clip(finite, -2, 1)
        if dtype == TensorProto.UINT2:
            finite = np.clip(finite, 0, 3)
        return finite.astype(np_dtype)
    return random_full_range((2, 3), np_dtype, rng)


REFERENCE_BIT_CASTS = [
    (TensorProto.COMPLEX64, TensorProto.INT64),
    (TensorProto.UINT64, TensorProto.COMPLEX64),
    (TensorProto.COMPLEX64, TensorProto.DOUBLE),
    (TensorProto.UINT8, TensorProto.BOOL),
    (TensorProto.FLOAT8E4M3FN, TensorProto.INT8),
    (TensorProto.UINT8, TensorProto.FLOAT8E5M2),
    (TensorProto.INT4, TensorProto.UINT4),
    (TensorProto.UINT4, TensorProto.FLOAT4E2M1),
    (TensorProto.BFLOAT16, TensorProto.UINT16),
    (TensorProto.INT2, TensorProto.UINT2),
]


@pytest.mark.parametrize(
    "pair", REFERENCE_BIT_CASTS,
    ids=lambda p: f"{helper.tensor_dtype_to_string(p[0])[12:].lower()}-to-{helper.tensor_dtype_to_string(p[1])[12:].lower()}",
)
def test_bit_cast_matches_reference(pair, rng):
    source, target = pair
    model = bit_cast_model(*pair)
    x = _values_of(source, rng)
    if source == TensorProto.UINT8 and target == TensorProto.BOOL:
        x = rng.integers(0, 2, (2, 3)).astype(np.uint8)  # bytes other than 0/1 are no valid bools
    actual, expected = compile_and_run(model, {"x": x}), reference_run(model, {"x": x})
    assert actual[0].dtype == expected[0].dtype
    np.testing.assert_array_equal(actual[0].view(np.uint8), expected[0].view(np.uint8))


def test_bit_cast_is_a_bitcast_convert():
    text = emitted_text(bit_cast_model(TensorProto.FLOAT, TensorProto.INT32))
    assert "stablehlo.bitcast_convert" in text and "stablehlo.convert" not in text


def test_bit_cast_rejects_a_different_width():
    node = helper.make_node("BitCast", ["x"], ["y"], to=TensorProto.INT64)
    graph = helper.make_graph(
        [node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, (2,))],
        [helper.make_tensor_value_info("y", TensorProto.INT64, (2,))],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 26)], ir_version=13)
    with pytest.raises(UnsupportedAttributeError, match=r"to=7 \(INT64\).*same bit width \(32 bits"):
        emitted_text(model, check=False)


# CumProd -------------------------------------------------------------------------------------


@pytest.mark.parametrize("reverse", [0, 1], ids=["forward", "reverse"])
@pytest.mark.parametrize("exclusive", [0, 1], ids=["inclusive", "exclusive"])
@pytest.mark.parametrize("axis", [0, 1, -1], ids=["axis0", "axis1", "axis-1"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64], ids=["f32", "f64", "i32", "i64"])
def test_cum_prod_matches_onnxruntime(dtype, axis, exclusive, reverse, rng):
    ty = onnx_type_name(dtype)
    model = parse(f"""<ir_version: 13, opset_import: ["" : 26]>
g ({ty}[4, 9] x) => ({ty}[4, 9] y) {{
  a = Constant <value = int64 {{{axis}}}> ()
  y = CumProd <exclusive = {exclusive}, reverse = {reverse}> (x, a)
}}""")
    if np.issubdtype(dtype, np.integer):
        x = rng.integers(-3, 4, (4, 9)).astype(dtype)
    else:
        x = rng.uniform(0.5, 1.5, (4, 9)).astype(dtype) * rng.choice([-1, 1], (4, 9)).astype(dtype)
    feeds = {"x": x}
    assert_allclose_for_dtype(compile_and_run(model, feeds), oracle_run(model, feeds))


def test_cum_prod_is_a_log_step_scan():
    model = parse("""<ir_version: 13, opset_import: ["" : 26]>
g (float[2, 9] x) => (float[2, 9] y) {
  a = Constant <value = int64 {1}> ()
  y = CumProd (x, a)
}""")
    text = emitted_text(model)
    assert text.count("stablehlo.multiply") == 4  # shifts 1, 2, 4, 8 cover 9 entries
    assert "stablehlo.pad" in text and "dense<1.000000e+00>" in text


# TensorScatter -------------------------------------------------------------------------------

# (cache shape, update length, axis)
SCATTER_SHAPES = [((2, 6, 4), 2, 1), ((3, 2, 5, 4), 3, -2), ((2, 3, 4, 5), 2, 1), ((2, 2, 3, 8), 3, 3)]


@pytest.mark.parametrize("indices", ["given", "omitted"])
@pytest.mark.parametrize("mode", ["linear", "circular"])
@pytest.mark.parametrize("case", SCATTER_SHAPES, ids=["rank3", "rank4-axis-2", "axis1-of-rank4", "last-axis"])
def test_tensor_scatter_matches_onnxruntime(case, mode, indices, rng):
    shape, length, axis = case
    update_shape = list(shape)
    update_shape[axis] = length
    max_length = shape[axis]
    inputs = [f"float[{dims_text(shape)}] cache", f"float[{dims_text(update_shape)}] u"]
    args = ["cache", "u"]
    feeds = {"cache": random_full_range(shape, np.float32, rng), "u": random_full_range(update_shape, np.float32, rng)}
    if indices == "given":
        inputs.append(f"int64[{shape[0]}] w")
        args.append("w")
        high = max_length if mode == "circular" else max_length - length + 1
        feeds["w"] = rng.integers(0, high, shape[0]).astype(np.int64)
    model = parse(f"""<ir_version: 11, opset_import: ["" : 24]>
g ({', '.join(inputs)}) => (float[{dims_text(shape)}] y) {{
  y = TensorScatter <mode = "{mode}", axis = {axis}> ({', '.join(args)})
}}""")
    assert_allclose_for_dtype(compile_and_run(model, feeds), oracle_run(model, feeds))


def test_tensor_scatter_is_one_batched_scatter():
    model = parse("""<ir_version: 11, opset_import: ["" : 24]>
g (float[2, 6, 4] cache, float[2, 2, 4] u, int64[2] w) => (float[2, 6, 4] y) {
  y = TensorScatter <axis = 1> (cache, u, w)
}""")
    text = emitted_text(model)
    assert '"stablehlo.scatter"' in text and "input_batching_dims = [0]" in text


def test_tensor_scatter_rejects_an_unknown_mode():
    model = parse("""<ir_version: 11, opset_import: ["" : 24]>
g (float[2, 6, 4] cache, float[2, 2, 4] u) => (float[2, 6, 4] y) {
  y = TensorScatter <mode = "ring", axis = 1> (cache, u)
}""")
    with pytest.raises(UnsupportedAttributeError, match=r"mode='ring'.*linear, circular"):
        emitted_text(model)


# ai.onnx.preview.training optimizers ---------------------------------------------------------

OPTIMIZERS = {
    # op: (per-tensor input groups, attributes)
    "Adagrad": (["X", "G", "H"], "decay_factor = 0.1, epsilon = 1e-5, norm_coefficient = 0.001"),
    "Adam": (["X", "G", "V", "H"], "alpha = 0.9, beta = 0.999, epsilon = 1e-6, norm_coefficient = 0.01, "
             "norm_coefficient_post = 0.02"),
    "Momentum": (["X", "G", "V"], 'alpha = 0.9, beta = 0.1, mode = "standard", norm_coefficient = 0.001'),
    "Nesterov": (["X", "G", "V"], 'alpha = 0.95, beta = 0.2, mode = "nesterov", norm_coefficient = 0.01'),
}
OUTPUT_GROUPS = {"Adagrad": ["X", "H"], "Adam": ["X", "V", "H"], "Momentum": ["X", "V"], "Nesterov": ["X", "V"]}


def optimizer_model(name: str, shapes, dtype) -> onnx.ModelProto:
    groups, attrs = OPTIMIZERS[name]
    op = "Momentum" if name == "Nesterov" else name
    ty = onnx_type_name(dtype)
    inputs = [f"{ty} R", "int64 T"] + [
        f"{ty}[{dims_text(shape)}] {g}{i}" for g in groups for i, shape in enumerate(shapes)
    ]
    outputs = [f"{ty}[{dims_text(shape)}] {g}{i}_new" for g in OUTPUT_GROUPS[name] for i, shape in enumerate(shapes)]
    args = ["R", "T"] + [f"{g}{i}" for g in groups for i in range(len(shapes))]
    results = [f"{g}{i}_new" for g in OUTPUT_GROUPS[name] for i in range(len(shapes))]
    return parse(f"""<ir_version: 9, opset_import: ["" : 17, "ai.onnx.preview.training" : 1]>
g ({', '.join(inputs)}) => ({', '.join(outputs)}) {{
  {', '.join(results)} = ai.onnx.preview.training.{op} <{attrs}> ({', '.join(args)})
}}""")


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("step", [0, 3], ids=["first-step", "step3"])
@pytest.mark.parametrize("shapes", [[(3, 4)], [(5,), (2, 3)]], ids=["one-tensor", "two-tensors"])
@pytest.mark.parametrize("name", list(OPTIMIZERS))
def test_optimizer_matches_reference(name, shapes, step, dtype, rng):
    model = optimizer_model(name, shapes, dtype)
    feeds = {"R": np.array(0.1, dtype), "T": np.array(step, np.int64)}
    for g in OPTIMIZERS[name][0]:
        for i, shape in enumerate(shapes):
            value = rng.standard_normal(shape).astype(dtype)
            feeds[f"{g}{i}"] = np.abs(value) if g == "H" else value  # H accumulates squares
    # onnx.reference returns float64 for a single float32 tensor (it skips the final cast), and
    # its float64 Adam rounds through float32 (1e-8 off): float64 Adam gets float32 tolerances.
    expected = [np.asarray(e).astype(dtype) for e in reference_run(model, feeds)]
    tolerance_dtype = np.float32 if name == "Adam" else dtype
    assert_allclose_for_dtype(compile_and_run(model, feeds), expected, tolerance_dtype)


def test_momentum_rejects_an_unknown_mode():
    model = parse("""<ir_version: 9, opset_import: ["" : 17, "ai.onnx.preview.training" : 1]>
g (float R, int64 T, float[2] X, float[2] G, float[2] V) => (float[2] X2, float[2] V2) {
  X2, V2 = ai.onnx.preview.training.Momentum <alpha = 0.9, beta = 0.1, mode = "heavy", norm_coefficient = 0.0> (R, T, X, G, V)
}""")
    with pytest.raises(UnsupportedAttributeError, match=r"mode='heavy'.*standard, nesterov"):
        emitted_text(model)


def test_adam_rejects_inputs_that_do_not_group():
    model = parse("""<ir_version: 9, opset_import: ["" : 17, "ai.onnx.preview.training" : 1]>
g (float R, int64 T, float[2] X, float[2] G, float[2] V) => (float[2] X2) {
  X2 = ai.onnx.preview.training.Adam (R, T, X, G, V)
}""")
    with pytest.raises(ShapeError, match="4 tensors per optimized tensor, got 5 inputs"):
        emitted_text(model)


# ai.onnx.ml ----------------------------------------------------------------------------------


@pytest.mark.parametrize("threshold", [0.0, 0.5, -1.5, 2.0], ids=["zero", "half", "negative", "two"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64], ids=["f32", "f64", "i32", "i64"])
def test_binarizer_matches_onnxruntime(dtype, threshold, rng):
    ty = onnx_type_name(dtype)
    model = parse(f"""<ir_version: 9, opset_import: ["" : 17, "ai.onnx.ml" : 1]>
g ({ty}[4, 5] x) => ({ty}[4, 5] y) {{
  y = ai.onnx.ml.Binarizer <threshold = {threshold}> (x)
}}""")
    if np.issubdtype(dtype, np.integer):
        x = rng.integers(-3, 4, (4, 5)).astype(dtype)  # hits integral thresholds exactly
    else:
        x = rng.standard_normal((4, 5)).astype(dtype) * 2
        x[0, 0] = threshold  # x == threshold maps to 0
    feeds = {"x": x}
    assert_allclose_for_dtype(compile_and_run(model, feeds), oracle_run(model, feeds))


# (x shape, indices shape)
EXTRACT_CASES = [((3, 4), (2,)), ((6,), (3,)), ((2, 3, 5), (1, 4)), ((2, 5), (2, 2))]


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64], ids=["f32", "f64", "i32", "i64"])
@pytest.mark.parametrize("case", EXTRACT_CASES, ids=["matrix", "vector", "rank3", "2d-indices"])
def test_array_feature_extractor_matches_onnxruntime(case, dtype, rng):
    shape, index_shape = case
    count = int(np.prod(index_shape))
    out = [1, count] if len(shape) == 1 else [*shape[:-1], count]
    ty = onnx_type_name(dtype)
    model = parse(f"""<ir_version: 9, opset_import: ["" : 17, "ai.onnx.ml" : 1]>
g ({ty}[{dims_text(shape)}] x, int64[{dims_text(index_shape)}] i) => ({ty}[{dims_text(out)}] y) {{
  y = ai.onnx.ml.ArrayFeatureExtractor (x, i)
}}""")
    feeds = {"x": random_full_range(shape, dtype, rng), "i": rng.integers(0, shape[-1], index_shape).astype(np.int64)}
    assert_allclose_for_dtype(compile_and_run(model, feeds), oracle_run(model, feeds))
    assert '"stablehlo.gather"' in emitted_text(model)
