"""Maps and strings at the graph boundary (``frontend/host_values.py``, ``runtime/host_stages.py``)
against onnxruntime: DictVectorizer map inputs fed as dicts, strings interned as int64 ids
(LabelEncoder 1/2/4 and CategoryMapper with string keys or values, string constants through
data-movement ops, unknown strings), and the typed errors for what stays unsupported."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import onnx_stablehlo
from onnx_stablehlo.errors import FeedError, UnsupportedDtypeError, UnsupportedValueTypeError
from tests.frontend.ml_util import ML, ml_model, run_both
from tests.util import assert_allclose_for_dtype, ort_run

WORDS = np.array(["cat", "dog", "emu", "yak", "gnu"])
"""Feed words: the first three are the models' keys, "yak" and "gnu" are unknown to them."""


def _strings(rng, shape) -> np.ndarray:
    return rng.choice(WORDS, shape).astype(object)


def _assert_same(actual, expected) -> None:
    assert len(actual) == len(expected)
    for got, want in zip(actual, expected):
        want = np.asarray(want)
        if want.dtype == object:
            got = np.asarray(got)
            assert got.dtype == object and got.shape == want.shape
            assert got.tolist() == want.tolist()
        else:
            assert_allclose_for_dtype(got, want)


def _string_io(name: str, shape) -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info(name, TensorProto.STRING, shape)


# LabelEncoder, CategoryMapper ----------------------------------------------------------------


@pytest.mark.parametrize(
    "case", ["string-to-int", "string-to-float", "string-to-string", "int-to-string", "float-to-string"]
)
def test_label_encoder_2_string_keys_and_values_match_onnxruntime(case, rng):
    keys_in, values_out = case.split("-to-")
    attrs: dict = {}
    if keys_in == "string":
        attrs["keys_strings"] = ["cat", "dog", "emu"]
        x = _strings(rng, (4, 3))
        in_type = TensorProto.STRING
    elif keys_in == "int":
        attrs["keys_int64s"] = [3, 1, 4]
        x = rng.integers(0, 6, (4, 3)).astype(np.int64)
        in_type = TensorProto.INT64
    else:
        attrs["keys_floats"] = [0.5, 1.5, 2.5]
        x = rng.choice(np.array([0.5, 1.5, 2.5, 3.5], np.float32), (4, 3))
        in_type = TensorProto.FLOAT
    if values_out == "int":
        attrs.update(values_int64s=[10, 20, 30], default_int64=-7)
        out_type = TensorProto.INT64
    elif values_out == "float":
        attrs.update(values_floats=[0.25, 0.5, 0.75], default_float=9.0)
        out_type = TensorProto.FLOAT
    else:
        attrs.update(values_strings=["one", "two", "three"], default_string="none")
        out_type = TensorProto.STRING
    node = helper.make_node("LabelEncoder", ["X"], ["Y"], domain=ML, **attrs)
    model = ml_model(node, [helper.make_tensor_value_info("X", in_type, ["N", 3])], [helper.make_tensor_value_info("Y", out_type, ["N", 3])], ml_opset=2)
    _assert_same(*run_both(model, {"X": x}))


def test_label_encoder_4_string_tensors_match_onnxruntime(rng):
    node = helper.make_node(
        "LabelEncoder", ["X"], ["Y"], domain=ML,
        keys_tensor=numpy_helper.from_array(np.array(["cat", "dog", "emu"], dtype=object), "keys"),
        values_tensor=numpy_helper.from_array(np.array([5, 6, 7], np.int64), "values"),
        default_tensor=numpy_helper.from_array(np.array([-2], np.int64), "default"),
    )
    model = ml_model(node, [_string_io("X", ["N"])], [helper.make_tensor_value_info("Y", TensorProto.INT64, ["N"])], ml_opset=4, opset=21)
    _assert_same(*run_both(model, {"X": _strings(rng, (7,))}))


