"""Every VJP rule against central finite differences, in float64.

Each case is a small ``@main`` in StableHLO text holding the op under test (plus whatever
makes its inputs, such as a ``compare`` for a ``select`` predicate). ``check_vjp`` builds
``@main_vjp``, runs both on the PJRT CPU client and checks the inner-product identity
``<J t, c> == <t, J^T c>`` for seeded random tangents ``t`` (every float argument) and output
cotangents ``c``: ``|lhs - rhs| <= RTOL * max(|lhs|, |rhs|) + ATOL`` with ``RTOL = 1e-6``,
``ATOL = 1e-8`` (central differences with step 1e-6 are accurate to ~1e-9 here). Inputs of
piecewise ops (floor, max pools, sort, remainder, clamp) stay away from their kinks.

``test_every_rule_has_a_case`` fails when a rule is added without a case here.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence

import numpy as np
import pytest

from onnx_stablehlo.passes.autodiff import default_registry
from tests.autodiff.vjp_check import ATOL, RTOL, check_vjp, compile_vjp, run

Inputs = Callable[[np.random.Generator], list[np.ndarray]]


@dataclasses.dataclass(frozen=True)
class Case:
    """One rule check.

    Attributes:
        id: the pytest id.
        covers: the op names whose rules this case exercises.
        text: the module.
        inputs: seeded inputs, one per ``@main`` argument.
        wrt: argument indices to differentiate (default: every float argument).
        eps: the central-difference step.
        rtol: the relative tolerance (looser only where stated).
    """

    id: str
    covers: tuple[str, ...]
    text: str
    inputs: Inputs
    wrt: tuple[int, ...] | None = None
    eps: float = 1e-6
    rtol: float = RTOL


def _ty(shape: Sequence[int], element: str = "f64") -> str:
    return "tensor<" + "".join(f"{d}x" for d in shape) + element + ">"


def normal(*shape: int, scale: float = 1.0) -> Callable[[np.random.Generator], np.ndarray]:
    return lambda rng: scale * rng.standard_normal(shape)


def uniform(lo: float, hi: float, *shape: int) -> Callable[[np.random.Generator], np.ndarray]:
    return lambda rng: rng.uniform(lo, hi, shape)


def off_integers(*shape: int) -> Callable[[np.random.Generator], np.ndarray]:
    """Values k + 0.2 ... k + 0.4 or k + 0.6 ... k + 0.8: no floor/ceil/round kink nearby."""
    return lambda rng: (
        rng.integers(-3, 3, shape) + rng.choice([0.3, 0.7], shape) + rng.uniform(-0.1, 0.1, shape)
    )


def away_from_zero(*shape: int) -> Callable[[np.random.Generator], np.ndarray]:
    return lambda rng: rng.choice([-1.0, 1.0], shape) * rng.uniform(0.3, 2.0, shape)


def fixed(array) -> Callable[[np.random.Generator], np.ndarray]:
    return lambda rng: np.asarray(array)


def inputs(*makers: Callable[[np.random.Generator], np.ndarray]) -> Inputs:
    return lambda rng: [make(rng) for make in makers]


# Elementwise --------------------------------------------------------------------------------------


def unary(op: str, make: Callable[[np.random.Generator], np.ndarray] | None = None, shape=(2, 3)) -> Case:
    t = _ty(shape)
    text = f"""
func.func @main(%x: {t}) -> {t} {{
  %y = "{op}"(%x) : ({t}) -> {t}
  return %y : {t}
}}"""
    return Case(op.replace(".", "-"), (op,), text, inputs(make or normal(*shape)))


def binary(op: str, lhs=None, rhs=None, shape=(2, 3), case_id: str | None = None) -> Case:
    t = _ty(shape)
    text = f"""
func.func @main(%x: {t}, %y: {t}) -> {t} {{
  %z = "{op}"(%x, %y) : ({t}, {t}) -> {t}
  return %z : {t}
}}"""
    return Case(case_id or op.replace(".", "-"), (op,), text, inputs(lhs or normal(*shape), rhs or normal(*shape)))


POSITIVE = uniform(0.5, 2.0, 2, 3)
UNIT = uniform(-0.9, 0.9, 2, 3)

UNARY_CASES = [
    unary("stablehlo.negate"),
    unary("stablehlo.abs", away_from_zero(2, 3)),
    unary("stablehlo.exponential"),
    unary("stablehlo.exponential_minus_one"),
    unary("stablehlo.log", POSITIVE),
    unary("stablehlo.log_plus_one", uniform(-0.5, 2.0, 2, 3)),
    unary("stablehlo.sqrt", POSITIVE),
    unary("stablehlo.rsqrt", POSITIVE),
    unary("stablehlo.cbrt", away_from_zero(2, 3)),
    unary("stablehlo.tanh"),
    unary("stablehlo.logistic"),
    unary("stablehlo.sine"),
    unary("stablehlo.cosine"),
    unary("stablehlo.tan", UNIT),
    unary("stablehlo.floor", off_integers(2, 3)),
    unary("stablehlo.ceil", off_integers(2, 3)),
    unary("stablehlo.round_nearest_even", off_integers(2, 3)),
    unary("stablehlo.round_nearest_afz", off_integers(2, 3)),
    unary("stablehlo.sign", away_from_zero(2, 3)),
    unary("chlo.erf"),
    unary("chlo.erfc"),
    unary("chlo.erf_inv", UNIT),
    unary("chlo.sinh"),
    unary("chlo.cosh"),
    unary("chlo.tan", UNIT),
    unary("chlo.asin", UNIT),
    unary("chlo.acos", UNIT),
    unary("chlo.atan"),
    unary("chlo.asinh"),
    unary("chlo.acosh", uniform(1.5, 3.0, 2, 3)),
    unary("chlo.atanh", UNIT),
    unary("chlo.square"),
    unary("chlo.lgamma", uniform(0.5, 3.0, 2, 3)),
    unary("chlo.digamma", uniform(0.5, 3.0, 2, 3)),
]


def _remainder_inputs(rng: np.random.Generator) -> list[np.ndarray]:
    y = rng.choice([-1.0, 1.0], (2, 3)) * rng.uniform(1.0, 2.0, (2, 3))
    # x / y = n + f with f in [0.2, 0.8]: away from the jumps of trunc(x / y)
    x = y * (rng.integers(-3, 3, (2, 3)) + rng.uniform(0.2, 0.8, (2, 3)))
    return [x, y]


BINARY_CASES = [
    binary("stablehlo.add"),
    binary("stablehlo.subtract"),
    binary("stablehlo.multiply"),
    binary("stablehlo.divide", rhs=away_from_zero(2, 3)),
    binary("stablehlo.power", lhs=POSITIVE),
    binary("stablehlo.atan2"),
    binary("stablehlo.maximum"),
    binary("stablehlo.minimum"),
    dataclasses.replace(binary("stablehlo.remainder"), inputs=_remainder_inputs),
]

T23 = _ty((2, 3))

TIE_CASES = [
    # max(x, x) = x: each side gets half the cotangent, the sum is exact.
    Case(
        "maximum-tie",
        ("stablehlo.maximum",),
        f"""
