"""Run-time checks (issue 15): out-of-range Gather-family indices raise like onnxruntime,
Resize's run-time scales/sizes are checked against the declared shape, newer opsets are refused.
"""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest

import onnx_stablehlo
from onnx_stablehlo import errors
from tests.util import ort_run, parse

HEADER = '<ir_version: 9, opset_import: ["" : 18]>'

CASES = {
    # name: (graph text, feeds builder(index value) -> feeds, in-range value, out-of-range values)
    "Gather": (
        "g (float[256, 4] table, int64[2, 3] ids) => (float[2, 3, 4] y) { [embed] y = Gather(table, ids) }",
        lambda rng, v: {"table": rng.standard_normal((256, 4)).astype(np.float32),
                        "ids": np.array([[1, 2, 3], [4, 5, v]], np.int64)},
        -256, (256, 10**9, -257),
    ),
    "Gather_int32_axis1": (
        "g (float[3, 8] x, int32[2] i) => (float[3, 2] y) { [g1] y = Gather <axis = 1> (x, i) }",
        lambda rng, v: {"x": rng.standard_normal((3, 8)).astype(np.float32), "i": np.array([0, v], np.int32)},
        7, (8, -9),
    ),
    "GatherElements": (
        "g (float[3, 4] x, int64[3, 2] i) => (float[3, 2] y) { [ge] y = GatherElements <axis = 1> (x, i) }",
        lambda rng, v: {"x": rng.standard_normal((3, 4)).astype(np.float32),
                        "i": np.array([[0, 1], [2, 3], [v, 0]], np.int64)},
        -4, (4, -5),
    ),
    "GatherND": (
        "g (float[4, 5] x, int64[2, 2] i) => (float[2] y) { [gnd] y = GatherND(x, i) }",
        lambda rng, v: {"x": rng.standard_normal((4, 5)).astype(np.float32), "i": np.array([[0, 1], [3, v]], np.int64)},
        4, (5, -6),
    ),
    "ScatterND": (
        "g (float[4, 5] x, int64[1, 2] i, float[1] u) => (float[4, 5] y) { [snd] y = ScatterND(x, i, u) }",
        lambda rng, v: {"x": rng.standard_normal((4, 5)).astype(np.float32), "i": np.array([[v, 1]], np.int64),
                        "u": np.array([9.0], np.float32)},
        -4, (4, -5),
    ),
    "ScatterElements": (
        "g (float[3, 4] x, int64[1, 2] i, float[1, 2] u) => (float[3, 4] y) "
        "{ [se] y = ScatterElements <axis = 1> (x, i, u) }",
        lambda rng, v: {"x": rng.standard_normal((3, 4)).astype(np.float32), "i": np.array([[0, v]], np.int64),
                        "u": np.array([[7.0, 8.0]], np.float32)},
        3, (4, -5),
    ),
}


@pytest.mark.parametrize("name", list(CASES))
def test_out_of_range_indices_raise_like_onnxruntime(name):
    graph, feeds_of, valid, invalid = CASES[name]
    model = parse(f"{HEADER}\n{graph}")
    rng = np.random.default_rng(0)
    compiled = onnx_stablehlo.compile(model)
    feeds = feeds_of(rng, valid)
    np.testing.assert_array_equal(compiled.run(feeds)[0], ort_run(model, feeds)[0])
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    for value in invalid:
        feeds = feeds_of(np.random.default_rng(0), value)
        with pytest.raises(Exception):  # noqa: B017 - the oracle's own error types vary
            session.run(None, feeds)
        with pytest.raises(errors.RuntimeCheckError, match="out of range") as caught:
            compiled.run(feeds)
        assert name.split("_")[0] in str(caught.value)


def test_the_check_can_be_skipped_and_then_clamps():
    graph, feeds_of, _, _ = CASES["Gather"]
    model = parse(f"{HEADER}\n{graph}")
    feeds = feeds_of(np.random.default_rng(0), 256)
    out = onnx_stablehlo.compile(model, runtime_checks=False).run(feeds)[0]
    np.testing.assert_array_equal(out[1, 2], feeds["table"][255])  # StableHLO clamps the start index
    assert not onnx_stablehlo.lower(model).check_messages  # lower() emits no checks


