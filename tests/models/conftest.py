"""Fixtures for the real-model tests: MiniLM exports built by ``tools/build_minilm.py``.

Exports are built once per cache directory (``$ONNX_STABLEHLO_CACHE`` or
``~/.cache/onnx-stablehlo``) and reused across sessions; compiled models are shared within a
session. Torch and friends are imported lazily, so this file loads without the ``models`` extra;
``test_minilm.py`` skips itself when the extra is missing.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
if str(REPO_ROOT / "tools") not in sys.path:
    sys.path.insert(0, str(REPO_ROOT / "tools"))

FLAVOUR_NAMES = ("legacy", "dynamo")
FLAVOUR_IDS = ("legacy-opset17", "dynamo-opset18")


@pytest.fixture(scope="session", params=FLAVOUR_NAMES, ids=FLAVOUR_IDS)
def minilm_flavour(request) -> str:
    """The exporter flavour: ``legacy`` (opset 17) or ``dynamo`` (opset 18)."""
    return request.param


@pytest.fixture(scope="session")
def minilm_path(minilm_flavour: str) -> Path:
    """Path of the cached MiniLM export of ``minilm_flavour`` (built on first use)."""
    import build_minilm

    return build_minilm.build_minilm(minilm_flavour)


@pytest.fixture(scope="session")
def compile_minilm() -> Callable:
    """Returns ``compile(path, weights=None)``, memoized for the session.

    Compiling MiniLM is the slow part of these tests, so each (export, weights mode) pair is
    compiled once and the compiled model (with its per-shape executables) is shared.
    ``weights=None`` leaves the argument out, so the API default is what gets tested.
    """
    import onnx_stablehlo

    compiled = {}

    def compile_cached(path: Path, weights: str | None = None):
        key = (str(path), weights)
        if key not in compiled:
            if weights is None:
                compiled[key] = onnx_stablehlo.compile(str(path), device="cpu")
            else:
                compiled[key] = onnx_stablehlo.compile(str(path), device="cpu", weights=weights)
        return compiled[key]

    return compile_cached
