"""Lowering rules: recurrent layers (RNN, GRU, LSTM) as one stablehlo.while per direction.

For each direction the input projection of every time step is one ``dot_general`` before the
loop (``X W^T + Wb`` for all steps at once); the loop then runs over the sequence length
(not unrolled) with one ``dot_general`` per step for the recurrence (``H R^T``)::

    XW = dot_general(X [S, B, I], W [G*H, I]) + biases          # [S, B, G*H], before the loop
    while t < S:                                                 # t -> S-1-t for reverse
        gates = XW[t] + dot_general(H, R [G*H, H])               # [B, G*H]
        H, C = cell(gates, H, C)                                 # RNN / GRU / LSTM equations
        Y[t] = H

With ``sequence_lens`` a step past a batch entry's length keeps its state and writes zeros to
``Y``, so ``Y_h``/``Y_c`` come from the last valid step (a reverse direction starts at each entry's
own last step). Layout 1 (batch first, from revision 14) transposes in and out. float16 and
bfloat16 compute in float32.

Symbolic dims: the sequence length S and the batch B may be symbolic. A symbolic S makes the
loop's trip count ``get_dimension_size`` of X at run time; a symbolic B keeps the carried states
``tensor<?xH>``; both are refined per call. The hidden size must be static (``hidden_size``, or
R's last dim); weights, biases and states given with symbolic dims are cast by a
``dynamic_reshape`` to the shape the attributes and X fix (the refinement removes it).

com.microsoft DynamicQuantizeLSTM (``quantize_dynamic`` of an LSTM) is the same LSTM with its two
products replaced by ORT's quantized GEMMs (``builders.dynamic_quantize_uint8`` and
``builders.integer_matmul``).

Spec: onnx.ai/onnx/operators/onnx__RNN.html, onnx__GRU.html, onnx__LSTM.html; onnxruntime
docs/ContribOperators.md (DynamicQuantizeLSTM).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence

import numpy as np
import onnx
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import stablehlo

from onnx_stablehlo.errors import ShapeError
from onnx_stablehlo.frontend import builders, dtypes
from onnx_stablehlo.frontend.builders import dynamic_quantize_uint8, integer_matmul
from onnx_stablehlo.frontend.builders.contrib import MS
from onnx_stablehlo.frontend.context import LoweredValue, LoweringContext, OnnxNode
from onnx_stablehlo.frontend.dtypes import DataType
from onnx_stablehlo.frontend.registry import lowering
from onnx_stablehlo.frontend.shapes import Dim

_FLOATS = (DataType.FLOAT, DataType.DOUBLE, DataType.FLOAT16, DataType.BFLOAT16)

# name -> (uses alpha, uses beta, default alpha, default beta); defaults of the ONNX operators
# of the same name, as the spec says. Names compare case-insensitively, as onnxruntime does.
_ACTIVATIONS: dict[str, tuple[bool, bool, float, float]] = {
    "relu": (False, False, 0.0, 0.0),
    "tanh": (False, False, 0.0, 0.0),
    "sigmoid": (False, False, 0.0, 0.0),
    "affine": (True, True, 1.0, 0.0),
    "leakyrelu": (True, False, 0.01, 0.0),
    "thresholdedrelu": (True, False, 1.0, 0.0),
    "scaledtanh": (True, True, 1.0, 1.0),
    "hardsigmoid": (True, True, 0.2, 0.5),
    "elu": (True, False, 1.0, 0.0),
    "softsign": (False, False, 0.0, 0.0),
    "softplus": (False, False, 0.0, 0.0),
}

_DEFAULT_ACTIVATIONS = {"RNN": ["Tanh"], "GRU": ["Sigmoid", "Tanh"], "LSTM": ["Sigmoid", "Tanh", "Tanh"]}
_GATES = {"RNN": 1, "GRU": 3, "LSTM": 4}

Activation = Callable[[ir.Value], ir.Value]


@dataclasses.dataclass
class _Layer:
    """What one direction of a recurrent layer needs inside its loop."""

    kind: str
    hidden: int
    acts: list[Activation]
    clip: float | None
    r: ir.Value  # [G*H, H]
    r_bias_h: ir.Value | None  # GRU with linear_before_reset: Rbh, kept inside r * (...)
    r_zr: ir.Value | None  # GRU: the z and r rows of R, [2H, H]
    r_h: ir.Value | None  # GRU: the h rows of R, [H, H]
    peephole: ir.Value | None  # LSTM: [3*H] (i, o, f)
    linear_before_reset: bool = False
    input_forget: bool = False
    r_product: Callable[[ir.Value], ir.Value] | None = None  # h -> h @ R^T (quantized LSTMs); default _matmul_t


# Elementwise helpers -------------------------------------------------------------------------


def _scale(x: ir.Value, factor: float) -> ir.Value:
    """``x * factor``, no op for a factor of 1 (Affine and ScaledTanh's defaults)."""
    return x if factor == 1.0 else builders.scale(x, factor)


def _activation(ctx: LoweringContext, name: str, alpha: float, beta: float) -> Activation:
    """The ONNX activation function ``name`` (the scalar ones the activation family lowers)."""
    key = name.lower()
    table: dict[str, Activation] = {
        "relu": builders.relu,
        "tanh": stablehlo.tanh,
        "sigmoid": stablehlo.logistic,
        "affine": lambda x: builders.shift(_scale(x, alpha), beta),
        "leakyrelu": lambda x: builders.leaky_relu(x, alpha),
        "thresholdedrelu": lambda x: builders.thresholded_relu(x, alpha),
        "scaledtanh": lambda x: _scale(stablehlo.tanh(_scale(x, beta)), alpha),
        "hardsigmoid": lambda x: builders.hard_sigmoid(x, alpha, beta),
        "elu": lambda x: builders.elu(x, alpha),
        "softsign": builders.softsign,
        "softplus": builders.softplus,
    }
    if key not in table:
        raise ctx.unsupported_attribute(
            "activations", name, "Relu, Tanh, Sigmoid, Affine, LeakyRelu, ThresholdedRelu, ScaledTanh, "
            "HardSigmoid, Elu, Softsign, Softplus"
        )
    return table[key]


def _activations(ctx: LoweringContext, node: OnnxNode, kind: str, directions: int) -> list[list[Activation]]:
    """Per direction, the activation functions (f for RNN; f, g for GRU; f, g, h for LSTM)."""
    per_direction = len(_DEFAULT_ACTIVATIONS[kind])
    # The schema's default (["Tanh", "Tanh"] for RNN) is not per direction: use our own.
    names = node.attr("activations") if node.has_attr("activations") else None
    names = names or _DEFAULT_ACTIVATIONS[kind] * directions
    names = [n.decode() if isinstance(n, bytes) else str(n) for n in names]
    if len(names) == per_direction and directions == 2:
        names = names * 2
    if len(names) != per_direction * directions:
        raise ctx.unsupported_attribute(
            "activations", names, f"{per_direction} names per direction ({per_direction * directions} in all)"
        )
    alphas = list(node.attr_floats("activation_alpha") or [])
    betas = list(node.attr_floats("activation_beta") or [])
    built = []
    for name in names:
        uses_alpha, uses_beta, alpha, beta = _ACTIVATIONS.get(name.lower(), (False, False, 0.0, 0.0))
        # alpha/beta are consumed in order by the functions that take them (as onnxruntime does).
        if uses_alpha and alphas:
            alpha = alphas.pop(0)
        if uses_beta and betas:
            beta = betas.pop(0)
        built.append(_activation(ctx, name, alpha, beta))
    return [built[d * per_direction : (d + 1) * per_direction] for d in range(directions)]


def _clip(x: ir.Value, clip: float | None) -> ir.Value:
    if clip is None:
        return x
    return stablehlo.clamp(builders.full_like(x, -clip), x, builders.full_like(x, clip))


def _gate(gates: ir.Value, index: int, hidden: int) -> ir.Value:
    """Columns ``[index*H, (index+1)*H)`` of ``gates`` [B, G*H]."""
    return builders.slice_axis(gates, 1, index * hidden, (index + 1) * hidden)


def _matmul_t(x: ir.Value, w: ir.Value) -> ir.Value:
    """``x @ w^T`` contracting the last dim of both: [..., K] x [N, K] -> [..., N], in x's dtype."""
    rank = len(builders.dims_of(x))
    return builders.dot_general(x, w, lhs_contracting=[rank - 1], rhs_contracting=[1], result_dtype=builders.dtype_of(x))


def _row(value: ir.Value, index: int) -> ir.Value:
    """``value[index]`` along axis 0 (a static index into a static dim), axis dropped."""
    shape = builders.dims_of(value)
    if shape[0] == 1:
        return builders.reshape(value, shape[1:])
    return builders.reshape(builders.slice_axis(value, 0, index, index + 1), shape[1:])


def _columns(value: ir.Value, start: int, stop: int) -> ir.Value:
    """``value[..., start:stop]``."""
    return builders.slice_axis(value, builders.rank_of(value) - 1, start, stop)


def _stack(values: Sequence[ir.Value], axis: int) -> ir.Value:
    """Stacks equal-shaped values along a new ``axis``."""
    expanded = []
    for v in values:
        shape = list(builders.dims_of(v))
        shape.insert(axis, 1)
        expanded.append(builders.reshape(v, shape))
    if len(expanded) == 1:
        return expanded[0]
    out = list(builders.dims_of(values[0]))
    out.insert(axis, len(values))
    return builders.record(stablehlo.concatenate(expanded, axis), out)


# Cells ---------------------------------------------------------------------------------------


def _rnn_cell(layer: _Layer, x_gates: ir.Value, h: ir.Value, c: ir.Value | None) -> tuple[ir.Value, ir.Value | None]:
    """``H = f(X W^T + H R^T + Wb + Rb)``; ``x_gates`` holds the precomputed ``X W^T + Wb + Rb``."""
    (f,) = layer.acts
    return f(_clip(stablehlo.add(x_gates, _matmul_t(h, layer.r)), layer.clip)), None


def _gru_cell(layer: _Layer, x_gates: ir.Value, h: ir.Value, c: ir.Value | None) -> tuple[ir.Value, ir.Value | None]:
    """``z, r = f(...)``; ``h~ = g(X Wh^T + (r * H) Rh^T + Rbh + Wbh)``, or with
    ``linear_before_reset`` ``g(X Wh^T + r * (H Rh^T + Rbh) + Wbh)``; ``H = (1 - z) h~ + z H``."""
    f, g = layer.acts
    hidden = layer.hidden
    x_zr, x_h = _columns(x_gates, 0, 2 * hidden), _columns(x_gates, 2 * hidden, 3 * hidden)
    assert layer.r_zr is not None and layer.r_h is not None
    r_h = layer.r_h
    zr = stablehlo.add(x_zr, _matmul_t(h, layer.r_zr))
    z = f(_clip(_columns(zr, 0, hidden), layer.clip))
    r = f(_clip(_columns(zr, hidden, 2 * hidden), layer.clip))
    if layer.linear_before_reset:
        recurrent = _matmul_t(h, r_h)
        if layer.r_bias_h is not None:
            recurrent = stablehlo.add(recurrent, builders.broadcast_to(layer.r_bias_h, builders.dims_of(recurrent)))
        candidate = stablehlo.add(x_h, stablehlo.multiply(r, recurrent))
    else:
        candidate = stablehlo.add(x_h, _matmul_t(stablehlo.multiply(r, h), r_h))
    h_tilde = g(_clip(candidate, layer.clip))
    one = builders.full_like(z, 1.0)
    return stablehlo.add(stablehlo.multiply(stablehlo.subtract(one, z), h_tilde), stablehlo.multiply(z, h)), None


def _row_block(value: ir.Value, start: int, stop: int) -> ir.Value:
    """Rows ``[start, stop)`` of a 2-D value."""
    return builders.slice_axis(value, 0, start, stop)


def _lstm_cell(layer: _Layer, x_gates: ir.Value, h: ir.Value, c: ir.Value | None) -> tuple[ir.Value, ir.Value | None]:
    """Gates i, o, f, c (peepholes add ``P * C``; ``input_forget`` makes ``f = 1 - i``);
    ``C = f C + i g(c~)``, ``H = o h(C)``."""
    assert c is not None
    f, g, act_h = layer.acts
    hidden = layer.hidden
    product = layer.r_product(h) if layer.r_product is not None else _matmul_t(h, layer.r)
    gates = stablehlo.add(x_gates, product)
    pre_i, pre_o, pre_f, pre_c = (_gate(gates, k, hidden) for k in range(4))
    shape = builders.dims_of(c)
    if layer.peephole is not None:
        p_i, p_o, p_f = (
            builders.broadcast_to(_columns(layer.peephole, k * hidden, (k + 1) * hidden), shape) for k in range(3)
        )
        pre_i = stablehlo.add(pre_i, stablehlo.multiply(p_i, c))
        pre_f = stablehlo.add(pre_f, stablehlo.multiply(p_f, c))
    i = f(_clip(pre_i, layer.clip))
    forget = stablehlo.subtract(builders.full_like(i, 1.0), i) if layer.input_forget else f(_clip(pre_f, layer.clip))
    cell = g(_clip(pre_c, layer.clip))
    c_next = stablehlo.add(stablehlo.multiply(forget, c), stablehlo.multiply(i, cell))
    if layer.peephole is not None:
        pre_o = stablehlo.add(pre_o, stablehlo.multiply(p_o, c_next))
    o = f(_clip(pre_o, layer.clip))
    return stablehlo.multiply(o, act_h(c_next)), c_next


_CELLS = {"RNN": _rnn_cell, "GRU": _gru_cell, "LSTM": _lstm_cell}


# The layer -----------------------------------------------------------------------------------


def _direction_loop(
    layer: _Layer,
    x_gates: ir.Value,
    h0: ir.Value,
    c0: ir.Value | None,
    lengths: ir.Value | None,
    reverse: bool,
) -> tuple[ir.Value, ir.Value, ir.Value | None]:
    """Runs one direction over all steps: returns Y [S, B, H], the last H and the last C.

    A symbolic S runs ``get_dimension_size`` steps; a symbolic B keeps the carried states
    ``[?, H]`` (refined per call).
    """
    steps, batch, _ = builders.dims_of(x_gates)
    shape = builders.dims_of(h0)
    last = builders.dim_value(steps - 1) if reverse and not isinstance(steps, int) else None
    dtype = builders.dtype_of(h0)
    cell = _CELLS[layer.kind]

    def body(counter: ir.Value, carried: list[ir.Value]) -> list[ir.Value]:
        h, y = carried[0], carried[-1]
        c = carried[1] if c0 is not None else None
        if reverse:
            first = builders.splat(steps - 1, DataType.INT64) if last is None else last
            index = stablehlo.subtract(first, counter)
        else:
            index = counter
        h_next, c_next = cell(layer, builders.dynamic_index(x_gates, index, 0), h, c)
        row = h_next
        if lengths is not None:
            position = builders.broadcast_to(builders.convert(index, builders.dtype_of(lengths)), (batch,))
            valid = builders.broadcast_to(builders.compare(position, lengths, "LT"), shape, dims=[0])
            h_next = stablehlo.select(valid, h_next, h)
            if c_next is not None:
                c_next = stablehlo.select(valid, c_next, c)
            row = stablehlo.select(valid, row, builders.full_like(row, 0.0))
        y = builders.write_row(y, row, index, 0)
        return [h_next, *([c_next] if c_next is not None else []), y]

    y0 = builders.splat(0, dtype, (steps, *shape))
    if isinstance(steps, int) and steps == 0:
        # No time step: an empty Y, and zero Y_h / Y_c (ONNX leaves the
        # "last" state of an empty sequence undefined; onnxruntime returns uninitialized memory).
        return y0, builders.full_like(h0, 0.0), (builders.full_like(c0, 0.0) if c0 is not None else None)
    results = builders.counted_loop(steps, [h0, *([c0] if c0 is not None else []), y0], body)
    return results[-1], results[0], (results[1] if c0 is not None else None)


Product = Callable[[ir.Value, int], ir.Value]
"""``(activations [..., K], direction) -> activations @ weight[direction]^T``."""


def _lower_recurrent(
    ctx: LoweringContext,
    node: OnnxNode,
    kind: str,
    input_product: Product | None = None,
    recurrent_product: Product | None = None,
) -> list[ir.Value | None]:
    """Lowers RNN/GRU/LSTM; ``input_product``/``recurrent_product`` replace ``X W^T``/``H R^T``
    (com.microsoft DynamicQuantizeLSTM computes them with quantized activations)."""
    dtype = ctx.input_dtype(0)
    if dtype not in _FLOATS:
        raise ctx.unsupported_dtype(dtype, "float16, bfloat16, float, double")
    compute = dtypes.wide_dtype(dtype)
    layout = node.attr_int("layout", 0) if node.since_version >= 14 else 0
    if layout not in (0, 1):
        raise ctx.unsupported_attribute("layout", layout, "0 (sequence first) or 1 (batch first)")
    direction = node.attr_str("direction")
    if direction not in ("forward", "reverse", "bidirectional"):
        raise ctx.unsupported_attribute("direction", direction, "forward, reverse, bidirectional")
    directions = 2 if direction == "bidirectional" else 1
    gates = _GATES[kind]

    def value(index: int) -> ir.Value:
        return builders.convert(ctx.input(index), compute)

    x = value(0)
    if builders.rank_of(x) != 3:
        raise ctx.error(f"X must have rank 3, got shape {[str(d) for d in builders.dims_of(x)]}", ShapeError)
    if layout == 1:
        x = builders.transpose(x, [1, 0, 2])
    steps, batch, size = builders.dims_of(x)
    w, r = value(1), value(2)
    w_dims, r_dims = builders.dims_of(w), builders.dims_of(r)
    if node.has_attr("hidden_size"):
        hidden = node.attr_int("hidden_size")
    elif len(r_dims) == 3 and isinstance(r_dims[-1], int):
        hidden = r_dims[-1]
    else:
        raise ctx.error("R's last dim is symbolic: the hidden size needs the hidden_size attribute", ShapeError)
    if not _fits(w_dims, (directions, gates * hidden, size)) or not _fits(r_dims, (directions, gates * hidden, hidden)):
        raise ctx.error(
            f"W {[str(d) for d in w_dims]} and R {[str(d) for d in r_dims]} do not fit direction={direction!r}, "
            f"hidden_size={hidden} and {gates} gates",
            ShapeError,
        )

    def shaped(index: int, dims: Sequence[Dim]) -> ir.Value:
        """Input ``index`` as ``dims``: symbolic dims where the shape is fixed by the attributes or
        by X become those (a ``dynamic_reshape`` the refinement removes)."""
        given = value(index)
        if not _fits(builders.dims_of(given), dims):
            raise ctx.error(
                f"{node.input_names[index]} has shape {[str(d) for d in builders.dims_of(given)]}, expected "
                f"{[str(d) for d in dims]}",
                ShapeError,
            )
        return builders.reshape(given, dims)

    w = shaped(1, (directions, gates * hidden, size))
    r = shaped(2, (directions, gates * hidden, hidden))
    bias = shaped(3, (directions, 2 * gates * hidden)) if ctx.has_input(3) else None
    lengths = _sequence_lengths(ctx, steps)
    state_shape = (directions, batch, hidden)

    def initial(index: int) -> ir.Value | None:
        if not ctx.has_input(index):
            return None
        state = shaped(index, state_shape if layout == 0 else (batch, directions, hidden))
        return builders.transpose(state, [1, 0, 2]) if layout == 1 else state

    def initial_row(state: ir.Value | None, d: int) -> ir.Value:
        return builders.splat(0, compute, (batch, hidden)) if state is None else _row(state, d)

    h_init = initial(5)
    c_init = initial(6) if kind == "LSTM" else None
    peepholes = shaped(7, (directions, 3 * hidden)) if kind == "LSTM" and ctx.has_input(7) else None
    acts = _activations(ctx, node, kind, directions)
    clip = node.attr("clip")
    linear_before_reset = kind == "GRU" and bool(node.attr_int("linear_before_reset", 0))
    input_forget = kind == "LSTM" and bool(node.attr_int("input_forget", 0))

    ys, hs, cs = [], [], []
    for d in range(directions):
        x_gates = input_product(x, d) if input_product is not None else _matmul_t(x, _row(w, d))
        r_d = _row(r, d)
        r_bias_h = None
        if bias is not None:
            biases = _row(bias, d)
            w_bias = _columns(biases, 0, gates * hidden)
            r_bias = _columns(biases, gates * hidden, 2 * gates * hidden)
            if linear_before_reset:
                # Rbh stays inside r * (H Rh^T + Rbh); only Rbz and Rbr join the input projection.
                r_bias_h = _columns(r_bias, 2 * hidden, 3 * hidden)
                r_bias_zr = _columns(r_bias, 0, 2 * hidden)
                r_bias = stablehlo.concatenate([r_bias_zr, builders.splat(0, compute, (hidden,))], 0)
                w_bias = stablehlo.add(w_bias, r_bias)
            else:
                w_bias = stablehlo.add(w_bias, r_bias)
            x_gates = stablehlo.add(x_gates, builders.broadcast_to(w_bias, builders.dims_of(x_gates)))
        layer = _Layer(
            kind=kind,
            hidden=hidden,
            acts=acts[d],
            clip=None if clip is None else float(clip),
            r=r_d,
            r_bias_h=r_bias_h,
            r_zr=_row_block(r_d, 0, 2 * hidden) if kind == "GRU" else None,
            r_h=_row_block(r_d, 2 * hidden, 3 * hidden) if kind == "GRU" else None,
            peephole=_row(peepholes, d) if peepholes is not None else None,
            linear_before_reset=linear_before_reset,
            input_forget=input_forget,
            r_product=None if recurrent_product is None else (lambda h, d=d: recurrent_product(h, d)),
        )
        reverse = direction == "reverse" or d == 1
        y, h, c = _direction_loop(
            layer, x_gates, initial_row(h_init, d), initial_row(c_init, d) if kind == "LSTM" else None, lengths, reverse
        )
        ys.append(y)
        hs.append(h)
        cs.append(c)

    y = _stack(ys, 1)  # [S, D, B, H]
    y_h = _stack(hs, 0)  # [D, B, H]
    y_c = _stack(cs, 0) if kind == "LSTM" else None
    if layout == 1:
        y = builders.transpose(y, [2, 0, 1, 3])
        y_h = builders.transpose(y_h, [1, 0, 2])
        y_c = builders.transpose(y_c, [1, 0, 2]) if y_c is not None else None
    outputs = [y, y_h] + ([y_c] if kind == "LSTM" else [])
    return [builders.convert(v, dtype) if v is not None else None for v in outputs]


def _fits(dims: Sequence[Dim], expected: Sequence[Dim]) -> bool:
    """Whether a state's dims fit: equal where both are static (symbolic dims bind at run time)."""
    if len(dims) != len(expected):
        return False
    return all(not isinstance(a, int) or not isinstance(b, int) or a == b for a, b in zip(dims, expected))


def _sequence_lengths(ctx: LoweringContext, steps: Dim) -> ir.Value | None:
    """``sequence_lens`` as an int32 [B] value, or None when every entry runs all steps."""
    if not ctx.has_input(4):
        return None
    if ctx.is_constant_input(4) and isinstance(steps, int):
        known = np.asarray(ctx.constant_input(4)).reshape(-1)
        if np.any(known < 0) or np.any(known > steps):
            raise ctx.error(f"sequence_lens {known.tolist()} must lie in [0, {steps}]", ShapeError)
        if np.all(known == steps):
            return None
    return ctx.input(4)


@lowering("RNN", since=7)
@lowering("RNN", since=14)  # 14: layout (batch-first)
@lowering("RNN", since=22)  # 22: bfloat16
def lower_rnn(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value | None]:
    """Lowers RNN to one stablehlo.while per direction (see the module docstring).

    Spec: RNN-7/14/22.
    Shapes: X [S, B, I] (layout 0) or [B, S, I] (layout 1), S and B may be symbolic; W [D, H, I]; R [D, H, H];
        B [D, 2H]; sequence_lens [B] int32; initial_h [D, B, H] (layout 1: [B, D, H]).
    Dtypes: f16, bf16 (computed in f32), f32, f64.
    Deviations: activation alpha/beta defaults follow the ONNX operators of the same name
        (onnxruntime uses 0 for Affine, ThresholdedRelu and ScaledTanh). With zero time steps
        (S = 0) Y is empty and Y_h (Y_c) are zeros (undefined in ONNX; onnxruntime returns
        uninitialized memory, onnx.reference fails).
    Raises: UnsupportedAttributeError for an unknown activation, direction or layout;
        ShapeError for weights that do not fit hidden_size and direction.
    """
    return _lower_recurrent(ctx, node, "RNN")


@lowering("GRU", since=7)
@lowering("GRU", since=14)  # 14: layout (batch-first)
@lowering("GRU", since=22)  # 22: bfloat16
def lower_gru(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value | None]:
    """Lowers GRU (gates z, r, h; ``linear_before_reset``) to one stablehlo.while per direction.

    Spec: GRU-7/14/22.
    Shapes: X [S, B, I] (layout 0) or [B, S, I] (layout 1), S and B may be symbolic; W [D, 3H, I]; R [D, 3H, H];
        B [D, 6H]; sequence_lens [B] int32; initial_h [D, B, H] (layout 1: [B, D, H]).
    Dtypes: f16, bf16 (computed in f32), f32, f64.
    Deviations: activation alpha/beta defaults and zero time steps as for RNN.
    Raises: UnsupportedAttributeError for an unknown activation, direction or layout;
        ShapeError for weights that do not fit hidden_size and direction.
    """
    return _lower_recurrent(ctx, node, "GRU")


@lowering("LSTM", since=7)
@lowering("LSTM", since=14)  # 14: layout (batch-first)
@lowering("LSTM", since=22)  # 22: bfloat16
def lower_lstm(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value | None]:
    """Lowers LSTM (gates i, o, f, c; peepholes, ``input_forget``) to one stablehlo.while per direction.

    Spec: LSTM-7/14/22.
    Shapes: X [S, B, I] (layout 0) or [B, S, I] (layout 1), S and B may be symbolic; W [D, 4H, I]; R [D, 4H, H];
        B [D, 8H]; sequence_lens [B] int32; initial_h, initial_c [D, B, H] (layout 1:
        [B, D, H]); P [D, 3H].
    Dtypes: f16, bf16 (computed in f32), f32, f64.
    Deviations: activation alpha/beta defaults and zero time steps as for RNN.
    Raises: UnsupportedAttributeError for an unknown activation, direction or layout;
        ShapeError for weights that do not fit hidden_size and direction.
    """
    return _lower_recurrent(ctx, node, "LSTM")


# com.microsoft DynamicQuantizeLSTM: the LSTM above with ORT's quantized products ----------------


def _quantized_product(ctx: LoweringContext, weight_index: int, scale_index: int, zero_index: int):
    """``(a, d) -> a @ W[d]`` as ORT's quantized LSTM GEMM computes it: ``a`` quantized to uint8
    per tensor (DynamicQuantizeLinear's rule), an exact int32 product with the int8/uint8
    ``W[d]`` [K, 4H] and its zero point, then ``* (a_scale * w_scale)`` in float.
    Scale and zero point are per direction [D] or per column [D, 4H]."""
    weight = ctx.input(weight_index)
    scales, zeros = ctx.input(scale_index), ctx.input(zero_index)
    directions = builders.dims_of(weight)[0]
    for index in (scale_index, zero_index):
        dims = builders.dims_of(ctx.input(index))
        if len(dims) not in (1, 2) or dims[0] != directions:
            raise ctx.error(f"{ctx.node.input_names[index]} must be [D] or [D, 4H], got {list(dims)}", ShapeError)

    def row(value: ir.Value, d: int) -> ir.Value:
        dims = builders.dims_of(value)
        return builders.reshape(builders.slice_axis(value, 0, d, d + 1), dims[1:])

    def product(a: ir.Value, d: int) -> ir.Value:
        a_q, a_scale, a_zero = dynamic_quantize_uint8(a)
        w_zero = row(zeros, d)
        lead = builders.dims_of(a)[:-1]
        flat = builders.reshape(a_q, (_product(lead), builders.dims_of(a)[-1]))
        result = integer_matmul(flat, row(weight, d), a_zero, w_zero)
        shape = builders.dims_of(result)
        w_scale = row(scales, d)
        multiplier = stablehlo.multiply(*builders.broadcast_values(builders.convert(a_scale, builders.dtype_of(w_scale)), w_scale))
        scaled = stablehlo.multiply(builders.convert(result, builders.dtype_of(w_scale)), builders.broadcast_to(multiplier, shape))
        return builders.reshape(scaled, (*lead, shape[-1]))

    return product


def _product(dims):
    total = 1
    for d in dims:
        total = total * d
    return total


@lowering("DynamicQuantizeLSTM", since=1, domain=MS)
def lower_dynamic_quantize_lstm(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value | None]:
    """Lowers DynamicQuantizeLSTM (``quantize_dynamic`` of an LSTM) with ORT's quantized GEMMs.

    The ai.onnx LSTM lowering above (LSTM-7's attribute defaults) runs with its two
    products replaced: ``X W^T`` quantizes all of X to uint8 per tensor, ``H R^T`` quantizes each
    step's H the same way (DynamicQuantizeLinear's rule, as ORT's ``GetQuantizationParameter``),
    each an exact int32 product with the int8/uint8 weights and their zero points, then scaled
    by ``a_scale * w_scale`` in float.

    Spec: com.microsoft DynamicQuantizeLSTM-1.
    Shapes: X [S, B, I] (symbolic allowed); W [D, I, 4H] and R [D, H, 4H] int8/uint8; W_scale,
        W_zero_point, R_scale, R_zero_point [D] or [D, 4H]; the rest as LSTM.
    Dtypes: X f32; W, R int8 or uint8.
    Follows ORT: activations quantized per tensor at each GEMM (all of X at once, H per step).
    Raises: as LSTM; ShapeError for scales or zero points of another shape.
    """
    directions, size, gates = builders.dims_of(ctx.input(1))
    hidden = builders.dims_of(ctx.input(2))[1]
    inputs = [ctx.lowered(i) if ctx.has_input(i) else None for i in range(min(ctx.num_inputs, 8))]
    # Shape-only stand-ins for W and R in LSTM's layout (the products above read the real ones).
    for index, dims in ((1, (directions, gates, size)), (2, (directions, gates, hidden))):
        placeholder = builders.splat(0.0, DataType.FLOAT, dims)
        inputs[index] = LoweredValue(node.input_names[index], DataType.FLOAT, dims, value=placeholder)
    view = OnnxNode(node.ir_node, 0, 7, 7)
    view.name, view.location_name = node.name, node.location_name
    view._schema = onnx.defs.get_schema("LSTM", 7)  # LSTM-7's attribute defaults (direction, ...)
    inner = LoweringContext(view, inputs, ctx.materialize)
    return _lower_recurrent(
        inner, view, "LSTM", _quantized_product(ctx, 1, 8, 9), _quantized_product(ctx, 2, 10, 11)
    )