func.func @main(%x: {T23}) -> {T23} {{
  %z = stablehlo.maximum %x, %x : {T23}
  return %z : {T23}
}}""",
        inputs(normal(2, 3)),
    ),
    Case(
        "minimum-tie",
        ("stablehlo.minimum",),
        f"""
func.func @main(%x: {T23}) -> {T23} {{
  %z = stablehlo.minimum %x, %x : {T23}
  return %z : {T23}
}}""",
        inputs(normal(2, 3)),
    ),
    Case(
        "power-zero-exponent",
        ("stablehlo.power",),
        f"""
func.func @main(%x: {T23}) -> {T23} {{
  %zero = stablehlo.constant dense<0.0> : {T23}
  %z = stablehlo.power %x, %zero : {T23}
  %w = stablehlo.multiply %z, %x : {T23}
  return %w : {T23}
}}""",
        inputs(POSITIVE),
    ),
]

SELECT_CLAMP_CONVERT_CASES = [
    Case(
        "select-compare",
        ("stablehlo.select", "stablehlo.compare", "stablehlo.constant"),
        f"""
func.func @main(%x: {T23}, %y: {T23}) -> {T23} {{
  %zero = stablehlo.constant dense<0.0> : {T23}
  %p = stablehlo.compare GT, %x, %zero : ({T23}, {T23}) -> {_ty((2, 3), "i1")}
  %z = stablehlo.select %p, %x, %y : {_ty((2, 3), "i1")}, {T23}
  %w = stablehlo.multiply %z, %y : {T23}
  return %w : {T23}
}}""",
        inputs(away_from_zero(2, 3), normal(2, 3)),
    ),
    Case(
        "select-scalar-predicate",
        ("stablehlo.select",),
        f"""
func.func @main(%p: tensor<i1>, %x: {T23}, %y: {T23}) -> {T23} {{
  %z = stablehlo.select %p, %x, %y : tensor<i1>, {T23}
  return %z : {T23}
}}""",
        inputs(fixed(np.array(True)), normal(2, 3), normal(2, 3)),
    ),
    Case(
        "boolean-logic-no-cotangent",
        ("stablehlo.and", "stablehlo.or", "stablehlo.xor", "stablehlo.not", "stablehlo.is_finite"),
        f"""
func.func @main(%x: {T23}, %y: {T23}) -> {T23} {{
  %zero = stablehlo.constant dense<0.0> : {T23}
  %a = stablehlo.compare GT, %x, %zero : ({T23}, {T23}) -> {_ty((2, 3), "i1")}
  %b = stablehlo.compare LT, %y, %zero : ({T23}, {T23}) -> {_ty((2, 3), "i1")}
  %f = stablehlo.is_finite %x : ({T23}) -> {_ty((2, 3), "i1")}
  %c = stablehlo.and %a, %f : {_ty((2, 3), "i1")}
  %d = stablehlo.xor %c, %b : {_ty((2, 3), "i1")}
  %e = stablehlo.not %d : {_ty((2, 3), "i1")}
  %g = stablehlo.or %e, %a : {_ty((2, 3), "i1")}
  %xy = stablehlo.multiply %x, %y : {T23}
  %z = stablehlo.select %g, %xy, %y : {_ty((2, 3), "i1")}, {T23}
  return %z : {T23}
}}""",
        inputs(away_from_zero(2, 3), away_from_zero(2, 3)),
    ),
    Case(
        "clamp-scalar-bounds",
        ("stablehlo.clamp",),
        f"""
func.func @main(%lo: tensor<f64>, %x: {_ty((4, 5))}, %hi: tensor<f64>) -> {_ty((4, 5))} {{
  %z = stablehlo.clamp %lo, %x, %hi : (tensor<f64>, {_ty((4, 5))}, tensor<f64>) -> {_ty((4, 5))}
  return %z : {_ty((4, 5))}
}}""",
        # |x| in [0.1, 0.4] or [0.6, 2]: away from the bounds -0.5 and 0.5
        inputs(
            fixed(np.array(-0.5)),
            lambda rng: rng.choice([-1.0, 1.0], (4, 5)) * rng.choice([0.25, 1.3], (4, 5))
            + rng.uniform(-0.1, 0.1, (4, 5)),
            fixed(np.array(0.5)),
        ),
    ),
    Case(
        "clamp-tensor-bounds",
        ("stablehlo.clamp",),
        f"""
