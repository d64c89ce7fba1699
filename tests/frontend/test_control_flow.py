"""Parity of the control-flow family (frontend/lowering/control_flow.py) against onnxruntime.

Conditions, trip counts and data are graph inputs, so the rules see run-time values, except
where a test is about a compile-time constant (a Constant node). The runtime specializes small
integer and bool inputs on their values when a rule asks for a constant, so a few tests call
``emitted_text``/``onnx_stablehlo.lower`` to see what happens without that help.

Symbolic-dim tests (``check_symbolic``) compile one model with its ``dim_param`` dims kept as
``?``, keep that artifact through runs at two shapes, and compare each run with the oracle.
"""

from __future__ import annotations

import numpy as np
import pytest

import onnx_stablehlo
from onnx_stablehlo.errors import NonConstantInputError, ShapeError, UnsupportedDtypeError
from tests.util import (assert_allclose_for_dtype, check_symbolic, compile_and_run, emitted_text, onnx_type_name,
                        ort_run, parse)

# The IR version each opset needs (onnx.helper.VERSION_TABLE).
_IR_VERSION = {9: 4, 11: 6, 13: 7, 16: 8, 19: 9, 21: 10, 23: 11, 24: 12, 25: 13}
IF_LOOP_OPSETS = [9, 11, 13, 16, 19, 21, 23, 24, 25]


def _header(opset: int) -> str:
    return f'<ir_version: {_IR_VERSION[opset]}, opset_import: ["" : {opset}]>'


# If -----------------------------------------------------------------------------------------

# Three levels of If; the innermost branches read values of the outermost graph (s, x, y).
NESTED_IF = """{header}
g (bool c1, bool c2, bool c3, {ty}[2, 3] x, {ty}[2, 3] y) => ({ty}[2, 3] out) {{
  s = Add(x, y)
  out = If (c1) <
    then_branch: graph = t1 () => ({ty}[2, 3] r1) {{
      r1 = If (c2) <
        then_branch: graph = t2 () => ({ty}[2, 3] r2) {{
          r2 = If (c3) <
            then_branch: graph = t3 () => ({ty}[2, 3] r3) {{ r3 = Mul(s, x) }},
            else_branch: graph = e3 () => ({ty}[2, 3] r3e) {{ r3e = Sub(s, y) }}
          >
        }},
        else_branch: graph = e2 () => ({ty}[2, 3] r2e) {{ r2e = Neg(x) }}
      >
    }},
    else_branch: graph = e1 () => ({ty}[2, 3] r1e) {{ r1e = Identity(y) }}
  >
}}"""


def _values(shape, dtype, rng: np.random.Generator) -> np.ndarray:
    if np.issubdtype(dtype, np.integer):
        return rng.integers(-9, 10, shape).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


@pytest.mark.parametrize("conds", [(1, 1, 1), (1, 1, 0), (1, 0, 1), (0, 1, 1)], ids=["ttt", "ttf", "tf-", "f--"])
def test_if_nested_with_outer_scope_values_matches_onnxruntime(conds, rng):
    model = parse(NESTED_IF.format(header=_header(16), ty="float"))
    feeds = {f"c{i + 1}": np.array(bool(c)) for i, c in enumerate(conds)}
    feeds |= {"x": _values((2, 3), np.float32, rng), "y": _values((2, 3), np.float32, rng)}
    # Every cond is a bool graph input: the runtime may specialize them, so compare without it too.
    lowered = onnx_stablehlo.lower(model)
    assert lowered.text.count("stablehlo.if") >= 3
    assert_allclose_for_dtype(compile_and_run(model, feeds), ort_run(model, feeds))


@pytest.mark.parametrize("opset", IF_LOOP_OPSETS, ids=[f"opset{o}" for o in IF_LOOP_OPSETS])
@pytest.mark.parametrize("dtype", [np.float32, np.int64], ids=["f32", "i64"])
def test_if_revisions_match_onnxruntime(opset, dtype, rng):
    model = parse(NESTED_IF.format(header=_header(opset), ty=onnx_type_name(dtype)))
    for conds in [(1, 1, 0), (0, 0, 0)]:
        feeds = {f"c{i + 1}": np.array(bool(c)) for i, c in enumerate(conds)}
        feeds |= {"x": _values((2, 3), dtype, rng), "y": _values((2, 3), dtype, rng)}
        assert_allclose_for_dtype(compile_and_run(model, feeds), ort_run(model, feeds))


