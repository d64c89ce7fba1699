"""Location of the on-disk cache for models built by the tools in this folder.

The cache holds artefacts that are slow to produce (for example the MiniLM ONNX exports of
``tools/build_minilm.py``) so tests, examples and benchmarks share one copy.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
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


def write_atomic(target: Path, write: Callable[[Path], None]) -> Path:
    """Runs ``write(tmp)`` on a temporary file beside ``target`` and renames it to ``target``.

    A failed or killed build leaves no partial model: the temporary file (and a ``.data`` side
    file written next to it) is removed, and ``target`` appears only when complete.
    """
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp.onnx", dir=target.parent)
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        write(tmp)
        os.chmod(tmp, 0o644)
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)
        Path(f"{tmp}.data").unlink(missing_ok=True)
    return target
