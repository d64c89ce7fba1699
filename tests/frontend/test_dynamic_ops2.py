"""Symbolic dims through normalizations, Hardmax/Softmax, ArgMax/ArgMin, reductions, Gemm,
Einsum and TopK (frontend/lowering/normalization.py, activation.py, reduction.py, matmul.py,
sorting.py).

Each model is compiled once with its ``dim_param`` dims as ``?`` and must keep that artifact
(``cm.artifact``) through runs at two shapes, each compared with onnxruntime (onnx.reference
where onnxruntime has no kernel).
"""

from __future__ import annotations

from tests.util import check_symbolic, standard_normal

import re

import numpy as np
import pytest

import onnx_stablehlo
from tests.util import check_dynamic, parse






# Normalizations --------------------------------------------------------------------------------


@pytest.mark.parametrize("axis", [-1, 1, 0])
def test_layer_normalization_symbolic_normalized_axes(axis, rng):
    def feeds(b, s, h):
        return {"x": standard_normal(rng, b, s, h), "scale": standard_normal(rng, h), "bias": standard_normal(rng, h)}

    check_symbolic(
        17,
        "g (float[B, S, H] x, float[H] scale, float[H] bias) => (float[B, S, H] y, float mean, float inv) {\n"
        f"  y, mean, inv = LayerNormalization <axis = {axis}, epsilon = 0.001> (x, scale, bias)\n"
        "}",
        feeds,
        [(2, 3, 8), (3, 5, 4)],
    )


def test_layer_normalization_static_hidden(rng):
    def feeds(b, s):
        return {"x": standard_normal(rng, b, s, 16)}

    check_symbolic(
        17,
        "g (float[B, S, 16] x) => (float[B, S, 16] y)\n"
        "<float[16] scale = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}, float[16] bias = "
        "{0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1}> {\n"
        "  y = LayerNormalization <axis = -1> (x, scale, bias)\n"
        "}",
        feeds,
        [(1, 7), (4, 3)],
    )


@pytest.mark.parametrize("axis", [-1, 1])
def test_rms_normalization(axis, rng):
    def feeds(b, s, h):
        scale_shape = (h,) if axis == -1 else (s, h)
        return {"x": standard_normal(rng, b, s, h), "scale": standard_normal(rng, *scale_shape)}

    scale = "float[H]" if axis == -1 else "float[S, H]"
    check_symbolic(
        23,
        f"g (float[B, S, H] x, {scale} scale) => (float[B, S, H] y) {{\n"
        f"  y = RMSNormalization <axis = {axis}, epsilon = 0.01> (x, scale)\n"
        "}",
        feeds,
        [(2, 3, 8), (3, 5, 4)],
    )


def test_mean_variance_normalization(rng):
    def feeds(n, c, h, w):
        return {"x": standard_normal(rng, n, c, h, w)}

    check_symbolic(
        13,
        "g (float[N, C, H, W] x) => (float[N, C, H, W] y) {\n  y = MeanVarianceNormalization (x)\n}",
        feeds,
        [(2, 3, 4, 5), (1, 2, 6, 3)],
    )


def test_instance_normalization(rng):
    def feeds(n, c, h, w):
        return {"x": standard_normal(rng, n, c, h, w), "s": standard_normal(rng, c), "b": standard_normal(rng, c)}

    check_symbolic(
        22,
        "g (float[N, C, H, W] x, float[C] s, float[C] b) => (float[N, C, H, W] y) {\n"
        "  y = InstanceNormalization <epsilon = 0.01> (x, s, b)\n"
        "}",
        feeds,
        [(2, 3, 4, 5), (1, 2, 6, 3)],
    )


BATCH_NORM = {
    "inference": ("float[N, C, H] y", "y", "epsilon = 0.01"),
    "training": (
        "float[N, C, H] y, float[C] rm, float[C] rv", "y, rm, rv",
        "epsilon = 0.01, momentum = 0.8, training_mode = 1",
    ),
}


