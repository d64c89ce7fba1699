"""Parity of the generator family (frontend/lowering/generators.py) against onnxruntime.

Symbolic-dim tests (``check_symbolic``) compile one model with its ``dim_param`` dims kept as
``?``, keep that artifact through runs at two shapes, and compare each run with the oracle.
"""

from __future__ import annotations

import numpy as np
import onnx
import pytest

import onnx_stablehlo
from onnx_stablehlo.errors import NonConstantInputError
from onnx_stablehlo.frontend.importer import import_model
from tests.util import (assert_allclose_for_dtype, check_symbolic, compile_and_run, dims_text, emitted_text, oracle_run,
                        parse)

CONSTANT_CASES = [
    ("value = float[2, 3] {1, 2, 3, 4, 5, 6}", "float", "[2, 3]", 13),
    ("value_float = 2.5", "float", "[2, 3]", 13),
    ("value_floats = [1.0, -2.0, 3.5]", "float", "[3]", 12),
    ("value_int = 7", "int64", "[2, 3]", 19),
    ("value_ints = [1, 2, 3]", "int64", "[3]", 25),
    ("value = int32[3] {-1, 0, 5}", "int32", "[3]", 9),
]


@pytest.mark.parametrize(
    "attr,ty,shape,opset", CONSTANT_CASES, ids=[f"{c[0].split(' ')[0]}-{c[1]}-opset{c[3]}" for c in CONSTANT_CASES]
)
def test_constant_matches_onnxruntime(attr, ty, shape, opset, rng):
    model = parse(
        f"""<ir_version: 10, opset_import: ["" : {opset}]>
g ({ty}{shape} x) => ({ty}{shape} y) {{
  c = Constant <{attr}> ()
  y = Add(x, c)
}}"""
    )
    dims = tuple(int(d) for d in shape.strip("[]").split(","))
    feeds = {"x": rng.integers(-5, 5, dims).astype(onnx.helper.tensor_dtype_to_np_dtype(
        {"float": onnx.TensorProto.FLOAT, "int64": onnx.TensorProto.INT64, "int32": onnx.TensorProto.INT32}[ty]))}
    assert_allclose_for_dtype(compile_and_run(model, feeds), oracle_run(model, feeds))


def test_constant_is_a_compile_time_value():
    """A Constant feeding a shape input (Reshape) is read at compile time."""
    model = parse(
        """<ir_version: 10, opset_import: ["" : 13]>
g (float[2, 6] x) => (float[3, 4] y) {
  shape = Constant <value_ints = [3, 4]> ()
  y = Reshape(x, shape)
}"""
    )
    x = np.arange(12, dtype=np.float32).reshape(2, 6)
    assert_allclose_for_dtype(compile_and_run(model, {"x": x}), [x.reshape(3, 4)])


CONSTANT_OF_SHAPE_MODEL = """<ir_version: 10, opset_import: ["" : {opset}]>
g ({ty}{shape} x) => ({ty}{shape} y) <int64[{rank}] shape = {{{dims}}}> {{
  c = ConstantOfShape <{value}> (shape)
  y = Add(x, c)
}}"""


def _constant_of_shape(shape, value: str, ty: str, opset: int):
    text = CONSTANT_OF_SHAPE_MODEL.format(
        opset=opset, ty=ty, shape=list(shape), rank=len(shape), dims=", ".join(map(str, shape)), value=value
    )
    return parse(text)


@pytest.mark.parametrize(
    "shape,value,ty,opset",
    [
        ((2, 3), "value = float[1] {1.5}", "float", 9),
        ((2, 3), "value = int64[1] {4}", "int64", 20),
        ((40, 50), "value = float[1] {-2.0}", "float", 21),
        ((0, 3), "value = int32[1] {1}", "int32", 25),
    ],
    ids=["f32-opset9", "i64-opset20", "f32-large-opset21", "i32-empty-opset25"],
)
def test_constant_of_shape_matches_onnxruntime(shape, value, ty, opset, rng):
    model = _constant_of_shape(shape, value, ty, opset)
    np_dtype = {"float": np.float32, "int64": np.int64, "int32": np.int32}[ty]
    feeds = {"x": rng.integers(-5, 5, shape).astype(np_dtype)}
    assert_allclose_for_dtype(compile_and_run(model, feeds), oracle_run(model, feeds))


