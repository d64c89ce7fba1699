"""A StableHLO module (text, bytecode, portable artifact or ``ir.Module``) -> ``onnx.ModelProto``.

The steps: parse; :meth:`Converter.scan` (every op or type with no ONNX form, raised together);
convert ``@main`` rule by rule; serialize with onnx-ir; clean up with onnxscript's optimizer
(constant folding, dead code, the rewriter's fusions; ``optimize=False`` keeps the literal
translation); legalize dtypes for onnxruntime's kernels; then the onnx checker with full
(strict) shape inference.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

import onnx
import onnx.helper
import onnx_ir
from jaxlib.mlir import ir

from onnx_stablehlo.errors import ExportError
from onnx_stablehlo.exporter.converter import Converter, signature_for
from onnx_stablehlo.exporter.rules import default_registry
from onnx_stablehlo.exporter.skeleton import needs_skeleton, skeleton
from onnx_stablehlo.frontend.jaxlib_mlir import make_mlir_context

__all__ = ["DEFAULT_OPSET", "MIN_OPSET", "ExportedGraph", "module_to_onnx", "parse_module"]

DEFAULT_OPSET = 23
"""The default target opset: the newest whose every op we emit has a kernel in onnxruntime 1.32
(``tests/exporter/test_opset.py`` runs one model of each op at it)."""

MIN_OPSET = 18
"""The oldest target opset: BitwiseAnd/Or/Xor/Not and ReduceMax/Min with ``axes`` as an input
(the forms the rules emit) are opset 18."""

PRODUCER = "onnx-stablehlo"


@dataclasses.dataclass
class ExportedGraph:
    """The result of :func:`module_to_onnx`: the model and what the signature became.

    Attributes:
        model: the ONNX model (checked).
        input_names: graph input names, in ``@main`` argument order (initializers left out).
        output_names: graph output names, in ``@main`` result order.
    """

    model: onnx.ModelProto
    input_names: list[str]
    output_names: list[str]


def parse_module(source: str | bytes | ir.Module, context: ir.Context) -> ir.Module:
    """Parses StableHLO text, MLIR bytecode or a portable (VHLO) artifact in ``context``.

    Raises:
        ExportError: ``source`` is none of these.
    """
    if isinstance(source, ir.Module):
        return ir.Module.parse(str(source), context)
    if isinstance(source, bytes):
        import jax.extend.mlir

        try:
            return jax.extend.mlir.deserialize_portable_artifact(source, context=context)
        except Exception:  # noqa: BLE001 - not a portable artifact: try plain bytecode next
            pass
    try:
        return ir.Module.parse(source, context)
    except Exception as error:  # noqa: BLE001 - MLIR's diagnostics become one typed error
        lines = [line.strip() for line in str(error).strip().splitlines() if line.strip()]
        detail = " ".join(lines[:2]) if lines else type(error).__name__
        raise ExportError(f"not a StableHLO module: {detail[:300]}") from None


def module_to_onnx(
    source: str | bytes | ir.Module,
    *,
    input_names: Sequence[str] | None = None,
    output_names: Sequence[str] | None = None,
    input_dims: Sequence[Sequence[int | str | None]] | None = None,
    output_dims: Sequence[Sequence[int | str | None]] | None = None,
    initializers: Mapping[int, Any] | None = None,
    opset: int | None = None,
    optimize: bool = True,
    graph_name: str = "main",
    hoisted: tuple[str, int] | None = None,
) -> ExportedGraph:
    """Converts a StableHLO module's ``@main`` to an ONNX model.

    Args:
        source: StableHLO text, bytecode or a portable artifact (``jax.export``'s serialized
            module), or an ``ir.Module``.
        input_names: one name per ``@main`` argument (default ``input_<k>``).
        output_names: one name per result (default ``output_<k>``).
        input_dims: per argument, each dim as an int, a ``dim_param`` name or ``None``
            (default: the static dims, ``<input>_d<axis>`` for each ``?``).
        output_dims: per result, the same (default: static dims, ``None`` for ``?``).
        initializers: ``{argument index: numpy array}``: arguments that become initializers
            (weights) instead of graph inputs.
        opset: the target ONNX opset, ``MIN_OPSET`` to ``DEFAULT_OPSET`` (the default).
        optimize: run onnxscript's optimizer and rewriter on the result.
        hoisted: ``(function, count)`` when ``@main``'s last ``count`` arguments are
            ``@function`` of the initializers (this project's ``@hoisted_weights``): the graph
            computes them (onnxruntime folds that work when it loads the file).

    Returns:
        :class:`ExportedGraph`.

    Raises:
        UnsupportedExportError: ops or types with no ONNX form, every one listed.
        ExportError: an unparsable module, bad names, or a model the onnx checker rejects.
    """
    opset = DEFAULT_OPSET if opset is None else int(opset)
    if not MIN_OPSET <= opset <= max(DEFAULT_OPSET, onnx.defs.onnx_opset_version()):
        raise ExportError(f"opset {opset} is outside the supported range [{MIN_OPSET}, {onnx.defs.onnx_opset_version()}]")
    context = make_mlir_context()
    with context, ir.Location.unknown(context):
        module = parse_module(source, context)
        converter = Converter(module, default_registry(), opset)
        main = converter.main()
        signature = signature_for(main, input_names=input_names, output_names=output_names,
                                  input_dims=input_dims, output_dims=output_dims, initializers=initializers,
                                  hoisted=hoisted)
        converter.scan()
        graph = converter.convert(signature, graph_name=graph_name)
    model = onnx_ir.Model(graph, ir_version=ir_version_for(opset), producer_name=PRODUCER)
    from onnx_stablehlo.exporter.cleanup import clean_up

    keep = frozenset(signature.input_names[i] for i in signature.initializers)
    proto = clean_up(model, optimize=optimize, keep=keep)
    check_model(proto)
    kept_inputs = [n for i, n in enumerate(signature.input_names) if i not in signature.initializers]
    return ExportedGraph(proto, kept_inputs, signature.output_names)


def ir_version_for(opset: int) -> int:
    """The oldest IR version that carries ``opset`` (onnx's release table): opset 23 is IR 11,
    the first with float4 and float8e8m0 tensors; older opsets get IR 10 (onnxruntime's floor
    for opset 18-22 files, and what they need)."""
    candidates = [ir for _, ir, ai_onnx, *_ in onnx.helper.VERSION_TABLE if ai_onnx >= opset]
    return max(10, min(candidates)) if candidates else onnx.IR_VERSION


def check_model(proto: onnx.ModelProto) -> None:
    """The onnx checker with full (strict) shape inference.

    Raises:
        ExportError: the checker's first line (a bug in a rule: please report it).
    """
    try:
        if needs_skeleton(proto):
            proto = skeleton(proto)
        onnx.checker.check_model(proto, full_check=True)
    except (onnx.checker.ValidationError, onnx.shape_inference.InferenceError) as error:
        raise ExportError(f"the exported model does not pass the onnx checker: {str(error).splitlines()[0]}") from None
