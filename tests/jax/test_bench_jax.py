"""``bench/jax.py`` (the bridge benchmark issue 14 names) must not shadow the jax package.

Every script in bench/ runs with bench/ first on ``sys.path``; imported as ``jax`` the file
loads the real package in its place.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("jax")

REPO = Path(__file__).resolve().parents[2]


def test_import_jax_with_bench_first_on_sys_path_gets_the_real_package():
    code = (
        "import sys; sys.path.insert(0, 'bench'); import jax, jax.numpy as jnp; "
        "print(jax.__file__); print(float(jax.jit(lambda x: x * 2)(jnp.float32(1.5))))"
    )
    result = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    path, value = result.stdout.split()
    assert Path(path).parent.name == "jax" and Path(path).parent.parent != REPO / "bench"
    assert value == "3.0"


def test_bench_jax_runs_as_a_script():
    result = subprocess.run(
        [sys.executable, "bench/jax.py", "--help"], cwd=REPO, capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stderr
    assert "--quick" in result.stdout
