"""The runtime's joints (issue 13): lowering touches no PJRT, the runtime does not import the
package face, ``runtime/split.py`` does not import ``runtime/model.py``, and the runtime's
pieces stay small."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import onnx_stablehlo

ROOT = Path(__file__).resolve().parents[1]
RUNTIME = ROOT / "runtime"

# Modules of the package face: what users import. The runtime sits below them.
FACE = {
    "onnx_stablehlo.api", "onnx_stablehlo.cli", "onnx_stablehlo.opt", "onnx_stablehlo._io",
    "onnx_stablehlo._compose", "onnx_stablehlo.losses", "onnx_stablehlo.heads",
    "onnx_stablehlo._finetune", "onnx_stablehlo.report", "onnx_stablehlo.bisect",
    "onnx_stablehlo.shape_inference", "onnx_stablehlo.generation",
}


def _imports(path: Path) -> set[str]:
    """Every module ``path`` imports (at any level, lazily or not)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return found


def test_runtime_does_not_import_the_package_face():
    offenders = {
        path.name: sorted(_imports(path) & FACE) for path in RUNTIME.glob("*.py") if _imports(path) & FACE
    }
    assert offenders == {}


def test_split_does_not_import_model():
    assert "onnx_stablehlo.runtime.model" not in _imports(RUNTIME / "split.py")
    assert "onnx_stablehlo.runtime.split" in _imports(RUNTIME / "model.py")
    assert "split hook" not in (RUNTIME / "model.py").read_text()


def test_no_runtime_file_is_over_600_lines():
    sizes = {path.name: len(path.read_text().splitlines()) for path in RUNTIME.glob("*.py")}
    assert {name: size for name, size in sizes.items() if size > 600} == {}


def test_trainer_is_on_the_package_face():
    from onnx_stablehlo.runtime.training import Trainer

    assert onnx_stablehlo.Trainer is Trainer and "Trainer" in onnx_stablehlo.__all__


LOWER_SCRIPT = textwrap.dedent(
    """
    import json, os, sys
    import onnx_stablehlo
    from onnx_stablehlo import cli
    from onnx_stablehlo.runtime import pjrt

    before = dict(os.environ)
    lowered = onnx_stablehlo.lower(onnx_stablehlo.example_model_path())
    code = cli.main(["compile", onnx_stablehlo.example_model_path(), "-o", sys.argv[1]])
    json.dump({
        "ops": lowered.text.count("stablehlo."),
        "cli": code,
        "xla_flags": os.environ.get("XLA_FLAGS"),
        "changed": sorted(k for k in set(before) | set(os.environ) if before.get(k) != os.environ.get(k)),
        "clients": pjrt._client_or_exception.cache_info().currsize,
    }, sys.stdout)
    """
)


def test_lowering_sets_no_environment_and_starts_no_pjrt_client(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "XLA_FLAGS"}
    done = subprocess.run(
        [sys.executable, "-c", LOWER_SCRIPT, str(tmp_path / "out.mlir")],
        capture_output=True, text=True, timeout=300, env=env, cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["ops"] > 10 and result["cli"] == 0
    assert "stablehlo." in (tmp_path / "out.mlir").read_text()
    assert result["xla_flags"] is None and result["changed"] == []
    assert result["clients"] == 0
