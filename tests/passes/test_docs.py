"""docs/passes.md is generated from the pass docstrings and stays current."""

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _generator():
    spec = importlib.util.spec_from_file_location("gen_passes_doc", ROOT / "tools" / "gen_passes_doc.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_passes_doc_is_current():
    expected = _generator().render()
    current = (ROOT / "docs" / "passes.md").read_text()
    assert current == expected, "docs/passes.md is stale: run python tools/gen_passes_doc.py"


def test_passes_doc_lists_every_pass_with_its_lit_file():
    from onnx_stablehlo.passes import pass_names

    text = (ROOT / "docs" / "passes.md").read_text()
    for name in pass_names():
        assert f"## `{name}`" in text
        assert (ROOT / "lit_tests" / "passes" / f"{name}.mlir").exists(), name
