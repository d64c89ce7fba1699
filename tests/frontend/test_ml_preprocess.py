"""Parity of the ai.onnx.ml preprocessing ops (frontend/lowering/ml_preprocess.py: Normalizer,
Scaler, Binarizer, Imputer, OneHotEncoder, ArrayFeatureExtractor, FeatureVectorizer, LabelEncoder,
CategoryMapper, ZipMap) against onnxruntime, and the typed errors for map-typed inputs.
"""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

import onnx_stablehlo
from onnx_stablehlo.errors import UnsupportedValueTypeError
from tests.frontend.ml_util import ML, feature_input, ml_model, run_both
from tests.util import (assert_allclose_for_dtype, compile_and_run, dims_text, emitted_text, onnx_type_name, oracle_run,
                        ort_run, parse, random_full_range)

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


# Preprocessing -------------------------------------------------------------------------------


@pytest.mark.parametrize("norm", ["MAX", "L1", "L2"])
def test_normalizer(norm, rng):
    node = helper.make_node("Normalizer", ["X"], ["Y"], domain=ML, norm=norm)
    model = ml_model(node, [feature_input(5)], [helper.make_tensor_value_info("Y", TensorProto.FLOAT, ["N", 5])])
    x = rng.normal(size=(6, 5)).astype(np.float32)
    x[2] = 0.0  # a zero norm gives zeros in onnxruntime
    x[3] = -np.abs(x[3])  # MAX of a negative row
    actual, expected = run_both(model, {"X": x})
    np.testing.assert_array_equal(actual[0], expected[0])  # the norm in float64, rounded once


@pytest.mark.parametrize("dtype", [TensorProto.FLOAT, TensorProto.DOUBLE, TensorProto.INT64], ids=["f32", "f64", "i64"])
def test_scaler(dtype, rng):
    node = helper.make_node("Scaler", ["X"], ["Y"], domain=ML, offset=[0.5, -1.0, 2.0], scale=[2.0, 0.25, -1.5])
    model = ml_model(node, [feature_input(3, dtype)], [helper.make_tensor_value_info("Y", TensorProto.FLOAT, ["N", 3])])
    x = rng.normal(size=(4, 3)) * 4
    x = x.astype(helper.tensor_dtype_to_np_dtype(dtype))
    actual, expected = run_both(model, {"X": x})
    assert_allclose_for_dtype(actual, expected)


def test_imputer_float_nan_and_int64(rng):
    node = helper.make_node("Imputer", ["X"], ["Y"], domain=ML, imputed_value_floats=[1.0, 2.0, 3.0], replaced_value_float=float("nan"))
    model = ml_model(node, [feature_input(3)], [helper.make_tensor_value_info("Y", TensorProto.FLOAT, ["N", 3])])
    x = rng.normal(size=(5, 3)).astype(np.float32)
    x[rng.random((5, 3)) < 0.4] = np.nan
    actual, expected = run_both(model, {"X": x})
    assert_allclose_for_dtype(actual, expected)

    node = helper.make_node("Imputer", ["X"], ["Y"], domain=ML, imputed_value_int64s=[9], replaced_value_int64=-1)
    model = ml_model(node, [feature_input(3, TensorProto.INT64)], [helper.make_tensor_value_info("Y", TensorProto.INT64, ["N", 3])])
    actual, expected = run_both(model, {"X": rng.integers(-1, 2, (5, 3)).astype(np.int64)})
    assert_allclose_for_dtype(actual, expected)


def test_one_hot_encoder_and_feature_vectorizer(rng):
    encode = helper.make_node("OneHotEncoder", ["X"], ["H"], domain=ML, cats_int64s=[3, 1, 4], zeros=1)
    vectorize = helper.make_node("FeatureVectorizer", ["F", "G"], ["Y"], domain=ML, inputdimensions=[2, 4])  # cut, padded
    model = ml_model(encode, [helper.make_tensor_value_info("X", TensorProto.INT64, ["N", 2])], [helper.make_tensor_value_info("H", TensorProto.FLOAT, ["N", 2, 3])])
    actual, expected = run_both(model, {"X": rng.integers(0, 6, (5, 2)).astype(np.int64)})
    assert_allclose_for_dtype(actual, expected)

    graph = helper.make_graph(
        [vectorize], "g",
        [helper.make_tensor_value_info("F", TensorProto.FLOAT, ["N", 3]), helper.make_tensor_value_info("G", TensorProto.FLOAT, ["N", 2])],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, ["N", 6])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid(ML, 3)], ir_version=9)
    feeds = {"F": rng.normal(size=(4, 3)).astype(np.float32), "G": rng.normal(size=(4, 2)).astype(np.float32)}
    actual, expected = run_both(model, feeds)
    assert_allclose_for_dtype(actual, expected)


