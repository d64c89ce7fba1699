"""VJP rules of passes/autodiff/shape.py (broadcast, reshape, slice, pad, gather, scatter, sort ...)
against finite differences.

See tests/autodiff/vjp_cases.py for the check (inner-product identity against central finite
differences, in float64).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest

from tests.autodiff.vjp_cases import Case, check_case, distinct, fixed, inputs, normal, tensor_type


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
        f"%x: {tensor_type((3, 1))}",
        f"""  %y = stablehlo.broadcast_in_dim %x, dims = [2, 0] : ({tensor_type((3, 1))}) -> {tensor_type((4, 2, 3))}
  return %y : {tensor_type((4, 2, 3))}""",
        tensor_type((4, 2, 3)),
        [normal(3, 1)],
    ),
    shape_case(
        "broadcast-prepend",
        ["stablehlo.broadcast"],
        f"%x: {tensor_type((3,))}",
        f"""  %y = "stablehlo.broadcast"(%x) {{broadcast_sizes = array<i64: 2, 4>}} : ({tensor_type((3,))}) -> {tensor_type((2, 4, 3))}
  return %y : {tensor_type((2, 4, 3))}""",
        tensor_type((2, 4, 3)),
        [normal(3)],
    ),
    shape_case(
        "dynamic-broadcast-in-dim-static",
        ["stablehlo.dynamic_broadcast_in_dim"],
        f"%x: {tensor_type((1, 3))}",
        f"""  %s = stablehlo.constant dense<[2, 4, 3]> : tensor<3xi64>
  %y = stablehlo.dynamic_broadcast_in_dim %x, %s, dims = [1, 2] : ({tensor_type((1, 3))}, tensor<3xi64>) -> {tensor_type((2, 4, 3))}
  return %y : {tensor_type((2, 4, 3))}""",
        tensor_type((2, 4, 3)),
        [normal(1, 3)],
    ),
    shape_case(
        "reshape",
        ["stablehlo.reshape"],
        f"%x: {tensor_type((2, 6))}",
        f"""  %y = stablehlo.reshape %x : ({tensor_type((2, 6))}) -> {tensor_type((3, 4))}
  %z = stablehlo.multiply %y, %y : {tensor_type((3, 4))}
  return %z : {tensor_type((3, 4))}""",
        tensor_type((3, 4)),
        [normal(2, 6)],
    ),
    shape_case(
        "dynamic-reshape-static",
        ["stablehlo.dynamic_reshape"],
        f"%x: {tensor_type((2, 6))}",
        f"""  %s = stablehlo.constant dense<[4, 3]> : tensor<2xi64>
  %y = stablehlo.dynamic_reshape %x, %s : ({tensor_type((2, 6))}, tensor<2xi64>) -> {tensor_type((4, 3))}
  return %y : {tensor_type((4, 3))}""",
        tensor_type((4, 3)),
        [normal(2, 6)],
    ),
    shape_case(
        "transpose",
        ["stablehlo.transpose"],
        f"%x: {tensor_type((2, 3, 4))}",
        f"""  %y = stablehlo.transpose %x, dims = [2, 0, 1] : ({tensor_type((2, 3, 4))}) -> {tensor_type((4, 2, 3))}
  return %y : {tensor_type((4, 2, 3))}""",
        tensor_type((4, 2, 3)),
        [normal(2, 3, 4)],
    ),
    shape_case(
        "reverse",
        ["stablehlo.reverse"],
        f"%x: {tensor_type((3, 4))}",
        f"""  %y = stablehlo.reverse %x, dims = [1] : {tensor_type((3, 4))}
  %z = stablehlo.multiply %y, %x : {tensor_type((3, 4))}
  return %z : {tensor_type((3, 4))}""",
        tensor_type((3, 4)),
        [normal(3, 4)],
    ),
    shape_case(
        "slice-strided",
        ["stablehlo.slice"],
        f"%x: {tensor_type((7, 6))}",
        f"""  %y = stablehlo.slice %x [1:7:2, 0:5:3] : ({tensor_type((7, 6))}) -> {tensor_type((3, 2))}
  return %y : {tensor_type((3, 2))}""",
        tensor_type((3, 2)),
        [normal(7, 6)],
    ),
    shape_case(
        "pad-edges-interior-negative-value",
        ["stablehlo.pad"],
        f"%x: {tensor_type((3, 4))}, %v: tensor<f64>",
        f"""  %y = stablehlo.pad %x, %v, low = [1, -1], high = [2, 1], interior = [1, 0] : ({tensor_type((3, 4))}, tensor<f64>) -> {tensor_type((8, 4))}
  return %y : {tensor_type((8, 4))}""",
        tensor_type((8, 4)),
        [normal(3, 4), normal()],
    ),
    shape_case(
        "real-dynamic-slice-constant-operands",
        ["stablehlo.real_dynamic_slice"],
        f"%x: {tensor_type((7, 6))}",
        f"""  %start = stablehlo.constant dense<[1, 0]> : tensor<2xi64>
  %limit = stablehlo.constant dense<[7, 5]> : tensor<2xi64>
  %strides = stablehlo.constant dense<[2, 3]> : tensor<2xi64>
  %y = stablehlo.real_dynamic_slice %x, %start, %limit, %strides : ({tensor_type((7, 6))}, tensor<2xi64>, tensor<2xi64>, tensor<2xi64>) -> {tensor_type((3, 2))}
  return %y : {tensor_type((3, 2))}""",
        tensor_type((3, 2)),
        [normal(7, 6)],
    ),
    shape_case(
        "dynamic-pad-constant-operands",
        ["stablehlo.dynamic_pad"],
        f"%x: {tensor_type((3, 4))}, %v: tensor<f64>",
        f"""  %lo = stablehlo.constant dense<[1, -1]> : tensor<2xi64>
  %hi = stablehlo.constant dense<[2, 1]> : tensor<2xi64>
  %in = stablehlo.constant dense<[1, 0]> : tensor<2xi64>
  %y = stablehlo.dynamic_pad %x, %v, %lo, %hi, %in : ({tensor_type((3, 4))}, tensor<f64>, tensor<2xi64>, tensor<2xi64>, tensor<2xi64>) -> {tensor_type((8, 4))}
  return %y : {tensor_type((8, 4))}""",
        tensor_type((8, 4)),
        [normal(3, 4), normal()],
    ),
    shape_case(
        "dynamic-gather-constant-slice-sizes",
        ["stablehlo.dynamic_gather"],
        f"%w: {tensor_type((6, 4))}, %ids: tensor<2x3xi64>",
        f"""  %sizes = stablehlo.constant dense<[1, 4]> : tensor<2xi64>
  %y = "stablehlo.dynamic_gather"(%w, %ids, %sizes) <{{dimension_numbers = #stablehlo.gather<offset_dims = [2], collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 2>}}> : ({tensor_type((6, 4))}, tensor<2x3xi64>, tensor<2xi64>) -> {tensor_type((2, 3, 4))}
  return %y : {tensor_type((2, 3, 4))}""",
        tensor_type((2, 3, 4)),
        [normal(6, 4), fixed(np.array([[1, 4, 1], [0, 9, 5]], dtype=np.int64))],
    ),
    shape_case(
        "concatenate",
        ["stablehlo.concatenate"],
        f"%a: {tensor_type((2, 3))}, %b: {tensor_type((2, 1))}, %c: {tensor_type((2, 2))}",
        f"""  %y = stablehlo.concatenate %a, %b, %c, %a, dim = 1 : ({tensor_type((2, 3))}, {tensor_type((2, 1))}, {tensor_type((2, 2))}, {tensor_type((2, 3))}) -> {tensor_type((2, 9))}
  return %y : {tensor_type((2, 9))}""",
        tensor_type((2, 9)),
        [normal(2, 3), normal(2, 1), normal(2, 2)],
    ),
    shape_case(
        "dynamic-slice-clamped-start",
        ["stablehlo.dynamic_slice"],
        f"%x: {tensor_type((5, 6))}, %i: tensor<i64>, %j: tensor<i64>",
        f"""  %y = stablehlo.dynamic_slice %x, %i, %j, sizes = [2, 3] : ({tensor_type((5, 6))}, tensor<i64>, tensor<i64>) -> {tensor_type((2, 3))}
  return %y : {tensor_type((2, 3))}""",
        tensor_type((2, 3)),
        [normal(5, 6), fixed(np.array(1, dtype=np.int64)), fixed(np.array(9, dtype=np.int64))],
    ),
    shape_case(
        "dynamic-update-slice",
        ["stablehlo.dynamic_update_slice"],
        f"%x: {tensor_type((5, 6))}, %u: {tensor_type((2, 3))}, %i: tensor<i64>, %j: tensor<i64>",
        f"""  %y = stablehlo.dynamic_update_slice %x, %u, %i, %j : ({tensor_type((5, 6))}, {tensor_type((2, 3))}, tensor<i64>, tensor<i64>) -> {tensor_type((5, 6))}
  %z = stablehlo.multiply %y, %y : {tensor_type((5, 6))}
  return %z : {tensor_type((5, 6))}""",
        tensor_type((5, 6)),
        [normal(5, 6), normal(2, 3), fixed(np.array(2, dtype=np.int64)), fixed(np.array(1, dtype=np.int64))],
    ),
    shape_case(
        # an embedding lookup with a repeated index and an out-of-range one (clamped)
        "gather-embedding-repeated-and-clamped",
        ["stablehlo.gather"],
        f"%w: {tensor_type((6, 4))}, %ids: tensor<2x3xi64>",
        f"""  %y = "stablehlo.gather"(%w, %ids) <{{dimension_numbers = #stablehlo.gather<offset_dims = [2], collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 2>, slice_sizes = array<i64: 1, 4>}}> : ({tensor_type((6, 4))}, tensor<2x3xi64>) -> {tensor_type((2, 3, 4))}
  return %y : {tensor_type((2, 3, 4))}""",
        tensor_type((2, 3, 4)),
        [normal(6, 4), fixed(np.array([[1, 4, 1], [0, 9, 5]], dtype=np.int64))],
    ),
    shape_case(
        "gather-windows-index-vector",
        ["stablehlo.gather"],
        f"%x: {tensor_type((5, 6))}, %starts: tensor<3x2xi32>",
        f"""  %y = "stablehlo.gather"(%x, %starts) <{{dimension_numbers = #stablehlo.gather<offset_dims = [1, 2], start_index_map = [0, 1], index_vector_dim = 1>, slice_sizes = array<i64: 2, 3>}}> : ({tensor_type((5, 6))}, tensor<3x2xi32>) -> {tensor_type((3, 2, 3))}
  return %y : {tensor_type((3, 2, 3))}""",
        tensor_type((3, 2, 3)),
        [normal(5, 6), fixed(np.array([[0, 0], [3, 2], [4, 5]], dtype=np.int32))],
    ),
    shape_case(
        "gather-batching-dims",
        ["stablehlo.gather"],
        f"%x: {tensor_type((3, 5))}, %idx: tensor<3x2xi64>",
        f"""  %y = "stablehlo.gather"(%x, %idx) <{{dimension_numbers = #stablehlo.gather<offset_dims = [], collapsed_slice_dims = [1], operand_batching_dims = [0], start_indices_batching_dims = [0], start_index_map = [1], index_vector_dim = 2>, slice_sizes = array<i64: 1, 1>}}> : ({tensor_type((3, 5))}, tensor<3x2xi64>) -> {tensor_type((3, 2))}
  return %y : {tensor_type((3, 2))}""",
        tensor_type((3, 2)),
        [normal(3, 5), fixed(np.array([[4, 0], [2, 2], [1, 3]], dtype=np.int64))],
    ),
    shape_case(
        "scatter-add-repeated-indices",
        ["stablehlo.scatter"],
        f"%x: {tensor_type((5, 3))}, %idx: tensor<4x1xi64>, %u: {tensor_type((4, 3))}",
        f"""  %y = "stablehlo.scatter"(%x, %idx, %u) <{{scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [1], inserted_window_dims = [0], scatter_dims_to_operand_dims = [0], index_vector_dim = 1>}}> ({{
    ^bb0(%a: tensor<f64>, %b: tensor<f64>):
      %s = stablehlo.add %a, %b : tensor<f64>
      stablehlo.return %s : tensor<f64>
  }}) : ({tensor_type((5, 3))}, tensor<4x1xi64>, {tensor_type((4, 3))}) -> {tensor_type((5, 3))}
  %z = stablehlo.multiply %y, %y : {tensor_type((5, 3))}
  return %z : {tensor_type((5, 3))}""",
        tensor_type((5, 3)),
        [normal(5, 3), fixed(np.array([[1], [3], [1], [0]], dtype=np.int64)), normal(4, 3)],
    ),
    shape_case(
        "scatter-replace-unique-indices",
        ["stablehlo.scatter"],
        f"%x: {tensor_type((5, 3))}, %idx: tensor<2x2xi64>, %u: {tensor_type((2,))}",
        f"""  %y = "stablehlo.scatter"(%x, %idx, %u) <{{scatter_dimension_numbers = #stablehlo.scatter<inserted_window_dims = [0, 1], scatter_dims_to_operand_dims = [0, 1], index_vector_dim = 1>}}> ({{
    ^bb0(%a: tensor<f64>, %b: tensor<f64>):
      stablehlo.return %b : tensor<f64>
  }}) : ({tensor_type((5, 3))}, tensor<2x2xi64>, {tensor_type((2,))}) -> {tensor_type((5, 3))}
  %z = stablehlo.multiply %y, %y : {tensor_type((5, 3))}
  return %z : {tensor_type((5, 3))}""",
        tensor_type((5, 3)),
        [normal(5, 3), fixed(np.array([[1, 2], [4, 0]], dtype=np.int64)), normal(2)],
    ),
    shape_case(
        # TopK as the frontend lowers it: sort (values, iota) descending, then slice.
        "sort-with-iota-top-k",
        ["stablehlo.sort", "stablehlo.iota"],
        f"%x: {tensor_type((3, 5))}",
        f"""  %i = stablehlo.iota dim = 1 : tensor<3x5xi64>
  %s:2 = "stablehlo.sort"(%x, %i) <{{dimension = 1 : i64, is_stable = true}}> ({{
    ^bb0(%a: tensor<f64>, %b: tensor<f64>, %ia: tensor<i64>, %ib: tensor<i64>):
      %gt = stablehlo.compare GT, %a, %b : (tensor<f64>, tensor<f64>) -> tensor<i1>
      stablehlo.return %gt : tensor<i1>
  }}) : ({tensor_type((3, 5))}, tensor<3x5xi64>) -> ({tensor_type((3, 5))}, tensor<3x5xi64>)
  %top = stablehlo.slice %s#0 [0:3, 0:2] : ({tensor_type((3, 5))}) -> {tensor_type((3, 2))}
  return %top : {tensor_type((3, 2))}""",
        tensor_type((3, 2)),
        [distinct(3, 5)],
    ),
    shape_case(
        # a float payload sorted by float keys, no iota: the rule re-sorts with one
        "sort-keys-and-payload",
        ["stablehlo.sort"],
        f"%k: {tensor_type((4, 3))}, %v: {tensor_type((4, 3))}",
        f"""  %s:2 = "stablehlo.sort"(%k, %v) <{{dimension = 0 : i64}}> ({{
    ^bb0(%a: tensor<f64>, %b: tensor<f64>, %c: tensor<f64>, %d: tensor<f64>):
      %lt = stablehlo.compare LT, %a, %b : (tensor<f64>, tensor<f64>) -> tensor<i1>
      stablehlo.return %lt : tensor<i1>
  }}) : ({tensor_type((4, 3))}, {tensor_type((4, 3))}) -> ({tensor_type((4, 3))}, {tensor_type((4, 3))})
  %w = stablehlo.iota dim = 0 : {tensor_type((4, 3))}
  %k2 = stablehlo.multiply %s#0, %w : {tensor_type((4, 3))}
  %y = stablehlo.multiply %s#1, %k2 : {tensor_type((4, 3))}
  return %y : {tensor_type((4, 3))}""",
        tensor_type((4, 3)),
        [distinct(4, 3), normal(4, 3)],
    ),
    shape_case(
        "get-dimension-size-no-cotangent",
        ["stablehlo.get_dimension_size"],
        f"%x: {tensor_type((3, 4))}",
        f"""  %n = stablehlo.get_dimension_size %x, dim = 1 : ({tensor_type((3, 4))}) -> tensor<i32>
  %f = stablehlo.convert %n : (tensor<i32>) -> tensor<f64>
  %b = stablehlo.broadcast_in_dim %f, dims = [] : (tensor<f64>) -> {tensor_type((3, 4))}
  %y = stablehlo.multiply %x, %b : {tensor_type((3, 4))}
  return %y : {tensor_type((3, 4))}""",
        tensor_type((3, 4)),
        [normal(3, 4)],
    ),
]

CASES = SHAPE_CASES


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_vjp_matches_finite_differences(case: Case):
    check_case(case)
