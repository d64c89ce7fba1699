"""Regressions found by fuzzing (issue 15): each model here once crashed a rule, raised an untyped
exception or gave a wrong answer; now it matches onnxruntime or raises a typed error."""

from __future__ import annotations

import numpy as np
import onnx
import pytest

import onnx_stablehlo
from onnx_stablehlo import errors
from tests.util import TOLERANCES, ort_run

HEADER = '<ir_version: 9, opset_import: ["" : 18]>\n'


def _model(text: str) -> onnx.ModelProto:
    return onnx.parser.parse_model(HEADER + text)


def _assert_matches_onnxruntime(model: onnx.ModelProto, feeds: dict) -> None:
    expected = ort_run(model, feeds)
    got = onnx_stablehlo.compile(model, check=False).run(feeds)
    assert len(got) == len(expected)
    for a, b in zip(got, expected):
        assert a.shape == b.shape and a.dtype == b.dtype
        rtol, atol = TOLERANCES.get(str(b.dtype), (0, 0))
        np.testing.assert_allclose(a, b, rtol=rtol, atol=atol, equal_nan=True)


@pytest.mark.parametrize("alpha", [0.0, float("nan"), float("inf"), -1.0])
def test_celu_with_degenerate_alpha(alpha):
    model = _model("g (float[5] x) => (float[5] y) { y = Celu <alpha = 1.0> (x) }")
    model.graph.node[0].attribute[0].f = alpha
    _assert_matches_onnxruntime(model, {"x": np.array([-2, -0.5, 0, 0.5, 2], np.float32)})


def test_range_with_an_infinite_delta_is_empty_like_onnxruntime():
    model = _model("g (float start, float limit, float delta) => (float[N] y) { y = Range(start, limit, delta) }")
    feeds = {"start": np.array(0, np.float32), "limit": np.array(5, np.float32), "delta": np.array(np.inf, np.float32)}
    _assert_matches_onnxruntime(model, feeds)


@pytest.mark.parametrize("delta", [float("nan"), 0.0])
def test_range_with_a_nan_or_zero_delta_is_a_shape_error(delta):
    model = _model("g (float start, float limit, float delta) => (float[N] y) { y = Range(start, limit, delta) }")
    feeds = {"start": np.array(0, np.float32), "limit": np.array(5, np.float32), "delta": np.array(delta, np.float32)}
    with pytest.raises(errors.ShapeError, match="Range"):
        onnx_stablehlo.compile(model).run(feeds)


def test_range_over_the_constant_limit_is_refused_before_allocating():
    model = _model("g (float start, float limit, float delta) => (float[N] y) { y = Range(start, limit, delta) }")
    feeds = {"start": np.array(0, np.float32), "limit": np.array(1, np.float32), "delta": np.array(1e-30, np.float32)}
    with pytest.raises(errors.ResourceLimitError, match="Range output would have"):
        onnx_stablehlo.compile(model).run(feeds)


@pytest.mark.parametrize("direction", ["forward", "reverse", "bidirectional"])
def test_lstm_with_zero_time_steps(direction):
    d = 2 if direction == "bidirectional" else 1
    model = _model(
        f"g (float[0, 2, 3] x, float[{d}, 16, 3] w, float[{d}, 16, 4] r, float[{d}, 2, 4] h0, float[{d}, 2, 4] c0) "
        f"=> (float[0, {d}, 2, 4] y, float[{d}, 2, 4] yh, float[{d}, 2, 4] yc) "
        f'{{ y, yh, yc = LSTM <hidden_size = 4, direction = "{direction}"> (x, w, r, , , h0, c0) }}'
    )
    rng = np.random.default_rng(0)
    feeds = {
        "x": np.zeros((0, 2, 3), np.float32),
        "w": rng.standard_normal((d, 16, 3)).astype(np.float32),
        "r": rng.standard_normal((d, 16, 4)).astype(np.float32),
        "h0": rng.standard_normal((d, 2, 4)).astype(np.float32),
        "c0": rng.standard_normal((d, 2, 4)).astype(np.float32),
    }
    y, y_h, y_c = onnx_stablehlo.compile(model).run(feeds)
    expected = ort_run(model, feeds)
    assert y.shape == expected[0].shape == (0, d, 2, 4)
    # onnxruntime's Y_h and Y_c are uninitialized memory here (ONNX leaves them undefined):
    # only their shapes compare; ours are zeros.
    assert y_h.shape == expected[1].shape and y_c.shape == expected[2].shape
    np.testing.assert_array_equal(y_h, 0)
    np.testing.assert_array_equal(y_c, 0)


