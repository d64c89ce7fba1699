"""VJP rules of passes/autodiff/linalg.py (dot_general, dot, convolution) against finite differences.

See tests/autodiff/vjp_cases.py for the check (inner-product identity against central finite
differences, in float64).
"""

from __future__ import annotations

import pytest

from tests.autodiff.vjp_cases import Case, check_case, dilated_size, inputs, normal, tensor_type


def dot_case(case_id: str, lhs_shape, rhs_shape, out_shape, numbers: str) -> Case:
    lt, rt, ot = tensor_type(lhs_shape), tensor_type(rhs_shape), tensor_type(out_shape)
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
func.func @main(%x: {tensor_type((4,))}, %y: {tensor_type((4, 5))}) -> {tensor_type((5,))} {{
  %z = stablehlo.dot %x, %y : ({tensor_type((4,))}, {tensor_type((4, 5))}) -> {tensor_type((5,))}
  return %z : {tensor_type((5,))}
}}""",
        inputs(normal(4), normal(4, 5)),
    ),
]


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
        (dilated_size(s, ld) + p[0] + p[1] - dilated_size(w, rd)) // st + 1
        for s, w, st, p, ld, rd in zip(spatial, window, stride, pad, lhs_dilate, rhs_dilate)
    ]

    def shape(layout: str, sizes: dict[str, int], spatial_sizes: Sequence[int]) -> list[int]:
        return [sizes[c] if c in sizes else spatial_sizes[int(c)] for c in layout]

    lhs_shape = shape(lhs_layout, {"b": batch, "f": in_features}, spatial)
    rhs_shape = shape(rhs_layout, {"i": in_features // feature_groups, "o": out_features}, window)
    out_shape = shape(out_layout, {"b": batch // batch_groups, "f": out_features}, out_spatial)
    lt, rt, ot = tensor_type(lhs_shape), tensor_type(rhs_shape), tensor_type(out_shape)
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

CASES = [*DOT_CASES, *CONV_CASES]


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_vjp_matches_finite_differences(case: Case):
    check_case(case)
