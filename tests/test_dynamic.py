"""Symbolic dims: one artifact with '?' dims, refined per call; bindings checked across inputs."""

from __future__ import annotations

import numpy as np
import pytest

import onnx_stablehlo
from onnx_stablehlo import errors
from tests.util import assert_allclose_for_dtype, ort_run, parse

ATTENTION_LIKE = """<ir_version: 9, opset_import: ["" : 18]>
g (float[batch, seq, 8] x, float[8, 8] w, int64[batch, seq] mask) => (float[batch, seq, 2, 4] y, float[batch, seq, 8] p) {
  zero = Constant <value = int64[1] {0}> ()
  two = Constant <value = int64[1] {2}> ()
  tail = Constant <value = int64[2] {2, 4}> ()
  h = MatMul(x, w)
  m = Cast <to = 1> (mask)
  mu = Unsqueeze(m, two)
  hm = Mul(h, mu)
  p = Softmax <axis = -1> (hm)
  s = Shape(x)
  bs = Slice(s, zero, two)
  t = Concat <axis = 0> (bs, tail)
  y = Reshape(p, t)
}"""


def _feeds(rng, batch, seq):
    return {
        "x": rng.standard_normal((batch, seq, 8)).astype(np.float32),
        "w": rng.standard_normal((8, 8)).astype(np.float32),
        "mask": rng.integers(0, 2, (batch, seq)).astype(np.int64),
    }


def test_one_artifact_serves_every_shape(rng):
    model = parse(ATTENTION_LIKE)
    compiled = onnx_stablehlo.compile(model)
    assert compiled.artifact is not None, compiled.dynamic_error
    assert "tensor<?x?x8xf32>" in compiled.mlir
    assert "stablehlo.get_dimension_size" in compiled.mlir
    for batch, seq in [(1, 7), (2, 16), (3, 1), (2, 16)]:
        feeds = _feeds(rng, batch, seq)
        assert_allclose_for_dtype(compiled.run(feeds), ort_run(model, feeds))
    assert compiled.compile_count == 3  # (2, 16) came from the cache
    assert "tensor<2x16x8xf32>" in compiled.lowered.text  # the refined module is static


def test_mismatched_binding_names_symbol_inputs_and_sizes(rng):
    compiled = onnx_stablehlo.compile(parse(ATTENTION_LIKE))
    feeds = _feeds(rng, 2, 5)
    feeds["mask"] = np.ones((3, 5), np.int64)
    with pytest.raises(errors.FeedError) as info:
        compiled.run(feeds)
    assert str(info.value) == "dim 'batch' is 2 in input 'x' (axis 0) but 3 in input 'mask' (axis 0)"


def test_dims_fix_a_symbol_ahead_of_time(rng):
    model = parse(ATTENTION_LIKE)
    compiled = onnx_stablehlo.compile(model, dims={"batch": 2})
    assert "tensor<2x?x8xf32>" in compiled.mlir
    feeds = _feeds(rng, 2, 3)
    assert_allclose_for_dtype(compiled.run(feeds), ort_run(model, feeds))


def test_rule_needing_static_shapes_falls_back_to_per_shape_lowering(rng):
    # SAME padding with a stride above the window depends on `H mod 3`: MaxPool's rule needs
    # static shapes there, so the model is lowered per call instead.
    model = parse("""<ir_version: 9, opset_import: ["" : 18]>
g (float[N, 1, H, 4] x) => (float[N, 1, OH, OW] y) {
  y = MaxPool <kernel_shape = [2, 2], strides = [3, 3], auto_pad = "SAME_UPPER"> (x)
}""")
    compiled = onnx_stablehlo.compile(model)
    assert compiled.artifact is None and "MaxPool" in compiled.dynamic_error
    for n, h in ((1, 5), (3, 7)):
        feeds = {"x": rng.standard_normal((n, 1, h, 4)).astype(np.float32)}
        assert_allclose_for_dtype(compiled.run(feeds), ort_run(model, feeds))


def test_lower_keeps_symbolic_dims_unless_told_otherwise():
    model = parse(ATTENTION_LIKE)
    assert "tensor<?x?x8xf32>" in onnx_stablehlo.lower(model).text
    with pytest.raises(errors.ShapeError):
        onnx_stablehlo.lower(model, dynamic=False)