@pytest.mark.parametrize("shape", [(1, 0, 2, 2), (1, 2, 0, 2)])
@pytest.mark.parametrize("mode", ["nearest", "linear", "cubic"])
def test_resize_with_a_zero_size_dim(shape, mode):
    out = (shape[0], shape[1], shape[2] * 2, shape[3] * 2)
    dims = ", ".join(map(str, shape))
    model = _model(
        f"g (float[{dims}] x) => (float[{', '.join(map(str, out))}] y) "
        f'{{ s = Constant <value = float[4] {{1, 1, 2, 2}}> ()\n y = Resize <mode = "{mode}"> (x, , s) }}'
    )
    _assert_matches_onnxruntime(model, {"x": np.zeros(shape, np.float32)})


def test_non_max_suppression_without_optional_inputs_runs_on_the_host():
    model = _model("g (float[1, 3, 4] b, float[1, 1, 3] s) => (int64[N, 3] y) { y = NonMaxSuppression(b, s) }")
    rng = np.random.default_rng(0)
    feeds = {"b": rng.random((1, 3, 4)).astype(np.float32), "s": rng.random((1, 1, 3)).astype(np.float32)}
    _assert_matches_onnxruntime(model, feeds)


def test_non_max_suppression_with_mismatched_shapes_is_a_shape_error():
    model = _model(
        "g (float[1, 3, 4] b, float[1, 1, 2] s) => (int64[N, 3] y) "
        "{ m = Constant <value = int64[1] {2}> ()\n y = NonMaxSuppression(b, s, m) }"
    )
    rng = np.random.default_rng(0)
    feeds = {"b": rng.random((1, 3, 4)).astype(np.float32), "s": rng.random((1, 1, 2)).astype(np.float32)}
    with pytest.raises(errors.ShapeError, match=r"NonMaxSuppression \(opset 18\).*scores must have shape"):
        onnx_stablehlo.compile(model).run(feeds)


@pytest.mark.parametrize("softcap", [-1.0, float("nan"), 0.0, 2.0])
def test_attention_softcap_applies_only_when_positive(softcap):
    model = onnx.parser.parse_model(
        '<ir_version: 10, opset_import: ["" : 23]>\n'
        "g (float[2, 3, 4, 8] q, float[2, 3, 6, 8] k, float[2, 3, 6, 8] v) => (float[2, 3, 4, 8] y) "
        "{ y = Attention <softcap = 1.0> (q, k, v) }"
    )
    model.graph.node[0].attribute[0].f = softcap
    rng = np.random.default_rng(0)
    feeds = {n: rng.standard_normal(s).astype(np.float32) for n, s in
             (("q", (2, 3, 4, 8)), ("k", (2, 3, 6, 8)), ("v", (2, 3, 6, 8)))}
    _assert_matches_onnxruntime(model, feeds)


