"""Lowering rules: the training optimizers of ``ai.onnx.preview.training``.

::

    Adagrad / Adam / Momentum   -> their spec's elementwise update formulas

Spec: the ai.onnx.preview.training operators (Adagrad, Adam, Momentum).
"""

from __future__ import annotations

import numpy as np
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import stablehlo

from onnx_stablehlo.errors import ShapeError
from onnx_stablehlo.frontend import builders
from onnx_stablehlo.frontend.context import LoweringContext, OnnxNode
from onnx_stablehlo.frontend.dtypes import DataType
from onnx_stablehlo.frontend.registry import lowering
from onnx_stablehlo.frontend.shapes import Dim, is_static


_TRAINING = "ai.onnx.preview.training"


def _optimizer_groups(ctx: LoweringContext, groups: int, op_type: str) -> list[list[ir.Value]]:
    """Splits the variadic inputs after R and T into ``groups`` lists of equal length."""
    count = ctx.num_inputs - 2
    if count <= 0 or count % groups:
        raise ctx.error(
            f"{op_type} takes R, T and {groups} tensors per optimized tensor, got {ctx.num_inputs} inputs",
            ShapeError,
        )
    per_group = count // groups
    tensors = [ctx.input(2 + i) for i in range(count)]
    return [tensors[g * per_group : (g + 1) * per_group] for g in range(groups)]


def _scalar_like(ctx: LoweringContext, index: int, dtype: DataType) -> ir.Value:
    """Input ``index`` (a one-element tensor) as a 0-d value of ``dtype``.

    A symbolic shape is assumed to hold one element (a dynamic_reshape to ``[]``, whose
    element count is checked when refined to the feeds' shapes)."""
    shape = builders.dims_of(ctx.input(index))
    if is_static(shape) and int(np.prod(shape, dtype=np.int64)) != 1:
        raise ctx.error(f"input {index} ('{ctx.node.input_names[index]}') must be a scalar, got shape {list(shape)}", ShapeError)
    return builders.convert(builders.reshape(ctx.input(index), []), dtype)


def _check_float(ctx: LoweringContext, value: ir.Value) -> DataType:
    dtype = builders.dtype_of(value)
    if dtype not in (DataType.FLOAT, DataType.DOUBLE):
        raise ctx.unsupported_dtype(dtype, "float32, float64")
    return dtype


def _common_shape(*values: ir.Value) -> tuple[Dim, ...]:
    """The shape an optimizer's tensors share (X_i, G_i, ...): their symbolic dims are merged,
    the equality checked when the feeds bind them."""
    return builders.broadcast_shapes(*[builders.dims_of(v) for v in values])


def _regularized(f: builders.Arith, x: ir.Value, g: ir.Value, coefficient: float) -> ir.Value:
    """``norm_coefficient * X + G``."""
    return f.add(f.mul(coefficient, x), g) if coefficient else g


@lowering("Adagrad", since=1, domain=_TRAINING)
def lower_adagrad(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value]:
    """Lowers Adagrad (one step, any number of tensors) to its elementwise update formula.

    ``r = R / (1 + T * decay_factor)``, ``G' = norm_coefficient * X + G``, ``H' = H + G'^2``,
    ``X' = X - r * G' / (sqrt(H') + epsilon)``.

    Spec: ai.onnx.preview.training Adagrad-1.
    Shapes: R and T scalars; X_i, G_i, H_i, one shape per i (symbolic dims allowed). Outputs X'_1.., H'_1...
    Dtypes: float32, float64 (R is converted to each tensor's dtype).
    Raises: ShapeError if the inputs do not split into three equal groups.
    """
    xs, gs, hs = _optimizer_groups(ctx, 3, "Adagrad")
    decay = node.attr_float("decay_factor")
    epsilon = node.attr_float("epsilon")
    norm = node.attr_float("norm_coefficient")
    new_xs, new_hs = [], []
    for x, g, h in zip(xs, gs, hs):
        dtype = _check_float(ctx, x)
        scalars = builders.Arith((), dtype)
        rate = scalars.div(_scalar_like(ctx, 0, dtype), scalars.add(1.0, scalars.mul(_scalar_like(ctx, 1, dtype), decay)))
        f = builders.Arith(_common_shape(x, g, h), dtype)
        g_reg = _regularized(f, x, g, norm)
        h_new = f.add(h, f.mul(g_reg, g_reg))
        x_new = f.sub(x, f.div(f.mul(rate, g_reg), f.add(f.sqrt(h_new), epsilon)))
        new_xs.append(x_new)
        new_hs.append(h_new)
    return new_xs + new_hs


