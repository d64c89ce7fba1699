"""Parity of the cumulative family (frontend/lowering/cumulative.py: CumSum, CumProd) against
onnxruntime.

Data flows through graph inputs; the axis is a Constant node.

Symbolic-dim tests (``check_symbolic``) compile one model with its ``dim_param`` dims kept as
``?``, keep that artifact through runs at two shapes, and compare each run with the oracle.
"""

from __future__ import annotations

import numpy as np
import pytest

from tests.util import (assert_allclose_for_dtype, check_symbolic, compile_and_run, emitted_text, onnx_type_name,
                        oracle_run, parse, random_array)


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


# CumProd -------------------------------------------------------------------------------------


@pytest.mark.parametrize("reverse", [0, 1], ids=["forward", "reverse"])
@pytest.mark.parametrize("exclusive", [0, 1], ids=["inclusive", "exclusive"])
@pytest.mark.parametrize("axis", [0, 1, -1], ids=["axis0", "axis1", "axis-1"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64], ids=["f32", "f64", "i32", "i64"])
def test_cum_prod_matches_onnxruntime(dtype, axis, exclusive, reverse, rng):
    ty = onnx_type_name(dtype)
    model = parse(f"""<ir_version: 13, opset_import: ["" : 26]>
g ({ty}[4, 9] x) => ({ty}[4, 9] y) {{
  a = Constant <value = int64 {{{axis}}}> ()
  y = CumProd <exclusive = {exclusive}, reverse = {reverse}> (x, a)
}}""")
    if np.issubdtype(dtype, np.integer):
        x = rng.integers(-3, 4, (4, 9)).astype(dtype)
    else:
        x = rng.uniform(0.5, 1.5, (4, 9)).astype(dtype) * rng.choice([-1, 1], (4, 9)).astype(dtype)
    feeds = {"x": x}
    assert_allclose_for_dtype(compile_and_run(model, feeds), oracle_run(model, feeds))


def test_cum_prod_is_a_log_step_scan():
    model = parse("""<ir_version: 13, opset_import: ["" : 26]>
g (float[2, 9] x) => (float[2, 9] y) {
  a = Constant <value = int64 {1}> ()
  y = CumProd (x, a)
}""")
    text = emitted_text(model)
    assert text.count("stablehlo.multiply") == 4  # shifts 1, 2, 4, 8 cover 9 entries
    assert "stablehlo.pad" in text and "dense<1.000000e+00>" in text


@pytest.mark.parametrize("exclusive,reverse", [(0, 0), (1, 0), (0, 1), (1, 1)])
def test_cumsum_along_symbolic_axis(exclusive, reverse, rng):
    def feeds(n, b):
        return {"x": rng.standard_normal((b, n, 2)).astype(np.float32)}

    check_symbolic(
        18,
        f"""g (float[B, N, 2] x) => (float[B, N, 2] y) {{
  a = Constant <value = int64 {{1}}> ()
  y = CumSum <exclusive = {exclusive}, reverse = {reverse}> (x, a)
}}""",
        feeds,
        [(1, 2), (7, 1), (16, 3)],
    )


def test_cumsum_int_along_static_axis_with_symbolic_batch(rng):
    def feeds(b):
        return {"x": rng.integers(-5, 5, (b, 6)).astype(np.int64)}

    compiled = check_symbolic(
        18,
        """g (int64[B, 6] x) => (int64[B, 6] y) {
  a = Constant <value = int64 {-1}> ()
  y = CumSum(x, a)
}""",
        feeds,
        [(2,), (5,)],
    )
    assert "stablehlo.while" not in compiled.artifact.text  # static axis: the log-steps stay pads


# CumProd, BitCast, TensorScatter ------------------------------------------------------------------


@pytest.mark.parametrize("axis", [0, 1])
@pytest.mark.parametrize("exclusive, reverse", [(0, 0), (1, 1)])
def test_cum_prod_symbolic(axis, exclusive, reverse, rng):
    check_symbolic(
        26,
        f"""g (double[N, M] x) => (double[N, M] y) {{
  axis = Constant <value = int64 {{{axis}}}> ()
  y = CumProd <exclusive = {exclusive}, reverse = {reverse}> (x, axis)
}}""",
        lambda n, m: {"x": rng.uniform(0.5, 1.5, (n, m))},
        [(3, 5), (6, 2)],
    )
