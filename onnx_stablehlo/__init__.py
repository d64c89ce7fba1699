"""onnx-stablehlo: ONNX in, StableHLO out, run by PJRT (XLA) on CPU, GPU or TPU.

>>> import onnx_stablehlo                                   # doctest: +SKIP
>>> model = onnx_stablehlo.compile("model.onnx")             # doctest: +SKIP
>>> outputs = model.run({"input_ids": ids})                  # doctest: +SKIP
"""

from onnx_stablehlo import errors
from onnx_stablehlo.api import compile, load, lower  # noqa: A004
from onnx_stablehlo.runtime.bucketing import Bucketing
from onnx_stablehlo.runtime.model import CompiledModel
from onnx_stablehlo.shape_inference import ShapeInference, annotate_shapes, infer_shapes

__all__ = [
    "compile", "load", "lower", "infer_shapes", "annotate_shapes", "ShapeInference", "Bucketing",
    "CompiledModel", "errors", "example_model_path",
]
__version__ = "0.1.0"


def example_model_path() -> str:
    """Path of the small example model bundled in the package (a tiny transformer block)."""
    from importlib.resources import files

    return str(files("onnx_stablehlo") / "data" / "tiny_transformer.onnx")