def test_constant_of_shape_defaults_to_float_zero():
    model = parse(
        """<ir_version: 10, opset_import: ["" : 20]>
g (float[2, 3] x) => (float[2, 3] y) <int64[2] shape = {2, 3}> {
  c = ConstantOfShape (shape)
  y = Add(x, c)
}"""
    )
    x = np.ones((2, 3), np.float32)
    assert_allclose_for_dtype(compile_and_run(model, {"x": x}), [x])


def test_constant_of_shape_large_result_is_a_splat():
    """Above 1024 elements the rule emits a splat constant, never a dense literal."""
    model = _constant_of_shape((40, 50), "value = float[1] {-2.0}", "float", 21)
    lowered = import_model(onnx_stablehlo.load(model), fold_max_elements=0)
    assert "dense<-2.000000e+00> : tensor<40x50xf32>" in lowered.text


def test_constant_of_shape_rejects_a_runtime_shape():
    model = parse(
        """<ir_version: 10, opset_import: ["" : 20]>
g (float[2] shape_f) => (float y) {
  shape = Cast <to = 7> (shape_f)
  y = ConstantOfShape (shape)
}"""
    )
    with pytest.raises(NonConstantInputError, match="shape"):
        onnx_stablehlo.lower(model)


RANGE_MODEL = """<ir_version: 10, opset_import: ["" : {opset}]>
g ({ty}[{n}] x) => ({ty}[{n}] y) <{ty} start = {{{start}}}, {ty} limit = {{{limit}}}, {ty} delta = {{{delta}}}> {{
  r = Range (start, limit, delta)
  y = Add(x, r)
}}"""

RANGE_CASES = [
    ("float", 1.0, 5.5, 1.5, 11),
    ("int32", 10, 4, -2, 11),
    ("int64", 0, 7, 3, 27),
    ("double", -1.0, 1.0, 0.25, 27),
]


def _range_model(ty, start, limit, delta, opset):
    n = max(int(np.ceil((limit - start) / delta)), 0)
    return parse(RANGE_MODEL.format(opset=opset, ty=ty, n=n, start=start, limit=limit, delta=delta)), n


@pytest.mark.parametrize("case", RANGE_CASES, ids=[f"{c[0]}-opset{c[4]}" for c in RANGE_CASES])
def test_range_rule_computes_a_constant(case):
    """Folding is off here, so the rule itself computes the range."""
    ty, start, limit, delta, opset = case
    model, n = _range_model(*case)
    np_dtype = {"float": np.float32, "int32": np.int32, "int64": np.int64, "double": np.float64}[ty]
    expected = np.arange(start, limit, delta).astype(np_dtype)
    text = import_model(onnx_stablehlo.load(model), fold_max_elements=0).text
    literal = ", ".join(str(v) for v in expected.tolist()) if ty.startswith("int") else None
    assert f"tensor<{n}x" in text
    if literal is not None:
        assert f"dense<[{literal}]>" in text
    feeds = {"x": np.zeros((n,), np_dtype)}
    assert_allclose_for_dtype(compile_and_run(model, feeds), [expected])


def test_range_rejects_runtime_inputs():
    model = parse(
        """<ir_version: 10, opset_import: ["" : 11]>
g (float[1] s) => (float y) <float limit = {5.0}, float delta = {1.0}> {
  start = Squeeze (s)
  y = Range (start, limit, delta)
}"""
    )
    with pytest.raises(NonConstantInputError, match="'start'"):
        onnx_stablehlo.lower(model)


