"""Generated docs stay current."""

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _tool(name: str):
    spec = importlib.util.spec_from_file_location(name, ROOT / "tools" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_coverage_doc_is_current():
    expected = _tool("gen_coverage").render()
    current = (ROOT / "docs" / "coverage.md").read_text()
    assert current == expected, "docs/coverage.md is stale: run python tools/gen_coverage.py"


def test_readme_links_coverage():
    assert "docs/coverage.md" in (ROOT / "README.md").read_text()
