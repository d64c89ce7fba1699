"""VJP rules of passes/autodiff/reduction.py (reduce, reduce_window) against finite differences.

See tests/autodiff/vjp_cases.py for the check (inner-product identity against central finite
differences, in float64).
"""

from __future__ import annotations

import numpy as np
import pytest

from tests.autodiff.vjp_cases import (NEG_INF, POS_INF, Case, check_case, dilated_size, distinct, inputs, normal,
                                      tensor_type, uniform)
from tests.autodiff.vjp_check import compile_vjp, run


def reduce_case(case_id: str, body: str, shape, dims, init: float | None, make=None) -> Case:
    """A ``reduce`` over ``dims``; ``init=None`` makes the init value an argument."""
    out = [d for i, d in enumerate(shape) if i not in dims]
    t, ot = tensor_type(shape), tensor_type(out)
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
    t = tensor_type((3, 4))
    text = f"""
func.func @main(%x: {tensor_type((3, 1))}, %rest: {tensor_type((3, 2))}) -> {tensor_type((3,))} {{
  %init = stablehlo.constant dense<0xFFF0000000000000> : tensor<f64>
  %c = stablehlo.concatenate %rest, %x, %x, dim = 1 : ({tensor_type((3, 2))}, {tensor_type((3, 1))}, {tensor_type((3, 1))}) -> {t}
  %r = stablehlo.reduce(%c init: %init) applies stablehlo.maximum across dimensions = [1] : ({t}, tensor<f64>) -> {tensor_type((3,))}
  return %r : {tensor_type((3,))}
}}"""
    # x is above every element of rest: both copies of x tie for the maximum.
    return Case(
        "reduce-max-tied",
        ("stablehlo.reduce",),
        text,
        inputs(uniform(2.0, 3.0, 3, 1), uniform(-1.0, 1.0, 3, 2)),
    )


REDUCE_CASES.append(_tie_case())


def _range_case(case_id: str, nan_ignoring: bool) -> Case:
    """One variadic reduce computing (min, max) of the same operand, as
    ``builders.quantize._finite_range`` emits (with its NaN-ignoring bodies on the NaN path)."""
    t, ot = tensor_type((3, 5)), tensor_type((3,))

    def pick(op: str, a: str, b: str, out: str) -> str:
        if not nan_ignoring:
            return f"%{out} = stablehlo.{op} %{a}, %{b} : tensor<f64>"
        return f"""%{out}_m = stablehlo.{op} %{a}, %{b} : tensor<f64>
      %{out}_an = stablehlo.compare NE, %{a}, %{a} : (tensor<f64>, tensor<f64>) -> tensor<i1>
      %{out}_bn = stablehlo.compare NE, %{b}, %{b} : (tensor<f64>, tensor<f64>) -> tensor<i1>
      %{out}_i = stablehlo.select %{out}_bn, %{a}, %{out}_m : tensor<i1>, tensor<f64>
      %{out} = stablehlo.select %{out}_an, %{b}, %{out}_i : tensor<i1>, tensor<f64>"""

    text = f"""
func.func @main(%x: {t}) -> ({ot}, {ot}) {{
  %lo = stablehlo.constant dense<{POS_INF}> : tensor<f64>
  %hi = stablehlo.constant dense<{NEG_INF}> : tensor<f64>
  %r:2 = stablehlo.reduce(%x init: %lo), (%x init: %hi) across dimensions = [1] : ({t}, {t}, tensor<f64>, tensor<f64>) -> ({ot}, {ot})
    reducer(%a0: tensor<f64>, %b0: tensor<f64>) (%a1: tensor<f64>, %b1: tensor<f64>) {{
      {pick("minimum", "a0", "b0", "low")}
      {pick("maximum", "a1", "b1", "high")}
      stablehlo.return %low, %high : tensor<f64>, tensor<f64>
    }}
  return %r#0, %r#1 : {ot}, {ot}
}}"""
    return Case(case_id, ("stablehlo.reduce",), text, inputs(distinct(3, 5)))