def test_bucketing_pads_masked_lengths_and_slices_outputs_back(rng):
    # A masked mean over the sequence: padded positions carry mask 0, so padding is safe.
    model = parse("""<ir_version: 9, opset_import: ["" : 18]>
g (float[batch, seq, 4] x, float[batch, seq] mask) => (float[batch, seq, 4] y, float[batch, 4] pooled) {
  one = Constant <value = int64[1] {1}> ()
  two = Constant <value = int64[1] {2}> ()
  y = Relu(x)
  m = Unsqueeze(mask, two)
  masked = Mul(y, m)
  total = ReduceSum <keepdims = 0> (masked, one)
  count = ReduceSum <keepdims = 0> (m, one)
  pooled = Div(total, count)
}""")
    compiled = onnx_stablehlo.compile(model, bucketing=onnx_stablehlo.Bucketing({"seq": "pow2"}))
    for seq in (3, 5, 7, 8, 2):
        feeds = {"x": rng.standard_normal((2, seq, 4)).astype(np.float32),
                 "mask": np.ones((2, seq), np.float32)}
        assert_allclose_for_dtype(compiled.run(feeds), ort_run(model, feeds))
    assert compiled.compile_count == 3  # buckets 4, 8 and 2


def test_bucket_sizes():
    assert onnx_stablehlo.Bucketing({"s": "pow2"}).bucket("s", 1) == 1
    assert onnx_stablehlo.Bucketing({"s": "pow2"}).bucket("s", 33) == 64
    assert onnx_stablehlo.Bucketing({"s": [8, 16]}).bucket("s", 20) == 20
    with pytest.raises(errors.InvalidOptionError, match="ascending"):
        onnx_stablehlo.Bucketing({"s": [16, 8]})


def test_unknown_dim_name_is_rejected_with_the_models_names():
    with pytest.raises(errors.InvalidOptionError) as info:
        onnx_stablehlo.compile(parse(ATTENTION_LIKE), dims={"Batch": 2})
    assert "'Batch'" in str(info.value) and "'batch', 'seq'" in str(info.value)


def test_a_feed_must_agree_with_a_dim_fixed_by_dims(rng):
    compiled = onnx_stablehlo.compile(parse(ATTENTION_LIKE), dims={"batch": 2})
    with pytest.raises(errors.FeedError, match="fixed to 2 by dims"):
        compiled.run(_feeds(rng, 3, 4))


def test_a_shape_given_for_one_input_fixes_its_dims_in_the_others():
    text = onnx_stablehlo.lower(parse(ATTENTION_LIKE), {"x": (2, 5, 8)}).text
    assert "tensor<2x5xi64>" in text and "?" not in text.split("{", 1)[0]


@pytest.mark.parametrize("mode", ["constant", "reflect"])
def test_pad_with_symbolic_dims(mode, rng):
    model = parse(f"""<ir_version: 9, opset_import: ["" : 18]>
g (float[N, C] x) => (float[M, D] y) {{
  pads = Constant <value = int64[4] {{1, 2, 0, 3}}> ()
  y = Pad <mode = "{mode}"> (x, pads)
}}""")
    compiled = onnx_stablehlo.compile(model)
    assert compiled.artifact is not None, compiled.dynamic_error  # one artifact for every shape
    for n in (2, 5):
        feeds = {"x": rng.standard_normal((n, 4)).astype(np.float32)}
        assert_allclose_for_dtype(compiled.run(feeds), ort_run(model, feeds))


# Symbol merging: equalities that broadcasts imply --------------------------------------------

TWO_NAMES = """<ir_version: 9, opset_import: ["" : 17]>
g (float[batch, s1] x, float[batch, s2] y, float[batch, 6] b) => (float[batch, s1] z, float[batch, 6] w) {
  a = Add(x, y)
  z = Relu(a)
  w = Mul(b, y)
}"""


def test_broadcast_of_two_symbols_merges_them():
    lowered = onnx_stablehlo.lower(parse(TWO_NAMES))
    shapes = {name: str(list(map(str, shape))) for name, (_, shape) in lowered.value_shapes.items()}
    assert shapes["a"] == "['batch', 's1']"  # not max(s1, s2)
    assert [str(e) for e in lowered.dim_equalities] == [
        "s1 == s2 (node #0 producing 'a')",
        "6 == s1 (node #2 producing 'w')",  # Mul(b[batch, 6], y[batch, s2]) with s2 merged into s1
    ]
    # Later shapes use the representative; a static size against a symbol gives the static size.
    assert shapes["w"] == "['batch', '6']"
    text = lowered.text
    assert 'onnx.dim_equalities = ["s1 == s2 (node #0 producing \'a\')", "6 == s1' in text
    assert "stablehlo.add %arg0, %arg1 : tensor<?x?xf32>" in text  # no broadcast needed


