"""Typed validation before emitting (issue 15, part B).

Each case is a small model with a bad attribute, input or declared type, the typed error it
must raise and what its message names (node, attribute or input, value, what is allowed).
onnxruntime is the oracle of what is refused: where it refuses a model, so do we; where it
warns and runs (a declared shape that contradicts the computed one), we warn and run with the
computed shape, and the values equal onnxruntime's.
"""

from __future__ import annotations

import warnings

import numpy as np
import onnx
import onnx.numpy_helper
import onnx.parser
import pytest

import onnx_stablehlo
from onnx_stablehlo import errors
from tests.util import ort_run


def _model(text: str, opset: int = 18) -> onnx.ModelProto:
    """A model in ONNX text syntax, not checked (the onnx checker would refuse most of these)."""
    return onnx.parser.parse_model(f'<ir_version: 9, opset_import: ["" : {opset}]>\n{text}')


def _ort_refuses(model: onnx.ModelProto, feeds: dict) -> bool:
    try:
        ort_run(model, feeds)
    except Exception:  # noqa: BLE001 - any refusal
        return True
    return False


def _compile_error(model: onnx.ModelProto, feeds: dict, kind: type[Exception]) -> Exception:
    with pytest.raises(kind) as info:
        onnx_stablehlo.compile(model, check=False).run(feeds)
    message = str(info.value)
    assert "\n" not in message
    assert not isinstance(info.value, errors.LoweringError), message
    return info.value


X23 = {"x": np.arange(6, dtype=np.float32).reshape(2, 3) - 2.5}

# Declared types --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text, value",
    [
        ("g (float[2, 3] x) => (double[2, 3] y) { [relu] y = Relu(x) }", "y"),
        ("g (float[2, 3] x) => (float[2, 3] y) <double[2, 3] t> { [relu] t = Relu(x)\n [neg] y = Neg(t) }", "t"),
    ],
    ids=["graph-output", "value-info"],
)
def test_declared_dtype_that_contradicts_the_op_is_declared_type_error(text, value):
    model = _model(text)
    assert _ort_refuses(model, X23)
    error = _compile_error(model, X23, errors.DeclaredTypeError)
    assert isinstance(error, errors.ShapeError)
    assert error.node_name == "'relu'" and error.value_name == value
    assert error.declared == "double[2, 3]" and error.computed == "float[2, 3]"
    assert f"value '{value}' is declared double[2, 3] but computed float[2, 3]" in str(error)


@pytest.mark.parametrize(
    "text, value, declared",
    [
        ("g (float[2, 3] x) => (float[3, 3] y) { [relu] y = Relu(x) }", "y", "float[3, 3]"),
        ("g (float[2, 3] x) => (float[6] y) { [relu] y = Relu(x) }", "y", "float[6]"),
        ("g (float[2, 3] x) => (float[2, 3] y) <float[5, 3] t> { [relu] t = Relu(x)\n [neg] y = Neg(t) }", "t",
         "float[5, 3]"),
    ],
    ids=["output-dim", "output-rank", "value-info-dim"],
)
def test_declared_shape_that_contradicts_the_op_warns_and_runs_like_onnxruntime(text, value, declared):
    model = _model(text)
    expected = ort_run(model, X23)  # onnxruntime warns and runs with the computed shape
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = onnx_stablehlo.compile(model, check=False).run(X23)
    assert got[0].shape == expected[0].shape == (2, 3)
    np.testing.assert_array_equal(got[0], expected[0])
    found = [w.message for w in caught if isinstance(w.message, errors.DeclaredShapeWarning)]
    assert found, [str(w.message) for w in caught]
    # Attributed to the model, so Python prints no line of this package's source under it.
    assert {w.filename for w in caught if isinstance(w.message, errors.DeclaredShapeWarning)} == {"<onnx model>"}
    assert found[0].value_name == value and found[0].node_name == "'relu'"
    assert f"value '{value}' is declared {declared} but computed float[2, 3]" in str(found[0])


