"""``mlir-pipeline``: runs upstream MLIR/StableHLO passes (registered in jaxlib) as one step.

The one class for upstream passes: ``mlir-pipeline{pipeline="canonicalize,cse"}`` and every
bare upstream name in a pipeline (``cse``, ``func.func(stablehlo-canonicalize-dynamism)``, which
the pipeline parser turns into ``MlirPipelinePass(pipeline="cse")`` labelled ``cse``) run
through it.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import ClassVar

from jaxlib.mlir import ir, passmanager

from onnx_stablehlo.frontend import jaxlib_mlir
from onnx_stablehlo.passes.base import ModulePass, PassResult

__all__ = ["MlirPipelinePass", "parse_upstream"]


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
            try:
                parse_upstream(self.pipeline)
            except ValueError as exc:
                detail = " ".join(line.strip() for line in str(exc).splitlines() if line.strip())
                raise ValueError(f"option 'pipeline': {detail}") from None

    def run(self, module: ir.Module) -> PassResult:
        if not self.pipeline.strip():
            return PassResult(modified=False)
        manager = parse_upstream(self.pipeline, module.context)
        manager.enable_verifier(False)  # the pipeline verifies after every step itself
        manager.run(module.operation)
        return PassResult(modified=None)


def parse_upstream(pipeline: str, context: ir.Context | None = None) -> passmanager.PassManager:
    """jaxlib's ``PassManager`` for ``builtin.module(<pipeline>)``.

    Args:
        pipeline: upstream pass pipeline text (``canonicalize,cse``).
        context: the module's context; default: a context kept only for checking pipelines.

    Raises:
        ValueError: jaxlib's parser rejects the text (an unknown pass or option).
    """
    jaxlib_mlir.register_upstream_passes()
    return passmanager.PassManager.parse(f"builtin.module({pipeline})", context=context or _check_context())


@functools.cache
def _check_context() -> ir.Context:
    """A context used only to check upstream pipeline texts (lives as long as the process)."""
    return jaxlib_mlir.make_mlir_context()
