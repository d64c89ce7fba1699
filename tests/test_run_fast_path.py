"""CompiledModel.run's fast path (repeat calls skip the feed checks) and run_device (outputs kept on the device)."""

from __future__ import annotations

import numpy as np
import pytest

import onnx_stablehlo
from onnx_stablehlo.errors import FeedError
from onnx_stablehlo.runtime import pjrt
from tests.util import ort_run, parse

AFFINE = parse("""<ir_version: 9, opset_import: ["" : 18]>
affine (float[batch, 4] x) => (float[batch, 4] y, float[batch] s) <float[4, 4] w = {0.5, 0.0, 0.1, 0.0, 0.0, 1.0, 0.0, 0.2, 0.3, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.9}> {
    m = MatMul (x, w)
    y = Tanh (m)
    axes1 = Constant <value = int64[1] {1}> ()
    s = ReduceSum <keepdims = 0> (y, axes1)
}
""")


@pytest.fixture
def model():
    return onnx_stablehlo.compile(AFFINE)


def test_run_repeat_calls_match_onnxruntime_and_take_the_fast_path(model, rng):
    x = rng.standard_normal((3, 4)).astype(np.float32)
    first = model.run({"x": x})
    assert model._plan is not None
    for _ in range(3):
        again = model.run({"x": x})
        for a, b in zip(again, first):
            np.testing.assert_array_equal(a, b)
    for ours, expected in zip(first, ort_run(AFFINE, {"x": x})):
        np.testing.assert_allclose(ours, expected, rtol=1e-5, atol=1e-6)
    other = rng.standard_normal((5, 4)).astype(np.float32)  # a new shape: checked, compiled, correct
    for ours, expected in zip(model.run({"x": other}), ort_run(AFFINE, {"x": other})):
        np.testing.assert_allclose(ours, expected, rtol=1e-5, atol=1e-6)
    assert model.compile_count == 2


def test_run_outputs_are_writable_arrays_of_their_own_like_onnxruntimes(model, rng):
    """Post-processing in place (``logits -= logits.max()``) works on our outputs as on
    onnxruntime's, on the checked first call and on the planned repeat, and changing one
    call's output leaves the next call's untouched."""
    x = rng.standard_normal((3, 4)).astype(np.float32)
    expected = ort_run(AFFINE, {"x": x})
    for call in range(2):
        outputs = model.run({"x": x})
        for ours, reference in zip(outputs, expected):
            assert ours.flags.writeable and ours.flags.owndata
            np.testing.assert_allclose(ours, reference, rtol=1e-5, atol=1e-6)
            ours -= ours.max()
            ours[...] = -7.0
    for ours, reference in zip(model.run({"x": x}), expected):
        np.testing.assert_allclose(ours, reference, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize(
    "feeds, match",
    [
        ({"x": np.zeros((3, 4), np.float64)}, "expected dtype float32"),
        ({"x": np.zeros((3, 4, 1), np.float32)}, "expected rank 2"),
        ({"x": np.zeros((3, 4), np.float32), "z": np.zeros(1)}, "unknown feed 'z'"),
        ({"y": np.zeros((3, 4), np.float32)}, "unknown feed 'y'"),
    ],
)
def test_run_after_the_fast_path_exists_still_rejects_bad_feeds(model, feeds, match):
    model.run({"x": np.ones((3, 4), np.float32)})
    assert model._plan is not None
    with pytest.raises(FeedError, match=match):
        model.run(feeds)


def test_run_takes_a_non_contiguous_view_after_the_fast_path_exists(model, rng):
    x = rng.standard_normal((3, 8)).astype(np.float32)
    model.run({"x": np.ascontiguousarray(x[:, ::2])})
    view = x[:, ::2]  # same dtype and shape as the plan's, not contiguous
    for ours, expected in zip(model.run({"x": view}), ort_run(AFFINE, {"x": np.ascontiguousarray(view)})):
        np.testing.assert_allclose(ours, expected, rtol=1e-5, atol=1e-6)


def test_run_device_chains_calls_without_host_copies_and_matches_onnxruntime(model, rng):
    x = rng.standard_normal((2, 4)).astype(np.float32)
    expected = x
    current = x
    for _ in range(3):
        y, s = model.run_device({"x": current})
        assert pjrt.is_device_array(y) and pjrt.is_on(y, model.device)
        expected_y, expected_s = ort_run(AFFINE, {"x": expected})
        np.testing.assert_allclose(np.asarray(y), expected_y, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(model.to_host([s])[0], expected_s, rtol=1e-5, atol=1e-6)
        current, expected = y, expected_y
    assert model.compile_count == 1


def test_run_device_takes_to_device_arrays_and_checks_them(model, rng):
    x = rng.standard_normal((2, 4)).astype(np.float32)
    (y, _) = model.run_device({"x": model.to_device(x)})  # no plan yet: checked path first
    np.testing.assert_allclose(np.asarray(y), ort_run(AFFINE, {"x": x})[0], rtol=1e-5, atol=1e-6)
    with pytest.raises(FeedError, match="expected dtype float32"):
        model.run_device({"x": model.to_device(x.astype(np.float64))})


def test_run_device_of_a_split_model_returns_device_arrays_of_run_results(rng):
    """A model split at a data-dependent node has no single executable: run's outputs are placed."""
    from tests.test_split import NONZERO_MIDDLE

    model = parse(NONZERO_MIDDLE)
    compiled = onnx_stablehlo.compile(model)
    x = rng.standard_normal((4, 5)).astype(np.float32)
    outputs = compiled.run_device({"x": compiled.to_device(x)})
    assert compiled._split is not None and compiled._plan is None
    assert all(pjrt.is_device_array(o) for o in outputs)
    for ours, expected in zip(compiled.to_host(outputs), ort_run(model, {"x": x})):
        np.testing.assert_allclose(ours, expected, rtol=1e-5, atol=1e-6)