def test_declared_shape_warning_can_be_made_an_error():
    model = _model("g (float[2, 3] x) => (float[3, 3] y) { [relu] y = Relu(x) }")
    with warnings.catch_warnings():
        warnings.simplefilter("error", errors.DeclaredShapeWarning)
        with pytest.raises(errors.OnnxStableHLOError, match=r"'y' is declared float\[3, 3\]"):
            onnx_stablehlo.compile(model, check=False).run(X23)


def test_symbolic_declared_dims_match_any_size():
    model = _model("g (float[2, 3] x) => (float[N, 3] y) <float[M, 3] t> { t = Relu(x)\n y = Neg(t) }")
    with warnings.catch_warnings():
        warnings.simplefilter("error", errors.DeclaredShapeWarning)
        got = onnx_stablehlo.compile(model, check=False).run(X23)
    np.testing.assert_array_equal(got[0], -np.maximum(X23["x"], 0))


# Inputs against the schema ---------------------------------------------------------------------


def test_input_dtype_outside_the_type_constraint_is_input_dtype_error():
    model = _model("g (int32[2, 3] x) => (int32[2, 3] y) { [relu] y = Relu(x) }", opset=13)
    feeds = {"x": np.arange(6, dtype=np.int32).reshape(2, 3)}
    assert _ort_refuses(model, feeds)
    error = _compile_error(model, feeds, errors.InputDtypeError)
    assert isinstance(error, errors.UnsupportedDtypeError) and isinstance(error, errors.InvalidInputError)
    assert error.input_index == 0 and error.input_name == "x"
    assert "input 0 ('x', formal 'X') has dtype INT32 (tensor(int32)); the op allows T in {bfloat16, double, " \
           "float, float16} at opset 13" in str(error)


def test_inputs_of_one_type_variable_with_different_dtypes_is_input_dtype_error():
    model = _model("g (float[2, 3] x, double[2, 3] z) => (float[2, 3] y) { [add] y = Add(x, z) }")
    feeds = {**X23, "z": np.ones((2, 3))}
    assert _ort_refuses(model, feeds)
    error = _compile_error(model, feeds, errors.InputDtypeError)
    assert error.input_index == 1 and error.node_name == "'add'"
    assert "inputs 0 ('x', tensor(float)) and 1 ('z', tensor(double)) must have the same type (T)" in str(error)


def test_required_input_omitted_and_extra_input_are_invalid_input_error():
    omitted = _model('g (float[2, 3] x) => (float[2, 3] y) { [add] y = Add(x, "") }')
    error = _compile_error(omitted, X23, errors.InvalidInputError)
    assert "required input 1 ('B') is omitted" in str(error) and error.input_index == 1
    extra = _model("g (float[2, 3] x) => (float[2, 3] y) { [relu] y = Relu(x, x) }")
    assert _ort_refuses(extra, X23)
    error = _compile_error(extra, X23, errors.InvalidInputError)
    assert "has 2 inputs; the op takes at most 1 (X)" in str(error)


# Attributes ------------------------------------------------------------------------------------


def test_attribute_of_the_wrong_type_is_invalid_attribute_error():
    model = _model("g (float[2, 3] x) => (float[2, 3] y) { [sm] y = Softmax <axis = 1.0> (x) }")
    assert _ort_refuses(model, X23)
    error = _compile_error(model, X23, errors.InvalidAttributeError)
    assert error.attribute == "axis"
    assert "attribute 'axis' is of type FLOAT; the op takes INT" in str(error)


def test_required_attribute_missing_is_invalid_attribute_error():
    model = _model("g (float[2, 3] x) => (int64[2, 3] y) { [cast] y = Cast (x) }")
    error = _compile_error(model, X23, errors.InvalidAttributeError)
    assert isinstance(error, errors.UnsupportedAttributeError)
    assert "required attribute 'to' is missing" in str(error) and error.node_name == "'cast'"


