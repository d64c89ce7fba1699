"""Parity tests of the ai.onnx.ml lowerings (frontend/lowering/ml.py) against onnxruntime.

Models are built with ``onnx.helper`` (list attributes of hundreds of values do not read well in
ONNX text syntax); random trees are seeded. Real converted models (skl2onnx, onnxmltools) are
in the zoo (``tools/build_sklearn.py``, ``tests/models/test_zoo.py``).
"""

from __future__ import annotations

from tests.frontend.ml_util import ML, POST_TRANSFORMS, assert_scores_close, feature_input, ml_model, run_both

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

import onnx_stablehlo
from onnx_stablehlo.errors import UnsupportedAttributeError, UnsupportedDtypeError, UnsupportedValueTypeError
from tests.util import assert_allclose_for_dtype, ort_run, reference_run



MODES = ["BRANCH_LEQ", "BRANCH_LT", "BRANCH_GTE", "BRANCH_GT", "BRANCH_EQ", "BRANCH_NEQ"]








def _random_trees(rng: np.random.Generator, n_trees: int, depth: int, features: int, modes: list[str], thresholds: np.ndarray):
    """Complete binary trees with random features, modes and thresholds (chosen from ``thresholds``)."""
    nodes = {k: [] for k in ("treeids", "nodeids", "featureids", "modes", "values", "truenodeids", "falsenodeids", "missing")}
    leaves = []
    for tree in range(n_trees):
        count = 2 ** (depth + 1) - 1
        for node in range(count):
            leaf = node >= 2**depth - 1
            nodes["treeids"].append(tree)
            nodes["nodeids"].append(node)
            nodes["featureids"].append(0 if leaf else int(rng.integers(features)))
            nodes["modes"].append("LEAF" if leaf else str(rng.choice(modes)))
            nodes["values"].append(0.0 if leaf else float(rng.choice(thresholds)))
            nodes["truenodeids"].append(0 if leaf else 2 * node + 1)
            nodes["falsenodeids"].append(0 if leaf else 2 * node + 2)
            nodes["missing"].append(0 if leaf else int(rng.integers(2)))
            if leaf:
                leaves.append((tree, node))
    return nodes, leaves


def _tree_inputs(rng: np.random.Generator, rows: int, features: int, thresholds: np.ndarray) -> np.ndarray:
    """Values that hit the thresholds exactly (EQ, LEQ ties), NaNs (missing values) and others."""
    x = rng.choice(np.concatenate([thresholds, thresholds + 0.5, [np.nan]]), size=(rows, features))
    return x.astype(np.float32)


# Tree ensembles --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("aggregate", "post"),
    [("SUM", "NONE"), ("AVERAGE", "LOGISTIC"), ("MIN", "SOFTMAX"), ("MAX", "SOFTMAX_ZERO")],
)
def test_tree_ensemble_regressor_every_mode_missing_values(aggregate, post, rng):
    thresholds = np.array([-1.0, 0.0, 0.5, 2.0])
    nodes, leaves = _random_trees(rng, n_trees=5, depth=3, features=4, modes=MODES, thresholds=thresholds)
    targets = {k: [] for k in ("treeids", "nodeids", "ids", "weights")}
    for tree, node in leaves:
        for target in range(2):
            if rng.random() < 0.8:  # some leaves have no weight for a target (matters for MIN/MAX)
                targets["treeids"].append(tree)
                targets["nodeids"].append(node)
                targets["ids"].append(target)
                targets["weights"].append(float(rng.normal()))
    node = helper.make_node(
        "TreeEnsembleRegressor", ["X"], ["Y"], domain=ML,
        n_targets=2, aggregate_function=aggregate, post_transform=post, base_values=[0.25, -0.5],
        nodes_treeids=nodes["treeids"], nodes_nodeids=nodes["nodeids"], nodes_featureids=nodes["featureids"],
        nodes_modes=nodes["modes"], nodes_values=nodes["values"], nodes_truenodeids=nodes["truenodeids"],
        nodes_falsenodeids=nodes["falsenodeids"], nodes_missing_value_tracks_true=nodes["missing"],
        target_treeids=targets["treeids"], target_nodeids=targets["nodeids"], target_ids=targets["ids"],
        target_weights=targets["weights"],
    )
    model = ml_model(node, [feature_input(4)], [helper.make_tensor_value_info("Y", TensorProto.FLOAT, ["N", 2])])
    feeds = {"X": _tree_inputs(rng, 40, 4, thresholds)}
    actual, expected = run_both(model, feeds)
    assert_allclose_for_dtype(actual, expected)


