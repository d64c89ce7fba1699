"""Lowering rules: onnxruntime's ``com.microsoft.nchwc`` ops (the CPU layout transformer's output).

ORT's graph optimizer at level 99 (``ORT_ENABLE_ALL``, ``optimize_model(opt_level=99)``) rewrites
2-D float convolutions and the pools, Add/Sum, Concat and activations around them into MLAS's
blocked ``NCHWc`` layout: a tensor ``[N, C, H, W]`` is stored as ``[N, Cp/B, H, W, B]``, where
``B`` is MLAS's block size (8 with AVX/AVX2, 16 with AVX-512F) and ``Cp`` is ``C`` rounded up to
``B`` with zero channels. The ONNX shape of such a value stays 4-D ``[N, Cp, H, W]``; only its
memory order is blocked.

Here a blocked value is held in its *logical* order, ``[N, Cp, H, W]`` with the padding channels
last, so standard ops the transformer leaves between nchwc ops (Add, Relu, Concat along
channels, a Reshape to ``[N, Cp/B, H, W, B]`` and back around an Add) compute the same values,
and XLA picks its own layouts:

- ``ReorderInput(x)`` -> ``x`` (NHWC transposed first), zero channels appended up to ``Cp``;
- ``ReorderOutput(x)`` -> ``x[:, :channels]`` (then NHWC with ``channels_last``);
- ``Conv(x, w, b, sum)`` -> Conv with ``w`` un-blocked (a reshape and a transpose of the
  weight, which weight hoisting computes once), ``+ sum``, then the fused activation;
- ``MaxPool``, ``AveragePool``, ``GlobalMaxPool``, ``GlobalAveragePool`` -> the ai.onnx rules;
- ``Upsample`` (integer scales) -> a repeat (nearest) or two interpolation matrices (linear).

**Block size.** The file holds it only implicitly: the filters are stored blocked and ``Cp``
depends on it. Each rule reads it from its node's shapes when they decide it (a channel count
padded to 8 but not 16, a filter whose output channels are a multiple of 8 only, a convolution
whose layout is only valid for one size); when both sizes fit the shapes (ViT's patch embedding:
3 input and 768 output channels), it follows onnxruntime, which runs the file with MLAS's block
size of the CPU it runs on (and warns that a level-99 file is only valid on a machine like the
one that wrote it): :func:`host_block_size`.

Spec: onnxruntime ``onnxruntime/contrib_ops/cpu/nchwc_ops.cc`` (kernels),
``onnxruntime/core/optimizer/nchwc_transformer.cc`` (which layouts it writes) and MLAS
``reorder.cpp`` (the ``OIHWBo`` and ``OIHWBiBo`` filter layouts), read for semantics.
"""

from __future__ import annotations

import functools
import platform
from collections.abc import Sequence

import numpy as np
import onnx
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import stablehlo

from onnx_stablehlo.errors import ShapeError, UnsupportedAttributeError
from onnx_stablehlo.frontend import builders
from onnx_stablehlo.frontend.context import LoweredValue, LoweringContext, OnnxNode
from onnx_stablehlo.frontend.dtypes import DataType
from onnx_stablehlo.frontend.registry import default_rule, lowering

NCHWC = "com.microsoft.nchwc"

BLOCK_SIZES = (8, 16)
"""The block sizes MLAS uses on x86-64 (8: SSE/AVX/AVX2; 16: AVX-512F)."""

_ACTIVATIONS = "Relu, LeakyRelu, Tanh, Sigmoid, Clip, HardSigmoid"


@functools.cache
def host_block_size() -> int | None:
    """MLAS's NCHWc block size on this machine: 16 with AVX-512F, 8 on other x86-64, else None.

    MLAS (``platform.cpp``) sets 16 when the CPU and the OS support AVX-512F (Linux lists
    ``avx512f`` in ``/proc/cpuinfo`` only then) and 8 on every other x86-64 CPU; it writes
    no NCHWc ops elsewhere.
    """
    if platform.machine().lower() not in ("x86_64", "amd64"):
        return None
    try:
        with open("/proc/cpuinfo", encoding="ascii", errors="replace") as info:
            for line in info:
                if line.startswith("flags"):
                    return 16 if "avx512f" in line.split() else 8
    except OSError:
        pass
    return 8


