"""Parity of the indexing family (frontend/lowering/indexing.py) against onnxruntime.

Data and indices flow through graph inputs; inputs the lowering needs at compile time (starts,
ends, axes, steps, pads, depth ...) are Constant nodes.
"""

from __future__ import annotations

from tests.util import random_array, ints_text, dims_text, constant_node

import numpy as np
import pytest

from onnx_stablehlo.errors import NonConstantInputError, UnsupportedAttributeError
from onnx_stablehlo.frontend.importer import import_model
from onnx_stablehlo.frontend.loader import load
from tests.util import assert_allclose_for_dtype, compile_and_run, emitted_text, onnx_type_name, oracle_run, parse

INT64_MAX = np.iinfo(np.int64).max
INT64_MIN = np.iinfo(np.int64).min










# Slice -----------------------------------------------------------------------------------------

SLICES = [
    # (starts, ends, axes, steps)
    ([0, 1], [2, 3], None, None),
    ([1], [-1], [1], None),
    ([-3], [INT64_MAX], [-1], None),
    ([0, 0, 3], [20, 10, 4], [0, 1, 2], [1, 1, 1]),
    ([3], [0], [1], [-1]),
    ([-1], [INT64_MIN], [2], [-2]),
    ([INT64_MAX], [INT64_MIN], [0], [-1]),
    ([1, 0], [1000, 5], [1, 2], [2, 3]),
    ([5], [1], [1], [1]),
    ([-100], [100], [0], None),
]
SLICE_IDS = ["default-axes-steps", "negative-end", "int64-max-end", "clamped-ends", "negative-step",
             "int64-min-end-step-2", "reverse-whole-axis", "strided", "empty", "clamped-start"]


@pytest.mark.parametrize("case", SLICES, ids=SLICE_IDS)
@pytest.mark.parametrize("opset", [10, 11, 13], ids=lambda v: f"opset{v}")
def test_slice_matches_onnxruntime(case, opset, rng):
    starts, ends, axes, steps = case
    if opset == 10 and axes is not None and min(axes) < 0:
        pytest.skip("negative axes exist from Slice-11")
    x = random_array((3, 6, 5), np.float32, rng)
    index = [slice(None)] * 3
    for i, (start, end) in enumerate(zip(starts, ends)):
        axis = axes[i] if axes is not None else i
        index[axis] = slice(start, end, steps[i] if steps is not None else 1)
    result = x[tuple(index)].shape
    lines = [constant_node("s", starts), constant_node("e", ends)]
    args = ["x", "s", "e"]
    if axes is not None or steps is not None:
        lines.append(constant_node("a", axes if axes is not None else range(len(starts))))
        args.append("a")
    if steps is not None:
        lines.append(constant_node("t", steps))
        args.append("t")
    body = "\n  ".join(lines)
    model = parse(f"""<ir_version: 9, opset_import: ["" : {opset}]>
g (float[3, 6, 5] x) => (float[{dims_text(result)}] y) {{
  {body}
  y = Slice({', '.join(args)})
}}""")
    feeds = {"x": x}
    assert_allclose_for_dtype(compile_and_run(model, feeds), oracle_run(model, feeds))


@pytest.mark.parametrize("dtype", [np.int32, np.bool_, np.float16], ids=["i32", "bool", "f16"])
def test_slice_dtypes_and_int32_indices(dtype, rng):
    ty = onnx_type_name(dtype)
    model = parse(f"""<ir_version: 9, opset_import: ["" : 13]>
g ({ty}[4, 6] x) => ({ty}[2, 3] y) {{
  {constant_node("s", [3, 0], "int32")}
  {constant_node("e", [-5, 6], "int32")}
  {constant_node("a", [0, 1], "int32")}
  {constant_node("t", [-2, 2], "int32")}
  y = Slice(x, s, e, a, t)
}}""")
    feeds = {"x": random_array((4, 6), dtype, rng)}
    assert_allclose_for_dtype(compile_and_run(model, feeds), oracle_run(model, feeds))
    text = emitted_text(model)
    assert "stablehlo.reverse" in text and "stablehlo.slice" in text


