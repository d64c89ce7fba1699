"""Parity of the ai.onnx.ml linear models (frontend/lowering/ml_linear.py: LinearClassifier,
LinearRegressor, SVMClassifier, SVMRegressor) against onnxruntime.

Models are built with ``onnx.helper`` (tests/frontend/ml_util.py). Real converted models
(skl2onnx, onnxmltools) are in the zoo (``tools/build_sklearn.py``, ``tests/models/test_zoo.py``).
"""

from __future__ import annotations

import numpy as np
import onnx_ir
import pytest
from onnx import TensorProto, helper

import onnx_stablehlo
from onnx_stablehlo.errors import UnsupportedAttributeError, UnsupportedDtypeError
from tests.frontend.ml_util import ML, POST_TRANSFORMS, assert_scores_close, feature_input, ml_model, run_both
from tests.util import assert_allclose_for_dtype

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


def test_string_class_labels_outside_the_loader_are_a_typed_error(rng):
    """The loader interns string labels (tests/frontend/test_ml_strings.py); an onnx-ir model
    built without it still reaches the rule with classlabels_strings, which names them."""
    node = helper.make_node(
        "LinearClassifier", ["X"], ["Y", "Z"], domain=ML, coefficients=[1.0, 2.0, 3.0, 4.0], classlabels_strings=["a", "b"],
    )
    model = ml_model(
        node, [feature_input(2)],
        [helper.make_tensor_value_info("Y", TensorProto.STRING, ["N"]), helper.make_tensor_value_info("Z", TensorProto.FLOAT, ["N", 2])],
    )
    with pytest.raises(UnsupportedDtypeError, match="classlabels_strings"):
        onnx_stablehlo.compile(onnx_ir.serde.deserialize_model(model), input_shapes={"X": [2, 2]})


@pytest.mark.parametrize(
    "kernel,probabilities",
    [("LINEAR", False), ("POLY", False), ("RBF", False), ("SIGMOID", False), ("POLY", True)],
    # Platt scaling and coupling follow the decision values whatever the kernel (and compile
    # for ~3 s each): one kernel with probabilities.
    ids=["LINEAR-scores", "POLY-scores", "RBF-scores", "SIGMOID-scores", "POLY-platt"],
)
def test_svm_classifier_support_vectors_within_1e_5_of_onnxruntime(kernel, probabilities, rng):
    """One-versus-one over 3 classes (4 + 3 + 5 support vectors, 6 features of iris-like
    magnitude): decision values and Platt probabilities within 1e-5 of onnxruntime, labels
    equal. POLY and LINEAR follow its float32 SGEMM rounding (computed in float64 instead, the
    poly decision values here, up to ~70, differ from onnxruntime's by 2.3e-5)."""
    per_class = [4, 3, 5]
    vectors = rng.uniform(0.0, 8.0, size=(sum(per_class), 6)).astype(np.float32)
    params = {"POLY": [0.06, 0.5, 3.0], "SIGMOID": [0.01, -0.2, 0.0], "RBF": [0.05, 0.0, 0.0], "LINEAR": [0.0, 0.0, 0.0]}[kernel]
    scale = 0.05 if kernel == "POLY" else 0.1
    attrs = dict(
        kernel_type=kernel, kernel_params=params, vectors_per_class=per_class, classlabels_ints=[4, 5, 6],
        support_vectors=[float(v) for v in vectors.ravel()],
        coefficients=[float(v) for v in scale * rng.normal(size=2 * sum(per_class))], rho=[0.1, -0.2, 0.3],
    )
    if probabilities:
        attrs.update(prob_a=[-1.8, -2.1, -1.6], prob_b=[-1.0, -0.9, -0.3])
    node = helper.make_node("SVMClassifier", ["X"], ["Y", "Z"], domain=ML, **attrs)
    model = ml_model(
        node, [feature_input(6)],
        [helper.make_tensor_value_info("Y", TensorProto.INT64, ["N"]), helper.make_tensor_value_info("Z", TensorProto.FLOAT, ["N", 3])],
    )
    x = rng.uniform(0.0, 8.0, size=(40, 6)).astype(np.float32)
    (label, scores), (want_label, want_scores) = run_both(model, {"X": x})
    np.testing.assert_array_equal(label, want_label)
    np.testing.assert_allclose(scores, want_scores, rtol=0, atol=1e-5)