@pytest.mark.parametrize("indices", [False, True])
def test_max_pool_ignores_nan_like_onnxruntime(indices):
    outputs = "float[1, 1, 3, 3, 3] y" + (", int64[1, 1, 3, 3, 3] i" if indices else "")
    model = _model(
        f"g (float[1, 1, 4, 4, 4] x) => ({outputs}) "
        f"{{ y{', i' if indices else ''} = MaxPool <kernel_shape = [2, 2, 2]> (x) }}"
    )
    x = np.random.default_rng(0).standard_normal((1, 1, 4, 4, 4)).astype(np.float32)
    # onnxruntime's kernels let a NaN win when it is the first (Indices) or the last (no
    # Indices) element of a window in loop order, and ignore it elsewhere; onnx.reference always
    # ignores it, as we do. These NaNs are neither first nor last of any window.
    x[0, 0, 0, 2, 3] = np.nan
    x[0, 0, 2, 3, 3] = np.inf
    x[0, 0, 3, 0, 2] = np.nan
    expected = ort_run(model, {"x": x})
    got = onnx_stablehlo.compile(model).run({"x": x})
    np.testing.assert_array_equal(got[0], expected[0])
    if indices:
        np.testing.assert_array_equal(got[1], expected[1])


def test_an_untyped_exception_outside_a_rule_becomes_a_lowering_error(monkeypatch):
    """Folding and binding a node's outputs run outside the rule: a TypeError there (as the
    fuzzer found in ``lower_node``) is a LoweringError naming the node."""
    from onnx_stablehlo.frontend import graph_lowering

    def broken(self, node, onnx_node, results):
        raise TypeError("unhashable type: 'list'")

    monkeypatch.setattr(graph_lowering.GraphLowering, "bind_outputs", broken)
    model = _model("g (float[2] x) => (float[2] y) { [neg] y = Neg(x) }")
    with pytest.raises(errors.LoweringError, match=r"Neg \(opset 18\) at 'neg': lowering failed \(TypeError"):
        onnx_stablehlo.lower(model)


def test_a_malformed_expansion_becomes_a_lowering_error(monkeypatch):
    """onnx-ir's SerdeError from re-reading an expanded graph is a LoweringError."""
    import onnx_ir

    from onnx_stablehlo.frontend import expand

    def refuse(proto):
        raise onnx_ir.serde.SerdeError("Error calling deserialize_model") from ValueError("bad attribute")

    model = onnx_stablehlo.load(onnx.parser.parse_model(
        '<ir_version: 10, opset_import: ["" : 23]>\n'
        "g (float[1, 2, 4, 8] q, float[1, 2, 6, 8] k, float[1, 2, 6, 8] v) => (float[1, 2, 4, 8] y) "
        "{ y = Attention (q, k, v) }"
    ))
    monkeypatch.setattr(expand.onnx_ir.serde, "deserialize_model", refuse)
    with pytest.raises(errors.LoweringError, match="ValueError: bad attribute"):
        onnx_stablehlo.lower(model)


@pytest.mark.parametrize(
    "values",
    [[-1, -2.1, -1.3, -np.inf, -3.34, -4], [1, np.inf, 2, -1, 0, 3], [1, np.nan, 2, -1, 0, 3],
     [np.inf, -np.inf, 2, -1, 0, 3], [np.nan] * 6],
    ids=["-inf", "inf", "nan", "both-inf", "all-nan"],
)
def test_dynamic_quantize_linear_with_non_finite_inputs(values):
    model = _model("g (float[6] x) => (uint8[6] y, float s, uint8 z) { y, s, z = DynamicQuantizeLinear(x) }")
    _assert_matches_onnxruntime(model, {"x": np.array(values, np.float32)})


@pytest.mark.skipif(__import__("platform").machine() not in ("x86_64", "AMD64"),
                    reason="onnxruntime's double -> int cast of NaN is the x86-64 'integer indefinite'")
@pytest.mark.parametrize("dtype", ["int32", "int64"])
def test_pow_of_an_integer_base_with_non_finite_float_exponents(dtype):
    model = _model(f"g ({dtype}[6] x, float[6] y) => ({dtype}[6] z) {{ z = Pow(x, y) }}")
    feeds = {"x": np.array([1, 2, 3, -2, 10, -10], dtype),
             "y": np.array([np.nan, np.inf, -np.inf, 0.5, 40, 41], np.float32)}
    _assert_matches_onnxruntime(model, feeds)


