"""Bisection against onnxruntime: the first node whose output diverges is named."""

from __future__ import annotations

import math

import numpy as np
import onnx
import pytest

from onnx_stablehlo.bisect import BisectError, bisect, compare_arrays, exposed_model, perturbed_registry
from onnx_stablehlo.cli import main
from tests.util import parse, shift_exposed_oracle

# A chain with a fan-out: x feeds both the MatMul and the final Add, so a fault upstream of
# the Add reaches the output through one path only. The Gelu node is unnamed.
CHAIN = """<ir_version: 9, opset_import: ["" : 20]>
g (float[2, 8] x, float[8, 8] w) => (float[2, 8] y) {
  [matmul] a = MatMul(x, w)
  [relu] b = Relu(a)
  c = Gelu(b)
  [tanh] d = Tanh(c)
  [add] y = Add(d, x)
}"""


@pytest.fixture
def chain_feeds(rng):
    return {"x": rng.standard_normal((2, 8)).astype(np.float32),
            "w": rng.standard_normal((8, 8)).astype(np.float32)}


def test_bisect_finds_nothing_when_the_runtimes_agree(chain_feeds):
    result = bisect(parse(CHAIN), chain_feeds)
    assert result.first_divergent is None
    assert [v.value for v in result.values] == ["a", "b", "c", "d", "y"]
    assert all(v.relative < 1e-5 for v in result.values)
    assert [o.value for o in result.outputs] == ["y"]
    assert "no node diverges" in result.format()


@pytest.mark.parametrize("node", ["relu", "Gelu#2:c", "tanh"])
def test_bisect_names_the_perturbed_node(node, chain_feeds):
    result = bisect(parse(CHAIN), chain_feeds, registry=perturbed_registry(node, relative=1e-2))
    first = result.first_divergent
    assert first is not None and first.node_name == node
    assert first.relative == pytest.approx(1e-2, rel=1e-3)  # the scaling itself, nothing upstream
    before = [v for v in result.values if v.node_index < first.node_index]
    assert before and all(v.ok and v.relative < 1e-5 for v in before)
    assert not result.outputs[0].ok  # the fault reaches the graph output
    assert f"first divergent node: {node}" in result.format()


def test_bisect_reports_a_value_that_is_already_a_graph_output(rng):
    model = parse("""<ir_version: 9, opset_import: ["" : 18]>
g (float[3] x) => (float[3] h, float[3] y) {
  [exp] h = Exp(x)
  [neg] y = Neg(h)
}""")
    result = bisect(model, {"x": rng.standard_normal(3).astype(np.float32)}, registry=perturbed_registry("exp"))
    assert result.first_divergent.value == "h"
    assert [o.value for o in result.outputs] == ["h", "y"]
    assert len(exposed_model(model)[0].graph.output) == 2  # nothing added twice


def test_compare_arrays_flags_shape_dtype_and_one_sided_nan():
    a = np.array([1.0, np.nan, np.inf], np.float32)
    assert compare_arrays(a, a.copy(), 1e-6)[2]  # NaN and inf at the same places agree
    diff, relative, ok, detail = compare_arrays(np.array([1.0, 2.0, 3.0], np.float32), a, 1e-6)
    assert not ok and math.isinf(relative) and "NaN or infinite" in detail
    assert "shape" in compare_arrays(np.zeros(2, np.float32), np.zeros(3, np.float32), 1e-6)[3]
    assert "dtype" in compare_arrays(np.zeros(2, np.float64), np.zeros(2, np.float32), 1e-6)[3]
    diff, relative, ok, _ = compare_arrays(np.array([2.0, 4.1]), np.array([2.0, 4.0]), 1e-2)
    assert diff == pytest.approx(0.1) and relative == pytest.approx(0.025) and not ok


def test_check_bisect_cli_names_the_perturbed_node(tmp_path, capsys):
    path = tmp_path / "chain.onnx"
    onnx.save(parse(CHAIN), path)
    assert main(["check", str(path), "--bisect"]) == 0
    assert "no node diverges" in capsys.readouterr().out
    assert main(["check", str(path), "--bisect", "--perturb-node", "relu"]) == 2
    out = capsys.readouterr().out
    assert "first divergent node: relu (Relu, node #1), output b" in out
    assert "output y: float32 [2, 8]" in out and "MISMATCH" in out


def test_check_bisect_cli_rejects_an_unknown_node(tmp_path, capsys):
    path = tmp_path / "chain.onnx"
    onnx.save(parse(CHAIN), path)
    assert main(["check", str(path), "--bisect", "--perturb-node", "nope"]) == 1
    err = capsys.readouterr().err
    assert "error: --perturb-node nope: the graph has no node of that name" in err


def test_bisect_error_when_onnxruntime_rejects_the_feeds(chain_feeds):
    feeds = dict(chain_feeds, x=chain_feeds["x"].astype(np.float64))
    with pytest.raises(BisectError, match="onnxruntime failed"):
        bisect(parse(CHAIN), feeds)


def test_bisect_says_when_onnxruntime_changes_its_own_outputs_once_values_are_exposed(tmp_path, capsys, monkeypatch):
    """onnxruntime fuses differently around exposed values (an int8 MiniLM's outputs moved by 3%
    relative): when its exposed run's outputs differ from its run of the model as given, bisect
    says so, compares our outputs with the latter, and check --bisect exits 0 when they agree."""
    shift_exposed_oracle(monkeypatch, ("b", "y"))  # onnxruntime on the exposed model moves these
    path = tmp_path / "chain.onnx"
    onnx.save(parse(CHAIN), path)
    assert main(["check", str(path), "--bisect"]) == 0
    out = capsys.readouterr().out
    assert "warning: onnxruntime's own outputs change when every node output is exposed (y relative" in out
    assert "on the model as given, our outputs agree with onnxruntime's: y relative" in out
    assert "first divergent node: relu" in out and "bisect inconclusive" in out
    assert "MISMATCH" not in out
    # A real fault of ours still fails: the outputs then disagree on the model as given too.
    assert main(["check", str(path), "--bisect", "--perturb-node", "tanh"]) == 2
    out = capsys.readouterr().out
    assert "our outputs do NOT agree" in out and "MISMATCH" in out and "inconclusive" not in out
