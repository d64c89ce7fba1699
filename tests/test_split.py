"""Data-dependent output sizes: the graph is split at NonZero/Unique/Compress/NMS (runtime/split.py)."""

from __future__ import annotations

import numpy as np
import pytest

import onnx_stablehlo
from onnx_stablehlo import errors
from onnx_stablehlo.runtime.split import SplitModel
from tests.util import assert_allclose_for_dtype, ort_run, parse

# (a) NonZero in the middle: a prefix computes the mask, the suffix transposes and gathers.
NONZERO_MIDDLE = """<ir_version: 9, opset_import: ["" : 18]>
g (float[4, 5] x) => (int64[?, 2] t, float[?] v, float total) {
  two = Constant <value = float {2.0}> ()
  one = Constant <value = float {1.0}> ()
  five = Constant <value = int64 {5}> ()
  zero_i = Constant <value = int64 {0}> ()
  one_i = Constant <value = int64 {1}> ()
  flat = Constant <value = int64[1] {-1}> ()
  y = Mul(x, two)
  m = Greater(y, one)
  idx = NonZero(m)
  t = Transpose <perm = [1, 0]> (idx)
  row = Gather <axis = 0> (idx, zero_i)
  col = Gather <axis = 0> (idx, one_i)
  row5 = Mul(row, five)
  pos = Add(row5, col)
  yf = Reshape(y, flat)
  picked = Gather(yf, pos)
  v = Add(picked, one)
  r = Relu(x)
  total = ReduceSum <keepdims = 0> (r)
}"""

# (b) Unique on float data, then arithmetic on its outputs.
UNIQUE_FLOAT = """<ir_version: 9, opset_import: ["" : 18]>
g (float[12] x) => (float[?] weighted, float[12] rebuilt) {
  half = Constant <value = float {0.5}> ()
  xr = Mul(x, half)
  y, first, inverse, counts = Unique <sorted = 1> (xr)
  cf = Cast <to = 1> (counts)
  weighted = Mul(y, cf)
  back = Gather(y, inverse)
  rebuilt = Add(back, half)
}"""

# (c) NonMaxSuppression after box decoding; the suffix gathers the kept boxes and scales them.
NMS_DECODE = """<ir_version: 9, opset_import: ["" : 18]>
g (float[1, 6, 4] deltas, float[1, 1, 6] logits) => (int64[?, 3] selected, float[?, 4] kept, float[?] kept_scores)
  <float[1, 6, 4] anchors = {0, 0, 1, 1,  0, 0, 1, 1.05,  2, 2, 3, 3,  4, 4, 5, 5,  6, 6, 7, 7,  8, 8, 9, 9},
   float[4] image_scale = {10, 10, 20, 20}> {
  step = Constant <value = float {0.1}> ()
  max_boxes = Constant <value = int64[1] {6}> ()
  iou = Constant <value = float[1] {0.5}> ()
  min_score = Constant <value = float[1] {0.3}> ()
  two = Constant <value = int64 {2}> ()
  axis0 = Constant <value = int64[1] {0}> ()
  flat = Constant <value = int64[1] {-1}> ()
  d = Mul(deltas, step)
  boxes = Add(anchors, d)
  scores = Sigmoid(logits)
  selected = NonMaxSuppression(boxes, scores, max_boxes, iou, min_score)
  box_index = Gather <axis = 1> (selected, two)
  boxes0 = Squeeze(boxes, axis0)
  picked = Gather <axis = 0> (boxes0, box_index)
  kept = Mul(picked, image_scale)
  scores_flat = Reshape(scores, flat)
  kept_scores = Gather(scores_flat, box_index)
}"""

# (d) two data-dependent nodes in sequence: NonZero on a graph input (empty prefix), then Unique.
TWO_SPLITS = """<ir_version: 9, opset_import: ["" : 18]>
g (float[3, 4] x) => (float[?] y, float[?] z) {
  two = Constant <value = float {2.0}> ()
  axes = Constant <value = int64[1] {0}> ()
  idx = NonZero(x)
  f = Cast <to = 1> (idx)
  s = ReduceSum <keepdims = 0> (f, axes)
  y, first, inverse, counts = Unique(s)
  z = Mul(y, two)
}"""

