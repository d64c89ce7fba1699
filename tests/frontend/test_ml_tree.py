"""Parity of the ai.onnx.ml tree ensembles (frontend/lowering/ml_tree.py: TreeEnsemble,
TreeEnsembleClassifier, TreeEnsembleRegressor) against onnxruntime.

Random trees are seeded and built with ``onnx.helper`` (list attributes of hundreds of values do
not read well in ONNX text syntax). Real converted models are in the zoo (``tools/build_sklearn.py``).
"""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper

import onnx_stablehlo
from tests.frontend.ml_util import ML, POST_TRANSFORMS, assert_scores_close, feature_input, ml_model, run_both
from tests.util import assert_allclose_for_dtype, reference_run

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


@pytest.fixture(params=["bitvectors", "walk"])
def strategy(request, monkeypatch):
    """Both tree evaluations: QuickScorer bitvectors (small trees) and the step-by-step walk."""
    from onnx_stablehlo.frontend.lowering import ml_tree

    monkeypatch.setattr(ml_tree, "_BITVECTOR_SLOTS_PER_STEP", 10**6 if request.param == "bitvectors" else 0)
    monkeypatch.setattr(ml_tree, "_BITVECTOR_MIN_DEPTH", 0)
    return request.param


@pytest.mark.parametrize(
    ("aggregate", "post"),
    [("SUM", "NONE"), ("AVERAGE", "LOGISTIC"), ("MIN", "SOFTMAX"), ("MAX", "SOFTMAX_ZERO")],
)
def test_tree_ensemble_regressor_every_mode_missing_values(aggregate, post, strategy, rng):
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


def _regressor(nodes, leaves, features: int):
    node = helper.make_node(
        "TreeEnsembleRegressor", ["X"], ["Y"], domain=ML, n_targets=1,
        nodes_treeids=nodes["treeids"], nodes_nodeids=nodes["nodeids"], nodes_featureids=nodes["featureids"],
        nodes_modes=nodes["modes"], nodes_values=nodes["values"], nodes_truenodeids=nodes["truenodeids"],
        nodes_falsenodeids=nodes["falsenodeids"], nodes_missing_value_tracks_true=nodes["missing"],
        target_treeids=[t for t, _ in leaves], target_nodeids=[n for _, n in leaves], target_ids=[0] * len(leaves),
        target_weights=[(k % 16 - 8) / 8 for k in range(len(leaves))],  # sums exact in any order
    )
    return ml_model(node, [feature_input(features)], [helper.make_tensor_value_info("Y", TensorProto.FLOAT, ["N", 1])])


def test_small_trees_are_bitvectors_without_a_gather_per_tree_or_step(rng, monkeypatch):
    """200 trees of depth 3 as bitvectors (the depth rule off): every test at once, one AND per
    slot; three gathers whatever the number of trees or the depth (feature values, each tree's
    reached leaf, the leaf values)."""
    from onnx_stablehlo.frontend.lowering import ml_tree

    monkeypatch.setattr(ml_tree, "_BITVECTOR_MIN_DEPTH", 0)
    nodes, leaves = _random_trees(rng, n_trees=200, depth=3, features=4, modes=["BRANCH_LEQ"], thresholds=np.array([0.0]))
    model = _regressor(nodes, leaves, 4)
    text = onnx_stablehlo.lower(model).text
    assert text.count("#stablehlo.gather<") == 3
    assert "stablehlo.count_leading_zeros" in text
    x = rng.normal(size=(7, 4)).astype(np.float32)
    actual, expected = run_both(model, {"X": x})
    assert_allclose_for_dtype(actual, expected)


def test_chain_trees_of_over_64_leaves_use_several_bitvector_words(rng):
    """Trees of 99 branch nodes in a chain (depth 99, 100 leaves: two 64-bit words per slot),
    the chain going on the true side at some nodes and the false side at others."""
    from onnx_stablehlo.frontend.lowering import ml_tree

    chain = 99
    nodes = {k: [] for k in ("treeids", "nodeids", "featureids", "modes", "values", "truenodeids", "falsenodeids", "missing")}
    leaves = []
    for tree in range(3):
        sides = rng.integers(2, size=chain)
        for k in range(chain):  # branch node k is node id 2k; its leaf child is 2k + 1
            nxt = 2 * k + 2  # the next branch node, or the last leaf
            true_id, false_id = (nxt, 2 * k + 1) if sides[k] else (2 * k + 1, nxt)
            for key, value in (("treeids", tree), ("nodeids", 2 * k), ("featureids", int(rng.integers(3))),
                               ("modes", str(rng.choice(MODES[:4]))), ("values", float(rng.normal())),
                               ("truenodeids", true_id), ("falsenodeids", false_id), ("missing", int(rng.integers(2)))):
                nodes[key].append(value)
        for leaf in [2 * k + 1 for k in range(chain)] + [2 * chain]:
            for key, value in (("treeids", tree), ("nodeids", leaf), ("featureids", 0), ("modes", "LEAF"), ("values", 0.0),
                               ("truenodeids", 0), ("falsenodeids", 0), ("missing", 0)):
                nodes[key].append(value)
            leaves.append((tree, leaf))
    model = _regressor(nodes, leaves, 3)
    text = onnx_stablehlo.lower(model).text
    assert "stablehlo.count_leading_zeros" in text and "tensor<?x99x3x2xui64>" in text
    assert ml_tree._BITVECTOR_SLOTS_PER_STEP * chain >= 2 * chain  # the layout rule admits it
    x = rng.normal(size=(64, 3)).astype(np.float32) * 1.5
    x[rng.random(x.shape) < 0.1] = np.nan
    actual, expected = run_both(model, {"X": x})
    assert_allclose_for_dtype(actual, expected)


def test_deep_complete_trees_walk_with_no_loop_per_tree(rng):
    """Complete trees of depth 7 (127 branch nodes, 128 leaves each) are too wide for
    bitvectors: 7 walk steps of 4 gathers (node links, feature values, thresholds, missing-value
    tracks), then the leaf values, whatever the number of trees."""
    nodes, leaves = _random_trees(rng, n_trees=20, depth=7, features=4, modes=["BRANCH_LEQ"], thresholds=np.array([0.0]))
    model = _regressor(nodes, leaves, 4)
    text = onnx_stablehlo.lower(model).text
    assert text.count("#stablehlo.gather<") == 7 * 4 + 1
    assert "count_leading_zeros" not in text
    x = rng.normal(size=(9, 4)).astype(np.float32)
    actual, expected = run_both(model, {"X": x})
    assert_allclose_for_dtype(actual, expected)


def test_tree_walk_has_no_loop_per_tree(rng, monkeypatch):
    """200 trees of depth 3 walked (bitvectors off) emit 3 walk steps, not 200: the gather
    count does not grow with trees."""
    from onnx_stablehlo.frontend.lowering import ml_tree

    monkeypatch.setattr(ml_tree, "_BITVECTOR_SLOTS_PER_STEP", 0)
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
