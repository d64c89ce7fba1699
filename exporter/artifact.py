"""A compiled ONNX model's own StableHLO back to ONNX: the round trip ONNX -> StableHLO -> ONNX.

:func:`artifact_to_onnx` exports a frontend ``Artifact`` (``CompiledModel.lowered``: the module
``compile`` lowered and ran, its weights as arguments) with the original graph's input, output
and initializer names, so the result is fed and read exactly as the source model is. The node
suite's and the zoo's round-trip tests use it; so can a user checking the exporter on a model.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from onnx_stablehlo.errors import ExportError
from onnx_stablehlo.exporter.module import ExportedGraph, module_to_onnx

__all__ = ["RUNTIME_CHECKS_OUTPUT", "artifact_to_onnx", "best_artifact", "not_tensor_only"]

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.:\-]*")

RUNTIME_CHECKS_OUTPUT = "__runtime_checks"
"""The extra graph output holding the run-time check flags, when the module has checks (its
last result; ``Artifact.check_messages`` names each flag)."""


def artifact_to_onnx(artifact: Any, *, opset: int | None = None, optimize: bool = True,
                     names: str = "original") -> ExportedGraph:
    """Exports a frontend artifact (``CompiledModel.lowered``) to ONNX.

    Args:
        artifact: an ``onnx_stablehlo.runtime.artifact.Artifact`` whose inputs and outputs are
            tensors (one array per ONNX value).
        names: ``"original"`` keeps the source graph's names; ``"positional"`` names the
            inputs ``in_<k>`` and outputs ``out_<k>`` (for graphs whose names are not unique
            across inputs and outputs).

    Raises:
        ExportError: the artifact carries sequences/optionals (several arrays per value), or
            the module does not export. Hoisted weights (``@hoisted_weights``) are computed in
            the graph from the initializers.
    """
    reason = not_tensor_only(artifact)
    if reason is not None:
        raise ExportError(reason)
    n_checks = 1 if artifact.check_messages else 0
    inputs = list(artifact.input_names) + list(artifact.parameter_names)
    outputs = list(artifact.output_names) + ([RUNTIME_CHECKS_OUTPUT] if n_checks else [])
    if names == "positional":
        inputs = [f"in_{i}" for i in range(len(artifact.input_names))] + list(artifact.parameter_names)
        outputs = [f"out_{i}" for i in range(len(artifact.output_names))] + outputs[len(artifact.output_names):]
    initializers = {len(artifact.input_names) + i: np.asarray(artifact.parameters[name]())
                    for i, name in enumerate(artifact.parameter_names)}
    hoisted = ("hoisted_weights", artifact.hoisted_count) if artifact.hoisted_count else None
    input_dims = [_dims(shape) for _, shape in artifact.input_types]
    input_dims += [list(np.shape(initializers[len(input_dims) + i])) for i in range(len(artifact.parameter_names))]
    output_dims = [_dims(shape) for _, shape in artifact.output_types]
    return module_to_onnx(artifact.bytecode, input_names=inputs, output_names=outputs, initializers=initializers,
                          opset=opset, optimize=optimize, hoisted=hoisted, input_dims=input_dims,
                          output_dims=output_dims)


def not_tensor_only(artifact: Any) -> str | None:
    """Why ``artifact`` cannot be exported value for value (a sequence or optional graph value is
    several ``@main`` arguments or results), or ``None`` when every graph value is one tensor."""
    if len(artifact.input_types) != len(artifact.input_names):
        return "the model has sequence or optional inputs (several arrays per ONNX value)"
    if len(artifact.output_types) != len(artifact.output_names) + (1 if artifact.check_messages else 0):
        return "the model has sequence or optional outputs (several arrays per ONNX value)"
    return None


def _dims(shape: Any) -> list[int | str | None]:
    """Static dims as ints, a symbolic dim as its name (``batch``); an expression the frontend
    derived (``max(a, b)``, ``2*seq``) as an unnamed dim."""
    dims: list[int | str | None] = []
    for d in shape:
        if isinstance(d, (int, np.integer)):
            dims.append(int(d))
        else:
            text = str(d)
            dims.append(text if _NAME.fullmatch(text) else None)
    return dims


def best_artifact(compiled: Any) -> Any:
    """The artifact of ``compiled`` to export: the symbolic one (one ONNX file for every size,
    before the CPU-specific convolution rewrites of each specialization) when the model has one,
    else the module of the last specialization."""
    return compiled.artifact if compiled.artifact is not None else compiled.lowered
