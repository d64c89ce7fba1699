"""ONNX graph surgery for heads and losses; it lives in ``onnx_stablehlo.frontend.graph_edit``.

Kept so that ``onnx_stablehlo._compose`` imports keep working; new code imports the frontend
module (the runtime never imports the package face).
"""

from onnx_stablehlo.frontend.graph_edit import (
    FragmentBuilder,
    GraphEditError,
    attach,
    default_opset,
    to_proto,
    value_types,
)

__all__ = ["GraphEditError", "FragmentBuilder", "attach", "to_proto", "default_opset", "value_types"]