func.func @main(%lo: {T23}, %x: {T23}, %hi: {T23}) -> {T23} {{
  %z = stablehlo.clamp %lo, %x, %hi : {T23}
  return %z : {T23}
}}""",
        inputs(
            fixed(np.full((2, 3), -0.5)),
            fixed(np.array([[-2.0, -0.2, 0.3], [1.5, 0.1, -0.9]])),
            fixed(np.full((2, 3), 0.5)),
        ),
    ),
    Case(
        # f32 -> f64 is linear after the convert, so central differences are exact for any
        # step: a large step keeps the f32 rounding of x + eps t negligible (rtol 1e-5).
        "convert-f32-to-f64",
        ("stablehlo.convert",),
        f"""
func.func @main(%x: {_ty((2, 3), "f32")}, %w: {T23}) -> {T23} {{
  %y = stablehlo.convert %x : ({_ty((2, 3), "f32")}) -> {T23}
  %z = stablehlo.multiply %y, %w : {T23}
  return %z : {T23}
}}""",
        inputs(lambda rng: rng.standard_normal((2, 3)).astype(np.float32), normal(2, 3)),
        eps=0.5,
        rtol=1e-5,
    ),
    Case(
        "convert-through-int-no-cotangent",
        ("stablehlo.convert",),
        f"""
func.func @main(%x: {T23}) -> {T23} {{
  %i = stablehlo.convert %x : ({T23}) -> {_ty((2, 3), "i32")}
  %f = stablehlo.convert %i : ({_ty((2, 3), "i32")}) -> {T23}
  %z = stablehlo.multiply %f, %x : {T23}
  return %z : {T23}
}}""",
        inputs(off_integers(2, 3)),
    ),
    Case(
        "reduce-precision-identity",
        ("stablehlo.reduce_precision",),
        f"""
func.func @main(%x: {T23}) -> {T23} {{
  %y = stablehlo.reduce_precision %x, format = e11m52 : {T23}
  %z = stablehlo.multiply %y, %y : {T23}
  return %z : {T23}
}}""",
        inputs(normal(2, 3)),
    ),
]

# Linear algebra ---------------------------------------------------------------------------------


def dot_case(case_id: str, lhs_shape, rhs_shape, out_shape, numbers: str) -> Case:
    lt, rt, ot = _ty(lhs_shape), _ty(rhs_shape), _ty(out_shape)
    text = f"""
func.func @main(%x: {lt}, %y: {rt}) -> {ot} {{
  %z = stablehlo.dot_general %x, %y, {numbers} : ({lt}, {rt}) -> {ot}
  return %z : {ot}
}}"""
    return Case(case_id, ("stablehlo.dot_general",), text, inputs(normal(*lhs_shape), normal(*rhs_shape)))


DOT_CASES = [
    dot_case("dot-general-matmul", (3, 4), (4, 5), (3, 5), "contracting_dims = [1] x [0]"),
    dot_case(
        "dot-general-batched-transposed",
        (2, 4, 3),
        (5, 2, 4),
        (2, 3, 5),
        "batching_dims = [0] x [1], contracting_dims = [1] x [2]",
    ),
    dot_case(
        "dot-general-two-contracting-dims-out-of-order",
        (3, 2, 4, 5),
        (5, 3, 6, 2),
        (3, 4, 6),
        "batching_dims = [0] x [1], contracting_dims = [3, 1] x [0, 3]",
    ),
    dot_case("dot-general-outer-product", (3,), (4,), (3, 4), "contracting_dims = [] x []"),
    Case(
        "dot-vector-matrix",
        ("stablehlo.dot",),
        f"""
func.func @main(%x: {_ty((4,))}, %y: {_ty((4, 5))}) -> {_ty((5,))} {{
  %z = stablehlo.dot %x, %y : ({_ty((4,))}, {_ty((4, 5))}) -> {_ty((5,))}
  return %z : {_ty((5,))}
}}""",
        inputs(normal(4), normal(4, 5)),
    ),
]


def _dilate(size: int, dilation: int) -> int:
    return 0 if size == 0 else 1 + dilation * (size - 1)


def conv_case(
    case_id: str,
    lhs_layout: str,
    rhs_layout: str,
    out_layout: str,
    batch: int,
    in_features: int,
    out_features: int,
    spatial: Sequence[int],
    window: Sequence[int],
    *,
    stride=None,
    pad=None,
    lhs_dilate=None,
    rhs_dilate=None,
    feature_groups: int = 1,
    batch_groups: int = 1,
) -> Case:
    """A convolution in the given layouts (``b``/``f``/``i``/``o`` and spatial ``0``, ``1``)."""
    n = len(spatial)
    stride = stride or [1] * n
    pad = pad or [[0, 0]] * n
    lhs_dilate = lhs_dilate or [1] * n
    rhs_dilate = rhs_dilate or [1] * n
    out_spatial = [
        (_dilate(s, ld) + p[0] + p[1] - _dilate(w, rd)) // st + 1
        for s, w, st, p, ld, rd in zip(spatial, window, stride, pad, lhs_dilate, rhs_dilate)
    ]

    def shape(layout: str, sizes: dict[str, int], spatial_sizes: Sequence[int]) -> list[int]:
        return [sizes[c] if c in sizes else spatial_sizes[int(c)] for c in layout]

    lhs_shape = shape(lhs_layout, {"b": batch, "f": in_features}, spatial)
    rhs_shape = shape(rhs_layout, {"i": in_features // feature_groups, "o": out_features}, window)
    out_shape = shape(out_layout, {"b": batch // batch_groups, "f": out_features}, out_spatial)
    lt, rt, ot = _ty(lhs_shape), _ty(rhs_shape), _ty(out_shape)
    layouts = f"[{', '.join(lhs_layout)}]x[{', '.join(rhs_layout)}]->[{', '.join(out_layout)}]"
    window_text = (
        f"stride = {list(stride)}, pad = {[list(p) for p in pad]}, "
        f"lhs_dilate = {list(lhs_dilate)}, rhs_dilate = {list(rhs_dilate)}"
    )
    text = f"""