# The branches produce different shapes; only a compile-time cond can pick one statically.
IF_SHAPES_DIFFER = """<ir_version: 8, opset_import: ["" : 16]>
g ({cond_decl}float[2, 3] x) => (float[N] out) {{
  {cond_node}
  out = If (c) <
    then_branch: graph = t () => (float[6] flat) {{
      shape = Constant <value = int64[1] {{6}}> ()
      flat = Reshape(x, shape)
    }},
    else_branch: graph = e () => (float[3] col) {{
      col = ReduceSum <keepdims = 0> (x, zero)
    }}
  >
  {after}
}}"""


@pytest.mark.parametrize("taken", [True, False], ids=["then", "else"])
def test_if_constant_cond_lowers_only_the_taken_branch(taken, rng):
    model = parse(
        IF_SHAPES_DIFFER.format(
            cond_decl="",
            cond_node=f"c = Constant <value = bool {{{int(taken)}}}> ()\n  zero = Constant <value = int64[1] {{0}}> ()",
            after="",
        )
    )
    feeds = {"x": _values((2, 3), np.float32, rng)}
    text = emitted_text(model)
    assert "stablehlo.if" not in text
    assert_allclose_for_dtype(compile_and_run(model, feeds), ort_run(model, feeds))


def test_if_constant_branch_output_stays_a_compile_time_constant(rng):
    # The taken branch computes a shape; Reshape needs it at compile time.
    model = parse("""<ir_version: 8, opset_import: ["" : 16]>
g (float[2, 3] x) => (float[3, 2] out) {
  c = Constant <value = bool {1}> ()
  target = If (c) <
    then_branch: graph = t () => (int64[2] a) { a = Constant <value = int64[2] {3, 2}> () },
    else_branch: graph = e () => (int64[2] b) { b = Constant <value = int64[2] {6, 1}> () }
  >
  out = Reshape(x, target)
}""")
    feeds = {"x": _values((2, 3), np.float32, rng)}
    assert_allclose_for_dtype(compile_and_run(model, feeds), ort_run(model, feeds))


def test_if_runtime_cond_with_branch_shapes_differing_is_a_shape_error():
    model = parse(
        IF_SHAPES_DIFFER.format(
            cond_decl="bool c, ", cond_node="zero = Constant <value = int64[1] {0}> ()", after=""
        )
    )
    with pytest.raises(ShapeError, match=r"tensor<6xf32>.*then_branch.*tensor<3xf32>.*else_branch") as info:
        onnx_stablehlo.lower(model)
    assert isinstance(info.value, NonConstantInputError)  # the runtime may specialize cond
    assert info.value.op_type == "If"


@pytest.mark.parametrize("cond", [True, False], ids=["then", "else"])
def test_if_branch_shapes_differing_runs_with_cond_specialized(cond, rng):
    model = parse(
        IF_SHAPES_DIFFER.format(
            cond_decl="bool c, ", cond_node="zero = Constant <value = int64[1] {0}> ()", after=""
        )
    )
    feeds = {"c": np.array(cond), "x": _values((2, 3), np.float32, rng)}
    assert_allclose_for_dtype(compile_and_run(model, feeds), ort_run(model, feeds))


# The else branch cannot lower for these shapes (ONNX evaluates only the taken branch).
IF_BRANCH_INVALID = """<ir_version: 8, opset_import: ["" : 16]>
g (bool c, float[2, 3] x) => (float[2, 3] out) {
  out = If (c) <
    then_branch: graph = t () => (float[2, 3] a) { a = Neg(x) },
    else_branch: graph = e () => (float[2, 3] b) {
      shape = Constant <value = int64[2] {4, 5}> ()
      b = Reshape(x, shape)
    }
  >
}"""


def test_if_branch_that_does_not_lower_with_runtime_cond_needs_a_constant():
    with pytest.raises(ShapeError, match="else_branch does not lower for these inputs") as info:
        onnx_stablehlo.lower(parse(IF_BRANCH_INVALID))
    assert isinstance(info.value, NonConstantInputError)


