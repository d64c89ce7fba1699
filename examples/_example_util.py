"""What the exporter examples share: pytree leaf names and onnxruntime runs (the export itself
is ``onnx_stablehlo.to_onnx``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jax
import numpy as np
import onnx

__all__ = ["leaf_names", "ort_session", "ort_run"]


def leaf_names(tree: Any, prefix: str = "") -> list[str]:
    """``a/b/0``-style names of the leaves of ``tree``, in ``jax.tree`` order."""
    names = []
    for path, _ in jax.tree_util.tree_flatten_with_path(tree)[0]:
        parts = []
        for key in path:
            for attribute in ("key", "name", "idx"):
                if hasattr(key, attribute):
                    parts.append(str(getattr(key, attribute)))
                    break
            else:
                parts.append(str(key))
        names.append("/".join(filter(None, [prefix, *parts])) or "param")
    return names


def ort_session(model: onnx.ModelProto | str | Path):
    """An onnxruntime CPU session of a model or a file."""
    import onnxruntime

    source = model.SerializeToString() if isinstance(model, onnx.ModelProto) else str(model)
    return onnxruntime.InferenceSession(source, providers=["CPUExecutionProvider"])


def ort_run(model: Any, feeds: dict[str, Any]) -> list[np.ndarray]:
    """Every output of ``model`` (a ModelProto, path or session) on ``feeds`` (extra names ignored)."""
    session = model if hasattr(model, "get_inputs") else ort_session(model)
    names = {i.name for i in session.get_inputs()}
    return session.run(None, {k: np.asarray(v) for k, v in feeds.items() if k in names})
