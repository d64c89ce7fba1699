"""Parity of the slicing family (frontend/lowering/slicing.py: Slice, Pad, Trilu, ReverseSequence)
against onnxruntime, and CenterCropPad (expanded from its ONNX function body into Slice and Pad).

Data flows through graph inputs; inputs the lowering needs at compile time (starts, ends, axes,
steps, pads) are Constant nodes.

Symbolic-dim tests (``check_symbolic``) compile one model with its ``dim_param`` dims kept as
``?``, keep that artifact through runs at two shapes, and compare each run with the oracle.
"""

from __future__ import annotations

import numpy as np
import pytest

import onnx_stablehlo
from onnx_stablehlo.errors import NonConstantInputError, UnsupportedAttributeError
from tests.util import (assert_allclose_for_dtype, check_symbolic, compile_and_run, constant_node, dims_text,
                        emitted_text, node_model_text, normal_feeds, onnx_type_name, oracle_run, ort_run, parse,
                        random_array)

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


# --------------------------------------------------------------------------------------------
# CenterCropPad (expanded from its ONNX function body; no rule of its own)


@pytest.mark.parametrize(
    "x_shape,shape,axes",
    [((5, 7, 3), [3, 9], [0, 1]), ((2, 4, 6), [5, 3], [-1, 1]), ((6, 4), [4, 6], None)],
    ids=["crop-pad", "negative-axes", "all-axes"],
)
def test_center_crop_pad_matches_onnxruntime(x_shape, shape, axes, rng):
    out = list(x_shape)
    for axis, size in zip(axes if axes is not None else range(len(x_shape)), shape):
        out[axis] = size
    attributes = {"axes": axes} if axes is not None else {}
    inputs = [("x", np.float32, x_shape), ("shape", np.int64, (len(shape),))]
    model = parse(node_model_text("CenterCropPad", 18, inputs, ("y", np.float32, out), attributes, constants={"shape": shape}))
    feeds = {"x": rng.standard_normal(x_shape).astype(np.float32)}
    assert_allclose_for_dtype(compile_and_run(model, feeds), ort_run(model, feeds))


@pytest.mark.parametrize("upper", [0, 1])
def test_trilu(upper, rng):
    def feeds(n, m):
        return {"x": rng.standard_normal((2, n, m)).astype(np.float32), "k": np.array(1 - 2 * upper, np.int64)}

    check_symbolic(
        18,
        f"g (float[2, N, M] x, int64 k) => (float[2, N, M] y) {{ y = Trilu <upper = {upper}> (x, k) }}",
        feeds,
        [(3, 4), (5, 2)],
    )


@pytest.mark.parametrize("batch_axis,time_axis", [(1, 0), (0, 1)])
def test_reverse_sequence(batch_axis, time_axis, rng):
    def feeds(t, b):
        shape = (t, b, 2) if time_axis == 0 else (b, t, 2)
        return {
            "x": rng.standard_normal(shape).astype(np.float32),
            "l": rng.integers(1, t + 1, b).astype(np.int64),
        }

    shape = "[T, B, 2]" if time_axis == 0 else "[B, T, 2]"
    check_symbolic(
        18,
        f"""g (float{shape} x, int64[B] l) => (float{shape} y) {{
  y = ReverseSequence <batch_axis = {batch_axis}, time_axis = {time_axis}> (x, l)
}}""",
        feeds,
        [(4, 3), (6, 2)],
    )


def test_reverse_sequence_with_symbolic_feature_dim(rng):
    def feeds(t, f):
        return {"x": rng.standard_normal((t, 2, f)).astype(np.float32), "l": np.array([t, 1], np.int64)}

    check_symbolic(
        18,
        """g (float[T, 2, F] x, int64[2] l) => (float[T, 2, F] y) {
  y = ReverseSequence <batch_axis = 1, time_axis = 0> (x, l)
}""",
        feeds,
        [(3, 4), (5, 1)],
    )


