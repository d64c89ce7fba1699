"""The hand-written JAX baseline for the zoo's CNNs: each layer as a JAX user writes it, channels-last.

``jax_cnn(path)`` reads an ONNX CNN's graph and weights and returns a ``jax.jit`` function of
its feeds that runs the same network the way a JAX model library writes one: activations NHWC,
convolution kernels HWIO (``jax.lax.conv_general_dilated``), ``jax.nn`` activations,
``jax.lax.reduce_window`` pools, the weights as constants. It is a benchmark baseline, not a
compiler: there is no shape polymorphism, no rewriting and no pass, so its time is what XLA makes
of the plain JAX program. Where ours is near it and it is far from onnxruntime, the gap is XLA
CPU's kernels for these layers, not our lowering; where it is faster than ours, the difference is
ours to find.

Layout: a 4-D value is kept channels-last from the first convolution on; an op that is not
layout-aware here (Reshape, Transpose, Flatten, Gather, ...) gets it back in ONNX's NCHW order
first, as a JAX user converting a torch model would at such a point. Weights and other
initializers are transposed once, in numpy, when the function is traced.

Ops: Conv, BatchNormalization, Relu, LeakyRelu, Clip, Sigmoid, HardSigmoid, HardSwish, Tanh,
Add, Sub, Mul, Div, Pow, Sqrt, Neg, GlobalAveragePool, AveragePool, MaxPool, LRN, Concat, Flatten,
Reshape, Transpose, Squeeze, Unsqueeze, Gemm, MatMul, Softmax, Dropout, Identity, Constant,
Shape, Gather, Cast, ConstantOfShape, Slice, Pad (constant mode), ReduceMean, Sum. ``UnsupportedOp`` names the first other op (the zoo table prints "-").
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import numpy_helper


class UnsupportedOp(Exception):
    """The graph holds an op the baseline does not write by hand."""


_ELEMENTWISE = {"Add": "add", "Sub": "subtract", "Mul": "multiply", "Div": "divide", "Pow": "power"}


class _Value:
    """An array and whether its dims are (N, H, W, C) standing for ONNX's (N, C, H, W)."""

    __slots__ = ("array", "channels_last")

    def __init__(self, array, channels_last: bool = False) -> None:
        self.array = array
        self.channels_last = channels_last


def _is_constant(array) -> bool:
    """A numpy value (known when tracing), not a jax array."""
    return isinstance(array, (np.ndarray, np.generic))


def _array_module(*operands):
    """numpy while every operand is a constant (shape arithmetic stays known), else jax.numpy."""
    import jax.numpy as jnp

    return np if all(_is_constant(a) for a in operands) else jnp


def _attrs(node: onnx.NodeProto) -> dict:
    return {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}