def test_a_node_omitting_a_required_input_is_not_shape_inferred_by_onnx():
    """Found by tools/fuzz.py (seed 6, case 1206): onnx's shape inference segfaulted on a
    TreeEnsemble whose input was rewired to ''; run in a subprocess so a regression cannot take
    the test process down."""
    import subprocess
    import sys
    import textwrap

    script = textwrap.dedent(
        """
        import numpy as np, onnx, onnx.helper as oh
        import onnx_stablehlo
        from onnx_stablehlo import errors
        node = oh.make_node("TreeEnsemble", [""], ["Y"], domain="ai.onnx.ml", n_targets=1,
                            leaf_targetids=[0, 0], leaf_weights=onnx.numpy_helper.from_array(np.array([1.0, 2.0])),
                            nodes_falseleafs=[1], nodes_falsenodeids=[1], nodes_featureids=[0],
                            nodes_modes=onnx.numpy_helper.from_array(np.array([0], np.uint8)),
                            nodes_splits=onnx.numpy_helper.from_array(np.array([0.5])),
                            nodes_trueleafs=[1], nodes_truenodeids=[0], tree_roots=[0])
        graph = oh.make_graph([node], "g", [oh.make_tensor_value_info("X", onnx.TensorProto.DOUBLE, [3, 2])],
                              [oh.make_tensor_value_info("Y", onnx.TensorProto.DOUBLE, [3, 1])])
        model = oh.make_model(graph, opset_imports=[oh.make_opsetid("", 21), oh.make_opsetid("ai.onnx.ml", 5)])
        try:
            onnx_stablehlo.compile(model, check=False)
        except errors.OnnxStableHLOError as exc:
            print("typed", type(exc).__name__)
        """
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.startswith("typed"), done.stdout


@pytest.mark.parametrize(
    ("dtype", "rank", "attrs", "indices"),
    [
        ("double", 2, "", False),  # onnxruntime's generic kernel: a first NaN wins
        ("float", 3, "", True),  # Indices: the generic kernel too
        ("float", 2, ", dilations = [2, 2]", False),  # dilations: the generic kernel too
        ("float16", 1, ", pads = [1, 1]", False),  # MLAS-like: NaN ignored, -inf start
        ("float", 1, ", strides = [2]", False),  # MLAS 1D: NaN ignored, finite lowest start
    ],
)
def test_max_pool_nan_follows_onnxruntime_kernels(dtype, rank, attrs, indices):
    """Fuzz seed 7 (test_maxpool_3d_dilations_use_ref_impl_large, nan_inputs) and the MaxPool NaN
    rule of issue 15: NaN wins a window exactly where onnxruntime's kernel lets it."""
    np_dtype = {"double": np.float64, "float": np.float32, "float16": np.float16}[dtype]
    shape = [2, 2] + [6] * rank
    outputs = f"{dtype} y" + (", int64 i" if indices else "")
    model = _model(
        f"g ({dtype}[{', '.join(map(str, shape))}] x) => ({outputs}) "
        f"{{ y{', i' if indices else ''} = MaxPool <kernel_shape = [{', '.join(['2'] * rank)}]{attrs}> (x) }}"
    )
    rng = np.random.default_rng(15)
    x = rng.standard_normal(shape).astype(np_dtype)
    x.reshape(-1)[rng.random(x.size) < 0.4] = np.nan
    x.reshape(-1)[:3] = np.nan  # a window of NaNs
    expected = ort_run(model, {"x": x})
    got = onnx_stablehlo.compile(model, check=False).run({"x": x})
    np.testing.assert_array_equal(got[0], expected[0])
    if indices:
        np.testing.assert_array_equal(got[1], expected[1])


@pytest.mark.parametrize(
    ("dtype", "attrs"),
    [("double", ""), ("float", ", dilations = [2, 2]"), ("double", ", strides = [2, 1], pads = [1, 0, 1, 1]")],
)
def test_max_pool_nan_first_element_rule_holds_on_symbolic_dims(dtype, attrs):
    """The generic-kernel NaN rule with symbolic batch and spatial dims: one executable for every
    shape, and a NaN wins a window exactly when it is the window's first in-bounds element."""
    np_dtype = {"double": np.float64, "float": np.float32}[dtype]
    model = _model(
        f"g ({dtype}[N, 2, H, W] x) => ({dtype}[N, 2, P, Q] y) {{ y = MaxPool <kernel_shape = [2, 3]{attrs}> (x) }}"
    )
    compiled = onnx_stablehlo.compile(model, check=False)
    assert compiled.artifact is not None, compiled.dynamic_error  # lowered once, symbolically
    rng = np.random.default_rng(16)
    for shape in [(1, 2, 6, 7), (3, 2, 9, 5)]:
        x = rng.standard_normal(shape).astype(np_dtype)
        x.reshape(-1)[rng.random(x.size) < 0.4] = np.nan
        x[0, 0, 0, :3] = np.nan  # a window of NaNs
        np.testing.assert_array_equal(compiled.run({"x": x})[0], ort_run(model, {"x": x})[0])
    assert compiled.compile_count == 2


@pytest.mark.parametrize("reduction", ["max", "min"])
@pytest.mark.parametrize("axis", [0, 1])
def test_scatter_elements_max_min_with_nan_folds_like_onnxruntime(reduction, axis):
    """Fuzz seed 6 (test_scatter_elements_with_reduction_max, nan_inputs): onnxruntime folds the
    updates in order with ``a = u unless a > u``, so a later update replaces a NaN and a last NaN
    update wins; XLA's max/min propagated every NaN."""
    index_shape = "3, 5" if axis else "6, 4"
    model = _model(
        f"g (float[3, 4] d, int64[{index_shape}] i, float[{index_shape}] u) => (float[3, 4] y) "
        f'{{ y = ScatterElements <axis = {axis}, reduction = "{reduction}"> (d, i, u) }}'
    )
    rng = np.random.default_rng(6)
    shape = (3, 5) if axis else (6, 4)
    for _ in range(5):
        d = rng.standard_normal((3, 4)).astype(np.float32)
        u = rng.standard_normal(shape).astype(np.float32)
        d[rng.random(d.shape) < 0.3] = np.nan
        u[rng.random(u.shape) < 0.3] = np.nan
        u[rng.random(u.shape) < 0.1] = np.inf
        i = rng.integers(-(4 if axis else 3), 4 if axis else 3, shape).astype(np.int64)
        feeds = {"d": d, "i": i, "u": u}
        np.testing.assert_array_equal(onnx_stablehlo.compile(model).run(feeds)[0], ort_run(model, feeds)[0])


@pytest.mark.parametrize("reduction", ["max", "min"])
def test_scatter_elements_nan_fold_holds_on_symbolic_dims(reduction):
    """onnxruntime's NaN fold with symbolic data and index dims: one executable, every shape."""
    model = _model(
        f"g (float[A, 4] d, int64[A, C] i, float[A, C] u) => (float[A, 4] y) "
        f'{{ y = ScatterElements <axis = 1, reduction = "{reduction}"> (d, i, u) }}'
    )
    compiled = onnx_stablehlo.compile(model, check=False)
    assert compiled.artifact is not None, compiled.dynamic_error
    rng = np.random.default_rng(61)
    for shape in [(3, 5), (2, 7), (3, 5)]:
        d = rng.standard_normal((shape[0], 4)).astype(np.float32)
        u = rng.standard_normal(shape).astype(np.float32)
        d[rng.random(d.shape) < 0.3] = np.nan
        u[rng.random(u.shape) < 0.3] = np.nan
        feeds = {"d": d, "i": rng.integers(-4, 4, shape).astype(np.int64), "u": u}
        np.testing.assert_array_equal(compiled.run(feeds)[0], ort_run(model, feeds)[0])
    assert compiled.compile_count == 2


@pytest.mark.parametrize(
    "attrs", ["strides = [2, 2]", "strides = [2, 1], pads = [1, 1, 1, 1]", "group = 2, dilations = [2, 2]"]
)
def test_conv_transpose_with_non_finite_weights_reaches_only_col2im_outputs(attrs):
    """Fuzz seed 21 case 1282 (test_convtranspose_3d, nan_inputs) and issue 15: NaN/inf weights
    multiplied the padding zeros of the dilated input (0 x NaN); onnxruntime's col2im only
    multiplies real inputs. Infinite and NaN inputs and weights of both signs, and zeros."""
    model = _model(
        f"g (float[2, 4, 4, 4] x, float[4, 3, 3, 3] w) => (float y) {{ y = ConvTranspose <{attrs}> (x, w) }}"
    )
    rng = np.random.default_rng(1282)
    for step in range(3):
        x = rng.standard_normal((2, 4, 4, 4)).astype(np.float32)
        w = rng.standard_normal((4, 3, 3, 3)).astype(np.float32)
        for value, share in ((np.nan, 0.1), (np.inf, 0.05), (-np.inf, 0.05), (0.0, 0.05)):
            w.reshape(-1)[rng.random(w.size) < share] = value
            if step == 1:
                x.reshape(-1)[rng.random(x.size) < share] = value
        if step == 2:
            w[...] = np.where(np.isfinite(w), w, 0.5)  # finite W: the plain branch
            x.reshape(-1)[rng.random(x.size) < 0.1] = np.inf
        feeds = {"x": x, "w": w}
        _assert_matches_onnxruntime(model, feeds)


@pytest.mark.parametrize("attrs", ["strides = [2, 2]", "group = 2, strides = [2, 1], pads = [1, 0, 0, 1]"])
def test_conv_transpose_non_finite_weights_rule_holds_on_symbolic_dims(attrs):
    """The col2im NaN/inf rule with symbolic batch and spatial dims (a dynamic-batch decoder):
    one executable for every shape, outputs equal onnxruntime's, the finite branch included."""
    model = _model(
        f"g (float[N, 4, H, W] x, float[4, 3, 3, 3] w) => (float[N, M, P, Q] y) {{ y = ConvTranspose <{attrs}> (x, w) }}"
    )
    compiled = onnx_stablehlo.compile(model, check=False)
    assert compiled.artifact is not None, compiled.dynamic_error
    rng = np.random.default_rng(1283)
    for step, shape in enumerate([(1, 4, 4, 5), (3, 4, 6, 3), (2, 4, 5, 5)]):
        x = rng.standard_normal(shape).astype(np.float32)
        w = rng.standard_normal((4, 3, 3, 3)).astype(np.float32)
        if step < 2:
            for value, share in ((np.nan, 0.1), (np.inf, 0.05), (-np.inf, 0.05), (0.0, 0.05)):
                w.reshape(-1)[rng.random(w.size) < share] = value
                x.reshape(-1)[rng.random(x.size) < share / 2] = value
        feeds = {"x": x, "w": w}
        got, expected = compiled.run(feeds)[0], ort_run(model, feeds)[0]
        np.testing.assert_array_equal(np.isnan(got), np.isnan(expected))  # NaN exactly where ORT has it
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5, equal_nan=True)
    assert compiled.compile_count == 3