@lowering("Adam", since=1, domain=_TRAINING)
def lower_adam(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value]:
    """Lowers Adam (one step, any number of tensors) to its elementwise update formula.

    ``G' = norm_coefficient * X + G``, ``V' = alpha V + (1 - alpha) G'``,
    ``H' = beta H + (1 - beta) G'^2``, ``R' = R sqrt(1 - beta^T) / (1 - alpha^T)`` if T > 0 else
    ``R``, ``X' = (1 - norm_coefficient_post) (X - R' V' / (sqrt(H') + epsilon))``.

    Spec: ai.onnx.preview.training Adam-1.
    Shapes: R and T scalars; X_i, G_i, V_i, H_i, one shape per i (symbolic dims allowed). Outputs
        X'_1.., V'_1.., H'_1...
    Dtypes: float32, float64 (R and T are converted to each tensor's dtype).
    Raises: ShapeError if the inputs do not split into four equal groups.
    """
    xs, gs, vs, hs = _optimizer_groups(ctx, 4, "Adam")
    alpha, beta = node.attr_float("alpha"), node.attr_float("beta")
    epsilon = node.attr_float("epsilon")
    norm, norm_post = node.attr_float("norm_coefficient"), node.attr_float("norm_coefficient_post")
    t_positive = builders.compare(
        builders.reshape(builders.convert(ctx.input(1), DataType.INT64), []), builders.splat(0, DataType.INT64), "GT"
    )
    new_xs, new_vs, new_hs = [], [], []
    for x, g, v, h in zip(xs, gs, vs, hs):
        dtype = _check_float(ctx, x)
        s = builders.Arith((), dtype)
        rate, step = _scalar_like(ctx, 0, dtype), _scalar_like(ctx, 1, dtype)
        beta_power = stablehlo.power(s.lift(beta), step)
        alpha_power = stablehlo.power(s.lift(alpha), step)
        corrected = s.div(s.mul(rate, s.sqrt(s.sub(1.0, beta_power))), s.sub(1.0, alpha_power))
        rate = stablehlo.select(t_positive, corrected, rate)
        f = builders.Arith(_common_shape(x, g, v, h), dtype)
        g_reg = _regularized(f, x, g, norm)
        v_new = f.add(f.mul(alpha, v), f.mul(1.0 - alpha, g_reg))
        h_new = f.add(f.mul(beta, h), f.mul(1.0 - beta, f.mul(g_reg, g_reg)))
        x_new = f.sub(x, f.mul(rate, f.div(v_new, f.add(f.sqrt(h_new), epsilon))))
        if norm_post:
            x_new = f.mul(1.0 - norm_post, x_new)
        new_xs.append(x_new)
        new_vs.append(v_new)
        new_hs.append(h_new)
    return new_xs + new_vs + new_hs


_MOMENTUM_MODES = ("standard", "nesterov")


@lowering("Momentum", since=1, domain=_TRAINING)
def lower_momentum(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value]:
    """Lowers Momentum (one step, any number of tensors) to its elementwise update formula.

    ``G' = norm_coefficient * X + G``, ``V' = alpha V + (T > 0 ? beta : 1) G'``; standard:
    ``X' = X - R V'``; nesterov: ``X' = X - R (G' + alpha V')``.

    Spec: ai.onnx.preview.training Momentum-1.
    Shapes: R and T scalars; X_i, G_i, V_i, one shape per i (symbolic dims allowed). Outputs X'_1.., V'_1...
    Dtypes: float32, float64 (R is converted to each tensor's dtype).
    Raises: UnsupportedAttributeError for a mode other than standard/nesterov; ShapeError if
        the inputs do not split into three equal groups.
    """
    mode = node.attr_str("mode")
    if mode not in _MOMENTUM_MODES:
        raise ctx.unsupported_attribute("mode", mode, ", ".join(_MOMENTUM_MODES))
    xs, gs, vs = _optimizer_groups(ctx, 3, "Momentum")
    alpha, beta = node.attr_float("alpha"), node.attr_float("beta")
    norm = node.attr_float("norm_coefficient")
    t_positive = builders.compare(
        builders.reshape(builders.convert(ctx.input(1), DataType.INT64), []), builders.splat(0, DataType.INT64), "GT"
    )
    new_xs, new_vs = [], []
    for x, g, v in zip(xs, gs, vs):
        dtype = _check_float(ctx, x)
        rate = _scalar_like(ctx, 0, dtype)
        beta_adjusted = stablehlo.select(t_positive, builders.splat(beta, dtype), builders.splat(1.0, dtype))
        f = builders.Arith(_common_shape(x, g, v), dtype)
        g_reg = _regularized(f, x, g, norm)
        v_new = f.add(f.mul(alpha, v), f.mul(beta_adjusted, g_reg))
        direction = v_new if mode == "standard" else f.add(g_reg, f.mul(alpha, v_new))
        new_xs.append(f.sub(x, f.mul(rate, direction)))
        new_vs.append(v_new)
    return new_xs + new_vs