@pytest.mark.parametrize("direction", ["strings-to-ints", "ints-to-strings"])
@pytest.mark.parametrize("op_type", ["LabelEncoder", "CategoryMapper"])
def test_opset_1_string_mappings_match_onnxruntime(op_type, direction, rng):
    """LabelEncoder-1 (ai.onnx.ml opset 1) and CategoryMapper become LabelEncoder-2 over ids."""
    if op_type == "LabelEncoder":
        attrs = {"classes_strings": ["cat", "dog", "emu"], "default_int64": -1, "default_string": "?"}
    else:
        attrs = {"cats_strings": ["cat", "dog", "emu"], "cats_int64s": [7, 8, 9], "default_int64": -1, "default_string": "?"}
    node = helper.make_node(op_type, ["X"], ["Y"], domain=ML, **attrs)
    if direction == "strings-to-ints":
        io = (_string_io("X", ["N"]), helper.make_tensor_value_info("Y", TensorProto.INT64, ["N"]))
        x = _strings(rng, (8,))
    else:
        io = (helper.make_tensor_value_info("X", TensorProto.INT64, ["N"]), _string_io("Y", ["N"]))
        x = rng.integers(0, 10, (8,)).astype(np.int64)
    model = ml_model(node, [io[0]], [io[1]], ml_opset=1)
    _assert_same(*run_both(model, {"X": x}))


# Strings through data-movement ops --------------------------------------------------------------


def test_strings_flow_through_gather_concat_and_equal_like_onnxruntime(rng):
    """String initializers and feeds meet in Concat, Gather and Equal; an unknown feed string
    comes back out unchanged and equals only itself."""
    model = onnx.parser.parse_model(
        """
        <ir_version: 9, opset_import: ["" : 19]>
        g (string[N, 2] X, int64[K] idx) => (string[N, K] picked, bool[N, 2] same) {
            extra = Constant <value = string[1, 1] {"emu"}> ()
            shape_x = Shape <end = 1> (X)
            one = Constant <value = int64[1] {1}> ()
            cols = Concat <axis = 0> (shape_x, one)
            col = Expand (extra, cols)
            joined = Concat <axis = 1> (X, col)
            picked = Gather <axis = 1> (joined, idx)
            rev = Constant <value = int64[2] {1, 0}> ()
            swapped = Gather <axis = 1> (X, rev)
            same = Equal (X, swapped)
        }
        """
    )
    onnx.checker.check_model(model)
    feeds = {"X": _strings(rng, (6, 2)), "idx": np.array([2, 0, 1], np.int64)}
    actual, expected = onnx_stablehlo.compile(model).run(feeds), ort_run(model, feeds)
    _assert_same(actual, expected)
    assert {"yak", "gnu"} & set(np.asarray(actual[0]).ravel().tolist())  # unknown strings survive


def test_classifier_string_labels_come_back_as_strings(rng):
    node = helper.make_node(
        "LinearClassifier", ["X"], ["Y", "Z"], domain=ML, coefficients=[1.0, 2.0, 3.0, 4.0, -1.0, 0.5],
        intercepts=[0.1, -0.2, 0.0], classlabels_strings=["low", "mid", "high"], post_transform="SOFTMAX",
    )
    model = ml_model(
        node, [helper.make_tensor_value_info("X", TensorProto.FLOAT, ["N", 2])],
        [_string_io("Y", ["N"]), helper.make_tensor_value_info("Z", TensorProto.FLOAT, ["N", 3])],
    )
    actual, expected = run_both(model, {"X": rng.normal(size=(9, 2)).astype(np.float32)})
    _assert_same(actual, expected)
    assert set(actual[0].tolist()) <= {"low", "mid", "high"}


def test_one_hot_encoder_string_categories_match_onnxruntime(rng):
    node = helper.make_node("OneHotEncoder", ["X"], ["Y"], domain=ML, cats_strings=["cat", "dog", "emu"], zeros=1)
    model = ml_model(node, [_string_io("X", ["N", 2])], [helper.make_tensor_value_info("Y", TensorProto.FLOAT, ["N", 2, 3])])
    _assert_same(*run_both(model, {"X": _strings(rng, (5, 2))}))