@pytest.mark.parametrize(
    ("mode", "coordinates", "scales"),
    [
        ("linear", "half_pixel", [1, 1, 2, 2]),
        ("linear", "align_corners", [1, 1, 2, 3]),
        ("cubic", "asymmetric", [1, 1, 2, 2]),
        ("cubic", "half_pixel", [1, 1, 1.7, 3]),
    ],
)
def test_resize_with_nan_and_inf_touches_only_the_taps_onnxruntime_uses(mode, coordinates, scales):
    """Issue 15: the interpolation matrix summed every input of an axis, so one NaN or inf
    reached every output of its row; onnxruntime multiplies only the taps around each source
    position (a zero-weight one included: 0 x inf = NaN). The non-finite values sit inside the
    input: at the edges onnxruntime's linear kernel clamps the source position first and
    touches other taps than onnx.reference (they disagree there, and onnx.reference saturates
    inf to the float maximum), docs/fuzzing.md."""
    roi = "0, 0, 0.1, 0.2, 1, 1, 0.9, 0.7" if coordinates == "tf_crop_and_resize" else ""
    model = _model(
        f"g (float[1, 2, 5, 6] x) => (float[n, c, h, w] y) "
        f"<float[{8 if roi else 0}] roi = {{{roi}}}, float[4] scales = {{{', '.join(map(str, scales))}}}> "
        f'{{ y = Resize <mode = "{mode}", coordinate_transformation_mode = "{coordinates}", '
        f"extrapolation_value = 12.5> (x, roi, scales) }}"
    )
    compiled = onnx_stablehlo.compile(model, check=False)
    rng = np.random.default_rng(279)
    for step in range(6):
        x = rng.standard_normal((1, 2, 5, 6)).astype(np.float32)
        x[0, step % 2, rng.integers(1, 4), rng.integers(1, 5)] = (np.nan, np.inf, -np.inf)[step % 3]
        np.testing.assert_allclose(compiled.run({"x": x})[0], ort_run(model, {"x": x})[0], rtol=1e-4, atol=1e-4,
                                   equal_nan=True)