@pytest.mark.parametrize("opset", [7, 9], ids=lambda v: f"opset{v}")
def test_slice_attribute_form_matches_onnxruntime(opset, rng):
    model = parse(f"""<ir_version: 9, opset_import: ["" : {opset}]>
g (float[3, 6, 5] x) => (float[3, 3, 2] y) {{
  y = Slice <starts = [1, -2], ends = [4, 1000], axes = [1, 2]> (x)
}}""")
    feeds = {"x": random_array((3, 6, 5), np.float32, rng)}
    assert_allclose_for_dtype(compile_and_run(model, feeds), oracle_run(model, feeds))


def test_slice_run_time_starts_are_rejected_by_lower():
    model = parse("""<ir_version: 9, opset_import: ["" : 13]>
g (float[4] x, int64[1] s) => (float[2] y) {
  e = Constant <value = int64[1] {3}> ()
  [slice_1] y = Slice(x, s, e)
}""")
    # lower() has no feeds to specialize on (compile().run() specializes small int inputs).
    with pytest.raises(NonConstantInputError, match="slice_1.*'s'"):
        emitted_text(model)


# Gather ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("axis", [0, 1, -1], ids=["axis0", "axis1", "axis-neg1"])
@pytest.mark.parametrize("index_shape", [(), (4,), (2, 3)], ids=["scalar", "vector", "matrix"])
@pytest.mark.parametrize("index_dtype", [np.int64, np.int32], ids=["i64", "i32"])
def test_gather_run_time_indices_match_onnxruntime(axis, index_shape, index_dtype, rng):
    shape = (3, 4, 5)
    dim = shape[axis]
    result = shape[: axis % 3] + index_shape + shape[axis % 3 + 1 :]
    idx_ty = onnx_type_name(index_dtype)
    model = parse(f"""<ir_version: 9, opset_import: ["" : 13]>
g (float[3, 4, 5] x, {idx_ty}[{dims_text(index_shape)}] i) => (float[{dims_text(result)}] y) {{
  y = Gather <axis = {axis}> (x, i)
}}""".replace(f"{idx_ty}[] i", f"{idx_ty} i"))
    feeds = {"x": random_array(shape, np.float32, rng),
             "i": rng.integers(-dim, dim, index_shape).astype(index_dtype)}
    assert_allclose_for_dtype(compile_and_run(model, feeds), oracle_run(model, feeds))


@pytest.mark.parametrize("indices", [[2], [-1], [0, 1, 2], [3, -4, 1]], ids=["one", "negative", "range", "mixed"])
@pytest.mark.parametrize("opset", [11, 13], ids=lambda v: f"opset{v}")
def test_gather_constant_indices_match_onnxruntime(indices, opset, rng):
    model = parse(f"""<ir_version: 9, opset_import: ["" : {opset}]>
g (float[3, 4] x) => (float[3, {len(indices)}] y) {{
  {constant_node("i", indices)}
  y = Gather <axis = 1> (x, i)
}}""")
    feeds = {"x": random_array((3, 4), np.float32, rng)}
    assert_allclose_for_dtype(compile_and_run(model, feeds), oracle_run(model, feeds))
    contiguous = indices in ([2], [-1], [0, 1, 2])
    assert ("stablehlo.gather" in emitted_text(model)) != contiguous


def test_gather_constant_scalar_index_is_a_slice(rng):
    model = parse("""<ir_version: 9, opset_import: ["" : 13]>
g (float[2, 5, 8] x) => (float[2, 8] y) {
  i = Constant <value = int64 {0}> ()
  y = Gather <axis = 1> (x, i)
}""")
    feeds = {"x": random_array((2, 5, 8), np.float32, rng)}
    assert_allclose_for_dtype(compile_and_run(model, feeds), oracle_run(model, feeds))
    text = emitted_text(model)
    assert "stablehlo.slice" in text and "stablehlo.gather" not in text


def test_gather_embedding_lookup_matches_onnxruntime(rng):
    model = parse("""<ir_version: 9, opset_import: ["" : 13]>
g (int64[2, 7] ids) => (float[2, 7, 16] y) <float[50, 16] table = {1.0}> {
  y = Gather(table, ids)
}""".replace("{1.0}", "{" + ", ".join(["0.5"] * 800) + "}"))
    feeds = {"ids": rng.integers(0, 50, (2, 7)).astype(np.int64)}
    assert_allclose_for_dtype(compile_and_run(model, feeds), oracle_run(model, feeds))


# GatherND, GatherElements ----------------------------------------------------------------------