def test_if_branch_that_does_not_lower_runs_with_cond_specialized(rng):
    # silero-vad's sample-rate If: the 8 kHz branch does not fit a 16 kHz window.
    model = parse(IF_BRANCH_INVALID)
    feeds = {"c": np.array(True), "x": _values((2, 3), np.float32, rng)}
    assert_allclose_for_dtype(compile_and_run(model, feeds), ort_run(model, feeds))


# Each branch runs a recurrent layer on outer-scope values (silero-vad runs LSTMs in If branches).
@pytest.mark.parametrize("cond", [True, False], ids=["then-gru", "else-lstm"])
def test_if_branches_running_recurrent_layers_on_outer_values(cond, rng):
    model = parse("""<ir_version: 8, opset_import: ["" : 16]>
g (bool c, float[4, 1, 3] x, float[1, 6, 3] wg, float[1, 6, 2] rg, float[1, 8, 3] wl, float[1, 8, 2] rl, float[1, 1, 2] h0) => (float[1, 1, 2] h) {
  h = If (c) <
    then_branch: graph = t () => (float[1, 1, 2] a) {
      ya, a = GRU <hidden_size = 2, linear_before_reset = 1> (x, wg, rg, , , h0)
    },
    else_branch: graph = e () => (float[1, 1, 2] b) {
      yb, b = LSTM <hidden_size = 2, direction = "reverse"> (x, wl, rl, , , h0)
    }
  >
}""")
    shapes = {"x": (4, 1, 3), "wg": (1, 6, 3), "rg": (1, 6, 2), "wl": (1, 8, 3), "rl": (1, 8, 2), "h0": (1, 1, 2)}
    feeds = {"c": np.array(cond)} | {name: _values(shape, np.float32, rng) for name, shape in shapes.items()}
    text = emitted_text(model)
    assert "stablehlo.if" in text and text.count("stablehlo.while") == 2
    expected = ort_run(model, feeds)
    actual = compile_and_run(model, feeds)
    np.testing.assert_allclose(actual[0], expected[0], rtol=1e-4, atol=1e-5)


# The branches build sequences of different lengths; SequenceAt and SequenceLength read them.
IF_SEQUENCE = """<ir_version: 8, opset_import: ["" : 16]>
g (bool c, float[2] x) => (float[2] out, int64 n) {
  s = If (c) <
    then_branch: graph = t () => (seq(float[2]) a) { a = SequenceConstruct(x) },
    else_branch: graph = e () => (seq(float[2]) b) {
      y = Neg(x)
      b = SequenceConstruct(x, y)
    }
  >
  last = Constant <value = int64 {-1}> ()
  out = SequenceAt(s, last)
  n = SequenceLength(s)
}"""


def test_if_sequence_output_with_runtime_cond_needs_a_constant():
    with pytest.raises(UnsupportedDtypeError, match="sequences and optionals need cond known at compile time") as info:
        onnx_stablehlo.lower(parse(IF_SEQUENCE))
    assert isinstance(info.value, NonConstantInputError)  # the runtime may specialize cond


@pytest.mark.parametrize("cond", [True, False], ids=["then", "else"])
def test_if_sequence_output_runs_with_cond_specialized(cond, rng):
    model = parse(IF_SEQUENCE)
    feeds = {"c": np.array(cond), "x": _values((2,), np.float32, rng)}
    assert_allclose_for_dtype(compile_and_run(model, feeds), ort_run(model, feeds))


def test_if_inside_loop_body_matches_onnxruntime(rng):
    # Even iterations add x, odd ones subtract it; the If cond is computed in the body.
    model = parse("""<ir_version: 8, opset_import: ["" : 16]>
g (float[3] x, float[3] v0) => (float[3] v) {
  m = Constant <value = int64 {5}> ()
  v = Loop (m, , v0) <
    body: graph = body (int64 i, bool c, float[3] acc) => (bool c_out, float[3] next) {
      two = Constant <value = int64 {2}> ()
      zero = Constant <value = int64 {0}> ()
      parity = Mod(i, two)
      even = Equal(parity, zero)
      next = If (even) <
        then_branch: graph = t () => (float[3] a) { a = Add(acc, x) },
        else_branch: graph = e () => (float[3] b) { b = Sub(acc, x) }
      >
      c_out = Identity(c)
    }
  >
}""")
    feeds = {"x": _values((3,), np.float32, rng), "v0": _values((3,), np.float32, rng)}
    assert "stablehlo.if" in emitted_text(model)
    assert_allclose_for_dtype(compile_and_run(model, feeds), ort_run(model, feeds))


