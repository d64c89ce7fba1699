"""StableHLO -> ONNX: the way back (``onnx_stablehlo.exporter``).

A StableHLO module (from JAX, from this project's frontend, from any producer) becomes an ONNX
model: one rule per StableHLO/CHLO op (``exporter/rules/``, a registry like the frontend's),
then clean-up with onnxscript's optimizer, and onnxruntime's type legalization. The public entry
point is :func:`onnx_stablehlo.to_onnx` (``onnx_stablehlo/export.py``), which also takes JAX
callables and ``jax.export.Exported`` artifacts; :func:`module_to_onnx` here takes a module.
"""

from onnx_stablehlo.exporter.module import DEFAULT_OPSET, ExportedGraph, module_to_onnx

__all__ = ["DEFAULT_OPSET", "ExportedGraph", "module_to_onnx"]
