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


def _way_back_snippet() -> str:
    readme = (REPO_ROOT / "README.md").read_text()
    section = readme.split("## The way back", 1)[1]
    match = re.search(r"```python\n(.*?)```", section, re.S)
    assert match, "README.md has no python block under '## The way back'"
    return match.group(1)


@pytest.mark.models
def test_readme_way_back_snippet_writes_an_embedding_model_onnxruntime_runs(tmp_path):
    """The README's to_onnx snippet as written (MiniLM + jnp mean pooling and normalization,
    symbolic batch and sequence), then onnxruntime on the written file at two shapes against
    the same function run by JAX."""
    pytest.importorskip("torch")
    import build_minilm

    built = Path(build_minilm.build_minilm("legacy"))
    (tmp_path / "minilm.onnx").symlink_to(built)
    check = (
        "\nimport onnxruntime\n"
        "session = onnxruntime.InferenceSession('embed.onnx', providers=['CPUExecutionProvider'])\n"
        "for shape in ((1, 7), (3, 12)):\n"
        "    rng = np.random.default_rng(sum(shape))\n"
        "    i = rng.integers(0, 30000, shape).astype(np.int32)\n"
        "    m = np.ones(shape, np.int32); m[0, shape[1] // 2:] = 0\n"
        "    (got,) = session.run(None, {'input_ids': i, 'attention_mask': m})\n"
        "    want = np.asarray(jax.jit(embed)({'encoder': fn.params}, i, m))\n"
        "    print('diff', float(np.max(np.abs(got - want))))\n"
    )
    result = subprocess.run([sys.executable, "-c", _way_back_snippet() + check], cwd=tmp_path,
                            capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stderr[-3000:]
    diffs = [float(line.split()[1]) for line in result.stdout.splitlines() if line.startswith("diff ")]
    assert len(diffs) == 2 and max(diffs) < 1e-5, result.stdout