# Loop ---------------------------------------------------------------------------------------

# A for-loop with a scan output: acc += x * i, and every acc is stacked.
LOOP_FOR = """{header}
g ({m_decl}{ty}[2] x, {ty}[2] a0) => ({ty}[2] acc, {ty}[N, 2] rows) {{
  {m_node}
  acc, rows = Loop (m, , a0) <
    body: graph = body (int64 i, bool c, {ty}[2] a) => (bool c_out, {ty}[2] next, {ty}[2] row) {{
      fi = Cast <to = {to}> (i)
      step = Mul(x, fi)
      next = Add(a, step)
      row = Identity(next)
      c_out = Identity(c)
    }}
  >
}}"""

_CAST_TO = {np.float32: 1, np.float64: 11, np.int32: 6, np.int64: 7}


@pytest.mark.parametrize("opset", IF_LOOP_OPSETS, ids=[f"opset{o}" for o in IF_LOOP_OPSETS])
def test_loop_constant_trip_count_with_scan_output_matches_onnxruntime(opset, rng):
    model = parse(
        LOOP_FOR.format(
            header=_header(opset), ty="float", to=1, m_decl="", m_node="m = Constant <value = int64 {4}> ()"
        )
    )
    feeds = {"x": _values((2,), np.float32, rng), "a0": _values((2,), np.float32, rng)}
    text = emitted_text(model)
    assert "stablehlo.while" in text and "stablehlo.dynamic_update_slice" in text
    assert_allclose_for_dtype(compile_and_run(model, feeds), ort_run(model, feeds))


@pytest.mark.parametrize("dtype", [np.float64, np.int32, np.int64], ids=["f64", "i32", "i64"])
def test_loop_dtypes_match_onnxruntime(dtype, rng):
    model = parse(
        LOOP_FOR.format(
            header=_header(13), ty=onnx_type_name(dtype), to=_CAST_TO[dtype], m_decl="",
            m_node="m = Constant <value = int64 {3}> ()",
        )
    )
    feeds = {"x": _values((2,), dtype, rng), "a0": _values((2,), dtype, rng)}
    assert_allclose_for_dtype(compile_and_run(model, feeds), ort_run(model, feeds))


def test_loop_runtime_trip_count_with_scan_output_needs_a_constant():
    model = parse(LOOP_FOR.format(header=_header(13), ty="float", to=1, m_decl="int64 m, ", m_node=""))
    with pytest.raises(NonConstantInputError, match="number of iterations"):
        onnx_stablehlo.lower(model)


@pytest.mark.parametrize("trips", [0, 1, 5], ids=["m0", "m1", "m5"])
def test_loop_runtime_trip_count_with_scan_output_runs_specialized(trips, rng):
    model = parse(LOOP_FOR.format(header=_header(13), ty="float", to=1, m_decl="int64 m, ", m_node=""))
    feeds = {"m": np.array(trips, np.int64), "x": _values((2,), np.float32, rng), "a0": _values((2,), np.float32, rng)}
    assert_allclose_for_dtype(compile_and_run(model, feeds), ort_run(model, feeds))


# cond is given but the body returns a constant true: the iteration count is still M.
LOOP_CONSTANT_COND = """<ir_version: 8, opset_import: ["" : 16]>
g (float[2] x, float[2] a0) => (float[2] acc, float[N, 2] rows) {{
  m = Constant <value = int64 {{3}}> ()
  go = Constant <value = bool {{{start}}}> ()
  acc, rows = Loop (m, go, a0) <
    body: graph = body (int64 i, bool c, float[2] a) => (bool c_out, float[2] next, float[2] row) {{
      next = Add(a, x)
      row = Identity(next)
      c_out = Constant <value = bool {{1}}> ()
    }}
  >
}}"""


@pytest.mark.parametrize("start", [1, 0], ids=["cond-true", "cond-false"])
def test_loop_body_returning_constant_true_keeps_scan_outputs(start, rng):
    model = parse(LOOP_CONSTANT_COND.format(start=start))
    feeds = {"x": _values((2,), np.float32, rng), "a0": _values((2,), np.float32, rng)}
    assert_allclose_for_dtype(compile_and_run(model, feeds), ort_run(model, feeds))


