"""Parity of the recurrent family (frontend/lowering/recurrent.py) against onnxruntime.

Every input (X, weights, sequence_lens, initial states) is a graph input, so nothing folds.

Symbolic-dim tests (``check_symbolic``) compile one model with its ``dim_param`` dims kept as
``?``, keep that artifact through runs at two shapes, and compare each run with the oracle.
"""

from __future__ import annotations

import numpy as np
import onnx
import pytest

import onnx_stablehlo
from onnx_stablehlo.errors import ShapeError, UnsupportedAttributeError
from tests.util import (assert_allclose_for_dtype, compile_and_run, emitted_text, onnx_type_name, ort_run, parse,
                        reference_run)

_IR_VERSION = {7: 3, 14: 7, 22: 10}


STEPS, BATCH, INPUT, HIDDEN = 5, 3, 4, 6

# Tolerances for a 5-step recurrence (errors compound a little across steps).
RTOL, ATOL = 1e-4, 1e-5


def _layer_model(
    kind: str,
    *,
    opset: int = 22,
    direction: str = "forward",
    layout: int = 0,
    dtype=np.float32,
    inputs: tuple[str, ...] = (),
    attrs: str = "",
) -> onnx.ModelProto:
    """A one-node model; ``inputs`` names the optional inputs present (b, lens, h0, c0, p)."""
    ty = onnx_type_name(dtype)
    dirs = 2 if direction == "bidirectional" else 1
    g = GATES[kind]
    x_shape = (STEPS, BATCH, INPUT) if layout == 0 else (BATCH, STEPS, INPUT)
    state = (dirs, BATCH, HIDDEN) if layout == 0 else (BATCH, dirs, HIDDEN)
    shapes = {
        "x": x_shape, "w": (dirs, g * HIDDEN, INPUT), "r": (dirs, g * HIDDEN, HIDDEN),
        "b": (dirs, 2 * g * HIDDEN), "lens": (BATCH,), "h0": state, "c0": state, "p": (dirs, 3 * HIDDEN),
    }
    order = ["x", "w", "r", "b", "lens", "h0"] + (["c0", "p"] if kind == "LSTM" else [])
    present = [n for n in order if n in ("x", "w", "r") or n in inputs]
    last = max(order.index(n) for n in present)
    args = [n if n in present else "" for n in order[: last + 1]]
    decls = ", ".join(f"{'int32' if n == 'lens' else ty}[{', '.join(map(str, shapes[n]))}] {n}" for n in present)
    outs = ["y", "y_h"] + (["y_c"] if kind == "LSTM" else [])
    layout_attr = f", layout = {layout}" if layout else ""
    text = f"""<ir_version: {_IR_VERSION[opset]}, opset_import: ["" : {opset}]>
g ({decls}) => ({", ".join(f"{ty} {o}" for o in outs)}) {{
  {", ".join(outs)} = {kind} <hidden_size = {HIDDEN}, direction = "{direction}"{layout_attr}{attrs}> ({", ".join(args)})
}}"""
    return parse(text)


def _feeds(model: onnx.ModelProto, rng: np.random.Generator, dtype=np.float32, lens=(5, 2, 4)) -> dict:
    feeds = {}
    for value in model.graph.input:
        shape = tuple(d.dim_value for d in value.type.tensor_type.shape.dim)
        if value.name == "lens":
            feeds["lens"] = np.array(lens, np.int32)
        else:
            feeds[value.name] = (0.5 * rng.standard_normal(shape)).astype(dtype)
    return feeds


def _batch_first_oracle(kind: str, model_args: dict, feeds: dict) -> list[np.ndarray]:
    """onnxruntime's result for a layout-1 model, from the layout-0 model on transposed data.

    onnxruntime's CPU kernels reject layout 1, so the oracle runs the same layer sequence-first:
    X [B, S, I] -> [S, B, I], states [B, D, H] -> [D, B, H], then Y [S, D, B, H] -> [B, S, D, H].
    """
    model0 = _layer_model(kind, **{**model_args, "layout": 0})
    feeds0 = dict(feeds)
    feeds0["x"] = feeds["x"].transpose(1, 0, 2)
    for name in ("h0", "c0"):
        if name in feeds:
            feeds0[name] = feeds[name].transpose(1, 0, 2)
    y, *states = ort_run(model0, feeds0)
    states = [np.ascontiguousarray(s.transpose(1, 0, 2)) for s in states]
    return [np.ascontiguousarray(y.transpose(2, 0, 1, 3)), *states]


def _check(model: onnx.ModelProto, feeds: dict, expected: list[np.ndarray] | None = None) -> None:
    actual = compile_and_run(model, feeds)
    expected = ort_run(model, feeds) if expected is None else expected
    assert len(actual) == len(expected)
    for got, want in zip(actual, expected):
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL)


# (opset, direction, layout, optional inputs present, id)
CONFIGS = [
    (7, "forward", 0, (), "opset7-forward"),
    (14, "reverse", 0, ("b", "h0", "c0"), "opset14-reverse-init"),
    (14, "bidirectional", 0, ("b", "lens"), "opset14-bidirectional-lens"),
    (14, "forward", 1, ("b", "h0", "c0"), "opset14-layout1-init"),
    (22, "bidirectional", 1, ("b", "lens", "h0", "c0"), "opset22-bidirectional-layout1-lens-init"),
    (22, "reverse", 0, ("lens",), "opset22-reverse-lens"),
    (22, "forward", 0, ("b", "lens", "h0", "c0"), "opset22-forward-lens-init"),
]