GATHER_ND = [
    # (data shape, indices shape, batch_dims)
    ((2, 3, 4), (5, 1), 0),
    ((2, 3, 4), (5, 2), 0),
    ((2, 3, 4), (2, 2, 3), 0),
    ((2, 3, 4), (2, 1), 1),
    ((2, 3, 4), (2, 5, 2), 1),
    ((2, 3, 4, 5), (2, 3, 1), 2),
]


@pytest.mark.parametrize("case", GATHER_ND, ids=["slices", "rows", "points", "batch1", "batch1-points",
                                                  "batch2"])
def test_gather_nd_matches_onnxruntime(case, rng):
    shape, index_shape, batch = case
    depth = index_shape[-1]
    result = index_shape[:-1] + shape[batch + depth :]
    bounds = np.array(shape[batch : batch + depth])
    indices = (rng.integers(0, 1 << 20, index_shape) % bounds) - rng.integers(0, 2, index_shape) * bounds
    model = parse(f"""<ir_version: 9, opset_import: ["" : 13]>
g (float[{dims_text(shape)}] x, int64[{dims_text(index_shape)}] i) => (float[{dims_text(result)}] y) {{
  y = GatherND <batch_dims = {batch}> (x, i)
}}""")
    feeds = {"x": random_array(shape, np.float32, rng), "i": indices.astype(np.int64)}
    assert_allclose_for_dtype(compile_and_run(model, feeds), oracle_run(model, feeds))


def test_gather_nd_opset11_matches_onnxruntime(rng):
    model = parse("""<ir_version: 9, opset_import: ["" : 11]>
g (int32[3, 4] x, int64[2, 2] i) => (int32[2] y) {
  y = GatherND(x, i)
}""")
    feeds = {"x": random_array((3, 4), np.int32, rng), "i": np.array([[2, -1], [0, 3]], np.int64)}
    assert_allclose_for_dtype(compile_and_run(model, feeds), oracle_run(model, feeds))


@pytest.mark.parametrize("axis", [0, 1, -1], ids=["axis0", "axis1", "axis-neg1"])
@pytest.mark.parametrize("opset", [11, 13], ids=lambda v: f"opset{v}")
def test_gather_elements_matches_onnxruntime(axis, opset, rng):
    shape, index_shape = (3, 4), (2, 4) if axis == 0 else (3, 2)
    dim = shape[axis]
    model = parse(f"""<ir_version: 9, opset_import: ["" : {opset}]>
g (float[3, 4] x, int64[{dims_text(index_shape)}] i) => (float[{dims_text(index_shape)}] y) {{
  y = GatherElements <axis = {axis}> (x, i)
}}""")
    feeds = {"x": random_array(shape, np.float32, rng), "i": rng.integers(-dim, dim, index_shape).astype(np.int64)}
    assert_allclose_for_dtype(compile_and_run(model, feeds), oracle_run(model, feeds))


# Scatter family --------------------------------------------------------------------------------

REDUCTIONS = [("none", 11), ("none", 16), ("add", 16), ("mul", 16), ("max", 18), ("min", 18)]
REDUCTION_IDS = [f"{r}-opset{v}" for r, v in REDUCTIONS]


@pytest.mark.parametrize("reduction,opset", REDUCTIONS, ids=REDUCTION_IDS)
def test_scatter_nd_matches_onnxruntime(reduction, opset, rng):
    attrs = f'<reduction = "{reduction}">' if opset >= 16 else ""
    model = parse(f"""<ir_version: 9, opset_import: ["" : {opset}]>
g (float[4, 3, 2] x, int64[2, 1] i, float[2, 3, 2] u) => (float[4, 3, 2] y) {{
  y = ScatterND {attrs} (x, i, u)
}}""")
    # Distinct rows (one negative): with reduction=none duplicates are unspecified.
    feeds = {"x": random_array((4, 3, 2), np.float32, rng), "i": np.array([[2], [-4]], np.int64),
             "u": random_array((2, 3, 2), np.float32, rng)}
    assert_allclose_for_dtype(compile_and_run(model, feeds), oracle_run(model, feeds))
    assert "stablehlo.scatter" in emitted_text(model)