@pytest.mark.parametrize(("inverse", "onesided", "bins"), [(1, 1, 8), (0, 0, 5), (1, 0, 9)])
def test_dft_with_nan_or_inf_is_nan_throughout_like_onnxruntime_bluestein(inverse, onesided, bins):
    """Fuzz seed 5 (DFT inverse onesided with NaN, issue 15): for a length that is not a power of
    two onnxruntime's FFT makes a signal with any NaN or inf NaN throughout; the matrix product
    gave inf or finite values at some outputs."""
    model = _model(
        f"g (float[3, {bins}, 2] x) => (float[a, b, c] y) "
        f"{{ y = DFT <inverse = {inverse}, onesided = {onesided}, axis = 1> (x) }}"
    ).SerializeToString()
    model = onnx.load_from_string(model)
    model.opset_import[0].version = 17
    rng = np.random.default_rng(5)
    compiled = onnx_stablehlo.compile(model, check=False)
    for step in range(4):
        x = rng.standard_normal((3, bins, 2)).astype(np.float32)
        x[step % 3, rng.integers(bins), rng.integers(2)] = (np.nan, np.inf, -np.inf)[step % 3]
        np.testing.assert_allclose(compiled.run({"x": x})[0], ort_run(model, {"x": x})[0], rtol=1e-4, atol=1e-4,
                                   equal_nan=True)