@pytest.mark.parametrize(
    "start,end,step",
    [
        (-1, -9223372036854775807, -1),  # flip
        (-2, 0, -1),
        (9223372036854775807, -9223372036854775808, -2),
        (1, 100, 2),
        (2, -1, 1),
    ],
    ids=["flip", "neg-start-to-0", "max-to-min-step2", "step2", "positive"],
)
def test_slice_on_symbolic_axis(start, end, step, rng):
    def feeds(n):
        return {"x": rng.standard_normal((n, 3)).astype(np.float32)}

    check_symbolic(
        18,
        f"""g (float[N, 3] x) => (float[M, 3] y) {{
  s = Constant <value = int64[1] {{{start}}}> ()
  e = Constant <value = int64[1] {{{end}}}> ()
  a = Constant <value = int64[1] {{0}}> ()
  t = Constant <value = int64[1] {{{step}}}> ()
  y = Slice(x, s, e, a, t)
}}""",
        feeds,
        [(5,), (8,)],
    )


def test_slice_negative_step_on_static_axis_of_dynamic_input(rng):
    def feeds(n):
        return {"x": rng.standard_normal((n, 6)).astype(np.float32)}

    check_symbolic(
        18,
        """g (float[N, 6] x) => (float[N, 3] y) {
  s = Constant <value = int64[1] {4}> ()
  e = Constant <value = int64[1] {-7}> ()
  a = Constant <value = int64[1] {1}> ()
  t = Constant <value = int64[1] {-2}> ()
  y = Slice(x, s, e, a, t)
}""",
        feeds,
        [(2,), (3,)],
    )


def test_slice_1_attributes_on_symbolic_dims(rng):
    model = parse(
        '<ir_version: 3, opset_import: ["" : 1]>\n'
        "g (float[N, 4] x) => (float[M, 2] y) { y = Slice <starts = [1, 1], ends = [1000, 3]> (x) }"
    )
    compiled = onnx_stablehlo.compile(model)
    assert compiled.artifact is not None, compiled.dynamic_error
    for n in (3, 6):
        x = rng.standard_normal((n, 4)).astype(np.float32)
        (y,) = compiled.run({"x": x})
        np.testing.assert_array_equal(y, x[1:1000, 1:3])
    assert compiled.artifact is not None, compiled.dynamic_error


# Pad ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["reflect", "edge", "wrap"])
def test_pad_modes_with_symbolic_dims(mode, rng):
    text = f"""<ir_version: 9, opset_import: ["" : 19]>
g (float[N, C] x) => (float[M, D] y) {{
  pads = Constant <value = int64[4] {{1, 2, 0, 3}}> ()
  y = Pad <mode = "{mode}"> (x, pads)
}}"""
    compiled = check_symbolic(None, text, normal_feeds("x"), [(3, 4), (6, 5)], rng, oracle=ort_run)
    assert "dynamic_iota" in compiled.artifact.text


@pytest.mark.parametrize(
    "mode, end",
    # onnxruntime wraps around the cropped axis (the static rule and numpy.pad around the whole
    # one), so wrap is checked without cropping.
    [("reflect", -1), ("edge", -1), ("wrap", 2)],
)
def test_pad_modes_negative_pads_and_static_axis(mode, end, rng):
    # axis 1 is static (compile-time map into a dynamic_gather), axis 2 symbolic (cropped at the end)
    text = f"""<ir_version: 9, opset_import: ["" : 19]>
g (float[N, 3, W] x) => (float[N, E, F] y) {{
  pads = Constant <value = int64[6] {{0, 2, 3, 0, 1, {end}}}> ()
  y = Pad <mode = "{mode}"> (x, pads)
}}"""
    check_symbolic(None, text, normal_feeds("x"), [(2, 3, 5), (1, 3, 9)], rng, oracle=ort_run)


def test_pad_reflect_single_element_axis(rng):
    text = """<ir_version: 9, opset_import: ["" : 18]>
g (float[N] x) => (float[M] y) {
  pads = Constant <value = int64[2] {2, 3}> ()
  y = Pad <mode = "edge"> (x, pads)
}"""
    check_symbolic(None, text, normal_feeds("x"), [(1,), (4,)], rng, oracle=ort_run)
