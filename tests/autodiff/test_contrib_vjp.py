"""VJP coverage of the com.microsoft ops: every differentiable contrib op, lowered and run
through build-vjp, each input's and weight's cotangent checked against central differences.

Each case is a single-node model whose weights are graph inputs (so they get cotangents).
``build_vjp`` builds ``@main_vjp`` once w.r.t. every float input; with a seeded random output
cotangent ``c``, each float input ``i`` is checked on its own: ``<t_i, (J^T c)_i>`` against
``<(f(x + eps t_i) - f(x - eps t_i)) / 2 eps, c>`` for a seeded direction ``t_i``. Tolerances
per dtype (:data:`TOLERANCES`); the ops run in float64 where the lowering takes it (central
differences are then accurate to ~1e-9), else float32 with a larger step.

The ``symbolic`` cases lower the same nodes with symbolic batch/sequence dims and check the one
``@main_vjp`` at two shapes (``tests/autodiff/symbolic_vjp_check.py``).

Not covered (no gradient): GroupQueryAttention's KV cache inputs (past_key/past_value are
written into ``present`` by a dynamic_update_slice at run-time offsets; gradients with respect
to the new query/key/value with a cache are in test_contrib_grad.py), integer ids, masks.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence

import numpy as np
import onnx
import pytest
from onnx import helper

from onnx_stablehlo import lower
from tests.autodiff.symbolic_vjp_check import build_symbolic_vjp, check_symbolic_vjp
from tests.autodiff.vjp_check import compile_vjp, run

MS = "com.microsoft"
F64, F32, I32, I64 = np.float64, np.float32, np.int32, np.int64


@dataclasses.dataclass(frozen=True)
class Tolerance:
    eps: float
    rtol: float
    atol: float


TOLERANCES = {
    np.dtype(F64): Tolerance(eps=1e-6, rtol=1e-6, atol=1e-8),
    np.dtype(F32): Tolerance(eps=1e-2, rtol=2e-3, atol=2e-4),
}
"""Per float dtype: central-difference step, and tolerances on each input's inner product."""

Spec = tuple[str, object, Sequence[object]] | None


def _model(op_type: str, inputs: Sequence[Spec], outputs: Sequence[Spec], attributes: Mapping[str, object],
           domain: str = MS) -> onnx.ModelProto:
    def info(spec):
        name, dtype, shape = spec
        return helper.make_tensor_value_info(name, helper.np_dtype_to_tensor_dtype(np.dtype(dtype)), list(shape))

    node = helper.make_node(op_type, [s[0] if s else "" for s in inputs], [s[0] if s else "" for s in outputs],
                            domain=domain, name=f"{op_type}_0", **attributes)
    graph = helper.make_graph([node], op_type, [info(s) for s in inputs if s], [info(s) for s in outputs if s])
    opsets = [helper.make_opsetid("", 17)] + ([helper.make_opsetid(domain, 1)] if domain else [])
    model = helper.make_model(graph, opset_imports=opsets, ir_version=9)
    if domain:  # (ORT registers SimplifiedLayerNormalization in the default domain; onnx does not know it)
        onnx.checker.check_model(model)
    return model


@dataclasses.dataclass(frozen=True)
class Case:
    """One contrib node: ``inputs``/``outputs`` as ``(name, dtype, shape)`` with ``"B"``/``"S"``
    for the symbolic batch/sequence dims, ``feeds(rng, B, S)`` its seeded inputs."""

    op_type: str
    inputs: Sequence[Spec]
    outputs: Sequence[Spec]
    feeds: Callable[[np.random.Generator, int, int], dict[str, np.ndarray]]
    attributes: Mapping[str, object] = dataclasses.field(default_factory=dict)
    domain: str = MS

    def model(self, b: int | str, s: int | str) -> onnx.ModelProto:
        def bind(spec):
            if spec is None:
                return None
            name, dtype, shape = spec
            return name, dtype, [{"B": b, "S": s}.get(d, d) if isinstance(d, str) else d for d in shape]

        return _model(self.op_type, [bind(x) for x in self.inputs], [bind(x) for x in self.outputs],
                      self.attributes, self.domain)


def _normal(rng, *shape, dtype=F64, scale=1.0):
    return (scale * rng.standard_normal(shape)).astype(dtype)


H, HEADS = 8, 2