@pytest.mark.parametrize("opset", [18, 21])
@pytest.mark.parametrize("factor", [1.0, 1e20, 1e30])
def test_group_normalization_overflows_like_its_function_body(opset, factor):
    """Fuzz seed 7 (test_group_normalization_*, extreme_inputs; issue 15): onnxruntime and
    onnx.reference compute the variance as mean(x^2) - mean(x)^2, which is NaN for a group
    whose mean(x)^2 overflows float32 and inf (the output then the bias) when only mean(x^2)
    does; the centered variance stays finite in neither case."""
    channels = 4 if opset == 21 else 2
    model = onnx.parser.parse_model(
        f'<ir_version: 9, opset_import: ["" : {opset}]>\n'
        f"g (float[2, 4, 3, 3] x, float[{channels}] s, float[{channels}] b) => (float[2, 4, 3, 3] y) "
        "{ y = GroupNormalization <num_groups = 2, epsilon = 1e-5> (x, s, b) }"
    )
    rng = np.random.default_rng(7)
    feeds = {
        "x": (rng.standard_normal((2, 4, 3, 3)) * factor).astype(np.float32),
        "s": rng.standard_normal(channels).astype(np.float32),
        "b": rng.standard_normal(channels).astype(np.float32),
    }
    _assert_matches_onnxruntime(model, feeds)


