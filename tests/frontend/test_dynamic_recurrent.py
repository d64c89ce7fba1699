"""Symbolic dims through the recurrent layers and control flow (recurrent.py, control_flow.py).

Each model is compiled once with its ``dim_param`` dims kept as ``?`` (``cm.artifact``), then run
at two shapes and compared with onnxruntime; the artifact must survive both runs (a refinement
failure would drop it and lower per shape).
"""

from __future__ import annotations

from tests.util import check_symbolic

import numpy as np
import onnx
import pytest

import onnx_stablehlo
from tests.util import assert_allclose_for_dtype, check_dynamic, ort_run, parse

GATES = {"RNN": 1, "GRU": 3, "LSTM": 4}
SYMBOLIC_INPUT, SYMBOLIC_HIDDEN = 3, 4
SYMBOLIC_RTOL, SYMBOLIC_ATOL = 1e-4, 1e-5


def _symbolic_layer_model(kind: str, direction: str, layout: int, inputs: tuple[str, ...]) -> onnx.ModelProto:
    """One recurrent node, X [seq, batch, I] (layout 1: [batch, seq, I]) with symbolic seq and batch."""
    dirs = 2 if direction == "bidirectional" else 1
    g = GATES[kind]
    x = "[seq, batch, 3]" if layout == 0 else "[batch, seq, 3]"
    state = f"[{dirs}, batch, {SYMBOLIC_HIDDEN}]" if layout == 0 else f"[batch, {dirs}, {SYMBOLIC_HIDDEN}]"
    decls = {
        "x": f"float{x} x",
        "w": f"float[{dirs}, {g * SYMBOLIC_HIDDEN}, {SYMBOLIC_INPUT}] w",
        "r": f"float[{dirs}, {g * SYMBOLIC_HIDDEN}, {SYMBOLIC_HIDDEN}] r",
        "b": f"float[{dirs}, {2 * g * SYMBOLIC_HIDDEN}] b",
        "lens": "int32[batch] lens",
        "h0": f"float{state} h0",
        "c0": f"float{state} c0",
    }
    order = ["x", "w", "r", "b", "lens", "h0"] + (["c0"] if kind == "LSTM" else [])
    present = [n for n in order if n in ("x", "w", "r") or n in inputs]
    last = max(order.index(n) for n in present)
    args = [n if n in present else "" for n in order[: last + 1]]
    outs = ["y", "y_h"] + (["y_c"] if kind == "LSTM" else [])
    layout_attr = f", layout = {layout}" if layout else ""
    text = f"""<ir_version: 10, opset_import: ["" : 22]>
g ({", ".join(decls[n] for n in present)}) => ({", ".join(f"float {o}" for o in outs)}) {{
  {", ".join(outs)} = {kind} <hidden_size = {SYMBOLIC_HIDDEN}, direction = "{direction}"{layout_attr}> ({", ".join(args)})
}}"""
    return parse(text)


def _symbolic_feeds(kind: str, direction: str, layout: int, inputs, seq: int, batch: int, rng) -> dict:
    dirs = 2 if direction == "bidirectional" else 1
    g = GATES[kind]
    state = (dirs, batch, SYMBOLIC_HIDDEN) if layout == 0 else (batch, dirs, SYMBOLIC_HIDDEN)
    shapes = {
        "x": (seq, batch, SYMBOLIC_INPUT) if layout == 0 else (batch, seq, SYMBOLIC_INPUT),
        "w": (dirs, g * SYMBOLIC_HIDDEN, SYMBOLIC_INPUT),
        "r": (dirs, g * SYMBOLIC_HIDDEN, SYMBOLIC_HIDDEN),
        "b": (dirs, 2 * g * SYMBOLIC_HIDDEN),
        "h0": state,
        "c0": state,
    }
    feeds = {}
    for name in ["x", "w", "r", *inputs]:
        if name == "lens":
            feeds["lens"] = rng.integers(1, seq + 1, batch).astype(np.int32)
        elif name in shapes:
            feeds[name] = (0.5 * rng.standard_normal(shapes[name])).astype(np.float32)
    return feeds