@pytest.mark.parametrize(
    ("classes", "post"),
    [(3, post) for post in POST_TRANSFORMS] + [(2, "NONE"), (2, "LOGISTIC")],
    ids=[f"3-classes-{p}" for p in POST_TRANSFORMS] + ["binary-both-columns-NONE", "binary-both-columns-LOGISTIC"],
)
def test_tree_ensemble_classifier_post_transforms(classes, post, rng):
    thresholds = np.array([-0.5, 0.0, 1.0])
    nodes, leaves = _random_trees(rng, n_trees=4, depth=2, features=3, modes=["BRANCH_LEQ", "BRANCH_GT"], thresholds=thresholds)
    weights = {k: [] for k in ("treeids", "nodeids", "ids", "weights")}
    for tree, node in leaves:
        for cls in range(classes):
            weights["treeids"].append(tree)
            weights["nodeids"].append(node)
            weights["ids"].append(cls)
            weights["weights"].append(float(rng.uniform(0.0, 0.3)))
    node = helper.make_node(
        "TreeEnsembleClassifier", ["X"], ["Y", "Z"], domain=ML,
        classlabels_int64s=list(range(10, 10 + classes)), post_transform=post,
        nodes_treeids=nodes["treeids"], nodes_nodeids=nodes["nodeids"], nodes_featureids=nodes["featureids"],
        nodes_modes=nodes["modes"], nodes_values=nodes["values"], nodes_truenodeids=nodes["truenodeids"],
        nodes_falsenodeids=nodes["falsenodeids"],
        class_treeids=weights["treeids"], class_nodeids=weights["nodeids"], class_ids=weights["ids"],
        class_weights=weights["weights"],
    )
    model = ml_model(
        node, [feature_input(3)],
        [helper.make_tensor_value_info("Y", TensorProto.INT64, ["N"]), helper.make_tensor_value_info("Z", TensorProto.FLOAT, ["N", classes])],
    )
    feeds = {"X": rng.normal(size=(30, 3)).astype(np.float32)}
    actual, expected = run_both(model, feeds)
    if classes == 2:
        # onnxruntime's label for two classes that both have weights is a literal 1 when class
        # 1's score is > 0, else 0 (neither the labels nor class 0's score count); we give the
        # label of the larger score, as the spec and onnx.reference do (docs/coverage.md).
        expected[0] = reference_run(model, feeds)[0]
    assert_scores_close(actual, expected, post)


@pytest.mark.parametrize("post", ["NONE", "LOGISTIC"])
@pytest.mark.parametrize("signs", ["mixed", "positive"])
def test_tree_ensemble_classifier_binary_one_score_column(post, signs, rng):
    """Gradient boosting's binary form: weights for class 1 only, a base value."""
    thresholds = np.array([-0.5, 0.0, 1.0])
    nodes, leaves = _random_trees(rng, n_trees=6, depth=2, features=3, modes=["BRANCH_LEQ"], thresholds=thresholds)
    low = -1.0 if signs == "mixed" else 0.0
    node = helper.make_node(
        "TreeEnsembleClassifier", ["X"], ["Y", "Z"], domain=ML,
        classlabels_int64s=[0, 1], post_transform=post, base_values=[0.1],
        nodes_treeids=nodes["treeids"], nodes_nodeids=nodes["nodeids"], nodes_featureids=nodes["featureids"],
        nodes_modes=nodes["modes"], nodes_values=nodes["values"], nodes_truenodeids=nodes["truenodeids"],
        nodes_falsenodeids=nodes["falsenodeids"],
        class_treeids=[t for t, _ in leaves], class_nodeids=[n for _, n in leaves], class_ids=[0] * len(leaves),
        class_weights=[float(w) for w in rng.uniform(low, 0.2, len(leaves))],
    )
    model = ml_model(
        node, [feature_input(3)],
        [helper.make_tensor_value_info("Y", TensorProto.INT64, ["N"]), helper.make_tensor_value_info("Z", TensorProto.FLOAT, ["N", 2])],
    )
    feeds = {"X": rng.normal(size=(30, 3)).astype(np.float32)}
    actual, expected = run_both(model, feeds)
    assert_allclose_for_dtype(actual, expected)


