"""``onnx-stablehlo report``: the HTML page, its data, and the page rendered in headless Chromium."""

from __future__ import annotations

import re

import numpy as np
import onnx
import pytest

from onnx_stablehlo.bisect import perturbed_registry
from onnx_stablehlo.cli import main
from onnx_stablehlo.report import _hlo_node_map, build_report, render_html
from tests import chromium
from tests.util import shift_exposed_oracle

CNN = """<ir_version: 9, opset_import: ["" : 18]>
cnn (float[1, 3, 16, 16] x) => (float[1, 10] y) {
  [conv] c = Conv <pads = [1, 1, 1, 1]> (x, k, kb)
  [relu] r = Relu(c)
  [pool] p = MaxPool <kernel_shape = [2, 2], strides = [2, 2]> (r)
  [flat] f = Flatten(p)
  [fc] y = Gemm <transB = 1> (f, w, b)
}"""

SECTIONS = ("model", "pipeline", "mapping", "profile", "numerics")


def cnn_model() -> onnx.ModelProto:
    """A small CNN (Conv, Relu, MaxPool, Flatten, Gemm) with seeded weights."""
    model = onnx.parser.parse_model(CNN)
    rng = np.random.default_rng(0)
    for name, shape in (("k", (8, 3, 3, 3)), ("kb", (8,)), ("w", (10, 512)), ("b", (10,))):
        model.graph.initializer.append(onnx.numpy_helper.from_array(rng.standard_normal(shape).astype(np.float32), name))
    onnx.checker.check_model(model)
    return model


@pytest.fixture(scope="module")
def perturbed_report():
    """The CNN's report with node ``relu`` scaled by 1.01 in onnx_stablehlo's lowering."""
    feeds = {"x": np.random.default_rng(1).standard_normal((1, 3, 16, 16)).astype(np.float32)}
    return build_report(cnn_model(), feeds, registry=perturbed_registry("relu"), profile_runs=3)


def test_report_names_the_perturbed_node(perturbed_report):
    first = perturbed_report.bisect.first_divergent
    assert (first.node_name, first.op_type, first.value) == ("relu", "Relu", "r")
    assert first.relative == pytest.approx(1e-2, rel=1e-3)
    by_value = {v.value: v for v in perturbed_report.bisect.values}
    assert by_value["c"].ok and by_value["c"].relative < 1e-5  # the Conv before it agrees
    assert not perturbed_report.bisect.outputs[0].ok


def test_report_model_and_pipeline_sections(perturbed_report):
    report = perturbed_report
    assert report.inputs == [("x", "float", "[1, 3, 16, 16]")] and report.outputs == [("y", "float", "[1, 10]")]
    assert report.op_histogram == {"Conv": 1, "Relu": 1, "MaxPool": 1, "Flatten": 1, "Gemm": 1}
    assert report.weight_bytes == 4 * (8 * 27 + 8 + 10 * 512 + 10) and report.weight_count == 4
    labels = [step.label for step in report.passes]
    assert labels[0] == "canonicalize-stablehlo" and "cse" in labels and labels[-2] == "conv-kernel-layout"
    # as CompiledModel: the kernel's transpose runs once, in @hoisted_weights, not in the profile
    assert labels[-1] == "hoist-weights{num-inputs=1}" and "@hoisted_weights" in report.final_text
    assert all(step.seconds > 0 and step.ops_after > 0 for step in report.passes)
    assert report.compile_seconds > 0 and report.lower_seconds > 0
    assert 'loc("conv")' in report.lowered_text


def test_report_maps_nodes_to_ops_and_profile_to_nodes(perturbed_report):
    report = perturbed_report
    assert report.node_ops["conv"]["stablehlo.convolution"] == 1
    assert report.node_ops["fc"]["stablehlo.dot_general"] == 1
    assert report.node_ops["relu"]["stablehlo.multiply"] == 1  # the perturbation, under relu's loc
    assert report.profile_runs == 3 and report.profile
    profiled = {node for entry in report.profile for node in entry.nodes}
    assert {"conv", "pool"} <= profiled
    assert all(entry.seconds > 0 and entry.count >= report.profile_runs for entry in report.profile)


