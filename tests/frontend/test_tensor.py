"""Parity of the tensor family (frontend/lowering/tensor.py) against onnxruntime.

Data flows through graph inputs; shape-like inputs (shape, axes, split, repeats) are Constant
nodes, since the lowering needs them at compile time.

Symbolic-dim tests (``check_symbolic``) compile one model with its ``dim_param`` dims kept as
``?``, keep that artifact through runs at two shapes, and compare each run with the oracle.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import onnx_stablehlo
from onnx_stablehlo.errors import NonConstantInputError, ShapeError, UnsupportedAttributeError
from tests.util import (assert_allclose_for_dtype, check_symbolic, compile_and_run, emitted_text, onnx_type_name,
                        oracle_run, parse, random_array, reference_run, standard_normal)

DTYPES = [np.float32, np.float16, np.int64, np.int32, np.bool_]
DTYPE_IDS = ["f32", "f16", "i64", "i32", "bool"]


def _ints(values) -> str:
    return ", ".join(str(int(v)) for v in values)


def _dims(shape) -> str:
    return ", ".join(str(d) for d in shape)


# Reshape ---------------------------------------------------------------------------------------

RESHAPE_MODEL = """<ir_version: 9, opset_import: ["" : {opset}]>
g ({ty}[{src}] x) => ({ty}[{dst}] y) {{
  s = Constant <value = int64[{k}] {{{shape}}}> ()
  y = Reshape {attrs} (x, s)
}}"""

RESHAPES = [
    # (input shape, requested shape, allowzero, result shape)
    ((2, 3, 4), (4, 6), 0, (4, 6)),
    ((2, 3, 4), (-1,), 0, (24,)),
    ((2, 3, 4), (0, -1), 0, (2, 12)),
    ((2, 3, 4), (0, 0, 2, 2), 0, (2, 3, 2, 2)),
    ((2, 3, 4), (-1, 0, 2), 0, (4, 3, 2)),
    ((2, 3, 4), (1, 24, 1), 0, (1, 24, 1)),
    ((0, 3, 4), (3, 0, 4), 1, (3, 0, 4)),
    ((4, 3, 2), (2, 0, -1), 0, (2, 3, 4)),
]
RESHAPE_IDS = ["plain", "infer-all", "copy-and-infer", "copy-two", "infer-first", "unit-dims", "allowzero",
               "copy-middle"]


@pytest.mark.parametrize("case", RESHAPES, ids=RESHAPE_IDS)
@pytest.mark.parametrize("opset", [13, 14, 21], ids=lambda v: f"opset{v}")
def test_reshape_matches_onnxruntime(case, opset, rng):
    src, shape, allowzero, dst = case
    if allowzero and opset < 14:
        pytest.skip("allowzero exists from Reshape-14")
    attrs = f"<allowzero = {allowzero}>" if opset >= 14 else ""
    model = parse(RESHAPE_MODEL.format(opset=opset, ty="float", src=_dims(src), dst=_dims(dst), k=len(shape),
                                       shape=_ints(shape), attrs=attrs))
    feeds = {"x": random_array(src, np.float32, rng)}
    assert_allclose_for_dtype(compile_and_run(model, feeds), oracle_run(model, feeds))


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_reshape_dtypes_match_onnxruntime(dtype, rng):
    ty = onnx_type_name(dtype)
    model = parse(RESHAPE_MODEL.format(opset=14, ty=ty, src="2, 6", dst="3, 4", k=2, shape="3, -1", attrs=""))
    feeds = {"x": random_array((2, 6), dtype, rng)}
    assert_allclose_for_dtype(compile_and_run(model, feeds), oracle_run(model, feeds))
    assert "stablehlo.reshape" in emitted_text(model)


def test_reshape_bfloat16_keeps_values(rng):
    model = parse(RESHAPE_MODEL.format(opset=14, ty="bfloat16", src="2, 6", dst="12", k=1, shape="-1", attrs=""))
    x = rng.standard_normal((2, 6)).astype(ml_dtypes.bfloat16)
    np.testing.assert_array_equal(compile_and_run(model, {"x": x})[0], x.reshape(-1))


def test_reshape_run_time_shape_is_rejected_by_lower():
    model = parse("""<ir_version: 9, opset_import: ["" : 14]>
