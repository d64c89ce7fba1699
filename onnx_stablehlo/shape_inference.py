"""Symbolic shape inference of an ONNX model: the dtype and shape of every value.

``infer_shapes`` runs the lowering once with the model's symbolic dims kept as symbols (the
lowering rules are the shape rules: one source of truth for what each op produces) and returns
what it found, without compiling anything. Dims are ints or
:class:`~onnx_stablehlo.frontend.shapes.SymbolicDim` expressions (``2*seq``, ``floor((h + 31) / 32)``);
equalities implied by broadcasting merge symbols (``ShapeInference.equalities``).
``annotate_shapes`` writes the result into the model's ``value_info``, with each symbolic dim as a
``dim_param`` string, so Netron or any ONNX tool shows it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from pathlib import Path

import onnx

from onnx_stablehlo.frontend import atomic_io
from onnx_stablehlo.frontend.dtypes import DataType
from onnx_stablehlo.frontend.graph_edit import to_proto
from onnx_stablehlo.frontend.loader import ModelSource
from onnx_stablehlo.frontend.shapes import DimEquality, Shape, SymbolicDim

__all__ = ["ShapeInference", "infer_shapes", "annotate_shapes"]


@dataclasses.dataclass(frozen=True)
class ShapeInference:
    """Inferred dtypes and symbolic shapes.

    Attributes:
        values: ONNX value name -> ``(dtype, shape)`` for every tensor value of the main graph
            (inputs, node outputs; weights are left out), in graph order.
        equalities: the dim equalities that broadcasts implied (merged symbols).
    """

    values: dict[str, tuple[DataType, Shape]]
    equalities: list[DimEquality]

    def format(self) -> str:
        """One line per value, ``name: float[batch, 2*seq, 8]``, then the merged symbols."""
        lines = [f"{name}: {dtype.name.lower()}[{', '.join(str(d) for d in shape)}]"
                 for name, (dtype, shape) in self.values.items()]
        lines += [f"assumed: {e}" for e in self.equalities]
        return "\n".join(lines)


def infer_shapes(
    model: ModelSource,
    input_shapes: Mapping[str, Sequence[int]] | None = None,
    *,
    dims: Mapping[str, int] | None = None,
    check: bool = True,
) -> ShapeInference:
    """Infers the dtype and (symbolic) shape of every value of an ONNX model.

    Args:
        model: path, bytes, ``onnx.ModelProto`` or ``onnx_ir.Model``.
        input_shapes: static shapes for some inputs (their symbols become those sizes).
        dims: sizes of named symbolic dims (``{"batch": 1}``).
        check: run the onnx checker first.

    Returns:
        A :class:`ShapeInference`.

    Raises:
        The errors of :func:`onnx_stablehlo.lower` (an unsupported op, a shape error naming the
        node, or a rule that needs static shapes: give ``input_shapes`` or ``dims`` then).
    """
    from onnx_stablehlo.api import lower

    lowered = lower(model, input_shapes, dims=dims, check=check)
    return ShapeInference(dict(lowered.value_shapes), list(lowered.dim_equalities))


def annotate_shapes(
    model: ModelSource,
    output: str | Path | None = None,
    *,
    input_shapes: Mapping[str, Sequence[int]] | None = None,
    dims: Mapping[str, int] | None = None,
) -> onnx.ModelProto:
    """The model with every inferred shape in its ``value_info`` (symbolic dims as ``dim_param``).

    Existing ``value_info`` entries of inferred values are replaced; graph inputs and outputs keep
    their declared types except that unknown output dims get the inferred ones.

    Args:
        model: path, bytes, ``onnx.ModelProto`` or ``onnx_ir.Model``.
        output: when given, the annotated model is written there (atomically); its folder must
            exist (it is not created).
        input_shapes, dims: as for :func:`infer_shapes`.

    Returns:
        The annotated ``onnx.ModelProto`` (a copy; ``model`` is not modified).

    Raises:
        ModelLoadError: ``model`` is missing, unreadable or not a model (or not a path, bytes,
            ``onnx.ModelProto`` or ``onnx_ir.Model``).
        InvalidOptionError: ``output`` is not a ``str`` or ``os.PathLike``.
        WriteError: ``output`` is a folder, its folder does not exist, or it cannot be written
            (checked before the shapes are inferred).
        The errors of :func:`infer_shapes`.
    """
    target = None if output is None else atomic_io.output_path(output, "annotate_shapes", "output")
    proto = to_proto(model)  # a copy
    inferred = infer_shapes(proto, input_shapes, dims=dims)
    graph = proto.graph
    inputs = {v.name for v in graph.input} | {t.name for t in graph.initializer}
    outputs = {v.name: v for v in graph.output}
    kept = [v for v in graph.value_info if v.name not in inferred.values]
    del graph.value_info[:]
    graph.value_info.extend(kept)
    for name, (dtype, shape) in inferred.values.items():
        if name in inputs:
            continue
        info = onnx.helper.make_tensor_value_info(name, int(dtype), [_dim_proto(d) for d in shape])
        if name in outputs:
            declared = outputs[name].type.tensor_type
            if not declared.HasField("shape") or any(not d.HasField("dim_value") for d in declared.shape.dim):
                outputs[name].type.CopyFrom(info.type)
            continue
        graph.value_info.append(info)
    if target is not None:
        atomic_io.atomic_write_bytes(target, proto.SerializeToString())
    return proto


def _dim_proto(dim) -> int | str:
    return str(dim) if isinstance(dim, SymbolicDim) else int(dim)

