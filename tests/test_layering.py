"""Layering: the frontend and the passes never import the runtime, and lowering leaves the
process environment alone (no XLA_FLAGS, nothing else)."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# Imports the frontend and the passes with the package's __init__ left out (it imports the
# runtime for the public face), lowers the bundled model and runs the default pipeline, then
# reports what was imported and which environment variables changed.
SCRIPT = r"""
import importlib.util, json, os, sys, types

spec = importlib.util.find_spec("onnx_stablehlo")
package = types.ModuleType("onnx_stablehlo")
package.__path__ = list(spec.submodule_search_locations)
package.__spec__ = spec
sys.modules["onnx_stablehlo"] = package
before = dict(os.environ)
import onnx_stablehlo.frontend, onnx_stablehlo.passes
from onnx_stablehlo.frontend import importer, loader
from onnx_stablehlo.passes import DEFAULT_PIPELINE, run_pipeline

model = loader.load(os.path.join(package.__path__[0], "data", "tiny_transformer.onnx"))
for dynamic in (False, True):
    lowered = importer.import_model(model, dynamic=dynamic)
    run_pipeline(lowered.module, DEFAULT_PIPELINE)
print(json.dumps({
    "runtime": sorted(m for m in sys.modules if m.startswith("onnx_stablehlo.runtime")),
    "changed": sorted(k for k in set(before) | set(os.environ) if before.get(k) != os.environ.get(k)),
    "ops": "stablehlo.dot_general" in lowered.text,
}))
"""


def test_lowering_imports_no_runtime_and_sets_no_environment():
    env = {"PATH": "/usr/bin:/bin", "HOME": str(Path.home())}
    result = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert report == {"runtime": [], "changed": [], "ops": True}


def _runtime_imports(path: Path) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        else:
            continue
        if any(n == "onnx_stablehlo.runtime" or n.startswith("onnx_stablehlo.runtime.") for n in names):
            found.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    return found


def test_frontend_passes_and_exporter_sources_never_import_the_runtime():
    # Function-level imports included: a lazy import is still a dependency. The exporter turns
    # StableHLO into ONNX without PJRT (the check against JAX lives in onnx_stablehlo/export.py).
    offenders = [hit for folder in ("frontend", "passes", "exporter") for path in sorted((ROOT / folder).rglob("*.py"))
                 for hit in _runtime_imports(path)]
    assert offenders == []