g (float[2, 6] x, int64[2] s) => (float[3, 4] y) {
  [reshape_1] y = Reshape(x, s)
}""")
    # lower() has no feeds to specialize on (compile().run() specializes small int inputs).
    with pytest.raises(NonConstantInputError, match="reshape_1.*input 1 \\('s'\\)"):
        emitted_text(model)


@pytest.mark.parametrize("shape", [(5, -1), (-1, -1), (7,)], ids=["indivisible", "two-inferred", "wrong-count"])
def test_reshape_bad_target_is_rejected(shape):
    model = parse(RESHAPE_MODEL.format(opset=14, ty="float", src="2, 6", dst="?", k=len(shape), shape=_ints(shape),
                                       attrs="").replace("float[?]", "float[N]"))
    with pytest.raises(ShapeError, match="Reshape"):
        compile_and_run(model, {"x": np.zeros((2, 6), np.float32)})


# Shape subgraphs (Shape -> Gather -> Unsqueeze -> Concat -> Reshape) ---------------------------


@pytest.mark.parametrize("opset", [13, 17, 18], ids=lambda v: f"opset{v}")
def test_shape_subgraph_folds_to_a_reshape(opset, rng):
    model = parse(f"""<ir_version: 9, opset_import: ["" : {opset}]>
g (float[2, 5, 12] x) => (float[2, 5, 3, 4] y) {{
  s = Shape(x)
  i0 = Constant <value = int64 {{0}}> ()
  i1 = Constant <value = int64 {{1}}> ()
  b = Gather <axis = 0> (s, i0)
  t = Gather <axis = 0> (s, i1)
  ax = Constant <value = int64[1] {{0}}> ()
  bu = Unsqueeze(b, ax)
  tu = Unsqueeze(t, ax)
  heads = Constant <value = int64[2] {{3, 4}}> ()
  target = Concat <axis = 0> (bu, tu, heads)
  y = Reshape(x, target)
}}""")
    feeds = {"x": random_array((2, 5, 12), np.float32, rng)}
    assert_allclose_for_dtype(compile_and_run(model, feeds), oracle_run(model, feeds))
    text = emitted_text(model)
    assert "stablehlo.reshape" in text and "stablehlo.gather" not in text and "concatenate" not in text


SHAPE_SLICES = [(None, None), (1, None), (-1, None), (None, -1), (1, 2), (-10, 10), (2, 1)]


@pytest.mark.parametrize("bounds", SHAPE_SLICES, ids=["all", "start", "neg-start", "neg-end", "both", "clamped",
                                                      "empty"])
def test_shape_start_end_match_onnxruntime(bounds):
    start, end = bounds
    attrs = [f"start = {start}"] if start is not None else []
    attrs += [f"end = {end}"] if end is not None else []
    attr_text = f"<{', '.join(attrs)}>" if attrs else ""
    expected_len = len(range(4)[slice(start, end)]) if start != -10 else 4
    model = parse(f"""<ir_version: 9, opset_import: ["" : 15]>
g (float[2, 3, 4, 5] x) => (int64[{expected_len}] y) {{
  y = Shape {attr_text} (x)
}}""")
    feeds = {"x": np.zeros((2, 3, 4, 5), np.float32)}
    assert_allclose_for_dtype(compile_and_run(model, feeds), oracle_run(model, feeds))


def test_shape_is_a_compile_time_constant():
    model = parse("""<ir_version: 9, opset_import: ["" : 13]>
g (float[2, 3] x) => (int64[2] y) {
  y = Shape(x)
}""")
    assert "stablehlo.constant dense<[2, 3]> : tensor<2xi64>" in emitted_text(model)


def test_size_feeds_a_reshape(rng):
    model = parse("""<ir_version: 9, opset_import: ["" : 13]>
g (float[2, 3, 4] x) => (float[24] y) {
  n = Size(x)
  ax = Constant <value = int64[1] {0}> ()
  s = Unsqueeze(n, ax)
  y = Reshape(x, s)
}""")
    feeds = {"x": random_array((2, 3, 4), np.float32, rng)}
    assert_allclose_for_dtype(compile_and_run(model, feeds), oracle_run(model, feeds))


def test_size_as_graph_output_is_a_scalar():
    model = parse("""<ir_version: 9, opset_import: ["" : 13]>