func.func @main(%x: {lt}, %w: {rt}) -> {ot} {{
  %y = stablehlo.convolution(%x, %w) dim_numbers = {layouts}, window = {{{window_text}}} {{batch_group_count = {batch_groups} : i64, feature_group_count = {feature_groups} : i64}} : ({lt}, {rt}) -> {ot}
  return %y : {ot}
}}"""
    return Case(case_id, ("stablehlo.convolution",), text, inputs(normal(*lhs_shape), normal(*rhs_shape)))


CONV_CASES = [
    conv_case("convolution-nchw-padded", "bf01", "oi01", "bf01", 2, 3, 4, (5, 6), (3, 3), pad=[[1, 1], [1, 1]]),
    conv_case(
        "convolution-strided-dilated-asymmetric-pad",
        "bf01",
        "oi01",
        "bf01",
        1,
        2,
        3,
        (7, 6),
        (3, 2),
        stride=[2, 1],
        pad=[[1, 0], [0, 2]],
        rhs_dilate=[1, 2],
    ),
    conv_case("convolution-nhwc", "b01f", "01io", "b01f", 2, 3, 2, (4, 5), (2, 3), stride=[1, 2], pad=[[0, 1], [1, 1]]),
    conv_case(
        "convolution-input-dilation-transposed", "bf01", "oi01", "bf01", 1, 2, 2, (3, 4), (3, 3), pad=[[2, 2], [1, 2]],
        lhs_dilate=[2, 2],
    ),
    conv_case("convolution-depthwise-feature-groups", "bf01", "oi01", "bf01", 2, 4, 8, (5, 5), (3, 3), feature_groups=4),
    conv_case("convolution-grouped", "bf01", "oi01", "bf01", 1, 6, 4, (4, 5), (2, 2), stride=[2, 1], feature_groups=2),
    conv_case("convolution-batch-groups", "bf01", "oi01", "bf01", 4, 3, 6, (5, 4), (2, 2), batch_groups=2),
    conv_case("convolution-1d", "bf0", "oi0", "bf0", 2, 3, 2, (8,), (3,), stride=[2], pad=[[1, 1]]),
]

# Reductions ---------------------------------------------------------------------------------------


def reduce_case(case_id: str, body: str, shape, dims, init: float | None, make=None) -> Case:
    """A ``reduce`` over ``dims``; ``init=None`` makes the init value an argument."""
    out = [d for i, d in enumerate(shape) if i not in dims]
    t, ot = _ty(shape), _ty(out)
    if init is None:
        head, init_line = f"%x: {t}, %init: tensor<f64>", ""
        makers = [make or normal(*shape), normal()]
    else:
        head, init_line = f"%x: {t}", f"%init = stablehlo.constant dense<{init}> : tensor<f64>"
        makers = [make or normal(*shape)]
    text = f"""
func.func @main({head}) -> {ot} {{
  {init_line}
  %r = stablehlo.reduce(%x init: %init) applies stablehlo.{body} across dimensions = {list(dims)} : ({t}, tensor<f64>) -> {ot}
  return %r : {ot}
}}"""
    return Case(case_id, ("stablehlo.reduce",), text, inputs(*makers))


def _max_ties(rng: np.random.Generator) -> np.ndarray:
    x = rng.standard_normal((3, 4))
    x[:, 1] = x[:, 3] = x.max(axis=1) + 1.0  # two maxima per row
    return x


REDUCE_CASES = [
    reduce_case("reduce-add", "add", (2, 3, 4), [1], 0.0),
    reduce_case("reduce-add-init-argument", "add", (2, 3, 4), [0, 2], None),
    reduce_case("reduce-max", "maximum", (3, 4, 2), [1], "0xFFF0000000000000"),
    reduce_case("reduce-min-all", "minimum", (3, 4), [0, 1], "0x7FF0000000000000"),
    # Ties: the cotangent splits equally between tied maxima; f(x) = reduce_max(x) with two
    # equal maxima moving together (the tangent is copied between them below).
]


def _tie_case() -> Case:
    t = _ty((3, 4))
    text = f"""
func.func @main(%x: {_ty((3, 1))}, %rest: {_ty((3, 2))}) -> {_ty((3,))} {{
  %init = stablehlo.constant dense<0xFFF0000000000000> : tensor<f64>
  %c = stablehlo.concatenate %rest, %x, %x, dim = 1 : ({_ty((3, 2))}, {_ty((3, 1))}, {_ty((3, 1))}) -> {t}
  %r = stablehlo.reduce(%c init: %init) applies stablehlo.maximum across dimensions = [1] : ({t}, tensor<f64>) -> {_ty((3,))}
  return %r : {_ty((3,))}
}}"""
    # x is above every element of rest: both copies of x tie for the maximum.
    return Case(
        "reduce-max-tied",
        ("stablehlo.reduce",),
        text,
        inputs(uniform(2.0, 3.0, 3, 1), uniform(-1.0, 1.0, 3, 2)),
    )


REDUCE_CASES.append(_tie_case())


def window_case(
    case_id: str,
    body: str,
    init: str,
    shape,
    window,
    *,
    strides=None,
    padding=None,
    base=None,
    window_dilation=None,
    make=None,
) -> Case:
    rank = len(shape)
    strides = strides or [1] * rank
    padding = padding or [[0, 0]] * rank
    base = base or [1] * rank
    window_dilation = window_dilation or [1] * rank
    out = [
        (_dilate(s, b) + p[0] + p[1] - _dilate(w, wd)) // st + 1
        for s, w, st, p, b, wd in zip(shape, window, strides, padding, base, window_dilation)
    ]
    t, ot = _ty(shape), _ty(out)
    pad_text = "[" + ", ".join(f"[{lo}, {hi}]" for lo, hi in padding) + "]"
    text = f"""
