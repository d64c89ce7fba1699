"""onnx-stablehlo: ONNX in, StableHLO out, run by PJRT (XLA) on CPU, GPU or TPU.

>>> import onnx_stablehlo                                   # doctest: +SKIP
>>> model = onnx_stablehlo.compile("model.onnx")             # doctest: +SKIP
>>> outputs = model.run({"input_ids": ids})                  # doctest: +SKIP
"""

import os

# XLA's C++ logging (PJRT client start-up lines at INFO) stays at warnings unless the user set
# it. It must be set before anything loads jaxlib's native libraries: the MLIR bindings the
# frontend imports do, and they fix the level then (runtime/pjrt.py sets it too, for use
# without this package's __init__).
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "1")

from typing import TYPE_CHECKING, Any  # noqa: E402

from onnx_stablehlo import errors  # noqa: E402
from onnx_stablehlo.api import compile, load, lower  # noqa: A004, E402
from onnx_stablehlo.runtime.bucketing import Bucketing  # noqa: E402
from onnx_stablehlo.runtime.model import CompiledModel  # noqa: E402

# Imported on first use (PEP 562): they import onnx_ir and the frontend, which a warm start
# (runtime/warm_start.py) runs without.
_LAZY = {
    "Trainer": "onnx_stablehlo.runtime.training",
    "ArrayBatches": "onnx_stablehlo.runtime.training",
    "ShapeInference": "onnx_stablehlo.shape_inference",
    "annotate_shapes": "onnx_stablehlo.shape_inference",
    "infer_shapes": "onnx_stablehlo.shape_inference",
    "to_onnx": "onnx_stablehlo.export",
}

if TYPE_CHECKING:
    from onnx_stablehlo.runtime.training import ArrayBatches, Trainer
    from onnx_stablehlo.export import to_onnx
    from onnx_stablehlo.shape_inference import ShapeInference, annotate_shapes, infer_shapes

__all__ = [
    "compile", "load", "lower", "infer_shapes", "annotate_shapes", "ShapeInference", "Bucketing",
    "CompiledModel", "Trainer", "ArrayBatches", "errors", "example_model_path",
    "to_onnx",
]
__version__ = "0.1.0"


def example_model_path() -> str:
    """Path of the small example model bundled in the package (a tiny transformer block)."""
    from importlib.resources import files

    return str(files("onnx_stablehlo") / "data" / "tiny_transformer.onnx")


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'onnx_stablehlo' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