def test_string_feed_of_numbers_is_a_feed_error():
    node = helper.make_node("OneHotEncoder", ["X"], ["Y"], domain=ML, cats_strings=["cat", "dog"], zeros=1)
    model = ml_model(node, [_string_io("X", ["N"])], [helper.make_tensor_value_info("Y", TensorProto.FLOAT, ["N", 2])])
    with pytest.raises(FeedError, match="'X' is a string tensor"):
        onnx_stablehlo.compile(model).run({"X": np.array([1, 2], np.int64)})


def test_string_reaching_a_computing_op_is_a_typed_error_naming_node_and_value():
    node = helper.make_node("StringNormalizer", ["X"], ["Y"], name="normalize", case_change_action="LOWER")
    graph = helper.make_graph([node], "g", [_string_io("X", ["N"])], [_string_io("Y", ["N"])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=9)
    with pytest.raises(UnsupportedDtypeError, match=r"ai.onnx::StringNormalizer \(opset 17\) at 'normalize': it computes on the string value 'X'") as info:
        onnx_stablehlo.compile(model)
    assert info.value.node_name == "'normalize'" and info.value.op_type == "StringNormalizer"


def test_sequence_of_strings_is_a_typed_error():
    seq = helper.make_sequence_type_proto(helper.make_tensor_type_proto(TensorProto.STRING, None))
    node = helper.make_node("SequenceLength", ["S"], ["n"])
    graph = helper.make_graph([node], "g", [helper.make_value_info("S", seq)], [helper.make_tensor_value_info("n", TensorProto.INT64, [])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=9)
    with pytest.raises(UnsupportedValueTypeError, match=r"'S'.*seq\(tensor\(string\)\)"):
        onnx_stablehlo.compile(model)


# DictVectorizer map inputs ----------------------------------------------------------------------


def _dict_vectorizer_model(key_type: int, value_type: int, vocabulary: dict) -> onnx.ModelProto:
    map_type = helper.make_map_type_proto(key_type, helper.make_tensor_type_proto(value_type, None))
    vectorize = helper.make_node("DictVectorizer", ["features"], ["dense"], domain=ML, **vocabulary)
    scale = helper.make_node("Scaler", ["dense"], ["Y"], domain=ML, offset=[0.5], scale=[2.0])
    width = len(next(iter(vocabulary.values())))
    graph = helper.make_graph(
        [vectorize, scale], "g", [helper.make_value_info("features", map_type)],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [1, width])],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid(ML, 1)], ir_version=9)


@pytest.mark.parametrize(
    "key_type,value_type,vocabulary,feed",
    [
        (TensorProto.STRING, TensorProto.FLOAT, {"string_vocabulary": ["a", "b", "c", "d"]}, {"b": 1.5, "d": -2.0, "zz": 7.0}),
        (TensorProto.INT64, TensorProto.FLOAT, {"int64_vocabulary": [9, 3, 5]}, {3: 0.25, 9: 4.0, 4: 1.0}),
        (TensorProto.INT64, TensorProto.DOUBLE, {"int64_vocabulary": [9, 3, 5]}, {3: 0.25, 9: 4.0}),
        (TensorProto.STRING, TensorProto.INT64, {"string_vocabulary": ["x", "y"]}, {"y": 3}),
    ],
    ids=["string-float", "int64-float", "int64-double", "string-int64"],
)
def test_dict_vectorizer_map_input_matches_the_oracle(key_type, value_type, vocabulary, feed):
    """onnxruntime's Python API builds only map(K, float) from a dict (a dict for a double or
    int64 map is refused as map(K, float)), and onnx.reference's DictVectorizer returns no
    dense row: those cases are checked against the spec's row (value of each vocabulary key,
    0 when missing) through the Scaler, in float64."""
    model = _dict_vectorizer_model(key_type, value_type, vocabulary)
    words = next(iter(vocabulary.values()))

    def spec_row(model, feeds):
        row = np.array([[feeds["features"].get(k, 0) for k in words]], np.float64)
        return [((row - 0.5) * 2.0).astype(np.float32)]

    oracle = ort_run if value_type == TensorProto.FLOAT else spec_row
    compiled = onnx_stablehlo.compile(model)
    _assert_same(compiled.run({"features": feed}), oracle(model, {"features": feed}))
    other = {k: 2 * v for k, v in feed.items()}  # a second call: the fast path sees the row
    _assert_same(compiled.run({"features": other}), oracle(model, {"features": other}))


