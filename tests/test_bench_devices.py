"""Every timing script in bench/ takes ``--device cpu|cuda`` (issue 19, target 8), and the
onnxruntime session it compares against runs on the provider it names: onnxruntime itself only
warns when the CUDA provider is missing and runs on CPU, which would make a "cuda" ratio
compare against its CPU kernels."""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import onnx.helper as oh
import onnxruntime as ort
import pytest

from tests.util import load_file_module

BENCH = Path(__file__).resolve().parents[1] / "bench"
# Scripts without --device, each saying why in its docstring: device_passes A/Bs CPU-only passes,
# compile_reparse counts prints and parses (no timings).
WITHOUT_DEVICE = {"device_passes.py": "CPU only", "compile_reparse.py": "no ``--device``"}


def _device_choices(path: Path) -> list[str] | None:
    for node in ast.walk(ast.parse(path.read_text())):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "add_argument"
                and node.args and isinstance(node.args[0], ast.Constant) and node.args[0].value == "--device"):
            choices = next(k.value for k in node.keywords if k.arg == "choices")
            return [element.value for element in choices.elts]
    return None


def test_every_bench_script_takes_device_cpu_or_cuda_or_says_why_not():
    scripts = sorted(p for p in BENCH.glob("*.py") if not p.name.startswith("_"))
    assert len(scripts) >= 17
    for path in scripts:
        if path.name in WITHOUT_DEVICE:
            assert _device_choices(path) is None
            assert WITHOUT_DEVICE[path.name] in ast.get_docstring(ast.parse(path.read_text())), path.name
        else:
            assert _device_choices(path) == ["cpu", "cuda"], path.name


def test_no_bench_script_builds_its_own_onnxruntime_session():
    """They all take ``_timing.ort_session``, which checks the provider it got; startup.py's child
    process builds its own (it times onnxruntime's start-up, importing nothing else) after the
    parent has checked the provider through ``ort_session``, and asserts the provider it got."""
    for path in BENCH.glob("*.py"):
        text = path.read_text()
        if path.name == "startup.py":
            assert "_timing.ort_session(path, args.device)" in text
            assert "assert session.get_providers()[0] == provider" in text
        elif path.name != "_timing.py":
            assert "InferenceSession(" not in text, path.name


@pytest.fixture(scope="module")
def timing():
    return load_file_module(BENCH / "_timing.py", "bench_timing_for_devices")


def _negation():
    x = oh.make_tensor_value_info("x", 1, [2, 3])
    y = oh.make_tensor_value_info("y", 1, [2, 3])
    return oh.make_model(oh.make_graph([oh.make_node("Neg", ["x"], ["y"])], "neg", [x], [y]),
                         opset_imports=[oh.make_opsetid("", 18)])


def test_ort_session_on_cpu_runs_on_the_cpu_provider(timing, tmp_path):
    model = _negation()
    path = tmp_path / "neg.onnx"
    path.write_bytes(model.SerializeToString())
    x = np.random.default_rng(0).standard_normal((2, 3)).astype(np.float32)
    for source in (model, model.SerializeToString(), path, str(path)):
        session = timing.ort_session(source, "cpu", threads=1, sequential=True, quiet=True)
        assert session.get_providers() == ["CPUExecutionProvider"]
        np.testing.assert_array_equal(session.run(None, {"x": x})[0], -x)


def test_ort_session_on_cuda_gets_the_cuda_provider_or_stops_the_script(timing):
    if "CUDAExecutionProvider" in ort.get_available_providers():  # onnxruntime-gpu on a device machine
        assert timing.ort_session(_negation(), "cuda").get_providers()[0] == "CUDAExecutionProvider"
    else:
        with pytest.raises(SystemExit, match="has no CUDAExecutionProvider.*onnxruntime-gpu"):
            timing.ort_session(_negation(), "cuda")
    with pytest.raises(ValueError, match="'cpu' or 'cuda'"):
        timing.ort_session(_negation(), "tpu")


def test_xla_flags_reads_the_zoo_table_by_column_name(timing):
    """bench/xla_flags.py reads bench/zoo.py's printed table: its columns are found by name (a
    positional parse broke silently when zoo.py's table grew from 8 to 11 columns)."""
    import sys

    sys.path.insert(0, str(BENCH))  # the bench scripts import _timing as a sibling
    try:
        zoo = load_file_module(BENCH / "zoo.py", "bench_zoo_for_flags")
        flags = load_file_module(BENCH / "xla_flags.py", "bench_xla_flags_for_table")
    finally:
        sys.path.remove(str(BENCH))

    def row(name, ratio, verdict):
        cells = [name] + ["-"] * (len(zoo.COLUMNS) - 1)
        cells[zoo.COLUMNS.index("ours/ORT")], cells[zoo.COLUMNS.index("vs ORT")] = ratio, verdict
        return cells

    table = timing.markdown_table(zoo.COLUMNS, [row("a", "1.25", "ok"), row("b", "2.50", "MISMATCH"), row("c", "0.9", "ok")])
    text = "# zoo latency per call (ms)\n" + table + "\n\nskipped: d (needs x)"
    assert flags.parse_zoo_table(text, ["a", "b"]) == {"a": "1.25", "b": "2.50 MISMATCH"}