def _rotary_caches(positions: int, dim: int, dtype) -> tuple[np.ndarray, np.ndarray]:
    angles = np.arange(positions)[:, None] / (10000 ** (np.arange(dim // 2) * 2 / dim))[None, :]
    return np.cos(angles).astype(dtype), np.sin(angles).astype(dtype)


def _attention_feeds(rng, b, s):
    mask = np.ones((b, s), I32)
    mask[-1, 0] = 0
    return {"x": _normal(rng, b, s, H), "w": _normal(rng, H, 3 * H, scale=0.5), "bias": _normal(rng, 3 * H, scale=0.1),
            "mask": mask}


def _mha_feeds(rng, b, s):
    mask = np.ones((b, s + 1), I32)
    mask[0, -1] = 0
    return {"q": _normal(rng, b, s, H), "k": _normal(rng, b, s + 1, H), "v": _normal(rng, b, s + 1, H),
            "bias": _normal(rng, 3 * H, scale=0.1), "mask": mask}


def _gqa_feeds(rng, b, s):
    cos, sin = _rotary_caches(16, 4, F32)
    return {"q": _normal(rng, b, s, 4 * 4, dtype=F32), "k": _normal(rng, b, s, 2 * 4, dtype=F32),
            "v": _normal(rng, b, s, 2 * 4, dtype=F32), "seqlens_k": np.full((b,), s - 1, I32),
            "total": np.array(s, I32), "cos": cos, "sin": sin}


def _skip_feeds(rng, b, s):
    return {"x": _normal(rng, b, s, H), "skip": _normal(rng, b, s, H), "gamma": _normal(rng, H),
            "beta": _normal(rng, H), "bias": _normal(rng, H)}


def _embed_feeds(rng, b, s):
    return {"ids": rng.integers(0, 10, (b, s)).astype(I32), "segments": rng.integers(0, 2, (b, s)).astype(I32),
            "word": _normal(rng, 10, H, dtype=F32), "position": _normal(rng, 16, H, dtype=F32),
            "segment": _normal(rng, 2, H, dtype=F32), "gamma": _normal(rng, H, dtype=F32),
            "beta": _normal(rng, H, dtype=F32)}


def _rotary_feeds(rng, b, s):
    cos, sin = _rotary_caches(16, 4, F32)
    return {"x": _normal(rng, b, s, HEADS * 4, dtype=F32),
            "positions": np.tile(np.arange(s, dtype=I64) + 1, (b, 1)), "cos": cos, "sin": sin}


CASES = {
    "Attention-mask": Case(
        "Attention",
        [("x", F64, ["B", "S", H]), ("w", F64, [H, 3 * H]), ("bias", F64, [3 * H]), ("mask", I32, ["B", "S"])],
        [("y", F64, ["B", "S", H])],
        _attention_feeds,
        {"num_heads": HEADS},
    ),
    "Attention-unidirectional": Case(
        "Attention",
        [("x", F64, ["B", "S", H]), ("w", F64, [H, 3 * H]), ("bias", F64, [3 * H])],
        [("y", F64, ["B", "S", H])],
        lambda rng, b, s: {k: v for k, v in _attention_feeds(rng, b, s).items() if k != "mask"},
        {"num_heads": HEADS, "unidirectional": 1},
    ),
    "MultiHeadAttention": Case(
        "MultiHeadAttention",
        [("q", F64, ["B", "S", H]), ("k", F64, ["B", "S+1", H]), ("v", F64, ["B", "S+1", H]), ("bias", F64, [3 * H]),
         ("mask", I32, ["B", "S+1"])],
        [("y", F64, ["B", "S", H])],
        _mha_feeds,
        {"num_heads": HEADS},
    ),
    "GroupQueryAttention-rotary": Case(
        "GroupQueryAttention",
        [("q", F32, ["B", "S", 16]), ("k", F32, ["B", "S", 8]), ("v", F32, ["B", "S", 8]), None, None,
         ("seqlens_k", I32, ["B"]), ("total", I32, []), ("cos", F32, [16, 2]), ("sin", F32, [16, 2])],
        [("y", F32, ["B", "S", 16])],
        _gqa_feeds,
        {"num_heads": 4, "kv_num_heads": 2, "do_rotary": 1},
    ),
    "SkipLayerNormalization": Case(
        "SkipLayerNormalization",
        [("x", F64, ["B", "S", H]), ("skip", F64, ["B", "S", H]), ("gamma", F64, [H]), ("beta", F64, [H]),
         ("bias", F64, [H])],
        [("y", F64, ["B", "S", H])],
        _skip_feeds,
        {"epsilon": 1e-5},
    ),
    "SkipSimplifiedLayerNormalization": Case(
        "SkipSimplifiedLayerNormalization",
        [("x", F64, ["B", "S", H]), ("skip", F64, ["B", "S", H]), ("gamma", F64, [H]), ("bias", F64, [H])],
        [("y", F64, ["B", "S", H])],
        lambda rng, b, s: {k: v for k, v in _skip_feeds(rng, b, s).items() if k != "beta"},
        {"epsilon": 1e-5},
    ),
    "SimplifiedLayerNormalization": Case(
        "SimplifiedLayerNormalization",
        [("x", F64, ["B", "S", H]), ("scale", F64, [H])],
        [("y", F64, ["B", "S", H])],
        lambda rng, b, s: {"x": _normal(rng, b, s, H), "scale": _normal(rng, H)},
        {"axis": -1, "epsilon": 1e-5},
        domain="",
    ),
    "EmbedLayerNormalization": Case(
        "EmbedLayerNormalization",
        [("ids", I32, ["B", "S"]), ("segments", I32, ["B", "S"]), ("word", F32, [10, H]), ("position", F32, [16, H]),
         ("segment", F32, [2, H]), ("gamma", F32, [H]), ("beta", F32, [H])],
        [("y", F32, ["B", "S", H])],
        _embed_feeds,
        {"epsilon": 1e-5},
    ),
    "FastGelu-bias": Case(
        "FastGelu",
        [("x", F64, ["B", "S", H]), ("bias", F64, [H])],
        [("y", F64, ["B", "S", H])],
        lambda rng, b, s: {"x": _normal(rng, b, s, H), "bias": _normal(rng, H)},
    ),
    "BiasGelu": Case(
        "BiasGelu",
        [("x", F64, ["B", "S", H]), ("bias", F64, [H])],
        [("y", F64, ["B", "S", H])],
        lambda rng, b, s: {"x": _normal(rng, b, s, H), "bias": _normal(rng, H)},
    ),
    "Gelu": Case(
        "Gelu",
        [("x", F64, ["B", "S", H])],
        [("y", F64, ["B", "S", H])],
        lambda rng, b, s: {"x": _normal(rng, b, s, H, scale=2.0)},
    ),
    "QuickGelu": Case(
        "QuickGelu",
        [("x", F64, ["B", "S", H])],
        [("y", F64, ["B", "S", H])],
        lambda rng, b, s: {"x": _normal(rng, b, s, H, scale=2.0)},
        {"alpha": 1.5},
    ),
    "BiasAdd": Case(
        "BiasAdd",
        [("x", F32, ["B", "S", H]), ("bias", F32, [H]), ("skip", F32, ["B", "S", H])],
        [("y", F32, ["B", "S", H])],
        lambda rng, b, s: {"x": _normal(rng, b, s, H, dtype=F32), "bias": _normal(rng, H, dtype=F32),
                           "skip": _normal(rng, b, s, H, dtype=F32)},
    ),
    "RotaryEmbedding": Case(
        "RotaryEmbedding",
        [("x", F32, ["B", "S", HEADS * 4]), ("positions", I64, ["B", "S"]), ("cos", F32, [16, 2]),
         ("sin", F32, [16, 2])],
        [("y", F32, ["B", "S", HEADS * 4])],
        _rotary_feeds,
        {"num_heads": HEADS},
    ),
    "MultiHeadAttention-packed-qkv": Case(
        "MultiHeadAttention",
        [("qkv", F64, ["B", "S", HEADS, 3, H // HEADS]), None, None, ("bias", F64, [3 * H])],
        [("y", F64, ["B", "S", H])],
        lambda rng, b, s: {"qkv": _normal(rng, b, s, HEADS, 3, H // HEADS), "bias": _normal(rng, 3 * H, scale=0.1)},
        {"num_heads": HEADS},
    ),
    "GroupQueryAttention-bias-sink": Case(
        "GroupQueryAttention",
        [("q", F32, ["B", "S", 16]), ("k", F32, ["B", "S", 8]), ("v", F32, ["B", "S", 8]), None, None,
         ("seqlens_k", I32, ["B"]), ("total", I32, []), None, None, None, ("attn_bias", F32, [1, 4, "S", "S"]),
         ("sink", F32, [4])],
        [("y", F32, ["B", "S", 16])],
        lambda rng, b, s: {**{k: v for k, v in _gqa_feeds(rng, b, s).items() if k not in ("cos", "sin")},
                           "attn_bias": _normal(rng, 1, 4, s, s, dtype=F32), "sink": _normal(rng, 4, dtype=F32)},
        {"num_heads": 4, "kv_num_heads": 2},
    ),
    "Conv-nchwc": Case(  # ORT's level-99 layout: a blocked filter, Sum input, fused activation
        "Conv",
        [("x", F32, ["B", 3, 5, 5]), ("w", F32, [16, 3, 3, 3]), ("b", F32, [16]), ("sum", F32, ["B", 16, 5, 5])],
        [("y", F32, ["B", 16, 5, 5])],
        lambda rng, b, s: {"x": _normal(rng, b, 3, 5, 5, dtype=F32), "w": _normal(rng, 16, 3, 3, 3, dtype=F32, scale=0.3),
                           "b": _normal(rng, 16, dtype=F32), "sum": _normal(rng, b, 16, 5, 5, dtype=F32)},
        {"pads": [1, 1, 1, 1], "activation": "Sigmoid"},
        domain="com.microsoft.nchwc",
    ),
}

DIFFERENTIABLE_CONTRIB_OPS = {
    "Attention", "MultiHeadAttention", "GroupQueryAttention", "SkipLayerNormalization",
    "SkipSimplifiedLayerNormalization", "SimplifiedLayerNormalization", "EmbedLayerNormalization", "FastGelu",
    "BiasGelu", "Gelu", "QuickGelu", "BiasAdd", "RotaryEmbedding", "Conv",
}


def test_every_differentiable_contrib_op_has_a_case():
    assert {case.op_type for case in CASES.values()} == DIFFERENTIABLE_CONTRIB_OPS


def _resolve(model: onnx.ModelProto, b: int, s: int) -> onnx.ModelProto:
    """``S+1`` dims (MultiHeadAttention's key length) as numbers."""
    for value in [*model.graph.input, *model.graph.output]:
        for dim in value.type.tensor_type.shape.dim:
            if dim.dim_param == "S+1":
                dim.dim_value = s + 1
    return model


FAST = ("Attention-mask", "EmbedLayerNormalization", "MultiHeadAttention", "SkipLayerNormalization")
"""Cases in the default run (the four ops with the most distinct VJP rules); the rest are slow."""


@pytest.mark.parametrize("name", [n if n in FAST else pytest.param(n, marks=pytest.mark.slow) for n in sorted(CASES)])
def test_contrib_vjp_of_each_input_matches_finite_differences(name):
    case = CASES[name]
    rng = np.random.default_rng(0)
    b, s = 2, 3
    feeds = case.feeds(rng, b, s)
    lowered = lower(_resolve(case.model(b, s), b, s), weights="inline", check=bool(case.domain))
    arrays = [feeds[n] for n in lowered.input_names]
    wrt = [i for i, a in enumerate(arrays) if np.issubdtype(a.dtype, np.floating)]
    forward, backward, device, _ = compile_vjp(lowered.text, wrt)
    (output,) = run(forward, arrays, device)
    tol = TOLERANCES[np.dtype(output.dtype)]
    cotangent = rng.standard_normal(output.shape).astype(output.dtype)
    cts = run(backward, [*arrays, cotangent], device)
    assert len(cts) == len(wrt)
    for index, ct in zip(wrt, cts):
        name_i = lowered.input_names[index]
        assert ct.shape == arrays[index].shape and ct.dtype == arrays[index].dtype, name_i
        direction = rng.standard_normal(arrays[index].shape)
        shifted = [[a + sign * tol.eps * direction.astype(a.dtype) if i == index else a for i, a in enumerate(arrays)]
                   for sign in (1.0, -1.0)]
        plus, minus = (run(forward, x, device)[0].astype(F64) for x in shifted)
        numeric = float(np.vdot((plus - minus) / (2 * tol.eps), cotangent.astype(F64)))
        analytic = float(np.vdot(direction, ct.astype(F64)))
        assert abs(numeric - analytic) <= tol.rtol * max(abs(numeric), abs(analytic)) + tol.atol, (
            f"{name}: cotangent of {name_i!r}: J^T c gives {analytic}, finite differences {numeric}"
        )
        if name_i not in ("cos", "sin") or case.op_type != "GroupQueryAttention":
            assert float(np.abs(ct).max()) > 0, f"{name}: zero cotangent for {name_i!r}"


SYMBOLIC_FAST = ("Attention-mask",)
"""Symbolic variants in the default run; the others are marked slow (each compiles four modules)."""


@pytest.mark.parametrize(
    "name", [n if n in SYMBOLIC_FAST else pytest.param(n, marks=pytest.mark.slow) for n in sorted(CASES)]
)
def test_contrib_vjp_with_symbolic_batch_and_sequence_at_two_shapes(name):
    case = CASES[name]
    if case.op_type == "MultiHeadAttention":
        pytest.skip("the key length S+1 is not a single symbol")
    rng = np.random.default_rng(1)
    lowered = lower(case.model("B", "S"), weights="inline", check=bool(case.domain))
    assert "?" in lowered.text
    forward, vjp = build_symbolic_vjp(lowered.text)
    for b, s in ((2, 3), (3, 5)):
        feeds = case.feeds(rng, b, s)
        arrays = [feeds[n] for n in lowered.input_names]
        tol = TOLERANCES[np.dtype(case.outputs[0][1])]
        check = check_symbolic_vjp(forward, vjp, arrays, rng, eps=tol.eps)
        assert check.ok(tol.rtol, tol.atol), f"{name} at B={b}, S={s}: {check}"
