"""Symbolic dims through index-driven ops (frontend/lowering/indexing.py).

Each model is compiled once with its ``dim_param`` dims as ``?`` and must keep that artifact
(``cm.artifact``) through runs at two shapes, each compared with onnxruntime.
"""

from __future__ import annotations

from tests.util import check_symbolic

import numpy as np
import pytest

import onnx_stablehlo
from tests.util import check_dynamic, parse





@pytest.mark.parametrize("axis", [0, 1])
def test_gather_elements(axis, rng):
    def feeds(n, k):
        x = rng.standard_normal((n, 3)).astype(np.float32)
        bound = n if axis == 0 else 3
        i = rng.integers(-bound, bound, (k, 3) if axis == 0 else (n, k)).astype(np.int64)
        return {"x": x, "i": i}

    index = "[K, 3]" if axis == 0 else "[N, K]"
    check_symbolic(
        18,
        f"g (float[N, 3] x, int64{index} i) => (float{index} y) {{ y = GatherElements <axis = {axis}> (x, i) }}",
        feeds,
        [(4, 2), (7, 5)],
    )


@pytest.mark.parametrize("reduction", ["none", "add"])
def test_scatter_elements(reduction, rng):
    def feeds(n, k):
        x = rng.standard_normal((n, 4)).astype(np.float32)
        # distinct targets per row, so reduction=none has one answer
        i = np.stack([rng.permutation(4)[:k] for _ in range(n)]).astype(np.int64) - 4 * (rng.random((n, k)) < 0.5)
        return {"x": x, "i": i, "u": rng.standard_normal((n, k)).astype(np.float32)}

    check_symbolic(
        18,
        f"""g (float[N, 4] x, int64[N, K] i, float[N, K] u) => (float[N, 4] y) {{
  y = ScatterElements <axis = 1, reduction = "{reduction}"> (x, i, u)
}}""",
        feeds,
        [(3, 2), (6, 3)],
    )


def test_scatter_elements_along_symbolic_axis(rng):
    def feeds(n, k):
        x = rng.standard_normal((n, 2)).astype(np.float32)
        i = np.stack([rng.permutation(n)[:k] for _ in range(2)], axis=1).astype(np.int64)
        return {"x": x, "i": i, "u": rng.standard_normal((k, 2)).astype(np.float32)}

    check_symbolic(
        18,
        "g (float[N, 2] x, int64[K, 2] i, float[K, 2] u) => (float[N, 2] y) {\n"
        "  y = ScatterElements <axis = 0> (x, i, u)\n"
        "}",
        feeds,
        [(5, 2), (9, 4)],
    )


@pytest.mark.parametrize("reduction", ["none", "mul"])
def test_scatter_nd(reduction, rng):
    def feeds(n, k):
        rows = rng.permutation(n)[:k] - n * (rng.random(k) < 0.5)
        return {
            "x": rng.standard_normal((n, 3)).astype(np.float32),
            "i": rows.reshape(k, 1).astype(np.int64),
            "u": rng.standard_normal((k, 3)).astype(np.float32),
        }

    check_symbolic(
        18,
        f"""g (float[N, 3] x, int64[K, 1] i, float[K, 3] u) => (float[N, 3] y) {{
  y = ScatterND <reduction = "{reduction}"> (x, i, u)
}}""",
        feeds,
        [(4, 2), (8, 5)],
    )


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


def test_scatter_nd_with_symbolic_index_depth(rng):
    # The last dim of indices is symbolic; the ranks fix it (updates rank = q - 1 + r - k).
    def feeds(n, k):
        points = np.stack([rng.permutation(n)[:k], rng.integers(0, 3, k)], axis=1)
        return {
            "x": rng.standard_normal((n, 3)).astype(np.float32),
            "i": points.astype(np.int64),
            "u": rng.standard_normal(k).astype(np.float32),
        }

    check_symbolic(
        18,
        "g (float[N, 3] x, int64[K, D] i, float[K] u) => (float[N, 3] y) { y = ScatterND (x, i, u) }",
        feeds,
        [(4, 2), (7, 5)],
    )
