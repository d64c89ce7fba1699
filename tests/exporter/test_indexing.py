"""Round trips of the indexing rules (exporter/rules/indexing.py): gather, scatter, dynamic
slices and pad exported from JAX, run in onnxruntime, compared with JAX on seeded inputs,
out-of-range and negative indices included (JAX clamps gather starts and drops out-of-range
scatter updates; onnxruntime must give the same answer)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from tests.exporter.util import check_roundtrip, export_jax

RNG_SEED = 20240611


def rng() -> np.random.Generator:
    return np.random.default_rng(RNG_SEED)


def floats(*shape: int, dtype=np.float32) -> np.ndarray:
    return rng().standard_normal(shape).astype(dtype)


def ints(*shape: int, low: int = -20, high: int = 20, dtype=np.int32) -> np.ndarray:
    return rng().integers(low, high, shape).astype(dtype)


def ops_of(model) -> set[str]:
    return {n.op_type for n in model.graph.node}


# Gather ------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.float16])
def test_embedding_lookup_is_gather(dtype):
    table = (floats(10, 4) * 10).astype(dtype)
    ids = np.array([3, 0, 9, 3, 7], np.int32)
    model = check_roundtrip(lambda t, i: t[i], table, ids, op_types={"Gather"})
    assert not ops_of(model) & {"GatherND", "GatherElements", "Transpose"}


def test_gather_out_of_range_and_negative_ids_clamp():
    # jnp normalises negatives (-1 -> 9); what stays out of range is clamped by the gather.
    table = floats(10, 4)
    ids = np.array([-1, -10, -11, -25, 10, 11, 99, 0], np.int32)
    check_roundtrip(lambda t, i: t[i], table, ids, op_types={"Gather"})


def test_gather_clip_mode_raw_indices():
    # mode="clip" sends the raw (negative, too large) indices to the gather.
    table = floats(10, 4)
    ids = np.array([-3, 0, 12, 5, 40], np.int32)
    check_roundtrip(lambda t, i: jnp.take(t, i, axis=0, mode="clip"), table, ids, op_types={"Gather"})


def test_take_axis1_and_fill_mode():
    x = floats(6, 5)
    ids = np.array([4, 0, 7, -2, -9], np.int32)
    check_roundtrip(lambda a, i: jnp.take(a, i, axis=1), x, ids, op_types={"Gather"})


def test_columns_x_colon_ids():
    x = ints(6, 5)
    ids = np.array([[1, 4], [0, 0]], np.int32)
    check_roundtrip(lambda a, i: a[:, i], x, ids, op_types={"Gather"})


def test_gather_middle_axis_3d():
    x = floats(3, 7, 4)
    ids = np.array([6, 1, 20], np.int32)
    check_roundtrip(lambda a, i: jnp.take(a, i, axis=1, mode="clip"), x, ids, op_types={"Gather"})


def test_traced_scalar_index():
    x = floats(6, 5)
    for i in (0, 4, -1, 17, -30):
        check_roundtrip(lambda a, k: a[k], x, np.int32(i))


def test_two_index_arrays_is_gathernd():
    x = floats(6, 5)
    a = np.array([0, 5, 9, -1, 2], np.int32)
    b = np.array([4, 0, 1, 3, -7], np.int32)
    check_roundtrip(lambda v, i, j: v[i, j], x, a, b, op_types={"GatherND"})


def test_two_index_arrays_non_leading_dims():
    x = floats(3, 6, 5)
    a = np.array([0, 5, 9], np.int32)
    b = np.array([4, 0, 1], np.int32)
    check_roundtrip(lambda v, i, j: v[:, i, j], x, a, b, op_types={"GatherND"})


def test_take_along_axis_is_gatherelements():
    x = floats(6, 5)
    ids = ints(6, 3, low=-8, high=8)
    check_roundtrip(lambda v, i: jnp.take_along_axis(v, i, axis=1), x, ids, op_types={"GatherElements"})


def test_vmap_of_take():
    x = floats(6, 5)
    ids = ints(6, 2, low=0, high=5)
    check_roundtrip(jax.vmap(lambda v, i: jnp.take(v, i, mode="clip")), x, ids)


def test_vmap_of_take_batched_rows():
    x = floats(4, 7, 3)
    ids = ints(4, 2, low=-3, high=10)
    check_roundtrip(jax.vmap(lambda v, i: jnp.take(v, i, axis=0, mode="clip")), x, ids)


def test_vmap_batching_dim_not_leading():
    # vmap over operand axis 1: the batching dims are not the leading ones.
    x = floats(7, 4, 3)
    ids = ints(4, 2, low=-3, high=10)
    check_roundtrip(jax.vmap(lambda v, i: jnp.take(v, i, axis=0, mode="clip"), in_axes=(1, 0)), x, ids)
    u = floats(4, 2, 3)
    check_roundtrip(jax.vmap(lambda v, i, w: v.at[i].add(w), in_axes=(1, 0, 0)), x, ids, u)
    check_roundtrip(jax.vmap(lambda v, i, w: v.at[i].set(w), in_axes=(1, 0, 0), out_axes=1), x, ids, u)


def test_vmap_of_dynamic_slice_windows():
    # A batched gather with windows of 3 (operand batching dims and slice size > 1).
    x = floats(4, 8)
    starts = np.array([0, 6, -2, 3], np.int32)
    check_roundtrip(jax.vmap(lambda v, i: jax.lax.dynamic_slice(v, (i,), (3,))), x, starts, op_types={"GatherND"})


def test_gather_windows_general():
    # Windows of size 2x3 at per-row starts: a raw lax.gather.
    x = floats(6, 7)
    starts = np.array([[0, 0], [5, 6], [-3, 2], [2, 40]], np.int32)
    dn = jax.lax.GatherDimensionNumbers(offset_dims=(1, 2), collapsed_slice_dims=(), start_index_map=(0, 1))
    fn = lambda v, s: jax.lax.gather(v, s, dn, slice_sizes=(2, 3), mode="clip")  # noqa: E731
    check_roundtrip(fn, x, starts, op_types={"GatherND"})


def test_gather_window_one_axis():
    x = floats(6, 7)
    starts = np.array([[0], [5], [-3], [2]], np.int32)
    dn = jax.lax.GatherDimensionNumbers(offset_dims=(1, 2), collapsed_slice_dims=(), start_index_map=(0,))
    fn = lambda v, s: jax.lax.gather(v, s, dn, slice_sizes=(3, 7), mode="clip")  # noqa: E731
    check_roundtrip(fn, x, starts, op_types={"Gather"})


def test_gather_single_start_vector_is_slice():
    x = floats(6, 7)
    dn = jax.lax.GatherDimensionNumbers(offset_dims=(0,), collapsed_slice_dims=(0,), start_index_map=(0, 1))
    fn = lambda v, s: jax.lax.gather(v, s, dn, slice_sizes=(1, 3), mode="clip")  # noqa: E731
    for start in ([0, 0], [5, 6], [-2, 3], [9, -9]):
        model = check_roundtrip(fn, x, np.array(start, np.int32), op_types={"Slice"})
        assert not ops_of(model) & {"Gather", "GatherND"}


def test_gather_partial_unindexed_slice():
    x = floats(6, 7)
    starts = np.array([[0], [5], [-3]], np.int32)
    dn = jax.lax.GatherDimensionNumbers(offset_dims=(1,), collapsed_slice_dims=(0,), start_index_map=(0,))
    fn = lambda v, s: jax.lax.gather(v, s, dn, slice_sizes=(1, 4), mode="clip")  # noqa: E731
    check_roundtrip(fn, x, starts)


def test_embedding_symbolic_batch_of_ids():
    table = floats(10, 4)
    ids = np.array([1, 12, -1, 3, 3, 0], np.int32)
    check_roundtrip(lambda t, i: t[i], table, ids, symbolic=[None, "b"], op_types={"Gather"})


def test_gather_symbolic_table_rows():
    table = floats(9, 4)
    ids = np.array([1, 12, -1, 8], np.int32)
    check_roundtrip(lambda t, i: jnp.take(t, i, axis=0, mode="clip"), table, ids, symbolic=["b, 4", None])


def test_take_axis1_symbolic_rows_dynamic_gather():
    # x[:, ids] with a symbolic first dim is a dynamic_gather with slice_sizes [b, 1].
    x = floats(5, 6)
    ids = np.array([0, 5, 2], np.int32)
    model = check_roundtrip(lambda a, i: a[:, i], x, ids, symbolic=["b, 6", None], op_types={"Gather"})
    assert "GatherND" not in ops_of(model)


def test_vmap_take_symbolic():
    x = floats(6, 5)
    ids = ints(6, 2, low=-2, high=8)
    check_roundtrip(jax.vmap(lambda v, i: jnp.take(v, i, mode="clip")), x, ids, symbolic=["b, 5", "b, 2"])


# Scatter -----------------------------------------------------------------------------------


IDS_DUP = np.array([1, 3, 1, 9, -1, 12, -14, 1], np.int32)
"""Duplicates, a normalised negative (-1), and out-of-range ids (12, -14) that JAX drops."""


def test_at_set_drops_out_of_range():
    x = floats(10, 3)
    ids = np.array([2, 4, 12, -14, 7], np.int32)
    u = floats(5, 3) + 5
    check_roundtrip(lambda a, i, v: a.at[i].set(v), x, ids, u, op_types={"ScatterND"})


@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_at_add_with_duplicates(dtype):
    x = (floats(10, 3) * 10).astype(dtype)
    u = (floats(len(IDS_DUP), 3) * 10).astype(dtype)
    check_roundtrip(lambda a, i, v: a.at[i].add(v), x, IDS_DUP, u, op_types={"ScatterND"})


@pytest.mark.parametrize("method", ["mul", "max", "min"])
@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_at_reductions(method, dtype):
    x = (floats(10, 3) * 4).astype(dtype)
    u = (floats(len(IDS_DUP), 3) * 4).astype(dtype)
    fn = lambda a, i, v: getattr(a.at[i], method)(v)  # noqa: E731
    check_roundtrip(fn, x, IDS_DUP, u, op_types={"ScatterND"})


def test_at_set_bool():
    x = np.zeros((6, 2), np.bool_)
    ids = np.array([1, 7, 4, -9], np.int32)
    check_roundtrip(lambda a, i: a.at[i].set(True), x, ids)


def test_at_set_scalar_pair():
    x = floats(6, 5)
    for i, j in ((1, 2), (5, 4), (-1, 0), (6, 1), (-7, 2), (2, 9)):
        check_roundtrip(lambda a, p, q: a.at[p, q].set(7.5), x, np.int32(i), np.int32(j))


def test_at_set_constant_index_has_no_mask():
    x = floats(6, 5)
    model = check_roundtrip(lambda a: a.at[2].set(1.0), x)
    assert "Pad" not in ops_of(model)


def test_at_columns_add_is_scatterelements():
    x = floats(6, 5)
    ids = np.array([0, 4, 4, -1, 5, 9], np.int32)
    u = floats(6, 6)
    model = check_roundtrip(lambda a, i, v: a.at[:, i].add(v), x, ids, u, op_types={"ScatterElements"})
    assert "Transpose" not in ops_of(model)


def test_at_columns_set():
    x = ints(6, 5)
    ids = np.array([0, 4, -1, 5, 9], np.int32)
    u = ints(6, 5, low=100, high=200)
    check_roundtrip(lambda a, i, v: a.at[:, i].set(v), x, ids, u, op_types={"ScatterElements"})


def test_grad_of_gather_is_scatter_add():
    x = floats(6, 5)
    ids = np.array([0, 5, 5, 2, -1, 3], np.int32)
    check_roundtrip(jax.grad(lambda a, i: (a[i] ** 2).sum()), x, ids, op_types={"ScatterND"})


def test_segment_sum():
    data = floats(8, 3)
    seg = np.array([0, 0, 1, 3, 3, 3, 5, -1], np.int32)  # 5 and -1 are out of range: dropped
    check_roundtrip(lambda d, s: jax.ops.segment_sum(d, s, num_segments=4), data, seg, op_types={"ScatterND"})


def test_segment_max_int():
    data = ints(8, 3)
    seg = np.array([0, 0, 1, 3, 3, 3, 2, 1], np.int32)
    check_roundtrip(lambda d, s: jax.ops.segment_max(d, s, num_segments=4), data, seg)


def test_scatter_symbolic_rows():
    x = floats(7, 3)
    ids = np.array([1, 3, 1, 6, 8, -9], np.int32)
    u = floats(6, 3)
    check_roundtrip(lambda a, i, v: a.at[i].add(v), x, ids, u, symbolic=["b, 3", "n", "n, 3"])
    check_roundtrip(lambda a, i, v: a.at[i].set(v), x, ids, u, symbolic=["b, 3", "n", "n, 3"])


def test_scatter_columns_symbolic_rows():
    x = floats(5, 6)
    ids = np.array([0, 5, 7], np.int32)
    u = floats(5, 3)
    check_roundtrip(lambda a, i, v: a.at[:, i].add(v), x, ids, u, symbolic=["b, 6", None, "b, 3"])


def test_scatter_two_index_arrays():
    x = floats(6, 5)
    a = np.array([0, 5, 5, 9, 2], np.int32)
    b = np.array([4, 0, 0, 1, -7], np.int32)
    u = floats(5)
    check_roundtrip(lambda v, i, j, w: v.at[i, j].add(w), x, a, b, u)
    check_roundtrip(lambda v, i, j, w: v.at[i, j].set(w), x, a, b, u)


def test_put_along_axis_batched_scatter():
    x = floats(4, 6)
    ids = ints(4, 2, low=-2, high=8)
    u = floats(4, 2)
    check_roundtrip(jax.vmap(lambda v, i, w: v.at[i].add(w)), x, ids, u)
    check_roundtrip(jax.vmap(lambda v, i, w: v.at[i].set(w)), x, ids, u)


def test_scatter_windows_general():
    # Windows of 2 rows at per-update starts along dim 0, whole rows (a raw lax.scatter).
    x = floats(7, 3)
    idx = np.array([[0], [5], [6], [-1], [2]], np.int32)  # 6 and -1 do not fit: dropped
    u = floats(5, 2, 3)
    dn = jax.lax.ScatterDimensionNumbers(update_window_dims=(1, 2), inserted_window_dims=(),
                                         scatter_dims_to_operand_dims=(0,))
    check_roundtrip(lambda a, i, v: jax.lax.scatter_add(a, i, v, dn), x, idx, u)
    check_roundtrip(lambda a, i, v: jax.lax.scatter(a, i, v, dn), x, idx, u)


def test_unrecognised_update_computation_is_listed():
    from onnx_stablehlo.errors import UnsupportedExportError

    x = floats(6)
    ids = np.array([[1], [2]], np.int32)
    dn = jax.lax.ScatterDimensionNumbers(update_window_dims=(), inserted_window_dims=(0,),
                                         scatter_dims_to_operand_dims=(0,))
    # A body that is not one of the reductions: t * 2 + 1.
    fn = lambda a, i: jax.lax.scatter_apply(a, i, lambda t: t * 2 + 1, dn, update_shape=(2,))  # noqa: E731
    with pytest.raises(UnsupportedExportError, match="update_computation"):
        export_jax(fn, x, ids)


# Dynamic slices ----------------------------------------------------------------------------


def test_dynamic_slice_clamps():
    x = floats(6, 5)
    for i in (0, 2, 4, 9, -3):
        check_roundtrip(lambda a, k: jax.lax.dynamic_slice(a, (k, 1), (2, 3)), x, np.int32(i), op_types={"Slice"})


def test_dynamic_slice_in_dim_traced_start():
    x = ints(8, 5)
    for i in (2, 7, -1):
        check_roundtrip(lambda a, k: jax.lax.dynamic_slice_in_dim(a, k, 3), x, np.int32(i))


def test_dynamic_slice_symbolic():
    x = floats(6, 5)
    for i in (0, 3, 4, 10):
        check_roundtrip(lambda a, k: jax.lax.dynamic_slice_in_dim(a, k, 2, axis=1), x, np.int32(i),
                        symbolic=["b, 5", None])


@pytest.mark.parametrize("pos", [0, 5, 15, 16, 40, -2])
def test_kv_cache_write(pos):
    cache = floats(2, 16, 4)
    new = floats(2, 1, 4) + 10
    model = check_roundtrip(lambda c, u, p: jax.lax.dynamic_update_slice(c, u, (0, p, 0)), cache, new, np.int32(pos),
                            op_types={"ScatterND"})
    # One write of the update's 2x1 rows into the buffer: no padding, transposes or concats of it.
    assert not ops_of(model) & {"Pad", "Transpose", "Expand"}


def test_dynamic_update_slice_2d_block():
    x = ints(6, 7)
    u = ints(2, 3, low=100, high=200)
    for i, j in ((0, 0), (4, 4), (5, 6), (-1, 2), (3, 30)):
        check_roundtrip(lambda a, b, p, q: jax.lax.dynamic_update_slice(a, b, (p, q)), x, u, np.int32(i), np.int32(j))


def test_dynamic_update_slice_symbolic_batch():
    cache = floats(3, 8, 4)
    new = floats(3, 2, 4)
    for pos in (0, 6, 7, 100):
        check_roundtrip(lambda c, u, p: jax.lax.dynamic_update_slice(c, u, (0, p, 0)), cache, new, np.int32(pos),
                        symbolic=["b, 8, 4", "b, 2, 4", None])


# Pad ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("config", [
    [(1, 2, 0), (0, 3, 0)],
    [(1, -1, 2), (-2, 1, 0)],
    [(-1, -2, 0), (0, 0, 1)],
    [(0, 0, 3), (2, -3, 1)],
    [(3, -5, 0), (0, 0, 0)],
])
def test_pad(config):
    x = floats(6, 5)
    check_roundtrip(lambda a: jax.lax.pad(a, np.float32(-9.0), config), x)


def test_pad_int_traced_value():
    x = ints(4, 3)
    check_roundtrip(lambda a, v: jax.lax.pad(a, v, [(1, 0, 1), (0, -1, 2)]), x, np.int32(77))


def test_pad_symbolic():
    x = floats(6, 5)
    check_roundtrip(lambda a: jax.lax.pad(a, np.float32(0.5), [(1, -1, 2), (-2, 1, 1)]), x, symbolic=["b, 5"])
    check_roundtrip(lambda a: jnp.pad(a, ((2, 1), (0, 3))), x, symbolic=["b, 5"], op_types={"Pad"})


def test_jnp_pad_modes():
    x = floats(5, 4)
    check_roundtrip(lambda a: jnp.pad(a, ((1, 2), (3, 0))), x, op_types={"Pad"})


# Literal translations and ops JAX does not emit directly ----------------------------------


@pytest.mark.parametrize("case", ["embedding", "gathernd", "windows", "scatter_set", "scatter_cols", "dus", "pad"])
def test_literal_translation(case):
    # optimize=False: the rules' own graph (no folding) must pass the checker and run.
    x = floats(6, 5)
    ids = np.array([0, 5, 9, -1], np.int32)
    cases = {
        "embedding": (lambda a, i: a[i], (x, ids)),
        "gathernd": (lambda a, i: a[i, i], (x, ids)),
        "windows": (jax.vmap(lambda v, i: jax.lax.dynamic_slice(v, (i,), (3,))),
                    (x, np.array([0, 4, -1, 2, 3, 9], np.int32))),
        "scatter_set": (lambda a, i: a.at[i].set(3.0), (x, ids)),
        "scatter_cols": (lambda a, i: a.at[:, i].max(1.0), (x, ids)),
        "dus": (lambda a, p: jax.lax.dynamic_update_slice(a, jnp.ones((2, 5)), (p, 0)), (x, np.int32(5))),
        "pad": (lambda a: jax.lax.pad(a, np.float32(2.0), [(2, -1, 1), (-1, 2, 2)]), (x,)),
    }
    fn, args = cases[case]
    check_roundtrip(fn, *args, optimize=False)


def _run_text(text: str, *args):
    from onnx_stablehlo.exporter import module_to_onnx
    from tests.exporter.util import run_onnx

    return run_onnx(module_to_onnx(text).model, *args)


def test_dynamic_pad_runtime_edges():
    text = """
    func.func @main(%x: tensor<4x3xf32>, %v: tensor<f32>, %lo: tensor<2xi64>, %hi: tensor<2xi64>) -> tensor<?x?xf32> {
      %int = stablehlo.constant dense<[1, 0]> : tensor<2xi64>
      %0 = stablehlo.dynamic_pad %x, %v, %lo, %hi, %int
          : (tensor<4x3xf32>, tensor<f32>, tensor<2xi64>, tensor<2xi64>, tensor<2xi64>) -> tensor<?x?xf32>
      return %0 : tensor<?x?xf32>
    }"""
    x = floats(4, 3)
    for lo, hi in (([1, 2], [0, 1]), ([-1, 0], [2, -2]), ([0, -1], [-3, 0])):
        got = _run_text(text, x, np.float32(7.0), np.array(lo, np.int64), np.array(hi, np.int64))[0]
        want = jax.lax.pad(x, np.float32(7.0), [(lo[0], hi[0], 1), (lo[1], hi[1], 0)])
        np.testing.assert_array_equal(got, np.asarray(want))


def test_variadic_scatter_add_and_replace():
    text = """
    func.func @main(%a: tensor<5xf32>, %b: tensor<5xi32>, %i: tensor<3x1xi32>, %ua: tensor<3xf32>, %ub: tensor<3xi32>)
        -> (tensor<5xf32>, tensor<5xi32>) {
      %0:2 = "stablehlo.scatter"(%a, %b, %i, %ua, %ub) <{scatter_dimension_numbers = #stablehlo.scatter<
          inserted_window_dims = [0], scatter_dims_to_operand_dims = [0], index_vector_dim = 1>}> ({
        ^bb0(%x0: tensor<f32>, %x1: tensor<i32>, %y0: tensor<f32>, %y1: tensor<i32>):
          %s = stablehlo.add %x0, %y0 : tensor<f32>
          stablehlo.return %s, %y1 : tensor<f32>, tensor<i32>
      }) : (tensor<5xf32>, tensor<5xi32>, tensor<3x1xi32>, tensor<3xf32>, tensor<3xi32>)
          -> (tensor<5xf32>, tensor<5xi32>)
      return %0#0, %0#1 : tensor<5xf32>, tensor<5xi32>
    }"""
    a, b = floats(5), ints(5)
    idx = np.array([[4], [7], [1]], np.int32)  # 7 is out of range: dropped
    ua, ub = floats(3) + 3, ints(3, low=100, high=200)
    got_a, got_b = _run_text(text, a, b, idx, ua, ub)
    want_a, want_b = a.copy(), b.copy()
    for k, j in enumerate(idx[:, 0]):
        if 0 <= j < 5:
            want_a[j] += ua[k]
            want_b[j] = ub[k]
    np.testing.assert_allclose(got_a, want_a, rtol=1e-6)
    np.testing.assert_array_equal(got_b, want_b)