def test_checks_inside_a_subgraph_are_skipped_not_wrong():
    model = parse(
        f"""{HEADER}
g (bool c, float[4, 2] t, int64[1] i) => (float[1, 2] y) {{
  [branch] y = If (c) <
    then_branch = g1 () => (float[1, 2] a) {{ [inner] a = Gather(t, i) }},
    else_branch = g2 () => (float[1, 2] b) {{ [inner2] b = Gather(t, i) }}
  >
}}"""
    )
    table = np.arange(8, dtype=np.float32).reshape(4, 2)
    feeds = {"c": np.array(True), "t": table, "i": np.array([3], np.int64)}
    np.testing.assert_array_equal(onnx_stablehlo.compile(model).run(feeds)[0], table[[3]])


@pytest.mark.parametrize("declared", ["1, 1, 1, 2", "1, 3, 1, 2"])
def test_resize_with_run_time_scales_checks_the_declared_shape(declared):
    model = parse(f"""{HEADER}
g (float[1, 3, 1, 4] x, float[4] scales) => (float[{declared}] y) {{ [rs] y = Resize(x, , scales) }}""")
    feeds = {"x": np.arange(12, dtype=np.float32).reshape(1, 3, 1, 4), "scales": np.array([1, 1, 1, 0.5], np.float32)}
    compiled = onnx_stablehlo.compile(model)
    expected = ort_run(model, feeds)[0]
    assert expected.shape == (1, 3, 1, 2)
    if declared == "1, 3, 1, 2":
        np.testing.assert_array_equal(compiled.run(feeds)[0], expected)
    else:
        with pytest.raises(errors.RuntimeCheckError, match=r"another output shape than the declared \[1, 1, 1, 2\] of 'y'"):
            compiled.run(feeds)


def test_resize_with_run_time_sizes_checks_the_declared_shape():
    model = parse(f"""{HEADER}
g (float[1, 3, 1, 4] x, int64[4] sizes) => (float[1, 3, 1, 2] y) {{ [rs] y = Resize(x, , , sizes) }}""")
    x = np.arange(12, dtype=np.float32).reshape(1, 3, 1, 4)
    compiled = onnx_stablehlo.compile(model)
    good = {"x": x, "sizes": np.array([1, 3, 1, 2], np.int64)}
    np.testing.assert_array_equal(compiled.run(good)[0], ort_run(model, good)[0])
    with pytest.raises(errors.RuntimeCheckError, match="run-time sizes 'sizes'"):
        compiled.run({"x": x, "sizes": np.array([1, 1, 1, 2], np.int64)})


@pytest.mark.parametrize("opset", [29, 10000])
def test_opsets_newer_than_onnx_are_refused(opset):
    import onnx

    model = parse(f"{HEADER}\ng (float[2] x) => (float[2] y) {{ y = Neg(x) }}")
    model.opset_import[0].version = opset
    with pytest.raises(errors.UnsupportedOpsetError, match=f"opset {opset} of domain 'ai.onnx'.*up to 28"):
        onnx_stablehlo.compile(model, check=False)
    assert onnx.defs.onnx_opset_version() == 28  # update the message's expectation with onnx


def test_resize_with_run_time_sizes_and_a_declared_zero_dim_is_checked_too():
    model = parse(f"""{HEADER}
g (float[1, 1, 2, 4] x, int64[4] sizes) => (float[0, 1, 1, 3] y) {{ y = Resize <mode = "nearest"> (x, , , sizes) }}""")
    feeds = {"x": np.arange(8, dtype=np.float32).reshape(1, 1, 2, 4), "sizes": np.array([1, 1, 1, 3], np.int64)}
    with pytest.raises(errors.RuntimeCheckError, match=r"declared \[0, 1, 1, 3\]"):
        onnx_stablehlo.compile(model).run(feeds)
