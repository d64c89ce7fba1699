"""Losses appended to a model as ONNX nodes, for the ``Trainer``.

They live in ``onnx_stablehlo.runtime.losses`` (the runtime never imports the package face);
this module is their public name.

>>> from onnx_stablehlo.losses import add_loss                              # doctest: +SKIP
"""

from onnx_stablehlo.runtime.losses import (
    LOSSES,
    Accuracy,
    GraphEditError,
    LossSpec,
    ModelWithLoss,
    accuracy_of,
    add_loss,
)

__all__ = ["LOSSES", "LossSpec", "ModelWithLoss", "add_loss", "accuracy_of", "GraphEditError", "Accuracy"]