@pytest.mark.parametrize(
    "shape,attrs,ty,opset",
    [
        ((3, 4), "", "float", 9),
        ((4, 3), "<k = 1>", "int32", 9),
        ((3, 3), "<k = -2, dtype = 1>", "int64", 22),
        ((40, 50), "<k = 3>", "float", 22),
    ],
    ids=["f32-opset9", "i32-k1", "i64-to-f32-k-2", "f32-large-k3"],
)
def test_eye_like_matches_onnxruntime(shape, attrs, ty, opset, rng):
    out_ty = "float" if "dtype = 1" in attrs else ty
    model = parse(
        f"""<ir_version: 10, opset_import: ["" : {opset}]>
g ({ty}{list(shape)} x) => ({out_ty}{list(shape)} y) {{
  y = EyeLike {attrs} (x)
}}"""
    )
    np_dtype = {"float": np.float32, "int32": np.int32, "int64": np.int64}[ty]
    feeds = {"x": rng.integers(-5, 5, shape).astype(np_dtype)}
    assert_allclose_for_dtype(compile_and_run(model, feeds), oracle_run(model, feeds))


def test_eye_like_large_uses_iota():
    model = parse(
        """<ir_version: 10, opset_import: ["" : 22]>
g (float[40, 50] x) => (float[40, 50] y) {
  y = EyeLike (x)
}"""
    )
    assert "stablehlo.iota" in emitted_text(model)


RANDOM_MODEL = """<ir_version: 10, opset_import: ["" : {opset}]>
g (float[200, 250] like, float[4, 3] logits, float[200, 250] p) =>
  (float[200, 250] n, double[200, 250] u, float16[200, 250] nl, float[200, 250] ul, int64[4, 20000] s,
   int32[200, 250] b) {{
  n = RandomNormal <shape = [200, 250], mean = 2.0, scale = 3.0, seed = 5.0> ()
  u = RandomUniform <shape = [200, 250], low = -1.0, high = 3.0, dtype = 11> ()
  nl = RandomNormalLike <dtype = 10> (like)
  ul = RandomUniformLike (like)
  s = Multinomial <sample_size = 20000, dtype = 7, seed = 1.0> (logits)
  b = Bernoulli <dtype = 6> (p)
}}"""

PROBABILITIES = np.array([[1, 2, 3], [1, 1, 1], [10, 1e-4, 1e-4], [0.2, 0.3, 0.5]], np.float32)


@pytest.mark.parametrize("opset", [15, 22])
def test_random_ops_have_the_right_distributions(opset):
    """Random streams differ from onnxruntime's, so shapes, dtypes and moments are checked (50k draws)."""
    model = parse(RANDOM_MODEL.format(opset=opset))
    p = np.tile(np.linspace(0, 1, 250, dtype=np.float32), (200, 1))
    feeds = {"like": np.zeros((200, 250), np.float32), "logits": np.log(PROBABILITIES), "p": p}
    n, u, nl, ul, s, b = compile_and_run(model, feeds)
    assert (n.dtype, u.dtype, nl.dtype, ul.dtype, s.dtype, b.dtype) == (
        np.float32, np.float64, np.float16, np.float32, np.int64, np.int32
    )
    assert abs(n.mean() - 2.0) < 0.05 and abs(n.std() - 3.0) < 0.05
    assert u.min() >= -1.0 and u.max() < 3.0 and abs(u.mean() - 1.0) < 0.02
    assert abs(nl.astype(np.float32).mean()) < 0.03 and abs(nl.astype(np.float32).std() - 1.0) < 0.03
    assert ul.min() >= 0.0 and ul.max() < 1.0 and abs(ul.mean() - 0.5) < 0.01
    for row, probs in zip(s, PROBABILITIES / PROBABILITIES.sum(axis=1, keepdims=True)):
        np.testing.assert_allclose(np.bincount(row, minlength=3) / row.size, probs, atol=0.015)
    assert set(np.unique(b)) <= {0, 1}
    np.testing.assert_allclose(b.mean(axis=0)[::25], p[0, ::25], atol=0.12)
    assert np.all(b[:, 0] == 0) and np.all(b[:, -1] == 1)


