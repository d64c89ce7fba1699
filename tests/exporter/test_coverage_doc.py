"""docs/export_coverage.md stays current (regenerate: python tools/gen_export_coverage.py)."""

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _tool():
    spec = importlib.util.spec_from_file_location("gen_export_coverage", ROOT / "tools" / "gen_export_coverage.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_export_coverage_doc_is_current():
    expected = _tool().render()
    current = (ROOT / "docs" / "export_coverage.md").read_text()
    assert current == expected, "docs/export_coverage.md is stale: run python tools/gen_export_coverage.py"


def test_export_coverage_lists_every_rule_and_the_unsupported_ops():
    from onnx_stablehlo.exporter.rules import default_registry

    text = _tool().render()
    for name in default_registry().op_names():
        assert f"| `{name}` | exporter/rules/" in text
    missing = text.split("## Ops without an export rule")[1]
    for name in _tool().dialect_ops():
        if name not in default_registry():
            assert f"| `{name}` |" in missing