@pytest.mark.parametrize("op, attribute", [("EyeLike", "dtype"), ("Cast", "to")])
def test_element_type_attribute_that_is_no_element_type_is_invalid_attribute_error(op, attribute):
    model = _model(f"g (float[3, 3] x) => (float[3, 3] y) {{ [n] y = {op} <{attribute} = -1> (x) }}")
    feeds = {"x": np.ones((3, 3), np.float32)}
    assert _ort_refuses(model, feeds)
    error = _compile_error(model, feeds, errors.InvalidAttributeError)
    assert error.attribute == attribute and error.value == -1
    assert f"attribute {attribute}=-1 is invalid (allowed: an ONNX element type" in str(error)


def test_axis_out_of_range_names_the_attribute():
    model = _model("g (float[2, 3] x, int64[2] i) => (float[2, 2] y) { [gather] y = Gather <axis = 7> (x, i) }")
    feeds = {**X23, "i": np.array([0, 1], np.int64)}
    assert _ort_refuses(model, feeds)
    error = _compile_error(model, feeds, errors.AttributeShapeError)
    assert isinstance(error, errors.InvalidAttributeError) and isinstance(error, errors.ShapeError)
    assert error.attribute == "axis" and error.value == 7
    assert "attribute axis=7 is invalid (allowed: [-2, 1] for an input of rank 2)" in str(error)


def test_gather_on_a_scalar_is_invalid_input_error():
    model = _model("g (float x, int64[2] i) => (float[2] y) { [gather] y = Gather (x, i) }")
    model.graph.input[0].type.tensor_type.shape.SetInParent()
    feeds = {"x": np.float32(1.5), "i": np.array([0, 0], np.int64)}
    assert _ort_refuses(model, feeds)
    error = _compile_error(model, feeds, errors.InvalidInputError)
    assert "input 0 ('x') is a scalar; Gather's data must have rank >= 1" in str(error)


# Graph structure and shapes -------------------------------------------------------------------


def test_nodes_out_of_topological_order_are_sorted_like_onnxruntime():
    model = _model("g (float[2, 3] x) => (float[2, 3] y) { [neg] y = Neg(t)\n [relu] t = Relu(x) }")
    got = onnx_stablehlo.compile(model, check=False).run(X23)
    np.testing.assert_array_equal(got[0], ort_run(model, X23)[0])


def test_a_cycle_is_invalid_graph_error():
    model = _model("g (float[2, 3] x) => (float[2, 3] y) { [add] t = Add(x, y)\n [neg] y = Neg(t) }")
    assert _ort_refuses(model, X23)
    error = _compile_error(model, X23, errors.InvalidGraphError)
    assert "graph 'g' has a cycle" in str(error)


def test_an_unknown_value_is_invalid_graph_error():
    model = _model("g (float[2, 3] x) => (float[2, 3] y) { [neg] y = Neg(nowhere) }")
    assert _ort_refuses(model, X23)
    error = _compile_error(model, X23, errors.InvalidGraphError)
    assert "input 'nowhere' is not defined before use" in str(error) and error.node_name == "'neg'"


def test_shapes_that_do_not_broadcast_are_a_shape_error_naming_the_inputs():
    model = _model("g (float[6, 4, 5] a, float[3, 4, 5] b) => (bool[6, 4, 5] y) { [eq] y = Equal(a, b) }")
    feeds = {"a": np.zeros((6, 4, 5), np.float32), "b": np.zeros((3, 4, 5), np.float32)}
    assert _ort_refuses(model, feeds)
    error = _compile_error(model, feeds, errors.ShapeError)
    assert error.node_name == "'eq'"
    assert "shapes [[6, 4, 5], [3, 4, 5]] do not broadcast (inputs: 'a' [6, 4, 5], 'b' [3, 4, 5])" in str(error)


# The host-split path (NonMaxSuppression, Compress, Unique with run-time inputs) ------------------


