"""A weightless copy of a model for the checker and shape inference, which cannot take a
protobuf over 2 GiB whole."""

from __future__ import annotations

import onnx
import onnx.helper

from onnx_stablehlo.frontend.loader import proto_tensors

__all__ = ["skeleton", "needs_skeleton", "tensor_bytes"]


def _tensor_size(tensor: onnx.TensorProto) -> int:
    # ByteSize() itself fails on a message over 2 GiB: raw tensors are counted by their data.
    return len(tensor.raw_data) + 64 if tensor.HasField("raw_data") else tensor.ByteSize()


def tensor_bytes(proto: onnx.ModelProto) -> int:
    """An upper-bound estimate of the serialized size of ``proto``'s tensors (initializers and
    Constant values, subgraphs included), safe for models over 2 GiB."""
    return sum(_tensor_size(t) for t in proto_tensors(proto.graph))


def needs_skeleton(proto: onnx.ModelProto) -> bool:
    """Whether ``proto`` is too large for ``onnx.checker``/``onnx.shape_inference`` in memory."""
    return tensor_bytes(proto) >= onnx.checker.MAXIMUM_PROTOBUF - (64 << 20)


def skeleton(proto: onnx.ModelProto) -> onnx.ModelProto:
    """``proto`` with its large initializers turned into graph inputs of the same type and shape:
    a model over protobuf's 2 GiB cannot be handed to the checker whole, and the checker's
    verdict on the graph does not depend on the weights' values."""
    skeleton = onnx.ModelProto(ir_version=proto.ir_version, opset_import=proto.opset_import,
                               producer_name=proto.producer_name)
    skeleton.graph.name = proto.graph.name
    skeleton.graph.node.extend(proto.graph.node)
    skeleton.graph.input.extend(proto.graph.input)
    skeleton.graph.output.extend(proto.graph.output)
    skeleton.graph.value_info.extend(proto.graph.value_info)
    for init in proto.graph.initializer:
        if _tensor_size(init) > 1 << 20:
            skeleton.graph.input.append(onnx.helper.make_tensor_value_info(init.name, init.data_type, list(init.dims)))
        else:
            skeleton.graph.initializer.append(init)
    return skeleton