def test_random_ops_are_deterministic_per_seed():
    model = parse(RANDOM_MODEL.format(opset=22))
    feeds = {"like": np.zeros((200, 250), np.float32), "logits": np.log(PROBABILITIES),
             "p": np.full((200, 250), 0.5, np.float32)}
    first, second = compile_and_run(model, feeds), compile_and_run(model, feeds)
    for a, b in zip(first, second):
        np.testing.assert_array_equal(a, b)


def test_unseeded_random_nodes_draw_different_streams():
    model = parse(
        """<ir_version: 10, opset_import: ["" : 22]>
g (float[1] unused) => (float[64] a, float[64] b) {
  a = RandomUniform <shape = [64]> ()
  b = RandomUniform <shape = [64]> ()
}"""
    )
    a, b = compile_and_run(model, {"unused": np.zeros((1,), np.float32)})
    assert not np.array_equal(a, b)


def test_random_ops_use_rng_bit_generator():
    text = emitted_text(parse(RANDOM_MODEL.format(opset=22)))
    assert "stablehlo.rng_bit_generator" in text and "THREE_FRY" in text
    assert "stablehlo.reduce_window" in text  # Multinomial's cumulative sum


@pytest.mark.parametrize("axis", [-1, 0, 1], ids=["axis-neg1", "axis0", "axis1"])
@pytest.mark.parametrize("opset", [9, 11], ids=lambda v: f"opset{v}")
def test_one_hot_matches_onnxruntime(axis, opset, rng):
    depth = 5
    shape = [2, 3]
    result = list(shape)
    result.insert(axis % 3 if axis < 0 else axis, depth)
    model = parse(f"""<ir_version: 9, opset_import: ["" : {opset}]>
g (int64[2, 3] i, float[2] v) => (float[{dims_text(result)}] y) {{
  d = Constant <value = int64 {{{depth}}}> ()
  y = OneHot <axis = {axis}> (i, d, v)
}}""")
    low = -depth if opset >= 11 else 0
    indices = rng.integers(low, depth, shape)
    indices[0, 0] = depth + 2  # out of range: an all-off row
    feeds = {"i": indices.astype(np.int64), "v": np.array([-1.0, 3.0], np.float32)}
    assert_allclose_for_dtype(compile_and_run(model, feeds), oracle_run(model, feeds))


def test_one_hot_float_indices_and_depth(rng):
    model = parse("""<ir_version: 9, opset_import: ["" : 11]>
g (float[4] i) => (int32[4, 3] y) {
  d = Constant <value = float {3.0}> ()
  v = Constant <value = int32[2] {0, 1}> ()
  y = OneHot(i, d, v)
}""")
    feeds = {"i": np.array([0.0, 2.7, -1.0, 1.2], np.float32)}
    assert_allclose_for_dtype(compile_and_run(model, feeds), oracle_run(model, feeds))


@pytest.mark.parametrize("axis", [-1, 0])
def test_one_hot(axis, rng):
    def feeds(n, t):
        return {"i": rng.integers(-5, 6, (n, t)).astype(np.int64), "v": np.array([0.5, 2.0], np.float32)}

    out = "[N, T, 5]" if axis == -1 else "[5, N, T]"
    check_symbolic(
        18,
        f"""g (int64[N, T] i, float[2] v) => (float{out} y) {{
  d = Constant <value = int64 {{5}}> ()
  y = OneHot <axis = {axis}> (i, d, v)
}}""",
        feeds,
        [(2, 3), (4, 1)],
    )