# A while-loop with early exit: double v until its sum passes a limit (at most m steps).
LOOP_WHILE = """<ir_version: 8, opset_import: ["" : 16]>
g ({m_decl}float limit, float[3] v0) => (float[3] v, int64 steps) {{
  {m_node}
  go = Constant <value = bool {{1}}> ()
  k0 = Constant <value = int64 {{0}}> ()
  v, steps = Loop ({m}, go, v0, k0) <
    body: graph = body (int64 i, bool c, float[3] a, int64 k) => (bool c_out, float[3] next, int64 k_next) {{
      two = Constant <value = float {{2}}> ()
      one = Constant <value = int64 {{1}}> ()
      next = Mul(a, two)
      k_next = Add(k, one)
      total = ReduceSum <keepdims = 0> (next)
      c_out = Less(total, limit)
    }}
  >
}}"""


@pytest.mark.parametrize(
    "m_decl,m_node,m,limit",
    [
        ("", "", "", 50.0),
        ("", "m = Constant <value = int64 {3}> ()", "m", 50.0),
        ("", "m = Constant <value = int64 {3}> ()", "m", 1e6),
        ("int64 m, ", "", "m", 50.0),
    ],
    ids=["cond-only", "trip-and-cond-exit-early", "trip-and-cond-run-out", "runtime-trip"],
)
def test_loop_early_exit_matches_onnxruntime(m_decl, m_node, m, limit):
    model = parse(LOOP_WHILE.format(m_decl=m_decl, m_node=m_node, m=m))
    feeds = {"limit": np.array(limit, np.float32), "v0": np.array([0.5, 1.0, 1.5], np.float32)}
    if m_decl:
        feeds["m"] = np.array(4, np.int64)
    assert "stablehlo.while" in emitted_text(model)
    assert_allclose_for_dtype(compile_and_run(model, feeds), ort_run(model, feeds))


def test_loop_scan_output_with_data_dependent_exit_is_rejected():
    model = parse("""<ir_version: 8, opset_import: ["" : 16]>
g (float[3] v0) => (float[3] v, float[N, 3] rows) {
  m = Constant <value = int64 {10}> ()
  go = Constant <value = bool {1}> ()
  v, rows = Loop (m, go, v0) <
    body: graph = body (int64 i, bool c, float[3] a) => (bool c_out, float[3] next, float[3] row) {
      two = Constant <value = float {2}> ()
      limit = Constant <value = float {100}> ()
      next = Mul(a, two)
      row = Identity(next)
      total = ReduceSum <keepdims = 0> (next)
      c_out = Less(total, limit)
    }
  >
}""")
    with pytest.raises(NonConstantInputError, match="scan outputs need the number of iterations"):
        onnx_stablehlo.lower(model)


# Each iteration appends a piece of x to a carried value, which grows: not a stablehlo.while.
LOOP_GROWING = """<ir_version: 8, opset_import: ["" : 16]>
g ({m_decl}float[5] x, float[1] a0) => (float[N] grown, float[N, 1] pieces) {{
  {m_node}
  grown, pieces = Loop (m, , a0) <
    body: graph = body (int64 i, bool c, float[M] a) => (bool c_out, float[K] next, float[1] piece) {{
      one = Constant <value = int64 {{1}}> ()
      axes = Constant <value = int64[1] {{0}}> ()
      {piece}
      next = Concat <axis = 0> (a, piece)
      c_out = Identity(c)
    }}
  >
}}"""
# The piece is x[i:i+1]: the Slice needs the iteration number at compile time.
PIECE_AT_I = """start = Unsqueeze(i, axes)
      stop0 = Add(i, one)
      stop = Unsqueeze(stop0, axes)
      piece = Slice(x, start, stop)"""
PIECE_FIXED = """stop = Constant <value = int64[1] {1}> ()
      piece = Slice(x, axes, stop)"""


@pytest.mark.parametrize("piece", [PIECE_AT_I, PIECE_FIXED], ids=["slice-at-i", "slice-fixed"])
def test_loop_carried_value_that_grows_is_unrolled(piece, rng):
    model = parse(LOOP_GROWING.format(m_decl="", m_node="m = Constant <value = int64 {3}> ()", piece=piece))
    feeds = {"x": _values((5,), np.float32, rng), "a0": _values((1,), np.float32, rng)}
    assert "stablehlo.while" not in emitted_text(model)
    assert_allclose_for_dtype(compile_and_run(model, feeds), ort_run(model, feeds))


