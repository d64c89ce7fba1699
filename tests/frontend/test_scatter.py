"""Parity of the scatter family (frontend/lowering/scatter.py: Scatter, ScatterElements, ScatterND,
TensorScatter) against onnxruntime.

Data, indices and updates flow through graph inputs.

Symbolic-dim tests (``check_symbolic``) compile one model with its ``dim_param`` dims kept as
``?``, keep that artifact through runs at two shapes, and compare each run with the oracle.
"""

from __future__ import annotations

import numpy as np
import pytest

from onnx_stablehlo.errors import UnsupportedAttributeError
from tests.util import (assert_allclose_for_dtype, check_symbolic, compile_and_run, dims_text, emitted_text, oracle_run,
                        parse, random_array, random_full_range, standard_normal)

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


# TensorScatter -------------------------------------------------------------------------------

# (cache shape, update length, axis)
SCATTER_SHAPES = [((2, 6, 4), 2, 1), ((3, 2, 5, 4), 3, -2), ((2, 3, 4, 5), 2, 1), ((2, 2, 3, 8), 3, 3)]


@pytest.mark.parametrize("indices", ["given", "omitted"])
@pytest.mark.parametrize("mode", ["linear", "circular"])
@pytest.mark.parametrize("case", SCATTER_SHAPES, ids=["rank3", "rank4-axis-2", "axis1-of-rank4", "last-axis"])
def test_tensor_scatter_matches_onnxruntime(case, mode, indices, rng):
    shape, length, axis = case
    update_shape = list(shape)
    update_shape[axis] = length
    max_length = shape[axis]
    inputs = [f"float[{dims_text(shape)}] cache", f"float[{dims_text(update_shape)}] u"]
    args = ["cache", "u"]
    feeds = {"cache": random_full_range(shape, np.float32, rng), "u": random_full_range(update_shape, np.float32, rng)}
    if indices == "given":
        inputs.append(f"int64[{shape[0]}] w")
        args.append("w")
        high = max_length if mode == "circular" else max_length - length + 1
        feeds["w"] = rng.integers(0, high, shape[0]).astype(np.int64)
    model = parse(f"""<ir_version: 11, opset_import: ["" : 24]>
g ({', '.join(inputs)}) => (float[{dims_text(shape)}] y) {{
  y = TensorScatter <mode = "{mode}", axis = {axis}> ({', '.join(args)})
}}""")
    assert_allclose_for_dtype(compile_and_run(model, feeds), oracle_run(model, feeds))


def test_tensor_scatter_is_one_batched_scatter():
    model = parse("""<ir_version: 11, opset_import: ["" : 24]>
g (float[2, 6, 4] cache, float[2, 2, 4] u, int64[2] w) => (float[2, 6, 4] y) {
  y = TensorScatter <axis = 1> (cache, u, w)
}""")
    text = emitted_text(model)
    assert '"stablehlo.scatter"' in text and "input_batching_dims = [0]" in text


def test_tensor_scatter_rejects_an_unknown_mode():
    model = parse("""<ir_version: 11, opset_import: ["" : 24]>
g (float[2, 6, 4] cache, float[2, 2, 4] u) => (float[2, 6, 4] y) {
  y = TensorScatter <mode = "ring", axis = 1> (cache, u)
}""")
    with pytest.raises(UnsupportedAttributeError, match=r"mode='ring'.*linear, circular"):
        emitted_text(model)


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


@pytest.mark.parametrize("mode", ["linear", "circular"])
def test_tensor_scatter_symbolic(mode, rng):
    def feeds(b, length, s):
        return {
            "cache": standard_normal(rng, b, 2, length, 3),
            "update": standard_normal(rng, b, 2, s, 3),
            "idx": rng.integers(0, length - s + 1, (b,)).astype(np.int64),
        }

    check_symbolic(
        24,
        f"""g (float[B, H, L, D] cache, float[B2, H2, S, D2] update, int64[B3] idx) => (float[B, H, L, D] y) {{
  y = TensorScatter <axis = 2, mode = "{mode}"> (cache, update, idx)
}}""",
        feeds,
        [(2, 5, 2), (3, 4, 1)],
    )