def _symbolic_oracle(kind: str, direction: str, layout: int, inputs, feeds: dict) -> list[np.ndarray]:
    """onnxruntime's result; layout 1 runs the sequence-first model on transposed data (ORT's CPU
    kernels reject layout 1)."""
    if layout == 0:
        return ort_run(_symbolic_layer_model(kind, direction, 0, inputs), feeds)
    feeds0 = dict(feeds)
    feeds0["x"] = feeds["x"].transpose(1, 0, 2)
    for name in ("h0", "c0"):
        if name in feeds:
            feeds0[name] = feeds[name].transpose(1, 0, 2)
    y, *states = ort_run(_symbolic_layer_model(kind, direction, 0, inputs), feeds0)
    states = [np.ascontiguousarray(s.transpose(1, 0, 2)) for s in states]
    return [np.ascontiguousarray(y.transpose(2, 0, 1, 3)), *states]


SYMBOLIC_CONFIGS = [
    ("forward", 0, ()),
    ("reverse", 0, ("b", "h0", "c0")),
    ("bidirectional", 0, ("b", "lens")),
    ("forward", 1, ("b", "h0", "c0")),
    ("bidirectional", 1, ("b", "lens", "h0", "c0")),
]


@pytest.mark.parametrize("kind", ["RNN", "GRU", "LSTM"])
@pytest.mark.parametrize(
    "direction,layout,inputs", SYMBOLIC_CONFIGS, ids=[f"{d}-layout{l}-{'-'.join(i) or 'plain'}" for d, l, i in SYMBOLIC_CONFIGS]
)
def test_recurrent_layer_with_symbolic_seq_and_batch(kind, direction, layout, inputs, rng):
    inputs = tuple(n for n in inputs if kind == "LSTM" or n != "c0")
    model = _symbolic_layer_model(kind, direction, layout, inputs)
    compiled = onnx_stablehlo.compile(model)
    assert compiled.artifact is not None, compiled.dynamic_error
    assert "stablehlo.get_dimension_size" in compiled.mlir
    for seq, batch in [(5, 3), (2, 1)]:
        feeds = _symbolic_feeds(kind, direction, layout, inputs, seq, batch, rng)
        actual = compiled.run(feeds)
        expected = _symbolic_oracle(kind, direction, layout, inputs, feeds)
        assert len(actual) == len(expected)
        for got, want in zip(actual, expected):
            assert got.shape == want.shape
            np.testing.assert_allclose(got, want, rtol=SYMBOLIC_RTOL, atol=SYMBOLIC_ATOL)
    assert compiled.artifact is not None, compiled.dynamic_error
    assert compiled.compile_count == 2


def test_lstm_with_symbolic_batch_and_static_seq_like_silero_vad(rng):
    # silero-vad: one step of an LSTM whose batch dim is dynamic, states fed back by the caller.
    model = parse("""<ir_version: 10, opset_import: ["" : 22]>
g (float[1, batch, 3] x, float[1, 16, 3] w, float[1, 16, 4] r, float[1, 32] b, float[1, batch, 4] h0,
   float[1, batch, 4] c0) => (float[1, 1, batch, 4] y, float[1, batch, 4] y_h, float[1, batch, 4] y_c) {
  y, y_h, y_c = LSTM <hidden_size = 4> (x, w, r, b, "", h0, c0)
}""")
    compiled = onnx_stablehlo.compile(model)
    assert compiled.artifact is not None, compiled.dynamic_error
    for batch in (2, 5):
        feeds = _symbolic_feeds("LSTM", "forward", 0, ("b", "h0", "c0"), 1, batch, rng)
        for got, want in zip(compiled.run(feeds), ort_run(model, feeds)):
            np.testing.assert_allclose(got, want, rtol=SYMBOLIC_RTOL, atol=SYMBOLIC_ATOL)
    assert compiled.artifact is not None, compiled.dynamic_error


def test_gru_with_every_dim_symbolic_takes_shapes_from_hidden_size_and_x(rng):
    # W, R, B and initial_h declared with symbolic dims: cast to the shapes hidden_size and X fix.
    model = parse("""<ir_version: 10, opset_import: ["" : 22]>
g (float[s, b, i] x, float[d, g3, i2] w, float[d2, g3b, h] r, float[d3, g6] bias, float[d4, b2, h2] h0)
  => (float[s, 1, b, 4] y, float[1, b, 4] y_h) {
  y, y_h = GRU <hidden_size = 4, linear_before_reset = 1> (x, w, r, bias, "", h0)
}""")
    compiled = onnx_stablehlo.compile(model)
    assert compiled.artifact is not None, compiled.dynamic_error
    for seq, batch in [(3, 2), (6, 4)]:
        feeds = _symbolic_feeds("GRU", "forward", 0, ("b", "h0"), seq, batch, rng)
        feeds["bias"] = feeds.pop("b")
        for got, want in zip(compiled.run(feeds), ort_run(model, feeds)):
            np.testing.assert_allclose(got, want, rtol=SYMBOLIC_RTOL, atol=SYMBOLIC_ATOL)
    assert compiled.artifact is not None, compiled.dynamic_error