# (e) Compress with a run-time condition; a shape computed before the cut is used after it.
COMPRESS = """<ir_version: 9, opset_import: ["" : 18]>
g (float[2, 6] x, float[2, 6] w) => (float[?] kept, float[3, 4] w2) {
  zero = Constant <value = float {0.0}> ()
  three = Constant <value = int64[1] {3}> ()
  minus = Constant <value = int64[1] {-1}> ()
  shape = Shape(x)
  n = ReduceProd <keepdims = 1> (shape)
  target = Div(n, three)
  new_shape = Concat <axis = 0> (three, target)
  flat = Reshape(x, minus)
  cond = Greater(flat, zero)
  kept = Compress <axis = 0> (flat, cond)
  w2 = Reshape(w, new_shape)
}"""


def _check(compiled, model, feeds):
    got = compiled.run(feeds)
    assert_allclose_for_dtype(got, ort_run(model, feeds))
    return got


def test_nonzero_in_the_middle_of_a_graph(rng):
    model = parse(NONZERO_MIDDLE)
    compiled = onnx_stablehlo.compile(model)
    split = compiled._split
    assert isinstance(split, SplitModel)  # static shapes and a float input: split at construction
    assert split.host_op_type == "NonZero" and split.prefix is not None
    assert compiled.compile_count == 1  # the prefix
    sizes = set()
    for _ in range(3):
        x = rng.standard_normal((4, 5)).astype(np.float32)
        sizes.add(_check(compiled, model, {"x": x})[0].shape[0])
    assert compiled.compile_count == 1 + len(sizes)
    text = compiled.mlir
    assert "// ---- host: NonZero node #8 producing 'idx'" in text
    assert text.count("func.func public @main") == 2


def test_unique_on_float_data_followed_by_a_computation(rng):
    model = parse(UNIQUE_FLOAT)
    compiled = onnx_stablehlo.compile(model)
    values = rng.integers(0, 5, 12).astype(np.float32)
    _check(compiled, model, {"x": values})
    _check(compiled, model, {"x": np.arange(12, dtype=np.float32)})
    assert compiled._split.host_op_type == "Unique"


def test_nms_after_box_decoding_compiles_the_suffix_once_per_size():
    model = parse(NMS_DECODE)
    compiled = onnx_stablehlo.compile(model)
    assert compiled.compile_count == 1  # the box-decoding prefix, at construction
    deltas = np.zeros((1, 6, 4), np.float32)
    few = {"deltas": deltas, "logits": np.array([[[2, 1, 2, -5, -5, 2]]], np.float32)}
    many = {"deltas": deltas + 0.01, "logits": np.ones((1, 1, 6), np.float32)}
    assert len(_check(compiled, model, few)[0]) == 3  # box 1 overlaps box 0; two score too low
    assert compiled.compile_count == 2
    assert len(_check(compiled, model, many)[0]) == 5
    assert compiled.compile_count == 3
    _check(compiled, model, few)
    _check(compiled, model, many)
    assert compiled.compile_count == 3  # both sizes came from the suffix's cache
    split = compiled._split
    assert split.compile_count == 3 and split.prefix.compile_count == 1 and split.suffix.compile_count == 2
    assert "host: NonMaxSuppression" in compiled.mlir


def test_two_data_dependent_nodes_in_sequence(rng):
    model = parse(TWO_SPLITS)
    compiled = onnx_stablehlo.compile(model)
    assert compiled._split.prefix is None  # NonZero reads the graph input itself
    for _ in range(3):
        x = (rng.random((3, 4)) > 0.5).astype(np.float32)
        _check(compiled, model, {"x": x})
    inner = compiled._split.suffix._split  # the suffix holds Unique: it is split in turn
    assert isinstance(inner, SplitModel) and inner.host_op_type == "Unique"
    assert inner.prefix is not None and inner.suffix is not None
    assert compiled.compile_count == compiled._split.compile_count > 0


def test_compress_with_a_shape_computed_before_the_cut(rng):
    model = parse(COMPRESS)
    compiled = onnx_stablehlo.compile(model)
    for _ in range(2):
        feeds = {n: rng.standard_normal((2, 6)).astype(np.float32) for n in ("x", "w")}
        _check(compiled, model, feeds)
    assert compiled._split.host_op_type == "Compress"