def test_loop_carried_value_that_grows_with_runtime_trip_count_is_a_shape_error():
    model = parse(LOOP_GROWING.format(m_decl="int64 m, ", m_node="", piece=PIECE_FIXED))
    with pytest.raises(ShapeError, match=r"loop-carried value 0 \('a'\).*tensor<1xf32>.*tensor<2xf32>") as info:
        onnx_stablehlo.lower(model)
    assert isinstance(info.value, NonConstantInputError)  # the runtime may specialize m


def test_loop_carried_value_that_grows_runs_with_trip_count_specialized(rng):
    model = parse(LOOP_GROWING.format(m_decl="int64 m, ", m_node="", piece=PIECE_FIXED))
    feeds = {"m": np.array(4, np.int64), "x": _values((5,), np.float32, rng), "a0": _values((1,), np.float32, rng)}
    assert_allclose_for_dtype(compile_and_run(model, feeds), ort_run(model, feeds))


# Each iteration inserts a row into a carried sequence: a loop over sequences is unrolled.
LOOP_SEQUENCE = """<ir_version: 8, opset_import: ["" : 16]>
g ({m_decl}float[3] x) => (float[N, 3] rows) {{
  {m_node}
  empty = SequenceEmpty <dtype = 1> ()
  seq = Loop (m, , empty) <
    body: graph = body (int64 i, bool c, seq(float[3]) s) => (bool c_out, seq(float[3]) s_out) {{
      fi = Cast <to = 1> (i)
      row = Mul(x, fi)
      s_out = SequenceInsert(s, row)
      c_out = Identity(c)
    }}
  >
  rows = ConcatFromSequence <axis = 0, new_axis = 1> (seq)
}}"""


def test_loop_carrying_a_sequence_is_unrolled(rng):
    model = parse(LOOP_SEQUENCE.format(m_decl="", m_node="m = Constant <value = int64 {3}> ()"))
    feeds = {"x": _values((3,), np.float32, rng)}
    assert "stablehlo.while" not in emitted_text(model)
    assert_allclose_for_dtype(compile_and_run(model, feeds), ort_run(model, feeds))


def test_loop_carrying_a_sequence_with_runtime_trip_count_needs_a_constant(rng):
    model = parse(LOOP_SEQUENCE.format(m_decl="int64 m, ", m_node=""))
    with pytest.raises(UnsupportedDtypeError, match="stablehlo.while carries tensors only") as info:
        onnx_stablehlo.lower(model)
    assert isinstance(info.value, NonConstantInputError)
    feeds = {"m": np.array(2, np.int64), "x": _values((3,), np.float32, rng)}
    assert_allclose_for_dtype(compile_and_run(model, feeds), ort_run(model, feeds))


def test_loop_without_trip_count_or_cond_is_rejected():
    model = parse("""<ir_version: 8, opset_import: ["" : 16]>
g (float[3] v0) => (float[3] v) {
  v = Loop (, , v0) <
    body: graph = body (int64 i, bool c, float[3] a) => (bool c_out, float[3] next) {
      next = Identity(a)
      c_out = Identity(c)
    }
  >
}""")
    with pytest.raises(onnx_stablehlo.errors.FrontendError, match="never ends"):
        onnx_stablehlo.lower(model)


# Scan ---------------------------------------------------------------------------------------

# Two states (a running sum and a running max) over two scan inputs, with axes and directions.
SCAN_MODEL = """{header}
g ({ty}[3] s0, {ty}[3] m0, {ty}{x_shape} x, {ty}{y_shape} y) => ({ty}[3] s, {ty}[3] m, {ty}{out_shape} sums, {ty}{out_shape} prods) {{
  s, m, sums, prods = Scan (s0, m0, x, y) <
    num_scan_inputs = 2,
    {attrs}
    body: graph = body ({ty}[3] s_in, {ty}[3] m_in, {ty}[3] xt, {ty}[3] yt) => ({ty}[3] s_out, {ty}[3] m_out, {ty}[3] sum_row, {ty}[3] prod_row) {{
      xy = Add(xt, yt)
      s_out = Add(s_in, xy)
      m_out = Max(m_in, xt)
      sum_row = Identity(s_out)
      prod_row = Mul(xt, yt)
    }}
  >
}}"""