@pytest.mark.parametrize("mode", list(BATCH_NORM))
def test_batch_normalization(mode, rng):
    outputs, names, attributes = BATCH_NORM[mode]

    def feeds(n, c, h):
        return {
            "x": standard_normal(rng, n, c, h),
            "s": standard_normal(rng, c),
            "b": standard_normal(rng, c),
            "m": standard_normal(rng, c),
            "v": rng.random(c).astype(np.float32) + 0.5,
        }

    check_symbolic(
        15,
        f"g (float[N, C, H] x, float[C] s, float[C] b, float[C] m, float[C] v) => ({outputs}) {{\n"
        f"  {names} = BatchNormalization <{attributes}> (x, s, b, m, v)\n"
        "}",
        feeds,
        [(2, 3, 4), (3, 5, 2)],
    )


def test_group_normalization_symbolic_channels(rng):
    def feeds(n, c, h):
        return {"x": standard_normal(rng, n, c, h), "s": standard_normal(rng, c), "b": standard_normal(rng, c)}

    check_symbolic(
        21,
        "g (float[N, C, H] x, float[C] s, float[C] b) => (float[N, C, H] y) {\n"
        "  y = GroupNormalization <epsilon = 0.01, num_groups = 2> (x, s, b)\n"
        "}",
        feeds,
        [(2, 4, 3), (1, 6, 5)],
    )


# Softmax family ----------------------------------------------------------------------------------


@pytest.mark.parametrize("opset", [11, 13])
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_hardmax(opset, axis, rng):
    def feeds(a, b, c):
        # integer-valued inputs, so ties (the first maximum wins) happen
        return {"x": rng.integers(0, 3, (a, b, c)).astype(np.float32)}

    check_symbolic(
        opset,
        f"g (float[A, B, C] x) => (float[A, B, C] y) {{\n  y = Hardmax <axis = {axis}> (x)\n}}",
        feeds,
        [(2, 3, 4), (3, 1, 5)],
    )


@pytest.mark.parametrize("op", ["Softmax", "LogSoftmax"])
@pytest.mark.parametrize("opset", [11, 13])
def test_softmax_legacy_and_current(op, opset, rng):
    def feeds(a, b, c):
        return {"x": standard_normal(rng, a, b, c)}

    check_symbolic(
        opset,
        f"g (float[A, B, C] x) => (float[A, B, C] y) {{\n  y = {op} <axis = 1> (x)\n}}",
        feeds,
        [(2, 3, 4), (3, 2, 5)],
    )


# Reductions --------------------------------------------------------------------------------------


@pytest.mark.parametrize("op", ["ArgMax", "ArgMin"])
@pytest.mark.parametrize("keepdims", [0, 1])
@pytest.mark.parametrize("last", [0, 1])
def test_arg_reduce(op, keepdims, last, rng):
    def feeds(a, b):
        return {"x": rng.integers(0, 4, (a, b, 3)).astype(np.float32)}

    out = "[A, 1, 3]" if keepdims else "[A, 3]"
    check_symbolic(
        13,
        f"g (float[A, B, 3] x) => (int64{out} y) {{\n"
        f"  y = {op} <axis = 1, keepdims = {keepdims}, select_last_index = {last}> (x)\n"
        "}",
        feeds,
        [(2, 5), (4, 3)],
    )


@pytest.mark.parametrize("op", ["ReduceMean", "ReduceLogSumExp", "ReduceL2", "ReduceMax"])
def test_reduce_constant_axes(op, rng):
    def feeds(a, b):
        return {"x": standard_normal(rng, a, b, 4)}

    check_symbolic(
        18,
        "g (float[A, B, 4] x) => (float[A, 1, 1] y) <int64[2] axes = {1, 2}> {\n"
        f"  y = {op} <keepdims = 1> (x, axes)\n"
        "}",
        feeds,
        [(2, 5), (3, 2)],
    )


# Gemm, Einsum ------------------------------------------------------------------------------------