def test_merged_symbols_run_equal_broadcast_and_mismatched_sizes(rng):
    model = parse(TWO_NAMES)
    compiled = onnx_stablehlo.compile(model)
    assert compiled.artifact is not None, compiled.dynamic_error

    def feeds(s1, s2):
        x = rng.standard_normal((2, s1)).astype(np.float32)
        y = rng.standard_normal((2, s2)).astype(np.float32)
        b = rng.standard_normal((2, 6)).astype(np.float32)
        return {"x": x, "y": y, "b": b}

    equal = feeds(6, 6)  # s1 == s2, as assumed: the artifact is refined
    assert_allclose_for_dtype(compiled.run(equal), ort_run(model, equal))
    assert "tensor<2x6xf32>" in compiled.lowered.text and compiled.artifact is not None
    ones = feeds(6, 1)  # numpy broadcasting of a 1 breaks the assumption: lowered on its own
    assert_allclose_for_dtype(compiled.run(ones), ort_run(model, ones))
    assert compiled.compile_count == 2
    assert compiled.artifact is not None  # still used for the next shapes
    with pytest.raises(errors.FeedError) as info:
        compiled.run(feeds(6, 4))
    assert str(info.value) == (
        "node #0 producing 'a' broadcasts dim s2 against s1, which must be equal or 1, but the feeds "
        "give 's1' = 6 (input 'x' axis 1), 's2' = 4 (input 'y' axis 1)"
    )



def test_an_input_returned_as_is_keeps_the_artifact(rng):
    # stablehlo-refine-shapes leaves the result type of a returned argument '?': specialize-shapes
    # takes result types from func.return (found by the dynamic node-suite sweep: test_identity).
    model = parse("""<ir_version: 9, opset_import: ["" : 17]>
g (float[n] x) => (float[n] y, float[n] z) {
  y = Identity(x)
  z = Neg(x)
}""")
    compiled = onnx_stablehlo.compile(model)
    for n in (3, 5):
        feeds = {"x": rng.standard_normal(n).astype(np.float32)}
        assert_allclose_for_dtype(compiled.run(feeds), ort_run(model, feeds))
    assert compiled.artifact is not None, compiled.dynamic_error
    assert compiled.compile_count == 2


@pytest.mark.parametrize("policy_dim", ["s1", "s2"])
def test_bucketing_pads_merged_symbols_together(policy_dim, rng):
    # s1 and s2 are merged by the Add: padding only one of them would break the equality.
    model = parse("""<ir_version: 9, opset_import: ["" : 17]>
g (float[batch, s1] x, float[batch, s2] y) => (float[batch, s1] z) {
  a = Add(x, y)
  z = Relu(a)
}""")
    compiled = onnx_stablehlo.compile(model, bucketing=onnx_stablehlo.Bucketing({policy_dim: "pow2"}))
    for s1, s2 in [(3, 3), (4, 4), (6, 1)]:
        feeds = {
            "x": rng.standard_normal((2, s1)).astype(np.float32),
            "y": rng.standard_normal((2, s2)).astype(np.float32),
        }
        assert_allclose_for_dtype(compiled.run(feeds), ort_run(model, feeds))
    # 3 and 4 share the bucket of 4; the broadcast of a 1 is lowered on its own.
    assert compiled.compile_count == 2


def test_a_symbol_broadcast_against_a_static_size_is_checked_per_call(rng):
    model = parse("""<ir_version: 9, opset_import: ["" : 17]>
g (float[N, 4] x, float[3, 4] y) => (float[3, 4] z) {
  z = Add(x, y)
}""")
    compiled = onnx_stablehlo.compile(model)
    assert [str(e) for e in compiled.artifact.dim_equalities] == ["3 == N (node #0 producing 'z')"]
    y = rng.standard_normal((3, 4)).astype(np.float32)
    for n in (3, 1):  # equal, then numpy broadcasting of a 1 (lowered on its own)
        feeds = {"x": rng.standard_normal((n, 4)).astype(np.float32), "y": y}
        assert_allclose_for_dtype(compiled.run(feeds), ort_run(model, feeds))
    with pytest.raises(errors.FeedError, match=r"broadcasts dim N against 3, which must be equal or 1"):
        compiled.run({"x": rng.standard_normal((5, 4)).astype(np.float32), "y": y})
    assert compiled.artifact is not None  # a bad feed does not cost the artifact


def test_a_feed_that_fits_no_lowering_keeps_the_artifact(rng):
    # Reshape to [-1, 4] needs a multiple of 4 elements: 6 elements fail in the refined artifact
    # and in a per-shape lowering alike, so the error is the feed's and the artifact stays.
    model = parse("""<ir_version: 9, opset_import: ["" : 17]>
g (float[N] x) => (float[M, 4] y) {
  shape = Constant <value = int64[2] {-1, 4}> ()
  y = Reshape(x, shape)
}""")
    compiled = onnx_stablehlo.compile(model)
    with pytest.raises(errors.ShapeError, match=r"cannot reshape \[6\] \(6 elements\) to \[-1, 4\]"):
        compiled.run({"x": rng.standard_normal(6).astype(np.float32)})
    assert compiled.artifact is not None, compiled.dynamic_error
    feeds = {"x": rng.standard_normal(8).astype(np.float32)}
    assert_allclose_for_dtype(compiled.run(feeds), ort_run(model, feeds))