@pytest.mark.parametrize("kind", ["RNN", "GRU", "LSTM"])
@pytest.mark.parametrize("opset,direction,layout,inputs", [c[:4] for c in CONFIGS], ids=[c[4] for c in CONFIGS])
def test_recurrent_layer_matches_onnxruntime(kind, opset, direction, layout, inputs, rng):
    if layout == 1 and opset < 14:
        pytest.skip("layout exists from revision 14")
    inputs = tuple(n for n in inputs if kind == "LSTM" or n != "c0")
    args = dict(opset=opset, direction=direction, layout=layout, inputs=inputs)
    model = _layer_model(kind, **args)
    feeds = _feeds(model, rng)
    _check(model, feeds, _batch_first_oracle(kind, args, feeds) if layout == 1 else None)


def test_lstm_is_one_while_per_direction_not_unrolled():
    text = emitted_text(_layer_model("LSTM", direction="bidirectional", inputs=("b",)))
    assert text.count("stablehlo.while") == 2
    # One input projection per direction before the loop, one recurrent product per step inside.
    assert text.count("stablehlo.dot_general") == 4


@pytest.mark.parametrize("lens", [(5, 5, 5), (1, 3, 5), (2, 1, 1)], ids=["full", "mixed", "short"])
@pytest.mark.parametrize("direction", ["forward", "reverse", "bidirectional"])
def test_lstm_sequence_lens_mask_outputs_and_final_states(lens, direction, rng):
    model = _layer_model("LSTM", direction=direction, inputs=("b", "lens", "h0", "c0"))
    _check(model, _feeds(model, rng, lens=lens))


@pytest.mark.parametrize(
    "attrs,inputs,direction",
    [
        ("", ("b", "p"), "bidirectional"),
        (", input_forget = 1", ("b",), "forward"),
        (", clip = 0.3", ("b", "h0", "c0"), "reverse"),
        (', activations = ["HardSigmoid", "LeakyRelu", "Softsign"], activation_alpha = [0.3, 0.2], '
         "activation_beta = [0.4]", ("b",), "forward"),
        (', activations = ["Sigmoid", "Elu", "Softplus", "Sigmoid", "ScaledTanh", "Relu"], '
         "activation_alpha = [0.7, 1.3], activation_beta = [0.6]", ("b",), "bidirectional"),
    ],
    ids=["peepholes", "input-forget", "clip", "activations-alpha-beta", "activations-per-direction"],
)
def test_lstm_attributes_match_onnxruntime(attrs, inputs, direction, rng):
    model = _layer_model("LSTM", direction=direction, inputs=inputs, attrs=attrs)
    _check(model, _feeds(model, rng))


@pytest.mark.parametrize("linear_before_reset", [0, 1], ids=["lbr0", "lbr1"])
@pytest.mark.parametrize("direction", ["forward", "bidirectional"])
def test_gru_linear_before_reset_matches_onnxruntime(linear_before_reset, direction, rng):
    model = _layer_model(
        "GRU", direction=direction, inputs=("b", "lens", "h0"), attrs=f", linear_before_reset = {linear_before_reset}"
    )
    _check(model, _feeds(model, rng))


@pytest.mark.parametrize(
    "attrs",
    [', activations = ["Relu"]', ', activations = ["Affine"], activation_alpha = [0.5], activation_beta = [0.1]',
     ', activations = ["ThresholdedRelu"], activation_alpha = [0.1]', ", clip = 0.5"],
    ids=["relu", "affine", "thresholded-relu", "clip"],
)
def test_rnn_activations_match_onnxruntime(attrs, rng):
    model = _layer_model("RNN", inputs=("b", "h0"), attrs=attrs)
    _check(model, _feeds(model, rng))


@pytest.mark.parametrize("kind", ["GRU", "LSTM"])
def test_recurrent_float16_matches_onnxruntime_in_float32(kind, rng):
    # onnxruntime has no float16 kernels for these: compare with its float32 result.
    model16 = _layer_model(kind, dtype=np.float16, inputs=("b", "lens"))
    model32 = _layer_model(kind, dtype=np.float32, inputs=("b", "lens"))
    feeds16 = _feeds(model16, rng, dtype=np.float16)
    feeds32 = {k: v.astype(np.float32) if v.dtype == np.float16 else v for k, v in feeds16.items()}
    expected = [e.astype(np.float16) for e in ort_run(model32, feeds32)]
    assert_allclose_for_dtype(compile_and_run(model16, feeds16), expected, np.float16)


@pytest.mark.parametrize("kind", ["RNN", "GRU", "LSTM"])
def test_recurrent_float64_matches_reference(kind, rng):
    # onnxruntime has no float64 kernels for these: onnx.reference is the oracle.
    model = _layer_model(kind, dtype=np.float64, direction="bidirectional", inputs=("b", "h0"))
    feeds = _feeds(model, rng, dtype=np.float64)
    assert_allclose_for_dtype(compile_and_run(model, feeds), reference_run(model, feeds))


def test_unknown_activation_is_rejected():
    model = _layer_model("RNN", attrs=', activations = ["Swish"]')
    with pytest.raises(UnsupportedAttributeError, match="activations.*Swish.*accepted"):
        onnx_stablehlo.lower(model)


def test_weights_that_do_not_fit_hidden_size_are_rejected():
    model = _layer_model("GRU")
    model.graph.node[0].attribute[0].i = HIDDEN + 1  # hidden_size
    with pytest.raises(ShapeError, match="hidden_size=7"):
        onnx_stablehlo.lower(model)


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
