"""``onnx-stablehlo report`` on real models (MiniLM, a CNN, silero-vad), opened in headless Chromium.

Marked ``slow`` (10-30 s of compile and profile per model on 2 cores) and ``models``. MiniLM
also runs with one node deliberately perturbed: the page must name it as the first divergence.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

import zoo  # tools/ is put on sys.path by conftest.py
from onnx_stablehlo.bisect import perturbed_registry
from onnx_stablehlo.report import render_html, write_report
from tests import chromium

pytestmark = [pytest.mark.models, pytest.mark.slow]

SECTIONS = ("model", "pipeline", "mapping", "profile", "numerics")


def _zoo_model(name: str):
    model = zoo.MODELS[name]
    missing = model.missing_requirements()
    if missing:
        pytest.skip(f"needs {', '.join(missing)} (the [models] extra)")
    return model.build(zoo.cache_dir()), model.inputs(np.random.default_rng(model.seed))


def _open_in_chromium(report, tmp_path) -> str:
    page = tmp_path / "report.html"
    page.write_text(render_html(report))
    dom = chromium.dump_dom(page.as_uri(), tmp_path / "profile", virtual_time_ms=5000)
    assert 'data-rendered="yes"' in dom
    for section in SECTIONS:
        assert f'<section id="{section}">' in dom
    assert '<table id="divergence">' in dom and '<table id="profile-hlo">' in dom
    chromium.screenshot(page.as_uri(), tmp_path / "profile", tmp_path / "report.png")
    return dom


@pytest.mark.parametrize("name", ["silero-vad-16k", "light-squeezenet"])
def test_report_of_zoo_model_opens_in_chromium(name, tmp_path):
    chromium.require_chromium()
    path, feeds = _zoo_model(name)
    report = write_report(path, tmp_path / "written.html", feeds=feeds, profile_runs=3)
    assert report.bisect.first_divergent is None, report.bisect.format()
    assert all(o.ok for o in report.bisect.outputs)
    assert report.profile and sum(1 for e in report.profile if e.nodes) >= len(report.profile) // 2
    assert not report.problems
    dom = _open_in_chromium(report, tmp_path)
    assert re.search(r"agrees? with onnxruntime", dom) and "First divergent node" not in dom


def test_report_of_minilm_names_a_perturbed_softmax(tmp_path):
    chromium.require_chromium()
    import build_minilm

    path = build_minilm.build_minilm("legacy")
    feeds = build_minilm.tokenize(("This is an example sentence", "Each sentence is converted"))
    node = "/bert/encoder/layer.2/attention/self/Softmax"
    report = write_report(path, tmp_path / "written.html", feeds=feeds, registry=perturbed_registry(node), profile_runs=3)
    first = report.bisect.first_divergent
    assert (first.node_name, first.op_type) == (node, "Softmax")
    assert all(v.ok for v in report.bisect.values if v.node_index < first.node_index)
    assert any("MatMul" in n for e in report.profile[:5] for n in e.nodes)  # the dense layers dominate
    dom = _open_in_chromium(report, tmp_path)
    assert f'<b id="first-divergent">{node}</b>' in dom