@pytest.mark.parametrize("reduction", ["add", "mul", "max", "min"])
def test_scatter_nd_duplicate_points_reduce(reduction, rng):
    model = parse(f"""<ir_version: 9, opset_import: ["" : 18]>
g (int32[3, 3] x, int64[3, 2] i, int32[3] u) => (int32[3, 3] y) {{
  y = ScatterND <reduction = "{reduction}"> (x, i, u)
}}""")
    feeds = {"x": rng.integers(-5, 5, (3, 3)).astype(np.int32), "i": np.array([[1, 1], [1, 1], [0, -1]], np.int64),
             "u": np.array([3, -2, 7], np.int32)}
    assert_allclose_for_dtype(compile_and_run(model, feeds), oracle_run(model, feeds))


@pytest.mark.parametrize("reduction,opset", REDUCTIONS, ids=REDUCTION_IDS)
@pytest.mark.parametrize("axis", [0, -1], ids=["axis0", "axis-neg1"])
def test_scatter_elements_matches_onnxruntime(reduction, opset, axis, rng):
    attrs = f'axis = {axis}' + (f', reduction = "{reduction}"' if opset >= 16 else "")
    model = parse(f"""<ir_version: 9, opset_import: ["" : {opset}]>
g (float[3, 4] x, int64[2, 2] i, float[2, 2] u) => (float[3, 4] y) {{
  y = ScatterElements <{attrs}> (x, i, u)
}}""")
    dim = 3 if axis == 0 else 4
    # Distinct targets per column (axis 0) / row (axis -1), one of them negative.
    indices = np.array([[0, dim - 1], [-1, 1]], np.int64)
    indices = indices if axis == -1 else np.array([[0, -1], [-1, 0]], np.int64)
    feeds = {"x": random_array((3, 4), np.float32, rng), "i": indices, "u": random_array((2, 2), np.float32, rng)}
    assert_allclose_for_dtype(compile_and_run(model, feeds), oracle_run(model, feeds))


@pytest.mark.parametrize("opset", [9, 10], ids=lambda v: f"opset{v}")  # the checker rejects Scatter-11
def test_deprecated_scatter_matches_onnxruntime(opset, rng):
    model = parse(f"""<ir_version: 9, opset_import: ["" : {opset}]>
g (float[3, 3] x, int64[2, 3] i, float[2, 3] u) => (float[3, 3] y) {{
  y = Scatter <axis = 0> (x, i, u)
}}""")
    feeds = {"x": random_array((3, 3), np.float32, rng), "i": np.array([[1, 0, 2], [0, 2, 1]], np.int64),
             "u": random_array((2, 3), np.float32, rng)}
    assert_allclose_for_dtype(compile_and_run(model, feeds), oracle_run(model, feeds))


def test_scatter_unknown_reduction_is_rejected():
    model = parse("""<ir_version: 9, opset_import: ["" : 16]>
g (float[3] x, int64[1, 1] i, float[1] u) => (float[3] y) {
  y = ScatterND <reduction = "max"> (x, i, u)
}""")
    with pytest.raises(UnsupportedAttributeError, match="reduction='max'.*none, add, mul"):
        compile_and_run(model, {"x": np.zeros(3, np.float32), "i": np.zeros((1, 1), np.int64),
                                "u": np.zeros(1, np.float32)})


# Pad -------------------------------------------------------------------------------------------

PADS = [
    ("constant", [1, 2, 0, 3]),
    ("constant", [0, -1, 2, 1]),
    ("reflect", [2, 1, 1, 3]),
    ("edge", [3, 0, 1, 4]),
    ("wrap", [1, 2, 4, 1]),
    ("reflect", [-1, 2, 1, -2]),
]


@pytest.mark.parametrize("case", PADS, ids=["constant", "constant-crop", "reflect", "edge", "wrap",
                                             "reflect-crop"])
def test_pad_modes_match_onnxruntime(case, rng):
    mode, pads = case
    shape = (4, 5)
    result = (shape[0] + pads[0] + pads[2], shape[1] + pads[1] + pads[3])
    model = parse(f"""<ir_version: 9, opset_import: ["" : 19]>
g (float[4, 5] x, float v) => (float[{dims_text(result)}] y) {{
  {constant_node("p", pads)}
  y = Pad <mode = "{mode}"> (x, p, v)
}}""")
    feeds = {"x": random_array(shape, np.float32, rng), "v": np.array(2.5, np.float32)}
    assert_allclose_for_dtype(compile_and_run(model, feeds), oracle_run(model, feeds))
    assert ("stablehlo.pad" in emitted_text(model)) == (mode == "constant")