def jax_cnn(path: str | Path):
    """Returns ``(fn, input_names)``: ``fn(*feeds)`` (numpy in, numpy out, NCHW) and the graph's
    input names in order.

    Raises:
        UnsupportedOp: the graph holds an op outside the list in the module docstring, or no
            Conv (not a CNN); when tracing, a use of a listed op the baseline does not write
            (Pad in another mode, a broadcast it cannot lay out channels-last).
    """
    import jax
    import jax.numpy as jnp

    model = onnx.load(str(path))
    graph = model.graph
    for node in graph.node:
        if node.domain not in ("", "ai.onnx") or node.op_type not in _OPS:
            raise UnsupportedOp(f"{node.domain or 'ai.onnx'}::{node.op_type}")
    if not any(node.op_type == "Conv" for node in graph.node):
        raise UnsupportedOp("no Conv: not a CNN")
    opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 1)
    constants = {t.name: numpy_helper.to_array(t) for t in graph.initializer}
    inputs = [i.name for i in graph.input if i.name not in constants]
    outputs = [o.name for o in graph.output]

    def as_nchw(value: _Value):
        if value.channels_last:
            return jnp.transpose(value.array, (0, 3, 1, 2))
        return value.array

    def as_nhwc(value: _Value):
        """The value in the layout of a channels-last 4-D operand (broadcasts included)."""
        if value.channels_last:
            return value.array
        array = value.array
        if np.ndim(array) == 4:
            return _array_module(array).transpose(array, (0, 2, 3, 1))
        if np.ndim(array) == 3:  # (C, H, W) broadcast against (N, C, H, W)
            return _array_module(array).transpose(array, (1, 2, 0))
        if np.ndim(array) in (0, 1) and np.size(array) == 1:
            return array
        raise UnsupportedOp(f"broadcast of a rank-{np.ndim(array)} operand against a channels-last one")

    def spatial_padding(attrs: dict, kernel, strides, in_hw):
        auto_pad = attrs.get("auto_pad", b"NOTSET")
        auto_pad = auto_pad.decode() if isinstance(auto_pad, bytes) else auto_pad
        if auto_pad in ("SAME_UPPER", "SAME_LOWER"):
            pads = []
            for size, k, s, d in zip(in_hw, kernel, strides, attrs.get("dilations", [1] * len(kernel))):
                out = -(-size // s)
                total = max(0, (out - 1) * s + (k - 1) * d + 1 - size)
                low = total // 2 if auto_pad == "SAME_UPPER" else total - total // 2
                pads.append((low, total - low))
            return pads
        pads = attrs.get("pads", [0] * (2 * len(kernel)))
        half = len(pads) // 2
        return [(pads[i], pads[i + half]) for i in range(half)]

    def run(env: dict, node: onnx.NodeProto) -> list[_Value]:
        op, attrs = node.op_type, _attrs(node)
        args = [env[name] if name else None for name in node.input]
        if op in ("Identity", "Dropout"):
            return [args[0]]
        if op == "Constant":
            return [_Value(numpy_helper.to_array(attrs["value"]))]
        if op == "Conv":
            x = as_nhwc(args[0]) if np.ndim(args[0].array) == 4 else None
            if x is None:
                raise UnsupportedOp(f"Conv of rank {np.ndim(args[0].array)}")
            weight = np.asarray(args[1].array)  # (O, I/group, kH, kW) -> (kH, kW, I/group, O)
            kernel = weight.shape[2:]
            strides = attrs.get("strides", [1, 1])
            dilations = attrs.get("dilations", [1, 1])
            padding = spatial_padding(attrs, kernel, strides, x.shape[1:3])
            y = jax.lax.conv_general_dilated(
                x, np.transpose(weight, (2, 3, 1, 0)), strides, padding, rhs_dilation=dilations,
                dimension_numbers=("NHWC", "HWIO", "NHWC"), feature_group_count=attrs.get("group", 1),
            )
            if len(args) > 2 and args[2] is not None:
                y = y + np.asarray(args[2].array)
            return [_Value(y, True)]
        if op == "BatchNormalization":
            scale, bias, mean, var = (np.asarray(a.array) for a in args[1:5])
            factor = scale / np.sqrt(var + attrs.get("epsilon", 1e-5))
            shift = bias - mean * factor
            if args[0].channels_last:
                return [_Value(args[0].array * factor + shift, True)]
            shape = (1, -1) + (1,) * (np.ndim(args[0].array) - 2)
            return [_Value(args[0].array * factor.reshape(shape) + shift.reshape(shape))]
        unary = {
            "Relu": jax.nn.relu, "Sigmoid": jax.nn.sigmoid, "Tanh": jnp.tanh, "Sqrt": jnp.sqrt,
            "Neg": jnp.negative, "HardSwish": jax.nn.hard_swish,
            "LeakyRelu": lambda a: jax.nn.leaky_relu(a, attrs.get("alpha", 0.01)),
            "HardSigmoid": lambda a: jnp.clip(attrs.get("alpha", 0.2) * a + attrs.get("beta", 0.5), 0.0, 1.0),
        }
        if op in unary:
            return [_Value(unary[op](args[0].array), args[0].channels_last)]
        if op == "Clip":
            low = args[1].array if len(args) > 1 and args[1] is not None else attrs.get("min", -np.inf)
            high = args[2].array if len(args) > 2 and args[2] is not None else attrs.get("max", np.inf)
            return [_Value(jnp.clip(args[0].array, low, high), args[0].channels_last)]
        if op in _ELEMENTWISE:
            fn = getattr(_array_module(*(a.array for a in args)), _ELEMENTWISE[op])
            if any(a.channels_last for a in args):
                return [_Value(fn(as_nhwc(args[0]), as_nhwc(args[1])), True)]
            return [_Value(fn(args[0].array, args[1].array))]
        if op == "GlobalAveragePool":
            if args[0].channels_last:
                return [_Value(jnp.mean(args[0].array, axis=(1, 2), keepdims=True), True)]
            return [_Value(jnp.mean(args[0].array, axis=(2, 3), keepdims=True))]
        if op in ("MaxPool", "AveragePool"):
            x = as_nhwc(args[0])
            kernel = attrs["kernel_shape"]
            strides = attrs.get("strides", [1, 1])
            padding = spatial_padding(attrs, kernel, strides, x.shape[1:3])
            window, step = (1, *kernel, 1), (1, *strides, 1)
            full = [(0, 0), *padding, (0, 0)]
            ceil_extra = [(0, 0)] * 4  # past the padded input: never counted
            if attrs.get("ceil_mode", 0):
                for axis, size in enumerate(x.shape[1:3]):
                    low, high = full[axis + 1]
                    out = -(-(size + low + high - kernel[axis]) // strides[axis]) + 1
                    if (out - 1) * strides[axis] >= size + low:  # a last window starting in the padding is dropped
                        out -= 1
                    extra = max(0, (out - 1) * strides[axis] + kernel[axis] - (size + low + high))
                    full[axis + 1] = (low, high + extra)
                    ceil_extra[axis + 1] = (0, extra)
            if op == "MaxPool":
                return [_Value(jax.lax.reduce_window(x, -jnp.inf, jax.lax.max, window, step, full), True)]
            total = jax.lax.reduce_window(x, 0.0, jax.lax.add, window, step, full)
            if attrs.get("count_include_pad", 0):  # the explicit pads count, the ceil extension not
                padded = [x.shape[1 + i] + sum(padding[i]) for i in range(2)]
                ones = np.ones((1, *padded, 1), np.float32)
                count = jax.lax.reduce_window(ones, 0.0, jax.lax.add, window, step, ceil_extra)
            else:
                ones = np.ones((1, *x.shape[1:3], 1), np.float32)
                count = jax.lax.reduce_window(ones, 0.0, jax.lax.add, window, step, full)
            return [_Value(total / count, True)]
        if op == "LRN":
            x = as_nhwc(args[0])
            size = attrs["size"]
            squares = jax.lax.reduce_window(
                x * x, 0.0, jax.lax.add, (1, 1, 1, size), (1, 1, 1, 1),
                [(0, 0), (0, 0), (0, 0), ((size - 1) // 2, size - 1 - (size - 1) // 2)],
            )
            scale = attrs.get("bias", 1.0) + attrs.get("alpha", 1e-4) / size * squares
            return [_Value(x / scale ** attrs.get("beta", 0.75), True)]
        if op == "Concat":
            axis = attrs["axis"] % np.ndim(args[0].array)
            if axis == 1 and all(np.ndim(a.array) == 4 for a in args) and any(a.channels_last for a in args):
                return [_Value(jnp.concatenate([as_nhwc(a) for a in args], axis=3), True)]
            parts = [as_nchw(a) for a in args]
            return [_Value(_array_module(*parts).concatenate(parts, axis=axis))]
        if op == "Pad":
            mode = attrs.get("mode", b"constant")
            mode = mode.decode() if isinstance(mode, bytes) else mode
            pads = [int(v) for v in np.asarray(args[1].array).reshape(-1)]
            rank = len(pads) // 2
            fill = float(np.asarray(args[2].array).reshape(-1)[0]) if len(args) > 2 and args[2] is not None else 0.0
            if mode != "constant" or (len(args) > 3 and args[3] is not None):
                raise UnsupportedOp(f"Pad mode={mode} or with axes")
            widths = [(pads[i], pads[i + rank]) for i in range(rank)]
            if args[0].channels_last:
                widths = [widths[0], widths[2], widths[3], widths[1]]
            if any(low < 0 or high < 0 for low, high in widths):
                raise UnsupportedOp("Pad with negative pads")
            return [_Value(jnp.pad(args[0].array, widths, constant_values=fill), args[0].channels_last)]
        if op == "ReduceMean":
            axes = attrs.get("axes")
            if axes is None and len(args) > 1 and args[1] is not None:
                axes = [int(a) for a in np.asarray(args[1].array).reshape(-1)]
            keep = bool(attrs.get("keepdims", 1))
            if args[0].channels_last and sorted(a % 4 for a in axes) == [2, 3]:
                return [_Value(jnp.mean(args[0].array, axis=(1, 2), keepdims=keep), keep)]
            return [_Value(jnp.mean(as_nchw(args[0]), axis=tuple(axes), keepdims=keep))]
        if op == "Softmax":
            x = as_nchw(args[0])
            if opset >= 13:
                return [_Value(jax.nn.softmax(x, axis=attrs.get("axis", -1)))]
            axis = attrs.get("axis", 1) % x.ndim  # before 13: over the dims from axis on, flattened
            flat = jnp.reshape(x, (*x.shape[:axis], -1))
            return [_Value(jnp.reshape(jax.nn.softmax(flat, axis=-1), x.shape))]
        if op == "Sum":
            if any(a.channels_last for a in args):
                return [_Value(sum(as_nhwc(a) for a in args[1:]) + as_nhwc(args[0]), True)]
            return [_Value(sum(a.array for a in args[1:]) + args[0].array)]
        # Ops on the ONNX (NCHW) view of their operands.
        arrays = [as_nchw(a) if a is not None else None for a in args]
        if op == "Shape":
            return [_Value(np.array(np.shape(arrays[0]), np.int64))]
        if op == "ConstantOfShape":
            fill = numpy_helper.to_array(attrs["value"]) if "value" in attrs else np.zeros(1, np.float32)
            return [_Value(np.full([int(d) for d in np.asarray(arrays[0])], fill.reshape(-1)[0], fill.dtype))]
        if op == "Slice":
            starts, ends = (np.asarray(a).reshape(-1) for a in arrays[1:3])
            rank = np.ndim(arrays[0])
            axes = np.asarray(arrays[3]).reshape(-1) if len(arrays) > 3 and arrays[3] is not None else np.arange(len(starts))
            steps = np.asarray(arrays[4]).reshape(-1) if len(arrays) > 4 and arrays[4] is not None else np.ones(len(starts), np.int64)
            index = [slice(None)] * rank
            for start, end, axis, step in zip(starts, ends, axes, steps):
                index[axis] = slice(int(start), int(end), int(step))  # numpy clamps as ONNX does
            return [_Value(arrays[0][tuple(index)])]
        if op == "Cast":
            dtype = onnx.helper.tensor_dtype_to_np_dtype(attrs["to"])
            return [_Value(_array_module(arrays[0]).asarray(arrays[0]).astype(dtype))]
        if op == "Gather":
            module = _array_module(*arrays[:2])
            return [_Value(module.take(arrays[0], np.asarray(arrays[1]), axis=attrs.get("axis", 0)))]
        if op in ("Unsqueeze", "Squeeze"):
            axes = attrs.get("axes")
            if axes is None and len(arrays) > 1 and arrays[1] is not None:
                axes = [int(a) for a in np.asarray(arrays[1]).reshape(-1)]
            module = _array_module(arrays[0])
            if op == "Unsqueeze":
                return [_Value(module.expand_dims(arrays[0], tuple(axes)))]
            return [_Value(module.squeeze(arrays[0], tuple(axes) if axes else None))]
        if op == "Flatten":
            axis = attrs.get("axis", 1)
            shape = np.shape(arrays[0])
            return [_Value(jnp.reshape(arrays[0], (int(np.prod(shape[:axis])), -1)))]
        if op == "Reshape":
            shape = [int(s) for s in np.asarray(arrays[1]).reshape(-1)]
            shape = [np.shape(arrays[0])[i] if s == 0 else s for i, s in enumerate(shape)]
            return [_Value(_array_module(arrays[0]).reshape(arrays[0], shape))]
        if op == "Transpose":
            return [_Value(_array_module(arrays[0]).transpose(arrays[0], attrs.get("perm")))]
        if op == "Gemm":
            a = arrays[0].T if attrs.get("transA", 0) else arrays[0]
            b = np.asarray(arrays[1])
            b = b.T if attrs.get("transB", 0) else b
            y = attrs.get("alpha", 1.0) * (a @ b)
            if len(arrays) > 2 and arrays[2] is not None:
                y = y + attrs.get("beta", 1.0) * np.asarray(arrays[2])
            return [_Value(y)]
        if op == "MatMul":
            return [_Value(jnp.matmul(arrays[0], arrays[1]))]
        raise UnsupportedOp(op)

    def forward(*feeds):
        env = {name: _Value(array) for name, array in constants.items()}
        env.update({name: _Value(feed) for name, feed in zip(inputs, feeds)})
        for node in graph.node:
            for name, value in zip(node.output, run(env, node)):
                env[name] = value
        return tuple(as_nchw(env[name]) for name in outputs)

    compiled = jax.jit(forward)

    def call(*feeds):
        return [np.asarray(r) for r in compiled(*feeds)]

    return call, inputs


_OPS = frozenset({
    "Conv", "BatchNormalization", "Relu", "LeakyRelu", "Clip", "Sigmoid", "HardSigmoid", "HardSwish",
    "Tanh", "Add", "Sub", "Mul", "Div", "Pow", "Sqrt", "Neg", "GlobalAveragePool", "AveragePool",
    "MaxPool", "LRN", "Concat", "Flatten", "Reshape", "Transpose", "Squeeze", "Unsqueeze", "Gemm",
    "MatMul", "Softmax", "Dropout", "Identity", "Constant", "Shape", "Gather", "Cast",
    "ConstantOfShape", "Slice", "Pad", "ReduceMean", "Sum",
})
