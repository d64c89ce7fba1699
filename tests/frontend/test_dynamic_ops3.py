"""Symbolic dims through Reshape's -1, Split, DepthToSpace/SpaceToDepth (tensor.py),
SplitToSequence/ConcatFromSequence (sequence.py), CumProd, BitCast, TensorScatter and the
training optimizers (misc.py), GatherND (indexing.py), Quantize/DequantizeLinear (conversion.py)
and training-mode Dropout (activation.py).

Each model is compiled once with its ``dim_param`` dims as ``?`` and must keep that artifact
(``cm.artifact``) through runs at two shapes, each compared with onnxruntime (onnx.reference
where onnxruntime has no kernel).
"""

from __future__ import annotations

from tests.util import check_symbolic, standard_normal

import numpy as np
import pytest

import onnx_stablehlo
from tests.util import assert_allclose_for_dtype, check_dynamic, oracle_run, parse, reference_run


def _compile(opset: int, text: str, extra_opsets: str = "") -> tuple[onnx_stablehlo.CompiledModel, object]:
    model = parse(f'<ir_version: 9, opset_import: ["" : {opset}{extra_opsets}]>\n' + text)
    compiled = onnx_stablehlo.compile(model)
    assert compiled.artifact is not None, compiled.dynamic_error
    return compiled, model






# Reshape ---------------------------------------------------------------------------------------


def test_reshape_head_split_floor_divides_a_symbolic_dim(rng):
    # [B, S, H] -> [B, S, 3, H/3]: H is not provably a multiple of 3, so the -1 is floor(H / 3).
    compiled = check_symbolic(
        18,
        """g (float[B, S, H] x) => (float[B, S, H] y) {
  heads = Constant <value = int64[4] {0, 0, 3, -1}> ()
  back = Constant <value = int64[3] {0, 0, -1}> ()
  split = Reshape(x, heads)
  t = Transpose <perm = [0, 2, 1, 3]> (split)
  u = Transpose <perm = [0, 2, 1, 3]> (t)
  merged = Reshape(u, back)
  y = Add(merged, x)
}""",
        lambda b, s, h: {"x": standard_normal(rng, b, s, h)},
        [(2, 3, 6), (1, 5, 12)],
    )
    # Adding x back assumes 3*floor(H / 3) == H, checked against each feed.
    assert [str(e.rhs) for e in compiled.artifact.dim_equalities] == ["3*floor(H / 3)"]


def test_reshape_minus_one_of_unrelated_symbols_is_computed_at_run_time(rng):
    # The target takes Q's batch (B) for K ([B2, S, H]): K's -1 is B2*S*H / (3*B*S), which
    # no dim expression states; it is divided at run time.
    check_symbolic(
        18,
        """g (float[B, S, H] q, float[B2, S2, H2] k) => (float[B, S2, 3, N] y) {
  s = Shape(q)
  zero = Constant <value = int64[1] {0}> ()
  one = Constant <value = int64[1] {1}> ()
  batch = Slice(s, zero, one)
  tail = Constant <value = int64[3] {0, 3, -1}> ()
  target = Concat <axis = 0> (batch, tail)
  y = Reshape(k, target)
}""",
        lambda b, s, h: {"q": standard_normal(rng, b, s, h), "k": standard_normal(rng, b, s + 1, h)},
        [(2, 3, 6), (3, 2, 9)],
    )


# Split -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("outputs", [2, 3])
def test_split_num_outputs_uneven_symbolic_axis(outputs, rng):
    names = ", ".join(f"y{i}" for i in range(outputs))
    types = ", ".join(f"float[B, D{i}] y{i}" for i in range(outputs))
    check_symbolic(
        18,
        f"""g (float[B, N] x) => ({types}) {{
  {names} = Split <axis = 1, num_outputs = {outputs}> (x)
}}""",
        lambda b, n: {"x": standard_normal(rng, b, n)},
        [(2, 7), (3, 9)],
    )


def test_split_equal_parts_opset13_symbolic_axis(rng):
    check_symbolic(
        13,
        """g (float[N, C] x) => (float[N2, C] a, float[N3, C] b) {
  a, b = Split <axis = 0> (x)
}""",
        lambda n, c: {"x": standard_normal(rng, n, c)},
        [(4, 3), (6, 5)],
    )


def test_split_constant_sizes_on_a_symbolic_other_axis(rng):
    check_symbolic(
        13,
        """g (float[N, 5] x) => (float[N, 2] a, float[N, 3] b) {
  sizes = Constant <value = int64[2] {2, 3}> ()
  a, b = Split <axis = 1> (x, sizes)
}""",
        lambda n: {"x": standard_normal(rng, n, 5)},
        [(1,), (4,)],
    )