def test_host_node_at_the_end_leaves_no_suffix(rng):
    model = parse("""<ir_version: 9, opset_import: ["" : 18]>
g (float[3, 3] x) => (int64[2, ?] idx) {
  r = Relu(x)
  idx = NonZero(r)
}""")
    compiled = onnx_stablehlo.compile(model)
    _check(compiled, model, {"x": rng.standard_normal((3, 3)).astype(np.float32)})
    assert compiled._split.suffix is None and "suffix: empty" in compiled.mlir


def test_small_integer_input_is_value_specialized_before_splitting():
    model = parse("""<ir_version: 9, opset_import: ["" : 18]>
g (int64[2, 3] x) => (int64[?, 2] t) {
  idx = NonZero(x)
  t = Transpose <perm = [1, 0]> (idx)
}""")
    compiled = onnx_stablehlo.compile(model)
    feeds = {"x": np.array([[0, 1, 2], [3, 0, 0]], np.int64)}
    _check(compiled, model, feeds)
    assert compiled._split is None and compiled.compile_count == 1  # one module, NonZero folded


def test_symbolic_dims_split_at_run_time(rng):
    model = parse("""<ir_version: 9, opset_import: ["" : 18]>
g (float[n] x) => (float[?] y) {
  zero = Constant <value = float {0.0}> ()
  c = Greater(x, zero)
  y = Compress(x, c)
}""")
    compiled = onnx_stablehlo.compile(model)
    for n in (5, 9, 5):
        _check(compiled, model, {"x": rng.standard_normal(n).astype(np.float32)})
    assert isinstance(compiled._split, SplitModel)


def test_feed_errors_still_name_the_input():
    compiled = onnx_stablehlo.compile(parse(NMS_DECODE))
    with pytest.raises(errors.FeedError, match="input 'logits': expected dtype float32"):
        compiled.run({"deltas": np.zeros((1, 6, 4), np.float32), "logits": np.zeros((1, 1, 6), np.float64)})


def test_data_dependent_node_inside_a_subgraph_still_raises(rng):
    model = parse("""<ir_version: 9, opset_import: ["" : 18]>
g (bool c, float[4] x) => (int64[1, ?] y) {
  y = If (c) <then_branch = t () => (int64[1, ?] a) { a = NonZero(x) },
              else_branch = e () => (int64[1, ?] b) { b = NonZero(x) }>
}""")
    compiled = onnx_stablehlo.compile(model)
    with pytest.raises(errors.DataDependentShapeError):
        compiled.run({"c": np.array(True), "x": rng.standard_normal(4).astype(np.float32)})


def test_host_output_needed_as_a_constant_is_value_specialized_in_the_suffix():
    model = parse("""<ir_version: 9, opset_import: ["" : 18]>
g (float[6] x, float[8] z) => (float[?, ?] r) {
  y, first, inverse, counts = Unique(x)
  r = Reshape(z, counts)
}""")
    compiled = onnx_stablehlo.compile(model)
    z = np.arange(8, dtype=np.float32)
    for values in ([2, 2, 3, 3, 3, 3], [1, 1, 1, 1, 5, 5], [2, 2, 3, 3, 3, 3]):
        _check(compiled, model, {"x": np.array(values, np.float32), "z": z})
    assert compiled.compile_count == 2  # one suffix per value of counts


def test_inline_weights_and_lru_bound_in_the_parts():
    model = parse(NMS_DECODE)
    compiled = onnx_stablehlo.compile(model, weights="inline", cache_size=1)
    deltas = np.zeros((1, 6, 4), np.float32)
    few = {"deltas": deltas, "logits": np.array([[[2, 1, 2, -5, -5, 2]]], np.float32)}
    many = {"deltas": deltas, "logits": np.ones((1, 1, 6), np.float32)}
    for feeds in (few, many, few):
        _check(compiled, model, feeds)
    assert compiled.compile_count == 4  # prefix + 3 suffixes: a cache of one evicted the first
    split = compiled._split
    assert split.prefix.lowered.parameter_names == [] and split.suffix.lowered.parameter_names == []
    args_split = onnx_stablehlo.compile(model)._split  # weights="args": anchors is a prefix argument
    assert args_split.prefix.lowered.parameter_names == ["anchors"]
