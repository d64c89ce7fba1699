"""Parity of the linear-algebra family (frontend/lowering/linalg.py: Det) against onnxruntime,
onnx.reference for float64.
"""

from __future__ import annotations

import numpy as np
import pytest

from onnx_stablehlo.errors import ShapeError
from tests.util import (assert_allclose_for_dtype, check_bfloat16_matches_float32, compile_and_run, emitted_text,
                        node_model_text, oracle_run, ort_run, parse)

# --------------------------------------------------------------------------------------------
# Det


@pytest.mark.parametrize("batch", [(), (3,), (2, 2)], ids=["single", "batch3", "batch2x2"])
@pytest.mark.parametrize("n", [1, 2, 3, 5, 8, 9, 12])
def test_det_matches_onnxruntime(n, batch, rng):
    shape = (*batch, n, n)
    model = parse(node_model_text("Det", 22, [("x", np.float32, shape)], ("y", np.float32, batch), {}))
    feeds = {"x": rng.standard_normal(shape).astype(np.float32)}
    assert_allclose_for_dtype(compile_and_run(model, feeds), ort_run(model, feeds))
    assert ("stablehlo.while" in emitted_text(model)) == (n > 8)


@pytest.mark.parametrize("opset", [11, 22])
@pytest.mark.parametrize("dtype", [np.float64, np.float16], ids=["f64", "f16"])
def test_det_other_floats_match_oracle(dtype, opset, rng):
    model = parse(node_model_text("Det", opset, [("x", dtype, (4, 4, 4))], ("y", dtype, (4,)), {}))
    feeds = {"x": rng.standard_normal((4, 4, 4)).astype(dtype)}
    assert_allclose_for_dtype(compile_and_run(model, feeds), oracle_run(model, feeds))


@pytest.mark.parametrize("n", [3, 10])
def test_det_of_singular_and_permuted_matrices(n, rng):
    """Zero pivots (a repeated row) give 0; row swaps flip the sign exactly."""
    base = rng.standard_normal((n, n))
    singular = base.copy()
    singular[-1] = singular[0]
    permutation = np.eye(n)[[1, 0, *range(2, n)]]
    stack = np.stack([singular, np.zeros((n, n)), permutation, np.eye(n) * 2]).astype(np.float64)
    model = parse(node_model_text("Det", 22, [("x", np.float64, (4, n, n))], ("y", np.float64, (4,)), {}))
    (actual,) = compile_and_run(model, {"x": stack})
    np.testing.assert_allclose(actual, [0.0, 0.0, -1.0, 2.0**n], atol=1e-12)


def test_det_rejects_non_square():
    with pytest.raises(ShapeError, match=r"\[\*, n, n\]"):
        emitted_text(parse(node_model_text("Det", 22, [("x", np.float32, (2, 3))], ("y", np.float32, ()), {})))


# bfloat16 (added to Det at opset 22): computed in float32, so it must match the float32 oracle
# on the same (bfloat16-representable) inputs to bfloat16 precision.

BF16_CASES = {
    "det": ("Det", [("x", (3, 4, 4))], (3,), {}),
}


@pytest.mark.parametrize("case", list(BF16_CASES), ids=list(BF16_CASES))
def test_bfloat16_matches_float32_oracle(case, rng):
    check_bfloat16_matches_float32(*BF16_CASES[case], rng)
