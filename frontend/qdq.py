"""Fuses QDQ groups into the integer ops onnxruntime runs them as (an ONNX-level rewrite).

A statically quantized model in QDQ format (``quantize_static``'s default) wraps float ops in
DequantizeLinear/QuantizeLinear. The spec computes such a group in float; onnxruntime fuses it
into an int8 kernel (exact integer sums, one rescale), whose roundings differ: on MobileNetV2
the float evaluation's logits are at row cosine 0.997 from onnxruntime's. Rewriting the groups
into the QOperator ops gives onnxruntime's results:

    Q(Conv(DQ(x), DQ(w)[, DQ(b)]))  -> QLinearConv(x, sx, zx, w, sw, zw, sy, zy[, b])
    Q(Add(DQ(a), DQ(b)))            -> com.microsoft.QLinearAdd(a, sa, za, b, sb, zb, sy, zy)

Constraints: the float op's output feeds only the QuantizeLinear; x/a/b are uint8 or int8
with per-tensor scales and zero points given; w is int8/uint8 with a per-tensor scale or one
per output channel (``axis=0``); b is int32 with zero point 0 (omitted or zero). Anything else
is left as it is. DequantizeLinear nodes left without users are removed.
"""

from __future__ import annotations

import numpy as np
import onnx_ir as ir

__all__ = ["fuse_qdq"]

_QUANTIZED = (ir.DataType.UINT8, ir.DataType.INT8)


def _is_standard(node: ir.Node | None, op_type: str) -> bool:
    return node is not None and node.op_type == op_type and node.domain in ("", "ai.onnx")


def _input(node: ir.Node, index: int) -> ir.Value | None:
    return node.inputs[index] if index < len(node.inputs) else None


def _size(value: ir.Value | None) -> int | None:
    if value is None or value.shape is None:
        return None
    dims = list(value.shape)
    if not all(isinstance(d, int) for d in dims):
        return None
    return int(np.prod(dims, dtype=np.int64))


def _dequantize(value: ir.Value | None, *, weight: bool = False) -> ir.Node | None:
    """The DequantizeLinear producing ``value`` when it fits the constraints (see module doc)."""
    node = value.producer() if value is not None else None
    if not _is_standard(node, "DequantizeLinear") or len(node.inputs) < 3 or node.inputs[2] is None:
        return None
    dtype = node.inputs[0].dtype or node.inputs[2].dtype  # a Q output may carry no type yet
    if dtype not in _QUANTIZED or node.attributes.get("block_size") is not None:
        return None
    scale_size = _size(node.inputs[1])
    if scale_size is None:
        return None
    if scale_size != 1:
        axis = node.attributes.get("axis")
        if not weight or axis is None or axis.as_int() != 0:
            return None
    return node


def _quantize(node: ir.Node) -> bool:
    if len(node.inputs) < 3 or node.inputs[2] is None or node.inputs[2].dtype not in _QUANTIZED:
        return False
    if any(name in node.attributes for name in ("block_size", "output_dtype", "precision")):
        return False
    return _size(node.inputs[1]) == 1


def _zero_bias(node: ir.Node) -> bool:
    if node.inputs[0].dtype != ir.DataType.INT32:
        return False
    zero = _input(node, 2)
    if zero is None:
        return True
    tensor = ir.convenience.get_const_tensor(zero)
    return tensor is not None and not np.any(tensor.numpy())


def _replace(graph: ir.Graph, quantize: ir.Node, float_node: ir.Node, new: ir.Node) -> None:
    graph.insert_before(quantize, new)
    old_output, new_output = quantize.outputs[0], new.outputs[0]
    name = old_output.name
    new_output.type, new_output.shape = old_output.type, old_output.shape
    ir.convenience.replace_all_uses_with(old_output, new_output, replace_graph_outputs=True)
    graph.remove(quantize, safe=True)
    graph.remove(float_node, safe=True)
    new_output.name = name


def _fuse_conv(graph: ir.Graph, quantize: ir.Node, conv: ir.Node) -> ir.Node | None:
    x = _dequantize(_input(conv, 0))
    w = _dequantize(_input(conv, 1), weight=True)
    if x is None or w is None:
        return None
    bias = _input(conv, 2)
    b = None
    if bias is not None:
        b = bias.producer()
        if not _is_standard(b, "DequantizeLinear") or not _zero_bias(b):
            return None
    inputs = [*x.inputs[:3], *w.inputs[:3], quantize.inputs[1], quantize.inputs[2]]
    if b is not None:
        inputs.append(b.inputs[0])
    return ir.Node("", "QLinearConv", inputs, attributes=list(conv.attributes.values()), name=f"{conv.name or 'Conv'}_fused_qdq")


def _fuse_add(graph: ir.Graph, quantize: ir.Node, add: ir.Node) -> ir.Node | None:
    a, b = _dequantize(_input(add, 0)), _dequantize(_input(add, 1))
    if a is None or b is None:
        return None
    inputs = [*a.inputs[:3], *b.inputs[:3], quantize.inputs[1], quantize.inputs[2]]
    return ir.Node("com.microsoft", "QLinearAdd", inputs, name=f"{add.name or 'Add'}_fused_qdq")


def fuse_qdq(model: ir.Model) -> int:
    """Rewrites the QDQ groups of ``model``'s main graph in place; returns how many it fused."""
    graph = model.graph
    fused = 0
    candidates = [n for n in graph if _is_standard(n, "QuantizeLinear")]
    dequantizers = set()
    for quantize in candidates:
        if not _quantize(quantize):
            continue
        source = quantize.inputs[0]
        producer = source.producer() if source is not None else None
        if producer is None or len(source.uses()) != 1 or source in graph.outputs:
            continue
        if _is_standard(producer, "Conv"):
            new = _fuse_conv(graph, quantize, producer)
        elif _is_standard(producer, "Add"):
            new = _fuse_add(graph, quantize, producer)
        else:
            continue
        if new is None:
            continue
        dequantizers.update(v.producer() for v in producer.inputs if v is not None and v.producer() is not None)
        _replace(graph, quantize, producer, new)
        if new.domain == "com.microsoft":
            model.opset_imports.setdefault("com.microsoft", 1)
        fused += 1
    for node in dequantizers:
        if _is_standard(node, "DequantizeLinear") and not any(o.uses() for o in node.outputs) and not any(
            o in graph.outputs for o in node.outputs
        ):
            graph.remove(node, safe=True)
    return fused
