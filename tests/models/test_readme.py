"""The README's Python API snippet runs as written, with ``$ONNX_STABLEHLO_CACHE`` set."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]


def _python_api_snippet() -> str:
    readme = (REPO_ROOT / "README.md").read_text()
    section = readme.split("## Python API", 1)[1]
    match = re.search(r"```python\n(.*?)```", section, re.S)
    assert match, "README.md has no python block under '## Python API'"
    return match.group(1)


@pytest.mark.models
def test_readme_python_api_snippet_honours_the_cache_variable(tmp_path):
    pytest.importorskip("torch")
    import build_minilm

    built = Path(build_minilm.build_minilm("legacy"))
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / built.name).symlink_to(built)
    env = {**os.environ, "ONNX_STABLEHLO_CACHE": str(cache)}
    result = subprocess.run(
        [sys.executable, "-c", _python_api_snippet()], env=env, cwd=tmp_path,
        capture_output=True, text=True, timeout=600,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    lines = result.stdout.splitlines()
    # print(model.input_names, model.output_names, outputs[0].shape)
    assert "['input_ids', 'attention_mask', 'token_type_ids']" in lines[0]
    assert lines[0].endswith("(2, 9, 384)")
    assert "func.func" in result.stdout and "tensor<?x?x" in result.stdout