@pytest.mark.parametrize("axes,pads", [([1], [2, 1]), ([-1, 0], [1, 0, 2, 1])], ids=["one-axis", "negative-axes"])
@pytest.mark.parametrize("mode", ["constant", "edge"])
def test_pad_axes_input_matches_onnxruntime(axes, pads, mode, rng):
    shape = [2, 3, 4]
    result = list(shape)
    for k, axis in enumerate(axes):
        result[axis] += pads[k] + pads[k + len(axes)]
    model = parse(f"""<ir_version: 9, opset_import: ["" : 18]>
g (int32[2, 3, 4] x) => (int32[{dims_text(result)}] y) {{
  {constant_node("p", pads)}
  {constant_node("a", axes)}
  y = Pad <mode = "{mode}"> (x, p, , a)
}}""")
    feeds = {"x": random_array(shape, np.int32, rng)}
    assert_allclose_for_dtype(compile_and_run(model, feeds), oracle_run(model, feeds))


@pytest.mark.parametrize("mode", ["constant", "reflect", "edge"])
def test_pad_attribute_form_matches_onnxruntime(mode, rng):
    model = parse(f"""<ir_version: 9, opset_import: ["" : 7]>
g (float[3, 4] x) => (float[5, 7] y) {{
  y = Pad <mode = "{mode}", pads = [1, 2, 1, 1], value = 1.5> (x)
}}""")
    feeds = {"x": random_array((3, 4), np.float32, rng)}
    assert_allclose_for_dtype(compile_and_run(model, feeds), oracle_run(model, feeds))


def test_pad_wrap_before_opset19_is_rejected():
    model = parse("""<ir_version: 9, opset_import: ["" : 18]>
g (float[3] x) => (float[5] y) {
  p = Constant <value = int64[2] {1, 1}> ()
  y = Pad <mode = "wrap"> (x, p)
}""")
    with pytest.raises(UnsupportedAttributeError, match="mode='wrap'.*constant, reflect, edge"):
        compile_and_run(model, {"x": np.zeros(3, np.float32)})


# Trilu, OneHot, CumSum, ReverseSequence --------------------------------------------------------


@pytest.mark.parametrize("upper", [0, 1], ids=["lower", "upper"])
@pytest.mark.parametrize("k", [None, 0, 2, -1, 9], ids=["no-k", "k0", "k2", "k-neg1", "k-past-end"])
def test_trilu_matches_onnxruntime(upper, k, rng):
    inputs = "x" if k is None else "x, k"
    k_input = "" if k is None else ", int64 k"
    model = parse(f"""<ir_version: 9, opset_import: ["" : 14]>
g (float[2, 4, 5] x{k_input}) => (float[2, 4, 5] y) {{
  y = Trilu <upper = {upper}> ({inputs})
}}""")
    feeds = {"x": random_array((2, 4, 5), np.float32, rng)}
    if k is not None:
        feeds["k"] = np.array(k, np.int64)  # a run-time k
    assert_allclose_for_dtype(compile_and_run(model, feeds), oracle_run(model, feeds))


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


@pytest.mark.parametrize("exclusive", [0, 1], ids=["inclusive", "exclusive"])
@pytest.mark.parametrize("reverse", [0, 1], ids=["forward", "reverse"])
@pytest.mark.parametrize("axis,dtype", [(0, np.float32), (-1, np.float32), (1, np.int64), (1, np.float64)],
                         ids=["axis0-f32", "axis-neg1-f32", "axis1-i64", "axis1-f64"])
def test_cumsum_matches_onnxruntime(exclusive, reverse, axis, dtype, rng):
    ty = onnx_type_name(dtype)
    model = parse(f"""<ir_version: 9, opset_import: ["" : 14]>
g ({ty}[3, 6] x) => ({ty}[3, 6] y) {{
  a = Constant <value = int32 {{{axis}}}> ()
  y = CumSum <exclusive = {exclusive}, reverse = {reverse}> (x, a)
}}""")
    feeds = {"x": random_array((3, 6), dtype, rng)}
    assert_allclose_for_dtype(compile_and_run(model, feeds), oracle_run(model, feeds))