def _choose_block(ctx: LoweringContext, candidates: Sequence[int], what: str) -> int:
    """The block size among ``candidates`` (those the node's shapes allow)."""
    if len(candidates) == 1:
        return candidates[0]
    if not candidates:
        raise ctx.error(f"{what} fits no NCHWc block size ({', '.join(map(str, BLOCK_SIZES))})", ShapeError)
    host = host_block_size()
    if host in candidates:
        return host
    raise ctx.error(
        f"{what} fits NCHWc block sizes {list(candidates)} and this machine has none MLAS would use; "
        "rewrite the model with ORT at opt level 2 (no layout transformation)",
        ShapeError,
    )


def _float32_input(ctx: LoweringContext, index: int = 0) -> ir.Value:
    x = ctx.input(index)
    if builders.dtype_of(x) != DataType.FLOAT:
        raise ctx.unsupported_dtype(builders.dtype_of(x), "float32 (onnxruntime's NCHWc kernels)")
    return x


def _rank4(ctx: LoweringContext, index: int = 0) -> tuple:
    shape = tuple(ctx.input_shape(index))
    if len(shape) != 4:
        raise ctx.error(f"input '{ctx.node.input_names[index]}' must be 4-D, got {list(shape)}", ShapeError)
    return shape


def _standard_view(node: OnnxNode, since: int, op_type: str | None = None) -> OnnxNode:
    """``node`` read as the ai.onnx op ``op_type`` (default: of the same name) at revision
    ``since`` (its attribute defaults)."""
    view = OnnxNode(node.ir_node, 0, node.opset, since)
    view.name, view.location_name = node.name, node.location_name
    view.domain = ""
    view.op_type = op_type or node.op_type
    view._schema = onnx.defs.get_schema(view.op_type, since)
    return view


def _standard_context(
    ctx: LoweringContext, view: OnnxNode, replaced: dict[int, ir.Value], count: int | None = None
) -> LoweringContext:
    """A context for ``view`` whose inputs are ``ctx``'s first ``count``, with ``replaced[i]`` for input i."""
    inputs: list[LoweredValue | None] = []
    for index in range(min(ctx.num_inputs, count if count is not None else ctx.num_inputs)):
        if index in replaced:
            value = replaced[index]
            inputs.append(LoweredValue(view.input_names[index], builders.dtype_of(value), builders.dims_of(value), value=value))
        else:
            inputs.append(ctx.lowered(index) if ctx.has_input(index) else None)
    return LoweringContext(view, inputs, ctx.materialize)


