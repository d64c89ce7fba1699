"""Location of the on-disk cache for models built by the tools in this folder.

The cache holds artefacts that are slow to produce (for example the MiniLM ONNX exports of
``tools/build_minilm.py``) so tests, examples and benchmarks share one copy.
"""

from __future__ import annotations

import os
from pathlib import Path

CACHE_ENV_VAR = "ONNX_STABLEHLO_CACHE"
"""Environment variable that overrides the default cache directory."""


def cache_dir() -> Path:
    """Returns the cache directory, creating it if needed.

    The directory is ``$ONNX_STABLEHLO_CACHE`` when that variable is set and non-empty,
    otherwise ``~/.cache/onnx-stablehlo``.

    Returns:
        The absolute path of an existing directory.
    """
    override = os.environ.get(CACHE_ENV_VAR)
    path = Path(override) if override else Path.home() / ".cache" / "onnx-stablehlo"
    path = path.expanduser().resolve()
    path.mkdir(parents=True, exist_ok=True)
    return path