@pytest.mark.parametrize("step", [-(2**63), 2**63 - 1, -(2**62), 9])
def test_slice_with_a_step_past_the_dim(step):
    """Fuzz seed 50 case 2154 (test_slice_neg, extreme_inputs): a step of -2^63 has no int64
    negation, and the lowering failed building the slice; a step past the dim takes one element."""
    model = _model(
        "g (float[20, 10, 5] x, int64[1] starts, int64[1] ends, int64[1] axes, int64[1] steps) => (float y) "
        "{ y = Slice (x, starts, ends, axes, steps) }"
    )
    x = np.random.default_rng(2154).standard_normal((20, 10, 5)).astype(np.float32)
    for start, end in ((0, -1), (-1, -(2**63)), (7, 2), (3, 2**62)):  # (3, 2^63-1): ORT takes one element, onnx.reference none
        feeds = {"x": x, "starts": np.array([start]), "ends": np.array([end]), "axes": np.array([1]), "steps": np.array([step])}
        _assert_matches_onnxruntime(model, feeds)


@pytest.mark.parametrize("op", ["ReduceMin", "ReduceMax", "ReduceMean", "ArgMax", "ArgMin"])
@pytest.mark.parametrize("keepdims", [3, -1, 2**31, 1, 0])
def test_keepdims_other_than_zero_or_one_is_false_like_onnxruntime(op, keepdims):
    """Fuzz seed 50 cases 3721, 6194, 7174 (DynamicQuantizeLinear's expanded function with
    ReduceMin/ReduceMax keepdims 3, -1, 2^31): onnxruntime keeps the dims only for keepdims=1;
    we kept them for any non-zero value, so y_scale came out [1] against a scalar."""
    axis = "axis = 1" if op.startswith("Arg") else "axes = [1]"
    model = onnx.parser.parse_model(
        '<ir_version: 9, opset_import: ["" : 13]>\n'
        f"g (float[2, 3] x) => (y) {{ y = {op} <{axis}, keepdims = {keepdims}> (x) }}"
    )
    feeds = {"x": np.random.default_rng(3721).standard_normal((2, 3)).astype(np.float32)}
    _assert_matches_onnxruntime(model, feeds)


@pytest.mark.parametrize("dtype", ["float", "float16", "double"])
@pytest.mark.parametrize("attrs", ["strides = [2, 2], ceil_mode = 1", "strides = [1, 1]", "strides = [1, 2]"])
def test_max_pool_with_a_one_element_window_returns_the_element(dtype, attrs):
    """Fuzz seed 50 #20751 (test_maxpool_2d_ceil_output_size_reduce_by_one, nan_inputs): a 1x1
    kernel over -inf gave the float32 MLAS start value -3.4e38; onnxruntime returns the element
    itself, NaN and -inf included."""
    np_dtype = {"double": np.float64, "float": np.float32, "float16": np.float16}[dtype]
    model = _model(f"g ({dtype}[1, 2, 3, 4] x) => ({dtype} y) {{ y = MaxPool <kernel_shape = [1, 1], {attrs}> (x) }}")
    x = np.random.default_rng(20751).standard_normal((1, 2, 3, 4)).astype(np_dtype)
    x.reshape(-1)[::3] = np.nan
    x.reshape(-1)[1::5] = -np.inf
    np.testing.assert_array_equal(onnx_stablehlo.compile(model, check=False).run({"x": x})[0], ort_run(model, {"x": x})[0])


def test_an_output_of_more_than_64_dims_is_a_typed_error():
    """Fuzz seed 50 #47972 (a rewired expanded LayerNormalization): XLA ran a graph whose output
    has more dims than numpy holds, and numpy's raw ValueError reached the caller. Every result
    goes through pjrt.to_host (the checked path and the call plans), which now refuses it."""
    from onnx_stablehlo.runtime import pjrt

    class DeviceResult:  # what XLA hands back: a 65-dim array numpy cannot hold
        shape = (1,) * 64 + (2,)

    with pytest.raises(errors.ExecutionError, match="65 dims"):
        pjrt.to_host([np.zeros(2, np.float32), DeviceResult()])
    assert pjrt.to_host([np.arange(3)])[0].tolist() == [0, 1, 2]