@pytest.mark.parametrize("aggregate", [0, 1, 2, 3], ids=["AVERAGE", "SUM", "MIN", "MAX"])
def test_tree_ensemble_5_set_membership_and_missing_values(aggregate, rng):
    """TreeEnsemble-5: leaves apart from nodes, BRANCH_MEMBER sets delimited by NaN."""
    # Tree 0: node0 x0 in {1, 3, 5}? -> node1 : leaf0.  node1 x1 <= 0.5 ? leaf1 : leaf2.
    # Tree 1: node2 x2 in {2, 4}? (missing -> true) -> leaf3 : node3.  node3 x0 > 2 ? leaf4 : leaf5.
    node = helper.make_node(
        "TreeEnsemble", ["X"], ["Y"], domain=ML,
        n_targets=2, aggregate_function=aggregate, post_transform=0,
        tree_roots=[0, 2],
        nodes_featureids=[0, 1, 2, 0],
        nodes_modes=helper.make_tensor("m", TensorProto.UINT8, [4], [6, 0, 6, 3]),
        nodes_splits=helper.make_tensor("s", TensorProto.FLOAT, [4], [0.0, 0.5, 0.0, 2.0]),
        nodes_truenodeids=[1, 1, 3, 4], nodes_trueleafs=[0, 1, 1, 1],
        nodes_falsenodeids=[0, 2, 3, 5], nodes_falseleafs=[1, 1, 0, 1],
        nodes_missing_value_tracks_true=[0, 0, 1, 0],
        membership_values=helper.make_tensor("v", TensorProto.FLOAT, [7], [1, 3, 5, np.nan, 2, 4, np.nan]),
        leaf_targetids=[0, 1, 0, 1, 0, 1],
        leaf_weights=helper.make_tensor("w", TensorProto.FLOAT, [6], [1.0, 2.0, -3.0, 4.5, 0.25, -1.5]),
    )
    model = ml_model(node, [feature_input(3)], [helper.make_tensor_value_info("Y", TensorProto.FLOAT, ["N", 2])], ml_opset=5, opset=21)
    x = rng.choice(np.array([0, 1, 2, 3, 4, 5, 0.5, np.nan]), size=(48, 3)).astype(np.float32)
    actual, expected = run_both(model, {"X": x})
    assert_allclose_for_dtype(actual, expected)


def test_tree_walk_has_no_loop_per_tree(rng):
    """200 trees of depth 3 emit 3 walk steps, not 200: the gather count does not grow with trees."""
    nodes, leaves = _random_trees(rng, n_trees=200, depth=3, features=4, modes=["BRANCH_LEQ"], thresholds=np.array([0.0]))
    node = helper.make_node(
        "TreeEnsembleRegressor", ["X"], ["Y"], domain=ML, n_targets=1,
        nodes_treeids=nodes["treeids"], nodes_nodeids=nodes["nodeids"], nodes_featureids=nodes["featureids"],
        nodes_modes=nodes["modes"], nodes_values=nodes["values"], nodes_truenodeids=nodes["truenodeids"],
        nodes_falsenodeids=nodes["falsenodeids"],
        target_treeids=[t for t, _ in leaves], target_nodeids=[n for _, n in leaves], target_ids=[0] * len(leaves),
        target_weights=[1.0] * len(leaves),
    )
    model = ml_model(node, [feature_input(4)], [helper.make_tensor_value_info("Y", TensorProto.FLOAT, ["N", 1])])
    text = onnx_stablehlo.lower(model).text
    # per step: node links, feature values, thresholds; then the leaf values
    assert text.count("#stablehlo.gather<") == 3 * 3 + 1
    x = rng.normal(size=(7, 4)).astype(np.float32)
    actual, expected = run_both(model, {"X": x})
    assert_allclose_for_dtype(actual, expected)


# Linear models and SVMs ----------------------------------------------------------------------