@pytest.mark.parametrize("direction", ["int-to-float", "float-to-int"])
def test_label_encoder_numeric_keys(direction, rng):
    if direction == "int-to-float":
        node = helper.make_node("LabelEncoder", ["X"], ["Y"], domain=ML, keys_int64s=[5, 2, 9], values_floats=[0.5, -1.0, 3.0], default_float=-7.0)
        x = rng.integers(0, 10, (4, 3)).astype(np.int64)
        types = (TensorProto.INT64, TensorProto.FLOAT)
    else:
        node = helper.make_node("LabelEncoder", ["X"], ["Y"], domain=ML, keys_floats=[0.5, 1.5, float("nan")], values_int64s=[1, 2, 3], default_int64=-1)
        x = rng.choice(np.array([0.5, 1.5, 2.5, np.nan], np.float32), (4, 3))
        types = (TensorProto.FLOAT, TensorProto.INT64)
    model = ml_model(node, [helper.make_tensor_value_info("X", types[0], ["N", 3])], [helper.make_tensor_value_info("Y", types[1], ["N", 3])])
    actual, expected = run_both(model, {"X": x})
    assert_allclose_for_dtype(actual, expected)


# Loading and the ZipMap output ------------------------------------------------------------------


def _zipmap_model() -> onnx.ModelProto:
    classify = helper.make_node(
        "LinearClassifier", ["X"], ["label", "scores"], domain=ML,
        coefficients=[1.0, -1.0, 0.5, 0.5, -2.0, 1.0], intercepts=[0.0, 0.1, -0.1], classlabels_ints=[3, 5, 8],
        post_transform="SOFTMAX",
    )
    zipmap = helper.make_node("ZipMap", ["scores"], ["probabilities"], domain=ML, classlabels_int64s=[3, 5, 8])
    seq_of_maps = helper.make_sequence_type_proto(helper.make_map_type_proto(TensorProto.INT64, helper.make_tensor_type_proto(TensorProto.FLOAT, None)))
    graph = helper.make_graph(
        [classify, zipmap], "g", [feature_input(2)],
        [helper.make_tensor_value_info("label", TensorProto.INT64, ["N"]), helper.make_value_info("probabilities", seq_of_maps)],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid(ML, 1)], ir_version=9)


@pytest.mark.parametrize("rows", [1, 6])
def test_zipmap_output_is_a_list_of_dicts_like_onnxruntime(rows, rng):
    model = _zipmap_model()
    compiled = onnx_stablehlo.compile(model)
    x = rng.normal(size=(rows, 2)).astype(np.float32)
    (label, dicts), (want_label, want_dicts) = compiled.run({"X": x}), ort_run(model, {"X": x})
    np.testing.assert_array_equal(label, want_label)
    assert isinstance(dicts, list) and len(dicts) == rows
    for got, want in zip(dicts, want_dicts):
        assert list(got) == list(want) == [3, 5, 8]
        np.testing.assert_allclose(list(got.values()), list(want.values()), rtol=1e-6, atol=1e-7)


def test_map_typed_input_is_a_typed_error():
    """A map input that is also a graph output (not one DictVectorizer's input, which the
    runtime feeds as a dense row: test_ml_strings.py): the loader names the value and its type."""
    map_type = helper.make_map_type_proto(TensorProto.INT64, helper.make_tensor_type_proto(TensorProto.FLOAT, None))
    node = helper.make_node("DictVectorizer", ["features"], ["Y"], domain=ML, int64_vocabulary=[1, 2])
    graph = helper.make_graph(
        [node], "g", [helper.make_value_info("features", map_type)],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [1, 2]), helper.make_value_info("features", map_type)],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid(ML, 1)], ir_version=9)
    with pytest.raises(UnsupportedValueTypeError, match=r"input 'features'.*map\(int64,tensor\(float\)\)") as info:
        onnx_stablehlo.compile(model)
    assert info.value.value_name == "features"


def test_cli_check_compares_zipmap_outputs(tmp_path, capsys):
    from onnx_stablehlo.cli import main

    path = tmp_path / "zipmap.onnx"
    onnx.save(_zipmap_model(), path)
    assert main(["check", str(path), "--dim", "N=3"]) == 0
    out = capsys.readouterr().out
    assert "output probabilities: float32 [3, 3]" in out and "OK" in out