@pytest.mark.parametrize("dtype", [np.int64, np.float32], ids=["i64", "f32"])
def test_cumsum_long_axis_scans_in_log_steps(dtype, rng):
    ty = onnx_type_name(dtype)
    model = parse(f"""<ir_version: 9, opset_import: ["" : 14]>
g ({ty}[2, 37] x) => ({ty}[2, 37] y) {{
  a = Constant <value = int64 {{1}}> ()
  y = CumSum <exclusive = 1> (x, a)
}}""")
    feeds = {"x": random_array((2, 37), dtype, rng)}
    assert_allclose_for_dtype(compile_and_run(model, feeds), oracle_run(model, feeds))
    text = emitted_text(model)
    # One shift for exclusive, then ceil(log2(37)) = 6 shift-and-add steps.
    assert text.count("stablehlo.pad") == 7 and "reduce_window" not in text


@pytest.mark.parametrize("batch_axis,time_axis", [(0, 1), (1, 0)], ids=["batch-major", "time-major"])
def test_reverse_sequence_matches_onnxruntime(batch_axis, time_axis, rng):
    shape = [4, 5, 2]
    shape[batch_axis], shape[time_axis] = 4, 5
    model = parse(f"""<ir_version: 9, opset_import: ["" : 10]>
g (float[{dims_text(shape)}] x, int64[4] lens) => (float[{dims_text(shape)}] y) {{
  y = ReverseSequence <batch_axis = {batch_axis}, time_axis = {time_axis}> (x, lens)
}}""")
    feeds = {"x": random_array(shape, np.float32, rng), "lens": np.array([5, 1, 3, 0], np.int64)}
    assert_allclose_for_dtype(compile_and_run(model, feeds), oracle_run(model, feeds))


# Data-dependent output sizes -------------------------------------------------------------------


@pytest.mark.parametrize("axis", [None, 0, -1], ids=["flat", "axis0", "axis-neg1"])
def test_compress_with_constant_condition_matches_onnxruntime(axis, rng):
    condition = [1, 0, 1]
    count = sum(condition)
    result = {None: f"{count}", 0: f"{count}, 3", -1: f"3, {count}"}[axis]
    attrs = "" if axis is None else f"<axis = {axis}>"
    model = parse(f"""<ir_version: 9, opset_import: ["" : 11]>
g (float[3, 3] x) => (float[{result}] y) {{
  c = Constant <value = bool[3] {{{ints_text(condition)}}}> ()
  y = Compress {attrs} (x, c)
}}""")
    feeds = {"x": random_array((3, 3), np.float32, rng)}
    assert_allclose_for_dtype(compile_and_run(model, feeds), oracle_run(model, feeds))


DATA_DEPENDENT = [
    ("Compress", "float[3] x, bool[3] c", "float[N] y", "y = Compress(x, c)"),
    ("NonZero", "float[3] x", "int64[1, N] y", "y = NonZero(x)"),
    ("Unique", "float[3] x", "float[N] y", "y = Unique(x)"),
]


@pytest.mark.parametrize("op,inputs,outputs,node", DATA_DEPENDENT, ids=[c[0].lower() for c in DATA_DEPENDENT])
def test_data_dependent_sizes_of_run_time_inputs_are_rejected_by_lower(op, inputs, outputs, node):
    model = parse(f"""<ir_version: 9, opset_import: ["" : 13]>
g ({inputs}) => ({outputs}) {{
  {node}
}}""")
    with pytest.raises(NonConstantInputError, match=f"{op}.*one static module needs that input known at compile time"):
        emitted_text(model)


def _lowered_constants(model) -> list[np.ndarray]:
    """Lowers without compile-time folding and reads back the constants @main returns."""
    lowered = import_model(load(model), fold_max_elements=0)
    with lowered.context:
        main = lowered.module.body.operations[0]
        ret = main.regions[0].blocks[0].operations[-1]
        return [np.array(v.owner.attributes["value"]) for v in ret.operands]


def test_non_zero_and_unique_of_constants_run_at_compile_time():
    model = parse("""<ir_version: 9, opset_import: ["" : 13]>
g (float[1] unused) => (int64[2, 4] nz, int64[4] u, int64[4] first, int64[6] inverse, int64[4] counts) {
  c = Constant <value = int64[2, 3] {0, 1, 2, 0, 3, 4}> ()
  d = Constant <value = int64[6] {3, 1, 3, 2, 1, 7}> ()
  nz = NonZero(c)
  u, first, inverse, counts = Unique <sorted = 0> (d)
}""")
    actual = _lowered_constants(model)
    expected = oracle_run(model, {"unused": np.zeros(1, np.float32)})
    assert len(actual) == len(expected)
    for got, want in zip(actual, expected):
        np.testing.assert_array_equal(got, want)