@pytest.mark.parametrize("post", POST_TRANSFORMS)
@pytest.mark.parametrize("rows", [3, 1], ids=["3-classes", "binary-one-row"])
def test_linear_classifier_post_transforms(rows, post, rng):
    labels = [7, 9, 11][: max(rows, 2)]
    node = helper.make_node(
        "LinearClassifier", ["X"], ["Y", "Z"], domain=ML,
        coefficients=[float(v) for v in rng.normal(size=rows * 4)], intercepts=[float(v) for v in rng.normal(size=rows)],
        classlabels_ints=labels, post_transform=post,
    )
    columns = 2 if rows == 1 else rows
    model = ml_model(
        node, [feature_input(4)],
        [helper.make_tensor_value_info("Y", TensorProto.INT64, ["N"]), helper.make_tensor_value_info("Z", TensorProto.FLOAT, ["N", columns])],
    )
    feeds = {"X": rng.normal(size=(20, 4)).astype(np.float32) * 0.3}
    if rows == 1 and post == "PROBIT":
        with pytest.raises(UnsupportedAttributeError, match="post_transform='PROBIT'"):
            onnx_stablehlo.compile(model).run(feeds)
        return
    actual, expected = run_both(model, feeds)
    assert_scores_close(actual, expected, post)


@pytest.mark.parametrize(("kernel", "one_class"), [("LINEAR", 0), ("POLY", 1), ("RBF", 0), ("SIGMOID", 1)])
def test_svm_regressor_every_kernel(kernel, one_class, rng):
    node = helper.make_node(
        "SVMRegressor", ["X"], ["Y"], domain=ML,
        kernel_type=kernel, kernel_params=[0.3, 0.5, 2.0], n_supports=5, one_class=one_class,
        support_vectors=[float(v) for v in rng.normal(size=15)], coefficients=[float(v) for v in rng.normal(size=5)],
        rho=[0.2],
    )
    model = ml_model(node, [feature_input(3)], [helper.make_tensor_value_info("Y", TensorProto.FLOAT, ["N", 1])])
    feeds = {"X": rng.normal(size=(10, 3)).astype(np.float32)}
    actual, expected = run_both(model, feeds)
    assert_allclose_for_dtype(actual, expected)


def test_svm_classifier_linear_mode(rng):
    """No support vectors (liblinear): scores x @ coefficients.T + rho[0]."""
    node = helper.make_node(
        "SVMClassifier", ["X"], ["Y", "Z"], domain=ML,
        kernel_type="LINEAR", kernel_params=[0.1, 0.0, 1.0], coefficients=[float(v) for v in rng.normal(size=12)], rho=[0.1],
        classlabels_ints=[1, 2, 3],
    )
    model = ml_model(
        node, [feature_input(4)],
        [helper.make_tensor_value_info("Y", TensorProto.INT64, ["N"]), helper.make_tensor_value_info("Z", TensorProto.FLOAT, ["N", 3])],
    )
    actual, expected = run_both(model, {"X": rng.normal(size=(9, 4)).astype(np.float32)})
    assert_allclose_for_dtype(actual, expected)


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
    """DictVectorizer reads a map: the loader names the value and its type."""
    map_type = helper.make_map_type_proto(TensorProto.INT64, helper.make_tensor_type_proto(TensorProto.FLOAT, None))
    node = helper.make_node("DictVectorizer", ["features"], ["Y"], domain=ML, int64_vocabulary=[1, 2])
    graph = helper.make_graph([node], "g", [helper.make_value_info("features", map_type)], [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [1, 2])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid(ML, 1)], ir_version=9)
    with pytest.raises(UnsupportedValueTypeError, match=r"input 'features'.*map\(int64,tensor\(float\)\)") as info:
        onnx_stablehlo.compile(model)
    assert info.value.value_name == "features"


def test_string_class_labels_are_a_typed_error(rng):
    node = helper.make_node(
        "LinearClassifier", ["X"], ["Y", "Z"], domain=ML, coefficients=[1.0, 2.0, 3.0, 4.0], classlabels_strings=["a", "b"],
    )
    model = ml_model(
        node, [feature_input(2)],
        [helper.make_tensor_value_info("Y", TensorProto.STRING, ["N"]), helper.make_tensor_value_info("Z", TensorProto.FLOAT, ["N", 2])],
    )
    with pytest.raises(UnsupportedDtypeError, match="classlabels_strings"):
        onnx_stablehlo.compile(model, input_shapes={"X": [2, 2]})


def test_cli_check_compares_zipmap_outputs(tmp_path, capsys):
    from onnx_stablehlo.cli import main

    path = tmp_path / "zipmap.onnx"
    onnx.save(_zipmap_model(), path)
    assert main(["check", str(path), "--dim", "N=3"]) == 0
    out = capsys.readouterr().out
    assert "output probabilities: float32 [3, 3]" in out and "OK" in out