# Loop and Scan ---------------------------------------------------------------------------------





def test_scan_over_symbolic_length_with_symbolic_batch_state(rng):
    def feeds(t, b):
        return {
            "s0": rng.standard_normal((b, 2)).astype(np.float32),
            "x": rng.standard_normal((t, b, 2)).astype(np.float32),
        }

    check_symbolic(
        18,
        """g (float[B, 2] s0, float[T, B, 2] x) => (float[B, 2] s, float[T, B, 2] ys) {
  s, ys = Scan <num_scan_inputs = 1, body = g2 (float[B, 2] a, float[B, 2] xi) => (float[B, 2] a2, float[B, 2] y) {
     a2 = Add(a, xi)
     y = Mul(a2, xi)
  }> (s0, x)
}""",
        feeds,
        [(3, 2), (6, 5)],
        oracle=ort_run,
    )


def test_scan_reverse_on_axis_1_with_reverse_output(rng):
    def feeds(t, b):
        return {"s0": np.ones(2, np.float32), "x": rng.standard_normal((b, t)).astype(np.float32)}

    check_symbolic(
        18,
        """g (float[2] s0, float[B, T] x) => (float[2] s, float[T, 2] ys) {
  s, ys = Scan <num_scan_inputs = 1, scan_input_axes = [1], scan_input_directions = [1],
                scan_output_directions = [1],
                body = g2 (float[2] a, float[B] xi) => (float[2] a2, float[2] y) {
     r = ReduceSum <keepdims = 0> (xi)
     a2 = Add(a, r)
     y = Identity(a2)
  }> (s0, x)
}""",
        feeds,
        [(4, 3), (1, 2)],
        oracle=ort_run,
    )


def test_loop_with_symbolic_carried_value_and_run_time_trip_count(rng):
    def feeds(n, b):
        return {"n": np.array(n, np.int64), "v0": rng.standard_normal((b, 2)).astype(np.float32)}

    model = parse('<ir_version: 9, opset_import: ["" : 18]>\n' + """g (int64 n, float[B, 2] v0) => (float[B, 2] v) {
  c = Constant <value = bool {1}> ()
  v = Loop (n, c, v0) <body = g2 (int64 i, bool ci, float[B, 2] a) => (bool co, float[B, 2] a2) {
     co = Identity(ci)
     k = Constant <value = float {1.5}> ()
     a2 = Mul(a, k)
  }>
}""")
    compiled = onnx_stablehlo.compile(model)
    assert compiled.artifact is not None, compiled.dynamic_error
    for n, b in [(3, 2), (5, 4)]:
        f = feeds(n, b)
        assert_allclose_for_dtype(compiled.run(f), ort_run(model, f))
    assert compiled.artifact is not None, compiled.dynamic_error


def test_loop_scan_outputs_with_trip_count_from_a_symbolic_dim(rng):
    # M = Shape(x)[0]: the scan outputs stack a symbolic number of rows of symbolic width.
    def feeds(t, b):
        return {"x": np.zeros((t, b), np.float32), "v0": rng.standard_normal((b, 2)).astype(np.float32)}

    check_symbolic(
        18,
        """g (float[T, B] x, float[B, 2] v0) => (float[B, 2] v, float[T, B, 2] ys) {
  c = Constant <value = bool {1}> ()
  sh = Shape(x)
  z = Constant <value = int64 {0}> ()
  n = Gather(sh, z)
  v, ys = Loop (n, c, v0) <body = g2 (int64 i, bool ci, float[B, 2] a) => (bool co, float[B, 2] a2, float[B, 2] y) {
     co = Identity(ci)
     k = Constant <value = float {1.5}> ()
     a2 = Mul(a, k)
     y = Add(a2, a)
  }>
}""",
        feeds,
        [(3, 2), (5, 4)],
        oracle=ort_run,
    )