func.func @main(%x: {t}) -> {ot} {{
  %init = stablehlo.constant dense<{init}> : tensor<f64>
  %r = "stablehlo.reduce_window"(%x, %init) ({{
    ^bb0(%a: tensor<f64>, %b: tensor<f64>):
      %s = stablehlo.{body} %a, %b : tensor<f64>
      stablehlo.return %s : tensor<f64>
  }}) {{window_dimensions = array<i64: {', '.join(map(str, window))}>,
       window_strides = array<i64: {', '.join(map(str, strides))}>,
       base_dilations = array<i64: {', '.join(map(str, base))}>,
       window_dilations = array<i64: {', '.join(map(str, window_dilation))}>,
       padding = dense<{pad_text}> : tensor<{rank}x2xi64>}} : ({t}, tensor<f64>) -> {ot}
  return %r : {ot}
}}"""
    return Case(case_id, ("stablehlo.reduce_window",), text, inputs(make or normal(*shape)))


def distinct(*shape: int) -> Callable[[np.random.Generator], np.ndarray]:
    """A permutation of well-separated values (no ties within a window)."""
    count = math.prod(shape)
    return lambda rng: rng.permutation(np.arange(count) * 0.37 - count * 0.15).reshape(shape)


NEG_INF = "0xFFF0000000000000"
POS_INF = "0x7FF0000000000000"

WINDOW_CASES = [
    window_case("reduce-window-sum-avgpool", "add", "0.0", (1, 2, 5, 6), (1, 1, 2, 2), strides=[1, 1, 2, 2]),
    window_case(
        "reduce-window-sum-padded-overlapping",
        "add",
        "0.0",
        (2, 7, 5),
        (1, 3, 2),
        strides=[1, 2, 1],
        padding=[[0, 0], [1, 2], [1, 0]],
    ),
    window_case(
        "reduce-window-sum-dilated",
        "add",
        "0.0",
        (6, 5),
        (2, 2),
        strides=[1, 2],
        base=[2, 1],
        window_dilation=[1, 2],
    ),
    window_case(
        "reduce-window-max-pool",
        "maximum",
        NEG_INF,
        (1, 2, 6, 6),
        (1, 1, 3, 3),
        strides=[1, 1, 2, 2],
        padding=[[0, 0], [0, 0], [1, 1], [1, 1]],
        make=distinct(1, 2, 6, 6),
    ),
    window_case("reduce-window-min-pool", "minimum", POS_INF, (4, 6), (2, 3), strides=[2, 3], make=distinct(4, 6)),
    window_case(
        "reduce-window-max-base-dilated", "maximum", NEG_INF, (4, 5), (2, 2), base=[2, 1], make=distinct(4, 5)
    ),
]

# Shapes -----------------------------------------------------------------------------------------


def shape_case(case_id: str, covers: Sequence[str], head: str, body: str, out: str, makers, wrt=None) -> Case:
    text = f"""