g (float[2, 3, 4] x) => (int64 y) {
  y = Size(x)
}""")
    feeds = {"x": np.zeros((2, 3, 4), np.float32)}
    assert_allclose_for_dtype(compile_and_run(model, feeds), oracle_run(model, feeds))


# Flatten, Squeeze, Unsqueeze -------------------------------------------------------------------


@pytest.mark.parametrize("axis,opset", [(0, 9), (1, 9), (3, 9), (4, 11), (-1, 11), (-4, 13), (2, 21)],
                         ids=["axis0-opset9", "axis1-opset9", "axis3-opset9", "axis-rank-opset11",
                              "axis-neg1-opset11", "axis-neg4-opset13", "axis2-opset21"])
def test_flatten_matches_onnxruntime(axis, opset, rng):
    shape = (2, 3, 4, 5)
    outer = int(np.prod(shape[: axis % 4 if axis != 4 else 4]))
    model = parse(f"""<ir_version: 9, opset_import: ["" : {opset}]>
g (float[2, 3, 4, 5] x) => (float[{outer}, {120 // outer}] y) {{
  y = Flatten <axis = {axis}> (x)
}}""")
    feeds = {"x": random_array(shape, np.float32, rng)}
    assert_allclose_for_dtype(compile_and_run(model, feeds), oracle_run(model, feeds))


SQUEEZES = [((1, 3, 1, 4), [0, 2], (3, 4)), ((1, 3, 1, 4), [-2], (1, 3, 4)), ((1, 3, 1, 4), None, (3, 4)),
            ((1, 1), None, ())]


@pytest.mark.parametrize("case", SQUEEZES, ids=["two-axes", "negative", "all-ones", "to-scalar"])
@pytest.mark.parametrize("opset", [11, 13, 21], ids=lambda v: f"opset{v}")
def test_squeeze_matches_onnxruntime(case, opset, rng):
    shape, axes, result = case
    if axes is None:
        node = "y = Squeeze(x)"
    elif opset < 13:
        node = f"y = Squeeze <axes = [{_ints(axes)}]> (x)"
    else:
        node = f"a = Constant <value = int64[{len(axes)}] {{{_ints(axes)}}}> ()\n  y = Squeeze(x, a)"
    model = parse(f"""<ir_version: 9, opset_import: ["" : {opset}]>
g (float[{_dims(shape)}] x) => (float[{_dims(result)}] y) {{
  {node}
}}""".replace("float[]", "float"))
    feeds = {"x": random_array(shape, np.float32, rng)}
    assert_allclose_for_dtype(compile_and_run(model, feeds), oracle_run(model, feeds))


def test_squeeze_of_a_wide_dim_is_rejected():
    model = parse("""<ir_version: 9, opset_import: ["" : 11]>
g (float[2, 3] x) => (float[3] y) {
  y = Squeeze <axes = [0]> (x)
}""")
    with pytest.raises(ShapeError, match="cannot squeeze axis 0 of size 2"):
        compile_and_run(model, {"x": np.zeros((2, 3), np.float32)})


UNSQUEEZES = [((3, 4), [0], (1, 3, 4)), ((3, 4), [2, 0], (1, 3, 1, 4)), ((3, 4), [-1], (3, 4, 1)),
              ((3, 4), [1, -1, 0], (1, 1, 3, 4, 1)), ((), [0], (1,))]


@pytest.mark.parametrize("case", UNSQUEEZES, ids=["front", "unsorted", "negative", "three", "scalar"])
@pytest.mark.parametrize("opset", [11, 13, 21], ids=lambda v: f"opset{v}")
def test_unsqueeze_matches_onnxruntime(case, opset, rng):
    shape, axes, result = case
    if opset < 13:
        node = f"y = Unsqueeze <axes = [{_ints(axes)}]> (x)"
    else:
        node = f"a = Constant <value = int64[{len(axes)}] {{{_ints(axes)}}}> ()\n  y = Unsqueeze(x, a)"
    model = parse(f"""<ir_version: 9, opset_import: ["" : {opset}]>
g (float[{_dims(shape)}] x) => (float[{_dims(result)}] y) {{
  {node}
}}""".replace("float[] x", "float x"))
    feeds = {"x": random_array(shape, np.float32, rng)}
    assert_allclose_for_dtype(compile_and_run(model, feeds), oracle_run(model, feeds))


# Transpose, Concat, Expand, Identity -----------------------------------------------------------


@pytest.mark.parametrize("perm", [None, [0, 2, 1, 3], [3, 1, 0, 2]], ids=["default", "swap-middle", "mixed"])
@pytest.mark.parametrize("dtype", [np.float32, np.int64, np.bool_], ids=["f32", "i64", "bool"])
@pytest.mark.parametrize("opset", [13, 21], ids=lambda v: f"opset{v}")
def test_transpose_matches_onnxruntime(perm, dtype, opset, rng):
    shape = (2, 3, 4, 5)
    result = tuple(reversed(shape)) if perm is None else tuple(shape[p] for p in perm)
    attrs = "" if perm is None else f"<perm = [{_ints(perm)}]>"
    ty = onnx_type_name(dtype)
    model = parse(f"""<ir_version: 9, opset_import: ["" : {opset}]>
g ({ty}[2, 3, 4, 5] x) => ({ty}[{_dims(result)}] y) {{
  y = Transpose {attrs} (x)
}}""")
    feeds = {"x": random_array(shape, dtype, rng)}
    assert_allclose_for_dtype(compile_and_run(model, feeds), oracle_run(model, feeds))


@pytest.mark.parametrize("axis", [0, 1, -1], ids=["axis0", "axis1", "axis-neg1"])
@pytest.mark.parametrize("dtype", [np.float32, np.int64], ids=["f32", "i64"])
def test_concat_matches_onnxruntime(axis, dtype, rng):
    shapes = [[2, 3], [2, 3], [2, 3]]
    for i, s in enumerate(shapes):
        s[axis] += i  # differ along the axis only
    result = list(shapes[0])
    result[axis] = sum(s[axis] for s in shapes)
    ty = onnx_type_name(dtype)
    model = parse(f"""<ir_version: 9, opset_import: ["" : 13]>
g ({ty}[{_dims(shapes[0])}] a, {ty}[{_dims(shapes[1])}] b, {ty}[{_dims(shapes[2])}] c) => ({ty}[{_dims(result)}] y) {{
  y = Concat <axis = {axis}> (a, b, c)
}}""")
    feeds = {name: random_array(tuple(s), dtype, rng) for name, s in zip("abc", shapes)}
    assert_allclose_for_dtype(compile_and_run(model, feeds), oracle_run(model, feeds))
    assert "stablehlo.concatenate" in emitted_text(model)


def test_concat_with_a_constant_and_an_empty_input(rng):
    model = parse("""<ir_version: 9, opset_import: ["" : 11]>
g (float[2, 3] a, float[2, 0] e) => (float[2, 5] y) {
  k = Constant <value = float[2, 2] {1, 2, 3, 4}> ()
  y = Concat <axis = -1> (a, e, k)
}""")
    feeds = {"a": random_array((2, 3), np.float32, rng), "e": np.zeros((2, 0), np.float32)}
    assert_allclose_for_dtype(compile_and_run(model, feeds), oracle_run(model, feeds))


EXPANDS = [
    # (input shape, requested shape, result shape)
    ((3, 1), (2, 3, 4), (2, 3, 4)),
    ((3, 1), (3, 1), (3, 1)),
    ((1, 4), (3, 1), (3, 4)),
    ((4,), (2, 1, 1), (2, 1, 4)),
]


@pytest.mark.parametrize("case", EXPANDS, ids=["grow-rank", "same", "bidirectional", "ones-in-target"])
@pytest.mark.parametrize("opset", [8, 13], ids=lambda v: f"opset{v}")
def test_expand_matches_onnxruntime(case, opset, rng):
    src, shape, result = case
    model = parse(f"""<ir_version: 9, opset_import: ["" : {opset}]>
g (float[{_dims(src)}] x) => (float[{_dims(result)}] y) {{
  s = Constant <value = int64[{len(shape)}] {{{_ints(shape)}}}> ()
  y = Expand(x, s)
}}""")
    feeds = {"x": random_array(src, np.float32, rng)}
    assert_allclose_for_dtype(compile_and_run(model, feeds), oracle_run(model, feeds))


def test_expand_incompatible_shape_is_rejected():
    model = parse("""<ir_version: 9, opset_import: ["" : 13]>
g (float[3] x) => (float[4] y) {
  s = Constant <value = int64[1] {4}> ()
  y = Expand(x, s)
}""")
    with pytest.raises(ShapeError, match="cannot expand"):
        compile_and_run(model, {"x": np.zeros(3, np.float32)})


@pytest.mark.parametrize("opset", [13, 16, 21], ids=lambda v: f"opset{v}")
def test_identity_forwards_its_input(opset, rng):
    model = parse(f"""<ir_version: 9, opset_import: ["" : {opset}]>
g (float[2, 3] x) => (float[2, 3] y) {{
  y = Identity(x)
}}""")
    feeds = {"x": random_array((2, 3), np.float32, rng)}
    assert_allclose_for_dtype(compile_and_run(model, feeds), oracle_run(model, feeds))


# Split, Tile -----------------------------------------------------------------------------------


SPLITS = [
    # (opset, how the split is given, input shape, axis, sizes of the outputs)
    (11, "attr", (6, 6), 1, [2, 4]),
    (11, "equal", (6, 6), 0, [2, 2, 2]),
    (13, "input", (6, 6), -1, [1, 2, 3]),
    (13, "equal", (6, 6), 1, [3, 3]),
    (18, "num_outputs", (6, 6), 1, [2, 2, 2]),
    (18, "num_outputs", (5, 6), 0, [3, 2]),
    (18, "input", (6, 6), 1, [6, 0]),
]


@pytest.mark.parametrize("case", SPLITS, ids=["attr-opset11", "equal-opset11", "input-opset13", "equal-opset13",
                                              "num-outputs-opset18", "uneven-opset18", "zero-size-opset18"])
def test_split_matches_onnxruntime(case, rng):
    opset, how, shape, axis, sizes = case
    outs = [f"y{i}" for i in range(len(sizes))]
    out_shapes = []
    for size in sizes:
        out_shape = list(shape)
        out_shape[axis] = size
        out_shapes.append(out_shape)
    outputs = ", ".join(f"float[{_dims(s)}] {o}" for s, o in zip(out_shapes, outs))
    if how == "attr":
        node = f"{', '.join(outs)} = Split <axis = {axis}, split = [{_ints(sizes)}]> (x)"
    elif how == "input":
        node = (f"s = Constant <value = int64[{len(sizes)}] {{{_ints(sizes)}}}> ()\n"
                f"  {', '.join(outs)} = Split <axis = {axis}> (x, s)")
    elif how == "num_outputs":
        node = f"{', '.join(outs)} = Split <axis = {axis}, num_outputs = {len(sizes)}> (x)"
    else:
        node = f"{', '.join(outs)} = Split <axis = {axis}> (x)"
    model = parse(f"""<ir_version: 9, opset_import: ["" : {opset}]>
g (float[{_dims(shape)}] x) => ({outputs}) {{
  {node}
}}""")
    feeds = {"x": random_array(shape, np.float32, rng)}
    assert_allclose_for_dtype(compile_and_run(model, feeds), oracle_run(model, feeds))


def test_split_unequal_without_sizes_is_rejected():
    model = parse("""<ir_version: 9, opset_import: ["" : 13]>
g (float[5] x) => (float[2] a, float[2] b) {
  a, b = Split(x)
}""")
    with pytest.raises(ShapeError, match="does not split into 2 equal parts"):
        compile_and_run(model, {"x": np.zeros(5, np.float32)})


@pytest.mark.parametrize("repeats", [(1, 1), (2, 3), (1, 0), (3, 1)], ids=["ones", "both", "zero", "rows"])
@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.bool_], ids=["f32", "i32", "bool"])
def test_tile_matches_onnxruntime(repeats, dtype, rng):
    ty = onnx_type_name(dtype)
    model = parse(f"""<ir_version: 9, opset_import: ["" : 13]>
g ({ty}[2, 3] x) => ({ty}[{2 * repeats[0]}, {3 * repeats[1]}] y) {{
  r = Constant <value = int64[2] {{{_ints(repeats)}}}> ()
  y = Tile(x, r)
}}""")
    feeds = {"x": random_array((2, 3), dtype, rng)}
    assert_allclose_for_dtype(compile_and_run(model, feeds), oracle_run(model, feeds))


# DepthToSpace, SpaceToDepth --------------------------------------------------------------------


@pytest.mark.parametrize("mode,opset", [(None, 1), ("DCR", 11), ("CRD", 13), ("CRD", 28)],
                         ids=["default-opset1", "dcr-opset11", "crd-opset13", "crd-opset28"])
def test_depth_to_space_matches_onnxruntime(mode, opset, rng):
    attrs = "blocksize = 2" + (f', mode = "{mode}"' if mode else "")
    model = parse(f"""<ir_version: 9, opset_import: ["" : {max(opset, 7)}]>
g (float[2, 8, 3, 2] x) => (float[2, 2, 6, 4] y) {{
  y = DepthToSpace <{attrs}> (x)
}}""")
    feeds = {"x": random_array((2, 8, 3, 2), np.float32, rng)}
    assert_allclose_for_dtype(compile_and_run(model, feeds), oracle_run(model, feeds))


@pytest.mark.parametrize("mode,opset", [(None, 13), ("DCR", 28), ("CRD", 28)],
                         ids=["default-opset13", "dcr-opset28", "crd-opset28"])
def test_space_to_depth_matches_reference(mode, opset, rng):
    attrs = "blocksize = 2" + (f', mode = "{mode}"' if mode else "")
    model = parse(f"""<ir_version: 9, opset_import: ["" : {opset}]>
g (float[2, 3, 4, 6] x) => (float[2, 12, 2, 3] y) {{
  y = SpaceToDepth <{attrs}> (x)
}}""")
    feeds = {"x": random_array((2, 3, 4, 6), np.float32, rng)}
    # onnxruntime has no SpaceToDepth mode (SpaceToDepth-28): onnx.reference is the oracle.
    assert_allclose_for_dtype(compile_and_run(model, feeds), reference_run(model, feeds))


def test_space_to_depth_inverts_depth_to_space_crd(rng):
    model = parse("""<ir_version: 9, opset_import: ["" : 28]>
g (float[1, 8, 2, 3] x) => (float[1, 8, 2, 3] y) {
  s = DepthToSpace <blocksize = 2, mode = "CRD"> (x)
  y = SpaceToDepth <blocksize = 2, mode = "CRD"> (s)
}""")
    x = random_array((1, 8, 2, 3), np.float32, rng)
    np.testing.assert_array_equal(compile_and_run(model, {"x": x})[0], x)


def test_depth_to_space_unknown_mode_is_rejected():
    model = parse("""<ir_version: 9, opset_import: ["" : 13]>
g (float[1, 4, 2, 2] x) => (float[1, 1, 4, 4] y) {
  y = DepthToSpace <blocksize = 2, mode = "XYZ"> (x)
}""")
    with pytest.raises(UnsupportedAttributeError, match="mode='XYZ'.*DCR, CRD"):
        compile_and_run(model, {"x": np.zeros((1, 4, 2, 2), np.float32)})


# Reshape ---------------------------------------------------------------------------------------


def test_reshape_head_split_floor_divides_a_symbolic_dim(rng):
    # [B, S, H] -> [B, S, 3, H/3]: H is not provably a multiple of 3, so the -1 is floor(H / 3).
    compiled = check_symbolic(
        18,
        """g (float[B, S, H] x) => (float[B, S, H] y) {
  heads = Constant <value = int64[4] {0, 0, 3, -1}> ()
  back = Constant <value = int64[3] {0, 0, -1}> ()
  split = Reshape(x, heads)
  t = Transpose <perm = [0, 2, 1, 3]> (split)
  u = Transpose <perm = [0, 2, 1, 3]> (t)
  merged = Reshape(u, back)
  y = Add(merged, x)
}""",
        lambda b, s, h: {"x": standard_normal(rng, b, s, h)},
        [(2, 3, 6), (1, 5, 12)],
    )
    # Adding x back assumes 3*floor(H / 3) == H, checked against each feed.
    assert [str(e.rhs) for e in compiled.artifact.dim_equalities] == ["3*floor(H / 3)"]


def test_reshape_minus_one_of_unrelated_symbols_is_computed_at_run_time(rng):
    # The target takes Q's batch (B) for K ([B2, S, H]): K's -1 is B2*S*H / (3*B*S), which
    # no dim expression states; it is divided at run time.
    check_symbolic(
        18,
        """g (float[B, S, H] q, float[B2, S2, H2] k) => (float[B, S2, 3, N] y) {
  s = Shape(q)
  zero = Constant <value = int64[1] {0}> ()
  one = Constant <value = int64[1] {1}> ()
  batch = Slice(s, zero, one)
  tail = Constant <value = int64[3] {0, 3, -1}> ()
  target = Concat <axis = 0> (batch, tail)
  y = Reshape(k, target)
}""",
        lambda b, s, h: {"q": standard_normal(rng, b, s, h), "k": standard_normal(rng, b, s + 1, h)},
        [(2, 3, 6), (3, 2, 9)],
    )


# Split -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("outputs", [2, 3])
def test_split_num_outputs_uneven_symbolic_axis(outputs, rng):
    names = ", ".join(f"y{i}" for i in range(outputs))
    types = ", ".join(f"float[B, D{i}] y{i}" for i in range(outputs))
    check_symbolic(
        18,
        f"""g (float[B, N] x) => ({types}) {{
  {names} = Split <axis = 1, num_outputs = {outputs}> (x)
}}""",
        lambda b, n: {"x": standard_normal(rng, b, n)},
        [(2, 7), (3, 9)],
    )


def test_split_equal_parts_opset13_symbolic_axis(rng):
    check_symbolic(
        13,
        """g (float[N, C] x) => (float[N2, C] a, float[N3, C] b) {
  a, b = Split <axis = 0> (x)
}""",
        lambda n, c: {"x": standard_normal(rng, n, c)},
        [(4, 3), (6, 5)],
    )


def test_split_constant_sizes_on_a_symbolic_other_axis(rng):
    check_symbolic(
        13,
        """g (float[N, 5] x) => (float[N, 2] a, float[N, 3] b) {
  sizes = Constant <value = int64[2] {2, 3}> ()
  a, b = Split <axis = 1> (x, sizes)
}""",
        lambda n: {"x": standard_normal(rng, n, 5)},
        [(1,), (4,)],
    )


def test_split_constant_sizes_on_the_symbolic_axis_falls_back(rng):
    model = parse("""<ir_version: 9, opset_import: ["" : 13]>
g (float[N] x) => (float[A] a, float[B] b) {
  sizes = Constant <value = int64[2] {2, 3}> ()
  a, b = Split <axis = 0> (x, sizes)
}""")
    compiled = onnx_stablehlo.compile(model)
    assert compiled.artifact is None
    assert "ShapeError" in compiled.dynamic_error and "cannot be matched" in compiled.dynamic_error
    feeds = {"x": standard_normal(rng, 5)}
    assert_allclose_for_dtype(compiled.run(feeds), oracle_run(model, feeds))


# DepthToSpace, SpaceToDepth -----------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["DCR", "CRD"])
def test_depth_to_space_symbolic(mode, rng):
    check_symbolic(
        13,
        f"""g (float[N, C, H, W] x) => (float[N, C2, H2, W2] y) {{
  y = DepthToSpace <blocksize = 2, mode = "{mode}"> (x)
}}""",
        lambda n, c, h, w: {"x": standard_normal(rng, n, c, h, w)},
        [(1, 8, 2, 3), (2, 4, 3, 1)],
    )


def test_space_to_depth_symbolic(rng):
    check_symbolic(
        13,
        """g (float[N, C, H, W] x) => (float[N, C2, H2, W2] y) {
  y = SpaceToDepth <blocksize = 2> (x)
}""",
        lambda n, c, h, w: {"x": standard_normal(rng, n, c, h, w)},
        [(1, 3, 4, 6), (2, 1, 2, 8)],
    )