def _round_up(channels: int, block: int) -> int:
    return -(-channels // block) * block


@lowering("ReorderInput", since=1, domain=NCHWC)
def lower_reorder_input(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value]:
    """Lowers ReorderInput: NCHW (or NHWC) to the NCHWc value, held as ``[N, Cp, H, W]``.

    Spec: com.microsoft.nchwc ReorderInput-1 (onnxruntime's CPU kernel).
    Shapes: X [N, C, H, W] (``channels_last``: [N, H, W, C]); N, H, W symbolic allowed, C static
        and a multiple of 4. Output [N, Cp, H, W], Cp = C rounded up to the block size.
    Dtypes: float32.
    Follows ORT: padding channels are zeros; the block size (for Cp when C is not a multiple
        of 16) is MLAS's on this CPU when the shapes allow both.
    Raises: ShapeError for another rank, a symbolic or non-multiple-of-4 C;
        UnsupportedDtypeError for other dtypes.
    """
    x = _float32_input(ctx)
    shape = _rank4(ctx)
    if int(node.attr("channels_last", 0)):
        x = builders.transpose(x, [0, 3, 1, 2])
        shape = (shape[0], shape[3], shape[1], shape[2])
    channels = shape[1]
    if not isinstance(channels, int) or channels % 4:
        raise ctx.error(f"channels {channels} must be static and a multiple of 4 (ORT's kernel)", ShapeError)
    padded = {_round_up(channels, b) for b in BLOCK_SIZES}
    if len(padded) > 1:
        padded = {_round_up(channels, _choose_block(ctx, list(BLOCK_SIZES), f"{channels} channels"))}
    (total,) = padded
    if total == channels:
        return [x]
    zeros = builders.splat(0.0, DataType.FLOAT, (shape[0], total - channels, shape[2], shape[3]))
    joined = stablehlo.concatenate([x, zeros], ir.IntegerAttr.get(ir.IntegerType.get_signless(64), 1))
    return [builders.record(joined, (shape[0], total, shape[2], shape[3]))]


@lowering("ReorderOutput", since=1, domain=NCHWC)
def lower_reorder_output(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value]:
    """Lowers ReorderOutput: the NCHWc value's first ``channels`` channels, NCHW or NHWC.

    Spec: com.microsoft.nchwc ReorderOutput-1 (onnxruntime's CPU kernel).
    Shapes: X [N, Cp, H, W] (N, H, W symbolic allowed); output [N, channels, H, W] or, with
        ``channels_last``, [N, H, W, channels].
    Dtypes: float32.
    Raises: ShapeError when ``channels`` is not in (Cp - 16, Cp] or X is not 4-D;
        UnsupportedDtypeError for other dtypes.
    """
    x = _float32_input(ctx)
    shape = _rank4(ctx)
    channels = int(node.attr("channels", 0))
    padded = shape[1]
    if not isinstance(padded, int) or not 0 < channels <= padded or padded - channels >= max(BLOCK_SIZES):
        raise ctx.error(f"channels={channels} does not fit the NCHWc input's {padded} channels", ShapeError)
    y = builders.slice_axis(x, 1, 0, channels)
    if int(node.attr("channels_last", 0)):
        y = builders.transpose(y, [0, 2, 3, 1])
    return [y]


def _filter_layouts(channels: int, out_channels: int, filter_in: int, group: int) -> list[tuple[int, str]]:
    """``(block, layout)`` pairs onnxruntime may have written for a Conv of these sizes.

    From the transformer: group 1 takes NCHW input directly (``OIHWBo``) when its channels are
    fewer than the block, else blocked input (``OIHWBiBo``, channels a multiple of the block);
    a depthwise conv (``filter_in == 1``, ``group == channels``) uses ``OIHWBo``; other grouped
    convs ``OIHWBiBo`` with per-group channels multiples of the block. Output channels are always
    a multiple of the block.
    """
    found = []
    for block in BLOCK_SIZES:
        if out_channels % block:
            continue
        if group == 1:
            if channels < block and filter_in == channels:
                found.append((block, "OIHWBo"))
            elif channels % block == 0 and filter_in == channels:
                found.append((block, "OIHWBiBo"))
        elif filter_in == 1 and group == channels:
            found.append((block, "OIHWBo"))
        elif filter_in % block == 0 and (out_channels // group) % block == 0 and filter_in * group == channels:
            found.append((block, "OIHWBiBo"))
    return found


def unblock_filter(w: ir.Value, block: int, layout: str) -> ir.Value:
    """A filter stored blocked (shape [O, I, KH, KW]) in OIHW order.

    ``OIHWBo`` holds ``w[o, i, h, x]`` at ``[o // B, i, h, x, o % B]``; ``OIHWBiBo`` at
    ``[o // B, i // B, h, x, i % B, o % B]`` (MLAS reorder.cpp).
    """
    out, inner, kh, kw = builders.static_shape_of(w)
    if layout == "OIHWBo":
        blocked = builders.reshape(w, (out // block, inner, kh, kw, block))
        ordered = builders.transpose(blocked, [0, 4, 1, 2, 3])
    else:
        blocked = builders.reshape(w, (out // block, inner // block, kh, kw, block, block))
        ordered = builders.transpose(blocked, [0, 5, 1, 4, 2, 3])
    return builders.reshape(ordered, (out, inner, kh, kw))


def _plus_input(ctx: LoweringContext, y: ir.Value, index: int, what: str) -> ir.Value:
    """``y`` plus the node's optional input ``index`` (a fused convolution's Sum or Z), which must
    have ``y``'s shape; ``y`` when the input is absent."""
    if not ctx.has_input(index):
        return y
    total = ctx.input(index)
    if builders.dims_of(total) != builders.dims_of(y):
        raise ctx.error(f"{what} {builders.dims_of(total)} must have the output's shape {builders.dims_of(y)}", ShapeError)
    return stablehlo.add(y, total)


def _activation(ctx: LoweringContext, node: OnnxNode, y: ir.Value) -> ir.Value:
    """The fused ``activation`` (ORT's ``GetFusedActivationAttr``) applied to ``y``."""
    kind = node.attr("activation")
    if kind is None:
        return y
    kind = kind.decode() if isinstance(kind, bytes) else str(kind)
    params = node.attr_floats("activation_params", []) or []
    counts = {"Relu": 0, "Tanh": 0, "Sigmoid": 0, "LeakyRelu": 1, "Clip": 2, "HardSigmoid": 2}
    if kind not in counts:
        raise ctx.unsupported_attribute("activation", kind, _ACTIVATIONS)
    if len(params) != counts[kind]:
        raise ctx.error(f"activation {kind} needs {counts[kind]} activation_params, got {len(params)}", UnsupportedAttributeError)
    if kind == "Relu":
        return builders.relu(y)
    if kind == "Tanh":
        return stablehlo.tanh(y)
    if kind == "Sigmoid":
        return stablehlo.logistic(y)
    if kind == "LeakyRelu":
        return builders.leaky_relu(y, params[0])
    if kind == "HardSigmoid":
        return builders.hard_sigmoid(y, params[0], params[1])
    low, high = (builders.full_like(y, v) for v in params)
    return stablehlo.clamp(low, y, high)


@lowering("Conv", since=1, domain=NCHWC)
def lower_nchwc_conv(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value]:
    """Lowers the NCHWc Conv: a 2-D Conv with a blocked filter, an optional Sum and a fused activation.

    ``activation(conv(X, unblock(W)) + B + Sum)``; the filter layout (``OIHWBo`` or
    ``OIHWBiBo``) and block size follow from X's channels, W's shape and ``group`` as the
    transformer chose them (module docstring).

    Spec: com.microsoft.nchwc Conv-1 (onnxruntime's ``NchwcConv`` and ``GetFusedActivationAttr``).
    Shapes: X [N, C, H, W] (NCHW with C below the block, else NCHWc; N, H, W symbolic allowed);
        W [Op, C/group, KH, KW] blocked, Op a multiple of the block; B [Op]; Sum [N, Op, OH, OW].
    Dtypes: float32.
    Follows ORT: the activation (Relu, LeakyRelu, Tanh, Sigmoid, Clip, HardSigmoid with
        ``activation_params``) applies after Sum is added; when both block sizes fit the shapes,
        MLAS's block size on this CPU (see ``host_block_size``).
    Raises: ShapeError when no block size fits the shapes; UnsupportedAttributeError for other
        activations; as Conv otherwise.
    """
    _float32_input(ctx)
    x_shape = _rank4(ctx)
    w_shape = ctx.input_static_shape(1)
    if len(w_shape) != 4 or not isinstance(x_shape[1], int):
        raise ctx.error(f"W {list(w_shape)} must be 4-D and X's channels static", ShapeError)
    group = int(node.attr("group", 1))
    layouts = _filter_layouts(x_shape[1], w_shape[0], w_shape[1], group)
    what = f"a filter {list(w_shape)} over {x_shape[1]} channels (group {group})"
    block = _choose_block(ctx, sorted({b for b, _ in layouts}), what)
    layout = next(kind for b, kind in layouts if b == block)
    view = _standard_view(node, 11)
    inner = _standard_context(ctx, view, {1: unblock_filter(ctx.input(1), block, layout)}, count=3)
    (y,) = default_rule("", "Conv", 11)(inner, view)
    return [_activation(ctx, node, _plus_input(ctx, y, 3, "Sum"))]


@lowering("FusedConv", since=1, domain="com.microsoft")
def lower_fused_conv(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value]:
    """Lowers com.microsoft FusedConv: ``activation(Conv(X, W, B) + Z)``.

    onnxruntime's optimizer writes it when it fuses a Conv with the activation after it (and an
    Add into ``Z``) and the NCHWc transformer does not take the Conv (a grouped one whose
    channels per group do not fit the block, on AVX-512 machines for example).

    Spec: com.microsoft FusedConv-1 (onnxruntime's ``FusedConv`` kernel, ``GetFusedActivationAttr``).
    Shapes: as Conv; Z (optional) has the output's shape.
    Dtypes: float32 (onnxruntime's CPU kernel), float16.
    Follows ORT: the activation (Relu, LeakyRelu, Tanh, Sigmoid, Clip, HardSigmoid with
        ``activation_params``) applies after Z is added.
    Raises: UnsupportedAttributeError for other activations; as Conv otherwise.
    """
    view = _standard_view(node, 11, "Conv")
    inner = _standard_context(ctx, view, {}, count=3)
    (y,) = default_rule("", "Conv", 11)(inner, view)
    return [_activation(ctx, node, _plus_input(ctx, y, 3, "Z"))]


def _pool(op_type: str, since: int):
    def lower(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value]:
        rule = default_rule("", op_type, since)
        _float32_input(ctx)
        _rank4(ctx)
        view = _standard_view(node, since)
        return rule(_standard_context(ctx, view, {}), view)

    return lower


@lowering("MaxPool", since=1, domain=NCHWC)
def lower_nchwc_max_pool(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value]:
    """Lowers the NCHWc MaxPool as ai.onnx MaxPool-12 on the NCHWc value (channel order is kept).

    Spec: com.microsoft.nchwc MaxPool-1 (onnxruntime's ``NchwcMaxPool``).
    Shapes: X [N, Cp, H, W] (N, H, W symbolic allowed).
    Dtypes: float32.
    Raises: as MaxPool; ShapeError for another rank; UnsupportedDtypeError for other dtypes.
    """
    return _pool("MaxPool", 12)(ctx, node)


@lowering("AveragePool", since=1, domain=NCHWC)
def lower_nchwc_average_pool(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value]:
    """Lowers the NCHWc AveragePool as ai.onnx AveragePool-19 on the NCHWc value.

    Spec: com.microsoft.nchwc AveragePool-1 (onnxruntime's ``NchwcAveragePool``).
    Shapes: X [N, Cp, H, W] (N, H, W symbolic allowed).
    Dtypes: float32.
    Raises: as AveragePool; ShapeError for another rank; UnsupportedDtypeError for other dtypes.
    """
    return _pool("AveragePool", 19)(ctx, node)


@lowering("GlobalMaxPool", since=1, domain=NCHWC)
def lower_nchwc_global_max_pool(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value]:
    """Lowers the NCHWc GlobalMaxPool as ai.onnx GlobalMaxPool-1 on the NCHWc value.

    Spec: com.microsoft.nchwc GlobalMaxPool-1.
    Shapes: X [N, Cp, H, W] static -> [N, Cp, 1, 1].
    Dtypes: float32.
    Raises: ShapeError for another rank; UnsupportedDtypeError for other dtypes.
    """
    return _pool("GlobalMaxPool", 1)(ctx, node)


@lowering("GlobalAveragePool", since=1, domain=NCHWC)
def lower_nchwc_global_average_pool(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value]:
    """Lowers the NCHWc GlobalAveragePool as ai.onnx GlobalAveragePool-1 on the NCHWc value.

    Spec: com.microsoft.nchwc GlobalAveragePool-1.
    Shapes: X [N, Cp, H, W] static -> [N, Cp, 1, 1].
    Dtypes: float32.
    Raises: ShapeError for another rank; UnsupportedDtypeError for other dtypes.
    """
    return _pool("GlobalAveragePool", 1)(ctx, node)


def _interpolation_matrix(size: int, scale: int, mode: str) -> np.ndarray:
    """[size * scale, size] weights of MLAS's linear NCHWc upsample along one axis.

    Output position o samples ``x = o * (size - 1) / (out - 1)`` (align_corners),
    ``max(0, (o + 0.5) / scale - 0.5)`` (half_pixel) or ``o / scale`` (asymmetric) as
    ``(1 - f) * in[i] + f * in[min(i + 1, size - 1)]``, ``i = floor(x)``, ``f = x - i``.
    """
    out = size * scale
    positions = np.arange(out, dtype=np.float32)
    if scale == 1:
        where = positions
    elif mode == "align_corners":
        where = positions * np.float32(size - 1) / np.float32(max(out - 1, 1))
    elif mode == "half_pixel":
        where = np.maximum(np.float32(0), (positions + np.float32(0.5)) / np.float32(scale) - np.float32(0.5))
    else:
        where = positions / np.float32(scale)
    first = np.minimum(np.floor(where).astype(np.int64), size - 1)
    second = np.minimum(first + 1, size - 1)
    frac = (where - first).astype(np.float32)
    matrix = np.zeros((out, size), np.float32)
    rows = np.arange(out)
    np.add.at(matrix, (rows, first), 1 - frac)
    np.add.at(matrix, (rows, second), frac)
    return matrix


@lowering("Upsample", since=1, domain=NCHWC)
def lower_nchwc_upsample(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value]:
    """Lowers the NCHWc Upsample (integer spatial scales): a repeat (nearest) or interpolation matrices (linear).

    Spec: com.microsoft.nchwc Upsample-1 (onnxruntime's ``NchwcUpsample``).
    Shapes: X [N, Cp, H, W] (N symbolic allowed; H, W static for linear) -> [N, Cp, H sh, W sw].
    Dtypes: float32.
    Follows ORT: nearest takes ``in[o // scale]``; linear samples as MLAS does for
        ``coordinate_transformation_mode`` align_corners, half_pixel or asymmetric (default).
    Raises: UnsupportedAttributeError for scales other than [1, 1, sh, sw] with positive ints,
        another mode or coordinate mode; ShapeError for another rank; UnsupportedDtypeError.
    """
    x = _float32_input(ctx)
    batch, channels, height, width = _rank4(ctx)
    scales = node.attr_ints("scales", []) or []
    if len(scales) != 4 or scales[:2] != [1, 1] or min(scales) < 1:
        raise ctx.unsupported_attribute("scales", scales, "[1, 1, sh, sw] with sh, sw >= 1")
    sh, sw = scales[2], scales[3]
    mode = str(node.attr("mode", "nearest"))
    if mode == "nearest":
        wide = builders.broadcast_to(x, (batch, channels, height, sh, width, sw), dims=[0, 1, 2, 4])
        return [builders.reshape(wide, (batch, channels, height * sh, width * sw))]
    if mode != "linear":
        raise ctx.unsupported_attribute("mode", mode, "nearest, linear")
    coordinates = str(node.attr("coordinate_transformation_mode", "asymmetric"))
    if coordinates not in ("asymmetric", "half_pixel", "align_corners"):
        raise ctx.unsupported_attribute("coordinate_transformation_mode", coordinates, "asymmetric, half_pixel, align_corners")
    if not isinstance(height, int) or not isinstance(width, int):
        raise ctx.error("linear Upsample needs static H and W", ShapeError)
    rows = builders.constant(_interpolation_matrix(height, sh, coordinates))
    cols = builders.constant(_interpolation_matrix(width, sw, coordinates))
    # [OH, H] x [N, C, H, W] -> [OH, N, C, W]; then x [OW, W] -> [OH, N, C, OW].
    tall = builders.dot_general(rows, x, lhs_batch=[], rhs_batch=[], lhs_contracting=[1], rhs_contracting=[2])
    both = builders.dot_general(tall, cols, lhs_batch=[], rhs_batch=[], lhs_contracting=[3], rhs_contracting=[1])
    return [builders.transpose(both, [1, 2, 0, 3])]