def test_compress_axis_out_of_range_is_typed_before_the_host_split():
    feeds = {"x": np.arange(6, dtype=np.float32).reshape(2, 3), "c": np.array([True, False])}
    model = _model("g (float[2, 3] x, bool[2] c) => (float[N, 3] y) { [compress] y = Compress <axis = 7> (x, c) }")
    assert _ort_refuses(model, feeds)
    error = _compile_error(model, feeds, errors.InvalidAttributeError)
    assert "attribute axis=7 is invalid" in str(error) and error.node_name == "'compress'"


@pytest.mark.parametrize(
    "condition, axis",
    [([[True, False]], 0), ([True, False, True, False, True], 0), ([[True, False], [False, True]], 1),
     ([True, False, True, True, False, False, True, True, True], None)],
    ids=["rank2-axis0", "longer-axis0", "rank2-axis1", "longer-flattened"],
)
@pytest.mark.parametrize("host", [False, True], ids=["constant", "host-split"])
def test_compress_condition_is_flattened_and_cut_like_onnxruntime(condition, axis, host):
    """onnxruntime flattens a condition of any rank and ignores entries past the axis;
    onnx.reference (the host split's evaluator) fails on them, so the split cuts them first.
    A constant condition is lowered to a gather; a run-time one splits the graph at the node."""
    condition = np.array(condition)
    dims = "N, M" if host else "2, 3"
    cond_dims = ", ".join(f"C{i}" for i in range(condition.ndim)) if host else ", ".join(map(str, condition.shape))
    attribute = "" if axis is None else f"<axis = {axis}>"
    model = _model(f"g (float[{dims}] x, bool[{cond_dims}] c) => (float[K] y) "
                   f"{{ [compress] y = Compress {attribute} (x, c) }}")
    model.graph.output[0].type.tensor_type.ClearField("shape")
    feeds = {"x": np.arange(6, dtype=np.float32).reshape(2, 3), "c": condition}
    if not host:
        del model.graph.input[1]
        model.graph.initializer.append(onnx.numpy_helper.from_array(condition, "c"))
        del feeds["c"]
    expected = ort_run(model, feeds)
    got = onnx_stablehlo.compile(model, check=False).run(feeds)
    np.testing.assert_array_equal(got[0], expected[0])


def test_unique_axis_out_of_range_is_invalid_attribute_error_not_execution_error():
    model = _model("g (float[2, 3] x) => (float[N, M] y) { [unique] y = Unique <axis = 2147483648> (x) }")
    assert _ort_refuses(model, X23)
    error = _compile_error(model, X23, errors.InvalidAttributeError)
    assert error.attribute == "axis" and "attribute axis=2147483648 is invalid" in str(error)


def test_non_max_suppression_bad_shapes_are_typed_before_the_host_split():
    text = ("g (float[1, 3, 5] boxes, float[1, 1, 3] scores) => (int64[N, 3] y) "
            "{{ [nms] y = NonMaxSuppression <center_point_box = {cpb}> (boxes, scores) }}")
    feeds = {"boxes": np.zeros((1, 3, 5), np.float32), "scores": np.zeros((1, 1, 3), np.float32)}
    model = _model(text.format(cpb=0))
    assert _ort_refuses(model, feeds)
    error = _compile_error(model, feeds, errors.ShapeError)
    assert "boxes must have shape [batch, boxes, 4], got [1, 3, 5]" in str(error) and error.node_name == "'nms'"
    box4 = text.replace("[1, 3, 5]", "[1, 3, 4]").format(cpb=2)
    feeds4 = {**feeds, "boxes": np.zeros((1, 3, 4), np.float32)}
    error = _compile_error(_model(box4), feeds4, errors.UnsupportedAttributeError)
    assert "center_point_box=2" in str(error)


