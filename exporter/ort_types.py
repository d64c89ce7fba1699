"""Dtype legalization for onnxruntime: the ONNX spec allows (say) ``Add`` on int8, but
onnxruntime's CPU kernels exist only for some types. A node whose input type has no kernel is
computed in a wider type and cast back, where that gives the same bits:

- int8/int16/uint8/uint16 -> int32 (sums, products, quotients and comparisons of the narrow
  values are exact there; casting back wraps, as two's-complement StableHLO arithmetic does);
- uint32 -> int64 (the same argument); uint64 and int64 have no wider type: an error names them;
- float16/bfloat16 -> float32, rounded back to the narrow type after each op, which is how
  XLA's CPU backend computes narrow-float elementwise ops too;
- bool -> int32 for arithmetic and comparisons (the result cast back to bool where it is one);
- uint64 (no wider type) -> int64 for the ops whose bits do not depend on signedness (Where,
  Add, Sub, Mul, Equal, gathers, Concat, bitwise ops): a Cast between them keeps the bits.

Which (op, dtype) pairs have kernels is measured, not guessed: ``tools/probe_ort_kernels.py``
builds a one-node model per pair and asks onnxruntime for a session; the result is
:data:`ORT_KERNELS` in ``exporter/ort_kernels.py``, and ``tests/exporter/test_ort_types.py``
probes again and fails when an onnxruntime upgrade changes the table.
"""

from __future__ import annotations

import onnx
import onnx.helper
import onnx.shape_inference

from onnx_stablehlo.errors import ExportError
from onnx_stablehlo.exporter.ort_kernels import ORT_KERNELS, PROBED_INPUTS

__all__ = ["legalize_for_onnxruntime", "WIDER"]

TP = onnx.TensorProto
WIDER = {
    TP.INT8: TP.INT32, TP.INT16: TP.INT32, TP.UINT8: TP.INT32, TP.UINT16: TP.INT32, TP.UINT32: TP.INT64,
    TP.FLOAT16: TP.FLOAT, TP.BFLOAT16: TP.FLOAT, TP.BOOL: TP.INT32,
}
"""The type a value is computed in when its own has no kernel (see the module docstring)."""

REINTERPRET = {TP.UINT64: TP.INT64, TP.UINT32: TP.INT32, TP.UINT16: TP.INT16, TP.UINT8: TP.INT8}
"""Unsigned ints viewed as the signed type of their width (Cast between them keeps the bits)."""
BIT_EXACT = frozenset("Where Add Sub Mul Equal Gather GatherElements GatherND Concat BitwiseAnd BitwiseOr BitwiseXor "
                      "BitwiseNot".split())
"""Ops whose result bits on two's-complement ints do not depend on signedness: a uint64 Where
(no kernel) runs as an int64 Where on the same bits."""



def _types(model: onnx.ModelProto) -> dict[str, int]:
    from onnx_stablehlo.exporter.skeleton import needs_skeleton, skeleton

    inferred = onnx.shape_inference.infer_shapes(skeleton(model) if needs_skeleton(model) else model, data_prop=False)
    types: dict[str, int] = {}

    def visit(graph: onnx.GraphProto) -> None:
        for value in list(graph.input) + list(graph.output) + list(graph.value_info):
            if value.type.HasField("tensor_type"):
                types[value.name] = value.type.tensor_type.elem_type
        for init in graph.initializer:
            types[init.name] = init.data_type
        for node in graph.node:
            for attr in node.attribute:
                if attr.type == onnx.AttributeProto.GRAPH:
                    visit(attr.g)

    visit(inferred.graph)
    return types


def legalize_for_onnxruntime(model: onnx.ModelProto) -> onnx.ModelProto:
    """Returns ``model`` with each node onnxruntime has no kernel for computed in a wider type.

    Raises:
        ExportError: a node's type has no kernel and no wider type that computes it exactly.
    """
    types = _types(model)
    counter = [0]

    def fresh(base: str) -> str:
        counter[0] += 1
        return f"{base}__ort{counter[0]}"

    def visit(graph: onnx.GraphProto) -> None:
        nodes = []
        for node in graph.node:
            for attr in node.attribute:
                if attr.type == onnx.AttributeProto.GRAPH:
                    visit(attr.g)
            probed = PROBED_INPUTS.get(node.op_type)
            if probed is None or node.domain not in ("", "ai.onnx"):
                nodes.append(node)
                continue
            typed = [i for i in probed[0] if i < len(node.input) and node.input[i]]
            dtype = types.get(node.input[typed[0]]) if typed else None
            if dtype is None or dtype in ORT_KERNELS.get(node.op_type, ()):
                nodes.append(node)
                continue
            wide = WIDER.get(dtype)
            while wide is not None and wide not in ORT_KERNELS.get(node.op_type, ()):
                wide = WIDER.get(wide)
            if wide is None and node.op_type in BIT_EXACT and REINTERPRET.get(dtype) in ORT_KERNELS.get(node.op_type, ()):
                wide = REINTERPRET[dtype]
            if wide is None:
                raise ExportError(f"onnxruntime has no {node.op_type} kernel for "
                                  f"{onnx.helper.tensor_dtype_to_np_dtype(dtype)} (node {node.name!r}) and no wider "
                                  "type computes it exactly")
            new_inputs = list(node.input)
            for i in typed:
                cast_name = fresh(node.input[i])
                nodes.append(onnx.helper.make_node("Cast", [node.input[i]], [cast_name], to=wide,
                                                   name=fresh(node.name or node.op_type)))
                new_inputs[i] = cast_name
            del node.input[:]
            node.input.extend(new_inputs)
            outputs = list(node.output)
            new_outputs = [fresh(o) if i in probed[1] and o else o for i, o in enumerate(outputs)]
            del node.output[:]
            node.output.extend(new_outputs)
            nodes.append(node)
            for i in probed[1]:
                if i < len(outputs) and outputs[i]:
                    nodes.append(onnx.helper.make_node("Cast", [new_outputs[i]], [outputs[i]], to=dtype,
                                                       name=fresh(node.name or node.op_type)))
        del graph.node[:]
        graph.node.extend(nodes)

    visit(model.graph)
    return model
