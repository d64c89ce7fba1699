"""``strip-debug-info``: drops source locations, optionally keeping ONNX node names."""

from __future__ import annotations

import dataclasses
from typing import ClassVar

from jaxlib.mlir import ir

from onnx_stablehlo.passes.base import ModulePass, PassResult

__all__ = ["StripDebugInfoPass", "node_names_of"]


def node_names_of(location: ir.Location) -> list[str]:
    """The names of the ``NameLoc``s in ``location`` (outermost first, fused ones in order)."""
    if isinstance(location, ir.NameLoc):
        return [location.name_str]
    if isinstance(location, ir.FusedLoc):
        names: list[str] = []
        for inner in location.locations:
            names.extend(node_names_of(inner))
        return names
    return []


@dataclasses.dataclass(frozen=True)
class StripDebugInfoPass(ModulePass):
    """Replaces every location by ``loc(unknown)``, or by the ONNX node name alone.

    Rewrites (every op, block argument and function):

    - ``loc("node"("file.py":3:4)) -> loc(unknown)``; with ``keep-names=true`` ->
      ``loc("node")``
    - ``loc(fused["a", "b", "x.py":1:1]) -> loc(unknown)``; with ``keep-names=true`` ->
      ``loc(fused["a", "b"])`` (one name: ``loc("a")``)
    - file/line/column and call-site locations -> ``loc(unknown)``

    The importer names each op after its ONNX node (``loc("<node name>")``), which is what
    diagnostics and ``--debug-info`` show; ``keep-names`` keeps those and drops the rest.
    """

    name: ClassVar[str] = "strip-debug-info"

    keep_names: bool = False
    """Keep NameLoc names (ONNX node names) and drop only their child and file locations."""

    def run(self, module: ir.Module) -> PassResult:
        changed = 0
        context = module.context
        with context:
            unknown = ir.Location.unknown()

            def stripped(location: ir.Location) -> ir.Location:
                if not self.keep_names:
                    return unknown
                names = node_names_of(location)
                if not names:
                    return unknown
                if len(names) == 1:
                    return ir.Location.name(names[0])
                return ir.Location.fused([ir.Location.name(n) for n in names])

            def visit(op: ir.Operation) -> ir.WalkResult:
                nonlocal changed
                new = stripped(op.location)
                if str(new) != str(op.location):
                    op.location = new
                    changed += 1
                for region in op.regions:
                    for block in region.blocks:
                        for argument in block.arguments:
                            new_arg = stripped(argument.location)
                            if str(new_arg) != str(argument.location):
                                argument.set_location(new_arg)
                                changed += 1
                return ir.WalkResult.ADVANCE

            module.operation.walk(visit)
        return PassResult(modified=changed > 0, statistics={"locations replaced": changed} if changed else {})