@pytest.mark.parametrize(
    "attributes, message",
    [
        ("kernel_shape = [0, 2]", "attribute kernel_shape=[0, 2] is invalid (allowed: positive integers)"),
        ("kernel_shape = [2]", "attribute kernel_shape=[2] is invalid (allowed: 2 entries for an input of rank 4"),
        ("kernel_shape = [2, 2], strides = [0, 1]", "attribute strides=[0, 1] is invalid (allowed: positive"),
        ("kernel_shape = [2, 2], dilations = [1, -1]", "attribute dilations=[1, -1] is invalid (allowed: positive"),
        ("kernel_shape = [2, 2], pads = [-1, 0, 0, 0]",
         "attribute pads=[-1, 0, 0, 0] is invalid (allowed: non-negative"),
        ("kernel_shape = [2, 2], pads = [1, 1]", "attribute pads=[1, 1] is invalid (allowed: 4 entries"),
    ],
    ids=["kernel-zero", "kernel-length", "stride-zero", "dilation-negative", "pads-negative", "pads-length"],
)
def test_window_attributes_of_pools_are_checked_like_onnxruntime(attributes, message):
    model = _model(f"g (float[1, 2, 6, 6] x) => (float[1, 2, 5, 5] y) {{ [pool] y = MaxPool <{attributes}> (x) }}")
    feeds = {"x": np.ones((1, 2, 6, 6), np.float32)}
    assert _ort_refuses(model, feeds)
    error = _compile_error(model, feeds, errors.InvalidAttributeError)
    assert message in str(error) and error.node_name == "'pool'"


@pytest.mark.parametrize(
    "op, attributes", [("Conv", "strides = [0, 1]"), ("ConvTranspose", "output_padding = [-1, 0]")]
)
def test_window_attributes_of_convolutions_are_checked_like_onnxruntime(op, attributes):
    model = _model(f"g (float[1, 2, 6, 6] x, float[2, 2, 3, 3] w) => (float[1, 2, 4, 4] y) "
                   f"{{ [conv] y = {op} <{attributes}> (x, w) }}")
    feeds = {"x": np.ones((1, 2, 6, 6), np.float32), "w": np.ones((2, 2, 3, 3), np.float32)}
    assert _ort_refuses(model, feeds)
    error = _compile_error(model, feeds, errors.InvalidAttributeError)
    assert error.attribute == attributes.split(" ")[0]


def test_scale_that_does_not_broadcast_to_x_is_a_shape_error():
    model = _model("g (float[2, 3, 7] x, float[3, 5] s) => (float[2, 3, 7] y) "
                   "{ [ln] y = LayerNormalization <axis = -2> (x, s) }", opset=18)
    feeds = {"x": np.ones((2, 3, 7), np.float32), "s": np.ones((3, 5), np.float32)}
    assert _ort_refuses(model, feeds)
    error = _compile_error(model, feeds, errors.ShapeError)
    assert "a value of shape [3, 5] does not broadcast to [2, 3, 7]" in str(error) and error.node_name == "'ln'"


def test_gather_elements_indices_larger_than_data_are_a_shape_error():
    model = _model("g (float[2, 3] x, int64[3, 1] i) => (float[3, 1] y) { [ge] y = GatherElements <axis = 1> (x, i) }")
    feeds = {**X23, "i": np.zeros((3, 1), np.int64)}
    assert _ort_refuses(model, feeds)
    error = _compile_error(model, feeds, errors.ShapeError)
    assert "indices of shape [3, 1] exceed data in dim 0 (data [2, 3], axis 1)" in str(error)


def test_gather_from_an_empty_axis_is_a_shape_error():
    model = _model("g (float[3, 0] x, int64[1, 2] i) => (float[3, 1, 2] y) { [gather] y = Gather <axis = 1> (x, i) }")
    feeds = {"x": np.zeros((3, 0), np.float32), "i": np.array([[0, 0]], np.int64)}
    assert _ort_refuses(model, feeds)
    error = _compile_error(model, feeds, errors.ShapeError)
    assert "indices of shape [1, 2] index axis 1 of data [3, 0], which is empty" in str(error)