def test_report_html_is_self_contained(perturbed_report):
    page = render_html(perturbed_report)
    for section in SECTIONS:
        assert f'<section id="{section}">' in page
    assert '<b id="first-divergent">relu</b>' in page
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", page)  # nothing fetched from the network
    assert '<table id="divergence">' in page and '<table id="passes">' in page


def test_hlo_text_keeps_onnx_node_names():
    """Guards ``pjrt.hlo_text``: XLA's HLO metadata carries our locations as op_name."""
    from onnx_stablehlo import lower
    from onnx_stablehlo.runtime import pjrt

    lowered = lower(cnn_model())
    executable = pjrt.compile_module(lowered.text_with_locations(), pjrt.get_device("cpu"))
    mapping = _hlo_node_map(pjrt.hlo_text(executable))
    assert {"conv", "pool"} <= {node for nodes, inferred in mapping.values() if not inferred for node in nodes}


def test_hlo_node_map_follows_called_computations():
    hlo = """HloModule m

%fused_computation (p: f32[2]) -> f32[2] {
  %p = f32[2]{0} parameter(0)
  ROOT %relu.1 = f32[2]{0} maximum(%p, %p), metadata={op_name="relu"}
}

ENTRY %main (x: f32[2]) -> f32[2] {
  %x = f32[2]{0} parameter(0)
  %exp.2 = f32[2]{0} exponential(%x), metadata={op_name="exp"}
  ROOT %fusion = f32[2]{0} fusion(%exp.2), kind=kLoop, calls=%fused_computation
}
"""
    mapping = _hlo_node_map(hlo)
    assert mapping["fusion"] == (("relu",), False) and mapping["exp.2"] == (("exp",), False)
    assert mapping["x"] == (("exp",), True)  # no metadata: the nodes of its user


def test_report_cli_writes_the_page(tmp_path, capsys):
    path, out = tmp_path / "cnn.onnx", tmp_path / "report.html"
    onnx.save(cnn_model(), path)
    assert main(["report", str(path), "-o", str(out), "--profile-runs", "0"]) == 0
    printed = capsys.readouterr().out
    assert f"wrote {out}" in printed and "no node diverges from onnxruntime" in printed
    page = out.read_text()
    assert "All 5 node outputs agree with onnxruntime" in page


def test_report_cli_says_when_onnxruntime_moves_its_own_outputs(tmp_path, capsys, monkeypatch):
    """When onnxruntime's outputs change once every node output is exposed, the page and the
    command's summary say the divergence may be its own (see test_bisect.py)."""
    shift_exposed_oracle(monkeypatch, ("r", "y"))  # onnxruntime on the exposed model moves these
    path, out = tmp_path / "cnn.onnx", tmp_path / "report.html"
    onnx.save(cnn_model(), path)
    assert main(["report", str(path), "-o", str(out), "--profile-runs", "0"]) == 0
    printed = capsys.readouterr().out
    assert "first divergent node: relu (inconclusive: onnxruntime's outputs change" in printed
    page = out.read_text()
    assert "onnxruntime&#x27;s own outputs change when every node output is exposed (y relative" in page  # html.escape
    assert "on the model as given our outputs agree with it" in page


def test_report_in_headless_chromium(perturbed_report, tmp_path):
    chromium.require_chromium()
    page = tmp_path / "report.html"
    page.write_text(render_html(perturbed_report))
    dom = chromium.dump_dom(page.as_uri(), tmp_path / "profile")
    assert 'data-rendered="yes"' in dom  # the page's script ran
    for section in SECTIONS:
        assert f'<section id="{section}">' in dom
    assert re.search(r'<p id="divergence-count">4 of 5 values beyond tolerance</p>', dom)
    assert '<tr class="first"><td class="num">1</td><td>relu</td>' in dom
    png = chromium.screenshot(page.as_uri(), tmp_path / "profile", tmp_path / "report.png")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10_000