def test_split_constant_sizes_on_the_symbolic_axis_falls_back(rng):
    model = parse("""<ir_version: 9, opset_import: ["" : 13]>
g (float[N] x) => (float[A] a, float[B] b) {
  sizes = Constant <value = int64[2] {2, 3}> ()
  a, b = Split <axis = 0> (x, sizes)
}""")
    compiled = onnx_stablehlo.compile(model)
    assert compiled.artifact is None
    assert "ShapeError" in compiled.dynamic_error and "cannot be matched" in compiled.dynamic_error
    feeds = {"x": standard_normal(rng, 5)}
    assert_allclose_for_dtype(compiled.run(feeds), oracle_run(model, feeds))


# DepthToSpace, SpaceToDepth -----------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["DCR", "CRD"])
def test_depth_to_space_symbolic(mode, rng):
    check_symbolic(
        13,
        f"""g (float[N, C, H, W] x) => (float[N, C2, H2, W2] y) {{
  y = DepthToSpace <blocksize = 2, mode = "{mode}"> (x)
}}""",
        lambda n, c, h, w: {"x": standard_normal(rng, n, c, h, w)},
        [(1, 8, 2, 3), (2, 4, 3, 1)],
    )


def test_space_to_depth_symbolic(rng):
    check_symbolic(
        13,
        """g (float[N, C, H, W] x) => (float[N, C2, H2, W2] y) {
  y = SpaceToDepth <blocksize = 2> (x)
}""",
        lambda n, c, h, w: {"x": standard_normal(rng, n, c, h, w)},
        [(1, 3, 4, 6), (2, 1, 2, 8)],
    )


# SplitToSequence, ConcatFromSequence -----------------------------------------------------------


@pytest.mark.parametrize("new_axis", [0, 1])
def test_split_to_sequence_static_axis_symbolic_rest(new_axis, rng):
    check_symbolic(
        18,
        f"""g (float[N, 6] x) => (float[M, K] y) {{
  sizes = Constant <value = int64[3] {{1, 2, 3}}> ()
  seq = SplitToSequence <axis = 1> (x, sizes)
  y = ConcatFromSequence <axis = 1, new_axis = {new_axis}> (seq)
}}""" if not new_axis else f"""g (float[N, 6] x) => (float[M, K, J] y) {{
  seq = SplitToSequence <axis = 1, keepdims = 1> (x)
  y = ConcatFromSequence <axis = 0, new_axis = {new_axis}> (seq)
}}""",
        lambda n: {"x": standard_normal(rng, n, 6)},
        [(2,), (5,)],
    )


def test_split_to_sequence_symbolic_axis_without_split_falls_back(rng):
    model = parse("""<ir_version: 9, opset_import: ["" : 18]>
g (float[N, C] x) => (float[M, K] y) {
  seq = SplitToSequence <axis = 1, keepdims = 0> (x)
  y = ConcatFromSequence <axis = 0> (seq)
}""")
    compiled = onnx_stablehlo.compile(model)
    assert compiled.artifact is None and "the sequence length depends on the size" in compiled.dynamic_error
    feeds = {"x": standard_normal(rng, 2, 3)}
    assert_allclose_for_dtype(compiled.run(feeds), oracle_run(model, feeds))


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


