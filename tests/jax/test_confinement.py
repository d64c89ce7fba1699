"""Private jax details stay in the modules docs/architecture.md names, and still hold.

The bridge builds its ``jax.export.Exported`` from a template and replaces two private fields
(runtime/jax_export.py); the runtime uses jaxlib's client (runtime/pjrt.py). These tests fail
loudly when a jax upgrade removes what they rely on, and when a private jax name leaks into
another module.
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest

jax = pytest.importorskip("jax")

ROOT = Path(__file__).resolve().parents[2]
ALLOWED = {"runtime/pjrt.py", "runtime/jax_export.py", "onnx_stablehlo/jax.py"}
PRIVATE = re.compile(r"jax\._src|_mlir_libs|jaxlib\._jax|from jaxlib import _jax|\._get_vjp|mlir_module_serialized")


def test_exported_has_the_private_fields_the_bridge_replaces():
    from onnx_stablehlo.runtime.jax_export import EXPORTED_PRIVATE_FIELDS

    fields = {f.name for f in dataclasses.fields(jax.export.Exported)}
    for name in EXPORTED_PRIVATE_FIELDS:
        assert name in fields, f"jax.export.Exported lost its field {name!r}: revisit runtime/jax_export.py"


def test_serialization_entry_points_exist():
    import jax.extend.mlir as jax_mlir
    from jaxlib.mlir.dialects import stablehlo

    assert callable(jax_mlir.serialize_portable_artifact)
    assert stablehlo.get_version_from_compatibility_requirement(stablehlo.StablehloCompatibilityRequirement.WEEK_4)


def test_calling_convention_version_is_supported():
    from jax import export

    assert export.minimum_supported_calling_convention_version <= 9 <= export.maximum_supported_calling_convention_version


def test_private_names_only_in_the_named_modules():
    offenders = []
    for folder in ("onnx_stablehlo", "frontend", "passes", "runtime"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            relative = path.relative_to(ROOT).as_posix()
            name_ok = re.fullmatch(r"jax[a-z_]*\.py|.*_mlir\.py", path.name) is not None
            if relative in ALLOWED or name_ok:
                continue
            for number, line in enumerate(path.read_text().splitlines(), 1):
                if PRIVATE.search(line):
                    offenders.append(f"{relative}:{number}: {line.strip()}")
    assert not offenders, "private jax names outside the named modules:\n" + "\n".join(offenders)


def test_architecture_doc_names_the_modules():
    text = (ROOT / "docs" / "architecture.md").read_text()
    assert "runtime/jax_export.py" in text and "runtime/pjrt.py" in text