REDUCE_CASES.append(_range_case("reduce-variadic-min-max", nan_ignoring=False))
REDUCE_CASES.append(_range_case("reduce-variadic-min-max-nan-ignoring", nan_ignoring=True))


def _select_max_case() -> Case:
    """The softmax shift's max (``builders.shift_max``): a reduce whose body is ``a > b ? a : b``."""
    t, ot = tensor_type((3, 5)), tensor_type((3,))
    text = f"""
func.func @main(%x: {t}) -> {ot} {{
  %init = stablehlo.constant dense<{NEG_INF}> : tensor<f64>
  %r = stablehlo.reduce(%x init: %init) across dimensions = [1] : ({t}, tensor<f64>) -> {ot}
    reducer(%a: tensor<f64>, %b: tensor<f64>) {{
      %g = stablehlo.compare GT, %a, %b : (tensor<f64>, tensor<f64>) -> tensor<i1>
      %s = stablehlo.select %g, %a, %b : tensor<i1>, tensor<f64>
      stablehlo.return %s : tensor<f64>
    }}
  return %r : {ot}
}}"""
    return Case("reduce-select-max", ("stablehlo.reduce",), text, inputs(distinct(3, 5)))


REDUCE_CASES.append(_select_max_case())


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
        (dilated_size(s, b) + p[0] + p[1] - dilated_size(w, wd)) // st + 1
        for s, w, st, p, b, wd in zip(shape, window, strides, padding, base, window_dilation)
    ]
    t, ot = tensor_type(shape), tensor_type(out)
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

CASES = [*REDUCE_CASES, *WINDOW_CASES]


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_vjp_matches_finite_differences(case: Case):
    check_case(case)


def test_reduce_max_tie_splits_cotangent_equally():
    t = tensor_type((2, 4))
    text = f"""
func.func @main(%x: {t}) -> {tensor_type((2,))} {{
  %init = stablehlo.constant dense<{NEG_INF}> : tensor<f64>
  %r = stablehlo.reduce(%x init: %init) applies stablehlo.maximum across dimensions = [1] : ({t}, tensor<f64>) -> {tensor_type((2,))}
  return %r : {tensor_type((2,))}
}}"""
    _, backward, device, _ = compile_vjp(text)
    x = np.array([[1.0, 3.0, 3.0, 3.0], [5.0, 0.0, 1.0, 2.0]])
    (ct,) = run(backward, [x, np.array([6.0, 1.0])], device)
    np.testing.assert_array_equal(ct, [[0.0, 2.0, 2.0, 2.0], [1.0, 0.0, 0.0, 0.0]])


def test_dynamic_quantize_linear_scale_vjp_matches_finite_differences():
    """DynamicQuantizeLinear's float output (the scale) depends on x through its range: one
    variadic min/max reduce and, for NaN, a stablehlo.if; build-vjp takes both."""
    import onnx
    from onnx import TensorProto, helper

    from onnx_stablehlo import lower
    from tests.autodiff.vjp_check import check_vjp

    graph = helper.make_graph(
        [helper.make_node("DynamicQuantizeLinear", ["x"], ["y", "scale", "zero_point"])], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 5, 40])],
        [helper.make_tensor_value_info("y", TensorProto.UINT8, [2, 5, 40]),
         helper.make_tensor_value_info("scale", TensorProto.FLOAT, []),
         helper.make_tensor_value_info("zero_point", TensorProto.UINT8, [])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 11)])
    onnx.checker.check_model(model)
    rng = np.random.default_rng(0)
    x = (rng.standard_normal((2, 5, 40)) * 3).astype(np.float32)
    check = check_vjp(lower(model).text, [x], rng, eps=1e-3)
    assert check.ok(rtol=2e-3, atol=2e-4), check
