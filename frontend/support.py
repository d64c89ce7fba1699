"""What a model needs before lowering: known opsets, and a rule (or a function body) per node.

:func:`require_supported` runs before anything is emitted: it refuses opsets newer than the
installed onnx knows, expands ops that have no rule but a function body in their schema, and
raises one :class:`~onnx_stablehlo.errors.UnsupportedOpError` listing every node left without a
rule (the whole graph is scanned, subgraphs included).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import onnx
import onnx_ir

from onnx_stablehlo.errors import LoweringError, OnnxStableHLOError, UnsupportedOpError, UnsupportedOpsetError
from onnx_stablehlo.frontend.expand import expand_function_ops, has_function_body, node_opset
from onnx_stablehlo.frontend.loader import opset_imports
from onnx_stablehlo.frontend.node_names import describe_node
from onnx_stablehlo.frontend.registry import LoweringRegistry, normalize_domain

__all__ = ["find_unsupported", "check_supported", "check_opsets", "require_supported", "first_line"]


def first_line(exc: BaseException) -> str:
    """The first line of an exception's message (its type name when it has none)."""
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def find_unsupported(
    model: onnx_ir.Model, registry: LoweringRegistry
) -> dict[tuple[str, str, int], list[str]]:
    """Scans every node (subgraphs included) for ops without a lowering.

    Returns:
        ``{(domain, op_type, opset): [node names]}`` (``describe_node`` for an unnamed node);
        empty when everything is supported.
    """
    opsets = opset_imports(model)
    missing: dict[tuple[str, str, int], list[str]] = {}
    for index, node in enumerate(model.graph.all_nodes()):
        domain = normalize_domain(node.domain)
        opset = node_opset(node, opsets)
        if registry.resolve(domain, node.op_type, opset) is None:
            name = node.name or describe_node(node, index)
            missing.setdefault((domain, node.op_type, opset), []).append(name)
    return missing


def check_supported(model: onnx_ir.Model, registry: LoweringRegistry | None = None) -> None:
    """Raises for ops that cannot be lowered at any shape: no rule and no function body.

    Ops with a function body in their schema are left to ``import_model``, which expands
    them once shapes are known.

    Raises:
        UnsupportedOpError: listing every such ``(domain, op_type, opset)`` and its nodes.
    """
    if registry is None:
        from onnx_stablehlo.frontend.lowering import default_registry

        registry = default_registry()
    missing = {
        key: nodes for key, nodes in find_unsupported(model, registry).items() if not has_function_body(*key)
    }
    if missing:
        raise UnsupportedOpError(missing, {(d, o): registry.since_versions(d, o) for (d, o, _) in missing})


def check_opsets(model: onnx_ir.Model) -> None:
    """Refuses opsets of ONNX's own domains newer than the installed onnx knows.

    Raises:
        UnsupportedOpsetError: naming the domain, the model's opset and the newest known one.
    """
    known = onnx.defs.C.schema_version_map()  # {domain: (first, last)} of the installed onnx
    for domain, version in model.opset_imports.items():
        key = normalize_domain(domain)
        if key in known and int(version) > known[key][1]:
            raise UnsupportedOpsetError(
                f"the model imports opset {version} of domain '{domain or 'ai.onnx'}', but the installed onnx "
                f"{onnx.__version__} knows opsets up to {known[key][1]}; export the model at opset "
                f"{known[key][1]} or lower"
            )
        if key in known and int(version) < 1:
            raise UnsupportedOpsetError(f"the model imports opset {version} of domain '{domain or 'ai.onnx'}'")


def require_supported(
    model: onnx_ir.Model,
    registry: LoweringRegistry,
    input_shapes: Mapping[str, Sequence[int] | None] | None,
    constant_inputs: Mapping[str, np.ndarray] | None,
) -> onnx_ir.Model:
    """``model``, with ops that have no rule expanded into their function bodies.

    Raises:
        UnsupportedOpsetError: see :func:`check_opsets`.
        UnsupportedOpError: nodes without a rule or a function body (all of them are listed).
        LoweringError: a node's opset is not an integer, or an expansion failed.
    """
    check_opsets(model)
    try:
        missing = find_unsupported(model, registry)
    except ValueError as exc:  # a node's opset metadata that is not an integer
        raise LoweringError(f"cannot resolve the nodes' opsets: {first_line(exc)}") from exc
    if missing:
        # Ops without a rule whose schema defines a function body are expanded into it.
        known_shapes = {n: tuple(s) for n, s in (input_shapes or {}).items() if s is not None}
        known_shapes.update({n: np.shape(a) for n, a in (constant_inputs or {}).items()})
        try:
            expanded = expand_function_ops(model, registry, known_shapes)
        except OnnxStableHLOError:
            raise
        except Exception as exc:  # onnx-ir refused to serialize the model, or a body is malformed
            raise LoweringError(f"expanding function bodies failed: {type(exc).__name__}: {first_line(exc)}") from exc
        if expanded is not None:
            model = expanded
            missing = find_unsupported(model, registry)
    if missing:
        known = {(d, o): registry.since_versions(d, o) for (d, o, _) in missing}
        raise UnsupportedOpError(missing, known)
    return model
