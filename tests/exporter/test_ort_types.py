"""Dtype legalization for onnxruntime (exporter/ort_types.py): the kernel table is what the pinned
onnxruntime really has, and narrow types are computed exactly in wider ones."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import jax.numpy as jnp
import numpy as np
import pytest

from .util import check_roundtrip

ROOT = Path(__file__).resolve().parents[2]


def test_kernel_table_matches_the_installed_onnxruntime():
    result = subprocess.run([sys.executable, str(ROOT / "tools" / "probe_ort_kernels.py"), "--check"],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int16, np.uint16, np.uint32])
def test_narrow_integers_wrap_as_in_jax(dtype):
    rng = np.random.default_rng(3)
    info = np.iinfo(dtype)
    a = rng.integers(info.min, info.max, (5, 4), endpoint=True).astype(dtype)
    b = rng.integers(info.min, info.max, (5, 4), endpoint=True).astype(dtype)
    check_roundtrip(lambda x, y: (x * y, x + y, x - y, jnp.maximum(x, y), jnp.minimum(x, y), x < y,
                                  x // jnp.where(y == 0, 1, y)), a, b)