def test_dict_vectorizer_feed_errors():
    model = _dict_vectorizer_model(TensorProto.STRING, TensorProto.FLOAT, {"string_vocabulary": ["a", "b"]})
    compiled = onnx_stablehlo.compile(model)
    with pytest.raises(FeedError, match="feed a dict"):
        compiled.run({"features": [{"a": 1.0}]})
    with pytest.raises(FeedError, match="empty"):
        compiled.run({"features": {}})
    with pytest.raises(FeedError, match="string keys"):
        compiled.run({"features": {1: 1.0}})


def test_map_input_not_feeding_one_dict_vectorizer_is_a_typed_error():
    """A map input read by two nodes (or by anything but a DictVectorizer) stays unsupported."""
    map_type = helper.make_map_type_proto(TensorProto.INT64, helper.make_tensor_type_proto(TensorProto.FLOAT, None))
    nodes = [
        helper.make_node("DictVectorizer", ["features"], ["Y"], domain=ML, int64_vocabulary=[1, 2]),
        helper.make_node("DictVectorizer", ["features"], ["Z"], domain=ML, int64_vocabulary=[2, 3]),
    ]
    graph = helper.make_graph(
        nodes, "g", [helper.make_value_info("features", map_type)],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [1, 2]), helper.make_tensor_value_info("Z", TensorProto.FLOAT, [1, 2])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid(ML, 1)], ir_version=9)
    with pytest.raises(UnsupportedValueTypeError, match=r"input 'features'.*map\(int64,tensor\(float\)\)") as info:
        onnx_stablehlo.compile(model)
    assert info.value.value_name == "features"


def test_sequence_of_maps_input_is_a_typed_error():
    seq_of_maps = helper.make_sequence_type_proto(
        helper.make_map_type_proto(TensorProto.STRING, helper.make_tensor_type_proto(TensorProto.FLOAT, None))
    )
    nodes = [
        helper.make_node("SequenceAt", ["rows", "zero"], ["row"]),
        helper.make_node("DictVectorizer", ["row"], ["Y"], domain=ML, string_vocabulary=["a"]),
    ]
    graph = helper.make_graph(
        nodes, "g", [helper.make_value_info("rows", seq_of_maps)], [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [1, 1])],
        initializer=[numpy_helper.from_array(np.array(0, np.int64), "zero")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid(ML, 1)], ir_version=9)
    with pytest.raises(UnsupportedValueTypeError, match=r"input 'rows'.*seq\(map\(string,tensor\(float\)\)\)"):
        onnx_stablehlo.compile(model)


def test_run_device_refuses_host_converted_values():
    """String outputs and map inputs exist only on the host: run_device says to use run."""
    node = helper.make_node("LabelEncoder", ["X"], ["Y"], domain=ML, keys_int64s=[1, 2], values_strings=["a", "b"])
    model = ml_model(node, [helper.make_tensor_value_info("X", TensorProto.INT64, ["N"])], [_string_io("Y", ["N"])], ml_opset=2)
    compiled = onnx_stablehlo.compile(model)
    assert compiled.run({"X": np.array([2, 1, 5], np.int64)})[0].tolist() == ["b", "a", "_Unused"]
    with pytest.raises(UnsupportedDtypeError, match="use run"):
        compiled.run_device({"X": np.array([2, 1], np.int64)})


def test_jax_bridge_refuses_host_converted_values():
    pytest.importorskip("jax")
    from onnx_stablehlo.jax import to_jax

    node = helper.make_node("OneHotEncoder", ["X"], ["Y"], domain=ML, cats_strings=["cat", "dog"], zeros=1)
    model = ml_model(node, [_string_io("X", ["N"])], [helper.make_tensor_value_info("Y", TensorProto.FLOAT, ["N", 2])])
    with pytest.raises(UnsupportedDtypeError, match="JAX bridge takes tensors only"):
        to_jax(model)
