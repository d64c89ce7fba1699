"""The call plan (runtime/call_plan.py): repeat calls with bound transfers and C++ result
handlers give onnxruntime's values and dtypes, and fall back to the checked path otherwise."""

from __future__ import annotations

import numpy as np
import pytest

import onnx_stablehlo
from onnx_stablehlo.runtime import pjrt
from tests.util import ort_run, parse

MIXED = parse("""<ir_version: 9, opset_import: ["" : 18]>
mixed (int64[2, 3] i, bool[2, 3] b, float16[2, 3] h, float[2, 3] f) => (int64[2, 3] i2, bool[2, 3] nb, float16[2, 3] h2, double[2, 3] d) {
    i2 = Mul (i, i)
    nb = Not (b)
    h2 = Add (h, h)
    d = Cast <to = 11> (f)
}
""")


def _feeds(rng):
    return {
        "i": rng.integers(-(2**40), 2**40, (2, 3)).astype(np.int64),
        "b": rng.integers(0, 2, (2, 3)).astype(bool),
        "h": rng.standard_normal((2, 3)).astype(np.float16),
        "f": rng.standard_normal((2, 3)).astype(np.float32),
    }


def test_call_plan_repeat_calls_keep_values_and_dtypes(rng):
    model = onnx_stablehlo.compile(MIXED)
    for call in range(4):
        feeds = _feeds(rng)
        outputs = model.run(feeds)
        if call:
            assert model._plan is not None  # the 2nd..4th calls take the plan
        for ours, expected in zip(outputs, ort_run(MIXED, feeds)):
            assert ours.dtype == expected.dtype and ours.shape == expected.shape
            np.testing.assert_array_equal(ours, expected)


def test_call_plan_outputs_do_not_alias_later_calls_or_feeds(rng):
    model = onnx_stablehlo.compile(MIXED)
    feeds = _feeds(rng)
    first = [o.copy() for o in model.run(feeds)]
    kept = model.run(feeds)
    feeds["i"][...] = 7  # the caller reuses its buffer
    model.run(_feeds(rng))
    for a, b in zip(kept, first):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("variant", ["non-contiguous", "list", "big-endian"])
def test_call_plan_other_layouts_after_the_plan_exists(rng, variant):
    """Feeds the plan does not take go through the checked path (and its errors) as before."""
    model = onnx_stablehlo.compile(MIXED)
    model.run(_feeds(rng))
    feeds = _feeds(rng)
    expected = ort_run(MIXED, feeds)
    if variant == "big-endian":
        feeds["f"] = feeds["f"].astype(">f4")
        with pytest.raises(onnx_stablehlo.errors.FeedError, match="expected dtype float32"):
            model.run(feeds)
        return
    if variant == "non-contiguous":
        feeds["f"] = np.asfortranarray(feeds["f"])
    else:
        feeds["i"] = feeds["i"].tolist()  # a Python list of ints: numpy makes it int64
    for ours, want in zip(model.run(feeds), expected):
        np.testing.assert_array_equal(ours, want)


def test_call_plan_run_device_takes_numpy_and_device_feeds(rng):
    model = onnx_stablehlo.compile(MIXED)
    model.run(_feeds(rng))
    feeds = _feeds(rng)
    expected = ort_run(MIXED, feeds)
    mixed = {n: (model.to_device(a) if n in ("i", "h") else a) for n, a in feeds.items()}
    outputs = model.run_device(mixed)
    assert all(pjrt.is_on(o, model.device) for o in outputs)
    for ours, want in zip(model.to_host(outputs), expected):
        assert ours.dtype == want.dtype
        np.testing.assert_array_equal(ours, want)


SYMBOLIC = parse("""<ir_version: 9, opset_import: ["" : 18]>
g (float[n, 3] x) => (float[n, 3] y) {
    y = Softmax <axis = 1> (x)
}
""")


def test_call_plan_alternating_signatures_each_keep_a_plan(rng):
    model = onnx_stablehlo.compile(SYMBOLIC)
    feeds = [{"x": rng.standard_normal((n, 3)).astype(np.float32)} for n in (2, 5, 2, 5, 5, 2)]
    for f in feeds:
        np.testing.assert_allclose(model.run(f)[0], ort_run(SYMBOLIC, f)[0], rtol=1e-5, atol=1e-6)
        (on_device,) = model.run_device(f)
        np.testing.assert_allclose(np.asarray(on_device), ort_run(SYMBOLIC, f)[0], rtol=1e-5, atol=1e-6)
    assert model.compile_count == 2 and len(model._plans) == 2
    assert "tensor<2x3xf32>" in model.mlir  # the most recently used specialization (n=2)
    model.run(feeds[1])
    assert "tensor<5x3xf32>" in model.mlir
    with pytest.raises(onnx_stablehlo.errors.FeedError, match="expected dtype float32"):
        model.run({"x": np.zeros((5, 3), np.float64)})  # a signature's shapes, another dtype: checked


def test_call_plan_follows_the_executable_lru(rng):
    """A plan whose specialization the LRU evicted is not used: that shape compiles again."""
    model = onnx_stablehlo.compile(SYMBOLIC, cache_size=2)
    # LRU after 2, 5, 2, 7 holds {2, 7}; the plans (first in, first out) hold {5, 7}.
    for n in (2, 5, 2, 7, 5):
        feeds = {"x": rng.standard_normal((n, 3)).astype(np.float32)}
        np.testing.assert_allclose(model.run(feeds)[0], ort_run(SYMBOLIC, feeds)[0], rtol=1e-5, atol=1e-6)
    assert model.compile_count == 4  # 5 compiled twice


def test_run_device_takes_python_lists_as_run_does(rng):
    """A list feed goes through run's checks; the plan's device path then declines it (it has
    no dtype) instead of raising AttributeError (a new user's probe)."""
    model = onnx_stablehlo.compile(MIXED)
    feeds = _feeds(rng)
    model.run(feeds)  # a plan exists
    listed = dict(feeds, i=feeds["i"].tolist())
    expected = model.run({**feeds})
    outputs = model.to_host(model.run_device(listed))
    for ours, want in zip(outputs, expected):
        np.testing.assert_array_equal(ours, want)