def test_bit_cast_symbolic(rng):
    check_symbolic(
        26,
        """g (float[N, M] x) => (int32[N, M] y) {
  y = BitCast <to = 6> (x)
}""",
        lambda n, m: {"x": standard_normal(rng, n, m)},
        [(2, 3), (4, 1)],
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


# ai.onnx.preview.training optimizers -------------------------------------------------------------


@pytest.mark.parametrize(
    "op, groups, attrs",
    [
        ("Adagrad", ["X", "G", "H"], "decay_factor = 0.1, epsilon = 1e-5, norm_coefficient = 0.01"),
        ("Adam", ["X", "G", "V", "H"], "alpha = 0.9, beta = 0.999, epsilon = 1e-6, norm_coefficient = 0.01"),
        ("Momentum", ["X", "G", "V"], 'alpha = 0.9, beta = 0.1, mode = "nesterov", norm_coefficient = 0.01'),
    ],
)
def test_optimizers_symbolic(op, groups, attrs, rng):
    outputs = {"Adagrad": ["X", "H"], "Adam": ["X", "V", "H"], "Momentum": ["X", "V"]}[op]
    args = ", ".join(groups)
    params = ", ".join(f"float[{g}_n, {g}_m] {g}" for g in groups)
    results = ", ".join(f"{o}2" for o in outputs)
    result_types = ", ".join(f"float[N, M] {o}2" for o in outputs)

    def feeds(n, m):
        values = {"R": np.array(0.1, np.float32), "T": np.array(3, np.int64)}
        values.update({g: standard_normal(rng, n, m) for g in groups})
        values["H"] = np.abs(values["H"]) if "H" in values else None
        return {k: v for k, v in values.items() if v is not None}

    check_symbolic(
        17,
        f"""g (float R, int64 T, {params}) => ({result_types}) {{
  {results} = ai.onnx.preview.training.{op} <{attrs}> (R, T, {args})
}}""",
        feeds,
        [(2, 3), (4, 1)],
        oracle=_reference_float32,
        extra_opsets=', "ai.onnx.preview.training" : 1',
    )


def _reference_float32(model, feeds):
    # onnx.reference's Adam computes in float64 (as test_misc.py notes): compare as float32.
    return [np.asarray(e).astype(np.float32) for e in reference_run(model, feeds)]


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


# Quantization ------------------------------------------------------------------------------------


def test_quantize_linear_per_axis_symbolic(rng):
    def feeds(n, c, h):
        return {
            "x": standard_normal(rng, n, c, h) * 10,
            "scale": rng.uniform(0.05, 0.5, c).astype(np.float32),
            "zero": rng.integers(-5, 5, c).astype(np.int8),
        }

    check_symbolic(
        21,
        """g (float[N, C, H] x, float[C2] scale, int8[C3] zero) => (int8[N, C, H] y) {
  y = QuantizeLinear <axis = 1> (x, scale, zero)
}""",
        feeds,
        [(2, 3, 4), (1, 5, 2)],
    )


def test_quantize_linear_blocked_symbolic(rng):
    def feeds(n, d):
        blocks = -(-d // 2)
        return {
            "x": standard_normal(rng, n, d) * 10,
            "scale": rng.uniform(0.05, 0.5, (n, blocks)).astype(np.float32),
            "zero": rng.integers(0, 9, (n, blocks)).astype(np.uint8),
        }

    check_symbolic(
        21,
        """g (float[N, D] x, float[N2, NB] scale, uint8[N3, NB2] zero) => (uint8[N, D] y) {
  y = QuantizeLinear <axis = 1, block_size = 2> (x, scale, zero)
}""",
        feeds,
        [(2, 5), (3, 4)],
    )


@pytest.mark.parametrize("per_axis", [False, True])
def test_dequantize_linear_symbolic(per_axis, rng):
    def feeds(n, c):
        size = c if per_axis else 1
        return {
            "x": rng.integers(-128, 127, (n, c)).astype(np.int8),
            "scale": rng.uniform(0.05, 0.5, size).astype(np.float32),
            "zero": rng.integers(-5, 5, size).astype(np.int8),
        }

    check_symbolic(
        21,
        """g (int8[N, C] x, float[S] scale, int8[Z] zero) => (float[N, C] y) {
  y = DequantizeLinear <axis = 1> (x, scale, zero)
}""",
        feeds,
        [(2, 3), (4, 6)],
    )


def test_dynamic_quantize_linear_symbolic(rng):
    check_symbolic(
        11,
        """g (float[N, M] x) => (uint8[N, M] y, float s, uint8 z) {
  y, s, z = DynamicQuantizeLinear(x)
}""",
        lambda n, m: {"x": standard_normal(rng, n, m)},
        [(2, 3), (5, 4)],
    )


# Dropout -------------------------------------------------------------------------------------------


def test_training_dropout_zero_ratio_symbolic(rng):
    check_symbolic(
        13,
        """g (float[N, M] x, float r, bool t) => (float[N, M] y, bool[N, M] mask) {
  y, mask = Dropout <seed = 3> (x, r, t)
}""",
        lambda n, m: {"x": standard_normal(rng, n, m), "r": np.array(0.0, np.float32), "t": np.array(True)},
        [(2, 3), (4, 5)],
    )


def test_training_dropout_symbolic_draws_a_seeded_mask(rng):
    compiled, _ = _compile(
        13,
        """g (float[N, M] x) => (float[N, M] y, bool[N, M] mask) {
  r = Constant <value = float {0.25}> ()
  t = Constant <value = bool {1}> ()
  y, mask = Dropout <seed = 7> (x, r, t)
}""",
    )
    assert "stablehlo.rng_bit_generator" not in compiled.mlir
    for n, m in [(64, 50), (30, 101)]:
        x = standard_normal(rng, n, m)
        y, mask = compiled.run({"x": x})
        assert 0.7 < mask.mean() < 0.8  # keep probability 1 - ratio
        np.testing.assert_allclose(y, np.where(mask, x / 0.75, 0), rtol=1e-6)
        again = compiled.run({"x": x})[1]
        np.testing.assert_array_equal(mask, again)  # the module's seed is fixed
    assert compiled.artifact is not None