@pytest.mark.parametrize("trans_a, trans_b", [(0, 0), (1, 0), (0, 1), (1, 1)])
def test_gemm_symbolic_dims(trans_a, trans_b, rng):
    def feeds(m, k, n):
        a = standard_normal(rng, *((k, m) if trans_a else (m, k)))
        b = standard_normal(rng, *((n, k) if trans_b else (k, n)))
        return {"a": a, "b": b, "c": standard_normal(rng, n)}

    a_type = "float[K, M]" if trans_a else "float[M, K]"
    b_type = "float[N, K]" if trans_b else "float[K, N]"
    check_symbolic(
        13,
        f"g ({a_type} a, {b_type} b, float[N] c) => (float[M, N] y) {{\n"
        f"  y = Gemm <alpha = 0.5, beta = 2.0, transA = {trans_a}, transB = {trans_b}> (a, b, c)\n"
        "}",
        feeds,
        [(2, 3, 4), (5, 1, 3)],
    )


def test_gemm_scalar_bias_static_weight(rng):
    def feeds(m):
        return {"a": standard_normal(rng, m, 3), "c": standard_normal(rng, 1, 1)}

    check_symbolic(
        13,
        "g (float[M, 3] a, float[1, 1] c) => (float[M, 2] y) <float[3, 2] b = {1, 2, 3, 4, 5, 6}> {\n"
        "  y = Gemm (a, b, c)\n"
        "}",
        feeds,
        [(2,), (7,)],
    )


@pytest.mark.parametrize(
    "equation, inputs, output, shapes_of",
    [
        ("bij,bjk->bik", "float[B, I, J] x, float[B, J, K] z", "float[B, I, K]",
         lambda n, m: [(2, n, m), (2, m, 3)]),
        ("ii->i", "float[N, N] x", "float[N]", lambda n, m: [(n, n)]),
        ("...ij->...ji", "float[B, I, J] x", "float[B, J, I]", lambda n, m: [(2, n, m)]),
        ("ij->", "float[I, J] x", "float", lambda n, m: [(n, m)]),
        ("i,i", "float[I] x, float[I] z", "float", lambda n, m: [(n,), (n,)]),
        ("bij,jk->bk", "float[B, I, J] x, float[J, K] z", "float[B, K]", lambda n, m: [(n, 3, m), (m, 2)]),
    ],
)
def test_einsum_symbolic_dims(equation, inputs, output, shapes_of, rng):
    names = re.findall(r"\]\s+(\w+)", inputs)

    def feeds(n, m):
        return {name: standard_normal(rng, *shape) for name, shape in zip(names, shapes_of(n, m))}

    check_symbolic(
        12,
        f'g ({inputs}) => ({output} y) {{\n  y = Einsum <equation = "{equation}"> ({", ".join(names)})\n}}',
        feeds,
        [(3, 4), (5, 2)],
    )


# TopK --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("largest", [0, 1])
@pytest.mark.parametrize("axis", [1, -1, 0])
def test_top_k_constant_k_symbolic_axis(largest, axis, rng):
    def feeds(a, b):
        # few distinct values, so ties (lower index first) happen
        return {"x": rng.integers(0, 5, (a, b)).astype(np.float32)}

    out = "[3, B]" if axis == 0 else "[A, 3]"
    check_symbolic(
        11,
        f"g (float[A, B] x) => (float{out} v, int64{out} i) <int64[1] k = {{3}}> {{\n"
        f"  v, i = TopK <axis = {axis}, largest = {largest}> (x, k)\n"
        "}",
        feeds,
        [(4, 5), (6, 3)],
    )


def test_top_k_attribute_revision(rng):
    def feeds(a, b):
        return {"x": standard_normal(rng, a, b)}

    check_symbolic(
        1,
        "g (float[A, B] x) => (float[A, 2] v, int64[A, 2] i) {\n  v, i = TopK <k = 2> (x)\n}",
        feeds,
        [(2, 4), (5, 3)],
    )