func.func @main({head}) -> {out} {{
{body}
}}"""
    return Case(case_id, tuple(covers), text, inputs(*makers), wrt=wrt)


I64 = "i64"

SHAPE_CASES = [
    shape_case(
        "broadcast-in-dim-expand-and-add",
        ["stablehlo.broadcast_in_dim"],
        f"%x: {_ty((3, 1))}",
        f"""  %y = stablehlo.broadcast_in_dim %x, dims = [2, 0] : ({_ty((3, 1))}) -> {_ty((4, 2, 3))}
  return %y : {_ty((4, 2, 3))}""",
        _ty((4, 2, 3)),
        [normal(3, 1)],
    ),
    shape_case(
        "broadcast-prepend",
        ["stablehlo.broadcast"],
        f"%x: {_ty((3,))}",
        f"""  %y = "stablehlo.broadcast"(%x) {{broadcast_sizes = array<i64: 2, 4>}} : ({_ty((3,))}) -> {_ty((2, 4, 3))}
  return %y : {_ty((2, 4, 3))}""",
        _ty((2, 4, 3)),
        [normal(3)],
    ),
    shape_case(
        "dynamic-broadcast-in-dim-static",
        ["stablehlo.dynamic_broadcast_in_dim"],
        f"%x: {_ty((1, 3))}",
        f"""  %s = stablehlo.constant dense<[2, 4, 3]> : tensor<3xi64>
  %y = stablehlo.dynamic_broadcast_in_dim %x, %s, dims = [1, 2] : ({_ty((1, 3))}, tensor<3xi64>) -> {_ty((2, 4, 3))}
  return %y : {_ty((2, 4, 3))}""",
        _ty((2, 4, 3)),
        [normal(1, 3)],
    ),
    shape_case(
        "reshape",
        ["stablehlo.reshape"],
        f"%x: {_ty((2, 6))}",
        f"""  %y = stablehlo.reshape %x : ({_ty((2, 6))}) -> {_ty((3, 4))}
  %z = stablehlo.multiply %y, %y : {_ty((3, 4))}
  return %z : {_ty((3, 4))}""",
        _ty((3, 4)),
        [normal(2, 6)],
    ),
    shape_case(
        "dynamic-reshape-static",
        ["stablehlo.dynamic_reshape"],
        f"%x: {_ty((2, 6))}",
        f"""  %s = stablehlo.constant dense<[4, 3]> : tensor<2xi64>
  %y = stablehlo.dynamic_reshape %x, %s : ({_ty((2, 6))}, tensor<2xi64>) -> {_ty((4, 3))}
  return %y : {_ty((4, 3))}""",
        _ty((4, 3)),
        [normal(2, 6)],
    ),
    shape_case(
        "transpose",
        ["stablehlo.transpose"],
        f"%x: {_ty((2, 3, 4))}",
        f"""  %y = stablehlo.transpose %x, dims = [2, 0, 1] : ({_ty((2, 3, 4))}) -> {_ty((4, 2, 3))}
  return %y : {_ty((4, 2, 3))}""",
        _ty((4, 2, 3)),
        [normal(2, 3, 4)],
    ),
    shape_case(
        "reverse",
        ["stablehlo.reverse"],
        f"%x: {_ty((3, 4))}",
        f"""  %y = stablehlo.reverse %x, dims = [1] : {_ty((3, 4))}
  %z = stablehlo.multiply %y, %x : {_ty((3, 4))}
  return %z : {_ty((3, 4))}""",
        _ty((3, 4)),
        [normal(3, 4)],
    ),
    shape_case(
        "slice-strided",
        ["stablehlo.slice"],
        f"%x: {_ty((7, 6))}",
        f"""  %y = stablehlo.slice %x [1:7:2, 0:5:3] : ({_ty((7, 6))}) -> {_ty((3, 2))}
  return %y : {_ty((3, 2))}""",
        _ty((3, 2)),
        [normal(7, 6)],
    ),
    shape_case(
        "pad-edges-interior-negative-value",
        ["stablehlo.pad"],
        f"%x: {_ty((3, 4))}, %v: tensor<f64>",
        f"""  %y = stablehlo.pad %x, %v, low = [1, -1], high = [2, 1], interior = [1, 0] : ({_ty((3, 4))}, tensor<f64>) -> {_ty((8, 4))}
  return %y : {_ty((8, 4))}""",
        _ty((8, 4)),
        [normal(3, 4), normal()],
    ),
    shape_case(
        "real-dynamic-slice-constant-operands",
        ["stablehlo.real_dynamic_slice"],
        f"%x: {_ty((7, 6))}",
        f"""  %start = stablehlo.constant dense<[1, 0]> : tensor<2xi64>
  %limit = stablehlo.constant dense<[7, 5]> : tensor<2xi64>
  %strides = stablehlo.constant dense<[2, 3]> : tensor<2xi64>
  %y = stablehlo.real_dynamic_slice %x, %start, %limit, %strides : ({_ty((7, 6))}, tensor<2xi64>, tensor<2xi64>, tensor<2xi64>) -> {_ty((3, 2))}
  return %y : {_ty((3, 2))}""",
        _ty((3, 2)),
        [normal(7, 6)],
    ),
    shape_case(
        "dynamic-pad-constant-operands",
        ["stablehlo.dynamic_pad"],
        f"%x: {_ty((3, 4))}, %v: tensor<f64>",
        f"""  %lo = stablehlo.constant dense<[1, -1]> : tensor<2xi64>
  %hi = stablehlo.constant dense<[2, 1]> : tensor<2xi64>
  %in = stablehlo.constant dense<[1, 0]> : tensor<2xi64>
  %y = stablehlo.dynamic_pad %x, %v, %lo, %hi, %in : ({_ty((3, 4))}, tensor<f64>, tensor<2xi64>, tensor<2xi64>, tensor<2xi64>) -> {_ty((8, 4))}
  return %y : {_ty((8, 4))}""",
        _ty((8, 4)),
        [normal(3, 4), normal()],
    ),
    shape_case(
        "dynamic-gather-constant-slice-sizes",
        ["stablehlo.dynamic_gather"],
        f"%w: {_ty((6, 4))}, %ids: tensor<2x3xi64>",
        f"""  %sizes = stablehlo.constant dense<[1, 4]> : tensor<2xi64>
  %y = "stablehlo.dynamic_gather"(%w, %ids, %sizes) <{{dimension_numbers = #stablehlo.gather<offset_dims = [2], collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 2>}}> : ({_ty((6, 4))}, tensor<2x3xi64>, tensor<2xi64>) -> {_ty((2, 3, 4))}
  return %y : {_ty((2, 3, 4))}""",
        _ty((2, 3, 4)),
        [normal(6, 4), fixed(np.array([[1, 4, 1], [0, 9, 5]], dtype=np.int64))],
    ),
    shape_case(
        "concatenate",
        ["stablehlo.concatenate"],
        f"%a: {_ty((2, 3))}, %b: {_ty((2, 1))}, %c: {_ty((2, 2))}",
        f"""  %y = stablehlo.concatenate %a, %b, %c, %a, dim = 1 : ({_ty((2, 3))}, {_ty((2, 1))}, {_ty((2, 2))}, {_ty((2, 3))}) -> {_ty((2, 9))}
  return %y : {_ty((2, 9))}""",
        _ty((2, 9)),
        [normal(2, 3), normal(2, 1), normal(2, 2)],
    ),
    shape_case(
        "dynamic-slice-clamped-start",
        ["stablehlo.dynamic_slice"],
        f"%x: {_ty((5, 6))}, %i: tensor<i64>, %j: tensor<i64>",
        f"""  %y = stablehlo.dynamic_slice %x, %i, %j, sizes = [2, 3] : ({_ty((5, 6))}, tensor<i64>, tensor<i64>) -> {_ty((2, 3))}
  return %y : {_ty((2, 3))}""",
        _ty((2, 3)),
        [normal(5, 6), fixed(np.array(1, dtype=np.int64)), fixed(np.array(9, dtype=np.int64))],
    ),
    shape_case(
        "dynamic-update-slice",
        ["stablehlo.dynamic_update_slice"],
        f"%x: {_ty((5, 6))}, %u: {_ty((2, 3))}, %i: tensor<i64>, %j: tensor<i64>",
        f"""  %y = stablehlo.dynamic_update_slice %x, %u, %i, %j : ({_ty((5, 6))}, {_ty((2, 3))}, tensor<i64>, tensor<i64>) -> {_ty((5, 6))}
  %z = stablehlo.multiply %y, %y : {_ty((5, 6))}
  return %z : {_ty((5, 6))}""",
        _ty((5, 6)),
        [normal(5, 6), normal(2, 3), fixed(np.array(2, dtype=np.int64)), fixed(np.array(1, dtype=np.int64))],
    ),
    shape_case(
        # an embedding lookup with a repeated index and an out-of-range one (clamped)
        "gather-embedding-repeated-and-clamped",
        ["stablehlo.gather"],
        f"%w: {_ty((6, 4))}, %ids: tensor<2x3xi64>",
        f"""  %y = "stablehlo.gather"(%w, %ids) <{{dimension_numbers = #stablehlo.gather<offset_dims = [2], collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 2>, slice_sizes = array<i64: 1, 4>}}> : ({_ty((6, 4))}, tensor<2x3xi64>) -> {_ty((2, 3, 4))}
  return %y : {_ty((2, 3, 4))}""",
        _ty((2, 3, 4)),
        [normal(6, 4), fixed(np.array([[1, 4, 1], [0, 9, 5]], dtype=np.int64))],
    ),
    shape_case(
        "gather-windows-index-vector",
        ["stablehlo.gather"],
        f"%x: {_ty((5, 6))}, %starts: tensor<3x2xi32>",
        f"""  %y = "stablehlo.gather"(%x, %starts) <{{dimension_numbers = #stablehlo.gather<offset_dims = [1, 2], start_index_map = [0, 1], index_vector_dim = 1>, slice_sizes = array<i64: 2, 3>}}> : ({_ty((5, 6))}, tensor<3x2xi32>) -> {_ty((3, 2, 3))}
  return %y : {_ty((3, 2, 3))}""",
        _ty((3, 2, 3)),
        [normal(5, 6), fixed(np.array([[0, 0], [3, 2], [4, 5]], dtype=np.int32))],
    ),
    shape_case(
        "gather-batching-dims",
        ["stablehlo.gather"],
        f"%x: {_ty((3, 5))}, %idx: tensor<3x2xi64>",
        f"""  %y = "stablehlo.gather"(%x, %idx) <{{dimension_numbers = #stablehlo.gather<offset_dims = [], collapsed_slice_dims = [1], operand_batching_dims = [0], start_indices_batching_dims = [0], start_index_map = [1], index_vector_dim = 2>, slice_sizes = array<i64: 1, 1>}}> : ({_ty((3, 5))}, tensor<3x2xi64>) -> {_ty((3, 2))}
  return %y : {_ty((3, 2))}""",
        _ty((3, 2)),
        [normal(3, 5), fixed(np.array([[4, 0], [2, 2], [1, 3]], dtype=np.int64))],
    ),
    shape_case(
        "scatter-add-repeated-indices",
        ["stablehlo.scatter"],
        f"%x: {_ty((5, 3))}, %idx: tensor<4x1xi64>, %u: {_ty((4, 3))}",
        f"""  %y = "stablehlo.scatter"(%x, %idx, %u) <{{scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [1], inserted_window_dims = [0], scatter_dims_to_operand_dims = [0], index_vector_dim = 1>}}> ({{
    ^bb0(%a: tensor<f64>, %b: tensor<f64>):
      %s = stablehlo.add %a, %b : tensor<f64>
      stablehlo.return %s : tensor<f64>
  }}) : ({_ty((5, 3))}, tensor<4x1xi64>, {_ty((4, 3))}) -> {_ty((5, 3))}
  %z = stablehlo.multiply %y, %y : {_ty((5, 3))}
  return %z : {_ty((5, 3))}""",
        _ty((5, 3)),
        [normal(5, 3), fixed(np.array([[1], [3], [1], [0]], dtype=np.int64)), normal(4, 3)],
    ),
    shape_case(
        "scatter-replace-unique-indices",
        ["stablehlo.scatter"],
        f"%x: {_ty((5, 3))}, %idx: tensor<2x2xi64>, %u: {_ty((2,))}",
        f"""  %y = "stablehlo.scatter"(%x, %idx, %u) <{{scatter_dimension_numbers = #stablehlo.scatter<inserted_window_dims = [0, 1], scatter_dims_to_operand_dims = [0, 1], index_vector_dim = 1>}}> ({{
    ^bb0(%a: tensor<f64>, %b: tensor<f64>):
      stablehlo.return %b : tensor<f64>
  }}) : ({_ty((5, 3))}, tensor<2x2xi64>, {_ty((2,))}) -> {_ty((5, 3))}
  %z = stablehlo.multiply %y, %y : {_ty((5, 3))}
  return %z : {_ty((5, 3))}""",
        _ty((5, 3)),
        [normal(5, 3), fixed(np.array([[1, 2], [4, 0]], dtype=np.int64)), normal(2)],
    ),
    shape_case(
        # TopK as the frontend lowers it: sort (values, iota) descending, then slice.
        "sort-with-iota-top-k",
        ["stablehlo.sort", "stablehlo.iota"],
        f"%x: {_ty((3, 5))}",
        f"""  %i = stablehlo.iota dim = 1 : tensor<3x5xi64>
  %s:2 = "stablehlo.sort"(%x, %i) <{{dimension = 1 : i64, is_stable = true}}> ({{
    ^bb0(%a: tensor<f64>, %b: tensor<f64>, %ia: tensor<i64>, %ib: tensor<i64>):
      %gt = stablehlo.compare GT, %a, %b : (tensor<f64>, tensor<f64>) -> tensor<i1>
      stablehlo.return %gt : tensor<i1>
  }}) : ({_ty((3, 5))}, tensor<3x5xi64>) -> ({_ty((3, 5))}, tensor<3x5xi64>)
  %top = stablehlo.slice %s#0 [0:3, 0:2] : ({_ty((3, 5))}) -> {_ty((3, 2))}
  return %top : {_ty((3, 2))}""",
        _ty((3, 2)),
        [distinct(3, 5)],
    ),
    shape_case(
        # a float payload sorted by float keys, no iota: the rule re-sorts with one
        "sort-keys-and-payload",
        ["stablehlo.sort"],
        f"%k: {_ty((4, 3))}, %v: {_ty((4, 3))}",
        f"""  %s:2 = "stablehlo.sort"(%k, %v) <{{dimension = 0 : i64}}> ({{
    ^bb0(%a: tensor<f64>, %b: tensor<f64>, %c: tensor<f64>, %d: tensor<f64>):
      %lt = stablehlo.compare LT, %a, %b : (tensor<f64>, tensor<f64>) -> tensor<i1>
      stablehlo.return %lt : tensor<i1>
  }}) : ({_ty((4, 3))}, {_ty((4, 3))}) -> ({_ty((4, 3))}, {_ty((4, 3))})
  %w = stablehlo.iota dim = 0 : {_ty((4, 3))}
  %k2 = stablehlo.multiply %s#0, %w : {_ty((4, 3))}
  %y = stablehlo.multiply %s#1, %k2 : {_ty((4, 3))}
  return %y : {_ty((4, 3))}""",
        _ty((4, 3)),
        [distinct(4, 3), normal(4, 3)],
    ),
    shape_case(
        "get-dimension-size-no-cotangent",
        ["stablehlo.get_dimension_size"],
        f"%x: {_ty((3, 4))}",
        f"""  %n = stablehlo.get_dimension_size %x, dim = 1 : ({_ty((3, 4))}) -> tensor<i32>
  %f = stablehlo.convert %n : (tensor<i32>) -> tensor<f64>
  %b = stablehlo.broadcast_in_dim %f, dims = [] : (tensor<f64>) -> {_ty((3, 4))}
  %y = stablehlo.multiply %x, %b : {_ty((3, 4))}
  return %y : {_ty((3, 4))}""",
        _ty((3, 4)),
        [normal(3, 4)],
    ),
]

# Control flow -------------------------------------------------------------------------------------


def _if_case(case_id: str, predicate: bool) -> Case:
    text = f"""
func.func @main(%p: tensor<i1>, %x: {T23}, %w: {T23}) -> ({T23}, {T23}) {{
  %e = stablehlo.exponential %x : {T23}
  %r:2 = "stablehlo.if"(%p) ({{
    %s = stablehlo.sine %x : {T23}
    %m = stablehlo.multiply %s, %w : {T23}
    stablehlo.return %m, %e : {T23}, {T23}
  }}, {{
    %t = stablehlo.tanh %e : {T23}
    stablehlo.return %t, %x : {T23}, {T23}
  }}) : (tensor<i1>) -> ({T23}, {T23})
  return %r#0, %r#1 : {T23}, {T23}
}}"""
    return Case(case_id, ("stablehlo.if",), text, inputs(fixed(np.array(predicate)), normal(2, 3), normal(2, 3)))


CONTROL_CASES = [
    _if_case("if-true-branch", True),
    _if_case("if-false-branch", False),
    Case(
        "optimization-barrier",
        ("stablehlo.optimization_barrier",),
        f"""
func.func @main(%x: {T23}, %y: {T23}) -> {T23} {{
  %a, %b = stablehlo.optimization_barrier %x, %y : {T23}, {T23}
  %z = stablehlo.multiply %a, %b : {T23}
  return %z : {T23}
}}""",
        inputs(normal(2, 3), normal(2, 3)),
    ),
]

CASES = [
    *UNARY_CASES,
    *BINARY_CASES,
    *TIE_CASES,
    *SELECT_CLAMP_CONVERT_CASES,
    *DOT_CASES,
    *CONV_CASES,
    *REDUCE_CASES,
    *WINDOW_CASES,
    *SHAPE_CASES,
    *CONTROL_CASES,
]


def test_case_ids_are_unique():
    ids = [case.id for case in CASES]
    assert len(ids) == len(set(ids))


def test_every_rule_has_a_case():
    covered = {op for case in CASES for op in case.covers}
    missing = sorted(set(default_registry().op_names()) - covered)
    assert not missing, f"VJP rules without a finite-difference case in this file: {missing}"


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_vjp_matches_finite_differences(case: Case):
    rng = np.random.default_rng(20261129)
    arrays = case.inputs(rng)
    result = check_vjp(case.text, arrays, rng, wrt=case.wrt, eps=case.eps)
    assert result.ok(rtol=case.rtol, atol=ATOL), (
        f"<J t, c> = {result.jt_dot_c!r} but <t, J^T c> = {result.t_dot_jtc!r} "
        f"(error {result.error:.3e})\n{result.vjp_text}"
    )


@pytest.mark.parametrize("op", ["maximum", "minimum"])
def test_max_min_tie_splits_cotangent_equally(op):
    """max(x, y) at x == y: each operand gets exactly half the cotangent (JAX's rule)."""
    text = f"""
func.func @main(%x: {T23}, %y: {T23}) -> {T23} {{
  %z = stablehlo.{op} %x, %y : {T23}
  return %z : {T23}
}}"""
    forward, backward, device, _ = compile_vjp(text)
    rng = np.random.default_rng(1)
    x = rng.standard_normal((2, 3))
    y = x.copy()
    y[0, 0] -= 1.0  # one place without a tie
    c = rng.standard_normal((2, 3))
    ct_x, ct_y = run(backward, [x, y, c], device)
    expected_x = c / 2
    expected_y = c / 2
    winner_is_x = op == "maximum"
    expected_x[0, 0] = c[0, 0] if winner_is_x else 0.0
    expected_y[0, 0] = 0.0 if winner_is_x else c[0, 0]
    np.testing.assert_array_equal(ct_x, expected_x)
    np.testing.assert_array_equal(ct_y, expected_y)


def test_reduce_max_tie_splits_cotangent_equally():
    t = _ty((2, 4))
    text = f"""
func.func @main(%x: {t}) -> {_ty((2,))} {{
  %init = stablehlo.constant dense<{NEG_INF}> : tensor<f64>
  %r = stablehlo.reduce(%x init: %init) applies stablehlo.maximum across dimensions = [1] : ({t}, tensor<f64>) -> {_ty((2,))}
  return %r : {_ty((2,))}
}}"""
    _, backward, device, _ = compile_vjp(text)
    x = np.array([[1.0, 3.0, 3.0, 3.0], [5.0, 0.0, 1.0, 2.0]])
    (ct,) = run(backward, [x, np.array([6.0, 1.0])], device)
    np.testing.assert_array_equal(ct, [[0.0, 2.0, 2.0, 2.0], [1.0, 0.0, 0.0, 0.0]])
