"""``mlir-pipeline``: runs an upstream MLIR/StableHLO pass pipeline as one step."""

from __future__ import annotations

import dataclasses
from typing import ClassVar

from jaxlib.mlir import ir, passmanager

from onnx_stablehlo.passes.base import ModulePass, PassResult
from onnx_stablehlo.frontend import jaxlib_mlir

__all__ = ["MlirPipelinePass"]


@dataclasses.dataclass(frozen=True)
class MlirPipelinePass(ModulePass):
    """Runs upstream MLIR/StableHLO passes (registered in jaxlib) as one pipeline step.

    ``mlir-pipeline{pipeline="canonicalize,cse"}`` runs jaxlib's ``PassManager`` on
    ``builtin.module(canonicalize,cse)``. Bare upstream names in a pipeline do the same one
    pass at a time; this wrapper groups several under one name for timing and
    ``--print-ir-after=mlir-pipeline``. Whether the module changed is not known (reported as
    ``?``).
    """

    name: ClassVar[str] = "mlir-pipeline"

    pipeline: str = ""
    """The upstream pipeline, e.g. ``canonicalize,cse`` or ``func.func(cse)``."""

    def __post_init__(self) -> None:
        if self.pipeline.strip():
            jaxlib_mlir.register_upstream_passes()
            try:
                passmanager.PassManager.parse(f"builtin.module({self.pipeline})", context=_context())
            except ValueError as exc:
                detail = " ".join(line.strip() for line in str(exc).splitlines() if line.strip())
                raise ValueError(f"option 'pipeline': {detail}") from None

    def run(self, module: ir.Module) -> PassResult:
        if not self.pipeline.strip():
            return PassResult(modified=False)
        jaxlib_mlir.register_upstream_passes()
        manager = passmanager.PassManager.parse(f"builtin.module({self.pipeline})", context=module.context)
        manager.enable_verifier(False)  # the pipeline verifies after every step itself
        manager.run(module.operation)
        return PassResult(modified=None)


def _context() -> ir.Context:
    from onnx_stablehlo.passes.pipeline import _parse_context

    return _parse_context()
