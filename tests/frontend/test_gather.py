"""Parity of the gather family (frontend/lowering/gather.py: Gather, GatherElements, GatherND)
against onnxruntime.

Data and indices flow through graph inputs unless a test is about constant indices.

Symbolic-dim tests (``check_symbolic``) compile one model with its ``dim_param`` dims kept as
``?``, keep that artifact through runs at two shapes, and compare each run with the oracle.
"""

from __future__ import annotations

import numpy as np
import pytest

from tests.util import (assert_allclose_for_dtype, check_symbolic, compile_and_run, constant_node, dims_text,
                        emitted_text, onnx_type_name, oracle_run, parse, random_array, standard_normal)

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


# GatherND ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "batch_dims, data_type, index_type, out_type",
    [
        (0, "float[A, B, C]", "int64[I, K]", "float[I, C]"),
        (0, "float[A, B, C]", "int64[I, J, K]", "float[I, J, B, C]"),
        (1, "float[A, B, C]", "int64[A2, K]", "float[A, C]"),
    ],
)
def test_gather_nd_symbolic_index_depth(batch_dims, data_type, index_type, out_type, rng):
    def feeds(a, b, c, i):
        data = standard_normal(rng, a, b, c)
        if batch_dims:
            indices = rng.integers(-b, b, (a, 1))
        elif "J" in index_type:
            indices = rng.integers(-a, a, (i, 2, 1))
        else:
            indices = np.stack([rng.integers(-a, a, i), rng.integers(-b, b, i)], axis=1)
        return {"data": data, "indices": indices.astype(np.int64)}

    check_symbolic(
        13,
        f"""g ({data_type} data, {index_type} indices) => ({out_type} y) {{
  y = GatherND <batch_dims = {batch_dims}> (data, indices)
}}""",
        feeds,
        [(2, 3, 4, 5), (3, 2, 1, 2)],
    )
