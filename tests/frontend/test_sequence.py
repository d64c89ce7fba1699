"""Parity of sequence and optional ops (frontend/lowering/sequence.py) against onnxruntime.

Symbolic-dim tests (``check_symbolic``) compile one model with its ``dim_param`` dims kept as
``?``, keep that artifact through runs at two shapes, and compare each run with the oracle.
"""

from __future__ import annotations

import numpy as np
import pytest

import onnx_stablehlo
from tests.util import assert_allclose_for_dtype, check_symbolic, oracle_run, ort_run, parse, standard_normal


def _compare(model, feeds):
    actual = onnx_stablehlo.compile(model).run(feeds)
    expected = ort_run(model, feeds)
    assert len(actual) == len(expected)
    for got, want in zip(actual, expected):
        if isinstance(want, list):
            assert isinstance(got, list) and len(got) == len(want)
            assert_allclose_for_dtype(got, want)
        else:
            assert_allclose_for_dtype([got], [want])


def test_construct_insert_at_erase_length_concat(rng):
    model = parse("""<ir_version: 9, opset_import: ["" : 17]>
g (float[2, 3] a, float[2, 3] b, float[2, 3] c) => (float[2, 9] cat, float[2, 3] second, int64 n, float[3, 2, 3] stacked) {
  s = SequenceConstruct(a, b)
  zero = Constant <value = int64 {0}> ()
  one = Constant <value = int64 {1}> ()
  s2 = SequenceInsert(s, c, zero)
  cat = ConcatFromSequence <axis = 1> (s2)
  second = SequenceAt(s2, one)
  s3 = SequenceErase(s2, zero)
  n = SequenceLength(s3)
  stacked = ConcatFromSequence <axis = 0, new_axis = 1> (s2)
}""")
    feeds = {k: rng.standard_normal((2, 3)).astype(np.float32) for k in "abc"}
    _compare(model, feeds)


@pytest.mark.parametrize("keepdims", [0, 1])
def test_split_to_sequence_output_is_a_list(keepdims, rng):
    model = parse(f"""<ir_version: 9, opset_import: ["" : 17]>
g (float[3, 4] x) => (seq(float) parts) {{
  parts = SplitToSequence <axis = 0, keepdims = {keepdims}> (x)
}}""")
    _compare(model, {"x": rng.standard_normal((3, 4)).astype(np.float32)})


def test_sequence_input_is_fed_as_a_list_and_mapped(rng):
    model = parse("""<ir_version: 9, opset_import: ["" : 17]>
g (seq(float[N]) xs, float[N] y) => (seq(float[N]) out) {
  out = SequenceMap <body = body (float[N] x, float[N] z) => (float[N] w) { w = Add(x, z) }> (xs, y)
}""")
    feeds = {"xs": [rng.standard_normal(4).astype(np.float32) for _ in range(3)],
             "y": rng.standard_normal(4).astype(np.float32)}
    compiled = onnx_stablehlo.compile(model)
    result = compiled.run(feeds)[0]
    assert isinstance(result, list) and len(result) == 3
    for got, x in zip(result, feeds["xs"]):
        np.testing.assert_allclose(got, x + feeds["y"], rtol=1e-6)
    assert compiled.lowered.input_layouts[0].arg_count == 3


def test_optional_has_and_get_element(rng):
    model = parse("""<ir_version: 9, opset_import: ["" : 18]>
g (float[2] x) => (bool has, float[2] y) {
  o = Optional(x)
  has = OptionalHasElement(o)
  y = OptionalGetElement(o)
}""")
    _compare(model, {"x": rng.standard_normal(2).astype(np.float32)})


def test_sequence_feed_must_be_a_list():
    model = parse("""<ir_version: 9, opset_import: ["" : 17]>
g (seq(float[2]) xs) => (int64 n) {
  n = SequenceLength(xs)
}""")
    compiled = onnx_stablehlo.compile(model)
    with pytest.raises(onnx_stablehlo.errors.FeedError, match="feed a list of arrays"):
        compiled.run({"xs": np.zeros(2, np.float32)})
    assert int(compiled.run({"xs": [np.zeros(2, np.float32)] * 4})[0]) == 4


# SplitToSequence, ConcatFromSequence -----------------------------------------------------------


@pytest.mark.parametrize("new_axis", [0, 1])
def test_split_to_sequence_static_axis_symbolic_rest(new_axis, rng):
    check_symbolic(
        18,
        f"""g (float[N, 6] x) => (float[M, K] y) {{
  sizes = Constant <value = int64[3] {{1, 2, 3}}> ()
  seq = SplitToSequence <axis = 1> (x, sizes)
  y = ConcatFromSequence <axis = 1, new_axis = {new_axis}> (seq)
}}""" if not new_axis else f"""g (float[N, 6] x) => (float[M, K, J] y) {{
  seq = SplitToSequence <axis = 1, keepdims = 1> (x)
  y = ConcatFromSequence <axis = 0, new_axis = {new_axis}> (seq)
}}""",
        lambda n: {"x": standard_normal(rng, n, 6)},
        [(2,), (5,)],
    )


def test_split_to_sequence_symbolic_axis_without_split_falls_back(rng):
    model = parse("""<ir_version: 9, opset_import: ["" : 18]>
g (float[N, C] x) => (float[M, K] y) {
  seq = SplitToSequence <axis = 1, keepdims = 0> (x)
  y = ConcatFromSequence <axis = 0> (seq)
}""")
    compiled = onnx_stablehlo.compile(model)
    assert compiled.artifact is None and "the sequence length depends on the size" in compiled.dynamic_error
    feeds = {"x": standard_normal(rng, 2, 3)}
    assert_allclose_for_dtype(compiled.run(feeds), oracle_run(model, feeds))