SCAN_CASES = [
    # (x shape, y shape, output shape, attrs, id)
    ((4, 3), (4, 3), (4, 3), "", "defaults"),
    ((3, 4), (4, 3), (3, 4),
     "scan_input_axes = [1, 0], scan_output_axes = [1, -1], scan_input_directions = [1, 0],", "axes"),
    ((4, 3), (4, 3), (4, 3),
     "scan_input_directions = [0, 1], scan_output_directions = [1, 0],", "directions"),
]


def _dims(shape) -> str:
    return "[" + ", ".join(map(str, shape)) + "]"


def _scan_model(opset: int, dtype, x_shape, y_shape, out_shape, attrs: str):
    return parse(
        SCAN_MODEL.format(header=_header(opset), ty=onnx_type_name(dtype), x_shape=_dims(x_shape),
                          y_shape=_dims(y_shape), out_shape=_dims(out_shape), attrs=attrs)
    )


@pytest.mark.parametrize(
    "x_shape,y_shape,out_shape,attrs", [c[:4] for c in SCAN_CASES], ids=[c[4] for c in SCAN_CASES]
)
@pytest.mark.parametrize("opset", [11, 16, 21, 25], ids=["opset11", "opset16", "opset21", "opset25"])
def test_scan_matches_onnxruntime(x_shape, y_shape, out_shape, attrs, opset, rng):
    model = _scan_model(opset, np.float32, x_shape, y_shape, out_shape, attrs)
    feeds = {name: _values((3,), np.float32, rng) for name in ("s0", "m0")}
    feeds |= {"x": _values(x_shape, np.float32, rng), "y": _values(y_shape, np.float32, rng)}
    text = emitted_text(model)
    assert "stablehlo.while" in text and "stablehlo.dynamic_slice" in text
    assert_allclose_for_dtype(compile_and_run(model, feeds), ort_run(model, feeds))


@pytest.mark.parametrize("opset,dtype", [(9, np.float64), (13, np.int64)], ids=["opset9-f64", "opset13-i64"])
def test_scan_dtypes_match_onnxruntime(opset, dtype, rng):
    model = _scan_model(opset, dtype, (4, 3), (4, 3), (4, 3), "scan_input_directions = [1, 0],")
    feeds = {name: _values((3,), dtype, rng) for name in ("s0", "m0")}
    feeds |= {name: _values((4, 3), dtype, rng) for name in ("x", "y")}
    assert_allclose_for_dtype(compile_and_run(model, feeds), ort_run(model, feeds))


SCAN8_MODEL = """<ir_version: 4, opset_import: ["" : 8]>
g ({lens_decl}float[2, 3] s0, float[2, 4, 3] x) => (float[2, 3] s, float[2, 4, 3] sums) {{
  {lens_node}
  s, sums = Scan ({lens}, s0, x) <
    num_scan_inputs = 1,
    {attrs}
    body: graph = body (float[3] s_in, float[3] xt) => (float[3] s_out, float[3] row) {{
      s_out = Add(s_in, xt)
      row = Identity(s_out)
    }}
  >
}}"""


@pytest.mark.parametrize(
    "lens,attrs",
    [(None, ""), (None, "directions = [1],"), ([4, 2], ""), ([3, 4], "directions = [1],")],
    ids=["batch", "reverse", "sequence-lens", "sequence-lens-reverse"],
)
def test_scan8_batched_matches_onnxruntime(lens, attrs, rng):
    if lens is None:
        text = SCAN8_MODEL.format(lens_decl="", lens_node="", lens="", attrs=attrs)
    else:
        text = SCAN8_MODEL.format(
            lens_decl="", lens_node=f"lens = Constant <value = int64[2] {{{lens[0]}, {lens[1]}}}> ()",
            lens="lens", attrs=attrs,
        )
    model = parse(text)
    feeds = {"s0": _values((2, 3), np.float32, rng), "x": _values((2, 4, 3), np.float32, rng)}
    assert_allclose_for_dtype(compile_and_run(model, feeds), ort_run(model, feeds))


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
